/* test-llama-graph.c: graphs of the presets, config.json files and GGUF
 * models, checked against counts computed here, independently of the
 * graph builder, from the published hyper-parameters (models.md).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <elk/elk-frontend.h>
#include <elk/elk-plugin.h>

#include "elk-llama-private.h"
#include "gguf-writer.h"
#include "llama-test-util.h"
#include "llama-expect.h"

GType elk_llama_frontend_get_type (void);

/* ------------------------------------------------------------------ */
/* Independent counts                                                   */
/* ------------------------------------------------------------------ */

static const Row rows[] = {
  { "llama-2-7b", 32, 4096, 32, 32, 128, 11008, 32000, 4096, TRUE, FALSE,
    FALSE, FALSE, FALSE, 0, 0, 0, 6.74e9 },
  { "llama-2-13b", 40, 5120, 40, 40, 128, 13824, 32000, 4096, TRUE, FALSE,
    FALSE, FALSE, FALSE, 0, 0, 0, 13.02e9 },
  { "llama-2-70b", 80, 8192, 64, 8, 128, 28672, 32000, 4096, TRUE, FALSE,
    FALSE, FALSE, FALSE, 0, 0, 0, 68.98e9 },
  { "llama-3-8b", 32, 4096, 32, 8, 128, 14336, 128256, 8192, TRUE, FALSE,
    FALSE, FALSE, FALSE, 0, 0, 0, 8.03e9 },
  { "llama-3-70b", 80, 8192, 64, 8, 128, 28672, 128256, 8192, TRUE, FALSE,
    FALSE, FALSE, FALSE, 0, 0, 0, 70.55e9 },
  { "llama-3.1-405b", 126, 16384, 128, 8, 128, 53248, 128256, 131072, TRUE,
    FALSE, FALSE, FALSE, FALSE, 0, 0, 0, 405.85e9 },
  { "gemma-2-27b", 46, 4608, 32, 16, 128, 36864, 256000, 8192, TRUE, FALSE,
    FALSE, TRUE, TRUE, 0, 4096, 2, 27.2e9 },
  { "opt-6.7b", 32, 4096, 32, 32, 128, 16384, 50272, 2048, FALSE, TRUE,
    TRUE, TRUE, FALSE, 2050, 0, 0, 6.66e9 },
  { "opt-13b", 40, 5120, 40, 40, 128, 20480, 50272, 2048, FALSE, TRUE, TRUE,
    TRUE, FALSE, 2050, 0, 0, 12.85e9 },
  { "opt-30b", 48, 7168, 56, 56, 128, 28672, 50272, 2048, FALSE, TRUE, TRUE,
    TRUE, FALSE, 2050, 0, 0, 29.97e9 },
  { "opt-66b", 64, 9216, 72, 72, 128, 36864, 50272, 2048, FALSE, TRUE, TRUE,
    TRUE, FALSE, 2050, 0, 0, 65.72e9 },
  { "gpt-3-175b", 96, 12288, 96, 96, 128, 49152, 50257, 2048, FALSE, TRUE,
    TRUE, TRUE, FALSE, 2048, 0, 0, 174.6e9 },
  { "mistral-7b-v0.1", 32, 4096, 32, 8, 128, 14336, 32000, 32768, TRUE,
    FALSE, FALSE, FALSE, FALSE, 0, 4096, 1, 7.24e9 },
};

static void
assert_close (double got, double want, double rel, const char *what)
{
  if (fabs (got - want) > rel * fabs (want))
    g_error ("%s: got %.17g, expected %.17g", what, got, want);
}

/* ------------------------------------------------------------------ */
/* Presets                                                              */
/* ------------------------------------------------------------------ */

static void
test_preset_params (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    {
      const Row *r = &rows[i];
      g_autoptr (GError) error = NULL;
      g_autoptr (LlamaModel) m
          = elk__llama_model_new_from_preset (r->preset, &error);
      Expected e;
      guint64 params;

      g_assert_no_error (error);
      params = elk__llama_model_count_params (m, 0);
      expect (r, LLAMA_PHASE_DECODE, 1, 16, 2, &e);
      g_assert_cmpuint (params, ==, e.params);
      assert_close ((double) params, r->published, 0.005, r->preset);
      g_test_message ("%s: %" G_GUINT64_FORMAT " parameters (models.md %.4g)",
                      r->preset, params, r->published);
    }
}

