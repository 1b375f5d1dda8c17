/* tests/core/test-graph.c: the data model: einsum operators, tensors,
 * accounting, signatures, program validation and chip specs. */
#include "elk-test-util.h"

#include <math.h>
#include <string.h>

static gint
tensor (ElkGraph *g, const char *name, ElkTensorOrigin origin, guint n,
        guint64 a, guint64 b, guint64 c)
{
  guint64 shape[3] = { a, b, c };
  g_autoptr (GError) error = NULL;
  gint id = elk_graph_add_tensor (g, name, ELK_DTYPE_F16, origin, n, shape, 0,
                                  &error);
  g_assert_no_error (error);
  return id;
}

static void
test_matmul (void)
{
  g_autoptr (ElkGraph) g = elk_graph_new ("t");
  g_autoptr (GError) error = NULL;
  g_autofree char *sig = NULL;
  guint32 ids[3];
  const ElkOp *op;
  gint id;

  ids[0] = tensor (g, "a", ELK_TENSOR_ORIGIN_ACTIVATION, 2, 32, 64, 0);
  ids[1] = tensor (g, "w", ELK_TENSOR_ORIGIN_WEIGHT, 2, 64, 128, 0);
  ids[2] = tensor (g, "c", ELK_TENSOR_ORIGIN_ACTIVATION, 2, 32, 128, 0);
  id = elk_graph_add_op (g, "mm", "matmul", ELK_OP_MATMUL, 0, "mk,kn->mn",
                         ids, 3, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (id, ==, 0);

  op = elk_graph_get_op (g, 0);
  /* Loop dimensions in order of first appearance, output first: m, n, k. */
  g_assert_cmpuint (op->n_dims, ==, 3);
  g_assert_cmpint (op->dim_names[0], ==, 'm');
  g_assert_cmpint (op->dim_names[1], ==, 'n');
  g_assert_cmpint (op->dim_names[2], ==, 'k');
  g_assert_cmpuint (op->extents[0], ==, 32);
  g_assert_cmpuint (op->extents[1], ==, 128);
  g_assert_cmpuint (op->extents[2], ==, 64);
  /* Operands are stored output first. */
  g_assert_cmpuint (op->n_operands, ==, 3);
  g_assert_cmpuint (op->tensors[0], ==, ids[2]);
  g_assert_cmpuint (op->tensors[1], ==, ids[0]);
  g_assert_cmpint (op->access[1].dims[1][0], ==, 2);
  g_assert_cmpint (op->access[1].dims[1][1], ==, -1);
  g_assert_cmpfloat (op->flops, ==, 2.0 * 32 * 64 * 128);
  g_assert_cmpuint (elk_op_get_hbm_bytes (g, op), ==, 64 * 128 * 2);
  g_assert_cmpuint (elk_graph_get_hbm_bytes (g), ==, 64 * 128 * 2);
  g_assert_cmpuint (elk_graph_get_n_layers (g), ==, 1);
  g_assert_true (elk_graph_validate (g, &error));

  sig = elk_op_dup_signature (g, op);
  g_assert_nonnull (strstr (sig, "matmul:32,128,64,"));
}

/* Two identical MatMul layers: l0 makes x1 from x0 and w0, l1 makes x2
 * from x1 and w1. */
static ElkGraph *
two_op_graph (void)
{
  ElkGraph *g = elk_graph_new ("two");
  guint32 a[3], b[3];

  a[0] = tensor (g, "x0", ELK_TENSOR_ORIGIN_ACTIVATION, 2, 8, 16, 0);
  a[1] = tensor (g, "w0", ELK_TENSOR_ORIGIN_WEIGHT, 2, 16, 16, 0);
  a[2] = tensor (g, "x1", ELK_TENSOR_ORIGIN_ACTIVATION, 2, 8, 16, 0);
  b[0] = a[2];
  b[1] = tensor (g, "w1", ELK_TENSOR_ORIGIN_WEIGHT, 2, 16, 16, 0);
  b[2] = tensor (g, "x2", ELK_TENSOR_ORIGIN_ACTIVATION, 2, 8, 16, 0);
  elk_graph_add_op (g, "l0", NULL, ELK_OP_MATMUL, 0, "mk,kn->mn", a, 3, NULL,
                    NULL);
  elk_graph_add_op (g, "l1", NULL, ELK_OP_MATMUL, 1, "mk,kn->mn", b, 3, NULL,
                    NULL);
  return g;
}

static void
test_signature_identical_layers (void)
{
  g_autoptr (ElkGraph) g = two_op_graph ();
  g_autofree char *s0 = NULL, *s1 = NULL, *s2 = NULL;
  guint32 c[3];

  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 2);
  c[0] = elk_graph_find_tensor (g, "x2");
  c[1] = tensor (g, "k", ELK_TENSOR_ORIGIN_KV_CACHE, 2, 16, 16, 0);
  c[2] = tensor (g, "x3", ELK_TENSOR_ORIGIN_ACTIVATION, 2, 8, 16, 0);
  g_assert_cmpint (elk_graph_add_op (g, "l2", NULL, ELK_OP_MATMUL, 2,
                                     "mk,kn->mn", c, 3, NULL, NULL), ==, 2);
  s0 = elk_op_dup_signature (g, elk_graph_get_op (g, 0));
  s1 = elk_op_dup_signature (g, elk_graph_get_op (g, 1));
  s2 = elk_op_dup_signature (g, elk_graph_get_op (g, 2));
  /* Same shapes and origins: same table; a KV-cache input differs. */
  g_assert_cmpstr (s0, ==, s1);
  g_assert_cmpstr (s0, !=, s2);
  g_assert_cmpuint (elk_graph_get_n_layers (g), ==, 3);
}

