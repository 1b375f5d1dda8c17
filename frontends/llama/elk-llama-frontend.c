/* elk-llama-frontend.c: the "llama" frontend plugin.
 *
 * Loads a decoder-only (or encoder) transformer from a GGUF file, a Hugging
 * Face config.json or a built-in preset, and builds its decode, prefill or
 * training-forward graph.  Every tunable is a property; the experiment
 * file's <param> elements set them and elk-inspect lists them.
 */
#include "config.h"

#include <elk/elk-frontend.h>
#include <elk/elk-plugin.h>

#include "elk-llama-private.h"

#define ELK_TYPE_LLAMA_FRONTEND (elk_llama_frontend_get_type ())
G_DECLARE_FINAL_TYPE (ElkLlamaFrontend, elk_llama_frontend, ELK,
                      LLAMA_FRONTEND, GObject)

#define ELK_TYPE_LLAMA_PHASE (elk_llama_phase_get_type ())
#define ELK_TYPE_LLAMA_DTYPE (elk_llama_dtype_get_type ())
#define ELK_TYPE_LLAMA_GRANULARITY (elk_llama_granularity_get_type ())
#define ELK_TYPE_LLAMA_ROUTING (elk_llama_routing_get_type ())
GType elk_llama_routing_get_type (void);
#define ELK_TYPE_LLAMA_EXPERTS (elk_llama_experts_get_type ())
GType elk_llama_experts_get_type (void);
GType elk_llama_phase_get_type (void);
GType elk_llama_dtype_get_type (void);
GType elk_llama_granularity_get_type (void);

/* The C enums are private (LlamaPhase, ...), but the GTypes registered for
 * the properties are process-global and carry the plugin's own prefix, as
 * the chips' enums do (ElkIpuPodMode, ElkNocSimPlacement): the first
 * argument is only the registered name. */
G_DEFINE_ENUM_TYPE (ElkLlamaPhase,
                    elk_llama_phase,
                    G_DEFINE_ENUM_VALUE (LLAMA_PHASE_DECODE, "decode"),
                    G_DEFINE_ENUM_VALUE (LLAMA_PHASE_PREFILL, "prefill"),
                    G_DEFINE_ENUM_VALUE (LLAMA_PHASE_TRAIN_FORWARD,
                                         "train-forward"))

G_DEFINE_ENUM_TYPE (ElkLlamaDType,
                    elk_llama_dtype,
                    G_DEFINE_ENUM_VALUE (LLAMA_DTYPE_FILE, "file"),
                    G_DEFINE_ENUM_VALUE (LLAMA_DTYPE_FP16, "fp16"),
                    G_DEFINE_ENUM_VALUE (LLAMA_DTYPE_BF16, "bf16"),
                    G_DEFINE_ENUM_VALUE (LLAMA_DTYPE_FP32, "fp32"))

G_DEFINE_ENUM_TYPE (ElkLlamaGranularity,
                    elk_llama_granularity,
                    G_DEFINE_ENUM_VALUE (LLAMA_GRANULARITY_ELK, "elk"),
                    G_DEFINE_ENUM_VALUE (LLAMA_GRANULARITY_ARTIFACT,
                                         "artifact"))

G_DEFINE_ENUM_TYPE (ElkLlamaRouting,
                    elk_llama_routing,
                    G_DEFINE_ENUM_VALUE (LLAMA_ROUTING_UNIFORM, "uniform"),
                    G_DEFINE_ENUM_VALUE (LLAMA_ROUTING_SKEWED, "skewed"),
                    G_DEFINE_ENUM_VALUE (LLAMA_ROUTING_FILE, "file"))

G_DEFINE_ENUM_TYPE (ElkLlamaExperts,
                    elk_llama_experts,
                    G_DEFINE_ENUM_VALUE (LLAMA_EXPERTS_ROUTED, "routed"),
                    G_DEFINE_ENUM_VALUE (LLAMA_EXPERTS_ALL, "all"))

struct _ElkLlamaFrontend
{
  GObject parent_instance;

  char *model;
  char *preset;
  LlamaBuildOptions options;
  LlamaLimits limits;
};

