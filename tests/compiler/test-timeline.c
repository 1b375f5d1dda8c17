/* test-timeline.c: the allocation cores (plugins/allocators) and libelk's
 * analytic timeline on small, hand-computed cases. */
#include "config.h"

#include <math.h>
#include <elk/elk.h>
/* The allocation cores, compiled in from plugins/allocators (see
 * tests/compiler/meson.build). */
#include "elk-alloc-core.h"

/* A table with one plan per cold-hot entry; entries given as
 * {cold, hot, exec, warmup}, hot plan index = shared_hot[k] when >= 0. */
typedef struct
{
  ElkPlanTable table;
  ElkPlan plans[16];
  ElkColdHot ch[16];
} Table;

static void
table_init (Table *t, guint n, const double (*e)[4], const gint *hot_plan)
{
  memset (t, 0, sizeof (*t));
  for (guint k = 0; k < n; k++)
    {
      guint hp = hot_plan != NULL && hot_plan[k] >= 0 ? (guint) hot_plan[k] : k;
      t->plans[k].time_s = e[k][2];
      t->plans[k].hot_bytes = (guint64) e[k][1];
      t->plans[k].cold_bytes = (guint64) e[k][0];
      t->ch[k] = (ElkColdHot) { (guint64) e[k][0], (guint64) e[k][1], hp, k,
                                e[k][2], e[k][3], 0 };
    }
  t->table.n_plans = n;
  t->table.plans = t->plans;
  t->table.n_cold_hot = n;
  t->table.cold_hot = t->ch;
  t->table.min_cold_bytes = (guint64) e[0][0];
  t->table.hbm_bytes = 1000;
}

static void
test_greedy_simple (void)
{
  /* E: 100 B at 10 s, 300 B at 4 s, 500 B at 3 s.  Budget 400 with a free
   * preloaded op at 100 B (1 s) or 200 B (0.5 s). */
  static const double e[][4] = { { 50, 100, 10, 0 }, { 50, 300, 4, 0 },
                                 { 50, 500, 3, 0 } };
  static const double q[][4] = { { 100, 100, 1, 0 }, { 200, 200, 0.5, 0 } };
  Table te, tq;
  const ElkPlanTable *pre[1];
  gint32 fixed[1] = { -1 };
  guint32 entries[1];
  AllocChoice c = { .pre_entries = entries }, x = { .pre_entries = entries };
  AllocProblem pb;

  table_init (&te, 3, e, NULL);
  table_init (&tq, 2, q, NULL);
  pre[0] = &tq.table;
  pb = (AllocProblem){ &te.table, 1, pre, fixed, 400, 0, FALSE, 0 };
  g_assert_true (elk__alloc_greedy (&pb, &c));
  /* Fastest is 500 + 200 = 700.  Shrinking E 500->300 saves 200 B for 1 s
   * (200 B/s), Q 200->100 saves 100 B for 0.5 s (200 B/s): tie goes to E.
   * Then 300 + 200 = 500 > 400: only Q can shrink: 300 + 100. */
  g_assert_cmpuint (c.exec_entry, ==, 1);
  g_assert_cmpuint (entries[0], ==, 0);
  g_assert_cmpuint (c.bytes, ==, 400);
  g_assert_cmpfloat_with_epsilon (c.cost_s, 4 + 1, 1e-12);
  g_assert_true (elk__alloc_exact (&pb, 1000, &x, NULL));
  g_assert_cmpfloat (x.cost_s, <=, c.cost_s + 1e-12);

  pb.budget = 150;
  g_assert_false (elk__alloc_greedy (&pb, &c));
  g_assert_false (elk__alloc_exact (&pb, 1000, &c, NULL));
}

