/* elk-plan-search.c: enumeration of the T10 compute-shift plan space of one
 * operator and the cost of one plan.
 *
 * The search is two nested depth-first walks (reference/t10-plan-space.md
 * §2.3).  The outer one visits spatial vectors, the number of parts per
 * loop dimension, in dimension order; a branch dies as soon as the cores
 * used exceed the chip or the padding already lost drops below the padding
 * floor, and each level starts at the smallest part count from which the
 * utilisation floor is still reachable.  For every spatial vector the inner
 * walk visits temporal matrices one loop dimension (one column) at a time,
 * from per-dimension candidate lists that are built once per spatial
 * vector and kept in dimension order.  A branch dies when some operand's
 * running product of rotation factors stops dividing its replica count.
 *
 * The candidate lists carry everything the cost of a plan needs from their
 * column (per-step extent, per-operand piece lengths, the gcd rounds of the
 * shift schedule), so the cost of one plan is a few dozen multiplications
 * on stack memory.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include <elk/elk-fuse.h>

#include "elk-plan-private.h"

/* T10's floors (t10-plan-space.md §2.3): 90 % of the cores and of useful
 * work for large operators, relaxed for small ones through the two size
 * ratios below; gather uses a fixed, stricter padding floor. */
#define T10_FLOOR 0.9
#define T10_SMALL_OP_SCALE 220.0
#define T10_GATHER_FLOOR 0.951

static guint64
ceil_div (guint64 a, guint64 b)
{
  return (a + b - 1) / b;
}

static guint32
gcd32 (guint32 a, guint32 b)
{
  while (b != 0)
    {
      guint32 t = a % b;
      a = b;
      b = t;
    }
  return a;
}

PlanSearch *
elk__plan_search_new (const ElkGraph *graph,
                      const ElkOp *op,
                      const ElkChipSpec *spec,
                      const ElkPlanOptions *options)
{
  PlanSearch *s = g_new0 (PlanSearch, 1);
  double work = 1.0, max_extent = 0.0, base_u, base_p, small;

  s->op = op;
  s->kind = op->kind;
  s->n_dims = op->n_dims;
  s->n_operands = op->n_operands;
  for (guint d = 0; d < op->n_dims; d++)
    {
      s->extents[d] = op->extents[d];
      work *= (double) op->extents[d];
      max_extent = MAX (max_extent, (double) op->extents[d]);
    }

  for (guint v = 0; v < op->n_operands; v++)
    {
      const ElkTensor *t = elk_graph_get_tensor (graph, op->tensors[v]);
      const ElkAccess *a = &op->access[v];

      s->n_axes[v] = a->n_axes;
      for (guint x = 0; x < a->n_axes; x++)
        {
          s->axis_dims[v][x][0] = a->dims[x][0];
          s->axis_dims[v][x][1] = a->dims[x][1];
          s->dim_mask[v] |= 1u << a->dims[x][0];
          if (a->dims[x][1] >= 0)
            s->dim_mask[v] |= 1u << a->dims[x][1];
        }
      s->elem_bytes[v] = t->n_elements > 0
                           ? (double) t->bytes / (double) t->n_elements
                           : 0.0;
      s->elem_bytes_int[v] = t->n_elements > 0
                                 && t->bytes % t->n_elements == 0
                               ? t->bytes / t->n_elements
                               : 0;
      /* The T10 "ignored" rule: the output and the activations produced on
       * chip are not part of the preload state. */
      s->cold_operand[v] = v > 0
                           && t->origin != ELK_TENSOR_ORIGIN_ACTIVATION;
    }

  for (guint d = 0; d < op->n_dims; d++)
    {
      guint8 bit = (guint8) (1u << d);
      gboolean in_out = (s->dim_mask[0] & bit) != 0;
      gboolean in_a = s->n_operands > 1 && (s->dim_mask[1] & bit) != 0;
      gboolean in_b = s->n_operands > 2 && (s->dim_mask[2] & bit) != 0;

      if (!in_out)
        s->dim_class[d] = ELK_PLAN_DIM_K;
      else if (in_a && in_b)
        s->dim_class[d] = ELK_PLAN_DIM_B;
      else if (in_b)
        s->dim_class[d] = ELK_PLAN_DIM_N;
      else
        s->dim_class[d] = ELK_PLAN_DIM_M;
    }

  s->spec = spec;
  s->cc = &spec->cost;
  s->cores = spec->cores;
  s->cores_per_chip = spec->cores / MAX (spec->n_chips, 1u);
  s->usable = elk_chip_spec_get_usable_sram (spec);
  s->mesh = spec->topology == ELK_TOPOLOGY_MESH
            || spec->topology == ELK_TOPOLOGY_TORUS;
  s->mesh_long = MAX (spec->mesh_rows, spec->mesh_cols);
  s->mesh_short = MIN (spec->mesh_rows, spec->mesh_cols);

  /* The artifact scales the AMP formula by the element size: an FP32
   * block takes twice the cycles and covers half the k extent.  Smaller
   * float types run at the FP16 rate (MK2 has no faster AMP mode).  An
   * integer product runs at the chip's int8 rate whatever its operands'
   * width (a zero-point-shifted int32 operand holds 9-bit values). */
  s->fused_layer = op->kind == ELK_OP_MATMUL && op->n_operands == 5
                   && g_strcmp0 (op->type, ELK_FUSE_LAYERNORM_MATMUL) == 0;
  s->fused_softmax = op->kind == ELK_OP_MATMUL && op->n_operands == 4
                     && g_strcmp0 (op->type, ELK_FUSE_SOFTMAX_MATMUL) == 0;
  s->fused_norm = s->fused_layer || s->fused_softmax
                  || (op->kind == ELK_OP_MATMUL && op->n_operands == 4
                      && g_strcmp0 (op->type, ELK_FUSE_RMSNORM_MATMUL) == 0);
  s->mm_inner = spec->cost.matmul_inner;
  s->mm_block_k = spec->cost.block_k;
  if ((op->kind == ELK_OP_MATMUL || op->kind == ELK_OP_CONV)
      && elk_op_has_integer_inputs (graph, op))
    {
      const ElkCostCoeffs *c = &spec->cost;
      double fp_macs
          = (double) c->block_m * c->block_k * c->block_n / c->matmul_inner;
      s->mm_inner *= fp_macs / c->int8_macs_per_cycle;
    }
  else if (s->n_operands > 1 && s->elem_bytes[1] >= 4.0)
    {
      s->mm_inner *= 2.0;
      s->mm_block_k = MAX (spec->cost.block_k / 2, 1.0);
    }

  small = (double) op->n_dims * max_extent / T10_SMALL_OP_SCALE;
  base_u = MIN (work / (work + 2.0 * spec->cores), small);
  base_p = MIN (work / (work + (double) spec->cores), small);
  if (op->kind == ELK_OP_GATHER)
    {
      s->util_floor = T10_GATHER_FLOOR * base_u;
      s->pad_floor = T10_GATHER_FLOOR;
    }
  else
    {
      s->util_floor = T10_FLOOR * base_u;
      s->pad_floor = T10_FLOOR * base_p;
    }
  if (options != NULL && options->utilisation_floor > 0)
    s->util_floor = options->utilisation_floor;
  if (options != NULL && options->padding_floor > 0)
    s->pad_floor = options->padding_floor;

  s->cands_alloc = 256;
  s->cands = g_new (PlanDimCand, s->cands_alloc);
  return s;
}

