/* elk-engine.c: two-level inductive (backward) scheduling, elk-paper.md §3.5.
 *
 * The schedule is built from the last operator back to the first on a time
 * axis where the last execution ends at 0.  For operator i the engine lists
 * candidate preload numbers: preloading the next k operators (in preload
 * order) while i runs means i must end before the (k+1)-th of those loads
 * starts (Theorem 4.2: T_e-exe[i] = min(T_s-exe[i+1], T_s-pre[i+p+1])).  For
 * each candidate the design's policy picks the SRAM split (level two), the
 * execution's inter-core traffic is fitted into the NoC time the
 * overlapping loads leave idle (§3.8), and the policy's depth rule picks
 * the winner (level one; for Elk the latest start, i.e. the shortest
 * current-to-end time).  Loads are then placed as late as possible, one
 * after another in preload order.
 *
 * The designs of §5.3 differ only in their ElkEnginePolicy (elk-compile.h):
 * how a candidate's entry is chosen, how deep to preload, whether
 * contention is fitted and which preload state preloaded operators hold.
 * The shipped policies live with their schedulers in plugins/schedulers.
 */
#include "config.h"

#undef G_LOG_DOMAIN
#define G_LOG_DOMAIN "elk-compiler"

#include <math.h>
#include <string.h>
#include "elk-compile-private.h"

/**
 * elk_engine_table_min_hot:
 * @table: a plan table
 *
 * Returns: the smallest execute-state footprint of @table's cold-hot
 *   entries, per core.
 */
guint64
elk_engine_table_min_hot (const ElkPlanTable *table)
{
  guint64 best = G_MAXUINT64;

  for (guint e = 0; e < table->n_cold_hot; e++)
    best = MIN (best, table->cold_hot[e].hot_bytes);
  return best;
}

/* The entry of @t with the smallest preload state (the first of them). */
guint32
elk__table_min_cold_entry (const ElkPlanTable *t)
{
  guint32 best = 0;

  for (guint e = 1; e < t->n_cold_hot; e++)
    if (t->cold_hot[e].cold_bytes < t->cold_hot[best].cold_bytes)
      best = e;
  return best;
}

/* For G_MESSAGES_DEBUG=elk-compiler: how far the plan tables let a preload
 * state grow past the unreplicated shard, and how much faster the fastest
 * execute plan is than the fastest one compatible with the smallest
 * preload state (what Basic and Static trade). */
static void
debug_tables (const ElkEngine *engine)
{
  double ratio = 0, speed = 0, hbm = 0;

  for (guint i = 0; i < engine->n_ops; i++)
    {
      const ElkPlanTable *t = engine->tables[i];
      guint64 max_cold = 0;
      double fast = INFINITY, fast_min = INFINITY;

      if (t->hbm_bytes == 0 || t->min_cold_bytes == 0)
        continue;
      for (guint e = 0; e < t->n_cold_hot; e++)
        {
          const ElkColdHot *ch = &t->cold_hot[e];
          max_cold = MAX (max_cold, ch->cold_bytes);
          fast = MIN (fast, ch->exec_s + ch->warmup_s);
          if (ch->cold_bytes == t->cold_hot[0].cold_bytes)
            fast_min = MIN (fast_min, ch->exec_s + ch->warmup_s);
        }
      ratio += (double) t->hbm_bytes * max_cold / t->min_cold_bytes;
      speed += (double) t->hbm_bytes * fast_min / fast;
      hbm += (double) t->hbm_bytes;
    }
  if (hbm > 0)
    g_debug ("tables: HBM-weighted mean of largest/smallest preload state "
             "%.2f; of fastest time at the smallest preload state / "
             "fastest time %.2f", ratio / hbm, speed / hbm);
}

