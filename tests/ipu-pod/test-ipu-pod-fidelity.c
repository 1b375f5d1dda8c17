/* test-ipu-pod-fidelity.c: the ipu-pod chip's fidelity ladder.
 *
 * With every emulate-* switch off (fidelity=analytic) the emulator must
 * price a program as the analytic chip does: a reduced Fig 17 (the five
 * designs on three configurations of two layers each) runs on both chips
 * and every row must agree within 3 %.  Each effect switched on alone
 * must then change some row, so that a switch wired to nothing fails too.
 * The switches' properties (fidelity reads back the mix, set in the order
 * given so that fidelity=analytic then one emulate-*=true is that effect
 * alone) and the loader's refusal of bad values are checked on experiment
 * files.  docs/fidelity-ipu-pod.md has the full sweep.
 */
#include <math.h>
#include <string.h>
#include <elk/elk.h>
#include "elk-test-util.h"

static ElkRegistry *registry;

#define make(...) elk_test_make (registry, __VA_ARGS__)

/* The five designs of experiments/fig17.xml on three configurations of
 * two layers, and on the first (Llama2-13B b64) also Elk-Full with the
 * cost-aware allocator, whose preload layouts need data distribution
 * (0.041 ms of it; on Gemma2-27B b64 that allocator finds no plan for the
 * softmax sums, a compiler matter); %s is the chip's <param>s. */
static const char reduced_fig17[]
    = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<experiment format=\"1\" name=\"fidelity\">\n"
      "  <frontend name=\"llama\">\n"
      "    <param name=\"preset\">llama2-13b-paper</param>\n"
      "    <param name=\"phase\">decode</param>\n"
      "    <param name=\"layers\">2</param>\n"
      "  </frontend>\n"
      "  <chip name=\"ipu-pod\">%s</chip>\n"
      "  <allocator name=\"reservation\"/>\n" ELK_TEST_FIG17_SCHEDULERS
      "  <scheduler name=\"elk\" label=\"full-cost-aware\">\n"
      "    <allocator name=\"cost-aware\"/>\n"
      "  </scheduler>\n"
      "  <sweep>\n"
      "    <axis param=\"frontend.preset\" values=\"llama2-13b-paper "
      "gemma2-27b-paper opt-30b-paper\"/>\n"
      "    <axis param=\"frontend.batch\" values=\"%s\"/>\n"
      "    <axis param=\"frontend.seq\" values=\"%s\"/>\n"
      "  </sweep>\n"
      "</experiment>\n";

static ElkExperiment *
load_xml (const char *xml, GError **error)
{
  return elk_experiment_load_from_data (xml, strlen (xml), "fidelity.xml",
                                        registry, error);
}

/* The effects, as the chip names them (elk-ipu-pod-chip.c). */
static const char *const effects[] = {
  "emulate-syncs",        "emulate-exchange-rate",
  "emulate-reduction",    "emulate-gather",
  "emulate-distribution", "emulate-ipu-links",
  "emulate-send-ports",   "emulate-hbm-latency",
  "emulate-hbm-chips",    "emulate-unthrottled-preload",
  "emulate-port-sharing", "emulate-sram-port",
};

/* One compiled program of the reduced sweep. */
typedef struct
{
  char *label;
  ElkPlanSet *plans;
  ElkProgram *program;
  double analytic_s;
} Row;

static void
row_clear (gpointer data)
{
  Row *r = data;
  g_free (r->label);
  elk_plan_set_unref (r->plans);
  elk_program_unref (r->program);
}

/* Compiles every (point, design) of the reduced sweep against the
 * ipu-pod chip's spec, as elk-run does, and prices it on the analytic
 * chip. */
