/* elk-run: run an experiment file.
 *
 *   elk-run experiment.xml [-o DIR] [--jobs N] [--validate]
 *
 * Exit codes tell batch scripts what went wrong: 0 success, 1 usage,
 * 2 bad experiment (the file, its plugins or its parameters), 3 a plugin
 * failed or broke its contract, 4 some points failed to run, 5 the results
 * could not be written.
 */
#include "config.h"

#include <stdlib.h>
#include <locale.h>

#include <elk/elk.h>

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
  gint jobs = 1;
  gboolean validate = FALSE, quiet = FALSE, verbose = FALSE, version = FALSE;
  ElkRunOptions options = { 0 };
  ElkRunStatus status = ELK_RUN_OK;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output_dir,
      "Write results into DIR instead of the experiment's <output>", "DIR" },
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
      "Run N points at once (results do not depend on N)", "N" },
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
  if (argc != 2)
    {
      g_printerr ("elk-run: expected exactly one experiment file; see "
                  "elk-run --help\n");
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
