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

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elk-experiment-private.h"
#include "elk-journal.h"
#include "elk-spawn.h"
#include "plan/elk-plan-params.h"

const char *elk__experiment_axis_value_text (ElkExperiment *self,
                                             guint point,
                                             guint a);

#define N_COLUMNS 39

enum
{
  COL_EXPERIMENT, COL_POINT, COL_MODEL, COL_PHASE, COL_BATCH, COL_SEQ,
  COL_CHIP, COL_TOPOLOGY, COL_CORES, COL_SRAM, COL_HBM_BW, COL_NOC_BW,
  COL_FRONTEND, COL_SCHEDULER, COL_ALLOCATOR, COL_BACKEND, COL_LATENCY,
  COL_IDEAL, COL_BOUND, COL_FLOPS, COL_HBM_BYTES, COL_NOC_BYTES,
  COL_HBM_UTIL, COL_NOC_UTIL, COL_ACHIEVED, COL_PRELOAD_ONLY,
  COL_EXECUTE_ONLY, COL_OVERLAP, COL_STALL, COL_N_OPS, COL_N_ORDERS,
  COL_LABEL, COL_STATUS, COL_ERROR, COL_ESTIMATE, COL_METRICS_MODEL,
  COL_ASSUMPTIONS,
};

/* The last field of a row is not a column of results.csv: the results
 * writer turns it into the lines of breakdown.csv and a "breakdown" list
 * in results.json. */
#define COL_BREAKDOWN (COL_ASSUMPTIONS + 1)
/* So is the one after it: the routing statistics of a graph with
 * conditional operators, which become columns of results.csv only when
 * some row has them. */
#define COL_ROUTING (COL_BREAKDOWN + 1)
G_STATIC_ASSERT (COL_ROUTING + 1 == N_COLUMNS);

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
  const ElkRunOptions *options;
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

/* "free-distribution private-preload-network", or "" for a program that
 * assumes nothing beyond the chip spec. */
static char *
assumptions_to_string (ElkProgramAssumptions assumptions)
{
  GString *s = g_string_new (NULL);

  if (assumptions & ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION)
    g_string_append (s, "free-distribution");
  if (assumptions & ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK)
    g_string_append_printf (s, "%sprivate-preload-network",
                            s->len > 0 ? " " : "");
  if (assumptions & ELK_PROGRAM_ASSUME_KNOWN_ROUTING)
    g_string_append_printf (s, "%sknown-routing", s->len > 0 ? " " : "");
  if (assumptions
      & ~(ELK_PROGRAM_ASSUME_FREE_DISTRIBUTION
          | ELK_PROGRAM_ASSUME_PRIVATE_PRELOAD_NETWORK
          | ELK_PROGRAM_ASSUME_KNOWN_ROUTING))
    g_string_append_printf (s, "%sunknown(0x%x)", s->len > 0 ? " " : "",
                            (guint) assumptions);
  return g_string_free (s, FALSE);
}

static gboolean
is_plugin_error (const GError *error)
{
  /* An invalid program is its scheduler's broken contract, whether the
   * scheduler wrapper or the chip found it. */
  return error->domain == ELK_PLUGIN_ERROR
         || g_error_matches (error, ELK_SCHEDULE_ERROR,
                             ELK_SCHEDULE_ERROR_INVALID_PROGRAM);
}

/* The physical lower bound: the FLOPs of the operators that execute at
 * peak MatMul rate, or the HBM bytes they read at full HBM bandwidth,
 * whichever takes longer.  An expert the graph's sampled routing does not
 * take (a conditional operator, elk_graph_set_op_condition()) never
 * executes and need not be read, so it does not count. */
