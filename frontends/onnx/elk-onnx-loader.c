/* elk-onnx-loader.c: reads an ONNX model and lowers it into an ElkGraph.
 *
 * The work happens in four passes over the graph:
 *
 *  1. Parsing and checking.  The file is decoded with protobuf-c; every
 *     initializer is checked against its declared size (inline or external
 *     data), symbolic input dimensions are bound from the "dims" option, and
 *     the nodes are sorted topologically (a dangling input or a cycle is an
 *     error naming the node).
 *  2. Shape inference.  Every supported operator computes its output shapes
 *     and element types.  Small constant tensors (shape arithmetic: Shape,
 *     Gather, Concat, Cast, ConstantOfShape, ...) are evaluated, so that a
 *     Reshape whose target shape is computed at run time still gets a static
 *     shape.  The same pass records which graph inputs feed data operands
 *     (the model inputs) as opposed to weight operands (weights exported as
 *     graph inputs by "graph-only" exporters).
 *  3. Pattern recognition.  The ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div
 *     chain that exporters unroll LayerNormalization into is fused back into
 *     one operator, and a BatchNormalization that directly follows a Conv is
 *     folded into it, as inference compilers do.
 *  4. Lowering.  Each remaining compute node becomes one einsum operator
 *     (elk-graph.h).  Layout operators (Reshape, Transpose, Squeeze, Concat,
 *     Slice, ...) have no compute and are folded away: their outputs become
 *     tensors of the right shape that no operator writes, exactly as the
 *     Elk artifact drops them.
 *
 * Every failure is a GError that names the file, and where there is one the
 * node, its operator and what was expected.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <elk/elk-error.h>
#include <elk/elk-graph.h>

#include "elk-onnx-loader.h"
#include "onnx.pb-c.h"

/* Internal rank limit.  ONNX allows any rank; elk operators allow
 * ELK_MAX_DIMS, which is checked when a tensor is handed to the graph. */
#define MAX_RANK 16
/* Constant tensors up to this many elements are evaluated at import time
 * (shape arithmetic, masks); larger ones only carry their shape. */
#define FOLD_LIMIT 65536

/* TensorProto.DataType values, kept as plain numbers because files from
 * newer exporters use values the 1.12 enum does not list. */
enum
{
  DT_UNDEFINED = 0,
  DT_FLOAT = 1,
  DT_UINT8 = 2,
  DT_INT8 = 3,
  DT_UINT16 = 4,
  DT_INT16 = 5,
  DT_INT32 = 6,
  DT_INT64 = 7,
  DT_STRING = 8,
  DT_BOOL = 9,
  DT_FLOAT16 = 10,
  DT_DOUBLE = 11,
  DT_UINT32 = 12,
  DT_UINT64 = 13,
  DT_COMPLEX64 = 14,
  DT_COMPLEX128 = 15,
  DT_BFLOAT16 = 16,
  DT_FLOAT8E4M3FN = 17,
  DT_FLOAT8E4M3FNUZ = 18,
  DT_FLOAT8E5M2 = 19,
  DT_FLOAT8E5M2FNUZ = 20,
  DT_LAST = 20
};

typedef enum
{
  VK_ACT,   /* computed on chip */
  VK_INPUT, /* a graph input, or a layout view of one; decided after pass 2 */
  VK_PARAM, /* initializer, Constant node, or a view of one */
  VK_CONST, /* folded at import time */
} ValueKind;

typedef struct
{
  char *name;
  int dtype;
  guint rank;
  gint64 dims[MAX_RANK];
  guint64 n_elements;
  ValueKind kind;
  gint root;                   /* graph input index for VK_INPUT */
  const Onnx__TensorProto *tp; /* the data, decoded on demand */
  double *data;                /* n_elements values, or NULL */
  gboolean data_failed;
  gint elk_id;
  guint n_uses;
  gint producer; /* index into Loader.nodes, or -1 */
  gboolean is_graph_output;
} Value;

typedef enum
{
  FUSE_NONE,
  FUSE_SKIP,      /* absorbed into a later (or earlier) node */
  FUSE_LAYERNORM, /* the last node of an unrolled LayerNormalization */
} FuseKind;

typedef struct _Loader Loader;
typedef struct _Node Node;
typedef struct _OpInfo OpInfo;

struct _Node
{
  const Onnx__NodeProto *p;
  guint index; /* position in the file */
  char *name;  /* unique, for elk operators and messages */
  guint n_in;
  Value **in; /* NULL for an omitted optional input */
  guint n_out;
  Value **out; /* NULL for an omitted optional output */
  const OpInfo *info;
  gint32 layer;
  FuseKind fuse;
  /* The output is a view of an input: no operator (Gather of rows). */
  gboolean view;
  /* FUSE_LAYERNORM: x, scale, bias (scale, bias nullable). */
  Value *ln_x, *ln_scale, *ln_bias;
  /* A Conv whose BatchNormalization was folded into it. */
  Node *bn;
};

struct _OpInfo
{
  const char *op_type;
  gboolean (*infer) (Loader *l, Node *n, GError **error);
  gboolean (*lower) (Loader *l, Node *n, GError **error);
  /* For elementwise and unary operators: FLOPs per output element. */
  double flops;
};

struct _Loader
{
  const char *path;
  char *dir;
  ElkOnnxOptions opts;
  gboolean dtype_override;
  ElkDType float_dtype;
  GMappedFile *file;
  Onnx__ModelProto *model;
  gint64 opset;
  GHashTable *values; /* name -> Value*, owned by value_list */
  GPtrArray *value_list;
  GPtrArray *nodes; /* Node*, topological order */
  GHashTable *bindings; /* dim name -> gint64 as pointer to gint64 */
  GHashTable *used_bindings;
  GArray *input_is_data; /* gboolean per graph input */
  GArray *input_forced;  /* gboolean: decided by the "inputs" option */
  GHashTable *layer_keys;
  guint n_layers;
  guint64 n_params;
  ElkGraph *graph;
};

/* ------------------------------------------------------------------ */
/* Errors                                                              */

static const char *
node_label (const Node *n)
{
  return n->name;
}

static const char *
node_domain (const Node *n)
{
  const char *d = n->p->domain;
  return (d == NULL || *d == '\0') ? "ai.onnx" : d;
}

G_GNUC_PRINTF (4, 5)
static gboolean
node_error (Loader *l, const Node *n, GError **error, const char *format, ...)
{
  va_list args;
  g_autofree char *msg = NULL;

  va_start (args, format);
  msg = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
               "%s: node '%s' (op %s): %s", l->path, node_label (n),
               n->p->op_type, msg);
  return FALSE;
}

static gboolean
node_unsupported (Loader *l, const Node *n, GError **error, const char *why)
{
  g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
               "%s: node '%s' (op %s, domain %s, opset %" G_GINT64_FORMAT
               ") is not supported%s%s", l->path, node_label (n),
               n->p->op_type, node_domain (n), l->opset,
               why != NULL ? ": " : "", why != NULL ? why : "");
  return FALSE;
}

static char *
shape_to_string (guint rank, const gint64 *dims)
{
  GString *s = g_string_new ("[");
  for (guint i = 0; i < rank; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? ", " : "", dims[i]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

/* ------------------------------------------------------------------ */
/* Element types                                                       */

static const char *
dtype_name (int dt)
{
  static const char *const names[] = {
    "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32",
    "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64",
    "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ",
    "FLOAT8E5M2", "FLOAT8E5M2FNUZ"
  };
  return (dt >= 0 && dt <= DT_LAST) ? names[dt] : "unknown";
}

/* Bytes per element, or 0 for types elk cannot size (strings,
 * undefined). */
static guint
dtype_size (int dt)
{
  switch (dt)
    {
    case DT_FLOAT:
    case DT_INT32:
    case DT_UINT32:
      return 4;
    case DT_UINT8:
    case DT_INT8:
    case DT_BOOL:
    case DT_FLOAT8E4M3FN:
    case DT_FLOAT8E4M3FNUZ:
    case DT_FLOAT8E5M2:
    case DT_FLOAT8E5M2FNUZ:
      return 1;
    case DT_UINT16:
    case DT_INT16:
    case DT_FLOAT16:
    case DT_BFLOAT16:
      return 2;
    case DT_INT64:
    case DT_UINT64:
    case DT_DOUBLE:
    case DT_COMPLEX64:
      return 8;
    case DT_COMPLEX128:
      return 16;
    default:
      return 0;
    }
}

static gboolean
dtype_is_float (int dt)
{
  return dt == DT_FLOAT || dt == DT_FLOAT16 || dt == DT_BFLOAT16
         || dt == DT_DOUBLE;
}

static gboolean
dt_complex_or_string (int dt)
{
  return dt == DT_COMPLEX64 || dt == DT_COMPLEX128 || dt == DT_STRING;
}

static gboolean
dtype_is_known (int dt)
{
  return dt > DT_UNDEFINED && dt <= DT_LAST;
}

/* ElkGraph has no 16-bit integer type; those tensors are given the 2-byte
 * f16 slot so that their byte sizes stay right (docs/frontend-onnx.md). */
static gboolean
dtype_to_elk (Loader *l, int dt, ElkDType *out)
{
  switch (dt)
    {
    case DT_FLOAT:
      *out = ELK_DTYPE_F32;
      break;
    case DT_FLOAT16:
    case DT_UINT16:
    case DT_INT16:
      *out = ELK_DTYPE_F16;
      break;
    case DT_BFLOAT16:
      *out = ELK_DTYPE_BF16;
      break;
    case DT_DOUBLE:
      *out = ELK_DTYPE_F64;
      break;
    case DT_UINT8:
    case DT_INT8:
    case DT_BOOL:
      *out = ELK_DTYPE_I8;
      break;
    case DT_INT32:
    case DT_UINT32:
      *out = ELK_DTYPE_I32;
      break;
    case DT_INT64:
    case DT_UINT64:
      *out = ELK_DTYPE_I64;
      break;
    case DT_FLOAT8E4M3FN:
    case DT_FLOAT8E4M3FNUZ:
    case DT_FLOAT8E5M2:
    case DT_FLOAT8E5M2FNUZ:
      *out = ELK_DTYPE_F8;
      break;
    default:
      return FALSE;
    }
  if (l->dtype_override && dtype_is_float (dt))
    *out = l->float_dtype;
  return TRUE;
}

/* Converts a double to an integer without undefined behaviour: NaN becomes
 * 0 and out-of-range values saturate, which is what Slice's "INT64_MAX
 * means to the end" convention needs. */
static gint64
to_i64 (double v)
{
  if (isnan (v))
    return 0;
  if (v >= 9.2233720368547748e18)
    return G_MAXINT64;
  if (v <= -9.2233720368547758e18)
    return G_MININT64;
  return (gint64) v;
}

static float
half_to_float (guint16 h)
{
  guint32 sign = (guint32) (h >> 15) << 31;
  guint32 exp = (h >> 10) & 0x1f;
  guint32 mant = h & 0x3ff;
  guint32 bits;
  float f;

  if (exp == 0)
    {
      /* Zero or subnormal: value = mant * 2^-24. */
      f = (float) mant * (1.0f / 16777216.0f);
      return sign ? -f : f;
    }
  if (exp == 31)
    bits = sign | 0x7f800000u | (mant << 13);
  else
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  memcpy (&f, &bits, sizeof f);
  return f;
}

static float
bf16_to_float (guint16 h)
{
  guint32 bits = (guint32) h << 16;
  float f;
  memcpy (&f, &bits, sizeof f);
  return f;
}

/* ------------------------------------------------------------------ */
/* Attributes                                                          */

static const Onnx__AttributeProto *
find_attr (const Node *n, const char *name)
{
  for (size_t i = 0; i < n->p->n_attribute; i++)
    if (n->p->attribute[i]->name != NULL
        && strcmp (n->p->attribute[i]->name, name) == 0)
      return n->p->attribute[i];
  return NULL;
}

static gboolean
attr_int (Loader *l, const Node *n, const char *name, gint64 def,
          gint64 *out, GError **error)
{
  const Onnx__AttributeProto *a = find_attr (n, name);
  if (a == NULL)
    {
      *out = def;
      return TRUE;
    }
  if (!a->has_i)
    return node_error (l, n, error, "attribute '%s' must be an integer",
                       name);
  *out = a->i;
  return TRUE;
}

static gboolean
attr_float (Loader *l, const Node *n, const char *name, double def,
            double *out, GError **error)
{
  const Onnx__AttributeProto *a = find_attr (n, name);
  if (a == NULL)
    {
      *out = def;
      return TRUE;
    }
  if (!a->has_f)
    return node_error (l, n, error, "attribute '%s' must be a float", name);
  *out = a->f;
  return TRUE;
}

/* Returns the attribute's integer list, or NULL (with *n_out 0) if absent. */
static const int64_t *
attr_ints (const Node *n, const char *name, gsize *n_out)
{
  const Onnx__AttributeProto *a = find_attr (n, name);
  if (a == NULL || a->n_ints == 0)
    {
      *n_out = 0;
      return NULL;
    }
  *n_out = a->n_ints;
  return a->ints;
}

static char *
attr_string (const Node *n, const char *name, const char *def)
{
  const Onnx__AttributeProto *a = find_attr (n, name);
  if (a == NULL || !a->has_s)
    return g_strdup (def);
  return g_strndup ((const char *) a->s.data, a->s.len);
}

/* ------------------------------------------------------------------ */
/* Values                                                              */

static void
value_free (gpointer data)
{
  Value *v = data;
  g_free (v->name);
  g_free (v->data);
  g_free (v);
}

static Value *
lookup_value (Loader *l, const char *name)
{
  return g_hash_table_lookup (l->values, name);
}

static Value *
new_value (Loader *l, const char *name)
{
  Value *v = g_new0 (Value, 1);
  v->name = g_strdup (name);
  v->elk_id = -1;
  v->root = -1;
  v->producer = -1;
  g_ptr_array_add (l->value_list, v);
  g_hash_table_insert (l->values, v->name, v);
  return v;
}

/* Sets a value's type and shape, checking the element limit. */
static gboolean
value_set_shape (Loader *l, Value *v, int dtype, guint rank,
                 const gint64 *dims, GError **error)
{
  guint64 n = 1;

  if (rank > MAX_RANK)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: tensor '%s' has rank %u, more than %d", l->path,
                   v->name, rank, MAX_RANK);
      return FALSE;
    }
  for (guint i = 0; i < rank; i++)
    {
      if (dims[i] < 0)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: tensor '%s' has a negative dimension %"
                       G_GINT64_FORMAT " in axis %u", l->path, v->name,
                       dims[i], i);
          return FALSE;
        }
      if (!g_uint64_checked_mul (&n, n, (guint64) dims[i])
          || n > l->opts.max_tensor_elements)
        {
          g_autofree char *shape = shape_to_string (rank, dims);
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_LIMIT,
                       "%s: tensor '%s' of shape %s has more than %"
                       G_GUINT64_FORMAT " elements (the max-tensor-elements "
                       "limit; raise the onnx frontend's "
                       "'max-tensor-elements' parameter to read it)",
                       l->path, v->name, shape,
                       l->opts.max_tensor_elements);
          return FALSE;
        }
    }
  v->dtype = dtype;
  v->rank = rank;
  if (rank > 0)
    memcpy (v->dims, dims, rank * sizeof (gint64));
  v->n_elements = n;
  return TRUE;
}

/* Checks an external-data reference and returns the data file and the
 * offset.  The location is relative to the model's folder and may not leave
 * it, so a model cannot make elk read /etc/passwd or a sibling project. */
static gboolean
resolve_external (Loader *l, const Onnx__TensorProto *tp, const char *what,
                  guint64 n_bytes, char **path_out, guint64 *offset_out,
                  GError **error)
{
  const char *location = NULL;
  guint64 offset = 0, length = 0;
  gboolean has_length = FALSE;
  g_autofree char *full = NULL;
  g_autofree char *real_dir = NULL;
  g_autofree char *real_file = NULL;
  struct stat st;

  for (size_t i = 0; i < tp->n_external_data; i++)
    {
      const Onnx__StringStringEntryProto *e = tp->external_data[i];
      const char *key = e->key != NULL ? e->key : "";
      const char *value = e->value != NULL ? e->value : "";

      if (strcmp (key, "location") == 0)
        location = value;
      else if (strcmp (key, "offset") == 0 || strcmp (key, "length") == 0)
        {
          guint64 x;
          if (!g_ascii_string_to_unsigned (value, 10, 0, G_MAXUINT64, &x,
                                           NULL))
            {
              g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                           "%s: %s: external data %s '%s' is not a "
                           "non-negative integer", l->path, what, key, value);
              return FALSE;
            }
          if (key[0] == 'o')
            offset = x;
          else
            {
              length = x;
              has_length = TRUE;
            }
        }
    }
  if (location == NULL || *location == '\0')
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s has external data but no 'location'", l->path,
                   what);
      return FALSE;
    }
  if (g_path_is_absolute (location) || strstr (location, "..") != NULL
      || strchr (location, '\\') != NULL)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s: external data location '%s' must be a relative "
                   "path inside the model's folder", l->path, what, location);
      return FALSE;
    }
  full = g_build_filename (l->dir, location, NULL);
  real_dir = realpath (l->dir, NULL);
  real_file = realpath (full, NULL);
  if (real_file == NULL || stat (real_file, &st) != 0)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s: cannot open external data file '%s': %s",
                   l->path, what, full, g_strerror (errno));
      return FALSE;
    }
  /* A symbolic link may still point outside the folder. */
  if (real_dir == NULL || !g_str_has_prefix (real_file, real_dir)
      || real_file[strlen (real_dir)] != '/')
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s: external data location '%s' resolves to '%s', "
                   "outside the model's folder", l->path, what, location,
                   real_file);
      return FALSE;
    }
  if (!S_ISREG (st.st_mode))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s: external data '%s' is not a regular file",
                   l->path, what, full);
      return FALSE;
    }
  if (has_length && length != n_bytes)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s: external data length is %" G_GUINT64_FORMAT
                   " bytes but its shape and type need %" G_GUINT64_FORMAT,
                   l->path, what, length, n_bytes);
      return FALSE;
    }
  if (offset > (guint64) st.st_size
      || n_bytes > (guint64) st.st_size - offset)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s: external data needs bytes %" G_GUINT64_FORMAT
                   "..%" G_GUINT64_FORMAT " of '%s', which has only %"
                   G_GUINT64_FORMAT, l->path, what, offset,
                   offset + n_bytes, location, (guint64) st.st_size);
      return FALSE;
    }
  if (path_out != NULL)
    *path_out = g_steal_pointer (&real_file);
  if (offset_out != NULL)
    *offset_out = offset;
  return TRUE;
}

/* Checks a TensorProto (an initializer or a Constant's value) and fills in
 * the value's type and shape.  The data itself is decoded later, and only
 * if a folding step needs it; but here every declared size is checked
 * against the data actually present, so that a corrupted file fails at
 * load and not when some later pass trusts it. */
static gboolean
value_from_tensor (Loader *l, Value *v, const Onnx__TensorProto *tp,
                   const char *what, GError **error)
{
  gint64 dims[MAX_RANK];
  guint64 n_bytes, have;
  guint esize;
  int dt = tp->data_type;

  if (!dtype_is_known (dt))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s has unknown data type %d", l->path, what, dt);
      return FALSE;
    }
  esize = dtype_size (dt);
  if (esize == 0)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: %s has data type %s, which elk cannot size",
                   l->path, what, dtype_name (dt));
      return FALSE;
    }
  if (tp->n_dims > MAX_RANK)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: %s has rank %zu, more than %d", l->path, what,
                   tp->n_dims, MAX_RANK);
      return FALSE;
    }
  for (size_t i = 0; i < tp->n_dims; i++)
    dims[i] = tp->dims[i];
  if (!value_set_shape (l, v, dt, (guint) tp->n_dims, dims, error))
    return FALSE;
  if (tp->segment != NULL)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: %s is a segmented tensor", l->path, what);
      return FALSE;
    }
  /* n_elements <= 2^36 and esize <= 16, so this cannot overflow. */
  n_bytes = v->n_elements * esize;

  if (tp->has_data_location
      && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    {
      if (!resolve_external (l, tp, what, n_bytes, NULL, NULL, error))
        return FALSE;
      v->tp = tp;
      return TRUE;
    }

  if (tp->has_raw_data)
    have = tp->raw_data.len / esize;
  else
    switch (dt)
      {
      case DT_FLOAT:
        have = tp->n_float_data;
        break;
      case DT_DOUBLE:
        have = tp->n_double_data;
        break;
      case DT_INT64:
        have = tp->n_int64_data;
        break;
      case DT_UINT32:
      case DT_UINT64:
        have = tp->n_uint64_data;
        break;
      case DT_COMPLEX64:
        have = tp->n_float_data / 2;
        break;
      case DT_COMPLEX128:
        have = tp->n_double_data / 2;
        break;
      default:
        have = tp->n_int32_data;
        break;
      }
  if ((tp->has_raw_data && tp->raw_data.len != n_bytes)
      || (!tp->has_raw_data && have != v->n_elements))
    {
      g_autofree char *shape = shape_to_string (v->rank, v->dims);
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s declares shape %s (%" G_GUINT64_FORMAT
                   " elements of %s) but carries %" G_GUINT64_FORMAT
                   " elements of data", l->path, what, shape, v->n_elements,
                   dtype_name (dt), have);
      return FALSE;
    }
  v->tp = tp;
  return TRUE;
}

/* Decodes n little-endian elements of type dt from raw bytes. */
static void
decode_raw (int dt, const guint8 *p, guint64 n, double *out)
{
  for (guint64 i = 0; i < n; i++)
    switch (dt)
      {
      case DT_FLOAT:
        {
          float f;
          memcpy (&f, p + 4 * i, 4);
          out[i] = f;
          break;
        }
      case DT_DOUBLE:
        {
          double d;
          memcpy (&d, p + 8 * i, 8);
          out[i] = d;
          break;
        }
      case DT_INT64:
        {
          gint64 x;
          memcpy (&x, p + 8 * i, 8);
          out[i] = (double) GINT64_FROM_LE (x);
          break;
        }
      case DT_UINT64:
        {
          guint64 x;
          memcpy (&x, p + 8 * i, 8);
          out[i] = (double) GUINT64_FROM_LE (x);
          break;
        }
      case DT_INT32:
        {
          gint32 x;
          memcpy (&x, p + 4 * i, 4);
          out[i] = GINT32_FROM_LE (x);
          break;
        }
      case DT_UINT32:
        {
          guint32 x;
          memcpy (&x, p + 4 * i, 4);
          out[i] = GUINT32_FROM_LE (x);
          break;
        }
      case DT_INT16:
        {
          gint16 x;
          memcpy (&x, p + 2 * i, 2);
          out[i] = GINT16_FROM_LE (x);
          break;
        }
      case DT_UINT16:
        {
          guint16 x;
          memcpy (&x, p + 2 * i, 2);
          out[i] = GUINT16_FROM_LE (x);
          break;
        }
      case DT_FLOAT16:
        {
          guint16 x;
          memcpy (&x, p + 2 * i, 2);
          out[i] = half_to_float (GUINT16_FROM_LE (x));
          break;
        }
      case DT_BFLOAT16:
        {
          guint16 x;
          memcpy (&x, p + 2 * i, 2);
          out[i] = bf16_to_float (GUINT16_FROM_LE (x));
          break;
        }
      case DT_INT8:
        out[i] = (gint8) p[i];
        break;
      default: /* UINT8, BOOL, and 8-bit floats kept as raw codes */
        out[i] = p[i];
        break;
      }
}

/* Returns the value's data if it is a small constant, decoding it on first
 * use; NULL for activations, large constants and unreadable data. */
