/* elk-noc-sim-chip.c: the "noc-sim" chip backend.
 *
 * An ICCA chip whose interconnect is simulated event by event
 * (elk-noc-sim-*.c): all-to-all (per-core ingress and egress ports, IPU
 * style), ring, 2-D mesh or 2-D torus per chip, several chips joined by an
 * inter-chip link of capped total bandwidth, and HBM controllers that are
 * network nodes placed on the grid.  The chip-spec properties every chip
 * shares come from libelk (elk_chip_props_install()) with the same names,
 * units, ranges and defaults, so that an experiment can swap chips.  Here
 * link-bw-gbps is one link's bandwidth (on all-to-all, a core's ingress or
 * egress port), hbm-channels must be a multiple of chips, and a mesh or
 * torus with mesh-rows and mesh-cols both 0 takes the squarest grid.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <errno.h>
#include <stdio.h>
#include <elk/elk.h>
#include "elk-noc-sim.h"

static GType
noc_placement_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { NOC_PLACE_EDGES, "NOC_PLACE_EDGES", "edges" },
    { NOC_PLACE_CORNERS, "NOC_PLACE_CORNERS", "corners" },
    { NOC_PLACE_ONE_EDGE, "NOC_PLACE_ONE_EDGE", "one-edge" },
    { NOC_PLACE_COORDS, "NOC_PLACE_COORDS", "coords" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("ElkNocSimPlacement",
                                                      values));
  return (GType) type;
}

static GType
noc_interleave_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { NOC_INTERLEAVE_STRIPE, "NOC_INTERLEAVE_STRIPE", "stripe" },
    { NOC_INTERLEAVE_NEAREST, "NOC_INTERLEAVE_NEAREST", "nearest" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("ElkNocSimInterleave",
                                                      values));
  return (GType) type;
}

static GType
noc_reduce_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { NOC_REDUCE_EXCHANGE, "NOC_REDUCE_EXCHANGE", "exchange" },
    { NOC_REDUCE_RING, "NOC_REDUCE_RING", "ring" },
    { NOC_REDUCE_2D, "NOC_REDUCE_2D", "2d" },
    { NOC_REDUCE_AUTO, "NOC_REDUCE_AUTO", "auto" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("ElkNocSimReduce",
                                                      values));
  return (GType) type;
}

static GType
noc_arbitration_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { NOC_ARBITRATION_ARRIVAL, "NOC_ARBITRATION_ARRIVAL", "arrival" },
    { NOC_ARBITRATION_BOOKING, "NOC_ARBITRATION_BOOKING", "booking" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("ElkNocSimArbitration",
                                                      values));
  return (GType) type;
}

static GType
noc_gateway_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { NOC_GATEWAY_EDGE, "NOC_GATEWAY_EDGE", "edge" },
    { NOC_GATEWAY_SINGLE, "NOC_GATEWAY_SINGLE", "single" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("ElkNocSimGateway",
                                                      values));
  return (GType) type;
}

/* The fidelity ladder (docs/fidelity.md): `fidelity` sets every effect,
 * and each effect's own switch may override it. */
typedef enum
{
  NOC_FIDELITY_FULL,
  NOC_FIDELITY_ANALYTIC,
} NocFidelity;

typedef enum
{
  NOC_SWITCH_AUTO,
  NOC_SWITCH_ON,
  NOC_SWITCH_OFF,
} NocSwitch;

static GType
noc_fidelity_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { NOC_FIDELITY_FULL, "NOC_FIDELITY_FULL", "full" },
    { NOC_FIDELITY_ANALYTIC, "NOC_FIDELITY_ANALYTIC", "analytic" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
                       g_enum_register_static ("ElkNocSimFidelity", values));
  return (GType) type;
}

static GType
noc_switch_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { NOC_SWITCH_AUTO, "NOC_SWITCH_AUTO", "auto" },
    { NOC_SWITCH_ON, "NOC_SWITCH_ON", "on" },
    { NOC_SWITCH_OFF, "NOC_SWITCH_OFF", "off" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
                       g_enum_register_static ("ElkNocSimSwitch", values));
  return (GType) type;
}

/* One switch per NocEffect bit, in bit order: the property is
 * "effect-NAME". */
static const struct
{
  const char *name, *blurb;
} effects[NOC_FX_N] = {
  { "effect-preload-network",
    "Preloads as HBM controller reads and copies through the network "
    "(off: the analytic load time, no traffic)" },
  { "effect-hbm-controllers",
    "Per-chip HBM controllers of hbm-bw-gbps / hbm-channels, each piece "
    "read once per chip, placement and attachments (off: one pool of the "
    "whole bandwidth, each piece read once; all-to-all only)" },
  { "effect-hbm-latency", "hbm-latency-ns on every read (off: 0)" },
  { "effect-packets",
    "Reads of packet-bytes, round robin over a controller's pieces (off: "
    "each piece read whole)" },
  { "effect-hop-latency", "hop-latency-ns on every link (off: 0)" },
  { "effect-contention",
    "Preload copies and execution traffic share the cores' ports (off: "
    "separate ports, and each execute pays the analytic delay-execution "
    "stall; all-to-all only)" },
  { "effect-reduce",
    "Partial-sum reduce-scatter by `reduce` and the output re-layout as "
    "rounds of transfers (off: the plan's output-stage time and bytes)" },
  { "effect-relayout",
    "Distribution from the preload layout as ring all-gather rounds (off: "
    "the analytic warm-up time and bytes)" },
  { "effect-inter-chip",
    "The inter-chip link (and gateways) (off: no link; the analytic "
    "multichip factor on shifts and output stages)" },
  { "effect-full-rate-preload",
    "Preloads run at the full port rate whatever preload share the "
    "program asks (off: throttled to it, as on the analytic chip)" },
  { "effect-all-transfers",
    "A bound's assumptions (free distribution, private preload network) "
    "are not applied: every transfer the plans imply is simulated (off: "
    "applied, as on the analytic chip)" },
};