static double
physical_bound (const ElkGraph *graph, const ElkChipSpec *spec)
{
  double flops = 0;
  guint64 bytes = 0;

  if (!elk_graph_has_conditions (graph))
    return MAX (elk_graph_get_total_flops (graph) / spec->matmul_flops,
                (double) elk_graph_get_hbm_bytes (graph) / spec->hbm_bw);
  for (guint i = 0; i < elk_graph_get_n_ops (graph); i++)
    {
      const ElkOp *op = elk_graph_get_op (graph, i);
      gboolean taken = TRUE;

      elk_graph_get_op_condition (graph, i, NULL, NULL, &taken);
      if (!taken)
        continue;
      flops += op->flops;
      bytes += elk_op_get_hbm_bytes (graph, op);
    }
  return MAX (flops / spec->matmul_flops, (double) bytes / spec->hbm_bw);
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
  Component *sc = self->schedulers->pdata[s];
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
  if (program != NULL
      && elk_program_get_assumptions (program) != ELK_PROGRAM_ASSUME_NONE
      && !sc->bound)
    {
      /* Chips apply a program's assumptions, so only a design the
       * experiment declares a bound may make any. */
      g_autofree char *what = assumptions_to_string (
        elk_program_get_assumptions (program));
      g_set_error (&error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT,
                   "%s returned a program that assumes '%s' about the "
                   "machine, as only a bound may; the experiment does not "
                   "declare scheduler '%s' a bound (bound=\"true\" on its "
                   "<scheduler> measures it as one)",
                   G_OBJECT_TYPE_NAME (scheduler), what,
                   row->values[COL_LABEL]);
      g_clear_pointer (&program, elk_program_unref);
    }
  t1 = g_get_monotonic_time ();
  if (program != NULL && (self->trace || (gint) point == self->trace_point))
    {
      g_autoptr (ElkTrace) trace = elk_trace_new ();
      g_autofree char *name = g_strdup_printf ("trace-%u-%s.json", point,
                                               row->values[COL_LABEL]);
      g_autofree char *path = g_build_filename (trace_dir, name, NULL);
      metrics
          = elk_chip_run_traced (chip, program, elk_plan_set_get_base (plans),
                                 trace, &error);
      if (metrics != NULL && !elk_trace_write (trace, path, &error))
        g_clear_pointer (&metrics, elk_metrics_free);
    }
  else if (program != NULL)
    metrics
        = elk_chip_run (chip, program, elk_plan_set_get_base (plans), &error);
  t2 = g_get_monotonic_time ();

  row->timing[4] = fmt_double ((double) (t1 - t0) / G_USEC_PER_SEC);
  row->timing[5] = fmt_double ((double) (t2 - t1) / G_USEC_PER_SEC);

  if (program != NULL)
    {
      set (row, COL_N_ORDERS, fmt_u64 (elk_program_get_n_orders (program)));
      set (row, COL_ESTIMATE,
           fmt_double (elk_program_get_estimate (program)));
      set (row, COL_ASSUMPTIONS, assumptions_to_string (
             elk_program_get_assumptions (program)));
    }

  /* A backend that reports less than the physical lower bound has a bug,
   * so the row fails. */
  bound = physical_bound (graph, spec);
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
  set (row, COL_BREAKDOWN, elk__breakdown_to_string (metrics->breakdown));
  set (row, COL_ROUTING, elk__routing_stats_to_string (metrics->routing));
}

static const char *
attr (ElkGraph *graph, const char *key)
{
  const char *value = graph != NULL ? elk_graph_get_attribute (graph, key)
                                    : NULL;
  return value != NULL ? value : "";
}

/* A row with everything known before the design runs: the point's
 * identity, the model and chip facts, and the sweep values.  graph and
 * spec may be NULL when loading them failed (or, with --isolate, when the
 * point never reported back). */
static Row *
new_row (ElkExperiment *self,
         guint point,
         guint s,
         ElkGraph *graph,
         const ElkChipSpec *spec)
{
  Component *sc = self->schedulers->pdata[s];
  Component *ac = elk__experiment_allocator_for (self, s);
  guint n_axes = self->axes->len;
  Row *row = g_new0 (Row, 1);

  row->n_values = N_COLUMNS + n_axes;
  row->values = g_new0 (char *, row->n_values + 1);
  row->latency_s = NAN;
  /* ideal_s comes from the design the experiment declares a bound. */
  row->is_ideal = sc->bound;
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
      if (graph != NULL)
        set (row, COL_BOUND, fmt_double (physical_bound (graph, spec)));
    }
  for (guint a = 0; a < n_axes; a++)
    row->values[N_COLUMNS + a]
      = g_strdup (elk__experiment_axis_value_text (self, point, a));
  row->timing[0] = g_strdup (self->name);
  row->timing[1] = fmt_u64 (point);
  row->timing[2] = g_strdup (sc->label);
  return row;
}

/* The plan set the point's schedulers plan with: @plans priced by the
 * chip's cost model when cost-model=chip, and with the chip's re-layout
 * prices when layout=aware. */
