/* elk-param.c: strict conversion of experiment text into property values.
 *
 * Every <param> value is converted by the type of the property it names,
 * and nothing is guessed: "8x" is not 8, "yes" is not a boolean, an enum
 * value must be one of the nicks, and a value outside the property's range
 * is an error rather than something GObject would silently clamp.  Paths
 * (properties flagged ELK_PARAM_PATH) are resolved relative to the
 * experiment file and must exist.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "elk-private.h"

#define BAD(code, ...)                                                       \
  G_STMT_START                                                               \
  {                                                                          \
    g_set_error (error, ELK_EXPERIMENT_ERROR, (code), __VA_ARGS__);          \
    return FALSE;                                                            \
  }                                                                          \
  G_STMT_END

static gboolean
parse_signed (const char *text, gint64 *out)
{
  return g_ascii_string_to_signed (text, 10, G_MININT64, G_MAXINT64, out,
                                   NULL);
}

static gboolean
parse_unsigned (const char *text, guint64 *out)
{
  /* g_ascii_string_to_unsigned refuses a leading '-', as it should. */
  return g_ascii_string_to_unsigned (text, 10, 0, G_MAXUINT64, out, NULL);
}

static gboolean
parse_double (const char *text, double *out)
{
  char *end = NULL;

  if (*text == '\0' || g_ascii_isspace (*text))
    return FALSE;
  *out = g_ascii_strtod (text, &end);
  return end != NULL && *end == '\0' && isfinite (*out);
}

static char *
list_enum_nicks (GEnumClass *klass)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < klass->n_values; i++)
    {
      if (i > 0)
        g_string_append (s, ", ");
      g_string_append (s, klass->values[i].value_nick);
    }
  return g_string_free (s, FALSE);
}

/**
 * elk__param_list_names:
 * Returns: (transfer full): the writable property names of @klass, sorted
 *   and comma-separated, for "unknown parameter" messages.
 */
char *
elk__param_list_names (GObjectClass *klass)
{
  guint n = 0;
  g_autofree GParamSpec **specs = g_object_class_list_properties (klass, &n);
  g_autoptr (GPtrArray) names = g_ptr_array_new ();
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < n; i++)
    if ((specs[i]->flags & G_PARAM_WRITABLE) != 0)
      g_ptr_array_add (names, (gpointer) specs[i]->name);
  g_ptr_array_sort (names, elk__compare_strings);
  for (guint i = 0; i < names->len; i++)
    g_string_append_printf (s, "%s%s", i > 0 ? ", " : "",
                            (const char *) names->pdata[i]);
  if (s->len == 0)
    g_string_append (s, "none");
  return g_string_free (s, FALSE);
}

/**
 * elk__param_parse:
 * @pspec: the property
 * @text: the value as written in the file (already stripped)
 * @base_dir: (type filename): folder relative paths are resolved against
 * @value: (out caller-allocates): an unset GValue, initialised here
 * @error: return location for a #GError
 *
 * Returns: %TRUE if @text is a valid value for @pspec.  The error message
 *   names the property and the expectation; the caller prefixes file:line.
 */
