/* elk-fuse.c: operator fusion, a graph-to-graph pass.
 *
 * An RMSNorm reaches elk as five operators (docs/frontend-llama.md):
 * square (UNARY mk->mk), sum (REDUCE mk->m), rsqrt (UNARY m->m), scale
 * (ELEMENTWISE mk,m->mk, reading the norm's input again) and gain
 * (ELEMENTWISE mk,k->mk).  Each is a superstep of its own, and the sum
 * pays a full output shuffle with its partial-sum reduction.  When only
 * MatMuls contracting over k read the norm's output, the algebra
 *
 *   (x ⊙ g · rsqrt (Σ_k x²)) W = ((x ⊙ g) W) ⊙ rsqrt (Σ_k x²)   (per row)
 *
 * lets each MatMul compute the norm itself: per core the MatMul of
 * (x ⊙ g) with W and the partial sums of squares of its x piece, each
 * piece squared and scaled once (docs/plan-space.md, "Fused operators");
 * the partial sums of squares join the output's partial-sum reduction the
 * MatMul pays anyway, and an epilogue scales each output row.  Nothing is
 * approximated: the fused operator computes exactly what the six
 * operators computed.
 *
 * A LayerNorm reaches elk as eight: mean (REDUCE "sum" mk->m: the plain
 * sum S = Σ_k x, the division folded into rsqrt like the epsilon), centre
 * (x - S), then the RMSNorm's five over the centred x, then bias
 * (ELEMENTWISE "add" mk,k->mk).  Since Σ_k (x - S)² = Σ_k x² + (K - 2) S²,
 *
 *   ((x - S) r ⊙ g + b) W = r ((x ⊙ g) W - S (gᵀW)) + bᵀW,
 *   r = rsqrt (Σ_k x² + (K - 2) S²)                             (per row)
 *
 * and the fused operator carries two per-row partial sums (Σx, Σx²) with
 * its output's partial sums, and gᵀW, bᵀW as two more rows through the
 * MatMul on the same W pieces, so they cover exactly the k the output's
 * partial sums cover.  Equal in exact arithmetic; in floating point the
 * rsqrt's argument rounds differently (tests/ipu-pod/test-ipu-pod-func.c
 * reports the error).
 *
 * A softmax over an axis s reaches elk as four operators: max (REDUCE
 * "max" ms->m), sub-exp (ELEMENTWISE exp (x - mx), "ms,m->ms"), sum
 * (REDUCE "sum" ms->m of the exponentials) and div (ELEMENTWISE
 * "ms,m->ms").  When only MatMuls contracting over s read its output
 * (attention's probabilities times V), with e = exp (x - mx),
 *
 *   Σ_s (e / Σ_s e) V = (Σ_s e V) / Σ_s e                     (per row)
 *
 * so each MatMul computes e on its x piece, the partial row sums of e
 * ride with the output's partial sums exactly as an RMSNorm's sums of
 * squares do, and an epilogue divides each output row.  The max stays an
 * operator of its own (the fused operator reads its output), so the
 * exponentials are the very values the unfused graph computes.
 *
 * The chains are recognised by structure (kinds, einsum accesses, the
 * operators' functions and single-use intermediate tensors), never by
 * operator names, so any frontend that spells RMSNorm or softmax this
 * way benefits.
 */
#include "config.h"

#include <string.h>

#include "elk-private.h"

/* One recognised norm or softmax and where its pieces sit in the source
 * graph: an RMSNorm's five operators, a LayerNorm's eight (mean and
 * centre before them, bias after), or a softmax's last three (sub-exp,
 * sum, div; its max stays). */
typedef struct
{
  guint32 ops[8]; /* [mean, centre,] square, sum, rsqrt, scale, gain[, bias] */
  guint32 temps[8];  /* their outputs; the last is the norm's output */
  guint n;           /* 5 (RMSNorm), 8 (LayerNorm) or 3 (softmax) */
  gboolean layer;    /* a LayerNorm */
  gboolean softmax;  /* a softmax: ops are sub-exp, sum, div */
  guint axis;        /* softmax: the position of s in x's axes */
  guint32 x;         /* the norm's (softmax's) input */
  guint32 gain;      /* the gain vector (softmax: the row maximum) */
  guint32 bias;      /* the bias vector (LayerNorm) */
  guint n_readers;   /* MatMuls reading the norm's output */
  double norm_flops; /* the norm operators' FLOPs */
} NormChain;

