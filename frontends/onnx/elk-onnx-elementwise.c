/* elk-onnx-elementwise.c: the elementwise operators with broadcasting and
 * the unary operators, folded when their inputs are constants.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "elk-onnx-private.h"

gboolean
elk__onnx_input_is_activation (Loader *l, const Value *v)
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
    if (elk__onnx_input_is_activation (l, n->in[i]))
      return;
  for (guint i = 0; i < n->n_in; i++)
    if (n->in[i] != NULL && n->in[i]->kind == VK_INPUT)
      {
        elk__onnx_mark_data (l, n->in[i]);
        return;
      }
}

static int
elementwise_dtype (const Node *n)
{
  static const char *const bools[]
      = { "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And",
          "Or",    "Xor",  "Not",     "IsNaN",       "IsInf" };
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

/* Gives @out the values @d that inference folded when @ok, and frees
 * them otherwise (an element could not be evaluated at import, so the
 * node is computed on the chip).  Returns @ok. */
static gboolean
keep_folded (Value *out, double *d, gboolean ok)
{
  if (ok)
    elk__onnx_set_data (out, d);
  else
    g_free (d);
  return ok;
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

  if (!elk__onnx_need_inputs (l, n, where ? 3 : 1, where ? 3 : 64, error))
    return FALSE;
  for (guint i = 0; i < n->n_in; i++)
    if (n->in[i] == NULL)
      return elk__onnx_node_error (l, n, error, "input %u is empty", i);
  if (prelu_per_channel (n))
    {
      rank = n->in[0]->rank;
      memcpy (dims, n->in[0]->dims, rank * sizeof (gint64));
    }
  else if (!elk__onnx_broadcast_shapes (l, n, &rank, dims, error))
    return FALSE;
  dt = elementwise_dtype (n);
  if (!elk__onnx_set_computed (l, n, 0, dt, rank, dims, error))
    return FALSE;
  out = n->out[0];
  if (elk__onnx_all_inputs_known (l, n) && out->n_elements <= FOLD_LIMIT)
    {
      double *d = g_new (double, MAX (out->n_elements, 1));
      gboolean ok = TRUE;
      for (guint64 o = 0; o < out->n_elements && ok; o++)
        {
          double acc
              = n->in[0]
                    ->data[elk__onnx_broadcast_index (o, rank, dims, n->in[0])];
          if (where)
            {
              double t
                  = n->in[1]->data[elk__onnx_broadcast_index (o, rank, dims,
                                                              n->in[1])];
              double f
                  = n->in[2]->data[elk__onnx_broadcast_index (o, rank, dims,
                                                              n->in[2])];
              acc = acc != 0.0 ? t : f;
            }
          else
            for (guint i = 1; i < n->n_in && ok; i++)
              {
                const char *bop = strcmp (op, "Mean") == 0 ? "Sum" : op;
                guint64 at
                    = elk__onnx_broadcast_index (o, rank, dims, n->in[i]);
                ok = elk__onnx_eval_binary (bop, acc, n->in[i]->data[at],
                                            n->in[0]->dtype, &acc);
              }
          if (strcmp (op, "Mean") == 0)
            acc /= n->n_in;
          d[o] = elk__onnx_cast_value (acc, dt);
        }
      /* A variadic operator with one input is not folded. */
      if (keep_folded (out, d, ok && (n->n_in > 1 || where)))
        return TRUE;
    }
  mark_elementwise (l, n);
  return TRUE;
}

static gboolean
infer_unary (Loader *l, Node *n, GError **error)
{
  Value *x, *out;
  int dt;

  if (!elk__onnx_need_inputs (l, n, 1, 3, error))
    return FALSE;
  x = n->in[0];
  dt = elementwise_dtype (n);
  if (!elk__onnx_set_computed (l, n, 0, dt, x->rank, x->dims, error))
    return FALSE;
  out = n->out[0];
  if (elk__onnx_value_data (l, x) != NULL)
    {
      double *d = g_new (double, MAX (x->n_elements, 1));
      gboolean ok = TRUE;
      for (guint64 i = 0; i < x->n_elements && ok; i++)
        ok = elk__onnx_eval_unary (n->p->op_type, x->data[i], dt, &d[i]);
      if (keep_folded (out, d, ok))
        return TRUE;
    }
  elk__onnx_mark_data (l, x);
  return TRUE;
}

/* A Clip bound given as input @i: its value if it is a scalar known at
 * import, the default if the input is omitted.  FALSE when the bound is
 * an operand computed at run time or a graph input without data: then
 * it has no immediate value. */
