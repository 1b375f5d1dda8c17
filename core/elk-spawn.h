/* elk-spawn.h: running a child process with a deadline, capturing its
 * output.  Private: compiled into libelk (elk-runner.c's --isolate) and
 * into elk-run's MPI driver (core/tools/elk-run-mpi.c), which each run a
 * point in a child elk-run.  Not installed. */
#pragma once

#include <glib.h>

gboolean elk__spawn_capture (const char *const *argv,
                             gint64 deadline,
                             GString *out,
                             GString *err,
                             int *status,
                             gboolean *timed_out,
                             GError **error);
char *elk__spawn_describe_failure (guint point,
                                   gboolean timed_out,
                                   double timeout_s,
                                   int status,
                                   const GString *err);
