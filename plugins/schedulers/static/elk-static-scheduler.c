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

/* The engine and its policies are unstable API (elk-compile.h). */
#define ELK_USE_UNSTABLE_API
#include <elk/elk.h>

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
  gint expert_preload;
  double expert_threshold;
  guint expert_hot;
};

/* One point of the sweep: the policy_data of a parameter set. */
typedef struct
{
  guint64 exec_space;
  gboolean largest;
} Split;

/* The policy.  A fixed execution space; the deepest candidate whose
 * preloads fit the rest.  A split that cannot run an operator gives up
 * the parameter set, not the program: other splits may. */
static ElkEngineVerdict
static_choose (const ElkEngine *engine, const ElkEngineParams *params,
               ElkEngineCandidate *c, GError **error)
{
  const Split *split = params->policy_data;
  guint64 usable = elk_engine_get_usable_sram (engine);
  gint e;

  if (split->exec_space > usable)
    return ELK_ENGINE_INFEASIBLE;
  if (c->preload_bytes > (double) (usable - split->exec_space)
      && c->n_tried > 0)
    return ELK_ENGINE_STOP;
  /* The first candidate always runs, in whatever the resident preloads
   * leave if that is less than the split. */
  e = elk_engine_table_baseline_entry (c->table,
                                       MIN (split->exec_space, c->budget),
                                       split->largest);
  if (e < 0)
    return ELK_ENGINE_INFEASIBLE;
  c->entry = (guint32) e;
  c->exec_s = c->table->cold_hot[e].exec_s;
  c->warmup_s = c->table->cold_hot[e].warmup_s;
  return ELK_ENGINE_TAKE;
}

static ElkEngineDepth
static_depth (const ElkEngine *engine, const ElkEngineParams *params,
              guint32 op)
{
  return ELK_ENGINE_DEPTH_DEEPEST_TAKEN;
}

static const ElkEnginePolicy static_policy = {
  .name = "static",
  .choose = static_choose,
  .depth = static_depth,
  .preload_size = ELK_ENGINE_PRELOAD_SIZE_CHOSEN,
  .fit_contention = TRUE,
  .unfit_is_infeasible = TRUE,
};

static ElkProgram *
elk_static_scheduler_schedule (ElkScheduler *scheduler,
                               const ElkPlanSet *plans,
                               ElkAllocator *allocator,
                               GError **error)
{
  ElkStaticScheduler *self = ELK_STATIC_SCHEDULER (scheduler);
  g_autoptr(ElkEngine) engine = elk_engine_new (plans, allocator, error);
  g_autoptr (ElkProgram) program = NULL;
  g_autoptr(GPtrArray) orders = NULL;
  g_autoptr(GArray) params = g_array_new (FALSE, FALSE,
                                          sizeof (ElkEngineParams));
  g_autofree Split *splits = NULL;
  guint64 min_exec = 0, step = (guint64) self->sweep_step_kib * 1024;
  guint64 first, usable;
  guint n_splits = 0;

  if (engine == NULL)
    return NULL;
  orders = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (orders,
                   elk_order_new_identity (elk_engine_get_n_ops (engine)));
  /* The split is swept from the largest minimum execute footprint of any
   * operator up to the usable SRAM. */
  for (guint i = 0; i < elk_engine_get_n_ops (engine); i++)
    min_exec = MAX (min_exec, elk_engine_table_min_hot (
                                elk_engine_get_table (engine, i)));
  first = (min_exec + 1023) / 1024 * 1024;
  usable = elk_engine_get_usable_sram (engine);
  splits = g_new (Split, first <= usable ? 2 * ((usable - first) / step + 1)
                                         : 1);
  for (guint64 x = first; x <= usable; x += step)
    for (guint s = 0; s < 2; s++)
      {
        Split *split = &splits[n_splits++];

        *split = (Split) { x, s == 1 };
        for (guint v = 0; v < 2; v++)
          {
            ElkEngineParams p = { &static_policy, split, self->theta,
                                  v == 0, FALSE };
            if (!elk_baseline_preload_state_allows (self->preload_state,
                                                    s == 1)
                || !elk_contention_variant_allows (self->contention, v == 0))
              continue;
            g_array_append_val (params, p);
          }
      }
  if (params->len == 0)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "static scheduler: the properties leave nothing to try");
      return NULL;
    }
  program = elk_engine_search_program (engine, orders,
                                       (const ElkEngineParams *) params->data,
                                       params->len, self->threads, error);
  if (program == NULL)
    return NULL;
  /* Where the experts of a mixture of experts preload (docs/compiler.md,
   * "Scheduling under routing uncertainty"); no change without them. */
  return elk_program_apply_expert_policy (program, plans, self->expert_preload,
                                          self->expert_threshold,
                                          self->expert_hot, error);
}

ELK_DEFINE_SCHEDULER (ElkStaticScheduler,
                      elk_static_scheduler,
                      elk_static_scheduler_schedule)

static void
elk_static_scheduler_class_init (ElkStaticSchedulerClass *klass)
{
  ElkFieldProperty props[] = {
    { elk_engine_param_spec_load_noc_share (0.7),
      G_STRUCT_OFFSET (ElkStaticScheduler, theta) },
    { elk_engine_param_spec_preload_state (),
      G_STRUCT_OFFSET (ElkStaticScheduler, preload_state) },
    { elk_engine_param_spec_contention (ELK_CONTENTION_DELAY_EXECUTION),
      G_STRUCT_OFFSET (ElkStaticScheduler, contention) },
    { g_param_spec_uint ("sweep-step-kib", NULL,
                         "Step of the execution-space sweep, in KiB", 1, 1024,
                         10,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                             | G_PARAM_STATIC_STRINGS),
      G_STRUCT_OFFSET (ElkStaticScheduler, sweep_step_kib) },
    { elk_engine_param_spec_threads (),
      G_STRUCT_OFFSET (ElkStaticScheduler, threads) },
    { elk_engine_param_spec_expert_preload (),
      G_STRUCT_OFFSET (ElkStaticScheduler, expert_preload) },
    { elk_engine_param_spec_expert_threshold (),
      G_STRUCT_OFFSET (ElkStaticScheduler, expert_threshold) },
    { elk_engine_param_spec_expert_hot (),
      G_STRUCT_OFFSET (ElkStaticScheduler, expert_hot) },
  };

  elk_field_properties_install (G_OBJECT_CLASS (klass), props,
                                G_N_ELEMENTS (props));
}

ELK_PLUGIN_DEFINE_FEATURE (static,
                           "Static baseline: best fixed execution/preload "
                           "split, found by sweep",
                           "0.1",
                           ELK_TYPE_SCHEDULER,
                           "static",
                           ELK_TYPE_STATIC_SCHEDULER)
