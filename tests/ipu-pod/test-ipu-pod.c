/* test-ipu-pod.c: the "ipu-pod" chip on programs small enough to time by
 * hand, its memory errors, traces, and the Llama2-13B speed benchmark.
 *
 * The hand-computed cases run on a toy machine chosen so that the
 * arithmetic stays exact: one chip of 4 tiles, 1 GHz, 1 B/ns per tile port,
 * 4 B/ns of HBM, 100-cycle syncs and no HBM latency.  Each test spells out
 * the phases the lowering must produce and their durations.  The chip's
 * re-layout price (elk-ipu-pod-cost.c, compiled in) is worked by hand on
 * 2 chips of 2 tiles.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <elk/elk.h>
#include "elk-ipu-pod-private.h"
#include "elk-test-util.h"

static ElkRegistry *registry;

/* Plugin objects from this test's registry (tests/core/elk-test-util.c). */
#define make(...) elk_test_make (registry, __VA_ARGS__)

static ElkChip *
toy_chip (void)
{
  return ELK_CHIP (make (ELK_TYPE_CHIP, "ipu-pod", "chips", 1, "cores", 4,
                         "bandwidth-units", 1 /* decimal */,
                         "link-bw-gbps", 1.0, "hbm-bw-gbps", 4.0,
                         "hbm-channels", 1, "clock-ghz", 1.0,
                         "hbm-latency-ns", 0.0, "sync-cycles", 100.0,
                         "sram-port-bytes-per-cycle", 1e3, NULL));
}

static gint
add_tensor (ElkGraph *g, const char *name, ElkTensorOrigin origin,
            guint n_dims, const guint64 *shape)
{
  g_autoptr(GError) error = NULL;
  gint t = elk_graph_add_tensor (g, name, ELK_DTYPE_F16, origin, n_dims,
                                 shape, 0, &error);
  g_assert_no_error (error);
  return t;
}

/* relu over a 4096-element weight, once per name. */
static void
add_relu (ElkGraph *g, const char *name)
{
  g_autoptr(GError) error = NULL;
  const guint64 n[1] = { 4096 };
  char wn[64], on[64];
  guint32 ts[2];

  g_snprintf (wn, sizeof (wn), "%s.w", name);
  g_snprintf (on, sizeof (on), "%s.out", name);
  /* Inputs in spec order, then the output. */
  ts[0] = (guint32) add_tensor (g, wn, ELK_TENSOR_ORIGIN_WEIGHT, 1, n);
  ts[1] = (guint32) add_tensor (g, on, ELK_TENSOR_ORIGIN_ACTIVATION, 1, n);
  elk_graph_add_op (g, name, "relu", ELK_OP_UNARY, -1, "n->n", ts, 2, NULL,
                    &error);
  g_assert_no_error (error);
}

static void
set_plan (ElkProgram *p, guint op, guint n_dims, guint n_operands,
          const guint32 *spatial, const guint32 temporal[][3])
{
  ElkProgramOp *pop = elk_program_get_op (p, op);
  ElkPlan plan = { 0 };
  guint32 cores = 1;

  plan.n_dims = (guint8) n_dims;
  plan.n_operands = (guint8) n_operands;
  for (guint d = 0; d < n_dims; d++)
    {
      plan.spatial[d] = spatial[d];
      cores *= spatial[d];
      for (guint v = 0; v < n_operands; v++)
        plan.temporal[d][v] = temporal != NULL ? temporal[d][v] : 1;
    }
  plan.cores_used = cores;
  /* The compiler's estimates are deliberately absurd: the emulator must
   * never read them. */
  plan.time_s = 1e3;
  pop->exec_plan = plan;
  pop->preload_plan = plan;
  pop->est_exec_s = 1e3;
  pop->est_load_s = 1e3;
}

static ElkMetrics *
run (ElkChip *chip, ElkProgram *program, GError **error)
{
  return elk_test_run_program (chip, program, NULL, error);
}

static void
assert_breakdown (const ElkMetrics *m)
{
  double sum = m->preload_only_s + m->execute_only_s + m->overlap_s
               + m->stall_s;
  g_assert_cmpfloat_with_epsilon (sum, m->latency_s, 1e-12);
}

/* Runs @program with the enum property @prop of @chip set to @value; the
 * metrics must name the lowering in @model and add up. */
static ElkMetrics *
run_with (ElkChip *chip,
          ElkProgram *program,
          const char *prop,
          gint value,
          const char *model)
{
  g_autoptr (GError) error = NULL;
  ElkMetrics *m;

  g_object_set (chip, prop, value, NULL);
  m = run (chip, program, &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (m->model, model));
  assert_breakdown (m);
  return m;
}

/* preload(0); execute(0) on 4 tiles.  The preload moves 8192 B from HBM
 * at 4 B/ns into four 2048 B pieces at 1 B/ns per port: 2048 ns either
 * way.  The execute is one relu step of 1024 elements (0.5 * 1024 + 200 =
 * 712 cycles) and the closing sync (100): 812 ns. */
