/* elk-cost-model.c: the cost model schedulers plan with; the base type is
 * the analytic model (elk-cost-model.h).
 *
 * The analytic defaults return, number for number, what the plan tables
 * and elk_chip_spec_get_load_time() give, so that a plan set priced by the
 * base type plans exactly as the unpriced set does.
 */
#include "config.h"

#include <math.h>

#define ELK_USE_UNSTABLE_API
#include "elk-private.h"
#include "plan/elk-plan-private.h"

#include <elk/elk.h>

/**
 * elk_cost_model_get_type:
 *
 * Gets the type of the cost model base class (the analytic model).
 *
 * Returns: the #GType of #ElkCostModel.
 *
 * Since: 0.2
 */
G_DEFINE_TYPE (ElkCostModel, elk_cost_model, G_TYPE_OBJECT)

static gboolean
analytic_price_op (ElkCostModel *self,
                   const ElkPlanSet *plans,
                   guint op,
                   guint entry,
                   ElkOpPrice *price,
                   GError **error)
{
  const ElkPlanTable *t = elk_plan_set_get_table (plans, op);
  const ElkColdHot *ch;
  const ElkPlan *hot;

  (void) self;
  if (entry >= t->n_cold_hot)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "cost model: operator #%u has %u cold-hot entries, "
                   "asked for entry %u",
                   op, t->n_cold_hot, entry);
      return FALSE;
    }
  ch = &t->cold_hot[entry];
  hot = &t->plans[ch->hot_plan];
  *price = (ElkOpPrice){
    .exec_s = ch->exec_s,
    .compute_s = hot->compute_s,
    .noc_s
    = elk_plan_get_noc_demand (hot,
                               elk_plan_set_get_options (plans)->noc_demand),
    .warmup_s = ch->warmup_s,
  };
  return TRUE;
}

static gboolean
analytic_price_load (ElkCostModel *self,
                     const ElkPlanSet *plans,
                     guint op,
                     gint entry,
                     ElkLoadPrice *price,
                     GError **error)
{
  const ElkPlanTable *t = elk_plan_set_get_table (plans, op);
  const ElkChipSpec *spec = elk_plan_set_get_spec (plans);
  guint64 cold;

  (void) self;
  if (entry >= (gint) t->n_cold_hot)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "cost model: operator #%u has %u cold-hot entries, "
                   "asked for the preload of entry %d",
                   op, t->n_cold_hot, entry);
      return FALSE;
    }
  cold = entry < 0 ? t->min_cold_bytes : t->cold_hot[entry].cold_bytes;
  /* The two terms of elk_chip_spec_get_load_time(), so that
   * max(hbm_s, deliver_s / share) is its number to the bit. */
  if (t->hbm_bytes == 0)
    *price = (ElkLoadPrice){ 0, 0 };
  else
    *price = (ElkLoadPrice){ (double) t->hbm_bytes / spec->hbm_bw,
                             (double) cold / spec->link_bw };
  return TRUE;
}

/* The cold-hot entry of @t whose plans are @pop's, or -1. */
static gint
find_entry (const ElkPlanTable *t, const ElkProgramOp *pop)
{
  for (guint e = 0; e < t->n_cold_hot; e++)
    if (elk__plan_equal (&t->plans[t->cold_hot[e].hot_plan], &pop->exec_plan)
        && elk__plan_equal (&t->plans[t->cold_hot[e].cold_plan],
                            &pop->preload_plan))
      return (gint) e;
  return -1;
}

/* The analytic timeline over @program, each operator priced by @plans'
 * prices: what elk_program_derive() derives, with the execution, its own
 * traffic, its distribution and the floor of its preload replaced by the
 * priced set's numbers for the operator's cold-hot entry.  An operator
 * whose plans are no entry of its table (a hand-made program) keeps the
 * analytic numbers. */
