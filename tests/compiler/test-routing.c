/* test-routing.c: conditional operators (a mixture-of-experts layer's
 * experts, issue 21 item 3): the graph's condition API and its refusals. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#define ELK_USE_UNSTABLE_API
#include <elk/elk.h>

#include "elk-test-graph.h"
#include "elk-test-util.h"

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
  g_assert_false (
      elk_graph_get_op_condition (g, G_MAXUINT32, NULL, NULL, NULL));
}

static void
expect_refusal (
    ElkGraph *g, guint32 op, guint32 router, double p, const char *fragment)
{
  g_autoptr (GError) error = NULL;

  g_assert_false (elk_graph_set_op_condition (g, op, router, p, TRUE, &error));
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

/* The router graph with exp0 taken and exp1 not (probabilities 0.5);
 * @conditions FALSE: the same graph with no conditions. */
static ElkGraph *
routed_graph (gboolean conditions)
{
  ElkGraph *g = router_graph ();

  if (conditions)
    {
      g_assert_true (elk_graph_set_op_condition (g, 1, 0, 0.5, TRUE, NULL));
      g_assert_true (elk_graph_set_op_condition (g, 2, 0, 0.5, FALSE, NULL));
    }
  return g;
}

/* A hand-made program on @f's graph: every operator gets the plans of its
 * first cold-hot entry, and @order lists the steps as "p0 p1 e0 ...".
 * Distribution is free and preloads have an interconnect of their own, so
 * that no contention enters the timeline and the latency can be worked out
 * by hand from each operator's load and execution time. */
static ElkProgram *
hand_program (ElkTestCompileFixture *f, const char *order)
{
  ElkProgram *p = elk_test_hand_program (f->graph, f->plans, order);

  elk_program_set_assumptions (
      p, ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION
             | ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK);
  return p;
}

typedef struct
{
  const char *order;
  /* What the chip charges, by hand: see test_charging(). */
  guint hits, wasted, on_demand, skipped;
} ChargeCase;