static void
test_single_op (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkGraph) g = elk_graph_new ("single");
  g_autoptr(ElkProgram) p = NULL;
  g_autoptr(ElkChip) chip = toy_chip ();
  g_autoptr(ElkMetrics) m = NULL;
  const guint32 sp[1] = { 4 };
  guint64 hwm = 0;

  add_relu (g, "relu0");
  p = elk_program_new (g);
  set_plan (p, 0, 1, 2, sp, NULL);
  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  m = run (chip, p, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat_with_epsilon (m->latency_s, 2860e-9, 1e-15);
  g_assert_cmpfloat_with_epsilon (m->preload_only_s, 2048e-9, 1e-15);
  g_assert_cmpfloat_with_epsilon (m->execute_only_s, 812e-9, 1e-15);
  g_assert_cmpfloat_with_epsilon (m->hbm_bytes, 8192, 1e-6);
  assert_breakdown (m);
  /* 8 KiB receive buffer plus the 2048 B input and 2048 B output. */
  g_object_get (chip, "last-sram-hwm", &hwm, NULL);
  g_assert_cmpuint (hwm, ==, 8192 + 4096);
  g_assert_nonnull (strstr (m->model, "ipu-pod emulator"));
}

/* preload(0); preload(1); execute(0); execute(1).  preload(1) starts when
 * preload(0) ends (R2), together with execute(0).  Its stream fills every
 * port at 1 B/ns, and with a 4 B/cycle SRAM port each received byte takes
 * a quarter cycle from the relu: 712 cycles take 949.33 ns, of which
 * 237.33 ns are stall.  execute(1) waits for its tags at 4096 ns (R3). */
static void
test_contention (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkGraph) g = elk_graph_new ("two");
  g_autoptr(ElkProgram) p = NULL;
  g_autoptr(ElkChip) chip = toy_chip ();
  g_autoptr(ElkMetrics) m = NULL;
  const guint32 sp[1] = { 4 };

  g_object_set (chip, "sram-port-bytes-per-cycle", 4.0, NULL);
  add_relu (g, "relu0");
  add_relu (g, "relu1");
  p = elk_program_new (g);
  set_plan (p, 0, 1, 2, sp, NULL);
  set_plan (p, 1, 1, 2, sp, NULL);
  elk_program_add_preload (p, 0);
  elk_program_add_preload (p, 1);
  elk_program_add_execute (p, 0);
  elk_program_add_execute (p, 1);
  m = run (chip, p, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat_with_epsilon (m->latency_s, 4908e-9, 1e-14);
  g_assert_cmpfloat_with_epsilon (m->stall_s, (712.0 / 3) * 1e-9, 1e-14);
  g_assert_cmpfloat_with_epsilon (m->overlap_s, 812e-9, 1e-14);
  g_assert_cmpfloat_with_epsilon (m->execute_only_s, 812e-9, 1e-14);
  assert_breakdown (m);
}

/* R1: a preload issued after execute(0) may not start before it ends, so
 * nothing overlaps: 2048 + 812 + 2048 + 812 ns. */
static void
test_rule_r1 (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkGraph) g = elk_graph_new ("r1");
  g_autoptr(ElkProgram) p = NULL;
  g_autoptr(ElkChip) chip = toy_chip ();
  g_autoptr(ElkMetrics) m = NULL;
  const guint32 sp[1] = { 4 };

  add_relu (g, "relu0");
  add_relu (g, "relu1");
  p = elk_program_new (g);
  set_plan (p, 0, 1, 2, sp, NULL);
  set_plan (p, 1, 1, 2, sp, NULL);
  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  elk_program_add_preload (p, 1);
  elk_program_add_execute (p, 1);
  m = run (chip, p, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat_with_epsilon (m->latency_s, 2 * 2860e-9, 1e-14);
  g_assert_cmpfloat (m->overlap_s, ==, 0);
  assert_breakdown (m);
}

/* y[m,n] = x[m,k] w[k,n], m = 16, k = 64, n = 32, x the model input.  */
static ElkGraph *
matmul_graph (void)
{
  g_autoptr(GError) error = NULL;
  ElkGraph *g = elk_graph_new ("mm");
  const guint64 sx[2] = { 16, 64 }, sw[2] = { 64, 32 }, sy[2] = { 16, 32 };
  guint32 ts[3];

  ts[0] = (guint32) add_tensor (g, "x", ELK_TENSOR_ORIGIN_ACTIVATION, 2, sx);
  ts[1] = (guint32) add_tensor (g, "w", ELK_TENSOR_ORIGIN_WEIGHT, 2, sw);
  ts[2] = (guint32) add_tensor (g, "y", ELK_TENSOR_ORIGIN_ACTIVATION, 2, sy);
  elk_graph_add_op (g, "mm", "matmul", ELK_OP_MATMUL, -1, "mk,kn->mn", ts, 3,
                    NULL, &error);
  g_assert_no_error (error);
  return g;
}

/* Spatial (m, n, k) = (1, 2, 2): every tile computes 16 x 32 x 16 and the
 * two k halves of each output piece are reduced afterwards.  Preload: four
 * distinct 1024 B pieces of w, 1024 ns.  Execute: sync 100; gather the
 * 1024 B x piece, 1024 ns; one MatMul call 24*3*2*1 + 514*2*1 + 113 + 173
 * = 1458; sync 100; reduce-scatter half of the 512 B output, 256 ns; add
 * 2 partials of 128 outputs, reduce kernel min (0.25*481 + 175, 1.5*288 +
 * 175) = 295.25; sync 100.  Total 1024 + 4333.25 - 1000 = 4357.25 ns. */
static void
test_matmul_reduce (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkGraph) g = matmul_graph ();
  g_autoptr(ElkProgram) p = elk_program_new (g);
  g_autoptr(ElkChip) chip = toy_chip ();
  g_autoptr(ElkMetrics) m = NULL;
  const guint32 sp[3] = { 1, 2, 2 };

  set_plan (p, 0, 3, 3, sp, NULL);
  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  m = run (chip, p, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat_with_epsilon (m->latency_s, 4357.25e-9, 1e-14);
  assert_breakdown (m);
}