typedef struct
{
  const ElkGraph *graph;
  guint n_ops;
  guint n_tensors;
  guint *n_uses;    /* per tensor: operand slots reading it */
  gint *reader;     /* per tensor: the last operator reading it */
  gint *producer;   /* per tensor: the operator writing it, or -1 */
  gboolean *routed; /* per operator: has a routing condition or routes */
} Uses;

static gboolean
plain_axes (const ElkAccess *a, guint n_axes)
{
  if (a->n_axes != n_axes)
    return FALSE;
  for (guint x = 0; x < n_axes; x++)
    if (a->dims[x][1] >= 0)
      return FALSE;
  return TRUE;
}

/* Whether @op is a @kind operator of frontend function @type with
 * @n_operands operands. */
static gboolean
op_is (const ElkOp *op, ElkOpKind kind, const char *type, guint n_operands)
{
  return op->kind == kind && op->n_operands == n_operands
         && g_strcmp0 (op->type, type) == 0;
}

/* The only operator reading tensor @t, if exactly one operand slot of the
 * whole graph reads it and it is an on-chip activation. */
static const ElkOp *
single_reader (const Uses *u, guint32 t)
{
  const ElkTensor *tensor = elk_graph_get_tensor (u->graph, t);

  if (tensor->origin != ELK_TENSOR_ORIGIN_ACTIVATION || u->n_uses[t] != 1)
    return NULL;
  return elk_graph_get_op (u->graph, (guint) u->reader[t]);
}

/* Whether MatMul @mm reads @y as its first input over (m, k), k
 * contracted and indexing the weight. */
static gboolean
matmul_reads_norm (const ElkOp *mm, guint32 y)
{
  gint8 m, k;
  gboolean m_out = FALSE, k_out = FALSE, k_w = FALSE;

  if (mm->kind != ELK_OP_MATMUL || mm->n_operands != 3 || mm->tensors[1] != y
      || mm->tensors[2] == y || !plain_axes (&mm->access[1], 2))
    return FALSE;
  m = mm->access[1].dims[0][0];
  k = mm->access[1].dims[1][0];
  for (guint x = 0; x < mm->access[0].n_axes; x++)
    {
      m_out |= mm->access[0].dims[x][0] == m || mm->access[0].dims[x][1] == m;
      k_out |= mm->access[0].dims[x][0] == k || mm->access[0].dims[x][1] == k;
    }
  for (guint x = 0; x < mm->access[2].n_axes; x++)
    k_w |= mm->access[2].dims[x][0] == k && mm->access[2].dims[x][1] < 0;
  return m != k && m_out && !k_out && k_w;
}

/* Whether @op adds a vector along k to @y (mk), in either order: "mk,k->mk"
 * (the LayerNorm's bias).  Returns the vector's operand slot, or 0. */
static guint
bias_slot (const ElkOp *op, guint32 y)
{
  guint vy, vb;

  if (!op_is (op, ELK_OP_ELEMENTWISE, "add", 3)
      || !plain_axes (&op->access[0], 2) || op->tensors[1] == op->tensors[2])
    return 0;
  vy = op->tensors[1] == y ? 1 : 2;
  vb = 3 - vy;
  if (op->tensors[vy] != y
      || memcmp (&op->access[vy], &op->access[0], sizeof (ElkAccess)) != 0
      || !plain_axes (&op->access[vb], 1)
      || op->access[vb].dims[0][0] != op->access[0].dims[1][0]
      || op->access[0].dims[0][0] == op->access[0].dims[1][0])
    return 0;
  return vb;
}

static gboolean
matmul_reads_softmax (const ElkOp *mm, guint32 y, const NormChain *c);

/* Whether MatMul @op is one that @c (a norm, or a softmax with its axis,
 * x and maximum set) can fold into, reading @c's output @y. */
static gboolean
reads_chain (const ElkOp *op, guint32 y, const NormChain *c)
{
  return c->softmax ? matmul_reads_softmax (op, y, c)
                    : matmul_reads_norm (op, y);
}

/* How many operators after operator @after read @c's output @y, if every
 * one of them is a MatMul @c can fold into (reads_chain()) and @y is an
 * activation something reads; 0 otherwise. */