#define ELK_TYPE_NOC_SIM_CHIP (elk_noc_sim_chip_get_type ())
G_DECLARE_FINAL_TYPE (ElkNocSimChip, elk_noc_sim_chip, ELK, NOC_SIM_CHIP,
                      GObject)

struct _ElkNocSimChip
{
  GObject parent_instance;
  ElkChipProps props;
  guint packet_bytes, hbm_attach, trace_links;
  gint placement, interleave, reduce, gateway, arbitration;
  double hbm_per_core_gbps;
  double hop_latency_ns, hbm_latency_ns, gap_cycles_per_byte, sync_cycles;
  double hbm_port_gbps;
  char *hbm_coords;
  char *report_dir;
  guint n_runs;
  gint fidelity;
  gint steady;       /* NocSwitch: auto and on extrapolate */
  gint fx[NOC_FX_N]; /* NocSwitch per effect */
};

/* The common chip-spec properties (elk_chip_props_install) come first, the
 * chip's own after them. */
enum
{
  PROP_0,
  PROP_CHIP_PROPS,
  PROP_HBM_PER_CORE_GBPS = PROP_CHIP_PROPS + ELK_CHIP_PROPS_N_PROPERTIES,
  PROP_HOP_LATENCY_NS,
  PROP_HBM_LATENCY_NS,
  PROP_GAP_CYCLES_PER_BYTE,
  PROP_SYNC_CYCLES,
  PROP_PACKET_BYTES,
  PROP_HBM_PLACEMENT,
  PROP_HBM_COORDS,
  PROP_HBM_ATTACH,
  PROP_HBM_PORT_GBPS,
  PROP_HBM_INTERLEAVE,
  PROP_REDUCE,
  PROP_ARBITRATION,
  PROP_GATEWAY,
  PROP_REPORT_DIR,
  PROP_TRACE_LINKS,
  PROP_FIDELITY,
  PROP_STEADY_STATE,
  PROP_EFFECT0,
  N_PROPS = PROP_EFFECT0 + NOC_FX_N
};
static GParamSpec *properties[N_PROPS];

static void elk_noc_sim_chip_iface_init (ElkChipInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (ElkNocSimChip, elk_noc_sim_chip,
                               G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (ELK_TYPE_CHIP,
                                                      elk_noc_sim_chip_iface_init))

#define CONFIG_ERROR(...)                                                    \
  g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG, __VA_ARGS__)

static double
gbps (const ElkNocSimChip *self, double value)
{
  return elk_bandwidth_units_to_bytes_per_second (self->props.bandwidth_units,
                                                  value);
}

/* The squarest rows x cols grid of @n cores, rows <= cols. */
static void
squarest (guint n, guint *rows, guint *cols)
{
  guint r = (guint) floor (sqrt ((double) n));
  while (r > 1 && n % r != 0)
    r--;
  *rows = MAX (r, 1u);
  *cols = n / *rows;
}

static gboolean
resolve_grid (ElkNocSimChip *self, guint *rows, guint *cols, GError **error)
{
  const char *topo = elk_topology_to_string (self->props.topology);

  *rows = self->props.mesh_rows;
  *cols = self->props.mesh_cols;
  if (self->props.topology != ELK_TOPOLOGY_MESH
      && self->props.topology != ELK_TOPOLOGY_TORUS)
    return TRUE;
  if ((*rows == 0) != (*cols == 0))
    {
      CONFIG_ERROR ("chip 'noc-sim': mesh-rows = %u and mesh-cols = %u: set "
                    "both (or neither, for the squarest grid)", *rows, *cols);
      return FALSE;
    }
  if (self->props.cores % self->props.chips != 0)
    {
      CONFIG_ERROR ("chip 'noc-sim': cores = %u cannot be split evenly over "
                    "chips = %u", self->props.cores, self->props.chips);
      return FALSE;
    }
  if (*rows == 0)
    squarest (self->props.cores / self->props.chips, rows, cols);
  if ((guint64) *rows * *cols * self->props.chips != self->props.cores)
    {
      CONFIG_ERROR ("chip 'noc-sim': a %s of mesh-rows x mesh-cols = %ux%u "
                    "per chip on chips = %u holds %" G_GUINT64_FORMAT
                    " cores, but cores = %u (expected mesh-rows x mesh-cols "
                    "x chips = cores)", topo, *rows, *cols,
                    self->props.chips,
                    (guint64) *rows * *cols * self->props.chips,
                    self->props.cores);
      return FALSE;
    }
  return TRUE;
}

