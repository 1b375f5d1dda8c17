/* elk-inspect: what plugins elk sees, modelled on gst-inspect.
 *
 *   elk-inspect            every feature by kind, with its file (every file
 *                          when several provide the name), every file
 *                          that failed to load and why, and every file
 *                          ignored and why
 *   elk-inspect NAME       one feature: description, version, ABI and each
 *                          property with type, range, default and blurb
 *   elk-inspect --schema   the experiment file schema
 */
#include "config.h"

#include <stdlib.h>
#include <locale.h>
#include <string.h>

#include <elk/elk.h>

static const GType *
all_kinds (guint *n)
{
  static GType kinds[4];
  kinds[0] = ELK_TYPE_FRONTEND;
  kinds[1] = ELK_TYPE_CHIP;
  kinds[2] = ELK_TYPE_SCHEDULER;
  kinds[3] = ELK_TYPE_ALLOCATOR;
  *n = 4;
  return kinds;
}

static char *
describe_range (GParamSpec *pspec)
{
  g_auto (GValue) def = G_VALUE_INIT;
  g_autofree char *def_text = NULL;

  g_value_init (&def, G_PARAM_SPEC_VALUE_TYPE (pspec));
  g_param_value_set_default (pspec, &def);
  def_text = g_strdup_value_contents (&def);

  if (G_IS_PARAM_SPEC_UINT (pspec))
    return g_strdup_printf ("unsigned integer, range %u - %u, default %s",
                            G_PARAM_SPEC_UINT (pspec)->minimum,
                            G_PARAM_SPEC_UINT (pspec)->maximum, def_text);
  if (G_IS_PARAM_SPEC_INT (pspec))
    return g_strdup_printf ("integer, range %d - %d, default %s",
                            G_PARAM_SPEC_INT (pspec)->minimum,
                            G_PARAM_SPEC_INT (pspec)->maximum, def_text);
  if (G_IS_PARAM_SPEC_UINT64 (pspec))
    return g_strdup_printf ("unsigned 64-bit integer, range %" G_GUINT64_FORMAT
                            " - %" G_GUINT64_FORMAT ", default %s",
                            G_PARAM_SPEC_UINT64 (pspec)->minimum,
                            G_PARAM_SPEC_UINT64 (pspec)->maximum, def_text);
  if (G_IS_PARAM_SPEC_INT64 (pspec))
    return g_strdup_printf ("64-bit integer, range %" G_GINT64_FORMAT " - %"
                            G_GINT64_FORMAT ", default %s",
                            G_PARAM_SPEC_INT64 (pspec)->minimum,
                            G_PARAM_SPEC_INT64 (pspec)->maximum, def_text);
  if (G_IS_PARAM_SPEC_DOUBLE (pspec))
    return g_strdup_printf ("number, range %g - %g, default %s",
                            G_PARAM_SPEC_DOUBLE (pspec)->minimum,
                            G_PARAM_SPEC_DOUBLE (pspec)->maximum, def_text);
  if (G_IS_PARAM_SPEC_BOOLEAN (pspec))
    return g_strdup_printf ("boolean (true or false), default %s", def_text);
  if (G_IS_PARAM_SPEC_ENUM (pspec))
    {
      GEnumClass *klass = G_PARAM_SPEC_ENUM (pspec)->enum_class;
      GString *s = g_string_new ("one of: ");
      GEnumValue *dv = g_enum_get_value (
        klass, G_PARAM_SPEC_ENUM (pspec)->default_value);
      for (guint i = 0; i < klass->n_values; i++)
        g_string_append_printf (s, "%s%s", i > 0 ? ", " : "",
                                klass->values[i].value_nick);
      g_string_append_printf (s, "; default %s",
                              dv != NULL ? dv->value_nick : "?");
      return g_string_free (s, FALSE);
    }
  if (G_IS_PARAM_SPEC_STRING (pspec))
    return g_strdup_printf ("%s, default %s",
                            (pspec->flags & ELK_PARAM_PATH) != 0
                              ? "file path (relative to the experiment)"
                              : "string",
                            def_text);
  return g_strdup_printf ("%s, default %s",
                          g_type_name (G_PARAM_SPEC_VALUE_TYPE (pspec)),
                          def_text);
}

static void
print_feature (const ElkFeature *feature)
{
  GObjectClass *klass = g_type_class_ref (feature->type);
  guint n = 0;
  g_autofree GParamSpec **specs = g_object_class_list_properties (klass, &n);

  g_print ("%s '%s'\n", elk_kind_to_string (feature->kind), feature->name);
  g_print ("  type:         %s\n", g_type_name (feature->type));
  if (feature->plugin != NULL)
    {
      g_print ("  plugin:       %s %s\n",
               elk_plugin_get_name (feature->plugin),
               elk_plugin_get_version (feature->plugin));
      g_print ("  description:  %s\n",
               elk_plugin_get_description (feature->plugin));
      g_print ("  file:         %s\n",
               elk_plugin_get_filename (feature->plugin));
      g_print ("  sha256:       %s\n",
               elk_plugin_get_sha256 (feature->plugin));
      g_print ("  ABI:          %u\n",
               elk_plugin_get_abi_version (feature->plugin));
    }
  g_print ("  parameters:%s\n", n == 0 ? " none" : "");
  for (guint i = 0; i < n; i++)
    {
      g_autofree char *range = describe_range (specs[i]);
      const char *blurb = g_param_spec_get_blurb (specs[i]);
      if ((specs[i]->flags & G_PARAM_WRITABLE) == 0)
        continue;
      g_print ("    %-22s %s\n", specs[i]->name, range);
      if (blurb != NULL && *blurb != '\0')
        g_print ("    %-22s %s\n", "", blurb);
    }
  g_type_class_unref (klass);
}

