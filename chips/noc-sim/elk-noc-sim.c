/* elk-noc-sim.c: the discrete-event ICCA network simulator.
 *
 * Model (docs/chip-noc-sim.md has the long form):
 *
 *  - Links are directed, each a FIFO server with a bandwidth and a latency
 *    (LogGP's G and L).  A transfer (a "train": one message, serialised by
 *    its size) moves hop by hop, cut-through: its head reaches the next
 *    link one latency after it started on the previous one, and it
 *    occupies every link for bytes/bandwidth.  Every arrival of a head at
 *    a link is an event; a link serves the transfers in the order their
 *    heads arrived (ties: the one injected first), so a transfer that
 *    reaches a link earlier goes first even if it was sent later.
 *  - Cores inject at most 1/G bytes per second per transfer (the core's
 *    network agent); HBM controllers are not limited by G.
 *  - Each HBM controller is a read FIFO of the controller's bandwidth and
 *    the HBM latency, feeding the network through its attachment links.  A
 *    preload is cut into packets; each controller reads its packets round
 *    robin over the pieces it serves, one event per packet, so preload
 *    traffic interleaves with execution traffic at packet granularity.
 *  - Executions are bulk-synchronous: every core computes a step, the
 *    rotating tensors move to their ring neighbours, and a barrier closes
 *    the step when the last transfer has arrived.
 *
 * Event queue.  No arrival can cause another arrival less than one hop
 * latency L later, so time is cut into windows of width L: all arrivals
 * of one window are known once the earlier windows are done, and links
 * are independent inside a window.  A window's arrivals are therefore
 * gathered per link and each link serves its own in arrival order; this
 * is exactly the order a time-ordered event loop would use, without a
 * heap operation per hop.  The windows ahead are a calendar ring of
 * intrusive lists through the transfers (one bucket per window, a bitmap
 * to find the next one); arrivals beyond the ring and all other events
 * (controller reads, rounds, ends of preloads and executes) go through a
 * binary heap.
 *
 * Everything is preallocated when the simulator is built or when a run
 * starts (the transfer pool doubles when it runs out, which happens a few
 * times per simulator, not per event); the event loop calls no GObject
 * code.
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <stdio.h>
#include "elk-noc-sim.h"

enum
{
  DIR_E,
  DIR_W,
  DIR_S,
  DIR_N,
};

#define NONE G_MAXUINT32

/* A link's parameters... */
typedef struct
{
  double bw;       /* bytes per second */
  double lat;      /* seconds from head in to head out */
  gint32 track;    /* trace track, or -1 */
  guint32 present; /* 0 for the missing links at mesh borders */
} Link;

/* ... and its state, apart, so that the state of all links of a 5888-core
 * mesh (32 bytes each) stays in a core's L2 cache. */
typedef struct
{
  double free_at;  /* when the link has sent everything it accepted */
  double busy;     /* seconds spent sending */
  double bytes;    /* bytes sent */
  guint32 queue;   /* transfers whose heads arrive in the current window */
  guint32 pad;
} LinkState;

typedef struct
{
  double t;
  guint64 seq;
  guint32 kind;
  guint32 arg;
} Event;

enum
{
  EV_CTRL,
  EV_PRELOAD_DONE,
  EV_EXEC_ROUND,
  EV_EXEC_DONE,
  EV_HOP, /* an arrival beyond the calendar ring; arg: the transfer */
};

/* A transfer on its way: where its head is, which link it waits for, and
 * what it needs for the FIFO service there.  64 bytes; transfers are kept
 * by value in the calendar and copied from window to window, so that the
 * event loop streams through memory instead of chasing pointers. */
typedef struct
{
  double head;    /* when the head reaches `link` */
  double tail;    /* when the tail left the previous link */
  double ser;     /* serialisation on a link of link-bw-gbps */
  double bytes;
  guint64 seq;    /* injection order: breaks ties between equal arrivals */
  guint32 link;   /* the link the head waits for */
  guint32 dst;    /* destination core (global id) */
  guint16 chip;   /* where the head is (mesh, torus, ring: router) */
  guint16 r, c;
  guint16 tr, tc; /* the router it heads for on this chip */
  guint16 hops;
  guint8 stage;   /* 0: heading for the chip's gateway, 1: for dst */
  guint8 kind;    /* round kind 0-3, or 5 for a preload copy */
  guint8 capped;  /* injected by a core, so limited to 1/G */
  guint8 crossed; /* went over the inter-chip link */
} Train;

G_STATIC_ASSERT (sizeof (Train) == 64);

/* What a link sorts its arrivals of one window by. */
struct SortKey
{
  double head;
  guint64 seq;
  guint32 id;
};

/* Windows in the calendar ring: 2^16 hop latencies (328 us at 5 ns)
 * cover the queueing delays of all but the most congested links. */
#define RING_LOG 16
#define RING_N (1u << RING_LOG)

/* A bucket is a list of chunks of CHUNK transfers in one pool. */
#define CHUNK 32

typedef struct
{
  guint32 first, last; /* chunks, NONE when empty */
  guint32 fill;        /* transfers in the last chunk */
} Bucket;

/* Ring kinds of an execution round. */
enum
{
  RING_HOT,
  RING_WARM,
  RING_REDUCE,
  RING_REDUCE2, /* the second level of reduce=2d */
  RING_SHUFFLE,
  N_RINGS
};

typedef struct
{
  double compute;  /* seconds of compute before the transfer */
  double bytes;    /* per core, 0 for a compute-only round */
  double sync;     /* barrier time after the transfer */
  guint8 operand;
  guint8 ring;
  guint8 kind;     /* 0 shift, 1 warm-up, 2 reduce, 3 shuffle, 4 compute */
  guint32 fanout;  /* reduce: peers each core sends to */
} Round;

/* How an operator's tiles sit on cores: the spatial vector in a dimension
 * order (fastest first), and which dimensions each operand indexes. */
typedef struct
{
  guint n_dims;
  guint32 spatial[ELK_MAX_DIMS];
  guint8 order[ELK_MAX_DIMS];
  guint32 cores_used;
  guint32 mask[ELK_MAX_OPERANDS];
  guint n_operands;
} Layout;

typedef struct
{
  double start, end;
  guint8 kind;
} Interval;

enum
{
  IV_EXEC,
  IV_PRELOAD,
  IV_STALL_EXEC,
  IV_STALL_PRELOAD,
};

/* One axis of elk__noc_sim_exchange_length's histograms (see axis_sum). */
typedef struct
{
  guint m;
  gboolean wrap;
  double *n, *w; /* 3m + 1 prefix sums each */
} Axis;

struct _NocSim
{
  NocConfig cfg;
  guint per_chip;
  guint hc;              /* controllers per chip */
  guint n_core_links;
  guint n_links;
  guint read_base;
  guint attach_base;
  guint interchip;       /* link index or G_MAXUINT */
  guint attach;          /* attachments per controller */
  Link *links;
  LinkState *ls;
  gboolean link_tracks;   /* some link has a trace track */
  guint32 *attach_router; /* hbm_channels * attach: global core ids */
  guint16 *attach_for;    /* hbm_channels * per_chip: attachment index */
  guint16 *near_ctrl;     /* per_chip: nearest local controller */
  guint32 *path;
  guint max_path;

  /* Event heap, preallocated. */
  Event *heap;
  guint heap_n, heap_cap;
  guint64 seq;

  /* Transfers and the calendar ring of windows (see the top comment). */
  Train *pool;            /* pool_chunks * CHUNK transfers */
  guint32 *chunk_next;    /* per chunk: the next of its bucket, or free */
  guint32 *chain;         /* per pool slot: next arrival at the same link */
  guint32 pool_chunks, chunk_free;
  Train *far;             /* arrivals beyond the ring, by heap event */
  guint32 *far_next;
  guint32 far_cap, far_free;
  guint64 train_seq;
  Bucket *bucket;         /* RING_N */
  guint64 *bmap;          /* RING_N bits: bucket not empty */
  guint64 ring_n;         /* transfers in the ring ahead of cur_w */
  gint64 ring_lo;         /* no bucket before this window is filled */
  gint64 cur_w;           /* the window being processed */
  double inv_w;           /* 1 / window width */
  guint32 *active;        /* links with arrivals in the current window */
  guint n_active, active_cap;
  struct SortKey *sortbuf;
  guint32 sortbuf_cap;
  double core_rate;       /* 1/G, bytes/s */

  /* Per-run state. */
  ElkProgram *program;
  ElkGraph *graph;
  guint n_ops, n_steps, pc;
  gboolean *has_preload;
  gboolean *preload_done;
  guint32 *pq;            /* preload queue (ops in program order) */
  guint pq_head, pq_tail;
  gboolean preload_active, exec_running;
  guint preload_op, exec_op;
  double preload_start, preload_max_arrive, preload_hbm_ideal;
  guint ctrl_active;
  guint64 copies_left;    /* preload copies still in the network */
  double exec_start;
  double last_end;

  /* Preload scratch, one preload at a time (R2). */
  double *piece_bytes;
  guint32 *piece_dest_off;
  guint32 *piece_ndest;
  guint32 *dests;
  guint32 *ctrl_off;
  guint32 *ctrl_list;
  guint32 *ctrl_pos;
  guint32 *ctrl_k;
  guint32 *ctrl_maxk;
  double *ctrl_first, *ctrl_last;
  guint n_pieces;

  /* Execution scratch. */
  Round *rounds;
  guint n_rounds, rounds_cap, round_i;
  guint64 round_left;     /* transfers of the current round in flight */
  double round_now, round_barrier, round_ideal;
  guint32 *nbr;           /* N_RINGS * ELK_MAX_OPERANDS * cores */
  guint32 *holders;       /* cores: one output's holders, in ring order */
  /* Scratch of elk__noc_sim_exchange_length, sized when the simulator is
   * built: per-chip counts, row and column histograms and their axes, and
   * one group of holders. */
  double *xl_cnt, *xl_rows, *xl_cols, *xl_prefix;
  Axis *xl_ra, *xl_ca;
  guint32 *xl_group;
  Layout layout;
  guint32 exec_cores;

  GArray *intervals;
  ElkTrace *trace;
  guint tr_exec, tr_preload, tr_ctrl0, tr_core[3];
  guint n_sample;
  const char *cur_name;

  double hbm_read_bytes, noc_bytes;
  double xchip[6];     /* inter-chip bytes per round kind, 5 = preload */
  double kind_s[6];    /* barrier-to-barrier seconds per round kind */
  guint64 events, hops;
  guint64 kind_hops[6]; /* link hops per round kind, 5 = preload */
  guint64 read_hops;
};