void
elk__plan_search_free (PlanSearch *s)
{
  if (s == NULL)
    return;
  g_free (s->cands);
  g_free (s);
}

void
elk__plan_search_set_spatial (PlanSearch *s, const guint32 *spatial)
{
  guint64 used = 1;

  for (guint d = 0; d < s->n_dims; d++)
    {
      s->spatial[d] = spatial[d];
      s->sl[d] = ceil_div (s->extents[d], spatial[d]);
      used *= spatial[d];
    }
  s->cores_used = (guint32) used;

  /* An operand not indexing loop dimension d is needed whole by each of
   * the spatial[d] sub-operators along d.  Window axes count as indexing
   * both of their loop dimensions (the halo is ignored). */
  for (guint v = 0; v < s->n_operands; v++)
    {
      guint64 r = 1;
      for (guint d = 0; d < s->n_dims; d++)
        if ((s->dim_mask[v] & (1u << d)) == 0)
          r *= spatial[d];
      s->replicas[v] = (guint32) r;
    }
}

static void
list_divisors (guint32 n, guint32 *out, guint *n_out)
{
  guint lo = 0, hi = 0;
  guint32 high[ELK_PLAN_MAX_DIVISORS];

  for (guint32 i = 1; (guint64) i * i <= n; i++)
    if (n % i == 0)
      {
        out[lo++] = i;
        if (i != n / i)
          high[hi++] = n / i;
      }
  while (hi > 0)
    out[lo++] = high[--hi];
  *n_out = lo;
}

/* Completes a candidate column whose factors are set: the per-step extent,
 * the piece lengths, and the shift rounds of t10-plan-space.md §2.3: take
 * the gcd g of the factors still above 1, which gives a round of g - 1
 * shifts of exactly those operands, divide them by g, repeat.  Returns
 * FALSE if the column breaks a rule that does not depend on the other
 * columns. */
static gboolean
finish_cand_full (const PlanSearch *s,
                  guint d,
                  PlanDimCand *c,
                  gboolean floors,
                  gboolean extent)
{
  guint32 left[ELK_MAX_OPERANDS];
  guint64 sl = s->sl[d];

  c->max = 1;
  c->rot_mask = 0;
  for (guint v = 0; v < s->n_operands; v++)
    {
      c->max = MAX (c->max, c->t[v]);
      if (c->t[v] > 1)
        c->rot_mask |= (guint8) (1u << v);
      c->len[v] = ceil_div (sl, c->t[v]);
      left[v] = c->t[v];
    }
  for (guint v = s->n_operands; v < ELK_MAX_OPERANDS; v++)
    {
      c->t[v] = 1;
      c->len[v] = 1;
    }
  if (extent && c->max > sl)
    return FALSE;
  if (extent && s->mesh && c->max > s->mesh_long)
    return FALSE;
  c->step = ceil_div (sl, c->max);
  c->pad = (double) sl / ((double) c->max * (double) c->step);
  if (floors && c->pad < s->pad_floor)
    return FALSE;

  c->n_rounds = 0;
  for (;;)
    {
      guint32 g = 0;
      guint8 mask = 0;

      for (guint v = 0; v < s->n_operands; v++)
        if (left[v] > 1)
          {
            g = gcd32 (g, left[v]);
            mask |= (guint8) (1u << v);
          }
      if (mask == 0)
        break;
      /* A divisibility chain always has a gcd above 1; anything else is
       * not a valid column. */
      if (g <= 1 || c->n_rounds >= ELK_PLAN_MAX_ROUNDS)
        return FALSE;
      c->round_mask[c->n_rounds] = mask;
      c->round_shifts[c->n_rounds] = g - 1;
      c->n_rounds++;
      for (guint v = 0; v < s->n_operands; v++)
        if (left[v] > 1)
          left[v] /= g;
    }
  return TRUE;
}

static gboolean
finish_cand (const PlanSearch *s, guint d, PlanDimCand *c, gboolean floors)
{
  return finish_cand_full (s, d, c, floors, TRUE);
}

static void
push_cand (PlanSearch *s, const PlanDimCand *c)
{
  if (s->n_cands == s->cands_alloc)
    {
      s->cands_alloc *= 2;
      s->cands = g_renew (PlanDimCand, s->cands, s->cands_alloc);
    }
  s->cands[s->n_cands++] = *c;
}

/* Chooses the factor of operand v along dimension d, in operand order,
 * keeping the factors above 1 pairwise comparable under divisibility (a
 * divisibility chain). */
