/* elk-orders.c: candidate preload orders (elk-paper.md §3.7).
 *
 * Two enumerations; elk_orders_enumerate() picks one (ElkOrderEnum).
 *
 * LAYERS (the artifact's init_all_order_lists_reduced).  The repeated
 * layers are found from ElkOp.layer; a layer takes part when its sequence
 * of plan tables equals the first layer's (identical operators share a
 * table, so this compares shapes exactly).  The first layer is cut into
 * groups, each ending at a MatMul or Conv (the HBM-heavy operators of a
 * transformer) with the small operators before it attached; operators after
 * the last MatMul join the last group.  Group permutations in which no
 * group moves more than max_displacement positions are enumerated in
 * lexicographic order; permutations giving the same sequence of group kinds
 * (the MatMul's table) are dropped, keeping the first.  Each permutation is
 * applied to every identical layer; everything else keeps its place.
 *
 * SUFFIX_TREE (the paper's generic enumeration, Fig 14), for graphs
 * without repeated layers.  Preloads are chosen from the last position to
 * the first, following the backward scheduling direction, and a branch is
 * cut as soon as it cannot lead to a valid order.
 *
 *   The memory rule.  Preloads run one after another in preload order
 *   (R2) and execute(i) waits for preload(i) (R3), so when operator i
 *   executes every preload issued before preload(i), and before the
 *   preload of any operator executed earlier, has completed.  With pos()
 *   the position in the preload order and M(i) = max { pos(i') : i' <= i },
 *   the operators forced to be resident while i executes are
 *
 *       R(i) = { j > i : pos(j) < M(i) }
 *
 *   (loaded, not yet executed).  An order is valid when for every i
 *
 *       exec_min(i) + sum { preload_min(j) : j in R(i) } <= capacity
 *
 *   with exec_min the smallest execute state in i's plan table and
 *   preload_min the smallest preload state (0 without HBM data).  These
 *   are lower bounds of what any allocation needs (an allocator may only
 *   choose larger states), so the test never rejects an order the
 *   scheduler could run, and R(i) is exactly the set the engine keeps
 *   resident whatever preload number it picks (its "n_unc" operators).
 *   The preloads the engine may add on top (the preload number) are
 *   optional and not counted.  This is the paper's worked example: with 9
 *   unit operators and room for 2, "Op8 last, Op6 second to last" forces
 *   Op7 and Op9 in before Op6 executes: R(6) = {7, 9}, 3 > 2, cut.
 *
 *   Incremental test.  Placing operator x at position q (all later
 *   positions filled, xmin the smallest operator placed so far) fixes
 *   R(i) exactly for i in [x, xmin) and changes nothing else: for i >=
 *   xmin, M(i) was already known and x lands before it either way; for
 *   i < x, M(i) is still unknown.  So x > xmin needs no test (the paper's
 *   "Op9's space is not counted"), and x < xmin tests
 *
 *       exec_min(i) + sum_{i<j<xmin} preload_min(j) + held <= capacity
 *
 *   for each such i, where held is the preload_min of the operators >=
 *   xmin not yet placed.  Every bound tested at a node is exact at the
 *   leaves, so the leaves are exactly the valid orders (tests compare
 *   with a brute-force filter of all N! orders).  With room for K
 *   operators a node has O(K) children (the held operators above xmin,
 *   and operators at most about K below it), so there are O(K^N) leaves,
 *   not N!.
 *
 *   Two more rules.  No preload moves more than max_move positions: the
 *   engine looks for forced residents only 2 * max_preload + 8 positions
 *   back, and a move of at most max_preload + 4 either way keeps every
 *   one in sight (on a graph without layers max_preload is the whole
 *   graph and the rule is void).  And max_resident bounds |R(i)|, for a
 *   caller that gives up orders at a preload cap as the artifact does for
 *   layer orders (§3.7 step 7); the elk scheduler does not give up
 *   suffix-tree orders (a graph without repeated layers has no per-layer
 *   cap in the paper), so it passes no limit.
 *
 *   Pruning (§3.7, "Pruning for LLMs" 1): only HBM-heavy operators move,
 *   those reading more HBM bytes than the average operator; the others
 *   keep their default positions.  Equivalent orders: two operators with
 *   the same plan table keep their relative order, since swapping them
 *   loads the same bytes in the same slots but makes the earlier one wait
 *   for both; the layer enumeration drops the same swaps.  Every other
 *   leaf is a distinct order, so no further deduplication is needed.
 *
 *   The cap.  Orders are produced by increasing displacement, the sum over
 *   moved operators of how many heavy slots they moved (the paper's best
 *   orders are close to the default: 2.9 steps on average), by repeating
 *   the search with a growing displacement budget, and depth first from
 *   the last position within one budget.  max_orders keeps the first
 *   ones, so the kept set is deterministic and always holds every order
 *   closer to the default than the last one kept.
 */
