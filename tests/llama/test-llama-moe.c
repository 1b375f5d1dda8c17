/* test-llama-moe.c: mixture-of-experts and multi-head latent attention in
 * the llama frontend.  Parameter counts, HBM bytes and FLOPs are checked
 * against counts written here from the models' config.json numbers,
 * independently of the frontend's presets and graph builder; the routing
 * formula against enumeration and a seeded Monte Carlo run.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "elk-llama-private.h"
#include "gguf-writer.h"
#include "llama-test-util.h"

/* ------------------------------------------------------------------ */
/* Independent counts                                                   */
/* ------------------------------------------------------------------ */

/* The numbers of one model's config.json, typed in here. */
typedef struct
{
  const char *preset;
  guint L;
  guint64 d, H, kv, hd, V;
  guint64 F;        /* dense FFN width (DeepSeek's first layers) */
  guint64 E, k, Fe; /* routed experts, top-k, expert width */
  guint64 Fs;       /* shared experts' total width */
  guint first_dense;
  gboolean qk_norm, router_bias;
  guint64 ql, c, en, r, ev; /* MLA: q and kv ranks, head sizes */
  double published_total, published_active;
} MoeRow;

static const MoeRow moe_rows[] = {
  /* Mistral AI, "Mixtral of experts" (2023-12-11): 46.7B total, 12.9B
   * used per token. */
  { "mixtral-8x7b", 32,    4096, 32,    8,     128, 32000, 14336, 8, 2,
    14336,          0,     0,    FALSE, FALSE, 0,   0,     0,     0, 0,
    46.7e9,         12.9e9 },
  /* Mistral AI, "Cheaper, Better, Faster, Stronger" (2024-04-17): 141B
   * total, 39B active. */
  { "mixtral-8x22b", 56,    6144, 48, 8, 128, 32768, 16384, 8,   2, 16384, 0, 0,
    FALSE,           FALSE, 0,    0,  0, 0,   0,     141e9, 39e9 },
  /* Qwen3-30B-A3B model card: 30.5B in total, 3.3B activated. */
  { "qwen3-30b-a3b",
    48,
    2048,
    32,
    4,
    128,
    151936,
    6144,
    128,
    8,
    768,
    0,
    0,
    TRUE,
    FALSE,
    0,
    0,
    0,
    0,
    0,
    30.5e9,
    3.3e9 },
  /* DeepSeek-V3 technical report: 671B total, 37B activated per token
   * (the 14B multi-token-prediction module excluded). */
  {
      "deepseek-v3", 61,  7168, 128,  128,   192,   129280, 18432,
      256,           8,   2048, 2048, 3,     FALSE, TRUE,   1536,
      512,           128, 64,   128,  671e9, 37e9 },
  /* DeepSeek-V2 paper, appendix: V2-Lite has 15.7B parameters in total,
   * 2.4B activated for each token. */
  { "deepseek-v2-lite",
    27,
    2048,
    16,
    16,
    192,
    102400,
    10944,
    64,
    6,
    1408,
    2816,
    1,
    FALSE,
    FALSE,
    0,
    512,
    128,
    64,
    128,
    15.7e9,
    2.4e9 },
};

static guint64
row_attention (const MoeRow *r)
{
  if (r->c != 0)
    {
      guint64 qk = r->en + r->r;
      guint64 q = r->ql == 0 ? r->d * r->H * qk
                             : r->d * r->ql + r->ql + r->ql * r->H * qk;
      return q + r->d * (r->c + r->r) + r->c + r->c * r->H * (r->en + r->ev)
             + r->H * r->ev * r->d;
    }
  return r->d * (r->H + 2 * r->kv) * r->hd + r->H * r->hd * r->d
         + (r->qk_norm ? 2 * r->hd : 0);
}

/* Parameters of layer @l's FFN with @experts routed experts. */
static guint64
row_ffn (const MoeRow *r, guint l, guint64 experts)
{
  if (l < r->first_dense)
    return 3 * r->d * r->F;
  return r->d * r->E + (r->router_bias ? r->E : 0) + experts * 3 * r->d * r->Fe
         + 3 * r->d * r->Fs;
}

static guint64
row_params (const MoeRow *r, guint64 experts)
{
  guint64 total = 2 * r->V * r->d + r->d; /* tables and final norm */
  for (guint l = 0; l < r->L; l++)
    total += row_attention (r) + 2 * r->d + row_ffn (r, l, experts);
  return total;
}

static guint
count_ops (ElkGraph *g, const char *name)
{
  guint n = 0;
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    n += g_str_equal (elk_graph_get_op (g, i)->name, name);
  return n;
}

static ElkGraph *
build (const char *preset,
       guint64 batch,
       guint64 seq,
       guint64 seed,
       gboolean absorb)
{
  LlamaBuildOptions o;

  elk__llama_build_options_init (&o);
  o.batch = batch;
  o.seq = seq;
  o.routing_seed = seed;
  o.mla_absorb = absorb;
  return llama_test_build_preset (preset, &o);
}

/* ------------------------------------------------------------------ */
/* Presets                                                              */
/* ------------------------------------------------------------------ */

static void
test_preset_params (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (moe_rows); i++)
    {
      const MoeRow *r = &moe_rows[i];
      g_autoptr (GError) error = NULL;
      g_autoptr (LlamaModel) m
          = elk__llama_model_new_from_preset (r->preset, &error);
      guint64 total, active;
      double rel_total, rel_active;

      g_assert_no_error (error);
      total = elk__llama_model_count_params (m, 0);
      active = elk__llama_model_count_active_params (m);
      g_assert_cmpuint (total, ==, row_params (r, r->E));
      g_assert_cmpuint (active, ==, row_params (r, r->k));
      rel_total
          = fabs ((double) total - r->published_total) / r->published_total;
      rel_active
          = fabs ((double) active - r->published_active) / r->published_active;
      g_test_message ("%s: total %.4gB (%.2f%% from published), active "
                      "%.4gB (%.2f%%)",
                      r->preset, total / 1e9, 100 * rel_total, active / 1e9,
                      100 * rel_active);
      g_assert_cmpfloat (rel_total, <, 0.005);
      /* Mistral's active figures count everything but the unused routed
       * experts, as elk does, and agree within 0.5%.  Qwen and DeepSeek
       * give theirs to two digits under conventions of their own
       * (docs/frontend-llama.md, "Presets"): the differences are written
       * down there and pinned here. */
      if (g_str_has_prefix (r->preset, "mixtral"))
        g_assert_cmpfloat (rel_active, <, 0.005);
    }
}

/* DeepSeek counts the activated parameters without the token embedding
 * (a table of which one row is read): V3 and V2-Lite then land within
 * 1.1% and 2.1% of the published 37B and 2.4B; Qwen3-30B-A3B's 3.3B is
 * 1.6% below elk's count with the tables included and 7.8% above it
 * without them.  Pinned so that a change of these numbers is seen. */
