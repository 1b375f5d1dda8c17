/* elk-alloc-core.c: the SRAM allocation algorithms of elk-paper.md §3.6,
 * behind the four features of elk-allocators.c.
 *
 * Every allocator sees the same problem: the executing operator E takes
 * its execute-state (hot) footprint, each preloaded operator Qj its
 * preload-state (cold) footprint, and the sum must fit the per-core budget.
 * Each operator offers a list of options (bytes, time):
 *
 *  - E: every cold-hot entry, at hot_bytes, costing exec + warm-up + the
 *    NoC penalty of broadcasting its cold layout;
 *  - a fixed Qj: the entries sharing its fixed hot plan, at cold_bytes,
 *    costing their warm-up (shrinking the preload state adds data
 *    distribution to Qj's own execution);
 *  - a free Qj: every entry, at cold_bytes, costing exec + warm-up.
 *
 * Each list is reduced to its Pareto front (ascending bytes, strictly
 * decreasing time).  The greedy loop of the paper starts every operator at
 * its fastest option and shrinks, one step at a time, the operator with the
 * most bytes saved per second added until the sum fits.  The exhaustive
 * search minimises the same objective exactly and exists to measure the
 * greedy loop's gap in tests.  All functions are pure: no state outside
 * their arguments, so one allocator object serves many threads.
 */
#include "config.h"

#include <math.h>
#include "elk-alloc-core.h"

typedef struct
{
  guint64 bytes;
  double time;
  guint32 entry;
} Option;

static gint
option_cmp (gconstpointer a, gconstpointer b)
{
  const Option *x = a, *y = b;

  if (x->bytes != y->bytes)
    return x->bytes < y->bytes ? -1 : 1;
  if (x->time != y->time)
    return x->time < y->time ? -1 : 1;
  return x->entry < y->entry ? -1 : (x->entry > y->entry);
}

/* Sorts @opts and keeps the Pareto front in place; returns its length. */
static guint
pareto (Option *opts, guint n)
{
  guint kept = 0;

  qsort (opts, n, sizeof (Option), (int (*) (const void *, const void *))
         option_cmp);
  for (guint k = 0; k < n; k++)
    if (kept == 0 || opts[k].time < opts[kept - 1].time)
      opts[kept++] = opts[k];
  return kept;
}

static guint
exec_options (const AllocProblem *pb, Option *opts)
{
  const ElkPlanTable *t = pb->exec;
  guint n = 0;

  for (guint e = 0; e < t->n_cold_hot; e++)
    {
      const ElkColdHot *ch = &t->cold_hot[e];
      if (pb->exec_is_fixed && e != pb->exec_fixed)
        continue;
      if (ch->hot_bytes > pb->budget || ch->cold_bytes > pb->budget)
        continue;
      opts[n++] = (Option) {
        .bytes = ch->hot_bytes,
        .time = ch->exec_s + ch->warmup_s
                + pb->penalty_per_byte * (double) ch->cold_bytes,
        .entry = e,
      };
    }
  return pareto (opts, n);
}

/* Options of preloaded operator j.  *base receives the time already paid
 * by its fixed entry, so that costs count only what this allocation adds. */
static guint
pre_options (const AllocProblem *pb, guint j, Option *opts, double *base)
{
  const ElkPlanTable *t = pb->pre[j];
  gint32 fixed = pb->pre_fixed != NULL ? pb->pre_fixed[j] : -1;
  guint n = 0;

  *base = 0;
  if (fixed >= 0)
    *base = t->cold_hot[fixed].warmup_s;
  for (guint e = 0; e < t->n_cold_hot; e++)
    {
      const ElkColdHot *ch = &t->cold_hot[e];
      if (fixed >= 0 && ch->hot_plan != t->cold_hot[fixed].hot_plan)
        continue;
      if (ch->cold_bytes > pb->budget)
        continue;
      opts[n++] = (Option) {
        .bytes = ch->cold_bytes,
        .time = fixed >= 0 ? ch->warmup_s : ch->exec_s + ch->warmup_s,
        .entry = e,
      };
    }
  return pareto (opts, n);
}

/* The option lists of all operators, E first. */
typedef struct
{
  guint n_obj;
  Option **opts;
  guint *n_opts;
  double *base;
} Lists;