/* Spatial (1, 2, 1) with x rotating in 2 parts along k: two compute steps
 * of 16 x 32 x 16 (1458 cycles each) with one 1024 B shift between them.
 * w's 2048 B pieces take 2048 ns through the ports.  Execute: 100 + 1024
 * (gather x's part) + 1458 + 100 + 1024 (shift) + 1458 + 100 = 5264. */
static void
test_matmul_rotation (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkGraph) g = matmul_graph ();
  g_autoptr(ElkProgram) p = elk_program_new (g);
  g_autoptr(ElkChip) chip = toy_chip ();
  g_autoptr(ElkMetrics) m = NULL;
  const guint32 sp[3] = { 1, 2, 1 };
  /* Loop dims m, n, k; operands y, x, w. */
  const guint32 tp[3][3] = { { 1, 1, 1 }, { 1, 1, 1 }, { 1, 2, 1 } };
  guint64 hwm = 0;

  set_plan (p, 0, 3, 3, sp, tp);
  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  m = run (chip, p, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat_with_epsilon (m->latency_s, (2048 + 5264) * 1e-9, 1e-14);
  assert_breakdown (m);
  /* Execution space: x's part double-buffered (2 x 1024), w 2048, y 512. */
  g_object_get (chip, "last-sram-hwm", &hwm, NULL);
  g_assert_cmpuint (hwm, ==, 8192 + 2048 + 2048 + 512);
}

/* matmul_graph() with an RMSNorm folded in (ELK_FUSE_RMSNORM_MATMUL,
 * "mk,kn,k->mn": operands y, x, w and the gain g of 64) when @fused, the
 * plain MatMul otherwise; run on spatial (m, n, k) = (2, 1, 1), w
 * rotating @w_parts ways along n between its two replicas, or, when
 * @x_parts > 0, on (1, 2, 1) with x rotating @x_parts ways along k.
 * @fused 2 folds a LayerNorm instead (ELK_FUSE_LAYERNORM_MATMUL,
 * "mk,kn,k,k->mn", a bias b of 64 after the gain), @fused 3 a softmax
 * over k (ELK_FUSE_SOFTMAX_MATMUL, "mk,kn,m->mn", the row maximum mx of
 * 16, an activation, in the gain's place). */
static double
norm_matmul_latency (guint fused, guint32 w_parts, guint32 x_parts)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = elk_graph_new ("mm");
  g_autoptr (ElkProgram) p = NULL;
  g_autoptr (ElkChip) chip = toy_chip ();
  g_autoptr (ElkMetrics) m = NULL;
  const guint64 sx[2] = { 16, 64 }, sw[2] = { 64, 32 }, sy[2] = { 16, 32 };
  const guint64 sg[1] = { 64 }, sm[1] = { 16 };
  const guint32 sp_w[3] = { 2, 1, 1 }, sp_x[3] = { 1, 2, 1 };
  guint32 ts[5];
  /* The operator type and einsum of each @fused. */
  static const char *const types[]
      = { "matmul", ELK_FUSE_RMSNORM_MATMUL, ELK_FUSE_LAYERNORM_MATMUL,
          ELK_FUSE_SOFTMAX_MATMUL };
  static const char *const specs[]
      = { "mk,kn->mn", "mk,kn,k->mn", "mk,kn,k,k->mn", "mk,kn,m->mn" };
  guint n = 0;
  ElkProgramOp *pop;

  ts[n++] = (guint32) add_tensor (g, "x", ELK_TENSOR_ORIGIN_ACTIVATION, 2, sx);
  ts[n++] = (guint32) add_tensor (g, "w", ELK_TENSOR_ORIGIN_WEIGHT, 2, sw);
  if (fused == 3)
    ts[n++]
        = (guint32) add_tensor (g, "mx", ELK_TENSOR_ORIGIN_ACTIVATION, 1, sm);
  else if (fused)
    ts[n++] = (guint32) add_tensor (g, "g", ELK_TENSOR_ORIGIN_WEIGHT, 1, sg);
  if (fused == 2)
    ts[n++] = (guint32) add_tensor (g, "b", ELK_TENSOR_ORIGIN_WEIGHT, 1, sg);
  ts[n++] = (guint32) add_tensor (g, "y", ELK_TENSOR_ORIGIN_ACTIVATION, 2, sy);
  elk_graph_add_op (g, "mm", types[fused], ELK_OP_MATMUL, -1, specs[fused], ts,
                    n, NULL, &error);
  g_assert_no_error (error);
  p = elk_program_new (g);
  set_plan (p, 0, 3, n, x_parts > 0 ? sp_x : sp_w, NULL);
  pop = elk_program_get_op (p, 0);
  pop->exec_plan.temporal[1][2] = w_parts;
  pop->exec_plan.temporal[2][1] = MAX (x_parts, 1u);
  pop->preload_plan = pop->exec_plan;
  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  m = run (chip, p, &error);
  g_assert_no_error (error);
  assert_breakdown (m);
  return m->latency_s;
}

/* A fused RMSNorm-MatMul squares and scales each step piece of the x it
 * holds once (docs/plan-space.md, "Fused operators"): with w rotating 2
 * ways along n the tile computes two steps on the same 8 x 64 x piece, so
 * the fusion costs exactly what it costs in one step (one prologue, one
 * epilogue), not one prologue per step.  With x rotating 2 ways along k
 * (16 x 32 pieces) a tile runs the prologue on its own piece only: the
 * sums of squares of 16 rows (0.25 * 512 + 175 = 303 cycles) and the
 * gain (0.75 * 512 + 290 = 674); the other piece arrives scaled, with its
 * 16 sums (32 B more in the shift, 32 ns through the port), which it adds
 * (0.75 * 16 + 290 = 302).  Without rotation the prologue covers the
 * 16 x 64 piece: 0.25 * 1024 + 175 = 431 and 0.75 * 1024 + 290 = 1058.
 * The epilogue is the same, so the fusion costs 1311 - 1489 = 178 ns less
 * with the rotation. */
