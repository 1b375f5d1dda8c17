/* elk-report-render.c: figures to SVG and PNG bytes.
 *
 * Figures are rendered into memory and written by the caller through a
 * temporary file and a rename, so that an interrupted report never leaves
 * a truncated image.  cairo names the definitions of an SVG document
 * (glyphs, clips, surfaces) with counters, some of them global to the
 * process; the ids are renumbered here in order of first appearance, so
 * that the same figure gives the same bytes however many were drawn
 * before it.
 */
#include "config.h"

#include <string.h>
#include <cairo-svg.h>

#include "elk-report-private.h"

static cairo_status_t
append_to_string (void *closure, const unsigned char *data,
                  unsigned int length)
{
  g_string_append_len (closure, (const char *) data, length);
  return CAIRO_STATUS_SUCCESS;
}

static cairo_status_t
append_to_bytes (void *closure, const unsigned char *data,
                 unsigned int length)
{
  g_byte_array_append (closure, data, length);
  return CAIRO_STATUS_SUCCESS;
}

static gboolean
check_status (cairo_status_t status, const ReportFigure *figure,
              const char *what, GError **error)
{
  if (status == CAIRO_STATUS_SUCCESS)
    return TRUE;
  g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_DRAW,
               "figure '%s': cairo failed to %s: %s", figure->stem, what,
               cairo_status_to_string (status));
  return FALSE;
}

static gboolean
draw_on (cairo_surface_t *surface, const ReportFigure *figure, double scale,
         GError **error)
{
  cairo_t *cr = cairo_create (surface);
  cairo_status_t status;

  cairo_scale (cr, scale, scale);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_paint (cr);
  figure->draw (figure, cr);
  status = cairo_status (cr);
  cairo_destroy (cr);
  return check_status (status, figure, "draw", error);
}

static gboolean
is_id_char (char c)
{
  return g_ascii_isalnum (c) || c == '-' || c == '_' || c == '.';
}

/* Renumbers every id="..." of @svg as "<prefix><n>" in order of first
 * appearance and rewrites the references to them ("#id" in href and
 * url()).  cairo's ids are plain words followed by digits, never
 * quoted otherwise, so a scan over the text is exact. */
static char *
renumber_ids (const char *svg, const char *prefix)
{
  g_autoptr (GHashTable) names
    = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  GString *out = g_string_sized_new (strlen (svg) + 1024);
  const char *p;

  /* First pass: the definitions, numbered in document order. */
  for (p = strstr (svg, " id=\""); p != NULL; p = strstr (p + 1, " id=\""))
    {
      const char *start = p + 5;
      const char *end = start;
      g_autofree char *name = NULL;

      while (is_id_char (*end))
        end++;
      name = g_strndup (start, end - start);
      if (!g_hash_table_contains (names, name))
        g_hash_table_insert (
          names, g_steal_pointer (&name),
          g_strdup_printf ("%s%u", prefix, g_hash_table_size (names) + 1));
    }

  /* Second pass: rewrite the definitions and the references. */
  for (p = svg; *p != '\0';)
    {
      gsize skip = 0;

      if (g_str_has_prefix (p, " id=\""))
        skip = 5;
      else if (g_str_has_prefix (p, "href=\"#"))
        skip = 7;
      else if (g_str_has_prefix (p, "url(#"))
        skip = 5;
      if (skip > 0)
        {
          const char *end = p + skip;
          g_autofree char *name = NULL;
          const char *renamed;

          while (is_id_char (*end))
            end++;
          name = g_strndup (p + skip, end - (p + skip));
          renamed = g_hash_table_lookup (names, name);
          g_string_append_len (out, p, skip);
          g_string_append (out, renamed != NULL ? renamed : name);
          p = end;
          continue;
        }
      g_string_append_c (out, *p++);
    }
  return g_string_free (out, FALSE);
}

GBytes *
elk__figure_render_svg (const ReportFigure *figure, GError **error)
{
  g_autoptr (GString) out = g_string_new (NULL);
  cairo_surface_t *surface;
  cairo_status_t status;
  char *renumbered;

  surface = cairo_svg_surface_create_for_stream (
    append_to_string, out, figure->width, figure->height);
  cairo_svg_surface_restrict_to_version (surface, CAIRO_SVG_VERSION_1_1);
  /* Pixels rather than points, so that the browser shows the figure at
   * the size it was laid out for. */
  cairo_svg_surface_set_document_unit (surface, CAIRO_SVG_UNIT_PX);
  if (!draw_on (surface, figure, 1, error))
    {
      cairo_surface_destroy (surface);
      return NULL;
    }
  cairo_surface_finish (surface);
  status = cairo_surface_status (surface);
  cairo_surface_destroy (surface);
  if (!check_status (status, figure, "write the SVG", error))
    return NULL;

  renumbered = renumber_ids (out->str, "d");
  return g_bytes_new_take (renumbered, strlen (renumbered));
}

GBytes *
elk__figure_render_png (const ReportFigure *figure, double scale,
                        GError **error)
{
  g_autoptr (GByteArray) out = g_byte_array_new ();
  cairo_surface_t *surface;
  cairo_status_t status;

  surface = cairo_image_surface_create (CAIRO_FORMAT_RGB24,
                                        (int) (figure->width * scale + 0.5),
                                        (int) (figure->height * scale + 0.5));
  if (!check_status (cairo_surface_status (surface), figure,
                     "create the image", error)
      || !draw_on (surface, figure, scale, error))
    {
      cairo_surface_destroy (surface);
      return NULL;
    }
  status = cairo_surface_write_to_png_stream (surface, append_to_bytes, out);
  cairo_surface_destroy (surface);
  if (!check_status (status, figure, "encode the PNG", error))
    return NULL;
  return g_byte_array_free_to_bytes (g_steal_pointer (&out));
}

char *
elk__svg_for_inline (GBytes *svg, const char *id_prefix)
{
  gsize size;
  const char *data = g_bytes_get_data (svg, &size);
  g_autofree char *text = g_strndup (data, size);
  const char *start = strstr (text, "<svg");

  return renumber_ids (start != NULL ? start : text, id_prefix);
}
