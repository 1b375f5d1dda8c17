/* elk-runner.c: running every point of an experiment.
 *
 * For each point: the frontend loads the graph, the chip describes itself,
 * core/plan builds the plan tables once, and every scheduler of the
 * experiment compiles a program with its allocator, which the chip then
 * runs (DESIGN.md §1).  Points run on a thread pool of --jobs threads;
 * their rows are written strictly in point order as soon as all earlier
 * points are done, so the results do not depend on the thread count.  A
 * failing point does not stop the sweep: its rows say "failed" and why,
 * and the run's status reports it.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "elk-experiment-private.h"

const char *elk__experiment_axis_value_text (ElkExperiment *self,
                                             guint point,
                                             guint a);

#define N_COLUMNS 36

enum
{
  COL_EXPERIMENT, COL_POINT, COL_MODEL, COL_PHASE, COL_BATCH, COL_SEQ,
  COL_CHIP, COL_TOPOLOGY, COL_CORES, COL_SRAM, COL_HBM_BW, COL_NOC_BW,
  COL_FRONTEND, COL_SCHEDULER, COL_ALLOCATOR, COL_BACKEND, COL_LATENCY,
  COL_IDEAL, COL_BOUND, COL_FLOPS, COL_HBM_BYTES, COL_NOC_BYTES,
  COL_HBM_UTIL, COL_NOC_UTIL, COL_ACHIEVED, COL_PRELOAD_ONLY,
  COL_EXECUTE_ONLY, COL_OVERLAP, COL_STALL, COL_N_OPS, COL_N_ORDERS,
  COL_LABEL, COL_STATUS, COL_ERROR, COL_ESTIMATE, COL_METRICS_MODEL,
};

G_STATIC_ASSERT (COL_METRICS_MODEL + 1 == N_COLUMNS);

typedef struct
{
  char **values;        /* N_COLUMNS + axes strings, any may be NULL */
  guint n_values;
  char *timing[7];   /* experiment, point, label, plan, compile, run, rss */
  gboolean is_ideal;
  double latency_s;
} Row;

typedef struct
{
  guint point;
  GPtrArray *rows;      /* Row * */
  gboolean failed;
  gboolean plugin_failed;
  double wall_s;
} PointResult;

typedef struct
{
  ElkExperiment *experiment;
  GAsyncQueue *done;
  guint plan_threads;
  const char *trace_dir;
} RunContext;

static char *
fmt_double (double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  if (isnan (v))
    return g_strdup ("");
  return g_strdup (g_ascii_formatd (buf, sizeof buf, "%.9g", v));
}

static char *
fmt_u64 (guint64 v)
{
  return g_strdup_printf ("%" G_GUINT64_FORMAT, v);
}

static void
row_free (Row *row)
{
  /* Not g_strfreev: empty fields are NULL in the middle of the array. */
  for (guint i = 0; i < row->n_values; i++)
    g_free (row->values[i]);
  g_free (row->values);
  for (guint i = 0; i < G_N_ELEMENTS (row->timing); i++)
    g_free (row->timing[i]);
  g_free (row);
}

static void
point_result_free (PointResult *result)
{
  g_ptr_array_unref (result->rows);
  g_free (result);
}

static void
set (Row *row, guint column, char *value)
{
  g_free (row->values[column]);
  row->values[column] = value;
}

static guint64
peak_rss_bytes (void)
{
  struct rusage usage;
  if (getrusage (RUSAGE_SELF, &usage) != 0)
    return 0;
  return (guint64) usage.ru_maxrss * 1024;
}

static gboolean
is_plugin_error (const GError *error)
{
  return error->domain == ELK_PLUGIN_ERROR;
}

