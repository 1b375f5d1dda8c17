/* elk-llama-hf.c: Hugging Face config.json reader.
 *
 * The families use different key names for the same numbers (hidden_size,
 * n_embd, d_model; intermediate_size, n_inner, ffn_dim; ...), so each
 * number is looked up under the names its family uses.  json-glib reports
 * syntax errors with line and column; for a missing or mistyped key the
 * message names the key, and the line where the key appears when it does.
 */
#include "config.h"

#include <string.h>

#include <sys/stat.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "elk-llama-private.h"

typedef struct
{
  const char *path;
  const char *text;
  gsize length;
  JsonObject *obj;
  LlamaModel *model;
} HfReader;

/* Returns the 1-based line of the first occurrence of "key" in the text,
 * or 0.  A key can occur inside a nested object too; the first occurrence
 * is the one a user will look at. */
static guint
key_line (const HfReader *r, const char *key)
{
  g_autofree char *quoted = g_strdup_printf ("\"%s\"", key);
  gsize qlen = strlen (quoted);
  guint line = 1;

  for (gsize i = 0; i + qlen <= r->length; i++)
    {
      if (r->text[i] == '\n')
        line++;
      else if (memcmp (r->text + i, quoted, qlen) == 0)
        return line;
    }
  return 0;
}

static void
set_key_error (const HfReader *r, GError **error, const char *key,
               const char *expectation, const char *got)
{
  guint line = key_line (r, key);
  if (line > 0)
    g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                 "%s:%u: '%s' must be %s, got %s", r->path, line, key,
                 expectation, got);
  else
    g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                 "%s: '%s' must be %s, got %s", r->path, key, expectation, got);
}

static const char *
node_kind (JsonNode *node)
{
  if (JSON_NODE_HOLDS_NULL (node))
    return "null";
  if (JSON_NODE_HOLDS_OBJECT (node))
    return "an object";
  if (JSON_NODE_HOLDS_ARRAY (node))
    return "an array";
  switch (json_node_get_value_type (node))
    {
    case G_TYPE_STRING: return "a string";
    case G_TYPE_BOOLEAN: return "a boolean";
    case G_TYPE_DOUBLE: return "a fractional number";
    case G_TYPE_INT64: return "an integer";
    default: return "a value of another type";
    }
}

/* Finds the first of @keys that is present and not null. */
static JsonNode *
find (const HfReader *r, const char *const *keys, const char **found)
{
  for (guint i = 0; keys[i] != NULL; i++)
    {
      JsonNode *node = json_object_get_member (r->obj, keys[i]);
      if (node != NULL && !JSON_NODE_HOLDS_NULL (node))
        {
          *found = keys[i];
          return node;
        }
    }
  *found = keys[0];
  return NULL;
}

/* json-glib parses nested arrays and objects recursively, without a
 * depth limit, so the nesting is measured first: a config.json of a few
 * hundred kilobytes of '[' would otherwise overflow the stack.  Strings
 * are skipped (escaped quotes included); the text need not be valid JSON
 * here, json-glib judges that afterwards. */
static gboolean
check_depth (const HfReader *r, guint max_depth, GError **error)
{
  guint depth = 0, line = 1;
  gboolean in_string = FALSE;

  for (gsize i = 0; i < r->length; i++)
    {
      char c = r->text[i];
      if (c == '\n')
        line++;
      if (in_string)
        {
          if (c == '\\')
            i++;
          else if (c == '"')
            in_string = FALSE;
          continue;
        }
      if (c == '"')
        in_string = TRUE;
      else if (c == '[' || c == '{')
        {
          if (++depth > max_depth)
            {
              g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_LIMIT,
                           "%s:%u: arrays and objects are nested more than "
                           "%u deep, the max-json-depth limit; raise the "
                           "llama frontend's 'max-json-depth' parameter to "
                           "read this file",
                           r->path, line, max_depth);
              return FALSE;
            }
        }
      else if ((c == ']' || c == '}') && depth > 0)
        depth--;
    }
  return TRUE;
}

/* A key given twice is ambiguous (json-glib keeps the last, Python's json
 * module too, but a person reading the file may see the first), so it is
 * an error.  json-glib reports each member after adding it; a member
 * seen before in the same object is a duplicate. */
typedef struct
{
  GHashTable *seen; /* "object-address/name" */
  char *duplicate;
  guint line;
} DuplicateCheck;

