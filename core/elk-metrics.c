/* elk-metrics.c: run metrics. */
#include "config.h"

#include "elk-private.h"

#include <elk/elk-metrics.h>

ELK_DEFINE_BOXED_TYPE (ElkMetrics, elk_metrics, elk_metrics_copy,
                     elk_metrics_free)

/**
 * elk_metrics_new:
 * @model: which model produces the numbers, stated in results.
 * Returns: (transfer full): zeroed metrics.
 */
ElkMetrics *
elk_metrics_new (const char *model)
{
  ElkMetrics *metrics = g_new0 (ElkMetrics, 1);
  metrics->model = g_strdup (model);
  return metrics;
}

ElkMetrics *
elk_metrics_copy (const ElkMetrics *metrics)
{
  ElkMetrics *copy = g_memdup2 (metrics, sizeof (ElkMetrics));
  copy->model = g_strdup (metrics->model);
  return copy;
}

void
elk_metrics_free (ElkMetrics *metrics)
{
  if (metrics == NULL)
    return;
  g_free (metrics->model);
  g_free (metrics);
}
