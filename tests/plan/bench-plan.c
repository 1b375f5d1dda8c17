/* bench-plan.c: plan tables for Llama2-70B decode on IPU-POD4.
 *
 * Builds the tables of every distinct operator of an 80-layer Llama2-70B
 * decode step (batch 32, 2048 cached tokens) on the 5888-core, 624 KiB
 * pod and prints the plans enumerated per second, the wall time and the
 * peak resident set.  Exits with 1 if the targets of issue 4 (under 5 s
 * and under 1 GiB) are missed.
 *
 * Usage: bench-plan [THREADS] (0 or absent: all processors).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <elk/elk.h>

#include "plan-llama.h"

#define TARGET_WALL_S 5.0
#define TARGET_RSS_BYTES (1024.0 * 1024 * 1024)

int
main (int argc, char **argv)
{
  g_autoptr (ElkChipSpec) spec = elk_chip_spec_new_ipu_pod4 ();
  g_autoptr (ElkGraph) graph = plan_test_llama2_70b_decode (32, 2048, 80);
  g_autoptr (ElkPlanSet) set = NULL;
  g_autoptr (GError) error = NULL;
  ElkPlanOptions options = { 0 };
  struct rusage usage;
  guint64 plans = 0;
  gint64 start, end;
  double wall, rss;

  if (argc > 1)
    options.n_threads = (guint) g_ascii_strtoull (argv[1], NULL, 10);

  start = g_get_monotonic_time ();
  set = elk_plan_set_new (graph, spec, &options, &error);
  end = g_get_monotonic_time ();
  if (set == NULL)
    {
      fprintf (stderr, "bench-plan: %s\n", error->message);
      return 1;
    }
  wall = (end - start) / 1e6;
  getrusage (RUSAGE_SELF, &usage);
  rss = usage.ru_maxrss * 1024.0;

  for (guint i = 0; i < elk_plan_set_get_n_distinct (set); i++)
    {
      const ElkPlanTable *t = elk_plan_set_get_distinct (set, i);
      const ElkOp *op = elk_graph_get_op (graph, t->op);
      const ElkPlan *fast = elk_plan_table_get_fastest (t);
      const ElkPlan *small = elk_plan_table_get_smallest (t);

      plans += t->n_enumerated;
      printf ("%-18s %-12s %10" G_GUINT64_FORMAT " plans %3u hot %4u "
              "cold-hot  fastest %7" G_GUINT64_FORMAT " B %9.2f us  "
              "smallest %7" G_GUINT64_FORMAT " B %9.2f us\n",
              op->type, elk_op_kind_to_string (op->kind), t->n_enumerated,
              t->n_hot, t->n_cold_hot, fast->hot_bytes, fast->time_s * 1e6,
              small->hot_bytes, small->time_s * 1e6);
    }
  printf ("operators %u, distinct %u, threads %u\n",
          elk_graph_get_n_ops (graph), elk_plan_set_get_n_distinct (set),
          options.n_threads != 0 ? options.n_threads
                                 : g_get_num_processors ());
  printf ("plans enumerated %" G_GUINT64_FORMAT ", %.2f M plans/s\n", plans,
          plans / wall / 1e6);
  printf ("wall %.3f s (target %.0f s), peak RSS %.1f MiB (target %.0f MiB)\n",
          wall, TARGET_WALL_S, rss / 1048576.0, TARGET_RSS_BYTES / 1048576.0);
  return wall < TARGET_WALL_S && rss < TARGET_RSS_BYTES ? 0 : 1;
}
