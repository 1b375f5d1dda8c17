/* elk-onnx-norm.c: the normalisations (BatchNormalization,
 * LayerNormalization, InstanceNormalization, MeanVarianceNormalization),
 * Softmax and the other operators along one axis, and the reductions.
 */
#include "config.h"

#include <string.h>

#include "elk-onnx-private.h"

/* Starts @b with @x read whole, on the plain letters of its rank (written
 * to @letters), as the normalizations' operators begin. */
static gboolean
ob_start_whole (
    Loader *l, Node *n, OpBuild *b, Value *x, char *letters, GError **error)
{
  elk__onnx_plain_letters (x->rank, letters);
  elk__onnx_ob_init (b);
  return elk__onnx_ob_input (l, n, b, letters,
                             elk__onnx_tensor_of (l, n, x, error), error);
}

/* The output of a normalization with per-channel parameters (inputs 1 to
 * @n_params - 1, each of shape [C] for an input [N, C, ...]): shaped like
 * the input. */
static gboolean
infer_per_channel (Loader *l, Node *n, guint n_params, GError **error)
{
  Value *x = n->in[0];

  if (x->rank < 2)
    return elk__onnx_node_error (l, n, error, "input must have rank 2 or more");
  for (guint i = 1; i < n_params; i++)
    if (n->in[i]->rank != 1 || n->in[i]->dims[0] != x->dims[1])
      return elk__onnx_node_error (l, n, error,
                                   "'%s' must have shape [%" G_GINT64_FORMAT
                                   "]",
                                   n->in[i]->name, x->dims[1]);
  elk__onnx_mark_data (l, x);
  return elk__onnx_set_computed (l, n, 0, x->dtype, x->rank, x->dims, error);
}

static gboolean
infer_batchnorm (Loader *l, Node *n, GError **error)
{
  gint64 training = 0;

  if (!elk__onnx_need_inputs (l, n, 5, 5, error)
      || !elk__onnx_attr_int (l, n, "training_mode", 0, &training, error))
    return FALSE;
  if (training)
    return elk__onnx_node_unsupported (l, n, error, "training mode");
  for (guint i = 1; i < n->n_out; i++)
    if (n->out[i] != NULL && n->out[i]->n_uses > 0)
      return elk__onnx_node_unsupported (l, n, error,
                                         "its running statistics "
                                         "outputs are used (training mode)");
  return infer_per_channel (l, n, 5, error);
}

/* Lowers a per-channel normalisation into one operator: x read whole, its
 * per-channel parameters (inputs 1 and 2, when present) read along the
 * channel letter, and the output shaped like x.  It costs @base FLOPs per
 * element, plus one per parameter. */
static gboolean
lower_per_channel (Loader *l,
                   Node *n,
                   const char *type,
                   ElkOpKind kind,
                   double base,
                   GError **error)
{
  Value *x = n->in[0], *out = n->out[0];
  char letters[MAX_RANK + 1];
  OpBuild b;
  gboolean ok = ob_start_whole (l, n, &b, x, letters, error);
  double per = base;

  for (guint i = 1; i < n->n_in && i < 3 && ok; i++)
    if (n->in[i] != NULL)
      {
        ok = elk__onnx_ob_input (l, n, &b, "b",
                                 elk__onnx_tensor_of (l, n, n->in[i], error),
                                 error);
        per += 1.0;
      }
  ok = ok
       && elk__onnx_ob_emit (l, n, &b, letters,
                             elk__onnx_tensor_of (l, n, out, error), type, kind,
                             per * (double) x->n_elements, error);
  elk__onnx_ob_clear (&b);
  return ok;
}

/* Inference-mode batch normalization is a per-channel scale and shift
 * (inputs 1 and 2, both required); the mean and variance are folded into
 * them offline, as every inference compiler does. */
static gboolean
lower_batchnorm (Loader *l, Node *n, GError **error)
{
  return lower_per_channel (l, n, "batchnorm", ELK_OP_ELEMENTWISE, 0.0, error);
}

