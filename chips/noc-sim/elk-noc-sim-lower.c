/* elk-noc-sim-lower.c: how a program's operators become network
 * traffic: the layouts of tiles on cores and their rings, preloads
 * (controller reads and copies to the holders) and executions
 * (rounds of compute, shifts, distribution, reduction and shuffles). */
#include "config.h"

#include "elk-noc-sim-private.h"

/* ---------------------------------------------------------------------- */
/* Layouts and rings. */

static void
layout_init (NocLayout *L,
             const ElkGraph *graph,
             guint op_id,
             const ElkPlan *plan,
             const ElkPlan *hot)
{
  const ElkOp *op = elk_graph_get_op (graph, op_id);
  guint n = 0;
  guint32 rot = 0;

  memset (L, 0, sizeof (*L));
  L->n_dims = plan->n_dims;
  L->n_operands = MIN (plan->n_operands, op->n_operands);
  L->cores_used = 1;
  for (guint d = 0; d < L->n_dims; d++)
    {
      L->spatial[d] = MAX (1u, plan->spatial[d]);
      L->cores_used *= L->spatial[d];
      for (guint v = 0; v < hot->n_operands; v++)
        if (hot->temporal[d][v] > 1)
          rot |= 1u << d;
    }
  for (guint v = 0; v < L->n_operands; v++)
    for (guint a = 0; a < op->access[v].n_axes; a++)
      for (guint k = 0; k < 2; k++)
        if (op->access[v].dims[a][k] >= 0)
          L->mask[v] |= 1u << op->access[v].dims[a][k];
  /* Rotating dimensions vary fastest, so that ring neighbours are
   * neighbouring cores; then the reduction dimensions (not indexed by the
   * output), so that partial sums are reduced among nearby cores, on one
   * chip; the others follow in row-major order. */
  for (guint d = L->n_dims; d-- > 0;)
    if (rot & (1u << d))
      L->order[n++] = (guint8) d;
  for (guint d = L->n_dims; d-- > 0;)
    if (!(rot & (1u << d)) && !(L->mask[0] & (1u << d)))
      L->order[n++] = (guint8) d;
  for (guint d = L->n_dims; d-- > 0;)
    if (!(rot & (1u << d)) && (L->mask[0] & (1u << d)))
      L->order[n++] = (guint8) d;
}

static inline void
layout_split (const NocLayout *L, guint32 core, guint32 *idx)
{
  for (guint k = 0; k < L->n_dims; k++)
    {
      guint d = L->order[k];
      idx[d] = core % L->spatial[d];
      core /= L->spatial[d];
    }
}

static inline guint32
layout_join (const NocLayout *L, const guint32 *idx)
{
  guint32 core = 0;
  for (guint k = L->n_dims; k-- > 0;)
    {
      guint d = L->order[k];
      core = core * L->spatial[d] + idx[d];
    }
  return core;
}

/* The index of @core inside operand @v's replica group (the cores that
 * differ only in dimensions @v does not index), and the group's size. */
static inline guint32
replica_index (const NocLayout *L, guint v, const guint32 *idx, guint32 *size)
{
  guint32 j = 0, mul = 1;
  for (guint k = 0; k < L->n_dims; k++)
    {
      guint d = L->order[k];
      if (!(L->mask[v] & (1u << d)))
        {
          j += idx[d] * mul;
          mul *= L->spatial[d];
        }
    }
  *size = mul;
  return j;
}

static inline void
replica_set (const NocLayout *L, guint v, guint32 *idx, guint32 j)
{
  for (guint k = 0; k < L->n_dims; k++)
    {
      guint d = L->order[k];
      if (!(L->mask[v] & (1u << d)))
        {
          idx[d] = j % L->spatial[d];
          j /= L->spatial[d];
        }
    }
}

/* Successors inside replica groups: positions j = base + stride * p,
 * p = 0..size-1.  The first @n_red positions pass to the next of them (p
 * + 1 modulo @n_red), the others to the first, so that following the
 * table @n_red times from any position visits each of the first @n_red
 * exactly once: with @n_red = @size a ring, with fewer an incast into
 * the first @n_red. */
static void
incast_fill (const NocLayout *L,
             guint v,
             guint stride,
             guint size,
             guint n_red,
             guint32 *out)
{
  for (guint32 c = 0; c < L->cores_used; c++)
    {
      guint32 idx[ELK_MAX_DIMS], R, j, block, pos, nj;
      layout_split (L, c, idx);
      j = replica_index (L, v, idx, &R);
      block = stride * size;
      if (size <= 1 || block == 0 || block > R)
        {
          out[c] = c;
          continue;
        }
      pos = (j % block) / stride;
      nj = j - pos * stride + (pos < n_red ? (pos + 1) % n_red : 0) * stride;
      if (nj >= R)
        nj = j;
      replica_set (L, v, idx, nj);
      out[c] = layout_join (L, idx);
    }
}

/* Ring neighbours inside replica groups: position p passes to p + 1. */
static void
ring_fill (const NocLayout *L, guint v, guint stride, guint size, guint32 *out)
{
  incast_fill (L, v, stride, size, size, out);
}

static guint32
temporal_product (const ElkPlan *p, guint v)
{
  guint32 t = 1;
  for (guint d = 0; d < p->n_dims; d++)
    t *= MAX (1u, p->temporal[d][v]);
  return t;
}

static gboolean
same_spatial (const ElkPlan *a, const ElkPlan *b)
{
  if (a->n_dims != b->n_dims)
    return FALSE;
  for (guint d = 0; d < a->n_dims; d++)
    if (a->spatial[d] != b->spatial[d])
      return FALSE;
  return TRUE;
}

static gboolean
is_hbm_operand (const ElkGraph *graph, const ElkOp *op, guint v)
{
  const ElkTensor *t = elk_graph_get_tensor (graph, op->tensors[v]);
  return t->origin == ELK_TENSOR_ORIGIN_WEIGHT
         || t->origin == ELK_TENSOR_ORIGIN_KV_CACHE;
}

