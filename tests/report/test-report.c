/* test-report.c: figures and report.html from synthetic and real results.
 *
 * The synthetic results are written by the test (report-test-util.c), so
 * the number of bars, lines and failure marks each figure must have is
 * known; they are counted by colour in the SVG, parsed with libxml2.
 */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include "elk-report-private.h"
#include "report-test-util.h"

static const char *const expected_stems[] = {
  "latency", "breakdown", "utilisation", "sweep-chip.hbm-bw-gbps",
  "roofline",
};

/* Two designs over three HBM bandwidths, all ran. */
static const SyntheticRow all_ok[] = {
  { "basic", 4000, 9e-3 },  { "elk-full", 4000, 7e-3 },
  { "basic", 8000, 6e-3 },  { "elk-full", 8000, 4e-3 },
  { "basic", 16000, 5e-3 }, { "elk-full", 16000, 3e-3 },
};

/* The same, but elk-full failed at 8000. */
static const SyntheticRow one_failed[] = {
  { "basic", 4000, 9e-3 },  { "elk-full", 4000, 7e-3 },
  { "basic", 8000, 6e-3 },  { "elk-full", 8000, NAN },
  { "basic", 16000, 5e-3 }, { "elk-full", 16000, 3e-3 },
};

typedef struct
{
  char *dir;
  char *experiment;
} Fixture;

static void
fixture_set_up (Fixture *fixture, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  fixture->dir = g_dir_make_tmp ("elk-report-XXXXXX", &error);
  g_assert_no_error (error);
}

static void
fixture_tear_down (Fixture *fixture, gconstpointer data)
{
  elk_test_remove_tree (fixture->dir);
  g_free (fixture->dir);
  g_free (fixture->experiment);
}

static char *
path_in (const Fixture *fixture, const char *name)
{
  return g_build_filename (fixture->dir, name, NULL);
}

static char *
read_text (const char *path)
{
  g_autoptr (GError) error = NULL;
  char *text = NULL;
  g_file_get_contents (path, &text, NULL, &error);
  g_assert_no_error (error);
  return text;
}

static void
build (const Fixture *fixture, gboolean png)
{
  ElkReportOptions options = { .write_png = png };
  g_autoptr (GError) error = NULL;

  g_assert_true (elk_report_build (fixture->dir, fixture->experiment,
                                   &options, &error));
  g_assert_no_error (error);
}

static guint
count_paths (const Fixture *fixture, const char *stem, const char *property,
             const guint8 rgb[3])
{
  g_autofree char *name = g_strconcat (stem, ".svg", NULL);
  g_autofree char *path = path_in (fixture, name);
  return report_test_count_paths (path, property, rgb);
}

static void
test_files (Fixture *fixture, gconstpointer data)
{
  g_autoptr (GHashTable) expected
    = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  GDir *dir;
  const char *name;

  fixture->experiment = report_test_write_results (fixture->dir, all_ok,
                                                   G_N_ELEMENTS (all_ok));
  build (fixture, TRUE);

  for (const char *const *n = (const char *const[]){ "results.json",
                                                     "experiment.xml",
                                                     "report.html", NULL };
       *n != NULL; n++)
    g_hash_table_add (expected, g_strdup (*n));
  for (guint i = 0; i < G_N_ELEMENTS (expected_stems); i++)
    {
      g_hash_table_add (expected, g_strconcat (expected_stems[i], ".svg",
                                               NULL));
      g_hash_table_add (expected, g_strconcat (expected_stems[i], ".png",
                                               NULL));
    }
  /* Every expected file is there, and nothing else: no temporary file
   * is left behind. */
  dir = g_dir_open (fixture->dir, 0, NULL);
  g_assert_nonnull (dir);
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      if (!g_hash_table_remove (expected, name))
        g_error ("unexpected file in the output folder: %s", name);
    }
  g_dir_close (dir);
  g_assert_cmpuint (g_hash_table_size (expected), ==, 0);

  /* The PNGs are PNGs, drawn at twice the SVG's size. */
  for (guint i = 0; i < G_N_ELEMENTS (expected_stems); i++)
    {
      g_autofree char *png_name = g_strconcat (expected_stems[i], ".png",
                                               NULL);
      g_autofree char *png_path = path_in (fixture, png_name);
      cairo_surface_t *image = cairo_image_surface_create_from_png (png_path);
      g_assert_cmpint (cairo_surface_status (image), ==,
                       CAIRO_STATUS_SUCCESS);
      g_assert_cmpint (cairo_image_surface_get_width (image), >, 400);
      cairo_surface_destroy (image);
    }
}