static void
test_charging (void)
{
  /* The router's preload, then (A) both experts speculated, (B) exp0
   * speculated and exp1 after the router, (C) both after the router. */
  static const ChargeCase cases[] = {
    { "p0 p1 p2 e0 e1 e2", 1, 1, 0, 0 },
    { "p0 p1 e0 p2 e1 e2", 1, 0, 0, 1 },
    { "p0 e0 p1 p2 e1 e2", 0, 0, 1, 1 },
  };
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();

  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      const ChargeCase *cc = &cases[k];
      ElkTestCompileFixture f, u;
      g_autoptr (ElkProgram) p = NULL;
      g_autoptr (ElkProgram) q = NULL;
      g_autoptr (ElkMetrics) m = NULL;
      g_autoptr (ElkMetrics) mu = NULL;
      g_autoptr (ElkRoutingStats) none = NULL;
      g_autoptr (GError) error = NULL;
      g_autofree ElkOpCost *c = NULL;
      g_autofree ElkOpCost *cu = NULL;
      gboolean skipped[6];
      double L, Xr, X0, X1, want, want_u, w;
      guint64 cold1;

      g_test_message ("program %s", cc->order);
      elk_test_compile_fixture_init (&f, registry, routed_graph (TRUE));
      elk_test_compile_fixture_init (&u, registry, routed_graph (FALSE));
      p = hand_program (&f, cc->order);
      q = hand_program (&u, cc->order);
      g_assert_true (elk_program_validate (p, f.plans, &error));
      g_assert_no_error (error);

      /* The causal derivation costs the untaken expert as if taken. */
      c = elk_program_derive (p, f.plans, &error);
      g_assert_no_error (error);
      cu = elk_program_derive (q, u.plans, &error);
      g_assert_no_error (error);
      for (guint i = 0; i < 3; i++)
        g_assert_cmpmem (&c[i], sizeof c[i], &cu[i], sizeof cu[i]);
      L = c[0].load_s;
      Xr = c[0].exec_s;
      X0 = c[1].exec_s;
      X1 = c[2].exec_s;
      cold1 = c[2].cold_bytes;
      /* The three operators have the same shapes and plans. */
      g_assert_cmpfloat (c[1].load_s, ==, L);
      g_assert_cmpfloat (c[2].load_s, ==, L);
      g_assert_cmpfloat (L, >, 0);
      g_assert_cmpfloat (Xr, >, 0);
      g_assert_cmpuint (cold1, >, 0);

      /* A graph without conditions has no routing to charge. */
      none = elk_program_charge_routing (q, cu, skipped);
      g_assert_null (none);
      for (guint s = 0; s < 6; s++)
        g_assert_false (skipped[s]);

      m = elk_test_run_program (f.chip, p, NULL, &error);
      g_assert_no_error (error);
      mu = elk_test_run_program (u.chip, q, NULL, &error);
      g_assert_no_error (error);

      /* Worked out by hand from the per-operator times.  Preloads run
       * back to back (R2) but none starts before an execute issued
       * before it has finished (R1); an execute waits for the previous
       * one and its own preload (R3). */
      switch (k)
        {
        case 0:
          /* P0 [0,L] P1 [L,2L] P2 [2L,3L]; E0 [L,L+Xr]; E1 from
           * max(L+Xr,2L); E2 skipped (without conditions it waits for P2
           * and runs X1). */
          want = MAX (L + Xr, 2 * L) + X0;
          want_u = MAX (want, 3 * L) + X1;
          w = 3;
          break;
        case 1:
          /* P0 [0,L] P1 [L,2L]; E0 [L,L+Xr]; P2 skipped (without
           * conditions [max(2L,L+Xr), +L]); E1 from max(L+Xr,2L). */
          want = MAX (L + Xr, 2 * L) + X0;
          want_u = MAX (want, MAX (2 * L, L + Xr) + L) + X1;
          w = 2;
          break;
        default:
          /* P0 [0,L]; E0 [L,L+Xr]; P1 [L+Xr,2L+Xr]; P2 skipped (without
           * conditions [2L+Xr,3L+Xr]); E1 from 2L+Xr. */
          want = 2 * L + Xr + X0;
          want_u = MAX (want, 3 * L + Xr) + X1;
          w = 2;
          break;
        }
      g_assert_cmpfloat_with_epsilon (m->latency_s, want, 1e-12 * want);
      g_assert_cmpfloat_with_epsilon (mu->latency_s, want_u, 1e-12 * want_u);
      g_assert_cmpfloat (m->hbm_bytes, ==, w * 512);
      g_assert_cmpfloat (mu->hbm_bytes, ==, 3 * 512);
      /* The untaken expert does no arithmetic. */
      elk_test_assert_one_expert_taken (m, mu,
                                        elk_graph_get_op (f.graph, 2)->flops,
                                        &(ElkRoutingStats){
                                            .hits = cc->hits,
                                            .wasted = cc->wasted,
                                            .on_demand = cc->on_demand,
                                            .skipped = cc->skipped });
      elk_test_assert_breakdown_adds_up (m, FALSE);
      g_assert_cmpstr (elk_metrics_first_difference (m, m, NULL, NULL), ==,
                       NULL);
      g_assert_cmpstr (elk_metrics_first_difference (m, mu, NULL, NULL), !=,
                       NULL);

      /* SRAM: what the chip charges against the causal derivation. */
      {
        g_autoptr (ElkRoutingStats) st
            = elk_program_charge_routing (p, c, skipped);
        guint64 hot0 = cu[0].hot_bytes, hot1 = cu[1].hot_bytes;

        g_assert_nonnull (st);
        g_assert_cmpuint (c[2].hot_bytes, ==, 0);
        g_assert_cmpfloat (c[2].exec_s, ==, 0);
        g_assert_cmpuint (c[2].resident_bytes, ==, 0);
        g_assert_true (skipped[5]); /* e2 */
        switch (k)
          {
          case 0:
            /* The wasted preload holds its space through both executes. */
            g_assert_cmpuint (c[0].resident_bytes, ==,
                              hot0 + c[1].cold_bytes + cold1);
            g_assert_cmpuint (c[1].resident_bytes, ==, hot1 + cold1);
            g_assert_cmpuint (c[2].hbm_bytes, ==, 512);
            g_assert_false (skipped[2]);
            break;
          case 1:
            g_assert_cmpuint (c[0].resident_bytes, ==, hot0 + c[1].cold_bytes);
            /* Skipped: no space while exp0 runs (without conditions it
             * holds cold1). */
            g_assert_cmpuint (c[1].resident_bytes, ==, hot1);
            g_assert_cmpuint (cu[1].resident_bytes, ==, hot1 + cold1);
            g_assert_cmpuint (c[2].hbm_bytes, ==, 0);
            g_assert_true (skipped[3]);
            break;
          default:
            g_assert_cmpuint (c[0].resident_bytes, ==, hot0);
            g_assert_cmpuint (c[1].resident_bytes, ==, hot1);
            g_assert_cmpuint (cu[1].resident_bytes, ==, hot1 + cold1);
            g_assert_true (skipped[3]);
            break;
          }
      }
      elk_test_compile_fixture_clear (&f);
      elk_test_compile_fixture_clear (&u);
    }
}

