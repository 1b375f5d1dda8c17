/* elk-compiler-private.h: code shared by the compiler plugins.
 *
 * Not installed and not part of libelk: it is compiled into a static library
 * (plugins/schedulers/common) that the schedulers, the allocators, the
 * analytic chip and tests/compiler link.  Everything is plain C on plain
 * structs so that tests can drive it with hand-made plan tables.
 *
 * Three pieces live here:
 *  - the allocation cores (elk-alloc-core.c): the paper's greedy loop, the
 *    artifact's reservation heuristic, a fixed split and an exhaustive
 *    search, all over the same ElkAllocProblem;
 *  - the backward (inductive) scheduling engine (elk-engine.c) that the
 *    elk, basic, static and ideal schedulers share, so that ablations
 *    compare like with like;
 *  - the contention-aware timeline (elk-timeline.c) that runs an ElkProgram
 *    forward, used by the analytic chip.
 */
#pragma once

#include <elk/elk.h>

G_BEGIN_DECLS

/* ---------------------------------------------------------------------- */
/* Allocation                                                              */
/* ---------------------------------------------------------------------- */

/**
 * ElkAllocProblem:
 * @exec: the executing operator's table.
 * @n_pre: number of preloaded operators.
 * @pre: their tables.
 * @pre_fixed: per preloaded operator, the cold-hot entry fixed when it was
 *   scheduled (its execute-state plan is then fixed too), or -1 when free.
 * @budget: per-core bytes to split.
 * @penalty_per_byte: seconds charged per per-core byte of the executing
 *   operator's preload-state layout (the artifact's all-to-all NoC
 *   penalty); 0 when contention is ignored.
 * @exec_is_fixed: the scheduler fixed the executing operator's cold-hot
 *   entry to @exec_fixed (zero: free, so positional initialisers that
 *   stop before it keep their meaning).
 * @exec_fixed: that entry.
 *
 * The allocation problem of elk-paper.md §3.6 in table form.  The
 * executing operator occupies its hot footprint; each preloaded operator
 * occupies its cold footprint.  A fixed preloaded operator may only move to
 * an entry with the same hot plan (a smaller preload state of the same
 * execute plan, paid for with more data distribution).
 */
typedef struct
{
  const ElkPlanTable *exec;
  guint n_pre;
  const ElkPlanTable *const *pre;
  const gint32 *pre_fixed;
  guint64 budget;
  double penalty_per_byte;
  gboolean exec_is_fixed;
  guint32 exec_fixed;
} ElkAllocProblem;

/**
 * ElkAllocChoice:
 * @exec_entry: cold-hot entry of the executing operator.
 * @pre_entries: caller-allocated, @n_pre entries.
 * @exec_s: the executing operator's hot time.
 * @warmup_s: its data-distribution time.
 * @extra_warmup_s: data distribution added to the preloaded operators
 *   relative to their fixed entries.
 * @penalty_s: contention estimate.
 * @cost_s: exec_s + warmup_s + extra_warmup_s + penalty_s.
 * @bytes: per-core bytes used.
 */
typedef struct
{
  guint32 exec_entry;
  guint32 *pre_entries;
  double exec_s;
  double warmup_s;
  double extra_warmup_s;
  double penalty_s;
  double cost_s;
  guint64 bytes;
} ElkAllocChoice;

gboolean elk__alloc_greedy (const ElkAllocProblem *problem,
                            ElkAllocChoice *choice);
gboolean elk__alloc_reservation (const ElkAllocProblem *problem,
                                 double reserve_factor,
                                 ElkAllocChoice *choice);
gboolean elk__alloc_fixed_split (const ElkAllocProblem *problem,
                                 double exec_fraction,
                                 ElkAllocChoice *choice);
gboolean elk__alloc_exact (const ElkAllocProblem *problem,
                           guint64 max_combinations,
                           ElkAllocChoice *choice,
                           GError **error);

/* Fills @problem from an ElkAllocRequest (tables from the plan set) and
 * copies a choice back into an ElkAllocResult.  @tables must hold
 * request->n_preloaded pointers. */
void elk__alloc_problem_from_request (ElkAllocProblem *problem,
                                      const ElkAllocRequest *request,
                                      const ElkPlanTable **tables,
                                      double penalty_weight);