/* ---------------------------------------------------------------------- */
/* Timeline bookkeeping. */

static void
interval (NocSim *s, guint8 kind, double a, double b)
{
  if (b > a)
    {
      NocInterval iv = { a, b, kind };
      g_array_append_val (s->intervals, iv);
    }
}

/* ---------------------------------------------------------------------- */
/* The ladder's analytic quantities. */

/* Whether a bound's free distribution applies: the program assumes it and
 * the ladder applies assumptions (effect all-transfers off). */
static gboolean
free_distribution (const NocSim *s)
{
  return !FX (s, NOC_FX_ALL_TRANSFERS)
         && (elk_program_get_assumptions (s->program)
             & ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION);
}

/* Per core, what @op_id's preload delivers by the analytic model. */
static double
preload_cold_bytes (const NocSim *s, guint op_id)
{
  return free_distribution (s) ? s->costs[op_id].even_bytes
                               : s->costs[op_id].cold_bytes;
}

/* The analytic load time of @op_id's preload, elk_chip_spec_get_load_time()
 * at the program's preload share (or the full port with the
 * full-rate-preload effect on). */
double
elk__noc_preload_analytic_s (const NocSim *s, guint op_id)
{
  const NocOpCost *k = &s->costs[op_id];
  const ElkProgramOp *pop = elk_program_peek_op (s->program, op_id);
  double share = FX (s, NOC_FX_FULL_RATE_PRELOAD) ? 1 : pop->preload_share;

  if (k->hbm_bytes <= 0)
    return 0;
  return MAX (k->hbm_bytes / s->cfg.hbm_bw,
              preload_cold_bytes (s, op_id) / s->cfg.link_bw / share);
}

/* ---------------------------------------------------------------------- */
/* Preloads. */

void
elk__noc_preload_start (NocSim *s, guint op_id, double now)
{
  const NocConfig *c = &s->cfg;
  ElkProgramOp *pop = elk_program_get_op (s->program, op_id);
  const ElkOp *op = elk_graph_get_op (s->graph, op_id);
  const ElkPlan *cold = &pop->preload_plan, *hot = &pop->exec_plan;
  NocLayout *L = &s->layout;
  guint np = 0, nd = 0;
  guint H = c->hbm_channels;
  g_autofree double *ctrl_bytes = NULL;

  s->preload_active = TRUE;
  s->preload_op = op_id;
  s->preload_start = now;
  s->preload_max_arrive = now;
  if (s->pl_start != NULL)
    s->pl_start[op_id] = now;
  /* A throttled preload (the program's preload_share) is capped at its
   * share of the port unless the ladder keeps today's full rate. */
  s->preload_rate = FX (s, NOC_FX_FULL_RATE_PRELOAD) || pop->preload_share >= 1
                        ? INFINITY
                        : pop->preload_share * c->link_bw;
  if (!FX (s, NOC_FX_PRELOAD_NETWORK))
    {
      /* The analytic load time (elk_chip_spec_get_load_time): the
       * longer of the HBM read and the delivery through a core's port,
       * no traffic on the network. */
      double dur = elk__noc_preload_analytic_s (s, op_id);
      s->preload_hbm_ideal = s->costs[op_id].hbm_bytes / c->hbm_bw;
      s->hbm_read_bytes += s->costs[op_id].hbm_bytes;
      s->ctrl_active = 0;
      elk__noc_heap_push (s, now + dur, EV_PRELOAD_DONE, op_id);
      return;
    }
  layout_init (L, s->graph, op_id, cold, hot);
  if (L->cores_used > c->cores)
    L->cores_used = 0; /* validated earlier; never sends off-chip ghosts */
  if (free_distribution (s))
    {
      /* A bound's free distribution, applied: an even, unreplicated shard
       * for every core, whatever the preload plan's layout. */
      double even = s->costs[op_id].even_bytes;
      for (guint32 core = 0; core < c->cores && even > 0; core++)
        {
          s->dests[nd] = core;
          s->piece_bytes[np] = even;
          s->piece_dest_off[np] = nd++;
          s->piece_ndest[np++] = 1;
        }
      L->n_operands = 0;
    }

  /* Pieces: every distinct preload-state piece of every HBM operand, with
   * the cores that hold a copy of it (its replicas in the preload plan). */
  for (guint v = 1; v < L->n_operands; v++)
    {
      guint32 tc, R = 1;
      double bytes = (double) cold->operand_bytes[v];
      if (!is_hbm_operand (s->graph, op, v) || bytes <= 0)
        continue;
      tc = temporal_product (cold, v);
      for (guint32 core = 0; core < L->cores_used; core++)
        {
          guint32 idx[ELK_MAX_DIMS], j, r;
          layout_split (L, core, idx);
          j = replica_index (L, v, idx, &R);
          if (tc > R || R % tc != 0)
            tc = R;
          if (j >= tc)
            continue;
          r = R / tc;
          /* Each chip's HBM holds what its cores need (model parallelism),
           * so a piece held on several chips is read once per chip. */
          for (guint32 m = 0; m < r; m++)
            {
              replica_set (L, v, idx, j + m * tc);
              s->dests[nd + m] = layout_join (L, idx);
            }
          for (guint32 a = 0; a < r;)
            {
              /* One pool of controllers (hbm-controllers off) reads a
               * piece once for all chips. */
              guint per
                  = FX (s, NOC_FX_HBM_CONTROLLERS) ? s->per_chip : G_MAXUINT;
              guint chip = s->dests[nd + a] / per;
              guint32 b = a + 1;
              for (guint32 x = a + 1; x < r; x++)
                if (s->dests[nd + x] / per == chip)
                  {
                    guint32 t = s->dests[nd + x];
                    s->dests[nd + x] = s->dests[nd + b];
                    s->dests[nd + b++] = t;
                  }
              s->piece_bytes[np] = bytes;
              s->piece_dest_off[np] = nd + a;
              s->piece_ndest[np] = b - a;
              np++;
              a = b;
            }
          nd += r;
        }
    }
  s->n_pieces = np;

  /* Controllers: tensors are striped over the chip's controllers piece by
   * piece (or each piece goes to the controller nearest its first
   * holder), and each controller serves its pieces round robin, packet
   * by packet. */
  memset (s->ctrl_off, 0, sizeof (guint32) * (H + 1));
  ctrl_bytes = g_new0 (double, H);
  for (guint p = 0; p < np; p++)
    {
      guint dst = s->dests[s->piece_dest_off[p]];
      guint chip = dst / s->per_chip, hl;
      if (!FX (s, NOC_FX_HBM_CONTROLLERS))
        chip = hl = 0;
      else if (c->interleave == NOC_INTERLEAVE_NEAREST
               && c->topology != ELK_TOPOLOGY_ALL_TO_ALL)
        hl = s->near_ctrl[dst % s->per_chip];
      else
        hl = (p + op_id) % s->hc;
      s->ctrl_list[p] = chip * s->hc + hl; /* temporarily: owner */
      s->ctrl_off[chip * s->hc + hl + 1]++;
    }
  for (guint h = 0; h < H; h++)
    s->ctrl_off[h + 1] += s->ctrl_off[h];
  {
    g_autofree guint32 *fill = g_memdup2 (s->ctrl_off, sizeof (guint32) * H);
    g_autofree guint32 *owner
        = g_memdup2 (s->ctrl_list, sizeof (guint32) * MAX (np, 1u));
    for (guint p = 0; p < np; p++)
      {
        guint h = owner[p];
        s->ctrl_list[fill[h]++] = p;
        ctrl_bytes[h] += s->piece_bytes[p];
      }
  }
  s->ctrl_active = 0;
  s->preload_hbm_ideal = 0;
  for (guint h = 0; h < H; h++)
    {
      guint32 maxk = 0;
      for (guint32 i = s->ctrl_off[h]; i < s->ctrl_off[h + 1]; i++)
        {
          guint32 k = (guint32) ceil (s->piece_bytes[s->ctrl_list[i]]
                                      / c->packet_bytes);
          maxk = MAX (maxk, k);
        }
      s->ctrl_pos[h] = s->ctrl_off[h];
      s->ctrl_k[h] = 0;
      s->ctrl_maxk[h] = maxk;
      s->ctrl_first[h] = INFINITY;
      s->ctrl_last[h] = now;
      s->preload_hbm_ideal
          = MAX (s->preload_hbm_ideal,
                 ctrl_bytes[h] / s->links[s->read_base + h].bw);
      if (maxk > 0)
        {
          s->ctrl_active++;
          elk__noc_heap_push (s, now, EV_CTRL, h);
        }
    }
  if (s->preload_hbm_ideal > 0)
    s->preload_hbm_ideal += c->hbm_latency;
  if (s->ctrl_active == 0)
    elk__noc_heap_push (s, now, EV_PRELOAD_DONE, op_id);
}

