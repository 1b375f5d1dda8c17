/* elk-chip-spec.c: chip descriptions and the IPU-POD4 defaults. */
#include "config.h"

#include "elk-private.h"

#include <elk/elk-chip-spec.h>
#include <elk/elk-error.h>

/**
 * elk_chip_spec_get_type:
 *
 * The boxed type of #ElkChipSpec, copied with elk_chip_spec_copy() and
 * freed with elk_chip_spec_free().
 *
 * Returns: the #GType of #ElkChipSpec.
 */
ELK_DEFINE_BOXED_TYPE (ElkChipSpec, elk_chip_spec, elk_chip_spec_copy,
                     elk_chip_spec_free)

/**
 * elk_topology_get_type:
 *
 * Gets the type of the interconnect topology enumeration.
 *
 * Returns: the #GType of the #ElkTopology enumeration.
 */
GType
elk_topology_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { ELK_TOPOLOGY_ALL_TO_ALL, "ELK_TOPOLOGY_ALL_TO_ALL", "all-to-all" },
    { ELK_TOPOLOGY_MESH, "ELK_TOPOLOGY_MESH", "mesh" },
    { ELK_TOPOLOGY_TORUS, "ELK_TOPOLOGY_TORUS", "torus" },
    { ELK_TOPOLOGY_RING, "ELK_TOPOLOGY_RING", "ring" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("ElkTopology", values));
  return (GType) type;
}

/**
 * elk_topology_to_string:
 * @topology: an interconnect topology
 *
 * Names a topology, as the chips' "topology" property writes it.
 *
 * Returns: (transfer none): "all-to-all", "mesh", "torus" or "ring", or
 *   "invalid".
 */
const char *
elk_topology_to_string (ElkTopology topology)
{
  static const char *const names[] = { "all-to-all", "mesh", "torus",
                                       "ring" };
  return (guint) topology < G_N_ELEMENTS (names) ? names[topology]
                                                 : "invalid";
}

/**
 * elk_cost_coeffs_init_ipu_mk2:
 * @cost: (out caller-allocates): the coefficients to fill
 *
 * Fills @cost with the IPU MK2 coefficients of the Elk artifact's cost
 * formulas (t10-plan-space.md §2.4, elk-paper.md §3.2): the MatMul AMP
 * formula with 6x16x16 blocks, the affine elementwise, unary and reduce
 * kernels, 0.28 cycles per shifted byte, and two 118-cycle syncs per shift.
 * Gather is 300 + ceil(n / (2 i)) * i + i for n output elements and i
 * indices, and a slice is a shift of its output plus one sync, as in the
 * artifact.  docs/plan-space.md explains each coefficient.
 */
void
elk_cost_coeffs_init_ipu_mk2 (ElkCostCoeffs *cost)
{
  *cost = (ElkCostCoeffs){
    .block_m = 6,
    .block_k = 16,
    .block_n = 16,
    .matmul_inner = 2 * 12,
    .matmul_kn = 514,
    .matmul_n = 113,
    .matmul_fixed = 173,
    .ew_slope = 0.5,
    .ew_fixed = 300,
    .ew_small_slope = 0.75,
    .ew_small_fixed = 290,
    .ew_small_cap_n = 16432,
    .unary_slope = 0.5,
    .unary_fixed = 200,
    .reduce_slope = 0.25,
    .reduce_fixed = 175,
    .gather_slope = 0.5,
    .gather_fixed = 300,
    .slice_slope = 0.28,
    .slice_fixed = 118,
    .shift_cycles_per_byte = 0.28,
    .sync_cycles = 118,
    .syncs_per_shift = 2,
    .shuffle_syncs = 4,
    .multichip_factor = 1.25,
    .ew_small_cap = 0.5 * 16434 + 300,
    .reduce_small_slope = 1.5,
    .reduce_small_n = 480,
    .reduce_align = 48,
    .gather_per_index = 1,
    /* An assumption: the IPU's public documentation gives AMP rates for
     * FP32 and FP16 only (the Programmer's Guide: "single-precision ...
     * or half-precision floating-point"), no integer mode, so int8
     * products run at the FP16 rate of the formula above, 6 x 16 x 16
     * MACs per 24 cycles (docs/plan-space.md). */
    .int8_macs_per_cycle = 64,
  };
}

