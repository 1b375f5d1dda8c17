/* elk-llama-model.c: the model description, its consistency checks, the
 * parameter count, and the mapping from GGUF metadata to a model.
 *
 * GGUF keys are prefixed with the architecture name ("llama.block_count",
 * "falcon.attention.head_count_kv", ...).  The structural facts that GGUF
 * does not store (norm kind, gated FFN, biases, parallel attention) follow
 * from the architecture, as they do in llama.cpp; when the file has tensors,
 * their presence decides tied embeddings and biases instead.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "elk-llama-private.h"

LlamaModel *
elk__llama_model_new (void)
{
  LlamaModel *model = g_new0 (LlamaModel, 1);
  model->rope_theta = 10000.0;
  model->norm_eps = 1e-5;
  model->has_lm_head = TRUE;
  model->default_split_factor = 0;
  return model;
}

void
elk__llama_model_free (LlamaModel *model)
{
  if (model == NULL)
    return;
  g_free (model->name);
  g_free (model->arch);
  g_free (model->source);
  g_clear_pointer (&model->gguf, elk__gguf_free);
  g_free (model->moe_layers);
  g_free (model);
}

gboolean
elk__llama_model_is_moe_layer (const LlamaModel *model, guint layer)
{
  return model->n_experts != 0 && model->moe_layers != NULL
         && layer < model->n_layers && model->moe_layers[layer];
}

void
elk__llama_model_set_moe_layers (LlamaModel *model,
                                 guint first_dense,
                                 guint step,
                                 gboolean one_based)
{
  g_free (model->moe_layers);
  model->moe_layers = g_new0 (gboolean, MAX (model->n_layers, 1));
  for (guint l = 0; l < model->n_layers; l++)
    model->moe_layers[l] = l >= first_dense && step != 0
                           && (one_based ? (l + 1) % step : l % step) == 0;
}

void
elk__llama_model_set_layer_norm_block (LlamaModel *model,
                                       LlamaAct act,
                                       gboolean biases)
{
  model->norm = LLAMA_NORM_LAYER;
  model->norm_bias = TRUE;
  model->act = act;
  model->bias_qkv = model->bias_o = model->bias_ffn = biases;
}

void
elk__llama_model_set_encoder (LlamaModel *model, gboolean pooler)
{
  model->encoder = TRUE;
  model->has_lm_head = FALSE;
  model->pooler = pooler;
}

static gboolean
invalid (GError **error, const LlamaModel *model, const char *format, ...)
    G_GNUC_PRINTF (3, 4);

static gboolean
invalid (GError **error, const LlamaModel *model, const char *format, ...)
{
  va_list args;
  g_autofree char *message = NULL;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID, "%s: %s",
               model->source != NULL ? model->source : model->name, message);
  return FALSE;
}

/**
 * elk__llama_model_check:
 *
 * Checks the hyper-parameters that the graph builder relies on, whatever
 * reader produced them, so that a bad config.json and a bad GGUF file fail
 * the same way.
 */