static void
gen_cands (PlanSearch *s,
           guint d,
           guint v,
           PlanDimCand *c,
           const ElkPlan *multiple_of)
{
  guint32 need;

  if (v == s->n_operands)
    {
      PlanDimCand done = *c;
      if (finish_cand (s, d, &done, TRUE))
        push_cand (s, &done);
      return;
    }

  need = multiple_of != NULL ? multiple_of->temporal[d][v] : 1;
  if ((s->dim_mask[v] & (1u << d)) == 0)
    {
      /* Only operands that index a dimension rotate along it. */
      if (need != 1)
        return;
      c->t[v] = 1;
      gen_cands (s, d, v + 1, c, multiple_of);
      return;
    }

  for (guint i = 0; i < s->n_divisors[v]; i++)
    {
      guint32 t = s->divisors[v][i];
      gboolean ok = TRUE;

      if (t > s->sl[d])
        break;
      if (t % need != 0)
        continue;
      if (t > 1)
        for (guint u = 0; u < v && ok; u++)
          if (c->t[u] > 1 && t % c->t[u] != 0 && c->t[u] % t != 0)
            ok = FALSE;
      if (!ok)
        continue;
      c->t[v] = t;
      gen_cands (s, d, v + 1, c, multiple_of);
    }
}

/* Python's order on lists of tuples: element-wise, a prefix first. */
static gint
compare_cand_lists (const PlanSearch *s, guint a, guint b)
{
  guint na = s->cand_start[a + 1] - s->cand_start[a];
  guint nb = s->cand_start[b + 1] - s->cand_start[b];

  for (guint i = 0; i < MIN (na, nb); i++)
    {
      const PlanDimCand *x = &s->cands[s->cand_start[a] + i];
      const PlanDimCand *y = &s->cands[s->cand_start[b] + i];
      for (guint v = 0; v < s->n_operands; v++)
        if (x->t[v] != y->t[v])
          return x->t[v] < y->t[v] ? -1 : 1;
    }
  return na < nb ? -1 : na > nb;
}

/* The artifact sorts its list of per-dimension candidate lists before
 * building the temporal tree (t10-plan-space.md §2.3), so level i of the
 * tree gets the i-th smallest list and its columns are then read as the
 * factors of dimension i.  Reproduced for validation only: the columns are
 * re-finished for the dimension they land on, without the extent and
 * padding checks, which the artifact applied at the original dimension. */
static void
artifact_reorder (PlanSearch *s)
{
  guint order[ELK_MAX_DIMS];
  PlanDimCand *moved = g_new (PlanDimCand, MAX (s->n_cands, 1u));
  guint start[ELK_MAX_DIMS + 1];
  guint n = 0;

  for (guint d = 0; d < s->n_dims; d++)
    {
      /* Stable insertion sort, as Python's sort is stable. */
      guint j = d;
      while (j > 0 && compare_cand_lists (s, order[j - 1], d) > 0)
        {
          order[j] = order[j - 1];
          j--;
        }
      order[j] = d;
    }
  for (guint i = 0; i < s->n_dims; i++)
    {
      start[i] = n;
      for (guint k = s->cand_start[order[i]]; k < s->cand_start[order[i] + 1];
           k++)
        {
          moved[n] = s->cands[k];
          finish_cand_full (s, i, &moved[n], FALSE, FALSE);
          n++;
        }
    }
  start[s->n_dims] = n;
  memcpy (s->cands, moved, n * sizeof (PlanDimCand));
  memcpy (s->cand_start, start, sizeof (start));
  g_free (moved);
}

/**
 * elk__plan_search_build_cands:
 * @multiple_of: (nullable): if set, keep only columns whose factors are
 *   multiples of this plan's (the cold plans of a hot plan).
 *
 * Builds the per-dimension candidate columns of the current spatial
 * vector, in dimension order.
 */
void
elk__plan_search_build_cands (PlanSearch *s, const ElkPlan *multiple_of)
{
  for (guint v = 0; v < s->n_operands; v++)
    list_divisors (s->replicas[v], s->divisors[v], &s->n_divisors[v]);
  /* A fused RMSNorm-MatMul's gain (operand 3, a vector along k) never
   * rotates: each core keeps its whole k piece, k / spatial[k] elements.
   * Rotating it would put a third operand into the k round of x and W,
   * whose Cannon skew cannot always place it (the emulator's functional
   * mode refuses such rings), for no gain worth having.  A fused
   * softmax's row maximum (operand 3, a vector along x's rows) stays for
   * the same reason: each core keeps the maxima of all its rows. */
  if (s->fused_norm)
    s->n_divisors[3] = 1;
  /* Nor does a fused LayerNorm's bias (operand 4), for the same reason. */
  if (s->fused_layer)
    s->n_divisors[4] = 1;

  s->n_cands = 0;
  for (guint d = 0; d < s->n_dims; d++)
    {
      PlanDimCand c;

      memset (&c, 0, sizeof (c));
      s->cand_start[d] = s->n_cands;
      gen_cands (s, d, 0, &c, multiple_of);
    }
  s->cand_start[s->n_dims] = s->n_cands;
  if (s->artifact_order)
    artifact_reorder (s);
}

static void
temporal_dfs (PlanSearch *s,
              guint d,
              const PlanDimCand **chosen,
              const guint32 *prod,
              double pad,
              guint rot_dims,
              guint32 first_rot_max)
{
  if (d == s->n_dims)
    {
      s->n_leaves++;
      s->leaf (s, chosen, s->leaf_data);
      return;
    }

  for (guint i = s->cand_start[d]; i < s->cand_start[d + 1]; i++)
    {
      const PlanDimCand *c = &s->cands[i];
      guint32 next[ELK_MAX_OPERANDS];
      double next_pad = pad * c->pad;
      gboolean ok = TRUE;
      guint next_rot = rot_dims;
      guint32 next_first = first_rot_max;

      /* The per-step padding of all dimensions together must stay above
       * the floor; every factor of the product is at most 1. */
      if (next_pad < s->pad_floor)
        continue;

      for (guint v = 0; v < s->n_operands; v++)
        {
          next[v] = prod[v] * c->t[v];
          if (s->replicas[v] % next[v] != 0)
            {
              ok = FALSE;
              break;
            }
        }
      if (!ok)
        continue;

      if (s->mesh && c->max > 1)
        {
          /* A 2-D mesh maps each rotating dimension to one mesh side: at
           * most two of them, the smaller factor on the shorter side. */
          next_rot++;
          if (next_rot > 2)
            continue;
          if (next_rot == 2 && MIN (first_rot_max, c->max) > s->mesh_short)
            continue;
          if (next_rot == 1)
            next_first = c->max;
        }

      chosen[d] = c;
      temporal_dfs (s, d + 1, chosen, next, next_pad, next_rot, next_first);
    }
}

