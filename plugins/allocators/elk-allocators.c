/* elk-allocators.c: the four shipped SRAM allocators (elk-paper.md §3.6),
 * one plugin with four features, as GStreamer's coreelements is.
 *
 * Each feature is a final type with its properties; the algorithms are
 * the allocation cores of elk-alloc-core.c, which live with the plugin
 * (tests/compiler/test-timeline.c compiles them in to drive them with
 * hand-made tables).  A feature is registered when its meson option
 * (allocator-<name>) is enabled.
 */
#include "config.h"

#include <elk/elk.h>
#include "elk-alloc-core.h"

/* What every allocate() does around its core: the problem from the
 * request, the core, the choice back into the result.  A core returns
 * FALSE without an error when nothing fits. */
typedef gboolean (*CoreFunc) (const AllocProblem *pb,
                              gconstpointer self,
                              AllocChoice *choice,
                              GError **error);

static gboolean
allocate_with (const ElkAllocRequest *request, ElkAllocResult *result,
               double noc_penalty, CoreFunc core, gconstpointer self,
               GError **error)
{
  g_autofree const ElkPlanTable **tables
    = g_new (const ElkPlanTable *, request->n_preloaded + 1);
  g_autofree guint32 *entries = g_new (guint32, request->n_preloaded + 1);
  AllocProblem pb;
  AllocChoice choice = { .pre_entries = entries };

  elk__alloc_problem_from_request (&pb, request, tables, noc_penalty);
  if (!core (&pb, self, &choice, error))
    return FALSE;
  elk__alloc_choice_to_result (&choice, request->n_preloaded, result);
  return TRUE;
}

/* Every allocator weighs the NoC penalty of the executing operator's
 * preload state, with the same range and the artifact's 0.5 by default. */
static ElkFieldProperty
noc_penalty_property (const char *blurb, gsize offset)
{
  ElkFieldProperty prop = {
    g_param_spec_double ("noc-penalty", NULL, blurb, 0.0, 10.0, 0.5,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                             | G_PARAM_STATIC_STRINGS),
    offset,
  };

  return prop;
}

/* ---------------------------------------------------------------------- */
/* cost-aware: the paper's greedy SRAM allocation (§3.6).
 *
 * Every operator of the group (the executing one and the preloaded ones)
 * starts at its fastest option; while the group overflows the budget, the
 * operator whose next smaller option saves the most bytes per second added
 * shrinks.  The executing operator trades execution space for time; a
 * preloaded operator trades preload space for data-distribution time.  The
 * objective adds the artifact's NoC penalty for broadcasting the executing
 * operator's preload state (noc-penalty x cold bytes / port rate).  This is
 * Elk's default allocator; "exact" measures how far it is from optimal.
 */

#define ELK_TYPE_COST_AWARE_ALLOCATOR (elk_cost_aware_allocator_get_type ())
G_DECLARE_FINAL_TYPE (ElkCostAwareAllocator, elk_cost_aware_allocator, ELK, COST_AWARE_ALLOCATOR, GObject)

struct _ElkCostAwareAllocator
{
  GObject parent_instance;
  double noc_penalty;
};

/* The paper's greedy loop (cost-aware). */
static gboolean
greedy_core (const AllocProblem *pb,
             gconstpointer self,
             AllocChoice *choice,
             GError **error)
{
  return elk__alloc_greedy (pb, choice);
}

static gboolean
elk_cost_aware_allocator_allocate (ElkAllocator *allocator,
                                   const ElkAllocRequest *request,
                                   ElkAllocResult *result,
                                   GError **error)
{
  ElkCostAwareAllocator *self = ELK_COST_AWARE_ALLOCATOR (allocator);

  return allocate_with (request, result, self->noc_penalty, greedy_core, self,
                        error);
}

ELK_DEFINE_ALLOCATOR (ElkCostAwareAllocator,
                      elk_cost_aware_allocator,
                      elk_cost_aware_allocator_allocate)

static void
elk_cost_aware_allocator_class_init (ElkCostAwareAllocatorClass *klass)
{
  ElkFieldProperty props[] = {
    noc_penalty_property ("Weight of the NoC penalty: seconds charged per "
                          "per-core byte of the executing operator's preload "
                          "state, times the per-core port time (the artifact "
                          "uses 0.5)",
                          G_STRUCT_OFFSET (ElkCostAwareAllocator, noc_penalty)),
  };

  elk_field_properties_install (G_OBJECT_CLASS (klass), props,
                                G_N_ELEMENTS (props));
}


