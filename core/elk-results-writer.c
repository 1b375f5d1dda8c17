/* elk-results-writer.c: results.csv, results.json, timings.csv and
 * breakdown.csv.
 *
 * Rows are streamed into files named "<name>.part" in the output folder as
 * points finish (in point order), and the files are renamed into place
 * only when the run completes, so an interrupted run never leaves a file
 * that looks complete.  Results hold only deterministic values; wall-clock
 * figures (compile_s, run_s, peak_rss) go to timings.csv, so that the same
 * experiment gives byte-identical results whatever --jobs is.
 *
 * A row's last column, "breakdown", is where the chip said the time went
 * (ElkBreakdown, carried as elk__breakdown_to_string() text through the
 * journal).  It is not a column of results.csv: it becomes one line of
 * breakdown.csv per (group, component) cell, and a list of objects in the
 * row of results.json.  The field after it, "routing", holds a chip's
 * ElkRoutingStats for a graph with conditional operators (a mixture of
 * experts whose experts are all in the graph): when some row of the run
 * has them, results.csv gets the routing_* columns before the sweep axes
 * and every row of results.json a "routing" object (null where a row has
 * none); otherwise neither, so that results of experiments without
 * conditional operators stay as they were.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <glib/gstdio.h>

#include "elk-private.h"

/* The columns of DESIGN.md §4 (except the wall-clock ones, which are in
 * timings.csv), then elk's own additions, then one column per sweep axis. */
static const char *const columns[] = {
  "experiment",     "point",          "model",
  "phase",          "batch",          "seq",
  "chip",           "topology",       "cores",
  "sram_per_core",  "hbm_bw",         "noc_bw",
  "frontend",       "scheduler",      "allocator",
  "backend",        "latency_s",      "ideal_s",
  "bound_s",        "flops",          "hbm_bytes",
  "noc_bytes",      "hbm_util",       "noc_util",
  "achieved_flops", "preload_only_s", "execute_only_s",
  "overlap_s",      "stall_s",        "n_ops",
  "n_orders",       "label",          "status",
  "error",          "estimate_s",     "metrics_model",
  "assumptions",    "breakdown",      "routing",
};

/* The routing statistics' columns, in the order of the runner's routing
 * field (elk__routing_stats_to_string()). */
static const char *const routing_columns[] = {
  "routing_conditional",
  "routing_taken",
  "routing_hits",
  "routing_wasted",
  "routing_wasted_hbm_bytes",
  "routing_on_demand",
  "routing_on_demand_hbm_bytes",
  "routing_skipped",
  "routing_hit_rate",
};

/* The columns of a row that breakdown.csv repeats to say which point and
 * design a cell belongs to. */
static const char *const breakdown_keys[] = {
  "experiment", "point",  "model", "phase",   "batch",
  "seq",        "hbm_bw", "label", "backend", "latency_s",
};

#define BREAKDOWN_COLUMN (G_N_ELEMENTS (columns) - 2)
#define ROUTING_COLUMN (G_N_ELEMENTS (columns) - 1)

static const char *const timing_columns[] = {
  "experiment", "point", "label", "plan_s", "compile_s", "run_s",
  "peak_rss",
};

struct _ResultsWriter
{
  char *dir;
  char *csv_path, *json_path, *timing_path, *breakdown_path;
  char *csv_part, *json_part, *timing_part, *breakdown_part;
  FILE *csv, *json, *timing, *breakdown;
  GPtrArray *axis_names;
  guint key_index[G_N_ELEMENTS (breakdown_keys)];
  guint n_rows;
  gboolean routing_columns;
};

const char *const *
elk__results_writer_get_columns (void)
{
  return columns;
}

guint
elk__results_writer_get_n_columns (void)
{
  return G_N_ELEMENTS (columns);
}

static void
write_csv_field (FILE *out, const char *value)
{
  if (value == NULL)
    return;
  if (strpbrk (value, ",\"\n\r") == NULL)
    {
      fputs (value, out);
      return;
    }
  fputc ('"', out);
  for (const char *p = value; *p != '\0'; p++)
    {
      if (*p == '"')
        fputc ('"', out);
      fputc (*p, out);
    }
  fputc ('"', out);
}

