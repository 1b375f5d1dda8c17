/* elk-layout.c: layout-aware entry choice in the backward engine
 * (docs/compiler.md, "Layout-aware plan selection").
 *
 * The engine schedules from the last operator back, so when it chooses
 * operator i's cold-hot entry the entries of every operator that reads
 * i's output are known.  When the plan set's cost model prices re-layout
 * (elk_cost_model_price_relayout(); the analytic model does not), the
 * engine lets the design's policy choose as before and then looks among
 * the entries that change nothing the policy decided about SRAM (the same
 * preload-state size, an execute state no larger) for the one with the
 * smallest execution + warm-up + re-layout to i's chosen consumers + the
 * part of i's own input gathers that its plan alone decides.  It applies
 * to every design, since it sits in the engine and not in a policy.
 *
 * The prices depend only on the two operators' tables, the operand and
 * the two entries, so they are computed once per distinct (producer
 * table, consumer table, operand) edge when the engine is made, in graph
 * order (deterministic), and read without locks by the search threads.
 */
#include "config.h"

#undef G_LOG_DOMAIN
#define G_LOG_DOMAIN "elk-compiler"

#include <math.h>
#include <string.h>
#include "elk-compile-private.h"

/* The prices of one distinct edge: pair[e_p * n_c + e_c] from producer
 * entry e_p to consumer entry e_c, own[e_c] with the producer unknown. */
struct _ElkLayoutPrices
{
  const ElkPlanTable *tp, *tc;
  guint operand;
  double *pair;
  double *own;
};

/* One edge of the graph: operand v of consumer c reads producer p's
 * output. */
typedef struct
{
  guint32 p, c;
  const ElkLayoutPrices *prices;
} Edge;

/* One block: the struct, the edges sorted by producer, then out_start
 * (n_ops + 1: producer i's edges), in_start (n_ops + 1: consumer i's, in
 * in_edges) and in_edges. */
struct _ElkLayout
{
  GPtrArray *prices; /* ElkLayoutPrices, owned */
  guint64 n_priced;  /* entry pairs priced (for the log) */
  guint n_edges;
  guint *out_start, *in_start, *in_edges;
  Edge edges[];
};

static void
prices_free (gpointer data)
{
  ElkLayoutPrices *lp = data;

  g_free (lp->pair); /* own shares its block */
  g_free (lp);
}

/* The first entry of @t with entry @e's execute plan: entries that share
 * one share its re-layout prices. */
static guint
first_same (const ElkPlanTable *t, guint e)
{
  for (guint k = 0; k < e; k++)
    if (t->cold_hot[k].hot_plan == t->cold_hot[e].hot_plan)
      return k;
  return e;
}

/* Prices every (producer entry, consumer entry) pair of edge @q, and
 * every consumer entry with the producer unknown. */
static gboolean
price_edge (const ElkEngine *engine,
            ElkCostModel *model,
            ElkRelayoutQuery q,
            ElkLayoutPrices *lp,
            ElkLayout *layout,
            GError **error)
{
  const guint np = lp->tp->n_cold_hot, nc = lp->tc->n_cold_hot;
  const gsize n_pairs = (gsize) np * nc;
  ElkRelayoutPrice price;

  lp->pair = g_new (double, n_pairs + nc);
  lp->own = lp->pair + n_pairs;
  for (guint ec = 0; ec < nc; ec++)
    {
      guint same = first_same (lp->tc, ec);

      q.consumer_entry = ec;
      q.producer_entry = -1;
      if (same == ec
          && !elk_cost_model_price_relayout (model, engine->plans, &q, &price,
                                             error))
        return FALSE;
      lp->own[ec] = same == ec ? price.time_s : lp->own[same];
      for (guint ep = 0; ep < np; ep++)
        {
          guint sp = same == ec ? first_same (lp->tp, ep) : ep;
          double *at = &lp->pair[(gsize) ep * nc + ec];

          if (same != ec || sp != ep)
            {
              *at = lp->pair[(gsize) sp * nc + same];
              continue;
            }
          q.producer_entry = (gint) ep;
          if (!elk_cost_model_price_relayout (model, engine->plans, &q, &price,
                                              error))
            return FALSE;
          *at = price.time_s;
          layout->n_priced++;
        }
    }
  return TRUE;
}

