/* tests/core/test-plugin-identity.c: which plugin file a feature comes
 * from (issue 16, item 3).  A name two files provide is an error when it
 * is used, naming both files, unless the experiment's plugin="..." picks
 * one; results.json names the file and SHA-256 of every plugin a run
 * used; a GType defined by two files is a load error naming both, with
 * nothing printed by GLib; elk-inspect shows shadowed names and ignored
 * files with the reason.
 *
 * The fixtures are in tests/fixtures/identity (build/tests/fixtures/
 * identity): libelk-shadow.so (scheduler "fixture", as the good plugin,
 * and "basic", as the shipped plugin), libelk-clash.so (a GType named as
 * one of the good plugin's, registered as scheduler "fixture"),
 * elk-misnamed.so and a byte-for-byte copy of libelk-good.so. */
#include "elk-test-util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char *tmpdir;

static char *
identity_plugin (const char *file)
{
  return g_test_build_filename (G_TEST_BUILT, "fixtures", "identity", file,
                                NULL);
}

static char *
identity_dir (void)
{
  return g_test_build_filename (G_TEST_BUILT, "fixtures", "identity", NULL);
}

static char *
fixture_dir (void)
{
  g_autofree char *good = elk_test_fixture_plugin ("good");
  return g_path_get_dirname (good);
}

static char *
file_sha256 (const char *path)
{
  g_autofree char *data = NULL;
  gsize length = 0;

  g_assert_true (g_file_get_contents (path, &data, &length, NULL));
  return g_compute_checksum_for_data (G_CHECKSUM_SHA256,
                                      (const guchar *) data, length);
}

static void
assert_contains (const char *haystack, const char *needle)
{
  if (strstr (haystack, needle) == NULL)
    g_test_message ("'%s' not found in: %s", needle, haystack);
  g_assert_nonnull (strstr (haystack, needle));
}

static ElkRegistry *
registry_with (const char *const *files)
{
  ElkRegistry *registry = elk_registry_new ();

  for (guint i = 0; files[i] != NULL; i++)
    {
      g_autoptr (GError) error = NULL;
      g_assert_true (elk_registry_load_file (registry, files[i], &error));
      g_assert_no_error (error);
    }
  return registry;
}

static void
test_ambiguous (void)
{
  g_autofree char *good = elk_test_fixture_plugin ("good");
  g_autofree char *shadow = identity_plugin ("libelk-shadow.so");
  const char *files[] = { good, shadow, NULL };
  g_autoptr (ElkRegistry) registry = registry_with (files);
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) providers = NULL;

  g_test_summary ("A name two files provide is refused when used, naming "
                  "both files; names only one file provides still work.");
  /* Both files load: nothing is decided at load time. */
  g_assert_cmpuint (elk_registry_get_failures (registry)->len, ==, 0);
  providers = elk_registry_list_providers (registry, ELK_TYPE_SCHEDULER,
                                           "fixture");
  g_assert_cmpuint (providers->len, ==, 2);

  g_assert_null (elk_registry_find (registry, ELK_TYPE_SCHEDULER, "fixture",
                                    &error));
  g_assert_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_AMBIGUOUS);
  g_test_message ("%s", error->message);
  assert_contains (error->message, good);
  assert_contains (error->message, shadow);
  assert_contains (error->message, "plugin=");
  g_assert_null (elk_registry_lookup (registry, ELK_TYPE_SCHEDULER,
                                      "fixture"));

  /* The good plugin's other kinds are not shadowed. */
  g_clear_error (&error);
  g_assert_nonnull (elk_registry_find (registry, ELK_TYPE_FRONTEND, "fixture",
                                       &error));
  g_assert_no_error (error);
}