static void
test_bars (Fixture *fixture, gconstpointer data)
{
  fixture->experiment = report_test_write_results (fixture->dir, all_ok,
                                                   G_N_ELEMENTS (all_ok));
  build (fixture, FALSE);

  /* Three configurations, one bar each, plus the legend's swatch. */
  for (guint d = 0; d < 2; d++)
    {
      g_assert_cmpuint (count_paths (fixture, "latency", "fill",
                                     elk__design_colors[d]),
                        ==, 3 + 1);
      /* Three panels (HBM, NoC, FLOP/s) of three bars, one legend. */
      g_assert_cmpuint (count_paths (fixture, "utilisation", "fill",
                                     elk__design_colors[d]),
                        ==, 3 * 3 + 1);
    }
  g_assert_cmpuint (count_paths (fixture, "latency", "fill",
                                 elk__design_colors[2]),
                    ==, 0);
  /* Six stacked bars, each with four non-empty parts. */
  for (guint k = 0; k < 4; k++)
    g_assert_cmpuint (count_paths (fixture, "breakdown", "fill",
                                   elk__breakdown_colors[k]),
                      ==, 6 + 1);
  g_assert_cmpuint (count_paths (fixture, "latency", "stroke",
                                 elk__failed_color),
                    ==, 0);
}

static void
test_lines (Fixture *fixture, gconstpointer data)
{
  fixture->experiment = report_test_write_results (fixture->dir, all_ok,
                                                   G_N_ELEMENTS (all_ok));
  build (fixture, FALSE);

  for (guint d = 0; d < 2; d++)
    {
      /* One line per design over the axis, plus the legend's. */
      g_assert_cmpuint (count_paths (fixture, "sweep-chip.hbm-bw-gbps",
                                     "stroke", elk__design_colors[d]),
                        ==, 1 + 1);
      /* A marker per point, plus the legend's. */
      g_assert_cmpuint (count_paths (fixture, "sweep-chip.hbm-bw-gbps",
                                     "fill", elk__design_colors[d]),
                        ==, 3 + 1);
      /* The roofline chart has markers and no lines. */
      g_assert_cmpuint (count_paths (fixture, "roofline", "fill",
                                     elk__design_colors[d]),
                        ==, 3 + 1);
      g_assert_cmpuint (count_paths (fixture, "roofline", "stroke",
                                     elk__design_colors[d]),
                        ==, 0);
    }
}

