/* elk-compile.h: the compiler toolkit's engine (UNSTABLE API).
 *
 * The backward (inductive) scheduling engine of elk-paper.md §3.5 with the
 * differences between designs expressed as a policy (a struct of hooks),
 * the preload-order enumeration of §3.7, the deterministic parallel search
 * over orders and parameter sets, and the builder that turns an engine run
 * into an ElkProgram.  The four shipped schedulers (basic, static, elk,
 * ideal) are short policies on this engine, so that a third-party
 * scheduler is a policy plus a little code and its estimates mean what
 * elk's own mean (docs/plugin-guide.md, "The compiler toolkit").
 *
 * Why unstable: this is the research core.  New designs keep asking for
 * new hooks, and the candidate and result structs grow with them, so the
 * names, the structs and the hook signatures may change in any release,
 * without an ABI version change.  As GStreamer does with
 * GST_USE_UNSTABLE_API, a user must say so: define ELK_USE_UNSTABLE_API
 * before including <elk/elk.h> (or this header), and rebuild a plugin that
 * uses it against each new elk.  The timeline (elk-timeline.h) and the
 * load model (elk_chip_spec_get_load_time()) are stable.
 */
#pragma once

#ifndef ELK_USE_UNSTABLE_API
#error "elk-compile.h is unstable API: define ELK_USE_UNSTABLE_API before including it, and rebuild against every new elk (see the comment at the top of elk-compile.h)"
#endif

#include <elk/elk-visibility.h>
#include <elk/elk-plan.h>
#include <elk/elk-program.h>
#include <elk/elk-allocator.h>
#include <elk/elk-timeline.h>

G_BEGIN_DECLS

/* ---------------------------------------------------------------------- */
/* The engine                                                              */
/* ---------------------------------------------------------------------- */

/**
 * ElkEngine:
 *
 * Everything an engine run needs that does not change between runs: the
 * plan set, the allocator, the per-operator tables and the per-layer
 * preload cap.  Read-only once built, so threads share it.
 */
typedef struct _ElkEngine ElkEngine;

/**
 * ElkEngineOp:
 * @entry: the operator's cold-hot entry.
 * @preload_number: how many later operators are in SRAM while it runs.
 * @exe_start: when its execution starts.
 * @exe_end: when it ends.
 * @load_start: when its preload starts.
 * @load_end: when its preload ends.
 * @load_noc_s: interconnect time of the preload's delivery.
 * @load_s: the preload's duration.
 * @exec_s: the execution time of its execute plan.
 * @warmup_s: its data-distribution time.
 * @extra_s: data distribution its allocation added to the operators
 *   preloaded next to it.
 *
 * Per-operator outcome of one engine run.  Times are on the backward time
 * axis: the last execution ends at 0.
 */
typedef struct
{
  guint32 entry;
  guint preload_number;
  double exe_start, exe_end;
  double load_start, load_end;
  double load_noc_s;
  double load_s;
  double exec_s;
  double warmup_s;
  double extra_s;
} ElkEngineOp;

/**
 * ElkEngineResult:
 * @n_ops: length of @ops.
 * @ops: per operator, its outcome.
 * @latency_s: the schedule's estimated latency.
 * @feasible: %FALSE when the run gave up the order or the parameter set
 *   (not an error: the search tries the others).
 * @theta: the preload share the run used.
 */
typedef struct
{
  guint n_ops;
  ElkEngineOp *ops;
  double latency_s;
  gboolean feasible;
  double theta;
} ElkEngineResult;

/**
 * ElkEngineVerdict:
 * @ELK_ENGINE_TAKE: the candidate runs with the entry the policy chose.
 * @ELK_ENGINE_SKIP: the candidate does not fit; try the next one.
 * @ELK_ENGINE_STOP: the candidate does not fit, nor would the next ones.
 * @ELK_ENGINE_INFEASIBLE: give up the whole run (not an error).
 * @ELK_ENGINE_FAILED: an error, set in the hook's @error.
 *
 * What a policy's choose hook decides about one candidate.
 */
typedef enum
{
  ELK_ENGINE_TAKE,
  ELK_ENGINE_SKIP,
  ELK_ENGINE_STOP,
  ELK_ENGINE_INFEASIBLE,
  ELK_ENGINE_FAILED,
} ElkEngineVerdict;

