/* elk-noc-sim-steady.c: steady-state layer extrapolation.
 *
 * A decode graph is dozens of identical layers, and after a few of them
 * the simulator's state at a layer boundary repeats up to a time shift:
 * the same transfers in flight at the same distances from the boundary,
 * the same queues on the links, the same preloads running and queued, the
 * same events pending.  From then on every layer takes the same time, so
 * the simulator can advance the remaining identical layers in closed form
 * and simulate only the last ones (and the operators outside the layers)
 * in full.  docs/chip-noc-sim.md, "Steady-state extrapolation", has the
 * long form.
 *
 * A layer boundary is the start of the first execute of a layer.  There
 * the simulator's state is taken as a snapshot relative to the boundary's
 * time: every time becomes a distance from it, every operator a layer and
 * an operator of it.  To make snapshots of different layers comparable
 * whatever the calendar's windows, the boundary first serves the arrivals
 * of the current window that came before it and holds back those at or
 * after it, so that the snapshot is the state "everything before the
 * boundary done, nothing after it", which does not depend on where the
 * windows fall (the windows never change results, only the order of
 * work).  When the snapshot of the layer L equals the one of layer L - p
 * (p layers, a period: 1 unless the controllers' striping by operator id
 * repeats only every few layers) at two boundaries in a row, and the
 * program's steps and plans repeat with the same period, the state
 * is advanced by as many whole periods as the program keeps repeating:
 * times by the period's length, operators by its layers, the counters
 * (link busy times and bytes, HBM and NoC bytes, hops, events, the
 * breakdown's intervals) by what one period added.  Otherwise the run
 * goes on in full, which is the fallback: a program that never repeats is
 * simulated exactly as without extrapolation. */
#include "config.h"

#include "elk-noc-sim-private.h"

/* Periods of up to PMAX layers are looked for; a snapshot is compared
 * with the ones 1..PMAX boundaries before it. */
#define PMAX 8
#define HIST (PMAX + 2)

/* Two times (relative to their boundaries) are the same when they differ
 * by less than this fraction of the boundary's time: the rounding of
 * absolute times, not a modelling tolerance. */
#define TIME_TOL 1e-12
#define VALUE_TOL 1e-12

/* Two periods (each the difference of two boundaries' absolute times) are
 * the same when they differ by at most this fraction of the period.  A
 * boundary's time ends a chain of thousands of additions through the
 * layer, so its rounding grows with the chain, not with one addition:
 * Llama2-70B decode under basic on the fig19 chip (all-to-all, 16 TB/s)
 * measures periods 7e-15 s (1.6e-11 of the period) apart at a boundary
 * time of 1.3e-3 s, which TIME_TOL (1.3e-15 s there) rejected while the
 * snapshots matched, so only a 3-layer period, whose two measurements
 * happened to round closer, was confirmed.  A difference dT between the
 * periods moves the m periods advanced by at most m dT, at most this
 * fraction of the time advanced, which is the bound to which
 * tests/noc-sim/test-noc-sim-steady.c holds the results. */
#define PERIOD_TOL 1e-9

typedef struct _NocSteady NocSteady;

typedef struct
{
  gint layer;
  double t;
  guint pc;
  guint n_intervals, n_issued, first_live, pq_head, pq_tail;
  guint64 events, hops, read_hops, kind_hops[6];
  double xchip[6], kind_s[6], hbm_read_bytes, noc_bytes;
  double *busy, *bytes; /* per link */
  GArray *times;        /* double, relative to t */
  GArray *vals;         /* double */
  GArray *disc;         /* guint32, compared exactly */
  GArray *ops;          /* guint32 operator ids, compared through the map */
  gboolean match[PMAX + 1];
  double period[PMAX + 1];
} NocSnap;

struct _NocSteady
{
  guint n_layers, stride, hc;
  gboolean by_op_id;     /* the controllers' striping depends on the op id */
  guint32 *preload_step; /* per op: its preload step, or G_MAXUINT32 */
  gint last_layer;
  NocSnap *hist[HIST]; /* oldest first */
  guint n_hist;
  guint8 *in_use; /* per pool slot */
  guint in_use_cap;
  GArray *slots; /* pool slots of the pending transfers, by seq */
};

/* ---------------------------------------------------------------------- */
/* Operators and the period's map. */