static guint
fusable_readers (const Uses *u, guint after, guint32 y, const NormChain *c)
{
  guint n_mm = 0;

  if (elk_graph_get_tensor (u->graph, y)->origin != ELK_TENSOR_ORIGIN_ACTIVATION
      || u->n_uses[y] == 0)
    return 0;
  for (guint i = after + 1; i < u->n_ops; i++)
    {
      const ElkOp *op = elk_graph_get_op (u->graph, i);
      gboolean reads = FALSE;

      for (guint v = 1; v < op->n_operands; v++)
        reads |= op->tensors[v] == y;
      if (!reads)
        continue;
      if (!reads_chain (op, y, c))
        return 0;
      n_mm++;
    }
  return n_mm == u->n_uses[y] ? n_mm : 0;
}

/* Tries to read the head of a LayerNorm whose centred rows @centred its
 * square reads: the mean (a REDUCE "sum" mk->m of x, read only by the
 * centre) and the centre (x minus the mean, "mk,m->mk", its output read
 * only by the square and the scale).  Fills @c's first two operators and
 * x. */
static gboolean
match_layer_head (const Uses *u, guint32 centred, NormChain *c)
{
  const ElkOp *ce, *mn;
  const ElkAccess *o;

  if (u->producer[centred] < 0 || u->n_uses[centred] != 2
      || elk_graph_get_tensor (u->graph, centred)->origin
             != ELK_TENSOR_ORIGIN_ACTIVATION)
    return FALSE;
  ce = elk_graph_get_op (u->graph, (guint) u->producer[centred]);
  o = &ce->access[0];
  if (!op_is (ce, ELK_OP_ELEMENTWISE, "sub", 3) || !plain_axes (o, 2)
      || memcmp (&ce->access[1], o, sizeof (ElkAccess)) != 0
      || !plain_axes (&ce->access[2], 1)
      || ce->access[2].dims[0][0] != o->dims[0][0]
      || o->dims[0][0] == o->dims[1][0] || ce->tensors[1] == ce->tensors[2]
      || u->producer[ce->tensors[2]] < 0)
    return FALSE;
  mn = elk_graph_get_op (u->graph, (guint) u->producer[ce->tensors[2]]);
  if (single_reader (u, mn->tensors[0]) != ce
      || !op_is (mn, ELK_OP_REDUCE, "sum", 2)
      || mn->tensors[1] != ce->tensors[1]
      || memcmp (&mn->access[1], o, sizeof (ElkAccess)) != 0
      || !plain_axes (&mn->access[0], 1)
      || mn->access[0].dims[0][0] != o->dims[0][0] || u->routed[mn->id]
      || u->routed[ce->id])
    return FALSE;
  c->ops[0] = mn->id;
  c->ops[1] = ce->id;
  c->temps[0] = mn->tensors[0];
  c->temps[1] = centred;
  c->x = ce->tensors[1];
  c->norm_flops = mn->flops + ce->flops;
  return TRUE;
}

/* Tries to read an RMSNorm, or a LayerNorm, starting at operator @sq (its
 * square). */