/* The prices of edge (p, c, v), shared with an identical edge seen
 * before. */
static const ElkLayoutPrices *
edge_prices (const ElkEngine *engine,
             ElkCostModel *model,
             ElkLayout *layout,
             guint p,
             guint c,
             guint v,
             GError **error)
{
  const ElkPlanTable *tp = engine->tables[p], *tc = engine->tables[c];
  ElkLayoutPrices *lp;

  for (guint k = 0; k < layout->prices->len; k++)
    {
      lp = layout->prices->pdata[k];
      if (lp->tp == tp && lp->tc == tc && lp->operand == v)
        return lp;
    }
  lp = g_new0 (ElkLayoutPrices, 1);
  lp->tp = tp;
  lp->tc = tc;
  lp->operand = v;
  g_ptr_array_add (layout->prices, lp);
  if (!price_edge (engine, model,
                   (ElkRelayoutQuery){
                       .producer = p, .consumer = c, .operand = v },
                   lp, layout, error))
    return NULL;
  return lp;
}

/* Lists the graph's producer-consumer edges: every activation operand
 * whose tensor an earlier operator writes (the latest such writer, as the
 * emulator's input superstep gathers from). */
static GArray *
list_edges (const ElkGraph *graph, guint n_ops)
{
  guint n_tensors = elk_graph_get_n_tensors (graph);
  g_autofree gint *producer = g_new (gint, MAX (n_tensors, 1u));
  GArray *edges = g_array_new (FALSE, FALSE, sizeof (guint32) * 3);

  for (guint t = 0; t < n_tensors; t++)
    producer[t] = -1;
  for (guint i = 0; i < n_ops; i++)
    {
      const ElkOp *op = elk_graph_get_op (graph, i);

      for (guint v = 1; v < op->n_operands; v++)
        {
          gint p = producer[op->tensors[v]];
          guint32 e[3] = { (guint32) p, i, v };

          if (p >= 0
              && elk_graph_get_tensor (graph, op->tensors[v])->origin
                     == ELK_TENSOR_ORIGIN_ACTIVATION)
            g_array_append_val (edges, e);
        }
      producer[op->tensors[0]] = (gint) i;
    }
  return edges;
}

/**
 * elk__layout_new:
 * @engine: an engine whose plan set's cost model prices re-layout
 * @model: that cost model
 * @error: return location for a #GError
 *
 * Prices every producer-consumer edge of the engine's graph.
 *
 * Returns: (transfer full) (nullable): the prices, or %NULL with @error
 *   set when the model fails
 */