static void
on_object_member (JsonParser *parser, JsonObject *object,
                  const char *name, gpointer user_data)
{
  DuplicateCheck *check = user_data;
  char *key;

  if (check->duplicate != NULL)
    return;
  key = g_strdup_printf ("%p/%s", (void *) object, name);
  if (!g_hash_table_add (check->seen, key))
    {
      check->duplicate = g_strdup (name);
      check->line = json_parser_get_current_line (parser);
    }
}

/* Products of numbers from the file: saturate instead of wrapping, so
 * that an absurd value fails the range checks instead of becoming a small
 * one. */
static guint64
mul_saturated (guint64 a, guint64 b)
{
  guint64 p;
  return g_uint64_checked_mul (&p, a, b) ? p : G_MAXUINT64;
}

#define KEYS(...) ((const char *const[]) { __VA_ARGS__, NULL })

/* The first of @keys that is present, in *@node and *@key as find()
 * gives them (*@node NULL when none is); an error saying the key must be
 * @what when its value is of neither @type nor @alt_type. */
static gboolean
find_typed (const HfReader *r,
            const char *const *keys,
            GType type,
            GType alt_type,
            const char *what,
            JsonNode **node,
            const char **key,
            GError **error)
{
  GType held;

  *node = find (r, keys, key);
  if (*node == NULL)
    return TRUE;
  held = JSON_NODE_HOLDS_VALUE (*node) ? json_node_get_value_type (*node)
                                       : G_TYPE_INVALID;
  if (held == G_TYPE_INVALID || (held != type && held != alt_type))
    {
      set_key_error (r, error, *key, what, node_kind (*node));
      return FALSE;
    }
  return TRUE;
}

/* Reads a non-negative integer.  Absent keys leave @out untouched and are
 * an error only when @required. */
static gboolean
get_uint (const HfReader *r, const char *const *keys, gboolean required,
          guint64 *out, GError **error)
{
  const char *key;
  JsonNode *node;
  gint64 v;

  if (!find_typed (r, keys, G_TYPE_INT64, G_TYPE_INT64,
                   "a non-negative integer", &node, &key, error))
    return FALSE;
  if (node == NULL)
    {
      if (!required)
        return TRUE;
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: required key '%s' is missing (model_type '%s')",
                   r->path, key, r->model->arch);
      return FALSE;
    }
  v = json_node_get_int (node);
  if (v < 0)
    {
      g_autofree char *got = g_strdup_printf ("%" G_GINT64_FORMAT, v);
      set_key_error (r, error, key, "a non-negative integer", got);
      return FALSE;
    }
  *out = (guint64) v;
  return TRUE;
}

static gboolean
get_double (const HfReader *r, const char *const *keys, double *out,
            GError **error)
{
  const char *key;
  JsonNode *node;

  if (!find_typed (r, keys, G_TYPE_DOUBLE, G_TYPE_INT64, "a number", &node,
                   &key, error))
    return FALSE;
  if (node != NULL)
    *out = json_node_get_double (node);
  return TRUE;
}

static gboolean
get_bool (const HfReader *r, const char *const *keys, gboolean *out,
          GError **error)
{
  const char *key;
  JsonNode *node;

  if (!find_typed (r, keys, G_TYPE_BOOLEAN, G_TYPE_BOOLEAN, "true or false",
                   &node, &key, error))
    return FALSE;
  if (node != NULL)
    *out = json_node_get_boolean (node);
  return TRUE;
}

static const char *
get_string (const HfReader *r, const char *key, GError **error)
{
  JsonNode *node = json_object_get_member (r->obj, key);

  if (node == NULL || JSON_NODE_HOLDS_NULL (node))
    return NULL;
  if (!JSON_NODE_HOLDS_VALUE (node)
      || json_node_get_value_type (node) != G_TYPE_STRING)
    {
      set_key_error (r, error, key, "a string", node_kind (node));
      return NULL;
    }
  return json_node_get_string (node);
}

