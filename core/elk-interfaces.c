/* elk-interfaces.c: the four extension points and their public wrappers.
 *
 * Frontends load graphs, chips describe machines and run programs,
 * schedulers turn plan tables into programs, and allocators split SRAM for
 * schedulers.  elk-run calls them in that order for every experiment point
 * (DESIGN.md §1).  Each public wrapper below is the single place where a
 * plugin bug, such as returning NULL without setting an error, becomes a
 * clear ELK_PLUGIN_ERROR_CONTRACT error instead of a crash further on.
 * Registration (elk_plugin_add_feature) already refuses types whose
 * required vfuncs are NULL, so the wrappers need not test for that.
 */
#include "config.h"

#include <string.h>

#include <elk/elk-frontend.h>
#include <elk/elk-chip.h>
#include <elk/elk-scheduler.h>
#include <elk/elk-allocator.h>
#include <elk/elk-error.h>

/**
 * elk_frontend_get_type:
 *
 * Gets the type of the frontend interface.
 *
 * Returns: the #GType of the #ElkFrontend interface.
 */
G_DEFINE_INTERFACE (ElkFrontend, elk_frontend, G_TYPE_OBJECT)

/**
 * elk_chip_get_type:
 *
 * Gets the type of the chip backend interface.
 *
 * Returns: the #GType of the #ElkChip interface.
 */
G_DEFINE_INTERFACE (ElkChip, elk_chip, G_TYPE_OBJECT)

/**
 * elk_scheduler_get_type:
 *
 * Gets the type of the scheduler interface.
 *
 * Returns: the #GType of the #ElkScheduler interface.
 */
G_DEFINE_INTERFACE (ElkScheduler, elk_scheduler, G_TYPE_OBJECT)

/**
 * elk_allocator_get_type:
 *
 * Gets the type of the allocator interface.
 *
 * Returns: the #GType of the #ElkAllocator interface.
 */
G_DEFINE_INTERFACE (ElkAllocator, elk_allocator, G_TYPE_OBJECT)

static void
elk_frontend_default_init (ElkFrontendInterface *iface)
{
}

static void
elk_chip_default_init (ElkChipInterface *iface)
{
}

static void
elk_scheduler_default_init (ElkSchedulerInterface *iface)
{
}

static void
elk_allocator_default_init (ElkAllocatorInterface *iface)
{
}

/* Turns "returned nothing and said nothing" into an error, and drops a
 * result that came with an error. */
static gpointer
check_result (gpointer object,
              gpointer result,
              GDestroyNotify free_result,
              GError *local_error,
              const char *vfunc,
              GError **error)
{
  if (local_error != NULL)
    {
      if (result != NULL)
        free_result (result);
      g_propagate_error (error, local_error);
      return NULL;
    }
  if (result == NULL)
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT,
                   "%s: %s() returned NULL without an error",
                   G_OBJECT_TYPE_NAME (object), vfunc);
      return NULL;
    }
  return result;
}

/**
 * elk_frontend_load:
 * @self: a frontend
 * @error: return location for a #GError
 *
 * Builds the graph and checks it with elk_graph_validate().
 *
 * Returns: (transfer full) (nullable): the graph, or %NULL with @error set.
 */
