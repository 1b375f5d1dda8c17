/* test-noc-sim-steady.c: steady-state layer extrapolation in the noc-sim
 * chip (docs/chip-noc-sim.md, "Steady-state extrapolation").
 *
 * A small Llama-style model of 12 layers, compiled by two designs (basic
 * and elk) on small all-to-all and mesh chips of two chips each, with a
 * slow HBM (preload-heavy) and a fast one (execution-heavy): with
 * steady-state on (the default) some layers must be advanced in closed
 * form, and the metrics must equal those of the same run with every layer
 * simulated (steady-state = off) to 1e-9.  A program whose layers have
 * different plans must be simulated in full and give the same numbers;
 * bad values of the property are refused. */
#include "config.h"

#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <elk/elk.h>
#include "elk-test-util.h"

static ElkRegistry *registry;
static char *model_dir, *model_path;

#define LAYERS 12

/* A Llama-style decoder small enough for a 64-core chip. */
static const char model_json[]
    = "{\"model_type\": \"llama\", \"hidden_size\": 512,"
      " \"intermediate_size\": 1024, \"max_position_embeddings\": 1024,"
      " \"num_attention_heads\": 8, \"num_hidden_layers\": 12,"
      " \"num_key_value_heads\": 8, \"rms_norm_eps\": 1e-05,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"float16\","
      " \"vocab_size\": 2000}\n";

static GObject *
make (GType kind, const char *name)
{
  g_autoptr (GError) error = NULL;
  const ElkFeature *f = elk_registry_find (registry, kind, name, &error);

  g_assert_no_error (error);
  g_assert_nonnull (f);
  return g_object_new (f->type, NULL);
}

/* Sets @obj's parameter @name from its text, as an experiment does. */
static void
set_param (GObject *obj, const char *name, const char *value)
{
  g_autoptr (GError) error = NULL;
  GValue v = G_VALUE_INIT;

  g_assert_true (
      elk_param_parse (G_OBJECT_TYPE (obj), name, value, NULL, &v, &error));
  g_assert_no_error (error);
  g_object_set_property (obj, name, &v);
  g_value_unset (&v);
}

static ElkGraph *
model_graph (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) fe = make (ELK_TYPE_FRONTEND, "llama");
  ElkGraph *g;

  set_param (fe, "model", model_path);
  set_param (fe, "phase", "decode");
  set_param (fe, "batch", "8");
  set_param (fe, "seq", "512");
  g = elk_frontend_load (ELK_FRONTEND (fe), &error);
  g_assert_no_error (error);
  g_assert_cmpuint (elk_graph_get_n_layers (g), ==, LAYERS);
  return g;
}

/* A noc-sim chip of two chips of 32 cores, with @steady ("on", "off" or
 * NULL for the default). */
static GObject *
chip_new (const char *topology, double hbm_gbps, const char *steady)
{
  GObject *chip = make (ELK_TYPE_CHIP, "noc-sim");
  const char *names[] = { "topology",     "chips",       "cores",
                          "hbm-channels", "hbm-bw-gbps", "steady-state" };
  g_autofree char *hbm = g_strdup_printf ("%g", hbm_gbps);
  const char *values[] = { topology, "2", "64", "8", hbm, steady };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    if (values[i] != NULL)
      set_param (chip, names[i], values[i]);
  return chip;
}

static ElkProgram *
compile (GObject *chip, ElkGraph *g, const char *design, ElkPlanSet **plans)
{
  g_autoptr (GObject) sched = make (ELK_TYPE_SCHEDULER, design);
  g_autoptr (GObject) alloc = make (ELK_TYPE_ALLOCATOR, "reservation");

  return elk_test_compile (ELK_CHIP (chip), g, sched, alloc, plans);
}

static ElkMetrics *
run (GObject *chip, ElkProgram *program, const ElkPlanSet *plans)
{
  g_autoptr (GError) error = NULL;
  ElkMetrics *m = elk_chip_run (ELK_CHIP (chip), program, plans, &error);

  g_assert_no_error (error);
  g_assert_nonnull (m);
  return m;
}

static void
assert_close (const char *what, double a, double b)
{
  if (!(fabs (a - b) <= 1e-9 * MAX (fabs (a), fabs (b))))
    g_error ("%s: %.17g with steady-state, %.17g simulated in full", what, a,
             b);
}

