/* elk-report.c: results.csv, results.json and timings.csv.
 *
 * Rows are streamed into files named "<name>.part" in the output folder as
 * points finish (in point order), and the files are renamed into place
 * only when the run completes, so an interrupted run never leaves a file
 * that looks complete.  Results hold only deterministic values; wall-clock
 * figures (compile_s, run_s, peak_rss) go to timings.csv, so that the same
 * experiment gives byte-identical results whatever --jobs is.
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
  "experiment", "point", "model", "phase", "batch", "seq", "chip",
  "topology", "cores", "sram_per_core", "hbm_bw", "noc_bw", "frontend",
  "scheduler", "allocator", "backend", "latency_s", "ideal_s", "bound_s",
  "flops", "hbm_bytes", "noc_bytes", "hbm_util", "noc_util",
  "achieved_flops", "preload_only_s", "execute_only_s", "overlap_s",
  "stall_s", "n_ops", "n_orders", "label", "status", "error",
  "estimate_s", "metrics_model", "assumptions",
};

static const char *const timing_columns[] = {
  "experiment", "point", "label", "plan_s", "compile_s", "run_s",
  "peak_rss",
};

struct _ElkReport
{
  char *dir;
  char *csv_path, *json_path, *timing_path;
  char *csv_part, *json_part, *timing_part;
  FILE *csv, *json, *timing;
  GPtrArray *axis_names;
  guint n_rows;
};

const char *const *
elk__report_get_columns (void)
{
  return columns;
}

guint
elk__report_get_n_columns (void)
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
check_io (ElkReport *report, FILE *file, const char *path, GError **error)
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

/**
 * elk__report_open:
 * @dir: the output folder, created if missing
 * @axis_names: (array zero-terminated=1): sweep axis columns
 * @plugin_versions: (element-type utf8): the plugins used, one
 *   elk__plugin_dup_record() line each
 *
 * Returns: (transfer full): a report writing into "*.part" files.
 */
ElkReport *
elk__report_open (const char *dir,
                  const char *experiment,
                  const char *hash,
                  const char *const *axis_names,
                  GPtrArray *plugin_versions,
                  GError **error)
{
  ElkReport *report;

  if (g_mkdir_with_parents (dir, 0755) != 0)
    {
      int saved = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "%s: cannot create the output folder: %s", dir,
                   g_strerror (saved));
      return NULL;
    }

  report = g_new0 (ElkReport, 1);
  report->dir = g_strdup (dir);
  report->csv_path = g_build_filename (dir, "results.csv", NULL);
  report->json_path = g_build_filename (dir, "results.json", NULL);
  report->timing_path = g_build_filename (dir, "timings.csv", NULL);
  report->csv_part = g_strconcat (report->csv_path, ".part", NULL);
  report->json_part = g_strconcat (report->json_path, ".part", NULL);
  report->timing_part = g_strconcat (report->timing_path, ".part", NULL);
  report->axis_names = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; axis_names[i] != NULL; i++)
    g_ptr_array_add (report->axis_names, g_strdup (axis_names[i]));

  report->csv = open_part (report->csv_part, error);
  report->json = report->csv ? open_part (report->json_part, error) : NULL;
  report->timing = report->json ? open_part (report->timing_part, error)
                                : NULL;
  if (report->timing == NULL)
    {
      elk__report_abort (report);
      return NULL;
    }

  for (guint i = 0; i < G_N_ELEMENTS (columns); i++)
    fprintf (report->csv, "%s%s", i > 0 ? "," : "", columns[i]);
  for (guint i = 0; i < report->axis_names->len; i++)
    {
      fputc (',', report->csv);
      write_csv_field (report->csv, report->axis_names->pdata[i]);
    }
  fputc ('\n', report->csv);

  for (guint i = 0; i < G_N_ELEMENTS (timing_columns); i++)
    fprintf (report->timing, "%s%s", i > 0 ? "," : "", timing_columns[i]);
  fputc ('\n', report->timing);

  fputs ("{\n  \"elk_version\": ", report->json);
  write_json_string (report->json, ELK_VERSION);
  fputs (",\n  \"experiment\": ", report->json);
  write_json_string (report->json, experiment);
  fputs (",\n  \"experiment_sha256\": ", report->json);
  write_json_string (report->json, hash);
  fputs (",\n  \"plugins\": [", report->json);
  for (guint i = 0; i < plugin_versions->len; i++)
    {
      fputs (i > 0 ? "," : "", report->json);
      write_json_plugin (report->json, plugin_versions->pdata[i]);
    }
  fputs ("\n  ],\n  \"rows\": [", report->json);
  return report;
}

