/* elk-chip-spec.h: what the compiler knows about a chip.
 *
 * A chip backend (ElkChip) describes its machine with an ElkChipSpec: cores,
 * SRAM, FLOP rates, interconnect topology and links, HBM, and the cost-model
 * coefficients the plan space (core/plan) uses to estimate per-core kernel
 * time and inter-core transfers.  A new chip is a new spec, not new compiler
 * code.  The defaults from elk_chip_spec_init_ipu_pod4() are the IPU MK2
 * (GC200) numbers of elk-paper.md §2.2-2.3 and the coefficients of the
 * artifact's cost formulas (t10-plan-space.md §2.4).
 *
 * Units at this interface: seconds, bytes, FLOPs and bytes per second.  The
 * kernel coefficients are in core clock cycles, which are private to the
 * cost model and converted with @clock_hz.
 */
#pragma once

#include <glib.h>
#include <glib-object.h>
#include <elk/elk-visibility.h>

G_BEGIN_DECLS

/**
 * ElkTopology:
 * @ELK_TOPOLOGY_ALL_TO_ALL: any core reaches any core at the full per-core
 *   port rate (IPU exchange).
 * @ELK_TOPOLOGY_MESH: 2-D mesh, @mesh_rows x @mesh_cols per chip.
 * @ELK_TOPOLOGY_TORUS: 2-D torus.
 * @ELK_TOPOLOGY_RING: a ring of all cores.
 *
 * The on-chip interconnect of a chip, which sets how the plan space and
 * the chips price inter-core traffic.
 */
typedef enum
{
  ELK_TOPOLOGY_ALL_TO_ALL,
  ELK_TOPOLOGY_MESH,
  ELK_TOPOLOGY_TORUS,
  ELK_TOPOLOGY_RING,
} ElkTopology;

/**
 * ELK_TYPE_TOPOLOGY:
 *
 * The #GType of #ElkTopology.
 */
#define ELK_TYPE_TOPOLOGY (elk_topology_get_type ())
ELK_API GType elk_topology_get_type (void);

/**
 * ElkCostCoeffs:
 *
 * Per-core kernel and transfer cost coefficients in cycles, IPU MK2 values
 * by default.  The MatMul tile of per-core extents (b, m, k, n) costs
 *   b * (matmul_inner * ceil(m/block_m) * ceil(k/block_k) * ceil(n/block_n)
 *        + matmul_kn * ceil(k/block_k) * ceil(n/block_n)
 *        + matmul_n * ceil(n/block_n) + matmul_fixed)
 * cycles; the other kinds are affine in the element count.  New fields are
 * only ever appended.
 */
typedef struct
{
  /* MatMul, 6x16x16 blocks (AMP unit): 2*12 cycles per block. */
  guint block_m, block_k, block_n;
  double matmul_inner;
  double matmul_kn;
  double matmul_n;
  double matmul_fixed;

  /* Two-input elementwise on n elements: small regime
   * min(ew_small_cap_slope * ew_small_cap_n + ew_fixed, ew_small_slope*n +
   * ew_small_fixed) for n <= ew_small_cap_n, else ew_slope * n + ew_fixed. */
  double ew_slope, ew_fixed;
  double ew_small_slope, ew_small_fixed;
  double ew_small_cap_n;

  /* Unary (relu-like) on n elements: unary_slope * n + unary_fixed.
   * Reduce of x = (aligned output elements) * (reduced length):
   * reduce_slope * x + reduce_fixed, with the small regime below.
   * Gather of n output elements with i indices:
   * gather_fixed + ceil(gather_slope * n / i) * i + gather_per_index * i.
   * Slice: slice_slope cycles per output byte + slice_fixed (a shift of
   * the output plus one sync). */
  double unary_slope, unary_fixed;
  double reduce_slope, reduce_fixed;
  double gather_slope, gather_fixed;
  double slice_slope, slice_fixed;

  /* Inter-core shift: cycles per byte moved by one core, the cycles of one
   * synchronisation, and how many syncs each shift event costs. */
  double shift_cycles_per_byte;
  double sync_cycles;
  guint syncs_per_shift;

  /* Output shuffle / partial-sum reduction after the last step. */
  guint shuffle_syncs;

  /* Factor on shift and shuffle time once a plan spans more than one chip. */
  double multichip_factor;

  /* Appended by core/plan. */

  /* Elementwise small regime: the cap of the min () above. */
  double ew_small_cap;

  /* Reduce small regime: for x <= reduce_small_n,
   * min (reduce_slope * (reduce_small_n + 1) + reduce_fixed,
   *      reduce_small_slope * x + reduce_fixed).  The output element count
   * is first rounded up the ladder 1, 2, 4, 8, 12, 16, 24 and then to
   * multiples of reduce_align. */
  double reduce_small_slope;
  double reduce_small_n;
  double reduce_align;

  /* Gather: cycles per index (see above). */
  double gather_per_index;

  /* Integer MatMul and convolution (every input operand of an integer
   * type: the int8 and uint8 products of quantized models): multiply-
   * accumulates per cycle per core.  Such a product costs the AMP formula
   * above with matmul_inner scaled by (block_m * block_k * block_n /
   * matmul_inner) / int8_macs_per_cycle, the floating-point rate over
   * this one, at any operand width. */
  double int8_macs_per_cycle;
} ElkCostCoeffs;

