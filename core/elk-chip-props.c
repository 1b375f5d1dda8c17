/* elk-chip-props.c: the chip-spec properties every chip shares.
 *
 * The three shipped chips used to declare these properties each, with
 * their own copies of the bandwidth-units enum, and the copies drifted
 * (one accepted a link bandwidth of 0).  One table here now gives every
 * property its name, range, default and blurb; install, get, set and the
 * conversion into an ElkChipSpec all walk that table.
 */
#include "config.h"

#include "elk-private.h"

#include <elk/elk-chip-props.h>

/**
 * elk_bandwidth_units_get_type:
 *
 * Gets the type of the bandwidth-units enumeration.
 *
 * Returns: the #GType of the #ElkBandwidthUnits enumeration.
 *
 * Since: 0.1
 */
GType
elk_bandwidth_units_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { ELK_BANDWIDTH_UNITS_ARTIFACT, "ELK_BANDWIDTH_UNITS_ARTIFACT",
      "artifact" },
    { ELK_BANDWIDTH_UNITS_DECIMAL, "ELK_BANDWIDTH_UNITS_DECIMAL", "decimal" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
                       g_enum_register_static ("ElkBandwidthUnits", values));
  return (GType) type;
}

/**
 * elk_bandwidth_units_to_bytes_per_second:
 * @units: how @gbps is to be read
 * @gbps: a bandwidth in "GB/s"
 *
 * Converts a *-gbps property value into bytes per second: @gbps x 2^20 x
 * 1000 for %ELK_BANDWIDTH_UNITS_ARTIFACT, @gbps x 1e9 for
 * %ELK_BANDWIDTH_UNITS_DECIMAL.  A chip converts its own *-gbps properties
 * with it, so that they follow its "bandwidth-units" as the common ones do.
 *
 * Returns: the bandwidth in bytes per second.
 *
 * Since: 0.1
 */
double
elk_bandwidth_units_to_bytes_per_second (ElkBandwidthUnits units, double gbps)
{
  /* One multiplication, exactly as each chip used to write it, so that
   * every measured number stays bit for bit what it was. */
  return gbps * (units == ELK_BANDWIDTH_UNITS_ARTIFACT ? 1048576e3 : 1e9);
}

/* Enum fields are read and written as gint; make sure that is their size
 * (GObject stores enum values as gint too). */
G_STATIC_ASSERT (sizeof (ElkTopology) == sizeof (gint));
G_STATIC_ASSERT (sizeof (ElkBandwidthUnits) == sizeof (gint));

typedef enum
{
  KIND_UINT,
  KIND_DOUBLE,
  KIND_ENUM,
} Kind;

typedef struct
{
  const char *name;
  const char *blurb;
  Kind kind;
  gsize offset;
  /* Ranges of KIND_UINT and KIND_DOUBLE, both exact in a double. */
  double min, max;
  GType (*enum_type) (void);
} PropInfo;

/* The order is the order elk-inspect lists them in.  The ranges keep every
 * count, bandwidth and clock positive: a machine with none of them is not
 * a machine, and refusing it here gives the experiment's author the
 * out-of-range error with the range, rather than a division by zero or a
 * chip-specific message later. */