/* Checks that operator i fits the chip on its own; sets @error if not. */
static gboolean
check_fits (const ElkEngine *engine, guint i, GError **error)
{
  const ElkPlanTable *t = engine->tables[i];
  const ElkOp *op;
  guint64 min_hot = G_MAXUINT64, min_cold = G_MAXUINT64;

  for (guint e = 0; t != NULL && e < t->n_cold_hot; e++)
    {
      const ElkColdHot *ch = &t->cold_hot[e];
      min_hot = MIN (min_hot, ch->hot_bytes);
      min_cold = MIN (min_cold, ch->cold_bytes);
      if (ch->hot_bytes <= engine->usable && ch->cold_bytes <= engine->usable)
        return TRUE;
    }
  op = elk_graph_get_op (engine->graph, i);
  if (t == NULL || t->n_cold_hot == 0)
    g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
                 "operator '%s' (#%u) fits no plan on chip '%s': its plan "
                 "table is empty", op->name, i, engine->spec->name);
  else
    g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
                 "operator '%s' (#%u) does not fit chip '%s': its smallest "
                 "execute-state plan needs %" G_GUINT64_FORMAT " B per core "
                 "and its smallest preload state %" G_GUINT64_FORMAT " B, "
                 "but only %" G_GUINT64_FORMAT " B of the %" G_GUINT64_FORMAT
                 " B SRAM per core are usable", op->name, i,
                 engine->spec->name, min_hot, min_cold, engine->usable,
                 engine->spec->sram_per_core);
  return FALSE;
}

/**
 * elk_engine_new:
 * @plans: (transfer none): the plan tables of the graph to schedule; must
 *   outlive the engine
 * @allocator: (transfer none) (nullable): the experiment's allocator, for
 *   the policies that consult one; must outlive the engine
 * @error: return location for a #GError
 *
 * Prepares the engine for @plans: checks that every operator fits the chip
 * on its own and sets the per-layer preload cap (the artifact never
 * preloads more than one layer's worth of operators).
 *
 * Returns: (transfer full) (nullable): the engine, or %NULL with @error set
 */
ElkEngine *
elk_engine_new (const ElkPlanSet *plans, ElkAllocator *allocator,
                GError **error)
{
  ElkGraph *graph = elk_plan_set_get_graph (plans);
  const ElkChipSpec *spec = elk_plan_set_get_spec (plans);
  guint n = elk_graph_get_n_ops (graph);
  guint n_layers = elk_graph_get_n_layers (graph);
  ElkEngine *engine;

  if (n == 0)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "graph '%s' has no operators to schedule",
                   elk_graph_get_name (graph));
      return NULL;
    }
  engine = g_new0 (ElkEngine, 1);
  engine->plans = plans;
  engine->graph = graph;
  engine->spec = spec;
  engine->allocator = allocator;
  engine->n_ops = n;
  engine->usable = elk_chip_spec_get_usable_sram (spec);
  engine->noc_demand = elk_plan_set_get_options (plans)->noc_demand;
  /* The artifact never preloads more than one layer's worth of operators
   * (elk-paper.md §3.5, "Artifact specifics"). */
  engine->max_preload = n_layers > 0 ? MAX (n / n_layers, 1u) : n;
  engine->tables = g_new (const ElkPlanTable *, n);
  for (guint i = 0; i < n; i++)
    engine->tables[i] = elk_plan_set_get_table (plans, i);
  for (guint i = 0; i < n; i++)
    if (!check_fits (engine, i, error))
      {
        elk_engine_free (engine);
        return NULL;
      }
  /* Layout-aware entry choice, when the set carries a model that prices
   * re-layout (elk-layout.c; layout=aware on a chip that prices it). */
  if (elk_plan_set_get_relayout_model (plans) != NULL)
    {
      engine->layout
          = elk__layout_new (engine, elk_plan_set_get_relayout_model (plans),
                             error);
      if (engine->layout == NULL)
        {
          elk_engine_free (engine);
          return NULL;
        }
    }
  debug_tables (engine);
  return engine;
}

/**
 * elk_engine_free:
 * @engine: (transfer full) (nullable): an engine
 */
void
elk_engine_free (ElkEngine *engine)
{
  if (engine == NULL)
    return;
  elk__layout_free (engine->layout);
  g_free (engine->tables);
  g_free (engine);
}

/**
 * elk_engine_get_n_ops:
 * @engine: an engine
 *
 * Returns: the number of operators.
 */
guint
elk_engine_get_n_ops (const ElkEngine *engine)
{
  return engine->n_ops;
}

/**
 * elk_engine_get_graph:
 * @engine: an engine
 *
 * Returns: (transfer none): the graph.
 */
ElkGraph *
elk_engine_get_graph (const ElkEngine *engine)
{
  return engine->graph;
}

/**
 * elk_engine_get_plans:
 * @engine: an engine
 *
 * Returns: (transfer none): the plan set.
 */
const ElkPlanSet *
elk_engine_get_plans (const ElkEngine *engine)
{
  return engine->plans;
}

/**
 * elk_engine_get_allocator:
 * @engine: an engine
 *
 * Returns: (transfer none) (nullable): the allocator the engine was made with.
 */
