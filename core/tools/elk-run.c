/* elk-run: run an experiment file.
 *
 *   elk-run experiment.xml [-o DIR] [--jobs N] [--validate] [--resume]
 *           [--shard K/N] [--isolate [--timeout S]] [--max-points N | --yes]
 *   elk-run --merge -o DIR SHARD_DIR...
 *
 * Exit codes tell batch scripts what went wrong: 0 success, 1 usage,
 * 2 bad experiment (the file, its plugins or its parameters), 3 a plugin
 * failed or broke its contract, 4 some points failed to run, 5 the results
 * could not be written.
 */
#include "config.h"

#include <stdlib.h>
#include <locale.h>
#include <stdio.h>

#include <elk/elk.h>
#include "elk-run.h"

#ifdef ELK_HAVE_REPORT
#include <elk-report.h>
#endif

/* MPI hook (issue 11): see elk-run-mpi.c and docs/clusters.md. */
#ifdef ELK_HAVE_MPI
#include "elk-run-mpi.h"
#endif

/* The command line. */
typedef struct
{
  char *output_dir;
  char *shard;
  gint jobs;
  gboolean validate, quiet, verbose, version;
  gboolean resume, isolate, merge, yes;
  gboolean quick, png, no_report;
  double timeout_s;
  gint internal_point;
  gint max_points;
  gint trace_point;
} Args;

static void
args_clear (Args *a)
{
  g_free (a->output_dir);
  g_free (a->shard);
}

/* GOption does not read "-j2" as "-j 2"; make and nproc users type it.
 * Returns a new argv (to free with g_free; the strings belong to @argv). */
static char **
split_jobs_argument (int *argc, char **argv)
{
  GPtrArray *args = g_ptr_array_new ();
  for (int i = 0; i < *argc; i++)
    {
      if (g_str_has_prefix (argv[i], "-j") && argv[i][2] != '\0'
          && g_ascii_isdigit (argv[i][2]))
        {
          g_ptr_array_add (args, (gpointer) "-j");
          g_ptr_array_add (args, argv[i] + 2);
        }
      else
        g_ptr_array_add (args, argv[i]);
    }
  *argc = (int) args->len;
  g_ptr_array_add (args, NULL);
  return (char **) g_ptr_array_free (args, FALSE);
}

/* Parses the options into @a; FALSE (with the message printed) on a usage
 * error. */
static gboolean
parse_args (Args *a, int *argc, char ***argv)
{
  g_autoptr (GOptionContext) context = NULL;
  g_autoptr (GError) error = NULL;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &a->output_dir,
      "Write results into DIR instead of the experiment's <output>", "DIR" },
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &a->jobs,
      "Run N points at once (default: processors; results do not depend "
      "on N)", "N" },
    { "resume", 0, 0, G_OPTION_ARG_NONE, &a->resume,
      "Keep the points an interrupted run already finished in the output "
      "folder and run the rest", NULL },
    { "shard", 0, 0, G_OPTION_ARG_STRING, &a->shard,
      "Run only the K-th of N deterministic slices of the points", "K/N" },
    { "merge", 0, 0, G_OPTION_ARG_NONE, &a->merge,
      "Combine the output folders of shards (arguments) into -o DIR", NULL },
    { "isolate", 0, 0, G_OPTION_ARG_NONE, &a->isolate,
      "Run each point in its own process, so a crash or hang fails only "
      "that point", NULL },
    { "timeout", 0, 0, G_OPTION_ARG_DOUBLE, &a->timeout_s,
      "With --isolate, kill a point after S seconds", "S" },
    { "trace", 0, 0, G_OPTION_ARG_INT, &a->trace_point,
      "Also write a Chrome/Perfetto trace of point P "
      "(trace-P-LABEL.json in the output folder)", "P" },
    { "png", 0, 0, G_OPTION_ARG_NONE, &a->png,
      "Also write a PNG beside every SVG figure", NULL },
    { "no-report", 0, 0, G_OPTION_ARG_NONE, &a->no_report,
      "Do not draw figures and report.html after the run", NULL },
    { "quick", 0, 0, G_OPTION_ARG_NONE, &a->quick,
      "Smoke test: first value of every sweep axis, at most 2 layers", NULL },
    { "max-points", 0, 0, G_OPTION_ARG_INT, &a->max_points,
      "Refuse sweeps with more than N points (default 10000)", "N" },
    { "yes", 'y', 0, G_OPTION_ARG_NONE, &a->yes,
      "Run however many points the sweep has", NULL },
    { "internal-point", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT,
      &a->internal_point, "Run one point and print its journal line", "P" },
    { "validate", 0, 0, G_OPTION_ARG_NONE, &a->validate,
      "Only check the experiment file, its plugins and parameters", NULL },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &a->quiet,
      "No progress lines", NULL },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &a->verbose,
      "Also list plugin files that failed to load", NULL },
    { "version", 0, 0, G_OPTION_ARG_NONE, &a->version, "Print the version",
      NULL },
    G_OPTION_ENTRY_NULL
  };

  context = g_option_context_new ("EXPERIMENT.xml");
  g_option_context_set_summary (context,
                                "Compile and run an elk experiment: every "
                                "point of its sweep, every scheduler.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, argc, argv, &error))
    {
      g_printerr ("elk-run: %s\n", error->message);
      return FALSE;
    }
  return TRUE;
}

