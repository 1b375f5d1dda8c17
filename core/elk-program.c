/* elk-program.c: compiled programs and their structural validation. */
#include "config.h"

#include <math.h>

#include "elk-private.h"
#include "plan/elk-plan-private.h"

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

/**
 * elk_program_get_type:
 *
 * The boxed type of #ElkProgram.  Copying the boxed value takes a reference
 * (elk_program_ref()) and freeing it drops one (elk_program_unref()).
 *
 * Returns: the #GType of #ElkProgram.
 */
ELK_DEFINE_BOXED_TYPE (ElkProgram, elk_program, elk_program_ref,
                     elk_program_unref)

/**
 * elk_program_new:
 * @graph: the graph the program runs; the program keeps a reference
 *
 * Creates an empty program for a scheduler to fill.
 *
 * Returns: (transfer full): an empty program with one #ElkProgramOp per
 *   operator: zeroed plans, no declarations (%ELK_PROGRAM_UNDECLARED), no
 *   predictions (NAN), the full interconnect share for every preload.  Drop
 *   it with elk_program_unref().
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
    {
      ElkProgramOp *pop = &program->ops[i];
      pop->exec_budget = ELK_PROGRAM_UNDECLARED;
      pop->preload_share = 1.0;
      pop->hot_bytes = ELK_PROGRAM_UNDECLARED;
      pop->cold_bytes = ELK_PROGRAM_UNDECLARED;
      pop->hbm_bytes = ELK_PROGRAM_UNDECLARED;
      pop->est_exec_s = NAN;
      pop->est_warmup_s = NAN;
      pop->est_load_s = NAN;
      pop->est_noc_s = NAN;
    }
  program->n_orders = 1;
  return program;
}

/**
 * elk_program_ref:
 * @program: a program
 *
 * Takes a reference to @program.
 *
 * Returns: (transfer full): @program
 */
ElkProgram *
elk_program_ref (ElkProgram *program)
{
  g_atomic_ref_count_inc (&program->ref_count);
  return program;
}

/**
 * elk_program_unref:
 * @program: (transfer full): a program
 *
 * Drops a reference to @program and frees it with the last one (which also
 * drops its reference to the graph).
 */
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
 * @program: a program
 *
 * Gets the graph the program was made for.
 *
 * Returns: (transfer none): the graph the program runs.
 */
ElkGraph *
elk_program_get_graph (const ElkProgram *program)
{
  return program->graph;
}

/**
 * elk_program_add_preload:
 * @program: a program being built
 * @op: an operator index
 *
 * Appends a preload_async(@op) step.  The device rules are checked by
 * elk_program_validate(), not here.
 */
void
elk_program_add_preload (ElkProgram *program, guint32 op)
{
  ElkStep step = { ELK_STEP_PRELOAD, op };
  g_array_append_val (program->steps, step);
}

/**
 * elk_program_add_execute:
 * @program: a program being built
 * @op: an operator index
 *
 * Appends an execute(@op) step.  The device rules are checked by
 * elk_program_validate(), not here.
 */
void
elk_program_add_execute (ElkProgram *program, guint32 op)
{
  ElkStep step = { ELK_STEP_EXECUTE, op };
  g_array_append_val (program->steps, step);
}

/**
 * elk_program_get_n_steps:
 * @program: a program
 *
 * Gets how many device calls the program makes.
 *
 * Returns: the number of steps.
 */
guint
elk_program_get_n_steps (const ElkProgram *program)
{
  return program->steps->len;
}

/**
 * elk_program_get_step:
 * @program: a program
 * @index: a step index, below elk_program_get_n_steps()
 *
 * Gets one device call of the program.
 *
 * Returns: (transfer none): step @index, owned by @program.
 */
const ElkStep *
elk_program_get_step (const ElkProgram *program, guint index)
{
  g_return_val_if_fail (index < program->steps->len, NULL);
  return &g_array_index (program->steps, ElkStep, index);
}

