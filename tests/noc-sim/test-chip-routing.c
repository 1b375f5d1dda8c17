/* test-chip-routing.c: the noc-sim simulator and the ipu-pod emulator
 * charge conditional operators (a mixture of experts' experts, issue 21
 * item 3) by the graph's sampled routing: an untaken expert does not
 * execute, its preload is charged in full when issued before its router
 * (wasted speculation) and skipped when issued after it; a taken one runs
 * as any operator.  On a router and two experts, exp0 taken and exp1 not,
 * with three programs; for ipu-pod, also the refusal of functional mode.
 * The chip is the argument --chip=NAME (each chip's meson.build runs it
 * for its own).
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <elk/elk.h>

#include "elk-test-graph.h"
#include "elk-test-util.h"

/* x -> router -> exp0, exp1 (16 x 16 FP16 weights, 512 B each); @taken:
 * which experts the sampled routing takes, NULL for no conditions. */
static ElkGraph *
router_graph (const gboolean *taken)
{
  ElkGraph *g = elk_graph_new ("moe");
  guint64 act[2] = { 4, 16 }, w[2] = { 16, 16 };
  guint32 r[3], e[2][3];

  r[0] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, act, "x");
  r[1] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_WEIGHT, 2, w, "wr");
  r[2] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, act, "h");
  g_assert_cmpint (elk_graph_add_op (g, "router", "matmul", ELK_OP_MATMUL, 0,
                                     "mk,kn->mn", r, 3, NULL, NULL),
                   ==, 0);
  for (guint k = 0; k < 2; k++)
    {
      g_autofree char *on = g_strdup_printf ("exp%u", k);
      e[k][0] = r[2];
      e[k][1]
          = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_WEIGHT, 2, w, "w%u", k);
      e[k][2] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, act,
                                     "y%u", k);
      g_assert_cmpint (elk_graph_add_op (g, on, "matmul", ELK_OP_MATMUL, 0,
                                         "mk,kn->mn", e[k], 3, NULL, NULL),
                       ==, k + 1);
      if (taken != NULL)
        g_assert_true (
            elk_graph_set_op_condition (g, k + 1, 0, 0.5, taken[k], NULL));
    }
  return g;
}

/* A small chip named @name ("ipu-pod" or "noc-sim"), or NULL after
 * g_test_skip() when it is not built. */
static ElkChip *
small_chip (ElkRegistry *registry, const char *name)
{
  if (elk_registry_lookup (registry, ELK_TYPE_CHIP, name) == NULL)
    {
      g_test_skip ("the chip is not built");
      return NULL;
    }
  return ELK_CHIP (
      elk_test_make (registry, ELK_TYPE_CHIP, name, "chips", 1, "cores",
                     g_str_equal (name, "noc-sim") ? 16 : 4, NULL));
}

typedef struct
{
  const char *order;
  guint hits, wasted, on_demand, skipped;
  guint weights_read; /* 512-byte weights the device reads from HBM */
} Case;

static void
test_charging (gconstpointer data)
{
  /* (A) both experts speculated, (B) exp0 speculated and exp1 after the
   * router, (C) both after the router. */
  static const Case cases[] = {
    { "p0 p1 p2 e0 e1 e2", 1, 1, 0, 0, 3 },
    { "p0 p1 e0 p2 e1 e2", 1, 0, 0, 1, 2 },
    { "p0 e0 p1 p2 e1 e2", 0, 0, 1, 1, 2 },
  };
  static const gboolean taken[2] = { TRUE, FALSE };
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();
  g_autoptr (ElkChip) chip = small_chip (registry, data);
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkChipSpec) spec = NULL;

  if (chip == NULL)
    return;
  spec = elk_chip_dup_spec (chip, &error);
  g_assert_no_error (error);
  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      const Case *cc = &cases[k];
      g_autoptr (ElkGraph) g = router_graph (taken);
      g_autoptr (ElkGraph) u = router_graph (NULL);
      g_autoptr (ElkPlanSet) pg = elk_plan_set_new (g, spec, NULL, &error);
      g_autoptr (ElkPlanSet) pu = elk_plan_set_new (u, spec, NULL, &error);
      g_autoptr (ElkProgram) p = elk_test_hand_program (g, pg, cc->order);
      g_autoptr (ElkProgram) q = elk_test_hand_program (u, pu, cc->order);
      g_autoptr (ElkMetrics) m = NULL;
      g_autoptr (ElkMetrics) mu = NULL;

      g_test_message ("program %s", cc->order);
      g_assert_no_error (error);
      m = elk_chip_run (chip, p, pg, &error);
      g_assert_no_error (error);
      mu = elk_chip_run (chip, q, pu, &error);
      g_assert_no_error (error);

      /* HBM: the weights the device reads, each once (the emulator sums
       * the bytes as its controllers deliver them, so to rounding). */
      g_assert_cmpfloat_with_epsilon (mu->hbm_bytes, 3 * 512.0, 1e-6);
      g_assert_cmpfloat_with_epsilon (m->hbm_bytes, cc->weights_read * 512.0,
                                      1e-6);
      /* The untaken expert does no arithmetic, and the run is shorter by
       * at least nothing: its execute is gone, and in (B) and (C) its
       * preload too. */
      g_assert_cmpfloat (m->latency_s, <, mu->latency_s);
      elk_test_assert_one_expert_taken (m, mu, elk_graph_get_op (g, 2)->flops,
                                        &(ElkRoutingStats){
                                            .hits = cc->hits,
                                            .wasted = cc->wasted,
                                            .on_demand = cc->on_demand,
                                            .skipped = cc->skipped });
      if (m->breakdown != NULL) /* noc-sim has none */
        elk_test_assert_breakdown_adds_up (m, FALSE);
    }
}

