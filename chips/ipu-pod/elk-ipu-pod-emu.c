/* elk-ipu-pod-emu.c: the IPU-POD emulator engine (timing mode).
 *
 * The machine (docs/chip-ipu-pod.md): chips x tiles, each tile with its
 * SRAM, a compute pipeline, and one send and one receive port on an
 * all-to-all exchange; HBM controllers are nodes on that exchange, a chip's
 * controllers serve that chip's tiles, and IPU-Links join the chips.
 *
 * Lowering.  Every execute becomes BSP supersteps on the tiles of its
 * execute-state plan (mapped in sequence from tile 0, as elk-paper.md §3.2
 * maps all-to-all plans): an input superstep that gathers activation
 * inputs from the producer's tiles and turns the preload layout into the
 * execute layout (data distribution), then the K compute steps of the
 * compute-shift plan with one rotation exchange between consecutive steps
 * (the gcd rounds of t10-plan-space.md §2.3, largest bytes outermost), then
 * the partial-sum reduction when the output still has replicas.  Every
 * preload_async becomes a stream from the chip's HBM controllers into the
 * tiles of the preload-state plan, with the tile's completion tag when its
 * last byte lands.  Rules R1-R3 gate when each starts.
 *
 * Contention.  A tile's receive port serves the exchange and the preload
 * stream one packet after another, so each gets half of it while both have
 * data; the controllers of a chip cap the preload rate at the chip's HBM
 * bandwidth; every byte written into a tile's SRAM while it computes stalls
 * its compute for that byte's SRAM-port time; chip-crossing bytes share
 * the IPU-Links.  A superstep ends when its slowest tile ends.
 *
 * Aggregation.  Tiles are never simulated one by one in the event loop:
 * at any time the tiles fall into a few intervals ("segments") that the
 * current execute, the current preload and the chip boundaries cut out,
 * and every tile of a segment carries the same work except for padding,
 * which only makes a tile's piece smaller.  A segment therefore runs the
 * work of its worst tile (the full piece), which is exactly the tile the
 * BSP sync and the completion tag wait for; the contention it sees is the
 * contention of every tile in it, so nothing is averaged away.  Memory is
 * tracked tile by tile, with each tile's real piece sizes.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "elk-ipu-pod-private.h"

#define EPS_BYTES 1e-6
#define EPS_CYCLES 1e-6

typedef enum
{
  PH_SYNC,
  PH_COMPUTE,
  PH_EXCHANGE,
} PhaseKind;

typedef enum
{
  WHAT_INPUT,
  WHAT_STEP,
  WHAT_SHIFT,
  WHAT_REDUCE,
  WHAT_SYNC,
} PhaseWhat;

static const char *const what_names[] = { "input", "compute", "shift",
                                          "reduce", "sync" };

/* The breakdown component each kind of phase's time goes to: an input
 * phase re-lays data out (distribution and gathered activations), a
 * reduce phase is the output stage. */
static const ElkTimeComponent what_component[] = {
  ELK_TIME_RELAYOUT, ELK_TIME_COMPUTE, ELK_TIME_SHIFT,
  ELK_TIME_OUTPUT,   ELK_TIME_SYNC,
};
G_STATIC_ASSERT (G_N_ELEMENTS (what_component) == G_N_ELEMENTS (what_names));

typedef struct
{
  guint8 kind;
  guint8 what;
  double work;      /* cycles, or bytes received by the worst tile */
  double tx;        /* bytes sent by the worst sender */
  double rx_total;  /* bytes received over all tiles */
  double xchip;     /* bytes crossing chips */
  double scale;     /* an exchange's time factor (the cost model's
                     * multi-chip penalty with the IPU-Links off) */
} Phase;

/* Per-tile bytes of a layout: the worst tile's, and either NULL (every
 * tile of [0, cores) holds the same) or one entry per tile. */
typedef struct
{
  guint32 cores;
  guint64 rep;
  guint64 *tile;
  double total;
} TileBytes;

/* One operator lowered onto the machine, shared by identical operators. */
typedef struct
{
  guint32 cores;
  guint32 cold_cores;
  TileBytes hot;
  TileBytes cold;
  double *chip_hbm;      /* bytes each chip's controllers read */
  double hbm_total;
  double hbm_graph; /* the graph's bytes, read once (pooled HBM) */
  Phase *phases;
  guint n_phases;
  guint8 order[ELK_MAX_DIMS]; /* the tile mapping of both layouts */
} Lowered;

/* The spatial grid of a plan: tile t of [0, cores) sits at the mixed-radix
 * coordinates of t with order[0] the slowest loop dimension and
 * order[n_dims - 1] the fastest (the identity order is row-major, the last
 * loop dimension fastest).  The order is the code generator's choice (the
 * tile-mapping property): it decides which parts share a chip. */
typedef struct
{
  guint n_dims;
  guint8 order[ELK_MAX_DIMS];
  guint32 parts[ELK_MAX_DIMS];
  guint64 ext[ELK_MAX_DIMS];
  guint64 sl[ELK_MAX_DIMS];
  guint32 cores;
} Grid;

static void
grid_init (Grid *g, const ElkOp *op, const ElkPlan *p, const guint8 *order)
{
  guint64 cores = 1;

  g->n_dims = op->n_dims;
  for (guint d = 0; d < op->n_dims; d++)
    {
      g->order[d] = order != NULL ? order[d] : (guint8) d;
      g->parts[d] = p->spatial[d];
      g->ext[d] = op->extents[d];
      g->sl[d] = ceil_div (op->extents[d], p->spatial[d]);
      cores *= p->spatial[d];
    }
  g->cores = (guint32) cores;
}

static void
grid_coords (const Grid *g, guint32 t, guint32 *c)
{
  for (gint k = (gint) g->n_dims - 1; k >= 0; k--)
    {
      guint d = g->order[k];
      c[d] = t % g->parts[d];
      t /= g->parts[d];
    }
}

static guint32
grid_tile (const Grid *g, const guint32 *c)
{
  guint32 t = 0;
  for (guint k = 0; k < g->n_dims; k++)
    t = t * g->parts[g->order[k]] + c[g->order[k]];
  return t;
}

/* The real extent of loop dimension d on the tile at coordinate cd: the
 * last part along d is shorter when the parts do not divide the extent. */
static guint64
grid_extent (const Grid *g, guint d, guint32 cd)
{
  guint64 lo = (guint64) cd * g->sl[d];
  if (lo >= g->ext[d])
    return 0;
  return MIN (g->sl[d], g->ext[d] - lo);
}

static double
elem_bytes (const ElkGraph *graph, const ElkOp *op, guint v)
{
  const ElkTensor *t = elk_graph_get_tensor (graph, op->tensors[v]);
  return t->n_elements > 0 ? (double) t->bytes / (double) t->n_elements : 0;
}

static gboolean
is_hbm_operand (const ElkGraph *graph, const ElkOp *op, guint v)
{
  return v > 0 && elk_graph_get_tensor (graph, op->tensors[v])->origin
                    != ELK_TENSOR_ORIGIN_ACTIVATION;
}

/* Copies of operand v's spatial piece: the parts of the loop dimensions it
 * does not index. */
static guint32
operand_replicas (const ElkOp *op, const ElkPlan *p, guint v)
{
  guint8 mask = 0;
  guint32 r = 1;

  for (guint x = 0; x < op->access[v].n_axes; x++)
    {
      mask |= (guint8) (1u << op->access[v].dims[x][0]);
      if (op->access[v].dims[x][1] >= 0)
        mask |= (guint8) (1u << op->access[v].dims[x][1]);
    }
  for (guint d = 0; d < op->n_dims; d++)
    if (!(mask & (1u << d)))
      r *= p->spatial[d];
  return r;
}

static guint32
operand_tprod (const ElkPlan *p, guint n_dims, guint v)
{
  guint32 t = 1;
  for (guint d = 0; d < n_dims; d++)
    t *= p->temporal[d][v];
  return t;
}

static guint8
operand_mask (const ElkOp *op, guint v)
{
  guint8 mask = 0;
  for (guint x = 0; x < op->access[v].n_axes; x++)
    {
      mask |= (guint8) (1u << op->access[v].dims[x][0]);
      if (op->access[v].dims[x][1] >= 0)
        mask |= (guint8) (1u << op->access[v].dims[x][1]);
    }
  return mask;
}

/* Bytes of operand v's piece on the tile at coordinates c: the tile's real
 * extents cut by the operand's own rotation factors (a rotating buffer must
 * hold the largest part); a window axis spans both pieces minus one. */
static guint64
piece_bytes (const ElkOp *op,
             const ElkPlan *p,
             const Grid *g,
             const guint32 *c,
             guint v,
             double eb)
{
  double elems = 1;

  for (guint x = 0; x < op->access[v].n_axes; x++)
    {
      gint d0 = op->access[v].dims[x][0], d1 = op->access[v].dims[x][1];
      guint64 e0 = grid_extent (g, (guint) d0, c[d0]);
      guint64 len = ceil_div (e0, p->temporal[d0][v]);

      if (d1 >= 0)
        {
          guint64 e1 = grid_extent (g, (guint) d1, c[d1]);
          guint64 l1 = ceil_div (e1, p->temporal[d1][v]);
          len = (len == 0 || l1 == 0) ? 0 : len + l1 - 1;
        }
      elems *= (double) len;
    }
  return (guint64) ceil (elems * eb - 1e-9);
}

/* Per-tile bytes of the operands in @mask under plan @p, rotating operands
 * doubled when @double_rot (the execute-state double buffers). */
static void
tile_bytes_build (const ElkGraph *graph,
                  const ElkOp *op,
                  const ElkPlan *p,
                  const guint8 *order,
                  guint mask,
                  gboolean double_rot,
                  TileBytes *tb)
{
  Grid g;
  guint32 c[ELK_MAX_DIMS];
  double eb[ELK_MAX_OPERANDS];
  guint factor[ELK_MAX_OPERANDS];
  gboolean uniform = TRUE;

  grid_init (&g, op, p, order);
  memset (tb, 0, sizeof (*tb));
  tb->cores = g.cores;
  for (guint v = 0; v < op->n_operands; v++)
    {
      eb[v] = elem_bytes (graph, op, v);
      factor[v] = double_rot && operand_tprod (p, op->n_dims, v) > 1 ? 2 : 1;
    }
  for (guint d = 0; d < op->n_dims; d++)
    {
      if (op->extents[d] % p->spatial[d] != 0)
        uniform = FALSE;
      for (guint v = 0; v < op->n_operands; v++)
        if (g.sl[d] % p->temporal[d][v] != 0)
          uniform = FALSE;
    }

  memset (c, 0, sizeof (c));
  for (guint v = 0; v < op->n_operands; v++)
    if (mask & (1u << v))
      tb->rep += factor[v] * piece_bytes (op, p, &g, c, v, eb[v]);
  if (uniform)
    {
      tb->total = (double) tb->rep * g.cores;
      return;
    }
  tb->tile = g_new (guint64, g.cores);
  for (guint32 t = 0; t < g.cores; t++)
    {
      guint64 b = 0;
      grid_coords (&g, t, c);
      for (guint v = 0; v < op->n_operands; v++)
        if (mask & (1u << v))
          b += factor[v] * piece_bytes (op, p, &g, c, v, eb[v]);
      tb->tile[t] = b;
      tb->total += (double) b;
      tb->rep = MAX (tb->rep, b);
    }
}

/* Mixed-radix index of tile coordinates over the loop dimensions in
 * (in_mask TRUE) or not in (FALSE) @mask, in dimension order. */
static guint64
composite (const Grid *g, const guint32 *c, guint8 mask, gboolean in_mask)
{
  guint64 x = 0;
  for (guint d = 0; d < g->n_dims; d++)
    if (((mask >> d) & 1) == (in_mask ? 1 : 0))
      x = x * g->parts[d] + c[d];
  return x;
}

static guint64
composite_size (const Grid *g, guint8 mask, gboolean in_mask)
{
  guint64 x = 1;
  for (guint d = 0; d < g->n_dims; d++)
    if (((mask >> d) & 1) == (in_mask ? 1 : 0))
      x *= g->parts[d];
  return x;
}

/* The copies of an operand: tiles with the same coordinates on the
 * dimensions it indexes hold pieces of the same block; along the others
 * (index r, of its replica count) the piece is cut into @modulus parts, and
 * the tiles with the same r mod @modulus hold the same part.  Returns the
 * number of (tile, same-part peer) pairs on different chips, and fills
 * @distinct (per chip) with the parts some tile of that chip holds. */