/**
 * ElkEngineDepth:
 * @ELK_ENGINE_DEPTH_LATEST_START: try preload numbers from the shallowest;
 *   the candidate whose execution starts latest wins, ties going to the
 *   shallower one (Elk, Ideal).
 * @ELK_ENGINE_DEPTH_DEEPEST_FIRST: try them from the deepest; the first
 *   one taken wins (Elk, for an operator that reads nothing from HBM and
 *   so has nothing to wait for).
 * @ELK_ENGINE_DEPTH_DEEPEST_TAKEN: try them from the shallowest until the
 *   policy stops; the deepest one taken wins (Basic, Static).
 *
 * How deep to preload: the order in which an operator's candidate preload
 * numbers are tried and which one wins.
 */
typedef enum
{
  ELK_ENGINE_DEPTH_LATEST_START,
  ELK_ENGINE_DEPTH_DEEPEST_FIRST,
  ELK_ENGINE_DEPTH_DEEPEST_TAKEN,
} ElkEngineDepth;

/**
 * ElkEnginePreloadSize:
 * @ELK_ENGINE_PRELOAD_SIZE_CHOSEN: a preloaded operator holds, and is
 *   loaded at, the preload state of its chosen cold-hot entry.
 * @ELK_ENGINE_PRELOAD_SIZE_MINIMUM: at the even, unreplicated shard of its
 *   HBM data, whatever its entry (Ideal, elk-paper.md §5.3); the program
 *   builder then records the entry with the smallest preload state.
 *
 * Which preload state a preloaded operator holds in SRAM.
 */
typedef enum
{
  ELK_ENGINE_PRELOAD_SIZE_CHOSEN,
  ELK_ENGINE_PRELOAD_SIZE_MINIMUM,
} ElkEnginePreloadSize;

/**
 * ElkEngineCandidate:
 * @op: the executing operator E.
 * @table: its plan table.
 * @n_tried: candidates already tried for E.
 * @n_preloaded: operators in SRAM next to E, in preload order.
 * @preloaded: those operators.
 * @preloaded_entries: their cold-hot entries so far (fixed when they
 *   were scheduled, as #ElkAllocRequest.preloaded_fixed wants them).
 * @n_forced: the first @n_forced preloaded operators are in SRAM whatever
 *   the preload number (loaded before an operator before E).
 * @n_new_hbm: preloaded operators beyond the forced ones that read HBM.
 * @preload_bytes: per-core bytes the preloaded operators hold.
 * @budget: the usable SRAM per core less @preload_bytes.
 * @entry: out: E's cold-hot entry.
 * @exec_s: out: E's execution time.
 * @warmup_s: out: E's data-distribution time.
 * @extra_s: out: data distribution added to the preloaded operators.
 * @preload_entries: out: engine-allocated, @n_preloaded new entries for
 *   the preloaded operators (an allocator's #ElkAllocResult
 *   preload_entries); read only when @sets_preload_entries is set.
 * @sets_preload_entries: out: the policy re-sized the preloaded operators.
 *
 * One candidate preload number of E, as the engine hands it to a policy.
 */
typedef struct
{
  guint32 op;
  const ElkPlanTable *table;
  guint n_tried;
  guint n_preloaded;
  const guint32 *preloaded;
  const gint32 *preloaded_entries;
  guint n_forced;
  guint n_new_hbm;
  double preload_bytes;
  guint64 budget;
  guint32 entry;
  double exec_s;
  double warmup_s;
  double extra_s;
  guint32 *preload_entries;
  gboolean sets_preload_entries;
} ElkEngineCandidate;

typedef struct _ElkEngineParams ElkEngineParams;

/**
 * ElkEnginePolicy:
 * @name: the design's name, for logs and messages.
 * @choose: required; picks E's entry for one candidate (and may re-size
 *   the preloaded operators), or says why the candidate cannot run.
 * @depth: optional (%NULL: %ELK_ENGINE_DEPTH_LATEST_START); how E's
 *   preload numbers are tried.
 * @preload_size: which preload state preloaded operators hold.
 * @fit_contention: fit each execution's interconnect traffic around the
 *   preloads it overlaps (#ElkEngineParams.delay_exec says who yields);
 *   %FALSE for a design whose preloads have a network of their own.
 * @unfit_is_infeasible: an operator that fits no candidate gives up the
 *   run instead of failing it with an error (a design that sweeps
 *   parameter sets, some of which cannot run every operator).
 * @assumptions: what the design takes for granted about the machine; the
 *   program builder records them and zeroes the predictions they make
 *   free.
 * @reserved: zero.
 *
 * What makes a design: the engine calls the hooks and reads the fields,
 * and is otherwise the same for every design, so that ablations compare
 * like with like.
 */