/* The NocEffect bits switched off: each effect's switch, or `fidelity`
 * where it is auto. */
static guint32
effects_off (const ElkNocSimChip *self)
{
  guint32 off = 0;

  for (guint i = 0; i < NOC_FX_N; i++)
    if (self->fx[i] == NOC_SWITCH_OFF
        || (self->fx[i] == NOC_SWITCH_AUTO
            && self->fidelity == NOC_FIDELITY_ANALYTIC))
      off |= 1u << i;
  return off;
}

static double
total_hbm_gbps (const ElkNocSimChip *self)
{
  return self->hbm_per_core_gbps > 0
           ? self->hbm_per_core_gbps * self->props.cores
           : self->props.hbm_bw_gbps;
}

static NocSim *build_sim (ElkNocSimChip *self, const ElkChipSpec *spec,
                          GError **error);

static ElkChipSpec *
elk_noc_sim_chip_dup_spec (ElkChip *chip, GError **error)
{
  ElkNocSimChip *self = ELK_NOC_SIM_CHIP (chip);
  ElkChipSpec *spec;
  guint rows, cols;

  /* The common properties' ranges keep the link, HBM and inter-chip
   * bandwidths positive (elk_chip_props_install), and so
   * hbm-bw-per-core-gbps x cores when it is given. */
  if (self->hbm_port_gbps < 0)
    {
      CONFIG_ERROR ("chip 'noc-sim': hbm-port-gbps = %g must be positive, or "
                    "0 for link-bw-gbps", self->hbm_port_gbps);
      return NULL;
    }
  if (self->props.hbm_channels % self->props.chips != 0)
    {
      CONFIG_ERROR ("chip 'noc-sim': hbm-channels = %u cannot be split "
                    "evenly over chips = %u", self->props.hbm_channels,
                    self->props.chips);
      return NULL;
    }
  if (!resolve_grid (self, &rows, &cols, error))
    return NULL;

  spec = elk_chip_spec_new_ipu_pod4 ();
  g_free (spec->name);
  spec->name = g_strdup ("noc-sim");
  elk_chip_props_fill_spec (&self->props, spec);
  /* What noc-sim derives its own way: the grid it chose, and the HBM
   * bandwidth when it is given per core. */
  spec->mesh_rows = (spec->topology == ELK_TOPOLOGY_MESH
                     || spec->topology == ELK_TOPOLOGY_TORUS) ? rows : 0;
  spec->mesh_cols = spec->mesh_rows ? cols : 0;
  spec->hbm_bw = gbps (self, total_hbm_gbps (self));
  spec->link_latency = self->hop_latency_ns * 1e-9;
  spec->hbm_latency = self->hbm_latency_ns * 1e-9;
  /* The compiler's cost model and the simulator share the core's network
   * agent parameters (LogGP G and the barrier). */
  spec->cost.shift_cycles_per_byte = self->gap_cycles_per_byte;
  spec->cost.sync_cycles = self->sync_cycles;
  {
    /* Controller placement is checked here too, so that a controller off
     * the grid fails before anything is compiled. */
    NocSim *sim = build_sim (self, spec, error);
    if (sim == NULL)
      {
        elk_chip_spec_free (spec);
        return NULL;
      }
    elk__noc_sim_free (sim);
  }
  return spec;
}

static gboolean
parse_coords (ElkNocSimChip *self, guint per_chip_ctrl, NocConfig *cfg,
              GError **error)
{
  g_auto(GStrv) items = NULL;
  guint n = 0;

  if (self->hbm_coords == NULL || *self->hbm_coords == '\0')
    {
      CONFIG_ERROR ("chip 'noc-sim': hbm-placement = coords needs "
                    "hbm-coords, e.g. \"0,5;31,40\" (row,col per controller "
                    "of a chip)");
      return FALSE;
    }
  items = g_strsplit (self->hbm_coords, ";", -1);
  cfg->coords = g_new0 (guint, 2 * (g_strv_length (items) + 1));
  for (guint i = 0; items[i] != NULL; i++)
    {
      char *end;
      guint64 r, c;
      g_strstrip (items[i]);
      if (*items[i] == '\0')
        continue;
      errno = 0;
      r = g_ascii_strtoull (items[i], &end, 10);
      if (end == items[i] || *end != ',' || errno)
        goto bad;
      {
        char *s2 = end + 1;
        c = g_ascii_strtoull (s2, &end, 10);
        if (end == s2 || *end != '\0' || errno)
          goto bad;
      }
      cfg->coords[2 * n] = (guint) MIN (r, G_MAXUINT);
      cfg->coords[2 * n + 1] = (guint) MIN (c, G_MAXUINT);
      n++;
      continue;
bad:
      CONFIG_ERROR ("chip 'noc-sim': hbm-coords: '%s' is not 'row,col'",
                    items[i]);
      return FALSE;
    }
  if (n != per_chip_ctrl)
    {
      CONFIG_ERROR ("chip 'noc-sim': hbm-coords lists %u controllers, but "
                    "hbm-channels / chips = %u per chip", n, per_chip_ctrl);
      return FALSE;
    }
  cfg->n_coords = n;
  return TRUE;
}