/**
 * elk_program_get_op:
 * @program: a program being built
 * @op: an operator index
 *
 * Gets the per-operator record for a scheduler to fill in.
 *
 * Returns: (transfer none): the writable per-operator record of @op, owned
 *   by @program.
 */
ElkProgramOp *
elk_program_get_op (ElkProgram *program, guint32 op)
{
  g_return_val_if_fail (op < elk_graph_get_n_ops (program->graph), NULL);
  return &program->ops[op];
}

/**
 * elk_program_set_plans:
 * @program: a program being built
 * @op: an operator index
 * @exec_plan: the execute-state plan, copied into the operator's
 *   #ElkProgramOp.exec_plan
 * @preload_plan: the preload-state plan, copied into
 *   #ElkProgramOp.preload_plan
 *
 * Sets an operator's two plans (typically
 * elk_plan_table_get_plan() of a cold-hot entry's hot_plan and cold_plan).
 * The same as writing the fields of elk_program_get_op()'s record, for
 * bindings, which cannot assign a struct embedded by value (PyGObject
 * refuses it).  elk_program_validate() checks the plans as usual.
 */
void
elk_program_set_plans (ElkProgram *program,
                       guint32 op,
                       const ElkPlan *exec_plan,
                       const ElkPlan *preload_plan)
{
  g_return_if_fail (program != NULL);
  g_return_if_fail (op < elk_graph_get_n_ops (program->graph));
  g_return_if_fail (exec_plan != NULL && preload_plan != NULL);
  program->ops[op].exec_plan = *exec_plan;
  program->ops[op].preload_plan = *preload_plan;
}

/**
 * elk_program_peek_op:
 * @program: a program
 * @op: an operator index
 *
 * Reads what the program records for one operator.
 *
 * Returns: (transfer none): the per-operator record of @op, owned by
 *   @program; read-only.
 */
const ElkProgramOp *
elk_program_peek_op (const ElkProgram *program, guint32 op)
{
  g_return_val_if_fail (op < elk_graph_get_n_ops (program->graph), NULL);
  return &program->ops[op];
}

/**
 * elk_program_set_estimate:
 * @program: a program
 * @latency_s: the scheduler's latency estimate in seconds
 *
 * Records the scheduler's own latency estimate, kept in results beside the
 * backend's measurement and never priced.
 */
void
elk_program_set_estimate (ElkProgram *program, double latency_s)
{
  program->estimate_s = latency_s;
}

/**
 * elk_program_get_estimate:
 * @program: a program
 *
 * Gets the scheduler's own latency estimate.
 *
 * Returns: the scheduler's latency estimate in seconds, as recorded with
 *   elk_program_set_estimate().
 */
double
elk_program_get_estimate (const ElkProgram *program)
{
  return program->estimate_s;
}

/**
 * elk_program_set_n_orders:
 * @program: a program
 * @n_orders: the number of preload orders evaluated
 *
 * Records how many preload orders the scheduler evaluated (1 in a new
 * program), for results.
 */
void
elk_program_set_n_orders (ElkProgram *program, guint n_orders)
{
  program->n_orders = n_orders;
}

/**
 * elk_program_get_n_orders:
 * @program: a program
 *
 * Gets how many preload orders the scheduler evaluated.
 *
 * Returns: the number of preload orders the scheduler evaluated.
 */
guint
elk_program_get_n_orders (const ElkProgram *program)
{
  return program->n_orders;
}

/**
 * elk_program_set_assumptions:
 * @program: a program
 * @assumptions: what the program takes for granted
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

/**
 * elk_program_get_assumptions:
 * @program: a program
 *
 * Gets what the program takes for granted about the machine.
 *
 * Returns: what the program takes for granted about the machine.
 */
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

/* The structural rules: every operator executes exactly once and in graph
 * order; every operator that reads HBM is preloaded exactly once, before
 * its execute; no operator is preloaded after it ran.  Fills the step of
 * each operator's preload (-1: none) and execute. */
