/* elk-onnx-values.c: errors, element types, attributes, values and
 * constant folding, shared by every pass of the onnx loader.
 *
 * A Value is one named tensor of the ONNX graph.  Small constant values
 * (shape arithmetic, masks; up to FOLD_LIMIT elements) carry their data as
 * doubles, decoded from the file on demand, so that shape inference can
 * evaluate the sub-graphs exporters compute shapes with.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "elk-onnx-private.h"

const char *
elk__onnx_node_label (const Node *n)
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
gboolean
elk__onnx_node_error (
    Loader *l, const Node *n, GError **error, const char *format, ...)
{
  va_list args;
  g_autofree char *msg = NULL;

  va_start (args, format);
  msg = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
               "%s: node '%s' (op %s): %s", l->path, elk__onnx_node_label (n),
               n->p->op_type, msg);
  return FALSE;
}

gboolean
elk__onnx_node_unsupported (Loader *l,
                            const Node *n,
                            GError **error,
                            const char *why)
{
  g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
               "%s: node '%s' (op %s, domain %s, opset %" G_GINT64_FORMAT
               ") is not supported%s%s",
               l->path, elk__onnx_node_label (n), n->p->op_type,
               node_domain (n), l->opset, why != NULL ? ": " : "",
               why != NULL ? why : "");
  return FALSE;
}

char *
elk__onnx_shape_to_string (guint rank, const gint64 *dims)
{
  GString *s = g_string_new ("[");
  for (guint i = 0; i < rank; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? ", " : "", dims[i]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

const char *
elk__onnx_dtype_name (int dt)
{
  static const char *const names[]
      = { "UNDEFINED",     "FLOAT",        "UINT8",          "INT8",
          "UINT16",        "INT16",        "INT32",          "INT64",
          "STRING",        "BOOL",         "FLOAT16",        "DOUBLE",
          "UINT32",        "UINT64",       "COMPLEX64",      "COMPLEX128",
          "BFLOAT16",      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
          "FLOAT8E5M2FNUZ" };
  return (dt >= 0 && dt <= DT_LAST) ? names[dt] : "unknown";
}

/* Bytes per element, or 0 for types elk cannot size (strings,
 * undefined). */
guint
elk__onnx_dtype_size (int dt)
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

gboolean
elk__onnx_dtype_is_float (int dt)
{
  return dt == DT_FLOAT || dt == DT_FLOAT16 || dt == DT_BFLOAT16
         || dt == DT_DOUBLE;
}

static gboolean
dt_complex_or_string (int dt)
{
  return dt == DT_COMPLEX64 || dt == DT_COMPLEX128 || dt == DT_STRING;
}

gboolean
elk__onnx_dtype_is_known (int dt)
{
  return dt > DT_UNDEFINED && dt <= DT_LAST;
}

/* ElkGraph has no 16-bit integer type; those tensors are given the 2-byte
 * f16 slot so that their byte sizes stay right (docs/frontend-onnx.md). */
gboolean
elk__onnx_dtype_to_elk (Loader *l, int dt, ElkDType *out)
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
      *out = ELK_DTYPE_U8;
      break;
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
  if (l->dtype_override && elk__onnx_dtype_is_float (dt))
    *out = l->float_dtype;
  return TRUE;
}

/* Converts a double to an integer without undefined behaviour: NaN becomes
 * 0 and out-of-range values saturate, which is what Slice's "INT64_MAX
 * means to the end" convention needs. */
gint64
elk__onnx_to_i64 (double v)
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

const Onnx__AttributeProto *
elk__onnx_find_attr (const Node *n, const char *name)
{
  for (size_t i = 0; i < n->p->n_attribute; i++)
    if (n->p->attribute[i]->name != NULL
        && strcmp (n->p->attribute[i]->name, name) == 0)
      return n->p->attribute[i];
  return NULL;
}

gboolean
elk__onnx_attr_int (Loader *l,
                    const Node *n,
                    const char *name,
                    gint64 def,
                    gint64 *out,
                    GError **error)
{
  const Onnx__AttributeProto *a = elk__onnx_find_attr (n, name);
  if (a == NULL)
    {
      *out = def;
      return TRUE;
    }
  if (!a->has_i)
    return elk__onnx_node_error (l, n, error,
                                 "attribute '%s' must be an integer", name);
  *out = a->i;
  return TRUE;
}

