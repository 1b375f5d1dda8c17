/* elk-noc-sim-cost.c: noc-sim's cost model (issue 18 item 2), so that
 * schedulers compiling for noc-sim plan with noc-sim's numbers.
 *
 * Each (operator, cold-hot entry) is priced by simulating that operator
 * alone on the chip itself, with the chip's own configuration and
 * fidelity switches: a program of one execute gives the execution
 * (compute, the shift rounds with their per-message overhead and hop
 * latency, the reduce-scatter as noc-sim lowers it, the inter-chip link);
 * a program of its preload then its execute gives, from the run's
 * breakdown, the preload (HBM controllers, packets, latencies, the copies
 * to every holder) and the execution with its data distribution, whose
 * difference from the first is the distribution.  Simulations are
 * deterministic and cached per operator and entry, so a plan set is priced
 * once per point.  How preloads and executions contend is left to the
 * analytic timeline the engine runs on these prices: simulating every
 * candidate program whole would cost seconds per candidate.
 */
#include "config.h"

#include "elk-noc-sim.h"

#define ELK_TYPE_NOC_SIM_COST_MODEL (elk_noc_sim_cost_model_get_type ())
G_DECLARE_FINAL_TYPE (ElkNocSimCostModel,
                      elk_noc_sim_cost_model,
                      ELK,
                      NOC_SIM_COST_MODEL,
                      ElkCostModel)

ElkCostModel *elk__noc_sim_dup_cost_model (ElkChip *chip,
                                           const ElkPlanSet *plans,
                                           GError **error);
ElkChip *elk__noc_sim_dup_quiet (ElkChip *chip);

/* What one (operator, entry) costs on the simulator. */
typedef struct
{
  double exec_s;   /* the execution alone, from the execute layout */
  double warmup_s; /* the distribution from the preload layout */
  double load_s;   /* the preload alone, at the whole port */
} SimPrice;

struct _ElkNocSimCostModel
{
  ElkCostModel parent_instance;
  ElkChip *chip;
  GHashTable *cache; /* (op << 32 | entry) -> SimPrice */
  GHashTable *execs; /* (op << 32 | hot plan) -> the execution alone, s */
  guint n_runs;
};

G_DEFINE_FINAL_TYPE (ElkNocSimCostModel,
                     elk_noc_sim_cost_model,
                     ELK_TYPE_COST_MODEL)

/* Runs @program on the chip without elk_chip_run()'s whole-program
 * validation (a program of one operator is not a valid whole program,
 * and the simulator needs only the steps it is given). */
static ElkMetrics *
simulate (ElkNocSimCostModel *self,
          ElkProgram *program,
          const ElkPlanSet *plans,
          GError **error)
{
  self->n_runs++;
  return ELK_CHIP_GET_IFACE (self->chip)
      ->run (self->chip, program, plans, error);
}

