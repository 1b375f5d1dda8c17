/* elk-plan-set.c: the plan tables of a whole graph.
 *
 * Operators with the same signature (elk_op_dup_signature: kind, extents,
 * accesses, operand sizes and origins) have the same plan space, so the set
 * builds one table per distinct signature, on a GThreadPool, and maps
 * every operator to its table.  Each table is built by one thread from a
 * fixed enumeration order, and errors are reported for the first failing
 * operator in graph order, so the result does not depend on the number of
 * threads.  After elk_plan_set_new() returns, the set is never written
 * again and may be read from any thread.
 */
#include "config.h"

#include <string.h>

#include "elk-private.h"
#include "elk-plan-private.h"

struct _ElkPlanSet
{
  gatomicrefcount ref_count;
  ElkGraph *graph;
  ElkChipSpec *spec;
  ElkPlanOptions options;
  guint n_tables;
  ElkPlanTable *tables;   /* distinct, in order of first operator */
  guint *op_table;        /* operator -> index into tables */
  /* A set priced by a chip's cost model (elk_plan_set_new_priced()): the
   * analytic set it re-prices, the model, and per distinct table the
   * prices of its cold-hot entries and of its preloads (n_cold_hot + 1,
   * the last one at the even shard).  All NULL for an analytic set. */
  ElkPlanSet *base;
  ElkCostModel *model;
  ElkOpPrice **prices;
  ElkLoadPrice **loads;
  /* The model whose re-layout prices the engine charges
   * (elk_plan_set_set_relayout_model()), or NULL. */
  ElkCostModel *relayout;
  /* The chip a scheduler may measure its candidates on
   * (elk_plan_set_set_measurer()), or NULL. */
  ElkChip *measurer;
};

/* libelk's G_DEFINE_BOXED_TYPE without the -Wpedantic trip (elk-private.h). */

/**
 * elk_plan_set_get_type:
 *
 * The boxed type of #ElkPlanSet.  Copying the boxed value takes a reference
 * (elk_plan_set_ref()) and freeing it drops one (elk_plan_set_unref()).
 *
 * Returns: the #GType of #ElkPlanSet.
 */
ELK_DEFINE_BOXED_TYPE (ElkPlanSet, elk_plan_set, elk_plan_set_ref,
                       elk_plan_set_unref)

/**
 * elk_plan_enumeration_get_type:
 *
 * Gets the type of the plan-space enumeration.
 *
 * Returns: the #GType of the #ElkPlanEnumeration enumeration.
 */
G_DEFINE_ENUM_TYPE (ElkPlanEnumeration,
                    elk_plan_enumeration,
                    G_DEFINE_ENUM_VALUE (ELK_PLAN_ENUMERATION_T10, "t10"),
                    G_DEFINE_ENUM_VALUE (ELK_PLAN_ENUMERATION_ARTIFACT,
                                         "artifact"))

/**
 * elk_noc_demand_get_type:
 *
 * Gets the type of the interconnect-demand enumeration.
 *
 * Returns: the #GType of the #ElkNocDemand enumeration.
 */
G_DEFINE_ENUM_TYPE (ElkNocDemand,
                    elk_noc_demand,
                    G_DEFINE_ENUM_VALUE (ELK_NOC_DEMAND_SHIFT_SHUFFLE,
                                         "shift-shuffle"),
                    G_DEFINE_ENUM_VALUE (ELK_NOC_DEMAND_SHIFT, "shift"))

/**
 * elk_plan_get_noc_demand:
 * @plan: an evaluated plan
 * @demand: what counts as the execution's own traffic
 *
 * Gets how much interconnect time a plan's execution needs for itself.
 *
 * Returns: the interconnect time @plan's execution needs for its own
 *   traffic under @demand (see #ElkNocDemand), in seconds.
 */
double
elk_plan_get_noc_demand (const ElkPlan *plan, ElkNocDemand demand)
{
  return demand == ELK_NOC_DEMAND_SHIFT_SHUFFLE
           ? plan->shift_s + plan->shuffle_s
           : plan->shift_s;
}

typedef struct
{
  ElkPlanSet *set;
  guint table;
  GError *error;
} BuildJob;

static void
build_job (gpointer data, gpointer user_data)
{
  BuildJob *job = data;
  ElkPlanSet *set = job->set;
  ElkPlanTable *table = &set->tables[job->table];
  const ElkOp *op = elk_graph_get_op (set->graph, table->op);

  elk__plan_build_table (set->graph, op, set->spec, &set->options,
                         set->options.enumeration
                           == ELK_PLAN_ENUMERATION_ARTIFACT,
                         table, &job->error);
}

/* Larger iteration spaces with more loop dimensions take longer to search;
 * starting them first shortens the tail of the pool. */