ElkAllocator *
elk_engine_get_allocator (const ElkEngine *engine)
{
  return engine->allocator;
}

/**
 * elk_engine_get_table:
 * @engine: an engine
 * @op: an operator of the engine's graph
 *
 * Returns: (transfer none): operator @op's table.
 */
const ElkPlanTable *
elk_engine_get_table (const ElkEngine *engine, guint32 op)
{
  g_return_val_if_fail (op < engine->n_ops, NULL);
  return engine->tables[op];
}

/**
 * elk_engine_get_usable_sram:
 * @engine: an engine
 *
 * Returns: the usable SRAM per core, bytes.
 */
guint64
elk_engine_get_usable_sram (const ElkEngine *engine)
{
  return engine->usable;
}

/**
 * elk_engine_get_max_preload:
 * @engine: an engine
 *
 * Returns: the per-layer preload cap.
 */
guint
elk_engine_get_max_preload (const ElkEngine *engine)
{
  return engine->max_preload;
}

/**
 * elk_engine_result_init:
 * @result: (out caller-allocates): a result to prepare
 * @n_ops: the engine's number of operators
 */
void
elk_engine_result_init (ElkEngineResult *result, guint n_ops)
{
  result->n_ops = n_ops;
  result->ops = g_new0 (ElkEngineOp, n_ops);
  result->latency_s = INFINITY;
  result->feasible = FALSE;
}

/**
 * elk_engine_result_clear:
 * @result: a result made by elk_engine_result_init()
 */
void
elk_engine_result_clear (ElkEngineResult *result)
{
  g_clear_pointer (&result->ops, g_free);
}

/**
 * elk_engine_table_baseline_entry:
 * @table: a plan table
 * @budget: per-core bytes the execution may take
 * @largest: use the largest preload state whose execute plan fits
 *   instead of the smallest preload state
 *
 * How the artifact's baselines (baseline_cold_hot) pick an operator's
 * entry: the smallest preload state, or the largest one whose smallest
 * execute plan still fits; then the fastest execute plan within @budget
 * for that preload state.
 *
 * Returns: the cold-hot entry, or -1 when none fits
 */
gint
elk_engine_table_baseline_entry (const ElkPlanTable *t, guint64 budget,
                                 gboolean largest)
{
  guint64 cold = G_MAXUINT64;
  gint best = -1;

  if (largest)
    {
      gboolean found = FALSE;
      for (guint e = 0; e < t->n_cold_hot; e++)
        if (t->cold_hot[e].hot_bytes <= budget
            && t->cold_hot[e].cold_bytes <= budget
            && (!found || t->cold_hot[e].cold_bytes > cold))
          {
            cold = t->cold_hot[e].cold_bytes;
            found = TRUE;
          }
      if (!found)
        return -1;
    }
  else
    cold = t->cold_hot[elk__table_min_cold_entry (t)].cold_bytes;
  for (guint e = 0; e < t->n_cold_hot; e++)
    {
      const ElkColdHot *ch = &t->cold_hot[e];
      if (ch->cold_bytes != cold || ch->hot_bytes > budget)
        continue;
      if (best < 0
          || ch->exec_s + ch->warmup_s
               < t->cold_hot[best].exec_s + t->cold_hot[best].warmup_s)
        best = (gint) e;
    }
  return best;
}

/* ---------------------------------------------------------------------- */
/* One engine run                                                          */
/* ---------------------------------------------------------------------- */

/* Candidate c overlaps E with the preloads grp[1 .. len[c]). */
typedef struct
{
  guint len;
  double deadline;
} Candidate;

/* The state of one run: the scratch arrays, sized once, and the group of
 * the operator being scheduled. */
typedef struct
{
  const ElkEngine *engine;
  const guint32 *order;
  const ElkEngineParams *params;
  const ElkEnginePolicy *policy;
  ElkEngineOp *ops;
  guint window;
  gboolean abandon;
  guint placed_ptr;
  guint *pos;
  guint32 *grp;
  Candidate *cand;
  gint32 *qfixed;
  guint32 *qentries;
  guint32 *best_entries;
  /* The operator being scheduled. */
  guint g_len, n_unc, n_cand;
  double next_start;
} Run;

/* The best candidate found so far for one operator. */
typedef struct
{
  gint index;
  double start, deadline;
  guint32 entry;
  double exec_s, warmup_s, extra_s;
  guint len;
  gboolean sets_entries;
} Best;