/**
 * elk__plan_search_temporal:
 *
 * Calls s->leaf for every temporal matrix of the current spatial vector
 * built from the current candidate columns.
 */
void
elk__plan_search_temporal (PlanSearch *s)
{
  /* The search fills every slot before it reads one; the initialisers
   * only keep optimised builds' maybe-uninitialized warning quiet. */
  const PlanDimCand *chosen[ELK_MAX_DIMS] = { NULL };
  guint32 prod[ELK_MAX_OPERANDS];

  /* One per operand slot, whatever ELK_MAX_OPERANDS is (a fixed
   * initialiser left the fifth slot 0 when it grew to 5). */
  for (guint v = 0; v < ELK_MAX_OPERANDS; v++)
    prod[v] = 1;

  temporal_dfs (s, 0, chosen, prod, 1.0, 0, 0);
}

static void
spatial_dfs (PlanSearch *s,
             guint d,
             guint64 used,
             double pad,
             const double *rem_max,
             guint32 *parts)
{
  guint64 hi, lo;
  double lo_f;

  if (d == s->n_dims)
    {
      if ((double) used / (double) s->cores < s->util_floor)
        return;
      s->n_spatial++;
      elk__plan_search_set_spatial (s, parts);
      elk__plan_search_build_cands (s, NULL);
      elk__plan_search_temporal (s);
      return;
    }

  hi = MIN (s->extents[d], s->cores / used);
  /* The smallest count from which the utilisation floor is reachable with
   * the remaining dimensions at their largest (floored, so the exact test
   * at the leaf decides borderline cases). */
  lo_f = floor (s->util_floor * s->cores / (double) used / rem_max[d + 1]);
  lo = lo_f < 1.0 ? 1 : (guint64) lo_f;
  lo = MIN (lo, MAX (hi, 1));

  for (guint64 p = lo; p <= hi; p++)
    {
      guint64 len = ceil_div (s->extents[d], p);
      double next_pad = pad * ((double) s->extents[d]
                               / ((double) p * (double) len));

      if (next_pad < s->pad_floor)
        continue;
      parts[d] = (guint32) p;
      spatial_dfs (s, d + 1, used * p, next_pad, rem_max, parts);
    }
}

/**
 * elk__plan_search_spatial:
 *
 * Walks every spatial vector that satisfies the floors and calls s->leaf
 * for each of its temporal matrices.
 */
void
elk__plan_search_spatial (PlanSearch *s)
{
  double rem_max[ELK_MAX_DIMS + 1];
  guint32 parts[ELK_MAX_DIMS] = { 0 }; /* as in elk__plan_search_temporal */

  rem_max[s->n_dims] = 1.0;
  for (gint d = (gint) s->n_dims - 1; d >= 0; d--)
    rem_max[d] = rem_max[d + 1]
                 * (double) MIN (s->extents[d], (guint64) s->cores);
  spatial_dfs (s, 0, 1, 1.0, rem_max, parts);
}

/* ---- The cost model (t10-plan-space.md §2.4), in cycles. ---- */

static double
ew_cycles (const ElkCostCoeffs *cc, double n)
{
  if (n <= cc->ew_small_cap_n)
    return MIN (cc->ew_small_cap, cc->ew_small_slope * n + cc->ew_small_fixed);
  return cc->ew_slope * n + cc->ew_fixed;
}

/* The reduce kernel works on outputs rounded up to its vector widths. */
static double
align_reduce_output (double x, double align)
{
  static const double ladder[] = { 4, 8, 12, 16, 24 };

  if (x <= 2)
    return x;
  for (guint i = 0; i < G_N_ELEMENTS (ladder); i++)
    {
      if (x <= ladder[i])
        return ladder[i];
    }
  return ceil (x / align) * align;
}

static double
reduce_cycles (const ElkCostCoeffs *cc, double out, double batch)
{
  double x = align_reduce_output (out, cc->reduce_align) * batch;

  if (x <= cc->reduce_small_n)
    return MIN (cc->reduce_slope * (cc->reduce_small_n + 1) + cc->reduce_fixed,
                cc->reduce_small_slope * x + cc->reduce_fixed);
  return cc->reduce_slope * x + cc->reduce_fixed;
}

/* The AMP formula: blocks of block_m x block_k x block_n, plus per-call
 * overheads per (k, n) block, per n block and per call.  As in the
 * artifact the larger of m and n plays m, unless both are at most one
 * n block. */
static double
matmul_cycles (const PlanSearch *s,
               guint64 b,
               guint64 m,
               guint64 k,
               guint64 n)
{
  const ElkCostCoeffs *cc = s->cc;
  double bm, bk, bn;

  if (n > m)
    {
      guint64 t = m;
      m = n;
      n = t;
    }
  if (m <= cc->block_n)
    {
      guint64 t = m;
      m = n;
      n = t;
    }
  bm = (double) ceil_div (m, cc->block_m);
  bk = ceil ((double) k / s->mm_block_k);
  bn = (double) ceil_div (n, cc->block_n);
  return (double) b
         * (s->mm_inner * bm * bk * bn + cc->matmul_kn * bk * bn
            + cc->matmul_n * bn + cc->matmul_fixed);
}