/* One packet read by controller @h, then sent to every holder. */
void
elk__noc_ctrl_step (NocSim *s, guint h, double now)
{
  const NocConfig *c = &s->cfg;
  guint32 end = s->ctrl_off[h + 1];
  guint32 p;
  double bytes, st, head, tail;

  for (;;)
    {
      if (s->ctrl_pos[h] == end)
        {
          s->ctrl_pos[h] = s->ctrl_off[h];
          s->ctrl_k[h]++;
        }
      if (s->ctrl_k[h] >= s->ctrl_maxk[h])
        {
          /* This controller is done with the preload. */
          if (s->trace != NULL && s->ctrl_first[h] < INFINITY)
            elk_trace_add_span (s->trace, s->tr_ctrl0 + h, s->cur_name,
                                s->ctrl_first[h],
                                s->ctrl_last[h] - s->ctrl_first[h]);
          if (--s->ctrl_active == 0 && s->copies_left == 0)
            elk__noc_heap_push (s, MAX (now, s->preload_max_arrive),
                                EV_PRELOAD_DONE, s->preload_op);
          return;
        }
      p = s->ctrl_list[s->ctrl_pos[h]++];
      bytes = s->piece_bytes[p] - (double) s->ctrl_k[h] * c->packet_bytes;
      if (bytes > 0)
        break;
    }
  if (bytes > c->packet_bytes)
    bytes = c->packet_bytes;

  {
    /* The read: the controller's own FIFO, used by nobody else. */
    NocLinkState *rl = &s->ls[s->read_base + h];
    double ser = bytes / s->links[s->read_base + h].bw;
    st = now > rl->free_at ? now : rl->free_at;
    rl->free_at = st + ser;
    rl->busy += ser;
    rl->bytes += bytes;
    if (G_UNLIKELY (s->links[s->read_base + h].track >= 0))
      elk_trace_add_span (s->trace, (guint) s->links[s->read_base + h].track,
                          s->cur_name, st, ser);
    head = st + s->links[s->read_base + h].lat;
    tail = st + ser;
  }
  s->hops++;
  s->read_hops++;
  s->hbm_read_bytes += bytes;
  s->ctrl_first[h] = MIN (s->ctrl_first[h], st);
  s->ctrl_last[h] = tail;
  for (guint32 i = 0; i < s->piece_ndest[p]; i++)
    {
      guint dst = s->dests[s->piece_dest_off[p] + i];
      guint chip = h / s->hc;
      NocTrain tr, *t = &tr;

      if (c->arbitration == NOC_ARBITRATION_BOOKING)
        {
          NocWalk x;
          guint n = 0;
          if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
            {
              if (dst / s->per_chip != chip && FX (s, NOC_FX_HBM_CONTROLLERS)
                  && FX (s, NOC_FX_INTER_CHIP))
                s->path[n++] = s->interchip;
              s->path[n++] = (s->use_priv ? s->priv_base : c->cores) + dst;
            }
          else
            {
              guint a
                  = s->attach_for[(gsize) h * s->per_chip + dst % s->per_chip];
              guint router = s->attach_router[h * s->attach + a];
              s->path[n++] = s->attach_base + h * s->attach + a;
              if (dst / s->per_chip == chip)
                n = elk__noc_route_local (s, router, dst, n);
              else
                {
                  n = elk__noc_route_local (s, router,
                                            elk__noc_gateway (s, chip, TRUE,
                                                              router),
                                            n);
                  s->path[n++] = s->interchip;
                  n = elk__noc_route_local (s,
                                            elk__noc_gateway (s,
                                                              dst / s->per_chip,
                                                              FALSE, router),
                                            dst, n);
                }
            }
          /* The copy starts with the read's head, behind its tail. */
          elk__noc_walk_start (&x, head, tail);
          elk__noc_walk_path (s, &x, bytes, s->preload_rate, n);
          s->kind_hops[5] += n;
          s->noc_bytes += bytes;
          if (dst / s->per_chip != chip)
            s->xchip[5] += bytes;
          if (x.arrive > s->preload_max_arrive)
            s->preload_max_arrive = x.arrive;
          continue;
        }
      elk__noc_train_init (s, t, head, tail, bytes,
                           s->preload_rate < INFINITY ? 2 : 0, 5, dst);
      /* The read already happened; the copy starts with its head, on the
       * controller's attachment nearest the holder (all-to-all: straight
       * into the holder's ingress port, or its preload port, over the
       * inter-chip link if the holder is on another chip and chips have
       * controllers and links of their own). */
      if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
        t->link = dst / s->per_chip != chip && FX (s, NOC_FX_HBM_CONTROLLERS)
                          && FX (s, NOC_FX_INTER_CHIP)
                      ? s->interchip
                  : s->use_priv ? s->priv_base + dst
                                : c->cores + dst;
      else
        {
          guint a = s->attach_for[(gsize) h * s->per_chip + dst % s->per_chip];
          t->link = s->attach_base + h * s->attach + a;
        }
      s->copies_left++;
      s->noc_bytes += bytes;
      if (t->link == s->interchip)
        s->xchip[5] += bytes;
      elk__noc_train_inject (s, t);
    }
  /* The controller reads its next packet when this read is done. */
  elk__noc_heap_push (s, MAX (now, s->ls[s->read_base + h].free_at), EV_CTRL,
                      h);
}