static const double *
value_data (Loader *l, Value *v)
{
  const Onnx__TensorProto *tp = v->tp;
  guint64 n = v->n_elements;
  double *out;

  if (v->data != NULL || v->data_failed)
    return v->data;
  if (tp == NULL || n > FOLD_LIMIT || dt_complex_or_string (v->dtype))
    return NULL;

  out = g_new0 (double, MAX (n, 1));
  if (tp->has_data_location
      && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    {
      g_autofree char *file = NULL;
      g_autofree guint8 *buf = NULL;
      guint64 offset;
      guint64 n_bytes = n * dtype_size (v->dtype);
      FILE *f;
      gboolean ok = FALSE;

      if (resolve_external (l, tp, v->name, n_bytes, &file, &offset, NULL)
          && (f = fopen (file, "rb")) != NULL)
        {
          buf = g_malloc (MAX (n_bytes, 1));
          ok = fseeko (f, (off_t) offset, SEEK_SET) == 0
               && fread (buf, 1, n_bytes, f) == n_bytes;
          fclose (f);
        }
      if (!ok)
        {
          g_free (out);
          v->data_failed = TRUE;
          return NULL;
        }
      decode_raw (v->dtype, buf, n, out);
    }
  else if (tp->has_raw_data)
    decode_raw (v->dtype, tp->raw_data.data, n, out);
  else
    for (guint64 i = 0; i < n; i++)
      switch (v->dtype)
        {
        case DT_FLOAT:
          out[i] = tp->float_data[i];
          break;
        case DT_DOUBLE:
          out[i] = tp->double_data[i];
          break;
        case DT_INT64:
          out[i] = (double) tp->int64_data[i];
          break;
        case DT_UINT32:
        case DT_UINT64:
          out[i] = (double) tp->uint64_data[i];
          break;
        case DT_FLOAT16:
          out[i] = half_to_float ((guint16) tp->int32_data[i]);
          break;
        case DT_BFLOAT16:
          out[i] = bf16_to_float ((guint16) tp->int32_data[i]);
          break;
        default:
          out[i] = tp->int32_data[i];
          break;
        }
  v->data = out;
  return out;
}

/* ------------------------------------------------------------------ */
/* Shape inference helpers                                             */

static Value *
in_value (const Node *n, guint i)
{
  return i < n->n_in ? n->in[i] : NULL;
}

static gboolean
need_inputs (Loader *l, const Node *n, guint min, guint max, GError **error)
{
  if (n->n_in < min || n->n_in > max)
    return node_error (l, n, error, "has %u inputs, expected %u to %u",
                       n->n_in, min, max);
  for (guint i = 0; i < min; i++)
    if (n->in[i] == NULL)
      return node_error (l, n, error, "input %u is required", i);
  if (n->n_out < 1 || n->out[0] == NULL)
    return node_error (l, n, error, "has no output");
  return TRUE;
}

/* Integer contents of a constant input, for attributes that ONNX moved
 * into inputs (Reshape's shape, Slice's starts, ...).  A run-time value
 * there would make the output shape data-dependent, which a static
 * compiler cannot handle. */
static gboolean
const_ints (Loader *l, const Node *n, guint i, const char *what,
            gint64 *out, gsize max, gsize *count, GError **error)
{
  Value *v = in_value (n, i);
  const double *d;

  if (v == NULL)
    return node_error (l, n, error, "input %u (%s) is required", i, what);
  d = value_data (l, v);
  if (d == NULL)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: node '%s' (op %s): input '%s' (%s) must be a "
                   "constant known at import time, but it is computed at "
                   "run time (elk compiles static shapes only)", l->path,
                   node_label (n), n->p->op_type, v->name, what);
      return FALSE;
    }
  if (v->rank > 1 || v->n_elements > max)
    return node_error (l, n, error, "input '%s' (%s) must be a list of at "
                       "most %zu integers", v->name, what, max);
  for (guint64 k = 0; k < v->n_elements; k++)
    out[k] = to_i64 (d[k]);
  *count = v->n_elements;
  return TRUE;
}

/* Reads a list that is an attribute in old opsets and an input in new
 * ones.  Returns TRUE with *present FALSE if neither is given. */
static gboolean
ints_attr_or_input (Loader *l, const Node *n, const char *name, guint input,
                    gint64 *out, gsize max, gsize *count, gboolean *present,
                    GError **error)
{
  gsize na;
  const int64_t *a = attr_ints (n, name, &na);

  *present = FALSE;
  *count = 0;
  if (a != NULL || find_attr (n, name) != NULL)
    {
      if (na > max)
        return node_error (l, n, error, "attribute '%s' has %zu entries, "
                           "at most %zu are allowed", name, na, max);
      for (gsize k = 0; k < na; k++)
        out[k] = a[k];
      *count = na;
      *present = TRUE;
      return TRUE;
    }
  if (in_value (n, input) != NULL)
    {
      *present = TRUE;
      return const_ints (l, n, input, name, out, max, count, error);
    }
  return TRUE;
}

static gboolean
norm_axis (Loader *l, const Node *n, gint64 axis, guint rank, guint *out,
           GError **error)
{
  *out = 0;
  if (axis < -(gint64) rank || axis >= (gint64) rank)
    return node_error (l, n, error, "axis %" G_GINT64_FORMAT " is out of "
                       "range for rank %u", axis, rank);
  *out = (guint) (axis < 0 ? axis + (gint64) rank : axis);
  return TRUE;
}

/* Records that a graph input feeds a data operand, so it is a model input
 * and not a weight; the "inputs" option overrides this. */
static void
mark_data (Loader *l, Value *v)
{
  if (v != NULL && v->kind == VK_INPUT && v->root >= 0
      && !g_array_index (l->input_forced, gboolean, v->root))
    g_array_index (l->input_is_data, gboolean, v->root) = TRUE;
}

/* Sets output i to a view of src with a new shape: the output lives where
 * src lives (on chip, or in HBM for a weight). */
static gboolean
set_view (Loader *l, Node *n, guint i, Value *src, int dtype, guint rank,
          const gint64 *dims, GError **error)
{
  Value *out = i < n->n_out ? n->out[i] : NULL;
  if (out == NULL)
    return TRUE;
  if (!value_set_shape (l, out, dtype, rank, dims, error))
    return FALSE;
  out->kind = src->kind;
  out->root = src->root;
  return TRUE;
}

static gboolean
set_computed (Loader *l, Node *n, guint i, int dtype, guint rank,
              const gint64 *dims, GError **error)
{
  Value *out = i < n->n_out ? n->out[i] : NULL;
  if (out == NULL)
    return TRUE;
  if (!value_set_shape (l, out, dtype, rank, dims, error))
    return FALSE;
  out->kind = VK_ACT;
  return TRUE;
}

static void
set_data (Value *out, double *data)
{
  g_free (out->data);
  out->data = data;
  out->kind = VK_CONST;
  out->root = -1;
}

/* Row-major strides. */
static void
strides_of (guint rank, const gint64 *dims, gint64 *strides)
{
  gint64 s = 1;
  for (guint i = rank; i-- > 0;)
    {
      strides[i] = s;
      s *= dims[i];
    }
}

/* Index into a broadcast input for output element @flat. */
static guint64
broadcast_index (guint64 flat, guint out_rank, const gint64 *out_dims,
                 const Value *in)
{
  gint64 ostr[MAX_RANK], istr[MAX_RANK];
  guint64 idx = 0;
  guint off = out_rank - in->rank;

  strides_of (out_rank, out_dims, ostr);
  strides_of (in->rank, in->dims, istr);
  for (guint a = 0; a < out_rank; a++)
    {
      gint64 c = (gint64) (flat / (guint64) ostr[a]);
      flat %= (guint64) ostr[a];
      if (a >= off && in->dims[a - off] != 1)
        idx += (guint64) (c * istr[a - off]);
    }
  return idx;
}

static gboolean
broadcast_shapes (Loader *l, const Node *n, guint *rank, gint64 *dims,
                  GError **error)
{
  guint r = 0;
  for (guint i = 0; i < n->n_in; i++)
    if (n->in[i] != NULL)
      r = MAX (r, n->in[i]->rank);
  for (guint a = 0; a < r; a++)
    dims[a] = 1;
  for (guint i = 0; i < n->n_in; i++)
    {
      Value *v = n->in[i];
      guint off;
      if (v == NULL)
        continue;
      off = r - v->rank;
      for (guint a = 0; a < v->rank; a++)
        {
          gint64 d = v->dims[a];
          if (d == dims[off + a] || d == 1)
            continue;
          if (dims[off + a] == 1)
            dims[off + a] = d;
          else
            {
              g_autofree char *s1 = shape_to_string (v->rank, v->dims);
              return node_error (l, n, error,
                                 "input '%s' of shape %s does not broadcast "
                                 "with the other inputs (axis %u: %"
                                 G_GINT64_FORMAT " vs %" G_GINT64_FORMAT ")",
                                 v->name, s1, off + a, d, dims[off + a]);
            }
        }
    }
  *rank = r;
  return TRUE;
}

/* All inputs (that are present) carry known data. */
static gboolean
all_inputs_known (Loader *l, const Node *n)
{
  for (guint i = 0; i < n->n_in; i++)
    if (n->in[i] != NULL && value_data (l, n->in[i]) == NULL)
      return FALSE;
  return TRUE;
}

static gboolean
is_int_dtype (int dt)
{
  return !dtype_is_float (dt) && dt != DT_BOOL;
}

/* Rounds a computed value to what the output type can hold. */
static double
cast_value (double x, int dt)
{
  if (dt == DT_BOOL)
    return x != 0.0;
  if (is_int_dtype (dt) && !dtype_is_float (dt))
    return (double) to_i64 (x);
  return x;
}

/* ------------------------------------------------------------------ */
/* Constant evaluation                                                 */

static gboolean
eval_binary (const char *op, double a, double b, int dt, double *out)
{
  gboolean integer = is_int_dtype (dt);

  if (strcmp (op, "Add") == 0 || strcmp (op, "Sum") == 0)
    *out = a + b;
  else if (strcmp (op, "Sub") == 0)
    *out = a - b;
  else if (strcmp (op, "Mul") == 0)
    *out = a * b;
  else if (strcmp (op, "Div") == 0)
    {
      if (integer)
        *out = b == 0.0 ? 0.0 : trunc (a / b);
      else
        *out = a / b;
    }
  else if (strcmp (op, "Pow") == 0)
    *out = pow (a, b);
  else if (strcmp (op, "Max") == 0)
    *out = MAX (a, b);
  else if (strcmp (op, "Min") == 0)
    *out = MIN (a, b);
  else if (strcmp (op, "Mod") == 0)
    *out = b == 0.0 ? 0.0 : fmod (a, b);
  else if (strcmp (op, "Equal") == 0)
    *out = a == b;
  else if (strcmp (op, "Less") == 0)
    *out = a < b;
  else if (strcmp (op, "Greater") == 0)
    *out = a > b;
  else if (strcmp (op, "LessOrEqual") == 0)
    *out = a <= b;
  else if (strcmp (op, "GreaterOrEqual") == 0)
    *out = a >= b;
  else if (strcmp (op, "And") == 0)
    *out = (a != 0.0) && (b != 0.0);
  else if (strcmp (op, "Or") == 0)
    *out = (a != 0.0) || (b != 0.0);
  else if (strcmp (op, "Xor") == 0)
    *out = (a != 0.0) != (b != 0.0);
  else
    return FALSE;
  *out = cast_value (*out, dt);
  return TRUE;
}

