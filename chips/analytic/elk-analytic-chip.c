/* elk-analytic-chip.c: the "analytic" chip backend.
 *
 * Describes an ICCA chip with HBM from human-unit properties (IPU-POD4
 * defaults: 4 chips, 5888 cores, 624 KiB per core, 5.5 GB/s per core
 * all-to-all, 640 GB/s between chips, 16 TB/s HBM) and runs compiled
 * programs on libelk's contention-aware analytic timeline of elk-paper.md
 * §3.8 (elk_timeline_run(), core/compile/elk-timeline.c): preloads in
 * program order at max(HBM time, delivery time / preload share),
 * executions with their
 * inter-core traffic fitted into the NoC time the preloads leave idle
 * (noc-priority=delay-execution, the default) or the preloads pushed back
 * by the execution's traffic (delay-preload).  It prices a program from
 * elk_program_derive() alone: per-operator bytes, execution, data
 * distribution, NoC demand and load times come from the program's plans,
 * its steps, the graph and the chip spec, never from what the scheduler
 * declared or estimated, so the scheduler's estimate is a prediction the
 * chip can disagree with.
 *
 * Units: the Elk artifact divides bytes by 2^20 and by its "GB/s" figure to
 * get milliseconds, so its "16000 GB/s" HBM is 16000 MiB/ms = 16.78e12 B/s
 * (elk-paper.md §3.8).  bandwidth-units=artifact (the default, so that the
 * paper's figures reproduce) reads every *-gbps property that way;
 * bandwidth-units=decimal reads 1 GB/s as 1e9 B/s.
 */
#include "config.h"

#include <math.h>
#include <elk/elk.h>

typedef enum
{
  ELK_BANDWIDTH_UNITS_ARTIFACT,
  ELK_BANDWIDTH_UNITS_DECIMAL,
} ElkBandwidthUnits;

static GType
elk_bandwidth_units_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { ELK_BANDWIDTH_UNITS_ARTIFACT, "ELK_BANDWIDTH_UNITS_ARTIFACT",
      "artifact" },
    { ELK_BANDWIDTH_UNITS_DECIMAL, "ELK_BANDWIDTH_UNITS_DECIMAL", "decimal" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("ElkBandwidthUnits",
                                                      values));
  return (GType) type;
}

/* Who yields when an execution's traffic and the preloads it overlaps want
 * the same interconnect time (the artifact's delay_comp, elk-paper.md
 * §3.8).  One model per run: the chip never picks the better of two per
 * program. */
typedef enum
{
  ELK_NOC_PRIORITY_PRELOAD,
  ELK_NOC_PRIORITY_EXECUTION,
} ElkNocPriority;

static GType
elk_noc_priority_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { ELK_NOC_PRIORITY_PRELOAD, "ELK_NOC_PRIORITY_PRELOAD",
      "delay-execution" },
    { ELK_NOC_PRIORITY_EXECUTION, "ELK_NOC_PRIORITY_EXECUTION",
      "delay-preload" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("ElkAnalyticNocPriority",
                                                      values));
  return (GType) type;
}

#define ELK_TYPE_ANALYTIC_CHIP (elk_analytic_chip_get_type ())
G_DECLARE_FINAL_TYPE (ElkAnalyticChip, elk_analytic_chip, ELK, ANALYTIC_CHIP,
                      GObject)

struct _ElkAnalyticChip
{
  GObject parent_instance;
  guint chips, cores, sram_kib, reserved_kib, mesh_rows, mesh_cols;
  guint hbm_channels;
  gint topology, units, priority;
  double link_bw_gbps, hbm_bw_gbps, inter_chip_bw_gbps, clock_ghz;
  double matmul_tflops, vector_tflops, load_noc_share;
};