/* ---------------------------------------------------------------------- */
/* reservation: the allocator the Elk artifact runs.
 *
 * search_optimal_global_config_icbm reserves reserve-factor times the
 * preloaded operators' preload states, gives the executing operator the
 * rest and picks its cold-hot entry with the smallest time + NoC penalty
 * (elk-paper.md §3.6, "What the released code actually does").  The
 * preloaded operators keep their preload states.  The reservation counts
 * the preload states they really hold, so, unlike the artifact (which
 * reserves only their minimum states), it never overcommits SRAM.
 */

#define ELK_TYPE_RESERVATION_ALLOCATOR (elk_reservation_allocator_get_type ())
G_DECLARE_FINAL_TYPE (ElkReservationAllocator, elk_reservation_allocator, ELK, RESERVATION_ALLOCATOR, GObject)

struct _ElkReservationAllocator
{
  GObject parent_instance;
  double reserve_factor;
  double noc_penalty;
};

static gboolean
reservation_core (const AllocProblem *pb,
                  gconstpointer self,
                  AllocChoice *choice,
                  GError **error)
{
  const ElkReservationAllocator *a = self;

  return elk__alloc_reservation (pb, a->reserve_factor, choice);
}

static gboolean
elk_reservation_allocator_allocate (ElkAllocator *allocator,
                                    const ElkAllocRequest *request,
                                    ElkAllocResult *result,
                                    GError **error)
{
  ElkReservationAllocator *self = ELK_RESERVATION_ALLOCATOR (allocator);

  return allocate_with (request, result, self->noc_penalty, reservation_core, self,
                        error);
}

ELK_DEFINE_ALLOCATOR (ElkReservationAllocator,
                      elk_reservation_allocator,
                      elk_reservation_allocator_allocate)

static void
elk_reservation_allocator_class_init (ElkReservationAllocatorClass *klass)
{
  ElkFieldProperty props[] = {
    { g_param_spec_double (
          "reserve-factor", NULL,
          "Multiple of the preloaded operators' preload states reserved before "
          "the executing operator is sized (artifact: 1.01)",
          1.0, 4.0, 1.01,
          G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS),
      G_STRUCT_OFFSET (ElkReservationAllocator, reserve_factor) },
    noc_penalty_property ("Weight of the NoC penalty on the executing "
                          "operator's preload-state bytes (artifact: 0.5)",
                          G_STRUCT_OFFSET (ElkReservationAllocator,
                                           noc_penalty)),
  };

  elk_field_properties_install (G_OBJECT_CLASS (klass), props,
                                G_N_ELEMENTS (props));
}


/* ---------------------------------------------------------------------- */
/* fixed-split: a fixed execution/preload split of SRAM.
 *
 * exec-fraction of each core's budget is execution space, the rest preload
 * space, whatever the operators need: the SambaNova-style split that the
 * Static baseline sweeps, as an allocator, so that Elk's scheduler can be
 * run with it to isolate the value of cost-aware allocation.
 */

#define ELK_TYPE_FIXED_SPLIT_ALLOCATOR (elk_fixed_split_allocator_get_type ())
G_DECLARE_FINAL_TYPE (ElkFixedSplitAllocator, elk_fixed_split_allocator, ELK, FIXED_SPLIT_ALLOCATOR, GObject)

struct _ElkFixedSplitAllocator
{
  GObject parent_instance;
  double exec_fraction;
  double noc_penalty;
};

static gboolean
fixed_split_core (const AllocProblem *pb,
                  gconstpointer self,
                  AllocChoice *choice,
                  GError **error)
{
  const ElkFixedSplitAllocator *a = self;

  return elk__alloc_fixed_split (pb, a->exec_fraction, choice);
}

static gboolean
elk_fixed_split_allocator_allocate (ElkAllocator *allocator,
                                    const ElkAllocRequest *request,
                                    ElkAllocResult *result,
                                    GError **error)
{
  ElkFixedSplitAllocator *self = ELK_FIXED_SPLIT_ALLOCATOR (allocator);

  return allocate_with (request, result, self->noc_penalty, fixed_split_core, self,
                        error);
}

ELK_DEFINE_ALLOCATOR (ElkFixedSplitAllocator,
                      elk_fixed_split_allocator,
                      elk_fixed_split_allocator_allocate)