static double
group_stats (const Grid *g,
             guint8 mask,
             guint32 modulus,
             guint tiles_per_chip,
             guint chips,
             guint32 *distinct)
{
  guint64 n_groups = composite_size (g, mask, TRUE) * modulus;
  g_autofree guint32 *count = g_new0 (guint32, n_groups * chips);
  g_autofree guint32 *size = g_new0 (guint32, n_groups);
  guint32 c[ELK_MAX_DIMS];
  double cross = 0;

  for (guint32 t = 0; t < g->cores; t++)
    {
      guint64 id;
      grid_coords (g, t, c);
      id = composite (g, c, mask, TRUE) * modulus
           + composite (g, c, mask, FALSE) % modulus;
      count[id * chips + t / tiles_per_chip]++;
      size[id]++;
    }
  for (guint32 t = 0; t < g->cores; t++)
    {
      guint64 id;
      grid_coords (g, t, c);
      id = composite (g, c, mask, TRUE) * modulus
           + composite (g, c, mask, FALSE) % modulus;
      cross += size[id] - count[id * chips + t / tiles_per_chip];
    }
  if (distinct != NULL)
    {
      memset (distinct, 0, sizeof (guint32) * chips);
      for (guint64 id = 0; id < n_groups; id++)
        for (guint ch = 0; ch < chips; ch++)
          if (count[id * chips + ch] > 0)
            distinct[ch]++;
    }
  return cross;
}

/* Tiles whose ring successor is on another chip, for rings of @ring tiles
 * along the dimensions an operand does not index. */
static double
ring_cross (const Grid *g, guint8 mask, guint32 ring, guint tiles_per_chip)
{
  guint32 c[ELK_MAX_DIMS], s[ELK_MAX_DIMS];
  double cross = 0;

  if (ring <= 1)
    return 0;
  for (guint32 t = 0; t < g->cores; t++)
    {
      guint64 r, next;

      grid_coords (g, t, c);
      r = composite (g, c, mask, FALSE);
      next = (r / ring) * ring + (r % ring + 1) % ring;
      memcpy (s, c, sizeof (c));
      for (gint d = (gint) g->n_dims - 1; d >= 0; d--)
        if (((mask >> d) & 1) == 0)
          {
            s[d] = (guint32) (next % g->parts[d]);
            next /= g->parts[d];
          }
      if (grid_tile (g, s) / tiles_per_chip != t / tiles_per_chip)
        cross++;
    }
  return cross;
}

/* Tiles per chip of [0, cores). */
static void
chip_counts (const IpuMachine *m, guint32 cores, double *out)
{
  for (guint ch = 0; ch < m->chips; ch++)
    {
      guint64 lo = (guint64) ch * m->tiles_per_chip;
      guint64 hi = lo + m->tiles_per_chip;
      out[ch] = cores <= lo ? 0 : (double) (MIN (hi, (guint64) cores) - lo);
    }
}

/* ---- Kernels: per-tile cycles of one compute step. ---- */

static double
ew_cycles (const ElkCostCoeffs *k, double n)
{
  if (n <= k->ew_small_cap_n)
    return MIN (k->ew_small_cap, k->ew_small_slope * n + k->ew_small_fixed);
  return k->ew_slope * n + k->ew_fixed;
}

static double
reduce_cycles (const ElkCostCoeffs *k, double out, double len)
{
  static const double ladder[] = { 4, 8, 12, 16, 24 };
  double x = out;

  if (out > 2)
    {
      x = ceil (out / k->reduce_align) * k->reduce_align;
      for (guint i = 0; i < G_N_ELEMENTS (ladder); i++)
        if (out <= ladder[i])
          {
            x = ladder[i];
            break;
          }
    }
  x *= len;
  if (x <= k->reduce_small_n)
    return MIN (k->reduce_slope * (k->reduce_small_n + 1) + k->reduce_fixed,
                k->reduce_small_slope * x + k->reduce_fixed);
  return k->reduce_slope * x + k->reduce_fixed;
}

/* A fused LayerNorm-MatMul (elk-fuse.h): operands out, x, weight, gain,
 * bias. */
static gboolean
is_fused_layer (const ElkOp *op)
{
  return op->kind == ELK_OP_MATMUL && op->n_operands == 5
         && g_strcmp0 (op->type, ELK_FUSE_LAYERNORM_MATMUL) == 0;
}

/* A fused softmax-MatMul (elk-fuse.h): operands out, x, V, the row
 * maximum. */
static gboolean
is_fused_softmax (const ElkOp *op)
{
  return op->kind == ELK_OP_MATMUL && op->n_operands == 4
         && g_strcmp0 (op->type, ELK_FUSE_SOFTMAX_MATMUL) == 0;
}

/* A fused RMSNorm-MatMul (elk-fuse.h): operands out, x, weight, gain; or
 * a fused LayerNorm-MatMul, which is priced the same way with two row
 * sums (of x and of x²) where RMSNorm has one, and two more rows, gᵀW
 * and bᵀW, per m step block; or a fused softmax-MatMul, priced as an
 * RMSNorm's with exp (x - mx) for the gain, the row sums of the
 * exponentials for the sums of squares and a divide for the epilogue
 * (docs/plan-space.md, "Fused operators"). */
static gboolean
is_fused_norm (const ElkOp *op)
{
  return is_fused_layer (op) || is_fused_softmax (op)
         || (op->kind == ELK_OP_MATMUL && op->n_operands == 4
             && g_strcmp0 (op->type, ELK_FUSE_RMSNORM_MATMUL) == 0);
}

/* A fused RMSNorm-MatMul's prologue on one x step piece: the partial
 * sums of squares of its rows (one square-add reduction) and the gain,
 * priced as the plan's cost model does (docs/plan-space.md, "Fused
 * operators"); fused_norm_pieces() counts the pieces. */
static double
fused_norm_prologue_cycles (const IpuMachine *m,
                            const ElkOp *op,
                            const guint64 *st)
{
  const ElkCostCoeffs *k = &m->kernel;
  guint8 mo = operand_mask (op, 0), mx = operand_mask (op, 1);
  double xe = 1, rows = 1;

  for (guint d = 0; d < op->n_dims; d++)
    if (mx & (1u << d))
      {
        xe *= (double) st[d];
        if (mo & (1u << d))
          rows *= (double) st[d];
      }
  return (is_fused_layer (op) ? 2 : 1)
             * reduce_cycles (k, rows, xe / MAX (rows, 1.0))
         + ew_cycles (k, xe);
}

/* The rows (one sum of squares each) of a fused RMSNorm-MatMul's output
 * piece on one tile. */
static double
fused_norm_rows (const ElkOp *op, const ElkPlan *hp, const Grid *g)
{
  guint8 both = operand_mask (op, 0) & operand_mask (op, 1);
  double rows = 1;

  for (guint d = 0; d < op->n_dims; d++)
    if (both & (1u << d))
      rows *= (double) ceil_div (g->sl[d], hp->temporal[d][0]);
  return rows;
}

/* How a fused RMSNorm-MatMul's prologue splits on a tile (the plan's
 * norm_prologue_total, docs/plan-space.md "Fused operators"): @own step
 * pieces of the x piece it holds at the start, which it squares and
 * scales once each, @arriving pieces held on its rotation ring (its own
 * included), each of which arrives already scaled with the sums of
 * squares of its @held_rows rows. */
static void
fused_norm_pieces (const ElkOp *op,
                   const ElkPlan *hp,
                   const Grid *g,
                   double *own,
                   double *arriving,
                   double *held_rows)
{
  guint8 mo = operand_mask (op, 0), mx = operand_mask (op, 1);

  *own = 1;
  *arriving = 1;
  *held_rows = 1;
  for (guint d = 0; d < op->n_dims; d++)
    if (mx & (1u << d))
      {
        guint32 most = 1, t = MAX (hp->temporal[d][1], 1u);
        for (guint v = 0; v < op->n_operands; v++)
          most = MAX (most, hp->temporal[d][v]);
        *own *= (double) (most / t);
        *arriving *= (double) t;
        if (mo & (1u << d))
          *held_rows *= (double) ceil_div (g->sl[d], t);
      }
  if (is_fused_layer (op))
    *held_rows *= 2;
}

/* The values a fused norm-MatMul's output piece carries besides its
 * elements (@out_elems of them, @rows rows): one sum of squares per row
 * (RMSNorm), or two sums per row and the two rows gᵀW and bᵀW per m step
 * block (LayerNorm). */
static double
fused_norm_extra (const ElkOp *op,
                  const ElkPlan *hp,
                  const Grid *g,
                  double out_elems)
{
  guint8 both = operand_mask (op, 0) & operand_mask (op, 1);
  double rows = fused_norm_rows (op, hp, g), blocks = 1;

  if (!is_fused_layer (op))
    return rows;
  for (guint d = 0; d < op->n_dims; d++)
    if (both & (1u << d))
      {
        guint32 most = 1;
        for (guint v = 0; v < op->n_operands; v++)
          most = MAX (most, hp->temporal[d][v]);
        blocks *= ceil ((double) ceil_div (g->sl[d], hp->temporal[d][0])
                        / (double) ceil_div (g->sl[d], most));
      }
  return 2 * rows + 2 * blocks * out_elems / MAX (rows, 1.0);
}

/* One kernel call on a tile whose step covers extents @st. */
static double
kernel_cycles (const IpuMachine *m,
               const ElkGraph *graph,
               const ElkOp *op,
               const guint64 *st)
{
  const ElkCostCoeffs *k = &m->kernel;
  double total = 1, out = 1, last = 1;
  double cls[4] = { 1, 1, 1, 1 }; /* batch, m, n, k */
  guint8 mo = operand_mask (op, 0);
  guint8 ma = op->n_operands > 1 ? operand_mask (op, 1) : 0;
  guint8 mb = op->n_operands > 2 ? operand_mask (op, 2) : 0;
  guint8 ml = operand_mask (op, op->n_operands - 1);

  for (guint d = 0; d < op->n_dims; d++)
    {
      guint8 bit = (guint8) (1u << d);
      double s = (double) st[d];
      total *= s;
      if (mo & bit)
        out *= s;
      if (ml & bit)
        last *= s;
      if (!(mo & bit))
        cls[3] *= s;
      else if ((ma & bit) && (mb & bit))
        cls[0] *= s;
      else if (mb & bit)
        cls[2] *= s;
      else
        cls[1] *= s;
    }
  if (total == 0)
    return 0;

  switch (op->kind)
    {
    case ELK_OP_MATMUL:
    case ELK_OP_CONV:
      {
        /* The AMP unit works on block_m x block_k x block_n blocks; an FP32
         * operand halves the k block and doubles the block time, and an
         * integer product takes the block time of the integer rate,
         * whatever its operands' width.  The larger of m and n streams
         * through the unit. */
        double mm, nn;
        double inner = k->matmul_inner, bk = k->block_k;
        double b_m, b_k, b_n;

        /* A fused LayerNorm's two more rows, g and b (gᵀW and bᵀW). */
        if (is_fused_layer (op))
          cls[1] += 2;
        mm = MAX (cls[1], cls[2]);
        nn = MIN (cls[1], cls[2]);

        if (mm <= k->block_n)
          {
            double t = mm;
            mm = nn;
            nn = t;
          }
        if (elk_op_has_integer_inputs (graph, op))
          inner *= k->block_m * k->block_k * k->block_n / k->matmul_inner
                   / k->int8_macs_per_cycle;
        else if (op->n_operands > 1 && elem_bytes (graph, op, 1) >= 4.0)
          {
            inner *= 2;
            bk = MAX (bk / 2, 1);
          }
        b_m = ceil (mm / k->block_m);
        b_k = ceil (cls[3] / bk);
        b_n = ceil (nn / k->block_n);
        return cls[0] * (inner * b_m * b_k * b_n + k->matmul_kn * b_k * b_n
                         + k->matmul_n * b_n + k->matmul_fixed);
      }
    case ELK_OP_ELEMENTWISE:
      return ew_cycles (k, total);
    case ELK_OP_UNARY:
      return k->unary_slope * total + k->unary_fixed;
    case ELK_OP_REDUCE:
    case ELK_OP_POOL:
      return reduce_cycles (k, out, total / MAX (out, 1));
    case ELK_OP_GATHER:
      return k->gather_fixed + ceil (k->gather_slope * out / last) * last
             + k->gather_per_index * last;
    case ELK_OP_SLICE:
      return k->slice_slope * out * elem_bytes (graph, op, 0) + k->slice_fixed;
    case ELK_OP_N_KINDS:
    default:
      return 0;
    }
}

/* Bytes of activation operand v of @op that cross chips when its tiles
 * gather it from the tiles of @prod, which produced it as its output.
 * Each sampled element lives on the chip of the producer tile that owns it
 * (the first of its copies) and is needed by the chips spanned by the
 * consumer tiles that hold it; every needing chip other than the owner's
 * receives it once over the IPU-Links (and multicasts it on chip). */