static gint
job_compare (gconstpointer a, gconstpointer b, gpointer user_data)
{
  const BuildJob *x = a, *y = b;
  const ElkPlanSet *set = user_data;
  const ElkOp *ox = elk_graph_get_op (set->graph, set->tables[x->table].op);
  const ElkOp *oy = elk_graph_get_op (set->graph, set->tables[y->table].op);

  if (ox->n_dims != oy->n_dims)
    return ox->n_dims > oy->n_dims ? -1 : 1;
  return x->table < y->table ? -1 : x->table > y->table;
}

static void
plan_set_free (ElkPlanSet *set)
{
  for (guint i = 0; i < set->n_tables; i++)
    {
      elk__plan_table_clear (&set->tables[i]);
      if (set->prices != NULL)
        g_free (set->prices[i]);
      if (set->loads != NULL)
        g_free (set->loads[i]);
    }
  g_free (set->prices);
  g_free (set->loads);
  g_clear_object (&set->model);
  g_clear_object (&set->relayout);
  g_clear_object (&set->measurer);
  g_clear_pointer (&set->base, elk_plan_set_unref);
  g_free (set->tables);
  g_free (set->op_table);
  g_clear_pointer (&set->spec, elk_chip_spec_free);
  g_clear_pointer (&set->graph, elk_graph_unref);
  g_free (set);
}

/**
 * elk_plan_set_new:
 * @graph: the operators
 * @spec: the chip; copied
 * @options: (nullable): floors, threads and the plan space; %NULL for
 *   the T10 defaults
 * @error: return location for a #GError
 *
 * Builds the plan table of every distinct operator of @graph on @spec.
 * An operator that fits no plan fails the whole set with
 * %ELK_SCHEDULE_ERROR_DOES_NOT_FIT, naming the operator, its shape, the
 * smallest footprint found and the usable SRAM.
 *
 * Returns: (transfer full) (nullable): the plan set, or %NULL with @error.
 */
ElkPlanSet *
elk_plan_set_new (ElkGraph *graph,
                  const ElkChipSpec *spec,
                  const ElkPlanOptions *options,
                  GError **error)
{
  ElkPlanSet *set;
  g_autoptr (GHashTable) signatures = NULL;
  BuildJob *jobs;
  guint n_ops, n_threads;
  GError *first = NULL;

  g_return_val_if_fail (graph != NULL, NULL);
  g_return_val_if_fail (spec != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  g_return_val_if_fail (options == NULL
                          || options->enumeration
                               == ELK_PLAN_ENUMERATION_T10
                          || options->enumeration
                               == ELK_PLAN_ENUMERATION_ARTIFACT, NULL);
  g_return_val_if_fail (options == NULL
                          || options->noc_demand == ELK_NOC_DEMAND_SHIFT
                          || options->noc_demand
                               == ELK_NOC_DEMAND_SHIFT_SHUFFLE, NULL);

  if (!elk_chip_spec_validate (spec, error))
    return NULL;

  set = g_new0 (ElkPlanSet, 1);
  g_atomic_ref_count_init (&set->ref_count);
  set->graph = elk_graph_ref (graph);
  set->spec = elk_chip_spec_copy (spec);
  if (options != NULL)
    set->options = *options;

  n_ops = elk_graph_get_n_ops (graph);
  set->op_table = g_new (guint, n_ops);
  set->tables = g_new0 (ElkPlanTable, MAX (n_ops, 1u));
  signatures = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < n_ops; i++)
    {
      const ElkOp *op = elk_graph_get_op (graph, i);
      char *sig = elk_op_dup_signature (graph, op);
      gpointer found;

      if (g_hash_table_lookup_extended (signatures, sig, NULL, &found))
        {
          set->op_table[i] = GPOINTER_TO_UINT (found);
          g_free (sig);
          continue;
        }
      set->op_table[i] = set->n_tables;
      set->tables[set->n_tables].op = i;
      g_hash_table_insert (signatures, sig,
                           GUINT_TO_POINTER (set->n_tables));
      set->n_tables++;
    }

  jobs = g_new0 (BuildJob, MAX (set->n_tables, 1u));
  for (guint i = 0; i < set->n_tables; i++)
    {
      jobs[i].set = set;
      jobs[i].table = i;
    }

  n_threads = set->options.n_threads != 0 ? set->options.n_threads
                                          : g_get_num_processors ();
  n_threads = MIN (n_threads, set->n_tables);
  if (n_threads <= 1)
    {
      for (guint i = 0; i < set->n_tables; i++)
        build_job (&jobs[i], NULL);
    }
  else
    {
      GThreadPool *pool = g_thread_pool_new (build_job, NULL,
                                             (gint) n_threads, TRUE, error);
      if (pool == NULL)
        {
          g_free (jobs);
          plan_set_free (set);
          return NULL;
        }
      g_thread_pool_set_sort_function (pool, job_compare, set);
      for (guint i = 0; i < set->n_tables; i++)
        g_thread_pool_push (pool, &jobs[i], NULL);
      g_thread_pool_free (pool, FALSE, TRUE);
    }

  /* Tables are numbered in graph order, so the first failure in table
   * order is the first failing operator of the graph. */
  for (guint i = 0; i < set->n_tables; i++)
    {
      if (jobs[i].error != NULL && first == NULL)
        first = g_steal_pointer (&jobs[i].error);
      g_clear_error (&jobs[i].error);
    }
  g_free (jobs);
  if (first != NULL)
    {
      g_propagate_error (error, first);
      plan_set_free (set);
      return NULL;
    }
  set->tables = g_renew (ElkPlanTable, set->tables, MAX (set->n_tables, 1u));
  return set;
}

