/* gla-scheduler.c: "example:greedy-lookahead", a third-party scheduler
 * plugin for elk, built out of tree against the installed elk-1.
 *
 * The algorithm is deliberately simple.  First, every operator gets the
 * plan the experiment's allocator picks for it alone, with all of a core's
 * SRAM (elk's plan tables give the choices; the allocator chooses).  Then
 * the program walks the operators in order and, before each execute,
 * issues the preloads of as many following operators as still fit: an
 * operator is admitted only if, at every execute between now and its own,
 * the executing operator's execution space plus the preload spaces of
 * everything preloaded by then fits in SRAM.  It never reorders preloads
 * and never shrinks a plan to make room, which is what the Elk scheduler
 * does better; that makes it a useful yardstick.
 *
 * Everything here uses elk's public API only (#include <elk/elk.h>), and
 * every name carries this project's own prefix (Gla), never Elk.
 */
#include <elk/elk.h>

#define GLA_TYPE_SCHEDULER (gla_scheduler_get_type ())
G_DECLARE_FINAL_TYPE (GlaScheduler, gla_scheduler, GLA, SCHEDULER, GObject)

#define DEFAULT_MAX_LOOKAHEAD 16

struct _GlaScheduler
{
  GObject parent_instance;

  guint max_lookahead;   /* operators preloaded ahead of the executing one */
};

enum
{
  PROP_0,
  PROP_MAX_LOOKAHEAD,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void gla_scheduler_iface_init (ElkSchedulerInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (GlaScheduler, gla_scheduler, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (ELK_TYPE_SCHEDULER,
                                                      gla_scheduler_iface_init))

/* Asks the allocator for operator op's plan when it runs alone. */
static gboolean
choose_entry (ElkAllocator *allocator,
              const ElkPlanSet *plans,
              guint op,
              guint64 budget,
              const ElkColdHot **entry,
              GError **error)
{
  ElkAllocRequest request = { 0 };
  ElkAllocResult result = { 0 };
  const ElkPlanTable *table = elk_plan_set_get_table (plans, op);
  gboolean fits = FALSE;

  request.plans = plans;
  request.exec_op = op;
  request.sram_budget = budget;
  if (!elk_allocator_allocate (allocator, &request, &result, &fits, error))
    return FALSE;
  if (!fits)
    {
      ElkGraph *graph = elk_plan_set_get_graph (plans);
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
                   "greedy-lookahead: operator '%s' fits no plan in %"
                   G_GUINT64_FORMAT " bytes per core",
                   elk_graph_get_op (graph, op)->name, budget);
      return FALSE;
    }
  *entry = &table->cold_hot[result.exec_entry];
  return TRUE;
}

static ElkProgram *
gla_scheduler_schedule (ElkScheduler *scheduler,
                        const ElkPlanSet *plans,
                        ElkAllocator *allocator,
                        GError **error)
{
  GlaScheduler *self = GLA_SCHEDULER (scheduler);
  ElkGraph *graph = elk_plan_set_get_graph (plans);
  const ElkChipSpec *spec = elk_plan_set_get_spec (plans);
  guint64 usable = elk_chip_spec_get_usable_sram (spec);
  guint n = elk_graph_get_n_ops (graph);
  g_autoptr (ElkProgram) program = elk_program_new (graph);
  g_autofree const ElkColdHot **entry = g_new0 (const ElkColdHot *, n);
  /* resident[k]: preload bytes held during execute(k) by operators after
   * k whose preloads were issued so far. */
  g_autofree guint64 *resident = g_new0 (guint64, n);
  g_autofree gboolean *issued = g_new0 (gboolean, n);
  guint next = 0;         /* first operator not yet preloaded */
  double estimate = 0;

  for (guint i = 0; i < n; i++)
    if (!choose_entry (allocator, plans, i, usable, &entry[i], error))
      return NULL;

  for (guint i = 0; i < n; i++)
    {
      const ElkPlanTable *table = elk_plan_set_get_table (plans, i);
      ElkProgramOp *pop = elk_program_get_op (program, i);

      /* The executing operator must itself be loaded before it runs. */
      if (!issued[i])
        {
          elk_program_add_preload (program, i);
          issued[i] = TRUE;
          next = i + 1;
        }

      /* Admit following operators while every execute up to theirs keeps
       * fitting. */
      while (next < n && next <= i + self->max_lookahead)
        {
          guint64 cold = entry[next]->cold_bytes;
          gboolean fits = TRUE;
          for (guint k = i; k < next && fits; k++)
            fits = entry[k]->hot_bytes + resident[k] + cold <= usable;
          if (!fits)
            break;
          for (guint k = i; k < next; k++)
            resident[k] += cold;
          elk_program_add_preload (program, next);
          issued[next] = TRUE;
          next++;
        }

      /* The decisions a chip runs: the plans and the budget.  The byte
       * counts are optional declarations that elk_program_validate()
       * checks against the plans, and the est_* fields are predictions
       * that no chip prices. */
      pop->exec_plan = table->plans[entry[i]->hot_plan];
      pop->preload_plan = table->plans[entry[i]->cold_plan];
      pop->exec_budget = usable - resident[i];
      pop->hot_bytes = entry[i]->hot_bytes;
      pop->cold_bytes = entry[i]->cold_bytes;
      pop->hbm_bytes = table->hbm_bytes;
      pop->est_exec_s = entry[i]->exec_s;
      pop->est_warmup_s = entry[i]->warmup_s;
      pop->est_load_s = elk_chip_spec_get_load_time (spec, table->hbm_bytes,
                                                     entry[i]->cold_bytes,
                                                     pop->preload_share,
                                                     NULL);
      elk_program_add_execute (program, i);

      /* The scheduler's own estimate ignores overlap on purpose: it is a
       * serial upper bound, and the chip backend measures the real
       * timeline. */
      estimate += entry[i]->exec_s + entry[i]->warmup_s + pop->est_load_s;
    }
  elk_program_set_estimate (program, estimate);
  return g_steal_pointer (&program);
}

static void
gla_scheduler_iface_init (ElkSchedulerInterface *iface)
{
  iface->schedule = gla_scheduler_schedule;
}

static void
gla_scheduler_set_property (GObject *object,
                            guint prop_id,
                            const GValue *value,
                            GParamSpec *pspec)
{
  GlaScheduler *self = GLA_SCHEDULER (object);

  switch (prop_id)
    {
    case PROP_MAX_LOOKAHEAD:
      self->max_lookahead = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
gla_scheduler_get_property (GObject *object,
                            guint prop_id,
                            GValue *value,
                            GParamSpec *pspec)
{
  GlaScheduler *self = GLA_SCHEDULER (object);

  switch (prop_id)
    {
    case PROP_MAX_LOOKAHEAD:
      g_value_set_uint (value, self->max_lookahead);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
gla_scheduler_class_init (GlaSchedulerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->set_property = gla_scheduler_set_property;
  object_class->get_property = gla_scheduler_get_property;

  properties[PROP_MAX_LOOKAHEAD] = g_param_spec_uint (
    "max-lookahead", NULL,
    "Most operators preloaded ahead of the executing one (0: none)", 0, 1024,
    DEFAULT_MAX_LOOKAHEAD,
    G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
gla_scheduler_init (GlaScheduler *self)
{
}

static gboolean
gla_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_SCHEDULER,
                                 "example:greedy-lookahead",
                                 GLA_TYPE_SCHEDULER, error);
}

ELK_PLUGIN_DEFINE (greedy_lookahead,
                   "Greedy look-ahead preloading (out-of-tree example)",
                   "1.0", gla_register)
