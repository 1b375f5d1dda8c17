/* elk-chip.h: the ElkChip extension point (chip backends).
 *
 * A chip backend describes a machine (dup_spec) and runs compiled programs
 * on its own model of that machine (run).  The spec feeds the compiler's
 * plan space; run() must be a model of its own, so that it can disagree
 * with the compiler's estimates.
 */
#pragma once

#include <glib-object.h>
#include <elk/elk-chip-spec.h>
#include <elk/elk-program.h>
#include <elk/elk-metrics.h>
#include <elk/elk-trace.h>
#include <elk/elk-cost-model.h>

G_BEGIN_DECLS

/**
 * ELK_CHIP_EXTENSION_POINT:
 *
 * The kind name of #ElkChip features, as experiment files and tools write
 * it ("chip").
 */
#define ELK_CHIP_EXTENSION_POINT "chip"

/**
 * ElkChip:
 *
 * The chip backend interface: describes a machine (elk_chip_dup_spec())
 * and runs compiled programs on its own model of it (elk_chip_run()), so
 * that it can disagree with the compiler's estimates.
 */
#define ELK_TYPE_CHIP (elk_chip_get_type ())
ELK_API
G_DECLARE_INTERFACE (ElkChip, elk_chip, ELK, CHIP, GObject)

/**
 * ElkChipInterface:
 * @dup_spec: required; the machine description, from the properties.
 * @run: required; runs @program and reports its metrics.
 * @run_traced: optional; like @run, and also records timelines in @trace.
 *   A backend without it cannot serve experiments that ask for traces,
 *   which the experiment loader reports as an error.
 * @dup_cost_model: optional (since 0.2); the cost model schedulers plan
 *   with on this chip (docs/plugin-guide.md, "A chip's cost model").
 *   %NULL, or returning %NULL without an error, means the analytic model.
 * @dup_measurer: optional (since 0.2); a chip that measures every program
 *   exactly as this one does but has no side effects (writes no report
 *   files), on which a scheduler may run its candidate programs
 *   (elk_chip_dup_measurer()).  %NULL means this chip itself, for a chip
 *   whose run() has no side effects.
 *
 * Since: 0.1
 */
struct _ElkChipInterface
{
  /*< private >*/
  GTypeInterface parent_iface;

  /*< public >*/
  ElkChipSpec *(*dup_spec) (ElkChip *self, GError **error);
  ElkMetrics *(*run) (ElkChip *self,
                      ElkProgram *program,
                      const ElkPlanSet *plans,
                      GError **error);
  ElkMetrics *(*run_traced) (ElkChip *self,
                             ElkProgram *program,
                             const ElkPlanSet *plans,
                             ElkTrace *trace,
                             GError **error);
  ElkCostModel *(*dup_cost_model) (ElkChip *self,
                                   const ElkPlanSet *plans,
                                   GError **error);
  ElkChip *(*dup_measurer) (ElkChip *self);
  /* Append new vfuncs here only; give them defaults in default_init. */
};

/**
 * ElkChipInterface::dup_spec:
 * @self: a chip backend
 * @error: return location for a #GError
 *
 * Describes the machine from the backend's properties.
 *
 * Returns: (transfer full) (nullable): a new spec, or %NULL with @error
 *   set.
 */

/**
 * ElkChipInterface::run:
 * @self: a chip backend
 * @program: a validated program
 * @plans: the plan tables it was compiled with
 * @error: return location for a #GError
 *
 * Runs @program on the backend's own model of the machine.
 *
 * Returns: (transfer full) (nullable): new metrics, or %NULL with @error
 *   set.
 */

/**
 * ElkChipInterface::run_traced:
 * @self: a chip backend
 * @program: a validated program
 * @plans: the plan tables it was compiled with
 * @trace: where to record timelines
 * @error: return location for a #GError
 *
 * Like run, also recording timelines in @trace.  Optional.
 *
 * Returns: (transfer full) (nullable): new metrics, or %NULL with @error
 *   set.
 */

/**
 * ElkChipInterface::dup_cost_model:
 * @self: a chip backend
 * @plans: the analytic plan set the runner built on the chip's spec
 * @error: return location for a #GError
 *
 * The chip's own cost model, for compiling for this chip.  Optional.
 *
 * Returns: (transfer full) (nullable): a new model; %NULL without @error
 *   for the analytic model, %NULL with @error set on failure.
 */

/**
 * ElkChipInterface::dup_measurer:
 * @self: a chip backend
 *
 * A chip with @self's properties whose run() measures exactly as @self's
 * does, without side effects such as report files.  Optional.
 *
 * Returns: (transfer full): a new chip, never %NULL
 */

ELK_API ElkChipSpec *elk_chip_dup_spec (ElkChip *self, GError **error);
ELK_API ElkCostModel *elk_chip_dup_cost_model (ElkChip *self,
                                               const ElkPlanSet *plans,
                                               GError **error);
ELK_API ElkMetrics *elk_chip_run (ElkChip *self,
                                  ElkProgram *program,
                                  const ElkPlanSet *plans,
                                  GError **error);
ELK_API ElkMetrics *elk_chip_run_traced (ElkChip *self,
                                         ElkProgram *program,
                                         const ElkPlanSet *plans,
                                         ElkTrace *trace,
                                         GError **error);
ELK_API gboolean elk_chip_type_can_trace (GType type);
ELK_API ElkChip *elk_chip_dup_measurer (ElkChip *self);
ELK_API gboolean elk_chip_measure (ElkChip *self,
                                   ElkProgram *program,
                                   const ElkPlanSet *plans,
                                   double *latency_s,
                                   GError **error);
ELK_API void elk_plan_set_set_measurer (ElkPlanSet *set, ElkChip *chip);
ELK_API ElkChip *elk_plan_set_get_measurer (const ElkPlanSet *set);

G_END_DECLS