static gint
op_layer (const NocSim *s, guint op)
{
  return elk_graph_get_op (s->graph, op)->layer;
}

/* The operator @dl layers after @op (itself outside the layers), or
 * G_MAXUINT32 when there is none. */
static guint32
op_map (const NocSim *s, guint32 op, guint dl)
{
  const NocSteady *st = s->steady;
  gint l = op_layer (s, op);
  guint64 o;

  if (l < 0 || dl == 0)
    return op;
  o = op + (guint64) dl * st->stride;
  if ((guint) l + dl >= st->n_layers || o >= s->n_ops
      || op_layer (s, (guint) o) != l + (gint) dl)
    return G_MAXUINT32;
  return (guint32) o;
}

static gboolean
plan_equal (const ElkPlan *a, const ElkPlan *b)
{
  return a->n_dims == b->n_dims && a->n_operands == b->n_operands
         && memcmp (a->spatial, b->spatial, sizeof a->spatial) == 0
         && memcmp (a->temporal, b->temporal, sizeof a->temporal) == 0
         && a->cores_used == b->cores_used && a->steps == b->steps
         && a->hot_bytes == b->hot_bytes && a->cold_bytes == b->cold_bytes
         && a->compute_s == b->compute_s && a->shift_s == b->shift_s
         && a->shuffle_s == b->shuffle_s && a->time_s == b->time_s
         && a->noc_bytes == b->noc_bytes
         && memcmp (a->replicas, b->replicas, sizeof a->replicas) == 0
         && memcmp (a->operand_bytes, b->operand_bytes, sizeof a->operand_bytes)
                == 0
         && a->shift_events == b->shift_events
         && a->shift_bytes == b->shift_bytes;
}

/* Whether operators @a and @b lower to the same traffic: everything the
 * lowering (elk-noc-sim-lower.c) reads of an operator, its tensors, its
 * plans and its analytic quantities, and its id modulo the controllers
 * where the pieces are striped by id. */
static gboolean
op_equiv (const NocSim *s, guint32 a, guint32 b)
{
  const NocSteady *st = s->steady;
  const ElkOp *x, *y;
  const ElkProgramOp *px, *py;

  if (a == b)
    return TRUE;
  if (a >= s->n_ops || b >= s->n_ops)
    return FALSE;
  x = elk_graph_get_op (s->graph, a);
  y = elk_graph_get_op (s->graph, b);
  if (x->kind != y->kind || x->n_dims != y->n_dims
      || x->n_operands != y->n_operands || x->flops != y->flops
      || memcmp (x->extents, y->extents, sizeof x->extents) != 0)
    return FALSE;
  for (guint v = 0; v < x->n_operands && v < ELK_MAX_OPERANDS; v++)
    {
      const ElkTensor *tx = elk_graph_get_tensor (s->graph, x->tensors[v]);
      const ElkTensor *ty = elk_graph_get_tensor (s->graph, y->tensors[v]);
      if (x->access[v].n_axes != y->access[v].n_axes
          || memcmp (x->access[v].dims, y->access[v].dims,
                     sizeof x->access[v].dims)
                 != 0
          || tx->origin != ty->origin || tx->dtype != ty->dtype
          || tx->bytes != ty->bytes)
        return FALSE;
    }
  px = elk_program_peek_op (s->program, a);
  py = elk_program_peek_op (s->program, b);
  if (!plan_equal (&px->exec_plan, &py->exec_plan)
      || !plan_equal (&px->preload_plan, &py->preload_plan)
      || px->preload_share != py->preload_share
      || s->has_preload[a] != s->has_preload[b])
    return FALSE;
  if (st->by_op_id && a % st->hc != b % st->hc)
    return FALSE;
  if (s->costs != NULL && s->n_costs == s->n_ops
      && memcmp (&s->costs[a], &s->costs[b], sizeof (NocOpCost)) != 0)
    return FALSE;
  return TRUE;
}

/* ---------------------------------------------------------------------- */
/* Set-up. */