static gboolean
read_common (HfReader *r, GError **error)
{
  LlamaModel *m = r->model;
  guint64 layers = 0;
  const char *dtype;
  GError *local_error = NULL;

  if (!get_uint (r, KEYS ("num_hidden_layers", "n_layer", "num_layers"),
                 TRUE, &layers, error)
      || !get_uint (r, KEYS ("hidden_size", "n_embd", "d_model"), TRUE,
                    &m->hidden, error)
      || !get_uint (r, KEYS ("num_attention_heads", "n_head"), TRUE,
                    &m->n_heads, error))
    return FALSE;
  if (layers == 0 || layers > 100000)
    {
      g_autofree char *got = g_strdup_printf ("%" G_GUINT64_FORMAT, layers);
      set_key_error (r, error, "num_hidden_layers", "between 1 and 100000",
                     got);
      return FALSE;
    }
  m->n_layers = (guint) layers;
  m->n_kv_heads = m->n_heads;
  if (!get_uint (r, KEYS ("num_key_value_heads"), FALSE, &m->n_kv_heads,
                 error)
      || !get_uint (r, KEYS ("head_dim"), FALSE, &m->head_dim, error)
      || !get_uint (r, KEYS ("vocab_size"), FALSE, &m->vocab, error)
      || !get_uint (r, KEYS ("max_position_embeddings", "n_positions",
                             "n_ctx"),
                    FALSE, &m->context, error)
      || !get_double (r, KEYS ("rms_norm_eps", "layer_norm_eps",
                               "layer_norm_epsilon"),
                      &m->norm_eps, error)
      || !get_double (r, KEYS ("rope_theta"), &m->rope_theta, error))
    return FALSE;
  if (m->head_dim == 0 && m->n_heads != 0)
    {
      if (m->hidden % m->n_heads != 0)
        {
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                       "%s: hidden size %" G_GUINT64_FORMAT " is not a "
                       "multiple of %" G_GUINT64_FORMAT " heads and there "
                       "is no head_dim",
                       r->path, m->hidden, m->n_heads);
          return FALSE;
        }
      m->head_dim = m->hidden / m->n_heads;
    }

  dtype = get_string (r, "torch_dtype", &local_error);
  if (local_error != NULL)
    {
      g_propagate_error (error, local_error);
      return FALSE;
    }
  if (dtype != NULL)
    {
      m->has_native_dtype = TRUE;
      if (g_str_equal (dtype, "float16"))
        m->native_dtype = ELK_DTYPE_F16;
      else if (g_str_equal (dtype, "bfloat16"))
        m->native_dtype = ELK_DTYPE_BF16;
      else if (g_str_equal (dtype, "float32"))
        m->native_dtype = ELK_DTYPE_F32;
      else
        {
          g_autofree char *got = g_strdup_printf ("\"%s\"", dtype);
          set_key_error (r, error, "torch_dtype",
                         "\"float16\", \"bfloat16\" or \"float32\"", got);
          return FALSE;
        }
    }
  return TRUE;
}

static gboolean
read_llama_like (HfReader *r, GError **error)
{
  LlamaModel *m = r->model;
  gboolean attention_bias = FALSE, mlp_bias = FALSE;

  if (!get_uint (r, KEYS ("intermediate_size"), TRUE, &m->ffn, error)
      || !get_bool (r, KEYS ("tie_word_embeddings"), &m->tied, error)
      || !get_bool (r, KEYS ("attention_bias"), &attention_bias, error)
      || !get_bool (r, KEYS ("mlp_bias"), &mlp_bias, error)
      || !get_uint (r, KEYS ("sliding_window"), FALSE, &m->sliding_window,
                    error))
    return FALSE;
  m->norm = LLAMA_NORM_RMS;
  m->act = LLAMA_ACT_SILU;
  m->gated = TRUE;
  m->bias_qkv = attention_bias || g_str_equal (m->arch, "qwen2")
                || g_str_equal (m->arch, "qwen2_moe");
  m->bias_o = attention_bias;
  m->bias_ffn = mlp_bias;
  m->rope_dims = m->head_dim;
  if (m->sliding_window != 0)
    m->sliding_period = 1;
  /* Qwen2 declares a window but only applies it when use_sliding_window
   * is set. */
  if (g_str_has_prefix (m->arch, "qwen"))
    {
      gboolean use = FALSE;
      if (!get_bool (r, KEYS ("use_sliding_window"), &use, error))
        return FALSE;
      if (!use)
        {
          m->sliding_window = 0;
          m->sliding_period = 0;
        }
    }
  if (g_str_equal (m->arch, "gemma2"))
    {
      m->act = LLAMA_ACT_GELU;
      m->post_norms = TRUE;
      m->tied = TRUE;
      if (!get_bool (r, KEYS ("tie_word_embeddings"), &m->tied, error))
        return FALSE;
      if (m->sliding_window != 0)
        m->sliding_period = 2;
    }
  return TRUE;
}

