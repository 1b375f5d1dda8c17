/* elk-llama-private.h: shared declarations of the llama frontend plugin.
 *
 * The plugin is split into a GGUF reader (elk-gguf.c), a Hugging Face
 * config.json reader (elk-llama-hf.c), the built-in presets
 * (elk-llama-presets.c), the mapping from GGUF metadata to a model
 * description (elk-llama-model.c), the graph builder (elk-llama-graph.c) and
 * the GObject frontend itself (elk-llama-frontend.c).  Everything here is
 * internal: the plugin exports only elk_plugin_llama_get_desc(), and the
 * tests compile these sources into their executables directly.
 */
#pragma once

#include <glib.h>
#include <elk/elk-error.h>
#include <elk/elk-graph.h>

G_BEGIN_DECLS

/**
 * LlamaError:
 * @LLAMA_ERROR_IO: the model file cannot be read.
 * @LLAMA_ERROR_FORMAT: the file breaks the GGUF or JSON format (bad
 *   magic, truncated field, count larger than the file, misaligned offset).
 * @LLAMA_ERROR_UNSUPPORTED: a well-formed file that elk cannot use (an
 *   unknown architecture, GGUF version 1, an unknown tensor type).
 * @LLAMA_ERROR_INVALID: inconsistent hyper-parameters or properties.
 * @LLAMA_ERROR_LIMIT: a resource limit (#LlamaLimits) was exceeded;
 *   the message names the limit and the parameter that raises it.
 */
typedef enum
{
  LLAMA_ERROR_IO,
  LLAMA_ERROR_FORMAT,
  LLAMA_ERROR_UNSUPPORTED,
  LLAMA_ERROR_INVALID,
  LLAMA_ERROR_LIMIT,
} LlamaError;

#define LLAMA_ERROR (elk__llama_error_quark ())
GQuark elk__llama_error_quark (void);

/* ------------------------------------------------------------------ */
/* Resource limits                                                      */
/* ------------------------------------------------------------------ */

/**
 * LlamaLimits:
 * @max_file_size: largest GGUF file, in bytes.  The file is mapped and
 *   its tensor data is never read, so this only bounds address space.
 * @max_config_size: largest config.json, in bytes (read into memory).
 * @max_tensors: most tensor infos in a GGUF file.
 * @max_metadata: most metadata key-value pairs in a GGUF file.
 * @max_string_length: longest GGUF string (keys, values, tensor names).
 * @max_array_length: most elements in one GGUF metadata array.
 * @max_json_depth: deepest nesting of arrays and objects in config.json.
 *
 * What the readers accept before they refuse a file with
 * %LLAMA_ERROR_LIMIT.  Every field is a parameter of the llama
 * frontend (max-file-size, max-config-size, max-tensors,
 * max-metadata-entries, max-string-length, max-array-length,
 * max-json-depth) and docs/reliability.md lists the defaults.  Counts are
 * also checked against the file size first, so a corrupted count is a
 * format error whatever the limits are.
 */
typedef struct
{
  guint64 max_file_size;
  guint64 max_config_size;
  guint64 max_tensors;
  guint64 max_metadata;
  guint64 max_string_length;
  guint64 max_array_length;
  guint max_json_depth;
} LlamaLimits;

#define LLAMA_DEFAULT_MAX_FILE_SIZE (G_GUINT64_CONSTANT (1) << 40)
#define LLAMA_DEFAULT_MAX_CONFIG_SIZE (G_GUINT64_CONSTANT (16) << 20)
#define LLAMA_DEFAULT_MAX_TENSORS 65536
#define LLAMA_DEFAULT_MAX_METADATA 65536
#define LLAMA_DEFAULT_MAX_STRING_LENGTH (G_GUINT64_CONSTANT (16) << 20)
#define LLAMA_DEFAULT_MAX_ARRAY_LENGTH (G_GUINT64_CONSTANT (1) << 24)
/* json-glib parses recursively; real configs nest three or four deep. */
#define LLAMA_DEFAULT_MAX_JSON_DEPTH 64
#define LLAMA_MAX_JSON_DEPTH_CEILING 4096