static double
gather_xchip (const IpuMachine *m,
              const ElkGraph *graph,
              const ElkOp *op,
              const ElkPlan *hp,
              const guint8 *order,
              guint v,
              const ElkOp *prod,
              const ElkPlan *pp,
              const guint8 *porder,
              guint pv)
{
  const ElkTensor *t = elk_graph_get_tensor (graph, op->tensors[v]);
  const ElkAccess *ca = &op->access[v], *pa = &prod->access[pv];
  Grid cg, pg;
  guint64 samples[ELK_MAX_DIMS], idx[ELK_MAX_DIMS];
  guint64 n = 1, far = 0;
  guint8 cmask = operand_mask (op, v);

  if (t->n_dims == 0 || ca->n_axes != t->n_dims || pa->n_axes != t->n_dims)
    return (double) t->bytes * (m->chips - 1) / m->chips;
  grid_init (&cg, op, hp, order);
  grid_init (&pg, prod, pp, porder);
  for (guint x = 0; x < t->n_dims; x++)
    {
      samples[x] = MIN (t->shape[x], (guint64) 16);
      n *= samples[x];
      idx[x] = 0;
    }
  for (guint64 k = 0; k < n; k++)
    {
      guint32 pc[ELK_MAX_DIMS] = { 0 }, lo[ELK_MAX_DIMS] = { 0 };
      guint32 hi[ELK_MAX_DIMS] = { 0 };
      guint owner, c0, c1;
      guint64 r = k;

      for (gint x = (gint) t->n_dims - 1; x >= 0; x--)
        {
          idx[x] = (r % samples[x]) * t->shape[x] / samples[x];
          r /= samples[x];
        }
      for (guint x = 0; x < t->n_dims; x++)
        {
          gint pd = pa->dims[x][0], cd = ca->dims[x][0];
          pc[pd] = (guint32) MIN (idx[x] / pg.sl[pd],
                                  (guint64) pg.parts[pd] - 1);
          lo[cd] = hi[cd] = (guint32) MIN (idx[x] / cg.sl[cd],
                                           (guint64) cg.parts[cd] - 1);
        }
      for (guint d = 0; d < cg.n_dims; d++)
        if (!(cmask & (1u << d)))
          hi[d] = cg.parts[d] - 1;
      owner = grid_tile (&pg, pc) / m->tiles_per_chip;
      c0 = grid_tile (&cg, lo) / m->tiles_per_chip;
      c1 = grid_tile (&cg, hi) / m->tiles_per_chip;
      far += (c1 - c0 + 1) - (owner >= c0 && owner <= c1 ? 1 : 0);
    }
  return (double) t->bytes * (double) far / (double) n;
}

/* ---- Lowering ---- */

typedef struct
{
  GArray *phases;
} PhaseList;

static void
push_phase (GArray *a, PhaseKind kind, PhaseWhat what, double work,
            double tx, double rx_total, double xchip)
{
  Phase ph = { (guint8) kind, (guint8) what, work, tx, rx_total, xchip, 1 };
  g_array_append_val (a, ph);
}

/* push_phase with the effects switched off applied: without send ports an
 * exchange waits only for its receivers, without IPU-Links no byte waits
 * for them, and @mc (the cost model's multi-chip factor, or 1) stretches
 * syncs and exchanges. */
static void
push_phase_fx (const IpuMachine *m,
               GArray *a,
               PhaseKind kind,
               PhaseWhat what,
               double work,
               double tx,
               double rx_total,
               double xchip,
               double mc)
{
  Phase ph = { (guint8) kind, (guint8) what, work, tx, rx_total, xchip, 1 };

  if (!(m->effects & IPU_FX_SEND_PORTS))
    ph.tx = MIN (ph.tx, ph.work);
  if (!(m->effects & IPU_FX_IPU_LINKS))
    ph.xchip = 0;
  if (kind == PH_SYNC)
    ph.work *= mc;
  else if (kind == PH_EXCHANGE)
    ph.scale = mc;
  g_array_append_val (a, ph);
}

static double
sync_cycles (const IpuMachine *m, guint32 cores)
{
  return m->sync_cycles + (cores > m->tiles_per_chip ? m->sync_xchip_cycles
                                                     : 0);
}

static gboolean
check_plan (const IpuMachine *m,
            const ElkOp *op,
            const ElkPlan *p,
            const char *which,
            GError **error)
{
  guint64 cores = 1;

  if (p->n_dims != op->n_dims || p->n_operands != op->n_operands)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'ipu-pod': the %s plan of operator '%s' has %u "
                   "dimensions and %u operands, the operator %u and %u",
                   which, op->name, p->n_dims, p->n_operands, op->n_dims,
                   op->n_operands);
      return FALSE;
    }
  for (guint d = 0; d < op->n_dims; d++)
    {
      if (p->spatial[d] < 1 || p->spatial[d] > op->extents[d])
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': the %s plan of operator '%s' cuts "
                       "loop dimension '%c' (extent %" G_GUINT64_FORMAT
                       ") into %u parts", which, op->name, op->dim_names[d],
                       op->extents[d], p->spatial[d]);
          return FALSE;
        }
      cores *= p->spatial[d];
    }
  if (cores > m->tiles)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'ipu-pod': the %s plan of operator '%s' needs %"
                   G_GUINT64_FORMAT " tiles, the machine has %u", which,
                   op->name, cores, m->tiles);
      return FALSE;
    }
  for (guint v = 0; v < op->n_operands; v++)
    {
      guint8 mask = operand_mask (op, v);
      guint64 replicas = 1;
      guint32 tprod = 1;

      for (guint d = 0; d < op->n_dims; d++)
        {
          guint32 t = p->temporal[d][v];
          if (!(mask & (1u << d)))
            replicas *= p->spatial[d];
          if (t < 1 || (t > 1 && !(mask & (1u << d))))
            {
              g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                           "chip 'ipu-pod': the %s plan of operator '%s' "
                           "rotates operand %u by %u along '%c', which it "
                           "does not index", which, op->name, v, t,
                           op->dim_names[d]);
              return FALSE;
            }
          tprod *= t;
        }
      if (replicas % tprod != 0)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': the %s plan of operator '%s' cuts "
                       "operand %u into %u rotating parts, which does not "
                       "divide its %" G_GUINT64_FORMAT " copies", which,
                       op->name, v, tprod, replicas);
          return FALSE;
        }
    }
  return TRUE;
}

/* Whether @cold is @hot's layout with every rotation factor a multiple:
 * then data distribution only gathers the other parts of each piece from
 * the tiles of the same rotation group. */
static gboolean
same_layout_family (const ElkOp *op,
                    const ElkPlan *cold,
                    const ElkPlan *hot,
                    guint cold_mask)
{
  for (guint d = 0; d < op->n_dims; d++)
    {
      if (cold->spatial[d] != hot->spatial[d])
        return FALSE;
      for (guint v = 0; v < op->n_operands; v++)
        if ((cold_mask & (1u << v))
            && cold->temporal[d][v] % hot->temporal[d][v] != 0)
          return FALSE;
    }
  return TRUE;
}

typedef struct
{
  double bytes;
  guint32 shifts;
  guint8 mask;
} Round;

/* One operator's lowering with one tile mapping, shared by the phases of
 * lower_op_mapped: the operator and its plans, the tile grid, the bytes of
 * each operand's piece, and the phases pushed so far. */
typedef struct
{
  const IpuMachine *m;
  const ElkGraph *graph;
  guint i;
  const ElkOp *op;
  const ElkPlan *hp, *cp;
  gboolean preloaded;
  ElkProgram *program;
  const gint *producer;
  const guint8 (*orders)[ELK_MAX_DIMS];
  const guint8 *order;
  guint cold_mask;
  Grid g;
  guint64 piece[ELK_MAX_OPERANDS];
  double sync;
  double mc;             /* the cost model's multi-chip factor, or 1 */
  const ElkOpCost *cost; /* the analytic quantities (NULL: all on) */
  GArray *ph;
  Lowered *L;
} Lowering;


/* The preload-state layout: what each tile receives from its chip's
 * controllers, and how many distinct bytes each chip reads (a part that
 * tiles on two chips hold is read once per chip). */
static void
lower_cold_layout (Lowering *lw)
{
  const IpuMachine *m = lw->m;
  const ElkGraph *graph = lw->graph;
  const ElkOp *op = lw->op;
  const ElkPlan *cp = lw->cp;
  const guint8 *order = lw->order;
  const guint cold_mask = lw->cold_mask;
  const gboolean preloaded = lw->preloaded;
  Lowered *L = lw->L;

  if (preloaded && cold_mask != 0)
    L->hbm_graph = (double) elk_op_get_hbm_bytes (graph, op);
  /* A program that takes distribution as free (Ideal), with the emulated
   * distribution off: its preload lands as the analytic chip lands it, an
   * even, unreplicated shard on every tile. */
  if (preloaded && cold_mask != 0 && !(m->effects & IPU_FX_DISTRIBUTION)
      && (elk_program_get_assumptions (lw->program)
          & ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION))
    {
      guint64 hbm = elk_op_get_hbm_bytes (graph, op);

      L->cold_cores = m->tiles;
      L->cold.cores = m->tiles;
      L->cold.rep = ceil_div (hbm, m->tiles);
      L->cold.total = (double) L->cold.rep * m->tiles;
      for (guint ch = 0; ch < m->chips; ch++)
        L->chip_hbm[ch] = (double) hbm / m->chips;
      L->hbm_total = (double) hbm;
      return;
    }
  if (preloaded && cold_mask != 0)
    {
      Grid cg;
      g_autofree guint32 *distinct = g_new (guint32, m->chips);
      guint32 cc[ELK_MAX_DIMS] = { 0 };

      grid_init (&cg, op, cp, order);
      L->cold_cores = cg.cores;
      tile_bytes_build (graph, op, cp, order, cold_mask, FALSE, &L->cold);
      for (guint v = 1; v < op->n_operands; v++)
        {
          guint64 b;
          if (!(cold_mask & (1u << v)))
            continue;
          b = piece_bytes (op, cp, &cg, cc, v, elem_bytes (graph, op, v));
          group_stats (&cg, operand_mask (op, v),
                       operand_tprod (cp, op->n_dims, v), m->tiles_per_chip,
                       m->chips, distinct);
          for (guint ch = 0; ch < m->chips; ch++)
            {
              L->chip_hbm[ch] += (double) distinct[ch] * (double) b;
              L->hbm_total += (double) distinct[ch] * (double) b;
            }
        }
    }
}

/* The input superstep.  Activation inputs come from the tiles of the
 * operator that produced them (spread evenly over its tiles), and the
 * preload layout becomes the execute layout. */
static void
lower_input (Lowering *lw)
{
  const IpuMachine *m = lw->m;
  const ElkGraph *graph = lw->graph;
  const ElkOp *op = lw->op;
  const ElkPlan *hp = lw->hp, *cp = lw->cp;
  const guint i = lw->i;
  ElkProgram *program = lw->program;
  const gint *producer = lw->producer;
  const guint8 (*orders)[ELK_MAX_DIMS] = lw->orders;
  const guint8 *order = lw->order;
  const guint cold_mask = lw->cold_mask;
  const gboolean preloaded = lw->preloaded;
  const Grid *g = &lw->g;
  const guint64 *piece = lw->piece;
  const double sync = lw->sync;
  GArray *ph = lw->ph;
  double in_rx = 0, in_tx = 0, in_total = 0, in_xchip = 0;
  g_autofree double *src = g_new (double, m->chips);


  for (guint v = 1; v < op->n_operands; v++)
    {
      double n_src = 0, far = 0;
      g_autofree guint32 *distinct = NULL;
      gint pi = producer[op->tensors[v]];
      const ElkOp *producer_op = NULL;
      const ElkProgramOp *producer_pop = NULL;

      /* Without the emulated gather an activation is where it is needed
       * (the analytic chip charges the producer's output shuffle). */
      if ((cold_mask & (1u << v)) || !(m->effects & IPU_FX_GATHER))
        continue;
      if (pi >= 0 && pi < (gint) i)
        {
          producer_op = elk_graph_get_op (graph, (guint) pi);
          producer_pop = elk_program_peek_op (program, (guint) pi);
          chip_counts (m, producer_pop->exec_plan.cores_used, src);
        }
      else
        chip_counts (m, m->tiles, src);
      /* A piece that several tiles of a chip need crosses the IPU-Links
       * once and is multicast on the chip. */
      for (guint ch = 0; ch < m->chips; ch++)
        n_src += src[ch];
      if (producer_op != NULL)
        far = gather_xchip (m, graph, op, hp, order, v, producer_op,
                            &producer_pop->exec_plan, orders[pi], 0);
      else
        {
          /* The model input: spread evenly over every tile. */
          distinct = g_new (guint32, m->chips);
          group_stats (g, operand_mask (op, v),
                       operand_tprod (hp, op->n_dims, v), m->tiles_per_chip,
                       m->chips, distinct);
          for (guint ch = 0; ch < m->chips; ch++)
            far += distinct[ch] * (1 - src[ch] / n_src) * (double) piece[v];
        }
      in_rx += (double) piece[v];
      in_total += (double) piece[v] * g->cores;
      in_tx += (double) piece[v] * g->cores / n_src;
      in_xchip += far;
    }
  /* Data distribution, unless the program takes it as free (Ideal). */
  if (preloaded && cold_mask != 0 && (m->effects & IPU_FX_DISTRIBUTION)
      && !(elk_program_get_assumptions (program)
           & ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION))
    {
      gboolean family = same_layout_family (op, cp, hp, cold_mask);
      Grid cg;
      guint32 cc[ELK_MAX_DIMS] = { 0 };

      grid_init (&cg, op, cp, order);
      for (guint v = 1; v < op->n_operands; v++)
        {
          double rho, cold_piece, rx, peers;
          guint32 th;

          if (!(cold_mask & (1u << v)))
            continue;
          cold_piece = (double) piece_bytes (op, cp, &cg, cc, v,
                                             elem_bytes (graph, op, v));
          if (family)
            {
              th = operand_tprod (hp, op->n_dims, v);
              rho = (double) operand_tprod (cp, op->n_dims, v) / th;
              if (rho <= 1)
                continue;
              /* Each tile fetches the rho - 1 parts it lacks from tiles of
               * its own copy group. */
              rx = (rho - 1) * cold_piece;
              peers = (double) operand_replicas (op, hp, v) / th;
              in_rx += rx;
              in_tx += rx;
              in_total += rx * g->cores;
              if (peers > 1)
                in_xchip += rx * group_stats (g, operand_mask (op, v), th,
                                              m->tiles_per_chip, m->chips,
                                              NULL)
                            / (peers - 1);
            }
          else
            {
              /* Unrelated layouts: the whole execute piece is fetched from
               * the tiles that hold the preload layout. */
              double n_src = cg.cores;

              rx = (double) piece[v];
              in_rx += rx;
              in_total += rx * g->cores;
              in_tx += rx * g->cores / n_src;
              in_xchip += gather_xchip (m, graph, op, hp, order, v, op, cp,
                                        order, v);
            }
        }
    }
  if (in_rx > 0)
    {
      push_phase_fx (m, ph, PH_SYNC, WHAT_SYNC, sync + m->exchange_cycles, 0, 0,
                     0, 1);
      push_phase_fx (m, ph, PH_EXCHANGE, WHAT_INPUT, in_rx, in_tx, in_total,
                     in_xchip, 1);
    }
  /* Without the emulated distribution: the cost model's warm-up
   * (t10-plan-space.md §2.4 item 6), its bytes through the ports and
   * its syncs (rho per operand) as one fixed phase. */
  if (preloaded && cold_mask != 0 && !(m->effects & IPU_FX_DISTRIBUTION)
      && lw->cost != NULL && lw->cost->warmup_s > 0)
    {
      double bytes = lw->cost->warmup_noc_bytes / MAX (cp->cores_used, 1u);
      double fixed = lw->cost->warmup_s * m->clock_hz
                     - bytes * m->kernel.shift_cycles_per_byte;

      push_phase_fx (m, ph, PH_SYNC, WHAT_SYNC, MAX (fixed, 0.0), 0, 0, 0, 1);
      if (bytes > 0)
        push_phase_fx (m, ph, PH_EXCHANGE, WHAT_INPUT, bytes, bytes,
                       bytes * cp->cores_used, 0, 1);
    }
}

