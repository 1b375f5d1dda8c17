/* elk-experiment.h: experiment files and running them.
 *
 * An experiment file (format="1", schema experiments/elk-experiment.rng)
 * names a frontend, a chip, a default allocator, one or more schedulers
 * (each with a label, so one file compares designs), optional sweep axes
 * whose cartesian product gives the experiment points, and an output
 * folder.  elk_experiment_load() parses and validates all of it, including
 * every <param> value against the plugin's property, before anything runs;
 * elk_experiment_run() then runs every point and writes the results.
 */
#pragma once

#include <glib-object.h>
#include <elk/elk-registry.h>

G_BEGIN_DECLS

/**
 * ElkExperiment:
 *
 * An experiment file, loaded and validated by elk_experiment_load(): a
 * frontend, a chip, a default allocator, one or more labelled schedulers,
 * optional sweep axes whose cartesian product gives the experiment
 * points, and an output folder.  elk_experiment_run() runs every point
 * and writes the results.
 */
#define ELK_TYPE_EXPERIMENT (elk_experiment_get_type ())
ELK_API
G_DECLARE_FINAL_TYPE (ElkExperiment, elk_experiment, ELK, EXPERIMENT, GObject)

/**
 * ElkRunOptions:
 * @n_jobs: points run at once (at least 1).
 * @output_dir: (nullable): overrides the file's <output dir>.
 * @progress: print one progress line per point on stderr.
 * @resume: keep the points an earlier run of the same experiment already
 *   finished in the output folder, and run only the rest.
 * @shard_k: with @shard_n > 0, run only the points with
 *   point % shard_n == shard_k - 1.
 * @shard_n: number of shards, 0 for all points.
 * @isolate: run each point in a child process (@self_exe
 *   --internal-point), so that a crash or hang fails only that point.
 * @timeout_s: with @isolate, kill a point after this many seconds (0 for
 *   no limit).
 * @self_exe: (nullable): the elk-run executable, for @isolate.
 * @trace_point: a point to record a trace of (as if the file said
 *   <output trace="true"/> for that point only), or -1.
 *
 * How elk_experiment_run() runs an experiment.  The strings belong to the
 * caller.
 */
typedef struct
{
  guint n_jobs;
  const char *output_dir;
  gboolean progress;
  gboolean resume;
  guint shard_k;
  guint shard_n;
  gboolean isolate;
  double timeout_s;
  const char *self_exe;
  gint trace_point;
} ElkRunOptions;

/**
 * ElkRunStatus:
 * @ELK_RUN_OK: every point ran.
 * @ELK_RUN_POINTS_FAILED: some points failed; their rows say why.
 * @ELK_RUN_PLUGIN_FAILED: some points failed because a plugin broke its
 *   contract or failed on its own.
 *
 * How a run went, beyond the errors that stop it (elk-run's exit status
 * follows it).
 */
typedef enum
{
  ELK_RUN_OK,
  ELK_RUN_POINTS_FAILED,
  ELK_RUN_PLUGIN_FAILED,
} ElkRunStatus;

/**
 * ElkRunProgressFunc:
 * @experiment: the experiment being run
 * @done: points this run has finished so far, 1 for the first
 * @total: points this run has to run (points kept by a resume excluded)
 * @point: the point that has just finished
 * @point_status: %ELK_RUN_OK if every design of @point ran, otherwise how
 *   it failed (its rows say why)
 * @wall_s: how long @point took, in seconds
 * @user_data: (closure): the data given with the function
 *
 * Called by elk_experiment_run_with_progress() after each point is
 * recorded in the journal, in the thread that called it (never in a
 * worker), so it may touch the caller's state without locking.
 */
typedef void (*ElkRunProgressFunc) (ElkExperiment *experiment,
                                    guint done,
                                    guint total,
                                    guint point,
                                    ElkRunStatus point_status,
                                    double wall_s,
                                    gpointer user_data);

ELK_API ElkExperiment *elk_experiment_load (const char *path,
                                            ElkRegistry *registry,
                                            GError **error);
ELK_API ElkExperiment *elk_experiment_load_from_data (const char *data,
                                                      gsize length,
                                                      const char *path,
                                                      ElkRegistry *registry,
                                                      GError **error);
ELK_API const char *elk_experiment_get_name (ElkExperiment *self);
ELK_API const char *elk_experiment_get_hash (ElkExperiment *self);
ELK_API void elk_experiment_set_quick (ElkExperiment *self);
ELK_API gboolean elk_experiment_can_trace (ElkExperiment *self);
ELK_API void elk_experiment_set_trace_point (ElkExperiment *self,
                                            gint point);
ELK_API guint elk_experiment_get_n_points (ElkExperiment *self);
ELK_API guint elk_experiment_get_n_schedulers (ElkExperiment *self);
ELK_API const char *elk_experiment_get_output_dir (ElkExperiment *self);
ELK_API char *elk_experiment_dup_point_label (ElkExperiment *self,
                                              guint point);
ELK_API GObject *elk_experiment_create_component (ElkExperiment *self,
                                                  guint point,
                                                  GType kind,
                                                  guint scheduler_index,
                                                  GError **error);
ELK_API const char *elk_experiment_get_scheduler_label (ElkExperiment *self,
                                                        guint index);
ELK_API gboolean elk_experiment_run (ElkExperiment *self,
                                     const ElkRunOptions *options,
                                     ElkRunStatus *status,
                                     GError **error);
ELK_API gboolean elk_experiment_run_with_progress (ElkExperiment *self,
                                                   const ElkRunOptions *options,
                                                   ElkRunProgressFunc func,
                                                   gpointer user_data,
                                                   ElkRunStatus *status,
                                                   GError **error);
ELK_API void elk_experiment_set_output_dir (ElkExperiment *self,
                                            const char *dir);
ELK_API const char *elk_experiment_get_schema (void);
ELK_API const char *elk_experiment_get_path (ElkExperiment *self);
ELK_API char *elk_experiment_run_point_line (ElkExperiment *self,
                                             guint point,
                                             const char *trace_dir);
/**
 * ElkRunSession:
 *
 * A run in progress, for drivers other than elk_experiment_run()'s thread
 * pool (MPI ranks, job schedulers): begin, run the points it lists with
 * elk_experiment_run_point_line() wherever you like, add their lines as
 * they come back, finish.
 */
typedef struct _ElkRunSession ElkRunSession;

ELK_API ElkRunSession *elk_run_session_begin (ElkExperiment *self,
                                              const ElkRunOptions *options,
                                              GError **error);
ELK_API const guint *elk_run_session_get_todo (ElkRunSession *session,
                                               guint *n_points);
ELK_API gboolean elk_run_session_add_line (ElkRunSession *session,
                                           const char *line,
                                           double wall_s,
                                           GError **error);
ELK_API gboolean elk_run_session_finish (ElkRunSession *session,
                                         ElkRunStatus *status,
                                         GError **error);
ELK_API void elk_run_session_abort (ElkRunSession *session);
ELK_API char *elk_experiment_dup_failed_point_line (ElkExperiment *self,
                                                    guint point,
                                                    const char *message);
ELK_API gboolean elk_results_merge (const char *const *dirs,
                                    const char *output_dir,
                                    ElkRunStatus *status,
                                    GError **error);

/* Parameters as text, converted as <param> is (for tools that take them
 * on the command line, like elk-check-plugin). */
ELK_API gboolean elk_param_parse (GType type,
                                  const char *name,
                                  const char *text,
                                  const char *base_dir,
                                  GValue *value,
                                  GError **error);

G_END_DECLS