static void
test_failed_rows (Fixture *fixture, gconstpointer data)
{
  g_autofree char *html_path = NULL;
  g_autofree char *html = NULL;

  fixture->experiment = report_test_write_results (
    fixture->dir, one_failed, G_N_ELEMENTS (one_failed));
  build (fixture, FALSE);

  /* elk-full has two bars, not three: the failed row is not a bar of
   * height zero but a cross, and the legend says what the cross means. */
  g_assert_cmpuint (count_paths (fixture, "latency", "fill",
                                 elk__design_colors[1]),
                    ==, 2 + 1);
  g_assert_cmpuint (count_paths (fixture, "latency", "stroke",
                                 elk__failed_color),
                    ==, 1 + 1);
  g_assert_cmpuint (count_paths (fixture, "breakdown", "stroke",
                                 elk__failed_color),
                    ==, 1 + 1);
  g_assert_cmpuint (count_paths (fixture, "utilisation", "stroke",
                                 elk__failed_color),
                    ==, 3 + 1);
  g_assert_cmpuint (count_paths (fixture, "utilisation", "fill",
                                 elk__design_colors[1]),
                    ==, 3 * 2 + 1);
  /* In the sweep, the failed middle point breaks elk-full's line: its two
   * remaining points are not joined through zero, so only the legend
   * has a line of its colour. */
  g_assert_cmpuint (count_paths (fixture, "sweep-chip.hbm-bw-gbps", "stroke",
                                 elk__design_colors[1]),
                    ==, 0 + 1);
  g_assert_cmpuint (count_paths (fixture, "sweep-chip.hbm-bw-gbps", "fill",
                                 elk__design_colors[1]),
                    ==, 2 + 1);
  g_assert_cmpuint (count_paths (fixture, "sweep-chip.hbm-bw-gbps", "stroke",
                                 elk__failed_color),
                    ==, 1 + 1);
  g_assert_cmpuint (count_paths (fixture, "sweep-chip.hbm-bw-gbps", "stroke",
                                 elk__design_colors[0]),
                    ==, 1 + 1);

  html_path = path_in (fixture, "report.html");
  html = read_text (html_path);
  /* The row is in the summary table and in the full table. */
  g_assert_cmpuint (report_test_count (html, "<tr class=\"failed\">"), ==,
                    2);
  g_assert_nonnull (strstr (html, "chip &apos;analytic&apos;: synthetic "
                                  "failure"));
  g_assert_nonnull (strstr (html, "1 failed"));
}

static GHashTable *
snapshot (const Fixture *fixture)
{
  GHashTable *files
    = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  GDir *dir = g_dir_open (fixture->dir, 0, NULL);
  const char *name;

  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = path_in (fixture, name);
      gsize length;
      char *data = NULL;
      g_file_get_contents (path, &data, &length, NULL);
      g_assert_nonnull (data);
      g_hash_table_insert (files, g_strdup (name),
                           g_compute_checksum_for_data (
                             G_CHECKSUM_SHA256, (const guchar *) data,
                             length));
      g_free (data);
    }
  g_dir_close (dir);
  return files;
}

static void
test_deterministic (Fixture *fixture, gconstpointer data)
{
  g_autoptr (GHashTable) first = NULL;
  g_autoptr (GHashTable) second = NULL;
  GHashTableIter iter;
  gpointer name, hash;

  fixture->experiment = report_test_write_results (
    fixture->dir, one_failed, G_N_ELEMENTS (one_failed));
  build (fixture, TRUE);
  first = snapshot (fixture);
  /* cairo numbers some SVG definitions with counters global to the
   * process; a second build in the same process must not differ. */
  build (fixture, TRUE);
  second = snapshot (fixture);

  g_assert_cmpuint (g_hash_table_size (first), ==,
                    g_hash_table_size (second));
  g_hash_table_iter_init (&iter, first);
  while (g_hash_table_iter_next (&iter, &name, &hash))
    g_assert_cmpstr (hash, ==, g_hash_table_lookup (second, name));
}