/* The compute-shift steps.  Per loop dimension, the gcd rounds of the
 * rotation factors; all rounds nest with the most bytes outermost. */
static void
lower_steps (Lowering *lw)
{
  const IpuMachine *m = lw->m;
  const ElkGraph *graph = lw->graph;
  const ElkOp *op = lw->op;
  const ElkPlan *hp = lw->hp;
  const Grid *g = &lw->g;
  const guint64 *piece = lw->piece;
  const double sync = lw->sync;
  GArray *ph = lw->ph;
  Round rounds[ELK_MAX_DIMS * ELK_MAX_OPERANDS];
  guint n_rounds = 0;
  guint64 steps = 1, st[ELK_MAX_DIMS];
  double kc, own = 1, arriving = 1, held_rows = 0;
  gboolean fused = is_fused_norm (op);

  if (fused)
    fused_norm_pieces (op, hp, g, &own, &arriving, &held_rows);
  for (guint d = 0; d < op->n_dims; d++)
    {
      guint32 left[ELK_MAX_OPERANDS], mx = 1;

      for (guint v = 0; v < op->n_operands; v++)
        {
          left[v] = hp->temporal[d][v];
          mx = MAX (mx, left[v]);
        }
      steps *= mx;
      st[d] = ceil_div (g->sl[d], mx);
      for (;;)
        {
          guint32 gg = 0;
          guint8 mask = 0;
          double b = 0;
          guint j;

          for (guint v = 0; v < op->n_operands; v++)
            if (left[v] > 1)
              {
                gg = gcd32 (gg, left[v]);
                mask |= (guint8) (1u << v);
                b += (double) piece[v];
              }
          /* A fused RMSNorm's x piece travels scaled, with its rows' sums
           * of squares (fused_norm_pieces). */
          if (mask & 2u)
            b += held_rows * elem_bytes (graph, op, 1);
          if (mask == 0 || gg <= 1)
            break;
          j = n_rounds++;
          while (j > 0 && rounds[j - 1].bytes < b)
            {
              rounds[j] = rounds[j - 1];
              j--;
            }
          rounds[j] = (Round){ b, gg - 1, mask };
          for (guint v = 0; v < op->n_operands; v++)
            if (left[v] > 1)
              left[v] /= gg;
        }
    }
  kc = kernel_cycles (m, graph, op, st);
  /* A fused RMSNorm-MatMul's prologue: the tile's own x step pieces, each
   * once, then one add of the rows' sums of squares per piece that
   * arrives by rotation (fused_norm_pieces); the same total as the plan's
   * cost model, in one phase before the steps. */
  if (fused)
    push_phase (ph, PH_COMPUTE, WHAT_STEP,
                own * fused_norm_prologue_cycles (m, op, st)
                    + (arriving - 1) * ew_cycles (&m->kernel, held_rows),
                0, 0, 0);
  {
    double rxc[ELK_MAX_DIMS * ELK_MAX_OPERANDS];
    guint32 digit[ELK_MAX_DIMS * ELK_MAX_OPERANDS];

    for (guint r = 0; r < n_rounds; r++)
      {
        rxc[r] = 0;
        digit[r] = 0;
        for (guint v = 0; v < op->n_operands; v++)
          if (rounds[r].mask & (1u << v))
            rxc[r] += (double) piece[v]
                      * ring_cross (g, operand_mask (op, v),
                                    operand_tprod (hp, op->n_dims, v),
                                    m->tiles_per_chip);
      }
    for (guint64 s = 0; s < steps; s++)
      {
        gint r;

        push_phase (ph, PH_COMPUTE, WHAT_STEP, kc, 0, 0, 0);
        if (s + 1 == steps)
          break;
        /* The odometer: the innermost round that has shifts left
         * advances, the rounds inside it start over. */
        for (r = (gint) n_rounds - 1; r >= 0; r--)
          {
            if (digit[r] < rounds[r].shifts)
              {
                digit[r]++;
                break;
              }
            digit[r] = 0;
          }
        if (r < 0)
          break;
        if (m->effects & IPU_FX_SYNCS)
          push_phase_fx (m, ph, PH_SYNC, WHAT_SYNC, sync + m->exchange_cycles,
                         0, 0, 0, lw->mc);
        else
          /* The cost model's shift event: syncs_per_shift syncs for each
           * operand the round moves. */
          push_phase_fx (m, ph, PH_SYNC, WHAT_SYNC,
                         (double) __builtin_popcount (rounds[r].mask)
                             * m->kernel.syncs_per_shift
                             * m->kernel.sync_cycles,
                         0, 0, 0, lw->mc);
        push_phase_fx (m, ph, PH_EXCHANGE, WHAT_SHIFT, rounds[r].bytes,
                       rounds[r].bytes, rounds[r].bytes * g->cores, rxc[r],
                       lw->mc);
      }
  }
}

/* Partial sums the rotation did not consume: each group of r copies of
 * an output piece reduce-scatters it (every tile receives (r - 1)/r of
 * a piece) and adds r partials of its 1/r. */
static void
lower_partial_sums (Lowering *lw)
{
  const IpuMachine *m = lw->m;
  const ElkGraph *graph = lw->graph;
  const ElkOp *op = lw->op;
  const ElkPlan *hp = lw->hp;
  const Grid *g = &lw->g;
  const guint64 *piece = lw->piece;
  const double sync = lw->sync;
  GArray *ph = lw->ph;


  if (op->kind != ELK_OP_ELEMENTWISE && op->kind != ELK_OP_UNARY
      && op->kind != ELK_OP_POOL)
    {
      guint32 t0 = operand_tprod (hp, op->n_dims, 0);
      guint32 r = operand_replicas (op, hp, 0) / MAX (t0, 1u);
      double eb = elem_bytes (graph, op, 0);
      /* A fused norm's row sums (and a LayerNorm's gᵀW and bᵀW rows)
       * travel with the partial sums. */
      double psum
          = (double) piece[0]
            + (is_fused_norm (op) && eb > 0
                   ? fused_norm_extra (op, hp, g, (double) piece[0] / eb) * eb
                   : 0);

      if (r > 1)
        {
          double rx = psum * (r - 1) / r;
          double cross = group_stats (g, operand_mask (op, 0), t0,
                                      m->tiles_per_chip, m->chips, NULL);
          double out_elems = eb > 0 ? psum / eb : 0;

          if (m->reduce_stepwise)
            {
              /* Stepwise: r - 1 supersteps, each bringing one more 1/r
               * chunk of partial sums into every tile, then one reduce
               * over the r partials.  Same bytes as the direct form but
               * r - 1 syncs: the shape of T10's shuffle cost ("r syncs +
               * output shift + a reduce over r partials"). */
              double chunk = psum / r;
              for (guint32 k = 1; k < r; k++)
                {
                  push_phase_fx (m, ph, PH_SYNC, WHAT_SYNC,
                                 sync + m->exchange_cycles, 0, 0, 0, lw->mc);
                  push_phase_fx (m, ph, PH_EXCHANGE, WHAT_REDUCE, chunk, chunk,
                                 chunk * g->cores, cross * chunk / (r - 1),
                                 lw->mc);
                }
              push_phase (ph, PH_COMPUTE, WHAT_REDUCE,
                          reduce_cycles (&m->kernel, ceil (out_elems / r), r),
                          0, 0, 0);
            }
          else
            {
              push_phase_fx (m, ph, PH_SYNC, WHAT_SYNC,
                             sync + m->exchange_cycles, 0, 0, 0, lw->mc);
              push_phase_fx (m, ph, PH_EXCHANGE, WHAT_REDUCE, rx, rx,
                             rx * g->cores, cross * psum / r, lw->mc);
              push_phase (ph, PH_COMPUTE, WHAT_REDUCE,
                          reduce_cycles (&m->kernel, ceil (out_elems / r), r),
                          0, 0, 0);
            }
        }
    }
}

/* A fused RMSNorm-MatMul's epilogue, after the partial sums are reduced:
 * each tile takes the rsqrt of its rows' sums of squares and scales the
 * 1/r of the output it ends with.  A LayerNorm's first rebuilds the
 * rsqrt's argument from its rows' two sums (one element-wise pass over
 * the rows) and ends with three element-wise passes, r (acc - Σx gᵀW) +
 * bᵀW; a softmax's divides each element by its row's sum (one
 * element-wise pass), as the plan's cost model prices them. */
static void
lower_fused_norm_epilogue (Lowering *lw)
{
  const ElkOp *op = lw->op;
  const ElkCostCoeffs *k = &lw->m->kernel;
  guint32 t0 = operand_tprod (lw->hp, op->n_dims, 0);
  double r = MAX (operand_replicas (op, lw->hp, 0) / MAX (t0, 1u), 1u);
  double eb = elem_bytes (lw->graph, op, 0);
  double out_elems = eb > 0 ? (double) lw->piece[0] / eb : 0;

  if (!is_fused_norm (op))
    return;
  if (is_fused_layer (op))
    {
      double rows = fused_norm_rows (op, lw->hp, &lw->g);
      push_phase (lw->ph, PH_COMPUTE, WHAT_STEP,
                  ew_cycles (k, rows / r) + k->unary_slope * rows / r
                      + k->unary_fixed + 3 * ew_cycles (k, out_elems / r),
                  0, 0, 0);
      return;
    }
  if (is_fused_softmax (op))
    {
      push_phase (lw->ph, PH_COMPUTE, WHAT_STEP, ew_cycles (k, out_elems / r),
                  0, 0, 0);
      return;
    }
  push_phase (lw->ph, PH_COMPUTE, WHAT_STEP,
              k->unary_slope * fused_norm_rows (op, lw->hp, &lw->g) / r
                  + k->unary_fixed + ew_cycles (k, out_elems / r),
              0, 0, 0);
}

/* Without the emulated reduction: the cost model's shuffle after the
 * operator (t10-plan-space.md §2.4 item 3: the output's re-layout, its
 * syncs, the partial-sum gather and reduce), read from the execute plan
 * the validator checked.  Its bytes go through the ports; its syncs and
 * reduce kernel are one fixed phase. */