/**
 * elk_plan_set_ref:
 * @set: a plan set
 *
 * Takes a reference to @set.  A set is read-only once built, so threads
 * and schedulers share it through references.
 *
 * Returns: (transfer full): @set
 */
ElkPlanSet *
elk_plan_set_ref (ElkPlanSet *set)
{
  g_return_val_if_fail (set != NULL, NULL);
  g_atomic_ref_count_inc (&set->ref_count);
  return set;
}

/**
 * elk_plan_set_unref:
 * @set: (transfer full): a plan set
 *
 * Drops a reference to @set and frees it, its tables and its copy of the
 * chip spec with the last one.
 */
void
elk_plan_set_unref (ElkPlanSet *set)
{
  g_return_if_fail (set != NULL);
  if (g_atomic_ref_count_dec (&set->ref_count))
    plan_set_free (set);
}

/**
 * elk_plan_set_get_table:
 * @set: a plan set
 * @op: an operator index of the set's graph
 *
 * Gets the plan table of one operator.
 *
 * Returns: (transfer none): the table of @op, owned by @set and shared with
 *   every operator of the same signature.
 */
const ElkPlanTable *
elk_plan_set_get_table (const ElkPlanSet *set, guint op)
{
  g_return_val_if_fail (set != NULL, NULL);
  g_return_val_if_fail (op < elk_graph_get_n_ops (set->graph), NULL);
  return &set->tables[set->op_table[op]];
}

/**
 * elk_plan_set_get_n_distinct:
 * @set: a plan set
 *
 * Counts the distinct plan tables of the set.
 *
 * Returns: the number of distinct tables (operator signatures).
 */
guint
elk_plan_set_get_n_distinct (const ElkPlanSet *set)
{
  g_return_val_if_fail (set != NULL, 0);
  return set->n_tables;
}

/**
 * elk_plan_set_get_distinct:
 * @set: a plan set
 * @index: below elk_plan_set_get_n_distinct()
 *
 * Gets one of the distinct plan tables.
 *
 * Returns: (transfer none): distinct table @index, owned by @set; tables are
 *   numbered in the order of the first operator that uses them.
 */
const ElkPlanTable *
elk_plan_set_get_distinct (const ElkPlanSet *set, guint index)
{
  g_return_val_if_fail (set != NULL, NULL);
  g_return_val_if_fail (index < set->n_tables, NULL);
  return &set->tables[index];
}

/**
 * elk_plan_set_get_spec:
 * @set: a plan set
 *
 * Gets the chip spec the set was built for.
 *
 * Returns: (transfer none): the set's copy of the chip spec.
 */
const ElkChipSpec *
elk_plan_set_get_spec (const ElkPlanSet *set)
{
  g_return_val_if_fail (set != NULL, NULL);
  return set->spec;
}

/**
 * elk_plan_set_get_options:
 * @set: a plan set
 *
 * Gets the options the set was built with.
 *
 * Returns: (transfer none): the options the tables were built with (the
 *   defaults when elk_plan_set_new() was given %NULL), owned by @set.
 */
const ElkPlanOptions *
elk_plan_set_get_options (const ElkPlanSet *set)
{
  return &set->options;
}

/**
 * elk_plan_set_get_graph:
 * @set: a plan set
 *
 * Gets the graph the set was built for.
 *
 * Returns: (transfer none): the graph the set was built for.
 */
ElkGraph *
elk_plan_set_get_graph (const ElkPlanSet *set)
{
  g_return_val_if_fail (set != NULL, NULL);
  return set->graph;
}

/**
 * elk_plan_table_get_fastest:
 * @table: a plan table
 *
 * Gets the fastest plan of a table.
 *
 * Returns: (transfer none): the fastest plan (the largest of the front),
 *   owned by @table.
 */