static gboolean
match_norm (const Uses *u, const ElkOp *sq, NormChain *c)
{
  const ElkOp *su, *rs, *sc, *gn, *bi = NULL;
  gint8 m, k;
  guint32 y;
  guint n_mm = 0, first;

  if (!op_is (sq, ELK_OP_UNARY, "square", 2) || !plain_axes (&sq->access[0], 2)
      || memcmp (&sq->access[0], &sq->access[1], sizeof (ElkAccess)) != 0)
    return FALSE;
  m = sq->access[0].dims[0][0];
  k = sq->access[0].dims[1][0];
  if (m == k)
    return FALSE;

  /* sum: mk -> m over the square's output. */
  su = single_reader (u, sq->tensors[0]);
  if (su == NULL || !op_is (su, ELK_OP_REDUCE, "sum", 2)
      || !plain_axes (&su->access[1], 2) || !plain_axes (&su->access[0], 1)
      || su->access[1].dims[0][0] == su->access[1].dims[1][0]
      || su->access[0].dims[0][0] != su->access[1].dims[0][0])
    return FALSE;

  /* rsqrt: m -> m. */
  rs = single_reader (u, su->tensors[0]);
  if (rs == NULL || !op_is (rs, ELK_OP_UNARY, "rsqrt", 2)
      || !plain_axes (&rs->access[0], 1) || !plain_axes (&rs->access[1], 1)
      || rs->access[0].dims[0][0] != rs->access[1].dims[0][0])
    return FALSE;

  /* scale: x (mk) times the rsqrt (m), in either order. */
  sc = single_reader (u, rs->tensors[0]);
  if (sc == NULL || !op_is (sc, ELK_OP_ELEMENTWISE, "mul", 3)
      || !plain_axes (&sc->access[0], 2))
    return FALSE;
  {
    guint vx = sc->tensors[1] == sq->tensors[1] ? 1 : 2;
    guint vr = 3 - vx;
    const ElkAccess *o = &sc->access[0];

    if (sc->tensors[vx] != sq->tensors[1] || sc->tensors[vr] != rs->tensors[0]
        || memcmp (&sc->access[vx], o, sizeof (ElkAccess)) != 0
        || !plain_axes (&sc->access[vr], 1)
        || sc->access[vr].dims[0][0] != o->dims[0][0]
        || o->dims[0][0] == o->dims[1][0])
      return FALSE;
  }

  /* gain: the scaled x (mk) times g (k). */
  gn = single_reader (u, sc->tensors[0]);
  if (gn == NULL || !op_is (gn, ELK_OP_ELEMENTWISE, "mul", 3)
      || gn->tensors[1] != sc->tensors[0] || !plain_axes (&gn->access[0], 2)
      || memcmp (&gn->access[1], &gn->access[0], sizeof (ElkAccess)) != 0
      || !plain_axes (&gn->access[2], 1)
      || gn->access[2].dims[0][0] != gn->access[0].dims[1][0]
      || gn->access[0].dims[0][0] == gn->access[0].dims[1][0]
      || gn->tensors[2] == gn->tensors[1])
    return FALSE;

  /* A norm operator that runs only when a router selects it, or that
   * routes others, stays as it is: the fused operator would run on the
   * MatMul's condition instead. */
  if (u->routed[sq->id] || u->routed[su->id] || u->routed[rs->id]
      || u->routed[sc->id] || u->routed[gn->id])
    return FALSE;

  /* A LayerNorm: the square reads x centred by the mean, and a bias add
   * (the gain output's only reader) ends the norm.  Either piece without
   * the other is read as an RMSNorm of the centred x, or not at all. */
  y = gn->tensors[0];
  c->layer = FALSE;
  c->softmax = FALSE;
  c->norm_flops = 0;
  if (match_layer_head (u, sq->tensors[1], c))
    {
      bi = single_reader (u, y);
      if (bi != NULL && bias_slot (bi, y) != 0 && !u->routed[bi->id])
        {
          c->layer = TRUE;
          c->bias = bi->tensors[bias_slot (bi, y)];
          y = bi->tensors[0];
        }
    }
  if (!c->layer)
    {
      c->x = sq->tensors[1];
      c->norm_flops = 0;
    }

  /* Every reader of the norm's output is a MatMul contracting over k. */
  n_mm = fusable_readers (u, c->layer ? bi->id : gn->id, y, c);
  if (n_mm == 0)
    return FALSE;

  first = c->layer ? 2 : 0;
  c->n = c->layer ? 8 : 5;
  c->ops[first + 0] = sq->id;
  c->ops[first + 1] = su->id;
  c->ops[first + 2] = rs->id;
  c->ops[first + 3] = sc->id;
  c->ops[first + 4] = gn->id;
  c->gain = gn->tensors[2];
  c->temps[first + 0] = sq->tensors[0];
  c->temps[first + 1] = su->tensors[0];
  c->temps[first + 2] = rs->tensors[0];
  c->temps[first + 3] = sc->tensors[0];
  c->temps[first + 4] = gn->tensors[0];
  if (c->layer)
    {
      c->ops[7] = bi->id;
      c->temps[7] = y;
      c->norm_flops += bi->flops;
    }
  c->n_readers = n_mm;
  c->norm_flops += sq->flops + su->flops + rs->flops + sc->flops + gn->flops;
  return TRUE;
}

/* Whether @a names @n plain axes, no loop dimension twice. */
static gboolean
distinct_axes (const ElkAccess *a, guint n)
{
  if (!plain_axes (a, n))
    return FALSE;
  for (guint x = 0; x < n; x++)
    for (guint y = x + 1; y < n; y++)
      if (a->dims[x][0] == a->dims[y][0])
        return FALSE;
  return TRUE;
}

/* The position of the one axis @full (at least two distinct plain axes)
 * has and @short_ leaves out, @short_ keeping the others in order; -1 if
 * @short_ is not of that form. */
