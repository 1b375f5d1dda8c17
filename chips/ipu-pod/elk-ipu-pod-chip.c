/* elk-ipu-pod-chip.c: the "ipu-pod" chip backend, an IPU-POD4 emulator.
 *
 * It runs a compiled ElkProgram tile by tile on a model of the machine of
 * elk-paper.md §2 and §4.1 (chips of tiles with private SRAM, an
 * all-to-all exchange with one send and one receive port per tile, HBM
 * controllers on that exchange, IPU-Links between chips) and never reads
 * the compiler's time estimates: every time it reports comes from moving
 * the program's bytes through those ports and running its kernels on the
 * tiles (elk-ipu-pod-emu.c).  Memory is placed tile by tile, so a program
 * whose operators do not fit stops with an error naming the tile.
 *
 * The chip-spec properties every chip shares come from libelk
 * (elk_chip_props_install()) with the same names, units, ranges and
 * defaults, so that an experiment can swap one chip for another.  Here the
 * cores are tiles (1472 per MK2 chip), link-bw-gbps is each tile's send
 * port and its receive port, HBM bandwidth and modules are split evenly
 * over the chips (a chip's tensors are striped over its own modules),
 * matmul-tflops and vector-tflops feed only the compiler's spec and the
 * physical bound (the emulator times kernels from cycles), and topology
 * must be all-to-all.  The emulator's own knobs (HBM latency, the SRAM port, syncs, the kernel
 * cycle scale, the trace sample) follow; docs/chip-ipu-pod.md explains
 * each one.
 */
#include "config.h"

#include <math.h>
#include <elk/elk.h>

#include "elk-ipu-pod-private.h"

typedef enum
{
  ELK_IPU_POD_MODE_TIMING,
  ELK_IPU_POD_MODE_FUNCTIONAL,
} ElkIpuPodMode;

GType elk_ipu_pod_mode_get_type (void);
G_DEFINE_ENUM_TYPE (ElkIpuPodMode,
                    elk_ipu_pod_mode,
                    G_DEFINE_ENUM_VALUE (ELK_IPU_POD_MODE_TIMING, "timing"),
                    G_DEFINE_ENUM_VALUE (ELK_IPU_POD_MODE_FUNCTIONAL,
                                         "functional"))

typedef enum
{
  ELK_IPU_POD_REDUCE_DIRECT,
  ELK_IPU_POD_REDUCE_STEPWISE,
} ElkIpuPodReduce;

GType elk_ipu_pod_reduce_get_type (void);
G_DEFINE_ENUM_TYPE (ElkIpuPodReduce,
                    elk_ipu_pod_reduce,
                    G_DEFINE_ENUM_VALUE (ELK_IPU_POD_REDUCE_DIRECT, "direct"),
                    G_DEFINE_ENUM_VALUE (ELK_IPU_POD_REDUCE_STEPWISE,
                                         "stepwise"))

typedef enum
{
  ELK_IPU_POD_MAPPING_SEQUENTIAL,
  ELK_IPU_POD_MAPPING_ALIGNED,
} ElkIpuPodMapping;

GType elk_ipu_pod_mapping_get_type (void);
G_DEFINE_ENUM_TYPE (ElkIpuPodMapping,
                    elk_ipu_pod_mapping,
                    G_DEFINE_ENUM_VALUE (ELK_IPU_POD_MAPPING_SEQUENTIAL,
                                         "sequential"),
                    G_DEFINE_ENUM_VALUE (ELK_IPU_POD_MAPPING_ALIGNED,
                                         "aligned"))

/* The convenience switch over every emulate-* property: full (all on),
 * analytic (all off); reading it gives custom for a mix, and writing
 * custom leaves the switches as they are. */
typedef enum
{
  ELK_IPU_POD_FIDELITY_FULL,
  ELK_IPU_POD_FIDELITY_ANALYTIC,
  ELK_IPU_POD_FIDELITY_CUSTOM,
} ElkIpuPodFidelity;

GType elk_ipu_pod_fidelity_get_type (void);
G_DEFINE_ENUM_TYPE (ElkIpuPodFidelity,
                    elk_ipu_pod_fidelity,
                    G_DEFINE_ENUM_VALUE (ELK_IPU_POD_FIDELITY_FULL, "full"),
                    G_DEFINE_ENUM_VALUE (ELK_IPU_POD_FIDELITY_ANALYTIC,
                                         "analytic"),
                    G_DEFINE_ENUM_VALUE (ELK_IPU_POD_FIDELITY_CUSTOM, "custom"))

/* One boolean property per effect the emulator models beyond the
 * analytic timeline (docs/fidelity-ipu-pod.md).  Off, the engine uses the
 * analytic chip's quantity for that effect. */