gboolean
elk__llama_model_check (const LlamaModel *model, GError **error)
{
  if (model->n_layers == 0)
    return invalid (error, model, "the model has 0 layers (expected >= 1)");
  if (model->hidden == 0)
    return invalid (error, model, "hidden size is 0 (expected >= 1)");
  if (model->n_heads == 0)
    return invalid (error, model, "attention head count is 0");
  if (model->n_kv_heads == 0 || model->n_heads % model->n_kv_heads != 0)
    return invalid (error, model,
                    "%" G_GUINT64_FORMAT " attention heads cannot share %"
                    G_GUINT64_FORMAT " KV heads (the head count must be a "
                    "multiple of the KV head count)",
                    model->n_heads, model->n_kv_heads);
  if (model->head_dim == 0)
    return invalid (error, model, "head dimension is 0");
  if (model->ffn == 0)
    return invalid (error, model, "FFN size is 0");
  if (model->patch_in == 0 && model->vocab == 0)
    return invalid (error, model, "vocabulary size is 0");
  if (model->patch_in != 0 && (model->n_patches == 0 || model->n_classes == 0))
    return invalid (error, model, "a ViT needs patches and classes");
  if (model->n_experts != 0
      && (model->n_experts_used == 0
          || model->n_experts_used > model->n_experts))
    return invalid (error, model,
                    "top-%" G_GUINT64_FORMAT " routing over %" G_GUINT64_FORMAT
                    " experts (expected 1 <= top-k <= "
                    "expert count)",
                    model->n_experts_used, model->n_experts);
  if (model->n_experts != 0 && model->expert_ffn == 0)
    return invalid (error, model, "the experts' FFN size is 0");
  if (model->n_experts != 0 && model->moe_layers == NULL)
    return invalid (error, model,
                    "the model has experts but no layer "
                    "uses them");
  if (model->n_experts == 0
      && (model->shared_ffn != 0 || model->n_experts_used != 0))
    return invalid (error, model,
                    "shared experts or a top-k without routed experts "
                    "(the expert count is 0)");
  if (model->n_experts > 65536 || model->expert_ffn > (1u << 26)
      || model->shared_ffn > (1u << 26))
    return invalid (error, model,
                    "expert counts beyond any real model (%" G_GUINT64_FORMAT
                    " experts of width %" G_GUINT64_FORMAT ")",
                    model->n_experts, model->expert_ffn);
  if (model->kv_lora_rank != 0
      && (model->qk_nope == 0 || model->qk_rope == 0 || model->v_head_dim == 0
          || model->head_dim != model->qk_nope + model->qk_rope))
    return invalid (error, model,
                    "multi-head latent attention needs the no-RoPE and RoPE "
                    "query/key head sizes and the value head size (got "
                    "%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                    ", %" G_GUINT64_FORMAT ", head size %" G_GUINT64_FORMAT ")",
                    model->qk_nope, model->qk_rope, model->v_head_dim,
                    model->head_dim);
  if (model->kv_lora_rank > (1u << 20) || model->q_lora_rank > (1u << 20)
      || model->v_head_dim > 65536)
    return invalid (error, model, "MLA ranks beyond any real model");
  if (model->n_layers > 100000 || model->hidden > (1u << 24)
      || model->ffn > (1u << 26) || model->vocab > (1u << 26)
      || model->n_heads > 65536 || model->head_dim > 65536)
    return invalid (error, model,
                    "hyper-parameters beyond any real model (layers %u, "
                    "hidden %" G_GUINT64_FORMAT ", FFN %" G_GUINT64_FORMAT
                    ", vocab %" G_GUINT64_FORMAT ")", model->n_layers,
                    model->hidden, model->ffn, model->vocab);
  return TRUE;
}

/* Shapes of the fused projections, honouring the paper presets'
 * overrides. */
static guint64
qkv_out (const LlamaModel *m)
{
  return m->qkv_out != 0 ? m->qkv_out
                         : (m->n_heads + 2 * m->n_kv_heads) * m->head_dim;
}

static guint64
o_in (const LlamaModel *m)
{
  return m->o_in != 0 ? m->o_in : m->n_heads * m->head_dim;
}

static guint64
up_out (const LlamaModel *m)
{
  return m->up_out != 0 ? m->up_out : (m->gated ? 2 : 1) * m->ffn;
}

static guint64
down_in (const LlamaModel *m)
{
  return m->down_in != 0 ? m->down_in : m->ffn;
}

/* The attention block's parameters (projections, their biases, the MLA
 * and Qwen3 norms inside it). */
static guint64
attention_params (const LlamaModel *m)
{
  guint64 d = m->hidden, H = m->n_heads;

  if (m->kv_lora_rank != 0)
    {
      guint64 qk = m->qk_nope + m->qk_rope, c = m->kv_lora_rank;
      guint64 q = m->q_lora_rank == 0 ? d * H * qk
                                      : d * m->q_lora_rank + m->q_lora_rank
                                            + m->q_lora_rank * H * qk;
      return q + d * (c + m->qk_rope) + c + c * H * (m->qk_nope + m->v_head_dim)
             + H * m->v_head_dim * d;
    }
  return d * qkv_out (m) + (m->bias_qkv ? qkv_out (m) : 0) + o_in (m) * d
         + (m->bias_o ? d : 0) + (m->qk_norm ? 2 * m->head_dim : 0);
}

/* The FFN of @layer; for an MoE layer, with @experts routed experts (all
 * of them for the total count, the top-k for the active one). */