static gboolean
analytic_price_program (ElkCostModel *self,
                        ElkProgram *program,
                        const ElkPlanSet *plans,
                        ElkTimelinePriority priority,
                        double *latency_s,
                        GError **error)
{
  const ElkPlanSet *base = elk_plan_set_get_base (plans);
  guint n = elk_graph_get_n_ops (elk_program_get_graph (program));
  guint n_steps = elk_program_get_n_steps (program);
  g_autofree ElkOpCost *costs = NULL;
  g_autofree ElkTimelineOp *ops = NULL;
  g_autofree ElkStep *steps = NULL;
  ElkTimelineResult tr;
  ElkProgramAssumptions assume = elk_program_get_assumptions (program);

  (void) self;
  costs = elk_program_derive (program, base, error);
  if (costs == NULL)
    return FALSE;
  ops = g_new (ElkTimelineOp, n);
  for (guint i = 0; i < n; i++)
    {
      const ElkPlanTable *t = elk_plan_set_get_table (plans, i);
      gint e = plans == base ? -1
                             : find_entry (t, elk_program_peek_op (program, i));

      elk_timeline_op_init_from_cost (&ops[i], &costs[i]);
      if (e >= 0)
        {
          ElkOpPrice p;
          double noc;
          elk_plan_set_get_op_price (plans, i, (guint) e, &p);
          ops[i].exec_s
              = p.exec_s
                + (assume & ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION ? 0
                                                                 : p.warmup_s);
          ops[i].shift_s = assume & ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK
                               ? 0
                               : p.noc_s;
          if (costs[i].preloaded && costs[i].hbm_bytes > 0)
            ops[i].min_load_s
                = elk_plan_set_get_load_time (plans, i, e,
                                              costs[i].preload_share, &noc);
        }
    }
  steps = g_new (ElkStep, MAX (n_steps, 1u));
  for (guint s = 0; s < n_steps; s++)
    steps[s] = *elk_program_get_step (program, s);
  if (!elk_timeline_run (elk_plan_set_get_spec (plans), 1.0, priority, n, ops,
                         n_steps, steps, &tr, error))
    return FALSE;
  *latency_s = tr.latency_s;
  return TRUE;
}

static void
elk_cost_model_class_init (ElkCostModelClass *klass)
{
  klass->price_op = analytic_price_op;
  klass->price_load = analytic_price_load;
  klass->price_program = analytic_price_program;
}

static void
elk_cost_model_init (ElkCostModel *self)
{
  (void) self;
}

/**
 * elk_cost_model_new_analytic:
 *
 * The analytic model: the plan tables' numbers and the load model of
 * elk_chip_spec_get_load_time(), the paper's, which the analytic chip
 * measures.
 *
 * Returns: (transfer full): a new cost model of the base type
 *
 * Since: 0.2
 */
ElkCostModel *
elk_cost_model_new_analytic (void)
{
  return g_object_new (ELK_TYPE_COST_MODEL, NULL);
}

/**
 * elk_cost_model_is_analytic:
 * @self: a cost model
 *
 * Tells the analytic model from a chip's.
 *
 * Returns: whether @self is the analytic model (an instance of the base
 *   type, not of a subclass)
 *
 * Since: 0.2
 */
gboolean
elk_cost_model_is_analytic (ElkCostModel *self)
{
  g_return_val_if_fail (ELK_IS_COST_MODEL (self), FALSE);
  return G_OBJECT_TYPE (self) == ELK_TYPE_COST_MODEL;
}

/* A model's price must be a finite, non-negative number of seconds; a
 * model that breaks this is a plugin's broken contract, named. */
static gboolean
check_seconds (ElkCostModel *self,
               const char *what,
               guint op,
               gint entry,
               const char *field,
               double value,
               GError **error)
{
  if (isfinite (value) && value >= 0)
    return TRUE;
  g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT,
               "%s: %s() gave %s = %g s for operator #%u entry %d; expected "
               "a finite number of seconds, 0 or more",
               G_OBJECT_TYPE_NAME (self), what, field, value, op, entry);
  return FALSE;
}

/**
 * elk_cost_model_price_op:
 * @self: a cost model
 * @plans: the analytic plan set (from elk_plan_set_new())
 * @op: an operator of @plans' graph
 * @entry: an index into @op's cold-hot table
 * @price: (out caller-allocates): the price
 * @error: return location for a #GError
 *
 * Prices one cold-hot entry of an operator.  A price that is not a finite
 * number of seconds, 0 or more, is an %ELK_PLUGIN_ERROR_CONTRACT error.
 *
 * Returns: %TRUE on success, %FALSE with @error set
 *
 * Since: 0.2
 */
