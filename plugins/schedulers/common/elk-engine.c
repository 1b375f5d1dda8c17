/* elk-engine.c: two-level inductive (backward) scheduling, elk-paper.md §3.5.
 *
 * The schedule is built from the last operator back to the first on a time
 * axis where the last execution ends at 0.  For operator i the engine lists
 * candidate preload numbers: preloading the next k operators (in preload
 * order) while i runs means i must end before the (k+1)-th of those loads
 * starts (Theorem 4.2: T_e-exe[i] = min(T_s-exe[i+1], T_s-pre[i+p+1])).  For
 * each candidate the SRAM split comes from the allocator (level two), the
 * execution's inter-core traffic is fitted into the NoC time the
 * overlapping loads leave idle (§3.8), and the candidate with the latest
 * start, i.e. the shortest current-to-end time, wins (level one).  Loads
 * are then placed as late as possible, one after another in preload order.
 *
 * The four designs of §5.3 differ only in how a candidate is chosen and how
 * SRAM is split, so they share this engine and are compared like with like:
 *
 *  - ELK: every candidate, SRAM split by the experiment's allocator;
 *  - BASIC: the deepest candidate whose preloads fit next to E's smallest
 *    execute plan and hold at most one HBM-reading operator; E takes the
 *    fastest plan that fits what is left;
 *  - STATIC: a fixed execution space, the deepest candidate fitting the
 *    remaining preload space;
 *  - IDEAL: no NoC contention, preloaded operators at their minimum preload
 *    state, zero data distribution.
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include "elk-compiler-private.h"

double
elk__load_time (const ElkLoadModel *model,
                guint64 hbm_bytes,
                guint64 cold_bytes,
                double theta,
                double *noc_s)
{
  double t_hbm, t_noc;

  if (hbm_bytes == 0)
    {
      *noc_s = 0;
      return 0;
    }
  t_hbm = (double) hbm_bytes / model->hbm_bw;
  t_noc = (double) cold_bytes / model->link_bw;
  *noc_s = t_noc;
  return MAX (t_hbm, t_noc / theta);
}

guint64
elk__table_min_hot (const ElkPlanTable *table)
{
  guint64 best = G_MAXUINT64;

  for (guint e = 0; e < table->n_cold_hot; e++)
    best = MIN (best, table->cold_hot[e].hot_bytes);
  return best;
}

static guint32
min_cold_entry (const ElkPlanTable *t)
{
  guint32 best = 0;

  for (guint e = 1; e < t->n_cold_hot; e++)
    if (t->cold_hot[e].cold_bytes < t->cold_hot[best].cold_bytes)
      best = e;
  return best;
}

gboolean
elk__engine_init (ElkEngine *engine,
                  const ElkPlanSet *plans,
                  ElkAllocator *allocator,
                  GError **error)
{
  ElkGraph *graph = elk_plan_set_get_graph (plans);
  const ElkChipSpec *spec = elk_plan_set_get_spec (plans);
  guint n = elk_graph_get_n_ops (graph);
  guint n_layers = elk_graph_get_n_layers (graph);

  memset (engine, 0, sizeof (*engine));
  if (n == 0)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "graph '%s' has no operators to schedule",
                   elk_graph_get_name (graph));
      return FALSE;
    }
  engine->plans = plans;
  engine->graph = graph;
  engine->spec = spec;
  engine->allocator = allocator;
  engine->load = (ElkLoadModel) { spec->hbm_bw, spec->link_bw, spec->cores };
  engine->n_ops = n;
  engine->usable = elk_chip_spec_get_usable_sram (spec);
  engine->noc_demand = elk_plan_set_get_options (plans)->noc_demand;
  /* The artifact never preloads more than one layer's worth of operators
   * (elk-paper.md §3.5, "Artifact specifics"). */
  engine->max_preload = n_layers > 0 ? MAX (n / n_layers, 1u) : n;
  engine->tables = g_new (const ElkPlanTable *, n);
  for (guint i = 0; i < n; i++)
    {
      const ElkPlanTable *t = elk_plan_set_get_table (plans, i);
      guint64 min_hot = G_MAXUINT64, min_cold = G_MAXUINT64;
      gboolean fits = FALSE;

      engine->tables[i] = t;
      for (guint e = 0; t != NULL && e < t->n_cold_hot; e++)
        {
          const ElkColdHot *ch = &t->cold_hot[e];
          min_hot = MIN (min_hot, ch->hot_bytes);
          min_cold = MIN (min_cold, ch->cold_bytes);
          if (ch->hot_bytes <= engine->usable
              && ch->cold_bytes <= engine->usable)
            fits = TRUE;
        }
      if (!fits)
        {
          const ElkOp *op = elk_graph_get_op (graph, i);
          if (t == NULL || t->n_cold_hot == 0)
            g_set_error (error, ELK_SCHEDULE_ERROR,
                         ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
                         "operator '%s' (#%u) fits no plan on chip '%s': "
                         "its plan table is empty", op->name, i, spec->name);
          else
            g_set_error (error, ELK_SCHEDULE_ERROR,
                         ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
                         "operator '%s' (#%u) does not fit chip '%s': its "
                         "smallest execute-state plan needs %" G_GUINT64_FORMAT
                         " B per core and its smallest preload state %"
                         G_GUINT64_FORMAT " B, but only %" G_GUINT64_FORMAT
                         " B of the %" G_GUINT64_FORMAT " B SRAM per core are "
                         "usable", op->name, i, spec->name, min_hot, min_cold,
                         engine->usable, spec->sram_per_core);
          elk__engine_clear (engine);
          return FALSE;
        }
    }
  {
    /* For G_MESSAGES_DEBUG=elk-compiler: how far the plan tables let a
     * preload state grow past the unreplicated shard, and how much faster
     * the fastest execute plan is than the fastest one compatible with the
     * smallest preload state (what Basic and Static trade). */
    double ratio = 0, speed = 0, hbm = 0;
    for (guint i = 0; i < n; i++)
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
  return TRUE;
}