const ElkPlan *
elk_plan_table_get_fastest (const ElkPlanTable *table)
{
  g_return_val_if_fail (table != NULL && table->n_hot > 0, NULL);
  return &table->plans[table->hot_front[table->n_hot - 1]];
}

/**
 * elk_plan_table_get_smallest:
 * @table: a plan table
 *
 * Gets the plan of a table with the smallest execute-state footprint.
 *
 * Returns: (transfer none): the plan with the smallest hot footprint (the
 *   slowest of the front), owned by @table.
 */
const ElkPlan *
elk_plan_table_get_smallest (const ElkPlanTable *table)
{
  g_return_val_if_fail (table != NULL && table->n_hot > 0, NULL);
  return &table->plans[table->hot_front[0]];
}

/**
 * elk_plan_table_best_within:
 * @table: a plan table
 * @hot_budget: per-core bytes available to the executing operator
 *
 * Gets the fastest plan of a table that fits a per-core budget.
 *
 * Returns: (transfer none) (nullable): the fastest plan whose hot
 *   footprint is at most @hot_budget, owned by @table, or %NULL if even the
 *   smallest plan is larger.
 */
const ElkPlan *
elk_plan_table_best_within (const ElkPlanTable *table, guint64 hot_budget)
{
  guint lo = 0, hi;

  g_return_val_if_fail (table != NULL, NULL);
  hi = table->n_hot;
  while (lo < hi)
    {
      guint mid = (lo + hi) / 2;
      if (table->plans[table->hot_front[mid]].hot_bytes <= hot_budget)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo == 0 ? NULL : &table->plans[table->hot_front[lo - 1]];
}

/**
 * elk_plan_table_lookup:
 * @table: a plan table
 * @cold_bytes: the per-core preload footprint the operator has
 * @hot_budget: the per-core bytes its execute state may take, cold bytes
 *   included (an absolute hot size, not the increment over @cold_bytes)
 *
 * Looks up the cold-hot table.  The cold group used is the one of exactly
 * @cold_bytes if the table has it, otherwise the largest cold size below
 * @cold_bytes (a smaller preload layout fits where a larger one was
 * reserved); smaller groups are not searched further.  Within the group the
 * entry with hot_bytes <= @hot_budget and the least exec_s + warmup_s is
 * returned, the smaller hot size on ties.
 *
 * Returns: (transfer none) (nullable): the entry, owned by @table, or %NULL
 *   if the table has no cold size <= @cold_bytes or none of that group fits
 *   @hot_budget.
 */
const ElkColdHot *
elk_plan_table_lookup (const ElkPlanTable *table,
                       guint64 cold_bytes,
                       guint64 hot_budget)
{
  guint lo = 0, hi;
  guint64 group;
  const ElkColdHot *best = NULL;

  g_return_val_if_fail (table != NULL, NULL);
  hi = table->n_cold_hot;
  while (lo < hi)
    {
      guint mid = (lo + hi) / 2;
      if (table->cold_hot[mid].cold_bytes <= cold_bytes)
        lo = mid + 1;
      else
        hi = mid;
    }
  if (lo == 0)
    return NULL;
  group = table->cold_hot[lo - 1].cold_bytes;
  for (guint i = lo; i > 0 && table->cold_hot[i - 1].cold_bytes == group; i--)
    {
      const ElkColdHot *e = &table->cold_hot[i - 1];
      if (e->hot_bytes > hot_budget)
        continue;
      /* Walking down in hot size, "<=" prefers the smaller on ties. */
      if (best == NULL
          || e->exec_s + e->warmup_s <= best->exec_s + best->warmup_s)
        best = e;
    }
  return best;
}

/**
 * elk_plan_evaluate:
 * @graph: the graph of the operator
 * @op: an operator index
 * @spec: the chip
 * @plan: (inout): a plan whose spatial and temporal fields are set
 * @error: return location for a #GError
 *
 * Checks that @plan's spatial vector and temporal matrix obey the plan
 * space rules (parts within the extents, at most the chip's cores; factors
 * dividing replica counts, only on indexed dimensions, in divisibility
 * chains, within per-core extents, mesh rules) and fills in every other
 * field with the cost model.  The utilisation and padding floors are not
 * applied: they prune the search, they do not make a plan illegal.
 *
 * Returns: %TRUE on success; %FALSE with %ELK_SCHEDULE_ERROR_INVALID_PROGRAM
 *   if the plan breaks a rule.
 */
gboolean
elk_plan_evaluate (const ElkGraph *graph,
                   guint op,
                   const ElkChipSpec *spec,
                   ElkPlan *plan,
                   GError **error)
{
  PlanSearch *s;
  const PlanDimCand *chosen[ELK_MAX_DIMS];
  PlanDimCand storage[ELK_MAX_DIMS];
  PlanEval e;
  ElkPlan in;
  gboolean ok;

  g_return_val_if_fail (graph != NULL && spec != NULL && plan != NULL, FALSE);
  g_return_val_if_fail (op < elk_graph_get_n_ops (graph), FALSE);

  in = *plan;
  s = elk__plan_search_new (graph, elk_graph_get_op (graph, op), spec, NULL);
  ok = elk__plan_search_check (s, &in, chosen, storage, error);
  if (ok)
    {
      elk__plan_search_eval (s, chosen, &e, FALSE);
      elk__plan_search_fill (s, chosen, &e, plan);
    }
  elk__plan_search_free (s);
  return ok;
}

/**
 * elk_plan_get_warmup:
 * @graph: the graph of the operator
 * @op: an operator index
 * @spec: the chip
 * @cold: an evaluated preload-state plan
 * @hot: an evaluated execute-state plan of the same spatial vector, every
 *   factor of which divides @cold's
 * @noc_bytes: (out) (optional): bytes moved between cores, all cores
 * @error: return location for a #GError
 *
 * Prices the data distribution that turns an operator's preload-state
 * layout into its execute-state layout.
 *
 * Returns: the data-distribution time in seconds from @cold to @hot, or a
 *   negative value with %ELK_SCHEDULE_ERROR_INVALID_PROGRAM if the pair is
 *   not compatible.
 */
double
elk_plan_get_warmup (const ElkGraph *graph,
                     guint op,
                     const ElkChipSpec *spec,
                     const ElkPlan *cold,
                     const ElkPlan *hot,
                     double *noc_bytes,
                     GError **error)
{
  PlanSearch *s;
  double cycles;
  const ElkOp *o;

  g_return_val_if_fail (graph != NULL && spec != NULL, -1);
  g_return_val_if_fail (cold != NULL && hot != NULL, -1);
  g_return_val_if_fail (op < elk_graph_get_n_ops (graph), -1);

  o = elk_graph_get_op (graph, op);
  for (guint d = 0; d < o->n_dims; d++)
    {
      gboolean ok = cold->spatial[d] == hot->spatial[d];
      for (guint v = 0; v < o->n_operands && ok; v++)
        ok = hot->temporal[d][v] >= 1
             && cold->temporal[d][v] % hot->temporal[d][v] == 0;
      if (!ok)
        {
          g_set_error (error, ELK_SCHEDULE_ERROR,
                       ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
                       "operator '%s': a cold plan reaches a hot plan only "
                       "with the same spatial vector and cold rotation "
                       "factors that are multiples of the hot ones (loop "
                       "dimension '%c' differs)", o->name, o->dim_names[d]);
          return -1;
        }
    }
  s = elk__plan_search_new (graph, o, spec, NULL);
  cycles = elk__plan_search_warmup (s, cold, hot, noc_bytes);
  elk__plan_search_free (s);
  return cycles / spec->clock_hz;
}

/* Names the first field in which @a and @b differ, or returns NULL when
 * they agree on every field (padding bytes aside, so a plan a scheduler
 * assembled field by field compares equal). */
static const char *
plan_first_difference (const ElkPlan *a, const ElkPlan *b,
                       double *va, double *vb)
{
#define CMP(field)                                                           \
  if (a->field != b->field)                                                  \
    {                                                                        \
      *va = (double) a->field;                                               \
      *vb = (double) b->field;                                               \
      return #field;                                                         \
    }
  CMP (n_dims);
  CMP (n_operands);
  for (guint d = 0; d < ELK_MAX_DIMS; d++)
    {
      CMP (spatial[d]);
      for (guint v = 0; v < ELK_MAX_OPERANDS; v++)
        CMP (temporal[d][v]);
    }
  CMP (cores_used);
  CMP (steps);
  CMP (hot_bytes);
  CMP (cold_bytes);
  CMP (compute_s);
  CMP (shift_s);
  CMP (shuffle_s);
  CMP (time_s);
  CMP (noc_bytes);
  for (guint v = 0; v < ELK_MAX_OPERANDS; v++)
    {
      CMP (replicas[v]);
      CMP (operand_bytes[v]);
    }
  CMP (shift_events);
  CMP (shift_bytes);
#undef CMP
  return NULL;
}

/* Whether two plans agree on every field (padding aside). */
gboolean
elk__plan_equal (const ElkPlan *a, const ElkPlan *b)
{
  double va, vb;

  return plan_first_difference (a, b, &va, &vb) == NULL;
}

static gboolean
plan_same_vectors (const ElkPlan *a, const ElkPlan *b)
{
  return a->n_dims == b->n_dims
         && memcmp (a->spatial, b->spatial, sizeof (a->spatial)) == 0
         && memcmp (a->temporal, b->temporal, sizeof (a->temporal)) == 0;
}

/**
 * elk__plan_set_check_plan:
 * @set: the plan tables the program was compiled with
 * @op: an operator of the set's graph
 * @plan: a plan a program names for @op
 * @what: "execute plan" or "preload plan", for messages
 *
 * A plan is believed only for its spatial vector and rotation factors:
 * every other field must be what the cost model gives them.  @plan passes
 * when it equals, field by field, a plan of @op's table (the artifact's
 * plan space included) or its own re-evaluation by elk_plan_evaluate().
 *
 * Returns: %TRUE if it passes; otherwise %FALSE with
 *   %ELK_SCHEDULE_ERROR_INVALID_PROGRAM naming the operator, the field,
 *   the declared and the derived value.
 */
gboolean
elk__plan_set_check_plan (const ElkPlanSet *set,
                          guint op,
                          const ElkPlan *plan,
                          const char *what,
                          GError **error)
{
  const ElkPlanTable *table = elk_plan_set_get_table (set, op);
  const ElkOp *o = elk_graph_get_op (set->graph, op);
  GError *local_error = NULL;
  const char *field;
  double declared = 0, derived = 0;
  ElkPlan eval;

  for (guint p = 0; table != NULL && p < table->n_plans; p++)
    if (plan_same_vectors (plan, &table->plans[p])
        && plan_first_difference (plan, &table->plans[p], &declared,
                                  &derived) == NULL)
      return TRUE;

  if (plan->n_dims != o->n_dims || plan->n_operands != o->n_operands)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR,
                   ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
                   "operator '%s': the %s has %u loop dimensions and %u "
                   "operands, but the operator has %u and %u", o->name,
                   what, plan->n_dims, plan->n_operands, o->n_dims,
                   o->n_operands);
      return FALSE;
    }
  memset (&eval, 0, sizeof (eval));
  eval.n_dims = plan->n_dims;
  eval.n_operands = plan->n_operands;
  memcpy (eval.spatial, plan->spatial, sizeof (eval.spatial));
  memcpy (eval.temporal, plan->temporal, sizeof (eval.temporal));
  if (!elk_plan_evaluate (set->graph, op, set->spec, &eval, &local_error))
    {
      g_propagate_prefixed_error (error, local_error, "%s: ", what);
      return FALSE;
    }
  field = plan_first_difference (plan, &eval, &declared, &derived);
  if (field != NULL)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR,
                   ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
                   "operator '%s': the %s declares %s = %.17g, but the "
                   "plan cost model derives %.17g from its spatial vector "
                   "and rotation factors", o->name, what, field, declared,
                   derived);
      return FALSE;
    }
  return TRUE;
}