gboolean
elk_cost_model_price_op (ElkCostModel *self,
                         const ElkPlanSet *plans,
                         guint op,
                         guint entry,
                         ElkOpPrice *price,
                         GError **error)
{
  g_return_val_if_fail (ELK_IS_COST_MODEL (self), FALSE);
  g_return_val_if_fail (plans != NULL && price != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!ELK_COST_MODEL_GET_CLASS (self)->price_op (self, plans, op, entry, price,
                                                  error))
    return FALSE;
  return check_seconds (self, "price_op", op, (gint) entry, "exec_s",
                        price->exec_s, error)
         && check_seconds (self, "price_op", op, (gint) entry, "compute_s",
                           price->compute_s, error)
         && check_seconds (self, "price_op", op, (gint) entry, "noc_s",
                           price->noc_s, error)
         && check_seconds (self, "price_op", op, (gint) entry, "warmup_s",
                           price->warmup_s, error);
}

/**
 * elk_cost_model_price_load:
 * @self: a cost model
 * @plans: the analytic plan set
 * @op: an operator of @plans' graph
 * @entry: an index into @op's cold-hot table, or -1 for the even,
 *   unreplicated shard of its HBM data
 * @price: (out caller-allocates): the price
 * @error: return location for a #GError
 *
 * Prices an operator's preload at one preload state.
 *
 * Returns: %TRUE on success, %FALSE with @error set
 *
 * Since: 0.2
 */
gboolean
elk_cost_model_price_load (ElkCostModel *self,
                           const ElkPlanSet *plans,
                           guint op,
                           gint entry,
                           ElkLoadPrice *price,
                           GError **error)
{
  g_return_val_if_fail (ELK_IS_COST_MODEL (self), FALSE);
  g_return_val_if_fail (plans != NULL && price != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!ELK_COST_MODEL_GET_CLASS (self)->price_load (self, plans, op, entry,
                                                    price, error))
    return FALSE;
  return check_seconds (self, "price_load", op, entry, "hbm_s", price->hbm_s,
                        error)
         && check_seconds (self, "price_load", op, entry, "deliver_s",
                           price->deliver_s, error);
}

/**
 * elk_cost_model_price_program:
 * @self: a cost model
 * @program: a program compiled against @plans
 * @plans: the plan set @program was compiled against (priced or not)
 * @priority: who yields on a busy interconnect, for a model that runs the
 *   analytic timeline
 * @latency_s: (out): the program's latency under @self
 * @error: return location for a #GError
 *
 * Prices a whole program, for a scheduler that chooses among candidate
 * programs by the model of the chip it compiles for.
 *
 * Returns: %TRUE on success, %FALSE with @error set
 *
 * Since: 0.2
 */
gboolean
elk_cost_model_price_program (ElkCostModel *self,
                              ElkProgram *program,
                              const ElkPlanSet *plans,
                              ElkTimelinePriority priority,
                              double *latency_s,
                              GError **error)
{
  g_return_val_if_fail (ELK_IS_COST_MODEL (self), FALSE);
  g_return_val_if_fail (program != NULL && plans != NULL, FALSE);
  g_return_val_if_fail (latency_s != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!ELK_COST_MODEL_GET_CLASS (self)->price_program (self, program, plans,
                                                       priority, latency_s,
                                                       error))
    return FALSE;
  if (!(*latency_s > 0 && isfinite (*latency_s)))
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT,
                   "%s: price_program() gave %g s; expected a positive "
                   "finite latency",
                   G_OBJECT_TYPE_NAME (self), *latency_s);
      return FALSE;
    }
  return TRUE;
}

/* Checks that @q names an activation edge of @plans' graph and entries
 * of its operators' tables. */
