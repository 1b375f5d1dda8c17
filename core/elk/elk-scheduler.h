/* elk-scheduler.h: the ElkScheduler extension point.
 *
 * A scheduler decides, for a graph on a chip, which operators are preloaded
 * while each one executes, with which plans, and in which order the
 * preloads are issued.  It receives the per-operator plan tables (built
 * once per graph and chip by core/plan) and the allocator the experiment
 * chose, and returns an ElkProgram.
 */
#pragma once

#include <glib-object.h>
#include <elk/elk-allocator.h>
#include <elk/elk-program.h>

G_BEGIN_DECLS

/**
 * ELK_SCHEDULER_EXTENSION_POINT:
 *
 * The kind name of #ElkScheduler features, as experiment files and tools write
 * it ("scheduler").
 */
#define ELK_SCHEDULER_EXTENSION_POINT "scheduler"

/**
 * ElkScheduler:
 *
 * The scheduler interface: decides, for a graph on a chip, which operators
 * are preloaded while each one executes, with which plans, and in which
 * order the preloads are issued, and returns an #ElkProgram.
 */
#define ELK_TYPE_SCHEDULER (elk_scheduler_get_type ())
ELK_API
G_DECLARE_INTERFACE (ElkScheduler, elk_scheduler, ELK, SCHEDULER, GObject)

/**
 * ElkSchedulerInterface:
 * @schedule: required; builds the program.
 *
 * Since: 0.1
 */
struct _ElkSchedulerInterface
{
  /*< private >*/
  GTypeInterface parent_iface;

  /*< public >*/
  ElkProgram *(*schedule) (ElkScheduler *self,
                           const ElkPlanSet *plans,
                           ElkAllocator *allocator,
                           GError **error);
  /* Append new vfuncs here only; give them defaults in default_init. */
};

/**
 * ElkSchedulerInterface::schedule:
 * @self: a scheduler
 * @plans: the plan tables of the graph on the target chip
 * @allocator: the allocator the experiment chose
 * @error: return location for a #GError
 *
 * Builds the program.  elk_scheduler_schedule() checks it with
 * elk_program_validate().
 *
 * Returns: (transfer full) (nullable): a new program, or %NULL with
 *   @error set.
 */

ELK_API ElkProgram *elk_scheduler_schedule (ElkScheduler *self,
                                            const ElkPlanSet *plans,
                                            ElkAllocator *allocator,
                                            GError **error);

G_END_DECLS