static gboolean
infer_layernorm (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 axis, dims[MAX_RANK];
  guint a;

  if (!elk__onnx_need_inputs (l, n, 2, 3, error)
      || !elk__onnx_attr_int (l, n, "axis", -1, &axis, error))
    return FALSE;
  x = n->in[0];
  if (!elk__onnx_norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  for (guint i = 1; i < n->n_in; i++)
    {
      Value *v = n->in[i];
      if (v == NULL)
        continue;
      if (v->rank > x->rank - a)
        return elk__onnx_node_error (l, n, error,
                                     "'%s' has rank %u, more than the "
                                     "%u normalized axes",
                                     v->name, v->rank, x->rank - a);
      for (guint k = 0; k < v->rank; k++)
        if (v->dims[k] != 1 && v->dims[k] != x->dims[x->rank - v->rank + k])
          return elk__onnx_node_error (l, n, error,
                                       "'%s' does not broadcast over the "
                                       "normalized axes",
                                       v->name);
    }
  for (guint i = 0; i < x->rank; i++)
    dims[i] = i < a ? x->dims[i] : 1;
  for (guint i = 1; i < n->n_out; i++)
    if (!elk__onnx_set_computed (l, n, i, DT_FLOAT, x->rank, dims, error))
      return FALSE;
  elk__onnx_mark_data (l, x);
  return elk__onnx_set_computed (l, n, 0, x->dtype, x->rank, x->dims, error);
}

gboolean
elk__onnx_emit_layernorm (Loader *l,
                          Node *n,
                          Value *x,
                          Value *scale,
                          Value *bias,
                          Value *out,
                          GError **error)
{
  char letters[MAX_RANK + 1], lw[MAX_RANK + 1];
  char next = (char) ('a' + x->rank);
  Value *params[2] = { scale, bias };
  OpBuild b;
  gboolean ok;
  double per = 5.0;

  ok = ob_start_whole (l, n, &b, x, letters, error);
  for (guint i = 0; i < G_N_ELEMENTS (params) && ok; i++)
    if (params[i] != NULL)
      {
        elk__onnx_broadcast_letters (params[i], x->rank, x->dims, &next, lw);
        ok = elk__onnx_ob_input (l, n, &b, lw,
                                 elk__onnx_tensor_of (l, n, params[i], error),
                                 error);
        per += 1.0;
      }
  ok = ok
       && elk__onnx_ob_emit (l, n, &b, letters,
                             elk__onnx_tensor_of (l, n, out, error),
                             "layernorm", ELK_OP_REDUCE,
                             per * (double) x->n_elements, error);
  elk__onnx_ob_clear (&b);
  return ok;
}

static gboolean
lower_layernorm (Loader *l, Node *n, GError **error)
{
  static const char *const suffix[3] = { NULL, "mean", "invstddev" };
  Value *x = n->in[0];

  if (!elk__onnx_emit_layernorm (l, n, x, elk__onnx_in_value (n, 1),
                                 elk__onnx_in_value (n, 2), n->out[0], error))
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
      elk__onnx_plain_letters (x->rank, li);
      for (guint k = 0; k < x->rank; k++)
        lo[k] = stat->dims[k] == x->dims[k] ? li[k] : next++;
      lo[x->rank] = '\0';
      elk__onnx_ob_init (&b);
      ok = elk__onnx_ob_input (l, n, &b, li,
                               elk__onnx_tensor_of (l, n, x, error), error);
      if (ok)
        {
          g_autofree char *spec = g_strdup_printf ("%s->%s", b.spec->str, lo);
          gint t = elk__onnx_tensor_of (l, n, stat, error);
          name = g_strdup_printf ("%s#%s", n->name, suffix[i]);
          b.tensors[b.n++] = (guint32) t;
          ok = t >= 0;
          if (ok)
            {
              op = elk_graph_add_op (l->graph, name, "layernorm-stats",
                                     ELK_OP_REDUCE, n->layer, spec, b.tensors,
                                     b.n, NULL, error);
              ok = op >= 0 || elk__onnx_prefix_node_error (l, n, error);
            }
        }
      elk__onnx_ob_clear (&b);
      if (!ok)
        return FALSE;
    }
  return TRUE;
}

