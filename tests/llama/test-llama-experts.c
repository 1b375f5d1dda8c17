/* test-llama-experts.c: experts=all, the llama frontend's graphs for
 * scheduling under routing uncertainty (issue 21 item 3).  Every routed
 * expert's operators are in the graph, conditional on the layer's top-k;
 * the probabilities are checked against the closed forms (uniform, and
 * top-2 under any weights) and the Monte Carlo estimate against the
 * enumeration; the operators the sampled routing takes are those of the
 * experts=routed graph, which stays as it was.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#define ELK_USE_UNSTABLE_API /* elk_program_apply_expert_policy() */
#include <elk/elk-compile.h>

#include "elk-llama-private.h"
#include "elk-test-util.h"
#include "llama-test-util.h"

static ElkGraph *
build (const char *preset,
       guint64 batch,
       LlamaRouting routing,
       LlamaExperts experts,
       guint64 seed)
{
  LlamaBuildOptions o;

  elk__llama_build_options_init (&o);
  o.batch = batch;
  o.seq = 256;
  o.layers = 3;
  o.routing = routing;
  o.routing_skew = 1.2;
  o.routing_seed = seed;
  o.experts = experts;
  return llama_test_build_preset (preset, &o);
}

/* The routed expert an operator named "blk.N.ffn_expE.*" belongs to, or
 * -1; its layer into @layer. */
static gint
expert_of (const ElkOp *op, guint *layer)
{
  guint l, e;
  if (sscanf (op->name, "blk.%u.ffn_exp%u.", &l, &e) != 2)
    return -1;
  if (layer != NULL)
    *layer = l;
  return (gint) e;
}

/* The bytes of the graph's weight tensors. */
static guint64
weight_sum (ElkGraph *g)
{
  guint64 sum = 0;
  for (guint i = 0; i < elk_graph_get_n_tensors (g); i++)
    {
      const ElkTensor *t = elk_graph_get_tensor (g, i);
      if (t->origin == ELK_TENSOR_ORIGIN_WEIGHT)
        sum += t->bytes;
    }
  return sum;
}

/* The top-2 inclusion probability under weights @w (n of them), written
 * out: e first, or j first and then e among the rest. */
static double
top2_inclusion (const double *w, guint n, guint e)
{
  double p = w[e];
  for (guint j = 0; j < n; j++)
    if (j != e)
      p += w[j] * w[e] / (1.0 - w[j]);
  return p;
}

/* experts=routed is the graph it was: no conditions, no new attributes;
 * experts=all holds it, in order, as the operators that are either
 * unconditional or taken, plus one-row copies of the untaken experts. */
static void
test_routed_unchanged (void)
{
  const guint64 batches[] = { 1, 3, 16 };

  for (guint i = 0; i < G_N_ELEMENTS (batches); i++)
    {
      g_autoptr (ElkGraph) routed
          = build ("mixtral-8x7b", batches[i], LLAMA_ROUTING_UNIFORM,
                   LLAMA_EXPERTS_ROUTED, 7);
      g_autoptr (ElkGraph) all
          = build ("mixtral-8x7b", batches[i], LLAMA_ROUTING_UNIFORM,
                   LLAMA_EXPERTS_ALL, 7);
      guint r = 0, untaken = 0, expert_ops = 0;

      g_assert_false (elk_graph_has_conditions (routed));
      g_assert_null (elk_graph_get_attribute (routed, "experts-built"));
      g_assert_null (elk_graph_get_attribute (routed, "conditional-ops"));
      g_assert_true (elk_graph_has_conditions (all));
      g_assert_true (elk_graph_validate (all, NULL));
      g_assert_cmpstr (elk_graph_get_attribute (all, "experts-built"), ==,
                       "all");
      for (guint o = 0; o < elk_graph_get_n_ops (all); o++)
        {
          const ElkOp *op = elk_graph_get_op (all, o);
          gboolean taken = TRUE;
          if (expert_of (op, NULL) >= 0)
            {
              expert_ops++;
              g_assert_true (
                  elk_graph_get_op_condition (all, o, NULL, NULL, &taken));
            }
          else
            g_assert_false (
                elk_graph_get_op_condition (all, o, NULL, NULL, NULL));
          if (!taken)
            {
              untaken++;
              continue;
            }
          g_assert_cmpuint (r, <, elk_graph_get_n_ops (routed));
          g_assert_cmpstr (op->name, ==, elk_graph_get_op (routed, r)->name);
          g_assert_cmpfloat (op->flops, ==,
                             elk_graph_get_op (routed, r)->flops);
          r++;
        }
      g_assert_cmpuint (r, ==, elk_graph_get_n_ops (routed));
      g_assert_cmpuint (llama_test_attr (all, "conditional-ops"), ==,
                        expert_ops);
      g_assert_cmpuint (llama_test_attr (all, "conditional-ops-taken"), ==,
                        expert_ops - untaken);
      /* 3 MoE layers of 8 experts, each expert's FFN and gate scaling. */
      g_assert_cmpuint (expert_ops % (3 * 8), ==, 0);
      g_assert_cmpuint (llama_test_attr (all, "experts-loaded"), ==,
                        llama_test_attr (routed, "experts-loaded"));
      if (batches[i] == 1)
        {
          /* The 6 experts of each layer no token picked: their operators
           * and their weights, 3 d Fe FP16 parameters each (Mixtral:
           * d = 4096, Fe = 14336). */
          g_assert_cmpuint (untaken, ==, expert_ops * 6 / 8);
          g_assert_cmpuint (weight_sum (all) - weight_sum (routed), ==,
                            3ull * 6 * 3 * 4096 * 14336 * 2);
        }
    }
}