/* The metrics of @a (extrapolated) equal those of @b (in full). */
static void
assert_same (const ElkMetrics *a, const ElkMetrics *b)
{
  assert_close ("latency", a->latency_s, b->latency_s);
  assert_close ("hbm bytes", a->hbm_bytes, b->hbm_bytes);
  assert_close ("noc bytes", a->noc_bytes, b->noc_bytes);
  assert_close ("hbm util", a->hbm_util, b->hbm_util);
  assert_close ("noc util", a->noc_util, b->noc_util);
  /* The breakdown's parts are sums of many intervals: their rounding is
   * relative to the latency. */
  assert_close ("preload only", a->preload_only_s + b->latency_s,
                b->preload_only_s + b->latency_s);
  assert_close ("execute only", a->execute_only_s + b->latency_s,
                b->execute_only_s + b->latency_s);
  assert_close ("overlap", a->overlap_s + b->latency_s,
                b->overlap_s + b->latency_s);
  assert_close ("stall", a->stall_s + b->latency_s, b->stall_s + b->latency_s);
}

typedef struct
{
  const char *topology;
  double hbm_gbps;
  const char *design;
  const char *param, *value; /* one more chip parameter, or NULL */
} Case;

static void
test_equal (gconstpointer data)
{
  const Case *c = data;
  g_autoptr (ElkGraph) g = model_graph ();
  g_autoptr (GObject) on = chip_new (c->topology, c->hbm_gbps, NULL);
  g_autoptr (GObject) off = chip_new (c->topology, c->hbm_gbps, "off");
  g_autoptr (ElkPlanSet) plans = NULL;
  g_autoptr (ElkProgram) program = compile (on, g, c->design, &plans);
  g_autoptr (ElkMetrics) a = NULL, b = NULL;
  gint64 t0, t1;

  if (c->param != NULL)
    {
      set_param (on, c->param, c->value);
      set_param (off, c->param, c->value);
    }
  t0 = g_get_monotonic_time ();
  a = run (on, program, plans);
  t1 = g_get_monotonic_time ();
  b = run (off, program, plans);
  g_test_message ("%s %g GB/s %s %s=%s: %.9g s (%.2f s wall) vs %.9g s in "
                  "full (%.2f s wall): %s",
                  c->topology, c->hbm_gbps, c->design,
                  c->param ? c->param : "-", c->value ? c->value : "-",
                  a->latency_s, (t1 - t0) / 1e6, b->latency_s,
                  (g_get_monotonic_time () - t1) / 1e6, a->model);
  g_assert_nonnull (strstr (a->model, "advanced in closed form"));
  g_assert_nonnull (strstr (b->model, "every layer simulated (steady-state "
                                      "off)"));
  assert_same (a, b);
}

/* Layers with different plans never repeat: the run is simulated in
 * full, and says so. */
static void
test_fallback (void)
{
  g_autoptr (ElkGraph) g = model_graph ();
  g_autoptr (GObject) on = chip_new ("all-to-all", 200, NULL);
  g_autoptr (GObject) off = chip_new ("all-to-all", 200, "off");
  g_autoptr (ElkPlanSet) plans = NULL;
  g_autoptr (ElkProgram) program = compile (on, g, "basic", &plans);
  g_autoptr (ElkMetrics) a = NULL, b = NULL, c = NULL;
  g_autofree gboolean *preloaded = g_new0 (gboolean, elk_graph_get_n_ops (g));
  gint last = -1;
  guint changed = 0;

  /* In the layers where the Thue-Morse sequence (which never repeats a
   * block three times in a row, so no period of layers is confirmed) has
   * a one, the first operator without a preload whose fastest and
   * smallest plans differ executes its fastest plan, elsewhere its
   * smallest. */
  for (guint i = 0; i < elk_program_get_n_steps (program); i++)
    {
      const ElkStep *st = elk_program_get_step (program, i);
      if (st->kind == ELK_STEP_PRELOAD)
        preloaded[st->op] = TRUE;
    }
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    {
      const ElkOp *op = elk_graph_get_op (g, i);
      const ElkPlanTable *t = elk_plan_set_get_table (plans, i);
      const ElkPlan *fast = elk_plan_table_get_fastest (t);
      const ElkPlan *small = elk_plan_table_get_smallest (t);
      const ElkPlan *p;
      ElkProgramOp *pop;
      if (op->layer < 0 || op->layer == last || preloaded[i]
          || fast->time_s == small->time_s)
        continue;
      last = op->layer;
      p = __builtin_popcount ((guint) op->layer) % 2 ? fast : small;
      elk_program_set_plans (program, i, p, p);
      pop = elk_program_get_op (program, i);
      pop->exec_budget = pop->hot_bytes = pop->cold_bytes
          = ELK_PROGRAM_UNDECLARED;
      changed++;
    }
  g_assert_cmpuint (changed, ==, LAYERS);
  a = run (on, program, plans);
  b = run (off, program, plans);
  g_test_message ("%.9g s vs %.9g s: %s", a->latency_s, b->latency_s, a->model);
  g_assert_nonnull (strstr (a->model, "every layer simulated (not "
                                      "periodic)"));
  assert_same (a, b);

  /* And with the same plans in every layer it is extrapolated. */
  g_clear_pointer (&program, elk_program_unref);
  g_clear_pointer (&plans, elk_plan_set_unref);
  program = compile (on, g, "basic", &plans);
  c = run (on, program, plans);
  g_assert_nonnull (strstr (c->model, "advanced in closed form"));
}

