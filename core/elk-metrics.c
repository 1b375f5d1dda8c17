/* elk-metrics.c: run metrics. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "elk-private.h"

#include <elk/elk-metrics.h>

/**
 * elk_metrics_get_type:
 *
 * The boxed type of #ElkMetrics, copied with elk_metrics_copy() and freed
 * with elk_metrics_free().
 *
 * Returns: the #GType of #ElkMetrics.
 */
ELK_DEFINE_BOXED_TYPE (ElkMetrics, elk_metrics, elk_metrics_copy,
                     elk_metrics_free)

/**
 * elk_metrics_new:
 * @model: which model produces the numbers, stated in results (copied)
 *
 * Creates zeroed metrics for a chip backend to fill.
 *
 * Returns: (transfer full): zeroed metrics; free them with
 *   elk_metrics_free().
 */
ElkMetrics *
elk_metrics_new (const char *model)
{
  ElkMetrics *metrics = g_new0 (ElkMetrics, 1);
  metrics->model = g_strdup (model);
  return metrics;
}

/**
 * elk_metrics_copy:
 * @metrics: metrics
 *
 * Copies @metrics, model string and breakdown included.
 *
 * Returns: (transfer full): a copy; free it with elk_metrics_free().
 */
ElkMetrics *
elk_metrics_copy (const ElkMetrics *metrics)
{
  ElkMetrics *copy = g_memdup2 (metrics, sizeof (ElkMetrics));
  copy->model = g_strdup (metrics->model);
  copy->breakdown = metrics->breakdown != NULL
                        ? elk_breakdown_copy (metrics->breakdown)
                        : NULL;
  copy->routing = metrics->routing != NULL
                      ? elk_routing_stats_copy (metrics->routing)
                      : NULL;
  return copy;
}

/**
 * elk_metrics_free:
 * @metrics: (transfer full) (nullable): metrics, or %NULL
 *
 * Frees @metrics, its model string and its breakdown.
 */
void
elk_metrics_free (ElkMetrics *metrics)
{
  if (metrics == NULL)
    return;
  g_free (metrics->model);
  elk_breakdown_free (metrics->breakdown);
  elk_routing_stats_free (metrics->routing);
  g_free (metrics);
}

/**
 * elk_routing_stats_get_type:
 *
 * The boxed type of #ElkRoutingStats, copied with elk_routing_stats_copy()
 * and freed with elk_routing_stats_free().
 *
 * Returns: the #GType of #ElkRoutingStats.
 */
ELK_DEFINE_BOXED_TYPE (ElkRoutingStats,
                       elk_routing_stats,
                       elk_routing_stats_copy,
                       elk_routing_stats_free)

/**
 * elk_routing_stats_new:
 *
 * Creates zeroed routing statistics, with no hit rate (NAN), for a chip
 * to fill.
 *
 * Returns: (transfer full): new statistics; free them with
 *   elk_routing_stats_free().
 */
ElkRoutingStats *
elk_routing_stats_new (void)
{
  ElkRoutingStats *stats = g_new0 (ElkRoutingStats, 1);
  stats->hit_rate = NAN;
  return stats;
}

/**
 * elk_routing_stats_copy:
 * @stats: routing statistics
 *
 * Copies @stats.
 *
 * Returns: (transfer full): a copy; free it with elk_routing_stats_free().
 */
ElkRoutingStats *
elk_routing_stats_copy (const ElkRoutingStats *stats)
{
  return g_memdup2 (stats, sizeof (ElkRoutingStats));
}

/**
 * elk_routing_stats_free:
 * @stats: (transfer full) (nullable): routing statistics, or %NULL
 *
 * Frees @stats.
 */
void
elk_routing_stats_free (ElkRoutingStats *stats)
{
  g_free (stats);
}

/* The routing statistics as the runner carries them to the results
 * writer: their nine numbers in field order joined by ';' (the hit rate
 * empty when there is none), or NULL for none. */