/* Every conditional operator's router is its layer's top-k; probabilities
 * are 1 - (1 - 2/8)^B under uniform routing; an untaken expert is built
 * for one row. */
static void
test_uniform (void)
{
  const guint64 batches[] = { 1, 2, 5, 64 };

  for (guint i = 0; i < G_N_ELEMENTS (batches); i++)
    {
      guint64 B = batches[i];
      g_autoptr (ElkGraph) g = build ("mixtral-8x7b", B, LLAMA_ROUTING_UNIFORM,
                                      LLAMA_EXPERTS_ALL, 11);
      double expect = 1.0 - pow (0.75, (double) B);

      g_assert_cmpstr (elk_graph_get_attribute (g, "expert-probabilities"), ==,
                       "exact");
      for (guint o = 0; o < elk_graph_get_n_ops (g); o++)
        {
          const ElkOp *op = elk_graph_get_op (g, o);
          guint32 router = 0;
          double p = -1;
          gboolean taken = FALSE;
          guint layer = 0;
          g_autofree char *topk = NULL;
          if (expert_of (op, &layer) < 0)
            continue;
          g_assert_true (
              elk_graph_get_op_condition (g, o, &router, &p, &taken));
          topk = g_strdup_printf ("blk.%u.ffn_topk", layer);
          g_assert_cmpstr (elk_graph_get_op (g, router)->name, ==, topk);
          g_assert_cmpfloat (fabs (p - expect), <, 1e-12);
          if (!taken && g_str_has_suffix (op->name, ".weigh"))
            {
              /* The output, rows x hidden: one row. */
              const ElkTensor *y = elk_graph_get_tensor (g, op->tensors[0]);
              g_assert_cmpuint (y->shape[0], ==, 1);
            }
        }
    }
}

/* Skewed (Zipf 1.2) routing, top-2 of 8: the enumeration against the
 * closed form; the graph's probabilities follow 1 - (1 - p)^B; the Monte
 * Carlo estimate (forced by allowing no enumeration) within five standard
 * errors of the exact values, and summing to k. */
static void
test_skewed (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (LlamaModel) m
      = elk__llama_model_new_from_preset ("mixtral-8x7b", &error);
  g_autoptr (LlamaRoutingTable) t = NULL;
  g_autoptr (ElkGraph) g = NULL;
  double exact[8], mc[8], sum = 0;
  const double *w;
  LlamaBuildOptions o;

  g_assert_no_error (error);
  elk__llama_build_options_init (&o);
  o.routing = LLAMA_ROUTING_SKEWED;
  o.routing_skew = 1.2;
  t = elk__llama_routing_new (m, &o, &error);
  g_assert_no_error (error);
  w = elk__llama_routing_weights (t, 0);
  g_assert_true (elk__llama_routing_inclusion (t, 0, 1000, exact));
  for (guint e = 0; e < 8; e++)
    {
      g_assert_cmpfloat (fabs (exact[e] - top2_inclusion (w, 8, e)), <, 1e-12);
      if (e > 0)
        g_assert_cmpfloat (exact[e], <, exact[e - 1]);
    }
  g_assert_false (elk__llama_routing_inclusion (t, 0, 0, mc));
  for (guint e = 0; e < 8; e++)
    {
      double se = sqrt (exact[e] * (1 - exact[e]) / LLAMA_ROUTING_MC_TOKENS);
      g_assert_cmpfloat (fabs (mc[e] - exact[e]), <, 5 * se);
      sum += mc[e];
    }
  g_assert_cmpfloat (fabs (sum - 2.0), <, 1e-12);

  g = build ("mixtral-8x7b", 4, LLAMA_ROUTING_SKEWED, LLAMA_EXPERTS_ALL, 3);
  for (guint op = 0; op < elk_graph_get_n_ops (g); op++)
    {
      gint e = expert_of (elk_graph_get_op (g, op), NULL);
      double p = -1;
      if (e < 0)
        continue;
      g_assert_true (elk_graph_get_op_condition (g, op, NULL, &p, NULL));
      g_assert_cmpfloat (fabs (p - (1 - pow (1 - exact[e], 4))), <, 1e-12);
    }
}

