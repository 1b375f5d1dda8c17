/* elk-ipu-pod-cost.c: the ipu-pod chip's cost model (docs/compiler.md,
 * "Layout-aware plan selection").
 *
 * It overrides only the re-layout price: operators, preloads and programs
 * keep the analytic model's prices, the ones schedulers plan with by
 * default.  The re-layout price follows the emulator's input superstep
 * (elk-ipu-pod-emu.c, lower_input()) for one activation operand: every
 * consumer tile receives its whole piece of the tensor (the emulator does
 * not look for bytes already in place), the producer's tiles send it
 * (spread evenly over them), and each element crosses the IPU-Links once
 * per chip, other than its owner's, that a consumer tile needing it sits
 * on.  On an idle machine that takes max(max(rx, tx) / exchange rate,
 * chip-crossing bytes / IPU-Link rate).  Two simplifications, both
 * stated in docs/compiler.md: both plans are taken mapped in sequence
 * from tile 0 (the emulator's aligned mapping may reorder a plan's parts
 * afterwards), and the chip crossings are sampled on up to 8 indices per
 * tensor axis (the emulator samples 16).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "elk-ipu-pod-private.h"

#define SAMPLES_PER_AXIS 8

#define ELK_TYPE_IPU_POD_COST_MODEL (elk_ipu_pod_cost_model_get_type ())
G_DECLARE_FINAL_TYPE (ElkIpuPodCostModel,
                      elk_ipu_pod_cost_model,
                      ELK,
                      IPU_POD_COST_MODEL,
                      ElkCostModel)

struct _ElkIpuPodCostModel
{
  ElkCostModel parent_instance;
  IpuMachine m;
};

G_DEFINE_FINAL_TYPE (ElkIpuPodCostModel,
                     elk_ipu_pod_cost_model,
                     ELK_TYPE_COST_MODEL)

static guint64
div_up (guint64 a, guint64 b)
{
  return b == 0 ? 0 : (a + b - 1) / b;
}

/* The tile of @plan's part at coordinates @coord, parts numbered in
 * sequence from tile 0 with the last loop dimension fastest. */
static guint64
seq_tile (const ElkOp *op, const ElkPlan *plan, const guint32 *coord)
{
  guint64 tile = 0;

  for (guint d = 0; d < op->n_dims; d++)
    tile = tile * plan->spatial[d] + coord[d];
  return tile;
}

/* Bytes of g->c's piece of its operand g->v on the first tile of g->cp:
 * the part's extents cut by the operand's rotation factors, a window axis
 * spanning both parts less one. */
static double
first_piece (const ElkGraph *graph, const IpuGather *g)
{
  const ElkOp *op = g->c;
  const ElkPlan *plan = g->cp;
  const guint v = g->v;
  const ElkTensor *t = elk_graph_get_tensor (graph, op->tensors[v]);
  double elems = 1;

  for (guint x = 0; x < op->access[v].n_axes; x++)
    {
      double len = 0;

      for (guint w = 0; w < 2; w++)
        {
          gint d = op->access[v].dims[x][w];
          guint64 part;

          if (d < 0)
            continue;
          part = div_up (op->extents[d], plan->spatial[d]);
          len += (double) div_up (part, plan->temporal[d][v]) - (w > 0);
        }
      elems *= len;
    }
  return t->n_elements > 0 ? elems * (double) t->bytes / t->n_elements : 0;
}

