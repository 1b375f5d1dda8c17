/* tests/mpi/test-mpi.c: elk-run under mpirun (issue 11).
 *
 * The results of `mpirun -np 3 elk-run` are byte-identical to a
 * single-process run and to three shards merged; a rank killed midway, or
 * killed by the point it runs, costs that point one retry and the run
 * still completes; without --enable-recovery the job dies and --resume
 * finishes it.
 *
 * Arguments after the GTest ones: the mpirun program and this folder.
 */
#include "elk-test-util.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>

static char *tmpdir;
static const char *mpirun;
static const char *srcdir;

static char **
fixture_env (void)
{
  char **env = elk_test_tool_env (NULL);

  /* Declare a silent rank dead after 2 s instead of 20. */
  return g_environ_setenv (env, "ELK_MPI_HEARTBEAT_TIMEOUT", "2", TRUE);
}

/* argv for `mpirun ... -np N elk-run ARGS`, or plain elk-run for np 0. */
static GPtrArray *
command (int np, gboolean recovery, const char *const *args)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);

  if (np > 0)
    {
      g_ptr_array_add (argv, g_strdup (mpirun));
      g_ptr_array_add (argv, g_strdup ("--oversubscribe"));
      g_ptr_array_add (argv, g_strdup ("--allow-run-as-root"));
      if (recovery)
        g_ptr_array_add (argv, g_strdup ("--enable-recovery"));
      g_ptr_array_add (argv, g_strdup ("-np"));
      g_ptr_array_add (argv, g_strdup_printf ("%d", np));
    }
  g_ptr_array_add (argv, g_strdup (g_getenv ("ELK_RUN")));
  for (guint i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, g_strdup (args[i]));
  g_ptr_array_add (argv, NULL);
  return argv;
}

/* Runs elk-run (under mpirun with np > 0) and returns its exit status. */
static int
run (int np, gboolean recovery, const char *const *args, char **out_stderr)
{
  g_autoptr (GPtrArray) argv = command (np, recovery, args);
  g_auto (GStrv) env = fixture_env ();

  g_test_message ("np %d", np);
  return elk_test_spawn ((const char *const *) argv->pdata, env, NULL,
                         out_stderr);
}

static guint
count (const char *haystack, const char *needle)
{
  guint n = 0;
  for (const char *p = haystack; (p = strstr (p, needle)) != NULL; p++)
    n++;
  return n;
}

/* results.csv and results.json byte for byte; timings.csv has wall
 * times, so only its shape. */
static void
assert_same_results (const char *a, const char *b)
{
  const char *names[] = { "results.csv", "results.json" };
  g_autofree char *ta = elk_test_read_file (a, "timings.csv");
  g_autofree char *tb = elk_test_read_file (b, "timings.csv");

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *x = elk_test_read_file (a, names[i]);
      g_autofree char *y = elk_test_read_file (b, names[i]);
      g_assert_cmpstr (x, ==, y);
    }
  g_assert_cmpuint (count (ta, "\n"), ==, count (tb, "\n"));
}

static guint
count_journal_records (const char *dir)
{
  g_autofree char *path = g_build_filename (dir, "points.journal", NULL);
  g_autofree char *data = NULL;

  if (!g_file_get_contents (path, &data, NULL, NULL))
    return 0;
  return count (data, "\nR\t");
}