#include "config.h"

#undef G_LOG_DOMAIN
#define G_LOG_DOMAIN "elk-compiler"

#include <string.h>
#include "elk-compile-private.h"

/* The suffix tree stops after this many nodes even when max-orders is not
 * reached (deterministic: it counts nodes, not time).  A few seconds of
 * search; far more than the graphs of the corpus need. */
#define SUFFIX_TREE_MAX_NODES G_GUINT64_CONSTANT (50000000)

typedef struct
{
  guint n_groups;
  guint *kind;
  guint max_disp;
  guint max_orders;
  guint *perm;
  gboolean *used;
  GHashTable *seen;
  GPtrArray *perms;
} Enum;

static void
enumerate (Enum *e, guint k)
{
  if (e->perms->len >= e->max_orders)
    return;
  if (k == e->n_groups)
    {
      GString *key = g_string_new (NULL);
      for (guint x = 0; x < e->n_groups; x++)
        g_string_append_printf (key, "%u,", e->kind[e->perm[x]]);
      if (!g_hash_table_contains (e->seen, key->str))
        {
          g_hash_table_add (e->seen, g_string_free (key, FALSE));
          g_ptr_array_add (e->perms, g_memdup2 (e->perm,
                                                sizeof (guint) * e->n_groups));
        }
      else
        g_string_free (key, TRUE);
      return;
    }
  /* A group that would have to move further than allowed is a dead end. */
  if (k > e->max_disp && !e->used[k - e->max_disp - 1])
    return;
  for (guint g = k > e->max_disp ? k - e->max_disp : 0;
       g < e->n_groups && g <= k + e->max_disp; g++)
    {
      gboolean earlier_twin = FALSE;
      if (e->used[g])
        continue;
      /* Groups of the same kind keep their relative order.  Swapping two
       * of them gives the same kind sequence, and the stable choice never
       * needs a larger displacement, so this loses no distinct order; it
       * makes every leaf distinct, so that max_orders bounds the search
       * even on graphs where most groups are alike (train-forward). */
      for (guint h = 0; h < g && !earlier_twin; h++)
        earlier_twin = !e->used[h] && e->kind[h] == e->kind[g];
      if (earlier_twin)
        continue;
      e->used[g] = TRUE;
      e->perm[k] = g;
      enumerate (e, k + 1);
      e->used[g] = FALSE;
    }
}

