/* tests/core/test-run.c: elk-run end to end with the fixture plugins:
 * results are complete, byte-identical across runs and --jobs values,
 * never half-written, and each kind of failure has its own exit code
 * (issue 2, items 5 and 8). */
#include "elk-test-util.h"

#include <string.h>
#include <glib/gstdio.h>

static char *tmpdir;

/* Runs elk-run with the fixture plugins only; returns the exit status. */
static int
run_elk (const char *experiment,
         const char *outdir,
         const char *extra,
         char **out_stderr)
{
  g_autofree char *good = elk_test_fixture_plugin ("good");
  g_autofree char *plugin_dir = g_path_get_dirname (good);
  g_autofree char *path = elk_test_fixture_experiment (experiment);
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) env = g_get_environ ();
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autofree char *err = NULL;
  int status = 0;

  env = g_environ_setenv (env, "ELK_PLUGIN_PATH", plugin_dir, TRUE);
  env = g_environ_setenv (env, "ELK_PLUGIN_SYSTEM_PATH", "", TRUE);
  g_ptr_array_add (argv, (gpointer) g_getenv ("ELK_RUN"));
  g_ptr_array_add (argv, path);
  g_ptr_array_add (argv, "-o");
  g_ptr_array_add (argv, (gpointer) outdir);
  if (extra != NULL)
    g_ptr_array_add (argv, (gpointer) extra);
  g_ptr_array_add (argv, NULL);

  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, env,
                               G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                               &err, &status, &error));
  g_assert_no_error (error);
  g_test_message ("elk-run %s: %s", experiment, err);
  if (out_stderr != NULL)
    *out_stderr = g_steal_pointer (&err);
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

static char *
read_file (const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  char *data = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_get_contents (path, &data, NULL, &error));
  g_assert_no_error (error);
  return data;
}

static void
test_deterministic (void)
{
  g_autofree char *a = g_build_filename (tmpdir, "a", NULL);
  g_autofree char *b = g_build_filename (tmpdir, "b", NULL);
  g_autofree char *c = g_build_filename (tmpdir, "c", NULL);
  g_autofree char *csv_a = NULL, *csv_b = NULL, *csv_c = NULL;
  g_autofree char *json_a = NULL, *json_b = NULL, *json_c = NULL;
  g_autofree char *timings = NULL;
  g_autofree char *err = NULL;
  g_auto (GStrv) lines = NULL;

  g_assert_cmpint (run_elk ("good", a, "--jobs=1", &err), ==, 0);
  /* One progress line per point, with k/n and an ETA. */
  g_assert_nonnull (strstr (err, "[6/6] point"));
  g_assert_nonnull (strstr (err, "ETA"));
  g_assert_cmpint (run_elk ("good", b, "--jobs=2", NULL), ==, 0);
  g_assert_cmpint (run_elk ("good", c, "--jobs=1", NULL), ==, 0);

  csv_a = read_file (a, "results.csv");
  csv_b = read_file (b, "results.csv");
  csv_c = read_file (c, "results.csv");
  json_a = read_file (a, "results.json");
  json_b = read_file (b, "results.json");
  json_c = read_file (c, "results.json");
  g_assert_cmpstr (csv_a, ==, csv_b);
  g_assert_cmpstr (csv_a, ==, csv_c);
  g_assert_cmpstr (json_a, ==, json_b);
  g_assert_cmpstr (json_a, ==, json_c);

  /* A header and 6 points x 2 schedulers, in point order. */
  lines = g_strsplit (csv_a, "\n", -1);
  g_assert_cmpuint (g_strv_length (lines), ==, 1 + 12 + 1);
  g_assert_true (g_str_has_prefix (lines[0], "experiment,point,model,phase,"
                                             "batch,seq,chip,topology,cores,"
                                             "sram_per_core,hbm_bw,noc_bw,"));
  g_assert_true (g_str_has_suffix (lines[0], ",frontend.batch,chip.sram-kib"));
  g_assert_true (g_str_has_prefix (lines[1], "fixture-good,0,fixture-mlp,"
                                             "prefill,4,"));
  g_assert_true (g_str_has_prefix (lines[12], "fixture-good,5,"));
  g_assert_nonnull (strstr (lines[1], ",ok,"));
  g_assert_true (g_str_has_suffix (lines[12], ",16,256"));

  g_assert_nonnull (strstr (json_a, "\"elk_version\": \"" ELK_VERSION "\""));
  g_assert_nonnull (strstr (json_a, "\"experiment_sha256\": \""));
  g_assert_nonnull (strstr (json_a, "\"good 1.0 (abi 1)\""));

  /* Wall-clock figures are kept apart, in timings.csv. */
  timings = read_file (a, "timings.csv");
  g_assert_true (g_str_has_prefix (timings, "experiment,point,label,"
                                            "plan_s,compile_s,run_s,"
                                            "peak_rss\n"));
  {
    g_autofree char *part = g_build_filename (a, "results.csv.part", NULL);
    g_assert_false (g_file_test (part, G_FILE_TEST_EXISTS));
  }
}