static guint64
ffn_params (const LlamaModel *m, guint layer, guint64 experts)
{
  guint64 d = m->hidden;

  if (elk__llama_model_is_moe_layer (m, layer))
    return d * m->n_experts + (m->router_bias ? m->n_experts : 0)
           + experts * 3 * d * m->expert_ffn + 3 * d * m->shared_ffn
           + (m->shared_gate ? d : 0);
  return d * up_out (m) + (m->bias_ffn ? up_out (m) : 0) + down_in (m) * d
         + (m->bias_ffn ? d : 0);
}

static guint64
count_from_hyper_parameters (const LlamaModel *m, guint layers, gboolean active)
{
  guint64 d = m->hidden;
  guint64 norm = m->norm_bias ? 2 * d : d;
  guint64 per_layer = 0, total = 0;

  per_layer += attention_params (m);
  per_layer += norm * (m->parallel ? 1 : 2);
  if (m->post_norms)
    per_layer += 2 * norm;
  total = per_layer * layers;
  for (guint l = 0; l < layers; l++)
    total += ffn_params (m, l, active ? m->n_experts_used : m->n_experts);

  if (m->patch_in != 0)
    {
      /* ViT: patch projection with bias, [CLS] token, positions, final
       * norm, classifier head with bias. */
      total += m->patch_in * d + d + d + (m->n_patches + 1) * d;
      total += norm + d * m->n_classes + m->n_classes;
      return total;
    }

  total += m->vocab * d;
  total += m->n_positions * d + m->n_token_types * d;
  if (m->post_ln)
    total += norm; /* BERT's embedding norm */
  else
    total += norm; /* final norm */
  if (m->has_lm_head && !m->tied)
    total += d * m->vocab;
  if (m->pooler)
    total += d * d + d;
  return total;
}

/**
 * elk__llama_model_count_params:
 * @layers: count this many layers (0 = all)
 *
 * Returns: the number of parameters of the (possibly truncated) model.
 */
guint64
elk__llama_model_count_params (const LlamaModel *model, guint layers)
{
  if (layers == 0 || layers > model->n_layers)
    layers = model->n_layers;

  if (model->gguf != NULL && elk__gguf_get_n_tensors (model->gguf) > 0)
    {
      guint64 total = 0;
      for (guint i = 0; i < elk__gguf_get_n_tensors (model->gguf); i++)
        {
          const GgufTensor *t = elk__gguf_get_tensor (model->gguf, i);
          /* Tensors of layers beyond the truncation are not counted. */
          if (g_str_has_prefix (t->name, "blk.")
              && g_ascii_strtoull (t->name + 4, NULL, 10) >= layers)
            continue;
          total += t->n_elements;
        }
      return total;
    }
  return count_from_hyper_parameters (model, layers, FALSE);
}

guint64
elk__llama_model_count_active_params (const LlamaModel *model)
{
  return count_from_hyper_parameters (model, model->n_layers, TRUE);
}

/* ------------------------------------------------------------------ */
/* GGUF                                                                 */
/* ------------------------------------------------------------------ */

typedef struct
{
  const char *arch;
  LlamaNorm norm;
  LlamaAct act;
  gboolean gated;
  gboolean biases;
  gboolean bias_qkv_only;
  gboolean parallel;
  gboolean post_norms;
  gboolean tied;
  gboolean learned_pos;
  guint64 pos_offset;
  guint sliding_period;
} ArchInfo;

