/* elk-ipu-pod-func.c: the IPU-POD emulator's functional mode.
 *
 * Tiles hold real float data and the program runs on it: every
 * preload_async copies each tile's preload-state pieces out of "HBM" (the
 * tensors' host arrays) into that tile's buffers; every execute gathers
 * each tile's execute-state pieces from the tiles that hold them (the
 * producer's output layout for activations, the preload layout for
 * weights: data distribution), runs the compute-shift steps of the plan
 * with real kernels, moves the rotating pieces from tile to tile between
 * steps, and reduce-scatters the partial outputs that the rotation did not
 * consume.  The output's final layout (which tile holds which element) is
 * what the next consumer gathers from, and what the caller reads back.
 *
 * The schedule is the emulator's own, derived only from the plan (spatial
 * vector and temporal matrix), never from the compiler:
 *
 *  - Along loop dimension d the tile's part (sl = ceil(L / spatial)) is cut
 *    into Tmax = max_v temporal[d][v] chunks of step = ceil(sl / Tmax).
 *    The factors along d form a divisibility chain; their gcd rounds (as in
 *    the timing engine) are digits of the chunk index, the coarsest first.
 *    An operand rotating t ways along d takes part in the first rounds
 *    whose sizes multiply to t, and holds the chunks whose leading digits
 *    are its own.
 *  - Every tile has one value per round, shared by all operands of the
 *    round.  At the start it is the sum over the round's operands of that
 *    operand's ring position digit (the replica index over the dimensions
 *    the operand does not index, mod its rotation product, in mixed radix
 *    over its rounds): Cannon's skew, generalised.  A shift of round r
 *    moves every operand of r one step along its ring (each tile receives
 *    the piece whose digit is one higher) and adds 1 to the round's value;
 *    between two compute steps exactly one round shifts (the odometer of
 *    the timing engine, never turning back), so every combination of
 *    digits is computed exactly once.
 *  - A plan whose rings cannot be laid out this way (a ring that would
 *    hold one piece twice) is refused with an error naming the operator.
 *
 * Everything is plain C on arrays allocated per operator; the kernels loop
 * over plain floats with precomputed strides.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "elk-ipu-pod-private.h"

#define MAX_ROUNDS 64
#define NONE G_MAXUINT32

typedef enum
{
  F_MAC, /* out += a * b */
  /* A fused RMSNorm-MatMul (elk-fuse.h), operands out, x, W, g: out +=
   * (x g) W and, in a shadow of the output, ss += x²; after the partial
   * sums are reduced each output element is scaled by rsqrt (ss). */
  F_NORM_MAC,
  /* A fused LayerNorm-MatMul (elk-fuse.h), operands out, x, W, g, b: out
   * += (x g) W and, in four shadows of the output, s1 += x, s2 += x²,
   * gw += g W, bw += b W; after the partial sums are reduced each output
   * element becomes r (out - s1 gw) + bw, r = rsqrt (s2 + (K - 2) s1²). */
  F_LAYER_MAC,
  /* A fused softmax-MatMul (elk-fuse.h), operands out, x, V, mx: with
   * e = exp (x - mx), out += e V and, in a shadow of the output, z += e;
   * after the partial sums are reduced each output element is divided by
   * z. */
  F_SOFTMAX_MAC,
  F_ADD,
  F_SUB,
  F_MUL,
  F_DIV,
  F_POW,
  F_SUB_EXP, /* exp (a - b) */
  F_MAX2,
  F_MIN2,
  F_PRELU,     /* a > 0 ? a : a * b */
  F_AFFINE,    /* a * b + c: inference batch normalization, folded */
  F_COPY_LAST, /* gather: the rows the indices select are the last input */
  F_BIAS,      /* out += c (the last input): a bias after a reduction */
  F_WHERE,     /* a != 0 ? b : c */
  F_SOFTMAX,   /* along the axes the immediates name, whole on each tile */
  F_ADD3,      /* the same of three inputs (ONNX Sum, Max, Min, Mul) */
  F_MUL3,
  F_MAX3,
  F_MIN3,
  /* Quantization (docs/frontend-onnx.md, "Quantized operators"): the
   * saturation bounds of the output's integer type are imm[0] and imm[1]
   * (set from the output tensor's element type, not from the graph). */
  F_QUANT,    /* saturate (rint (a / b) + c), c = 0 without a 3rd input */
  F_DEQUANT,  /* (a - c) * b, c = 0 without a 3rd input */
  F_REQUANT,  /* saturate (rint ((double) a * b) + c) */
  F_QSCALE,   /* a * b / c: the requantization multiplier */
  F_DQ_SCALE, /* (max (a, 0) - min (b, 0)) / 255 */
  F_DQ_ZP,    /* saturate (rint (-min (b, 0) / scale)), scale as above */
  U_RELU,
  U_SILU,
  U_GELU,
  U_TANH,
  U_SQUARE,
  U_RSQRT,
  U_SQRT,
  U_EXP,
  U_NEG,
  U_SIGMOID,
  U_ABS,
  U_COPY,
  U_ERF,
  U_LOG,
  U_RECIPROCAL,
  U_FLOOR,
  U_CEIL,
  U_SOFTPLUS,
  U_SOFTSIGN,
  U_CLIP,         /* immediates: min, max */
  U_LEAKY_RELU,   /* immediates: alpha */
  U_HARD_SIGMOID, /* immediates: alpha, beta */
  U_ELU,          /* immediates: alpha */
  U_ROUND,        /* half to even, as ONNX's Round */
  /* A binary operator with a scalar constant: immediates c and its side
   * (0: c is the first operand, c - a; 1: the second, a - c). */
  U_ADD_C,
  U_SUB_C,
  U_MUL_C,
  U_DIV_C,
  U_POW_C,
  U_MAX_C,
  U_MIN_C,
  R_SUM,
  R_MAX,
  R_MIN,
  R_TOPK, /* the i-th largest over the reduced dimensions, i the index
           * along the output's last axis; reduced axes whole on the tile */
} FuncKind;

/* What the kernel does after the partial sums are reduced, at each output
 * element's home tile. */
typedef enum
{
  POST_NONE,
  POST_MEAN,      /* divide by the number of reduced elements */
  POST_POOL_AVG,  /* divide by the number of taps inside the window */
} PostKind;

/* Immediates each kernel needs from the graph attribute
 * "immediates:<operator>" (the einsum graph has no scalar operands). */
typedef struct
{
  const char *type;
  ElkOpKind kind;
  FuncKind fn;
  guint n_imm;       /* required immediates; 0: none */
  PostKind post;
} KernelName;

static const KernelName kernel_names[] = {
  { "matmul", ELK_OP_MATMUL, F_MAC, 0, POST_NONE },
  { "batch-matmul", ELK_OP_MATMUL, F_MAC, 0, POST_NONE },
  { "gemm", ELK_OP_MATMUL, F_MAC, 0, POST_NONE },
  { ELK_FUSE_RMSNORM_MATMUL, ELK_OP_MATMUL, F_NORM_MAC, 0, POST_NONE },
  { ELK_FUSE_LAYERNORM_MATMUL, ELK_OP_MATMUL, F_LAYER_MAC, 0, POST_NONE },
  { ELK_FUSE_SOFTMAX_MATMUL, ELK_OP_MATMUL, F_SOFTMAX_MAC, 0, POST_NONE },
  { "conv", ELK_OP_CONV, F_MAC, 0, POST_NONE },
  { "conv+batchnorm", ELK_OP_CONV, F_MAC, 0, POST_NONE },
  { "add", ELK_OP_ELEMENTWISE, F_ADD, 0, POST_NONE },
  { "bias-add", ELK_OP_ELEMENTWISE, F_ADD, 0, POST_NONE },
  { "sub", ELK_OP_ELEMENTWISE, F_SUB, 0, POST_NONE },
  { "mul", ELK_OP_ELEMENTWISE, F_MUL, 0, POST_NONE },
  { "div", ELK_OP_ELEMENTWISE, F_DIV, 0, POST_NONE },
  { "pow", ELK_OP_ELEMENTWISE, F_POW, 0, POST_NONE },
  { "sub-exp", ELK_OP_ELEMENTWISE, F_SUB_EXP, 0, POST_NONE },
  { "max", ELK_OP_ELEMENTWISE, F_MAX2, 0, POST_NONE },
  { "sum", ELK_OP_ELEMENTWISE, F_ADD, 0, POST_NONE },
  { "min", ELK_OP_ELEMENTWISE, F_MIN2, 0, POST_NONE },
  { "prelu", ELK_OP_ELEMENTWISE, F_PRELU, 0, POST_NONE },
  { "batchnorm", ELK_OP_ELEMENTWISE, F_AFFINE, 0, POST_NONE },
  { "where", ELK_OP_ELEMENTWISE, F_WHERE, 0, POST_NONE },
  { "quantize-linear", ELK_OP_ELEMENTWISE, F_QUANT, 0, POST_NONE },
  { "dequantize-linear", ELK_OP_ELEMENTWISE, F_DEQUANT, 0, POST_NONE },
  { "requantize", ELK_OP_ELEMENTWISE, F_REQUANT, 0, POST_NONE },
  { "requantize-scale", ELK_OP_ELEMENTWISE, F_QSCALE, 0, POST_NONE },
  { "dynamic-quant-scale", ELK_OP_ELEMENTWISE, F_DQ_SCALE, 0, POST_NONE },
  { "dynamic-quant-zero-point", ELK_OP_ELEMENTWISE, F_DQ_ZP, 0, POST_NONE },
  /* Softmax: the immediates are the output axes it normalises over. */
  { "softmax", ELK_OP_REDUCE, F_SOFTMAX, 0, POST_NONE },
  { "relu", ELK_OP_UNARY, U_RELU, 0, POST_NONE },
  { "silu", ELK_OP_UNARY, U_SILU, 0, POST_NONE },
  { "gelu", ELK_OP_UNARY, U_GELU, 0, POST_NONE },
  { "tanh", ELK_OP_UNARY, U_TANH, 0, POST_NONE },
  { "square", ELK_OP_UNARY, U_SQUARE, 0, POST_NONE },
  { "rsqrt", ELK_OP_UNARY, U_RSQRT, 0, POST_NONE },
  { "sqrt", ELK_OP_UNARY, U_SQRT, 0, POST_NONE },
  { "exp", ELK_OP_UNARY, U_EXP, 0, POST_NONE },
  { "neg", ELK_OP_UNARY, U_NEG, 0, POST_NONE },
  { "sigmoid", ELK_OP_UNARY, U_SIGMOID, 0, POST_NONE },
  { "abs", ELK_OP_UNARY, U_ABS, 0, POST_NONE },
  { "copy", ELK_OP_UNARY, U_COPY, 0, POST_NONE },
  { "identity", ELK_OP_UNARY, U_COPY, 0, POST_NONE },
  { "erf", ELK_OP_UNARY, U_ERF, 0, POST_NONE },
  { "log", ELK_OP_UNARY, U_LOG, 0, POST_NONE },
  { "reciprocal", ELK_OP_UNARY, U_RECIPROCAL, 0, POST_NONE },
  { "floor", ELK_OP_UNARY, U_FLOOR, 0, POST_NONE },
  { "ceil", ELK_OP_UNARY, U_CEIL, 0, POST_NONE },
  { "softplus", ELK_OP_UNARY, U_SOFTPLUS, 0, POST_NONE },
  { "softsign", ELK_OP_UNARY, U_SOFTSIGN, 0, POST_NONE },
  { "clip", ELK_OP_UNARY, U_CLIP, 2, POST_NONE },
  { "leakyrelu", ELK_OP_UNARY, U_LEAKY_RELU, 1, POST_NONE },
  { "hardsigmoid", ELK_OP_UNARY, U_HARD_SIGMOID, 2, POST_NONE },
  { "elu", ELK_OP_UNARY, U_ELU, 1, POST_NONE },
  { "round", ELK_OP_UNARY, U_ROUND, 0, POST_NONE },
  { "add", ELK_OP_UNARY, U_ADD_C, 2, POST_NONE },
  { "sub", ELK_OP_UNARY, U_SUB_C, 2, POST_NONE },
  { "mul", ELK_OP_UNARY, U_MUL_C, 2, POST_NONE },
  { "div", ELK_OP_UNARY, U_DIV_C, 2, POST_NONE },
  { "pow", ELK_OP_UNARY, U_POW_C, 2, POST_NONE },
  { "max", ELK_OP_UNARY, U_MAX_C, 2, POST_NONE },
  { "min", ELK_OP_UNARY, U_MIN_C, 2, POST_NONE },
  { "sum", ELK_OP_REDUCE, R_SUM, 0, POST_NONE },
  { "max", ELK_OP_REDUCE, R_MAX, 0, POST_NONE },
  { "min", ELK_OP_REDUCE, R_MIN, 0, POST_NONE },
  { "reducesum", ELK_OP_REDUCE, R_SUM, 0, POST_NONE },
  { "reducemax", ELK_OP_REDUCE, R_MAX, 0, POST_NONE },
  { "reducemin", ELK_OP_REDUCE, R_MIN, 0, POST_NONE },
  { "reducemean", ELK_OP_REDUCE, R_SUM, 0, POST_MEAN },
  { "globalaveragepool", ELK_OP_REDUCE, R_SUM, 0, POST_MEAN },
  { "globalmaxpool", ELK_OP_REDUCE, R_MAX, 0, POST_NONE },
  /* An MoE router's top-k: output [.., k] holds the 1st to k-th largest
   * score of its row (the llama frontend's "mje->mj"). */
  { "top-k", ELK_OP_REDUCE, R_TOPK, 0, POST_NONE },
  /* Pools: per spatial axis stride, effective kernel, dilation, leading
   * padding and input extent, then count_include_pad (see PoolWin). */
  { "maxpool", ELK_OP_POOL, R_MAX, 0, POST_NONE },
  { "averagepool", ELK_OP_POOL, R_SUM, 0, POST_POOL_AVG },
};