static void
test_fused_norm_prologue (void)
{
  double one
      = norm_matmul_latency (TRUE, 1, 0) - norm_matmul_latency (FALSE, 1, 0);
  double two
      = norm_matmul_latency (TRUE, 2, 0) - norm_matmul_latency (FALSE, 2, 0);
  double x_one, x_two;

  g_assert_cmpfloat (one, >, 0);
  g_assert_cmpfloat_with_epsilon (two, one, 1e-14);

  x_one = norm_matmul_latency (TRUE, 1, 1) - norm_matmul_latency (FALSE, 1, 1);
  x_two = norm_matmul_latency (TRUE, 1, 2) - norm_matmul_latency (FALSE, 1, 2);
  g_assert_cmpfloat_with_epsilon (x_two - x_one, -178e-9, 1e-14);
}

/* The same for a fused LayerNorm-MatMul.  Its two extra rows (g and b
 * through the MatMul) cost nothing on these shapes: 8 or 16 rows and 10 or
 * 18 take the same AMP blocks (ceil (m / 6), or one n block of 16).  With
 * w rotating, one prologue and one epilogue whatever the steps.  With x
 * rotating 2 ways along k the tile reduces its own 16 x 32 piece twice
 * (sums of x and of x²: 2 * 303) and scales it (674), and adds the
 * arriving piece's 2 x 16 sums (0.75 * 32 + 290 = 314), which travel with
 * it (64 B, 64 ns); without rotation two reductions of the 16 x 64 piece
 * (2 * 431) and the gain (1058): 1658 - 1920 = -262 ns. */
static void
test_fused_layer_prologue (void)
{
  double one
      = norm_matmul_latency (2, 1, 0) - norm_matmul_latency (FALSE, 1, 0);
  double two
      = norm_matmul_latency (2, 2, 0) - norm_matmul_latency (FALSE, 2, 0);
  double x_one, x_two;

  g_assert_cmpfloat (one, >,
                     norm_matmul_latency (TRUE, 1, 0)
                         - norm_matmul_latency (FALSE, 1, 0));
  g_assert_cmpfloat_with_epsilon (two, one, 1e-14);

  x_one = norm_matmul_latency (2, 1, 1) - norm_matmul_latency (FALSE, 1, 1);
  x_two = norm_matmul_latency (2, 1, 2) - norm_matmul_latency (FALSE, 1, 2);
  g_assert_cmpfloat_with_epsilon (x_two - x_one, -262e-9, 1e-14);
}

/* The same for a fused softmax-MatMul, whose prologue has the RMSNorm's
 * two terms (exp (x - mx), one element-wise pass, for the gain; the row
 * sums of the exponentials, one reduce, for the sums of squares): with w
 * rotating, one prologue and one epilogue whatever the steps; with x
 * rotating 2 ways along k the same -178 ns as the RMSNorm's.  By hand,
 * without rotation on (2, 1, 1): the prologue on the tile's 8 x 64 x
 * piece, 0.25 * 512 + 175 = 303 and 0.75 * 512 + 290 = 674; the epilogue
 * one divide per element of the 8 x 32 output piece, 0.75 * 256 + 290 =
 * 482 (no rsqrt); and the tile's 8 row maxima (16 B, an on-chip
 * activation) gathered with x, 16 ns: 1475 ns more than the MatMul
 * alone.  (The RMSNorm's is 1791: its rsqrt, 0.5 * 8 + 200, and its
 * 64-value gain's 128 B from HBM.) */
static void
test_fused_softmax_prologue (void)
{
  double one
      = norm_matmul_latency (3, 1, 0) - norm_matmul_latency (FALSE, 1, 0);
  double two
      = norm_matmul_latency (3, 2, 0) - norm_matmul_latency (FALSE, 2, 0);
  double x_one, x_two;

  g_assert_cmpfloat_with_epsilon (one, 1475e-9, 1e-14);
  g_assert_cmpfloat_with_epsilon (two, one, 1e-14);

  x_one = norm_matmul_latency (3, 1, 1) - norm_matmul_latency (FALSE, 1, 1);
  x_two = norm_matmul_latency (3, 1, 2) - norm_matmul_latency (FALSE, 1, 2);
  g_assert_cmpfloat_with_epsilon (x_two - x_one, -178e-9, 1e-14);
}

/* Spatial (1, 1, 4): four partial sums of every 1024 B output piece.  The
 * direct reduction is one superstep (sync 100, 768 B through each port);
 * the stepwise one three (sync 100 and 256 B each), with the same reduce
 * kernel after it: exactly 200 ns more. */
static void
test_reduce_lowering (void)
{
  g_autoptr(ElkGraph) g = matmul_graph ();
  g_autoptr(ElkProgram) p = elk_program_new (g);
  g_autoptr(ElkChip) chip = toy_chip ();
  g_autoptr(ElkMetrics) direct = NULL, stepwise = NULL;
  const guint32 sp[3] = { 1, 1, 4 };

  set_plan (p, 0, 3, 3, sp, NULL);
  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  direct = run_with (chip, p, "reduce-lowering", 0, "direct partial-sum");
  stepwise = run_with (chip, p, "reduce-lowering", 1, "stepwise partial-sum");
  g_assert_cmpfloat_with_epsilon (stepwise->latency_s - direct->latency_s,
                                  200e-9, 1e-14);
}