static gboolean
lists_build (const AllocProblem *pb, Lists *l)
{
  l->n_obj = pb->n_pre + 1;
  l->opts = g_new0 (Option *, l->n_obj);
  l->n_opts = g_new0 (guint, l->n_obj);
  l->base = g_new0 (double, l->n_obj);
  l->opts[0] = g_new (Option, MAX (pb->exec->n_cold_hot, 1));
  l->n_opts[0] = exec_options (pb, l->opts[0]);
  if (l->n_opts[0] == 0)
    return FALSE;
  for (guint j = 0; j < pb->n_pre; j++)
    {
      l->opts[j + 1] = g_new (Option, MAX (pb->pre[j]->n_cold_hot, 1));
      l->n_opts[j + 1] = pre_options (pb, j, l->opts[j + 1], &l->base[j + 1]);
      if (l->n_opts[j + 1] == 0)
        return FALSE;
    }
  return TRUE;
}

static void
lists_clear (Lists *l)
{
  for (guint k = 0; k < l->n_obj; k++)
    g_free (l->opts[k]);
  g_free (l->opts);
  g_free (l->n_opts);
  g_free (l->base);
}

static void
fill_choice (const AllocProblem *pb,
             const Lists *l,
             const guint *pick,
             AllocChoice *choice)
{
  const Option *eo = &l->opts[0][pick[0]];
  const ElkColdHot *ch = &pb->exec->cold_hot[eo->entry];

  choice->exec_entry = eo->entry;
  choice->exec_s = ch->exec_s;
  choice->warmup_s = ch->warmup_s;
  choice->penalty_s = pb->penalty_per_byte * (double) ch->cold_bytes;
  choice->extra_warmup_s = 0;
  choice->bytes = eo->bytes;
  for (guint j = 0; j < pb->n_pre; j++)
    {
      const Option *o = &l->opts[j + 1][pick[j + 1]];
      choice->pre_entries[j] = o->entry;
      choice->extra_warmup_s += o->time - l->base[j + 1];
      choice->bytes += o->bytes;
    }
  choice->cost_s = choice->exec_s + choice->warmup_s + choice->penalty_s
                   + choice->extra_warmup_s;
}

/**
 * elk__alloc_greedy:
 *
 * The paper's loop (§3.6): every operator starts at its fastest option;
 * while the sum exceeds the budget, the operator whose next smaller option
 * saves the most bytes per second of time added moves to it.  Ties go to
 * the operator listed first (E, then Q1..Qp), which keeps results
 * deterministic.  O(total options) steps.
 *
 * Returns: %FALSE when even the smallest options do not fit.
 */
gboolean
elk__alloc_greedy (const AllocProblem *pb, AllocChoice *choice)
{
  Lists l = { 0 };
  g_autofree guint *pick = NULL;
  guint64 total = 0;
  gboolean ok = FALSE;

  if (!lists_build (pb, &l))
    goto out;
  pick = g_new (guint, l.n_obj);
  for (guint k = 0; k < l.n_obj; k++)
    {
      pick[k] = l.n_opts[k] - 1;
      total += l.opts[k][pick[k]].bytes;
    }
  while (total > pb->budget)
    {
      gint best = -1;
      double best_ratio = -1;

      for (guint k = 0; k < l.n_obj; k++)
        {
          const Option *cur, *nxt;
          double saved, added, ratio;

          if (pick[k] == 0)
            continue;
          cur = &l.opts[k][pick[k]];
          nxt = &l.opts[k][pick[k] - 1];
          saved = (double) (cur->bytes - nxt->bytes);
          added = nxt->time - cur->time;
          ratio = added <= 0 ? INFINITY : saved / added;
          if (ratio > best_ratio)
            {
              best_ratio = ratio;
              best = (gint) k;
            }
        }
      if (best < 0)
        goto out;
      total -= l.opts[best][pick[best]].bytes
               - l.opts[best][pick[best] - 1].bytes;
      pick[best]--;
    }
  fill_choice (pb, &l, pick, choice);
  ok = TRUE;
out:
  lists_clear (&l);
  return ok;
}

/* The entry a preloaded operator keeps when the allocator does not move
 * it: its fixed entry, or its smallest preload state when free. */
