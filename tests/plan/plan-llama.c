/* plan-llama.c: Llama2-70B decode as an ElkGraph, by hand.
 *
 * Shapes: hidden 8192, 64 query heads in 8 KV groups of 8, head dim 128,
 * FFN 28672, vocabulary 32000, FP16.  QKV is one fused MatMul
 * 8192 x (8192 + 2 x 1024).  Attention reads the KV cache (seq x 128 per
 * KV head) from HBM; the query heads of a group are a loop dimension of
 * their own ("g"), so QK^T and PV are five-dimensional MatMuls.  Reshapes
 * are views and not operators, as in the Elk artifact, so the tensors
 * after a reshape are fresh activations here.
 */
#include "plan-llama.h"

#include <stdarg.h>

typedef struct
{
  ElkGraph *graph;
  guint layer;
} Builder;

static guint32
tensor (Builder *b, ElkTensorOrigin origin, const char *name, guint n_dims,
        ...)
{
  guint64 shape[ELK_MAX_DIMS];
  g_autofree char *full = g_strdup_printf ("l%u.%s", b->layer, name);
  GError *error = NULL;
  va_list ap;
  gint id;

  va_start (ap, n_dims);
  for (guint i = 0; i < n_dims; i++)
    shape[i] = va_arg (ap, guint64);
  va_end (ap);
  id = elk_graph_add_tensor (b->graph, full, ELK_DTYPE_F16, origin, n_dims,
                             shape, 0, &error);
  g_assert_no_error (error);
  return (guint32) id;
}

static void
op (Builder *b, const char *name, ElkOpKind kind, const char *spec,
    guint n, guint32 t0, guint32 t1, guint32 t2)
{
  g_autofree char *full = g_strdup_printf ("l%u.%s", b->layer, name);
  guint32 tensors[3] = { t0, t1, t2 };
  GError *error = NULL;

  elk_graph_add_op (b->graph, full, name, kind, (gint32) b->layer, spec,
                    tensors, n, NULL, &error);
  g_assert_no_error (error);
}

#define ACT ELK_TENSOR_ORIGIN_ACTIVATION
#define WGT ELK_TENSOR_ORIGIN_WEIGHT
#define KV ELK_TENSOR_ORIGIN_KV_CACHE

static guint32
rmsnorm (Builder *b, const char *name, guint32 x, guint64 bt, guint64 h)
{
  g_autofree char *n1 = g_strconcat (name, ".ss", NULL);
  g_autofree char *n2 = g_strconcat (name, ".scale", NULL);
  g_autofree char *n3 = g_strconcat (name, ".w", NULL);
  g_autofree char *n4 = g_strconcat (name, ".out", NULL);
  guint32 ss = tensor (b, ACT, n1, 1, bt);
  guint32 xn = tensor (b, ACT, n2, 2, bt, h);
  guint32 w = tensor (b, WGT, n3, 1, h);
  guint32 out = tensor (b, ACT, n4, 2, bt, h);

  op (b, n1, ELK_OP_REDUCE, "bd->b", 2, x, ss, 0);
  op (b, n2, ELK_OP_ELEMENTWISE, "bd,b->bd", 3, x, ss, xn);
  op (b, n3, ELK_OP_ELEMENTWISE, "bd,d->bd", 3, xn, w, out);
  return out;
}

/**
 * plan_test_llama2_70b_decode:
 * @layers: decoder layers (80 for the real model)
 *
 * Returns: (transfer full): the decode step of Llama2-70B for @batch
 *   sequences with @seq cached tokens.
 */