typedef struct
{
  const char *name;
  ElkEngineVerdict (*choose) (const ElkEngine *engine,
                              const ElkEngineParams *params,
                              ElkEngineCandidate *candidate,
                              GError **error);
  ElkEngineDepth (*depth) (const ElkEngine *engine,
                           const ElkEngineParams *params,
                           guint32 op);
  ElkEnginePreloadSize preload_size;
  gboolean fit_contention;
  gboolean unfit_is_infeasible;
  ElkProgramAssumptions assumptions;
  gpointer reserved[4];
} ElkEnginePolicy;

/**
 * ElkEngineParams:
 * @policy: the design.
 * @policy_data: (nullable): what the policy's hooks read for this
 *   parameter set (e.g. Static's execution space).
 * @theta: share of the interconnect a preload may take.
 * @delay_exec: with @policy's fit_contention, %TRUE delays the execution
 *   (the artifact's delay_comp=True), %FALSE pushes the overlapping
 *   preloads earlier.
 * @abandon_on_cap: give up a non-default preload order (not an error) as
 *   soon as a step reaches the per-layer preload cap (§3.7, the artifact's
 *   rule); the identity order is never given up.
 *
 * One parameter set of a search.
 */
struct _ElkEngineParams
{
  const ElkEnginePolicy *policy;
  gconstpointer policy_data;
  double theta;
  gboolean delay_exec;
  gboolean abandon_on_cap;
};

/**
 * ElkEngineRank:
 * @order: index of the candidate's preload order.
 * @params: index of its parameter set.
 * @estimate_s: the engine's latency estimate of the run.
 *
 * One candidate of elk_engine_search_ranked().
 */
typedef struct
{
  guint order;
  guint params;
  double estimate_s;
} ElkEngineRank;

ELK_API ElkEngine *elk_engine_new (const ElkPlanSet *plans,
                                   ElkAllocator *allocator,
                                   GError **error);
ELK_API void elk_engine_free (ElkEngine *engine);
ELK_API guint elk_engine_get_n_ops (const ElkEngine *engine);
ELK_API ElkGraph *elk_engine_get_graph (const ElkEngine *engine);
ELK_API const ElkPlanSet *elk_engine_get_plans (const ElkEngine *engine);
ELK_API ElkAllocator *elk_engine_get_allocator (const ElkEngine *engine);
ELK_API const ElkPlanTable *elk_engine_get_table (const ElkEngine *engine,
                                                  guint32 op);
ELK_API guint64 elk_engine_get_usable_sram (const ElkEngine *engine);
ELK_API guint elk_engine_get_max_preload (const ElkEngine *engine);

ELK_API void elk_engine_result_init (ElkEngineResult *result, guint n_ops);
ELK_API void elk_engine_result_clear (ElkEngineResult *result);
ELK_API gboolean elk_engine_run (const ElkEngine *engine,
                                 const guint32 *order,
                                 const ElkEngineParams *params,
                                 ElkEngineResult *result,
                                 GError **error);
ELK_API gboolean elk_engine_search (const ElkEngine *engine,
                                    GPtrArray *orders,
                                    const ElkEngineParams *params,
                                    guint n_params,
                                    guint n_threads,
                                    ElkEngineResult *best,
                                    guint *best_order,
                                    guint *best_params,
                                    GError **error);
ELK_API gboolean elk_engine_search_ranked (const ElkEngine *engine,
                                           GPtrArray *orders,
                                           const ElkEngineParams *params,
                                           guint n_params,
                                           guint n_threads,
                                           guint top,
                                           GArray *ranked,
                                           GError **error);
ELK_API gboolean elk_timeline_run_program (const ElkChipSpec *spec,
                                           double preload_share,
                                           ElkTimelinePriority priority,
                                           const ElkProgram *program,
                                           const ElkPlanSet *plans,
                                           ElkTimelineResult *result,
                                           GError **error);