static gboolean
read_falcon (HfReader *r, GError **error)
{
  LlamaModel *m = r->model;
  gboolean new_arch = FALSE, multi_query = TRUE, parallel = TRUE;
  gboolean bias = FALSE;

  m->tied = TRUE;
  if (!get_bool (r, KEYS ("new_decoder_architecture"), &new_arch, error)
      || !get_bool (r, KEYS ("multi_query"), &multi_query, error)
      || !get_bool (r, KEYS ("parallel_attn"), &parallel, error)
      || !get_bool (r, KEYS ("bias"), &bias, error)
      || !get_bool (r, KEYS ("tie_word_embeddings"), &m->tied, error))
    return FALSE;
  if (new_arch)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_UNSUPPORTED,
                   "%s: Falcon's new decoder architecture (40B/180B, two "
                   "norms per layer) is not supported; Falcon-7B-style "
                   "configs are",
                   r->path);
      return FALSE;
    }
  m->n_kv_heads = multi_query ? 1 : m->n_heads;
  m->ffn = mul_saturated (4, m->hidden);
  if (!get_uint (r, KEYS ("ffn_hidden_size"), FALSE, &m->ffn, error))
    return FALSE;
  if (m->context == 0)
    m->context = 2048;
  elk__llama_model_set_layer_norm_block (m, LLAMA_ACT_GELU, bias);
  m->parallel = parallel;
  m->rope_dims = m->head_dim;
  return TRUE;
}

static gboolean
read_gpt2 (HfReader *r, GError **error)
{
  LlamaModel *m = r->model;

  m->ffn = mul_saturated (4, m->hidden);
  if (!get_uint (r, KEYS ("n_inner"), FALSE, &m->ffn, error))
    return FALSE;
  elk__llama_model_set_layer_norm_block (m, LLAMA_ACT_GELU, TRUE);
  m->tied = TRUE;
  m->n_positions = m->context;
  return TRUE;
}

static gboolean
read_opt (HfReader *r, GError **error)
{
  LlamaModel *m = r->model;
  guint64 proj = 0;
  gboolean pre_ln = TRUE, bias = TRUE;

  m->tied = TRUE;
  if (!get_uint (r, KEYS ("ffn_dim"), TRUE, &m->ffn, error)
      || !get_uint (r, KEYS ("word_embed_proj_dim"), FALSE, &proj, error)
      || !get_bool (r, KEYS ("do_layer_norm_before"), &pre_ln, error)
      || !get_bool (r, KEYS ("enable_bias"), &bias, error)
      || !get_bool (r, KEYS ("tie_word_embeddings"), &m->tied, error))
    return FALSE;
  if (proj != 0 && proj != m->hidden)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_UNSUPPORTED,
                   "%s:%u: word_embed_proj_dim %" G_GUINT64_FORMAT " differs "
                   "from hidden_size %" G_GUINT64_FORMAT " (OPT-350m's "
                   "projected embeddings are not supported)",
                   r->path, key_line (r, "word_embed_proj_dim"), proj,
                   m->hidden);
      return FALSE;
    }
  elk__llama_model_set_layer_norm_block (m, LLAMA_ACT_RELU, bias);
  m->post_ln = !pre_ln;
  /* OPT's learned positions are offset by 2. */
  m->n_positions = m->context + 2;
  return TRUE;
}

static gboolean
read_bert (HfReader *r, GError **error)
{
  LlamaModel *m = r->model;

  m->n_token_types = 2;
  if (!get_uint (r, KEYS ("intermediate_size"), TRUE, &m->ffn, error)
      || !get_uint (r, KEYS ("type_vocab_size"), FALSE, &m->n_token_types,
                    error))
    return FALSE;
  elk__llama_model_set_layer_norm_block (m, LLAMA_ACT_GELU, TRUE);
  m->post_ln = TRUE;
  elk__llama_model_set_encoder (m, TRUE);
  m->n_positions = m->context;
  return TRUE;
}

