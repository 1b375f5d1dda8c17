/* elk-noc-sim-driver.c: the program driver of the noc-sim engine: the
 * rules R1-R3 that start preloads and executes, the event loop, the
 * run's set-up and its metrics (latency, utilisation, the Fig 18a
 * breakdown). */
#include "config.h"

#include "elk-noc-sim-private.h"

/* ---------------------------------------------------------------------- */
/* The program: R1-R3. */

void
elk__noc_advance (NocSim *s, double now)
{
  while (s->pc < s->n_steps && !s->exec_running)
    {
      const ElkStep *st = elk_program_get_step (s->program, s->pc);
      if (s->skipped_steps != NULL && s->skipped_steps[s->pc])
        {
          /* The routing skips it: no transfer, no execution. */
          s->pc++;
          continue;
        }
      if (st->kind == ELK_STEP_PRELOAD)
        {
          /* R2: preloads are queued in program order; R1: not before the
           * executes issued ahead of them have finished (the loop stops
           * while one runs). */
          s->issued[s->n_issued++] = st->op;
          if (s->preload_active)
            s->pq[s->pq_tail++] = st->op;
          else
            elk__noc_preload_start (s, st->op, now);
          s->pc++;
          continue;
        }
      /* R3: an execute waits for its own preload only. */
      if (s->has_preload[st->op] && !s->preload_done[st->op])
        break;
      s->pc++;
      elk__noc_exec_start (s, st->op, now);
      if (s->steady != NULL)
        elk__noc_steady_exec_started (s, st->op, now);
    }
}

typedef struct
{
  double t;
  gint kind, delta;
} Point;

static int
point_cmp (const void *a, const void *b)
{
  const Point *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  /* A closing point before an opening one at the same instant. */
  return x->delta - y->delta;
}

/* The Fig 18a breakdown from the recorded intervals: network stalls
 * first, then overlap, then execute or preload alone; instants where
 * nothing runs (data still in flight) count as network time. */
static void
breakdown (NocSim *s, double latency, ElkMetrics *m)
{
  GArray *ivs = s->intervals;
  gint cnt[4] = { 0 };
  double prev = 0;
  g_autofree Point *p = g_new (Point, 2 * ivs->len + 1);
  guint n = 0;

  for (guint i = 0; i < ivs->len; i++)
    {
      const NocInterval *iv = &g_array_index (ivs, NocInterval, i);
      p[n++] = (Point){ iv->start, iv->kind, +1 };
      p[n++] = (Point){ iv->end, iv->kind, -1 };
    }
  qsort (p, n, sizeof (Point), point_cmp);
  m->preload_only_s = m->execute_only_s = m->overlap_s = m->stall_s = 0;
  for (guint i = 0; i <= n; i++)
    {
      double t = i < n ? MIN (p[i].t, latency) : latency;
      double dt = t - prev;
      if (dt > 0)
        {
          gboolean ex = cnt[IV_EXEC] > 0, pre = cnt[IV_PRELOAD] > 0;
          gboolean se = cnt[IV_STALL_EXEC] > 0, sp = cnt[IV_STALL_PRELOAD] > 0;
          if (se || (sp && !ex) || (!ex && !pre))
            m->stall_s += dt;
          else if (ex && pre)
            m->overlap_s += dt;
          else if (ex)
            m->execute_only_s += dt;
          else
            m->preload_only_s += dt;
          prev = t;
        }
      if (i < n)
        cnt[p[i].kind] += p[i].delta;
    }
}

/* Resets the simulator for @program and checks that the program's steps
 * and plans fit the graph and the chip. */