void elk__llama_limits_init (LlamaLimits *limits);

/* ------------------------------------------------------------------ */
/* GGUF                                                                 */
/* ------------------------------------------------------------------ */

typedef enum
{
  GGUF_TYPE_UINT8 = 0,
  GGUF_TYPE_INT8 = 1,
  GGUF_TYPE_UINT16 = 2,
  GGUF_TYPE_INT16 = 3,
  GGUF_TYPE_UINT32 = 4,
  GGUF_TYPE_INT32 = 5,
  GGUF_TYPE_FLOAT32 = 6,
  GGUF_TYPE_BOOL = 7,
  GGUF_TYPE_STRING = 8,
  GGUF_TYPE_ARRAY = 9,
  GGUF_TYPE_UINT64 = 10,
  GGUF_TYPE_INT64 = 11,
  GGUF_TYPE_FLOAT64 = 12,
  GGUF_N_TYPES
} GgufType;

/* The largest tensor rank ggml supports (GGML_MAX_DIMS). */
#define GGUF_MAX_DIMS 4

/**
 * GgufValue:
 * @type: the value type.
 * @u: unsigned integers and bool (0 or 1).
 * @i: signed integers.
 * @f: FLOAT32 and FLOAT64.
 * @str: STRING: pointer into the file, not NUL-terminated; @str_len bytes.
 * @elem_type: ARRAY: the element type.
 * @count: ARRAY: the number of elements.
 * @offset: file offset of the value's payload (the first element of an
 *   array, the bytes of a string).
 *
 * A metadata value.  Arrays are not expanded: a 32000-entry token list
 * costs nothing until elk__gguf_array_nth() walks it.
 */
typedef struct
{
  GgufType type;
  guint64 u;
  gint64 i;
  double f;
  const char *str;
  gsize str_len;
  GgufType elem_type;
  guint64 count;
  gsize offset;
} GgufValue;

/**
 * GgufTensor:
 * @name: the tensor name.
 * @n_dims: rank, 1..4.
 * @dims: extents, ne0 (fastest varying) first, as the file stores them.
 * @type: the ggml type id.
 * @offset: data offset relative to the start of the data section.
 * @n_elements: product of @dims.
 * @bytes: storage size from the ggml type's block size and type size.
 */
typedef struct
{
  char *name;
  guint n_dims;
  guint64 dims[GGUF_MAX_DIMS];
  guint32 type;
  guint64 offset;
  guint64 n_elements;
  guint64 bytes;
} GgufTensor;

typedef struct _Gguf Gguf;

Gguf *elk__gguf_open (const char *path, GError **error);
Gguf *elk__gguf_new_from_bytes (GBytes *bytes,
                                const char *display_name,
                                GError **error);
/* The same with explicit limits (%NULL for the defaults). */
Gguf *elk__gguf_open_with_limits (const char *path,
                                  const LlamaLimits *limits,
                                  GError **error);
Gguf *elk__gguf_new_from_bytes_with_limits (GBytes *bytes,
                                            const char *display_name,
                                            const LlamaLimits *limits,
                                            GError **error);
void elk__gguf_free (Gguf *gguf);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Gguf, elk__gguf_free)

const char *elk__gguf_get_path (const Gguf *gguf);
guint32 elk__gguf_get_version (const Gguf *gguf);
gboolean elk__gguf_is_big_endian (const Gguf *gguf);
guint64 elk__gguf_get_alignment (const Gguf *gguf);
guint64 elk__gguf_get_data_offset (const Gguf *gguf);

guint elk__gguf_get_n_kv (const Gguf *gguf);
const char *elk__gguf_get_key (const Gguf *gguf, guint index);
const GgufValue *elk__gguf_get_value (const Gguf *gguf, guint index);
const GgufValue *elk__gguf_lookup (const Gguf *gguf, const char *key);