enum
{
  PROP_0,
  PROP_MODEL,
  PROP_PRESET,
  PROP_PHASE,
  PROP_BATCH,
  PROP_SEQ,
  PROP_DTYPE,
  PROP_FUSE_QKV,
  PROP_FUSE_FFN,
  PROP_LAYERS,
  PROP_SPLIT_FACTOR,
  PROP_SPLIT_CORES,
  PROP_GRANULARITY,
  PROP_ROUTING,
  PROP_ROUTING_SKEW,
  PROP_ROUTING_FILE,
  PROP_ROUTING_SEED,
  PROP_EXPERTS,
  PROP_MLA_ABSORB,
  PROP_MAX_FILE_SIZE,
  PROP_MAX_CONFIG_SIZE,
  PROP_MAX_TENSORS,
  PROP_MAX_METADATA_ENTRIES,
  PROP_MAX_STRING_LENGTH,
  PROP_MAX_ARRAY_LENGTH,
  PROP_MAX_JSON_DEPTH,
  N_PROPS
};

static GParamSpec *props[N_PROPS];

static void elk_llama_frontend_iface_init (ElkFrontendInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (ElkLlamaFrontend, elk_llama_frontend,
                               G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (
                                   ELK_TYPE_FRONTEND,
                                   elk_llama_frontend_iface_init))

static ElkGraph *
elk_llama_frontend_load (ElkFrontend *frontend, GError **error)
{
  ElkLlamaFrontend *self = ELK_LLAMA_FRONTEND (frontend);
  g_autoptr (LlamaModel) model = NULL;
  gboolean has_model = self->model != NULL && *self->model != '\0';
  gboolean has_preset = self->preset != NULL && *self->preset != '\0';

  if (has_model == has_preset)
    {
      g_autofree char *list = elk__llama_preset_list ();
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "llama frontend: set exactly one of 'model' (a GGUF file "
                   "or a Hugging Face config.json) and 'preset' (one of: "
                   "%s)%s",
                   list, has_model ? "; both are set" : "; neither is set");
      return NULL;
    }
  model = has_model ? elk__llama_model_new_from_file_with_limits (self->model,
                                                                  &self->limits,
                                                                  error)
                    : elk__llama_model_new_from_preset (self->preset, error);
  if (model == NULL)
    return NULL;
  return elk__llama_build_graph (model, &self->options, error);
}

static void
elk_llama_frontend_iface_init (ElkFrontendInterface *iface)
{
  iface->load = elk_llama_frontend_load;
}