static void
lower_shuffle (Lowering *lw)
{
  const IpuMachine *m = lw->m;
  const ElkPlan *hp = lw->hp;
  double bytes = 0, fixed;

  /* noc_bytes is (shift + shuffle bytes) x cores; rounding leaves dust. */
  if (hp->cores_used > 0)
    bytes = hp->noc_bytes / hp->cores_used - hp->shift_bytes;
  if (bytes < 1e-6)
    bytes = 0;
  fixed = hp->shuffle_s * m->clock_hz
              / (hp->cores_used > m->tiles_per_chip ? m->kernel.multichip_factor
                                                    : 1)
          - bytes * m->kernel.shift_cycles_per_byte;
  if (bytes > 0)
    push_phase_fx (m, lw->ph, PH_EXCHANGE, WHAT_REDUCE, bytes, bytes,
                   bytes * lw->g.cores, 0, lw->mc);
  push_phase_fx (m, lw->ph, PH_SYNC, WHAT_SYNC, MAX (fixed, 0.0), 0, 0, 0,
                 lw->mc);
}

static Lowered *
lower_op_mapped (const IpuMachine *m,
                 const ElkGraph *graph,
                 guint i,
                 const ElkProgramOp *pop,
                 gboolean preloaded,
                 ElkProgram *program,
                 const gint *producer,
                 const guint8 (*orders)[ELK_MAX_DIMS],
                 const guint8 *order,
                 GError **error)
{
  Lowering lw = { 0 };
  const ElkOp *op = elk_graph_get_op (graph, i);
  Lowered *L;
  guint32 c0[ELK_MAX_DIMS] = { 0 };
  g_autofree double *cons = g_new (double, m->chips);

  lw.m = m;
  lw.graph = graph;
  lw.i = i;
  lw.op = op;
  lw.hp = &pop->exec_plan;
  lw.cp = &pop->preload_plan;
  lw.preloaded = preloaded;
  lw.program = program;
  lw.producer = producer;
  lw.orders = orders;
  lw.order = order;

  if (!check_plan (m, op, lw.hp, "execute-state", error))
    return NULL;
  for (guint v = 1; v < op->n_operands; v++)
    if (is_hbm_operand (graph, op, v))
      lw.cold_mask |= 1u << v;
  if (preloaded && lw.cold_mask != 0
      && !check_plan (m, op, lw.cp, "preload-state", error))
    return NULL;

  L = lw.L = g_new0 (Lowered, 1);
  memcpy (L->order, order, sizeof (L->order));
  grid_init (&lw.g, op, lw.hp, order);
  L->cores = lw.g.cores;
  lw.sync = sync_cycles (m, lw.g.cores);
  for (guint v = 0; v < op->n_operands; v++)
    lw.piece[v] = piece_bytes (op, lw.hp, &lw.g, c0, v,
                               elem_bytes (graph, op, v));
  tile_bytes_build (graph, op, lw.hp, order, (1u << op->n_operands) - 1,
                    TRUE, &L->hot);
  L->chip_hbm = g_new0 (double, m->chips);
  chip_counts (m, lw.g.cores, cons);

  lw.cost = m->costs != NULL ? &m->costs[i] : NULL;
  lw.mc = !(m->effects & IPU_FX_IPU_LINKS) && lw.g.cores > m->tiles_per_chip
              ? m->kernel.multichip_factor
              : 1;

  lower_cold_layout (&lw);
  lw.ph = g_array_new (FALSE, FALSE, sizeof (Phase));
  lower_input (&lw);
  lower_steps (&lw);
  if (m->effects & IPU_FX_REDUCTION)
    {
      lower_partial_sums (&lw);
      push_phase_fx (m, lw.ph, PH_SYNC, WHAT_SYNC, lw.sync, 0, 0, 0, lw.mc);
    }
  else
    lower_shuffle (&lw);
  lower_fused_norm_epilogue (&lw);

  L->n_phases = lw.ph->len;
  L->phases = (Phase *) g_array_free (lw.ph, FALSE);
  return L;
}

/* What a lowering costs on an idle machine: every phase at its port,
 * link or kernel rate.  Used only to pick a tile mapping. */
static double
lowered_idle_s (const IpuMachine *m, const Lowered *L)
{
  double t = 0;

  for (guint k = 0; k < L->n_phases; k++)
    {
      const Phase *ph = &L->phases[k];
      if (ph->kind == PH_EXCHANGE)
        t += MAX (MAX (ph->work, ph->tx) * ph->scale / m->xchg_Bps,
                  ph->xchip / m->inter_chip_Bps);
      else
        t += ph->work / m->clock_hz;
    }
  return t;
}

static void lowered_free (gpointer data);

/* Lowers operator i with the tile mapping the machine's code generator
 * would use.  Sequential: every plan's parts in row-major order.  Aligned:
 * also each order that moves one split loop dimension outermost, keeping
 * the one whose supersteps are shortest on an idle machine (ties: the
 * earlier candidate, sequential first), given the mappings already chosen
 * for the producers.  Moving a dimension outermost decides which parts
 * share a chip, so this is what keeps an activation on the chip that
 * produced it when consecutive plans cut it differently. */
static Lowered *
lower_op (const IpuMachine *m,
          const ElkGraph *graph,
          guint i,
          const ElkProgramOp *pop,
          gboolean preloaded,
          ElkProgram *program,
          const gint *producer,
          const guint8 (*orders)[ELK_MAX_DIMS],
          GError **error)
{
  const ElkOp *op = elk_graph_get_op (graph, i);
  guint8 order[ELK_MAX_DIMS];
  Lowered *best = NULL;
  double best_s = INFINITY;

  for (guint d = 0; d < ELK_MAX_DIMS; d++)
    order[d] = (guint8) d;
  best = lower_op_mapped (m, graph, i, pop, preloaded, program, producer,
                          orders, order, error);
  if (best == NULL || !m->tile_mapping_aligned || m->chips < 2)
    return best;
  best_s = lowered_idle_s (m, best);
  /* Candidates 1 .. n_dims - 1: dimension c outermost.  Then one per
   * activation input with a producer: the tensor's axes in the order the
   * producer's mapping has them, then the dimensions the input does not
   * index (its replicas, kept close together). */
  for (guint c = 1; c < op->n_dims + op->n_operands; c++)
    {
      Lowered *L;
      double t;

      if (c < op->n_dims)
        {
          if (pop->exec_plan.spatial[c] < 2)
            continue;
          order[0] = (guint8) c;
          for (guint k = 1, e = 0; k < op->n_dims; e++)
            if (e != c)
              order[k++] = (guint8) e;
        }
      else
        {
          guint v = c - op->n_dims, k = 0;
          gint pi = v > 0 ? producer[op->tensors[v]] : -1;
          const ElkOp *prod;
          const ElkAccess *ca = &op->access[v], *pa;
          gboolean used[ELK_MAX_DIMS] = { FALSE };

          if (pi < 0 || pi >= (gint) i)
            continue;
          prod = elk_graph_get_op (graph, (guint) pi);
          pa = &prod->access[0];
          if (ca->n_axes != pa->n_axes)
            continue;
          for (guint pk = 0; pk < prod->n_dims; pk++)
            for (guint x = 0; x < pa->n_axes; x++)
              if (pa->dims[x][0] == orders[pi][pk] && ca->dims[x][0] >= 0
                  && !used[ca->dims[x][0]])
                {
                  used[ca->dims[x][0]] = TRUE;
                  order[k++] = (guint8) ca->dims[x][0];
                }
          for (guint e = 0; e < op->n_dims; e++)
            if (!used[e])
              order[k++] = (guint8) e;
        }
      L = lower_op_mapped (m, graph, i, pop, preloaded, program, producer,
                           orders, order, error);
      if (L == NULL)
        {
          lowered_free (best);
          return NULL;
        }
      t = lowered_idle_s (m, L);
      if (t < best_s)
        {
          lowered_free (best);
          best = L;
          best_s = t;
        }
      else
        lowered_free (L);
    }
  return best;
}

static void
lowered_free (gpointer data)
{
  Lowered *L = data;
  g_free (L->hot.tile);
  g_free (L->cold.tile);
  g_free (L->chip_hbm);
  g_free (L->phases);
  g_free (L);
}

/* ---- The event loop ---- */

typedef struct
{
  guint32 lo, hi;
  guint chip;
  gboolean in_exec, in_pre;
  double ex_left;   /* cycles or received bytes of the worst tile */
  double tx_left;
  double pre_left;  /* preload bytes the worst tile still expects */
  /* Rates of the current interval. */
  double pre_rate, ex_rate;
} Seg;

typedef struct
{
  const IpuMachine *m;
  Seg *segs, *old;
  guint n_segs, n_old;
  guint max_segs;
  guint64 *used;
  guint64 *hwm;
  guint64 capacity;
  IpuReport *report;
  /* Trace. */
  ElkTrace *trace;
  guint *tr_compute, *tr_exchange, *tr_hbm, *tr_tile;
  guint32 *tr_tile_id;
} Sim;

static guint
seg_find (const Seg *s, guint n, guint32 t)
{
  guint lo = 0, hi = n;
  while (hi - lo > 1)
    {
      guint mid = (lo + hi) / 2;
      if (s[mid].lo <= t)
        lo = mid;
      else
        hi = mid;
    }
  return lo;
}

static gint
cmp_u32 (gconstpointer a, gconstpointer b)
{
  guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;
  return x < y ? -1 : x > y;
}

/* Cuts the tiles at the chip boundaries and at the ends of the current
 * execute and preload.  A new segment inherits the worst remaining work of
 * the old segments it overlaps. */
static void
resegment (Sim *sim, guint32 exec_cores, guint32 pre_cores)
{
  const IpuMachine *m = sim->m;
  guint32 cuts[2048 + 4];
  guint n_cuts = 0, n = 0;
  Seg *tmp;

  tmp = sim->old;
  sim->old = sim->segs;
  sim->segs = tmp;
  sim->n_old = sim->n_segs;

  for (guint ch = 0; ch <= m->chips && n_cuts < 2048; ch++)
    cuts[n_cuts++] = ch * m->tiles_per_chip;
  if (exec_cores > 0 && exec_cores < m->tiles)
    cuts[n_cuts++] = exec_cores;
  if (pre_cores > 0 && pre_cores < m->tiles)
    cuts[n_cuts++] = pre_cores;
  qsort (cuts, n_cuts, sizeof (guint32), cmp_u32);
  for (guint k = 0; k + 1 < n_cuts; k++)
    {
      Seg *s;
      guint a, b;

      if (cuts[k] == cuts[k + 1])
        continue;
      s = &sim->segs[n++];
      memset (s, 0, sizeof (*s));
      s->lo = cuts[k];
      s->hi = cuts[k + 1];
      s->chip = s->lo / m->tiles_per_chip;
      s->in_exec = s->lo < exec_cores;
      s->in_pre = s->lo < pre_cores;
      if (sim->n_old == 0)
        continue;
      a = seg_find (sim->old, sim->n_old, s->lo);
      b = seg_find (sim->old, sim->n_old, s->hi - 1);
      for (guint o = a; o <= b; o++)
        {
          s->ex_left = MAX (s->ex_left, sim->old[o].ex_left);
          s->tx_left = MAX (s->tx_left, sim->old[o].tx_left);
          s->pre_left = MAX (s->pre_left, sim->old[o].pre_left);
        }
      if (!s->in_exec)
        s->ex_left = s->tx_left = 0;
      if (!s->in_pre)
        s->pre_left = 0;
    }
  sim->n_segs = n;
}

static gboolean
mem_apply (Sim *sim,
           const TileBytes *tb,
           gboolean alloc,
           const ElkGraph *graph,
           guint op,
           guint step,
           const char *what,
           GError **error)
{
  for (guint32 t = 0; t < tb->cores; t++)
    {
      guint64 b = tb->tile != NULL ? tb->tile[t] : tb->rep;
      if (!alloc)
        {
          sim->used[t] -= MIN (b, sim->used[t]);
          continue;
        }
      if (sim->used[t] + b > sim->capacity)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': tile %u (chip %u) overflows at "
                       "program step %u, %s of operator '%s': %"
                       G_GUINT64_FORMAT " B in use + %" G_GUINT64_FORMAT
                       " B requested > %" G_GUINT64_FORMAT " B of SRAM "
                       "(%" G_GUINT64_FORMAT " B per tile minus the %"
                       G_GUINT64_FORMAT " B receive buffer)", t,
                       t / sim->m->tiles_per_chip, step, what,
                       elk_graph_get_op (graph, op)->name, sim->used[t], b,
                       sim->capacity, sim->m->sram_bytes,
                       sim->m->recv_bytes);
          return FALSE;
        }
      sim->used[t] += b;
      if (sim->used[t] > sim->hwm[t])
        sim->hwm[t] = sim->used[t];
      if (sim->used[t] + sim->m->recv_bytes > sim->report->sram_hwm)
        {
          sim->report->sram_hwm = sim->used[t] + sim->m->recv_bytes;
          sim->report->sram_hwm_tile = t;
          sim->report->sram_hwm_op = op;
        }
    }
  return TRUE;
}

static void
trace_counters (Sim *sim, double t)
{
  if (sim->trace == NULL)
    return;
  for (guint k = 0; k < sim->m->trace_tiles; k++)
    elk_trace_add_counter (sim->trace, sim->tr_tile[k], "SRAM bytes", t,
                           (double) (sim->used[sim->tr_tile_id[k]]
                                     + sim->m->recv_bytes));
}

