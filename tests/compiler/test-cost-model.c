/* test-cost-model.c: the cost model schedulers plan with (elk-cost-model.h).
 *
 * The analytic model is the default and changes nothing: a set priced by
 * it is the unpriced set, and a set priced by a subclass that returns the
 * analytic numbers gives every shipped scheduler the same program.  A toy
 * chip model changes the schedule; the plan option cost-model=analytic
 * brings back the analytic schedule on a chip that has a model (noc-sim);
 * a bad option value and a model that breaks its contract are errors that
 * say what is wrong. */
#include "config.h"

#include <math.h>
#include <string.h>
#define ELK_USE_UNSTABLE_API
#include <elk/elk.h>
#include "elk-test-util.h"

static ElkRegistry *registry;

#define make(...) elk_test_make (registry, __VA_ARGS__)

/* A toy chip model: preloads @load_factor times as long as the analytic
 * model says, executions @exec_factor times and 1 + @skew x (the entry's
 * index) times more (so that the later, larger entries of each table get
 * dearer), or a broken price. */
/* How the toy model prices re-layout: never (0 s), 1 ms for a producer
 * and consumer whose execute plans take the same number of compute-shift
 * steps (an arbitrary rule that the analytic choice, mostly single-step
 * plans, breaks), or a broken price. */
typedef enum
{
  RELAYOUT_ZERO,
  RELAYOUT_SAME_STEPS,
  RELAYOUT_NAN,
} Relayout;

#define TOY_TYPE_MODEL (toy_model_get_type ())
G_DECLARE_FINAL_TYPE (ToyModel, toy_model, TOY, MODEL, ElkCostModel)

struct _ToyModel
{
  ElkCostModel parent_instance;
  double load_factor, exec_factor, skew;
  gboolean broken;
  Relayout relayout;
};

G_DEFINE_FINAL_TYPE (ToyModel, toy_model, ELK_TYPE_COST_MODEL)

static gboolean
toy_price_op (ElkCostModel *model,
              const ElkPlanSet *plans,
              guint op,
              guint entry,
              ElkOpPrice *price,
              GError **error)
{
  ToyModel *self = TOY_MODEL (model);

  if (!ELK_COST_MODEL_CLASS (toy_model_parent_class)
           ->price_op (model, plans, op, entry, price, error))
    return FALSE;
  price->exec_s *= self->exec_factor * (1 + self->skew * entry);
  price->compute_s *= self->exec_factor * (1 + self->skew * entry);
  if (self->broken)
    price->warmup_s = -1;
  return TRUE;
}

static gboolean
toy_price_load (ElkCostModel *model,
                const ElkPlanSet *plans,
                guint op,
                gint entry,
                ElkLoadPrice *price,
                GError **error)
{
  ToyModel *self = TOY_MODEL (model);

  if (!ELK_COST_MODEL_CLASS (toy_model_parent_class)
           ->price_load (model, plans, op, entry, price, error))
    return FALSE;
  price->hbm_s *= self->load_factor;
  price->deliver_s *= self->load_factor;
  return TRUE;
}

static guint32
hot_steps (const ElkPlanSet *plans, guint op, guint entry)
{
  const ElkPlanTable *t = elk_plan_set_get_table (plans, op);
  return t->plans[t->cold_hot[entry].hot_plan].steps;
}

static gboolean
same_steps (const ElkPlanSet *plans, const ElkRelayoutQuery *q)
{
  return q->producer_entry >= 0
         && hot_steps (plans, q->producer, (guint) q->producer_entry)
                == hot_steps (plans, q->consumer, q->consumer_entry);
}

static gboolean
toy_price_relayout (ElkCostModel *model,
                    const ElkPlanSet *plans,
                    const ElkRelayoutQuery *q,
                    ElkRelayoutPrice *price,
                    GError **error)
{
  Relayout r = TOY_MODEL (model)->relayout;

  (void) error;
  if (r == RELAYOUT_NAN)
    price->time_s = NAN;
  else if (r == RELAYOUT_SAME_STEPS && same_steps (plans, q))
    price->time_s = 1e-3;
  return TRUE;
}