int
main (int argc, char *argv[])
{
  g_autoptr (GOptionContext) context = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkRegistry) registry = NULL;
  const GPtrArray *failures;
  const GPtrArray *ignored;
  g_autoptr (GHashTable) shown = NULL;
  gboolean schema = FALSE;
  guint n_kinds;
  const GType *kinds = all_kinds (&n_kinds);
  GOptionEntry entries[] = {
    { "schema", 0, 0, G_OPTION_ARG_NONE, &schema,
      "Print the experiment file schema (RelaxNG)", NULL },
    G_OPTION_ENTRY_NULL
  };

  setlocale (LC_ALL, "");
  context = g_option_context_new ("[FEATURE]");
  g_option_context_set_summary (context,
                                "List elk's plugins, or describe one "
                                "feature and its parameters.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      g_printerr ("elk-inspect: %s\n", error->message);
      return 1;
    }
  if (schema)
    {
      g_print ("%s", elk_experiment_get_schema ());
      return 0;
    }

  registry = elk_registry_new ();
  elk_registry_add_default_paths (registry);
  elk_registry_scan (registry);
  failures = elk_registry_get_failures (registry);
  ignored = elk_registry_get_ignored (registry);

  if (argc == 2)
    {
      const char *name = argv[1];
      gboolean found = FALSE;
      /* A name may exist in several kinds (a "basic" scheduler and a
       * "basic" allocator); "kind:name" picks one. */
      g_auto (GStrv) parts = g_strsplit (name, "/", 2);
      GType only = parts[1] != NULL ? elk_kind_from_string (parts[0])
                                    : G_TYPE_INVALID;
      if (parts[1] != NULL)
        name = argv[1] + strlen (parts[0]) + 1;
      for (guint k = 0; k < n_kinds; k++)
        {
          g_autoptr (GPtrArray) providers = NULL;
          g_auto (GStrv) failed = NULL;
          guint n_failed;
          if (only != G_TYPE_INVALID && kinds[k] != only)
            continue;
          providers = elk_registry_list_providers (registry, kinds[k], name);
          failed = elk_registry_get_failed_providers (registry, kinds[k],
                                                      name);
          n_failed = g_strv_length (failed);
          if (providers->len == 0 && n_failed == 0)
            continue;
          if (found)
            g_print ("\n");
          found = TRUE;
          if (providers->len + n_failed > 1)
            g_print ("%s '%s' is provided by %u files; an experiment that "
                     "uses it must say which with plugin=\"FILE\"\n\n",
                     elk_kind_to_string (kinds[k]), name,
                     providers->len + n_failed);
          for (guint i = 0; i < providers->len; i++)
            {
              if (i > 0)
                g_print ("\n");
              print_feature (providers->pdata[i]);
            }
          for (guint i = 0; i < n_failed; i++)
            g_print ("%s%s '%s' from a file that failed to load: %s\n",
                     providers->len + i > 0 ? "\n" : "",
                     elk_kind_to_string (kinds[k]), name, failed[i]);
        }
      if (!found)
        {
          g_printerr ("elk-inspect: no feature named '%s'%s\n", argv[1],
                      failures->len > 0
                        ? "; some plugin files failed to load, run "
                          "elk-inspect without arguments to see why"
                        : "");
          return 1;
        }
      return 0;
    }
  if (argc > 2)
    {
      g_printerr ("elk-inspect: expected at most one feature name\n");
      return 1;
    }

  shown = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint k = 0; k < n_kinds; k++)
    {
      g_autoptr (GPtrArray) list = elk_registry_list_features (registry,
                                                               kinds[k]);
      g_print ("%ss:\n", elk_kind_to_string (kinds[k]));
      if (list->len == 0)
        g_print ("  (none)\n");
      for (guint i = 0; i < list->len; i++)
        {
          const ElkFeature *f = list->pdata[i];
          g_autoptr (GPtrArray) providers = NULL;
          g_auto (GStrv) failed = NULL;
          guint n;
          if (g_hash_table_contains (shown, f->name))
            continue;
          g_hash_table_add (shown, f->name);
          providers = elk_registry_list_providers (registry, kinds[k],
                                                   f->name);
          failed = elk_registry_get_failed_providers (registry, kinds[k],
                                                      f->name);
          n = providers->len + g_strv_length (failed);
          if (n == 1)
            {
              g_print ("  %-16s %s\n", f->name,
                       f->plugin != NULL ? elk_plugin_get_filename (f->plugin)
                                         : "(built in)");
              continue;
            }
          /* Shadowed: an experiment using the name must choose. */
          g_print ("  %-16s provided by %u files (an experiment using it "
                   "must choose one with plugin=\"FILE\"):\n", f->name, n);
          for (guint j = 0; j < providers->len; j++)
            {
              const ElkFeature *p = providers->pdata[j];
              g_print ("  %-16s   %s\n", "",
                       p->plugin != NULL ? elk_plugin_get_filename (p->plugin)
                                         : "(built in)");
            }
          for (guint j = 0; failed[j] != NULL; j++)
            g_print ("  %-16s   failed to load: %s\n", "", failed[j]);
        }
      g_hash_table_remove_all (shown);
    }
  if (failures->len > 0)
    {
      g_print ("files that failed to load:\n");
      for (guint i = 0; i < failures->len; i++)
        {
          const ElkLoadFailure *f = failures->pdata[i];
          g_print ("  %s\n", f->error->message);
        }
    }
  if (ignored->len > 0)
    {
      g_print ("files ignored:\n");
      for (guint i = 0; i < ignored->len; i++)
        {
          const ElkLoadFailure *f = ignored->pdata[i];
          g_print ("  %s\n", f->error->message);
        }
    }
  return 0;
}