static double
compute_cycles (const PlanSearch *s, const PlanDimCand *const *chosen)
{
  const ElkCostCoeffs *cc = s->cc;
  guint64 cls[4] = { 1, 1, 1, 1 };
  double total = 1, out = 1, last = 1;

  for (guint d = 0; d < s->n_dims; d++)
    {
      guint64 st = chosen[d]->step;
      total *= (double) st;
      if (s->dim_mask[0] & (1u << d))
        out *= (double) st;
      if (s->dim_mask[s->n_operands - 1] & (1u << d))
        last *= (double) st;
      cls[s->dim_class[d]] *= st;
    }

  switch (s->kind)
    {
    case ELK_OP_MATMUL:
    case ELK_OP_CONV:
      /* Conv is an implicit im2col MatMul: M = batch x output pixels,
       * K = input channels x kernel window, N = output channels.  A fused
       * LayerNorm sends two more rows, g and b, through each step's
       * MatMul: they give gᵀW and bᵀW over exactly the k the step's
       * output rows sum (norm_rows()). */
      return matmul_cycles (s, cls[ELK_PLAN_DIM_B],
                            cls[ELK_PLAN_DIM_M] + (s->fused_layer ? 2 : 0),
                            cls[ELK_PLAN_DIM_K], cls[ELK_PLAN_DIM_N]);
    case ELK_OP_ELEMENTWISE:
      return ew_cycles (cc, total);
    case ELK_OP_UNARY:
      return cc->unary_slope * total + cc->unary_fixed;
    case ELK_OP_REDUCE:
    case ELK_OP_POOL:
      /* Pooling reduces each output's window: a reduce over the window. */
      return reduce_cycles (cc, out, total / out);
    case ELK_OP_GATHER:
      return cc->gather_fixed + ceil (cc->gather_slope * out / last) * last
             + cc->gather_per_index * last;
    case ELK_OP_SLICE:
      return cc->slice_slope * out * s->elem_bytes[0] + cc->slice_fixed;
    case ELK_OP_N_KINDS:
    default:
      return 0;
    }
}

/* The prologue of a fused RMSNorm-MatMul on one x step piece: the
 * partial sum of squares over k per row and the gain.  The sum of squares
 * is one reduction with a square-add operation (as Poplar's popops
 * reductions offer), one pass over the piece with no squared copy, so it
 * is priced as a reduce of the piece; the unfused graph spells it as a
 * square operator and a sum operator.  A fused LayerNorm also needs the
 * plain sum of each row (its mean operator): a second reduction of the
 * piece.  A fused softmax's prologue is exp (x - mx) on the piece (one
 * element-wise pass, as the unfused sub-exp operator is priced) and the
 * partial row sums of the exponentials (one reduce of the piece, as its
 * sum operator): the same two terms.  norm_prologue_total() counts the
 * pieces. */
static double
norm_prologue_cycles (const PlanSearch *s, const PlanDimCand *const *chosen)
{
  const ElkCostCoeffs *cc = s->cc;
  double xe = 1, rows = 1;

  for (guint d = 0; d < s->n_dims; d++)
    {
      guint8 bit = (guint8) (1u << d);
      if (s->dim_mask[1] & bit)
        {
          xe *= (double) chosen[d]->step;
          if (s->dim_mask[0] & bit)
            rows *= (double) chosen[d]->step;
        }
    }
  return (s->fused_layer ? 2 : 1) * reduce_cycles (cc, rows, xe / rows)
         + ew_cycles (cc, xe);
}

/* A fused RMSNorm-MatMul's whole prologue on a core.  The core runs it
 * once on the x piece it holds at the start, step piece by step piece
 * (each of its own step pieces once, however often the steps revisit
 * it), writing x ⊙ g over its own copy and keeping each row's sum of
 * squares.  When x rotates, the piece travels already scaled together
 * with its rows' sums of squares (@held_rows values, which the caller
 * adds to the rotation's bytes; a LayerNorm's rows carry two sums, of x
 * and of x², so twice as many), so a core receiving a piece it has not
 * seen only adds those sums to its own: one element-wise add of the rows
 * per arriving piece.  Every step piece of x is thus squared and scaled
 * once on the whole ring, and each core's sums of squares still cover
 * exactly the k its output's partial sums cover. */
static double
norm_prologue_total (const PlanSearch *s,
                     const PlanDimCand *const *chosen,
                     double *held_rows)
{
  double own = 1, arriving = 1;

  *held_rows = 1;
  for (guint d = 0; d < s->n_dims; d++)
    {
      guint8 bit = (guint8) (1u << d);
      if (s->dim_mask[1] & bit)
        {
          own *= (double) (chosen[d]->max / chosen[d]->t[1]);
          arriving *= (double) chosen[d]->t[1];
          if (s->dim_mask[0] & bit)
            *held_rows *= (double) chosen[d]->len[1];
        }
    }
  if (s->fused_layer)
    *held_rows *= 2;
  return own * norm_prologue_cycles (s, chosen)
         + (arriving - 1) * ew_cycles (s->cc, *held_rows);
}

/* The rows (sums of squares) of a fused RMSNorm-MatMul's output piece. */
static double
norm_rows (const PlanSearch *s, const PlanDimCand *const *chosen)
{
  double rows = 1;

  for (guint d = 0; d < s->n_dims; d++)
    if (s->dim_mask[0] & s->dim_mask[1] & (1u << d))
      rows *= (double) chosen[d]->len[0];
  return rows;
}

/* The m step blocks of a fused LayerNorm-MatMul's output piece: each has
 * its own two extra rows, gᵀW and bᵀW (compute_cycles()). */
static double
norm_blocks (const PlanSearch *s, const PlanDimCand *const *chosen)
{
  double blocks = 1;

  for (guint d = 0; d < s->n_dims; d++)
    if (s->dim_mask[0] & s->dim_mask[1] & (1u << d))
      blocks *= ceil ((double) chosen[d]->len[0] / (double) chosen[d]->step);
  return blocks;
}