char *
elk__routing_stats_to_string (const ElkRoutingStats *stats)
{
  char bytes[2][G_ASCII_DTOSTR_BUF_SIZE], rate[G_ASCII_DTOSTR_BUF_SIZE];

  if (stats == NULL)
    return NULL;
  g_ascii_formatd (bytes[0], sizeof bytes[0], "%.9g", stats->wasted_hbm_bytes);
  g_ascii_formatd (bytes[1], sizeof bytes[1], "%.9g",
                   stats->on_demand_hbm_bytes);
  if (isnan (stats->hit_rate))
    rate[0] = '\0';
  else
    g_ascii_formatd (rate, sizeof rate, "%.9g", stats->hit_rate);
  return g_strdup_printf ("%u;%u;%u;%u;%s;%u;%s;%u;%s", stats->n_conditional,
                          stats->n_taken, stats->hits, stats->wasted, bytes[0],
                          stats->on_demand, bytes[1], stats->skipped, rate);
}

/* Whether two breakdowns differ, bit for bit; on a difference the
 * seconds of the first differing cell (NAN where a cell is missing). */
static gboolean
breakdown_first_difference (const ElkBreakdown *a,
                            const ElkBreakdown *b,
                            double *value_a,
                            double *value_b)
{
  guint na = a != NULL ? elk_breakdown_get_n_cells (a) : 0;
  guint nb = b != NULL ? elk_breakdown_get_n_cells (b) : 0;

  if ((a == NULL) != (b == NULL))
    {
      if (value_a != NULL)
        *value_a = a != NULL ? elk_breakdown_get_total (a) : NAN;
      if (value_b != NULL)
        *value_b = b != NULL ? elk_breakdown_get_total (b) : NAN;
      return TRUE;
    }
  for (guint i = 0; i < MAX (na, nb); i++)
    {
      ElkTimeComponent ca = 0, cb = 0;
      double x = NAN, y = NAN;
      const char *ga = i < na ? elk_breakdown_get_cell (a, i, &ca, &x) : NULL;
      const char *gb = i < nb ? elk_breakdown_get_cell (b, i, &cb, &y) : NULL;

      if (g_strcmp0 (ga, gb) != 0 || ca != cb || memcmp (&x, &y, sizeof x) != 0)
        {
          if (value_a != NULL)
            *value_a = x;
          if (value_b != NULL)
            *value_b = y;
          return TRUE;
        }
    }
  return FALSE;
}

/* The name of the first field in which two routing statistics differ,
 * bit for bit, "routing" when only one has them, or NULL. */
static const char *
routing_first_difference (const ElkRoutingStats *a,
                          const ElkRoutingStats *b,
                          double *value_a,
                          double *value_b)
{
  double x[8], y[8];
  static const char *const names[8] = {
    "routing.n_conditional",
    "routing.n_taken",
    "routing.hits",
    "routing.wasted",
    "routing.wasted_hbm_bytes",
    "routing.on_demand",
    "routing.on_demand_hbm_bytes",
    "routing.hit_rate",
  };

  if (a == NULL && b == NULL)
    return NULL;
  if (a == NULL || b == NULL)
    {
      if (value_a != NULL)
        *value_a = a != NULL ? a->hit_rate : NAN;
      if (value_b != NULL)
        *value_b = b != NULL ? b->hit_rate : NAN;
      return "routing";
    }
#define FILL(v, s)                                                             \
  v[0] = s->n_conditional, v[1] = s->n_taken, v[2] = s->hits,                  \
  v[3] = s->wasted, v[4] = s->wasted_hbm_bytes, v[5] = s->on_demand,           \
  v[6] = s->on_demand_hbm_bytes, v[7] = s->hit_rate
  FILL (x, a);
  FILL (y, b);
#undef FILL
  if (a->skipped != b->skipped)
    {
      if (value_a != NULL)
        *value_a = a->skipped;
      if (value_b != NULL)
        *value_b = b->skipped;
      return "routing.skipped";
    }
  for (guint i = 0; i < G_N_ELEMENTS (x); i++)
    if (memcmp (&x[i], &y[i], sizeof x[i]) != 0)
      {
        if (value_a != NULL)
          *value_a = x[i];
        if (value_b != NULL)
          *value_b = y[i];
        return names[i];
      }
  return NULL;
}

