/* tests/core/elk-test-util.c: fixture paths and a private registry. */
#include "elk-test-util.h"

#include <string.h>
#include <sys/wait.h>

#include <glib/gstdio.h>

/* Fixture plugins are built into build/tests/fixtures/plugins. */
char *
elk_test_fixture_plugin (const char *name)
{
  g_autofree char *base = g_strdup_printf ("libelk-%s.%s", name,
                                           G_MODULE_SUFFIX);
  return g_test_build_filename (G_TEST_BUILT, "fixtures", "plugins",
                                base, NULL);
}

char *
elk_test_fixture_experiment (const char *name)
{
  g_autofree char *base = g_strdup_printf ("%s.xml", name);
  return g_test_build_filename (G_TEST_DIST, "fixtures", "experiments",
                                base, NULL);
}

/* A registry that knows only the good fixture plugin. */
ElkRegistry *
elk_test_registry_with_good (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = elk_test_fixture_plugin ("good");
  ElkRegistry *registry = elk_registry_new ();

  g_assert_true (elk_registry_load_file (registry, path, &error));
  g_assert_no_error (error);
  return registry;
}

/* Asserts that the message starts with "<file>:<line>:" for the named
 * fixture file, the shape every experiment error has. */
void
elk_test_assert_has_line (const GError *error, const char *file)
{
  g_autofree char *prefix = g_strdup_printf ("%s:", file);
  const char *rest;
  char *end = NULL;
  guint64 line;

  g_assert_nonnull (error);
  g_assert_true (g_str_has_prefix (error->message, prefix));
  rest = error->message + strlen (prefix);
  line = g_ascii_strtoull (rest, &end, 10);
  g_assert_cmpuint (line, >, 0);
  g_assert_true (end != rest && *end == ':');
}

/* A plugin object of @kind by feature @name, with properties as for
 * g_object_new(); the feature must exist. */
GObject *
elk_test_make (ElkRegistry *registry,
               GType kind,
               const char *name,
               const char *first_prop,
               ...)
{
  g_autoptr(GError) error = NULL;
  const ElkFeature *f = elk_registry_find (registry, kind, name, &error);
  GObject *obj;
  va_list ap;

  g_assert_no_error (error);
  g_assert_nonnull (f);
  va_start (ap, first_prop);
  obj = g_object_new_valist (f->type, first_prop, ap);
  va_end (ap);
  return obj;
}

/**
 * elk_test_complete_plans:
 * @chip: a chip
 * @program: a hand-made program whose plans have their spatial vectors and
 *   rotation factors set
 *
 * Every chip prices a program from its plans alone and refuses plans whose
 * cost fields are not the cost model's, so a hand-made plan is completed
 * with elk_plan_evaluate() on @chip's spec (a plan breaking the plan
 * space's rules is left as it is, for the chip to refuse).
 */
void
elk_test_complete_plans (ElkChip *chip, ElkProgram *program)
{
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (chip, NULL);
  ElkGraph *graph = elk_program_get_graph (program);

  g_assert_nonnull (spec);
  for (guint i = 0; i < elk_graph_get_n_ops (graph); i++)
    {
      ElkProgramOp *pop = elk_program_get_op (program, i);
      ElkPlan *plans_of_op[2] = { &pop->exec_plan, &pop->preload_plan };
      for (guint k = 0; k < 2; k++)
        {
          ElkPlan eval = *plans_of_op[k];
          if (eval.n_dims > 0
              && elk_plan_evaluate (graph, i, spec, &eval, NULL))
            *plans_of_op[k] = eval;
        }
    }
}

/**
 * elk_test_run_program:
 * @chip: a chip
 * @program: a hand-made program (see elk_test_complete_plans())
 * @trace: (nullable): where to record timelines
 *
 * Runs @program the way elk-run does, on plan tables built for @chip's
 * spec, after completing its plans.
 */