/**
 * elk__report_add_row:
 * @values: one string per column (NULL or "" for empty), then one per
 *   sweep axis
 */
gboolean
elk__report_add_row (ElkReport *report,
                     const char *const *values,
                     GError **error)
{
  guint n = G_N_ELEMENTS (columns) + report->axis_names->len;

  for (guint i = 0; i < n; i++)
    {
      if (i > 0)
        fputc (',', report->csv);
      write_csv_field (report->csv, values[i]);
    }
  fputc ('\n', report->csv);

  fputs (report->n_rows > 0 ? ",\n    {" : "\n    {", report->json);
  for (guint i = 0; i < n; i++)
    {
      const char *name = i < G_N_ELEMENTS (columns)
                           ? columns[i]
                           : report->axis_names->pdata[i - G_N_ELEMENTS (
                                                             columns)];
      fputs (i > 0 ? ", " : "", report->json);
      write_json_string (report->json, name);
      fputs (": ", report->json);
      write_json_value (report->json, values[i]);
    }
  fputc ('}', report->json);
  report->n_rows++;
  return check_io (report, report->csv, report->csv_part, error)
         && check_io (report, report->json, report->json_part, error);
}

gboolean
elk__report_add_timing (ElkReport *report,
                        const char *const *values,
                        GError **error)
{
  for (guint i = 0; i < G_N_ELEMENTS (timing_columns); i++)
    {
      if (i > 0)
        fputc (',', report->timing);
      write_csv_field (report->timing, values[i]);
    }
  fputc ('\n', report->timing);
  return check_io (report, report->timing, report->timing_part, error);
}

static void
report_free (ElkReport *report)
{
  g_free (report->dir);
  g_free (report->csv_path);
  g_free (report->json_path);
  g_free (report->timing_path);
  g_free (report->csv_part);
  g_free (report->json_part);
  g_free (report->timing_part);
  g_ptr_array_unref (report->axis_names);
  g_free (report);
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
 * elk__report_commit:
 *
 * Finishes the files and renames them into place.  Frees @report.
 */
gboolean
elk__report_commit (ElkReport *report, GError **error)
{
  gboolean ok;

  fputs ("\n  ]\n}\n", report->json);
  ok = close_file (&report->csv, report->csv_part, error)
       && close_file (&report->json, report->json_part, error)
       && close_file (&report->timing, report->timing_part, error)
       && move_into_place (report->csv_part, report->csv_path, error)
       && move_into_place (report->json_part, report->json_path, error)
       && move_into_place (report->timing_part, report->timing_path, error);
  if (!ok)
    {
      elk__report_abort (report);
      return FALSE;
    }
  report_free (report);
  return TRUE;
}

/**
 * elk__report_abort:
 *
 * Removes the partial files.  Frees @report.
 */
void
elk__report_abort (ElkReport *report)
{
  if (report->csv != NULL)
    fclose (report->csv);
  if (report->json != NULL)
    fclose (report->json);
  if (report->timing != NULL)
    fclose (report->timing);
  g_unlink (report->csv_part);
  g_unlink (report->json_part);
  g_unlink (report->timing_part);
  report_free (report);
}