static gint
dropped_axis (const ElkAccess *full, const ElkAccess *short_)
{
  if (full->n_axes < 2 || !distinct_axes (full, full->n_axes)
      || short_->n_axes + 1 != full->n_axes
      || !plain_axes (short_, short_->n_axes))
    return -1;
  for (guint p = 0; p < full->n_axes; p++)
    {
      gboolean same = TRUE;
      for (guint x = 0, y = 0; x < full->n_axes; x++)
        if (x != p && short_->dims[y++][0] != full->dims[x][0])
          same = FALSE;
      if (same)
        return (gint) p;
    }
  return -1;
}

/* The position of the axis a REDUCE @op (x -> out) sums over, the output
 * keeping the other axes in order; -1 if it is not of that form. */
static gint
reduced_axis (const ElkOp *op)
{
  if (op->n_operands != 2)
    return -1;
  return dropped_axis (&op->access[1], &op->access[0]);
}

/* The position of the axis along which a binary ELEMENTWISE @op
 * broadcasts its second input over its first ("ms,m->ms": the first
 * input's accesses equal the output's, the second's leave one axis out);
 * -1 if it is not of that form. */
static gint
broadcast_axis (const ElkOp *op)
{
  if (op->n_operands != 3 || op->tensors[1] == op->tensors[2]
      || memcmp (&op->access[1], &op->access[0], sizeof (ElkAccess)) != 0)
    return -1;
  return dropped_axis (&op->access[0], &op->access[2]);
}

/* Whether MatMul @mm reads the probabilities @y as its first input,
 * contracting over the axis at position @p of its access (which indexes
 * the second input, plainly) and keeping every other axis in its
 * output; its second input is neither the softmax's x nor its maximum. */
static gboolean
matmul_reads_softmax (const ElkOp *mm, guint32 y, const NormChain *c)
{
  const ElkAccess *a = &mm->access[1];
  gint8 s;
  gboolean s_v = FALSE;

  if (mm->kind != ELK_OP_MATMUL || mm->n_operands != 3 || mm->tensors[1] != y
      || mm->tensors[2] == y || mm->tensors[2] == c->x
      || mm->tensors[2] == c->gain || !distinct_axes (a, a->n_axes)
      || c->axis >= a->n_axes)
    return FALSE;
  s = a->dims[c->axis][0];
  for (guint x = 0; x < a->n_axes; x++)
    {
      gboolean in_out = FALSE;
      for (guint z = 0; z < mm->access[0].n_axes; z++)
        in_out |= mm->access[0].dims[z][0] == a->dims[x][0]
                  || mm->access[0].dims[z][1] == a->dims[x][0];
      if (in_out != (x != c->axis))
        return FALSE;
    }
  for (guint x = 0; x < mm->access[2].n_axes; x++)
    {
      if (mm->access[2].dims[x][1] == s)
        return FALSE;
      s_v |= mm->access[2].dims[x][0] == s && mm->access[2].dims[x][1] < 0;
    }
  return s_v;
}

/* Tries to read a softmax ending at operator @dv (its divide): sub-exp
 * (x, mx) -> e, sum of e over the same axis -> z, e / z, with e read only
 * by the sum and the divide, z only by the divide, and every reader of
 * the quotient a MatMul contracting over the softmax axis. */
static gboolean
match_softmax (const Uses *u, const ElkOp *dv, NormChain *c)
{
  const ElkOp *su, *ex;
  guint32 e, z, y;
  gint p;

  if (!op_is (dv, ELK_OP_ELEMENTWISE, "div", 3)
      || (p = broadcast_axis (dv)) < 0)
    return FALSE;
  e = dv->tensors[1];
  z = dv->tensors[2];
  y = dv->tensors[0];
  if (single_reader (u, z) != dv || u->producer[z] < 0 || u->producer[e] < 0
      || u->n_uses[e] != 2
      || elk_graph_get_tensor (u->graph, e)->origin
             != ELK_TENSOR_ORIGIN_ACTIVATION)
    return FALSE;
  su = elk_graph_get_op (u->graph, (guint) u->producer[z]);
  ex = elk_graph_get_op (u->graph, (guint) u->producer[e]);
  if (!op_is (su, ELK_OP_REDUCE, "sum", 2) || su->tensors[1] != e
      || reduced_axis (su) != p || !op_is (ex, ELK_OP_ELEMENTWISE, "sub-exp", 3)
      || broadcast_axis (ex) != p || u->routed[ex->id] || u->routed[su->id]
      || u->routed[dv->id])
    return FALSE;

  memset (c, 0, sizeof (*c));
  c->softmax = TRUE;
  c->axis = (guint) p;
  c->x = ex->tensors[1];
  c->gain = ex->tensors[2];
  c->n = 3;
  c->ops[0] = ex->id;
  c->ops[1] = su->id;
  c->ops[2] = dv->id;
  c->temps[0] = e;
  c->temps[1] = z;
  c->temps[2] = y;

  /* Every reader of the quotient is a MatMul contracting over s. */
  c->n_readers = fusable_readers (u, dv->id, y, c);
  if (c->n_readers == 0)
    return FALSE;
  c->norm_flops = ex->flops + su->flops + dv->flops;
  return TRUE;
}

