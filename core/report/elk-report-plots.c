/* elk-report-plots.c: which figures a results table gets, and drawing them.
 *
 * Every figure is drawn by one function from plain data copied out of the
 * results table, in user units of one pixel, so that the same code draws
 * the SVG and the PNG.  Text goes through cairo's toy font API with
 * hinting off, so that measuring a label (to size a figure) and drawing it
 * give the same width on every surface.
 *
 * A cell that is empty (a failed row's latency, say) is never drawn as a
 * value: a failed row gets a red cross and the word "failed" where its bar
 * or point would be, and a missing value gets nothing.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "elk-report-private.h"

/* Okabe and Ito's palette, which stays distinguishable under the common
 * colour-vision deficiencies.  Black comes last, after the colours. */
const guint8 elk__design_colors[ELK_REPORT_N_DESIGN_COLORS][3] = {
  { 0x00, 0x72, 0xb2 }, { 0xe6, 0x9f, 0x00 }, { 0x00, 0x9e, 0x73 },
  { 0xcc, 0x79, 0xa7 }, { 0x56, 0xb4, 0xe9 }, { 0xd5, 0x5e, 0x00 },
  { 0xf0, 0xe4, 0x42 }, { 0x33, 0x33, 0x33 },
};
const guint8 elk__breakdown_colors[4][3] = {
  { 0xe6, 0x9f, 0x00 }, /* preload only: HBM busy, cores idle */
  { 0x00, 0x72, 0xb2 }, /* execute only */
  { 0x00, 0x9e, 0x73 }, /* overlapped */
  { 0xd5, 0x5e, 0x00 }, /* stalled on the interconnect */
};
const guint8 elk__failed_color[3] = { 0xc0, 0x00, 0x20 };
const char *const elk__breakdown_columns[4] = {
  "preload_only_s", "execute_only_s", "overlap_s", "stall_s",
};
static const char *const breakdown_names[4] = {
  "preload only", "execute only", "overlapped", "interconnect stall",
};
/* The execution-time components, in elk__time_components order. */
const guint8 elk__component_colors[ELK_REPORT_N_COMPONENTS][3] = {
  { 0x00, 0x72, 0xb2 }, /* compute */
  { 0x56, 0xb4, 0xe9 }, /* shift (rotation) */
  { 0x00, 0x9e, 0x73 }, /* output shuffle and reduction */
  { 0xcc, 0x79, 0xa7 }, /* re-layout */
  { 0xf0, 0xe4, 0x42 }, /* sync */
  { 0xd5, 0x5e, 0x00 }, /* contention stall */
  { 0xe6, 0x9f, 0x00 }, /* waiting for a preload */
};

#define FONT_FAMILY "DejaVu Sans"
#define MARGIN 16.0
#define TITLE_SIZE 15.0
#define LABEL_SIZE 11.0
#define TICK_SIZE 10.0
#define LEFT_AXIS 72.0
#define PANEL_TITLE_H 20.0
#define BAR_PLOT_H 220.0
#define LINE_PLOT_W 300.0
#define LINE_PLOT_H 190.0
#define LEGEND_ROW_H 18.0
#define LABEL_ANGLE (-G_PI / 5.0)

/* Drawing helpers ------------------------------------------------------- */

static void
set_font (cairo_t *cr, double size, gboolean bold)
{
  cairo_font_options_t *options = cairo_font_options_create ();

  cairo_font_options_set_hint_metrics (options, CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_hint_style (options, CAIRO_HINT_STYLE_NONE);
  cairo_font_options_set_antialias (options, CAIRO_ANTIALIAS_GRAY);
  cairo_set_font_options (cr, options);
  cairo_font_options_destroy (options);
  cairo_select_font_face (cr, FONT_FAMILY, CAIRO_FONT_SLANT_NORMAL,
                          bold ? CAIRO_FONT_WEIGHT_BOLD
                               : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size (cr, size);
}

/* A context on a one-pixel image, for measuring text before a figure's
 * size is known. */
static cairo_t *
measure_context (void)
{
  cairo_surface_t *surface
    = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t *cr = cairo_create (surface);
  cairo_surface_destroy (surface);
  return cr;
}

static double
text_width (cairo_t *cr, const char *text)
{
  cairo_text_extents_t extents;
  cairo_text_extents (cr, text, &extents);
  return extents.x_advance;
}

static double
measure (const char *text, double size, gboolean bold)
{
  cairo_t *cr = measure_context ();
  double width;

  set_font (cr, size, bold);
  width = text_width (cr, text);
  cairo_destroy (cr);
  return width;
}

/* Draws @text with its anchor at (@x, @y): @halign 0 puts the anchor at
 * the left end, 1 at the right end; @valign 0.5 centres the text's
 * ascent on the anchor.  @angle turns the text around the anchor. */
static void
draw_text (cairo_t *cr,
           double x,
           double y,
           const char *text,
           double halign,
           double valign,
           double angle)
{
  cairo_font_extents_t font;
  double width = text_width (cr, text);

  cairo_font_extents (cr, &font);
  cairo_save (cr);
  cairo_translate (cr, x, y);
  cairo_rotate (cr, angle);
  cairo_move_to (cr, -halign * width, font.ascent * valign);
  cairo_show_text (cr, text);
  cairo_restore (cr);
}

static void
set_rgb (cairo_t *cr, const guint8 rgb[3])
{
  cairo_set_source_rgb (cr, rgb[0] / 255.0, rgb[1] / 255.0, rgb[2] / 255.0);
}

static void
set_gray (cairo_t *cr, double level)
{
  cairo_set_source_rgb (cr, level, level, level);
}

static const guint8 *
design_color (guint design)
{
  return elk__design_colors[design % ELK_REPORT_N_DESIGN_COLORS];
}

/* A red cross centred on (@x, @y): where a failed row's value would be. */
static void
draw_failed_mark (cairo_t *cr, double x, double y, double size)
{
  cairo_save (cr);
  set_rgb (cr, elk__failed_color);
  cairo_set_line_width (cr, 1.6);
  cairo_move_to (cr, x - size / 2, y - size / 2);
  cairo_line_to (cr, x + size / 2, y + size / 2);
  cairo_move_to (cr, x - size / 2, y + size / 2);
  cairo_line_to (cr, x + size / 2, y - size / 2);
  cairo_stroke (cr);
  cairo_restore (cr);
}

static void
draw_marker (cairo_t *cr, double x, double y, const guint8 rgb[3])
{
  set_rgb (cr, rgb);
  cairo_arc (cr, x, y, 3.2, 0, 2 * G_PI);
  cairo_fill (cr);
}

/* Axis scales ------------------------------------------------------------ */

static double
nice_step (double span, int target)
{
  double raw = span / target;
  double magnitude = pow (10, floor (log10 (raw)));
  double r = raw / magnitude;

  if (r <= 1)
    return magnitude;
  if (r <= 2)
    return 2 * magnitude;
  if (r <= 5)
    return 5 * magnitude;
  return 10 * magnitude;
}

typedef struct
{
  double min, max, step;
} Scale;

/* A scale from zero to a round number at or above @max. */
static Scale
zero_scale (double max)
{
  Scale scale = { 0, 1, 0.2 };

  if (!(max > 0) || !isfinite (max))
    return scale;
  scale.step = nice_step (max, 5);
  scale.max = ceil (max / scale.step - 1e-9) * scale.step;
  return scale;
}

static char *
format_tick (double value)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  if (fabs (value) < 1e-12)
    value = 0;
  g_ascii_formatd (buf, sizeof buf, "%.6g", value);
  return g_strdup (buf);
}

/* A bar's value: three significant digits are what a reader compares. */
static char *
format_value (double value)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  g_ascii_formatd (buf, sizeof buf, fabs (value) >= 1000 ? "%.0f" : "%.3g",
                   value);
  return g_strdup (buf);
}

