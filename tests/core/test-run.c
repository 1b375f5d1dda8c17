/* tests/core/test-run.c: elk-run end to end with the fixture plugins:
 * results are complete, byte-identical across runs and --jobs values,
 * never half-written, and each kind of failure has its own exit code
 * (issue 2, items 5 and 8). */
#include "elk-test-util.h"

#include <json-glib/json-glib.h>

#include <string.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sys/wait.h>

static char *tmpdir;

/* Runs elk-run with the fixture plugins only; returns the exit status. */
static int run_elk_argv (const char *const *args, char **out_stderr);
static guint assert_trace_structure (const char *path);

static int
run_elk (const char *experiment,
         const char *outdir,
         const char *extra,
         char **out_stderr)
{
  g_autofree char *path = elk_test_fixture_experiment (experiment);
  const char *args[] = { path, "-o", outdir, extra, NULL };
  return run_elk_argv (args, out_stderr);
}

/* Runs elk-run with the fixture plugins only and the given arguments;
 * returns the exit status. */
static int
run_elk_argv (const char *const *args, char **out_stderr)
{
  g_auto (GStrv) env = elk_test_tool_env (NULL);

  return elk_test_spawn_tool (g_getenv ("ELK_RUN"), args, env, NULL,
                              out_stderr);
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

  csv_a = elk_test_read_file (a, "results.csv");
  csv_b = elk_test_read_file (b, "results.csv");
  csv_c = elk_test_read_file (c, "results.csv");
  json_a = elk_test_read_file (a, "results.json");
  json_b = elk_test_read_file (b, "results.json");
  json_c = elk_test_read_file (c, "results.json");
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
  /* Each plugin used, with its file and SHA-256 (test-plugin-identity.c
   * checks the values). */
  g_assert_nonnull (strstr (json_a, "{\"name\": \"good\", \"version\": "
                                    "\"1.0\", \"abi\": "));
  g_assert_nonnull (strstr (json_a, "libelk-good.so\", \"sha256\": \""));

  /* Wall-clock figures are kept apart, in timings.csv. */
  timings = elk_test_read_file (a, "timings.csv");
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

/* Runs that finish with failed rows: elk-run's exit code and what the
 * rows of results.csv must say. */
typedef struct
{
  const char *test_path;
  const char *experiment;
  int exit_code;
  const char *csv_has[2];
} FailedRun;

static const FailedRun failed_runs[] = {
  /* The rogue scheduler returns NULL without an error: the run finishes,
   * the row says why, and the exit code names a plugin failure. */
  { "/run/exit/plugin-failure",
    "rogue",
    3,
    { ",failed,", "returned NULL without an error" } },
  { "/run/exit/run-failure", "does-not-fit", 4, { ",failed,", NULL } },
  { "/run/exit/chip-contract",
    "rogue-chip",
    3,
    { "reported latency -1 s", NULL } },
};

static void
test_failed_run_exit (gconstpointer data)
{
  const FailedRun *run = data;
  g_autofree char *out = g_build_filename (tmpdir, run->experiment, NULL);
  g_autofree char *csv = NULL;

  g_assert_cmpint (run_elk (run->experiment, out, NULL, NULL), ==,
                   run->exit_code);
  csv = elk_test_read_file (out, "results.csv");
  for (guint i = 0; i < G_N_ELEMENTS (run->csv_has); i++)
    if (run->csv_has[i] != NULL)
      g_assert_nonnull (strstr (csv, run->csv_has[i]));
}

static void
test_trace (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "traced", NULL);
  g_autofree char *trace = NULL;
  g_autofree char *err = NULL;

  g_assert_cmpint (run_elk ("traced", out, NULL, NULL), ==, 0);
  trace = elk_test_read_file (out, "trace-0-fixture.json");
  {
    g_autofree char *path = g_build_filename (out, "trace-0-fixture.json",
                                              NULL);
    /* 2 layers of MatMul + ReLU: 4 preloads and 4 executes. */
    g_assert_cmpuint (assert_trace_structure (path), ==, 8);
  }
  g_assert_true (g_str_has_prefix (trace, "{\"displayTimeUnit\""));
  g_assert_nonnull (strstr (trace, "\"thread_name\""));
  g_assert_nonnull (strstr (trace, "\"ph\":\"X\",\"pid\":1,\"tid\":1,"
                                   "\"name\":\"matmul0\",\"ts\":0.000000"));

  /* A backend that cannot trace is refused before anything runs. */
  g_assert_cmpint (run_elk ("trace-unsupported", out, NULL, &err), ==, 2);
  g_assert_nonnull (strstr (err, "cannot record them"));
}