static void
test_find_in_file (void)
{
  g_autofree char *good = elk_test_fixture_plugin ("good");
  g_autofree char *shadow = identity_plugin ("libelk-shadow.so");
  const char *files[] = { good, shadow, NULL };
  g_autoptr (ElkRegistry) registry = registry_with (files);
  g_autoptr (GError) error = NULL;
  const ElkFeature *feature;

  g_test_summary ("plugin= picks a file by base name or path, and pins a "
                  "name to a file even when only one file provides it.");
  feature = elk_registry_find_in_file (registry, ELK_TYPE_SCHEDULER,
                                       "fixture", "libelk-good.so", &error);
  g_assert_no_error (error);
  g_assert_cmpstr (elk_plugin_get_filename (feature->plugin), ==, good);
  g_assert_cmpstr (g_type_name (feature->type), ==, "FixtureScheduler");

  feature = elk_registry_find_in_file (registry, ELK_TYPE_SCHEDULER,
                                       "fixture", shadow, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (elk_plugin_get_filename (feature->plugin), ==, shadow);
  g_assert_cmpstr (g_type_name (feature->type), ==, "DupScheduler");

  /* A file that is not loaded. */
  g_assert_null (elk_registry_find_in_file (registry, ELK_TYPE_SCHEDULER,
                                            "fixture", "libelk-nope.so",
                                            &error));
  g_assert_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_NOT_FOUND);
  g_test_message ("%s", error->message);
  assert_contains (error->message, "libelk-nope.so");
  assert_contains (error->message, good);
  assert_contains (error->message, shadow);
  g_clear_error (&error);

  /* A file that is loaded but does not provide the name: pinned, so no
   * other file stands in. */
  g_assert_null (elk_registry_find_in_file (registry, ELK_TYPE_FRONTEND,
                                            "fixture", "libelk-shadow.so",
                                            &error));
  g_assert_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_NOT_FOUND);
  assert_contains (error->message, good);
}

static void
test_type_clash_subprocess (void)
{
  g_autofree char *good = elk_test_fixture_plugin ("good");
  g_autofree char *clash = identity_plugin ("libelk-clash.so");
  g_autoptr (ElkRegistry) registry = elk_registry_new ();
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) failed = NULL;

  if (!g_test_subprocess ())
    {
      g_test_skip ("run in a subprocess by /plugin-identity/type-clash");
      return;
    }
  g_assert_true (elk_registry_load_file (registry, good, &error));
  g_assert_no_error (error);
  g_assert_false (elk_registry_load_file (registry, clash, &error));
  g_assert_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_TYPE_CLASH);
  g_test_message ("%s", error->message);
  assert_contains (error->message, "'FixtureScheduler'");
  assert_contains (error->message, good);
  assert_contains (error->message, clash);

  /* The good plugin is untouched. */
  g_assert_cmpstr (g_type_name (elk_registry_find_in_file (
                                  registry, ELK_TYPE_SCHEDULER, "fixture",
                                  "libelk-good.so", NULL)
                                  ->type),
                   ==, "FixtureScheduler");

  /* The clashing file tried to add scheduler "fixture": that name is now
   * ambiguous, so the good one is never used in its place silently. */
  g_clear_error (&error);
  g_assert_null (elk_registry_find (registry, ELK_TYPE_SCHEDULER, "fixture",
                                    &error));
  g_assert_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_AMBIGUOUS);
  g_test_message ("%s", error->message);
  assert_contains (error->message, clash);
  assert_contains (error->message, "failed to load");
  failed = elk_registry_get_failed_providers (registry, ELK_TYPE_SCHEDULER,
                                              "fixture");
  g_assert_cmpuint (g_strv_length (failed), ==, 1);
  assert_contains (failed[0], "'FixtureScheduler'");

  /* Choosing the file that failed says why it cannot be used. */
  g_clear_error (&error);
  g_assert_null (elk_registry_find_in_file (registry, ELK_TYPE_SCHEDULER,
                                            "fixture", "libelk-clash.so",
                                            &error));
  g_assert_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_NOT_FOUND);
  assert_contains (error->message, "failed to load");
  assert_contains (error->message, "'FixtureScheduler'");
}

