/* elk-onnx-quant.c: the quantized operators.
 *
 * QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear become
 * element-wise operators (DynamicQuantizeLinear with the max and min
 * reductions its scale needs); MatMulInteger, ConvInteger, QLinearMatMul
 * and QLinearConv become an integer matrix product or convolution, written
 * by the MatMul and Conv lowerings of elk-onnx-linear.c over the shifted
 * operands, followed for the QLinear ones by the requantization.
 *
 * Operands that carry a zero point are shifted first by a "sub" operator
 * (x - zero point, an int32 activation named "<node>/<input>-shifted"),
 * unless the zero point is a constant that is all zero (symmetric
 * quantization, the usual case for weights): a matrix product over the
 * shifted operands is then exactly ONNX's (a - a_zero_point) (b -
 * b_zero_point), and a convolution's zero padding is the padding with the
 * zero point that ONNX specifies.  Scales and zero points stay tensors
 * (per tensor, or per channel along an axis), because ONNX feeds them as
 * inputs and the reference tests give them as run-time data.
 *
 * Operator names: the product is named after the node for MatMulInteger
 * and ConvInteger, and "<node>#product" for the QLinear ones, whose last
 * operator (the requantization, writing the node's output) is named after
 * the node; the others are "<node>#<part>".  Element types: uint8 is
 * ELK_DTYPE_U8, int8 ELK_DTYPE_I8, the products' accumulators int32.
 * docs/frontend-onnx.md, "Quantized operators", lists what is refused.
 */
#include "config.h"

#include <string.h>

#include "elk-onnx-private.h"

/* Whether @v is a constant whose every element is zero: a zero point that
 * needs no shift. */
static gboolean
is_zero_constant (Loader *l, Value *v)
{
  const double *d;

  if (v == NULL)
    return TRUE;
  if (v->kind == VK_ACT || v->kind == VK_INPUT)
    return FALSE;
  d = elk__onnx_value_data (l, v);
  if (d == NULL)
    return FALSE;
  for (guint64 i = 0; i < v->n_elements; i++)
    if (d[i] != 0)
      return FALSE;
  return TRUE;
}

static gboolean
is_8bit (int dt)
{
  return dt == DT_UINT8 || dt == DT_INT8;
}

/* A scale or zero point of input @x: one element (per tensor), or 1-D
 * along @axis of @x (per channel) when @axis >= 0.  @what names it in the
 * error. */
static gboolean
check_param (Loader *l,
             Node *n,
             Value *p,
             const char *what,
             Value *x,
             gint axis,
             GError **error)
{
  if (p == NULL)
    return TRUE;
  if (p->n_elements == 1 && p->rank <= 1)
    return TRUE;
  if (axis >= 0 && p->rank == 1 && p->dims[0] == x->dims[axis])
    return TRUE;
  {
    g_autofree char *shape = elk__onnx_shape_to_string (p->rank, p->dims);
    if (axis < 0)
      return elk__onnx_node_error (l, n, error,
                                   "%s '%s' has shape %s; it must be one "
                                   "element (per tensor)",
                                   what, p->name, shape);
    return elk__onnx_node_error (l, n, error,
                                 "%s '%s' has shape %s; it must be one element "
                                 "(per tensor) or [%" G_GINT64_FORMAT
                                 "] (per channel along axis %d of '%s')",
                                 what, p->name, shape, x->dims[axis], axis,
                                 x->name);
  }
}

/* The letters of a scale or zero point @p seen by an operator whose
 * output has the plain letters of @rank axes: nothing for a scalar, the
 * letter of @axis when per channel, a fresh loop dimension of extent 1 for
 * a 1-element vector. */
static void
param_letters (const Value *p, gint axis, guint rank, char *next, char *out)
{
  (void) rank;
  if (p->rank == 0)
    out[0] = '\0';
  else if (axis >= 0 && p->n_elements > 1)
    {
      out[0] = (char) ('a' + axis);
      out[1] = '\0';
    }
  else
    {
      out[0] = (*next)++;
      out[1] = '\0';
    }
}

/* The quantization axis of QuantizeLinear and DequantizeLinear, or -1
 * when the scale is per tensor. */
