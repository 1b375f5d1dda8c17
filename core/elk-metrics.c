/* elk-metrics.c: run metrics. */
#include "config.h"

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
 * Copies @metrics, model string included.
 *
 * Returns: (transfer full): a copy; free it with elk_metrics_free().
 */
ElkMetrics *
elk_metrics_copy (const ElkMetrics *metrics)
{
  ElkMetrics *copy = g_memdup2 (metrics, sizeof (ElkMetrics));
  copy->model = g_strdup (metrics->model);
  return copy;
}

/**
 * elk_metrics_free:
 * @metrics: (transfer full) (nullable): metrics, or %NULL
 *
 * Frees @metrics and its model string.
 */
void
elk_metrics_free (ElkMetrics *metrics)
{
  if (metrics == NULL)
    return;
  g_free (metrics->model);
  g_free (metrics);
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
 *   in which @a and @b differ, or %NULL when every number is identical.
 *   The model strings are not compared.
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
  return NULL;
}