static void
test_window (void)
{
  g_autoptr (ElkGraph) g = elk_graph_new ("conv");
  g_autoptr (GError) error = NULL;
  guint32 ids[3];
  const ElkOp *op;

  /* A 3x3 convolution of an 8x8 output over a 10x10 input. */
  {
    guint64 in[4] = { 1, 4, 10, 10 }, w[4] = { 16, 4, 3, 3 },
            out[4] = { 1, 16, 8, 8 };
    ids[0] = elk_graph_add_tensor (g, "x", ELK_DTYPE_F16,
                                   ELK_TENSOR_ORIGIN_ACTIVATION, 4, in, 0,
                                   NULL);
    ids[1] = elk_graph_add_tensor (g, "w", ELK_DTYPE_F16,
                                   ELK_TENSOR_ORIGIN_WEIGHT, 4, w, 0, NULL);
    ids[2] = elk_graph_add_tensor (g, "y", ELK_DTYPE_F16,
                                   ELK_TENSOR_ORIGIN_ACTIVATION, 4, out, 0,
                                   NULL);
  }
  g_assert_cmpint (elk_graph_add_op (g, "conv", "conv", ELK_OP_CONV, -1,
                                     "nch+rw+s,kcrs->nkhw", ids, 3, NULL,
                                     &error),
                   ==, 0);
  g_assert_no_error (error);
  op = elk_graph_get_op (g, 0);
  g_assert_cmpuint (op->n_dims, ==, 7);
  g_assert_cmpint (op->access[1].dims[2][0], ==, 2); /* h */
  g_assert_cmpint (op->access[1].dims[2][1], ==, 5); /* r */
  g_assert_cmpfloat (op->flops, ==, 2.0 * 1 * 16 * 8 * 8 * 4 * 3 * 3);

  /* The same window with a wrong input size is refused. */
  {
    guint64 bad[4] = { 1, 4, 11, 10 };
    guint32 ids2[3] = { 0, 1, 2 };
    ids2[0] = elk_graph_add_tensor (g, "x-bad", ELK_DTYPE_F16,
                                    ELK_TENSOR_ORIGIN_ACTIVATION, 4, bad, 0,
                                    NULL);
    g_assert_cmpint (elk_graph_add_op (g, "conv-bad", "conv", ELK_OP_CONV,
                                       -1, "nch+rw+s,kcrs->nkhw", ids2, 3,
                                       NULL, &error),
                     ==, -1);
    g_assert_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID);
    g_assert_nonnull (strstr (error->message, "window axis 2"));
  }
}

/* A MatMul on test_errors' tensors a, b and c whose einsum or operand count
 * is wrong, and a fragment of the error add_op must give. */