ElkMetrics *
elk_test_run_program (ElkChip *chip, ElkProgram *program, ElkTrace *trace,
                      GError **error)
{
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (chip, error);
  g_autoptr (ElkPlanSet) plans = NULL;

  if (spec == NULL)
    return NULL;
  elk_test_complete_plans (chip, program);
  plans = elk_plan_set_new (elk_program_get_graph (program), spec, NULL,
                            error);
  if (plans == NULL)
    return NULL;
  return elk_chip_run_traced (chip, program, plans, trace, error);
}

/* The registry the in-tree tests use: the default plugin paths (meson's
 * test environment points ELK_PLUGIN_PATH at the build tree), scanned. */
ElkRegistry *
elk_test_registry_new_default (void)
{
  ElkRegistry *registry = elk_registry_new ();

  elk_registry_add_default_paths (registry);
  elk_registry_scan (registry);
  return registry;
}

/**
 * elk_test_compile_fixture_init:
 * @f: the fixture to fill
 * @registry: where the analytic chip is found
 * @graph: (transfer full): the graph to compile
 *
 * Sets @f up to schedule @graph on the small analytic chip the compiler
 * tests share: 64 cores of 64 KiB (1 KiB reserved), one chip, 64 GB/s of
 * HBM, so that plan tables are quick to build and toy models still do not
 * fit on chip.
 */
void
elk_test_compile_fixture_init (ElkTestCompileFixture *f,
                               ElkRegistry *registry,
                               ElkGraph *graph)
{
  g_autoptr (GError) error = NULL;

  f->chip
      = ELK_CHIP (elk_test_make (registry, ELK_TYPE_CHIP, "analytic", "cores",
                                 64, "chips", 1, "sram-kib", 64, "reserved-kib",
                                 1, "hbm-bw-gbps", 64.0, NULL));
  f->spec = elk_chip_dup_spec (f->chip, &error);
  g_assert_no_error (error);
  f->graph = graph;
  f->plans = elk_plan_set_new (f->graph, f->spec, NULL, &error);
  g_assert_no_error (error);
}

void
elk_test_compile_fixture_clear (ElkTestCompileFixture *f)
{
  g_clear_pointer (&f->plans, elk_plan_set_unref);
  g_clear_pointer (&f->graph, elk_graph_unref);
  g_clear_pointer (&f->spec, elk_chip_spec_free);
  g_clear_object (&f->chip);
}

/* Asserts that two programs of one graph are the same schedule: the same
 * number of candidate orders, estimate and steps, step by step. */
void
elk_test_assert_same_program (ElkProgram *a, ElkProgram *b)
{
  g_assert_cmpuint (elk_program_get_n_orders (a), ==,
                    elk_program_get_n_orders (b));
  g_assert_cmpfloat (elk_program_get_estimate (a), ==,
                     elk_program_get_estimate (b));
  g_assert_cmpuint (elk_program_get_n_steps (a), ==,
                    elk_program_get_n_steps (b));
  for (guint s = 0; s < elk_program_get_n_steps (a); s++)
    {
      g_assert_cmpint (elk_program_get_step (a, s)->kind, ==,
                       elk_program_get_step (b, s)->kind);
      g_assert_cmpuint (elk_program_get_step (a, s)->op, ==,
                        elk_program_get_step (b, s)->op);
    }
}

/* The environment for running a tool that finds its plugins in
 * @plugin_path (a search path; NULL for the fixture plugins) and none of
 * the system's. */
char **
elk_test_tool_env (const char *plugin_path)
{
  g_autofree char *good = elk_test_fixture_plugin ("good");
  g_autofree char *fixture_dir = g_path_get_dirname (good);
  char **env = g_get_environ ();

  env = g_environ_setenv (env, "ELK_PLUGIN_PATH",
                          plugin_path != NULL ? plugin_path : fixture_dir,
                          TRUE);
  return g_environ_setenv (env, "ELK_PLUGIN_SYSTEM_PATH", "", TRUE);
}

