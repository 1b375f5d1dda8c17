/* elk-report-html.c: the self-contained report.html.
 *
 * Everything the page shows is inside the file: the figures as inline SVG
 * (their text drawn as glyph outlines, so no font is fetched), the style
 * sheet, the tables and the experiment file.  There is no script, and the
 * only links are to the results files beside it.  Nothing in it depends on
 * the time or the machine, so the same results give the same bytes.
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <cairo.h>

#include "elk-report-private.h"

static const char style_sheet[]
  = "body{font-family:sans-serif;margin:2em auto;max-width:1400px;"
    "padding:0 1em;color:#111;line-height:1.4}\n"
    "h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc}\n"
    "figure{margin:1.5em 0;overflow-x:auto}\n"
    "figure svg{display:block;max-width:none;height:auto}\n"
    "figcaption{color:#444;max-width:60em;margin-top:.4em}\n"
    "table{border-collapse:collapse;font-size:.85em;margin:1em 0}\n"
    "th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;"
    "vertical-align:top}\n"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    "tr.failed td{background:#fde8ec}\n"
    "td.status-failed{color:#c00020;font-weight:bold}\n"
    ".scroll{overflow-x:auto}\n"
    "pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:.85em}\n"
    "dt{font-weight:bold}dd{margin:0 0 .5em 1.5em}\n";

static void
append_escaped (GString *html, const char *text)
{
  g_autofree char *escaped = g_markup_escape_text (text != NULL ? text : "",
                                                   -1);
  g_string_append (html, escaped);
}

/* A time column shown in ms, a ratio in percent; anything else as the
 * file has it. */
typedef struct
{
  const char *column;
  const char *heading;
  double factor;
  const char *format;
} Shown;

static const Shown shown_columns[] = {
  { "latency_s", "latency (ms)", 1e3, "%.4f" },
  { "ideal_s", "ideal (ms)", 1e3, "%.4f" },
  { "bound_s", "bound (ms)", 1e3, "%.4f" },
  { "hbm_util", "HBM util (%)", 100, "%.2f" },
  { "noc_util", "NoC util (%)", 100, "%.2f" },
  { "achieved_flops", "TFLOP/s", 1e-12, "%.2f" },
  { "preload_only_s", "preload only (ms)", 1e3, "%.4f" },
  { "execute_only_s", "execute only (ms)", 1e3, "%.4f" },
  { "overlap_s", "overlap (ms)", 1e3, "%.4f" },
  { "stall_s", "stall (ms)", 1e3, "%.4f" },
};

static void
append_cell (GString *html, const ReportValue *value, const Shown *shown)
{
  if (value == NULL || value->kind == REPORT_VALUE_NONE)
    {
      g_string_append (html, "<td></td>");
      return;
    }
  if (value->kind == REPORT_VALUE_NUMBER)
    {
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      if (shown != NULL)
        g_ascii_formatd (buf, sizeof buf, shown->format,
                         value->number * shown->factor);
      else
        g_ascii_formatd (buf, sizeof buf, "%.9g", value->number);
      g_string_append_printf (html, "<td class=\"n\">%s</td>", buf);
      return;
    }
  g_string_append (html, "<td>");
  append_escaped (html, value->string);
  g_string_append (html, "</td>");
}

/* A heading cell per name in @names. */
static void
append_header_cells (GString *html, const GPtrArray *names)
{
  for (guint i = 0; i < names->len; i++)
    {
      g_string_append (html, "<th>");
      append_escaped (html, names->pdata[i]);
      g_string_append (html, "</th>");
    }
}

/* The cells that say which run a table row is about, after its point:
 * the row's value of each sweep axis, then its design. */
static void
append_sweep_and_design (GString *html,
                         const ReportResults *results,
                         const ReportRow *row)
{
  for (guint a = 0; a < results->axes->len; a++)
    append_cell (html,
                 elk__row_get (results, row,
                               elk__results_column (results,
                                                    results->axes->pdata[a])),
                 NULL);
  g_string_append (html, "<td>");
  append_escaped (html, results->designs->pdata[row->design]);
  g_string_append (html, "</td>");
}