static gboolean
quant_axis (Loader *l, Node *n, Value *x, gint *axis, GError **error)
{
  Value *scale = n->in[1];
  gint64 a;
  guint ax;

  *axis = -1;
  if (scale->n_elements == 1 && scale->rank <= 1)
    return TRUE;
  if (l->opset < 13)
    return elk__onnx_node_error (l, n, error,
                                 "scale '%s' is not one element; per-axis "
                                 "quantization needs opset 13 or later "
                                 "(the model has %" G_GINT64_FORMAT ")",
                                 scale->name, l->opset);
  if (!elk__onnx_attr_int (l, n, "axis", 1, &a, error)
      || !elk__onnx_norm_axis (l, n, a, x->rank, &ax, error))
    return FALSE;
  *axis = (gint) ax;
  return TRUE;
}

/* ONNX 1.12's QuantizeLinear and DequantizeLinear take no other
 * attribute; a later one (saturate, block_size) means semantics elk does
 * not implement, so it is refused rather than ignored. */
static gboolean
refuse_attrs (Loader *l, Node *n, GError **error)
{
  static const char *const later[]
      = { "saturate", "block_size", "output_dtype" };
  for (guint i = 0; i < G_N_ELEMENTS (later); i++)
    if (elk__onnx_find_attr (n, later[i]) != NULL)
      {
        g_autofree char *why
            = g_strdup_printf ("attribute '%s' (ONNX opset 19 and later) is "
                               "not supported; elk "
                               "quantizes to uint8 and int8 with saturation",
                               later[i]);
        return elk__onnx_node_unsupported (l, n, error, why);
      }
  return TRUE;
}

/* A zero point @zp (if any) has the type of its input @x. */
static gboolean
check_zp_type (Loader *l, Node *n, Value *x, Value *zp, GError **error)
{
  if (zp != NULL && zp->dtype != x->dtype)
    return elk__onnx_node_error (l, n, error,
                                 "zero point '%s' has type %s, the input "
                                 "'%s' %s; they must be the same",
                                 zp->name, elk__onnx_dtype_name (zp->dtype),
                                 x->name, elk__onnx_dtype_name (x->dtype));
  return TRUE;
}

/* The input, scale and optional zero point of QuantizeLinear or
 * DequantizeLinear, whose scale must be float in both. */
static gboolean
quant_inputs (
    Loader *l, Node *n, Value **x, Value **scale, Value **zp, GError **error)
{
  if (!elk__onnx_need_inputs (l, n, 2, 3, error) || !refuse_attrs (l, n, error))
    return FALSE;
  *x = n->in[0];
  *scale = n->in[1];
  *zp = elk__onnx_in_value (n, 2);
  if (!elk__onnx_dtype_is_float ((*scale)->dtype))
    return elk__onnx_node_error (l, n, error,
                                 "scale '%s' has type %s; it must be float",
                                 (*scale)->name,
                                 elk__onnx_dtype_name ((*scale)->dtype));
  return TRUE;
}

/* The quantization axis of @x (-1 per tensor), and that @scale and @zp
 * fit it. */
static gboolean
quant_params (Loader *l,
              Node *n,
              Value *x,
              Value *scale,
              Value *zp,
              gint *axis,
              GError **error)
{
  return quant_axis (l, n, x, axis, error)
         && check_param (l, n, scale, "scale", x, *axis, error)
         && check_param (l, n, zp, "zero point", x, *axis, error);
}

static gboolean
infer_quantize (Loader *l, Node *n, GError **error)
{
  Value *x, *scale, *zp;
  gint axis;
  int dt;

  if (!quant_inputs (l, n, &x, &scale, &zp, error))
    return FALSE;
  if (!elk__onnx_dtype_is_float (x->dtype) && x->dtype != DT_INT32)
    return elk__onnx_node_error (l, n, error,
                                 "input '%s' has type %s; QuantizeLinear "
                                 "takes float or int32",
                                 x->name, elk__onnx_dtype_name (x->dtype));
  dt = zp != NULL ? zp->dtype : DT_UINT8;
  if (!is_8bit (dt))
    {
      g_autofree char *why
          = g_strdup_printf ("zero point '%s' has type %s; elk quantizes to "
                             "uint8 and int8",
                             zp->name, elk__onnx_dtype_name (dt));
      return elk__onnx_node_unsupported (l, n, error, why);
    }
  if (!quant_params (l, n, x, scale, zp, &axis, error))
    return FALSE;
  if (zp != NULL && axis >= 0 && zp->n_elements != scale->n_elements)
    return elk__onnx_node_error (l, n, error,
                                 "zero point '%s' has %" G_GUINT64_FORMAT
                                 " elements, the scale '%s' %" G_GUINT64_FORMAT,
                                 zp->name, zp->n_elements, scale->name,
                                 scale->n_elements);
  elk__onnx_mark_data (l, x);
  return elk__onnx_set_computed (l, n, 0, dt, x->rank, x->dims, error);
}