static void
test_greedy_vs_exact (void)
{
  /* A case where the greedy loop is not optimal: E drops from 600 B to
   * 100 B in one step, and the ratio rule shrinks Q first. */
  static const double e[][4] = { { 10, 100, 9, 0 }, { 10, 600, 1, 0 } };
  static const double q[][4] = { { 10, 10, 5, 0 }, { 300, 300, 0, 0 } };
  Table te, tq;
  const ElkPlanTable *pre[1];
  gint32 fixed[1] = { -1 };
  guint32 eg[1], ex[1];
  AllocChoice g = { .pre_entries = eg }, x = { .pre_entries = ex };
  AllocProblem pb;
  GRand *rand = g_rand_new_with_seed (42);

  table_init (&te, 2, e, NULL);
  table_init (&tq, 2, q, NULL);
  pre[0] = &tq.table;
  pb = (AllocProblem){ &te.table, 1, pre, fixed, 610, 0, FALSE, 0 };
  g_assert_true (elk__alloc_greedy (&pb, &g));
  g_assert_true (elk__alloc_exact (&pb, 1000, &x, NULL));
  g_assert_cmpfloat (x.cost_s, <=, g.cost_s);
  /* Exact keeps E fast (600 B, 1 s) with Q small (10 B, 5 s) = 6 s. */
  g_assert_cmpfloat_with_epsilon (x.cost_s, 6, 1e-12);

  /* Random small cases: exact is never worse than greedy, and the greedy
   * result always fits. */
  for (guint round = 0; round < 200; round++)
    {
      double ev[4][4], qv[3][4][4];
      Table tt, tqs[3];
      const ElkPlanTable *pp[3];
      gint32 fx[3] = { -1, -1, -1 };
      guint32 a[3], b[3];
      AllocChoice cg = { .pre_entries = a }, cx = { .pre_entries = b };
      guint np = g_rand_int_range (rand, 0, 4);
      gboolean fg, fe;

      for (guint k = 0; k < 4; k++)
        {
          ev[k][0] = g_rand_int_range (rand, 0, 100);
          ev[k][1] = 100 + 100 * k + g_rand_int_range (rand, 0, 50);
          ev[k][2] = 10.0 / (k + 1) + g_rand_double (rand);
          ev[k][3] = g_rand_double (rand);
        }
      table_init (&tt, 4, (const double (*)[4]) ev, NULL);
      for (guint j = 0; j < np; j++)
        {
          for (guint k = 0; k < 4; k++)
            {
              qv[j][k][0] = 20 + 60 * k + g_rand_int_range (rand, 0, 30);
              qv[j][k][1] = 400;
              qv[j][k][2] = 1;
              qv[j][k][3] = 3.0 / (k + 1) * g_rand_double (rand);
            }
          table_init (&tqs[j], 4, (const double (*)[4]) qv[j], NULL);
          pp[j] = &tqs[j].table;
        }
      pb = (AllocProblem){
        &tt.table, np,    pp, fx, 200 + g_rand_int_range (rand, 0, 600),
        0,         FALSE, 0
      };
      fg = elk__alloc_greedy (&pb, &cg);
      fe = elk__alloc_exact (&pb, 100000, &cx, NULL);
      /* Greedy fails only when nothing fits. */
      g_assert_cmpint (fg, ==, fe);
      if (fg)
        {
          g_assert_cmpuint (cg.bytes, <=, pb.budget);
          g_assert_cmpuint (cx.bytes, <=, pb.budget);
          g_assert_cmpfloat (cx.cost_s, <=, cg.cost_s + 1e-9);
        }
    }
  g_rand_free (rand);
}

static void
test_fixed_preload_keeps_hot_plan (void)
{
  /* A fixed preloaded op may only move among entries of its hot plan. */
  static const double e[][4] = { { 0, 100, 1, 0 } };
  static const double q[][4] = { { 50, 300, 2, 0.5 }, { 100, 300, 2, 0.1 },
                                 { 10, 200, 9, 0 } };
  static const gint hp[] = { 0, 0, 2 };
  Table te, tq;
  const ElkPlanTable *pre[1];
  gint32 fixed[1] = { 1 };
  guint32 entries[1];
  AllocChoice c = { .pre_entries = entries };
  AllocProblem pb;

  table_init (&te, 1, e, NULL);
  table_init (&tq, 3, q, hp);
  pre[0] = &tq.table;
  pb = (AllocProblem){ &te.table, 1, pre, fixed, 160, 0, FALSE, 0 };
  g_assert_true (elk__alloc_greedy (&pb, &c));
  g_assert_cmpuint (entries[0], ==, 0);
  g_assert_cmpfloat_with_epsilon (c.extra_warmup_s, 0.4, 1e-12);
  pb.budget = 140;
  g_assert_false (elk__alloc_greedy (&pb, &c));
  /* The reservation allocator keeps the fixed entry. */
  pb.budget = 210;
  g_assert_true (elk__alloc_reservation (&pb, 1.0, &c));
  g_assert_cmpuint (entries[0], ==, 1);
  pb.budget = 199;
  g_assert_false (elk__alloc_reservation (&pb, 1.0, &c));
}

/* Timeline: one preload (HBM 1 s, delivery 0.5 s) of op 1 overlapping the
 * execution of op 0 (2 s, 1.5 s of it NoC traffic), then op 1 (1 s).  The
 * chip reads 1000 B/s from HBM and moves 1000 B/s through its one core's
 * port. */
static ElkChipSpec *
timeline_spec (void)
{
  ElkChipSpec *spec = elk_chip_spec_new_ipu_pod4 ();

  spec->hbm_bw = 1000;
  spec->link_bw = 1000;
  spec->cores = 1;
  return spec;
}