static void
elk_llama_frontend_get_property (GObject *object, guint prop_id,
                                 GValue *value, GParamSpec *pspec)
{
  ElkLlamaFrontend *self = ELK_LLAMA_FRONTEND (object);

  switch (prop_id)
    {
    case PROP_MODEL:
      g_value_set_string (value, self->model);
      break;
    case PROP_PRESET:
      g_value_set_string (value, self->preset);
      break;
    case PROP_PHASE:
      g_value_set_enum (value, self->options.phase);
      break;
    case PROP_BATCH:
      g_value_set_uint (value, (guint) self->options.batch);
      break;
    case PROP_SEQ:
      g_value_set_uint (value, (guint) self->options.seq);
      break;
    case PROP_DTYPE:
      g_value_set_enum (value, self->options.dtype);
      break;
    case PROP_FUSE_QKV:
      g_value_set_boolean (value, self->options.fuse_qkv);
      break;
    case PROP_FUSE_FFN:
      g_value_set_boolean (value, self->options.fuse_ffn);
      break;
    case PROP_LAYERS:
      g_value_set_uint (value, self->options.layers);
      break;
    case PROP_SPLIT_FACTOR:
      g_value_set_int (value, self->options.split_factor);
      break;
    case PROP_SPLIT_CORES:
      g_value_set_uint (value, self->options.split_cores);
      break;
    case PROP_GRANULARITY:
      g_value_set_enum (value, self->options.granularity);
      break;
    case PROP_ROUTING:
      g_value_set_enum (value, self->options.routing);
      break;
    case PROP_ROUTING_SKEW:
      g_value_set_double (value, self->options.routing_skew);
      break;
    case PROP_ROUTING_FILE:
      g_value_set_string (value, self->options.routing_file);
      break;
    case PROP_ROUTING_SEED:
      g_value_set_uint64 (value, self->options.routing_seed);
      break;
    case PROP_EXPERTS:
      g_value_set_enum (value, self->options.experts);
      break;
    case PROP_MLA_ABSORB:
      g_value_set_boolean (value, self->options.mla_absorb);
      break;
    case PROP_MAX_FILE_SIZE:
      g_value_set_uint64 (value, self->limits.max_file_size);
      break;
    case PROP_MAX_CONFIG_SIZE:
      g_value_set_uint64 (value, self->limits.max_config_size);
      break;
    case PROP_MAX_TENSORS:
      g_value_set_uint64 (value, self->limits.max_tensors);
      break;
    case PROP_MAX_METADATA_ENTRIES:
      g_value_set_uint64 (value, self->limits.max_metadata);
      break;
    case PROP_MAX_STRING_LENGTH:
      g_value_set_uint64 (value, self->limits.max_string_length);
      break;
    case PROP_MAX_ARRAY_LENGTH:
      g_value_set_uint64 (value, self->limits.max_array_length);
      break;
    case PROP_MAX_JSON_DEPTH:
      g_value_set_uint (value, self->limits.max_json_depth);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_llama_frontend_set_property (GObject *object, guint prop_id,
                                 const GValue *value, GParamSpec *pspec)
{
  ElkLlamaFrontend *self = ELK_LLAMA_FRONTEND (object);

  switch (prop_id)
    {
    case PROP_MODEL:
      g_free (self->model);
      self->model = g_value_dup_string (value);
      break;
    case PROP_PRESET:
      g_free (self->preset);
      self->preset = g_value_dup_string (value);
      break;
    case PROP_PHASE:
      self->options.phase = g_value_get_enum (value);
      break;
    case PROP_BATCH:
      self->options.batch = g_value_get_uint (value);
      break;
    case PROP_SEQ:
      self->options.seq = g_value_get_uint (value);
      break;
    case PROP_DTYPE:
      self->options.dtype = g_value_get_enum (value);
      break;
    case PROP_FUSE_QKV:
      self->options.fuse_qkv = g_value_get_boolean (value);
      break;
    case PROP_FUSE_FFN:
      self->options.fuse_ffn = g_value_get_boolean (value);
      break;
    case PROP_LAYERS:
      self->options.layers = g_value_get_uint (value);
      break;
    case PROP_SPLIT_FACTOR:
      self->options.split_factor = g_value_get_int (value);
      break;
    case PROP_SPLIT_CORES:
      self->options.split_cores = g_value_get_uint (value);
      break;
    case PROP_GRANULARITY:
      self->options.granularity = g_value_get_enum (value);
      break;
    case PROP_ROUTING:
      self->options.routing = g_value_get_enum (value);
      break;
    case PROP_ROUTING_SKEW:
      self->options.routing_skew = g_value_get_double (value);
      break;
    case PROP_ROUTING_FILE:
      g_free (self->options.routing_file);
      self->options.routing_file = g_value_dup_string (value);
      break;
    case PROP_ROUTING_SEED:
      self->options.routing_seed = g_value_get_uint64 (value);
      break;
    case PROP_EXPERTS:
      self->options.experts = g_value_get_enum (value);
      break;
    case PROP_MLA_ABSORB:
      self->options.mla_absorb = g_value_get_boolean (value);
      break;
    case PROP_MAX_FILE_SIZE:
      self->limits.max_file_size = g_value_get_uint64 (value);
      break;
    case PROP_MAX_CONFIG_SIZE:
      self->limits.max_config_size = g_value_get_uint64 (value);
      break;
    case PROP_MAX_TENSORS:
      self->limits.max_tensors = g_value_get_uint64 (value);
      break;
    case PROP_MAX_METADATA_ENTRIES:
      self->limits.max_metadata = g_value_get_uint64 (value);
      break;
    case PROP_MAX_STRING_LENGTH:
      self->limits.max_string_length = g_value_get_uint64 (value);
      break;
    case PROP_MAX_ARRAY_LENGTH:
      self->limits.max_array_length = g_value_get_uint64 (value);
      break;
    case PROP_MAX_JSON_DEPTH:
      self->limits.max_json_depth = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_llama_frontend_finalize (GObject *object)
{
  ElkLlamaFrontend *self = ELK_LLAMA_FRONTEND (object);

  g_free (self->model);
  g_free (self->preset);
  g_free (self->options.routing_file);
  G_OBJECT_CLASS (elk_llama_frontend_parent_class)->finalize (object);
}

static void
elk_llama_frontend_class_init (ElkLlamaFrontendClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
                   | G_PARAM_EXPLICIT_NOTIFY;

  object_class->get_property = elk_llama_frontend_get_property;
  object_class->set_property = elk_llama_frontend_set_property;
  object_class->finalize = elk_llama_frontend_finalize;

  props[PROP_MODEL] = g_param_spec_string (
      "model", "Model file",
      "A GGUF file (v2/v3) or a Hugging Face config.json, told apart by "
      "content; relative to the experiment file. Exclusive with 'preset'",
      NULL, rw | ELK_PARAM_PATH);
  props[PROP_PRESET] = g_param_spec_string (
      "preset", "Preset",
      "A built-in model: every row of models.md (llama-2-7b, ..., "
      "vit-l-16), mixture-of-experts models (mixtral-8x7b, mixtral-8x22b, "
      "qwen3-30b-a3b, deepseek-v3, deepseek-v2-lite) and the paper's "
      "graphs (llama2-13b-paper, "
      "gemma2-27b-paper, opt-30b-paper, llama2-70b-paper, vit-huge-paper). "
      "Exclusive with 'model'",
      NULL, rw);
  props[PROP_PHASE] = g_param_spec_enum (
      "phase", "Phase",
      "decode: one new token per sequence reading a KV cache of 'seq' "
      "entries from HBM; prefill: 'seq' tokens per sequence, logits of the "
      "last one; train-forward: the forward pass over 'seq' tokens with "
      "logits for all of them",
      ELK_TYPE_LLAMA_PHASE, LLAMA_PHASE_DECODE, rw);
  props[PROP_BATCH] = g_param_spec_uint (
      "batch", "Batch", "Sequences processed together", 1, 65536, 32, rw);
  props[PROP_SEQ] = g_param_spec_uint (
      "seq", "Sequence length",
      "KV-cache length in decode, tokens per sequence otherwise; 0 = the "
      "model's default (min(2048, context); the patch count of a ViT)",
      0, 1u << 24, 0, rw);
  props[PROP_DTYPE] = g_param_spec_enum (
      "dtype", "Element type",
      "Storage type of weights, activations and KV cache; 'file' keeps the "
      "GGUF tensors' own types (Q4_K stays Q4_K) with FP16 activations and "
      "KV cache. The artifact uses 2 bytes per element (fp16)",
      ELK_TYPE_LLAMA_DTYPE, LLAMA_DTYPE_FP16, rw);
  props[PROP_FUSE_QKV] = g_param_spec_boolean (
      "fuse-qkv", "Fuse QKV",
      "One Q/K/V projection MatMul per layer instead of three (as the "
      "paper's graphs)", TRUE, rw);
  props[PROP_FUSE_FFN] = g_param_spec_boolean (
      "fuse-ffn", "Fuse gate and up",
      "One gate+up MatMul per layer for gated FFNs (SwiGLU, GeGLU) instead "
      "of two (as the paper's graphs)", TRUE, rw);
  props[PROP_LAYERS] = g_param_spec_uint (
      "layers", "Layers",
      "Build only the first N transformer layers (0 = all); for quick "
      "tests", 0, 100000, 0, rw);
  props[PROP_SPLIT_FACTOR] = g_param_spec_int (
      "split-factor", "Split factor",
      "The artifact's operator splitting: MatMuls larger than "
      "(split-cores / split-factor) MB of FP16 are halved along their "
      "largest dimension, repeatedly (split-factor + 1 for train-forward). "
      "-1 = the model's default (3, 2, 4, 3 for the llama2-13b, gemma2, "
      "opt-30b, llama2-70b paper presets; off otherwise), 0 = off",
      -1, 1024, -1, rw);
  props[PROP_SPLIT_CORES]
      = g_param_spec_uint ("split-cores", "Split cores",
                           "Core count in the splitting threshold (the "
                           "artifact's num_cores; "
                           "5888 = IPU-POD4)",
                           1, 1u << 24, LLAMA_DEFAULT_SPLIT_CORES, rw);
  props[PROP_GRANULARITY] = g_param_spec_enum (
      "granularity", "Graph granularity",
      "elk: elk's graph (RoPE, attention scale and mask left out, every "
      "activation on chip). artifact: a measurement device reproducing the "
      "Elk artifact's decode graphs and HBM accounting for comparison, not "
      "a better model: 48 operators per Llama layer (RoPE, scale, mask, "
      "7-operator norms, softmax on [b, h, 1, 1]), and every activation "
      "input the previous operator neither produced nor read is a separate "
      "HBM tensor with a preload (docs/compiler.md, \"The baseline gap\"). "
      "Llama-structured decode graphs only",
      ELK_TYPE_LLAMA_GRANULARITY, LLAMA_GRANULARITY_ELK, rw);
  props[PROP_ROUTING] = g_param_spec_enum (
      "routing", "Expert routing",
      "Mixture-of-experts models: how tokens choose their top-k experts in "
      "the sampled routing the graph is built for. uniform: every k-subset "
      "alike; skewed: expert i weighs 1/(i+1)^routing-skew (Zipf); file: "
      "per-layer expert frequencies from routing-file",
      ELK_TYPE_LLAMA_ROUTING, LLAMA_ROUTING_UNIFORM, rw);
  props[PROP_ROUTING_SKEW]
      = g_param_spec_double ("routing-skew", "Routing skew",
                             "Zipf exponent of routing=skewed (0 = uniform "
                             "weights)",
                             0.0, 64.0, 1.0, rw);
  props[PROP_ROUTING_FILE] = g_param_spec_string (
      "routing-file", "Routing file",
      "routing=file: a text file with one line per MoE layer, '<layer> f0 "
      "f1 ... f(E-1)' (frequencies or counts, normalised per layer), and "
      "optionally a line '* f0 ...' for the layers not listed; '#' starts "
      "a comment. Relative to the experiment file",
      NULL, rw | ELK_PARAM_PATH);
  props[PROP_ROUTING_SEED]
      = g_param_spec_uint64 ("routing-seed", "Routing seed",
                             "Seed of the sampled routing: the same seed gives "
                             "the same experts "
                             "per layer",
                             0, G_MAXUINT64, 0, rw);
  props[PROP_EXPERTS] = g_param_spec_enum (
      "experts", "Routed experts in the graph",
      "Mixture-of-experts models: routed = each MoE layer holds the experts "
      "the sampled routing uses, as if the routing were known; all = it "
      "holds all E routed experts, each conditional on the layer's top-k "
      "router with the probability, under the routing model, that a step "
      "selects it, and the sampled routing says which execute, so that a "
      "scheduler decides preloads under routing uncertainty",
      ELK_TYPE_LLAMA_EXPERTS, LLAMA_EXPERTS_ROUTED, rw);
  props[PROP_MLA_ABSORB] = g_param_spec_boolean (
      "mla-absorb", "Absorbed MLA decode",
      "Multi-head latent attention (DeepSeek-V2/V3) in decode: fold the "
      "key up-projection into the query and the value up-projection after "
      "attention, so scores and context are computed on the cached latent "
      "instead of decompressing it into per-head keys and values",
      FALSE, rw);

  /* Resource limits (docs/reliability.md).  Counts are checked against
   * the file size first, so these only matter for honest files. */
  props[PROP_MAX_FILE_SIZE]
      = g_param_spec_uint64 ("max-file-size", "Largest GGUF file",
                             "Largest accepted GGUF file in bytes; the file is "
                             "mapped and its "
                             "tensor data never read",
                             1, G_MAXUINT64, LLAMA_DEFAULT_MAX_FILE_SIZE, rw);
  props[PROP_MAX_CONFIG_SIZE]
      = g_param_spec_uint64 ("max-config-size", "Largest config.json",
                             "Largest accepted Hugging Face config.json in "
                             "bytes",
                             1, G_MAXUINT32, LLAMA_DEFAULT_MAX_CONFIG_SIZE, rw);
  props[PROP_MAX_TENSORS]
      = g_param_spec_uint64 ("max-tensors", "Most tensors",
                             "Most tensors in a GGUF file", 1, G_MAXUINT32,
                             LLAMA_DEFAULT_MAX_TENSORS, rw);
  props[PROP_MAX_METADATA_ENTRIES]
      = g_param_spec_uint64 ("max-metadata-entries", "Most metadata entries",
                             "Most metadata key-value pairs in a GGUF file", 1,
                             G_MAXUINT32, LLAMA_DEFAULT_MAX_METADATA, rw);
  props[PROP_MAX_STRING_LENGTH] = g_param_spec_uint64 (
      "max-string-length", "Longest string",
      "Longest GGUF string (keys, values, tensor names) in bytes", 1,
      G_MAXUINT64, LLAMA_DEFAULT_MAX_STRING_LENGTH, rw);
  props[PROP_MAX_ARRAY_LENGTH] = g_param_spec_uint64 (
      "max-array-length", "Longest array",
      "Most elements in one GGUF metadata array (token lists are the "
      "longest: 32000 to 256000)",
      1, G_MAXUINT64, LLAMA_DEFAULT_MAX_ARRAY_LENGTH, rw);
  props[PROP_MAX_JSON_DEPTH] = g_param_spec_uint (
      "max-json-depth", "Deepest JSON nesting",
      "Deepest nesting of arrays and objects in a config.json (the JSON "
      "parser recurses once per level)",
      1, LLAMA_MAX_JSON_DEPTH_CEILING, LLAMA_DEFAULT_MAX_JSON_DEPTH, rw);

  g_object_class_install_properties (object_class, N_PROPS, props);
}

static void
elk_llama_frontend_init (ElkLlamaFrontend *self)
{
  elk__llama_build_options_init (&self->options);
  elk__llama_limits_init (&self->limits);
}

static gboolean
llama_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_FRONTEND, "llama",
                                 ELK_TYPE_LLAMA_FRONTEND, error);
}

ELK_PLUGIN_DEFINE (llama,
                   "Llama-family transformers from GGUF files, Hugging Face "
                   "config.json and presets",
                   "0.1", llama_register)