static gboolean
infer_dequantize (Loader *l, Node *n, GError **error)
{
  Value *x, *scale, *zp;
  gint axis;

  if (!quant_inputs (l, n, &x, &scale, &zp, error))
    return FALSE;
  if (!is_8bit (x->dtype) && x->dtype != DT_INT32)
    {
      g_autofree char *why
          = g_strdup_printf ("input '%s' has type %s; elk dequantizes uint8, "
                             "int8 and int32",
                             x->name, elk__onnx_dtype_name (x->dtype));
      return elk__onnx_node_unsupported (l, n, error, why);
    }
  if (!check_zp_type (l, n, x, zp, error))
    return FALSE;
  if (x->dtype == DT_INT32 && !is_zero_constant (l, zp))
    return elk__onnx_node_error (l, n, error,
                                 "an int32 input needs a zero point of 0 "
                                 "('%s' is not a constant 0)",
                                 zp->name);
  if (!quant_params (l, n, x, scale, zp, &axis, error))
    return FALSE;
  return elk__onnx_set_computed (l, n, 0, DT_FLOAT, x->rank, x->dims, error);
}

/* y = saturate (round (x / scale) + zero point), or y = (x - zero point)
 * * scale: one element-wise operator over the input and its parameters. */
static gboolean
lower_quantize (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *out = n->out[0];
  Value *params[2] = { n->in[1], elk__onnx_in_value (n, 2) };
  gboolean quantize = strcmp (n->p->op_type, "QuantizeLinear") == 0;
  char letters[MAX_RANK + 1], next = (char) ('a' + x->rank);
  gint axis = -1;
  OpBuild b;
  gboolean ok;

  if (!quant_axis (l, n, x, &axis, error))
    return FALSE;
  elk__onnx_plain_letters (x->rank, letters);
  elk__onnx_ob_init (&b);
  ok = elk__onnx_ob_input (l, n, &b, letters,
                           elk__onnx_tensor_of (l, n, x, error), error);
  for (guint i = 0; i < 2 && ok; i++)
    {
      char pl[2];
      if (params[i] == NULL)
        continue;
      param_letters (params[i], axis, x->rank, &next, pl);
      ok = elk__onnx_ob_input (l, n, &b, pl,
                               elk__onnx_tensor_of (l, n, params[i], error),
                               error);
    }
  ok = ok
       && elk__onnx_ob_emit (l, n, &b, letters,
                             elk__onnx_tensor_of (l, n, out, error),
                             quantize ? "quantize-linear" : "dequantize-linear",
                             ELK_OP_ELEMENTWISE,
                             (quantize ? 3.0 : 2.0) * (double) out->n_elements,
                             error);
  elk__onnx_ob_clear (&b);
  return ok;
}

/* ---- DynamicQuantizeLinear ---- */

/* A value computed between the operators a node is lowered into,
 * "<node>/<what>", created by the node's inference and found again by its
 * lowering. */
static Value *
scratch_value (Loader *l,
               Node *n,
               const char *what,
               int dtype,
               guint rank,
               const gint64 *dims,
               GError **error)
{
  g_autofree char *name = g_strdup_printf ("%s/%s", n->name, what);
  Value *v = elk__onnx_lookup_value (l, name);

  if (v == NULL)
    v = elk__onnx_new_value (l, name);
  else if (v->kind != VK_ACT || v->producer >= 0)
    {
      elk__onnx_node_error (l, n, error,
                            "the model has a value named '%s', the name "
                            "elk gives the %s it computes for this node",
                            name, what);
      return NULL;
    }
  if (!elk__onnx_value_set_shape (l, v, dtype, rank, dims, error))
    return NULL;
  v->kind = VK_ACT;
  return v;
}

static Value *
find_scratch (Loader *l, Node *n, const char *what)
{
  g_autofree char *name = g_strdup_printf ("%s/%s", n->name, what);
  return elk__onnx_lookup_value (l, name);
}