/**
 * elk_chip_spec_init_ipu_pod4:
 * @spec: (out caller-allocates): the spec to fill; a name it already holds
 *   is freed
 *
 * Fills @spec with the emulated system of elk-paper.md §2.3: 4 IPU MK2
 * chips, 5888 cores, 624 KiB SRAM per core with an 8 KiB receive buffer,
 * 1.325 GHz, 5.5 GB/s per core all-to-all, 640 GB/s between chips, 16
 * HBM3E modules giving 16 TB/s.  Peak MatMul is 128 FLOP/cycle/core (1000
 * TFLOP/s for the pod in the paper's rounding; 5888 x 128 x 1.325e9 =
 * 998.6e12 here, which is what the cost formula implies) and 31.2 TFLOP/s
 * for everything else.
 */
void
elk_chip_spec_init_ipu_pod4 (ElkChipSpec *spec)
{
  g_free (spec->name);
  *spec = (ElkChipSpec) {
    .name = g_strdup ("ipu-pod4"),
    .n_chips = 4,
    .cores = 4 * 1472,
    .sram_per_core = 624 * 1024,
    .sram_reserved = 8 * 1024,
    .clock_hz = 1.325e9,
    .matmul_flops = 4 * 1472 * 128 * 1.325e9,
    .vector_flops = 31.2e12,
    .topology = ELK_TOPOLOGY_ALL_TO_ALL,
    .link_bw = 5.5e9,
    .link_latency = 0,
    .inter_chip_bw = 640e9,
    .hbm_channels = 16,
    .hbm_bw = 16e12,
    .hbm_latency = 0,
  };
  elk_cost_coeffs_init_ipu_mk2 (&spec->cost);
}

/**
 * elk_chip_spec_new_ipu_pod4:
 *
 * Creates a spec with the defaults of elk_chip_spec_init_ipu_pod4().
 *
 * Returns: (transfer full): a spec with the IPU-POD4 defaults; free it with
 *   elk_chip_spec_free().
 */
ElkChipSpec *
elk_chip_spec_new_ipu_pod4 (void)
{
  ElkChipSpec *spec = g_new0 (ElkChipSpec, 1);
  elk_chip_spec_init_ipu_pod4 (spec);
  return spec;
}

/**
 * elk_chip_spec_copy:
 * @spec: a spec
 *
 * Copies @spec, name included.
 *
 * Returns: (transfer full): a copy of @spec; free it with
 *   elk_chip_spec_free().
 */
ElkChipSpec *
elk_chip_spec_copy (const ElkChipSpec *spec)
{
  ElkChipSpec *copy = g_memdup2 (spec, sizeof (ElkChipSpec));
  copy->name = g_strdup (spec->name);
  return copy;
}

/**
 * elk_chip_spec_free:
 * @spec: (transfer full) (nullable): a spec, or %NULL
 *
 * Frees @spec and its name.
 */
void
elk_chip_spec_free (ElkChipSpec *spec)
{
  if (spec == NULL)
    return;
  g_free (spec->name);
  g_free (spec);
}

/**
 * elk_chip_spec_get_usable_sram:
 * @spec: a spec
 *
 * Gets the SRAM per core the compiler may use.
 *
 * Returns: per-core bytes the compiler may allocate (SRAM minus reserve).
 */
guint64
elk_chip_spec_get_usable_sram (const ElkChipSpec *spec)
{
  return spec->sram_per_core - spec->sram_reserved;
}

/**
 * elk_chip_spec_get_load_time:
 * @spec: the chip
 * @hbm_bytes: bytes the preload reads from HBM
 * @cold_bytes: per-core bytes it delivers (its preload-state footprint)
 * @share: the share of each core's interconnect port the preload may
 *   take, in (0, 1]
 * @noc_s: (out) (optional): the interconnect time of the delivery,
 *   @cold_bytes over the per-core port rate
 *
 * The preload time model of elk-paper.md §3.5 and §3.8, the one every
 * scheduler estimate and every analytic price uses: a preload reads
 * @hbm_bytes once from HBM and delivers @cold_bytes to every core through
 * its port (the artifact's broadcast-ratio formula written per core), and
 * lasts the longer of the HBM time and the delivery time at @share of the
 * port.  A preload that reads nothing takes no time.
 *
 * Returns: the preload duration in seconds.
 */
