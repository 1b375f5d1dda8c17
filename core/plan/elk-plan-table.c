/* elk-plan-table.c: the plan table of one operator.
 *
 * Pass 1 walks the whole plan space and keeps the execute-state ("hot")
 * Pareto front online: a plan enters only if no kept plan is both no
 * larger and no slower, and it evicts the kept plans it dominates.  This is
 * the artifact's "fastest plan per distinct size, then only plans strictly
 * faster than every smaller one" (t10-plan-space.md §2.5) without storing
 * one entry per distinct size.  Ties keep the plan enumerated first, and
 * the enumeration order is fixed, so a table does not depend on threads.
 *
 * Pass 2 builds the cold-hot table.  A preload-state ("cold") plan is
 * reachable from a hot plan when both share the spatial vector and every
 * cold rotation factor is a multiple of the hot one, so for each hot plan
 * the search walks only that spatial vector again with candidate columns
 * restricted to multiples of the hot plan's.  For every (cold size, hot
 * plan) it keeps the cold plan with the least hot time + warm-up.
 *
 * The artifact enumeration (ELK_PLAN_ENUMERATION_ARTIFACT, a measurement
 * device) follows the artifact's own rules instead
 * (t10_TensorExpression.py: search_optimal_config,
 * search_optimal_config_cold, generate_cold_hot_table): its hot
 * candidates are its "Pareto" list, slower same-size duplicates included;
 * its cold candidates are every enumerated plan whose cold size fits,
 * whether or not the plan could itself execute; and the table keeps, per
 * (cold size, hot size), the compatible pair with the least hot time +
 * warm-up.  See artifact_pass2.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "elk-plan-private.h"

typedef struct
{
  guint64 hot;
  double cycles;
  ElkPlan plan;
} FrontEntry;

typedef struct
{
  guint64 hot;
  double cycles;
  guint64 seq;        /* the spatial vector's rank in the spatial walk */
  ElkPlan plan;       /* artifact enumeration only */
} Record;

typedef struct
{
  FrontEntry *front;
  guint n_front;
  guint alloc;
  guint64 min_hot;

  /* The artifact's bookkeeping (see artifact_front): for the validation
   * statistics and for the artifact enumeration's cold-hot table. */
  GHashTable *best_by_size;   /* hot bytes -> best cycles so far */
  GArray *records;            /* Record */
  gboolean record_plans;
} Pass1;

/* The artifact's config_dict gains a config whenever it is faster than
 * every earlier config of its hot size, and never loses the slower one;
 * its "Pareto" list then keeps, in size order (insertion order within a
 * size), every config strictly faster than the last kept one.  A size can
 * so appear more than once.  Sorts @records and returns the indices of
 * that list, in its order. */
static gint
record_compare (gconstpointer a, gconstpointer b)
{
  const Record *x = a, *y = b;

  return x->hot < y->hot ? -1 : x->hot > y->hot;
}

static GArray *
artifact_front (GArray *records)
{
  GArray *list = g_array_new (FALSE, FALSE, sizeof (guint));
  double last = 0;

  /* g_array_sort is stable, as Python's sorted () is. */
  g_array_sort (records, record_compare);
  for (guint i = 0; i < records->len; i++)
    {
      const Record *r = &g_array_index (records, Record, i);
      if (list->len == 0 || r->cycles < last)
        {
          g_array_append_val (list, i);
          last = r->cycles;
        }
    }
  return list;
}

static void
artifact_record (Pass1 *p,
                 PlanSearch *s,
                 const PlanDimCand *const *chosen,
                 const PlanEval *e)
{
  gpointer key = GSIZE_TO_POINTER ((gsize) e->hot);
  double *best = g_hash_table_lookup (p->best_by_size, key);
  Record *r;

  if (best != NULL && !(e->total_cycles < *best))
    return;
  if (best == NULL)
    {
      best = g_new (double, 1);
      g_hash_table_insert (p->best_by_size, key, best);
    }
  /* The best time of the size moves on; the old record stays. */
  *best = e->total_cycles;
  g_array_set_size (p->records, p->records->len + 1);
  r = &g_array_index (p->records, Record, p->records->len - 1);
  r->hot = e->hot;
  r->cycles = e->total_cycles;
  r->seq = s->n_spatial;
  if (p->record_plans)
    elk__plan_search_fill (s, chosen, e, &r->plan);
}