static NocSim *
build_sim (ElkNocSimChip *self, const ElkChipSpec *spec, GError **error)
{
  NocConfig cfg = { 0 };
  NocSim *sim;

  cfg.topology = spec->topology;
  cfg.chips = spec->n_chips;
  cfg.cores = spec->cores;
  cfg.rows = spec->mesh_rows;
  cfg.cols = spec->mesh_cols;
  cfg.link_bw = spec->link_bw;
  cfg.hop_latency = spec->link_latency;
  cfg.clock_hz = spec->clock_hz;
  cfg.cost = spec->cost;
  cfg.core_gap = spec->cost.shift_cycles_per_byte / spec->clock_hz;
  cfg.sync_s = spec->cost.sync_cycles / spec->clock_hz;
  cfg.syncs_per_shift = spec->cost.syncs_per_shift;
  cfg.shuffle_syncs = spec->cost.shuffle_syncs;
  cfg.hbm_channels = spec->hbm_channels;
  cfg.hbm_bw = spec->hbm_bw;
  cfg.hbm_latency = spec->hbm_latency;
  cfg.hbm_port_bw = self->hbm_port_gbps > 0 ? gbps (self, self->hbm_port_gbps)
                                            : spec->link_bw;
  cfg.hbm_attach = self->hbm_attach;
  cfg.placement = (NocPlacement) self->placement;
  cfg.interleave = (NocInterleave) self->interleave;
  cfg.reduce = (NocReduce) self->reduce;
  cfg.arbitration = (NocArbitration) self->arbitration;
  cfg.gateway = (NocGateway) self->gateway;
  cfg.inter_chip_bw = spec->inter_chip_bw;
  cfg.packet_bytes = self->packet_bytes;
  cfg.effects_off = effects_off (self);
  cfg.steady_off = self->steady == NOC_SWITCH_OFF;
  if (cfg.placement == NOC_PLACE_COORDS
      && (cfg.topology == ELK_TOPOLOGY_MESH
          || cfg.topology == ELK_TOPOLOGY_TORUS)
      && !parse_coords (self, spec->hbm_channels / spec->n_chips, &cfg, error))
    {
      g_free (cfg.coords);
      return NULL;
    }
  sim = elk__noc_sim_new (&cfg, error);
  g_free (cfg.coords);
  return sim;
}

/* The analytic quantities the ladder's off positions use, per operator of
 * @program, as elk_program_derive() prices them but with no assumption of
 * the program applied (the simulator applies those itself, by its
 * all-transfers switch). */
static NocOpCost *
ladder_costs (ElkProgram *program, const ElkPlanSet *plans, GError **error)
{
  ElkGraph *graph = elk_program_get_graph (program);
  const ElkChipSpec *spec = elk_plan_set_get_spec (plans);
  const ElkPlanOptions *options = elk_plan_set_get_options (plans);
  guint n_ops = elk_graph_get_n_ops (graph);
  g_autofree NocOpCost *costs = g_new0 (NocOpCost, n_ops);
  g_autofree gboolean *preloaded = g_new0 (gboolean, n_ops);

  for (guint i = 0; i < elk_program_get_n_steps (program); i++)
    {
      const ElkStep *st = elk_program_get_step (program, i);
      if (st->kind == ELK_STEP_PRELOAD && st->op < n_ops)
        preloaded[st->op] = TRUE;
    }
  for (guint i = 0; i < n_ops; i++)
    {
      const ElkProgramOp *pop = elk_program_peek_op (program, i);
      NocOpCost *k = &costs[i];

      k->noc_s = elk_plan_get_noc_demand (&pop->exec_plan, options->noc_demand);
      if (preloaded[i] || pop->preload_plan.n_dims > 0)
        {
          double bytes = 0;
          GError *local_error = NULL;
          k->warmup_s
              = elk_plan_get_warmup (graph, i, spec, &pop->preload_plan,
                                     &pop->exec_plan, &bytes, &local_error);
          if (k->warmup_s < 0
              && (elk_program_get_assumptions (program)
                  & ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION))
            {
              /* A bound's preload layout need not lead to the execute
               * layout; there is then nothing to distribute, here as in
               * the simulator's own lowering (same spatial vectors only). */
              g_clear_error (&local_error);
              k->warmup_s = 0;
              bytes = 0;
            }
          else if (k->warmup_s < 0)
            {
              g_propagate_prefixed_error (error, local_error,
                                          "chip 'noc-sim': ");
              return NULL;
            }
          k->warmup_bytes = pop->preload_plan.cores_used > 0
                                ? bytes / pop->preload_plan.cores_used
                                : 0;
        }
      if (preloaded[i])
        {
          k->hbm_bytes
              = (double) elk_op_get_hbm_bytes (graph,
                                               elk_graph_get_op (graph, i));
          k->cold_bytes
              = k->hbm_bytes > 0 ? (double) pop->preload_plan.cold_bytes : 0;
          k->even_bytes = ceil (k->hbm_bytes / spec->cores);
        }
    }
  return g_steal_pointer (&costs);
}