static gboolean
check_steps (const ElkProgram *program, gint *preload_step, gint *exec_step,
             GError **error)
{
  const ElkGraph *graph = program->graph;
  guint n_ops = elk_graph_get_n_ops (graph);
  guint next_exec = 0;

  for (guint i = 0; i < n_ops; i++)
    preload_step[i] = exec_step[i] = -1;
  for (guint s = 0; s < program->steps->len; s++)
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
      else if (step->kind == ELK_STEP_EXECUTE)
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
      else
        INVALID ("program step %u has kind %d; expected preload or execute",
                 s, (gint) step->kind);
    }
  if (next_exec != n_ops)
    INVALID ("program executes %u of the graph's %u operators", next_exec,
             n_ops);
  return TRUE;
}

/* The last plans checked for operators of one plan table, and what their
 * data distribution costs.  Identical layers share tables and mostly
 * plans, so the derivation checks each distinct pair once instead of once
 * per layer. */
typedef struct
{
  ElkPlan exec_plan;
  ElkPlan preload_plan;
  gboolean has_preload_plan;
  gboolean has_warmup;
  double warmup_s;
  double warmup_noc_bytes;
} Checked;

/* Per-operator costs from the plans; see elk_program_derive(). */
static gboolean
derive_op (const ElkProgram *program, const ElkPlanSet *plans, guint i,
           gboolean preloaded, GHashTable *checked, ElkOpCost *c,
           GError **error)
{
  const ElkGraph *graph = program->graph;
  const ElkChipSpec *spec = elk_plan_set_get_spec (plans);
  const ElkPlanOptions *options = elk_plan_set_get_options (plans);
  const ElkProgramOp *pop = &program->ops[i];
  const ElkOp *op = elk_graph_get_op (graph, i);
  ElkProgramAssumptions assume = program->assumptions;
  /* A zeroed preload plan on an operator nobody preloads means "none":
   * its inputs arrive in the execute layout, as they would with the
   * execute plan itself as preload plan. */
  gboolean has_preload_plan = preloaded || pop->preload_plan.n_dims > 0;
  GError *local_error = NULL;
  const ElkPlanTable *table = elk_plan_set_get_table (plans, i);
  Checked *seen = table != NULL ? g_hash_table_lookup (checked, table) : NULL;
  gboolean known = seen != NULL
                   && seen->has_preload_plan == has_preload_plan
                   && elk__plan_equal (&seen->exec_plan, &pop->exec_plan)
                   && (!has_preload_plan
                       || elk__plan_equal (&seen->preload_plan,
                                           &pop->preload_plan));

  memset (c, 0, sizeof (*c));
  if (!(pop->preload_share > 0 && pop->preload_share <= 1))
    INVALID ("operator '%s': preload_share is %g; expected a share of the "
             "interconnect in (0, 1]", op->name, pop->preload_share);
  if (!known
      && !elk__plan_set_check_plan (plans, i, &pop->exec_plan,
                                    "execute plan", error))
    return FALSE;
  if (!known && has_preload_plan
      && !elk__plan_set_check_plan (plans, i, &pop->preload_plan,
                                    "preload plan", error))
    return FALSE;
  if (!known && table != NULL)
    {
      seen = g_new0 (Checked, 1);
      seen->exec_plan = pop->exec_plan;
      seen->preload_plan = pop->preload_plan;
      seen->has_preload_plan = has_preload_plan;
      g_hash_table_replace (checked, (gpointer) table, seen);
    }

  c->preloaded = preloaded;
  c->preload_share = pop->preload_share;
  c->hot_bytes = pop->exec_plan.hot_bytes;
  c->exec_s = pop->exec_plan.time_s;
  /* With distribution free, the preload layout need not lead to the
   * execute layout: nothing is charged for turning one into the other. */
  if (has_preload_plan && !(assume & ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION))
    {
      if (seen != NULL && seen->has_warmup)
        {
          c->warmup_s = seen->warmup_s;
          c->warmup_noc_bytes = seen->warmup_noc_bytes;
        }
      else
        {
          c->warmup_s = elk_plan_get_warmup (graph, i, spec,
                                             &pop->preload_plan,
                                             &pop->exec_plan,
                                             &c->warmup_noc_bytes,
                                             &local_error);
          if (c->warmup_s < 0)
            {
              g_propagate_prefixed_error (error, local_error,
                                          "the preload plan does not lead "
                                          "to the execute plan: ");
              return FALSE;
            }
          if (seen != NULL)
            {
              seen->has_warmup = TRUE;
              seen->warmup_s = c->warmup_s;
              seen->warmup_noc_bytes = c->warmup_noc_bytes;
            }
        }
    }
  if (!(assume & ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK))
    {
      c->noc_s = elk_plan_get_noc_demand (&pop->exec_plan,
                                          options->noc_demand);
      c->noc_bytes = pop->exec_plan.noc_bytes;
    }
  if (preloaded)
    {
      c->hbm_bytes = elk_op_get_hbm_bytes (graph, op);
      /* With distribution free, the layout a preload lands in does not
       * matter, so it lands as an even, unreplicated shard. */
      c->cold_bytes = (assume & ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION)
                        ? (c->hbm_bytes + spec->cores - 1) / spec->cores
                        : pop->preload_plan.cold_bytes;
      if (c->hbm_bytes == 0)
        c->cold_bytes = 0;
      c->load_s = elk_chip_spec_get_load_time (spec, c->hbm_bytes,
                                               c->cold_bytes,
                                               c->preload_share,
                                               &c->load_noc_s);
    }
  return TRUE;
}