static void
test_type_clash (void)
{
  g_test_summary ("A GType name two files define is a load error naming "
                  "the type and both files; GLib prints nothing (GTest "
                  "makes warnings and criticals fatal, so one would abort "
                  "the subprocess).");
  g_test_trap_subprocess ("/plugin-identity/type-clash/subprocess", 0,
                          G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr_unmatched ("*GLib*");
  g_test_trap_assert_stderr_unmatched ("*CRITICAL*");
  g_test_trap_assert_stderr_unmatched ("*WARNING*");
  g_test_trap_assert_stderr_unmatched ("*existing type*");
}

static void
test_scan_identity (void)
{
  g_autofree char *plugins = fixture_dir ();
  g_autofree char *identity = identity_dir ();
  g_autofree char *good = elk_test_fixture_plugin ("good");
  g_autofree char *copy = identity_plugin ("libelk-good.so");
  g_autofree char *misnamed = identity_plugin ("elk-misnamed.so");
  g_autofree char *clash = identity_plugin ("libelk-clash.so");
  g_autoptr (ElkRegistry) registry = elk_registry_new ();
  const GPtrArray *ignored, *failures;
  gboolean seen_copy = FALSE, seen_misnamed = FALSE, seen_clash = FALSE;

  g_test_summary ("The scan lists a module not named libelk-*.so and a "
                  "byte-identical copy as ignored, with the reason, and "
                  "never as failures.");
  elk_registry_add_path (registry, plugins);
  elk_registry_add_path (registry, identity);
  elk_registry_scan (registry);
  ignored = elk_registry_get_ignored (registry);
  failures = elk_registry_get_failures (registry);

  for (guint i = 0; i < ignored->len; i++)
    {
      const ElkLoadFailure *f = ignored->pdata[i];
      g_test_message ("ignored: %s", f->error->message);
      g_assert_error (f->error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_IGNORED);
      if (strcmp (f->filename, copy) == 0)
        {
          assert_contains (f->error->message, "same bytes");
          assert_contains (f->error->message, good);
          seen_copy = TRUE;
        }
      if (strcmp (f->filename, misnamed) == 0)
        {
          assert_contains (f->error->message, "not named libelk-<name>.so");
          seen_misnamed = TRUE;
        }
    }
  g_assert_true (seen_copy);
  g_assert_true (seen_misnamed);
  for (guint i = 0; i < failures->len; i++)
    {
      const ElkLoadFailure *f = failures->pdata[i];
      g_assert_cmpstr (f->filename, !=, misnamed);
      g_assert_cmpstr (f->filename, !=, copy);
      if (strcmp (f->filename, clash) == 0)
        {
          g_assert_error (f->error, ELK_PLUGIN_ERROR,
                          ELK_PLUGIN_ERROR_TYPE_CLASH);
          seen_clash = TRUE;
        }
    }
  g_assert_true (seen_clash);
  /* The misnamed plugin's feature is not there. */
  g_assert_null (elk_registry_lookup (registry, ELK_TYPE_SCHEDULER,
                                      "misnamed"));
}

/* elk-run or elk-inspect with the fixture plugins, the identity fixtures
 * and optionally the shipped plugins; returns the exit status. */
static int
run_tool (const char *tool,
          gboolean shipped,
          const char *const *args,
          char **out_stdout,
          char **out_stderr)
{
  g_autofree char *plugins = fixture_dir ();
  g_autofree char *identity = identity_dir ();
  g_autofree char *path = NULL;
  g_autofree char *exe = NULL;
  g_auto (GStrv) env = NULL;
  const char *root = g_getenv ("ELK_BUILD_ROOT");

  g_assert_nonnull (root);
  if (shipped)
    path = g_strjoin (G_SEARCHPATH_SEPARATOR_S, identity,
                      g_getenv ("ELK_PLUGIN_PATH"), NULL);
  else
    path = g_strjoin (G_SEARCHPATH_SEPARATOR_S, plugins, identity, NULL);
  env = elk_test_tool_env (path);
  exe = g_build_filename (root, "core", "tools", tool, NULL);
  return elk_test_spawn_tool (exe, args, env, out_stdout, out_stderr);
}

static int
run_experiment (const char *name,
                const char *outdir,
                const char *extra,
                char **out_stderr)
{
  g_autofree char *path = elk_test_fixture_experiment (name);
  const char *args[] = { path, "-o", outdir, extra, NULL };
  return run_tool ("elk-run", FALSE, args, NULL, out_stderr);
}

static void
test_run_ambiguous (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "ambiguous", NULL);
  g_autofree char *good = elk_test_fixture_plugin ("good");
  g_autofree char *shadow = identity_plugin ("libelk-shadow.so");
  g_autofree char *clash = identity_plugin ("libelk-clash.so");
  g_autofree char *err = NULL;
  g_autofree char *results = g_build_filename (out, "results.json", NULL);

  g_test_summary ("elk-run refuses an experiment using a name two files "
                  "provide (exit 2), naming every file, before running.");
  g_assert_cmpint (run_experiment ("shadow", out, NULL, &err), ==, 2);
  assert_contains (err, "shadow.xml:");
  assert_contains (err, "scheduler 'fixture'");
  assert_contains (err, good);
  assert_contains (err, shadow);
  assert_contains (err, clash);
  g_assert_false (g_file_test (results, G_FILE_TEST_EXISTS));
}

