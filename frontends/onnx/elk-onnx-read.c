/* elk-onnx-read.c: reading the model: the protobuf nesting check, the
 * model checks, initializers (inline or external data), graph inputs with
 * their symbolic dimensions bound, and the nodes in topological order.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "elk-onnx-private.h"

/* Checks an external-data reference and returns the data file and the
 * offset.  The location is relative to the model's folder and may not leave
 * it, so a model cannot make elk read /etc/passwd or a sibling project. */
gboolean
elk__onnx_resolve_external (Loader *l,
                            const Onnx__TensorProto *tp,
                            const char *what,
                            guint64 n_bytes,
                            char **path_out,
                            guint64 *offset_out,
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
          if (!g_ascii_string_to_unsigned (value, 10, 0, G_MAXUINT64, &x, NULL))
            {
              g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                           "%s: %s: external data %s '%s' is not a "
                           "non-negative integer",
                           l->path, what, key, value);
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
                   "%s: %s has external data but no 'location'", l->path, what);
      return FALSE;
    }
  if (g_path_is_absolute (location) || strstr (location, "..") != NULL
      || strchr (location, '\\') != NULL)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s: external data location '%s' must be a relative "
                   "path inside the model's folder",
                   l->path, what, location);
      return FALSE;
    }
  full = g_build_filename (l->dir, location, NULL);
  real_dir = realpath (l->dir, NULL);
  real_file = realpath (full, NULL);
  if (real_file == NULL || stat (real_file, &st) != 0)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s: cannot open external data file '%s': %s", l->path,
                   what, full, g_strerror (errno));
      return FALSE;
    }
  /* A symbolic link may still point outside the folder. */
  if (real_dir == NULL || !g_str_has_prefix (real_file, real_dir)
      || real_file[strlen (real_dir)] != '/')
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s: external data location '%s' resolves to '%s', "
                   "outside the model's folder",
                   l->path, what, location, real_file);
      return FALSE;
    }
  if (!S_ISREG (st.st_mode))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s: external data '%s' is not a regular file", l->path,
                   what, full);
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
  if (offset > (guint64) st.st_size || n_bytes > (guint64) st.st_size - offset)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s: external data needs bytes %" G_GUINT64_FORMAT
                   "..%" G_GUINT64_FORMAT
                   " of '%s', which has only %" G_GUINT64_FORMAT,
                   l->path, what, offset, offset + n_bytes, location,
                   (guint64) st.st_size);
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
gboolean
elk__onnx_value_from_tensor (Loader *l,
                             Value *v,
                             const Onnx__TensorProto *tp,
                             const char *what,
                             GError **error)
{
  gint64 dims[MAX_RANK];
  guint64 n_bytes, have;
  guint esize;
  int dt = tp->data_type;

  if (!elk__onnx_dtype_is_known (dt))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s has unknown data type %d", l->path, what, dt);
      return FALSE;
    }
  esize = elk__onnx_dtype_size (dt);
  if (esize == 0)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: %s has data type %s, which elk cannot size", l->path,
                   what, elk__onnx_dtype_name (dt));
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
  if (!elk__onnx_value_set_shape (l, v, dt, (guint) tp->n_dims, dims, error))
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
      if (!elk__onnx_resolve_external (l, tp, what, n_bytes, NULL, NULL, error))
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
      g_autofree char *shape = elk__onnx_shape_to_string (v->rank, v->dims);
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: %s declares shape %s (%" G_GUINT64_FORMAT
                   " elements of %s) but carries %" G_GUINT64_FORMAT
                   " elements of data",
                   l->path, what, shape, v->n_elements,
                   elk__onnx_dtype_name (dt), have);
      return FALSE;
    }
  v->tp = tp;
  return TRUE;
}

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
  PB_TYPE_ELEM, /* TypeProto.Sequence and .Optional: field 1 */
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
  { PB_MODEL, 25, PB_FUNCTION },      { PB_GRAPH, 1, PB_NODE },
  { PB_GRAPH, 5, PB_TENSOR },         { PB_GRAPH, 15, PB_SPARSE_TENSOR },
  { PB_GRAPH, 11, PB_VALUE_INFO },    { PB_GRAPH, 12, PB_VALUE_INFO },
  { PB_GRAPH, 13, PB_VALUE_INFO },    { PB_GRAPH, 14, PB_ANNOTATION },
  { PB_NODE, 5, PB_ATTRIBUTE },       { PB_ATTRIBUTE, 5, PB_TENSOR },
  { PB_ATTRIBUTE, 6, PB_GRAPH },      { PB_ATTRIBUTE, 22, PB_SPARSE_TENSOR },
  { PB_ATTRIBUTE, 14, PB_TYPE },      { PB_ATTRIBUTE, 10, PB_TENSOR },
  { PB_ATTRIBUTE, 11, PB_GRAPH },     { PB_ATTRIBUTE, 23, PB_SPARSE_TENSOR },
  { PB_ATTRIBUTE, 15, PB_TYPE },      { PB_TENSOR, 3, PB_ENTRY },
  { PB_TENSOR, 13, PB_ENTRY },        { PB_SPARSE_TENSOR, 1, PB_TENSOR },
  { PB_SPARSE_TENSOR, 2, PB_TENSOR }, { PB_VALUE_INFO, 2, PB_TYPE },
  { PB_TYPE, 1, PB_TYPE_TENSOR },     { PB_TYPE, 4, PB_TYPE_ELEM },
  { PB_TYPE, 5, PB_TYPE_MAP },        { PB_TYPE, 9, PB_TYPE_ELEM },
  { PB_TYPE, 8, PB_TYPE_TENSOR },     { PB_TYPE_TENSOR, 2, PB_SHAPE },
  { PB_TYPE_ELEM, 1, PB_TYPE },       { PB_TYPE_MAP, 2, PB_TYPE },
  { PB_SHAPE, 1, PB_ENTRY },          { PB_FUNCTION, 7, PB_NODE },
  { PB_FUNCTION, 9, PB_ENTRY },       { PB_TRAINING, 1, PB_GRAPH },
  { PB_TRAINING, 2, PB_GRAPH },       { PB_TRAINING, 3, PB_ENTRY },
  { PB_TRAINING, 4, PB_ENTRY },       { PB_ANNOTATION, 2, PB_ENTRY },
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