/* Simulates operator @op under cold-hot entry @entry of its table. */
static gboolean
simulate_entry (ElkNocSimCostModel *self,
                const ElkPlanSet *plans,
                guint op,
                guint entry,
                SimPrice *out,
                GError **error)
{
  ElkGraph *graph = elk_plan_set_get_graph (plans);
  const ElkPlanTable *t = elk_plan_set_get_table (plans, op);
  const ElkColdHot *ch = &t->cold_hot[entry];
  g_autoptr (ElkProgram) alone = elk_program_new (graph);
  g_autoptr (ElkMetrics) m = NULL;
  ElkProgramOp *pop = elk_program_get_op (alone, op);
  gint64 key = ((gint64) op << 32) | ch->hot_plan;
  double *exec = g_hash_table_lookup (self->execs, &key);

  pop->exec_plan = t->plans[ch->hot_plan];
  pop->hot_bytes = ch->hot_bytes;
  pop->exec_budget
      = elk_chip_spec_get_usable_sram (elk_plan_set_get_spec (plans));
  pop->preload_share = 1.0;
  /* Entries that share an execute plan share its execution. */
  if (exec == NULL)
    {
      gint64 *k = g_memdup2 (&key, sizeof key);

      elk_program_add_execute (alone, op);
      m = simulate (self, alone, plans, error);
      if (m == NULL)
        {
          g_free (k);
          return FALSE;
        }
      exec = g_memdup2 (&m->latency_s, sizeof (double));
      g_hash_table_insert (self->execs, k, exec);
    }
  *out = (SimPrice){ *exec, 0, 0 };
  if (t->hbm_bytes == 0)
    return TRUE; /* never preloaded, so never distributed */

  {
    g_autoptr (ElkProgram) both = elk_program_new (graph);
    g_autoptr (ElkMetrics) mb = NULL;
    ElkProgramOp *bop = elk_program_get_op (both, op);

    *bop = *pop;
    bop->preload_plan = t->plans[ch->cold_plan];
    bop->cold_bytes = ch->cold_bytes;
    bop->hbm_bytes = t->hbm_bytes;
    elk_program_add_preload (both, op);
    elk_program_add_execute (both, op);
    mb = simulate (self, both, plans, error);
    if (mb == NULL)
      return FALSE;
    /* The execute waits for its preload (R3), so the run is the preload
     * alone, then the execution with its distribution alone. */
    out->load_s = mb->preload_only_s;
    out->warmup_s = MAX (0, mb->latency_s - mb->preload_only_s - out->exec_s);
  }
  return TRUE;
}

static gboolean
lookup (ElkNocSimCostModel *self,
        const ElkPlanSet *plans,
        guint op,
        guint entry,
        SimPrice *out,
        GError **error)
{
  const ElkPlanTable *t = elk_plan_set_get_table (plans, op);
  gint64 key;
  SimPrice *found;

  if (entry >= t->n_cold_hot)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "noc-sim cost model: operator '%s' has %u cold-hot "
                   "entries, asked for entry %u",
                   elk_graph_get_op (elk_plan_set_get_graph (plans), op)->name,
                   t->n_cold_hot, entry);
      return FALSE;
    }
  key = ((gint64) op << 32) | entry;
  found = g_hash_table_lookup (self->cache, &key);
  if (found == NULL)
    {
      SimPrice p;
      gint64 *k = g_new (gint64, 1);

      if (!simulate_entry (self, plans, op, entry, &p, error))
        {
          g_free (k);
          g_prefix_error (error, "noc-sim cost model, operator '%s': ",
                          elk_graph_get_op (elk_plan_set_get_graph (plans), op)
                              ->name);
          return FALSE;
        }
      *k = key;
      found = g_memdup2 (&p, sizeof p);
      g_hash_table_insert (self->cache, k, found);
    }
  *out = *found;
  return TRUE;
}

static gboolean
noc_sim_price_op (ElkCostModel *model,
                  const ElkPlanSet *plans,
                  guint op,
                  guint entry,
                  ElkOpPrice *price,
                  GError **error)
{
  ElkNocSimCostModel *self = ELK_NOC_SIM_COST_MODEL (model);
  const ElkPlanTable *t = elk_plan_set_get_table (plans, op);
  SimPrice p;
  double compute;

  if (!lookup (self, plans, op, entry, &p, error))
    return FALSE;
  /* The simulator's compute rounds are the plan's compute time; what the
   * execution spends beyond it is its own traffic and barriers, during
   * which a preload's copies would contend with it. */
  compute = MIN (t->plans[t->cold_hot[entry].hot_plan].compute_s, p.exec_s);
  *price = (ElkOpPrice){
    .exec_s = p.exec_s,
    .compute_s = compute,
    .noc_s = p.exec_s - compute,
    .warmup_s = p.warmup_s,
  };
  return TRUE;
}

/* The entry with the smallest preload state: Ideal's preload plan. */
static guint
min_cold_entry (const ElkPlanTable *t)
{
  guint best = 0;

  for (guint e = 1; e < t->n_cold_hot; e++)
    if (t->cold_hot[e].cold_bytes < t->cold_hot[best].cold_bytes)
      best = e;
  return best;
}

