/* elk-noc-sim-private.h: the noc-sim engine's internals, shared by its
 * files (topology, calendar, lower, driver, report); not included by the
 * plugin or the tests, which use elk-noc-sim.h.
 *
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
 */
#pragma once

#include <math.h>
#include <string.h>
#include <stdio.h>
#include "elk-noc-sim.h"

G_BEGIN_DECLS

enum
{
  DIR_E,
  DIR_W,
  DIR_S,
  DIR_N,
};

#define NONE G_MAXUINT32
/* An arrival its link has served (NocArrival.next). */
#define SERVED (G_MAXUINT32 - 1)

/* A link's parameters... */
typedef struct
{
  double bw;       /* bytes per second */
  double lat;      /* seconds from head in to head out */
  gint32 track;    /* trace track, or -1 */
  guint32 present; /* 0 for the missing links at mesh borders */
} NocLink;

/* ... and its state, apart, so that the state of all links of a 5888-core
 * mesh (32 bytes each) stays in a core's L2 cache. */
typedef struct
{
  double free_at; /* when the link has sent everything it accepted */
  double busy;    /* seconds spent sending */
  double bytes;   /* bytes sent */
  guint32 queue;  /* arrivals of the current window, newest first */
  guint32 pad;
} NocLinkState;

typedef struct
{
  double t;
  guint64 seq;
  guint32 kind;
  guint32 arg;
} NocEvent;

enum
{
  EV_CTRL,
  EV_PRELOAD_DONE,
  EV_EXEC_ROUND,
  EV_EXEC_DONE,
  EV_HOP, /* an arrival beyond the calendar ring; arg: its pool slot */
};

/* A transfer on its way: where its head is, which link it waits for, and
 * what it needs for the FIFO service there.  64 bytes, one cache line; a
 * transfer keeps its pool slot from injection to arrival. */
typedef struct
{
  double head; /* when the head reaches `link` */
  double tail; /* when the tail left the previous link */
  double ser;  /* serialisation on a link of link-bw-gbps */
  double bytes;
  guint64 seq;  /* injection order: breaks ties between equal arrivals */
  guint32 link; /* the link the head waits for */
  guint32 dst;  /* destination core (global id) */
  guint16 chip; /* where the head is (mesh, torus, ring: router) */
  guint16 r, c;
  guint16 tr, tc; /* the router it heads for on this chip */
  guint16 hops;
  guint8 stage;   /* 0: heading for the chip's gateway, 1: for dst */
  guint8 kind;    /* round kind 0-3, or 5 for a preload copy */
  guint8 capped;  /* 1: injected by a core, so limited to 1/G; 2: a
                   * throttled preload copy, limited to preload_rate */
  guint8 crossed; /* went over the inter-chip link */
} NocTrain;

G_STATIC_ASSERT (sizeof (NocTrain) == 64);

/* What a link sorts its arrivals of one window by. */
struct NocSortKey
{
  double head;
  guint64 seq;
  guint32 id;
};

/* Windows in the calendar ring: 2^16 hop latencies (328 us at 5 ns)
 * cover the queueing delays of all but the most congested links. */
#define RING_LOG 16
#define RING_N (1u << RING_LOG)

/* The arrival of a transfer's head at a link in some window: an entry of
 * that window's bucket, 16 bytes. */
typedef struct
{
  guint32 slot; /* the transfer's pool slot */
  guint32 link;
  guint32 next; /* the link's previous arrival in the current window (its
                 * queue), NONE, or SERVED */
  guint32 pad;
} NocArrival;

/* A bucket is a list of chunks of CHUNK arrivals in one pool. */
#define CHUNK 64

typedef struct
{
  guint32 first, last; /* chunks, NONE when empty */
  guint32 fill;        /* arrivals in the last chunk */
} NocBucket;

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
  double compute; /* seconds of compute before the transfer */
  double bytes;   /* per core, 0 for a compute-only round */
  double sync;    /* barrier time after the transfer */
  guint8 operand;
  guint8 ring;
  guint8 kind;    /* 0 shift, 1 warm-up, 2 reduce, 3 shuffle, 4 compute */
  guint8 stretch; /* the multichip factor's share: 1 shift, 2 output */
  guint32 fanout; /* reduce: peers each core sends to */
} NocRound;

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
} NocLayout;

typedef struct
{
  double start, end;
  guint8 kind;
} NocInterval;

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
} NocAxis;