static void
toy_model_class_init (ToyModelClass *klass)
{
  ELK_COST_MODEL_CLASS (klass)->price_op = toy_price_op;
  ELK_COST_MODEL_CLASS (klass)->price_load = toy_price_load;
  ELK_COST_MODEL_CLASS (klass)->price_relayout = toy_price_relayout;
}

static void
toy_model_init (ToyModel *self)
{
  self->load_factor = self->exec_factor = 1;
}

static ElkCostModel *
toy_new (double load_factor, double exec_factor)
{
  ToyModel *m = g_object_new (TOY_TYPE_MODEL, NULL);

  m->load_factor = load_factor;
  m->exec_factor = exec_factor;
  return ELK_COST_MODEL (m);
}

static ElkPlanSet *
toy_plans (ElkChipSpec **spec_out)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) chip
      = make (ELK_TYPE_CHIP, "analytic", "cores", 64, "chips", 1, "sram-kib",
              64, "reserved-kib", 1, "hbm-bw-gbps", 64.0, NULL);
  g_autoptr (ElkGraph) graph = elk_test_toy_decode_graph (4, 8, 512, 256);
  ElkChipSpec *spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
  ElkPlanSet *plans;

  g_assert_no_error (error);
  plans = elk_plan_set_new (graph, spec, NULL, &error);
  g_assert_no_error (error);
  if (spec_out != NULL)
    *spec_out = spec;
  else
    elk_chip_spec_free (spec);
  return plans;
}

static ElkProgram *
schedule (const char *name, const char *label, const ElkPlanSet *plans)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) alloc = make (ELK_TYPE_ALLOCATOR, "reservation", NULL);
  g_autoptr (GObject) sched = NULL;
  ElkProgram *program;

  if (g_str_equal (label, "elk-dyn"))
    sched = make (ELK_TYPE_SCHEDULER, name, "order-search", 0, NULL);
  else if (g_str_equal (label, "elk-full"))
    sched = make (ELK_TYPE_SCHEDULER, name, "max-displacement", 2, NULL);
  else
    sched = make (ELK_TYPE_SCHEDULER, name, NULL);
  program = elk_scheduler_schedule (ELK_SCHEDULER (sched), plans,
                                    ELK_ALLOCATOR (alloc), &error);
  g_assert_no_error (error);
  return program;
}

/* Whether two programs are the same device calls with the same plans and
 * predictions. */
static gboolean
same_program (ElkProgram *a, ElkProgram *b)
{
  guint n = elk_graph_get_n_ops (elk_program_get_graph (a));

  if (elk_program_get_n_steps (a) != elk_program_get_n_steps (b)
      || elk_program_get_estimate (a) != elk_program_get_estimate (b))
    return FALSE;
  for (guint s = 0; s < elk_program_get_n_steps (a); s++)
    if (memcmp (elk_program_get_step (a, s), elk_program_get_step (b, s),
                sizeof (ElkStep))
        != 0)
      return FALSE;
  for (guint i = 0; i < n; i++)
    {
      const ElkProgramOp *x = elk_program_peek_op (a, i);
      const ElkProgramOp *y = elk_program_peek_op (b, i);
      if (x->hot_bytes != y->hot_bytes || x->cold_bytes != y->cold_bytes
          || x->est_exec_s != y->est_exec_s || x->est_load_s != y->est_load_s
          || x->est_noc_s != y->est_noc_s || x->est_warmup_s != y->est_warmup_s
          || x->preload_share != y->preload_share)
        return FALSE;
    }
  return TRUE;
}

static const char *designs[][2] = {
  { "elk", "elk-dyn" },   { "elk", "elk-full" }, { "basic", "basic" },
  { "static", "static" }, { "ideal", "ideal" },
};