static double
cold_of (const Run *run, guint32 j)
{
  const ElkPlanTable *t = run->engine->tables[j];

  if (t->hbm_bytes == 0)
    return 0;
  if (run->policy->preload_size == ELK_ENGINE_PRELOAD_SIZE_MINIMUM)
    return (double) t->min_cold_bytes;
  return (double) t->cold_hot[run->ops[j].entry].cold_bytes;
}

/* delay_exec variant (the artifact's delay_comp=True): E's inter-core
 * traffic may only use the NoC time the overlapping loads leave idle,
 * consumed from the deadline backwards, pro-rated for a load that extends
 * past the deadline.  Returns the latest start that satisfies this. */
static double
noc_start (const ElkEngineOp *ops, const guint32 *grp, guint first,
           guint len, double deadline, double shift)
{
  if (first >= len || shift <= 0)
    return INFINITY;
  for (guint idx = len; idx-- > first;)
    {
      const ElkEngineOp *l = &ops[grp[idx]];
      double dur = l->load_end - l->load_start;
      double remain = dur - l->load_noc_s;
      double avail, end;

      if (dur <= 0)
        continue;
      if (l->load_end > deadline)
        {
          avail = remain * MAX (deadline - l->load_start, 0) / dur;
          end = deadline;
        }
      else
        {
          avail = remain;
          end = l->load_end;
        }
      if (avail >= shift && avail > 0)
        return end - (end - l->load_start) * (shift / avail);
      shift -= avail;
    }
  return ops[grp[first]].load_start - shift;
}

/* !delay_exec variant (delay_comp=False): loads may use the NoC only while
 * E computes; load NoC work beyond E's compute time pushes the load that
 * overflows, and every load before it, earlier. */
static void
push_loads (ElkEngineOp *ops, const guint32 *order, guint placed_ptr,
            const guint *pos, const guint32 *grp, guint first, guint len,
            double start, double deadline, double comp)
{
  gint last = -1;
  double last_remain = 0;

  for (guint idx = len; idx-- > first;)
    {
      const ElkEngineOp *l = &ops[grp[idx]];
      double dur = l->load_end - l->load_start;
      double busy = l->load_noc_s, adj;

      if (dur <= 0)
        continue;
      adj = l->load_end > deadline
              ? busy * MAX (deadline - l->load_start, 0) / dur
              : busy;
      comp -= adj;
      if (comp <= 0)
        {
          last = (gint) idx;
          last_remain = busy > 0 ? -comp * dur / busy : 0;
          break;
        }
      if (l->load_start < start)
        break;
    }
  if (last >= 0)
    {
      guint32 j = grp[last];
      double new_start = MIN (ops[j].load_start, start - last_remain);
      double off = new_start - ops[j].load_start;

      for (guint q = placed_ptr; q <= pos[j]; q++)
        {
          ops[order[q]].load_start += off;
          ops[order[q]].load_end += off;
        }
    }
}

/* Lists operator i's group and candidates.  Operators after i whose loads
 * are not placed yet come before, in preload order, the load of an
 * operator before i: they are in SRAM while i runs whatever p is.
 * Returns FALSE when the run gives up the order (not an error). */
static gboolean
collect_candidates (Run *run, guint i)
{
  const ElkEngine *engine = run->engine;
  const guint n = engine->n_ops;
  const guint32 *order = run->order;
  guint cap, k;
  gboolean final = FALSE;

  run->g_len = 0;
  run->n_cand = 0;
  run->next_start = i + 1 < n ? run->ops[i + 1].exe_start : 0;
  run->grp[run->g_len++] = i;
  for (guint q = run->placed_ptr;
       q-- > 0 && q + run->window >= run->placed_ptr;)
    if (order[q] > i)
      run->grp[run->g_len++] = order[q];
  run->n_unc = run->g_len - 1;

  cap = engine->max_preload > run->n_unc ? engine->max_preload - run->n_unc
                                         : 0;
  for (k = 0; k < cap; k++)
    {
      guint q = run->placed_ptr + k;
      guint32 j;

      /* A non-default order that needs the whole per-layer cap is given
       * up as soon as the search gets there (the artifact's rule,
       * elk-paper.md §3.7 step 7): it is starved of SRAM. */
      if (run->abandon && k + 1 == cap && q < n)
        return FALSE;
      if (q >= n || run->ops[order[q]].load_start >= run->next_start)
        {
          run->cand[run->n_cand++] = (Candidate) { run->g_len,
                                                   run->next_start };
          final = TRUE;
          break;
        }
      j = order[q];
      run->cand[run->n_cand++] = (Candidate) { run->g_len,
                                               run->ops[j].load_start };
      run->grp[run->g_len++] = j;
    }
  if (!final && run->abandon)
    return FALSE;
  if (run->n_cand == 0)
    run->cand[run->n_cand++] = (Candidate) {
      run->g_len,
      run->placed_ptr < n
        ? MIN (run->next_start, run->ops[order[run->placed_ptr]].load_start)
        : run->next_start
    };
  return TRUE;
}