void
elk__noc_preload_done (NocSim *s, guint op_id, double now)
{
  const ElkOp *op = elk_graph_get_op (s->graph, op_id);

  s->preload_done[op_id] = TRUE;
  s->preload_active = FALSE;
  if (s->pl_end != NULL)
    s->pl_end[op_id] = now;
  interval (s, IV_PRELOAD, s->preload_start, now);
  /* Beyond what the controllers needed to read the data, the preload
   * waited on the network. */
  interval (s, IV_STALL_PRELOAD, s->preload_start + s->preload_hbm_ideal, now);
  if (s->trace != NULL)
    elk_trace_add_span (s->trace, s->tr_preload, op->name, s->preload_start,
                        now - s->preload_start);
  s->last_end = MAX (s->last_end, now);
  if (s->pq_head < s->pq_tail)
    elk__noc_preload_start (s, s->pq[s->pq_head++], now);
}

/* ---------------------------------------------------------------------- */
/* Executions. */

static NocRound *
round_add (NocSim *s)
{
  if (s->n_rounds == s->rounds_cap)
    {
      s->rounds_cap = MAX (64u, 2 * s->rounds_cap);
      s->rounds = g_renew (NocRound, s->rounds, s->rounds_cap);
    }
  memset (&s->rounds[s->n_rounds], 0, sizeof (NocRound));
  return &s->rounds[s->n_rounds++];
}

/* The shuffle ring: every core passes to the next one. */
static void
shuffle_ring_fill (NocSim *s)
{
  guint32 *sh
      = s->nbr + (RING_SHUFFLE * ELK_MAX_OPERANDS) * (gsize) s->cfg.cores;
  for (guint32 k = 0; k < s->layout.cores_used; k++)
    sh[k] = (k + 1) % s->layout.cores_used;
}

/* Data distribution: a ring all-gather of the parts of each operand that
 * the preload state holds rotated further than the execute state. */
static void
distribution_rounds (NocSim *s, const ElkPlan *cold, const ElkPlan *hot)
{
  const NocConfig *c = &s->cfg;
  NocLayout *L = &s->layout;
  guint32 *nbr = s->nbr;
  gsize stride = c->cores;

  if (free_distribution (s))
    return;
  if (!FX (s, NOC_FX_RELAYOUT))
    {
      /* The analytic warm-up (elk_plan_get_warmup): its bytes to the next
       * core, its syncs as the barrier. */
      const NocOpCost *k = &s->costs[s->exec_op];
      if (k->warmup_s > 0)
        {
          NocRound *r = round_add (s);
          shuffle_ring_fill (s);
          r->ring = RING_SHUFFLE;
          r->kind = 1;
          r->bytes = k->warmup_bytes;
          r->sync = MAX (0, k->warmup_s - k->warmup_bytes * c->core_gap);
        }
      return;
    }
  if (same_spatial (cold, hot))
    for (guint v = 1; v < L->n_operands; v++)
      {
        guint32 th = temporal_product (hot, v), tc = temporal_product (cold, v);
        if (tc <= th || tc % th != 0)
          continue;
        ring_fill (L, v, th, tc / th,
                   nbr + (RING_WARM * ELK_MAX_OPERANDS + v) * stride);
        for (guint m = 1; m < tc / th; m++)
          {
            NocRound *r = round_add (s);
            r->operand = v;
            r->ring = RING_WARM;
            r->kind = 1;
            r->bytes = (double) cold->operand_bytes[v];
            r->sync = c->sync_s;
          }
      }
}