static gboolean
read_vit (HfReader *r, GError **error)
{
  LlamaModel *m = r->model;
  guint64 image = 224, patch = 16, channels = 3;
  JsonNode *labels;

  if (!get_uint (r, KEYS ("intermediate_size"), TRUE, &m->ffn, error)
      || !get_uint (r, KEYS ("image_size"), FALSE, &image, error)
      || !get_uint (r, KEYS ("patch_size"), FALSE, &patch, error)
      || !get_uint (r, KEYS ("num_channels"), FALSE, &channels, error))
    return FALSE;
  if (patch == 0 || image % patch != 0)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: image_size %" G_GUINT64_FORMAT " is not a multiple "
                   "of patch_size %" G_GUINT64_FORMAT,
                   r->path, image, patch);
      return FALSE;
    }
  labels = json_object_get_member (r->obj, "id2label");
  if (labels != NULL && JSON_NODE_HOLDS_OBJECT (labels))
    m->n_classes = json_object_get_size (json_node_get_object (labels));
  if (!get_uint (r, KEYS ("num_labels"), FALSE, &m->n_classes, error))
    return FALSE;
  if (m->n_classes == 0)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: a ViT config needs id2label or num_labels for the "
                   "classifier head",
                   r->path);
      return FALSE;
    }
  m->patch_in = mul_saturated (channels, mul_saturated (patch, patch));
  m->n_patches = mul_saturated (image / patch, image / patch);
  if (m->patch_in > (G_GUINT64_CONSTANT (1) << 32)
      || m->n_patches > (G_GUINT64_CONSTANT (1) << 32))
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: image_size %" G_GUINT64_FORMAT
                   ", patch_size %" G_GUINT64_FORMAT
                   " and num_channels %" G_GUINT64_FORMAT
                   " give patches beyond any real model",
                   r->path, image, patch, channels);
      return FALSE;
    }
  m->context = m->n_patches + 1;
  elk__llama_model_set_layer_norm_block (m, LLAMA_ACT_GELU, TRUE);
  elk__llama_model_set_encoder (m, FALSE);
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Mixture of experts and multi-head latent attention                   */
/* ------------------------------------------------------------------ */

static gboolean
out_of_range (const HfReader *r,
              GError **error,
              const char *key,
              guint64 value,
              const char *expectation)
{
  g_autofree char *got = g_strdup_printf ("%" G_GUINT64_FORMAT, value);
  set_key_error (r, error, key, expectation, got);
  return FALSE;
}

/* The routed experts' count and top-k, checked against each other. */
static gboolean
read_experts (HfReader *r,
              const char *count_key,
              gboolean required,
              GError **error)
{
  LlamaModel *m = r->model;
  const char *k_key = "num_experts_per_tok";

  if (!get_uint (r, KEYS (count_key), required, &m->n_experts, error)
      || !get_uint (r, KEYS (k_key), m->n_experts != 0, &m->n_experts_used,
                    error)
      || !get_bool (r, KEYS ("norm_topk_prob"), &m->norm_topk, error))
    return FALSE;
  if (m->n_experts == 0)
    {
      /* A dense config of a MoE family (Qwen2-MoE with num_experts 0):
       * the top-k means nothing then. */
      m->n_experts_used = 0;
      return TRUE;
    }
  if (m->n_experts > 65536)
    return out_of_range (r, error, count_key, m->n_experts, "at most 65536");
  if (m->n_experts_used == 0 || m->n_experts_used > m->n_experts)
    {
      g_autofree char *want
          = g_strdup_printf ("between 1 and %s (%" G_GUINT64_FORMAT ")",
                             count_key, m->n_experts);
      return out_of_range (r, error, k_key, m->n_experts_used, want);
    }
  return TRUE;
}

/* Qwen's mlp_only_layers: the layers that keep a dense FFN. */
static gboolean
read_mlp_only_layers (HfReader *r, GError **error)
{
  LlamaModel *m = r->model;
  JsonNode *node = json_object_get_member (r->obj, "mlp_only_layers");
  JsonArray *array;

  if (node == NULL || JSON_NODE_HOLDS_NULL (node))
    return TRUE;
  if (!JSON_NODE_HOLDS_ARRAY (node))
    {
      set_key_error (r, error, "mlp_only_layers", "an array of layer numbers",
                     node_kind (node));
      return FALSE;
    }
  array = json_node_get_array (node);
  for (guint i = 0; i < json_array_get_length (array); i++)
    {
      JsonNode *e = json_array_get_element (array, i);
      gint64 v;
      if (!JSON_NODE_HOLDS_VALUE (e)
          || json_node_get_value_type (e) != G_TYPE_INT64)
        {
          set_key_error (r, error, "mlp_only_layers",
                         "an array of layer numbers", node_kind (e));
          return FALSE;
        }
      v = json_node_get_int (e);
      if (v < 0 || v >= (gint64) m->n_layers)
        {
          g_autofree char *got = g_strdup_printf ("%" G_GINT64_FORMAT, v);
          g_autofree char *want
              = g_strdup_printf ("layer numbers from 0 to %u", m->n_layers - 1);
          set_key_error (r, error, "mlp_only_layers", want, got);
          return FALSE;
        }
      if (m->moe_layers != NULL)
        m->moe_layers[v] = FALSE;
    }
  return TRUE;
}

