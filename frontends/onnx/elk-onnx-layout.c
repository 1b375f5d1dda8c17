/* elk-onnx-layout.c: the layout operators (Reshape, Transpose, Concat,
 * Slice, Pad, ...) and shape arithmetic (Shape, Constant, Range, ...),
 * whose outputs are views or folded constants, and the data-movement
 * operators with compute-free kernels (Gather, GatherElements, Resize).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "elk-onnx-private.h"

static gboolean
infer_identity (Loader *l, Node *n, GError **error)
{
  Value *x;
  if (!elk__onnx_need_inputs (l, n, 1, 3, error))
    return FALSE;
  x = n->in[0];
  if (!elk__onnx_set_view (l, n, 0, x, x->dtype, x->rank, x->dims, error))
    return FALSE;
  if (elk__onnx_value_data (l, x) != NULL)
    elk__onnx_set_data (n->out[0], g_memdup2 (x->data, MAX (x->n_elements, 1)
                                                           * sizeof (double)));
  /* Dropout's optional mask output is all-true at inference. */
  if (n->n_out > 1 && n->out[1] != NULL)
    {
      if (!elk__onnx_value_set_shape (l, n->out[1], DT_BOOL, x->rank, x->dims,
                                      error))
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

  if (!elk__onnx_need_inputs (l, n, 1, 2, error))
    return FALSE;
  x = n->in[0];
  if (strcmp (n->p->op_type, "CastLike") == 0)
    {
      if (n->n_in < 2 || n->in[1] == NULL)
        return elk__onnx_node_error (l, n, error, "needs a target_type input");
      to = n->in[1]->dtype;
    }
  else if (!elk__onnx_attr_int (l, n, "to", DT_UNDEFINED, &to, error))
    return FALSE;
  if (to < 0 || to > DT_LAST || !elk__onnx_dtype_is_known ((int) to))
    return elk__onnx_node_error (
        l, n, error, "cannot cast to unknown data type %" G_GINT64_FORMAT, to);
  if (elk__onnx_dtype_size ((int) to) == 0)
    return elk__onnx_node_unsupported (l, n, error,
                                       "elk cannot size the target "
                                       "type");
  if (!elk__onnx_set_view (l, n, 0, x, (int) to, x->rank, x->dims, error))
    return FALSE;
  if (elk__onnx_value_data (l, x) != NULL)
    {
      double *d = g_new (double, MAX (x->n_elements, 1));
      for (guint64 i = 0; i < x->n_elements; i++)
        d[i] = elk__onnx_cast_value (x->data[i], (int) to);
      elk__onnx_set_data (n->out[0], d);
    }
  return TRUE;
}

