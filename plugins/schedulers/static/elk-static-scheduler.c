/* elk-static-scheduler.c: the Static baseline of elk-paper.md §5.3.
 *
 * T10 extended with HBM, SambaNova-style: one execution space for the whole
 * model, the rest of SRAM a fixed preload space filled with as many
 * following operators as fit.  The split is swept from the largest minimum
 * execute footprint of any operator up to the usable SRAM in
 * sweep-step-kib steps (the artifact uses 10 KB), with the smallest and the
 * largest preload states, and the fastest schedule wins.  The sweep runs on
 * a thread pool; the result does not depend on the thread count.
 */
#include "config.h"

#include <elk/elk.h>
#include "elk-compiler-private.h"

#define ELK_TYPE_STATIC_SCHEDULER (elk_static_scheduler_get_type ())
G_DECLARE_FINAL_TYPE (ElkStaticScheduler, elk_static_scheduler, ELK, STATIC_SCHEDULER, GObject)

struct _ElkStaticScheduler
{
  GObject parent_instance;
  double theta;
  gint preload_state;
  gint contention;
  guint sweep_step_kib;
  guint threads;
};

enum { PROP_0, PROP_LOAD_NOC_SHARE, PROP_PRELOAD_STATE, PROP_CONTENTION, PROP_SWEEP_STEP_KIB, PROP_THREADS, N_PROPS };
static GParamSpec *properties[N_PROPS];

static void elk_static_scheduler_iface_init (ElkSchedulerInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (ElkStaticScheduler, elk_static_scheduler, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (ELK_TYPE_SCHEDULER,
                                                      elk_static_scheduler_iface_init))

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
elk_static_scheduler_schedule (ElkScheduler *scheduler,
                               const ElkPlanSet *plans,
                               ElkAllocator *allocator,
                               GError **error)
{
  ElkStaticScheduler *self = ELK_STATIC_SCHEDULER (scheduler);
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
  {
    guint64 min_exec = 0, step = (guint64) self->sweep_step_kib * 1024;
    for (guint i = 0; i < engine.n_ops; i++)
      min_exec = MAX (min_exec, elk__table_min_hot (engine.tables[i]));
    for (guint64 x = (min_exec + 1023) / 1024 * 1024; x <= engine.usable;
         x += step)
      for (guint s = 0; s < 2; s++)
        for (guint v = 0; v < 2; v++)
          {
            ElkEngineParams p = { ELK_POLICY_STATIC, self->theta, v == 0, x,
                                  s == 1, FALSE };
            if (!state_allowed (self->preload_state, s == 1)
                || !variant_allowed (self->contention, v == 0))
              continue;
            g_array_append_val (params, p);
          }
  }

  elk__engine_result_init (&best, engine.n_ops);
  if (params->len == 0)
    g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                 "static scheduler: the properties leave nothing to try");
  else if (elk__engine_search (&engine, orders,
                               (const ElkEngineParams *) params->data,
                               params->len, self->threads, &best, &best_order,
                               &best_params, error))
    {
      program = elk__engine_to_program (&engine,
                                        g_ptr_array_index (orders, best_order),
                                        &best, ELK_POLICY_STATIC);
      elk_program_set_n_orders (program, orders->len);
    }
  elk__engine_result_clear (&best);
  elk__engine_clear (&engine);
  g_ptr_array_unref (orders);
  return program;
}

static void
elk_static_scheduler_iface_init (ElkSchedulerInterface *iface)
{
  iface->schedule = elk_static_scheduler_schedule;
}

static void
elk_static_scheduler_get_property (GObject *object, guint prop_id, GValue *value,
                                   GParamSpec *pspec)
{
  ElkStaticScheduler *self = ELK_STATIC_SCHEDULER (object);

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
    case PROP_SWEEP_STEP_KIB:
      g_value_set_uint (value, self->sweep_step_kib);
      break;
    case PROP_THREADS:
      g_value_set_uint (value, self->threads);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_static_scheduler_set_property (GObject *object, guint prop_id, const GValue *value,
                                   GParamSpec *pspec)
{
  ElkStaticScheduler *self = ELK_STATIC_SCHEDULER (object);

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
    case PROP_SWEEP_STEP_KIB:
      self->sweep_step_kib = g_value_get_uint (value);
      break;
    case PROP_THREADS:
      self->threads = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_static_scheduler_class_init (ElkStaticSchedulerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = elk_static_scheduler_get_property;
  object_class->set_property = elk_static_scheduler_set_property;
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
  properties[PROP_SWEEP_STEP_KIB] =
    g_param_spec_uint ("sweep-step-kib", NULL,
                       "Step of the execution-space sweep, in KiB",
                       1, 1024, 10,
                       G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                         | G_PARAM_STATIC_STRINGS);
  properties[PROP_THREADS] =
    g_param_spec_uint ("threads", NULL,
                       "Threads evaluating candidates (0 = one per processor); results do not depend on it",
                       0, 1024, 0,
                       G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                         | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
elk_static_scheduler_init (ElkStaticScheduler *self)
{
}

static gboolean
static_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_SCHEDULER, "static",
                                 ELK_TYPE_STATIC_SCHEDULER, error);
}

ELK_PLUGIN_DEFINE (static, "Static baseline: best fixed execution/preload split, found by sweep", "0.1", static_register)
