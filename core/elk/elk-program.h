/* elk-program.h: what a scheduler produces and a chip runs.
 *
 * An ElkProgram is an ordered list of device calls, preload_async(op) and
 * execute(op), following the device programming model of elk-paper.md §3.4:
 *
 *  R1  an execute blocks every later preload_async and execute until it
 *      finishes (so a preload can overlap execute(i) only if it was issued
 *      before execute(i), and the operators preloaded before execute(i)
 *      and not yet executed hold their preload space in SRAM during it);
 *  R2  preload_async calls run one after another, in program order;
 *  R3  preload_async(i) blocks only execute(i).
 *
 * Next to the steps, the program records per operator the plans the
 * scheduler chose (execute-state and preload-state), what it believes they
 * occupy, and its own estimates.  elk_program_derive() derives every cost
 * a chip prices from the plans, the step order, the graph and the chip
 * spec; elk_program_validate() checks the structural rules and every
 * declaration against that derivation before any backend sees a program.
 */
#pragma once

#include <elk/elk-graph.h>
#include <elk/elk-chip-spec.h>
#include <elk/elk-plan.h>
#include <elk/elk-metrics.h>

G_BEGIN_DECLS

/**
 * ElkStepKind:
 * @ELK_STEP_PRELOAD: preload_async(op): load the operator's HBM data into
 *   its preload-state layout.
 * @ELK_STEP_EXECUTE: execute(op): run the operator.
 *
 * The two device calls of a program.
 */
typedef enum
{
  ELK_STEP_PRELOAD,
  ELK_STEP_EXECUTE,
} ElkStepKind;

/**
 * ElkStep:
 * @kind: preload_async or execute.
 * @op: the operator.
 *
 * One device call of a program.
 */
typedef struct
{
  ElkStepKind kind;
  guint32 op;
} ElkStep;

/**
 * ELK_PROGRAM_UNDECLARED:
 *
 * The value of a byte-size declaration of #ElkProgramOp that the
 * scheduler did not make (what elk_program_new() sets).
 */
#define ELK_PROGRAM_UNDECLARED G_MAXUINT64

/**
 * ElkProgramOp:
 * @exec_plan: the execute-state ("hot") plan.  Its cost fields must be the
 *   plan cost model's (a plan of the operator's table, or one filled by
 *   elk_plan_evaluate()); elk_program_validate() re-derives them.
 * @preload_plan: the preload-state ("cold") plan: @exec_plan's spatial
 *   vector with rotation factors that are multiples of its own.
 * @exec_budget: per-core bytes the scheduler reserved for the execution
 *   space: at least @exec_plan's footprint and at most the usable SRAM
 *   (%ELK_PROGRAM_UNDECLARED: the footprint itself).
 * @preload_share: the share of each core's interconnect port the preload
 *   may take, in (0, 1]: a program decision (a throttled preload leaves
 *   room for execution traffic and takes longer).  1 in a new program.
 * @hot_bytes: declaration, checked: per-core execution space, equal to
 *   @exec_plan's footprint.
 * @cold_bytes: declaration, checked: per-core preload space held from the
 *   preload_async to the execute, equal to @preload_plan's preload
 *   footprint (0 for an operator that reads nothing from HBM).
 * @hbm_bytes: declaration, checked: bytes the operator reads from HBM.
 * @est_exec_s: prediction: the execution time the scheduler expects.
 * @est_warmup_s: prediction: its data-distribution time.
 * @est_load_s: prediction: its preload time.
 * @est_noc_s: prediction: the interconnect time the execution's own
 *   traffic needs while it overlaps preloads.
 *
 * What a program records per operator, in three groups.  Decisions (the
 * plans, the budget and the preload share) are what a chip runs.
 * Declarations are what the scheduler believes the decisions imply:
 * %ELK_PROGRAM_UNDECLARED or equal to what elk_program_derive() derives,
 * else elk_program_validate() refuses the program naming the operator, the
 * field and both values.  Predictions (NAN when the scheduler made none)
 * are reported next to measurements and never priced: every chip prices a
 * program from elk_program_derive() alone, so a scheduler cannot change a
 * measurement without changing its plans or its step order
 * (docs/plugin-guide.md, "The trust model").
 *
 * The struct embeds two #ElkPlan by value, so its layout is part of the
 * plugin ABI (see #ElkPlan).
 */
typedef struct
{
  ElkPlan exec_plan;
  ElkPlan preload_plan;
  guint64 exec_budget;
  double preload_share;
  guint64 hot_bytes;
  guint64 cold_bytes;
  guint64 hbm_bytes;
  double est_exec_s;
  double est_warmup_s;
  double est_load_s;
  double est_noc_s;
} ElkProgramOp;