static ElkOpCost *
derive (const ElkProgram *program, const ElkPlanSet *plans,
        gint *preload_step, gint *exec_step, GError **error)
{
  guint n_ops = elk_graph_get_n_ops (program->graph);
  g_autofree ElkOpCost *costs = NULL;
  g_autoptr (GHashTable) checked = NULL;

  if (elk_plan_set_get_graph (plans) != program->graph
      && elk_graph_get_n_ops (elk_plan_set_get_graph (plans)) != n_ops)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR,
                   ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
                   "the program runs graph '%s' (%u operators) but the plan "
                   "tables are for graph '%s' (%u operators)",
                   elk_graph_get_name (program->graph), n_ops,
                   elk_graph_get_name (elk_plan_set_get_graph (plans)),
                   elk_graph_get_n_ops (elk_plan_set_get_graph (plans)));
      return NULL;
    }
  if (!check_steps (program, preload_step, exec_step, error))
    return NULL;
  costs = g_new (ElkOpCost, n_ops);
  checked = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  for (guint i = 0; i < n_ops; i++)
    if (!derive_op (program, plans, i, preload_step[i] >= 0, checked,
                    &costs[i], error))
      return NULL;

  /* SRAM during each execute: the executing operator's execution space,
   * and the preload spaces of every later operator whose preload was
   * issued before this execute.  Preloads issued after it cannot start
   * until it finishes (R1), so they do not occupy SRAM yet. */
  for (guint i = 0; i < n_ops; i++)
    {
      ElkOpCost *c = &costs[i];
      c->resident_bytes = c->hot_bytes;
      for (guint j = i + 1; j < n_ops; j++)
        if (preload_step[j] >= 0 && preload_step[j] < exec_step[i])
          {
            c->resident_bytes += costs[j].cold_bytes;
            c->preload_number++;
          }
    }
  return g_steal_pointer (&costs);
}

/**
 * elk_program_derive: (skip)
 * @program: a program
 * @plans: the plan tables it was compiled with (their graph, chip spec
 *   and options)
 * @error: return location for a #GError
 *
 * Derives what every operator of @program costs from its plans, its step
 * order, the graph and the chip spec alone, never from what the scheduler
 * declared or predicted.  This is the one derivation every chip prices
 * and elk_program_validate() checks against: two programs with the same
 * plans and steps get the same costs whatever else they record.  Plans are
 * believed only for their spatial vectors and rotation factors (see
 * #ElkProgramOp).  The program's #ElkProgramAssumptions, which only a
 * bound sets, are applied and reported with the results.  Conditional
 * operators (elk_graph_set_op_condition()) are costed as if their router
 * took them, which is all a scheduler may know; a chip then applies the
 * graph's sampled routing with elk_program_charge_routing().
 *
 * The result is a C array with one element per operator of the graph and
 * no length of its own, which bindings cannot size: it is skipped in the
 * introspection data.
 *
 * Returns: (transfer full) (nullable): one #ElkOpCost per operator
 *   (elk_graph_get_n_ops() of the program's graph; free the array with
 *   g_free()), or %NULL with %ELK_SCHEDULE_ERROR_INVALID_PROGRAM if the
 *   steps break the structural rules or a plan is not what the cost model
 *   gives.
 */