/* The bytes of one sum of squares per row of a fused RMSNorm-MatMul's
 * (elk-fuse.h) piece of operand @v, the rows being the dimensions the
 * output shares with x (operand 1); 0 for any other operator.  The
 * output's (v = 0) join its partial sums; x's (v = 1) travel with x's
 * rotating piece, which its owner scaled (docs/plan-space.md).  A fused
 * softmax-MatMul's row sums of exponentials travel the same way. */
static double
fused_norm_rows_bytes (const ElkOp *op,
                       const ElkPlan *hot,
                       guint v,
                       double esize)
{
  double rows = 1, blocks = 1;
  gboolean layer = op->kind == ELK_OP_MATMUL && op->n_operands == 5
                   && g_strcmp0 (op->type, ELK_FUSE_LAYERNORM_MATMUL) == 0;

  if (!layer
      && (op->kind != ELK_OP_MATMUL || op->n_operands != 4
          || (g_strcmp0 (op->type, ELK_FUSE_RMSNORM_MATMUL) != 0
              && g_strcmp0 (op->type, ELK_FUSE_SOFTMAX_MATMUL) != 0)))
    return 0;
  for (guint d = 0; d < op->n_dims; d++)
    {
      gboolean in_out = FALSE, in_x = FALSE;
      for (guint x = 0; x < op->access[0].n_axes; x++)
        in_out |= op->access[0].dims[x][0] == (gint8) d;
      for (guint x = 0; x < op->access[1].n_axes; x++)
        in_x |= op->access[1].dims[x][0] == (gint8) d;
      if (in_out && in_x)
        {
          double piece = ceil ((double) op->extents[d] / hot->spatial[d]);
          guint32 most = 1;
          for (guint u = 0; u < op->n_operands; u++)
            most = MAX (most, hot->temporal[d][u]);
          rows *= ceil (piece / MAX (hot->temporal[d][v], 1u));
          blocks *= ceil (ceil (piece / MAX (hot->temporal[d][0], 1u))
                          / ceil (piece / most));
        }
    }
  if (!layer)
    return rows * esize;
  /* A fused LayerNorm's rows carry two sums (of x and of x²); its output
   * piece also carries two rows, gᵀW and bᵀW, per m step block
   * (docs/plan-space.md, "Fused operators"). */
  if (v != 0)
    return 2 * rows * esize;
  return (2 * rows
          + 2 * blocks * ((double) hot->operand_bytes[0] / esize)
                / MAX (rows, 1.0))
         * esize;
}

/* The shift schedule: per dimension, gcd rounds of the factors still
 * above one; over all dimensions, the round moving most bytes per shift
 * outermost. */
static void
shift_rounds (NocSim *s, const ElkOp *op, const ElkPlan *hot)
{
  const NocConfig *c = &s->cfg;
  NocLayout *L = &s->layout;
  guint32 *nbr = s->nbr;
  gsize stride = c->cores;
  struct
  {
    double bytes;
    guint32 mask;
    guint32 shifts;
  } rr[ELK_MAX_DIMS * 8];
  guint nr = 0;
  guint32 digits[ELK_MAX_DIMS * 8] = { 0 };
  guint64 K = 1;
  double shift_sync = c->syncs_per_shift * c->sync_s;
  double bytes[ELK_MAX_OPERANDS];

  for (guint v = 0; v < ELK_MAX_OPERANDS; v++)
    {
      bytes[v] = v < hot->n_operands ? (double) hot->operand_bytes[v] : 0;
      if (v == 1)
        bytes[v]
            += fused_norm_rows_bytes (op, hot, 1,
                                      MAX (1u,
                                           elk_dtype_get_size (
                                               elk_graph_get_tensor (s->graph,
                                                                     op->tensors
                                                                         [1])
                                                   ->dtype)));
    }

  for (guint d = 0; d < hot->n_dims; d++)
    {
      guint32 f[ELK_MAX_OPERANDS];
      for (guint v = 0; v < ELK_MAX_OPERANDS; v++)
        f[v] = v < hot->n_operands ? MAX (1u, hot->temporal[d][v]) : 1;
      for (;;)
        {
          guint32 g = 0, mask = 0;
          double b = 0;
          guint j;
          for (guint v = 0; v < ELK_MAX_OPERANDS; v++)
            if (f[v] > 1)
              {
                guint32 a = g, bb = f[v];
                while (bb)
                  {
                    guint32 t = a % bb;
                    a = bb;
                    bb = t;
                  }
                g = a;
              }
          if (g <= 1 || nr == G_N_ELEMENTS (rr))
            break;
          for (guint v = 0; v < ELK_MAX_OPERANDS; v++)
            if (f[v] > 1)
              {
                mask |= 1u << v;
                b += bytes[v];
                f[v] /= g;
              }
          j = nr++;
          while (j > 0 && rr[j - 1].bytes < b)
            {
              rr[j] = rr[j - 1];
              j--;
            }
          rr[j].bytes = b;
          rr[j].mask = mask;
          rr[j].shifts = g - 1;
        }
    }
  for (guint i = 0; i < nr; i++)
    K *= rr[i].shifts + 1;
  for (guint v = 0; v < L->n_operands; v++)
    {
      guint32 t = temporal_product (hot, v);
      if (t > 1)
        ring_fill (L, v, 1, t,
                   nbr + (RING_HOT * ELK_MAX_OPERANDS + v) * stride);
    }
  for (guint64 st = 0; st < K; st++)
    {
      double comp = hot->compute_s / (double) K;
      gint i;
      if (st + 1 == K)
        {
          NocRound *r = round_add (s);
          r->compute = comp;
          r->kind = 4;
          break;
        }
      i = (gint) nr - 1;
      while (i >= 0 && digits[i] == rr[i].shifts)
        digits[i--] = 0;
      if (i < 0)
        break;
      digits[i]++;
      for (guint v = 0; v < L->n_operands; v++)
        if (rr[i].mask & (1u << v))
          {
            NocRound *r = round_add (s);
            r->compute = comp;
            comp = 0;
            r->operand = v;
            r->ring = RING_HOT;
            r->kind = 0;
            r->stretch = 1;
            r->bytes = bytes[v];
            r->sync = shift_sync;
          }
    }
}

