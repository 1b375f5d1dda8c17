/* elk-onnx-emit.c: lowering helpers shared by the operator families: the
 * elk tensor of a value, and an einsum operator built operand by operand
 * (OpBuild) with its layer and immediates.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "elk-onnx-private.h"

ElkTensorOrigin
elk__onnx_value_origin (Loader *l, const Value *v)
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

gboolean
elk__onnx_prefix_node_error (Loader *l, const Node *n, GError **error)
{
  g_prefix_error (error, "%s: node '%s' (op %s): ", l->path,
                  elk__onnx_node_label (n), n->p->op_type);
  return FALSE;
}

/* Returns the ElkGraph tensor for @v seen with shape @dims.  A shape that
 * differs from the value's own is a view (a padded or phase-split input, a
 * regrouped weight): it gets its own tensor, named after the value and
 * @tag, that lives where the value lives and that no operator writes. */
gint
elk__onnx_tensor_for (Loader *l,
                      const Node *n,
                      Value *v,
                      guint rank,
                      const gint64 *dims,
                      const char *tag,
                      GError **error)
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
      g_autofree char *shape = elk__onnx_shape_to_string (rank, dims);
      /* The shape is part of the name: two operators may see one value
       * through different views. */
      name = g_strdup_printf ("%s#%s%s", v->name, tag, shape);
      id = elk_graph_find_tensor (l->graph, name);
      if (id >= 0)
        return id;
    }
  if (!elk__onnx_dtype_to_elk (l, v->dtype, &dt))
    {
      elk__onnx_node_unsupported (l, n, error, NULL);
      g_prefix_error (error, "tensor '%s' has data type %s; ", v->name,
                      elk__onnx_dtype_name (v->dtype));
      return -1;
    }
  if (rank > ELK_MAX_DIMS)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: node '%s' (op %s): tensor '%s' has rank %u; elk "
                   "operators support at most %d dimensions",
                   l->path, elk__onnx_node_label (n), n->p->op_type, name, rank,
                   ELK_MAX_DIMS);
      return -1;
    }
  for (guint i = 0; i < rank; i++)
    shape[i] = (guint64) dims[i];
  id = elk_graph_add_tensor (l->graph, name, dt, elk__onnx_value_origin (l, v),
                             rank, shape, 0, error);
  if (id < 0)
    {
      elk__onnx_prefix_node_error (l, n, error);
      return -1;
    }
  if (own)
    v->elk_id = id;
  return id;
}

/* The ElkGraph tensor of @v in its own shape: elk__onnx_tensor_for()
 * without a view. */
gint
elk__onnx_tensor_of (Loader *l, const Node *n, Value *v, GError **error)
{
  return elk__onnx_tensor_for (l, n, v, 0, NULL, NULL, error);
}

void
elk__onnx_ob_init (OpBuild *b)
{
  b->spec = g_string_new (NULL);
  b->extra = g_string_new (NULL);
  b->n = 0;
}

void
elk__onnx_ob_clear (OpBuild *b)
{
  g_string_free (b->spec, TRUE);
  g_string_free (b->extra, TRUE);
}

gboolean
elk__onnx_ob_input (Loader *l,
                    const Node *n,
                    OpBuild *b,
                    const char *letters,
                    gint tensor,
                    GError **error)
{
  if (tensor < 0)
    return FALSE;
  if (b->n + 1 >= ELK_MAX_OPERANDS)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: node '%s' (op %s) has more than %d operands", l->path,
                   elk__onnx_node_label (n), n->p->op_type,
                   ELK_MAX_OPERANDS - 1);
      return FALSE;
    }
  if (b->n > 0)
    g_string_append_c (b->spec, ',');
  g_string_append (b->spec, letters);
  b->tensors[b->n++] = (guint32) tensor;
  return TRUE;
}

void
elk__onnx_ob_extent (OpBuild *b, char letter, gint64 extent)
{
  g_string_append_printf (b->extra, "%s%c=%" G_GINT64_FORMAT,
                          b->extra->len ? "," : "", letter, extent);
}

