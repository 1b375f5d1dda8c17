/* elk-program.c: compiled programs and their structural validation. */
#include "config.h"

#include <math.h>

#include "elk-private.h"

#include <elk/elk-program.h>
#include <elk/elk-error.h>

struct _ElkProgram
{
  gatomicrefcount ref_count;
  ElkGraph *graph;
  GArray *steps;       /* ElkStep */
  ElkProgramOp *ops;   /* one per graph operator */
  double estimate_s;
  guint n_orders;
  ElkProgramAssumptions assumptions;
};

ELK_DEFINE_BOXED_TYPE (ElkProgram, elk_program, elk_program_ref,
                     elk_program_unref)

/**
 * elk_program_new:
 * @graph: the graph the program runs
 * Returns: (transfer full): an empty program with one zeroed ElkProgramOp
 *   per operator.
 */
ElkProgram *
elk_program_new (ElkGraph *graph)
{
  ElkProgram *program = g_new0 (ElkProgram, 1);

  g_atomic_ref_count_init (&program->ref_count);
  program->graph = elk_graph_ref (graph);
  program->steps = g_array_new (FALSE, FALSE, sizeof (ElkStep));
  program->ops = g_new0 (ElkProgramOp, elk_graph_get_n_ops (graph));
  for (guint i = 0; i < elk_graph_get_n_ops (graph); i++)
    program->ops[i].est_noc_s = NAN;
  program->n_orders = 1;
  return program;
}

ElkProgram *
elk_program_ref (ElkProgram *program)
{
  g_atomic_ref_count_inc (&program->ref_count);
  return program;
}

void
elk_program_unref (ElkProgram *program)
{
  if (!g_atomic_ref_count_dec (&program->ref_count))
    return;
  elk_graph_unref (program->graph);
  g_array_unref (program->steps);
  g_free (program->ops);
  g_free (program);
}

/**
 * elk_program_get_graph:
 * Returns: (transfer none): the graph.
 */
ElkGraph *
elk_program_get_graph (const ElkProgram *program)
{
  return program->graph;
}

void
elk_program_add_preload (ElkProgram *program, guint32 op)
{
  ElkStep step = { ELK_STEP_PRELOAD, op };
  g_array_append_val (program->steps, step);
}

void
elk_program_add_execute (ElkProgram *program, guint32 op)
{
  ElkStep step = { ELK_STEP_EXECUTE, op };
  g_array_append_val (program->steps, step);
}

guint
elk_program_get_n_steps (const ElkProgram *program)
{
  return program->steps->len;
}

const ElkStep *
elk_program_get_step (const ElkProgram *program, guint index)
{
  g_return_val_if_fail (index < program->steps->len, NULL);
  return &g_array_index (program->steps, ElkStep, index);
}

/**
 * elk_program_get_op:
 * Returns: (transfer none): the writable per-operator record of @op.
 */
ElkProgramOp *
elk_program_get_op (ElkProgram *program, guint32 op)
{
  g_return_val_if_fail (op < elk_graph_get_n_ops (program->graph), NULL);
  return &program->ops[op];
}

const ElkProgramOp *
elk_program_peek_op (const ElkProgram *program, guint32 op)
{
  g_return_val_if_fail (op < elk_graph_get_n_ops (program->graph), NULL);
  return &program->ops[op];
}

/**
 * elk_program_set_estimate:
 *
 * Records the scheduler's own latency estimate, kept in results beside the
 * backend's measurement.
 */
void
elk_program_set_estimate (ElkProgram *program, double latency_s)
{
  program->estimate_s = latency_s;
}

double
elk_program_get_estimate (const ElkProgram *program)
{
  return program->estimate_s;
}

/**
 * elk_program_set_n_orders:
 *
 * Records how many preload orders the scheduler evaluated.
 */
void
elk_program_set_n_orders (ElkProgram *program, guint n_orders)
{
  program->n_orders = n_orders;
}

guint
elk_program_get_n_orders (const ElkProgram *program)
{
  return program->n_orders;
}

/**
 * elk_program_set_assumptions:
 *
 * Records what the program takes for granted about the machine (see
 * #ElkProgramAssumptions); a new program assumes nothing.
 */
void
elk_program_set_assumptions (ElkProgram *program,
                             ElkProgramAssumptions assumptions)
{
  program->assumptions = assumptions;
}