static gboolean
eval_unary (const char *op, double a, int dt, double *out)
{
  if (strcmp (op, "Neg") == 0)
    *out = -a;
  else if (strcmp (op, "Abs") == 0)
    *out = fabs (a);
  else if (strcmp (op, "Sqrt") == 0)
    *out = sqrt (a);
  else if (strcmp (op, "Not") == 0)
    *out = a == 0.0;
  else if (strcmp (op, "Floor") == 0)
    *out = floor (a);
  else if (strcmp (op, "Ceil") == 0)
    *out = ceil (a);
  else if (strcmp (op, "Reciprocal") == 0)
    *out = 1.0 / a;
  else if (strcmp (op, "Relu") == 0)
    *out = MAX (a, 0.0);
  else if (strcmp (op, "Exp") == 0)
    *out = exp (a);
  else if (strcmp (op, "Sign") == 0)
    *out = (a > 0) - (a < 0);
  else
    return FALSE;
  *out = cast_value (*out, dt);
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Shape inference: layout and constant operators                      */

static gboolean
infer_identity (Loader *l, Node *n, GError **error)
{
  Value *x;
  if (!need_inputs (l, n, 1, 3, error))
    return FALSE;
  x = n->in[0];
  if (!set_view (l, n, 0, x, x->dtype, x->rank, x->dims, error))
    return FALSE;
  if (value_data (l, x) != NULL)
    set_data (n->out[0], g_memdup2 (x->data, MAX (x->n_elements, 1)
                                                 * sizeof (double)));
  /* Dropout's optional mask output is all-true at inference. */
  if (n->n_out > 1 && n->out[1] != NULL)
    {
      if (!value_set_shape (l, n->out[1], DT_BOOL, x->rank, x->dims, error))
        return FALSE;
      n->out[1]->kind = VK_CONST;
    }
  return TRUE;
}

static gboolean
infer_cast (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 to;

  if (!need_inputs (l, n, 1, 2, error))
    return FALSE;
  x = n->in[0];
  if (strcmp (n->p->op_type, "CastLike") == 0)
    {
      if (n->n_in < 2 || n->in[1] == NULL)
        return node_error (l, n, error, "needs a target_type input");
      to = n->in[1]->dtype;
    }
  else if (!attr_int (l, n, "to", DT_UNDEFINED, &to, error))
    return FALSE;
  if (to < 0 || to > DT_LAST || !dtype_is_known ((int) to))
    return node_error (l, n, error, "cannot cast to unknown data type %"
                       G_GINT64_FORMAT, to);
  if (dtype_size ((int) to) == 0)
    return node_unsupported (l, n, error, "elk cannot size the target "
                             "type");
  if (!set_view (l, n, 0, x, (int) to, x->rank, x->dims, error))
    return FALSE;
  if (value_data (l, x) != NULL)
    {
      double *d = g_new (double, MAX (x->n_elements, 1));
      for (guint64 i = 0; i < x->n_elements; i++)
        d[i] = cast_value (x->data[i], (int) to);
      set_data (n->out[0], d);
    }
  return TRUE;
}

static void
copy_data_view (Loader *l, Node *n, Value *x)
{
  if (value_data (l, x) != NULL && n->out[0] != NULL)
    set_data (n->out[0], g_memdup2 (x->data, MAX (x->n_elements, 1)
                                                 * sizeof (double)));
}

static gboolean
infer_reshape (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 shape[MAX_RANK];
  gsize count;
  gint64 allowzero;
  gint infer_axis = -1;
  guint64 known = 1;

  if (!need_inputs (l, n, 1, 2, error))
    return FALSE;
  x = n->in[0];
  if (l->opset < 5)
    {
      gsize na;
      const int64_t *a = attr_ints (n, "shape", &na);
      if (na > MAX_RANK)
        return node_error (l, n, error, "target rank %zu is too large", na);
      for (gsize i = 0; i < na; i++)
        shape[i] = a[i];
      count = na;
    }
  else if (!const_ints (l, n, 1, "shape", shape, MAX_RANK, &count, error))
    return FALSE;
  if (!attr_int (l, n, "allowzero", 0, &allowzero, error))
    return FALSE;

  for (gsize i = 0; i < count; i++)
    {
      if (shape[i] == 0 && !allowzero)
        {
          if (i >= x->rank)
            return node_error (l, n, error, "target dimension %zu is 0 "
                               "(copy) but the input has rank %u", i,
                               x->rank);
          shape[i] = x->dims[i];
        }
      if (shape[i] == -1)
        {
          if (infer_axis >= 0)
            return node_error (l, n, error, "target shape has more than "
                               "one -1");
          infer_axis = (gint) i;
          continue;
        }
      if (shape[i] < 0)
        return node_error (l, n, error, "target dimension %" G_GINT64_FORMAT
                           " is invalid", shape[i]);
      if (!g_uint64_checked_mul (&known, known, (guint64) shape[i]))
        return node_error (l, n, error, "target shape overflows");
    }
  if (infer_axis >= 0)
    {
      if (known == 0 || x->n_elements % known != 0)
        return node_error (l, n, error, "cannot infer the -1 dimension: %"
                           G_GUINT64_FORMAT " elements do not divide by %"
                           G_GUINT64_FORMAT, x->n_elements, known);
      shape[infer_axis] = (gint64) (x->n_elements / known);
      known = x->n_elements;
    }
  if (known != x->n_elements)
    {
      g_autofree char *from = shape_to_string (x->rank, x->dims);
      g_autofree char *to = shape_to_string ((guint) count, shape);
      return node_error (l, n, error, "cannot reshape %s (%" G_GUINT64_FORMAT
                         " elements) into %s", from, x->n_elements, to);
    }
  if (!set_view (l, n, 0, x, x->dtype, (guint) count, shape, error))
    return FALSE;
  copy_data_view (l, n, x);
  return TRUE;
}

static gboolean
infer_flatten (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 axis, dims[2] = { 1, 1 };
  guint a;

  if (!need_inputs (l, n, 1, 1, error)
      || !attr_int (l, n, "axis", 1, &axis, error))
    return FALSE;
  x = n->in[0];
  if (axis == (gint64) x->rank)
    a = x->rank;
  else if (!norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  for (guint i = 0; i < x->rank; i++)
    dims[i < a ? 0 : 1] *= x->dims[i];
  if (!set_view (l, n, 0, x, x->dtype, 2, dims, error))
    return FALSE;
  copy_data_view (l, n, x);
  return TRUE;
}

static gboolean
infer_squeeze (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 axes[MAX_RANK], dims[MAX_RANK];
  gboolean drop[MAX_RANK] = { FALSE };
  gsize count;
  gboolean present;
  guint r = 0;

  if (!need_inputs (l, n, 1, 2, error)
      || !ints_attr_or_input (l, n, "axes", 1, axes, MAX_RANK, &count,
                              &present, error))
    return FALSE;
  x = n->in[0];
  if (!present || count == 0)
    for (guint i = 0; i < x->rank; i++)
      drop[i] = x->dims[i] == 1;
  for (gsize k = 0; k < count; k++)
    {
      guint a;
      if (!norm_axis (l, n, axes[k], x->rank, &a, error))
        return FALSE;
      if (x->dims[a] != 1)
        return node_error (l, n, error, "cannot squeeze axis %u of '%s', "
                           "whose extent is %" G_GINT64_FORMAT, a, x->name,
                           x->dims[a]);
      drop[a] = TRUE;
    }
  for (guint i = 0; i < x->rank; i++)
    if (!drop[i])
      dims[r++] = x->dims[i];
  if (!set_view (l, n, 0, x, x->dtype, r, dims, error))
    return FALSE;
  copy_data_view (l, n, x);
  return TRUE;
}

static gboolean
infer_unsqueeze (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 axes[MAX_RANK], dims[MAX_RANK];
  gboolean ins[MAX_RANK] = { FALSE };
  gsize count;
  gboolean present;
  guint r, j = 0;

  if (!need_inputs (l, n, 1, 2, error)
      || !ints_attr_or_input (l, n, "axes", 1, axes, MAX_RANK, &count,
                              &present, error))
    return FALSE;
  x = n->in[0];
  if (!present || count == 0)
    return node_error (l, n, error, "needs 'axes'");
  r = x->rank + (guint) count;
  if (r > MAX_RANK)
    return node_error (l, n, error, "result rank %u is too large", r);
  for (gsize k = 0; k < count; k++)
    {
      guint a;
      if (!norm_axis (l, n, axes[k], r, &a, error))
        return FALSE;
      if (ins[a])
        return node_error (l, n, error, "axis %u is listed twice", a);
      ins[a] = TRUE;
    }
  for (guint i = 0; i < r; i++)
    dims[i] = ins[i] ? 1 : x->dims[j++];
  if (!set_view (l, n, 0, x, x->dtype, r, dims, error))
    return FALSE;
  copy_data_view (l, n, x);
  return TRUE;
}

static gboolean
infer_transpose (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 perm[MAX_RANK], dims[MAX_RANK];
  gboolean seen[MAX_RANK] = { FALSE };
  gsize np;
  const int64_t *p;

  if (!need_inputs (l, n, 1, 1, error))
    return FALSE;
  x = n->in[0];
  p = attr_ints (n, "perm", &np);
  if (p == NULL)
    {
      np = x->rank;
      for (guint i = 0; i < x->rank; i++)
        perm[i] = x->rank - 1 - i;
    }
  else
    {
      if (np != x->rank)
        return node_error (l, n, error, "perm has %zu entries but the input "
                           "has rank %u", np, x->rank);
      for (gsize i = 0; i < np; i++)
        perm[i] = p[i];
    }
  for (guint i = 0; i < x->rank; i++)
    {
      if (perm[i] < 0 || perm[i] >= (gint64) x->rank || seen[perm[i]])
        return node_error (l, n, error, "perm is not a permutation of 0..%u",
                           x->rank - 1);
      seen[perm[i]] = TRUE;
      dims[i] = x->dims[perm[i]];
    }
  if (!set_view (l, n, 0, x, x->dtype, x->rank, dims, error))
    return FALSE;
  if (value_data (l, x) != NULL)
    {
      gint64 istr[MAX_RANK], ostr[MAX_RANK];
      double *d = g_new (double, MAX (x->n_elements, 1));
      strides_of (x->rank, x->dims, istr);
      strides_of (x->rank, dims, ostr);
      for (guint64 o = 0; o < x->n_elements; o++)
        {
          guint64 rem = o, src = 0;
          for (guint a = 0; a < x->rank; a++)
            {
              guint64 c = rem / (guint64) ostr[a];
              rem %= (guint64) ostr[a];
              src += c * (guint64) istr[perm[a]];
            }
          d[o] = x->data[src];
        }
      set_data (n->out[0], d);
    }
  return TRUE;
}

static gboolean
infer_concat (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 axis, dims[MAX_RANK];
  guint a;
  gboolean any_act = FALSE, any_input = FALSE;
  Value *out;

  if (n->n_in < 1 || n->in[0] == NULL || n->n_out < 1 || n->out[0] == NULL)
    return node_error (l, n, error, "needs inputs and an output");
  if (!attr_int (l, n, "axis", G_MININT64, &axis, error))
    return FALSE;
  if (axis == G_MININT64)
    return node_error (l, n, error, "needs an 'axis' attribute");
  x = n->in[0];
  if (!norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  memcpy (dims, x->dims, x->rank * sizeof (gint64));
  dims[a] = 0;
  for (guint i = 0; i < n->n_in; i++)
    {
      Value *v = n->in[i];
      if (v == NULL)
        return node_error (l, n, error, "input %u is empty", i);
      if (v->rank != x->rank)
        return node_error (l, n, error, "input '%s' has rank %u, expected %u",
                           v->name, v->rank, x->rank);
      for (guint k = 0; k < x->rank; k++)
        if (k != a && v->dims[k] != x->dims[k])
          return node_error (l, n, error, "input '%s' has extent %"
                             G_GINT64_FORMAT " in axis %u, expected %"
                             G_GINT64_FORMAT, v->name, v->dims[k], k,
                             x->dims[k]);
      dims[a] += v->dims[a];
      any_act |= v->kind == VK_ACT;
      any_input |= v->kind == VK_INPUT;
    }
  if (!set_computed (l, n, 0, x->dtype, x->rank, dims, error))
    return FALSE;
  out = n->out[0];
  if (all_inputs_known (l, n) && out->n_elements <= FOLD_LIMIT)
    {
      double *d = g_new (double, MAX (out->n_elements, 1));
      guint64 outer = 1, pos = 0;
      for (guint k = 0; k < a; k++)
        outer *= (guint64) x->dims[k];
      for (guint64 o = 0; o < outer; o++)
        for (guint i = 0; i < n->n_in; i++)
          {
            Value *v = n->in[i];
            guint64 chunk = outer ? v->n_elements / outer : 0;
            memcpy (d + pos, v->data + o * chunk, chunk * sizeof (double));
            pos += chunk;
          }
      set_data (out, d);
    }
  else if (!any_act && !any_input)
    out->kind = VK_PARAM;
  else if (!any_act)
    /* Concatenating graph inputs alone: they are data.  Next to an
     * activation they may be weights (ViT's class token). */
    for (guint i = 0; i < n->n_in; i++)
      mark_data (l, n->in[i]);
  return TRUE;
}

static gboolean
infer_split (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 axis, split[MAX_RANK * 4];
  gsize count;
  gboolean present;
  guint a;
  gint64 total = 0;

  if (!need_inputs (l, n, 1, 2, error)
      || !attr_int (l, n, "axis", 0, &axis, error))
    return FALSE;
  x = n->in[0];
  if (!norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  if (n->n_out > G_N_ELEMENTS (split))
    return node_error (l, n, error, "has too many outputs");
  if (!ints_attr_or_input (l, n, "split", 1, split, G_N_ELEMENTS (split),
                           &count, &present, error))
    return FALSE;
  if (!present || count == 0)
    {
      gint64 parts = n->n_out, each;
      each = (x->dims[a] + parts - 1) / parts;
      for (guint i = 0; i < n->n_out; i++)
        {
          split[i] = MIN (each, x->dims[a] - total);
          total += split[i];
        }
      count = n->n_out;
    }
  else
    for (gsize i = 0; i < count; i++)
      total += split[i];
  if (count != n->n_out || total != x->dims[a])
    return node_error (l, n, error, "split sizes do not add up to the "
                       "extent %" G_GINT64_FORMAT " of axis %u over %u "
                       "outputs", x->dims[a], a, n->n_out);
  for (guint i = 0; i < n->n_out; i++)
    {
      gint64 dims[MAX_RANK];
      memcpy (dims, x->dims, x->rank * sizeof (gint64));
      dims[a] = split[i];
      if (!set_view (l, n, i, x, x->dtype, x->rank, dims, error))
        return FALSE;
    }
  return TRUE;
}

static gboolean
infer_slice (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 starts[MAX_RANK], ends[MAX_RANK], axes[MAX_RANK], steps[MAX_RANK];
  gint64 dims[MAX_RANK], lo[MAX_RANK], step[MAX_RANK];
  gsize ns, ne, na = 0, nst = 0;
  gboolean present;

  if (!need_inputs (l, n, 1, 5, error))
    return FALSE;
  x = n->in[0];
  if (l->opset < 10)
    {
      if (!ints_attr_or_input (l, n, "starts", 99, starts, MAX_RANK, &ns,
                               &present, error)
          || !ints_attr_or_input (l, n, "ends", 99, ends, MAX_RANK, &ne,
                                  &present, error)
          || !ints_attr_or_input (l, n, "axes", 99, axes, MAX_RANK, &na,
                                  &present, error))
        return FALSE;
    }
  else
    {
      if (!const_ints (l, n, 1, "starts", starts, MAX_RANK, &ns, error)
          || !const_ints (l, n, 2, "ends", ends, MAX_RANK, &ne, error))
        return FALSE;
      if (in_value (n, 3) != NULL
          && !const_ints (l, n, 3, "axes", axes, MAX_RANK, &na, error))
        return FALSE;
      if (in_value (n, 4) != NULL
          && !const_ints (l, n, 4, "steps", steps, MAX_RANK, &nst, error))
        return FALSE;
    }
  if (ns != ne || (na != 0 && na != ns) || (nst != 0 && nst != ns))
    return node_error (l, n, error, "starts, ends, axes and steps differ "
                       "in length");
  for (guint i = 0; i < x->rank; i++)
    {
      dims[i] = x->dims[i];
      lo[i] = 0;
      step[i] = 1;
    }
  for (gsize k = 0; k < ns; k++)
    {
      guint a;
      gint64 d, s, st, e;
      if (!norm_axis (l, n, na ? axes[k] : (gint64) k, x->rank, &a, error))
        return FALSE;
      d = x->dims[a];
      st = nst ? steps[k] : 1;
      if (st == 0)
        return node_error (l, n, error, "step is 0");
      s = starts[k];
      e = ends[k];
      if (s < 0)
        s = s < -d ? 0 : s + d;
      if (e < 0)
        e = e < -d ? -1 : e + d;
      if (st > 0)
        {
          s = CLAMP (s, 0, d);
          e = CLAMP (e, 0, d);
          dims[a] = e > s ? (e - s + st - 1) / st : 0;
        }
      else
        {
          s = CLAMP (s, 0, d - 1);
          e = CLAMP (e, -1, d - 1);
          dims[a] = s > e ? (s - e + (-st) - 1) / (-st) : 0;
        }
      lo[a] = s;
      step[a] = st;
    }
  if (!set_view (l, n, 0, x, x->dtype, x->rank, dims, error))
    return FALSE;
  if (value_data (l, x) != NULL)
    {
      Value *out = n->out[0];
      gint64 istr[MAX_RANK], ostr[MAX_RANK];
      double *d = g_new (double, MAX (out->n_elements, 1));
      strides_of (x->rank, x->dims, istr);
      strides_of (x->rank, dims, ostr);
      for (guint64 o = 0; o < out->n_elements; o++)
        {
          guint64 rem = o;
          gint64 src = 0;
          for (guint a = 0; a < x->rank; a++)
            {
              gint64 c = (gint64) (rem / (guint64) ostr[a]);
              rem %= (guint64) ostr[a];
              src += (lo[a] + c * step[a]) * istr[a];
            }
          d[o] = x->data[src];
        }
      set_data (out, d);
    }
  return TRUE;
}

static gboolean
infer_shape (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 start, end, one;
  double *d;
  gint64 r;

  if (!need_inputs (l, n, 1, 1, error)
      || !attr_int (l, n, "start", 0, &start, error)
      || !attr_int (l, n, "end", G_MAXINT64, &end, error))
    return FALSE;
  x = n->in[0];
  r = x->rank;
  if (start < 0)
    start += r;
  if (end < 0)
    end += r;
  start = CLAMP (start, 0, r);
  end = CLAMP (end, 0, r);
  one = MAX (end - start, 0);
  if (!set_computed (l, n, 0, DT_INT64, 1, &one, error))
    return FALSE;
  d = g_new0 (double, MAX (one, 1));
  for (gint64 i = 0; i < one; i++)
    d[i] = (double) x->dims[start + i];
  set_data (n->out[0], d);
  return TRUE;
}

static gboolean
infer_size (Loader *l, Node *n, GError **error)
{
  double *d;
  if (!need_inputs (l, n, 1, 1, error)
      || !set_computed (l, n, 0, DT_INT64, 0, NULL, error))
    return FALSE;
  d = g_new (double, 1);
  d[0] = (double) n->in[0]->n_elements;
  set_data (n->out[0], d);
  return TRUE;
}

static gboolean
infer_constant (Loader *l, Node *n, GError **error)
{
  const Onnx__AttributeProto *a = NULL;
  Value *out;
  g_autofree char *what = NULL;

  if (n->n_out < 1 || n->out[0] == NULL)
    return node_error (l, n, error, "has no output");
  out = n->out[0];
  for (size_t i = 0; i < n->p->n_attribute; i++)
    if (a == NULL)
      a = n->p->attribute[i];
    else
      return node_error (l, n, error, "must have exactly one attribute");
  if (a == NULL || a->name == NULL)
    return node_error (l, n, error, "has no value attribute");
  what = g_strdup_printf ("node '%s' (op Constant) value", node_label (n));
  if (strcmp (a->name, "value") == 0 && a->t != NULL)
    {
      if (!value_from_tensor (l, out, a->t, what, error))
        return FALSE;
    }
  else if (strcmp (a->name, "value_float") == 0 && a->has_f)
    {
      if (!value_set_shape (l, out, DT_FLOAT, 0, NULL, error))
        return FALSE;
      out->data = g_new (double, 1);
      out->data[0] = a->f;
    }
  else if (strcmp (a->name, "value_int") == 0 && a->has_i)
    {
      if (!value_set_shape (l, out, DT_INT64, 0, NULL, error))
        return FALSE;
      out->data = g_new (double, 1);
      out->data[0] = (double) a->i;
    }
  else if (strcmp (a->name, "value_floats") == 0
           || strcmp (a->name, "value_ints") == 0)
    {
      gboolean f = a->name[6] == 'f';
      gint64 len = f ? (gint64) a->n_floats : (gint64) a->n_ints;
      if (!value_set_shape (l, out, f ? DT_FLOAT : DT_INT64, 1, &len, error))
        return FALSE;
      out->data = g_new0 (double, MAX (len, 1));
      for (gint64 i = 0; i < len; i++)
        out->data[i] = f ? a->floats[i] : (double) a->ints[i];
    }
  else
    return node_unsupported (l, n, error, "only tensor, float and int "
                             "constants are supported");
  out->kind = VK_PARAM;
  l->n_params += out->n_elements;
  return TRUE;
}

static gboolean
infer_constant_of_shape (Loader *l, Node *n, GError **error)
{
  gint64 shape[MAX_RANK];
  gsize count;
  const Onnx__AttributeProto *a;
  int dt = DT_FLOAT;
  double fill = 0.0;
  Value *out;

  if (!need_inputs (l, n, 1, 1, error)
      || !const_ints (l, n, 0, "shape", shape, MAX_RANK, &count, error))
    return FALSE;
  a = find_attr (n, "value");
  if (a != NULL && a->t != NULL)
    {
      Value probe = { 0 };
      g_autofree char *what = g_strdup_printf ("node '%s' value",
                                               node_label (n));
      probe.name = what;
      probe.elk_id = -1;
      if (!value_from_tensor (l, &probe, a->t, what, error))
        return FALSE;
      if (probe.n_elements != 1)
        return node_error (l, n, error, "value must have one element");
      dt = probe.dtype;
      if (value_data (l, &probe) != NULL)
        fill = probe.data[0];
      g_free (probe.data);
    }
  if (!set_computed (l, n, 0, dt, (guint) count, shape, error))
    return FALSE;
  out = n->out[0];
  if (out->n_elements <= FOLD_LIMIT)
    {
      double *d = g_new (double, MAX (out->n_elements, 1));
      for (guint64 i = 0; i < out->n_elements; i++)
        d[i] = fill;
      set_data (out, d);
    }
  else
    out->kind = VK_CONST;
  return TRUE;
}

static gboolean
infer_range (Loader *l, Node *n, GError **error)
{
  const double *s, *e, *dl;
  gint64 len;
  double *d;

  if (!need_inputs (l, n, 3, 3, error))
    return FALSE;
  s = value_data (l, n->in[0]);
  e = value_data (l, n->in[1]);
  dl = value_data (l, n->in[2]);
  if (s == NULL || e == NULL || dl == NULL)
    return node_unsupported (l, n, error, "start, limit and delta must be "
                             "constants known at import time (elk compiles "
                             "static shapes only)");
  if (dl[0] == 0.0)
    return node_error (l, n, error, "delta is 0");
  len = to_i64 (ceil ((e[0] - s[0]) / dl[0]));
  len = MAX (len, 0);
  if (!set_computed (l, n, 0, n->in[0]->dtype, 1, &len, error))
    return FALSE;
  if (len <= FOLD_LIMIT)
    {
      d = g_new (double, MAX (len, 1));
      for (gint64 i = 0; i < len; i++)
        d[i] = cast_value (s[0] + (double) i * dl[0], n->in[0]->dtype);
      set_data (n->out[0], d);
    }
  else
    n->out[0]->kind = VK_CONST;
  return TRUE;
}

/* Broadcasts x into dims (Expand), or x's data into the output. */
static void
broadcast_data (Loader *l, Node *n, Value *x)
{
  Value *out = n->out[0];
  if (value_data (l, x) != NULL && out->n_elements <= FOLD_LIMIT)
    {
      double *d = g_new (double, MAX (out->n_elements, 1));
      for (guint64 o = 0; o < out->n_elements; o++)
        d[o] = x->data[broadcast_index (o, out->rank, out->dims, x)];
      set_data (out, d);
    }
}

static gboolean
infer_expand (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 shape[MAX_RANK], dims[MAX_RANK];
  gsize count;
  guint r;

  if (!need_inputs (l, n, 2, 2, error)
      || !const_ints (l, n, 1, "shape", shape, MAX_RANK, &count, error))
    return FALSE;
  x = n->in[0];
  r = MAX (x->rank, (guint) count);
  for (guint a = 0; a < r; a++)
    {
      gint64 dx = a + x->rank >= r ? x->dims[a + x->rank - r] : 1;
      gint64 ds = a + count >= r ? shape[a + count - r] : 1;
      if (dx != ds && dx != 1 && ds != 1)
        return node_error (l, n, error, "cannot expand extent %"
                           G_GINT64_FORMAT " to %" G_GINT64_FORMAT
                           " in axis %u", dx, ds, a);
      dims[a] = dx == 1 ? ds : dx;
    }
  if (!set_view (l, n, 0, x, x->dtype, r, dims, error))
    return FALSE;
  broadcast_data (l, n, x);
  return TRUE;
}

static gboolean
infer_tile (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 rep[MAX_RANK], dims[MAX_RANK];
  gsize count;

  if (!need_inputs (l, n, 2, 3, error)
      || !const_ints (l, n, 1, "repeats", rep, MAX_RANK, &count, error))
    return FALSE;
  x = n->in[0];
  if (count != x->rank)
    return node_error (l, n, error, "repeats has %zu entries for rank %u",
                       count, x->rank);
  for (guint a = 0; a < x->rank; a++)
    {
      if (rep[a] < 0)
        return node_error (l, n, error, "negative repeat");
      dims[a] = x->dims[a] * rep[a];
    }
  return set_view (l, n, 0, x, x->dtype, x->rank, dims, error);
}

static gboolean
infer_pad (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 pads[2 * MAX_RANK], axes[MAX_RANK], dims[MAX_RANK];
  gsize count, na = 0;
  gboolean present;

  if (!need_inputs (l, n, 1, 4, error))
    return FALSE;
  x = n->in[0];
  if (l->opset < 2)
    {
      if (!ints_attr_or_input (l, n, "paddings", 99, pads, 2 * MAX_RANK,
                               &count, &present, error))
        return FALSE;
    }
  else if (!ints_attr_or_input (l, n, "pads", 1, pads, 2 * MAX_RANK, &count,
                                &present, error))
    return FALSE;
  if (in_value (n, 3) != NULL
      && !const_ints (l, n, 3, "axes", axes, MAX_RANK, &na, error))
    return FALSE;
  if (na == 0)
    {
      na = x->rank;
      for (guint a = 0; a < x->rank; a++)
        axes[a] = a;
    }
  if (count != 2 * na)
    return node_error (l, n, error, "pads has %zu entries, expected %zu",
                       count, 2 * na);
  memcpy (dims, x->dims, x->rank * sizeof (gint64));
  for (gsize k = 0; k < na; k++)
    {
      guint a;
      if (!norm_axis (l, n, axes[k], x->rank, &a, error))
        return FALSE;
      dims[a] += pads[k] + pads[k + na];
      if (dims[a] < 0)
        return node_error (l, n, error, "padding makes axis %u negative", a);
    }
  return set_view (l, n, 0, x, x->dtype, x->rank, dims, error);
}

static gboolean
infer_depth_space (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 b, dims[4];
  gboolean to_space = strcmp (n->p->op_type, "DepthToSpace") == 0;

  if (!need_inputs (l, n, 1, 1, error)
      || !attr_int (l, n, "blocksize", 0, &b, error))
    return FALSE;
  x = n->in[0];
  if (x->rank != 4 || b <= 0)
    return node_error (l, n, error, "needs a rank-4 input and a positive "
                       "blocksize");
  if (to_space)
    {
      if (x->dims[1] % (b * b) != 0)
        return node_error (l, n, error, "channels %" G_GINT64_FORMAT
                           " do not divide by blocksize^2", x->dims[1]);
      dims[0] = x->dims[0];
      dims[1] = x->dims[1] / (b * b);
      dims[2] = x->dims[2] * b;
      dims[3] = x->dims[3] * b;
    }
  else
    {
      if (x->dims[2] % b != 0 || x->dims[3] % b != 0)
        return node_error (l, n, error, "spatial extents do not divide by "
                           "the blocksize");
      dims[0] = x->dims[0];
      dims[1] = x->dims[1] * b * b;
      dims[2] = x->dims[2] / b;
      dims[3] = x->dims[3] / b;
    }
  return set_view (l, n, 0, x, x->dtype, 4, dims, error);
}

static gboolean
infer_trilu (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 upper, k = 0;
  gsize count;

  if (!need_inputs (l, n, 1, 2, error)
      || !attr_int (l, n, "upper", 1, &upper, error))
    return FALSE;
  x = n->in[0];
  if (x->rank < 2)
    return node_error (l, n, error, "needs rank 2 or more");
  if (in_value (n, 1) != NULL
      && !const_ints (l, n, 1, "k", &k, 1, &count, error))
    return FALSE;
  if (!set_view (l, n, 0, x, x->dtype, x->rank, x->dims, error))
    return FALSE;
  if (value_data (l, x) != NULL)
    {
      gint64 rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
      double *d = g_memdup2 (x->data, MAX (x->n_elements, 1)
                                          * sizeof (double));
      for (guint64 i = 0; i < x->n_elements; i++)
        {
          gint64 c = (gint64) (i % (guint64) cols);
          gint64 r = (gint64) ((i / (guint64) cols) % (guint64) rows);
          gboolean keep = upper ? c - r >= k : c - r <= k;
          if (!keep)
            d[i] = 0.0;
        }
      set_data (n->out[0], d);
    }
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Shape inference: compute operators                                  */

static gboolean
input_is_activation (Loader *l, const Value *v)
{
  return v != NULL
         && (v->kind == VK_ACT
             || (v->kind == VK_INPUT
                 && g_array_index (l->input_is_data, gboolean, v->root)));
}

/* For elementwise operators any operand may be a weight (a bias) or an
 * activation.  If none is known to be an activation yet, the first graph
 * input among them must be: an operator on weights alone would have been
 * folded by the exporter. */
static void
mark_elementwise (Loader *l, Node *n)
{
  for (guint i = 0; i < n->n_in; i++)
    if (input_is_activation (l, n->in[i]))
      return;
  for (guint i = 0; i < n->n_in; i++)
    if (n->in[i] != NULL && n->in[i]->kind == VK_INPUT)
      {
        mark_data (l, n->in[i]);
        return;
      }
}

static int
elementwise_dtype (const Node *n)
{
  static const char *const bools[] = { "Equal", "Less", "Greater",
                                       "LessOrEqual", "GreaterOrEqual",
                                       "And", "Or", "Xor", "Not", "IsNaN",
                                       "IsInf" };
  for (guint i = 0; i < G_N_ELEMENTS (bools); i++)
    if (strcmp (n->p->op_type, bools[i]) == 0)
      return DT_BOOL;
  if (strcmp (n->p->op_type, "Where") == 0)
    return n->in[1]->dtype;
  return n->in[0]->dtype;
}

/* PRelu before opset 7 took a per-channel slope of shape [C], which
 * numpy broadcasting would align with the last axis instead. */
static gboolean
prelu_per_channel (const Node *n)
{
  Value *x = n->in[0], *s = n->n_in > 1 ? n->in[1] : NULL;
  return strcmp (n->p->op_type, "PRelu") == 0 && s != NULL && s->rank == 1
         && x->rank > 2 && s->dims[0] != 1 && s->dims[0] == x->dims[1]
         && s->dims[0] != x->dims[x->rank - 1];
}

static gboolean
infer_elementwise (Loader *l, Node *n, GError **error)
{
  gint64 dims[MAX_RANK];
  guint rank = 0;
  int dt;
  Value *out;
  const char *op = n->p->op_type;
  gboolean where = strcmp (op, "Where") == 0;

  if (!need_inputs (l, n, where ? 3 : 1, where ? 3 : 64, error))
    return FALSE;
  for (guint i = 0; i < n->n_in; i++)
    if (n->in[i] == NULL)
      return node_error (l, n, error, "input %u is empty", i);
  if (prelu_per_channel (n))
    {
      rank = n->in[0]->rank;
      memcpy (dims, n->in[0]->dims, rank * sizeof (gint64));
    }
  else if (!broadcast_shapes (l, n, &rank, dims, error))
    return FALSE;
  dt = elementwise_dtype (n);
  if (!set_computed (l, n, 0, dt, rank, dims, error))
    return FALSE;
  out = n->out[0];
  if (all_inputs_known (l, n) && out->n_elements <= FOLD_LIMIT)
    {
      double *d = g_new (double, MAX (out->n_elements, 1));
      gboolean ok = TRUE;
      for (guint64 o = 0; o < out->n_elements && ok; o++)
        {
          double acc = n->in[0]->data[broadcast_index (o, rank, dims,
                                                       n->in[0])];
          if (where)
            {
              double t = n->in[1]->data[broadcast_index (o, rank, dims,
                                                         n->in[1])];
              double f = n->in[2]->data[broadcast_index (o, rank, dims,
                                                         n->in[2])];
              acc = acc != 0.0 ? t : f;
            }
          else
            for (guint i = 1; i < n->n_in && ok; i++)
              ok = eval_binary (strcmp (op, "Mean") == 0 ? "Sum" : op, acc,
                                n->in[i]->data[broadcast_index (o, rank,
                                                                dims,
                                                                n->in[i])],
                                n->in[0]->dtype, &acc);
          if (strcmp (op, "Mean") == 0)
            acc /= n->n_in;
          d[o] = cast_value (acc, dt);
        }
      if (ok && (n->n_in > 1 || where))
        {
          set_data (out, d);
          return TRUE;
        }
      g_free (d);
    }
  mark_elementwise (l, n);
  return TRUE;
}

static gboolean
infer_unary (Loader *l, Node *n, GError **error)
{
  Value *x, *out;
  int dt;

  if (!need_inputs (l, n, 1, 3, error))
    return FALSE;
  x = n->in[0];
  dt = elementwise_dtype (n);
  if (!set_computed (l, n, 0, dt, x->rank, x->dims, error))
    return FALSE;
  out = n->out[0];
  if (value_data (l, x) != NULL)
    {
      double *d = g_new (double, MAX (x->n_elements, 1));
      gboolean ok = TRUE;
      for (guint64 i = 0; i < x->n_elements && ok; i++)
        ok = eval_unary (n->p->op_type, x->data[i], dt, &d[i]);
      if (ok)
        {
          set_data (out, d);
          return TRUE;
        }
      g_free (d);
    }
  mark_data (l, x);
  return TRUE;
}

static gboolean
infer_matmul (Loader *l, Node *n, GError **error)
{
  Value *a, *b;
  gint64 dims[MAX_RANK], ka, kb;
  guint ra, rb, nb, r = 0;

  if (!need_inputs (l, n, 2, 2, error))
    return FALSE;
  a = n->in[0];
  b = n->in[1];
  ra = a->rank;
  rb = b->rank;
  if (ra == 0 || rb == 0)
    return node_error (l, n, error, "inputs must have rank 1 or more");
  ka = a->dims[ra - 1];
  kb = rb == 1 ? b->dims[0] : b->dims[rb - 2];
  if (ka != kb)
    {
      g_autofree char *sa = shape_to_string (ra, a->dims);
      g_autofree char *sb = shape_to_string (rb, b->dims);
      return node_error (l, n, error, "cannot multiply %s by %s (inner "
                         "extents %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
                         ")", sa, sb, ka, kb);
    }
  /* numpy rules: batch dimensions broadcast. */
  nb = MAX (ra > 2 ? ra - 2 : 0, rb > 2 ? rb - 2 : 0);
  for (guint i = 0; i < nb; i++)
    {
      gint64 da = 1, db = 1;
      guint ia = i + (ra > 2 ? ra - 2 : 0), ib = i + (rb > 2 ? rb - 2 : 0);
      if (ia >= nb)
        da = a->dims[ia - nb];
      if (ib >= nb)
        db = b->dims[ib - nb];
      if (da != db && da != 1 && db != 1)
        return node_error (l, n, error, "batch extents %" G_GINT64_FORMAT
                           " and %" G_GINT64_FORMAT " do not broadcast", da,
                           db);
      dims[r++] = MAX (da, db);
    }
  if (ra > 1)
    dims[r++] = a->dims[ra - 2];
  if (rb > 1)
    dims[r++] = b->dims[rb - 1];
  mark_data (l, a);
  if (!input_is_activation (l, a) && b->kind == VK_INPUT)
    mark_data (l, b);
  return set_computed (l, n, 0, a->dtype, r, dims, error);
}

static gboolean
infer_gemm (Loader *l, Node *n, GError **error)
{
  Value *a, *b, *c;
  gint64 ta, tb, dims[2], ka, kb;

  if (!need_inputs (l, n, 2, 3, error)
      || !attr_int (l, n, "transA", 0, &ta, error)
      || !attr_int (l, n, "transB", 0, &tb, error))
    return FALSE;
  a = n->in[0];
  b = n->in[1];
  c = in_value (n, 2);
  if (a->rank != 2 || b->rank != 2)
    return node_error (l, n, error, "A and B must be matrices (ranks %u and "
                       "%u)", a->rank, b->rank);
  dims[0] = a->dims[ta ? 1 : 0];
  ka = a->dims[ta ? 0 : 1];
  kb = b->dims[tb ? 1 : 0];
  dims[1] = b->dims[tb ? 0 : 1];
  if (ka != kb)
    return node_error (l, n, error, "inner extents %" G_GINT64_FORMAT
                       " and %" G_GINT64_FORMAT " differ", ka, kb);
  if (c != NULL)
    for (guint i = 0; i < c->rank; i++)
      {
        gint64 want = dims[2 - c->rank + i];
        if (c->rank > 2 || (c->dims[i] != 1 && c->dims[i] != want))
          return node_error (l, n, error, "C of rank %u does not broadcast "
                             "to [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                             "]", c->rank, dims[0], dims[1]);
      }
  mark_data (l, a);
  return set_computed (l, n, 0, a->dtype, 2, dims, error);
}

/* Convolution and pooling geometry for one spatial axis. */
typedef struct
{
  gint64 in, kernel, stride, dilation, pad_begin, pad_end, out;
} Window;

static gboolean
window_geometry (Loader *l, const Node *n, guint n_sp, const gint64 *in,
                 const gint64 *kernel, gboolean transposed,
                 gboolean ceil_mode, Window *w, GError **error)
{
  gsize ns, nd, np, nop, nos;
  const int64_t *strides = attr_ints (n, "strides", &ns);
  const int64_t *dil = attr_ints (n, "dilations", &nd);
  const int64_t *pads = attr_ints (n, "pads", &np);
  const int64_t *opad = attr_ints (n, "output_padding", &nop);
  const int64_t *oshape = attr_ints (n, "output_shape", &nos);
  g_autofree char *auto_pad = attr_string (n, "auto_pad", "NOTSET");

  if ((strides && ns != n_sp) || (dil && nd != n_sp)
      || (pads && np != 2 * n_sp) || (opad && nop != n_sp)
      || (oshape && nos != n_sp && nos != n_sp + 2))
    return node_error (l, n, error, "strides, dilations, pads or "
                       "output_padding do not match %u spatial axes", n_sp);
  for (guint i = 0; i < n_sp; i++)
    {
      Window *x = &w[i];
      gint64 eff;
      x->in = in[i];
      x->kernel = kernel[i];
      x->stride = strides ? strides[i] : 1;
      x->dilation = dil ? dil[i] : 1;
      x->pad_begin = pads ? pads[i] : 0;
      x->pad_end = pads ? pads[i + n_sp] : 0;
      if (x->kernel <= 0 || x->stride <= 0 || x->dilation <= 0
          || x->pad_begin < 0 || x->pad_end < 0 || x->kernel > G_MAXINT32
          || x->stride > G_MAXINT32 || x->dilation > G_MAXINT32
          || x->pad_begin > G_MAXINT32 || x->pad_end > G_MAXINT32)
        return node_error (l, n, error, "kernel, stride, dilation or "
                           "padding of axis %u is out of range", i);
      eff = x->dilation * (x->kernel - 1) + 1;
      if (transposed)
        {
          gint64 op = opad ? opad[i] : 0;
          gint64 total = x->stride * (x->in - 1) + op + eff;
          if (oshape != NULL)
            {
              gint64 want = oshape[nos - n_sp + i];
              gint64 pad = total - want;
              /* A negative total padding extends the output, as in the
               * ONNX reference implementation. */
              if (strcmp (auto_pad, "SAME_UPPER") == 0)
                {
                  x->pad_begin = pad / 2;
                  x->pad_end = pad - pad / 2;
                }
              else
                {
                  x->pad_end = pad / 2;
                  x->pad_begin = pad - pad / 2;
                }
            }
          else if (strcmp (auto_pad, "SAME_UPPER") == 0
                   || strcmp (auto_pad, "SAME_LOWER") == 0)
            {
              gint64 pad = MAX (total - x->in * x->stride, 0);
              gboolean upper = auto_pad[5] == 'U';
              x->pad_begin = upper ? pad / 2 : pad - pad / 2;
              x->pad_end = pad - x->pad_begin;
            }
          else if (strcmp (auto_pad, "VALID") == 0)
            x->pad_begin = x->pad_end = 0;
          x->out = total - x->pad_begin - x->pad_end;
        }
      else
        {
          if (strcmp (auto_pad, "SAME_UPPER") == 0
              || strcmp (auto_pad, "SAME_LOWER") == 0)
            {
              gint64 o = (x->in + x->stride - 1) / x->stride;
              gint64 pad = MAX ((o - 1) * x->stride + eff - x->in, 0);
              gboolean upper = auto_pad[5] == 'U';
              x->pad_begin = upper ? pad / 2 : pad - pad / 2;
              x->pad_end = pad - x->pad_begin;
            }
          else if (strcmp (auto_pad, "VALID") == 0)
            x->pad_begin = x->pad_end = 0;
          else if (strcmp (auto_pad, "NOTSET") != 0)
            return node_error (l, n, error, "unknown auto_pad '%s'",
                               auto_pad);
          {
            gint64 span = x->in + x->pad_begin + x->pad_end - eff;
            if (span < 0)
              return node_error (l, n, error, "the kernel (%" G_GINT64_FORMAT
                                 ") is larger than the padded input (%"
                                 G_GINT64_FORMAT ") in axis %u", eff,
                                 x->in + x->pad_begin + x->pad_end, i);
            x->out = (ceil_mode ? (span + x->stride - 1) / x->stride
                                : span / x->stride)
                     + 1;
            /* The last window must start inside the input or the
             * leading padding (ONNX and PyTorch agree on this). */
            if (ceil_mode && (x->out - 1) * x->stride >= x->in + x->pad_begin)
              x->out--;
          }
        }
      if (x->out <= 0)
        return node_error (l, n, error, "output extent of spatial axis %u "
                           "is %" G_GINT64_FORMAT, i, x->out);
    }
  return TRUE;
}

static gboolean
infer_conv (Loader *l, Node *n, GError **error)
{
  Value *x, *w, *b;
  gint64 group, dims[MAX_RANK], kernel[MAX_RANK];
  gboolean transposed = strcmp (n->p->op_type, "ConvTranspose") == 0;
  Window win[MAX_RANK];
  guint n_sp;
  gsize nk;
  const int64_t *ks;

  if (!need_inputs (l, n, 2, 3, error)
      || !attr_int (l, n, "group", 1, &group, error))
    return FALSE;
  x = n->in[0];
  w = n->in[1];
  b = in_value (n, 2);
  if (x->rank < 3 || w->rank != x->rank)
    return node_error (l, n, error, "input and weight need the same rank of "
                       "3 or more (got %u and %u)", x->rank, w->rank);
  n_sp = x->rank - 2;
  if (group <= 0 || x->dims[1] % group != 0)
    return node_error (l, n, error, "group %" G_GINT64_FORMAT " does not "
                       "divide the %" G_GINT64_FORMAT " input channels",
                       group, x->dims[1]);
  if (!transposed && w->dims[1] * group != x->dims[1])
    return node_error (l, n, error, "weight '%s' expects %" G_GINT64_FORMAT
                       " input channels per group, the input has %"
                       G_GINT64_FORMAT " in %" G_GINT64_FORMAT " groups",
                       w->name, w->dims[1], x->dims[1], group);
  if (transposed && w->dims[0] != x->dims[1])
    return node_error (l, n, error, "weight '%s' expects %" G_GINT64_FORMAT
                       " input channels, the input has %" G_GINT64_FORMAT,
                       w->name, w->dims[0], x->dims[1]);
  if (!transposed && w->dims[0] % group != 0)
    return node_error (l, n, error, "group %" G_GINT64_FORMAT " does not "
                       "divide the %" G_GINT64_FORMAT " output channels",
                       group, w->dims[0]);
  ks = attr_ints (n, "kernel_shape", &nk);
  for (guint i = 0; i < n_sp; i++)
    {
      kernel[i] = w->dims[2 + i];
      if (ks != NULL && (nk != n_sp || ks[i] != kernel[i]))
        return node_error (l, n, error, "kernel_shape does not match the "
                           "weight '%s'", w->name);
    }
  if (!window_geometry (l, n, n_sp, x->dims + 2, kernel, transposed, FALSE,
                        win, error))
    return FALSE;
  dims[0] = x->dims[0];
  dims[1] = transposed ? w->dims[1] * group : w->dims[0];
  for (guint i = 0; i < n_sp; i++)
    dims[2 + i] = win[i].out;
  if (b != NULL && (b->rank != 1 || b->dims[0] != dims[1]))
    return node_error (l, n, error, "bias '%s' must have shape [%"
                       G_GINT64_FORMAT "]", b->name, dims[1]);
  mark_data (l, x);
  return set_computed (l, n, 0, x->dtype, x->rank, dims, error);
}

static gboolean
infer_batchnorm (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 training = 0;

  if (!need_inputs (l, n, 5, 5, error)
      || !attr_int (l, n, "training_mode", 0, &training, error))
    return FALSE;
  x = n->in[0];
  if (training)
    return node_unsupported (l, n, error, "training mode");
  for (guint i = 1; i < n->n_out; i++)
    if (n->out[i] != NULL && n->out[i]->n_uses > 0)
      return node_unsupported (l, n, error, "its running statistics "
                               "outputs are used (training mode)");
  if (x->rank < 2)
    return node_error (l, n, error, "input must have rank 2 or more");
  for (guint i = 1; i < 5; i++)
    if (n->in[i]->rank != 1 || n->in[i]->dims[0] != x->dims[1])
      return node_error (l, n, error, "'%s' must have shape [%"
                         G_GINT64_FORMAT "]", n->in[i]->name, x->dims[1]);
  mark_data (l, x);
  return set_computed (l, n, 0, x->dtype, x->rank, x->dims, error);
}

static gboolean
infer_layernorm (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 axis, dims[MAX_RANK];
  guint a;

  if (!need_inputs (l, n, 2, 3, error)
      || !attr_int (l, n, "axis", -1, &axis, error))
    return FALSE;
  x = n->in[0];
  if (!norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  for (guint i = 1; i < n->n_in; i++)
    {
      Value *v = n->in[i];
      if (v == NULL)
        continue;
      if (v->rank > x->rank - a)
        return node_error (l, n, error, "'%s' has rank %u, more than the "
                           "%u normalized axes", v->name, v->rank,
                           x->rank - a);
      for (guint k = 0; k < v->rank; k++)
        if (v->dims[k] != 1
            && v->dims[k] != x->dims[x->rank - v->rank + k])
          return node_error (l, n, error, "'%s' does not broadcast over the "
                             "normalized axes", v->name);
    }
  for (guint i = 0; i < x->rank; i++)
    dims[i] = i < a ? x->dims[i] : 1;
  for (guint i = 1; i < n->n_out; i++)
    if (!set_computed (l, n, i, DT_FLOAT, x->rank, dims, error))
      return FALSE;
  mark_data (l, x);
  return set_computed (l, n, 0, x->dtype, x->rank, x->dims, error);
}

static gboolean
infer_softmax (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 axis;
  guint a;

  if (!need_inputs (l, n, 1, 1, error)
      || !attr_int (l, n, "axis", l->opset >= 13 ? -1 : 1, &axis, error))
    return FALSE;
  x = n->in[0];
  if (x->rank > 0 && !norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  mark_data (l, x);
  return set_computed (l, n, 0, x->dtype, x->rank, x->dims, error);
}

/* Which axes a Reduce* or Arg* operator reduces. */
static gboolean
reduce_axes (Loader *l, Node *n, gboolean *reduced, gboolean *keepdims,
             GError **error)
{
  Value *x = n->in[0];
  gint64 axes[MAX_RANK], keep, noop;
  gsize count = 0;
  gboolean present = FALSE;
  gboolean arg = g_str_has_prefix (n->p->op_type, "Arg");

  if (!attr_int (l, n, "keepdims", 1, &keep, error)
      || !attr_int (l, n, "noop_with_empty_axes", 0, &noop, error))
    return FALSE;
  *keepdims = keep != 0;
  if (arg)
    {
      gint64 axis;
      if (!attr_int (l, n, "axis", 0, &axis, error))
        return FALSE;
      axes[0] = axis;
      count = 1;
    }
  else if (!ints_attr_or_input (l, n, "axes", 1, axes, MAX_RANK, &count,
                                &present, error))
    return FALSE;
  for (guint i = 0; i < x->rank; i++)
    reduced[i] = count == 0 && !noop;
  for (gsize k = 0; k < count; k++)
    {
      guint a;
      if (!norm_axis (l, n, axes[k], x->rank, &a, error))
        return FALSE;
      reduced[a] = TRUE;
    }
  return TRUE;
}

static gboolean
infer_reduce (Loader *l, Node *n, GError **error)
{
  Value *x;
  gboolean reduced[MAX_RANK], keep;
  gint64 dims[MAX_RANK];
  guint r = 0;
  gboolean arg = g_str_has_prefix (n->p->op_type, "Arg");

  if (!need_inputs (l, n, 1, 2, error))
    return FALSE;
  x = n->in[0];
  if (!reduce_axes (l, n, reduced, &keep, error))
    return FALSE;
  for (guint i = 0; i < x->rank; i++)
    if (!reduced[i])
      dims[r++] = x->dims[i];
    else if (keep)
      dims[r++] = 1;
  mark_data (l, x);
  return set_computed (l, n, 0, arg ? DT_INT64 : x->dtype, r, dims, error);
}

static gboolean
infer_pool (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 dims[MAX_RANK], ceil_mode;
  gsize nk;
  const int64_t *ks;
  Window win[MAX_RANK];
  guint n_sp;

  if (!need_inputs (l, n, 1, 1, error)
      || !attr_int (l, n, "ceil_mode", 0, &ceil_mode, error))
    return FALSE;
  x = n->in[0];
  if (x->rank < 3)
    return node_error (l, n, error, "input must have rank 3 or more");
  n_sp = x->rank - 2;
  ks = attr_ints (n, "kernel_shape", &nk);
  if (ks == NULL || nk != n_sp)
    return node_error (l, n, error, "needs kernel_shape with %u entries",
                       n_sp);
  if (!window_geometry (l, n, n_sp, x->dims + 2, ks, FALSE, ceil_mode != 0,
                        win, error))
    return FALSE;
  if (n->n_out > 1 && n->out[1] != NULL && n->out[1]->n_uses > 0)
    return node_unsupported (l, n, error, "its Indices output is used");
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  for (guint i = 0; i < n_sp; i++)
    dims[2 + i] = win[i].out;
  mark_data (l, x);
  if (n->n_out > 1
      && !set_computed (l, n, 1, DT_INT64, x->rank, dims, error))
    return FALSE;
  return set_computed (l, n, 0, x->dtype, x->rank, dims, error);
}

static gboolean
infer_global_pool (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 dims[MAX_RANK];

  if (!need_inputs (l, n, 1, 1, error))
    return FALSE;
  x = n->in[0];
  if (x->rank < 3)
    return node_error (l, n, error, "input must have rank 3 or more");
  for (guint i = 0; i < x->rank; i++)
    dims[i] = i < 2 ? x->dims[i] : 1;
  mark_data (l, x);
  return set_computed (l, n, 0, x->dtype, x->rank, dims, error);
}

static gboolean
infer_gather (Loader *l, Node *n, GError **error)
{
  Value *x, *idx, *out;
  gint64 axis, dims[MAX_RANK];
  guint a, r = 0;

  if (!need_inputs (l, n, 2, 2, error)
      || !attr_int (l, n, "axis", 0, &axis, error))
    return FALSE;
  x = n->in[0];
  idx = n->in[1];
  if (!norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  if (dtype_is_float (idx->dtype))
    return node_error (l, n, error, "indices '%s' must be integers",
                       idx->name);
  if (x->rank + idx->rank - 1 > MAX_RANK)
    return node_error (l, n, error, "result rank is too large");
  for (guint i = 0; i < a; i++)
    dims[r++] = x->dims[i];
  for (guint i = 0; i < idx->rank; i++)
    dims[r++] = idx->dims[i];
  for (guint i = a + 1; i < x->rank; i++)
    dims[r++] = x->dims[i];

  /* Constant indices must be in range even when nothing is folded. */
  if (value_data (l, idx) != NULL)
    for (guint64 i = 0; i < idx->n_elements; i++)
      {
        gint64 k = to_i64 (idx->data[i]);
        if (k < -x->dims[a] || k >= x->dims[a])
          return node_error (l, n, error, "index %" G_GINT64_FORMAT " is out "
                             "of range for axis %u of extent %"
                             G_GINT64_FORMAT, k, a, x->dims[a]);
      }

  if (!set_computed (l, n, 0, x->dtype, r, dims, error))
    return FALSE;
  out = n->out[0];
  if (value_data (l, x) != NULL && value_data (l, idx) != NULL
      && out->n_elements <= FOLD_LIMIT)
    {
      gint64 outer = 1, inner = 1;
      double *d = g_new (double, MAX (out->n_elements, 1));
      guint64 pos = 0;
      for (guint i = 0; i < a; i++)
        outer *= x->dims[i];
      for (guint i = a + 1; i < x->rank; i++)
        inner *= x->dims[i];
      for (gint64 o = 0; o < outer; o++)
        for (guint64 j = 0; j < idx->n_elements; j++)
          {
            gint64 k = to_i64 (idx->data[j]);
            if (k < 0)
              k += x->dims[a];
            for (gint64 i = 0; i < inner; i++)
              d[pos++] = x->data[(o * x->dims[a] + k) * inner + i];
          }
      set_data (out, d);
      return TRUE;
    }
  /* Picking rows of an activation with constant indices (ViT's class token
   * x[:, 0]) is a slice: no compute, folded like the other layout ops. */
  if (value_data (l, idx) != NULL
      && (x->kind == VK_ACT || x->kind == VK_INPUT))
    {
      out->kind = x->kind;
      out->root = x->root;
      n->view = TRUE;
      return TRUE;
    }
  mark_data (l, idx);
  return TRUE;
}

static gboolean
infer_resize (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 dims[MAX_RANK], sizes[MAX_RANK];
  gsize count = 0;
  gboolean upsample = strcmp (n->p->op_type, "Upsample") == 0;
  guint scales_input = (upsample || l->opset < 11) ? 1 : 2;
  Value *scales, *sizes_v;

  if (!need_inputs (l, n, 1, 4, error))
    return FALSE;
  x = n->in[0];
  scales = in_value (n, scales_input);
  sizes_v = upsample || l->opset < 11 ? NULL : in_value (n, 3);
  if (sizes_v != NULL && sizes_v->n_elements > 0)
    {
      if (!const_ints (l, n, 3, "sizes", sizes, MAX_RANK, &count, error))
        return FALSE;
      if (count != x->rank)
        return node_error (l, n, error, "sizes has %zu entries for rank %u",
                           count, x->rank);
      memcpy (dims, sizes, x->rank * sizeof (gint64));
    }
  else
    {
      const double *s = NULL;
      gsize na;
      const Onnx__AttributeProto *attr = find_attr (n, "scales");
      if (scales != NULL)
        {
          s = value_data (l, scales);
          if (s == NULL)
            return node_unsupported (l, n, error, "its scales must be a "
                                     "constant known at import time (elk "
                                     "compiles static shapes only)");
          na = scales->n_elements;
        }
      else if (attr != NULL && attr->n_floats > 0)
        na = attr->n_floats;
      else
        return node_error (l, n, error, "needs scales or sizes");
      if (na != x->rank)
        return node_error (l, n, error, "scales has %zu entries for rank %u",
                           na, x->rank);
      for (guint i = 0; i < x->rank; i++)
        {
          double f = s != NULL ? s[i] : attr->floats[i];
          double v = floor ((double) x->dims[i] * f);
          if (!(f > 0.0) || v > (double) G_MAXINT32 * 1024.0)
            return node_error (l, n, error, "scale %g of axis %u is out of "
                               "range", f, i);
          dims[i] = (gint64) v;
        }
    }
  mark_data (l, x);
  return set_computed (l, n, 0, x->dtype, x->rank, dims, error);
}

/* ------------------------------------------------------------------ */
/* Lowering helpers                                                    */

static ElkTensorOrigin
value_origin (Loader *l, const Value *v)
{
  switch (v->kind)
    {
    case VK_ACT:
      return ELK_TENSOR_ORIGIN_ACTIVATION;
    case VK_INPUT:
      return g_array_index (l->input_is_data, gboolean, v->root)
               ? ELK_TENSOR_ORIGIN_ACTIVATION
               : ELK_TENSOR_ORIGIN_WEIGHT;
    case VK_PARAM:
    case VK_CONST:
    default:
      return ELK_TENSOR_ORIGIN_WEIGHT;
    }
}

static gboolean
prefix_node_error (Loader *l, const Node *n, GError **error)
{
  g_prefix_error (error, "%s: node '%s' (op %s): ", l->path, node_label (n),
                  n->p->op_type);
  return FALSE;
}

/* Returns the ElkGraph tensor for @v seen with shape @dims.  A shape that
 * differs from the value's own is a view (a padded or phase-split input, a
 * regrouped weight): it gets its own tensor, named after the value and
 * @tag, that lives where the value lives and that no operator writes. */
static gint
tensor_for (Loader *l, const Node *n, Value *v, guint rank,
            const gint64 *dims, const char *tag, GError **error)
{
  ElkDType dt;
  guint64 shape[ELK_MAX_DIMS];
  g_autofree char *name = NULL;
  gboolean own = dims == NULL
                 || (rank == v->rank
                     && memcmp (dims, v->dims, rank * sizeof (gint64)) == 0);
  gint id;

  if (own)
    {
      rank = v->rank;
      dims = v->dims;
      if (v->elk_id >= 0)
        return v->elk_id;
      name = g_strdup (v->name);
    }
  else
    {
      g_autofree char *shape = shape_to_string (rank, dims);
      /* The shape is part of the name: two operators may see one value
       * through different views. */
      name = g_strdup_printf ("%s#%s%s", v->name, tag, shape);
      id = elk_graph_find_tensor (l->graph, name);
      if (id >= 0)
        return id;
    }
  if (!dtype_to_elk (l, v->dtype, &dt))
    {
      node_unsupported (l, n, error, NULL);
      g_prefix_error (error, "tensor '%s' has data type %s; ", v->name,
                      dtype_name (v->dtype));
      return -1;
    }
  if (rank > ELK_MAX_DIMS)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: node '%s' (op %s): tensor '%s' has rank %u; elk "
                   "operators support at most %d dimensions", l->path,
                   node_label (n), n->p->op_type, name, rank, ELK_MAX_DIMS);
      return -1;
    }
  for (guint i = 0; i < rank; i++)
    shape[i] = (guint64) dims[i];
  id = elk_graph_add_tensor (l->graph, name, dt, value_origin (l, v), rank,
                             shape, 0, error);
  if (id < 0)
    {
      prefix_node_error (l, n, error);
      return -1;
    }
  if (own)
    v->elk_id = id;
  return id;
}

typedef struct
{
  GString *spec;
  GString *extra;
  guint32 tensors[ELK_MAX_OPERANDS];
  guint n;
} OpBuild;

static void
ob_init (OpBuild *b)
{
  b->spec = g_string_new (NULL);
  b->extra = g_string_new (NULL);
  b->n = 0;
}

static void
ob_clear (OpBuild *b)
{
  g_string_free (b->spec, TRUE);
  g_string_free (b->extra, TRUE);
}

static gboolean
ob_input (Loader *l, const Node *n, OpBuild *b, const char *letters,
          gint tensor, GError **error)
{
  if (tensor < 0)
    return FALSE;
  if (b->n + 1 >= ELK_MAX_OPERANDS)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: node '%s' (op %s) has more than %d operands", l->path,
                   node_label (n), n->p->op_type, ELK_MAX_OPERANDS - 1);
      return FALSE;
    }
  if (b->n > 0)
    g_string_append_c (b->spec, ',');
  g_string_append (b->spec, letters);
  b->tensors[b->n++] = (guint32) tensor;
  return TRUE;
}

static void
ob_extent (OpBuild *b, char letter, gint64 extent)
{
  g_string_append_printf (b->extra, "%s%c=%" G_GINT64_FORMAT,
                          b->extra->len ? "," : "", letter, extent);
}

/* The layer a node belongs to: blocks are recognised from exporter scope
 * names such as "/enc/layers.3/..." or "/layer2/layer2.1/conv1/Conv", whose
 * first path component of the form <name>.<number> (or <name>_<number>)
 * names a repeated block.  Blocks are numbered in order of appearance. */
static gint32
layer_of (Loader *l, const char *name)
{
  g_auto (GStrv) parts = NULL;

  if (name == NULL || name[0] != '/')
    return -1;
  parts = g_strsplit (name + 1, "/", -1);
  /* The last component is the node itself ("MatMul_1"), not a scope. */
  for (guint i = 0; parts[i] != NULL && parts[i + 1] != NULL; i++)
    {
      const char *p = parts[i];
      gsize len = strlen (p), j = len;
      gpointer found;
      while (j > 0 && g_ascii_isdigit (p[j - 1]))
        j--;
      if (j == len || j < 2 || (p[j - 1] != '.' && p[j - 1] != '_'))
        continue;
      if (g_hash_table_lookup_extended (l->layer_keys, p, NULL, &found))
        return GPOINTER_TO_INT (found);
      g_hash_table_insert (l->layer_keys, g_strdup (p),
                           GINT_TO_POINTER (l->n_layers));
      return (gint32) l->n_layers++;
    }
  return -1;
}

static gboolean
ob_emit_named (Loader *l, Node *n, OpBuild *b, const char *name,
               const char *out_letters, gint out_tensor, const char *type,
               ElkOpKind kind, double flops, GError **error)
{
  g_autofree char *spec = NULL;
  g_autofree char *lower = NULL;
  gint op;

  if (out_tensor < 0)
    return FALSE;
  spec = g_strdup_printf ("%s->%s", b->spec->str, out_letters);
  b->tensors[b->n++] = (guint32) out_tensor;
  lower = g_ascii_strdown (type, -1);
  op = elk_graph_add_op (l->graph, name, lower, kind, n->layer, spec,
                         b->tensors, b->n, b->extra->str, error);
  if (op < 0)
    return prefix_node_error (l, n, error);
  if (flops >= 0)
    elk_graph_set_op_flops (l->graph, (guint) op, flops);
  return TRUE;
}

/* The node's operator, named after the node. */
static gboolean
ob_emit (Loader *l, Node *n, OpBuild *b, const char *out_letters,
         gint out_tensor, const char *type, ElkOpKind kind, double flops,
         GError **error)
{
  return ob_emit_named (l, n, b, n->name, out_letters, out_tensor, type,
                        kind, flops, error);
}

/* Letters of operand @v broadcast against an output of rank @rank and
 * shape @dims whose axis i has letter 'a' + i.  An axis of extent 1 that
 * the output broadcasts gets a fresh loop dimension of extent 1, because in
 * elk's IR every plain axis of a tensor equals its loop extent. */
static void
broadcast_letters (const Value *v, guint rank, const gint64 *dims,
                   char *next, char *out)
{
  guint off = rank - v->rank;
  for (guint j = 0; j < v->rank; j++)
    out[j] = v->dims[j] == dims[off + j] ? (char) ('a' + off + j) : (*next)++;
  out[v->rank] = '\0';
}

static void
plain_letters (guint rank, char *out)
{
  for (guint i = 0; i < rank; i++)
    out[i] = (char) ('a' + i);
  out[rank] = '\0';
}

static gboolean
is_dropped_constant (const Value *v)
{
  return (v->kind == VK_PARAM || v->kind == VK_CONST) && v->n_elements == 1;
}

/* The einsum graph has no scalar operands, so the scalars a kernel needs
 * (Clip's bounds, an activation's slope, Gemm's alpha and beta, a pool's
 * true window) travel as the graph attribute
 * "immediates:<operator>": comma-separated numbers, in the order the
 * functional mode of the ipu-pod chip reads them
 * (chips/ipu-pod/elk-ipu-pod-func.c, parse_immediates), which keeps
 * them as floats.  Printed with g_ascii_formatd so that the locale never
 * turns a '.' into a ','. */
static void
set_immediates (Loader *l, const char *op, const double *v, guint n_v)
{
  g_autofree char *key = g_strdup_printf ("immediates:%s", op);
  GString *text = g_string_new (NULL);
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  for (guint i = 0; i < n_v; i++)
    {
      /* The shortest text that reads back as the same float: "0.2", not
       * the "0.200000003" a float attribute widened to double prints. */
      for (int digits = 1; digits <= 9; digits++)
        {
          char format[8];
          g_snprintf (format, sizeof format, "%%.%dg", digits);
          g_ascii_formatd (buf, sizeof buf, format, v[i]);
          if ((float) g_ascii_strtod (buf, NULL) == (float) v[i])
            break;
        }
      if (i > 0)
        g_string_append_c (text, ',');
      g_string_append (text, buf);
    }
  elk_graph_set_attribute (l->graph, key, text->str);
  g_string_free (text, TRUE);
}

static gboolean is_scalar_constant (Loader *l, Value *v, double *out);

/* A Clip bound given as input @i: its value if it is a scalar known at
 * import, the default if the input is omitted.  FALSE when the bound is
 * an operand computed at run time or a graph input without data: then
 * it has no immediate value. */
static gboolean
clip_bound (Loader *l, Node *n, guint i, double def, double *out)
{
  Value *v = in_value (n, i);

  if (v == NULL)
    {
      *out = def;
      return TRUE;
    }
  return is_scalar_constant (l, v, out);
}

/* The immediates of the unary operators that take scalars, set once the
 * node's operator is emitted.  Opset 11 moved Clip's bounds from the
 * attributes to inputs; the defaults are the float range, as in ONNX. */
static gboolean
unary_immediates (Loader *l, Node *n, GError **error)
{
  const char *type = n->p->op_type;
  double v[2];

  if (strcmp (type, "Clip") == 0)
    {
      if (!attr_float (l, n, "min", -G_MAXFLOAT, &v[0], error)
          || !attr_float (l, n, "max", G_MAXFLOAT, &v[1], error))
        return FALSE;
      if (clip_bound (l, n, 1, v[0], &v[0])
          && clip_bound (l, n, 2, v[1], &v[1]))
        set_immediates (l, n->name, v, 2);
    }
  else if (strcmp (type, "LeakyRelu") == 0)
    {
      if (!attr_float (l, n, "alpha", 0.01, &v[0], error))
        return FALSE;
      set_immediates (l, n->name, v, 1);
    }
  else if (strcmp (type, "Elu") == 0)
    {
      if (!attr_float (l, n, "alpha", 1.0, &v[0], error))
        return FALSE;
      set_immediates (l, n->name, v, 1);
    }
  else if (strcmp (type, "HardSigmoid") == 0)
    {
      if (!attr_float (l, n, "alpha", 0.2, &v[0], error)
          || !attr_float (l, n, "beta", 0.5, &v[1], error))
        return FALSE;
      set_immediates (l, n->name, v, 2);
    }
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Lowering: one function per operator family                          */

static gboolean
lower_elementwise (Loader *l, Node *n, GError **error)
{
  Value *out = n->out[0];
  Value *ops[64];
  guint n_ops = 0;
  char next = (char) ('a' + out->rank);
  char letters[MAX_RANK + 1];
  OpBuild b;
  gboolean ok = TRUE;
  gboolean clip = strcmp (n->p->op_type, "Clip") == 0;

  /* Scalar constants (Div by sqrt(d), Pow by 2, Clip's bounds) are
   * immediates of the kernel, not tensors it streams. */
  for (guint i = 0; i < n->n_in; i++)
    {
      Value *v = n->in[i];
      if (v == NULL)
        continue;
      if (clip && i > 0 && v->kind != VK_ACT)
        continue;
      if (is_dropped_constant (v))
        continue;
      ops[n_ops++] = v;
    }
  if (n_ops == 0)
    ops[n_ops++] = n->in[0];
  if (n_ops >= ELK_MAX_OPERANDS)
    return node_unsupported (l, n, error, "more than 3 tensor operands");

  ob_init (&b);
  for (guint i = 0; i < n_ops && ok; i++)
    {
      if (prelu_per_channel (n) && ops[i] == n->in[1])
        strcpy (letters, "b");
      else
        broadcast_letters (ops[i], out->rank, out->dims, &next, letters);
      ok = ob_input (l, n, &b, letters,
                     tensor_for (l, n, ops[i], 0, NULL, NULL, error), error);
    }
  plain_letters (out->rank, letters);
  ok = ok
       && ob_emit (l, n, &b, letters,
                   tensor_for (l, n, out, 0, NULL, NULL, error),
                   n->p->op_type,
                   n_ops == 1 ? ELK_OP_UNARY : ELK_OP_ELEMENTWISE,
                   n->info->flops * (double) out->n_elements, error);
  ob_clear (&b);
  return ok && (n_ops > 1 || unary_immediates (l, n, error));
}

static gboolean
lower_matmul (Loader *l, Node *n, GError **error)
{
  Value *a = n->in[0], *bv = n->in[1], *out = n->out[0];
  char la[MAX_RANK + 2], lb[MAX_RANK + 2], lo[MAX_RANK + 2];
  guint nb = out->rank - (a->rank > 1) - (bv->rank > 1);
  char next = 'a' + out->rank + 1; /* 'a' + out->rank is k */
  char k = (char) ('a' + out->rank);
  char m = (char) ('a' + nb), nn = (char) ('a' + nb + (a->rank > 1));
  guint p = 0;
  OpBuild b;
  gboolean ok;

  plain_letters (out->rank, lo);
  /* A: [batch..., m, k] or [k]. */
  if (a->rank > 1)
    {
      guint ab = a->rank - 2;
      for (guint i = 0; i < ab; i++)
        la[p++] = a->dims[i] == out->dims[nb - ab + i]
                    ? (char) ('a' + nb - ab + i)
                    : next++;
      la[p++] = m;
    }
  la[p++] = k;
  la[p] = '\0';
  /* B: [batch..., k, n] or [k]. */
  p = 0;
  if (bv->rank > 1)
    {
      guint bb = bv->rank - 2;
      for (guint i = 0; i < bb; i++)
        lb[p++] = bv->dims[i] == out->dims[nb - bb + i]
                    ? (char) ('a' + nb - bb + i)
                    : next++;
      lb[p++] = k;
      lb[p++] = nn;
    }
  else
    lb[p++] = k;
  lb[p] = '\0';

  ob_init (&b);
  ok = ob_input (l, n, &b, la, tensor_for (l, n, a, 0, NULL, NULL, error),
                 error)
       && ob_input (l, n, &b, lb, tensor_for (l, n, bv, 0, NULL, NULL, error),
                    error)
       && ob_emit (l, n, &b, lo, tensor_for (l, n, out, 0, NULL, NULL, error),
                   "matmul", ELK_OP_MATMUL, -1, error);
  ob_clear (&b);
  return ok;
}

static gboolean
lower_gemm (Loader *l, Node *n, GError **error)
{
  Value *a = n->in[0], *bv = n->in[1], *c = in_value (n, 2), *out = n->out[0];
  gint64 ta = 0, tb = 0;
  double flops, scale[2];
  OpBuild b;
  gboolean ok;

  if (!attr_int (l, n, "transA", 0, &ta, error)
      || !attr_int (l, n, "transB", 0, &tb, error)
      || !attr_float (l, n, "alpha", 1.0, &scale[0], error)
      || !attr_float (l, n, "beta", 1.0, &scale[1], error))
    return FALSE;
  flops = 2.0 * (double) out->dims[0] * (double) out->dims[1]
          * (double) a->dims[ta ? 0 : 1];
  ob_init (&b);
  /* Transposed operands are just a different index order in einsum. */
  ok = ob_input (l, n, &b, ta ? "ca" : "ac",
                 tensor_for (l, n, a, 0, NULL, NULL, error), error)
       && ob_input (l, n, &b, tb ? "bc" : "cb",
                    tensor_for (l, n, bv, 0, NULL, NULL, error), error);
  if (ok && c != NULL)
    {
      char lc[3], next = 'd';
      broadcast_letters (c, 2, out->dims, &next, lc);
      ok = ob_input (l, n, &b, lc, tensor_for (l, n, c, 0, NULL, NULL, error),
                     error);
      flops += (double) out->n_elements;
    }
  ok = ok
       && ob_emit (l, n, &b, "ab",
                   tensor_for (l, n, out, 0, NULL, NULL, error), "gemm",
                   ELK_OP_MATMUL, flops, error);
  ob_clear (&b);
  /* alpha scales the product and beta the bias C. */
  if (ok)
    set_immediates (l, n->name, scale, 2);
  return ok;
}

/* How a strided window axis is written in elk's stride-1 IR: the input is
 * seen through a view of extent q per phase, the kernel as r1 taps.
 * Stride 1: the padded input, kernel unchanged.  A 1-tap kernel: the
 * subsampled input.  Otherwise the input is split into stride phases
 * (space-to-depth), which turns the strided window into a stride-1 window
 * of ceil(kernel / stride) taps over the phase-split input. */
typedef struct
{
  gint64 eff, phase, r1, q;
} Lowered;

static void
lower_window (const Window *w, Lowered *o)
{
  o->eff = w->dilation * (w->kernel - 1) + 1;
  if (w->stride == 1)
    {
      o->phase = 1;
      o->r1 = o->eff;
    }
  else if (o->eff == 1)
    {
      o->phase = 1;
      o->r1 = 1;
    }
  else
    {
      o->phase = w->stride;
      o->r1 = (o->eff + w->stride - 1) / w->stride;
    }
  o->q = w->out + o->r1 - 1;
}

static gboolean
lower_conv (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *w = n->in[1], *bias = in_value (n, 2);
  Value *out = n->bn != NULL ? n->bn->out[0] : n->out[0];
  gint64 group, kernel[2];
  guint n_sp = x->rank - 2;
  Window win[2];
  Lowered lw[2];
  gint64 N = x->dims[0], C = x->dims[1], K = w->dims[0], P = 1;
  gint64 Cg, Kg, xd[MAX_RANK], wd[MAX_RANK], od[MAX_RANK];
  guint xr = 0, wr = 0, orank = 0;
  double flops, outputs = 1;
  const char *sp_win[2] = { "h+r", "w+s" }, *sp_out[2] = { "h", "w" };
  const char *sp_k[2] = { "r", "s" };
  GString *lx, *lwt, *lo;
  OpBuild b;
  gboolean ok;

  if (n_sp > 2)
    return node_unsupported (l, n, error, "only 1-D and 2-D convolutions "
                             "fit elk's 8 loop dimensions");
  if (!attr_int (l, n, "group", 1, &group, error))
    return FALSE;
  for (guint i = 0; i < n_sp; i++)
    kernel[i] = w->dims[2 + i];
  if (!window_geometry (l, n, n_sp, x->dims + 2, kernel, FALSE, FALSE, win,
                        error))
    return FALSE;
  lx = g_string_new (NULL);
  lwt = g_string_new (NULL);
  lo = g_string_new (NULL);
  for (guint i = 0; i < n_sp; i++)
    {
      lower_window (&win[i], &lw[i]);
      P *= lw[i].phase;
      outputs *= (double) win[i].out;
    }
  Cg = C / group;
  Kg = K / group;

  /* Output: [N, K, O...], or [N, g, K/g, O...] for grouped convolutions
   * that are not depthwise. */
  od[orank++] = N;
  g_string_append_c (lo, 'n');
  if (group > 1 && Kg > 1)
    {
      od[orank++] = group;
      od[orank++] = Kg;
      g_string_append (lo, "gk");
    }
  else
    {
      od[orank++] = K;
      g_string_append_c (lo, 'k');
    }
  /* Input view: [N, C*P, Q...], or [N, g, Cg*P, Q...] when grouped. */
  xd[xr++] = N;
  g_string_append_c (lx, 'n');
  if (group == 1)
    {
      xd[xr++] = C * P;
      g_string_append_c (lx, 'c');
    }
  else if (Kg == 1 && Cg * P == 1)
    {
      xd[xr++] = group;
      g_string_append_c (lx, 'k');
    }
  else
    {
      xd[xr++] = group;
      xd[xr++] = Cg * P;
      g_string_append (lx, Kg == 1 ? "kc" : "gc");
    }
  /* Weight view: [K, Cg*P, R1...], or [g, K/g, Cg*P, R1...]. */
  if (group > 1 && Kg > 1)
    {
      wd[wr++] = group;
      wd[wr++] = Kg;
      g_string_append (lwt, "gk");
    }
  else
    {
      wd[wr++] = K;
      g_string_append_c (lwt, 'k');
    }
  wd[wr++] = Cg * P;
  g_string_append_c (lwt, 'c');
  for (guint i = 0; i < n_sp; i++)
    {
      od[orank++] = win[i].out;
      xd[xr++] = lw[i].q;
      wd[wr++] = lw[i].r1;
      g_string_append (lo, sp_out[i]);
      g_string_append (lx, sp_win[i]);
      g_string_append (lwt, sp_k[i]);
    }

  flops = 2.0 * (double) N * (double) K * outputs * (double) Cg;
  for (guint i = 0; i < n_sp; i++)
    flops *= (double) kernel[i];
  if (n->bn != NULL && bias == NULL)
    bias = n->bn->in[2];
  if (bias != NULL)
    flops += (double) N * (double) K * outputs;

  ob_init (&b);
  ok = ob_input (l, n, &b, lx->str,
                 tensor_for (l, n, x, xr, xd, "conv-input", error), error)
       && ob_input (l, n, &b, lwt->str,
                    tensor_for (l, n, w, wr, wd, "conv-weight", error),
                    error);
  if (ok && bias != NULL)
    {
      gint64 bd[2] = { group, Kg };
      gboolean split = group > 1 && Kg > 1;
      ok = ob_input (l, n, &b, split ? "gk" : "k",
                     tensor_for (l, n, bias, split ? 2 : 1,
                                 split ? bd : bias->dims, "grouped", error),
                     error);
    }
  ok = ok
       && ob_emit (l, n, &b, lo->str,
                   tensor_for (l, n, out, orank, od, "grouped", error),
                   n->bn != NULL ? "conv+batchnorm" : "conv", ELK_OP_CONV,
                   flops, error);
  ob_clear (&b);
  g_string_free (lx, TRUE);
  g_string_free (lwt, TRUE);
  g_string_free (lo, TRUE);
  return ok;
}

static gboolean
lower_conv_transpose (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *w = n->in[1], *bias = in_value (n, 2);
  Value *out = n->out[0];
  gint64 group, kernel[2], xd[4], wd[4];
  guint n_sp = x->rank - 2;
  Window win[2];
  double flops;
  OpBuild b;
  gboolean ok;

  if (!attr_int (l, n, "group", 1, &group, error))
    return FALSE;
  if (n_sp > 2 || group != 1)
    return node_unsupported (l, n, error, "only ungrouped 1-D and 2-D "
                             "transposed convolutions are supported");
  for (guint i = 0; i < n_sp; i++)
    kernel[i] = w->dims[2 + i];
  if (!window_geometry (l, n, n_sp, x->dims + 2, kernel, TRUE, FALSE, win,
                        error))
    return FALSE;
  /* A transposed convolution is a stride-1 convolution over the input with
   * stride-1 zeros inserted and the borders padded: the view below. */
  xd[0] = x->dims[0];
  xd[1] = x->dims[1];
  wd[0] = out->dims[1];
  wd[1] = x->dims[1];
  flops = 2.0 * (double) x->dims[0] * (double) x->dims[1]
          * (double) out->dims[1];
  for (guint i = 0; i < n_sp; i++)
    {
      gint64 eff = win[i].dilation * (win[i].kernel - 1) + 1;
      xd[2 + i] = win[i].out + eff - 1;
      wd[2 + i] = eff;
      flops *= (double) x->dims[2 + i] * (double) kernel[i];
    }
  if (bias != NULL)
    flops += (double) out->n_elements;
  ob_init (&b);
  ok = ob_input (l, n, &b, n_sp == 2 ? "nch+rw+s" : "nch+r",
                 tensor_for (l, n, x, x->rank, xd, "zero-inserted", error),
                 error)
       && ob_input (l, n, &b, n_sp == 2 ? "kcrs" : "kcr",
                    tensor_for (l, n, w, w->rank, wd, "transposed", error),
                    error);
  if (ok && bias != NULL)
    ok = ob_input (l, n, &b, "k",
                   tensor_for (l, n, bias, 0, NULL, NULL, error), error);
  ok = ok
       && ob_emit (l, n, &b, n_sp == 2 ? "nkhw" : "nkh",
                   tensor_for (l, n, out, 0, NULL, NULL, error),
                   "convtranspose", ELK_OP_CONV, flops, error);
  ob_clear (&b);
  return ok;
}

static gboolean
lower_batchnorm (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *out = n->out[0];
  char letters[MAX_RANK + 1];
  OpBuild b;
  gboolean ok;

  /* Inference-mode batch normalization is a per-channel scale and shift;
   * the mean and variance are folded into them offline, as every
   * inference compiler does. */
  plain_letters (x->rank, letters);
  ob_init (&b);
  ok = ob_input (l, n, &b, letters,
                 tensor_for (l, n, x, 0, NULL, NULL, error), error)
       && ob_input (l, n, &b, "b",
                    tensor_for (l, n, n->in[1], 0, NULL, NULL, error), error)
       && ob_input (l, n, &b, "b",
                    tensor_for (l, n, n->in[2], 0, NULL, NULL, error), error)
       && ob_emit (l, n, &b, letters,
                   tensor_for (l, n, out, 0, NULL, NULL, error),
                   "batchnorm", ELK_OP_ELEMENTWISE,
                   2.0 * (double) out->n_elements, error);
  ob_clear (&b);
  return ok;
}

static gboolean
emit_layernorm (Loader *l, Node *n, Value *x, Value *scale, Value *bias,
                Value *out, GError **error)
{
  char letters[MAX_RANK + 1], lw[MAX_RANK + 1];
  char next = (char) ('a' + x->rank);
  OpBuild b;
  gboolean ok;
  double per = 5.0;

  plain_letters (x->rank, letters);
  ob_init (&b);
  ok = ob_input (l, n, &b, letters,
                 tensor_for (l, n, x, 0, NULL, NULL, error), error);
  if (ok && scale != NULL)
    {
      broadcast_letters (scale, x->rank, x->dims, &next, lw);
      ok = ob_input (l, n, &b, lw,
                     tensor_for (l, n, scale, 0, NULL, NULL, error), error);
      per += 1.0;
    }
  if (ok && bias != NULL)
    {
      broadcast_letters (bias, x->rank, x->dims, &next, lw);
      ok = ob_input (l, n, &b, lw,
                     tensor_for (l, n, bias, 0, NULL, NULL, error), error);
      per += 1.0;
    }
  ok = ok
       && ob_emit (l, n, &b, letters,
                   tensor_for (l, n, out, 0, NULL, NULL, error), "layernorm",
                   ELK_OP_REDUCE, per * (double) x->n_elements, error);
  ob_clear (&b);
  return ok;
}

static gboolean
lower_layernorm (Loader *l, Node *n, GError **error)
{
  static const char *const suffix[3] = { NULL, "mean", "invstddev" };
  Value *x = n->in[0];

  if (!emit_layernorm (l, n, x, in_value (n, 1), in_value (n, 2), n->out[0],
                       error))
    return FALSE;
  /* The optional statistics outputs are reductions of their own. */
  for (guint i = 1; i < n->n_out && i < 3; i++)
    {
      Value *stat = n->out[i];
      char li[MAX_RANK + 1], lo[MAX_RANK + 1];
      char next = (char) ('a' + x->rank);
      g_autofree char *name = NULL;
      OpBuild b;
      gboolean ok;
      gint op;

      if (stat == NULL || stat->n_uses == 0)
        continue;
      plain_letters (x->rank, li);
      for (guint k = 0; k < x->rank; k++)
        lo[k] = stat->dims[k] == x->dims[k] ? li[k] : next++;
      lo[x->rank] = '\0';
      ob_init (&b);
      ok = ob_input (l, n, &b, li, tensor_for (l, n, x, 0, NULL, NULL, error),
                     error);
      if (ok)
        {
          g_autofree char *spec = g_strdup_printf ("%s->%s", b.spec->str, lo);
          gint t = tensor_for (l, n, stat, 0, NULL, NULL, error);
          name = g_strdup_printf ("%s#%s", n->name, suffix[i]);
          b.tensors[b.n++] = (guint32) t;
          ok = t >= 0;
          if (ok)
            {
              op = elk_graph_add_op (l->graph, name, "layernorm-stats",
                                     ELK_OP_REDUCE, n->layer, spec, b.tensors,
                                     b.n, NULL, error);
              ok = op >= 0 || prefix_node_error (l, n, error);
            }
        }
      ob_clear (&b);
      if (!ok)
        return FALSE;
    }
  return TRUE;
}

/* Per-channel normalization over the spatial axes (InstanceNormalization),
 * or over given axes (MeanVarianceNormalization): a reduction with the
 * output shaped like the input. */
static gboolean
lower_channel_norm (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *out = n->out[0];
  char letters[MAX_RANK + 1];
  OpBuild b;
  gboolean ok;
  double per = 5.0;

  plain_letters (x->rank, letters);
  ob_init (&b);
  ok = ob_input (l, n, &b, letters,
                 tensor_for (l, n, x, 0, NULL, NULL, error), error);
  for (guint i = 1; i < n->n_in && i < 3 && ok; i++)
    if (n->in[i] != NULL)
      {
        ok = ob_input (l, n, &b, "b",
                       tensor_for (l, n, n->in[i], 0, NULL, NULL, error),
                       error);
        per += 1.0;
      }
  ok = ok
       && ob_emit (l, n, &b, letters,
                   tensor_for (l, n, out, 0, NULL, NULL, error),
                   n->p->op_type, ELK_OP_REDUCE,
                   per * (double) x->n_elements, error);
  ob_clear (&b);
  return ok;
}

static gboolean
infer_channel_norm (Loader *l, Node *n, GError **error)
{
  Value *x;
  gboolean instance = strcmp (n->p->op_type, "InstanceNormalization") == 0;

  if (!need_inputs (l, n, instance ? 3 : 1, instance ? 3 : 1, error))
    return FALSE;
  x = n->in[0];
  if (x->rank < 2)
    return node_error (l, n, error, "input must have rank 2 or more");
  for (guint i = 1; i < n->n_in; i++)
    if (n->in[i]->rank != 1 || n->in[i]->dims[0] != x->dims[1])
      return node_error (l, n, error, "'%s' must have shape [%"
                         G_GINT64_FORMAT "]", n->in[i]->name, x->dims[1]);
  mark_data (l, x);
  return set_computed (l, n, 0, x->dtype, x->rank, x->dims, error);
}

/* GatherElements: out[i...] = x[..., idx[i...], ...]; the output has the
 * indices' shape, and the operator reads those elements of x. */
static gboolean
infer_gather_elements (Loader *l, Node *n, GError **error)
{
  Value *x, *idx;
  gint64 axis;
  guint a;

  if (!need_inputs (l, n, 2, 2, error)
      || !attr_int (l, n, "axis", 0, &axis, error))
    return FALSE;
  x = n->in[0];
  idx = n->in[1];
  if (!norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  if (idx->rank != x->rank)
    return node_error (l, n, error, "indices and data ranks differ");
  mark_data (l, idx);
  return set_computed (l, n, 0, x->dtype, idx->rank, idx->dims, error);
}

static gboolean
lower_gather_elements (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *idx = n->in[1], *out = n->out[0];
  char lo[MAX_RANK + 1];
  OpBuild b;
  gboolean ok;

  plain_letters (out->rank, lo);
  ob_init (&b);
  ok = ob_input (l, n, &b, lo, tensor_for (l, n, idx, 0, NULL, NULL, error),
                 error)
       && ob_input (l, n, &b, lo,
                    tensor_for (l, n, x, out->rank, out->dims, "elements",
                                error),
                    error)
       && ob_emit (l, n, &b, lo,
                   tensor_for (l, n, out, 0, NULL, NULL, error), "gather",
                   ELK_OP_GATHER, 0.0, error);
  ob_clear (&b);
  return ok;
}

/* Softmax-like operators whose output is shaped like the input and that
 * read along one axis (CumSum, Hardmax): the axis is not needed for the
 * shape. */
static gboolean
infer_same_shape (Loader *l, Node *n, GError **error)
{
  Value *x;
  if (!need_inputs (l, n, 1, 2, error))
    return FALSE;
  x = n->in[0];
  mark_data (l, x);
  return set_computed (l, n, 0, x->dtype, x->rank, x->dims, error);
}

/* LogSoftmax, Hardmax, CumSum: one operator shaped like its input, which
 * reads along an axis that the einsum has no reduced dimension for. */
static gboolean
lower_along_axis (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *out = n->out[0];
  char letters[MAX_RANK + 1];
  OpBuild b;
  gboolean ok;

  plain_letters (x->rank, letters);
  ob_init (&b);
  ok = ob_input (l, n, &b, letters,
                 tensor_for (l, n, x, 0, NULL, NULL, error), error)
       && ob_emit (l, n, &b, letters,
                   tensor_for (l, n, out, 0, NULL, NULL, error),
                   n->p->op_type, ELK_OP_REDUCE,
                   n->info->flops * (double) x->n_elements, error);
  ob_clear (&b);
  return ok;
}

/* An activation tensor of the node's own, computed between two of the
 * operators it is lowered into. */
static gint
node_scratch (Loader *l, Node *n, const char *name, int dtype, guint rank,
              const guint64 *shape, GError **error)
{
  ElkDType dt;
  gint id;

  if (!dtype_to_elk (l, dtype, &dt))
    {
      node_unsupported (l, n, error, NULL);
      g_prefix_error (error, "tensor '%s' has data type %s; ", name,
                      dtype_name (dtype));
      return -1;
    }
  id = elk_graph_add_tensor (l->graph, name, dt,
                             ELK_TENSOR_ORIGIN_ACTIVATION, rank, shape, 0,
                             error);
  if (id < 0)
    prefix_node_error (l, n, error);
  return id;
}

/* Softmax as the four operators the llama frontend writes: m = max(x),
 * e = exp(x - m), s = sum(e), y = e / s, with m and s reduced over the
 * normalised axes (one axis from opset 13 on, default -1; before that
 * every axis from "axis" on, the input seen flattened to 2-D there,
 * default 1).  Because the max and the sum are true reductions, a plan
 * may split the normalised axes across cores and the cost model charges
 * the partial results it combines; a single same-shape operator would
 * hide that work.  The operators are "<node>#max", "<node>#exp",
 * "<node>#sum" and, writing the node's output, "<node>" itself; m, e
 * and s are the tensors "<output>#softmax-max", "-exp" and "-sum".  The
 * FLOPs are those of the table, 5 per element: 1 max, 2 subtract and
 * exponential, 1 sum, 1 divide. */
static gboolean
lower_softmax (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *out = n->out[0];
  static const char *const step[3] = { "max", "exp", "sum" };
  char li[MAX_RANK + 1], lr[MAX_RANK + 1];
  guint64 rshape[MAX_RANK], xshape[MAX_RANK];
  gint t[3];
  gint64 axis;
  guint a, r = 0;
  double per = (double) x->n_elements;
  gboolean ok = TRUE;

  if (x->rank == 0)
    return node_unsupported (l, n, error, "its input is a scalar, which "
                             "has no axis to normalise over");
  if (!attr_int (l, n, "axis", l->opset >= 13 ? -1 : 1, &axis, error)
      || !norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  plain_letters (x->rank, li);
  for (guint k = 0; k < x->rank; k++)
    {
      gboolean reduced = l->opset >= 13 ? k == a : k >= a;
      xshape[k] = (guint64) x->dims[k];
      if (!reduced)
        {
          lr[r] = li[k];
          rshape[r++] = (guint64) x->dims[k];
        }
    }
  /* Normalising over every axis leaves one value: kept as an axis of
   * extent 1, since elk's operators write tensors of rank 1 or more. */
  if (r == 0)
    {
      lr[r] = (char) ('a' + x->rank);
      rshape[r++] = 1;
    }
  lr[r] = '\0';
  for (guint i = 0; i < 3 && ok; i++)
    {
      g_autofree char *name = g_strdup_printf ("%s#softmax-%s", out->name,
                                               step[i]);
      t[i] = node_scratch (l, n, name, out->dtype, i == 1 ? x->rank : r,
                           i == 1 ? xshape : rshape, error);
      ok = t[i] >= 0;
    }
  for (guint i = 0; i < 4 && ok; i++)
    {
      g_autofree char *name = i < 3 ? g_strdup_printf ("%s#%s", n->name,
                                                       step[i])
                                     : g_strdup (n->name);
      /* Reads x, (x, m), e, (e, s). */
      gint in0 = i == 0 || i == 1 ? tensor_for (l, n, x, 0, NULL, NULL,
                                                error)
                                  : t[1];
      OpBuild b;

      if (in0 < 0)
        return FALSE;
      ob_init (&b);
      ok = ob_input (l, n, &b, li, in0, error);
      if (ok && (i == 1 || i == 3))
        ok = ob_input (l, n, &b, lr, t[i == 1 ? 0 : 2], error);
      if (ok && lr[0] == (char) ('a' + x->rank))
        ob_extent (&b, lr[0], 1);
      switch (i)
        {
        case 0:
          ok = ok && ob_emit_named (l, n, &b, name, lr, t[0], "max",
                                    ELK_OP_REDUCE, per, error);
          break;
        case 1:
          ok = ok && ob_emit_named (l, n, &b, name, li, t[1], "sub-exp",
                                    ELK_OP_ELEMENTWISE, 2 * per, error);
          break;
        case 2:
          ok = ok && ob_emit_named (l, n, &b, name, lr, t[2], "sum",
                                    ELK_OP_REDUCE, per, error);
          break;
        default:
          ok = ok && ob_emit_named (l, n, &b, name, li,
                                    tensor_for (l, n, out, 0, NULL, NULL,
                                                error),
                                    "div", ELK_OP_ELEMENTWISE, per, error);
          break;
        }
      ob_clear (&b);
    }
  return ok;
}

static gboolean
lower_reduce (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *out = n->out[0];
  gboolean reduced[MAX_RANK], keep;
  char li[MAX_RANK + 1], lo[MAX_RANK + 1];
  char next = (char) ('a' + x->rank);
  guint r = 0;
  OpBuild b;
  gboolean ok;

  if (!reduce_axes (l, n, reduced, &keep, error))
    return FALSE;
  plain_letters (x->rank, li);
  for (guint i = 0; i < x->rank; i++)
    if (!reduced[i])
      lo[r++] = li[i];
    else if (keep)
      lo[r++] = next++;
  lo[r] = '\0';
  ob_init (&b);
  ok = ob_input (l, n, &b, li, tensor_for (l, n, x, 0, NULL, NULL, error),
                 error)
       && ob_emit (l, n, &b, lo,
                   tensor_for (l, n, out, 0, NULL, NULL, error),
                   n->p->op_type, ELK_OP_REDUCE,
                   n->info->flops * (double) x->n_elements, error);
  ob_clear (&b);
  return ok;
}

static gboolean
lower_pool (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *out = n->out[0];
  gint64 ceil_mode, count_pad = 0, xd[MAX_RANK];
  double imm[5 * 2 + 1];
  gsize nk;
  const int64_t *ks = attr_ints (n, "kernel_shape", &nk);
  guint n_sp = x->rank - 2, xr = 2;
  Window win[2];
  GString *lx = g_string_new ("nc");
  const char win_l[2] = { 'h', 'w' }, tap_l[2] = { 'r', 's' };
  const char ph_l[2] = { 'p', 'q' };
  double flops = (double) out->n_elements;
  OpBuild b;
  gboolean ok;

  if (n_sp > 2)
    {
      g_string_free (lx, TRUE);
      return node_unsupported (l, n, error, "only 1-D and 2-D pooling fits "
                               "elk's 8 loop dimensions");
    }
  if (!attr_int (l, n, "ceil_mode", 0, &ceil_mode, error)
      || (strcmp (n->p->op_type, "AveragePool") == 0
          && !attr_int (l, n, "count_include_pad", 0, &count_pad, error))
      || !window_geometry (l, n, n_sp, x->dims + 2, ks, FALSE,
                           ceil_mode != 0, win, error))
    {
      g_string_free (lx, TRUE);
      return FALSE;
    }
  xd[0] = x->dims[0];
  xd[1] = x->dims[1];
  ob_init (&b);
  for (guint i = 0; i < n_sp; i++)
    {
      Lowered lw;
      lower_window (&win[i], &lw);
      flops *= (double) win[i].kernel;
      /* The true window, which the stride-1 taps over stride phases
       * cover with ceil(kernel / stride) * stride positions: the kernel
       * skips the taps past it, between dilated taps and on padding. */
      imm[5 * i] = (double) win[i].stride;
      imm[5 * i + 1] = (double) lw.eff;
      imm[5 * i + 2] = (double) win[i].dilation;
      imm[5 * i + 3] = (double) win[i].pad_begin;
      imm[5 * i + 4] = (double) win[i].in;
      if (lw.phase == 1 && lw.r1 == 1)
        {
          g_string_append_c (lx, win_l[i]);
          xd[xr++] = win[i].out;
          continue;
        }
      g_string_append_printf (lx, "%c+%c", win_l[i], tap_l[i]);
      xd[xr++] = lw.q;
      ob_extent (&b, tap_l[i], lw.r1);
      if (lw.phase > 1)
        {
          g_string_append_c (lx, ph_l[i]);
          xd[xr++] = lw.phase;
        }
    }
  ok = ob_input (l, n, &b, lx->str,
                 tensor_for (l, n, x, xr, xd, "pool-input", error), error)
       && ob_emit (l, n, &b, n_sp == 2 ? "nchw" : "nch",
                   tensor_for (l, n, out, 0, NULL, NULL, error),
                   n->p->op_type, ELK_OP_POOL, flops, error);
  ob_clear (&b);
  g_string_free (lx, TRUE);
  imm[5 * n_sp] = count_pad != 0;
  if (ok)
    set_immediates (l, n->name, imm, 5 * n_sp + 1);
  return ok;
}

static gboolean
lower_global_pool (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *out = n->out[0];
  char li[MAX_RANK + 1], lo[MAX_RANK + 1];
  char next = (char) ('a' + x->rank);
  OpBuild b;
  gboolean ok;

  plain_letters (x->rank, li);
  for (guint i = 0; i < x->rank; i++)
    lo[i] = i < 2 ? li[i] : next++;
  lo[x->rank] = '\0';
  ob_init (&b);
  ok = ob_input (l, n, &b, li, tensor_for (l, n, x, 0, NULL, NULL, error),
                 error)
       && ob_emit (l, n, &b, lo,
                   tensor_for (l, n, out, 0, NULL, NULL, error),
                   n->p->op_type, ELK_OP_REDUCE, (double) x->n_elements,
                   error);
  ob_clear (&b);
  return ok;
}

static gboolean
lower_gather (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *idx = n->in[1], *out = n->out[0];
  gint64 axis;
  guint a;
  char li[MAX_RANK + 1], lo[2 * MAX_RANK + 1];
  OpBuild b;
  gboolean ok;

  if (!attr_int (l, n, "axis", 0, &axis, error)
      || !norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  /* out[d<a, i..., d>a] = x[d<a, idx[i...], d>a].  Like the llama
   * frontend, the operator reads only the gathered rows of the table (a
   * view shaped like the output), which is what an embedding lookup
   * streams from HBM, and the indices. */
  plain_letters (out->rank, lo);
  for (guint j = 0; j < idx->rank; j++)
    li[j] = lo[a + j];
  li[idx->rank] = '\0';
  ob_init (&b);
  ok = ob_input (l, n, &b, li,
                 tensor_for (l, n, idx, 0, NULL, NULL, error), error)
       && ob_input (l, n, &b, lo,
                    tensor_for (l, n, x, out->rank, out->dims, "rows",
                                error),
                    error)
       && ob_emit (l, n, &b, lo,
                   tensor_for (l, n, out, 0, NULL, NULL, error), "gather",
                   ELK_OP_GATHER, 0.0, error);
  ob_clear (&b);
  return ok;
}

static gboolean
lower_resize (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *out = n->out[0];
  char li[MAX_RANK + 1], lo[MAX_RANK + 1];
  char next = (char) ('a' + x->rank);
  g_autofree char *mode = attr_string (n, "mode", "nearest");
  guint resized = 0;
  double per;
  OpBuild b;
  gboolean ok;

  plain_letters (out->rank, lo);
  for (guint i = 0; i < x->rank; i++)
    {
      li[i] = x->dims[i] == out->dims[i] ? lo[i] : next++;
      resized += x->dims[i] != out->dims[i];
    }
  li[x->rank] = '\0';
  if (strcmp (mode, "nearest") == 0)
    per = 0.0;
  else if (strcmp (mode, "linear") == 0 || strcmp (mode, "bilinear") == 0)
    per = 3.0 * resized;
  else if (strcmp (mode, "cubic") == 0)
    per = 7.0 * resized;
  else
    return node_unsupported (l, n, error, "unknown interpolation mode");
  ob_init (&b);
  ok = ob_input (l, n, &b, li, tensor_for (l, n, x, 0, NULL, NULL, error),
                 error)
       && ob_emit (l, n, &b, lo,
                   tensor_for (l, n, out, 0, NULL, NULL, error), "resize",
                   ELK_OP_GATHER, per * (double) out->n_elements, error);
  ob_clear (&b);
  return ok;
}

/* ------------------------------------------------------------------ */
/* The operator table                                                  */

/* Operators without a lower function have no compute: their outputs are
 * views or constants, folded at import (docs/frontend-onnx.md lists them).
 * flops is per output element for elementwise and unary operators, and
 * per input element for reductions. */
static const OpInfo op_table[] = {
  /* Layout and shape arithmetic, folded. */
  { "Identity", infer_identity, NULL, 0 },
  { "Dropout", infer_identity, NULL, 0 },
  { "Cast", infer_cast, NULL, 0 },
  { "CastLike", infer_cast, NULL, 0 },
  { "Reshape", infer_reshape, NULL, 0 },
  { "Flatten", infer_flatten, NULL, 0 },
  { "Squeeze", infer_squeeze, NULL, 0 },
  { "Unsqueeze", infer_unsqueeze, NULL, 0 },
  { "Transpose", infer_transpose, NULL, 0 },
  { "Concat", infer_concat, NULL, 0 },
  { "Split", infer_split, NULL, 0 },
  { "Slice", infer_slice, NULL, 0 },
  { "Expand", infer_expand, NULL, 0 },
  { "Tile", infer_tile, NULL, 0 },
  { "Pad", infer_pad, NULL, 0 },
  { "DepthToSpace", infer_depth_space, NULL, 0 },
  { "SpaceToDepth", infer_depth_space, NULL, 0 },
  { "Trilu", infer_trilu, NULL, 0 },
  { "Shape", infer_shape, NULL, 0 },
  { "Size", infer_size, NULL, 0 },
  { "Constant", infer_constant, NULL, 0 },
  { "ConstantOfShape", infer_constant_of_shape, NULL, 0 },
  { "Range", infer_range, NULL, 0 },
  /* Matrix products and convolutions. */
  { "MatMul", infer_matmul, lower_matmul, 0 },
  { "Gemm", infer_gemm, lower_gemm, 0 },
  { "Conv", infer_conv, lower_conv, 0 },
  { "ConvTranspose", infer_conv, lower_conv_transpose, 0 },
  /* Normalizations and reductions. */
  { "BatchNormalization", infer_batchnorm, lower_batchnorm, 0 },
  { "LayerNormalization", infer_layernorm, lower_layernorm, 0 },
  { "Softmax", infer_softmax, lower_softmax, 5 },
  { "LogSoftmax", infer_softmax, lower_along_axis, 6 },
  { "Hardmax", infer_softmax, lower_along_axis, 2 },
  { "CumSum", infer_same_shape, lower_along_axis, 1 },
  { "InstanceNormalization", infer_channel_norm, lower_channel_norm, 0 },
  { "MeanVarianceNormalization", infer_channel_norm, lower_channel_norm,
    0 },
  { "ReduceLogSum", infer_reduce, lower_reduce, 2 },
  { "ReduceMean", infer_reduce, lower_reduce, 1 },
  { "ReduceSum", infer_reduce, lower_reduce, 1 },
  { "ReduceMax", infer_reduce, lower_reduce, 1 },
  { "ReduceMin", infer_reduce, lower_reduce, 1 },
  { "ReduceProd", infer_reduce, lower_reduce, 1 },
  { "ReduceSumSquare", infer_reduce, lower_reduce, 2 },
  { "ReduceL1", infer_reduce, lower_reduce, 2 },
  { "ReduceL2", infer_reduce, lower_reduce, 2 },
  { "ReduceLogSumExp", infer_reduce, lower_reduce, 3 },
  { "ArgMax", infer_reduce, lower_reduce, 1 },
  { "ArgMin", infer_reduce, lower_reduce, 1 },
  { "MaxPool", infer_pool, lower_pool, 0 },
  { "AveragePool", infer_pool, lower_pool, 0 },
  { "GlobalAveragePool", infer_global_pool, lower_global_pool, 0 },
  { "GlobalMaxPool", infer_global_pool, lower_global_pool, 0 },
  /* Data movement with compute-free kernels. */
  { "Gather", infer_gather, lower_gather, 0 },
  { "GatherElements", infer_gather_elements, lower_gather_elements, 0 },
  { "Resize", infer_resize, lower_resize, 0 },
  { "Upsample", infer_resize, lower_resize, 0 },
  /* Elementwise, with broadcasting. */
  { "Add", infer_elementwise, lower_elementwise, 1 },
  { "Sub", infer_elementwise, lower_elementwise, 1 },
  { "Mul", infer_elementwise, lower_elementwise, 1 },
  { "Div", infer_elementwise, lower_elementwise, 1 },
  { "Pow", infer_elementwise, lower_elementwise, 1 },
  { "Max", infer_elementwise, lower_elementwise, 1 },
  { "Min", infer_elementwise, lower_elementwise, 1 },
  { "Sum", infer_elementwise, lower_elementwise, 1 },
  { "Mean", infer_elementwise, lower_elementwise, 1 },
  { "Mod", infer_elementwise, lower_elementwise, 1 },
  { "PRelu", infer_elementwise, lower_elementwise, 2 },
  { "Where", infer_elementwise, lower_elementwise, 1 },
  { "Equal", infer_elementwise, lower_elementwise, 1 },
  { "Less", infer_elementwise, lower_elementwise, 1 },
  { "Greater", infer_elementwise, lower_elementwise, 1 },
  { "LessOrEqual", infer_elementwise, lower_elementwise, 1 },
  { "GreaterOrEqual", infer_elementwise, lower_elementwise, 1 },
  { "And", infer_elementwise, lower_elementwise, 1 },
  { "Or", infer_elementwise, lower_elementwise, 1 },
  { "Xor", infer_elementwise, lower_elementwise, 1 },
  /* Unary. */
  { "Relu", infer_unary, lower_elementwise, 1 },
  { "LeakyRelu", infer_unary, lower_elementwise, 2 },
  { "Clip", infer_unary, lower_elementwise, 2 },
  { "Sigmoid", infer_unary, lower_elementwise, 4 },
  { "HardSigmoid", infer_unary, lower_elementwise, 3 },
  { "HardSwish", infer_unary, lower_elementwise, 4 },
  { "Tanh", infer_unary, lower_elementwise, 5 },
  { "Erf", infer_unary, lower_elementwise, 5 },
  { "Gelu", infer_unary, lower_elementwise, 8 },
  { "Softplus", infer_unary, lower_elementwise, 3 },
  { "Softsign", infer_unary, lower_elementwise, 3 },
  { "Elu", infer_unary, lower_elementwise, 3 },
  { "Selu", infer_unary, lower_elementwise, 4 },
  { "Celu", infer_unary, lower_elementwise, 4 },
  { "Mish", infer_unary, lower_elementwise, 6 },
  { "ThresholdedRelu", infer_unary, lower_elementwise, 1 },
  { "Exp", infer_unary, lower_elementwise, 1 },
  { "Log", infer_unary, lower_elementwise, 1 },
  { "Neg", infer_unary, lower_elementwise, 1 },
  { "Sqrt", infer_unary, lower_elementwise, 1 },
  { "Abs", infer_unary, lower_elementwise, 1 },
  { "Reciprocal", infer_unary, lower_elementwise, 1 },
  { "Floor", infer_unary, lower_elementwise, 1 },
  { "Ceil", infer_unary, lower_elementwise, 1 },
  { "Round", infer_unary, lower_elementwise, 1 },
  { "Sign", infer_unary, lower_elementwise, 1 },
  { "Sin", infer_unary, lower_elementwise, 1 },
  { "Cos", infer_unary, lower_elementwise, 1 },
  { "Tan", infer_unary, lower_elementwise, 1 },
  { "Asin", infer_unary, lower_elementwise, 1 },
  { "Acos", infer_unary, lower_elementwise, 1 },
  { "Atan", infer_unary, lower_elementwise, 1 },
  { "Sinh", infer_unary, lower_elementwise, 1 },
  { "Cosh", infer_unary, lower_elementwise, 1 },
  { "Asinh", infer_unary, lower_elementwise, 1 },
  { "Acosh", infer_unary, lower_elementwise, 1 },
  { "Atanh", infer_unary, lower_elementwise, 1 },
  { "Shrink", infer_unary, lower_elementwise, 2 },
  { "Not", infer_unary, lower_elementwise, 1 },
  { "IsNaN", infer_unary, lower_elementwise, 1 },
  { "IsInf", infer_unary, lower_elementwise, 1 },
};

static const OpInfo *
find_op (const char *op_type)
{
  for (guint i = 0; i < G_N_ELEMENTS (op_table); i++)
    if (strcmp (op_table[i].op_type, op_type) == 0)
      return &op_table[i];
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Pattern recognition                                                 */

static Node *
sole_user (Loader *l, const Value *v)
{
  Node *user = NULL;
  if (v == NULL || v->n_uses != 1 || v->is_graph_output)
    return NULL;
  for (guint i = 0; i < l->nodes->len; i++)
    {
      Node *n = g_ptr_array_index (l->nodes, i);
      for (guint k = 0; k < n->n_in; k++)
        if (n->in[k] == v)
          user = n;
    }
  return user;
}

static gboolean
is_op (const Node *n, const char *op)
{
  return n != NULL && n->fuse == FUSE_NONE && strcmp (n->p->op_type, op) == 0;
}

static gboolean
is_scalar_constant (Loader *l, Value *v, double *out)
{
  const double *d;
  if (v == NULL || v->n_elements != 1 || v->kind == VK_ACT
      || v->kind == VK_INPUT)
    return FALSE;
  d = value_data (l, v);
  if (d == NULL)
    return FALSE;
  if (out != NULL)
    *out = d[0];
  return TRUE;
}

static gboolean
is_weight (Loader *l, const Value *v)
{
  return v != NULL && value_origin (l, v) == ELK_TENSOR_ORIGIN_WEIGHT;
}

static gboolean
same_trailing_axes (Loader *l, Node *a, Node *b, guint rank)
{
  gboolean ra[MAX_RANK], rb[MAX_RANK], ka, kb;
  guint first = rank;

  if (!reduce_axes (l, a, ra, &ka, NULL) || !reduce_axes (l, b, rb, &kb, NULL)
      || !ka || !kb)
    return FALSE;
  for (guint i = 0; i < rank; i++)
    {
      if (ra[i] != rb[i])
        return FALSE;
      if (ra[i] && first == rank)
        first = i;
      if (!ra[i] && first != rank)
        return FALSE;
    }
  return first < rank;
}

/* Recognises the chain exporters write for LayerNormalization:
 *   m = ReduceMean(x); d = Sub(x, m); v = ReduceMean(Pow(d, 2));
 *   y = Div(d, Sqrt(Add(v, eps))) [; y = Mul(y, scale)] [; y = Add(y, b)]
 * and marks it as one fused operator at its last node. */
static void
fuse_layernorm (Loader *l, Node *m1)
{
  Value *x = m1->in[0];
  Node *sub, *pw = NULL, *dv = NULL, *m2, *add, *sq, *last, *mul, *bias;
  Value *d, *scale = NULL, *b = NULL;
  double two;
  Node *chain[9];
  guint n_chain = 0;

  if (x == NULL || m1->out[0] == NULL)
    return;
  sub = sole_user (l, m1->out[0]);
  if (!is_op (sub, "Sub") || sub->in[0] != x || sub->in[1] != m1->out[0])
    return;
  d = sub->out[0];
  if (d->n_uses != 2 || d->is_graph_output)
    return;
  for (guint i = 0; i < l->nodes->len; i++)
    {
      Node *n = g_ptr_array_index (l->nodes, i);
      if (n->n_in >= 1 && n->in[0] == d && is_op (n, "Pow"))
        pw = n;
      else if (n->n_in == 2 && n->in[0] == d && is_op (n, "Div"))
        dv = n;
    }
  if (pw == NULL || dv == NULL || !is_scalar_constant (l, pw->in[1], &two)
      || two != 2.0)
    return;
  m2 = sole_user (l, pw->out[0]);
  if (!is_op (m2, "ReduceMean")
      || !same_trailing_axes (l, m1, m2, x->rank))
    return;
  add = sole_user (l, m2->out[0]);
  if (!is_op (add, "Add")
      || !(is_scalar_constant (l, add->in[1], NULL)
           || is_scalar_constant (l, add->in[0], NULL)))
    return;
  sq = sole_user (l, add->out[0]);
  if (!is_op (sq, "Sqrt") || sole_user (l, sq->out[0]) != dv
      || dv->in[1] != sq->out[0])
    return;
  last = dv;
  mul = sole_user (l, dv->out[0]);
  if (is_op (mul, "Mul"))
    {
      Value *other = mul->in[0] == dv->out[0] ? mul->in[1] : mul->in[0];
      if (is_weight (l, other))
        {
          scale = other;
          chain[n_chain++] = last;
          last = mul;
          bias = sole_user (l, mul->out[0]);
          if (is_op (bias, "Add"))
            {
              other = bias->in[0] == mul->out[0] ? bias->in[1] : bias->in[0];
              if (is_weight (l, other))
                {
                  b = other;
                  chain[n_chain++] = last;
                  last = bias;
                }
            }
        }
    }
  chain[n_chain++] = m1;
  chain[n_chain++] = sub;
  chain[n_chain++] = pw;
  chain[n_chain++] = m2;
  chain[n_chain++] = add;
  chain[n_chain++] = sq;
  for (guint i = 0; i < n_chain; i++)
    chain[i]->fuse = FUSE_SKIP;
  last->fuse = FUSE_LAYERNORM;
  last->ln_x = x;
  last->ln_scale = scale;
  last->ln_bias = b;
}

static void
fuse_patterns (Loader *l)
{
  for (guint i = 0; i < l->nodes->len; i++)
    {
      Node *n = g_ptr_array_index (l->nodes, i);
      if (is_op (n, "ReduceMean") && n->out[0] != NULL
          && n->out[0]->kind == VK_ACT)
        fuse_layernorm (l, n);
    }
  /* BatchNormalization right after a Conv becomes the Conv's bias, as
   * inference compilers fold it. */
  for (guint i = 0; i < l->nodes->len; i++)
    {
      Node *bn = g_ptr_array_index (l->nodes, i);
      Value *x;
      Node *conv;
      if (!is_op (bn, "BatchNormalization"))
        continue;
      x = bn->in[0];
      if (x->producer < 0 || sole_user (l, x) != bn)
        continue;
      conv = g_ptr_array_index (l->nodes, x->producer);
      if (!is_op (conv, "Conv") || conv->out[0] != x || conv->bn != NULL
          || x->kind != VK_ACT)
        continue;
      conv->bn = bn;
      bn->fuse = FUSE_SKIP;
    }
}

/* ------------------------------------------------------------------ */
/* Reading the model                                                   */

/* ------------------------------------------------------------------ */
/* Nesting check                                                       */

/* protobuf-c decodes nested messages recursively and has no depth limit,
 * and ONNX messages nest without bound (a node's attribute holds a graph
 * whose node holds an attribute ...; a TypeProto holds a sequence of a
 * TypeProto ...).  A few hundred kilobytes of nesting would overflow the
 * stack, so the wire format is walked first, without recursion into
 * anything but the message fields below, and a file nested deeper than
 * the max-nesting limit is refused before protobuf-c sees it. */

typedef enum
{
  PB_LEAF,
  PB_MODEL,
  PB_GRAPH,
  PB_NODE,
  PB_ATTRIBUTE,
  PB_TENSOR,
  PB_SPARSE_TENSOR,
  PB_VALUE_INFO,
  PB_TYPE,
  PB_TYPE_TENSOR,
  PB_TYPE_ELEM,  /* TypeProto.Sequence and .Optional: field 1 */
  PB_TYPE_MAP,
  PB_SHAPE,
  PB_FUNCTION,
  PB_TRAINING,
  PB_ANNOTATION,
  PB_ENTRY,
  PB_N_KINDS
} PbKind;

/* The message-typed fields of onnx.proto, by message. */
static const struct
{
  PbKind parent;
  guint field;
  PbKind child;
} pb_fields[] = {
  { PB_MODEL, 7, PB_GRAPH },          { PB_MODEL, 8, PB_ENTRY },
  { PB_MODEL, 14, PB_ENTRY },         { PB_MODEL, 20, PB_TRAINING },
  { PB_MODEL, 25, PB_FUNCTION },
  { PB_GRAPH, 1, PB_NODE },           { PB_GRAPH, 5, PB_TENSOR },
  { PB_GRAPH, 15, PB_SPARSE_TENSOR }, { PB_GRAPH, 11, PB_VALUE_INFO },
  { PB_GRAPH, 12, PB_VALUE_INFO },    { PB_GRAPH, 13, PB_VALUE_INFO },
  { PB_GRAPH, 14, PB_ANNOTATION },
  { PB_NODE, 5, PB_ATTRIBUTE },
  { PB_ATTRIBUTE, 5, PB_TENSOR },     { PB_ATTRIBUTE, 6, PB_GRAPH },
  { PB_ATTRIBUTE, 22, PB_SPARSE_TENSOR }, { PB_ATTRIBUTE, 14, PB_TYPE },
  { PB_ATTRIBUTE, 10, PB_TENSOR },    { PB_ATTRIBUTE, 11, PB_GRAPH },
  { PB_ATTRIBUTE, 23, PB_SPARSE_TENSOR }, { PB_ATTRIBUTE, 15, PB_TYPE },
  { PB_TENSOR, 3, PB_ENTRY },         { PB_TENSOR, 13, PB_ENTRY },
  { PB_SPARSE_TENSOR, 1, PB_TENSOR }, { PB_SPARSE_TENSOR, 2, PB_TENSOR },
  { PB_VALUE_INFO, 2, PB_TYPE },
  { PB_TYPE, 1, PB_TYPE_TENSOR },     { PB_TYPE, 4, PB_TYPE_ELEM },
  { PB_TYPE, 5, PB_TYPE_MAP },        { PB_TYPE, 9, PB_TYPE_ELEM },
  { PB_TYPE, 8, PB_TYPE_TENSOR },
  { PB_TYPE_TENSOR, 2, PB_SHAPE },
  { PB_TYPE_ELEM, 1, PB_TYPE },       { PB_TYPE_MAP, 2, PB_TYPE },
  { PB_SHAPE, 1, PB_ENTRY },
  { PB_FUNCTION, 7, PB_NODE },        { PB_FUNCTION, 9, PB_ENTRY },
  { PB_TRAINING, 1, PB_GRAPH },       { PB_TRAINING, 2, PB_GRAPH },
  { PB_TRAINING, 3, PB_ENTRY },       { PB_TRAINING, 4, PB_ENTRY },
  { PB_ANNOTATION, 2, PB_ENTRY },
};

static PbKind
pb_child (PbKind parent, guint64 field)
{
  for (guint i = 0; i < G_N_ELEMENTS (pb_fields); i++)
    if (pb_fields[i].parent == parent && pb_fields[i].field == field)
      return pb_fields[i].child;
  return PB_LEAF;
}

static gboolean
pb_varint (const guint8 *p, gsize len, gsize *pos, guint64 *out)
{
  guint64 v = 0;
  for (guint shift = 0; shift < 64 && *pos < len; shift += 7)
    {
      guint8 b = p[(*pos)++];
      v |= (guint64) (b & 0x7f) << shift;
      if ((b & 0x80) == 0)
        {
          *out = v;
          return TRUE;
        }
    }
  return FALSE;
}

typedef enum
{
  PB_OK,
  PB_CORRUPT,
  PB_TOO_DEEP,
} PbScan;

/* Walks one message of @kind at nesting @depth (the model is 1).  The
 * recursion is bounded by @max: it stops at the first message deeper than
 * that. */
static PbScan
pb_scan (const guint8 *p, gsize len, PbKind kind, guint depth, guint max)
{
  gsize pos = 0;

  if (depth > max)
    return PB_TOO_DEEP;
  while (pos < len)
    {
      guint64 tag, n;
      PbKind child;
      PbScan r;

      if (!pb_varint (p, len, &pos, &tag) || (tag >> 3) == 0)
        return PB_CORRUPT;
      switch (tag & 7)
        {
        case 0:
          if (!pb_varint (p, len, &pos, &n))
            return PB_CORRUPT;
          break;
        case 1:
          if (len - pos < 8)
            return PB_CORRUPT;
          pos += 8;
          break;
        case 5:
          if (len - pos < 4)
            return PB_CORRUPT;
          pos += 4;
          break;
        case 2:
          if (!pb_varint (p, len, &pos, &n) || n > len - pos)
            return PB_CORRUPT;
          child = pb_child (kind, tag >> 3);
          if (child != PB_LEAF && child != PB_ENTRY)
            {
              r = pb_scan (p + pos, (gsize) n, child, depth + 1, max);
              if (r != PB_OK)
                return r;
            }
          else if (child == PB_ENTRY && depth + 1 > max)
            return PB_TOO_DEEP;
          pos += (gsize) n;
          break;
        default:
          /* Groups (3, 4) are not supported by protobuf-c either. */
          return PB_CORRUPT;
        }
    }
  return PB_OK;
}

static gboolean
check_nesting (Loader *l, const guint8 *data, gsize len, GError **error)
{
  switch (pb_scan (data, len, PB_MODEL, 1, l->opts.max_nesting))
    {
    case PB_OK:
      return TRUE;
    case PB_TOO_DEEP:
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_LIMIT,
                   "%s: the model's messages (graphs, nodes, attributes, "
                   "subgraphs, types) are nested more than %u levels deep, "
                   "the max-nesting limit; raise the onnx frontend's "
                   "'max-nesting' parameter to read it", l->path,
                   l->opts.max_nesting);
      return FALSE;
    default:
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: not a valid ONNX model: the protobuf data is "
                   "truncated or corrupted", l->path);
      return FALSE;
    }
}

/* ------------------------------------------------------------------ */

void
elk__onnx_options_init (ElkOnnxOptions *options)
{
  memset (options, 0, sizeof *options);
  options->max_file_size = ELK_ONNX_DEFAULT_MAX_FILE_SIZE;
  options->max_tensor_elements = ELK_ONNX_DEFAULT_MAX_TENSOR_ELEMENTS;
  options->max_nesting = ELK_ONNX_DEFAULT_MAX_NESTING;
  options->max_nodes = ELK_ONNX_DEFAULT_MAX_NODES;
}

static void
node_free (gpointer data)
{
  Node *n = data;
  g_free (n->name);
  g_free (n->in);
  g_free (n->out);
  g_free (n);
}

static void
loader_clear (Loader *l)
{
  if (l->model != NULL)
    onnx__model_proto__free_unpacked (l->model, NULL);
  g_clear_pointer (&l->file, g_mapped_file_unref);
  g_clear_pointer (&l->nodes, g_ptr_array_unref);
  g_clear_pointer (&l->values, g_hash_table_unref);
  g_clear_pointer (&l->value_list, g_ptr_array_unref);
  g_clear_pointer (&l->bindings, g_hash_table_unref);
  g_clear_pointer (&l->used_bindings, g_hash_table_unref);
  g_clear_pointer (&l->input_is_data, g_array_unref);
  g_clear_pointer (&l->input_forced, g_array_unref);
  g_clear_pointer (&l->layer_keys, g_hash_table_unref);
  g_clear_pointer (&l->graph, elk_graph_unref);
  g_free (l->dir);
}

static gboolean
parse_dims (Loader *l, GError **error)
{
  g_auto (GStrv) items = NULL;

  if (l->opts.dims == NULL || *l->opts.dims == '\0')
    return TRUE;
  items = g_strsplit (l->opts.dims, ",", -1);
  for (guint i = 0; items[i] != NULL; i++)
    {
      char *item = g_strstrip (items[i]);
      char *eq = strrchr (item, '=');
      guint64 value;
      gint64 *stored;

      if (*item == '\0')
        continue;
      if (eq == NULL || eq == item
          || !g_ascii_string_to_unsigned (g_strstrip (eq + 1), 10, 1,
                                          G_MAXINT32, &value, NULL))
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: bad dimension binding '%s' in dims (expected "
                       "name=positive integer, as in \"batch=32,"
                       "sequence=128\")", l->path, item);
          return FALSE;
        }
      *eq = '\0';
      g_strstrip (item);
      if (g_hash_table_contains (l->bindings, item))
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: dimension '%s' is bound twice in dims", l->path,
                       item);
          return FALSE;
        }
      stored = g_new (gint64, 1);
      *stored = (gint64) value;
      g_hash_table_insert (l->bindings, g_strdup (item), stored);
    }
  return TRUE;
}

static gboolean
is_initializer (const Onnx__GraphProto *g, const char *name)
{
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name != NULL
        && strcmp (g->initializer[i]->name, name) == 0)
      return TRUE;
  return FALSE;
}

static int
compare_strings (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static gboolean
load_inputs (Loader *l, GError **error)
{
  const Onnx__GraphProto *g = l->model->graph;
  g_autoptr (GPtrArray) unbound = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GHashTable) symbols = g_hash_table_new_full (g_str_hash,
                                                          g_str_equal,
                                                          g_free, NULL);
  g_auto (GStrv) forced = NULL;

  if (l->opts.inputs != NULL && *l->opts.inputs != '\0')
    {
      forced = g_strsplit (l->opts.inputs, ",", -1);
      for (guint i = 0; forced[i] != NULL; i++)
        {
          gboolean found = FALSE;
          g_strstrip (forced[i]);
          for (size_t k = 0; k < g->n_input; k++)
            found |= g->input[k]->name != NULL
                     && strcmp (g->input[k]->name, forced[i]) == 0;
          if (!found)
            {
              g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                           "%s: inputs names '%s', which is not a graph "
                           "input", l->path, forced[i]);
              return FALSE;
            }
        }
    }

  g_array_set_size (l->input_is_data, g->n_input);
  g_array_set_size (l->input_forced, g->n_input);
  for (size_t i = 0; i < g->n_input; i++)
    {
      const Onnx__ValueInfoProto *vi = g->input[i];
      const Onnx__TypeProto__Tensor *tt;
      gint64 dims[MAX_RANK];
      Value *v;

      if (vi->name == NULL || *vi->name == '\0')
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: graph input %zu has no name", l->path, i);
          return FALSE;
        }
      /* IR version 3 files list initializers among the inputs too. */
      if (is_initializer (g, vi->name))
        continue;
      if (lookup_value (l, vi->name) != NULL)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: graph input '%s' is listed twice", l->path,
                       vi->name);
          return FALSE;
        }
      if (vi->type == NULL
          || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                       "%s: graph input '%s' is not a tensor (sequences, maps "
                       "and optionals are not supported)", l->path,
                       vi->name);
          return FALSE;
        }
      tt = vi->type->tensor_type;
      if (!tt->has_elem_type || !dtype_is_known (tt->elem_type)
          || dtype_size (tt->elem_type) == 0)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                       "%s: graph input '%s' has data type %s (%d), which "
                       "elk cannot size", l->path, vi->name,
                       dtype_name (tt->elem_type), tt->elem_type);
          return FALSE;
        }
      if (tt->shape == NULL)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                       "%s: graph input '%s' has no shape; elk compiles "
                       "static shapes only", l->path, vi->name);
          return FALSE;
        }
      if (tt->shape->n_dim > MAX_RANK)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                       "%s: graph input '%s' has rank %zu", l->path,
                       vi->name, tt->shape->n_dim);
          return FALSE;
        }
      for (size_t d = 0; d < tt->shape->n_dim; d++)
        {
          const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
          g_autofree char *symbol = NULL;
          gint64 *bound;

          if (dim->value_case
              == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            {
              dims[d] = dim->dim_value;
              continue;
            }
          if (dim->value_case
                == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
              && dim->dim_param != NULL && *dim->dim_param != '\0')
            symbol = g_strdup (dim->dim_param);
          else
            /* An anonymous dimension is named after its place. */
            symbol = g_strdup_printf ("%s:%zu", vi->name, d);
          g_hash_table_add (symbols, g_strdup (symbol));
          bound = g_hash_table_lookup (l->bindings, symbol);
          if (bound == NULL)
            {
              gboolean seen = FALSE;
              for (guint k = 0; k < unbound->len; k++)
                seen |= strcmp (g_ptr_array_index (unbound, k), symbol) == 0;
              if (!seen)
                g_ptr_array_add (unbound, g_steal_pointer (&symbol));
              dims[d] = 1;
              continue;
            }
          g_hash_table_add (l->used_bindings, g_strdup (symbol));
          dims[d] = *bound;
        }
      v = new_value (l, vi->name);
      if (!value_set_shape (l, v, tt->elem_type, (guint) tt->shape->n_dim,
                            dims, error))
        return FALSE;
      v->kind = VK_INPUT;
      v->root = (gint) i;
      if (forced != NULL)
        {
          g_array_index (l->input_forced, gboolean, i) = TRUE;
          g_array_index (l->input_is_data, gboolean, i)
            = g_strv_contains ((const char *const *) forced, vi->name);
        }
    }

  if (unbound->len > 0)
    {
      GString *names = g_string_new (NULL);
      GString *example = g_string_new (NULL);
      for (guint k = 0; k < unbound->len; k++)
        {
          const char *s = g_ptr_array_index (unbound, k);
          g_string_append_printf (names, "%s'%s'", k ? ", " : "", s);
          g_string_append_printf (example, "%s%s=1", k ? "," : "", s);
        }
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: symbolic dimension%s %s %s not bound; give %s with "
                   "the 'dims' parameter, e.g. dims=\"%s\"", l->path,
                   unbound->len > 1 ? "s" : "", names->str,
                   unbound->len > 1 ? "are" : "is",
                   unbound->len > 1 ? "them" : "it", example->str);
      g_string_free (names, TRUE);
      g_string_free (example, TRUE);
      return FALSE;
    }
  {
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init (&it, l->bindings);
    while (g_hash_table_iter_next (&it, &key, NULL))
      if (!g_hash_table_contains (l->used_bindings, key))
        {
          g_autofree gpointer *known = g_hash_table_get_keys_as_array (
            symbols, NULL);
          g_autofree char *list = NULL;
          qsort (known, g_hash_table_size (symbols), sizeof (gpointer),
                 compare_strings);
          list = g_strjoinv (", ", (char **) known);
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: dims binds '%s', which is not a symbolic "
                       "dimension of any graph input (the model's symbolic "
                       "dimensions: %s)", l->path, (const char *) key,
                       *list ? list : "none");
          return FALSE;
        }
  }
  return TRUE;
}