static G_LOCK_DEFINE (report);

static ElkMetrics *
elk_noc_sim_chip_run_traced (ElkChip *chip,
                             ElkProgram *program,
                             const ElkPlanSet *plans,
                             ElkTrace *trace,
                             GError **error)
{
  ElkNocSimChip *self = ELK_NOC_SIM_CHIP (chip);
  g_autoptr(ElkChipSpec) spec = elk_noc_sim_chip_dup_spec (chip, error);
  g_autoptr(NocSim) sim = NULL;
  g_autofree gboolean *skipped = NULL;
  g_autoptr (ElkRoutingStats) routing = NULL;
  NocStats stats = { 0 };
  ElkMetrics *m;

  if (spec == NULL)
    return NULL;
  sim = build_sim (self, spec, error);
  if (sim == NULL)
    return NULL;
  /* Conditional operators (a mixture of experts' experts) are charged by
   * the graph's sampled routing, as every chip charges them
   * (elk_program_charge_routing()): the simulator skips the execute of
   * an expert the routing does not take, and its preload when issued
   * after the router; one issued before is simulated in full. */
  if (elk_graph_has_conditions (elk_program_get_graph (program)))
    {
      g_autofree ElkOpCost *costs = elk_program_derive (program, plans, error);
      if (costs == NULL)
        return NULL;
      skipped = g_new0 (gboolean, MAX (elk_program_get_n_steps (program), 1u));
      routing = elk_program_charge_routing (program, costs, skipped);
      elk__noc_sim_set_skipped_steps (sim, skipped);
    }
  if (effects_off (self) != 0)
    {
      g_autofree NocOpCost *costs = NULL;
      if (plans == NULL)
        {
          CONFIG_ERROR ("chip 'noc-sim': the effects switched off (fidelity "
                        "or effect-*) need the program's plan tables");
          return NULL;
        }
      costs = ladder_costs (program, plans, error);
      if (costs == NULL)
        return NULL;
      elk__noc_sim_set_costs (sim, costs,
                              elk_graph_get_n_ops (
                                  elk_program_get_graph (program)));
    }
  if (trace != NULL && self->trace_links > 0)
    {
      /* The busiest links are only known after a run: run once to find
       * them, then again recording them. */
      ElkMetrics *probe = elk__noc_sim_run (sim, program, NULL, NULL, error);
      if (probe == NULL)
        return NULL;
      elk_metrics_free (probe);
      elk__noc_sim_trace_busiest (sim, trace, self->trace_links);
    }
  m = elk__noc_sim_run (sim, program, trace, &stats, error);
  if (m == NULL)
    return NULL;
  m->routing = g_steal_pointer (&routing);
  {
    char buf[64];
    /* Which path produced the numbers: some layers advanced in closed
     * form (steady-state extrapolation) or every layer simulated. */
    g_autofree char *steady
        = stats.steady_why == NULL
              ? g_strdup_printf ("steady state: layers %d-%d of %u advanced in "
                                 "closed form (period %u)",
                                 stats.steady_from + 1,
                                 stats.steady_from + (gint) stats.steady_layers,
                                 elk_graph_get_n_layers (
                                     elk_program_get_graph (program)),
                                 stats.steady_period)
              : g_strdup_printf ("every layer simulated (%s)",
                                 stats.steady_why);
    g_autofree char *model = g_strdup_printf (
        "noc-sim: event-driven %s, %u chips, %g GB/s links, %g GB/s HBM on %u "
        "controllers; links mean %.1f%% max %.1f%% (%s), HBM controllers mean "
        "%.1f%% max %.1f%%, inter-chip %.1f%%; %" G_GUINT64_FORMAT
        " events, %" G_GUINT64_FORMAT " link hops; %s%s",
        elk_topology_to_string (spec->topology), spec->n_chips,
        self->props.link_bw_gbps, total_hbm_gbps (self), spec->hbm_channels,
        100 * stats.link_util_mean, 100 * stats.link_util_max,
        elk__noc_sim_link_name (sim, stats.link_util_max_index, buf,
                                sizeof buf),
        100 * stats.hbm_util_mean, 100 * stats.hbm_util_max,
        100 * stats.interchip_util, stats.events, stats.hops, steady,
        /* The simulator moves every byte the plans move: a bound's
         * assumptions (free distribution, a private preload network) are
         * not applied, and the results say so. */
        elk_program_get_assumptions (program) != ELK_PROGRAM_ASSUME_NONE
            ? "; the program's assumptions are not applied (every transfer "
              "simulated)"
            : "");
    g_free (m->model);
    m->model = g_steal_pointer (&model);
  }
  g_debug ("noc-sim: %.3f s simulated in %.3f s wall, %" G_GUINT64_FORMAT
           " events (%.2f M/s), %" G_GUINT64_FORMAT " hops", m->latency_s,
           stats.wall_s, stats.events,
           stats.events / MAX (stats.wall_s, 1e-9) / 1e6, stats.hops);

  if (self->report_dir != NULL && *self->report_dir != '\0')
    {
      ElkGraph *graph = elk_program_get_graph (program);
      guint run = g_atomic_int_add (&self->n_runs, 1);
      g_autofree char *stem = g_strdup_printf (
        "noc-sim-%s-%s-%uc-hbm%g-link%g-%08x-%u", elk_graph_get_name (graph),
        elk_topology_to_string (spec->topology), spec->cores,
        total_hbm_gbps (self), self->props.link_bw_gbps,
        g_direct_hash (self) ^ (guint) g_get_monotonic_time (), run);
      g_autofree char *csv = g_strdup_printf ("%s/%s-links.csv",
                                              self->report_dir, stem);
      g_autofree char *svg = g_strdup_printf ("%s/%s-links.svg",
                                              self->report_dir, stem);
      g_autofree char *runs = g_build_filename (self->report_dir,
                                                "noc-sim-runs.csv", NULL);
      FILE *f;

      if (g_mkdir_with_parents (self->report_dir, 0755) != 0)
        {
          CONFIG_ERROR ("chip 'noc-sim': report-dir '%s' cannot be created",
                        self->report_dir);
          elk_metrics_free (m);
          return NULL;
        }
      if (!elk__noc_sim_write_link_report (sim, csv, svg, error))
        {
          elk_metrics_free (m);
          return NULL;
        }
      G_LOCK (report);
      f = fopen (runs, "a");
      if (f != NULL)
        {
          if (ftell (f) == 0)
            fprintf (f, "stem,graph,topology,cores,hbm_gbps,link_gbps,"
                        "latency_s,link_util_mean,link_util_max,hbm_util_mean,"
                        "hbm_util_max,interchip_util,events,hops,wall_s\n");
          fprintf (f, "%s,%s,%s,%u,%g,%g,%.9g,%.6f,%.6f,%.6f,%.6f,%.6f,%"
                   G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%.3f\n", stem,
                   elk_graph_get_name (graph),
                   elk_topology_to_string (spec->topology), spec->cores,
                   total_hbm_gbps (self), self->props.link_bw_gbps,
                   m->latency_s,
                   stats.link_util_mean, stats.link_util_max,
                   stats.hbm_util_mean, stats.hbm_util_max,
                   stats.interchip_util, stats.events, stats.hops,
                   stats.wall_s);
          fclose (f);
        }
      G_UNLOCK (report);
    }
  return m;
}