void
elk__noc_steady_start (NocSim *s, gboolean tracing)
{
  const NocConfig *c = &s->cfg;
  NocSteady *st;
  guint n_layers = elk_graph_get_n_layers (s->graph);
  guint first0 = G_MAXUINT, first1 = G_MAXUINT;

  s->steady = NULL;
  s->steady_pending = FALSE;
  s->steady_from = -1;
  s->steady_layers = s->steady_period = 0;
  if (c->steady_off)
    {
      s->steady_why = "steady-state off";
      return;
    }
  if (tracing)
    {
      /* A trace shows every layer's spans, so every layer runs. */
      s->steady_why = "trace recorded";
      return;
    }
  if (n_layers < 3)
    {
      s->steady_why = "fewer than 3 repeated layers";
      return;
    }
  for (guint i = 0; i < s->n_ops; i++)
    {
      gint l = op_layer (s, i);
      if (l == 0 && first0 == G_MAXUINT)
        first0 = i;
      if (l == 1 && first1 == G_MAXUINT)
        first1 = i;
    }
  if (first0 == G_MAXUINT || first1 == G_MAXUINT || first1 <= first0)
    {
      s->steady_why = "layers not in operator order";
      return;
    }
  s->steady_why = "not periodic";
  st = g_new0 (NocSteady, 1);
  st->n_layers = n_layers;
  st->stride = first1 - first0;
  st->hc = MAX (1u, s->hc);
  /* elk__noc_preload_start stripes the pieces over a chip's controllers
   * starting at the operator's id unless it takes the nearest
   * controller or there is one pool of controllers. */
  st->by_op_id = FX (s, NOC_FX_HBM_CONTROLLERS)
                 && !(c->interleave == NOC_INTERLEAVE_NEAREST
                      && c->topology != ELK_TOPOLOGY_ALL_TO_ALL);
  st->preload_step = g_new (guint32, s->n_ops);
  for (guint i = 0; i < s->n_ops; i++)
    st->preload_step[i] = G_MAXUINT32;
  for (guint i = 0; i < s->n_steps; i++)
    {
      const ElkStep *step = elk_program_get_step (s->program, i);
      if (step->kind == ELK_STEP_PRELOAD)
        st->preload_step[step->op] = i;
    }
  g_debug ("steady state: %u layers of %u operators, %u controllers per "
           "chip%s",
           st->n_layers, st->stride, st->hc,
           st->by_op_id ? ", pieces striped by operator id" : "");
  st->last_layer = -1;
  st->slots = g_array_new (FALSE, FALSE, sizeof (guint32));
  s->steady = st;
}

static void
snap_free (NocSnap *n)
{
  if (n == NULL)
    return;
  g_free (n->busy);
  g_free (n->bytes);
  g_array_unref (n->times);
  g_array_unref (n->vals);
  g_array_unref (n->disc);
  g_array_unref (n->ops);
  g_free (n);
}

static void
hist_clear (NocSteady *st)
{
  for (guint i = 0; i < st->n_hist; i++)
    snap_free (st->hist[i]);
  st->n_hist = 0;
}

void
elk__noc_steady_finish (NocSim *s)
{
  NocSteady *st = s->steady;

  if (st == NULL)
    return;
  hist_clear (st);
  g_free (st->preload_step);
  g_free (st->in_use);
  g_array_unref (st->slots);
  g_free (st);
  s->steady = NULL;
}

/* An execute started: the first of a layer opens a boundary, taken when
 * the event that started it has been handled. */
void
elk__noc_steady_exec_started (NocSim *s, guint op_id, double now)
{
  NocSteady *st = s->steady;
  gint l = op_layer (s, op_id);

  (void) now;
  if (l >= 0 && l != st->last_layer)
    s->steady_pending = TRUE;
  st->last_layer = l;
}

/* ---------------------------------------------------------------------- */
/* The boundary: the current window split at the boundary's time. */

/* Holds back the current window's arrivals at or after @t: out of their
 * links' queues, marked served, their slots appended to @held. */