#define MAX_IMM 16

/* One spatial axis of a pool's true window.  elk's IR writes a strided
 * window as stride-1 taps over stride phases (docs/frontend-onnx.md), which
 * covers ceil(kernel / stride) * stride positions; the taps past the
 * kernel, those between dilated taps and those on padding are not part of
 * the window, so the kernel skips them.  A tap at phase p of tap r sits at
 * offset r * stride + p from the window's first position h * stride in
 * the padded input. */
typedef struct
{
  gint8 dh, dr, dp;  /* loop dims: output position, tap, phase (-1: none) */
  gint64 stride, eff, dil, pad, extent;
} PoolAxis;

typedef struct
{
  FuncKind fn;
  PostKind post;
  gboolean bias;     /* the last input is added once after the reduction */
  gboolean ternary;  /* an associative elementwise operator of 3 inputs */
  guint8 softmax;    /* loop dimensions softmax normalises over */
  float imm[MAX_IMM];
  guint n_imm;
  guint n_pool;
  PoolAxis pool[2];
  gboolean count_pad;
} Kernel;

/* Where the elements of a tensor live: per element the tile and the
 * offset in that tile's buffer (NONE: nobody holds it). */
typedef struct
{
  guint32 *tile;
  guint32 *off;
  float **bufs;     /* per tile, owned */
  guint32 n_tiles;
} Layout;

typedef struct
{
  const IpuMachine *m;
  const ElkGraph *graph;
  IpuFunctional *f;
  float **host;          /* per tensor: HBM / resident data, or NULL */
  Layout *produced;      /* per tensor: the producer's output layout */
  Layout *cold;          /* per op x operand: the preload-state layout */
  guint32 **cold_box;    /* per op x operand: per tile lo/hi per axis */
  IpuFuncReport *rep;
} Func;

static void
layout_clear (Layout *l)
{
  if (l->bufs != NULL)
    for (guint32 t = 0; t < l->n_tiles; t++)
      g_free (l->bufs[t]);
  g_free (l->bufs);
  g_free (l->tile);
  g_free (l->off);
  memset (l, 0, sizeof (*l));
}

static guint8
operand_mask (const ElkOp *op, guint v)
{
  guint8 mask = 0;
  for (guint x = 0; x < op->access[v].n_axes; x++)
    mask |= (guint8) (1u << op->access[v].dims[x][0]);
  return mask;
}

/* ---- Host data: given, resolved, or seeded. ---- */

static guint64
splitmix (guint64 *s)
{
  guint64 z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static float *
host_data (Func *F, guint32 tid, GError **error)
{
  const ElkTensor *t = elk_graph_get_tensor (F->graph, tid);
  GBytes *given = NULL;
  float *data;

  if (F->host[tid] != NULL)
    return F->host[tid];
  if (F->f->inputs != NULL)
    given = g_hash_table_lookup (F->f->inputs, t->name);
  if (given != NULL)
    given = g_bytes_ref (given);
  else if (F->f->resolve != NULL)
    given = F->f->resolve (t->name, F->f->tensors, F->f->resolve_data);
  data = g_new (float, MAX (t->n_elements, 1));
  if (given != NULL)
    {
      if (g_bytes_get_size (given) != t->n_elements * sizeof (float))
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': functional data for tensor '%s' has "
                       "%zu bytes, expected %" G_GUINT64_FORMAT " (%"
                       G_GUINT64_FORMAT " float32 elements)", t->name,
                       g_bytes_get_size (given),
                       t->n_elements * sizeof (float), t->n_elements);
          g_bytes_unref (given);
          g_free (data);
          return NULL;
        }
      memcpy (data, g_bytes_get_data (given, NULL),
              t->n_elements * sizeof (float));
      g_bytes_unref (given);
    }
  else
    {
      /* Deterministic values in [-1, 1) from the seed and the name. */
      guint64 s = ((guint64) F->f->seed << 32) ^ g_str_hash (t->name);
      for (guint64 i = 0; i < t->n_elements; i++)
        data[i] = (float) ((double) (splitmix (&s) >> 11) * 0x1.0p-52 - 1.0);
    }
  F->host[tid] = data;
  g_hash_table_replace (F->f->tensors, g_strdup (t->name),
                        g_bytes_new (data, t->n_elements * sizeof (float)));
  return data;
}

/* ---- Kernels ---- */

/* The immediates of operator @op: the graph attribute
 * "immediates:<operator>", comma-separated numbers. */
static gboolean
parse_immediates (const ElkGraph *g, const ElkOp *op, Kernel *k,
                  GError **error)
{
  g_autofree char *key = g_strdup_printf ("immediates:%s", op->name);
  const char *text = elk_graph_get_attribute (g, key);
  g_auto (GStrv) parts = NULL;

  k->n_imm = 0;
  if (text == NULL || *text == '\0')
    return TRUE;
  parts = g_strsplit (text, ",", -1);
  for (guint i = 0; parts[i] != NULL; i++)
    {
      char *end = NULL;
      double v = g_ascii_strtod (parts[i], &end);
      if (end == parts[i] || *end != '\0' || k->n_imm == MAX_IMM)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': graph attribute '%s' = '%s' is not "
                       "a list of at most %d numbers", key, text, MAX_IMM);
          return FALSE;
        }
      k->imm[k->n_imm++] = (float) v;
    }
  return TRUE;
}

/* A pool's spatial axes, read off its input's access (n, c, then per
 * spatial axis the window or the subsampled position, and the stride
 * phase if there is one) and paired with the immediates: stride,
 * effective kernel, dilation, leading padding and input extent per axis,
 * then count_include_pad. */
static gboolean
pool_axes (const ElkOp *op, Kernel *k, GError **error)
{
  const ElkAccess *acc = &op->access[1];
  guint8 out_mask = 0;
  guint n = 0;

  for (guint x = 0; x < op->access[0].n_axes; x++)
    out_mask |= (guint8) (1u << op->access[0].dims[x][0]);
  for (guint x = 2; x < acc->n_axes; x++)
    {
      gint d0 = acc->dims[x][0], d1 = acc->dims[x][1];
      if (d1 < 0 && !(out_mask & (1u << d0)))
        {
          /* A phase: belongs to the axis before it. */
          if (n == 0 || k->pool[n - 1].dp >= 0)
            break;
          k->pool[n - 1].dp = (gint8) d0;
          continue;
        }
      if (n == 2)
        {
          n = 3;
          break;
        }
      k->pool[n].dh = (gint8) d0;
      k->pool[n].dr = (gint8) d1;
      k->pool[n].dp = -1;
      n++;
    }
  if (n == 0 || n > 2 || k->n_imm != 5 * n + 1)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'ipu-pod': functional mode needs the true window of "
                   "pool '%s' as graph attribute 'immediates:%s' (stride, "
                   "kernel extent, dilation, leading padding, input extent "
                   "per spatial axis, then count_include_pad); it has %u "
                   "numbers for %u spatial axes", op->name, op->name,
                   k->n_imm, n);
      return FALSE;
    }
  k->n_pool = n;
  for (guint i = 0; i < n; i++)
    {
      PoolAxis *pa = &k->pool[i];
      pa->stride = (gint64) k->imm[5 * i];
      pa->eff = (gint64) k->imm[5 * i + 1];
      pa->dil = MAX ((gint64) k->imm[5 * i + 2], 1);
      pa->pad = (gint64) k->imm[5 * i + 3];
      pa->extent = (gint64) k->imm[5 * i + 4];
    }
  k->count_pad = k->imm[5 * n] != 0;
  return TRUE;
}

/* The saturation bounds of a quantizing kernel, from its output's element
 * type: ONNX quantizes to uint8 and int8 only. */
static gboolean
quant_bounds (const ElkGraph *g, const ElkOp *op, Kernel *k, GError **error)
{
  const ElkTensor *out = elk_graph_get_tensor (g, op->tensors[0]);

  if (k->fn != F_QUANT && k->fn != F_REQUANT && k->fn != F_DQ_ZP)
    return TRUE;
  if (out->dtype == ELK_DTYPE_U8)
    {
      k->imm[0] = 0;
      k->imm[1] = 255;
    }
  else if (out->dtype == ELK_DTYPE_I8)
    {
      k->imm[0] = -128;
      k->imm[1] = 127;
    }
  else
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'ipu-pod': operator '%s' of type '%s' quantizes to "
                   "'%s' of element type %s; functional mode saturates to u8 "
                   "or i8 only",
                   op->name, op->type, out->name,
                   elk_dtype_to_string (out->dtype));
      return FALSE;
    }
  k->n_imm = 2;
  return TRUE;
}