static void
test_bad_column (Fixture *fixture, gconstpointer data)
{
  const ElkReportPlot missing[] = { { "chip.hbm-bw-gbps", "hbm_utilisation" } };
  const ElkReportPlot text[] = { { "chip.hbm-bw-gbps", "model" } };
  const ElkReportPlot good[] = { { "hbm_bw", "hbm_util" } };
  ElkReportOptions options = { .plots = missing, .n_plots = 1 };
  g_autoptr (GError) error = NULL;
  g_autofree char *html_path = path_in (fixture, "report.html");

  fixture->experiment = report_test_write_results (fixture->dir, all_ok,
                                                   G_N_ELEMENTS (all_ok));
  g_assert_false (elk_report_build (fixture->dir, fixture->experiment,
                                    &options, &error));
  g_assert_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_PLOT);
  /* The message names the column and lists the valid ones. */
  g_assert_nonnull (strstr (error->message, "'hbm_utilisation'"));
  g_assert_nonnull (strstr (error->message, "latency_s"));
  g_assert_nonnull (strstr (error->message, "chip.hbm-bw-gbps"));
  /* Nothing was written. */
  g_assert_false (g_file_test (html_path, G_FILE_TEST_EXISTS));
  g_clear_error (&error);

  options.plots = text;
  g_assert_false (elk_report_build (fixture->dir, fixture->experiment,
                                    &options, &error));
  g_assert_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_PLOT);
  g_assert_nonnull (strstr (error->message, "'model'"));
  g_clear_error (&error);

  options.plots = good;
  g_assert_true (elk_report_build (fixture->dir, fixture->experiment,
                                   &options, &error));
  g_assert_no_error (error);
  for (guint d = 0; d < 2; d++)
    g_assert_cmpuint (count_paths (fixture, "plot-hbm_bw-hbm_util", "stroke",
                                   elk__design_colors[d]),
                      ==, 1 + 1);
}

static void
test_parse_plot (void)
{
  g_autoptr (GError) error = NULL;
  char *x = NULL, *y = NULL;
  const char *const bad[] = { "x=a", "z=1,y=b", "x=,y=b", "x=a,x=b,y=c",
                              "", "x=a;y=b" };

  g_assert_true (elk_report_parse_plot ("x=hbm_bw,y=latency_s", &x, &y,
                                        &error));
  g_assert_no_error (error);
  g_assert_cmpstr (x, ==, "hbm_bw");
  g_assert_cmpstr (y, ==, "latency_s");
  g_clear_pointer (&x, g_free);
  g_clear_pointer (&y, g_free);
  g_assert_true (elk_report_parse_plot ("y=b, x=chip.hbm-bw-gbps", &x, &y,
                                        &error));
  g_assert_cmpstr (x, ==, "chip.hbm-bw-gbps");
  g_assert_cmpstr (y, ==, "b");
  g_clear_pointer (&x, g_free);
  g_clear_pointer (&y, g_free);

  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_assert_false (elk_report_parse_plot (bad[i], &x, &y, &error));
      g_assert_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_PLOT);
      g_assert_nonnull (strstr (error->message, "x=COLUMN,y=COLUMN"));
      g_clear_error (&error);
    }
}