static void
trace_phase (Sim *sim, const ElkOp *op, const Phase *ph, guint32 cores,
             double t0, double t1)
{
  const IpuMachine *m = sim->m;
  char name[256];

  if (sim->trace == NULL || t1 <= t0)
    return;
  g_snprintf (name, sizeof (name), "%s %s", op->name, what_names[ph->what]);
  for (guint ch = 0; ch < m->chips; ch++)
    {
      if ((guint64) ch * m->tiles_per_chip >= cores)
        break;
      if (ph->kind == PH_COMPUTE)
        elk_trace_add_span (sim->trace, sim->tr_compute[ch], name, t0,
                            t1 - t0);
      else if (ph->kind == PH_EXCHANGE)
        elk_trace_add_span (sim->trace, sim->tr_exchange[ch], name, t0,
                            t1 - t0);
    }
  for (guint k = 0; k < m->trace_tiles; k++)
    if (sim->tr_tile_id[k] < cores && ph->kind != PH_SYNC)
      elk_trace_add_span (sim->trace, sim->tr_tile[k], name, t0, t1 - t0);
}

/* One line per finished execute, for people comparing the emulator with
 * the compiler (ELK_IPU_POD_DEBUG=1 G_MESSAGES_DEBUG=elk-ipu-pod). */
static void
debug_exec (const ElkGraph *graph, ElkProgram *program, guint i,
            const Lowered *L, double t0, double t1, const IpuMachine *m)
{
  const ElkProgramOp *pop = elk_program_peek_op (program, i);
  double comp = 0, xbytes = 0, syncs = 0;

  for (guint k = 0; k < L->n_phases; k++)
    {
      const Phase *ph = &L->phases[k];
      if (ph->kind == PH_COMPUTE)
        comp += ph->work;
      else if (ph->kind == PH_EXCHANGE)
        xbytes += ph->work;
      else
        syncs += ph->work;
    }
  g_debug ("execute %s: %.3f..%.3f us (%.3f us; free-running compute %.3f, "
           "exchange %.3f, syncs %.3f us; %u phases, %u tiles; compiler "
           "said %.3f + %.3f us)", elk_graph_get_op (graph, i)->name,
           t0 * 1e6, t1 * 1e6, (t1 - t0) * 1e6, comp / m->clock_hz * 1e6,
           xbytes / m->link_Bps * 1e6, syncs / m->clock_hz * 1e6,
           L->n_phases, L->cores, pop->est_exec_s * 1e6,
           pop->est_warmup_s * 1e6);
}

/* The state of one emulation: the program's order, the lowered operators
 * and the event loop's activities (the execute and the preload in flight).
 * The phases of elk__ipu_emulate share it. */
typedef struct
{
  const IpuMachine *m;
  ElkProgram *program;
  ElkGraph *graph;
  ElkTrace *trace;
  IpuReport *report;
  guint n_ops, n_steps;
  GHashTable *cache;
  Lowered **low;
  /* The tile mapping chosen for each operator (lower_op). */
  guint8 (*orders)[ELK_MAX_DIMS];
  gint *pre_step, *producer;
  guint *exec_step, *execs_before, *pre_order;
  gboolean *loaded;
  guint n_pre;
  Sim sim;
  double now;
  guint execs_done, next_pre_pos;
  /* The execute in flight. */
  gint ex_op;
  guint ex_phase, ex_step;
  double ex_start, ex_phase_start, ex_xchip_left;
  gboolean debug, debug_phases;
  /* With port sharing off: the preloads' interconnect time the execute
   * in flight has overlapped, and the analytic stall it then serves as
   * one more phase. */
  double ex_demand;
  gboolean ex_stalling;
  Phase stall_phase;
  /* The preload in flight, and the port share its program asked for. */
  gint pr_op;
  double pr_start, pr_deliver, pr_share;
  double breakdown[4]; /* pre, exec, overlap, stall */
  /* Per operator, ELK_TIME_N_COMPONENTS seconds: where its execution's
   * time went, and the time the chip waited for it to be able to start. */
  double *op_time;
  gboolean private_preload;
  /* Per operator: the graph's sampled routing does not take it, so its
   * execute is skipped (m->skipped_steps); NULL without conditions. */
  gboolean *skip_exec;
} Emu;

/* Checks the program's order and indexes it: each operator's preload and
 * execute steps, and the preloads in order. */
static gboolean
check_order (Emu *e, GError **error)
{
  ElkProgram *program = e->program;
  ElkGraph *graph = e->graph;
  const guint n_ops = e->n_ops, n_steps = e->n_steps;
  gint *pre_step = e->pre_step;
  guint *exec_step = e->exec_step, *execs_before = e->execs_before;
  guint *pre_order = e->pre_order;
  guint next_exec = 0;

  /* The program's order: preloads in program order (R2); each remembers
   * how many executes precede it (R1). */
  for (guint s = 0; s < n_steps; s++)
    {
      const ElkStep *step = elk_program_get_step (program, s);
      gboolean skipped = e->m->skipped_steps != NULL && e->m->skipped_steps[s];
      execs_before[s + 1] = execs_before[s];
      if (step->op >= n_ops)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': program step %u names operator %u, "
                       "the graph has %u", s, step->op, n_ops);
          return FALSE;
        }
      /* A preload the device skips (an untaken expert's, issued after its
       * router) never happens; its operator's execute is skipped too. */
      if (skipped && step->kind == ELK_STEP_PRELOAD)
        continue;
      if (step->kind == ELK_STEP_EXECUTE)
        {
          if (step->op != next_exec)
            {
              g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                           "chip 'ipu-pod': program step %u executes "
                           "operator '%s' but '%s' is next in graph order",
                           s, elk_graph_get_op (graph, step->op)->name,
                           elk_graph_get_op (graph, next_exec)->name);
              return FALSE;
            }
          if (skipped)
            e->skip_exec[step->op] = TRUE;
          else if (elk_op_get_hbm_bytes (graph,
                                         elk_graph_get_op (graph, step->op))
                       > 0
                   && pre_step[step->op] < 0)
            {
              g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                           "chip 'ipu-pod': program step %u executes "
                           "operator '%s', which reads HBM, before any "
                           "preload_async of it",
                           s, elk_graph_get_op (graph, step->op)->name);
              return FALSE;
            }
          exec_step[next_exec++] = s;
          execs_before[s + 1]++;
        }
      else
        {
          if (pre_step[step->op] >= 0 || step->op < next_exec)
            {
              g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                           "chip 'ipu-pod': program step %u preloads "
                           "operator '%s' again or after it executed", s,
                           elk_graph_get_op (graph, step->op)->name);
              return FALSE;
            }
          pre_step[step->op] = (gint) s;
          pre_order[e->n_pre++] = s;
        }
    }
  if (next_exec != n_ops)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                   "chip 'ipu-pod': the program executes %u of the graph's "
                   "%u operators", next_exec, n_ops);
      return FALSE;
    }
  return TRUE;
}

static gboolean
lower_all (Emu *e, GError **error)
{
  const IpuMachine *m = e->m;
  ElkProgram *program = e->program;
  ElkGraph *graph = e->graph;
  const guint n_ops = e->n_ops;
  GHashTable *cache = e->cache;
  Lowered **low = e->low;
  guint8 (*orders)[ELK_MAX_DIMS] = e->orders;
  const gint *pre_step = e->pre_step, *producer = e->producer;

  /* Lower every operator once per distinct (operator, plans). */
  for (guint i = 0; i < n_ops; i++)
    {
      const ElkOp *op = elk_graph_get_op (graph, i);
      const ElkProgramOp *pop = elk_program_peek_op (program, i);
      g_autofree char *sig = elk_op_dup_signature (graph, op);
      GString *key = g_string_new (sig);
      Lowered *L;

      for (guint d = 0; d < op->n_dims; d++)
        {
          g_string_append_printf (key, "/%u:%u", pop->exec_plan.spatial[d],
                                  pop->preload_plan.spatial[d]);
          for (guint v = 0; v < op->n_operands; v++)
            g_string_append_printf (key, ",%u.%u",
                                    pop->exec_plan.temporal[d][v],
                                    pop->preload_plan.temporal[d][v]);
        }
      g_string_append_printf (key, "|p%d", pre_step[i] >= 0);
      /* The layout of every activation input's producer. */
      for (guint v = 1; v < op->n_operands; v++)
        {
          gint prod = producer[op->tensors[v]];
          const ElkPlan *pp;
          g_autofree char *psig = NULL;

          if (prod < 0 || prod >= (gint) i)
            {
              g_string_append (key, "|in");
              continue;
            }
          pp = &elk_program_peek_op (program, prod)->exec_plan;
          psig = elk_op_dup_signature (graph, elk_graph_get_op (graph, prod));
          g_string_append_printf (key, "|%u:%s", v, psig);
          for (guint d = 0; d < pp->n_dims; d++)
            g_string_append_printf (key, ",%u@%u", pp->spatial[d],
                                    orders[prod][d]);
        }
      L = g_hash_table_lookup (cache, key->str);
      if (L == NULL)
        {
          L = lower_op (m, graph, i, pop, pre_step[i] >= 0, program,
                        producer, (const guint8 (*)[ELK_MAX_DIMS]) orders,
                        error);
          if (L == NULL)
            {
              g_string_free (key, TRUE);
              return FALSE;
            }
          g_hash_table_insert (cache, g_string_free (key, FALSE), L);
        }
      else
        g_string_free (key, TRUE);
      low[i] = L;
      memcpy (orders[i], L->order, sizeof (orders[i]));
    }
  return TRUE;
}

/* The simulator's tile segments and SRAM accounts, and the trace's
 * tracks. */
static void
init_sim (Emu *e)
{
  const IpuMachine *m = e->m;
  ElkTrace *trace = e->trace;
  IpuReport *report = e->report;
  g_autofree double *chip_tiles = g_new (double, m->chips);

  e->sim.m = m;
  e->sim.report = report;
  e->sim.max_segs = m->chips + 4;
  e->sim.segs = g_new0 (Seg, e->sim.max_segs);
  e->sim.old = g_new0 (Seg, e->sim.max_segs);
  e->sim.used = g_new0 (guint64, m->tiles);
  e->sim.hwm = g_new0 (guint64, m->tiles);
  e->sim.capacity = m->sram_bytes - m->recv_bytes;
  report->sram_hwm = m->recv_bytes;
  chip_counts (m, m->tiles, chip_tiles);

  if (trace != NULL)
    {
      e->sim.trace = trace;
      e->sim.tr_compute = g_new (guint, m->chips);
      e->sim.tr_exchange = g_new (guint, m->chips);
      e->sim.tr_hbm = g_new (guint, m->chips);
      e->sim.tr_tile = g_new (guint, MAX (m->trace_tiles, 1u));
      e->sim.tr_tile_id = g_new (guint32, MAX (m->trace_tiles, 1u));
      for (guint ch = 0; ch < m->chips; ch++)
        {
          char group[64];
          g_snprintf (group, sizeof (group), "chip %u", ch);
          e->sim.tr_compute[ch] = elk_trace_add_track (trace, group, "compute");
          e->sim.tr_exchange[ch]
              = elk_trace_add_track (trace, group, "exchange");
          e->sim.tr_hbm[ch] = elk_trace_add_track (trace, group, "HBM");
        }
      for (guint k = 0; k < m->trace_tiles; k++)
        {
          char name[64];
          guint32 t = (guint32) ((guint64) k * m->tiles
                                 / MAX (m->trace_tiles, 1u));
          g_snprintf (name, sizeof (name), "tile %u", t);
          e->sim.tr_tile_id[k] = t;
          e->sim.tr_tile[k] = elk_trace_add_track (trace, "tiles", name);
        }
    }
}

/* The phase the execute in flight is in: one of its own, or after them
 * the analytic stall. */
static const Phase *
exec_phase (const Emu *e)
{
  const Lowered *L = e->low[e->ex_op];

  return e->ex_phase < L->n_phases ? &L->phases[e->ex_phase] : &e->stall_phase;
}

/* With port sharing off, an execute that has run all its phases waits as
 * the analytic chip's delay-execution model says (elk-timeline.c): its
 * interconnect demand (the analytic noc_s) gets only the time the
 * overlapping preloads left idle, and the rest is a stall.  Returns
 * whether there is one; it then runs as a phase of fixed cycles. */
static gboolean
begin_stall (Emu *e)
{
  const IpuMachine *m = e->m;
  double stall;

  if ((m->effects & IPU_FX_PORT_SHARING) || m->costs == NULL)
    return FALSE;
  stall = m->costs[e->ex_op].noc_s - ((e->now - e->ex_start) - e->ex_demand);
  if (stall * m->clock_hz <= EPS_CYCLES)
    return FALSE;
  e->stall_phase
      = (Phase){ PH_SYNC, WHAT_SYNC, stall * m->clock_hz, 0, 0, 0, 1 };
  e->ex_stalling = TRUE;
  e->report->analytic_stall_s += stall;
  e->ex_xchip_left = 0;
  for (guint k = 0; k < e->sim.n_segs; k++)
    if (e->sim.segs[k].in_exec)
      {
        e->sim.segs[k].ex_left = e->stall_phase.work;
        e->sim.segs[k].tx_left = 0;
      }
  return TRUE;
}