static gboolean
find_kernel (const ElkGraph *g, const ElkOp *op, Kernel *k, GError **error)
{
  GString *known;
  const KernelName *kn = NULL;

  memset (k, 0, sizeof (*k));
  if (!parse_immediates (g, op, k, error))
    return FALSE;
  if (op->kind == ELK_OP_GATHER)
    {
      k->fn = F_COPY_LAST;
      return TRUE;
    }
  for (guint i = 0; i < G_N_ELEMENTS (kernel_names); i++)
    if (kernel_names[i].kind == op->kind
        && g_strcmp0 (kernel_names[i].type, op->type) == 0)
      kn = &kernel_names[i];
  if (kn == NULL)
    {
      known = g_string_new (NULL);
      for (guint i = 0; i < G_N_ELEMENTS (kernel_names); i++)
        if (kernel_names[i].kind == op->kind)
          g_string_append_printf (known, "%s%s", known->len ? ", " : "",
                                  kernel_names[i].type);
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'ipu-pod': functional mode has no kernel for "
                   "operator '%s' of type '%s' (kind %s); it knows %s",
                   op->name, op->type, elk_op_kind_to_string (op->kind),
                   known->len ? known->str : "no type of this kind");
      g_string_free (known, TRUE);
      return FALSE;
    }
  k->fn = kn->fn;
  k->post = kn->post;
  if (kn->n_imm > 0 && k->n_imm != kn->n_imm)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'ipu-pod': operator '%s' of type '%s' needs %u "
                   "immediates in graph attribute 'immediates:%s', it has "
                   "%u", op->name, op->type, kn->n_imm, op->name, k->n_imm);
      return FALSE;
    }
  if (op->kind == ELK_OP_POOL && !pool_axes (op, k, error))
    return FALSE;
  if (k->fn == F_SOFTMAX)
    {
      k->softmax = 0;
      for (guint i = 0; i < k->n_imm; i++)
        {
          gint x = (gint) k->imm[i];
          if (x < 0 || (guint) x >= op->access[0].n_axes)
            break;
          k->softmax |= (guint8) (1u << op->access[0].dims[x][0]);
        }
      if (k->n_imm == 0 || k->softmax == 0 || op->n_operands != 2)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': functional mode needs the axes of "
                       "softmax '%s' as graph attribute 'immediates:%s' "
                       "(output axis indices)", op->name, op->name);
          return FALSE;
        }
    }
  /* Three inputs: a matrix product or convolution with a bias, added once
   * per output element; the affine batch normalization. */
  if (op->n_operands == 4)
    {
      if (k->fn == F_MAC)
        k->bias = TRUE;
      else if (k->fn == F_NORM_MAC || k->fn == F_SOFTMAX_MAC)
        ;
      else if (op->kind == ELK_OP_ELEMENTWISE
               && (k->fn == F_ADD || k->fn == F_MUL || k->fn == F_MAX2
                   || k->fn == F_MIN2))
        k->ternary = TRUE;
      else if (k->fn != F_AFFINE && k->fn != F_WHERE && k->fn != F_QUANT
               && k->fn != F_DEQUANT && k->fn != F_REQUANT && k->fn != F_QSCALE)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': operator '%s' of type '%s' has 3 "
                       "inputs; functional mode runs 3 inputs only for a "
                       "matrix product or convolution with a bias, "
                       "batchnorm, where, the quantization kernels, and "
                       "add, mul, max, min of three",
                       op->name, op->type);
          return FALSE;
        }
    }
  else if (op->n_operands == 5 || k->fn == F_LAYER_MAC)
    {
      if (op->n_operands != 5 || k->fn != F_LAYER_MAC)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': operator '%s' of type '%s' has %u "
                       "inputs; functional mode runs 4 inputs only for %s "
                       "(x, weight, gain, bias)",
                       op->name, op->type, op->n_operands - 1,
                       ELK_FUSE_LAYERNORM_MATMUL);
          return FALSE;
        }
    }
  else if (k->fn == F_AFFINE || k->fn == F_WHERE || k->fn == F_REQUANT
           || k->fn == F_QSCALE || k->fn == F_NORM_MAC
           || k->fn == F_SOFTMAX_MAC)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'ipu-pod': '%s' of type '%s' needs 3 inputs, it "
                   "has %u", op->name, op->type, op->n_operands - 1);
      return FALSE;
    }
  if (!quant_bounds (g, op, k, error))
    return FALSE;
  /* Gemm's alpha and beta scale the product and the bias. */
  if (k->fn == F_MAC && k->n_imm != 0 && k->n_imm != 2)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'ipu-pod': operator '%s' takes 0 or 2 immediates "
                   "(alpha, beta), it has %u", op->name, k->n_imm);
      return FALSE;
    }
  if (k->fn == F_MAC && k->n_imm == 0)
    {
      k->imm[0] = 1.0f;
      k->imm[1] = 1.0f;
    }
  return TRUE;
}

static float
identity_of (FuncKind fn)
{
  return fn == R_MAX ? -INFINITY : fn == R_MIN ? INFINITY : 0.0f;
}

static inline float
combine (FuncKind fn, float a, float b)
{
  return fn == R_MAX ? fmaxf (a, b) : fn == R_MIN ? fminf (a, b) : a + b;
}

static inline float
apply_unary (FuncKind fn, const float *imm, float a)
{
  switch (fn)
    {
    case U_RELU: return a > 0 ? a : 0;
    case U_SILU: return a / (1.0f + expf (-a));
    case U_GELU: return 0.5f * a * (1.0f + erff (a * (float) M_SQRT1_2));
    case U_TANH: return tanhf (a);
    case U_SQUARE: return a * a;
    case U_RSQRT: return 1.0f / sqrtf (a);
    case U_SQRT: return sqrtf (a);
    case U_EXP: return expf (a);
    case U_NEG: return -a;
    case U_SIGMOID: return 1.0f / (1.0f + expf (-a));
    case U_ABS: return fabsf (a);
    case U_ERF: return erff (a);
    case U_LOG: return logf (a);
    case U_RECIPROCAL: return 1.0f / a;
    case U_FLOOR: return floorf (a);
    case U_CEIL: return ceilf (a);
    case U_SOFTPLUS: return log1pf (expf (a));
    case U_SOFTSIGN: return a / (1.0f + fabsf (a));
    case U_CLIP: return fminf (fmaxf (a, imm[0]), imm[1]);
    case U_LEAKY_RELU: return a >= 0 ? a : a * imm[0];
    case U_HARD_SIGMOID: return fmaxf (0.0f, fminf (1.0f, imm[0] * a
                                                            + imm[1]));
    case U_ELU: return a >= 0 ? a : imm[0] * (expf (a) - 1.0f);
    case U_ROUND:
      return rintf (a);
    case U_ADD_C:
      return a + imm[0];
    case U_SUB_C:
      return imm[1] != 0 ? a - imm[0] : imm[0] - a;
    case U_MUL_C:
      return a * imm[0];
    case U_DIV_C:
      return imm[1] != 0 ? a / imm[0] : imm[0] / a;
    case U_POW_C:
      return imm[1] != 0 ? powf (a, imm[0]) : powf (imm[0], a);
    case U_MAX_C:
      return fmaxf (a, imm[0]);
    case U_MIN_C:
      return fminf (a, imm[0]);
    default: return a;
    }
}

/* Saturation to imm[0] .. imm[1]; NaN (0 / 0) saturates to imm[0]. */
static inline float
saturate (float v, const float *imm)
{
  return fminf (fmaxf (v, imm[0]), imm[1]);
}

/* DynamicQuantizeLinear's scale from the maximum and minimum, in float32
 * as ONNX computes it: the range always includes 0. */
static inline float
dq_scale (float mx, float mn)
{
  return (fmaxf (mx, 0.0f) - fminf (mn, 0.0f)) / 255.0f;
}

/* A walk over one kernel call's box, row by row along its innermost
 * loop dimension: the odometer every kernel below shares.  The box is
 * lo[d]..lo[d]+len[d] of the iteration space; operand v's element at the
 * box origin is at base[v] in its buffer, and moving one along loop
 * dimension d moves sd[v][d] in it.  For each row, off[v] is operand v's
 * offset of the row's first point, n the row's length and step[v]
 * operand v's stride along it.  A box with no loop dimension (an
 * operator on scalars) is one row of one point, the box's origin. */
typedef struct
{
  guint n_dims;
  guint n_operands;
  const guint64 *len;
  const guint64 *base;
  guint64 (*sd)[ELK_MAX_DIMS];
  guint64 idx[ELK_MAX_DIMS];
  guint64 off[ELK_MAX_OPERANDS];
  guint64 step[ELK_MAX_OPERANDS];
  guint64 n;
} BoxWalk;

/* The offsets of the row the odometer w->idx points at. */
static void
box_walk_offsets (BoxWalk *w)
{
  for (guint v = 0; v < w->n_operands; v++)
    {
      w->off[v] = w->base[v];
      for (guint d = 0; d + 1 < w->n_dims; d++)
        w->off[v] += w->idx[d] * w->sd[v][d];
    }
}

/* Starts @w on the box's first row; %FALSE if the box is empty. */
static gboolean
box_walk_start (BoxWalk *w,
                guint n_dims,
                guint n_operands,
                const guint64 *len,
                const guint64 *base,
                guint64 sd[][ELK_MAX_DIMS])
{
  for (guint d = 0; d < n_dims; d++)
    if (len[d] == 0)
      return FALSE;
  memset (w->idx, 0, sizeof (w->idx));
  w->n_dims = n_dims;
  w->n_operands = n_operands;
  w->len = len;
  w->base = base;
  w->sd = sd;
  w->n = n_dims > 0 ? len[n_dims - 1] : 1;
  for (guint v = 0; v < n_operands; v++)
    w->step[v] = n_dims > 0 ? sd[v][n_dims - 1] : 0;
  box_walk_offsets (w);
  return TRUE;
}

/* Moves @w to the box's next row; %FALSE after the last. */
static gboolean
box_walk_next (BoxWalk *w)
{
  gint d;

  for (d = (gint) w->n_dims - 2; d >= 0; d--)
    {
      if (++w->idx[d] < w->len[d])
        break;
      w->idx[d] = 0;
    }
  if (d < 0)
    return FALSE;
  box_walk_offsets (w);
  return TRUE;
}