ElkOpCost *
elk_program_derive (const ElkProgram *program,
                    const ElkPlanSet *plans,
                    GError **error)
{
  guint n_ops;

  g_return_val_if_fail (program != NULL && plans != NULL, NULL);
  n_ops = elk_graph_get_n_ops (program->graph);
  {
    g_autofree gint *preload_step = g_new (gint, n_ops);
    g_autofree gint *exec_step = g_new (gint, n_ops);
    return derive (program, plans, preload_step, exec_step, error);
  }
}

/**
 * elk_program_charge_routing: (skip)
 * @program: a program
 * @costs: what elk_program_derive() derived for @program; changed in
 *   place into what the chip charges
 * @skipped_steps: (nullable): elk_program_get_n_steps() flags, set to
 *   %TRUE for the steps the device skips, or %NULL
 *
 * Applies the sampled routing of the graph's conditional operators
 * (elk_graph_set_op_condition()) to a program's derived costs, as every
 * chip charges them.  elk_program_derive() and elk_program_validate() are
 * causal: they cost every conditional operator as if its router took it,
 * which is what a scheduler may know and the worst case the SRAM rule
 * must hold for.  A chip then calls this function, which reads the
 * routing the graph sampled:
 *
 * - a taken operator costs what it always does: its preload issued before
 *   its router executes is a speculative hit, one issued after it an
 *   on-demand load;
 * - an operator the routing does not take never executes: its execution
 *   space, compute, distribution and traffic become 0 and its execute
 *   step is skipped.  Its preload, if issued before its router's execute
 *   step, is charged in full (HBM time, and its preload space held from
 *   the issue to the operator's execute position as for any preload):
 *   wasted speculation.  Issued after the router, the device knows the
 *   routing and skips it: no HBM bytes, no SRAM, no time.
 *
 * The resident bytes of every operator are derived again from what is
 * left; a skipped operator has none.  The function is plain C over the
 * arrays, so chips call it once per run.
 *
 * Returns: (transfer full) (nullable): the speculation's statistics, or
 *   %NULL, with @costs untouched and @skipped_steps all %FALSE, when the
 *   graph has no conditional operators.
 */