static gboolean
check_relayout_query (const ElkPlanSet *plans,
                      const ElkRelayoutQuery *q,
                      GError **error)
{
  ElkGraph *graph = elk_plan_set_get_graph (plans);
  guint n_ops = elk_graph_get_n_ops (graph), np, nc;
  const ElkOp *p, *c;

  if (q->producer >= n_ops || q->consumer >= n_ops)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "cost model: re-layout between operators #%u and #%u of "
                   "'%s', which has %u operators",
                   q->producer, q->consumer, elk_graph_get_name (graph), n_ops);
      return FALSE;
    }
  p = elk_graph_get_op (graph, q->producer);
  c = elk_graph_get_op (graph, q->consumer);
  if (q->operand == 0 || q->operand >= c->n_operands
      || c->tensors[q->operand] != p->tensors[0])
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "cost model: operand %u of operator '%s' (#%u) is not "
                   "the output of operator '%s' (#%u); expected an input "
                   "operand that reads it",
                   q->operand, c->name, q->consumer, p->name, q->producer);
      return FALSE;
    }
  np = elk_plan_set_get_table (plans, q->producer)->n_cold_hot;
  nc = elk_plan_set_get_table (plans, q->consumer)->n_cold_hot;
  if (q->producer_entry >= (gint) np || q->consumer_entry >= nc)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "cost model: re-layout from entry %d of operator #%u to "
                   "entry %u of operator #%u; expected entries of their "
                   "cold-hot tables (%u and %u entries)",
                   q->producer_entry, q->producer, q->consumer_entry,
                   q->consumer, np, nc);
      return FALSE;
    }
  return TRUE;
}

/**
 * elk_cost_model_price_relayout:
 * @self: a cost model
 * @plans: the analytic plan set
 * @query: the producer and consumer, their entries and the operand
 * @price: (out caller-allocates): the price
 * @error: return location for a #GError
 *
 * Prices taking the producer's output from the layout its entry's
 * execute plan leaves it in to the layout the consumer's entry's execute
 * plan reads it in.  The analytic model prices nothing (all zero).  An
 * operand that is not the producer's output, an entry out of range, or a
 * time that is not a finite, non-negative number are errors.
 *
 * Since: 0.2
 *
 * Returns: %TRUE on success, %FALSE with @error set
 */
gboolean
elk_cost_model_price_relayout (ElkCostModel *self,
                               const ElkPlanSet *plans,
                               const ElkRelayoutQuery *query,
                               ElkRelayoutPrice *price,
                               GError **error)
{
  g_return_val_if_fail (ELK_IS_COST_MODEL (self) && plans != NULL, FALSE);
  g_return_val_if_fail (query != NULL && price != NULL, FALSE);

  /* The paper's model (no price_relayout) charges no re-layout between
   * operators: a producer's output shuffle, in its plan's shuffle_s,
   * leaves the tensor where every consumer reads it. */
  *price = (ElkRelayoutPrice){ 0, 0, 0, 0 };
  if (!check_relayout_query (plans, query, error))
    return FALSE;
  if (ELK_COST_MODEL_GET_CLASS (self)->price_relayout != NULL
      && !ELK_COST_MODEL_GET_CLASS (self)->price_relayout (self, plans, query,
                                                           price, error))
    return FALSE;
  return check_seconds (self, "price_relayout", query->consumer,
                        (gint) query->consumer_entry, "time_s", price->time_s,
                        error);
}

/**
 * elk_layout_choice_get_type:
 *
 * Returns: the #GType of #ElkLayoutChoice ("ElkLayoutChoice")
 *
 * Since: 0.2
 */
G_DEFINE_ENUM_TYPE (ElkLayoutChoice,
                    elk_layout_choice,
                    G_DEFINE_ENUM_VALUE (ELK_LAYOUT_IGNORE, "ignore"),
                    G_DEFINE_ENUM_VALUE (ELK_LAYOUT_AWARE, "aware"))

/**
 * elk_cost_model_choice_get_type:
 *
 * Returns: the #GType of #ElkCostModelChoice ("ElkCostModelChoice")
 *
 * Since: 0.2
 */
G_DEFINE_ENUM_TYPE (ElkCostModelChoice,
                    elk_cost_model_choice,
                    G_DEFINE_ENUM_VALUE (ELK_COST_MODEL_CHIP, "chip"),
                    G_DEFINE_ENUM_VALUE (ELK_COST_MODEL_ANALYTIC, "analytic"))
