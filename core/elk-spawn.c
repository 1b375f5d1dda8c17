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