void
elk__engine_clear (ElkEngine *engine)
{
  g_clear_pointer (&engine->tables, g_free);
}

void
elk__engine_result_init (ElkEngineResult *result, guint n_ops)
{
  result->n_ops = n_ops;
  result->ops = g_new0 (ElkEngineOp, n_ops);
  result->latency_s = INFINITY;
  result->feasible = FALSE;
}

void
elk__engine_result_clear (ElkEngineResult *result)
{
  g_clear_pointer (&result->ops, g_free);
}

/* Basic and Static pick E's plan the way the artifact's baselines do
 * (baseline_cold_hot): either the smallest preload state, or the largest
 * one whose smallest execute plan still fits; then the fastest execute
 * plan within @budget for that preload state. */
static gint
baseline_entry (const ElkPlanTable *t, guint64 budget, gboolean largest)
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
    cold = t->cold_hot[min_cold_entry (t)].cold_bytes;
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

/* Candidate c overlaps E with the preloads grp[1 .. len[c]). */
typedef struct
{
  guint len;
  double deadline;
} Candidate;

static guint
grp_len_upto (const Candidate *cand, guint n_cand)
{
  return n_cand > 0 ? cand[n_cand - 1].len : 1;
}

static double
cold_of (const ElkEngine *engine, const ElkEngineOp *ops, guint32 j,
         ElkPolicy policy)
{
  const ElkPlanTable *t = engine->tables[j];
  if (t->hbm_bytes == 0)
    return 0;
  if (policy == ELK_POLICY_IDEAL)
    return (double) t->min_cold_bytes;
  return (double) t->cold_hot[ops[j].entry].cold_bytes;
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

gboolean
elk__engine_run (const ElkEngine *engine,
                 const guint32 *order,
                 const ElkEngineParams *params,
                 ElkEngineResult *result,
                 GError **error)
{
  const guint n = engine->n_ops;
  ElkEngineOp *ops = result->ops;
  const gboolean ideal = params->policy == ELK_POLICY_IDEAL;
  const guint window = 2 * engine->max_preload + 8;
  g_autofree guint *pos = g_new (guint, n);
  g_autofree guint32 *grp = g_new (guint32, window + engine->max_preload + 2);
  g_autofree Candidate *cand = g_new (Candidate, engine->max_preload + 2);
  g_autofree gint32 *qfixed = g_new (gint32, window + engine->max_preload + 2);
  g_autofree guint32 *qentries
    = g_new (guint32, window + engine->max_preload + 2);
  g_autofree guint32 *best_entries
    = g_new (guint32, window + engine->max_preload + 2);
  guint placed_ptr = n;
  double first = INFINITY;

  gboolean abandon = FALSE;

  /* abandon_on_cap applies to non-default orders only: the default order
   * must always produce a schedule (or a clear error). */
  for (guint q = 0; q < n && params->abandon_on_cap; q++)
    if (order[q] != q)
      abandon = TRUE;
  memset (ops, 0, sizeof (ElkEngineOp) * n);
  result->feasible = FALSE;
  result->theta = ideal ? 1.0 : params->theta;
  result->latency_s = INFINITY;
  for (guint q = 0; q < n; q++)
    pos[order[q]] = q;

  for (guint i = n; i-- > 0;)
    {
      const ElkPlanTable *t = engine->tables[i];
      double next_start = i + 1 < n ? ops[i + 1].exe_start : 0;
      guint g_len = 0, n_unc, cap, n_cand = 0, k;
      gboolean final = FALSE;
      gint best = -1;
      double best_start = -INFINITY, best_deadline = 0;
      guint32 best_entry = 0;
      double best_exec = 0, best_warm = 0, best_extra = 0;
      guint best_len = 0;
      guint64 best_budget = 0;
      double min_exec, fixed_warm;

      /* Operators after i whose loads are not placed yet come before, in
       * preload order, the load of an operator before i: they are in SRAM
       * while i runs whatever p is. */
      grp[g_len++] = i;
      for (guint q = placed_ptr; q-- > 0 && q + window >= placed_ptr;)
        if (order[q] > i)
          grp[g_len++] = order[q];
      n_unc = g_len - 1;

      cap = engine->max_preload > n_unc ? engine->max_preload - n_unc : 0;
      for (k = 0; k < cap; k++)
        {
          guint q = placed_ptr + k;
          guint32 j;

          /* A non-default order that needs the whole per-layer cap is
           * given up as soon as the search gets there (the artifact's
           * rule, elk-paper.md §3.7 step 7): it is starved of SRAM. */
          if (abandon && k + 1 == cap && q < n)
            return TRUE; /* infeasible order, not an error */
          if (q >= n || ops[order[q]].load_start >= next_start)
            {
              cand[n_cand++] = (Candidate) { g_len, next_start };
              final = TRUE;
              break;
            }
          j = order[q];
          cand[n_cand++] = (Candidate) { g_len, ops[j].load_start };
          grp[g_len++] = j;
        }
      if (!final && abandon)
        return TRUE;
      if (n_cand == 0)
        cand[n_cand++] = (Candidate) {
          g_len,
          placed_ptr < n ? MIN (next_start, ops[order[placed_ptr]].load_start)
                         : next_start
        };

      /* A lower bound on i's duration under any allocation: its fastest
       * execution, less the data distribution the allocator could save
       * on preloaded operators (none for the reservation allocator). */
      min_exec = INFINITY;
      for (guint e = 0; e < t->n_cold_hot; e++)
        min_exec = MIN (min_exec, t->cold_hot[e].exec_s);
      fixed_warm = 0;
      for (guint x = 1; x < grp_len_upto (cand, n_cand); x++)
        fixed_warm += engine->tables[grp[x]]->cold_hot[ops[grp[x]].entry]
                        .warmup_s;

      for (guint ci = 0; ci < n_cand; ci++)
        {
          /* An operator without HBM data has nothing to wait for, so it
           * only tries the deepest overlap, backing off when that does not
           * fit (artifact behaviour). */
          guint c = (params->policy == ELK_POLICY_ELK && t->hbm_bytes == 0)
                      ? n_cand - 1 - ci : ci;
          const Candidate *cd = &cand[c];
          guint n_pre = cd->len - 1;
          double pre_cold = 0, start, L, exec_s, warm_s, extra = 0, shift;
          guint32 entry;
          guint64 budget;
          gint hbm_ops = 0;

          /* No candidate ends after the next operator starts, so once
           * even i's lower-bound duration from there cannot start later
           * than the best found, no deeper candidate can win (ties go to
           * the shallower one anyway).  Exact pruning: results do not
           * change. */
          if ((params->policy == ELK_POLICY_ELK
               || params->policy == ELK_POLICY_IDEAL)
              && t->hbm_bytes > 0 && best >= 0
              && next_start - (min_exec - fixed_warm) <= best_start)
            break;

          /* While i executes, SRAM holds its execute state and the preload
           * states of exactly the operators of the group: the later
           * operators whose loads start before i ends (R1: no other load
           * can start before then).  This is what elk_program_validate
           * checks. */
          for (guint x = 1; x < cd->len; x++)
            {
              pre_cold += cold_of (engine, ops, grp[x], params->policy);
              if (x > n_unc && engine->tables[grp[x]]->hbm_bytes > 0)
                hbm_ops++;
            }
          if (pre_cold > (double) engine->usable)
            break;
          budget = engine->usable - (guint64) pre_cold;

          if (params->policy == ELK_POLICY_ELK
              || params->policy == ELK_POLICY_IDEAL)
            {
              ElkAllocRequest req = {
                .plans = engine->plans,
                .exec_op = i,
                .n_preloaded = ideal ? 0 : n_pre,
                .preloaded = grp + 1,
                .preloaded_fixed = qfixed,
                .sram_budget = ideal ? budget : engine->usable,
                .contention = ideal ? ELK_ALLOC_CONTENTION_NONE
                                    : ELK_ALLOC_CONTENTION_SHARED,
              };
              ElkAllocResult res = { .preload_entries = qentries };
              gboolean fits = FALSE;

              for (guint x = 0; x < n_pre; x++)
                qfixed[x] = (gint32) ops[grp[x + 1]].entry;
              if (!elk_allocator_allocate (engine->allocator, &req, &res,
                                           &fits, error))
                return FALSE;
              if (!fits)
                {
                  if (t->hbm_bytes == 0 && params->policy == ELK_POLICY_ELK)
                    continue;
                  break;
                }
              entry = res.exec_entry;
              exec_s = t->cold_hot[entry].exec_s;
              warm_s = ideal ? 0 : t->cold_hot[entry].warmup_s;
              if (!ideal)
                extra = res.warmup_s - t->cold_hot[entry].warmup_s;
              if (!ideal)
                budget = engine->usable
                         - (res.bytes - t->cold_hot[entry].hot_bytes);
            }
          else
            {
              gint e;
              guint64 space;

              if (params->policy == ELK_POLICY_BASIC)
                {
                  /* Preload until one HBM-reading operator is buffered,
                   * within what E's smallest plan leaves. */
                  space = engine->usable - elk__table_min_hot (t);
                  if ((pre_cold > (double) space || hbm_ops > 1) && ci > 0)
                    break;
                }
              else
                {
                  if (params->exec_space > engine->usable)
                    return TRUE;
                  space = engine->usable - params->exec_space;
                  if (pre_cold > (double) space && ci > 0)
                    break;
                  /* The first candidate always runs, in whatever the
                   * resident preloads leave if that is less than the
                   * split. */
                  budget = MIN (params->exec_space, budget);
                }
              e = baseline_entry (t, budget, params->largest_cold);
              if (e < 0)
                {
                  if (params->policy == ELK_POLICY_STATIC)
                    return TRUE; /* this split cannot run the operator */
                  break;
                }
              entry = (guint32) e;
              exec_s = t->cold_hot[entry].exec_s;
              warm_s = t->cold_hot[entry].warmup_s;
              /* Basic and Static take the deepest fitting candidate. */
              best = -1;
              best_start = -INFINITY;
            }

          L = exec_s + warm_s + extra;
          start = cd->deadline - L;
          shift = elk_plan_get_noc_demand (
            &t->plans[t->cold_hot[entry].hot_plan], engine->noc_demand);
          if (!ideal && params->delay_exec)
            start = MIN (start, noc_start (ops, grp, n_unc + 1, cd->len,
                                           cd->deadline, shift));
          if (start > best_start)
            {
              best_start = start;
              best = (gint) c;
              best_deadline = cd->deadline;
              best_entry = entry;
              best_exec = exec_s;
              best_warm = warm_s;
              best_extra = extra;
              best_len = cd->len;
              best_budget = budget;
              if (params->policy == ELK_POLICY_ELK)
                memcpy (best_entries, qentries, sizeof (guint32) * n_pre);
            }
          if (params->policy == ELK_POLICY_ELK && t->hbm_bytes == 0)
            break;
        }

      if (best < 0)
        {
          if (abandon || params->policy == ELK_POLICY_STATIC
              || n_unc > 0)
            return TRUE;
          g_set_error (error, ELK_SCHEDULE_ERROR,
                       ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
                       "operator '%s' (#%u) does not fit: no plan of it fits "
                       "the %" G_GUINT64_FORMAT " B of usable SRAM per core "
                       "next to the operators that must stay resident",
                       elk_graph_get_op (engine->graph, i)->name, i,
                       engine->usable);
          return FALSE;
        }

      ops[i].entry = best_entry;
      ops[i].preload_number = best_len - 1;
      ops[i].exe_start = best_start;
      ops[i].exe_end = best_deadline;
      ops[i].exec_s = best_exec;
      ops[i].warmup_s = best_warm;
      ops[i].extra_s = best_extra;
      (void) best_budget;
      if (params->policy == ELK_POLICY_ELK)
        for (guint x = 1; x < best_len; x++)
          {
            guint32 j = grp[x];
            ops[j].entry = best_entries[x - 1];
            ops[j].warmup_s = engine->tables[j]->cold_hot[ops[j].entry].warmup_s;
          }

      if (!ideal && !params->delay_exec)
        push_loads (ops, order, placed_ptr, pos, grp, n_unc + 1, best_len,
                    best_start, best_deadline,
                    t->plans[t->cold_hot[best_entry].hot_plan].compute_s);

      /* Place, as late as possible and in preload order, every load whose
       * operator is now scheduled. */
      while (placed_ptr > 0 && order[placed_ptr - 1] >= i)
        {
          guint32 j = order[--placed_ptr];
          const ElkPlanTable *tj = engine->tables[j];
          double end = ops[j].exe_start, noc, tl;
          guint64 cold = ideal ? tj->min_cold_bytes
                               : tj->cold_hot[ops[j].entry].cold_bytes;

          if (placed_ptr + 1 < n)
            end = MIN (end, ops[order[placed_ptr + 1]].load_start);
          tl = elk__load_time (&engine->load, tj->hbm_bytes, cold,
                               ideal ? 1.0 : params->theta, &noc);
          ops[j].load_end = end;
          ops[j].load_start = end - tl;
          ops[j].load_s = tl;
          ops[j].load_noc_s = noc;
        }
    }

  for (guint i = 0; i < n; i++)
    first = MIN (first, MIN (ops[i].load_start, ops[i].exe_start));
  result->latency_s = -first;
  result->feasible = TRUE;
  return TRUE;
}

/**
 * elk__engine_to_program:
 *
 * Turns an engine run into device calls.  Preloads are issued in preload
 * order; a preload goes before execute(i) when the schedule starts it
 * before i ends (R1: a preload issued after execute(i) cannot start before
 * i finishes), and an operator's own preload always goes before its
 * execute (R3).  Operators that read nothing from HBM get no preload.
 */
ElkProgram *
elk__engine_to_program (const ElkEngine *engine,
                        const guint32 *order,
                        const ElkEngineResult *result,
                        ElkPolicy policy)
{
  const guint n = engine->n_ops;
  ElkProgram *program = elk_program_new (engine->graph);
  g_autofree guint *pos = g_new (guint, n);
  guint ptr = 0;

  for (guint q = 0; q < n; q++)
    pos[order[q]] = q;
  for (guint i = 0; i < n; i++)
    {
      const ElkPlanTable *t = engine->tables[i];
      const ElkEngineOp *eo = &result->ops[i];
      const ElkColdHot *ch = &t->cold_hot[eo->entry];
      ElkProgramOp *pop = elk_program_get_op (program, i);

      pop->exec_plan = t->plans[ch->hot_plan];
      pop->preload_plan = t->plans[ch->cold_plan];
      pop->exec_budget = engine->usable;
      pop->preload_share = result->theta;
      pop->hot_bytes = ch->hot_bytes;
      pop->cold_bytes = t->hbm_bytes > 0 ? ch->cold_bytes : 0;
      pop->hbm_bytes = t->hbm_bytes;
      pop->est_exec_s = eo->exec_s;
      pop->est_warmup_s = eo->warmup_s;
      pop->est_load_s = eo->load_s;
      pop->est_noc_s = elk_plan_get_noc_demand (&pop->exec_plan,
                                                engine->noc_demand);
      if (policy == ELK_POLICY_IDEAL)
        {
          const ElkColdHot *mc = &t->cold_hot[min_cold_entry (t)];
          /* Ideal: preloaded as an even shard, distributed for free, and
           * its execution traffic on a network of its own, so it never
           * contends with preloads (elk-paper.md §5.3).  The program says
           * so in its assumptions, which every chip applies and results
           * record; the plans stay what the cost model gives. */
          pop->preload_plan = t->plans[mc->cold_plan];
          pop->cold_bytes = t->hbm_bytes > 0 ? t->min_cold_bytes : 0;
          pop->est_noc_s = 0;
          pop->est_warmup_s = 0;
        }
    }
  for (guint i = 0; i < n; i++)
    {
      double end = result->ops[i].exe_end;
      double tol = 1e-12 * MAX (1e-6, fabs (end));

      while (ptr < n
             && (ptr <= pos[i]
                 || result->ops[order[ptr]].load_start < end - tol))
        {
          guint32 j = order[ptr++];
          if (engine->tables[j]->hbm_bytes > 0)
            elk_program_add_preload (program, j);
        }
      elk_program_add_execute (program, i);
    }
  elk_program_set_estimate (program, result->latency_s);
  {
    /* A summary for G_MESSAGES_DEBUG=elk-compiler: how much preload
     * broadcast (cold / min cold), how deep the preloads, how many loads
     * are delivery-bound rather than HBM-bound, and the time split. */
    double cold = 0, min_cold = 0, depth = 0, exec = 0, warm = 0, load = 0;
    guint n_hbm = 0, n_noc = 0;
    for (guint i = 0; i < n; i++)
      {
        const ElkPlanTable *t = engine->tables[i];
        const ElkEngineOp *eo = &result->ops[i];
        exec += eo->exec_s;
        warm += eo->warmup_s + eo->extra_s;
        depth += eo->preload_number;
        if (t->hbm_bytes == 0)
          continue;
        n_hbm++;
        load += eo->load_s;
        cold += (double) t->cold_hot[eo->entry].cold_bytes;
        min_cold += (double) t->min_cold_bytes;
        if (eo->load_s > (double) t->hbm_bytes / engine->load.hbm_bw * 1.0001)
          n_noc++;
      }
    g_debug ("program (policy %d): %.4g ms; broadcast ratio %.3f; mean "
             "preload number %.2f; %u of %u loads delivery-bound; sums: "
             "execute %.4g ms, distribution %.4g ms, load %.4g ms",
             policy, result->latency_s * 1e3,
             min_cold > 0 ? cold / min_cold : 0, depth / n, n_noc, n_hbm,
             exec * 1e3, warm * 1e3, load * 1e3);
  }
  return program;
}

/* Evaluating orders and parameter sets on a thread pool.  Each task writes
 * only its own slot; the winner is the lowest latency, ties going to the
 * lowest (order, parameter set) index, so the result does not depend on
 * the number of threads or on which finishes first. */
typedef struct
{
  const ElkEngine *engine;
  GPtrArray *orders;
  const ElkEngineParams *params;
  guint n_params;
  double *latency;
  GMutex lock;
  GError *error;
  guint error_index;
} Search;

static void
search_one (Search *s, guint idx)
{
  ElkEngineResult r;
  GError *error = NULL;
  const guint32 *order = g_ptr_array_index (s->orders, idx / s->n_params);

  elk__engine_result_init (&r, s->engine->n_ops);
  if (!elk__engine_run (s->engine, order, &s->params[idx % s->n_params], &r,
                        &error))
    {
      g_mutex_lock (&s->lock);
      if (s->error == NULL || idx < s->error_index)
        {
          g_clear_error (&s->error);
          s->error = error;
          s->error_index = idx;
        }
      else
        g_error_free (error);
      g_mutex_unlock (&s->lock);
      s->latency[idx] = INFINITY;
    }
  else
    s->latency[idx] = r.feasible ? r.latency_s : INFINITY;
  elk__engine_result_clear (&r);
}

static void
search_task (gpointer data, gpointer user_data)
{
  search_one (user_data, GPOINTER_TO_UINT (data) - 1);
}

gboolean
elk__engine_search (const ElkEngine *engine,
                    GPtrArray *orders,
                    const ElkEngineParams *params,
                    guint n_params,
                    guint n_threads,
                    ElkEngineResult *best,
                    guint *best_order,
                    guint *best_params,
                    GError **error)
{
  Search s = { 0 };
  guint total = orders->len * n_params;
  gint win = -1;
  gboolean ok;

  s.engine = engine;
  s.orders = orders;
  s.params = params;
  s.n_params = n_params;
  s.latency = g_new (double, total);
  g_mutex_init (&s.lock);
  if (n_threads == 0)
    n_threads = g_get_num_processors ();
  if (n_threads <= 1 || total <= 1)
    for (guint idx = 0; idx < total; idx++)
      search_one (&s, idx);
  else
    {
      GThreadPool *pool = g_thread_pool_new (search_task, &s,
                                             (gint) MIN (n_threads, total),
                                             TRUE, NULL);
      for (guint idx = 0; idx < total; idx++)
        g_thread_pool_push (pool, GUINT_TO_POINTER (idx + 1), NULL);
      g_thread_pool_free (pool, FALSE, TRUE);
    }
  if (s.error != NULL)
    {
      g_propagate_error (error, s.error);
      ok = FALSE;
      goto out;
    }
  for (guint idx = 0; idx < total; idx++)
    if (s.latency[idx] < INFINITY
        && (win < 0 || s.latency[idx] < s.latency[win]))
      win = (gint) idx;
  if (win < 0)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
                   "graph '%s': no schedule fits the %" G_GUINT64_FORMAT
                   " B of usable SRAM per core under any of the %u "
                   "configurations tried",
                   elk_graph_get_name (engine->graph), engine->usable, total);
      ok = FALSE;
      goto out;
    }
  {
    guint n_feasible = 0;
    double best_other = INFINITY;
    for (guint idx = 0; idx < total; idx++)
      {
        n_feasible += s.latency[idx] < INFINITY;
        if (idx >= n_params)
          best_other = MIN (best_other, s.latency[idx]);
      }
    if (orders->len > 1)
      g_debug ("search: best non-default order %.6g s", best_other);
    g_debug ("search: %u of %u (order, parameter set) runs feasible; best "
             "#%d at %.6g s (order %u, set %u); default order, set 0: %.6g s",
             n_feasible, total, win, s.latency[win], (guint) win / n_params,
             (guint) win % n_params, s.latency[0]);
  }
  *best_order = (guint) win / n_params;
  *best_params = (guint) win % n_params;
  ok = elk__engine_run (engine, g_ptr_array_index (orders, *best_order),
                        &params[*best_params], best, error);
