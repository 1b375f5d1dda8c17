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
 * chip can disagree with.  Conditional operators (mixture-of-experts
 * experts) are charged by the graph's sampled routing
 * (elk_program_charge_routing()): untaken experts do not execute, their
 * speculative preloads cost in full and their on-demand ones nothing.
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

/* Who yields when an execution's traffic and the preloads it overlaps want
 * the same interconnect time (the artifact's delay_comp, elk-paper.md
 * §3.8).  One model per run: the chip never picks the better of two per
 * program. */
typedef enum
{
  ELK_NOC_PRIORITY_PRELOAD,
  ELK_NOC_PRIORITY_EXECUTION,
} ElkNocPriority;

GType elk_noc_priority_get_type (void);
G_DEFINE_ENUM_TYPE (ElkAnalyticNocPriority,
                    elk_noc_priority,
                    G_DEFINE_ENUM_VALUE (ELK_NOC_PRIORITY_PRELOAD,
                                         "delay-execution"),
                    G_DEFINE_ENUM_VALUE (ELK_NOC_PRIORITY_EXECUTION,
                                         "delay-preload"))

#define ELK_TYPE_ANALYTIC_CHIP (elk_analytic_chip_get_type ())
G_DECLARE_FINAL_TYPE (ElkAnalyticChip, elk_analytic_chip, ELK, ANALYTIC_CHIP,
                      GObject)

struct _ElkAnalyticChip
{
  GObject parent_instance;
  ElkChipProps props;
  gint priority;
  double load_noc_share;
};

/* The common chip-spec properties (elk_chip_props_install) come first, the
 * chip's own after them. */
enum
{
  PROP_0,
  PROP_CHIP_PROPS,
  PROP_LOAD_NOC_SHARE = PROP_CHIP_PROPS + ELK_CHIP_PROPS_N_PROPERTIES,
  PROP_NOC_PRIORITY,
  N_PROPS
};
static GParamSpec *properties[N_PROPS];