static const struct
{
  const char *name;
  guint bit;
  const char *blurb;
} effects[] = {
  { "emulate-syncs", IPU_FX_SYNCS,
    "One BSP sync (sync-cycles + exchange-cycles) per rotation superstep; "
    "off: the cost model's syncs-per-shift syncs per rotating operand" },
  { "emulate-exchange-rate", IPU_FX_EXCHANGE_RATE,
    "Tile-to-tile bytes at the port rate link-bw-gbps; off: at the cost "
    "model's shift cost (0.28 cycles per byte)" },
  { "emulate-reduction", IPU_FX_REDUCTION,
    "Partial sums reduced as reduce-lowering says, no output re-layout; "
    "off: the cost model's output shuffle" },
  { "emulate-gather", IPU_FX_GATHER,
    "Activations gathered from the producer's tiles in an input "
    "superstep; off: no gather (the analytic chip charges the producer's "
    "output shuffle)" },
  { "emulate-distribution", IPU_FX_DISTRIBUTION,
    "The preload layout turned into the execute layout by exchanging the "
    "missing parts in one superstep; off: the cost model's warm-up (and "
    "a free-distribution program's preload as an even shard)" },
  { "emulate-ipu-links", IPU_FX_IPU_LINKS,
    "Chip-crossing bytes share inter-chip-bw-gbps; off: the cost model's "
    "multi-chip factor on the shifts and the shuffle" },
  { "emulate-send-ports", IPU_FX_SEND_PORTS,
    "An exchange also waits for its busiest sender's port; off: for its "
    "receivers only" },
  { "emulate-hbm-latency", IPU_FX_HBM_LATENCY,
    "A preload's first byte lands after hbm-latency-ns; off: at once" },
  { "emulate-hbm-chips", IPU_FX_HBM_CHIPS,
    "Each chip's HBM controllers serve its own tiles at its share of "
    "hbm-bw-gbps, and a part held on two chips is read twice; off: one "
    "pooled HBM reading the graph's bytes once" },
  { "emulate-unthrottled-preload", IPU_FX_UNTHROTTLED,
    "A preload takes its tiles' whole ports whatever share its program "
    "asked for; off: the share (ElkProgramOp.preload_share)" },
  { "emulate-port-sharing", IPU_FX_PORT_SHARING,
    "A receive port alternates exchange and preload packets; off: the "
    "analytic delay-execution model (preloads first, the execute's "
    "interconnect demand stalls it)" },
  { "emulate-sram-port", IPU_FX_SRAM_PORT,
    "Preload bytes landing in a computing tile take its SRAM port from the "
    "kernel; off: kernels never slowed" },
};
#define N_EFFECTS G_N_ELEMENTS (effects)
G_STATIC_ASSERT ((1u << G_N_ELEMENTS (effects)) - 1 == IPU_FX_ALL);

#define ELK_TYPE_IPU_POD_CHIP (elk_ipu_pod_chip_get_type ())
G_DECLARE_FINAL_TYPE (ElkIpuPodChip, elk_ipu_pod_chip, ELK, IPU_POD_CHIP,
                      GObject)

struct _ElkIpuPodChip
{
  GObject parent_instance;
  ElkChipProps props;
  guint trace_tiles;
  double hbm_latency_ns, sram_port_bpc, sync_cycles, sync_xchip_cycles;
  double exchange_cycles, kernel_scale;
  gint reduce;
  gint mapping;
  guint effects; /* IpuEffect bits switched on */
  /* From the last run, for tests and people. */
  guint64 last_sram_hwm;
  guint last_sram_hwm_tile;
  guint64 last_events;
  double last_latency_cycles;
  char *last_report;
  /* Functional mode. */
  gint mode;
  guint seed;
  GHashTable *inputs;
  GHashTable *last_tensors;
};

/* The common chip-spec properties (elk_chip_props_install) come first, the
 * chip's own after them. */
enum
{
  PROP_0,
  PROP_CHIP_PROPS,
  PROP_HBM_LATENCY_NS = PROP_CHIP_PROPS + ELK_CHIP_PROPS_N_PROPERTIES,
  PROP_SRAM_PORT_BPC,
  PROP_SYNC_CYCLES,
  PROP_SYNC_XCHIP_CYCLES,
  PROP_EXCHANGE_CYCLES,
  PROP_KERNEL_SCALE,
  PROP_REDUCE_LOWERING,
  PROP_TILE_MAPPING,
  PROP_TRACE_TILES,
  PROP_LAST_SRAM_HWM,
  PROP_LAST_SRAM_HWM_TILE,
  PROP_LAST_EVENTS,
  PROP_LAST_LATENCY_CYCLES,
  PROP_LAST_REPORT,
  PROP_MODE,
  PROP_SEED,
  PROP_INPUTS,
  PROP_LAST_TENSORS,
  PROP_FIDELITY,
  PROP_EFFECT_0,
  N_PROPS = PROP_EFFECT_0 + 12
};
G_STATIC_ASSERT (N_PROPS - PROP_EFFECT_0 == N_EFFECTS);
static GParamSpec *properties[N_PROPS];