gboolean
elk__param_parse (GParamSpec *pspec,
                  const char *text,
                  const char *base_dir,
                  GValue *value,
                  GError **error)
{
  GType type = G_PARAM_SPEC_VALUE_TYPE (pspec);
  const char *name = pspec->name;

  g_value_init (value, type);

  if (G_IS_PARAM_SPEC_INT (pspec) || G_IS_PARAM_SPEC_INT64 (pspec)
      || G_IS_PARAM_SPEC_LONG (pspec))
    {
      gint64 v, lo, hi;
      if (!parse_signed (text, &v))
        BAD (ELK_EXPERIMENT_ERROR_BAD_VALUE,
             "parameter '%s': '%s' is not an integer", name, text);
      if (G_IS_PARAM_SPEC_INT (pspec))
        lo = G_PARAM_SPEC_INT (pspec)->minimum,
        hi = G_PARAM_SPEC_INT (pspec)->maximum;
      else if (G_IS_PARAM_SPEC_LONG (pspec))
        lo = G_PARAM_SPEC_LONG (pspec)->minimum,
        hi = G_PARAM_SPEC_LONG (pspec)->maximum;
      else
        lo = G_PARAM_SPEC_INT64 (pspec)->minimum,
        hi = G_PARAM_SPEC_INT64 (pspec)->maximum;
      if (v < lo || v > hi)
        BAD (ELK_EXPERIMENT_ERROR_OUT_OF_RANGE,
             "parameter '%s': %s is out of range [%" G_GINT64_FORMAT ", %"
             G_GINT64_FORMAT "]", name, text, lo, hi);
      if (G_IS_PARAM_SPEC_INT (pspec))
        g_value_set_int (value, (gint) v);
      else if (G_IS_PARAM_SPEC_LONG (pspec))
        g_value_set_long (value, (glong) v);
      else
        g_value_set_int64 (value, v);
    }
  else if (G_IS_PARAM_SPEC_UINT (pspec) || G_IS_PARAM_SPEC_UINT64 (pspec)
           || G_IS_PARAM_SPEC_ULONG (pspec))
    {
      guint64 v, lo, hi;
      if (!parse_unsigned (text, &v))
        BAD (ELK_EXPERIMENT_ERROR_BAD_VALUE,
             "parameter '%s': '%s' is not a non-negative integer", name,
             text);
      if (G_IS_PARAM_SPEC_UINT (pspec))
        lo = G_PARAM_SPEC_UINT (pspec)->minimum,
        hi = G_PARAM_SPEC_UINT (pspec)->maximum;
      else if (G_IS_PARAM_SPEC_ULONG (pspec))
        lo = G_PARAM_SPEC_ULONG (pspec)->minimum,
        hi = G_PARAM_SPEC_ULONG (pspec)->maximum;
      else
        lo = G_PARAM_SPEC_UINT64 (pspec)->minimum,
        hi = G_PARAM_SPEC_UINT64 (pspec)->maximum;
      if (v < lo || v > hi)
        BAD (ELK_EXPERIMENT_ERROR_OUT_OF_RANGE,
             "parameter '%s': %s is out of range [%" G_GUINT64_FORMAT ", %"
             G_GUINT64_FORMAT "]", name, text, lo, hi);
      if (G_IS_PARAM_SPEC_UINT (pspec))
        g_value_set_uint (value, (guint) v);
      else if (G_IS_PARAM_SPEC_ULONG (pspec))
        g_value_set_ulong (value, (gulong) v);
      else
        g_value_set_uint64 (value, v);
    }
  else if (G_IS_PARAM_SPEC_DOUBLE (pspec) || G_IS_PARAM_SPEC_FLOAT (pspec))
    {
      double v, lo, hi;
      if (!parse_double (text, &v))
        BAD (ELK_EXPERIMENT_ERROR_BAD_VALUE,
             "parameter '%s': '%s' is not a finite number", name, text);
      if (G_IS_PARAM_SPEC_DOUBLE (pspec))
        lo = G_PARAM_SPEC_DOUBLE (pspec)->minimum,
        hi = G_PARAM_SPEC_DOUBLE (pspec)->maximum;
      else
        lo = G_PARAM_SPEC_FLOAT (pspec)->minimum,
        hi = G_PARAM_SPEC_FLOAT (pspec)->maximum;
      if (v < lo || v > hi)
        BAD (ELK_EXPERIMENT_ERROR_OUT_OF_RANGE,
             "parameter '%s': %s is out of range [%g, %g]", name, text, lo,
             hi);
      if (G_IS_PARAM_SPEC_DOUBLE (pspec))
        g_value_set_double (value, v);
      else
        g_value_set_float (value, (float) v);
    }
  else if (G_IS_PARAM_SPEC_BOOLEAN (pspec))
    {
      if (strcmp (text, "true") == 0)
        g_value_set_boolean (value, TRUE);
      else if (strcmp (text, "false") == 0)
        g_value_set_boolean (value, FALSE);
      else
        BAD (ELK_EXPERIMENT_ERROR_BAD_VALUE,
             "parameter '%s': '%s' is not a boolean (expected true or "
             "false)", name, text);
    }
  else if (G_IS_PARAM_SPEC_ENUM (pspec))
    {
      GEnumClass *klass = G_PARAM_SPEC_ENUM (pspec)->enum_class;
      GEnumValue *v = g_enum_get_value_by_nick (klass, text);
      if (v == NULL)
        {
          g_autofree char *nicks = list_enum_nicks (klass);
          BAD (ELK_EXPERIMENT_ERROR_BAD_VALUE,
               "parameter '%s': unknown value '%s' (expected one of: %s)",
               name, text, nicks);
        }
      g_value_set_enum (value, v->value);
    }
  else if (G_IS_PARAM_SPEC_STRING (pspec))
    {
      if ((pspec->flags & ELK_PARAM_PATH) != 0 && *text != '\0')
        {
          g_autofree char *path = g_path_is_absolute (text)
                                    ? g_strdup (text)
                                    : g_build_filename (base_dir, text, NULL);
          g_autofree char *canonical = g_canonicalize_filename (path, NULL);
          if (!g_file_test (canonical, G_FILE_TEST_IS_REGULAR))
            BAD (ELK_EXPERIMENT_ERROR_MISSING_FILE,
                 "parameter '%s': file '%s' does not exist (resolved to "
                 "'%s')", name, text, canonical);
          g_value_set_string (value, canonical);
        }
      else
        g_value_set_string (value, text);
    }
  else
    BAD (ELK_EXPERIMENT_ERROR_BAD_VALUE,
         "parameter '%s' has type %s, which experiment files cannot set",
         name, g_type_name (type));

  /* Anything the checks above missed (a custom pspec's own rule): GObject
   * reports it by changing the value, which we treat as out of range. */
  if (g_param_value_validate (pspec, value))
    BAD (ELK_EXPERIMENT_ERROR_OUT_OF_RANGE,
         "parameter '%s': '%s' is not an accepted value", name, text);
  return TRUE;
}

