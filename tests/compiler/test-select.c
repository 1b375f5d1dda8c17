/* test-select.c: how the elk scheduler makes its final choice (property
 * "select").  With the same options, order-search=full tries every
 * candidate order-search=dyn tries, so when both choose by the analytic
 * chip's own model Full is never slower than Dyn on that chip: checked on
 * random toy graphs and chips, for every contention setting, both
 * allocators and both NoC priorities of the chip.  The model a scheduler
 * prices with (elk_timeline_run_program()) gives exactly what the chip
 * reports.  With select=chip the candidates are measured on the chip the
 * program is for, so the same holds on every backend. */
#include "config.h"

#include <math.h>
#include <string.h>
#define ELK_USE_UNSTABLE_API
#include <elk/elk.h>
#include "elk-test-util.h"

static ElkRegistry *registry;

#define make(...) elk_test_make (registry, __VA_ARGS__)

/* Schedules with @sched and runs the program on @chip; returns the chip's
 * latency, or NAN when nothing fits (not a failure of this property). */
static double
measure (ElkChip *chip,
         const ElkPlanSet *plans,
         GObject *sched,
         GObject *alloc,
         double *priced,
         gboolean delay_preload)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkProgram) program
      = elk_scheduler_schedule (ELK_SCHEDULER (sched), plans,
                                ELK_ALLOCATOR (alloc), &error);
  ElkTimelineResult tr;
  ElkMetrics *m;
  double latency;

  if (program == NULL
      && g_error_matches (error, ELK_SCHEDULE_ERROR,
                          ELK_SCHEDULE_ERROR_DOES_NOT_FIT))
    return NAN;
  g_assert_no_error (error);
  m = elk_chip_run (chip, program, plans, &error);
  g_assert_no_error (error);
  latency = m->latency_s;
  elk_metrics_free (m);
  /* What a scheduler prices with is the chip's own model, to the bit. */
  g_assert_true (elk_timeline_run_program (elk_plan_set_get_spec (plans), 1.0,
                                           delay_preload
                                               ? ELK_TIMELINE_EXECUTION_FIRST
                                               : ELK_TIMELINE_PRELOAD_FIRST,
                                           program, plans, &tr, &error));
  g_assert_no_error (error);
  g_assert_cmpfloat (tr.latency_s, ==, latency);
  if (priced != NULL)
    *priced = tr.latency_s;
  return latency;
}

/* One random case: a graph and a chip, then Dyn and Full with the same
 * options under every contention setting and both allocators. */