/* Runs one scheduler at one point and fills its row. */
static void
run_design (ElkExperiment *self,
            guint point,
            guint s,
            ElkGraph *graph,
            const ElkChipSpec *spec,
            const ElkPlanSet *plans,
            ElkChip *chip,
            const char *trace_dir,
            Row *row,
            PointResult *result)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) scheduler = NULL;
  g_autoptr (GObject) allocator = NULL;
  g_autoptr (ElkProgram) program = NULL;
  g_autoptr (ElkMetrics) metrics = NULL;
  gint64 t0 = g_get_monotonic_time (), t1, t2;
  double bound;

  scheduler = elk_experiment_create_component (self, point,
                                               ELK_TYPE_SCHEDULER, s, &error);
  if (scheduler != NULL)
    allocator = elk_experiment_create_component (self, point,
                                                 ELK_TYPE_ALLOCATOR, s,
                                                 &error);
  if (allocator != NULL)
    program = elk_scheduler_schedule (ELK_SCHEDULER (scheduler), plans,
                                      ELK_ALLOCATOR (allocator), &error);
  t1 = g_get_monotonic_time ();
  if (program != NULL && self->trace)
    {
      g_autoptr (ElkTrace) trace = elk_trace_new ();
      g_autofree char *name = g_strdup_printf ("trace-%u-%s.json", point,
                                               row->values[COL_LABEL]);
      g_autofree char *path = g_build_filename (trace_dir, name, NULL);
      metrics = elk_chip_run_traced (chip, program, plans, trace, &error);
      if (metrics != NULL && !elk_trace_write (trace, path, &error))
        g_clear_pointer (&metrics, elk_metrics_free);
    }
  else if (program != NULL)
    metrics = elk_chip_run (chip, program, plans, &error);
  t2 = g_get_monotonic_time ();

  row->timing[4] = fmt_double ((double) (t1 - t0) / G_USEC_PER_SEC);
  row->timing[5] = fmt_double ((double) (t2 - t1) / G_USEC_PER_SEC);

  if (program != NULL)
    {
      set (row, COL_N_ORDERS, fmt_u64 (elk_program_get_n_orders (program)));
      set (row, COL_ESTIMATE,
           fmt_double (elk_program_get_estimate (program)));
    }

  /* The physical lower bound: all FLOPs at peak MatMul rate, or all HBM
   * bytes at full HBM bandwidth, whichever takes longer.  A backend that
   * reports less has a bug, so the row fails. */
  bound = MAX (elk_graph_get_total_flops (graph) / spec->matmul_flops,
               (double) elk_graph_get_hbm_bytes (graph) / spec->hbm_bw);
  if (metrics != NULL && metrics->latency_s < bound * (1 - 1e-9))
    {
      g_set_error (&error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_BELOW_BOUND,
                   "%s reported %.6g s for '%s', below the physical bound "
                   "%.6g s (max of FLOPs/peak and HBM bytes/bandwidth)",
                   G_OBJECT_TYPE_NAME (chip), metrics->latency_s,
                   row->values[COL_LABEL], bound);
      g_clear_pointer (&metrics, elk_metrics_free);
    }

  if (metrics == NULL)
    {
      set (row, COL_STATUS, g_strdup ("failed"));
      set (row, COL_ERROR, g_strdup (error->message));
      result->failed = TRUE;
      if (is_plugin_error (error))
        result->plugin_failed = TRUE;
      return;
    }

  row->latency_s = metrics->latency_s;
  set (row, COL_STATUS, g_strdup ("ok"));
  set (row, COL_LATENCY, fmt_double (metrics->latency_s));
  set (row, COL_FLOPS, fmt_double (metrics->flops));
  set (row, COL_HBM_BYTES, fmt_double (metrics->hbm_bytes));
  set (row, COL_NOC_BYTES, fmt_double (metrics->noc_bytes));
  set (row, COL_HBM_UTIL, fmt_double (metrics->hbm_util));
  set (row, COL_NOC_UTIL, fmt_double (metrics->noc_util));
  set (row, COL_ACHIEVED, fmt_double (metrics->achieved_flops));
  set (row, COL_PRELOAD_ONLY, fmt_double (metrics->preload_only_s));
  set (row, COL_EXECUTE_ONLY, fmt_double (metrics->execute_only_s));
  set (row, COL_OVERLAP, fmt_double (metrics->overlap_s));
  set (row, COL_STALL, fmt_double (metrics->stall_s));
  set (row, COL_METRICS_MODEL, g_strdup (metrics->model));
}