double
elk_chip_spec_get_load_time (const ElkChipSpec *spec,
                             guint64 hbm_bytes,
                             guint64 cold_bytes,
                             double share,
                             double *noc_s)
{
  double t_hbm, t_noc;

  if (hbm_bytes == 0)
    {
      if (noc_s != NULL)
        *noc_s = 0;
      return 0;
    }
  t_hbm = (double) hbm_bytes / spec->hbm_bw;
  t_noc = (double) cold_bytes / spec->link_bw;
  if (noc_s != NULL)
    *noc_s = t_noc;
  return MAX (t_hbm, t_noc / share);
}

/**
 * elk_chip_spec_get_noc_bw:
 * @spec: a spec
 *
 * Gets the total bandwidth of the on-chip interconnect.
 *
 * Returns: the aggregate interconnect bandwidth in bytes/s: per-core port
 *   rate times cores for all-to-all, four links per core for mesh and torus,
 *   two for a ring.
 */
double
elk_chip_spec_get_noc_bw (const ElkChipSpec *spec)
{
  switch (spec->topology)
    {
    case ELK_TOPOLOGY_MESH:
    case ELK_TOPOLOGY_TORUS:
      return spec->link_bw * spec->cores * 4;
    case ELK_TOPOLOGY_RING:
      return spec->link_bw * spec->cores * 2;
    case ELK_TOPOLOGY_ALL_TO_ALL:
    default:
      return spec->link_bw * spec->cores;
    }
}

/**
 * elk_chip_spec_validate:
 * @spec: a spec
 * @error: return location for a #GError
 *
 * Checks that a spec describes a machine the compiler can target: positive
 * core counts, sizes, rates and bandwidths, a reserve below the SRAM, and a
 * grid that matches the cores for a mesh or torus.
 *
 * Returns: %TRUE if the spec is usable; %FALSE with @error set
 *   (%ELK_CHIP_ERROR_CONFIG, naming the field) otherwise.
 */
gboolean
elk_chip_spec_validate (const ElkChipSpec *spec, GError **error)
{
  const char *name = spec->name != NULL ? spec->name : "chip";

#define REQUIRE(cond, ...)                                                   \
  G_STMT_START                                                               \
  {                                                                          \
    if (!(cond))                                                             \
      {                                                                      \
        g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG,           \
                     __VA_ARGS__);                                           \
        return FALSE;                                                        \
      }                                                                      \
  }                                                                          \
  G_STMT_END

  REQUIRE (spec->n_chips >= 1, "chip '%s': n-chips must be at least 1", name);
  REQUIRE (spec->cores >= spec->n_chips && spec->cores % spec->n_chips == 0,
           "chip '%s': %u cores cannot be split evenly over %u chips", name,
           spec->cores, spec->n_chips);
  REQUIRE (spec->sram_per_core > spec->sram_reserved,
           "chip '%s': SRAM per core (%" G_GUINT64_FORMAT " B) must exceed "
           "the reserved receive buffer (%" G_GUINT64_FORMAT " B)", name,
           spec->sram_per_core, spec->sram_reserved);
  REQUIRE (spec->clock_hz > 0 && spec->matmul_flops > 0
             && spec->vector_flops > 0,
           "chip '%s': clock and FLOP rates must be positive", name);
  REQUIRE (spec->link_bw > 0 && spec->hbm_bw > 0,
           "chip '%s': link and HBM bandwidths must be positive", name);
  REQUIRE (spec->n_chips == 1 || spec->inter_chip_bw > 0,
           "chip '%s': %u chips need a positive inter-chip bandwidth", name,
           spec->n_chips);
  REQUIRE ((spec->topology != ELK_TOPOLOGY_MESH
            && spec->topology != ELK_TOPOLOGY_TORUS)
             || (guint64) spec->mesh_rows * spec->mesh_cols * spec->n_chips
                  == spec->cores,
           "chip '%s': a %ux%u mesh on %u chips has %u cores, expected %u",
           name, spec->mesh_rows, spec->mesh_cols, spec->n_chips,
           spec->mesh_rows * spec->mesh_cols * spec->n_chips, spec->cores);
  REQUIRE (spec->cost.block_m > 0 && spec->cost.block_k > 0
             && spec->cost.block_n > 0,
           "chip '%s': MatMul block sizes must be positive", name);
  REQUIRE (spec->cost.int8_macs_per_cycle > 0,
           "chip '%s': int8 MACs per cycle must be positive (it is %g)", name,
           spec->cost.int8_macs_per_cycle);
#undef REQUIRE
  return TRUE;
}