gboolean elk__gguf_array_nth (const Gguf *gguf,
                              const GgufValue *array,
                              guint64 index,
                              GgufValue *out,
                              GError **error);

/* Typed accessors.  They return FALSE without an error when the key is
 * absent, and FALSE with an error when it has the wrong type. */
gboolean elk__gguf_get_uint (const Gguf *gguf,
                             const char *key,
                             guint64 *out,
                             GError **error);
gboolean elk__gguf_get_float (const Gguf *gguf,
                              const char *key,
                              double *out,
                              GError **error);
gboolean elk__gguf_get_bool (const Gguf *gguf,
                             const char *key,
                             gboolean *out,
                             GError **error);
char *elk__gguf_dup_string (const Gguf *gguf, const char *key, GError **error);

guint elk__gguf_get_n_tensors (const Gguf *gguf);
const GgufTensor *elk__gguf_get_tensor (const Gguf *gguf, guint index);
const GgufTensor *elk__gguf_find_tensor (const Gguf *gguf, const char *name);

const char *elk__gguf_type_name (GgufType type);
const char *elk__ggml_type_name (guint32 type);
gboolean
elk__ggml_type_info (guint32 type, guint *block_size, guint *type_size);
gboolean elk__ggml_type_to_dtype (guint32 type, ElkDType *dtype);

/* ------------------------------------------------------------------ */
/* Model description                                                    */
/* ------------------------------------------------------------------ */

typedef enum
{
  LLAMA_NORM_RMS,
  LLAMA_NORM_LAYER,
} LlamaNorm;

typedef enum
{
  LLAMA_ACT_SILU,
  LLAMA_ACT_GELU,
  LLAMA_ACT_RELU,
} LlamaAct;

typedef enum
{
  LLAMA_PHASE_DECODE,
  LLAMA_PHASE_PREFILL,
  LLAMA_PHASE_TRAIN_FORWARD,
} LlamaPhase;

typedef enum
{
  LLAMA_DTYPE_FILE,
  LLAMA_DTYPE_FP16,
  LLAMA_DTYPE_BF16,
  LLAMA_DTYPE_FP32,
} LlamaDType;

/**
 * LlamaModel:
 *
 * The hyper-parameters of one transformer, whatever it was read from.  The
 * flags describe the family's structure (norm kind, gated FFN, biases,
 * tied embeddings, learned positions, ...) so that one graph builder serves
 * Llama, Mistral, Gemma 2, Phi-3, Falcon, GPT-2/3, OPT, BERT and ViT.
 *
 * The "graph shape overrides" (@qkv_out, @o_in, @up_out, @down_in,
 * @bmm_heads) reproduce the artifact's graphs for the *-paper presets, whose
 * shapes do not follow from the other numbers (elk-paper.md §5.1); they are
 * 0 for real models.
 */
