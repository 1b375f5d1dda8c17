/* elk-ipu-pod-private.h: the IPU-POD emulator engine, shared by the chip
 * object (elk-ipu-pod-chip.c) and the engine (elk-ipu-pod-emu.c).
 *
 * The engine is plain C on plain structs: the GObject wrapper turns the
 * properties into an IpuMachine once per run, and nothing in the event loop
 * calls GObject or allocates per event.
 */
#pragma once

#include <elk/elk.h>

G_BEGIN_DECLS

/* Integer helpers of the emulator (elk-ipu-pod-emu.c) and the functional
 * engine (elk-ipu-pod-func.c), which must cut tiles and rotation rounds
 * exactly alike: one copy here keeps them from drifting apart. */
static inline guint64
ceil_div (guint64 a, guint64 b)
{
  return b == 0 ? 0 : (a + b - 1) / b;
}

static inline guint32
gcd32 (guint32 a, guint32 b)
{
  return b == 0 ? a : gcd32 (b, a % b);
}

/**
 * IpuEffect:
 *
 * The effects the emulator models beyond the analytic timeline, one bit
 * each (the chip's emulate-* properties).  A bit that is off makes the
 * engine use the analytic chip's quantity for that effect instead
 * (docs/fidelity-ipu-pod.md): with every bit off, a program takes what
 * the analytic chip says it takes.
 */
typedef enum
{
  IPU_FX_SYNCS = 1 << 0,         /* one BSP sync per rotation superstep */
  IPU_FX_EXCHANGE_RATE = 1 << 1, /* tile-to-tile bytes at the port rate */
  IPU_FX_REDUCTION = 1 << 2,     /* reduction lowering, no output shuffle */
  IPU_FX_GATHER = 1 << 3,        /* activations gathered from producers */
  IPU_FX_DISTRIBUTION = 1 << 4,  /* preload layout to execute layout */
  IPU_FX_IPU_LINKS = 1 << 5,     /* chip-crossing bytes share IPU-Links */
  IPU_FX_SEND_PORTS = 1 << 6,    /* an exchange waits for its senders */
  IPU_FX_HBM_LATENCY = 1 << 7,   /* first byte after hbm-latency-ns */
  IPU_FX_HBM_CHIPS = 1 << 8,     /* a chip's controllers, its own tiles */
  IPU_FX_UNTHROTTLED = 1 << 9,   /* preloads ignore the program's share */
  IPU_FX_PORT_SHARING = 1 << 10, /* receive ports shared packet by packet */
  IPU_FX_SRAM_PORT = 1 << 11,    /* landing bytes slow the kernel */
  IPU_FX_ALL = (1 << 12) - 1
} IpuEffect;

/**
 * IpuMachine:
 *
 * The emulated machine in engine units (bytes, seconds, cycles).  Every
 * field comes from a property of the "ipu-pod" chip.
 */
typedef struct
{
  guint chips;
  guint tiles_per_chip;
  guint tiles;
  guint64 sram_bytes;        /* per tile */
  guint64 recv_bytes;        /* receive buffer reserved per tile */
  double clock_hz;
  double link_Bps;           /* each tile's send and receive port */
  double inter_chip_Bps;     /* all IPU-Links together */
  double hbm_Bps;            /* all HBM modules together */
  guint hbm_modules;         /* spread evenly over the chips */
  double hbm_latency_s;      /* first byte of a preload */
  double sram_port_Bpc;      /* a tile's SRAM port, bytes per cycle */
  double sync_cycles;        /* one BSP sync inside a chip */
  double sync_xchip_cycles;  /* extra for a sync that spans chips */
  double exchange_cycles;    /* fixed latency of one exchange phase */
  ElkCostCoeffs kernel;      /* per-tile kernel cycle costs */
  gboolean tile_mapping_aligned; /* choose each plan's tile order */
  gboolean reduce_stepwise;  /* partial sums over r - 1 supersteps, not
                              * one direct reduce-scatter superstep */
  guint trace_tiles;         /* tiles sampled into a trace */
  guint effects;             /* IpuEffect bits switched on */
  double xchg_Bps;           /* tile-to-tile exchange rate: the port, or
                              * the cost model's shift rate */
  /* The analytic model's per-operator quantities (elk_program_derive),
   * for the effects switched off; NULL when every effect is on. */
  const ElkOpCost *costs;
  /* Per program step, whether the device skips it: the execute of an
   * expert the graph's sampled routing does not take, and its preload
   * when issued after the router (elk_program_charge_routing()); NULL
   * when the graph has no conditional operators. */
  const gboolean *skipped_steps;
} IpuMachine;