/* Seconds are shown in s, ms or µs, whichever keeps the largest value of
 * the figure between 1 and 1000. */
static void
time_unit (double max_s, double *factor, const char **unit)
{
  if (max_s >= 1 || !(max_s > 0))
    *factor = 1, *unit = "s";
  else if (max_s >= 1e-3)
    *factor = 1e3, *unit = "ms";
  else
    *factor = 1e6, *unit = "µs";
}

/* The label of a time axis whose largest value is @max_s seconds,
 * "@what (<unit>)", with the factor from seconds into that unit. */
static char *
time_axis_label (double max_s, const char *what, double *factor)
{
  const char *unit;

  time_unit (max_s, factor, &unit);
  return g_strdup_printf ("%s (%s)", what, unit);
}

/* Draws the frame, horizontal grid and y ticks of a plot area. */
static void
draw_y_axis (cairo_t *cr,
             double x,
             double y,
             double w,
             double h,
             Scale scale,
             const char *label)
{
  set_font (cr, TICK_SIZE, FALSE);
  cairo_set_line_width (cr, 0.6);
  for (int i = 0; scale.min + i * scale.step <= scale.max + scale.step * 1e-6;
       i++)
    {
      double value = scale.min + i * scale.step;
      double ty = y + h - (value - scale.min) / (scale.max - scale.min) * h;
      g_autofree char *text = format_tick (value);

      set_gray (cr, 0.88);
      cairo_move_to (cr, x, ty);
      cairo_line_to (cr, x + w, ty);
      cairo_stroke (cr);
      set_gray (cr, 0.2);
      draw_text (cr, x - 5, ty, text, 1, 0.35, 0);
    }
  set_gray (cr, 0.2);
  cairo_set_line_width (cr, 1);
  cairo_move_to (cr, x, y);
  cairo_line_to (cr, x, y + h);
  cairo_line_to (cr, x + w, y + h);
  cairo_stroke (cr);
  set_font (cr, LABEL_SIZE, FALSE);
  draw_text (cr, x - LEFT_AXIS + 14, y + h / 2, label, 0.5, 0.5, -G_PI / 2);
}

/* Legends ---------------------------------------------------------------- */

typedef enum
{
  SWATCH_BOX,
  SWATCH_LINE,
  SWATCH_MARKER,
  SWATCH_HOLLOW,
  SWATCH_FAILED,
} SwatchKind;

typedef struct
{
  char *text;
  guint8 rgb[3];
  SwatchKind kind;
} LegendEntry;

static void
legend_entry_clear (gpointer data)
{
  g_free (((LegendEntry *) data)->text);
}

static GArray *
legend_new (void)
{
  GArray *legend = g_array_new (FALSE, TRUE, sizeof (LegendEntry));
  g_array_set_clear_func (legend, legend_entry_clear);
  return legend;
}

static void
legend_add (GArray *legend,
            const char *text,
            const guint8 rgb[3],
            SwatchKind kind)
{
  LegendEntry entry = { g_strdup (text), { rgb[0], rgb[1], rgb[2] }, kind };
  g_array_append_val (legend, entry);
}

static double
legend_entry_width (const LegendEntry *entry)
{
  return 22 + measure (entry->text, LABEL_SIZE, FALSE) + 16;
}

/* The height the legend takes when wrapped into @width. */
static double
legend_height (GArray *legend, double width)
{
  double x = 0;
  guint rows = legend->len > 0 ? 1 : 0;

  for (guint i = 0; i < legend->len; i++)
    {
      double w = legend_entry_width (&g_array_index (legend, LegendEntry, i));
      if (x > 0 && x + w > width)
        rows++, x = 0;
      x += w;
    }
  return rows * LEGEND_ROW_H;
}

static void
draw_legend (cairo_t *cr, GArray *legend, double left, double top,
             double width)
{
  double x = 0, y = top;

  set_font (cr, LABEL_SIZE, FALSE);
  for (guint i = 0; i < legend->len; i++)
    {
      const LegendEntry *entry = &g_array_index (legend, LegendEntry, i);
      double w = legend_entry_width (entry);
      double cy = y + LEGEND_ROW_H / 2;
      double sx = left + x;

      if (x > 0 && x + w > width)
        {
          x = 0, y += LEGEND_ROW_H;
          cy = y + LEGEND_ROW_H / 2;
          sx = left;
        }
      switch (entry->kind)
        {
        case SWATCH_BOX:
          set_rgb (cr, entry->rgb);
          cairo_rectangle (cr, sx, cy - 5, 14, 10);
          cairo_fill (cr);
          break;
        case SWATCH_LINE:
          set_rgb (cr, entry->rgb);
          cairo_set_line_width (cr, 2);
          cairo_move_to (cr, sx, cy);
          cairo_line_to (cr, sx + 16, cy);
          cairo_stroke (cr);
          draw_marker (cr, sx + 8, cy, entry->rgb);
          break;
        case SWATCH_MARKER:
          draw_marker (cr, sx + 7, cy, entry->rgb);
          break;
        case SWATCH_HOLLOW:
          set_rgb (cr, entry->rgb);
          cairo_set_line_width (cr, 1.2);
          cairo_rectangle (cr, sx + 3, cy - 4, 8, 8);
          cairo_stroke (cr);
          break;
        case SWATCH_FAILED:
          draw_failed_mark (cr, sx + 7, cy, 8);
          break;
        }
      set_gray (cr, 0.1);
      draw_text (cr, sx + 22, cy, entry->text, 0, 0.35, 0);
      x += w;
    }
}

/* A figure's title, and under it @legend, across the figure. */
static void
draw_title_and_legend (cairo_t *cr, const ReportFigure *figure, GArray *legend)
{
  set_gray (cr, 0.05);
  set_font (cr, TITLE_SIZE, TRUE);
  draw_text (cr, MARGIN, MARGIN + 4, figure->title, 0, 0.5, 0);
  draw_legend (cr, legend, MARGIN, MARGIN + 24, figure->width - 2 * MARGIN);
}

/* Bar figures ------------------------------------------------------------ */

typedef enum
{
  CELL_ABSENT,
  CELL_VALUE,
  CELL_FAILED,
} CellState;

typedef struct
{
  char *title;
  char *unit;
  double scale;       /* multiplies the values for display */
  guint n_stack;      /* 1, or the number of stacked components */
  double *values;     /* [(group * n_series + series) * n_stack + k] */
  CellState *states;  /* [group * n_series + series] */
} BarPanel;

typedef struct
{
  GPtrArray *groups;  /* char *: configuration labels */
  GPtrArray *series;  /* char *: designs */
  GPtrArray *panels;  /* BarPanel * */
  char *group_axis;   /* what the group labels are, or NULL */
  gboolean stacked;
  const guint8 (*stack_colors)[3]; /* one per stacked component */
  GArray *legend;
  double bar_w, group_gap;
  double label_h;     /* space under a panel for the labels */
  double series_label_h;
  gboolean rotate_groups;
  double left;        /* the left edge of the y axis labels */
  gboolean value_labels; /* write each bar's value above it */
  guint n_failed;
} BarFigure;