static const char *
attr (ElkGraph *graph, const char *key)
{
  const char *value = graph != NULL ? elk_graph_get_attribute (graph, key)
                                    : NULL;
  return value != NULL ? value : "";
}

static PointResult *
run_point (ElkExperiment *self,
           guint point,
           guint plan_threads,
           const char *trace_dir)
{
  PointResult *result = g_new0 (PointResult, 1);
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) frontend = NULL;
  g_autoptr (GObject) chip = NULL;
  g_autoptr (ElkGraph) graph = NULL;
  g_autoptr (ElkChipSpec) spec = NULL;
  g_autoptr (ElkPlanSet) plans = NULL;
  gint64 start = g_get_monotonic_time ();
  ElkPlanOptions options = { 0 };
  guint n_axes = self->axes->len;
  double ideal = NAN;
  double plan_s = 0;

  result->point = point;
  result->rows = g_ptr_array_new_with_free_func ((GDestroyNotify) row_free);

  frontend = elk_experiment_create_component (self, point, ELK_TYPE_FRONTEND,
                                              0, &error);
  if (frontend != NULL)
    graph = elk_frontend_load (ELK_FRONTEND (frontend), &error);
  if (graph != NULL)
    chip = elk_experiment_create_component (self, point, ELK_TYPE_CHIP, 0,
                                            &error);
  if (chip != NULL)
    spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
  if (spec != NULL)
    {
      gint64 t0 = g_get_monotonic_time ();
      options.n_threads = plan_threads;
      plans = elk_plan_set_new (graph, spec, &options, &error);
      plan_s = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
    }

  for (guint s = 0; s < self->schedulers->len; s++)
    {
      ElkComponent *sc = self->schedulers->pdata[s];
      ElkComponent *ac = elk__experiment_allocator_for (self, s);
      Row *row = g_new0 (Row, 1);

      row->n_values = N_COLUMNS + n_axes;
      row->values = g_new0 (char *, row->n_values + 1);
      row->latency_s = NAN;
      row->is_ideal = strcmp (sc->feature->name, "ideal") == 0;
      set (row, COL_EXPERIMENT, g_strdup (self->name));
      set (row, COL_POINT, fmt_u64 (point));
      set (row, COL_MODEL, g_strdup (graph != NULL && *attr (graph, "model")
                                       ? attr (graph, "model")
                                       : (graph ? elk_graph_get_name (graph)
                                                : "")));
      set (row, COL_PHASE, g_strdup (attr (graph, "phase")));
      set (row, COL_BATCH, g_strdup (attr (graph, "batch")));
      set (row, COL_SEQ, g_strdup (attr (graph, "seq")));
      set (row, COL_FRONTEND, g_strdup (self->frontend->feature->name));
      set (row, COL_SCHEDULER, g_strdup (sc->feature->name));
      set (row, COL_ALLOCATOR, g_strdup (ac->feature->name));
      set (row, COL_BACKEND, g_strdup (self->chip->feature->name));
      set (row, COL_LABEL, g_strdup (sc->label));
      if (graph != NULL)
        set (row, COL_N_OPS, fmt_u64 (elk_graph_get_n_ops (graph)));
      if (spec != NULL)
        {
          set (row, COL_CHIP, g_strdup (spec->name));
          set (row, COL_TOPOLOGY,
               g_strdup (elk_topology_to_string (spec->topology)));
          set (row, COL_CORES, fmt_u64 (spec->cores));
          set (row, COL_SRAM, fmt_u64 (spec->sram_per_core));
          set (row, COL_HBM_BW, fmt_double (spec->hbm_bw));
          set (row, COL_NOC_BW, fmt_double (elk_chip_spec_get_noc_bw (spec)));
          set (row, COL_BOUND,
               fmt_double (MAX (elk_graph_get_total_flops (graph)
                                  / spec->matmul_flops,
                                (double) elk_graph_get_hbm_bytes (graph)
                                  / spec->hbm_bw)));
        }
      for (guint a = 0; a < n_axes; a++)
        row->values[N_COLUMNS + a]
          = g_strdup (elk__experiment_axis_value_text (self, point, a));
      row->timing[0] = g_strdup (self->name);
      row->timing[1] = fmt_u64 (point);
      row->timing[2] = g_strdup (sc->label);

      if (plans != NULL)
        run_design (self, point, s, graph, spec, plans, ELK_CHIP (chip),
                    trace_dir, row, result);
      else
        {
          set (row, COL_STATUS, g_strdup ("failed"));
          set (row, COL_ERROR, g_strdup (error->message));
          result->failed = TRUE;
          if (is_plugin_error (error))
            result->plugin_failed = TRUE;
        }
      if (row->is_ideal && !isnan (row->latency_s))
        ideal = row->latency_s;
      g_ptr_array_add (result->rows, row);
    }

  /* Every row of the point carries the Ideal design's latency, when the
   * experiment has one, beside its own. */
  for (guint i = 0; i < result->rows->len; i++)
    {
      Row *row = result->rows->pdata[i];
      set (row, COL_IDEAL, fmt_double (ideal));
      row->timing[3] = fmt_double (plan_s);
      row->timing[6] = fmt_u64 (peak_rss_bytes ());
    }
  result->wall_s = (double) (g_get_monotonic_time () - start)
                   / G_USEC_PER_SEC;
  return result;
}