/* Spatial (2, 2, 1): w's 2048 B piece is held by two tiles, and its
 * preload state cuts it in two along k, so execute's input superstep
 * fetches the missing 1024 B from the peer beside the 1024 B of x: 2048
 * ns.  A program that assumes free distribution (Ideal) is charged only
 * the 1024 ns of x, and the metrics say so. */
static void
test_assume_free_distribution (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkGraph) g = matmul_graph ();
  g_autoptr(ElkProgram) p = elk_program_new (g);
  g_autoptr(ElkChip) chip = toy_chip ();
  g_autoptr(ElkMetrics) real = NULL, ideal = NULL;
  const guint32 sp[3] = { 2, 2, 1 };

  set_plan (p, 0, 3, 3, sp, NULL);
  elk_program_get_op (p, 0)->preload_plan.temporal[2][2] = 2;
  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  real = run (chip, p, &error);
  g_assert_no_error (error);
  g_assert_null (strstr (real->model, "assumption"));
  elk_program_set_assumptions (p, ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION);
  ideal = run (chip, p, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat_with_epsilon (real->latency_s - ideal->latency_s,
                                  1024e-9, 1e-14);
  g_assert_nonnull (strstr (ideal->model, "free data distribution"));
  assert_breakdown (ideal);
}

/* relu1's preload streams while mm's input superstep gathers x: on the
 * machine they share every receive port; on a private preload network the
 * exchange keeps the whole port, so the execute and the run end earlier. */
static void
test_assume_private_network (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkGraph) g = matmul_graph ();
  g_autoptr(ElkProgram) p = NULL;
  g_autoptr(ElkChip) chip = toy_chip ();
  g_autoptr(ElkMetrics) real = NULL, ideal = NULL;
  const guint32 sp[3] = { 1, 2, 2 }, sr[1] = { 4 };

  add_relu (g, "relu1");
  p = elk_program_new (g);
  set_plan (p, 0, 3, 3, sp, NULL);
  set_plan (p, 1, 1, 2, sr, NULL);
  elk_program_add_preload (p, 0);
  elk_program_add_preload (p, 1);
  elk_program_add_execute (p, 0);
  elk_program_add_execute (p, 1);
  real = run (chip, p, &error);
  g_assert_no_error (error);
  elk_program_set_assumptions (p,
                               ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK);
  ideal = run (chip, p, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (ideal->latency_s, <, real->latency_s - 100e-9);
  g_assert_nonnull (strstr (ideal->model, "private preload network"));
  assert_breakdown (real);
  assert_breakdown (ideal);
}

/* Two chips of two tiles, IPU-Links at 0.5 B/ns.  A = relu of a 4 x 4
 * weight split (m, n) = (1, 4): chip 0 holds columns 0-1.  B = relu of A's
 * output split (2, 2).  Mapped row-major, B's chips take rows instead of
 * columns and half of the 32 B cross chips: B's input superstep waits 32 ns
 * for the links instead of 8 ns for its ports.  The aligned mapping puts
 * n outermost for B and nothing crosses: exactly 24 ns less. */
static void
test_tile_mapping (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkGraph) g = elk_graph_new ("mapping");
  g_autoptr(ElkProgram) p = NULL;
  g_autoptr(ElkChip) chip = NULL;
  g_autoptr(ElkMetrics) seq = NULL, aligned = NULL;
  const guint64 shape[2] = { 4, 4 };
  const guint32 sa[2] = { 1, 4 }, sb[2] = { 2, 2 };
  guint32 ts[2];

  chip = ELK_CHIP (make (ELK_TYPE_CHIP, "ipu-pod", "chips", 2, "cores", 4,
                         "bandwidth-units", 1 /* decimal */,
                         "link-bw-gbps", 1.0, "hbm-bw-gbps", 4.0,
                         "hbm-channels", 2, "clock-ghz", 1.0,
                         "hbm-latency-ns", 0.0, "sync-cycles", 100.0,
                         "inter-chip-bw-gbps", 0.5,
                         "sram-port-bytes-per-cycle", 1e3, NULL));
  ts[0] = (guint32) add_tensor (g, "w", ELK_TENSOR_ORIGIN_WEIGHT, 2, shape);
  ts[1] = (guint32) add_tensor (g, "a", ELK_TENSOR_ORIGIN_ACTIVATION, 2,
                                shape);
  elk_graph_add_op (g, "A", "relu", ELK_OP_UNARY, -1, "mn->mn", ts, 2, NULL,
                    &error);
  g_assert_no_error (error);
  ts[0] = ts[1];
  ts[1] = (guint32) add_tensor (g, "b", ELK_TENSOR_ORIGIN_ACTIVATION, 2,
                                shape);
  elk_graph_add_op (g, "B", "relu", ELK_OP_UNARY, -1, "mn->mn", ts, 2, NULL,
                    &error);
  g_assert_no_error (error);
  p = elk_program_new (g);
  set_plan (p, 0, 2, 2, sa, NULL);
  set_plan (p, 1, 2, 2, sb, NULL);
  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  elk_program_add_execute (p, 1);

  seq = run_with (chip, p, "tile-mapping", 0, "sequential tile mapping");
  aligned = run_with (chip, p, "tile-mapping", 1, "aligned tile mapping");
  g_assert_cmpfloat_with_epsilon (seq->latency_s - aligned->latency_s, 24e-9,
                                  1e-14);
}