static void
bar_panel_free (gpointer data)
{
  BarPanel *panel = data;
  g_free (panel->title);
  g_free (panel->unit);
  g_free (panel->values);
  g_free (panel->states);
  g_free (panel);
}

static void
bar_figure_free (gpointer data)
{
  BarFigure *bars = data;
  g_ptr_array_unref (bars->groups);
  g_ptr_array_unref (bars->series);
  g_ptr_array_unref (bars->panels);
  g_array_unref (bars->legend);
  g_free (bars->group_axis);
  g_free (bars);
}

static double
bar_group_width (const BarFigure *bars)
{
  return bars->series->len * bars->bar_w + bars->group_gap;
}

static double
bar_top (const BarFigure *bars, double width)
{
  return MARGIN + 24 + legend_height (bars->legend, width - 2 * MARGIN) + 6;
}

static double
bar_panel_height (const BarFigure *bars)
{
  return PANEL_TITLE_H + BAR_PLOT_H + bars->series_label_h + bars->label_h
         + 14;
}

static void
draw_bar_figure (const ReportFigure *figure, cairo_t *cr)
{
  const BarFigure *bars = figure->data;
  double plot_x = bars->left + LEFT_AXIS;
  double plot_w = bars->groups->len * bar_group_width (bars);
  double y = bar_top (bars, figure->width);

  draw_title_and_legend (cr, figure, bars->legend);

  for (guint p = 0; p < bars->panels->len; p++)
    {
      const BarPanel *panel = bars->panels->pdata[p];
      double max = 0;
      Scale scale;
      double plot_y = y + PANEL_TITLE_H;
      g_autofree char *axis_label = NULL;

      for (guint g = 0; g < bars->groups->len; g++)
        for (guint s = 0; s < bars->series->len; s++)
          {
            guint cell = g * bars->series->len + s;
            double total = 0;
            if (panel->states[cell] != CELL_VALUE)
              continue;
            for (guint k = 0; k < panel->n_stack; k++)
              total += panel->values[cell * panel->n_stack + k];
            max = MAX (max, total * panel->scale);
          }
      /* Room above the tallest bar for its value. */
      scale = zero_scale (bars->value_labels ? max * 1.15 : max);

      set_gray (cr, 0.1);
      set_font (cr, LABEL_SIZE + 1, TRUE);
      draw_text (cr, plot_x, y + 6, panel->title, 0, 0.5, 0);
      axis_label = g_strdup (panel->unit);
      draw_y_axis (cr, plot_x, plot_y, plot_w, BAR_PLOT_H, scale,
                   axis_label);

      for (guint g = 0; g < bars->groups->len; g++)
        {
          double gx = plot_x + g * bar_group_width (bars)
                      + bars->group_gap / 2;
          for (guint s = 0; s < bars->series->len; s++)
            {
              guint cell = g * bars->series->len + s;
              double bx = gx + s * bars->bar_w;
              double base = plot_y + BAR_PLOT_H;

              if (panel->states[cell] == CELL_FAILED)
                {
                  draw_failed_mark (cr, bx + bars->bar_w / 2, base - 7,
                                    MIN (bars->bar_w - 2, 9));
                  set_rgb (cr, elk__failed_color);
                  set_font (cr, 8, FALSE);
                  draw_text (cr, bx + bars->bar_w / 2, base - 16, "failed",
                             0, 0.5, -G_PI / 2);
                }
              else if (panel->states[cell] == CELL_VALUE)
                for (guint k = 0; k < panel->n_stack; k++)
                  {
                    double v = panel->values[cell * panel->n_stack + k]
                               * panel->scale;
                    double h = v / scale.max * BAR_PLOT_H;
                    if (!(h > 0))
                      continue;
                    set_rgb (cr, bars->stacked ? bars->stack_colors[k]
                                               : design_color (s));
                    cairo_rectangle (cr, bx + 0.5, base - h,
                                     bars->bar_w - 1, h);
                    cairo_fill (cr);
                    base -= h;
                  }
              if (panel->states[cell] == CELL_VALUE && bars->value_labels)
                {
                  g_autofree char *text = format_value (
                    panel->values[cell * panel->n_stack] * panel->scale);
                  set_gray (cr, 0.25);
                  set_font (cr, 8.5, FALSE);
                  if (text_width (cr, text) + 2 <= bars->bar_w)
                    draw_text (cr, bx + bars->bar_w / 2, base - 3, text, 0.5,
                               0, 0);
                  else
                    draw_text (cr, bx + bars->bar_w / 2, base - 3, text, 0,
                               0.35, -G_PI / 2);
                }

              if (bars->stacked)
                {
                  set_gray (cr, 0.2);
                  set_font (cr, TICK_SIZE, FALSE);
                  draw_text (cr, bx + bars->bar_w / 2,
                             plot_y + BAR_PLOT_H + 4,
                             bars->series->pdata[s], 1, 0.35, -G_PI / 2);
                }
            }

          set_gray (cr, 0.15);
          set_font (cr, TICK_SIZE, FALSE);
          if (bars->rotate_groups)
            draw_text (cr, gx + bars->series->len * bars->bar_w / 2,
                       plot_y + BAR_PLOT_H + bars->series_label_h + 6,
                       bars->groups->pdata[g], 1, 0.7, LABEL_ANGLE);
          else
            draw_text (cr, gx + bars->series->len * bars->bar_w / 2,
                       plot_y + BAR_PLOT_H + bars->series_label_h + 6,
                       bars->groups->pdata[g], 0.5, 1, 0);
        }
      y += bar_panel_height (bars);
    }

  if (bars->group_axis != NULL)
    {
      set_gray (cr, 0.3);
      set_font (cr, TICK_SIZE, FALSE);
      draw_text (cr, MARGIN, y + 4, bars->group_axis, 0, 0.5, 0);
    }
}

static BarPanel *
bar_panel_new (const BarFigure *bars,
               const char *title,
               const char *unit,
               double scale,
               guint n_stack)
{
  BarPanel *panel = g_new0 (BarPanel, 1);
  guint n_cells = bars->groups->len * bars->series->len;

  panel->title = g_strdup (title);
  panel->unit = g_strdup (unit);
  panel->scale = scale;
  panel->n_stack = n_stack;
  panel->values = g_new0 (double, n_cells * n_stack);
  panel->states = g_new0 (CellState, n_cells);
  return panel;
}

/* Fills @panel from the rows: @columns (n_stack of them) of each row go to
 * the cell of its configuration and design.  A row that ran but lacks a
 * value leaves its cell absent. */
static void
bar_panel_fill (BarPanel *panel,
                const BarFigure *bars,
                const ReportResults *results,
                const char *const *columns)
{
  for (guint i = 0; i < results->rows->len; i++)
    {
      const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      guint cell = row->config * bars->series->len + row->design;
      gboolean complete = TRUE;

      if (!row->ok)
        {
          panel->states[cell] = CELL_FAILED;
          continue;
        }
      for (guint k = 0; k < panel->n_stack; k++)
        {
          double v = elk__row_number (results, row, columns[k]);
          panel->values[cell * panel->n_stack + k] = v;
          if (isnan (v))
            complete = FALSE;
        }
      panel->states[cell] = complete ? CELL_VALUE : CELL_ABSENT;
    }
}

static double
column_max (const ReportResults *results, const char *column)
{
  double max = 0;
  for (guint i = 0; i < results->rows->len; i++)
    {
      const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      double v = elk__row_number (results, row, column);
      if (row->ok && v > max)
        max = v;
    }
  return max;
}

