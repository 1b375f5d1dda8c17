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
 * ElkLlamaError:
 * @ELK_LLAMA_ERROR_IO: the model file cannot be read.
 * @ELK_LLAMA_ERROR_FORMAT: the file breaks the GGUF or JSON format (bad
 *   magic, truncated field, count larger than the file, misaligned offset).
 * @ELK_LLAMA_ERROR_UNSUPPORTED: a well-formed file that elk cannot use (an
 *   unknown architecture, GGUF version 1, an unknown tensor type).
 * @ELK_LLAMA_ERROR_INVALID: inconsistent hyper-parameters or properties.
 * @ELK_LLAMA_ERROR_LIMIT: a resource limit (#ElkLlamaLimits) was exceeded;
 *   the message names the limit and the parameter that raises it.
 */
typedef enum
{
  ELK_LLAMA_ERROR_IO,
  ELK_LLAMA_ERROR_FORMAT,
  ELK_LLAMA_ERROR_UNSUPPORTED,
  ELK_LLAMA_ERROR_INVALID,
  ELK_LLAMA_ERROR_LIMIT,
} ElkLlamaError;

#define ELK_LLAMA_ERROR (elk_llama_error_quark ())
GQuark elk_llama_error_quark (void);

/* ------------------------------------------------------------------ */
/* Resource limits                                                      */
/* ------------------------------------------------------------------ */

/**
 * ElkLlamaLimits:
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
 * %ELK_LLAMA_ERROR_LIMIT.  Every field is a parameter of the llama
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
} ElkLlamaLimits;

#define ELK_LLAMA_DEFAULT_MAX_FILE_SIZE (G_GUINT64_CONSTANT (1) << 40)
#define ELK_LLAMA_DEFAULT_MAX_CONFIG_SIZE (G_GUINT64_CONSTANT (16) << 20)
#define ELK_LLAMA_DEFAULT_MAX_TENSORS 65536
#define ELK_LLAMA_DEFAULT_MAX_METADATA 65536
#define ELK_LLAMA_DEFAULT_MAX_STRING_LENGTH (G_GUINT64_CONSTANT (16) << 20)
#define ELK_LLAMA_DEFAULT_MAX_ARRAY_LENGTH (G_GUINT64_CONSTANT (1) << 24)
/* json-glib parses recursively; real configs nest three or four deep. */
#define ELK_LLAMA_DEFAULT_MAX_JSON_DEPTH 64
#define ELK_LLAMA_MAX_JSON_DEPTH_CEILING 4096

void elk_llama_limits_init (ElkLlamaLimits *limits);

/* ------------------------------------------------------------------ */
/* GGUF                                                                 */
/* ------------------------------------------------------------------ */

typedef enum
{
  ELK_GGUF_TYPE_UINT8 = 0,
  ELK_GGUF_TYPE_INT8 = 1,
  ELK_GGUF_TYPE_UINT16 = 2,
  ELK_GGUF_TYPE_INT16 = 3,
  ELK_GGUF_TYPE_UINT32 = 4,
  ELK_GGUF_TYPE_INT32 = 5,
  ELK_GGUF_TYPE_FLOAT32 = 6,
  ELK_GGUF_TYPE_BOOL = 7,
  ELK_GGUF_TYPE_STRING = 8,
  ELK_GGUF_TYPE_ARRAY = 9,
  ELK_GGUF_TYPE_UINT64 = 10,
  ELK_GGUF_TYPE_INT64 = 11,
  ELK_GGUF_TYPE_FLOAT64 = 12,
  ELK_GGUF_N_TYPES
} ElkGgufType;

/* The largest tensor rank ggml supports (GGML_MAX_DIMS). */
#define ELK_GGUF_MAX_DIMS 4

/**
 * ElkGgufValue:
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
 * costs nothing until elk_gguf_array_nth() walks it.
 */
typedef struct
{
  ElkGgufType type;
  guint64 u;
  gint64 i;
  double f;
  const char *str;
  gsize str_len;
  ElkGgufType elem_type;
  guint64 count;
  gsize offset;
} ElkGgufValue;

/**
 * ElkGgufTensor:
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
  guint64 dims[ELK_GGUF_MAX_DIMS];
  guint32 type;
  guint64 offset;
  guint64 n_elements;
  guint64 bytes;
} ElkGgufTensor;

typedef struct _ElkGguf ElkGguf;

ElkGguf *elk_gguf_open (const char *path, GError **error);
ElkGguf *elk_gguf_new_from_bytes (GBytes *bytes,
                                  const char *display_name,
                                  GError **error);
/* The same with explicit limits (%NULL for the defaults). */
ElkGguf *elk_gguf_open_with_limits (const char *path,
                                    const ElkLlamaLimits *limits,
                                    GError **error);
ElkGguf *elk_gguf_new_from_bytes_with_limits (GBytes *bytes,
                                              const char *display_name,
                                              const ElkLlamaLimits *limits,
                                              GError **error);
void elk_gguf_free (ElkGguf *gguf);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkGguf, elk_gguf_free)