/* Checks that a file is a Chrome / Perfetto JSON trace: an object with a
 * traceEvents array of metadata (M), complete (X) and counter (C) events,
 * each with integer pid and tid, X events with ts and dur, C events with
 * ts and numeric args; returns the number of X events. */
static guint
assert_trace_structure (const char *path)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  JsonObject *root;
  JsonArray *events;
  guint spans = 0;

  g_assert_true (json_parser_load_from_file (parser, path, &error));
  g_assert_no_error (error);
  g_assert_true (JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)));
  root = json_node_get_object (json_parser_get_root (parser));
  g_assert_true (json_object_has_member (root, "traceEvents"));
  events = json_object_get_array_member (root, "traceEvents");
  g_assert_cmpuint (json_array_get_length (events), >, 0);
  for (guint i = 0; i < json_array_get_length (events); i++)
    {
      JsonObject *e = json_array_get_object_element (events, i);
      const char *ph = json_object_get_string_member (e, "ph");
      g_assert_nonnull (ph);
      g_assert_true (json_object_has_member (e, "pid"));
      g_assert_true (json_object_has_member (e, "name"));
      g_assert_cmpint (json_node_get_value_type (
                         json_object_get_member (e, "pid")), ==, G_TYPE_INT64);
      if (g_str_equal (ph, "M"))
        g_assert_true (json_object_has_member (e, "args"));
      else if (g_str_equal (ph, "X"))
        {
          g_assert_true (json_object_has_member (e, "tid"));
          g_assert_cmpfloat (json_object_get_double_member (e, "ts"), >=, 0);
          g_assert_cmpfloat (json_object_get_double_member (e, "dur"), >=,
                             0);
          spans++;
        }
      else if (g_str_equal (ph, "C"))
        g_assert_true (json_object_has_member (e, "args"));
      else
        g_assert_not_reached ();
    }
  return spans;
}

static void
test_trace_option (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "trace-option", NULL);
  g_autofree char *t3 = g_build_filename (out, "trace-3-first.json", NULL);
  g_autofree char *t0 = g_build_filename (out, "trace-0-first.json", NULL);
  g_autofree char *err = NULL;

  g_assert_cmpint (run_elk ("good", out, "--trace=3", NULL), ==, 0);
  /* 3 layers of MatMul + ReLU: 6 preloads and 6 executes. */
  g_assert_cmpuint (assert_trace_structure (t3), ==, 12);
  g_assert_false (g_file_test (t0, G_FILE_TEST_EXISTS));

  g_assert_cmpint (run_elk ("good", out, "--trace=6", &err), ==, 1);
  g_assert_nonnull (strstr (err, "points 0 to 5"));
  g_clear_pointer (&err, g_free);
  g_assert_cmpint (run_elk ("rogue-chip", out, "--trace=0", &err), ==, 2);
  g_assert_nonnull (strstr (err, "cannot record traces"));
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

static void
assert_same_results (const char *a, const char *b)
{
  const char *names[] = { "results.csv", "results.json" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *x = elk_test_read_file (a, names[i]);
      g_autofree char *y = elk_test_read_file (b, names[i]);
      g_assert_cmpstr (x, ==, y);
    }
}

static guint
count_journal_records (const char *dir)
{
  g_autofree char *path = g_build_filename (dir, "points.journal", NULL);
  g_autofree char *data = NULL;
  guint n = 0;

  if (!g_file_get_contents (path, &data, NULL, NULL))
    return 0;
  for (const char *p = data; (p = strstr (p, "\nR\t")) != NULL; p++)
    n++;
  return n;
}