static void
run_two (ElkTimelinePriority priority, ElkTimelineResult *r)
{
  g_autoptr(ElkChipSpec) spec = timeline_spec ();
  ElkTimelineOp ops[2] = {
    { .exec_s = 2.0, .shift_s = 1.5 },
    { .hbm_bytes = 1000, .cold_bytes = 500, .exec_s = 1.0 },
  };
  ElkStep steps[3] = { { ELK_STEP_PRELOAD, 1 }, { ELK_STEP_EXECUTE, 0 },
                       { ELK_STEP_EXECUTE, 1 } };
  g_assert_true (elk_timeline_run (spec, 1.0, priority, 2, ops, 3, steps, r,
                                   NULL));
}

static void
test_timeline_delay_exec (void)
{
  ElkTimelineResult r;

  /* The preload runs [0,1] using the NoC half the time; op 0 runs from 0.
   * Idle NoC in [0,2] = 2 - 0.5 = 1.5 >= 1.5: no stall.  Op 1 at [2,3]. */
  run_two (ELK_TIMELINE_PRELOAD_FIRST, &r);
  g_assert_cmpfloat_with_epsilon (r.latency_s, 3.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (r.stall_s, 0, 1e-12);
  g_assert_cmpfloat_with_epsilon (r.overlap_s, 1.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (r.execute_only_s, 2.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (r.preload_only_s + r.execute_only_s
                                  + r.overlap_s + r.stall_s, r.latency_s,
                                  1e-12);
}

static void
test_timeline_contention (void)
{
  ElkTimelineResult r;
  g_autoptr(ElkChipSpec) spec = timeline_spec ();
  /* Delivery 1 s = HBM 1 s: the preload fills the NoC during [0,1].  Op 0
   * needs 1.8 s of NoC in its 2 s: idle 1 s, so it stalls 0.8 s. */
  ElkTimelineOp ops[2] = {
    { .exec_s = 2.0, .shift_s = 1.8 },
    { .hbm_bytes = 1000, .cold_bytes = 1000, .exec_s = 1.0 },
  };
  ElkStep steps[3] = { { ELK_STEP_PRELOAD, 1 }, { ELK_STEP_EXECUTE, 0 },
                       { ELK_STEP_EXECUTE, 1 } };

  g_assert_true (elk_timeline_run (spec, 1.0, ELK_TIMELINE_PRELOAD_FIRST, 2,
                                   ops, 3, steps, &r, NULL));
  g_assert_cmpfloat_with_epsilon (r.latency_s, 3.8, 1e-12);
  g_assert_cmpfloat_with_epsilon (r.stall_s, 0.8, 1e-12);

  /* Execution first: the preload gets the NoC only while op 0 computes
   * (0.2 s) instead of the 1 s it needs: it is stretched by 0.8 s / 1.0
   * (its NoC share) and ends at 1.8; op 0 ends at 2, op 1 runs [2,3]. */
  g_assert_true (elk_timeline_run (spec, 1.0, ELK_TIMELINE_EXECUTION_FIRST,
                                   2, ops, 3, steps, &r, NULL));
  g_assert_cmpfloat_with_epsilon (r.latency_s, 3.0, 1e-12);
  g_assert_cmpfloat_with_epsilon (r.stall_s, 0.8, 1e-12);

  /* R1: a preload issued after an execute waits for it. */
  {
    ElkStep late[3] = { { ELK_STEP_EXECUTE, 0 }, { ELK_STEP_PRELOAD, 1 },
                        { ELK_STEP_EXECUTE, 1 } };
    g_assert_true (elk_timeline_run (spec, 1.0, ELK_TIMELINE_PRELOAD_FIRST,
                                     2, ops, 3, late, &r, NULL));
    g_assert_cmpfloat_with_epsilon (r.latency_s, 2 + 1 + 1, 1e-12);
    g_assert_cmpfloat_with_epsilon (r.preload_only_s, 1.0, 1e-12);
  }
}

/* A step naming an operator the program does not have is an error, not
 * a crash. */
static void
test_timeline_bad_step (void)
{
  g_autoptr(ElkChipSpec) spec = timeline_spec ();
  g_autoptr(GError) error = NULL;
  ElkTimelineOp ops[1] = { { .exec_s = 1.0 } };
  ElkStep steps[1] = { { ELK_STEP_EXECUTE, 3 } };
  ElkTimelineResult r;

  g_assert_false (elk_timeline_run (spec, 1.0, ELK_TIMELINE_PRELOAD_FIRST, 1,
                                    ops, 1, steps, &r, &error));
  g_assert_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN);
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/alloc/greedy-simple", test_greedy_simple);
  g_test_add_func ("/alloc/greedy-vs-exact", test_greedy_vs_exact);
  g_test_add_func ("/alloc/fixed-preload", test_fixed_preload_keeps_hot_plan);
  g_test_add_func ("/timeline/delay-exec", test_timeline_delay_exec);
  g_test_add_func ("/timeline/contention", test_timeline_contention);
  g_test_add_func ("/timeline/bad-step", test_timeline_bad_step);
  return g_test_run ();
}