static gboolean
column_has_values (const ReportResults *results, const char *column)
{
  for (guint i = 0; i < results->rows->len; i++)
    {
      const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      if (row->ok && !isnan (elk__row_number (results, row, column)))
        return TRUE;
    }
  return FALSE;
}

static char *
axes_caption (const ReportResults *results)
{
  GString *text;

  if (results->axes->len == 0)
    return NULL;
  text = g_string_new ("groups: ");
  for (guint a = 0; a < results->axes->len; a++)
    g_string_append_printf (text, "%s%s", a > 0 ? " / " : "",
                            (const char *) results->axes->pdata[a]);
  return g_string_free (text, FALSE);
}

/* A bar figure with a group of bars per configuration and a bar per
 * entry of @series in each group. */
static BarFigure *
bar_figure_new_series (const ReportResults *results,
                       gboolean stacked,
                       GPtrArray *series)
{
  BarFigure *bars = g_new0 (BarFigure, 1);
  double widest = 0, widest_series = 0;

  bars->groups = g_ptr_array_new_with_free_func (g_free);
  for (guint c = 0; c < results->configs->len; c++)
    g_ptr_array_add (bars->groups, g_strdup (results->configs->pdata[c]));
  bars->series = g_ptr_array_new_with_free_func (g_free);
  for (guint d = 0; d < series->len; d++)
    g_ptr_array_add (bars->series, g_strdup (series->pdata[d]));
  bars->panels = g_ptr_array_new_with_free_func (bar_panel_free);
  bars->legend = legend_new ();
  bars->stacked = stacked;
  bars->stack_colors = elk__breakdown_colors;
  bars->group_axis = axes_caption (results);
  bars->n_failed = results->n_failed;

  for (guint d = 0; d < bars->series->len; d++)
    widest_series = MAX (widest_series,
                         measure (bars->series->pdata[d], TICK_SIZE, FALSE));
  /* Stacked bars are told apart by the design name under each, so they
   * must be wide enough for a line of text. */
  bars->bar_w = stacked ? 18 : (bars->series->len <= 3 ? 22 : 14);
  bars->group_gap = 18;
  /* Few bars get wider ones, up to a limit, rather than a thin plot. */
  if (bars->groups->len > 0 && bars->series->len > 0
      && bars->groups->len * bar_group_width (bars) < 320)
    bars->bar_w = MIN (44, floor ((320.0 / bars->groups->len
                                   - bars->group_gap)
                                  / bars->series->len));
  bars->value_labels = !stacked
                       && bars->groups->len * bars->series->len <= 40;
  bars->series_label_h = stacked ? widest_series + 8 : 0;

  for (guint g = 0; g < bars->groups->len; g++)
    widest = MAX (widest, measure (bars->groups->pdata[g], TICK_SIZE, FALSE));
  bars->rotate_groups = widest > bar_group_width (bars) - 4;
  bars->label_h = bars->rotate_groups ? widest * sin (-LABEL_ANGLE) + 16
                                      : TICK_SIZE + 10;
  return bars;
}

/* A bar per design in each configuration's group. */
static BarFigure *
bar_figure_new (const ReportResults *results, gboolean stacked)
{
  return bar_figure_new_series (results, stacked, results->designs);
}

static ReportFigure *
bar_figure_wrap (BarFigure *bars,
                 const char *stem,
                 const char *title,
                 const char *caption)
{
  ReportFigure *figure = g_new0 (ReportFigure, 1);
  double plot_w = bars->groups->len * bar_group_width (bars);
  double label_overhang = 0;

  if (bars->n_failed > 0)
    legend_add (bars->legend, "failed row (no value; see the table)",
                elk__failed_color, SWATCH_FAILED);
  /* A rotated label of the first group may reach left of the y axis
   * labels: the plot moves right by that much. */
  if (bars->rotate_groups && bars->groups->len > 0)
    label_overhang = MAX (0, measure (bars->groups->pdata[0], TICK_SIZE,
                                      FALSE) * cos (LABEL_ANGLE)
                               - LEFT_AXIS - bar_group_width (bars) / 2);
  bars->left = MARGIN + ceil (label_overhang);
  figure->stem = g_strdup (stem);
  figure->title = g_strdup (title);
  figure->caption = g_strdup (caption);
  figure->width = ceil (MAX (bars->left + LEFT_AXIS + plot_w + MARGIN,
                             MAX (480, measure (title, TITLE_SIZE, TRUE)
                                         + 2 * MARGIN)));
  figure->height = ceil (bar_top (bars, figure->width)
                         + bars->panels->len * bar_panel_height (bars)
                         + (bars->group_axis ? 16 : 0) + MARGIN);
  figure->draw = draw_bar_figure;
  figure->data = bars;
  figure->free_data = bar_figure_free;
  return figure;
}

static void
add_design_legend (GArray *legend,
                   const ReportResults *results,
                   SwatchKind kind)
{
  for (guint d = 0; d < results->designs->len; d++)
    legend_add (legend, results->designs->pdata[d], design_color (d), kind);
}

static ReportFigure *
latency_figure (const ReportResults *results)
{
  BarFigure *bars = bar_figure_new (results, FALSE);
  double factor;
  g_autofree char *axis
      = time_axis_label (column_max (results, "latency_s"), "latency", &factor);
  BarPanel *panel;

  add_design_legend (bars->legend, results, SWATCH_BOX);
  panel = bar_panel_new (bars, "End-to-end latency per design", axis,
                         factor, 1);
  bar_panel_fill (panel, bars, results,
                  (const char *const[]){ "latency_s" });
  g_ptr_array_add (bars->panels, panel);
  return bar_figure_wrap (
    bars, "latency", "Latency per design and configuration",
    "The backend's end-to-end latency (latency_s) of every design (label) "
    "at every configuration (point).");
}

static ReportFigure *
breakdown_figure (const ReportResults *results)
{
  BarFigure *bars = bar_figure_new (results, TRUE);
  double factor;
  g_autofree char *axis
      = time_axis_label (column_max (results, "latency_s"), "time", &factor);
  BarPanel *panel;

  for (guint k = 0; k < 4; k++)
    legend_add (bars->legend, breakdown_names[k], elk__breakdown_colors[k],
                SWATCH_BOX);
  panel = bar_panel_new (bars, "Where the time goes", axis, factor, 4);
  bar_panel_fill (panel, bars, results, elk__breakdown_columns);
  g_ptr_array_add (bars->panels, panel);
  return bar_figure_wrap (
    bars, "breakdown", "Latency breakdown (as in the paper's Fig 18a)",
    "Each bar splits latency_s into preload only (HBM busy, cores idle), "
    "execute only, preload overlapped with execution, and stalls on a busy "
    "interconnect (preload_only_s, execute_only_s, overlap_s, stall_s).");
}

/* Whether some row that ran carries an execution-time breakdown. */
static gboolean
has_op_breakdown (const ReportResults *results)
{
  for (guint i = 0; i < results->rows->len; i++)
    {
      const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      if (row->ok && row->breakdown != NULL && row->breakdown->len > 0)
        return TRUE;
    }
  return FALSE;
}

/* One panel per design; in it, a group of bars per configuration and a
 * bar per operator group, stacked by component. */