/* The einsum text of one operand ("mk", "bh+rk"). */
static void
append_access (GString *s, const ElkOp *op, const ElkAccess *a)
{
  for (guint x = 0; x < a->n_axes; x++)
    {
      g_string_append_c (s, op->dim_names[a->dims[x][0]]);
      if (a->dims[x][1] >= 0)
        {
          g_string_append_c (s, '+');
          g_string_append_c (s, op->dim_names[a->dims[x][1]]);
        }
    }
}

/* Every loop extent as "letter=N", so that window-only dimensions keep
 * theirs. */
static char *
dup_extents (const ElkOp *op)
{
  GString *s = g_string_new (NULL);

  for (guint d = 0; d < op->n_dims; d++)
    g_string_append_printf (s, "%s%c=%" G_GUINT64_FORMAT, d > 0 ? "," : "",
                            op->dim_names[d], op->extents[d]);
  return g_string_free (s, FALSE);
}

/* Appends a copy of @op to @out with the tensor ids mapped by @new_id. */
static gboolean
copy_op (ElkGraph *out, const ElkOp *op, const gint *new_id, GError **error)
{
  g_autoptr (GString) spec = g_string_new (NULL);
  g_autofree char *extents = dup_extents (op);
  guint32 tensors[ELK_MAX_OPERANDS];
  gint id;

  for (guint v = 1; v < op->n_operands; v++)
    {
      if (v > 1)
        g_string_append_c (spec, ',');
      append_access (spec, op, &op->access[v]);
      tensors[v - 1] = (guint32) new_id[op->tensors[v]];
    }
  g_string_append (spec, "->");
  append_access (spec, op, &op->access[0]);
  tensors[op->n_operands - 1] = (guint32) new_id[op->tensors[0]];
  id = elk_graph_add_op (out, op->name, op->type, op->kind, op->layer,
                         spec->str, tensors, op->n_operands, extents, error);
  if (id < 0)
    return FALSE;
  elk_graph_set_op_flops (out, (guint) id, op->flops);
  return TRUE;
}

/* Appends the fused operator that replaces MatMul @mm reading @c's
 * output: x in the MatMul's input slot, then the weight, then the gain
 * (and a LayerNorm's bias) indexed by the contracted dimension, or a
 * softmax's row maximum indexed by x's other axes. */
static gboolean
add_fused (ElkGraph *out,
           const ElkOp *mm,
           const NormChain *c,
           const gint *new_id,
           GError **error)
{
  g_autoptr (GString) spec = g_string_new (NULL);
  g_autofree char *extents = dup_extents (mm);
  char kname = mm->dim_names[mm->access[1].dims[1][0]];
  guint32 tensors[5];
  guint n = 0;
  gint id;

  append_access (spec, mm, &mm->access[1]);
  g_string_append_c (spec, ',');
  append_access (spec, mm, &mm->access[2]);
  if (c->softmax)
    {
      g_string_append_c (spec, ',');
      for (guint x = 0; x < mm->access[1].n_axes; x++)
        if (x != c->axis)
          g_string_append_c (spec, mm->dim_names[mm->access[1].dims[x][0]]);
    }
  else
    g_string_append_printf (spec, ",%c", kname);
  if (c->layer)
    g_string_append_printf (spec, ",%c", kname);
  g_string_append (spec, "->");
  append_access (spec, mm, &mm->access[0]);
  tensors[n++] = (guint32) new_id[c->x];
  tensors[n++] = (guint32) new_id[mm->tensors[2]];
  tensors[n++] = (guint32) new_id[c->gain];
  if (c->layer)
    tensors[n++] = (guint32) new_id[c->bias];
  tensors[n++] = (guint32) new_id[mm->tensors[0]];
  id = elk_graph_add_op (out, mm->name,
                         c->softmax ? ELK_FUSE_SOFTMAX_MATMUL
                         : c->layer ? ELK_FUSE_LAYERNORM_MATMUL
                                    : ELK_FUSE_RMSNORM_MATMUL,
                         ELK_OP_MATMUL, mm->layer, spec->str, tensors, n,
                         extents, error);
  if (id < 0)
    return FALSE;
  /* The norm's FLOPs are shared among its readers, so that the graph's
   * total (and with it the FLOP bound) does not change. */
  elk_graph_set_op_flops (out, (guint) id,
                          mm->flops + c->norm_flops / c->n_readers);
  return TRUE;
}

