/* elk-onnx-linear.c: MatMul, Gemm, Conv and ConvTranspose, and the pooling
 * operators that share the convolution window geometry.
 */
#include "config.h"

#include <string.h>

#include "elk-onnx-private.h"

static gboolean
infer_matmul (Loader *l, Node *n, GError **error)
{
  Value *a, *b;
  gint64 dims[MAX_RANK], ka, kb;
  guint ra, rb, nb, r = 0;

  if (!elk__onnx_need_inputs (l, n, 2, 2, error))
    return FALSE;
  a = n->in[0];
  b = n->in[1];
  ra = a->rank;
  rb = b->rank;
  if (ra == 0 || rb == 0)
    return elk__onnx_node_error (l, n, error,
                                 "inputs must have rank 1 or more");
  ka = a->dims[ra - 1];
  kb = rb == 1 ? b->dims[0] : b->dims[rb - 2];
  if (ka != kb)
    {
      g_autofree char *sa = elk__onnx_shape_to_string (ra, a->dims);
      g_autofree char *sb = elk__onnx_shape_to_string (rb, b->dims);
      return elk__onnx_node_error (l, n, error,
                                   "cannot multiply %s by %s (inner "
                                   "extents %" G_GINT64_FORMAT
                                   " and %" G_GINT64_FORMAT ")",
                                   sa, sb, ka, kb);
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
        return elk__onnx_node_error (l, n, error,
                                     "batch extents %" G_GINT64_FORMAT
                                     " and %" G_GINT64_FORMAT " do not "
                                     "broadcast",
                                     da, db);
      dims[r++] = MAX (da, db);
    }
  if (ra > 1)
    dims[r++] = a->dims[ra - 2];
  if (rb > 1)
    dims[r++] = b->dims[rb - 1];
  elk__onnx_mark_data (l, a);
  if (!elk__onnx_input_is_activation (l, a) && b->kind == VK_INPUT)
    elk__onnx_mark_data (l, b);
  return elk__onnx_set_computed (l, n, 0, a->dtype, r, dims, error);
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

  elk__onnx_plain_letters (out->rank, lo);
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

  elk__onnx_ob_init (&b);
  ok = elk__onnx_ob_input (l, n, &b, la,
                           elk__onnx_tensor_for (l, n, a, 0, NULL, NULL, error),
                           error)
       && elk__onnx_ob_input (l, n, &b, lb,
                              elk__onnx_tensor_for (l, n, bv, 0, NULL, NULL,
                                                    error),
                              error)
       && elk__onnx_ob_emit (l, n, &b, lo,
                             elk__onnx_tensor_for (l, n, out, 0, NULL, NULL,
                                                   error),
                             "matmul", ELK_OP_MATMUL, -1, error);
  elk__onnx_ob_clear (&b);
  return ok;
}

static gboolean
infer_gemm (Loader *l, Node *n, GError **error)
{
  Value *a, *b, *c;
  gint64 ta, tb, dims[2], ka, kb;

  if (!elk__onnx_need_inputs (l, n, 2, 3, error)
      || !elk__onnx_attr_int (l, n, "transA", 0, &ta, error)
      || !elk__onnx_attr_int (l, n, "transB", 0, &tb, error))
    return FALSE;
  a = n->in[0];
  b = n->in[1];
  c = elk__onnx_in_value (n, 2);
  if (a->rank != 2 || b->rank != 2)
    return elk__onnx_node_error (l, n, error,
                                 "A and B must be matrices (ranks %u and "
                                 "%u)",
                                 a->rank, b->rank);
  dims[0] = a->dims[ta ? 1 : 0];
  ka = a->dims[ta ? 0 : 1];
  kb = b->dims[tb ? 1 : 0];
  dims[1] = b->dims[tb ? 0 : 1];
  if (ka != kb)
    return elk__onnx_node_error (l, n, error,
                                 "inner extents %" G_GINT64_FORMAT
                                 " and %" G_GINT64_FORMAT " differ",
                                 ka, kb);
  if (c != NULL)
    for (guint i = 0; i < c->rank; i++)
      {
        gint64 want = dims[2 - c->rank + i];
        if (c->rank > 2 || (c->dims[i] != 1 && c->dims[i] != want))
          return elk__onnx_node_error (l, n, error,
                                       "C of rank %u does not broadcast "
                                       "to [%" G_GINT64_FORMAT
                                       ", %" G_GINT64_FORMAT "]",
                                       c->rank, dims[0], dims[1]);
      }
  elk__onnx_mark_data (l, a);
  return elk__onnx_set_computed (l, n, 0, a->dtype, 2, dims, error);
}