static ReportFigure *
op_breakdown_figure (const ReportResults *results)
{
  BarFigure *bars = bar_figure_new_series (results, TRUE, results->op_groups);
  guint n_series = results->op_groups->len;
  double factor, max = 0;
  g_autofree char *axis = NULL;

  bars->stack_colors = elk__component_colors;
  for (guint i = 0; i < results->rows->len; i++)
    {
      const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      for (guint k = 0;
           row->ok && row->breakdown != NULL && k < row->breakdown->len; k++)
        max = MAX (max, g_array_index (row->breakdown, ReportBreakdownCell, k)
                            .seconds);
    }
  axis = time_axis_label (max, "time", &factor);
  for (guint k = 0; k < ELK_REPORT_N_COMPONENTS; k++)
    legend_add (bars->legend, elk__time_components[k], elk__component_colors[k],
                SWATCH_BOX);
  for (guint d = 0; d < results->designs->len; d++)
    {
      BarPanel *panel = bar_panel_new (bars, results->designs->pdata[d], axis,
                                       factor, ELK_REPORT_N_COMPONENTS);
      for (guint i = 0; i < results->rows->len; i++)
        {
          const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
          guint first = row->config * n_series;

          if (row->design != d)
            continue;
          for (guint g = 0; !row->ok && g < n_series; g++)
            panel->states[first + g] = CELL_FAILED;
          for (guint k = 0;
               row->ok && row->breakdown != NULL && k < row->breakdown->len;
               k++)
            {
              const ReportBreakdownCell *c
                  = &g_array_index (row->breakdown, ReportBreakdownCell, k);
              guint cell = first + c->group;
              panel->values[cell * ELK_REPORT_N_COMPONENTS + c->component]
                  += c->seconds;
              panel->states[cell] = CELL_VALUE;
            }
        }
      g_ptr_array_add (bars->panels, panel);
    }
  return bar_figure_wrap (
      bars, "op-breakdown", "Where execution time goes, per operator group",
      "One panel per design, one bar per operator group (named under it) at "
      "each configuration, stacked by where the chip says the time went: "
      "compute, shift (rotation), output (output shuffle and partial-sum "
      "reduction), relayout (data distribution and gathered inputs), sync, "
      "stall (interconnect contention) and preload-wait (no operator runs: "
      "the next one waits for its preload).  The bars of a panel add up to "
      "the design's latency.  Data: breakdown.csv.");
}

/* A panel of @column's values, one bar per design, when some row has
 * them. */
static void
add_column_panel (BarFigure *bars,
                  const ReportResults *results,
                  const char *column,
                  const char *title,
                  const char *axis,
                  double factor)
{
  BarPanel *panel;

  if (!column_has_values (results, column))
    return;
  panel = bar_panel_new (bars, title, axis, factor, 1);
  bar_panel_fill (panel, bars, results, (const char *const[]){ column });
  g_ptr_array_add (bars->panels, panel);
}

static ReportFigure *
utilisation_figure (const ReportResults *results)
{
  BarFigure *bars = bar_figure_new (results, FALSE);

  add_design_legend (bars->legend, results, SWATCH_BOX);
  add_column_panel (bars, results, "hbm_util", "HBM bandwidth utilisation",
                    "HBM utilisation (%)", 100);
  add_column_panel (bars, results, "noc_util", "Interconnect utilisation",
                    "NoC utilisation (%)", 100);
  add_column_panel (bars, results, "achieved_flops", "Achieved compute rate",
                    "achieved TFLOP/s", 1e-12);
  return bar_figure_wrap (
    bars, "utilisation", "Resource utilisation (as in the paper's Fig 18b-d)",
    "Time-averaged HBM and interconnect utilisation (hbm_util, noc_util) "
    "and the achieved FLOP rate (achieved_flops) of every design.");
}

/* Line and scatter figures ---------------------------------------------- */

typedef struct
{
  double x, y;
  gboolean failed;
} LinePoint;

typedef struct
{
  char *title;
  GArray **series;  /* one GArray of LinePoint per design, sorted by x */
  GArray *hollow;   /* LinePoint: reference markers (ideal_s), or NULL */
} LinePanel;

typedef struct
{
  guint n_series;
  GPtrArray *panels;  /* LinePanel * */
  GArray *legend;
  char *x_label, *y_label;
  double x_factor, y_factor;
  gboolean connect;   /* lines between the points of a design */
  gboolean diagonal;  /* draw y = x (the physical bound) */
  gboolean x_from_zero;
  guint n_cols;
} LineFigure;

static void
line_panel_free (gpointer data)
{
  LinePanel *panel = data;
  g_free (panel->title);
  if (panel->series != NULL)
    for (guint s = 0; panel->series[s] != NULL; s++)
      g_array_unref (panel->series[s]);
  g_free (panel->series);
  if (panel->hollow != NULL)
    g_array_unref (panel->hollow);
  g_free (panel);
}

static void
line_figure_free (gpointer data)
{
  LineFigure *lines = data;
  g_ptr_array_unref (lines->panels);
  g_array_unref (lines->legend);
  g_free (lines->x_label);
  g_free (lines->y_label);
  g_free (lines);
}

static LinePanel *
line_panel_new (const char *title, guint n_series)
{
  LinePanel *panel = g_new0 (LinePanel, 1);

  panel->title = g_strdup (title);
  panel->series = g_new0 (GArray *, n_series + 1);
  for (guint s = 0; s < n_series; s++)
    panel->series[s] = g_array_new (FALSE, FALSE, sizeof (LinePoint));
  return panel;
}

static int
compare_x (gconstpointer a, gconstpointer b)
{
  double xa = ((const LinePoint *) a)->x, xb = ((const LinePoint *) b)->x;
  return (xa > xb) - (xa < xb);
}

#define PANEL_W (LEFT_AXIS + LINE_PLOT_W + 24)
#define PANEL_H (PANEL_TITLE_H + LINE_PLOT_H + 44)

static double
line_top (const LineFigure *lines, double width)
{
  return MARGIN + 24 + legend_height (lines->legend, width - 2 * MARGIN) + 6;
}

/* Ticks at the values themselves when there are few of them (a sweep
 * axis), round numbers otherwise. */
static void
draw_x_axis (cairo_t *cr,
             double x,
             double y,
             double w,
             double min,
             double max,
             GArray *values,
             double factor,
             const char *label)
{
  set_font (cr, TICK_SIZE, FALSE);
  set_gray (cr, 0.2);
  cairo_set_line_width (cr, 0.8);
  if (values->len > 0 && values->len <= 8)
    {
      double last_end = -G_MAXDOUBLE;
      for (guint i = 0; i < values->len; i++)
        {
          double v = g_array_index (values, double, i);
          double tx = x + (v - min) / (max - min) * w;
          g_autofree char *text = format_tick (v * factor);
          double tw = text_width (cr, text);

          cairo_move_to (cr, tx, y);
          cairo_line_to (cr, tx, y + 4);
          cairo_stroke (cr);
          /* Ticks too close for their labels keep only the first. */
          if (tx - tw / 2 > last_end + 4)
            {
              draw_text (cr, tx, y + 6, text, 0.5, 1, 0);
              last_end = tx + tw / 2;
            }
        }
    }
  else
    {
      double step = nice_step (max - min, 5);
      for (double v = ceil (min / step) * step; v <= max + step * 1e-6;
           v += step)
        {
          double tx = x + (v - min) / (max - min) * w;
          g_autofree char *text = format_tick (v * factor);
          cairo_move_to (cr, tx, y);
          cairo_line_to (cr, tx, y + 4);
          cairo_stroke (cr);
          draw_text (cr, tx, y + 6, text, 0.5, 1, 0);
        }
    }
  set_font (cr, LABEL_SIZE, FALSE);
  draw_text (cr, x + w / 2, y + 24, label, 0.5, 1, 0);
}

