/* kpa-allocator.c: "example:keep-preloads", a third-party SRAM allocator
 * plugin for elk, built out of tree against the installed elk-1.
 *
 * The idea: a preload, once sized, is never re-sized.  While an operator
 * E executes, the operators preloaded next to it keep the preload state
 * they were given when they were scheduled (an operator not yet sized gets
 * its smallest preload state), and E takes, in the space they leave, the
 * cold-hot entry with the least execution plus data-distribution time.
 * elk's default allocator, cost-aware, does the opposite trade when SRAM
 * is short: it may shrink a preloaded operator's preload state (which that
 * operator then pays for in extra data distribution) to give E a faster
 * plan.  keep-preloads never adds data distribution to another operator,
 * so the question its reference experiment asks is how much that trade is
 * worth under the elk scheduler.  It charges no interconnect-contention
 * penalty either.
 *
 * The allocator keeps no state in the object, so one instance may serve
 * several scheduler threads at once (elk-allocator.h).  Everything here
 * uses elk's public API only, with this project's own prefix (Kpa).
 */
#include <elk/elk.h>

#define KPA_TYPE_ALLOCATOR (kpa_allocator_get_type ())
G_DECLARE_FINAL_TYPE (KpaAllocator, kpa_allocator, KPA, ALLOCATOR, GObject)

struct _KpaAllocator
{
  GObject parent_instance;
};

/* ElkAllocatorInterface.allocate: FALSE without an error when E fits no
 * entry next to the preloads as they are. */
static gboolean
kpa_allocator_allocate (ElkAllocator *allocator,
                        const ElkAllocRequest *request,
                        ElkAllocResult *result,
                        GError **error)
{
  const ElkPlanTable *exec
      = elk_plan_set_get_table (request->plans, request->exec_op);
  guint64 preload_bytes = 0;
  gint32 best = -1;

  /* The preloaded operators first, as they are. */
  for (guint j = 0; j < request->n_preloaded; j++)
    {
      const ElkPlanTable *table
          = elk_plan_set_get_table (request->plans, request->preloaded[j]);
      gint32 fixed
          = request->preloaded_fixed != NULL ? request->preloaded_fixed[j] : -1;

      /* cold_hot is sorted by preload size: entry 0 is the smallest. */
      result->preload_entries[j] = fixed >= 0 ? (guint32) fixed : 0;
      preload_bytes += table->cold_hot[result->preload_entries[j]].cold_bytes;
    }
  if (preload_bytes > request->sram_budget)
    return FALSE;

  /* Then E, in what is left: its fixed entry, or its fastest that fits. */
  for (guint32 e = 0; e < exec->n_cold_hot; e++)
    {
      const ElkColdHot *ch = &exec->cold_hot[e];
      if (request->exec_fixed && e != request->exec_entry)
        continue;
      if (ch->hot_bytes > request->sram_budget - preload_bytes)
        continue;
      if (best < 0
          || ch->exec_s + ch->warmup_s
                 < exec->cold_hot[best].exec_s + exec->cold_hot[best].warmup_s)
        best = (gint32) e;
    }
  if (best < 0)
    return FALSE;

  result->exec_entry = (guint32) best;
  result->exec_s = exec->cold_hot[best].exec_s;
  result->warmup_s = exec->cold_hot[best].warmup_s; /* nothing added */
  result->penalty_s = 0;
  result->cost_s = result->exec_s + result->warmup_s;
  result->bytes = exec->cold_hot[best].hot_bytes + preload_bytes;
  return TRUE;
}

ELK_DEFINE_ALLOCATOR (KpaAllocator, kpa_allocator, kpa_allocator_allocate)

static void
kpa_allocator_class_init (KpaAllocatorClass *klass)
{
}

static gboolean
kpa_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_ALLOCATOR,
                                 "example:keep-preloads", KPA_TYPE_ALLOCATOR,
                                 error);
}

ELK_PLUGIN_DEFINE (keep_preloads,
                   "Preloads keep their size; the executing operator fits "
                   "around them (out-of-tree example)",
                   "1.0",
                   kpa_register)