gboolean
elk__onnx_check_nesting (Loader *l,
                         const guint8 *data,
                         gsize len,
                         GError **error)
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
                   "'max-nesting' parameter to read it",
                   l->path, l->opts.max_nesting);
      return FALSE;
    default:
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: not a valid ONNX model: the protobuf data is "
                   "truncated or corrupted",
                   l->path);
      return FALSE;
    }
}

gboolean
elk__onnx_parse_dims (Loader *l, GError **error)
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
                       "sequence=128\")",
                       l->path, item);
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

/* One "name=number" item of input-values: the graph input @name, a
 * single element, becomes the constant @number.  The value must suit the
 * input's type, since it stands for data the model would receive. */
static gboolean
bind_input_value (Loader *l, char *item, GHashTable *seen, GError **error)
{
  char *eq = strrchr (item, '='), *end = NULL;
  Value *v;
  double x;

  if (eq != NULL)
    x = g_ascii_strtod (g_strstrip (eq + 1), &end);
  if (eq == NULL || eq == item || end == eq + 1 || end == NULL || *end != '\0'
      || !isfinite (x))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: bad input value '%s' in input-values (expected "
                   "name=number, as in \"sr=16000,cond=1\")",
                   l->path, item);
      return FALSE;
    }
  *eq = '\0';
  g_strstrip (item);
  if (!g_hash_table_add (seen, g_strdup (item)))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: input '%s' is bound twice in input-values", l->path,
                   item);
      return FALSE;
    }
  v = elk__onnx_lookup_value (l, item);
  if (v == NULL || v->kind != VK_INPUT)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: input-values binds '%s', which is not a graph input",
                   l->path, item);
      return FALSE;
    }
  if (v->n_elements != 1)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: input-values binds '%s', which has %" G_GUINT64_FORMAT
                   " elements; only single-element inputs (scalars, such as "
                   "a sample rate or a flag) can be bound",
                   l->path, item, v->n_elements);
      return FALSE;
    }
  if ((elk__onnx_is_int_dtype (v->dtype)
       || v->dtype == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL)
      && (x != floor (x)
          || (v->dtype == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL && x != 0
              && x != 1)))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: input-values gives '%s' the value %g, but the input "
                   "is %s (expected %s)",
                   l->path, item, x,
                   v->dtype == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
                       ? "a boolean"
                       : "an integer",
                   v->dtype == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
                       ? "0 or 1"
                       : "a whole number");
      return FALSE;
    }
  elk__onnx_set_data (v, g_memdup2 (&x, sizeof x));
  return TRUE;
}

