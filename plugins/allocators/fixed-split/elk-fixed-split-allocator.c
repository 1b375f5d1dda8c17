/* elk-fixed-split-allocator.c: a fixed execution/preload split of SRAM.
 *
 * exec-fraction of each core's budget is execution space, the rest preload
 * space, whatever the operators need: the SambaNova-style split that the
 * Static baseline sweeps, as an allocator, so that Elk's scheduler can be
 * run with it to isolate the value of cost-aware allocation.
 */
#include "config.h"

#include <elk/elk.h>
#include "elk-compiler-private.h"

#define ELK_TYPE_FIXED_SPLIT_ALLOCATOR (elk_fixed_split_allocator_get_type ())
G_DECLARE_FINAL_TYPE (ElkFixedSplitAllocator, elk_fixed_split_allocator, ELK, FIXED_SPLIT_ALLOCATOR, GObject)

struct _ElkFixedSplitAllocator
{
  GObject parent_instance;
  double exec_fraction;
  double noc_penalty;
};

enum { PROP_0, PROP_EXEC_FRACTION, PROP_NOC_PENALTY, N_PROPS };
static GParamSpec *properties[N_PROPS];

static void elk_fixed_split_allocator_iface_init (ElkAllocatorInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (ElkFixedSplitAllocator, elk_fixed_split_allocator, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (ELK_TYPE_ALLOCATOR,
                                                      elk_fixed_split_allocator_iface_init))

static gboolean
elk_fixed_split_allocator_allocate (ElkAllocator *allocator,
                                    const ElkAllocRequest *request,
                                    ElkAllocResult *result,
                                    GError **error)
{
  ElkFixedSplitAllocator *self = ELK_FIXED_SPLIT_ALLOCATOR (allocator);
  g_autofree const ElkPlanTable **tables
    = g_new (const ElkPlanTable *, request->n_preloaded + 1);
  g_autofree guint32 *entries = g_new (guint32, request->n_preloaded + 1);
  ElkAllocProblem pb;
  ElkAllocChoice choice = { .pre_entries = entries };

  elk__alloc_problem_from_request (&pb, request, tables, self->noc_penalty);
  if (!elk__alloc_fixed_split (&pb, self->exec_fraction, &choice))
    return FALSE;
  elk__alloc_choice_to_result (&choice, request->n_preloaded, result);
  return TRUE;
}

static void
elk_fixed_split_allocator_iface_init (ElkAllocatorInterface *iface)
{
  iface->allocate = elk_fixed_split_allocator_allocate;
}

static void
elk_fixed_split_allocator_get_property (GObject *object, guint prop_id, GValue *value,
                                        GParamSpec *pspec)
{
  ElkFixedSplitAllocator *self = ELK_FIXED_SPLIT_ALLOCATOR (object);

  switch (prop_id)
    {
    case PROP_EXEC_FRACTION:
      g_value_set_double (value, self->exec_fraction);
      break;
    case PROP_NOC_PENALTY:
      g_value_set_double (value, self->noc_penalty);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_fixed_split_allocator_set_property (GObject *object, guint prop_id, const GValue *value,
                                        GParamSpec *pspec)
{
  ElkFixedSplitAllocator *self = ELK_FIXED_SPLIT_ALLOCATOR (object);

  switch (prop_id)
    {
    case PROP_EXEC_FRACTION:
      self->exec_fraction = g_value_get_double (value);
      break;
    case PROP_NOC_PENALTY:
      self->noc_penalty = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_fixed_split_allocator_class_init (ElkFixedSplitAllocatorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = elk_fixed_split_allocator_get_property;
  object_class->set_property = elk_fixed_split_allocator_set_property;
  properties[PROP_EXEC_FRACTION] =
    g_param_spec_double ("exec-fraction", NULL,
                        "Fraction of the per-core SRAM budget given to the executing operator",
                        0.01, 1.0, 0.5,
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
elk_fixed_split_allocator_init (ElkFixedSplitAllocator *self)
{
}

static gboolean
fixed_split_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_ALLOCATOR, "fixed-split",
                                 ELK_TYPE_FIXED_SPLIT_ALLOCATOR, error);
}

ELK_PLUGIN_DEFINE (fixed_split, "Fixed execution/preload SRAM split", "0.1", fixed_split_register)