/* A stack of @layers mixture-of-experts layers of four experts: in each,
 * a router matmul (h_l x wr_l -> h_{l+1}) and four expert matmuls reading
 * its output.  The experts' probabilities are the same for every graph
 * (0.9, 0.6, 0.3, 0.1: one routing model); @taken says, per layer and
 * expert (bit 4l+e), which ones the graph's sampled routing takes, as two
 * routing seeds of that model would. */
#define N_EXPERTS 4
static const double expert_p[N_EXPERTS] = { 0.9, 0.6, 0.3, 0.1 };

static ElkGraph *
moe_graph (guint layers, guint32 taken)
{
  ElkGraph *g = elk_graph_new ("moe-stack");
  guint64 act[2] = { 1024, 256 }, w[2] = { 256, 256 };
  guint32 h
      = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, act, "h0");

  for (guint l = 0; l < layers; l++)
    {
      guint32 r[3], e[3];
      gint router;

      r[0] = h;
      r[1] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_WEIGHT, 2, w, "wr%u", l);
      r[2] = h = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, act,
                                      "h%u", l + 1);
      {
        g_autofree char *name = g_strdup_printf ("router%u", l);
        router = elk_graph_add_op (g, name, "matmul", ELK_OP_MATMUL, (gint32) l,
                                   "mk,kn->mn", r, 3, NULL, NULL);
        g_assert_cmpint (router, >=, 0);
      }
      for (guint x = 0; x < N_EXPERTS; x++)
        {
          g_autofree char *name = g_strdup_printf ("expert%u.%u", l, x);
          gint op;

          e[0] = h;
          e[1] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_WEIGHT, 2, w,
                                      "w%u.%u", l, x);
          e[2] = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, act,
                                      "y%u.%u", l, x);
          op = elk_graph_add_op (g, name, "matmul", ELK_OP_MATMUL, (gint32) l,
                                 "mk,kn->mn", e, 3, NULL, NULL);
          g_assert_cmpint (op, >, 0);
          g_assert_true (
              elk_graph_set_op_condition (g, (guint32) op, (guint32) router,
                                          expert_p[x],
                                          (taken >> (N_EXPERTS * l + x)) & 1,
                                          NULL));
        }
    }
  return g;
}

/* Bit 4l+e set when expert e of layer l is preloaded before its router
 * executes in @program. */
static guint32
pre_router_set (ElkProgram *program)
{
  ElkGraph *g = elk_program_get_graph (program);
  guint n_ops = elk_graph_get_n_ops (g);
  g_autofree gint *preload = g_new (gint, n_ops);
  g_autofree gint *exec = g_new (gint, n_ops);
  guint32 set = 0;

  for (guint s = 0; s < elk_program_get_n_steps (program); s++)
    {
      const ElkStep *step = elk_program_get_step (program, s);
      (step->kind == ELK_STEP_PRELOAD ? preload : exec)[step->op] = (gint) s;
    }
  for (guint i = 0; i < n_ops; i++)
    {
      guint32 router;
      if (elk_graph_get_op_condition (g, i, &router, NULL, NULL)
          && preload[i] < exec[router])
        {
          /* Ops are router, e0..e3 per layer. */
          guint layer = i / (N_EXPERTS + 1), x = i % (N_EXPERTS + 1) - 1;
          set |= 1u << (N_EXPERTS * layer + x);
        }
    }
  return set;
}