static ElkChipSpec *
elk_analytic_chip_dup_spec (ElkChip *chip, GError **error)
{
  ElkAnalyticChip *self = ELK_ANALYTIC_CHIP (chip);
  ElkChipSpec *spec = elk_chip_spec_new_ipu_pod4 ();

  g_free (spec->name);
  spec->name = g_strdup ("analytic");
  elk_chip_props_fill_spec (&self->props, spec);
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

/* Where the time went, operator by operator in execution order: the
 * execute plan's compute, shift and shuffle (its output stage) times and
 * the program's data distribution, all as elk_program_derive() derived
 * them, the contention stall the timeline added, and the time since the
 * previous execution ended, which the chip spent waiting for this
 * operator's preload.  The pieces of one operator add up to the time from
 * the previous execution's end to its own, so the cells add up to the
 * latency (to rounding). */
static ElkBreakdown *
breakdown_from_timeline (ElkProgram *program,
                         const ElkOpCost *costs,
                         const gboolean *skipped_steps,
                         const double *exec_start,
                         const double *exec_end,
                         const double *exec_stall)
{
  ElkGraph *graph = elk_program_get_graph (program);
  ElkBreakdown *breakdown = elk_breakdown_new ();
  guint n_steps = elk_program_get_n_steps (program);
  double prev_end = 0;

  for (guint s = 0; s < n_steps; s++)
    {
      const ElkStep *step = elk_program_get_step (program, s);
      const ElkPlan *plan;
      double t[ELK_TIME_N_COMPONENTS] = { 0 };
      guint i = step->op;

      /* An expert the routing does not take never executes. */
      if (step->kind != ELK_STEP_EXECUTE || skipped_steps[s])
        continue;
      plan = &elk_program_peek_op (program, i)->exec_plan;
      t[ELK_TIME_COMPUTE] = plan->compute_s;
      t[ELK_TIME_SHIFT] = plan->shift_s;
      t[ELK_TIME_OUTPUT] = plan->shuffle_s;
      t[ELK_TIME_RELAYOUT] = costs[i].warmup_s;
      t[ELK_TIME_STALL] = exec_stall[i];
      t[ELK_TIME_PRELOAD_WAIT] = MAX (0, exec_start[i] - prev_end);
      elk_breakdown_add_op (breakdown, elk_graph_get_op (graph, i), t);
      prev_end = exec_end[i];
    }
  return breakdown;
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
  g_autofree double *exec_start = NULL, *exec_end = NULL, *exec_stall = NULL;
  g_autofree gboolean *skipped = NULL;
  g_autoptr (ElkRoutingStats) routing = NULL;
  ElkTimelineResult r;
  ElkMetrics *metrics;
  double bound_compute = 0, bound_hbm, hbm_bytes = 0, flops = 0;
  guint n_run = 0;

  if (spec == NULL)
    return NULL;
  /* Every number priced below comes from the program's plans and steps
   * (elk_program_derive), never from what the scheduler declared. */
  costs = elk_program_derive (program, plans, error);
  if (costs == NULL)
    return NULL;
  ops = g_new0 (ElkTimelineOp, n);
  n_steps = elk_program_get_n_steps (program);
  /* The graph's sampled routing: experts it does not take skip their
   * execute step, and their preload too when it comes after the router
   * (elk_program_charge_routing()); the timeline runs what is left. */
  skipped = g_new0 (gboolean, MAX (n_steps, 1u));
  routing = elk_program_charge_routing (program, costs, skipped);
  steps = g_new (ElkStep, MAX (n_steps, 1u));
  for (guint s = 0; s < n_steps; s++)
    if (!skipped[s])
      steps[n_run++] = *elk_program_get_step (program, s);
  for (guint i = 0; i < n; i++)
    {
      const ElkOpCost *c = &costs[i];
      const ElkOp *op = elk_graph_get_op (graph, i);
      gboolean taken = TRUE;

      /* The preload runs at the share the program asked for, and never
       * faster than the chip's own load-noc-share allows. */
      elk_timeline_op_init_from_cost (&ops[i], c);
      hbm_bytes += (double) ops[i].hbm_bytes;
      /* Only the operators that run do arithmetic. */
      elk_graph_get_op_condition (graph, i, NULL, NULL, &taken);
      if (taken)
        {
          flops += op->flops;
          bound_compute += op->flops
                           / (op->kind == ELK_OP_MATMUL ? spec->matmul_flops
                                                        : spec->vector_flops);
        }
    }

  exec_start = g_new0 (double, n);
  exec_end = g_new0 (double, n);
  exec_stall = g_new0 (double, n);
  if (!elk_timeline_run_timed (spec, self->load_noc_share,
                               self->priority == ELK_NOC_PRIORITY_PRELOAD
                                   ? ELK_TIMELINE_PRELOAD_FIRST
                                   : ELK_TIMELINE_EXECUTION_FIRST,
                               n, ops, n_run, steps, &r, exec_start, exec_end,
                               exec_stall, error))
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
      self->props.bandwidth_units == ELK_BANDWIDTH_UNITS_ARTIFACT
        ? "artifact MiB/ms" : "decimal",
      (assume & ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION)
        ? ", assumed free distribution" : "",
      (assume & ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK)
        ? ", assumed private preload network" : "");
    metrics = elk_metrics_new (model);
  }
  metrics->latency_s = r.latency_s;
  metrics->flops = flops;
  metrics->hbm_bytes = hbm_bytes;
  metrics->noc_bytes = r.noc_bytes;
  metrics->hbm_util = r.hbm_busy_s / r.latency_s;
  metrics->noc_util = r.noc_busy_s / r.latency_s;
  metrics->achieved_flops = metrics->flops / r.latency_s;
  metrics->preload_only_s = r.preload_only_s;
  metrics->execute_only_s = r.execute_only_s;
  metrics->overlap_s = r.overlap_s;
  metrics->stall_s = r.stall_s;
  metrics->breakdown
      = breakdown_from_timeline (program, costs, skipped, exec_start, exec_end,
                                 exec_stall);
  metrics->routing = g_steal_pointer (&routing);
  return metrics;
}

ELK_DEFINE_CHIP (ElkAnalyticChip,
                 elk_analytic_chip,
                 elk_analytic_chip_dup_spec,
                 elk_analytic_chip_run,
                 NULL)

static void
elk_analytic_chip_get_property (GObject *object, guint prop_id,
                                GValue *value, GParamSpec *pspec)
{
  ElkAnalyticChip *self = ELK_ANALYTIC_CHIP (object);

  if (elk_chip_props_get_property (&self->props, prop_id, value, pspec))
    return;
  switch (prop_id)
    {
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

  if (elk_chip_props_set_property (&self->props, prop_id, value, pspec))
    return;
  switch (prop_id)
    {
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

  elk_chip_props_install (object_class, PROP_CHIP_PROPS, NULL);
  properties[PROP_LOAD_NOC_SHARE] = g_param_spec_double ("load-noc-share",
    NULL,
    "Share of the NoC a preload may take when the program does not ask for "
    "a slower preload", 0.05, 1.0, 1.0, FLAGS);
  properties[PROP_NOC_PRIORITY] = g_param_spec_enum ("noc-priority", NULL,
    "Who yields on a busy NoC: delay-execution (preloads first, the "
    "default, as preloads issued earlier hold the links) or delay-preload "
    "(execution traffic first)",
    elk_noc_priority_get_type (), ELK_NOC_PRIORITY_PRELOAD, FLAGS);
  for (guint i = PROP_LOAD_NOC_SHARE; i < N_PROPS; i++)
    g_object_class_install_property (object_class, i, properties[i]);
}

ELK_PLUGIN_DEFINE_FEATURE (analytic,
                           "Analytic contention-aware timeline chip",
                           "0.1",
                           ELK_TYPE_CHIP,
                           "analytic",
                           ELK_TYPE_ANALYTIC_CHIP)