gboolean
elk__onnx_attr_float (Loader *l,
                      const Node *n,
                      const char *name,
                      double def,
                      double *out,
                      GError **error)
{
  const Onnx__AttributeProto *a = elk__onnx_find_attr (n, name);
  if (a == NULL)
    {
      *out = def;
      return TRUE;
    }
  if (!a->has_f)
    return elk__onnx_node_error (l, n, error, "attribute '%s' must be a float",
                                 name);
  *out = a->f;
  return TRUE;
}

/* Returns the attribute's integer list, or NULL (with *n_out 0) if absent. */
const int64_t *
elk__onnx_attr_ints (const Node *n, const char *name, gsize *n_out)
{
  const Onnx__AttributeProto *a = elk__onnx_find_attr (n, name);
  if (a == NULL || a->n_ints == 0)
    {
      *n_out = 0;
      return NULL;
    }
  *n_out = a->n_ints;
  return a->ints;
}

char *
elk__onnx_attr_string (const Node *n, const char *name, const char *def)
{
  const Onnx__AttributeProto *a = elk__onnx_find_attr (n, name);
  if (a == NULL || !a->has_s)
    return g_strdup (def);
  return g_strndup ((const char *) a->s.data, a->s.len);
}

void
elk__onnx_value_free (gpointer data)
{
  Value *v = data;
  g_free (v->name);
  g_free (v->data);
  g_free (v);
}

Value *
elk__onnx_lookup_value (Loader *l, const char *name)
{
  return g_hash_table_lookup (l->values, name);
}

Value *
elk__onnx_new_value (Loader *l, const char *name)
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
gboolean
elk__onnx_value_set_shape (Loader *l,
                           Value *v,
                           int dtype,
                           guint rank,
                           const gint64 *dims,
                           GError **error)
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
                       "%s: tensor '%s' has a negative dimension "
                       "%" G_GINT64_FORMAT " in axis %u",
                       l->path, v->name, dims[i], i);
          return FALSE;
        }
      if (!g_uint64_checked_mul (&n, n, (guint64) dims[i])
          || n > l->opts.max_tensor_elements)
        {
          g_autofree char *shape = elk__onnx_shape_to_string (rank, dims);
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_LIMIT,
                       "%s: tensor '%s' of shape %s has more than "
                       "%" G_GUINT64_FORMAT
                       " elements (the max-tensor-elements "
                       "limit; raise the onnx frontend's "
                       "'max-tensor-elements' parameter to read it)",
                       l->path, v->name, shape, l->opts.max_tensor_elements);
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

/* The little-endian unsigned integers of 2, 4 and 8 bytes at @p, which
 * need not be aligned. */
static guint16
read_le16 (const guint8 *p)
{
  guint16 x;
  memcpy (&x, p, sizeof x);
  return GUINT16_FROM_LE (x);
}

static guint32
read_le32 (const guint8 *p)
{
  guint32 x;
  memcpy (&x, p, sizeof x);
  return GUINT32_FROM_LE (x);
}