static ElkProgram *
schedule (ElkRegistry *registry,
          ElkTestCompileFixture *f,
          const char *scheduler,
          ElkExpertPreload policy,
          double threshold,
          guint hot)
{
  g_autoptr (GObject) alloc
      = elk_test_make (registry, ELK_TYPE_ALLOCATOR, "reservation", NULL);
  g_autoptr (GObject) sched = NULL;
  g_autoptr (GError) error = NULL;
  ElkProgram *program;

  if (g_str_equal (scheduler, "ideal"))
    sched = elk_test_make (registry, ELK_TYPE_SCHEDULER, scheduler, NULL);
  else
    sched = elk_test_make (registry, ELK_TYPE_SCHEDULER, scheduler,
                           "expert-preload", policy, "expert-threshold",
                           threshold, "expert-hot", hot, NULL);
  program = elk_scheduler_schedule (ELK_SCHEDULER (sched), f->plans,
                                    ELK_ALLOCATOR (alloc), &error);
  g_assert_no_error (error);
  g_assert_true (elk_program_validate (program, f->plans, &error));
  g_assert_no_error (error);
  return program;
}

/* Causality: a policy decides from the routing model alone, so two graphs
 * that differ only in their sampled routing (two routing seeds of one
 * model) get the same experts preloaded before their routers, layer by
 * layer and expert by expert.  Ideal is an oracle and declares it. */