static void
test_bad_inputs (Fixture *fixture, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *results = path_in (fixture, "results.json");
  g_autofree char *text = NULL;

  /* No results yet. */
  g_assert_false (elk_report_build (fixture->dir, NULL, NULL, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
  g_assert_nonnull (strstr (error->message, results));
  g_clear_error (&error);

  /* An experiment file edited after the run. */
  fixture->experiment = report_test_write_results (fixture->dir, all_ok,
                                                   G_N_ELEMENTS (all_ok));
  text = read_text (fixture->experiment);
  {
    g_autofree char *edited = g_strconcat (text, "<!-- edited -->\n", NULL);
    g_file_set_contents (fixture->experiment, edited, -1, &error);
    g_assert_no_error (error);
  }
  g_assert_false (elk_report_build (fixture->dir, fixture->experiment, NULL,
                                    &error));
  g_assert_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_EXPERIMENT);
  g_assert_nonnull (strstr (error->message, fixture->experiment));
  g_clear_error (&error);

  /* Results that are not an elk results file. */
  g_file_set_contents (results, "{\"rows\": []}", -1, &error);
  g_assert_no_error (error);
  g_assert_false (elk_report_build (fixture->dir, NULL, NULL, &error));
  g_assert_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS);
  g_assert_nonnull (strstr (error->message, "elk_version"));
  g_clear_error (&error);
  g_file_set_contents (results, "{\"elk_version\": ", -1, &error);
  g_assert_no_error (error);
  g_assert_false (elk_report_build (fixture->dir, NULL, NULL, &error));
  g_assert_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS);
  g_assert_nonnull (strstr (error->message, results));
  g_clear_error (&error);

  /* A row's execution-time breakdown that is not a list of cells, or
   * names a component elk does not have. */
  {
    static const struct
    {
      const char *breakdown;
      const char *message;
    } bad[] = {
      { "3", "rows[0].breakdown: expected null or a list" },
      { "[{\"group\": \"matmul\", \"component\": \"compute\"}]",
        "rows[0].breakdown: expected null or a list" },
      { "[{\"group\": \"matmul\", \"component\": \"idle\", "
        "\"seconds\": 1}]",
        "rows[0].breakdown[0]: unknown component 'idle'" },
    };
    g_autofree char *good = NULL;
    g_autofree char *experiment
        = report_test_write_results (fixture->dir, all_ok,
                                     G_N_ELEMENTS (all_ok));

    good = read_text (results);
    for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
      {
        g_autofree char *with = g_strdup_printf ("\"breakdown\": %s, "
                                                 "\"label\": ",
                                                 bad[i].breakdown);
        g_autoptr (GString) edited = g_string_new (good);
        g_string_replace (edited, "\"label\": ", with, 1);
        g_file_set_contents (results, edited->str, -1, &error);
        g_assert_no_error (error);
        g_assert_false (elk_report_build (fixture->dir, NULL, NULL, &error));
        g_assert_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS);
        g_assert_nonnull (strstr (error->message, bad[i].message));
        g_clear_error (&error);
      }
  }
}

/* Every id of the page is unique: the figures' glyph ids would otherwise
 * clash and a browser would draw one figure's text with another's
 * glyphs. */
static void
assert_unique_ids (const char *html)
{
  g_autoptr (GHashTable) ids = g_hash_table_new_full (g_str_hash, g_str_equal,
                                                      g_free, NULL);
  for (const char *p = strstr (html, " id=\""); p != NULL;
       p = strstr (p + 1, " id=\""))
    {
      const char *end = strchr (p + 5, '"');
      char *id = g_strndup (p + 5, end - (p + 5));
      if (!g_hash_table_add (ids, id))
        g_error ("id '%s' appears twice in report.html", id);
    }
  g_assert_cmpuint (g_hash_table_size (ids), >, 100);
}

static void
test_html (Fixture *fixture, gconstpointer data)
{
  g_autofree char *html_path = NULL;
  g_autofree char *html = NULL;

  fixture->experiment = report_test_write_results (fixture->dir, all_ok,
                                                   G_N_ELEMENTS (all_ok));
  build (fixture, FALSE);
  html_path = path_in (fixture, "report.html");
  html = read_text (html_path);

  g_assert_true (g_str_has_prefix (html, "<!DOCTYPE html>"));
  g_assert_cmpuint (report_test_count (html, "<figure class=\"elk-figure\""),
                    ==, G_N_ELEMENTS (expected_stems));
  g_assert_cmpuint (report_test_count (html, "<svg"), ==,
                    G_N_ELEMENTS (expected_stems));
  g_assert_cmpuint (report_test_count (html, "</svg>"), ==,
                    G_N_ELEMENTS (expected_stems));
  /* Self-contained: nothing to fetch. */
  g_assert_null (strstr (html, "<script"));
  g_assert_null (strstr (html, "<link"));
  g_assert_null (strstr (html, "<img"));
  g_assert_null (strstr (html, "src="));
  g_assert_null (strstr (html, "@import"));
  g_assert_null (strstr (html, "<?xml"));
  assert_unique_ids (html);
  /* The experiment file, escaped; its description; the versions. */
  g_assert_nonnull (strstr (html, "&amp;lt;written by the test&amp;gt; "
                                  "&amp;amp; read back."));
  g_assert_nonnull (strstr (html, "<p class=\"description\">A synthetic sweep "
                                  "&lt;written by the test&gt; &amp; read "
                                  "back.</p>"));
  g_assert_nonnull (strstr (html, "<li>analytic 0.1 (abi 1)</li>"));
  g_assert_nonnull (strstr (html, "<dt>elk (that ran the experiment)</dt>"
                                  "<dd>0.1.0</dd>"));
  g_assert_cmpuint (report_test_count (html, "<tr class=\"ok\">"), ==,
                    2 * G_N_ELEMENTS (all_ok));
}