static gboolean
infer_dynamic_quantize (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 one = 1;

  if (!elk__onnx_need_inputs (l, n, 1, 1, error))
    return FALSE;
  x = n->in[0];
  if (x->dtype != DT_FLOAT)
    return elk__onnx_node_error (l, n, error,
                                 "input '%s' has type %s; "
                                 "DynamicQuantizeLinear takes float",
                                 x->name, elk__onnx_dtype_name (x->dtype));
  if (x->rank + 1 > ELK_MAX_DIMS)
    return elk__onnx_node_unsupported (l, n, error,
                                       "the input's rank leaves no loop "
                                       "dimension for the reductions");
  elk__onnx_mark_data (l, x);
  return scratch_value (l, n, "max", DT_FLOAT, 1, &one, error) != NULL
         && scratch_value (l, n, "min", DT_FLOAT, 1, &one, error) != NULL
         && elk__onnx_set_computed (l, n, 0, DT_UINT8, x->rank, x->dims, error)
         && elk__onnx_set_computed (l, n, 1, DT_FLOAT, 0, NULL, error)
         && elk__onnx_set_computed (l, n, 2, DT_UINT8, 0, NULL, error);
}

/* One operator named "<node>#<part>" (or after the node when @part is
 * NULL) of @n_in inputs with their letters. */
static gboolean
emit_part (Loader *l,
           Node *n,
           const char *part,
           Value *const *in,
           const char *const *in_letters,
           guint n_in,
           Value *out,
           const char *out_letters,
           const char *type,
           ElkOpKind kind,
           double flops,
           GError **error)
{
  g_autofree char *name = part != NULL
                              ? g_strdup_printf ("%s#%s", n->name, part)
                              : g_strdup (n->name);
  OpBuild b;
  gboolean ok = TRUE;

  elk__onnx_ob_init (&b);
  for (guint i = 0; i < n_in && ok; i++)
    ok = elk__onnx_ob_input (l, n, &b, in_letters[i],
                             elk__onnx_tensor_of (l, n, in[i], error), error);
  ok = ok
       && elk__onnx_ob_emit_named (l, n, &b, name, out_letters,
                                   elk__onnx_tensor_of (l, n, out, error), type,
                                   kind, flops, error);
  elk__onnx_ob_clear (&b);
  return ok;
}

/* The maximum and minimum of x over every element (reductions into one
 * element), the scale (max (0, max) - min (0, min)) / 255 and the zero
 * point saturate (round (-min (0, min) / scale)), and the quantization
 * of x with them, as ONNX defines DynamicQuantizeLinear. */
static gboolean
lower_dynamic_quantize (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *mx = find_scratch (l, n, "max");
  Value *mn = find_scratch (l, n, "min");
  Value *y = n->out[0];
  Value *scale = n->n_out > 1 ? n->out[1] : NULL;
  Value *zp = n->n_out > 2 ? n->out[2] : NULL;
  char xl[MAX_RANK + 1], one[2] = { (char) ('a' + x->rank), '\0' };
  double n_x = (double) x->n_elements;

  g_assert (mx != NULL && mn != NULL);
  if (scale == NULL || zp == NULL)
    return elk__onnx_node_unsupported (l, n, error,
                                       "the scale and zero point outputs are "
                                       "needed by the quantization itself; "
                                       "give them names");
  elk__onnx_plain_letters (x->rank, xl);
  {
    const char *lx[1] = { xl }, *lmm[2] = { one, one };
    const char *lq[3] = { xl, "", "" };
    Value *mm[2] = { mx, mn }, *q[3] = { x, scale, zp };
    return emit_part (l, n, "max", &x, lx, 1, mx, one, "max", ELK_OP_REDUCE,
                      n_x, error)
           && emit_part (l, n, "min", &x, lx, 1, mn, one, "min", ELK_OP_REDUCE,
                         n_x, error)
           && emit_part (l, n, "scale", mm, lmm, 2, scale, "",
                         "dynamic-quant-scale", ELK_OP_ELEMENTWISE, 4, error)
           && emit_part (l, n, "zero-point", mm, lmm, 2, zp, "",
                         "dynamic-quant-zero-point", ELK_OP_ELEMENTWISE, 8,
                         error)
           && emit_part (l, n, NULL, q, lq, 3, y, xl, "quantize-linear",
                         ELK_OP_ELEMENTWISE, 3.0 * n_x, error);
  }
}

/* ---- Integer products ---- */