const char *elk_gguf_get_path (const ElkGguf *gguf);
guint32 elk_gguf_get_version (const ElkGguf *gguf);
gboolean elk_gguf_is_big_endian (const ElkGguf *gguf);
guint64 elk_gguf_get_alignment (const ElkGguf *gguf);
guint64 elk_gguf_get_data_offset (const ElkGguf *gguf);

guint elk_gguf_get_n_kv (const ElkGguf *gguf);
const char *elk_gguf_get_key (const ElkGguf *gguf, guint index);
const ElkGgufValue *elk_gguf_get_value (const ElkGguf *gguf, guint index);
const ElkGgufValue *elk_gguf_lookup (const ElkGguf *gguf, const char *key);

gboolean elk_gguf_array_nth (const ElkGguf *gguf,
                             const ElkGgufValue *array,
                             guint64 index,
                             ElkGgufValue *out,
                             GError **error);

/* Typed accessors.  They return FALSE without an error when the key is
 * absent, and FALSE with an error when it has the wrong type. */
gboolean elk_gguf_get_uint (const ElkGguf *gguf,
                            const char *key,
                            guint64 *out,
                            GError **error);
gboolean elk_gguf_get_float (const ElkGguf *gguf,
                             const char *key,
                             double *out,
                             GError **error);
gboolean elk_gguf_get_bool (const ElkGguf *gguf,
                            const char *key,
                            gboolean *out,
                            GError **error);
char *elk_gguf_dup_string (const ElkGguf *gguf,
                           const char *key,
                           GError **error);

guint elk_gguf_get_n_tensors (const ElkGguf *gguf);
const ElkGgufTensor *elk_gguf_get_tensor (const ElkGguf *gguf, guint index);
const ElkGgufTensor *elk_gguf_find_tensor (const ElkGguf *gguf,
                                           const char *name);

const char *elk_gguf_type_name (ElkGgufType type);
const char *elk_ggml_type_name (guint32 type);
gboolean elk_ggml_type_info (guint32 type,
                             guint *block_size,
                             guint *type_size);
gboolean elk_ggml_type_to_dtype (guint32 type, ElkDType *dtype);

/* ------------------------------------------------------------------ */
/* Model description                                                    */
/* ------------------------------------------------------------------ */

typedef enum
{
  ELK_LLAMA_NORM_RMS,
  ELK_LLAMA_NORM_LAYER,
} ElkLlamaNorm;

typedef enum
{
  ELK_LLAMA_ACT_SILU,
  ELK_LLAMA_ACT_GELU,
  ELK_LLAMA_ACT_RELU,
} ElkLlamaAct;

typedef enum
{
  ELK_LLAMA_PHASE_DECODE,
  ELK_LLAMA_PHASE_PREFILL,
  ELK_LLAMA_PHASE_TRAIN_FORWARD,
} ElkLlamaPhase;