/* ---------------------------------------------------------------------- */
/* Event heap. */

static inline gboolean
ev_before (const Event *a, const Event *b)
{
  return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void
heap_push (NocSim *s, double t, guint32 kind, guint32 arg)
{
  guint i;

  if (G_UNLIKELY (s->heap_n == s->heap_cap))
    {
      /* Only reached if the bound computed at setup was too small. */
      s->heap_cap *= 2;
      s->heap = g_renew (Event, s->heap, s->heap_cap);
    }
  i = s->heap_n++;
  Event e = { t, s->seq++, kind, arg };
  while (i > 0)
    {
      guint p = (i - 1) / 2;
      if (!ev_before (&e, &s->heap[p]))
        break;
      s->heap[i] = s->heap[p];
      i = p;
    }
  s->heap[i] = e;
}

static Event
heap_pop (NocSim *s)
{
  Event top = s->heap[0], last = s->heap[--s->heap_n];
  guint i = 0, n = s->heap_n;

  for (;;)
    {
      guint l = 2 * i + 1, r = l + 1, m = i;
      const Event *cur = &last;
      if (l < n && ev_before (&s->heap[l], cur))
        {
          m = l;
          cur = &s->heap[l];
        }
      if (r < n && ev_before (&s->heap[r], cur))
        m = r;
      if (m == i)
        break;
      s->heap[i] = s->heap[m];
      i = m;
    }
  if (n > 0)
    s->heap[i] = last;
  return top;
}

/* ---------------------------------------------------------------------- */
/* Topology. */

static inline guint
mesh_link (guint gid, guint dir)
{
  return gid * 4 + dir;
}

/* Appends the links from router (global core id) @src to core @dst, both
 * on the same chip, to s->path; returns the new length. */
static guint
route_local (NocSim *s, guint src, guint dst, guint n)
{
  const NocConfig *c = &s->cfg;
  guint chip = src / s->per_chip, base = chip * s->per_chip;
  guint ls = src - base, ld = dst - base;

  switch (c->topology)
    {
    case ELK_TOPOLOGY_MESH:
    case ELK_TOPOLOGY_TORUS:
      {
        guint r = ls / c->cols, col = ls % c->cols;
        guint rd = ld / c->cols, cd = ld % c->cols;
        gboolean torus = c->topology == ELK_TOPOLOGY_TORUS;
        /* Dimension order: columns (X) first, then rows (Y); on a torus
         * each dimension takes its shorter direction, ties going east or
         * south. */
        if (!torus)
          {
            /* Mesh: straight runs, no wrap-around arithmetic per hop. */
            guint32 rowb = base + r * c->cols;
            for (; col < cd; col++)
              s->path[n++] = mesh_link (rowb + col, DIR_E);
            for (; col > cd; col--)
              s->path[n++] = mesh_link (rowb + col, DIR_W);
            for (; r < rd; r++)
              s->path[n++] = mesh_link (base + r * c->cols + col, DIR_S);
            for (; r > rd; r--)
              s->path[n++] = mesh_link (base + r * c->cols + col, DIR_N);
            return n;
          }
        while (col != cd)
          {
            guint fwd = (cd + c->cols - col) % c->cols;
            gboolean east = torus ? fwd <= c->cols - fwd : cd > col;
            s->path[n++] = mesh_link (base + r * c->cols + col,
                                      east ? DIR_E : DIR_W);
            col = east ? (col + 1) % c->cols : (col + c->cols - 1) % c->cols;
          }
        while (r != rd)
          {
            guint fwd = (rd + c->rows - r) % c->rows;
            gboolean south = torus ? fwd <= c->rows - fwd : rd > r;
            s->path[n++] = mesh_link (base + r * c->cols + col,
                                      south ? DIR_S : DIR_N);
            r = south ? (r + 1) % c->rows : (r + c->rows - 1) % c->rows;
          }
        return n;
      }
    case ELK_TOPOLOGY_RING:
      {
        guint m = s->per_chip, fwd = (ld + m - ls) % m;
        gboolean cw = fwd <= m - fwd;
        guint p = ls;
        while (p != ld)
          {
            s->path[n++] = (base + p) * 2 + (cw ? 0 : 1);
            p = cw ? (p + 1) % m : (p + m - 1) % m;
          }
        return n;
      }
    case ELK_TOPOLOGY_ALL_TO_ALL:
    default:
      if (src != dst)
        {
          s->path[n++] = src;
          s->path[n++] = c->cores + dst;
        }
      return n;
    }
}

/* The router through which traffic from router @from (a global id) leaves
 * its chip (@out) or enters chip @chip.  Single gateway: the middle of the
 * east edge (out) or the west edge (in).  Edge gateways: the east-edge
 * router of @from's row (out), the west-edge router of the same row on
 * the other chip (in), so that cross-chip traffic is spread over the
 * rows.  Ring: the first core; unused for all-to-all. */
static guint
gateway (NocSim *s, guint chip, gboolean out, guint from)
{
  const NocConfig *c = &s->cfg;
  guint base = chip * s->per_chip;

  if (c->topology == ELK_TOPOLOGY_MESH || c->topology == ELK_TOPOLOGY_TORUS)
    {
      guint row = c->gateway == NOC_GATEWAY_EDGE
                    ? (from % s->per_chip) / c->cols : c->rows / 2;
      return base + row * c->cols + (out ? c->cols - 1 : 0);
    }
  return base;
}

/* Route between cores, over the inter-chip link when the chips differ. */
static guint
route (NocSim *s, guint src, guint dst)
{
  guint cs = src / s->per_chip, cd = dst / s->per_chip, n = 0;

  if (cs == cd)
    return route_local (s, src, dst, 0);
  if (s->cfg.topology == ELK_TOPOLOGY_ALL_TO_ALL)
    {
      s->path[n++] = src;
      s->path[n++] = s->interchip;
      s->path[n++] = s->cfg.cores + dst;
      return n;
    }
  n = route_local (s, src, gateway (s, cs, TRUE, src), n);
  s->path[n++] = s->interchip;
  return route_local (s, gateway (s, cd, FALSE, src), dst, n);
}

guint
elk__noc_sim_route (NocSim *s, guint src, guint dst, guint32 *links,
                    guint max_links)
{
  guint n = route (s, src, dst);
  memcpy (links, s->path, MIN (n, max_links) * sizeof (guint32));
  return n;
}

static inline guint manhattan (const NocSim *s, guint a, guint b);

/* The number of links route() takes from @src to @dst, in O(1): the
 * distance on the chip's grid or ring, or to the sender's gateway, the
 * inter-chip link, and on from the other chip's gateway. */
guint
elk__noc_sim_route_length (NocSim *s, guint src, guint dst)
{
  guint cs = src / s->per_chip, cd = dst / s->per_chip, pc = s->per_chip;

  if (src == dst)
    return 0;
  if (s->cfg.topology == ELK_TOPOLOGY_ALL_TO_ALL)
    return cs == cd ? 2 : 3;
  if (cs == cd)
    return manhattan (s, src % pc, dst % pc);
  return manhattan (s, src % pc, gateway (s, cs, TRUE, src) % pc) + 1
         + manhattan (s, gateway (s, cd, FALSE, src) % pc, dst % pc);
}

/* Sums of distances from a position x to a multiset of positions on one
 * axis of m positions (a mesh row or column, a torus dimension, a ring),
 * from prefix sums of the counts and of the count-weighted positions.  A
 * wrapping axis is laid out three times, so that the m images nearest x
 * (x - (m - 1) / 2 .. x + m / 2 on the middle copy) are one window. */
static void
axis_build (Axis *ax, const double *cnt)
{
  guint len = ax->wrap ? 3 * ax->m : ax->m;

  ax->n[0] = ax->w[0] = 0;
  for (guint i = 0; i < len; i++)
    {
      double c = cnt[i % ax->m];
      ax->n[i + 1] = ax->n[i] + c;
      ax->w[i + 1] = ax->w[i] + c * i;
    }
}

static inline double
axis_sum (const Axis *ax, guint x)
{
  guint lo = 0, hi = ax->m - 1;

  if (ax->wrap)
    {
      x += ax->m;
      lo = x - (ax->m - 1) / 2;
      hi = x + ax->m / 2;
    }
  return x * (ax->n[x] - ax->n[lo]) - (ax->w[x] - ax->w[lo])
         + (ax->w[hi + 1] - ax->w[x + 1]) - x * (ax->n[hi + 1] - ax->n[x + 1]);
}

/* The sum of the route lengths from each of the @n cores @h to each of
 * them, as elk__noc_sim_route_length() gives them, which is the bytes x links
 * of an exchange among them in units of its chunk.  Small sets pair by
 * pair; larger ones in O(n x chips + chips x (rows + cols)): on a mesh,
 * torus or ring a route's length is a row distance plus a column distance
 * (a ring is one row that wraps), on the chip or to the sender's gateway
 * and from the other chip's, so it sums over per-chip histograms of the
 * cores' rows and columns. */
double
elk__noc_sim_exchange_length (NocSim *s, const guint32 *h, guint n)
{
  const NocConfig *c = &s->cfg;
  guint K = c->chips, pc = s->per_chip, nr, nc;
  gboolean wrap = c->topology != ELK_TOPOLOGY_MESH;
  double sum = 0, *cnt = s->xl_cnt, *rows = s->xl_rows, *cols = s->xl_cols;

  if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
    {
      /* Two links on a chip, three across (the inter-chip link). */
      memset (cnt, 0, K * sizeof (double));
      for (guint p = 0; p < n; p++)
        cnt[h[p] / pc]++;
      for (guint p = 0; p < n; p++)
        {
          double same = cnt[h[p] / pc];
          sum += 2 * (same - 1) + 3 * (n - same);
        }
      return sum;
    }
  nr = c->topology == ELK_TOPOLOGY_RING ? 1 : c->rows;
  nc = c->topology == ELK_TOPOLOGY_RING ? pc : c->cols;
  if ((double) n * n <= 8.0 * K * (nr + nc))
    {
      for (guint p = 0; p < n; p++)
        for (guint q = 0; q < n; q++)
          sum += elk__noc_sim_route_length (s, h[p], h[q]);
      return sum;
    }
  memset (cnt, 0, K * sizeof (double));
  memset (rows, 0, (gsize) K * nr * sizeof (double));
  memset (cols, 0, (gsize) K * nc * sizeof (double));
  for (guint p = 0; p < n; p++)
    {
      guint k = h[p] / pc, l = h[p] % pc;
      cnt[k]++;
      rows[k * nr + l / nc]++;
      cols[k * nc + l % nc]++;
    }
  for (guint k = 0; k < K; k++)
    {
      s->xl_ra[k].m = nr;
      s->xl_ca[k].m = nc;
      s->xl_ra[k].wrap = s->xl_ca[k].wrap = wrap;
      if (cnt[k] > 0)
        {
          axis_build (&s->xl_ra[k], rows + (gsize) k * nr);
          axis_build (&s->xl_ca[k], cols + (gsize) k * nc);
        }
    }
  for (guint p = 0; p < n; p++)
    {
      guint cs = h[p] / pc, l = h[p] % pc;
      for (guint k = 0; k < K; k++)
        {
          guint lo, li;
          if (cnt[k] == 0)
            continue;
          if (k == cs)
            {
              sum += axis_sum (&s->xl_ra[k], l / nc)
                     + axis_sum (&s->xl_ca[k], l % nc);
              continue;
            }
          lo = gateway (s, cs, TRUE, h[p]) % pc;
          li = gateway (s, k, FALSE, h[p]) % pc;
          sum += cnt[k] * (manhattan (s, l, lo) + 1)
                 + axis_sum (&s->xl_ra[k], li / nc)
                 + axis_sum (&s->xl_ca[k], li % nc);
        }
    }
  return sum;
}

/* reduce=2d: how a code generator for a mesh would cut the reduce-scatter
 * of one output among its @n holders (in ring order, which is core order:
 * the layout puts the reduction dimensions right after the rotating ones,
 * so consecutive holders are nearby cores).  A two-level reduce-scatter
 * with n = A x B first exchanges among each block of A consecutive holders
 * (each sends the A - 1 others the 1/A of the output they reduce), then
 * among the B holders of the same 1/A in different blocks (each sends the
 * B - 1 others 1/n).  Every holder sends (1 - 1/n) of the output, as in
 * the one-round exchange, but the large chunks go to nearby holders and
 * only the small ones far.  A is chosen to minimise the bytes x links the
 * reduction puts on the network (summed over the holders, exact route
 * lengths): when every group reduces at once, that is the load the links
 * must carry, and what makes the exchange slow on a mesh.  Returns A; 1
 * when no factorisation beats the one-round exchange (n prime, or
 * all-to-all, where every route has the same length). */
guint
elk__noc_sim_reduce_split (NocSim *s, const guint32 *h, guint n)
{
  double best;
  guint best_a = 1;
  guint32 *g = s->xl_group;

  if (n < 4)
    return 1;
  /* The one-round exchange: every holder sends 1/n to every other one. */
  best = elk__noc_sim_exchange_length (s, h, n) / n;
  for (guint a = 2; a < n; a++)
    {
      guint b = n / a;
      double near = 0, far = 0, score;
      if (n % a != 0)
        continue;
      for (guint pb = 0; pb < b; pb++)
        near += elk__noc_sim_exchange_length (s, h + (gsize) pb * a, a);
      for (guint pa = 0; pa < a; pa++)
        {
          for (guint y = 0; y < b; y++)
            g[y] = h[(gsize) y * a + pa];
          far += elk__noc_sim_exchange_length (s, g, b);
        }
      score = near / a + far / n;
      /* Ties keep the fewer rounds (and barriers). */
      if (score < best * (1 - 1e-9))
        {
          best = score;
          best_a = a;
        }
    }
  return best_a;
}

const char *
elk__noc_sim_link_name (NocSim *s, guint li, char *buf, gsize len)
{
  const NocConfig *c = &s->cfg;
  static const char *dirs[] = { "E", "W", "S", "N" };

  if (li == s->interchip)
    g_snprintf (buf, len, "inter-chip");
  else if (li >= s->attach_base)
    g_snprintf (buf, len, "hbm%u-attach%u", (li - s->attach_base) / s->attach,
                (li - s->attach_base) % s->attach);
  else if (li >= s->read_base)
    g_snprintf (buf, len, "hbm%u-read", li - s->read_base);
  else if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
    g_snprintf (buf, len, "core%u-%s", li % c->cores,
                li < c->cores ? "out" : "in");
  else if (c->topology == ELK_TOPOLOGY_RING)
    g_snprintf (buf, len, "core%u-%s", li / 2, li % 2 ? "ccw" : "cw");
  else
    {
      guint g = li / 4, l = g % s->per_chip;
      g_snprintf (buf, len, "chip%u-r%u-c%u-%s", g / s->per_chip, l / c->cols,
                  l % c->cols, dirs[li % 4]);
    }
  return buf;
}

static inline guint
manhattan (const NocSim *s, guint a, guint b)
{
  const NocConfig *c = &s->cfg;

  if (c->topology == ELK_TOPOLOGY_RING)
    {
      guint m = s->per_chip, d = (b + m - a) % m;
      return MIN (d, m - d);
    }
  {
    guint ra = a / c->cols, ca = a % c->cols, rb = b / c->cols, cb = b % c->cols;
    guint dr = ra > rb ? ra - rb : rb - ra, dc = ca > cb ? ca - cb : cb - ca;
    if (c->topology == ELK_TOPOLOGY_TORUS)
      {
        dr = MIN (dr, c->rows - dr);
        dc = MIN (dc, c->cols - dc);
      }
    return dr + dc;
  }
}

/* Places the controllers of one chip (local router ids) and fills the
 * attachment tables.  Same placement on every chip. */
static gboolean
place_controllers (NocSim *s, GError **error)
{
  const NocConfig *c = &s->cfg;
  guint m = s->per_chip, hc = s->hc;
  g_autofree guint32 *allowed = g_new (guint32, m);
  g_autofree guint8 *taken = g_new0 (guint8, m);
  g_autofree guint32 *center = g_new (guint32, hc);
  g_autofree guint32 *local_attach = NULL;
  guint n_allowed = 0;

  if (c->topology == ELK_TOPOLOGY_RING)
    {
      for (guint i = 0; i < m; i++)
        allowed[n_allowed++] = i;
      for (guint h = 0; h < hc; h++)
        center[h] = (guint32) (((guint64) h * m + m / (2 * hc)) / hc) % m;
    }
  else
    {
      guint R = c->rows, C = c->cols;
      g_autofree guint8 *seen = g_new0 (guint8, m);
#define ADD(r_, c_)                                                          \
  G_STMT_START                                                               \
  {                                                                          \
    guint id_ = (r_) * C + (c_);                                             \
    if (!seen[id_])                                                          \
      {                                                                      \
        seen[id_] = 1;                                                       \
        allowed[n_allowed++] = id_;                                          \
      }                                                                      \
  }                                                                          \
  G_STMT_END
      if (c->placement == NOC_PLACE_COORDS)
        {
          for (guint i = 0; i < m; i++)
            allowed[n_allowed++] = i;
        }
      else if (c->placement == NOC_PLACE_ONE_EDGE)
        {
          for (guint j = 0; j < C; j++)
            ADD (0, j);
        }
      else
        {
          /* The perimeter, clockwise from the top-left corner. */
          for (guint j = 0; j < C; j++)
            ADD (0, j);
          for (guint i = 1; i < R; i++)
            ADD (i, C - 1);
          for (guint j = C; j-- > 0;)
            ADD (R - 1, j);
          for (guint i = R; i-- > 1;)
            ADD (i, 0);
        }
#undef ADD
      for (guint h = 0; h < hc; h++)
        {
          switch (c->placement)
            {
            case NOC_PLACE_EDGES:
            case NOC_PLACE_ONE_EDGE:
              center[h] = allowed[(guint) (((guint64) h * n_allowed
                                            + n_allowed / (2 * hc))
                                           / hc) % n_allowed];
              break;
            case NOC_PLACE_CORNERS:
              {
                static const guint corner[4][2] = { { 0, 0 }, { 0, 1 },
                                                    { 1, 1 }, { 1, 0 } };
                center[h] = corner[h % 4][0] * (R - 1) * C
                            + corner[h % 4][1] * (C - 1);
                break;
              }
            case NOC_PLACE_COORDS:
              {
                guint r = c->coords[2 * h], col = c->coords[2 * h + 1];
                if (r >= R || col >= C)
                  {
                    g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG,
                                 "chip 'noc-sim': hbm-coords: controller %u "
                                 "at row %u, column %u is off the %ux%u grid "
                                 "(rows 0-%u, columns 0-%u)", h, r, col, R, C,
                                 R - 1, C - 1);
                    return FALSE;
                  }
                center[h] = r * C + col;
                break;
              }
            default:
              g_assert_not_reached ();
            }
        }
    }

  s->attach = c->hbm_attach > 0 ? c->hbm_attach : MAX (1u, n_allowed / hc);
  if (s->attach > n_allowed)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG,
                   "chip 'noc-sim': hbm-attach = %u, but the placement offers "
                   "only %u routers per chip", s->attach, n_allowed);
      return FALSE;
    }
  /* Each controller takes the routers nearest its centre that no earlier
   * controller took, so that controllers do not share attachment links
   * unless the placement forces it (corners with many controllers). */
  local_attach = g_new (guint32, (gsize) hc * s->attach);
  for (guint h = 0; h < hc; h++)
    {
      guint got = 0;
      for (guint pass = 0; pass < 2 && got < s->attach; pass++)
        while (got < s->attach)
          {
            guint best = G_MAXUINT, bd = G_MAXUINT;
            for (guint i = 0; i < n_allowed; i++)
              {
                guint d;
                if (taken[allowed[i]] > pass)
                  continue;
                d = manhattan (s, center[h], allowed[i]);
                if (d < bd)
                  {
                    bd = d;
                    best = allowed[i];
                  }
              }
            if (best == G_MAXUINT)
              break;
            taken[best]++;
            local_attach[h * s->attach + got++] = best;
          }
    }

  s->attach_router = g_new (guint32, (gsize) c->hbm_channels * s->attach);
  s->attach_for = g_new (guint16, (gsize) c->hbm_channels * m);
  s->near_ctrl = g_new (guint16, m);
  for (guint h = 0; h < c->hbm_channels; h++)
    {
      guint chip = h / hc, hl = h % hc;
      for (guint a = 0; a < s->attach; a++)
        s->attach_router[h * s->attach + a]
          = chip * m + local_attach[hl * s->attach + a];
    }
  for (guint l = 0; l < m; l++)
    {
      guint best_h = 0, best_d = G_MAXUINT;
      for (guint hl = 0; hl < hc; hl++)
        {
          guint ba = 0, bd = G_MAXUINT;
          for (guint a = 0; a < s->attach; a++)
            {
              guint d = manhattan (s, local_attach[hl * s->attach + a], l);
              if (d < bd)
                {
                  bd = d;
                  ba = a;
                }
            }
          for (guint chip = 0; chip < c->chips; chip++)
            s->attach_for[(chip * hc + hl) * (gsize) m + l] = (guint16) ba;
          if (bd < best_d)
            {
              best_d = bd;
              best_h = hl;
            }
        }
      s->near_ctrl[l] = (guint16) best_h;
    }
  return TRUE;
}