static guint64
piece_bytes (const PlanSearch *s, guint v, double elems)
{
  if (s->elem_bytes_int[v] != 0)
    return (guint64) elems * s->elem_bytes_int[v];
  return (guint64) ceil (elems * s->elem_bytes[v]);
}

/* The shift schedule: all gcd rounds of all dimensions, the round that
 * moves most bytes per shift outermost (it repeats least).  A round at
 * depth i runs once per iteration of the rounds outside it.  Sets the
 * shift bytes, events and cycles of @e (whose piece bytes are set). */
static void
shift_schedule (const PlanSearch *s,
                const PlanDimCand *const *chosen,
                double held_rows,
                PlanEval *e)
{
  const ElkCostCoeffs *cc = s->cc;
  struct
  {
    double bytes;
    guint32 shifts;
    guint32 count;
  } rounds[ELK_MAX_DIMS * ELK_PLAN_MAX_ROUNDS];
  guint n_rounds = 0;
  double prefix = 1, moved = 0;
  guint64 events = 0;

  for (guint d = 0; d < s->n_dims; d++)
    {
      const PlanDimCand *c = chosen[d];
      for (guint i = 0; i < c->n_rounds; i++)
        {
          double b = 0;
          guint32 count = 0;
          guint j;

          for (guint v = 0; v < s->n_operands; v++)
            if (c->round_mask[i] & (1u << v))
              {
                b += (double) e->bytes[v];
                count++;
              }
          /* A fused RMSNorm's x piece travels scaled, with the sums of
           * squares of its rows (norm_prologue_total). */
          if (c->round_mask[i] & 2u)
            b += held_rows * s->elem_bytes[1];
          /* Stable insertion, descending bytes: ties keep dimension
           * order, so the schedule is deterministic. */
          j = n_rounds;
          while (j > 0 && rounds[j - 1].bytes < b)
            {
              rounds[j] = rounds[j - 1];
              j--;
            }
          rounds[j].bytes = b;
          rounds[j].shifts = c->round_shifts[i];
          rounds[j].count = count;
          n_rounds++;
        }
    }
  for (guint i = 0; i < n_rounds; i++)
    {
      moved += prefix * rounds[i].shifts * rounds[i].bytes;
      events += (guint64) prefix * rounds[i].shifts * rounds[i].count;
      prefix *= rounds[i].shifts + 1;
    }
  e->shift_bytes = moved;
  e->shift_events = events;
  e->shift_cycles = cc->syncs_per_shift * cc->sync_cycles * (double) events
                    + cc->shift_cycles_per_byte * moved;
}

/**
 * elk__plan_search_eval:
 * @hot_limit: stop (returning %FALSE) once the hot footprint is known to
 *   exceed the usable SRAM; e->hot is set either way.
 *
 * The footprints and the time of the plan made of the columns @chosen.
 */
gboolean
elk__plan_search_eval (const PlanSearch *s,
                       const PlanDimCand *const *chosen,
                       PlanEval *e,
                       gboolean hot_limit)
{
  const ElkCostCoeffs *cc = s->cc;
  guint8 rot = 0;
  guint64 steps = 1;
  double shuffle, outb, sync = cc->sync_cycles;
  double held_rows = 0;
  guint32 r_out, t_out = 1;

  for (guint d = 0; d < s->n_dims; d++)
    {
      rot |= chosen[d]->rot_mask;
      steps *= chosen[d]->max;
    }
  e->rot_mask = rot;
  e->steps = (guint32) steps;

  /* Footprints: each operand's piece is its per-core extents cut by its
   * own factors; a window axis spans the sum of its two pieces minus one.
   * Rotating operands are double-buffered while executing. */
  e->hot = 0;
  e->cold = 0;
  for (guint v = 0; v < s->n_operands; v++)
    {
      guint64 elems = 1;
      for (guint x = 0; x < s->n_axes[v]; x++)
        {
          gint8 d0 = s->axis_dims[v][x][0], d1 = s->axis_dims[v][x][1];
          guint64 len = chosen[d0]->len[v];
          if (d1 >= 0)
            len += chosen[d1]->len[v] - 1;
          elems *= len;
        }
      e->bytes[v] = piece_bytes (s, v, (double) elems);
      e->hot += (rot & (1u << v)) ? 2 * e->bytes[v] : e->bytes[v];
      if (s->cold_operand[v])
        e->cold += e->bytes[v];
    }
  for (guint v = s->n_operands; v < ELK_MAX_OPERANDS; v++)
    e->bytes[v] = 0;
  if (hot_limit && e->hot > s->usable)
    return FALSE;

  e->compute_cycles = (double) steps * compute_cycles (s, chosen);
  if (s->fused_norm)
    e->compute_cycles += norm_prologue_total (s, chosen, &held_rows);

  shift_schedule (s, chosen, held_rows, e);

  /* The shuffle after the operator: re-layout of the output, then the
   * partial sums the rotation did not consume (r replicas of the output
   * remain) are gathered and reduced. */
  for (guint d = 0; d < s->n_dims; d++)
    t_out *= chosen[d]->t[0];
  r_out = s->replicas[0] / t_out;
  outb = (double) e->bytes[0];
  if (s->kind == ELK_OP_ELEMENTWISE || s->kind == ELK_OP_UNARY
      || s->kind == ELK_OP_POOL)
    {
      shuffle = sync;
      e->shuffle_bytes = 0;
    }
  else
    {
      double out_elems = s->elem_bytes[0] > 0 ? outb / s->elem_bytes[0] : 0;
      double gather_b = outb;
      double gather = 0, reduce = 0;
      double rows = s->fused_norm ? norm_rows (s, chosen) : 0;

      /* The artifact sizes the partial-sum gather by the per-step output
       * of the sub-operator rather than the output piece a core holds. */
      if (s->artifact_order)
        {
          out_elems = 1;
          for (guint d = 0; d < s->n_dims; d++)
            if (s->dim_mask[0] & (1u << d))
              out_elems *= (double) chosen[d]->step;
          gather_b = out_elems * s->elem_bytes[0];
        }
      /* A fused RMSNorm's partial sums of squares, one per row of the
       * output piece, travel and are reduced with the output's partial
       * sums; then each core scales the rows it ends with (rsqrt of the
       * sums and one multiply per element). */
      if (s->fused_norm && !s->fused_layer)
        {
          double share = MAX (r_out, 1u);
          /* A fused softmax's row sums travel the same way; its epilogue
           * is one divide per element (one element-wise pass, as the
           * unfused div operator is priced), with no rsqrt. */
          if (s->fused_softmax)
            e->compute_cycles += ew_cycles (cc, out_elems / share);
          else
            e->compute_cycles += cc->unary_slope * rows / share
                                 + cc->unary_fixed
                                 + ew_cycles (cc, out_elems / share);
          out_elems += rows;
          gather_b += rows * s->elem_bytes[0];
        }
      /* A fused LayerNorm's rows carry two partial sums (of x and of x²),
       * and each m step block of the output piece two more rows (its
       * partial gᵀW and bᵀW, compute_cycles()); all travel and are
       * reduced with the output.  Then each core rebuilds the rsqrt's
       * argument per row (Σx² + (K - 2) (Σx)², one element-wise pass) and
       * its rsqrt, and per element r (acc - Σx gᵀW) + bᵀW (three
       * element-wise passes). */
      if (s->fused_layer)
        {
          double share = MAX (r_out, 1u);
          double extra
              = 2 * rows
                + 2 * norm_blocks (s, chosen) * out_elems / MAX (rows, 1.0);
          e->compute_cycles
              += ew_cycles (cc, rows / share) + cc->unary_slope * rows / share
                 + cc->unary_fixed + 3 * ew_cycles (cc, out_elems / share);
          out_elems += extra;
          gather_b += extra * s->elem_bytes[0];
        }

      e->shuffle_bytes = outb;
      if (r_out == 2)
        {
          gather = 2 * sync
                   + cc->shift_cycles_per_byte * floor (out_elems / 2)
                       * (gather_b / MAX (out_elems, 1.0));
          reduce = ew_cycles (cc, out_elems / 2);
          e->shuffle_bytes += gather_b / 2;
        }
      else if (r_out > 2)
        {
          gather = r_out * sync + cc->shift_cycles_per_byte * gather_b;
          reduce = reduce_cycles (cc, out_elems / r_out, r_out);
          e->shuffle_bytes += gather_b;
        }
      shuffle = cc->shift_cycles_per_byte * outb
                + cc->syncs_per_shift * sync + cc->shuffle_syncs * sync
                + gather + reduce;
    }
  e->shuffle_cycles = shuffle;

  if (s->cores_used > s->cores_per_chip)
    {
      e->shift_cycles *= cc->multichip_factor;
      e->shuffle_cycles *= cc->multichip_factor;
    }
  e->total_cycles = e->compute_cycles + e->shift_cycles + e->shuffle_cycles;
  return TRUE;
}