/* One kernel call on a tile: the box and strides as in BoxWalk. */
static void
run_kernel (FuncKind fn,
            const float *imm,
            guint n_dims,
            guint n_operands,
            const guint64 *len,
            float *const *buf,
            const guint64 *base,
            guint64 sd[][ELK_MAX_DIMS])
{
  BoxWalk w;
  const guint64 *off = w.off;
  float *out = buf[0];
  const float *a = n_operands > 1 ? buf[1] : NULL;
  const float *b = n_operands > 2 ? buf[2] : NULL;
  const float *z = buf[n_operands - 1];
  const float alpha = fn == F_MAC ? imm[0] : 1.0f;
  const float beta = fn == F_BIAS ? imm[1] : 1.0f;

  if (!box_walk_start (&w, n_dims, n_operands, len, base, sd))
    return;
  do
    {
      guint64 n = w.n;
      guint64 s0 = w.step[0], s1 = n_operands > 1 ? w.step[1] : 0;
      guint64 s2 = n_operands > 2 ? w.step[2] : 0;
      guint64 sz = w.step[n_operands - 1];

      for (guint64 i = 0; i < n; i++)
        {
          float *o = out + off[0] + i * s0;
          float x = a != NULL ? a[off[1] + i * s1] : 0;
          float y = b != NULL ? b[off[2] + i * s2] : 0;
          switch (fn)
            {
            case F_MAC: *o += alpha * (x * y); break;
            case F_ADD: *o = x + y; break;
            case F_ADD3: *o = x + y + z[off[3] + i * sz]; break;
            case F_MUL3: *o = x * y * z[off[3] + i * sz]; break;
            case F_MAX3: *o = fmaxf (fmaxf (x, y), z[off[3] + i * sz]); break;
            case F_MIN3: *o = fminf (fminf (x, y), z[off[3] + i * sz]); break;
            case F_SUB: *o = x - y; break;
            case F_MUL: *o = x * y; break;
            case F_DIV: *o = x / y; break;
            case F_POW: *o = powf (x, y); break;
            case F_PRELU: *o = x > 0 ? x : x * y; break;
            case F_AFFINE: *o = x * y + z[off[n_operands - 1] + i * sz];
              break;
            case F_WHERE: *o = x != 0 ? y : z[off[n_operands - 1] + i * sz];
              break;
            case F_BIAS: *o += beta * z[off[n_operands - 1] + i * sz]; break;
            case F_SUB_EXP: *o = expf (x - y); break;
            case F_MAX2: *o = fmaxf (x, y); break;
            case F_MIN2: *o = fminf (x, y); break;
            case F_QUANT:
              *o = saturate (rintf (x / y)
                                 + (n_operands > 3 ? z[off[3] + i * sz] : 0.0f),
                             imm);
              break;
            case F_DEQUANT:
              *o = (x - (n_operands > 3 ? z[off[3] + i * sz] : 0.0f)) * y;
              break;
            case F_REQUANT:
              *o = saturate ((float) rint ((double) x * (double) y)
                                 + z[off[3] + i * sz],
                             imm);
              break;
            case F_QSCALE:
              *o = x * y / z[off[3] + i * sz];
              break;
            case F_DQ_SCALE:
              *o = dq_scale (x, y);
              break;
            case F_DQ_ZP:
              *o = saturate (rintf (0.0f - fminf (y, 0.0f) / dq_scale (x, y)),
                             imm);
              break;
            case F_COPY_LAST: *o = z[off[n_operands - 1] + i * sz]; break;
            case R_SUM: *o += x; break;
            case R_MAX: *o = fmaxf (*o, x); break;
            case R_MIN: *o = fminf (*o, x); break;
            default: *o = apply_unary (fn, imm, x); break;
            }
        }
    }
  while (box_walk_next (&w));
}

/* One F_NORM_MAC call on a tile (operands out, x, W, g; the box and
 * strides as in BoxWalk): out += (x g) W and ss += x², ss indexed like
 * the output.  Every point of the iteration space is computed once, so
 * each output element's ss ends as the sum of x² over the whole k. */
static void
run_norm_mac (guint n_dims,
              const guint64 *len,
              float *const *buf,
              const guint64 *base,
              guint64 sd[][ELK_MAX_DIMS],
              float *ss)
{
  BoxWalk w;

  if (!box_walk_start (&w, n_dims, 4, len, base, sd))
    return;
  do
    for (guint64 i = 0; i < w.n; i++)
      {
        guint64 o = w.off[0] + i * w.step[0];
        float x = buf[1][w.off[1] + i * w.step[1]];

        buf[0][o] += (x * buf[3][w.off[3] + i * w.step[3]])
                     * buf[2][w.off[2] + i * w.step[2]];
        ss[o] += x * x;
      }
  while (box_walk_next (&w));
}

/* One F_SOFTMAX_MAC call on a tile (operands out, x, V, mx; the box and
 * strides as in BoxWalk): e = exp (x - mx), out += e V and z += e, z
 * indexed like the output.  Every point of the iteration space is
 * computed once, so each output element's z ends as the sum of e over
 * the whole s. */
static void
run_softmax_mac (guint n_dims,
                 const guint64 *len,
                 float *const *buf,
                 const guint64 *base,
                 guint64 sd[][ELK_MAX_DIMS],
                 float *z)
{
  BoxWalk w;

  if (!box_walk_start (&w, n_dims, 4, len, base, sd))
    return;
  do
    for (guint64 i = 0; i < w.n; i++)
      {
        guint64 o = w.off[0] + i * w.step[0];
        float e = expf (buf[1][w.off[1] + i * w.step[1]]
                        - buf[3][w.off[3] + i * w.step[3]]);

        buf[0][o] += e * buf[2][w.off[2] + i * w.step[2]];
        z[o] += e;
      }
  while (box_walk_next (&w));
}

/* One F_LAYER_MAC call on a tile (operands out, x, W, g, b; the box and
 * strides as in BoxWalk): out += (x g) W and, in the four shadows of
 * the output @st (each @n long), s1 += x, s2 += x², gw += g W and
 * bw += b W.  Every point of the iteration space is computed once, so
 * each output element's shadows end as sums over the whole k. */
static void
run_layer_mac (guint n_dims,
               const guint64 *len,
               float *const *buf,
               const guint64 *base,
               guint64 sd[][ELK_MAX_DIMS],
               float *st,
               guint64 n)
{
  BoxWalk w;

  if (!box_walk_start (&w, n_dims, 5, len, base, sd))
    return;
  do
    for (guint64 i = 0; i < w.n; i++)
      {
        guint64 o = w.off[0] + i * w.step[0];
        float x = buf[1][w.off[1] + i * w.step[1]];
        float wt = buf[2][w.off[2] + i * w.step[2]];
        float g = buf[3][w.off[3] + i * w.step[3]];

        buf[0][o] += (x * g) * wt;
        st[o] += x;
        st[n + o] += x * x;
        st[2 * n + o] += g * wt;
        st[3 * n + o] += buf[4][w.off[4] + i * w.step[4]] * wt;
      }
  while (box_walk_next (&w));
}

/* Softmax over the loop dimensions in @axes, which the plan keeps whole
 * on the tile: per row (a point of the other dimensions) the maximum, the
 * sum of exponentials, then the quotients. */
static void
run_softmax (guint8 axes,
             guint n_dims,
             const guint64 *len,
             float *const *buf,
             const guint64 *base,
             guint64 sd[][ELK_MAX_DIMS])
{
  guint64 ro[ELK_MAX_DIMS] = { 0 }, ri[ELK_MAX_DIMS];
  guint64 n_row = 1;

  for (guint d = 0; d < n_dims; d++)
    {
      if (len[d] == 0)
        return;
      if (axes & (1u << d))
        n_row *= len[d];
    }
  for (;;)
    {
      guint64 o0 = base[0], i0 = base[1];
      float mx = -INFINITY;
      double sum = 0;
      gint d;
      for (guint e = 0; e < n_dims; e++)
        if (!(axes & (1u << e)))
          {
            o0 += ro[e] * sd[0][e];
            i0 += ro[e] * sd[1][e];
          }
      for (int pass = 0; pass < 3; pass++)
        {
          memset (ri, 0, sizeof (ri));
          for (guint64 k = 0; k < n_row; k++)
            {
              guint64 o = o0, x = i0;
              for (guint e = 0; e < n_dims; e++)
                if (axes & (1u << e))
                  {
                    o += ri[e] * sd[0][e];
                    x += ri[e] * sd[1][e];
                  }
              if (pass == 0)
                mx = fmaxf (mx, buf[1][x]);
              else if (pass == 1)
                {
                  buf[0][o] = expf (buf[1][x] - mx);
                  sum += buf[0][o];
                }
              else
                buf[0][o] = (float) (buf[0][o] / sum);
              for (d = (gint) n_dims - 1; d >= 0; d--)
                {
                  if (!(axes & (1u << d)))
                    continue;
                  if (++ri[d] < len[d])
                    break;
                  ri[d] = 0;
                }
            }
        }
      for (d = (gint) n_dims - 1; d >= 0; d--)
        {
          if (axes & (1u << d))
            continue;
          if (++ro[d] < len[d])
            break;
          ro[d] = 0;
        }
      if (d < 0)
        return;
    }
}

static int
compare_desc (const void *a, const void *b)
{
  float x = *(const float *) a, y = *(const float *) b;
  return x > y ? -1 : x < y ? 1 : 0;
}

/* Top-k over the box: for each point of the output's dimensions, the
 * values of its row over the reduced ones (@mask0 has the output's
 * dimensions), sorted, and the one whose rank is the point's global index
 * @lo + local along @pick, the output's last axis. */
static void
run_topk (guint8 mask0,
          guint pick,
          guint n_dims,
          const guint64 *len,
          const guint64 *lo,
          float *const *buf,
          const guint64 *base,
          guint64 sd[][ELK_MAX_DIMS])
{
  guint64 ro[ELK_MAX_DIMS] = { 0 }, ri[ELK_MAX_DIMS];
  guint64 n_row = 1;
  g_autofree float *row = NULL;

  for (guint d = 0; d < n_dims; d++)
    {
      if (len[d] == 0)
        return;
      if (!(mask0 & (1u << d)))
        n_row *= len[d];
    }
  row = g_new (float, n_row);
  for (;;)
    {
      guint64 o = base[0], i0 = base[1];
      guint64 rank = lo[pick] + ro[pick];
      gint d;

      for (guint e = 0; e < n_dims; e++)
        if (mask0 & (1u << e))
          {
            o += ro[e] * sd[0][e];
            i0 += ro[e] * sd[1][e];
          }
      memset (ri, 0, sizeof (ri));
      for (guint64 k = 0; k < n_row; k++)
        {
          guint64 x = i0;
          for (guint e = 0; e < n_dims; e++)
            if (!(mask0 & (1u << e)))
              x += ri[e] * sd[1][e];
          row[k] = buf[1][x];
          for (d = (gint) n_dims - 1; d >= 0; d--)
            if (!(mask0 & (1u << d)) && ++ri[d] < len[d])
              break;
            else if (!(mask0 & (1u << d)))
              ri[d] = 0;
        }
      qsort (row, n_row, sizeof (float), compare_desc);
      buf[0][o] = rank < n_row ? row[rank] : -INFINITY;
      for (d = (gint) n_dims - 1; d >= 0; d--)
        if ((mask0 & (1u << d)) && ++ro[d] < len[d])
          break;
        else if (mask0 & (1u << d))
          ro[d] = 0;
      if (d < 0)
        return;
    }
}

/* Whether the tap at loop coordinates @g lies inside the pool's window
 * and off the padding, along every spatial axis. */
static inline gboolean
pool_tap (const Kernel *k, const guint64 *g)
{
  for (guint i = 0; i < k->n_pool; i++)
    {
      const PoolAxis *pa = &k->pool[i];
      gint64 off = 0, pos;
      if (pa->dr >= 0)
        off += (gint64) g[pa->dr] * (pa->dp >= 0 ? pa->stride : 1);
      if (pa->dp >= 0)
        off += (gint64) g[pa->dp];
      if (off >= pa->eff || off % pa->dil != 0)
        return FALSE;
      pos = (gint64) g[pa->dh] * pa->stride + off;
      if (pos < pa->pad || pos >= pa->pad + pa->extent)
        return FALSE;
    }
  return TRUE;
}

/* The pool kernel: as run_kernel's reduce, but over the taps of the true
 * window only (global box origin @glo). */