static void
test_bad_values (void)
{
  const char *bad[] = { "maybe", "1", "" };
  const ElkFeature *f;
  g_autoptr (GError) error = NULL;

  f = elk_registry_find (registry, ELK_TYPE_CHIP, "noc-sim", &error);
  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      GValue v = G_VALUE_INIT;
      g_autoptr (GError) e = NULL;
      g_assert_false (
          elk_param_parse (f->type, "steady-state", bad[i], NULL, &v, &e));
      g_assert_error (e, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_BAD_VALUE);
      g_test_message ("%s", e->message);
      g_assert_nonnull (strstr (e->message, "steady-state"));
      g_assert_nonnull (strstr (e->message, "auto, on, off"));
    }
  {
    /* In an experiment, the file and the line are named. */
    static const char xml[]
        = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<experiment format=\"1\" name=\"bad-steady\">\n"
          "  <frontend name=\"llama\"/>\n"
          "  <chip name=\"noc-sim\">\n"
          "    <param name=\"steady-state\">sometimes</param>\n"
          "  </chip>\n"
          "  <allocator name=\"reservation\"/>\n"
          "  <scheduler name=\"basic\"/>\n"
          "</experiment>\n";
    g_autoptr (ElkExperiment) e
        = elk_experiment_load_from_data (xml, sizeof xml - 1, "bad-steady.xml",
                                         registry, &error);
    g_assert_null (e);
    g_assert_error (error, ELK_EXPERIMENT_ERROR,
                    ELK_EXPERIMENT_ERROR_BAD_VALUE);
    g_test_message ("%s", error->message);
    g_assert_nonnull (strstr (error->message, "bad-steady.xml:5"));
    g_assert_nonnull (strstr (error->message,
                              "parameter 'steady-state': unknown value "
                              "'sometimes' (expected one of: auto, on, off)"));
  }
}

/* Designs, topologies and HBM bandwidths; then the route-booking
 * arbitration, the 2-D reduce-scatter on a torus, and the ladder's
 * analytic rung (its delay-execution stall looks at the preloads in
 * flight, part of the state that must repeat). */
static const Case cases[] = {
  { "all-to-all", 100, "basic", NULL, NULL },
  { "all-to-all", 100, "elk", NULL, NULL },
  { "all-to-all", 4000, "basic", NULL, NULL },
  { "all-to-all", 4000, "elk", NULL, NULL },
  { "mesh", 100, "basic", NULL, NULL },
  { "mesh", 100, "elk", NULL, NULL },
  { "mesh", 4000, "basic", NULL, NULL },
  { "mesh", 4000, "elk", NULL, NULL },
  { "mesh", 100, "elk", "arbitration", "booking" },
  { "torus", 400, "basic", "reduce", "2d" },
  { "all-to-all", 400, "elk", "fidelity", "analytic" },
};

int
main (int argc, char *argv[])
{
  int status;
  g_autoptr (GError) error = NULL;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  model_dir = g_dir_make_tmp ("noc-sim-steady-XXXXXX", &error);
  g_assert_no_error (error);
  model_path = g_build_filename (model_dir, "config.json", NULL);
  g_assert_true (g_file_set_contents (model_path, model_json, -1, &error));
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path
          = g_strdup_printf ("/noc-sim/steady/equal/%s-%g-%s%s%s",
                             cases[i].topology, cases[i].hbm_gbps,
                             cases[i].design, cases[i].param ? "-" : "",
                             cases[i].value ? cases[i].value : "");
      g_test_add_data_func (path, &cases[i], test_equal);
    }
  g_test_add_func ("/noc-sim/steady/fallback", test_fallback);
  g_test_add_func ("/noc-sim/steady/bad-values", test_bad_values);
  status = g_test_run ();
  g_unlink (model_path);
  g_rmdir (model_dir);
  g_free (model_path);
  g_free (model_dir);
  g_object_unref (registry);
  return status;
}