/* Output: elementwise-like operators leave it in place; the others
 * reduce the partial sums the rotation did not consume and move the
 * output to where the next operator wants it. */
static void
output_rounds (NocSim *s, const ElkOp *op, const ElkPlan *hot)
{
  const NocConfig *c = &s->cfg;
  NocLayout *L = &s->layout;
  guint32 *nbr = s->nbr;
  gsize stride = c->cores;

  if (!FX (s, NOC_FX_REDUCE))
    {
      /* The plan's own output stage (elk__plan_search_eval): its bytes
       * (re-layout and partial-sum gather) to the next core, the rest of
       * its time (syncs, the reduction's adds) as the barrier; the
       * multichip factor is left to the inter-chip switch. */
      double multi
          = hot->cores_used > s->per_chip ? c->cost.multichip_factor : 1;
      double bytes = hot->cores_used > 0
                         ? hot->noc_bytes / hot->cores_used - hot->shift_bytes
                         : 0;
      NocRound *r = round_add (s);
      bytes = bytes > 1e-9 ? bytes : 0;
      shuffle_ring_fill (s);
      r->ring = RING_SHUFFLE;
      r->kind = bytes > 0 ? 3 : 4;
      r->bytes = bytes;
      r->sync = MAX (0, hot->shuffle_s / multi - bytes * c->core_gap);
    }
  else if (op->kind == ELK_OP_ELEMENTWISE || op->kind == ELK_OP_UNARY
           || op->kind == ELK_OP_POOL)
    {
      NocRound *r = round_add (s);
      r->kind = 4;
      r->sync = c->sync_s;
    }
  else
    {
      guint32 idx[ELK_MAX_DIMS], R = 1, tout = temporal_product (hot, 0);
      guint32 rout, split = 1;
      gboolean use_ring = c->reduce == NOC_REDUCE_RING;
      const ElkTensor *t = elk_graph_get_tensor (s->graph, op->tensors[0]);
      double esize = MAX (1u, elk_dtype_get_size (t->dtype));
      double outb = (double) hot->operand_bytes[0]
                    + fused_norm_rows_bytes (op, hot, 0, esize);

      layout_split (L, 0, idx);
      replica_index (L, 0, idx, &R);
      rout = (tout <= R && R % tout == 0) ? R / tout : 1;
      if (rout > 1 && c->reduce == NOC_REDUCE_2D)
        {
          /* The holders of the output at core 0, in ring order; the other
           * groups are translates of it. */
          guint32 *q = nbr + (RING_REDUCE * ELK_MAX_OPERANDS) * stride;
          ring_fill (L, 0, tout, rout, q);
          for (guint32 p = 0, k = 0; p < rout; p++, k = q[k])
            s->holders[p] = k;
          split = elk__noc_sim_reduce_split (s, s->holders, rout);
        }
      if (rout > 1 && split > 1)
        {
          /* Two-level reduce-scatter (elk__noc_sim_reduce_split): an exchange
           * of 1/A chunks among each block of A consecutive holders and an
           * add of A of them, then an exchange of 1/rout chunks among the
           * B = rout / A holders of the same 1/A and an add of B. */
          const ElkCostCoeffs *cc = &c->cost;
          guint32 b = rout / split;
          double chunk1 = outb / split, chunk2 = outb / rout;
          NocRound *r;
          ring_fill (L, 0, tout, split,
                     nbr + (RING_REDUCE * ELK_MAX_OPERANDS) * stride);
          ring_fill (L, 0, tout * split, b,
                     nbr + (RING_REDUCE2 * ELK_MAX_OPERANDS) * stride);
          r = round_add (s);
          r->ring = RING_REDUCE;
          r->kind = 2;
          r->bytes = chunk1;
          r->fanout = split - 1;
          r->sync = c->syncs_per_shift * c->sync_s;
          r = round_add (s);
          r->compute
              = (cc->reduce_slope * (chunk1 / esize) * split + cc->reduce_fixed)
                / c->clock_hz;
          r->ring = RING_REDUCE2;
          r->kind = 2;
          r->bytes = chunk2;
          r->fanout = b - 1;
          r->sync = c->syncs_per_shift * c->sync_s;
          r = round_add (s);
          r->kind = 4;
          r->compute
              = (cc->reduce_slope * (chunk2 / esize) * b + cc->reduce_fixed)
                / c->clock_hz;
        }
      else if (rout > 1 && use_ring)
        {
          /* Ring reduce-scatter: rout - 1 steps, each sends one chunk to
           * the next holder, then adds the chunk it received. */
          const ElkCostCoeffs *cc = &c->cost;
          double chunk = outb / rout;
          double add
              = (cc->reduce_slope * (chunk / esize) * 2 + cc->reduce_fixed)
                / c->clock_hz;
          ring_fill (L, 0, tout, rout,
                     nbr + (RING_REDUCE * ELK_MAX_OPERANDS) * stride);
          for (guint32 m = 1; m < rout; m++)
            {
              NocRound *r = round_add (s);
              r->compute = m > 1 ? add : 0;
              r->operand = 0;
              r->ring = RING_REDUCE;
              r->kind = 2;
              r->bytes = chunk;
              r->sync = c->syncs_per_shift * c->sync_s;
            }
          {
            NocRound *r = round_add (s);
            r->kind = 4;
            r->compute = add;
          }
        }
      else if (rout > 1)
        {
          /* Reduce-scatter in one exchange: every core sends each of the
           * other rout - 1 holders of its output the chunk that holder
           * reduces, then reduces rout partial chunks.  A chunk is at
           * least one element: when the output has fewer elements than
           * holders (a whole tensor reduced to one element), only the
           * first n_red holders reduce, one element each, and every
           * holder sends each of them its partial element, an incast of
           * rout x n_red transfers where rout x (rout - 1) fractions of
           * an element would be quadratic in the cores. */
          const ElkCostCoeffs *cc = &c->cost;
          double elems = outb / esize;
          guint32 n_red
              = elems < rout ? (guint32) MAX (1.0, floor (elems)) : rout;
          double chunk = outb / n_red;
          NocRound *r;
          incast_fill (L, 0, tout, rout, n_red,
                       nbr + (RING_REDUCE * ELK_MAX_OPERANDS) * stride);
          r = round_add (s);
          r->operand = 0;
          r->ring = RING_REDUCE;
          r->kind = 2;
          r->bytes = chunk;
          r->fanout = n_red < rout ? n_red : rout - 1;
          r->sync = c->syncs_per_shift * c->sync_s;
          r = round_add (s);
          r->kind = 4;
          r->compute
              = (cc->reduce_slope * (chunk / esize) * rout + cc->reduce_fixed)
                / c->clock_hz;
        }
      {
        NocRound *r = round_add (s);
        guint32 *sh = nbr + (RING_SHUFFLE * ELK_MAX_OPERANDS) * stride;
        for (guint32 k = 0; k < L->cores_used; k++)
          sh[k] = (k + 1) % L->cores_used;
        r->compute = 0;
        r->operand = 0;
        r->ring = RING_SHUFFLE;
        r->kind = 3;
        r->bytes = outb / rout;
        r->sync = (c->syncs_per_shift + c->shuffle_syncs) * c->sync_s;
      }
    }
}