static const ArchInfo arch_table[] = {
  { "llama", LLAMA_NORM_RMS, LLAMA_ACT_SILU, TRUE, FALSE, FALSE, FALSE, FALSE,
    FALSE, FALSE, 0, 1 },
  { "mistral", LLAMA_NORM_RMS, LLAMA_ACT_SILU, TRUE, FALSE, FALSE, FALSE, FALSE,
    FALSE, FALSE, 0, 1 },
  { "qwen2", LLAMA_NORM_RMS, LLAMA_ACT_SILU, TRUE, FALSE, TRUE, FALSE, FALSE,
    FALSE, FALSE, 0, 1 },
  { "gemma2", LLAMA_NORM_RMS, LLAMA_ACT_GELU, TRUE, FALSE, FALSE, FALSE, TRUE,
    TRUE, FALSE, 0, 2 },
  { "phi3", LLAMA_NORM_RMS, LLAMA_ACT_SILU, TRUE, FALSE, FALSE, FALSE, FALSE,
    FALSE, FALSE, 0, 1 },
  { "falcon", LLAMA_NORM_LAYER, LLAMA_ACT_GELU, FALSE, FALSE, FALSE, TRUE,
    FALSE, TRUE, FALSE, 0, 1 },
  { "gpt2", LLAMA_NORM_LAYER, LLAMA_ACT_GELU, FALSE, TRUE, FALSE, FALSE, FALSE,
    TRUE, TRUE, 0, 1 },
  { "opt", LLAMA_NORM_LAYER, LLAMA_ACT_RELU, FALSE, TRUE, FALSE, FALSE, FALSE,
    TRUE, TRUE, 2, 1 },
  /* Mixtral is "llama" with expert_count; these have experts of their
   * own (read_moe_keys). */
  { "qwen2moe", LLAMA_NORM_RMS, LLAMA_ACT_SILU, TRUE, FALSE, TRUE, FALSE, FALSE,
    FALSE, FALSE, 0, 1 },
  { "qwen3moe", LLAMA_NORM_RMS, LLAMA_ACT_SILU, TRUE, FALSE, FALSE, FALSE,
    FALSE, FALSE, FALSE, 0, 1 },
  { "deepseek2", LLAMA_NORM_RMS, LLAMA_ACT_SILU, TRUE, FALSE, FALSE, FALSE,
    FALSE, FALSE, FALSE, 0, 1 },
};

static const ArchInfo *
find_arch (const char *arch)
{
  for (guint i = 0; i < G_N_ELEMENTS (arch_table); i++)
    if (g_strcmp0 (arch_table[i].arch, arch) == 0)
      return &arch_table[i];
  return NULL;
}

static char *
supported_arch_list (void)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < G_N_ELEMENTS (arch_table); i++)
    g_string_append_printf (s, "%s%s", i ? ", " : "", arch_table[i].arch);
  return g_string_free (s, FALSE);
}

/* Reads "<arch>.<suffix>" as a count; @required decides whether absence is
 * an error. */
static gboolean
gguf_count (Gguf *gguf,
            const char *arch,
            const char *suffix,
            gboolean required,
            guint64 *out,
            GError **error)
{
  g_autofree char *key = g_strdup_printf ("%s.%s", arch, suffix);
  GError *local_error = NULL;

  if (elk__gguf_get_uint (gguf, key, out, &local_error))
    return TRUE;
  if (local_error != NULL)
    {
      g_propagate_error (error, local_error);
      return FALSE;
    }
  if (required)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: the metadata has no '%s' key (required for "
                   "architecture '%s')",
                   elk__gguf_get_path (gguf), key, arch);
      return FALSE;
    }
  return TRUE;
}

static gboolean
gguf_float (Gguf *gguf,
            const char *arch,
            const char *suffix,
            double *out,
            GError **error)
{
  g_autofree char *key = g_strdup_printf ("%s.%s", arch, suffix);
  GError *local_error = NULL;

  if (elk__gguf_get_float (gguf, key, out, &local_error))
    return TRUE;
  if (local_error != NULL)
    {
      g_propagate_error (error, local_error);
      return FALSE;
    }
  return TRUE;
}

/* llama.cpp's expert keys ({arch}.expert_count, ...) and the deepseek2
 * attention keys.  A file without expert_count is dense. */
