/* elk-plan.h: per-operator partition plans, their cost, and the plan tables.
 *
 * For one operator on one chip, the plan space (T10 compute-shift,
 * reference/t10-plan-space.md §2.2-2.6, elk-paper.md §3.2-3.3) lists the ways
 * of cutting the operator across cores.  A plan is a spatial vector (parts
 * per loop dimension, one sub-operator per core) and a temporal matrix (per
 * loop dimension and operand, a rotation factor).  Every plan has an
 * execute-state ("hot") per-core footprint, a preload-state ("cold")
 * footprint counting only HBM-sourced inputs, and an estimated time.
 *
 * ElkPlanTable keeps, per operator, what schedulers and allocators need:
 * the hot Pareto front (per-core bytes against time) and the cold-hot table
 * (for a cold layout, the best hot plan reachable from it and its warm-up,
 * i.e. data-distribution, cost).  ElkPlanSet holds the tables of a whole
 * graph, built once per (graph, chip spec) and shared read-only between
 * schedulers and threads.  Identical operators (every layer of an LLM)
 * share one table.
 */
#pragma once

#include <elk/elk-graph.h>
#include <elk/elk-chip-spec.h>

G_BEGIN_DECLS

/**
 * ElkPlan:
 * @n_dims: loop dimensions of the operator.
 * @n_operands: operands of the operator, output first.
 * @spatial: parts per loop dimension.
 * @temporal: rotation factor per loop dimension and operand (1 = none).
 * @cores_used: product of @spatial.
 * @steps: compute-shift steps.
 * @hot_bytes: execute-state per-core footprint (rotating tensors doubled).
 * @cold_bytes: preload-state per-core footprint (HBM-sourced inputs only,
 *   no buffers).
 * @compute_s: per-core kernel time over all steps.
 * @shift_s: inter-core shift time, including syncs.
 * @shuffle_s: output shuffle and partial-sum reduction time.
 * @time_s: total estimated execution time (compute + shift + shuffle).
 * @noc_bytes: bytes moved between cores while executing (all cores).
 * @replicas: per operand, how many cores hold the same spatial piece
 *   (product of the parts of the loop dimensions it does not index).
 * @operand_bytes: per operand, the per-core piece in bytes (its spatial
 *   piece cut by its own rotation factors), without double buffers.
 * @shift_events: rotation shifts per core over the whole plan, summed over
 *   the tensors each shift moves (each costs the syncs of one shift).
 * @shift_bytes: bytes one core sends in rotation shifts over all steps.
 *
 * One partition plan of one operator and its cost.  Plans are plain
 * structs read in the schedulers' inner loops, embedded by value in
 * #ElkProgramOp and stored in arrays in #ElkPlanTable, so their layout is
 * part of the plugin ABI: any change of size or field offset bumps
 * %ELK_PLUGIN_ABI_VERSION (tests/core/test-abi-layout.c enforces it).
 */
typedef struct
{
  guint8 n_dims;
  guint8 n_operands;
  guint32 spatial[ELK_MAX_DIMS];
  guint32 temporal[ELK_MAX_DIMS][ELK_MAX_OPERANDS];
  guint32 cores_used;
  guint32 steps;
  guint64 hot_bytes;
  guint64 cold_bytes;
  double compute_s;
  double shift_s;
  double shuffle_s;
  double time_s;
  double noc_bytes;
  /* Appended by core/plan. */
  guint32 replicas[ELK_MAX_OPERANDS];
  guint64 operand_bytes[ELK_MAX_OPERANDS];
  guint64 shift_events;
  double shift_bytes;
} ElkPlan;

/**
 * ElkColdHot:
 * @cold_bytes: per-core preload-state footprint.
 * @hot_bytes: per-core execute-state footprint.
 * @hot_plan: index into ElkPlanTable.plans of the execute-state plan.
 * @cold_plan: index into ElkPlanTable.plans of the preload-state plan.
 * @exec_s: the hot plan's execution time.
 * @warmup_s: data-distribution time from the cold to the hot layout.
 * @warmup_noc_bytes: bytes the distribution moves between cores.
 *
 * One entry of the cold-hot table: a compatible (cold, hot) plan pair with
 * the smallest exec_s + warmup_s for its sizes (elk-paper.md §3.2, "Cold/hot
 * table").
 */