static gboolean
read_mixtral (HfReader *r, GError **error)
{
  LlamaModel *m = r->model;

  if (!read_llama_like (r, error)
      || !read_experts (r, "num_local_experts", TRUE, error))
    return FALSE;
  m->expert_ffn = m->ffn;
  elk__llama_model_set_moe_layers (m, 0, 1, FALSE);
  return TRUE;
}

/* Qwen2-MoE and Qwen3-MoE: every decoder_sparse_step-th layer (counting
 * from 1) is sparse unless mlp_only_layers lists it; Qwen2-MoE adds one
 * shared expert with a sigmoid gate. */
static gboolean
read_qwen_moe (HfReader *r, GError **error)
{
  LlamaModel *m = r->model;
  guint64 step = 1;

  if (!read_llama_like (r, error)
      || !read_experts (r, "num_experts", TRUE, error)
      || !get_uint (r, KEYS ("moe_intermediate_size"), m->n_experts != 0,
                    &m->expert_ffn, error)
      || !get_uint (r, KEYS ("shared_expert_intermediate_size"), FALSE,
                    &m->shared_ffn, error)
      || !get_uint (r, KEYS ("decoder_sparse_step"), FALSE, &step, error))
    return FALSE;
  if (m->shared_ffn != 0 && m->n_experts == 0)
    return out_of_range (r, error, "shared_expert_intermediate_size",
                         m->shared_ffn,
                         "0 when num_experts is 0 (a shared "
                         "expert needs routed ones)");
  if (step == 0 || step > m->n_layers)
    {
      g_autofree char *want = g_strdup_printf ("between 1 and the layer "
                                               "count %u",
                                               m->n_layers);
      return out_of_range (r, error, "decoder_sparse_step", step, want);
    }
  m->qk_norm = g_str_equal (m->arch, "qwen3_moe");
  if (m->n_experts == 0)
    return TRUE;
  if (m->expert_ffn == 0)
    return out_of_range (r, error, "moe_intermediate_size", 0, "at least 1");
  m->n_shared = m->shared_ffn != 0;
  m->shared_gate = m->shared_ffn != 0;
  elk__llama_model_set_moe_layers (m, 0, (guint) step, TRUE);
  return read_mlp_only_layers (r, error);
}

/* DeepSeek-V2 and V3: multi-head latent attention, first_k_dense_replace
 * dense layers, then experts every moe_layer_freq-th layer. */
static gboolean
read_deepseek (HfReader *r, GError **error)
{
  LlamaModel *m = r->model;
  guint64 shared = 0, first_dense = 0, freq = 1;
  const char *scoring = NULL, *topk_method = NULL;
  GError *local_error = NULL;

  m->kv_lora_rank = 0;
  if (!read_llama_like (r, error)
      || !read_experts (r, "n_routed_experts", FALSE, error)
      || !get_uint (r, KEYS ("n_shared_experts"), FALSE, &shared, error)
      || !get_uint (r, KEYS ("moe_intermediate_size"), m->n_experts != 0,
                    &m->expert_ffn, error)
      || !get_uint (r, KEYS ("first_k_dense_replace"), FALSE, &first_dense,
                    error)
      || !get_uint (r, KEYS ("moe_layer_freq"), FALSE, &freq, error)
      || !get_uint (r, KEYS ("q_lora_rank"), FALSE, &m->q_lora_rank, error)
      || !get_uint (r, KEYS ("kv_lora_rank"), TRUE, &m->kv_lora_rank, error)
      || !get_uint (r, KEYS ("qk_nope_head_dim"), TRUE, &m->qk_nope, error)
      || !get_uint (r, KEYS ("qk_rope_head_dim"), TRUE, &m->qk_rope, error)
      || !get_uint (r, KEYS ("v_head_dim"), TRUE, &m->v_head_dim, error))
    return FALSE;
  if (m->kv_lora_rank == 0)
    return out_of_range (r, error, "kv_lora_rank", 0, "at least 1");
  if (m->qk_rope == 0)
    return out_of_range (r, error, "qk_rope_head_dim", 0, "at least 1");
  if (m->qk_nope == 0)
    return out_of_range (r, error, "qk_nope_head_dim", 0, "at least 1");
  if (m->v_head_dim == 0)
    return out_of_range (r, error, "v_head_dim", 0, "at least 1");
  m->head_dim = m->qk_nope + m->qk_rope;
  m->rope_dims = m->qk_rope;
  m->n_kv_heads = m->n_heads;

  if (shared != 0 && m->n_experts == 0)
    return out_of_range (r, error, "n_shared_experts", shared,
                         "0 when there are no routed experts "
                         "(n_routed_experts)");
  if (m->n_experts == 0)
    return TRUE;
  if (m->expert_ffn == 0)
    return out_of_range (r, error, "moe_intermediate_size", 0, "at least 1");
  if (freq == 0 || freq > m->n_layers)
    {
      g_autofree char *want = g_strdup_printf ("between 1 and the layer "
                                               "count %u",
                                               m->n_layers);
      return out_of_range (r, error, "moe_layer_freq", freq, want);
    }
  if (first_dense >= m->n_layers)
    {
      g_autofree char *want = g_strdup_printf ("less than the layer count "
                                               "%u",
                                               m->n_layers);
      return out_of_range (r, error, "first_k_dense_replace", first_dense,
                           want);
    }
  m->n_shared = shared;
  m->shared_ffn = mul_saturated (shared, m->expert_ffn);
  elk__llama_model_set_moe_layers (m, (guint) first_dense, (guint) freq, FALSE);

  scoring = get_string (r, "scoring_func", &local_error);
  if (local_error == NULL)
    topk_method = get_string (r, "topk_method", &local_error);
  if (local_error != NULL)
    {
      g_propagate_error (error, local_error);
      return FALSE;
    }
  if (scoring != NULL && !g_str_equal (scoring, "softmax")
      && !g_str_equal (scoring, "sigmoid"))
    {
      g_autofree char *got = g_strdup_printf ("\"%s\"", scoring);
      set_key_error (r, error, "scoring_func", "\"softmax\" or \"sigmoid\"",
                     got);
      return FALSE;
    }
  m->router_sigmoid = scoring != NULL && g_str_equal (scoring, "sigmoid");
  /* V3's auxiliary-loss-free balancing adds a learned bias per expert
   * (e_score_correction_bias) to the scores before the top-k. */
  m->router_bias = topk_method != NULL && g_str_equal (topk_method, "noaux_tc");
  return TRUE;
}

