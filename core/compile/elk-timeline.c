/* elk-timeline.c: the contention-aware analytic timeline (elk-paper.md §3.8),
 * public as elk_timeline_run() (core/elk/elk-timeline.h).
 *
 * Runs an ElkProgram forward in time under the device rules: preloads run
 * one after another in program order (R2) and none starts before every
 * execute issued before it has finished (R1); an execute starts when the
 * previous one has finished and its own preload has arrived (R3).
 *
 * A preload of cold_bytes per core takes max(HBM time, delivery time /
 * theta) (elk_chip_spec_get_load_time(), the one load model), or longer if
 * the program asked for a slower, throttled preload
 * (ElkProgramOp.preload_share, priced as ElkOpCost.load_s and passed in
 * as min_load_s).  During it the NoC is busy a fraction
 * delivery/duration of the time.  An execution needs shift_s of NoC time
 * for its inter-core traffic, and the two resolve their contention in one
 * of two ways (the artifact's delay_comp):
 *
 *  - ELK_TIMELINE_PRELOAD_FIRST: the execution's traffic only gets the
 *    NoC time the overlapping preloads leave idle; what is missing is added
 *    to the execution as a stall;
 *  - ELK_TIMELINE_EXECUTION_FIRST: the preloads only get the NoC while the
 *    execution computes; the missing delivery time stretches the last
 *    overlapping preload (and pushes the later ones) by the missing NoC
 *    time divided by that preload's NoC share.
 *
 * Both are single-pass approximations: a stall does not itself open more
 * idle NoC time.  Hand-computed cases are in tests/compiler/test-timeline.c.
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include "elk-compile-private.h"

enum { EV_LOAD, EV_EXEC, EV_STALL };

typedef struct
{
  double t;
  gint kind;
  gint delta;
} Event;

static gint
event_cmp (gconstpointer a, gconstpointer b)
{
  const Event *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return x->delta - y->delta; /* close before open at the same instant */
}

/**
 * elk_timeline_op_init_from_cost:
 * @op: (out caller-allocates): the timeline input to fill
 * @cost: what elk_program_derive() derived for the operator
 *
 * Fills @op the way the analytic chip prices a program: the preload lasts
 * at least as long as the program's preload share makes it, and the
 * execution's duration includes its data distribution.
 *
 * Since: 0.1
 */
void
elk_timeline_op_init_from_cost (ElkTimelineOp *op, const ElkOpCost *cost)
{
  *op = (ElkTimelineOp) {
    .hbm_bytes = cost->hbm_bytes,
    .cold_bytes = cost->cold_bytes,
    .min_load_s = cost->load_s,
    .exec_s = cost->exec_s + cost->warmup_s,
    .shift_s = cost->noc_s,
    .noc_bytes = cost->noc_bytes,
  };
}

/**
 * elk_timeline_run:
 * @spec: the chip: its HBM bandwidth, per-core port rate and core count
 *   make the load model (elk_chip_spec_get_load_time())
 * @preload_share: the share of each core's port a preload may take, in
 *   (0, 1]
 * @priority: who yields on a busy interconnect
 * @n_ops: number of operators
 * @ops: (array length=n_ops): per operator, what the timeline needs
 * @n_steps: number of steps
 * @steps: (array length=n_steps): the program's device calls, in order
 * @result: (out caller-allocates): what the run measures
 * @error: return location for a #GError
 *
 * Runs @steps forward in time.  Preloads run one after another in step
 * order (R2) and none starts before every execute issued before it has
 * finished (R1); an execute starts when the previous one has finished and
 * its own preload, if any, has arrived (R3).  The steps are not checked
 * otherwise: run elk_program_validate() first.
 *
 * Returns: %TRUE on success; %FALSE with @error set when a step names an
 *   operator beyond @n_ops.
 *
 * Since: 0.1
 */
gboolean
elk_timeline_run (const ElkChipSpec *spec,
                  double preload_share,
                  ElkTimelinePriority priority,
                  guint n_ops,
                   const ElkTimelineOp *ops,
                   guint n_steps,
                   const ElkStep *steps,
                   ElkTimelineResult *result,
                   GError **error)
{
  return elk_timeline_run_timed (spec, preload_share, priority, n_ops, ops,
                                 n_steps, steps, result, NULL, NULL, NULL,
                                 error);
}

