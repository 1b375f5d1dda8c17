/* test-compiler.c: the compiler plugins end to end on small hand-built
 * graphs: every scheduler with several allocators produces programs that
 * pass the device rules and fit SRAM, the analytic chip's numbers are
 * consistent, the order search is deterministic whatever the thread count,
 * and impossible inputs fail with errors naming the operator. */
#include "config.h"

#include <math.h>
#include <string.h>
#include <elk/elk.h>
#include "elk-test-util.h"

static ElkRegistry *registry;

/* Plugin objects from this test's registry (tests/core/elk-test-util.c). */
#define make(...) elk_test_make (registry, __VA_ARGS__)

/* Independent check of R1-R3 SRAM use: while operator i executes, the
 * cores hold its execution space and the preload states of every operator
 * preloaded before execute(i) that has not executed yet. */
static void
check_sram (ElkProgram *program, guint64 usable)
{
  guint n = elk_graph_get_n_ops (elk_program_get_graph (program));
  g_autofree gboolean *resident = g_new0 (gboolean, n);
  guint64 held = 0;

  for (guint s = 0; s < elk_program_get_n_steps (program); s++)
    {
      const ElkStep *st = elk_program_get_step (program, s);
      const ElkProgramOp *pop = elk_program_peek_op (program, st->op);
      if (st->kind == ELK_STEP_PRELOAD)
        {
          g_assert_false (resident[st->op]);
          resident[st->op] = TRUE;
          held += pop->cold_bytes;
        }
      else
        {
          if (pop->hbm_bytes > 0)
            g_assert_true (resident[st->op]);
          if (resident[st->op])
            held -= pop->cold_bytes;
          resident[st->op] = FALSE;
          g_assert_cmpuint (held + pop->hot_bytes, <=, usable);
        }
    }
}

