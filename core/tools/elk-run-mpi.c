/* elk-run-mpi.c: elk-run's MPI driver, `mpirun -np N elk-run sweep.xml`.
 *
 * Every rank has loaded the experiment (plugins, parameters, model files)
 * before it gets here.  Rank 0 owns the run: it opens the output folder's
 * journal with elk_run_session_begin() (so --resume and --shard work as in
 * a single process), hands the points out one at a time to whichever rank
 * asks (points differ in cost by 100x, so there is no static split), adds
 * the journal lines that come back, and writes the results with
 * elk_run_session_finish().  The results files are made from the journal
 * in point order, so they are byte-identical to a single-process run.
 *
 * Ranks 1..N-1 run their points in-process, on a compute thread, while
 * their main thread sends rank 0 a heartbeat every second.  Only main
 * threads call MPI (MPI_THREAD_FUNNELED).
 *
 * Rank 0 also runs points while it waits, one at a time, each in a child
 * process (`elk-run --internal-point`): a plugin that crashes there must
 * not take the journal's owner with it.
 *
 * A rank that sends nothing for ELK_MPI_HEARTBEAT_TIMEOUT seconds (default
 * 20) is dead to rank 0: it gets no more points, and the point it was
 * running is retried once, in a child process (so that a point that kills
 * whatever runs it costs no second rank), on the next rank that asks.  If
 * the retry's rank dies too, the point is recorded as failed.  Open MPI 4.1
 * (no ULFM) survives a dead rank only under `mpirun --enable-recovery`;
 * without it mpirun ends the whole job, and `--resume` continues from the
 * journal.  See docs/clusters.md.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mpi.h>

#include "elk-run-mpi.h"
#include "elk-run.h"
#include "../elk-spawn.h"

/* Message tags.  Workers send HELLO once, then a RESULT per point, and
 * HEARTBEATs while a point runs; rank 0 answers HELLO and each RESULT with
 * WORK (a point, or -1 to stop), and sends HEARTBEATs to workers that wait
 * for work while the last points run elsewhere. */
enum
{
  TAG_HELLO = 1,
  TAG_WORK,
  TAG_HEARTBEAT,
  TAG_RESULT,
};

/* WORK payload: the point (-1: stop) and whether to run it in a child
 * process. */
typedef struct
{
  int point;
  int isolated;
} Work;

/* What a worker or rank 0's local slot is doing, as rank 0 sees it. */
typedef enum
{
  SLOT_STARTING, /* no HELLO yet */
  SLOT_IDLE,
  SLOT_BUSY,
  SLOT_DEAD,
} SlotState;

typedef struct
{
  SlotState state;
  int point;
  guint attempt;     /* 1 for the first run of the point, 2 for a retry */
  gint64 last_heard; /* monotonic µs */
} Slot;

typedef struct
{
  guint point;
  guint attempt;
  int died_on; /* the rank that died running the first attempt */
} Job;

/* One point run by a thread, for rank 0's local slot and the workers'
 * compute thread. */
typedef struct
{
  ElkExperiment *experiment;
  const ElkRunOptions *options;
  const char *trace_dir;
  char *const *child_args; /* elk-run's own arguments, for child runs */
  guint point;
  gboolean isolated;
  GAsyncQueue *done; /* receives this PointRun back */
  char *line;        /* out */
  double wall_s;     /* out */
} PointRun;

static double
heartbeat_timeout_s (void)
{
  const char *text = g_getenv ("ELK_MPI_HEARTBEAT_TIMEOUT");
  double value;
  char *end = NULL;

  if (text == NULL || *text == '\0')
    return 20;
  value = g_ascii_strtod (text, &end);
  if (end == NULL || *end != '\0' || !(value >= 0.5))
    {
      g_printerr ("elk-run: ignoring ELK_MPI_HEARTBEAT_TIMEOUT='%s' (want "
                  "seconds >= 0.5); using 20\n",
                  text);
      return 20;
    }
  return value;
}

static double
seconds_since (gint64 t)
{
  return (double) (g_get_monotonic_time () - t) / G_USEC_PER_SEC;
}

/**
 * elk_run_mpi_active:
 *
 * Returns: %TRUE if this process was started by an MPI launcher with two
 *   or more ranks (and ELK_MPI is not "0").  Decided from the launcher's
 *   environment, without initialising MPI, so a plain `elk-run` never
 *   touches it.
 */