static void
test_run_chosen (void)
{
  g_autofree char *a = g_build_filename (tmpdir, "chosen-1", NULL);
  g_autofree char *b = g_build_filename (tmpdir, "chosen-2", NULL);
  g_autofree char *good = elk_test_fixture_plugin ("good");
  g_autofree char *shadow = identity_plugin ("libelk-shadow.so");
  g_autofree char *sha = file_sha256 (good);
  g_autofree char *json_a = NULL;
  g_autofree char *json_b = NULL;
  g_autofree char *file_field = NULL;
  g_autofree char *sha_field = NULL;

  g_test_summary ("With plugin= the chosen file is used, and results.json "
                  "names its file and SHA-256, the same bytes whatever "
                  "--jobs is.");
  g_assert_cmpint (run_experiment ("shadow-chosen", a, "--jobs=1", NULL), ==,
                   0);
  g_assert_cmpint (run_experiment ("shadow-chosen", b, "--jobs=2", NULL), ==,
                   0);
  json_a = elk_test_read_file (a, "results.json");
  json_b = elk_test_read_file (b, "results.json");
  g_assert_cmpstr (json_a, ==, json_b);

  file_field = g_strdup_printf ("\"file\": \"%s\"", good);
  sha_field = g_strdup_printf ("\"sha256\": \"%s\"", sha);
  assert_contains (json_a, "\"name\": \"good\"");
  assert_contains (json_a, "\"version\": \"1.0\"");
  assert_contains (json_a, file_field);
  assert_contains (json_a, sha_field);
  g_assert_null (strstr (json_a, shadow));
}

static void
test_run_chosen_other (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "chosen-other", NULL);
  g_autofree char *shadow = identity_plugin ("libelk-shadow.so");
  g_autofree char *sha = file_sha256 (shadow);
  g_autofree char *csv = NULL;
  g_autofree char *json = NULL;

  g_test_summary ("plugin= naming the other file runs that file's "
                  "scheduler (its contract failure names its type).");
  g_assert_cmpint (run_experiment ("shadow-chosen-other", out, NULL, NULL),
                   ==, 3);
  csv = elk_test_read_file (out, "results.csv");
  assert_contains (csv, "DupScheduler");
  json = elk_test_read_file (out, "results.json");
  assert_contains (json, shadow);
  assert_contains (json, sha);
}

static void
test_run_chosen_bad (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "chosen-bad", NULL);
  g_autofree char *err = NULL;
  g_autofree char *clash = identity_plugin ("libelk-clash.so");

  g_test_summary ("plugin= naming a file that is not loaded, or one that "
                  "failed to load, is a bad experiment (exit 2) saying "
                  "so.");
  g_assert_cmpint (run_experiment ("shadow-chosen-missing", out, NULL, &err),
                   ==, 2);
  assert_contains (err, "shadow-chosen-missing.xml:");
  assert_contains (err, "libelk-nope.so");
  g_clear_pointer (&err, g_free);

  g_assert_cmpint (run_experiment ("shadow-chosen-failed", out, NULL, &err),
                   ==, 2);
  assert_contains (err, "shadow-chosen-failed.xml:");
  assert_contains (err, clash);
  assert_contains (err, "failed to load");
}

static void
test_run_chosen_path (void)
{
  g_autofree char *good = elk_test_fixture_plugin ("good");
  g_autofree char *dir = g_build_filename (tmpdir, "by-path", NULL);
  g_autofree char *xml = g_build_filename (dir, "exp.xml", NULL);
  g_autofree char *out = g_build_filename (dir, "out", NULL);
  g_autofree char *relative = NULL;
  g_autofree char *text = NULL;
  g_autofree char *json = NULL;
  GString *up = g_string_new (NULL);
  const char *args[] = { xml, "-o", out, NULL };

  g_test_summary ("plugin= may be a path relative to the experiment file.");
  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  /* From dir up to "/", then down to the good plugin. */
  for (const char *p = dir; *p != '\0'; p++)
    if (*p == '/')
      g_string_append (up, "../");
  relative = g_strconcat (up->str, good + 1, NULL);
  g_string_free (up, TRUE);
  text = g_strdup_printf ("<?xml version=\"1.0\"?>\n"
                          "<experiment format=\"1\" name=\"by-path\">\n"
                          "  <frontend name=\"fixture\"/>\n"
                          "  <chip name=\"fixture\" plugin=\"%s\"/>\n"
                          "  <allocator name=\"fixture\"/>\n"
                          "  <scheduler name=\"fixture\" plugin=\"%s\"/>\n"
                          "</experiment>\n", good, relative);
  g_assert_true (g_file_set_contents (xml, text, -1, NULL));
  g_assert_cmpint (run_tool ("elk-run", FALSE, args, NULL, NULL), ==, 0);
  json = elk_test_read_file (out, "results.json");
  assert_contains (json, good);
}