/* Applies the input-values option once the graph inputs are read. */
static gboolean
bind_input_values (Loader *l, GError **error)
{
  g_auto (GStrv) items = NULL;
  g_autoptr (GHashTable) seen = NULL;

  if (l->opts.input_values == NULL || *l->opts.input_values == '\0')
    return TRUE;
  seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  items = g_strsplit (l->opts.input_values, ",", -1);
  for (guint i = 0; items[i] != NULL; i++)
    if (*g_strstrip (items[i]) != '\0'
        && !bind_input_value (l, items[i], seen, error))
      return FALSE;
  return TRUE;
}

gboolean
elk__onnx_load_inputs (Loader *l, GError **error)
{
  const Onnx__GraphProto *g = l->model->graph;
  g_autoptr (GPtrArray) unbound = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GHashTable) symbols
      = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
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
                           "input",
                           l->path, forced[i]);
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
      if (elk__onnx_lookup_value (l, vi->name) != NULL)
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
                       "and optionals are not supported)",
                       l->path, vi->name);
          return FALSE;
        }
      tt = vi->type->tensor_type;
      if (!tt->has_elem_type || !elk__onnx_dtype_is_known (tt->elem_type)
          || elk__onnx_dtype_size (tt->elem_type) == 0)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                       "%s: graph input '%s' has data type %s (%d), which "
                       "elk cannot size",
                       l->path, vi->name, elk__onnx_dtype_name (tt->elem_type),
                       tt->elem_type);
          return FALSE;
        }
      if (tt->shape == NULL)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                       "%s: graph input '%s' has no shape; elk compiles "
                       "static shapes only",
                       l->path, vi->name);
          return FALSE;
        }
      if (tt->shape->n_dim > MAX_RANK)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                       "%s: graph input '%s' has rank %zu", l->path, vi->name,
                       tt->shape->n_dim);
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
      v = elk__onnx_new_value (l, vi->name);
      if (!elk__onnx_value_set_shape (l, v, tt->elem_type,
                                      (guint) tt->shape->n_dim, dims, error))
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
                   "the 'dims' parameter, e.g. dims=\"%s\"",
                   l->path, unbound->len > 1 ? "s" : "", names->str,
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
          g_autofree gpointer *known
              = g_hash_table_get_keys_as_array (symbols, NULL);
          g_autofree char *list = NULL;
          qsort (known, g_hash_table_size (symbols), sizeof (gpointer),
                 compare_strings);
          list = g_strjoinv (", ", (char **) known);
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: dims binds '%s', which is not a symbolic "
                       "dimension of any graph input (the model's symbolic "
                       "dimensions: %s)",
                       l->path, (const char *) key, *list ? list : "none");
          return FALSE;
        }
  }
  return bind_input_values (l, error);
}

gboolean
elk__onnx_load_initializers (Loader *l, GError **error)
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
      if (elk__onnx_lookup_value (l, tp->name) != NULL)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: initializer '%s' is defined twice", l->path,
                       tp->name);
          return FALSE;
        }
      v = elk__onnx_new_value (l, tp->name);
      what = g_strdup_printf ("initializer '%s'", tp->name);
      if (!elk__onnx_value_from_tensor (l, v, tp, what, error))
        return FALSE;
      v->kind = VK_PARAM;
      l->n_params += v->n_elements;
    }
  return TRUE;
}

/* Creates the nodes in topological order.  ONNX requires files to be
 * sorted already; sorting again costs little and turns a cycle into an
 * error that names a node on it. */
