/* elk-report-private.h: what the files of libelk-report share.
 *
 * Not installed.  The tests include it to know the palette, so that they
 * can count the bars and lines of a figure by colour.
 */
#pragma once

#include <cairo.h>
#include <glib.h>

#include "elk-report.h"

G_BEGIN_DECLS

/* One cell of results.json.  Numbers keep their value; strings their text;
 * a JSON null (an empty field, such as the latency of a failed row) is
 * REPORT_VALUE_NONE and is never drawn as zero. */
typedef enum
{
  REPORT_VALUE_NONE,
  REPORT_VALUE_NUMBER,
  REPORT_VALUE_STRING,
} ReportValueKind;

typedef struct
{
  ReportValueKind kind;
  double number;
  char *string;
} ReportValue;

/* One cell of a row's execution-time breakdown (the "breakdown" list of
 * results.json): seconds of one operator group in one component. */
typedef struct
{
  guint group;     /* index into ReportResults.op_groups */
  guint component; /* index into elk__time_components */
  double seconds;
} ReportBreakdownCell;

#define ELK_REPORT_N_COMPONENTS 7
extern const char *const elk__time_components[ELK_REPORT_N_COMPONENTS];
extern const guint8 elk__component_colors[ELK_REPORT_N_COMPONENTS][3];

typedef struct
{
  ReportValue *values; /* one per column of ReportResults */
  GArray *breakdown;   /* ReportBreakdownCell, or NULL when none */
  guint point;
  guint design;     /* index into ReportResults.designs */
  guint config;     /* index into ReportResults.configs */
  gboolean ok;      /* status is "ok" */
} ReportRow;

typedef struct
{
  char *elk_version;
  char *experiment;
  char *experiment_sha256;
  GPtrArray *plugins;   /* char *, as written by elk-run */
  GPtrArray *columns;   /* char *, first-seen order over all rows */
  GHashTable *column_index; /* name -> index + 1 */
  GArray *rows;         /* ReportRow */
  GPtrArray *axes;      /* char *, the sweep axis columns, in file order */
  GPtrArray *designs;   /* char *, labels in order of first appearance */
  GPtrArray *configs;   /* char *, the axis values of each point, joined */
  GArray *config_points; /* guint, the point of each config */
  GPtrArray *op_groups;  /* char *, breakdown groups, first-seen order */
  guint n_failed;
} ReportResults;

ReportResults *elk__results_load (const char *path,
                                  const char *const *axes,
                                  GError **error);
void elk__results_free (ReportResults *results);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (ReportResults, elk__results_free)

/* Returns -1 when the column does not exist. */
int elk__results_column (const ReportResults *results, const char *name);
/* The cell, or NULL when the row lacks the column. */
const ReportValue *elk__row_get (const ReportResults *results,
                                 const ReportRow *row,
                                 int column);
/* The number in the cell, or NAN when the cell is empty or not a number. */
double elk__row_number (const ReportResults *results,
                        const ReportRow *row,
                        const char *column);
/* The cell as text: numbers with up to 9 significant digits, "" for empty. */
char *elk__value_to_text (const ReportValue *value);
gboolean elk__results_column_is_numeric (const ReportResults *results,
                                         int column);

/* A figure: a title, a file stem, and how to draw it.  The draw function is
 * called once per output surface (SVG, and PNG when asked), so it must draw
 * the same thing every time. */
typedef struct _ReportFigure ReportFigure;
typedef void (*ReportFigureDraw) (const ReportFigure *figure, cairo_t *cr);

struct _ReportFigure
{
  char *stem;     /* file name without extension */
  char *title;
  char *caption;  /* HTML-escaped by the report, plain text here */
  double width, height;
  ReportFigureDraw draw;
  gpointer data;
  GDestroyNotify free_data;
};

void elk__figure_free (ReportFigure *figure);

/* Chooses the figures from the shape of @results (see docs/report.md) and
 * adds the user's extra plots.  Fails on a plot request for a column that
 * does not exist or is not numeric. */
GPtrArray *elk__figures_choose (const ReportResults *results,
                                const ElkReportOptions *options,
                                GError **error);

/* Renders @figure to SVG text, with document ids that do not depend on
 * anything but the figure. */
GBytes *elk__figure_render_svg (const ReportFigure *figure, GError **error);
GBytes *elk__figure_render_png (const ReportFigure *figure,
                                double scale,
                                GError **error);
/* The SVG without its XML declaration and with every id prefixed, so that
 * several figures can live in one HTML document without their glyph ids
 * clashing. */
char *elk__svg_for_inline (GBytes *svg, const char *id_prefix);

char *elk__html_build (const ReportResults *results,
                       GPtrArray *figures,
                       GPtrArray *svgs,
                       const char *experiment_path,
                       const char *experiment_text,
                       const char *experiment_description,
                       const ElkReportOptions *options);

/* The palette, as 0-255 RGB triples.  Designs take colours in order of
 * first appearance, cycling; the breakdown categories have their own. */
#define ELK_REPORT_N_DESIGN_COLORS 8
extern const guint8 elk__design_colors[ELK_REPORT_N_DESIGN_COLORS][3];
extern const guint8 elk__breakdown_colors[4][3];
extern const guint8 elk__failed_color[3];
extern const char *const elk__breakdown_columns[4];

G_END_DECLS