static void
pool_func (gpointer data, gpointer user_data)
{
  RunContext *ctx = user_data;
  guint point = GPOINTER_TO_UINT (data) - 1;
  g_async_queue_push (ctx->done,
                      run_point (ctx->experiment, point, ctx->plan_threads,
                                 ctx->trace_dir));
}

static GPtrArray *
collect_plugin_versions (ElkExperiment *self)
{
  GPtrArray *list = g_ptr_array_new_with_free_func (g_free);
  GHashTable *seen = g_hash_table_new (g_str_hash, g_str_equal);
  ElkComponent *all[64];
  guint n = 0;

  all[n++] = self->frontend;
  all[n++] = self->chip;
  if (self->allocator != NULL)
    all[n++] = self->allocator;
  for (guint i = 0; i < self->schedulers->len && n + 2 < G_N_ELEMENTS (all);
       i++)
    {
      ElkComponent *c = self->schedulers->pdata[i];
      all[n++] = c;
      if (c->allocator != NULL)
        all[n++] = c->allocator;
    }
  for (guint i = 0; i < n; i++)
    {
      ElkPlugin *plugin = all[i]->feature->plugin;
      char *line;
      if (plugin == NULL)
        continue;
      line = g_strdup_printf ("%s %s (abi %u)", elk_plugin_get_name (plugin),
                              elk_plugin_get_version (plugin),
                              elk_plugin_get_abi_version (plugin));
      if (g_hash_table_contains (seen, line))
        {
          g_free (line);
          continue;
        }
      g_hash_table_add (seen, line);
      g_ptr_array_add (list, line);
    }
  g_ptr_array_sort (list, (GCompareFunc) g_ascii_strcasecmp);
  g_hash_table_unref (seen);
  return list;
}