static const struct
{
  const char *einsum;
  guint n_inputs;
  const char *error;
} einsum_cases[] = {
  /* k is 8 in a but 9 in b. */
  { "mk,kn->mn", 3, "loop dimension 'k' is 8" },
  { "mk,kn", 3, "has no '->'" },
  { "mk1,kn->mn", 3, "bad einsum operand" },
  { "mk,kn->mn", 2, "3 operands but 2 tensors" },
  { "mkx,kn->mn", 3, "rank 2" },
};

static void
test_errors (void)
{
  g_autoptr (ElkGraph) g = elk_graph_new ("bad");
  g_autoptr (GError) error = NULL;
  guint64 zero[2] = { 4, 0 };
  guint32 ids[3];

  ids[0] = tensor (g, "a", ELK_TENSOR_ORIGIN_ACTIVATION, 2, 4, 8, 0);
  ids[1] = tensor (g, "b", ELK_TENSOR_ORIGIN_WEIGHT, 2, 9, 4, 0);
  ids[2] = tensor (g, "c", ELK_TENSOR_ORIGIN_ACTIVATION, 2, 4, 4, 0);

  g_assert_cmpint (elk_graph_add_tensor (g, "a", ELK_DTYPE_F16,
                                         ELK_TENSOR_ORIGIN_WEIGHT, 2, zero, 0,
                                         &error), ==, -1);
  g_assert_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "defined twice"));
  g_clear_error (&error);

  g_assert_cmpint (elk_graph_add_tensor (g, "z", ELK_DTYPE_F16,
                                         ELK_TENSOR_ORIGIN_WEIGHT, 2, zero, 0,
                                         &error), ==, -1);
  g_assert_nonnull (strstr (error->message, "extent 0"));
  g_clear_error (&error);

  g_assert_cmpint (elk_graph_add_tensor (g, "q", ELK_DTYPE_QUANTIZED,
                                         ELK_TENSOR_ORIGIN_WEIGHT, 0, NULL, 0,
                                         &error), ==, -1);
  g_assert_nonnull (strstr (error->message, "explicit byte size"));
  g_clear_error (&error);

  for (guint i = 0; i < G_N_ELEMENTS (einsum_cases); i++)
    {
      g_assert_cmpint (elk_graph_add_op (g, "mm", NULL, ELK_OP_MATMUL, 0,
                                         einsum_cases[i].einsum, ids,
                                         einsum_cases[i].n_inputs, NULL,
                                         &error),
                       ==, -1);
      g_assert_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID);
      g_assert_nonnull (strstr (error->message, einsum_cases[i].error));
      g_clear_error (&error);
    }

  /* An empty graph is not a model. */
  g_assert_false (elk_graph_validate (g, &error));
  g_assert_nonnull (strstr (error->message, "no operators"));
}

static void
test_read_before_write (void)
{
  g_autoptr (ElkGraph) g = elk_graph_new ("order");
  g_autoptr (GError) error = NULL;
  guint32 first[2], second[2];

  first[0] = tensor (g, "t", ELK_TENSOR_ORIGIN_ACTIVATION, 1, 8, 0, 0);
  first[1] = tensor (g, "u", ELK_TENSOR_ORIGIN_ACTIVATION, 1, 8, 0, 0);
  second[0] = tensor (g, "x", ELK_TENSOR_ORIGIN_ACTIVATION, 1, 8, 0, 0);
  second[1] = first[0];
  /* op0 reads t, which op1 writes later. */
  g_assert_cmpint (elk_graph_add_op (g, "op0", NULL, ELK_OP_UNARY, -1,
                                     "i->i", first, 2, NULL, NULL), ==, 0);
  g_assert_cmpint (elk_graph_add_op (g, "op1", NULL, ELK_OP_UNARY, -1,
                                     "i->i", second, 2, NULL, NULL), ==, 1);
  g_assert_false (elk_graph_validate (g, &error));
  g_assert_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "reads 't' before"));
}