/* A tile that cannot hold a preload stops the run with an error naming the
 * tile, the step, the operator and the bytes. */
static void
test_overflow (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkGraph) g = elk_graph_new ("big");
  g_autoptr(ElkProgram) p = NULL;
  g_autoptr(ElkChip) chip = toy_chip ();
  g_autoptr(ElkMetrics) m = NULL;
  const guint32 sp[1] = { 4 };

  /* 10 KiB per tile, 8 KiB of it the receive buffer: 2048 B usable. */
  g_object_set (chip, "sram-kib", 10, NULL);
  add_relu (g, "relu0");
  add_relu (g, "relu1");
  p = elk_program_new (g);
  set_plan (p, 0, 1, 2, sp, NULL);
  set_plan (p, 1, 1, 2, sp, NULL);
  elk_program_add_preload (p, 0);
  elk_program_add_preload (p, 1);
  elk_program_add_execute (p, 0);
  elk_program_add_execute (p, 1);
  /* The program never reaches the emulator: libelk refuses it first, for
   * every chip alike (relu's execute state alone, input and output, needs
   * 4096 B per tile). */
  m = run (chip, p, &error);
  g_assert_null (m);
  g_assert_error (error, ELK_SCHEDULE_ERROR,
                  ELK_SCHEDULE_ERROR_DOES_NOT_FIT);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "'relu0'"));
  g_assert_nonnull (strstr (error->message, "2048 bytes of SRAM per core"));
}

/* A plan that needs more tiles than the machine has is an error. */
static void
test_bad_plan (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkGraph) g = elk_graph_new ("bad");
  g_autoptr(ElkProgram) p = NULL;
  g_autoptr(ElkChip) chip = toy_chip ();
  g_autoptr(ElkMetrics) m = NULL;
  const guint32 sp[1] = { 8 };

  add_relu (g, "relu0");
  p = elk_program_new (g);
  set_plan (p, 0, 1, 2, sp, NULL);
  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  m = run (chip, p, &error);
  g_assert_null (m);
  g_assert_error (error, ELK_SCHEDULE_ERROR,
                  ELK_SCHEDULE_ERROR_INVALID_PROGRAM);
  g_assert_nonnull (strstr (error->message, "'relu0'"));
  g_assert_nonnull (strstr (error->message, "more than the 4 cores"));
}

static void
test_trace (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkGraph) g = matmul_graph ();
  g_autoptr(ElkProgram) p = elk_program_new (g);
  g_autoptr(ElkChip) chip = toy_chip ();
  g_autoptr(ElkMetrics) m = NULL;
  g_autoptr(ElkTrace) trace = elk_trace_new ();
  const guint32 sp[3] = { 1, 2, 2 };

  g_assert_true (elk_chip_type_can_trace (G_OBJECT_TYPE (chip)));
  set_plan (p, 0, 3, 3, sp, NULL);
  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  m = elk_test_run_program (chip, p, trace, &error);
  g_assert_no_error (error);
  /* Compute, exchange and HBM spans on the chip, tile spans, counters. */
  g_assert_cmpuint (elk_trace_get_n_events (trace), >=, 10);
}

static void
test_spec (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkChip) chip = ELK_CHIP (make (ELK_TYPE_CHIP, "ipu-pod", NULL));
  g_autoptr(ElkChipSpec) spec = elk_chip_dup_spec (chip, &error);

  g_assert_no_error (error);
  g_assert_cmpuint (spec->n_chips, ==, 4);
  g_assert_cmpuint (spec->cores, ==, 5888);
  g_assert_cmpuint (spec->sram_per_core, ==, 624 * 1024);
  g_assert_cmpuint (spec->sram_reserved, ==, 8 * 1024);
  g_assert_cmpfloat_with_epsilon (spec->hbm_bw, 16000 * 1048576e3, 1);

  g_object_set (chip, "hbm-channels", 6, NULL);
  g_clear_pointer (&spec, elk_chip_spec_free);
  spec = elk_chip_dup_spec (chip, &error);
  g_assert_null (spec);
  g_assert_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG);
}

/* Llama2-13B decode (batch 32, KV 2048) on the default IPU-POD4, scheduled
 * by elk with the reservation allocator: the emulation speed. */
static void
bench_llama (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GObject) fe = NULL;
  g_autoptr(ElkChip) chip = NULL;
  g_autoptr(GObject) sched = NULL, alloc = NULL;
  g_autoptr (ElkGraph) graph = NULL;
  g_autoptr(ElkPlanSet) plans = NULL;
  g_autoptr(ElkProgram) program = NULL;
  g_autoptr(ElkMetrics) m = NULL;
  g_autoptr(GTimer) timer = NULL;
  const ElkChipSpec *spec;
  double wall, cycles = 0;
  guint64 events = 0;

  if (elk_registry_lookup (registry, ELK_TYPE_FRONTEND, "llama") == NULL
      || elk_registry_lookup (registry, ELK_TYPE_SCHEDULER, "elk") == NULL)
    {
      g_test_skip ("needs the llama frontend and the elk scheduler");
      return;
    }
  fe = make (ELK_TYPE_FRONTEND, "llama", "preset", "llama2-13b-paper",
             "batch", 32, "seq", 2048, NULL);
  {
    /* The phase is an enum of the frontend's; set it by nick. */
    GParamSpec *ps = g_object_class_find_property (G_OBJECT_GET_CLASS (fe),
                                                   "phase");
    GEnumClass *ec = g_type_class_ref (ps->value_type);
    GEnumValue *ev = g_enum_get_value_by_nick (ec, "decode");

    g_assert_nonnull (ev);
    g_object_set (fe, "phase", ev->value, NULL);
    g_type_class_unref (ec);
  }
  chip = ELK_CHIP (make (ELK_TYPE_CHIP, "ipu-pod", NULL));
  sched = make (ELK_TYPE_SCHEDULER, "elk", NULL);
  alloc = make (ELK_TYPE_ALLOCATOR, "reservation", NULL);
  graph = elk_frontend_load (ELK_FRONTEND (fe), &error);
  g_assert_no_error (error);
  program = elk_test_compile (chip, graph, sched, alloc, &plans);
  spec = elk_plan_set_get_spec (plans);

  timer = g_timer_new ();
  m = elk_chip_run (chip, program, plans, &error);
  wall = g_timer_elapsed (timer, NULL);
  g_assert_no_error (error);
  g_object_get (chip, "last-latency-cycles", &cycles, "last-events", &events,
                NULL);
  g_print ("# ipu-pod: Llama2-13B decode b32 s2048, %u operators: latency "
           "%.4f ms = %.0f cycles emulated in %.3f s (%" G_GUINT64_FORMAT
           " events): %.3g emulated cycles/s, %.3g tile-cycles/s\n",
           elk_graph_get_n_ops (graph), m->latency_s * 1e3, cycles, wall,
           events, cycles / wall, cycles * spec->cores / wall);
  g_assert_cmpfloat (wall, <, 60);
}