/* elk-run --merge -o DIR SHARD_DIR... */
static int
run_merge (const Args *a, int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  ElkRunStatus merged = ELK_RUN_OK;

  if (a->output_dir == NULL || argc < 2)
    {
      g_printerr ("elk-run: --merge needs -o DIR and at least one shard "
                  "folder\n");
      return EXIT_USAGE;
    }
  if (!elk_results_merge ((const char *const *) argv + 1, a->output_dir,
                          &merged, &error))
    {
      g_printerr ("elk-run: %s\n", error->message);
      return EXIT_BAD_EXPERIMENT;
    }
  if (!a->quiet)
    g_printerr ("elk-run: merged %d shard(s) into %s\n", argc - 1,
                a->output_dir);
  return merged == ELK_RUN_OK ? EXIT_SUCCESS
         : merged == ELK_RUN_PLUGIN_FAILED ? EXIT_PLUGIN_FAILED
                                           : EXIT_RUN_FAILED;
}

/* The options that need no experiment: --shard, --timeout, --jobs. */
static gboolean
check_run_options (const Args *a, ElkRunOptions *options)
{
  if (a->shard != NULL)
    {
      char *end = NULL;
      guint64 k = g_ascii_strtoull (a->shard, &end, 10), n = 0;
      if (end != NULL && *end == '/')
        n = g_ascii_strtoull (end + 1, &end, 10);
      if (end == NULL || *end != '\0' || n < 1 || n > 1000000 || k < 1
          || k > n)
        {
          g_printerr ("elk-run: --shard '%s': expected K/N with 1 <= K <= N, "
                      "for example 2/8\n", a->shard);
          return FALSE;
        }
      options->shard_k = (guint) k;
      options->shard_n = (guint) n;
    }
  if (a->timeout_s < 0 || (a->timeout_s > 0 && !a->isolate))
    {
      g_printerr ("elk-run: --timeout needs --isolate and a positive number "
                  "of seconds\n");
      return FALSE;
    }
  if (a->jobs < 1 || a->jobs > 4096)
    {
      g_printerr ("elk-run: --jobs must be between 1 and 4096, not %d\n",
                  a->jobs);
      return FALSE;
    }
  return TRUE;
}

static ElkRegistry *
load_registry (gboolean verbose)
{
  ElkRegistry *registry = elk_registry_new ();

  elk_registry_add_default_paths (registry);
  elk_registry_scan (registry);
  if (verbose)
    {
      const GPtrArray *failures = elk_registry_get_failures (registry);
      for (guint i = 0; i < failures->len; i++)
        {
          const ElkLoadFailure *f = failures->pdata[i];
          g_printerr ("elk-run: not loaded: %s\n", f->error->message);
        }
    }
  return registry;
}

/* Applies --quick and --trace; returns -1 to go on, or the exit code. */
static int
prepare_experiment (const Args *a, ElkExperiment *experiment)
{
  if (a->quick)
    elk_experiment_set_quick (experiment);
  if (a->trace_point >= 0)
    {
      if ((guint) a->trace_point >= elk_experiment_get_n_points (experiment))
        {
          g_printerr ("elk-run: --trace %d: the experiment has points 0 to "
                      "%u\n", a->trace_point,
                      elk_experiment_get_n_points (experiment) - 1);
          return EXIT_USAGE;
        }
      if (!elk_experiment_can_trace (experiment))
        {
          g_printerr ("elk-run: --trace: the experiment's chip backend "
                      "cannot record traces\n");
          return EXIT_BAD_EXPERIMENT;
        }
      elk_experiment_set_trace_point (experiment, a->trace_point);
    }
  return -1;
}

/* Refuses a sweep of more points than --max-points allows; returns -1 to
 * go on, or the exit code. */
static int
check_point_count (const Args *a, ElkExperiment *experiment,
                   const char *path)
{
  if (!a->yes && a->max_points >= 0
      && elk_experiment_get_n_points (experiment) > (guint) a->max_points)
    {
      g_printerr ("elk-run: %s has %u points, more than --max-points %d; "
                  "pass --yes or a larger --max-points to run them\n",
                  path, elk_experiment_get_n_points (experiment),
                  a->max_points);
      return EXIT_BAD_EXPERIMENT;
    }
  return -1;
}

/* The child side of --isolate: one point, its journal line on stdout,
 * nothing else. */
static int
run_internal_point (const Args *a, ElkExperiment *experiment)
{
  g_autofree char *line = NULL;

  if ((guint) a->internal_point >= elk_experiment_get_n_points (experiment))
    {
      g_printerr ("elk-run: no point %d\n", a->internal_point);
      return EXIT_USAGE;
    }
  line = elk_experiment_run_point_line (experiment,
                                        (guint) a->internal_point,
                                        a->output_dir);
  fputs (line, stdout);
  return fflush (stdout) == 0 ? EXIT_SUCCESS : EXIT_OUTPUT_FAILED;
}