static GPtrArray *
layer_orders (const ElkEngine *engine,
              guint max_displacement,
              guint max_orders,
              ElkOrderInfo *info)
{
  const guint n = engine->n_ops;
  GPtrArray *orders = g_ptr_array_new_with_free_func (g_free);
  guint32 *identity = g_new (guint32, n);
  gint32 first_layer = G_MAXINT32;
  guint layer_start = 0, layer_len = 0;
  g_autoptr(GArray) group_end = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr(GArray) layer_starts = g_array_new (FALSE, FALSE, sizeof (guint));
  Enum e = { 0 };

  for (guint i = 0; i < n; i++)
    identity[i] = i;
  g_ptr_array_add (orders, identity);

  for (guint i = 0; i < n; i++)
    {
      gint32 l = elk_graph_get_op (engine->graph, i)->layer;
      if (l >= 0 && l < first_layer)
        first_layer = l;
    }
  if (first_layer == G_MAXINT32)
    return orders;
  for (guint i = 0; i < n; i++)
    if (elk_graph_get_op (engine->graph, i)->layer == first_layer)
      {
        if (layer_len == 0)
          layer_start = i;
        layer_len++;
      }
  /* The first layer must be contiguous to serve as a template. */
  for (guint i = layer_start; i < layer_start + layer_len; i++)
    if (elk_graph_get_op (engine->graph, i)->layer != first_layer)
      return orders;

  /* Every later stretch that repeats the template's tables is a layer. */
  for (guint s = layer_start; s + layer_len <= n;)
    {
      gboolean same = TRUE;
      for (guint x = 0; x < layer_len && same; x++)
        same = engine->tables[s + x] == engine->tables[layer_start + x];
      if (same)
        {
          g_array_append_val (layer_starts, s);
          s += layer_len;
        }
      else
        s++;
    }

  for (guint x = 0; x < layer_len; x++)
    {
      ElkOpKind kind = elk_graph_get_op (engine->graph, layer_start + x)->kind;
      if (kind == ELK_OP_MATMUL || kind == ELK_OP_CONV)
        {
          guint end = x + 1;
          g_array_append_val (group_end, end);
        }
    }
  info->n_layers = layer_starts->len;
  if (group_end->len < 2)
    return orders;
  g_array_index (group_end, guint, group_end->len - 1) = layer_len;

  e.n_groups = group_end->len;
  e.kind = g_new0 (guint, e.n_groups);
  for (guint g = 0; g < e.n_groups; g++)
    {
      guint last = g_array_index (group_end, guint, g) - 1;
      /* The group's kind is its MatMul, found by walking back from its end;
       * groups whose MatMuls share a table are interchangeable. */
      while (elk_graph_get_op (engine->graph, layer_start + last)->kind
               != ELK_OP_MATMUL
             && elk_graph_get_op (engine->graph, layer_start + last)->kind
                  != ELK_OP_CONV)
        last--;
      e.kind[g] = g;
      for (guint h = 0; h < g; h++)
        {
          guint lh = g_array_index (group_end, guint, h) - 1;
          while (elk_graph_get_op (engine->graph, layer_start + lh)->kind
                   != ELK_OP_MATMUL
                 && elk_graph_get_op (engine->graph, layer_start + lh)->kind
                      != ELK_OP_CONV)
            lh--;
          if (engine->tables[layer_start + lh]
              == engine->tables[layer_start + last])
            {
              e.kind[g] = e.kind[h];
              break;
            }
        }
    }
  e.max_disp = max_displacement;
  e.max_orders = MAX (max_orders, 1u);
  e.perm = g_new0 (guint, e.n_groups);
  e.used = g_new0 (gboolean, e.n_groups);
  e.seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  e.perms = g_ptr_array_new_with_free_func (g_free);
  info->n_groups = e.n_groups;
  enumerate (&e, 0);
  info->truncated = e.perms->len >= e.max_orders;

  for (guint p = 0; p < e.perms->len; p++)
    {
      const guint *perm = g_ptr_array_index (e.perms, p);
      guint32 *order;
      gboolean identity_perm = TRUE;

      for (guint g = 0; g < e.n_groups; g++)
        identity_perm = identity_perm && perm[g] == g;
      if (identity_perm)
        continue;
      order = g_new (guint32, n);
      for (guint i = 0; i < n; i++)
        order[i] = i;
      for (guint l = 0; l < layer_starts->len; l++)
        {
          guint base = g_array_index (layer_starts, guint, l), w = base;
          for (guint g = 0; g < e.n_groups; g++)
            {
              guint src = perm[g];
              guint from = src == 0 ? 0 : g_array_index (group_end, guint,
                                                         src - 1);
              guint to = g_array_index (group_end, guint, src);
              for (guint x = from; x < to; x++)
                order[w++] = base + x;
            }
        }
      g_ptr_array_add (orders, order);
    }

  g_free (e.kind);
  g_free (e.perm);
  g_free (e.used);
  g_hash_table_unref (e.seen);
  g_ptr_array_unref (e.perms);
  return orders;
}