static void
append_summary_table (GString *html, const ReportResults *results)
{
  int status_column = elk__results_column (results, "status");
  int error_column = elk__results_column (results, "error");

  g_string_append (html, "<div class=\"scroll\"><table id=\"rows\">\n<tr>"
                         "<th>point</th>");
  append_header_cells (html, results->axes);
  g_string_append (html, "<th>design</th><th>status</th>");
  for (guint k = 0; k < G_N_ELEMENTS (shown_columns); k++)
    if (elk__results_column (results, shown_columns[k].column) >= 0)
      g_string_append_printf (html, "<th>%s</th>", shown_columns[k].heading);
  g_string_append (html, "<th>error</th></tr>\n");

  for (guint i = 0; i < results->rows->len; i++)
    {
      const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      const ReportValue *status = elk__row_get (results, row, status_column);
      g_autofree char *status_text = elk__value_to_text (status);

      g_string_append_printf (html, "<tr class=\"%s\"><td class=\"n\">%u</td>",
                              row->ok ? "ok" : "failed", row->point);
      append_sweep_and_design (html, results, row);
      g_string_append_printf (html, "<td class=\"status-%s\">",
                              row->ok ? "ok" : "failed");
      append_escaped (html, status_text[0] != '\0' ? status_text : "failed");
      g_string_append (html, "</td>");
      for (guint k = 0; k < G_N_ELEMENTS (shown_columns); k++)
        {
          int column = elk__results_column (results, shown_columns[k].column);
          if (column >= 0)
            append_cell (html, elk__row_get (results, row, column),
                         &shown_columns[k]);
        }
      append_cell (html, elk__row_get (results, row, error_column), NULL);
      g_string_append (html, "</tr>\n");
    }
  g_string_append (html, "</table></div>\n");
}

/* One line of the breakdown table: the row's point, sweep values and
 * design, @group, and its time per component (@t) and in all, in ms. */
static void
append_breakdown_line (GString *html,
                       const ReportResults *results,
                       const ReportRow *row,
                       const char *group,
                       const double *t)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  double total = 0;

  g_string_append_printf (html, "<tr><td class=\"n\">%u</td>", row->point);
  append_sweep_and_design (html, results, row);
  g_string_append (html, "<td>");
  append_escaped (html, group);
  g_string_append (html, "</td>");
  for (guint k = 0; k < ELK_REPORT_N_COMPONENTS; k++)
    {
      total += t[k];
      g_string_append_printf (html, "<td class=\"n\">%s</td>",
                              g_ascii_formatd (buf, sizeof buf, "%.4f",
                                               t[k] * 1e3));
    }
  g_string_append_printf (html, "<td class=\"n\">%s</td></tr>\n",
                          g_ascii_formatd (buf, sizeof buf, "%.4f",
                                           total * 1e3));
}

/* The execution-time breakdown: per row that has one, a line per
 * operator group with its time in every component and their sum, in ms,
 * and a line "all" of the row's totals, which add up to its latency. */