static ElkProgram *
run_one (ElkChip *chip, const ElkPlanSet *plans, ElkScheduler *sched,
         ElkAllocator *alloc, ElkMetrics **metrics_out)
{
  g_autoptr(GError) error = NULL;
  const ElkChipSpec *spec = elk_plan_set_get_spec (plans);
  ElkProgram *program = elk_scheduler_schedule (sched, plans, alloc, &error);
  ElkMetrics *m;

  g_assert_no_error (error);
  g_assert_nonnull (program);
  check_sram (program, elk_chip_spec_get_usable_sram (spec));
  m = elk_chip_run (chip, program, plans, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (m->latency_s, >, 0);
  g_assert_cmpfloat (fabs (m->preload_only_s + m->execute_only_s
                           + m->overlap_s + m->stall_s - m->latency_s),
                     <=, 1e-9 * m->latency_s);
  g_assert_cmpfloat (m->latency_s, >=,
                     elk_graph_get_hbm_bytes (elk_program_get_graph (program))
                       / spec->hbm_bw * (1 - 1e-9));
  if (metrics_out != NULL)
    *metrics_out = m;
  else
    elk_metrics_free (m);
  return program;
}

typedef ElkTestCompileFixture Fixture;

static void
fixture_setup (Fixture *f, gconstpointer data)
{
  /* A small chip (64 cores, 64 KiB each) keeps plan tables quick to build
   * while the toy model still does not fit on chip. */
  elk_test_compile_fixture_init (f, registry,
                                 elk_test_toy_decode_graph (4, 8, 512, 256));
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
  elk_test_compile_fixture_clear (f);
}

static void
test_all_designs (Fixture *f, gconstpointer data)
{
  const char *allocators[] = { "cost-aware", "reservation", "fixed-split",
                               "exact" };
  double lat[5] = { 0 };

  for (guint a = 0; a < G_N_ELEMENTS (allocators); a++)
    {
      /* The toy's attention needs most of SRAM, so the fixed split gives
       * execution three quarters. */
      g_autoptr(GObject) alloc =
        a == 2 ? make (ELK_TYPE_ALLOCATOR, allocators[a], "exec-fraction",
                       0.75, NULL)
               : make (ELK_TYPE_ALLOCATOR, allocators[a], NULL);
      const char *names[5] = { "basic", "static", "elk", "elk", "ideal" };

      for (guint s = 0; s < 5; s++)
        {
          g_autoptr(GObject) sched =
            s == 2 ? make (ELK_TYPE_SCHEDULER, "elk", "order-search", 0, NULL)
                   : make (ELK_TYPE_SCHEDULER, names[s], NULL);
          ElkMetrics *m = NULL;
          g_autoptr(ElkProgram) p = run_one (f->chip, f->plans,
                                             ELK_SCHEDULER (sched),
                                             ELK_ALLOCATOR (alloc), &m);
          g_test_message ("%s + %s: estimate %.4g ms, chip %.4g ms",
                          names[s], allocators[a],
                          elk_program_get_estimate (p) * 1e3,
                          m->latency_s * 1e3);
          if (a == 0)
            lat[s] = elk_program_get_estimate (p);
          elk_metrics_free (m);
        }
    }
  /* Full searches a superset of dyn's default-order candidates at one
   * share only, so compare estimates loosely; Ideal is never slower than
   * Elk by its own model. */
  g_assert_cmpfloat (lat[4], <=, lat[3] * 1.0000001);
}

static void
test_determinism (Fixture *f, gconstpointer data)
{
  g_autoptr(GObject) alloc = make (ELK_TYPE_ALLOCATOR, "cost-aware", NULL);
  g_autoptr(GObject) s1 = make (ELK_TYPE_SCHEDULER, "elk", "threads", 1,
                                "max-displacement", 2, NULL);
  g_autoptr(GObject) s4 = make (ELK_TYPE_SCHEDULER, "elk", "threads", 4,
                                "max-displacement", 2, NULL);
  g_autoptr(ElkProgram) p1 = run_one (f->chip, f->plans, ELK_SCHEDULER (s1),
                                      ELK_ALLOCATOR (alloc), NULL);
  g_autoptr(ElkProgram) p4 = run_one (f->chip, f->plans, ELK_SCHEDULER (s4),
                                      ELK_ALLOCATOR (alloc), NULL);

  g_assert_cmpuint (elk_program_get_n_orders (p1), >, 1);
  elk_test_assert_same_program (p1, p4);
}

/* noc-demand: every program op carries the NoC time the scheduler
 * charged it (rotations plus the output shuffle by default, or rotations
 * only), Ideal none; the analytic chip charges what the program says, and
 * a program without the estimate (NAN) is charged its rotations. */
static void
test_noc_demand (Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GObject) alloc = make (ELK_TYPE_ALLOCATOR, "reservation", NULL);
  g_autoptr(GObject) sched = make (ELK_TYPE_SCHEDULER, "static", NULL);
  g_autoptr(GObject) ideal = make (ELK_TYPE_SCHEDULER, "ideal", NULL);
  ElkPlanOptions options = { 0 };
  g_autoptr(ElkPlanSet) plans = NULL;
  g_autoptr(ElkProgram) shift = NULL, both = NULL, bound = NULL;
  ElkMetrics *m_both = NULL, *m_unset = NULL;
  gboolean any_shuffle = FALSE;

  g_assert_cmpint (elk_plan_set_get_options (f->plans)->noc_demand, ==,
                   ELK_NOC_DEMAND_SHIFT_SHUFFLE);
  both = run_one (f->chip, f->plans, ELK_SCHEDULER (sched),
                  ELK_ALLOCATOR (alloc), &m_both);
  bound = run_one (f->chip, f->plans, ELK_SCHEDULER (ideal),
                   ELK_ALLOCATOR (alloc), NULL);
  options.noc_demand = ELK_NOC_DEMAND_SHIFT;
  plans = elk_plan_set_new (f->graph, f->spec, &options, &error);
  g_assert_no_error (error);
  shift = run_one (f->chip, plans, ELK_SCHEDULER (sched),
                   ELK_ALLOCATOR (alloc), NULL);
  for (guint i = 0; i < elk_graph_get_n_ops (f->graph); i++)
    {
      const ElkProgramOp *a = elk_program_peek_op (shift, i);
      const ElkProgramOp *b = elk_program_peek_op (both, i);

      g_assert_cmpfloat (a->est_noc_s, ==, a->exec_plan.shift_s);
      g_assert_cmpfloat (b->est_noc_s, ==,
                         b->exec_plan.shift_s + b->exec_plan.shuffle_s);
      g_assert_cmpfloat (elk_program_peek_op (bound, i)->est_noc_s, ==, 0);
      any_shuffle |= b->exec_plan.shuffle_s > 0;
    }
  g_assert_true (any_shuffle);
  /* Forget the estimates: the chip falls back to the rotations only. */
  for (guint i = 0; i < elk_graph_get_n_ops (f->graph); i++)
    elk_program_get_op (both, i)->est_noc_s = NAN;
  m_unset = elk_chip_run (f->chip, both, f->plans, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (m_unset->latency_s, <=, m_both->latency_s);
  elk_metrics_free (m_both);
  elk_metrics_free (m_unset);
}

/* ElkAllocRequest: zero-initialised, it is the realistic allocation
 * (contention charged); a forward scheduler can fix the executing
 * operator's entry and every shipped allocator keeps it; bad requests and
 * contract breaks are errors. */
static void
test_alloc_request (Fixture *f, gconstpointer data)
{
  static const char *const names[] = { "cost-aware", "reservation",
                                       "fixed-split", "exact" };
  const ElkPlanTable *t = elk_plan_set_get_table (f->plans, 0);
  const guint32 preloaded[2] = { 1, 3 };
  const gint32 fixed[2] = { -1, -1 };
  guint32 entries[2];
  guint64 usable = elk_chip_spec_get_usable_sram (f->spec);
  guint k = 0;

  g_assert_cmpuint (t->hbm_bytes, >, 0);
  /* The entry with the smallest execution space that preloads something. */
  for (guint e = 1; e < t->n_cold_hot; e++)
    if (t->cold_hot[e].cold_bytes > 0
        && (t->cold_hot[k].cold_bytes == 0
            || t->cold_hot[e].hot_bytes < t->cold_hot[k].hot_bytes))
      k = e;
  g_assert_cmpuint (t->cold_hot[k].cold_bytes, >, 0);

  for (guint a = 0; a < G_N_ELEMENTS (names); a++)
    {
      /* fixed-split gives E a fixed share of the budget: just what the
       * fixed entry needs, so that the preloads fit the rest. */
      double share = (double) MAX (t->cold_hot[k].hot_bytes,
                                   t->cold_hot[k].cold_bytes) / usable
                     + 0.01;
      g_autoptr(GObject) alloc
        = a == 2 ? make (ELK_TYPE_ALLOCATOR, names[a], "exec-fraction", share,
                         NULL)
                 : make (ELK_TYPE_ALLOCATOR, names[a], NULL);
      ElkAllocRequest req = {
        .plans = f->plans,
        .exec_op = 0,
        .n_preloaded = 2,
        .preloaded = preloaded,
        .preloaded_fixed = fixed,
        .sram_budget = usable,
        .exec_fixed = TRUE,
        .exec_entry = k,
      };
      ElkAllocResult shared = { .preload_entries = entries };
      ElkAllocResult none = { .preload_entries = entries };
      g_autoptr(GError) error = NULL;
      gboolean fits = FALSE;

      g_test_message ("allocator %s", names[a]);
      g_assert_cmpint (req.contention, ==, ELK_ALLOC_CONTENTION_SHARED);
      g_assert_true (elk_allocator_allocate (ELK_ALLOCATOR (alloc), &req,
                                             &shared, &fits, &error));
      g_assert_no_error (error);
      g_assert_true (fits);
      g_assert_cmpuint (shared.exec_entry, ==, k);
      g_assert_cmpuint (shared.bytes, <=, usable);
      g_assert_cmpfloat (shared.penalty_s, >, 0);

      req.contention = ELK_ALLOC_CONTENTION_NONE;
      g_assert_true (elk_allocator_allocate (ELK_ALLOCATOR (alloc), &req,
                                             &none, &fits, &error));
      g_assert_no_error (error);
      g_assert_true (fits);
      g_assert_cmpuint (none.exec_entry, ==, k);
      g_assert_cmpfloat (none.penalty_s, ==, 0);

      /* A free executing operator may get any entry. */
      req.exec_fixed = FALSE;
      g_assert_true (elk_allocator_allocate (ELK_ALLOCATOR (alloc), &req,
                                             &none, &fits, &error));
      g_assert_no_error (error);

      /* Requests that make no sense are the scheduler's error. */
      req.exec_fixed = TRUE;
      req.exec_entry = t->n_cold_hot;
      g_assert_false (elk_allocator_allocate (ELK_ALLOCATOR (alloc), &req,
                                              &none, &fits, &error));
      g_assert_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED);
      g_assert_nonnull (strstr (error->message, "fixes its cold-hot entry"));
      g_clear_error (&error);
      req.exec_entry = k;
      req.contention = (ElkAllocContention) 7;
      g_assert_false (elk_allocator_allocate (ELK_ALLOCATOR (alloc), &req,
                                              &none, &fits, &error));
      g_assert_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED);
      g_assert_nonnull (strstr (error->message, "contention mode 7"));
    }
}

