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

static ElkGraph *
matmul_graph (guint64 m, guint64 k, guint64 n)
{
  ElkGraph *graph = elk_graph_new ("matmul");
  guint64 sa[2] = { m, k }, sb[2] = { k, n }, sc[2] = { m, n };
  guint32 t[3];
  GError *error = NULL;

  t[0] = elk_graph_add_tensor (graph, "a", ELK_DTYPE_F16,
                               ELK_TENSOR_ORIGIN_ACTIVATION, 2, sa, 0, &error);
  t[1] = elk_graph_add_tensor (graph, "b", ELK_DTYPE_F16,
                               ELK_TENSOR_ORIGIN_WEIGHT, 2, sb, 0, &error);
  t[2] = elk_graph_add_tensor (graph, "c", ELK_DTYPE_F16,
                               ELK_TENSOR_ORIGIN_ACTIVATION, 2, sc, 0, &error);
  elk_graph_add_op (graph, "mm", "matmul", ELK_OP_MATMUL, -1, "mk,kn->mn", t,
                    3, NULL, &error);
  g_assert_no_error (error);
  return graph;
}

static void
build (guint64 m, guint64 k, guint64 n, gboolean artifact,
       ElkPlanTable *table, guint64 *n_spatial, guint *n_front)
{
  g_autoptr (ElkChipSpec) spec = elk_chip_spec_new_ipu_pod4 ();
  g_autoptr (ElkGraph) graph = matmul_graph (m, k, n);
  GError *error = NULL;

  spec->n_chips = 1;
  spec->cores = 1472;
  spec->sram_per_core = 624 * 1024;
  spec->sram_reserved = 0;
  g_assert_true (elk__plan_build_table_stats (graph,
                                              elk_graph_get_op (graph, 0),
                                              spec, NULL, artifact, table,
                                              n_spatial, n_front, &error));
  g_assert_no_error (error);
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
  guint64 n_spatial = 0, our_spatial = 0;
  guint n_front = 0;
  const ElkPlan *fastest, *smallest;

  build (32, 5120, 5120, TRUE, &table, &n_spatial, &n_front);
  fastest = &table.plans[table.hot_front[table.n_hot - 1]];
  smallest = &table.plans[table.hot_front[0]];
  g_test_message ("artifact order: %" G_GUINT64_FORMAT " spatial vectors "
                  "pass the floors, %" G_GUINT64_FORMAT " plans, %u points "
                  "in the artifact's list (%u in the true front); fastest %"
                  G_GUINT64_FORMAT " B %.0f cycles", n_spatial,
                  table.n_enumerated, n_front, table.n_hot,
                  fastest->hot_bytes, fastest->time_s * 1.325e9);
  g_assert_cmpuint (table.n_enumerated, ==, 122960);
  g_assert_cmpuint (n_front, ==, 23);
  g_assert_cmpuint (fastest->hot_bytes, ==, 83616);
  g_assert_cmpfloat (fastest->time_s * 1.325e9, >, 23800);
  g_assert_cmpfloat (fastest->time_s * 1.325e9, <, 23900);
  g_assert_cmpuint (smallest->spatial[1], ==, 105);
  g_assert_cmpuint (smallest->spatial[2], ==, 14);
  g_assert_cmpuint (smallest->temporal[0][1], ==, 35);

  /* Without the quirk the same spatial vectors are searched. */
  build (32, 5120, 5120, FALSE, &ours, &our_spatial, NULL);
  g_assert_cmpuint (our_spatial, ==, n_spatial);
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
  guint64 n_spatial = 0;
  guint n_front = 0;
  const ElkPlan *fastest, *smallest;

  build (2048, 4096, 4096, TRUE, &table, &n_spatial, &n_front);
  fastest = &table.plans[table.hot_front[table.n_hot - 1]];
  smallest = &table.plans[table.hot_front[0]];
  g_test_message ("artifact order: %" G_GUINT64_FORMAT " spatial vectors "
                  "pass the floors, %" G_GUINT64_FORMAT " plans, %u points "
                  "in the artifact's list (%u in the true front); fastest %"
                  G_GUINT64_FORMAT " B %.0f cycles on %u cores; smallest %"
                  G_GUINT64_FORMAT " B, %.1fx slower", n_spatial,
                  table.n_enumerated, n_front, table.n_hot,
                  fastest->hot_bytes, fastest->time_s * 1.325e9,
                  fastest->cores_used, smallest->hot_bytes,
                  smallest->time_s / fastest->time_s);
  g_assert_cmpuint (table.n_enumerated, ==, 687722);
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

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/plan/artifact/decode-matmul", test_decode);
  g_test_add_func ("/plan/artifact/prefill-matmul", test_prefill);
  return g_test_run ();
}