/**
 * elk_metrics_first_difference:
 * @a: metrics
 * @b: metrics to compare with @a
 * @value_a: (out) (optional): @a's value of the field that differs
 * @value_b: (out) (optional): @b's value of it
 *
 * Compares two measurements number by number, bit for bit (so NAN equals
 * NAN and 0 differs from -0), as determinism and trust checks need.
 *
 * Returns: (transfer none) (nullable): the name of the first numeric field
 *   in which @a and @b differ, "breakdown" when only their breakdowns
 *   differ (in a cell's group, component or seconds, the seconds of the
 *   first differing cell in @value_a and @value_b, or in whether they
 *   have one at all), "routing" or "routing.<field>" when only their
 *   #ElkRoutingStats differ, or %NULL when every number is identical.  The
 *   model strings are not compared.
 */
const char *
elk_metrics_first_difference (const ElkMetrics *a,
                              const ElkMetrics *b,
                              double *value_a,
                              double *value_b)
{
  static const struct
  {
    const char *name;
    gsize offset;
  } fields[] = {
#define FIELD(f) { #f, G_STRUCT_OFFSET (ElkMetrics, f) }
    FIELD (latency_s), FIELD (flops), FIELD (hbm_bytes), FIELD (noc_bytes),
    FIELD (hbm_util), FIELD (noc_util), FIELD (achieved_flops),
    FIELD (preload_only_s), FIELD (execute_only_s), FIELD (overlap_s),
    FIELD (stall_s),
#undef FIELD
  };

  g_return_val_if_fail (a != NULL && b != NULL, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (fields); i++)
    {
      double x = G_STRUCT_MEMBER (double, a, fields[i].offset);
      double y = G_STRUCT_MEMBER (double, b, fields[i].offset);
      if (memcmp (&x, &y, sizeof x) != 0)
        {
          if (value_a != NULL)
            *value_a = x;
          if (value_b != NULL)
            *value_b = y;
          return fields[i].name;
        }
    }
  if (breakdown_first_difference (a->breakdown, b->breakdown, value_a, value_b))
    return "breakdown";
  return routing_first_difference (a->routing, b->routing, value_a, value_b);
}

/* The breakdown's cells, kept sorted by (group, component).  Groups are
 * interned strings, so a cell owns nothing and a copy is one memcpy. */
typedef struct
{
  const char *group;
  ElkTimeComponent component;
  double seconds;
} BreakdownCell;

struct _ElkBreakdown
{
  GArray *cells; /* BreakdownCell */
};

/**
 * elk_breakdown_get_type:
 *
 * The boxed type of #ElkBreakdown, copied with elk_breakdown_copy() and
 * freed with elk_breakdown_free().
 *
 * Returns: the #GType of #ElkBreakdown.
 */
ELK_DEFINE_BOXED_TYPE (ElkBreakdown,
                       elk_breakdown,
                       elk_breakdown_copy,
                       elk_breakdown_free)

/**
 * elk_breakdown_new:
 *
 * Creates an empty breakdown for a chip to fill.
 *
 * Returns: (transfer full): an empty breakdown; free it with
 *   elk_breakdown_free().
 */
ElkBreakdown *
elk_breakdown_new (void)
{
  ElkBreakdown *breakdown = g_new0 (ElkBreakdown, 1);
  breakdown->cells = g_array_new (FALSE, FALSE, sizeof (BreakdownCell));
  return breakdown;
}

/**
 * elk_breakdown_copy:
 * @breakdown: a breakdown
 *
 * Copies @breakdown.
 *
 * Returns: (transfer full): a copy; free it with elk_breakdown_free().
 */
ElkBreakdown *
elk_breakdown_copy (const ElkBreakdown *breakdown)
{
  ElkBreakdown *copy = elk_breakdown_new ();
  g_array_append_vals (copy->cells, breakdown->cells->data,
                       breakdown->cells->len);
  return copy;
}