static gboolean
read_moe_keys (Gguf *gguf, LlamaModel *m, GError **error)
{
  const char *path = elk__gguf_get_path (gguf);
  const char *a = m->arch;
  guint64 first_dense = 0, shared_count = 0, key_mla = 0, value_mla = 0;
  guint64 gating = 0;
  g_autofree char *shexp_gate = NULL;

  if (!gguf_count (gguf, a, "expert_count", FALSE, &m->n_experts, error)
      || !gguf_count (gguf, a, "expert_used_count", FALSE, &m->n_experts_used,
                      error)
      || !gguf_count (gguf, a, "expert_shared_count", FALSE, &shared_count,
                      error)
      || !gguf_count (gguf, a, "leading_dense_block_count", FALSE, &first_dense,
                      error)
      || !gguf_count (gguf, a, "expert_feed_forward_length", FALSE,
                      &m->expert_ffn, error)
      || !gguf_count (gguf, a, "expert_shared_feed_forward_length", FALSE,
                      &m->shared_ffn, error)
      || !gguf_count (gguf, a, "expert_gating_func", FALSE, &gating, error))
    return FALSE;
  if (m->n_experts != 0)
    {
      if (m->n_experts_used == 0)
        {
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                       "%s: '%s.expert_count' is %" G_GUINT64_FORMAT " but "
                       "there is no '%s.expert_used_count' key (the top-k)",
                       path, a, m->n_experts, a);
          return FALSE;
        }
      if (m->expert_ffn == 0)
        m->expert_ffn = m->ffn; /* Mixtral: experts as wide as the FFN */
      /* DeepSeek gives a count of shared experts as wide as the routed
       * ones, Qwen2-MoE one shared FFN of its own width. */
      if (m->shared_ffn == 0)
        m->shared_ffn = shared_count * m->expert_ffn;
      m->n_shared = shared_count != 0 ? shared_count : m->shared_ffn != 0;
      if (first_dense > m->n_layers)
        {
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                       "%s: '%s.leading_dense_block_count' is "
                       "%" G_GUINT64_FORMAT ", more than the %u blocks",
                       path, a, first_dense, m->n_layers);
          return FALSE;
        }
      elk__llama_model_set_moe_layers (m, (guint) first_dense, 1, FALSE);
      shexp_gate = g_strdup_printf ("blk.%" G_GUINT64_FORMAT
                                    ".ffn_gate_inp_shexp.weight",
                                    first_dense);
      m->shared_gate = g_str_equal (a, "qwen2moe")
                       || elk__gguf_find_tensor (gguf, shexp_gate) != NULL;
      m->router_sigmoid = gating == 2;
      m->router_bias = gating == 2;
    }
  else if (m->n_experts_used != 0 || shared_count != 0 || m->shared_ffn != 0)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: expert_used_count, expert_shared_count or "
                   "expert_shared_feed_forward_length without '%s."
                   "expert_count'",
                   path, a);
      return FALSE;
    }
  m->qk_norm = g_str_equal (a, "qwen3moe");

  if (!g_str_equal (a, "deepseek2"))
    return TRUE;
  /* DeepSeek-V2/V3: multi-head latent attention.  Newer llama.cpp files
   * give the MLA head sizes as key_length_mla and value_length_mla (their
   * key_length is then the latent's). */
  m->v_head_dim = 0;
  if (!gguf_count (gguf, a, "attention.q_lora_rank", FALSE, &m->q_lora_rank,
                   error)
      || !gguf_count (gguf, a, "attention.kv_lora_rank", TRUE, &m->kv_lora_rank,
                      error)
      || !gguf_count (gguf, a, "attention.value_length", TRUE, &m->v_head_dim,
                      error)
      || !gguf_count (gguf, a, "attention.key_length_mla", FALSE, &key_mla,
                      error)
      || !gguf_count (gguf, a, "attention.value_length_mla", FALSE, &value_mla,
                      error)
      || !gguf_count (gguf, a, "rope.dimension_count", TRUE, &m->qk_rope,
                      error))
    return FALSE;
  if (key_mla != 0)
    m->head_dim = key_mla;
  if (value_mla != 0)
    m->v_head_dim = value_mla;
  if (m->kv_lora_rank == 0 || m->qk_rope == 0 || m->head_dim <= m->qk_rope)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: deepseek2 attention needs attention.kv_lora_rank "
                   "> 0 and attention.key_length (%" G_GUINT64_FORMAT ") "
                   "larger than rope.dimension_count (%" G_GUINT64_FORMAT ")",
                   path, m->head_dim, m->qk_rope);
      return FALSE;
    }
  m->qk_nope = m->head_dim - m->qk_rope;
  m->rope_dims = m->qk_rope;
  m->n_kv_heads = m->n_heads;
  return TRUE;
}

static char *
file_stem (const char *path)
{
  g_autofree char *base = g_path_get_basename (path);
  char *dot = strrchr (base, '.');
  if (dot != NULL && dot != base)
    *dot = '\0';
  return g_strdup (base);
}

/**
 * elk__llama_model_new_from_gguf:
 * @gguf: (transfer full): a parsed GGUF file; the model keeps it for the
 *   per-tensor types
 */