/* ---------------------------------------------------------------------- */
/* Sets priced by a chip's cost model (elk-cost-model.h)                  */
/* ---------------------------------------------------------------------- */

/* Prices distinct table @k of @set (a copy of @base's) with @model. */
static gboolean
price_table (ElkPlanSet *set,
             ElkPlanSet *base,
             ElkCostModel *model,
             guint k,
             GError **error)
{
  ElkPlanTable *t = &set->tables[k];
  guint op = t->op;

  set->prices[k] = g_new (ElkOpPrice, MAX (t->n_cold_hot, 1u));
  set->loads[k] = g_new (ElkLoadPrice, t->n_cold_hot + 1);
  for (guint e = 0; e < t->n_cold_hot; e++)
    {
      ElkOpPrice *p = &set->prices[k][e];
      if (!elk_cost_model_price_op (model, base, op, e, p, error)
          || !elk_cost_model_price_load (model, base, op, (gint) e,
                                         &set->loads[k][e], error))
        return FALSE;
      /* Allocators and policies read a choice's time from the table, so
       * the copy carries the model's numbers. */
      t->cold_hot[e].exec_s = p->exec_s;
      t->cold_hot[e].warmup_s = p->warmup_s;
    }
  return elk_cost_model_price_load (model, base, op, -1,
                                    &set->loads[k][t->n_cold_hot], error);
}