/**
 * elk_breakdown_free:
 * @breakdown: (transfer full) (nullable): a breakdown, or %NULL
 *
 * Frees @breakdown.
 */
void
elk_breakdown_free (ElkBreakdown *breakdown)
{
  if (breakdown == NULL)
    return;
  g_array_unref (breakdown->cells);
  g_free (breakdown);
}

static gint
cell_cmp (const char *group,
          ElkTimeComponent component,
          const BreakdownCell *cell)
{
  gint c = strcmp (group, cell->group);
  if (c != 0)
    return c;
  return (gint) component - (gint) cell->component;
}

/* The index of the cell (group, component), or where it would go. */
static guint
find_cell (const ElkBreakdown *breakdown,
           const char *group,
           ElkTimeComponent component,
           gboolean *found)
{
  guint lo = 0, hi = breakdown->cells->len;

  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      gint c = cell_cmp (group, component,
                         &g_array_index (breakdown->cells, BreakdownCell, mid));
      if (c == 0)
        {
          *found = TRUE;
          return mid;
        }
      if (c < 0)
        hi = mid;
      else
        lo = mid + 1;
    }
  *found = FALSE;
  return lo;
}

/* A group name goes into breakdown.csv, results.json and the journal as
 * it is, so it is a short word of letters, digits, '-', '_' and '.'. */
static gboolean
group_is_valid (const char *group)
{
  if (group == NULL || *group == '\0' || strlen (group) > 64)
    return FALSE;
  for (const char *p = group; *p != '\0'; p++)
    if (!g_ascii_isalnum (*p) && *p != '-' && *p != '_' && *p != '.')
      return FALSE;
  return TRUE;
}

/**
 * elk_breakdown_add:
 * @breakdown: a breakdown
 * @group: the operator group, a word of letters, digits, '-', '_' and '.'
 *   (elk_op_get_breakdown_group() names the built-in ones)
 * @component: where the time went
 * @seconds: time to add, finite and not negative
 *
 * Adds @seconds to the cell (@group, @component), creating it at 0 if
 * missing.  Adding 0 creates the cell, so that a group reports every
 * component a chip models, zeros included.
 */
void
elk_breakdown_add (ElkBreakdown *breakdown,
                   const char *group,
                   ElkTimeComponent component,
                   double seconds)
{
  gboolean found;
  guint index;

  g_return_if_fail (breakdown != NULL);
  g_return_if_fail (group_is_valid (group));
  g_return_if_fail ((guint) component < ELK_TIME_N_COMPONENTS);
  g_return_if_fail (isfinite (seconds) && seconds >= 0);

  index = find_cell (breakdown, group, component, &found);
  if (!found)
    {
      BreakdownCell cell = { g_intern_string (group), component, 0 };
      g_array_insert_val (breakdown->cells, index, cell);
    }
  g_array_index (breakdown->cells, BreakdownCell, index).seconds += seconds;
}

/**
 * elk_breakdown_add_op:
 * @breakdown: a breakdown
 * @op: an operator
 * @seconds: (array fixed-size=7): one time per #ElkTimeComponent, in
 *   enum order
 *
 * Adds one operator's time to the cells of its group
 * (elk_op_get_breakdown_group()), every component included.
 */
void
elk_breakdown_add_op (ElkBreakdown *breakdown,
                      const ElkOp *op,
                      const double *seconds)
{
  const char *group;

  g_return_if_fail (op != NULL && seconds != NULL);
  group = elk_op_get_breakdown_group (op);
  for (guint c = 0; c < ELK_TIME_N_COMPONENTS; c++)
    elk_breakdown_add (breakdown, group, (ElkTimeComponent) c, seconds[c]);
}

/**
 * elk_breakdown_get_n_cells:
 * @breakdown: a breakdown
 *
 * Counts the cells of @breakdown, for iterating them with
 * elk_breakdown_get_cell().
 *
 * Returns: how many (group, component) cells @breakdown has.
 */