static gboolean
start_run (NocSim *s, ElkProgram *program, GError **error)
{
  const NocConfig *c = &s->cfg;
  ElkGraph *graph = elk_program_get_graph (program);

  s->program = program;
  s->graph = graph;
  s->n_ops = elk_graph_get_n_ops (graph);
  s->n_steps = elk_program_get_n_steps (program);
  s->pc = 0;
  g_free (s->has_preload);
  g_free (s->preload_done);
  g_free (s->pq);
  s->has_preload = g_new0 (gboolean, s->n_ops);
  s->preload_done = g_new0 (gboolean, s->n_ops);
  s->pq = g_new (guint32, s->n_steps + 1);
  s->pq_head = s->pq_tail = 0;
  g_free (s->issued);
  g_free (s->pl_start);
  g_free (s->pl_end);
  s->issued = g_new (guint32, s->n_steps + 1);
  s->pl_start = g_new0 (double, s->n_ops);
  s->pl_end = g_new0 (double, s->n_ops);
  s->n_issued = s->first_live = 0;
  s->exec_stalled = FALSE;
  s->analytic_stall
      = !FX (s, NOC_FX_CONTENTION) || !FX (s, NOC_FX_PRELOAD_NETWORK);
  s->use_priv = s->priv_base != 0
                && (!FX (s, NOC_FX_CONTENTION)
                    || (!FX (s, NOC_FX_ALL_TRANSFERS)
                        && (elk_program_get_assumptions (program)
                            & ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK)));
  if ((s->cfg.effects_off
       & (NOC_FX_PRELOAD_NETWORK | NOC_FX_CONTENTION | NOC_FX_RELAYOUT
          | NOC_FX_ALL_TRANSFERS))
      && s->n_costs != s->n_ops)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'noc-sim': the effects switched off need the "
                   "analytic quantities of the program's %u operators "
                   "(from its plan tables), but %u were given",
                   s->n_ops, s->n_costs);
      return FALSE;
    }
  s->preload_active = s->exec_running = FALSE;
  s->last_end = 0;
  s->hbm_read_bytes = s->noc_bytes = 0;
  s->events = s->hops = 0;
  memset (s->xchip, 0, sizeof s->xchip);
  memset (s->kind_s, 0, sizeof s->kind_s);
  memset (s->kind_hops, 0, sizeof s->kind_hops);
  s->read_hops = 0;
  s->heap_n = 0;
  s->seq = 0;
  s->train_seq = 0;
  s->copies_left = 0;
  s->serve_ch = NONE;
  s->serve_i = 0;
  s->ring_lo = 0;
  g_assert (s->ring_n == 0);
  for (guint i = 0; i < s->n_links; i++)
    {
      s->ls[i].queue = NONE;
      s->ls[i].free_at = 0;
      s->ls[i].busy = 0;
      s->ls[i].bytes = 0;
    }
  for (guint i = 0; i < s->n_steps; i++)
    {
      const ElkStep *st = elk_program_get_step (program, i);
      if (st->op >= s->n_ops)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'noc-sim': program step %u names operator %u, "
                       "but the graph has %u",
                       i, st->op, s->n_ops);
          return FALSE;
        }
      if (st->kind == ELK_STEP_PRELOAD
          && !(s->skipped_steps != NULL && s->skipped_steps[i]))
        s->has_preload[st->op] = TRUE;
    }
  for (guint i = 0; i < s->n_ops; i++)
    {
      const ElkProgramOp *pop = elk_program_peek_op (program, i);
      if (pop->exec_plan.cores_used > c->cores
          || pop->preload_plan.cores_used > c->cores)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'noc-sim': operator '%s' is planned on %u cores, "
                       "but the chip has %u",
                       elk_graph_get_op (graph, i)->name,
                       MAX (pop->exec_plan.cores_used,
                            pop->preload_plan.cores_used),
                       c->cores);
          return FALSE;
        }
    }
  return TRUE;
}

/* Scratch, sized once per run: pieces and holders of one preload, the
 * controllers' work lists, and the ring tables of one execution. */
static void
alloc_scratch (NocSim *s)
{
  const NocConfig *c = &s->cfg;
  guint H = c->hbm_channels;
  gsize piece_cap = (gsize) ELK_MAX_OPERANDS * c->cores + 1;

  g_free (s->piece_bytes);
  g_free (s->piece_dest_off);
  g_free (s->piece_ndest);
  g_free (s->dests);
  g_free (s->ctrl_off);
  g_free (s->ctrl_list);
  g_free (s->ctrl_pos);
  g_free (s->ctrl_k);
  g_free (s->ctrl_maxk);
  g_free (s->ctrl_first);
  g_free (s->ctrl_last);
  g_free (s->nbr);
  g_free (s->holders);
  s->piece_bytes = g_new (double, piece_cap);
  s->piece_dest_off = g_new (guint32, piece_cap);
  s->piece_ndest = g_new (guint32, piece_cap);
  s->dests = g_new (guint32, piece_cap);
  s->ctrl_off = g_new (guint32, H + 1);
  s->ctrl_list = g_new (guint32, piece_cap);
  s->ctrl_pos = g_new (guint32, H);
  s->ctrl_k = g_new (guint32, H);
  s->ctrl_maxk = g_new (guint32, H);
  s->ctrl_first = g_new (double, H);
  s->ctrl_last = g_new (double, H);
  s->nbr = g_new0 (guint32, (gsize) N_RINGS * ELK_MAX_OPERANDS * c->cores);
  s->holders = g_new (guint32, c->cores);
  if (s->intervals != NULL)
    g_array_unref (s->intervals);
  s->intervals
      = g_array_sized_new (FALSE, FALSE, sizeof (NocInterval), 4 * s->n_ops);
  if (s->heap_cap < 64 + H)
    {
      s->heap_cap = 64 + H;
      s->heap = g_renew (NocEvent, s->heap, s->heap_cap);
    }
}