static guint32
pre_default_entry (const AllocProblem *pb, guint j)
{
  const ElkPlanTable *t = pb->pre[j];
  gint32 fixed = pb->pre_fixed != NULL ? pb->pre_fixed[j] : -1;
  guint32 best = 0;

  if (fixed >= 0)
    return (guint32) fixed;
  for (guint e = 1; e < t->n_cold_hot; e++)
    {
      const ElkColdHot *a = &t->cold_hot[e], *b = &t->cold_hot[best];
      if (a->cold_bytes < b->cold_bytes
          || (a->cold_bytes == b->cold_bytes
              && a->exec_s + a->warmup_s < b->exec_s + b->warmup_s))
        best = e;
    }
  return best;
}

/* Picks E's best entry within @exec_budget with the preloaded operators at
 * their default entries. */
static gboolean
alloc_with_exec_budget (const AllocProblem *pb,
                        guint64 exec_budget,
                        AllocChoice *choice)
{
  const ElkPlanTable *t = pb->exec;
  gint best = -1;
  double best_cost = INFINITY;
  guint64 pre_bytes = 0;

  choice->extra_warmup_s = 0;
  for (guint j = 0; j < pb->n_pre; j++)
    {
      choice->pre_entries[j] = pre_default_entry (pb, j);
      pre_bytes += pb->pre[j]->cold_hot[choice->pre_entries[j]].cold_bytes;
    }
  if (pre_bytes > pb->budget)
    return FALSE;
  exec_budget = MIN (exec_budget, pb->budget - pre_bytes);
  for (guint e = 0; e < t->n_cold_hot; e++)
    {
      const ElkColdHot *ch = &t->cold_hot[e];
      double cost;

      if (pb->exec_is_fixed && e != pb->exec_fixed)
        continue;
      if (ch->hot_bytes > exec_budget || ch->cold_bytes > exec_budget)
        continue;
      cost = ch->exec_s + ch->warmup_s
             + pb->penalty_per_byte * (double) ch->cold_bytes;
      if (cost < best_cost)
        {
          best_cost = cost;
          best = (gint) e;
        }
    }
  if (best < 0)
    return FALSE;
  choice->exec_entry = (guint32) best;
  choice->exec_s = t->cold_hot[best].exec_s;
  choice->warmup_s = t->cold_hot[best].warmup_s;
  choice->penalty_s = best_cost - choice->exec_s - choice->warmup_s;
  choice->cost_s = best_cost;
  choice->bytes = pre_bytes + t->cold_hot[best].hot_bytes;
  return TRUE;
}

/**
 * elk__alloc_reservation:
 *
 * The artifact's allocator (search_optimal_global_config_icbm, §3.6 "What
 * the released code actually does"): reserve @reserve_factor times the
 * preloaded operators' preload states, give E the rest, and take E's
 * cold-hot entry with the smallest time + NoC penalty.  Unlike the
 * artifact, the reservation counts the preload states the preloaded
 * operators really hold (their fixed entries), not their minimum ones, so
 * the allocation never overcommits SRAM.
 */
gboolean
elk__alloc_reservation (const AllocProblem *pb,
                        double reserve_factor,
                        AllocChoice *choice)
{
  guint64 reserve = 0;
  double r = 0;

  for (guint j = 0; j < pb->n_pre; j++)
    r += (double) pb->pre[j]->cold_hot[pre_default_entry (pb, j)].cold_bytes;
  r *= reserve_factor;
  if (r > (double) pb->budget)
    return FALSE;
  reserve = (guint64) ceil (r);
  return alloc_with_exec_budget (pb, pb->budget - reserve, choice);
}

/**
 * elk__alloc_fixed_split:
 *
 * A fixed fraction of the budget is execution space, the rest preload
 * space: the SambaNova-style split the Static baseline sweeps, as an
 * allocator so that any scheduler can be run with it.
 */
gboolean
elk__alloc_fixed_split (const AllocProblem *pb,
                        double exec_fraction,
                        AllocChoice *choice)
{
  guint64 exec_budget = (guint64) floor (exec_fraction * (double) pb->budget);
  guint64 pre_bytes = 0;

  for (guint j = 0; j < pb->n_pre; j++)
    pre_bytes += pb->pre[j]->cold_hot[pre_default_entry (pb, j)].cold_bytes;
  if (pre_bytes > pb->budget - exec_budget)
    return FALSE;
  return alloc_with_exec_budget (pb, exec_budget, choice);
}

typedef struct
{
  const Lists *l;
  guint64 budget;
  guint64 *min_suffix;
  guint *pick;
  guint *best_pick;
  double best_cost;
  guint64 visited;
} ExactState;