static ElkPlanSet *
price_plans (ElkPlanParams *params,
             ElkChip *chip,
             ElkPlanSet *plans,
             GError **error)
{
  gboolean chip_ops
      = elk__plan_params_get_cost_model (params) == ELK_COST_MODEL_CHIP;
  gboolean aware = elk__plan_params_get_layout (params) == ELK_LAYOUT_AWARE;
  g_autoptr (ElkCostModel) model = NULL;
  ElkPlanSet *priced;

  if (!chip_ops && !aware)
    return elk_plan_set_ref (plans);
  model = elk_chip_dup_cost_model (chip, plans, error);
  if (model == NULL)
    return NULL;
  priced = chip_ops ? elk_plan_set_new_priced (plans, model, error)
                    : elk_plan_set_ref (plans);
  if (priced != NULL && aware)
    elk_plan_set_set_relayout_model (priced, model);
  return priced;
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
  g_autoptr (ElkPlanSet) priced = NULL;
  gint64 start = g_get_monotonic_time ();
  ElkPlanOptions options = { 0 };
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
      /* The point's <plans> options (enumeration, floors), with their
       * sweep values; the thread count is the runner's. */
      g_autoptr (GObject) plan_params = elk_experiment_create_component (
        self, point, ELK_TYPE_PLAN_PARAMS, 0, NULL);

      ElkFuseFlags fuse
          = elk__plan_params_get_fuse (ELK_PLAN_PARAMS (plan_params));

      elk__plan_params_get_options (ELK_PLAN_PARAMS (plan_params), &options);
      options.n_threads = plan_threads;
      /* Fusion rewrites the point's graph before any table exists, so
       * that every scheduler and the chip see the fused operators (and
       * the rows count them in n_ops). */
      if (fuse != ELK_FUSE_NONE)
        {
          ElkGraph *fused = elk_graph_fuse (graph, fuse, &error);
          if (fused != NULL)
            {
              elk_graph_unref (graph);
              graph = fused;
            }
        }
      if (error == NULL)
        plans = elk_plan_set_new (graph, spec, &options, &error);
      /* Schedulers plan with the chip's cost model when the experiment
       * asks for it (cost-model=chip; the analytic model is the default
       * until a chip's model plans better, see docs/compiler.md), and
       * with the chip's re-layout prices when it asks for those
       * (layout=aware, the default; a chip whose model prices none
       * changes nothing); the chip runs the programs against the
       * analytic set it was built on, as before. */
      if (plans != NULL)
        priced = price_plans (ELK_PLAN_PARAMS (plan_params), ELK_CHIP (chip),
                              plans, &error);
      /* A scheduler may choose among its candidates by the chip's own
       * measurement (the elk scheduler's select=chip): it runs them on a
       * chip that measures as this one does and writes no reports. */
      if (priced != NULL)
        {
          g_autoptr (ElkChip) measurer
              = elk_chip_dup_measurer (ELK_CHIP (chip));
          elk_plan_set_set_measurer (priced, measurer);
        }
      if (priced == NULL)
        g_clear_pointer (&plans, elk_plan_set_unref);
      plan_s = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
    }

  for (guint s = 0; s < self->schedulers->len; s++)
    {
      Row *row = new_row (self, point, s, graph, spec);

      if (plans != NULL)
        run_design (self, point, s, graph, spec, priced, ELK_CHIP (chip),
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

/* The point's identity for --resume: every component with its feature,
 * label and parameters, as this point sets them. */
static char *
point_key (ElkExperiment *self, guint point)
{
  GChecksum *sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_autofree char *label = elk_experiment_dup_point_label (self, point);
  char *key;

  g_checksum_update (sum, (const guchar *) self->hash, -1);
  g_checksum_update (sum, (const guchar *) label, -1);
  g_checksum_update (sum, (const guchar *) ELK_VERSION, -1);
  key = g_strndup (g_checksum_get_string (sum), 32);
  g_checksum_free (sum);
  return key;
}

static PointRecord *
record_from_result (ElkExperiment *self, PointResult *result)
{
  PointRecord *record = g_new0 (PointRecord, 1);
  guint n_fields = N_COLUMNS + self->axes->len;

  record->point = result->point;
  record->key = point_key (self, result->point);
  record->status = result->plugin_failed ? ELK_RUN_PLUGIN_FAILED
                   : result->failed     ? ELK_RUN_POINTS_FAILED
                                        : ELK_RUN_OK;
  record->n_rows = result->rows->len;
  record->n_fields = n_fields;
  record->fields = g_new0 (char *, record->n_rows * n_fields + 1);
  record->timings = g_new0 (char *, record->n_rows * ELK_TIMING_FIELDS + 1);
  for (guint r = 0; r < result->rows->len; r++)
    {
      Row *row = result->rows->pdata[r];
      for (guint f = 0; f < n_fields; f++)
        record->fields[r * n_fields + f] = g_steal_pointer (&row->values[f]);
      for (guint t = 0; t < ELK_TIMING_FIELDS; t++)
        record->timings[r * ELK_TIMING_FIELDS + t]
          = g_steal_pointer (&row->timing[t]);
    }
  return record;
}

/* Rows for a point that never reported back (it crashed or hung in its
 * own process under --isolate). */
static PointRecord *
failed_record (ElkExperiment *self,
               guint point,
               const char *message,
               double wall_s)
{
  PointResult *result = g_new0 (PointResult, 1);
  PointRecord *record;

  result->point = point;
  result->rows = g_ptr_array_new_with_free_func ((GDestroyNotify) row_free);
  result->failed = TRUE;
  result->plugin_failed = TRUE;
  result->wall_s = wall_s;
  for (guint s = 0; s < self->schedulers->len; s++)
    {
      Row *row = new_row (self, point, s, NULL, NULL);
      set (row, COL_STATUS, g_strdup ("failed"));
      set (row, COL_ERROR, g_strdup (message));
      g_ptr_array_add (result->rows, row);
    }
  record = record_from_result (self, result);
  point_result_free (result);
  return record;
}

/**
 * elk_experiment_run_point_line:
 * @self: a loaded experiment
 * @point: the point to run
 * @trace_dir: (nullable): where traces go, if the experiment asks for them
 *
 * Runs one point in this process and returns its journal line.  elk-run
 * --isolate runs each point this way in a child process.
 *
 * Returns: (transfer full): the line, newline included.
 */
char *
elk_experiment_run_point_line (ElkExperiment *self,
                               guint point,
                               const char *trace_dir)
{
  PointResult *result;
  PointRecord *record;
  char *line;

  g_return_val_if_fail (point < self->n_points, NULL);
  result = run_point (self, point, 0,
                      trace_dir != NULL ? trace_dir : self->output_dir);
  record = record_from_result (self, result);
  line = elk__point_record_serialize (record);
  point_result_free (result);
  elk__point_record_free (record);
  return line;
}

/* Runs a point in a child process ("elk-run --internal-point N FILE"),
 * so that a plugin that crashes or hangs costs one failed point and not
 * the sweep. */
static PointRecord *
run_point_isolated (RunContext *ctx, guint point)
{
  ElkExperiment *self = ctx->experiment;
  const ElkRunOptions *options = ctx->options;
  g_autofree char *point_arg = g_strdup_printf ("%u", point);
  g_autofree char *trace_arg = g_strdup (ctx->trace_dir);
  g_autofree char *trace_point = g_strdup_printf ("--trace=%d",
                                                 self->trace_point);
  const char *argv[] = { options->self_exe, "--internal-point", point_arg,
                         "-o", trace_arg, trace_point,
                         self->path, self->quick ? "--quick" : NULL, NULL };
  g_autoptr (GError) error = NULL;
  g_autoptr (GString) out = g_string_new (NULL);
  g_autoptr (GString) err = g_string_new (NULL);
  gint64 start = g_get_monotonic_time ();
  gint64 deadline = options->timeout_s > 0
                      ? start + (gint64) (options->timeout_s * G_USEC_PER_SEC)
                      : G_MAXINT64;
  gboolean timed_out = FALSE;
  int status = 0;
  PointRecord *record;
  double wall_s;

  if (!elk__spawn_capture (argv, deadline, out, err, &status, &timed_out,
                           &error))
    return failed_record (self, point, error->message, 0);
  wall_s = (double) (g_get_monotonic_time () - start) / G_USEC_PER_SEC;

  if (!timed_out && WIFEXITED (status) && WEXITSTATUS (status) == 0)
    {
      g_autofree char *line = g_strndup (out->str, out->len);
      g_strchomp (line);
      record = elk__point_record_parse (line, NULL);
      if (record != NULL && record->point == point)
        return record;
      elk__point_record_free (record);
    }

  {
    g_autofree char *why
        = elk__spawn_describe_failure (point, timed_out, options->timeout_s,
                                       status, err);

    return failed_record (self, point, why, wall_s);
  }
}

typedef struct
{
  PointRecord *record;
  double wall_s;
} Done;

static void
pool_func (gpointer data, gpointer user_data)
{
  RunContext *ctx = user_data;
  guint point = GPOINTER_TO_UINT (data) - 1;
  Done *done = g_new0 (Done, 1);

  if (ctx->options->isolate)
    {
      gint64 start = g_get_monotonic_time ();
      done->record = run_point_isolated (ctx, point);
      done->wall_s = (double) (g_get_monotonic_time () - start)
                     / G_USEC_PER_SEC;
    }
  else
    {
      PointResult *result = run_point (ctx->experiment, point,
                                       ctx->plan_threads, ctx->trace_dir);
      done->wall_s = result->wall_s;
      done->record = record_from_result (ctx->experiment, result);
      point_result_free (result);
    }
  g_async_queue_push (ctx->done, done);
}

static GPtrArray *
collect_plugin_versions (ElkExperiment *self)
{
  GPtrArray *list = g_ptr_array_new_with_free_func (g_free);
  GHashTable *seen = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GPtrArray) all = g_ptr_array_new ();

  g_ptr_array_add (all, self->frontend);
  g_ptr_array_add (all, self->chip);
  if (self->allocator != NULL)
    g_ptr_array_add (all, self->allocator);
  for (guint i = 0; i < self->schedulers->len; i++)
    {
      Component *c = self->schedulers->pdata[i];
      g_ptr_array_add (all, c);
      if (c->allocator != NULL)
        g_ptr_array_add (all, c->allocator);
    }
  for (guint i = 0; i < all->len; i++)
    {
      ElkPlugin *plugin = ((Component *) all->pdata[i])->feature->plugin;
      char *line;
      if (plugin == NULL)
        continue;
      /* Name, version, ABI, file and SHA-256 (results.json). */
      line = elk__plugin_dup_record (plugin);
      if (g_hash_table_contains (seen, line))
        {
          g_free (line);
          continue;
        }
      g_hash_table_add (seen, line);
      g_ptr_array_add (list, line);
    }
  g_ptr_array_sort (list, elk__compare_strings);
  g_hash_table_unref (seen);
  return list;
}

static void
print_progress (ElkExperiment *self,
                guint done,
                guint total,
                const PointRecord *record,
                double wall_s,
                gint64 start)
{
  double elapsed = (double) (g_get_monotonic_time () - start)
                   / G_USEC_PER_SEC;
  double eta = done > 0 ? elapsed / done * (total - done) : 0;
  g_autofree char *label = elk_experiment_dup_point_label (self,
                                                           record->point);

  g_printerr ("[%u/%u] point %u%s%s %s in %.2f s; elapsed %.1f s, ETA "
              "%.1f s\n", done, total, record->point, *label ? " " : "",
              label, record->status == ELK_RUN_OK ? "done" : "FAILED", wall_s,
              elapsed, eta);
}

static void
fill_header (ElkExperiment *self,
             const ElkRunOptions *options,
             JournalHeader *header)
{
  header->elk_version = g_strdup (ELK_VERSION);
  header->experiment = g_strdup (self->name);
  header->hash = g_strdup (self->hash);
  header->n_points = self->n_points;
  header->shard_k = options->shard_n > 0 ? options->shard_k : 1;
  header->shard_n = options->shard_n > 0 ? options->shard_n : 1;
  header->axes = g_ptr_array_new_with_free_func (g_free);
  for (guint a = 0; a < self->axes->len; a++)
    g_ptr_array_add (header->axes,
                     g_strdup (((Axis *) self->axes->pdata[a])->text));
  header->plugins = collect_plugin_versions (self);
}

static ElkRunStatus
worst_status (GPtrArray *records)
{
  ElkRunStatus status = ELK_RUN_OK;
  for (guint i = 0; i < records->len; i++)
    {
      const PointRecord *r = records->pdata[i];
      if (r->status == ELK_RUN_PLUGIN_FAILED)
        status = ELK_RUN_PLUGIN_FAILED;
      else if (r->status == ELK_RUN_POINTS_FAILED && status == ELK_RUN_OK)
        status = ELK_RUN_POINTS_FAILED;
    }
  return status;
}

/* A run in progress: the journal, the points already finished, and the
 * points still to run.  elk_experiment_run() drives one with its thread
 * pool; other drivers (MPI) use the same calls, so that every way of
 * running points writes the same journal and results. */
struct _ElkRunSession
{
  ElkExperiment *experiment;
  char *dir;
  gboolean progress;
  JournalHeader header;
  Journal *journal;
  GPtrArray *records;          /* PointRecord *, finished points */
  gboolean *have;              /* per point */
  GArray *todo;                /* guint, in point order */
  guint n_added;
  gint64 start;
  ElkRunProgressFunc progress_func; /* elk_experiment_run_with_progress */
  gpointer progress_data;
};

/**
 * elk_run_session_begin: (skip)
 * @self: a loaded experiment
 * @options: output folder, progress, resume and shard (n_jobs, isolate
 *   and timeout are the driver's business)
 * @error: return location for a #GError
 *
 * Opens the output folder's journal (keeping an earlier run's points with
 * @options->resume) and works out which points remain.
 *
 * Run sessions are for drivers written in C (MPI ranks, job schedulers):
 * elk_run_session_finish() and elk_run_session_abort() consume the
 * session, which has no copy function, so the session API is left out of
 * the introspection data.  Other languages use elk_experiment_run().
 *
 * Returns: (transfer full) (nullable): the session, to be ended with
 *   elk_run_session_finish() or elk_run_session_abort(); %NULL with @error
 *   set.
 */
ElkRunSession *
elk_run_session_begin (ElkExperiment *self,
                       const ElkRunOptions *options,
                       GError **error)
{
  ElkRunSession *session;

  if (options->shard_n > 0
      && (options->shard_k < 1 || options->shard_k > options->shard_n))
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
                   "shard %u/%u: K must be between 1 and N", options->shard_k,
                   options->shard_n);
      return NULL;
    }

  session = g_new0 (ElkRunSession, 1);
  session->experiment = g_object_ref (self);
  session->dir = g_strdup (options->output_dir != NULL ? options->output_dir
                                                       : self->output_dir);
  session->progress = options->progress;
  session->have = g_new0 (gboolean, self->n_points);
  session->todo = g_array_new (FALSE, FALSE, sizeof (guint));
  session->start = g_get_monotonic_time ();
  fill_header (self, options, &session->header);
  session->journal = elk__journal_open (session->dir, &session->header,
                                        options->resume, &session->records,
                                        error);
  if (session->journal == NULL)
    {
      elk_run_session_abort (session);
      return NULL;
    }

  /* A journal record counts only if it is for this point as configured
   * now; anything else in it is dropped. */
  for (guint i = session->records->len; i > 0; i--)
    {
      PointRecord *r = session->records->pdata[i - 1];
      g_autofree char *key = point_key (self, r->point);
      if (session->have[r->point] || strcmp (key, r->key) != 0)
        g_ptr_array_remove_index (session->records, i - 1);
      else
        session->have[r->point] = TRUE;
    }
  for (guint p = 0; p < self->n_points; p++)
    if (p % session->header.shard_n == session->header.shard_k - 1
        && !session->have[p])
      g_array_append_val (session->todo, p);

  if (session->progress && session->records->len > 0)
    g_printerr ("resuming: %u point(s) already in %s, %u to run\n",
                session->records->len, session->dir, session->todo->len);
  return session;
}

