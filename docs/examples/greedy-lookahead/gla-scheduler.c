/* gla-scheduler.c: "example:greedy-lookahead", a third-party scheduler
 * plugin for elk, built out of tree against the installed elk-1 and
 * written as a policy on elk's scheduling engine (elk-compile.h).
 *
 * The idea: the executing operator always runs its fastest plan, and it is
 * the preloads that make room.  Elk's own design (elk-full) lets the
 * experiment's allocator split SRAM between the executing operator E and
 * the operators preloaded next to it, shrinking E's plan when the preloads
 * are worth more, and keeps the preload number whose execution starts
 * latest.  This policy never shrinks E: E's cold-hot entry is the one with
 * its fastest execute plan, and the allocator may only re-size the
 * preloaded operators' preload states (ElkAllocRequest.exec_fixed) into
 * what is left.  It then preloads as deep as that allows, up to
 * max-lookahead operators beyond those that must stay resident anyway: the
 * deepest candidate that fits wins (greedy look-ahead).  Only when E's
 * fastest plan does not fit even next to the resident operators does the
 * allocator choose E's plan too, as it would for Elk.
 *
 * So it asks: is a fast execute plan worth more than a well-chosen preload
 * depth?  Its reference experiment compares it with elk-full and checks
 * that its operators never run slower plans than elk-full's
 * (test-greedy-lookahead.sh).
 *
 * Everything here uses elk's public headers (#include <elk/elk.h>), with
 * the engine's unstable API asked for explicitly, and every name carries
 * this project's own prefix (Gla), never Elk.
 */
#define ELK_USE_UNSTABLE_API /* the engine is unstable API: rebuild per elk */
#include <elk/elk.h>

#define GLA_TYPE_SCHEDULER (gla_scheduler_get_type ())
G_DECLARE_FINAL_TYPE (GlaScheduler, gla_scheduler, GLA, SCHEDULER, GObject)

#define DEFAULT_MAX_LOOKAHEAD 16

struct _GlaScheduler
{
  GObject parent_instance;

  guint max_lookahead; /* operators preloaded beyond the resident ones */
};

/* The cold-hot entry with the fastest execute plan; ties go to less data
 * distribution, then to the smaller preload state. */
static guint32
fastest_entry (const ElkPlanTable *table)
{
  guint32 best = 0;

  for (guint32 e = 1; e < table->n_cold_hot; e++)
    {
      const ElkColdHot *a = &table->cold_hot[e], *b = &table->cold_hot[best];
      if (a->exec_s < b->exec_s
          || (a->exec_s == b->exec_s
              && (a->warmup_s < b->warmup_s
                  || (a->warmup_s == b->warmup_s
                      && a->cold_bytes < b->cold_bytes))))
        best = e;
    }
  return best;
}

/* The policy's choose hook: E at its fastest entry, the preloaded
 * operators re-sized by the allocator around it.  params->policy_data
 * points to max-lookahead. */
