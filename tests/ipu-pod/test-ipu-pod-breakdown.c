/* test-ipu-pod-breakdown.c: the emulator says where execution time goes.
 *
 * Two layers of Llama2-13B decode (b32, KV 2048), compiled against the
 * ipu-pod chip's spec by Basic, Elk (with the reservation and the
 * cost-aware allocator, whose preload layouts need data distribution) and
 * Ideal, run in timing mode at full fidelity and at fidelity=analytic.
 * The breakdown comes from the emulator's own event loop, every time step
 * charged to one operator, so its cells must add up to the latency to
 * 1e-9 relative, and its stall and preload-wait cells must equal the
 * emulator's own Fig 18a counters (stall_s, preload_only_s), the phase
 * components their execute-only and overlapped time.
 */
#include <math.h>
#include <string.h>
#include <elk/elk.h>
#include "elk-test-util.h"

static ElkRegistry *registry;

static void
assert_adds_up (const char *what, const ElkMetrics *m)
{
  const ElkBreakdown *b = m->breakdown;
  double lat = m->latency_s, phases = 0;

  g_assert_nonnull (b);
  for (guint c = ELK_TIME_COMPUTE; c <= ELK_TIME_SYNC; c++)
    phases += elk_breakdown_get (b, NULL, (ElkTimeComponent) c);
  g_test_message ("%s: %.6f ms = compute %.6f + shift %.6f + output %.6f + "
                  "relayout %.6f + sync %.6f + stall %.6f + preload-wait "
                  "%.6f ms",
                  what, lat * 1e3,
                  elk_breakdown_get (b, NULL, ELK_TIME_COMPUTE) * 1e3,
                  elk_breakdown_get (b, NULL, ELK_TIME_SHIFT) * 1e3,
                  elk_breakdown_get (b, NULL, ELK_TIME_OUTPUT) * 1e3,
                  elk_breakdown_get (b, NULL, ELK_TIME_RELAYOUT) * 1e3,
                  elk_breakdown_get (b, NULL, ELK_TIME_SYNC) * 1e3,
                  elk_breakdown_get (b, NULL, ELK_TIME_STALL) * 1e3,
                  elk_breakdown_get (b, NULL, ELK_TIME_PRELOAD_WAIT) * 1e3);
  elk_test_assert_breakdown_adds_up (m, TRUE);
  g_assert_cmpfloat_with_epsilon (phases / lat,
                                  (m->execute_only_s + m->overlap_s) / lat,
                                  1e-9);
}

static void
test_adds_up (void)
{
  static const struct
  {
    const char *scheduler;
    const char *allocator;
  } designs[] = {
    { "basic", "reservation" },
    { "elk", "reservation" },
    { "elk", "cost-aware" },
    { "ideal", "reservation" },
  };
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) graph
      = elk_test_load_llama (registry, "llama2-13b-paper", 32, 2048, 2);
  g_autoptr (GObject) chip = NULL;
  double relayout = 0;

  if (graph == NULL)
    return;
  chip = elk_test_make (registry, ELK_TYPE_CHIP, "ipu-pod", NULL);
  for (gint fidelity = 0; fidelity < 2; fidelity++)
    for (guint d = 0; d < G_N_ELEMENTS (designs); d++)
      {
        g_autoptr (ElkMetrics) m = NULL;
        g_autofree char *what
            = g_strdup_printf ("%s with %s, fidelity %s", designs[d].scheduler,
                               designs[d].allocator,
                               fidelity == 0 ? "full" : "analytic");

        g_object_set (chip, "fidelity", fidelity, NULL);
        m = elk_test_schedule_and_run (registry, graph, ELK_CHIP (chip),
                                       designs[d].scheduler,
                                       designs[d].allocator, &error);
        g_assert_no_error (error);
        assert_adds_up (what, m);
        relayout += elk_breakdown_get (m->breakdown, NULL, ELK_TIME_RELAYOUT);
      }
  /* Some design re-lays data out, so that component is exercised. */
  g_assert_cmpfloat (relayout, >, 0);
}

int
main (int argc, char *argv[])
{
  int rc;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  g_test_add_func ("/ipu-pod/breakdown/adds-up", test_adds_up);
  rc = g_test_run ();
  g_object_unref (registry);
  return rc;
}
