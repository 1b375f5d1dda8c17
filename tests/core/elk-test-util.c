/* tests/core/elk-test-util.c: fixture paths and a private registry. */
#include "elk-test-util.h"

#include <string.h>

/* Fixture plugins are built into build/tests/fixtures/plugins. */
char *
elk_test_fixture_plugin (const char *name)
{
  g_autofree char *base = g_strdup_printf ("libelk-%s.%s", name,
                                           G_MODULE_SUFFIX);
  return g_test_build_filename (G_TEST_BUILT, "fixtures", "plugins",
                                base, NULL);
}

char *
elk_test_fixture_experiment (const char *name)
{
  g_autofree char *base = g_strdup_printf ("%s.xml", name);
  return g_test_build_filename (G_TEST_DIST, "fixtures", "experiments",
                                base, NULL);
}

/* A registry that knows only the good fixture plugin. */
ElkRegistry *
elk_test_registry_with_good (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = elk_test_fixture_plugin ("good");
  ElkRegistry *registry = elk_registry_new ();

  g_assert_true (elk_registry_load_file (registry, path, &error));
  g_assert_no_error (error);
  return registry;
}

/* Asserts that the message starts with "<file>:<line>:" for the named
 * fixture file, the shape every experiment error has. */
void
elk_test_assert_has_line (const GError *error, const char *file)
{
  g_autofree char *prefix = g_strdup_printf ("%s:", file);
  const char *rest;
  char *end = NULL;
  guint64 line;

  g_assert_nonnull (error);
  g_assert_true (g_str_has_prefix (error->message, prefix));
  rest = error->message + strlen (prefix);
  line = g_ascii_strtoull (rest, &end, 10);
  g_assert_cmpuint (line, >, 0);
  g_assert_true (end != rest && *end == ':');
}

/* A plugin object of @kind by feature @name, with properties as for
 * g_object_new(); the feature must exist. */
GObject *
elk_test_make (ElkRegistry *registry,
               GType kind,
               const char *name,
               const char *first_prop,
               ...)
{
  g_autoptr(GError) error = NULL;
  const ElkFeature *f = elk_registry_find (registry, kind, name, &error);
  GObject *obj;
  va_list ap;

  g_assert_no_error (error);
  g_assert_nonnull (f);
  va_start (ap, first_prop);
  obj = g_object_new_valist (f->type, first_prop, ap);
  va_end (ap);
  return obj;
}