void elk__alloc_choice_to_result (const ElkAllocChoice *choice,
                                  guint n_pre,
                                  ElkAllocResult *result);

/* ---------------------------------------------------------------------- */
/* Load (preload) time model, shared by the engine and the timeline.       */
/* ---------------------------------------------------------------------- */

/**
 * ElkLoadModel:
 * @hbm_bw: total HBM bandwidth, bytes/s.
 * @link_bw: per-core interconnect port rate, bytes/s.
 * @cores: cores the preload is broadcast to.
 *
 * A preload of an operator reads @hbm_bytes once from HBM (time
 * hbm_bytes / hbm_bw) and delivers its preload-state layout, cold_bytes on
 * every core, through the cores' ports (time cold_bytes / link_bw, the
 * artifact's broadcast-ratio formula written per core).  Its duration is
 * the larger of the HBM time and the delivery time divided by the share
 * theta of the NoC a preload may take (elk-paper.md §3.5, §3.8).
 */
typedef struct
{
  double hbm_bw;
  double link_bw;
  guint cores;
} ElkLoadModel;

double elk__load_time (const ElkLoadModel *model,
                       guint64 hbm_bytes,
                       guint64 cold_bytes,
                       double theta,
                       double *noc_s);

/* ---------------------------------------------------------------------- */
/* Backward scheduling engine                                              */
/* ---------------------------------------------------------------------- */

typedef enum
{
  ELK_POLICY_BASIC,
  ELK_POLICY_STATIC,
  ELK_POLICY_ELK,
  ELK_POLICY_IDEAL,
} ElkPolicy;

/**
 * ElkEngineParams:
 * @policy: which design (elk-paper.md §5.3).
 * @theta: share of the NoC a preload may take.
 * @delay_exec: contention variant: %TRUE delays execution (the artifact's
 *   delay_comp=True), %FALSE pushes the overlapping preloads earlier.
 * @exec_space: Static only: the fixed per-core execution space.
 * @largest_cold: Basic and Static: use every operator's largest fitting
 *   preload-state layout instead of its smallest.
 * @abandon_on_cap: give up a non-default preload order (not an error) as
 *   soon as a step reaches the per-layer preload cap (§3.7, the artifact's
 *   rule); the identity order is never given up.
 */
typedef struct
{
  ElkPolicy policy;
  double theta;
  gboolean delay_exec;
  guint64 exec_space;
  gboolean largest_cold;
  gboolean abandon_on_cap;
} ElkEngineParams;

/* Per-operator outcome of one engine run.  Times are on the backward time
 * axis: the last execution ends at 0. */
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

typedef struct
{
  guint n_ops;
  ElkEngineOp *ops;
  double latency_s;
  gboolean feasible;
  double theta;   /* the preload share the run used */
} ElkEngineResult;

/**
 * ElkEngine:
 *
 * Everything an engine run needs that does not change between runs (the
 * plan set, the allocator, the load model, per-operator tables and the
 * per-layer preload cap).  Read-only once built, so threads share it.
 */
typedef struct
{
  const ElkPlanSet *plans;
  ElkGraph *graph;
  const ElkChipSpec *spec;
  ElkAllocator *allocator;
  ElkLoadModel load;
  guint n_ops;
  const ElkPlanTable **tables;
  guint max_preload;
  guint64 usable;
  ElkNocDemand noc_demand;   /* from the plan set's options */
} ElkEngine;

gboolean elk__engine_init (ElkEngine *engine,
                           const ElkPlanSet *plans,
                           ElkAllocator *allocator,
                           GError **error);
void elk__engine_clear (ElkEngine *engine);
void elk__engine_result_init (ElkEngineResult *result, guint n_ops);
void elk__engine_result_clear (ElkEngineResult *result);
gboolean elk__engine_run (const ElkEngine *engine,
                          const guint32 *order,
                          const ElkEngineParams *params,
                          ElkEngineResult *result,
                          GError **error);
ElkProgram *elk__engine_to_program (const ElkEngine *engine,
                                    const guint32 *order,
                                    const ElkEngineResult *result,
                                    ElkPolicy policy);