static void
print_progress (ElkExperiment *self,
                guint done,
                PointResult *result,
                gint64 start)
{
  double elapsed = (double) (g_get_monotonic_time () - start)
                   / G_USEC_PER_SEC;
  double eta = done > 0 ? elapsed / done * (self->n_points - done) : 0;
  g_autofree char *label = elk_experiment_dup_point_label (self,
                                                           result->point);

  g_printerr ("[%u/%u] point %u%s%s %s in %.2f s; elapsed %.1f s, ETA "
              "%.1f s\n", done, self->n_points, result->point,
              *label ? " " : "", label, result->failed ? "FAILED" : "done",
              result->wall_s, elapsed, eta);
}

/**
 * elk_experiment_run:
 * @self: a loaded experiment
 * @options: jobs, output folder and progress
 * @status: (out): whether every point succeeded
 * @error: return location for a #GError
 *
 * Runs every point and writes results.csv, results.json and timings.csv.
 *
 * Returns: %FALSE with @error set if the results could not be written;
 *   failed points do not make it return %FALSE, they set @status.
 */
gboolean
elk_experiment_run (ElkExperiment *self,
                    const ElkRunOptions *options,
                    ElkRunStatus *status,
                    GError **error)
{
  g_autoptr (GPtrArray) versions = collect_plugin_versions (self);
  g_autoptr (GPtrArray) axis_names = g_ptr_array_new ();
  g_autofree PointResult **pending = NULL;
  const char *dir = options->output_dir != NULL ? options->output_dir
                                                : self->output_dir;
  guint n_jobs = MAX (options->n_jobs, 1);
  RunContext ctx = { self, g_async_queue_new (), 0, dir };
  GThreadPool *pool;
  ElkReport *report;
  guint next = 0, done = 0;
  gboolean ok = TRUE, any_failed = FALSE, any_plugin = FALSE;
  gint64 start = g_get_monotonic_time ();

  for (guint a = 0; a < self->axes->len; a++)
    g_ptr_array_add (axis_names, ((ElkAxis *) self->axes->pdata[a])->text);
  g_ptr_array_add (axis_names, NULL);

  report = elk__report_open (dir, self->name, self->hash,
                             (const char *const *) axis_names->pdata,
                             versions, error);
  if (report == NULL)
    {
      g_async_queue_unref (ctx.done);
      return FALSE;
    }

  /* With one job, the plan tables of a point use every processor; with
   * several, each point's tables are built on its own thread. */
  ctx.plan_threads = n_jobs == 1 ? 0 : 1;
  pool = g_thread_pool_new (pool_func, &ctx, (gint) n_jobs, TRUE, NULL);
  for (guint p = 0; p < self->n_points; p++)
    g_thread_pool_push (pool, GUINT_TO_POINTER (p + 1), NULL);

  pending = g_new0 (PointResult *, self->n_points);
  while (done < self->n_points)
    {
      PointResult *result = g_async_queue_pop (ctx.done);
      pending[result->point] = result;
      done++;
      any_failed |= result->failed;
      any_plugin |= result->plugin_failed;
      if (options->progress)
        print_progress (self, done, result, start);

      /* Write every finished point whose predecessors are all written. */
      while (next < self->n_points && pending[next] != NULL)
        {
          PointResult *r = pending[next];
          for (guint i = 0; ok && i < r->rows->len; i++)
            {
              Row *row = r->rows->pdata[i];
              ok = elk__report_add_row (report,
                                        (const char *const *) row->values,
                                        error)
                   && elk__report_add_timing (
                     report, (const char *const *) row->timing, error);
            }
          point_result_free (r);
          pending[next++] = NULL;
        }
    }
  g_thread_pool_free (pool, FALSE, TRUE);
  g_async_queue_unref (ctx.done);

  if (!ok)
    {
      elk__report_abort (report);
      return FALSE;
    }
  if (!elk__report_commit (report, error))
    return FALSE;
  *status = any_plugin ? ELK_RUN_PLUGIN_FAILED
            : any_failed ? ELK_RUN_POINTS_FAILED
                         : ELK_RUN_OK;
  return TRUE;
}