static void
test_analytic_default (void)
{
  g_autoptr (ElkChipSpec) spec = NULL;
  g_autoptr (ElkPlanSet) plans = toy_plans (&spec);
  g_autoptr (ElkCostModel) analytic = elk_cost_model_new_analytic ();
  g_autoptr (ElkCostModel) same = toy_new (1, 1);
  g_autoptr (ElkPlanSet) as_is = NULL;
  g_autoptr (ElkPlanSet) copied = NULL;
  g_autoptr (GError) error = NULL;

  g_test_summary ("The analytic model is the plan set as it is, and a "
                  "chip model that prices as the analytic one gives every "
                  "shipped scheduler the same program.");
  g_assert_true (elk_cost_model_is_analytic (analytic));
  g_assert_false (elk_cost_model_is_analytic (same));
  as_is = elk_plan_set_new_priced (plans, analytic, &error);
  g_assert_no_error (error);
  g_assert_true (as_is == plans);
  g_assert_null (elk_plan_set_get_cost_model (plans));
  g_assert_true (elk_plan_set_get_base (plans) == plans);

  copied = elk_plan_set_new_priced (plans, same, &error);
  g_assert_no_error (error);
  g_assert_true (copied != plans);
  g_assert_true (elk_plan_set_get_cost_model (copied) == same);
  g_assert_true (elk_plan_set_get_base (copied) == plans);
  for (guint d = 0; d < G_N_ELEMENTS (designs); d++)
    {
      g_autoptr (ElkProgram) a = schedule (designs[d][0], designs[d][1], plans);
      g_autoptr (ElkProgram) b
          = schedule (designs[d][0], designs[d][1], copied);
      g_test_message ("%s: estimate %.9g s analytic, %.9g s priced",
                      designs[d][1], elk_program_get_estimate (a),
                      elk_program_get_estimate (b));
      g_assert_true (same_program (a, b));
    }
}

static void
test_toy_changes_schedule (void)
{
  g_autoptr (ElkChipSpec) spec = NULL;
  g_autoptr (ElkPlanSet) plans = toy_plans (&spec);
  g_autoptr (ElkCostModel) slow = toy_new (8, 1);
  g_autoptr (ElkPlanSet) priced = NULL;
  g_autoptr (GError) error = NULL;
  guint changed = 0;

  g_test_summary ("A chip model whose preloads are 8 times as slow and "
                  "whose larger entries run slower changes every shipped "
                  "scheduler's estimate, and the schedule of some of "
                  "them.");
  TOY_MODEL (slow)->skew = 4;
  priced = elk_plan_set_new_priced (plans, slow, &error);
  g_assert_no_error (error);
  for (guint op = 0; op < elk_graph_get_n_ops (elk_plan_set_get_graph (plans));
       op++)
    {
      const ElkPlanTable *t = elk_plan_set_get_table (plans, op);
      double noc_a, noc_p;
      double a = elk_plan_set_get_load_time (plans, op, 0, 1.0, &noc_a);
      double p = elk_plan_set_get_load_time (priced, op, 0, 1.0, &noc_p);

      g_assert_cmpfloat (p, ==, 8 * a);
      g_assert_cmpfloat (noc_p, ==, 8 * noc_a);
      g_assert_true (t->hbm_bytes > 0 || a == 0);
    }
  for (guint d = 0; d < G_N_ELEMENTS (designs); d++)
    {
      g_autoptr (ElkProgram) a = schedule (designs[d][0], designs[d][1], plans);
      g_autoptr (ElkProgram) b
          = schedule (designs[d][0], designs[d][1], priced);
      gboolean same_calls
          = elk_program_get_n_steps (a) == elk_program_get_n_steps (b);

      for (guint s = 0; same_calls && s < elk_program_get_n_steps (a); s++)
        same_calls = memcmp (elk_program_get_step (a, s),
                             elk_program_get_step (b, s), sizeof (ElkStep))
                     == 0;
      /* Or the same calls with other plans (preload or execute states). */
      for (guint i = 0;
           same_calls && i < elk_graph_get_n_ops (elk_program_get_graph (a));
           i++)
        same_calls = elk_program_peek_op (a, i)->hot_bytes
                         == elk_program_peek_op (b, i)->hot_bytes
                     && elk_program_peek_op (a, i)->cold_bytes
                            == elk_program_peek_op (b, i)->cold_bytes;
      g_test_message ("%s: estimate %.6g ms analytic, %.6g ms with slow "
                      "preloads; %s device calls and states",
                      designs[d][1], elk_program_get_estimate (a) * 1e3,
                      elk_program_get_estimate (b) * 1e3,
                      same_calls ? "same" : "different");
      g_assert_cmpfloat (elk_program_get_estimate (b), >,
                         elk_program_get_estimate (a));
      if (!same_calls)
        changed++;
    }
  g_assert_cmpuint (changed, >=, 1);
}