/* The operand @x of a product as the product reads it: @x itself when its
 * zero point @zp is absent or a constant zero, else the shifted operand
 * "<node>/<what>-shifted" (int32).  Inference creates it, lowering finds
 * it. */
static Value *
shifted (Loader *l,
         Node *n,
         Value *x,
         Value *zp,
         const char *what,
         gboolean create,
         GError **error)
{
  g_autofree char *tag = g_strdup_printf ("%s-shifted", what);

  if (is_zero_constant (l, zp))
    return x;
  if (!create)
    return find_scratch (l, n, tag);
  return scratch_value (l, n, tag, DT_INT32, x->rank, x->dims, error);
}

/* The operator x - zero point writing the shifted operand, the zero point
 * per tensor or along @axis of @x. */
static gboolean
lower_shift (Loader *l,
             Node *n,
             Value *x,
             Value *zp,
             gint axis,
             const char *what,
             GError **error)
{
  Value *xs = shifted (l, n, x, zp, what, FALSE, error);
  char xl[MAX_RANK + 1], zl[2], next = (char) ('a' + x->rank);
  g_autofree char *part = g_strdup_printf ("%s-shift", what);
  Value *in[2] = { x, zp };
  const char *letters[2] = { xl, zl };

  if (xs == x)
    return TRUE;
  g_assert (xs != NULL);
  elk__onnx_plain_letters (x->rank, xl);
  param_letters (zp, axis, x->rank, &next, zl);
  return emit_part (l, n, part, in, letters, 2, xs, xl, "sub",
                    ELK_OP_ELEMENTWISE, (double) x->n_elements, error);
}

/* The node seen as the MatMul or Conv over the shifted operands @a and
 * @b (and @bias), writing @out, named @name: what the linear family's
 * inference and lowering read. */
static Node
product_node (Node *n, Value **in, guint n_in, Value **out, const char *name)
{
  Node t = *n;
  t.in = in;
  t.n_in = n_in;
  t.out = out;
  t.n_out = 1;
  t.bn = NULL;
  t.fuse = FUSE_NONE;
  t.sub = NULL;
  t.expansion = NULL;
  t.name = (char *) name;
  return t;
}

static gboolean
is_conv (const Node *n)
{
  return strstr (n->p->op_type, "Conv") != NULL;
}

/* The axis along which each operand's zero point may be per channel:
 * MatMul's rows of A and columns of B, Conv's output channels of W (its
 * input's zero point is per tensor, as ONNX says). */
static void
zp_axes (const Node *n, Value *a, Value *b, gint *a_axis, gint *b_axis)
{
  if (is_conv (n))
    {
      *a_axis = -1;
      *b_axis = 0;
    }
  else
    {
      *a_axis = a->rank >= 2 ? (gint) a->rank - 2 : -1;
      *b_axis = b->rank >= 2 ? (gint) b->rank - 1 : -1;
    }
}

/* A product's operands, their zero points, its bias (QLinearConv's; NULL
 * otherwise) and the axes along which each zero point may be per
 * channel. */
typedef struct
{
  Value *a, *a_zp, *b, *b_zp, *bias;
  gint a_axis, b_axis;
} Operands;

static void
product_operands (const Node *n, Operands *o)
{
  gboolean qlinear = g_str_has_prefix (n->p->op_type, "QLinear");

  o->a = n->in[0];
  o->a_zp = elk__onnx_in_value (n, 2);
  o->b = n->in[qlinear ? 3 : 1];
  o->b_zp = elk__onnx_in_value (n, qlinear ? 5 : 3);
  o->bias = qlinear ? elk__onnx_in_value (n, 8) : NULL;
  zp_axes (n, o->a, o->b, &o->a_axis, &o->b_axis);
}

static gboolean
check_operand (Loader *l, Node *n, Value *x, Value *zp, GError **error)
{
  if (!is_8bit (x->dtype))
    {
      g_autofree char *why
          = g_strdup_printf ("input '%s' has type %s; elk multiplies uint8 and "
                             "int8",
                             x->name, elk__onnx_dtype_name (x->dtype));
      return elk__onnx_node_unsupported (l, n, error, why);
    }
  return check_zp_type (l, n, x, zp, error);
}

/* The product's name: after the node for MatMulInteger and ConvInteger,
 * "<node>#product" for the QLinear operators, whose requantization
 * writes the node's output. */