ElkRoutingStats *
elk_program_charge_routing (const ElkProgram *program,
                            ElkOpCost *costs,
                            gboolean *skipped_steps)
{
  const ElkGraph *graph;
  guint n_ops, n_steps;
  g_autofree gint *preload_step = NULL;
  g_autofree gint *exec_step = NULL;
  g_autofree gboolean *skipped_exec = NULL;
  ElkRoutingStats *stats;

  g_return_val_if_fail (program != NULL && costs != NULL, NULL);
  graph = program->graph;
  n_ops = elk_graph_get_n_ops (graph);
  n_steps = program->steps->len;
  if (skipped_steps != NULL)
    memset (skipped_steps, 0, n_steps * sizeof (gboolean));
  if (!elk_graph_has_conditions (graph))
    return NULL;

  preload_step = g_new (gint, n_ops);
  exec_step = g_new (gint, n_ops);
  skipped_exec = g_new0 (gboolean, n_ops);
  for (guint i = 0; i < n_ops; i++)
    preload_step[i] = exec_step[i] = -1;
  for (guint s = 0; s < n_steps; s++)
    {
      const ElkStep *step = &g_array_index (program->steps, ElkStep, s);
      if (step->op < n_ops)
        (step->kind == ELK_STEP_PRELOAD ? preload_step : exec_step)[step->op]
            = (gint) s;
    }

  stats = elk_routing_stats_new ();
  for (guint i = 0; i < n_ops; i++)
    {
      guint32 router;
      gboolean taken, before;
      ElkOpCost *c = &costs[i];
      double hbm;

      if (!elk_graph_get_op_condition (graph, i, &router, NULL, &taken))
        continue;
      stats->n_conditional++;
      /* A preload issued before the router's execute step is speculation;
       * rule R1 makes one issued after it wait until the router is done,
       * when the device knows the routing. */
      before = preload_step[i] >= 0 && preload_step[i] < exec_step[router];
      hbm = (double) c->hbm_bytes;
      if (taken)
        {
          stats->n_taken++;
          if (c->hbm_bytes == 0)
            continue;
          if (before)
            stats->hits++;
          else
            {
              stats->on_demand++;
              stats->on_demand_hbm_bytes += hbm;
            }
          continue;
        }
      skipped_exec[i] = TRUE;
      if (skipped_steps != NULL && exec_step[i] >= 0)
        skipped_steps[exec_step[i]] = TRUE;
      c->hot_bytes = 0;
      c->exec_s = 0;
      c->warmup_s = 0;
      c->warmup_noc_bytes = 0;
      c->noc_s = 0;
      c->noc_bytes = 0;
      if (before)
        {
          if (c->hbm_bytes > 0)
            {
              stats->wasted++;
              stats->wasted_hbm_bytes += hbm;
            }
        }
      else if (preload_step[i] >= 0)
        {
          stats->skipped++;
          if (skipped_steps != NULL)
            skipped_steps[preload_step[i]] = TRUE;
          preload_step[i] = -1;
          c->preloaded = FALSE;
          c->hbm_bytes = 0;
          c->cold_bytes = 0;
          c->load_s = 0;
          c->load_noc_s = 0;
        }
    }

  /* SRAM during each execute that runs, as elk_program_derive() derives
   * it, over the preloads that are left. */
  for (guint i = 0; i < n_ops; i++)
    {
      ElkOpCost *c = &costs[i];
      c->resident_bytes = 0;
      c->preload_number = 0;
      if (skipped_exec[i])
        continue;
      c->resident_bytes = c->hot_bytes;
      for (guint j = i + 1; j < n_ops; j++)
        if (preload_step[j] >= 0 && preload_step[j] < exec_step[i])
          {
            c->resident_bytes += costs[j].cold_bytes;
            c->preload_number++;
          }
    }
  if (stats->hits + stats->on_demand > 0)
    stats->hit_rate
        = (double) stats->hits / (double) (stats->hits + stats->on_demand);
  return stats;
}

/* A declared size must be undeclared or what the plans give. */
static gboolean
check_declared (const ElkOp *op, const char *field, guint64 declared,
                guint64 derived, GError **error)
{
  if (declared != ELK_PROGRAM_UNDECLARED && declared != derived)
    INVALID ("operator '%s': %s declared %" G_GUINT64_FORMAT " bytes, but "
             "its plans and the program's steps give %" G_GUINT64_FORMAT,
             op->name, field, declared, derived);
  return TRUE;
}

static gboolean
check_prediction (const ElkOp *op, const char *field, double value,
                  GError **error)
{
  if (!isnan (value) && !(value >= 0 && value < G_MAXDOUBLE))
    INVALID ("operator '%s': prediction %s is %g; expected a finite "
             "number of seconds, or NAN for none", op->name, field, value);
  return TRUE;
}