static const PropInfo props_info[] = {
  { .name = "chips",
    .kind = KIND_UINT,
    .offset = G_STRUCT_OFFSET (ElkChipProps, chips),
    .min = 1,
    .max = 1024,
    .blurb = "Chips joined by inter-chip links" },
  { .name = "cores",
    .kind = KIND_UINT,
    .offset = G_STRUCT_OFFSET (ElkChipProps, cores),
    .min = 1,
    .max = 16777216,
    .blurb = "Cores over all chips" },
  { .name = "sram-kib",
    .kind = KIND_UINT,
    .offset = G_STRUCT_OFFSET (ElkChipProps, sram_kib),
    .min = 1,
    .max = 1048576,
    .blurb = "SRAM per core, KiB" },
  { .name = "reserved-kib",
    .kind = KIND_UINT,
    .offset = G_STRUCT_OFFSET (ElkChipProps, reserved_kib),
    .min = 0,
    .max = 1048576,
    .blurb = "SRAM per core kept by the runtime (receive buffer), KiB" },
  { .name = "topology",
    .kind = KIND_ENUM,
    .offset = G_STRUCT_OFFSET (ElkChipProps, topology),
    .enum_type = elk_topology_get_type,
    .blurb
    = "On-chip interconnect of each chip (a chip refuses one it does not "
      "model)" },
  { .name = "mesh-rows",
    .kind = KIND_UINT,
    .offset = G_STRUCT_OFFSET (ElkChipProps, mesh_rows),
    .min = 0,
    .max = 65536,
    .blurb = "Mesh rows per chip (mesh and torus only; with mesh-cols 0 too, a "
             "chip may choose the grid)" },
  { .name = "mesh-cols",
    .kind = KIND_UINT,
    .offset = G_STRUCT_OFFSET (ElkChipProps, mesh_cols),
    .min = 0,
    .max = 65536,
    .blurb
    = "Mesh columns per chip (mesh and torus only; with mesh-rows 0 too, a "
      "chip may choose the grid)" },
  { .name = "link-bw-gbps",
    .kind = KIND_DOUBLE,
    .offset = G_STRUCT_OFFSET (ElkChipProps, link_bw_gbps),
    .min = 1e-3,
    .max = 1e6,
    .blurb = "Inter-core bandwidth, GB/s (see bandwidth-units): of each core's "
             "send and receive port on all-to-all, of each link otherwise" },
  { .name = "hbm-bw-gbps",
    .kind = KIND_DOUBLE,
    .offset = G_STRUCT_OFFSET (ElkChipProps, hbm_bw_gbps),
    .min = 1e-3,
    .max = 1e9,
    .blurb = "Total HBM bandwidth, GB/s (see bandwidth-units)" },
  { .name = "hbm-channels",
    .kind = KIND_UINT,
    .offset = G_STRUCT_OFFSET (ElkChipProps, hbm_channels),
    .min = 1,
    .max = 4096,
    .blurb
    = "HBM modules (controllers) over all chips; tensors are striped over "
      "them" },
  { .name = "inter-chip-bw-gbps",
    .kind = KIND_DOUBLE,
    .offset = G_STRUCT_OFFSET (ElkChipProps, inter_chip_bw_gbps),
    .min = 1e-3,
    .max = 1e9,
    .blurb = "Total bandwidth of the links between chips, GB/s (see "
             "bandwidth-units)" },
  { .name = "clock-ghz",
    .kind = KIND_DOUBLE,
    .offset = G_STRUCT_OFFSET (ElkChipProps, clock_ghz),
    .min = 1e-3,
    .max = 100,
    .blurb = "Core clock, GHz" },
  { .name = "matmul-tflops",
    .kind = KIND_DOUBLE,
    .offset = G_STRUCT_OFFSET (ElkChipProps, matmul_tflops),
    .min = 1e-6,
    .max = 1e9,
    .blurb = "Peak MatMul TFLOP/s of the whole system (IPU-POD4: 5888 cores x "
             "128 FLOP/cycle x 1.325 GHz)" },
  { .name = "vector-tflops",
    .kind = KIND_DOUBLE,
    .offset = G_STRUCT_OFFSET (ElkChipProps, vector_tflops),
    .min = 1e-6,
    .max = 1e9,
    .blurb = "Peak non-MatMul TFLOP/s of the whole system" },
  { .name = "bandwidth-units",
    .kind = KIND_ENUM,
    .offset = G_STRUCT_OFFSET (ElkChipProps, bandwidth_units),
    .enum_type = elk_bandwidth_units_get_type,
    .blurb = "How *-gbps values are read: artifact (1 GB/s = 2^20 B/ms, as the "
             "Elk artifact computes) or decimal (1 GB/s = 1e9 B/s)" },
  { .name = "int8-macs-per-cycle",
    .kind = KIND_DOUBLE,
    .offset = G_STRUCT_OFFSET (ElkChipProps, int8_macs_per_cycle),
    .min = 1e-3,
    .max = 1e6,
    .blurb = "Multiply-accumulates per cycle per core of an integer MatMul or "
             "convolution (int8/uint8 models); IPU-POD4: 64, the FP16 rate, "
             "an assumption (no integer rate is published)" },
};

