/* elk-ideal-scheduler.c: the Ideal design of elk-paper.md §5.3.
 *
 * Preload and execution each get their own interconnect (no contention),
 * every preloaded operator sits in SRAM at its minimum preload state, and
 * data distribution is free.  Each operator runs the plan the experiment's
 * allocator picks for the space its preloads leave, and preloads as deep
 * as helps.  Unlike the artifact, the executing operator does not also get
 * the whole SRAM: the program must fit each core (the validator checks),
 * so this is a model-based reference, not an absolute bound; the physical
 * bound is reported separately.  On a mixture of experts whose experts are
 * conditional operators it is an oracle: it knows the sampled routing and
 * never preloads an expert the routing does not take
 * (%ELK_PROGRAM_ASSUME_KNOWN_ROUTING, docs/compiler.md).
 */
#include "config.h"

/* The engine and its policies are unstable API (elk-compile.h). */
#define ELK_USE_UNSTABLE_API
#include <elk/elk.h>

#define ELK_TYPE_IDEAL_SCHEDULER (elk_ideal_scheduler_get_type ())
G_DECLARE_FINAL_TYPE (ElkIdealScheduler, elk_ideal_scheduler, ELK, IDEAL_SCHEDULER, GObject)

struct _ElkIdealScheduler
{
  GObject parent_instance;
};

/* The policy.  The allocator sizes E alone, in the space the preloads
 * (each at its minimum preload state) leave, with no contention penalty;
 * data distribution is free. */
static ElkEngineVerdict
ideal_choose (const ElkEngine *engine, const ElkEngineParams *params,
              ElkEngineCandidate *c, GError **error)
{
  ElkAllocRequest req = {
    .plans = elk_engine_get_plans (engine),
    .exec_op = c->op,
    .n_preloaded = 0,
    .preloaded = c->preloaded,
    .preloaded_fixed = c->preloaded_entries,
    .sram_budget = c->budget,
    .contention = ELK_ALLOC_CONTENTION_NONE,
  };
  ElkAllocResult res = { .preload_entries = c->preload_entries };
  gboolean fits = FALSE;

  if (!elk_allocator_allocate (elk_engine_get_allocator (engine), &req, &res,
                               &fits, error))
    return ELK_ENGINE_FAILED;
  if (!fits)
    return ELK_ENGINE_STOP;
  c->entry = res.exec_entry;
  c->exec_s = c->table->cold_hot[c->entry].exec_s;
  return ELK_ENGINE_TAKE;
}

/* §5.3: zero-cost distribution, and preloads on a network of their own
 * (no contention is fitted, and a preload takes the whole port); the
 * program builder records both assumptions, which every chip applies. */
static const ElkEnginePolicy ideal_policy = {
  .name = "ideal",
  .choose = ideal_choose,
  .preload_size = ELK_ENGINE_PRELOAD_SIZE_MINIMUM,
  .fit_contention = FALSE,
  .assumptions = ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION
                 | ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK,
};

static ElkProgram *
elk_ideal_scheduler_schedule (ElkScheduler *scheduler,
                              const ElkPlanSet *plans,
                              ElkAllocator *allocator,
                              GError **error)
{
  g_autoptr(ElkEngine) engine = elk_engine_new (plans, allocator, error);
  g_autoptr(GPtrArray) orders = NULL;
  g_autoptr (ElkProgram) program = NULL;
  ElkEngineParams params = { &ideal_policy, NULL, 1.0, FALSE, FALSE };

  if (engine == NULL)
    return NULL;
  orders = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (orders,
                   elk_order_new_identity (elk_engine_get_n_ops (engine)));
  program = elk_engine_search_program (engine, orders, &params, 1, 1, error);
  if (program == NULL)
    return NULL;
  /* Ideal for a mixture of experts is an oracle: it knows the sampled
   * routing, keeps the preloads of the experts it takes where the
   * schedule put them (as early as fits) and moves the others after their
   * router, where the device skips them; the program declares
   * known-routing.  No change on a graph without conditions. */
  return elk_program_apply_expert_policy (program, plans,
                                          ELK_EXPERT_PRELOAD_ORACLE, 0.5, 0,
                                          error);
}

ELK_DEFINE_SCHEDULER (ElkIdealScheduler,
                      elk_ideal_scheduler,
                      elk_ideal_scheduler_schedule)

static void
elk_ideal_scheduler_class_init (ElkIdealSchedulerClass *klass)
{
}

ELK_PLUGIN_DEFINE_FEATURE (ideal,
                           "Ideal (roofline-like) design: no NoC contention, "
                           "free distribution",
                           "0.1",
                           ELK_TYPE_SCHEDULER,
                           "ideal",
                           ELK_TYPE_IDEAL_SCHEDULER)