/* Runs the command @argv (NULL-terminated) in @env and returns its exit
 * status (-1 if it did not exit).  Its standard output goes to
 * @out_stdout, or nowhere when that is NULL; its standard error is logged
 * and goes to @out_stderr when that is not NULL. */
int
elk_test_spawn (const char *const *argv,
                char **env,
                char **out_stdout,
                char **out_stderr)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  g_autofree char *name = g_path_get_basename (argv[0]);
  int status = 0;

  g_assert_true (g_spawn_sync (NULL, (char **) argv, env,
                               out_stdout != NULL ? G_SPAWN_DEFAULT
                                                  : G_SPAWN_STDOUT_TO_DEV_NULL,
                               NULL, NULL, out_stdout != NULL ? &out : NULL,
                               &err, &status, &error));
  g_assert_no_error (error);
  g_test_message ("%s %s: stderr: %s", name, argv[1] != NULL ? argv[1] : "",
                  err);
  if (out_stdout != NULL)
    *out_stdout = g_steal_pointer (&out);
  if (out_stderr != NULL)
    *out_stderr = g_steal_pointer (&err);
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

/* elk_test_spawn() of the program @exe with the arguments @args
 * (NULL-terminated, not counting the program). */
int
elk_test_spawn_tool (const char *exe,
                     const char *const *args,
                     char **env,
                     char **out_stdout,
                     char **out_stderr)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();

  g_ptr_array_add (argv, (gpointer) exe);
  for (guint i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  return elk_test_spawn ((const char *const *) argv->pdata, env, out_stdout,
                         out_stderr);
}

/* The contents of @dir/@name, which must exist. */
char *
elk_test_read_file (const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr (GError) error = NULL;
  char *data = NULL;

  g_assert_true (g_file_get_contents (path, &data, NULL, &error));
  g_assert_no_error (error);
  return data;
}
/* A decode-like stack of @layers layers: a weight MatMul, a KV-cache
 * batched MatMul and an element-wise operator each. */
ElkGraph *
elk_test_toy_decode_graph (guint layers, guint64 b, guint64 d, guint64 kv_len)
{
  ElkGraph *g = elk_graph_new ("toy");
  g_autoptr (GError) error = NULL;
  guint64 sx[2] = { b, d }, sw[2] = { d, d }, skv[3] = { b, kv_len, d };
  gint x
      = elk_graph_add_tensor (g, "x", ELK_DTYPE_F16,
                              ELK_TENSOR_ORIGIN_ACTIVATION, 2, sx, 0, &error);

  g_assert_no_error (error);
  for (guint l = 0; l < layers; l++)
    {
      g_autofree char *wn = g_strdup_printf ("w%u", l);
      g_autofree char *kn = g_strdup_printf ("kv%u", l);
      g_autofree char *hn = g_strdup_printf ("h%u", l);
      g_autofree char *an = g_strdup_printf ("a%u", l);
      g_autofree char *on = g_strdup_printf ("o%u", l);
      g_autofree char *m1 = g_strdup_printf ("mm%u", l);
      g_autofree char *m2 = g_strdup_printf ("attn%u", l);
      g_autofree char *m3 = g_strdup_printf ("act%u", l);
      gint w
          = elk_graph_add_tensor (g, wn, ELK_DTYPE_F16,
                                  ELK_TENSOR_ORIGIN_WEIGHT, 2, sw, 0, &error);
      gint kv = elk_graph_add_tensor (g, kn, ELK_DTYPE_F16,
                                      ELK_TENSOR_ORIGIN_KV_CACHE, 3, skv, 0,
                                      &error);
      gint h = elk_graph_add_tensor (g, hn, ELK_DTYPE_F16,
                                     ELK_TENSOR_ORIGIN_ACTIVATION, 2, sx, 0,
                                     &error);
      gint a = elk_graph_add_tensor (g, an, ELK_DTYPE_F16,
                                     ELK_TENSOR_ORIGIN_ACTIVATION, 2, sx, 0,
                                     &error);
      gint o = elk_graph_add_tensor (g, on, ELK_DTYPE_F16,
                                     ELK_TENSOR_ORIGIN_ACTIVATION, 2, sx, 0,
                                     &error);
      guint32 t1[3] = { x, w, h }, t2[3] = { h, kv, a }, t3[2] = { a, o };

      g_assert_no_error (error);
      elk_graph_add_op (g, m1, "matmul", ELK_OP_MATMUL, l, "bk,kn->bn", t1, 3,
                        NULL, &error);
      g_assert_no_error (error);
      elk_graph_add_op (g, m2, "attention", ELK_OP_MATMUL, l, "bn,bsn->bn", t2,
                        3, NULL, &error);
      g_assert_no_error (error);
      elk_graph_add_op (g, m3, "relu", ELK_OP_UNARY, l, "bn->bn", t3, 2, NULL,
                        &error);
      g_assert_no_error (error);
      x = o;
    }
  g_assert_true (elk_graph_validate (g, &error));
  g_assert_no_error (error);
  return g;
}