static void
write_json_string (FILE *out, const char *value)
{
  fputc ('"', out);
  for (const unsigned char *p = (const unsigned char *) value; *p != '\0';
       p++)
    {
      if (*p == '"' || *p == '\\')
        fprintf (out, "\\%c", *p);
      else if (*p < 0x20)
        fprintf (out, "\\u%04x", *p);
      else
        fputc (*p, out);
    }
  fputc ('"', out);
}

/* Numbers are written as JSON numbers, empty fields as null, everything
 * else as strings. */
static void
write_json_value (FILE *out, const char *value)
{
  char *end = NULL;

  if (value == NULL || *value == '\0')
    {
      fputs ("null", out);
      return;
    }
  g_ascii_strtod (value, &end);
  if (end != NULL && *end == '\0' && strcmp (value, "nan") != 0
      && strcmp (value, "inf") != 0 && strcmp (value, "-inf") != 0
      && (g_ascii_isdigit (value[0]) || value[0] == '-'))
    fputs (value, out);
  else
    write_json_string (out, value);
}

/* One plugin the run used, from its journal record "name\tversion\tabi\t
 * file\tsha256" (elk__plugin_dup_record()), as an object.  The file is
 * the absolute path the plugin was loaded from, so results.json made from
 * a build tree and from an installed elk differ in it (and in the
 * SHA-256 when the files differ); runs of one elk give the same bytes. */
static void
write_json_plugin (FILE *out, const char *record)
{
  g_auto (GStrv) fields = g_strsplit (record, "\t", 5);
  static const char *const keys[] = { "name", "version", "abi", "file",
                                      "sha256" };

  fputs ("\n    {", out);
  if (g_strv_length (fields) != G_N_ELEMENTS (keys))
    {
      /* A journal written before plugins had files and hashes. */
      fputs ("\"name\": ", out);
      write_json_string (out, record);
      fputc ('}', out);
      return;
    }
  for (guint k = 0; k < G_N_ELEMENTS (keys); k++)
    {
      fprintf (out, "%s\"%s\": ", k > 0 ? ", " : "", keys[k]);
      if (k == 2)
        write_json_value (out, fields[k]);
      else
        write_json_string (out, fields[k]);
    }
  fputc ('}', out);
}

static gboolean
check_io (ResultsWriter *writer, FILE *file, const char *path, GError **error)
{
  if (ferror (file))
    {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                   "%s: write failed: %s", path, g_strerror (errno));
      return FALSE;
    }
  return TRUE;
}

static FILE *
open_part (const char *path, GError **error)
{
  FILE *f = g_fopen (path, "w");
  if (f == NULL)
    {
      int saved = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "%s: cannot create: %s", path, g_strerror (saved));
    }
  return f;
}

/* Creates the output folder @dir and its parents, if missing; the
 * results writer and the run journal both write there. */
gboolean
elk__make_output_dir (const char *dir, GError **error)
{
  if (g_mkdir_with_parents (dir, 0755) != 0)
    {
      int saved = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "%s: cannot create the output folder: %s", dir,
                   g_strerror (saved));
      return FALSE;
    }
  return TRUE;
}

/**
 * elk__results_writer_open:
 * @dir: the output folder, created if missing
 * @axis_names: (array zero-terminated=1): sweep axis columns
 * @plugin_versions: (element-type utf8): the plugins used, one
 *   elk__plugin_dup_record() line each
 * @with_routing: whether some row has routing statistics, which then get
 *   columns
 *
 * Returns: (transfer full): a writer writing into "*.part" files.
 */
