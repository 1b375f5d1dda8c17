/* elk-trace.h: timelines that chip backends record for people to look at.
 *
 * A backend that supports tracing receives an ElkTrace from elk-run (when
 * the experiment's <output trace="true"/> asks for it) and adds tracks
 * (one per core sample, link, HBM controller...) with spans and counters
 * in seconds of simulated time.  elk-run writes it as a Chrome / Perfetto
 * JSON trace (trace-<point>-<label>.json beside the results), which
 * ui.perfetto.dev and chrome://tracing open directly.  Events are kept in
 * plain arrays; adding one allocates nothing but amortised array growth.
 */
#pragma once

#include <glib-object.h>
#include <elk/elk-visibility.h>

G_BEGIN_DECLS

/**
 * ElkTrace:
 *
 * Timelines a chip backend records while it runs a program, written as a
 * Chrome / Perfetto JSON trace.  A reference-counted boxed type
 * (elk_trace_ref(), elk_trace_unref()).
 */
typedef struct _ElkTrace ElkTrace;

#define ELK_TYPE_TRACE (elk_trace_get_type ())
ELK_API GType elk_trace_get_type (void);

ELK_API ElkTrace *elk_trace_new (void);
ELK_API ElkTrace *elk_trace_ref (ElkTrace *trace);
ELK_API void elk_trace_unref (ElkTrace *trace);

ELK_API guint elk_trace_add_track (ElkTrace *trace,
                                   const char *group,
                                   const char *name);
ELK_API void elk_trace_add_span (ElkTrace *trace,
                                 guint track,
                                 const char *name,
                                 double start_s,
                                 double duration_s);
ELK_API void elk_trace_add_counter (ElkTrace *trace,
                                    guint track,
                                    const char *name,
                                    double time_s,
                                    double value);
ELK_API guint elk_trace_get_n_events (const ElkTrace *trace);
ELK_API gboolean elk_trace_write (const ElkTrace *trace,
                                  const char *path,
                                  GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkTrace, elk_trace_unref)

G_END_DECLS