/* The trace's tracks: the program, the HBM controllers and a few sample
 * cores. */
static void
add_trace_tracks (NocSim *s, ElkTrace *trace)
{
  const NocConfig *c = &s->cfg;
  guint H = c->hbm_channels;

  s->trace = trace;
  s->cur_name = "preload";
  if (trace != NULL)
    {
      s->tr_exec = elk_trace_add_track (trace, "program", "execute");
      s->tr_preload = elk_trace_add_track (trace, "program", "preload");
      for (guint h = 0; h < H; h++)
        {
          g_autofree char *name = g_strdup_printf ("hbm%u", h);
          guint t = elk_trace_add_track (trace, "hbm controllers", name);
          if (h == 0)
            s->tr_ctrl0 = t;
        }
      s->n_sample = MIN (3u, c->cores);
      for (guint k = 0; k < s->n_sample; k++)
        {
          guint core = k == 0 ? 0 : k == 1 ? c->cores / 2 : c->cores - 1;
          g_autofree char *name = g_strdup_printf ("core%u", core);
          s->tr_core[k] = elk_trace_add_track (trace, "cores", name);
        }
    }
}

/* The event loop: window by window, heap events in time order, then the
 * links serve. */
static void
run_events (NocSim *s)
{
  ElkGraph *graph = s->graph;

  s->cur_w = -1;
  elk__noc_advance (s, 0);
  /* A layer that starts at time 0 has nothing before it to repeat. */
  s->steady_pending = FALSE;
  for (;;)
    {
      /* The next window with anything in it. */
      gint64 w = G_MAXINT64;
      if (s->ring_n > 0)
        w = elk__noc_ring_next (s);
      if (s->heap_n > 0)
        w = MIN (w, elk__noc_window_of (s, s->heap[0].t));
      if (w == G_MAXINT64)
        break;
      s->cur_w = w;
      elk__noc_ring_drain (s);
      do
        {
          /* Heap events of this window in time order (they may add
           * arrivals to this window), then the links serve. */
          while (s->heap_n > 0 && elk__noc_window_of (s, s->heap[0].t) <= w)
            {
              NocEvent e = elk__noc_heap_pop (s);
              s->events++;
              switch (e.kind)
                {
                case EV_HOP:
                  elk__noc_far_arrive (s, e.arg);
                  break;
                case EV_CTRL:
                  s->cur_name = "preload";
                  elk__noc_ctrl_step (s, e.arg, e.t);
                  break;
                case EV_PRELOAD_DONE:
                  elk__noc_preload_done (s, e.arg, e.t);
                  elk__noc_advance (s, e.t);
                  break;
                case EV_EXEC_ROUND:
                  s->cur_name = elk_graph_get_op (graph, e.arg)->name;
                  elk__noc_exec_round (s, e.t);
                  break;
                case EV_EXEC_DONE:
                  elk__noc_exec_done (s, e.t);
                  elk__noc_advance (s, e.t);
                  break;
                default:
                  g_assert_not_reached ();
                }
              if (G_UNLIKELY (s->steady_pending))
                {
                  /* A layer boundary: it may advance the run by whole
                   * layers, to another window. */
                  elk__noc_steady_boundary (s, e.t);
                  w = s->cur_w;
                }
            }
          elk__noc_serve_window (s);
        }
      while (s->heap_n > 0 && elk__noc_window_of (s, s->heap[0].t) <= w);
      elk__noc_bucket_clear (s, (guint32) w & (RING_N - 1));
    }
}

/* The metrics of the finished run, and the simulator's own statistics
 * into @stats (when not NULL). */