static void
run_pool (const Kernel *k,
          guint n_dims,
          const guint64 *len,
          const guint64 *glo,
          float *const *buf,
          const guint64 *base,
          guint64 sd[][ELK_MAX_DIMS])
{
  guint64 idx[ELK_MAX_DIMS] = { 0 }, g[ELK_MAX_DIMS];

  for (guint d = 0; d < n_dims; d++)
    if (len[d] == 0)
      return;
  for (;;)
    {
      guint64 o = base[0], x = base[1];
      gint d;
      for (guint e = 0; e < n_dims; e++)
        {
          g[e] = glo[e] + idx[e];
          o += idx[e] * sd[0][e];
          x += idx[e] * sd[1][e];
        }
      if (pool_tap (k, g))
        buf[0][o] = combine (k->fn, buf[0][o], buf[1][x]);
      for (d = (gint) n_dims - 1; d >= 0; d--)
        {
          if (++idx[d] < len[d])
            break;
          idx[d] = 0;
        }
      if (d < 0)
        return;
    }
}

/* The divisor of an average pool's output at loop coordinates @g: the taps
 * of its window off the padding, or all of them with count_include_pad. */
static float
pool_count (const Kernel *k, const guint64 *g)
{
  double n = 1;
  for (guint i = 0; i < k->n_pool; i++)
    {
      const PoolAxis *pa = &k->pool[i];
      gint64 c = 0;
      for (gint64 off = 0; off < pa->eff; off += pa->dil)
        {
          gint64 pos = (gint64) g[pa->dh] * pa->stride + off;
          if (k->count_pad || (pos >= pa->pad && pos < pa->pad + pa->extent))
            c++;
        }
      n *= (double) c;
    }
  return (float) n;
}

/* ---- One operator on the tiles ---- */

typedef struct
{
  guint n;
  guint32 size[MAX_ROUNDS];
  guint8 dim[MAX_ROUNDS];
  guint8 mask[MAX_ROUNDS];
} Rounds;

/* The coordinate along axis x of an operand at loop coordinates g: a
 * window axis (a convolution's input row h + r) sums its two dimensions. */
static inline guint64
axis_coord (const ElkAccess *acc, guint x, const guint64 *g)
{
  return g[acc->dims[x][0]]
         + (acc->dims[x][1] >= 0 ? g[acc->dims[x][1]] : 0);
}

/* The range of axis x covered by the loop box lo..hi (hi exclusive): a
 * window axis covers lo_h + lo_r .. hi_h + hi_r - 1. */
static inline void
axis_range (const ElkAccess *acc, guint x, const guint64 *lo,
            const guint64 *hi, guint64 *alo, guint64 *ahi)
{
  gint d0 = acc->dims[x][0], d1 = acc->dims[x][1];
  *alo = lo[d0];
  *ahi = hi[d0];
  if (d1 >= 0)
    {
      *alo += lo[d1];
      *ahi = *ahi + hi[d1] - 1;
      if (lo[d0] >= hi[d0] || lo[d1] >= hi[d1])
        *ahi = *alo;
    }
}

/* The element of operand v's tensor at loop coordinates g: flat index. */
static guint64
flat_index (const ElkTensor *t, const ElkAccess *acc, const guint64 *g)
{
  guint64 f = 0;
  for (guint x = 0; x < acc->n_axes; x++)
    f = f * t->shape[x] + axis_coord (acc, x, g);
  return f;
}

/* Reads element @flat of tensor @tid for @tile, from wherever it lives:
 * the tile itself, another tile (the exchange), or the host array. */
typedef struct
{
  const Layout *lay;
  const float *host;
  const guint32 *box;   /* the reading tile's own preload box, or NULL */
  const float *own;     /* the reading tile's own preload buffer */
} Source;

static gboolean
fetch (Func *F, const Source *src, guint32 tile, guint64 flat,
       float *out)
{
  if (src->lay != NULL)
    {
      guint32 h = src->lay->tile[flat];
      if (h == NONE)
        return FALSE;
      *out = src->lay->bufs[h][src->lay->off[flat]];
      if (h != tile)
        {
          F->rep->exchanged_elements++;
          if (h / F->m->tiles_per_chip != tile / F->m->tiles_per_chip)
            F->rep->xchip_elements++;
        }
      return TRUE;
    }
  *out = src->host[flat];
  return TRUE;
}

/* The preload-state layout of operand v of op i (an HBM input): each tile
 * of the preload plan holds the part (replica index mod the rotation
 * product) of its spatial piece, read from HBM. */
static gboolean
preload_op (Func *F, guint i, const ElkPlan *cp, GError **error)
{
  const ElkOp *op = elk_graph_get_op (F->graph, i);
  guint64 sl[ELK_MAX_DIMS];
  guint32 cores = 1;

  for (guint d = 0; d < op->n_dims; d++)
    {
      sl[d] = ceil_div (op->extents[d], cp->spatial[d]);
      cores *= cp->spatial[d];
    }
  for (guint v = 1; v < op->n_operands; v++)
    {
      const ElkTensor *t = elk_graph_get_tensor (F->graph, op->tensors[v]);
      const ElkAccess *acc = &op->access[v];
      Layout *lay = &F->cold[i * ELK_MAX_OPERANDS + v];
      guint32 *box;
      guint8 mask = operand_mask (op, v);
      guint32 tprod = 1;
      float *host;

      if (t->origin == ELK_TENSOR_ORIGIN_ACTIVATION)
        continue;
      host = host_data (F, op->tensors[v], error);
      if (host == NULL)
        return FALSE;
      for (guint d = 0; d < op->n_dims; d++)
        tprod *= cp->temporal[d][v];
      lay->n_tiles = cores;
      lay->bufs = g_new0 (float *, cores);
      lay->tile = g_new (guint32, MAX (t->n_elements, 1));
      lay->off = g_new (guint32, MAX (t->n_elements, 1));
      memset (lay->tile, 0xff, sizeof (guint32) * MAX (t->n_elements, 1));
      box = g_new0 (guint32, (gsize) cores * 2 * ELK_MAX_DIMS);
      F->cold_box[i * ELK_MAX_OPERANDS + v] = box;

      for (guint32 tile = 0; tile < cores; tile++)
        {
          guint32 c[ELK_MAX_DIMS] = { 0 }, part, rest = tile;
          guint64 ridx = 0, lo[ELK_MAX_DIMS], hi[ELK_MAX_DIMS];
          guint64 g[ELK_MAX_DIMS], n = 1, k = 0;
          guint32 *b = box + (gsize) tile * 2 * ELK_MAX_DIMS;

          for (gint d = (gint) op->n_dims - 1; d >= 0; d--)
            {
              c[d] = rest % cp->spatial[d];
              rest /= cp->spatial[d];
            }
          for (guint d = 0; d < op->n_dims; d++)
            if (!(mask & (1u << d)))
              ridx = ridx * cp->spatial[d] + c[d];
          part = (guint32) (ridx % tprod);
          /* The part's digits over the rotating dimensions, the last
           * dimension fastest. */
          for (gint d = (gint) op->n_dims - 1; d >= 0; d--)
            {
              guint32 tc = cp->temporal[d][v];
              guint64 tlo = (guint64) c[d] * sl[d];
              guint64 thi = MIN (tlo + sl[d], op->extents[d]);
              guint64 plen = ceil_div (sl[d], tc);
              guint32 p = part % tc;
              part /= tc;
              lo[d] = MIN (tlo + p * plen, thi);
              hi[d] = MIN (tlo + (p + 1) * plen, thi);
            }
          for (guint x = 0; x < acc->n_axes; x++)
            {
              guint64 alo, ahi;
              axis_range (acc, x, lo, hi, &alo, &ahi);
              b[2 * x] = (guint32) alo;
              b[2 * x + 1] = (guint32) ahi;
              n *= ahi - alo;
              g[x] = alo;
            }
          lay->bufs[tile] = g_new (float, MAX (n, 1));
          F->rep->hbm_elements += n;
          if (n == 0)
            continue;
          /* Row-major over the operand's axes (g holds axis coordinates
           * here): HBM to tile. */
          for (;;)
            {
              guint64 fl = 0;
              gint x;
              for (guint y = 0; y < acc->n_axes; y++)
                fl = fl * t->shape[y] + g[y];
              lay->bufs[tile][k] = host[fl];
              if (lay->tile[fl] == NONE)
                {
                  lay->tile[fl] = tile;
                  lay->off[fl] = (guint32) k;
                }
              k++;
              for (x = (gint) acc->n_axes - 1; x >= 0; x--)
                {
                  if (++g[x] < b[2 * x + 1])
                    break;
                  g[x] = b[2 * x];
                }
              if (x < 0)
                break;
            }
        }
      for (guint64 e = 0; e < t->n_elements; e++)
        if (lay->tile[e] == NONE)
          {
            g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                         "chip 'ipu-pod': the preload-state plan of operator "
                         "'%s' leaves element %" G_GUINT64_FORMAT " of '%s' "
                         "on no tile", op->name, e, t->name);
            return FALSE;
          }
    }
  return TRUE;
}

typedef struct
{
  guint32 tmax[ELK_MAX_DIMS];
  guint64 stp[ELK_MAX_DIMS];
  guint64 sl[ELK_MAX_DIMS];
  guint32 chunks[ELK_MAX_OPERANDS][ELK_MAX_DIMS]; /* per piece */
  guint64 buf_len[ELK_MAX_OPERANDS];
  guint64 stride[ELK_MAX_OPERANDS][ELK_MAX_DIMS]; /* per loop dim, 0 = n/a */
} Shape;

/* One operator's functional run, shared by the phases of execute_op: the
 * operator, its plan, the kernel, the shape of its pieces and rotation
 * rounds, and the per-tile state (coordinates, round digits, ring senders
 * and operand buffers). */
typedef struct
{
  Func *F;
  guint i;
  const ElkOp *op;
  const ElkTensor *out_t;
  const ElkPlan *hp;
  guint D, V;
  guint32 cores;
  guint64 steps;
  Shape S;
  Rounds R;
  Kernel K;
  FuncKind fn;
  guint8 mask[ELK_MAX_OPERANDS];
  guint32 P[ELK_MAX_OPERANDS], reps[ELK_MAX_OPERANDS];
  /* Per tile: coordinates, round values; per operand: buffers. */
  guint32 *coord, *delta, *sender;
  float **cur[ELK_MAX_OPERANDS], **nxt[ELK_MAX_OPERANDS];
  /* F_NORM_MAC: per tile the sums of squares (F_SOFTMAX_MAC: of the
   * exponentials), shaped like the output piece and moving with it;
   * F_LAYER_MAC: n_ss = 4 such shadows, one
   * after the other (s1, s2, gw, bw). */
  float **ss, **ss_nxt;
  guint n_ss;
  Layout *outl;
} OpRun;

static void
op_run_clear (OpRun *run)
{
  for (guint v = 0; v < run->V; v++)
    {
      for (guint32 t = 0; t < run->cores; t++)
        {
          if (run->cur[v] != NULL)
            g_free (run->cur[v][t]);
          if (run->nxt[v] != NULL)
            g_free (run->nxt[v][t]);
        }
      g_free (run->cur[v]);
      g_free (run->nxt[v]);
    }
  for (guint32 t = 0; t < run->cores; t++)
    {
      if (run->ss != NULL)
        g_free (run->ss[t]);
      if (run->ss_nxt != NULL)
        g_free (run->ss_nxt[t]);
    }
  g_free (run->ss);
  g_free (run->ss_nxt);
  g_free (run->sender);
  g_free (run->delta);
  g_free (run->coord);
}