NocSim *
elk__noc_sim_new (const NocConfig *config, GError **error)
{
  g_autoptr(NocSim) s = g_new0 (NocSim, 1);
  const NocConfig *c = &s->cfg;
  guint n;

  s->cfg = *config;
  s->cfg.coords = g_memdup2 (config->coords,
                             sizeof (guint) * 2 * config->n_coords);
  s->per_chip = c->cores / c->chips;
  s->hc = c->hbm_channels / c->chips;
  /* reduce=auto: on all-to-all every pair of cores is two hops apart, so
   * a 2-D reduce-scatter would save no link traffic and cost a second
   * barrier; keep the one-round exchange there (and so the results
   * checked against the analytic chip).  Everywhere else distance
   * matters. */
  if (s->cfg.reduce == NOC_REDUCE_AUTO)
    s->cfg.reduce = c->topology == ELK_TOPOLOGY_ALL_TO_ALL ? NOC_REDUCE_EXCHANGE
                                                          : NOC_REDUCE_2D;
  switch (c->topology)
    {
    case ELK_TOPOLOGY_MESH:
    case ELK_TOPOLOGY_TORUS:
      s->n_core_links = 4 * c->cores;
      break;
    case ELK_TOPOLOGY_RING:
      s->n_core_links = 2 * c->cores;
      break;
    default:
      s->n_core_links = 2 * c->cores;
    }
  s->read_base = s->n_core_links;
  s->attach_base = s->read_base + c->hbm_channels;
  if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
    s->attach = 0;
  else if (!place_controllers (s, error))
    return NULL;
  n = s->attach_base + c->hbm_channels * s->attach;
  s->interchip = c->chips > 1 ? n++ : G_MAXUINT;
  s->n_links = n;
  s->links = g_new0 (Link, n);
  s->ls = g_new0 (LinkState, n);
  for (guint i = 0; i < n; i++)
    {
      Link *l = &s->links[i];
      l->track = -1;
      l->present = 1;
      s->ls[i].queue = NONE;
      l->bw = c->link_bw;
      l->lat = c->hop_latency;
      if (i >= s->read_base && i < s->attach_base)
        {
          l->bw = c->hbm_bw / c->hbm_channels;
          l->lat = c->hbm_latency;
        }
      else if (i >= s->attach_base && i != s->interchip)
        l->bw = c->hbm_port_bw;
      else if (i == s->interchip)
        l->bw = c->inter_chip_bw;
    }
  if (c->topology == ELK_TOPOLOGY_MESH)
    for (guint g = 0; g < c->cores; g++)
      {
        guint l = g % s->per_chip, r = l / c->cols, col = l % c->cols;
        s->links[mesh_link (g, DIR_E)].present = col + 1 < c->cols;
        s->links[mesh_link (g, DIR_W)].present = col > 0;
        s->links[mesh_link (g, DIR_S)].present = r + 1 < c->rows;
        s->links[mesh_link (g, DIR_N)].present = r > 0;
      }
  if (c->topology == ELK_TOPOLOGY_TORUS)
    for (guint g = 0; g < c->cores; g++)
      {
        /* A torus dimension of one has no links; of two, one pair. */
        s->links[mesh_link (g, DIR_E)].present = c->cols > 1;
        s->links[mesh_link (g, DIR_W)].present = c->cols > 2;
        s->links[mesh_link (g, DIR_S)].present = c->rows > 1;
        s->links[mesh_link (g, DIR_N)].present = c->rows > 2;
      }
  s->max_path = 8 + 2 * (c->rows + c->cols) + 2 * s->per_chip;
  s->path = g_new (guint32, s->max_path);
  s->heap_cap = 64 + c->hbm_channels;
  s->heap = g_new (Event, s->heap_cap);
  s->bucket = g_new (Bucket, RING_N);
  for (guint i = 0; i < RING_N; i++)
    s->bucket[i].first = s->bucket[i].last = NONE;
  s->bmap = g_new0 (guint64, RING_N / 64);
  /* The window is one hop latency, the shortest time from an arrival to
   * the next one it causes.  With no latency at all, windows of 1 ps keep
   * the arrivals of one window nearly simultaneous; arrivals caused inside
   * a window are then served in that window in the order they come. */
  s->inv_w = 1.0 / (c->hop_latency > 1e-12 ? c->hop_latency : 1e-12);
  s->core_rate = c->core_gap > 0 ? 1.0 / c->core_gap : INFINITY;
  s->chunk_free = NONE;
  s->far_free = NONE;
  s->active_cap = 1024;
  s->active = g_new (guint32, s->active_cap);
  {
    /* A ring is one wrapping row of per_chip positions. */
    guint nr = c->topology == ELK_TOPOLOGY_RING ? 1 : MAX (1u, c->rows);
    guint nc = c->topology == ELK_TOPOLOGY_RING ? s->per_chip
                                                : MAX (1u, c->cols);
    double *pre;
    s->xl_cnt = g_new (double, c->chips);
    s->xl_rows = g_new (double, (gsize) c->chips * nr);
    s->xl_cols = g_new (double, (gsize) c->chips * nc);
    s->xl_prefix = pre = g_new (double, (gsize) c->chips * 2
                                          * ((3 * nr + 1) + (3 * nc + 1)));
    s->xl_ra = g_new (Axis, c->chips);
    s->xl_ca = g_new (Axis, c->chips);
    for (guint k = 0; k < c->chips; k++)
      {
        s->xl_ra[k].n = pre;
        s->xl_ra[k].w = pre + 3 * nr + 1;
        pre += 2 * (3 * nr + 1);
        s->xl_ca[k].n = pre;
        s->xl_ca[k].w = pre + 3 * nc + 1;
        pre += 2 * (3 * nc + 1);
      }
    s->xl_group = g_new (guint32, c->cores);
  }
  return g_steal_pointer (&s);
}