static GArray *
compile_rows (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *xml = g_strdup_printf (reduced_fig17, "", "16 64", "2048");
  g_autoptr (ElkExperiment) exp = load_xml (xml, &error);
  g_autoptr (ElkChip) analytic
      = ELK_CHIP (make (ELK_TYPE_CHIP, "analytic", NULL));
  GArray *rows = g_array_new (FALSE, TRUE, sizeof (Row));

  g_assert_no_error (error);
  g_array_set_clear_func (rows, row_clear);
  /* Points 1, 3 and 4 of preset x batch: Llama2-13B b64, Gemma2-27B b64
   * and OPT-30B b16 (its split attention). */
  for (guint k = 0; k < 3; k++)
    {
      static const guint points[] = { 1, 3, 4 };
      guint p = points[k];
      g_autoptr (GObject) fe
          = elk_experiment_create_component (exp, p, ELK_TYPE_FRONTEND, 0,
                                             &error);
      g_autoptr (GObject) chip = NULL;
      g_autoptr (ElkGraph) graph = NULL;
      g_autoptr (ElkChipSpec) spec = NULL;
      g_autoptr (ElkPlanSet) plans = NULL;
      g_autofree char *point = elk_experiment_dup_point_label (exp, p);

      g_assert_no_error (error);
      chip = elk_experiment_create_component (exp, p, ELK_TYPE_CHIP, 0, &error);
      g_assert_no_error (error);
      graph = elk_frontend_load (ELK_FRONTEND (fe), &error);
      g_assert_no_error (error);
      spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
      g_assert_no_error (error);
      plans = elk_plan_set_new (graph, spec, NULL, &error);
      g_assert_no_error (error);
      for (guint s = 0; s < elk_experiment_get_n_schedulers (exp); s++)
        {
          g_autoptr (GObject) sched = NULL;
          g_autoptr (GObject) alloc = NULL;
          g_autoptr (ElkMetrics) m = NULL;
          Row r = { 0 };

          if (k > 0 && s == 5)
            continue;
          sched = elk_experiment_create_component (exp, p, ELK_TYPE_SCHEDULER,
                                                   s, &error);
          g_assert_no_error (error);
          alloc = elk_experiment_create_component (exp, p, ELK_TYPE_ALLOCATOR,
                                                   s, &error);
          g_assert_no_error (error);
          r.program = elk_scheduler_schedule (ELK_SCHEDULER (sched), plans,
                                              ELK_ALLOCATOR (alloc), &error);
          g_assert_no_error (error);
          m = elk_chip_run (analytic, r.program, plans, &error);
          g_assert_no_error (error);
          r.analytic_s = m->latency_s;
          r.plans = elk_plan_set_ref (plans);
          r.label
              = g_strdup_printf ("%s %s", point,
                                 elk_experiment_get_scheduler_label (exp, s));
          g_array_append_val (rows, r);
        }
    }
  return rows;
}

static GArray *rows;

static double
run_row (ElkChip *chip, const Row *r)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkMetrics) m = elk_chip_run (chip, r->program, r->plans, &error);

  g_assert_no_error (error);
  return m->latency_s;
}

/* Every switch off: within 3 % of the analytic chip, row by row.  (The
 * engine then reproduces the analytic timeline; docs/fidelity-ipu-pod.md
 * gives the measured agreement.) */
static void
test_analytic_equals (void)
{
  g_autoptr (ElkChip) chip = ELK_CHIP (make (ELK_TYPE_CHIP, "ipu-pod", NULL));
  double worst = 0;

  g_object_set (chip, "fidelity", 1 /* analytic */, NULL);
  g_assert_cmpuint (rows->len, ==, 16);
  for (guint k = 0; k < rows->len; k++)
    {
      const Row *r = &g_array_index (rows, Row, k);
      double t = run_row (chip, r);

      g_test_message ("%s: analytic %.6f ms, ipu-pod fidelity=analytic "
                      "%.6f ms (%+.3f %%)",
                      r->label, r->analytic_s * 1e3, t * 1e3,
                      (t / r->analytic_s - 1) * 100);
      g_assert_cmpfloat (fabs (t / r->analytic_s - 1), <, 0.03);
      worst = MAX (worst, fabs (t / r->analytic_s - 1));
    }
  /* The bar is 3 %, but the off positions take the analytic quantities
   * themselves, so the two agree to rounding; a gap above that is an
   * effect leaking through its switch, however small its share. */
  g_test_message ("largest gap %.3g", worst);
  g_assert_cmpfloat (worst, <, 1e-6);
}

/* The largest relative change, over the rows, from @base to the chip
 * with @fidelity and then @effect set to @on. */
static double
largest_change (const double *base,
                gint fidelity,
                const char *effect,
                gboolean on)
{
  g_autoptr (ElkChip) chip = ELK_CHIP (make (ELK_TYPE_CHIP, "ipu-pod", NULL));
  double worst = 0;

  g_object_set (chip, "fidelity", fidelity, effect, on, NULL);
  for (guint k = 0; k < rows->len; k++)
    {
      double d = run_row (chip, &g_array_index (rows, Row, k)) / base[k] - 1;
      if (fabs (d) > fabs (worst))
        worst = d;
    }
  return worst;
}

/* Each effect moves some row, on alone (from the analytic chip) or off
 * alone (from the defaults; the send ports, say, only matter once
 * activations are gathered): a switch that reaches nothing would pass
 * the test above untested. */
