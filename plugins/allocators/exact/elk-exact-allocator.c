/* elk-exact-allocator.c: exhaustive allocation, for measuring the greedy gap.
 *
 * Branch and bound over every operator's Pareto options, minimising the
 * same objective as cost-aware.  Exponential in the preload number, so a
 * group with more than max-combinations option combinations is refused with
 * an error; it is meant for tests and small ablations, not for LLMs.
 */
#include "config.h"

#include <elk/elk.h>
#include "elk-compiler-private.h"

#define ELK_TYPE_EXACT_ALLOCATOR (elk_exact_allocator_get_type ())
G_DECLARE_FINAL_TYPE (ElkExactAllocator, elk_exact_allocator, ELK, EXACT_ALLOCATOR, GObject)

struct _ElkExactAllocator
{
  GObject parent_instance;
  guint64 max_combinations;
  double noc_penalty;
};

enum { PROP_0, PROP_MAX_COMBINATIONS, PROP_NOC_PENALTY, N_PROPS };
static GParamSpec *properties[N_PROPS];

static void elk_exact_allocator_iface_init (ElkAllocatorInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (ElkExactAllocator, elk_exact_allocator, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (ELK_TYPE_ALLOCATOR,
                                                      elk_exact_allocator_iface_init))

static gboolean
elk_exact_allocator_allocate (ElkAllocator *allocator,
                              const ElkAllocRequest *request,
                              ElkAllocResult *result,
                              GError **error)
{
  ElkExactAllocator *self = ELK_EXACT_ALLOCATOR (allocator);
  g_autofree const ElkPlanTable **tables
    = g_new (const ElkPlanTable *, request->n_preloaded + 1);
  g_autofree guint32 *entries = g_new (guint32, request->n_preloaded + 1);
  ElkAllocProblem pb;
  ElkAllocChoice choice = { .pre_entries = entries };

  elk__alloc_problem_from_request (&pb, request, tables, self->noc_penalty);
  if (!elk__alloc_exact (&pb, self->max_combinations, &choice, error))
    return FALSE;
  elk__alloc_choice_to_result (&choice, request->n_preloaded, result);
  return TRUE;
}

static void
elk_exact_allocator_iface_init (ElkAllocatorInterface *iface)
{
  iface->allocate = elk_exact_allocator_allocate;
}

static void
elk_exact_allocator_get_property (GObject *object, guint prop_id, GValue *value,
                                  GParamSpec *pspec)
{
  ElkExactAllocator *self = ELK_EXACT_ALLOCATOR (object);

  switch (prop_id)
    {
    case PROP_MAX_COMBINATIONS:
      g_value_set_uint64 (value, self->max_combinations);
      break;
    case PROP_NOC_PENALTY:
      g_value_set_double (value, self->noc_penalty);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_exact_allocator_set_property (GObject *object, guint prop_id, const GValue *value,
                                  GParamSpec *pspec)
{
  ElkExactAllocator *self = ELK_EXACT_ALLOCATOR (object);

  switch (prop_id)
    {
    case PROP_MAX_COMBINATIONS:
      self->max_combinations = g_value_get_uint64 (value);
      break;
    case PROP_NOC_PENALTY:
      self->noc_penalty = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_exact_allocator_class_init (ElkExactAllocatorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = elk_exact_allocator_get_property;
  object_class->set_property = elk_exact_allocator_set_property;
  properties[PROP_MAX_COMBINATIONS] =
    g_param_spec_uint64 ("max-combinations", NULL,
                        "Largest number of option combinations the search accepts before failing",
                        1, G_GUINT64_CONSTANT (1000000000000), 10000000,
                        G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                          | G_PARAM_STATIC_STRINGS);
  properties[PROP_NOC_PENALTY] =
    g_param_spec_double ("noc-penalty", NULL,
                        "Weight of the NoC penalty on the executing operator's preload-state bytes",
                        0.0, 10.0, 0.5,
                        G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                          | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
elk_exact_allocator_init (ElkExactAllocator *self)
{
}

static gboolean
exact_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_ALLOCATOR, "exact",
                                 ELK_TYPE_EXACT_ALLOCATOR, error);
}

ELK_PLUGIN_DEFINE (exact, "Exhaustive SRAM allocator for small groups (tests)", "0.1", exact_register)