typedef enum
{
  ELK_LLAMA_DTYPE_FILE,
  ELK_LLAMA_DTYPE_FP16,
  ELK_LLAMA_DTYPE_BF16,
  ELK_LLAMA_DTYPE_FP32,
} ElkLlamaDType;

/**
 * ElkLlamaModel:
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

  ElkLlamaNorm norm;
  ElkLlamaAct act;
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
  ElkGguf *gguf;
} ElkLlamaModel;

ElkLlamaModel *elk_llama_model_new (void);
void elk_llama_model_free (ElkLlamaModel *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkLlamaModel, elk_llama_model_free)

gboolean elk_llama_model_check (const ElkLlamaModel *model, GError **error);

/* Readers. */
ElkLlamaModel *elk_llama_model_new_from_gguf (ElkGguf *gguf, GError **error);
ElkLlamaModel *elk_llama_model_new_from_hf_config (const char *path,
                                                   GError **error);
ElkLlamaModel *elk_llama_model_new_from_hf_data (const char *data,
                                                 gssize length,
                                                 const char *display_name,
                                                 GError **error);
ElkLlamaModel *elk_llama_model_new_from_preset (const char *name,
                                                GError **error);
ElkLlamaModel *elk_llama_model_new_from_file (const char *path,
                                              GError **error);
ElkLlamaModel *elk_llama_model_new_from_hf_data_with_limits (
    const char *data, gssize length, const char *display_name,
    const ElkLlamaLimits *limits, GError **error);
ElkLlamaModel *elk_llama_model_new_from_hf_config_with_limits (
    const char *path, const ElkLlamaLimits *limits, GError **error);
ElkLlamaModel *elk_llama_model_new_from_file_with_limits (
    const char *path, const ElkLlamaLimits *limits, GError **error);

/* Presets. */
const char *const *elk_llama_preset_names (void);
char *elk_llama_preset_list (void);

/* ------------------------------------------------------------------ */
/* Graph building                                                       */
/* ------------------------------------------------------------------ */

/**
 * ElkLlamaGranularity:
 * @ELK_LLAMA_GRANULARITY_ELK: elk's graph (docs/frontend-llama.md): RoPE,
 *   attention scale and mask are left out, norms are five operators, and
 *   every activation stays on chip.
 * @ELK_LLAMA_GRANULARITY_ARTIFACT: a measurement device that reproduces the
 *   Elk artifact's decode graphs and their HBM accounting (48 operators per
 *   Llama layer; an activation input is on chip only when the immediately
 *   preceding operator produced or read it, every other one is a separate
 *   HBM tensor that a preload streams).  Not a better model of the chip:
 *   it exists to compare elk with the artifact's numbers
 *   (docs/compiler.md, "The baseline gap").
 */
typedef enum
{
  ELK_LLAMA_GRANULARITY_ELK,
  ELK_LLAMA_GRANULARITY_ARTIFACT,
} ElkLlamaGranularity;

typedef struct
{
  ElkLlamaPhase phase;
  guint64 batch;
  guint64 seq;           /* 0 = model default */
  ElkLlamaDType dtype;
  gboolean fuse_qkv;
  gboolean fuse_ffn;
  guint layers;          /* 0 = all */
  gint split_factor;     /* -1 = model default, 0 = off */
  guint split_cores;
  ElkLlamaGranularity granularity;
} ElkLlamaBuildOptions;

#define ELK_LLAMA_DEFAULT_SEQ 2048
#define ELK_LLAMA_DEFAULT_SPLIT_CORES 5888

void elk_llama_build_options_init (ElkLlamaBuildOptions *options);

ElkGraph *elk_llama_build_graph (const ElkLlamaModel *model,
                                 const ElkLlamaBuildOptions *options,
                                 GError **error);

/* The full parameter count of the model (every weight, including tables
 * that one pass reads only in part), from the GGUF tensors when the file
 * has them and from the hyper-parameters otherwise. */
guint64 elk_llama_model_count_params (const ElkLlamaModel *model,
                                      guint layers);

const char *elk_llama_phase_to_string (ElkLlamaPhase phase);

G_END_DECLS
