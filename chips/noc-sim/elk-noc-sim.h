/* elk-noc-sim.h: the event-driven network simulator behind the "noc-sim"
 * chip, shared by the plugin and its tests (private, not installed).
 *
 * The simulator is plain C: a binary heap of events in one preallocated
 * array, links as structs in one array, and per-run scratch buffers sized
 * once.  Nothing in the event loop allocates or calls into GObject.
 */
#pragma once

#include <elk/elk.h>

G_BEGIN_DECLS

typedef enum
{
  NOC_PLACE_EDGES,
  NOC_PLACE_CORNERS,
  NOC_PLACE_ONE_EDGE,
  NOC_PLACE_COORDS,
} NocPlacement;

typedef enum
{
  NOC_INTERLEAVE_STRIPE,
  NOC_INTERLEAVE_NEAREST,
} NocInterleave;

/* Where cross-chip traffic leaves and enters a mesh or torus chip. */
typedef enum
{
  NOC_GATEWAY_EDGE,   /* the edge router of the sender's row */
  NOC_GATEWAY_SINGLE, /* one router, the middle of the east / west edge */
} NocGateway;

/* How the partial sums of an output are reduced among their holders. */
typedef enum
{
  NOC_REDUCE_EXCHANGE, /* one exchange: every holder sends every other one
                        * the chunk it reduces */
  NOC_REDUCE_RING,     /* ring reduce-scatter: holders - 1 steps to the
                        * ring neighbour, a barrier and an add after each */
  NOC_REDUCE_2D,       /* two-level (2-D) reduce-scatter: an exchange among
                        * blocks of nearby holders, then one among the
                        * holders of the same chunk in different blocks */
  NOC_REDUCE_AUTO,     /* exchange on all-to-all, 2-D on mesh, torus and
                        * ring (resolved by elk__noc_sim_new) */
} NocReduce;

/* In which order a link serves the transfers that share it. */
typedef enum
{
  NOC_ARBITRATION_ARRIVAL, /* hop by hop, in the order heads arrive */
  NOC_ARBITRATION_BOOKING, /* whole route reserved when a transfer is sent,
                            * links serve in send order (faster) */
} NocArbitration;

/* The fidelity ladder (docs/fidelity.md): what the simulator models beyond
 * the analytic timeline, one bit per effect.  A set bit simulates the
 * effect; a clear one makes the simulator leave it out or, where the
 * effect cannot be left out of the structure, take the analytic model's
 * quantity for it (from NocOpCost).  NocConfig.effects_off lists the
 * effects switched off; none is the default. */
typedef enum
{
  NOC_FX_PRELOAD_NETWORK = 1 << 0, /* preloads as reads and copies (off: the
                                    * analytic load time, no traffic) */
  NOC_FX_HBM_CONTROLLERS = 1 << 1, /* per-chip controllers, pieces read once
                                    * per chip (off: one pool of the whole
                                    * bandwidth, pieces read once) */
  NOC_FX_HBM_LATENCY = 1 << 2,
  NOC_FX_PACKETS = 1 << 3, /* reads of packet-bytes, round robin (off:
                            * each piece read whole) */
  NOC_FX_HOP_LATENCY = 1 << 4,
  NOC_FX_CONTENTION = 1 << 5,        /* preload copies and execution traffic
                                      * share the ports (off: separate ports and
                                      * the analytic delay-execution stall) */
  NOC_FX_REDUCE = 1 << 6,            /* reduce-scatter rounds and the output
                                      * re-layout (off: the plan's shuffle) */
  NOC_FX_RELAYOUT = 1 << 7,          /* ring all-gather from the preload layout
                                      * (off: the analytic warm-up) */
  NOC_FX_INTER_CHIP = 1 << 8,        /* the inter-chip link and gateways (off:
                                      * no link, the multichip factor) */
  NOC_FX_FULL_RATE_PRELOAD = 1 << 9, /* preloads ignore the program's
                                      * preload_share (off: throttled) */
  NOC_FX_ALL_TRANSFERS = 1 << 10,    /* a bound's assumptions not applied
                                      * (off: applied) */
  NOC_FX_N = 11,
  NOC_FX_ALL = (1 << 11) - 1,
} NocEffect;

/* The analytic model's per-operator quantities the ladder's off positions
 * use (elk-noc-sim-chip.c fills them from the plans, with no assumption of
 * the program applied). */