static void
test_kill_and_resume (void)
{
  g_autofree char *whole = g_build_filename (tmpdir, "slow-whole", NULL);
  g_autofree char *killed = g_build_filename (tmpdir, "slow-killed", NULL);
  g_autofree char *path = elk_test_fixture_experiment ("slow");
  g_auto (GStrv) env = elk_test_tool_env (NULL);
  const char *argv[] = { g_getenv ("ELK_RUN"), path, "-o", killed, "-j", "1",
                         "-q", NULL };
  g_autoptr (GError) error = NULL;
  g_autofree char *csv_path = g_build_filename (killed, "results.csv", NULL);
  g_autofree char *err = NULL;
  GPid pid;
  int status;

  g_assert_cmpint (run_elk ("slow", whole, "--jobs=1", NULL), ==, 4);

  g_assert_true (g_spawn_async (NULL, (char **) argv, env,
                                G_SPAWN_DO_NOT_REAP_CHILD
                                  | G_SPAWN_STDERR_TO_DEV_NULL,
                                NULL, NULL, &pid, &error));
  g_assert_no_error (error);
  /* Wait for a few finished points, then kill without warning. */
  for (guint i = 0; i < 400 && count_journal_records (killed) < 3; i++)
    g_usleep (G_USEC_PER_SEC / 100);
  kill (pid, SIGKILL);
  waitpid (pid, &status, 0);
  g_spawn_close_pid (pid);
  g_assert_true (WIFSIGNALED (status));
  g_assert_cmpuint (count_journal_records (killed), >=, 3);
  g_assert_cmpuint (count_journal_records (killed), <, 8);
  /* No results file pretends to be complete. */
  g_assert_false (g_file_test (csv_path, G_FILE_TEST_EXISTS));

  {
    const char *args[] = { path, "-o", killed, "--resume", "-j", "2", NULL };
    g_assert_cmpint (run_elk_argv (args, &err), ==, 4);
    g_assert_nonnull (strstr (err, "resuming:"));
  }
  assert_same_results (whole, killed);
  g_assert_cmpuint (count_journal_records (killed), ==, 8);
}

static void
test_resume_refuses_other_experiment (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "resume-other", NULL);
  g_autofree char *good = elk_test_fixture_experiment ("good");
  g_autofree char *err = NULL;
  const char *args[] = { good, "-o", out, "--resume", NULL };

  g_assert_cmpint (run_elk ("traced", out, NULL, NULL), ==, 0);
  g_assert_cmpint (run_elk_argv (args, &err), ==, 5);
  g_assert_nonnull (strstr (err, "cannot resume"));
}

static void
test_shard_and_merge (void)
{
  g_autofree char *whole = g_build_filename (tmpdir, "shard-whole", NULL);
  g_autofree char *merged = g_build_filename (tmpdir, "shard-merged", NULL);
  g_autofree char *s1 = g_build_filename (tmpdir, "shard-1", NULL);
  g_autofree char *s2 = g_build_filename (tmpdir, "shard-2", NULL);
  g_autofree char *s3 = g_build_filename (tmpdir, "shard-3", NULL);
  g_autofree char *other = g_build_filename (tmpdir, "shard-other", NULL);
  g_autofree char *err = NULL;

  g_assert_cmpint (run_elk ("good", whole, NULL, NULL), ==, 0);
  g_assert_cmpint (run_elk ("good", s1, "--shard=1/3", NULL), ==, 0);
  g_assert_cmpint (run_elk ("good", s2, "--shard=2/3", NULL), ==, 0);
  g_assert_cmpint (run_elk ("good", s3, "--shard=3/3", NULL), ==, 0);
  {
    /* A shard holds only its slice: points 1 and 4 of 6. */
    g_autofree char *csv = elk_test_read_file (s2, "results.csv");
    g_auto (GStrv) lines = g_strsplit (csv, "\n", -1);
    g_assert_cmpuint (g_strv_length (lines), ==, 1 + 4 + 1);
    g_assert_true (g_str_has_prefix (lines[1], "fixture-good,1,"));
    g_assert_true (g_str_has_prefix (lines[3], "fixture-good,4,"));
  }
  {
    const char *args[] = { "--merge", "-o", merged, s3, s1, s2, NULL };
    g_assert_cmpint (run_elk_argv (args, NULL), ==, 0);
  }
  assert_same_results (whole, merged);

  /* A missing shard, and a shard of another experiment, are refused. */
  {
    const char *args[] = { "--merge", "-o", merged, s1, s2, NULL };
    g_assert_cmpint (run_elk_argv (args, &err), ==, 2);
    g_assert_nonnull (strstr (err, "missing"));
    g_clear_pointer (&err, g_free);
  }
  g_assert_cmpint (run_elk ("traced", other, NULL, NULL), ==, 0);
  {
    const char *args[] = { "--merge", "-o", merged, s1, s2, s3, other, NULL };
    g_assert_cmpint (run_elk_argv (args, &err), ==, 2);
    g_assert_nonnull (strstr (err, "refusing to merge"));
  }
  /* A malformed shard argument is a usage error. */
  g_assert_cmpint (run_elk ("good", s1, "--shard=4/3", NULL), ==, 1);
}