static void
uses_init (Uses *u, const ElkGraph *graph)
{
  u->graph = graph;
  u->n_ops = elk_graph_get_n_ops (graph);
  u->n_tensors = elk_graph_get_n_tensors (graph);
  u->n_uses = g_new0 (guint, u->n_tensors);
  u->reader = g_new (gint, u->n_tensors);
  u->producer = g_new (gint, u->n_tensors);
  u->routed = g_new0 (gboolean, u->n_ops);
  for (guint t = 0; t < u->n_tensors; t++)
    {
      u->reader[t] = -1;
      u->producer[t] = -1;
    }
  for (guint i = 0; i < u->n_ops; i++)
    {
      const ElkOp *op = elk_graph_get_op (graph, i);
      guint32 router;

      if (elk_graph_get_op_condition (graph, i, &router, NULL, NULL))
        {
          u->routed[i] = TRUE;
          u->routed[router] = TRUE;
        }
      u->producer[op->tensors[0]] = (gint) i;
      for (guint v = 1; v < op->n_operands; v++)
        {
          u->n_uses[op->tensors[v]]++;
          u->reader[op->tensors[v]] = (gint) i;
        }
    }
}

static void
uses_clear (Uses *u)
{
  g_free (u->n_uses);
  g_free (u->reader);
  g_free (u->producer);
  g_free (u->routed);
}

/* Builds the fused graph from @graph and the chains found in it. */
static ElkGraph *
build_fused (const ElkGraph *graph,
             const Uses *u,
             GArray *chains,
             ElkFuseFlags flags,
             GError **error)
{
  guint n_norms = 0, n_softmaxes = 0;
  g_autoptr (ElkGraph) out = elk_graph_new (elk_graph_get_name (graph));
  g_autofree gint *new_id = g_new (gint, u->n_tensors);
  g_autofree gint *chain_of_op = g_new (gint, u->n_ops);
  g_autofree gboolean *removed = g_new0 (gboolean, u->n_ops);
  g_autofree gboolean *temp = g_new0 (gboolean, u->n_tensors);
  g_autofree guint32 *new_op = g_new0 (guint32, u->n_ops);
  g_autofree char *n_text = NULL;

  for (guint i = 0; i < u->n_ops; i++)
    chain_of_op[i] = -1;
  for (guint c = 0; c < chains->len; c++)
    {
      const NormChain *nc = &g_array_index (chains, NormChain, c);
      if (nc->softmax)
        n_softmaxes++;
      else
        n_norms++;
      for (guint j = 0; j < nc->n; j++)
        {
          removed[nc->ops[j]] = TRUE;
          temp[nc->temps[j]] = TRUE;
        }
      for (guint i = nc->ops[nc->n - 1] + 1; i < u->n_ops; i++)
        if (reads_chain (elk_graph_get_op (graph, i), nc->temps[nc->n - 1], nc))
          chain_of_op[i] = (gint) c;
    }

  for (guint t = 0; t < u->n_tensors; t++)
    {
      const ElkTensor *tensor = elk_graph_get_tensor (graph, t);

      new_id[t] = -1;
      if (temp[t])
        continue;
      new_id[t] = elk_graph_add_tensor (out, tensor->name, tensor->dtype,
                                        tensor->origin, tensor->n_dims,
                                        tensor->shape, tensor->bytes, error);
      if (new_id[t] < 0)
        return NULL;
    }

  for (guint i = 0; i < u->n_ops; i++)
    {
      const ElkOp *op = elk_graph_get_op (graph, i);

      if (removed[i])
        continue;
      new_op[i] = elk_graph_get_n_ops (out);
      if (chain_of_op[i] >= 0)
        {
          if (!add_fused (out, op,
                          &g_array_index (chains, NormChain, chain_of_op[i]),
                          new_id, error))
            return NULL;
        }
      else if (!copy_op (out, op, new_id, error))
        return NULL;
    }

  /* Routing conditions follow their operators; a fused operator keeps its
   * MatMul's.  No norm or softmax operator has one or routes
   * (match_norm, match_softmax). */
  for (guint i = 0; i < u->n_ops; i++)
    {
      guint32 router;
      double probability;
      gboolean taken;

      if (elk_graph_get_op_condition (graph, i, &router, &probability, &taken)
          && !elk_graph_set_op_condition (out, new_op[i], new_op[router],
                                          probability, taken, error))
        return NULL;
    }

  elk__graph_copy_attributes (out, graph);
  if (flags & ELK_FUSE_NORM)
    {
      n_text = g_strdup_printf ("%u", n_norms);
      elk_graph_set_attribute (out, "fused-norms", n_text);
      g_clear_pointer (&n_text, g_free);
    }
  if (flags & ELK_FUSE_SOFTMAX)
    {
      n_text = g_strdup_printf ("%u", n_softmaxes);
      elk_graph_set_attribute (out, "fused-softmaxes", n_text);
    }
  return g_steal_pointer (&out);
}