/* The kernel, and the operator's shape as functional mode needs it. */
static gboolean
check_op (OpRun *run, GError **error)
{
  Func *F = run->F;
  const ElkOp *op = run->op;
  const ElkPlan *hp = run->hp;
  const guint D = run->D, V = run->V;
  Kernel *K = &run->K;
  guint8 *mask = run->mask;
  FuncKind fn;

  if (V < 2 || V > 5)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'ipu-pod': functional mode runs operators of 0 to "
                   "8 loop dimensions and 1 to 4 inputs; '%s' has %u and %u",
                   op->name, op->n_dims, V - 1);
      return FALSE;
    }
  if (!find_kernel (F->graph, op, K, error))
    return FALSE;
  fn = K->fn;
  if (K->ternary)
    fn = fn == F_ADD ? F_ADD3 : fn == F_MUL ? F_MUL3
         : fn == F_MAX2 ? F_MAX3 : F_MIN3;
  for (guint v = 0; v < V; v++)
    {
      const ElkAccess *acc = &op->access[v];
      mask[v] = 0;
      for (guint x = 0; x < acc->n_axes; x++)
        for (guint j = 0; j < 2; j++)
          {
            guint8 bit;
            if (acc->dims[x][j] < 0)
              continue;
            bit = (guint8) (1u << acc->dims[x][j]);
            /* A window axis (h + r) is indexed by two dimensions; the
             * output has none, and no dimension indexes two axes. */
            if ((mask[v] & bit) || (v == 0 && j == 1))
              {
                g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                             "chip 'ipu-pod': functional mode needs every "
                             "loop dimension to index at most one axis of an "
                             "operand, and no window in the output; operand "
                             "%u of '%s' has a repeated dimension or an "
                             "output window", v, op->name);
                return FALSE;
              }
            mask[v] |= bit;
          }
    }

  /* A top-k row, like a softmax row, must be whole on one tile in one
   * step: the k largest of a row are not a combination of its pieces'. */
  for (guint d = 0; d < D && fn == R_TOPK; d++)
    if (!(mask[0] & (1u << d)) && hp->spatial[d] > 1)
      {
        g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                     "chip 'ipu-pod': functional mode runs top-k '%s' only "
                     "with its reduced axes whole on each tile; the plan "
                     "splits '%c' %u ways",
                     op->name, op->dim_names[d], hp->spatial[d]);
        return FALSE;
      }
  /* A softmax row must be whole on one tile in one step. */
  for (guint d = 0; d < D && fn == F_SOFTMAX; d++)
    if ((K->softmax & (1u << d)) && hp->spatial[d] > 1)
      {
        g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                     "chip 'ipu-pod': functional mode runs softmax '%s' only "
                     "with its axes whole on each tile; the plan splits '%c' "
                     "%u ways", op->name, op->dim_names[d], hp->spatial[d]);
        return FALSE;
      }
  run->fn = fn;
  return TRUE;
}

/* The pieces and rotation rounds of every loop dimension, and each
 * operand's buffer strides. */
static gboolean
plan_shape (OpRun *run, GError **error)
{
  const ElkOp *op = run->op;
  const ElkPlan *hp = run->hp;
  const guint D = run->D, V = run->V;
  Shape *S = &run->S;
  Rounds *R = &run->R;
  const guint8 *mask = run->mask;
  guint32 *P = run->P, *reps = run->reps;
  guint32 cores = 1;
  guint64 steps = 1;

  /* Chunks and rounds per loop dimension. */
  memset (S, 0, sizeof (*S));
  for (guint d = 0; d < D; d++)
    {
      guint32 left[ELK_MAX_OPERANDS], mx = 1;
      cores *= hp->spatial[d];
      S->sl[d] = ceil_div (op->extents[d], hp->spatial[d]);
      for (guint v = 0; v < V; v++)
        {
          left[v] = hp->temporal[d][v];
          mx = MAX (mx, left[v]);
        }
      S->tmax[d] = mx;
      S->stp[d] = ceil_div (S->sl[d], mx);
      steps *= mx;
      for (guint v = 0; v < V; v++)
        S->chunks[v][d] = mx / MAX (hp->temporal[d][v], 1u);
      for (;;)
        {
          guint32 gg = 0;
          guint8 m = 0;
          for (guint v = 0; v < V; v++)
            if (left[v] > 1)
              {
                gg = gcd32 (gg, left[v]);
                m |= (guint8) (1u << v);
              }
          if (m == 0)
            break;
          if (gg <= 1 || R->n == MAX_ROUNDS)
            {
              g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                           "chip 'ipu-pod': the rotation factors of operator "
                           "'%s' along '%c' do not form a divisibility chain",
                           op->name, op->dim_names[d]);
              return FALSE;
            }
          R->size[R->n] = gg;
          R->dim[R->n] = (guint8) d;
          R->mask[R->n] = m;
          R->n++;
          for (guint v = 0; v < V; v++)
            if (left[v] > 1)
              left[v] /= gg;
        }
    }
  for (guint v = 0; v < V; v++)
    {
      guint64 len = 1;
      P[v] = 1;
      reps[v] = 1;
      for (guint d = 0; d < D; d++)
        {
          P[v] *= hp->temporal[d][v];
          if (!(mask[v] & (1u << d)))
            reps[v] *= hp->spatial[d];
        }
      if (reps[v] % P[v] != 0)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': operand %u of '%s' rotates in %u "
                       "parts but has %u copies", v, op->name, P[v], reps[v]);
          return FALSE;
        }
      /* Buffer strides: row-major over the operand's axes.  A window axis
       * holds the piece of h plus the piece of r minus one (the halo), and
       * one step along either dimension is one step along the axis. */
      for (gint x = (gint) op->access[v].n_axes - 1; x >= 0; x--)
        {
          gint d = op->access[v].dims[x][0], d1 = op->access[v].dims[x][1];
          guint64 ext = (guint64) S->chunks[v][d] * S->stp[d];
          S->stride[v][d] = len;
          if (d1 >= 0)
            {
              S->stride[v][d1] = len;
              ext += (guint64) S->chunks[v][d1] * S->stp[d1] - 1;
            }
          len *= ext;
        }
      S->buf_len[v] = len;
    }
  run->cores = cores;
  run->steps = steps;
  return TRUE;
}

/* Every tile's coordinates in the plan's grid and its starting round
 * digits. */
static void
place_tiles (OpRun *run)
{
  const ElkPlan *hp = run->hp;
  const guint D = run->D, V = run->V;
  const guint32 cores = run->cores;
  const Rounds *R = &run->R;
  const guint8 *mask = run->mask;
  const guint32 *P = run->P;
  guint32 *coord, *delta;

  coord = run->coord = g_new (guint32, (gsize) cores * D);
  delta = run->delta = g_new0 (guint32, (gsize) cores * MAX (R->n, 1u));
  for (guint32 t = 0; t < cores; t++)
    {
      guint32 rest = t;
      for (gint d = (gint) D - 1; d >= 0; d--)
        {
          coord[t * D + d] = rest % hp->spatial[d];
          rest /= hp->spatial[d];
        }
    }

  /* Each tile's starting round values: the sum of the ring-position
   * digits of the round's operands. */
  for (guint v = 0; v < V; v++)
    {
      if (P[v] == 1)
        continue;
      for (guint32 t = 0; t < cores; t++)
        {
          guint64 ridx = 0;
          guint32 pos;
          for (guint d = 0; d < D; d++)
            if (!(mask[v] & (1u << d)))
              ridx = ridx * hp->spatial[d] + coord[t * D + d];
          pos = (guint32) (ridx % P[v]);
          for (gint r = (gint) R->n - 1; r >= 0; r--)
            if (R->mask[r] & (1u << v))
              {
                delta[t * R->n + r] = (delta[t * R->n + r] + pos % R->size[r])
                                      % R->size[r];
                pos /= R->size[r];
              }
        }
    }
}

static gboolean
build_rings (OpRun *run, GError **error)
{
  const ElkOp *op = run->op;
  const ElkPlan *hp = run->hp;
  const guint D = run->D, V = run->V;
  const guint32 cores = run->cores;
  const Rounds *R = &run->R;
  const guint8 *mask = run->mask;
  const guint32 *P = run->P, *reps = run->reps;
  const guint32 *coord = run->coord, *delta = run->delta;
  g_autofree guint32 *slot = NULL;
  guint32 *sender;

  /* The rings: for every rotating operand, the tiles of one copy group
   * and ring must hold every combination of its digits exactly once; a
   * tile receives, in round r, from the tile of its ring whose digit of r
   * is one higher. */
  sender = run->sender = g_new (guint32, (gsize) MAX (R->n, 1u) * V * cores);
  for (guint v = 0; v < V; v++)
    {
      guint64 n_groups = 1;
      if (P[v] == 1)
        continue;
      for (guint d = 0; d < D; d++)
        if (mask[v] & (1u << d))
          n_groups *= hp->spatial[d];
      n_groups *= reps[v] / P[v];
      g_free (slot);
      slot = g_new (guint32, n_groups * P[v]);
      memset (slot, 0xff, sizeof (guint32) * n_groups * P[v]);
      for (int pass = 0; pass < 2; pass++)
        for (guint32 t = 0; t < cores; t++)
          {
            guint64 ridx = 0, gidx = 0, key, tuple = 0;
            for (guint d = 0; d < D; d++)
              {
                if (mask[v] & (1u << d))
                  gidx = gidx * hp->spatial[d] + coord[t * D + d];
                else
                  ridx = ridx * hp->spatial[d] + coord[t * D + d];
              }
            key = (gidx * (reps[v] / P[v]) + ridx / P[v]) * P[v];
            for (guint r = 0; r < R->n; r++)
              if (R->mask[r] & (1u << v))
                tuple = tuple * R->size[r] + delta[t * R->n + r];
            if (pass == 0)
              {
                if (slot[key + tuple] != NONE)
                  {
                    g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                                 "chip 'ipu-pod': functional mode cannot lay "
                                 "out the rotation rings of operator '%s': "
                                 "tiles %u and %u of one ring of operand %u "
                                 "would start with the same piece",
                                 op->name, slot[key + tuple], t, v);
                    return FALSE;
                  }
                slot[key + tuple] = t;
                continue;
              }
            for (guint r = 0; r < R->n; r++)
              {
                guint64 wt = 1, nt;
                guint32 dg;
                if (!(R->mask[r] & (1u << v)))
                  continue;
                for (guint r2 = r + 1; r2 < R->n; r2++)
                  if (R->mask[r2] & (1u << v))
                    wt *= R->size[r2];
                dg = delta[t * R->n + r];
                nt = tuple - (guint64) dg * wt
                     + (guint64) ((dg + 1) % R->size[r]) * wt;
                sender[((gsize) r * V + v) * cores + t] = slot[key + nt];
              }
          }
    }
  return TRUE;
}