gboolean
elk_run_mpi_active (void)
{
  const char *names[]
      = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS" };

  if (g_strcmp0 (g_getenv ("ELK_MPI"), "0") == 0)
    return FALSE;
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      const char *size = g_getenv (names[i]);
      if (size != NULL && g_ascii_strtoull (size, NULL, 10) >= 2)
        return TRUE;
    }
  return FALSE;
}

/* elk-run's arguments as it was started (argv[1..]), from
 * /proc/self/cmdline: a child run gets the same options (-o, --quick,
 * --trace, ...) plus --internal-point. */
static char **
dup_own_arguments (void)
{
  g_autofree char *data = NULL;
  gsize length = 0;
  GPtrArray *args = g_ptr_array_new ();
  gboolean first = TRUE;

  if (g_file_get_contents ("/proc/self/cmdline", &data, &length, NULL))
    for (gsize i = 0; i < length; i += strlen (data + i) + 1)
      {
        if (!first)
          g_ptr_array_add (args, g_strdup (data + i));
        first = FALSE;
      }
  g_ptr_array_add (args, NULL);
  return (char **) g_ptr_array_free (args, FALSE);
}

/* Runs one point in a child process (`elk-run ARGS --internal-point P`)
 * and returns its journal line; a child that crashes, hangs past
 * --timeout or exits without a line gives a failed line whose message has
 * the same words as --isolate's. */
static char *
run_point_in_child (PointRun *run)
{
  g_autofree char *point_arg
      = g_strdup_printf ("--internal-point=%u", run->point);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (GString) out = g_string_new (NULL);
  g_autoptr (GString) err = g_string_new (NULL);
  double timeout_s = run->options->isolate ? run->options->timeout_s : 0;
  gint64 start = g_get_monotonic_time ();
  gint64 deadline = timeout_s > 0
                        ? start + (gint64) (timeout_s * G_USEC_PER_SEC)
                        : G_MAXINT64;
  gboolean timed_out = FALSE;
  int status = 0;

  g_ptr_array_add (argv, (gpointer) run->options->self_exe);
  for (guint i = 0; run->child_args[i] != NULL; i++)
    g_ptr_array_add (argv, run->child_args[i]);
  g_ptr_array_add (argv, point_arg);
  g_ptr_array_add (argv, NULL);

  if (!elk__spawn_capture ((const char *const *) argv->pdata, deadline, out,
                           err, &status, &timed_out, &error))
    return elk_experiment_dup_failed_point_line (run->experiment, run->point,
                                                 error->message);

  if (!timed_out && WIFEXITED (status) && WEXITSTATUS (status) == 0
      && out->len > 0)
    return g_string_free (g_steal_pointer (&out), FALSE);

  {
    g_autofree char *why = elk__spawn_describe_failure (run->point, timed_out,
                                                        timeout_s, status, err);

    return elk_experiment_dup_failed_point_line (run->experiment, run->point,
                                                 why);
  }
}

static gpointer
point_thread (gpointer data)
{
  PointRun *run = data;
  gint64 start = g_get_monotonic_time ();

  if (run->isolated)
    run->line = run_point_in_child (run);
  else
    run->line = elk_experiment_run_point_line (run->experiment, run->point,
                                               run->trace_dir);
  run->wall_s = seconds_since (start);
  g_async_queue_push (run->done, run);
  return NULL;
}

static PointRun *
point_run_new (ElkExperiment *experiment,
               const ElkRunOptions *options,
               char *const *child_args,
               GAsyncQueue *done,
               guint point,
               gboolean isolated)
{
  PointRun *run = g_new0 (PointRun, 1);
  run->experiment = experiment;
  run->options = options;
  run->trace_dir = options->output_dir != NULL
                       ? options->output_dir
                       : elk_experiment_get_output_dir (experiment);
  run->child_args = child_args;
  run->done = done;
  run->point = point;
  run->isolated = isolated;
  return run;
}

static void
point_run_free (PointRun *run)
{
  g_free (run->line);
  g_free (run);
}

/* Sends without blocking forever: gives up after timeout_s if the
 * receiver is gone (a large message needs the receiver to take part). */
