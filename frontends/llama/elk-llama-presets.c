/* elk-llama-presets.c: built-in model presets.
 *
 * One preset per row of shared/reference/models.md (the published
 * hyper-parameters of each model's config.json or paper), plus the five
 * graphs of the Elk artifact ("*-paper"), whose shapes differ from the real
 * models (elk-paper.md §5.1, "Model dimensions as encoded in the artifact
 * graphs").  The paper presets carry the artifact's split_factor as their
 * default operator-splitting threshold.
 */
#include "config.h"

#include <string.h>

#include "elk-llama-private.h"

typedef enum
{
  FAMILY_LLAMA,   /* RMSNorm, SwiGLU, RoPE, untied */
  FAMILY_GEMMA2,  /* RMSNorm pre+post, GeGLU, tied, alternating windows */
  FAMILY_OPT,     /* pre-LayerNorm, ReLU, biases, learned positions + 2 */
  FAMILY_GPT,     /* pre-LayerNorm, GELU, biases, learned positions, tied */
  FAMILY_BERT,    /* post-LayerNorm encoder, GELU, token types, pooler */
  FAMILY_VIT,     /* pre-LayerNorm encoder over image patches */
} Family;

typedef struct
{
  const char *name;
  Family family;
  guint layers;
  guint64 hidden, heads, kv_heads, head_dim, ffn, vocab, context;
  double rope_theta;
  double eps;
  guint64 sliding_window;
  /* ViT: channels x patch x patch and number of patches. */
  guint64 patch_in, n_patches;
  /* Paper graph shapes: fused QKV width, O input, fused up width, down
   * input; 0 for real models. */
  guint64 qkv_out, o_in, up_out, down_in;
  gint split_factor;
  /* Mixture of experts (FAMILY_LLAMA only): routed experts, top-k, one
   * expert's width, the shared experts' total width and count, leading
   * dense layers; the architecture name and its quirks. */
  guint64 experts, top_k, expert_ffn, shared_ffn, n_shared;
  guint first_dense;
  const char *arch;
  gboolean qk_norm, bias_qkv, shared_gate, router_bias;
  /* Multi-head latent attention: 0 = ordinary attention. */
  guint64 q_lora, kv_lora, qk_nope, qk_rope, v_dim;
} Preset;

#define MODEL(name_, family_, l_, d_, h_, kv_, hd_, ffn_, vocab_, ctx_,     \
              theta_, eps_, window_)                                      \
  { .name = name_, .family = family_, .layers = l_, .hidden = d_,         \
    .heads = h_, .kv_heads = kv_, .head_dim = hd_, .ffn = ffn_,           \
    .vocab = vocab_, .context = ctx_, .rope_theta = theta_, .eps = eps_,  \
    .sliding_window = window_ }

#define VIT(name_, l_, d_, h_, hd_, ffn_, patch_in_, patches_)             \
  { .name = name_, .family = FAMILY_VIT, .layers = l_, .hidden = d_,      \
    .heads = h_, .kv_heads = h_, .head_dim = hd_, .ffn = ffn_,            \
    .context = (patches_) + 1, .eps = 1e-12, .patch_in = patch_in_,       \
    .n_patches = patches_ }

/* Paper graphs: the fused QKV width, the O projection's input, the fused
 * up (gate + up) width and the down projection's input, then the
 * artifact's split_factor. */
#define PAPER(qkv_, o_, up_, down_, split_)                         \
  .qkv_out = qkv_, .o_in = o_, .up_out = up_, .down_in = down_,           \
  .split_factor = split_