/* Bytes of g->c's operand g->v (g->p's output) that cross chips. */
static double
crossing_bytes (const IpuMachine *m, const ElkGraph *graph, const IpuGather *g)
{
  const ElkOp *p = g->p, *c = g->c;
  const ElkPlan *pp = g->pp, *cp = g->cp;
  const guint v = g->v;
  const ElkTensor *t = elk_graph_get_tensor (graph, c->tensors[v]);
  const ElkAccess *ca = &c->access[v], *pa = &p->access[0];
  guint64 n_samples = 1, far = 0;
  guint32 samples[ELK_MAX_DIMS];
  gboolean indexed[ELK_MAX_DIMS] = { FALSE };

  if (m->chips < 2)
    return 0;
  if (t->n_dims == 0 || ca->n_axes != t->n_dims || pa->n_axes != t->n_dims)
    return (double) t->bytes * (m->chips - 1) / m->chips;
  for (guint x = 0; x < t->n_dims; x++)
    {
      samples[x] = (guint32) MIN (t->shape[x], (guint64) SAMPLES_PER_AXIS);
      n_samples *= samples[x];
      indexed[ca->dims[x][0]] = TRUE;
    }
  for (guint64 s = 0; s < n_samples; s++)
    {
      guint32 own[ELK_MAX_DIMS] = { 0 }, lo[ELK_MAX_DIMS] = { 0 };
      guint32 hi[ELK_MAX_DIMS] = { 0 };
      guint64 rest = s, owner, first, last;

      for (guint x = t->n_dims; x-- > 0;)
        {
          guint64 at = (rest % samples[x]) * t->shape[x] / samples[x];
          gint pd = pa->dims[x][0], cd = ca->dims[x][0];

          rest /= samples[x];
          own[pd]
              = (guint32) MIN (at / div_up (p->extents[pd], pp->spatial[pd]),
                               (guint64) pp->spatial[pd] - 1);
          lo[cd] = hi[cd]
              = (guint32) MIN (at / div_up (c->extents[cd], cp->spatial[cd]),
                               (guint64) cp->spatial[cd] - 1);
        }
      for (guint d = 0; d < c->n_dims; d++)
        if (!indexed[d])
          hi[d] = cp->spatial[d] - 1;
      owner = seq_tile (p, pp, own) / m->tiles_per_chip;
      first = seq_tile (c, cp, lo) / m->tiles_per_chip;
      last = seq_tile (c, cp, hi) / m->tiles_per_chip;
      far += last - first + 1 - (owner >= first && owner <= last);
    }
  return (double) t->bytes * (double) far / (double) n_samples;
}

/**
 * elk__ipu_pod_price_gather:
 * @m: the machine
 * @graph: the graph
 * @g: the edge: producer and consumer, their execute plans, the operand
 * @price: (out caller-allocates): the price
 *
 * What the emulator's input superstep charges for gathering operand g->v
 * of g->c from g->p's tiles (the file's comment says how).
 */
void
elk__ipu_pod_price_gather (const IpuMachine *m,
                           const ElkGraph *graph,
                           const IpuGather *g,
                           ElkRelayoutPrice *price)
{
  double rx, tx, xchip = 0;

  memset (price, 0, sizeof (*price));
  /* Without the emulated gather an activation is where it is needed. */
  if (!(m->effects & IPU_FX_GATHER))
    return;
  rx = first_piece (graph, g);
  /* With the producer's plan not chosen yet, the least it can cost: as
   * many senders as receivers, nothing crossing chips. */
  tx = rx;
  if (g->pp != NULL)
    {
      tx = rx * g->cp->cores_used / MAX (g->pp->cores_used, 1u);
      if (m->effects & IPU_FX_IPU_LINKS)
        xchip = crossing_bytes (m, graph, g);
    }
  if (!(m->effects & IPU_FX_SEND_PORTS))
    tx = MIN (tx, rx);
  *price = (ElkRelayoutPrice){
    MAX (MAX (rx, tx) / m->xchg_Bps, xchip / m->inter_chip_Bps), rx, tx, xchip
  };
}

/* The hot plan of entry @e of @t, or NULL for -1. */
static const ElkPlan *
entry_plan (const ElkPlanTable *t, gint e)
{
  return e < 0 ? NULL : &t->plans[t->cold_hot[e].hot_plan];
}

static gboolean
ipu_pod_price_relayout (ElkCostModel *model,
                        const ElkPlanSet *plans,
                        const ElkRelayoutQuery *q,
                        ElkRelayoutPrice *price,
                        GError **error)
{
  ElkGraph *graph = elk_plan_set_get_graph (plans);
  IpuGather g = {
    elk_graph_get_op (graph, q->producer),
    elk_graph_get_op (graph, q->consumer),
    entry_plan (elk_plan_set_get_table (plans, q->producer), q->producer_entry),
    entry_plan (elk_plan_set_get_table (plans, q->consumer),
                (gint) q->consumer_entry),
    q->operand,
  };

  (void) error;
  elk__ipu_pod_price_gather (&ELK_IPU_POD_COST_MODEL (model)->m, graph, &g,
                             price);
  return TRUE;
}

static void
elk_ipu_pod_cost_model_class_init (ElkIpuPodCostModelClass *klass)
{
  ELK_COST_MODEL_CLASS (klass)->price_relayout = ipu_pod_price_relayout;
}

static void
elk_ipu_pod_cost_model_init (ElkIpuPodCostModel *self)
{
  (void) self;
}

/* The chip's cost model on machine @m (copied). */
ElkCostModel *
elk__ipu_pod_cost_model_new (const IpuMachine *m)
{
  ElkIpuPodCostModel *self = g_object_new (ELK_TYPE_IPU_POD_COST_MODEL, NULL);

  self->m = *m;
  return ELK_COST_MODEL (self);
}