static void
copy_data_view (Loader *l, Node *n, Value *x)
{
  if (elk__onnx_value_data (l, x) != NULL && n->out[0] != NULL)
    elk__onnx_set_data (n->out[0], g_memdup2 (x->data, MAX (x->n_elements, 1)
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

  if (!elk__onnx_need_inputs (l, n, 1, 2, error))
    return FALSE;
  x = n->in[0];
  if (l->opset < 5)
    {
      gsize na;
      const int64_t *a = elk__onnx_attr_ints (n, "shape", &na);
      if (na > MAX_RANK)
        return elk__onnx_node_error (l, n, error,
                                     "target rank %zu is too large", na);
      for (gsize i = 0; i < na; i++)
        shape[i] = a[i];
      count = na;
    }
  else if (!elk__onnx_const_ints (l, n, 1, "shape", shape, MAX_RANK, &count,
                                  error))
    return FALSE;
  if (!elk__onnx_attr_int (l, n, "allowzero", 0, &allowzero, error))
    return FALSE;

  for (gsize i = 0; i < count; i++)
    {
      if (shape[i] == 0 && !allowzero)
        {
          if (i >= x->rank)
            return elk__onnx_node_error (l, n, error,
                                         "target dimension %zu is 0 "
                                         "(copy) but the input has rank %u",
                                         i, x->rank);
          shape[i] = x->dims[i];
        }
      if (shape[i] == -1)
        {
          if (infer_axis >= 0)
            return elk__onnx_node_error (l, n, error,
                                         "target shape has more than "
                                         "one -1");
          infer_axis = (gint) i;
          continue;
        }
      if (shape[i] < 0)
        return elk__onnx_node_error (l, n, error,
                                     "target dimension %" G_GINT64_FORMAT
                                     " is invalid",
                                     shape[i]);
      if (!g_uint64_checked_mul (&known, known, (guint64) shape[i]))
        return elk__onnx_node_error (l, n, error, "target shape overflows");
    }
  if (infer_axis >= 0)
    {
      if (known == 0 || x->n_elements % known != 0)
        return elk__onnx_node_error (l, n, error,
                                     "cannot infer the -1 dimension: "
                                     "%" G_GUINT64_FORMAT " elements do not "
                                     "divide by %" G_GUINT64_FORMAT,
                                     x->n_elements, known);
      shape[infer_axis] = (gint64) (x->n_elements / known);
      known = x->n_elements;
    }
  if (known != x->n_elements)
    {
      g_autofree char *from = elk__onnx_shape_to_string (x->rank, x->dims);
      g_autofree char *to = elk__onnx_shape_to_string ((guint) count, shape);
      return elk__onnx_node_error (l, n, error,
                                   "cannot reshape %s (%" G_GUINT64_FORMAT
                                   " elements) into %s",
                                   from, x->n_elements, to);
    }
  if (!elk__onnx_set_view (l, n, 0, x, x->dtype, (guint) count, shape, error))
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

  if (!elk__onnx_need_inputs (l, n, 1, 1, error)
      || !elk__onnx_attr_int (l, n, "axis", 1, &axis, error))
    return FALSE;
  x = n->in[0];
  if (axis == (gint64) x->rank)
    a = x->rank;
  else if (!elk__onnx_norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  for (guint i = 0; i < x->rank; i++)
    dims[i < a ? 0 : 1] *= x->dims[i];
  if (!elk__onnx_set_view (l, n, 0, x, x->dtype, 2, dims, error))
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

  if (!elk__onnx_need_inputs (l, n, 1, 2, error)
      || !elk__onnx_ints_attr_or_input (l, n, "axes", 1, axes, MAX_RANK, &count,
                                        &present, error))
    return FALSE;
  x = n->in[0];
  if (!present || count == 0)
    for (guint i = 0; i < x->rank; i++)
      drop[i] = x->dims[i] == 1;
  for (gsize k = 0; k < count; k++)
    {
      guint a;
      if (!elk__onnx_norm_axis (l, n, axes[k], x->rank, &a, error))
        return FALSE;
      if (x->dims[a] != 1)
        return elk__onnx_node_error (l, n, error,
                                     "cannot squeeze axis %u of '%s', "
                                     "whose extent is %" G_GINT64_FORMAT,
                                     a, x->name, x->dims[a]);
      drop[a] = TRUE;
    }
  for (guint i = 0; i < x->rank; i++)
    if (!drop[i])
      dims[r++] = x->dims[i];
  if (!elk__onnx_set_view (l, n, 0, x, x->dtype, r, dims, error))
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

  if (!elk__onnx_need_inputs (l, n, 1, 2, error)
      || !elk__onnx_ints_attr_or_input (l, n, "axes", 1, axes, MAX_RANK, &count,
                                        &present, error))
    return FALSE;
  x = n->in[0];
  if (!present || count == 0)
    return elk__onnx_node_error (l, n, error, "needs 'axes'");
  r = x->rank + (guint) count;
  if (r > MAX_RANK)
    return elk__onnx_node_error (l, n, error, "result rank %u is too large", r);
  for (gsize k = 0; k < count; k++)
    {
      guint a;
      if (!elk__onnx_norm_axis (l, n, axes[k], r, &a, error))
        return FALSE;
      if (ins[a])
        return elk__onnx_node_error (l, n, error, "axis %u is listed twice", a);
      ins[a] = TRUE;
    }
  for (guint i = 0; i < r; i++)
    dims[i] = ins[i] ? 1 : x->dims[j++];
  if (!elk__onnx_set_view (l, n, 0, x, x->dtype, r, dims, error))
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

  if (!elk__onnx_need_inputs (l, n, 1, 1, error))
    return FALSE;
  x = n->in[0];
  p = elk__onnx_attr_ints (n, "perm", &np);
  if (p == NULL)
    {
      np = x->rank;
      for (guint i = 0; i < x->rank; i++)
        perm[i] = x->rank - 1 - i;
    }
  else
    {
      if (np != x->rank)
        return elk__onnx_node_error (l, n, error,
                                     "perm has %zu entries but the input "
                                     "has rank %u",
                                     np, x->rank);
      for (gsize i = 0; i < np; i++)
        perm[i] = p[i];
    }
  for (guint i = 0; i < x->rank; i++)
    {
      if (perm[i] < 0 || perm[i] >= (gint64) x->rank || seen[perm[i]])
        return elk__onnx_node_error (l, n, error,
                                     "perm is not a permutation of 0..%u",
                                     x->rank - 1);
      seen[perm[i]] = TRUE;
      dims[i] = x->dims[perm[i]];
    }
  if (!elk__onnx_set_view (l, n, 0, x, x->dtype, x->rank, dims, error))
    return FALSE;
  if (elk__onnx_value_data (l, x) != NULL)
    {
      gint64 istr[MAX_RANK], ostr[MAX_RANK];
      double *d = g_new (double, MAX (x->n_elements, 1));
      elk__onnx_strides_of (x->rank, x->dims, istr);
      elk__onnx_strides_of (x->rank, dims, ostr);
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
      elk__onnx_set_data (n->out[0], d);
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
    return elk__onnx_node_error (l, n, error, "needs inputs and an output");
  if (!elk__onnx_attr_int (l, n, "axis", G_MININT64, &axis, error))
    return FALSE;
  if (axis == G_MININT64)
    return elk__onnx_node_error (l, n, error, "needs an 'axis' attribute");
  x = n->in[0];
  if (!elk__onnx_norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  memcpy (dims, x->dims, x->rank * sizeof (gint64));
  dims[a] = 0;
  for (guint i = 0; i < n->n_in; i++)
    {
      Value *v = n->in[i];
      if (v == NULL)
        return elk__onnx_node_error (l, n, error, "input %u is empty", i);
      if (v->rank != x->rank)
        return elk__onnx_node_error (l, n, error,
                                     "input '%s' has rank %u, expected %u",
                                     v->name, v->rank, x->rank);
      for (guint k = 0; k < x->rank; k++)
        if (k != a && v->dims[k] != x->dims[k])
          return elk__onnx_node_error (l, n, error,
                                       "input '%s' has extent %" G_GINT64_FORMAT
                                       " in axis %u, "
                                       "expected %" G_GINT64_FORMAT,
                                       v->name, v->dims[k], k, x->dims[k]);
      dims[a] += v->dims[a];
      any_act |= v->kind == VK_ACT;
      any_input |= v->kind == VK_INPUT;
    }
  if (!elk__onnx_set_computed (l, n, 0, x->dtype, x->rank, dims, error))
    return FALSE;
  out = n->out[0];
  if (elk__onnx_all_inputs_known (l, n) && out->n_elements <= FOLD_LIMIT)
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
      elk__onnx_set_data (out, d);
    }
  else if (!any_act && !any_input)
    out->kind = VK_PARAM;
  else if (!any_act)
    /* Concatenating graph inputs alone: they are data.  Next to an
     * activation they may be weights (ViT's class token). */
    for (guint i = 0; i < n->n_in; i++)
      elk__onnx_mark_data (l, n->in[i]);
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

  if (!elk__onnx_need_inputs (l, n, 1, 2, error)
      || !elk__onnx_attr_int (l, n, "axis", 0, &axis, error))
    return FALSE;
  x = n->in[0];
  if (!elk__onnx_norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  if (n->n_out > G_N_ELEMENTS (split))
    return elk__onnx_node_error (l, n, error, "has too many outputs");
  if (!elk__onnx_ints_attr_or_input (l, n, "split", 1, split,
                                     G_N_ELEMENTS (split), &count, &present,
                                     error))
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
    return elk__onnx_node_error (l, n, error,
                                 "split sizes do not add up to the "
                                 "extent %" G_GINT64_FORMAT " of axis %u "
                                 "over %u outputs",
                                 x->dims[a], a, n->n_out);
  for (guint i = 0; i < n->n_out; i++)
    {
      gint64 dims[MAX_RANK];
      memcpy (dims, x->dims, x->rank * sizeof (gint64));
      dims[a] = split[i];
      if (!elk__onnx_set_view (l, n, i, x, x->dtype, x->rank, dims, error))
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

  if (!elk__onnx_need_inputs (l, n, 1, 5, error))
    return FALSE;
  x = n->in[0];
  if (l->opset < 10)
    {
      if (!elk__onnx_ints_attr_or_input (l, n, "starts", 99, starts, MAX_RANK,
                                         &ns, &present, error)
          || !elk__onnx_ints_attr_or_input (l, n, "ends", 99, ends, MAX_RANK,
                                            &ne, &present, error)
          || !elk__onnx_ints_attr_or_input (l, n, "axes", 99, axes, MAX_RANK,
                                            &na, &present, error))
        return FALSE;
    }
  else
    {
      if (!elk__onnx_const_ints (l, n, 1, "starts", starts, MAX_RANK, &ns,
                                 error)
          || !elk__onnx_const_ints (l, n, 2, "ends", ends, MAX_RANK, &ne,
                                    error))
        return FALSE;
      if (elk__onnx_in_value (n, 3) != NULL
          && !elk__onnx_const_ints (l, n, 3, "axes", axes, MAX_RANK, &na,
                                    error))
        return FALSE;
      if (elk__onnx_in_value (n, 4) != NULL
          && !elk__onnx_const_ints (l, n, 4, "steps", steps, MAX_RANK, &nst,
                                    error))
        return FALSE;
    }
  if (ns != ne || (na != 0 && na != ns) || (nst != 0 && nst != ns))
    return elk__onnx_node_error (l, n, error,
                                 "starts, ends, axes and steps differ "
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
      if (!elk__onnx_norm_axis (l, n, na ? axes[k] : (gint64) k, x->rank, &a,
                                error))
        return FALSE;
      d = x->dims[a];
      st = nst ? steps[k] : 1;
      if (st == 0)
        return elk__onnx_node_error (l, n, error, "step is 0");
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
  if (!elk__onnx_set_view (l, n, 0, x, x->dtype, x->rank, dims, error))
    return FALSE;
  if (elk__onnx_value_data (l, x) != NULL)
    {
      Value *out = n->out[0];
      gint64 istr[MAX_RANK], ostr[MAX_RANK];
      double *d = g_new (double, MAX (out->n_elements, 1));
      elk__onnx_strides_of (x->rank, x->dims, istr);
      elk__onnx_strides_of (x->rank, dims, ostr);
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
      elk__onnx_set_data (out, d);
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

  if (!elk__onnx_need_inputs (l, n, 1, 1, error)
      || !elk__onnx_attr_int (l, n, "start", 0, &start, error)
      || !elk__onnx_attr_int (l, n, "end", G_MAXINT64, &end, error))
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
  if (!elk__onnx_set_computed (l, n, 0, DT_INT64, 1, &one, error))
    return FALSE;
  d = g_new0 (double, MAX (one, 1));
  for (gint64 i = 0; i < one; i++)
    d[i] = (double) x->dims[start + i];
  elk__onnx_set_data (n->out[0], d);
  return TRUE;
}

static gboolean
infer_size (Loader *l, Node *n, GError **error)
{
  double *d;
  if (!elk__onnx_need_inputs (l, n, 1, 1, error)
      || !elk__onnx_set_computed (l, n, 0, DT_INT64, 0, NULL, error))
    return FALSE;
  d = g_new (double, 1);
  d[0] = (double) n->in[0]->n_elements;
  elk__onnx_set_data (n->out[0], d);
  return TRUE;
}

static gboolean
infer_constant (Loader *l, Node *n, GError **error)
{
  const Onnx__AttributeProto *a = NULL;
  Value *out;
  g_autofree char *what = NULL;

  if (n->n_out < 1 || n->out[0] == NULL)
    return elk__onnx_node_error (l, n, error, "has no output");
  out = n->out[0];
  for (size_t i = 0; i < n->p->n_attribute; i++)
    if (a == NULL)
      a = n->p->attribute[i];
    else
      return elk__onnx_node_error (l, n, error,
                                   "must have exactly one attribute");
  if (a == NULL || a->name == NULL)
    return elk__onnx_node_error (l, n, error, "has no value attribute");
  what = g_strdup_printf ("node '%s' (op Constant) value",
                          elk__onnx_node_label (n));
  if (strcmp (a->name, "value") == 0 && a->t != NULL)
    {
      if (!elk__onnx_value_from_tensor (l, out, a->t, what, error))
        return FALSE;
    }
  else if (strcmp (a->name, "value_float") == 0 && a->has_f)
    {
      if (!elk__onnx_value_set_shape (l, out, DT_FLOAT, 0, NULL, error))
        return FALSE;
      out->data = g_new (double, 1);
      out->data[0] = a->f;
    }
  else if (strcmp (a->name, "value_int") == 0 && a->has_i)
    {
      if (!elk__onnx_value_set_shape (l, out, DT_INT64, 0, NULL, error))
        return FALSE;
      out->data = g_new (double, 1);
      out->data[0] = (double) a->i;
    }
  else if (strcmp (a->name, "value_floats") == 0
           || strcmp (a->name, "value_ints") == 0)
    {
      gboolean f = a->name[6] == 'f';
      gint64 len = f ? (gint64) a->n_floats : (gint64) a->n_ints;
      if (!elk__onnx_value_set_shape (l, out, f ? DT_FLOAT : DT_INT64, 1, &len,
                                      error))
        return FALSE;
      out->data = g_new0 (double, MAX (len, 1));
      for (gint64 i = 0; i < len; i++)
        out->data[i] = f ? a->floats[i] : (double) a->ints[i];
    }
  else
    return elk__onnx_node_unsupported (l, n, error,
                                       "only tensor, float and int "
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

  if (!elk__onnx_need_inputs (l, n, 1, 1, error)
      || !elk__onnx_const_ints (l, n, 0, "shape", shape, MAX_RANK, &count,
                                error))
    return FALSE;
  a = elk__onnx_find_attr (n, "value");
  if (a != NULL && a->t != NULL)
    {
      Value probe = { 0 };
      g_autofree char *what
          = g_strdup_printf ("node '%s' value", elk__onnx_node_label (n));
      probe.name = what;
      probe.elk_id = -1;
      if (!elk__onnx_value_from_tensor (l, &probe, a->t, what, error))
        return FALSE;
      if (probe.n_elements != 1)
        return elk__onnx_node_error (l, n, error,
                                     "value must have one element");
      dt = probe.dtype;
      if (elk__onnx_value_data (l, &probe) != NULL)
        fill = probe.data[0];
      g_free (probe.data);
    }
  if (!elk__onnx_set_computed (l, n, 0, dt, (guint) count, shape, error))
    return FALSE;
  out = n->out[0];
  if (out->n_elements <= FOLD_LIMIT)
    {
      double *d = g_new (double, MAX (out->n_elements, 1));
      for (guint64 i = 0; i < out->n_elements; i++)
        d[i] = fill;
      elk__onnx_set_data (out, d);
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

  if (!elk__onnx_need_inputs (l, n, 3, 3, error))
    return FALSE;
  s = elk__onnx_value_data (l, n->in[0]);
  e = elk__onnx_value_data (l, n->in[1]);
  dl = elk__onnx_value_data (l, n->in[2]);
  if (s == NULL || e == NULL || dl == NULL)
    return elk__onnx_node_unsupported (l, n, error,
                                       "start, limit and delta must be "
                                       "constants known at import time "
                                       "(elk compiles static shapes only)");
  if (dl[0] == 0.0)
    return elk__onnx_node_error (l, n, error, "delta is 0");
  len = elk__onnx_to_i64 (ceil ((e[0] - s[0]) / dl[0]));
  len = MAX (len, 0);
  if (!elk__onnx_set_computed (l, n, 0, n->in[0]->dtype, 1, &len, error))
    return FALSE;
  if (len <= FOLD_LIMIT)
    {
      d = g_new (double, MAX (len, 1));
      for (gint64 i = 0; i < len; i++)
        d[i]
            = elk__onnx_cast_value (s[0] + (double) i * dl[0], n->in[0]->dtype);
      elk__onnx_set_data (n->out[0], d);
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
  if (elk__onnx_value_data (l, x) != NULL && out->n_elements <= FOLD_LIMIT)
    {
      double *d = g_new (double, MAX (out->n_elements, 1));
      for (guint64 o = 0; o < out->n_elements; o++)
        d[o] = x->data[elk__onnx_broadcast_index (o, out->rank, out->dims, x)];
      elk__onnx_set_data (out, d);
    }
}

static gboolean
infer_expand (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 shape[MAX_RANK], dims[MAX_RANK];
  gsize count;
  guint r;

  if (!elk__onnx_need_inputs (l, n, 2, 2, error)
      || !elk__onnx_const_ints (l, n, 1, "shape", shape, MAX_RANK, &count,
                                error))
    return FALSE;
  x = n->in[0];
  r = MAX (x->rank, (guint) count);
  for (guint a = 0; a < r; a++)
    {
      gint64 dx = a + x->rank >= r ? x->dims[a + x->rank - r] : 1;
      gint64 ds = a + count >= r ? shape[a + count - r] : 1;
      if (dx != ds && dx != 1 && ds != 1)
        return elk__onnx_node_error (l, n, error,
                                     "cannot expand extent %" G_GINT64_FORMAT
                                     " to %" G_GINT64_FORMAT " in axis %u",
                                     dx, ds, a);
      dims[a] = dx == 1 ? ds : dx;
    }
  if (!elk__onnx_set_view (l, n, 0, x, x->dtype, r, dims, error))
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

  if (!elk__onnx_need_inputs (l, n, 2, 3, error)
      || !elk__onnx_const_ints (l, n, 1, "repeats", rep, MAX_RANK, &count,
                                error))
    return FALSE;
  x = n->in[0];
  if (count != x->rank)
    return elk__onnx_node_error (l, n, error,
                                 "repeats has %zu entries for rank %u", count,
                                 x->rank);
  for (guint a = 0; a < x->rank; a++)
    {
      if (rep[a] < 0)
        return elk__onnx_node_error (l, n, error, "negative repeat");
      dims[a] = x->dims[a] * rep[a];
    }
  return elk__onnx_set_view (l, n, 0, x, x->dtype, x->rank, dims, error);
}

static gboolean
infer_pad (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 pads[2 * MAX_RANK], axes[MAX_RANK], dims[MAX_RANK];
  gsize count, na = 0;
  gboolean present;

  if (!elk__onnx_need_inputs (l, n, 1, 4, error))
    return FALSE;
  x = n->in[0];
  if (l->opset < 2)
    {
      if (!elk__onnx_ints_attr_or_input (l, n, "paddings", 99, pads,
                                         2 * MAX_RANK, &count, &present, error))
        return FALSE;
    }
  else if (!elk__onnx_ints_attr_or_input (l, n, "pads", 1, pads, 2 * MAX_RANK,
                                          &count, &present, error))
    return FALSE;
  if (elk__onnx_in_value (n, 3) != NULL
      && !elk__onnx_const_ints (l, n, 3, "axes", axes, MAX_RANK, &na, error))
    return FALSE;
  if (na == 0)
    {
      na = x->rank;
      for (guint a = 0; a < x->rank; a++)
        axes[a] = a;
    }
  if (count != 2 * na)
    return elk__onnx_node_error (l, n, error,
                                 "pads has %zu entries, expected %zu", count,
                                 2 * na);
  memcpy (dims, x->dims, x->rank * sizeof (gint64));
  for (gsize k = 0; k < na; k++)
    {
      guint a;
      if (!elk__onnx_norm_axis (l, n, axes[k], x->rank, &a, error))
        return FALSE;
      dims[a] += pads[k] + pads[k + na];
      if (dims[a] < 0)
        return elk__onnx_node_error (l, n, error,
                                     "padding makes axis %u negative", a);
    }
  return elk__onnx_set_view (l, n, 0, x, x->dtype, x->rank, dims, error);
}

static gboolean
infer_depth_space (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 b, dims[4];
  gboolean to_space = strcmp (n->p->op_type, "DepthToSpace") == 0;

  if (!elk__onnx_need_inputs (l, n, 1, 1, error)
      || !elk__onnx_attr_int (l, n, "blocksize", 0, &b, error))
    return FALSE;
  x = n->in[0];
  if (x->rank != 4 || b <= 0)
    return elk__onnx_node_error (l, n, error,
                                 "needs a rank-4 input and a positive "
                                 "blocksize");
  if (to_space)
    {
      if (x->dims[1] % (b * b) != 0)
        return elk__onnx_node_error (l, n, error,
                                     "channels %" G_GINT64_FORMAT
                                     " do not divide by blocksize^2",
                                     x->dims[1]);
      dims[0] = x->dims[0];
      dims[1] = x->dims[1] / (b * b);
      dims[2] = x->dims[2] * b;
      dims[3] = x->dims[3] * b;
    }
  else
    {
      if (x->dims[2] % b != 0 || x->dims[3] % b != 0)
        return elk__onnx_node_error (l, n, error,
                                     "spatial extents do not divide by "
                                     "the blocksize");
      dims[0] = x->dims[0];
      dims[1] = x->dims[1] * b * b;
      dims[2] = x->dims[2] / b;
      dims[3] = x->dims[3] / b;
    }
  return elk__onnx_set_view (l, n, 0, x, x->dtype, 4, dims, error);
}

static gboolean
infer_trilu (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 upper, k = 0;
  gsize count;

  if (!elk__onnx_need_inputs (l, n, 1, 2, error)
      || !elk__onnx_attr_int (l, n, "upper", 1, &upper, error))
    return FALSE;
  x = n->in[0];
  if (x->rank < 2)
    return elk__onnx_node_error (l, n, error, "needs rank 2 or more");
  if (elk__onnx_in_value (n, 1) != NULL
      && !elk__onnx_const_ints (l, n, 1, "k", &k, 1, &count, error))
    return FALSE;
  if (!elk__onnx_set_view (l, n, 0, x, x->dtype, x->rank, x->dims, error))
    return FALSE;
  if (elk__onnx_value_data (l, x) != NULL)
    {
      gint64 rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
      double *d = g_memdup2 (x->data, MAX (x->n_elements, 1) * sizeof (double));
      for (guint64 i = 0; i < x->n_elements; i++)
        {
          gint64 c = (gint64) (i % (guint64) cols);
          gint64 r = (gint64) ((i / (guint64) cols) % (guint64) rows);
          gboolean keep = upper ? c - r >= k : c - r <= k;
          if (!keep)
            d[i] = 0.0;
        }
      elk__onnx_set_data (n->out[0], d);
    }
  return TRUE;
}

static gboolean
infer_gather (Loader *l, Node *n, GError **error)
{
  Value *x, *idx, *out;
  gint64 axis, dims[MAX_RANK];
  guint a, r = 0;

  if (!elk__onnx_need_inputs (l, n, 2, 2, error)
      || !elk__onnx_attr_int (l, n, "axis", 0, &axis, error))
    return FALSE;
  x = n->in[0];
  idx = n->in[1];
  if (!elk__onnx_norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  if (elk__onnx_dtype_is_float (idx->dtype))
    return elk__onnx_node_error (l, n, error, "indices '%s' must be integers",
                                 idx->name);
  if (x->rank + idx->rank - 1 > MAX_RANK)
    return elk__onnx_node_error (l, n, error, "result rank is too large");
  for (guint i = 0; i < a; i++)
    dims[r++] = x->dims[i];
  for (guint i = 0; i < idx->rank; i++)
    dims[r++] = idx->dims[i];
  for (guint i = a + 1; i < x->rank; i++)
    dims[r++] = x->dims[i];

  /* Constant indices must be in range even when nothing is folded. */
  if (elk__onnx_value_data (l, idx) != NULL)
    for (guint64 i = 0; i < idx->n_elements; i++)
      {
        gint64 k = elk__onnx_to_i64 (idx->data[i]);
        if (k < -x->dims[a] || k >= x->dims[a])
          return elk__onnx_node_error (l, n, error,
                                       "index %" G_GINT64_FORMAT " is out "
                                       "of range for axis %u of extent "
                                       "%" G_GINT64_FORMAT,
                                       k, a, x->dims[a]);
      }

  if (!elk__onnx_set_computed (l, n, 0, x->dtype, r, dims, error))
    return FALSE;
  out = n->out[0];
  if (elk__onnx_value_data (l, x) != NULL
      && elk__onnx_value_data (l, idx) != NULL && out->n_elements <= FOLD_LIMIT)
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
            gint64 k = elk__onnx_to_i64 (idx->data[j]);
            if (k < 0)
              k += x->dims[a];
            for (gint64 i = 0; i < inner; i++)
              d[pos++] = x->data[(o * x->dims[a] + k) * inner + i];
          }
      elk__onnx_set_data (out, d);
      return TRUE;
    }
  /* Picking rows of an activation with constant indices (ViT's class token
   * x[:, 0]) is a slice: no compute, folded like the other layout ops. */
  if (elk__onnx_value_data (l, idx) != NULL
      && (x->kind == VK_ACT || x->kind == VK_INPUT))
    {
      out->kind = x->kind;
      out->root = x->root;
      n->view = TRUE;
      return TRUE;
    }
  elk__onnx_mark_data (l, idx);
  return TRUE;
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

  if (!elk__onnx_attr_int (l, n, "axis", 0, &axis, error)
      || !elk__onnx_norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  /* out[d<a, i..., d>a] = x[d<a, idx[i...], d>a].  Like the llama
   * frontend, the operator reads only the gathered rows of the table (a
   * view shaped like the output), which is what an embedding lookup
   * streams from HBM, and the indices. */
  elk__onnx_plain_letters (out->rank, lo);
  for (guint j = 0; j < idx->rank; j++)
    li[j] = lo[a + j];
  li[idx->rank] = '\0';
  elk__onnx_ob_init (&b);
  ok = elk__onnx_ob_input (l, n, &b, li,
                           elk__onnx_tensor_for (l, n, idx, 0, NULL, NULL,
                                                 error),
                           error)
       && elk__onnx_ob_input (l, n, &b, lo,
                              elk__onnx_tensor_for (l, n, x, out->rank,
                                                    out->dims, "rows", error),
                              error)
       && elk__onnx_ob_emit (l, n, &b, lo,
                             elk__onnx_tensor_for (l, n, out, 0, NULL, NULL,
                                                   error),
                             "gather", ELK_OP_GATHER, 0.0, error);
  elk__onnx_ob_clear (&b);
  return ok;
}

/* GatherElements: out[i...] = x[..., idx[i...], ...]; the output has the
 * indices' shape, and the operator reads those elements of x. */
static gboolean
infer_gather_elements (Loader *l, Node *n, GError **error)
{
  Value *x, *idx;
  gint64 axis;
  guint a;

  if (!elk__onnx_need_inputs (l, n, 2, 2, error)
      || !elk__onnx_attr_int (l, n, "axis", 0, &axis, error))
    return FALSE;
  x = n->in[0];
  idx = n->in[1];
  if (!elk__onnx_norm_axis (l, n, axis, x->rank, &a, error))
    return FALSE;
  if (idx->rank != x->rank)
    return elk__onnx_node_error (l, n, error, "indices and data ranks differ");
  elk__onnx_mark_data (l, idx);
  return elk__onnx_set_computed (l, n, 0, x->dtype, idx->rank, idx->dims,
                                 error);
}

static gboolean
lower_gather_elements (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *idx = n->in[1], *out = n->out[0];
  char lo[MAX_RANK + 1];
  OpBuild b;
  gboolean ok;

  elk__onnx_plain_letters (out->rank, lo);
  elk__onnx_ob_init (&b);
  ok = elk__onnx_ob_input (l, n, &b, lo,
                           elk__onnx_tensor_for (l, n, idx, 0, NULL, NULL,
                                                 error),
                           error)
       && elk__onnx_ob_input (l, n, &b, lo,
                              elk__onnx_tensor_for (l, n, x, out->rank,
                                                    out->dims, "elements",
                                                    error),
                              error)
       && elk__onnx_ob_emit (l, n, &b, lo,
                             elk__onnx_tensor_for (l, n, out, 0, NULL, NULL,
                                                   error),
                             "gather", ELK_OP_GATHER, 0.0, error);
  elk__onnx_ob_clear (&b);
  return ok;
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

  if (!elk__onnx_need_inputs (l, n, 1, 4, error))
    return FALSE;
  x = n->in[0];
  scales = elk__onnx_in_value (n, scales_input);
  sizes_v = upsample || l->opset < 11 ? NULL : elk__onnx_in_value (n, 3);
  if (sizes_v != NULL && sizes_v->n_elements > 0)
    {
      if (!elk__onnx_const_ints (l, n, 3, "sizes", sizes, MAX_RANK, &count,
                                 error))
        return FALSE;
      if (count != x->rank)
        return elk__onnx_node_error (l, n, error,
                                     "sizes has %zu entries for rank %u", count,
                                     x->rank);
      memcpy (dims, sizes, x->rank * sizeof (gint64));
    }
  else
    {
      const double *s = NULL;
      gsize na;
      const Onnx__AttributeProto *attr = elk__onnx_find_attr (n, "scales");
      if (scales != NULL)
        {
          s = elk__onnx_value_data (l, scales);
          if (s == NULL)
            return elk__onnx_node_unsupported (l, n, error,
                                               "its scales must be a "
                                               "constant known at import "
                                               "time (elk compiles static "
                                               "shapes only)");
          na = scales->n_elements;
        }
      else if (attr != NULL && attr->n_floats > 0)
        na = attr->n_floats;
      else
        return elk__onnx_node_error (l, n, error, "needs scales or sizes");
      if (na != x->rank)
        return elk__onnx_node_error (l, n, error,
                                     "scales has %zu entries for rank %u", na,
                                     x->rank);
      for (guint i = 0; i < x->rank; i++)
        {
          double f = s != NULL ? s[i] : attr->floats[i];
          double v = floor ((double) x->dims[i] * f);
          if (!(f > 0.0) || v > (double) G_MAXINT32 * 1024.0)
            return elk__onnx_node_error (l, n, error,
                                         "scale %g of axis %u is out of "
                                         "range",
                                         f, i);
          dims[i] = (gint64) v;
        }
    }
  elk__onnx_mark_data (l, x);
  return elk__onnx_set_computed (l, n, 0, x->dtype, x->rank, dims, error);
}

static gboolean
lower_resize (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *out = n->out[0];
  char li[MAX_RANK + 1], lo[MAX_RANK + 1];
  char next = (char) ('a' + x->rank);
  g_autofree char *mode = elk__onnx_attr_string (n, "mode", "nearest");
  guint resized = 0;
  double per;

  elk__onnx_plain_letters (out->rank, lo);
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
    return elk__onnx_node_unsupported (l, n, error,
                                       "unknown interpolation mode");
  return elk__onnx_emit_unary (l, n, li, lo, "resize", ELK_OP_GATHER,
                               per * (double) out->n_elements, error);
}

/* Layout, shape arithmetic and data movement.  Operators without a lower
 * function have no compute: their outputs are views or constants, folded at
 * import (docs/frontend-onnx.md lists them). */
static const OpInfo layout_ops[] = {
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
  { "Gather", infer_gather, lower_gather, 0 },
  { "GatherElements", infer_gather_elements, lower_gather_elements, 0 },
  { "Resize", infer_resize, lower_resize, 0 },
  { "Upsample", infer_resize, lower_resize, 0 },
};

ELK_ONNX_DEFINE_FAMILY (layout, "layout");
