/* test-plan-artifact.c: the enumerator and cost model against the numbers
 * measured by running the Elk artifact's T10 modules
 * (reference/t10-plan-space.md §2.3, tagged [X]).
 *
 * libelk deliberately does not reproduce the artifact's dimension-
 * reordering quirk, so its tables differ from the artifact's.  This test
 * builds core/plan's sources into itself and switches on the internal
 * validation mode that reproduces the quirk (and the artifact's per-step
 * output size in the shuffle).  If that mode lands on the artifact's
 * counts, the rest of the enumerator and the cost model agree with the
 * artifact, and the differences of the real tables are the quirk's.
 */
#include "config.h"

#include <elk/elk.h>

#include "elk-plan-private.h"
#include "plan-llama.h"

/* @a_cold: A is read from HBM too.  The artifact's TensorExpression
 * class, run on its own, ignores only the output in the idle (cold)
 * footprint, so both inputs count; elk's graphs mark A, an activation,
 * as on chip. */
static ElkGraph *
matmul_graph_full (guint64 m, guint64 k, guint64 n, gboolean a_cold)
{
  return plan_test_matmul (m, k, n,
                           a_cold ? ELK_TENSOR_ORIGIN_WEIGHT
                                  : ELK_TENSOR_ORIGIN_ACTIVATION,
                           ELK_TENSOR_ORIGIN_WEIGHT);
}

static ElkGraph *
matmul_graph (guint64 m, guint64 k, guint64 n)
{
  return matmul_graph_full (m, k, n, FALSE);
}

static void
build (guint64 m, guint64 k, guint64 n, gboolean artifact,
       ElkPlanTable *table, guint64 *n_spatial, guint64 *n_pass1,
       guint *n_front)
{
  g_autoptr (ElkChipSpec) spec = plan_test_spec_one_ipu ();
  g_autoptr (ElkGraph) graph = matmul_graph (m, k, n);
  GError *error = NULL;

  g_assert_true (elk__plan_build_table_stats (graph,
                                              elk_graph_get_op (graph, 0),
                                              spec, NULL, artifact, table,
                                              n_spatial, n_pass1, n_front,
                                              &error));
  g_assert_no_error (error);
}


/* Distinct cold sizes of a cold-hot table (it is sorted by cold size). */
static guint
count_cold_sizes (const ElkPlanTable *table)
{
  guint n = 0;

  for (guint i = 0; i < table->n_cold_hot; i++)
    if (i == 0 || table->cold_hot[i].cold_bytes
                    != table->cold_hot[i - 1].cold_bytes)
      n++;
  return n;
}

/* MatMul 32x5120x5120 [X]: 122,960 plans, 23 "Pareto points", fastest
 * about 84 KB and 23.8k cycles, and the smallest point has A split 35 ways
 * along m = 32 (on spatial vector (1, 105, 14)).  The artifact's 9,532
 * spatial vectors are the leaves of its spatial tree before the floors are
 * applied; the plans come from those that pass. */
static void
test_decode (void)
{
  ElkPlanTable table, ours;
  guint64 n_spatial = 0, our_spatial = 0, n_pass1 = 0;
  guint n_front = 0;
  const ElkPlan *fastest, *smallest;

  build (32, 5120, 5120, TRUE, &table, &n_spatial, &n_pass1, &n_front);
  fastest = &table.plans[table.hot_front[table.n_hot - 1]];
  smallest = &table.plans[table.hot_front[0]];
  g_test_message ("artifact order: %" G_GUINT64_FORMAT " spatial vectors "
                  "pass the floors, %" G_GUINT64_FORMAT " plans, %u points "
                  "in the artifact's list (%u in the true front); fastest %"
                  G_GUINT64_FORMAT " B %.0f cycles", n_spatial,
                  n_pass1, n_front, table.n_hot,
                  fastest->hot_bytes, fastest->time_s * 1.325e9);
  g_test_message ("cold-hot: %u entries, %u cold sizes, %u plans",
                  table.n_cold_hot, count_cold_sizes (&table), table.n_plans);
  g_assert_cmpuint (n_pass1, ==, 122960);
  g_assert_cmpuint (n_front, ==, 23);
  g_assert_cmpuint (fastest->hot_bytes, ==, 83616);
  g_assert_cmpfloat (fastest->time_s * 1.325e9, >, 23800);
  g_assert_cmpfloat (fastest->time_s * 1.325e9, <, 23900);
  g_assert_cmpuint (smallest->spatial[1], ==, 105);
  g_assert_cmpuint (smallest->spatial[2], ==, 14);
  g_assert_cmpuint (smallest->temporal[0][1], ==, 35);

  /* Without the quirk the same spatial vectors are searched. */
  build (32, 5120, 5120, FALSE, &ours, &our_spatial, NULL, NULL);
  g_assert_cmpuint (our_spatial, ==, n_spatial);
  g_test_message ("t10 cold-hot: %u entries, %u cold sizes, %u plans",
                  ours.n_cold_hot, count_cold_sizes (&ours), ours.n_plans);
  elk__plan_table_clear (&ours);
  elk__plan_table_clear (&table);
}

/* MatMul 2048x4096x4096 [X]: 687,722 plans, 34 points; fastest 587,604
 * B/core, about 550k cycles on 1,463 cores; smallest about 61 KB and
 * about 32x slower. */