static void
test_broken_model (void)
{
  g_autoptr (ElkChipSpec) spec = NULL;
  g_autoptr (ElkPlanSet) plans = toy_plans (&spec);
  g_autoptr (ElkCostModel) broken = toy_new (1, 1);
  g_autoptr (GError) error = NULL;

  g_test_summary ("A model that gives a negative price is refused, naming "
                  "the model, the field and the operator.");
  TOY_MODEL (broken)->broken = TRUE;
  g_assert_null (elk_plan_set_new_priced (plans, broken, &error));
  g_assert_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "ToyModel"));
  g_assert_nonnull (strstr (error->message, "warmup_s = -1"));
  g_assert_nonnull (strstr (error->message, "operator #0"));
}

/* The first producer-consumer pair of @graph for which @ok holds of two
 * entries (or of any, with @ok NULL): operand q->operand of q->consumer
 * reads q->producer's output. */
static gboolean
find_edge (const ElkPlanSet *plans,
           gboolean (*ok) (const ElkPlanSet *, const ElkRelayoutQuery *),
           ElkRelayoutQuery *q)
{
  ElkGraph *graph = elk_plan_set_get_graph (plans);

  for (q->consumer = 1; q->consumer < elk_graph_get_n_ops (graph);
       q->consumer++)
    {
      const ElkOp *op = elk_graph_get_op (graph, q->consumer);
      guint np, nc;

      for (q->operand = 1; q->operand < op->n_operands; q->operand++)
        for (q->producer = 0; q->producer < q->consumer; q->producer++)
          {
            if (elk_graph_get_op (graph, q->producer)->tensors[0]
                != op->tensors[q->operand])
              continue;
            np = elk_plan_set_get_table (plans, q->producer)->n_cold_hot;
            nc = elk_plan_set_get_table (plans, q->consumer)->n_cold_hot;
            for (q->producer_entry = 0; q->producer_entry < (gint) np;
                 q->producer_entry++)
              for (q->consumer_entry = 0; q->consumer_entry < nc;
                   q->consumer_entry++)
                if (ok == NULL || ok (plans, q))
                  return TRUE;
          }
    }
  return FALSE;
}

/* Asks the analytic model for @q's price and expects the error @what
 * names. */
static void
assert_refused (const ElkPlanSet *plans, ElkRelayoutQuery q, const char *what)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkCostModel) analytic = elk_cost_model_new_analytic ();
  ElkRelayoutPrice pr;

  g_assert_false (
      elk_cost_model_price_relayout (analytic, plans, &q, &pr, &error));
  g_assert_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED);
  g_assert_nonnull (strstr (error->message, what));
}