/**
 * elk_timeline_run_timed:
 * @spec: the chip, as for elk_timeline_run()
 * @preload_share: as for elk_timeline_run()
 * @priority: as for elk_timeline_run()
 * @n_ops: number of operators
 * @ops: (array length=n_ops): per operator, what the timeline needs
 * @n_steps: number of steps
 * @steps: (array length=n_steps): the program's device calls, in order
 * @result: (out caller-allocates): what the run measures
 * @exec_start: (array length=n_ops) (out caller-allocates) (optional):
 *   when each operator's execution starts
 * @exec_end: (array length=n_ops) (out caller-allocates) (optional): when
 *   it ends
 * @exec_stall: (array length=n_ops) (out caller-allocates) (optional):
 *   the part of it that waited for interconnect time
 *   (%ELK_TIMELINE_PRELOAD_FIRST; 0 otherwise)
 * @error: return location for a #GError
 *
 * elk_timeline_run(), also reporting when each operator executed, which
 * is what a chip needs to say where its time went (#ElkBreakdown): an
 * execution lasts its #ElkTimelineOp exec_s plus its stall, and the time
 * between one execution's end and the next one's start is the chip
 * waiting for a preload.
 *
 * Returns: as elk_timeline_run().
 */
gboolean
elk_timeline_run_timed (const ElkChipSpec *spec,
                        double preload_share,
                        ElkTimelinePriority priority,
                        guint n_ops,
                        const ElkTimelineOp *ops,
                        guint n_steps,
                        const ElkStep *steps,
                        ElkTimelineResult *result,
                        double *exec_start,
                        double *exec_end,
                        double *exec_stall,
                        GError **error)
{
  g_autofree double *ls = g_new0 (double, n_ops);
  g_autofree double *le = g_new0 (double, n_ops);
  g_autofree double *lnoc = g_new0 (double, n_ops);
  g_autofree double *lext = g_new0 (double, n_ops);
  g_autofree double *es = g_new0 (double, n_ops);
  g_autofree double *ee = g_new0 (double, n_ops);
  g_autofree double *est = g_new0 (double, n_ops);
  g_autofree gboolean *loaded = g_new0 (gboolean, n_ops);
  g_autofree guint32 *issued = g_new (guint32, n_ops);
  g_autoptr(GArray) events = g_array_new (FALSE, FALSE, sizeof (Event));
  guint n_issued = 0, first_live = 0;
  double hbm_free = 0, last_exec_end = 0;
  gint counts[3] = { 0, 0, 0 };

  memset (result, 0, sizeof (*result));
  for (guint s = 0; s < n_steps; s++)
    {
      const ElkStep *step = &steps[s];
      const ElkTimelineOp *op;

      if (step->op >= n_ops)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "program step %u names operator %u of %u", s,
                       step->op, n_ops);
          return FALSE;
        }
      op = &ops[step->op];
      if (step->kind == ELK_STEP_PRELOAD)
        {
          guint32 j = step->op;
          double noc, tl = elk_chip_spec_get_load_time (spec, op->hbm_bytes,
                                                        op->cold_bytes,
                                                        preload_share, &noc);
          tl = MAX (tl, op->hbm_bytes > 0 ? op->min_load_s : 0);
          ls[j] = MAX (hbm_free, last_exec_end);
          le[j] = ls[j] + tl;
          lnoc[j] = noc;
          hbm_free = le[j];
          loaded[j] = TRUE;
          issued[n_issued++] = j;
          result->hbm_busy_s += (double) op->hbm_bytes / spec->hbm_bw;
          result->noc_busy_s += noc;
          result->noc_bytes += (double) op->cold_bytes * spec->cores;
        }
      else
        {
          guint32 i = step->op;
          double start = last_exec_end, end, demand = 0;
          gint last = -1;

          if (loaded[i])
            start = MAX (start, le[i]);
          end = start + op->exec_s;
          while (first_live < n_issued && le[issued[first_live]] <= start)
            first_live++;
          for (guint k = first_live; k < n_issued; k++)
            {
              guint32 j = issued[k];
              double dur = le[j] - ls[j];
              double ov = MIN (le[j], end) - MAX (ls[j], start);
              if (ov <= 0 || dur <= 0 || lnoc[j] <= 0)
                continue;
              demand += lnoc[j] / dur * ov;
              last = (gint) k;
            }
          if (priority == ELK_TIMELINE_PRELOAD_FIRST)
            {
              double avail = (end - start) - demand;
              double stall = MAX (0, op->shift_s - avail);
              est[i] = stall;
              end += stall;
            }
          else if (last >= 0)
            {
              double excess = demand - MAX (0, op->exec_s - op->shift_s);
              if (excess > 0)
                {
                  guint32 j = issued[last];
                  double share = lnoc[j] / (le[j] - ls[j]);
                  double ext = excess / share;
                  le[j] += ext;
                  lext[j] += ext;
                  for (guint k = (guint) last + 1; k < n_issued; k++)
                    {
                      ls[issued[k]] += ext;
                      le[issued[k]] += ext;
                    }
                  hbm_free += ext;
                }
            }
          es[i] = start;
          ee[i] = end;
          last_exec_end = end;
          result->noc_busy_s += op->shift_s;
          result->noc_bytes += op->noc_bytes;
        }
    }

  /* Fig 18a breakdown: sweep the busy intervals; a stall (an execution
   * waiting for NoC time, or a preload stretched by execution traffic)
   * counts as interconnect time whatever else is running. */
  for (guint i = 0; i < n_ops; i++)
    {
      Event e[6] = {
        { es[i], EV_EXEC, +1 }, { ee[i] - est[i], EV_EXEC, -1 },
        { ee[i] - est[i], EV_STALL, +1 }, { ee[i], EV_STALL, -1 },
        { ls[i], EV_LOAD, +1 }, { le[i] - lext[i], EV_LOAD, -1 },
      };
      g_array_append_vals (events, e, 4);
      if (loaded[i])
        {
          Event x[4] = { e[4], e[5], { le[i] - lext[i], EV_STALL, +1 },
                         { le[i], EV_STALL, -1 } };
          g_array_append_vals (events, x, 4);
        }
      result->latency_s = MAX (result->latency_s, ee[i]);
      if (exec_start != NULL)
        exec_start[i] = es[i];
      if (exec_end != NULL)
        exec_end[i] = ee[i];
      if (exec_stall != NULL)
        exec_stall[i] = est[i];
    }
  g_array_sort (events, event_cmp);
  for (guint k = 0; k + 1 <= events->len; k++)
    {
      const Event *ev = &g_array_index (events, Event, k);
      double t1 = k + 1 < events->len
                    ? g_array_index (events, Event, k + 1).t : ev->t;
      double dt;

      counts[ev->kind] += ev->delta;
      dt = MIN (t1, result->latency_s) - ev->t;
      if (dt <= 0)
        continue;
      if (counts[EV_STALL] > 0)
        result->stall_s += dt;
      else if (counts[EV_LOAD] > 0 && counts[EV_EXEC] > 0)
        result->overlap_s += dt;
      else if (counts[EV_EXEC] > 0)
        result->execute_only_s += dt;
      else
        /* Nothing but the memory pipeline can hold the chip up, so a gap
         * with no interval open is preload waiting time. */
        result->preload_only_s += dt;
    }
  return TRUE;
}