ElkGraph *
elk_frontend_load (ElkFrontend *self, GError **error)
{
  GError *local_error = NULL;
  ElkGraph *graph;

  g_return_val_if_fail (ELK_IS_FRONTEND (self), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  graph = ELK_FRONTEND_GET_IFACE (self)->load (self, &local_error);
  graph = check_result (self, graph, (GDestroyNotify) elk_graph_unref,
                        local_error, "load", error);
  if (graph != NULL && !elk_graph_validate (graph, error))
    g_clear_pointer (&graph, elk_graph_unref);
  return graph;
}

/**
 * elk_chip_dup_spec:
 * @self: a chip backend
 * @error: return location for a #GError
 *
 * Asks the backend for its machine description and checks it.
 *
 * Returns: (transfer full) (nullable): the machine description, validated
 *   with elk_chip_spec_validate(), or %NULL with @error set.
 */
ElkChipSpec *
elk_chip_dup_spec (ElkChip *self, GError **error)
{
  GError *local_error = NULL;
  ElkChipSpec *spec;

  g_return_val_if_fail (ELK_IS_CHIP (self), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  spec = ELK_CHIP_GET_IFACE (self)->dup_spec (self, &local_error);
  spec = check_result (self, spec, (GDestroyNotify) elk_chip_spec_free,
                       local_error, "dup_spec", error);
  if (spec != NULL && !elk_chip_spec_validate (spec, error))
    g_clear_pointer (&spec, elk_chip_spec_free);
  return spec;
}

/**
 * elk_chip_dup_cost_model:
 * @self: a chip backend
 * @plans: the analytic plan set built on @self's spec
 * @error: return location for a #GError
 *
 * Asks the backend for the cost model schedulers should plan with on it
 * (#ElkChipInterface.dup_cost_model).  A backend without one, or one that
 * returns %NULL without an error, plans with the analytic model, which
 * this function returns then.
 *
 * Returns: (transfer full) (nullable): the model, or %NULL with @error set
 *
 * Since: 0.2
 */
ElkCostModel *
elk_chip_dup_cost_model (ElkChip *self, const ElkPlanSet *plans, GError **error)
{
  ElkChipInterface *iface;
  GError *local_error = NULL;
  ElkCostModel *model = NULL;

  g_return_val_if_fail (ELK_IS_CHIP (self), NULL);
  g_return_val_if_fail (plans != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  iface = ELK_CHIP_GET_IFACE (self);
  if (iface->dup_cost_model != NULL)
    model = iface->dup_cost_model (self, plans, &local_error);
  if (local_error != NULL)
    {
      g_clear_object (&model);
      g_propagate_error (error, local_error);
      return NULL;
    }
  if (model != NULL && !ELK_IS_COST_MODEL (model))
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT,
                   "%s: dup_cost_model() returned a %s, not an ElkCostModel",
                   G_OBJECT_TYPE_NAME (self), G_OBJECT_TYPE_NAME (model));
      g_object_unref (model);
      return NULL;
    }
  return model != NULL ? model : elk_cost_model_new_analytic ();
}

/**
 * elk_chip_dup_measurer:
 * @self: a chip backend
 *
 * A chip that measures programs exactly as @self does and has no side
 * effects: what a scheduler that chooses among its candidates by the
 * chip's own measurement (the elk scheduler's select=chip) runs them on,
 * so that its trial runs write no report of their own.  It is
 * #ElkChipInterface.dup_measurer's chip, or @self (a new reference) for a
 * backend without one.
 *
 * Returns: (transfer full): the chip to measure candidates on
 *
 * Since: 0.2
 */
ElkChip *
elk_chip_dup_measurer (ElkChip *self)
{
  ElkChipInterface *iface;
  ElkChip *measurer;

  g_return_val_if_fail (ELK_IS_CHIP (self), NULL);

  iface = ELK_CHIP_GET_IFACE (self);
  if (iface->dup_measurer == NULL)
    return g_object_ref (self);
  measurer = iface->dup_measurer (self);
  /* A backend that cannot copy itself measures on itself. */
  return measurer != NULL ? measurer : g_object_ref (self);
}

/**
 * elk_chip_measure:
 * @self: a chip backend
 * @program: the program to measure
 * @plans: the plan tables it was compiled with
 * @latency_s: (out): the latency the chip measures, in seconds
 * @error: return location for a #GError
 *
 * Runs @program with elk_chip_run() and gives the latency it measures:
 * the number the experiment's results would report for it on @self.
 *
 * Returns: %TRUE, or %FALSE with @error set (as elk_chip_run() fails)
 *
 * Since: 0.2
 */
gboolean
elk_chip_measure (ElkChip *self,
                  ElkProgram *program,
                  const ElkPlanSet *plans,
                  double *latency_s,
                  GError **error)
{
  ElkMetrics *m;

  g_return_val_if_fail (latency_s != NULL, FALSE);

  m = elk_chip_run (self, program, plans, error);
  if (m == NULL)
    return FALSE;
  *latency_s = m->latency_s;
  elk_metrics_free (m);
  return TRUE;
}

/**
 * elk_chip_run:
 * @self: a chip backend
 * @program: the program to run
 * @plans: the plan tables it was compiled with
 * @error: return location for a #GError
 *
 * Checks @program with elk_program_validate() and runs it on the backend's
 * own model of the machine. *
 * Returns: (transfer full) (nullable): the metrics, or %NULL with @error
 *   set.  Metrics with a negative or non-finite latency are a contract
 *   error.
 */
ElkMetrics *
elk_chip_run (ElkChip *self,
              ElkProgram *program,
              const ElkPlanSet *plans,
              GError **error)
{
  return elk_chip_run_traced (self, program, plans, NULL, error);
}

/**
 * elk_chip_type_can_trace:
 * @type: a type implementing #ElkChip
 *
 * Tells whether a chip backend type can record traces.
 *
 * Returns: whether the backend implements run_traced(), that is, whether
 *   experiments that ask for traces can use it.
 */
gboolean
elk_chip_type_can_trace (GType type)
{
  gpointer klass = g_type_class_ref (type);
  ElkChipInterface *iface = g_type_interface_peek (klass, ELK_TYPE_CHIP);
  gboolean can = iface != NULL && iface->run_traced != NULL;
  g_type_class_unref (klass);
  return can;
}

/**
 * elk_chip_run_traced:
 * @self: a chip backend
 * @program: the program to run
 * @plans: the plan tables it was compiled with
 * @trace: (nullable): where to record timelines, or %NULL
 * @error: return location for a #GError
 *
 * Like elk_chip_run(), recording timelines into @trace.  Asking a backend
 * that cannot trace for a trace is an error, never a silent omission.
 *
 * Returns: (transfer full) (nullable): the metrics.
 */
ElkMetrics *
elk_chip_run_traced (ElkChip *self,
                     ElkProgram *program,
                     const ElkPlanSet *plans,
                     ElkTrace *trace,
                     GError **error)
{
  ElkChipInterface *iface;
  GError *local_error = NULL;
  ElkMetrics *metrics;

  g_return_val_if_fail (ELK_IS_CHIP (self), NULL);
  g_return_val_if_fail (program != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  g_return_val_if_fail (plans != NULL, NULL);

  /* Every chip refuses a program that breaks the rules or cannot fit, with
   * the same message, before any backend code runs. */
  if (!elk_program_validate (program, plans, &local_error))
    {
      g_propagate_prefixed_error (error, local_error,
                                  "%s refuses the program: ",
                                  G_OBJECT_TYPE_NAME (self));
      return NULL;
    }
  iface = ELK_CHIP_GET_IFACE (self);
  if (trace != NULL && iface->run_traced == NULL)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "%s cannot record traces", G_OBJECT_TYPE_NAME (self));
      return NULL;
    }
  if (trace != NULL)
    metrics = iface->run_traced (self, program, plans, trace, &local_error);
  else
    metrics = iface->run (self, program, plans, &local_error);
  metrics = check_result (self, metrics, (GDestroyNotify) elk_metrics_free,
                          local_error, "run", error);
  if (metrics != NULL && !(metrics->latency_s > 0 && metrics->latency_s
                                                        < G_MAXDOUBLE))
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT,
                   "%s: run() reported latency %g s; expected a positive "
                   "finite number", G_OBJECT_TYPE_NAME (self),
                   metrics->latency_s);
      g_clear_pointer (&metrics, elk_metrics_free);
    }
  return metrics;
}