static gboolean
lower_gemm (Loader *l, Node *n, GError **error)
{
  Value *a = n->in[0], *bv = n->in[1], *out = n->out[0];
  Value *c = elk__onnx_in_value (n, 2);
  gint64 ta = 0, tb = 0;
  double flops, scale[2];
  OpBuild b;
  gboolean ok;

  if (!elk__onnx_attr_int (l, n, "transA", 0, &ta, error)
      || !elk__onnx_attr_int (l, n, "transB", 0, &tb, error)
      || !elk__onnx_attr_float (l, n, "alpha", 1.0, &scale[0], error)
      || !elk__onnx_attr_float (l, n, "beta", 1.0, &scale[1], error))
    return FALSE;
  flops = 2.0 * (double) out->dims[0] * (double) out->dims[1]
          * (double) a->dims[ta ? 0 : 1];
  elk__onnx_ob_init (&b);
  /* Transposed operands are just a different index order in einsum. */
  ok = elk__onnx_ob_input (l, n, &b, ta ? "ca" : "ac",
                           elk__onnx_tensor_for (l, n, a, 0, NULL, NULL, error),
                           error)
       && elk__onnx_ob_input (l, n, &b, tb ? "bc" : "cb",
                              elk__onnx_tensor_for (l, n, bv, 0, NULL, NULL,
                                                    error),
                              error);
  if (ok && c != NULL)
    {
      char lc[3], next = 'd';
      elk__onnx_broadcast_letters (c, 2, out->dims, &next, lc);
      ok = elk__onnx_ob_input (l, n, &b, lc,
                               elk__onnx_tensor_for (l, n, c, 0, NULL, NULL,
                                                     error),
                               error);
      flops += (double) out->n_elements;
    }
  ok = ok
       && elk__onnx_ob_emit (l, n, &b, "ab",
                             elk__onnx_tensor_for (l, n, out, 0, NULL, NULL,
                                                   error),
                             "gemm", ELK_OP_MATMUL, flops, error);
  elk__onnx_ob_clear (&b);
  /* alpha scales the product and beta the bias C. */
  if (ok)
    elk__onnx_set_immediates (l, n->name, scale, 2);
  return ok;
}

/* Convolution and pooling geometry for one spatial axis. */
typedef struct
{
  gint64 in, kernel, stride, dilation, pad_begin, pad_end, out;
} Window;

