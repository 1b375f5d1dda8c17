/* elk-cost-model.h: the cost model schedulers plan with (stable API).
 *
 * The compiler prices operators to plan: how long an execution takes
 * under a plan, how much interconnect time its own traffic needs, how
 * long its data distribution and its preload take.  By default these are
 * the analytic model's numbers (the plan tables' and the load model of
 * elk_chip_spec_get_load_time(), the paper's), which is exactly what the
 * analytic chip measures.  A chip whose own model differs (noc-sim,
 * ipu-pod) can supply an #ElkCostModel of its own
 * (#ElkChipInterface.dup_cost_model), and the runner then hands schedulers
 * a plan set priced by it (elk_plan_set_new_priced()), so that the engine,
 * the allocators and the final selection plan for the chip they run on.
 */
#pragma once

#include <glib-object.h>
#include <elk/elk-visibility.h>
#include <elk/elk-plan.h>
#include <elk/elk-program.h>
#include <elk/elk-timeline.h>

G_BEGIN_DECLS

/**
 * ElkOpPrice:
 * @exec_s: the execution under the entry's execute plan, without
 *   contention and without data distribution.
 * @compute_s: the part of @exec_s during which the execution leaves the
 *   interconnect idle (preloads may use it then).
 * @noc_s: interconnect time the execution's own traffic needs.
 * @warmup_s: the data distribution from the entry's preload layout to its
 *   execute layout.
 *
 * What one cold-hot entry of an operator costs under a cost model.
 *
 * Since: 0.2
 */
typedef struct
{
  double exec_s;
  double compute_s;
  double noc_s;
  double warmup_s;
} ElkOpPrice;

/**
 * ElkLoadPrice:
 * @hbm_s: the preload's time when the interconnect is no limit (HBM reads,
 *   latencies and the memory side's own limits).
 * @deliver_s: the interconnect time of its delivery at the whole port; at
 *   a preload share θ the delivery lasts @deliver_s / θ.
 *
 * What one preload costs under a cost model: at share θ it lasts
 * max(@hbm_s, @deliver_s / θ) and uses @deliver_s of interconnect time,
 * the form of elk_chip_spec_get_load_time().
 *
 * Since: 0.2
 */
typedef struct
{
  double hbm_s;
  double deliver_s;
} ElkLoadPrice;

/**
 * ElkCostModel:
 *
 * A cost model.  An instance of the base type is the analytic model; a
 * chip's model is a subclass that overrides some of the virtual functions.
 *
 * Since: 0.2
 */
#define ELK_TYPE_COST_MODEL (elk_cost_model_get_type ())
ELK_API
G_DECLARE_DERIVABLE_TYPE (
    ElkCostModel, elk_cost_model, ELK, COST_MODEL, GObject)

/**
 * ElkCostModelClass:
 * @price_op: prices cold-hot entry @entry of operator @op's table in
 *   @plans (the analytic plan set).  The default returns the table's and
 *   the plan's analytic numbers.
 * @price_load: prices operator @op's preload at the preload state of
 *   entry @entry, or at the even, unreplicated shard of its HBM data when
 *   @entry is -1.  The default is elk_chip_spec_get_load_time()'s model.
 * @price_program: prices a whole program (for a scheduler's final choice
 *   among candidates).  The default is elk_timeline_run_program() on the
 *   analytic model with the chip's full preload share.
 *
 * The virtual functions of a cost model.  They are called from one thread
 * at a time for a given model.
 *
 * Since: 0.2
 */
struct _ElkCostModelClass
{
  /*< private >*/
  GObjectClass parent_class;

  /*< public >*/
  gboolean (*price_op) (ElkCostModel *self,
                        const ElkPlanSet *plans,
                        guint op,
                        guint entry,
                        ElkOpPrice *price,
                        GError **error);
  gboolean (*price_load) (ElkCostModel *self,
                          const ElkPlanSet *plans,
                          guint op,
                          gint entry,
                          ElkLoadPrice *price,
                          GError **error);
  gboolean (*price_program) (ElkCostModel *self,
                             ElkProgram *program,
                             const ElkPlanSet *plans,
                             ElkTimelinePriority priority,
                             double *latency_s,
                             GError **error);

  /*< private >*/
  gpointer padding[8];
};

ELK_API ElkCostModel *elk_cost_model_new_analytic (void);
ELK_API gboolean elk_cost_model_is_analytic (ElkCostModel *self);
ELK_API gboolean elk_cost_model_price_op (ElkCostModel *self,
                                          const ElkPlanSet *plans,
                                          guint op,
                                          guint entry,
                                          ElkOpPrice *price,
                                          GError **error);
ELK_API gboolean elk_cost_model_price_load (ElkCostModel *self,
                                            const ElkPlanSet *plans,
                                            guint op,
                                            gint entry,
                                            ElkLoadPrice *price,
                                            GError **error);
ELK_API gboolean elk_cost_model_price_program (ElkCostModel *self,
                                               ElkProgram *program,
                                               const ElkPlanSet *plans,
                                               ElkTimelinePriority priority,
                                               double *latency_s,
                                               GError **error);

/**
 * ElkCostModelChoice:
 * @ELK_COST_MODEL_CHIP: plan with the chip's cost model when the chip
 *   supplies one, else the analytic model.
 * @ELK_COST_MODEL_ANALYTIC: plan with the analytic model whatever the
 *   chip (the default, until a chip's model plans better than it).
 *
 * The values of the "cost-model" plan option of experiment files.
 *
 * Since: 0.2
 */
typedef enum
{
  ELK_COST_MODEL_CHIP,
  ELK_COST_MODEL_ANALYTIC,
} ElkCostModelChoice;

#define ELK_TYPE_COST_MODEL_CHOICE (elk_cost_model_choice_get_type ())
ELK_API GType elk_cost_model_choice_get_type (void);

ELK_API ElkPlanSet *
elk_plan_set_new_priced (ElkPlanSet *base, ElkCostModel *model, GError **error);
ELK_API ElkCostModel *elk_plan_set_get_cost_model (const ElkPlanSet *set);
ELK_API const ElkPlanSet *elk_plan_set_get_base (const ElkPlanSet *set);
ELK_API void elk_plan_set_get_op_price (const ElkPlanSet *set,
                                        guint op,
                                        guint entry,
                                        ElkOpPrice *price);
ELK_API double elk_plan_set_get_load_time (
    const ElkPlanSet *set, guint op, gint entry, double share, double *noc_s);

G_END_DECLS