static char *
out_dir (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

static void
test_same_results (void)
{
  g_autofree char *path = elk_test_fixture_experiment ("good");
  g_autofree char *single = out_dir ("good-single");
  g_autofree char *mpi = out_dir ("good-mpi");
  g_autofree char *one = out_dir ("good-np1");
  g_autofree char *merged = out_dir ("good-merged");
  g_autofree char *err = NULL;
  g_autofree char *err1 = NULL;
  g_autoptr (GPtrArray) shards = g_ptr_array_new_with_free_func (g_free);

  {
    const char *args[] = { path, "-o", single, "-j", "1", NULL };
    g_assert_cmpint (run (0, FALSE, args, NULL), ==, 0);
  }
  {
    const char *args[] = { path, "-o", mpi, NULL };
    g_assert_cmpint (run (3, FALSE, args, &err), ==, 0);
    g_assert_nonnull (strstr (err, "(3 MPI ranks)"));
  }
  assert_same_results (single, mpi);

  /* One rank is the ordinary thread pool. */
  {
    const char *args[] = { path, "-o", one, NULL };
    g_assert_cmpint (run (1, FALSE, args, &err1), ==, 0);
    g_assert_null (strstr (err1, "MPI ranks"));
  }
  assert_same_results (single, one);

  /* Three shards, each under mpirun -np 2, merged. */
  for (guint k = 1; k <= 3; k++)
    {
      char *dir = g_strdup_printf ("%s/good-shard-%u", tmpdir, k);
      g_autofree char *shard = g_strdup_printf ("--shard=%u/3", k);
      const char *args[] = { path, "-o", dir, shard, "-q", NULL };
      g_assert_cmpint (run (2, FALSE, args, NULL), ==, 0);
      g_ptr_array_add (shards, dir);
    }
  {
    const char *args[]
        = { "--merge",        "-o", merged, shards->pdata[2], shards->pdata[0],
            shards->pdata[1], NULL };
    g_assert_cmpint (run (0, FALSE, args, NULL), ==, 0);
  }
  assert_same_results (single, merged);
}

/* The pid of the MPI rank @rank among mpirun's children, or 0. */
static pid_t
find_rank (GPid launcher, int rank)
{
  g_autofree char *want = g_strdup_printf ("OMPI_COMM_WORLD_RANK=%d", rank);
  DIR *proc = opendir ("/proc");
  struct dirent *entry;
  pid_t found = 0;

  g_assert_nonnull (proc);
  while (found == 0 && (entry = readdir (proc)) != NULL)
    {
      g_autofree char *stat_path = NULL, *env_path = NULL;
      g_autofree char *stat = NULL, *env = NULL;
      gsize env_len = 0;
      const char *paren;
      int ppid = 0;

      if (!g_ascii_isdigit (entry->d_name[0]))
        continue;
      stat_path = g_strdup_printf ("/proc/%s/stat", entry->d_name);
      env_path = g_strdup_printf ("/proc/%s/environ", entry->d_name);
      if (!g_file_get_contents (stat_path, &stat, NULL, NULL)
          || (paren = strrchr (stat, ')')) == NULL
          || sscanf (paren + 1, " %*c %d", &ppid) != 1 || ppid != launcher
          || !g_file_get_contents (env_path, &env, &env_len, NULL))
        continue;
      for (gsize i = 0; i < env_len; i += strlen (env + i) + 1)
        if (strcmp (env + i, want) == 0)
          found = (pid_t) g_ascii_strtoll (entry->d_name, NULL, 10);
    }
  closedir (proc);
  return found;
}

/* Runs elk-run under mpirun -np 3 and, once a few points are in the
 * journal, kills rank 1 with SIGKILL (or, with @stall_s > 0, stops it for
 * that many seconds); returns mpirun's exit status.  stderr goes to
 * @err_path. */
static int
run_and_kill_rank (const char *const *args,
                   gboolean recovery,
                   const char *outdir,
                   const char *err_path,
                   guint stall_s)
{
  g_autoptr (GPtrArray) argv = command (3, recovery, args);
  g_auto (GStrv) env = fixture_env ();
  g_autoptr (GError) error = NULL;
  int err_fd = open (err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  gint64 deadline = g_get_monotonic_time () + 120 * G_USEC_PER_SEC;
  pid_t victim = 0;
  GPid pid;
  int status = 0;

  g_assert_cmpint (err_fd, >=, 0);
  g_assert_true (g_spawn_async_with_fds (NULL, (char **) argv->pdata, env,
                                         G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
                                         &pid, -1, -1, err_fd, &error));
  g_assert_no_error (error);
  close (err_fd);

  while (count_journal_records (outdir) < 3
         && g_get_monotonic_time () < deadline)
    g_usleep (G_USEC_PER_SEC / 100);
  g_assert_cmpuint (count_journal_records (outdir), >=, 3);
  victim = find_rank (pid, 1);
  g_assert_cmpint (victim, >, 0);
  g_test_message ("%s rank 1 (pid %d) after %u points",
                  stall_s > 0 ? "stopping" : "killing", (int) victim,
                  count_journal_records (outdir));
  if (stall_s > 0)
    {
      g_assert_cmpint (kill (victim, SIGSTOP), ==, 0);
      g_usleep (stall_s * G_USEC_PER_SEC);
      g_assert_cmpint (kill (victim, SIGCONT), ==, 0);
    }
  else
    g_assert_cmpint (kill (victim, SIGKILL), ==, 0);

  while (waitpid (pid, &status, WNOHANG) == 0)
    {
      if (g_get_monotonic_time () > deadline)
        {
          kill (pid, SIGKILL);
          waitpid (pid, &status, 0);
          g_assert_not_reached ();
        }
      g_usleep (G_USEC_PER_SEC / 20);
    }
  g_spawn_close_pid (pid);
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

static void
test_rank_killed (void)
{
  g_autofree char *path = g_build_filename (srcdir, "kill.xml", NULL);
  g_autofree char *single = out_dir ("kill-single");
  g_autofree char *mpi = out_dir ("kill-mpi");
  g_autofree char *err_path = out_dir ("kill-mpi.stderr");
  g_autofree char *err = NULL;
  const char *args[] = { path, "-o", mpi, NULL };

  {
    const char *single_args[] = { path, "-o", single, "-q", NULL };
    g_assert_cmpint (run (0, FALSE, single_args, NULL), ==, 4);
  }
  /* Under --enable-recovery mpirun exits 0 whatever rank 0 returns
   * (Open MPI 4.1), so the results are what tells. */
  run_and_kill_rank (args, TRUE, mpi, err_path, 0);
  g_assert_true (g_file_get_contents (err_path, &err, NULL, NULL));
  g_test_message ("%s", err);

  /* Exactly one point was lost with the rank and retried elsewhere. */
  g_assert_cmpuint (count (err, "taking it for dead"), ==, 1);
  g_assert_cmpuint (count (err, "elk-run: retrying point"), ==, 1);
  g_assert_nonnull (strstr (err, "rank 1 sent nothing"));
  g_assert_nonnull (strstr (err, "(3 MPI ranks)"));
  g_assert_cmpuint (count_journal_records (mpi), ==, 48);
  assert_same_results (single, mpi);
}

/* A rank stopped for longer than the heartbeat timeout is taken for dead,
 * then used again when it speaks; the results do not change. */
static void
test_rank_stalled (void)
{
  g_autofree char *path = g_build_filename (srcdir, "kill.xml", NULL);
  g_autofree char *single = out_dir ("kill-single");
  g_autofree char *mpi = out_dir ("stall-mpi");
  g_autofree char *err_path = out_dir ("stall-mpi.stderr");
  g_autofree char *err = NULL;
  const char *args[] = { path, "-o", mpi, NULL };

  g_assert_true (g_file_test (single, G_FILE_TEST_IS_DIR));
  g_assert_cmpint (run_and_kill_rank (args, TRUE, mpi, err_path, 3), ==, 0);
  g_assert_true (g_file_get_contents (err_path, &err, NULL, NULL));
  g_test_message ("%s", err);
  g_assert_nonnull (strstr (err, "taking it for dead"));
  g_assert_nonnull (strstr (err, "rank 1 was only stalled; using it again"));
  g_assert_cmpuint (count_journal_records (mpi), ==, 48);
  assert_same_results (single, mpi);
}

static void
test_point_kills_rank (void)
{
  g_autofree char *path = elk_test_fixture_experiment ("isolate");
  g_autofree char *single = out_dir ("crash-single");
  g_autofree char *mpi = out_dir ("crash-mpi");
  g_autofree char *err = NULL;
  g_autofree char *csv = NULL;

  {
    const char *args[] = { path, "-o", single, "--isolate", "-q", NULL };
    g_assert_cmpint (run (0, FALSE, args, NULL), ==, 3);
  }
  /* Point 1 segfaults in-process on the worker that gets it: that rank
   * dies, the point is retried in a child process on another rank,
   * crashes there too and is recorded as --isolate would record it. */
  {
    const char *args[] = { path, "-o", mpi, NULL };
    run (3, TRUE, args, &err);
  }
  g_assert_cmpuint (count (err, "elk-run: retrying point 1 on rank"), ==, 1);
  csv = elk_test_read_file (mpi, "results.csv");
  g_assert_nonnull (strstr (csv, "point 1 crashed: killed by signal 11"));
  assert_same_results (single, mpi);
}

/* Point 1 hangs until --timeout kills it, 8 s, while the other ranks
 * have no work left: they wait for longer than 3 heartbeat timeouts (6 s,
 * after which a worker takes rank 0 for gone) thanks to rank 0's
 * heartbeats. */
static void
test_hang_timeout (void)
{
  g_autofree char *path = elk_test_fixture_experiment ("isolate-hang");
  g_autofree char *single = out_dir ("hang-single");
  g_autofree char *mpi = out_dir ("hang-mpi");
  const char *single_args[]
      = { path, "-o", single, "--isolate", "--timeout", "8", "-q", NULL };
  const char *args[]
      = { path, "-o", mpi, "--isolate", "--timeout", "8", "-q", NULL };

  g_assert_cmpint (run (0, FALSE, single_args, NULL), ==, 3);
  g_assert_cmpint (run (3, FALSE, args, NULL), ==, 3);
  assert_same_results (single, mpi);
}

/* Without --enable-recovery Open MPI ends the job when a rank dies; the
 * journal keeps what was finished and --resume (here under mpirun too)
 * completes it. */
static void
test_no_recovery_then_resume (void)
{
  g_autofree char *path = g_build_filename (srcdir, "kill.xml", NULL);
  g_autofree char *single = out_dir ("kill-single");
  g_autofree char *mpi = out_dir ("abort-mpi");
  g_autofree char *err_path = out_dir ("abort-mpi.stderr");
  g_autofree char *csv = g_build_filename (mpi, "results.csv", NULL);
  g_autofree char *err = NULL;
  const char *args[] = { path, "-o", mpi, NULL };
  const char *resume[] = { path, "-o", mpi, "--resume", NULL };

  if (!g_file_test (single, G_FILE_TEST_IS_DIR))
    {
      const char *single_args[] = { path, "-o", single, "-q", NULL };
      g_assert_cmpint (run (0, FALSE, single_args, NULL), ==, 4);
    }
  g_assert_cmpint (run_and_kill_rank (args, FALSE, mpi, err_path, 0), !=, 0);
  g_assert_false (g_file_test (csv, G_FILE_TEST_EXISTS));
  g_assert_cmpuint (count_journal_records (mpi), <, 48);

  g_assert_cmpint (run (3, FALSE, resume, &err), ==, 4);
  g_assert_nonnull (strstr (err, "resuming:"));
  assert_same_results (single, mpi);
}

int
main (int argc, char *argv[])
{
  int rc;

  g_test_init (&argc, &argv, NULL);
  if (argc < 3)
    {
      g_printerr ("usage: test-mpi [GTEST-OPTIONS] MPIRUN SOURCE-DIR\n");
      return 1;
    }
  mpirun = argv[1];
  srcdir = argv[2];
  tmpdir = g_dir_make_tmp ("elk-test-mpi-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);

  g_test_add_func ("/mpi/same-results", test_same_results);
  g_test_add_func ("/mpi/rank-killed", test_rank_killed);
  g_test_add_func ("/mpi/rank-stalled", test_rank_stalled);
  g_test_add_func ("/mpi/point-kills-rank", test_point_kills_rank);
  g_test_add_func ("/mpi/hang-timeout", test_hang_timeout);
  g_test_add_func ("/mpi/no-recovery-then-resume",
                   test_no_recovery_then_resume);
  rc = g_test_run ();

  {
    g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);
    g_assert_cmpint (system (cmd), ==, 0);
  }
  g_free (tmpdir);
  return rc;
}