static gboolean
load_initializers (Loader *l, GError **error)
{
  const Onnx__GraphProto *g = l->model->graph;

  if (g->n_sparse_initializer > 0)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: sparse initializers are not supported", l->path);
      return FALSE;
    }
  for (size_t i = 0; i < g->n_initializer; i++)
    {
      const Onnx__TensorProto *tp = g->initializer[i];
      g_autofree char *what = NULL;
      Value *v;

      if (tp->name == NULL || *tp->name == '\0')
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: initializer %zu has no name", l->path, i);
          return FALSE;
        }
      if (lookup_value (l, tp->name) != NULL)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: initializer '%s' is defined twice", l->path,
                       tp->name);
          return FALSE;
        }
      v = new_value (l, tp->name);
      what = g_strdup_printf ("initializer '%s'", tp->name);
      if (!value_from_tensor (l, v, tp, what, error))
        return FALSE;
      v->kind = VK_PARAM;
      l->n_params += v->n_elements;
    }
  return TRUE;
}

/* Creates the nodes in topological order.  ONNX requires files to be
 * sorted already; sorting again costs little and turns a cycle into an
 * error that names a node on it. */
static gboolean
load_nodes (Loader *l, GError **error)
{
  const Onnx__GraphProto *g = l->model->graph;
  gsize n_nodes = g->n_node;
  g_autofree guint *pending = g_new0 (guint, MAX (n_nodes, 1));
  g_autofree gboolean *done = g_new0 (gboolean, MAX (n_nodes, 1));
  g_autoptr (GHashTable) producer = g_hash_table_new (g_str_hash,
                                                      g_str_equal);
  g_autoptr (GHashTable) names = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GArray) queue = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autofree GPtrArray **users = g_new0 (GPtrArray *, MAX (n_nodes, 1));
  gboolean ok = TRUE;

  /* Outputs first, so that every input can be resolved. */
  for (gsize i = 0; i < n_nodes && ok; i++)
    {
      const Onnx__NodeProto *p = g->node[i];
      if (p->op_type == NULL || *p->op_type == '\0')
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: node %zu ('%s') has no op_type", l->path, i,
                       p->name != NULL ? p->name : "");
          return FALSE;
        }
      for (size_t k = 0; k < p->n_output; k++)
        {
          const char *o = p->output[k];
          if (o == NULL || *o == '\0')
            continue;
          if (lookup_value (l, o) != NULL)
            {
              g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                           "%s: node '%s' (op %s) writes '%s', which is "
                           "already defined by another node, an initializer "
                           "or a graph input", l->path,
                           p->name != NULL ? p->name : "", p->op_type, o);
              return FALSE;
            }
          new_value (l, o);
          g_hash_table_insert (producer, (gpointer) o, GUINT_TO_POINTER (i));
        }
    }
  for (gsize i = 0; i < n_nodes; i++)
    {
      const Onnx__NodeProto *p = g->node[i];
      for (size_t k = 0; k < p->n_input; k++)
        {
          const char *in = p->input[k];
          gpointer prod;
          if (in == NULL || *in == '\0')
            continue;
          if (lookup_value (l, in) == NULL)
            {
              g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                           "%s: node '%s' (op %s) reads '%s', which no node, "
                           "initializer or graph input defines", l->path,
                           p->name != NULL ? p->name : "", p->op_type, in);
              return FALSE;
            }
          if (g_hash_table_lookup_extended (l->values, in, NULL, NULL)
              && g_hash_table_lookup_extended (producer, in, NULL, &prod))
            {
              guint src = GPOINTER_TO_UINT (prod);
              pending[i]++;
              if (users[src] == NULL)
                users[src] = g_ptr_array_new ();
              g_ptr_array_add (users[src], GUINT_TO_POINTER (i));
            }
        }
    }
  for (gsize i = 0; i < n_nodes; i++)
    if (pending[i] == 0)
      g_array_append_val (queue, i);
  for (guint q = 0; q < queue->len; q++)
    {
      guint i = g_array_index (queue, guint, q);
      const Onnx__NodeProto *p = g->node[i];
      Node *n = g_new0 (Node, 1);

      done[i] = TRUE;
      n->p = p;
      n->index = i;
      n->layer = -1;
      if (p->name != NULL && *p->name != '\0'
          && !g_hash_table_contains (names, p->name))
        n->name = g_strdup (p->name);
      else
        n->name = g_strdup_printf ("%s_%u", p->op_type, i);
      g_hash_table_add (names, n->name);
      n->n_in = (guint) p->n_input;
      n->in = g_new0 (Value *, MAX (n->n_in, 1));
      for (guint k = 0; k < n->n_in; k++)
        if (p->input[k] != NULL && *p->input[k] != '\0')
          {
            n->in[k] = lookup_value (l, p->input[k]);
            n->in[k]->n_uses++;
          }
      n->n_out = (guint) p->n_output;
      n->out = g_new0 (Value *, MAX (n->n_out, 1));
      for (guint k = 0; k < n->n_out; k++)
        if (p->output[k] != NULL && *p->output[k] != '\0')
          {
            n->out[k] = lookup_value (l, p->output[k]);
            n->out[k]->producer = (gint) l->nodes->len;
          }
      g_ptr_array_add (l->nodes, n);
      if (users[i] != NULL)
        for (guint u = 0; u < users[i]->len; u++)
          {
            guint j = GPOINTER_TO_UINT (g_ptr_array_index (users[i], u));
            if (--pending[j] == 0)
              g_array_append_val (queue, j);
          }
    }
  for (gsize i = 0; i < n_nodes && ok; i++)
    if (!done[i])
      {
        const Onnx__NodeProto *p = g->node[i];
        g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                     "%s: node '%s' (op %s) is part of a cycle, or depends "
                     "on one: its inputs can never all be computed", l->path,
                     p->name != NULL ? p->name : "", p->op_type);
        ok = FALSE;
      }
  for (gsize i = 0; i < n_nodes; i++)
    if (users[i] != NULL)
      g_ptr_array_unref (users[i]);
  return ok;
}

