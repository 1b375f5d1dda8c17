/* elk-report.c: elk_report_build(), from an output folder to figures and
 * report.html.
 *
 * The report is made from results.json alone, so it can be rebuilt at any
 * time from a finished run (elk-report OUTPUT_DIR EXPERIMENT.xml).  The
 * experiment file is only read for its text, its description and the
 * names of its sweep axes, and it must be the file the results came from:
 * a report that showed an edited file beside old results would mislead.
 */
#include "config.h"

#include <string.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "elk-report-private.h"

G_DEFINE_QUARK (elk-report-error-quark, elk_report_error)

typedef struct
{
  char *text;
  char *description;
  GPtrArray *axes; /* char *, NULL-terminated */
} Experiment;

static void
experiment_clear (Experiment *experiment)
{
  g_clear_pointer (&experiment->text, g_free);
  g_clear_pointer (&experiment->description, g_free);
  g_clear_pointer (&experiment->axes, g_ptr_array_unref);
}

/* elk-run --quick records the hash of "<file hash> quick", so that quick
 * results are never mistaken for full ones; both are the same file. */
static gboolean
hash_matches (const char *data, gsize length, const char *recorded)
{
  g_autofree char *hash = g_compute_checksum_for_data (
    G_CHECKSUM_SHA256, (const guchar *) data, length);
  g_autofree char *salted = g_strconcat (hash, " quick", NULL);
  g_autofree char *quick = g_compute_checksum_for_string (G_CHECKSUM_SHA256,
                                                          salted, -1);
  return strcmp (hash, recorded) == 0 || strcmp (quick, recorded) == 0;
}

static char *
collapse_space (const char *text)
{
  g_auto (GStrv) words = g_strsplit_set (text, " \t\r\n", -1);
  GString *out = g_string_new (NULL);

  for (guint i = 0; words[i] != NULL; i++)
    if (words[i][0] != '\0')
      g_string_append_printf (out, "%s%s", out->len > 0 ? " " : "", words[i]);
  return g_string_free (out, FALSE);
}

static gboolean
read_experiment (const char *path,
                 const char *recorded_hash,
                 Experiment *experiment,
                 GError **error)
{
  gsize length;
  xmlDoc *doc;
  xmlNode *root;

  if (!g_file_get_contents (path, &experiment->text, &length, error))
    return FALSE;
  if (!hash_matches (experiment->text, length, recorded_hash))
    {
      g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_EXPERIMENT,
                   "%s: not the experiment file these results were made "
                   "from (results.json records sha256 %s); run the "
                   "experiment again, or give the file it ran",
                   path, recorded_hash);
      return FALSE;
    }
  if (!g_utf8_validate (experiment->text, length, NULL))
    {
      g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_EXPERIMENT,
                   "%s: not UTF-8 text", path);
      return FALSE;
    }

  doc = xmlReadMemory (experiment->text, (int) length, path, NULL,
                       XML_PARSE_NONET | XML_PARSE_NOERROR
                         | XML_PARSE_NOWARNING);
  root = doc != NULL ? xmlDocGetRootElement (doc) : NULL;
  if (root == NULL)
    {
      const xmlError *xml_error = xmlGetLastError ();
      g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_EXPERIMENT,
                   "%s:%d: not well-formed XML: %s", path,
                   xml_error != NULL ? xml_error->line : 0,
                   xml_error != NULL && xml_error->message != NULL
                     ? g_strstrip (xml_error->message)
                     : "empty document");
      xmlFreeDoc (doc);
      return FALSE;
    }

  experiment->axes = g_ptr_array_new_with_free_func (g_free);
  for (xmlNode *node = root->children; node != NULL; node = node->next)
    {
      if (node->type != XML_ELEMENT_NODE)
        continue;
      if (xmlStrEqual (node->name, BAD_CAST "description"))
        {
          xmlChar *content = xmlNodeGetContent (node);
          experiment->description = collapse_space ((const char *) content);
          xmlFree (content);
        }
      else if (xmlStrEqual (node->name, BAD_CAST "sweep"))
        for (xmlNode *axis = node->children; axis != NULL; axis = axis->next)
          if (axis->type == XML_ELEMENT_NODE
              && xmlStrEqual (axis->name, BAD_CAST "axis"))
            {
              xmlChar *param = xmlGetProp (axis, BAD_CAST "param");
              if (param != NULL)
                g_ptr_array_add (experiment->axes,
                                 g_strdup ((const char *) param));
              xmlFree (param);
            }
    }
  g_ptr_array_add (experiment->axes, NULL);
  xmlFreeDoc (doc);
  return TRUE;
}

static gboolean
write_file (const char *dir, const char *name, const void *data, gsize size,
            GError **error)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);

  /* g_file_set_contents writes a temporary file beside @path and renames
   * it into place, so readers see the old file or the new, never half. */
  return g_file_set_contents_full (path, data, size,
                                   G_FILE_SET_CONTENTS_CONSISTENT, 0644,
                                   error);
}