static void
hold_back (NocSim *s, double t, GArray *held)
{
  NocBucket *B;
  guint n_held = 0;

  if (s->cur_w < 0)
    return;
  B = &s->bucket[(guint32) s->cur_w & (RING_N - 1)];
  for (guint32 ch = B->first; ch != NONE; ch = s->chunk_next[ch])
    {
      guint32 n = ch == B->last ? B->fill : CHUNK;
      for (guint32 i = 0; i < n; i++)
        {
          NocArrival *a = &s->arr[(gsize) ch * CHUNK + i];
          a->pad = a->next != SERVED && s->pool[a->slot].head >= t;
          n_held += a->pad;
        }
    }
  if (n_held == 0)
    return;
  for (guint32 ch = B->first; ch != NONE; ch = s->chunk_next[ch])
    {
      guint32 n = ch == B->last ? B->fill : CHUNK;
      for (guint32 i = 0; i < n; i++)
        {
          guint32 e = ch * CHUNK + i, head = NONE, *tailp = &head;
          NocLinkState *l;
          if (!s->arr[e].pad)
            continue;
          /* The link's queue without the held arrivals, in its order. */
          l = &s->ls[s->arr[e].link];
          for (guint32 x = l->queue, nx; x != NONE; x = nx)
            {
              nx = s->arr[x].next;
              if (!s->arr[x].pad)
                {
                  *tailp = x;
                  tailp = &s->arr[x].next;
                }
            }
          *tailp = NONE;
          l->queue = head;
        }
    }
  for (guint32 ch = B->first; ch != NONE; ch = s->chunk_next[ch])
    {
      guint32 n = ch == B->last ? B->fill : CHUNK;
      for (guint32 i = 0; i < n; i++)
        {
          NocArrival *a = &s->arr[(gsize) ch * CHUNK + i];
          if (a->pad)
            {
              a->next = SERVED;
              a->pad = 0;
              g_array_append_val (held, a->slot);
            }
        }
    }
}

static int
slot_seq_cmp (const void *a, const void *b, void *data)
{
  const NocSim *s = data;
  guint64 x = s->pool[*(const guint32 *) a].seq;
  guint64 y = s->pool[*(const guint32 *) b].seq;

  return x < y ? -1 : x > y;
}

/* The pool slots of all transfers in flight, in injection order. */
static void
pending_slots (NocSim *s, GArray *out)
{
  NocSteady *st = s->steady;

  if (st->in_use_cap < s->pool_cap)
    {
      g_free (st->in_use);
      st->in_use = g_new (guint8, s->pool_cap);
      st->in_use_cap = s->pool_cap;
    }
  g_array_set_size (out, 0);
  if (s->pool_cap == 0)
    return;
  elk__noc_pool_in_use (s, st->in_use);
  for (guint32 i = 0; i < s->pool_cap; i++)
    if (st->in_use[i])
      g_array_append_val (out, i);
  g_qsort_with_data (out->data, out->len, sizeof (guint32), slot_seq_cmp, s);
}

/* Files transfer @slot again (its arrival was taken out of the calendar):
 * a copy into a free slot of the pool, maybe @slot itself. */
static void
refile (NocSim *s, guint32 slot, double shift)
{
  NocTrain t = s->pool[slot];

  t.head += shift;
  t.tail += shift;
  elk__noc_train_release (s, slot);
  elk__noc_train_inject (s, &t);
}

/* ---------------------------------------------------------------------- */
/* Snapshots. */

static void
put_t (NocSnap *n, double t)
{
  double r = t - n->t;
  g_array_append_val (n->times, r);
}

static void
put_v (NocSnap *n, double v)
{
  g_array_append_val (n->vals, v);
}

static void
put_d (NocSnap *n, guint32 d)
{
  g_array_append_val (n->disc, d);
}

static void
put_op (NocSnap *n, guint32 op)
{
  g_array_append_val (n->ops, op);
}