/**
 * elk_test_schedule_and_run:
 *
 * Plans @graph for @chip, schedules it with the features @scheduler and
 * @allocator of @registry and runs it: the whole path elk-run takes for
 * one design.  Returns: (transfer full): the metrics, or %NULL with
 * @error set by the step that failed.
 */
ElkMetrics *
elk_test_schedule_and_run (ElkRegistry *registry,
                           ElkGraph *graph,
                           ElkChip *chip,
                           const char *scheduler,
                           const char *allocator,
                           GError **error)
{
  g_autoptr (GObject) sched
      = elk_test_make (registry, ELK_TYPE_SCHEDULER, scheduler, NULL);
  g_autoptr (GObject) alloc
      = elk_test_make (registry, ELK_TYPE_ALLOCATOR, allocator, NULL);
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (chip, error);
  g_autoptr (ElkPlanSet) plans = NULL;
  g_autoptr (ElkProgram) program = NULL;

  if (spec == NULL
      || (plans = elk_plan_set_new (graph, spec, NULL, error)) == NULL
      || (program = elk_scheduler_schedule (ELK_SCHEDULER (sched), plans,
                                            ELK_ALLOCATOR (alloc), error))
             == NULL)
    return NULL;
  return elk_chip_run (chip, program, plans, error);
}

/**
 * elk_test_compile:
 * @chip: the chip to plan for
 * @graph: the graph to compile
 * @scheduler: an #ElkScheduler
 * @allocator: an #ElkAllocator
 * @plans: (out) (transfer full): the plan set the program refers to
 *
 * Plans @graph for @chip and schedules it with @scheduler and @allocator,
 * asserting that each step succeeds: the compile half of
 * elk_test_schedule_and_run() for tests that configure the features
 * themselves or time the run apart from the compile.  Returns: (transfer
 * full): the program.
 */
ElkProgram *
elk_test_compile (ElkChip *chip,
                  ElkGraph *graph,
                  GObject *scheduler,
                  GObject *allocator,
                  ElkPlanSet **plans)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (chip, &error);
  ElkProgram *program;

  g_assert_no_error (error);
  *plans = elk_plan_set_new (graph, spec, NULL, &error);
  g_assert_no_error (error);
  program = elk_scheduler_schedule (ELK_SCHEDULER (scheduler), *plans,
                                    ELK_ALLOCATOR (allocator), &error);
  g_assert_no_error (error);
  return program;
}

/**
 * elk_test_assert_one_expert_taken:
 * @m: the metrics of a run of a graph with two conditional experts of
 *   512-byte weights, one of them taken
 * @unrouted: the metrics of the same program on the graph without routing
 * @untaken_flops: the arithmetic of the untaken expert
 * @want: what the chip should charge: hits, wasted, on_demand and skipped
 *
 * Asserts the routing record both routing suites (tests/compiler and the
 * chips' test-chip-routing) check by hand: the untaken expert does no
 * arithmetic, the unrouted run has no record, and the routed one counts
 * two conditional operators, one taken, and the given charges.
 */