/**
 * IpuReport:
 *
 * What one run measured, besides ElkMetrics: the SRAM high-water mark (and
 * the tile that reached it), the event count, and the counters behind the
 * Fig 18a breakdown.
 */
typedef struct
{
  guint64 sram_hwm;          /* bytes, over all tiles, receive buffer incl. */
  guint sram_hwm_tile;
  guint sram_hwm_op;
  guint64 n_events;          /* iterations of the event loop */
  guint64 n_supersteps;
  double latency_cycles;
  double hbm_bytes;          /* read by the controllers */
  double delivered_bytes;    /* controller to tile */
  double exchange_bytes;     /* tile to tile */
  double xchip_bytes;        /* over IPU-Links */
  double compute_stall_s;    /* critical tiles stalled by remote writes */
  double exchange_stall_s;   /* exchange slowed by preload traffic */
  double port_busy_s;        /* receive-port busy time summed over tiles */
  double preload_busy_s;     /* some preload in flight */
  double phase_s[5];         /* execute time in input, compute, shift,
                              * reduce and sync phases */
  double xchip_wait_s;       /* exchange phases whose ports were done,
                              * waiting for the IPU-Links */
  double analytic_stall_s;   /* with port sharing off: the analytic
                              * delay-execution stalls added */
} IpuReport;

gboolean elk__ipu_emulate (const IpuMachine *m,
                           ElkProgram *program,
                           ElkTrace *trace,
                           ElkMetrics *metrics,
                           IpuReport *report,
                           GError **error);

/**
 * IpuResolveFunc:
 * @name: a tensor that no operator writes and the caller gave no data for
 * @tensors: every tensor known so far (name to float32 GBytes)
 *
 * Returns: (transfer full) (nullable): its data, or %NULL for seeded
 *   pseudo-random values.
 */
typedef GBytes *(*IpuResolveFunc) (const char *name,
                                   GHashTable *tensors,
                                   gpointer user_data);

/**
 * IpuFunctional:
 *
 * What functional mode reads and fills.  @inputs (nullable) maps tensor
 * names to float32 row-major data; tensors without data are asked of
 * @resolve, then filled from @seed.  @tensors receives every tensor the run
 * used or produced (inputs as used, outputs gathered from the tiles).
 */
typedef struct
{
  GHashTable *inputs;
  guint32 seed;
  IpuResolveFunc resolve;
  gpointer resolve_data;
  GHashTable *tensors;
} IpuFunctional;

typedef struct
{
  guint64 ops;
  guint64 kernel_calls;
  guint64 shifts;               /* rotation exchanges */
  guint64 hbm_elements;         /* read into preload layouts */
  guint64 exchanged_elements;   /* read from another tile */
  guint64 xchip_elements;       /* of those, from another chip */
} IpuFuncReport;

gboolean elk__ipu_functional (const IpuMachine *m,
                              ElkProgram *program,
                              IpuFunctional *f,
                              IpuFuncReport *report,
                              GError **error);

/* One activation edge for the re-layout price: operand @v of @c (execute
 * plan @cp) reads @p's output, written under execute plan @pp (NULL: not
 * chosen yet). */
typedef struct
{
  const ElkOp *p, *c;
  const ElkPlan *pp, *cp;
  guint v;
} IpuGather;

/* The chip's cost model (elk-ipu-pod-cost.c): analytic prices, and the
 * input superstep's re-layout price on machine @m. */
ElkCostModel *elk__ipu_pod_cost_model_new (const IpuMachine *m);
void elk__ipu_pod_price_gather (const IpuMachine *m,
                                const ElkGraph *graph,
                                const IpuGather *g,
                                ElkRelayoutPrice *price);

G_END_DECLS