static gboolean
window_geometry (Loader *l,
                 const Node *n,
                 guint n_sp,
                 const gint64 *in,
                 const gint64 *kernel,
                 gboolean transposed,
                 gboolean ceil_mode,
                 Window *w,
                 GError **error)
{
  gsize ns, nd, np, nop, nos;
  const int64_t *strides = elk__onnx_attr_ints (n, "strides", &ns);
  const int64_t *dil = elk__onnx_attr_ints (n, "dilations", &nd);
  const int64_t *pads = elk__onnx_attr_ints (n, "pads", &np);
  const int64_t *opad = elk__onnx_attr_ints (n, "output_padding", &nop);
  const int64_t *oshape = elk__onnx_attr_ints (n, "output_shape", &nos);
  g_autofree char *auto_pad = elk__onnx_attr_string (n, "auto_pad", "NOTSET");

  if ((strides && ns != n_sp) || (dil && nd != n_sp) || (pads && np != 2 * n_sp)
      || (opad && nop != n_sp) || (oshape && nos != n_sp && nos != n_sp + 2))
    return elk__onnx_node_error (l, n, error,
                                 "strides, dilations, pads or "
                                 "output_padding do not match %u spatial axes",
                                 n_sp);
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
        return elk__onnx_node_error (l, n, error,
                                     "kernel, stride, dilation or "
                                     "padding of axis %u is out of range",
                                     i);
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
            return elk__onnx_node_error (l, n, error, "unknown auto_pad '%s'",
                                         auto_pad);
          {
            gint64 span = x->in + x->pad_begin + x->pad_end - eff;
            if (span < 0)
              return elk__onnx_node_error (l, n, error,
                                           "the kernel (%" G_GINT64_FORMAT
                                           ") is larger than the padded "
                                           "input (%" G_GINT64_FORMAT
                                           ") in axis %u",
                                           eff,
                                           x->in + x->pad_begin + x->pad_end,
                                           i);
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
        return elk__onnx_node_error (l, n, error,
                                     "output extent of spatial axis %u "
                                     "is %" G_GINT64_FORMAT,
                                     i, x->out);
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

  if (!elk__onnx_need_inputs (l, n, 2, 3, error)
      || !elk__onnx_attr_int (l, n, "group", 1, &group, error))
    return FALSE;
  x = n->in[0];
  w = n->in[1];
  b = elk__onnx_in_value (n, 2);
  if (x->rank < 3 || w->rank != x->rank)
    return elk__onnx_node_error (l, n, error,
                                 "input and weight need the same rank of "
                                 "3 or more (got %u and %u)",
                                 x->rank, w->rank);
  n_sp = x->rank - 2;
  if (group <= 0 || x->dims[1] % group != 0)
    return elk__onnx_node_error (l, n, error,
                                 "group %" G_GINT64_FORMAT " does not "
                                 "divide the %" G_GINT64_FORMAT
                                 " input channels",
                                 group, x->dims[1]);
  if (!transposed && w->dims[1] * group != x->dims[1])
    return elk__onnx_node_error (l, n, error,
                                 "weight '%s' expects %" G_GINT64_FORMAT
                                 " input channels per group, the input has "
                                 "%" G_GINT64_FORMAT " in %" G_GINT64_FORMAT
                                 " groups",
                                 w->name, w->dims[1], x->dims[1], group);
  if (transposed && w->dims[0] != x->dims[1])
    return elk__onnx_node_error (l, n, error,
                                 "weight '%s' expects %" G_GINT64_FORMAT
                                 " input channels, the input has "
                                 "%" G_GINT64_FORMAT,
                                 w->name, w->dims[0], x->dims[1]);
  if (!transposed && w->dims[0] % group != 0)
    return elk__onnx_node_error (l, n, error,
                                 "group %" G_GINT64_FORMAT " does not "
                                 "divide the %" G_GINT64_FORMAT
                                 " output channels",
                                 group, w->dims[0]);
  ks = elk__onnx_attr_ints (n, "kernel_shape", &nk);
  for (guint i = 0; i < n_sp; i++)
    {
      kernel[i] = w->dims[2 + i];
      if (ks != NULL && (nk != n_sp || ks[i] != kernel[i]))
        return elk__onnx_node_error (l, n, error,
                                     "kernel_shape does not match the "
                                     "weight '%s'",
                                     w->name);
    }
  if (!window_geometry (l, n, n_sp, x->dims + 2, kernel, transposed, FALSE, win,
                        error))
    return FALSE;
  dims[0] = x->dims[0];
  dims[1] = transposed ? w->dims[1] * group : w->dims[0];
  for (guint i = 0; i < n_sp; i++)
    dims[2 + i] = win[i].out;
  if (b != NULL && (b->rank != 1 || b->dims[0] != dims[1]))
    return elk__onnx_node_error (l, n, error,
                                 "bias '%s' must have shape [%" G_GINT64_FORMAT
                                 "]",
                                 b->name, dims[1]);
  elk__onnx_mark_data (l, x);
  return elk__onnx_set_computed (l, n, 0, x->dtype, x->rank, dims, error);
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
  Value *x = n->in[0], *w = n->in[1], *bias = elk__onnx_in_value (n, 2);
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
    return elk__onnx_node_unsupported (l, n, error,
                                       "only 1-D and 2-D convolutions "
                                       "fit elk's 8 loop dimensions");
  if (!elk__onnx_attr_int (l, n, "group", 1, &group, error))
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

  elk__onnx_ob_init (&b);
  ok = elk__onnx_ob_input (l, n, &b, lx->str,
                           elk__onnx_tensor_for (l, n, x, xr, xd, "conv-input",
                                                 error),
                           error)
       && elk__onnx_ob_input (l, n, &b, lwt->str,
                              elk__onnx_tensor_for (l, n, w, wr, wd,
                                                    "conv-weight", error),
                              error);
  if (ok && bias != NULL)
    {
      gint64 bd[2] = { group, Kg };
      gboolean split = group > 1 && Kg > 1;
      ok = elk__onnx_ob_input (l, n, &b, split ? "gk" : "k",
                               elk__onnx_tensor_for (l, n, bias, split ? 2 : 1,
                                                     split ? bd : bias->dims,
                                                     "grouped", error),
                               error);
    }
  ok = ok
       && elk__onnx_ob_emit (l, n, &b, lo->str,
                             elk__onnx_tensor_for (l, n, out, orank, od,
                                                   "grouped", error),
                             n->bn != NULL ? "conv+batchnorm" : "conv",
                             ELK_OP_CONV, flops, error);
  elk__onnx_ob_clear (&b);
  g_string_free (lx, TRUE);
  g_string_free (lwt, TRUE);
  g_string_free (lo, TRUE);
  return ok;
}

static gboolean
lower_conv_transpose (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *w = n->in[1], *bias = elk__onnx_in_value (n, 2);
  Value *out = n->out[0];
  gint64 group, kernel[2], xd[4], wd[4];
  guint n_sp = x->rank - 2;
  Window win[2];
  double flops;
  OpBuild b;
  gboolean ok;

  if (!elk__onnx_attr_int (l, n, "group", 1, &group, error))
    return FALSE;
  if (n_sp > 2 || group != 1)
    return elk__onnx_node_unsupported (l, n, error,
                                       "only ungrouped 1-D and 2-D "
                                       "transposed convolutions are "
                                       "supported");
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
  flops
      = 2.0 * (double) x->dims[0] * (double) x->dims[1] * (double) out->dims[1];
  for (guint i = 0; i < n_sp; i++)
    {
      gint64 eff = win[i].dilation * (win[i].kernel - 1) + 1;
      xd[2 + i] = win[i].out + eff - 1;
      wd[2 + i] = eff;
      flops *= (double) x->dims[2 + i] * (double) kernel[i];
    }
  if (bias != NULL)
    flops += (double) out->n_elements;
  elk__onnx_ob_init (&b);
  ok = elk__onnx_ob_input (l, n, &b, n_sp == 2 ? "nch+rw+s" : "nch+r",
                           elk__onnx_tensor_for (l, n, x, x->rank, xd,
                                                 "zero-inserted", error),
                           error)
       && elk__onnx_ob_input (l, n, &b, n_sp == 2 ? "kcrs" : "kcr",
                              elk__onnx_tensor_for (l, n, w, w->rank, wd,
                                                    "transposed", error),
                              error);
  if (ok && bias != NULL)
    ok = elk__onnx_ob_input (l, n, &b, "k",
                             elk__onnx_tensor_for (l, n, bias, 0, NULL, NULL,
                                                   error),
                             error);
  ok = ok
       && elk__onnx_ob_emit (l, n, &b, n_sp == 2 ? "nkhw" : "nkh",
                             elk__onnx_tensor_for (l, n, out, 0, NULL, NULL,
                                                   error),
                             "convtranspose", ELK_OP_CONV, flops, error);
  elk__onnx_ob_clear (&b);
  return ok;
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

  if (!elk__onnx_need_inputs (l, n, 1, 1, error)
      || !elk__onnx_attr_int (l, n, "ceil_mode", 0, &ceil_mode, error))
    return FALSE;
  x = n->in[0];
  if (x->rank < 3)
    return elk__onnx_node_error (l, n, error, "input must have rank 3 or more");
  n_sp = x->rank - 2;
  ks = elk__onnx_attr_ints (n, "kernel_shape", &nk);
  if (ks == NULL || nk != n_sp)
    return elk__onnx_node_error (l, n, error,
                                 "needs kernel_shape with %u entries", n_sp);
  if (!window_geometry (l, n, n_sp, x->dims + 2, ks, FALSE, ceil_mode != 0, win,
                        error))
    return FALSE;
  if (n->n_out > 1 && n->out[1] != NULL && n->out[1]->n_uses > 0)
    return elk__onnx_node_unsupported (l, n, error,
                                       "its Indices output is used");
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  for (guint i = 0; i < n_sp; i++)
    dims[2 + i] = win[i].out;
  elk__onnx_mark_data (l, x);
  if (n->n_out > 1
      && !elk__onnx_set_computed (l, n, 1, DT_INT64, x->rank, dims, error))
    return FALSE;
  return elk__onnx_set_computed (l, n, 0, x->dtype, x->rank, dims, error);
}

static gboolean
lower_pool (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0], *out = n->out[0];
  gint64 ceil_mode, count_pad = 0, xd[MAX_RANK];
  double imm[5 * 2 + 1];
  gsize nk;
  const int64_t *ks = elk__onnx_attr_ints (n, "kernel_shape", &nk);
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
      return elk__onnx_node_unsupported (l, n, error,
                                         "only 1-D and 2-D pooling fits "
                                         "elk's 8 loop dimensions");
    }
  if (!elk__onnx_attr_int (l, n, "ceil_mode", 0, &ceil_mode, error)
      || (strcmp (n->p->op_type, "AveragePool") == 0
          && !elk__onnx_attr_int (l, n, "count_include_pad", 0, &count_pad,
                                  error))
      || !window_geometry (l, n, n_sp, x->dims + 2, ks, FALSE, ceil_mode != 0,
                           win, error))
    {
      g_string_free (lx, TRUE);
      return FALSE;
    }
  xd[0] = x->dims[0];
  xd[1] = x->dims[1];
  elk__onnx_ob_init (&b);
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
      elk__onnx_ob_extent (&b, tap_l[i], lw.r1);
      if (lw.phase > 1)
        {
          g_string_append_c (lx, ph_l[i]);
          xd[xr++] = lw.phase;
        }
    }
  ok = elk__onnx_ob_input (l, n, &b, lx->str,
                           elk__onnx_tensor_for (l, n, x, xr, xd, "pool-input",
                                                 error),
                           error)
       && elk__onnx_ob_emit (l, n, &b, n_sp == 2 ? "nchw" : "nch",
                             elk__onnx_tensor_for (l, n, out, 0, NULL, NULL,
                                                   error),
                             n->p->op_type, ELK_OP_POOL, flops, error);
  elk__onnx_ob_clear (&b);
  g_string_free (lx, TRUE);
  imm[5 * n_sp] = count_pad != 0;
  if (ok)
    elk__onnx_set_immediates (l, n->name, imm, 5 * n_sp + 1);
  return ok;
}

