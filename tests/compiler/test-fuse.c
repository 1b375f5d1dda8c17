/* test-fuse.c: operator fusion (elk_graph_fuse(), issue 19 item 3): an
 * RMSNorm, a LayerNorm or a softmax folded into the MatMuls that read it,
 * the chains that must stay as they are, routing conditions, flags, and
 * the Llama frontend's paper models. */
#include "config.h"

#include <string.h>
#include <elk/elk.h>

#include "elk-test-graph.h"
#include "elk-test-util.h"

static ElkRegistry *registry;

/* How a hand-built norm deviates from RMSNorm feeding two MatMuls. */
typedef enum
{
  NORM_PLAIN,
  NORM_EXTRA_READER, /* an add also reads the norm's output */
  NORM_CONTRACT_M,   /* the second MatMul contracts over m, not k */
  NORM_EXP,          /* exp where square should be */
  NORM_SCALE_OTHER,  /* scale multiplies another tensor than x */
  NORM_TEMP_READER,  /* an add also reads the sum of squares */
} NormVariant;

static guint32
tensor (ElkGraph *g,
        ElkTensorOrigin origin,
        guint n_dims,
        guint64 a,
        guint64 b,
        const char *name)
{
  guint64 shape[2] = { a, b };
  return (guint32) elk_test_add_tensor (g, origin, n_dims, shape, "%s", name);
}

static void
add (ElkGraph *g,
     const char *name,
     const char *type,
     ElkOpKind kind,
     const char *spec,
     guint32 t0,
     guint32 t1,
     guint32 t2,
     guint n)
{
  guint32 t[3] = { t0, t1, t2 };
  g_autoptr (GError) error = NULL;

  g_assert_cmpint (elk_graph_add_op (g, name, type, kind, 0, spec, t, n, NULL,
                                     &error),
                   >=, 0);
  g_assert_no_error (error);
}

/* x (4 x 16) -> RMSNorm -> q and v (MatMuls with 16 x 8 weights) -> their
 * sum.  Operators: square, sum, rsqrt, scale, gain, q, v, add (and an
 * extra reader for some variants). */
static ElkGraph *
norm_graph (NormVariant variant)
{
  const ElkTensorOrigin A = ELK_TENSOR_ORIGIN_ACTIVATION;
  const ElkTensorOrigin W = ELK_TENSOR_ORIGIN_WEIGHT;
  ElkGraph *g = elk_graph_new ("norm");
  guint32 x = tensor (g, A, 2, 4, 16, "x");
  guint32 other = tensor (g, A, 2, 4, 16, "other");
  guint32 sq = tensor (g, A, 2, 4, 16, "sq");
  guint32 ss = tensor (g, A, 1, 4, 1, "ss");
  guint32 r = tensor (g, A, 1, 4, 1, "r");
  guint32 sc = tensor (g, A, 2, 4, 16, "scaled");
  guint32 gain = tensor (g, W, 1, 16, 1, "gain");
  guint32 y = tensor (g, A, 2, 4, 16, "y");
  guint32 wq = tensor (g, W, 2, 16, 8, "wq");
  guint32 wv = tensor (g, W, 2, variant == NORM_CONTRACT_M ? 4 : 16, 8, "wv");
  guint32 q = tensor (g, A, 2, 4, 8, "q");
  guint32 v = tensor (g, A, 2, variant == NORM_CONTRACT_M ? 16 : 4, 8, "v");
  guint32 z = tensor (g, A, 2, 4, 8, "z");

  elk_graph_set_attribute (g, "model", "hand");
  add (g, "n.square", variant == NORM_EXP ? "exp" : "square", ELK_OP_UNARY,
       "mk->mk", x, sq, 0, 2);
  add (g, "n.sum", "sum", ELK_OP_REDUCE, "mk->m", sq, ss, 0, 2);
  if (variant == NORM_TEMP_READER)
    {
      guint32 ss2 = tensor (g, A, 1, 4, 1, "ss2");
      add (g, "n.peek", "add", ELK_OP_ELEMENTWISE, "m,m->m", ss, ss, ss2, 3);
    }
  add (g, "n.rsqrt", "rsqrt", ELK_OP_UNARY, "m->m", ss, r, 0, 2);
  add (g, "n.scale", "mul", ELK_OP_ELEMENTWISE, "mk,m->mk",
       variant == NORM_SCALE_OTHER ? other : x, r, sc, 3);
  add (g, "n.gain", "mul", ELK_OP_ELEMENTWISE, "mk,k->mk", sc, gain, y, 3);
  add (g, "q", "matmul", ELK_OP_MATMUL, "mk,kn->mn", y, wq, q, 3);
  if (variant == NORM_CONTRACT_M)
    add (g, "v", "matmul", ELK_OP_MATMUL, "km,kn->mn", y, wv, v, 3);
  else
    add (g, "v", "matmul", ELK_OP_MATMUL, "mk,kn->mn", y, wv, v, 3);
  if (variant == NORM_EXTRA_READER)
    {
      guint32 y2 = tensor (g, A, 2, 4, 16, "y2");
      add (g, "peek", "add", ELK_OP_ELEMENTWISE, "mk,mk->mk", y, x, y2, 3);
    }
  add (g, "z", "add", ELK_OP_ELEMENTWISE, "mn,mn->mn", q,
       variant == NORM_CONTRACT_M ? q : v, z, 3);
  return g;
}