/**
 * ElkChipSpec:
 * @name: a short name for results ("ipu-pod4").
 * @n_chips: chips joined by inter-chip links.
 * @cores: total cores over all chips.
 * @sram_per_core: SRAM bytes per core.
 * @sram_reserved: bytes per core the runtime keeps (receive buffer).
 * @clock_hz: core clock.
 * @matmul_flops: peak MatMul FLOP/s of the whole system.
 * @vector_flops: peak non-MatMul FLOP/s of the whole system.
 * @topology: the on-chip interconnect.
 * @mesh_rows: rows of a mesh or torus (per chip), 0 otherwise.
 * @mesh_cols: columns of a mesh or torus (per chip), 0 otherwise.
 * @link_bw: inter-core bandwidth per core (all-to-all port or mesh link) in
 *   bytes/s.
 * @link_latency: per-hop latency in seconds.
 * @inter_chip_bw: total inter-chip bandwidth in bytes/s.
 * @hbm_channels: HBM controllers (modules).
 * @hbm_bw: total HBM bandwidth in bytes/s.
 * @hbm_latency: HBM access latency in seconds.
 * @cost: kernel and transfer coefficients.
 *
 * What the compiler knows about a chip.  A boxed type copied by value
 * (elk_chip_spec_copy(), elk_chip_spec_free()); #ElkPlanSet keeps its own
 * copy.  Embedded by value where a plugin reads it, so its layout is part
 * of the plugin ABI (see #ElkPlan).
 */
typedef struct
{
  char *name;
  guint n_chips;
  guint cores;
  guint64 sram_per_core;
  guint64 sram_reserved;
  double clock_hz;
  double matmul_flops;
  double vector_flops;
  ElkTopology topology;
  guint mesh_rows;
  guint mesh_cols;
  double link_bw;
  double link_latency;
  double inter_chip_bw;
  guint hbm_channels;
  double hbm_bw;
  double hbm_latency;
  ElkCostCoeffs cost;
} ElkChipSpec;

/**
 * ELK_TYPE_CHIP_SPEC:
 *
 * The #GType of #ElkChipSpec.
 */
#define ELK_TYPE_CHIP_SPEC (elk_chip_spec_get_type ())
ELK_API GType elk_chip_spec_get_type (void);

ELK_API ElkChipSpec *elk_chip_spec_new_ipu_pod4 (void);
ELK_API void elk_chip_spec_init_ipu_pod4 (ElkChipSpec *spec);
ELK_API void elk_cost_coeffs_init_ipu_mk2 (ElkCostCoeffs *cost);
ELK_API ElkChipSpec *elk_chip_spec_copy (const ElkChipSpec *spec);
ELK_API void elk_chip_spec_free (ElkChipSpec *spec);
ELK_API gboolean elk_chip_spec_validate (const ElkChipSpec *spec,
                                         GError **error);
ELK_API guint64 elk_chip_spec_get_usable_sram (const ElkChipSpec *spec);
ELK_API double elk_chip_spec_get_noc_bw (const ElkChipSpec *spec);
ELK_API double elk_chip_spec_get_load_time (const ElkChipSpec *spec,
                                            guint64 hbm_bytes,
                                            guint64 cold_bytes,
                                            double share,
                                            double *noc_s);
ELK_API const char *elk_topology_to_string (ElkTopology topology);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkChipSpec, elk_chip_spec_free)

G_END_DECLS