ResultsWriter *
elk__results_writer_open (const char *dir,
                          const char *experiment,
                          const char *hash,
                          const char *const *axis_names,
                          GPtrArray *plugin_versions,
                          gboolean with_routing,
                          GError **error)
{
  ResultsWriter *writer;

  if (!elk__make_output_dir (dir, error))
    return NULL;

  writer = g_new0 (ResultsWriter, 1);
  writer->dir = g_strdup (dir);
  writer->csv_path = g_build_filename (dir, "results.csv", NULL);
  writer->json_path = g_build_filename (dir, "results.json", NULL);
  writer->timing_path = g_build_filename (dir, "timings.csv", NULL);
  writer->breakdown_path = g_build_filename (dir, "breakdown.csv", NULL);
  writer->csv_part = g_strconcat (writer->csv_path, ".part", NULL);
  writer->json_part = g_strconcat (writer->json_path, ".part", NULL);
  writer->timing_part = g_strconcat (writer->timing_path, ".part", NULL);
  writer->breakdown_part = g_strconcat (writer->breakdown_path, ".part", NULL);
  writer->routing_columns = with_routing;
  writer->axis_names = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; axis_names[i] != NULL; i++)
    g_ptr_array_add (writer->axis_names, g_strdup (axis_names[i]));

  writer->csv = open_part (writer->csv_part, error);
  writer->json = writer->csv ? open_part (writer->json_part, error) : NULL;
  writer->timing = writer->json ? open_part (writer->timing_part, error)
                                : NULL;
  writer->breakdown
      = writer->timing ? open_part (writer->breakdown_part, error) : NULL;
  if (writer->breakdown == NULL)
    {
      elk__results_writer_abort (writer);
      return NULL;
    }

  for (guint i = 0; i < BREAKDOWN_COLUMN; i++)
    fprintf (writer->csv, "%s%s", i > 0 ? "," : "", columns[i]);
  for (guint i = 0; with_routing && i < G_N_ELEMENTS (routing_columns); i++)
    fprintf (writer->csv, ",%s", routing_columns[i]);
  for (guint i = 0; i < writer->axis_names->len; i++)
    {
      fputc (',', writer->csv);
      write_csv_field (writer->csv, writer->axis_names->pdata[i]);
    }
  fputc ('\n', writer->csv);

  for (guint i = 0; i < G_N_ELEMENTS (timing_columns); i++)
    fprintf (writer->timing, "%s%s", i > 0 ? "," : "", timing_columns[i]);
  fputc ('\n', writer->timing);

  for (guint k = 0; k < G_N_ELEMENTS (breakdown_keys); k++)
    {
      fprintf (writer->breakdown, "%s,", breakdown_keys[k]);
      for (guint i = 0; i < G_N_ELEMENTS (columns); i++)
        if (strcmp (columns[i], breakdown_keys[k]) == 0)
          writer->key_index[k] = i;
    }
  fputs ("group,component,seconds", writer->breakdown);
  for (guint i = 0; i < writer->axis_names->len; i++)
    {
      fputc (',', writer->breakdown);
      write_csv_field (writer->breakdown, writer->axis_names->pdata[i]);
    }
  fputc ('\n', writer->breakdown);

  fputs ("{\n  \"elk_version\": ", writer->json);
  write_json_string (writer->json, ELK_VERSION);
  fputs (",\n  \"experiment\": ", writer->json);
  write_json_string (writer->json, experiment);
  fputs (",\n  \"experiment_sha256\": ", writer->json);
  write_json_string (writer->json, hash);
  fputs (",\n  \"plugins\": [", writer->json);
  for (guint i = 0; i < plugin_versions->len; i++)
    {
      fputs (i > 0 ? "," : "", writer->json);
      write_json_plugin (writer->json, plugin_versions->pdata[i]);
    }
  fputs ("\n  ],\n  \"rows\": [", writer->json);
  return writer;
}

/* One line of breakdown.csv per cell of the row's breakdown: the row's
 * key columns, the cell, the row's sweep values. */
static void
write_breakdown_rows (ResultsWriter *writer,
                      const char *const *values,
                      GPtrArray *cells)
{
  guint n_axes = writer->axis_names->len;

  for (guint c = 0; c + 2 < cells->len; c += 3)
    {
      for (guint k = 0; k < G_N_ELEMENTS (breakdown_keys); k++)
        {
          write_csv_field (writer->breakdown, values[writer->key_index[k]]);
          fputc (',', writer->breakdown);
        }
      fprintf (writer->breakdown, "%s,%s,%s", (char *) cells->pdata[c],
               (char *) cells->pdata[c + 1], (char *) cells->pdata[c + 2]);
      for (guint a = 0; a < n_axes; a++)
        {
          fputc (',', writer->breakdown);
          write_csv_field (writer->breakdown,
                           values[G_N_ELEMENTS (columns) + a]);
        }
      fputc ('\n', writer->breakdown);
    }
}