static void
test_causality (void)
{
  static const char *const schedulers[] = { "basic", "static", "elk" };
  static const struct
  {
    ElkExpertPreload policy;
    double threshold;
    guint hot;
    guint32 allowed; /* per layer: the experts it may speculate on */
  } policies[] = {
    { ELK_EXPERT_PRELOAD_ALL, 0.5, 2, 0xf },
    { ELK_EXPERT_PRELOAD_ON_DEMAND, 0.5, 2, 0x0 },
    { ELK_EXPERT_PRELOAD_LIKELY, 0.5, 2, 0x3 },
    { ELK_EXPERT_PRELOAD_LIKELY, 0.25, 2, 0x7 },
    { ELK_EXPERT_PRELOAD_HOT, 0.5, 1, 0x1 },
    { ELK_EXPERT_PRELOAD_HOT, 0.5, 3, 0x7 },
  };
  /* Two samples of the same model over three layers. */
  const guint32 taken[2] = { 0x3a5, 0x1c3 };
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();
  ElkTestCompileFixture f[2];

  for (guint k = 0; k < 2; k++)
    elk_test_compile_fixture_init (&f[k], registry, moe_graph (3, taken[k]));
  for (guint s = 0; s < G_N_ELEMENTS (schedulers); s++)
    for (guint q = 0; q < G_N_ELEMENTS (policies); q++)
      {
        guint32 set[2];
        guint32 allowed = 0;

        for (guint l = 0; l < 3; l++)
          allowed |= policies[q].allowed << (N_EXPERTS * l);
        for (guint k = 0; k < 2; k++)
          {
            g_autoptr (ElkProgram) p
                = schedule (registry, &f[k], schedulers[s], policies[q].policy,
                            policies[q].threshold, policies[q].hot);
            g_autoptr (ElkMetrics) m = NULL;
            g_autoptr (GError) error = NULL;

            set[k] = pre_router_set (p);
            g_assert_false (elk_program_get_assumptions (p)
                            & ELK_PROGRAM_ASSUME_KNOWN_ROUTING);
            m = elk_chip_run (f[k].chip, p, f[k].plans, &error);
            g_assert_no_error (error);
            g_assert_nonnull (m->routing);
            g_assert_cmpuint (m->routing->hits + m->routing->wasted, ==,
                              (guint) __builtin_popcount (set[k]));
          }
        g_test_message ("%s policy %u: pre-router set 0x%03x / 0x%03x",
                        schedulers[s], q, set[0], set[1]);
        g_assert_cmphex (set[0], ==, set[1]);
        g_assert_cmphex (set[0] & ~allowed, ==, 0);
      }

  /* Ideal knows the routing: it speculates only on taken experts, so its
   * sets follow the samples, and it says so. */
  for (guint k = 0; k < 2; k++)
    {
      g_autoptr (ElkProgram) p = schedule (registry, &f[k], "ideal", 0, 0, 0);
      g_autoptr (ElkMetrics) m = NULL;
      g_autoptr (GError) error = NULL;
      guint32 set = pre_router_set (p);

      g_test_message ("ideal: pre-router set 0x%03x, taken 0x%03x", set,
                      taken[k]);
      g_assert_cmphex (set, ==, taken[k]);
      g_assert_true (elk_program_get_assumptions (p)
                     & ELK_PROGRAM_ASSUME_KNOWN_ROUTING);
      m = elk_chip_run (f[k].chip, p, f[k].plans, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (m->routing->wasted, ==, 0);
    }
  for (guint k = 0; k < 2; k++)
    elk_test_compile_fixture_clear (&f[k]);
}

/* The pass on a hand-made program that preloads every expert of a layer
 * before its router: each policy keeps exactly the experts it speculates
 * on, the same for both samples, and the oracle exactly the taken ones. */
static void
test_policies (void)
{
  static const struct
  {
    ElkExpertPreload policy;
    double threshold;
    guint hot;
    guint32 kept; /* per layer */
  } policies[] = {
    { ELK_EXPERT_PRELOAD_ALL, 0.5, 2, 0xf },
    { ELK_EXPERT_PRELOAD_ON_DEMAND, 0.5, 2, 0x0 },
    { ELK_EXPERT_PRELOAD_LIKELY, 0.5, 2, 0x3 },
    { ELK_EXPERT_PRELOAD_LIKELY, 0.3, 2, 0x7 },
    { ELK_EXPERT_PRELOAD_LIKELY, 0.95, 2, 0x0 },
    { ELK_EXPERT_PRELOAD_LIKELY, 0.0, 2, 0xf },
    { ELK_EXPERT_PRELOAD_HOT, 0.5, 0, 0x0 },
    { ELK_EXPERT_PRELOAD_HOT, 0.5, 1, 0x1 },
    { ELK_EXPERT_PRELOAD_HOT, 0.5, 3, 0x7 },
    { ELK_EXPERT_PRELOAD_HOT, 0.5, 9, 0xf },
  };
  const guint32 taken[2] = { 0x3a5, 0x1c3 };
  const char *order = "p0 p1 p2 p3 p4 e0 e1 e2 e3 e4 "
                      "p5 p6 p7 p8 p9 e5 e6 e7 e8 e9 "
                      "p10 p11 p12 p13 p14 e10 e11 e12 e13 e14";
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();

  for (guint k = 0; k < 2; k++)
    {
      ElkTestCompileFixture f;
      g_autoptr (ElkProgram) p = NULL;
      g_autoptr (GError) error = NULL;

      elk_test_compile_fixture_init (&f, registry, moe_graph (3, taken[k]));
      p = hand_program (&f, order);
      g_assert_true (elk_program_validate (p, f.plans, &error));
      g_assert_no_error (error);
      g_assert_cmphex (pre_router_set (p), ==, 0xfff);
      for (guint q = 0; q < G_N_ELEMENTS (policies) + 1; q++)
        {
          gboolean oracle = q == G_N_ELEMENTS (policies);
          g_autoptr (ElkProgram) r
              = elk_program_apply_expert_policy (p, f.plans,
                                                 oracle
                                                     ? ELK_EXPERT_PRELOAD_ORACLE
                                                     : policies[q].policy,
                                                 oracle ? 0.5
                                                        : policies[q].threshold,
                                                 oracle ? 0 : policies[q].hot,
                                                 &error);
          guint32 want = 0;

          g_assert_no_error (error);
          for (guint l = 0; !oracle && l < 3; l++)
            want |= policies[q].kept << (N_EXPERTS * l);
          if (oracle)
            want = taken[k];
          g_assert_cmphex (pre_router_set (r), ==, want);
          /* The moved preloads come right after their router, in order:
           * layer 0 of on-demand is p0 e0 p1 p2 p3 p4 e1 ... */
          if (!oracle && policies[q].kept == 0)
            {
              const ElkStep *s1 = elk_program_get_step (r, 1);
              const ElkStep *s2 = elk_program_get_step (r, 2);
              g_assert_cmpint (s1->kind, ==, ELK_STEP_EXECUTE);
              g_assert_cmpuint (s1->op, ==, 0);
              g_assert_cmpint (s2->kind, ==, ELK_STEP_PRELOAD);
              g_assert_cmpuint (s2->op, ==, 1);
            }
          g_assert_cmpint ((elk_program_get_assumptions (r)
                            & ELK_PROGRAM_ASSUME_KNOWN_ROUTING)
                               != 0,
                           ==, oracle);
          g_assert_cmpuint (elk_program_get_n_steps (r), ==,
                            elk_program_get_n_steps (p));
        }
      /* From an all-on-demand program the oracle hoists exactly the taken
       * experts before their routers, right after the router's preload,
       * in graph order. */
      {
        g_autoptr (ElkProgram) d
            = elk_program_apply_expert_policy (p, f.plans,
                                               ELK_EXPERT_PRELOAD_ON_DEMAND,
                                               0.5, 0, &error);
        g_autoptr (ElkProgram) o = NULL;
        guint32 layer0 = taken[k] & 0xf;
        guint s = 1;

        g_assert_no_error (error);
        g_assert_cmphex (pre_router_set (d), ==, 0);
        o = elk_program_apply_expert_policy (d, f.plans,
                                             ELK_EXPERT_PRELOAD_ORACLE, 0.5, 0,
                                             &error);
        g_assert_no_error (error);
        g_assert_cmphex (pre_router_set (o), ==, taken[k]);
        g_assert_true (elk_program_get_step (o, 0)->op == 0);
        for (guint x = 0; x < N_EXPERTS; x++)
          if (layer0 & (1u << x))
            {
              const ElkStep *st = elk_program_get_step (o, s++);
              g_assert_cmpint (st->kind, ==, ELK_STEP_PRELOAD);
              g_assert_cmpuint (st->op, ==, 1 + x);
            }
        g_assert_cmpint (elk_program_get_step (o, s)->kind, ==,
                         ELK_STEP_EXECUTE);
        g_assert_true (elk_program_validate (o, f.plans, &error));
        g_assert_no_error (error);
      }
      elk_test_compile_fixture_clear (&f);
    }
}

/* The policy properties refuse what they cannot mean, as an experiment's
 * <param> is converted; and the pass refuses a threshold outside [0, 1]. */
static void
test_bad_policy_values (void)
{
  static const char *const schedulers[] = { "basic", "static", "elk" };
  static const struct
  {
    const char *name, *text;
    gint code;
  } bad[] = {
    { "expert-preload", "sometimes", ELK_EXPERIMENT_ERROR_BAD_VALUE },
    { "expert-preload", "", ELK_EXPERIMENT_ERROR_BAD_VALUE },
    { "expert-threshold", "1.5", ELK_EXPERIMENT_ERROR_OUT_OF_RANGE },
    { "expert-threshold", "-0.1", ELK_EXPERIMENT_ERROR_OUT_OF_RANGE },
    { "expert-threshold", "half", ELK_EXPERIMENT_ERROR_BAD_VALUE },
    { "expert-hot", "-1", ELK_EXPERIMENT_ERROR_BAD_VALUE },
  };
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();
  ElkTestCompileFixture f;

  for (guint s = 0; s < G_N_ELEMENTS (schedulers); s++)
    {
      const ElkFeature *feature
          = elk_registry_find (registry, ELK_TYPE_SCHEDULER, schedulers[s],
                               NULL);

      g_assert_nonnull (feature);
      for (guint b = 0; b < G_N_ELEMENTS (bad); b++)
        {
          GValue value = G_VALUE_INIT;
          g_autoptr (GError) error = NULL;

          g_assert_false (elk_param_parse (feature->type, bad[b].name,
                                           bad[b].text, NULL, &value, &error));
          g_test_message ("%s %s=%s: %s", schedulers[s], bad[b].name,
                          bad[b].text, error->message);
          if (!g_error_matches (error, ELK_EXPERIMENT_ERROR, bad[b].code)
              && !g_error_matches (error, ELK_EXPERIMENT_ERROR,
                                   ELK_EXPERIMENT_ERROR_OUT_OF_RANGE))
            g_error ("unexpected error %d: %s", error->code, error->message);
          g_assert_nonnull (strstr (error->message, bad[b].name));
        }
      {
        GValue value = G_VALUE_INIT;
        g_autoptr (GError) error = NULL;
        g_assert_true (elk_param_parse (feature->type, "expert-preload",
                                        "on-demand", NULL, &value, &error));
        g_assert_cmpint (g_value_get_enum (&value), ==,
                         ELK_EXPERT_PRELOAD_ON_DEMAND);
        g_value_unset (&value);
      }
    }

  elk_test_compile_fixture_init (&f, registry, moe_graph (1, 0x1));
  {
    g_autoptr (ElkProgram) p
        = schedule (registry, &f, "basic", ELK_EXPERT_PRELOAD_ALL, 0.5, 2);
    g_autoptr (GError) error = NULL;
    const double thresholds[] = { -0.5, 1.01, NAN };

    for (guint t = 0; t < G_N_ELEMENTS (thresholds); t++)
      {
        g_autoptr (ElkProgram) q
            = elk_program_apply_expert_policy (p, f.plans,
                                               ELK_EXPERT_PRELOAD_LIKELY,
                                               thresholds[t], 0, &error);
        g_assert_null (q);
        g_assert_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED);
        g_assert_nonnull (strstr (error->message, "expert-threshold"));
        g_clear_error (&error);
      }
    {
      g_autoptr (ElkProgram) q
          = elk_program_apply_expert_policy (p, f.plans, (ElkExpertPreload) 17,
                                             0.5, 0, &error);
      g_assert_null (q);
      g_assert_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED);
    }
  }
  elk_test_compile_fixture_clear (&f);
}