enum
{
  PROP_0,
  PROP_CHIPS,
  PROP_CORES,
  PROP_SRAM_KIB,
  PROP_RESERVED_KIB,
  PROP_TOPOLOGY,
  PROP_MESH_ROWS,
  PROP_MESH_COLS,
  PROP_LINK_BW_GBPS,
  PROP_HBM_BW_GBPS,
  PROP_HBM_CHANNELS,
  PROP_INTER_CHIP_BW_GBPS,
  PROP_CLOCK_GHZ,
  PROP_MATMUL_TFLOPS,
  PROP_VECTOR_TFLOPS,
  PROP_BANDWIDTH_UNITS,
  PROP_LOAD_NOC_SHARE,
  PROP_NOC_PRIORITY,
  N_PROPS
};
static GParamSpec *properties[N_PROPS];

static void elk_analytic_chip_iface_init (ElkChipInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (ElkAnalyticChip, elk_analytic_chip,
                               G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (ELK_TYPE_CHIP,
                                                      elk_analytic_chip_iface_init))

static double
gbps (const ElkAnalyticChip *self, double value)
{
  return value * (self->units == ELK_BANDWIDTH_UNITS_ARTIFACT ? 1048576e3
                                                               : 1e9);
}

static ElkChipSpec *
elk_analytic_chip_dup_spec (ElkChip *chip, GError **error)
{
  ElkAnalyticChip *self = ELK_ANALYTIC_CHIP (chip);
  ElkChipSpec *spec = elk_chip_spec_new_ipu_pod4 ();

  g_free (spec->name);
  spec->name = g_strdup ("analytic");
  spec->n_chips = self->chips;
  spec->cores = self->cores;
  spec->sram_per_core = (guint64) self->sram_kib * 1024;
  spec->sram_reserved = (guint64) self->reserved_kib * 1024;
  spec->clock_hz = self->clock_ghz * 1e9;
  spec->matmul_flops = self->matmul_tflops * 1e12;
  spec->vector_flops = self->vector_tflops * 1e12;
  spec->topology = (ElkTopology) self->topology;
  spec->mesh_rows = self->mesh_rows;
  spec->mesh_cols = self->mesh_cols;
  spec->link_bw = gbps (self, self->link_bw_gbps);
  spec->inter_chip_bw = gbps (self, self->inter_chip_bw_gbps);
  spec->hbm_channels = self->hbm_channels;
  spec->hbm_bw = gbps (self, self->hbm_bw_gbps);
  if (spec->topology != ELK_TOPOLOGY_ALL_TO_ALL)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG,
                   "chip 'analytic': topology '%s' is not modelled; the "
                   "analytic timeline covers all-to-all only (use the "
                   "noc-sim chip for meshes)",
                   elk_topology_to_string (spec->topology));
      elk_chip_spec_free (spec);
      return NULL;
    }
  return spec;
}