static void
test_isolate_crash (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "isolate", NULL);
  g_autofree char *csv = NULL;
  g_auto (GStrv) lines = NULL;

  g_assert_cmpint (run_elk ("isolate", out, "--isolate", NULL), ==, 3);
  csv = elk_test_read_file (out, "results.csv");
  lines = g_strsplit (csv, "\n", -1);
  /* 3 points x 2 designs; point 1's process died, points 0 and 2 ran. */
  g_assert_cmpuint (g_strv_length (lines), ==, 1 + 6 + 1);
  g_assert_nonnull (strstr (lines[1], ",good,ok,"));
  /* Signal 11 normally; under AddressSanitizer its handler aborts. */
  g_assert_nonnull (strstr (lines[3], "point 1 crashed: killed by signal "));
  g_assert_nonnull (strstr (lines[4], "point 1 crashed"));
  g_assert_nonnull (strstr (lines[5], ",good,ok,"));
}

static void
test_isolate_hang (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "isolate-hang", NULL);
  g_autofree char *path = elk_test_fixture_experiment ("isolate-hang");
  g_autofree char *csv = NULL;
  const char *args[] = { path, "-o", out, "--isolate", "--timeout", "2",
                         NULL };

  g_assert_cmpint (run_elk_argv (args, NULL), ==, 3);
  csv = elk_test_read_file (out, "results.csv");
  g_assert_nonnull (strstr (csv, "point 1 timed out after 2 s"));
  g_assert_nonnull (strstr (csv, "fixture-mlp,decode,16,"));
}

static void
test_max_points (void)
{
  g_autofree char *out = g_build_filename (tmpdir, "max-points", NULL);
  g_autofree char *err = NULL;
  g_autofree char *path = elk_test_fixture_experiment ("good");
  const char *args[] = { path, "-o", out, "--max-points", "5", NULL };
  const char *yes[] = { path, "-o", out, "--max-points", "5", "--yes",
                        NULL };

  g_assert_cmpint (run_elk_argv (args, &err), ==, 2);
  g_assert_nonnull (strstr (err, "has 6 points, more than --max-points 5"));
  g_assert_cmpint (run_elk_argv (yes, NULL), ==, 0);
}

int
main (int argc, char *argv[])
{
  tmpdir = elk_test_init_with_tmpdir (&argc, &argv, "elk-test-run-XXXXXX");

  g_test_add_func ("/run/deterministic", test_deterministic);
  g_test_add_func ("/run/validate-only", test_validate_only);
  g_test_add_func ("/run/exit/bad-experiment", test_bad_experiment_exit);
  for (guint i = 0; i < G_N_ELEMENTS (failed_runs); i++)
    g_test_add_data_func (failed_runs[i].test_path, &failed_runs[i],
                          test_failed_run_exit);
  g_test_add_func ("/run/trace", test_trace);
  g_test_add_func ("/run/trace-option", test_trace_option);
  g_test_add_func ("/run/kill-and-resume", test_kill_and_resume);
  g_test_add_func ("/run/resume-refuses-other",
                   test_resume_refuses_other_experiment);
  g_test_add_func ("/run/shard-and-merge", test_shard_and_merge);
  g_test_add_func ("/run/isolate/crash", test_isolate_crash);
  g_test_add_func ("/run/isolate/hang", test_isolate_hang);
  g_test_add_func ("/run/max-points", test_max_points);
  g_test_add_func ("/run/exit/output-failure", test_output_failure_exit);
  return elk_test_run_and_remove (tmpdir);
}