/**
 * elk_run_session_get_todo: (skip)
 * @session: a run session
 * @n_points: (out): how many points remain
 *
 * Lists the points a session still has to run.
 *
 * Returns: (array length=n_points) (transfer none): the points to run, in
 *   point order, owned by @session.
 */
const guint *
elk_run_session_get_todo (ElkRunSession *session, guint *n_points)
{
  *n_points = session->todo->len;
  return (const guint *) session->todo->data;
}

static gboolean
session_add_record (ElkRunSession *session,
                    PointRecord *record,
                    double wall_s,
                    GError **error)
{
  gboolean ok;

  session->n_added++;
  if (session->progress)
    print_progress (session->experiment, session->n_added,
                    session->todo->len, record, wall_s, session->start);
  ok = elk__journal_append (session->journal, record, error);
  session->have[record->point] = TRUE;
  g_ptr_array_add (session->records, record);
  /* After the journal append, so that a callback that looks at the output
   * folder sees the point recorded. */
  if (session->progress_func != NULL)
    session->progress_func (session->experiment, session->n_added,
                            session->todo->len, record->point, record->status,
                            wall_s, session->progress_data);
  return ok;
}

/**
 * elk_run_session_add_line: (skip)
 * @session: a run session
 * @line: a point's journal line, as elk_experiment_run_point_line() or
 *   elk_experiment_dup_failed_point_line() made it
 * @wall_s: how long the point took, for the progress line
 * @error: return location for a #GError
 *
 * Records a finished point durably.  A line that is corrupt, names no
 * point of this experiment, or names one already recorded is an error.
 *
 * Returns: %TRUE if the line was recorded; %FALSE with @error set.
 */