ELK_API ElkProgram *elk_engine_build_program (const ElkEngine *engine,
                                              const ElkEnginePolicy *policy,
                                              const guint32 *order,
                                              const ElkEngineResult *result);
ELK_API ElkProgram *elk_engine_search_program (const ElkEngine *engine,
                                               GPtrArray *orders,
                                               const ElkEngineParams *params,
                                               guint n_params,
                                               guint n_threads,
                                               GError **error);

ELK_API guint64 elk_engine_table_min_hot (const ElkPlanTable *table);
ELK_API gint elk_engine_table_baseline_entry (const ElkPlanTable *table,
                                              guint64 budget,
                                              gboolean largest);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkEngine, elk_engine_free)

/* ---------------------------------------------------------------------- */
/* Scheduler properties the shipped designs share                          */
/* ---------------------------------------------------------------------- */

/**
 * ElkContentionVariant:
 * @ELK_CONTENTION_BEST: try both variants, keep the faster schedule.
 * @ELK_CONTENTION_DELAY_EXECUTION: #ElkEngineParams.delay_exec %TRUE.
 * @ELK_CONTENTION_DELAY_PRELOAD: #ElkEngineParams.delay_exec %FALSE.
 *
 * The values of the shipped schedulers' "contention" property.
 */
typedef enum
{
  ELK_CONTENTION_BEST,
  ELK_CONTENTION_DELAY_EXECUTION,
  ELK_CONTENTION_DELAY_PRELOAD,
} ElkContentionVariant;

/**
 * ElkBaselinePreloadState:
 * @ELK_PRELOAD_STATE_BEST: try both, keep the faster schedule.
 * @ELK_PRELOAD_STATE_SMALLEST: every operator's smallest preload state.
 * @ELK_PRELOAD_STATE_LARGEST: its largest fitting preload state.
 *
 * The values of the Basic and Static schedulers' "preload-state" property.
 */
typedef enum
{
  ELK_PRELOAD_STATE_BEST,
  ELK_PRELOAD_STATE_SMALLEST,
  ELK_PRELOAD_STATE_LARGEST,
} ElkBaselinePreloadState;

/**
 * ElkExpertPreload:
 * @ELK_EXPERT_PRELOAD_ALL: speculate on every expert the schedule
 *   preloads before its router: leave the scheduler's order.
 * @ELK_EXPERT_PRELOAD_ON_DEMAND: preload every expert after its router.
 * @ELK_EXPERT_PRELOAD_LIKELY: speculate on the experts whose probability
 *   is at least the threshold, the others on demand.
 * @ELK_EXPERT_PRELOAD_HOT: speculate on each router's N most likely
 *   experts, the others on demand.
 * @ELK_EXPERT_PRELOAD_ORACLE: speculate exactly on the experts the
 *   sampled routing takes: knows the routing, so the program declares
 *   %ELK_PROGRAM_ASSUME_KNOWN_ROUTING (what Ideal does).
 *
 * Where elk_program_apply_expert_policy() puts the preloads of
 * conditional operators (a mixture of experts' experts) relative to their
 * router; the values of the shipped schedulers' "expert-preload" property.
 */
typedef enum
{
  ELK_EXPERT_PRELOAD_ALL,
  ELK_EXPERT_PRELOAD_ON_DEMAND,
  ELK_EXPERT_PRELOAD_LIKELY,
  ELK_EXPERT_PRELOAD_HOT,
  ELK_EXPERT_PRELOAD_ORACLE,
} ElkExpertPreload;

ELK_API GType elk_contention_variant_get_type (void);
ELK_API GType elk_baseline_preload_state_get_type (void);
ELK_API GType elk_expert_preload_get_type (void);

ELK_API GParamSpec *elk_engine_param_spec_load_noc_share (double default_value);
ELK_API GParamSpec *
elk_engine_param_spec_contention (ElkContentionVariant default_value);
ELK_API GParamSpec *elk_engine_param_spec_preload_state (void);
ELK_API GParamSpec *elk_engine_param_spec_threads (void);
ELK_API GParamSpec *elk_engine_param_spec_expert_preload (void);
ELK_API GParamSpec *elk_engine_param_spec_expert_threshold (void);
ELK_API GParamSpec *elk_engine_param_spec_expert_hot (void);
ELK_API ElkProgram *elk_program_apply_expert_policy (ElkProgram *program,
                                                     const ElkPlanSet *plans,
                                                     ElkExpertPreload policy,
                                                     double threshold,
                                                     guint hot,
                                                     GError **error);

