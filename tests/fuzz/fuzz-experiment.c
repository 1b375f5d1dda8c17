/* tests/fuzz/fuzz-experiment.c: the experiment loader (libxml2, the
 * RelaxNG schema, parameters, sweeps) with a registry holding the good
 * fixture plugin and, when ELK_PLUGIN_PATH is set, the shipped plugins.
 *
 * Inputs are parsed as if they were a file in tests/fixtures/experiments,
 * so that relative model paths can name the fixture model.bin. */
#include "config.h"

#include <elk/elk.h>

#include "elk-fuzz.h"

static ElkRegistry *registry;
static char *fake_path;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  g_autoptr (GError) error = NULL;
  const char *plugin_path = g_getenv ("ELK_PLUGIN_PATH");

  elk_fuzz_fail_on_warnings ();
  registry = elk_registry_new ();
  if (!elk_registry_load_file (registry, ELK_FUZZ_FIXTURE_PLUGIN, &error))
    {
      g_printerr ("fuzz-experiment: %s\n", error->message);
      abort ();
    }
  if (plugin_path != NULL && *plugin_path != '\0')
    {
      g_auto (GStrv) dirs = g_strsplit (plugin_path, ":", -1);
      for (guint i = 0; dirs[i] != NULL; i++)
        if (*dirs[i] != '\0')
          elk_registry_add_path (registry, dirs[i]);
      elk_registry_scan (registry);
    }
  fake_path = g_build_filename (ELK_FUZZ_FIXTURE_EXPERIMENTS, "fuzz.xml", NULL);
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkExperiment) experiment = NULL;

  experiment = elk_experiment_load_from_data ((const char *) data, size,
                                              fake_path, registry, &error);
  elk_fuzz_check (experiment != NULL, error);
  if (experiment != NULL)
    {
      guint n = elk_experiment_get_n_points (experiment);
      /* Labels walk every axis; two points are enough to cover them. */
      for (guint p = 0; p < MIN (n, 2u); p++)
        g_free (elk_experiment_dup_point_label (experiment, p));
    }
  return 0;
}