/**
 * elk_program_validate:
 * @program: a program
 * @plans: the plan tables it was compiled with (their graph, chip spec
 *   and options)
 * @error: return location for a #GError
 *
 * Checks what every backend relies on, from elk_program_derive(): the
 * structural rules (every operator executes exactly once and in graph
 * order; every operator that reads HBM is preloaded exactly once, before
 * its execute; no operator is preloaded after it ran); every plan is one
 * of the cost model's, using no more cores than exist, and each preload
 * plan leads to its execute plan; preload shares lie in (0, 1];
 * execution budgets hold the execute plan and fit the usable SRAM; under
 * rules R1-R3 the SRAM in use during each execute (the executing
 * operator's execution space plus the preload spaces of every later
 * operator whose preload was issued before that execute) fits each core;
 * every declared size equals the derived one; and every prediction is a
 * finite number of seconds or NAN.  Errors name the operator, the field
 * and both values.  Conditional operators count as taken, so that a
 * program that passes fits whatever its routers choose.
 *
 * Returns: %TRUE if the program is well-formed.
 */
gboolean
elk_program_validate (const ElkProgram *program,
                      const ElkPlanSet *plans,
                      GError **error)
{
  const ElkGraph *graph;
  const ElkChipSpec *spec;
  guint n_ops;
  guint64 usable;
  g_autofree gint *preload_step = NULL;
  g_autofree gint *exec_step = NULL;
  g_autofree ElkOpCost *costs = NULL;

  g_return_val_if_fail (program != NULL && plans != NULL, FALSE);
  graph = program->graph;
  spec = elk_plan_set_get_spec (plans);
  n_ops = elk_graph_get_n_ops (graph);
  usable = elk_chip_spec_get_usable_sram (spec);
  preload_step = g_new (gint, n_ops);
  exec_step = g_new (gint, n_ops);
  costs = derive (program, plans, preload_step, exec_step, error);
  if (costs == NULL)
    return FALSE;

  for (guint i = 0; i < n_ops; i++)
    {
      const ElkProgramOp *pop = &program->ops[i];
      const ElkOpCost *c = &costs[i];
      const ElkOp *op = elk_graph_get_op (graph, i);

      if (pop->exec_budget != ELK_PROGRAM_UNDECLARED
          && (pop->exec_budget < c->hot_bytes || pop->exec_budget > usable))
        INVALID ("operator '%s': exec_budget is %" G_GUINT64_FORMAT " bytes "
                 "per core; expected at least its execute plan's %"
                 G_GUINT64_FORMAT " and at most the %" G_GUINT64_FORMAT
                 " usable", op->name, pop->exec_budget, c->hot_bytes,
                 usable);
      if (c->resident_bytes > usable)
        INVALID ("while '%s' executes, cores need %" G_GUINT64_FORMAT
                 " bytes of SRAM (its execution space %" G_GUINT64_FORMAT
                 " plus the preload spaces of %u preloaded operators), but "
                 "only %" G_GUINT64_FORMAT " of the %" G_GUINT64_FORMAT
                 " per core are usable", op->name, c->resident_bytes,
                 c->hot_bytes, c->preload_number, usable,
                 spec->sram_per_core);
      if (!check_declared (op, "hot_bytes", pop->hot_bytes, c->hot_bytes,
                           error)
          || !check_declared (op, "cold_bytes", pop->cold_bytes,
                              c->cold_bytes, error)
          || !check_declared (op, "hbm_bytes", pop->hbm_bytes, c->hbm_bytes,
                              error)
          || !check_prediction (op, "est_exec_s", pop->est_exec_s, error)
          || !check_prediction (op, "est_warmup_s", pop->est_warmup_s, error)
          || !check_prediction (op, "est_load_s", pop->est_load_s, error)
          || !check_prediction (op, "est_noc_s", pop->est_noc_s, error))
        return FALSE;
    }
  if (program->assumptions
      & ~(ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION
          | ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK
          | ELK_PROGRAM_ASSUME_KNOWN_ROUTING))
    INVALID ("the program's assumptions 0x%x name unknown bits; expected "
             "ElkProgramAssumptions flags", (guint) program->assumptions);
  if (!isnan (program->estimate_s)
      && !(program->estimate_s >= 0 && program->estimate_s < G_MAXDOUBLE))
    INVALID ("the program's estimate is %g s; expected a finite number of "
             "seconds", program->estimate_s);
  return TRUE;
}