G_STATIC_ASSERT (G_N_ELEMENTS (props_info) == ELK_CHIP_PROPS_N_PROPERTIES);

/* The first property id of each class that installed the properties, as
 * type data of that class: set_property and get_property find it from the
 * pspec's owner, so a chip hands over its prop_id unchanged. */
static GQuark
first_prop_quark (void)
{
  return g_quark_from_static_string ("elk-chip-props-first-prop-id");
}

/**
 * elk_chip_props_init:
 * @props: (out caller-allocates): the properties to fill
 *
 * Fills @props with the defaults elk_chip_props_install() uses when it is
 * given none: the IPU-POD4 of elk_chip_spec_init_ipu_pod4() (4 chips, 5888
 * cores, 624 KiB SRAM per core with 8 KiB reserved, all-to-all, 5.5 GB/s
 * per core, 16000 GB/s HBM on 16 modules, 640 GB/s between chips,
 * 1.325 GHz, 998.6 MatMul and 31.2 vector TFLOP/s, 64 integer MACs per
 * cycle per core) in artifact bandwidth units.  A chip that models another
 * machine copies these, changes what differs and passes the result to
 * elk_chip_props_install().
 *
 * Since: 0.1
 */
void
elk_chip_props_init (ElkChipProps *props)
{
  ElkCostCoeffs mk2;

  g_return_if_fail (props != NULL);

  /* The integer rate is the cost model's, so that the assumption and its
   * source are written down in one place (elk_cost_coeffs_init_ipu_mk2). */
  elk_cost_coeffs_init_ipu_mk2 (&mk2);

  /* The numbers of elk_chip_spec_init_ipu_pod4(), except that its
   * bandwidths are in bytes per second and these are the artifact's
   * "GB/s" (elk-paper.md §3.8), which the shipped experiments rely on. */
  *props = (ElkChipProps){
    .chips = 4,
    .cores = 5888,
    .sram_kib = 624,
    .reserved_kib = 8,
    .topology = ELK_TOPOLOGY_ALL_TO_ALL,
    .mesh_rows = 0,
    .mesh_cols = 0,
    .link_bw_gbps = 5.5,
    .hbm_bw_gbps = 16000,
    .hbm_channels = 16,
    .inter_chip_bw_gbps = 640,
    .clock_ghz = 1.325,
    .matmul_tflops = 5888 * 128 * 1.325e9 / 1e12,
    .vector_tflops = 31.2,
    .bandwidth_units = ELK_BANDWIDTH_UNITS_ARTIFACT,
    .int8_macs_per_cycle = mk2.int8_macs_per_cycle,
  };
}

static GParamSpec *
make_pspec (const PropInfo *info, const ElkChipProps *defaults)
{
  const GParamFlags flags
      = G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS;
  gconstpointer field = G_STRUCT_MEMBER_P (defaults, info->offset);

  switch (info->kind)
    {
    case KIND_UINT:
      return g_param_spec_uint (info->name, NULL, info->blurb,
                                (guint) info->min, (guint) info->max,
                                *(const guint *) field, flags);
    case KIND_DOUBLE:
      return g_param_spec_double (info->name, NULL, info->blurb, info->min,
                                  info->max, *(const double *) field, flags);
    case KIND_ENUM:
    default:
      return g_param_spec_enum (info->name, NULL, info->blurb,
                                info->enum_type (), *(const gint *) field,
                                flags);
    }
}