/* Without conditions the pass gives back the program itself, so results
 * of every other experiment stay as they were. */
static void
test_no_conditions (void)
{
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();
  ElkTestCompileFixture f;

  elk_test_compile_fixture_init (&f, registry, routed_graph (FALSE));
  for (guint q = 0; q <= ELK_EXPERT_PRELOAD_ORACLE; q++)
    {
      g_autoptr (ElkProgram) p
          = schedule (registry, &f, "elk", ELK_EXPERT_PRELOAD_ALL, 0.5, 2);
      g_autoptr (GError) error = NULL;
      g_autoptr (ElkProgram) r
          = elk_program_apply_expert_policy (p, f.plans, (ElkExpertPreload) q,
                                             0.5, 1, &error);
      g_assert_no_error (error);
      g_assert_true (r == p);
      g_assert_cmpint (elk_program_get_assumptions (r), ==,
                       ELK_PROGRAM_ASSUME_NONE);
    }
  elk_test_compile_fixture_clear (&f);
}

/* One line of results.csv split into fields, quotes honoured. */
static GStrv
split_csv (const char *line)
{
  g_autoptr (GPtrArray) fields = g_ptr_array_new ();
  GString *f = g_string_new (NULL);
  gboolean quoted = FALSE;

  for (const char *p = line;; p++)
    {
      if (*p == '"')
        {
          if (quoted && p[1] == '"')
            g_string_append_c (f, *++p);
          else
            quoted = !quoted;
        }
      else if ((*p == ',' && !quoted) || *p == '\0')
        {
          g_ptr_array_add (fields, g_string_free (f, FALSE));
          if (*p == '\0')
            break;
          f = g_string_new (NULL);
        }
      else
        g_string_append_c (f, *p);
    }
  g_ptr_array_add (fields, NULL);
  return (GStrv) g_ptr_array_free (g_steal_pointer (&fields), FALSE);
}