/* A lower bound on i's duration under any allocation, for the exact
 * pruning of the latest-start rule: its fastest execution, less the data
 * distribution the allocator could save on preloaded operators (none for
 * the reservation allocator). */
static double
min_duration (const Run *run, const ElkPlanTable *t)
{
  double min_exec = INFINITY, fixed_warm = 0;
  guint upto = run->n_cand > 0 ? run->cand[run->n_cand - 1].len : 1;

  for (guint e = 0; e < t->n_cold_hot; e++)
    min_exec = MIN (min_exec, t->cold_hot[e].exec_s);
  for (guint x = 1; x < upto; x++)
    fixed_warm += run->engine->tables[run->grp[x]]
                    ->cold_hot[run->ops[run->grp[x]].entry].warmup_s;
  return min_exec - fixed_warm;
}

/* Fills the policy's view of candidate @cd of operator i. */
static void
candidate_init (const Run *run, guint i, const Candidate *cd, guint n_tried,
                ElkEngineCandidate *c)
{
  guint n_pre = cd->len - 1;

  memset (c, 0, sizeof (*c));
  c->op = i;
  c->table = run->engine->tables[i];
  c->n_tried = n_tried;
  c->n_preloaded = n_pre;
  c->preloaded = run->grp + 1;
  c->preloaded_entries = run->qfixed;
  c->n_forced = run->n_unc;
  c->preload_entries = run->qentries;
  /* While i executes, SRAM holds its execute state and the preload states
   * of exactly the operators of the group: the later operators whose
   * loads start before i ends (R1: no other load can start before then).
   * This is what elk_program_validate checks. */
  for (guint x = 1; x < cd->len; x++)
    {
      c->preload_bytes += cold_of (run, run->grp[x]);
      if (x > run->n_unc && run->engine->tables[run->grp[x]]->hbm_bytes > 0)
        c->n_new_hbm++;
    }
  for (guint x = 0; x < n_pre; x++)
    run->qfixed[x] = (gint32) run->ops[run->grp[x + 1]].entry;
}

/* Picks operator i's candidate.  Returns FALSE with @error set on an
 * error; *infeasible is set when the run gives up. */
static gboolean
choose_candidate (Run *run, guint i, Best *best, gboolean *infeasible,
                  GError **error)
{
  const ElkEngine *engine = run->engine;
  const ElkEnginePolicy *policy = run->policy;
  const ElkPlanTable *t = engine->tables[i];
  ElkEngineDepth depth = policy->depth != NULL
                           ? policy->depth (engine, run->params, i)
                           : ELK_ENGINE_DEPTH_LATEST_START;
  double min_dur = min_duration (run, t);

  for (guint ci = 0; ci < run->n_cand; ci++)
    {
      guint c = depth == ELK_ENGINE_DEPTH_DEEPEST_FIRST
                  ? run->n_cand - 1 - ci : ci;
      const Candidate *cd = &run->cand[c];
      ElkEngineCandidate ec;
      ElkOpPrice price;
      double start, shift;

      /* No candidate ends after the next operator starts, so once even
       * i's lower-bound duration from there cannot start later than the
       * best found, no deeper candidate can win (ties go to the shallower
       * one anyway).  Exact pruning: results do not change. */
      if (depth == ELK_ENGINE_DEPTH_LATEST_START && t->hbm_bytes > 0
          && best->index >= 0 && run->next_start - min_dur <= best->start)
        break;
      candidate_init (run, i, cd, ci, &ec);
      if (ec.preload_bytes > (double) engine->usable)
        break;
      ec.budget = engine->usable - (guint64) ec.preload_bytes;
      switch (policy->choose (engine, run->params, &ec, error))
        {
        case ELK_ENGINE_TAKE:
          break;
        case ELK_ENGINE_SKIP:
          continue;
        case ELK_ENGINE_STOP:
          goto done;
        case ELK_ENGINE_INFEASIBLE:
          *infeasible = TRUE;
          return TRUE;
        case ELK_ENGINE_FAILED:
        default:
          return FALSE;
        }
      if (engine->layout != NULL)
        elk__layout_refine (engine->layout, run->ops, i, &ec);
      if (depth == ELK_ENGINE_DEPTH_DEEPEST_TAKEN)
        {
          /* The deepest candidate taken wins. */
          best->index = -1;
          best->start = -INFINITY;
        }
      start = cd->deadline - (ec.exec_s + ec.warmup_s + ec.extra_s);
      /* The execution's own traffic as the plan set's cost model prices
       * it (the plan's analytic demand on an analytic set). */
      elk_plan_set_get_op_price (engine->plans, i, ec.entry, &price);
      shift = price.noc_s;
      if (policy->fit_contention && run->params->delay_exec)
        start = MIN (start, noc_start (run->ops, run->grp, run->n_unc + 1,
                                       cd->len, cd->deadline, shift));
      if (start > best->start)
        {
          *best = (Best) { (gint) c, start, cd->deadline, ec.entry,
                           ec.exec_s, ec.warmup_s, ec.extra_s, cd->len,
                           ec.sets_preload_entries };
          if (ec.sets_preload_entries)
            memcpy (run->best_entries, run->qentries,
                    sizeof (guint32) * ec.n_preloaded);
        }
      if (depth == ELK_ENGINE_DEPTH_DEEPEST_FIRST)
        break;
    }
done:
  return TRUE;
}