ElkProgramAssumptions
elk_program_get_assumptions (const ElkProgram *program)
{
  return program->assumptions;
}

#define INVALID(...)                                                         \
  G_STMT_START                                                               \
  {                                                                          \
    g_set_error (error, ELK_SCHEDULE_ERROR,                                  \
                 ELK_SCHEDULE_ERROR_INVALID_PROGRAM, __VA_ARGS__);           \
    return FALSE;                                                            \
  }                                                                          \
  G_STMT_END

/**
 * elk_program_validate:
 * @program: a program
 * @spec: the chip it is meant for
 * @error: return location for a #GError
 *
 * Checks the rules every backend relies on: every operator executes exactly
 * once and in graph order; every operator that reads HBM is preloaded
 * exactly once, before its execute; no operator is preloaded after it ran;
 * plans use no more cores than exist; and, under rules R1-R3, the SRAM in
 * use during each execute (the executing operator's hot footprint plus the
 * cold footprints of every later operator whose preload was issued before
 * that execute) fits each core.
 *
 * Returns: %TRUE if the program is well-formed.
 */
gboolean
elk_program_validate (const ElkProgram *program,
                      const ElkChipSpec *spec,
                      GError **error)
{
  const ElkGraph *graph = program->graph;
  guint n_ops = elk_graph_get_n_ops (graph);
  guint64 usable = elk_chip_spec_get_usable_sram (spec);
  g_autofree gint *preload_step = g_new (gint, n_ops);
  g_autofree gint *exec_step = g_new (gint, n_ops);
  guint next_exec = 0;
  guint n_steps = program->steps->len;

  for (guint i = 0; i < n_ops; i++)
    preload_step[i] = exec_step[i] = -1;

  for (guint s = 0; s < n_steps; s++)
    {
      const ElkStep *step = &g_array_index (program->steps, ElkStep, s);
      if (step->op >= n_ops)
        INVALID ("program step %u names operator %u, but the graph has %u",
                 s, step->op, n_ops);
      if (step->kind == ELK_STEP_PRELOAD)
        {
          if (preload_step[step->op] >= 0)
            INVALID ("program step %u preloads '%s' a second time", s,
                     elk_graph_get_op (graph, step->op)->name);
          if (exec_step[step->op] >= 0)
            INVALID ("program step %u preloads '%s' after it executed", s,
                     elk_graph_get_op (graph, step->op)->name);
          preload_step[step->op] = (gint) s;
        }
      else
        {
          const ElkOp *op = elk_graph_get_op (graph, step->op);
          if (step->op != next_exec)
            INVALID ("program step %u executes '%s' but operator %u ('%s') "
                     "is next in graph order", s, op->name, next_exec,
                     elk_graph_get_op (graph, next_exec)->name);
          if (elk_op_get_hbm_bytes (graph, op) > 0
              && preload_step[step->op] < 0)
            INVALID ("program step %u executes '%s', which reads HBM, "
                     "without a preload", s, op->name);
          exec_step[step->op] = (gint) s;
          next_exec++;
        }
    }
  if (next_exec != n_ops)
    INVALID ("program executes %u of the graph's %u operators", next_exec,
             n_ops);

  /* SRAM during each execute: the executing operator's hot footprint, and
   * the cold footprints of every later operator whose preload was issued
   * before this execute.  Preloads issued after it cannot start until it
   * finishes (R1), so they do not occupy SRAM yet. */
  for (guint i = 0; i < n_ops; i++)
    {
      const ElkProgramOp *pop = &program->ops[i];
      guint64 used = pop->hot_bytes;
      gint until = exec_step[i];

      if (pop->exec_plan.cores_used > spec->cores)
        INVALID ("operator '%s' uses %u cores but the chip has %u",
                 elk_graph_get_op (graph, i)->name,
                 pop->exec_plan.cores_used, spec->cores);
      for (guint j = i + 1; j < n_ops; j++)
        if (preload_step[j] >= 0 && preload_step[j] < until)
          used += program->ops[j].cold_bytes;
      if (used > usable)
        INVALID ("while '%s' executes, cores need %" G_GUINT64_FORMAT
                 " bytes of SRAM (its execution space %" G_GUINT64_FORMAT
                 " plus preloaded operators), but only %" G_GUINT64_FORMAT
                 " are usable", elk_graph_get_op (graph, i)->name, used,
                 pop->hot_bytes, usable);
    }
  return TRUE;
}