LlamaModel *
elk__llama_model_new_from_gguf (Gguf *gguf, GError **error)
{
  g_autoptr (LlamaModel) model = elk__llama_model_new ();
  g_autoptr (GError) local_error = NULL;
  const ArchInfo *info;
  const char *path = elk__gguf_get_path (gguf);
  guint64 layers = 0, ftype;
  gboolean has_tensors = elk__gguf_get_n_tensors (gguf) > 0;
  const GgufValue *tokens;
  const GgufTensor *embd;

  model->source = g_strdup (path);
  model->name = file_stem (path);

  model->arch
      = elk__gguf_dup_string (gguf, "general.architecture", &local_error);
  if (local_error != NULL)
    {
      g_propagate_error (error, g_steal_pointer (&local_error));
      return NULL;
    }
  if (model->arch == NULL)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: the metadata has no 'general.architecture' key", path);
      return NULL;
    }
  info = find_arch (model->arch);
  if (info == NULL)
    {
      g_autofree char *list = supported_arch_list ();
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_UNSUPPORTED,
                   "%s: architecture '%s' is not supported by the llama "
                   "frontend (supported: %s)",
                   path, model->arch, list);
      return NULL;
    }

  if (!gguf_count (gguf, model->arch, "block_count", TRUE, &layers, error)
      || !gguf_count (gguf, model->arch, "embedding_length", TRUE,
                      &model->hidden, error)
      || !gguf_count (gguf, model->arch, "feed_forward_length", TRUE,
                      &model->ffn, error)
      || !gguf_count (gguf, model->arch, "attention.head_count", TRUE,
                      &model->n_heads, error)
      || !gguf_count (gguf, model->arch, "context_length", TRUE,
                      &model->context, error))
    return NULL;
  if (layers == 0 || layers > 100000)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: %s.block_count is %" G_GUINT64_FORMAT
                   " (expected 1..100000)",
                   path, model->arch, layers);
      return NULL;
    }
  model->n_layers = (guint) layers;

  /* A missing head_count_kv means plain multi-head attention (GPT-2). */
  model->n_kv_heads = model->n_heads;
  if (!gguf_count (gguf, model->arch, "attention.head_count_kv", FALSE,
                   &model->n_kv_heads, error))
    return NULL;

  model->head_dim = 0;
  if (!gguf_count (gguf, model->arch, "attention.key_length", FALSE,
                   &model->head_dim, error))
    return NULL;
  if (model->head_dim == 0)
    {
      if (model->n_heads == 0 || model->hidden % model->n_heads != 0)
        {
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                       "%s: embedding_length %" G_GUINT64_FORMAT " is not a "
                       "multiple of head_count %" G_GUINT64_FORMAT
                       " and there is no attention.key_length",
                       path, model->hidden, model->n_heads);
          return NULL;
        }
      model->head_dim = model->hidden / model->n_heads;
    }
  model->rope_dims = 0;
  if (!gguf_count (gguf, model->arch, "rope.dimension_count", FALSE,
                   &model->rope_dims, error)
      || !gguf_float (gguf, model->arch, "rope.freq_base", &model->rope_theta,
                      error)
      || !gguf_float (gguf, model->arch, "attention.layer_norm_rms_epsilon",
                      &model->norm_eps, error)
      || !gguf_float (gguf, model->arch, "attention.layer_norm_epsilon",
                      &model->norm_eps, error)
      || !gguf_count (gguf, model->arch, "attention.sliding_window", FALSE,
                      &model->sliding_window, error))
    return NULL;
  model->sliding_period = model->sliding_window ? info->sliding_period : 0;

  /* Vocabulary: the explicit key, else the token list, else the embedding
   * tensor (ne1 is the vocabulary, ne0 the hidden size). */
  if (!gguf_count (gguf, model->arch, "vocab_size", FALSE, &model->vocab,
                   error))
    return NULL;
  tokens = elk__gguf_lookup (gguf, "tokenizer.ggml.tokens");
  embd = elk__gguf_find_tensor (gguf, "token_embd.weight");
  if (model->vocab == 0 && tokens != NULL && tokens->type == GGUF_TYPE_ARRAY)
    model->vocab = tokens->count;
  if (model->vocab == 0 && embd != NULL && embd->n_dims == 2)
    model->vocab = embd->dims[1];
  if (model->vocab == 0)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: the vocabulary size is unknown: no %s.vocab_size "
                   "key, no tokenizer.ggml.tokens array and no "
                   "token_embd.weight tensor",
                   path, model->arch);
      return NULL;
    }

  model->norm = info->norm;
  model->norm_bias = info->norm == LLAMA_NORM_LAYER;
  model->act = info->act;
  model->gated = info->gated;
  model->bias_qkv = info->biases || info->bias_qkv_only;
  model->bias_o = info->biases;
  model->bias_ffn = info->biases;
  model->parallel = info->parallel;
  model->post_norms = info->post_norms;
  model->tied = info->tied;
  model->n_positions = info->learned_pos ? model->context + info->pos_offset
                                         : 0;

  if (has_tensors)
    {
      /* The tensors are the truth: an LM head without output.weight reads
       * the token embedding, and biases exist when their tensors do. */
      model->tied = elk__gguf_find_tensor (gguf, "output.weight") == NULL;
      model->bias_qkv
          = elk__gguf_find_tensor (gguf, "blk.0.attn_q.bias") != NULL
            || elk__gguf_find_tensor (gguf, "blk.0.attn_qkv.bias") != NULL;
      model->bias_o
          = elk__gguf_find_tensor (gguf, "blk.0.attn_output.bias") != NULL;
      model->bias_ffn
          = elk__gguf_find_tensor (gguf, "blk.0.ffn_up.bias") != NULL;
      model->norm_bias
          = elk__gguf_find_tensor (gguf, "blk.0.attn_norm.bias") != NULL;
      if (info->learned_pos)
        {
          const GgufTensor *pos
              = elk__gguf_find_tensor (gguf, "position_embd.weight");
          model->n_positions = pos != NULL && pos->n_dims == 2 ? pos->dims[1]
                                                               : 0;
        }
    }

  if (!read_moe_keys (gguf, model, error))
    return NULL;

  /* general.file_type gives the storage type of a file without tensors
   * (the vocabulary-only files); with tensors each tensor has its own. */
  if (elk__gguf_get_uint (gguf, "general.file_type", &ftype, &local_error))
    {
      if (ftype == 0)
        model->native_dtype = ELK_DTYPE_F32, model->has_native_dtype = TRUE;
      else if (ftype == 1)
        model->native_dtype = ELK_DTYPE_F16, model->has_native_dtype = TRUE;
      else if (ftype == 32)
        model->native_dtype = ELK_DTYPE_BF16, model->has_native_dtype = TRUE;
    }
  else if (local_error != NULL)
    {
      g_propagate_error (error, g_steal_pointer (&local_error));
      return NULL;
    }

  if (!elk__llama_model_check (model, error))
    return NULL;
  /* Only a successful model takes the file; on failure the caller still
   * owns it. */
  model->gguf = gguf;
  return g_steal_pointer (&model);
}