gboolean
elk_run_session_add_line (ElkRunSession *session,
                          const char *line,
                          double wall_s,
                          GError **error)
{
  g_autofree char *copy = g_strchomp (g_strdup (line));
  PointRecord *record = elk__point_record_parse (copy, error);
  g_autofree char *key = NULL;

  if (record == NULL)
    return FALSE;
  if (record->point >= session->experiment->n_points
      || session->have[record->point])
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
                   "point %u is not a point of this run that is still to "
                   "be done", record->point);
      elk__point_record_free (record);
      return FALSE;
    }
  key = point_key (session->experiment, record->point);
  if (strcmp (key, record->key) != 0)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
                   "point %u was run with another configuration (key %s, "
                   "expected %s)", record->point, record->key, key);
      elk__point_record_free (record);
      return FALSE;
    }
  return session_add_record (session, record, wall_s, error);
}

/**
 * elk_run_session_finish: (skip)
 * @session: (transfer full): a run session; freed
 * @status: (out): whether every point succeeded
 * @error: return location for a #GError
 *
 * Closes the journal and writes results.csv, results.json and
 * timings.csv from it.  Points never added are missing from the results
 * (and an error says how many), so a driver must add a failed line for a
 * point it could not run.  Frees @session.
 *
 * Returns: %TRUE if the results were written; %FALSE with @error set.
 */