static ElkMetrics *
elk_analytic_chip_run (ElkChip *chip,
                       ElkProgram *program,
                       const ElkPlanSet *plans,
                       GError **error)
{
  ElkAnalyticChip *self = ELK_ANALYTIC_CHIP (chip);
  g_autoptr(ElkChipSpec) spec = elk_analytic_chip_dup_spec (chip, error);
  ElkGraph *graph = elk_program_get_graph (program);
  guint n = elk_graph_get_n_ops (graph), n_steps;
  g_autofree ElkTimelineOp *ops = NULL;
  g_autofree ElkStep *steps = NULL;
  g_autofree ElkOpCost *costs = NULL;
  ElkTimelineResult r;
  ElkMetrics *metrics;
  double bound_compute = 0, bound_hbm, hbm_bytes = 0;

  if (spec == NULL)
    return NULL;
  /* Every number priced below comes from the program's plans and steps
   * (elk_program_derive), never from what the scheduler declared. */
  costs = elk_program_derive (program, plans, error);
  if (costs == NULL)
    return NULL;
  ops = g_new0 (ElkTimelineOp, n);
  n_steps = elk_program_get_n_steps (program);
  steps = g_new (ElkStep, n_steps);
  for (guint s = 0; s < n_steps; s++)
    steps[s] = *elk_program_get_step (program, s);
  for (guint i = 0; i < n; i++)
    {
      const ElkOpCost *c = &costs[i];
      const ElkOp *op = elk_graph_get_op (graph, i);

      /* The preload runs at the share the program asked for, and never
       * faster than the chip's own load-noc-share allows. */
      elk_timeline_op_init_from_cost (&ops[i], c);
      hbm_bytes += (double) ops[i].hbm_bytes;
      bound_compute += op->flops / (op->kind == ELK_OP_MATMUL
                                      ? spec->matmul_flops
                                      : spec->vector_flops);
    }

  if (!elk_timeline_run (spec, self->load_noc_share,
                         self->priority == ELK_NOC_PRIORITY_PRELOAD
                           ? ELK_TIMELINE_PRELOAD_FIRST
                           : ELK_TIMELINE_EXECUTION_FIRST,
                         n, ops, n_steps, steps, &r, error))
    return NULL;

  bound_hbm = hbm_bytes / spec->hbm_bw;
  if (r.latency_s < MAX (bound_compute, bound_hbm) * (1 - 1e-9))
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_BELOW_BOUND,
                   "chip 'analytic': latency %.6g s is below the physical "
                   "bound %.6g s (compute %.6g s, HBM %.6g s)",
                   r.latency_s, MAX (bound_compute, bound_hbm),
                   bound_compute, bound_hbm);
      return NULL;
    }

  {
    ElkProgramAssumptions assume = elk_program_get_assumptions (program);
    g_autofree char *model = g_strdup_printf (
      "analytic timeline (elk-paper.md §3.8), %s, %s bandwidth units%s%s",
      self->priority == ELK_NOC_PRIORITY_PRELOAD ? "delay-execution"
                                                 : "delay-preload",
      self->units == ELK_BANDWIDTH_UNITS_ARTIFACT ? "artifact MiB/ms"
                                                  : "decimal",
      (assume & ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION)
        ? ", assumed free distribution" : "",
      (assume & ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK)
        ? ", assumed private preload network" : "");
    metrics = elk_metrics_new (model);
  }
  metrics->latency_s = r.latency_s;
  metrics->flops = elk_graph_get_total_flops (graph);
  metrics->hbm_bytes = hbm_bytes;
  metrics->noc_bytes = r.noc_bytes;
  metrics->hbm_util = r.hbm_busy_s / r.latency_s;
  metrics->noc_util = r.noc_busy_s / r.latency_s;
  metrics->achieved_flops = metrics->flops / r.latency_s;
  metrics->preload_only_s = r.preload_only_s;
  metrics->execute_only_s = r.execute_only_s;
  metrics->overlap_s = r.overlap_s;
  metrics->stall_s = r.stall_s;
  return metrics;
}

static void
elk_analytic_chip_iface_init (ElkChipInterface *iface)
{
  iface->dup_spec = elk_analytic_chip_dup_spec;
  iface->run = elk_analytic_chip_run;
}

