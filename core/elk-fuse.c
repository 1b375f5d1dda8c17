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
 * The chain is recognised by structure (kinds, einsum accesses, the
 * operators' functions and single-use intermediate tensors), never by
 * operator names, so any frontend that spells RMSNorm this way benefits.
 */
#include "config.h"

#include <string.h>

#include "elk-private.h"

/* One recognised RMSNorm and where its pieces sit in the source graph. */
typedef struct
{
  guint32 ops[5];    /* square, sum, rsqrt, scale, gain */
  guint32 x;         /* the norm's input */
  guint32 gain;      /* the gain vector */
  guint32 temps[5];  /* square, sum, rsqrt, scale and gain outputs */
  guint n_readers;   /* MatMuls reading the gain output */
  double norm_flops; /* the five operators' FLOPs */
} NormChain;

typedef struct
{
  const ElkGraph *graph;
  guint n_ops;
  guint n_tensors;
  guint *n_uses;    /* per tensor: operand slots reading it */
  gint *reader;     /* per tensor: the last operator reading it */
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

/* Tries to read an RMSNorm starting at operator @sq (its square). */
static gboolean
match_norm (const Uses *u, const ElkOp *sq, NormChain *c)
{
  const ElkOp *su, *rs, *sc, *gn;
  gint8 m, k;
  guint32 y;
  guint n_mm = 0;

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

  /* Every reader of the norm's output is a MatMul contracting over k. */
  y = gn->tensors[0];
  if (elk_graph_get_tensor (u->graph, y)->origin != ELK_TENSOR_ORIGIN_ACTIVATION
      || u->n_uses[y] == 0)
    return FALSE;
  for (guint i = gn->id + 1; i < u->n_ops; i++)
    {
      const ElkOp *op = elk_graph_get_op (u->graph, i);
      gboolean reads = FALSE;

      for (guint v = 1; v < op->n_operands; v++)
        reads |= op->tensors[v] == y;
      if (!reads)
        continue;
      if (!matmul_reads_norm (op, y))
        return FALSE;
      n_mm++;
    }
  if (n_mm != u->n_uses[y])
    return FALSE;

  c->ops[0] = sq->id;
  c->ops[1] = su->id;
  c->ops[2] = rs->id;
  c->ops[3] = sc->id;
  c->ops[4] = gn->id;
  c->x = sq->tensors[1];
  c->gain = gn->tensors[2];
  c->temps[0] = sq->tensors[0];
  c->temps[1] = su->tensors[0];
  c->temps[2] = rs->tensors[0];
  c->temps[3] = sc->tensors[0];
  c->temps[4] = y;
  c->n_readers = n_mm;
  c->norm_flops = sq->flops + su->flops + rs->flops + sc->flops + gn->flops;
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
 * indexed by the contracted dimension. */
static gboolean
add_fused (ElkGraph *out,
           const ElkOp *mm,
           const NormChain *c,
           const gint *new_id,
           GError **error)
{
  g_autoptr (GString) spec = g_string_new (NULL);
  g_autofree char *extents = dup_extents (mm);
  guint32 tensors[4];
  gint id;

  append_access (spec, mm, &mm->access[1]);
  g_string_append_c (spec, ',');
  append_access (spec, mm, &mm->access[2]);
  g_string_append_printf (spec, ",%c->",
                          mm->dim_names[mm->access[1].dims[1][0]]);
  append_access (spec, mm, &mm->access[0]);
  tensors[0] = (guint32) new_id[c->x];
  tensors[1] = (guint32) new_id[mm->tensors[2]];
  tensors[2] = (guint32) new_id[c->gain];
  tensors[3] = (guint32) new_id[mm->tensors[0]];
  id = elk_graph_add_op (out, mm->name, ELK_FUSE_RMSNORM_MATMUL, ELK_OP_MATMUL,
                         mm->layer, spec->str, tensors, 4, extents, error);
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
  u->routed = g_new0 (gboolean, u->n_ops);
  for (guint t = 0; t < u->n_tensors; t++)
    u->reader[t] = -1;
  for (guint i = 0; i < u->n_ops; i++)
    {
      const ElkOp *op = elk_graph_get_op (graph, i);
      guint32 router;

      if (elk_graph_get_op_condition (graph, i, &router, NULL, NULL))
        {
          u->routed[i] = TRUE;
          u->routed[router] = TRUE;
        }
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
  g_free (u->routed);
}

/* Builds the fused graph from @graph and the chains found in it. */
static ElkGraph *
build_fused (const ElkGraph *graph,
             const Uses *u,
             GArray *chains,
             GError **error)
{
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
      for (guint j = 0; j < 5; j++)
        {
          removed[nc->ops[j]] = TRUE;
          temp[nc->temps[j]] = TRUE;
        }
      for (guint i = nc->ops[4] + 1; i < u->n_ops; i++)
        if (matmul_reads_norm (elk_graph_get_op (graph, i), nc->temps[4]))
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
   * MatMul's.  No norm operator has one or routes (match_norm). */
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
  n_text = g_strdup_printf ("%u", chains->len);
  elk_graph_set_attribute (out, "fused-norms", n_text);
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
 * %ELK_FUSE_RMSNORM_MATMUL operator per MatMul.  The fused operator keeps
 * the MatMul's name, layer and output, reads x, the weight and the gain,
 * and carries the MatMul's FLOPs plus its share of the norm's.  Norms
 * that do not match (LayerNorm, a norm read by anything else) stay as
 * they are.  Tensors, operator order and attributes are otherwise kept,
 * and the attribute "fused-norms" counts the norms folded.
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

  if (flags & ~ELK_FUSE_NORM)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "graph '%s': unknown fusion flags 0x%x (known: 0x%x, "
                   "norm)",
                   elk_graph_get_name (graph), (guint) flags,
                   (guint) ELK_FUSE_NORM);
      return NULL;
    }
  if (flags == ELK_FUSE_NONE)
    return elk_graph_ref (graph);

  uses_init (&u, graph);
  chains = g_array_new (FALSE, FALSE, sizeof (NormChain));
  for (guint i = 0; i < u.n_ops; i++)
    {
      NormChain c;
      if (match_norm (&u, elk_graph_get_op (graph, i), &c))
        g_array_append_val (chains, c);
    }
  out = build_fused (graph, &u, chains, error);
  uses_clear (&u);
  return out;
}