void
elk__noc_sim_free (NocSim *s)
{
  if (s == NULL)
    return;
  g_free (s->cfg.coords);
  g_free (s->links);
  g_free (s->ls);
  g_free (s->attach_router);
  g_free (s->attach_for);
  g_free (s->near_ctrl);
  g_free (s->path);
  g_free (s->heap);
  g_aligned_free (s->pool);
  g_free (s->chunk_next);
  g_free (s->chain);
  g_free (s->far);
  g_free (s->far_next);
  g_free (s->bucket);
  g_free (s->bmap);
  g_free (s->active);
  g_free (s->sortbuf);
  g_free (s->has_preload);
  g_free (s->preload_done);
  g_free (s->pq);
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
  g_free (s->rounds);
  g_free (s->nbr);
  g_free (s->holders);
  g_free (s->xl_cnt);
  g_free (s->xl_rows);
  g_free (s->xl_cols);
  g_free (s->xl_prefix);
  g_free (s->xl_ra);
  g_free (s->xl_ca);
  g_free (s->xl_group);
  if (s->intervals != NULL)
    g_array_unref (s->intervals);
  g_free (s);
}

/* ---------------------------------------------------------------------- */
/* Transfers: routing on the fly. */

/* The link a transfer takes from the router (or port) its head is at, or
 * NONE when it has arrived.  Same routes as route(): dimension order,
 * columns first, and over the chip's gateway to another chip. */
static inline guint32
train_route (NocSim *s, Train *t)
{
  const NocConfig *c = &s->cfg;
  guint32 g = t->chip * s->per_chip;

  switch (c->topology)
    {
    case ELK_TOPOLOGY_MESH:
      g += (guint32) t->r * c->cols + t->c;
      if (t->c != t->tc)
        return mesh_link (g, t->c < t->tc ? DIR_E : DIR_W);
      if (t->r != t->tr)
        return mesh_link (g, t->r < t->tr ? DIR_S : DIR_N);
      break;
    case ELK_TOPOLOGY_TORUS:
      g += (guint32) t->r * c->cols + t->c;
      if (t->c != t->tc)
        {
          guint fwd = (t->tc + c->cols - t->c) % c->cols;
          return mesh_link (g, fwd <= c->cols - fwd ? DIR_E : DIR_W);
        }
      if (t->r != t->tr)
        {
          guint fwd = (t->tr + c->rows - t->r) % c->rows;
          return mesh_link (g, fwd <= c->rows - fwd ? DIR_S : DIR_N);
        }
      break;
    case ELK_TOPOLOGY_RING:
      if (t->c != t->tc)
        {
          guint m = s->per_chip, fwd = (t->tc + m - t->c) % m;
          return (g + t->c) * 2 + (fwd <= m - fwd ? 0 : 1);
        }
      break;
    case ELK_TOPOLOGY_ALL_TO_ALL:
    default:
      /* Egress port, maybe the inter-chip link, ingress port. */
      if (t->link < c->cores)
        return t->dst / s->per_chip != t->link / s->per_chip
                 ? s->interchip : c->cores + t->dst;
      if (t->link == s->interchip)
        return c->cores + t->dst;
      return NONE;
    }
  /* At the router it headed for: the destination, or the gateway. */
  return t->stage == 0 ? s->interchip : NONE;
}

/* Puts the head at local router @l of chip @chip. */
static inline void
train_place (NocSim *s, Train *t, guint chip, guint l)
{
  const NocConfig *c = &s->cfg;

  t->chip = (guint16) chip;
  if (c->topology == ELK_TOPOLOGY_RING)
    {
      t->r = 0;
      t->c = (guint16) l;
    }
  else
    {
      t->r = (guint16) (l / c->cols);
      t->c = (guint16) (l % c->cols);
    }
}

/* Sets where a transfer whose head is at its first router heads for: the
 * destination on this chip, or the gateway out of it (the east-edge router
 * of the head's row, or the single gateway; the ring's first core). */
static inline void
train_aim (NocSim *s, Train *t)
{
  const NocConfig *c = &s->cfg;
  guint dchip = t->dst / s->per_chip, dl = t->dst % s->per_chip;

  if (dchip == t->chip)
    {
      t->stage = 1;
      if (c->topology == ELK_TOPOLOGY_RING)
        {
          t->tr = 0;
          t->tc = (guint16) dl;
        }
      else
        {
          t->tr = (guint16) (dl / c->cols);
          t->tc = (guint16) (dl % c->cols);
        }
      return;
    }
  t->stage = 0;
  if (c->topology == ELK_TOPOLOGY_RING)
    t->tr = t->tc = 0;
  else
    {
      t->tr = c->gateway == NOC_GATEWAY_EDGE ? t->r : (guint16) (c->rows / 2);
      t->tc = (guint16) (c->cols - 1);
    }
}