/* The layer a node belongs to: blocks are recognised from exporter scope
 * names such as "/enc/layers.3/..." or "/layer2/layer2.1/conv1/Conv", whose
 * first path component of the form <name>.<number> (or <name>_<number>)
 * names a repeated block.  Blocks are numbered in order of appearance. */
gint32
elk__onnx_layer_of (Loader *l, const char *name)
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

gboolean
elk__onnx_ob_emit_named (Loader *l,
                         Node *n,
                         OpBuild *b,
                         const char *name,
                         const char *out_letters,
                         gint out_tensor,
                         const char *type,
                         ElkOpKind kind,
                         double flops,
                         GError **error)
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
    return elk__onnx_prefix_node_error (l, n, error);
  if (flops >= 0)
    elk_graph_set_op_flops (l->graph, (guint) op, flops);
  return TRUE;
}

/* The node's operator, named after the node. */
gboolean
elk__onnx_ob_emit (Loader *l,
                   Node *n,
                   OpBuild *b,
                   const char *out_letters,
                   gint out_tensor,
                   const char *type,
                   ElkOpKind kind,
                   double flops,
                   GError **error)
{
  return elk__onnx_ob_emit_named (l, n, b, n->name, out_letters, out_tensor,
                                  type, kind, flops, error);
}

/* The node's one operator, reading its first input whole with
 * @in_letters and writing its first output with @out_letters: the shape of
 * most single-input operators once their letters are worked out. */
gboolean
elk__onnx_emit_unary (Loader *l,
                      Node *n,
                      const char *in_letters,
                      const char *out_letters,
                      const char *type,
                      ElkOpKind kind,
                      double flops,
                      GError **error)
{
  OpBuild b;
  gboolean ok;

  elk__onnx_ob_init (&b);
  ok = elk__onnx_ob_input (l, n, &b, in_letters,
                           elk__onnx_tensor_for (l, n, n->in[0], 0, NULL, NULL,
                                                 error),
                           error)
       && elk__onnx_ob_emit (l, n, &b, out_letters,
                             elk__onnx_tensor_for (l, n, n->out[0], 0, NULL,
                                                   NULL, error),
                             type, kind, flops, error);
  elk__onnx_ob_clear (&b);
  return ok;
}

/* Letters of operand @v broadcast against an output of rank @rank and
 * shape @dims whose axis i has letter 'a' + i.  An axis of extent 1 that
 * the output broadcasts gets a fresh loop dimension of extent 1, because in
 * elk's IR every plain axis of a tensor equals its loop extent. */
void
elk__onnx_broadcast_letters (
    const Value *v, guint rank, const gint64 *dims, char *next, char *out)
{
  guint off = rank - v->rank;
  for (guint j = 0; j < v->rank; j++)
    out[j] = v->dims[j] == dims[off + j] ? (char) ('a' + off + j) : (*next)++;
  out[v->rank] = '\0';
}

void
elk__onnx_plain_letters (guint rank, char *out)
{
  for (guint i = 0; i < rank; i++)
    out[i] = (char) ('a' + i);
  out[rank] = '\0';
}

gboolean
elk__onnx_is_dropped_constant (const Value *v)
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
void
elk__onnx_set_immediates (Loader *l, const char *op, const double *v, guint n_v)
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

/* An activation tensor of the node's own, computed between two of the
 * operators it is lowered into. */
gint
elk__onnx_node_scratch (Loader *l,
                        Node *n,
                        const char *name,
                        int dtype,
                        guint rank,
                        const guint64 *shape,
                        GError **error)
{
  ElkDType dt;
  gint id;

  if (!elk__onnx_dtype_to_elk (l, dtype, &dt))
    {
      elk__onnx_node_unsupported (l, n, error, NULL);
      g_prefix_error (error, "tensor '%s' has data type %s; ", name,
                      elk__onnx_dtype_name (dtype));
      return -1;
    }
  id = elk_graph_add_tensor (l->graph, name, dt, ELK_TENSOR_ORIGIN_ACTIVATION,
                             rank, shape, 0, error);
  if (id < 0)
    elk__onnx_prefix_node_error (l, n, error);
  return id;
}