/**
 * elk__plan_search_fill:
 *
 * Writes the plan of the columns @chosen, with its evaluation @e, in
 * interface units.  Unused slots are zero so that plans compare with
 * memcmp.
 */
void
elk__plan_search_fill (const PlanSearch *s,
                       const PlanDimCand *const *chosen,
                       const PlanEval *e,
                       ElkPlan *plan)
{
  double hz = s->spec->clock_hz;

  memset (plan, 0, sizeof (ElkPlan));
  plan->n_dims = (guint8) s->n_dims;
  plan->n_operands = (guint8) s->n_operands;
  for (guint d = 0; d < s->n_dims; d++)
    {
      plan->spatial[d] = s->spatial[d];
      for (guint v = 0; v < s->n_operands; v++)
        plan->temporal[d][v] = chosen[d]->t[v];
    }
  for (guint v = 0; v < s->n_operands; v++)
    {
      plan->replicas[v] = s->replicas[v];
      plan->operand_bytes[v] = e->bytes[v];
    }
  plan->cores_used = s->cores_used;
  plan->steps = e->steps;
  plan->hot_bytes = e->hot;
  plan->cold_bytes = e->cold;
  plan->compute_s = e->compute_cycles / hz;
  plan->shift_s = e->shift_cycles / hz;
  plan->shuffle_s = e->shuffle_cycles / hz;
  plan->time_s = e->total_cycles / hz;
  plan->noc_bytes = (e->shift_bytes + e->shuffle_bytes) * s->cores_used;
  plan->shift_events = e->shift_events;
  plan->shift_bytes = e->shift_bytes;
}

/**
 * elk__plan_search_warmup:
 *
 * The data-distribution cost, in cycles, from the preload layout @cold to
 * the execute layout @hot of the same spatial vector
 * (t10-plan-space.md §2.4 item 6): with rho_v the product over dimensions
 * of cold / hot factors, every input with rho_v > 1 moves rho_v cold
 * pieces, and every operand with rho_v > 1 pays rho_v syncs.
 */
double
elk__plan_search_warmup (const PlanSearch *s,
                         const ElkPlan *cold,
                         const ElkPlan *hot,
                         double *noc_bytes)
{
  const ElkCostCoeffs *cc = s->cc;
  double data = 0, syncs = 0;

  for (guint v = 0; v < s->n_operands; v++)
    {
      guint64 rho = 1;
      for (guint d = 0; d < s->n_dims; d++)
        rho *= cold->temporal[d][v] / hot->temporal[d][v];
      if (rho <= 1)
        continue;
      syncs += (double) rho;
      if (v > 0)
        data += (double) rho * (double) cold->operand_bytes[v];
    }
  if (noc_bytes != NULL)
    *noc_bytes = data * cold->cores_used;
  return cc->shift_cycles_per_byte * data + cc->sync_cycles * syncs;
}

/**
 * elk__plan_search_check:
 * @storage: (out caller-allocates): ELK_MAX_DIMS columns.
 *
 * Checks that @plan's spatial vector and temporal matrix obey the rules of
 * the plan space for this operator and chip (the floors excepted), sets
 * the search to its spatial vector and builds its columns in @storage.
 */