static const Preset presets[] = {
  MODEL ("llama-2-7b",
         FAMILY_LLAMA,
         32,
         4096,
         32,
         32,
         128,
         11008,
         32000,
         4096,
         1e4,
         1e-5,
         0),
  MODEL ("llama-2-13b",
         FAMILY_LLAMA,
         40,
         5120,
         40,
         40,
         128,
         13824,
         32000,
         4096,
         1e4,
         1e-5,
         0),
  MODEL ("llama-2-70b",
         FAMILY_LLAMA,
         80,
         8192,
         64,
         8,
         128,
         28672,
         32000,
         4096,
         1e4,
         1e-5,
         0),
  MODEL ("llama-3-8b",
         FAMILY_LLAMA,
         32,
         4096,
         32,
         8,
         128,
         14336,
         128256,
         8192,
         5e5,
         1e-5,
         0),
  MODEL ("llama-3-70b",
         FAMILY_LLAMA,
         80,
         8192,
         64,
         8,
         128,
         28672,
         128256,
         8192,
         5e5,
         1e-5,
         0),
  MODEL ("llama-3.1-405b",
         FAMILY_LLAMA,
         126,
         16384,
         128,
         8,
         128,
         53248,
         128256,
         131072,
         5e5,
         1e-5,
         0),
  MODEL ("gemma-2-27b",
         FAMILY_GEMMA2,
         46,
         4608,
         32,
         16,
         128,
         36864,
         256000,
         8192,
         1e4,
         1e-6,
         4096),
  MODEL ("opt-6.7b",
         FAMILY_OPT,
         32,
         4096,
         32,
         32,
         128,
         16384,
         50272,
         2048,
         0,
         1e-5,
         0),
  MODEL ("opt-13b",
         FAMILY_OPT,
         40,
         5120,
         40,
         40,
         128,
         20480,
         50272,
         2048,
         0,
         1e-5,
         0),
  MODEL ("opt-30b",
         FAMILY_OPT,
         48,
         7168,
         56,
         56,
         128,
         28672,
         50272,
         2048,
         0,
         1e-5,
         0),
  MODEL ("opt-66b",
         FAMILY_OPT,
         64,
         9216,
         72,
         72,
         128,
         36864,
         50272,
         2048,
         0,
         1e-5,
         0),
  /* GPT-3's alternating locally banded sparse layers are modelled dense. */
  MODEL ("gpt-3-175b",
         FAMILY_GPT,
         96,
         12288,
         96,
         96,
         128,
         49152,
         50257,
         2048,
         0,
         1e-5,
         0),
  MODEL ("mistral-7b-v0.1",
         FAMILY_LLAMA,
         32,
         4096,
         32,
         8,
         128,
         14336,
         32000,
         32768,
         1e4,
         1e-5,
         4096),
  MODEL ("bert-base",
         FAMILY_BERT,
         12,
         768,
         12,
         12,
         64,
         3072,
         30522,
         512,
         0,
         1e-12,
         0),
  MODEL ("bert-large",
         FAMILY_BERT,
         24,
         1024,
         16,
         16,
         64,
         4096,
         30522,
         512,
         0,
         1e-12,
         0),
  VIT ("vit-b-16", 12, 768, 12, 64, 3072, 3 * 16 * 16, 196),
  VIT ("vit-l-16", 24, 1024, 16, 64, 4096, 3 * 16 * 16, 196),

  /* Mixture-of-experts models (docs/frontend-llama.md cites the published
   * total and active parameter counts), from their config.json files. */
  { .name = "mixtral-8x7b",
    .family = FAMILY_LLAMA,
    .layers = 32,
    .hidden = 4096,
    .heads = 32,
    .kv_heads = 8,
    .head_dim = 128,
    .ffn = 14336,
    .vocab = 32000,
    .context = 32768,
    .rope_theta = 1e6,
    .eps = 1e-5,
    .experts = 8,
    .top_k = 2,
    .expert_ffn = 14336 },
  { .name = "qwen3-30b-a3b",
    .family = FAMILY_LLAMA,
    .layers = 48,
    .hidden = 2048,
    .heads = 32,
    .kv_heads = 4,
    .head_dim = 128,
    .ffn = 6144,
    .vocab = 151936,
    .context = 40960,
    .rope_theta = 1e6,
    .eps = 1e-6,
    .experts = 128,
    .top_k = 8,
    .expert_ffn = 768,
    .arch = "qwen3moe",
    .qk_norm = TRUE },
  { .name = "mixtral-8x22b",
    .family = FAMILY_LLAMA,
    .layers = 56,
    .hidden = 6144,
    .heads = 48,
    .kv_heads = 8,
    .head_dim = 128,
    .ffn = 16384,
    .vocab = 32768,
    .context = 65536,
    .rope_theta = 1e6,
    .eps = 1e-5,
    .experts = 8,
    .top_k = 2,
    .expert_ffn = 16384 },
  /* DeepSeek-V2-Lite: MLA without the query's low-rank projection. */
  { .name = "deepseek-v2-lite",
    .family = FAMILY_LLAMA,
    .layers = 27,
    .hidden = 2048,
    .heads = 16,
    .kv_heads = 16,
    .head_dim = 192,
    .ffn = 10944,
    .vocab = 102400,
    .context = 163840,
    .rope_theta = 1e4,
    .eps = 1e-6,
    .experts = 64,
    .top_k = 6,
    .expert_ffn = 1408,
    .shared_ffn = 2 * 1408,
    .n_shared = 2,
    .first_dense = 1,
    .arch = "deepseek2",
    .kv_lora = 512,
    .qk_nope = 128,
    .qk_rope = 64,
    .v_dim = 128 },
  /* 61 layers, the first 3 dense; the multi-token-prediction module
   * (14B more in the released weights) is not part of the 671B. */
  { .name = "deepseek-v3",
    .family = FAMILY_LLAMA,
    .layers = 61,
    .hidden = 7168,
    .heads = 128,
    .kv_heads = 128,
    .head_dim = 192,
    .ffn = 18432,
    .vocab = 129280,
    .context = 163840,
    .rope_theta = 1e4,
    .eps = 1e-6,
    .experts = 256,
    .top_k = 8,
    .expert_ffn = 2048,
    .shared_ffn = 2048,
    .n_shared = 1,
    .first_dense = 3,
    .arch = "deepseek2",
    .router_bias = TRUE,
    .q_lora = 1536,
    .kv_lora = 512,
    .qk_nope = 128,
    .qk_rope = 64,
    .v_dim = 128 },

  /* The artifact's graphs (elk-paper.md §5.1).  Heads are the heads of the
   * attention batch-matmuls; Gemma2 and Llama2-70B use 16 and 8 heads there
   * for both queries and keys, with QKV, O and FFN widths that do not
   * follow from them. */
  { .name = "llama2-13b-paper",
    .family = FAMILY_LLAMA,
    .layers = 40,
    .hidden = 5120,
    .heads = 40,
    .kv_heads = 40,
    .head_dim = 128,
    .ffn = 13824,
    .vocab = 32000,
    .context = 4096,
    .rope_theta = 1e4,
    .eps = 1e-5,
    PAPER (15360, 5120, 27648, 13824, 3) },
  { .name = "gemma2-27b-paper",
    .family = FAMILY_LLAMA,
    .layers = 46,
    .hidden = 4608,
    .heads = 16,
    .kv_heads = 16,
    .head_dim = 128,
    .ffn = 36864,
    .vocab = 256000,
    .context = 8192,
    .rope_theta = 1e4,
    .eps = 1e-6,
    PAPER (15360, 4608, 27648, 36864, 2) },
  /* OPT's context is 2048, but the paper decodes it with 4096-entry KV
   * caches too; the paper graph allows what the paper ran. */
  { .name = "opt-30b-paper",
    .family = FAMILY_OPT,
    .layers = 48,
    .hidden = 7168,
    .heads = 56,
    .kv_heads = 56,
    .head_dim = 128,
    .ffn = 28672,
    .vocab = 50272,
    .context = 4096,
    .eps = 1e-5,
    PAPER (21504, 7168, 28672, 28672, 4) },
  { .name = "llama2-70b-paper",
    .family = FAMILY_LLAMA,
    .layers = 80,
    .hidden = 8192,
    .heads = 8,
    .kv_heads = 8,
    .head_dim = 128,
    .ffn = 28672,
    .vocab = 32000,
    .context = 4096,
    .rope_theta = 1e4,
    .eps = 1e-5,
    PAPER (24576, 8192, 27648, 28672, 3) },
  /* The "DiT-XL" of the paper is a ViT-Huge graph: 32 layers, hidden 1280,
   * 16 heads of 80, 257 tokens (16 x 16 patches of 14 x 14 pixels plus
   * [CLS]).  The artifact gives no split factor for it. */
  { .name = "vit-huge-paper",
    .family = FAMILY_VIT,
    .layers = 32,
    .hidden = 1280,
    .heads = 16,
    .kv_heads = 16,
    .head_dim = 80,
    .ffn = 5120,
    .context = 257,
    .eps = 1e-12,
    .patch_in = 3 * 14 * 14,
    .n_patches = 256,
    PAPER (3840, 1280, 5120, 5120, 0) },
};