static gboolean
check_outputs (Loader *l, gboolean compare, GError **error)
{
  const Onnx__GraphProto *g = l->model->graph;

  for (size_t i = 0; i < g->n_output; i++)
    {
      const Onnx__ValueInfoProto *vi = g->output[i];
      Value *v = vi->name != NULL ? lookup_value (l, vi->name) : NULL;
      const Onnx__TensorShapeProto *sh;

      if (v == NULL)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: graph output '%s' is not computed by any node",
                       l->path, vi->name != NULL ? vi->name : "");
          return FALSE;
        }
      if (!compare)
        {
          v->is_graph_output = TRUE;
          v->n_uses++;
          continue;
        }
      if (v->dtype == DT_UNDEFINED || vi->type == NULL
          || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
          || (sh = vi->type->tensor_type->shape) == NULL)
        continue;
      /* The file's own shape is a cross-check of shape inference: a
       * disagreement means elk would compile the wrong model. */
      if (sh->n_dim != v->rank)
        goto mismatch;
      for (size_t d = 0; d < sh->n_dim; d++)
        {
          const Onnx__TensorShapeProto__Dimension *dim = sh->dim[d];
          gint64 *bound = NULL;
          if (dim->value_case
              == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            {
              if (dim->dim_value != v->dims[d])
                goto mismatch;
            }
          else if (dim->value_case
                     == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                   && dim->dim_param != NULL
                   && (bound = g_hash_table_lookup (l->bindings,
                                                    dim->dim_param))
                          != NULL
                   && *bound != v->dims[d])
            goto mismatch;
        }
      continue;
    mismatch:
      {
        g_autofree char *got = shape_to_string (v->rank, v->dims);
        g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                     "%s: graph output '%s' has shape %s by shape inference, "
                     "but the file declares a different shape (rank %zu)",
                     l->path, v->name, got, sh->n_dim);
        return FALSE;
      }
    }
  return TRUE;
}

