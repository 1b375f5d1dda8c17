/* test-report-browser.c: report.html as a browser shows it.
 *
 * Headless Chromium renders a report (of synthetic results with a failed
 * row) to a PNG and dumps its DOM.  The screenshot must not be blank and
 * must show the colours of every figure; the DOM must hold every figure as
 * an SVG element, so a markup mistake that hid a figure would show.  The
 * test is skipped, saying why, when Chromium is not installed.
 */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include "elk-report-private.h"
#include "report-test-util.h"

static const SyntheticRow rows[] = {
  { "basic", 4000, 9e-3 },  { "static", 4000, 8e-3 },
  { "elk-full", 4000, 7e-3 }, { "basic", 8000, 6e-3 },
  { "static", 8000, NAN },  { "elk-full", 8000, 4e-3 },
  { "basic", 16000, 5e-3 }, { "static", 16000, 4e-3 },
  { "elk-full", 16000, 3e-3 },
};

static const char *const stems[] = {
  "latency", "breakdown", "utilisation", "sweep-chip.hbm-bw-gbps",
  "roofline",
};

static char *
find_chromium (void)
{
  for (const char *const *name = (const char *const[]){ "chromium",
                                                        "chromium-browser",
                                                        NULL };
       *name != NULL; name++)
    {
      char *path = g_find_program_in_path (*name);
      if (path != NULL)
        return path;
    }
  return NULL;
}

/* Runs Chromium headless on @url with @extra arguments; returns stdout.
 * Every network and background service is off, so the page can only show
 * what it carries. */
static char *
run_chromium (const char *chromium,
              const char *profile,
              const char *url,
              const char *const *extra)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autofree char *user_data = g_strdup_printf ("--user-data-dir=%s", profile);
  g_autoptr (GError) error = NULL;
  g_autofree char *err = NULL;
  char *out = NULL;
  int status = 0;

  for (const char *const *a
       = (const char *const[]){ chromium, "--headless", "--no-sandbox",
                                "--disable-gpu", "--disable-quic",
                                "--no-first-run",
                                "--disable-background-networking",
                                "--disable-component-update",
                                "--disable-sync", "--hide-scrollbars",
                                "--force-device-scale-factor=1", NULL };
       *a != NULL; a++)
    g_ptr_array_add (argv, (gpointer) *a);
  g_ptr_array_add (argv, user_data);
  for (guint i = 0; extra[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) extra[i]);
  g_ptr_array_add (argv, (gpointer) url);
  g_ptr_array_add (argv, NULL);

  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL,
                NULL, &out, &err, &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("chromium failed (status %d): %s", status, err);
  return out;
}

static guint
count (const char *haystack, const char *needle)
{
  return report_test_count (haystack, needle);
}

/* The number of pixels within a small distance of @rgb. */
static guint
count_color (cairo_surface_t *image, const guint8 rgb[3])
{
  int width = cairo_image_surface_get_width (image);
  int height = cairo_image_surface_get_height (image);
  int stride = cairo_image_surface_get_stride (image);
  const guint8 *data = cairo_image_surface_get_data (image);
  guint n = 0;

  for (int y = 0; y < height; y++)
    for (int x = 0; x < width; x++)
      {
        guint32 pixel = *(const guint32 *) (data + y * stride + 4 * x);
        int r = (pixel >> 16) & 0xff, g = (pixel >> 8) & 0xff,
            b = pixel & 0xff;
        if (abs (r - rgb[0]) <= 6 && abs (g - rgb[1]) <= 6
            && abs (b - rgb[2]) <= 6)
          n++;
      }
  return n;
}

static void
test_browser (void)
{
  g_autofree char *chromium = find_chromium ();
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = NULL;
  g_autofree char *profile = NULL;
  g_autofree char *experiment = NULL;
  g_autofree char *html_path = NULL;
  g_autofree char *url = NULL;
  g_autofree char *dom = NULL;
  g_autofree char *shot = NULL;
  g_autofree char *shot_arg = NULL;
  g_autofree char *stdout_text = NULL;
  cairo_surface_t *image;
  guint non_white = 0, total;
  int height = 0;

  if (chromium == NULL)
    {
      g_test_skip ("chromium is not installed (Debian package 'chromium'); "
                   "the report was not checked in a browser");
      return;
    }

  dir = g_dir_make_tmp ("elk-report-browser-XXXXXX", &error);
  g_assert_no_error (error);
  profile = g_build_filename (dir, "profile", NULL);
  g_mkdir (profile, 0700);
  experiment = report_test_write_results (dir, rows, G_N_ELEMENTS (rows));
  g_assert_true (elk_report_build (dir, experiment, NULL, &error));
  g_assert_no_error (error);
  html_path = g_build_filename (dir, "report.html", NULL);
  url = g_filename_to_uri (html_path, NULL, &error);
  g_assert_no_error (error);

  /* The DOM as parsed: every figure is an <svg> inside its <figure>. */
  dom = run_chromium (chromium, profile, url,
                      (const char *const[]){ "--dump-dom", NULL });
  g_assert_cmpuint (count (dom, "<figure class=\"elk-figure\""), ==,
                    G_N_ELEMENTS (stems));
  g_assert_cmpuint (count (dom, "<svg"), ==, G_N_ELEMENTS (stems));
  g_assert_cmpuint (count (dom, "<symbol"), >, 100);
  for (guint i = 0; i < G_N_ELEMENTS (stems); i++)
    {
      g_autofree char *needle = g_strdup_printf ("data-stem=\"%s\"", stems[i]);
      g_assert_nonnull (strstr (dom, needle));
    }

  /* A window tall enough for every figure of this report (the five
   * figures take about 4000 pixels), so that all of them are drawn. */
  height = 7000;
  shot = g_build_filename (dir, "screenshot.png", NULL);
  shot_arg = g_strdup_printf ("--screenshot=%s", shot);
  {
    g_autofree char *size = g_strdup_printf ("--window-size=1200,%d", height);
    stdout_text = run_chromium (chromium, profile, url,
                                (const char *const[]){ shot_arg, size, NULL });
  }
  image = cairo_image_surface_create_from_png (shot);
  g_assert_cmpint (cairo_surface_status (image), ==, CAIRO_STATUS_SUCCESS);
  total = cairo_image_surface_get_width (image)
          * cairo_image_surface_get_height (image);
  {
    static const guint8 white[3] = { 255, 255, 255 };
    non_white = total - count_color (image, white);
  }
  g_test_message ("screenshot %s: %u of %u pixels not white", shot, non_white,
                  total);
  g_assert_cmpuint (non_white, >, total / 100);

  /* The colours only the figures use are on screen: the bars and lines of
   * each design, the breakdown's parts, and the failed row's cross. */
  for (guint d = 0; d < 3; d++)
    g_assert_cmpuint (count_color (image, elk__design_colors[d]), >, 500);
  for (guint k = 0; k < 4; k++)
    g_assert_cmpuint (count_color (image, elk__breakdown_colors[k]), >, 100);
  g_assert_cmpuint (count_color (image, elk__failed_color), >, 20);
  cairo_surface_destroy (image);

  elk_test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/report/browser", test_browser);
  return g_test_run ();
}
