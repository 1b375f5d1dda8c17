/* elk-report-tool.c: elk-report OUTPUT_DIR [EXPERIMENT.xml] [--png]
 * [--plot x=COLUMN,y=COLUMN]...
 *
 * Rebuilds the figures and report.html of a finished elk-run output
 * folder, for instance after a run by an elk-run built without the report
 * feature, or to add plots of other columns.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "elk-report.h"

int
main (int argc, char **argv)
{
  gboolean png = FALSE;
  g_auto (GStrv) plot_specs = NULL;
  g_autoptr (GOptionContext) context = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) plots = g_array_new (FALSE, TRUE, sizeof (ElkReportPlot));
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  ElkReportOptions options = { 0 };
  const GOptionEntry entries[] = {
    { "png", 0, 0, G_OPTION_ARG_NONE, &png,
      "Also write a PNG beside every SVG", NULL },
    { "plot", 0, 0, G_OPTION_ARG_STRING_ARRAY, &plot_specs,
      "An extra line plot, one line per design (repeatable)",
      "x=COLUMN,y=COLUMN" },
    G_OPTION_ENTRY_NULL,
  };

  context = g_option_context_new ("OUTPUT_DIR [EXPERIMENT.xml]");
  g_option_context_set_summary (
    context, "Draws the figures and report.html of an elk-run output folder "
             "from its results.json.  Give the experiment file the results "
             "came from to include its text and name its sweep axes.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      g_printerr ("elk-report: %s\n", error->message);
      return 1;
    }
  if (argc < 2 || argc > 3)
    {
      g_printerr ("elk-report: expected OUTPUT_DIR [EXPERIMENT.xml]; see "
                  "elk-report --help\n");
      return 1;
    }

  for (guint i = 0; plot_specs != NULL && plot_specs[i] != NULL; i++)
    {
      ElkReportPlot plot;
      char *x, *y;
      if (!elk_report_parse_plot (plot_specs[i], &x, &y, &error))
        {
          g_printerr ("elk-report: %s\n", error->message);
          return 1;
        }
      g_ptr_array_add (names, x);
      g_ptr_array_add (names, y);
      plot.x = x;
      plot.y = y;
      g_array_append_val (plots, plot);
    }
  options.write_png = png;
  options.plots = (const ElkReportPlot *) plots->data;
  options.n_plots = plots->len;

  if (!elk_report_build (argv[1], argc == 3 ? argv[2] : NULL, &options,
                         &error))
    {
      g_printerr ("elk-report: %s\n", error->message);
      return 2;
    }
  g_print ("elk-report: %s/report.html\n", argv[1]);
  return 0;
}