/* Top-3 of 8 from a file, where expert 5 never routes: enumeration and
 * Monte Carlo agree, expert 5 has probability 0 and is never taken. */
static void
test_file (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (LlamaModel) m = elk__llama_model_new ();
  g_autoptr (LlamaRoutingTable) t = NULL;
  g_autofree char *dir = g_dir_make_tmp ("elk-experts-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "freq.txt", NULL);
  double exact[8], mc[8], sum = 0;
  LlamaBuildOptions o;

  m->n_layers = 1;
  m->n_experts = 8;
  m->n_experts_used = 3;
  elk__llama_model_set_moe_layers (m, 0, 1, FALSE);
  g_assert_true (g_file_set_contents (path, "0  9 1 3 2 7 0 1 4\n", -1, NULL));
  elk__llama_build_options_init (&o);
  o.routing = LLAMA_ROUTING_FILE;
  o.routing_file = path;
  t = elk__llama_routing_new (m, &o, &error);
  g_assert_no_error (error);
  /* 7 x 6 x 5 = 210 ordered sequences of the 7 weighted experts. */
  g_assert_false (elk__llama_routing_inclusion (t, 0, 209, mc));
  g_assert_true (elk__llama_routing_inclusion (t, 0, 210, exact));
  for (guint e = 0; e < 8; e++)
    {
      double se = sqrt (exact[e] * (1 - exact[e]) / LLAMA_ROUTING_MC_TOKENS);
      g_assert_cmpfloat (fabs (mc[e] - exact[e]), <=, 5 * se);
      sum += exact[e];
    }
  g_assert_cmpfloat (exact[5], ==, 0.0);
  g_assert_cmpfloat (mc[5], ==, 0.0);
  g_assert_cmpfloat (fabs (sum - 3.0), <, 1e-12);
  g_unlink (path);
  g_rmdir (dir);
}

/* A model whose routing needs the Monte Carlo estimate says so, and its
 * graph marks every expert of every MoE layer. */
static void
test_monte_carlo_attribute (void)
{
  LlamaBuildOptions o;
  g_autoptr (ElkGraph) g = NULL;

  elk__llama_build_options_init (&o);
  o.batch = 2;
  o.seq = 64;
  o.layers = 1;
  o.routing = LLAMA_ROUTING_SKEWED;
  o.experts = LLAMA_EXPERTS_ALL;
  g = llama_test_build_preset ("qwen3-30b-a3b", &o);
  g_assert_cmpstr (elk_graph_get_attribute (g, "expert-probabilities"), ==,
                   "monte-carlo");
  g_assert_cmpuint (llama_test_attr (g, "conditional-ops") % 128, ==, 0);
  g_assert_cmpuint (llama_test_attr (g, "conditional-ops-taken"), <,
                    llama_test_attr (g, "conditional-ops"));
}

/* experts=all on a dense model is refused, naming the model. */
static void
test_errors (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (LlamaModel) m
      = elk__llama_model_new_from_preset ("llama-2-7b", &error);
  g_autoptr (ElkGraph) g = NULL;
  LlamaBuildOptions o;

  g_assert_no_error (error);
  elk__llama_build_options_init (&o);
  o.experts = LLAMA_EXPERTS_ALL;
  g = elk__llama_build_graph (m, &o, &error);
  g_assert_null (g);
  g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "experts=all"));
  g_assert_nonnull (strstr (error->message, "has no experts"));
}

/* A tiny Mixtral (4 experts of width 48 on hidden 32, top-2, one layer),
 * small enough that every weight fits on the compiler tests' analytic
 * chip at once. */
static const char tiny_mixtral[]
    = "{\"model_type\":\"mixtral\",\"hidden_size\":32,"
      "\"intermediate_size\":48,\"num_attention_heads\":4,"
      "\"num_key_value_heads\":2,\"num_hidden_layers\":1,"
      "\"vocab_size\":64,\"max_position_embeddings\":64,"
      "\"num_local_experts\":4,\"num_experts_per_tok\":2}";

/* Every preload first, in operator order, then every execute: each
 * expert's preload comes before its router, speculation on all of them. */