/* Inserts the plan into the Pareto front unless a kept plan dominates it. */
static void
pass1_leaf (PlanSearch *s, const PlanDimCand *const *chosen, gpointer data)
{
  Pass1 *p = data;
  PlanEval e;
  guint lo = 0, hi, pos, end;

  if (!elk__plan_search_eval (s, chosen, &e, TRUE))
    {
      p->min_hot = MIN (p->min_hot, e.hot);
      return;
    }
  p->min_hot = MIN (p->min_hot, e.hot);
  if (p->records != NULL)
    artifact_record (p, s, chosen, &e);

  /* lo = the number of kept plans no larger than this one; the front has
   * strictly decreasing times, so only the largest of them can dominate. */
  hi = p->n_front;
  while (lo < hi)
    {
      guint mid = (lo + hi) / 2;
      if (p->front[mid].hot <= e.hot)
        lo = mid + 1;
      else
        hi = mid;
    }
  if (lo > 0 && p->front[lo - 1].cycles <= e.total_cycles)
    return;

  pos = lo;
  if (lo > 0 && p->front[lo - 1].hot == e.hot)
    pos = lo - 1;
  end = lo;
  while (end < p->n_front && p->front[end].cycles >= e.total_cycles)
    end++;

  /* Replace [pos, end) by the new plan. */
  if (end == pos)
    {
      if (p->n_front == p->alloc)
        {
          p->alloc = MAX (16u, p->alloc * 2);
          p->front = g_renew (FrontEntry, p->front, p->alloc);
        }
      memmove (&p->front[pos + 1], &p->front[pos],
               (p->n_front - pos) * sizeof (FrontEntry));
      p->n_front++;
    }
  else if (end > pos + 1)
    {
      memmove (&p->front[pos + 1], &p->front[end],
               (p->n_front - end) * sizeof (FrontEntry));
      p->n_front -= end - pos - 1;
    }
  p->front[pos].hot = e.hot;
  p->front[pos].cycles = e.total_cycles;
  elk__plan_search_fill (s, chosen, &e, &p->front[pos].plan);
}

typedef struct
{
  guint64 cold;
  guint hot_index;    /* into the hot front (artifact: its list) */
  double score;       /* cycles: hot time + warm-up */
  double warm_cycles;
  double warm_noc;
  ElkPlan plan;
  guint64 hot;        /* the hot plan's size */
  const ElkPlan *hot_plan;
} ColdEntry;

typedef struct
{
  const ElkPlan *hot;
  double hot_cycles;
  guint hot_index;
  GArray *entries;    /* ColdEntry, this hot plan's from first_entry on */
  guint first_entry;
} Pass2;

static void
pass2_leaf (PlanSearch *s, const PlanDimCand *const *chosen, gpointer data)
{
  Pass2 *p = data;
  PlanEval e;
  ElkPlan cold;
  double warm, noc, score;
  ColdEntry *found = NULL;

  /* Every kept plan fits: a cold plan that could not itself execute is
   * not kept (its hot size is at most its hot partner's but for padding). */
  if (!elk__plan_search_eval (s, chosen, &e, TRUE) || e.cold > s->usable)
    return;

  for (guint i = p->first_entry; i < p->entries->len; i++)
    {
      ColdEntry *c = &g_array_index (p->entries, ColdEntry, i);
      if (c->cold == e.cold)
        {
          found = c;
          break;
        }
    }

  elk__plan_search_fill (s, chosen, &e, &cold);
  warm = elk__plan_search_warmup (s, &cold, p->hot, &noc);
  score = p->hot_cycles + warm;
  if (found != NULL && found->score <= score)
    return;
  if (found == NULL)
    {
      ColdEntry fresh = { 0 };
      g_array_append_val (p->entries, fresh);
      found = &g_array_index (p->entries, ColdEntry, p->entries->len - 1);
    }
  found->cold = e.cold;
  found->hot_index = p->hot_index;
  found->score = score;
  found->warm_cycles = warm;
  found->warm_noc = noc;
  found->plan = cold;
  found->hot = p->hot->hot_bytes;
  found->hot_plan = p->hot;
}