/* Lowers one operator's execution to rounds: data distribution (ring
 * all-gather of the pieces the preload state did not replicate), the
 * compute-shift steps in T10's gcd-round order, the partial-sum
 * reduce-scatter (`reduce`: one exchange, a ring, or two exchanges, 2-D)
 * and the output re-layout. */
static void
build_rounds (NocSim *s, guint op_id)
{
  const NocConfig *c = &s->cfg;
  ElkProgramOp *pop = elk_program_get_op (s->program, op_id);
  const ElkOp *op = elk_graph_get_op (s->graph, op_id);
  const ElkPlan *hot = &pop->exec_plan;
  const ElkPlan *cold = s->has_preload[op_id] ? &pop->preload_plan : hot;
  NocLayout *L = &s->layout;

  s->n_rounds = 0;
  layout_init (L, s->graph, op_id, hot, hot);
  if (L->cores_used > c->cores)
    L->cores_used = c->cores;
  s->exec_cores = L->cores_used;

  distribution_rounds (s, cold, hot);
  shift_rounds (s, op, hot);
  {
    guint first_out = s->n_rounds;
    output_rounds (s, op, hot);
    for (guint i = first_out; i < s->n_rounds; i++)
      s->rounds[i].stretch = 2;
  }
  if (!FX (s, NOC_FX_INTER_CHIP) && hot->cores_used > s->per_chip)
    {
      /* No inter-chip link: the analytic chip's multichip factor instead,
       * on the shifts and the output stage (transfers, barriers, and the
       * output stage's adds), as an extra barrier. */
      double f = c->cost.multichip_factor - 1;
      for (guint i = 0; i < s->n_rounds; i++)
        {
          NocRound *r = &s->rounds[i];
          double t = r->bytes * MAX (1u, r->fanout) * c->core_gap + r->sync;
          if (r->stretch == 2)
            t += r->compute;
          if (r->stretch > 0)
            r->sync += f * t;
        }
    }
}

void
elk__noc_exec_start (NocSim *s, guint op_id, double now)
{
  s->exec_running = TRUE;
  s->exec_op = op_id;
  s->exec_start = now;
  s->round_i = 0;
  s->cur_name = elk_graph_get_op (s->graph, op_id)->name;
  build_rounds (s, op_id);
  elk__noc_heap_push (s, now + s->rounds[0].compute, EV_EXEC_ROUND, op_id);
}

static const char *round_names[]
    = { "shift", "distribute", "reduce", "shuffle", "compute" };

/* The barrier after the last transfer of the round arrived, then the next
 * round (after its compute) or the end of the execute. */
static void
round_finish (NocSim *s)
{
  const NocRound *r = &s->rounds[s->round_i];
  double now = s->round_now, barrier = s->round_barrier;

  if (r->bytes > 0)
    {
      /* What the busiest transfer needed on idle links; the rest of the
       * wait is network contention. */
      interval (s, IV_STALL_EXEC, now + s->round_ideal, barrier);
      if (s->trace != NULL)
        for (guint k = 0; k < s->n_sample; k++)
          elk_trace_add_span (s->trace, s->tr_core[k], round_names[r->kind],
                              now, barrier - now);
    }
  barrier += r->sync;
  s->kind_s[r->kind] += barrier - now + r->compute;
  if (++s->round_i < s->n_rounds)
    elk__noc_heap_push (s, barrier + s->rounds[s->round_i].compute,
                        EV_EXEC_ROUND, s->exec_op);
  else
    elk__noc_heap_push (s, barrier, EV_EXEC_DONE, s->exec_op);
}

/* One round: every core injects its transfers; the round finishes when
 * the last one arrives. */