/**
 * elk_graph_fuse:
 * @graph: a graph
 * @flags: the fusions to apply
 * @error: return location for a #GError
 *
 * Fuses operators of @graph.  With %ELK_FUSE_NORM every RMSNorm (square,
 * sum, rsqrt, scale and gain operators with single-use intermediate
 * tensors) whose output only MatMuls read, each as its first input and
 * contracting over the normalised axis, is replaced by one
 * %ELK_FUSE_RMSNORM_MATMUL operator per MatMul, and every LayerNorm (mean,
 * centre, the same five, bias; the centred x read only by the square and
 * the scale) by one %ELK_FUSE_LAYERNORM_MATMUL.  The fused operator keeps
 * the MatMul's name, layer and output, reads x, the weight, the gain (and
 * the bias), and carries the MatMul's FLOPs plus its share of the norm's.
 * Norms that do not match (a norm read by anything else) stay as they
 * are; a LayerNorm without a bias is folded as an RMSNorm of its centred
 * x, its mean and centre staying.  With %ELK_FUSE_SOFTMAX every softmax
 * (sub-exp, sum and div over one axis s, the exponentials read only by
 * the sum and the divide) whose output only MatMuls contracting over s
 * read, as their first input, is replaced by one
 * %ELK_FUSE_SOFTMAX_MATMUL operator per MatMul reading the softmax's
 * input, the MatMul's second input and the row maximum; the max operator
 * stays.  Tensors, operator order and attributes are otherwise kept; the
 * attribute "fused-norms" counts the norms folded (with %ELK_FUSE_NORM)
 * and "fused-softmaxes" the softmaxes (with %ELK_FUSE_SOFTMAX).
 *
 * Returns: (transfer full): the fused graph, or @graph itself with a new
 *   reference when @flags is %ELK_FUSE_NONE; %NULL with @error set in the
 *   %ELK_GRAPH_ERROR domain for unknown flags.
 *
 * Since: 0.2
 */
ElkGraph *
elk_graph_fuse (ElkGraph *graph, ElkFuseFlags flags, GError **error)
{
  g_autoptr (GArray) chains = NULL;
  Uses u;
  ElkGraph *out;

  g_return_val_if_fail (graph != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (flags & ~(ELK_FUSE_NORM | ELK_FUSE_SOFTMAX))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "graph '%s': unknown fusion flags 0x%x (known: 0x%x "
                   "norm, 0x%x softmax)",
                   elk_graph_get_name (graph), (guint) flags,
                   (guint) ELK_FUSE_NORM, (guint) ELK_FUSE_SOFTMAX);
      return NULL;
    }
  if (flags == ELK_FUSE_NONE)
    return elk_graph_ref (graph);

  uses_init (&u, graph);
  chains = g_array_new (FALSE, FALSE, sizeof (NormChain));
  for (guint i = 0; i < u.n_ops; i++)
    {
      const ElkOp *op = elk_graph_get_op (graph, i);
      NormChain c;

      if (((flags & ELK_FUSE_NORM) && match_norm (&u, op, &c))
          || ((flags & ELK_FUSE_SOFTMAX) && match_softmax (&u, op, &c)))
        g_array_append_val (chains, c);
    }
  out = build_fused (graph, &u, chains, flags, error);
  uses_clear (&u);
  return out;
}