/* The breakdown as a JSON list of {group, component, seconds}, or null
 * when the row has none. */
static void
write_json_breakdown (FILE *out, const char *value, GPtrArray *cells)
{
  if (value == NULL || *value == '\0')
    {
      fputs ("null", out);
      return;
    }
  fputc ('[', out);
  for (guint c = 0; c + 2 < cells->len; c += 3)
    fprintf (out,
             "%s{\"group\": \"%s\", \"component\": \"%s\", "
             "\"seconds\": %s}",
             c > 0 ? ", " : "", (char *) cells->pdata[c],
             (char *) cells->pdata[c + 1], (char *) cells->pdata[c + 2]);
  fputc (']', out);
}

/* The routing field split into its nine values, an empty array for an
 * empty field, or NULL when it is malformed. */
static GStrv
split_routing (const char *value)
{
  g_auto (GStrv) parts = NULL;

  if (value == NULL || *value == '\0')
    return g_new0 (char *, 1);
  parts = g_strsplit (value, ";", -1);
  if (g_strv_length (parts) != G_N_ELEMENTS (routing_columns))
    return NULL;
  return g_steal_pointer (&parts);
}

/* The routing statistics as a JSON object keyed by the column names
 * without their "routing_" prefix, or null. */
static void
write_json_routing (FILE *out, GStrv parts)
{
  if (parts[0] == NULL)
    {
      fputs ("null", out);
      return;
    }
  fputc ('{', out);
  for (guint k = 0; k < G_N_ELEMENTS (routing_columns); k++)
    {
      fputs (k > 0 ? ", " : "", out);
      write_json_string (out, routing_columns[k] + strlen ("routing_"));
      fputs (": ", out);
      write_json_value (out, parts[k]);
    }
  fputc ('}', out);
}

/**
 * elk__results_writer_add_row:
 * @values: one string per column (NULL or "" for empty), then one per
 *   sweep axis
 */
gboolean
elk__results_writer_add_row (ResultsWriter *writer,
                             const char *const *values,
                             GError **error)
{
  guint n = G_N_ELEMENTS (columns) + writer->axis_names->len;
  g_autoptr (GPtrArray) cells = elk__breakdown_split (values[BREAKDOWN_COLUMN]);
  g_auto (GStrv) routing = split_routing (values[ROUTING_COLUMN]);

  if (routing == NULL || (routing[0] != NULL && !writer->routing_columns))
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: row %u: the routing statistics '%s' are not %u "
                   "numbers joined by ';' in a run with routing columns",
                   writer->csv_part, writer->n_rows + 1, values[ROUTING_COLUMN],
                   (guint) G_N_ELEMENTS (routing_columns));
      return FALSE;
    }
  if (cells == NULL)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: row %u: the breakdown '%s' is not "
                   "'group/component=seconds' cells joined by ';'",
                   writer->csv_part, writer->n_rows + 1,
                   values[BREAKDOWN_COLUMN]);
      return FALSE;
    }
  for (guint i = 0; i < n; i++)
    {
      if (i == BREAKDOWN_COLUMN)
        continue;
      if (i == ROUTING_COLUMN)
        {
          for (guint k = 0;
               writer->routing_columns && k < G_N_ELEMENTS (routing_columns);
               k++)
            {
              fputc (',', writer->csv);
              /* A row without statistics leaves them empty. */
              write_csv_field (writer->csv,
                               routing[0] != NULL ? routing[k] : NULL);
            }
          continue;
        }
      if (i > 0)
        fputc (',', writer->csv);
      write_csv_field (writer->csv, values[i]);
    }
  fputc ('\n', writer->csv);
  write_breakdown_rows (writer, values, cells);

  fputs (writer->n_rows > 0 ? ",\n    {" : "\n    {", writer->json);
  for (guint i = 0; i < n; i++)
    {
      const char *name = i < G_N_ELEMENTS (columns)
                           ? columns[i]
                           : writer->axis_names->pdata[i - G_N_ELEMENTS (
                                                             columns)];
      if (i == ROUTING_COLUMN && !writer->routing_columns)
        continue;
      fputs (i > 0 ? ", " : "", writer->json);
      write_json_string (writer->json, name);
      fputs (": ", writer->json);
      if (i == BREAKDOWN_COLUMN)
        write_json_breakdown (writer->json, values[i], cells);
      else if (i == ROUTING_COLUMN)
        write_json_routing (writer->json, routing);
      else
        write_json_value (writer->json, values[i]);
    }
  fputc ('}', writer->json);
  writer->n_rows++;
  return check_io (writer, writer->csv, writer->csv_part, error)
         && check_io (writer, writer->json, writer->json_part, error)
         && check_io (writer, writer->breakdown, writer->breakdown_part, error);
}