/* Moves the head of @t across its link, to the router at the far end. */
static inline void
train_cross (NocSim *s, Train *t)
{
  const NocConfig *c = &s->cfg;
  guint32 li = t->link;

  if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
    return;
  if (li < s->n_core_links)
    {
      if (c->topology == ELK_TOPOLOGY_RING)
        {
          guint m = s->per_chip;
          t->c = (guint16) ((li & 1) ? (t->c + m - 1) % m : (t->c + 1) % m);
          return;
        }
      switch (li & 3)
        {
        case DIR_E:
          t->c = (guint16) (t->c + 1u == c->cols ? 0u : t->c + 1u);
          break;
        case DIR_W:
          t->c = (guint16) (t->c == 0 ? c->cols - 1u : t->c - 1u);
          break;
        case DIR_S:
          t->r = (guint16) (t->r + 1u == c->rows ? 0u : t->r + 1u);
          break;
        default:
          t->r = (guint16) (t->r == 0 ? c->rows - 1u : t->r - 1u);
        }
      return;
    }
  if (li == s->interchip)
    {
      /* Into the destination chip at the west-edge router of the row it
       * left from (or the single gateway, or the ring's first core). */
      t->chip = (guint16) (t->dst / s->per_chip);
      t->crossed = 1;
      if (c->topology == ELK_TOPOLOGY_RING)
        t->c = 0;
      else
        {
          if (c->gateway != NOC_GATEWAY_EDGE)
            t->r = (guint16) (c->rows / 2);
          t->c = 0;
        }
      train_aim (s, t);
      return;
    }
  if (li >= s->attach_base)
    {
      guint g = s->attach_router[li - s->attach_base];
      train_place (s, t, g / s->per_chip, g % s->per_chip);
      train_aim (s, t);
    }
}

/* Routes as the transfers walk them, for the tests. */
guint
elk__noc_sim_walk_route (NocSim *s, guint src, guint dst, guint32 *links,
                         guint max_links)
{
  Train t = { 0 };
  guint n = 0;

  t.dst = dst;
  if (s->cfg.topology == ELK_TOPOLOGY_ALL_TO_ALL)
    t.link = src != dst ? src : NONE;
  else
    {
      train_place (s, &t, src / s->per_chip, src % s->per_chip);
      train_aim (s, &t);
      t.link = train_route (s, &t);
    }
  while (t.link != NONE)
    {
      if (n < max_links)
        links[n] = t.link;
      n++;
      train_cross (s, &t);
      t.link = train_route (s, &t);
    }
  return n;
}

/* ---------------------------------------------------------------------- */
/* Transfers: the pool, the calendar and the FIFO service. */

G_GNUC_NO_INLINE static void
pool_grow (NocSim *s)
{
  guint32 old = s->pool_chunks, cap = MAX (256u, 2 * old);
  /* Cache-line aligned, so that a transfer is one line. */
  Train *pool = g_aligned_alloc ((gsize) cap * CHUNK, sizeof (Train), 64);

  if (old > 0)
    memcpy (pool, s->pool, (gsize) old * CHUNK * sizeof (Train));
  g_aligned_free (s->pool);
  s->pool = pool;
  s->chain = g_renew (guint32, s->chain, (gsize) cap * CHUNK);
  s->chunk_next = g_renew (guint32, s->chunk_next, cap);
  for (guint32 i = old; i < cap; i++)
    s->chunk_next[i] = i + 1 < cap ? i + 1 : s->chunk_free;
  s->chunk_free = old;
  s->pool_chunks = cap;
}

/* Appends a copy of @t to bucket @b; returns its pool slot.  May move the
 * pool: callers hold slots, not pointers, across calls. */
static inline guint32
bucket_append (NocSim *s, guint32 b, const Train *t)
{
  Bucket *B = &s->bucket[b];
  guint32 slot;

  if (B->first == NONE || B->fill == CHUNK)
    {
      guint32 ch;
      if (G_UNLIKELY (s->chunk_free == NONE))
        pool_grow (s);
      ch = s->chunk_free;
      s->chunk_free = s->chunk_next[ch];
      s->chunk_next[ch] = NONE;
      if (B->first == NONE)
        {
          B->first = ch;
          s->bmap[b >> 6] |= G_GUINT64_CONSTANT (1) << (b & 63);
        }
      else
        s->chunk_next[B->last] = ch;
      B->last = ch;
      B->fill = 0;
    }
  slot = B->last * CHUNK + B->fill++;
  s->pool[slot] = *t;
  return slot;
}

/* Gives bucket @b's chunks back. */
static void
bucket_clear (NocSim *s, guint32 b)
{
  Bucket *B = &s->bucket[b];

  if (B->first == NONE)
    return;
  s->chunk_next[B->last] = s->chunk_free;
  s->chunk_free = B->first;
  B->first = B->last = NONE;
  s->bmap[b >> 6] &= ~(G_GUINT64_CONSTANT (1) << (b & 63));
}

/* A new transfer of @bytes whose head is at @head, injected now (for the
 * tie-break); the caller places it and sets its first link. */
static inline void
train_init (NocSim *s, Train *t, double head, double tail, double bytes,
            gboolean capped, guint8 kind, guint dst)
{
  t->head = head;
  t->tail = tail;
  t->bytes = bytes;
  t->ser = bytes / (capped && s->core_rate < s->cfg.link_bw ? s->core_rate
                                                            : s->cfg.link_bw);
  t->seq = s->train_seq++;
  t->dst = dst;
  t->hops = 0;
  t->kind = kind;
  t->capped = (guint8) capped;
  t->crossed = 0;
}

/* Puts pool slot @slot into its link's queue for the current window. */
static inline void
link_enqueue (NocSim *s, guint32 slot)
{
  guint32 li = s->pool[slot].link;
  LinkState *l = &s->ls[li];

  if (l->queue == NONE)
    {
      if (G_UNLIKELY (s->n_active == s->active_cap))
        {
          s->active_cap *= 2;
          s->active = g_renew (guint32, s->active, s->active_cap);
        }
      s->active[s->n_active++] = li;
    }
  s->chain[slot] = l->queue;
  l->queue = slot;
}

static inline gint64
window_of (const NocSim *s, double t)
{
  return (gint64) (t * s->inv_w);
}

/* Files the arrival of @t's head at its link: in the current window
 * straight into the link's queue, in the ring's horizon into its window's
 * bucket, beyond it into the heap. */
static inline void
train_schedule (NocSim *s, const Train *t)
{
  gint64 w = window_of (s, t->head);

  if (w <= s->cur_w)
    link_enqueue (s, bucket_append (s, (guint32) s->cur_w & (RING_N - 1), t));
  else if (w - s->cur_w < (gint64) RING_N)
    {
      bucket_append (s, (guint32) w & (RING_N - 1), t);
      s->ring_n++;
      if (w < s->ring_lo)
        s->ring_lo = w;
    }
  else
    {
      guint32 f;
      if (G_UNLIKELY (s->far_free == NONE))
        {
          guint32 old = s->far_cap, cap = MAX (64u, 2 * old);
          s->far = g_renew (Train, s->far, cap);
          s->far_next = g_renew (guint32, s->far_next, cap);
          for (guint32 i = old; i < cap; i++)
            s->far_next[i] = i + 1 < cap ? i + 1 : NONE;
          s->far_free = old;
          s->far_cap = cap;
        }
      f = s->far_free;
      s->far_free = s->far_next[f];
      s->far[f] = *t;
      heap_push (s, t->head, EV_HOP, f);
    }
}

/* An arrival from the heap joins the current window. */
static void
far_arrive (NocSim *s, guint32 f)
{
  Train t = s->far[f];

  s->far_next[f] = s->far_free;
  s->far_free = f;
  link_enqueue (s, bucket_append (s, (guint32) s->cur_w & (RING_N - 1), &t));
}

/* The first window after the current one with a bucket in the ring; the
 * ring must not be empty.  ring_lo saves rescanning empty windows. */
static gint64
ring_next (NocSim *s)
{
  gint64 from = MAX (s->cur_w + 1, s->ring_lo);
  guint32 start = (guint32) from & (RING_N - 1);
  guint32 wi = start >> 6;
  guint64 m = s->bmap[wi] & (~G_GUINT64_CONSTANT (0) << (start & 63));
  gint64 w;

  for (guint n = 0; m == 0 && n < RING_N / 64; n++)
    {
      wi = (wi + 1) & (RING_N / 64 - 1);
      m = s->bmap[wi];
    }
  g_assert (m != 0);
  w = from + (((wi << 6) + (guint32) __builtin_ctzll (m) - start)
              & (RING_N - 1));
  s->ring_lo = w;
  return w;
}

/* Puts the transfers of the current window's bucket into their links'
 * queues. */
static void
ring_drain (NocSim *s)
{
  Bucket *B = &s->bucket[(guint32) s->cur_w & (RING_N - 1)];

  for (guint32 ch = B->first; ch != NONE; ch = s->chunk_next[ch])
    {
      guint32 n = ch == B->last ? B->fill : CHUNK;
      for (guint32 i = 0; i < n; i++)
        {
          /* The links are random; fetch a few transfers ahead. */
          if (i + 4 < n)
            __builtin_prefetch (&s->ls[s->pool[ch * CHUNK + i + 4].link], 1);
          link_enqueue (s, ch * CHUNK + i);
        }
      s->ring_n -= n;
      s->events += n;
    }
}

static void train_arrive (NocSim *s, const Train *t, double arrive);

/* One FIFO service of the transfer in pool slot @slot at link @li. */
static inline void
train_serve (NocSim *s, guint32 li, guint32 slot)
{
  LinkState *l = &s->ls[li];
  Train t = s->pool[slot];
  /* Every link a transfer crosses has the hop latency; the attachments
   * and the inter-chip link have their own bandwidth. */
  double ser = t.ser, st, end, lat = s->cfg.hop_latency;

  if (G_UNLIKELY (li >= s->n_core_links))
    {
      double bw = s->links[li].bw;
      ser = t.bytes / (t.capped && s->core_rate < bw ? s->core_rate : bw);
    }
  st = t.head > l->free_at ? t.head : l->free_at;
  end = st + ser;
  /* The tail cannot leave before it arrived from the previous link. */
  if (end < t.tail + lat)
    end = t.tail + lat;
  l->free_at = end;
  l->busy += ser;
  l->bytes += t.bytes;
  if (G_UNLIKELY (s->link_tracks) && s->trace != NULL
      && s->links[li].track >= 0)
    elk_trace_add_span (s->trace, (guint) s->links[li].track, s->cur_name, st,
                        end - st);
  t.tail = end;
  t.hops++;
  train_cross (s, &t);
  t.link = train_route (s, &t);
  if (t.link == NONE)
    train_arrive (s, &t, end + lat);
  else
    {
      t.head = st + lat;
      train_schedule (s, &t);
    }
}

