/* elk-metrics.h: what a chip backend reports after running a program.
 *
 * Times in seconds, sizes in bytes.  The latency breakdown follows Fig 18a of
 * the paper: preload_only_s + execute_only_s + overlap_s + stall_s equals
 * latency_s.
 */
#pragma once

#include <glib.h>
#include <glib-object.h>
#include <elk/elk-visibility.h>

G_BEGIN_DECLS

/**
 * ElkMetrics:
 * @latency_s: end-to-end time of the program.
 * @flops: floating point operations executed.
 * @hbm_bytes: bytes read from HBM.
 * @noc_bytes: bytes moved over the interconnect (preload delivery and
 *   inter-core traffic).
 * @hbm_util: time-averaged fraction of HBM bandwidth used.
 * @noc_util: time-averaged fraction of interconnect bandwidth used.
 * @achieved_flops: @flops / @latency_s.
 * @preload_only_s: time only HBM loading was busy.
 * @execute_only_s: time only execution was busy.
 * @overlap_s: time both were busy.
 * @stall_s: time either was stalled by a busy interconnect.
 * @model: which model produced the numbers ("analytic timeline §3.8", ...).
 *
 * What a chip backend reports after running a program.  A boxed type
 * copied by value (elk_metrics_copy(), elk_metrics_free()).
 */
typedef struct
{
  double latency_s;
  double flops;
  double hbm_bytes;
  double noc_bytes;
  double hbm_util;
  double noc_util;
  double achieved_flops;
  double preload_only_s;
  double execute_only_s;
  double overlap_s;
  double stall_s;
  char *model;
} ElkMetrics;

#define ELK_TYPE_METRICS (elk_metrics_get_type ())
ELK_API GType elk_metrics_get_type (void);
ELK_API ElkMetrics *elk_metrics_new (const char *model);
ELK_API ElkMetrics *elk_metrics_copy (const ElkMetrics *metrics);
ELK_API void elk_metrics_free (ElkMetrics *metrics);
ELK_API const char *elk_metrics_first_difference (const ElkMetrics *a,
                                                  const ElkMetrics *b,
                                                  double *value_a,
                                                  double *value_b);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkMetrics, elk_metrics_free)

G_END_DECLS