guint64 elk__table_min_hot (const ElkPlanTable *table);

/* ---------------------------------------------------------------------- */
/* Preload orders (§3.7)                                                    */
/* ---------------------------------------------------------------------- */

/* How candidate orders are generated: AUTO takes LAYERS when the graph has
 * identical layers with at least two groups to permute, SUFFIX_TREE
 * otherwise. */
typedef enum
{
  ELK_ORDER_ENUM_AUTO,
  ELK_ORDER_ENUM_LAYERS,
  ELK_ORDER_ENUM_SUFFIX_TREE,
} ElkOrderEnum;

/* What an enumeration did, for logs and tests. */
typedef struct
{
  ElkOrderEnum method;   /* LAYERS or SUFFIX_TREE: the one used */
  guint n_layers;        /* identical layers found (0 or 1: none repeat) */
  guint n_groups;        /* LAYERS: groups per layer */
  guint n_movable;       /* SUFFIX_TREE: HBM-heavy operators reordered */
  guint64 n_nodes;       /* SUFFIX_TREE: tree nodes visited */
  guint max_level;       /* SUFFIX_TREE: last displacement level searched */
  gboolean truncated;    /* stopped by max_orders or the node budget */
} ElkOrderInfo;

/* Returns a GPtrArray of guint32[n_ops] orders, the default order first.
 * Deterministic.  Fails only when @method is LAYERS and the graph has no
 * repeated layers to permute. */
GPtrArray *elk__orders_enumerate (const ElkEngine *engine,
                                  ElkOrderEnum method,
                                  guint max_displacement,
                                  guint max_orders,
                                  ElkOrderInfo *info,
                                  GError **error);

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
 * documented in elk-orders.c.
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

/* Returns the valid orders (guint32[n] each), by increasing displacement
 * level, the default order first when it is valid.  @info may be NULL. */
GPtrArray *elk__orders_suffix_tree (const ElkSuffixTree *problem,
                                    ElkOrderInfo *info);

/* ---------------------------------------------------------------------- */
/* Forward timeline (analytic chip)                                        */
/* ---------------------------------------------------------------------- */

typedef struct
{
  ElkLoadModel load;
  double theta;
  gboolean delay_exec;
} ElkTimelineParams;

/* Per-operator inputs of the forward timeline, one entry per operator. */
typedef struct
{
  gboolean preloaded;
  guint64 hbm_bytes;
  guint64 cold_bytes;
  double min_load_s;
  double exec_s;
  double shift_s;
  double noc_bytes;
} ElkTimelineOp;

typedef struct
{
  double latency_s;
  double hbm_busy_s;
  double noc_busy_s;
  double noc_bytes;
  double preload_only_s;
  double execute_only_s;
  double overlap_s;
  double stall_s;
} ElkTimelineResult;

gboolean elk__timeline_run (const ElkTimelineParams *params,
                            guint n_ops,
                            const ElkTimelineOp *ops,
                            guint n_steps,
                            const ElkStep *steps,
                            ElkTimelineResult *result,
                            GError **error);

G_END_DECLS

G_BEGIN_DECLS

/* Runs every (order, parameter set) pair, on @n_threads threads (0 = one
 * per processor), and leaves the best in @best (re-run on the caller's
 * thread).  Deterministic whatever the thread count. */
gboolean elk__engine_search (const ElkEngine *engine,
                             GPtrArray *orders,
                             const ElkEngineParams *params,
                             guint n_params,
                             guint n_threads,
                             ElkEngineResult *best,
                             guint *best_order,
                             guint *best_params,
                             GError **error);
guint32 *elk__identity_order (guint n);

typedef enum
{
  ELK_CONTENTION_BEST,
  ELK_CONTENTION_DELAY_EXECUTION,
  ELK_CONTENTION_DELAY_PRELOAD,
} ElkContention;

typedef enum
{
  ELK_PRELOAD_STATE_BEST,
  ELK_PRELOAD_STATE_SMALLEST,
  ELK_PRELOAD_STATE_LARGEST,
} ElkPreloadState;

GType elk__contention_get_type (void);
GType elk__preload_state_get_type (void);

G_END_DECLS