static const char *const *
build_names (void)
{
  static const char *names[G_N_ELEMENTS (presets) + 1];
  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    names[i] = presets[i].name;
  names[G_N_ELEMENTS (presets)] = NULL;
  return names;
}

/**
 * elk__llama_preset_names:
 * Returns: (transfer none): the preset names, %NULL-terminated.
 */
const char *const *
elk__llama_preset_names (void)
{
  static gsize init = 0;
  static const char *const *names;
  if (g_once_init_enter (&init))
    {
      names = build_names ();
      g_once_init_leave (&init, 1);
    }
  return names;
}

/**
 * elk__llama_preset_list:
 * Returns: (transfer full): the preset names separated by ", ".
 */
char *
elk__llama_preset_list (void)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    g_string_append_printf (s, "%s%s", i ? ", " : "", presets[i].name);
  return g_string_free (s, FALSE);
}

LlamaModel *
elk__llama_model_new_from_preset (const char *name, GError **error)
{
  const Preset *p = NULL;
  LlamaModel *m;

  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    if (g_strcmp0 (presets[i].name, name) == 0)
      p = &presets[i];
  if (p == NULL)
    {
      g_autofree char *list = elk__llama_preset_list ();
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "unknown preset '%s' (known presets: %s)", name, list);
      return NULL;
    }

  m = elk__llama_model_new ();
  m->name = g_strdup (p->name);
  m->source = g_strdup_printf ("preset '%s'", p->name);
  m->n_layers = p->layers;
  m->hidden = p->hidden;
  m->n_heads = p->heads;
  m->n_kv_heads = p->kv_heads;
  m->head_dim = p->head_dim;
  m->ffn = p->ffn;
  m->vocab = p->vocab;
  m->context = p->context;
  m->rope_theta = p->rope_theta;
  m->norm_eps = p->eps;
  m->qkv_out = p->qkv_out;
  m->o_in = p->o_in;
  m->up_out = p->up_out;
  m->down_in = p->down_in;
  m->paper = g_str_has_suffix (p->name, "-paper");
  m->default_split_factor = p->split_factor;
  /* Presets have no file types; their storage type is the artifact's
   * 2 bytes per element. */
  m->has_native_dtype = TRUE;
  m->native_dtype = ELK_DTYPE_F16;

  switch (p->family)
    {
    case FAMILY_LLAMA:
      m->arch = g_strdup ("llama");
      m->norm = LLAMA_NORM_RMS;
      m->act = LLAMA_ACT_SILU;
      m->gated = TRUE;
      m->rope_dims = p->head_dim;
      if (p->sliding_window)
        {
          m->sliding_window = p->sliding_window;
          m->sliding_period = 1;
        }
      /* The artifact's Gemma2 graph has the Llama structure (two norms per
       * layer, 48 operators per layer as in its Llama2-13B graph); only
       * its shapes, GeGLU and tied embeddings are Gemma's. */
      if (g_str_has_prefix (p->name, "gemma2"))
        {
          g_free (m->arch);
          m->arch = g_strdup ("gemma2");
          m->act = LLAMA_ACT_GELU;
          m->tied = TRUE;
        }
      if (p->arch != NULL)
        {
          g_free (m->arch);
          m->arch = g_strdup (p->arch);
        }
      m->qk_norm = p->qk_norm;
      m->bias_qkv = p->bias_qkv;
      if (p->experts != 0)
        {
          m->n_experts = p->experts;
          m->n_experts_used = p->top_k;
          m->expert_ffn = p->expert_ffn;
          m->shared_ffn = p->shared_ffn;
          m->n_shared = p->n_shared;
          m->shared_gate = p->shared_gate;
          /* DeepSeek-V3 scores with a sigmoid and adds a learned bias
           * per expert before the top-k (noaux_tc). */
          m->router_bias = p->router_bias;
          m->router_sigmoid = p->router_bias;
          elk__llama_model_set_moe_layers (m, p->first_dense, 1, FALSE);
        }
      if (p->kv_lora != 0)
        {
          m->q_lora_rank = p->q_lora;
          m->kv_lora_rank = p->kv_lora;
          m->qk_nope = p->qk_nope;
          m->qk_rope = p->qk_rope;
          m->v_head_dim = p->v_dim;
          m->rope_dims = p->qk_rope;
        }
      break;
    case FAMILY_GEMMA2:
      m->arch = g_strdup ("gemma2");
      m->norm = LLAMA_NORM_RMS;
      m->act = LLAMA_ACT_GELU;
      m->gated = TRUE;
      m->post_norms = TRUE;
      m->tied = TRUE;
      m->rope_dims = p->head_dim;
      m->sliding_window = p->sliding_window;
      m->sliding_period = 2;
      break;
    case FAMILY_OPT:
      m->arch = g_strdup ("opt");
      elk__llama_model_set_layer_norm_block (m, LLAMA_ACT_RELU, TRUE);
      m->tied = TRUE;
      m->n_positions = p->context + 2;
      break;
    case FAMILY_GPT:
      m->arch = g_strdup ("gpt2");
      elk__llama_model_set_layer_norm_block (m, LLAMA_ACT_GELU, TRUE);
      m->tied = TRUE;
      m->n_positions = p->context;
      break;
    case FAMILY_BERT:
      m->arch = g_strdup ("bert");
      elk__llama_model_set_layer_norm_block (m, LLAMA_ACT_GELU, TRUE);
      m->post_ln = TRUE;
      elk__llama_model_set_encoder (m, TRUE);
      m->n_positions = p->context;
      m->n_token_types = 2;
      break;
    case FAMILY_VIT:
      m->arch = g_strdup ("vit");
      elk__llama_model_set_layer_norm_block (m, LLAMA_ACT_GELU, TRUE);
      elk__llama_model_set_encoder (m, FALSE);
      m->patch_in = p->patch_in;
      m->n_patches = p->n_patches;
      m->n_classes = 1000;
      break;
    }

  if (!elk__llama_model_check (m, error))
    {
      elk__llama_model_free (m);
      return NULL;
    }
  return m;
}