static gboolean
clip_bound (Loader *l, Node *n, guint i, double def, double *out)
{
  Value *v = elk__onnx_in_value (n, i);

  if (v == NULL)
    {
      *out = def;
      return TRUE;
    }
  return elk__onnx_is_scalar_constant (l, v, out);
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
      if (!elk__onnx_attr_float (l, n, "min", -G_MAXFLOAT, &v[0], error)
          || !elk__onnx_attr_float (l, n, "max", G_MAXFLOAT, &v[1], error))
        return FALSE;
      if (clip_bound (l, n, 1, v[0], &v[0])
          && clip_bound (l, n, 2, v[1], &v[1]))
        elk__onnx_set_immediates (l, n->name, v, 2);
    }
  else if (strcmp (type, "LeakyRelu") == 0)
    {
      if (!elk__onnx_attr_float (l, n, "alpha", 0.01, &v[0], error))
        return FALSE;
      elk__onnx_set_immediates (l, n->name, v, 1);
    }
  else if (strcmp (type, "Elu") == 0)
    {
      if (!elk__onnx_attr_float (l, n, "alpha", 1.0, &v[0], error))
        return FALSE;
      elk__onnx_set_immediates (l, n->name, v, 1);
    }
  else if (strcmp (type, "HardSigmoid") == 0)
    {
      if (!elk__onnx_attr_float (l, n, "alpha", 0.2, &v[0], error)
          || !elk__onnx_attr_float (l, n, "beta", 0.5, &v[1], error))
        return FALSE;
      elk__onnx_set_immediates (l, n->name, v, 2);
    }
  return TRUE;
}

/* A binary operator one of whose inputs is a dropped scalar constant
 * (x / sqrt(d), Pow (x, 2), Min (x, 0)) is a unary operator of the other
 * input: its immediates are the constant and the constant's position (0:
 * the first input, as in 0 - x; 1: the second, as in x - 0). */
static void
scalar_immediates (Loader *l, Node *n)
{
  static const char *const binary[]
      = { "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min" };
  gboolean known = FALSE;

  for (guint i = 0; i < G_N_ELEMENTS (binary); i++)
    known = known || strcmp (n->p->op_type, binary[i]) == 0;
  if (!known || n->n_in != 2)
    return;
  for (guint i = 0; i < 2; i++)
    {
      const double *d;
      double v[2];
      if (n->in[i] == NULL || !elk__onnx_is_dropped_constant (n->in[i])
          || (d = elk__onnx_value_data (l, n->in[i])) == NULL)
        continue;
      v[0] = d[0];
      v[1] = i;
      elk__onnx_set_immediates (l, n->name, v, 2);
      return;
    }
}

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
      if (elk__onnx_is_dropped_constant (v))
        continue;
      ops[n_ops++] = v;
    }
  if (n_ops == 0)
    ops[n_ops++] = n->in[0];
  if (n_ops >= ELK_MAX_OPERANDS)
    return elk__onnx_node_unsupported (l, n, error,
                                       "more than 3 tensor operands");

  elk__onnx_ob_init (&b);
  for (guint i = 0; i < n_ops && ok; i++)
    {
      if (prelu_per_channel (n) && ops[i] == n->in[1])
        strcpy (letters, "b");
      else
        elk__onnx_broadcast_letters (ops[i], out->rank, out->dims, &next,
                                     letters);
      ok = elk__onnx_ob_input (l, n, &b, letters,
                               elk__onnx_tensor_for (l, n, ops[i], 0, NULL,
                                                     NULL, error),
                               error);
    }
  elk__onnx_plain_letters (out->rank, letters);
  ok = ok
       && elk__onnx_ob_emit (l, n, &b, letters,
                             elk__onnx_tensor_for (l, n, out, 0, NULL, NULL,
                                                   error),
                             n->p->op_type,
                             n_ops == 1 ? ELK_OP_UNARY : ELK_OP_ELEMENTWISE,
                             n->info->flops * (double) out->n_elements, error);
  elk__onnx_ob_clear (&b);
  if (ok && n_ops == 1)
    scalar_immediates (l, n);
  return ok && (n_ops > 1 || unary_immediates (l, n, error));
}

/* Elementwise with broadcasting, then unary.  flops is per output
 * element. */
static const OpInfo elementwise_ops[] = {
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

ELK_ONNX_DEFINE_FAMILY (elementwise, "element-wise");