/* Gives operator @op of @p the plans of cold-hot entry @e of its table. */
static const ElkColdHot *
choose (ElkProgram *p, const ElkPlanSet *set, guint op, guint e)
{
  const ElkPlanTable *t = elk_plan_set_get_table (set, op);
  const ElkColdHot *ch = &t->cold_hot[MIN (e, t->n_cold_hot - 1)];
  ElkProgramOp *pop = elk_program_get_op (p, op);

  pop->exec_plan = t->plans[ch->hot_plan];
  pop->preload_plan = t->plans[ch->cold_plan];
  return ch;
}

/* The entry of @op's table with the largest preload state (@cold) or
 * execution space. */
static guint
largest (const ElkPlanSet *set, guint op, gboolean cold)
{
  const ElkPlanTable *t = elk_plan_set_get_table (set, op);
  guint best = 0;

  for (guint e = 1; e < t->n_cold_hot; e++)
    if (cold ? t->cold_hot[e].cold_bytes > t->cold_hot[best].cold_bytes
             : t->cold_hot[e].hot_bytes > t->cold_hot[best].hot_bytes)
      best = e;
  return best;
}

static ElkPlanSet *
plans_for (ElkGraph *g, guint64 sram_per_core)
{
  g_autoptr (ElkChipSpec) spec = elk_chip_spec_new_ipu_pod4 ();
  g_autoptr (GError) error = NULL;
  ElkPlanSet *set;

  if (sram_per_core > 0)
    spec->sram_per_core = sram_per_core;
  set = elk_plan_set_new (g, spec, NULL, &error);
  g_assert_no_error (error);
  return set;
}

/* A valid two-operator program on @set. */
static ElkProgram *
honest_program (ElkGraph *g, const ElkPlanSet *set)
{
  ElkProgram *p = elk_program_new (g);

  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  elk_program_add_preload (p, 1);
  elk_program_add_execute (p, 1);
  choose (p, set, 0, 0);
  choose (p, set, 1, 0);
  return p;
}

/* A program that breaks one ordering rule: its steps ('p' preload or 'x'
 * execute, then the operator), whether operator 0's first plan is chosen,
 * and a fragment of the error the validator must give. */
typedef struct
{
  const char *steps;
  gboolean choose0;
  const char *error;
} OrderCase;

static const OrderCase order_cases[] = {
  /* Executing out of graph order. */
  { "p0 p1 x1", FALSE, "is next in graph order" },
  /* Executing an HBM-reading operator without its preload. */
  { "x0", FALSE, "without a preload" },
  /* Preloading twice, and after execution. */
  { "p0 p0", FALSE, "a second time" },
  { "p0 x0 p0", FALSE, "preloads 'l0'" },
  /* Missing executes. */
  { "p0 x0", TRUE, "executes 1 of the graph's 2" },
};