/* If the preload in flight has delivered its last byte, sets its tags
 * (the operator is loaded), records its span and sets *@changed. */
static gboolean
finish_preload (Emu *e, gboolean *changed, GError **error)
{
  const IpuMachine *m = e->m;
  ElkGraph *graph = e->graph;
  Lowered **low = e->low;
  gint op = e->pr_op;

  if (op < 0 || e->now < e->pr_deliver)
    return TRUE;
  for (guint k = 0; k < e->sim.n_segs; k++)
    if (e->sim.segs[k].in_pre && e->sim.segs[k].pre_left > EPS_BYTES)
      return TRUE;

  if (e->trace != NULL)
    for (guint ch = 0; ch < m->chips; ch++)
      if (low[op]->chip_hbm[ch] > 0)
        elk_trace_add_span (e->trace, e->sim.tr_hbm[ch],
                            elk_graph_get_op (graph, op)->name, e->pr_start,
                            e->now - e->pr_start);
  if (e->debug)
    g_debug ("preload %s: %.3f..%.3f us (%.3f us), %.0f B "
             "per tile on %u tiles, %.0f B from HBM",
             elk_graph_get_op (graph, op)->name, e->pr_start * 1e6,
             e->now * 1e6, (e->now - e->pr_start) * 1e6,
             (double) low[op]->cold.rep, low[op]->cold.cores,
             low[op]->hbm_total);
  e->loaded[op] = TRUE;
  /* A wasted speculative preload that lands after its operator's
   * (skipped) execute position frees its space now. */
  if (e->skip_exec != NULL && e->skip_exec[op] && e->execs_done > (guint) op
      && !mem_apply (&e->sim, &low[op]->cold, FALSE, graph, (guint) op,
                     e->exec_step[op], "skipped execute", error))
    return FALSE;
  e->pr_op = -1;
  *changed = TRUE;
  return TRUE;
}

/* Starts whatever the rules allow at this instant: the execute in flight
 * moves to its next phase, the preload in flight sets its tags, and the
 * next preload (R1, R2) and the next execute (R1, R3) start. */
static gboolean
start_activities (Emu *e, GError **error)
{
  const IpuMachine *m = e->m;
  ElkProgram *program = e->program;
  ElkGraph *graph = e->graph;
  IpuReport *report = e->report;
  const guint n_ops = e->n_ops;
  Lowered **low = e->low;
  const gint *pre_step = e->pre_step;
  const guint *exec_step = e->exec_step, *execs_before = e->execs_before;
  const guint *pre_order = e->pre_order;
  gboolean *loaded = e->loaded;
  const gboolean debug = e->debug, debug_phases = e->debug_phases;
  gboolean changed = TRUE;

  while (changed)
    {
      changed = FALSE;

      /* The execute in flight finished its phase: on to the next. */
      if (e->ex_op >= 0)
        {
          gboolean done = e->ex_xchip_left <= EPS_BYTES;
          for (guint k = 0; k < e->sim.n_segs && done; k++)
            if (e->sim.segs[k].in_exec
                && (e->sim.segs[k].ex_left > EPS_BYTES
                    || e->sim.segs[k].tx_left > EPS_BYTES))
              done = FALSE;
          if (done)
            {
              const Lowered *L = low[e->ex_op];
              const Phase *cur = exec_phase (e);

              trace_phase (&e->sim, elk_graph_get_op (graph, e->ex_op), cur,
                           L->cores, e->ex_phase_start, e->now);
              if (debug_phases)
                g_debug ("  phase %u %s: %.3f us, work %.6g tx %.6g "
                         "xchip %.6g",
                         e->ex_phase, what_names[cur->what],
                         (e->now - e->ex_phase_start) * 1e6, cur->work, cur->tx,
                         cur->xchip);
              if (cur->kind == PH_EXCHANGE)
                {
                  report->exchange_bytes += cur->rx_total;
                  report->xchip_bytes += cur->xchip;
                }
              report->n_supersteps += cur->kind == PH_SYNC && !e->ex_stalling;
              e->ex_phase++;
              if (e->ex_phase == L->n_phases && begin_stall (e))
                ; /* the analytic stall runs as one more phase */
              else if (e->ex_phase >= L->n_phases)
                {
                  if (debug)
                    debug_exec (graph, program, e->ex_op, L, e->ex_start,
                                e->now, m);
                  if (!mem_apply (&e->sim, &L->hot, FALSE, graph, e->ex_op,
                                  e->ex_step, "end of execute", error))
                    return FALSE;
                  trace_counters (&e->sim, e->now);
                  e->ex_op = -1;
                  e->ex_stalling = FALSE;
                  e->execs_done++;
                }
              else
                {
                  const Phase *np = &L->phases[e->ex_phase];
                  e->ex_phase_start = e->now;
                  e->ex_xchip_left = np->kind == PH_EXCHANGE ? np->xchip : 0;
                  for (guint k = 0; k < e->sim.n_segs; k++)
                    if (e->sim.segs[k].in_exec)
                      {
                        e->sim.segs[k].ex_left = np->work;
                        e->sim.segs[k].tx_left = np->tx;
                      }
                }
              changed = TRUE;
            }
        }

      /* The preload in flight delivered its last byte: tags set. */
      if (!finish_preload (e, &changed, error))
        return FALSE;

      /* The next preload: after the previous one (R2) and after every
       * execute issued before it (R1). */
      if (e->pr_op < 0 && e->next_pre_pos < e->n_pre
          && e->execs_done >= execs_before[pre_order[e->next_pre_pos]])
        {
          guint s = pre_order[e->next_pre_pos++];
          guint j = elk_program_get_step (program, s)->op;
          const Lowered *L = low[j];

          if (!mem_apply (&e->sim, &L->cold, TRUE, graph, j, s, "preload_async",
                          error))
            return FALSE;
          trace_counters (&e->sim, e->now);
          e->pr_op = (gint) j;
          e->pr_start = e->now;
          e->pr_deliver
              = e->now
                + (L->cold.rep > 0 && (m->effects & IPU_FX_HBM_LATENCY)
                       ? m->hbm_latency_s
                       : 0);
          e->pr_share = elk_program_peek_op (program, j)->preload_share;
          changed = TRUE;
          resegment (&e->sim, e->ex_op >= 0 ? low[e->ex_op]->cores : 0,
                     L->cold.cores);
          for (guint k = 0; k < e->sim.n_segs; k++)
            if (e->sim.segs[k].in_pre)
              e->sim.segs[k].pre_left = (double) L->cold.rep;
        }

      /* An execute the device skips (an expert the routing does not
       * take) takes no time; the space of its speculative preload, held
       * until here, is freed, or when the preload lands if it has not. */
      if (e->ex_op < 0 && e->execs_done < n_ops && e->skip_exec != NULL
          && e->skip_exec[e->execs_done])
        {
          guint i = e->execs_done;
          if (pre_step[i] >= 0 && loaded[i]
              && !mem_apply (&e->sim, &low[i]->cold, FALSE, graph, i,
                             exec_step[i], "skipped execute", error))
            return FALSE;
          e->execs_done++;
          changed = TRUE;
          continue;
        }

      /* The next execute: after the previous one (R1) and its own
       * preload's tags (R3). */
      if (e->ex_op < 0 && e->execs_done < n_ops
          && (pre_step[e->execs_done] < 0 || loaded[e->execs_done]))
        {
          guint i = e->execs_done;
          const Lowered *L = low[i];
          guint s = exec_step[i];
          if (pre_step[i] >= 0
              && !mem_apply (&e->sim, &L->cold, FALSE, graph, i, s, "execute",
                             error))
            return FALSE;
          if (!mem_apply (&e->sim, &L->hot, TRUE, graph, i, s,
                          "execute (execution space)", error))
            return FALSE;
          trace_counters (&e->sim, e->now);
          e->ex_op = (gint) i;
          e->ex_step = s;
          e->ex_start = e->now;
          e->ex_phase = 0;
          e->ex_phase_start = e->now;
          e->ex_xchip_left = 0;
          e->ex_demand = 0;
          e->ex_stalling = FALSE;
          changed = TRUE;
          resegment (&e->sim, L->cores,
                     e->pr_op >= 0 ? low[e->pr_op]->cold.cores : 0);
          e->ex_xchip_left
              = L->phases[0].kind == PH_EXCHANGE ? L->phases[0].xchip : 0;
          for (guint k = 0; k < e->sim.n_segs; k++)
            if (e->sim.segs[k].in_exec)
              {
                e->sim.segs[k].ex_left = L->phases[0].work;
                e->sim.segs[k].tx_left = L->phases[0].tx;
              }
        }
    }
  return TRUE;
}

/* The rates of the activities in flight during @ph (NULL when no execute
 * is in flight), the time @dt to the next event and the share @stall_frac
 * of its time the execute loses to the preload. */
static void
set_rates (Emu *e, const Phase *ph, double *dt_out, double *stall_out)
{
  const IpuMachine *m = e->m;
  Lowered **low = e->low;
  const gboolean private_preload = e->private_preload;
  double dt = INFINITY, stall_frac = 0;

  /* Rates.  The preload stream asks a tile's whole receive port, or
   * half of it while the exchange also has data for that tile; the
   * chip's controllers scale every stream of the chip down to the
   * chip's HBM bandwidth. */
  {
    const Lowered *P = e->pr_op >= 0 ? low[e->pr_op] : NULL;
    gboolean delivering = P != NULL && e->now >= e->pr_deliver;
    double chip_hbm_Bps = m->hbm_Bps / m->chips;

    for (guint k = 0; k < e->sim.n_segs; k++)
      {
        Seg *s = &e->sim.segs[k];
        gboolean ex_rx = ph != NULL && s->in_exec && ph->kind == PH_EXCHANGE
                         && s->ex_left > 0;
        s->pre_rate = 0;
        if (delivering && s->in_pre && s->pre_left > 0)
          {
            s->pre_rate = ex_rx && !private_preload
                                  && (m->effects & IPU_FX_PORT_SHARING)
                              ? m->link_Bps / 2
                              : m->link_Bps;
            /* The analytic chip runs a preload at the share of the port
             * its program asked for. */
            if (!(m->effects & IPU_FX_UNTHROTTLED))
              s->pre_rate = MIN (s->pre_rate, m->link_Bps * e->pr_share);
          }
      }
    if (delivering && !(m->effects & IPU_FX_HBM_CHIPS) && P->hbm_graph > 0
        && P->cold.rep > 0)
      {
        /* One pooled HBM that reads the graph's bytes once, as the
         * analytic load model has it. */
        double need = 0;
        double kappa = P->hbm_graph / ((double) P->cold.rep * P->cold.cores);

        for (guint k = 0; k < e->sim.n_segs; k++)
          need += e->sim.segs[k].pre_rate * kappa
                  * (e->sim.segs[k].hi - e->sim.segs[k].lo);
        if (need > m->hbm_Bps)
          for (guint k = 0; k < e->sim.n_segs; k++)
            e->sim.segs[k].pre_rate *= m->hbm_Bps / need;
      }
    else if (delivering && (m->effects & IPU_FX_HBM_CHIPS))
      for (guint ch = 0; ch < m->chips; ch++)
        {
          double need = 0, kappa, cold_tiles;
          cold_tiles = MIN ((double) P->cold.cores,
                            (double) (ch + 1) * m->tiles_per_chip)
                       - (double) ch * m->tiles_per_chip;
          if (cold_tiles <= 0 || P->chip_hbm[ch] <= 0)
            continue;
          /* HBM bytes per byte the worst tile of this chip receives. */
          kappa = P->chip_hbm[ch] / ((double) P->cold.rep * cold_tiles);
          for (guint k = 0; k < e->sim.n_segs; k++)
            if (e->sim.segs[k].chip == ch)
              need += e->sim.segs[k].pre_rate * kappa
                      * (e->sim.segs[k].hi - e->sim.segs[k].lo);
          if (need > chip_hbm_Bps)
            for (guint k = 0; k < e->sim.n_segs; k++)
              if (e->sim.segs[k].chip == ch)
                e->sim.segs[k].pre_rate *= chip_hbm_Bps / need;
        }
    for (guint k = 0; k < e->sim.n_segs; k++)
      {
        Seg *s = &e->sim.segs[k];
        double free_rate = 1, slow;

        s->ex_rate = 0;
        if (ph != NULL && s->in_exec && s->ex_left > 0)
          {
            switch ((PhaseKind) ph->kind)
              {
              case PH_SYNC:
                s->ex_rate = m->clock_hz;
                free_rate = s->ex_rate;
                break;
              case PH_COMPUTE:
                /* Bytes landing in the tile's SRAM take its port from
                 * the compute pipeline. */
                free_rate = m->clock_hz;
                s->ex_rate = m->clock_hz;
                if (m->effects & IPU_FX_SRAM_PORT)
                  s->ex_rate = m->clock_hz
                               * MAX (0.0, 1
                                               - s->pre_rate
                                                     / (m->sram_port_Bpc
                                                        * m->clock_hz));
                break;
              case PH_EXCHANGE:
                free_rate = m->xchg_Bps / ph->scale;
                s->ex_rate
                    = private_preload || !(m->effects & IPU_FX_PORT_SHARING)
                          ? free_rate
                          : MIN (free_rate, m->link_Bps - s->pre_rate);
                break;
              }
            slow = 1 - s->ex_rate / free_rate;
            stall_frac = MAX (stall_frac, slow);
            if (s->ex_rate > 0)
              dt = MIN (dt, s->ex_left / s->ex_rate);
          }
        if (ph != NULL && s->in_exec && s->tx_left > 0)
          dt = MIN (dt, s->tx_left / (m->xchg_Bps / ph->scale));
        if (s->pre_rate > 0)
          dt = MIN (dt, s->pre_left / s->pre_rate);
      }
    if (ph != NULL && e->ex_xchip_left > 0)
      dt = MIN (dt, e->ex_xchip_left / m->inter_chip_Bps);
    if (P != NULL && !delivering)
      dt = MIN (dt, e->pr_deliver - e->now);
  }
  *dt_out = dt;
  *stall_out = stall_frac;
}