static void
draw_line_figure (const ReportFigure *figure, cairo_t *cr)
{
  const LineFigure *lines = figure->data;
  double top = line_top (lines, figure->width);
  double shared_ymax = 0;

  /* Small multiples share one vertical scale, so that panels can be
   * compared by eye. */
  for (guint p = 0; p < lines->panels->len; p++)
    {
      const LinePanel *panel = lines->panels->pdata[p];
      for (guint s = 0; s <= lines->n_series; s++)
        {
          GArray *points = s < lines->n_series ? panel->series[s]
                                               : panel->hollow;
          for (guint i = 0; points != NULL && i < points->len; i++)
            if (!g_array_index (points, LinePoint, i).failed)
              shared_ymax = MAX (shared_ymax,
                                 g_array_index (points, LinePoint, i).y);
        }
    }

  draw_title_and_legend (cr, figure, lines->legend);

  for (guint p = 0; p < lines->panels->len; p++)
    {
      const LinePanel *panel = lines->panels->pdata[p];
      double px = MARGIN + (p % lines->n_cols) * PANEL_W + LEFT_AXIS;
      double py = top + (p / lines->n_cols) * PANEL_H + PANEL_TITLE_H;
      double xmin = G_MAXDOUBLE, xmax = -G_MAXDOUBLE, ymax = 0;
      g_autoptr (GArray) xs = g_array_new (FALSE, FALSE, sizeof (double));
      Scale yscale;

      for (guint s = 0; s <= lines->n_series; s++)
        {
          GArray *points = s < lines->n_series ? panel->series[s]
                                               : panel->hollow;
          for (guint i = 0; points != NULL && i < points->len; i++)
            {
              const LinePoint *pt = &g_array_index (points, LinePoint, i);
              gboolean seen = FALSE;
              xmin = MIN (xmin, pt->x);
              xmax = MAX (xmax, pt->x);
              if (!pt->failed)
                ymax = MAX (ymax, pt->y);
              for (guint k = 0; k < xs->len; k++)
                seen |= g_array_index (xs, double, k) == pt->x;
              if (!seen)
                g_array_append_val (xs, pt->x);
            }
        }
      g_array_sort (xs, (GCompareFunc) compare_x);
      ymax = shared_ymax;
      if (xmin > xmax)
        xmin = 0, xmax = 1;
      if (lines->diagonal)
        ymax = MAX (ymax, xmax);
      yscale = zero_scale (ymax * lines->y_factor);
      if (lines->x_from_zero)
        {
          Scale xscale = zero_scale (MAX (xmax, ymax) * lines->x_factor);
          xmin = 0;
          xmax = xscale.max / lines->x_factor;
          g_array_set_size (xs, 0);
          if (lines->diagonal)
            yscale = xscale;
        }
      else if (xmin == xmax)
        {
          double pad = xmin != 0 ? fabs (xmin) * 0.1 : 1;
          xmin -= pad, xmax += pad;
        }
      else
        {
          double pad = (xmax - xmin) * 0.06;
          xmin -= pad, xmax += pad;
        }

      set_gray (cr, 0.1);
      set_font (cr, LABEL_SIZE, TRUE);
      draw_text (cr, px, py - PANEL_TITLE_H + 6, panel->title, 0, 0.5, 0);
      draw_y_axis (cr, px, py, LINE_PLOT_W, LINE_PLOT_H, yscale,
                   lines->y_label);
      draw_x_axis (cr, px, py + LINE_PLOT_H, LINE_PLOT_W, xmin, xmax, xs,
                   lines->x_factor, lines->x_label);

#define MAP_X(v) (px + ((v) - xmin) / (xmax - xmin) * LINE_PLOT_W)
#define MAP_Y(v)                                                           \
  (py + LINE_PLOT_H - (v) * lines->y_factor / yscale.max * LINE_PLOT_H)

      cairo_save (cr);
      cairo_rectangle (cr, px, py - 6, LINE_PLOT_W, LINE_PLOT_H + 6);
      cairo_clip (cr);
      if (lines->diagonal)
        {
          double end = MIN (xmax, yscale.max / lines->y_factor);
          set_gray (cr, 0.45);
          cairo_set_line_width (cr, 1);
          cairo_set_dash (cr, (const double[]){ 5, 3 }, 2, 0);
          cairo_move_to (cr, MAP_X (0), MAP_Y (0));
          cairo_line_to (cr, MAP_X (end), MAP_Y (end));
          cairo_stroke (cr);
          cairo_set_dash (cr, NULL, 0, 0);
        }
      for (guint s = 0; s < lines->n_series; s++)
        {
          GArray *points = panel->series[s];
          gboolean pen_down = FALSE, drew = FALSE;

          if (!lines->connect)
            continue;
          /* One path per design; a failed point breaks the line rather
           * than pulling it to zero. */
          for (guint i = 0; i < points->len; i++)
            {
              const LinePoint *pt = &g_array_index (points, LinePoint, i);
              if (pt->failed)
                {
                  pen_down = FALSE;
                  continue;
                }
              if (pen_down)
                {
                  cairo_line_to (cr, MAP_X (pt->x), MAP_Y (pt->y));
                  drew = TRUE;
                }
              else
                cairo_move_to (cr, MAP_X (pt->x), MAP_Y (pt->y));
              pen_down = TRUE;
            }
          if (drew)
            {
              set_rgb (cr, design_color (s));
              cairo_set_line_width (cr, 2);
              cairo_stroke (cr);
            }
          else
            cairo_new_path (cr);
        }
      if (panel->hollow != NULL)
        for (guint i = 0; i < panel->hollow->len; i++)
          {
            const LinePoint *pt = &g_array_index (panel->hollow, LinePoint,
                                                  i);
            set_gray (cr, 0);
            cairo_set_line_width (cr, 1.2);
            cairo_rectangle (cr, MAP_X (pt->x) - 4, MAP_Y (pt->y) - 4, 8, 8);
            cairo_stroke (cr);
          }
      for (guint s = 0; s < lines->n_series; s++)
        {
          GArray *points = panel->series[s];
          for (guint i = 0; i < points->len; i++)
            {
              const LinePoint *pt = &g_array_index (points, LinePoint, i);
              if (pt->failed)
                draw_failed_mark (cr, MAP_X (pt->x), py + 2, 8);
              else
                draw_marker (cr, MAP_X (pt->x), MAP_Y (pt->y),
                             design_color (s));
            }
        }
      cairo_restore (cr);
#undef MAP_X
#undef MAP_Y
    }
}

static ReportFigure *
line_figure_wrap (LineFigure *lines,
                  gboolean any_failed,
                  const char *stem,
                  const char *title,
                  const char *caption)
{
  ReportFigure *figure = g_new0 (ReportFigure, 1);
  guint rows;

  if (any_failed)
    legend_add (lines->legend, "failed row (no value; see the table)",
                elk__failed_color, SWATCH_FAILED);
  lines->n_cols = MIN (MAX (lines->panels->len, 1), 3);
  rows = (lines->panels->len + lines->n_cols - 1) / lines->n_cols;
  figure->stem = g_strdup (stem);
  figure->title = g_strdup (title);
  figure->caption = g_strdup (caption);
  figure->width = ceil (MAX (2 * MARGIN + lines->n_cols * PANEL_W,
                             measure (title, TITLE_SIZE, TRUE) + 2 * MARGIN));
  figure->height = ceil (line_top (lines, figure->width) + rows * PANEL_H
                         + MARGIN);
  figure->draw = draw_line_figure;
  figure->data = lines;
  figure->free_data = line_figure_free;
  return figure;
}

