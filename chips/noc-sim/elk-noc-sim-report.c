/* elk-noc-sim-report.c: what the noc-sim engine reports about its links
 * after a run: the busiest links for tracing, and the per-link CSV and
 * SVG heat map. */
#include "config.h"

#include "elk-noc-sim-private.h"

/* Marks the @n busiest links of the last run for tracing in the next. */

void
elk__noc_sim_trace_busiest (NocSim *s, ElkTrace *trace, guint n)
{
  g_autofree guint32 *top = g_new (guint32, n);
  guint got = 0;

  for (guint i = 0; i < s->n_links; i++)
    s->links[i].track = -1;
  s->link_tracks = FALSE;
  for (guint i = 0; i < s->n_links; i++)
    {
      guint j;
      if (!s->links[i].present || s->ls[i].busy <= 0)
        continue;
      if (got < n)
        got++;
      else if (s->ls[i].busy <= s->ls[top[n - 1]].busy)
        continue;
      j = got - 1;
      while (j > 0 && s->ls[top[j - 1]].busy < s->ls[i].busy)
        {
          top[j] = top[j - 1];
          j--;
        }
      top[j] = i;
    }
  for (guint k = 0; k < got; k++)
    {
      char buf[64];
      s->link_tracks = TRUE;
      s->links[top[k]].track
          = (gint32) elk_trace_add_track (trace, "busiest links",
                                          elk__noc_sim_link_name (s, top[k],
                                                                  buf,
                                                                  sizeof buf));
    }
}

/* ---------------------------------------------------------------------- */
/* Per-link report: CSV for every link, SVG heat map for meshes and tori. */

static void
heat_colour (double u, char *buf, gsize len)
{
  /* White (idle) through yellow to red (saturated). */
  double x = CLAMP (u, 0, 1);
  guint r = 255, g = (guint) (255 * (1 - 0.85 * x)),
        b = (guint) (255 * (1 - x) * (1 - x));
  g_snprintf (buf, len, "#%02x%02x%02x", r, MIN (g, 255u), MIN (b, 255u));
}

gboolean
elk__noc_sim_write_link_report (NocSim *s,
                                const char *csv_path,
                                const char *svg_path,
                                GError **error)
{
  const NocConfig *c = &s->cfg;
  double latency = s->last_end;
  g_autoptr (GString) csv = g_string_new ("link,bytes,busy_s,utilisation\n");

  for (guint i = 0; i < s->n_links; i++)
    {
      char buf[64];
      if (!s->links[i].present)
        continue;
      g_string_append_printf (csv, "%s,%.0f,%.9g,%.6f\n",
                              elk__noc_sim_link_name (s, i, buf, sizeof buf),
                              s->ls[i].bytes, s->ls[i].busy,
                              latency > 0 ? s->ls[i].busy / latency : 0);
    }
  if (csv_path != NULL
      && !g_file_set_contents (csv_path, csv->str, (gssize) csv->len, error))
    return FALSE;

  if (svg_path != NULL
      && (c->topology == ELK_TOPOLOGY_MESH
          || c->topology == ELK_TOPOLOGY_TORUS))
    {
      g_autoptr (GString) svg = g_string_new (NULL);
      double cell = 14, pad = 20;
      double pw = c->cols * cell, ph = c->rows * cell;
      guint per_row = MIN (c->chips, 2u);
      double W = per_row * (pw + pad) + pad + 120;
      double Ht = ((c->chips + per_row - 1) / per_row) * (ph + pad + 14) + pad;

      g_string_append_printf (
          svg,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
          "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"10\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          W, Ht);
      for (guint chip = 0; chip < c->chips; chip++)
        {
          double ox = pad + (chip % per_row) * (pw + pad);
          double oy = pad + 14 + (chip / per_row) * (ph + pad + 14);
          g_string_append_printf (svg,
                                  "<text x=\"%.1f\" y=\"%.1f\">chip "
                                  "%u</text>\n",
                                  ox, oy - 4, chip);
          for (guint l = 0; l < s->per_chip; l++)
            {
              guint g = chip * s->per_chip + l;
              double x = ox + (l % c->cols) * cell + cell / 2;
              double y = oy + (l / c->cols) * cell + cell / 2;
              for (guint d = 0; d < 4; d++)
                {
                  const NocLink *lk = &s->links[elk__noc_mesh_link (g, d)];
                  const NocLinkState *lks = &s->ls[elk__noc_mesh_link (g, d)];
                  char col[16];
                  double dx = d == DIR_E ? 1 : d == DIR_W ? -1 : 0;
                  double dy = d == DIR_S ? 1 : d == DIR_N ? -1 : 0;
                  /* Each direction is drawn on its own side of the centre
                   * line, so both directions of a pair stay visible. */
                  double off = (d == DIR_E || d == DIR_S) ? 1.8 : -1.8;
                  if (!lk->present)
                    continue;
                  heat_colour (latency > 0 ? lks->busy / latency : 0, col,
                               sizeof col);
                  g_string_append_printf (
                      svg,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                      "stroke=\"%s\" stroke-width=\"3\"/>\n",
                      x + dy * off, y + dx * off,
                      x + dx * cell * 0.5 + dy * off,
                      y + dy * cell * 0.5 + dx * off, col);
                }
            }
          for (guint a = 0; a < s->hc * s->attach; a++)
            {
              guint r = s->attach_router[chip * s->hc * s->attach + a]
                        % s->per_chip;
              g_string_append_printf (svg,
                                      "<rect x=\"%.1f\" y=\"%.1f\" width=\"4\" "
                                      "height=\"4\" "
                                      "fill=\"#1f4e9c\"/>\n",
                                      ox + (r % c->cols) * cell + cell / 2 - 2,
                                      oy + (r / c->cols) * cell + cell / 2 - 2);
            }
        }
      for (guint k = 0; k <= 10; k++)
        {
          char col[16];
          heat_colour (k / 10.0, col, sizeof col);
          g_string_append_printf (svg,
                                  "<rect x=\"%.0f\" y=\"%.0f\" width=\"16\" "
                                  "height=\"12\" "
                                  "fill=\"%s\" stroke=\"#888\"/>"
                                  "<text x=\"%.0f\" y=\"%.0f\">%u%%</text>\n",
                                  W - 100, pad + 14 + k * 14.0, col, W - 80,
                                  pad + 24 + k * 14.0, k * 10);
        }
      g_string_append_printf (svg,
                              "<text x=\"%.0f\" y=\"%.0f\">link busy</text>\n"
                              "<text x=\"%.0f\" y=\"%.0f\">blue: HBM "
                              "attach</text>\n</svg>\n",
                              W - 100, pad + 6, W - 100, pad + 14 + 12 * 14.0);
      if (!g_file_set_contents (svg_path, svg->str, (gssize) svg->len, error))
        return FALSE;
    }
  return TRUE;
}