/* ---------------------------------------------------------------------- */
/* Suffix tree (Fig 14)                                                    */
/* ---------------------------------------------------------------------- */

typedef struct
{
  const ElkSuffixTree *p;
  guint32 *order;       /* order[q], filled from the end */
  gboolean *placed;
  guint *kind_ops;      /* movable operators grouped by kind, descending */
  guint *kind_first;    /* per kind, its first entry in kind_ops */
  guint *kind_next;     /* per kind, entries placed so far */
  guint *slot_rank;     /* per position: heavy-slot rank, or G_MAXUINT */
  guint *op_rank;       /* per operator: heavy rank, or G_MAXUINT */
  guint budget;         /* displacement level being searched */
  gboolean cut;         /* a branch exceeded the budget */
  gboolean stop;
  guint64 nodes;
  GPtrArray *out;
} Tree;

/* Places x at position q; see the incremental test in the file comment.
 * Returns FALSE when an operator in [x, xmin) would overflow. */
static gboolean
tree_place (const Tree *t, guint x, guint *xmin, guint64 *held,
            guint *n_held)
{
  const ElkSuffixTree *p = t->p;

  if (x > *xmin)
    {
      /* Already counted as held by every operator whose R() is fixed. */
      *held -= p->preload_bytes[x];
      *n_held -= 1;
      return TRUE;
    }
  {
    guint64 between = 0;
    for (guint i = *xmin; i-- > x;)
      {
        guint resident = *n_held + (*xmin - 1 - i);
        if (p->exec_bytes[i] > p->capacity
            || between + *held > p->capacity - p->exec_bytes[i]
            || (p->max_resident != G_MAXUINT && resident > p->max_resident))
          return FALSE;
        if (i > x)
          between += p->preload_bytes[i];
      }
    *held += between;
    *n_held += *xmin - x - 1;
    *xmin = x;
  }
  return TRUE;
}

static void
tree_emit (Tree *t)
{
  g_ptr_array_add (t->out, g_memdup2 (t->order,
                                      sizeof (guint32) * t->p->n));
  if (t->out->len >= t->p->max_orders)
    t->stop = TRUE;
}

static void
tree_visit (Tree *t, gint q, guint xmin, guint64 held, guint n_held,
            guint disp)
{
  const ElkSuffixTree *p = t->p;
  guint lo, hi;

  if (t->stop)
    return;
  if (++t->nodes > p->max_nodes && p->max_nodes > 0)
    {
      t->stop = TRUE;
      return;
    }
  if (q < 0)
    {
      /* Shallower budgets emitted the cheaper leaves already. */
      if (disp == t->budget)
        tree_emit (t);
      return;
    }
  /* An operator that would have to move further than max_move is still
   * unplaced: dead end.  Checking one operator per position covers all of
   * them, since positions are filled from the end. */
  if (p->max_move != G_MAXUINT && (guint) q + p->max_move + 1 < p->n
      && !t->placed[q + p->max_move + 1])
    return;

  if (!p->movable[q])
    {
      guint xm = xmin, nh = n_held;
      guint64 h = held;
      if (t->placed[q] || !tree_place (t, q, &xm, &h, &nh))
        return;
      t->placed[q] = TRUE;
      t->order[q] = q;
      tree_visit (t, q - 1, xm, h, nh, disp);
      t->placed[q] = FALSE;
      return;
    }

  /* Larger operators first: the paper's branches start from the last. */
  hi = p->max_move == G_MAXUINT ? p->n - 1 : MIN (p->n - 1, q + p->max_move);
  lo = p->max_move == G_MAXUINT || (guint) q < p->max_move
         ? 0 : q - p->max_move;
  for (guint x = hi + 1; x-- > lo && !t->stop;)
    {
      guint k, cost, xm = xmin, nh = n_held;
      guint64 h = held;

      if (!p->movable[x] || t->placed[x])
        continue;
      /* Only the latest unplaced operator of its kind (see file comment). */
      k = p->kind[x];
      if (t->kind_ops[t->kind_first[k] + t->kind_next[k]] != x)
        continue;
      cost = t->slot_rank[q] > t->op_rank[x]
               ? t->slot_rank[q] - t->op_rank[x]
               : t->op_rank[x] - t->slot_rank[q];
      if (disp + cost > t->budget)
        {
          t->cut = TRUE;
          continue;
        }
      if (!tree_place (t, x, &xm, &h, &nh))
        continue;
      t->placed[x] = TRUE;
      t->kind_next[k]++;
      t->order[q] = x;
      tree_visit (t, q - 1, xm, h, nh, disp + cost);
      t->kind_next[k]--;
      t->placed[x] = FALSE;
    }
}

