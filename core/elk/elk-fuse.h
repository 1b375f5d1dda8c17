/* elk-fuse.h: operator fusion, a graph-to-graph pass (stable API).
 *
 * elk_graph_fuse() rewrites a graph so that fewer operators, and with
 * them fewer supersteps and output shuffles, compute the same values.
 * It knows two fusions: a norm (RMSNorm or LayerNorm) folded into the
 * MatMuls that read it, and a softmax's exp, sum and divide folded into
 * the MatMuls that read its output contracting over the softmax axis
 * (docs/plan-space.md, "Fused operators").  The result is
 * an ordinary #ElkGraph, so every scheduler and chip sees the fused graph
 * without knowing how it was made.
 */
#pragma once

#include <glib-object.h>
#include <elk/elk-visibility.h>
#include <elk/elk-graph.h>

G_BEGIN_DECLS

/**
 * ElkFuseFlags:
 * @ELK_FUSE_NONE: fuse nothing.
 * @ELK_FUSE_NORM: fold every RMSNorm and every LayerNorm whose output only
 *   MatMuls contracting over the normalised axis read into one
 *   "rmsnorm_matmul" or "layernorm_matmul" operator per MatMul.
 * @ELK_FUSE_SOFTMAX: fold the exp, sum and divide of every softmax whose
 *   output only MatMuls contracting over the softmax axis read into one
 *   "softmax_matmul" operator per MatMul (the max operator stays).
 *
 * The fusions elk_graph_fuse() applies.
 *
 * Since: 0.2
 */
typedef enum
{
  ELK_FUSE_NONE = 0,
  ELK_FUSE_NORM = 1 << 0,
  ELK_FUSE_SOFTMAX = 1 << 1,
} ElkFuseFlags;

/**
 * ELK_FUSE_RMSNORM_MATMUL:
 *
 * The #ElkOp.type of a fused RMSNorm and MatMul.  Its operands are the
 * output (m, n), the norm's input x (m, k), the MatMul's weight (k, n)
 * and the norm's gain (k); it computes
 * out[m, n] = rsqrt (sum_k x[m, k]²) · sum_k x[m, k] g[k] W[k, n],
 * exactly the values of the square, sum, rsqrt, scale and gain operators
 * and the MatMul it replaces.
 *
 * Since: 0.2
 */
#define ELK_FUSE_RMSNORM_MATMUL "rmsnorm_matmul"

/**
 * ELK_FUSE_LAYERNORM_MATMUL:
 *
 * The #ElkOp.type of a fused LayerNorm and MatMul, as the frontends spell
 * LayerNorm (docs/frontend-llama.md: the mean is the plain sum
 * S[m] = sum_k x[m, k], and the rsqrt reads sum_k (x[m, k] - S[m])²).
 * Its operands are the output (m, n), x (m, k), the weight (k, n), the
 * gain (k) and the bias (k); with K the extent of k it computes
 * out[m, n] = r[m] · (sum_k x g W - S[m] · sum_k g W) + sum_k b W, where
 * r[m] = rsqrt (sum_k x² + (K - 2) S[m]²): the values of the mean,
 * centre, square, sum, rsqrt, scale, gain and bias operators and the
 * MatMul it replaces.
 *
 * Since: 0.2
 */
#define ELK_FUSE_LAYERNORM_MATMUL "layernorm_matmul"

/**
 * ELK_FUSE_SOFTMAX_MATMUL:
 *
 * The #ElkOp.type of a softmax's exp, sum and divide fused into a MatMul
 * that reads the softmax's output contracting over the softmax axis s
 * (attention's probabilities times V).  Its operands are the output
 * (m, n), the softmax's input x (m, s), the MatMul's second input V
 * (s, n) and the softmax's row maximum mx (m), in that order so that the
 * MatMul's two inputs keep their places; m and n stand for any number of
 * row, column and batch axes.  It computes
 * out[m, n] = (sum_s exp (x[m, s] - mx[m]) V[s, n]) / sum_s exp (x[m, s] -
 * mx[m]), exactly the values of the sub-exp, sum and divide operators and the
 * MatMul it replaces; the max operator that computes mx stays.
 *
 * Since: 0.2
 */
#define ELK_FUSE_SOFTMAX_MATMUL "softmax_matmul"

ELK_API ElkGraph *
elk_graph_fuse (ElkGraph *graph, ElkFuseFlags flags, GError **error);

G_END_DECLS