static ElkEngineVerdict
gla_choose (const ElkEngine *engine,
            const ElkEngineParams *params,
            ElkEngineCandidate *c,
            GError **error)
{
  const guint *max_lookahead = params->policy_data;
  ElkAllocRequest req = {
    .plans = elk_engine_get_plans (engine),
    .exec_op = c->op,
    .n_preloaded = c->n_preloaded,
    .preloaded = c->preloaded,
    .preloaded_fixed = c->preloaded_entries,
    .sram_budget = elk_engine_get_usable_sram (engine),
    .exec_fixed = TRUE,
    .exec_entry = fastest_entry (c->table),
  };
  ElkAllocResult res = { .preload_entries = c->preload_entries };
  gboolean fits = FALSE;

  /* Candidates come shallowest first, so deeper ones only get deeper. */
  if (c->n_preloaded > c->n_forced + *max_lookahead)
    return ELK_ENGINE_STOP;
  if (!elk_allocator_allocate (elk_engine_get_allocator (engine), &req, &res,
                               &fits, error))
    return ELK_ENGINE_FAILED;
  if (!fits && c->n_tried == 0)
    {
      /* Not even next to the resident operators: let the allocator pick
       * E's plan as well, for this shallowest candidate only. */
      req.exec_fixed = FALSE;
      if (!elk_allocator_allocate (elk_engine_get_allocator (engine), &req,
                                   &res, &fits, error))
        return ELK_ENGINE_FAILED;
    }
  if (!fits)
    return ELK_ENGINE_STOP;
  c->entry = res.exec_entry;
  c->exec_s = c->table->cold_hot[c->entry].exec_s;
  c->warmup_s = c->table->cold_hot[c->entry].warmup_s;
  /* Preloads only ever shrink: an allocator may offer a preloaded operator
   * a larger preload state of the same plan (less data distribution), but
   * the operators that executed after it were fitted around its present
   * size, so it keeps that.  extra_s counts what the shrinking adds. */
  for (guint j = 0; j < c->n_preloaded; j++)
    {
      const ElkPlanTable *t = elk_engine_get_table (engine, c->preloaded[j]);
      guint32 now = (guint32) c->preloaded_entries[j];
      if (t->cold_hot[c->preload_entries[j]].cold_bytes
          > t->cold_hot[now].cold_bytes)
        c->preload_entries[j] = now;
      c->extra_s += t->cold_hot[c->preload_entries[j]].warmup_s
                    - t->cold_hot[now].warmup_s;
    }
  c->sets_preload_entries = TRUE;
  return ELK_ENGINE_TAKE;
}

/* Greedy look-ahead: the deepest candidate taken wins. */
static ElkEngineDepth
gla_depth (const ElkEngine *engine, const ElkEngineParams *params, guint32 op)
{
  return ELK_ENGINE_DEPTH_DEEPEST_TAKEN;
}

static const ElkEnginePolicy gla_policy = {
  .name = "example:greedy-lookahead",
  .choose = gla_choose,
  .depth = gla_depth,
  .preload_size = ELK_ENGINE_PRELOAD_SIZE_CHOSEN,
  .fit_contention = TRUE,
};

static ElkProgram *
gla_scheduler_schedule (ElkScheduler *scheduler,
                        const ElkPlanSet *plans,
                        ElkAllocator *allocator,
                        GError **error)
{
  GlaScheduler *self = GLA_SCHEDULER (scheduler);
  g_autoptr (ElkEngine) engine = elk_engine_new (plans, allocator, error);
  g_autoptr (GPtrArray) orders = g_ptr_array_new_with_free_func (g_free);
  ElkEngineParams params[2] = {
    /* policy, policy_data, preload share, delay_exec, abandon_on_cap */
    { &gla_policy, &self->max_lookahead, 0.9, TRUE, FALSE },
    { &gla_policy, &self->max_lookahead, 0.9, FALSE, FALSE },
  };

  if (engine == NULL)
    return NULL;
  /* The default preload order, both contention variants; the lowest
   * estimate wins, whatever the thread count (0: every processor). */
  g_ptr_array_add (orders,
                   elk_order_new_identity (elk_engine_get_n_ops (engine)));
  return elk_engine_search_program (engine, orders, params, 2, 0, error);
}

ELK_DEFINE_SCHEDULER (GlaScheduler, gla_scheduler, gla_scheduler_schedule)

/* max-lookahead is a plain field, so libelk's field properties provide
 * get_property and set_property. */
static void
gla_scheduler_class_init (GlaSchedulerClass *klass)
{
  ElkFieldProperty props[] = {
    { g_param_spec_uint (
          "max-lookahead", NULL,
          "Most operators preloaded beyond those that must stay resident "
          "(0: none)",
          0, 1024, DEFAULT_MAX_LOOKAHEAD,
          G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS),
      G_STRUCT_OFFSET (GlaScheduler, max_lookahead) },
  };

  elk_field_properties_install (G_OBJECT_CLASS (klass), props,
                                G_N_ELEMENTS (props));
}

ELK_PLUGIN_DEFINE_FEATURE (greedy_lookahead,
                           "Fastest execute plans, preloads shrunk around "
                           "them (out-of-tree example)",
                           "2.0",
                           ELK_TYPE_SCHEDULER,
                           "example:greedy-lookahead",
                           GLA_TYPE_SCHEDULER)