gboolean
elk__onnx_load_nodes (Loader *l, GError **error)
{
  const Onnx__GraphProto *g = l->model->graph;
  gsize n_nodes = g->n_node;
  g_autofree guint *pending = g_new0 (guint, MAX (n_nodes, 1));
  g_autofree gboolean *done = g_new0 (gboolean, MAX (n_nodes, 1));
  g_autoptr (GHashTable) producer = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GHashTable) names = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GArray) queue = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autofree GPtrArray **users = g_new0 (GPtrArray *, MAX (n_nodes, 1));
  /* The names a node's subgraphs read from the main graph: dependencies
   * of the node as its inputs are (elk-onnx-control.c). */
  g_autofree GPtrArray **captures = g_new0 (GPtrArray *, MAX (n_nodes, 1));
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
          if (elk__onnx_lookup_value (l, o) != NULL)
            {
              g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                           "%s: node '%s' (op %s) writes '%s', which is "
                           "already defined by another node, an initializer "
                           "or a graph input",
                           l->path, p->name != NULL ? p->name : "", p->op_type,
                           o);
              return FALSE;
            }
          elk__onnx_new_value (l, o);
          g_hash_table_insert (producer, (gpointer) o, GUINT_TO_POINTER (i));
        }
    }
  for (gsize i = 0; i < n_nodes && ok; i++)
    {
      const Onnx__NodeProto *p = g->node[i];
      g_autoptr (GHashTable) names = g_hash_table_new (g_str_hash, g_str_equal);
      g_autofree gpointer *captured = NULL;
      guint n_captured;

      elk__onnx_node_captures (p, names);
      captured = g_hash_table_get_keys_as_array (names, &n_captured);
      /* Sorted, so that the order of the uses does not depend on hashing. */
      qsort (captured, n_captured, sizeof (gpointer), compare_strings);
      captures[i] = g_ptr_array_new ();
      for (guint k = 0; k < n_captured; k++)
        g_ptr_array_add (captures[i], captured[k]);
      for (size_t k = 0; k < p->n_input + n_captured; k++)
        {
          const char *in
              = k < p->n_input ? p->input[k] : captured[k - p->n_input];
          gpointer prod;
          if (in == NULL || *in == '\0')
            continue;
          if (elk__onnx_lookup_value (l, in) == NULL)
            {
              g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                           "%s: node '%s' (op %s) reads '%s'%s, which no "
                           "node, initializer or graph input defines",
                           l->path, p->name != NULL ? p->name : "", p->op_type,
                           in, k < p->n_input ? "" : " in a subgraph");
              ok = FALSE;
              break;
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
  for (gsize i = 0; i < n_nodes && ok; i++)
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
            n->in[k] = elk__onnx_lookup_value (l, p->input[k]);
            n->in[k]->n_uses++;
          }
      n->n_out = (guint) p->n_output;
      n->out = g_new0 (Value *, MAX (n->n_out, 1));
      for (guint k = 0; k < n->n_out; k++)
        if (p->output[k] != NULL && *p->output[k] != '\0')
          {
            n->out[k] = elk__onnx_lookup_value (l, p->output[k]);
            n->out[k]->producer = (gint) l->nodes->len;
          }
      for (guint k = 0; k < captures[i]->len; k++)
        elk__onnx_lookup_value (l, g_ptr_array_index (captures[i], k))
            ->n_uses++;
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
                     "on one: its inputs can never all be computed",
                     l->path, p->name != NULL ? p->name : "", p->op_type);
        ok = FALSE;
      }
  for (gsize i = 0; i < n_nodes; i++)
    {
      if (users[i] != NULL)
        g_ptr_array_unref (users[i]);
      if (captures[i] != NULL)
        g_ptr_array_unref (captures[i]);
    }
  return ok;
}

/* Names end up in error messages and result files, which are UTF-8. */
static gboolean
check_utf8 (
    Loader *l, const char *what, size_t index, const char *s, GError **error)
{
  if (s == NULL || g_utf8_validate (s, -1, NULL))
    return TRUE;
  g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
               "%s: %s %zu has a name or type that is not valid UTF-8", l->path,
               what, index);
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

gboolean
elk__onnx_check_model (Loader *l, GError **error)
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
                   "frontend's 'max-nodes' parameter to read it",
                   l->path, m->graph->n_node, l->opts.max_nodes);
      return FALSE;
    }
  if (m->has_ir_version && (m->ir_version < 3 || m->ir_version > 10))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: ONNX IR version %" G_GINT64_FORMAT " is not "
                   "supported (3 to 10 are)",
                   l->path, m->ir_version);
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
                   "supported (elk implements opsets 1 to %d)",
                   l->path, l->opset, ELK_ONNX_MAX_OPSET);
      return FALSE;
    }
  return TRUE;
}