enum
{
  SIGNAL_RESOLVE_TENSOR,
  N_SIGNALS
};
static guint signals[N_SIGNALS];

static void elk_ipu_pod_chip_iface_init (ElkChipInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (ElkIpuPodChip, elk_ipu_pod_chip,
                               G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (ELK_TYPE_CHIP,
                                                      elk_ipu_pod_chip_iface_init))

static double
gbps (const ElkIpuPodChip *self, double value)
{
  return elk_bandwidth_units_to_bytes_per_second (self->props.bandwidth_units,
                                                  value);
}

static ElkChipSpec *
elk_ipu_pod_chip_dup_spec (ElkChip *chip, GError **error)
{
  ElkIpuPodChip *self = ELK_IPU_POD_CHIP (chip);
  ElkChipSpec *spec = elk_chip_spec_new_ipu_pod4 ();

  g_free (spec->name);
  spec->name = g_strdup ("ipu-pod");
  elk_chip_props_fill_spec (&self->props, spec);
  spec->hbm_latency = self->hbm_latency_ns * 1e-9;
  if (spec->topology != ELK_TOPOLOGY_ALL_TO_ALL)
    {
      /* The common "topology" property is there so that an experiment can
       * swap chips; the IPU exchange is all-to-all and nothing else. */
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG,
                   "chip 'ipu-pod': topology '%s' is not modelled; the IPU "
                   "exchange is all-to-all (use the noc-sim chip for "
                   "meshes)", elk_topology_to_string (spec->topology));
      elk_chip_spec_free (spec);
      return NULL;
    }
  if (self->props.cores % self->props.chips != 0)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG,
                   "chip 'ipu-pod': %u cores cannot be split evenly over %u "
                   "chips", self->props.cores, self->props.chips);
      elk_chip_spec_free (spec);
      return NULL;
    }
  if (self->props.hbm_channels % self->props.chips != 0)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG,
                   "chip 'ipu-pod': %u HBM modules cannot be split evenly "
                   "over %u chips (each chip's controllers serve its own "
                   "tiles)", self->props.hbm_channels, self->props.chips);
      elk_chip_spec_free (spec);
      return NULL;
    }
  if (!elk_chip_spec_validate (spec, error))
    {
      elk_chip_spec_free (spec);
      return NULL;
    }
  return spec;
}

static void
machine_from_props (const ElkIpuPodChip *self, IpuMachine *m)
{
  memset (m, 0, sizeof (*m));
  m->chips = self->props.chips;
  m->tiles = self->props.cores;
  m->tiles_per_chip = self->props.cores / self->props.chips;
  m->sram_bytes = (guint64) self->props.sram_kib * 1024;
  m->recv_bytes = (guint64) self->props.reserved_kib * 1024;
  m->clock_hz = self->props.clock_ghz * 1e9;
  m->link_Bps = gbps (self, self->props.link_bw_gbps);
  m->inter_chip_Bps = gbps (self, self->props.inter_chip_bw_gbps);
  m->hbm_Bps = gbps (self, self->props.hbm_bw_gbps);
  m->hbm_modules = self->props.hbm_channels;
  m->hbm_latency_s = self->hbm_latency_ns * 1e-9;
  m->sram_port_Bpc = self->sram_port_bpc;
  m->sync_cycles = self->sync_cycles;
  m->sync_xchip_cycles = self->sync_xchip_cycles;
  m->exchange_cycles = self->exchange_cycles;
  m->trace_tiles = self->trace_tiles;
  m->reduce_stepwise = self->reduce == ELK_IPU_POD_REDUCE_STEPWISE;
  m->tile_mapping_aligned = self->mapping == ELK_IPU_POD_MAPPING_ALIGNED;
  m->effects = self->effects;
  elk_cost_coeffs_init_ipu_mk2 (&m->kernel);
  m->xchg_Bps = (m->effects & IPU_FX_EXCHANGE_RATE)
                    ? m->link_Bps
                    : m->clock_hz / m->kernel.shift_cycles_per_byte;
  /* The kernel table is per-call cycles; the scale stretches all of it
   * (the fixed per-call parts too) to model a slower or faster tile. */
  m->kernel.matmul_inner *= self->kernel_scale;
  m->kernel.matmul_kn *= self->kernel_scale;
  m->kernel.matmul_n *= self->kernel_scale;
  m->kernel.matmul_fixed *= self->kernel_scale;
  m->kernel.ew_slope *= self->kernel_scale;
  m->kernel.ew_fixed *= self->kernel_scale;
  m->kernel.ew_small_slope *= self->kernel_scale;
  m->kernel.ew_small_fixed *= self->kernel_scale;
  m->kernel.ew_small_cap *= self->kernel_scale;
  m->kernel.unary_slope *= self->kernel_scale;
  m->kernel.unary_fixed *= self->kernel_scale;
  m->kernel.reduce_slope *= self->kernel_scale;
  m->kernel.reduce_small_slope *= self->kernel_scale;
  m->kernel.reduce_fixed *= self->kernel_scale;
  m->kernel.gather_slope *= self->kernel_scale;
  m->kernel.gather_fixed *= self->kernel_scale;
  m->kernel.gather_per_index *= self->kernel_scale;
  m->kernel.slice_slope *= self->kernel_scale;
  m->kernel.slice_fixed *= self->kernel_scale;
  /* The integer rate is the common property; a rate, so a slower tile
   * divides it (kernel_cycles scales the stretched matmul_inner by the
   * floating-point rate over this one). */
  m->kernel.int8_macs_per_cycle
      = self->props.int8_macs_per_cycle / self->kernel_scale;
}

