/* elk-timeline.h: the contention-aware analytic timeline (stable API).
 *
 * Runs a program forward in time under the device rules R1-R3 of
 * elk-program.h and the load model of elk_chip_spec_get_load_time(), with
 * the interconnect contention between preloads and executions resolved in
 * one of two ways (elk-paper.md §3.8).  The analytic chip measures programs
 * with it; a scheduler or a chip of a third party can use it to price a
 * program exactly as the analytic chip does.
 *
 * This header is part of the stable API: the functions and the layout of
 * the structs below change only with the library's ABI version.
 */
#pragma once

#include <elk/elk-visibility.h>
#include <elk/elk-chip-spec.h>
#include <elk/elk-program.h>

G_BEGIN_DECLS

/**
 * ElkTimelinePriority:
 * @ELK_TIMELINE_PRELOAD_FIRST: preloads issued earlier hold the links: an
 *   execution's own traffic gets only the interconnect time the
 *   overlapping preloads leave idle, and what is missing is added to the
 *   execution as a stall (the Elk artifact's delay_comp=True).
 * @ELK_TIMELINE_EXECUTION_FIRST: an execution's traffic goes first: the
 *   preloads it overlaps get the interconnect only while it computes, and
 *   the delivery time they miss stretches the last overlapping preload
 *   (and pushes the later ones back).
 *
 * Who yields when an execution and the preloads it overlaps want the same
 * interconnect time.
 *
 * Since: 0.1
 */
typedef enum
{
  ELK_TIMELINE_PRELOAD_FIRST,
  ELK_TIMELINE_EXECUTION_FIRST,
} ElkTimelinePriority;

/**
 * ElkTimelineOp:
 * @hbm_bytes: bytes the operator's preload reads from HBM (0: the preload
 *   takes no time).
 * @cold_bytes: per-core bytes the preload delivers.
 * @min_load_s: the shortest the preload may take (a program that asks for
 *   a throttled preload gets a longer one); 0 for no floor.
 * @exec_s: the execution's duration without contention, data
 *   distribution included.
 * @shift_s: interconnect time the execution's own traffic needs.
 * @noc_bytes: bytes the execution moves between cores (reported only).
 *
 * What the timeline needs to know about one operator.
 * elk_timeline_op_init_from_cost() fills it from what elk_program_derive()
 * derives, which is how the analytic chip prices a program.
 *
 * Since: 0.1
 */
typedef struct
{
  guint64 hbm_bytes;
  guint64 cold_bytes;
  double min_load_s;
  double exec_s;
  double shift_s;
  double noc_bytes;
} ElkTimelineOp;

/**
 * ElkTimelineResult:
 * @latency_s: when the last execution ends.
 * @hbm_busy_s: total time HBM is busy reading.
 * @noc_busy_s: total interconnect time used by deliveries and executions.
 * @noc_bytes: bytes moved between cores (deliveries and executions).
 * @preload_only_s: time only the memory pipeline runs (the chip waits).
 * @execute_only_s: time only executions run.
 * @overlap_s: time a preload and an execution run together.
 * @stall_s: time an execution waits for interconnect time, or a preload
 *   is stretched by execution traffic.
 *
 * What a timeline run measures.  The four time shares add up to
 * @latency_s (the breakdown of elk-paper.md Fig 18a).
 *
 * Since: 0.1
 */
typedef struct
{
  double latency_s;
  double hbm_busy_s;
  double noc_busy_s;
  double noc_bytes;
  double preload_only_s;
  double execute_only_s;
  double overlap_s;
  double stall_s;
} ElkTimelineResult;

ELK_API void elk_timeline_op_init_from_cost (ElkTimelineOp *op,
                                             const ElkOpCost *cost);

ELK_API gboolean elk_timeline_run (const ElkChipSpec *spec,
                                   double preload_share,
                                   ElkTimelinePriority priority,
                                   guint n_ops,
                                   const ElkTimelineOp *ops,
                                   guint n_steps,
                                   const ElkStep *steps,
                                   ElkTimelineResult *result,
                                   GError **error);

ELK_API gboolean elk_timeline_run_timed (const ElkChipSpec *spec,
                                         double preload_share,
                                         ElkTimelinePriority priority,
                                         guint n_ops,
                                         const ElkTimelineOp *ops,
                                         guint n_steps,
                                         const ElkStep *steps,
                                         ElkTimelineResult *result,
                                         double *exec_start,
                                         double *exec_end,
                                         double *exec_stall,
                                         GError **error);

G_END_DECLS