static gboolean
noc_sim_price_load (ElkCostModel *model,
                    const ElkPlanSet *plans,
                    guint op,
                    gint entry,
                    ElkLoadPrice *price,
                    GError **error)
{
  ElkNocSimCostModel *self = ELK_NOC_SIM_COST_MODEL (model);
  const ElkPlanTable *t = elk_plan_set_get_table (plans, op);
  const ElkChipSpec *spec = elk_plan_set_get_spec (plans);
  guint e = entry < 0 ? min_cold_entry (t) : (guint) entry;
  SimPrice p;

  if (t->hbm_bytes == 0)
    {
      *price = (ElkLoadPrice){ 0, 0 };
      return TRUE;
    }
  if (!lookup (self, plans, op, e, &p, error))
    return FALSE;
  /* noc-sim runs a preload at the whole port whatever the program's share
   * (effect full-rate-preload), so the simulated time is the preload's
   * time at any share; the delivery's port time is what it takes from an
   * execution's traffic, at the per-core port rate. */
  *price = (ElkLoadPrice){
    .hbm_s = p.load_s,
    .deliver_s
    = MIN ((double) t->cold_hot[e].cold_bytes / spec->link_bw, p.load_s),
  };
  return TRUE;
}

static void
elk_noc_sim_cost_model_finalize (GObject *object)
{
  ElkNocSimCostModel *self = ELK_NOC_SIM_COST_MODEL (object);

  g_debug ("noc-sim cost model: %u simulations, %u entries priced",
           self->n_runs, g_hash_table_size (self->cache));
  g_hash_table_unref (self->cache);
  g_hash_table_unref (self->execs);
  g_clear_object (&self->chip);
  G_OBJECT_CLASS (elk_noc_sim_cost_model_parent_class)->finalize (object);
}

static void
elk_noc_sim_cost_model_class_init (ElkNocSimCostModelClass *klass)
{
  ElkCostModelClass *model_class = ELK_COST_MODEL_CLASS (klass);

  G_OBJECT_CLASS (klass)->finalize = elk_noc_sim_cost_model_finalize;
  model_class->price_op = noc_sim_price_op;
  model_class->price_load = noc_sim_price_load;
}

static void
elk_noc_sim_cost_model_init (ElkNocSimCostModel *self)
{
  self->cache
      = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  self->execs
      = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
}

/* A copy of @chip with every property of it but the link reports: the
 * pricing runs simulate hundreds of one-operator programs, and select=chip
 * whole candidate programs, which must not each write a report into the
 * experiment's report-dir.  Also the chip's dup_measurer(). */
ElkChip *
elk__noc_sim_dup_quiet (ElkChip *chip)
{
  GObjectClass *klass = G_OBJECT_GET_CLASS (chip);
  guint n = 0;
  g_autofree GParamSpec **specs = g_object_class_list_properties (klass, &n);
  g_autofree const char **names = g_new0 (const char *, n + 1);
  GValue *values = g_new0 (GValue, n + 1);
  guint k = 0;
  GObject *copy;

  for (guint i = 0; i < n; i++)
    {
      if ((specs[i]->flags & G_PARAM_READWRITE) != G_PARAM_READWRITE
          || g_str_equal (specs[i]->name, "report-dir")
          || g_str_equal (specs[i]->name, "trace-links"))
        continue;
      names[k] = specs[i]->name;
      g_value_init (&values[k], specs[i]->value_type);
      g_object_get_property (G_OBJECT (chip), specs[i]->name, &values[k]);
      k++;
    }
  copy = g_object_new_with_properties (G_OBJECT_TYPE (chip), k, names, values);
  for (guint i = 0; i < k; i++)
    g_value_unset (&values[i]);
  g_free (values);
  return ELK_CHIP (copy);
}

/* ElkChipInterface.dup_cost_model of the noc-sim chip. */
ElkCostModel *
elk__noc_sim_dup_cost_model (ElkChip *chip,
                             const ElkPlanSet *plans,
                             GError **error)
{
  ElkNocSimCostModel *self = g_object_new (ELK_TYPE_NOC_SIM_COST_MODEL, NULL);

  (void) plans;
  (void) error;
  self->chip = elk__noc_sim_dup_quiet (chip);
  return ELK_COST_MODEL (self);
}