gboolean
elk_run_session_finish (ElkRunSession *session,
                        ElkRunStatus *status,
                        GError **error)
{
  gboolean ok = TRUE;
  guint missing = 0;

  for (guint i = 0; i < session->todo->len; i++)
    if (!session->have[g_array_index (session->todo, guint, i)])
      missing++;
  if (missing > 0)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
                   "%u point(s) of the run were never recorded; the journal "
                   "in %s keeps the others for --resume", missing,
                   session->dir);
      ok = FALSE;
    }
  g_clear_pointer (&session->journal, elk__journal_close);
  if (ok)
    ok = elk__results_write (session->dir, &session->header,
                             session->records, error);
  if (ok)
    *status = worst_status (session->records);
  elk_run_session_abort (session);
  return ok;
}

/**
 * elk_run_session_abort: (skip)
 * @session: (transfer full): a run session; freed
 *
 * Frees @session without writing results; the journal keeps every point
 * recorded so far.
 */
void
elk_run_session_abort (ElkRunSession *session)
{
  if (session == NULL)
    return;
  g_clear_pointer (&session->journal, elk__journal_close);
  g_clear_pointer (&session->records, g_ptr_array_unref);
  g_clear_pointer (&session->todo, g_array_unref);
  elk__journal_header_clear (&session->header);
  g_free (session->have);
  g_free (session->dir);
  g_object_unref (session->experiment);
  g_free (session);
}