static gboolean
send_with_deadline (
    const void *data, int count, int dest, int tag, double timeout_s)
{
  MPI_Request request;
  gint64 start = g_get_monotonic_time ();
  int flag = 0;

  if (MPI_Isend (data, count, MPI_BYTE, dest, tag, MPI_COMM_WORLD, &request)
      != MPI_SUCCESS)
    return FALSE;
  while (!flag)
    {
      if (MPI_Test (&request, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return FALSE;
      if (flag)
        break;
      if (seconds_since (start) > timeout_s)
        {
          MPI_Cancel (&request);
          MPI_Request_free (&request);
          return FALSE;
        }
      g_usleep (1000);
    }
  return TRUE;
}

/* Waits for rank 0's next WORK message, taking its HEARTBEATs on the
 * way; FALSE if rank 0 sent nothing at all for timeout_s.  Polls and
 * sleeps: Open MPI's blocking receive spins a core, which on a machine
 * with one rank per core takes it from the points. */
static gboolean
wait_for_work (double timeout_s, Work *work)
{
  gint64 last = g_get_monotonic_time ();

  for (;;)
    {
      MPI_Status status;
      int flag = 0;

      if (MPI_Iprobe (0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status)
          != MPI_SUCCESS)
        return FALSE;
      if (flag && status.MPI_TAG == TAG_WORK)
        {
          MPI_Recv (work, sizeof *work, MPI_BYTE, 0, TAG_WORK, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE);
          return TRUE;
        }
      if (flag)
        {
          char buf[16];
          int count = 0;
          MPI_Get_count (&status, MPI_BYTE, &count);
          MPI_Recv (buf, MIN (count, (int) sizeof buf), MPI_BYTE, 0,
                    status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          last = g_get_monotonic_time ();
          continue;
        }
      if (seconds_since (last) > timeout_s)
        return FALSE;
      g_usleep (1000);
    }
}

/* A worker (rank > 0): ask for points, run them, send their lines. */
static int
worker_main (int rank,
             ElkExperiment *experiment,
             const ElkRunOptions *options,
             char *const *child_args,
             double dead_after_s)
{
  g_autoptr (GAsyncQueue) done = g_async_queue_new ();
  /* Rank 0 answers at once, or sends heartbeats while there is no work
   * yet, unless it is gone; give it a generous margin for a slow disk
   * under its journal. */
  double answer_timeout_s = 3 * dead_after_s;
  guint heartbeat_ms = (guint) MIN (1000, dead_after_s * 1000 / 4);
  char hello = 0;

  if (!send_with_deadline (&hello, 1, 0, TAG_HELLO, answer_timeout_s))
    goto lost;
  for (;;)
    {
      Work work;
      PointRun *run;
      g_autofree char *message = NULL;
      GThread *thread;
      int heartbeat;

      if (!wait_for_work (answer_timeout_s, &work))
        goto lost;
      if (work.point < 0)
        {
          /* A rank died: leave without MPI_Finalize (see the
           * coordinator). */
          if (work.isolated)
            {
              fflush (NULL);
              _exit (EXIT_SUCCESS);
            }
          break;
        }

      run = point_run_new (experiment, options, child_args, done,
                           (guint) work.point,
                           work.isolated || options->isolate);
      thread = g_thread_new ("elk-point", point_thread, run);
      heartbeat = work.point;
      while (g_async_queue_timeout_pop (done, heartbeat_ms * 1000) == NULL)
        MPI_Send (&heartbeat, sizeof heartbeat, MPI_BYTE, 0, TAG_HEARTBEAT,
                  MPI_COMM_WORLD);
      g_thread_join (thread);

      message = g_strdup_printf ("%.17g\n%s", run->wall_s, run->line);
      point_run_free (run);
      /* If this fails, rank 0 has either finished without this point
       * (it took this rank for dead and a retry ran elsewhere; a STOP is
       * waiting) or is gone (the probe above times out). */
      send_with_deadline (message, (int) strlen (message), 0, TAG_RESULT,
                          answer_timeout_s);
    }
  MPI_Finalize ();
  return EXIT_SUCCESS;

lost:
  g_printerr ("elk-run: rank %d: rank 0 stopped answering; giving up\n", rank);
  MPI_Abort (MPI_COMM_WORLD, EXIT_OUTPUT_FAILED);
  return EXIT_OUTPUT_FAILED;
}

/* Rank 0's view of the run. */
typedef struct
{
  ElkExperiment *experiment;
  const ElkRunOptions *options;
  char *const *child_args;
  ElkRunSession *session;
  int n_ranks;
  gint64 last_keepalive;
  Slot *slots;        /* [n_ranks]; slots[0] is rank 0's own */
  GQueue jobs;        /* Job *, retries first */
  gboolean *recorded; /* per point */
  guint n_todo;
  guint n_recorded;
  double dead_after_s;
  GAsyncQueue *local_done; /* PointRun * from rank 0's own slot */
  GThread *local_thread;
  GError *error; /* the first journal error */
} Coordinator;

static void
record_line (Coordinator *c, guint point, const char *line, double wall_s)
{
  if (c->recorded[point])
    return; /* a rank declared dead reported after all */
  c->recorded[point] = TRUE;
  c->n_recorded++;
  if (c->error == NULL)
    elk_run_session_add_line (c->session, line, wall_s, &c->error);
}

static void
send_work (int rank, int point, gboolean isolated)
{
  Work work = { point, isolated };
  MPI_Send (&work, sizeof work, MPI_BYTE, rank, TAG_WORK, MPI_COMM_WORLD);
}

/* Gives @rank (idle) its next job, or stops it if none is left.  A rank
 * with nothing to do while retries are still running elsewhere waits. */
static void
assign (Coordinator *c, int rank)
{
  Job *job = g_queue_pop_head (&c->jobs);
  Slot *slot = &c->slots[rank];

  /* A retry whose point came back after all (see handle_message) is
   * dropped. */
  while (job != NULL && c->recorded[job->point])
    {
      g_free (job);
      job = g_queue_pop_head (&c->jobs);
    }
  if (job == NULL)
    return;
  slot->state = SLOT_BUSY;
  slot->point = (int) job->point;
  slot->attempt = job->attempt;
  slot->last_heard = g_get_monotonic_time ();
  if (job->attempt > 1)
    g_printerr ("elk-run: retrying point %u on rank %d (rank %d died "
                "running it)\n",
                job->point, rank, job->died_on);
  if (rank == 0)
    {
      /* Rank 0's own points always run in a child process. */
      PointRun *run = point_run_new (c->experiment, c->options, c->child_args,
                                     c->local_done, job->point, TRUE);
      if (c->local_thread != NULL)
        g_thread_join (c->local_thread);
      c->local_thread = g_thread_new ("elk-point", point_thread, run);
    }
  else
    send_work (rank, (int) job->point, job->attempt > 1);
  g_free (job);
}

/* A rank went quiet: it gets nothing more, and its point is retried once
 * (in a child process) or, on its second death, recorded as failed. */
static void
declare_dead (Coordinator *c, int rank)
{
  Slot *slot = &c->slots[rank];
  guint point = (guint) slot->point;

  slot->state = SLOT_DEAD;
  if (c->recorded[point])
    return;
  if (slot->attempt == 1)
    {
      Job *job = g_new0 (Job, 1);
      g_printerr ("elk-run: rank %d sent nothing for %g s while running "
                  "point %u; taking it for dead, point %u will be retried\n",
                  rank, c->dead_after_s, point, point);
      job->point = point;
      job->attempt = 2;
      job->died_on = rank;
      g_queue_push_head (&c->jobs, job);
    }
  else
    {
      g_autofree char *why = g_strdup_printf (
          "point %u: the ranks that ran it died twice (the second was rank %d, "
          "silent for %g s); not retried again",
          point, rank, c->dead_after_s);
      g_autofree char *line
          = elk_experiment_dup_failed_point_line (c->experiment, point, why);
      g_printerr ("elk-run: rank %d died running the retry of point %u; "
                  "recording it as failed\n",
                  rank, point);
      record_line (c, point, line, 0);
    }
}

/* Takes one message from a worker, if there is one. */
static gboolean
handle_message (Coordinator *c)
{
  MPI_Status status;
  int flag = 0, count = 0, rank;
  Slot *slot;

  if (MPI_Iprobe (MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status)
          != MPI_SUCCESS
      || !flag)
    return FALSE;
  rank = status.MPI_SOURCE;
  slot = &c->slots[rank];
  MPI_Get_count (&status, MPI_BYTE, &count);

  /* A rank taken for dead that speaks again was only stalled: it may
   * work again (its point's retry, if still queued, is then dropped as
   * soon as its own result is in). */
  if (slot->state == SLOT_DEAD)
    {
      g_printerr ("elk-run: rank %d was only stalled; using it again\n", rank);
      slot->state = SLOT_BUSY;
    }

  if (status.MPI_TAG == TAG_RESULT)
    {
      g_autofree char *message = g_malloc (count + 1);
      char *line;
      double wall_s;
      MPI_Recv (message, count, MPI_BYTE, rank, TAG_RESULT, MPI_COMM_WORLD,
                MPI_STATUS_IGNORE);
      message[count] = '\0';
      wall_s = g_ascii_strtod (message, &line);
      if (slot->state == SLOT_BUSY && line != NULL && *line == '\n')
        record_line (c, (guint) slot->point, line + 1, wall_s);
      if (slot->state != SLOT_DEAD)
        slot->state = SLOT_IDLE;
    }
  else
    {
      char buf[16];
      MPI_Recv (buf, MIN (count, (int) sizeof buf), MPI_BYTE, rank,
                status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (status.MPI_TAG == TAG_HELLO && slot->state == SLOT_STARTING)
        slot->state = SLOT_IDLE;
    }
  if (slot->state != SLOT_DEAD)
    slot->last_heard = g_get_monotonic_time ();
  return TRUE;
}

static gboolean
all_workers_started (const Coordinator *c)
{
  for (int r = 1; r < c->n_ranks; r++)
    if (c->slots[r].state == SLOT_STARTING)
      return FALSE;
  return TRUE;
}

static int
coordinator_main (int n_ranks,
                  ElkExperiment *experiment,
                  const ElkRunOptions *options,
                  char *const *child_args,
                  double dead_after_s)
{
  g_autoptr (GError) error = NULL;
  Coordinator c = { 0 };
  ElkRunStatus status = ELK_RUN_OK;
  const guint *todo;
  gboolean ok;
  guint n_dead = 0;
  gint64 started;

  if (g_getenv ("OMPI_COMM_WORLD_SIZE") != NULL
      && g_strcmp0 (g_getenv ("OMPI_MCA_orte_enable_recovery"), "1") != 0
      && options->progress)
    g_printerr ("elk-run: note: without mpirun --enable-recovery, a rank "
                "that dies ends the whole run (the journal keeps the "
                "finished points for --resume)\n");

  c.session = elk_run_session_begin (experiment, options, &error);
  if (c.session == NULL)
    {
      g_printerr ("elk-run: %s\n", error->message);
      for (int r = 1; r < n_ranks; r++)
        send_work (r, -1, FALSE);
      MPI_Finalize ();
      return EXIT_OUTPUT_FAILED;
    }

  c.experiment = experiment;
  c.options = options;
  c.child_args = child_args;
  c.n_ranks = n_ranks;
  c.dead_after_s = dead_after_s;
  c.slots = g_new0 (Slot, n_ranks);
  c.recorded = g_new0 (gboolean, elk_experiment_get_n_points (experiment));
  c.local_done = g_async_queue_new ();
  c.slots[0].state = SLOT_IDLE;
  started = g_get_monotonic_time ();
  todo = elk_run_session_get_todo (c.session, &c.n_todo);
  for (guint i = 0; i < c.n_todo; i++)
    {
      Job *job = g_new0 (Job, 1);
      job->point = todo[i];
      job->attempt = 1;
      g_queue_push_tail (&c.jobs, job);
    }

  while (c.n_recorded < c.n_todo)
    {
      gboolean busy = FALSE;
      PointRun *run;

      while (handle_message (&c))
        busy = TRUE;
      while ((run = g_async_queue_try_pop (c.local_done)) != NULL)
        {
          record_line (&c, run->point, run->line, run->wall_s);
          c.slots[0].state = SLOT_IDLE;
          point_run_free (run);
          busy = TRUE;
        }
      for (int r = 1; r < n_ranks; r++)
        if (c.slots[r].state == SLOT_BUSY
            && seconds_since (c.slots[r].last_heard) > dead_after_s)
          {
            declare_dead (&c, r);
            n_dead++;
          }
      /* Workers first, then rank 0's own slot.  Rank 0 waits until every
       * worker has said hello (or for one heartbeat timeout at most), so
       * that which rank runs which point does not depend on how fast the
       * workers start: rank 0 runs its points in child processes, where a
       * crash is recorded, while a worker that crashes in-process dies and
       * its point is retried. */
      for (int r = 1; r < n_ranks; r++)
        if (c.slots[r].state == SLOT_IDLE)
          assign (&c, r);
      if (c.slots[0].state == SLOT_IDLE
          && (all_workers_started (&c)
              || seconds_since (started) > dead_after_s))
        assign (&c, 0);
      /* Workers left without work while the last points run elsewhere
       * hear from rank 0 once a second, so they keep waiting. */
      if (seconds_since (c.last_keepalive) >= 1)
        {
          char beat = 0;
          for (int r = 1; r < n_ranks; r++)
            if (c.slots[r].state == SLOT_IDLE)
              MPI_Send (&beat, 1, MPI_BYTE, r, TAG_HEARTBEAT, MPI_COMM_WORLD);
          c.last_keepalive = g_get_monotonic_time ();
        }
      if (!busy)
        g_usleep (1000);
    }

  /* Stop every rank, the dead included: one declared dead may only have
   * been stalled.  After a death, the stop also tells the survivors to
   * leave without MPI_Finalize, whose closing fence would wait for the
   * dead rank (Open MPI 4.1 without ULFM hangs there now and then). */
  for (int r = 1; r < n_ranks; r++)
    send_work (r, -1, n_dead > 0);
  if (c.local_thread != NULL)
    g_thread_join (c.local_thread);

  if (c.error != NULL)
    {
      g_printerr ("elk-run: %s\n", c.error->message);
      elk_run_session_abort (c.session);
      ok = FALSE;
    }
  else
    {
      ok = elk_run_session_finish (c.session, &status, &error);
      if (!ok)
        g_printerr ("elk-run: %s\n", error->message);
    }
  g_clear_error (&c.error);
  g_queue_clear_full (&c.jobs, g_free);
  g_async_queue_unref (c.local_done);
  g_free (c.recorded);
  g_free (c.slots);

  if (options->progress && n_dead > 0)
    g_printerr ("elk-run: %u rank(s) died during the run; their points "
                "were retried\n",
                n_dead);
  /* The results are on disk (journal and results files, each synced or
   * renamed into place) before this point, so skipping MPI_Finalize after
   * a death loses nothing. */
  if (n_dead == 0)
    MPI_Finalize ();
  if (!ok)
    return EXIT_OUTPUT_FAILED;
  if (options->progress)
    g_printerr ("elk-run: results in %s (%d MPI ranks)\n",
                options->output_dir != NULL
                    ? options->output_dir
                    : elk_experiment_get_output_dir (experiment),
                n_ranks);
  return elk_run_exit_status (status);
}

/**
 * elk_run_mpi_main:
 * @experiment: the loaded experiment (every rank loads it itself)
 * @options: elk-run's options; n_jobs is ignored (one point per rank at a
 *   time), isolate and timeout_s apply on every rank
 *
 * Runs the experiment across the ranks of MPI_COMM_WORLD.  Call it on
 * every rank; rank 0 writes the results.
 *
 * Returns: elk-run's exit code (on rank 0; 0 on the other ranks).
 */
int
elk_run_mpi_main (ElkExperiment *experiment, const ElkRunOptions *options)
{
  g_auto (GStrv) child_args = NULL;
  double dead_after_s = heartbeat_timeout_s ();
  int provided = 0, rank = 0, n_ranks = 1, code;

  if (MPI_Init_thread (NULL, NULL, MPI_THREAD_FUNNELED, &provided)
      != MPI_SUCCESS)
    {
      g_printerr ("elk-run: MPI_Init_thread failed\n");
      return EXIT_OUTPUT_FAILED;
    }
  /* A dead peer must be an error code to look at, not an abort. */
  MPI_Comm_set_errhandler (MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  MPI_Comm_size (MPI_COMM_WORLD, &n_ranks);
  if (provided < MPI_THREAD_FUNNELED)
    {
      g_printerr ("elk-run: the MPI library gives thread level %d, elk-run "
                  "needs MPI_THREAD_FUNNELED\n",
                  provided);
      MPI_Abort (MPI_COMM_WORLD, EXIT_OUTPUT_FAILED);
      return EXIT_OUTPUT_FAILED;
    }

  child_args = dup_own_arguments ();
  if (rank == 0)
    code = coordinator_main (n_ranks, experiment, options, child_args,
                             dead_after_s);
  else
    code = worker_main (rank, experiment, options, child_args, dead_after_s);
  return code;
}