static int
sortkey_cmp (const void *a, const void *b)
{
  const struct SortKey *x = a, *y = b;

  if (x->head != y->head)
    return x->head < y->head ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Every link with arrivals in the current window serves them in arrival
 * order (ties: injection order). */
static void
serve_window (NocSim *s)
{
  for (guint a = 0; a < s->n_active; a++)
    {
      guint32 li = s->active[a], n = 0;
      LinkState *l = &s->ls[li];
      struct SortKey *k;

      for (guint32 x = l->queue; x != NONE; x = s->chain[x])
        {
          if (G_UNLIKELY (n == s->sortbuf_cap))
            {
              s->sortbuf_cap = MAX (1024u, 2 * s->sortbuf_cap);
              s->sortbuf = g_renew (struct SortKey, s->sortbuf,
                                    s->sortbuf_cap);
            }
          s->sortbuf[n].head = s->pool[x].head;
          s->sortbuf[n].seq = s->pool[x].seq;
          s->sortbuf[n].id = x;
          n++;
        }
      l->queue = NONE;
      k = s->sortbuf;
      if (n > 1)
        {
          /* The queue is newest first; arrivals mostly come in order. */
          for (guint32 i = 0, j = n - 1; i < j; i++, j--)
            {
              struct SortKey x = k[i];
              k[i] = k[j];
              k[j] = x;
            }
          /* A core's transfers of one round reach its first link
           * together, already in order: sort only what is not. */
          guint32 u = 1;
          while (u < n && sortkey_cmp (&k[u - 1], &k[u]) <= 0)
            u++;
          if (u == n)
            ;
          else if (n <= 32)
            for (guint32 i = u; i < n; i++)
              {
                struct SortKey x = k[i];
                guint32 j = i;
                while (j > 0 && sortkey_cmp (&k[j - 1], &x) > 0)
                  {
                    k[j] = k[j - 1];
                    j--;
                  }
                k[j] = x;
              }
          else
            qsort (k, n, sizeof *k, sortkey_cmp);
        }
      for (guint32 i = 0; i < n; i++)
        train_serve (s, li, k[i].id);
    }
  s->n_active = 0;
}

/* ---------------------------------------------------------------------- */
/* Route booking (arbitration = booking): a transfer reserves its whole
 * route when it is sent, so links serve transfers in send order. */

typedef struct
{
  double head;    /* when the head may enter the next link */
  double tail;    /* when the tail left the previous link */
  double arrive;  /* when the tail reached the far end of the last link */
  double max_ser; /* largest serialisation on the route (for stall) */
  double lat_sum;
} Walk;

static inline void
walk_start (Walk *w, double head, double tail)
{
  w->head = head;
  w->tail = tail;
  w->arrive = head;
  w->max_ser = 0;
  w->lat_sum = 0;
}

/* Walks s->path[0..n): one FIFO service per link, behind what the link
 * already accepted.  Most links of a route share one bandwidth, so the
 * serialisation time is computed once per bandwidth change. */
static void
walk_path (NocSim *s, Walk *w, double bytes, double rate, guint n)
{
  /* Routes cross only links of the hop latency; the attachments and the
   * inter-chip link have their own bandwidth.  Only the state array is
   * touched per hop. */
  double lat = s->cfg.hop_latency;
  double ser_core = bytes / (s->cfg.link_bw < rate ? s->cfg.link_bw : rate);

  for (guint i = 0; i < n; i++)
    {
      guint32 li = s->path[i];
      LinkState *ls = &s->ls[li];
      double st, end, ser = ser_core;
      if (G_UNLIKELY (li >= s->n_core_links))
        {
          double bw = s->links[li].bw;
          ser = bytes / (bw < rate ? bw : rate);
        }
      st = w->head > ls->free_at ? w->head : ls->free_at;
      end = st + ser;
      if (end < w->tail + lat)
        end = w->tail + lat;
      ls->free_at = end;
      ls->busy += ser;
      ls->bytes += bytes;
      if (G_UNLIKELY (s->link_tracks) && s->trace != NULL
          && s->links[li].track >= 0)
        elk_trace_add_span (s->trace, (guint) s->links[li].track,
                            s->cur_name, st, end - st);
      w->head = st + lat;
      w->tail = end;
      if (ser > w->max_ser)
        w->max_ser = ser;
    }
  if (n > 0)
    w->arrive = w->tail + lat;
  w->lat_sum = n * lat;
  s->hops += n;
}

/* ---------------------------------------------------------------------- */
/* Layouts and rings. */

static void
layout_init (Layout *L, const ElkGraph *graph, guint op_id,
             const ElkPlan *plan, const ElkPlan *hot)
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
layout_split (const Layout *L, guint32 core, guint32 *idx)
{
  for (guint k = 0; k < L->n_dims; k++)
    {
      guint d = L->order[k];
      idx[d] = core % L->spatial[d];
      core /= L->spatial[d];
    }
}

static inline guint32
layout_join (const Layout *L, const guint32 *idx)
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
replica_index (const Layout *L, guint v, const guint32 *idx, guint32 *size)
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
replica_set (const Layout *L, guint v, guint32 *idx, guint32 j)
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

/* Ring neighbours inside replica groups: positions j = base + stride * p,
 * p = 0..size-1, pass to p + 1. */
static void
ring_fill (const Layout *L, guint v, guint stride, guint size, guint32 *out)
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
      nj = j - pos * stride + ((pos + 1) % size) * stride;
      if (nj >= R)
        nj = j;
      replica_set (L, v, idx, nj);
      out[c] = layout_join (L, idx);
    }
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
      Interval iv = { a, b, kind };
      g_array_append_val (s->intervals, iv);
    }
}

/* ---------------------------------------------------------------------- */
/* Preloads. */

static void advance (NocSim *s, double now);

static void
preload_start (NocSim *s, guint op_id, double now)
{
  const NocConfig *c = &s->cfg;
  ElkProgramOp *pop = elk_program_get_op (s->program, op_id);
  const ElkOp *op = elk_graph_get_op (s->graph, op_id);
  const ElkPlan *cold = &pop->preload_plan, *hot = &pop->exec_plan;
  Layout *L = &s->layout;
  guint np = 0, nd = 0;
  guint H = c->hbm_channels;
  g_autofree double *ctrl_bytes = NULL;
  double ctrl_bw = c->hbm_bw / H;

  s->preload_active = TRUE;
  s->preload_op = op_id;
  s->preload_start = now;
  s->preload_max_arrive = now;
  layout_init (L, s->graph, op_id, cold, hot);
  if (L->cores_used > c->cores)
    L->cores_used = 0; /* validated earlier; never sends off-chip ghosts */

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
              guint chip = s->dests[nd + a] / s->per_chip;
              guint32 b = a + 1;
              for (guint32 x = a + 1; x < r; x++)
                if (s->dests[nd + x] / s->per_chip == chip)
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
      if (c->interleave == NOC_INTERLEAVE_NEAREST
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
    g_autofree guint32 *owner = g_memdup2 (s->ctrl_list,
                                           sizeof (guint32) * MAX (np, 1u));
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
      s->preload_hbm_ideal = MAX (s->preload_hbm_ideal,
                                  ctrl_bytes[h] / ctrl_bw);
      if (maxk > 0)
        {
          s->ctrl_active++;
          heap_push (s, now, EV_CTRL, h);
        }
    }
  if (s->preload_hbm_ideal > 0)
    s->preload_hbm_ideal += c->hbm_latency;
  if (s->ctrl_active == 0)
    heap_push (s, now, EV_PRELOAD_DONE, op_id);
}

/* One packet read by controller @h, then sent to every holder. */
static void
ctrl_step (NocSim *s, guint h, double now)
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
            heap_push (s, MAX (now, s->preload_max_arrive), EV_PRELOAD_DONE,
                       s->preload_op);
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
    LinkState *rl = &s->ls[s->read_base + h];
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
      Train tr, *t = &tr;

      if (c->arbitration == NOC_ARBITRATION_BOOKING)
        {
          Walk x;
          guint n = 0;
          if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
            {
              if (dst / s->per_chip != chip)
                s->path[n++] = s->interchip;
              s->path[n++] = c->cores + dst;
            }
          else
            {
              guint a = s->attach_for[(gsize) h * s->per_chip
                                      + dst % s->per_chip];
              guint router = s->attach_router[h * s->attach + a];
              s->path[n++] = s->attach_base + h * s->attach + a;
              if (dst / s->per_chip == chip)
                n = route_local (s, router, dst, n);
              else
                {
                  n = route_local (s, router,
                                   gateway (s, chip, TRUE, router), n);
                  s->path[n++] = s->interchip;
                  n = route_local (s, gateway (s, dst / s->per_chip, FALSE,
                                               router), dst, n);
                }
            }
          /* The copy starts with the read's head, behind its tail. */
          walk_start (&x, head, tail);
          walk_path (s, &x, bytes, INFINITY, n);
          s->kind_hops[5] += n;
          s->noc_bytes += bytes;
          if (dst / s->per_chip != chip)
            s->xchip[5] += bytes;
          if (x.arrive > s->preload_max_arrive)
            s->preload_max_arrive = x.arrive;
          continue;
        }
      train_init (s, t, head, tail, bytes, FALSE, 5, dst);
      /* The read already happened; the copy starts with its head, on the
       * controller's attachment nearest the holder (all-to-all: straight
       * into the holder's ingress port, over the inter-chip link if the
       * holder is on another chip). */
      if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
        t->link = dst / s->per_chip != chip ? s->interchip : c->cores + dst;
      else
        {
          guint a = s->attach_for[(gsize) h * s->per_chip
                                  + dst % s->per_chip];
          t->link = s->attach_base + h * s->attach + a;
        }
      s->copies_left++;
      s->noc_bytes += bytes;
      if (dst / s->per_chip != chip)
        s->xchip[5] += bytes;
      train_schedule (s, t);
    }
  /* The controller reads its next packet when this read is done. */
  heap_push (s, MAX (now, s->ls[s->read_base + h].free_at), EV_CTRL, h);
}

