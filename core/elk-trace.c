/* elk-trace.c: Chrome / Perfetto trace recording and writing.
 *
 * Tracks map onto the trace format's processes (group) and threads (name);
 * spans are complete events ("ph":"X") and counters "ph":"C", with times in
 * microseconds as the format wants.  Names are interned once in a string
 * table so that events stay small fixed-size structs.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <glib/gstdio.h>

#include "elk-private.h"

typedef struct
{
  guint group;     /* string id */
  guint name;      /* string id */
  guint pid, tid;
} Track;

typedef struct
{
  guint track;
  guint name;      /* string id */
  gboolean counter;
  double time_s;
  double value;    /* duration for spans */
} Event;

struct _ElkTrace
{
  gatomicrefcount ref_count;
  GMutex lock;
  GPtrArray *strings;        /* char * */
  GHashTable *string_ids;    /* char * -> id + 1 */
  GArray *tracks;            /* Track */
  GArray *events;            /* Event */
  GHashTable *group_pids;    /* string id -> pid */
};

/**
 * elk_trace_get_type:
 *
 * The boxed type of #ElkTrace.  Copying the boxed value takes a reference
 * (elk_trace_ref()) and freeing it drops one (elk_trace_unref()).
 *
 * Returns: the #GType of #ElkTrace.
 */
ELK_DEFINE_BOXED_TYPE (ElkTrace, elk_trace, elk_trace_ref, elk_trace_unref)

/**
 * elk_trace_new:
 *
 * Creates an empty trace.
 *
 * Returns: (transfer full): an empty trace; drop it with elk_trace_unref().
 */
ElkTrace *
elk_trace_new (void)
{
  ElkTrace *trace = g_new0 (ElkTrace, 1);

  g_atomic_ref_count_init (&trace->ref_count);
  g_mutex_init (&trace->lock);
  trace->strings = g_ptr_array_new_with_free_func (g_free);
  trace->string_ids = g_hash_table_new (g_str_hash, g_str_equal);
  trace->tracks = g_array_new (FALSE, FALSE, sizeof (Track));
  trace->events = g_array_new (FALSE, FALSE, sizeof (Event));
  trace->group_pids = g_hash_table_new (NULL, NULL);
  return trace;
}

/**
 * elk_trace_ref:
 * @trace: a trace
 *
 * Takes a reference to @trace.
 *
 * Returns: (transfer full): @trace
 */
ElkTrace *
elk_trace_ref (ElkTrace *trace)
{
  g_atomic_ref_count_inc (&trace->ref_count);
  return trace;
}

/**
 * elk_trace_unref:
 * @trace: (transfer full): a trace
 *
 * Drops a reference to @trace and frees it with the last one.
 */
void
elk_trace_unref (ElkTrace *trace)
{
  if (!g_atomic_ref_count_dec (&trace->ref_count))
    return;
  g_mutex_clear (&trace->lock);
  g_hash_table_unref (trace->string_ids);
  g_ptr_array_unref (trace->strings);
  g_array_unref (trace->tracks);
  g_array_unref (trace->events);
  g_hash_table_unref (trace->group_pids);
  g_free (trace);
}

static guint
intern (ElkTrace *trace, const char *s)
{
  gpointer id = g_hash_table_lookup (trace->string_ids, s);
  char *copy;

  if (id != NULL)
    return GPOINTER_TO_UINT (id) - 1;
  copy = g_strdup (s);
  g_ptr_array_add (trace->strings, copy);
  g_hash_table_insert (trace->string_ids, copy,
                       GUINT_TO_POINTER (trace->strings->len));
  return trace->strings->len - 1;
}

/**
 * elk_trace_add_track:
 * @trace: a trace
 * @group: a process-level group ("chip 0", "HBM", "links")
 * @name: the track ("core 17 compute", "controller 3")
 *
 * Adds a track.  Both strings are copied.
 *
 * Returns: the track id for elk_trace_add_span() and
 *   elk_trace_add_counter().
 */
guint
elk_trace_add_track (ElkTrace *trace, const char *group, const char *name)
{
  Track track;
  gpointer pid;

  g_mutex_lock (&trace->lock);
  track.group = intern (trace, group);
  track.name = intern (trace, name);
  pid = g_hash_table_lookup (trace->group_pids,
                             GUINT_TO_POINTER (track.group + 1));
  if (pid == NULL)
    {
      pid = GUINT_TO_POINTER (g_hash_table_size (trace->group_pids) + 1);
      g_hash_table_insert (trace->group_pids,
                           GUINT_TO_POINTER (track.group + 1), pid);
    }
  track.pid = GPOINTER_TO_UINT (pid);
  track.tid = trace->tracks->len + 1;
  g_array_append_val (trace->tracks, track);
  g_mutex_unlock (&trace->lock);
  return trace->tracks->len - 1;
}