/**
 * elk_experiment_dup_failed_point_line:
 * @self: a loaded experiment
 * @point: a point of the experiment
 * @message: why it failed
 *
 * Makes the journal line of a point that could not run.
 *
 * Returns: (transfer full): a journal line recording @point as failed for
 *   every design, for drivers whose worker died before it could report.
 *   Free it with g_free().
 */
char *
elk_experiment_dup_failed_point_line (ElkExperiment *self,
                                      guint point,
                                      const char *message)
{
  PointRecord *record;
  char *line;

  g_return_val_if_fail (point < self->n_points, NULL);
  record = failed_record (self, point, message, 0);
  line = elk__point_record_serialize (record);
  elk__point_record_free (record);
  return line;
}

/**
 * elk_experiment_run:
 * @self: a loaded experiment
 * @options: jobs, output folder, progress, resume, shard and isolation
 * @status: (out): whether every point succeeded
 * @error: return location for a #GError
 *
 * Runs the experiment's points (or the shard's share of them, in slices
 * point % N == K - 1) on a pool of @options->n_jobs threads, appending
 * each finished point to the output's journal, then writes results.csv,
 * results.json and timings.csv from the journal in point order.
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
  return elk_experiment_run_with_progress (self, options, NULL, NULL, status,
                                           error);
}

/**
 * elk_experiment_run_with_progress:
 * @self: a loaded experiment
 * @options: (nullable): jobs, output folder, progress, resume, shard and
 *   isolation; %NULL runs one point at a time into the experiment's
 *   output folder, without resuming
 * @func: (nullable) (scope call) (closure user_data): called after each
 *   point, in the calling thread
 * @user_data: data for @func
 * @status: (out): whether every point succeeded
 * @error: return location for a #GError
 *
 * Runs the experiment as elk_experiment_run() does, calling @func after
 * each finished point has been recorded in the journal.  This is the
 * entry point for bindings: from Python, `experiment.run_with_progress(
 * None, callback, None)` runs a sweep with a progress callback, and the
 * rows are then in results.csv and results.json in the output folder
 * (see elk_experiment_get_output_dir() and
 * elk_experiment_set_output_dir()).  @func is used only during the call.
 *
 * Returns: %FALSE with @error set if the results could not be written;
 *   failed points do not make it return %FALSE, they set @status.
 */