static guint
check_case (guint c)
{
  const char *contention[] = { "best", "delay-execution", "delay-preload" };
  const char *allocators[] = { "reservation", "cost-aware" };
  const guint cores[] = { 32, 64 };
  const guint sram[] = { 48, 64, 96 };
  const double hbm[] = { 16.0, 64.0, 256.0 };
  const guint64 dims[] = { 256, 512, 768 };
  gboolean delay_preload = g_test_rand_bit ();
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) chip
      = make (ELK_TYPE_CHIP, "analytic", "cores",
              cores[g_test_rand_int_range (0, 2)], "chips", 1, "sram-kib",
              sram[g_test_rand_int_range (0, 3)], "reserved-kib", 1,
              "hbm-bw-gbps", hbm[g_test_rand_int_range (0, 3)], "noc-priority",
              delay_preload ? 1 : 0, NULL);
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
  g_autoptr (ElkGraph) graph
      = elk_test_toy_decode_graph ((guint) g_test_rand_int_range (2, 5),
                                   (guint64) 4 << g_test_rand_int_range (0, 3),
                                   dims[g_test_rand_int_range (0, 3)],
                                   (guint64) 128
                                       << g_test_rand_int_range (0, 2));
  g_autoptr (ElkPlanSet) plans = NULL;
  guint checked = 0;

  g_assert_no_error (error);
  plans = elk_plan_set_new (graph, spec, NULL, &error);
  if (plans == NULL)
    return 0; /* a random chip too small for the graph's plans */
  for (guint a = 0; a < G_N_ELEMENTS (allocators); a++)
    for (guint v = 0; v < G_N_ELEMENTS (contention); v++)
      {
        g_autoptr (GObject) alloc
            = make (ELK_TYPE_ALLOCATOR, allocators[a], NULL);
        const char *select
            = delay_preload ? "timeline-delay-preload" : "timeline";
        g_autoptr (GObject) dyn
            = make (ELK_TYPE_SCHEDULER, "elk", "order-search", 0,
                    "max-displacement", 2, "contention", v, NULL);
        g_autoptr (GObject) full
            = make (ELK_TYPE_SCHEDULER, "elk", "order-search", 1,
                    "max-displacement", 2, "contention", v, "select-top", 2,
                    NULL);
        double d, f;

        g_object_set (dyn, "select", delay_preload ? 2 : 1, NULL);
        g_object_set (full, "select", delay_preload ? 2 : 1, NULL);
        d = measure (ELK_CHIP (chip), plans, dyn, alloc, NULL, delay_preload);
        if (isnan (d))
          continue;
        f = measure (ELK_CHIP (chip), plans, full, alloc, NULL, delay_preload);
        g_test_message ("case %u, %s, %s, select=%s: dyn %.6g ms, full "
                        "%.6g ms",
                        c, allocators[a], contention[v], select, d * 1e3,
                        f * 1e3);
        g_assert_false (isnan (f));
        g_assert_cmpfloat (f, <=, d);
        checked++;
      }
  return checked;
}

static void
test_full_not_slower (void)
{
  guint checked = 0;

  g_test_summary ("With the same options and select=timeline, elk's "
                  "order-search=full is never slower on the analytic chip "
                  "than order-search=dyn (random graphs and chips).");
  for (guint c = 0; c < 8; c++)
    checked += check_case (c);
  /* The property must have been exercised, not skipped. */
  g_assert_cmpuint (checked, >=, 12);
}

/* select=estimate keeps the engine's own choice (the artifact's rule).
 * That candidate is the best-estimated one of its contention variant, so
 * select=timeline prices it too, and what select=timeline picks is never
 * slower on the chip. */
static void
test_estimate_vs_timeline (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) chip
      = make (ELK_TYPE_CHIP, "analytic", "cores", 64, "chips", 1, "sram-kib",
              64, "reserved-kib", 1, "hbm-bw-gbps", 64.0, NULL);
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
  g_autoptr (ElkGraph) graph = elk_test_toy_decode_graph (4, 8, 512, 256);
  g_autoptr (ElkPlanSet) plans = elk_plan_set_new (graph, spec, NULL, &error);
  g_autoptr (GObject) alloc = make (ELK_TYPE_ALLOCATOR, "reservation", NULL);
  g_autoptr (GObject) by_est = make (ELK_TYPE_SCHEDULER, "elk",
                                     "max-displacement", 2, "select", 0, NULL);
  g_autoptr (GObject) by_tl
      = make (ELK_TYPE_SCHEDULER, "elk", "max-displacement", 2, NULL);
  double e, t;

  g_assert_no_error (error);
  e = measure (ELK_CHIP (chip), plans, by_est, alloc, NULL, FALSE);
  t = measure (ELK_CHIP (chip), plans, by_tl, alloc, NULL, FALSE);
  g_test_message ("select=estimate %.6g ms, select=timeline %.6g ms", e * 1e3,
                  t * 1e3);
  g_assert_cmpfloat (t, <=, e);
}

/* Schedules with @sched and gives what @chip measures of the program. */
static double
chip_latency (ElkChip *chip,
              const ElkPlanSet *plans,
              GObject *sched,
              GObject *alloc)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkProgram) program
      = elk_scheduler_schedule (ELK_SCHEDULER (sched), plans,
                                ELK_ALLOCATOR (alloc), &error);
  double latency = NAN;

  g_assert_no_error (error);
  g_assert_true (elk_chip_measure (chip, program, plans, &latency, &error));
  g_assert_no_error (error);
  return latency;
}

