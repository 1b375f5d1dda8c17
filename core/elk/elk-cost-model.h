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
 * ElkRelayoutQuery:
 * @producer: the operator that writes the tensor.
 * @producer_entry: an index into @producer's cold-hot table, or -1 when
 *   its plan is not chosen yet (then only what the consumer's own layout
 *   decides is priced).
 * @consumer: an operator that reads the tensor.
 * @consumer_entry: an index into @consumer's cold-hot table.
 * @operand: the operand of @consumer that is @producer's output.
 *
 * Which re-layout elk_cost_model_price_relayout() prices.
 *
 * Since: 0.2
 */
typedef struct
{
  guint producer;
  gint producer_entry;
  guint consumer;
  guint consumer_entry;
  guint operand;
} ElkRelayoutQuery;

/**
 * ElkRelayoutPrice:
 * @time_s: what moving the tensor adds to the consumer's input
 *   superstep on an idle machine.
 * @rx_bytes: bytes the busiest consumer core receives.
 * @tx_bytes: bytes the busiest producer core sends.
 * @xchip_bytes: bytes that cross chips.
 *
 * What taking one activation tensor from the layout its producer's
 * execute plan leaves it in to the layout its consumer's execute plan
 * reads it in costs under a cost model.  All zero under the analytic
 * model, which charges the producer's output shuffle instead (the
 * paper's model).
 *
 * Since: 0.2
 */
typedef struct
{
  double time_s;
  double rx_bytes;
  double tx_bytes;
  double xchip_bytes;
} ElkRelayoutPrice;

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
 * @price_relayout: optional (since 0.2); prices the re-layout @query
 *   names (the arguments are checked, @price is zeroed before).  The
 *   analytic model has none: it prices nothing, as the paper's does.
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
  gboolean (*price_relayout) (ElkCostModel *self,
                              const ElkPlanSet *plans,
                              const ElkRelayoutQuery *query,
                              ElkRelayoutPrice *price,
                              GError **error);

  /*< private >*/
  gpointer padding[7];
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
ELK_API gboolean elk_cost_model_price_relayout (ElkCostModel *self,
                                                const ElkPlanSet *plans,
                                                const ElkRelayoutQuery *query,
                                                ElkRelayoutPrice *price,
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

/**
 * ElkLayoutChoice:
 * @ELK_LAYOUT_IGNORE: every operator's entry is chosen from its own table
 *   alone, as the paper does.
 * @ELK_LAYOUT_AWARE: the engine adds the chip's re-layout price
 *   (elk_plan_set_get_relayout_model()) between an operator and its
 *   already-chosen consumers when it chooses the operator's entry; a
 *   no-op on a chip whose model prices no re-layout.
 *
 * The values of the "layout" plan option of experiment files.
 *
 * Since: 0.2
 */
typedef enum
{
  ELK_LAYOUT_IGNORE,
  ELK_LAYOUT_AWARE,
} ElkLayoutChoice;

#define ELK_TYPE_LAYOUT_CHOICE (elk_layout_choice_get_type ())
ELK_API GType elk_layout_choice_get_type (void);

ELK_API ElkPlanSet *
elk_plan_set_new_priced (ElkPlanSet *base, ElkCostModel *model, GError **error);
ELK_API ElkCostModel *elk_plan_set_get_cost_model (const ElkPlanSet *set);
ELK_API void elk_plan_set_set_relayout_model (ElkPlanSet *set,
                                              ElkCostModel *model);
ELK_API ElkCostModel *elk_plan_set_get_relayout_model (const ElkPlanSet *set);
ELK_API const ElkPlanSet *elk_plan_set_get_base (const ElkPlanSet *set);
ELK_API void elk_plan_set_get_op_price (const ElkPlanSet *set,
                                        guint op,
                                        guint entry,
                                        ElkOpPrice *price);
ELK_API double elk_plan_set_get_load_time (
    const ElkPlanSet *set, guint op, gint entry, double share, double *noc_s);

G_END_DECLS