static const struct
{
  const char *model_type;
  gboolean (*read) (HfReader *r, GError **error);
} families[] = {
  { "llama", read_llama_like },
  { "mistral", read_llama_like },
  { "qwen2", read_llama_like },
  { "gemma2", read_llama_like },
  { "phi3", read_llama_like },
  { "falcon", read_falcon },
  { "RefinedWebModel", read_falcon },
  { "gpt2", read_gpt2 },
  { "opt", read_opt },
  { "bert", read_bert },
  { "vit", read_vit },
  { "mixtral", read_mixtral },
  { "qwen2_moe", read_qwen_moe },
  { "qwen3_moe", read_qwen_moe },
  { "deepseek_v2", read_deepseek },
  { "deepseek_v3", read_deepseek },
};

static char *
stem_of (const char *path)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  char *dot;

  /* "models/llama-2-7b/config.json" is best named after its folder. */
  if (g_str_equal (base, "config.json") && !g_str_equal (dir, "."))
    return g_path_get_basename (dir);
  dot = strrchr (base, '.');
  if (dot != NULL && dot != base)
    *dot = '\0';
  return g_strdup (base);
}

LlamaModel *
elk__llama_model_new_from_hf_data (const char *data,
                                   gssize length,
                                   const char *display_name,
                                   GError **error)
{
  return elk__llama_model_new_from_hf_data_with_limits (data, length,
                                                        display_name, NULL,
                                                        error);
}

/**
 * elk__llama_model_new_from_hf_data_with_limits:
 * @limits: (nullable): the limits; %NULL for the defaults
 *
 * Like elk__llama_model_new_from_hf_data(), refusing a file beyond @limits
 * (size, nesting) with %LLAMA_ERROR_LIMIT.
 */
