/* tests/core/test-chip-props.c: the chip-spec properties every chip shares
 * (issue 17, item 3).
 *
 * libelk installs the common chip properties (elk_chip_props_install());
 * this test checks the helper on a chip type of its own, then that every
 * shipped chip (analytic, noc-sim, ipu-pod; skipped when not built)
 *
 *  - has each common property with the helper's type, range, default,
 *    blurb and flags, bandwidth-units being libelk's one enum type;
 *  - refuses a zero bandwidth, core count, chip count, HBM module count or
 *    clock (link-bw-gbps 0 above all, which noc-sim used to accept) with
 *    the experiment loader's out-of-range error naming the range;
 *  - returns a spec that reflects the common properties, in both
 *    bandwidth units, and reads them back unchanged;
 *  - refuses a topology it does not model, or accepts it.
 *
 * It also checks elk_field_properties_install(), the helper that plugins
 * with plain-field parameters use instead of accessors.
 *
 * No shipped chip overrides a default today.  A chip that does must pass
 * its defaults to elk_chip_props_install() and be listed in
 * chip_defaults[] below, so that the difference is deliberate.
 */
#include "elk-test-util.h"

#include <string.h>

static const char *const chip_names[] = { "analytic", "noc-sim", "ipu-pod" };

/* Per-chip defaults that differ from elk_chip_props_init() (none). */
static const struct
{
  const char *chip;
  const char *property;
  const char *value;
} chip_defaults[] = {
  { NULL, NULL, NULL },
};

static ElkRegistry *registry;

/* ---------------------------------------------------------------------- */
/* A chip type of the test's own: what a third-party chip writes. */

#define TEST_TYPE_CHIP (test_chip_get_type ())
G_DECLARE_FINAL_TYPE (TestChip, test_chip, TEST, CHIP, GObject)

struct _TestChip
{
  GObject parent_instance;
  ElkChipProps props;
  double own;
};

enum
{
  PROP_0,
  PROP_CHIP_PROPS,
  PROP_OWN = PROP_CHIP_PROPS + ELK_CHIP_PROPS_N_PROPERTIES,
  N_PROPS
};

G_DEFINE_FINAL_TYPE (TestChip, test_chip, G_TYPE_OBJECT)