/**
 * elk_scheduler_schedule:
 * @self: a scheduler
 * @plans: the plan tables of the graph on the target chip
 * @allocator: the allocator the experiment chose
 * @error: return location for a #GError
 *
 * Asks the scheduler for a program and checks it before anyone runs it.
 *
 * Returns: (transfer full) (nullable): the program, checked with
 *   elk_program_validate(), or %NULL with @error set.
 */
ElkProgram *
elk_scheduler_schedule (ElkScheduler *self,
                        const ElkPlanSet *plans,
                        ElkAllocator *allocator,
                        GError **error)
{
  GError *local_error = NULL;
  ElkProgram *program;

  g_return_val_if_fail (ELK_IS_SCHEDULER (self), NULL);
  g_return_val_if_fail (plans != NULL, NULL);
  g_return_val_if_fail (ELK_IS_ALLOCATOR (allocator), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  program = ELK_SCHEDULER_GET_IFACE (self)->schedule (self, plans, allocator,
                                                      &local_error);
  program = check_result (self, program, (GDestroyNotify) elk_program_unref,
                          local_error, "schedule", error);
  if (program != NULL
      && !elk_program_validate (program, plans, &local_error))
    {
      g_propagate_prefixed_error (error, local_error,
                                  "%s produced an invalid program: ",
                                  G_OBJECT_TYPE_NAME (self));
      g_clear_pointer (&program, elk_program_unref);
    }
  return program;
}

/**
 * elk_allocator_allocate:
 * @self: an allocator
 * @request: what to allocate
 * @result: the allocation, filled in; its preload_entries array is the
 *   caller's and must hold request->n_preloaded entries
 * @fits: (out): whether an allocation within the budget exists
 * @error: return location for a #GError
 *
 * Asks the allocator to split the SRAM budget of @request and checks the
 * answer. *
 * Returns: %FALSE with @error set on failure; otherwise %TRUE, with @fits
 *   telling whether @result holds an allocation.  An allocation larger than
 *   the budget, or with an entry index out of range, is a contract error.
 */
gboolean
elk_allocator_allocate (ElkAllocator *self,
                        const ElkAllocRequest *request,
                        ElkAllocResult *result,
                        gboolean *fits,
                        GError **error)
{
  GError *local_error = NULL;
  const ElkPlanTable *exec_table;

  g_return_val_if_fail (ELK_IS_ALLOCATOR (self), FALSE);
  g_return_val_if_fail (request != NULL && result != NULL, FALSE);
  g_return_val_if_fail (fits != NULL, FALSE);

  exec_table = elk_plan_set_get_table (request->plans, request->exec_op);
  if (request->exec_fixed && request->exec_entry >= exec_table->n_cold_hot)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "allocation request for operator %u fixes its cold-hot "
                   "entry %u, but its table has %u entries",
                   request->exec_op, request->exec_entry,
                   exec_table->n_cold_hot);
      *fits = FALSE;
      return FALSE;
    }
  if ((guint) request->contention > ELK_ALLOC_CONTENTION_NONE)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "allocation request for operator %u has contention mode "
                   "%d; expected ELK_ALLOC_CONTENTION_SHARED or _NONE",
                   request->exec_op, (gint) request->contention);
      *fits = FALSE;
      return FALSE;
    }
  *fits = ELK_ALLOCATOR_GET_IFACE (self)->allocate (self, request, result,
                                                    &local_error);
  if (local_error != NULL)
    {
      *fits = FALSE;
      g_propagate_error (error, local_error);
      return FALSE;
    }
  if (!*fits)
    return TRUE;

  if (request->exec_fixed && result->exec_entry != request->exec_entry)
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT,
                   "%s: allocate() returned entry %u for operator %u, whose "
                   "entry the request fixed to %u", G_OBJECT_TYPE_NAME (self),
                   result->exec_entry, request->exec_op, request->exec_entry);
      return FALSE;
    }
  if (result->exec_entry >= exec_table->n_cold_hot
      || result->bytes > request->sram_budget)
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT,
                   "%s: allocate() returned entry %u of %u using %"
                   G_GUINT64_FORMAT " bytes against a budget of %"
                   G_GUINT64_FORMAT, G_OBJECT_TYPE_NAME (self),
                   result->exec_entry, exec_table->n_cold_hot, result->bytes,
                   request->sram_budget);
      return FALSE;
    }
  for (guint j = 0; j < request->n_preloaded; j++)
    {
      const ElkPlanTable *t = elk_plan_set_get_table (request->plans,
                                                      request->preloaded[j]);
      if (result->preload_entries[j] >= t->n_cold_hot)
        {
          g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT,
                       "%s: allocate() returned entry %u of %u for "
                       "preloaded operator %u", G_OBJECT_TYPE_NAME (self),
                       result->preload_entries[j], t->n_cold_hot,
                       request->preloaded[j]);
          return FALSE;
        }
    }
  return TRUE;
}