typedef struct
{
  guint64 cold_bytes;
  guint64 hot_bytes;
  guint32 hot_plan;
  guint32 cold_plan;
  double exec_s;
  double warmup_s;
  double warmup_noc_bytes;
} ElkColdHot;

/**
 * ElkPlanTable:
 * @op: the operator (of the graph the set was built for) the table was
 *   first built for; identical operators share the table.
 * @n_plans: number of kept plans.
 * @plans: (array length=n_plans): kept plans.
 * @n_hot: length of @hot_front.
 * @hot_front: (array length=n_hot): indices into @plans, ascending
 *   hot_bytes, strictly decreasing time_s (the execute-state Pareto front).
 * @n_cold_hot: length of @cold_hot.
 * @cold_hot: (array length=n_cold_hot): the cold-hot table, sorted by
 *   cold_bytes then hot_bytes.
 * @min_cold_bytes: per-core bytes of an even, unreplicated shard of the
 *   operator's HBM data (0 if it reads nothing from HBM).
 * @hbm_bytes: bytes the operator reads from HBM.
 * @n_enumerated: plans enumerated to build the table (for benchmarks).
 *
 * What schedulers and allocators need to know about one operator's plans.
 * The tables of a graph belong to its #ElkPlanSet and are read-only.  For
 * bindings, #ElkPlanTable is a boxed type whose copy is deep
 * (elk_plan_table_copy()), so that a copy outlives the set.
 */
typedef struct
{
  guint32 op;
  guint n_plans;
  ElkPlan *plans;
  guint n_hot;
  guint32 *hot_front;
  guint n_cold_hot;
  ElkColdHot *cold_hot;
  guint64 min_cold_bytes;
  guint64 hbm_bytes;
  guint64 n_enumerated;
} ElkPlanTable;

/**
 * ElkPlanEnumeration:
 * @ELK_PLAN_ENUMERATION_T10: the T10 plan space, each temporal column on
 *   its own loop dimension (the default).
 * @ELK_PLAN_ENUMERATION_ARTIFACT: the Elk artifact's quirked search
 *   (docs/plan-space.md, "Validation against the artifact"): its sorted
 *   per-dimension candidate lists, its per-step shuffle size, its
 *   "Pareto" list with slower duplicates as the hot candidates of the
 *   cold-hot table, and its cold-hot pairing keyed by (cold size, hot
 *   size).  A measurement device for comparing with the artifact's
 *   results, not a better model: some of its plans rotate a tensor along
 *   a dimension it does not index.
 *
 * Which plan space elk_plan_set_new() searches.
 */
typedef enum
{
  ELK_PLAN_ENUMERATION_T10 = 0,
  ELK_PLAN_ENUMERATION_ARTIFACT = 1,
} ElkPlanEnumeration;

#define ELK_TYPE_PLAN_ENUMERATION (elk_plan_enumeration_get_type ())
ELK_API GType elk_plan_enumeration_get_type (void);

/**
 * ElkNocDemand:
 * @ELK_NOC_DEMAND_SHIFT_SHUFFLE: an executing operator needs the
 *   interconnect for its rotations and for its output shuffle and
 *   partial-sum reduction (shift_s + shuffle_s, syncs included: every
 *   non-compute cycle, the Elk artifact's definition).  The default.
 * @ELK_NOC_DEMAND_SHIFT: for its rotations only (shift_s), what elk
 *   charged before; it undercounts, since a shuffle moves data too.
 *
 * What the contention model charges an execution for its own traffic when
 * it overlaps preloads (elk-paper.md §3.8): the schedulers' delay-execution
 * fitting and the analytic chip's timeline read it through
 * ElkProgramOp.est_noc_s.  The delay-preload fitting always leaves
 * preloads only the compute time, i.e. counts shift and shuffle.
 */
typedef enum
{
  ELK_NOC_DEMAND_SHIFT_SHUFFLE = 0,
  ELK_NOC_DEMAND_SHIFT = 1,
} ElkNocDemand;

#define ELK_TYPE_NOC_DEMAND (elk_noc_demand_get_type ())
ELK_API GType elk_noc_demand_get_type (void);