static void
test_relayout_price (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkChipSpec) spec = NULL;
  g_autoptr (ElkPlanSet) plans = toy_plans (&spec);
  g_autoptr (ElkCostModel) analytic = elk_cost_model_new_analytic ();
  g_autoptr (ElkCostModel) toy = toy_new (1, 1);
  ElkRelayoutQuery q, bad;
  ElkRelayoutPrice pr = { 1, 1, 1, 1 };

  g_test_summary ("The analytic model prices no re-layout; a model's price "
                  "is asked only for an activation edge and entries of "
                  "its operators' tables; a plan set carries a re-layout "
                  "model only when it prices re-layout.");
  g_assert_true (find_edge (plans, NULL, &q));
  g_assert_true (
      elk_cost_model_price_relayout (analytic, plans, &q, &pr, &error));
  g_assert_no_error (error);
  g_assert_cmpfloat (pr.time_s + pr.rx_bytes + pr.tx_bytes, ==, 0);
  bad = q;
  bad.consumer = elk_graph_get_n_ops (elk_plan_set_get_graph (plans));
  assert_refused (plans, bad, "operators");
  bad = q;
  bad.operand = 0;
  assert_refused (plans, bad, "is not the output");
  bad = q;
  bad.consumer_entry = elk_plan_set_get_table (plans, q.consumer)->n_cold_hot;
  assert_refused (plans, bad, "cold-hot");

  TOY_MODEL (toy)->relayout = RELAYOUT_SAME_STEPS;
  g_assert_true (find_edge (plans, same_steps, &q));
  g_assert_true (elk_cost_model_price_relayout (toy, plans, &q, &pr, &error));
  g_assert_cmpfloat (pr.time_s, ==, 1e-3);
  g_assert_null (elk_plan_set_get_relayout_model (plans));
  elk_plan_set_set_relayout_model (plans, analytic);
  g_assert_null (elk_plan_set_get_relayout_model (plans));
  elk_plan_set_set_relayout_model (plans, toy);
  g_assert_true (elk_plan_set_get_relayout_model (plans) == toy);
  elk_plan_set_set_relayout_model (plans, NULL);
  g_assert_null (elk_plan_set_get_relayout_model (plans));
}

/* Producer-consumer pairs of @program whose execute plans take the same
 * number of steps (what RELAYOUT_SAME_STEPS charges). */
static guint
charged (ElkProgram *program)
{
  ElkGraph *graph = elk_program_get_graph (program);
  guint n = 0;

  for (guint i = 1; i < elk_graph_get_n_ops (graph); i++)
    {
      const ElkOp *op = elk_graph_get_op (graph, i);
      for (guint k = 1; k < op->n_operands; k++)
        for (guint j = 0; j < i; j++)
          n += elk_graph_get_op (graph, j)->tensors[0] == op->tensors[k]
               && elk_program_peek_op (program, j)->exec_plan.steps
                      == elk_program_peek_op (program, i)->exec_plan.steps;
    }
  return n;
}

static void
test_layout_aware (void)
{
  g_autoptr (ElkChipSpec) spec = NULL;
  g_autoptr (ElkPlanSet) plans = toy_plans (&spec);
  g_autoptr (ElkPlanSet) zp = toy_plans (NULL);
  g_autoptr (ElkPlanSet) sp = toy_plans (NULL);
  g_autoptr (ElkPlanSet) np = toy_plans (NULL);
  g_autoptr (ElkCostModel) zero = toy_new (1, 1);
  g_autoptr (ElkCostModel) steps = toy_new (1, 1);
  g_autoptr (ElkCostModel) nan_model = toy_new (1, 1);
  g_autoptr (GObject) alloc = make (ELK_TYPE_ALLOCATOR, "reservation", NULL);
  g_autoptr (GObject) basic = make (ELK_TYPE_SCHEDULER, "basic", NULL);
  g_autoptr (GError) error = NULL;

  g_test_summary ("Every design: a re-layout model that prices 0 changes "
                  "no choice (the policy's entry wins ties); one that "
                  "charges pairs of equal step counts leaves fewer of "
                  "them; one that breaks the contract fails, named.");
  TOY_MODEL (steps)->relayout = RELAYOUT_SAME_STEPS;
  TOY_MODEL (nan_model)->relayout = RELAYOUT_NAN;
  elk_plan_set_set_relayout_model (zp, zero);
  elk_plan_set_set_relayout_model (sp, steps);
  elk_plan_set_set_relayout_model (np, nan_model);
  for (guint d = 0; d < G_N_ELEMENTS (designs); d++)
    {
      g_autoptr (ElkProgram) a = schedule (designs[d][0], designs[d][1], plans);
      g_autoptr (ElkProgram) z = schedule (designs[d][0], designs[d][1], zp);
      g_autoptr (ElkProgram) m = schedule (designs[d][0], designs[d][1], sp);

      elk_test_assert_same_program (a, z);
      g_test_message ("%s: %u charged pairs ignoring layout, %u aware",
                      designs[d][1], charged (a), charged (m));
      g_assert_cmpuint (charged (m), <, charged (a));
    }
  g_assert_null (elk_scheduler_schedule (ELK_SCHEDULER (basic), np,
                                         ELK_ALLOCATOR (alloc), &error));
  g_assert_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT);
  g_assert_nonnull (strstr (error->message, "price_relayout"));
}