/**
 * elk_alloc_result_set_preload_entries:
 * @result: the result an allocator fills in
 * @request: the request @result answers
 * @entries: (array length=n_entries): for each preloaded operator of
 *   @request, in its order, the index into that operator's cold-hot table
 * @n_entries: number of entries; must equal @request's n_preloaded
 * @error: return location for a #GError
 *
 * Copies @entries into @result's preload_entries array, which the caller of
 * elk_allocator_allocate() owns.  C allocators write the array directly;
 * this is for allocators written in other languages (a Python
 * #ElkAllocator calls `result.set_preload_entries(request, [...])`), which
 * cannot write into a C array of unknown length.  Whether each index is
 * within its table is checked by elk_allocator_allocate(), as for every
 * allocator.
 *
 * Returns: %TRUE; %FALSE with %ELK_PLUGIN_ERROR_CONTRACT when @n_entries
 *   is not @request's n_preloaded.
 *
 * Since: 0.1
 */
gboolean
elk_alloc_result_set_preload_entries (ElkAllocResult *result,
                                      const ElkAllocRequest *request,
                                      const guint32 *entries,
                                      guint n_entries,
                                      GError **error)
{
  g_return_val_if_fail (result != NULL && request != NULL, FALSE);
  g_return_val_if_fail (entries != NULL || n_entries == 0, FALSE);
  g_return_val_if_fail (result->preload_entries != NULL
                            || request->n_preloaded == 0,
                        FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (n_entries != request->n_preloaded)
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT,
                   "allocation for operator %u: %u preload entries given for "
                   "%u preloaded operators",
                   request->exec_op, n_entries, request->n_preloaded);
      return FALSE;
    }
  if (n_entries > 0)
    memcpy (result->preload_entries, entries, n_entries * sizeof (guint32));
  return TRUE;
}