static gboolean
gather_inputs (OpRun *run, gboolean preloaded, GError **error)
{
  Func *F = run->F;
  const guint i = run->i;
  const ElkOp *op = run->op;
  const guint D = run->D, V = run->V;
  const guint32 cores = run->cores;
  const Shape *S = &run->S;
  const Rounds *R = &run->R;
  const FuncKind fn = run->fn;
  const guint8 *mask = run->mask;
  const guint32 *P = run->P;
  const guint32 *coord = run->coord, *delta = run->delta;
  float ***cur = run->cur, ***nxt = run->nxt;

  /* Buffers, and the input superstep: every tile gathers its pieces. */
  for (guint v = 0; v < V; v++)
    {
      cur[v] = g_new0 (float *, cores);
      if (P[v] > 1)
        nxt[v] = g_new0 (float *, cores);
      for (guint32 t = 0; t < cores; t++)
        {
          cur[v][t] = g_new (float, MAX (S->buf_len[v], 1));
          if (v == 0)
            for (guint64 k = 0; k < S->buf_len[v]; k++)
              cur[v][t][k] = identity_of (fn);
          else
            memset (cur[v][t], 0, sizeof (float) * MAX (S->buf_len[v], 1));
          if (P[v] > 1)
            nxt[v][t] = g_new0 (float, MAX (S->buf_len[v], 1));
        }
    }
  run->n_ss = fn == F_NORM_MAC || fn == F_SOFTMAX_MAC ? 1
              : fn == F_LAYER_MAC                     ? 4
                                                      : 0;
  if (run->n_ss > 0)
    {
      gsize n_ss = run->n_ss * MAX (S->buf_len[0], 1);
      run->ss = g_new0 (float *, cores);
      run->ss_nxt = P[0] > 1 ? g_new0 (float *, cores) : NULL;
      for (guint32 t = 0; t < cores; t++)
        {
          run->ss[t] = g_new0 (float, n_ss);
          if (P[0] > 1)
            run->ss_nxt[t] = g_new0 (float, n_ss);
        }
    }
  for (guint v = 1; v < V; v++)
    {
      const ElkTensor *t_in = elk_graph_get_tensor (F->graph, op->tensors[v]);
      const ElkAccess *acc = &op->access[v];
      Layout *cold = &F->cold[i * ELK_MAX_OPERANDS + v];
      Source src = { 0 };

      if (t_in->origin != ELK_TENSOR_ORIGIN_ACTIVATION && preloaded)
        src.lay = cold;
      else if (F->produced[op->tensors[v]].tile != NULL)
        src.lay = &F->produced[op->tensors[v]];
      else
        {
          src.host = host_data (F, op->tensors[v], error);
          if (src.host == NULL)
            return FALSE;
        }
      for (guint32 t = 0; t < cores; t++)
        {
          guint64 lo[ELK_MAX_DIMS], hi[ELK_MAX_DIMS], pst[ELK_MAX_DIMS];
          guint64 alo[ELK_MAX_DIMS], ahi[ELK_MAX_DIMS], apo[ELK_MAX_DIMS];
          guint64 ast[ELK_MAX_DIMS], a[ELK_MAX_DIMS];
          const guint32 *ownbox = NULL;
          gboolean empty = FALSE;

          /* The piece: along each dimension the operand indexes, the
           * chunks whose leading round digits are the tile's (pst: where
           * the piece starts, before clipping at the tile's end). */
          for (guint d = 0; d < D; d++)
            {
              guint64 tlo = (guint64) coord[t * D + d] * S->sl[d];
              guint64 thi = MIN (tlo + S->sl[d], op->extents[d]);
              guint64 pidx = 0, plen = (guint64) S->chunks[v][d] * S->stp[d];
              for (guint r = 0; r < R->n; r++)
                if (R->dim[r] == d && (R->mask[r] & (1u << v)))
                  pidx = pidx * R->size[r] + delta[t * R->n + r];
              pst[d] = tlo + pidx * plen;
              lo[d] = MIN (pst[d], thi);
              hi[d] = MIN (pst[d] + plen, thi);
              if (lo[d] >= hi[d] && (mask[v] & (1u << d)))
                empty = TRUE;
            }
          if (empty)
            continue;
          /* The same in the operand's axis coordinates; the buffer is
           * row-major over the axes from the piece's start. */
          for (guint x = 0; x < acc->n_axes; x++)
            {
              gint d0 = acc->dims[x][0], d1 = acc->dims[x][1];
              axis_range (acc, x, lo, hi, &alo[x], &ahi[x]);
              apo[x] = pst[d0] + (d1 >= 0 ? pst[d1] : 0);
              ast[x] = S->stride[v][d0];
              a[x] = alo[x];
            }
          if (src.lay == cold && F->cold_box[i * ELK_MAX_OPERANDS + v] != NULL
              && t < cold->n_tiles)
            ownbox = F->cold_box[i * ELK_MAX_OPERANDS + v]
                     + (gsize) t * 2 * ELK_MAX_DIMS;
          for (;;)
            {
              guint64 fl = 0, k = 0;
              gboolean local = ownbox != NULL;
              float val;
              gint x;

              for (guint y = 0; y < acc->n_axes; y++)
                {
                  fl = fl * t_in->shape[y] + a[y];
                  k += (a[y] - apo[y]) * ast[y];
                  if (local && (a[y] < ownbox[2 * y]
                                || a[y] >= ownbox[2 * y + 1]))
                    local = FALSE;
                }
              if (local)
                {
                  /* Already on this tile from its own preload. */
                  guint64 lk = 0;
                  for (guint y = 0; y < acc->n_axes; y++)
                    lk = lk * (ownbox[2 * y + 1] - ownbox[2 * y])
                         + (a[y] - ownbox[2 * y]);
                  val = cold->bufs[t][lk];
                }
              else if (!fetch (F, &src, t, fl, &val))
                {
                  g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                               "chip 'ipu-pod': operator '%s' needs element %"
                               G_GUINT64_FORMAT " of '%s', which no tile "
                               "holds", op->name, fl, t_in->name);
                  return FALSE;
                }
              cur[v][t][k] = val;
              for (x = (gint) acc->n_axes - 1; x >= 0; x--)
                {
                  if (++a[x] < ahi[x])
                    break;
                  a[x] = alo[x];
                }
              if (x < 0)
                break;
            }
        }
    }
  return TRUE;
}

/* The compute-shift steps: every tile runs the kernel on its pieces, then
 * one round's operands move one step along their rings. */
static void
compute_and_shift (OpRun *run)
{
  Func *F = run->F;
  const ElkOp *op = run->op;
  const guint D = run->D, V = run->V;
  const guint32 cores = run->cores;
  const guint64 steps = run->steps;
  Shape *S = &run->S;
  const Rounds *R = &run->R;
  const Kernel *K = &run->K;
  const FuncKind fn = run->fn;
  const guint8 *mask = run->mask;
  const guint32 *coord = run->coord, *sender = run->sender;
  guint32 *delta = run->delta;
  float ***cur = run->cur, ***nxt = run->nxt;
  guint32 digit[MAX_ROUNDS] = { 0 };

  for (guint64 s = 0; s < steps; s++)
    {
      gint r;
      for (guint32 t = 0; t < cores; t++)
        {
          guint64 len[ELK_MAX_DIMS], base[ELK_MAX_OPERANDS];
          float *bufs[ELK_MAX_OPERANDS];
          guint64 lo[ELK_MAX_DIMS];

          for (guint d = 0; d < D; d++)
            {
              guint64 tlo = (guint64) coord[t * D + d] * S->sl[d];
              guint64 thi = MIN (tlo + S->sl[d], op->extents[d]);
              guint64 q = 0;
              for (guint rr = 0; rr < R->n; rr++)
                if (R->dim[rr] == d)
                  q = q * R->size[rr] + delta[t * R->n + rr];
              lo[d] = tlo + q * S->stp[d];
              len[d] = lo[d] >= thi ? 0 : MIN (S->stp[d], thi - lo[d]);
            }
          for (guint v = 0; v < V; v++)
            {
              base[v] = 0;
              bufs[v] = cur[v][t];
              for (guint d = 0; d < D; d++)
                {
                  guint64 tlo = (guint64) coord[t * D + d] * S->sl[d];
                  guint64 pl = (guint64) S->chunks[v][d] * S->stp[d];
                  base[v] += ((lo[d] - tlo) % pl) * S->stride[v][d];
                }
            }
          if (K->n_pool > 0)
            run_pool (K, D, len, lo, bufs, base, S->stride);
          else if (fn == F_SOFTMAX)
            run_softmax (K->softmax, D, len, bufs, base, S->stride);
          else if (fn == R_TOPK)
            run_topk (mask[0], op->access[0].dims[op->access[0].n_axes - 1][0],
                      D, len, lo, bufs, base, S->stride);
          else if (fn == F_NORM_MAC)
            run_norm_mac (D, len, bufs, base, S->stride, run->ss[t]);
          else if (fn == F_SOFTMAX_MAC)
            run_softmax_mac (D, len, bufs, base, S->stride, run->ss[t]);
          else if (fn == F_LAYER_MAC)
            run_layer_mac (D, len, bufs, base, S->stride, run->ss[t],
                           S->buf_len[0]);
          else
            run_kernel (fn, K->imm, D, V, len, bufs, base, S->stride);
          /* The bias joins the sum once per output element: in the one
           * call whose box starts at 0 along every reduced dimension,
           * at those coordinates (each point of the iteration space is
           * computed exactly once, so exactly one call qualifies). */
          if (K->bias)
            {
              gboolean first = TRUE;
              for (guint d = 0; d < D; d++)
                if (!(mask[0] & (1u << d)))
                  {
                    if (lo[d] != 0)
                      first = FALSE;
                    len[d] = MIN (len[d], 1);
                  }
              if (first)
                run_kernel (F_BIAS, K->imm, D, V, len, bufs, base,
                            S->stride);
            }
        }
      F->rep->kernel_calls += cores;
      if (s + 1 == steps)
        break;
      for (r = (gint) R->n - 1; r >= 0; r--)
        {
          if (digit[r] + 1 < R->size[r])
            {
              digit[r]++;
              break;
            }
          digit[r] = 0;
        }
      g_assert (r >= 0);
      /* Shift round r: every operand of it moves one step along its
       * ring; the tiles' digit of r goes up by one. */
      for (guint v = 0; v < V; v++)
        {
          float **tmp;
          if (!(R->mask[r] & (1u << v)))
            continue;
          for (guint32 t = 0; t < cores; t++)
            {
              guint32 from = sender[((gsize) r * V + v) * cores + t];
              memcpy (nxt[v][t], cur[v][from],
                      sizeof (float) * S->buf_len[v]);
              if (from != t)
                {
                  F->rep->exchanged_elements += S->buf_len[v];
                  if (from / F->m->tiles_per_chip
                      != t / F->m->tiles_per_chip)
                    F->rep->xchip_elements += S->buf_len[v];
                }
            }
          tmp = cur[v];
          cur[v] = nxt[v];
          nxt[v] = tmp;
          /* The sums of squares travel with their output piece. */
          if (v == 0 && run->ss != NULL)
            {
              for (guint32 t = 0; t < cores; t++)
                memcpy (run->ss_nxt[t],
                        run->ss[sender[((gsize) r * V) * cores + t]],
                        sizeof (float) * run->n_ss * S->buf_len[0]);
              tmp = run->ss;
              run->ss = run->ss_nxt;
              run->ss_nxt = tmp;
            }
        }
      for (guint32 t = 0; t < cores; t++)
        delta[t * R->n + r] = (delta[t * R->n + r] + 1) % R->size[r];
      F->rep->shifts++;
    }
}

/* Partial outputs: the copies of one output piece (one per ring)
 * reduce-scatter it, copy k owning the k-th of r parts; then every
 * element of the output has exactly one home. */