static void
test_does_not_fit (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GObject) chip = make (ELK_TYPE_CHIP, "analytic", "cores", 4,
                                  "chips", 1, "sram-kib", 9, "reserved-kib",
                                  8, NULL);
  g_autoptr(ElkChipSpec) spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
  g_autoptr (ElkGraph) graph = elk_test_toy_decode_graph (1, 8, 512, 256);
  g_autoptr(ElkPlanSet) plans = NULL;

  g_assert_no_error (error);
  g_test_summary ("A model whose operator cannot fit the SRAM fails with an "
                  "error naming the operator and the sizes.");
  plans = elk_plan_set_new (graph, spec, NULL, &error);
  if (plans != NULL)
    {
      g_autoptr(GObject) alloc = make (ELK_TYPE_ALLOCATOR, "cost-aware", NULL);
      g_autoptr(GObject) sched = make (ELK_TYPE_SCHEDULER, "elk", NULL);
      g_autoptr(ElkProgram) p = elk_scheduler_schedule (ELK_SCHEDULER (sched),
                                                        plans,
                                                        ELK_ALLOCATOR (alloc),
                                                        &error);
      g_assert_null (p);
      g_assert_error (error, ELK_SCHEDULE_ERROR,
                      ELK_SCHEDULE_ERROR_DOES_NOT_FIT);
    }
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "mm0"));
}

int
main (int argc, char *argv[])
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  g_test_add ("/compiler/all-designs", Fixture, NULL, fixture_setup,
              test_all_designs, fixture_teardown);
  g_test_add ("/compiler/determinism", Fixture, NULL, fixture_setup,
              test_determinism, fixture_teardown);
  g_test_add ("/compiler/noc-demand", Fixture, NULL, fixture_setup,
              test_noc_demand, fixture_teardown);
  g_test_add ("/compiler/alloc-request", Fixture, NULL, fixture_setup,
              test_alloc_request, fixture_teardown);
  g_test_add_func ("/compiler/does-not-fit", test_does_not_fit);
  ret = g_test_run ();
  g_object_unref (registry);
  return ret;
}