/* A real run: elk-run experiments/quickstart.xml --quick, then the
 * report, as elk-run will make it. */
static void
test_quickstart (Fixture *fixture, gconstpointer data)
{
  const char *elk_run = g_getenv ("ELK_RUN");
  const char *source_root = g_getenv ("ELK_SOURCE_ROOT");
  g_autofree char *experiment = NULL;
  g_autofree char *out = NULL;
  g_autofree char *html = NULL;
  g_autofree char *html_path = NULL;
  g_autoptr (GError) error = NULL;
  int status = 0;

  if (elk_run == NULL || source_root == NULL)
    {
      g_test_skip ("ELK_RUN and ELK_SOURCE_ROOT are not set (run through "
                   "meson test)");
      return;
    }
  experiment = g_build_filename (source_root, "experiments", "quickstart.xml",
                                 NULL);
  out = path_in (fixture, "quickstart");
  {
    const char *argv[] = { elk_run, experiment, "--quick", "-q", "-o", out,
                           NULL };
    g_autofree char *err = NULL;
    g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                  NULL, &err, &status, &error);
    g_assert_no_error (error);
    if (!g_spawn_check_wait_status (status, NULL))
      g_error ("elk-run failed: %s", err);
  }

  g_assert_true (elk_report_build (out, experiment, NULL, &error));
  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (expected_stems); i++)
    {
      g_autofree char *name = g_strconcat (expected_stems[i], ".svg", NULL);
      g_autofree char *path = g_build_filename (out, name, NULL);
      /* quickstart has no sweep, so no line figure. */
      g_assert_cmpint (g_file_test (path, G_FILE_TEST_EXISTS), ==,
                       !g_str_has_prefix (expected_stems[i], "sweep-"));
    }
  {
    g_autofree char *svg = g_build_filename (out, "latency.svg", NULL);
    /* Five designs, one bar each at the one point, and a legend swatch. */
    for (guint d = 0; d < 5; d++)
      g_assert_cmpuint (report_test_count_paths (svg, "fill",
                                                 elk__design_colors[d]),
                        ==, 1 + 1);
  }
  html_path = g_build_filename (out, "report.html", NULL);
  html = read_text (html_path);
  g_assert_nonnull (strstr (html, "<h1>elk report: quickstart</h1>"));
  g_assert_nonnull (strstr (html, "llama2-13b-paper"));
  g_assert_cmpuint (report_test_count (html, "<figure class=\"elk-figure\""),
                    ==, 5);
  {
    g_autofree char *svg = g_build_filename (out, "op-breakdown.svg", NULL);
    /* Five designs' panels, a compute bar for each of the six operator
     * groups of the paper's Llama2-13B graph, and a legend swatch. */
    g_assert_cmpuint (report_test_count_paths (svg, "fill",
                                               elk__component_colors[0]),
                      ==, 5 * 6 + 1);
  }
  /* The breakdown table: per design, a line per group and one of totals. */
  g_assert_nonnull (strstr (html, "<table id=\"breakdown\">"));
  g_assert_cmpuint (report_test_count (html, "<td>all</td>"), ==, 5);
  assert_unique_ids (html);
}