static void
test_chip_get_property (GObject *object,
                        guint prop_id,
                        GValue *value,
                        GParamSpec *pspec)
{
  TestChip *self = TEST_CHIP (object);

  if (elk_chip_props_get_property (&self->props, prop_id, value, pspec))
    return;
  switch (prop_id)
    {
    case PROP_OWN:
      g_value_set_double (value, self->own);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
test_chip_set_property (GObject *object,
                        guint prop_id,
                        const GValue *value,
                        GParamSpec *pspec)
{
  TestChip *self = TEST_CHIP (object);

  if (elk_chip_props_set_property (&self->props, prop_id, value, pspec))
    return;
  switch (prop_id)
    {
    case PROP_OWN:
      self->own = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
test_chip_class_init (TestChipClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  ElkChipProps defaults;

  object_class->get_property = test_chip_get_property;
  object_class->set_property = test_chip_set_property;

  /* One MK2 chip rather than the pod: a per-chip default. */
  elk_chip_props_init (&defaults);
  defaults.chips = 1;
  defaults.cores = 1472;
  g_assert_cmpuint (
      elk_chip_props_install (object_class, PROP_CHIP_PROPS, &defaults), ==,
      ELK_CHIP_PROPS_N_PROPERTIES);
  g_object_class_install_property (
      object_class, PROP_OWN,
      g_param_spec_double ("own", NULL, "The chip's own", 0, 10, 3,
                           G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                               | G_PARAM_STATIC_STRINGS));
}

static void
test_chip_init (TestChip *self)
{
}

/* The reference: the helper's properties with the IPU-POD4 defaults, on a
 * class of its own. */

#define TEST_TYPE_REFERENCE (test_reference_get_type ())
G_DECLARE_FINAL_TYPE (TestReference, test_reference, TEST, REFERENCE, GObject)

struct _TestReference
{
  GObject parent_instance;
  ElkChipProps props;
};

G_DEFINE_FINAL_TYPE (TestReference, test_reference, G_TYPE_OBJECT)

static void
test_reference_get_property (GObject *object,
                             guint prop_id,
                             GValue *value,
                             GParamSpec *pspec)
{
  if (!elk_chip_props_get_property (&TEST_REFERENCE (object)->props, prop_id,
                                    value, pspec))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
test_reference_set_property (GObject *object,
                             guint prop_id,
                             const GValue *value,
                             GParamSpec *pspec)
{
  if (!elk_chip_props_set_property (&TEST_REFERENCE (object)->props, prop_id,
                                    value, pspec))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
test_reference_class_init (TestReferenceClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = test_reference_get_property;
  object_class->set_property = test_reference_set_property;
  /* A first id other than 1, to check that the offset is honoured. */
  elk_chip_props_install (object_class, 7, NULL);
}

static void
test_reference_init (TestReference *self)
{
}

/* ---------------------------------------------------------------------- */

static GType
chip_type (const char *name)
{
  const ElkFeature *f = elk_registry_lookup (registry, ELK_TYPE_CHIP, name);

  return f != NULL ? f->type : G_TYPE_INVALID;
}

static gboolean
doubles_identical (double a, double b)
{
  return memcmp (&a, &b, sizeof a) == 0;
}

static void
test_defaults (void)
{
  ElkChipProps props;
  g_autoptr (ElkChipSpec) pod4 = elk_chip_spec_new_ipu_pod4 ();
  g_autoptr (ElkChipSpec) spec = elk_chip_spec_new_ipu_pod4 ();

  /* The defaults describe the machine of elk_chip_spec_init_ipu_pod4(),
   * whose bandwidths are in bytes per second where these are in the
   * artifact's GB/s. */
  elk_chip_props_init (&props);
  g_assert_cmpint (props.bandwidth_units, ==, ELK_BANDWIDTH_UNITS_ARTIFACT);
  elk_chip_props_fill_spec (&props, spec);
  g_assert_cmpuint (spec->n_chips, ==, pod4->n_chips);
  g_assert_cmpuint (spec->cores, ==, pod4->cores);
  g_assert_cmpuint (spec->sram_per_core, ==, pod4->sram_per_core);
  g_assert_cmpuint (spec->sram_reserved, ==, pod4->sram_reserved);
  g_assert_true (doubles_identical (spec->clock_hz, pod4->clock_hz));
  g_assert_cmpfloat_with_epsilon (spec->matmul_flops, pod4->matmul_flops,
                                  pod4->matmul_flops * 1e-15);
  g_assert_true (doubles_identical (spec->vector_flops, pod4->vector_flops));
  g_assert_cmpint (spec->topology, ==, pod4->topology);
  g_assert_cmpuint (spec->mesh_rows, ==, 0);
  g_assert_cmpuint (spec->hbm_channels, ==, pod4->hbm_channels);
  g_assert_true (doubles_identical (spec->link_bw, 5.5 * 1048576e3));
  g_assert_true (doubles_identical (spec->hbm_bw, 16000 * 1048576e3));
  g_assert_true (doubles_identical (spec->inter_chip_bw, 640 * 1048576e3));

  props.bandwidth_units = ELK_BANDWIDTH_UNITS_DECIMAL;
  elk_chip_props_fill_spec (&props, spec);
  g_assert_true (doubles_identical (spec->link_bw, pod4->link_bw));
  g_assert_true (doubles_identical (spec->hbm_bw, pod4->hbm_bw));
  g_assert_true (doubles_identical (spec->inter_chip_bw, pod4->inter_chip_bw));
  /* What the properties do not describe is left alone. */
  g_assert_cmpstr (spec->name, ==, "ipu-pod4");
  g_assert_cmpfloat (spec->cost.sync_cycles, ==, pod4->cost.sync_cycles);
}

static void
test_own_type (void)
{
  g_autoptr (GObject) chip = g_object_new (TEST_TYPE_CHIP, NULL);
  TestChip *self = TEST_CHIP (chip);
  GParamSpec *pspec;
  guint cores = 0;
  double own = 0, link = 0;
  ElkBandwidthUnits units = ELK_BANDWIDTH_UNITS_ARTIFACT;

  /* The per-chip defaults, and the others from elk_chip_props_init(). */
  g_assert_cmpuint (self->props.chips, ==, 1);
  g_assert_cmpuint (self->props.cores, ==, 1472);
  g_assert_cmpuint (self->props.sram_kib, ==, 624);
  g_assert_cmpfloat (self->own, ==, 3);
  pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (chip), "cores");
  g_assert_cmpuint (G_PARAM_SPEC_UINT (pspec)->default_value, ==, 1472);
  g_assert_cmpuint (pspec->param_id, ==, PROP_CHIP_PROPS + 1);

  /* The chip's own property is not the helper's, and the ids that follow
   * the common ones are the chip's. */
  g_object_set (chip, "cores", 64, "own", 5.0, "link-bw-gbps", 2.5,
                "bandwidth-units", ELK_BANDWIDTH_UNITS_DECIMAL, NULL);
  g_object_get (chip, "cores", &cores, "own", &own, "link-bw-gbps", &link,
                "bandwidth-units", &units, NULL);
  g_assert_cmpuint (cores, ==, 64);
  g_assert_cmpfloat (own, ==, 5);
  g_assert_cmpfloat (link, ==, 2.5);
  g_assert_cmpint (units, ==, ELK_BANDWIDTH_UNITS_DECIMAL);
  g_assert_cmpuint (self->props.cores, ==, 64);
  g_assert_cmpfloat (self->props.link_bw_gbps, ==, 2.5);
  pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (chip), "own");
  {
    GValue v = G_VALUE_INIT;
    g_value_init (&v, G_TYPE_DOUBLE);
    g_assert_false (
        elk_chip_props_get_property (&self->props, PROP_OWN, &v, pspec));
    g_value_unset (&v);
  }
  g_assert_cmpfloat (elk_bandwidth_units_to_bytes_per_second (
                         ELK_BANDWIDTH_UNITS_DECIMAL, 2.5),
                     ==, 2.5e9);
  g_assert_cmpfloat (
      elk_bandwidth_units_to_bytes_per_second (ELK_BANDWIDTH_UNITS_ARTIFACT, 1),
      ==, 1048576e3);
}

/* The default of @pspec as text, for messages. */
static char *
default_text (GParamSpec *pspec)
{
  return g_strdup_value_contents (g_param_spec_get_default_value (pspec));
}

static void
assert_same_pspec (const char *chip,
                   GParamSpec *got,
                   GParamSpec *want,
                   const char *want_default)
{
  g_autofree char *got_default = default_text (got);
  g_autofree char *ref_default
      = want_default != NULL ? g_strdup (want_default) : default_text (want);

  g_test_message ("%s: %s default %s", chip, want->name, got_default);
  g_assert_cmpstr (g_type_name (G_PARAM_SPEC_TYPE (got)), ==,
                   g_type_name (G_PARAM_SPEC_TYPE (want)));
  g_assert_cmpstr (g_type_name (got->value_type), ==,
                   g_type_name (want->value_type));
  g_assert_cmpstr (g_param_spec_get_blurb (got), ==,
                   g_param_spec_get_blurb (want));
  g_assert_cmpint (
      got->flags
          & (G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_CONSTRUCT_ONLY),
      ==, G_PARAM_READWRITE | G_PARAM_CONSTRUCT);
  g_assert_cmpstr (got_default, ==, ref_default);
  if (G_IS_PARAM_SPEC_UINT (want))
    {
      g_assert_cmpuint (G_PARAM_SPEC_UINT (got)->minimum, ==,
                        G_PARAM_SPEC_UINT (want)->minimum);
      g_assert_cmpuint (G_PARAM_SPEC_UINT (got)->maximum, ==,
                        G_PARAM_SPEC_UINT (want)->maximum);
    }
  else if (G_IS_PARAM_SPEC_DOUBLE (want))
    {
      g_assert_true (doubles_identical (G_PARAM_SPEC_DOUBLE (got)->minimum,
                                        G_PARAM_SPEC_DOUBLE (want)->minimum));
      g_assert_true (doubles_identical (G_PARAM_SPEC_DOUBLE (got)->maximum,
                                        G_PARAM_SPEC_DOUBLE (want)->maximum));
    }
}

static void
test_same_properties (gconstpointer data)
{
  const char *name = data;
  GType type = chip_type (name);
  g_autoptr (GTypeClass) ref_class = NULL;
  g_autoptr (GTypeClass) chip_class = NULL;
  g_autofree GParamSpec **ref = NULL;
  guint n_ref;

  if (type == G_TYPE_INVALID)
    {
      g_test_skip ("chip not built");
      return;
    }
  ref_class = g_type_class_ref (TEST_TYPE_REFERENCE);
  chip_class = g_type_class_ref (type);
  ref = g_object_class_list_properties (G_OBJECT_CLASS (ref_class), &n_ref);
  g_assert_cmpuint (n_ref, ==, ELK_CHIP_PROPS_N_PROPERTIES);
  for (guint i = 0; i < n_ref; i++)
    {
      GParamSpec *got = g_object_class_find_property (
          G_OBJECT_CLASS (chip_class), ref[i]->name);
      const char *want_default = NULL;

      g_assert_nonnull (got);
      for (guint d = 0; d < G_N_ELEMENTS (chip_defaults); d++)
        if (g_strcmp0 (chip_defaults[d].chip, name) == 0
            && strcmp (chip_defaults[d].property, ref[i]->name) == 0)
          want_default = chip_defaults[d].value;
      assert_same_pspec (name, got, ref[i], want_default);
    }
  /* One bandwidth-units type for every chip: libelk's. */
  g_assert_true (g_object_class_find_property (G_OBJECT_CLASS (chip_class),
                                               "bandwidth-units")
                     ->value_type
                 == ELK_TYPE_BANDWIDTH_UNITS);
}

/* The experiment loader's conversion (elk_param_parse) refuses @text for
 * @property of chip @name with the out-of-range error naming @range. */
static void
assert_out_of_range (const char *name,
                     GType type,
                     const char *property,
                     const char *text,
                     const char *range)
{
  GValue value = G_VALUE_INIT;
  g_autoptr (GError) error = NULL;
  g_autofree char *expected = g_strdup_printf (
      "parameter '%s': %s is out of range %s", property, text, range);

  g_assert_false (elk_param_parse (type, property, text, NULL, &value, &error));
  g_assert_error (error, ELK_EXPERIMENT_ERROR,
                  ELK_EXPERIMENT_ERROR_OUT_OF_RANGE);
  g_test_message ("%s: %s", name, error->message);
  g_assert_cmpstr (error->message, ==, expected);
  g_assert_false (G_IS_VALUE (&value));
}

static void
test_zero_refused (gconstpointer data)
{
  const char *name = data;
  GType type = chip_type (name);

  if (type == G_TYPE_INVALID)
    {
      g_test_skip ("chip not built");
      return;
    }
  assert_out_of_range (name, type, "link-bw-gbps", "0", "[0.001, 1e+06]");
  assert_out_of_range (name, type, "hbm-bw-gbps", "0", "[0.001, 1e+09]");
  assert_out_of_range (name, type, "inter-chip-bw-gbps", "0", "[0.001, 1e+09]");
  assert_out_of_range (name, type, "clock-ghz", "0", "[0.001, 100]");
  assert_out_of_range (name, type, "matmul-tflops", "0", "[1e-06, 1e+09]");
  assert_out_of_range (name, type, "vector-tflops", "0", "[1e-06, 1e+09]");
  assert_out_of_range (name, type, "cores", "0", "[1, 16777216]");
  assert_out_of_range (name, type, "chips", "0", "[1, 1024]");
  assert_out_of_range (name, type, "hbm-channels", "0", "[1, 4096]");
  assert_out_of_range (name, type, "sram-kib", "0", "[1, 1048576]");
  assert_out_of_range (name, type, "int8-macs-per-cycle", "0",
                       "[0.001, 1e+06]");
  assert_out_of_range (name, type, "link-bw-gbps", "-5.5", "[0.001, 1e+06]");
}

static ElkChipSpec *
dup_spec (GType type, ElkBandwidthUnits units)
{
  g_autoptr (GObject) chip = NULL;
  g_autoptr (GError) error = NULL;
  ElkChipSpec *spec;
  guint cores = 0, channels = 0;
  double link = 0;

  /* Two chips of 736 cores each: every chip models that. */
  chip = g_object_new (type, "chips", 2, "cores", 1472, "sram-kib", 512,
                       "reserved-kib", 16, "link-bw-gbps", 8.0, "hbm-bw-gbps",
                       8000.0, "hbm-channels", 8, "inter-chip-bw-gbps", 320.0,
                       "clock-ghz", 1.5, "matmul-tflops", 500.0,
                       "vector-tflops", 20.0, "bandwidth-units", units,
                       "int8-macs-per-cycle", 96.0, NULL);
  spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
  g_assert_no_error (error);
  g_assert_nonnull (spec);
  g_object_get (chip, "cores", &cores, "hbm-channels", &channels,
                "link-bw-gbps", &link, NULL);
  g_assert_cmpuint (cores, ==, 1472);
  g_assert_cmpuint (channels, ==, 8);
  g_assert_cmpfloat (link, ==, 8.0);
  return spec;
}

static void
test_spec_reflects (gconstpointer data)
{
  const char *name = data;
  GType type = chip_type (name);

  if (type == G_TYPE_INVALID)
    {
      g_test_skip ("chip not built");
      return;
    }
  for (guint u = 0; u < 2; u++)
    {
      ElkBandwidthUnits units
          = u == 0 ? ELK_BANDWIDTH_UNITS_ARTIFACT : ELK_BANDWIDTH_UNITS_DECIMAL;
      double gb = u == 0 ? 1048576e3 : 1e9;
      g_autoptr (ElkChipSpec) spec = dup_spec (type, units);

      g_assert_cmpuint (spec->n_chips, ==, 2);
      g_assert_cmpuint (spec->cores, ==, 1472);
      g_assert_cmpuint (spec->sram_per_core, ==, 512 * 1024);
      g_assert_cmpuint (spec->sram_reserved, ==, 16 * 1024);
      g_assert_cmpint (spec->topology, ==, ELK_TOPOLOGY_ALL_TO_ALL);
      g_assert_cmpuint (spec->hbm_channels, ==, 8);
      g_assert_true (doubles_identical (spec->link_bw, 8.0 * gb));
      g_assert_true (doubles_identical (spec->hbm_bw, 8000.0 * gb));
      g_assert_true (doubles_identical (spec->inter_chip_bw, 320.0 * gb));
      g_assert_true (doubles_identical (spec->clock_hz, 1.5 * 1e9));
      g_assert_true (doubles_identical (spec->matmul_flops, 500.0 * 1e12));
      g_assert_true (doubles_identical (spec->vector_flops, 20.0 * 1e12));
      g_assert_cmpfloat (spec->cost.int8_macs_per_cycle, ==, 96.0);
    }
}

/* A mesh: noc-sim simulates one, analytic and ipu-pod refuse it with an
 * error that names the topology. */
static void
test_topology (gconstpointer data)
{
  const char *name = data;
  GType type = chip_type (name);
  g_autoptr (GObject) chip = NULL;
  g_autoptr (ElkChipSpec) spec = NULL;
  g_autoptr (GError) error = NULL;

  if (type == G_TYPE_INVALID)
    {
      g_test_skip ("chip not built");
      return;
    }
  chip = g_object_new (type, "chips", 1, "cores", 16, "hbm-channels", 4,
                       "topology", ELK_TOPOLOGY_MESH, "mesh-rows", 4,
                       "mesh-cols", 4, NULL);
  spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
  if (strcmp (name, "noc-sim") == 0)
    {
      g_assert_no_error (error);
      g_assert_cmpint (spec->topology, ==, ELK_TOPOLOGY_MESH);
      g_assert_cmpuint (spec->mesh_rows, ==, 4);
      g_assert_cmpuint (spec->mesh_cols, ==, 4);
    }
  else
    {
      g_assert_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG);
      g_assert_null (spec);
      g_assert_nonnull (strstr (error->message, "topology 'mesh'"));
    }
}

/* ---- elk_field_properties_install(): properties that are plain fields ---- */

#define TEST_TYPE_FIELDS (test_fields_get_type ())
G_DECLARE_FINAL_TYPE (TestFields, test_fields, TEST, FIELDS, GObject)

struct _TestFields
{
  GObject parent_instance;
  gboolean flag;
  gint i;
  guint u;
  gint64 i64;
  guint64 u64;
  double d;
  gint units;
};

G_DEFINE_FINAL_TYPE (TestFields, test_fields, G_TYPE_OBJECT)

static void
test_fields_class_init (TestFieldsClass *klass)
{
  GParamFlags rw
      = G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS;
  ElkFieldProperty props[] = {
    { g_param_spec_boolean ("flag", NULL, "b", TRUE, rw),
      G_STRUCT_OFFSET (TestFields, flag) },
    { g_param_spec_int ("i", NULL, "i", -10, 10, -3, rw),
      G_STRUCT_OFFSET (TestFields, i) },
    { g_param_spec_uint ("u", NULL, "u", 0, 10, 7, rw),
      G_STRUCT_OFFSET (TestFields, u) },
    { g_param_spec_int64 ("i64", NULL, "i64", G_MININT64, 0, -(1ll << 40), rw),
      G_STRUCT_OFFSET (TestFields, i64) },
    { g_param_spec_uint64 ("u64", NULL, "u64", 0, G_MAXUINT64, 1ull << 50, rw),
      G_STRUCT_OFFSET (TestFields, u64) },
    { g_param_spec_double ("d", NULL, "d", 0.0, 1.0, 0.25, rw),
      G_STRUCT_OFFSET (TestFields, d) },
    { g_param_spec_enum ("units", NULL, "e", ELK_TYPE_BANDWIDTH_UNITS,
                         ELK_BANDWIDTH_UNITS_ARTIFACT, rw),
      G_STRUCT_OFFSET (TestFields, units) },
  };

  elk_field_properties_install (G_OBJECT_CLASS (klass), props,
                                G_N_ELEMENTS (props));
}

static void
test_fields_init (TestFields *self)
{
  (void) self;
}

/* Defaults land in the fields, g_object_set() writes them and
 * g_object_get() reads them back, for every supported type. */
static void
test_field_properties (void)
{
  g_autoptr (TestFields) f = g_object_new (TEST_TYPE_FIELDS, NULL);
  gboolean flag;
  gint i, units;
  guint u;
  gint64 i64;
  guint64 u64;
  double d;

  g_assert_true (f->flag);
  g_assert_cmpint (f->i, ==, -3);
  g_assert_cmpuint (f->u, ==, 7);
  g_assert_cmpint (f->i64, ==, -(1ll << 40));
  g_assert_cmpuint (f->u64, ==, 1ull << 50);
  g_assert_cmpfloat (f->d, ==, 0.25);
  g_assert_cmpint (f->units, ==, ELK_BANDWIDTH_UNITS_ARTIFACT);

  g_object_set (f, "flag", FALSE, "i", 9, "u", 2, "i64", G_MININT64, "u64",
                G_MAXUINT64, "d", 1.0, "units", ELK_BANDWIDTH_UNITS_DECIMAL,
                NULL);
  g_assert_false (f->flag);
  g_assert_cmpint (f->i, ==, 9);
  g_assert_cmpuint (f->u, ==, 2);
  g_assert_cmpint (f->i64, ==, G_MININT64);
  g_assert_cmpuint (f->u64, ==, G_MAXUINT64);
  g_assert_cmpfloat (f->d, ==, 1.0);
  g_assert_cmpint (f->units, ==, ELK_BANDWIDTH_UNITS_DECIMAL);

  g_object_get (f, "flag", &flag, "i", &i, "u", &u, "i64", &i64, "u64", &u64,
                "d", &d, "units", &units, NULL);
  g_assert_false (flag);
  g_assert_cmpint (i, ==, 9);
  g_assert_cmpuint (u, ==, 2);
  g_assert_cmpint (i64, ==, G_MININT64);
  g_assert_cmpuint (u64, ==, G_MAXUINT64);
  g_assert_cmpfloat (d, ==, 1.0);
  g_assert_cmpint (units, ==, ELK_BANDWIDTH_UNITS_DECIMAL);
}

#define TEST_TYPE_BAD_FIELDS (test_bad_fields_get_type ())
G_DECLARE_FINAL_TYPE (TestBadFields, test_bad_fields, TEST, BAD_FIELDS, GObject)

struct _TestBadFields
{
  GObject parent_instance;
  char *name;
  guint u;
};

G_DEFINE_FINAL_TYPE (TestBadFields, test_bad_fields, G_TYPE_OBJECT)

static void
test_bad_fields_class_init (TestBadFieldsClass *klass)
{
  ElkFieldProperty props[] = {
    { g_param_spec_string ("name", NULL, "s", NULL, G_PARAM_READWRITE),
      G_STRUCT_OFFSET (TestBadFields, name) },
    { g_param_spec_uint ("u", NULL, "u", 0, 10, 7, G_PARAM_READWRITE),
      G_STRUCT_OFFSET (TestBadFields, u) },
  };

  elk_field_properties_install (G_OBJECT_CLASS (klass), props,
                                G_N_ELEMENTS (props));
}

static void
test_bad_fields_init (TestBadFields *self)
{
  (void) self;
}

/* A string property cannot be a field property (its ownership needs a
 * finalize): the class gets a critical naming it, and only the other
 * properties. */
static void
test_field_properties_unsupported (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr (GTypeClass) klass = g_type_class_ref (TEST_TYPE_BAD_FIELDS);

      g_assert_null (
          g_object_class_find_property (G_OBJECT_CLASS (klass), "name"));
      g_assert_nonnull (
          g_object_class_find_property (G_OBJECT_CLASS (klass), "u"));
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*TestBadFields: property 'name' has type "
                             "gchararray, which a field property cannot "
                             "hold*");
}

int
main (int argc, char *argv[])
{
  int status;

  g_test_init (&argc, &argv, NULL);

  registry = elk_test_registry_new_default ();

  g_test_add_func ("/chip-props/defaults", test_defaults);
  g_test_add_func ("/chip-props/own-type", test_own_type);
  g_test_add_func ("/field-properties/types", test_field_properties);
  g_test_add_func ("/field-properties/unsupported",
                   test_field_properties_unsupported);
  for (guint c = 0; c < G_N_ELEMENTS (chip_names); c++)
    {
      static const struct
      {
        const char *path;
        GTestDataFunc func;
      } tests[] = {
        { "same-properties", test_same_properties },
        { "zero-refused", test_zero_refused },
        { "spec-reflects", test_spec_reflects },
        { "topology", test_topology },
      };

      for (guint t = 0; t < G_N_ELEMENTS (tests); t++)
        {
          g_autofree char *path = g_strdup_printf (
              "/chip-props/%s/%s", tests[t].path, chip_names[c]);
          g_test_add_data_func (path, chip_names[c], tests[t].func);
        }
    }
  status = g_test_run ();
  g_object_unref (registry);
  return status;
}