/**
 * elk_chip_props_install:
 * @klass: the class_init argument of a chip type, as a #GObjectClass
 * @first_prop_id: the property id of the first common property; the
 *   helper uses the ids @first_prop_id to @first_prop_id +
 *   %ELK_CHIP_PROPS_N_PROPERTIES - 1
 * @defaults: (nullable): the defaults, or %NULL for those of
 *   elk_chip_props_init() (IPU-POD4)
 *
 * Installs the common chip-spec properties on @klass: "chips", "cores",
 * "sram-kib", "reserved-kib", "topology", "mesh-rows", "mesh-cols",
 * "link-bw-gbps", "hbm-bw-gbps", "hbm-channels", "inter-chip-bw-gbps",
 * "clock-ghz", "matmul-tflops", "vector-tflops", "bandwidth-units" and
 * "int8-macs-per-cycle", each read-write and construct, with the ranges listed
 * in #ElkChipProps. Only the defaults can differ from chip to chip; every
 * default must lie in its property's range.
 *
 * Call it from class_init, before installing the chip's own properties,
 * and forward get_property and set_property to
 * elk_chip_props_get_property() and elk_chip_props_set_property().
 *
 * Returns: the number of properties installed,
 *   %ELK_CHIP_PROPS_N_PROPERTIES.
 *
 * Since: 0.1
 */
guint
elk_chip_props_install (GObjectClass *klass,
                        guint first_prop_id,
                        const ElkChipProps *defaults)
{
  ElkChipProps ipu_pod4;

  g_return_val_if_fail (G_IS_OBJECT_CLASS (klass), 0);
  g_return_val_if_fail (first_prop_id > 0, 0);

  if (defaults == NULL)
    {
      elk_chip_props_init (&ipu_pod4);
      defaults = &ipu_pod4;
    }
  g_type_set_qdata (G_TYPE_FROM_CLASS (klass), first_prop_quark (),
                    GUINT_TO_POINTER (first_prop_id));
  for (guint i = 0; i < G_N_ELEMENTS (props_info); i++)
    {
      /* A default out of range is the chip author's bug: GLib reports it
       * (a critical) and returns NULL. */
      GParamSpec *pspec = make_pspec (&props_info[i], defaults);

      g_return_val_if_fail (pspec != NULL, i);
      g_object_class_install_property (klass, first_prop_id + i, pspec);
    }
  return G_N_ELEMENTS (props_info);
}

/* The index in props_info of @prop_id, or -1 if the property is not one of
 * the common ones. */
static int
prop_index (guint prop_id, GParamSpec *pspec)
{
  guint first;

  g_return_val_if_fail (G_IS_PARAM_SPEC (pspec), -1);
  first = GPOINTER_TO_UINT (
      g_type_get_qdata (pspec->owner_type, first_prop_quark ()));
  if (first == 0 || prop_id < first
      || prop_id - first >= G_N_ELEMENTS (props_info))
    return -1;
  return (int) (prop_id - first);
}

/**
 * elk_chip_props_set_property:
 * @props: the chip's common properties
 * @prop_id: the property id set_property was given
 * @value: the new value
 * @pspec: the property set_property was given
 *
 * Stores @value in @props if @prop_id is one of the common properties.
 * Call it first in the chip's set_property and return if it did:
 *
 * |[<!-- language="C" -->
 *   if (elk_chip_props_set_property (&self->props, prop_id, value, pspec))
 *     return;
 *   switch (prop_id) ...
 * ]|
 *
 * Returns: %TRUE if @prop_id was a common property (and is now set),
 *   %FALSE if it is the chip's own.
 *
 * Since: 0.1
 */
gboolean
elk_chip_props_set_property (ElkChipProps *props,
                             guint prop_id,
                             const GValue *value,
                             GParamSpec *pspec)
{
  int i = prop_index (prop_id, pspec);
  gpointer field;

  if (i < 0)
    return FALSE;
  g_return_val_if_fail (props != NULL, FALSE);
  field = G_STRUCT_MEMBER_P (props, props_info[i].offset);
  switch (props_info[i].kind)
    {
    case KIND_UINT:
      *(guint *) field = g_value_get_uint (value);
      break;
    case KIND_DOUBLE:
      *(double *) field = g_value_get_double (value);
      break;
    case KIND_ENUM:
      *(gint *) field = g_value_get_enum (value);
      break;
    }
  return TRUE;
}