/* Both experts untaken and both speculated: the device still reads both
 * weights; the run ends after the router (plus the preloads it cannot
 * skip). */
static void
test_all_wasted (gconstpointer data)
{
  static const gboolean taken[2] = { FALSE, FALSE };
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();
  g_autoptr (ElkChip) chip = small_chip (registry, data);
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkChipSpec) spec = NULL;
  g_autoptr (ElkGraph) g = router_graph (taken);
  g_autoptr (ElkPlanSet) plans = NULL;
  g_autoptr (ElkProgram) p = NULL;
  g_autoptr (ElkProgram) late = NULL;
  g_autoptr (ElkMetrics) m = NULL;
  g_autoptr (ElkMetrics) ml = NULL;

  if (chip == NULL)
    return;
  spec = elk_chip_dup_spec (chip, &error);
  g_assert_no_error (error);
  plans = elk_plan_set_new (g, spec, NULL, &error);
  g_assert_no_error (error);
  p = elk_test_hand_program (g, plans, "p0 p1 p2 e0 e1 e2");
  late = elk_test_hand_program (g, plans, "p0 e0 p1 p2 e1 e2");
  m = elk_chip_run (chip, p, plans, &error);
  g_assert_no_error (error);
  ml = elk_chip_run (chip, late, plans, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat_with_epsilon (m->hbm_bytes, 3 * 512.0, 1e-6);
  g_assert_cmpuint (m->routing->wasted, ==, 2);
  g_assert_cmpfloat (m->routing->wasted_hbm_bytes, ==, 1024.0);
  g_assert_true (isnan (m->routing->hit_rate));
  /* On demand, nothing but the router is read or run. */
  g_assert_cmpfloat_with_epsilon (ml->hbm_bytes, 512.0, 1e-6);
  g_assert_cmpuint (ml->routing->skipped, ==, 2);
  g_assert_cmpfloat (ml->flops, ==, elk_graph_get_op (g, 0)->flops);
  /* Not longer; the router's execute may hide the wasted loads. */
  g_assert_cmpfloat (ml->latency_s, <=, m->latency_s);
}

/* What the emulator cannot honour is refused, never mis-measured:
 * functional mode computes every operator. */
static void
test_refusals (void)
{
  static const gboolean taken[2] = { TRUE, FALSE };
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();
  g_autoptr (ElkChip) func
      = ELK_CHIP (elk_test_make (registry, ELK_TYPE_CHIP, "ipu-pod", "chips", 1,
                                 "cores", 4, "mode", 1 /* functional */, NULL));
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (func, &error);
  g_autoptr (ElkGraph) g = router_graph (taken);
  g_autoptr (ElkPlanSet) plans = elk_plan_set_new (g, spec, NULL, &error);
  g_autoptr (ElkProgram) p
      = elk_test_hand_program (g, plans, "p0 p1 p2 e0 e1 e2");
  ElkMetrics *m;

  g_assert_no_error (error);
  m = elk_chip_run (func, p, plans, &error);
  g_assert_null (m);
  g_assert_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN);
  g_assert_nonnull (strstr (error->message, "functional mode"));
  g_assert_nonnull (strstr (error->message, "'moe'"));
}

int
main (int argc, char **argv)
{
  static char *chip = NULL;
  static const GOptionEntry entries[]
      = { { "chip", 0, 0, G_OPTION_ARG_STRING, &chip,
            "The chip to test: ipu-pod or noc-sim", "NAME" },
          G_OPTION_ENTRY_NULL };
  g_autoptr (GOptionContext) context = g_option_context_new (NULL);
  g_autoptr (GError) error = NULL;
  g_autofree char *charging = NULL;
  g_autofree char *wasted = NULL;

  /* The test framework's own options (--tap, -p) pass through. */
  g_option_context_set_ignore_unknown_options (context, TRUE);
  g_option_context_set_help_enabled (context, FALSE);
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error)
      || (g_strcmp0 (chip, "ipu-pod") != 0 && g_strcmp0 (chip, "noc-sim") != 0))
    g_error ("expected --chip=ipu-pod or --chip=noc-sim%s%s",
             error != NULL ? ": " : "", error != NULL ? error->message : "");
  g_test_init (&argc, &argv, NULL);
  charging = g_strdup_printf ("/routing/%s/charging", chip);
  wasted = g_strdup_printf ("/routing/%s/all-wasted", chip);
  g_test_add_data_func (charging, chip, test_charging);
  g_test_add_data_func (wasted, chip, test_all_wasted);
  if (g_str_equal (chip, "ipu-pod"))
    g_test_add_func ("/routing/ipu-pod/refusals", test_refusals);
  return g_test_run ();
}