static char *
product_name (const Node *n)
{
  return g_str_has_prefix (n->p->op_type, "QLinear")
             ? g_strdup_printf ("%s#product", n->name)
             : g_strdup (n->name);
}

/* Inference of the product: the operands, their zero points, the shifted
 * operands, and the int32 result (the node's output, or the accumulator
 * "<node>/product" for the QLinear operators) by the MatMul or Conv
 * inference. */
static gboolean
infer_product (Loader *l, Node *n, Value **acc_out, GError **error)
{
  Operands o;
  Value *a, *b, *azp, *bzp, *as, *bs, *bias, *acc;
  Value *in[3];
  g_autofree char *name = product_name (n);
  const OpInfo *linear = elk__onnx_find_op (is_conv (n) ? "Conv" : "MatMul");
  Node t;

  product_operands (n, &o);
  a = o.a;
  b = o.b;
  azp = o.a_zp;
  bzp = o.b_zp;
  bias = o.bias;
  if (!check_operand (l, n, a, azp, error)
      || !check_operand (l, n, b, bzp, error)
      || !check_param (l, n, azp, "zero point", a, o.a_axis, error)
      || !check_param (l, n, bzp, "zero point", b, o.b_axis, error))
    return FALSE;
  if (bias != NULL && bias->dtype != DT_INT32)
    return elk__onnx_node_error (l, n, error,
                                 "bias '%s' has type %s; it must be int32",
                                 bias->name,
                                 elk__onnx_dtype_name (bias->dtype));
  /* The product reads the shifted operand, so the linear inference
   * cannot see that the graph input behind it is data. */
  elk__onnx_mark_data (l, a);
  in[0] = shifted (l, n, a, azp, "a", TRUE, error);
  in[1] = in[0] != NULL ? shifted (l, n, b, bzp, "b", TRUE, error) : NULL;
  in[2] = bias;
  if (in[0] == NULL || in[1] == NULL)
    return FALSE;
  acc = n->out[0];
  if (g_str_has_prefix (n->p->op_type, "QLinear"))
    {
      acc = scratch_value (l, n, "product", DT_INT32, 0, NULL, error);
      if (acc == NULL)
        return FALSE;
      as = n->in[1];
      bs = n->in[4];
      if (!check_param (l, n, as, "scale", a, -1, error)
          || !check_param (l, n, bs, "scale", b, o.b_axis, error))
        return FALSE;
    }
  t = product_node (n, in, bias != NULL ? 3 : 2, &acc, name);
  if (!linear->infer (l, &t, error))
    return FALSE;
  acc->dtype = DT_INT32;
  acc->kind = VK_ACT;
  *acc_out = acc;
  return TRUE;
}

static gboolean
lower_product (Loader *l, Node *n, GError **error)
{
  Operands o;
  Value *acc, *in[3];
  g_autofree char *name = product_name (n);
  const OpInfo *linear = elk__onnx_find_op (is_conv (n) ? "Conv" : "MatMul");
  Node t;

  product_operands (n, &o);
  if (!lower_shift (l, n, o.a, o.a_zp, o.a_axis, "a", error)
      || !lower_shift (l, n, o.b, o.b_zp, o.b_axis, "b", error))
    return FALSE;
  in[0] = shifted (l, n, o.a, o.a_zp, "a", FALSE, error);
  in[1] = shifted (l, n, o.b, o.b_zp, "b", FALSE, error);
  in[2] = o.bias;
  acc = g_str_has_prefix (n->p->op_type, "QLinear")
            ? find_scratch (l, n, "product")
            : n->out[0];
  g_assert (in[0] != NULL && in[1] != NULL && acc != NULL);
  t = product_node (n, in, o.bias != NULL ? 3 : 2, &acc, name);
  return linear->lower (l, &t, error);
}

static gboolean
infer_integer (Loader *l, Node *n, GError **error)
{
  Value *acc;

  if (!elk__onnx_need_inputs (l, n, 2, 4, error))
    return FALSE;
  return infer_product (l, n, &acc, error);
}

/* QLinearMatMul (a, a_scale, a_zero_point, b, b_scale, b_zero_point,
 * y_scale, y_zero_point) and QLinearConv (x, x_scale, x_zero_point, w,
 * w_scale, w_zero_point, y_scale, y_zero_point[, B]): the product, the
 * multiplier a_scale * b_scale / y_scale ("<node>/multiplier", per tensor
 * or per output channel) and the requantization. */