static void
preload_done (NocSim *s, guint op_id, double now)
{
  const ElkOp *op = elk_graph_get_op (s->graph, op_id);

  s->preload_done[op_id] = TRUE;
  s->preload_active = FALSE;
  interval (s, IV_PRELOAD, s->preload_start, now);
  /* Beyond what the controllers needed to read the data, the preload
   * waited on the network. */
  interval (s, IV_STALL_PRELOAD, s->preload_start + s->preload_hbm_ideal, now);
  if (s->trace != NULL)
    elk_trace_add_span (s->trace, s->tr_preload, op->name, s->preload_start,
                        now - s->preload_start);
  s->last_end = MAX (s->last_end, now);
  if (s->pq_head < s->pq_tail)
    preload_start (s, s->pq[s->pq_head++], now);
}

/* ---------------------------------------------------------------------- */
/* Executions. */

static Round *
round_add (NocSim *s)
{
  if (s->n_rounds == s->rounds_cap)
    {
      s->rounds_cap = MAX (64u, 2 * s->rounds_cap);
      s->rounds = g_renew (Round, s->rounds, s->rounds_cap);
    }
  memset (&s->rounds[s->n_rounds], 0, sizeof (Round));
  return &s->rounds[s->n_rounds++];
}

/* Data distribution: a ring all-gather of the parts of each operand that
 * the preload state holds rotated further than the execute state. */
static void
distribution_rounds (NocSim *s, const ElkPlan *cold, const ElkPlan *hot)
{
  const NocConfig *c = &s->cfg;
  Layout *L = &s->layout;
  guint32 *nbr = s->nbr;
  gsize stride = c->cores;


  if (same_spatial (cold, hot))
    for (guint v = 1; v < L->n_operands; v++)
      {
        guint32 th = temporal_product (hot, v), tc = temporal_product (cold, v);
        if (tc <= th || tc % th != 0)
          continue;
        ring_fill (L, v, th, tc / th, nbr + (RING_WARM * ELK_MAX_OPERANDS + v) * stride);
        for (guint m = 1; m < tc / th; m++)
          {
            Round *r = round_add (s);
            r->operand = v;
            r->ring = RING_WARM;
            r->kind = 1;
            r->bytes = (double) cold->operand_bytes[v];
            r->sync = c->sync_s;
          }
      }
}

/* The shift schedule: per dimension, gcd rounds of the factors still
 * above one; over all dimensions, the round moving most bytes per shift
 * outermost. */
static void
shift_rounds (NocSim *s, const ElkPlan *hot)
{
  const NocConfig *c = &s->cfg;
  Layout *L = &s->layout;
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
                b += (double) hot->operand_bytes[v];
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
        ring_fill (L, v, 1, t, nbr + (RING_HOT * ELK_MAX_OPERANDS + v) * stride);
    }
  for (guint64 st = 0; st < K; st++)
    {
      double comp = hot->compute_s / (double) K;
      gint i;
      if (st + 1 == K)
        {
          Round *r = round_add (s);
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
            Round *r = round_add (s);
            r->compute = comp;
            comp = 0;
            r->operand = v;
            r->ring = RING_HOT;
            r->kind = 0;
            r->bytes = (double) hot->operand_bytes[v];
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
  Layout *L = &s->layout;
  guint32 *nbr = s->nbr;
  gsize stride = c->cores;


  if (op->kind == ELK_OP_ELEMENTWISE || op->kind == ELK_OP_UNARY
      || op->kind == ELK_OP_POOL)
    {
      Round *r = round_add (s);
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
      double outb = (double) hot->operand_bytes[0];

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
          Round *r;
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
          r->compute = (cc->reduce_slope * (chunk1 / esize) * split
                        + cc->reduce_fixed) / c->clock_hz;
          r->ring = RING_REDUCE2;
          r->kind = 2;
          r->bytes = chunk2;
          r->fanout = b - 1;
          r->sync = c->syncs_per_shift * c->sync_s;
          r = round_add (s);
          r->kind = 4;
          r->compute = (cc->reduce_slope * (chunk2 / esize) * b
                        + cc->reduce_fixed) / c->clock_hz;
        }
      else if (rout > 1 && use_ring)
        {
          /* Ring reduce-scatter: rout - 1 steps, each sends one chunk to
           * the next holder, then adds the chunk it received. */
          const ElkCostCoeffs *cc = &c->cost;
          double chunk = outb / rout;
          double add = (cc->reduce_slope * (chunk / esize) * 2
                        + cc->reduce_fixed) / c->clock_hz;
          ring_fill (L, 0, tout, rout,
                     nbr + (RING_REDUCE * ELK_MAX_OPERANDS) * stride);
          for (guint32 m = 1; m < rout; m++)
            {
              Round *r = round_add (s);
              r->compute = m > 1 ? add : 0;
              r->operand = 0;
              r->ring = RING_REDUCE;
              r->kind = 2;
              r->bytes = chunk;
              r->sync = c->syncs_per_shift * c->sync_s;
            }
          {
            Round *r = round_add (s);
            r->kind = 4;
            r->compute = add;
          }
        }
      else if (rout > 1)
        {
          /* Reduce-scatter in one exchange: every core sends each of the
           * other rout - 1 holders of its output the chunk that holder
           * reduces, then reduces rout partial chunks. */
          const ElkCostCoeffs *cc = &c->cost;
          double chunk = outb / rout;
          Round *r;
          ring_fill (L, 0, tout, rout,
                     nbr + (RING_REDUCE * ELK_MAX_OPERANDS) * stride);
          r = round_add (s);
          r->operand = 0;
          r->ring = RING_REDUCE;
          r->kind = 2;
          r->bytes = chunk;
          r->fanout = rout - 1;
          r->sync = c->syncs_per_shift * c->sync_s;
          r = round_add (s);
          r->kind = 4;
          r->compute = (cc->reduce_slope * (chunk / esize) * rout
                        + cc->reduce_fixed) / c->clock_hz;
        }
      {
        Round *r = round_add (s);
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
  Layout *L = &s->layout;

  s->n_rounds = 0;
  layout_init (L, s->graph, op_id, hot, hot);
  if (L->cores_used > c->cores)
    L->cores_used = c->cores;
  s->exec_cores = L->cores_used;

  distribution_rounds (s, cold, hot);
  shift_rounds (s, hot);
  output_rounds (s, op, hot);
}

static void
exec_start (NocSim *s, guint op_id, double now)
{
  s->exec_running = TRUE;
  s->exec_op = op_id;
  s->exec_start = now;
  s->round_i = 0;
  s->cur_name = elk_graph_get_op (s->graph, op_id)->name;
  build_rounds (s, op_id);
  heap_push (s, now + s->rounds[0].compute, EV_EXEC_ROUND, op_id);
}

static const char *round_names[] = { "shift", "distribute", "reduce",
                                     "shuffle", "compute" };

/* The barrier after the last transfer of the round arrived, then the next
 * round (after its compute) or the end of the execute. */
static void
round_finish (NocSim *s)
{
  const Round *r = &s->rounds[s->round_i];
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
    heap_push (s, barrier + s->rounds[s->round_i].compute, EV_EXEC_ROUND,
               s->exec_op);
  else
    heap_push (s, barrier, EV_EXEC_DONE, s->exec_op);
}

/* One round: every core injects its transfers; the round finishes when
 * the last one arrives. */
static void
exec_round (NocSim *s, double now)
{
  const NocConfig *c = &s->cfg;
  const Round *r = &s->rounds[s->round_i];

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
      const guint32 *nbr = s->nbr
                           + (r->ring * ELK_MAX_OPERANDS + r->operand)
                               * (gsize) c->cores;
      for (guint32 k = 0; k < s->exec_cores; k++)
        for (guint32 f = 0, dst = k; f < MAX (1u, r->fanout); f++)
        {
          Train tr, *t = &tr;
          /* The f-th peer is f + 1 ring positions on: follow the ring's
           * successor table (ring_peer without re-deriving the layout). */
          dst = nbr[dst];
          if (dst == k)
            continue;
          if (c->arbitration == NOC_ARBITRATION_BOOKING)
            {
              Walk w;
              guint n = route (s, k, dst);
              walk_start (&w, now, -INFINITY);
              walk_path (s, &w, r->bytes, s->core_rate, n);
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
          train_init (s, t, now, -INFINITY, r->bytes, TRUE, r->kind, dst);
          if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
            t->link = k;
          else
            {
              train_place (s, t, k / s->per_chip, k % s->per_chip);
              train_aim (s, t);
              t->link = train_route (s, t);
            }
          s->round_left++;
          s->noc_bytes += r->bytes;
          if (k / s->per_chip != dst / s->per_chip)
            s->xchip[r->kind] += r->bytes;
          train_schedule (s, t);
        }
    }
  if (s->round_left == 0)
    round_finish (s);
}

/* The tail of @id reached its destination at @arrive. */
static void
train_arrive (NocSim *s, const Train *t, double arrive)
{
  s->hops += t->hops;
  s->kind_hops[t->kind] += t->hops;
  if (t->kind == 5)
    {
      if (arrive > s->preload_max_arrive)
        s->preload_max_arrive = arrive;
      if (--s->copies_left == 0 && s->ctrl_active == 0)
        heap_push (s, s->preload_max_arrive, EV_PRELOAD_DONE, s->preload_op);
    }
  else
    {
      /* On idle links: one serialisation (the slowest link's) and one
       * latency per hop, cut-through. */
      double ideal = t->ser + t->hops * s->cfg.hop_latency;
      if (t->crossed)
        ideal = MAX (ideal, t->bytes / MIN (s->links[s->interchip].bw,
                                            t->capped ? s->core_rate
                                                      : INFINITY)
                              + t->hops * s->cfg.hop_latency);
      if (arrive > s->round_barrier)
        s->round_barrier = arrive;
      if (ideal > s->round_ideal)
        s->round_ideal = ideal;
      if (--s->round_left == 0)
        round_finish (s);
    }
}

static void
exec_done (NocSim *s, double now)
{
  const ElkOp *op = elk_graph_get_op (s->graph, s->exec_op);

  interval (s, IV_EXEC, s->exec_start, now);
  if (s->trace != NULL)
    elk_trace_add_span (s->trace, s->tr_exec, op->name, s->exec_start,
                        now - s->exec_start);
  s->exec_running = FALSE;
  s->last_end = MAX (s->last_end, now);
}

/* ---------------------------------------------------------------------- */
/* The program: R1-R3. */

static void
advance (NocSim *s, double now)
{
  while (s->pc < s->n_steps && !s->exec_running)
    {
      const ElkStep *st = elk_program_get_step (s->program, s->pc);
      if (st->kind == ELK_STEP_PRELOAD)
        {
          /* R2: preloads are queued in program order; R1: not before the
           * executes issued ahead of them have finished (the loop stops
           * while one runs). */
          if (s->preload_active)
            s->pq[s->pq_tail++] = st->op;
          else
            preload_start (s, st->op, now);
          s->pc++;
          continue;
        }
      /* R3: an execute waits for its own preload only. */
      if (s->has_preload[st->op] && !s->preload_done[st->op])
        break;
      s->pc++;
      exec_start (s, st->op, now);
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
      const Interval *iv = &g_array_index (ivs, Interval, i);
      p[n++] = (Point) { iv->start, iv->kind, +1 };
      p[n++] = (Point) { iv->end, iv->kind, -1 };
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
  s->n_active = 0;
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
                       "but the graph has %u", i, st->op, s->n_ops);
          return FALSE;
        }
      if (st->kind == ELK_STEP_PRELOAD)
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
                            pop->preload_plan.cores_used), c->cores);
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
  s->intervals = g_array_sized_new (FALSE, FALSE, sizeof (Interval),
                                    4 * s->n_ops);
  if (s->heap_cap < 64 + H)
    {
      s->heap_cap = 64 + H;
      s->heap = g_renew (Event, s->heap, s->heap_cap);
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
  advance (s, 0);
  for (;;)
    {
      /* The next window with anything in it. */
      gint64 w = G_MAXINT64;
      if (s->ring_n > 0)
        w = ring_next (s);
      if (s->heap_n > 0)
        w = MIN (w, window_of (s, s->heap[0].t));
      if (w == G_MAXINT64)
        break;
      s->cur_w = w;
      ring_drain (s);
      do
        {
          /* Heap events of this window in time order (they may add
           * arrivals to this window), then the links serve. */
          while (s->heap_n > 0 && window_of (s, s->heap[0].t) <= w)
            {
              Event e = heap_pop (s);
              s->events++;
              switch (e.kind)
                {
                case EV_HOP:
                  far_arrive (s, e.arg);
                  break;
                case EV_CTRL:
                  s->cur_name = "preload";
                  ctrl_step (s, e.arg, e.t);
                  break;
                case EV_PRELOAD_DONE:
                  preload_done (s, e.arg, e.t);
                  advance (s, e.t);
                  break;
                case EV_EXEC_ROUND:
                  s->cur_name = elk_graph_get_op (graph, e.arg)->name;
                  exec_round (s, e.t);
                  break;
                case EV_EXEC_DONE:
                  exec_done (s, e.t);
                  advance (s, e.t);
                  break;
                default:
                  g_assert_not_reached ();
                }
            }
          serve_window (s);
        }
      while (s->heap_n > 0 && window_of (s, s->heap[0].t) <= w);
      bucket_clear (s, (guint32) w & (RING_N - 1));
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
           "preload %.3g", s->kind_s[0], s->kind_s[1], s->kind_s[2],
           s->kind_s[3], s->kind_s[4], s->xchip[0], s->xchip[1], s->xchip[2],
           s->xchip[3], s->xchip[5]);
  g_debug ("link hops by round kind: shift %" G_GUINT64_FORMAT ", distribute %"
           G_GUINT64_FORMAT ", reduce %" G_GUINT64_FORMAT ", shuffle %"
           G_GUINT64_FORMAT ", preload %" G_GUINT64_FORMAT, s->kind_hops[0],
           s->kind_hops[1], s->kind_hops[2], s->kind_hops[3], s->kind_hops[5]);
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
  m->hbm_bytes = s->hbm_read_bytes;
  m->noc_bytes = s->noc_bytes;
  m->hbm_util = latency > 0 ? read_busy / (H * latency) : 0;
  m->noc_util = latency > 0 && n_present > 0
                  ? core_busy / (n_present * latency) : 0;
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
                                ? s->ls[s->interchip].busy / latency : 0;
    }
  return m;
}