/* Mixture-of-experts results (issue 21): rows whose "routing" record
 * (the speculation on conditional experts) becomes routing_* columns, and
 * two more line figures over the batch axis: the HBM bytes per token and
 * the expert preload hit rate.  The second design's hit rate is null at
 * batch 1 (no taken expert with weights), so its line has one point. */
static void
test_routing (Fixture *fixture, gconstpointer data)
{
  static const char json[]
      = "{\"elk_version\": \"test\", \"experiment\": \"moe\", "
        "\"experiment_sha256\": \"\", \"plugins\": [], \"rows\": ["
        "{\"experiment\": \"moe\", \"point\": 0, \"label\": \"all\", "
        "\"status\": \"ok\", \"batch\": 1, \"frontend.batch\": 1, "
        "\"latency_s\": 2e-3, \"hbm_bytes\": 4e9, "
        "\"routing\": {\"hits\": 3, \"hit_rate\": 0.75}},"
        "{\"experiment\": \"moe\", \"point\": 0, \"label\": \"od\", "
        "\"status\": \"ok\", \"batch\": 1, \"frontend.batch\": 1, "
        "\"latency_s\": 3e-3, \"hbm_bytes\": 3e9, "
        "\"routing\": {\"hits\": 0, \"hit_rate\": null}},"
        "{\"experiment\": \"moe\", \"point\": 1, \"label\": \"all\", "
        "\"status\": \"ok\", \"batch\": 8, \"frontend.batch\": 8, "
        "\"latency_s\": 4e-3, \"hbm_bytes\": 8e9, "
        "\"routing\": {\"hits\": 8, \"hit_rate\": 1}},"
        "{\"experiment\": \"moe\", \"point\": 1, \"label\": \"od\", "
        "\"status\": \"ok\", \"batch\": 8, \"frontend.batch\": 8, "
        "\"latency_s\": 5e-3, \"hbm_bytes\": 6e9, "
        "\"routing\": {\"hits\": 0, \"hit_rate\": 0.5}}]}";
  g_autofree char *results = path_in (fixture, "results.json");
  g_autoptr (GError) error = NULL;
  g_autoptr (ReportResults) table = NULL;
  const ReportRow *row;

  g_assert_true (g_file_set_contents (results, json, -1, NULL));
  table = elk__results_load (results, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (elk__results_column (table, "routing"), <, 0);
  row = &g_array_index (table->rows, ReportRow, 2);
  g_assert_cmpfloat (elk__row_number (table, row, "routing_hits"), ==, 8);
  g_assert_cmpfloat (elk__row_number (table, row, "routing_hit_rate"), ==, 1);
  build (fixture, FALSE);
  for (guint d = 0; d < 2; d++)
    {
      /* A line per design (the legend's too) and a marker per value. */
      g_assert_cmpuint (count_paths (fixture, "hbm-per-token-frontend.batch",
                                     "stroke", elk__design_colors[d]),
                        ==, 1 + 1);
      g_assert_cmpuint (count_paths (fixture, "hbm-per-token-frontend.batch",
                                     "fill", elk__design_colors[d]),
                        ==, 2 + 1);
      g_assert_cmpuint (count_paths (fixture, "hit-rate-frontend.batch", "fill",
                                     elk__design_colors[d]),
                        ==, (d == 0 ? 2 : 1) + 1);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

#define ADD(path, func)                                                     \
  g_test_add (path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
  ADD ("/report/files", test_files);
  ADD ("/report/bars", test_bars);
  ADD ("/report/lines", test_lines);
  ADD ("/report/failed-rows", test_failed_rows);
  ADD ("/report/deterministic", test_deterministic);
  ADD ("/report/bad-column", test_bad_column);
  ADD ("/report/bad-inputs", test_bad_inputs);
  ADD ("/report/html", test_html);
  ADD ("/report/quickstart", test_quickstart);
  ADD ("/report/routing", test_routing);
#undef ADD
  g_test_add_func ("/report/parse-plot", test_parse_plot);
  return g_test_run ();
}