static gboolean
infer_channel_norm (Loader *l, Node *n, GError **error)
{
  gboolean instance = strcmp (n->p->op_type, "InstanceNormalization") == 0;

  if (!elk__onnx_need_inputs (l, n, instance ? 3 : 1, instance ? 3 : 1, error))
    return FALSE;
  return infer_per_channel (l, n, n->n_in, error);
}

/* Per-channel normalization over the spatial axes (InstanceNormalization),
 * or over given axes (MeanVarianceNormalization): a reduction with the
 * output shaped like the input. */
static gboolean
lower_channel_norm (Loader *l, Node *n, GError **error)
{
  return lower_per_channel (l, n, n->p->op_type, ELK_OP_REDUCE, 5.0, error);
}

static gboolean
infer_softmax (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 axis;
  guint a;

  if (!elk__onnx_need_inputs (l, n, 1, 1, error)
      || !elk__onnx_attr_int (l, n, "axis", l->opset >= 13 ? -1 : 1, &axis,
                              error))
    return FALSE;
  x = n->in[0];
  if (x->rank > 0 && !elk__onnx_norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  elk__onnx_mark_data (l, x);
  return elk__onnx_set_computed (l, n, 0, x->dtype, x->rank, x->dims, error);
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
    return elk__onnx_node_unsupported (l, n, error,
                                       "its input is a scalar, which "
                                       "has no axis to normalise over");
  if (!elk__onnx_attr_int (l, n, "axis", l->opset >= 13 ? -1 : 1, &axis, error)
      || !elk__onnx_norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  elk__onnx_plain_letters (x->rank, li);
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
      g_autofree char *name
          = g_strdup_printf ("%s#softmax-%s", out->name, step[i]);
      t[i] = elk__onnx_node_scratch (l, n, name, out->dtype,
                                     i == 1 ? x->rank : r,
                                     i == 1 ? xshape : rshape, error);
      ok = t[i] >= 0;
    }
  for (guint i = 0; i < 4 && ok; i++)
    {
      g_autofree char *name = i < 3
                                  ? g_strdup_printf ("%s#%s", n->name, step[i])
                                  : g_strdup (n->name);
      /* Reads x, (x, m), e, (e, s). */
      gint in0 = i == 0 || i == 1 ? elk__onnx_tensor_of (l, n, x, error) : t[1];
      OpBuild b;

      if (in0 < 0)
        return FALSE;
      elk__onnx_ob_init (&b);
      ok = elk__onnx_ob_input (l, n, &b, li, in0, error);
      if (ok && (i == 1 || i == 3))
        ok = elk__onnx_ob_input (l, n, &b, lr, t[i == 1 ? 0 : 2], error);
      if (ok && lr[0] == (char) ('a' + x->rank))
        elk__onnx_ob_extent (&b, lr[0], 1);
      switch (i)
        {
        case 0:
          ok = ok
               && elk__onnx_ob_emit_named (l, n, &b, name, lr, t[0], "max",
                                           ELK_OP_REDUCE, per, error);
          break;
        case 1:
          ok = ok
               && elk__onnx_ob_emit_named (l, n, &b, name, li, t[1], "sub-exp",
                                           ELK_OP_ELEMENTWISE, 2 * per, error);
          break;
        case 2:
          ok = ok
               && elk__onnx_ob_emit_named (l, n, &b, name, lr, t[2], "sum",
                                           ELK_OP_REDUCE, per, error);
          break;
        default:
          ok = ok
               && elk__onnx_ob_emit_named (l, n, &b, name, li,
                                           elk__onnx_tensor_of (l, n, out,
                                                                error),
                                           "div", ELK_OP_ELEMENTWISE, per,
                                           error);
          break;
        }
      elk__onnx_ob_clear (&b);
    }
  return ok;
}

/* Softmax-like operators whose output is shaped like the input and that
 * read along one axis (CumSum, Hardmax): the axis is not needed for the
 * shape. */
static gboolean
infer_same_shape (Loader *l, Node *n, GError **error)
{
  Value *x;
  if (!elk__onnx_need_inputs (l, n, 1, 2, error))
    return FALSE;
  x = n->in[0];
  elk__onnx_mark_data (l, x);
  return elk__onnx_set_computed (l, n, 0, x->dtype, x->rank, x->dims, error);
}

/* LogSoftmax, Hardmax, CumSum: one operator shaped like its input, which
 * reads along an axis that the einsum has no reduced dimension for. */
static gboolean
lower_along_axis (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0];
  char letters[MAX_RANK + 1];

  elk__onnx_plain_letters (x->rank, letters);
  return elk__onnx_emit_unary (l, n, letters, letters, n->p->op_type,
                               ELK_OP_REDUCE,
                               n->info->flops * (double) x->n_elements, error);
}

