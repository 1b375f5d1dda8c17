/* elk-metrics.h: what a chip backend reports after running a program.
 *
 * Times in seconds, sizes in bytes.  The latency breakdown follows Fig 18a of
 * the paper: preload_only_s + execute_only_s + overlap_s + stall_s equals
 * latency_s.  The execution-time breakdown (#ElkBreakdown) splits the same
 * latency another way: per group of operators and per component (compute,
 * rotation, output stage, re-layout, synchronisation, stall, waiting for
 * preloads), so that its cells add up to latency_s too.
 */
#pragma once

#include <glib.h>
#include <glib-object.h>
#include <elk/elk-visibility.h>
#include <elk/elk-graph.h>

G_BEGIN_DECLS

/**
 * ElkTimeComponent:
 * @ELK_TIME_COMPUTE: kernel time on the cores (the plan's compute_s on
 *   the analytic chip; the compute phases of the steps in the emulator).
 * @ELK_TIME_SHIFT: rotation: the compute-shift exchanges between steps
 *   (the plan's shift_s, its syncs included, on the analytic chip; the
 *   shift exchanges in the emulator, their syncs counted under
 *   @ELK_TIME_SYNC).
 * @ELK_TIME_OUTPUT: the output stage: the output shuffle and the
 *   partial-sum gather and reduction (the plan's shuffle_s on the
 *   analytic chip; the reduce phases, exchange and arithmetic, in the
 *   emulator).
 * @ELK_TIME_RELAYOUT: re-laying inputs out before the operator runs: the
 *   data distribution from the preload layout to the execute layout (the
 *   program's warm-up on the analytic chip) and, in the emulator, its
 *   input phases, which also gather activations from the layout their
 *   producer left them in.
 * @ELK_TIME_SYNC: barrier synchronisation (BSP syncs) counted apart; the
 *   analytic chip's plan cost model folds its syncs into @ELK_TIME_SHIFT
 *   and @ELK_TIME_OUTPUT and reports 0 here.
 * @ELK_TIME_STALL: an execution slowed or held by interconnect contention
 *   with preloads (the analytic delay-execution stall; the emulator's
 *   share of a phase lost to a busy port and its analytic stall phase).
 * @ELK_TIME_PRELOAD_WAIT: no operator executes: the next one waits for its
 *   preload (HBM or delivery), charged to the operator that waits.  Under
 *   the analytic chip's delay-preload priority, contention shows here, as
 *   preloads stretched by execution traffic.
 * @ELK_TIME_N_COMPONENTS: the number of components; not a component.
 *
 * Where execution time goes, one component of an #ElkBreakdown.
 */
typedef enum
{
  ELK_TIME_COMPUTE,
  ELK_TIME_SHIFT,
  ELK_TIME_OUTPUT,
  ELK_TIME_RELAYOUT,
  ELK_TIME_SYNC,
  ELK_TIME_STALL,
  ELK_TIME_PRELOAD_WAIT,
  ELK_TIME_N_COMPONENTS
} ElkTimeComponent;

/**
 * ElkBreakdown:
 *
 * Where a program's time went: seconds per (operator group, component),
 * where a group is what elk_op_get_breakdown_group() names ("matmul",
 * "attention-matmul", "softmax", "normalisation", ...).  A chip fills it
 * while it runs a program, adding every operator's time, so that its cells
 * add up to the latency it reports (elk_breakdown_get_total()).  Cells
 * are kept sorted by group name, then component, so that iterating them
 * is deterministic.  A boxed type copied by value (elk_breakdown_copy(),
 * elk_breakdown_free()).
 */
typedef struct _ElkBreakdown ElkBreakdown;

#define ELK_TYPE_BREAKDOWN (elk_breakdown_get_type ())
ELK_API GType elk_breakdown_get_type (void);
ELK_API ElkBreakdown *elk_breakdown_new (void);
ELK_API ElkBreakdown *elk_breakdown_copy (const ElkBreakdown *breakdown);
ELK_API void elk_breakdown_free (ElkBreakdown *breakdown);
ELK_API void elk_breakdown_add (ElkBreakdown *breakdown,
                                const char *group,
                                ElkTimeComponent component,
                                double seconds);
ELK_API void elk_breakdown_add_op (ElkBreakdown *breakdown,
                                   const ElkOp *op,
                                   const double *seconds);
ELK_API guint elk_breakdown_get_n_cells (const ElkBreakdown *breakdown);
ELK_API const char *elk_breakdown_get_cell (const ElkBreakdown *breakdown,
                                            guint index,
                                            ElkTimeComponent *component,
                                            double *seconds);
ELK_API double elk_breakdown_get (const ElkBreakdown *breakdown,
                                  const char *group,
                                  ElkTimeComponent component);