ElkLayout *
elk__layout_new (const ElkEngine *engine, ElkCostModel *model, GError **error)
{
  const guint n = engine->n_ops;
  g_autoptr (GArray) list = list_edges (engine->graph, n);
  ElkLayout *layout = g_malloc0 (sizeof (ElkLayout) + sizeof (Edge) * list->len
                                 + sizeof (guint) * (2 * (n + 1) + list->len));
  gint64 t0 = g_get_monotonic_time ();
  guint *fill;

  layout->prices = g_ptr_array_new_with_free_func (prices_free);
  layout->n_edges = list->len;
  layout->out_start = (guint *) (layout->edges + list->len);
  layout->in_start = layout->out_start + n + 1;
  layout->in_edges = layout->in_start + n + 1;
  /* Counting sort by producer, keeping graph order within a producer. */
  for (guint k = 0; k < list->len; k++)
    {
      const guint32 *e = &g_array_index (list, guint32, 3 * k);
      layout->out_start[e[0] + 1]++;
      layout->in_start[e[1] + 1]++;
    }
  for (guint i = 0; i < n; i++)
    {
      layout->out_start[i + 1] += layout->out_start[i];
      layout->in_start[i + 1] += layout->in_start[i];
    }
  fill = g_new0 (guint, n);
  for (guint k = 0; k < list->len; k++)
    {
      const guint32 *e = &g_array_index (list, guint32, 3 * k);
      guint at = layout->out_start[e[0]] + fill[e[0]]++;
      const ElkLayoutPrices *lp
          = edge_prices (engine, model, layout, e[0], e[1], e[2], error);

      if (lp == NULL)
        {
          g_free (fill);
          elk__layout_free (layout);
          return NULL;
        }
      layout->edges[at] = (Edge){ e[0], e[1], lp };
    }
  memset (fill, 0, sizeof (guint) * n);
  for (guint k = 0; k < list->len; k++)
    {
      guint32 c = layout->edges[k].c;
      layout->in_edges[layout->in_start[c] + fill[c]++] = k;
    }
  g_free (fill);
  g_debug ("layout: %u producer-consumer edges, %u distinct, %" G_GUINT64_FORMAT
           " entry pairs priced in %.3f s",
           layout->n_edges, layout->prices->len, layout->n_priced,
           (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC);
  return layout;
}

/* Frees @layout, which may be NULL. */
void
elk__layout_free (ElkLayout *layout)
{
  if (layout != NULL)
    g_ptr_array_unref (layout->prices);
  g_free (layout);
}

/* What entry @e of operator i adds through re-layout: to the consumers,
 * whose entries @ops holds, and the part of i's own input gathers that
 * its plan decides. */
static double
relayout_cost (const ElkLayout *layout,
               const ElkEngineOp *ops,
               guint i,
               guint e)
{
  double s = 0;

  for (guint k = layout->out_start[i]; k < layout->out_start[i + 1]; k++)
    {
      const Edge *ed = &layout->edges[k];
      s += ed->prices->pair[(gsize) e * ed->prices->tc->n_cold_hot
                            + ops[ed->c].entry];
    }
  for (guint k = layout->in_start[i]; k < layout->in_start[i + 1]; k++)
    s += layout->edges[layout->in_edges[k]].prices->own[e];
  return s;
}

/**
 * elk__layout_refine:
 * @layout: the engine's re-layout prices
 * @ops: the run's operators, those after @i scheduled
 * @i: the operator being scheduled
 * @c: the candidate the policy took; its entry, exec_s and warmup_s may
 *   change
 *
 * Moves @c to the entry with the smallest execution + warm-up + re-layout
 * among those that keep every SRAM decision valid and the policy's
 * preload state: the policy's preload-state size (any, for an operator
 * that reads nothing from HBM and so has none), and an execute state
 * within the candidate's budget, or no larger than the policy's when the
 * policy re-sized the preloaded operators around it (the allocator split
 * the SRAM for that entry).  The policy's entry wins ties.
 */
void
elk__layout_refine (const ElkLayout *layout,
                    const ElkEngineOp *ops,
                    guint i,
                    ElkEngineCandidate *c)
{
  const ElkPlanTable *t = c->table;
  const ElkColdHot *chosen = &t->cold_hot[c->entry];
  const guint64 hot_cap = c->sets_preload_entries
                              ? chosen->hot_bytes
                              : MAX (c->budget, chosen->hot_bytes);
  const gboolean any_cold = t->hbm_bytes == 0;
  guint best = c->entry;
  double best_s = chosen->exec_s + chosen->warmup_s
                  + relayout_cost (layout, ops, i, c->entry);

  if (layout->out_start[i] == layout->out_start[i + 1]
      && layout->in_start[i] == layout->in_start[i + 1])
    return;
  for (guint e = 0; e < t->n_cold_hot; e++)
    {
      const ElkColdHot *ch = &t->cold_hot[e];
      double s;

      if (e == c->entry || (!any_cold && ch->cold_bytes != chosen->cold_bytes)
          || ch->hot_bytes > hot_cap)
        continue;
      s = ch->exec_s + ch->warmup_s + relayout_cost (layout, ops, i, e);
      if (s < best_s)
        {
          best = e;
          best_s = s;
        }
    }
  if (best == c->entry)
    return;
  c->entry = best;
  c->exec_s = t->cold_hot[best].exec_s;
  c->warmup_s = t->cold_hot[best].warmup_s;
}