typedef struct
{
  char *name;          /* preset name or file stem */
  char *arch;          /* "llama", "gemma2", "falcon", ... */
  char *source;        /* where it came from, for messages */

  guint n_layers;
  guint64 hidden;
  guint64 n_heads;
  guint64 n_kv_heads;
  guint64 head_dim;
  guint64 ffn;
  guint64 vocab;
  guint64 context;
  guint64 rope_dims;
  double rope_theta;
  double norm_eps;

  LlamaNorm norm;
  LlamaAct act;
  gboolean gated;        /* SwiGLU / GeGLU: gate and up projections */
  gboolean bias_qkv;     /* biases on Q, K, V */
  gboolean bias_o;       /* bias on the output projection */
  gboolean bias_ffn;     /* biases on the FFN projections */
  gboolean norm_bias;    /* LayerNorm with a learned bias */
  gboolean post_norms;   /* Gemma 2: norms after attention and FFN too */
  gboolean parallel;     /* Falcon: attention and FFN read one norm */
  gboolean post_ln;      /* BERT: norm after the residual add */
  gboolean tied;         /* LM head shares the token embedding */
  gboolean has_lm_head;  /* decoder LMs; FALSE for BERT and ViT */
  gboolean encoder;      /* bidirectional, no KV cache, no decode */
  guint64 n_positions;   /* rows of a learned position table, 0 = RoPE */
  guint64 n_token_types; /* BERT token-type table rows */
  gboolean pooler;       /* BERT pooler (dense + tanh on [CLS]) */

  /* ViT: patches replace the token embedding. */
  guint64 patch_in;      /* channels x patch x patch, 0 if not a ViT */
  guint64 n_patches;
  guint64 n_classes;

  /* Sliding-window attention: window length and which layers use it
   * (1 = every layer, 2 = even layers, as Gemma 2's local layers). */
  guint64 sliding_window;
  guint sliding_period;

  /* Artifact graph shapes (0 = derive from the numbers above). */
  guint64 qkv_out;
  guint64 o_in;
  guint64 up_out;
  guint64 down_in;
  guint64 bmm_heads;
  gint default_split_factor;
  gboolean paper;

  /* The model's own storage type when it has no per-tensor types. */
  gboolean has_native_dtype;
  ElkDType native_dtype;

  /* A GGUF file with tensors gives real per-tensor types (may be NULL). */
  Gguf *gguf;

  /* Qwen3: RMSNorm of each query and key head (head_dim weights each). */
  gboolean qk_norm;

  /* Mixture of experts (docs/frontend-llama.md, "Mixture of experts").
   * @n_experts is 0 for a dense model.  @moe_layers[l] is TRUE for the
   * layers whose FFN is the routed one (n_layers entries, NULL when dense);
   * the others use the dense FFN of width @ffn. */
  guint64 n_experts;       /* routed experts per MoE layer */
  guint64 n_experts_used;  /* top-k */
  guint64 expert_ffn;      /* one routed expert's intermediate width */
  guint64 shared_ffn;      /* the shared experts' total width, 0 = none */
  guint64 n_shared;        /* shared experts (for messages only) */
  gboolean shared_gate;    /* Qwen2-MoE: sigmoid gate on the shared FFN */
  gboolean router_bias;    /* DeepSeek-V3: e_score_correction_bias */
  gboolean router_sigmoid; /* DeepSeek-V3 scores with a sigmoid */
  gboolean norm_topk;      /* top-k weights renormalised (metadata only) */
  gboolean *moe_layers;

  /* Multi-head latent attention (DeepSeek-V2/V3); @kv_lora_rank is 0 for
   * ordinary attention.  @q_lora_rank is 0 when queries are projected
   * directly (DeepSeek-V2-Lite).  @head_dim is then @qk_nope + @qk_rope. */
  guint64 q_lora_rank;
  guint64 kv_lora_rank;
  guint64 qk_nope;
  guint64 qk_rope;
  guint64 v_head_dim;
} LlamaModel;

gboolean elk__llama_model_is_moe_layer (const LlamaModel *model, guint layer);
/* The "active" (activated) parameters of one token as the model vendors
 * count them: every parameter except the routed experts a token does not
 * use, i.e. the top-k routed experts and the shared ones of each MoE
 * layer, everything else whole (embedding tables included). */
guint64 elk__llama_model_count_active_params (const LlamaModel *model);
/* Builds @moe_layers from the usual rules (every @step-th layer after
 * @first_dense dense ones, minus @mlp_only).  @one_based: Qwen's
 * "(l + 1) % step == 0" instead of DeepSeek's "l % step == 0". */
void elk__llama_model_set_moe_layers (LlamaModel *model,
                                      guint first_dense,
                                      guint step,
                                      gboolean one_based);
/* The block of the OPT, GPT-2, Falcon, BERT and ViT families: LayerNorm
 * with a bias, @act, and a bias on every projection when @biases. */