/* Records operator i's winner, re-sizes its preloaded operators if the
 * policy did, and fits the overlapping loads around its traffic. */
static void
apply_best (Run *run, guint i, const Best *best)
{
  const ElkEngine *engine = run->engine;
  ElkEngineOp *ops = run->ops;

  ops[i].entry = best->entry;
  ops[i].preload_number = best->len - 1;
  ops[i].exe_start = best->start;
  ops[i].exe_end = best->deadline;
  ops[i].exec_s = best->exec_s;
  ops[i].warmup_s = best->warmup_s;
  ops[i].extra_s = best->extra_s;
  if (best->sets_entries)
    for (guint x = 1; x < best->len; x++)
      {
        guint32 j = run->grp[x];
        ops[j].entry = run->best_entries[x - 1];
        ops[j].warmup_s = engine->tables[j]->cold_hot[ops[j].entry].warmup_s;
      }
  if (run->policy->fit_contention && !run->params->delay_exec)
    {
      ElkOpPrice price;

      elk_plan_set_get_op_price (engine->plans, i, best->entry, &price);
      push_loads (ops, run->order, run->placed_ptr, run->pos, run->grp,
                  run->n_unc + 1, best->len, best->start, best->deadline,
                  price.compute_s);
    }
}

/* Places, as late as possible and in preload order, every load whose
 * operator is now scheduled (all operators from i on). */
static void
place_loads (Run *run, guint i)
{
  const ElkEngine *engine = run->engine;
  const guint n = engine->n_ops;
  ElkEngineOp *ops = run->ops;

  while (run->placed_ptr > 0 && run->order[run->placed_ptr - 1] >= i)
    {
      guint32 j = run->order[--run->placed_ptr];
      double end = ops[j].exe_start, noc, tl;
      /* -1: the even shard, as the plan set's load price names it. */
      gint entry = run->policy->preload_size == ELK_ENGINE_PRELOAD_SIZE_MINIMUM
                       ? -1
                       : (gint) ops[j].entry;

      if (run->placed_ptr + 1 < n)
        end = MIN (end, ops[run->order[run->placed_ptr + 1]].load_start);
      tl = elk_plan_set_get_load_time (engine->plans, j, entry,
                                       run->params->theta, &noc);
      ops[j].load_end = end;
      ops[j].load_start = end - tl;
      ops[j].load_s = tl;
      ops[j].load_noc_s = noc;
    }
}

/* Schedules operator i.  Returns FALSE with @error set on an error;
 * *infeasible is set when the run gives up. */
static gboolean
schedule_op (Run *run, guint i, gboolean *infeasible, GError **error)
{
  Best best = { .index = -1, .start = -INFINITY };

  if (!collect_candidates (run, i))
    {
      *infeasible = TRUE;
      return TRUE;
    }
  if (!choose_candidate (run, i, &best, infeasible, error))
    return FALSE;
  if (*infeasible)
    return TRUE;
  if (best.index < 0)
    {
      if (run->abandon || run->policy->unfit_is_infeasible || run->n_unc > 0)
        {
          *infeasible = TRUE;
          return TRUE;
        }
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
                   "operator '%s' (#%u) does not fit: no plan of it fits "
                   "the %" G_GUINT64_FORMAT " B of usable SRAM per core "
                   "next to the operators that must stay resident",
                   elk_graph_get_op (run->engine->graph, i)->name, i,
                   run->engine->usable);
      return FALSE;
    }
  apply_best (run, i, &best);
  place_loads (run, i);
  return TRUE;
}