/**
 * ElkPlanOptions:
 * @padding_floor: minimum ratio of useful to padded work (0 = T10 default).
 * @utilisation_floor: minimum ratio of used to available cores (0 = T10
 *   default).
 * @n_threads: threads used to build tables of distinct operators (0 = all
 *   processors).
 * @enumeration: the plan space searched (0 = %ELK_PLAN_ENUMERATION_T10).
 * @noc_demand: what an execution's own interconnect use is (0 =
 *   %ELK_NOC_DEMAND_SHIFT_SHUFFLE).
 *
 * Zero-initialised options are the defaults.  Fields are only ever
 * appended, so that "= { 0 }" and positional initialisers keep their
 * meaning.
 */
typedef struct
{
  double padding_floor;
  double utilisation_floor;
  guint n_threads;
  /* Appended: keep new fields at the end. */
  ElkPlanEnumeration enumeration;
  ElkNocDemand noc_demand;
} ElkPlanOptions;

/**
 * ElkPlanSet:
 *
 * The plan tables of a whole graph on one chip, built once per (graph,
 * chip spec, options) by elk_plan_set_new() and shared read-only between
 * schedulers and threads.  Identical operators share one table.  A
 * reference-counted boxed type (elk_plan_set_ref(), elk_plan_set_unref()).
 */
typedef struct _ElkPlanSet ElkPlanSet;

#define ELK_TYPE_PLAN_SET (elk_plan_set_get_type ())
ELK_API GType elk_plan_set_get_type (void);

ELK_API ElkPlanSet *elk_plan_set_new (ElkGraph *graph,
                                      const ElkChipSpec *spec,
                                      const ElkPlanOptions *options,
                                      GError **error);
ELK_API ElkPlanSet *elk_plan_set_ref (ElkPlanSet *set);
ELK_API void elk_plan_set_unref (ElkPlanSet *set);
ELK_API const ElkPlanTable *elk_plan_set_get_table (const ElkPlanSet *set,
                                                    guint op);
ELK_API guint elk_plan_set_get_n_distinct (const ElkPlanSet *set);
ELK_API const ElkChipSpec *elk_plan_set_get_spec (const ElkPlanSet *set);
ELK_API const ElkPlanOptions *
elk_plan_set_get_options (const ElkPlanSet *set);
ELK_API double elk_plan_get_noc_demand (const ElkPlan *plan,
                                        ElkNocDemand demand);
ELK_API ElkGraph *elk_plan_set_get_graph (const ElkPlanSet *set);

#define ELK_TYPE_PLAN_TABLE (elk_plan_table_get_type ())
ELK_API GType elk_plan_table_get_type (void);
ELK_API ElkPlanTable *elk_plan_table_copy (const ElkPlanTable *table);
ELK_API void elk_plan_table_free (ElkPlanTable *table);
ELK_API const ElkPlan *elk_plan_table_get_plan (const ElkPlanTable *table,
                                                guint index);
ELK_API const ElkColdHot *
elk_plan_table_get_cold_hot (const ElkPlanTable *table, guint index);

ELK_API const ElkPlan *elk_plan_table_get_fastest (const ElkPlanTable *table);
ELK_API const ElkPlan *elk_plan_table_get_smallest (const ElkPlanTable *table);
ELK_API const ElkPlan *elk_plan_table_best_within (const ElkPlanTable *table,
                                                   guint64 hot_budget);
ELK_API const ElkColdHot *elk_plan_table_lookup (const ElkPlanTable *table,
                                                 guint64 cold_bytes,
                                                 guint64 hot_budget);

/* Appended by core/plan: the distinct tables, and the cost model of one
 * given plan (for schedulers that build plans themselves, and for tests). */
ELK_API const ElkPlanTable *elk_plan_set_get_distinct (const ElkPlanSet *set,
                                                       guint index);
ELK_API gboolean elk_plan_evaluate (const ElkGraph *graph,
                                    guint op,
                                    const ElkChipSpec *spec,
                                    ElkPlan *plan,
                                    GError **error);
ELK_API double elk_plan_get_warmup (const ElkGraph *graph,
                                    guint op,
                                    const ElkChipSpec *spec,
                                    const ElkPlan *cold,
                                    const ElkPlan *hot,
                                    double *noc_bytes,
                                    GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkPlanSet, elk_plan_set_unref)

G_END_DECLS