ELK_API double elk_breakdown_get_total (const ElkBreakdown *breakdown);
ELK_API const char *elk_time_component_to_string (ElkTimeComponent component);
ELK_API gboolean elk_time_component_from_string (const char *name,
                                                 ElkTimeComponent *component);
ELK_API const char *elk_op_get_breakdown_group (const ElkOp *op);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkBreakdown, elk_breakdown_free)

/**
 * ElkRoutingStats:
 * @n_conditional: operators of the graph that run only when their router
 *   selects them (elk_graph_set_op_condition()).
 * @n_taken: of those, how many the graph's sampled routing selects.
 * @hits: taken conditional operators that read HBM and whose preload the
 *   program issued before their router executed: speculation that paid.
 * @wasted: conditional operators the routing does not take whose preload
 *   was issued before their router executed: charged in full (HBM time,
 *   SRAM until the operator's execute position) for nothing.
 * @wasted_hbm_bytes: the HBM bytes of the @wasted preloads.
 * @on_demand: taken conditional operators that read HBM and whose preload
 *   was issued after their router executed: loaded on demand, the chip
 *   waits for them unless other work hides the load.
 * @on_demand_hbm_bytes: the HBM bytes of the @on_demand preloads.
 * @skipped: conditional operators the routing does not take whose preload
 *   was issued after their router: the device skips it, free.
 * @hit_rate: @hits / (@hits + @on_demand): the share of the taken experts
 *   with weights that were preloaded speculatively; NAN when there are
 *   none.
 *
 * What a chip measured about the speculation of a program whose graph has
 * conditional operators (a mixture-of-experts model whose experts are all
 * in the graph): see elk_program_charge_routing(), which fills it.  A
 * boxed type copied by value (elk_routing_stats_copy(),
 * elk_routing_stats_free()).
 */
typedef struct
{
  guint n_conditional;
  guint n_taken;
  guint hits;
  guint wasted;
  double wasted_hbm_bytes;
  guint on_demand;
  double on_demand_hbm_bytes;
  guint skipped;
  double hit_rate;
} ElkRoutingStats;

#define ELK_TYPE_ROUTING_STATS (elk_routing_stats_get_type ())
ELK_API GType elk_routing_stats_get_type (void);
ELK_API ElkRoutingStats *elk_routing_stats_new (void);
ELK_API ElkRoutingStats *elk_routing_stats_copy (const ElkRoutingStats *stats);
ELK_API void elk_routing_stats_free (ElkRoutingStats *stats);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkRoutingStats, elk_routing_stats_free)

/**
 * ElkMetrics:
 * @latency_s: end-to-end time of the program.
 * @flops: floating point operations executed.
 * @hbm_bytes: bytes read from HBM.
 * @noc_bytes: bytes moved over the interconnect (preload delivery and
 *   inter-core traffic).
 * @hbm_util: time-averaged fraction of HBM bandwidth used.
 * @noc_util: time-averaged fraction of interconnect bandwidth used.
 * @achieved_flops: @flops / @latency_s.
 * @preload_only_s: time only HBM loading was busy.
 * @execute_only_s: time only execution was busy.
 * @overlap_s: time both were busy.
 * @stall_s: time either was stalled by a busy interconnect.
 * @model: which model produced the numbers ("analytic timeline §3.8", ...).
 * @breakdown: (nullable): where the time went per operator group and
 *   component, its cells adding up to @latency_s; %NULL when the chip
 *   does not break its time down.  Owned by the metrics.
 * @routing: (nullable): the speculation on conditional operators (hits,
 *   wasted and on-demand expert preloads); %NULL for a graph without
 *   conditions.  Owned by the metrics.  Appended in plugin ABI 4.
 *
 * What a chip backend reports after running a program.  A boxed type
 * copied by value (elk_metrics_copy(), elk_metrics_free()).
 */
typedef struct
{
  double latency_s;
  double flops;
  double hbm_bytes;
  double noc_bytes;
  double hbm_util;
  double noc_util;
  double achieved_flops;
  double preload_only_s;
  double execute_only_s;
  double overlap_s;
  double stall_s;
  char *model;
  ElkBreakdown *breakdown;
  ElkRoutingStats *routing;
} ElkMetrics;

#define ELK_TYPE_METRICS (elk_metrics_get_type ())
ELK_API GType elk_metrics_get_type (void);
ELK_API ElkMetrics *elk_metrics_new (const char *model);
ELK_API ElkMetrics *elk_metrics_copy (const ElkMetrics *metrics);
ELK_API void elk_metrics_free (ElkMetrics *metrics);
ELK_API const char *elk_metrics_first_difference (const ElkMetrics *a,
                                                  const ElkMetrics *b,
                                                  double *value_a,
                                                  double *value_b);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkMetrics, elk_metrics_free)

G_END_DECLS