typedef struct
{
  double warmup_s;     /* data distribution (elk_plan_get_warmup) */
  double warmup_bytes; /* bytes one core sends in it */
  double noc_s;      /* NoC demand of the execution (elk_plan_get_noc_demand) */
  double hbm_bytes;  /* what its preload reads (0: not preloaded) */
  double cold_bytes; /* per core, the preload plan's footprint */
  double even_bytes; /* per core, an even shard of hbm_bytes */
} NocOpCost;

/* Everything the simulator needs to know about the machine, in SI units. */
typedef struct
{
  ElkTopology topology;
  guint chips;
  guint cores;
  guint rows, cols;           /* per chip, mesh and torus */
  double link_bw;             /* bytes/s per link (all-to-all: per port) */
  double hop_latency;         /* seconds per hop (LogGP L) */
  double core_gap;            /* seconds per byte a core injects (LogGP G) */
  double sync_s;              /* one barrier */
  guint syncs_per_shift;
  guint shuffle_syncs;
  double clock_hz;
  ElkCostCoeffs cost;
  guint hbm_channels;         /* over all chips */
  double hbm_bw;              /* bytes/s over all controllers */
  double hbm_latency;
  double hbm_port_bw;         /* bytes/s of one controller attachment */
  guint hbm_attach;           /* routers one controller attaches to */
  NocPlacement placement;
  guint n_coords;             /* explicit (row, col) per controller */
  guint *coords;              /* 2 * n_coords */
  NocInterleave interleave;
  NocReduce reduce;
  NocGateway gateway;
  NocArbitration arbitration;
  double inter_chip_bw;
  double packet_bytes;
  guint32 effects_off; /* NocEffect bits switched off (0: all on, the
                        * default) */
  gboolean steady_off; /* simulate every layer, no steady-state
                        * extrapolation (FALSE: extrapolate, the default) */
} NocConfig;

/* What one run measured, beyond ElkMetrics. */
typedef struct
{
  guint64 events;
  guint64 hops;
  guint64 preload_hops; /* of hops: HBM controller reads and preload copies */
  double wall_s;
  guint n_links;
  double link_util_mean;
  double link_util_max;
  guint link_util_max_index;
  double hbm_util_mean;
  double hbm_util_max;
  double interchip_util;
  /* Steady-state extrapolation: the first layer advanced in closed form
   * (-1: none), how many layers, the period in layers, and otherwise why
   * every layer was simulated (a static string, NULL when some were
   * extrapolated). */
  gint steady_from;
  guint steady_layers, steady_period;
  const char *steady_why;
} NocStats;

typedef struct _NocSim NocSim;

NocSim *elk__noc_sim_new (const NocConfig *config, GError **error);
void elk__noc_sim_free (NocSim *sim);
ElkMetrics *elk__noc_sim_run (NocSim *sim,
                              ElkProgram *program,
                              ElkTrace *trace,
                              NocStats *stats,
                              GError **error);
void elk__noc_sim_set_costs (NocSim *sim, const NocOpCost *costs, guint n_ops);
/* The program steps the device skips (elk_program_charge_routing()), one
 * flag per step, kept by reference for the next runs; NULL for none. */
void elk__noc_sim_set_skipped_steps (NocSim *sim, const gboolean *skipped);
gboolean elk__noc_sim_write_link_report (NocSim *sim,
                                         const char *csv_path,
                                         const char *svg_path,
                                         GError **error);
guint elk__noc_sim_walk_route (NocSim *sim, guint src_core, guint dst_core,
                         guint32 *links, guint max_links);
guint elk__noc_sim_route (NocSim *sim, guint src_core, guint dst_core,
                          guint32 *links, guint max_links);
guint elk__noc_sim_route_length (NocSim *sim, guint src_core, guint dst_core);
double elk__noc_sim_exchange_length (NocSim *sim, const guint32 *cores,
                                     guint n_cores);
guint elk__noc_sim_reduce_split (NocSim *sim, const guint32 *holders,
                                 guint n_holders);
void elk__noc_sim_trace_busiest (NocSim *sim, ElkTrace *trace, guint n);
const char *elk__noc_sim_link_name (NocSim *sim, guint link, char *buf,
                                    gsize len);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NocSim, elk__noc_sim_free)

G_END_DECLS