static const ElkOp *
find_op (const ElkGraph *g, const char *name)
{
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    if (strcmp (elk_graph_get_op (g, i)->name, name) == 0)
      return elk_graph_get_op (g, i);
  return NULL;
}

static void
test_fuse_hand (void)
{
  g_autoptr (ElkGraph) g = norm_graph (NORM_PLAIN);
  g_autoptr (ElkGraph) f = NULL;
  g_autoptr (GError) error = NULL;
  const char *const names[] = { "q", "v" };
  double norm_flops = 0;

  for (guint i = 0; i < 5; i++)
    norm_flops += elk_graph_get_op (g, i)->flops;
  f = elk_graph_fuse (g, ELK_FUSE_NORM, &error);
  g_assert_no_error (error);
  g_assert_true (f != g);
  g_assert_true (elk_graph_validate (f, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (elk_graph_get_n_ops (f), ==, 3);
  g_assert_cmpstr (elk_graph_get_attribute (f, "fused-norms"), ==, "1");
  g_assert_cmpstr (elk_graph_get_attribute (f, "model"), ==, "hand");
  g_assert_cmpfloat_with_epsilon (elk_graph_get_total_flops (f),
                                  elk_graph_get_total_flops (g), 1e-9);
  /* Each fused operator preloads the gain itself: one more read of it. */
  g_assert_cmpuint (
      elk_graph_get_hbm_bytes (f), ==,
      elk_graph_get_hbm_bytes (g)
          + elk_graph_get_tensor (g, (guint) elk_graph_find_tensor (g, "gain"))
                ->bytes);
  /* The intermediates are gone; x, the gain and the outputs stay. */
  g_assert_cmpint (elk_graph_find_tensor (f, "sq"), <, 0);
  g_assert_cmpint (elk_graph_find_tensor (f, "ss"), <, 0);
  g_assert_cmpint (elk_graph_find_tensor (f, "r"), <, 0);
  g_assert_cmpint (elk_graph_find_tensor (f, "scaled"), <, 0);
  g_assert_cmpint (elk_graph_find_tensor (f, "y"), <, 0);

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      const ElkOp *op = find_op (f, names[i]);
      const ElkOp *mm = find_op (g, names[i]);
      const ElkTensor *gain;

      g_assert_nonnull (op);
      g_assert_cmpstr (op->type, ==, ELK_FUSE_RMSNORM_MATMUL);
      g_assert_cmpint (op->kind, ==, ELK_OP_MATMUL);
      g_assert_cmpuint (op->n_operands, ==, 4);
      g_assert_cmpuint (op->n_dims, ==, 3);
      g_assert_cmpstr (elk_graph_get_tensor (f, op->tensors[0])->name, ==,
                       elk_graph_get_tensor (g, mm->tensors[0])->name);
      g_assert_cmpstr (elk_graph_get_tensor (f, op->tensors[1])->name, ==, "x");
      g_assert_cmpstr (elk_graph_get_tensor (f, op->tensors[2])->name, ==,
                       i == 0 ? "wq" : "wv");
      gain = elk_graph_get_tensor (f, op->tensors[3]);
      g_assert_cmpstr (gain->name, ==, "gain");
      /* The gain is indexed by the contracted dimension, k. */
      g_assert_cmpuint (op->access[3].n_axes, ==, 1);
      g_assert_cmpint (op->dim_names[op->access[3].dims[0][0]], ==, 'k');
      g_assert_cmpfloat_with_epsilon (op->flops, mm->flops + norm_flops / 2,
                                      1e-9);
    }
  g_assert_cmpstr (elk_graph_get_op (f, 2)->type, ==, "add");
}

/* How a hand-built LayerNorm deviates from the frontend's spelling. */
typedef enum
{
  LAYER_PLAIN,
  LAYER_NO_BIAS,        /* no bias add: an RMSNorm of the centred x */
  LAYER_CENTRED_READER, /* an add also reads the centred x */
  LAYER_MEAN_DIV,       /* the centre divides instead of subtracting */
} LayerVariant;

/* x (4 x 16) -> LayerNorm (mean, centre, square, sum, rsqrt, scale, gain,
 * bias) -> q and v (MatMuls with 16 x 8 weights) -> their sum. */
static ElkGraph *
layer_graph (LayerVariant variant)
{
  const ElkTensorOrigin A = ELK_TENSOR_ORIGIN_ACTIVATION;
  const ElkTensorOrigin W = ELK_TENSOR_ORIGIN_WEIGHT;
  ElkGraph *g = elk_graph_new ("layer");
  guint32 x = tensor (g, A, 2, 4, 16, "x");
  guint32 mean = tensor (g, A, 1, 4, 1, "mean");
  guint32 ce = tensor (g, A, 2, 4, 16, "centred");
  guint32 sq = tensor (g, A, 2, 4, 16, "sq");
  guint32 ss = tensor (g, A, 1, 4, 1, "ss");
  guint32 r = tensor (g, A, 1, 4, 1, "r");
  guint32 sc = tensor (g, A, 2, 4, 16, "scaled");
  guint32 gain = tensor (g, W, 1, 16, 1, "gain");
  guint32 bias = tensor (g, W, 1, 16, 1, "bias");
  guint32 gy = tensor (g, A, 2, 4, 16, "gained");
  guint32 y = variant == LAYER_NO_BIAS ? gy : tensor (g, A, 2, 4, 16, "y");
  guint32 wq = tensor (g, W, 2, 16, 8, "wq");
  guint32 wv = tensor (g, W, 2, 16, 8, "wv");
  guint32 q = tensor (g, A, 2, 4, 8, "q");
  guint32 v = tensor (g, A, 2, 4, 8, "v");
  guint32 z = tensor (g, A, 2, 4, 8, "z");

  add (g, "n.mean", "sum", ELK_OP_REDUCE, "mk->m", x, mean, 0, 2);
  add (g, "n.centre", variant == LAYER_MEAN_DIV ? "div" : "sub",
       ELK_OP_ELEMENTWISE, "mk,m->mk", x, mean, ce, 3);
  add (g, "n.square", "square", ELK_OP_UNARY, "mk->mk", ce, sq, 0, 2);
  add (g, "n.sum", "sum", ELK_OP_REDUCE, "mk->m", sq, ss, 0, 2);
  add (g, "n.rsqrt", "rsqrt", ELK_OP_UNARY, "m->m", ss, r, 0, 2);
  add (g, "n.scale", "mul", ELK_OP_ELEMENTWISE, "mk,m->mk", ce, r, sc, 3);
  add (g, "n.gain", "mul", ELK_OP_ELEMENTWISE, "mk,k->mk", sc, gain, gy, 3);
  if (variant != LAYER_NO_BIAS)
    add (g, "n.bias", "add", ELK_OP_ELEMENTWISE, "mk,k->mk", gy, bias, y, 3);
  if (variant == LAYER_CENTRED_READER)
    {
      guint32 c2 = tensor (g, A, 2, 4, 16, "c2");
      add (g, "peek", "add", ELK_OP_ELEMENTWISE, "mk,mk->mk", ce, x, c2, 3);
    }
  add (g, "q", "matmul", ELK_OP_MATMUL, "mk,kn->mn", y, wq, q, 3);
  add (g, "v", "matmul", ELK_OP_MATMUL, "mk,kn->mn", y, wv, v, 3);
  add (g, "z", "add", ELK_OP_ELEMENTWISE, "mn,mn->mn", q, v, z, 3);
  return g;
}

/* A LayerNorm read by two MatMuls becomes two layernorm_matmul operators
 * reading x, the weight, the gain and the bias; without its bias it is an
 * RMSNorm of the centred x; with another reader of the centred x or a
 * centre that is not a subtraction it stays. */
static void
test_fuse_layer (void)
{
  g_autoptr (GError) error = NULL;
  double norm_flops = 0;

  {
    g_autoptr (ElkGraph) g = layer_graph (LAYER_PLAIN);
    g_autoptr (ElkGraph) f = elk_graph_fuse (g, ELK_FUSE_NORM, &error);

    g_assert_no_error (error);
    g_assert_true (elk_graph_validate (f, &error));
    g_assert_no_error (error);
    for (guint i = 0; i < 8; i++)
      norm_flops += elk_graph_get_op (g, i)->flops;
    g_assert_cmpuint (elk_graph_get_n_ops (f), ==, 3);
    g_assert_cmpstr (elk_graph_get_attribute (f, "fused-norms"), ==, "1");
    g_assert_cmpfloat_with_epsilon (elk_graph_get_total_flops (f),
                                    elk_graph_get_total_flops (g), 1e-9);
    for (guint i = 0; i < 2; i++)
      {
        const ElkOp *op = elk_graph_get_op (f, i);
        const ElkOp *mm = find_op (g, op->name);
        g_autofree char *sig = elk_op_dup_signature (f, op);

        g_assert_cmpstr (op->type, ==, ELK_FUSE_LAYERNORM_MATMUL);
        g_assert_cmpuint (op->n_operands, ==, 5);
        g_assert_cmpstr (elk_graph_get_tensor (f, op->tensors[1])->name, ==,
                         "x");
        g_assert_cmpstr (elk_graph_get_tensor (f, op->tensors[2])->name, ==,
                         i == 0 ? "wq" : "wv");
        g_assert_cmpstr (elk_graph_get_tensor (f, op->tensors[3])->name, ==,
                         "gain");
        g_assert_cmpstr (elk_graph_get_tensor (f, op->tensors[4])->name, ==,
                         "bias");
        g_assert_cmpstr (elk_graph_get_tensor (f, op->tensors[0])->name, ==,
                         i == 0 ? "q" : "v");
        for (guint v = 3; v < 5; v++)
          {
            g_assert_cmpuint (op->access[v].n_axes, ==, 1);
            g_assert_cmpint (op->dim_names[op->access[v].dims[0][0]], ==, 'k');
          }
        g_assert_cmpfloat_with_epsilon (op->flops, mm->flops + norm_flops / 2,
                                        1e-9);
        g_test_message ("%s: %s", op->name, sig);
      }
    for (guint t = 0; t < elk_graph_get_n_tensors (g); t++)
      {
        const char *name = elk_graph_get_tensor (g, t)->name;
        gboolean kept = elk_graph_find_tensor (f, name) >= 0;
        g_assert_true (
            kept
            == g_strv_contains ((const char *const[]){ "x", "gain", "bias",
                                                       "wq", "wv", "q", "v",
                                                       "z", NULL },
                                name));
      }
  }
  {
    g_autoptr (ElkGraph) g = layer_graph (LAYER_NO_BIAS);
    g_autoptr (ElkGraph) f = elk_graph_fuse (g, ELK_FUSE_NORM, &error);

    g_assert_no_error (error);
    /* mean and centre stay; the rest is an RMSNorm of the centred x. */
    g_assert_cmpuint (elk_graph_get_n_ops (f), ==, 5);
    g_assert_cmpstr (elk_graph_get_op (f, 2)->type, ==,
                     ELK_FUSE_RMSNORM_MATMUL);
    g_assert_cmpstr (elk_graph_get_tensor (f,
                                           elk_graph_get_op (f, 2)->tensors[1])
                         ->name,
                     ==, "centred");
  }
  for (LayerVariant v = LAYER_CENTRED_READER; v <= LAYER_MEAN_DIV; v++)
    {
      g_autoptr (ElkGraph) g = layer_graph (v);
      g_autoptr (ElkGraph) f = elk_graph_fuse (g, ELK_FUSE_NORM, &error);

      g_assert_no_error (error);
      g_assert_cmpuint (elk_graph_get_n_ops (f), ==, elk_graph_get_n_ops (g));
      g_assert_cmpstr (elk_graph_get_attribute (f, "fused-norms"), ==, "0");
    }
}

/* How a hand-built softmax deviates from the frontends' spelling. */
typedef enum
{
  SM_PLAIN,
  SM_EXTRA_READER, /* an add also reads the probabilities */
  SM_EXP_READER,   /* an add also reads the exponentials */
  SM_SUM_READER,   /* an add also reads the row sums */
  SM_CONTRACT_M,   /* the second MatMul contracts over m, not s */
  SM_OTHER_AXIS,   /* the sum and the divide work along m, the exp along s */
  SM_SUB,          /* a plain sub where the sub-exp should be */
} SoftmaxVariant;

/* Scores x (4 x 16) -> softmax over s (max, sub-exp, sum, div) -> o1 and
 * o2 (MatMuls with 16 x 8 value matrices, contracting over s) -> their
 * sum. */
static ElkGraph *
softmax_graph (SoftmaxVariant variant)
{
  const ElkTensorOrigin A = ELK_TENSOR_ORIGIN_ACTIVATION;
  const ElkTensorOrigin W = ELK_TENSOR_ORIGIN_WEIGHT;
  gboolean other = variant == SM_OTHER_AXIS;
  ElkGraph *g = elk_graph_new ("softmax");
  guint32 x = tensor (g, A, 2, 4, 16, "x");
  guint32 mx = tensor (g, A, 1, 4, 1, "mx");
  guint32 e = tensor (g, A, 2, 4, 16, "e");
  guint32 z = tensor (g, A, 1, other ? 16 : 4, 1, "z");
  guint32 p = tensor (g, A, 2, 4, 16, "p");
  guint32 v1 = tensor (g, W, 2, 16, 8, "v1");
  guint32 v2 = tensor (g, W, 2, variant == SM_CONTRACT_M ? 4 : 16, 8, "v2");
  guint32 o1 = tensor (g, A, 2, 4, 8, "o1");
  guint32 o2 = tensor (g, A, 2, variant == SM_CONTRACT_M ? 16 : 4, 8, "o2");
  guint32 sum = tensor (g, A, 2, 4, 8, "sum");

  add (g, "s.max", "max", ELK_OP_REDUCE, "ms->m", x, mx, 0, 2);
  add (g, "s.exp", variant == SM_SUB ? "sub" : "sub-exp", ELK_OP_ELEMENTWISE,
       "ms,m->ms", x, mx, e, 3);
  add (g, "s.sum", "sum", ELK_OP_REDUCE, other ? "ms->s" : "ms->m", e, z, 0, 2);
  add (g, "s.div", "div", ELK_OP_ELEMENTWISE, other ? "ms,s->ms" : "ms,m->ms",
       e, z, p, 3);
  if (variant == SM_EXP_READER || variant == SM_SUM_READER)
    {
      guint32 peek = tensor (g, A, 2, 4, 16, "peek");
      if (variant == SM_EXP_READER)
        add (g, "peek", "add", ELK_OP_ELEMENTWISE, "ms,ms->ms", e, x, peek, 3);
      else
        add (g, "peek", "add", ELK_OP_ELEMENTWISE, "ms,m->ms", x, z, peek, 3);
    }
  add (g, "o1", "batch-matmul", ELK_OP_MATMUL, "ms,sn->mn", p, v1, o1, 3);
  if (variant == SM_CONTRACT_M)
    add (g, "o2", "matmul", ELK_OP_MATMUL, "sm,sn->mn", p, v2, o2, 3);
  else
    add (g, "o2", "matmul", ELK_OP_MATMUL, "ms,sn->mn", p, v2, o2, 3);
  if (variant == SM_EXTRA_READER)
    {
      guint32 p2 = tensor (g, A, 2, 4, 16, "p2");
      add (g, "peek", "add", ELK_OP_ELEMENTWISE, "ms,ms->ms", p, x, p2, 3);
    }
  add (g, "sum", "add", ELK_OP_ELEMENTWISE, "mn,mn->mn", o1,
       variant == SM_CONTRACT_M ? o1 : o2, sum, 3);
  return g;
}

/* A softmax read by two MatMuls over s becomes two softmax_matmul
 * operators reading x, the values and the row maximum (the max operator
 * stays); each deviation from the frontends' spelling leaves the graph
 * as it is. */
static void
test_fuse_softmax (void)
{
  g_autoptr (GError) error = NULL;
  const SoftmaxVariant variants[]
      = { SM_EXTRA_READER, SM_EXP_READER, SM_SUM_READER,
          SM_CONTRACT_M,   SM_OTHER_AXIS, SM_SUB };

  {
    g_autoptr (ElkGraph) g = softmax_graph (SM_PLAIN);
    g_autoptr (ElkGraph) f = elk_graph_fuse (g, ELK_FUSE_SOFTMAX, &error);
    double sm_flops = 0;

    g_assert_no_error (error);
    g_assert_true (elk_graph_validate (f, &error));
    g_assert_no_error (error);
    for (guint i = 1; i < 4; i++)
      sm_flops += elk_graph_get_op (g, i)->flops;
    g_assert_cmpuint (elk_graph_get_n_ops (f), ==, 4);
    g_assert_cmpstr (elk_graph_get_attribute (f, "fused-softmaxes"), ==, "1");
    g_assert_null (elk_graph_get_attribute (f, "fused-norms"));
    g_assert_cmpfloat_with_epsilon (elk_graph_get_total_flops (f),
                                    elk_graph_get_total_flops (g), 1e-9);
    g_assert_cmpstr (elk_graph_get_op (f, 0)->type, ==, "max");
    for (guint i = 1; i < 3; i++)
      {
        const ElkOp *op = elk_graph_get_op (f, i);
        const ElkOp *mm = find_op (g, op->name);
        g_autofree char *sig = elk_op_dup_signature (f, op);

        g_assert_cmpstr (op->type, ==, ELK_FUSE_SOFTMAX_MATMUL);
        g_assert_cmpint (op->kind, ==, ELK_OP_MATMUL);
        g_assert_cmpuint (op->n_operands, ==, 4);
        g_assert_cmpstr (elk_graph_get_tensor (f, op->tensors[0])->name, ==,
                         i == 1 ? "o1" : "o2");
        g_assert_cmpstr (elk_graph_get_tensor (f, op->tensors[1])->name, ==,
                         "x");
        g_assert_cmpstr (elk_graph_get_tensor (f, op->tensors[2])->name, ==,
                         i == 1 ? "v1" : "v2");
        g_assert_cmpstr (elk_graph_get_tensor (f, op->tensors[3])->name, ==,
                         "mx");
        /* The row maximum is indexed by x's rows, m. */
        g_assert_cmpuint (op->access[3].n_axes, ==, 1);
        g_assert_cmpint (op->dim_names[op->access[3].dims[0][0]], ==, 'm');
        g_assert_cmpfloat_with_epsilon (op->flops, mm->flops + sm_flops / 2,
                                        1e-9);
        g_test_message ("%s: %s", op->name, sig);
      }
    g_assert_cmpint (elk_graph_find_tensor (f, "e"), <, 0);
    g_assert_cmpint (elk_graph_find_tensor (f, "z"), <, 0);
    g_assert_cmpint (elk_graph_find_tensor (f, "p"), <, 0);
  }
  /* ELK_FUSE_NORM alone leaves a softmax as it is. */
  {
    g_autoptr (ElkGraph) g = softmax_graph (SM_PLAIN);
    g_autoptr (ElkGraph) f = elk_graph_fuse (g, ELK_FUSE_NORM, &error);

    g_assert_no_error (error);
    g_assert_cmpuint (elk_graph_get_n_ops (f), ==, elk_graph_get_n_ops (g));
    g_assert_null (elk_graph_get_attribute (f, "fused-softmaxes"));
  }
  for (guint i = 0; i < G_N_ELEMENTS (variants); i++)
    {
      g_autoptr (ElkGraph) g = softmax_graph (variants[i]);
      g_autoptr (ElkGraph) f
          = elk_graph_fuse (g, ELK_FUSE_NORM | ELK_FUSE_SOFTMAX, &error);

      g_assert_no_error (error);
      g_assert_cmpuint (elk_graph_get_n_ops (f), ==, elk_graph_get_n_ops (g));
      g_assert_cmpstr (elk_graph_get_attribute (f, "fused-softmaxes"), ==, "0");
      for (guint o = 0; o < elk_graph_get_n_ops (g); o++)
        g_assert_cmpstr (elk_graph_get_op (g, o)->type, ==,
                         elk_graph_get_op (f, o)->type);
    }
}

/* Norms that must stay: their graphs come back with every operator. */
static void
test_fuse_no_match (void)
{
  const NormVariant variants[] = { NORM_EXTRA_READER, NORM_CONTRACT_M, NORM_EXP,
                                   NORM_SCALE_OTHER, NORM_TEMP_READER };

  for (guint i = 0; i < G_N_ELEMENTS (variants); i++)
    {
      g_autoptr (ElkGraph) g = norm_graph (variants[i]);
      g_autoptr (ElkGraph) f = NULL;
      g_autoptr (GError) error = NULL;

      f = elk_graph_fuse (g, ELK_FUSE_NORM, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (elk_graph_get_n_ops (f), ==, elk_graph_get_n_ops (g));
      g_assert_cmpstr (elk_graph_get_attribute (f, "fused-norms"), ==, "0");
      for (guint o = 0; o < elk_graph_get_n_ops (g); o++)
        {
          g_autofree char *a
              = elk_op_dup_signature (g, elk_graph_get_op (g, o));
          g_autofree char *b
              = elk_op_dup_signature (f, elk_graph_get_op (f, o));
          g_assert_cmpstr (a, ==, b);
          g_assert_cmpstr (elk_graph_get_op (g, o)->type, ==,
                           elk_graph_get_op (f, o)->type);
        }
    }
}

static void
test_fuse_flags (void)
{
  g_autoptr (ElkGraph) g = norm_graph (NORM_PLAIN);
  g_autoptr (GError) error = NULL;
  ElkGraph *f;

  f = elk_graph_fuse (g, ELK_FUSE_NONE, &error);
  g_assert_no_error (error);
  g_assert_true (f == g);
  elk_graph_unref (f);

  f = elk_graph_fuse (g, (ElkFuseFlags) 0x6, &error);
  g_assert_null (f);
  g_assert_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "norm"));
  g_assert_nonnull (strstr (error->message, "softmax"));
  g_assert_nonnull (strstr (error->message, "0x6"));
}