struct _NocSim
{
  NocConfig cfg;
  guint per_chip;
  guint hc; /* controllers per chip */
  guint n_core_links;
  guint n_links;
  guint read_base;
  guint attach_base;
  guint interchip; /* link index or G_MAXUINT */
  guint attach;    /* attachments per controller */
  NocLink *links;
  NocLinkState *ls;
  gboolean link_tracks;   /* some link has a trace track */
  guint32 *attach_router; /* hbm_channels * attach: global core ids */
  guint16 *attach_for;    /* hbm_channels * per_chip: attachment index */
  guint16 *near_ctrl;     /* per_chip: nearest local controller */
  guint32 *path;
  guint max_path;

  /* Event heap, preallocated. */
  NocEvent *heap;
  guint heap_n, heap_cap;
  guint64 seq;

  /* Transfers and the calendar ring of windows (see the top comment). */
  NocTrain *pool;     /* pool_cap transfers in flight or free */
  guint64 *pool_fmap; /* pool_cap bits: slot free */
  guint32 pool_cap, pool_n_free;
  guint32 pool_next;   /* where the search for a free slot starts */
  NocArrival *arr;     /* arr_chunks * CHUNK arrivals */
  guint32 *chunk_next; /* per chunk: the next of its bucket, or free */
  guint32 arr_chunks, chunk_free;
  guint32 serve_ch, serve_i; /* where serving the current window is */
  guint64 train_seq;
  NocBucket *bucket; /* RING_N */
  guint64 *bmap;     /* RING_N bits: bucket not empty */
  guint64 ring_n;    /* transfers in the ring ahead of cur_w */
  gint64 ring_lo;    /* no bucket before this window is filled */
  gint64 cur_w;      /* the window being processed */
  double inv_w;      /* 1 / window width */
  struct NocSortKey *sortbuf;
  guint32 sortbuf_cap;
  double core_rate;    /* 1/G, bytes/s */
  double preload_rate; /* cap of a preload copy (capped == 2), bytes/s */

  /* The fidelity ladder's analytic quantities (NULL when none is needed)
   * and the analytic stall's view of the preloads: per operator, when its
   * preload started and when it ended (0 while it has not). */
  NocOpCost *costs;
  guint n_costs;
  double *pl_start, *pl_end;
  guint32 *issued; /* preloads in issue order */
  guint n_issued, first_live;
  gboolean exec_stalled;
  guint priv_base;         /* all-to-all: the preloads' own ingress ports when
                            * contention is off or assumptions are applied */
  gboolean use_priv;       /* this run's preload copies take them */
  gboolean analytic_stall; /* executes pay the analytic stall */

  /* Per-run state. */
  ElkProgram *program;
  ElkGraph *graph;
  guint n_ops, n_steps, pc;
  gboolean *has_preload;
  gboolean *preload_done;
  /* Per program step, whether the device skips it (an expert the graph's
   * sampled routing does not take: its execute, and its preload when
   * issued after the router; elk_program_charge_routing()); NULL when
   * the graph has no conditional operators.  Set by the chip. */
  const gboolean *skipped_steps;
  guint32 *pq; /* preload queue (ops in program order) */
  guint pq_head, pq_tail;
  gboolean preload_active, exec_running;
  guint preload_op, exec_op;
  double preload_start, preload_max_arrive, preload_hbm_ideal;
  guint ctrl_active;
  guint64 copies_left; /* preload copies still in the network */
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
  NocRound *rounds;
  guint n_rounds, rounds_cap, round_i;
  guint64 round_left; /* transfers of the current round in flight */
  double round_now, round_barrier, round_ideal;
  guint32 *nbr;     /* N_RINGS * ELK_MAX_OPERANDS * cores */
  guint32 *holders; /* cores: one output's holders, in ring order */
  /* Scratch of elk__noc_sim_exchange_length, sized when the simulator is
   * built: per-chip counts, row and column histograms and their axes, and
   * one group of holders. */
  double *xl_cnt, *xl_rows, *xl_cols, *xl_prefix;
  NocAxis *xl_ra, *xl_ca;
  guint32 *xl_group;
  NocLayout layout;
  guint32 exec_cores;

  GArray *intervals;
  ElkTrace *trace;
  guint tr_exec, tr_preload, tr_ctrl0, tr_core[3];
  guint n_sample;
  const char *cur_name;

