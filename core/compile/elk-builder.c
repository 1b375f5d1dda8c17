/* elk-builder.c: from an engine run to an ElkProgram (the toolkit's
 * program builder), so that every scheduler on the engine fills every
 * field of its program the same way. */
#include "config.h"

#undef G_LOG_DOMAIN
#define G_LOG_DOMAIN "elk-compiler"

#include <math.h>
#include "elk-compile-private.h"

/* A summary for G_MESSAGES_DEBUG=elk-compiler: how much preload broadcast
 * (cold / min cold), how deep the preloads, how many loads are
 * delivery-bound rather than HBM-bound, and the time split. */
static void
debug_program (const ElkEngine *engine, const ElkEnginePolicy *policy,
               const ElkEngineResult *result)
{
  const guint n = engine->n_ops;
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
      if (eo->load_s > (double) t->hbm_bytes / engine->spec->hbm_bw * 1.0001)
        n_noc++;
    }
  g_debug ("program (%s): %.4g ms; broadcast ratio %.3f; mean "
           "preload number %.2f; %u of %u loads delivery-bound; sums: "
           "execute %.4g ms, distribution %.4g ms, load %.4g ms",
           policy->name, result->latency_s * 1e3,
           min_cold > 0 ? cold / min_cold : 0, depth / n, n_noc, n_hbm,
           exec * 1e3, warm * 1e3, load * 1e3);
}

/**
 * elk_engine_build_program:
 * @engine: the engine
 * @policy: the design that made @result
 * @order: (array): the preload order of @result
 * @result: a feasible engine run
 *
 * Turns an engine run into device calls and fills every #ElkProgramOp
 * field from it: the plans of the chosen entries, the budget (the usable
 * SRAM), the preload share of the run, the declarations (bytes, checked by
 * elk_program_validate()) and the predictions, and the program's estimate
 * and assumptions.  Under @policy's %ELK_ENGINE_PRELOAD_SIZE_MINIMUM a
 * preloaded operator's preload plan is its smallest preload state; the
 * predictions that @policy's assumptions make free are 0.
 *
 * Preloads are issued in preload order; a preload goes before execute(i) when the schedule starts it
 * before i ends (R1: a preload issued after execute(i) cannot start before
 * i finishes), and an operator's own preload always goes before its
 * execute (R3).  Operators that read nothing from HBM get no preload.
 *
 * Returns: (transfer full): the program
 */
ElkProgram *
elk_engine_build_program (const ElkEngine *engine,
                          const ElkEnginePolicy *policy,
                          const guint32 *order,
                          const ElkEngineResult *result)
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
      {
        ElkOpPrice price;

        elk_plan_set_get_op_price (engine->plans, i, eo->entry, &price);
        pop->est_noc_s = price.noc_s;
      }
      /* A bound such as Ideal holds preloads as an even shard, distributes
       * for free and runs its execution traffic on a network of its own,
       * so it never contends with preloads (elk-paper.md §5.3).  The
       * program says so in its assumptions, which every chip applies and
       * results record; the plans stay what the cost model gives. */
      if (policy->preload_size == ELK_ENGINE_PRELOAD_SIZE_MINIMUM)
        {
          const ElkColdHot *mc = &t->cold_hot[elk__table_min_cold_entry (t)];
          pop->preload_plan = t->plans[mc->cold_plan];
          pop->cold_bytes = t->hbm_bytes > 0 ? t->min_cold_bytes : 0;
        }
      if (policy->assumptions & ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK)
        pop->est_noc_s = 0;
      if (policy->assumptions & ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION)
        pop->est_warmup_s = 0;
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
  if (policy->assumptions != ELK_PROGRAM_ASSUME_NONE)
    elk_program_set_assumptions (program, policy->assumptions);
  debug_program (engine, policy, result);
  return program;
}