ElkGraph *
plan_test_llama2_70b_decode (guint batch, guint seq, guint layers)
{
  const guint64 bt = batch, h = 8192, kvh = 8, g = 8, hd = 128, f = 28672;
  const guint64 vocab = 32000, qkv_n = 8192 + 2 * 1024;
  Builder b = { elk_graph_new ("llama2-70b-decode"), 0 };
  guint32 x;

  x = tensor (&b, ACT, "x", 2, bt, h);
  for (guint l = 0; l < layers; l++)
    {
      guint32 xa, wqkv, qkv, q, cos, qr, k, kr, kc, s, mx, e, sum, p, vc;
      guint32 o, of, wo, ao, h1, xb, wg, gt, wu, u, sg, m, wd, dn, out;

      b.layer = l;
      xa = rmsnorm (&b, "attn_norm", x, bt, h);
      wqkv = tensor (&b, WGT, "wqkv", 2, h, qkv_n);
      qkv = tensor (&b, ACT, "qkv", 2, bt, qkv_n);
      op (&b, "qkv", ELK_OP_MATMUL, "bk,kn->bn", 3, xa, wqkv, qkv);

      q = tensor (&b, ACT, "q", 4, bt, kvh, g, hd);
      cos = tensor (&b, ACT, "rope_table", 2, bt, hd);
      qr = tensor (&b, ACT, "q_rope", 4, bt, kvh, g, hd);
      op (&b, "rope_q", ELK_OP_ELEMENTWISE, "bhgd,bd->bhgd", 3, q, cos, qr);
      k = tensor (&b, ACT, "k", 3, bt, kvh, hd);
      kr = tensor (&b, ACT, "k_rope", 3, bt, kvh, hd);
      op (&b, "rope_k", ELK_OP_ELEMENTWISE, "bhd,bd->bhd", 3, k, cos, kr);

      kc = tensor (&b, KV, "k_cache", 4, bt, kvh, (guint64) seq, hd);
      s = tensor (&b, ACT, "scores", 4, bt, kvh, g, (guint64) seq);
      op (&b, "qk", ELK_OP_MATMUL, "bhgd,bhtd->bhgt", 3, qr, kc, s);
      mx = tensor (&b, ACT, "max", 3, bt, kvh, g);
      op (&b, "softmax_max", ELK_OP_REDUCE, "bhgt->bhg", 2, s, mx, 0);
      e = tensor (&b, ACT, "exp", 4, bt, kvh, g, (guint64) seq);
      op (&b, "softmax_exp", ELK_OP_ELEMENTWISE, "bhgt,bhg->bhgt", 3, s, mx,
          e);
      sum = tensor (&b, ACT, "sum", 3, bt, kvh, g);
      op (&b, "softmax_sum", ELK_OP_REDUCE, "bhgt->bhg", 2, e, sum, 0);
      p = tensor (&b, ACT, "probs", 4, bt, kvh, g, (guint64) seq);
      op (&b, "softmax_div", ELK_OP_ELEMENTWISE, "bhgt,bhg->bhgt", 3, e, sum,
          p);
      vc = tensor (&b, KV, "v_cache", 4, bt, kvh, (guint64) seq, hd);
      o = tensor (&b, ACT, "attn", 4, bt, kvh, g, hd);
      op (&b, "pv", ELK_OP_MATMUL, "bhgt,bhtd->bhgd", 3, p, vc, o);

      of = tensor (&b, ACT, "attn_flat", 2, bt, h);
      wo = tensor (&b, WGT, "wo", 2, h, h);
      ao = tensor (&b, ACT, "attn_out", 2, bt, h);
      op (&b, "o_proj", ELK_OP_MATMUL, "bk,kn->bn", 3, of, wo, ao);
      h1 = tensor (&b, ACT, "h1", 2, bt, h);
      op (&b, "residual1", ELK_OP_ELEMENTWISE, "bd,bd->bd", 3, x, ao, h1);

      xb = rmsnorm (&b, "ffn_norm", h1, bt, h);
      wg = tensor (&b, WGT, "w_gate", 2, h, f);
      gt = tensor (&b, ACT, "gate", 2, bt, f);
      op (&b, "gate", ELK_OP_MATMUL, "bk,kn->bn", 3, xb, wg, gt);
      wu = tensor (&b, WGT, "w_up", 2, h, f);
      u = tensor (&b, ACT, "up", 2, bt, f);
      op (&b, "up", ELK_OP_MATMUL, "bk,kn->bn", 3, xb, wu, u);
      sg = tensor (&b, ACT, "silu", 2, bt, f);
      op (&b, "silu", ELK_OP_UNARY, "bf->bf", 2, gt, sg, 0);
      m = tensor (&b, ACT, "ffn_mul", 2, bt, f);
      op (&b, "ffn_mul", ELK_OP_ELEMENTWISE, "bf,bf->bf", 3, sg, u, m);
      wd = tensor (&b, WGT, "w_down", 2, f, h);
      dn = tensor (&b, ACT, "down", 2, bt, h);
      op (&b, "down", ELK_OP_MATMUL, "bk,kn->bn", 3, m, wd, dn);
      out = tensor (&b, ACT, "out", 2, bt, h);
      op (&b, "residual2", ELK_OP_ELEMENTWISE, "bd,bd->bd", 3, h1, dn, out);
      x = out;
    }

  b.layer = layers;
  {
    guint32 xf = rmsnorm (&b, "final_norm", x, bt, h);
    guint32 wl = tensor (&b, WGT, "lm_head", 2, h, vocab);
    guint32 logits = tensor (&b, ACT, "logits", 2, bt, vocab);
    op (&b, "lm_head", ELK_OP_MATMUL, "bk,kn->bn", 3, xf, wl, logits);
  }
  return b.graph;
}

/* One MatMul "mk,kn->mn" of FP16 tensors a (m x k), b (k x n) and an
 * activation c (m x n), with the given origins of a and b. */
ElkGraph *
plan_test_matmul (guint64 m,
                  guint64 k,
                  guint64 n,
                  ElkTensorOrigin a_origin,
                  ElkTensorOrigin b_origin)
{
  ElkGraph *graph = elk_graph_new ("matmul");
  guint64 sa[2] = { m, k }, sb[2] = { k, n }, sc[2] = { m, n };
  guint32 t[3];
  GError *error = NULL;

  t[0] = elk_graph_add_tensor (graph, "a", ELK_DTYPE_F16, a_origin, 2, sa, 0,
                               &error);
  g_assert_no_error (error);
  t[1] = elk_graph_add_tensor (graph, "b", ELK_DTYPE_F16, b_origin, 2, sb, 0,
                               &error);
  g_assert_no_error (error);
  t[2] = elk_graph_add_tensor (graph, "c", ELK_DTYPE_F16,
                               ELK_TENSOR_ORIGIN_ACTIVATION, 2, sc, 0, &error);
  g_assert_no_error (error);
  elk_graph_add_op (graph, "mm", "matmul", ELK_OP_MATMUL, -1, "mk,kn->mn", t, 3,
                    NULL, &error);
  g_assert_no_error (error);
  return graph;
}

/* One IPU (1472 cores of 624 KiB, nothing reserved): the chip the T10
 * paper's plan-space numbers are for. */
ElkChipSpec *
plan_test_spec_one_ipu (void)
{
  ElkChipSpec *spec = elk_chip_spec_new_ipu_pod4 ();

  spec->n_chips = 1;
  spec->cores = 1472;
  spec->sram_per_core = 624 * 1024;
  spec->sram_reserved = 0;
  return spec;
}