/**
 * elk_engine_run:
 * @engine: the engine
 * @order: (array): the preload order, a permutation of the operators
 * @params: the design and its parameter set
 * @result: a result made by elk_engine_result_init(), overwritten
 * @error: return location for a #GError
 *
 * Schedules the graph backwards under @params.  A run that gives up its
 * order or parameter set is not an error: @result's feasible is %FALSE.
 *
 * Returns: %FALSE with @error set on an error (an operator that cannot
 *   run at all, or a policy hook's error)
 */
gboolean
elk_engine_run (const ElkEngine *engine,
                const guint32 *order,
                const ElkEngineParams *params,
                ElkEngineResult *result,
                GError **error)
{
  const guint n = engine->n_ops;
  const guint scratch = 2 * engine->max_preload + 8 + engine->max_preload + 2;
  g_autofree guint *pos = g_new (guint, n);
  g_autofree guint32 *grp = g_new (guint32, scratch);
  g_autofree Candidate *cand = g_new (Candidate, engine->max_preload + 2);
  g_autofree gint32 *qfixed = g_new (gint32, scratch);
  g_autofree guint32 *qentries = g_new (guint32, scratch);
  g_autofree guint32 *best_entries = g_new (guint32, scratch);
  Run run = {
    .engine = engine, .order = order, .params = params,
    .policy = params->policy, .ops = result->ops,
    .window = 2 * engine->max_preload + 8, .placed_ptr = n, .pos = pos,
    .grp = grp, .cand = cand, .qfixed = qfixed, .qentries = qentries,
    .best_entries = best_entries,
  };
  double first = INFINITY;

  g_return_val_if_fail (params->policy != NULL
                          && params->policy->choose != NULL, FALSE);
  /* abandon_on_cap applies to non-default orders only: the default order
   * must always produce a schedule (or a clear error). */
  for (guint q = 0; q < n && params->abandon_on_cap; q++)
    if (order[q] != q)
      run.abandon = TRUE;
  memset (result->ops, 0, sizeof (ElkEngineOp) * n);
  result->feasible = FALSE;
  result->theta = params->theta;
  result->latency_s = INFINITY;
  for (guint q = 0; q < n; q++)
    pos[order[q]] = q;

  for (guint i = n; i-- > 0;)
    {
      gboolean infeasible = FALSE;

      if (!schedule_op (&run, i, &infeasible, error))
        return FALSE;
      if (infeasible)
        return TRUE; /* an infeasible order, not an error */
    }

  for (guint i = 0; i < n; i++)
    first = MIN (first, MIN (result->ops[i].load_start,
                             result->ops[i].exe_start));
  result->latency_s = -first;
  result->feasible = TRUE;
  return TRUE;
}

/* ---------------------------------------------------------------------- */
/* Enumerations the shipped schedulers' properties share                   */
/* ---------------------------------------------------------------------- */

/* Registered by libelk alone, so that two plugins using them never race
 * to register the same GType name. */

/**
 * elk_contention_variant_get_type:
 *
 * Returns: the #GType of #ElkContentionVariant ("ElkContentionVariant")
 */
G_DEFINE_ENUM_TYPE (ElkContentionVariant,
                    elk_contention_variant,
                    G_DEFINE_ENUM_VALUE (ELK_CONTENTION_BEST, "best"),
                    G_DEFINE_ENUM_VALUE (ELK_CONTENTION_DELAY_EXECUTION,
                                         "delay-execution"),
                    G_DEFINE_ENUM_VALUE (ELK_CONTENTION_DELAY_PRELOAD,
                                         "delay-preload"))

/**
 * elk_baseline_preload_state_get_type:
 *
 * Returns: the #GType of #ElkBaselinePreloadState
 *   ("ElkBaselinePreloadState")
 */
G_DEFINE_ENUM_TYPE (ElkBaselinePreloadState,
                    elk_baseline_preload_state,
                    G_DEFINE_ENUM_VALUE (ELK_PRELOAD_STATE_BEST, "best"),
                    G_DEFINE_ENUM_VALUE (ELK_PRELOAD_STATE_SMALLEST,
                                         "smallest"),
                    G_DEFINE_ENUM_VALUE (ELK_PRELOAD_STATE_LARGEST, "largest"))