static guint64
read_le64 (const guint8 *p)
{
  guint64 x;
  memcpy (&x, p, sizeof x);
  return GUINT64_FROM_LE (x);
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
        out[i] = (double) (gint64) read_le64 (p + 8 * i);
        break;
      case DT_UINT64:
        out[i] = (double) read_le64 (p + 8 * i);
        break;
      case DT_INT32:
        out[i] = (gint32) read_le32 (p + 4 * i);
        break;
      case DT_UINT32:
        out[i] = read_le32 (p + 4 * i);
        break;
      case DT_INT16:
        out[i] = (gint16) read_le16 (p + 2 * i);
        break;
      case DT_UINT16:
        out[i] = read_le16 (p + 2 * i);
        break;
      case DT_FLOAT16:
        out[i] = half_to_float (read_le16 (p + 2 * i));
        break;
      case DT_BFLOAT16:
        out[i] = bf16_to_float (read_le16 (p + 2 * i));
        break;
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
const double *
elk__onnx_value_data (Loader *l, Value *v)
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
      guint64 n_bytes = n * elk__onnx_dtype_size (v->dtype);
      FILE *f;
      gboolean ok = FALSE;

      if (elk__onnx_resolve_external (l, tp, v->name, n_bytes, &file, &offset,
                                      NULL)
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

Value *
elk__onnx_in_value (const Node *n, guint i)
{
  return i < n->n_in ? n->in[i] : NULL;
}

gboolean
elk__onnx_need_inputs (
    Loader *l, const Node *n, guint min, guint max, GError **error)
{
  if (n->n_in < min || n->n_in > max)
    return elk__onnx_node_error (l, n, error,
                                 "has %u inputs, expected %u to %u", n->n_in,
                                 min, max);
  for (guint i = 0; i < min; i++)
    if (n->in[i] == NULL)
      return elk__onnx_node_error (l, n, error, "input %u is required", i);
  if (n->n_out < 1 || n->out[0] == NULL)
    return elk__onnx_node_error (l, n, error, "has no output");
  return TRUE;
}

/* Integer contents of a constant input, for attributes that ONNX moved
 * into inputs (Reshape's shape, Slice's starts, ...).  A run-time value
 * there would make the output shape data-dependent, which a static
 * compiler cannot handle. */
gboolean
elk__onnx_const_ints (Loader *l,
                      const Node *n,
                      guint i,
                      const char *what,
                      gint64 *out,
                      gsize max,
                      gsize *count,
                      GError **error)
{
  Value *v = elk__onnx_in_value (n, i);
  const double *d;

  if (v == NULL)
    return elk__onnx_node_error (l, n, error, "input %u (%s) is required", i,
                                 what);
  d = elk__onnx_value_data (l, v);
  if (d == NULL)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: node '%s' (op %s): input '%s' (%s) must be a "
                   "constant known at import time, but it is computed at "
                   "run time (elk compiles static shapes only)",
                   l->path, elk__onnx_node_label (n), n->p->op_type, v->name,
                   what);
      return FALSE;
    }
  if (v->rank > 1 || v->n_elements > max)
    return elk__onnx_node_error (l, n, error,
                                 "input '%s' (%s) must be a list of at "
                                 "most %zu integers",
                                 v->name, what, max);
  for (guint64 k = 0; k < v->n_elements; k++)
    out[k] = elk__onnx_to_i64 (d[k]);
  *count = v->n_elements;
  return TRUE;
}

/* Reads a list that is an attribute in old opsets and an input in new
 * ones.  Returns TRUE with *present FALSE if neither is given. */
gboolean
elk__onnx_ints_attr_or_input (Loader *l,
                              const Node *n,
                              const char *name,
                              guint input,
                              gint64 *out,
                              gsize max,
                              gsize *count,
                              gboolean *present,
                              GError **error)
{
  gsize na;
  const int64_t *a = elk__onnx_attr_ints (n, name, &na);

  *present = FALSE;
  *count = 0;
  if (a != NULL || elk__onnx_find_attr (n, name) != NULL)
    {
      if (na > max)
        return elk__onnx_node_error (l, n, error,
                                     "attribute '%s' has %zu entries, "
                                     "at most %zu are allowed",
                                     name, na, max);
      for (gsize k = 0; k < na; k++)
        out[k] = a[k];
      *count = na;
      *present = TRUE;
      return TRUE;
    }
  if (elk__onnx_in_value (n, input) != NULL)
    {
      *present = TRUE;
      return elk__onnx_const_ints (l, n, input, name, out, max, count, error);
    }
  return TRUE;
}

gboolean
elk__onnx_norm_axis (Loader *l,
                     const Node *n,
                     gint64 axis,
                     guint rank,
                     guint *out,
                     GError **error)
{
  *out = 0;
  if (axis < -(gint64) rank || axis >= (gint64) rank)
    return elk__onnx_node_error (l, n, error,
                                 "axis %" G_GINT64_FORMAT " is out of "
                                 "range for rank %u",
                                 axis, rank);
  *out = (guint) (axis < 0 ? axis + (gint64) rank : axis);
  return TRUE;
}

/* Records that a graph input feeds a data operand, so it is a model input
 * and not a weight; the "inputs" option overrides this. */
void
elk__onnx_mark_data (Loader *l, Value *v)
{
  if (v != NULL && v->kind == VK_INPUT && v->root >= 0
      && !g_array_index (l->input_forced, gboolean, v->root))
    g_array_index (l->input_is_data, gboolean, v->root) = TRUE;
}

/* Sets output i to a view of src with a new shape: the output lives where
 * src lives (on chip, or in HBM for a weight). */
