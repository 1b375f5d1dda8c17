/* elk-reservation-allocator.c: the allocator the Elk artifact runs.
 *
 * search_optimal_global_config_icbm reserves reserve-factor times the
 * preloaded operators' preload states, gives the executing operator the
 * rest and picks its cold-hot entry with the smallest time + NoC penalty
 * (elk-paper.md §3.6, "What the released code actually does").  The
 * preloaded operators keep their preload states.  The reservation counts
 * the preload states they really hold, so, unlike the artifact (which
 * reserves only their minimum states), it never overcommits SRAM.
 */
#include "config.h"

#include <elk/elk.h>
#include "elk-compiler-private.h"

#define ELK_TYPE_RESERVATION_ALLOCATOR (elk_reservation_allocator_get_type ())
G_DECLARE_FINAL_TYPE (ElkReservationAllocator, elk_reservation_allocator, ELK, RESERVATION_ALLOCATOR, GObject)

struct _ElkReservationAllocator
{
  GObject parent_instance;
  double reserve_factor;
  double noc_penalty;
};

enum { PROP_0, PROP_RESERVE_FACTOR, PROP_NOC_PENALTY, N_PROPS };
static GParamSpec *properties[N_PROPS];

static void elk_reservation_allocator_iface_init (ElkAllocatorInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (ElkReservationAllocator, elk_reservation_allocator, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (ELK_TYPE_ALLOCATOR,
                                                      elk_reservation_allocator_iface_init))

static gboolean
elk_reservation_allocator_allocate (ElkAllocator *allocator,
                                    const ElkAllocRequest *request,
                                    ElkAllocResult *result,
                                    GError **error)
{
  ElkReservationAllocator *self = ELK_RESERVATION_ALLOCATOR (allocator);
  g_autofree const ElkPlanTable **tables
    = g_new (const ElkPlanTable *, request->n_preloaded + 1);
  g_autofree guint32 *entries = g_new (guint32, request->n_preloaded + 1);
  ElkAllocProblem pb;
  ElkAllocChoice choice = { .pre_entries = entries };

  elk__alloc_problem_from_request (&pb, request, tables, self->noc_penalty);
  if (!elk__alloc_reservation (&pb, self->reserve_factor, &choice))
    return FALSE;
  elk__alloc_choice_to_result (&choice, request->n_preloaded, result);
  return TRUE;
}

static void
elk_reservation_allocator_iface_init (ElkAllocatorInterface *iface)
{
  iface->allocate = elk_reservation_allocator_allocate;
}

static void
elk_reservation_allocator_get_property (GObject *object, guint prop_id, GValue *value,
                                        GParamSpec *pspec)
{
  ElkReservationAllocator *self = ELK_RESERVATION_ALLOCATOR (object);

  switch (prop_id)
    {
    case PROP_RESERVE_FACTOR:
      g_value_set_double (value, self->reserve_factor);
      break;
    case PROP_NOC_PENALTY:
      g_value_set_double (value, self->noc_penalty);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_reservation_allocator_set_property (GObject *object, guint prop_id, const GValue *value,
                                        GParamSpec *pspec)
{
  ElkReservationAllocator *self = ELK_RESERVATION_ALLOCATOR (object);

  switch (prop_id)
    {
    case PROP_RESERVE_FACTOR:
      self->reserve_factor = g_value_get_double (value);
      break;
    case PROP_NOC_PENALTY:
      self->noc_penalty = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
elk_reservation_allocator_class_init (ElkReservationAllocatorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = elk_reservation_allocator_get_property;
  object_class->set_property = elk_reservation_allocator_set_property;
  properties[PROP_RESERVE_FACTOR] =
    g_param_spec_double ("reserve-factor", NULL,
                        "Multiple of the preloaded operators' preload states reserved before the executing operator is sized (artifact: 1.01)",
                        1.0, 4.0, 1.01,
                        G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                          | G_PARAM_STATIC_STRINGS);
  properties[PROP_NOC_PENALTY] =
    g_param_spec_double ("noc-penalty", NULL,
                        "Weight of the NoC penalty on the executing operator's preload-state bytes (artifact: 0.5)",
                        0.0, 10.0, 0.5,
                        G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                          | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
elk_reservation_allocator_init (ElkReservationAllocator *self)
{
}

static gboolean
reservation_register (ElkPlugin *plugin, GError **error)
{
  return elk_plugin_add_feature (plugin, ELK_TYPE_ALLOCATOR, "reservation",
                                 ELK_TYPE_RESERVATION_ALLOCATOR, error);
}

ELK_PLUGIN_DEFINE (reservation, "Reservation SRAM allocator (the Elk artifact's heuristic)", "0.1", reservation_register)