/* The parameters below are declared the same way by every shipped design
 * that has them, so that elk-inspect shows one name, range and meaning for
 * each; only a default may differ between designs, and it is an argument. */
#define ELK_ENGINE_PARAM_FLAGS                                                 \
  (G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS)

/**
 * elk_engine_param_spec_load_noc_share:
 * @default_value: the design's default share, from 0.05 to 1.0
 *
 * The "load-noc-share" property of a scheduler: the share of the
 * interconnect a preload may take (#ElkEngineParams.theta), a double from
 * 0.05 to 1.0.  Read and write, set at construction.
 *
 * Returns: (transfer floating): a new #GParamSpec, for
 *   elk_field_properties_install() or g_object_class_install_property()
 */
GParamSpec *
elk_engine_param_spec_load_noc_share (double default_value)
{
  return g_param_spec_double ("load-noc-share", NULL,
                              "Share of the interconnect a preload may take; "
                              "a preload lasts max(HBM time, delivery time / "
                              "share)",
                              0.05, 1.0, default_value, ELK_ENGINE_PARAM_FLAGS);
}

/**
 * elk_engine_param_spec_contention:
 * @default_value: the design's default variant
 *
 * The "contention" property of a scheduler: which contention variants
 * (#ElkEngineParams.delay_exec) it tries, an #ElkContentionVariant; read
 * it with elk_contention_variant_allows().  Read and write, set at
 * construction.
 *
 * Returns: (transfer floating): a new #GParamSpec, for
 *   elk_field_properties_install() or g_object_class_install_property()
 */
GParamSpec *
elk_engine_param_spec_contention (ElkContentionVariant default_value)
{
  return g_param_spec_enum ("contention", NULL,
                            "How preload and execution traffic share the NoC: "
                            "delay-execution, delay-preload, or best (try "
                            "both, keep the faster)",
                            elk_contention_variant_get_type (), default_value,
                            ELK_ENGINE_PARAM_FLAGS);
}

/**
 * elk_engine_param_spec_preload_state:
 *
 * The "preload-state" property of a baseline scheduler: the preload-state
 * layout every operator uses, an #ElkBaselinePreloadState, by default
 * %ELK_PRELOAD_STATE_BEST; read it with
 * elk_baseline_preload_state_allows().  Read and write, set at
 * construction.
 *
 * Returns: (transfer floating): a new #GParamSpec, for
 *   elk_field_properties_install() or g_object_class_install_property()
 */
GParamSpec *
elk_engine_param_spec_preload_state (void)
{
  return g_param_spec_enum ("preload-state", NULL,
                            "Preload-state layout every operator uses: "
                            "smallest, largest fitting, or best (try both, "
                            "keep the faster)",
                            elk_baseline_preload_state_get_type (),
                            ELK_PRELOAD_STATE_BEST, ELK_ENGINE_PARAM_FLAGS);
}

/**
 * elk_engine_param_spec_threads:
 *
 * The "threads" property of a scheduler: how many threads the search
 * (elk_engine_search_program(), elk_engine_search_ranked()) uses, a guint
 * from 0 (one per processor) to 1024, by default 0.  Results do not depend
 * on it.  Read and write, set at construction.
 *
 * Returns: (transfer floating): a new #GParamSpec, for
 *   elk_field_properties_install() or g_object_class_install_property()
 */
GParamSpec *
elk_engine_param_spec_threads (void)
{
  return g_param_spec_uint ("threads", NULL,
                            "Threads evaluating candidates (0 = one per "
                            "processor); results do not depend on it",
                            0, 1024, 0, ELK_ENGINE_PARAM_FLAGS);
}

/**
 * elk_order_enum_get_type:
 *
 * Returns: the #GType of #ElkOrderEnum ("ElkOrderEnumeration")
 */
G_DEFINE_ENUM_TYPE (ElkOrderEnumeration,
                    elk_order_enum,
                    G_DEFINE_ENUM_VALUE (ELK_ORDER_ENUM_AUTO, "auto"),
                    G_DEFINE_ENUM_VALUE (ELK_ORDER_ENUM_LAYERS, "layers"),
                    G_DEFINE_ENUM_VALUE (ELK_ORDER_ENUM_SUFFIX_TREE,
                                         "suffix-tree"))
