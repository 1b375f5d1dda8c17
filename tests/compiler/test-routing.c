/* test-routing.c: conditional operators (a mixture-of-experts layer's
 * experts, issue 21 item 3): the graph's condition API and its refusals. */
#include "config.h"

#include <math.h>
#include <elk/elk.h>

#include "elk-test-graph.h"

/* A router and two experts: x -> router (matmul with wr) -> e0, e1 (matmuls
 * of the router's output with w0, w1).  Op 0 is the router, ops 1 and 2
 * the experts. */
static ElkGraph *
router_graph (void)
{
  ElkGraph *g = elk_graph_new ("moe");
  guint64 act[2] = { 4, 16 }, w[2] = { 16, 16 };
  /* Tensors in spec order: the two inputs, then the output. */
  guint32 r[3], e0[3], e1[3];

  r[0] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, act, "x");
  r[1] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_WEIGHT, 2, w, "wr");
  r[2] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, act, "h");
  e0[0] = r[2];
  e0[1] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_WEIGHT, 2, w, "w0");
  e0[2] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, act, "y0");
  e1[0] = r[2];
  e1[1] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_WEIGHT, 2, w, "w1");
  e1[2] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, act, "y1");
  g_assert_cmpint (elk_graph_add_op (g, "router", "matmul", ELK_OP_MATMUL, 0,
                                     "mk,kn->mn", r, 3, NULL, NULL),
                   ==, 0);
  g_assert_cmpint (elk_graph_add_op (g, "exp0", "matmul", ELK_OP_MATMUL, 0,
                                     "mk,kn->mn", e0, 3, NULL, NULL),
                   ==, 1);
  g_assert_cmpint (elk_graph_add_op (g, "exp1", "matmul", ELK_OP_MATMUL, 0,
                                     "mk,kn->mn", e1, 3, NULL, NULL),
                   ==, 2);
  return g;
}

static void
test_condition_api (void)
{
  g_autoptr (ElkGraph) g = router_graph ();
  g_autoptr (GError) error = NULL;
  guint32 router = 99;
  double p = -1;
  gboolean taken = FALSE;

  g_assert_false (elk_graph_has_conditions (g));
  g_assert_false (elk_graph_get_op_condition (g, 1, &router, &p, &taken));
  g_assert_cmpuint (router, ==, 99);

  g_assert_true (elk_graph_set_op_condition (g, 1, 0, 0.25, TRUE, &error));
  g_assert_no_error (error);
  g_assert_true (elk_graph_set_op_condition (g, 2, 0, 1.0, FALSE, &error));
  g_assert_no_error (error);
  g_assert_true (elk_graph_has_conditions (g));

  g_assert_true (elk_graph_get_op_condition (g, 1, &router, &p, &taken));
  g_assert_cmpuint (router, ==, 0);
  g_assert_cmpfloat (p, ==, 0.25);
  g_assert_true (taken);
  g_assert_true (elk_graph_get_op_condition (g, 2, NULL, &p, &taken));
  g_assert_cmpfloat (p, ==, 1.0);
  g_assert_false (taken);
  g_assert_true (elk_graph_get_op_condition (g, 2, NULL, NULL, NULL));
  /* The router itself, and indices past the end, have no condition. */
  g_assert_false (elk_graph_get_op_condition (g, 0, NULL, NULL, NULL));
  g_assert_false (elk_graph_get_op_condition (g, 3, NULL, NULL, NULL));
  g_assert_false (elk_graph_get_op_condition (g, G_MAXUINT32, NULL, NULL,
                                              NULL));
}

static void
expect_refusal (ElkGraph *g, guint32 op, guint32 router, double p,
                const char *fragment)
{
  g_autoptr (GError) error = NULL;

  g_assert_false (elk_graph_set_op_condition (g, op, router, p, TRUE,
                                              &error));
  g_assert_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID);
  if (g_strstr_len (error->message, -1, fragment) == NULL)
    g_error ("refusal '%s' does not name '%s'", error->message, fragment);
}

static void
test_condition_refusals (void)
{
  g_autoptr (ElkGraph) g = router_graph ();
  g_autoptr (GError) error = NULL;

  expect_refusal (g, 3, 0, 0.5, "has 3 operators");
  expect_refusal (g, 1, 3, 0.5, "has 3 operators");
  expect_refusal (g, G_MAXUINT32, 0, 0.5, "has 3 operators");
  expect_refusal (g, 1, 1, 0.5, "must come before");
  expect_refusal (g, 1, 2, 0.5, "must come before");
  expect_refusal (g, 1, 0, -0.01, "not in [0, 1]");
  expect_refusal (g, 1, 0, 1.5, "not in [0, 1]");
  expect_refusal (g, 1, 0, NAN, "not in [0, 1]");
  expect_refusal (g, 1, 0, INFINITY, "not in [0, 1]");
  /* A refusal leaves no condition behind. */
  g_assert_false (elk_graph_has_conditions (g));
  g_assert_false (elk_graph_get_op_condition (g, 1, NULL, NULL, NULL));

  g_assert_true (elk_graph_set_op_condition (g, 1, 0, 0.0, FALSE, &error));
  g_assert_no_error (error);
  expect_refusal (g, 1, 0, 0.5, "already has a condition");
  /* The first condition stands. */
  {
    double p = -1;
    gboolean taken = TRUE;
    g_assert_true (elk_graph_get_op_condition (g, 1, NULL, &p, &taken));
    g_assert_cmpfloat (p, ==, 0.0);
    g_assert_false (taken);
  }
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/routing/condition-api", test_condition_api);
  g_test_add_func ("/routing/condition-refusals", test_condition_refusals);
  return g_test_run ();
}