static void
append_breakdown_section (GString *html, const ReportResults *results)
{
  guint n_groups = results->op_groups->len;
  gboolean any = FALSE;
  g_autofree double *t = NULL;

  for (guint i = 0; i < results->rows->len && !any; i++)
    any = g_array_index (results->rows, ReportRow, i).breakdown != NULL;
  if (!any)
    return;
  t = g_new (double, (n_groups + 1) * ELK_REPORT_N_COMPONENTS);
  g_string_append (html,
                   "<section id=\"breakdown-section\">\n<h2>Where execution "
                   "time goes</h2>\n<p>Per design and operator group, the "
                   "time the chip spent in each component, in ms "
                   "(<a href=\"breakdown.csv\">breakdown.csv</a> has it in "
                   "seconds, one line per cell).  The lines of a row add up "
                   "to its line 'all', whose total is its latency.</p>\n"
                   "<div class=\"scroll\"><table id=\"breakdown\">\n<tr>"
                   "<th>point</th>");
  append_header_cells (html, results->axes);
  g_string_append (html, "<th>design</th><th>group</th>");
  for (guint k = 0; k < ELK_REPORT_N_COMPONENTS; k++)
    g_string_append_printf (html, "<th>%s</th>", elk__time_components[k]);
  g_string_append (html, "<th>total</th></tr>\n");

  for (guint i = 0; i < results->rows->len; i++)
    {
      const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      g_autofree gboolean *present = NULL;

      if (row->breakdown == NULL)
        continue;
      present = g_new0 (gboolean, n_groups + 1);
      present[n_groups] = TRUE;
      memset (t, 0, (n_groups + 1) * ELK_REPORT_N_COMPONENTS * sizeof *t);
      for (guint k = 0; k < row->breakdown->len; k++)
        {
          const ReportBreakdownCell *c
              = &g_array_index (row->breakdown, ReportBreakdownCell, k);
          t[c->group * ELK_REPORT_N_COMPONENTS + c->component] += c->seconds;
          t[n_groups * ELK_REPORT_N_COMPONENTS + c->component] += c->seconds;
          present[c->group] = TRUE;
        }
      for (guint g = 0; g <= n_groups; g++)
        if (present[g])
          append_breakdown_line (html, results, row,
                                 g == n_groups ? "all"
                                               : results->op_groups->pdata[g],
                                 &t[g * ELK_REPORT_N_COMPONENTS]);
    }
  g_string_append (html, "</table></div>\n</section>\n");
}

static void
append_full_table (GString *html, const ReportResults *results)
{
  g_string_append (html,
                   "<details><summary>Every column of every row (as in "
                   "<a href=\"results.csv\">results.csv</a>)</summary>\n"
                   "<div class=\"scroll\"><table id=\"all-columns\">\n<tr>");
  append_header_cells (html, results->columns);
  g_string_append (html, "</tr>\n");
  for (guint i = 0; i < results->rows->len; i++)
    {
      const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      g_string_append_printf (html, "<tr class=\"%s\">",
                              row->ok ? "ok" : "failed");
      for (guint c = 0; c < results->columns->len; c++)
        append_cell (html, &row->values[c], NULL);
      g_string_append (html, "</tr>\n");
    }
  g_string_append (html, "</table></div></details>\n");
}

/**
 * elk__html_build:
 * @svgs: (element-type GBytes): the SVG of each figure, in order
 * @experiment_text: (nullable): the experiment file's text
 *
 * Returns: (transfer full): the page
 */