void
elk_test_assert_one_expert_taken (const ElkMetrics *m,
                                  const ElkMetrics *unrouted,
                                  double untaken_flops,
                                  const ElkRoutingStats *want)
{
  g_assert_cmpfloat (m->flops, ==, unrouted->flops - untaken_flops);
  g_assert_null (unrouted->routing);
  g_assert_nonnull (m->routing);
  g_assert_cmpuint (m->routing->n_conditional, ==, 2);
  g_assert_cmpuint (m->routing->n_taken, ==, 1);
  g_assert_cmpuint (m->routing->hits, ==, want->hits);
  g_assert_cmpuint (m->routing->wasted, ==, want->wasted);
  g_assert_cmpfloat (m->routing->wasted_hbm_bytes, ==, want->wasted * 512.0);
  g_assert_cmpuint (m->routing->on_demand, ==, want->on_demand);
  g_assert_cmpfloat (m->routing->on_demand_hbm_bytes, ==,
                     want->on_demand * 512.0);
  g_assert_cmpuint (m->routing->skipped, ==, want->skipped);
  g_assert_cmpfloat (m->routing->hit_rate, ==, want->hits);
}

/**
 * elk_test_run_experiment:
 * @registry: the features the experiment names
 * @xml: the experiment
 * @file: the name messages give @xml
 * @dir: the output folder (it overrides the experiment's)
 *
 * Loads @xml and runs it with one job and no trace into @dir, asserting
 * that it loads and that every point succeeds: what the tests that read
 * an experiment's results do first.  Returns: (transfer full): the lines
 * of @dir/results.csv, the header first.
 */
GStrv
elk_test_run_experiment (ElkRegistry *registry,
                         const char *xml,
                         const char *file,
                         const char *dir)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkExperiment) e
      = elk_experiment_load_from_data (xml, strlen (xml), file, registry,
                                       &error);
  ElkRunOptions options = { .n_jobs = 1, .output_dir = dir, .trace_point = -1 };
  g_autofree char *csv = NULL;
  ElkRunStatus status;

  g_assert_no_error (error);
  g_assert_true (elk_experiment_run (e, &options, &status, &error));
  g_assert_no_error (error);
  g_assert_cmpint (status, ==, ELK_RUN_OK);
  csv = elk_test_read_file (dir, "results.csv");
  return g_strsplit (csv, "\n", -1);
}

/**
 * elk_test_load_llama:
 *
 * The first @layers layers of the llama frontend's @preset in decode at
 * @batch sequences reading @seq KV-cache entries.  Returns: (transfer
 * full) (nullable): the graph, or %NULL after g_test_skip() when the
 * llama frontend is not built.
 */
ElkGraph *
elk_test_load_llama (ElkRegistry *registry,
                     const char *preset,
                     guint batch,
                     guint seq,
                     guint layers)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) fe = NULL;
  ElkGraph *graph;

  if (elk_registry_lookup (registry, ELK_TYPE_FRONTEND, "llama") == NULL)
    {
      g_test_skip ("the llama frontend is not built");
      return NULL;
    }
  fe = elk_test_make (registry, ELK_TYPE_FRONTEND, "llama", "preset", preset,
                      "batch", batch, "seq", seq, "layers", layers, NULL);
  graph = elk_frontend_load (ELK_FRONTEND (fe), &error);
  g_assert_no_error (error);
  return graph;
}

/* Checks what every chip's #ElkBreakdown promises: its cells are
 * non-negative and add up to the latency the chip reports (to 1e-9
 * relative), and, when @fig18a, that its stall and preload-wait cells are
 * the Fig 18a stall_s and preload_only_s of the same metrics (which holds
 * where the chip's stall is the delay-execution stall). */