/* 2 chips x 2 tiles; each tile's ports 1e9 B/s, the IPU-Links 0.5e9 B/s
 * together, every effect on. */
static const IpuMachine machine = { .chips = 2,
                                    .tiles_per_chip = 2,
                                    .tiles = 4,
                                    .link_Bps = 1e9,
                                    .xchg_Bps = 1e9,
                                    .inter_chip_Bps = 0.5e9,
                                    .clock_hz = 1e9,
                                    .effects = IPU_FX_ALL };

/* A = relu(w), B = relu(A): a is 4 x 4 f16 (32 B), "mn->mn". */
static ElkGraph *
two_ops (void)
{
  g_autoptr (GError) error = NULL;
  ElkGraph *g = elk_graph_new ("relayout");
  const guint64 shape[2] = { 4, 4 };
  guint32 ts[2];

  ts[0] = (guint32) add_tensor (g, "w", ELK_TENSOR_ORIGIN_WEIGHT, 2, shape);
  ts[1] = (guint32) add_tensor (g, "a", ELK_TENSOR_ORIGIN_ACTIVATION, 2, shape);
  elk_graph_add_op (g, "A", "relu", ELK_OP_UNARY, -1, "mn->mn", ts, 2, NULL,
                    &error);
  ts[0] = ts[1];
  ts[1] = (guint32) add_tensor (g, "b", ELK_TENSOR_ORIGIN_ACTIVATION, 2, shape);
  elk_graph_add_op (g, "B", "relu", ELK_OP_UNARY, -1, "mn->mn", ts, 2, NULL,
                    &error);
  g_assert_no_error (error);
  return g;
}

static ElkPlan
layout_plan (guint32 m_parts, guint32 n_parts)
{
  ElkPlan p = { 0 };

  p.n_dims = 2;
  p.n_operands = 2;
  p.spatial[0] = m_parts;
  p.spatial[1] = n_parts;
  for (guint d = 0; d < 2; d++)
    for (guint v = 0; v < 2; v++)
      p.temporal[d][v] = 1;
  p.cores_used = m_parts * n_parts;
  return p;
}

/* B's plan (2 x 2 blocks) reading a, written under @pp. */
static void
gather (const IpuMachine *m,
        ElkGraph *g,
        const ElkPlan *pp,
        ElkRelayoutPrice *pr)
{
  ElkPlan blocks = layout_plan (2, 2);
  IpuGather e
      = { elk_graph_get_op (g, 0), elk_graph_get_op (g, 1), pp, &blocks, 1 };

  elk__ipu_pod_price_gather (m, g, &e, pr);
}

/* B's plan cuts a into 2 x 2 blocks, tile = 2 * row block + column block,
 * so each tile receives a 2 x 2 block: rx = 4 elements x 2 B = 8 B. */
