/* report-test-util.c: see report-test-util.h. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "report-test-util.h"

static const char experiment_template[]
  = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<experiment format=\"1\" name=\"synthetic\">\n"
    "  <description>A synthetic sweep &lt;written by the test&gt; &amp; "
    "read back.</description>\n"
    "  <frontend name=\"llama\"/>\n"
    "  <chip name=\"analytic\"/>\n"
    "  <scheduler name=\"basic\" label=\"basic\"/>\n"
    "  <sweep>\n"
    "    <axis param=\"chip.hbm-bw-gbps\" values=\"%s\"/>\n"
    "  </sweep>\n"
    "</experiment>\n";

static void
append_number (GString *json, const char *name, double value)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  if (isnan (value))
    g_string_append_printf (json, ", \"%s\": null", name);
  else
    g_string_append_printf (json, ", \"%s\": %s", name,
                            g_ascii_formatd (buf, sizeof buf, "%.9g", value));
}

char *
report_test_write_results (const char *dir,
                           const SyntheticRow *rows,
                           guint n_rows)
{
  g_autoptr (GString) json = g_string_new (NULL);
  g_autoptr (GString) values = g_string_new (NULL);
  g_autofree char *experiment = NULL;
  g_autofree char *hash = NULL;
  g_autofree char *experiment_path = g_build_filename (dir, "experiment.xml",
                                                       NULL);
  g_autofree char *results_path = g_build_filename (dir, "results.json",
                                                    NULL);
  g_autoptr (GError) error = NULL;
  int point = -1;
  double last_hbm = NAN;

  for (guint i = 0; i < n_rows; i++)
    if (i == 0 || rows[i].hbm_gbps != rows[i - 1].hbm_gbps)
      g_string_append_printf (values, "%s%g", values->len > 0 ? " " : "",
                              rows[i].hbm_gbps);
  experiment = g_strdup_printf (experiment_template, values->str);
  hash = g_compute_checksum_for_string (G_CHECKSUM_SHA256, experiment, -1);
  g_file_set_contents (experiment_path, experiment, -1, &error);
  g_assert_no_error (error);

  g_string_append_printf (json,
                          "{\n  \"elk_version\": \"0.1.0\",\n"
                          "  \"experiment\": \"synthetic\",\n"
                          "  \"experiment_sha256\": \"%s\",\n"
                          "  \"plugins\": [\"analytic 0.1 (abi 1)\", "
                          "\"basic 0.1 (abi 1)\"],\n  \"rows\": [",
                          hash);
  for (guint i = 0; i < n_rows; i++)
    {
      const SyntheticRow *row = &rows[i];
      gboolean ok = !isnan (row->latency_s);
      double bound = 1e-3 * 8000 / row->hbm_gbps;
      double lat = row->latency_s;

      if (i == 0 || row->hbm_gbps != last_hbm)
        point++;
      last_hbm = row->hbm_gbps;
      g_string_append_printf (json,
                              "%s\n    {\"experiment\": \"synthetic\", "
                              "\"point\": %d, \"model\": \"m\", "
                              "\"chip\": \"analytic\"",
                              i > 0 ? "," : "", point);
      append_number (json, "hbm_bw", row->hbm_gbps * 1e9);
      append_number (json, "latency_s", lat);
      append_number (json, "ideal_s", bound * 1.2);
      append_number (json, "bound_s", bound);
      append_number (json, "hbm_util", ok ? 0.5 : NAN);
      append_number (json, "noc_util", ok ? 0.25 : NAN);
      append_number (json, "achieved_flops", ok ? 1e14 : NAN);
      append_number (json, "preload_only_s", lat * 0.1);
      append_number (json, "execute_only_s", lat * 0.2);
      append_number (json, "overlap_s", lat * 0.6);
      append_number (json, "stall_s", lat * 0.1);
      g_string_append_printf (json,
                              ", \"label\": \"%s\", \"status\": \"%s\", "
                              "\"error\": %s",
                              row->label, ok ? "ok" : "failed",
                              ok ? "null"
                                 : "\"chip 'analytic': synthetic failure\"");
      append_number (json, "chip.hbm-bw-gbps", row->hbm_gbps);
      g_string_append (json, "}");
    }
  g_string_append (json, "\n  ]\n}\n");
  g_file_set_contents (results_path, json->str, -1, &error);
  g_assert_no_error (error);
  return g_steal_pointer (&experiment_path);
}

/* Reads "rgb(a%,b%,c%)" after "@property:" in @style into 0-255 values. */
static gboolean
style_color (const char *style, const char *property, guint8 rgb[3])
{
  g_autofree char *key = g_strdup_printf ("%s:rgb(", property);
  const char *p = style;

  /* "fill:" also matches inside "fill-rule:"; ask for the colour form. */
  while ((p = strstr (p, key)) != NULL)
    {
      if (p == style || p[-1] == ';' || p[-1] == ' ')
        break;
      p++;
    }
  if (p == NULL)
    return FALSE;
  p += strlen (key);
  for (int k = 0; k < 3; k++)
    {
      char *end;
      double percent = g_ascii_strtod (p, &end);
      if (*end != '%')
        return FALSE;
      rgb[k] = (guint8) floor (percent / 100.0 * 255.0 + 0.5);
      p = end + 2; /* past "%," or "%)" */
    }
  return TRUE;
}

static guint
count_in (xmlNode *node, const char *property, const guint8 rgb[3])
{
  guint n = 0;

  for (; node != NULL; node = node->next)
    {
      if (node->type == XML_ELEMENT_NODE
          && xmlStrEqual (node->name, BAD_CAST "path"))
        {
          xmlChar *style = xmlGetProp (node, BAD_CAST "style");
          guint8 got[3];
          if (style != NULL && style_color ((const char *) style, property, got)
              && memcmp (got, rgb, 3) == 0)
            n++;
          xmlFree (style);
        }
      /* Glyph outlines live in <defs>; they are text, not marks. */
      if (!xmlStrEqual (node->name, BAD_CAST "defs"))
        n += count_in (node->children, property, rgb);
    }
  return n;
}

guint
report_test_count_paths (const char *svg_path,
                         const char *property,
                         const guint8 rgb[3])
{
  xmlDoc *doc = xmlReadFile (svg_path, NULL, XML_PARSE_NONET);
  guint n;

  g_assert_nonnull (doc);
  g_assert_cmpstr ((const char *) xmlDocGetRootElement (doc)->name, ==,
                   "svg");
  n = count_in (xmlDocGetRootElement (doc), property, rgb);
  xmlFreeDoc (doc);
  return n;
}

guint
report_test_count (const char *haystack, const char *needle)
{
  guint n = 0;
  for (const char *p = strstr (haystack, needle); p != NULL;
       p = strstr (p + strlen (needle), needle))
    n++;
  return n;
}