static void
add_event (ElkTrace *trace,
           guint track,
           const char *name,
           gboolean counter,
           double time_s,
           double value)
{
  Event event;

  g_return_if_fail (track < trace->tracks->len);
  g_mutex_lock (&trace->lock);
  event.track = track;
  event.name = intern (trace, name);
  event.counter = counter;
  event.time_s = time_s;
  event.value = value;
  g_array_append_val (trace->events, event);
  g_mutex_unlock (&trace->lock);
}

/**
 * elk_trace_add_span:
 * @trace: a trace
 * @track: a track id from elk_trace_add_track()
 * @name: what the track was busy with (copied)
 * @start_s: when it started, in seconds of simulated time
 * @duration_s: how long it lasted, in seconds
 *
 * Records that @track was busy with @name from @start_s for @duration_s.
 */
void
elk_trace_add_span (ElkTrace *trace,
                    guint track,
                    const char *name,
                    double start_s,
                    double duration_s)
{
  add_event (trace, track, name, FALSE, start_s, duration_s);
}

/**
 * elk_trace_add_counter:
 * @trace: a trace
 * @track: a track id from elk_trace_add_track()
 * @name: the counter (copied)
 * @time_s: when it took @value, in seconds of simulated time
 * @value: the counter's value
 *
 * Records the value of counter @name of @track at @time_s.
 */
void
elk_trace_add_counter (ElkTrace *trace,
                       guint track,
                       const char *name,
                       double time_s,
                       double value)
{
  add_event (trace, track, name, TRUE, time_s, value);
}

/**
 * elk_trace_get_n_events:
 * @trace: a trace
 *
 * Counts the events recorded so far.
 *
 * Returns: the number of spans and counter samples recorded.
 */
guint
elk_trace_get_n_events (const ElkTrace *trace)
{
  return trace->events->len;
}

static void
write_string (FILE *out, const char *s)
{
  fputc ('"', out);
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    {
      if (*p == '"' || *p == '\\')
        fprintf (out, "\\%c", *p);
      else if (*p < 0x20)
        fprintf (out, "\\u%04x", *p);
      else
        fputc (*p, out);
    }
  fputc ('"', out);
}

/**
 * elk_trace_write:
 * @trace: a trace
 * @path: (type filename): the JSON file to write
 * @error: return location for a #GError
 *
 * Writes the trace as Chrome / Perfetto JSON under a temporary name and
 * renames it into place, so that a reader never sees half a file.
 *
 * Returns: %TRUE on success; %FALSE with @error set (a #GFileError) if the
 *   file cannot be written.
 */
gboolean
elk_trace_write (const ElkTrace *trace, const char *path, GError **error)
{
  g_autofree char *part = g_strconcat (path, ".part", NULL);
  FILE *out = g_fopen (part, "w");
  char a[G_ASCII_DTOSTR_BUF_SIZE], b[G_ASCII_DTOSTR_BUF_SIZE];
  gboolean first = TRUE;

  if (out == NULL)
    {
      int saved = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "%s: cannot create: %s", part, g_strerror (saved));
      return FALSE;
    }

  fputs ("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", out);
  /* Names for processes and threads first. */
  for (guint i = 0; i < trace->tracks->len; i++)
    {
      const Track *t = &g_array_index (trace->tracks, Track, i);
      fprintf (out, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,"
                    "\"args\":{\"name\":",
               first ? "" : ",\n", t->pid);
      write_string (out, trace->strings->pdata[t->group]);
      fprintf (out, "}},\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,"
                    "\"tid\":%u,\"args\":{\"name\":",
               t->pid, t->tid);
      write_string (out, trace->strings->pdata[t->name]);
      fputs ("}}", out);
      first = FALSE;
    }
  for (guint i = 0; i < trace->events->len; i++)
    {
      const Event *e = &g_array_index (trace->events, Event, i);
      const Track *t = &g_array_index (trace->tracks, Track, e->track);
      fputs (first ? "{\"ph\":" : ",\n{\"ph\":", out);
      first = FALSE;
      fputs (e->counter ? "\"C\"" : "\"X\"", out);
      fprintf (out, ",\"pid\":%u,\"tid\":%u,\"name\":", t->pid, t->tid);
      write_string (out, trace->strings->pdata[e->name]);
      g_ascii_formatd (a, sizeof a, "%.6f", e->time_s * 1e6);
      if (e->counter)
        {
          g_ascii_formatd (b, sizeof b, "%.9g", e->value);
          fprintf (out, ",\"ts\":%s,\"args\":{\"value\":%s}}", a, b);
        }
      else
        {
          g_ascii_formatd (b, sizeof b, "%.6f", e->value * 1e6);
          fprintf (out, ",\"ts\":%s,\"dur\":%s}", a, b);
        }
    }
  fputs ("\n]}\n", out);
  if (ferror (out) | (fclose (out) != 0))
    {
      int saved = errno;
      g_unlink (part);
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "%s: write failed: %s", part, g_strerror (saved));
      return FALSE;
    }
  if (g_rename (part, path) != 0)
    {
      int saved = errno;
      g_unlink (part);
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "%s: cannot rename into place: %s", path,
                   g_strerror (saved));
      return FALSE;
    }
  return TRUE;
}