/* The encoder rows: parameter counts from models.md. */
static void
test_encoder_presets (void)
{
  static const struct
  {
    const char *preset;
    double published;
    guint64 exact;
  } enc[] = {
    /* BERT with pooler; ViT with the 1000-class head. */
    { "bert-base", 109.5e6, 109482240 },
    { "bert-large", 335.1e6, 335141888 },
    { "vit-b-16", 86.6e6, 86567656 },
    { "vit-l-16", 304.3e6, 304326632 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (enc); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (LlamaModel) m
          = elk__llama_model_new_from_preset (enc[i].preset, &error);
      g_autoptr (ElkGraph) g = NULL;
      LlamaBuildOptions o;

      g_assert_no_error (error);
      g_assert_cmpuint (elk__llama_model_count_params (m, 0), ==, enc[i].exact);
      assert_close ((double) enc[i].exact, enc[i].published, 0.005,
                    enc[i].preset);

      /* An encoder has nothing to decode. */
      elk__llama_build_options_init (&o);
      g = elk__llama_build_graph (m, &o, &error);
      g_assert_null (g);
      g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID);
      g_assert_nonnull (strstr (error->message, "phase=prefill"));
      g_clear_error (&error);

      o.phase = LLAMA_PHASE_PREFILL;
      o.batch = 2;
      g = elk__llama_build_graph (m, &o, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (llama_test_attr (g, "kv-bytes"), ==, 0);
      g_assert_cmpuint (elk_graph_get_hbm_bytes (g), ==,
                        llama_test_attr (g, "weight-bytes"));
      g_assert_cmpuint (llama_test_attr (g, "params"), ==, enc[i].exact);
    }
}

/* FLOPs and HBM bytes of every decoder row, in every phase. */
static void
test_preset_accounting (void)
{
  static const struct
  {
    LlamaPhase phase;
    guint64 b, S;
  } cases[] = {
    { LLAMA_PHASE_DECODE, 32, 2048 },
    { LLAMA_PHASE_DECODE, 3, 8192 },
    { LLAMA_PHASE_PREFILL, 2, 512 },
    { LLAMA_PHASE_TRAIN_FORWARD, 2, 256 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
      for (guint fuse = 0; fuse < 2; fuse++)
        {
          const Row *r = &rows[i];
          g_autoptr (ElkGraph) g = NULL;
          LlamaBuildOptions o;
          Expected e;
          g_autofree char *what = NULL;

          if (cases[c].S > r->ctx)
            continue;
          elk__llama_build_options_init (&o);
          o.phase = cases[c].phase;
          o.batch = cases[c].b;
          o.seq = cases[c].S;
          o.fuse_qkv = o.fuse_ffn = fuse;
          g = llama_test_build_preset (r->preset, &o);
          expect (r, o.phase, o.batch, o.seq, 2, &e);
          what = g_strdup_printf ("%s %s b%" G_GUINT64_FORMAT
                                  " s%" G_GUINT64_FORMAT " fuse=%u",
                                  r->preset,
                                  elk__llama_phase_to_string (o.phase), o.batch,
                                  o.seq, fuse);

          assert_close (llama_test_matmul_flops (g), e.mm_flops, 1e-12, what);
          assert_close (elk_graph_get_total_flops (g), e.flops, 1e-12, what);
          g_assert_cmpuint (llama_test_attr (g, "weight-bytes"), ==,
                            e.weight_bytes);
          g_assert_cmpuint (llama_test_attr (g, "kv-bytes"), ==, e.kv_bytes);
          /* Decode HBM bytes = weight bytes + b x seq x 2 x layers x KV
           * heads x head dim x bytes (windowed layers read the window). */
          g_assert_cmpuint (elk_graph_get_hbm_bytes (g), ==,
                            e.weight_bytes + e.kv_bytes);
          if (o.phase == LLAMA_PHASE_DECODE && r->window == 0)
            g_assert_cmpuint (e.kv_bytes, ==,
                              o.batch * o.seq * 2 * r->L * r->kv * r->hd * 2);
          g_assert_cmpuint (llama_test_attr (g, "params"), ==, e.params);
          g_assert_cmpuint (elk_graph_get_n_layers (g), ==, r->L);
          g_assert_cmpstr (elk_graph_get_attribute (g, "model"), ==,
                           r->preset);
          g_assert_cmpstr (elk_graph_get_attribute (g, "phase"), ==,
                           elk__llama_phase_to_string (o.phase));
          g_assert_cmpuint (llama_test_attr (g, "batch"), ==, o.batch);
          g_assert_cmpuint (llama_test_attr (g, "seq"), ==, o.seq);
        }
}

/* The data types change bytes, not FLOPs. */
static void
test_dtypes (void)
{
  const Row *r = &rows[2]; /* llama-2-70b, GQA */
  static const struct
  {
    LlamaDType dtype;
    guint elt;
  } types[] = {
    { LLAMA_DTYPE_FP16, 2 },
    { LLAMA_DTYPE_BF16, 2 },
    { LLAMA_DTYPE_FP32, 4 },
    { LLAMA_DTYPE_FILE, 2 }, /* presets store fp16 */
  };

  for (guint i = 0; i < G_N_ELEMENTS (types); i++)
    {
      g_autoptr (ElkGraph) g = NULL;
      LlamaBuildOptions o;
      Expected e;

      elk__llama_build_options_init (&o);
      o.dtype = types[i].dtype;
      o.batch = 16;
      o.seq = 4096;
      g = llama_test_build_preset (r->preset, &o);
      expect (r, o.phase, o.batch, o.seq, types[i].elt, &e);
      g_assert_cmpuint (elk_graph_get_hbm_bytes (g), ==,
                        e.weight_bytes + e.kv_bytes);
    }
}

/* Layers are numbered 0..L-1, everything else is -1, and the layers are
 * identical operator for operator. */
static void
test_layers (void)
{
  g_autoptr (ElkGraph) g = NULL;
  LlamaBuildOptions o;
  GPtrArray *sigs[3] = { NULL };
  guint first_layer_op = G_MAXUINT;

  elk__llama_build_options_init (&o);
  o.layers = 3;
  g = llama_test_build_preset ("llama-2-13b", &o);
  g_assert_cmpuint (elk_graph_get_n_layers (g), ==, 3);
  g_assert_cmpuint (llama_test_attr (g, "layers"), ==, 3);
  g_assert_cmpuint (llama_test_attr (g, "model-layers"), ==, 40);
  g_assert_cmpint (elk_graph_get_op (g, 0)->layer, ==, -1);
  g_assert_cmpint (elk_graph_get_op (g, 0)->kind, ==, ELK_OP_GATHER);
  g_assert_cmpint (
      elk_graph_get_op (g, elk_graph_get_n_ops (g) - 1)->layer, ==, -1);
  g_assert_cmpstr (elk_graph_get_op (g, elk_graph_get_n_ops (g) - 1)->name,
                   ==, "output");

  for (guint l = 0; l < 3; l++)
    sigs[l] = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    {
      const ElkOp *op = elk_graph_get_op (g, i);
      g_assert_cmpint (op->layer, >=, -1);
      g_assert_cmpint (op->layer, <, 3);
      if (op->layer >= 0)
        {
          g_ptr_array_add (sigs[op->layer], elk_op_dup_signature (g, op));
          first_layer_op = MIN (first_layer_op, i);
        }
      /* Operator origins: projections read weights, the decode attention
       * reads the KV cache, nothing else reads HBM. */
      for (guint k = 1; k < op->n_operands; k++)
        {
          const ElkTensor *t = elk_graph_get_tensor (g, op->tensors[k]);
          if (t->origin == ELK_TENSOR_ORIGIN_KV_CACHE)
            g_assert_cmpstr (op->type, ==, "batch-matmul");
        }
    }
  g_assert_cmpuint (sigs[0]->len, >, 20);
  for (guint l = 1; l < 3; l++)
    {
      g_assert_cmpuint (sigs[l]->len, ==, sigs[0]->len);
      for (guint i = 0; i < sigs[0]->len; i++)
        g_assert_cmpstr (sigs[l]->pdata[i], ==, sigs[0]->pdata[i]);
    }
  for (guint l = 0; l < 3; l++)
    g_ptr_array_unref (sigs[l]);

  /* More layers than the model has is an error, not a clamp. */
  {
    g_autoptr (GError) error = NULL;
    g_autoptr (LlamaModel) m
        = elk__llama_model_new_from_preset ("llama-2-7b", &error);
    g_autoptr (ElkGraph) g2 = NULL;
    o.layers = 33;
    g2 = elk__llama_build_graph (m, &o, &error);
    g_assert_null (g2);
    g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID);
  }
}

static const ElkTensor *
tensor (ElkGraph *g, const char *name)
{
  gint id = elk_graph_find_tensor (g, name);
  if (id < 0)
    g_error ("graph %s has no tensor %s", elk_graph_get_name (g), name);
  return elk_graph_get_tensor (g, (guint) id);
}

static void
assert_shape (ElkGraph *g, const char *name, guint n, const guint64 *shape)
{
  const ElkTensor *t = tensor (g, name);
  g_assert_cmpuint (t->n_dims, ==, n);
  for (guint i = 0; i < n; i++)
    g_assert_cmpuint (t->shape[i], ==, shape[i]);
}

#define SHAPE(g, name, ...)                                                   \
  do                                                                          \
    {                                                                         \
      const guint64 s_[] = { __VA_ARGS__ };                                   \
      assert_shape (g, name, G_N_ELEMENTS (s_), s_);                          \
    }                                                                         \
  while (0)

/* The artifact graphs' shapes (elk-paper.md §5.1). */
static void
test_paper_shapes (void)
{
  static const struct
  {
    const char *preset;
    guint L;
    guint64 d, qkv, o, up, down_in, heads, hd, V;
  } paper[] = {
    { "llama2-13b-paper", 40, 5120, 15360, 5120, 27648, 13824, 40, 128,
      32000 },
    { "gemma2-27b-paper", 46, 4608, 15360, 4608, 27648, 36864, 16, 128,
      256000 },
    { "opt-30b-paper", 48, 7168, 21504, 7168, 28672, 28672, 56, 128, 50272 },
    { "llama2-70b-paper", 80, 8192, 24576, 8192, 27648, 28672, 8, 128,
      32000 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (paper); i++)
    {
      g_autoptr (ElkGraph) g = NULL;
      LlamaBuildOptions o;
      guint64 kv;

      elk__llama_build_options_init (&o);
      o.batch = 32;
      o.seq = 2048;
      g = llama_test_build_preset (paper[i].preset, &o);
      SHAPE (g, "blk.0.attn_qkv.weight", paper[i].d, paper[i].qkv);
      SHAPE (g, "blk.7.attn_output.weight", paper[i].o, paper[i].d);
      if (g_str_has_prefix (paper[i].preset, "opt"))
        SHAPE (g, "blk.0.ffn_up.weight", paper[i].d, paper[i].up);
      else
        SHAPE (g, "blk.0.ffn_gate_up.weight", paper[i].d, paper[i].up);
      SHAPE (g, "blk.0.ffn_down.weight", paper[i].down_in, paper[i].d);
      SHAPE (g, "blk.0.k_cache", 32, paper[i].heads, 2048, paper[i].hd);
      SHAPE (g, "blk.0.v_cache", 32, paper[i].heads, 2048, paper[i].hd);
      SHAPE (g, "blk.0.attn_score.out", 32, paper[i].heads, 1, 2048);
      g_assert_cmpuint (elk_graph_get_n_layers (g), ==, paper[i].L);
      /* The LM head: d x vocab. */
      g_assert_cmpuint (tensor (g, "output.out")->shape[1], ==, paper[i].V);
      kv = 32ull * 2048 * 2 * paper[i].L * paper[i].heads * paper[i].hd * 2;
      g_assert_cmpuint (llama_test_attr (g, "kv-bytes"), ==, kv);
      /* Nothing splits at b32 s2048 with the artifact's split factors. */
      g_assert_cmpint (elk_graph_find_tensor (g, "blk.0.k_cache.0"), <, 0);
    }

  {
    /* ViT-Huge: 257 tokens per image, hidden 1280, 16 heads of 80. */
    g_autoptr (ElkGraph) g = NULL;
    LlamaBuildOptions o;
    elk__llama_build_options_init (&o);
    o.phase = LLAMA_PHASE_PREFILL;
    o.batch = 32;
    g = llama_test_build_preset ("vit-huge-paper", &o);
    SHAPE (g, "blk.0.attn_qkv.weight", 1280, 3840);
    SHAPE (g, "blk.0.ffn_up.weight", 1280, 5120);
    SHAPE (g, "blk.31.attn_score.out", 32, 16, 257, 257);
    SHAPE (g, "cls_head.weight", 1280, 1000);
    g_assert_cmpuint (llama_test_attr (g, "tokens"), ==, 32 * 257);
  }
}

static guint
count_ops_with_prefix (ElkGraph *g, const char *prefix)
{
  guint n = 0;
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    if (g_str_has_prefix (elk_graph_get_op (g, i)->name, prefix))
      n++;
  return n;
}

/* The artifact's operator splitting (split_factor, elk-paper.md §5.1). */
static void
test_paper_split (void)
{
  static const struct
  {
    const char *preset;
    LlamaPhase phase;
    guint64 b, S;
    guint pieces;        /* score batch-matmuls per layer */
    guint64 piece_s;     /* KV length of each piece, 0 = not checked */
  } cases[] = {
    /* 5888 / 3 = 1962 MB: 64 x 40 x 4096 x 128 elements is over, half of
     * it is not. */
    { "llama2-13b-paper", LLAMA_PHASE_DECODE, 64, 4096, 2, 2048 },
    { "llama2-13b-paper", LLAMA_PHASE_DECODE, 32, 4096, 1, 4096 },
    /* 5888 / 4 = 1472 MB: 64 x 56 x 4096 x 128 needs two halvings. */
    { "opt-30b-paper", LLAMA_PHASE_DECODE, 64, 4096, 4, 1024 },
    { "opt-30b-paper", LLAMA_PHASE_DECODE, 32, 4096, 2, 2048 },
    { "gemma2-27b-paper", LLAMA_PHASE_DECODE, 64, 4096, 1, 4096 },
    /* Training uses split_factor + 1: 40 x 2048 x 2048 x 128 over
     * 1472 MB of FP16 takes five halvings. */
    { "llama2-13b-paper", LLAMA_PHASE_TRAIN_FORWARD, 2, 2048, 32, 0 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (ElkGraph) g = NULL, off = NULL;
      LlamaBuildOptions o;

      elk__llama_build_options_init (&o);
      o.phase = cases[i].phase;
      o.batch = cases[i].b;
      o.seq = cases[i].S;
      o.layers = 2;
      g = llama_test_build_preset (cases[i].preset, &o);
      o.split_factor = 0;
      off = llama_test_build_preset (cases[i].preset, &o);

      g_assert_cmpuint (count_ops_with_prefix (g, "blk.0.attn_score"), ==,
                        cases[i].pieces);
      g_assert_cmpuint (count_ops_with_prefix (off, "blk.0.attn_score"), ==,
                        1);
      if (cases[i].pieces == 2)
        SHAPE (g, "blk.1.k_cache.1", cases[i].b,
               tensor (off, "blk.1.k_cache")->shape[1], cases[i].piece_s,
               128);
      if (cases[i].pieces == 4)
        SHAPE (g, "blk.1.v_cache.1.0", cases[i].b,
               tensor (off, "blk.1.v_cache")->shape[1], cases[i].piece_s,
               128);
      /* Splitting moves no extra bytes and does no extra work here: the
       * split dimension indexes the KV cache. */
      g_assert_cmpuint (elk_graph_get_hbm_bytes (g), ==,
                        elk_graph_get_hbm_bytes (off));
      assert_close (elk_graph_get_total_flops (g),
                    elk_graph_get_total_flops (off), 1e-12, "split flops");
      g_assert_cmpuint (llama_test_attr (g, "kv-bytes"), ==,
                        llama_test_attr (off, "kv-bytes"));
    }
}

/* ------------------------------------------------------------------ */
/* granularity=artifact                                                 */
/* ------------------------------------------------------------------ */

/* One layer's operators and how many of them read HBM. */
static void
layer_counts (ElkGraph *g, gint layer, guint *n_ops, guint *n_hbm,
              GString *flags)
{
  *n_ops = *n_hbm = 0;
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    {
      const ElkOp *op = elk_graph_get_op (g, i);
      gboolean hbm;
      if (op->layer != layer)
        continue;
      hbm = elk_op_get_hbm_bytes (g, op) > 0;
      (*n_ops)++;
      *n_hbm += hbm ? 1 : 0;
      if (flags != NULL)
        g_string_append_c (flags, hbm ? '1' : '0');
    }
}

static ElkGraph *
build_granularity (const char *preset,
                   guint64 b,
                   guint64 S,
                   LlamaGranularity granularity,
                   guint layers)
{
  LlamaBuildOptions o;

  elk__llama_build_options_init (&o);
  o.batch = b;
  o.seq = S;
  o.layers = layers;
  o.granularity = granularity;
  return llama_test_build_preset (preset, &o);
}

static void
test_granularity (void)
{
  /* Which operators of one layer read HBM in the artifact's
   * TExpr_llama2-13-b64.json (the b64 graph its s4096 run wrote, with the
   * two attention batch-matmuls split in two): a '1' for an operator with
   * an input not marked "ignored", operator by operator from the norm's
   * Multiply to the FFN residual Add.  Transcribed from that file. */
  static const char artifact_b64_s4096[]
      = "0001011" "1" "00100011" "1100011" "11" "010000" "1111"
        "0001011" "1" "0000111";
  static const struct
  {
    const char *preset;
    guint64 b, S;
    guint ops, hbm;            /* per layer, artifact granularity */
  } cases[] = {
    /* 48 operators per layer (Table 2: 1,928 for Llama2-13B's 40), 23 of
     * them read HBM; elk's own graph has 24 and 8. */
    { "llama2-13b-paper", 64, 2048, 48, 23 },
    { "llama2-13b-paper", 64, 4096, 50, 25 },
    { "gemma2-27b-paper", 64, 2048, 48, 23 },
    { "llama2-70b-paper", 64, 2048, 48, 23 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (ElkGraph) elk = NULL, art = NULL;
      g_autoptr (GString) flags = g_string_new (NULL);
      guint n_ops, n_hbm, n_ops1, n_hbm1;
      guint64 M = cases[i].b, spill = 0, d, wqkv, he, down_in, hkv_e;
      const ElkTensor *t;

      elk = build_granularity (cases[i].preset, cases[i].b, cases[i].S,
                               LLAMA_GRANULARITY_ELK, 2);
      art = build_granularity (cases[i].preset, cases[i].b, cases[i].S,
                               LLAMA_GRANULARITY_ARTIFACT, 2);
      layer_counts (elk, 0, &n_ops, &n_hbm, NULL);
      g_assert_cmpuint (n_ops, ==, cases[i].ops - 24);
      g_assert_cmpuint (n_hbm, ==, cases[i].hbm - 15);
      layer_counts (art, 0, &n_ops, &n_hbm, flags);
      layer_counts (art, 1, &n_ops1, &n_hbm1, NULL);
      g_test_message ("%s b%" G_GUINT64_FORMAT " s%" G_GUINT64_FORMAT
                      ": %u ops, %u read HBM: %s", cases[i].preset,
                      cases[i].b, cases[i].S, n_ops, n_hbm, flags->str);
      g_assert_cmpuint (n_ops, ==, cases[i].ops);
      g_assert_cmpuint (n_hbm, ==, cases[i].hbm);
      g_assert_cmpuint (n_ops1, ==, n_ops);
      g_assert_cmpuint (n_hbm1, ==, n_hbm);
      if (cases[i].ops == 50)
        g_assert_cmpstr (flags->str, ==, artifact_b64_s4096);
      g_assert_cmpstr (elk_graph_get_attribute (art, "granularity"), ==,
                       "artifact");
      g_assert_null (elk_graph_get_attribute (elk, "granularity"));

      /* The spilled copies, computed here: per layer the norms' re-read
       * inputs and the residual adds' (4 x [M, d]), the Q Slice's QKV
       * output, RoPE's Concat and x cos for Q and K, and the FFN's up
       * half ([M, down width]); then output_norm's input. */
      d = llama_test_attr (art, "hidden");
      t = tensor (art, "blk.0.attn_qkv.weight");
      wqkv = t->shape[1];
      he = llama_test_attr (art, "heads") * llama_test_attr (art, "head-dim");
      hkv_e = llama_test_attr (art, "kv-heads")
              * llama_test_attr (art, "head-dim");
      t = tensor (art, "blk.0.ffn_down.weight");
      down_in = t->shape[0];
      spill = 2 * (4 * M * d + M * wqkv + 2 * M * he + 2 * M * hkv_e
                   + M * down_in);
      g_assert_cmpuint (llama_test_attr (art, "spill-bytes"), ==,
                        2 * spill + 2 * M * d);
      /* Constants: two epsilons, four RoPE tables of [1, head_dim] and
       * the [b, 1, 1] mask per layer, and output_norm's epsilon. */
      g_assert_cmpuint (llama_test_attr (art, "constant-bytes"), ==,
                        2
                            * (2
                                   * (2 + 4 * llama_test_attr (art, "head-dim")
                                      + M)
                               + 1));
      /* Weights and the KV cache are the same tensors; HBM traffic grows
       * by exactly the spills and the constants. */
      g_assert_cmpuint (llama_test_attr (art, "kv-bytes"), ==,
                        llama_test_attr (elk, "kv-bytes"));
      g_assert_cmpuint (llama_test_attr (art, "weight-bytes"), ==,
                        llama_test_attr (elk, "weight-bytes")
                            + llama_test_attr (art, "constant-bytes"));
      g_assert_cmpuint (elk_graph_get_hbm_bytes (art), ==,
                        elk_graph_get_hbm_bytes (elk)
                            + llama_test_attr (art, "spill-bytes")
                            + llama_test_attr (art, "constant-bytes"));
    }

  /* The default is elk's graph: 967 operators for Llama2-13B (24 per
   * layer), 323 of them reading HBM (docs/compiler.md). */
  {
    g_autoptr (ElkGraph) g = NULL;
    LlamaBuildOptions o;
    guint hbm = 0;

    elk__llama_build_options_init (&o);
    g_assert_cmpint (o.granularity, ==, LLAMA_GRANULARITY_ELK);
    o.batch = 64;
    o.seq = 2048;
    g = llama_test_build_preset ("llama2-13b-paper", &o);
    for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
      hbm += elk_op_get_hbm_bytes (g, elk_graph_get_op (g, i)) > 0;
    g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 967);
    g_assert_cmpuint (hbm, ==, 323);
  }
}

/* granularity=artifact is defined for Llama-structured decode graphs
 * only; anything else is refused with the reason. */
static void
test_granularity_errors (void)
{
  static const struct
  {
    const char *preset;
    LlamaPhase phase;
    gboolean fuse_qkv;
    const char *reason;
  } cases[] = {
    { "opt-30b-paper", LLAMA_PHASE_DECODE, TRUE, "LayerNorm" },
    { "llama2-13b-paper", LLAMA_PHASE_PREFILL, TRUE, "not decode" },
    { "llama2-13b-paper", LLAMA_PHASE_DECODE, FALSE, "fuse-qkv" },
    { "gemma-2-27b", LLAMA_PHASE_DECODE, TRUE, "post-norms" },
    { "bert-base", LLAMA_PHASE_PREFILL, TRUE, "not decode" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (LlamaModel) m = NULL;
      g_autoptr (ElkGraph) g = NULL;
      LlamaBuildOptions o;

      m = elk__llama_model_new_from_preset (cases[i].preset, &error);
      g_assert_no_error (error);
      elk__llama_build_options_init (&o);
      o.phase = cases[i].phase;
      o.fuse_qkv = cases[i].fuse_qkv;
      o.layers = 1;
      o.granularity = LLAMA_GRANULARITY_ARTIFACT;
      g = elk__llama_build_graph (m, &o, &error);
      g_assert_null (g);
      g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID);
      g_assert_nonnull (strstr (error->message, "granularity=artifact"));
      g_assert_nonnull (strstr (error->message, cases[i].reason));
    }
}

/* ------------------------------------------------------------------ */
/* config.json                                                          */
/* ------------------------------------------------------------------ */

static const char llama2_7b_json[]
    = "{\n"
      "  \"architectures\": [\"LlamaForCausalLM\"],\n"
      "  \"bos_token_id\": 1,\n"
      "  \"eos_token_id\": 2,\n"
      "  \"hidden_act\": \"silu\",\n"
      "  \"hidden_size\": 4096,\n"
      "  \"initializer_range\": 0.02,\n"
      "  \"intermediate_size\": 11008,\n"
      "  \"max_position_embeddings\": 4096,\n"
      "  \"model_type\": \"llama\",\n"
      "  \"num_attention_heads\": 32,\n"
      "  \"num_hidden_layers\": 32,\n"
      "  \"num_key_value_heads\": 32,\n"
      "  \"pretraining_tp\": 1,\n"
      "  \"rms_norm_eps\": 1e-05,\n"
      "  \"rope_scaling\": null,\n"
      "  \"tie_word_embeddings\": false,\n"
      "  \"torch_dtype\": \"float16\",\n"
      "  \"use_cache\": true,\n"
      "  \"vocab_size\": 32000\n"
      "}\n";

static LlamaModel *
hf (const char *json, GError **error)
{
  return elk__llama_model_new_from_hf_data (json, -1, "config.json", error);
}

static void
test_hf_configs (void)
{
  static const struct
  {
    const char *json;
    const char *preset;  /* a preset with the same numbers, or NULL */
    guint64 params;      /* exact count when known */
  } cases[] = {
    { llama2_7b_json, "llama-2-7b", 6738415616 },
    { "{\"model_type\":\"mistral\",\"hidden_size\":4096,"
      "\"intermediate_size\":14336,\"max_position_embeddings\":32768,"
      "\"num_attention_heads\":32,\"num_hidden_layers\":32,"
      "\"num_key_value_heads\":8,\"rms_norm_eps\":1e-05,"
      "\"rope_theta\":10000.0,\"sliding_window\":4096,"
      "\"tie_word_embeddings\":false,\"torch_dtype\":\"bfloat16\","
      "\"vocab_size\":32000}",
      "mistral-7b-v0.1", 7241732096 },
    { "{\"model_type\":\"opt\",\"hidden_size\":7168,\"ffn_dim\":28672,"
      "\"num_attention_heads\":56,\"num_hidden_layers\":48,"
      "\"max_position_embeddings\":2048,\"vocab_size\":50272,"
      "\"word_embed_proj_dim\":7168,\"do_layer_norm_before\":true,"
      "\"enable_bias\":true,\"torch_dtype\":\"float16\"}",
      "opt-30b", 0 },
    { "{\"model_type\":\"gemma2\",\"hidden_size\":4608,"
      "\"intermediate_size\":36864,\"num_attention_heads\":32,"
      "\"num_key_value_heads\":16,\"head_dim\":128,"
      "\"num_hidden_layers\":46,\"max_position_embeddings\":8192,"
      "\"vocab_size\":256000,\"sliding_window\":4096,"
      "\"rms_norm_eps\":1e-06,\"torch_dtype\":\"float32\"}",
      "gemma-2-27b", 0 },
    /* GPT-2 small: 124,439,808 parameters. */
    { "{\"model_type\":\"gpt2\",\"n_embd\":768,\"n_layer\":12,\"n_head\":12,"
      "\"n_positions\":1024,\"n_ctx\":1024,\"vocab_size\":50257,"
      "\"n_inner\":null,\"layer_norm_epsilon\":1e-05}",
      NULL, 124439808 },
    /* Falcon-7B: multi-query, parallel attention; 6,921,720,704. */
    { "{\"model_type\":\"falcon\",\"hidden_size\":4544,"
      "\"num_attention_heads\":71,\"num_hidden_layers\":32,"
      "\"multi_query\":true,\"parallel_attn\":true,\"bias\":false,"
      "\"new_decoder_architecture\":false,\"vocab_size\":65024,"
      "\"layer_norm_epsilon\":1e-05}",
      NULL, 6921720704 },
    { "{\"model_type\":\"bert\",\"hidden_size\":768,\"num_hidden_layers\":12,"
      "\"num_attention_heads\":12,\"intermediate_size\":3072,"
      "\"max_position_embeddings\":512,\"type_vocab_size\":2,"
      "\"vocab_size\":30522,\"layer_norm_eps\":1e-12}",
      "bert-base", 109482240 },
    { "{\"model_type\":\"vit\",\"hidden_size\":768,\"num_hidden_layers\":12,"
      "\"num_attention_heads\":12,\"intermediate_size\":3072,"
      "\"image_size\":224,\"patch_size\":16,\"num_channels\":3,"
      "\"num_labels\":1000}",
      "vit-b-16", 86567656 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (LlamaModel) m = hf (cases[i].json, &error);
      guint64 params;

      g_assert_no_error (error);
      g_assert_nonnull (m);
      params = elk__llama_model_count_params (m, 0);
      if (cases[i].params)
        g_assert_cmpuint (params, ==, cases[i].params);
      if (cases[i].preset != NULL)
        {
          g_autoptr (LlamaModel) p
              = elk__llama_model_new_from_preset (cases[i].preset, &error);
          g_autoptr (ElkGraph) g1 = NULL, g2 = NULL;
          LlamaBuildOptions o;

          g_assert_no_error (error);
          g_assert_cmpuint (params, ==, elk__llama_model_count_params (p, 0));
          elk__llama_build_options_init (&o);
          if (p->encoder)
            o.phase = LLAMA_PHASE_PREFILL;
          o.batch = 4;
          o.layers = 2;
          g1 = elk__llama_build_graph (m, &o, &error);
          g_assert_no_error (error);
          g2 = elk__llama_build_graph (p, &o, &error);
          g_assert_no_error (error);
          g_assert_cmpuint (elk_graph_get_n_ops (g1), ==,
                            elk_graph_get_n_ops (g2));
          g_assert_cmpuint (elk_graph_get_hbm_bytes (g1), ==,
                            elk_graph_get_hbm_bytes (g2));
          g_assert_cmpfloat (elk_graph_get_total_flops (g1), ==,
                             elk_graph_get_total_flops (g2));
        }
    }

  {
    /* dtype=file takes torch_dtype. */
    g_autoptr (GError) error = NULL;
    g_autoptr (LlamaModel) m = hf (cases[3].json, &error);
    g_autoptr (ElkGraph) g = NULL;
    LlamaBuildOptions o;
    elk__llama_build_options_init (&o);
    o.dtype = LLAMA_DTYPE_FILE;
    o.layers = 1;
    g = elk__llama_build_graph (m, &o, &error);
    g_assert_no_error (error);
    g_assert_cmpint (tensor (g, "blk.0.attn_qkv.weight")->dtype, ==,
                     ELK_DTYPE_F32);
  }
}

static void
test_hf_errors (void)
{
  static const struct
  {
    const char *json;
    const char *needle;
  } bad[] = {
    { "{\"model_type\": \"llama\"}", "'num_hidden_layers' is missing" },
    { "{\n\"model_type\": \"llama\",\n\"num_hidden_layers\": \"32\"\n}",
      "config.json:3: 'num_hidden_layers' must be a non-negative integer, "
      "got a string" },
    { "{\n\"model_type\": \"mamba\"\n}", "config.json:2: model_type 'mamba'" },
    { "{\"model_type\": \"llama\",", "config.json:" },
    { "[1, 2]", "expected a JSON object" },
    { "{\"hidden_size\": 4096}", "'model_type' is missing" },
    { "{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,"
      "\"num_attention_heads\":6,\"num_key_value_heads\":4,"
      "\"intermediate_size\":8,\"vocab_size\":10,"
      "\"max_position_embeddings\":16}",
      "not a multiple" },
    { "{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,"
      "\"num_attention_heads\":4,\"intermediate_size\":8,\"vocab_size\":10,"
      "\"max_position_embeddings\":16,\"torch_dtype\":\"int4\"}",
      "torch_dtype" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (LlamaModel) m = hf (bad[i].json, &error);
      g_assert_null (m);
      g_assert_nonnull (error);
      if (strstr (error->message, bad[i].needle) == NULL)
        g_error ("case %u: \"%s\" does not contain \"%s\"", i, error->message,
                 bad[i].needle);
    }
}

/* ------------------------------------------------------------------ */
/* GGUF models with real tensor types                                   */
/* ------------------------------------------------------------------ */

static void
test_gguf_tiny_graph (void)
{
  g_autofree char *path = llama_test_corpus_file ("llama-2-tiny-random.gguf");
  g_autoptr (GError) error = NULL;
  g_autoptr (LlamaModel) m = NULL;
  g_autoptr (ElkGraph) g = NULL;
  LlamaBuildOptions o;
  guint64 weights, kv;

  if (path == NULL)
    return;
  m = elk__llama_model_new_from_file (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (m->vocab, ==, 32000); /* from the token array */
  g_assert_cmpuint (elk__llama_model_count_params (m, 0), ==, 513048);

  elk__llama_build_options_init (&o);
  o.dtype = LLAMA_DTYPE_FILE;
  o.batch = 4;
  o.seq = 100;
  g = elk__llama_build_graph (m, &o, &error);
  g_assert_no_error (error);
  /* F16 projections (4 x 8 x 8 + 3 x 8 x 32) x 2, F32 norms 3 x 8 x 4,
   * the F16 head 8 x 32000 x 2, and 4 gathered F16 rows of 8. */
  weights = (4 * 64 + 3 * 256) * 2 + 3 * 8 * 4 + 8 * 32000 * 2 + 4 * 8 * 2;
  kv = 4 * 100 * 2 * 1 * 2 * 4 * 2;
  g_assert_cmpuint (llama_test_attr (g, "weight-bytes"), ==, weights);
  g_assert_cmpuint (llama_test_attr (g, "kv-bytes"), ==, kv);
  g_assert_cmpuint (elk_graph_get_hbm_bytes (g), ==, weights + kv);
  g_assert_cmpint (tensor (g, "blk.0.attn_norm.weight")->dtype, ==,
                   ELK_DTYPE_F32);
  g_assert_cmpint (tensor (g, "blk.0.attn_qkv.weight")->dtype, ==,
                   ELK_DTYPE_F16);
  g_assert_cmpuint (llama_test_attr (g, "params"), ==, 513048);
}

/* A Q4_K model streams Q4_K bytes. */
static void
test_gguf_quantized (void)
{
  const guint64 d = 256, ffn = 512, vocab = 1024, kvd = 128;
  struct
  {
    const char *name;
    guint64 ne0, ne1;
    guint32 type;
    guint64 bytes;
  } t[32];
  guint n = 0;
  GgufWriter *w = gw_new (FALSE);
  guint64 offset = 0;
  g_autofree char *dir = NULL, *path = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (LlamaModel) m = NULL;
  g_autoptr (ElkGraph) g = NULL;
  LlamaBuildOptions o;
  guint64 expected;

#define T(name_, ne0_, ne1_, type_, bytes_)                                   \
  t[n++] = (__typeof__ (t[0])) { name_, ne0_, ne1_, type_, bytes_ }
  /* Q4_K: 144 bytes per 256; Q6_K: 210 bytes per 256. */
  T ("token_embd.weight", d, vocab, 12, vocab * 144);
  for (guint l = 0; l < 2; l++)
    {
      const char *roles[] = { "attn_q", "attn_k", "attn_v", "attn_output",
                              "ffn_gate", "ffn_up", "ffn_down", "attn_norm",
                              "ffn_norm" };
      guint64 ne1[] = { d, kvd, kvd, d, ffn, ffn, d, 1, 1 };
      guint64 ne0[] = { d, d, d, d, d, d, ffn, d, d };
      for (guint k = 0; k < G_N_ELEMENTS (roles); k++)
        {
          char *name = g_strdup_printf ("blk.%u.%s.weight", l, roles[k]);
          if (k >= 7)
            T (name, d, 1, 0, d * 4);
          else
            T (name, ne0[k], ne1[k], 12, ne0[k] / 256 * ne1[k] * 144);
        }
    }
  T ("output_norm.weight", d, 1, 0, d * 4);
  T ("output.weight", d, vocab, 14, vocab * 210);
#undef T

  gw_header (w, 3, n, 8);
  gw_kv_str (w, "general.architecture", "llama");
  gw_kv_u32 (w, "llama.block_count", 2);
  gw_kv_u32 (w, "llama.embedding_length", (guint32) d);
  gw_kv_u32 (w, "llama.feed_forward_length", (guint32) ffn);
  gw_kv_u32 (w, "llama.attention.head_count", 4);
  gw_kv_u32 (w, "llama.attention.head_count_kv", 2);
  gw_kv_u32 (w, "llama.context_length", 512);
  gw_kv_f32 (w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
  for (guint i = 0; i < n; i++)
    {
      guint64 dims[2] = { t[i].ne0, t[i].ne1 };
      gw_tensor_info (w, t[i].name, t[i].ne1 == 1 ? 1 : 2, dims, t[i].type,
                      offset);
      offset += t[i].bytes; /* every size is a multiple of 32 */
    }
  gw_pad (w, 32);
  gw_zeros (w, offset);

  dir = g_dir_make_tmp ("elk-llama-XXXXXX", &error);
  g_assert_no_error (error);
  path = g_build_filename (dir, "q4k.gguf", NULL);
  g_assert_true (g_file_set_contents (path, (const char *) w->buf->data,
                                      w->buf->len, &error));
  m = elk__llama_model_new_from_file (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (m->vocab, ==, vocab); /* from token_embd.weight */
  g_assert_cmpuint (m->head_dim, ==, 64);

  elk__llama_build_options_init (&o);
  o.dtype = LLAMA_DTYPE_FILE;
  o.batch = 4;
  o.seq = 64;
  g = elk__llama_build_graph (m, &o, &error);
  g_assert_no_error (error);
  expected = 0;
  for (guint i = 1; i < n; i++)
    expected += t[i].bytes;
  expected += 4 * 144; /* 4 gathered Q4_K rows of 256 */
  g_assert_cmpuint (llama_test_attr (g, "weight-bytes"), ==, expected);
  g_assert_cmpint (tensor (g, "blk.0.attn_qkv.weight")->dtype, ==,
                   ELK_DTYPE_QUANTIZED);
  g_assert_cmpuint (elk_graph_get_hbm_bytes (g), ==,
                    expected + 4ull * 64 * 2 * 2 * 2 * 64 * 2);

  /* Unfused, the same bytes. */
  o.fuse_qkv = o.fuse_ffn = FALSE;
  g_clear_pointer (&g, elk_graph_unref);
  g = elk__llama_build_graph (m, &o, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (llama_test_attr (g, "weight-bytes"), ==, expected);

  for (guint i = 0; i < n; i++)
    if (g_str_has_prefix (t[i].name, "blk."))
      g_free ((char *) t[i].name);
  g_unlink (path);
  g_rmdir (dir);
  gw_free (w);
}

/* ------------------------------------------------------------------ */
/* The GObject frontend                                                 */
/* ------------------------------------------------------------------ */

static void
test_frontend (void)
{
  GType type = elk_llama_frontend_get_type ();
  g_autoptr (GError) error = NULL;
  GParamSpec *pspec;
  GObject *obj;
  ElkGraph *g;

  g_assert_true (g_type_is_a (type, ELK_TYPE_FRONTEND));
  {
    GTypeClass *klass = g_type_class_ref (type);
    pspec = g_object_class_find_property (G_OBJECT_CLASS (klass), "model");
    g_type_class_unref (klass);
  }
  g_assert_nonnull (pspec);
  g_assert_true (pspec->flags & ELK_PARAM_PATH);
  /* granularity: an enum, so an experiment's unknown value is refused by
   * the parameter parser with the list of values; elk by default. */
  {
    GTypeClass *klass = g_type_class_ref (type);
    GParamSpec *gs = g_object_class_find_property (G_OBJECT_CLASS (klass),
                                                   "granularity");
    GEnumClass *values;
    g_assert_nonnull (gs);
    g_assert_true (G_IS_PARAM_SPEC_ENUM (gs));
    values = G_PARAM_SPEC_ENUM (gs)->enum_class;
    g_assert_cmpuint (values->n_values, ==, 2);
    g_assert_nonnull (g_enum_get_value_by_nick (values, "elk"));
    g_assert_nonnull (g_enum_get_value_by_nick (values, "artifact"));
    g_assert_cmpint (G_PARAM_SPEC_ENUM (gs)->default_value, ==,
                     LLAMA_GRANULARITY_ELK);
    g_type_class_unref (klass);
  }

  /* Neither model nor preset. */
  obj = g_object_new (type, NULL);
  g = elk_frontend_load (ELK_FRONTEND (obj), &error);
  g_assert_null (g);
  g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "llama2-13b-paper"));
  g_clear_error (&error);
  /* Both. */
  g_object_set (obj, "model", "x.gguf", "preset", "llama-2-7b", NULL);
  g = elk_frontend_load (ELK_FRONTEND (obj), &error);
  g_assert_null (g);
  g_assert_nonnull (strstr (error->message, "both"));
  g_clear_error (&error);
  /* Unknown preset: the message lists the known ones. */
  g_object_set (obj, "model", NULL, "preset", "llama-9", NULL);
  g = elk_frontend_load (ELK_FRONTEND (obj), &error);
  g_assert_null (g);
  g_assert_nonnull (strstr (error->message, "unknown preset 'llama-9'"));
  g_assert_nonnull (strstr (error->message, "vit-huge-paper"));
  g_clear_error (&error);
  /* A missing file. */
  g_object_set (obj, "model", "/nonexistent/model.gguf", "preset", NULL, NULL);
  g = elk_frontend_load (ELK_FRONTEND (obj), &error);
  g_assert_null (g);
  g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_IO);
  g_clear_error (&error);

  /* A working one, set through the properties. */
  g_object_set (obj, "model", NULL, "preset", "llama2-70b-paper", "phase",
                LLAMA_PHASE_DECODE, "batch", 16, "seq", 4096, "layers", 2,
                "dtype", LLAMA_DTYPE_FP16, NULL);
  g = elk_frontend_load (ELK_FRONTEND (obj), &error);
  g_assert_no_error (error);
  g_assert_cmpuint (elk_graph_get_n_layers (g), ==, 2);
  g_assert_cmpuint (llama_test_attr (g, "kv-bytes"), ==,
                    16ull * 4096 * 2 * 2 * 8 * 128 * 2);
  g_assert_cmpuint (llama_test_attr (g, "split-factor"), ==, 3);
  elk_graph_unref (g);
  /* granularity=artifact through the property. */
  g_object_set (obj, "granularity", LLAMA_GRANULARITY_ARTIFACT, NULL);
  g = elk_frontend_load (ELK_FRONTEND (obj), &error);
  g_assert_no_error (error);
  g_assert_cmpstr (elk_graph_get_attribute (g, "granularity"), ==,
                   "artifact");
  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 1 + 2 * 48 + 8);
  elk_graph_unref (g);
  g_object_unref (obj);
}

/* config.json limits: nesting (json-glib recurses once per level), size,
 * and keys given twice. */
static void
test_hf_limits (void)
{
  const char *base = "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, "
                     "\"hidden_size\": 64, \"num_attention_heads\": 4, "
                     "\"intermediate_size\": 128, \"vocab_size\": 100, "
                     "\"max_position_embeddings\": 256";
  g_autoptr (GError) error = NULL;
  g_autoptr (GString) deep = g_string_new (base);
  g_autofree char *nested = NULL, *dup = NULL;
  LlamaLimits limits;
  LlamaModel *m;

  /* A million levels would overflow the stack without the check. */
  g_string_append (deep, ", \"x\": ");
  for (guint i = 0; i < 1000000; i++)
    g_string_append_c (deep, '[');
  for (guint i = 0; i < 1000000; i++)
    g_string_append_c (deep, ']');
  g_string_append (deep, "}");
  m = elk__llama_model_new_from_hf_data (deep->str, -1, "deep.json", &error);
  g_assert_null (m);
  g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_LIMIT);
  g_assert_nonnull (strstr (error->message, "'max-json-depth'"));
  g_clear_error (&error);

  /* Brackets inside strings do not count; depth 3 passes a limit of 3. */
  nested = g_strdup_printf ("%s, \"s\": \"[[[[\\\"[[\", "
                            "\"o\": {\"a\": [1]}}",
                            base);
  elk__llama_limits_init (&limits);
  limits.max_json_depth = 3;
  m = elk__llama_model_new_from_hf_data_with_limits (nested, -1, "n.json",
                                                     &limits, &error);
  g_assert_no_error (error);
  elk__llama_model_free (m);
  limits.max_json_depth = 2;
  m = elk__llama_model_new_from_hf_data_with_limits (nested, -1, "n.json",
                                                     &limits, &error);
  g_assert_null (m);
  g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_LIMIT);
  g_clear_error (&error);

  elk__llama_limits_init (&limits);
  limits.max_config_size = 100;
  m = elk__llama_model_new_from_hf_data_with_limits (nested, -1, "n.json",
                                                     &limits, &error);
  g_assert_null (m);
  g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_LIMIT);
  g_assert_nonnull (strstr (error->message, "'max-config-size'"));
  g_clear_error (&error);

  dup = g_strdup_printf ("%s,\n\"hidden_size\": 128}", base);
  m = elk__llama_model_new_from_hf_data (dup, -1, "dup.json", &error);
  g_assert_null (m);
  g_assert_error (error, LLAMA_ERROR, LLAMA_ERROR_FORMAT);
  g_assert_nonnull (strstr (error->message, "dup.json:2: key 'hidden_size' "
                                            "appears twice"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/llama/presets/params", test_preset_params);
  g_test_add_func ("/llama/presets/encoders", test_encoder_presets);
  g_test_add_func ("/llama/presets/accounting", test_preset_accounting);
  g_test_add_func ("/llama/presets/dtypes", test_dtypes);
  g_test_add_func ("/llama/presets/layers", test_layers);
  g_test_add_func ("/llama/paper/shapes", test_paper_shapes);
  g_test_add_func ("/llama/paper/split", test_paper_split);
  g_test_add_func ("/llama/paper/granularity", test_granularity);
  g_test_add_func ("/llama/paper/granularity-errors",
                   test_granularity_errors);
  g_test_add_func ("/llama/hf/configs", test_hf_configs);
  g_test_add_func ("/llama/hf/errors", test_hf_errors);
  g_test_add_func ("/llama/hf/limits", test_hf_limits);
  g_test_add_func ("/llama/gguf/tiny-graph", test_gguf_tiny_graph);
  g_test_add_func ("/llama/gguf/quantized", test_gguf_quantized);
  g_test_add_func ("/llama/frontend", test_frontend);
  return g_test_run ();
}