/* Whether a "contention" property value asks for the @delay_exec variant. */
static inline gboolean
elk_contention_variant_allows (gint variant, gboolean delay_exec)
{
  return variant == ELK_CONTENTION_BEST
         || (variant == ELK_CONTENTION_DELAY_EXECUTION) == delay_exec;
}

/* Whether a "preload-state" property value asks for the @largest state. */
static inline gboolean
elk_baseline_preload_state_allows (gint state, gboolean largest)
{
  return state == ELK_PRELOAD_STATE_BEST
         || (state == ELK_PRELOAD_STATE_LARGEST) == largest;
}

/* ---------------------------------------------------------------------- */
/* Preload orders (§3.7)                                                    */
/* ---------------------------------------------------------------------- */

/**
 * ElkOrderEnum:
 * @ELK_ORDER_ENUM_AUTO: LAYERS when the graph has identical layers with at
 *   least two groups to permute, SUFFIX_TREE otherwise.
 * @ELK_ORDER_ENUM_LAYERS: permute the MatMul/Conv groups of identical
 *   layers (the artifact's enumeration).
 * @ELK_ORDER_ENUM_SUFFIX_TREE: the paper's generic enumeration (Fig 14).
 *
 * How candidate preload orders are generated.
 */
typedef enum
{
  ELK_ORDER_ENUM_AUTO,
  ELK_ORDER_ENUM_LAYERS,
  ELK_ORDER_ENUM_SUFFIX_TREE,
} ElkOrderEnum;

ELK_API GType elk_order_enum_get_type (void);

/**
 * ElkOrderInfo:
 * @method: LAYERS or SUFFIX_TREE: the one used.
 * @n_layers: identical layers found (0 or 1: none repeat).
 * @n_groups: LAYERS: groups per layer.
 * @n_movable: SUFFIX_TREE: HBM-heavy operators reordered.
 * @n_nodes: SUFFIX_TREE: tree nodes visited.
 * @max_level: SUFFIX_TREE: last displacement level searched.
 * @truncated: stopped by max_orders or the node budget.
 *
 * What an enumeration did, for logs and tests.
 */
typedef struct
{
  ElkOrderEnum method;
  guint n_layers;
  guint n_groups;
  guint n_movable;
  guint64 n_nodes;
  guint max_level;
  gboolean truncated;
} ElkOrderInfo;

/**
 * ElkSuffixTree:
 * @n: operators, in execution order.
 * @exec_bytes: per operator, the smallest per-core execute state.
 * @preload_bytes: per operator, the smallest per-core preload state (0 for
 *   an operator without HBM data).
 * @movable: per operator, whether its preload may move (the HBM-heavy
 *   ones); the others keep their default position.
 * @kind: per operator, a number below @n; movable operators of the same
 *   kind (identical plan tables) keep their relative order.
 * @capacity: per-core bytes.
 * @max_resident: most operators forced to stay resident while one executes
 *   (G_MAXUINT: no limit).
 * @max_move: most positions an operator's preload may move from its
 *   default position (G_MAXUINT: no limit).
 * @max_orders: stop after this many orders.
 * @max_nodes: stop after visiting this many tree nodes (0: no limit).
 *
 * The generic preload-order enumeration of elk-paper.md §3.7 (Fig 14) on
 * plain arrays, so tests can drive it with hand-made sizes.  The rule is
 * documented in core/compile/elk-orders.c.
 */
typedef struct
{
  guint n;
  const guint64 *exec_bytes;
  const guint64 *preload_bytes;
  const gboolean *movable;
  const guint *kind;
  guint64 capacity;
  guint max_resident;
  guint max_move;
  guint max_orders;
  guint64 max_nodes;
} ElkSuffixTree;

ELK_API guint32 *elk_order_new_identity (guint n);
ELK_API GPtrArray *elk_orders_enumerate (const ElkEngine *engine,
                                         ElkOrderEnum method,
                                         guint max_displacement,
                                         guint max_orders,
                                         ElkOrderInfo *info,
                                         GError **error);
ELK_API GPtrArray *elk_orders_suffix_tree (const ElkSuffixTree *problem,
                                           ElkOrderInfo *info);

G_END_DECLS