static void
test_relayout_hand_worked (void)
{
  g_autoptr (ElkGraph) g = two_ops ();
  ElkPlan cols = layout_plan (1, 4), rows = layout_plan (4, 1),
          one = layout_plan (1, 1);
  IpuMachine m = machine;
  ElkRelayoutPrice pr;

  /* A cuts a into columns: column c on tile c, so on chip c / 2.  B's
   * tile for (r, c) sits on chip r / 2: the 4 elements of rows 0-1 x
   * columns 2-3 and the 4 of rows 2-3 x columns 0-1 change chips, 8 of
   * 16, 16 B.  Four senders for four receivers: tx = 8 B.  Time =
   * max(8 B / 1e9, 16 B / 0.5e9) = 32 ns, the IPU-Links'. */
  gather (&m, g, &cols, &pr);
  g_assert_cmpfloat_with_epsilon (pr.rx_bytes, 8, 1e-12);
  g_assert_cmpfloat_with_epsilon (pr.tx_bytes, 8, 1e-12);
  g_assert_cmpfloat_with_epsilon (pr.xchip_bytes, 16, 1e-12);
  g_assert_cmpfloat_with_epsilon (pr.time_s, 32e-9, 1e-18);

  /* A cuts a into rows: row r on tile r, chip r / 2, the chip B needs it
   * on: nothing crosses, 8 ns at the ports. */
  gather (&m, g, &rows, &pr);
  g_assert_cmpfloat_with_epsilon (pr.xchip_bytes, 0, 1e-12);
  g_assert_cmpfloat_with_epsilon (pr.time_s, 8e-9, 1e-18);

  /* A on tile 0 alone: it sends all four 8 B pieces (32 B, 32 ns), and
   * rows 2-3 (16 B) cross to chip 1 (32 ns). */
  gather (&m, g, &one, &pr);
  g_assert_cmpfloat_with_epsilon (pr.tx_bytes, 32, 1e-12);
  g_assert_cmpfloat_with_epsilon (pr.xchip_bytes, 16, 1e-12);
  g_assert_cmpfloat_with_epsilon (pr.time_s, 32e-9, 1e-18);

  /* The producer not chosen yet: only B's own 8 B piece. */
  gather (&m, g, NULL, &pr);
  g_assert_cmpfloat_with_epsilon (pr.tx_bytes, 8, 1e-12);
  g_assert_cmpfloat_with_epsilon (pr.xchip_bytes, 0, 1e-12);
  g_assert_cmpfloat_with_epsilon (pr.time_s, 8e-9, 1e-18);

  /* The emulated gather off: the activation is where it is needed. */
  m.effects &= ~IPU_FX_GATHER;
  gather (&m, g, &cols, &pr);
  g_assert_cmpfloat (pr.time_s, ==, 0);
  /* The IPU-Links off: only the ports count. */
  m.effects = IPU_FX_ALL & ~IPU_FX_IPU_LINKS;
  gather (&m, g, &cols, &pr);
  g_assert_cmpfloat_with_epsilon (pr.time_s, 8e-9, 1e-18);
}

/* The model the chip hands the runner prices re-layout and nothing else
 * differently from the analytic model, and checks its arguments. */
static void
test_relayout_chip_model (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = two_ops ();
  g_autoptr (ElkChip) chip = NULL;
  g_autoptr (ElkChipSpec) spec = NULL;
  g_autoptr (ElkPlanSet) plans = NULL;
  g_autoptr (ElkCostModel) model = NULL;
  ElkPlanOptions options = { 0 };
  ElkRelayoutQuery q = { .producer = 0, .consumer = 1, .operand = 1 };
  ElkRelayoutPrice pr;
  ElkOpPrice a, b;

  chip = ELK_CHIP (
      make (ELK_TYPE_CHIP, "ipu-pod", "chips", 2, "cores", 4, NULL));
  spec = elk_chip_dup_spec (chip, &error);
  g_assert_no_error (error);
  plans = elk_plan_set_new (g, spec, &options, &error);
  g_assert_no_error (error);
  model = elk_chip_dup_cost_model (chip, plans, &error);
  g_assert_no_error (error);
  g_assert_false (elk_cost_model_is_analytic (model));
  g_assert_true (elk_cost_model_price_relayout (model, plans, &q, &pr, &error));
  g_assert_no_error (error);
  g_assert_cmpfloat (pr.time_s, >, 0);
  g_assert_cmpfloat (pr.rx_bytes, >, 0);
  /* Operators priced as the analytic model prices them. */
  g_assert_true (elk_cost_model_price_op (model, plans, 1, 0, &a, &error));
  elk_plan_set_get_op_price (plans, 1, 0, &b);
  g_assert_cmpfloat (a.exec_s, ==, b.exec_s);
  g_assert_cmpfloat (a.warmup_s, ==, b.warmup_s);
  /* Operand 1 of A is the weight, not B's output. */
  q = (ElkRelayoutQuery){ .producer = 1, .consumer = 0, .operand = 1 };
  g_assert_false (
      elk_cost_model_price_relayout (model, plans, &q, &pr, &error));
  g_assert_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED);
  g_assert_nonnull (strstr (error->message, "is not the output"));
}

int
main (int argc, char *argv[])
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  g_test_add_func ("/ipu-pod/spec", test_spec);
  g_test_add_func ("/ipu-pod/single-op", test_single_op);
  g_test_add_func ("/ipu-pod/contention", test_contention);
  g_test_add_func ("/ipu-pod/rule-r1", test_rule_r1);
  g_test_add_func ("/ipu-pod/matmul-reduce", test_matmul_reduce);
  g_test_add_func ("/ipu-pod/matmul-rotation", test_matmul_rotation);
  g_test_add_func ("/ipu-pod/fused-norm-prologue", test_fused_norm_prologue);
  g_test_add_func ("/ipu-pod/fused-layer-prologue", test_fused_layer_prologue);
  g_test_add_func ("/ipu-pod/fused-softmax-prologue",
                   test_fused_softmax_prologue);
  g_test_add_func ("/ipu-pod/reduce-lowering", test_reduce_lowering);
  g_test_add_func ("/ipu-pod/tile-mapping", test_tile_mapping);
  g_test_add_func ("/ipu-pod/assume-free-distribution",
                   test_assume_free_distribution);
  g_test_add_func ("/ipu-pod/assume-private-network",
                   test_assume_private_network);
  g_test_add_func ("/ipu-pod/overflow", test_overflow);
  g_test_add_func ("/ipu-pod/bad-plan", test_bad_plan);
  g_test_add_func ("/ipu-pod/trace", test_trace);
  g_test_add_func ("/ipu-pod/relayout-hand-worked", test_relayout_hand_worked);
  g_test_add_func ("/ipu-pod/relayout-chip-model", test_relayout_chip_model);
  if (g_test_perf ())
    g_test_add_func ("/ipu-pod/bench/llama2-13b", bench_llama);
  ret = g_test_run ();
  g_object_unref (registry);
  return ret;
}