static void
test_run_shipped (void)
{
  g_autofree char *quickstart = NULL;
  g_autofree char *chosen = elk_test_fixture_experiment (
    "shadow-basic-chosen");
  g_autofree char *shadow = identity_plugin ("libelk-shadow.so");
  g_autofree char *err = NULL;
  const char *source = g_getenv ("ELK_SOURCE_ROOT");
  const char *args_quickstart[] = { NULL, "--validate", NULL };
  const char *args_chosen[] = { chosen, "--validate", NULL };

  g_test_summary ("A plugin providing a shipped name (scheduler 'basic') "
                  "makes a shipped experiment fail naming both files; "
                  "plugin= picks the shipped one.");
  g_assert_nonnull (source);
  quickstart = g_build_filename (source, "experiments", "quickstart.xml",
                                 NULL);
  args_quickstart[0] = quickstart;
  g_assert_cmpint (run_tool ("elk-run", TRUE, args_quickstart, NULL, &err),
                   ==, 2);
  assert_contains (err, "scheduler 'basic'");
  assert_contains (err, shadow);
  assert_contains (err, "libelk-basic.so");
  g_clear_pointer (&err, g_free);

  g_assert_cmpint (run_tool ("elk-run", TRUE, args_chosen, NULL, &err), ==,
                   0);
}

static void
test_inspect (void)
{
  g_autofree char *good = elk_test_fixture_plugin ("good");
  g_autofree char *shadow = identity_plugin ("libelk-shadow.so");
  g_autofree char *clash = identity_plugin ("libelk-clash.so");
  g_autofree char *misnamed = identity_plugin ("elk-misnamed.so");
  g_autofree char *copy = identity_plugin ("libelk-good.so");
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  const char *list[] = { NULL };
  const char *one[] = { "scheduler/fixture", NULL };

  g_test_summary ("elk-inspect lists shadowed names with every file, and "
                  "ignored files with the reason.");
  g_assert_cmpint (run_tool ("elk-inspect", FALSE, list, &out, &err), ==, 0);
  g_test_message ("%s", out);
  assert_contains (out, "fixture          provided by 3 files");
  assert_contains (out, good);
  assert_contains (out, shadow);
  assert_contains (out, "files ignored:");
  assert_contains (out, misnamed);
  assert_contains (out, "not named libelk-<name>.so");
  assert_contains (out, copy);
  assert_contains (out, "same bytes");
  assert_contains (out, clash);
  assert_contains (out, "'FixtureScheduler'");
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  g_assert_cmpint (run_tool ("elk-inspect", FALSE, one, &out, &err), ==, 0);
  g_test_message ("%s", out);
  assert_contains (out, "FixtureScheduler");
  assert_contains (out, "DupScheduler");
  assert_contains (out, "sha256:");
  assert_contains (out, clash);
}

int
main (int argc, char *argv[])
{
  tmpdir = elk_test_init_with_tmpdir (&argc, &argv, "elk-test-identity-XXXXXX");

  g_test_add_func ("/plugin-identity/ambiguous", test_ambiguous);
  g_test_add_func ("/plugin-identity/find-in-file", test_find_in_file);
  g_test_add_func ("/plugin-identity/type-clash", test_type_clash);
  g_test_add_func ("/plugin-identity/type-clash/subprocess",
                   test_type_clash_subprocess);
  g_test_add_func ("/plugin-identity/scan", test_scan_identity);
  g_test_add_func ("/plugin-identity/run-ambiguous", test_run_ambiguous);
  g_test_add_func ("/plugin-identity/run-chosen", test_run_chosen);
  g_test_add_func ("/plugin-identity/run-chosen-other",
                   test_run_chosen_other);
  g_test_add_func ("/plugin-identity/run-chosen-bad", test_run_chosen_bad);
  g_test_add_func ("/plugin-identity/run-chosen-path", test_run_chosen_path);
  g_test_add_func ("/plugin-identity/run-shipped", test_run_shipped);
  g_test_add_func ("/plugin-identity/inspect", test_inspect);

  return elk_test_run_and_remove (tmpdir);
}
