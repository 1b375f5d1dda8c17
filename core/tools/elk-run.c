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

#ifdef ELK_HAVE_REPORT
#include <elk-report.h>
#endif

/* MPI hook (issue 11): see elk-run-mpi.c and docs/clusters.md. */
#ifdef ELK_HAVE_MPI
#include "elk-run-mpi.h"
#endif

enum
{
  EXIT_USAGE = 1,
  EXIT_BAD_EXPERIMENT = 2,
  EXIT_PLUGIN_FAILED = 3,
  EXIT_RUN_FAILED = 4,
  EXIT_OUTPUT_FAILED = 5,
};

int
main (int argc, char *argv[])
{
  g_autoptr (GOptionContext) context = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkRegistry) registry = NULL;
  g_autoptr (ElkExperiment) experiment = NULL;
  g_autofree char *output_dir = NULL;
  g_autofree char *self_exe = NULL;
  g_autofree char **split_argv = NULL;   /* the strings belong to argv */
  gint jobs = (gint) g_get_num_processors ();
  gboolean validate = FALSE, quiet = FALSE, verbose = FALSE, version = FALSE;
  gboolean resume = FALSE, isolate = FALSE, merge = FALSE, yes = FALSE;
  gboolean quick = FALSE, png = FALSE, no_report = FALSE;
  g_autofree char *shard = NULL;
  double timeout_s = 0;
  gint internal_point = -1;
  gint max_points = 10000;
  gint trace_point = -1;
  ElkRunOptions options = { 0 };
  ElkRunStatus status = ELK_RUN_OK;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output_dir,
      "Write results into DIR instead of the experiment's <output>", "DIR" },
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
      "Run N points at once (default: processors; results do not depend "
      "on N)", "N" },
    { "resume", 0, 0, G_OPTION_ARG_NONE, &resume,
      "Keep the points an interrupted run already finished in the output "
      "folder and run the rest", NULL },
    { "shard", 0, 0, G_OPTION_ARG_STRING, &shard,
      "Run only the K-th of N deterministic slices of the points", "K/N" },
    { "merge", 0, 0, G_OPTION_ARG_NONE, &merge,
      "Combine the output folders of shards (arguments) into -o DIR", NULL },
    { "isolate", 0, 0, G_OPTION_ARG_NONE, &isolate,
      "Run each point in its own process, so a crash or hang fails only "
      "that point", NULL },
    { "timeout", 0, 0, G_OPTION_ARG_DOUBLE, &timeout_s,
      "With --isolate, kill a point after S seconds", "S" },
    { "trace", 0, 0, G_OPTION_ARG_INT, &trace_point,
      "Also write a Chrome/Perfetto trace of point P "
      "(trace-P-LABEL.json in the output folder)", "P" },
    { "png", 0, 0, G_OPTION_ARG_NONE, &png,
      "Also write a PNG beside every SVG figure", NULL },
    { "no-report", 0, 0, G_OPTION_ARG_NONE, &no_report,
      "Do not draw figures and report.html after the run", NULL },
    { "quick", 0, 0, G_OPTION_ARG_NONE, &quick,
      "Smoke test: first value of every sweep axis, at most 2 layers", NULL },
    { "max-points", 0, 0, G_OPTION_ARG_INT, &max_points,
      "Refuse sweeps with more than N points (default 10000)", "N" },
    { "yes", 'y', 0, G_OPTION_ARG_NONE, &yes,
      "Run however many points the sweep has", NULL },
    { "internal-point", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT,
      &internal_point, "Run one point and print its journal line", "P" },
    { "validate", 0, 0, G_OPTION_ARG_NONE, &validate,
      "Only check the experiment file, its plugins and parameters", NULL },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet,
      "No progress lines", NULL },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose,
      "Also list plugin files that failed to load", NULL },
    { "version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version",
      NULL },
    G_OPTION_ENTRY_NULL
  };

  setlocale (LC_ALL, "");

  /* GOption does not read "-j2" as "-j 2"; make and nproc users type it. */
  {
    GPtrArray *args = g_ptr_array_new ();
    for (int i = 0; i < argc; i++)
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
    argc = (int) args->len;
    g_ptr_array_add (args, NULL);
    argv = split_argv = (char **) g_ptr_array_free (args, FALSE);
  }

  context = g_option_context_new ("EXPERIMENT.xml");
  g_option_context_set_summary (context,
                                "Compile and run an elk experiment: every "
                                "point of its sweep, every scheduler.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      g_printerr ("elk-run: %s\n", error->message);
      return EXIT_USAGE;
    }
  if (version)
    {
      g_print ("elk-run %s (plugin ABI %u)\n", ELK_VERSION,
               ELK_PLUGIN_ABI_VERSION);
      return EXIT_SUCCESS;
    }
  if (merge)
    {
      ElkRunStatus merged = ELK_RUN_OK;
      if (output_dir == NULL || argc < 2)
        {
          g_printerr ("elk-run: --merge needs -o DIR and at least one shard "
                      "folder\n");
          return EXIT_USAGE;
        }
      if (!elk_results_merge ((const char *const *) argv + 1, output_dir,
                              &merged, &error))
        {
          g_printerr ("elk-run: %s\n", error->message);
          return EXIT_BAD_EXPERIMENT;
        }
      if (!quiet)
        g_printerr ("elk-run: merged %d shard(s) into %s\n", argc - 1,
                    output_dir);
      return merged == ELK_RUN_OK ? EXIT_SUCCESS
             : merged == ELK_RUN_PLUGIN_FAILED ? EXIT_PLUGIN_FAILED
                                               : EXIT_RUN_FAILED;
    }
  if (argc != 2)
    {
      g_printerr ("elk-run: expected exactly one experiment file; see "
                  "elk-run --help\n");
      return EXIT_USAGE;
    }
  if (shard != NULL)
    {
      char *end = NULL;
      guint64 k = g_ascii_strtoull (shard, &end, 10), n = 0;
      if (end != NULL && *end == '/')
        n = g_ascii_strtoull (end + 1, &end, 10);
      if (end == NULL || *end != '\0' || n < 1 || n > 1000000 || k < 1
          || k > n)
        {
          g_printerr ("elk-run: --shard '%s': expected K/N with 1 <= K <= N, "
                      "for example 2/8\n", shard);
          return EXIT_USAGE;
        }
      options.shard_k = (guint) k;
      options.shard_n = (guint) n;
    }
  if (timeout_s < 0 || (timeout_s > 0 && !isolate))
    {
      g_printerr ("elk-run: --timeout needs --isolate and a positive number "
                  "of seconds\n");
      return EXIT_USAGE;
    }
  if (jobs < 1 || jobs > 4096)
    {
      g_printerr ("elk-run: --jobs must be between 1 and 4096, not %d\n",
                  jobs);
      return EXIT_USAGE;
    }

  registry = elk_registry_new ();
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

  experiment = elk_experiment_load (argv[1], registry, &error);
  if (experiment == NULL)
    {
      g_printerr ("elk-run: %s\n", error->message);
      return EXIT_BAD_EXPERIMENT;
    }
  if (quick)
    elk_experiment_set_quick (experiment);
  if (trace_point >= 0)
    {
      if ((guint) trace_point >= elk_experiment_get_n_points (experiment))
        {
          g_printerr ("elk-run: --trace %d: the experiment has points 0 to "
                      "%u\n", trace_point,
                      elk_experiment_get_n_points (experiment) - 1);
          return EXIT_USAGE;
        }
      if (!elk_experiment_can_trace (experiment))
        {
          g_printerr ("elk-run: --trace: the experiment's chip backend "
                      "cannot record traces\n");
          return EXIT_BAD_EXPERIMENT;
        }
      elk_experiment_set_trace_point (experiment, trace_point);
    }
  if (internal_point >= 0)
    {
      /* The child side of --isolate: one point, its journal line on
       * stdout, nothing else. */
      g_autofree char *line = NULL;
      if ((guint) internal_point >= elk_experiment_get_n_points (experiment))
        {
          g_printerr ("elk-run: no point %d\n", internal_point);
          return EXIT_USAGE;
        }
      line = elk_experiment_run_point_line (experiment,
                                            (guint) internal_point,
                                            output_dir);
      fputs (line, stdout);
      return fflush (stdout) == 0 ? EXIT_SUCCESS : EXIT_OUTPUT_FAILED;
    }
  if (!yes && max_points >= 0
      && elk_experiment_get_n_points (experiment) > (guint) max_points)
    {
      g_printerr ("elk-run: %s has %u points, more than --max-points %d; "
                  "pass --yes or a larger --max-points to run them\n",
                  argv[1], elk_experiment_get_n_points (experiment),
                  max_points);
      return EXIT_BAD_EXPERIMENT;
    }
  if (validate)
    {
      g_print ("%s: valid, %u point(s) x %u scheduler(s)\n", argv[1],
               elk_experiment_get_n_points (experiment),
               elk_experiment_get_n_schedulers (experiment));
      return EXIT_SUCCESS;
    }

  options.n_jobs = (guint) jobs;
  options.output_dir = output_dir;
  options.progress = !quiet;
  options.resume = resume;
  options.isolate = isolate;
  options.timeout_s = timeout_s;
  self_exe = g_file_read_link ("/proc/self/exe", NULL);
  options.self_exe = self_exe;
  /* MPI hook (issue 11): under mpirun with 2 or more ranks, the MPI driver
   * runs the points instead of the thread pool. */
#ifdef ELK_HAVE_MPI
  if (elk_run_mpi_active ())
    return elk_run_mpi_main (experiment, &options);
#endif
  if (!elk_experiment_run (experiment, &options, &status, &error))
    {
      g_printerr ("elk-run: %s\n", error->message);
      return EXIT_OUTPUT_FAILED;
    }
  if (!quiet)
    g_printerr ("elk-run: results in %s\n",
                output_dir != NULL
                  ? output_dir
                  : elk_experiment_get_output_dir (experiment));

#ifdef ELK_HAVE_REPORT
  /* Figures and report.html, also when some points failed: the report
   * shows failed rows as failed. */
  if (!no_report)
    {
      ElkReportOptions report_options = { 0 };
      report_options.write_png = png;
      if (!elk_report_build (output_dir != NULL
                               ? output_dir
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
  if (png)
    g_printerr ("elk-run: --png: this elk was built without the 'report' "
                "feature (cairo), so no figures are drawn\n");
#endif

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