/* The artifact's pass 2.  Its hot candidates on one spatial vector, in
 * the order of its list; the cold candidates are that vector's plans. */
typedef struct
{
  const Record *const *hot;
  const guint *hot_pos;       /* position of each in the artifact list */
  guint n_hot;
  GArray *entries;            /* ColdEntry */
  GHashTable *by_pair;        /* PairKey -> entry index + 1 */
} ArtifactPass2;

typedef struct
{
  guint64 cold;
  guint64 hot;
} PairKey;

static guint
pair_hash (gconstpointer key)
{
  const PairKey *k = key;

  return g_int64_hash (&k->cold) * 31u + g_int64_hash (&k->hot);
}

static gboolean
pair_equal (gconstpointer a, gconstpointer b)
{
  const PairKey *x = a, *y = b;

  return x->cold == y->cold && x->hot == y->hot;
}

/* is_cold_hot_plan_compatible: the spatial vector is the same (the walk
 * is on the hot plan's), and every cold factor is a multiple of the hot
 * factor of the same (column, operand), columns as the quirk placed
 * them. */
static gboolean
is_multiple_of (const PlanSearch *s, const ElkPlan *cold,
                const ElkPlan *hot)
{
  for (guint d = 0; d < s->n_dims; d++)
    for (guint v = 0; v < s->n_operands; v++)
      if (cold->temporal[d][v] % hot->temporal[d][v] != 0)
        return FALSE;
  return TRUE;
}

/* find_best_cold_hot_config, turned inside out: instead of looping over
 * (cold size, hot size) pairs and then over their plans, every cold plan
 * of the spatial vector meets every hot candidate of it once.  The
 * artifact visits spatial vectors in enumeration order, then cold plans,
 * then hot plans in list order, and replaces the best only when strictly
 * better; visiting in the same order with the same rule keeps its
 * choice on ties. */
static void
artifact_pass2_leaf (PlanSearch *s,
                     const PlanDimCand *const *chosen,
                     gpointer data)
{
  ArtifactPass2 *p = data;
  PlanEval e;
  ElkPlan cold;
  gboolean filled = FALSE;

  /* A cold candidate only has to fit as a preload state, not execute:
   * the artifact filters cold candidates by their cold size alone. */
  elk__plan_search_eval (s, chosen, &e, FALSE);
  if (e.cold > s->usable)
    return;

  for (guint i = 0; i < p->n_hot; i++)
    {
      const Record *h = p->hot[i];
      PairKey key = { e.cold, h->hot };
      gpointer found;
      ColdEntry *c;
      double warm, noc, score;

      if (e.cold > h->hot)
        continue;
      if (!filled)
        {
          elk__plan_search_fill (s, chosen, &e, &cold);
          filled = TRUE;
        }
      if (!is_multiple_of (s, &cold, &h->plan))
        continue;
      warm = elk__plan_search_warmup (s, &cold, &h->plan, &noc);
      score = h->cycles + warm;
      found = g_hash_table_lookup (p->by_pair, &key);
      if (found != NULL)
        {
          c = &g_array_index (p->entries, ColdEntry,
                              GPOINTER_TO_UINT (found) - 1);
          if (!(score < c->score))
            continue;
        }
      else
        {
          PairKey *stored = g_new (PairKey, 1);
          *stored = key;
          g_array_set_size (p->entries, p->entries->len + 1);
          g_hash_table_insert (p->by_pair, stored,
                               GUINT_TO_POINTER (p->entries->len));
          c = &g_array_index (p->entries, ColdEntry, p->entries->len - 1);
        }
      c->cold = e.cold;
      c->hot_index = p->hot_pos[i];
      c->score = score;
      c->warm_cycles = warm;
      c->warm_noc = noc;
      c->plan = cold;
      c->hot = h->hot;
      c->hot_plan = &h->plan;
    }
}