static gboolean
reduce_outputs (OpRun *run, GError **error)
{
  Func *F = run->F;
  const ElkOp *op = run->op;
  const ElkTensor *out_t = run->out_t;
  const ElkPlan *hp = run->hp;
  const guint D = run->D;
  const guint32 cores = run->cores;
  const Shape *S = &run->S;
  const Rounds *R = &run->R;
  const Kernel *K = &run->K;
  const FuncKind fn = run->fn;
  const guint8 *mask = run->mask;
  const guint32 *P = run->P, *reps = run->reps;
  const guint32 *coord = run->coord, *delta = run->delta;
  float ***cur = run->cur;
  Layout *outl = run->outl;
  guint32 r_out = reps[0] / P[0];
  guint64 n_groups = 1, n_reduced = 1;
  guint32 *members;
  guint32 *count;

  for (guint d = 0; d < D; d++)
    if (mask[0] & (1u << d))
      n_groups *= hp->spatial[d];
    else
      n_reduced *= op->extents[d];
  n_groups *= P[0];
  members = g_new (guint32, n_groups * r_out);
  count = g_new0 (guint32, n_groups);
  for (guint32 t = 0; t < cores; t++)
    {
      guint64 gidx = 0, tuple = 0, key;
      for (guint d = 0; d < D; d++)
        if (mask[0] & (1u << d))
          gidx = gidx * hp->spatial[d] + coord[t * D + d];
      for (guint r = 0; r < R->n; r++)
        if (R->mask[r] & 1u)
          tuple = tuple * R->size[r] + delta[t * R->n + r];
      key = gidx * P[0] + tuple;
      if (count[key] >= r_out)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': operator '%s' ends with more than "
                       "%u copies of one output piece", op->name, r_out);
          g_free (members);
          g_free (count);
          return FALSE;
        }
      members[key * r_out + count[key]++] = t;
    }
  layout_clear (outl);
  outl->n_tiles = cores;
  outl->tile = g_new (guint32, MAX (out_t->n_elements, 1));
  outl->off = g_new (guint32, MAX (out_t->n_elements, 1));
  memset (outl->tile, 0xff, sizeof (guint32) * MAX (out_t->n_elements, 1));
  for (guint64 key = 0; key < n_groups; key++)
    {
      guint64 n = S->buf_len[0];
      if (count[key] != r_out)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': operator '%s' ends with %u copies "
                       "of an output piece, expected %u", op->name,
                       count[key], r_out);
          g_free (members);
          g_free (count);
          return FALSE;
        }
      for (guint32 k = 0; k < r_out && r_out > 1; k++)
        {
          guint32 me = members[key * r_out + k];
          guint64 a = n * k / r_out, b = n * (k + 1) / r_out;
          for (guint32 j = 0; j < r_out; j++)
            {
              guint32 peer = members[key * r_out + j];
              if (j == k)
                continue;
              for (guint64 e = a; e < b; e++)
                cur[0][me][e] = combine (fn == R_MAX || fn == R_MIN
                                           ? fn : R_SUM,
                                         cur[0][me][e], cur[0][peer][e]);
              /* F_NORM_MAC's sums of squares (F_LAYER_MAC's four
               * shadows) join the reduction. */
              for (guint j = 0; j < run->n_ss; j++)
                for (guint64 e = a; e < b; e++)
                  run->ss[me][j * n + e] += run->ss[peer][j * n + e];
              F->rep->exchanged_elements += b - a;
              if (peer / F->m->tiles_per_chip != me / F->m->tiles_per_chip)
                F->rep->xchip_elements += b - a;
            }
        }
      /* The homes of the piece's elements. */
      for (guint32 k = 0; k < r_out; k++)
        {
          guint32 t = members[key * r_out + k];
          guint64 a = n * k / r_out, b = n * (k + 1) / r_out;
          guint64 lo[ELK_MAX_DIMS];
          for (guint d = 0; d < D; d++)
            {
              guint64 tlo = (guint64) coord[t * D + d] * S->sl[d];
              guint64 pidx = 0, plen = (guint64) S->chunks[0][d] * S->stp[d];
              for (guint r = 0; r < R->n; r++)
                if (R->dim[r] == d && (R->mask[r] & 1u))
                  pidx = pidx * R->size[r] + delta[t * R->n + r];
              lo[d] = tlo + pidx * plen;
            }
          for (guint64 e = a; e < b; e++)
            {
              guint64 g[ELK_MAX_DIMS], rest = e, fl;
              gboolean valid = TRUE;
              const ElkAccess *acc = &op->access[0];
              for (gint x = (gint) acc->n_axes - 1; x >= 0; x--)
                {
                  gint d = acc->dims[x][0];
                  guint64 ext = (guint64) S->chunks[0][d] * S->stp[d];
                  guint64 tlo = (guint64) coord[t * D + d] * S->sl[d];
                  g[d] = lo[d] + rest % ext;
                  rest /= ext;
                  if (g[d] >= MIN (tlo + S->sl[d], op->extents[d]))
                    valid = FALSE;
                }
              if (!valid)
                continue;
              fl = flat_index (out_t, acc, g);
              if (outl->tile[fl] != NONE)
                {
                  g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                               "chip 'ipu-pod': tiles %u and %u both end "
                               "up owning element %" G_GUINT64_FORMAT
                               " of '%s'", outl->tile[fl], t, fl,
                               out_t->name);
                  g_free (members);
                  g_free (count);
                  return FALSE;
                }
              outl->tile[fl] = t;
              outl->off[fl] = (guint32) e;
              /* Means divide the reduced sum, on its home tile. */
              if (K->post == POST_MEAN)
                cur[0][t][e] /= (float) n_reduced;
              else if (fn == F_NORM_MAC)
                cur[0][t][e] *= 1.0f / sqrtf (run->ss[t][e]);
              else if (fn == F_SOFTMAX_MAC)
                cur[0][t][e] /= run->ss[t][e];
              else if (fn == F_LAYER_MAC)
                {
                  /* Σ_k (x - S)² = Σx² + (K - 2) S², S = Σx: the
                   * frontend's mean is the plain sum. */
                  const float *ls = run->ss[t];
                  float s1 = ls[e], s2 = ls[n + e];
                  float r = 1.0f
                            / sqrtf (s2 + ((float) n_reduced - 2.0f) * s1 * s1);
                  cur[0][t][e]
                      = r * (cur[0][t][e] - s1 * ls[2 * n + e]) + ls[3 * n + e];
                }
              else if (K->post == POST_POOL_AVG)
                cur[0][t][e] /= pool_count (K, g);
            }
        }
    }
  g_free (members);
  g_free (count);
  for (guint64 e = 0; e < out_t->n_elements; e++)
    if (outl->tile[e] == NONE)
      {
        g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                     "chip 'ipu-pod': after operator '%s' no tile holds "
                     "element %" G_GUINT64_FORMAT " of its output '%s'",
                     op->name, e, out_t->name);
        return FALSE;
      }
  outl->bufs = cur[0];
  cur[0] = NULL;
  return TRUE;
}

/* Functional mode keeps every element as a float32, which holds every
 * integer up to 2^24 exactly: an integer tensor (an int32 accumulator of
 * MatMulInteger or ConvInteger, say) whose values go beyond would no
 * longer be ONNX's exact result, so the run stops there rather than
 * return a rounded one. */
static gboolean
check_exact (const ElkOp *op,
             const ElkTensor *out_t,
             const float *flat,
             GError **error)
{
  if (out_t->dtype != ELK_DTYPE_I8 && out_t->dtype != ELK_DTYPE_U8
      && out_t->dtype != ELK_DTYPE_I32 && out_t->dtype != ELK_DTYPE_I64)
    return TRUE;
  for (guint64 e = 0; e < out_t->n_elements; e++)
    if (!(fabsf (flat[e]) <= 0x1.0p24f))
      {
        g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                     "chip 'ipu-pod': element %" G_GUINT64_FORMAT " of '%s' "
                     "(%s), written by operator '%s', is %.9g; functional "
                     "mode holds integers as float32, exact only up to 2^24 "
                     "in magnitude",
                     e, out_t->name, elk_dtype_to_string (out_t->dtype),
                     op->name, (double) flat[e]);
        return FALSE;
      }
  return TRUE;
}

static gboolean
execute_op (Func *F, guint i, const ElkPlan *hp, gboolean preloaded,
            GError **error)
{
  OpRun run = { 0 };
  gboolean ok;

  run.F = F;
  run.i = i;
  run.op = elk_graph_get_op (F->graph, i);
  run.out_t = elk_graph_get_tensor (F->graph, run.op->tensors[0]);
  run.hp = hp;
  run.D = run.op->n_dims;
  run.V = run.op->n_operands;
  run.outl = &F->produced[run.op->tensors[0]];

  ok = check_op (&run, error) && plan_shape (&run, error);
  if (ok)
    {
      place_tiles (&run);
      ok = build_rings (&run, error) && gather_inputs (&run, preloaded, error);
    }
  if (ok)
    {
      compute_and_shift (&run);
      ok = reduce_outputs (&run, error);
    }
  if (ok)
    {
      /* The gathered output, for the caller. */
      const ElkTensor *out_t = run.out_t;
      const Layout *outl = run.outl;
      float *flat = g_new (float, MAX (out_t->n_elements, 1));
      for (guint64 e = 0; e < out_t->n_elements; e++)
        flat[e] = outl->bufs[outl->tile[e]][outl->off[e]];
      ok = check_exact (run.op, out_t, flat, error);
      g_hash_table_replace (F->f->tensors, g_strdup (out_t->name),
                            g_bytes_new_take (flat, out_t->n_elements
                                                      * sizeof (float)));
      F->rep->ops++;
    }
  op_run_clear (&run);
  return ok;
}

gboolean
elk__ipu_functional (const IpuMachine *m,
                     ElkProgram *program,
                     IpuFunctional *f,
                     IpuFuncReport *report,
                     GError **error)
{
  ElkGraph *graph = elk_program_get_graph (program);
  const guint n_ops = elk_graph_get_n_ops (graph);
  const guint n_tensors = elk_graph_get_n_tensors (graph);
  g_autofree gboolean *preloaded = g_new0 (gboolean, n_ops);
  Func F = { 0 };
  gboolean ok = TRUE;

  memset (report, 0, sizeof (*report));
  F.m = m;
  F.graph = graph;
  F.f = f;
  F.rep = report;
  F.host = g_new0 (float *, n_tensors);
  F.produced = g_new0 (Layout, n_tensors);
  F.cold = g_new0 (Layout, (gsize) n_ops * ELK_MAX_OPERANDS);
  F.cold_box = g_new0 (guint32 *, (gsize) n_ops * ELK_MAX_OPERANDS);

  for (guint s = 0; ok && s < elk_program_get_n_steps (program); s++)
    {
      const ElkStep *step = elk_program_get_step (program, s);
      const ElkProgramOp *pop = elk_program_peek_op (program, step->op);

      if (step->kind == ELK_STEP_PRELOAD)
        {
          ok = preload_op (&F, step->op, &pop->preload_plan, error);
          preloaded[step->op] = TRUE;
        }
      else
        {
          ok = execute_op (&F, step->op, &pop->exec_plan,
                           preloaded[step->op], error);
          /* The preload space becomes the execution space and is gone
           * with the operator. */
          for (guint v = 0; v < ELK_MAX_OPERANDS; v++)
            {
              layout_clear (&F.cold[step->op * ELK_MAX_OPERANDS + v]);
              g_clear_pointer (&F.cold_box[step->op * ELK_MAX_OPERANDS + v],
                               g_free);
            }
        }
    }

  for (guint t = 0; t < n_tensors; t++)
    {
      g_free (F.host[t]);
      layout_clear (&F.produced[t]);
    }
  for (guint k = 0; k < n_ops * ELK_MAX_OPERANDS; k++)
    {
      layout_clear (&F.cold[k]);
      g_free (F.cold_box[k]);
    }
  g_free (F.host);
  g_free (F.produced);
  g_free (F.cold);
  g_free (F.cold_box);
  return ok;
}