/**
 * ElkProgramAssumptions:
 * @ELK_PROGRAM_ASSUME_NONE: a program for a real machine.
 * @ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION: turning an operator's preload
 *   layout into its execute layout (data distribution) costs nothing.
 * @ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK: preloads travel on an
 *   interconnect of their own and never compete with execution traffic.
 * @ELK_PROGRAM_ASSUME_KNOWN_ROUTING: the scheduler knew the sampled routing
 *   of the graph's conditional operators (elk_graph_set_op_condition())
 *   before their routers ran: an oracle that preloads only the experts a
 *   step uses, which no causal program can do.
 *
 * What a program takes for granted about the machine beyond the chip spec.
 * Only a bound like the Ideal design of elk-paper.md §5.3 sets these: it is
 * not a program a real machine can run as written, so a backend that
 * models the machine in detail (the ipu-pod emulator) applies the same
 * assumptions and says so in its metrics model, instead of charging the
 * bound for costs it was defined to ignore.
 */
typedef enum
{
  ELK_PROGRAM_ASSUME_NONE = 0,
  ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION = 1 << 0,
  ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK = 1 << 1,
  ELK_PROGRAM_ASSUME_KNOWN_ROUTING = 1 << 2,
} ElkProgramAssumptions;

/**
 * ElkProgram:
 *
 * What a scheduler produces and a chip runs: the device calls in order,
 * and per operator an #ElkProgramOp.  A reference-counted boxed type
 * (elk_program_ref(), elk_program_unref()) that holds a reference to its
 * graph.
 */
typedef struct _ElkProgram ElkProgram;

#define ELK_TYPE_PROGRAM (elk_program_get_type ())
ELK_API GType elk_program_get_type (void);

ELK_API ElkProgram *elk_program_new (ElkGraph *graph);
ELK_API ElkProgram *elk_program_ref (ElkProgram *program);
ELK_API void elk_program_unref (ElkProgram *program);

ELK_API ElkGraph *elk_program_get_graph (const ElkProgram *program);
ELK_API void elk_program_add_preload (ElkProgram *program, guint32 op);
ELK_API void elk_program_add_execute (ElkProgram *program, guint32 op);
ELK_API guint elk_program_get_n_steps (const ElkProgram *program);
ELK_API const ElkStep *elk_program_get_step (const ElkProgram *program,
                                             guint index);
ELK_API ElkProgramOp *elk_program_get_op (ElkProgram *program, guint32 op);
ELK_API const ElkProgramOp *elk_program_peek_op (const ElkProgram *program,
                                                 guint32 op);
ELK_API void elk_program_set_plans (ElkProgram *program,
                                    guint32 op,
                                    const ElkPlan *exec_plan,
                                    const ElkPlan *preload_plan);
ELK_API void elk_program_set_estimate (ElkProgram *program, double latency_s);
ELK_API double elk_program_get_estimate (const ElkProgram *program);
ELK_API void elk_program_set_n_orders (ElkProgram *program, guint n_orders);
ELK_API guint elk_program_get_n_orders (const ElkProgram *program);
ELK_API void elk_program_set_assumptions (ElkProgram *program,
                                          ElkProgramAssumptions assumptions);
ELK_API ElkProgramAssumptions
elk_program_get_assumptions (const ElkProgram *program);

/**
 * ElkOpCost:
 * @preloaded: the program preloads the operator.
 * @hbm_bytes: bytes its preload reads from HBM (0 when not preloaded).
 * @hot_bytes: per-core execution space (the execute plan's footprint).
 * @cold_bytes: per-core preload space held from its preload_async to its
 *   execute (0 when not preloaded).
 * @resident_bytes: per-core SRAM in use while it executes: @hot_bytes and
 *   the preload spaces of every later operator whose preload was issued
 *   before this execute (rule R1).
 * @preload_number: how many such later operators there are.
 * @exec_s: execution time of the execute plan (compute, shift, shuffle).
 * @warmup_s: data distribution from the preload layout to the execute
 *   layout (0 under %ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION).
 * @warmup_noc_bytes: bytes the distribution moves between cores.
 * @noc_s: interconnect time the execution's own traffic needs while it
 *   overlaps preloads, by the plan set's #ElkNocDemand (0 under
 *   %ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK).
 * @noc_bytes: bytes the execution moves between cores on the shared
 *   interconnect (0 under %ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK).
 * @load_s: preload duration, elk_chip_spec_get_load_time() at the
 *   program's preload share (0 when not preloaded).
 * @load_noc_s: interconnect time of the preload's delivery.
 * @preload_share: the share the preload runs at.
 *
 * What a program costs per operator, derived by elk_program_derive() from
 * its plans, its step order, the graph and the chip spec alone.
 */
typedef struct
{
  gboolean preloaded;
  guint64 hbm_bytes;
  guint64 hot_bytes;
  guint64 cold_bytes;
  guint64 resident_bytes;
  guint preload_number;
  double exec_s;
  double warmup_s;
  double warmup_noc_bytes;
  double noc_s;
  double noc_bytes;
  double load_s;
  double load_noc_s;
  double preload_share;
} ElkOpCost;

ELK_API ElkOpCost *elk_program_derive (const ElkProgram *program,
                                       const ElkPlanSet *plans,
                                       GError **error);
ELK_API gboolean elk_program_validate (const ElkProgram *program,
                                       const ElkPlanSet *plans,
                                       GError **error);
ELK_API ElkRoutingStats *elk_program_charge_routing (const ElkProgram *program,
                                                     ElkOpCost *costs,
                                                     gboolean *skipped_steps);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkProgram, elk_program_unref)

G_END_DECLS