guint
elk_breakdown_get_n_cells (const ElkBreakdown *breakdown)
{
  g_return_val_if_fail (breakdown != NULL, 0);
  return breakdown->cells->len;
}

/**
 * elk_breakdown_get_cell:
 * @breakdown: a breakdown
 * @index: a cell, below elk_breakdown_get_n_cells(); cells are sorted by
 *   group name (strcmp), then component
 * @component: (out) (optional): the cell's component
 * @seconds: (out) (optional): the cell's time
 *
 * Reads one cell.
 *
 * Returns: (transfer none): the cell's group.
 */
const char *
elk_breakdown_get_cell (const ElkBreakdown *breakdown,
                        guint index,
                        ElkTimeComponent *component,
                        double *seconds)
{
  const BreakdownCell *cell;

  g_return_val_if_fail (breakdown != NULL, NULL);
  g_return_val_if_fail (index < breakdown->cells->len, NULL);
  cell = &g_array_index (breakdown->cells, BreakdownCell, index);
  if (component != NULL)
    *component = cell->component;
  if (seconds != NULL)
    *seconds = cell->seconds;
  return cell->group;
}

/**
 * elk_breakdown_get:
 * @breakdown: a breakdown
 * @group: (nullable): an operator group, or %NULL for every group
 * @component: a component, or %ELK_TIME_N_COMPONENTS for every component
 *
 * Sums the cells that match, in cell order.
 *
 * Returns: the seconds of the matching cells (0 when none match).
 */
double
elk_breakdown_get (const ElkBreakdown *breakdown,
                   const char *group,
                   ElkTimeComponent component)
{
  double sum = 0;

  g_return_val_if_fail (breakdown != NULL, 0);
  for (guint i = 0; i < breakdown->cells->len; i++)
    {
      const BreakdownCell *cell
          = &g_array_index (breakdown->cells, BreakdownCell, i);
      if ((group == NULL || strcmp (group, cell->group) == 0)
          && (component == ELK_TIME_N_COMPONENTS
              || component == cell->component))
        sum += cell->seconds;
    }
  return sum;
}

/**
 * elk_breakdown_get_total:
 * @breakdown: a breakdown
 *
 * Sums every cell, in cell order.  A chip's breakdown adds up to the
 * latency it reports (to rounding).
 *
 * Returns: the total seconds.
 */
double
elk_breakdown_get_total (const ElkBreakdown *breakdown)
{
  return elk_breakdown_get (breakdown, NULL, ELK_TIME_N_COMPONENTS);
}

static const char *const component_names[] = {
  "compute", "shift", "output", "relayout", "sync", "stall", "preload-wait",
};
G_STATIC_ASSERT (G_N_ELEMENTS (component_names) == ELK_TIME_N_COMPONENTS);

/**
 * elk_time_component_to_string:
 * @component: a component
 *
 * Names a component as breakdown.csv writes it.
 *
 * Returns: (transfer none): "compute", "shift", "output", "relayout",
 *   "sync", "stall" or "preload-wait", or "invalid".
 */
const char *
elk_time_component_to_string (ElkTimeComponent component)
{
  return (guint) component < ELK_TIME_N_COMPONENTS ? component_names[component]
                                                   : "invalid";
}

/**
 * elk_time_component_from_string:
 * @name: a component's name, as elk_time_component_to_string() writes it
 * @component: (out): the component
 *
 * Reads a component's name back, as breakdown.csv and results.json
 * write it.
 *
 * Returns: %TRUE if @name names a component.
 */
gboolean
elk_time_component_from_string (const char *name, ElkTimeComponent *component)
{
  for (guint c = 0; c < ELK_TIME_N_COMPONENTS; c++)
    if (g_strcmp0 (name, component_names[c]) == 0)
      {
        *component = (ElkTimeComponent) c;
        return TRUE;
      }
  return FALSE;
}