  double hbm_read_bytes, noc_bytes;
  double xchip[6];  /* inter-chip bytes per round kind, 5 = preload */
  double kind_s[6]; /* barrier-to-barrier seconds per round kind */
  guint64 events, hops;
  guint64 kind_hops[6]; /* link hops per round kind, 5 = preload */
  guint64 read_hops;

  /* Steady-state layer extrapolation (elk-noc-sim-steady.c): its state
   * (NULL when off or not applicable), whether an execute has just opened
   * a layer, and what the run did: the first layer advanced in closed
   * form, how many, the period in layers, or why it simulated in full. */
  struct _NocSteady *steady;
  gboolean steady_pending;
  gint steady_from;
  guint steady_layers, steady_period;
  const char *steady_why;
};

typedef struct
{
  double head;    /* when the head may enter the next link */
  double tail;    /* when the tail left the previous link */
  double arrive;  /* when the tail reached the far end of the last link */
  double max_ser; /* largest serialisation on the route (for stall) */
  double lat_sum;
} NocWalk;

/* Whether effect @fx (NocEffect) is simulated. */
#define FX(s, fx) (((s)->cfg.effects_off & (fx)) == 0)

/* The rate a transfer is limited to whatever its links' bandwidth: 1/G
 * for what a core injects, the program's preload share of the port for a
 * throttled preload copy. */
static inline double
elk__noc_train_cap (const NocSim *s, const NocTrain *t)
{
  return t->capped == 1   ? s->core_rate
         : t->capped == 2 ? s->preload_rate
                          : INFINITY;
}

static inline gint64
elk__noc_window_of (const NocSim *s, double t)
{
  return (gint64) (t * s->inv_w);
}

static inline guint
elk__noc_mesh_link (guint gid, guint dir)
{
  return gid * 4 + dir;
}

/* elk-noc-sim-topology.c */
guint elk__noc_route_local (NocSim *s, guint src, guint dst, guint n);
guint elk__noc_gateway (NocSim *s, guint chip, gboolean out, guint from);
guint elk__noc_route (NocSim *s, guint src, guint dst);

/* elk-noc-sim-calendar.c */
void elk__noc_heap_push (NocSim *s, double t, guint32 kind, guint32 arg);
NocEvent elk__noc_heap_pop (NocSim *s);
void elk__noc_train_start (NocSim *s, NocTrain *t, guint core);
void elk__noc_bucket_clear (NocSim *s, guint32 b);
void elk__noc_train_init (NocSim *s,
                          NocTrain *t,
                          double head,
                          double tail,
                          double bytes,
                          gboolean capped,
                          guint8 kind,
                          guint dst);
void elk__noc_train_inject (NocSim *s, const NocTrain *t);
void elk__noc_far_arrive (NocSim *s, guint32 slot);
void elk__noc_train_release (NocSim *s, guint32 slot);
void elk__noc_pool_in_use (const NocSim *s, guint8 *in_use);
gint64 elk__noc_ring_next (NocSim *s);
void elk__noc_ring_drain (NocSim *s);
void elk__noc_serve_window (NocSim *s);
void elk__noc_walk_start (NocWalk *w, double head, double tail);
void
elk__noc_walk_path (NocSim *s, NocWalk *w, double bytes, double rate, guint n);

/* elk-noc-sim-lower.c */
void elk__noc_preload_start (NocSim *s, guint op_id, double now);
void elk__noc_ctrl_step (NocSim *s, guint h, double now);
void elk__noc_preload_done (NocSim *s, guint op_id, double now);
void elk__noc_exec_start (NocSim *s, guint op_id, double now);
void elk__noc_exec_round (NocSim *s, double now);
void elk__noc_train_arrive (NocSim *s, const NocTrain *t, double arrive);
void elk__noc_exec_done (NocSim *s, double now);
double elk__noc_preload_analytic_s (const NocSim *s, guint op_id);

/* elk-noc-sim-driver.c */
void elk__noc_advance (NocSim *s, double now);

/* elk-noc-sim-steady.c */
void elk__noc_steady_start (NocSim *s, gboolean tracing);
void elk__noc_steady_finish (NocSim *s);
void elk__noc_steady_exec_started (NocSim *s, guint op_id, double now);
void elk__noc_steady_boundary (NocSim *s, double now);

G_END_DECLS