/* The columns of @dir's results.csv header, and its rows. */
static void
run_moe_experiment (ElkRegistry *registry,
                    const char *experts,
                    const char *dir,
                    GStrv *head,
                    GStrv *row,
                    char **json)
{
  g_autofree char *xml = g_strdup_printf (
      "<?xml version=\"1.0\"?>\n"
      "<experiment format=\"1\" name=\"moe-columns\">\n"
      "  <frontend name=\"llama\">\n"
      "    <param name=\"preset\">mixtral-8x7b</param>\n"
      "    <param name=\"phase\">decode</param>\n"
      "    <param name=\"batch\">1</param>\n"
      "    <param name=\"seq\">128</param>\n"
      "    <param name=\"layers\">1</param>\n"
      "    <param name=\"experts\">%s</param>\n"
      "  </frontend>\n"
      "  <chip name=\"analytic\"/>\n"
      "  <allocator name=\"reservation\"/>\n"
      "  <scheduler name=\"basic\" label=\"basic\">\n"
      "    <param name=\"expert-preload\">on-demand</param>\n"
      "  </scheduler>\n"
      "  <sweep><axis param=\"frontend.batch\" values=\"1\"/></sweep>\n"
      "  <output dir=\"%s\"/>\n"
      "</experiment>\n",
      experts, dir);
  g_auto (GStrv) lines
      = elk_test_run_experiment (registry, xml, "moe-columns.xml", dir);

  *head = split_csv (lines[0]);
  *row = split_csv (lines[1]);
  *json = elk_test_read_file (dir, "results.json");
}