/* A routing condition on a MatMul moves to its fused operator; a norm
 * operator under a condition is not fused. */
static void
test_fuse_conditions (void)
{
  g_autoptr (GError) error = NULL;
  guint32 router = 0;
  double p = 0;
  gboolean taken = TRUE;

  {
    g_autoptr (ElkGraph) g = norm_graph (NORM_PLAIN);
    g_autoptr (ElkGraph) f = NULL;

    /* v (op 6) runs when q (op 5) routes to it. */
    g_assert_true (elk_graph_set_op_condition (g, 6, 5, 0.25, FALSE, &error));
    g_assert_no_error (error);
    f = elk_graph_fuse (g, ELK_FUSE_NORM, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (elk_graph_get_n_ops (f), ==, 3);
    g_assert_true (elk_graph_get_op_condition (f, 1, &router, &p, &taken));
    g_assert_cmpuint (router, ==, 0);
    g_assert_cmpfloat (p, ==, 0.25);
    g_assert_false (taken);
    g_assert_false (elk_graph_get_op_condition (f, 0, NULL, NULL, NULL));
  }
  {
    g_autoptr (ElkGraph) g = norm_graph (NORM_PLAIN);
    g_autoptr (ElkGraph) f = NULL;

    /* The gain (op 4) runs when the rsqrt (op 2) routes to it. */
    g_assert_true (elk_graph_set_op_condition (g, 4, 2, 0.5, TRUE, &error));
    g_assert_no_error (error);
    f = elk_graph_fuse (g, ELK_FUSE_NORM, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (elk_graph_get_n_ops (f), ==, elk_graph_get_n_ops (g));
    g_assert_true (elk_graph_get_op_condition (f, 4, &router, &p, &taken));
    g_assert_cmpuint (router, ==, 2);
  }
}

/* The paper models: every RMSNorm of Llama2 and of the artifact's Gemma-2
 * graph (which has no post-norms) and every LayerNorm of OPT feeds MatMuls
 * only (two per layer and the output norm); with ELK_FUSE_SOFTMAX too,
 * every layer's attention softmax folds into its P·V MatMul, and
 * Mixtral's router softmax (read by the top-k, not a MatMul) stays. */
static void
test_fuse_llama (void)
{
  static const struct
  {
    const char *preset;
    guint fused;
    guint norm_ops; /* operators per norm */
    const char *type;
  } cases[] = {
    { "llama2-13b-paper", 2 * 2 + 1, 5, ELK_FUSE_RMSNORM_MATMUL },
    { "llama2-70b-paper", 2 * 2 + 1, 5, ELK_FUSE_RMSNORM_MATMUL },
    { "gemma2-27b-paper", 2 * 2 + 1, 5, ELK_FUSE_RMSNORM_MATMUL },
    { "opt-30b-paper", 2 * 2 + 1, 8, ELK_FUSE_LAYERNORM_MATMUL },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr (ElkGraph) g
          = elk_test_load_llama (registry, cases[c].preset, 4, 64, 2);
      g_autoptr (ElkGraph) f = NULL;
      g_autoptr (GError) error = NULL;
      g_autofree char *n = NULL;
      guint fused_ops = 0, rsqrt_left = 0, mm_g = 0, mm_f = 0;

      if (g == NULL)
        return;
      f = elk_graph_fuse (g, ELK_FUSE_NORM, &error);
      g_assert_no_error (error);
      g_assert_true (elk_graph_validate (f, &error));
      n = g_strdup_printf ("%u", cases[c].fused);
      g_assert_cmpstr (elk_graph_get_attribute (f, "fused-norms"), ==, n);
      for (guint i = 0; i < elk_graph_get_n_ops (f); i++)
        {
          const ElkOp *op = elk_graph_get_op (f, i);
          fused_ops += g_strcmp0 (op->type, cases[c].type) == 0;
          rsqrt_left += g_strcmp0 (op->type, "rsqrt") == 0;
          mm_f += op->kind == ELK_OP_MATMUL;
        }
      for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
        mm_g += elk_graph_get_op (g, i)->kind == ELK_OP_MATMUL;
      g_test_message ("%s: %u -> %u operators, %u fused", cases[c].preset,
                      elk_graph_get_n_ops (g), elk_graph_get_n_ops (f),
                      fused_ops);
      g_assert_cmpuint (mm_f, ==, mm_g);
      g_assert_cmpuint (elk_graph_get_n_ops (f), ==,
                        elk_graph_get_n_ops (g)
                            - cases[c].norm_ops * cases[c].fused);
      g_assert_cmpuint (fused_ops, >=, cases[c].fused);
      g_assert_cmpuint (rsqrt_left, ==, 0);
      g_assert_cmpfloat_with_epsilon (elk_graph_get_total_flops (f)
                                          / elk_graph_get_total_flops (g),
                                      1.0, 1e-12);

      /* Both fusions: one softmax more per layer (2 layers), 3 operators
       * fewer each. */
      {
        g_autoptr (ElkGraph) fs
            = elk_graph_fuse (g, ELK_FUSE_NORM | ELK_FUSE_SOFTMAX, &error);
        guint sm_ops = 0;

        g_assert_no_error (error);
        g_assert_true (elk_graph_validate (fs, &error));
        g_assert_cmpstr (elk_graph_get_attribute (fs, "fused-norms"), ==, n);
        g_assert_cmpstr (elk_graph_get_attribute (fs, "fused-softmaxes"), ==,
                         "2");
        for (guint i = 0; i < elk_graph_get_n_ops (fs); i++)
          sm_ops += g_strcmp0 (elk_graph_get_op (fs, i)->type,
                               ELK_FUSE_SOFTMAX_MATMUL)
                    == 0;
        g_assert_cmpuint (sm_ops, ==, 2);
        g_assert_cmpuint (elk_graph_get_n_ops (fs), ==,
                          elk_graph_get_n_ops (f) - 3 * 2);
        g_assert_cmpfloat_with_epsilon (elk_graph_get_total_flops (fs)
                                            / elk_graph_get_total_flops (g),
                                        1.0, 1e-12);
      }
    }

  /* Mixtral: the attention softmax of its one layer folds; its router's
   * softmax over the experts, which the top-k reads, does not. */
  {
    g_autoptr (ElkGraph) g
        = elk_test_load_llama (registry, "mixtral-8x7b", 4, 64, 1);
    g_autoptr (ElkGraph) f = NULL;
    g_autoptr (GError) error = NULL;
    guint sub_exp_g = 0, sub_exp_f = 0;

    if (g == NULL)
      return;
    f = elk_graph_fuse (g, ELK_FUSE_SOFTMAX, &error);
    g_assert_no_error (error);
    g_assert_true (elk_graph_validate (f, &error));
    for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
      sub_exp_g += g_strcmp0 (elk_graph_get_op (g, i)->type, "sub-exp") == 0;
    for (guint i = 0; i < elk_graph_get_n_ops (f); i++)
      sub_exp_f += g_strcmp0 (elk_graph_get_op (f, i)->type, "sub-exp") == 0;
    g_assert_cmpuint (sub_exp_g, ==, 2);
    g_assert_cmpuint (sub_exp_f, ==, 1);
    g_assert_cmpstr (elk_graph_get_attribute (f, "fused-softmaxes"), ==, "1");
  }
}

/* One layer of Llama2-13B decoding on the analytic chip with <plans
 * fuse=...>. */
static char *
fuse_xml (const char *choice, const char *dir)
{
  return g_strdup_printf ("<experiment format=\"1\" name=\"fuse\">\n"
                          "  <frontend name=\"llama\">\n"
                          "    <param "
                          "name=\"preset\">llama2-13b-paper</param>\n"
                          "    <param name=\"phase\">decode</param>\n"
                          "    <param name=\"batch\">4</param>\n"
                          "    <param name=\"seq\">128</param>\n"
                          "    <param name=\"layers\">1</param>\n"
                          "  </frontend>\n"
                          "  <chip name=\"analytic\"/>\n"
                          "  <allocator name=\"reservation\"/>\n"
                          "  <plans><param name=\"fuse\">%s</param></plans>\n"
                          "  <scheduler name=\"elk\" label=\"elk-full\"/>\n"
                          "  <output dir=\"%s\"/>\n"
                          "</experiment>\n",
                          choice, dir);
}

/* Runs the point with fuse=@choice; returns its n_ops and latency. */
static guint
run_fuse (const char *choice, const char *dir, double *latency)
{
  g_autofree char *xml = fuse_xml (choice, dir);
  g_auto (GStrv) lines
      = elk_test_run_experiment (registry, xml, "fuse.xml", dir);
  g_auto (GStrv) head = g_strsplit (lines[0], ",", -1);
  g_auto (GStrv) row = g_strsplit (lines[1], ",", -1);
  guint n_ops = 0;

  for (guint c = 0; head[c] != NULL; c++)
    {
      if (g_str_equal (head[c], "n_ops"))
        n_ops = (guint) g_ascii_strtoull (row[c], NULL, 10);
      if (g_str_equal (head[c], "latency_s"))
        *latency = g_ascii_strtod (row[c], NULL);
    }
  return n_ops;
}

static void
test_fuse_experiment (void)
{
  g_autofree char *dir = g_dir_make_tmp ("elk-fuse-XXXXXX", NULL);
  g_autofree char *d1 = g_build_filename (dir, "none", NULL);
  g_autofree char *d2 = g_build_filename (dir, "norm", NULL);
  g_autofree char *d3 = g_build_filename (dir, "both", NULL);
  g_autoptr (GError) error = NULL;
  g_autofree char *bad = fuse_xml ("all", dir);
  double none_s = 0, norm_s = 0, both_s = 0;
  guint none_ops, norm_ops, both_ops;

  g_test_summary ("<plans fuse=norm> runs the fused graph (two norms of "
                  "the layer and the output norm folded: 15 operators "
                  "fewer), fuse=norm,softmax the layer's softmax too (3 "
                  "fewer); a bad value is refused with the file, line and "
                  "accepted values.");
  if (elk_registry_lookup (registry, ELK_TYPE_FRONTEND, "llama") == NULL)
    {
      g_test_skip ("the llama frontend is not built");
      return;
    }
  none_ops = run_fuse ("none", d1, &none_s);
  norm_ops = run_fuse ("norm", d2, &norm_s);
  g_test_message ("one layer: %u operators, %.6g ms; fused: %u, %.6g ms",
                  none_ops, none_s * 1e3, norm_ops, norm_s * 1e3);
  g_assert_cmpuint (norm_ops + 15, ==, none_ops);
  /* norm,softmax: the layer's softmax too, 3 operators fewer. */
  both_ops = run_fuse ("norm,softmax", d3, &both_s);
  g_test_message ("norm,softmax: %u operators, %.6g ms", both_ops,
                  both_s * 1e3);
  g_assert_cmpuint (both_ops + 3, ==, norm_ops);
  g_assert_cmpfloat (both_s, >, 0);
  g_assert_cmpfloat (norm_s, >, 0);
  g_assert_cmpfloat (none_s, >, 0);

  g_assert_null (elk_experiment_load_from_data (bad, strlen (bad), "fuse.xml",
                                                registry, &error));
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "fuse.xml:11"));
  g_assert_nonnull (strstr (error->message, "fuse"));
  g_assert_nonnull (strstr (error->message, "norm"));
  g_assert_nonnull (strstr (error->message, "norm,softmax"));
  elk_test_remove_tree (dir);
}

int
main (int argc, char *argv[])
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  g_test_add_func ("/fuse/hand", test_fuse_hand);
  g_test_add_func ("/fuse/no-match", test_fuse_no_match);
  g_test_add_func ("/fuse/layer", test_fuse_layer);
  g_test_add_func ("/fuse/softmax", test_fuse_softmax);
  g_test_add_func ("/fuse/flags", test_fuse_flags);
  g_test_add_func ("/fuse/conditions", test_fuse_conditions);
  g_test_add_func ("/fuse/llama", test_fuse_llama);
  g_test_add_func ("/fuse/experiment", test_fuse_experiment);
  ret = g_test_run ();
  g_object_unref (registry);
  return ret;
}
