/* elk-cost-aware-allocator.c: the paper's greedy SRAM allocation (§3.6).
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
#include "config.h"

#include <elk/elk.h>
#include "elk-compiler-private.h"

#define ELK_TYPE_COST_AWARE_ALLOCATOR (elk_cost_aware_allocator_get_type ())
G_DECLARE_FINAL_TYPE (ElkCostAwareAllocator, elk_cost_aware_allocator, ELK, COST_AWARE_ALLOCATOR, GObject)

struct _ElkCostAwareAllocator
{
  GObject parent_instance;
  double noc_penalty;
};

enum { PROP_0, PROP_NOC_PENALTY, N_PROPS };
static GParamSpec *properties[N_PROPS];

static void elk_cost_aware_allocator_iface_init (ElkAllocatorInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (ElkCostAwareAllocator, elk_cost_aware_allocator, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (ELK_TYPE_ALLOCATOR,
                                                      elk_cost_aware_allocator_iface_init))

static gboolean
elk_cost_aware_allocator_allocate (ElkAllocator *allocator,
                                   const ElkAllocRequest *request,
                                   ElkAllocResult *result,
                                   GError **error)
{
  ElkCostAwareAllocator *self = ELK_COST_AWARE_ALLOCATOR (allocator);
  g_autofree const ElkPlanTable **tables
    = g_new (const ElkPlanTable *, request->n_preloaded + 1);
  g_autofree guint32 *entries = g_new (guint32, request->n_preloaded + 1);
  ElkAllocProblem pb;
  ElkAllocChoice choice = { .pre_entries = entries };

  elk__alloc_problem_from_request (&pb, request, tables, self->noc_penalty);
  if (!elk__alloc_greedy (&pb, &choice))
    return FALSE;
  elk__alloc_choice_to_result (&choice, request->n_preloaded, result);
  return TRUE;
}

static void
elk_cost_aware_allocator_iface_init (ElkAllocatorInterface *iface)
{
  iface->allocate = elk_cost_aware_allocator_allocate;
}

static void
elk_cost_aware_allocator_get_property (GObject *object, guint prop_id, GValue *value,
                                       GParamSpec *pspec)
{
  ElkCostAwareAllocator *self = ELK_COST_AWARE_ALLOCATOR (object);

  switch (prop_id)
    {
    case PROP_NOC_PENALTY:
      g_value_set_double (value, self->noc_penalty);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_cost_aware_allocator_set_property (GObject *object, guint prop_id, const GValue *value,
                                       GParamSpec *pspec)
{
  ElkCostAwareAllocator *self = ELK_COST_AWARE_ALLOCATOR (object);

  switch (prop_id)
    {
    case PROP_NOC_PENALTY:
      self->noc_penalty = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_cost_aware_allocator_class_init (ElkCostAwareAllocatorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = elk_cost_aware_allocator_get_property;
  object_class->set_property = elk_cost_aware_allocator_set_property;
  properties[PROP_NOC_PENALTY] =
    g_param_spec_double ("noc-penalty", NULL,
                        "Weight of the NoC penalty: seconds charged per per-core byte of the executing operator's preload state, times the per-core port time (the artifact uses 0.5)",
                        0.0, 10.0, 0.5,
                        G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                          | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
elk_cost_aware_allocator_init (ElkCostAwareAllocator *self)
{
}

static gboolean
cost_aware_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_ALLOCATOR, "cost-aware",
                                 ELK_TYPE_COST_AWARE_ALLOCATOR, error);
}

ELK_PLUGIN_DEFINE (cost_aware, "Cost-aware greedy SRAM allocator (elk-paper.md §3.6)", "0.1", cost_aware_register)