void
elk__noc_exec_round (NocSim *s, double now)
{
  const NocConfig *c = &s->cfg;
  const NocRound *r = &s->rounds[s->round_i];

  s->round_now = now;
  s->round_barrier = now;
  s->round_ideal = 0;
  s->round_left = 0;
  if (s->trace != NULL && r->compute > 0)
    for (guint k = 0; k < s->n_sample; k++)
      elk_trace_add_span (s->trace, s->tr_core[k], "compute", now - r->compute,
                          r->compute);
  if (r->bytes > 0)
    {
      const guint32 *nbr
          = s->nbr
            + (r->ring * ELK_MAX_OPERANDS + r->operand) * (gsize) c->cores;
      for (guint32 k = 0; k < s->exec_cores; k++)
        for (guint32 f = 0, dst = k; f < MAX (1u, r->fanout); f++)
          {
            NocTrain tr, *t = &tr;
            /* The f-th peer is f + 1 ring positions on: follow the ring's
             * successor table (ring_peer without re-deriving the layout). */
            dst = nbr[dst];
            if (dst == k)
              continue;
            if (c->arbitration == NOC_ARBITRATION_BOOKING)
              {
                NocWalk w;
                guint n = elk__noc_route (s, k, dst);
                elk__noc_walk_start (&w, now, -INFINITY);
                elk__noc_walk_path (s, &w, r->bytes, s->core_rate, n);
                s->kind_hops[r->kind] += n;
                s->noc_bytes += r->bytes;
                if (k / s->per_chip != dst / s->per_chip)
                  s->xchip[r->kind] += r->bytes;
                if (w.arrive > s->round_barrier)
                  s->round_barrier = w.arrive;
                if (w.max_ser + w.lat_sum > s->round_ideal)
                  s->round_ideal = w.max_ser + w.lat_sum;
                continue;
              }
            elk__noc_train_init (s, t, now, -INFINITY, r->bytes, TRUE, r->kind,
                                 dst);
            if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
              t->link = k;
            else
              {
                elk__noc_train_start (s, t, k);
              }
            s->round_left++;
            s->noc_bytes += r->bytes;
            if (k / s->per_chip != dst / s->per_chip)
              s->xchip[r->kind] += r->bytes;
            elk__noc_train_inject (s, t);
          }
    }
  if (s->round_left == 0)
    round_finish (s);
}

/* The tail of @id reached its destination at @arrive. */
void
elk__noc_train_arrive (NocSim *s, const NocTrain *t, double arrive)
{
  s->hops += t->hops;
  s->kind_hops[t->kind] += t->hops;
  if (t->kind == 5)
    {
      if (arrive > s->preload_max_arrive)
        s->preload_max_arrive = arrive;
      if (--s->copies_left == 0 && s->ctrl_active == 0)
        elk__noc_heap_push (s, s->preload_max_arrive, EV_PRELOAD_DONE,
                            s->preload_op);
    }
  else
    {
      /* On idle links: one serialisation (the slowest link's) and one
       * latency per hop, cut-through. */
      double ideal = t->ser + t->hops * s->cfg.hop_latency;
      if (t->crossed)
        ideal = MAX (ideal, t->bytes
                                    / MIN (s->links[s->interchip].bw,
                                           elk__noc_train_cap (s, t))
                                + t->hops * s->cfg.hop_latency);
      if (arrive > s->round_barrier)
        s->round_barrier = arrive;
      if (ideal > s->round_ideal)
        s->round_ideal = ideal;
      if (--s->round_left == 0)
        round_finish (s);
    }
}

/* The analytic timeline's delay-execution stall (elk-timeline.c,
 * ELK_TIMELINE_PRELOAD_FIRST) of the execute ending at @end: its NoC
 * demand beyond the time the overlapping preloads leave idle.  Preloads
 * still running or queued are taken at their analytic durations. */
static double
analytic_stall (NocSim *s, double end)
{
  const NocConfig *c = &s->cfg;
  double start = s->exec_start, demand = 0, prev = start, noc;

  if (!FX (s, NOC_FX_ALL_TRANSFERS)
      && (elk_program_get_assumptions (s->program)
          & ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK))
    return 0;
  noc = s->costs[s->exec_op].noc_s;
  while (s->first_live < s->n_issued
         && s->preload_done[s->issued[s->first_live]]
         && s->pl_end[s->issued[s->first_live]] <= start)
    s->first_live++;
  for (guint k = s->first_live; k < s->n_issued; k++)
    {
      guint j = s->issued[k];
      double ls, le, dur, ov, lnoc;
      if (s->preload_done[j])
        ls = s->pl_start[j], le = s->pl_end[j];
      else if (s->preload_active && s->preload_op == j)
        {
          ls = s->pl_start[j];
          le = MAX (ls + elk__noc_preload_analytic_s (s, j), end);
        }
      else
        {
          ls = prev;
          le = ls + elk__noc_preload_analytic_s (s, j);
        }
      prev = le;
      dur = le - ls;
      ov = MIN (le, end) - MAX (ls, start);
      lnoc = s->costs[j].hbm_bytes > 0 ? preload_cold_bytes (s, j) / c->link_bw
                                       : 0;
      if (ov <= 0 || dur <= 0 || lnoc <= 0)
        continue;
      demand += lnoc / dur * ov;
    }
  return MAX (0, noc - ((end - start) - demand));
}

void
elk__noc_exec_done (NocSim *s, double now)
{
  const ElkOp *op = elk_graph_get_op (s->graph, s->exec_op);

  if (s->analytic_stall && !s->exec_stalled)
    {
      double stall = analytic_stall (s, now);
      if (stall > 0)
        {
          s->exec_stalled = TRUE;
          interval (s, IV_STALL_EXEC, now, now + stall);
          elk__noc_heap_push (s, now + stall, EV_EXEC_DONE, s->exec_op);
          return;
        }
    }
  s->exec_stalled = FALSE;

  interval (s, IV_EXEC, s->exec_start, now);
  if (s->trace != NULL)
    elk_trace_add_span (s->trace, s->tr_exec, op->name, s->exec_start,
                        now - s->exec_start);
  s->exec_running = FALSE;
  s->last_end = MAX (s->last_end, now);
}