/* select=chip runs every candidate on the chip the program is for, so on
 * every backend Full choosing so is never slower than Dyn or than Full
 * choosing by the analytic timeline, by what that chip measures. */
static void
test_chip_every_backend (void)
{
  const char *chips[] = { "analytic", "ipu-pod", "noc-sim" };
  guint strict = 0;

  g_test_summary ("With select=chip, elk's order-search=full is never "
                  "slower than order-search=dyn (either select) or than "
                  "full with select=timeline, on the analytic chip, the "
                  "IPU-POD emulator and noc-sim.");
  for (guint c = 0; c < G_N_ELEMENTS (chips); c++)
    for (guint g = 0; g < 3; g++)
      {
        g_autoptr (GError) error = NULL;
        g_autoptr (GObject) chip
            = make (ELK_TYPE_CHIP, chips[c], "cores", 64, "chips", 1,
                    "sram-kib", 64, "reserved-kib", 1, "hbm-bw-gbps",
                    g == 1 ? 16.0 : 64.0, NULL);
        g_autoptr (ElkChipSpec) spec
            = elk_chip_dup_spec (ELK_CHIP (chip), &error);
        g_autoptr (ElkGraph) graph
            = elk_test_toy_decode_graph (3 + g, 8, g == 2 ? 768 : 512, 256);
        g_autoptr (ElkPlanSet) plans = NULL;
        g_autoptr (ElkChip) measurer = NULL;
        g_autoptr (GObject) alloc
            = make (ELK_TYPE_ALLOCATOR, "reservation", NULL);
        g_autoptr (GObject) dyn_tl
            = make (ELK_TYPE_SCHEDULER, "elk", "order-search", 0, NULL);
        g_autoptr (GObject) dyn_chip
            = make (ELK_TYPE_SCHEDULER, "elk", "order-search", 0, "select", 3,
                    NULL);
        g_autoptr (GObject) full_tl
            = make (ELK_TYPE_SCHEDULER, "elk", "order-search", 1,
                    "max-displacement", 2, NULL);
        g_autoptr (GObject) full_chip
            = make (ELK_TYPE_SCHEDULER, "elk", "order-search", 1,
                    "max-displacement", 2, "select", 3, NULL);
        double d_tl, d_chip, f_tl, f_chip;

        g_assert_no_error (error);
        plans = elk_plan_set_new (graph, spec, NULL, &error);
        g_assert_no_error (error);
        measurer = elk_chip_dup_measurer (ELK_CHIP (chip));
        elk_plan_set_set_measurer (plans, measurer);
        d_tl = chip_latency (ELK_CHIP (chip), plans, dyn_tl, alloc);
        d_chip = chip_latency (ELK_CHIP (chip), plans, dyn_chip, alloc);
        f_tl = chip_latency (ELK_CHIP (chip), plans, full_tl, alloc);
        f_chip = chip_latency (ELK_CHIP (chip), plans, full_chip, alloc);
        g_test_message ("%s, graph %u: dyn %.6g / %.6g ms, full %.6g / "
                        "%.6g ms (select timeline / chip)",
                        chips[c], g, d_tl * 1e3, d_chip * 1e3, f_tl * 1e3,
                        f_chip * 1e3);
        g_assert_cmpfloat (d_chip, <=, d_tl);
        g_assert_cmpfloat (f_chip, <=, d_chip);
        g_assert_cmpfloat (f_chip, <=, f_tl);
        /* On the analytic chip the timeline is the chip's own measure. */
        if (c == 0)
          g_assert_cmpfloat (f_chip, ==, f_tl);
        if (f_chip < MIN (d_tl, f_tl))
          strict++;
      }
  g_test_message ("%u of 6 cases off the analytic chip gained", strict);
}

