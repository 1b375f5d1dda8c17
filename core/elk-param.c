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