static ElkProgram *
preload_everything_first (ElkTestCompileFixture *f)
{
  ElkProgram *p = elk_program_new (f->graph);
  guint n = elk_graph_get_n_ops (f->graph);

  for (guint i = 0; i < n; i++)
    {
      const ElkPlanTable *t = elk_plan_set_get_table (f->plans, i);
      ElkProgramOp *pop = elk_program_get_op (p, i);
      pop->exec_plan = t->plans[t->cold_hot[0].hot_plan];
      pop->preload_plan = t->plans[t->cold_hot[0].cold_plan];
    }
  for (guint i = 0; i < n; i++)
    if (elk_op_get_hbm_bytes (f->graph, elk_graph_get_op (f->graph, i)) > 0)
      elk_program_add_preload (p, i);
  for (guint i = 0; i < n; i++)
    elk_program_add_execute (p, i);
  return p;
}

/* HBM accounting at batch 1: speculating on every expert reads all E
 * experts' weights in the MoE layer; on demand (the same program with the
 * expert preloads moved after the router) exactly those of the top-k the
 * routing took, which is the experts=routed graph's HBM bytes. */
static void
test_hbm_accounting (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();
  g_autoptr (LlamaModel) model
      = elk__llama_model_new_from_hf_data (tiny_mixtral, -1, "tiny.json",
                                           &error);
  const guint64 expert_bytes = 3 * 32 * 48 * 2; /* gate, up, down; FP16 */
  LlamaBuildOptions o;

  g_assert_no_error (error);
  for (guint64 seed = 0; seed < 4; seed++)
    {
      ElkTestCompileFixture f;
      g_autoptr (ElkGraph) routed = NULL;
      g_autoptr (ElkProgram) all = NULL;
      g_autoptr (ElkProgram) on_demand = NULL;
      g_autoptr (ElkMetrics) m_all = NULL;
      g_autoptr (ElkMetrics) m_od = NULL;
      guint64 loaded;

      elk__llama_build_options_init (&o);
      o.batch = 1;
      o.seq = 8;
      o.routing_seed = seed;
      routed = elk__llama_build_graph (model, &o, &error);
      g_assert_no_error (error);
      o.experts = LLAMA_EXPERTS_ALL;
      elk_test_compile_fixture_init (&f, registry,
                                     elk__llama_build_graph (model, &o,
                                                             &error));
      g_assert_no_error (error);
      /* Batch 1, top-2: two experts taken. */
      loaded = llama_test_attr (routed, "experts-loaded");
      g_assert_cmpuint (loaded, ==, 2);

      all = preload_everything_first (&f);
      g_assert_true (elk_program_validate (all, f.plans, &error));
      g_assert_no_error (error);
      on_demand = elk_program_apply_expert_policy (all, f.plans,
                                                   ELK_EXPERT_PRELOAD_ON_DEMAND,
                                                   0.5, 0, &error);
      g_assert_no_error (error);
      g_assert_true (elk_program_validate (on_demand, f.plans, &error));
      g_assert_no_error (error);
      m_all = elk_chip_run (f.chip, all, f.plans, &error);
      g_assert_no_error (error);
      m_od = elk_chip_run (f.chip, on_demand, f.plans, &error);
      g_assert_no_error (error);

      /* Speculation: all four experts, taken or not. */
      g_assert_cmpfloat (m_all->hbm_bytes, ==,
                         (double) elk_graph_get_hbm_bytes (f.graph));
      g_assert_cmpfloat (m_all->hbm_bytes - m_od->hbm_bytes, ==,
                         (double) (4 - loaded) * expert_bytes);
      g_assert_cmpfloat (m_all->routing->wasted_hbm_bytes, ==,
                         (double) (4 - loaded) * expert_bytes);
      g_assert_cmpfloat (m_all->routing->hit_rate, ==, 1.0);
      /* On demand: the two taken experts and the rest of the model. */
      g_assert_cmpfloat (m_od->hbm_bytes, ==,
                         (double) elk_graph_get_hbm_bytes (routed));
      g_assert_cmpuint (m_od->routing->wasted, ==, 0);
      g_assert_cmpfloat (m_od->routing->hit_rate, ==, 0.0);
      g_assert_cmpfloat (m_od->routing->on_demand_hbm_bytes, ==,
                         (double) loaded * expert_bytes);
      elk_test_compile_fixture_clear (&f);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/llama/experts/routed-unchanged", test_routed_unchanged);
  g_test_add_func ("/llama/experts/uniform", test_uniform);
  g_test_add_func ("/llama/experts/skewed", test_skewed);
  g_test_add_func ("/llama/experts/file", test_file);
  g_test_add_func ("/llama/experts/monte-carlo", test_monte_carlo_attribute);
  g_test_add_func ("/llama/experts/errors", test_errors);
  g_test_add_func ("/llama/experts/hbm-accounting", test_hbm_accounting);
  return g_test_run ();
}