out:
  g_mutex_clear (&s.lock);
  g_free (s.latency);
  return ok;
}

GType
elk__contention_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { ELK_CONTENTION_BEST, "ELK_CONTENTION_BEST", "best" },
    { ELK_CONTENTION_DELAY_EXECUTION, "ELK_CONTENTION_DELAY_EXECUTION",
      "delay-execution" },
    { ELK_CONTENTION_DELAY_PRELOAD, "ELK_CONTENTION_DELAY_PRELOAD",
      "delay-preload" },
    { 0, NULL, NULL },
  };

  /* The static library is linked into several plugins; the first one
   * registers the type and the others find it by name. */
  if (g_once_init_enter (&type))
    {
      GType t = g_type_from_name ("ElkContentionVariant");
      if (t == 0)
        t = g_enum_register_static ("ElkContentionVariant", values);
      g_once_init_leave (&type, t);
    }
  return (GType) type;
}

GType
elk__preload_state_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { ELK_PRELOAD_STATE_BEST, "ELK_PRELOAD_STATE_BEST", "best" },
    { ELK_PRELOAD_STATE_SMALLEST, "ELK_PRELOAD_STATE_SMALLEST", "smallest" },
    { ELK_PRELOAD_STATE_LARGEST, "ELK_PRELOAD_STATE_LARGEST", "largest" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    {
      GType t = g_type_from_name ("ElkBaselinePreloadState");
      if (t == 0)
        t = g_enum_register_static ("ElkBaselinePreloadState", values);
      g_once_init_leave (&type, t);
    }
  return (GType) type;
}

guint32 *
elk__identity_order (guint n)
{
  guint32 *order = g_new (guint32, n);
  for (guint i = 0; i < n; i++)
    order[i] = i;
  return order;
}