static int
event_cmp (const void *a, const void *b)
{
  const NocEvent *x = a, *y = b;

  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The driver's and the current preload's and execute's state. */
static void
snap_driver (NocSim *s, NocSnap *n)
{
  const NocConfig *c = &s->cfg;

  put_d (n, s->preload_active);
  put_d (n, s->exec_running);
  put_d (n, s->exec_stalled);
  put_d (n, s->pq_tail - s->pq_head);
  put_t (n, s->last_end);
  for (guint i = s->pq_head; i < s->pq_tail; i++)
    put_op (n, s->pq[i]);
  if (s->analytic_stall)
    {
      put_d (n, s->n_issued - s->first_live);
      for (guint k = s->first_live; k < s->n_issued; k++)
        {
          guint j = s->issued[k];
          put_op (n, j);
          put_d (n, s->preload_done[j]);
          if (s->preload_done[j] || (s->preload_active && s->preload_op == j))
            put_t (n, s->pl_start[j]);
          if (s->preload_done[j])
            put_t (n, s->pl_end[j]);
        }
    }
  /* Preloaded operators still to execute, by their distance in steps. */
  for (guint i = s->pc; i < s->n_steps; i++)
    {
      const ElkStep *step = elk_program_get_step (s->program, i);
      if (step->kind == ELK_STEP_EXECUTE && s->has_preload[step->op]
          && s->preload_done[step->op])
        {
          put_d (n, i - s->pc);
          put_op (n, step->op);
        }
    }
  if (s->preload_active)
    {
      put_op (n, s->preload_op);
      put_t (n, s->preload_start);
      put_t (n, s->preload_max_arrive);
      put_v (n, s->preload_hbm_ideal);
      put_v (n, s->preload_rate);
      put_d (n, s->ctrl_active);
      put_d (n, (guint32) s->copies_left);
      if (FX (s, NOC_FX_PRELOAD_NETWORK))
        {
          guint H = c->hbm_channels;
          put_d (n, s->n_pieces);
          for (guint p = 0; p < s->n_pieces; p++)
            {
              put_v (n, s->piece_bytes[p]);
              put_d (n, s->piece_ndest[p]);
              for (guint32 i = 0; i < s->piece_ndest[p]; i++)
                put_d (n, s->dests[s->piece_dest_off[p] + i]);
              put_d (n, s->ctrl_list[p]);
            }
          for (guint h = 0; h <= H; h++)
            put_d (n, s->ctrl_off[h]);
          for (guint h = 0; h < H; h++)
            {
              put_d (n, s->ctrl_pos[h]);
              put_d (n, s->ctrl_k[h]);
              put_d (n, s->ctrl_maxk[h]);
              put_t (n, s->ctrl_first[h]);
              put_t (n, s->ctrl_last[h]);
            }
        }
    }
  if (s->exec_running)
    {
      put_op (n, s->exec_op);
      put_t (n, s->exec_start);
      put_d (n, s->round_i);
      put_d (n, s->n_rounds);
      put_d (n, (guint32) s->round_left);
      put_d (n, s->exec_cores);
      put_t (n, s->round_now);
      put_t (n, s->round_barrier);
      put_v (n, s->round_ideal);
      for (guint i = 0; i < s->n_rounds; i++)
        {
          const NocRound *r = &s->rounds[i];
          put_v (n, r->compute);
          put_v (n, r->bytes);
          put_v (n, r->sync);
          put_d (n, r->operand | (guint32) r->ring << 8
                        | (guint32) r->kind << 16 | (guint32) r->stretch << 24);
          put_d (n, r->fanout);
        }
    }
}

/* The calendar: pending events (transfers apart) in the order they would
 * be taken, and the transfers in flight in injection order. */
static void
snap_calendar (NocSim *s, NocSnap *n, const GArray *slots)
{
  g_autofree NocEvent *ev = g_new (NocEvent, s->heap_n + 1);
  guint ne = 0;

  for (guint i = 0; i < s->heap_n; i++)
    if (s->heap[i].kind != EV_HOP)
      ev[ne++] = s->heap[i];
  qsort (ev, ne, sizeof *ev, event_cmp);
  put_d (n, ne);
  for (guint i = 0; i < ne; i++)
    {
      put_t (n, ev[i].t);
      put_d (n, ev[i].kind);
      if (ev[i].kind == EV_CTRL)
        put_d (n, ev[i].arg);
      else
        put_op (n, ev[i].arg);
    }
  put_d (n, slots->len);
  for (guint i = 0; i < slots->len; i++)
    {
      const NocTrain *t = &s->pool[g_array_index (slots, guint32, i)];
      put_t (n, t->head);
      put_t (n, t->tail);
      put_v (n, t->ser);
      put_v (n, t->bytes);
      put_d (n, t->link);
      put_d (n, t->dst);
      put_d (n, t->hops | (guint32) t->kind << 16 | (guint32) t->capped << 24);
      put_d (n, t->crossed);
      /* All-to-all routes by the link and the destination alone: the
       * lowering leaves the router fields and the stage unset there
       * (whatever its stack held), so they would make equal states look
       * different. */
      if (s->cfg.topology != ELK_TOPOLOGY_ALL_TO_ALL)
        {
          put_d (n, t->chip | (guint32) t->r << 16);
          put_d (n, t->c | (guint32) t->tr << 16);
          put_d (n, t->tc | (guint32) t->stage << 16);
        }
    }
}

static NocSnap *
snap_take (NocSim *s, double t, gint layer, const GArray *slots)
{
  NocSnap *n = g_new0 (NocSnap, 1);

  n->layer = layer;
  n->t = t;
  n->pc = s->pc;
  n->n_intervals = s->intervals->len;
  n->n_issued = s->n_issued;
  n->first_live = s->first_live;
  n->pq_head = s->pq_head;
  n->pq_tail = s->pq_tail;
  n->events = s->events;
  n->hops = s->hops;
  n->read_hops = s->read_hops;
  memcpy (n->kind_hops, s->kind_hops, sizeof n->kind_hops);
  memcpy (n->xchip, s->xchip, sizeof n->xchip);
  memcpy (n->kind_s, s->kind_s, sizeof n->kind_s);
  n->hbm_read_bytes = s->hbm_read_bytes;
  n->noc_bytes = s->noc_bytes;
  n->busy = g_new (double, s->n_links);
  n->bytes = g_new (double, s->n_links);
  n->times = g_array_sized_new (FALSE, FALSE, sizeof (double), s->n_links + 64);
  n->vals = g_array_new (FALSE, FALSE, sizeof (double));
  n->disc = g_array_new (FALSE, FALSE, sizeof (guint32));
  n->ops = g_array_new (FALSE, FALSE, sizeof (guint32));
  for (guint i = 0; i < s->n_links; i++)
    {
      /* Nothing pending is earlier than the boundary, so a link free
       * before it is as good as free at it. */
      n->busy[i] = s->ls[i].busy;
      n->bytes[i] = s->ls[i].bytes;
      put_t (n, MAX (s->ls[i].free_at, t));
    }
  snap_driver (s, n);
  snap_calendar (s, n, slots);
  return n;
}

static gboolean
near (double a, double b, double tol)
{
  return a == b || fabs (a - b) <= tol;
}

/* Whether snapshot @b is snapshot @a advanced by @dl layers. */
static gboolean
snap_equal (const NocSim *s, const NocSnap *a, const NocSnap *b, guint dl)
{
  double ttol = TIME_TOL * MAX (b->t, 1e-9);

  if (a->times->len != b->times->len || a->vals->len != b->vals->len
      || a->disc->len != b->disc->len || a->ops->len != b->ops->len)
    return FALSE;
  if (a->disc->len > 0
      && memcmp (a->disc->data, b->disc->data, a->disc->len * sizeof (guint32))
             != 0)
    return FALSE;
  for (guint i = 0; i < a->ops->len; i++)
    {
      guint32 x = g_array_index (a->ops, guint32, i);
      guint32 y = g_array_index (b->ops, guint32, i);
      if (op_map (s, x, dl) != y || !op_equiv (s, x, y))
        return FALSE;
    }
  for (guint i = 0; i < a->vals->len; i++)
    {
      double x = g_array_index (a->vals, double, i);
      double y = g_array_index (b->vals, double, i);
      if (!near (x, y, VALUE_TOL * MAX (fabs (x), fabs (y))))
        return FALSE;
    }
  for (guint i = 0; i < a->times->len; i++)
    if (!near (g_array_index (a->times, double, i),
               g_array_index (b->times, double, i), ttol))
      return FALSE;
  return TRUE;
}

/* ---------------------------------------------------------------------- */
/* The jump. */

/* Whole periods (of @p layers and @P steps) the program repeats after
 * boundary @L: its steps and their operators, and the operators of @L's
 * snapshot, each like the one a period earlier. */
static guint
periods_ahead (const NocSim *s, const NocSnap *L, guint p, guint P)
{
  guint m = 0;

  for (;;)
    {
      guint lo = L->pc + m * P, hi = lo + P;
      if (hi > s->n_steps)
        return m;
      for (guint i = lo; i < hi; i++)
        {
          const ElkStep *x = elk_program_get_step (s->program, i - P);
          const ElkStep *y = elk_program_get_step (s->program, i);
          if (x->kind != y->kind || op_layer (s, x->op) < 0
              || op_map (s, x->op, p) != y->op || !op_equiv (s, x->op, y->op))
            return m;
        }
      for (guint i = 0; i < L->ops->len; i++)
        {
          guint32 o = g_array_index (L->ops, guint32, i);
          guint32 a = op_map (s, o, m * p), b = op_map (s, o, (m + 1) * p);
          if (a == G_MAXUINT32 || b == G_MAXUINT32 || !op_equiv (s, a, b))
            return m;
        }
      m++;
    }
}

/* Preload states after the jump: an operator's is the one of the
 * operator @dl layers before it (done, when that is before the first
 * layer). */
static void
jump_preloads (NocSim *s, guint dl, double D, guint new_pc)
{
  NocSteady *st = s->steady;
  g_autofree gboolean *done
      = g_memdup2 (s->preload_done, sizeof (gboolean) * s->n_ops);
  g_autofree double *ps = g_memdup2 (s->pl_start, sizeof (double) * s->n_ops);
  g_autofree double *pe = g_memdup2 (s->pl_end, sizeof (double) * s->n_ops);

  for (guint o = 0; o < s->n_ops; o++)
    {
      gint l = op_layer (s, o);
      guint32 src;
      if (l < 0 || st->preload_step[o] >= new_pc)
        continue;
      if ((guint) l < dl)
        {
          s->preload_done[o] = TRUE;
          continue;
        }
      src = o - dl * st->stride;
      if (op_layer (s, src) != l - (gint) dl)
        continue;
      s->preload_done[o] = done[src];
      if (done[src] || (s->preload_active && s->preload_op == src))
        {
          s->pl_start[o] = ps[src] + D;
          s->pl_end[o] = done[src] ? pe[src] + D : 0;
        }
      else
        s->pl_start[o] = s->pl_end[o] = 0;
    }
}

/* Moves the list @a[lo..hi) by @d positions, mapping its operators. */
static void
jump_list (NocSim *s, guint32 *a, guint lo, guint hi, guint d, guint dl)
{
  for (guint i = hi; i-- > lo;)
    a[i + d] = op_map (s, a[i], dl);
}

/* The pending events and transfers, moved by @D and @dl layers, filed
 * again around the boundary's new time @t. */
static void
jump_calendar (NocSim *s, double D, guint dl, double t, const GArray *slots)
{
  g_autofree NocEvent *ev = g_new (NocEvent, s->heap_n + 1);
  guint ne = 0;

  for (guint i = 0; i < s->heap_n; i++)
    if (s->heap[i].kind != EV_HOP)
      {
        NocEvent e = s->heap[i];
        e.t += D;
        if (e.kind != EV_CTRL)
          e.arg = op_map (s, e.arg, dl);
        ev[ne++] = e;
      }
  qsort (ev, ne, sizeof *ev, event_cmp);
  for (guint wi = 0; wi < RING_N / 64; wi++)
    while (s->bmap[wi] != 0)
      elk__noc_bucket_clear (s,
                             wi * 64 + (guint32) __builtin_ctzll (s->bmap[wi]));
  s->ring_n = 0;
  s->heap_n = 0;
  s->cur_w = elk__noc_window_of (s, t);
  s->ring_lo = s->cur_w + 1;
  for (guint i = 0; i < ne; i++)
    elk__noc_heap_push (s, ev[i].t, ev[i].kind, ev[i].arg);
  for (guint i = 0; i < slots->len; i++)
    refile (s, g_array_index (slots, guint32, i), D);
}

/* Advances the state of boundary @L by @m periods of snapshot @K to @L. */
static void
jump (
    NocSim *s, const NocSnap *K, const NocSnap *L, guint m, const GArray *slots)
{
  double T = L->t - K->t, D = m * T;
  guint p = (guint) (L->layer - K->layer), dl = m * p;
  guint dP = m * (L->pc - K->pc);
  guint dq = L->pq_head - K->pq_head, di = L->n_issued - K->n_issued;
  guint df = L->first_live - K->first_live;

  jump_preloads (s, dl, D, L->pc + dP);
  jump_list (s, s->pq, s->pq_head, s->pq_tail, m * dq, dl);
  s->pq_head += m * dq;
  s->pq_tail += m * dq;
  if (s->analytic_stall)
    jump_list (s, s->issued, s->first_live, s->n_issued, m * di, dl);
  s->n_issued += m * di;
  s->first_live += m * df;
  s->pc += dP;
  if (s->exec_running)
    s->exec_op = op_map (s, s->exec_op, dl);
  if (s->preload_active)
    s->preload_op = op_map (s, s->preload_op, dl);
  s->exec_start += D;
  s->preload_start += D;
  s->preload_max_arrive += D;
  s->last_end += D;
  s->round_now += D;
  s->round_barrier += D;
  for (guint h = 0; h < s->cfg.hbm_channels; h++)
    {
      s->ctrl_first[h] += D;
      s->ctrl_last[h] += D;
    }
  s->cur_name = elk_graph_get_op (s->graph, s->exec_op)->name;

  /* Counters: what one period added, m times. */
  for (guint i = 0; i < s->n_links; i++)
    {
      s->ls[i].free_at += D;
      s->ls[i].busy += m * (L->busy[i] - K->busy[i]);
      s->ls[i].bytes += m * (L->bytes[i] - K->bytes[i]);
    }
  s->events += m * (L->events - K->events);
  s->hops += m * (L->hops - K->hops);
  s->read_hops += m * (L->read_hops - K->read_hops);
  for (guint k = 0; k < 6; k++)
    {
      s->kind_hops[k] += m * (L->kind_hops[k] - K->kind_hops[k]);
      s->xchip[k] += m * (L->xchip[k] - K->xchip[k]);
      s->kind_s[k] += m * (L->kind_s[k] - K->kind_s[k]);
    }
  s->hbm_read_bytes += m * (L->hbm_read_bytes - K->hbm_read_bytes);
  s->noc_bytes += m * (L->noc_bytes - K->noc_bytes);
  /* The breakdown's intervals of one period, repeated. */
  for (guint j = 1; j <= m; j++)
    for (guint i = K->n_intervals; i < L->n_intervals; i++)
      {
        NocInterval iv = g_array_index (s->intervals, NocInterval, i);
        iv.start += j * T;
        iv.end += j * T;
        g_array_append_val (s->intervals, iv);
      }
  jump_calendar (s, D, dl, L->t + D, slots);
}

/* ---------------------------------------------------------------------- */

void
elk__noc_steady_boundary (NocSim *s, double now)
{
  NocSteady *st = s->steady;
  g_autoptr (GArray) held = g_array_new (FALSE, FALSE, sizeof (guint32));
  NocSnap *n;
  guint m = 0, best_p = 0;

  s->steady_pending = FALSE;
  /* Everything before the boundary done, nothing after it. */
  hold_back (s, now, held);
  elk__noc_serve_window (s);
  pending_slots (s, st->slots);
  n = snap_take (s, now, st->last_layer, st->slots);

  for (guint p = 1; p <= PMAX && p <= st->n_hist; p++)
    {
      const NocSnap *k = st->hist[st->n_hist - p];
      if (n->layer - k->layer != (gint) p || n->pc <= k->pc)
        continue;
      n->match[p] = snap_equal (s, k, n, p);
      n->period[p] = n->t - k->t;
    }
  /* Confirmed: the same period at this boundary and the one before. */
  if (st->n_hist > 0)
    {
      const NocSnap *prev = st->hist[st->n_hist - 1];
      for (guint p = 1; p <= PMAX && best_p == 0; p++)
        if (n->match[p] && prev->match[p] && n->period[p] > 0
            && near (n->period[p], prev->period[p], PERIOD_TOL * n->period[p]))
          {
            const NocSnap *k = st->hist[st->n_hist - p];
            m = periods_ahead (s, n, p, n->pc - k->pc);
            if (m > 0)
              best_p = p;
          }
    }
  if (best_p > 0)
    {
      const NocSnap *k = st->hist[st->n_hist - best_p];
      g_debug ("noc-sim: layers %d to %d repeat layers %d to %d (period %u, "
               "%.6g s); %u layers advanced in closed form",
               n->layer + 1, n->layer + (gint) (m * best_p), k->layer + 1,
               n->layer, best_p, n->period[best_p], m * best_p);
      if (s->steady_from < 0)
        s->steady_from = n->layer;
      s->steady_layers += m * best_p;
      s->steady_period = best_p;
      s->steady_why = NULL;
      jump (s, k, n, m, st->slots);
      snap_free (n);
      hist_clear (st);
      st->last_layer = op_layer (s, s->exec_op);
      return;
    }
  for (guint i = 0; i < held->len; i++)
    refile (s, g_array_index (held, guint32, i), 0);
  if (st->n_hist == HIST)
    {
      snap_free (st->hist[0]);
      memmove (st->hist, st->hist + 1, (HIST - 1) * sizeof (NocSnap *));
      st->n_hist--;
    }
  st->hist[st->n_hist++] = n;
}