static void
elk_analytic_chip_get_property (GObject *object, guint prop_id,
                                GValue *value, GParamSpec *pspec)
{
  ElkAnalyticChip *self = ELK_ANALYTIC_CHIP (object);

  switch (prop_id)
    {
    case PROP_CHIPS: g_value_set_uint (value, self->chips); break;
    case PROP_CORES: g_value_set_uint (value, self->cores); break;
    case PROP_SRAM_KIB: g_value_set_uint (value, self->sram_kib); break;
    case PROP_RESERVED_KIB: g_value_set_uint (value, self->reserved_kib); break;
    case PROP_TOPOLOGY: g_value_set_enum (value, self->topology); break;
    case PROP_MESH_ROWS: g_value_set_uint (value, self->mesh_rows); break;
    case PROP_MESH_COLS: g_value_set_uint (value, self->mesh_cols); break;
    case PROP_LINK_BW_GBPS: g_value_set_double (value, self->link_bw_gbps); break;
    case PROP_HBM_BW_GBPS: g_value_set_double (value, self->hbm_bw_gbps); break;
    case PROP_HBM_CHANNELS: g_value_set_uint (value, self->hbm_channels); break;
    case PROP_INTER_CHIP_BW_GBPS:
      g_value_set_double (value, self->inter_chip_bw_gbps);
      break;
    case PROP_CLOCK_GHZ: g_value_set_double (value, self->clock_ghz); break;
    case PROP_MATMUL_TFLOPS: g_value_set_double (value, self->matmul_tflops); break;
    case PROP_VECTOR_TFLOPS: g_value_set_double (value, self->vector_tflops); break;
    case PROP_BANDWIDTH_UNITS: g_value_set_enum (value, self->units); break;
    case PROP_LOAD_NOC_SHARE: g_value_set_double (value, self->load_noc_share); break;
    case PROP_NOC_PRIORITY: g_value_set_enum (value, self->priority); break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_analytic_chip_set_property (GObject *object, guint prop_id,
                                const GValue *value, GParamSpec *pspec)
{
  ElkAnalyticChip *self = ELK_ANALYTIC_CHIP (object);

  switch (prop_id)
    {
    case PROP_CHIPS: self->chips = g_value_get_uint (value); break;
    case PROP_CORES: self->cores = g_value_get_uint (value); break;
    case PROP_SRAM_KIB: self->sram_kib = g_value_get_uint (value); break;
    case PROP_RESERVED_KIB: self->reserved_kib = g_value_get_uint (value); break;
    case PROP_TOPOLOGY: self->topology = g_value_get_enum (value); break;
    case PROP_MESH_ROWS: self->mesh_rows = g_value_get_uint (value); break;
    case PROP_MESH_COLS: self->mesh_cols = g_value_get_uint (value); break;
    case PROP_LINK_BW_GBPS: self->link_bw_gbps = g_value_get_double (value); break;
    case PROP_HBM_BW_GBPS: self->hbm_bw_gbps = g_value_get_double (value); break;
    case PROP_HBM_CHANNELS: self->hbm_channels = g_value_get_uint (value); break;
    case PROP_INTER_CHIP_BW_GBPS:
      self->inter_chip_bw_gbps = g_value_get_double (value);
      break;
    case PROP_CLOCK_GHZ: self->clock_ghz = g_value_get_double (value); break;
    case PROP_MATMUL_TFLOPS: self->matmul_tflops = g_value_get_double (value); break;
    case PROP_VECTOR_TFLOPS: self->vector_tflops = g_value_get_double (value); break;
    case PROP_BANDWIDTH_UNITS: self->units = g_value_get_enum (value); break;
    case PROP_LOAD_NOC_SHARE: self->load_noc_share = g_value_get_double (value); break;
    case PROP_NOC_PRIORITY: self->priority = g_value_get_enum (value); break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

#define FLAGS (G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS)

static void
elk_analytic_chip_class_init (ElkAnalyticChipClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = elk_analytic_chip_get_property;
  object_class->set_property = elk_analytic_chip_set_property;

  properties[PROP_CHIPS] = g_param_spec_uint ("chips", NULL,
    "Chips joined by inter-chip links", 1, 1024, 4, FLAGS);
  properties[PROP_CORES] = g_param_spec_uint ("cores", NULL,
    "Cores over all chips", 1, 16777216, 5888, FLAGS);
  properties[PROP_SRAM_KIB] = g_param_spec_uint ("sram-kib", NULL,
    "SRAM per core, KiB", 1, 1048576, 624, FLAGS);
  properties[PROP_RESERVED_KIB] = g_param_spec_uint ("reserved-kib", NULL,
    "SRAM per core kept by the runtime (receive buffer), KiB", 0, 1048576, 8,
    FLAGS);
  properties[PROP_TOPOLOGY] = g_param_spec_enum ("topology", NULL,
    "On-chip interconnect (the analytic timeline models all-to-all)",
    ELK_TYPE_TOPOLOGY, ELK_TOPOLOGY_ALL_TO_ALL, FLAGS);
  properties[PROP_MESH_ROWS] = g_param_spec_uint ("mesh-rows", NULL,
    "Mesh rows per chip (mesh and torus only)", 0, 65536, 0, FLAGS);
  properties[PROP_MESH_COLS] = g_param_spec_uint ("mesh-cols", NULL,
    "Mesh columns per chip (mesh and torus only)", 0, 65536, 0, FLAGS);
  properties[PROP_LINK_BW_GBPS] = g_param_spec_double ("link-bw-gbps", NULL,
    "Inter-core bandwidth per core, GB/s (see bandwidth-units)", 1e-3, 1e6,
    5.5, FLAGS);
  properties[PROP_HBM_BW_GBPS] = g_param_spec_double ("hbm-bw-gbps", NULL,
    "Total HBM bandwidth, GB/s (see bandwidth-units)", 1e-3, 1e9, 16000,
    FLAGS);
  properties[PROP_HBM_CHANNELS] = g_param_spec_uint ("hbm-channels", NULL,
    "HBM modules; tensors are striped over all of them", 1, 4096, 16, FLAGS);
  properties[PROP_INTER_CHIP_BW_GBPS] = g_param_spec_double (
    "inter-chip-bw-gbps", NULL,
    "Total inter-chip bandwidth, GB/s (see bandwidth-units)", 1e-3, 1e9, 640,
    FLAGS);
  properties[PROP_CLOCK_GHZ] = g_param_spec_double ("clock-ghz", NULL,
    "Core clock, GHz", 1e-3, 100, 1.325, FLAGS);
  properties[PROP_MATMUL_TFLOPS] = g_param_spec_double ("matmul-tflops", NULL,
    "Peak MatMul TFLOP/s of the whole system (5888 x 128 FLOP/cycle x "
    "1.325 GHz)", 1e-6, 1e9, 5888 * 128 * 1.325e9 / 1e12, FLAGS);
  properties[PROP_VECTOR_TFLOPS] = g_param_spec_double ("vector-tflops", NULL,
    "Peak non-MatMul TFLOP/s of the whole system", 1e-6, 1e9, 31.2, FLAGS);
  properties[PROP_BANDWIDTH_UNITS] = g_param_spec_enum ("bandwidth-units",
    NULL,
    "How *-gbps values are read: artifact (1 GB/s = 2^20 B/ms, as the Elk "
    "artifact computes) or decimal (1 GB/s = 1e9 B/s)",
    elk_bandwidth_units_get_type (), ELK_BANDWIDTH_UNITS_ARTIFACT, FLAGS);
  properties[PROP_LOAD_NOC_SHARE] = g_param_spec_double ("load-noc-share",
    NULL,
    "Share of the NoC a preload may take when the program does not ask for "
    "a slower preload", 0.05, 1.0, 1.0, FLAGS);
  properties[PROP_NOC_PRIORITY] = g_param_spec_enum ("noc-priority", NULL,
    "Who yields on a busy NoC: delay-execution (preloads first, the "
    "default, as preloads issued earlier hold the links) or delay-preload "
    "(execution traffic first)",
    elk_noc_priority_get_type (), ELK_NOC_PRIORITY_PRELOAD, FLAGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
elk_analytic_chip_init (ElkAnalyticChip *self)
{
}

static gboolean
analytic_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_CHIP, "analytic",
                                 ELK_TYPE_ANALYTIC_CHIP, error);
}

ELK_PLUGIN_DEFINE (analytic, "Analytic contention-aware timeline chip",
                   "0.1", analytic_register)