/**
 * elk_chip_props_get_property:
 * @props: the chip's common properties
 * @prop_id: the property id get_property was given
 * @value: (out caller-allocates): where the value goes
 * @pspec: the property get_property was given
 *
 * Fetches the value of @prop_id from @props if it is one of the common
 * properties; the counterpart of elk_chip_props_set_property().
 *
 * Returns: %TRUE if @prop_id was a common property (and @value is set),
 *   %FALSE if it is the chip's own.
 *
 * Since: 0.1
 */
gboolean
elk_chip_props_get_property (const ElkChipProps *props,
                             guint prop_id,
                             GValue *value,
                             GParamSpec *pspec)
{
  int i = prop_index (prop_id, pspec);
  gconstpointer field;

  if (i < 0)
    return FALSE;
  g_return_val_if_fail (props != NULL, FALSE);
  field = G_STRUCT_MEMBER_P (props, props_info[i].offset);
  switch (props_info[i].kind)
    {
    case KIND_UINT:
      g_value_set_uint (value, *(const guint *) field);
      break;
    case KIND_DOUBLE:
      g_value_set_double (value, *(const double *) field);
      break;
    case KIND_ENUM:
      g_value_set_enum (value, *(const gint *) field);
      break;
    }
  return TRUE;
}

/**
 * elk_chip_props_fill_spec:
 * @props: the chip's common properties
 * @spec: the spec the chip is building, usually from
 *   elk_chip_spec_new_ipu_pod4()
 *
 * Sets the fields of @spec that the common properties describe, in the
 * units of the spec: @n_chips, @cores, @sram_per_core and @sram_reserved
 * (KiB x 1024), @clock_hz, @matmul_flops and @vector_flops, @topology,
 * @mesh_rows and @mesh_cols as given, and @link_bw, @inter_chip_bw,
 * @hbm_channels and @hbm_bw converted by "bandwidth-units", and the cost
 * coefficient @cost.int8_macs_per_cycle.  The name, latencies and the
 * other cost coefficients are left alone; so is everything a chip
 * derives its own way, which the chip sets afterwards (a grid it chooses,
 * an HBM bandwidth given per core).  It does not check that the fields
 * agree with each other: elk_chip_spec_validate() does.
 *
 * Since: 0.1
 */
void
elk_chip_props_fill_spec (const ElkChipProps *props, ElkChipSpec *spec)
{
  ElkBandwidthUnits units;

  g_return_if_fail (props != NULL);
  g_return_if_fail (spec != NULL);

  units = props->bandwidth_units;
  spec->n_chips = props->chips;
  spec->cores = props->cores;
  spec->sram_per_core = (guint64) props->sram_kib * 1024;
  spec->sram_reserved = (guint64) props->reserved_kib * 1024;
  spec->clock_hz = props->clock_ghz * 1e9;
  spec->matmul_flops = props->matmul_tflops * 1e12;
  spec->vector_flops = props->vector_tflops * 1e12;
  spec->topology = props->topology;
  spec->mesh_rows = props->mesh_rows;
  spec->mesh_cols = props->mesh_cols;
  spec->link_bw
      = elk_bandwidth_units_to_bytes_per_second (units, props->link_bw_gbps);
  spec->inter_chip_bw = elk_bandwidth_units_to_bytes_per_second (
      units, props->inter_chip_bw_gbps);
  spec->hbm_channels = props->hbm_channels;
  spec->hbm_bw
      = elk_bandwidth_units_to_bytes_per_second (units, props->hbm_bw_gbps);
  spec->cost.int8_macs_per_cycle = props->int8_macs_per_cycle;
}
