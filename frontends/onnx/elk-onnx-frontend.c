/* elk-onnx-frontend.c: the "onnx" frontend plugin.
 *
 * Reads an ONNX model (weights inline, in external data files, in Constant
 * nodes, or absent in "graph-only" exports) and lowers it into elk's einsum
 * operators.  The work is done by elk-onnx-loader.c; this file maps the
 * experiment's <param> elements onto its options.
 */
#include "config.h"

#include <elk/elk-error.h>
#include <elk/elk-frontend.h>
#include <elk/elk-plugin.h>

#include "elk-onnx-loader.h"

#define ELK_TYPE_ONNX_FRONTEND (elk_onnx_frontend_get_type ())
G_DECLARE_FINAL_TYPE (ElkOnnxFrontend, elk_onnx_frontend, ELK, ONNX_FRONTEND,
                      GObject)

#define ELK_TYPE_ONNX_DTYPE (elk_onnx_dtype_get_type ())
GType elk_onnx_dtype_get_type (void);

typedef enum
{
  ELK_ONNX_DTYPE_FILE,
  ELK_ONNX_DTYPE_FP32,
  ELK_ONNX_DTYPE_FP16,
  ELK_ONNX_DTYPE_BF16,
} ElkOnnxDType;

/* The same nicks as the llama frontend's dtype, so that one experiment
 * can sweep both frontends over one parameter. */
G_DEFINE_ENUM_TYPE (ElkOnnxDType, elk_onnx_dtype,
                    G_DEFINE_ENUM_VALUE (ELK_ONNX_DTYPE_FILE, "file"),
                    G_DEFINE_ENUM_VALUE (ELK_ONNX_DTYPE_FP32, "fp32"),
                    G_DEFINE_ENUM_VALUE (ELK_ONNX_DTYPE_FP16, "fp16"),
                    G_DEFINE_ENUM_VALUE (ELK_ONNX_DTYPE_BF16, "bf16"))

struct _ElkOnnxFrontend
{
  GObject parent_instance;

  char *model;
  char *dims;
  char *inputs;
  char *input_values;
  char *name;
  ElkOnnxDType dtype;
  guint64 max_file_size;
  guint64 max_tensor_elements;
  guint max_nesting;
  guint64 max_nodes;
  gboolean full_sequences;
};

enum
{
  PROP_0,
  PROP_MODEL,
  PROP_DIMS,
  PROP_INPUTS,
  PROP_NAME,
  PROP_DTYPE,
  PROP_MAX_FILE_SIZE,
  PROP_MAX_TENSOR_ELEMENTS,
  PROP_MAX_NESTING,
  PROP_MAX_NODES,
  PROP_FULL_SEQUENCES,
  PROP_INPUT_VALUES,
  N_PROPS
};

static GParamSpec *props[N_PROPS];

static void elk_onnx_frontend_iface_init (ElkFrontendInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (ElkOnnxFrontend, elk_onnx_frontend,
                               G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (
                                 ELK_TYPE_FRONTEND,
                                 elk_onnx_frontend_iface_init))

static ElkGraph *
elk_onnx_frontend_load (ElkFrontend *frontend, GError **error)
{
  ElkOnnxFrontend *self = ELK_ONNX_FRONTEND (frontend);
  OnnxOptions options;
  static const char *const dtypes[] = { "file", "fp32", "fp16", "bf16" };

  if (self->model == NULL || *self->model == '\0')
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "onnx frontend: the 'model' parameter (an .onnx file) is "
                   "not set");
      return NULL;
    }
  elk__onnx_options_init (&options);
  options.dims = self->dims;
  options.inputs = self->inputs;
  options.name = self->name;
  options.dtype = dtypes[self->dtype];
  options.max_file_size = self->max_file_size;
  options.max_tensor_elements = self->max_tensor_elements;
  options.max_nesting = self->max_nesting;
  options.max_nodes = self->max_nodes;
  options.sequence_lens_full = self->full_sequences;
  options.input_values = self->input_values;
  return elk__onnx_load (self->model, &options, error);
}

static void
elk_onnx_frontend_iface_init (ElkFrontendInterface *iface)
{
  iface->load = elk_onnx_frontend_load;
}