/* Names end up in error messages and result files, which are UTF-8. */
static gboolean
check_utf8 (Loader *l, const char *what, size_t index, const char *s,
            GError **error)
{
  if (s == NULL || g_utf8_validate (s, -1, NULL))
    return TRUE;
  g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
               "%s: %s %zu has a name or type that is not valid UTF-8",
               l->path, what, index);
  return FALSE;
}

static gboolean
check_names (Loader *l, GError **error)
{
  const Onnx__GraphProto *g = l->model->graph;

  for (size_t i = 0; i < g->n_node; i++)
    {
      const Onnx__NodeProto *p = g->node[i];
      if (!check_utf8 (l, "node", i, p->name, error)
          || !check_utf8 (l, "node", i, p->op_type, error)
          || !check_utf8 (l, "node", i, p->domain, error))
        return FALSE;
      for (size_t k = 0; k < p->n_input; k++)
        if (!check_utf8 (l, "node", i, p->input[k], error))
          return FALSE;
      for (size_t k = 0; k < p->n_output; k++)
        if (!check_utf8 (l, "node", i, p->output[k], error))
          return FALSE;
      for (size_t k = 0; k < p->n_attribute; k++)
        if (!check_utf8 (l, "node", i, p->attribute[k]->name, error))
          return FALSE;
    }
  for (size_t i = 0; i < g->n_initializer; i++)
    if (!check_utf8 (l, "initializer", i, g->initializer[i]->name, error))
      return FALSE;
  for (size_t i = 0; i < g->n_input; i++)
    if (!check_utf8 (l, "graph input", i, g->input[i]->name, error))
      return FALSE;
  for (size_t i = 0; i < g->n_output; i++)
    if (!check_utf8 (l, "graph output", i, g->output[i]->name, error))
      return FALSE;
  return TRUE;
}

