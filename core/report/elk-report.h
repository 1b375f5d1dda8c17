/* elk-report.h: plots and an HTML report from an elk-run output folder.
 *
 * libelk-report is a static library kept apart from libelk, because libelk
 * depends only on GLib, GObject, GModule and libxml2, while drawing needs
 * cairo and reading results.json needs json-glib.  elk-run calls
 * elk_report_build() after a successful run when the build has the
 * 'report' feature; the elk-report tool calls it on an existing folder.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define ELK_REPORT_ERROR (elk_report_error_quark ())

/**
 * ElkReportError:
 * @ELK_REPORT_ERROR_RESULTS: results.json is missing a field, or a field
 *   has the wrong type
 * @ELK_REPORT_ERROR_EXPERIMENT: the experiment file is not the one the
 *   results were made from, or is not well-formed XML
 * @ELK_REPORT_ERROR_PLOT: a plot request names a column that does not
 *   exist or is not numeric
 * @ELK_REPORT_ERROR_DRAW: cairo failed to draw or encode a figure
 *
 * Files that cannot be read or written are reported in the G_FILE_ERROR
 * domain, with the path.
 */
typedef enum
{
  ELK_REPORT_ERROR_RESULTS,
  ELK_REPORT_ERROR_EXPERIMENT,
  ELK_REPORT_ERROR_PLOT,
  ELK_REPORT_ERROR_DRAW,
} ElkReportError;

GQuark elk_report_error_quark (void);

/**
 * ElkReportPlot:
 * @x: the column on the horizontal axis
 * @y: the column on the vertical axis
 *
 * An extra line plot asked for by the user: one line per design (label)
 * through the rows that ran, in increasing @x.  Both columns must exist
 * in results.json and hold numbers.
 */
typedef struct
{
  const char *x;
  const char *y;
} ElkReportPlot;

/**
 * ElkReportOptions:
 * @write_png: also write a PNG beside every SVG
 * @plots: (array length=n_plots) (nullable): extra line plots
 * @n_plots: the number of entries in @plots
 *
 * Zero-initialise it (or pass %NULL to elk_report_build()) for the
 * defaults: SVG only and the plots chosen from the experiment's shape.
 */
typedef struct
{
  gboolean write_png;
  const ElkReportPlot *plots;
  gsize n_plots;
  /*< private >*/
  gpointer reserved[4];
} ElkReportOptions;

gboolean elk_report_build (const char *output_dir,
                           const char *experiment_path,
                           const ElkReportOptions *options,
                           GError **error);

gboolean elk_report_parse_plot (const char *spec,
                                char **x,
                                char **y,
                                GError **error);

G_END_DECLS