/* A small noc-sim point: one layer of Llama2-13B decoding on 2 chips of
 * 1024 cores, with the plan option given. */
static char *
noc_sim_xml (const char *choice, const char *dir)
{
  return g_strdup_printf (
      "<experiment format=\"1\" name=\"cm\">\n"
      "  <frontend name=\"llama\">\n"
      "    <param name=\"preset\">llama2-13b-paper</param>\n"
      "    <param name=\"phase\">decode</param>\n"
      "    <param name=\"batch\">4</param>\n"
      "    <param name=\"seq\">128</param>\n"
      "    <param name=\"layers\">1</param>\n"
      "  </frontend>\n"
      "  <chip name=\"noc-sim\">\n"
      "    <param name=\"chips\">2</param><param name=\"cores\">2048</param>\n"
      "    <param name=\"hbm-bw-gbps\">2000</param>\n"
      "  </chip>\n"
      "  <allocator name=\"reservation\"/>\n"
      "  <plans><param name=\"cost-model\">%s</param></plans>\n"
      "  <scheduler name=\"elk\" label=\"elk-full\"/>\n"
      "  <output dir=\"%s\"/>\n"
      "</experiment>\n",
      choice, dir);
}

/* Runs the noc-sim point with cost-model=@choice; returns its estimate. */
static double
noc_sim_estimate (const char *choice, const char *dir)
{
  g_autofree char *xml = noc_sim_xml (choice, dir);
  g_auto (GStrv) lines = elk_test_run_experiment (registry, xml, "cm.xml", dir);
  g_auto (GStrv) head = g_strsplit (lines[0], ",", -1);
  g_auto (GStrv) row = g_strsplit (lines[1], ",", -1);

  for (guint c = 0; head[c] != NULL; c++)
    if (g_str_equal (head[c], "estimate_s"))
      return g_ascii_strtod (row[c], NULL);
  g_assert_not_reached ();
}

static void
test_option (void)
{
  g_autofree char *dir = g_dir_make_tmp ("elk-cost-model-XXXXXX", NULL);
  g_autofree char *d1 = g_build_filename (dir, "chip", NULL);
  g_autofree char *d2 = g_build_filename (dir, "analytic", NULL);
  g_autoptr (GError) error = NULL;
  g_autofree char *bad = noc_sim_xml ("exact", dir);
  double chip, analytic, again;

  g_test_summary ("On noc-sim, which supplies a model, cost-model=chip "
                  "plans with it and cost-model=analytic "
                  "plans as before; a bad value is refused with the file, "
                  "line and accepted values.");
  chip = noc_sim_estimate ("chip", d1);
  analytic = noc_sim_estimate ("analytic", d2);
  again = noc_sim_estimate ("analytic", d1);
  g_test_message ("elk-full estimate: %.6g ms with noc-sim's model, %.6g ms "
                  "with the analytic one",
                  chip * 1e3, analytic * 1e3);
  g_assert_cmpfloat (chip, !=, analytic);
  g_assert_cmpfloat (again, ==, analytic);

  g_assert_null (elk_experiment_load_from_data (bad, strlen (bad), "cm.xml",
                                                registry, &error));
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "cm.xml:14"));
  g_assert_nonnull (strstr (error->message, "cost-model"));
  g_assert_nonnull (strstr (error->message, "analytic"));
  elk_test_remove_tree (dir);
}

int
main (int argc, char *argv[])
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  g_test_add_func ("/cost-model/analytic-default", test_analytic_default);
  g_test_add_func ("/cost-model/toy-changes-schedule",
                   test_toy_changes_schedule);
  g_test_add_func ("/cost-model/broken-model", test_broken_model);
  g_test_add_func ("/cost-model/option", test_option);
  g_test_add_func ("/cost-model/relayout-price", test_relayout_price);
  g_test_add_func ("/cost-model/layout-aware", test_layout_aware);
  ret = g_test_run ();
  g_object_unref (registry);
  return ret;
}