/**
 * elk__llama_model_new_from_file:
 *
 * Reads a GGUF file or a Hugging Face config.json, telling them apart by
 * content: GGUF files start with the magic "GGUF", JSON with '{'.
 */
LlamaModel *
elk__llama_model_new_from_file (const char *path, GError **error)
{
  return elk__llama_model_new_from_file_with_limits (path, NULL, error);
}

LlamaModel *
elk__llama_model_new_from_file_with_limits (const char *path,
                                            const LlamaLimits *limits,
                                            GError **error)
{
  char head[64];
  gsize n = 0;
  FILE *fp;

  fp = fopen (path, "rb");
  if (fp == NULL)
    {
      int saved = errno;
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_IO,
                   "%s: cannot open the model file: %s", path,
                   g_strerror (saved));
      return NULL;
    }
  n = fread (head, 1, sizeof (head), fp);
  fclose (fp);

  if (n >= 4 && memcmp (head, "GGUF", 4) == 0)
    {
      Gguf *gguf = elk__gguf_open_with_limits (path, limits, error);
      LlamaModel *model;
      if (gguf == NULL)
        return NULL;
      model = elk__llama_model_new_from_gguf (gguf, error);
      if (model == NULL)
        elk__gguf_free (gguf);
      return model;
    }
  for (gsize i = 0; i < n; i++)
    {
      /* Skip a UTF-8 byte order mark and white space before the JSON. */
      if (g_ascii_isspace (head[i]) || (guchar) head[i] >= 0x80)
        continue;
      if (head[i] == '{')
        return elk__llama_model_new_from_hf_config_with_limits (path, limits,
                                                                error);
      break;
    }
  g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_FORMAT,
               "%s: offset 0: neither a GGUF file (magic \"GGUF\") nor a "
               "Hugging Face config.json (a JSON object)",
               path);
  return NULL;
}