/* Functional mode asks the "resolve-tensor" signal for tensors that no
 * operator writes (views such as a head-major query) and that the caller
 * did not give. */
static GBytes *
resolve_tensor (const char *name, GHashTable *tensors, gpointer user_data)
{
  GBytes *bytes = NULL;

  g_signal_emit (user_data, signals[SIGNAL_RESOLVE_TENSOR], 0, name, tensors,
                 &bytes);
  return bytes;
}

static ElkMetrics *
elk_ipu_pod_chip_run_traced (ElkChip *chip,
                             ElkProgram *program,
                             const ElkPlanSet *plans,
                             ElkTrace *trace,
                             GError **error)
{
  ElkIpuPodChip *self = ELK_IPU_POD_CHIP (chip);
  g_autoptr(ElkChipSpec) spec = elk_ipu_pod_chip_dup_spec (chip, error);
  g_autoptr(ElkMetrics) metrics = NULL;
  IpuMachine m;
  IpuReport r;
  g_autofree char *model = NULL;
  g_autofree ElkOpCost *costs = NULL;
  g_autofree gboolean *skipped = NULL;
  g_autoptr (ElkRoutingStats) routing = NULL;
  ElkGraph *graph = elk_program_get_graph (program);
  double bound_compute = 0, bound_hbm, hbm_bytes;

  if (spec == NULL)
    return NULL;
  machine_from_props (self, &m);
  /* Conditional operators (a mixture of experts' experts) are charged by
   * the graph's sampled routing, as every chip charges them
   * (elk_program_charge_routing()), from the costs derived from the
   * plans. */
  if (elk_graph_has_conditions (graph))
    {
      guint n_steps = elk_program_get_n_steps (program);
      if (self->mode == ELK_IPU_POD_MODE_FUNCTIONAL)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': graph '%s' has conditional "
                       "operators (experts that run only when their router "
                       "selects them), which functional mode does not "
                       "run; use mode=timing, or build the graph with "
                       "experts=routed",
                       elk_graph_get_name (graph));
          return NULL;
        }
      costs = elk_program_derive (program, plans, error);
      if (costs == NULL)
        return NULL;
      skipped = g_new0 (gboolean, MAX (n_steps, 1u));
      routing = elk_program_charge_routing (program, costs, skipped);
      m.skipped_steps = skipped;
      m.costs = m.effects != IPU_FX_ALL ? costs : NULL;
    }
  /* An effect switched off takes the analytic chip's quantity, derived
   * from the program's plans exactly as that chip derives it. */
  if (m.effects != IPU_FX_ALL && m.costs == NULL)
    {
      if (plans == NULL)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': with emulate-* switches off the "
                       "run needs the plan tables the program was compiled "
                       "with, to take the analytic chip's quantities; none "
                       "were given");
          return NULL;
        }
      costs = elk_program_derive (program, plans, error);
      if (costs == NULL)
        return NULL;
      m.costs = costs;
    }
  metrics = elk_metrics_new ("ipu-pod emulator");
  if (!elk__ipu_emulate (&m, program, trace, metrics, &r, error))
    return NULL;

  /* A run faster than the machine's peaks is an emulator bug.  The
   * bounds count what the device did: not the arithmetic of the experts
   * the routing skipped, nor the preloads it skipped. */
  hbm_bytes = (double) elk_graph_get_hbm_bytes (graph);
  for (guint i = 0; i < elk_graph_get_n_ops (graph); i++)
    {
      const ElkOp *op = elk_graph_get_op (graph, i);
      gboolean taken = TRUE;
      elk_graph_get_op_condition (graph, i, NULL, NULL, &taken);
      if (taken)
        bound_compute += op->flops
                         / (op->kind == ELK_OP_MATMUL ? spec->matmul_flops
                                                      : spec->vector_flops);
    }
  for (guint s = 0; skipped != NULL && s < elk_program_get_n_steps (program);
       s++)
    {
      const ElkStep *step = elk_program_get_step (program, s);
      if (skipped[s] && step->kind == ELK_STEP_PRELOAD)
        hbm_bytes -= (double)
            elk_op_get_hbm_bytes (graph, elk_graph_get_op (graph, step->op));
    }
  bound_hbm = hbm_bytes / spec->hbm_bw;
  if (metrics->latency_s < bound_hbm * (1 - 1e-9))
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_BELOW_BOUND,
                   "chip 'ipu-pod': latency %.6g s is below the HBM bound "
                   "%.6g s (compute bound %.6g s)", metrics->latency_s,
                   bound_hbm, bound_compute);
      return NULL;
    }

  if (self->mode == ELK_IPU_POD_MODE_FUNCTIONAL)
    {
      IpuFunctional f = { 0 };
      IpuFuncReport fr;
      g_autoptr(GHashTable) tensors = g_hash_table_new_full (
        g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_bytes_unref);

      f.inputs = self->inputs;
      f.seed = self->seed;
      f.resolve = resolve_tensor;
      f.resolve_data = self;
      f.tensors = tensors;
      if (!elk__ipu_functional (&m, program, &f, &fr, error))
        return NULL;
      g_clear_pointer (&self->last_tensors, g_hash_table_unref);
      self->last_tensors = g_steal_pointer (&tensors);
      g_debug ("functional: %" G_GUINT64_FORMAT " operators, %"
               G_GUINT64_FORMAT " kernel calls, %" G_GUINT64_FORMAT
               " rotation shifts, %" G_GUINT64_FORMAT " elements from HBM, %"
               G_GUINT64_FORMAT " between tiles (%" G_GUINT64_FORMAT
               " across chips)", fr.ops, fr.kernel_calls, fr.shifts,
               fr.hbm_elements, fr.exchanged_elements, fr.xchip_elements);
    }

  self->last_sram_hwm = r.sram_hwm;
  self->last_sram_hwm_tile = r.sram_hwm_tile;
  self->last_events = r.n_events;
  self->last_latency_cycles = r.latency_cycles;
  g_free (self->last_report);
  self->last_report = g_strdup_printf (
    "latency %.0f cycles; SRAM high-water %" G_GUINT64_FORMAT " B on tile %u "
    "(while '%s' ran or was preloaded); %" G_GUINT64_FORMAT " supersteps, %"
    G_GUINT64_FORMAT " events; HBM read %.6g B, delivered %.6g B, exchanged "
    "%.6g B (%.6g B over IPU-Links); execute stalled %.6g s in compute "
    "(remote writes) and %.6g s in exchange (shared receive ports); "
    "execute phases: input %.6g s (%.6g s of it waiting for the IPU-Links "
    "after the ports were done), compute %.6g s, shift %.6g s, reduce "
    "%.6g s, sync %.6g s",
    r.latency_cycles, r.sram_hwm, r.sram_hwm_tile,
    elk_graph_get_op (graph, r.sram_hwm_op)->name, r.n_supersteps,
    r.n_events, r.hbm_bytes, r.delivered_bytes, r.exchange_bytes,
    r.xchip_bytes, r.compute_stall_s, r.exchange_stall_s, r.phase_s[0],
    r.xchip_wait_s, r.phase_s[1], r.phase_s[2], r.phase_s[3],
    r.phase_s[4]);
  if (!(m.effects & IPU_FX_PORT_SHARING))
    {
      char *with_stall
          = g_strdup_printf ("%s; analytic contention stall "
                             "%.6g s",
                             self->last_report, r.analytic_stall_s);
      g_free (self->last_report);
      self->last_report = with_stall;
    }
  g_debug ("%s", self->last_report);

  {
    ElkProgramAssumptions a = elk_program_get_assumptions (program);
    GString *off = g_string_new (NULL);
    g_autofree char *off_str = NULL;

    /* The effects switched off, by name, so that a row says which model
     * measured it (nothing is added with every effect on). */
    for (guint k = 0; k < N_EFFECTS; k++)
      if (!(m.effects & effects[k].bit))
        g_string_append_printf (off, "%s%s", off->len > 0 ? ", " : "",
                                effects[k].name);
    if (off->len > 0)
      g_string_prepend (off, "; analytic quantities for ");
    off_str = g_string_free (off, FALSE);
    model = g_strdup_printf (
        "ipu-pod emulator (timing: BSP supersteps, per-tile ports, chip-local "
        "HBM, %s partial-sum reduction, %s tile mapping%s%s%s), SRAM "
        "high-water %" G_GUINT64_FORMAT " B on tile %u",
        m.reduce_stepwise ? "stepwise" : "direct",
        m.tile_mapping_aligned ? "aligned" : "sequential",
        a & ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION
            ? "; the program's assumption applied: free data distribution"
            : "",
        a & ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK
            ? "; the program's assumption applied: private preload network"
            : "",
        off_str, r.sram_hwm, r.sram_hwm_tile);
  }
  g_free (metrics->model);
  metrics->model = g_steal_pointer (&model);
  metrics->routing = g_steal_pointer (&routing);
  return g_steal_pointer (&metrics);
}