gboolean
elk__onnx_set_view (Loader *l,
                    Node *n,
                    guint i,
                    Value *src,
                    int dtype,
                    guint rank,
                    const gint64 *dims,
                    GError **error)
{
  Value *out = i < n->n_out ? n->out[i] : NULL;
  if (out == NULL)
    return TRUE;
  if (!elk__onnx_value_set_shape (l, out, dtype, rank, dims, error))
    return FALSE;
  out->kind = src->kind;
  out->root = src->root;
  return TRUE;
}

gboolean
elk__onnx_set_computed (Loader *l,
                        Node *n,
                        guint i,
                        int dtype,
                        guint rank,
                        const gint64 *dims,
                        GError **error)
{
  Value *out = i < n->n_out ? n->out[i] : NULL;
  if (out == NULL)
    return TRUE;
  if (!elk__onnx_value_set_shape (l, out, dtype, rank, dims, error))
    return FALSE;
  out->kind = VK_ACT;
  return TRUE;
}

void
elk__onnx_set_data (Value *out, double *data)
{
  g_free (out->data);
  out->data = data;
  out->kind = VK_CONST;
  out->root = -1;
}

/* Row-major strides. */
void
elk__onnx_strides_of (guint rank, const gint64 *dims, gint64 *strides)
{
  gint64 s = 1;
  for (guint i = rank; i-- > 0;)
    {
      strides[i] = s;
      s *= dims[i];
    }
}

/* Index into a broadcast input for output element @flat. */
guint64
elk__onnx_broadcast_index (guint64 flat,
                           guint out_rank,
                           const gint64 *out_dims,
                           const Value *in)
{
  gint64 ostr[MAX_RANK], istr[MAX_RANK];
  guint64 idx = 0;
  guint off = out_rank - in->rank;

  elk__onnx_strides_of (out_rank, out_dims, ostr);
  elk__onnx_strides_of (in->rank, in->dims, istr);
  for (guint a = 0; a < out_rank; a++)
    {
      gint64 c = (gint64) (flat / (guint64) ostr[a]);
      flat %= (guint64) ostr[a];
      if (a >= off && in->dims[a - off] != 1)
        idx += (guint64) (c * istr[a - off]);
    }
  return idx;
}

gboolean
elk__onnx_broadcast_shapes (
    Loader *l, const Node *n, guint *rank, gint64 *dims, GError **error)
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
              g_autofree char *s1
                  = elk__onnx_shape_to_string (v->rank, v->dims);
              return elk__onnx_node_error (l, n, error,
                                           "input '%s' of shape %s does not "
                                           "broadcast with the other inputs "
                                           "(axis %u: %" G_GINT64_FORMAT
                                           " vs %" G_GINT64_FORMAT ")",
                                           v->name, s1, off + a, d,
                                           dims[off + a]);
            }
        }
    }
  *rank = r;
  return TRUE;
}

/* All inputs (that are present) carry known data. */
gboolean
elk__onnx_all_inputs_known (Loader *l, const Node *n)
{
  for (guint i = 0; i < n->n_in; i++)
    if (n->in[i] != NULL && elk__onnx_value_data (l, n->in[i]) == NULL)
      return FALSE;
  return TRUE;
}

gboolean
elk__onnx_is_int_dtype (int dt)
{
  return !elk__onnx_dtype_is_float (dt) && dt != DT_BOOL;
}

/* Rounds a computed value to what the output type can hold. */
double
elk__onnx_cast_value (double x, int dt)
{
  if (dt == DT_BOOL)
    return x != 0.0;
  if (elk__onnx_is_int_dtype (dt) && !elk__onnx_dtype_is_float (dt))
    return (double) elk__onnx_to_i64 (x);
  return x;
}

gboolean
elk__onnx_eval_binary (const char *op, double a, double b, int dt, double *out)
{
  gboolean integer = elk__onnx_is_int_dtype (dt);

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
  *out = elk__onnx_cast_value (*out, dt);
  return TRUE;
}

gboolean
elk__onnx_eval_unary (const char *op, double a, int dt, double *out)
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
  *out = elk__onnx_cast_value (*out, dt);
  return TRUE;
}

gboolean
elk__onnx_is_scalar_constant (Loader *l, Value *v, double *out)
{
  const double *d;
  if (v == NULL || v->n_elements != 1 || v->kind == VK_ACT
      || v->kind == VK_INPUT)
    return FALSE;
  d = elk__onnx_value_data (l, v);
  if (d == NULL)
    return FALSE;
  if (out != NULL)
    *out = d[0];
  return TRUE;
}