/* A plan set nobody named a chip for cannot be scheduled with select=chip:
 * the scheduler says so rather than falling back to another measure. */
static void
test_chip_needs_measurer (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) chip
      = make (ELK_TYPE_CHIP, "analytic", "cores", 64, "chips", 1, "sram-kib",
              64, "reserved-kib", 1, "hbm-bw-gbps", 64.0, NULL);
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
  g_autoptr (ElkGraph) graph = elk_test_toy_decode_graph (2, 8, 512, 256);
  g_autoptr (ElkPlanSet) plans = elk_plan_set_new (graph, spec, NULL, &error);
  g_autoptr (GObject) alloc = make (ELK_TYPE_ALLOCATOR, "reservation", NULL);
  g_autoptr (GObject) sched
      = make (ELK_TYPE_SCHEDULER, "elk", "select", 3, NULL);
  g_autoptr (ElkProgram) program = NULL;

  g_assert_no_error (error);
  g_assert_null (elk_plan_set_get_measurer (plans));
  program = elk_scheduler_schedule (ELK_SCHEDULER (sched), plans,
                                    ELK_ALLOCATOR (alloc), &error);
  g_assert_null (program);
  g_assert_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "select=chip"));
  g_assert_nonnull (strstr (error->message, "elk_plan_set_set_measurer"));
}

/* noc-sim's measurer measures exactly as the chip does but writes none of
 * the chip's link reports: a scheduler's trial runs leave no files. */
