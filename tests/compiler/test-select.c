/* test-select.c: how the elk scheduler makes its final choice (property
 * "select").  With the same options, order-search=full tries every
 * candidate order-search=dyn tries, so when both choose by the analytic
 * chip's own model Full is never slower than Dyn on that chip: checked on
 * random toy graphs and chips, for every contention setting, both
 * allocators and both NoC priorities of the chip.  The model a scheduler
 * prices with (elk_timeline_run_program()) gives exactly what the chip
 * reports. */
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

int
main (int argc, char *argv[])
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  g_test_add_func ("/select/full-not-slower-than-dyn", test_full_not_slower);
  g_test_add_func ("/select/estimate-vs-timeline", test_estimate_vs_timeline);
  ret = g_test_run ();
  g_object_unref (registry);
  return ret;
}