/**
 * elk_orders_suffix_tree:
 * @problem: the enumeration's inputs
 * @info: (out caller-allocates) (optional): what the enumeration did
 *
 * The generic preload-order enumeration (Fig 14) under the rule of this
 * file's comment.
 *
 * Returns: (transfer full) (element-type guint32*): the valid orders,
 *   by increasing displacement level, the default order first when it is
 *   valid
 */
GPtrArray *
elk_orders_suffix_tree (const ElkSuffixTree *problem, ElkOrderInfo *info)
{
  const guint n = problem->n;
  Tree t = { 0 };
  g_autofree guint *count = g_new0 (guint, n + 1);
  guint rank = 0;
  ElkOrderInfo dummy;

  if (info == NULL)
    info = &dummy;
  memset (info, 0, sizeof (*info));
  info->method = ELK_ORDER_ENUM_SUFFIX_TREE;
  t.p = problem;
  t.out = g_ptr_array_new_with_free_func (g_free);
  if (n == 0 || problem->max_orders == 0)
    return t.out;
  t.order = g_new (guint32, n);
  t.placed = g_new0 (gboolean, n);
  t.kind_ops = g_new (guint, n);
  t.kind_first = g_new (guint, n);
  t.kind_next = g_new0 (guint, n);
  t.slot_rank = g_new (guint, n);
  t.op_rank = g_new (guint, n);

  /* Movable operators by kind, each kind's in descending order: the tree
   * places them from the last position, so a kind's next one is always the
   * latest unplaced. */
  for (guint i = 0; i < n; i++)
    {
      g_assert (problem->kind[i] < n);
      if (problem->movable[i])
        count[problem->kind[i] + 1]++;
      t.slot_rank[i] = t.op_rank[i] = problem->movable[i] ? rank++ : G_MAXUINT;
    }
  info->n_movable = rank;
  for (guint k = 0; k < n; k++)
    count[k + 1] += count[k];
  for (guint k = 0; k < n; k++)
    t.kind_first[k] = count[k];
  for (guint i = n; i-- > 0;)
    if (problem->movable[i])
      t.kind_ops[count[problem->kind[i]]++] = i;

  for (t.budget = 0;; t.budget += 2)
    {
      t.cut = FALSE;
      tree_visit (&t, (gint) n - 1, n, 0, 0, 0);
      info->max_level = t.budget;
      if (t.stop || !t.cut)
        break;
    }
  info->truncated = t.stop;
  info->n_nodes = t.nodes;

  g_free (t.order);
  g_free (t.placed);
  g_free (t.kind_ops);
  g_free (t.kind_first);
  g_free (t.kind_next);
  g_free (t.slot_rank);
  g_free (t.op_rank);
  return t.out;
}