/* Accounts @dt to an operator's cell of the execution-time breakdown:
 * the execute in flight's phase (its share lost to a busy port, and its
 * analytic stall phase, as stall), or, when nothing executes, the wait of
 * the next operator to execute.  Every dt goes to exactly one operator,
 * so the cells add up to the latency. */
static void
account_op_time (Emu *e, const Phase *ph, double dt, double stall_frac)
{
  double *t;

  if (e->ex_op >= 0)
    {
      t = &e->op_time[(gsize) e->ex_op * ELK_TIME_N_COMPONENTS];
      if (e->ex_stalling)
        t[ELK_TIME_STALL] += dt;
      else
        {
          t[ELK_TIME_STALL] += dt * stall_frac;
          t[what_component[ph->what]] += dt * (1 - stall_frac);
        }
      return;
    }
  /* A preload still running after the last execute cannot happen in a
   * valid program (every preload precedes its execute); were it to, its
   * time would go to the last operator's wait. */
  t = &e->op_time[(gsize) MIN (e->execs_done, e->n_ops - 1)
                  * ELK_TIME_N_COMPONENTS];
  t[ELK_TIME_PRELOAD_WAIT] += dt;
}

/* Accounts @dt to the report and the Fig 18 breakdown, and advances
 * every activity by it. */
static void
advance (Emu *e, const Phase *ph, double dt, double stall_frac)
{
  const IpuMachine *m = e->m;
  IpuReport *report = e->report;
  Lowered **low = e->low;

  /* Where the execute's time goes, for the report: its phase, and
   * whether an exchange only waits for the IPU-Links. */
  if (ph != NULL && !e->ex_stalling)
    {
      gboolean ports_busy = FALSE;
      for (guint k = 0; k < e->sim.n_segs && !ports_busy; k++)
        if (e->sim.segs[k].in_exec
            && (e->sim.segs[k].ex_left > EPS_BYTES
                || e->sim.segs[k].tx_left > EPS_BYTES))
          ports_busy = TRUE;
      report->phase_s[ph->what] += dt;
      if (ph->kind == PH_EXCHANGE && !ports_busy
          && e->ex_xchip_left > EPS_BYTES)
        report->xchip_wait_s += dt;
    }

  /* With port sharing off: the preloads' share of the interconnect
   * while this execute runs, as the analytic chip counts it. */
  if (ph != NULL && !e->ex_stalling && !(m->effects & IPU_FX_PORT_SHARING))
    {
      double occupancy = 0;
      for (guint k = 0; k < e->sim.n_segs; k++)
        occupancy = MAX (occupancy, e->sim.segs[k].pre_rate / m->link_Bps);
      e->ex_demand += occupancy * dt;
    }

  /* Advance every activity by dt. */
  {
    const Lowered *P = e->pr_op >= 0 ? low[e->pr_op] : NULL;
    for (guint k = 0; k < e->sim.n_segs; k++)
      {
        Seg *s = &e->sim.segs[k];
        double n = s->hi - s->lo;

        if (s->ex_rate > 0)
          {
            s->ex_left -= s->ex_rate * dt;
            if (s->ex_left < EPS_BYTES)
              s->ex_left = 0;
          }
        if (ph != NULL && s->in_exec && s->tx_left > 0)
          {
            s->tx_left -= m->xchg_Bps / ph->scale * dt;
            if (s->tx_left < EPS_BYTES)
              s->tx_left = 0;
          }
        if (s->pre_rate > 0)
          {
            double got = s->pre_rate * dt;
            double tiles_chip = MIN ((double) P->cold.cores,
                                     (double) (s->chip + 1)
                                       * m->tiles_per_chip)
                                - (double) s->chip * m->tiles_per_chip;
            s->pre_left -= got;
            if (s->pre_left < EPS_BYTES)
              s->pre_left = 0;
            report->delivered_bytes += got * n * P->cold.total
                                       / ((double) P->cold.rep
                                          * P->cold.cores);
            if (m->effects & IPU_FX_HBM_CHIPS)
              report->hbm_bytes += got * n * P->chip_hbm[s->chip]
                                   / ((double) P->cold.rep * tiles_chip);
            else
              report->hbm_bytes += got * n * P->hbm_graph
                                   / ((double) P->cold.rep * P->cold.cores);
            report->port_busy_s += dt * n * s->pre_rate / m->link_Bps;
          }
        if (ph != NULL && ph->kind == PH_EXCHANGE && s->ex_rate > 0)
          report->port_busy_s += dt * n * s->ex_rate / m->link_Bps;
      }
    if (ph != NULL && e->ex_xchip_left > 0)
      {
        e->ex_xchip_left -= m->inter_chip_Bps * dt;
        if (e->ex_xchip_left < EPS_BYTES)
          e->ex_xchip_left = 0;
      }
  }

  /* Fig 18a: the share of dt the execute lost to a busy port is
   * interconnect stall; the rest is overlap when a preload is in
   * flight, execute-only otherwise; time with no execute is the
   * memory pipeline's. */
  if (e->ex_op >= 0 && e->ex_stalling)
    e->breakdown[3] += dt;
  else if (e->ex_op >= 0)
    {
      e->breakdown[3] += dt * stall_frac;
      if (ph->kind == PH_COMPUTE)
        report->compute_stall_s += dt * stall_frac;
      else if (ph->kind == PH_EXCHANGE)
        report->exchange_stall_s += dt * stall_frac;
      if (e->pr_op >= 0)
        e->breakdown[2] += dt * (1 - stall_frac);
      else
        e->breakdown[1] += dt * (1 - stall_frac);
    }
  else
    e->breakdown[0] += dt;
  account_op_time (e, ph, dt, stall_frac);
  if (e->pr_op >= 0)
    report->preload_busy_s += dt;
  e->now += dt;
  report->n_events++;
}

gboolean
elk__ipu_emulate (const IpuMachine *m,
                  ElkProgram *program,
                  ElkTrace *trace,
                  ElkMetrics *metrics,
                  IpuReport *report,
                  GError **error)
{
  ElkGraph *graph = elk_program_get_graph (program);
  const guint n_ops = elk_graph_get_n_ops (graph);
  const guint n_steps = elk_program_get_n_steps (program);
  g_autoptr(GHashTable) cache = g_hash_table_new_full (g_str_hash,
                                                       g_str_equal, g_free,
                                                       lowered_free);
  g_autofree Lowered **low = g_new0 (Lowered *, n_ops);
  g_autofree guint8 *order_mem = g_malloc0 ((gsize) n_ops * ELK_MAX_DIMS);
  g_autofree gint *pre_step = g_new (gint, n_ops);
  g_autofree guint *exec_step = g_new0 (guint, n_ops);
  g_autofree gint *producer = g_new (gint, elk_graph_get_n_tensors (graph));
  g_autofree guint *execs_before = g_new0 (guint, n_steps + 1);
  g_autofree gboolean *loaded = g_new0 (gboolean, n_ops);
  g_autofree guint *pre_order = g_new (guint, n_steps + 1);
  Emu e = { 0 };
  gboolean ok = FALSE;

  e.m = m;
  e.program = program;
  e.graph = graph;
  e.trace = trace;
  e.report = report;
  e.n_ops = n_ops;
  e.n_steps = n_steps;
  e.cache = cache;
  e.low = low;
  e.orders = (guint8 (*)[ELK_MAX_DIMS]) order_mem;
  e.pre_step = pre_step;
  e.exec_step = exec_step;
  e.producer = producer;
  e.execs_before = execs_before;
  e.loaded = loaded;
  e.pre_order = pre_order;
  e.ex_op = -1;
  e.pr_op = -1;
  e.op_time = g_new0 (double, (gsize) MAX (n_ops, 1) * ELK_TIME_N_COMPONENTS);
  e.debug = g_getenv ("ELK_IPU_POD_DEBUG") != NULL;
  e.debug_phases
      = e.debug && g_strcmp0 (g_getenv ("ELK_IPU_POD_DEBUG"), "2") == 0;
  /* A bound like Ideal may take a separate preload network for granted
   * (ElkProgramAssumptions): its preloads then leave the receive ports to
   * the exchange.  They still write the tiles' SRAM. */
  e.private_preload = (elk_program_get_assumptions (program)
                       & ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK)
                      != 0;
  if (m->skipped_steps != NULL)
    e.skip_exec = g_new0 (gboolean, MAX (n_ops, 1u));

  memset (report, 0, sizeof (*report));
  for (guint t = 0; t < elk_graph_get_n_tensors (graph); t++)
    producer[t] = -1;
  for (guint i = 0; i < n_ops; i++)
    {
      const ElkOp *op = elk_graph_get_op (graph, i);
      producer[op->tensors[0]] = (gint) i;
      pre_step[i] = -1;
    }

  if (!check_order (&e, error) || !lower_all (&e, error))
    return FALSE;
  init_sim (&e);
  resegment (&e.sim, 0, 0);

  for (;;)
    {
      double dt, stall_frac;
      const Phase *ph = NULL;

      if (!start_activities (&e, error))
        goto out;

      if (e.ex_op < 0 && e.pr_op < 0)
        {
          if (e.execs_done == n_ops)
            break;
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': the program deadlocks at %.9g s: "
                       "operator '%s' waits for a preload that the rules "
                       "R1-R3 never let start",
                       e.now, elk_graph_get_op (graph, e.execs_done)->name);
          goto out;
        }

      /* Re-cut the tiles for the activities now in flight. */
      {
        guint32 ec = e.ex_op >= 0 ? low[e.ex_op]->cores : 0;
        guint32 pc = e.pr_op >= 0 ? low[e.pr_op]->cold.cores : 0;
        resegment (&e.sim, ec, pc);
      }

      if (e.ex_op >= 0)
        ph = exec_phase (&e);
      set_rates (&e, ph, &dt, &stall_frac);

      if (!(dt < INFINITY) || dt < 0)
        {
          g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN,
                       "chip 'ipu-pod': no progress at %.9g s (operator "
                       "'%s'); a bandwidth or the SRAM port is zero",
                       e.now,
                       elk_graph_get_op (graph, e.ex_op >= 0 ? (guint) e.ex_op
                                                             : e.execs_done)
                           ->name);
          goto out;
        }

      advance (&e, ph, dt, stall_frac);
    }

  report->latency_cycles = e.now * m->clock_hz;
  metrics->latency_s = e.now;
  metrics->flops = elk_graph_get_total_flops (graph);
  for (guint i = 0; e.skip_exec != NULL && i < n_ops; i++)
    if (e.skip_exec[i])
      metrics->flops -= elk_graph_get_op (graph, i)->flops;
  metrics->hbm_bytes = report->hbm_bytes;
  metrics->noc_bytes = report->delivered_bytes + report->exchange_bytes;
  metrics->hbm_util = e.now > 0 ? report->hbm_bytes / (m->hbm_Bps * e.now) : 0;
  metrics->noc_util = e.now > 0 ? report->port_busy_s / (m->tiles * e.now) : 0;
  metrics->achieved_flops = e.now > 0 ? metrics->flops / e.now : 0;
  metrics->preload_only_s = e.breakdown[0];
  metrics->execute_only_s = e.breakdown[1];
  metrics->overlap_s = e.breakdown[2];
  metrics->stall_s = e.breakdown[3];
  metrics->breakdown = elk_breakdown_new ();
  for (guint i = 0; i < n_ops; i++)
    elk_breakdown_add_op (metrics->breakdown, elk_graph_get_op (graph, i),
                          &e.op_time[(gsize) i * ELK_TIME_N_COMPONENTS]);
  ok = TRUE;

out:
  g_free (e.op_time);
  g_free (e.skip_exec);
  g_free (e.sim.segs);
  g_free (e.sim.old);
  g_free (e.sim.used);
  g_free (e.sim.hwm);
  g_free (e.sim.tr_compute);
  g_free (e.sim.tr_exchange);
  g_free (e.sim.tr_hbm);
  g_free (e.sim.tr_tile);
  g_free (e.sim.tr_tile_id);
  return ok;
}