static ElkMetrics *
elk_ipu_pod_chip_run (ElkChip *chip,
                      ElkProgram *program,
                      const ElkPlanSet *plans,
                      GError **error)
{
  return elk_ipu_pod_chip_run_traced (chip, program, plans, NULL, error);
}

/* The chip's cost model (elk-ipu-pod-cost.c): the analytic prices, and
 * re-layout as the emulator's input superstep charges it. */
static ElkCostModel *
elk_ipu_pod_chip_dup_cost_model (ElkChip *chip,
                                 const ElkPlanSet *plans,
                                 GError **error)
{
  IpuMachine m;

  (void) plans;
  (void) error;
  machine_from_props (ELK_IPU_POD_CHIP (chip), &m);
  return elk__ipu_pod_cost_model_new (&m);
}

static void
elk_ipu_pod_chip_iface_init (ElkChipInterface *iface)
{
  iface->dup_spec = elk_ipu_pod_chip_dup_spec;
  iface->run = elk_ipu_pod_chip_run;
  iface->run_traced = elk_ipu_pod_chip_run_traced;
  iface->dup_cost_model = elk_ipu_pod_chip_dup_cost_model;
}

static void
elk_ipu_pod_chip_get_property (GObject *object, guint prop_id,
                               GValue *value, GParamSpec *pspec)
{
  ElkIpuPodChip *self = ELK_IPU_POD_CHIP (object);

  if (elk_chip_props_get_property (&self->props, prop_id, value, pspec))
    return;
  switch (prop_id)
    {
    case PROP_HBM_LATENCY_NS: g_value_set_double (value, self->hbm_latency_ns); break;
    case PROP_SRAM_PORT_BPC: g_value_set_double (value, self->sram_port_bpc); break;
    case PROP_SYNC_CYCLES: g_value_set_double (value, self->sync_cycles); break;
    case PROP_SYNC_XCHIP_CYCLES:
      g_value_set_double (value, self->sync_xchip_cycles);
      break;
    case PROP_EXCHANGE_CYCLES: g_value_set_double (value, self->exchange_cycles); break;
    case PROP_KERNEL_SCALE: g_value_set_double (value, self->kernel_scale); break;
    case PROP_REDUCE_LOWERING: g_value_set_enum (value, self->reduce); break;
    case PROP_TILE_MAPPING: g_value_set_enum (value, self->mapping); break;
    case PROP_TRACE_TILES: g_value_set_uint (value, self->trace_tiles); break;
    case PROP_LAST_SRAM_HWM: g_value_set_uint64 (value, self->last_sram_hwm); break;
    case PROP_LAST_SRAM_HWM_TILE:
      g_value_set_uint (value, self->last_sram_hwm_tile);
      break;
    case PROP_LAST_EVENTS: g_value_set_uint64 (value, self->last_events); break;
    case PROP_LAST_LATENCY_CYCLES:
      g_value_set_double (value, self->last_latency_cycles);
      break;
    case PROP_LAST_REPORT: g_value_set_string (value, self->last_report); break;
    case PROP_MODE: g_value_set_enum (value, self->mode); break;
    case PROP_SEED: g_value_set_uint (value, self->seed); break;
    case PROP_INPUTS: g_value_set_boxed (value, self->inputs); break;
    case PROP_LAST_TENSORS: g_value_set_boxed (value, self->last_tensors); break;
    case PROP_FIDELITY:
      g_value_set_enum (value,
                        self->effects == IPU_FX_ALL ? ELK_IPU_POD_FIDELITY_FULL
                        : self->effects == 0 ? ELK_IPU_POD_FIDELITY_ANALYTIC
                                             : ELK_IPU_POD_FIDELITY_CUSTOM);
      break;
    default:
      if (prop_id >= PROP_EFFECT_0 && prop_id < PROP_EFFECT_0 + N_EFFECTS)
        {
          g_value_set_boolean (value, (self->effects
                                       & effects[prop_id - PROP_EFFECT_0].bit)
                                          != 0);
          break;
        }
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_ipu_pod_chip_set_property (GObject *object, guint prop_id,
                               const GValue *value, GParamSpec *pspec)
{
  ElkIpuPodChip *self = ELK_IPU_POD_CHIP (object);

  if (elk_chip_props_set_property (&self->props, prop_id, value, pspec))
    return;
  switch (prop_id)
    {
    case PROP_HBM_LATENCY_NS: self->hbm_latency_ns = g_value_get_double (value); break;
    case PROP_SRAM_PORT_BPC: self->sram_port_bpc = g_value_get_double (value); break;
    case PROP_SYNC_CYCLES: self->sync_cycles = g_value_get_double (value); break;
    case PROP_SYNC_XCHIP_CYCLES:
      self->sync_xchip_cycles = g_value_get_double (value);
      break;
    case PROP_EXCHANGE_CYCLES: self->exchange_cycles = g_value_get_double (value); break;
    case PROP_KERNEL_SCALE: self->kernel_scale = g_value_get_double (value); break;
    case PROP_REDUCE_LOWERING: self->reduce = g_value_get_enum (value); break;
    case PROP_TILE_MAPPING: self->mapping = g_value_get_enum (value); break;
    case PROP_TRACE_TILES: self->trace_tiles = g_value_get_uint (value); break;
    case PROP_MODE: self->mode = g_value_get_enum (value); break;
    case PROP_SEED: self->seed = g_value_get_uint (value); break;
    case PROP_INPUTS:
      g_clear_pointer (&self->inputs, g_hash_table_unref);
      self->inputs = g_value_dup_boxed (value);
      break;
    case PROP_FIDELITY:
      if (g_value_get_enum (value) == ELK_IPU_POD_FIDELITY_FULL)
        self->effects = IPU_FX_ALL;
      else if (g_value_get_enum (value) == ELK_IPU_POD_FIDELITY_ANALYTIC)
        self->effects = 0;
      break;
    default:
      if (prop_id >= PROP_EFFECT_0 && prop_id < PROP_EFFECT_0 + N_EFFECTS)
        {
          guint bit = effects[prop_id - PROP_EFFECT_0].bit;
          if (g_value_get_boolean (value))
            self->effects |= bit;
          else
            self->effects &= ~bit;
          break;
        }
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_ipu_pod_chip_finalize (GObject *object)
{
  ElkIpuPodChip *self = ELK_IPU_POD_CHIP (object);

  g_free (self->last_report);
  g_clear_pointer (&self->inputs, g_hash_table_unref);
  g_clear_pointer (&self->last_tensors, g_hash_table_unref);
  G_OBJECT_CLASS (elk_ipu_pod_chip_parent_class)->finalize (object);
}

#define FLAGS (G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS)
#define RO (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)

static void
elk_ipu_pod_chip_class_init (ElkIpuPodChipClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = elk_ipu_pod_chip_get_property;
  object_class->set_property = elk_ipu_pod_chip_set_property;
  object_class->finalize = elk_ipu_pod_chip_finalize;

  elk_chip_props_install (object_class, PROP_CHIP_PROPS, NULL);
  properties[PROP_HBM_LATENCY_NS] = g_param_spec_double ("hbm-latency-ns",
    NULL,
    "Latency from a preload's start to its first byte at the tiles, ns",
    0, 1e6, 100, FLAGS);
  properties[PROP_SRAM_PORT_BPC] = g_param_spec_double (
    "sram-port-bytes-per-cycle", NULL,
    "A tile's SRAM port, bytes per cycle: each byte written by the exchange "
    "while the tile computes steals 1/this cycles from its kernel", 0.01,
    4096, 16, FLAGS);
  properties[PROP_SYNC_CYCLES] = g_param_spec_double ("sync-cycles", NULL,
    "Cycles of one BSP sync inside a chip", 0, 1e6, 118, FLAGS);
  properties[PROP_SYNC_XCHIP_CYCLES] = g_param_spec_double (
    "sync-inter-chip-cycles", NULL,
    "Extra cycles of a BSP sync over tiles of more than one chip", 0, 1e6, 0,
    FLAGS);
  properties[PROP_EXCHANGE_CYCLES] = g_param_spec_double ("exchange-cycles",
    NULL, "Fixed cycles to start one exchange phase", 0, 1e6, 0, FLAGS);
  properties[PROP_KERNEL_SCALE] = g_param_spec_double ("kernel-scale", NULL,
    "Factor on every kernel's cycle cost (1 = the IPU MK2 vertex table)",
    1e-3, 1e3, 1.0, FLAGS);
  properties[PROP_REDUCE_LOWERING] = g_param_spec_enum ("reduce-lowering",
    NULL, "How partial sums left after the rotations are reduced: direct "
    "(one all-to-all reduce-scatter superstep) or stepwise (r - 1 "
    "supersteps of one 1/r chunk each, then one reduce over the r "
    "partials: the lowering T10's measured shuffle cost describes, the "
    "default)", elk_ipu_pod_reduce_get_type (),
    ELK_IPU_POD_REDUCE_STEPWISE, FLAGS);
  properties[PROP_TILE_MAPPING] = g_param_spec_enum ("tile-mapping", NULL,
    "How a plan's parts are placed on tiles: sequential (row-major, the "
    "last loop dimension fastest) or aligned (per operator, also each "
    "order with one split dimension outermost, keeping the one whose "
    "supersteps are shortest given the producers' placement; the default)",
    elk_ipu_pod_mapping_get_type (), ELK_IPU_POD_MAPPING_ALIGNED, FLAGS);
  properties[PROP_TRACE_TILES] = g_param_spec_uint ("trace-tiles", NULL,
    "Tiles sampled into a trace, evenly spaced", 0, 1024, 4, FLAGS);
  properties[PROP_LAST_SRAM_HWM] = g_param_spec_uint64 ("last-sram-hwm",
    NULL, "Highest SRAM bytes any tile held in the last run (receive buffer "
    "included)", 0, G_MAXUINT64, 0, RO);
  properties[PROP_LAST_SRAM_HWM_TILE] = g_param_spec_uint (
    "last-sram-hwm-tile", NULL, "The tile that held them", 0, G_MAXUINT, 0,
    RO);
  properties[PROP_LAST_EVENTS] = g_param_spec_uint64 ("last-events", NULL,
    "Event-loop iterations of the last run", 0, G_MAXUINT64, 0, RO);
  properties[PROP_LAST_LATENCY_CYCLES] = g_param_spec_double (
    "last-latency-cycles", NULL, "Emulated cycles of the last run", 0,
    G_MAXDOUBLE, 0, RO);
  properties[PROP_LAST_REPORT] = g_param_spec_string ("last-report", NULL,
    "The counters of the last run, one line", NULL, RO);
  properties[PROP_MODE] = g_param_spec_enum ("mode", NULL,
    "timing: times and memory only; functional: also run the program on "
    "real float data tile by tile (small graphs) and keep every tensor in "
    "last-tensors", elk_ipu_pod_mode_get_type (), ELK_IPU_POD_MODE_TIMING,
    FLAGS);
  properties[PROP_SEED] = g_param_spec_uint ("seed", NULL,
    "Functional mode: seed of the pseudo-random values (in [-1, 1)) of "
    "tensors that have no data", 0, G_MAXUINT, 1, FLAGS);
  properties[PROP_INPUTS] = g_param_spec_boxed ("inputs", NULL,
    "Functional mode: GHashTable of tensor name to GBytes of float32 "
    "row-major data for inputs and weights", G_TYPE_HASH_TABLE,
    G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  properties[PROP_LAST_TENSORS] = g_param_spec_boxed ("last-tensors", NULL,
    "Functional mode: every tensor of the last run (name to GBytes of "
    "float32), inputs as used and outputs gathered from the tiles",
    G_TYPE_HASH_TABLE, RO);
  /* The fidelity switches are set in the order given (not at
   * construction), so that fidelity=analytic followed by one
   * emulate-*=true switches that one effect on alone. */
  properties[PROP_FIDELITY] = g_param_spec_enum (
      "fidelity", NULL,
      "All emulate-* switches at once: full (every effect emulated, the "
      "default) or analytic (every effect off: the analytic chip's "
      "quantities, docs/fidelity-ipu-pod.md); reads custom for a mix, and "
      "writing custom changes nothing",
      elk_ipu_pod_fidelity_get_type (), ELK_IPU_POD_FIDELITY_FULL,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  for (guint k = 0; k < N_EFFECTS; k++)
    properties[PROP_EFFECT_0 + k]
        = g_param_spec_boolean (effects[k].name, NULL, effects[k].blurb, TRUE,
                                G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  for (guint i = PROP_HBM_LATENCY_NS; i < N_PROPS; i++)
    g_object_class_install_property (object_class, i, properties[i]);

  /**
   * ElkIpuPodChip::resolve-tensor:
   * @name: a tensor no operator writes and "inputs" does not hold
   * @tensors: the tensors so far (GHashTable of name to float32 GBytes)
   *
   * Returns: (transfer full) (nullable): the tensor's float32 data, or
   *   %NULL for seeded values.
   */
  signals[SIGNAL_RESOLVE_TENSOR] = g_signal_new ("resolve-tensor",
    G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
    g_signal_accumulator_first_wins, NULL, NULL, G_TYPE_BYTES, 2,
    G_TYPE_STRING, G_TYPE_HASH_TABLE);
}

static void
elk_ipu_pod_chip_init (ElkIpuPodChip *self)
{
  self->effects = IPU_FX_ALL;
}

ELK_PLUGIN_DEFINE_FEATURE (ipu_pod,
                           "IPU-POD emulator chip (tile-by-tile timing)",
                           "0.1",
                           ELK_TYPE_CHIP,
                           "ipu-pod",
                           ELK_TYPE_IPU_POD_CHIP)