static void
test_measurer_quiet (void)
{
  g_autofree char *dir = g_dir_make_tmp ("elk-select-XXXXXX", NULL);
  g_autofree char *reports = g_build_filename (dir, "reports", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) chip
      = make (ELK_TYPE_CHIP, "noc-sim", "cores", 64, "chips", 1, "sram-kib", 64,
              "reserved-kib", 1, "hbm-bw-gbps", 64.0, "report-dir", reports,
              NULL);
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
  g_autoptr (ElkGraph) graph = elk_test_toy_decode_graph (2, 8, 512, 256);
  g_autoptr (ElkPlanSet) plans = elk_plan_set_new (graph, spec, NULL, &error);
  g_autoptr (ElkChip) measurer = elk_chip_dup_measurer (ELK_CHIP (chip));
  g_autoptr (GObject) alloc = make (ELK_TYPE_ALLOCATOR, "reservation", NULL);
  g_autoptr (GObject) sched = make (ELK_TYPE_SCHEDULER, "elk", NULL);
  g_autoptr (ElkProgram) program = NULL;
  double quiet, loud;

  g_assert_no_error (error);
  g_assert_true (measurer != (ElkChip *) chip);
  program = elk_scheduler_schedule (ELK_SCHEDULER (sched), plans,
                                    ELK_ALLOCATOR (alloc), &error);
  g_assert_no_error (error);
  g_assert_true (elk_chip_measure (measurer, program, plans, &quiet, &error));
  g_assert_no_error (error);
  g_assert_false (g_file_test (reports, G_FILE_TEST_EXISTS));
  /* The chip itself writes them, so the check above can fail. */
  g_assert_true (
      elk_chip_measure (ELK_CHIP (chip), program, plans, &loud, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_test (reports, G_FILE_TEST_IS_DIR));
  g_assert_cmpfloat (quiet, ==, loud);
  elk_test_remove_tree (dir);
}

/* Through elk-run, which names the point's chip as the plan set's
 * measurer: two layers of Gemma2-27B decoding (batch 32, KV 2048) on the
 * IPU-POD emulator, a point where elk-full choosing by the analytic
 * timeline measured 0.463 ms on the emulator against elk-dyn's 0.451
 * (2026-12-03).  With select=chip Full is no slower than any of the
 * others on the emulator. */
static void
test_chip_through_runner (void)
{
  g_autofree char *dir = g_dir_make_tmp ("elk-select-XXXXXX", NULL);
  g_autofree char *xml
      = g_strdup_printf ("<experiment format=\"1\" name=\"sel\">\n"
                         "  <frontend name=\"llama\">\n"
                         "    <param name=\"preset\">gemma2-27b-paper</param>\n"
                         "    <param name=\"phase\">decode</param>\n"
                         "    <param name=\"batch\">32</param>\n"
                         "    <param name=\"seq\">2048</param>\n"
                         "    <param name=\"layers\">2</param>\n"
                         "  </frontend>\n"
                         "  <chip name=\"ipu-pod\"/>\n"
                         "  <allocator name=\"reservation\"/>\n"
                         "  <scheduler name=\"elk\" label=\"dyn\">\n"
                         "    <param name=\"order-search\">dyn</param>\n"
                         "  </scheduler>\n"
                         "  <scheduler name=\"elk\" label=\"dyn-chip\">\n"
                         "    <param name=\"order-search\">dyn</param>\n"
                         "    <param name=\"select\">chip</param>\n"
                         "  </scheduler>\n"
                         "  <scheduler name=\"elk\" label=\"full\"/>\n"
                         "  <scheduler name=\"elk\" label=\"full-chip\">\n"
                         "    <param name=\"select\">chip</param>\n"
                         "  </scheduler>\n"
                         "  <output dir=\"%s\"/>\n"
                         "</experiment>\n",
                         dir);
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkExperiment) e
      = elk_experiment_load_from_data (xml, strlen (xml), "sel.xml", registry,
                                       &error);
  g_autofree char *csv = g_build_filename (dir, "results.csv", NULL);
  g_autofree char *text = NULL;
  g_auto (GStrv) lines = NULL;
  g_auto (GStrv) head = NULL;
  ElkRunOptions options = { 0 };
  ElkRunStatus status;
  double ms[4];
  guint col = 0;

  g_assert_no_error (error);
  options.n_jobs = 1;
  g_assert_true (elk_experiment_run (e, &options, &status, &error));
  g_assert_no_error (error);
  g_assert_cmpint (status, ==, ELK_RUN_OK);
  g_assert_true (g_file_get_contents (csv, &text, NULL, &error));
  lines = g_strsplit (text, "\n", -1);
  head = g_strsplit (lines[0], ",", -1);
  while (head[col] != NULL && !g_str_equal (head[col], "latency_s"))
    col++;
  g_assert_nonnull (head[col]);
  for (guint r = 0; r < 4; r++)
    {
      g_auto (GStrv) row = g_strsplit (lines[1 + r], ",", -1);
      ms[r] = g_ascii_strtod (row[col], NULL) * 1e3;
    }
  g_test_message ("ipu-pod, Gemma2-27B, 2 layers: dyn %.6g, dyn select=chip "
                  "%.6g, full %.6g, full select=chip %.6g ms",
                  ms[0], ms[1], ms[2], ms[3]);
  g_assert_cmpfloat (ms[1], <=, ms[0]);
  g_assert_cmpfloat (ms[3], <=, ms[1]);
  g_assert_cmpfloat (ms[3], <=, ms[2]);
  elk_test_remove_tree (dir);
}

int
main (int argc, char *argv[])
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  g_test_add_func ("/select/full-not-slower-than-dyn", test_full_not_slower);
  g_test_add_func ("/select/estimate-vs-timeline", test_estimate_vs_timeline);
  g_test_add_func ("/select/chip-every-backend", test_chip_every_backend);
  g_test_add_func ("/select/chip-needs-measurer", test_chip_needs_measurer);
  g_test_add_func ("/select/measurer-quiet", test_measurer_quiet);
  g_test_add_func ("/select/chip-through-runner", test_chip_through_runner);
  ret = g_test_run ();
  g_object_unref (registry);
  return ret;
}