/* Runs every point (or this shard's), then draws the report. */
static int
run_experiment (const Args *a, ElkExperiment *experiment,
                ElkRunOptions *options)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *self_exe = NULL;
  ElkRunStatus status = ELK_RUN_OK;

  options->n_jobs = (guint) a->jobs;
  options->output_dir = a->output_dir;
  options->progress = !a->quiet;
  options->resume = a->resume;
  options->isolate = a->isolate;
  options->timeout_s = a->timeout_s;
  self_exe = g_file_read_link ("/proc/self/exe", NULL);
  options->self_exe = self_exe;
  /* MPI hook (issue 11): under mpirun with 2 or more ranks, the MPI driver
   * runs the points instead of the thread pool. */
#ifdef ELK_HAVE_MPI
  if (elk_run_mpi_active ())
    return elk_run_mpi_main (experiment, options);
#endif
  if (!elk_experiment_run (experiment, options, &status, &error))
    {
      g_printerr ("elk-run: %s\n", error->message);
      return EXIT_OUTPUT_FAILED;
    }
  if (!a->quiet)
    g_printerr ("elk-run: results in %s\n",
                a->output_dir != NULL
                  ? a->output_dir
                  : elk_experiment_get_output_dir (experiment));

#ifdef ELK_HAVE_REPORT
  /* Figures and report.html, also when some points failed: the report
   * shows failed rows as failed. */
  if (!a->no_report)
    {
      ElkReportOptions report_options = { 0 };
      report_options.write_png = a->png;
      if (!elk_report_build (a->output_dir != NULL
                               ? a->output_dir
                               : elk_experiment_get_output_dir (experiment),
                             elk_experiment_get_path (experiment),
                             &report_options, &error))
        {
          g_printerr ("elk-run: the results are written, but the report "
                      "failed: %s\n", error->message);
          return EXIT_OUTPUT_FAILED;
        }
    }
#else
  if (a->png)
    g_printerr ("elk-run: --png: this elk was built without the 'report' "
                "feature (cairo), so no figures are drawn\n");
#endif

  return elk_run_exit_status (status);
}

/* The exit code of a finished run, with a line on stderr that says where
 * the failures are (the MPI driver ends the same way). */
int
elk_run_exit_status (ElkRunStatus status)
{
  switch (status)
    {
    case ELK_RUN_PLUGIN_FAILED:
      g_printerr ("elk-run: a plugin failed at some points; see the error "
                  "column of results.csv\n");
      return EXIT_PLUGIN_FAILED;
    case ELK_RUN_POINTS_FAILED:
      g_printerr ("elk-run: some points failed; see the error column of "
                  "results.csv\n");
      return EXIT_RUN_FAILED;
    case ELK_RUN_OK:
    default:
      return EXIT_SUCCESS;
    }
}

int
main (int argc, char *argv[])
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkRegistry) registry = NULL;
  g_autoptr (ElkExperiment) experiment = NULL;
  g_autofree char **split_argv = NULL;   /* the strings belong to argv */
  Args a = { 0 };
  ElkRunOptions options = { 0 };
  int rc;

  a.jobs = (gint) g_get_num_processors ();
  a.internal_point = -1;
  a.max_points = 10000;
  a.trace_point = -1;

  setlocale (LC_ALL, "");

  argv = split_argv = split_jobs_argument (&argc, argv);
  if (!parse_args (&a, &argc, &argv))
    rc = EXIT_USAGE;
  else if (a.version)
    {
      g_print ("elk-run %s (plugin ABI %u)\n", ELK_VERSION,
               ELK_PLUGIN_ABI_VERSION);
      rc = EXIT_SUCCESS;
    }
  else if (a.merge)
    rc = run_merge (&a, argc, argv);
  else if (argc != 2)
    {
      g_printerr ("elk-run: expected exactly one experiment file; see "
                  "elk-run --help\n");
      rc = EXIT_USAGE;
    }
  else if (!check_run_options (&a, &options))
    rc = EXIT_USAGE;
  else
    {
      registry = load_registry (a.verbose);
      experiment = elk_experiment_load (argv[1], registry, &error);
      if (experiment == NULL)
        {
          g_printerr ("elk-run: %s\n", error->message);
          rc = EXIT_BAD_EXPERIMENT;
        }
      else if ((rc = prepare_experiment (&a, experiment)) >= 0)
        ;
      else if (a.internal_point >= 0)
        rc = run_internal_point (&a, experiment);
      else if ((rc = check_point_count (&a, experiment, argv[1])) >= 0)
        ;
      else if (a.validate)
        {
          g_print ("%s: valid, %u point(s) x %u scheduler(s)\n", argv[1],
                   elk_experiment_get_n_points (experiment),
                   elk_experiment_get_n_schedulers (experiment));
          rc = EXIT_SUCCESS;
        }
      else
        rc = run_experiment (&a, experiment, &options);
    }
  args_clear (&a);
  return rc;
}