static gboolean
infer_global_pool (Loader *l, Node *n, GError **error)
{
  Value *x;
  gint64 dims[MAX_RANK];

  if (!elk__onnx_need_inputs (l, n, 1, 1, error))
    return FALSE;
  x = n->in[0];
  if (x->rank < 3)
    return elk__onnx_node_error (l, n, error, "input must have rank 3 or more");
  for (guint i = 0; i < x->rank; i++)
    dims[i] = i < 2 ? x->dims[i] : 1;
  elk__onnx_mark_data (l, x);
  return elk__onnx_set_computed (l, n, 0, x->dtype, x->rank, dims, error);
}

static gboolean
lower_global_pool (Loader *l, Node *n, GError **error)
{
  Value *x = n->in[0];
  char li[MAX_RANK + 1], lo[MAX_RANK + 1];
  char next = (char) ('a' + x->rank);

  elk__onnx_plain_letters (x->rank, li);
  for (guint i = 0; i < x->rank; i++)
    lo[i] = i < 2 ? li[i] : next++;
  lo[x->rank] = '\0';
  return elk__onnx_emit_unary (l, n, li, lo, n->p->op_type, ELK_OP_REDUCE,
                               (double) x->n_elements, error);
}

/* Matrix products, convolutions and pooling windows. */
static const OpInfo linear_ops[] = {
  { "MatMul", infer_matmul, lower_matmul, 0 },
  { "Gemm", infer_gemm, lower_gemm, 0 },
  { "Conv", infer_conv, lower_conv, 0 },
  { "ConvTranspose", infer_conv, lower_conv_transpose, 0 },
  { "MaxPool", infer_pool, lower_pool, 0 },
  { "AveragePool", infer_pool, lower_pool, 0 },
  { "GlobalAveragePool", infer_global_pool, lower_global_pool, 0 },
  { "GlobalMaxPool", infer_global_pool, lower_global_pool, 0 },
};

ELK_ONNX_DEFINE_FAMILY (linear, "linear");
