/* elk-spawn.c: running a child process with a deadline, capturing its
 * output (elk-spawn.h). */
#include "elk-spawn.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* Spawns @argv and appends what it writes to @out and @err until it closes
 * both pipes or the monotonic time reaches @deadline (G_MAXINT64: none), in
 * which case it is killed and @timed_out set.  The child is always reaped:
 * @status is its wait status.  Returns FALSE with @error set only when the
 * child could not be started. */
gboolean
elk__spawn_capture (const char *const *argv,
                    gint64 deadline,
                    GString *out,
                    GString *err,
                    int *status,
                    gboolean *timed_out,
                    GError **error)
{
  int fd_out = -1, fd_err = -1;
  GPid pid;

  *timed_out = FALSE;
  *status = 0;
  if (!g_spawn_async_with_pipes (NULL, (char **) argv, NULL,
                                 G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid,
                                 NULL, &fd_out, &fd_err, error))
    return FALSE;

  /* Read both pipes until the child closes them or the deadline passes. */
  while (fd_out >= 0 || fd_err >= 0)
    {
      struct pollfd fds[2] = { { fd_out, POLLIN, 0 }, { fd_err, POLLIN, 0 } };
      gint64 now = g_get_monotonic_time ();
      int timeout_ms = deadline == G_MAXINT64
                           ? 1000
                           : (int) MAX (0, MIN ((deadline - now) / 1000, 1000));
      int rc;

      if (now >= deadline)
        {
          *timed_out = TRUE;
          kill (pid, SIGKILL);
          break;
        }
      rc = poll (fds, 2, timeout_ms);
      if (rc < 0 && errno != EINTR)
        break;
      for (guint i = 0; i < 2; i++)
        {
          char buf[4096];
          int *fd = i == 0 ? &fd_out : &fd_err;
          ssize_t n;
          if (*fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
            continue;
          n = read (*fd, buf, sizeof buf);
          if (n > 0)
            g_string_append_len (i == 0 ? out : err, buf, n);
          else if (n == 0 || errno != EINTR)
            {
              close (*fd);
              *fd = -1;
            }
        }
    }
  if (fd_out >= 0)
    close (fd_out);
  if (fd_err >= 0)
    close (fd_err);
  while (waitpid (pid, status, 0) < 0 && errno == EINTR)
    ;
  g_spawn_close_pid (pid);
  return TRUE;
}

/**
 * elk__spawn_describe_failure:
 * @point: the point the child ran
 * @timed_out: whether elk__spawn_capture() killed it at the deadline
 * @timeout_s: the limit it had
 * @status: its wait status
 * @err: what it wrote on stderr
 *
 * Why the child that ran @point gave no result, in one line: killed at the
 * deadline, crashed by a signal or exited without a result, followed by the
 * end of its stderr, where the reason is (the last 300 bytes, on one
 * line).  Both drivers that run points in children (elk-runner.c's
 * --isolate and elk-run's MPI driver) report a failed point so.
 * Returns: (transfer full): the text.
 */
char *
elk__spawn_describe_failure (guint point,
                             gboolean timed_out,
                             double timeout_s,
                             int status,
                             const GString *err)
{
  const char *tail = err->len > 300 ? err->str + err->len - 300 : err->str;
  g_autofree char *clean = g_strdelimit (g_strdup (tail), "\n\r\t", ' ');
  g_autofree char *why = NULL;

  g_strstrip (clean);
  if (timed_out)
    why = g_strdup_printf ("point %u timed out after %g s and was killed",
                           point, timeout_s);
  else if (WIFSIGNALED (status))
    why = g_strdup_printf ("point %u crashed: killed by signal %d (%s)", point,
                           WTERMSIG (status), g_strsignal (WTERMSIG (status)));
  else
    why = g_strdup_printf ("point %u: its process exited with status %d "
                           "without a result",
                           point,
                           WIFEXITED (status) ? WEXITSTATUS (status) : -1);
  if (*clean == '\0')
    return g_steal_pointer (&why);
  return g_strdup_printf ("%s; stderr: %s", why, clean);
}
