/* elk-orders.c: candidate preload orders (elk-paper.md §3.7, artifact
 * init_all_order_lists_reduced).
 *
 * The repeated layers are found from ElkOp.layer; a layer takes part when
 * its sequence of plan tables equals the first layer's (identical operators
 * share a table, so this compares shapes exactly).  The first layer is cut
 * into groups, each ending at a MatMul or Conv (the HBM-heavy operators of a
 * transformer) with the small operators before it attached; operators after
 * the last MatMul join the last group.  Group permutations in which no
 * group moves more than max_displacement positions are enumerated in
 * lexicographic order; permutations giving the same sequence of group kinds
 * (the MatMul's table) are dropped, keeping the first.  Each permutation is
 * applied to every identical layer; everything else keeps its place.
 */
#include "config.h"

#include <string.h>
#include "elk-compiler-private.h"

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

GPtrArray *
elk__orders_enumerate (const ElkEngine *engine,
                       guint max_displacement,
                       guint max_orders,
                       guint *n_groups_out)
{
  const guint n = engine->n_ops;
  GPtrArray *orders = g_ptr_array_new_with_free_func (g_free);
  guint32 *identity = g_new (guint32, n);
  gint32 first_layer = G_MAXINT32;
  guint layer_start = 0, layer_len = 0;
  g_autoptr(GArray) group_end = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr(GArray) layer_starts = g_array_new (FALSE, FALSE, sizeof (guint));
  Enum e = { 0 };

  *n_groups_out = 0;
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
  enumerate (&e, 0);
  *n_groups_out = e.n_groups;

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