/* results.csv gets the routing columns, before the sweep axes, and
 * results.json a routing object, only when a row has statistics. */
static void
test_results_columns (void)
{
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();
  g_autofree char *dir = g_dir_make_tmp ("elk-routing-XXXXXX", NULL);
  g_autofree char *d_all = g_build_filename (dir, "all", NULL);
  g_autofree char *d_routed = g_build_filename (dir, "routed", NULL);
  g_auto (GStrv) head = NULL, row = NULL, head2 = NULL, row2 = NULL;
  g_autofree char *json = NULL, *json2 = NULL;
  gint hits = -1, on_demand = -1, rate = -1, axis = -1, taken = -1;

  if (elk_registry_find (registry, ELK_TYPE_FRONTEND, "llama", NULL) == NULL)
    {
      g_test_skip ("the llama frontend is not built");
      return;
    }
  run_moe_experiment (registry, "all", d_all, &head, &row, &json);
  run_moe_experiment (registry, "routed", d_routed, &head2, &row2, &json2);
  for (gint c = 0; head[c] != NULL; c++)
    {
      if (g_str_equal (head[c], "routing_hits"))
        hits = c;
      else if (g_str_equal (head[c], "routing_on_demand"))
        on_demand = c;
      else if (g_str_equal (head[c], "routing_hit_rate"))
        rate = c;
      else if (g_str_equal (head[c], "routing_taken"))
        taken = c;
      else if (g_str_equal (head[c], "frontend.batch"))
        axis = c;
    }
  g_assert_cmpint (hits, >, 0);
  g_assert_cmpint (axis, ==, rate + 1);
  g_assert_cmpuint (g_strv_length (head), ==, g_strv_length (row));
  /* On demand: no hits, every taken expert operator with weights loaded
   * after its router (two of eight experts, top-2 at batch 1). */
  g_assert_cmpstr (row[hits], ==, "0");
  g_assert_cmpint (atoi (row[on_demand]), >, 0);
  g_assert_cmpint (atoi (row[on_demand]), <=, atoi (row[taken]));
  g_assert_cmpstr (row[rate], ==, "0");
  g_assert_nonnull (strstr (json, "\"routing\": {\"conditional\": "));
  /* The graph without conditions: neither. */
  g_assert_null (strstr (json2, "routing"));
  for (guint c = 0; head2[c] != NULL; c++)
    g_assert_false (g_str_has_prefix (head2[c], "routing_"));
  g_assert_cmpuint (g_strv_length (head2) + 9, ==, g_strv_length (head));
  /* The physical bound counts the operators that execute: the routed
   * graph's, exactly (the untaken experts' weights need not be read). */
  for (guint c = 0; head2[c] != NULL; c++)
    if (g_str_equal (head2[c], "bound_s"))
      {
        g_assert_cmpstr (head[c], ==, "bound_s");
        g_assert_cmpstr (row[c], ==, row2[c]);
        g_assert_cmpfloat (g_ascii_strtod (row[c], NULL), >, 0);
      }
  elk_test_remove_tree (dir);
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/routing/condition-api", test_condition_api);
  g_test_add_func ("/routing/condition-refusals", test_condition_refusals);
  g_test_add_func ("/routing/charging", test_charging);
  g_test_add_func ("/routing/policies", test_policies);
  g_test_add_func ("/routing/causality", test_causality);
  g_test_add_func ("/routing/bad-policy-values", test_bad_policy_values);
  g_test_add_func ("/routing/no-conditions", test_no_conditions);
  g_test_add_func ("/routing/results-columns", test_results_columns);
  return g_test_run ();
}