static LineFigure *
line_figure_new (const ReportResults *results)
{
  LineFigure *lines = g_new0 (LineFigure, 1);

  lines->n_series = results->designs->len;
  lines->panels = g_ptr_array_new_with_free_func (line_panel_free);
  lines->legend = legend_new ();
  lines->connect = TRUE;
  lines->x_factor = lines->y_factor = 1;
  return lines;
}

static char *
short_axis_name (const char *axis)
{
  const char *dot = strrchr (axis, '.');
  return g_strdup (dot != NULL ? dot + 1 : axis);
}

/* What a sweep figure draws over its axis: the latency, or for results
 * with conditional operators (a mixture of experts' experts) the HBM
 * bytes per token and the expert preload hit rate. */
typedef enum
{
  SWEEP_LATENCY,
  SWEEP_HBM_PER_TOKEN,
  SWEEP_HIT_RATE,
} SweepQuantity;

/* @q of @row: NAN when the row does not carry it. */
static double
sweep_value (const ReportResults *results,
             const ReportRow *row,
             SweepQuantity q)
{
  double batch;

  switch (q)
    {
    case SWEEP_HBM_PER_TOKEN:
      /* A decode step serves one token per sequence of the batch. */
      batch = elk__row_number (results, row, "batch");
      return batch > 0 ? elk__row_number (results, row, "hbm_bytes") / batch
                       : NAN;
    case SWEEP_HIT_RATE:
      return elk__row_number (results, row, "routing_hit_rate");
    case SWEEP_LATENCY:
    default:
      return elk__row_number (results, row, "latency_s");
    }
}

/* One panel per combination of the other axes' values; one line per
 * design over @axis. */
static ReportFigure *
sweep_figure (const ReportResults *results, guint axis_index, SweepQuantity q)
{
  const char *axis = results->axes->pdata[axis_index];
  int column = elk__results_column (results, axis);
  LineFigure *lines = line_figure_new (results);
  g_autoptr (GHashTable) panel_of = g_hash_table_new_full (
    g_str_hash, g_str_equal, g_free, NULL);
  g_autofree char *stem = NULL;
  g_autofree char *title = NULL;
  g_autofree char *caption = NULL;
  const char *unit;
  gboolean any_failed = FALSE;

  lines->x_label = g_strdup (axis);
  if (q == SWEEP_HBM_PER_TOKEN)
    {
      lines->y_factor = 1e-6;
      lines->y_label = g_strdup ("HBM bytes per token (MB)");
    }
  else if (q == SWEEP_HIT_RATE)
    {
      lines->y_factor = 100;
      lines->y_label = g_strdup ("expert preload hit rate (%)");
    }
  else
    {
      time_unit (column_max (results, "latency_s"), &lines->y_factor, &unit);
      lines->y_label = g_strdup_printf ("latency (%s)", unit);
    }
  add_design_legend (lines->legend, results, SWATCH_LINE);

  for (guint i = 0; i < results->rows->len; i++)
    {
      const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      GString *key = g_string_new (NULL);
      LinePanel *panel;
      LinePoint pt;
      gpointer index;

      for (guint a = 0; a < results->axes->len; a++)
        {
          g_autofree char *text = NULL;
          g_autofree char *name = NULL;
          if (a == axis_index)
            continue;
          text = elk__value_to_text (elk__row_get (
            results, row,
            elk__results_column (results, results->axes->pdata[a])));
          name = short_axis_name (results->axes->pdata[a]);
          g_string_append_printf (key, "%s%s=%s", key->len > 0 ? ", " : "",
                                  name, text);
        }
      if (key->len == 0)
        g_string_append (key, results->experiment);
      if (!g_hash_table_lookup_extended (panel_of, key->str, NULL, &index))
        {
          index = GUINT_TO_POINTER (lines->panels->len);
          g_ptr_array_add (lines->panels,
                           line_panel_new (key->str, lines->n_series));
          g_hash_table_insert (panel_of, g_strdup (key->str), index);
        }
      g_string_free (key, TRUE);
      panel = lines->panels->pdata[GPOINTER_TO_UINT (index)];

      pt.x = elk__row_get (results, row, column)->number;
      pt.failed = !row->ok;
      pt.y = sweep_value (results, row, q);
      any_failed |= pt.failed;
      if (pt.failed || !isnan (pt.y))
        g_array_append_val (panel->series[row->design], pt);
    }
  for (guint p = 0; p < lines->panels->len; p++)
    {
      LinePanel *panel = lines->panels->pdata[p];
      for (guint s = 0; s < lines->n_series; s++)
        g_array_sort (panel->series[s], compare_x);
    }

  if (q == SWEEP_HBM_PER_TOKEN)
    {
      stem = g_strdup_printf ("hbm-per-token-%s", axis);
      title = g_strdup_printf ("HBM bytes per token over %s", axis);
      caption = g_strdup_printf (
          "hbm_bytes / batch of every design (one line each) over the "
          "swept axis %s%s: what a decode step reads from HBM for each "
          "token it serves, wasted expert preloads included.",
          axis,
          results->axes->len > 1 ? ", one panel per value of the other axes"
                                 : "");
    }
  else if (q == SWEEP_HIT_RATE)
    {
      stem = g_strdup_printf ("hit-rate-%s", axis);
      title = g_strdup_printf ("Expert preload hit rate over %s", axis);
      caption = g_strdup_printf (
          "routing_hit_rate of every design (one line each) over the swept "
          "axis %s%s: the share of the experts the routing took whose "
          "weights were preloaded before their router ran; a design "
          "without a value has no taken expert with weights.",
          axis,
          results->axes->len > 1 ? ", one panel per value of the other axes"
                                 : "");
    }
  else
    {
      stem = g_strdup_printf ("sweep-%s", axis);
      title = g_strdup_printf ("Latency over %s", axis);
      caption = g_strdup_printf ("latency_s of every design (one line each) "
                                 "over the swept axis "
                                 "%s%s.",
                                 axis,
                                 results->axes->len > 1
                                     ? ", one panel per value of the other axes"
                                     : "");
    }
  return line_figure_wrap (lines, any_failed, stem, title, caption);
}