static gboolean
check_model (Loader *l, GError **error)
{
  const Onnx__ModelProto *m = l->model;
  gboolean have_opset = FALSE;

  if (m->graph == NULL)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: the model has no graph", l->path);
      return FALSE;
    }
  if (!check_names (l, error))
    return FALSE;
  if (m->graph->n_node > l->opts.max_nodes)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_LIMIT,
                   "%s: the graph has %zu nodes, more than the max-nodes "
                   "limit of %" G_GUINT64_FORMAT "; raise the onnx "
                   "frontend's 'max-nodes' parameter to read it", l->path,
                   m->graph->n_node, l->opts.max_nodes);
      return FALSE;
    }
  if (m->has_ir_version && (m->ir_version < 3 || m->ir_version > 10))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: ONNX IR version %" G_GINT64_FORMAT " is not "
                   "supported (3 to 10 are)", l->path, m->ir_version);
      return FALSE;
    }
  for (size_t i = 0; i < m->n_opset_import; i++)
    {
      const Onnx__OperatorSetIdProto *o = m->opset_import[i];
      const char *d = o->domain != NULL ? o->domain : "";
      if (*d != '\0' && strcmp (d, "ai.onnx") != 0)
        continue;
      have_opset = TRUE;
      l->opset = o->has_version ? o->version : 1;
    }
  if (!have_opset)
    {
      GString *domains = g_string_new (NULL);
      for (size_t i = 0; i < m->n_opset_import; i++)
        g_string_append_printf (domains, "%s%s", i ? ", " : "",
                                m->opset_import[i]->domain != NULL
                                  ? m->opset_import[i]->domain
                                  : "");
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: the model imports no opset of the default domain "
                   "ai.onnx (only: %s), and elk reads that domain only",
                   l->path, domains->len ? domains->str : "none");
      g_string_free (domains, TRUE);
      return FALSE;
    }
  if (l->opset < 1 || l->opset > ELK_ONNX_MAX_OPSET)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: opset %" G_GINT64_FORMAT " of domain ai.onnx is not "
                   "supported (elk implements opsets 1 to %d)", l->path,
                   l->opset, ELK_ONNX_MAX_OPSET);
      return FALSE;
    }
  return TRUE;
}