char *
elk__html_build (const ReportResults *results,
                 GPtrArray *figures,
                 GPtrArray *svgs,
                 const char *experiment_path,
                 const char *experiment_text,
                 const char *experiment_description,
                 const ElkReportOptions *options)
{
  GString *html = g_string_new (NULL);
  guint n_ok = results->rows->len - results->n_failed;

  g_string_append (html, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
                         "<meta charset=\"utf-8\">\n<title>elk report: ");
  append_escaped (html, results->experiment);
  g_string_append_printf (html, "</title>\n<style>\n%s</style>\n</head>\n"
                                "<body>\n<h1>elk report: ",
                          style_sheet);
  append_escaped (html, results->experiment);
  g_string_append (html, "</h1>\n");
  if (experiment_description != NULL)
    {
      g_string_append (html, "<p class=\"description\">");
      append_escaped (html, experiment_description);
      g_string_append (html, "</p>\n");
    }
  g_string_append_printf (html,
                          "<p class=\"summary\">%u rows: %u points &times; "
                          "%u designs; %u ran, <span class=\"%s\">%u "
                          "failed</span>.  Data: <a href=\"results.csv\">"
                          "results.csv</a>, <a href=\"results.json\">"
                          "results.json</a>.</p>\n",
                          results->rows->len, results->configs->len,
                          results->designs->len, n_ok,
                          results->n_failed > 0 ? "status-failed" : "ok",
                          results->n_failed);

  g_string_append (html, "<nav><ul>\n");
  for (guint f = 0; f < figures->len; f++)
    {
      const ReportFigure *figure = figures->pdata[f];
      g_string_append_printf (html, "<li><a href=\"#fig-%s\">", figure->stem);
      append_escaped (html, figure->title);
      g_string_append (html, "</a></li>\n");
    }
  g_string_append (html, "<li><a href=\"#rows-section\">Rows</a></li>\n"
                         "<li><a href=\"#experiment\">Experiment file</a>"
                         "</li>\n<li><a href=\"#versions\">Versions</a></li>"
                         "\n</ul></nav>\n");

  for (guint f = 0; f < figures->len; f++)
    {
      const ReportFigure *figure = figures->pdata[f];
      g_autofree char *prefix = g_strdup_printf ("f%u-", f + 1);
      g_autofree char *svg = elk__svg_for_inline (svgs->pdata[f], prefix);

      g_string_append_printf (html, "<section id=\"fig-%s\">\n<h2>",
                              figure->stem);
      append_escaped (html, figure->title);
      g_string_append_printf (html, "</h2>\n<figure class=\"elk-figure\" "
                                    "data-stem=\"%s\">\n",
                              figure->stem);
      g_string_append (html, svg);
      g_string_append (html, "<figcaption>");
      append_escaped (html, figure->caption);
      g_string_append_printf (html, "  File: <a href=\"%s.svg\">%s.svg</a>",
                              figure->stem, figure->stem);
      if (options != NULL && options->write_png)
        g_string_append_printf (html, ", <a href=\"%s.png\">%s.png</a>",
                                figure->stem, figure->stem);
      g_string_append (html, ".</figcaption>\n</figure>\n</section>\n");
    }
  if (figures->len == 0)
    g_string_append (html, "<p>No rows, so no figures.</p>\n");

  append_breakdown_section (html, results);
  g_string_append (html, "<section id=\"rows-section\">\n<h2>Rows</h2>\n"
                         "<p>One row per point and design, in point order. "
                         " Times in ms, utilisation in percent; failed rows "
                         "have no values and say why.</p>\n");
  append_summary_table (html, results);
  append_full_table (html, results);
  g_string_append (html, "</section>\n");

  g_string_append (html, "<section id=\"experiment\">\n<h2>Experiment "
                         "file</h2>\n");
  if (experiment_text != NULL)
    {
      g_autofree char *base = g_path_get_basename (experiment_path);
      g_string_append (html, "<p>");
      append_escaped (html, base);
      g_string_append_printf (html, " (sha256 %s)</p>\n<pre>",
                              results->experiment_sha256);
      append_escaped (html, experiment_text);
      g_string_append (html, "</pre>\n");
    }
  else
    g_string_append (html, "<p>Not given to the report.</p>\n");
  g_string_append (html, "</section>\n");

  g_string_append (html, "<section id=\"versions\">\n<h2>Versions</h2>\n"
                         "<dl>\n<dt>elk (that ran the experiment)</dt><dd>");
  append_escaped (html, results->elk_version);
  g_string_append (html, "</dd>\n<dt>experiment_sha256</dt><dd>");
  append_escaped (html, results->experiment_sha256);
  g_string_append (html, "</dd>\n<dt>plugins</dt><dd><ul>\n");
  for (guint i = 0; i < results->plugins->len; i++)
    {
      g_string_append (html, "<li>");
      append_escaped (html, results->plugins->pdata[i]);
      g_string_append (html, "</li>\n");
    }
  g_string_append_printf (html, "</ul></dd>\n<dt>report</dt><dd>elk-report "
                                "%s, drawn with cairo %s</dd>\n</dl>\n"
                                "</section>\n</body>\n</html>\n",
                          ELK_VERSION, cairo_version_string ());
  return g_string_free (html, FALSE);
}