static ReportFigure *
roofline_figure (const ReportResults *results)
{
  LineFigure *lines = line_figure_new (results);
  LinePanel *panel = line_panel_new ("latency against the physical bound",
                                     lines->n_series);
  const char *unit;
  gboolean any_failed = FALSE;
  double max = MAX (column_max (results, "latency_s"),
                    column_max (results, "bound_s"));
  static const guint8 black[3] = { 0, 0, 0 };

  time_unit (max, &lines->y_factor, &unit);
  lines->x_factor = lines->y_factor;
  lines->connect = FALSE;
  lines->diagonal = TRUE;
  lines->x_from_zero = TRUE;
  lines->x_label = g_strdup_printf ("physical bound bound_s (%s)", unit);
  lines->y_label = g_strdup_printf ("latency (%s)", unit);
  add_design_legend (lines->legend, results, SWATCH_MARKER);
  panel->hollow = g_array_new (FALSE, FALSE, sizeof (LinePoint));
  g_ptr_array_add (lines->panels, panel);

  for (guint i = 0; i < results->rows->len; i++)
    {
      const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      LinePoint pt = { elk__row_number (results, row, "bound_s"),
                       elk__row_number (results, row, "latency_s"),
                       !row->ok };
      double ideal = elk__row_number (results, row, "ideal_s");

      if (isnan (pt.x))
        continue;
      any_failed |= pt.failed;
      if (pt.failed || !isnan (pt.y))
        g_array_append_val (panel->series[row->design], pt);
      /* ideal_s is the same for every row of a point: draw it once. */
      if (!isnan (ideal)
          && (i == 0
              || g_array_index (results->rows, ReportRow, i - 1).point
                   != row->point))
        {
          LinePoint ref = { pt.x, ideal, FALSE };
          g_array_append_val (panel->hollow, ref);
        }
    }
  if (panel->hollow->len > 0)
    legend_add (lines->legend, "ideal_s (the ideal design)", black,
                SWATCH_HOLLOW);
  return line_figure_wrap (
    lines, any_failed, "roofline", "Achieved latency against the bounds",
    "Each marker is one row: its latency_s against the physical lower "
    "bound bound_s = max(FLOPs / peak FLOP rate, HBM bytes / HBM "
    "bandwidth).  The dashed line is latency = bound; nothing may fall "
    "below it.  Hollow squares are ideal_s, the ideal design's latency at "
    "the same point.");
}

static ReportFigure *
extra_figure (const ReportResults *results, const ElkReportPlot *plot)
{
  LineFigure *lines = line_figure_new (results);
  LinePanel *panel = line_panel_new ("", lines->n_series);
  gboolean any_failed = FALSE;
  g_autofree char *stem = NULL;
  g_autofree char *title = NULL;
  g_autofree char *caption = NULL;

  lines->x_label = g_strdup (plot->x);
  lines->y_label = g_strdup (plot->y);
  add_design_legend (lines->legend, results, SWATCH_LINE);
  g_ptr_array_add (lines->panels, panel);
  for (guint i = 0; i < results->rows->len; i++)
    {
      const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      LinePoint pt = { elk__row_number (results, row, plot->x),
                       elk__row_number (results, row, plot->y), !row->ok };
      if (isnan (pt.x))
        continue;
      any_failed |= pt.failed;
      if (pt.failed || !isnan (pt.y))
        g_array_append_val (panel->series[row->design], pt);
    }
  for (guint s = 0; s < lines->n_series; s++)
    g_array_sort (panel->series[s], compare_x);
  g_free (panel->title);
  panel->title = g_strdup_printf ("%s against %s", plot->y, plot->x);
  stem = g_strdup_printf ("plot-%s-%s", plot->x, plot->y);
  title = g_strdup_printf ("%s over %s", plot->y, plot->x);
  caption = g_strdup_printf ("Requested plot: %s (vertical) against %s "
                             "(horizontal), one line per design.",
                             plot->y, plot->x);
  return line_figure_wrap (lines, any_failed, stem, title, caption);
}

/* Choosing the figures --------------------------------------------------- */

void
elk__figure_free (ReportFigure *figure)
{
  if (figure == NULL)
    return;
  if (figure->free_data != NULL)
    figure->free_data (figure->data);
  g_free (figure->stem);
  g_free (figure->title);
  g_free (figure->caption);
  g_free (figure);
}

static gboolean
check_plot_column (const ReportResults *results,
                   const char *column,
                   const char *role,
                   GError **error)
{
  int index = elk__results_column (results, column);

  if (index < 0)
    {
      g_autoptr (GString) valid = g_string_new (NULL);
      for (guint c = 0; c < results->columns->len; c++)
        g_string_append_printf (valid, "%s%s", c > 0 ? ", " : "",
                                (const char *) results->columns->pdata[c]);
      g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_PLOT,
                   "plot %s=%s: results.json has no column '%s'; the "
                   "columns are: %s",
                   role, column, column, valid->str);
      return FALSE;
    }
  if (!elk__results_column_is_numeric (results, index))
    {
      g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_PLOT,
                   "plot %s=%s: column '%s' holds no numbers to plot",
                   role, column, column);
      return FALSE;
    }
  return TRUE;
}

/**
 * elk__figures_choose:
 *
 * Every results table gets the latency bars.  The breakdown and the
 * utilisation figures come when some row that ran has their columns, the
 * execution-time breakdown per operator group when some row that ran has
 * one, the
 * roofline when rows have bound_s, and one line figure per numeric sweep
 * axis with at least two values; with the routing columns of conditional
 * operators (a mixture of experts' experts), two more per such axis: the
 * HBM bytes per token and the expert preload hit rate.
 *
 * Returns: (transfer full) (element-type ReportFigure): the figures
 */
GPtrArray *
elk__figures_choose (const ReportResults *results,
                     const ElkReportOptions *options,
                     GError **error)
{
  g_autoptr (GPtrArray) figures
    = g_ptr_array_new_with_free_func ((GDestroyNotify) elk__figure_free);
  gboolean breakdown = TRUE;

  /* Requests are checked first, so that a typo fails before any drawing. */
  for (gsize i = 0; options != NULL && i < options->n_plots; i++)
    if (!check_plot_column (results, options->plots[i].x, "x", error)
        || !check_plot_column (results, options->plots[i].y, "y", error))
      return NULL;

  if (results->rows->len == 0)
    return g_steal_pointer (&figures);

  g_ptr_array_add (figures, latency_figure (results));
  for (guint k = 0; k < 4; k++)
    breakdown &= column_has_values (results, elk__breakdown_columns[k]);
  if (breakdown)
    g_ptr_array_add (figures, breakdown_figure (results));
  if (has_op_breakdown (results))
    g_ptr_array_add (figures, op_breakdown_figure (results));
  if (column_has_values (results, "hbm_util")
      || column_has_values (results, "noc_util")
      || column_has_values (results, "achieved_flops"))
    g_ptr_array_add (figures, utilisation_figure (results));
  for (guint a = 0; a < results->axes->len; a++)
    {
      int column = elk__results_column (results, results->axes->pdata[a]);
      g_autoptr (GHashTable) values = NULL;

      if (column < 0 || !elk__results_column_is_numeric (results, column))
        continue;
      values = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
      for (guint i = 0; i < results->rows->len; i++)
        {
          const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
          g_hash_table_add (values, elk__value_to_text (
                                      elk__row_get (results, row, column)));
        }
      if (g_hash_table_size (values) < 2)
        continue;
      g_ptr_array_add (figures, sweep_figure (results, a, SWEEP_LATENCY));
      /* Mixture-of-experts results with conditional experts: what the
       * speculation cost and won. */
      if (column_has_values (results, "routing_hit_rate")
          || column_has_values (results, "routing_conditional"))
        {
          g_ptr_array_add (figures,
                           sweep_figure (results, a, SWEEP_HBM_PER_TOKEN));
          g_ptr_array_add (figures, sweep_figure (results, a, SWEEP_HIT_RATE));
        }
    }
  if (column_has_values (results, "bound_s")
      && column_has_values (results, "latency_s"))
    g_ptr_array_add (figures, roofline_figure (results));
  for (gsize i = 0; options != NULL && i < options->n_plots; i++)
    g_ptr_array_add (figures, extra_figure (results, &options->plots[i]));
  return g_steal_pointer (&figures);
}