gboolean
elk__plan_search_check (PlanSearch *s,
                        const ElkPlan *plan,
                        const PlanDimCand **chosen,
                        PlanDimCand *storage,
                        GError **error)
{
  guint64 used = 1;
  guint32 prod[ELK_MAX_OPERANDS];
  guint rot_dims = 0;
  guint32 rot_max[2] = { 0, 0 };
  const char *name = s->op->name;

  for (guint v = 0; v < ELK_MAX_OPERANDS; v++)
    prod[v] = 1;

  for (guint d = 0; d < s->n_dims; d++)
    {
      if (plan->spatial[d] < 1 || plan->spatial[d] > s->extents[d])
        {
          g_set_error (error, ELK_SCHEDULE_ERROR,
                       ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
                       "operator '%s': %u parts for loop dimension '%c' of "
                       "extent %" G_GUINT64_FORMAT, name, plan->spatial[d],
                       s->op->dim_names[d], s->extents[d]);
          return FALSE;
        }
      used *= plan->spatial[d];
      if (used > s->cores)
        {
          g_set_error (error, ELK_SCHEDULE_ERROR,
                       ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
                       "operator '%s': the spatial vector needs more than "
                       "the %u cores of chip '%s'", name, s->cores,
                       s->spec->name);
          return FALSE;
        }
    }
  elk__plan_search_set_spatial (s, plan->spatial);

  for (guint d = 0; d < s->n_dims; d++)
    {
      PlanDimCand *c = &storage[d];

      memset (c, 0, sizeof (PlanDimCand));
      for (guint v = 0; v < s->n_operands; v++)
        {
          guint32 t = plan->temporal[d][v];
          if (s->fused_norm && v >= 3 && t != 1)
            {
              g_set_error (error, ELK_SCHEDULE_ERROR,
                           ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
                           "operator '%s': the %s of a fused %s-MatMul "
                           "does not rotate, but its factor along '%c' is %u",
                           name,
                           s->fused_softmax ? "row maximum"
                           : v == 3         ? "gain"
                                            : "bias",
                           s->fused_softmax ? "softmax" : "norm",
                           s->op->dim_names[d], t);
              return FALSE;
            }
          if (t < 1 || (t > 1 && (s->dim_mask[v] & (1u << d)) == 0)
              || s->replicas[v] % t != 0)
            {
              g_set_error (error, ELK_SCHEDULE_ERROR,
                           ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
                           "operator '%s': rotation factor %u of operand %u "
                           "along '%c' must be at least 1, divide its "
                           "replica count %u and be 1 on dimensions the "
                           "operand does not index", name, t, v,
                           s->op->dim_names[d], s->replicas[v]);
              return FALSE;
            }
          for (guint u = 0; u < v; u++)
            if (t > 1 && c->t[u] > 1 && t % c->t[u] != 0 && c->t[u] % t != 0)
              {
                g_set_error (error, ELK_SCHEDULE_ERROR,
                             ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
                             "operator '%s': rotation factors %u and %u "
                             "along '%c' do not form a divisibility chain",
                             name, c->t[u], t, s->op->dim_names[d]);
                return FALSE;
              }
          c->t[v] = t;
          prod[v] *= t;
        }
      if (!finish_cand (s, d, c, FALSE))
        {
          g_set_error (error, ELK_SCHEDULE_ERROR,
                       ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
                       "operator '%s': rotation factor %u along '%c' exceeds "
                       "the per-core extent %" G_GUINT64_FORMAT
                       " or the mesh side", name, c->max,
                       s->op->dim_names[d], s->sl[d]);
          return FALSE;
        }
      if (c->max > 1 && rot_dims < 2)
        rot_max[rot_dims] = c->max;
      if (c->max > 1)
        rot_dims++;
      chosen[d] = c;
    }
  for (guint v = 0; v < s->n_operands; v++)
    if (s->replicas[v] % prod[v] != 0)
      {
        g_set_error (error, ELK_SCHEDULE_ERROR,
                     ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
                     "operator '%s': the rotation factors of operand %u "
                     "multiply to %u, which does not divide its replica "
                     "count %u", name, v, prod[v], s->replicas[v]);
        return FALSE;
      }
  if (s->mesh && (rot_dims > 2
                  || (rot_dims == 2
                      && MIN (rot_max[0], rot_max[1]) > s->mesh_short)))
    {
      g_set_error (error, ELK_SCHEDULE_ERROR,
                   ELK_SCHEDULE_ERROR_INVALID_PROGRAM,
                   "operator '%s': a %ux%u mesh rotates along at most two "
                   "dimensions, the smaller factor fitting the shorter side",
                   name, s->spec->mesh_rows, s->spec->mesh_cols);
      return FALSE;
    }
  return TRUE;
}

/**
 * elk__plan_describe_op:
 *
 * Returns: (transfer full): "'name' (matmul mk,kn->mn, m=32 k=5120
 *   n=5120)", the operator as error messages name it.
 */
char *
elk__plan_describe_op (const ElkOp *op)
{
  GString *str = g_string_new (NULL);

  g_string_append_printf (str, "'%s' (%s ", op->name,
                          elk_op_kind_to_string (op->kind));
  for (guint i = 1; i <= op->n_operands; i++)
    {
      guint v = i % op->n_operands;
      if (i == op->n_operands)
        g_string_append (str, "->");
      else if (i > 1)
        g_string_append_c (str, ',');
      for (guint x = 0; x < op->access[v].n_axes; x++)
        {
          g_string_append_c (str, op->dim_names[op->access[v].dims[x][0]]);
          if (op->access[v].dims[x][1] >= 0)
            g_string_append_printf (str, "+%c",
                                    op->dim_names[op->access[v].dims[x][1]]);
        }
    }
  g_string_append_c (str, ',');
  for (guint d = 0; d < op->n_dims; d++)
    g_string_append_printf (str, " %c=%" G_GUINT64_FORMAT, op->dim_names[d],
                            op->extents[d]);
  g_string_append_c (str, ')');
  return g_string_free (str, FALSE);
}