static void
test_preset_active_conventions (void)
{
  static const struct
  {
    const char *preset;
    gboolean without_embedding;
    double rel;
  } cases[] = {
    { "qwen3-30b-a3b", FALSE, 0.017 },
    { "deepseek-v3", TRUE, 0.011 },
    { "deepseek-v2-lite", TRUE, 0.022 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    for (guint j = 0; j < G_N_ELEMENTS (moe_rows); j++)
      {
        const MoeRow *r = &moe_rows[j];
        double active;
        if (!g_str_equal (r->preset, cases[i].preset))
          continue;
        active = (double) row_params (r, r->k)
                 - (cases[i].without_embedding ? (double) r->V * r->d : 0);
        g_assert_cmpfloat (fabs (active - r->published_active)
                               / r->published_active,
                           <, cases[i].rel);
      }
}

/* ------------------------------------------------------------------ */
/* Exact HBM accounting and FLOPs of a decode step                      */
/* ------------------------------------------------------------------ */

/* Weights a decode step of @b tokens streams when the routing uses
 * @loaded routed experts over all MoE layers, and the MatMul weights of
 * those (the weights a token multiplies by: everything but norms, biases
 * and the gathered embedding rows), counted per token. */
static void
row_decode (const MoeRow *r,
            guint64 b,
            guint64 loaded,
            guint64 *weights,
            double *mm_weights_per_token)
{
  guint64 w = r->d + r->d * r->V + b * r->d; /* final norm, head, rows */
  double mm = (double) r->d * r->V;
  for (guint l = 0; l < r->L; l++)
    {
      guint64 attn = row_attention (r);
      /* Not multiplied once per token: the norm weights inside attention
       * (MLA's q_a and kv_a norms, Qwen3's query and key norms), and
       * MLA's up-projection, which row_attention_flops counts (applied
       * to every cached latent, or folded into query and context). */
      guint64 attn_norms = r->c != 0 ? (r->ql != 0 ? r->ql : 0) + r->c
                                           + r->c * r->H * (r->en + r->ev)
                                     : (r->qk_norm ? 2 * r->hd : 0);
      w += attn + 2 * r->d;
      mm += (double) (attn - attn_norms);
      if (l < r->first_dense)
        {
          w += 3 * r->d * r->F;
          mm += 3.0 * r->d * r->F;
        }
      else
        {
          w += r->d * r->E + (r->router_bias ? r->E : 0) + 3 * r->d * r->Fs;
          mm += (double) r->d * r->E + 3.0 * r->d * r->Fs
                + (double) r->k * 3 * r->d * r->Fe;
        }
    }
  w += loaded * 3 * r->d * r->Fe;
  *weights = w;
  *mm_weights_per_token = mm;
}

/* Attention MatMul FLOPs of one layer for a decode step of @b sequences
 * with @S cached tokens. */
static double
row_attention_flops (const MoeRow *r, guint64 b, guint64 S, gboolean absorb)
{
  double B = (double) b;
  if (r->c == 0)
    return 4.0 * B * r->H * S * r->hd;
  if (absorb)
    return 2.0 * B * r->H * r->en * r->c + 2.0 * B * r->H * S * r->c
           + 2.0 * B * r->H * S * r->r + 2.0 * B * r->H * S * r->c
           + 2.0 * B * r->H * r->c * r->ev;
  return 2.0 * B * S * r->c * r->H * (r->en + r->ev)
         + 2.0 * B * r->H * S * r->en + 2.0 * B * r->H * S * r->r
         + 2.0 * B * r->H * S * r->ev;
}

/* At batch 1 a decode step reads the top-k routed experts and the shared
 * ones of every MoE layer, the dense layers and attention whole, and the
 * KV cache (for MLA: the latent and the RoPE key). */
static void
test_decode_batch1 (void)
{
  const guint64 S = 1024;

  for (guint i = 0; i < G_N_ELEMENTS (moe_rows); i++)
    for (guint absorb = 0; absorb < 2; absorb++)
      {
        const MoeRow *r = &moe_rows[i];
        g_autoptr (ElkGraph) g = NULL;
        guint64 moe_layers = r->L - r->first_dense, weights, kv;
        guint64 expert_ops = 0;
        double mm, flops;

        if (absorb && r->c == 0)
          continue;
        g = build (r->preset, 1, S, 42, absorb);
        row_decode (r, 1, moe_layers * r->k, &weights, &mm);
        kv = r->c != 0 ? r->L * S * (r->c + r->r) * 2
                       : r->L * S * 2 * r->kv * r->hd * 2;
        g_assert_cmpuint (llama_test_attr (g, "experts-loaded"), ==,
                          moe_layers * r->k);
        g_assert_cmpuint (llama_test_attr (g, "moe-layers"), ==, moe_layers);
        g_assert_cmpuint (llama_test_attr (g, "weight-bytes"), ==, weights * 2);
        g_assert_cmpuint (llama_test_attr (g, "kv-bytes"), ==, kv);
        g_assert_cmpuint (elk_graph_get_hbm_bytes (g), ==, weights * 2 + kv);
        for (guint o = 0; o < elk_graph_get_n_ops (g); o++)
          if (strstr (elk_graph_get_op (g, o)->name, ".ffn_exp") != NULL
              && g_str_has_suffix (elk_graph_get_op (g, o)->name, ".down"))
            expert_ops++;
        g_assert_cmpuint (expert_ops, ==, moe_layers * r->k);
        flops = 2.0 * mm + r->L * row_attention_flops (r, 1, S, absorb);
        g_assert_cmpfloat (fabs (llama_test_matmul_flops (g) - flops), <=,
                           1e-9 * flops);
      }
}

/* At batch B the graph streams every expert its sampled routing uses,
 * once, whatever number of tokens it serves. */
static void
test_decode_batch (void)
{
  const MoeRow *r = &moe_rows[2]; /* qwen3-30b-a3b */
  g_autoptr (ElkGraph) g = build (r->preset, 16, 256, 7, FALSE);
  guint64 loaded = llama_test_attr (g, "experts-loaded"), weights;
  double mm;

  g_assert_cmpuint (loaded, >, r->L * r->k);
  g_assert_cmpuint (loaded, <=, r->L * MIN (r->E, 16 * r->k));
  row_decode (r, 16, loaded, &weights, &mm);
  g_assert_cmpuint (llama_test_attr (g, "weight-bytes"), ==, weights * 2);
  g_assert_cmpuint (llama_test_attr (g, "kv-bytes"), ==,
                    r->L * 16 * 256 * 2 * 4 * 128 * 2);
  /* Every token still multiplies by exactly k experts. */
  g_assert_cmpfloat (fabs (
                         llama_test_matmul_flops (g)
                         - (2.0 * 16 * mm
                            + r->L * row_attention_flops (r, 16, 256, FALSE))),
                     <=, 1e-9 * llama_test_matmul_flops (g));
}

/* The same seed gives the same graph; the MLA forms read the same
 * weights and cache. */
static void
test_seed_and_forms (void)
{
  g_autoptr (ElkGraph) a = build ("mixtral-8x7b", 4, 128, 3, FALSE);
  g_autoptr (ElkGraph) b = build ("mixtral-8x7b", 4, 128, 3, FALSE);
  g_autoptr (ElkGraph) c = build ("mixtral-8x7b", 4, 128, 4, FALSE);
  g_autoptr (ElkGraph) plain = build ("deepseek-v2-lite", 2, 64, 1, FALSE);
  g_autoptr (ElkGraph) absorbed = build ("deepseek-v2-lite", 2, 64, 1, TRUE);
  gboolean same = TRUE;

  g_assert_cmpuint (elk_graph_get_n_ops (a), ==, elk_graph_get_n_ops (b));
  for (guint i = 0; i < elk_graph_get_n_ops (a); i++)
    g_assert_cmpstr (elk_graph_get_op (a, i)->name, ==,
                     elk_graph_get_op (b, i)->name);
  /* Seed 4 routes these 4 tokens differently (deterministically so). */
  same = elk_graph_get_n_ops (a) == elk_graph_get_n_ops (c);
  for (guint i = 0; same && i < elk_graph_get_n_ops (a); i++)
    same = g_str_equal (elk_graph_get_op (a, i)->name,
                        elk_graph_get_op (c, i)->name);
  g_assert_false (same);

  g_assert_cmpuint (llama_test_attr (plain, "weight-bytes"), ==,
                    llama_test_attr (absorbed, "weight-bytes"));
  g_assert_cmpuint (llama_test_attr (plain, "kv-bytes"), ==,
                    llama_test_attr (absorbed, "kv-bytes"));
  g_assert_cmpstr (elk_graph_get_attribute (absorbed, "mla-form"), ==,
                   "absorbed");
  g_assert_cmpuint (count_ops (absorbed, "blk.0.attn_q_absorb"), ==, 1);
  g_assert_cmpuint (count_ops (plain, "blk.0.attn_q_absorb"), ==, 0);
  g_assert_cmpuint (count_ops (plain, "blk.0.attn_kv_b"), ==, 1);
}

/* Prefill and train-forward build too (MLA in its plain form on the new
 * tokens, no KV cache), and unfused expert projections stream the same
 * bytes as fused ones. */
static void
test_other_phases (void)
{
  static const char *const presets[]
      = { "qwen3-30b-a3b", "deepseek-v2-lite", "mixtral-8x7b" };
  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    for (guint phase = LLAMA_PHASE_PREFILL; phase <= LLAMA_PHASE_TRAIN_FORWARD;
         phase++)
      {
        g_autoptr (GError) error = NULL;
        g_autoptr (LlamaModel) m
            = elk__llama_model_new_from_preset (presets[i], &error);
        g_autoptr (ElkGraph) g = NULL;
        LlamaBuildOptions o;
        elk__llama_build_options_init (&o);
        o.phase = (LlamaPhase) phase;
        o.batch = 2;
        o.seq = 32;
        o.layers = 2;
        o.mla_absorb = TRUE; /* decode only: ignored here */
        g = elk__llama_build_graph (m, &o, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (llama_test_attr (g, "kv-bytes"), ==, 0);
        /* 64 tokens pick k experts each. */
        g_assert_cmpuint (llama_test_attr (g, "experts-loaded"), <=,
                          llama_test_attr (g, "moe-layers") * m->n_experts);
        if (m->kv_lora_rank != 0)
          g_assert_cmpstr (elk_graph_get_attribute (g, "mla-form"), ==,
                           "plain");
      }
  {
    g_autoptr (LlamaModel) m
        = elk__llama_model_new_from_preset ("mixtral-8x7b", NULL);
    g_autoptr (ElkGraph) fused = NULL, unfused = NULL;
    LlamaBuildOptions o;
    elk__llama_build_options_init (&o);
    o.batch = 3;
    o.layers = 2;
    o.routing_seed = 9;
    fused = elk__llama_build_graph (m, &o, NULL);
    o.fuse_ffn = FALSE;
    unfused = elk__llama_build_graph (m, &o, NULL);
    g_assert_nonnull (fused);
    g_assert_nonnull (unfused);
    g_assert_cmpuint (llama_test_attr (fused, "weight-bytes"), ==,
                      llama_test_attr (unfused, "weight-bytes"));
    g_assert_cmpuint (llama_test_attr (fused, "experts-loaded"), ==,
                      llama_test_attr (unfused, "experts-loaded"));
  }
  {
    /* The artifact's graphs never had experts. */
    g_autoptr (GError) error = NULL;
    g_autoptr (LlamaModel) m
        = elk__llama_model_new_from_preset ("mixtral-8x7b", NULL);
    LlamaBuildOptions o;
    elk__llama_build_options_init (&o);
    o.granularity = LLAMA_GRANULARITY_ARTIFACT;
    g_assert_null (elk__llama_build_graph (m, &o, &error));
    g_assert_nonnull (strstr (error->message, "it has experts"));
  }
}

/* ------------------------------------------------------------------ */
/* Routing                                                              */
/* ------------------------------------------------------------------ */

/* The average number of distinct experts over every way @B tokens can
 * each choose @k distinct of @n, enumerated. */
static double
enumerate_distinct (guint n, guint k, guint B)
{
  g_autoptr (GArray) subsets = g_array_new (FALSE, FALSE, sizeof (guint));
  guint64 combos = 1, total = 0;

  for (guint mask = 0; mask < (1u << n); mask++)
    if ((guint) __builtin_popcount (mask) == k)
      g_array_append_val (subsets, mask);
  for (guint i = 0; i < B; i++)
    combos *= subsets->len;
  for (guint64 c = 0; c < combos; c++)
    {
      guint64 rest = c;
      guint used = 0;
      for (guint i = 0; i < B; i++)
        {
          used |= g_array_index (subsets, guint, rest % subsets->len);
          rest /= subsets->len;
        }
      total += (guint64) __builtin_popcount (used);
    }
  return (double) total / (double) combos;
}

static void
test_uniform_formula (void)
{
  static const guint cases[][3] = {
    { 5, 2, 3 }, { 4, 1, 4 }, { 6, 3, 2 }, { 8, 2, 3 }, { 7, 7, 2 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      double exact = enumerate_distinct (cases[i][0], cases[i][1], cases[i][2]);
      double formula
          = elk__llama_routing_expected_distinct_uniform (cases[i][0],
                                                          cases[i][1],
                                                          cases[i][2]);
      g_assert_cmpfloat (fabs (exact - formula), <, 1e-12);
    }
}

/* The sampler, run many times with a fixed seed, averages to the formula
 * (the number of distinct experts lies in [k, n], so its standard
 * deviation is below n / 2 and 200000 runs give a standard error below
 * 0.01 for n = 8; 5 standard errors is the bound). */
static void
test_uniform_monte_carlo (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (LlamaModel) m = elk__llama_model_new ();
  g_autoptr (LlamaRoutingTable) t = NULL;
  g_autoptr (GRand) rand = g_rand_new_with_seed (20261201);
  guint64 tokens[8];
  LlamaBuildOptions o;
  const guint runs = 200000;
  double sum = 0.0, sum2 = 0.0, mean, se;

  m->n_layers = 1;
  m->n_experts = 8;
  m->n_experts_used = 2;
  elk__llama_model_set_moe_layers (m, 0, 1, FALSE);
  elk__llama_build_options_init (&o);
  t = elk__llama_routing_new (m, &o, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < runs; i++)
    {
      double d = (double) elk__llama_routing_sample (t, 0, 4, rand, tokens);
      guint64 picks = 0;
      for (guint e = 0; e < 8; e++)
        picks += tokens[e];
      g_assert_cmpuint (picks, ==, 8); /* 4 tokens x top-2 */
      sum += d;
      sum2 += d * d;
    }
  mean = sum / runs;
  se = sqrt ((sum2 / runs - mean * mean) / runs);
  g_assert_cmpfloat (fabs (mean
                           - elk__llama_routing_expected_distinct_uniform (8, 2,
                                                                           4)),
                     <, 5 * se);
}

/* Zipf: the hottest expert is picked most often; frequencies from a file
 * are followed. */
static void
test_skewed_and_file (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (LlamaModel) m = elk__llama_model_new ();
  g_autoptr (LlamaRoutingTable) t = NULL;
  g_autoptr (LlamaRoutingTable) f = NULL;
  g_autoptr (GRand) rand = g_rand_new_with_seed (5);
  g_autofree char *path = NULL;
  g_autofree char *dir = g_dir_make_tmp ("elk-moe-XXXXXX", NULL);
  guint64 tokens[4];
  LlamaBuildOptions o;
  const double *w;

  m->n_layers = 2;
  m->n_experts = 4;
  m->n_experts_used = 1;
  elk__llama_model_set_moe_layers (m, 0, 1, FALSE);
  elk__llama_build_options_init (&o);
  o.routing = LLAMA_ROUTING_SKEWED;
  o.routing_skew = 1.0;
  t = elk__llama_routing_new (m, &o, &error);
  g_assert_no_error (error);
  w = elk__llama_routing_weights (t, 0);
  /* 1, 1/2, 1/3, 1/4 normalised by 25/12. */
  g_assert_cmpfloat (fabs (w[0] - 12.0 / 25.0), <, 1e-15);
  g_assert_cmpfloat (fabs (w[3] - 3.0 / 25.0), <, 1e-15);

  path = g_build_filename (dir, "freq.txt", NULL);
  g_assert_true (g_file_set_contents (path,
                                      "# layer 1 only ever uses expert 2\n"
                                      "1  0 0 5 0\n"
                                      "*  1 1 1 1  # the others\n",
                                      -1, NULL));
  o.routing = LLAMA_ROUTING_FILE;
  o.routing_file = path;
  f = elk__llama_routing_new (m, &o, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (elk__llama_routing_sample (f, 1, 50, rand, tokens), ==, 1);
  g_assert_cmpuint (tokens[2], ==, 50);
  g_assert_cmpfloat (elk__llama_routing_weights (f, 0)[1], ==, 0.25);
  g_assert_cmpint (g_remove (path), ==, 0);
  g_assert_cmpint (g_rmdir (dir), ==, 0);
}

static void
test_routing_errors (void)
{
  static const struct
  {
    const char *text;   /* NULL: no file */
    const char *expect; /* after the path */
  } cases[] = {
    { "0 1 1 1 1\n1 1 1 1\n", ":2: 3 frequencies, expected 4" },
    { "x 1 1 1 1\n", ":1: expected a layer number or '*' first, got 'x'" },
    { "\n\n7 1 1 1 1\n", ":3: layer 7 does not exist" },
    { "0 1 1 1 1\n1 1 1 1 1\n2 1 1 1 1\n", ":3: layer 2 has a dense FFN" },
    { "0 1 1 1 1\n0 1 1 1 1\n", ":2: layer 0 is listed twice (first on "
                                "line 1)" },
    { "0 1 -1 1 1\n", ":1: frequency of expert 1 ('-1') is not a "
                      "non-negative finite number" },
    { "0 1 nan 1 1\n", ":1: frequency of expert 1 ('nan')" },
    { "0 0 0 3 0\n", ":1: only 1 experts have a non-zero frequency; top-2 "
                     "routing needs at least 2" },
    { "0 1 1 1 1\n", ": no frequencies for MoE layer 1" },
    { "* 1 1 1 1\n* 1 1 1 1\n", ":2: a second '*' line (the first is line "
                                "1)" },
  };
  g_autoptr (LlamaModel) m = elk__llama_model_new ();
  g_autofree char *dir = g_dir_make_tmp ("elk-moe-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "routing.txt", NULL);
  g_autofree char *missing = g_build_filename (dir, "absent.txt", NULL);
  LlamaBuildOptions o;

  m->n_layers = 3;
  m->n_experts = 4;
  m->n_experts_used = 2;
  m->source = g_strdup ("test");
  m->name = g_strdup ("test");
  elk__llama_model_set_moe_layers (m, 0, 1, FALSE);
  m->moe_layers[2] = FALSE;
  elk__llama_build_options_init (&o);
  o.routing = LLAMA_ROUTING_FILE;
  o.routing_file = path;
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autofree char *want = g_strconcat (path, cases[i].expect, NULL);
      g_assert_true (g_file_set_contents (path, cases[i].text, -1, NULL));
      g_assert_null (elk__llama_routing_new (m, &o, &error));
      g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID);
      if (!g_str_has_prefix (error->message, want))
        g_error ("got '%s', expected it to start with '%s'", error->message,
                 want);
    }
  g_assert_cmpint (g_remove (path), ==, 0);

  {
    g_autoptr (GError) error = NULL;
    o.routing_file = missing;
    g_assert_null (elk__llama_routing_new (m, &o, &error));
    g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_IO);
    g_assert_true (g_str_has_prefix (error->message, missing));
  }
  {
    g_autoptr (GError) error = NULL;
    o.routing_file = NULL;
    g_assert_null (elk__llama_routing_new (m, &o, &error));
    g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID);
    g_assert_nonnull (strstr (error->message, "routing=file needs "
                                              "routing-file"));
  }
  {
    g_autoptr (GError) error = NULL;
    o.routing = LLAMA_ROUTING_UNIFORM;
    o.routing_file = path;
    g_assert_null (elk__llama_routing_new (m, &o, &error));
    g_assert_nonnull (strstr (error->message, "routing is not 'file'"));
  }
  {
    /* A Zipf exponent so large that the weights underflow. */
    g_autoptr (GError) error = NULL;
    o.routing = LLAMA_ROUTING_SKEWED;
    o.routing_file = NULL;
    o.routing_skew = 2000.0;
    g_assert_null (elk__llama_routing_new (m, &o, &error));
    g_assert_nonnull (strstr (error->message, "leaves 1 experts of layer 0 "
                                              "with a non-zero weight"));
    o.routing_skew = -1.0;
    g_clear_error (&error);
    g_assert_null (elk__llama_routing_new (m, &o, &error));
    g_assert_nonnull (strstr (error->message, "routing-skew must be"));
  }
  {
    /* Routing parameters on a dense model. */
    g_autoptr (GError) error = NULL;
    g_autoptr (LlamaModel) dense
        = elk__llama_model_new_from_preset ("llama-2-7b", NULL);
    o.routing = LLAMA_ROUTING_SKEWED;
    o.routing_skew = 1.0;
    o.layers = 1;
    g_assert_null (elk__llama_build_graph (dense, &o, &error));
    g_assert_nonnull (strstr (error->message, "has no experts"));
  }
  g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* ------------------------------------------------------------------ */
/* config.json                                                          */
/* ------------------------------------------------------------------ */

static const char mixtral_json[] = "{\n"
                                   "  \"model_type\": \"mixtral\",\n"
                                   "  \"hidden_size\": 4096,\n"
                                   "  \"intermediate_size\": 14336,\n"
                                   "  \"max_position_embeddings\": 32768,\n"
                                   "  \"num_attention_heads\": 32,\n"
                                   "  \"num_experts_per_tok\": 2,\n"
                                   "  \"num_hidden_layers\": 32,\n"
                                   "  \"num_key_value_heads\": 8,\n"
                                   "  \"num_local_experts\": 8,\n"
                                   "  \"rms_norm_eps\": 1e-05,\n"
                                   "  \"rope_theta\": 1000000.0,\n"
                                   "  \"sliding_window\": null,\n"
                                   "  \"tie_word_embeddings\": false,\n"
                                   "  \"torch_dtype\": \"bfloat16\",\n"
                                   "  \"vocab_size\": 32000\n"
                                   "}\n";

static const char qwen3_json[] = "{\n"
                                 "  \"model_type\": \"qwen3_moe\",\n"
                                 "  \"attention_bias\": false,\n"
                                 "  \"decoder_sparse_step\": 1,\n"
                                 "  \"head_dim\": 128,\n"
                                 "  \"hidden_size\": 2048,\n"
                                 "  \"intermediate_size\": 6144,\n"
                                 "  \"max_position_embeddings\": 40960,\n"
                                 "  \"mlp_only_layers\": [],\n"
                                 "  \"moe_intermediate_size\": 768,\n"
                                 "  \"norm_topk_prob\": true,\n"
                                 "  \"num_attention_heads\": 32,\n"
                                 "  \"num_experts\": 128,\n"
                                 "  \"num_experts_per_tok\": 8,\n"
                                 "  \"num_hidden_layers\": 48,\n"
                                 "  \"num_key_value_heads\": 4,\n"
                                 "  \"rms_norm_eps\": 1e-06,\n"
                                 "  \"rope_theta\": 1000000.0,\n"
                                 "  \"sliding_window\": null,\n"
                                 "  \"tie_word_embeddings\": false,\n"
                                 "  \"torch_dtype\": \"bfloat16\",\n"
                                 "  \"use_sliding_window\": false,\n"
                                 "  \"vocab_size\": 151936\n"
                                 "}\n";

static const char deepseek_v3_json[]
    = "{\n"
      "  \"model_type\": \"deepseek_v3\",\n"
      "  \"first_k_dense_replace\": 3,\n"
      "  \"hidden_size\": 7168,\n"
      "  \"intermediate_size\": 18432,\n"
      "  \"kv_lora_rank\": 512,\n"
      "  \"max_position_embeddings\": 163840,\n"
      "  \"moe_intermediate_size\": 2048,\n"
      "  \"moe_layer_freq\": 1,\n"
      "  \"n_group\": 8,\n"
      "  \"n_routed_experts\": 256,\n"
      "  \"n_shared_experts\": 1,\n"
      "  \"norm_topk_prob\": true,\n"
      "  \"num_attention_heads\": 128,\n"
      "  \"num_experts_per_tok\": 8,\n"
      "  \"num_hidden_layers\": 61,\n"
      "  \"num_key_value_heads\": 128,\n"
      "  \"num_nextn_predict_layers\": 1,\n"
      "  \"q_lora_rank\": 1536,\n"
      "  \"qk_nope_head_dim\": 128,\n"
      "  \"qk_rope_head_dim\": 64,\n"
      "  \"rms_norm_eps\": 1e-06,\n"
      "  \"rope_theta\": 10000,\n"
      "  \"scoring_func\": \"sigmoid\",\n"
      "  \"tie_word_embeddings\": false,\n"
      "  \"topk_group\": 4,\n"
      "  \"topk_method\": \"noaux_tc\",\n"
      "  \"torch_dtype\": \"bfloat16\",\n"
      "  \"v_head_dim\": 128,\n"
      "  \"vocab_size\": 129280\n"
      "}\n";

static const char deepseek_v2_lite_json[]
    = "{\n"
      "  \"model_type\": \"deepseek_v2\",\n"
      "  \"first_k_dense_replace\": 1,\n"
      "  \"hidden_size\": 2048,\n"
      "  \"intermediate_size\": 10944,\n"
      "  \"kv_lora_rank\": 512,\n"
      "  \"max_position_embeddings\": 163840,\n"
      "  \"moe_intermediate_size\": 1408,\n"
      "  \"moe_layer_freq\": 1,\n"
      "  \"n_routed_experts\": 64,\n"
      "  \"n_shared_experts\": 2,\n"
      "  \"num_attention_heads\": 16,\n"
      "  \"num_experts_per_tok\": 6,\n"
      "  \"num_hidden_layers\": 27,\n"
      "  \"num_key_value_heads\": 16,\n"
      "  \"q_lora_rank\": null,\n"
      "  \"qk_nope_head_dim\": 128,\n"
      "  \"qk_rope_head_dim\": 64,\n"
      "  \"scoring_func\": \"softmax\",\n"
      "  \"topk_method\": \"greedy\",\n"
      "  \"v_head_dim\": 128,\n"
      "  \"vocab_size\": 102400\n"
      "}\n";

/* Qwen2-57B-A14B: one gated shared expert, Q/K/V biases.  Its exact
 * count, from the config's numbers: attention with biases, 64 experts of
 * 2560, a shared FFN of 20480 and its gate, two tables. */
static const char qwen2_moe_json[]
    = "{\n"
      "  \"model_type\": \"qwen2_moe\",\n"
      "  \"decoder_sparse_step\": 1,\n"
      "  \"hidden_size\": 3584,\n"
      "  \"intermediate_size\": 18944,\n"
      "  \"max_position_embeddings\": 131072,\n"
      "  \"moe_intermediate_size\": 2560,\n"
      "  \"num_attention_heads\": 28,\n"
      "  \"num_experts\": 64,\n"
      "  \"num_experts_per_tok\": 8,\n"
      "  \"num_hidden_layers\": 28,\n"
      "  \"num_key_value_heads\": 4,\n"
      "  \"shared_expert_intermediate_size\": 20480,\n"
      "  \"tie_word_embeddings\": false,\n"
      "  \"vocab_size\": 151936\n"
      "}\n";

static void
test_hf_configs (void)
{
  static const struct
  {
    const char *json;
    const char *preset;
  } cases[] = {
    { mixtral_json, "mixtral-8x7b" },
    { qwen3_json, "qwen3-30b-a3b" },
    { deepseek_v3_json, "deepseek-v3" },
    { deepseek_v2_lite_json, "deepseek-v2-lite" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (LlamaModel) m
          = elk__llama_model_new_from_hf_data (cases[i].json, -1, "config.json",
                                               &error);
      g_autoptr (LlamaModel) p
          = elk__llama_model_new_from_preset (cases[i].preset, NULL);
      g_assert_no_error (error);
      g_assert_cmpuint (elk__llama_model_count_params (m, 0), ==,
                        elk__llama_model_count_params (p, 0));
      g_assert_cmpuint (elk__llama_model_count_active_params (m), ==,
                        elk__llama_model_count_active_params (p));
      for (guint l = 0; l < m->n_layers; l++)
        g_assert_cmpint (elk__llama_model_is_moe_layer (m, l), ==,
                         elk__llama_model_is_moe_layer (p, l));
      g_assert_cmpint (m->router_sigmoid, ==, p->router_sigmoid);
    }

  {
    g_autoptr (GError) error = NULL;
    g_autoptr (LlamaModel) m
        = elk__llama_model_new_from_hf_data (qwen2_moe_json, -1, "config.json",
                                             &error);
    guint64 d = 3584, attn = d * (28 + 8) * 128 + (28 + 8) * 128 + 28 * 128 * d;
    guint64 ffn = d * 64 + 64 * 3 * d * 2560 + 3 * d * 20480 + d;
    g_assert_no_error (error);
    g_assert_true (m->shared_gate);
    g_assert_cmpuint (elk__llama_model_count_params (m, 0), ==,
                      28 * (attn + 2 * d + ffn) + 2 * 151936 * d + d);
  }
  {
    /* decoder_sparse_step and mlp_only_layers pick the sparse layers. */
    g_autoptr (GError) error = NULL;
    g_autoptr (LlamaModel) m = elk__llama_model_new_from_hf_data (
        "{\"model_type\":\"qwen2_moe\",\"hidden_size\":64,"
        "\"intermediate_size\":128,\"num_attention_heads\":4,"
        "\"num_hidden_layers\":6,\"vocab_size\":100,"
        "\"max_position_embeddings\":256,\"num_experts\":4,"
        "\"num_experts_per_tok\":2,\"moe_intermediate_size\":32,"
        "\"decoder_sparse_step\":2,\"mlp_only_layers\":[3]}",
        -1, "config.json", &error);
    g_assert_no_error (error);
    /* (l + 1) % 2 == 0: layers 1, 3, 5, less 3. */
    for (guint l = 0; l < 6; l++)
      g_assert_cmpint (elk__llama_model_is_moe_layer (m, l), ==,
                       l == 1 || l == 5);
  }
}

/* The first four lines of every bad config: @type_ and a small dense
 * model.  The expected messages count their line numbers from here. */
#define SMALL_CONFIG(type_)                                                    \
  "{\"model_type\":\"" type_ "\",\"hidden_size\":64,\n"                        \
  "\"intermediate_size\":128,\"num_attention_heads\":4,\n"                     \
  "\"num_hidden_layers\":2,\"vocab_size\":100,\n"                              \
  "\"max_position_embeddings\":256,"

/* Each bad config is refused with the file, the line and the field. */
static void
test_hf_errors (void)
{
  static const struct
  {
    const char *json;
    const char *expect;
  } cases[] = {
    { SMALL_CONFIG ("mixtral") "\"num_local_experts\":4,\n"
                               "\"num_experts_per_tok\":5}",
      "c.json:5: 'num_experts_per_tok' must be between 1 and "
      "num_local_experts (4), got 5" },
    { SMALL_CONFIG ("mixtral") "\"num_local_experts\":4}",
      "c.json: required key 'num_experts_per_tok' is missing" },
    { SMALL_CONFIG ("qwen2_moe") "\"num_experts\":0,\n"
                                 "\"shared_expert_intermediate_size\":64}",
      "c.json:5: 'shared_expert_intermediate_size' must be 0 when "
      "num_experts is 0" },
    { SMALL_CONFIG ("qwen3_moe") "\"num_experts\":4,\n"
                                 "\"num_experts_per_tok\":2,\"moe_intermediate_"
                                 "size\":32,\n"
                                 "\"decoder_sparse_step\":0}",
      "c.json:6: 'decoder_sparse_step' must be between 1 and the layer "
      "count 2, got 0" },
    { SMALL_CONFIG ("qwen3_moe") "\"num_experts\":4,\n"
                                 "\"num_experts_per_tok\":2,\"moe_intermediate_"
                                 "size\":32,\n"
                                 "\"mlp_only_layers\":[0, 9]}",
      "c.json:6: 'mlp_only_layers' must be layer numbers from 0 to 1, "
      "got 9" },
    { SMALL_CONFIG ("qwen3_moe") "\"num_experts\":4,\n"
                                 "\"num_experts_per_tok\":2,\"moe_intermediate_"
                                 "size\":32,\n"
                                 "\"mlp_only_layers\":\"none\"}",
      "c.json:6: 'mlp_only_layers' must be an array of layer numbers, got "
      "a string" },
    { SMALL_CONFIG ("qwen3_moe") "\"num_experts\":4,\n"
                                 "\"num_experts_per_tok\":2}",
      "c.json: required key 'moe_intermediate_size' is missing" },
    /* DeepSeek: MLA ranks missing or zero, shared experts without routed
     * ones, layer rules out of range, an unknown scoring function. */
    { SMALL_CONFIG ("deepseek_v2") "\n"
                                   "\"qk_nope_head_dim\":16,\"qk_rope_head_"
                                   "dim\":8,\"v_head_dim\":16}",
      "c.json: required key 'kv_lora_rank' is missing" },
    { SMALL_CONFIG ("deepseek_v2") "\"kv_lora_rank\":0,\n"
                                   "\"qk_nope_head_dim\":16,\"qk_rope_head_"
                                   "dim\":8,\"v_head_dim\":16}",
      "c.json:4: 'kv_lora_rank' must be at least 1, got 0" },
    { SMALL_CONFIG ("deepseek_v3") "\"kv_lora_rank\":32,\n"
                                   "\"qk_nope_head_dim\":16,\"v_head_dim\":16}",
      "c.json: required key 'qk_rope_head_dim' is missing" },
    { SMALL_CONFIG ("deepseek_v2") "\"kv_lora_rank\":32,\n"
                                   "\"qk_nope_head_dim\":16,\"qk_rope_head_"
                                   "dim\":8,\"v_head_dim\":16,\n"
                                   "\"n_shared_experts\":2}",
      "c.json:6: 'n_shared_experts' must be 0 when there are no routed "
      "experts" },
    { SMALL_CONFIG (
          "deepseek_v2") "\"kv_lora_rank\":32,\n"
                         "\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,\"v_"
                         "head_dim\":16,\n"
                         "\"n_routed_experts\":4,\"num_experts_per_tok\":2,\n"
                         "\"moe_intermediate_size\":32,\"first_k_dense_"
                         "replace\":2}",
      "c.json:7: 'first_k_dense_replace' must be less than the layer count "
      "2, got 2" },
    { SMALL_CONFIG (
          "deepseek_v2") "\"kv_lora_rank\":32,\n"
                         "\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,\"v_"
                         "head_dim\":16,\n"
                         "\"n_routed_experts\":4,\"num_experts_per_tok\":2,\n"
                         "\"moe_intermediate_size\":32,\"moe_layer_freq\":0}",
      "c.json:7: 'moe_layer_freq' must be between 1 and the layer count 2, "
      "got 0" },
    { SMALL_CONFIG (
          "deepseek_v2") "\"kv_lora_rank\":32,\n"
                         "\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,\"v_"
                         "head_dim\":16,\n"
                         "\"n_routed_experts\":4,\"num_experts_per_tok\":2,\n"
                         "\"moe_intermediate_size\":32,\"scoring_func\":"
                         "\"relu\"}",
      "c.json:7: 'scoring_func' must be \"softmax\" or \"sigmoid\", got "
      "\"relu\"" },
  };
#undef SMALL_CONFIG
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (LlamaModel) m
          = elk__llama_model_new_from_hf_data (cases[i].json, -1, "c.json",
                                               &error);
      g_assert_null (m);
      g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID);
      if (!g_str_has_prefix (error->message, cases[i].expect))
        g_error ("case %u: got '%s', expected it to start with '%s'", i,
                 error->message, cases[i].expect);
    }
}

/* ------------------------------------------------------------------ */
/* GGUF                                                                 */
/* ------------------------------------------------------------------ */

/* A tiny GGUF model with experts: @arch's keys (extra ones from @extra,
 * "key=value" u32 pairs), and with @with_tensors the F16 tensors of a
 * Mixtral-style layout ("llama" with *_exps) or of deepseek2. */
static GBytes *
moe_gguf (const char *arch, const char *const *extra, gboolean with_tensors)
{
  GgufWriter *w = gw_new (FALSE);
  const guint64 d = 16, H = 2, F = 32, E = 4, V = 50;
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  GArray *shapes = g_array_new (FALSE, TRUE, sizeof (guint64) * 3);
  guint n_extra = extra != NULL ? g_strv_length ((char **) extra) : 0;
  guint64 offset = 0;
  GBytes *bytes;

#define T2(name, a, b)                                                         \
  do                                                                           \
    {                                                                          \
      guint64 s_[3] = { a, b, 1 };                                             \
      g_ptr_array_add (names, g_strdup (name));                                \
      g_array_append_val (shapes, s_);                                         \
    }                                                                          \
  while (0)
#define T3(name, a, b, c)                                                      \
  do                                                                           \
    {                                                                          \
      guint64 s_[3] = { a, b, c };                                             \
      g_ptr_array_add (names, g_strdup (name));                                \
      g_array_append_val (shapes, s_);                                         \
    }                                                                          \
  while (0)
  if (with_tensors)
    {
      T2 ("token_embd.weight", d, V);
      T2 ("output.weight", d, V);
      T2 ("output_norm.weight", d, 1);
      T2 ("blk.0.attn_norm.weight", d, 1);
      T2 ("blk.0.ffn_norm.weight", d, 1);
      T2 ("blk.0.ffn_gate_inp.weight", d, E);
      T3 ("blk.0.ffn_gate_exps.weight", d, F, E);
      T3 ("blk.0.ffn_up_exps.weight", d, F, E);
      T3 ("blk.0.ffn_down_exps.weight", F, d, E);
      if (g_str_equal (arch, "llama"))
        {
          T2 ("blk.0.attn_q.weight", d, d);
          T2 ("blk.0.attn_k.weight", d, d);
          T2 ("blk.0.attn_v.weight", d, d);
          T2 ("blk.0.attn_output.weight", d, d);
        }
      else
        {
          /* MLA: q (no rank), kv_a (8 + 4), kv_b (8 -> 2 x (8 + 8)). */
          T2 ("blk.0.attn_q.weight", d, H * 12);
          T2 ("blk.0.attn_kv_a_mqa.weight", d, 12);
          T2 ("blk.0.attn_kv_a_norm.weight", 8, 1);
          T2 ("blk.0.attn_kv_b.weight", 8, H * 16);
          T2 ("blk.0.attn_output.weight", H * 8, d);
          T2 ("blk.0.ffn_gate_shexp.weight", d, F);
          T2 ("blk.0.ffn_up_shexp.weight", d, F);
          T2 ("blk.0.ffn_down_shexp.weight", F, d);
        }
    }
#undef T2
#undef T3

  gw_header (w, 3, names->len, 8 + n_extra);
  gw_kv_str (w, "general.architecture", arch);
  {
    g_autofree char *k1 = g_strdup_printf ("%s.block_count", arch);
    g_autofree char *k2 = g_strdup_printf ("%s.embedding_length", arch);
    g_autofree char *k3 = g_strdup_printf ("%s.feed_forward_length", arch);
    g_autofree char *k4 = g_strdup_printf ("%s.attention.head_count", arch);
    g_autofree char *k5 = g_strdup_printf ("%s.context_length", arch);
    g_autofree char *k6 = g_strdup_printf ("%s.vocab_size", arch);
    g_autofree char *k7 = g_strdup_printf ("%s.expert_count", arch);
    gw_kv_u32 (w, k1, 1);
    gw_kv_u32 (w, k2, (guint32) d);
    gw_kv_u32 (w, k3, (guint32) F);
    gw_kv_u32 (w, k4, (guint32) H);
    gw_kv_u32 (w, k5, 256);
    gw_kv_u32 (w, k6, (guint32) V);
    gw_kv_u32 (w, k7, (guint32) E);
  }
  for (guint i = 0; i < n_extra; i++)
    {
      g_auto (GStrv) kv = g_strsplit (extra[i], "=", 2);
      g_autofree char *key = g_strdup_printf ("%s.%s", arch, kv[0]);
      gw_kv_u32 (w, key, (guint32) g_ascii_strtoull (kv[1], NULL, 10));
    }
  for (guint i = 0; i < names->len; i++)
    {
      const guint64 *s = &g_array_index (shapes, guint64, 3 * i);
      guint64 n = s[0] * s[1] * s[2];
      gw_tensor_info (w, g_ptr_array_index (names, i), s[2] > 1 ? 3 : 2, s,
                      1 /* F16 */, offset);
      offset += (n * 2 + 31) / 32 * 32;
    }
  gw_pad (w, 32);
  if (offset > 0)
    gw_zeros (w, offset);
  bytes = gw_bytes (w);
  gw_free (w);
  g_ptr_array_unref (names);
  g_array_unref (shapes);
  return bytes;
}

/* The model read from moe_gguf (@arch, @keys, @with_tensors) as file
 * @name, or NULL with @error set; the GGUF container itself must parse. */
static LlamaModel *
moe_gguf_model (const char *arch,
                const char *const *keys,
                gboolean with_tensors,
                const char *name,
                GError **error)
{
  g_autoptr (GBytes) bytes = moe_gguf (arch, keys, with_tensors);
  g_autoptr (GError) local_error = NULL;
  Gguf *gguf = elk__gguf_new_from_bytes (bytes, name, &local_error);
  LlamaModel *m;

  g_assert_no_error (local_error);
  m = elk__llama_model_new_from_gguf (gguf, error);
  if (m == NULL)
    elk__gguf_free (gguf);
  return m;
}

/* The decode graph of @m for one sequence and a KV cache of @seq, with the
 * file's tensor types. */
static ElkGraph *
build_file_types (const LlamaModel *m, guint64 seq)
{
  g_autoptr (GError) error = NULL;
  LlamaBuildOptions o;
  ElkGraph *g;

  elk__llama_build_options_init (&o);
  o.batch = 1;
  o.seq = seq;
  o.dtype = LLAMA_DTYPE_FILE;
  g = elk__llama_build_graph (m, &o, &error);
  g_assert_no_error (error);
  return g;
}

static void
test_gguf (void)
{
  static const char *const mixtral_keys[]
      = { "expert_used_count=2", "attention.head_count_kv=2", NULL };
  static const char *const ds_keys[]
      = { "expert_used_count=2",           "expert_shared_count=1",
          "expert_feed_forward_length=32", "attention.kv_lora_rank=8",
          "attention.key_length=12",       "attention.value_length=8",
          "rope.dimension_count=4",        NULL };
  const guint64 d = 16, F = 32, V = 50;

  {
    g_autoptr (GError) error = NULL;
    g_autoptr (LlamaModel) m
        = moe_gguf_model ("llama", mixtral_keys, TRUE, "mix.gguf", &error);
    g_autoptr (ElkGraph) g = NULL;
    g_assert_no_error (error);
    g_assert_cmpuint (m->n_experts, ==, 4);
    g_assert_cmpuint (m->n_experts_used, ==, 2);
    g_assert_cmpuint (m->expert_ffn, ==, F);
    g = build_file_types (m, 8);
    /* F16 everywhere: attention 4 d^2 (GQA 2 KV heads of 8 = d), norms,
     * router d x 4, two of the four experts (3 d F each), head, one
     * embedding row. */
    g_assert_cmpuint (llama_test_attr (g, "weight-bytes"), ==,
                      2
                          * (4 * d * d + 3 * d + d * 4 + 2 * 3 * d * F + d * V
                             + d));
  }
  {
    g_autoptr (GError) error = NULL;
    g_autoptr (LlamaModel) m
        = moe_gguf_model ("deepseek2", ds_keys, TRUE, "ds.gguf", &error);
    g_autoptr (ElkGraph) g = NULL;
    g_assert_no_error (error);
    g_assert_cmpuint (m->kv_lora_rank, ==, 8);
    g_assert_cmpuint (m->qk_nope, ==, 8);
    g_assert_cmpuint (m->qk_rope, ==, 4);
    g_assert_cmpuint (m->v_head_dim, ==, 8);
    g_assert_cmpuint (m->shared_ffn, ==, F);
    /* The parameter count is the sum of the tensors, and the one from
     * the hyper-parameters agrees. */
    g_assert_cmpuint (elk__llama_model_count_params (m, 0), ==,
                      2 * d * V + d + 2 * d + d * 4 + 4 * 3 * d * F + d * 24
                          + d * 12 + 8 + 8 * 32 + 16 * d + 3 * d * F);
    g = build_file_types (m, 10);
    /* The cache is the latent (8) and the RoPE key (4) per token. */
    g_assert_cmpuint (llama_test_attr (g, "kv-bytes"), ==, 10 * 12 * 2);
  }

  /* Bad expert metadata. */
  {
    const struct
    {
      const char *arch;
      const char *const *keys;
      const char *expect;
    } cases[] = {
      { "llama", NULL,
        "'llama.expert_count' is 4 but there is no "
        "'llama.expert_used_count' key" },
      { "llama", (const char *const[]){ "expert_used_count=5", NULL },
        "top-5 routing over 4 experts" },
      { "deepseek2",
        (const char *const[]){ "expert_used_count=2", "attention.key_length=12",
                               "attention.value_length=8",
                               "rope.dimension_count=4", NULL },
        "the metadata has no 'deepseek2.attention.kv_lora_rank' key" },
      { "deepseek2",
        (const char *const[]){
            "expert_used_count=2", "attention.kv_lora_rank=8",
            "attention.key_length=4", "attention.value_length=8",
            "rope.dimension_count=4", NULL },
        "deepseek2 attention needs attention.kv_lora_rank > 0 and "
        "attention.key_length (4) larger than rope.dimension_count (4)" },
      { "qwen2moe",
        (const char *const[]){ "expert_used_count=2",
                               "leading_dense_block_count=3", NULL },
        "'qwen2moe.leading_dense_block_count' is 3, more than the 1 "
        "blocks" },
    };
    for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
      {
        g_autoptr (GError) error = NULL;
        LlamaModel *m = moe_gguf_model (cases[i].arch, cases[i].keys, FALSE,
                                        "bad.gguf", &error);
        g_assert_null (m);
        g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID);
        if (!g_str_has_prefix (error->message, "bad.gguf: ")
            || strstr (error->message, cases[i].expect) == NULL)
          g_error ("case %u: got '%s', expected '%s'", i, error->message,
                   cases[i].expect);
      }
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/llama/moe/presets/params", test_preset_params);
  g_test_add_func ("/llama/moe/presets/active-conventions",
                   test_preset_active_conventions);
  g_test_add_func ("/llama/moe/decode/batch1", test_decode_batch1);
  g_test_add_func ("/llama/moe/decode/batch", test_decode_batch);
  g_test_add_func ("/llama/moe/decode/seed-and-forms", test_seed_and_forms);
  g_test_add_func ("/llama/moe/other-phases", test_other_phases);
  g_test_add_func ("/llama/moe/routing/uniform-formula", test_uniform_formula);
  g_test_add_func ("/llama/moe/routing/uniform-monte-carlo",
                   test_uniform_monte_carlo);
  g_test_add_func ("/llama/moe/routing/skewed-and-file", test_skewed_and_file);
  g_test_add_func ("/llama/moe/routing/errors", test_routing_errors);
  g_test_add_func ("/llama/moe/hf/configs", test_hf_configs);
  g_test_add_func ("/llama/moe/hf/errors", test_hf_errors);
  g_test_add_func ("/llama/moe/gguf", test_gguf);
  return g_test_run ();
}