static void
elk_fixed_split_allocator_class_init (ElkFixedSplitAllocatorClass *klass)
{
  ElkFieldProperty props[] = {
    { g_param_spec_double ("exec-fraction", NULL,
                           "Fraction of the per-core SRAM budget given to the "
                           "executing operator",
                           0.01, 1.0, 0.5,
                           G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                               | G_PARAM_STATIC_STRINGS),
      G_STRUCT_OFFSET (ElkFixedSplitAllocator, exec_fraction) },
    noc_penalty_property ("Weight of the NoC penalty on the executing "
                          "operator's preload-state bytes",
                          G_STRUCT_OFFSET (ElkFixedSplitAllocator,
                                           noc_penalty)),
  };

  elk_field_properties_install (G_OBJECT_CLASS (klass), props,
                                G_N_ELEMENTS (props));
}


/* ---------------------------------------------------------------------- */
/* exact: exhaustive allocation, for measuring the greedy gap.
 *
 * Branch and bound over every operator's Pareto options, minimising the
 * same objective as cost-aware.  Exponential in the preload number, so a
 * group with more than max-combinations option combinations is refused with
 * an error; it is meant for tests and small ablations, not for LLMs.
 */

#define ELK_TYPE_EXACT_ALLOCATOR (elk_exact_allocator_get_type ())
G_DECLARE_FINAL_TYPE (ElkExactAllocator, elk_exact_allocator, ELK, EXACT_ALLOCATOR, GObject)

struct _ElkExactAllocator
{
  GObject parent_instance;
  guint64 max_combinations;
  double noc_penalty;
};

static gboolean
exact_core (const AllocProblem *pb,
            gconstpointer self,
            AllocChoice *choice,
            GError **error)
{
  const ElkExactAllocator *a = self;

  return elk__alloc_exact (pb, a->max_combinations, choice, error);
}

static gboolean
elk_exact_allocator_allocate (ElkAllocator *allocator,
                              const ElkAllocRequest *request,
                              ElkAllocResult *result,
                              GError **error)
{
  ElkExactAllocator *self = ELK_EXACT_ALLOCATOR (allocator);

  return allocate_with (request, result, self->noc_penalty, exact_core, self,
                        error);
}

ELK_DEFINE_ALLOCATOR (ElkExactAllocator,
                      elk_exact_allocator,
                      elk_exact_allocator_allocate)

static void
elk_exact_allocator_class_init (ElkExactAllocatorClass *klass)
{
  ElkFieldProperty props[] = {
    { g_param_spec_uint64 ("max-combinations", NULL,
                           "Largest number of option combinations the search "
                           "accepts before failing",
                           1, G_GUINT64_CONSTANT (1000000000000), 10000000,
                           G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                               | G_PARAM_STATIC_STRINGS),
      G_STRUCT_OFFSET (ElkExactAllocator, max_combinations) },
    noc_penalty_property ("Weight of the NoC penalty on the executing "
                          "operator's preload-state bytes",
                          G_STRUCT_OFFSET (ElkExactAllocator, noc_penalty)),
  };

  elk_field_properties_install (G_OBJECT_CLASS (klass), props,
                                G_N_ELEMENTS (props));
}


/* ---------------------------------------------------------------------- */

static gboolean
allocators_register (ElkPlugin *plugin, GError **error)
{
#if ELK_WITH_COST_AWARE
  if (!elk_plugin_add_feature (plugin, ELK_TYPE_ALLOCATOR, "cost-aware",
                               ELK_TYPE_COST_AWARE_ALLOCATOR, error))
    return FALSE;
#endif
#if ELK_WITH_RESERVATION
  if (!elk_plugin_add_feature (plugin, ELK_TYPE_ALLOCATOR, "reservation",
                               ELK_TYPE_RESERVATION_ALLOCATOR, error))
    return FALSE;
#endif
#if ELK_WITH_FIXED_SPLIT
  if (!elk_plugin_add_feature (plugin, ELK_TYPE_ALLOCATOR, "fixed-split",
                               ELK_TYPE_FIXED_SPLIT_ALLOCATOR, error))
    return FALSE;
#endif
#if ELK_WITH_EXACT
  if (!elk_plugin_add_feature (plugin, ELK_TYPE_ALLOCATOR, "exact",
                               ELK_TYPE_EXACT_ALLOCATOR, error))
    return FALSE;
#endif
  return TRUE;
}

ELK_PLUGIN_DEFINE (allocators, "SRAM allocators: cost-aware (elk-paper.md §3.6), reservation (the Elk artifact's heuristic), fixed-split, exact (tests)", "0.1", allocators_register)
