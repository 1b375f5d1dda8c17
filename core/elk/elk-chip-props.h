/* elk-chip-props.h: the chip-spec properties every chip shares.
 *
 * Every chip backend describes its machine with the same human-unit
 * properties (chips, cores, SRAM, topology, link, HBM and inter-chip
 * bandwidths, clock, peak FLOP rates, and how "GB/s" is read), so that an
 * experiment can swap one chip for another and a sweep over
 * chip.hbm-bw-gbps means the same on each.  libelk declares them once:
 * a chip embeds an #ElkChipProps in its instance, calls
 * elk_chip_props_install() from class_init, forwards its get_property and
 * set_property to elk_chip_props_get_property() and
 * elk_chip_props_set_property(), and builds its #ElkChipSpec with
 * elk_chip_props_fill_spec().  The chip then declares only the properties
 * that are its own.  docs/plugin-guide.md shows the whole pattern.
 */
#pragma once

#include <elk/elk-chip-spec.h>
#include <elk/elk-visibility.h>
#include <glib-object.h>

G_BEGIN_DECLS

/**
 * ElkBandwidthUnits:
 * @ELK_BANDWIDTH_UNITS_ARTIFACT: 1 GB/s is 2^20 bytes per millisecond
 *   (1.048576e9 B/s), as the Elk artifact divides bytes by 2^20 and by its
 *   "GB/s" figure to get milliseconds (elk-paper.md §3.8).  The default, so
 *   that the paper's figures reproduce.
 * @ELK_BANDWIDTH_UNITS_DECIMAL: 1 GB/s is 1e9 bytes per second.
 *
 * How a chip reads its *-gbps properties (the "bandwidth-units" property).
 *
 * Since: 0.1
 */
typedef enum
{
  ELK_BANDWIDTH_UNITS_ARTIFACT,
  ELK_BANDWIDTH_UNITS_DECIMAL,
} ElkBandwidthUnits;

#define ELK_TYPE_BANDWIDTH_UNITS (elk_bandwidth_units_get_type ())
ELK_API GType elk_bandwidth_units_get_type (void);

ELK_API double elk_bandwidth_units_to_bytes_per_second (ElkBandwidthUnits units,
                                                        double gbps);

/**
 * ELK_CHIP_PROPS_N_PROPERTIES:
 *
 * How many properties elk_chip_props_install() installs: the ids
 * first_prop_id to first_prop_id + %ELK_CHIP_PROPS_N_PROPERTIES - 1 belong
 * to the helper, and a chip numbers its own properties after them.  New
 * common properties would raise this number, so a chip uses the macro
 * rather than the value.
 *
 * Since: 0.1
 */
#define ELK_CHIP_PROPS_N_PROPERTIES 16

/**
 * ElkChipProps:
 * @chips: "chips", chips joined by inter-chip links (1 - 1024, default 4).
 * @cores: "cores", cores over all chips (1 - 16777216, default 5888).
 * @sram_kib: "sram-kib", SRAM per core in KiB (1 - 1048576, default 624).
 * @reserved_kib: "reserved-kib", SRAM per core the runtime keeps for the
 *   receive buffer, in KiB (0 - 1048576, default 8).
 * @topology: "topology", the on-chip interconnect (default all-to-all).
 * @mesh_rows: "mesh-rows", rows per chip of a mesh or torus (0 - 65536,
 *   default 0).
 * @mesh_cols: "mesh-cols", columns per chip of a mesh or torus (0 - 65536,
 *   default 0).
 * @link_bw_gbps: "link-bw-gbps", inter-core bandwidth per core or per link
 *   in GB/s (0.001 - 1e6, default 5.5).
 * @hbm_bw_gbps: "hbm-bw-gbps", total HBM bandwidth in GB/s (0.001 - 1e9,
 *   default 16000).
 * @hbm_channels: "hbm-channels", HBM modules over all chips (1 - 4096,
 *   default 16).
 * @inter_chip_bw_gbps: "inter-chip-bw-gbps", total bandwidth between chips
 *   in GB/s (0.001 - 1e9, default 640).
 * @clock_ghz: "clock-ghz", the core clock in GHz (0.001 - 100, default
 *   1.325).
 * @matmul_tflops: "matmul-tflops", peak MatMul TFLOP/s of the whole system
 *   (1e-6 - 1e9, default 5888 x 128 x 1.325e9 / 1e12 = 998.6048).
 * @vector_tflops: "vector-tflops", peak non-MatMul TFLOP/s of the whole
 *   system (1e-6 - 1e9, default 31.2).
 * @bandwidth_units: "bandwidth-units", how the *-gbps values are read
 *   (default artifact).
 * @int8_macs_per_cycle: "int8-macs-per-cycle", multiply-accumulates per
 *   cycle per core of a MatMul or convolution whose inputs are all of
 *   integer types (0.001 - 1e6, default 64, the FP16 rate of the IPU MK2's
 *   AMP: an assumption, see #ElkCostCoeffs; appended in plugin ABI 4).
 *
 * The common chip-spec properties of a chip instance, in the units an
 * experiment writes them.  A chip embeds one by value in its instance
 * struct; the property machinery fills it (every property is
 * %G_PARAM_CONSTRUCT, so the defaults are in place once the object is
 * constructed), and the chip reads the fields directly.  The defaults are
 * the IPU-POD4 of elk_chip_spec_init_ipu_pod4() (elk-paper.md §2.3).
 *
 * No bandwidth, core count or clock may be 0: the properties' ranges
 * refuse it, so an experiment that asks for it fails with the usual
 * out-of-range error naming the range.
 *
 * New fields are only appended, and take their room from @reserved, so
 * that a chip built against an older libelk keeps its instance layout.
 *
 * Since: 0.1
 */
typedef struct
{
  guint chips;
  guint cores;
  guint sram_kib;
  guint reserved_kib;
  ElkTopology topology;
  guint mesh_rows;
  guint mesh_cols;
  double link_bw_gbps;
  double hbm_bw_gbps;
  guint hbm_channels;
  double inter_chip_bw_gbps;
  double clock_ghz;
  double matmul_tflops;
  double vector_tflops;
  ElkBandwidthUnits bandwidth_units;
  double int8_macs_per_cycle;

  /*< private >*/
  gpointer reserved[7];
} ElkChipProps;

ELK_API void elk_chip_props_init (ElkChipProps *props);
ELK_API guint elk_chip_props_install (GObjectClass *klass,
                                      guint first_prop_id,
                                      const ElkChipProps *defaults);
ELK_API gboolean elk_chip_props_set_property (ElkChipProps *props,
                                              guint prop_id,
                                              const GValue *value,
                                              GParamSpec *pspec);
ELK_API gboolean elk_chip_props_get_property (const ElkChipProps *props,
                                              guint prop_id,
                                              GValue *value,
                                              GParamSpec *pspec);
ELK_API void elk_chip_props_fill_spec (const ElkChipProps *props,
                                       ElkChipSpec *spec);

G_END_DECLS