static void
elk_onnx_frontend_get_property (GObject *object, guint prop_id,
                                GValue *value, GParamSpec *pspec)
{
  ElkOnnxFrontend *self = ELK_ONNX_FRONTEND (object);

  switch (prop_id)
    {
    case PROP_MODEL:
      g_value_set_string (value, self->model);
      break;
    case PROP_DIMS:
      g_value_set_string (value, self->dims);
      break;
    case PROP_INPUTS:
      g_value_set_string (value, self->inputs);
      break;
    case PROP_NAME:
      g_value_set_string (value, self->name);
      break;
    case PROP_DTYPE:
      g_value_set_enum (value, self->dtype);
      break;
    case PROP_MAX_FILE_SIZE:
      g_value_set_uint64 (value, self->max_file_size);
      break;
    case PROP_MAX_TENSOR_ELEMENTS:
      g_value_set_uint64 (value, self->max_tensor_elements);
      break;
    case PROP_MAX_NESTING:
      g_value_set_uint (value, self->max_nesting);
      break;
    case PROP_MAX_NODES:
      g_value_set_uint64 (value, self->max_nodes);
      break;
    case PROP_FULL_SEQUENCES:
      g_value_set_boolean (value, self->full_sequences);
      break;
    case PROP_INPUT_VALUES:
      g_value_set_string (value, self->input_values);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_onnx_frontend_set_property (GObject *object, guint prop_id,
                                const GValue *value, GParamSpec *pspec)
{
  ElkOnnxFrontend *self = ELK_ONNX_FRONTEND (object);

  switch (prop_id)
    {
    case PROP_MODEL:
      g_free (self->model);
      self->model = g_value_dup_string (value);
      break;
    case PROP_DIMS:
      g_free (self->dims);
      self->dims = g_value_dup_string (value);
      break;
    case PROP_INPUTS:
      g_free (self->inputs);
      self->inputs = g_value_dup_string (value);
      break;
    case PROP_NAME:
      g_free (self->name);
      self->name = g_value_dup_string (value);
      break;
    case PROP_DTYPE:
      self->dtype = g_value_get_enum (value);
      break;
    case PROP_MAX_FILE_SIZE:
      self->max_file_size = g_value_get_uint64 (value);
      break;
    case PROP_MAX_TENSOR_ELEMENTS:
      self->max_tensor_elements = g_value_get_uint64 (value);
      break;
    case PROP_MAX_NESTING:
      self->max_nesting = g_value_get_uint (value);
      break;
    case PROP_MAX_NODES:
      self->max_nodes = g_value_get_uint64 (value);
      break;
    case PROP_INPUT_VALUES:
      g_free (self->input_values);
      self->input_values = g_value_dup_string (value);
      break;
    case PROP_FULL_SEQUENCES:
      self->full_sequences = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_onnx_frontend_finalize (GObject *object)
{
  ElkOnnxFrontend *self = ELK_ONNX_FRONTEND (object);

  g_free (self->model);
  g_free (self->dims);
  g_free (self->inputs);
  g_free (self->input_values);
  g_free (self->name);
  G_OBJECT_CLASS (elk_onnx_frontend_parent_class)->finalize (object);
}

static void
elk_onnx_frontend_class_init (ElkOnnxFrontendClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
                   | G_PARAM_EXPLICIT_NOTIFY;

  object_class->get_property = elk_onnx_frontend_get_property;
  object_class->set_property = elk_onnx_frontend_set_property;
  object_class->finalize = elk_onnx_frontend_finalize;

  props[PROP_MODEL] = g_param_spec_string (
    "model", "Model file",
    "The .onnx file, relative to the experiment file. External data files "
    "are read relative to the model and must stay inside its folder",
    NULL, rw | ELK_PARAM_PATH);
  props[PROP_DIMS] = g_param_spec_string (
    "dims", "Dimension bindings",
    "Values of the model's symbolic input dimensions, as "
    "\"batch=32,sequence=128\"; an anonymous dimension is named "
    "<input>:<axis>. Every symbolic dimension must be bound",
    NULL, rw);
  props[PROP_INPUTS] = g_param_spec_string (
    "inputs", "Model inputs",
    "Comma-separated names of the graph inputs that are model inputs; the "
    "other graph inputs are weights. Empty: decided from how each input is "
    "used (graph-only exports list every weight as a graph input)",
    NULL, rw);
  props[PROP_NAME] = g_param_spec_string (
    "name", "Model name",
    "The model name in results; empty: the file name without .onnx",
    NULL, rw);
  props[PROP_DTYPE] = g_param_spec_enum (
    "dtype", "Element type",
    "Type of every floating-point tensor: 'file' keeps the file's types; "
    "fp16 matches the paper's artifact",
    ELK_TYPE_ONNX_DTYPE, ELK_ONNX_DTYPE_FILE, rw);
  props[PROP_MAX_FILE_SIZE] = g_param_spec_uint64 (
    "max-file-size", "Largest model file",
    "Largest accepted .onnx file in bytes (protobuf cannot exceed 2 GiB; "
    "weights beyond that live in external data files)",
    1, ELK_ONNX_DEFAULT_MAX_FILE_SIZE, ELK_ONNX_DEFAULT_MAX_FILE_SIZE, rw);
  props[PROP_MAX_TENSOR_ELEMENTS] = g_param_spec_uint64 (
    "max-tensor-elements", "Largest tensor",
    "Largest accepted tensor, in elements; a larger one (a corrupted "
    "dimension of 2^40, say) is an error",
    1, G_GUINT64_CONSTANT (1) << 48, ELK_ONNX_DEFAULT_MAX_TENSOR_ELEMENTS,
    rw);
  /* protobuf-c recurses once per level with no limit of its own; beyond
   * a thousand levels even a raised limit would risk the stack. */
  props[PROP_MAX_NESTING] = g_param_spec_uint (
    "max-nesting", "Deepest nesting",
    "Deepest accepted nesting of the file's protobuf messages (model, "
    "graph, node, attribute, subgraph, type); a deeper file is an error "
    "instead of a stack overflow",
    4, 1000, ELK_ONNX_DEFAULT_MAX_NESTING, rw);
  props[PROP_MAX_NODES] = g_param_spec_uint64 (
    "max-nodes", "Largest graph",
    "Largest accepted graph, in nodes",
    1, G_MAXUINT32, ELK_ONNX_DEFAULT_MAX_NODES, rw);
  /* sequence_lens is data: a graph input gives it only at run time, and
   * elk compiles static sequences, so the assumption must be stated. */
  props[PROP_FULL_SEQUENCES] = g_param_spec_boolean (
      "full-sequences", "Full-length sequences",
      "Take a recurrent layer's sequence_lens, when it is known only at run "
      "time, to give every sequence its full length (otherwise such a layer "
      "is refused)",
      FALSE, rw);
  /* A sample rate or a mode flag picks an If's branch in many exports;
   * elk compiles one static graph, so the value must be given. */
  props[PROP_INPUT_VALUES] = g_param_spec_string (
      "input-values", "Input values",
      "Values of single-element graph inputs, as \"sr=16000,cond=1\": each "
      "becomes a constant, so that what depends on it (an If's condition) "
      "folds at import",
      NULL, rw);
  g_object_class_install_properties (object_class, N_PROPS, props);
}

static void
elk_onnx_frontend_init (ElkOnnxFrontend *self)
{
  self->dtype = ELK_ONNX_DTYPE_FILE;
  self->max_file_size = ELK_ONNX_DEFAULT_MAX_FILE_SIZE;
  self->max_tensor_elements = ELK_ONNX_DEFAULT_MAX_TENSOR_ELEMENTS;
  self->max_nesting = ELK_ONNX_DEFAULT_MAX_NESTING;
  self->max_nodes = ELK_ONNX_DEFAULT_MAX_NODES;
}

static gboolean
onnx_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_FRONTEND, "onnx",
                                 ELK_TYPE_ONNX_FRONTEND, error);
}

ELK_PLUGIN_DEFINE (onnx, "ONNX model frontend (protobuf-c)", "0.1",
                   onnx_register)