static void
test_prefill (void)
{
  ElkPlanTable table;
  guint64 n_spatial = 0, n_pass1 = 0;
  guint n_front = 0;
  const ElkPlan *fastest, *smallest;

  build (2048, 4096, 4096, TRUE, &table, &n_spatial, &n_pass1, &n_front);
  fastest = &table.plans[table.hot_front[table.n_hot - 1]];
  smallest = &table.plans[table.hot_front[0]];
  g_test_message ("artifact order: %" G_GUINT64_FORMAT " spatial vectors "
                  "pass the floors, %" G_GUINT64_FORMAT " plans, %u points "
                  "in the artifact's list (%u in the true front); fastest %"
                  G_GUINT64_FORMAT " B %.0f cycles on %u cores; smallest %"
                  G_GUINT64_FORMAT " B, %.1fx slower", n_spatial,
                  n_pass1, n_front, table.n_hot,
                  fastest->hot_bytes, fastest->time_s * 1.325e9,
                  fastest->cores_used, smallest->hot_bytes,
                  smallest->time_s / fastest->time_s);
  g_assert_cmpuint (n_pass1, ==, 687722);
  g_assert_cmpuint (n_front, ==, 34);
  g_assert_cmpuint (fastest->hot_bytes, ==, 587604);
  g_assert_cmpuint (fastest->cores_used, ==, 1463);
  g_assert_cmpfloat (fastest->time_s * 1.325e9, >, 549500);
  g_assert_cmpfloat (fastest->time_s * 1.325e9, <, 550500);
  g_assert_cmpuint (smallest->hot_bytes, ==, 61440);
  g_assert_cmpfloat (smallest->time_s / fastest->time_s, >, 31);
  g_assert_cmpfloat (smallest->time_s / fastest->time_s, <, 33);
  elk__plan_table_clear (&table);
}

/* The cold-hot table of the artifact enumeration, for MatMul
 * 32x5120x5120 with both inputs cold as the artifact's class counts them:
 * the artifact printed 50 cold sizes for its table [X], elk's artifact
 * mode has exactly those 50 (the T10 tables of the same operator have
 * 79).  Every entry pairs a cold and a hot plan of the same spatial
 * vector, cold factors multiples of the hot ones, cold size at most the
 * hot size, with the artifact's warm-up; and one entry per (cold size,
 * hot size). */
static void
test_decode_cold_hot (void)
{
  g_autoptr (ElkChipSpec) spec = plan_test_spec_one_ipu ();
  g_autoptr (ElkGraph) graph = matmul_graph_full (32, 5120, 5120, TRUE);
  const ElkOp *op = elk_graph_get_op (graph, 0);
  ElkPlanTable table, ours;
  PlanSearch *s = elk__plan_search_new (graph, op, spec, NULL);
  GError *error = NULL;

  g_assert_true (elk__plan_build_table (graph, op, spec, NULL, TRUE, &table,
                                        &error));
  g_assert_no_error (error);
  g_assert_true (elk__plan_build_table (graph, op, spec, NULL, FALSE, &ours,
                                        &error));
  g_assert_no_error (error);
  g_test_message ("artifact cold-hot: %u entries, %u cold sizes, %u plans; "
                  "t10: %u entries, %u cold sizes", table.n_cold_hot,
                  count_cold_sizes (&table), table.n_plans, ours.n_cold_hot,
                  count_cold_sizes (&ours));
  g_assert_cmpuint (count_cold_sizes (&table), ==, 50);
  g_assert_cmpuint (count_cold_sizes (&ours), ==, 79);

  s->artifact_order = TRUE;
  for (guint i = 0; i < table.n_cold_hot; i++)
    {
      const ElkColdHot *ch = &table.cold_hot[i];
      const ElkPlan *cold = &table.plans[ch->cold_plan];
      const ElkPlan *hot = &table.plans[ch->hot_plan];

      g_assert_cmpuint (ch->cold_plan, <, table.n_plans);
      g_assert_cmpuint (ch->hot_plan, <, table.n_plans);
      g_assert_cmpuint (cold->cold_bytes, ==, ch->cold_bytes);
      g_assert_cmpuint (hot->hot_bytes, ==, ch->hot_bytes);
      g_assert_cmpuint (ch->cold_bytes, <=, ch->hot_bytes);
      g_assert_cmpmem (cold->spatial, sizeof (cold->spatial), hot->spatial,
                       sizeof (hot->spatial));
      for (guint d = 0; d < op->n_dims; d++)
        for (guint v = 0; v < op->n_operands; v++)
          g_assert_cmpuint (cold->temporal[d][v] % hot->temporal[d][v], ==,
                            0);
      g_assert_cmpfloat_with_epsilon (
        ch->warmup_s,
        elk__plan_search_warmup (s, cold, hot, NULL) / spec->clock_hz,
        1e-15);
      g_assert_cmpfloat (ch->exec_s, ==, hot->time_s);
      if (i > 0)
        {
          const ElkColdHot *prev = &table.cold_hot[i - 1];
          g_assert_true (prev->cold_bytes < ch->cold_bytes
                         || (prev->cold_bytes == ch->cold_bytes
                             && prev->hot_bytes < ch->hot_bytes));
        }
    }
  elk__plan_search_free (s);
  elk__plan_table_clear (&ours);
  elk__plan_table_clear (&table);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/plan/artifact/decode-matmul", test_decode);
  g_test_add_func ("/plan/artifact/prefill-matmul", test_prefill);
  g_test_add_func ("/plan/artifact/decode-cold-hot", test_decode_cold_hot);
  return g_test_run ();
}