/* Which axes a Reduce* or Arg* operator reduces. */
gboolean
elk__onnx_reduce_axes (
    Loader *l, Node *n, gboolean *reduced, gboolean *keepdims, GError **error)
{
  Value *x = n->in[0];
  gint64 axes[MAX_RANK], keep, noop;
  gsize count = 0;
  gboolean present = FALSE;
  gboolean arg = g_str_has_prefix (n->p->op_type, "Arg");

  if (!elk__onnx_attr_int (l, n, "keepdims", 1, &keep, error)
      || !elk__onnx_attr_int (l, n, "noop_with_empty_axes", 0, &noop, error))
    return FALSE;
  *keepdims = keep != 0;
  if (arg)
    {
      gint64 axis;
      if (!elk__onnx_attr_int (l, n, "axis", 0, &axis, error))
        return FALSE;
      axes[0] = axis;
      count = 1;
    }
  else if (!elk__onnx_ints_attr_or_input (l, n, "axes", 1, axes, MAX_RANK,
                                          &count, &present, error))
    return FALSE;
  for (guint i = 0; i < x->rank; i++)
    reduced[i] = count == 0 && !noop;
  for (gsize k = 0; k < count; k++)
    {
      guint a;
      if (!elk__onnx_norm_axis (l, n, axes[k], x->rank, &a, error))
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

  if (!elk__onnx_need_inputs (l, n, 1, 2, error))
    return FALSE;
  x = n->in[0];
  if (!elk__onnx_reduce_axes (l, n, reduced, &keep, error))
    return FALSE;
  for (guint i = 0; i < x->rank; i++)
    if (!reduced[i])
      dims[r++] = x->dims[i];
    else if (keep)
      dims[r++] = 1;
  elk__onnx_mark_data (l, x);
  return elk__onnx_set_computed (l, n, 0, arg ? DT_INT64 : x->dtype, r, dims,
                                 error);
}

static gboolean
lower_reduce (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0];
  gboolean reduced[MAX_RANK], keep;
  char li[MAX_RANK + 1], lo[MAX_RANK + 1];
  char next = (char) ('a' + x->rank);
  guint r = 0;

  if (!elk__onnx_reduce_axes (l, n, reduced, &keep, error))
    return FALSE;
  elk__onnx_plain_letters (x->rank, li);
  for (guint i = 0; i < x->rank; i++)
    if (!reduced[i])
      lo[r++] = li[i];
    else if (keep)
      lo[r++] = next++;
  lo[r] = '\0';
  return elk__onnx_emit_unary (l, n, li, lo, n->p->op_type, ELK_OP_REDUCE,
                               n->info->flops * (double) x->n_elements, error);
}

/* Normalisations and reductions.  flops is per input element for
 * reductions and per output element for Softmax, LogSoftmax, Hardmax and
 * CumSum. */
static const OpInfo norm_ops[] = {
  { "BatchNormalization", infer_batchnorm, lower_batchnorm, 0 },
  { "LayerNormalization", infer_layernorm, lower_layernorm, 0 },
  { "Softmax", infer_softmax, lower_softmax, 5 },
  { "LogSoftmax", infer_softmax, lower_along_axis, 6 },
  { "Hardmax", infer_softmax, lower_along_axis, 2 },
  { "CumSum", infer_same_shape, lower_along_axis, 1 },
  { "InstanceNormalization", infer_channel_norm, lower_channel_norm, 0 },
  { "MeanVarianceNormalization", infer_channel_norm, lower_channel_norm, 0 },
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
};

ELK_ONNX_DEFINE_FAMILY (norm, "normalisation");