void
elk_test_assert_breakdown_adds_up (const ElkMetrics *m, gboolean fig18a)
{
  const ElkBreakdown *b = m->breakdown;
  double lat = m->latency_s, cells = 0;

  g_assert_nonnull (b);
  g_assert_cmpfloat_with_epsilon (elk_breakdown_get_total (b) / lat, 1.0, 1e-9);
  if (fig18a)
    {
      g_assert_cmpfloat_with_epsilon (elk_breakdown_get (b, NULL,
                                                         ELK_TIME_STALL)
                                          / lat,
                                      m->stall_s / lat, 1e-9);
      g_assert_cmpfloat_with_epsilon (elk_breakdown_get (b, NULL,
                                                         ELK_TIME_PRELOAD_WAIT)
                                          / lat,
                                      m->preload_only_s / lat, 1e-9);
    }
  for (guint i = 0; i < elk_breakdown_get_n_cells (b); i++)
    {
      double s;

      elk_breakdown_get_cell (b, i, NULL, &s);
      g_assert_cmpfloat (s, >=, 0);
      cells += s;
    }
  g_assert_cmpfloat (cells, ==, elk_breakdown_get_total (b));
}

/* A hand-made program on @graph: every operator gets the plans of its
 * first cold-hot entry in @plans, and @order lists the steps as
 * "p0 p1 e0 ...", p for a preload and e for an execute of the operator
 * with that index.  For tests that work a program's cost out by hand. */
ElkProgram *
elk_test_hand_program (ElkGraph *graph, ElkPlanSet *plans, const char *order)
{
  ElkProgram *p = elk_program_new (graph);
  g_auto (GStrv) steps = g_strsplit (order, " ", -1);

  for (guint i = 0; i < elk_graph_get_n_ops (graph); i++)
    {
      const ElkPlanTable *t = elk_plan_set_get_table (plans, i);
      ElkProgramOp *pop = elk_program_get_op (p, i);
      pop->exec_plan = t->plans[t->cold_hot[0].hot_plan];
      pop->preload_plan = t->plans[t->cold_hot[0].cold_plan];
    }
  for (guint k = 0; steps[k] != NULL; k++)
    {
      guint32 op = (guint32) g_ascii_strtoull (steps[k] + 1, NULL, 10);
      if (steps[k][0] == 'p')
        elk_program_add_preload (p, op);
      else
        elk_program_add_execute (p, op);
    }
  return p;
}

/* g_test_init() for a test program that writes its files into one fresh
 * temporary directory, made from the g_dir_make_tmp() template @tmpl;
 * returns the directory.  elk_test_run_and_remove() runs the tests and
 * removes the directory again. */
char *
elk_test_init_with_tmpdir (int *argc, char ***argv, const char *tmpl)
{
  char *dir;

  g_test_init (argc, argv, NULL);
  dir = g_dir_make_tmp (tmpl, NULL);
  g_assert_nonnull (dir);
  return dir;
}

/* g_test_run(), then removes and frees @tmpdir; returns g_test_run()'s
 * status, for main() to return. */
int
elk_test_run_and_remove (char *tmpdir)
{
  int status = g_test_run ();

  elk_test_remove_tree (tmpdir);
  g_free (tmpdir);
  return status;
}

/* Plans @graph on each of the three shipped chips (analytic, noc-sim and
 * ipu-pod, with their defaults), schedules it with the elk scheduler and
 * the reservation allocator and runs it: every chip must take it and
 * report a positive latency. */
void
elk_test_run_on_every_chip (ElkRegistry *registry, ElkGraph *graph)
{
  static const char *const chips[] = { "analytic", "noc-sim", "ipu-pod" };

  for (guint i = 0; i < G_N_ELEMENTS (chips); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (GObject) chip
          = elk_test_make (registry, ELK_TYPE_CHIP, chips[i], NULL);
      g_autoptr (ElkMetrics) metrics
          = elk_test_schedule_and_run (registry, graph, ELK_CHIP (chip), "elk",
                                       "reservation", &error);

      g_assert_no_error (error);
      g_test_message ("%s: %u operators, %.4g ms", chips[i],
                      elk_graph_get_n_ops (graph), metrics->latency_s * 1e3);
      g_assert_cmpfloat (metrics->latency_s, >, 0);
    }
}