gboolean
elk_experiment_run_with_progress (ElkExperiment *self,
                                  const ElkRunOptions *options,
                                  ElkRunProgressFunc func,
                                  gpointer user_data,
                                  ElkRunStatus *status,
                                  GError **error)
{
  static const ElkRunOptions defaults = { .n_jobs = 1, .trace_point = -1 };
  const ElkRunOptions *opts = options != NULL ? options : &defaults;
  guint n_jobs = MAX (opts->n_jobs, 1);
  RunContext ctx = { self, opts, NULL, 0, NULL };
  ElkRunSession *session;
  GThreadPool *pool;
  const guint *todo;
  guint n_todo = 0;
  gboolean ok = TRUE;

  if (opts->isolate && opts->self_exe == NULL)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
                   "isolated points need the path of elk-run");
      return FALSE;
    }
  session = elk_run_session_begin (self, opts, error);
  if (session == NULL)
    return FALSE;
  session->progress_func = func;
  session->progress_data = user_data;
  todo = elk_run_session_get_todo (session, &n_todo);

  ctx.trace_dir = session->dir;
  ctx.done = g_async_queue_new ();
  ctx.plan_threads = n_jobs == 1 ? 0 : 1;
  pool = g_thread_pool_new (pool_func, &ctx, (gint) n_jobs, TRUE, NULL);
  for (guint i = 0; i < n_todo; i++)
    g_thread_pool_push (pool, GUINT_TO_POINTER (todo[i] + 1), NULL);

  for (guint i = 0; i < n_todo; i++)
    {
      Done *d = g_async_queue_pop (ctx.done);
      if (ok)
        ok = session_add_record (session, d->record, d->wall_s, error);
      else
        elk__point_record_free (d->record);
      g_free (d);
    }
  g_thread_pool_free (pool, FALSE, TRUE);
  g_async_queue_unref (ctx.done);

  if (!ok)
    {
      elk_run_session_abort (session);
      return FALSE;
    }
  return elk_run_session_finish (session, status, error);
}

/**
 * elk_results_merge:
 * @dirs: (array zero-terminated=1): output folders of shards of one run
 * @output_dir: where the merged results go
 * @status: (out): whether every point succeeded
 * @error: return location for a #GError
 *
 * Combines the journals of `elk-run --shard K/N` runs into the results a
 * single run would have written.  Shards must come from the same
 * experiment file and elk version, and together hold every point.
 *
 * Returns: %TRUE if the merged results were written.
 */
gboolean
elk_results_merge (const char *const *dirs,
                   const char *output_dir,
                   ElkRunStatus *status,
                   GError **error)
{
  JournalHeader first = { 0 };
  g_autoptr (GPtrArray) all = g_ptr_array_new_with_free_func (
    (GDestroyNotify) elk__point_record_free);
  g_autofree gboolean *have = NULL;
  gboolean ok = TRUE;

  for (guint d = 0; ok && dirs[d] != NULL; d++)
    {
      JournalHeader h = { 0 };
      g_autoptr (GPtrArray) records = NULL;

      if (!elk__journal_read (dirs[d], &h, &records, error))
        {
          ok = FALSE;
          break;
        }
      if (d == 0)
        {
          first = h;
          have = g_new0 (gboolean, first.n_points);
        }
      else
        {
          if (strcmp (h.hash, first.hash) != 0
              || strcmp (h.elk_version, first.elk_version) != 0)
            {
              g_set_error (error, ELK_EXPERIMENT_ERROR,
                           ELK_EXPERIMENT_ERROR_INVALID,
                           "%s: shard of experiment %s (sha256 %.12s, elk "
                           "%s), but %s is of %s (sha256 %.12s, elk %s); "
                           "refusing to merge", dirs[d], h.experiment,
                           h.hash, h.elk_version, dirs[0], first.experiment,
                           first.hash, first.elk_version);
              ok = FALSE;
            }
          elk__journal_header_clear (&h);
        }
      while (ok && records->len > 0)
        {
          PointRecord *r = g_ptr_array_steal_index (records, 0);
          if (have[r->point])
            {
              elk__point_record_free (r);
              continue;
            }
          have[r->point] = TRUE;
          g_ptr_array_add (all, r);
        }
    }
  if (ok && dirs[0] == NULL)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
                   "nothing to merge");
      ok = FALSE;
    }
  if (ok && all->len != first.n_points)
    {
      for (guint p = 0; p < first.n_points; p++)
        if (!have[p])
          {
            g_set_error (error, ELK_EXPERIMENT_ERROR,
                         ELK_EXPERIMENT_ERROR_INVALID,
                         "the shards hold %u of the %u points of %s; point "
                         "%u (and maybe others) is missing: did every shard "
                         "finish?", all->len, first.n_points,
                         first.experiment, p);
            break;
          }
      ok = FALSE;
    }
  if (ok)
    {
      first.shard_k = first.shard_n = 1;
      ok = elk__results_write (output_dir, &first, all, error);
      if (ok)
        *status = worst_status (all);
    }
  elk__journal_header_clear (&first);
  return ok;
}
