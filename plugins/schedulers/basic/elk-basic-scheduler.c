/* elk-basic-scheduler.c: the Basic baseline of elk-paper.md §5.3.
 *
 * Each operator gets as much execution space as possible; the space left
 * preloads following operators only until one that reads HBM is buffered
 * (the artifact's naive schedule).  Every operator uses its smallest or its
 * largest fitting preload state (preload-state=best tries both and keeps the
 * faster, as the artifact does).  It shares the backward engine with the
 * other designs, so only the policy differs.  The experiment's allocator
 * is not consulted: Basic's sizing rule is part of its definition.
 */
#include "config.h"

#include <elk/elk.h>
#include "elk-compiler-private.h"

#define ELK_TYPE_BASIC_SCHEDULER (elk_basic_scheduler_get_type ())
G_DECLARE_FINAL_TYPE (ElkBasicScheduler, elk_basic_scheduler, ELK, BASIC_SCHEDULER, GObject)

struct _ElkBasicScheduler
{
  GObject parent_instance;
  double theta;
  gint preload_state;
  gint contention;
};

enum { PROP_0, PROP_LOAD_NOC_SHARE, PROP_PRELOAD_STATE, PROP_CONTENTION, N_PROPS };
static GParamSpec *properties[N_PROPS];

static void elk_basic_scheduler_iface_init (ElkSchedulerInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (ElkBasicScheduler, elk_basic_scheduler, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (ELK_TYPE_SCHEDULER,
                                                      elk_basic_scheduler_iface_init))

static G_GNUC_UNUSED gboolean
variant_allowed (gint contention, gboolean delay_exec)
{
  return contention == ELK_CONTENTION_BEST
         || (contention == ELK_CONTENTION_DELAY_EXECUTION) == delay_exec;
}

static G_GNUC_UNUSED gboolean
state_allowed (gint state, gboolean largest)
{
  return state == ELK_PRELOAD_STATE_BEST
         || (state == ELK_PRELOAD_STATE_LARGEST) == largest;
}

static ElkProgram *
elk_basic_scheduler_schedule (ElkScheduler *scheduler,
                              const ElkPlanSet *plans,
                              ElkAllocator *allocator,
                              GError **error)
{
  ElkBasicScheduler *self = ELK_BASIC_SCHEDULER (scheduler);
  ElkEngine engine;
  ElkEngineResult best;
  GPtrArray *orders;
  g_autoptr(GArray) params = g_array_new (FALSE, FALSE,
                                          sizeof (ElkEngineParams));
  ElkProgram *program = NULL;
  guint best_order = 0, best_params = 0;

  (void) self;
  if (!elk__engine_init (&engine, plans, allocator, error))
    return NULL;
  orders = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (orders, elk__identity_order (engine.n_ops));
  for (guint s = 0; s < 2; s++)
    for (guint v = 0; v < 2; v++)
      {
        ElkEngineParams p = { ELK_POLICY_BASIC, self->theta, v == 0, 0,
                              s == 1, FALSE };
        if (!state_allowed (self->preload_state, s == 1)
            || !variant_allowed (self->contention, v == 0))
          continue;
        g_array_append_val (params, p);
      }

  elk__engine_result_init (&best, engine.n_ops);
  if (params->len == 0)
    g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                 "basic scheduler: the properties leave nothing to try");
  else if (elk__engine_search (&engine, orders,
                               (const ElkEngineParams *) params->data,
                               params->len, 1, &best, &best_order,
                               &best_params, error))
    {
      program = elk__engine_to_program (&engine,
                                        g_ptr_array_index (orders, best_order),
                                        &best, ELK_POLICY_BASIC);
      elk_program_set_n_orders (program, orders->len);
    }
  elk__engine_result_clear (&best);
  elk__engine_clear (&engine);
  g_ptr_array_unref (orders);
  return program;
}

static void
elk_basic_scheduler_iface_init (ElkSchedulerInterface *iface)
{
  iface->schedule = elk_basic_scheduler_schedule;
}

static void
elk_basic_scheduler_get_property (GObject *object, guint prop_id, GValue *value,
                                  GParamSpec *pspec)
{
  ElkBasicScheduler *self = ELK_BASIC_SCHEDULER (object);

  switch (prop_id)
    {
    case PROP_LOAD_NOC_SHARE:
      g_value_set_double (value, self->theta);
      break;
    case PROP_PRELOAD_STATE:
      g_value_set_enum (value, self->preload_state);
      break;
    case PROP_CONTENTION:
      g_value_set_enum (value, self->contention);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_basic_scheduler_set_property (GObject *object, guint prop_id, const GValue *value,
                                  GParamSpec *pspec)
{
  ElkBasicScheduler *self = ELK_BASIC_SCHEDULER (object);

  switch (prop_id)
    {
    case PROP_LOAD_NOC_SHARE:
      self->theta = g_value_get_double (value);
      break;
    case PROP_PRELOAD_STATE:
      self->preload_state = g_value_get_enum (value);
      break;
    case PROP_CONTENTION:
      self->contention = g_value_get_enum (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_basic_scheduler_class_init (ElkBasicSchedulerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = elk_basic_scheduler_get_property;
  object_class->set_property = elk_basic_scheduler_set_property;
  properties[PROP_LOAD_NOC_SHARE] =
    g_param_spec_double ("load-noc-share", NULL,
                         "Share of the interconnect a preload may take; a preload lasts max(HBM time, delivery time / share)",
                         0.05, 1.0, 0.7,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                           | G_PARAM_STATIC_STRINGS);
  properties[PROP_PRELOAD_STATE] =
    g_param_spec_enum ("preload-state", NULL,
                       "Preload-state layout every operator uses: smallest, largest fitting, or best (try both, keep the faster)",
                       elk__preload_state_get_type (), ELK_PRELOAD_STATE_BEST,
                       G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                         | G_PARAM_STATIC_STRINGS);
  properties[PROP_CONTENTION] =
    g_param_spec_enum ("contention", NULL,
                       "How preload and execution traffic share the NoC: delay-execution, delay-preload, or best (try both, keep the faster)",
                       elk__contention_get_type (), ELK_CONTENTION_DELAY_EXECUTION,
                       G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                         | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
elk_basic_scheduler_init (ElkBasicScheduler *self)
{
}

static gboolean
basic_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_SCHEDULER, "basic",
                                 ELK_TYPE_BASIC_SCHEDULER, error);
}

ELK_PLUGIN_DEFINE (basic, "Basic baseline: maximal execution space, preload the next operator only", "0.1", basic_register)