static ElkMetrics *
elk_noc_sim_chip_run (ElkChip *chip,
                      ElkProgram *program,
                      const ElkPlanSet *plans,
                      GError **error)
{
  return elk_noc_sim_chip_run_traced (chip, program, plans, NULL, error);
}

ElkCostModel *elk__noc_sim_dup_cost_model (ElkChip *chip,
                                           const ElkPlanSet *plans,
                                           GError **error);
ElkChip *elk__noc_sim_dup_quiet (ElkChip *chip);

static void
elk_noc_sim_chip_iface_init (ElkChipInterface *iface)
{
  iface->dup_spec = elk_noc_sim_chip_dup_spec;
  iface->dup_cost_model = elk__noc_sim_dup_cost_model;
  /* Its runs write link reports when report-dir is set; a scheduler's
   * trial runs must not. */
  iface->dup_measurer = elk__noc_sim_dup_quiet;
  iface->run = elk_noc_sim_chip_run;
  iface->run_traced = elk_noc_sim_chip_run_traced;
}

static void
elk_noc_sim_chip_get_property (GObject *object, guint prop_id, GValue *value,
                               GParamSpec *pspec)
{
  ElkNocSimChip *self = ELK_NOC_SIM_CHIP (object);

  if (elk_chip_props_get_property (&self->props, prop_id, value, pspec))
    return;
  switch (prop_id)
    {
    case PROP_HBM_PER_CORE_GBPS:
      g_value_set_double (value, self->hbm_per_core_gbps);
      break;
    case PROP_HOP_LATENCY_NS: g_value_set_double (value, self->hop_latency_ns); break;
    case PROP_HBM_LATENCY_NS: g_value_set_double (value, self->hbm_latency_ns); break;
    case PROP_GAP_CYCLES_PER_BYTE:
      g_value_set_double (value, self->gap_cycles_per_byte);
      break;
    case PROP_SYNC_CYCLES: g_value_set_double (value, self->sync_cycles); break;
    case PROP_PACKET_BYTES: g_value_set_uint (value, self->packet_bytes); break;
    case PROP_HBM_PLACEMENT: g_value_set_enum (value, self->placement); break;
    case PROP_HBM_COORDS: g_value_set_string (value, self->hbm_coords); break;
    case PROP_HBM_ATTACH: g_value_set_uint (value, self->hbm_attach); break;
    case PROP_HBM_PORT_GBPS: g_value_set_double (value, self->hbm_port_gbps); break;
    case PROP_HBM_INTERLEAVE: g_value_set_enum (value, self->interleave); break;
    case PROP_REDUCE: g_value_set_enum (value, self->reduce); break;
    case PROP_ARBITRATION: g_value_set_enum (value, self->arbitration); break;
    case PROP_GATEWAY: g_value_set_enum (value, self->gateway); break;
    case PROP_REPORT_DIR: g_value_set_string (value, self->report_dir); break;
    case PROP_TRACE_LINKS: g_value_set_uint (value, self->trace_links); break;
    case PROP_STEADY_STATE:
      g_value_set_enum (value, self->steady);
      break;
    case PROP_FIDELITY:
      g_value_set_enum (value, self->fidelity);
      break;
    default:
      if (prop_id >= PROP_EFFECT0 && prop_id < N_PROPS)
        g_value_set_enum (value, self->fx[prop_id - PROP_EFFECT0]);
      else
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_noc_sim_chip_set_property (GObject *object, guint prop_id,
                               const GValue *value, GParamSpec *pspec)
{
  ElkNocSimChip *self = ELK_NOC_SIM_CHIP (object);

  if (elk_chip_props_set_property (&self->props, prop_id, value, pspec))
    return;
  switch (prop_id)
    {
    case PROP_HBM_PER_CORE_GBPS:
      self->hbm_per_core_gbps = g_value_get_double (value);
      break;
    case PROP_HOP_LATENCY_NS: self->hop_latency_ns = g_value_get_double (value); break;
    case PROP_HBM_LATENCY_NS: self->hbm_latency_ns = g_value_get_double (value); break;
    case PROP_GAP_CYCLES_PER_BYTE:
      self->gap_cycles_per_byte = g_value_get_double (value);
      break;
    case PROP_SYNC_CYCLES: self->sync_cycles = g_value_get_double (value); break;
    case PROP_PACKET_BYTES: self->packet_bytes = g_value_get_uint (value); break;
    case PROP_HBM_PLACEMENT: self->placement = g_value_get_enum (value); break;
    case PROP_HBM_COORDS:
      g_free (self->hbm_coords);
      self->hbm_coords = g_value_dup_string (value);
      break;
    case PROP_HBM_ATTACH: self->hbm_attach = g_value_get_uint (value); break;
    case PROP_HBM_PORT_GBPS: self->hbm_port_gbps = g_value_get_double (value); break;
    case PROP_HBM_INTERLEAVE: self->interleave = g_value_get_enum (value); break;
    case PROP_REDUCE: self->reduce = g_value_get_enum (value); break;
    case PROP_ARBITRATION: self->arbitration = g_value_get_enum (value); break;
    case PROP_GATEWAY: self->gateway = g_value_get_enum (value); break;
    case PROP_REPORT_DIR:
      g_free (self->report_dir);
      self->report_dir = g_value_dup_string (value);
      break;
    case PROP_TRACE_LINKS: self->trace_links = g_value_get_uint (value); break;
    case PROP_FIDELITY:
      self->fidelity = g_value_get_enum (value);
      break;
    case PROP_STEADY_STATE:
      self->steady = g_value_get_enum (value);
      break;
    default:
      if (prop_id >= PROP_EFFECT0 && prop_id < N_PROPS)
        self->fx[prop_id - PROP_EFFECT0] = g_value_get_enum (value);
      else
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_noc_sim_chip_finalize (GObject *object)
{
  ElkNocSimChip *self = ELK_NOC_SIM_CHIP (object);

  g_free (self->hbm_coords);
  g_free (self->report_dir);
  G_OBJECT_CLASS (elk_noc_sim_chip_parent_class)->finalize (object);
}

#define FLAGS (G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS)

static void
elk_noc_sim_chip_class_init (ElkNocSimChipClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = elk_noc_sim_chip_get_property;
  object_class->set_property = elk_noc_sim_chip_set_property;
  object_class->finalize = elk_noc_sim_chip_finalize;

  elk_chip_props_install (object_class, PROP_CHIP_PROPS, NULL);
  properties[PROP_HBM_PER_CORE_GBPS] = g_param_spec_double (
    "hbm-bw-per-core-gbps", NULL,
    "If positive, the total HBM bandwidth is this times cores (core-count "
    "sweeps at constant HBM per core) and hbm-bw-gbps is ignored", 0, 1e6, 0,
    FLAGS);
  properties[PROP_HOP_LATENCY_NS] = g_param_spec_double ("hop-latency-ns",
    NULL, "Latency of one link hop (LogGP L), ns", 0, 1e6, 5, FLAGS);
  properties[PROP_HBM_LATENCY_NS] = g_param_spec_double ("hbm-latency-ns",
    NULL, "HBM access latency added to every packet a controller reads, ns",
    0, 1e6, 100, FLAGS);
  properties[PROP_GAP_CYCLES_PER_BYTE] = g_param_spec_double (
    "gap-cycles-per-byte", NULL,
    "Core cycles per byte a core's network agent injects (LogGP G); also "
    "the compiler's shift cost", 0, 1e3, 0.28, FLAGS);
  properties[PROP_SYNC_CYCLES] = g_param_spec_double ("sync-cycles", NULL,
    "Cycles of one barrier synchronisation", 0, 1e9, 118, FLAGS);
  properties[PROP_PACKET_BYTES] = g_param_spec_uint ("packet-bytes", NULL,
    "Packet size: HBM controllers read and send preloads packet by packet, "
    "round robin over their destinations", 64, 1u << 30, 4096, FLAGS);
  properties[PROP_HBM_PLACEMENT] = g_param_spec_enum ("hbm-placement", NULL,
    "Where a chip's HBM controllers attach (mesh, torus): edges (spread "
    "around the perimeter), corners, one-edge (the top row) or coords "
    "(hbm-coords); ring: spread evenly; all-to-all: dedicated nodes",
    noc_placement_get_type (), NOC_PLACE_EDGES, FLAGS);
  properties[PROP_HBM_COORDS] = g_param_spec_string ("hbm-coords", NULL,
    "Controller positions for hbm-placement=coords: 'row,col;row,col;...', "
    "one per controller of a chip", NULL, FLAGS);
  properties[PROP_HBM_ATTACH] = g_param_spec_uint ("hbm-attach", NULL,
    "Routers each controller attaches to, nearest its position first (0: "
    "the placement's routers shared evenly)", 0, 65536, 0, FLAGS);
  properties[PROP_HBM_PORT_GBPS] = g_param_spec_double ("hbm-port-gbps",
    NULL, "Bandwidth of one controller-to-router attachment, GB/s (0: "
    "link-bw-gbps)", 0, 1e9, 0, FLAGS);
  properties[PROP_HBM_INTERLEAVE] = g_param_spec_enum ("hbm-interleave", NULL,
    "Which controller serves a piece (mesh, torus, ring): nearest (the "
    "controller nearest the core that holds it) or stripe (round robin over "
    "the chip's controllers, as HBM striping does)",
    noc_interleave_get_type (), NOC_INTERLEAVE_NEAREST, FLAGS);
  properties[PROP_REDUCE] = g_param_spec_enum ("reduce", NULL,
    "How partial sums are reduced among the cores holding an output: "
    "exchange (one step, every holder sends each other holder its chunk), "
    "ring (ring reduce-scatter: holders - 1 steps to the ring "
    "neighbour, each closed by a barrier and an add), 2d (two exchanges: "
    "among blocks of nearby holders, then across blocks, the block size "
    "chosen for the least link traffic), or auto (exchange on all-to-all, "
    "2d on mesh, torus and ring)",
    noc_reduce_get_type (), NOC_REDUCE_AUTO, FLAGS);
  properties[PROP_ARBITRATION] = g_param_spec_enum ("arbitration", NULL,
    "In which order a link serves the transfers sharing it: arrival (hop by "
    "hop, in the order their heads reach the link; every arrival is an "
    "event) or booking (a transfer reserves its whole route when it is "
    "sent, links serve in send order: an approximation, 4-15x faster on "
    "meshes)",
    noc_arbitration_get_type (), NOC_ARBITRATION_ARRIVAL, FLAGS);
  properties[PROP_GATEWAY] = g_param_spec_enum ("inter-chip-gateway", NULL,
    "Where cross-chip traffic leaves and enters a mesh or torus chip: edge "
    "(the east-edge router of the sender's row, the west-edge router of "
    "that row on the other chip) or single (one router in the middle of "
    "the east / west edge, through which all of it funnels)",
    noc_gateway_get_type (), NOC_GATEWAY_EDGE, FLAGS);
  properties[PROP_REPORT_DIR] = g_param_spec_string ("report-dir", NULL,
    "If set, each run writes per-link utilisation (CSV, and an SVG heat map "
    "for meshes and tori) there and appends to noc-sim-runs.csv", NULL,
    FLAGS);
  properties[PROP_TRACE_LINKS] = g_param_spec_uint ("trace-links", NULL,
    "Busiest links given a track in traces", 0, 1024, 8, FLAGS);
  properties[PROP_FIDELITY] = g_param_spec_enum (
      "fidelity", NULL,
      "The fidelity ladder (docs/fidelity.md): full simulates every effect "
      "whose effect-* switch is auto, analytic none of them (the analytic "
      "chip's quantities instead; all-to-all only)",
      noc_fidelity_get_type (), NOC_FIDELITY_FULL, FLAGS);
  properties[PROP_STEADY_STATE] = g_param_spec_enum (
      "steady-state", NULL,
      "Steady-state layer extrapolation (docs/chip-noc-sim.md): once the "
      "simulator's state at a layer boundary repeats a layer earlier's up "
      "to a time shift, the remaining identical layers are advanced in "
      "closed form (auto, on); off simulates every layer",
      noc_switch_get_type (), NOC_SWITCH_AUTO, FLAGS);
  for (guint i = 0; i < NOC_FX_N; i++)
    properties[PROP_EFFECT0 + i]
        = g_param_spec_enum (effects[i].name, NULL, effects[i].blurb,
                             noc_switch_get_type (), NOC_SWITCH_AUTO, FLAGS);
  for (guint i = PROP_HBM_PER_CORE_GBPS; i < N_PROPS; i++)
    g_object_class_install_property (object_class, i, properties[i]);
}

static void
elk_noc_sim_chip_init (ElkNocSimChip *self)
{
}

static gboolean
noc_sim_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_CHIP, "noc-sim",
                                 ELK_TYPE_NOC_SIM_CHIP, error);
}

ELK_PLUGIN_DEFINE (noc_sim, "Event-driven interconnect simulator chip",
                   "0.1", noc_sim_register)