static void
exact_dfs (ExactState *s, guint k, guint64 bytes, double cost)
{
  if (k == s->l->n_obj)
    {
      if (cost < s->best_cost)
        {
          s->best_cost = cost;
          memcpy (s->best_pick, s->pick, sizeof (guint) * s->l->n_obj);
        }
      return;
    }
  for (guint o = 0; o < s->l->n_opts[k]; o++)
    {
      const Option *opt = &s->l->opts[k][o];
      s->visited++;
      if (bytes + opt->bytes + s->min_suffix[k + 1] > s->budget)
        break; /* options ascend in bytes */
      if (cost + opt->time - s->l->base[k] >= s->best_cost)
        continue;
      s->pick[k] = o;
      exact_dfs (s, k + 1, bytes + opt->bytes, cost + opt->time - s->l->base[k]);
    }
}

/**
 * elk__alloc_exact:
 *
 * Exhaustive branch and bound over the Pareto options, minimising the same
 * objective as the greedy loop.  Meant for small problems (tests measure
 * the greedy gap with it); a problem with more than @max_combinations
 * option combinations is refused with an error rather than run for hours.
 */
gboolean
elk__alloc_exact (const AllocProblem *pb,
                  guint64 max_combinations,
                  AllocChoice *choice,
                  GError **error)
{
  Lists l = { 0 };
  ExactState s = { 0 };
  double combos = 1;
  gboolean ok = FALSE;

  if (!lists_build (pb, &l))
    goto out;
  for (guint k = 0; k < l.n_obj; k++)
    combos *= l.n_opts[k];
  if (combos > (double) max_combinations)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "exact allocator: %u operators with %.3g option "
                   "combinations exceed max-combinations (%" G_GUINT64_FORMAT
                   "); use it only for small preload numbers", l.n_obj,
                   combos, max_combinations);
      goto out;
    }
  s.l = &l;
  s.budget = pb->budget;
  s.min_suffix = g_new0 (guint64, l.n_obj + 1);
  for (gint k = (gint) l.n_obj - 1; k >= 0; k--)
    s.min_suffix[k] = s.min_suffix[k + 1] + l.opts[k][0].bytes;
  s.pick = g_new0 (guint, l.n_obj);
  s.best_pick = g_new0 (guint, l.n_obj);
  s.best_cost = INFINITY;
  exact_dfs (&s, 0, 0, 0);
  if (s.best_cost < INFINITY)
    {
      fill_choice (pb, &l, s.best_pick, choice);
      ok = TRUE;
    }
  g_free (s.min_suffix);
  g_free (s.pick);
  g_free (s.best_pick);
out:
  lists_clear (&l);
  return ok;
}

void
elk__alloc_problem_from_request (AllocProblem *problem,
                                 const ElkAllocRequest *request,
                                 const ElkPlanTable **tables,
                                 double penalty_weight)
{
  const ElkChipSpec *spec = elk_plan_set_get_spec (request->plans);

  for (guint j = 0; j < request->n_preloaded; j++)
    tables[j] = elk_plan_set_get_table (request->plans,
                                        request->preloaded[j]);
  *problem = (AllocProblem){
    .exec = elk_plan_set_get_table (request->plans, request->exec_op),
    .n_pre = request->n_preloaded,
    .pre = tables,
    .pre_fixed = request->preloaded_fixed,
    .budget = request->sram_budget,
    /* The artifact charges an all-to-all broadcast of E's cold layout at
     * half the per-core port rate; a contention-free bound (Ideal) is
     * charged nothing. */
    .penalty_per_byte = request->contention == ELK_ALLOC_CONTENTION_SHARED
                            ? penalty_weight / spec->link_bw
                            : 0,
    .exec_is_fixed = request->exec_fixed,
    .exec_fixed = request->exec_entry,
  };
}

void
elk__alloc_choice_to_result (const AllocChoice *choice,
                             guint n_pre,
                             ElkAllocResult *result)
{
  result->exec_entry = choice->exec_entry;
  for (guint j = 0; j < n_pre; j++)
    result->preload_entries[j] = choice->pre_entries[j];
  result->exec_s = choice->exec_s;
  result->warmup_s = choice->warmup_s + choice->extra_warmup_s;
  result->penalty_s = choice->penalty_s;
  result->cost_s = choice->cost_s;
  result->bytes = choice->bytes;
}