static gboolean
infer_qlinear (Loader *l, Node *n, GError **error)
{
  gboolean conv = is_conv (n);
  Value *acc, *as, *bs, *ys, *yzp;
  gint64 m_dim;

  if (!elk__onnx_need_inputs (l, n, 8, conv ? 9 : 8, error))
    return FALSE;
  if (!infer_product (l, n, &acc, error))
    return FALSE;
  as = n->in[1];
  bs = n->in[4];
  ys = n->in[6];
  yzp = n->in[7];
  for (guint i = 0; i < 3; i++)
    {
      Value *s = i == 0 ? as : i == 1 ? bs : ys;
      if (!elk__onnx_dtype_is_float (s->dtype))
        return elk__onnx_node_error (l, n, error,
                                     "scale '%s' has type %s; it must be "
                                     "float",
                                     s->name, elk__onnx_dtype_name (s->dtype));
    }
  if (!is_8bit (yzp->dtype))
    {
      g_autofree char *why
          = g_strdup_printf ("output zero point '%s' has type %s; elk "
                             "quantizes to uint8 and "
                             "int8",
                             yzp->name, elk__onnx_dtype_name (yzp->dtype));
      return elk__onnx_node_unsupported (l, n, error, why);
    }
  if (!check_param (l, n, ys, "scale", acc, -1, error)
      || !check_param (l, n, yzp, "zero point", acc, -1, error))
    return FALSE;
  m_dim = bs->n_elements;
  return scratch_value (l, n, "multiplier", DT_FLOAT, 1, &m_dim, error) != NULL
         && elk__onnx_set_computed (l, n, 0, yzp->dtype, acc->rank, acc->dims,
                                    error);
}

static gboolean
lower_qlinear (Loader *l, Node *n, GError **error)
{
  Value *acc = find_scratch (l, n, "product");
  Value *m = find_scratch (l, n, "multiplier");
  Value *as = n->in[1], *bs = n->in[4], *ys = n->in[6], *yzp = n->in[7];
  Value *out = n->out[0];
  gint axis = is_conv (n) ? 1 : (gint) out->rank - 1;
  char ol[MAX_RANK + 1], next = 'b', la[2], lb[2], ly[2], lm[2], lz[2];
  gboolean per_channel = bs->n_elements > 1;

  g_assert (acc != NULL && m != NULL);
  if (!lower_product (l, n, error))
    return FALSE;
  /* The multiplier's one axis is 'a'; scales of one element get fresh
   * loop dimensions of extent 1. */
  param_letters (as, -1, 1, &next, la);
  lb[0] = 'a';
  lb[1] = '\0';
  if (bs->rank == 0)
    lb[0] = '\0';
  param_letters (ys, -1, 1, &next, ly);
  {
    Value *in[3] = { as, bs, ys };
    const char *letters[3] = { la, lb, ly };
    if (!emit_part (l, n, "multiplier", in, letters, 3, m, "a",
                    "requantize-scale", ELK_OP_ELEMENTWISE, 2 * m->n_elements,
                    error))
      return FALSE;
  }
  elk__onnx_plain_letters (out->rank, ol);
  next = (char) ('a' + out->rank);
  if (per_channel)
    {
      lm[0] = (char) ('a' + axis);
      lm[1] = '\0';
    }
  else
    param_letters (m, -1, out->rank, &next, lm);
  param_letters (yzp, -1, out->rank, &next, lz);
  {
    Value *in[3] = { acc, m, yzp };
    const char *letters[3] = { ol, lm, lz };
    return emit_part (l, n, NULL, in, letters, 3, out, ol, "requantize",
                      ELK_OP_ELEMENTWISE, 3.0 * (double) out->n_elements,
                      error);
  }
}

static const OpInfo quant_ops[] = {
  { "QuantizeLinear", infer_quantize, lower_quantize, 3 },
  { "DequantizeLinear", infer_dequantize, lower_quantize, 2 },
  { "DynamicQuantizeLinear", infer_dynamic_quantize, lower_dynamic_quantize,
    3 },
  { "MatMulInteger", infer_integer, lower_product, 0 },
  { "ConvInteger", infer_integer, lower_product, 0 },
  { "QLinearMatMul", infer_qlinear, lower_qlinear, 0 },
  { "QLinearConv", infer_qlinear, lower_qlinear, 0 },
};

ELK_ONNX_DEFINE_FAMILY (quant, "quantized");