LlamaModel *
elk__llama_model_new_from_hf_data_with_limits (const char *data,
                                               gssize length,
                                               const char *display_name,
                                               const LlamaLimits *limits,
                                               GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  LlamaLimits defaults;
  DuplicateCheck check = { NULL, NULL, 0 };
  gboolean parsed;
  g_autoptr (LlamaModel) model = NULL;
  g_autoptr (GError) local_error = NULL;
  HfReader r = { .path = display_name, .text = data,
                 .length = length < 0 ? strlen (data) : (gsize) length };
  JsonNode *root;
  const char *model_type;

  if (limits == NULL)
    {
      elk__llama_limits_init (&defaults);
      limits = &defaults;
    }
  if (r.length > limits->max_config_size)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_LIMIT,
                   "%s: the file has %" G_GSIZE_FORMAT " bytes, more than "
                   "the max-config-size limit of %" G_GUINT64_FORMAT
                   "; raise the llama frontend's 'max-config-size' "
                   "parameter to read it",
                   display_name, r.length, limits->max_config_size);
      return NULL;
    }
  if (!check_depth (&r, limits->max_json_depth, error))
    return NULL;

  check.seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_signal_connect (parser, "object-member", G_CALLBACK (on_object_member),
                    &check);
  parsed = json_parser_load_from_data (parser, data, length, &local_error);
  g_signal_handlers_disconnect_by_data (parser, &check);
  g_hash_table_unref (check.seen);
  if (parsed && check.duplicate != NULL)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_FORMAT,
                   "%s:%u: key '%s' appears twice in one object", display_name,
                   check.line, check.duplicate);
      g_free (check.duplicate);
      return NULL;
    }
  g_free (check.duplicate);
  if (!parsed)
    {
      /* json-glib's message already carries "line:column". */
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_FORMAT, "%s:%s",
                   display_name, local_error->message);
      return NULL;
    }
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_FORMAT,
                   "%s:1: expected a JSON object (a Hugging Face "
                   "config.json)",
                   display_name);
      return NULL;
    }
  r.obj = json_node_get_object (root);
  model = elk__llama_model_new ();
  model->source = g_strdup (display_name);
  model->name = stem_of (display_name);
  r.model = model;

  model_type = get_string (&r, "model_type", &local_error);
  if (local_error != NULL)
    {
      g_propagate_error (error, g_steal_pointer (&local_error));
      return NULL;
    }
  if (model_type == NULL)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: required key 'model_type' is missing", display_name);
      return NULL;
    }
  model->arch = g_strdup (model_type);
  for (guint i = 0; i < G_N_ELEMENTS (families); i++)
    if (g_str_equal (families[i].model_type, model_type))
      {
        /* Numbers the family readers need (hidden size, head count)
         * first. */
        if (!read_common (&r, error) || !families[i].read (&r, error))
          return NULL;
        if (g_str_equal (model_type, "RefinedWebModel"))
          {
            g_free (model->arch);
            model->arch = g_strdup ("falcon");
          }
        if (model->context == 0)
          {
            g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                         "%s: required key 'max_position_embeddings' is "
                         "missing",
                         display_name);
            return NULL;
          }
        if (!elk__llama_model_check (model, error))
          return NULL;
        return g_steal_pointer (&model);
      }

  {
    GString *list = g_string_new (NULL);
    g_autofree char *text = NULL;
    for (guint i = 0; i < G_N_ELEMENTS (families); i++)
      g_string_append_printf (list, "%s%s", i ? ", " : "",
                              families[i].model_type);
    text = g_string_free (list, FALSE);
    g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_UNSUPPORTED,
                 "%s:%u: model_type '%s' is not supported by the llama "
                 "frontend (supported: %s)",
                 display_name, key_line (&r, "model_type"), model_type, text);
    return NULL;
  }
}

LlamaModel *
elk__llama_model_new_from_hf_config (const char *path, GError **error)
{
  return elk__llama_model_new_from_hf_config_with_limits (path, NULL, error);
}

LlamaModel *
elk__llama_model_new_from_hf_config_with_limits (const char *path,
                                                 const LlamaLimits *limits,
                                                 GError **error)
{
  g_autofree char *data = NULL;
  gsize length;
  g_autoptr (GError) local_error = NULL;
  LlamaLimits defaults;
  GStatBuf st;

  if (limits == NULL)
    {
      elk__llama_limits_init (&defaults);
      limits = &defaults;
    }
  /* Refuse a huge file before reading it into memory, and anything that
   * is not a regular file (/dev/zero would never end). */
  if (g_stat (path, &st) == 0 && !S_ISREG (st.st_mode))
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_IO,
                   "%s: cannot read the config: not a regular file", path);
      return NULL;
    }
  if (g_stat (path, &st) == 0
      && (guint64) st.st_size > limits->max_config_size)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_LIMIT,
                   "%s: the file has %" G_GUINT64_FORMAT " bytes, more than "
                   "the max-config-size limit of %" G_GUINT64_FORMAT
                   "; raise the llama frontend's 'max-config-size' "
                   "parameter to read it",
                   path, (guint64) st.st_size, limits->max_config_size);
      return NULL;
    }

  if (!g_file_get_contents (path, &data, &length, &local_error))
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_IO,
                   "%s: cannot read the config: %s", path,
                   local_error->message);
      return NULL;
    }
  return elk__llama_model_new_from_hf_data_with_limits (data, (gssize) length,
                                                        path, limits, error);
}