/**
 * elk_op_get_breakdown_group:
 * @op: an operator
 *
 * The group an operator's time is reported under in a breakdown.  The
 * graph's cost classes (#ElkOpKind) say what an operator computes but not
 * what it is for, so the transformer pieces are recognised by the names
 * the llama frontend gives them (docs/frontend-llama.md): a name with
 * "norm" is "normalisation" (the reductions, element-wise steps and rsqrt
 * of RMSNorm and LayerNorm), one with "softmax" is "softmax" (max, exp,
 * sum, div), one with "rope" is "rope", and a matmul named "attn_score" or
 * "attn_value" is "attention-matmul" (QK^T and PV against the KV cache).
 * Every other operator is grouped by its cost class: "matmul" (the
 * projections, the FFN and the LM head), "elementwise" (element-wise and
 * unary), "reduce", "gather", "slice", "conv", "pool".
 *
 * Returns: (transfer none): the group's name, a static string.
 */
const char *
elk_op_get_breakdown_group (const ElkOp *op)
{
  g_return_val_if_fail (op != NULL, "invalid");
  if (op->name != NULL && strstr (op->name, "norm") != NULL)
    return "normalisation";
  if (op->name != NULL && strstr (op->name, "softmax") != NULL)
    return "softmax";
  if (op->name != NULL && strstr (op->name, "rope") != NULL)
    return "rope";
  if (op->kind == ELK_OP_MATMUL && op->name != NULL
      && (strstr (op->name, "attn_score") != NULL
          || strstr (op->name, "attn_value") != NULL))
    return "attention-matmul";
  if (op->kind == ELK_OP_UNARY)
    return "elementwise";
  return elk_op_kind_to_string (op->kind);
}

/* The journal and results carry a breakdown as one field:
 * "group/component=seconds" cells joined by ';', in cell order, seconds
 * as results print them (%.9g).  NULL for no breakdown. */
char *
elk__breakdown_to_string (const ElkBreakdown *breakdown)
{
  GString *s;

  if (breakdown == NULL)
    return NULL;
  s = g_string_new (NULL);
  for (guint i = 0; i < breakdown->cells->len; i++)
    {
      const BreakdownCell *cell
          = &g_array_index (breakdown->cells, BreakdownCell, i);
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      g_string_append_printf (s, "%s%s/%s=%s", i > 0 ? ";" : "", cell->group,
                              component_names[cell->component],
                              g_ascii_formatd (buf, sizeof buf, "%.9g",
                                               cell->seconds));
    }
  return g_string_free (s, FALSE);
}

/* Splits a field of elk__breakdown_to_string() back into its cells:
 * three strings (group, component, seconds text) per cell.  Returns NULL
 * when the text is not such a field. */
GPtrArray *
elk__breakdown_split (const char *text)
{
  g_autoptr (GPtrArray) out = g_ptr_array_new_with_free_func (g_free);
  g_auto (GStrv) cells = NULL;

  if (text == NULL || *text == '\0')
    return g_steal_pointer (&out);
  cells = g_strsplit (text, ";", -1);
  for (guint i = 0; cells[i] != NULL; i++)
    {
      const char *slash = strchr (cells[i], '/');
      const char *eq = slash != NULL ? strchr (slash, '=') : NULL;
      ElkTimeComponent c;
      g_autofree char *group = NULL, *component = NULL;
      char *end = NULL;

      if (slash == NULL || eq == NULL)
        return NULL;
      group = g_strndup (cells[i], (gsize) (slash - cells[i]));
      component = g_strndup (slash + 1, (gsize) (eq - slash - 1));
      if (!isfinite (g_ascii_strtod (eq + 1, &end)) || !group_is_valid (group)
          || !elk_time_component_from_string (component, &c) || end == eq + 1
          || *end != '\0')
        return NULL;
      g_ptr_array_add (out, g_steal_pointer (&group));
      g_ptr_array_add (out, g_steal_pointer (&component));
      g_ptr_array_add (out, g_strdup (eq + 1));
    }
  return g_steal_pointer (&out);
}