static void
test_each_effect_acts (void)
{
  g_autofree double *analytic = g_new (double, rows->len);
  g_autofree double *full = g_new (double, rows->len);
  g_autoptr (ElkChip) chip = ELK_CHIP (make (ELK_TYPE_CHIP, "ipu-pod", NULL));

  for (guint k = 0; k < rows->len; k++)
    {
      analytic[k] = g_array_index (rows, Row, k).analytic_s;
      full[k] = run_row (chip, &g_array_index (rows, Row, k));
    }
  for (guint e = 0; e < G_N_ELEMENTS (effects); e++)
    {
      double on = largest_change (analytic, 1 /* analytic */, effects[e], TRUE);
      double off = largest_change (full, 0 /* full */, effects[e], FALSE);

      g_test_message ("%s: largest change on alone %+.3f %%, off alone "
                      "%+.3f %%",
                      effects[e], on * 100, off * 100);
      g_assert_cmpfloat (MAX (fabs (on), fabs (off)), >, 1e-6);
    }
}

/* fidelity reads back the mix; the switches apply in the order given, so
 * a sweep axis over one switch after fidelity=analytic is that effect
 * alone. */
static void
test_properties (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *xml
      = g_strdup_printf (reduced_fig17,
                         "<param name=\"fidelity\">analytic</param>"
                         "<param name=\"emulate-sram-port\">true</param>",
                         "16", "2048");
  g_autoptr (ElkExperiment) exp = load_xml (xml, &error);
  g_autoptr (GObject) chip = NULL;
  g_autoptr (ElkChip) plain = ELK_CHIP (make (ELK_TYPE_CHIP, "ipu-pod", NULL));
  gint fidelity = -1;
  gboolean on = FALSE;

  g_assert_no_error (error);
  chip = elk_experiment_create_component (exp, 0, ELK_TYPE_CHIP, 0, &error);
  g_assert_no_error (error);
  g_object_get (chip, "fidelity", &fidelity, "emulate-sram-port", &on, NULL);
  g_assert_cmpint (fidelity, ==, 2 /* custom */);
  g_assert_true (on);
  g_object_get (chip, "emulate-syncs", &on, NULL);
  g_assert_false (on);

  /* Defaults: every effect on. */
  g_object_get (plain, "fidelity", &fidelity, NULL);
  g_assert_cmpint (fidelity, ==, 0 /* full */);
  g_object_set (plain, "emulate-gather", FALSE, NULL);
  g_object_get (plain, "fidelity", &fidelity, NULL);
  g_assert_cmpint (fidelity, ==, 2 /* custom */);
  /* Writing custom leaves the switches alone. */
  g_object_set (plain, "fidelity", 2, NULL);
  g_object_get (plain, "emulate-gather", &on, NULL);
  g_assert_false (on);
  g_object_set (plain, "fidelity", 1, NULL);
  g_object_get (plain, "fidelity", &fidelity, NULL);
  g_assert_cmpint (fidelity, ==, 1 /* analytic */);
  g_object_set (plain, "fidelity", 0, NULL);
  g_object_get (plain, "emulate-gather", &on, NULL);
  g_assert_true (on);
}

/* A bad switch value is refused naming the file, the line, the parameter
 * and what it expects. */
static void
test_bad_values (void)
{
  static const struct
  {
    const char *param;
    const char *needle;
  } cases[] = {
    { "<param name=\"fidelity\">exact</param>",
      "parameter 'fidelity': unknown value 'exact' (expected one of: full, "
      "analytic, custom)" },
    { "<param name=\"emulate-syncs\">off</param>",
      "parameter 'emulate-syncs': 'off' is not a boolean (expected true or "
      "false)" },
    { "<param name=\"emulate-hbm-lat\">false</param>",
      "has no parameter 'emulate-hbm-lat' (valid: " },
  };

  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autoptr (GError) error = NULL;
      g_autofree char *xml
          = g_strdup_printf (reduced_fig17, cases[k].param, "16", "2048");
      g_autoptr (ElkExperiment) exp = load_xml (xml, &error);

      g_assert_null (exp);
      g_assert_nonnull (error);
      g_test_message ("%s", error->message);
      elk_test_assert_has_line (error, "fidelity.xml");
      g_assert_nonnull (strstr (error->message, cases[k].needle));
    }
}

int
main (int argc, char *argv[])
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  g_test_add_func ("/ipu-pod/fidelity/properties", test_properties);
  g_test_add_func ("/ipu-pod/fidelity/bad-values", test_bad_values);
  if (elk_registry_lookup (registry, ELK_TYPE_FRONTEND, "llama") != NULL
      && elk_registry_lookup (registry, ELK_TYPE_SCHEDULER, "elk") != NULL)
    {
      rows = compile_rows ();
      g_test_add_func ("/ipu-pod/fidelity/analytic-equals",
                       test_analytic_equals);
      g_test_add_func ("/ipu-pod/fidelity/each-effect-acts",
                       test_each_effect_acts);
    }
  ret = g_test_run ();
  g_clear_pointer (&rows, g_array_unref);
  g_object_unref (registry);
  return ret;
}