/**
 * elk_timeline_run_program:
 * @spec: the chip
 * @preload_share: the chip's own cap on a preload's share of each core's
 *   port, in (0, 1] (the analytic chip's load-noc-share, 1 by default)
 * @priority: who yields on a busy interconnect (the analytic chip's
 *   noc-priority; %ELK_TIMELINE_PRELOAD_FIRST by default)
 * @program: a program of @plans' graph
 * @plans: the plan tables @program was compiled against
 * @result: (out caller-allocates): what the run measures
 * @error: return location for a #GError
 *
 * Prices @program exactly as the analytic chip does: every per-operator
 * cost from elk_program_derive() (never from what the scheduler declared
 * or estimated), each operator filled by elk_timeline_op_init_from_cost(),
 * then elk_timeline_run() forward over the program's steps.  A scheduler
 * may call it to choose among its candidates by the chip's model; the
 * chip still prices the program itself.
 *
 * Returns: %FALSE with @error set when the program does not derive (see
 *   elk_program_derive()) or a step is out of range.
 */
gboolean
elk_timeline_run_program (const ElkChipSpec *spec,
                          double preload_share,
                          ElkTimelinePriority priority,
                          const ElkProgram *program,
                          const ElkPlanSet *plans,
                          ElkTimelineResult *result,
                          GError **error)
{
  guint n = elk_graph_get_n_ops (elk_program_get_graph (program));
  guint n_steps = elk_program_get_n_steps (program);
  g_autofree ElkOpCost *costs = elk_program_derive (program, plans, error);
  g_autofree ElkTimelineOp *ops = NULL;
  g_autofree ElkStep *steps = NULL;

  if (costs == NULL)
    return FALSE;
  ops = g_new (ElkTimelineOp, n);
  for (guint i = 0; i < n; i++)
    elk_timeline_op_init_from_cost (&ops[i], &costs[i]);
  steps = g_new (ElkStep, MAX (n_steps, 1u));
  for (guint s = 0; s < n_steps; s++)
    steps[s] = *elk_program_get_step (program, s);
  return elk_timeline_run (spec, preload_share, priority, n, ops, n_steps,
                           steps, result, error);
}