static gboolean
infer_all (Loader *l, GError **error)
{
  for (guint i = 0; i < l->nodes->len; i++)
    {
      Node *n = g_ptr_array_index (l->nodes, i);
      const char *d = n->p->domain;

      if (d != NULL && *d != '\0' && strcmp (d, "ai.onnx") != 0)
        return node_unsupported (l, n, error, "elk reads the default "
                                 "ai.onnx domain only");
      n->info = find_op (n->p->op_type);
      if (n->info == NULL)
        return node_unsupported (l, n, error, NULL);
      for (guint k = 0; k < n->n_in; k++)
        if (n->in[k] != NULL && n->in[k]->dtype == DT_UNDEFINED)
          return node_error (l, n, error, "input '%s' has no known type or "
                             "shape (its producer does not define it)",
                             n->in[k]->name);
      if (!n->info->infer (l, n, error))
        return FALSE;
      for (guint k = 0; k < n->n_out; k++)
        if (n->out[k] != NULL && n->out[k]->dtype == DT_UNDEFINED
            && n->out[k]->n_uses > 0)
          return node_unsupported (l, n, error, "this output is not "
                                   "implemented");
    }
  return TRUE;
}

/* Graph inputs that turned out to be weights count as parameters, as
 * initializers and Constant nodes do. */
static void
count_weight_inputs (Loader *l)
{
  const Onnx__GraphProto *g = l->model->graph;
  for (size_t i = 0; i < g->n_input; i++)
    {
      Value *v = lookup_value (l, g->input[i]->name);
      if (v != NULL && v->kind == VK_INPUT && v->root == (gint) i
          && !g_array_index (l->input_is_data, gboolean, i))
        l->n_params += v->n_elements;
    }
}

static gboolean
lower_all (Loader *l, GError **error)
{
  for (guint i = 0; i < l->nodes->len; i++)
    {
      Node *n = g_ptr_array_index (l->nodes, i);
      Value *out = n->out[0];

      n->layer = layer_of (l, n->p->name);
      if (n->fuse == FUSE_SKIP)
        continue;
      if (n->fuse == FUSE_LAYERNORM)
        {
          if (!emit_layernorm (l, n, n->ln_x, n->ln_scale, n->ln_bias,
                               out, error))
            return FALSE;
          continue;
        }
      if (n->info->lower == NULL || n->view || out == NULL
          || out->kind != VK_ACT)
        continue;
      if (!n->info->lower (l, n, error))
        return FALSE;
    }
  return TRUE;
}

static void
set_attributes (Loader *l)
{
  const Onnx__GraphProto *g = l->model->graph;
  char buf[64];
  GHashTableIter it;
  gpointer key, value;
  gboolean have_seq = FALSE;

  elk_graph_set_attribute (l->graph, "frontend", "onnx");
  elk_graph_set_attribute (l->graph, "phase", "forward");
  g_snprintf (buf, sizeof buf, "%" G_GUINT64_FORMAT, l->n_params);
  elk_graph_set_attribute (l->graph, "params", buf);
  g_snprintf (buf, sizeof buf, "%u", l->n_layers);
  elk_graph_set_attribute (l->graph, "layers", buf);
  g_snprintf (buf, sizeof buf, "%" G_GINT64_FORMAT, l->opset);
  elk_graph_set_attribute (l->graph, "opset", buf);

  g_hash_table_iter_init (&it, l->bindings);
  while (g_hash_table_iter_next (&it, &key, &value))
    {
      g_autofree char *lower = g_ascii_strdown (key, -1);
      g_snprintf (buf, sizeof buf, "%" G_GINT64_FORMAT, *(gint64 *) value);
      if (strstr (lower, "batch") != NULL)
        elk_graph_set_attribute (l->graph, "batch", buf);
      if (strstr (lower, "seq") != NULL)
        {
          elk_graph_set_attribute (l->graph, "seq", buf);
          have_seq = TRUE;
        }
    }
  /* Otherwise: the leading axis of the first model input is the batch,
   * and a token-id input [batch, seq] also gives the sequence length. */
  for (size_t i = 0; i < g->n_input; i++)
    {
      Value *v = lookup_value (l, g->input[i]->name);
      if (v == NULL || v->kind != VK_INPUT
          || !g_array_index (l->input_is_data, gboolean, i) || v->rank == 0)
        continue;
      if (elk_graph_get_attribute (l->graph, "batch") == NULL)
        {
          g_snprintf (buf, sizeof buf, "%" G_GINT64_FORMAT, v->dims[0]);
          elk_graph_set_attribute (l->graph, "batch", buf);
        }
      if (!have_seq && v->rank == 2 && is_int_dtype (v->dtype))
        {
          g_snprintf (buf, sizeof buf, "%" G_GINT64_FORMAT, v->dims[1]);
          elk_graph_set_attribute (l->graph, "seq", buf);
        }
      break;
    }
}

/**
 * elk__onnx_load:
 * @path: the .onnx file
 * @options: (nullable): loader options; %NULL for the defaults
 * @error: return location for a #GError
 *
 * Returns: (transfer full) (nullable): the graph, or %NULL with @error set.
 */
ElkGraph *
elk__onnx_load (const char *path, const ElkOnnxOptions *options,
                GError **error)
{
  Loader l = { 0 };
  g_autoptr (GError) local_error = NULL;
  g_autofree char *base = NULL;
  gsize len;
  ElkGraph *result = NULL;

  g_return_val_if_fail (path != NULL, NULL);

  if (options != NULL)
    l.opts = *options;
  else
    elk__onnx_options_init (&l.opts);
  l.path = path;
  l.dir = g_path_get_dirname (path);
  l.values = g_hash_table_new (g_str_hash, g_str_equal);
  l.value_list = g_ptr_array_new_with_free_func (value_free);
  l.nodes = g_ptr_array_new_with_free_func (node_free);
  l.bindings = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                      g_free);
  l.used_bindings = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                           NULL);
  l.input_is_data = g_array_new (FALSE, TRUE, sizeof (gboolean));
  l.input_forced = g_array_new (FALSE, TRUE, sizeof (gboolean));
  l.layer_keys = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                        NULL);

  if (l.opts.dtype != NULL && *l.opts.dtype != '\0'
      && strcmp (l.opts.dtype, "file") != 0)
    {
      l.dtype_override = TRUE;
      if (strcmp (l.opts.dtype, "f32") == 0
          || strcmp (l.opts.dtype, "fp32") == 0)
        l.float_dtype = ELK_DTYPE_F32;
      else if (strcmp (l.opts.dtype, "f16") == 0
               || strcmp (l.opts.dtype, "fp16") == 0)
        l.float_dtype = ELK_DTYPE_F16;
      else if (strcmp (l.opts.dtype, "bf16") == 0)
        l.float_dtype = ELK_DTYPE_BF16;
      else
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: unknown dtype '%s' (expected file, fp32, fp16 "
                       "or bf16)", path, l.opts.dtype);
          goto out;
        }
    }

  l.file = g_mapped_file_new (path, FALSE, &local_error);
  if (l.file == NULL)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: cannot read the model: %s", path,
                   local_error->message);
      goto out;
    }
  len = g_mapped_file_get_length (l.file);
  if (len == 0 || len > l.opts.max_file_size)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_LIMIT,
                   "%s: the file has %zu bytes; a model must have between 1 "
                   "and %" G_GUINT64_FORMAT " (the max-file-size limit; "
                   "raise the onnx frontend's 'max-file-size' parameter "
                   "for a larger file)", path, len, l.opts.max_file_size);
      goto out;
    }
  if (!check_nesting (&l, (const guint8 *) g_mapped_file_get_contents (l.file),
                      len, error))
    goto out;
  l.model = onnx__model_proto__unpack (
    NULL, len, (const uint8_t *) g_mapped_file_get_contents (l.file));
  if (l.model == NULL)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: not a valid ONNX model: the protobuf data is "
                   "truncated or corrupted", path);
      goto out;
    }

  base = g_path_get_basename (path);
  if (g_str_has_suffix (base, ".onnx"))
    base[strlen (base) - 5] = '\0';
  l.graph = elk_graph_new (l.opts.name != NULL && *l.opts.name != '\0'
                             ? l.opts.name
                             : base);
  elk_graph_set_attribute (l.graph, "model", elk_graph_get_name (l.graph));

  if (!check_model (&l, error) || !parse_dims (&l, error)
      || !load_initializers (&l, error) || !load_inputs (&l, error)
      || !load_nodes (&l, error) || !check_outputs (&l, FALSE, error)
      || !infer_all (&l, error) || !check_outputs (&l, TRUE, error))
    goto out;
  count_weight_inputs (&l);
  fuse_patterns (&l);
  if (!lower_all (&l, error))
    goto out;
  if (elk_graph_get_n_ops (l.graph) == 0)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: the graph has no operator that computes anything "
                   "(its %u nodes are layout or constant operators, which "
                   "elk folds away), so there is nothing to compile", path,
                   l.nodes->len);
      goto out;
    }
  set_attributes (&l);
  result = g_steal_pointer (&l.graph);

out:
  loader_clear (&l);
  return result;
}