/**
 * elk_param_parse:
 * @type: a plugin implementation type (an #ElkFeature's type)
 * @name: a property name
 * @text: the value as text, converted exactly as an experiment file's
 *   <param> is
 * @base_dir: (type filename) (nullable): folder that relative paths of
 *   %ELK_PARAM_PATH properties are resolved against (%NULL: the current
 *   folder)
 * @value: (out caller-allocates): an unset #GValue, initialised here
 * @error: return location for a #GError
 *
 * Converts a parameter given as text (on a command line, say) into a value
 * for property @name of @type with the experiment loader's strict rules:
 * an unknown or read-only property is %ELK_EXPERIMENT_ERROR_UNKNOWN_PARAM
 * and its message lists the valid names; a malformed or out-of-range value
 * is %ELK_EXPERIMENT_ERROR_BAD_VALUE or %ELK_EXPERIMENT_ERROR_OUT_OF_RANGE
 * naming the parameter and what was expected.  Pass the names and values
 * to g_object_new_with_properties().
 *
 * Returns: %TRUE if @value holds the converted value; %FALSE with @error
 *   set (and @value unset) otherwise.
 *
 * Since: 0.1
 */
gboolean
elk_param_parse (GType type,
                 const char *name,
                 const char *text,
                 const char *base_dir,
                 GValue *value,
                 GError **error)
{
  GObjectClass *klass;
  GParamSpec *pspec;
  g_autofree char *cwd = NULL;
  gboolean ok;

  g_return_val_if_fail (G_TYPE_IS_OBJECT (type), FALSE);
  g_return_val_if_fail (name != NULL && text != NULL, FALSE);
  g_return_val_if_fail (value != NULL && !G_IS_VALUE (value), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  klass = g_type_class_ref (type);
  pspec = g_object_class_find_property (klass, name);
  if (pspec == NULL || (pspec->flags & G_PARAM_WRITABLE) == 0)
    {
      g_autofree char *names = elk__param_list_names (klass);
      g_set_error (error, ELK_EXPERIMENT_ERROR,
                   ELK_EXPERIMENT_ERROR_UNKNOWN_PARAM,
                   "%s has no parameter '%s' (valid: %s)",
                   g_type_name (type), name, names);
      g_type_class_unref (klass);
      return FALSE;
    }
  if (base_dir == NULL)
    base_dir = cwd = g_get_current_dir ();
  ok = elk__param_parse (pspec, text, base_dir, value, error);
  if (!ok && G_IS_VALUE (value))
    g_value_unset (value);
  g_type_class_unref (klass);
  return ok;
}

/* Field properties: a property whose value is one field of the instance
 * struct, read and written without side effects.  The field's offset rides
 * on the GParamSpec as qdata, so one pair of accessors serves every class
 * that installs its properties with elk_field_properties_install(). */

static GQuark
field_offset_quark (void)
{
  static gsize quark = 0;

  if (g_once_init_enter (&quark))
    g_once_init_leave (&quark, g_quark_from_static_string ("elk-field-offset"));
  return (GQuark) quark;
}

static gboolean
field_type_supported (GType type)
{
  switch (G_TYPE_FUNDAMENTAL (type))
    {
    case G_TYPE_BOOLEAN:
    case G_TYPE_INT:
    case G_TYPE_UINT:
    case G_TYPE_INT64:
    case G_TYPE_UINT64:
    case G_TYPE_DOUBLE:
    case G_TYPE_ENUM:
      return TRUE;
    default:
      return FALSE;
    }
}

/* The field @pspec stands for in @object, or NULL when @pspec was not
 * installed as a field property.  The offset is stored plus one so that a
 * missing qdata (NULL) is told apart from offset 0. */
static gpointer
field_of (GObject *object, GParamSpec *pspec)
{
  gsize stored = GPOINTER_TO_SIZE (
      g_param_spec_get_qdata (pspec, field_offset_quark ()));

  return stored == 0 ? NULL : G_STRUCT_MEMBER_P (object, stored - 1);
}

/**
 * elk_field_properties_install:
 * @klass: the class being initialised (call from class_init)
 * @props: (array length=n_props): the properties and their fields; the
 *   floating references of the specs are sunk
 * @n_props: the number of elements of @props
 *
 * Installs @props as properties 1 to @n_props of @klass and sets the
 * class's get_property and set_property to elk_field_property_get() and
 * elk_field_property_set(), so that a plugin whose parameters are plain
 * fields needs no accessors and no property-id enum:
 *
 * |[<!-- language="C" -->
 *   ElkFieldProperty props[] = {
 *     { g_param_spec_double ("load-noc-share", NULL, "...", 0.05, 1.0, 0.99,
 *                            G_PARAM_READWRITE | G_PARAM_CONSTRUCT
 *                              | G_PARAM_STATIC_STRINGS),
 *       G_STRUCT_OFFSET (AcmeScheduler, theta) },
 *   };
 *   elk_field_properties_install (G_OBJECT_CLASS (klass), props,
 *                                 G_N_ELEMENTS (props));
 * ]|
 *
 * A field holds a #gboolean, #gint, #guint, #gint64, #guint64, #gdouble or
 * (for an enum property) a #gint.  Other value types, strings among them
 * (their ownership needs a finalize), are a programming error, reported
 * with g_critical() and not installed.  A class with properties that do
 * more than store a value keeps its own accessors and calls
 * elk_field_property_get() and elk_field_property_set() for the rest.
 *
 * Since: 0.1
 */
void
elk_field_properties_install (GObjectClass *klass,
                              const ElkFieldProperty *props,
                              guint n_props)
{
  g_return_if_fail (G_IS_OBJECT_CLASS (klass));
  g_return_if_fail (props != NULL || n_props == 0);

  klass->get_property = elk_field_property_get;
  klass->set_property = elk_field_property_set;
  for (guint i = 0; i < n_props; i++)
    {
      GParamSpec *pspec = props[i].pspec;

      g_return_if_fail (G_IS_PARAM_SPEC (pspec));
      if (!field_type_supported (G_PARAM_SPEC_VALUE_TYPE (pspec)))
        {
          g_critical ("%s: property '%s' has type %s, which a field "
                      "property cannot hold",
                      G_OBJECT_CLASS_NAME (klass), pspec->name,
                      g_type_name (G_PARAM_SPEC_VALUE_TYPE (pspec)));
          g_param_spec_unref (g_param_spec_ref_sink (pspec));
          continue;
        }
      g_param_spec_set_qdata (pspec, field_offset_quark (),
                              GSIZE_TO_POINTER (props[i].offset + 1));
      g_object_class_install_property (klass, i + 1, pspec);
    }
}

/**
 * elk_field_property_set:
 * @object: the object
 * @prop_id: the property id
 * @value: the new value
 * @pspec: the property, installed by elk_field_properties_install()
 *
 * A #GObjectClass.set_property that stores @value in the field @pspec was
 * installed with; any other property is reported as invalid, as
 * G_OBJECT_WARN_INVALID_PROPERTY_ID() does.
 *
 * Since: 0.1
 */
void
elk_field_property_set (GObject *object,
                        guint prop_id,
                        const GValue *value,
                        GParamSpec *pspec)
{
  gpointer field = field_of (object, pspec);

  if (field == NULL)
    {
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      return;
    }
  switch (G_TYPE_FUNDAMENTAL (G_PARAM_SPEC_VALUE_TYPE (pspec)))
    {
    case G_TYPE_BOOLEAN:
      *(gboolean *) field = g_value_get_boolean (value);
      break;
    case G_TYPE_INT:
      *(gint *) field = g_value_get_int (value);
      break;
    case G_TYPE_UINT:
      *(guint *) field = g_value_get_uint (value);
      break;
    case G_TYPE_INT64:
      *(gint64 *) field = g_value_get_int64 (value);
      break;
    case G_TYPE_UINT64:
      *(guint64 *) field = g_value_get_uint64 (value);
      break;
    case G_TYPE_DOUBLE:
      *(double *) field = g_value_get_double (value);
      break;
    case G_TYPE_ENUM:
      *(gint *) field = g_value_get_enum (value);
      break;
    default:
      g_assert_not_reached ();
    }
}

/**
 * elk_field_property_get:
 * @object: the object
 * @prop_id: the property id
 * @value: (out caller-allocates): set to the field's value
 * @pspec: the property, installed by elk_field_properties_install()
 *
 * The #GObjectClass.get_property that goes with elk_field_property_set().
 *
 * Since: 0.1
 */
void
elk_field_property_get (GObject *object,
                        guint prop_id,
                        GValue *value,
                        GParamSpec *pspec)
{
  gpointer field = field_of (object, pspec);

  if (field == NULL)
    {
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      return;
    }
  switch (G_TYPE_FUNDAMENTAL (G_PARAM_SPEC_VALUE_TYPE (pspec)))
    {
    case G_TYPE_BOOLEAN:
      g_value_set_boolean (value, *(gboolean *) field);
      break;
    case G_TYPE_INT:
      g_value_set_int (value, *(gint *) field);
      break;
    case G_TYPE_UINT:
      g_value_set_uint (value, *(guint *) field);
      break;
    case G_TYPE_INT64:
      g_value_set_int64 (value, *(gint64 *) field);
      break;
    case G_TYPE_UINT64:
      g_value_set_uint64 (value, *(guint64 *) field);
      break;
    case G_TYPE_DOUBLE:
      g_value_set_double (value, *(double *) field);
      break;
    case G_TYPE_ENUM:
      g_value_set_enum (value, *(gint *) field);
      break;
    default:
      g_assert_not_reached ();
    }
}