void elk__llama_model_set_layer_norm_block (LlamaModel *model,
                                            LlamaAct act,
                                            gboolean biases);
/* An encoder (BERT, ViT): no KV cache and no LM head; @pooler adds BERT's
 * pooled [CLS] output. */
void elk__llama_model_set_encoder (LlamaModel *model, gboolean pooler);

LlamaModel *elk__llama_model_new (void);
void elk__llama_model_free (LlamaModel *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (LlamaModel, elk__llama_model_free)

gboolean elk__llama_model_check (const LlamaModel *model, GError **error);

/* Readers. */
LlamaModel *elk__llama_model_new_from_gguf (Gguf *gguf, GError **error);
LlamaModel *elk__llama_model_new_from_hf_config (const char *path,
                                                 GError **error);
LlamaModel *elk__llama_model_new_from_hf_data (const char *data,
                                               gssize length,
                                               const char *display_name,
                                               GError **error);
LlamaModel *elk__llama_model_new_from_preset (const char *name, GError **error);
LlamaModel *elk__llama_model_new_from_file (const char *path, GError **error);
LlamaModel *
elk__llama_model_new_from_hf_data_with_limits (const char *data,
                                               gssize length,
                                               const char *display_name,
                                               const LlamaLimits *limits,
                                               GError **error);
LlamaModel *elk__llama_model_new_from_hf_config_with_limits (
    const char *path, const LlamaLimits *limits, GError **error);
LlamaModel *elk__llama_model_new_from_file_with_limits (
    const char *path, const LlamaLimits *limits, GError **error);

/* Presets. */
const char *const *elk__llama_preset_names (void);
char *elk__llama_preset_list (void);

/* ------------------------------------------------------------------ */
/* Graph building                                                       */
/* ------------------------------------------------------------------ */

/**
 * LlamaGranularity:
 * @LLAMA_GRANULARITY_ELK: elk's graph (docs/frontend-llama.md): RoPE,
 *   attention scale and mask are left out, norms are five operators, and
 *   every activation stays on chip.
 * @LLAMA_GRANULARITY_ARTIFACT: a measurement device that reproduces the
 *   Elk artifact's decode graphs and their HBM accounting (48 operators per
 *   Llama layer; an activation input is on chip only when the immediately
 *   preceding operator produced or read it, every other one is a separate
 *   HBM tensor that a preload streams).  Not a better model of the chip:
 *   it exists to compare elk with the artifact's numbers
 *   (docs/compiler.md, "The baseline gap").
 */
typedef enum
{
  LLAMA_GRANULARITY_ELK,
  LLAMA_GRANULARITY_ARTIFACT,
} LlamaGranularity;

/**
 * LlamaRouting:
 * @LLAMA_ROUTING_UNIFORM: every token picks k distinct experts uniformly.
 * @LLAMA_ROUTING_SKEWED: expert i (0-based) is picked with weight
 *   1 / (i + 1)^s, Zipf with exponent s (routing-skew), k distinct.
 * @LLAMA_ROUTING_FILE: per-layer expert frequencies from routing-file.
 */
typedef enum
{
  LLAMA_ROUTING_UNIFORM,
  LLAMA_ROUTING_SKEWED,
  LLAMA_ROUTING_FILE,
} LlamaRouting;

/**
 * LlamaExperts:
 * @LLAMA_EXPERTS_ROUTED: an MoE layer holds the operators of the routed
 *   experts that the sampled routing uses, and nothing marks them.
 * @LLAMA_EXPERTS_ALL: it holds the operators of all E routed experts,
 *   each conditional on the layer's top-k (elk_graph_set_op_condition):
 *   those the sampled routing does not use are built for one row.
 */
typedef enum
{
  LLAMA_EXPERTS_ROUTED,
  LLAMA_EXPERTS_ALL,
} LlamaExperts;

typedef struct
{
  LlamaPhase phase;
  guint64 batch;
  guint64 seq;           /* 0 = model default */
  LlamaDType dtype;
  gboolean fuse_qkv;
  gboolean fuse_ffn;
  guint layers;          /* 0 = all */
  gint split_factor;     /* -1 = model default, 0 = off */
  guint split_cores;
  LlamaGranularity granularity;
  /* Mixture of experts: how tokens are routed (elk-llama-routing.c). */
  LlamaRouting routing;
  double routing_skew; /* Zipf exponent for LLAMA_ROUTING_SKEWED */
  char *routing_file;  /* per-layer frequencies (not owned) */
  guint64 routing_seed;
  /* Which routed experts' operators an MoE layer holds (experts=). */
  LlamaExperts experts;
  /* MLA decode in the absorbed-weight form (W_UK folded into the query,
   * W_UV applied after attention on the latent). */
  gboolean mla_absorb;
} LlamaBuildOptions;

#define LLAMA_DEFAULT_SEQ 2048
#define LLAMA_DEFAULT_SPLIT_CORES 5888

/* ------------------------------------------------------------------ */
/* Expert routing (elk-llama-routing.c)                                 */
/* ------------------------------------------------------------------ */

/* Per-layer expert probabilities of one model under one routing model:
 * the weight with which a token's first pick lands on each expert.  A
 * token picks k distinct experts by drawing without replacement in
 * proportion to these weights. */
typedef struct _LlamaRoutingTable LlamaRoutingTable;

LlamaRoutingTable *elk__llama_routing_new (const LlamaModel *model,
                                           const LlamaBuildOptions *options,
                                           GError **error);
void elk__llama_routing_free (LlamaRoutingTable *table);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (LlamaRoutingTable, elk__llama_routing_free)

/* The normalised weights of @layer (n_experts entries). */
const double *elk__llama_routing_weights (const LlamaRoutingTable *table,
                                          guint layer);
/* Routes @batch tokens of @layer: each picks k distinct experts, drawn
 * from @rand; @tokens[e] receives how many tokens chose expert e
 * (n_experts entries).  Returns the number of distinct experts used. */
guint64 elk__llama_routing_sample (const LlamaRoutingTable *table,
                                   guint layer,
                                   guint64 batch,
                                   GRand *rand,
                                   guint64 *tokens);
/* The expected number of distinct experts that @batch independent tokens
 * use when each picks @k distinct of @n uniformly:
 * n (1 - (C(n-1,k) / C(n,k))^batch) = n (1 - (1 - k/n)^batch). */
double elk__llama_routing_expected_distinct_uniform (guint64 n,
                                                     guint64 k,
                                                     guint64 batch);

/* The probability that one token's k picks include each expert of
 * @layer, into @p (n_experts entries): k / n for equal weights; else by
 * enumerating the ordered sequences of k distinct experts when there are
 * at most @max_sequences of them; else a seeded Monte Carlo estimate over
 * the sampler (LLAMA_ROUTING_MC_TOKENS tokens from LLAMA_ROUTING_MC_SEED).
 * Returns TRUE when @p is exact (up to rounding). */
#define LLAMA_ROUTING_MAX_SEQUENCES 1000000
#define LLAMA_ROUTING_MC_TOKENS 65536
#define LLAMA_ROUTING_MC_SEED 21u
gboolean elk__llama_routing_inclusion (const LlamaRoutingTable *table,
                                       guint layer,
                                       guint64 max_sequences,
                                       double *p);

void elk__llama_build_options_init (LlamaBuildOptions *options);

ElkGraph *elk__llama_build_graph (const LlamaModel *model,
                                  const LlamaBuildOptions *options,
                                  GError **error);

/* The full parameter count of the model (every weight, including tables
 * that one pass reads only in part), from the GGUF tensors when the file
 * has them and from the hyper-parameters otherwise. */
guint64 elk__llama_model_count_params (const LlamaModel *model, guint layers);

const char *elk__llama_phase_to_string (LlamaPhase phase);

G_END_DECLS