/**
 * elk_report_build:
 * @output_dir: an elk-run output folder holding results.json
 * @experiment_path: (nullable): the experiment file that made the results;
 *   its text goes into the report and its sweep axes name the line plots.
 *   Without it, columns whose name has a dot are taken as the axes.
 * @options: (nullable): PNGs and extra plots; %NULL for the defaults
 * @error: return location for a #GError
 *
 * Writes one SVG per figure (and a PNG when @options asks), then
 * report.html, into @output_dir.  Each file is written to a temporary
 * file and renamed into place.  The figures are chosen from the shape of
 * the results: latency bars always; the breakdown and utilisation when the
 * rows carry them; one line figure per numeric sweep axis with two or more
 * values; the latency-against-bound chart when rows carry bound_s; and the
 * extra plots of @options.
 *
 * Returns: %TRUE on success, %FALSE with @error set.  A plot request for a
 * column that does not exist fails before anything is written.
 */
gboolean
elk_report_build (const char *output_dir,
                  const char *experiment_path,
                  const ElkReportOptions *options,
                  GError **error)
{
  g_autofree char *results_path = NULL;
  g_autoptr (ReportResults) results = NULL;
  g_autoptr (GPtrArray) figures = NULL;
  g_autoptr (GPtrArray) svgs = NULL;
  g_autofree char *html = NULL;
  Experiment experiment = { 0 };
  gboolean ok = FALSE;

  g_return_val_if_fail (output_dir != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  results_path = g_build_filename (output_dir, "results.json", NULL);
  /* The hash is checked against results.json, so read that first without
   * axes, then again once the experiment names them. */
  results = elk__results_load (results_path, NULL, error);
  if (results == NULL)
    goto out;
  if (experiment_path != NULL)
    {
      if (!read_experiment (experiment_path, results->experiment_sha256,
                            &experiment, error))
        goto out;
      g_clear_pointer (&results, elk__results_free);
      results = elk__results_load (
        results_path, (const char *const *) experiment.axes->pdata, error);
      if (results == NULL)
        goto out;
    }

  figures = elk__figures_choose (results, options, error);
  if (figures == NULL)
    goto out;

  svgs = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  for (guint f = 0; f < figures->len; f++)
    {
      const ReportFigure *figure = figures->pdata[f];
      g_autofree char *svg_name = g_strconcat (figure->stem, ".svg", NULL);
      GBytes *svg = elk__figure_render_svg (figure, error);
      gsize size;
      const void *data;

      if (svg == NULL)
        goto out;
      g_ptr_array_add (svgs, svg);
      data = g_bytes_get_data (svg, &size);
      if (!write_file (output_dir, svg_name, data, size, error))
        goto out;
      if (options != NULL && options->write_png)
        {
          g_autofree char *png_name = g_strconcat (figure->stem, ".png",
                                                   NULL);
          g_autoptr (GBytes) png = elk__figure_render_png (figure, 2, error);
          if (png == NULL)
            goto out;
          data = g_bytes_get_data (png, &size);
          if (!write_file (output_dir, png_name, data, size, error))
            goto out;
        }
    }

  html = elk__html_build (results, figures, svgs, experiment_path,
                          experiment.text, experiment.description, options);
  ok = write_file (output_dir, "report.html", html, strlen (html), error);

out:
  experiment_clear (&experiment);
  return ok;
}

/**
 * elk_report_parse_plot:
 * @spec: "x=COLUMN,y=COLUMN" (either order)
 * @x: (out) (transfer full): the x column
 * @y: (out) (transfer full): the y column
 *
 * Parses the text of an extra plot request, as given to
 * `elk-report --plot`.  Whether the columns exist is checked by
 * elk_report_build(), which knows them.
 */
gboolean
elk_report_parse_plot (const char *spec, char **x, char **y, GError **error)
{
  g_auto (GStrv) parts = g_strsplit (spec, ",", -1);
  g_autofree char *got_x = NULL;
  g_autofree char *got_y = NULL;

  for (guint i = 0; parts[i] != NULL; i++)
    {
      char *part = g_strstrip (parts[i]);
      char **slot = g_str_has_prefix (part, "x=")   ? &got_x
                    : g_str_has_prefix (part, "y=") ? &got_y
                                                    : NULL;
      if (slot == NULL || *slot != NULL || part[2] == '\0')
        {
          g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_PLOT,
                       "plot '%s': expected x=COLUMN,y=COLUMN", spec);
          return FALSE;
        }
      *slot = g_strdup (part + 2);
    }
  if (got_x == NULL || got_y == NULL)
    {
      g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_PLOT,
                   "plot '%s': expected x=COLUMN,y=COLUMN", spec);
      return FALSE;
    }
  *x = g_steal_pointer (&got_x);
  *y = g_steal_pointer (&got_y);
  return TRUE;
}