gboolean
elk__results_writer_add_timing (ResultsWriter *writer,
                                const char *const *values,
                                GError **error)
{
  for (guint i = 0; i < G_N_ELEMENTS (timing_columns); i++)
    {
      if (i > 0)
        fputc (',', writer->timing);
      write_csv_field (writer->timing, values[i]);
    }
  fputc ('\n', writer->timing);
  return check_io (writer, writer->timing, writer->timing_part, error);
}

static void
writer_free (ResultsWriter *writer)
{
  g_free (writer->dir);
  g_free (writer->csv_path);
  g_free (writer->json_path);
  g_free (writer->timing_path);
  g_free (writer->csv_part);
  g_free (writer->json_part);
  g_free (writer->timing_part);
  g_free (writer->breakdown_path);
  g_free (writer->breakdown_part);
  g_ptr_array_unref (writer->axis_names);
  g_free (writer);
}

static gboolean
close_file (FILE **file, const char *path, GError **error)
{
  int rc = fclose (*file);
  *file = NULL;
  if (rc != 0)
    {
      int saved = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "%s: cannot finish writing: %s", path, g_strerror (saved));
      return FALSE;
    }
  return TRUE;
}

static gboolean
move_into_place (const char *part, const char *path, GError **error)
{
  if (g_rename (part, path) != 0)
    {
      int saved = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "%s: cannot rename to %s: %s", part, path,
                   g_strerror (saved));
      return FALSE;
    }
  return TRUE;
}

/**
 * elk__results_writer_commit:
 *
 * Finishes the files and renames them into place.  Frees @writer.
 */
gboolean
elk__results_writer_commit (ResultsWriter *writer, GError **error)
{
  gboolean ok;

  fputs ("\n  ]\n}\n", writer->json);
  ok = close_file (&writer->csv, writer->csv_part, error)
       && close_file (&writer->json, writer->json_part, error)
       && close_file (&writer->timing, writer->timing_part, error)
       && close_file (&writer->breakdown, writer->breakdown_part, error)
       /* breakdown.csv first, so that results.csv is never in place
        * without it. */
       && move_into_place (writer->breakdown_part, writer->breakdown_path,
                           error)
       && move_into_place (writer->csv_part, writer->csv_path, error)
       && move_into_place (writer->json_part, writer->json_path, error)
       && move_into_place (writer->timing_part, writer->timing_path, error);
  if (!ok)
    {
      elk__results_writer_abort (writer);
      return FALSE;
    }
  writer_free (writer);
  return TRUE;
}

/**
 * elk__results_writer_abort:
 *
 * Removes the partial files.  Frees @writer.
 */
void
elk__results_writer_abort (ResultsWriter *writer)
{
  if (writer->csv != NULL)
    fclose (writer->csv);
  if (writer->json != NULL)
    fclose (writer->json);
  if (writer->timing != NULL)
    fclose (writer->timing);
  if (writer->breakdown != NULL)
    fclose (writer->breakdown);
  g_unlink (writer->csv_part);
  g_unlink (writer->json_part);
  g_unlink (writer->timing_part);
  g_unlink (writer->breakdown_part);
  writer_free (writer);
}