/**
 * elk_plan_set_new_priced:
 * @base: an analytic plan set (from elk_plan_set_new())
 * @model: the cost model to price it with
 * @error: return location for a #GError
 *
 * Re-prices @base's tables with @model: the copy has the same plans and
 * cold-hot entries, each entry's exec_s and warmup_s are @model's, and
 * elk_plan_set_get_op_price() and elk_plan_set_get_load_time() answer
 * with @model's prices, so that schedulers, the engine and allocators
 * plan with it.  Each distinct table is priced once, in table order, so
 * the result is deterministic.  The analytic model gives back @base
 * itself (a new reference): it is what @base already holds.
 *
 * Returns: (transfer full) (nullable): the priced set, or %NULL with
 *   @error set when @model fails or breaks its contract
 *
 * Since: 0.2
 */
ElkPlanSet *
elk_plan_set_new_priced (ElkPlanSet *base, ElkCostModel *model, GError **error)
{
  ElkPlanSet *set;
  guint n_ops;

  g_return_val_if_fail (base != NULL, NULL);
  g_return_val_if_fail (ELK_IS_COST_MODEL (model), NULL);
  g_return_val_if_fail (base->base == NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (elk_cost_model_is_analytic (model))
    return elk_plan_set_ref (base);
  n_ops = elk_graph_get_n_ops (base->graph);
  set = g_new0 (ElkPlanSet, 1);
  g_atomic_ref_count_init (&set->ref_count);
  set->graph = elk_graph_ref (base->graph);
  set->spec = elk_chip_spec_copy (base->spec);
  set->options = base->options;
  set->n_tables = base->n_tables;
  set->op_table = g_memdup2 (base->op_table, sizeof (guint) * MAX (n_ops, 1u));
  set->tables = g_new0 (ElkPlanTable, MAX (set->n_tables, 1u));
  set->base = elk_plan_set_ref (base);
  set->model = g_object_ref (model);
  set->prices = g_new0 (ElkOpPrice *, MAX (set->n_tables, 1u));
  set->loads = g_new0 (ElkLoadPrice *, MAX (set->n_tables, 1u));
  for (guint k = 0; k < set->n_tables; k++)
    {
      const ElkPlanTable *b = &base->tables[k];
      ElkPlanTable *t = &set->tables[k];

      *t = *b;
      t->plans = g_memdup2 (b->plans, sizeof (ElkPlan) * b->n_plans);
      t->hot_front = g_memdup2 (b->hot_front, sizeof (guint32) * b->n_hot);
      t->cold_hot
          = g_memdup2 (b->cold_hot, sizeof (ElkColdHot) * b->n_cold_hot);
    }
  for (guint k = 0; k < set->n_tables; k++)
    if (!price_table (set, base, model, k, error))
      {
        g_prefix_error (error, "pricing the plan tables of '%s' with %s: ",
                        elk_graph_get_name (base->graph),
                        G_OBJECT_TYPE_NAME (model));
        plan_set_free (set);
        return NULL;
      }
  return set;
}

/**
 * elk_plan_set_get_cost_model:
 * @set: a plan set
 *
 * Gets the cost model whose prices @set carries.
 *
 * Returns: (transfer none) (nullable): the model that priced @set, or
 *   %NULL for an analytic set
 *
 * Since: 0.2
 */
ElkCostModel *
elk_plan_set_get_cost_model (const ElkPlanSet *set)
{
  g_return_val_if_fail (set != NULL, NULL);
  return set->model;
}

/**
 * elk_plan_set_set_relayout_model:
 * @set: a plan set nobody else uses yet
 * @model: (nullable): the model whose re-layout prices the engine should
 *   charge, or %NULL for none
 *
 * Makes the engine choose entries with @model's re-layout prices
 * (elk_cost_model_price_relayout(); docs/compiler.md, "Layout-aware plan
 * selection") when it schedules @set: what the "layout" plan option of
 * experiment files sets.  A model that prices no re-layout (no
 * #ElkCostModelClass.price_relayout, such as the analytic model) is the
 * same as %NULL.  Set it before handing @set to anyone: sets are otherwise
 * read-only.
 *
 * Since: 0.2
 */
void
elk_plan_set_set_relayout_model (ElkPlanSet *set, ElkCostModel *model)
{
  g_return_if_fail (set != NULL);
  g_return_if_fail (model == NULL || ELK_IS_COST_MODEL (model));

  if (model != NULL && ELK_COST_MODEL_GET_CLASS (model)->price_relayout == NULL)
    model = NULL;
  g_set_object (&set->relayout, model);
}

/**
 * elk_plan_set_get_relayout_model:
 * @set: a plan set
 *
 * Gets the model elk_plan_set_set_relayout_model() gave @set.
 *
 * Returns: (transfer none) (nullable): the model whose re-layout prices
 *   the engine charges on @set, or %NULL for none (the paper's choice)
 *
 * Since: 0.2
 */
ElkCostModel *
elk_plan_set_get_relayout_model (const ElkPlanSet *set)
{
  g_return_val_if_fail (set != NULL, NULL);
  return set->relayout;
}

/**
 * elk_plan_set_set_measurer:
 * @set: a plan set nobody else uses yet
 * @chip: (nullable): the chip the programs compiled from @set will run
 *   on (elk_chip_dup_measurer()), or %NULL for none
 *
 * Tells schedulers which chip measures their programs, so that one can
 * choose among its candidates by that chip's own measurement
 * (elk_chip_measure() with elk_plan_set_get_base()'s tables; the elk
 * scheduler's select=chip).  elk-run sets it for every point.  Set it
 * before handing @set to anyone: sets are otherwise read-only.
 *
 * Since: 0.2
 */
void
elk_plan_set_set_measurer (ElkPlanSet *set, ElkChip *chip)
{
  g_return_if_fail (set != NULL);
  g_return_if_fail (chip == NULL || ELK_IS_CHIP (chip));

  g_set_object (&set->measurer, chip);
}

/**
 * elk_plan_set_get_measurer:
 * @set: a plan set
 *
 * Gets the chip elk_plan_set_set_measurer() gave @set.
 *
 * Returns: (transfer none) (nullable): the chip that measures programs
 *   compiled from @set, or %NULL when nobody said
 *
 * Since: 0.2
 */
ElkChip *
elk_plan_set_get_measurer (const ElkPlanSet *set)
{
  g_return_val_if_fail (set != NULL, NULL);
  return set->measurer;
}

/**
 * elk_plan_set_get_base:
 * @set: a plan set
 *
 * Gets the plan set the chip measures with: the analytic tables that a
 * priced set (elk_plan_set_new_priced()) was built from.
 *
 * Returns: (transfer none): the analytic set @set re-prices, or @set
 *   itself when it is analytic.  Chips run programs against it.
 *
 * Since: 0.2
 */
const ElkPlanSet *
elk_plan_set_get_base (const ElkPlanSet *set)
{
  g_return_val_if_fail (set != NULL, NULL);
  return set->base != NULL ? set->base : set;
}

/**
 * elk_plan_set_get_op_price:
 * @set: a plan set
 * @op: an operator of @set's graph
 * @entry: an index into @op's cold-hot table
 * @price: (out caller-allocates): the price
 *
 * The price of one cold-hot entry of @op under @set's cost model: the
 * analytic numbers of the table and the plan for an analytic set.
 *
 * Since: 0.2
 */
void
elk_plan_set_get_op_price (const ElkPlanSet *set,
                           guint op,
                           guint entry,
                           ElkOpPrice *price)
{
  const ElkPlanTable *t;
  const ElkColdHot *ch;

  g_return_if_fail (set != NULL && price != NULL);
  g_return_if_fail (op < elk_graph_get_n_ops (set->graph));
  t = &set->tables[set->op_table[op]];
  g_return_if_fail (entry < t->n_cold_hot);
  if (set->prices != NULL)
    {
      *price = set->prices[set->op_table[op]][entry];
      return;
    }
  ch = &t->cold_hot[entry];
  *price = (ElkOpPrice){
    .exec_s = ch->exec_s,
    .compute_s = t->plans[ch->hot_plan].compute_s,
    .noc_s = elk_plan_get_noc_demand (&t->plans[ch->hot_plan],
                                      set->options.noc_demand),
    .warmup_s = ch->warmup_s,
  };
}

/**
 * elk_plan_set_get_load_time:
 * @set: a plan set
 * @op: an operator of @set's graph
 * @entry: an index into @op's cold-hot table, or -1 for the even,
 *   unreplicated shard of its HBM data
 * @share: the preload's share of each core's port, in (0, 1]
 * @noc_s: (out) (optional): the interconnect time of the delivery
 *
 * How long @op's preload at @entry's preload state lasts under @set's
 * cost model: elk_chip_spec_get_load_time() for an analytic set,
 * max(hbm_s, deliver_s / @share) of the model's #ElkLoadPrice otherwise.
 *
 * Returns: the preload duration in seconds (0 for an operator that reads
 *   nothing from HBM)
 *
 * Since: 0.2
 */
double
elk_plan_set_get_load_time (
    const ElkPlanSet *set, guint op, gint entry, double share, double *noc_s)
{
  const ElkPlanTable *t;
  const ElkLoadPrice *lp;

  g_return_val_if_fail (set != NULL, 0);
  g_return_val_if_fail (op < elk_graph_get_n_ops (set->graph), 0);
  t = &set->tables[set->op_table[op]];
  g_return_val_if_fail (entry < (gint) t->n_cold_hot, 0);
  if (set->loads == NULL)
    return elk_chip_spec_get_load_time (set->spec, t->hbm_bytes,
                                        entry < 0
                                            ? t->min_cold_bytes
                                            : t->cold_hot[entry].cold_bytes,
                                        share, noc_s);
  lp = &set->loads[set->op_table[op]]
                  [entry < 0 ? t->n_cold_hot : (guint) entry];
  if (t->hbm_bytes == 0)
    {
      if (noc_s != NULL)
        *noc_s = 0;
      return 0;
    }
  if (noc_s != NULL)
    *noc_s = lp->deliver_s;
  return MAX (lp->hbm_s, lp->deliver_s / share);
}
