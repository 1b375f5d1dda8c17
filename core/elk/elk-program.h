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
 * scheduler chose (execute-state and preload-state), the per-core SRAM each
 * occupies, and the scheduler's own estimates, so that a backend can run the
 * plan and results can show where the compiler's model and the backend
 * disagree.  elk_program_validate() checks the structural rules before any
 * backend sees a program.
 */
#pragma once

#include <elk/elk-graph.h>
#include <elk/elk-chip-spec.h>
#include <elk/elk-plan.h>

G_BEGIN_DECLS

typedef enum
{
  ELK_STEP_PRELOAD,
  ELK_STEP_EXECUTE,
} ElkStepKind;

/**
 * ElkStep:
 * @kind: preload_async or execute.
 * @op: the operator.
 */
typedef struct
{
  ElkStepKind kind;
  guint32 op;
} ElkStep;

/**
 * ElkProgramOp:
 * @exec_plan: the execute-state ("hot") plan.
 * @preload_plan: the preload-state ("cold") plan; equal to @exec_plan's
 *   spatial vector with temporal factors that are multiples of it.
 * @hot_bytes: per-core execution space the operator uses.
 * @cold_bytes: per-core preload space the operator holds from its
 *   preload_async until its execute.
 * @exec_budget: per-core bytes the scheduler gave the execution space.
 * @preload_number: how many later operators' preloads overlap this
 *   operator's execution.
 * @hbm_bytes: bytes read from HBM by the preload.
 * @est_exec_s: the compiler's execution time estimate (plan time).
 * @est_warmup_s: the compiler's data-distribution estimate.
 * @est_load_s: the compiler's preload time estimate.
 * @est_noc_s: the interconnect time the compiler expects the execution's
 *   own traffic to need while it overlaps preloads (see #ElkNocDemand);
 *   NAN (what elk_program_new() sets) when the scheduler gave none, and a
 *   backend then takes the execute plan's shift_s.
 */
typedef struct
{
  ElkPlan exec_plan;
  ElkPlan preload_plan;
  guint64 hot_bytes;
  guint64 cold_bytes;
  guint64 exec_budget;
  guint preload_number;
  guint64 hbm_bytes;
  double est_exec_s;
  double est_warmup_s;
  double est_load_s;
  /* Appended: keep new fields at the end. */
  double est_noc_s;
} ElkProgramOp;

/**
 * ElkProgramAssumptions:
 * @ELK_PROGRAM_ASSUME_NONE: a program for a real machine.
 * @ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION: turning an operator's preload
 *   layout into its execute layout (data distribution) costs nothing.
 * @ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK: preloads travel on an
 *   interconnect of their own and never compete with execution traffic.
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
} ElkProgramAssumptions;

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
ELK_API void elk_program_set_estimate (ElkProgram *program, double latency_s);
ELK_API double elk_program_get_estimate (const ElkProgram *program);
ELK_API void elk_program_set_n_orders (ElkProgram *program, guint n_orders);
ELK_API guint elk_program_get_n_orders (const ElkProgram *program);
ELK_API void elk_program_set_assumptions (ElkProgram *program,
                                          ElkProgramAssumptions assumptions);
ELK_API ElkProgramAssumptions
elk_program_get_assumptions (const ElkProgram *program);

ELK_API gboolean elk_program_validate (const ElkProgram *program,
                                       const ElkChipSpec *spec,
                                       GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkProgram, elk_program_unref)

G_END_DECLS
