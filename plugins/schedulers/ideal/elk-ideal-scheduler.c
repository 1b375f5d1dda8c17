/* elk-ideal-scheduler.c: the Ideal design of elk-paper.md §5.3.
 *
 * Preload and execution each get their own interconnect (no contention),
 * every preloaded operator sits in SRAM at its minimum preload state, and
 * data distribution is free.  Each operator runs the plan the experiment's
 * allocator picks for the space its preloads leave, and preloads as deep
 * as helps.  Unlike the artifact, the executing operator does not also get
 * the whole SRAM: the program must fit each core (the validator checks),
 * so this is a model-based reference, not an absolute bound; the physical
 * bound is reported separately.
 */
#include "config.h"

#include <elk/elk.h>
#include "elk-compiler-private.h"

#define ELK_TYPE_IDEAL_SCHEDULER (elk_ideal_scheduler_get_type ())
G_DECLARE_FINAL_TYPE (ElkIdealScheduler, elk_ideal_scheduler, ELK, IDEAL_SCHEDULER, GObject)

struct _ElkIdealScheduler
{
  GObject parent_instance;
  gint unused;
};

enum { PROP_0, N_PROPS };


static void elk_ideal_scheduler_iface_init (ElkSchedulerInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (ElkIdealScheduler, elk_ideal_scheduler, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (ELK_TYPE_SCHEDULER,
                                                      elk_ideal_scheduler_iface_init))

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
elk_ideal_scheduler_schedule (ElkScheduler *scheduler,
                              const ElkPlanSet *plans,
                              ElkAllocator *allocator,
                              GError **error)
{
  ElkIdealScheduler *self = ELK_IDEAL_SCHEDULER (scheduler);
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
    ElkEngineParams p = { ELK_POLICY_IDEAL, 1.0, FALSE, 0, FALSE, FALSE };
    g_array_append_val (params, p);
  }

  elk__engine_result_init (&best, engine.n_ops);
  if (params->len == 0)
    g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                 "ideal scheduler: the properties leave nothing to try");
  else if (elk__engine_search (&engine, orders,
                               (const ElkEngineParams *) params->data,
                               params->len, 1, &best, &best_order,
                               &best_params, error))
    {
      program = elk__engine_to_program (&engine,
                                        g_ptr_array_index (orders, best_order),
                                        &best, ELK_POLICY_IDEAL);
      elk_program_set_n_orders (program, orders->len);
      /* §5.3: zero-cost distribution, and preloads on a network of their
       * own; a detailed backend must apply the same to measure this bound. */
      elk_program_set_assumptions (program,
                                   ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION
                                   | ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK);
    }
  elk__engine_result_clear (&best);
  elk__engine_clear (&engine);
  g_ptr_array_unref (orders);
  return program;
}

static void
elk_ideal_scheduler_iface_init (ElkSchedulerInterface *iface)
{
  iface->schedule = elk_ideal_scheduler_schedule;
}

static void
elk_ideal_scheduler_class_init (ElkIdealSchedulerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  (void) object_class;
}

static void
elk_ideal_scheduler_init (ElkIdealScheduler *self)
{
}

static gboolean
ideal_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_SCHEDULER, "ideal",
                                 ELK_TYPE_IDEAL_SCHEDULER, error);
}

ELK_PLUGIN_DEFINE (ideal, "Ideal (roofline-like) design: no NoC contention, free distribution", "0.1", ideal_register)
