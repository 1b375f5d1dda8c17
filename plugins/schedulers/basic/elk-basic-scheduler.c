/* elk-basic-scheduler.c: the Basic baseline of elk-paper.md §5.3.
 *
 * Each operator gets as much execution space as possible; the space left
 * preloads following operators only until one that reads HBM is buffered
 * (the artifact's naive schedule).  Every operator uses its smallest or its
 * largest fitting preload state (preload-state=best tries both and keeps the
 * faster, as the artifact does).  It is a policy on libelk's backward
 * engine (elk-compile.h), like the other designs, so only the policy
 * differs.  The experiment's allocator
 * is not consulted: Basic's sizing rule is part of its definition.
 */
#include "config.h"

/* The engine and its policies are unstable API (elk-compile.h). */
#define ELK_USE_UNSTABLE_API
#include <elk/elk.h>

#define ELK_TYPE_BASIC_SCHEDULER (elk_basic_scheduler_get_type ())
G_DECLARE_FINAL_TYPE (ElkBasicScheduler, elk_basic_scheduler, ELK, BASIC_SCHEDULER, GObject)

struct _ElkBasicScheduler
{
  GObject parent_instance;
  double theta;
  gint preload_state;
  gint contention;
  gint expert_preload;
  double expert_threshold;
  guint expert_hot;
};

/* The policy.  Preload until one HBM-reading operator is buffered, within
 * what E's smallest plan leaves; E takes the fastest plan of its chosen
 * preload state that fits what is left.  policy_data points to a gboolean:
 * use the largest fitting preload state instead of the smallest. */
static ElkEngineVerdict
basic_choose (const ElkEngine *engine, const ElkEngineParams *params,
              ElkEngineCandidate *c, GError **error)
{
  const gboolean *largest = params->policy_data;
  guint64 space = elk_engine_get_usable_sram (engine)
                  - elk_engine_table_min_hot (c->table);
  gint e;

  if ((c->preload_bytes > (double) space || c->n_new_hbm > 1)
      && c->n_tried > 0)
    return ELK_ENGINE_STOP;
  e = elk_engine_table_baseline_entry (c->table, c->budget, *largest);
  if (e < 0)
    return ELK_ENGINE_STOP;
  c->entry = (guint32) e;
  c->exec_s = c->table->cold_hot[e].exec_s;
  c->warmup_s = c->table->cold_hot[e].warmup_s;
  return ELK_ENGINE_TAKE;
}

/* Basic takes the deepest candidate that fits. */
static ElkEngineDepth
basic_depth (const ElkEngine *engine, const ElkEngineParams *params,
             guint32 op)
{
  return ELK_ENGINE_DEPTH_DEEPEST_TAKEN;
}

static const ElkEnginePolicy basic_policy = {
  .name = "basic",
  .choose = basic_choose,
  .depth = basic_depth,
  .preload_size = ELK_ENGINE_PRELOAD_SIZE_CHOSEN,
  .fit_contention = TRUE,
};

static ElkProgram *
elk_basic_scheduler_schedule (ElkScheduler *scheduler,
                              const ElkPlanSet *plans,
                              ElkAllocator *allocator,
                              GError **error)
{
  static const gboolean largest[2] = { FALSE, TRUE };
  ElkBasicScheduler *self = ELK_BASIC_SCHEDULER (scheduler);
  g_autoptr(ElkEngine) engine = elk_engine_new (plans, allocator, error);
  g_autoptr (ElkProgram) program = NULL;
  g_autoptr(GPtrArray) orders = NULL;
  g_autoptr(GArray) params = g_array_new (FALSE, FALSE,
                                          sizeof (ElkEngineParams));

  if (engine == NULL)
    return NULL;
  orders = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (orders,
                   elk_order_new_identity (elk_engine_get_n_ops (engine)));
  for (guint s = 0; s < 2; s++)
    for (guint v = 0; v < 2; v++)
      {
        ElkEngineParams p = { &basic_policy, &largest[s], self->theta,
                              v == 0, FALSE };
        if (!elk_baseline_preload_state_allows (self->preload_state, s == 1)
            || !elk_contention_variant_allows (self->contention, v == 0))
          continue;
        g_array_append_val (params, p);
      }
  if (params->len == 0)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "basic scheduler: the properties leave nothing to try");
      return NULL;
    }
  program = elk_engine_search_program (engine, orders,
                                       (const ElkEngineParams *) params->data,
                                       params->len, 1, error);
  if (program == NULL)
    return NULL;
  /* Where the experts of a mixture of experts preload (docs/compiler.md,
   * "Scheduling under routing uncertainty"); no change without them. */
  return elk_program_apply_expert_policy (program, plans, self->expert_preload,
                                          self->expert_threshold,
                                          self->expert_hot, error);
}

ELK_DEFINE_SCHEDULER (ElkBasicScheduler,
                      elk_basic_scheduler,
                      elk_basic_scheduler_schedule)

static void
elk_basic_scheduler_class_init (ElkBasicSchedulerClass *klass)
{
  ElkFieldProperty props[] = {
    { elk_engine_param_spec_load_noc_share (0.7),
      G_STRUCT_OFFSET (ElkBasicScheduler, theta) },
    { elk_engine_param_spec_preload_state (),
      G_STRUCT_OFFSET (ElkBasicScheduler, preload_state) },
    { elk_engine_param_spec_contention (ELK_CONTENTION_DELAY_EXECUTION),
      G_STRUCT_OFFSET (ElkBasicScheduler, contention) },
    { elk_engine_param_spec_expert_preload (),
      G_STRUCT_OFFSET (ElkBasicScheduler, expert_preload) },
    { elk_engine_param_spec_expert_threshold (),
      G_STRUCT_OFFSET (ElkBasicScheduler, expert_threshold) },
    { elk_engine_param_spec_expert_hot (),
      G_STRUCT_OFFSET (ElkBasicScheduler, expert_hot) },
  };

  elk_field_properties_install (G_OBJECT_CLASS (klass), props,
                                G_N_ELEMENTS (props));
}

ELK_PLUGIN_DEFINE_FEATURE (basic,
                           "Basic baseline: maximal execution space, preload "
                           "the next operator only",
                           "0.1",
                           ELK_TYPE_SCHEDULER,
                           "basic",
                           ELK_TYPE_BASIC_SCHEDULER)