static void
test_validate_only (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "validate", NULL);
  g_assert_cmpint (run_elk ("good", out, "--validate", NULL), ==, 0);
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
}

static void
test_bad_experiment_exit (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "bad", NULL);
  g_autofree char *err = NULL;

  g_assert_cmpint (run_elk ("bad-value", out, NULL, &err), ==, 2);
  g_assert_nonnull (strstr (err, "bad-value.xml:"));
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
}

static void
test_plugin_failure_exit (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "rogue", NULL);
  g_autofree char *csv = NULL;

  /* The rogue scheduler returns NULL without an error: the run finishes,
   * the row says why, and the exit code names a plugin failure. */
  g_assert_cmpint (run_elk ("rogue", out, NULL, NULL), ==, 3);
  csv = read_file (out, "results.csv");
  g_assert_nonnull (strstr (csv, ",failed,"));
  g_assert_nonnull (strstr (csv, "returned NULL without an error"));
}

static void
test_chip_contract_exit (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "rogue-chip", NULL);
  g_autofree char *csv = NULL;

  g_assert_cmpint (run_elk ("rogue-chip", out, NULL, NULL), ==, 3);
  csv = read_file (out, "results.csv");
  g_assert_nonnull (strstr (csv, "reported latency -1 s"));
}

static void
test_trace (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "traced", NULL);
  g_autofree char *trace = NULL;
  g_autofree char *err = NULL;

  g_assert_cmpint (run_elk ("traced", out, NULL, NULL), ==, 0);
  trace = read_file (out, "trace-0-fixture.json");
  g_assert_true (g_str_has_prefix (trace, "{\"displayTimeUnit\""));
  g_assert_nonnull (strstr (trace, "\"thread_name\""));
  g_assert_nonnull (strstr (trace, "\"ph\":\"X\",\"pid\":1,\"tid\":1,"
                                   "\"name\":\"matmul0\",\"ts\":0.000000"));

  /* A backend that cannot trace is refused before anything runs. */
  g_assert_cmpint (run_elk ("trace-unsupported", out, NULL, &err), ==, 2);
  g_assert_nonnull (strstr (err, "cannot record them"));
}

static void
test_run_failure_exit (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "nofit", NULL);
  g_autofree char *csv = NULL;

  g_assert_cmpint (run_elk ("does-not-fit", out, NULL, NULL), ==, 4);
  csv = read_file (out, "results.csv");
  g_assert_nonnull (strstr (csv, ",failed,"));
}

static void
test_output_failure_exit (void)
{
  /* A file where the output folder should be. */
  g_autofree char *blocker = g_build_filename (tmpdir, "blocker", NULL);
  g_autofree char *out = g_build_filename (blocker, "sub", NULL);
  g_assert_true (g_file_set_contents (blocker, "x", 1, NULL));
  g_assert_cmpint (run_elk ("good", out, NULL, NULL), ==, 5);
}

int
main (int argc, char *argv[])
{
  int rc;

  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("elk-test-run-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);

  g_test_add_func ("/run/deterministic", test_deterministic);
  g_test_add_func ("/run/validate-only", test_validate_only);
  g_test_add_func ("/run/exit/bad-experiment", test_bad_experiment_exit);
  g_test_add_func ("/run/exit/plugin-failure", test_plugin_failure_exit);
  g_test_add_func ("/run/exit/run-failure", test_run_failure_exit);
  g_test_add_func ("/run/exit/chip-contract", test_chip_contract_exit);
  g_test_add_func ("/run/trace", test_trace);
  g_test_add_func ("/run/exit/output-failure", test_output_failure_exit);
  rc = g_test_run ();

  {
    g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);
    g_assert_cmpint (system (cmd), ==, 0);
  }
  g_free (tmpdir);
  return rc;
}