ElkMetrics *
elk__noc_sim_run (NocSim *s, ElkProgram *program, ElkTrace *trace,
                  NocStats *stats, GError **error)
{
  ElkGraph *graph = elk_program_get_graph (program);
  gint64 t0 = g_get_monotonic_time ();
  ElkMetrics *m;

  if (!start_run (s, program, error))
    return NULL;
  alloc_scratch (s);
  add_trace_tracks (s, trace);
  run_events (s);

  if (s->pc < s->n_steps)
    {
      const ElkStep *st = elk_program_get_step (program, s->pc);
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'noc-sim': the program stalls at step %u: execute "
                   "of '%s' waits for a preload that never comes", s->pc,
                   elk_graph_get_op (graph, st->op)->name);
      return NULL;
    }

  m = collect_metrics (s, t0, stats);
  s->trace = NULL;
  return m;
}

/* Marks the @n busiest links of the last run for tracing in the next. */

void
elk__noc_sim_trace_busiest (NocSim *s, ElkTrace *trace, guint n)
{
  g_autofree guint32 *top = g_new (guint32, n);
  guint got = 0;

  for (guint i = 0; i < s->n_links; i++)
    s->links[i].track = -1;
  s->link_tracks = FALSE;
  for (guint i = 0; i < s->n_links; i++)
    {
      guint j;
      if (!s->links[i].present || s->ls[i].busy <= 0)
        continue;
      if (got < n)
        got++;
      else if (s->ls[i].busy <= s->ls[top[n - 1]].busy)
        continue;
      j = got - 1;
      while (j > 0 && s->ls[top[j - 1]].busy < s->ls[i].busy)
        {
          top[j] = top[j - 1];
          j--;
        }
      top[j] = i;
    }
  for (guint k = 0; k < got; k++)
    {
      char buf[64];
      s->link_tracks = TRUE;
      s->links[top[k]].track = (gint32) elk_trace_add_track (
        trace, "busiest links",
        elk__noc_sim_link_name (s, top[k], buf, sizeof buf));
    }
}

/* ---------------------------------------------------------------------- */
/* Per-link report: CSV for every link, SVG heat map for meshes and tori. */

static void
heat_colour (double u, char *buf, gsize len)
{
  /* White (idle) through yellow to red (saturated). */
  double x = CLAMP (u, 0, 1);
  guint r = 255, g = (guint) (255 * (1 - 0.85 * x)), b = (guint) (255 * (1 - x) * (1 - x));
  g_snprintf (buf, len, "#%02x%02x%02x", r, MIN (g, 255u), MIN (b, 255u));
}

gboolean
elk__noc_sim_write_link_report (NocSim *s, const char *csv_path,
                                const char *svg_path, GError **error)
{
  const NocConfig *c = &s->cfg;
  double latency = s->last_end;
  g_autoptr(GString) csv = g_string_new ("link,bytes,busy_s,utilisation\n");

  for (guint i = 0; i < s->n_links; i++)
    {
      char buf[64];
      if (!s->links[i].present)
        continue;
      g_string_append_printf (csv, "%s,%.0f,%.9g,%.6f\n",
                              elk__noc_sim_link_name (s, i, buf, sizeof buf),
                              s->ls[i].bytes, s->ls[i].busy,
                              latency > 0 ? s->ls[i].busy / latency : 0);
    }
  if (csv_path != NULL
      && !g_file_set_contents (csv_path, csv->str, (gssize) csv->len, error))
    return FALSE;

  if (svg_path != NULL
      && (c->topology == ELK_TOPOLOGY_MESH
          || c->topology == ELK_TOPOLOGY_TORUS))
    {
      g_autoptr(GString) svg = g_string_new (NULL);
      double cell = 14, pad = 20;
      double pw = c->cols * cell, ph = c->rows * cell;
      guint per_row = MIN (c->chips, 2u);
      double W = per_row * (pw + pad) + pad + 120;
      double Ht = ((c->chips + per_row - 1) / per_row) * (ph + pad + 14) + pad;

      g_string_append_printf (svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
        "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"10\">\n"
        "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, Ht);
      for (guint chip = 0; chip < c->chips; chip++)
        {
          double ox = pad + (chip % per_row) * (pw + pad);
          double oy = pad + 14 + (chip / per_row) * (ph + pad + 14);
          g_string_append_printf (svg,
            "<text x=\"%.1f\" y=\"%.1f\">chip %u</text>\n", ox, oy - 4, chip);
          for (guint l = 0; l < s->per_chip; l++)
            {
              guint g = chip * s->per_chip + l;
              double x = ox + (l % c->cols) * cell + cell / 2;
              double y = oy + (l / c->cols) * cell + cell / 2;
              for (guint d = 0; d < 4; d++)
                {
                  const Link *lk = &s->links[mesh_link (g, d)];
                  const LinkState *lks = &s->ls[mesh_link (g, d)];
                  char col[16];
                  double dx = d == DIR_E ? 1 : d == DIR_W ? -1 : 0;
                  double dy = d == DIR_S ? 1 : d == DIR_N ? -1 : 0;
                  /* Each direction is drawn on its own side of the centre
                   * line, so both directions of a pair stay visible. */
                  double off = (d == DIR_E || d == DIR_S) ? 1.8 : -1.8;
                  if (!lk->present)
                    continue;
                  heat_colour (latency > 0 ? lks->busy / latency : 0, col,
                               sizeof col);
                  g_string_append_printf (svg,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                    "stroke=\"%s\" stroke-width=\"3\"/>\n",
                    x + dy * off, y + dx * off,
                    x + dx * cell * 0.5 + dy * off,
                    y + dy * cell * 0.5 + dx * off, col);
                }
            }
          for (guint a = 0; a < s->hc * s->attach; a++)
            {
              guint r = s->attach_router[chip * s->hc * s->attach + a]
                        % s->per_chip;
              g_string_append_printf (svg,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"4\" height=\"4\" "
                "fill=\"#1f4e9c\"/>\n",
                ox + (r % c->cols) * cell + cell / 2 - 2,
                oy + (r / c->cols) * cell + cell / 2 - 2);
            }
        }
      for (guint k = 0; k <= 10; k++)
        {
          char col[16];
          heat_colour (k / 10.0, col, sizeof col);
          g_string_append_printf (svg,
            "<rect x=\"%.0f\" y=\"%.0f\" width=\"16\" height=\"12\" "
            "fill=\"%s\" stroke=\"#888\"/>"
            "<text x=\"%.0f\" y=\"%.0f\">%u%%</text>\n",
            W - 100, pad + 14 + k * 14.0, col, W - 80, pad + 24 + k * 14.0,
            k * 10);
        }
      g_string_append_printf (svg,
        "<text x=\"%.0f\" y=\"%.0f\">link busy</text>\n"
        "<text x=\"%.0f\" y=\"%.0f\">blue: HBM attach</text>\n</svg>\n",
        W - 100, pad + 6, W - 100, pad + 14 + 12 * 14.0);
      if (!g_file_set_contents (svg_path, svg->str, (gssize) svg->len, error))
        return FALSE;
    }
  return TRUE;
}
