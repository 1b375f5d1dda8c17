/* elk-onnx-fuse.c: pattern recognition between shape inference and
 * lowering: the unrolled LayerNormalization chain, and BatchNormalization
 * folded into the Conv before it.
 */
#include "config.h"

#include <string.h>

#include "elk-onnx-private.h"

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
is_weight (Loader *l, const Value *v)
{
  return v != NULL && elk__onnx_value_origin (l, v) == ELK_TENSOR_ORIGIN_WEIGHT;
}

static gboolean
same_trailing_axes (Loader *l, Node *a, Node *b, guint rank)
{
  gboolean ra[MAX_RANK], rb[MAX_RANK], ka, kb;
  guint first = rank;

  if (!elk__onnx_reduce_axes (l, a, ra, &ka, NULL)
      || !elk__onnx_reduce_axes (l, b, rb, &kb, NULL) || !ka || !kb)
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
  if (pw == NULL || dv == NULL
      || !elk__onnx_is_scalar_constant (l, pw->in[1], &two) || two != 2.0)
    return;
  m2 = sole_user (l, pw->out[0]);
  if (!is_op (m2, "ReduceMean") || !same_trailing_axes (l, m1, m2, x->rank))
    return;
  add = sole_user (l, m2->out[0]);
  if (!is_op (add, "Add")
      || !(elk__onnx_is_scalar_constant (l, add->in[1], NULL)
           || elk__onnx_is_scalar_constant (l, add->in[0], NULL)))
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

void
elk__onnx_fuse_patterns (Loader *l)
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