/* The suffix tree over an engine's plan tables. */
static GPtrArray *
suffix_tree_orders (const ElkEngine *engine, guint max_orders,
                    ElkOrderInfo *info)
{
  const guint n = engine->n_ops;
  g_autofree guint64 *exec_bytes = g_new (guint64, n);
  g_autofree guint64 *preload_bytes = g_new (guint64, n);
  g_autofree gboolean *movable = g_new (gboolean, n);
  g_autofree guint *kind = g_new (guint, n);
  g_autoptr(GHashTable) first = g_hash_table_new (NULL, NULL);
  double total = 0;
  ElkSuffixTree p = { 0 };
  GPtrArray *orders;
  gboolean identity_first = FALSE;

  for (guint i = 0; i < n; i++)
    total += (double) engine->tables[i]->hbm_bytes;
  for (guint i = 0; i < n; i++)
    {
      const ElkPlanTable *t = engine->tables[i];
      gpointer k;
      guint64 min_cold = G_MAXUINT64;

      for (guint e = 0; e < t->n_cold_hot; e++)
        min_cold = MIN (min_cold, t->cold_hot[e].cold_bytes);
      exec_bytes[i] = elk_engine_table_min_hot (t);
      preload_bytes[i] = t->hbm_bytes > 0 ? min_cold : 0;
      /* HBM-heavy: more HBM bytes than the average operator (§3.7). */
      movable[i] = t->hbm_bytes > 0 && (double) t->hbm_bytes * n > total;
      if (!g_hash_table_lookup_extended (first, t, NULL, &k))
        {
          k = GUINT_TO_POINTER (i);
          g_hash_table_insert (first, (gpointer) t, k);
        }
      kind[i] = GPOINTER_TO_UINT (k);
    }
  p.n = n;
  p.exec_bytes = exec_bytes;
  p.preload_bytes = preload_bytes;
  p.movable = movable;
  p.kind = kind;
  p.capacity = engine->usable;
  /* See the file comment: what the engine can evaluate. */
  p.max_resident = G_MAXUINT;
  p.max_move = engine->max_preload + 4;
  p.max_orders = max_orders;
  p.max_nodes = SUFFIX_TREE_MAX_NODES;
  orders = elk_orders_suffix_tree (&p, info);

  /* The default order is valid whenever every operator fits on its own
   * (checked by the engine), so it comes first; keep that promise even if
   * a tiny max_nodes ended the search early. */
  if (orders->len > 0)
    {
      const guint32 *o = g_ptr_array_index (orders, 0);
      identity_first = TRUE;
      for (guint i = 0; i < n && identity_first; i++)
        identity_first = o[i] == i;
    }
  if (!identity_first)
    g_ptr_array_insert (orders, 0, elk_order_new_identity (n));
  return orders;
}

/**
 * elk_orders_enumerate:
 * @engine: the engine whose graph and tables to use
 * @method: how to enumerate
 * @max_displacement: LAYERS: most positions a group may move
 * @max_orders: stop after this many orders
 * @info: (out caller-allocates): what the enumeration did
 * @error: return location for a #GError
 *
 * Candidate preload orders for @engine's graph.  Deterministic.
 *
 * Returns: (transfer full) (element-type guint32*) (nullable): the orders,
 *   the default one first; %NULL with @error set only when @method is
 *   LAYERS and the graph has no repeated layers to permute
 */
GPtrArray *
elk_orders_enumerate (const ElkEngine *engine,
                      ElkOrderEnum method,
                      guint max_displacement,
                      guint max_orders,
                      ElkOrderInfo *info,
                      GError **error)
{
  GPtrArray *orders;

  memset (info, 0, sizeof (*info));
  if (method != ELK_ORDER_ENUM_SUFFIX_TREE)
    {
      orders = layer_orders (engine, max_displacement, max_orders, info);
      info->method = ELK_ORDER_ENUM_LAYERS;
      if (method == ELK_ORDER_ENUM_LAYERS && info->n_groups < 2)
        {
          g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                       "elk scheduler: order-enumeration=layers, but graph "
                       "'%s' has no layer with two or more MatMul/Conv "
                       "groups to permute (%u layer instance(s) found); use "
                       "order-enumeration=auto or suffix-tree",
                       elk_graph_get_name (engine->graph), info->n_layers);
          g_ptr_array_unref (orders);
          return NULL;
        }
      /* Layers found and permuted, and they repeat: the layer method's
       * home ground. */
      if (method == ELK_ORDER_ENUM_LAYERS
          || (info->n_layers >= 2 && info->n_groups >= 2))
        return orders;
      g_ptr_array_unref (orders);
    }
  {
    guint n_layers = info->n_layers;
    orders = suffix_tree_orders (engine, max_orders, info);
    info->n_layers = n_layers;
  }
  return orders;
}