static ElkMetrics *
collect_metrics (NocSim *s, gint64 t0, NocStats *stats)
{
  const NocConfig *c = &s->cfg;
  ElkGraph *graph = s->graph;
  ElkMetrics *m;
  double latency, core_busy = 0, read_busy = 0, max_u = 0, max_r = 0;
  guint n_present = 0, max_i = 0;
  guint H = c->hbm_channels;

  latency = s->last_end;
  g_debug ("execute time by round kind: shift %.3g s, distribute %.3g s, "
           "reduce %.3g s, shuffle %.3g s, compute-only %.3g s; inter-chip "
           "bytes: shift %.3g, distribute %.3g, reduce %.3g, shuffle %.3g, "
           "preload %.3g",
           s->kind_s[0], s->kind_s[1], s->kind_s[2], s->kind_s[3], s->kind_s[4],
           s->xchip[0], s->xchip[1], s->xchip[2], s->xchip[3], s->xchip[5]);
  g_debug ("link hops by round kind: shift %" G_GUINT64_FORMAT
           ", distribute %" G_GUINT64_FORMAT ", reduce %" G_GUINT64_FORMAT
           ", shuffle %" G_GUINT64_FORMAT ", preload %" G_GUINT64_FORMAT,
           s->kind_hops[0], s->kind_hops[1], s->kind_hops[2], s->kind_hops[3],
           s->kind_hops[5]);
  for (guint i = 0; i < s->n_core_links; i++)
    if (s->links[i].present)
      {
        double u = latency > 0 ? s->ls[i].busy / latency : 0;
        n_present++;
        core_busy += s->ls[i].busy;
        if (u > max_u)
          {
            max_u = u;
            max_i = i;
          }
      }
  for (guint h = 0; h < H; h++)
    {
      double b = s->ls[s->read_base + h].busy;
      read_busy += b;
      max_r = MAX (max_r, latency > 0 ? b / latency : 0);
    }

  m = elk_metrics_new ("noc-sim: event-driven network simulator");
  m->latency_s = latency;
  m->flops = elk_graph_get_total_flops (graph);
  /* The experts the routing does not take do no arithmetic. */
  for (guint i = 0; s->skipped_steps != NULL && i < s->n_ops; i++)
    {
      gboolean taken = TRUE;
      if (elk_graph_get_op_condition (graph, i, NULL, NULL, &taken) && !taken)
        m->flops -= elk_graph_get_op (graph, i)->flops;
    }
  m->hbm_bytes = s->hbm_read_bytes;
  m->noc_bytes = s->noc_bytes;
  m->hbm_util = latency > 0 ? read_busy / (H * latency) : 0;
  m->noc_util
      = latency > 0 && n_present > 0 ? core_busy / (n_present * latency) : 0;
  m->achieved_flops = latency > 0 ? m->flops / latency : 0;
  breakdown (s, latency, m);

  if (stats != NULL)
    {
      stats->events = s->events;
      stats->hops = s->hops;
      stats->preload_hops = s->kind_hops[5] + s->read_hops;
      stats->wall_s = (g_get_monotonic_time () - t0) / 1e6;
      stats->n_links = n_present;
      stats->link_util_mean = m->noc_util;
      stats->link_util_max = max_u;
      stats->link_util_max_index = max_i;
      stats->hbm_util_mean = m->hbm_util;
      stats->hbm_util_max = max_r;
      stats->interchip_util = s->interchip != G_MAXUINT && latency > 0
                                  ? s->ls[s->interchip].busy / latency
                                  : 0;
      stats->steady_from = s->steady_from;
      stats->steady_layers = s->steady_layers;
      stats->steady_period = s->steady_period;
      stats->steady_why = s->steady_why;
    }
  return m;
}

void
elk__noc_sim_set_skipped_steps (NocSim *s, const gboolean *skipped)
{
  s->skipped_steps = skipped;
}

ElkMetrics *
elk__noc_sim_run (NocSim *s,
                  ElkProgram *program,
                  ElkTrace *trace,
                  NocStats *stats,
                  GError **error)
{
  ElkGraph *graph = elk_program_get_graph (program);
  gint64 t0 = g_get_monotonic_time ();
  ElkMetrics *m;

  if (!start_run (s, program, error))
    return NULL;
  alloc_scratch (s);
  add_trace_tracks (s, trace);
  elk__noc_steady_start (s, trace != NULL);
  if (s->skipped_steps != NULL && s->steady != NULL)
    {
      /* Layers whose routers pick different experts do not repeat. */
      elk__noc_steady_finish (s);
      s->steady_why = "conditional operators, routed per layer";
    }
  run_events (s);
  elk__noc_steady_finish (s);

  if (s->pc < s->n_steps)
    {
      const ElkStep *st = elk_program_get_step (program, s->pc);
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'noc-sim': the program stalls at step %u: execute "
                   "of '%s' waits for a preload that never comes",
                   s->pc, elk_graph_get_op (graph, st->op)->name);
      return NULL;
    }

  m = collect_metrics (s, t0, stats);
  s->trace = NULL;
  return m;
}