static void
test_program_rules (void)
{
  g_autoptr (ElkGraph) g = two_op_graph ();
  g_autoptr (ElkPlanSet) big = plans_for (g, 0);
  const ElkChipSpec *pod = elk_plan_set_get_spec (big);
  guint64 hot0, cold1;

  /* The sizes the validator derives from the plans. */
  {
    g_autoptr (ElkProgram) p = elk_program_new (g);
    hot0 = choose (p, big, 0, largest (big, 0, FALSE))->hot_bytes;
    cold1 = choose (p, big, 1, largest (big, 1, TRUE))->cold_bytes;
    g_assert_cmpuint (cold1, >, 0);
    /* So that only the overlap can overflow. */
    g_assert_cmpuint (choose (p, big, 1, largest (big, 1, TRUE))->hot_bytes,
                      <, hot0 + cold1);
  }

  /* preload(0) preload(1) execute(0) execute(1): valid while the SRAM in
   * use during execute(0), hot(0) + cold(1), fits; one byte less and it
   * does not, whatever the program declares. */
  for (guint tight = 0; tight < 2; tight++)
    {
      g_autoptr (ElkPlanSet) set
        = plans_for (g, pod->sram_reserved + hot0 + cold1 - tight);
      g_autoptr (ElkProgram) p = elk_program_new (g);
      g_autoptr (GError) error = NULL;
      g_autofree ElkOpCost *costs = NULL;

      elk_program_add_preload (p, 0);
      elk_program_add_preload (p, 1);
      elk_program_add_execute (p, 0);
      elk_program_add_execute (p, 1);
      choose (p, big, 0, largest (big, 0, FALSE));
      choose (p, big, 1, largest (big, 1, TRUE));
      costs = elk_program_derive (p, set, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (costs[0].resident_bytes, ==, hot0 + cold1);
      g_assert_cmpuint (costs[0].preload_number, ==, 1);
      g_assert_cmpuint (costs[1].preload_number, ==, 0);
      if (tight == 0)
        {
          g_assert_true (elk_program_validate (p, set, &error));
          g_assert_no_error (error);
          continue;
        }
      /* Declaring nothing in SRAM changes nothing: the sizes are the
       * plans'. */
      elk_program_get_op (p, 1)->cold_bytes = ELK_PROGRAM_UNDECLARED;
      g_assert_false (elk_program_validate (p, set, &error));
      g_assert_error (error, ELK_SCHEDULE_ERROR,
                      ELK_SCHEDULE_ERROR_INVALID_PROGRAM);
      g_assert_nonnull (strstr (error->message, "while 'l0' executes"));
    }
  /* preload(0) execute(0) preload(1) execute(1): preload(1) cannot start
   * before execute(0) ends (R1), so it does not share SRAM with it. */
  {
    g_autoptr (ElkPlanSet) set = plans_for (g, pod->sram_reserved + hot0);
    g_autoptr (ElkProgram) p = honest_program (g, big);
    g_autoptr (GError) error = NULL;
    if (elk_plan_set_get_table (big, 1)->cold_hot[0].hot_bytes <= hot0)
      {
        g_assert_true (elk_program_validate (p, set, &error));
        g_assert_no_error (error);
      }
  }
  /* The ordering rules, each broken once. */
  for (guint i = 0; i < G_N_ELEMENTS (order_cases); i++)
    {
      g_autoptr (ElkProgram) p = elk_program_new (g);
      g_autoptr (GError) error = NULL;

      for (const char *s = order_cases[i].steps; *s != '\0'; s++)
        {
          if (*s == ' ')
            continue;
          if (*s == 'p')
            elk_program_add_preload (p, s[1] - '0');
          else
            elk_program_add_execute (p, s[1] - '0');
          s++;
        }
      if (order_cases[i].choose0)
        choose (p, big, 0, 0);
      g_assert_false (elk_program_validate (p, big, &error));
      g_assert_nonnull (strstr (error->message, order_cases[i].error));
    }
}

static void
expect_invalid (ElkProgram *p, const ElkPlanSet *set, const char *what)
{
  g_autoptr (GError) error = NULL;

  g_assert_false (elk_program_validate (p, set, &error));
  g_assert_error (error, ELK_SCHEDULE_ERROR,
                  ELK_SCHEDULE_ERROR_INVALID_PROGRAM);
  if (strstr (error->message, what) == NULL)
    g_error ("expected '%s' in: %s", what, error->message);
}

/* Every declaration is checked against the derivation, the decisions are
 * range-checked, and predictions are never priced. */
static void
test_program_declarations (void)
{
  g_autoptr (ElkGraph) g = two_op_graph ();
  g_autoptr (ElkPlanSet) set = plans_for (g, 0);
  const ElkChipSpec *spec = elk_plan_set_get_spec (set);
  g_autofree ElkOpCost *honest = NULL;

  {
    g_autoptr (ElkProgram) p = honest_program (g, set);
    g_autoptr (GError) error = NULL;
    const ElkPlanTable *t = elk_plan_set_get_table (set, 0);
    const ElkColdHot *ch = &t->cold_hot[0];
    double noc;

    g_assert_true (elk_program_validate (p, set, &error));
    g_assert_no_error (error);
    honest = elk_program_derive (p, set, &error);
    g_assert_no_error (error);
    g_assert_true (honest[0].preloaded);
    g_assert_cmpuint (honest[0].hbm_bytes, ==, t->hbm_bytes);
    g_assert_cmpuint (honest[0].hot_bytes, ==, ch->hot_bytes);
    g_assert_cmpuint (honest[0].cold_bytes, ==, ch->cold_bytes);
    g_assert_cmpfloat (honest[0].exec_s, ==, t->plans[ch->hot_plan].time_s);
    g_assert_cmpfloat (honest[0].warmup_s, ==, ch->warmup_s);
    g_assert_cmpfloat (honest[0].noc_s, ==,
                       elk_plan_get_noc_demand (&t->plans[ch->hot_plan],
                                                ELK_NOC_DEMAND_SHIFT_SHUFFLE));
    g_assert_cmpfloat (honest[0].load_s, ==,
                       elk_chip_spec_get_load_time (spec, t->hbm_bytes,
                                                    ch->cold_bytes, 1.0,
                                                    &noc));
    g_assert_cmpfloat (honest[0].load_noc_s, ==, noc);
  }
  /* Right declarations pass; wrong ones name the field and both values. */
  {
    g_autoptr (ElkProgram) p = honest_program (g, set);
    g_autoptr (GError) error = NULL;
    ElkProgramOp *pop = elk_program_get_op (p, 0);

    pop->hot_bytes = honest[0].hot_bytes;
    pop->cold_bytes = honest[0].cold_bytes;
    pop->hbm_bytes = honest[0].hbm_bytes;
    pop->exec_budget = honest[0].hot_bytes;
    g_assert_true (elk_program_validate (p, set, &error));
    g_assert_no_error (error);
    pop->cold_bytes = 0;
    expect_invalid (p, set, "cold_bytes declared 0 bytes");
    pop->cold_bytes = honest[0].cold_bytes;
    pop->hot_bytes = 1;
    expect_invalid (p, set, "hot_bytes declared 1 bytes");
    pop->hot_bytes = honest[0].hot_bytes;
    pop->hbm_bytes = 0;
    expect_invalid (p, set, "hbm_bytes declared 0 bytes");
  }
  /* Budgets: positive, holding the execute plan, within SRAM. */
  {
    g_autoptr (ElkProgram) p = honest_program (g, set);
    ElkProgramOp *pop = elk_program_get_op (p, 1);

    pop->exec_budget = 0;
    expect_invalid (p, set, "exec_budget is 0 bytes");
    pop->exec_budget = elk_chip_spec_get_usable_sram (spec) + 1;
    expect_invalid (p, set, "exec_budget");
  }
  /* Preload shares lie in (0, 1]. */
  {
    g_autoptr (ElkProgram) p = honest_program (g, set);
    elk_program_get_op (p, 0)->preload_share = 0;
    expect_invalid (p, set, "preload_share is 0");
    elk_program_get_op (p, 0)->preload_share = 2;
    expect_invalid (p, set, "preload_share is 2");
    elk_program_get_op (p, 0)->preload_share = NAN;
    expect_invalid (p, set, "preload_share is nan");
  }
  /* A plan whose cost fields are not the cost model's. */
  {
    g_autoptr (ElkProgram) p = honest_program (g, set);
    elk_program_get_op (p, 1)->exec_plan.time_s /= 10;
    expect_invalid (p, set, "declares time_s");
  }
  {
    g_autoptr (ElkProgram) p = honest_program (g, set);
    elk_program_get_op (p, 1)->exec_plan.hot_bytes = 0;
    expect_invalid (p, set, "declares hot_bytes");
  }
  /* A preload plan that does not lead to the execute plan. */
  {
    g_autoptr (ElkProgram) p = honest_program (g, set);
    const ElkPlanTable *t = elk_plan_set_get_table (set, 1);
    ElkProgramOp *pop = elk_program_get_op (p, 1);
    gboolean found = FALSE;

    for (guint k = 0; k < t->n_plans && !found; k++)
      if (memcmp (t->plans[k].spatial, pop->exec_plan.spatial,
                  sizeof (pop->exec_plan.spatial)) != 0)
        {
          pop->preload_plan = t->plans[k];
          found = TRUE;
        }
    g_assert_true (found);
    expect_invalid (p, set, "does not lead to the execute plan");
  }
  /* A plan breaking the plan space's rules. */
  {
    g_autoptr (ElkProgram) p = honest_program (g, set);
    elk_program_get_op (p, 0)->exec_plan.spatial[0] = 100000;
    expect_invalid (p, set, "parts for loop dimension");
  }
  /* Predictions must be numbers, and are never priced: lies in them give
   * the same derivation. */
  {
    g_autoptr (ElkProgram) p = honest_program (g, set);
    g_autoptr (GError) error = NULL;
    g_autofree ElkOpCost *costs = NULL;
    ElkProgramOp *pop = elk_program_get_op (p, 0);

    pop->est_load_s = 0;
    pop->est_noc_s = 0;
    pop->est_warmup_s = 0;
    pop->est_exec_s = 1e-12;
    elk_program_set_estimate (p, 1e-12);
    costs = elk_program_derive (p, set, &error);
    g_assert_no_error (error);
    g_assert_cmpmem (costs, 2 * sizeof (ElkOpCost), honest,
                     2 * sizeof (ElkOpCost));
    g_assert_true (elk_program_validate (p, set, &error));
    pop->est_load_s = -1;
    expect_invalid (p, set, "prediction est_load_s is -1");
    pop->est_load_s = INFINITY;
    expect_invalid (p, set, "prediction est_load_s is inf");
  }
  /* A slower, throttled preload is a decision, and is priced. */
  {
    g_autoptr (ElkProgram) p = honest_program (g, set);
    g_autoptr (GError) error = NULL;
    g_autofree ElkOpCost *costs = NULL;

    elk_program_get_op (p, 0)->preload_share = 0.5;
    costs = elk_program_derive (p, set, &error);
    g_assert_no_error (error);
    g_assert_cmpfloat (costs[0].load_s, ==,
                       elk_chip_spec_get_load_time (spec, costs[0].hbm_bytes,
                                                    costs[0].cold_bytes, 0.5,
                                                    NULL));
    g_assert_cmpfloat (costs[0].load_s, >=, honest[0].load_s);
  }
  /* Assumptions of a bound are applied and visible. */
  {
    g_autoptr (ElkProgram) p = honest_program (g, set);
    g_autoptr (GError) error = NULL;
    g_autofree ElkOpCost *costs = NULL;

    elk_program_set_assumptions (p,
                                 ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION
                                 | ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK);
    costs = elk_program_derive (p, set, &error);
    g_assert_no_error (error);
    g_assert_cmpfloat (costs[0].warmup_s, ==, 0);
    g_assert_cmpfloat (costs[0].noc_s, ==, 0);
    g_assert_cmpuint (costs[0].cold_bytes, ==,
                      (costs[0].hbm_bytes + spec->cores - 1) / spec->cores);
  }
}

static void
test_chip_spec (void)
{
  g_autoptr (ElkChipSpec) spec = elk_chip_spec_new_ipu_pod4 ();
  g_autoptr (ElkChipSpec) copy = NULL;
  g_autoptr (GError) error = NULL;

  g_assert_cmpuint (spec->cores, ==, 5888);
  g_assert_cmpuint (spec->sram_per_core, ==, 624 * 1024);
  g_assert_cmpfloat (elk_chip_spec_get_noc_bw (spec), ==, 5888 * 5.5e9);
  g_assert_true (elk_chip_spec_validate (spec, &error));
  copy = elk_chip_spec_copy (spec);
  g_assert_cmpstr (copy->name, ==, "ipu-pod4");

  copy->cores = 5887;
  g_assert_false (elk_chip_spec_validate (copy, &error));
  g_assert_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG);
  g_clear_error (&error);

  copy->cores = 5888;
  copy->topology = ELK_TOPOLOGY_MESH;
  copy->mesh_rows = 32;
  copy->mesh_cols = 32;
  g_assert_false (elk_chip_spec_validate (copy, &error));
  g_assert_nonnull (strstr (error->message, "32x32 mesh"));
  g_clear_error (&error);

  copy->topology = ELK_TOPOLOGY_ALL_TO_ALL;
  copy->sram_per_core = copy->sram_reserved;
  g_assert_false (elk_chip_spec_validate (copy, &error));
  g_assert_nonnull (strstr (error->message, "must exceed"));
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/graph/matmul", test_matmul);
  g_test_add_func ("/graph/signature", test_signature_identical_layers);
  g_test_add_func ("/graph/window", test_window);
  g_test_add_func ("/graph/errors", test_errors);
  g_test_add_func ("/graph/read-before-write", test_read_before_write);
  g_test_add_func ("/program/rules", test_program_rules);
  g_test_add_func ("/program/declarations", test_program_declarations);
  g_test_add_func ("/chip-spec/ipu-pod4", test_chip_spec);
  return g_test_run ();
}