typedef struct
{
  guint64 seq;
  guint pos;
} HotRef;

static gint
hot_ref_compare (gconstpointer a, gconstpointer b)
{
  const HotRef *x = a, *y = b;

  if (x->seq != y->seq)
    return x->seq < y->seq ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Builds the artifact's cold-hot entries into @entries from its list
 * @list (indices into the sorted @records): the spatial vectors of the
 * list are walked once each, in enumeration order. */
static void
artifact_pass2 (PlanSearch *s,
                const GArray *records,
                const GArray *list,
                GArray *entries)
{
  HotRef *refs = g_new (HotRef, MAX (list->len, 1u));
  const Record **hot = g_new (const Record *, MAX (list->len, 1u));
  guint *pos = g_new (guint, MAX (list->len, 1u));
  GHashTable *by_pair = g_hash_table_new_full (pair_hash, pair_equal, g_free,
                                               NULL);

  for (guint i = 0; i < list->len; i++)
    {
      const Record *r = &g_array_index (records, Record,
                                        g_array_index (list, guint, i));
      refs[i].seq = r->seq;
      refs[i].pos = i;
    }
  qsort (refs, list->len, sizeof (HotRef), hot_ref_compare);

  for (guint i = 0; i < list->len;)
    {
      ArtifactPass2 p2 = { hot, pos, 0, entries, by_pair };
      guint j = i;

      for (; j < list->len && refs[j].seq == refs[i].seq; j++)
        {
          pos[p2.n_hot] = refs[j].pos;
          hot[p2.n_hot++] = &g_array_index (
            records, Record, g_array_index (list, guint, refs[j].pos));
        }
      s->leaf = artifact_pass2_leaf;
      s->leaf_data = &p2;
      elk__plan_search_set_spatial (s, hot[0]->plan.spatial);
      elk__plan_search_build_cands (s, NULL);
      elk__plan_search_temporal (s);
      i = j;
    }

  g_hash_table_unref (by_pair);
  g_free (pos);
  g_free (hot);
  g_free (refs);
}

static gint
cold_entry_compare (gconstpointer a, gconstpointer b)
{
  const ColdEntry *x = a, *y = b;

  if (x->cold != y->cold)
    return x->cold < y->cold ? -1 : 1;
  if (x->hot_index != y->hot_index)
    return x->hot_index < y->hot_index ? -1 : 1;
  return 0;
}

/* Plans are identified by spatial vector and temporal matrix; the rest
 * follows from them. */
static guint
plan_hash (gconstpointer key)
{
  const ElkPlan *p = key;
  const guint8 *bytes = (const guint8 *) p->spatial;
  gsize n = sizeof (p->spatial) + sizeof (p->temporal);
  guint h = 2166136261u;

  G_STATIC_ASSERT (G_STRUCT_OFFSET (ElkPlan, temporal)
                   == G_STRUCT_OFFSET (ElkPlan, spatial)
                        + sizeof (((ElkPlan *) 0)->spatial));
  for (gsize i = 0; i < n; i++)
    h = (h ^ bytes[i]) * 16777619u;
  return h;
}

static gboolean
plan_equal (gconstpointer a, gconstpointer b)
{
  const ElkPlan *x = a, *y = b;

  return memcmp (x->spatial, y->spatial, sizeof (x->spatial)) == 0
         && memcmp (x->temporal, y->temporal, sizeof (x->temporal)) == 0;
}

void
elk__plan_table_clear (ElkPlanTable *table)
{
  g_free (table->plans);
  g_free (table->hot_front);
  g_free (table->cold_hot);
  memset (table, 0, sizeof (ElkPlanTable));
}

/**
 * elk__plan_build_table:
 * @artifact_order: reproduce the artifact's quirks (validation only)
 *
 * Builds the table of @op on @spec.  Fails with
 * %ELK_SCHEDULE_ERROR_DOES_NOT_FIT when no plan fits the usable SRAM.
 */
gboolean
elk__plan_build_table (const ElkGraph *graph,
                       const ElkOp *op,
                       const ElkChipSpec *spec,
                       const ElkPlanOptions *options,
                       gboolean artifact_order,
                       ElkPlanTable *table,
                       GError **error)
{
  return elk__plan_build_table_stats (graph, op, spec, options,
                                      artifact_order, table, NULL, NULL,
                                      NULL, error);
}

/* The same, also returning the number of spatial vectors searched, the
 * number of plans of pass 1 (the whole plan space within the floors) and
 * the length of the artifact's "Pareto" list. */
gboolean
elk__plan_build_table_stats (const ElkGraph *graph,
                             const ElkOp *op,
                             const ElkChipSpec *spec,
                             const ElkPlanOptions *options,
                             gboolean artifact_order,
                             ElkPlanTable *table,
                             guint64 *n_spatial,
                             guint64 *n_pass1,
                             guint *n_artifact_front,
                             GError **error)
{
  PlanSearch *s = elk__plan_search_new (graph, op, spec, options);
  Pass1 p1 = { .min_hot = G_MAXUINT64 };
  GArray *entries;
  GArray *artifact_list = NULL;
  GHashTable *index;
  guint n_plans;
  guint64 enumerated;

  memset (table, 0, sizeof (ElkPlanTable));
  s->artifact_order = artifact_order;
  if (n_artifact_front != NULL || artifact_order)
    {
      /* Sizes are keys as pointers: hot sizes are at most the usable
       * SRAM per core, far below 2^32 on every chip elk models. */
      p1.records = g_array_new (FALSE, FALSE, sizeof (Record));
      p1.best_by_size = g_hash_table_new_full (g_direct_hash, g_direct_equal,
                                               NULL, g_free);
      p1.record_plans = artifact_order;
    }

  s->leaf = pass1_leaf;
  s->leaf_data = &p1;
  elk__plan_search_spatial (s);
  enumerated = s->n_leaves;
  if (n_spatial != NULL)
    *n_spatial = s->n_spatial;
  if (n_pass1 != NULL)
    *n_pass1 = enumerated;
  if (p1.records != NULL)
    {
      artifact_list = artifact_front (p1.records);
      if (n_artifact_front != NULL)
        *n_artifact_front = artifact_list->len;
      g_clear_pointer (&p1.best_by_size, g_hash_table_unref);
    }

  if (p1.n_front == 0)
    {
      g_autofree char *what = elk__plan_describe_op (op);
      if (enumerated == 0)
        g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
                     "operator %s does not fit chip '%s': no partition plan "
                     "over its %u cores meets the utilisation floor %.3f and "
                     "the padding floor %.3f", what, spec->name, spec->cores,
                     s->util_floor, s->pad_floor);
      else
        g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
                     "operator %s does not fit chip '%s': the smallest "
                     "per-core footprint of its %" G_GUINT64_FORMAT " plans "
                     "on %u cores is %" G_GUINT64_FORMAT " bytes, but only %"
                     G_GUINT64_FORMAT " bytes of SRAM per core are usable",
                     what, spec->name, enumerated, spec->cores, p1.min_hot,
                     s->usable);
      g_free (p1.front);
      g_clear_pointer (&p1.records, g_array_unref);
      g_clear_pointer (&artifact_list, g_array_unref);
      elk__plan_search_free (s);
      return FALSE;
    }

  /* Pass 2: the cold plans of every hot plan.  The artifact's columns no
   * longer belong to their dimensions, so candidates cannot be restricted
   * to multiples per dimension up front; its pass walks whole spatial
   * vectors and tests each pair, as the artifact does. */
  entries = g_array_new (FALSE, TRUE, sizeof (ColdEntry));
  if (artifact_order)
    artifact_pass2 (s, p1.records, artifact_list, entries);
  for (guint h = 0; h < p1.n_front && !artifact_order; h++)
    {
      Pass2 p2 = { &p1.front[h].plan, p1.front[h].cycles, h, entries,
                   entries->len };

      s->leaf = pass2_leaf;
      s->leaf_data = &p2;
      elk__plan_search_set_spatial (s, p1.front[h].plan.spatial);
      elk__plan_search_build_cands (s, &p1.front[h].plan);
      elk__plan_search_temporal (s);
    }
  enumerated = s->n_leaves;
  g_array_sort (entries, cold_entry_compare);

  /* The plans: the hot front first, in ascending size, then every cold
   * plan not already there, in cold-hot table order (the artifact's
   * slower same-size hot plans, which are not on the front, each just
   * before its first cold partner). */
  table->op = op->id;
  table->n_hot = p1.n_front;
  table->hot_front = g_new (guint32, p1.n_front);
  table->plans = g_new (ElkPlan, p1.n_front + 2 * entries->len);
  index = g_hash_table_new (plan_hash, plan_equal);
  for (guint h = 0; h < p1.n_front; h++)
    {
      table->plans[h] = p1.front[h].plan;
      table->hot_front[h] = h;
      g_hash_table_insert (index, &table->plans[h], GUINT_TO_POINTER (h + 1));
    }
  n_plans = p1.n_front;

  table->n_cold_hot = entries->len;
  table->cold_hot = g_new (ElkColdHot, entries->len);
  for (guint i = 0; i < entries->len; i++)
    {
      ColdEntry *c = &g_array_index (entries, ColdEntry, i);
      ElkColdHot *ch = &table->cold_hot[i];
      guint hot_index = c->hot_index;
      guint cold_index;

      if (artifact_order)
        {
          hot_index = GPOINTER_TO_UINT (g_hash_table_lookup (index,
                                                             c->hot_plan));
          if (hot_index == 0)
            {
              table->plans[n_plans] = *c->hot_plan;
              g_hash_table_insert (index, &table->plans[n_plans],
                                   GUINT_TO_POINTER (n_plans + 1));
              hot_index = ++n_plans;
            }
          hot_index--;
        }
      cold_index = GPOINTER_TO_UINT (g_hash_table_lookup (index, &c->plan));
      if (cold_index == 0)
        {
          table->plans[n_plans] = c->plan;
          g_hash_table_insert (index, &table->plans[n_plans],
                               GUINT_TO_POINTER (n_plans + 1));
          cold_index = ++n_plans;
        }
      ch->cold_bytes = c->cold;
      ch->hot_bytes = c->hot;
      ch->hot_plan = hot_index;
      ch->cold_plan = cold_index - 1;
      ch->exec_s = table->plans[hot_index].time_s;
      ch->warmup_s = c->warm_cycles / spec->clock_hz;
      ch->warmup_noc_bytes = c->warm_noc;
    }
  g_hash_table_unref (index);
  table->n_plans = n_plans;
  table->plans = g_renew (ElkPlan, table->plans, n_plans);

  table->hbm_bytes = elk_op_get_hbm_bytes (graph, op);
  table->min_cold_bytes = (table->hbm_bytes + spec->cores - 1) / spec->cores;
  table->n_enumerated = enumerated;

  g_array_unref (entries);
  g_free (p1.front);
  g_clear_pointer (&p1.records, g_array_unref);
  g_clear_pointer (&artifact_list, g_array_unref);
  elk__plan_search_free (s);
  return TRUE;
}
