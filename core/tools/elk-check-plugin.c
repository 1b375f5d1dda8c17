/* elk-check-plugin: checks a scheduler or allocator plugin, in the spirit
 * of gst-validate and LLVM's -verify-each.
 *
 *   elk-check-plugin scheduler NAME [--allocator NAME] [options]
 *   elk-check-plugin allocator NAME [--scheduler NAME] [options]
 *
 * For every graph (a few small built-in ones, plus the frontend of each
 * --graph experiment file) on every shipped chip, it schedules the graph
 * twice with the same scheduler object and runs both programs on the
 * chip, and schedules it once more with a fresh scheduler object at
 * another thread count when the scheduler has a 'threads' property.  It
 * checks:
 *
 *   valid        the scheduler returns a program that passes
 *                elk_program_validate() and the chip runs it, at or above
 *                the physical lower bound;
 *   determinism  the programs are identical step by step and operator by
 *                operator (execute and preload plans), and the chip's
 *                metrics of the first two are identical byte for byte;
 *   gap          with --max-gap, |estimate - latency| / latency is at most
 *                the given fraction.
 *
 * It ends with a table of the scheduler's estimate against each chip's
 * latency.  --valgrind runs the whole check again under valgrind memcheck
 * (memory errors and definite leaks fail).
 *
 * Exit codes follow elk-run's: 0 every check passed, 1 bad command line,
 * 2 bad input (unknown plugin or parameter, bad value, bad --graph file),
 * 3 a check failed (the plugin failed or broke its contract), 4 a graph or
 * chip could not be set up, so some checks did not run.
 */
#include "config.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <elk/elk.h>

enum
{
  EXIT_USAGE = 1,
  EXIT_BAD_INPUT = 2,
  EXIT_CHECK_FAILED = 3,
  EXIT_NOT_RUN = 4,
};

/* What valgrind exits with when it found errors; none of ours. */
#define VALGRIND_ERROR_EXIT 99

/* A built-in graph: a frontend and its parameters ("name=value").  The
 * llama presets are the paper's Llama2-13B cut to one or two layers:
 * every operator kind of a decoder layer, and small enough that the whole
 * check of a plugin on three chips takes seconds. */
typedef struct
{
  const char *label;
  const char *frontend;
  const char *params[6];
  const char *corpus_model; /* relative to the corpus, or NULL */
} BuiltinGraph;

static const BuiltinGraph builtin_graphs[] = {
  { "llama-decode", "llama",
    { "preset=llama2-13b-paper", "phase=decode", "batch=32", "seq=2048",
      "layers=2", NULL },
    NULL },
  { "llama-prefill", "llama",
    { "preset=llama2-13b-paper", "phase=prefill", "batch=1", "seq=64",
      "layers=1", NULL },
    NULL },
  { "onnx-squeezenet", "onnx", { NULL },
    "onnx/torch-generated/squeezenet1_1.onnx" },
};

/* The shipped chips, with their defaults: an IPU-POD4 of 5888 cores each.
 * A smaller noc-sim would be faster, but one chip of 1472 cores cannot
 * hold two Llama2-13B layers with elk's preloads, which fails schedulers
 * for the chip's size rather than for a bug. */
typedef struct
{
  const char *name;
  const char *params[3];
} ChipConfig;

static const ChipConfig shipped_chips[] = {
  { "analytic", { NULL } },
  { "noc-sim", { NULL } },
  { "ipu-pod", { NULL } },
};

typedef struct
{
  char *label;
  ElkGraph *graph;  /* NULL when skipped or failed */
  char *skipped;    /* why the graph is skipped, or NULL */
} GraphEntry;

typedef struct
{
  char *graph;
  char *chip;
  double estimate_s;
  double latency_s;
} GapRow;

typedef struct
{
  ElkRegistry *registry;
  GType kind;                /* ELK_TYPE_SCHEDULER or ELK_TYPE_ALLOCATOR */
  const char *name;          /* the plugin under test */
  const char *scheduler;     /* the scheduler to run */
  const char *allocator;     /* the allocator to run */
  char **params;             /* --param for the plugin under test */
  double max_gap;            /* < 0: no threshold */
  guint n_checks;
  guint n_failed;
  guint n_not_run;
  GPtrArray *gaps;           /* GapRow */
} Checker;

static void
graph_entry_free (GraphEntry *entry)
{
  g_free (entry->label);
  g_clear_pointer (&entry->graph, elk_graph_unref);
  g_free (entry->skipped);
  g_free (entry);
}

static void
gap_row_free (GapRow *row)
{
  g_free (row->graph);
  g_free (row->chip);
  g_free (row);
}

static void report (Checker *checker,
                    gboolean passed,
                    const char *check,
                    const char *format,
                    ...) G_GNUC_PRINTF (4, 5);

/* The line of one check: PASS, FAIL or ERROR, the check, and why. */
G_GNUC_PRINTF (3, 0)
static void
print_line (const char *verdict,
            const char *check,
            const char *format,
            va_list args)
{
  g_autofree char *text = g_strdup_vprintf (format, args);

  g_print ("%-5s %-12s %s\n", verdict, check, text);
}

/* One line per check: PASS or FAIL, the check, and why. */
static void
report (Checker *checker,
        gboolean passed,
        const char *check,
        const char *format,
        ...)
{
  va_list args;

  checker->n_checks++;
  if (!passed)
    checker->n_failed++;
  va_start (args, format);
  print_line (passed ? "PASS" : "FAIL", check, format, args);
  va_end (args);
}

static void not_run (Checker *checker, const char *format, ...)
  G_GNUC_PRINTF (2, 3);

/* A graph or chip that could not be set up: its checks did not run. */
static void
not_run (Checker *checker, const char *format, ...)
{
  va_list args;

  checker->n_not_run++;
  va_start (args, format);
  print_line ("ERROR", "setup", format, args);
  va_end (args);
}

/* Instantiates feature NAME of KIND with PARAMS ("name=value" each, strictly
 * converted as an experiment's <param>).  Errors name the feature. */
static GObject *
create_feature (ElkRegistry *registry,
                GType kind,
                const char *name,
                const char *const *params,
                GError **error)
{
  const ElkFeature *feature;
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GArray) values = g_array_new (FALSE, TRUE, sizeof (GValue));
  GObject *object;

  g_array_set_clear_func (values, (GDestroyNotify) g_value_unset);
  feature = elk_registry_find (registry, kind, name, error);
  if (feature == NULL)
    return NULL;
  for (guint i = 0; params != NULL && params[i] != NULL; i++)
    {
      const char *eq = strchr (params[i], '=');
      g_autoptr (GError) local_error = NULL;
      GValue value = G_VALUE_INIT;
      g_autofree char *pname = NULL;

      if (eq == NULL || eq == params[i])
        {
          g_set_error (error, ELK_EXPERIMENT_ERROR,
                       ELK_EXPERIMENT_ERROR_BAD_VALUE,
                       "%s '%s': parameter '%s' is not of the form "
                       "NAME=VALUE", elk_kind_to_string (kind), name,
                       params[i]);
          return NULL;
        }
      pname = g_strndup (params[i], (gsize) (eq - params[i]));
      for (guint j = 0; j < names->len; j++)
        if (strcmp (names->pdata[j], pname) == 0)
          {
            g_set_error (error, ELK_EXPERIMENT_ERROR,
                         ELK_EXPERIMENT_ERROR_INVALID,
                         "%s '%s': parameter '%s' is set twice",
                         elk_kind_to_string (kind), name, pname);
            return NULL;
          }
      if (!elk_param_parse (feature->type, pname, eq + 1, NULL, &value,
                            &local_error))
        {
          g_set_error (error, local_error->domain, local_error->code,
                       "%s '%s': %s", elk_kind_to_string (kind), name,
                       local_error->message);
          return NULL;
        }
      g_ptr_array_add (names, g_steal_pointer (&pname));
      g_array_append_vals (values, &value, 1);
    }
  object = g_object_new_with_properties (feature->type, names->len,
                                         (const char **) names->pdata,
                                         (const GValue *) values->data);
  return object;
}

/* The scheduler and allocator of one run; PARAMS go to the plugin under
 * test, EXTRA (a "threads=N" or NULL) to the scheduler. */
static gboolean
create_pair (Checker *checker,
             const char *extra,
             ElkScheduler **scheduler,
             ElkAllocator **allocator,
             GError **error)
{
  g_autoptr (GPtrArray) sched_params = g_ptr_array_new ();
  gboolean test_scheduler = checker->kind == ELK_TYPE_SCHEDULER;
  GObject *s, *a;

  if (test_scheduler)
    for (guint i = 0; checker->params[i] != NULL; i++)
      g_ptr_array_add (sched_params, checker->params[i]);
  if (extra != NULL)
    g_ptr_array_add (sched_params, (gpointer) extra);
  g_ptr_array_add (sched_params, NULL);

  s = create_feature (checker->registry, ELK_TYPE_SCHEDULER,
                      checker->scheduler,
                      (const char *const *) sched_params->pdata, error);
  if (s == NULL)
    return FALSE;
  a = create_feature (checker->registry, ELK_TYPE_ALLOCATOR,
                      checker->allocator,
                      test_scheduler ? NULL
                                     : (const char *const *) checker->params,
                      error);
  if (a == NULL)
    {
      g_object_unref (s);
      return FALSE;
    }
  *scheduler = ELK_SCHEDULER (s);
  *allocator = ELK_ALLOCATOR (a);
  return TRUE;
}

/* "[a, b, c]" of the first N values. */
static char *
format_vector (const guint32 *values, guint n)
{
  GString *s = g_string_new ("[");
  for (guint i = 0; i < n; i++)
    g_string_append_printf (s, "%s%u", i > 0 ? ", " : "", values[i]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

static char *
format_plan (const ElkPlan *plan)
{
  g_autofree char *spatial = format_vector (plan->spatial, plan->n_dims);
  GString *s = g_string_new (NULL);

  g_string_append_printf (s, "spatial %s, temporal [", spatial);
  for (guint d = 0; d < plan->n_dims && d < ELK_MAX_DIMS; d++)
    {
      g_autofree char *row = format_vector (plan->temporal[d],
                                            MIN (plan->n_operands,
                                                 ELK_MAX_OPERANDS));
      g_string_append_printf (s, "%s%s", d > 0 ? ", " : "", row);
    }
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

/* Plans are compared by what a chip runs: their loop dimensions and their
 * spatial and temporal factors. */
static gboolean
plans_equal (const ElkPlan *a, const ElkPlan *b)
{
  if (a->n_dims != b->n_dims || a->n_operands != b->n_operands
      || a->n_dims > ELK_MAX_DIMS || a->n_operands > ELK_MAX_OPERANDS)
    return a->n_dims == b->n_dims && a->n_operands == b->n_operands;
  for (guint d = 0; d < a->n_dims; d++)
    {
      if (a->spatial[d] != b->spatial[d])
        return FALSE;
      for (guint o = 0; o < a->n_operands; o++)
        if (a->temporal[d][o] != b->temporal[d][o])
          return FALSE;
    }
  return TRUE;
}

static const char *
step_name (ElkStepKind kind)
{
  return kind == ELK_STEP_PRELOAD ? "preload" : "execute";
}

static gboolean
doubles_identical (double a, double b)
{
  return memcmp (&a, &b, sizeof a) == 0;
}

/* NULL when A and B are the same program, else where they first differ. */
static char *
compare_programs (const ElkProgram *a, const ElkProgram *b)
{
  ElkGraph *graph = elk_program_get_graph (a);
  guint n_a = elk_program_get_n_steps (a);
  guint n_b = elk_program_get_n_steps (b);

  for (guint i = 0; i < MIN (n_a, n_b); i++)
    {
      const ElkStep *sa = elk_program_get_step (a, i);
      const ElkStep *sb = elk_program_get_step (b, i);
      if (sa->kind != sb->kind || sa->op != sb->op)
        return g_strdup_printf ("step %u is %s(%u) in one program and "
                                "%s(%u) in the other", i,
                                step_name (sa->kind), sa->op,
                                step_name (sb->kind), sb->op);
    }
  if (n_a != n_b)
    return g_strdup_printf ("one program has %u steps, the other %u", n_a,
                            n_b);
  for (guint op = 0; op < elk_graph_get_n_ops (graph); op++)
    {
      const ElkProgramOp *pa = elk_program_peek_op (a, op);
      const ElkProgramOp *pb = elk_program_peek_op (b, op);
      const char *which = NULL;
      const ElkPlan *x = NULL, *y = NULL;

      if (!plans_equal (&pa->exec_plan, &pb->exec_plan))
        which = "execute", x = &pa->exec_plan, y = &pb->exec_plan;
      else if (!plans_equal (&pa->preload_plan, &pb->preload_plan))
        which = "preload", x = &pa->preload_plan, y = &pb->preload_plan;
      if (which != NULL)
        {
          g_autofree char *fx = format_plan (x);
          g_autofree char *fy = format_plan (y);
          return g_strdup_printf ("operator %u '%s' has %s plan %s in one "
                                  "program and %s in the other", op,
                                  elk_graph_get_op (graph, op)->name, which,
                                  fx, fy);
        }
    }
  if (!doubles_identical (elk_program_get_estimate (a),
                          elk_program_get_estimate (b)))
    return g_strdup_printf ("the estimates differ: %.17g s and %.17g s",
                            elk_program_get_estimate (a),
                            elk_program_get_estimate (b));
  if (elk_program_get_n_orders (a) != elk_program_get_n_orders (b))
    return g_strdup_printf ("the order counts differ: %u and %u",
                            elk_program_get_n_orders (a),
                            elk_program_get_n_orders (b));
  if (elk_program_get_assumptions (a) != elk_program_get_assumptions (b))
    return g_strdup ("the programs' assumptions differ");
  return NULL;
}

/* NULL when the metrics are identical byte for byte, else the first
 * field that differs. */
static char *
compare_metrics (const ElkMetrics *a, const ElkMetrics *b)
{
  double x, y;
  const char *field = elk_metrics_first_difference (a, b, &x, &y);

  if (field != NULL)
    return g_strdup_printf ("the chip measured %s = %.17g and %.17g", field,
                            x, y);
  if (g_strcmp0 (a->model, b->model) != 0)
    return g_strdup_printf ("the chip's model is '%s' and '%s'", a->model,
                            b->model);
  return NULL;
}

/* Schedules and, with a non-NULL METRICS_OUT, runs once.  On failure,
 * reports it as the 'valid' check and returns FALSE. */
static gboolean
schedule_and_run (Checker *checker,
                  const char *where,
                  ElkScheduler *scheduler,
                  ElkAllocator *allocator,
                  ElkChip *chip,
                  const ElkChipSpec *spec,
                  const ElkPlanSet *plans,
                  ElkProgram **program_out,
                  ElkMetrics **metrics_out,
                  double *schedule_s,
                  double *run_s)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkProgram) program = NULL;
  g_autoptr (ElkMetrics) metrics = NULL;
  ElkGraph *graph = elk_plan_set_get_graph (plans);
  gint64 t0 = g_get_monotonic_time (), t1;
  double bound;

  program = elk_scheduler_schedule (scheduler, plans, allocator, &error);
  t1 = g_get_monotonic_time ();
  if (program == NULL)
    {
      report (checker, FALSE, "valid", "%s: %s", where, error->message);
      return FALSE;
    }
  if (metrics_out == NULL)
    {
      *program_out = g_steal_pointer (&program);
      return TRUE;
    }
  metrics = elk_chip_run (chip, program, plans, &error);
  if (metrics == NULL)
    {
      report (checker, FALSE, "valid", "%s: the chip refused the program: "
              "%s", where, error->message);
      return FALSE;
    }
  /* As elk-run does: nothing runs faster than all FLOPs at peak rate or
   * all HBM bytes at full bandwidth. */
  bound = MAX (elk_graph_get_total_flops (graph) / spec->matmul_flops,
               (double) elk_graph_get_hbm_bytes (graph) / spec->hbm_bw);
  if (!(metrics->latency_s >= bound * (1 - 1e-9)))
    {
      report (checker, FALSE, "valid", "%s: the chip measured %.6g s, below "
              "the physical bound %.6g s", where, metrics->latency_s, bound);
      return FALSE;
    }
  if (schedule_s != NULL)
    *schedule_s = (double) (t1 - t0) / G_USEC_PER_SEC;
  if (run_s != NULL)
    *run_s = (double) (g_get_monotonic_time () - t1) / G_USEC_PER_SEC;
  *program_out = g_steal_pointer (&program);
  *metrics_out = g_steal_pointer (&metrics);
  return TRUE;
}

/* The scheduler's 'threads' property, if it has a writable unsigned
 * one: its current value in *threads. */
static gboolean
get_threads (ElkScheduler *scheduler, guint *threads)
{
  GParamSpec *pspec = g_object_class_find_property (
    G_OBJECT_GET_CLASS (scheduler), "threads");

  if (pspec == NULL || G_PARAM_SPEC_VALUE_TYPE (pspec) != G_TYPE_UINT
      || (pspec->flags & G_PARAM_WRITABLE) == 0)
    return FALSE;
  g_object_get (scheduler, "threads", threads, NULL);
  return TRUE;
}

/* Every check of one graph on one chip. */
static void
check_point (Checker *checker,
             const GraphEntry *entry,
             const ChipConfig *config)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) chip = NULL;
  g_autoptr (ElkChipSpec) spec = NULL;
  g_autoptr (ElkPlanSet) plans = NULL;
  g_autoptr (ElkScheduler) scheduler = NULL;
  g_autoptr (ElkAllocator) allocator = NULL;
  g_autoptr (ElkProgram) first = NULL, second = NULL;
  g_autoptr (ElkMetrics) first_metrics = NULL, second_metrics = NULL;
  g_autofree char *where = g_strdup_printf ("%s on %s", entry->label,
                                            config->name);
  g_autofree char *diff = NULL;
  ElkPlanOptions options = { 0 };
  double schedule_s = 0, run_s = 0;
  guint threads;
  GapRow *row;

  chip = create_feature (checker->registry, ELK_TYPE_CHIP, config->name,
                         config->params, &error);
  if (chip != NULL)
    spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
  if (spec != NULL)
    plans = elk_plan_set_new (entry->graph, spec, &options, &error);
  if (plans == NULL)
    {
      not_run (checker, "%s: %s", where, error->message);
      return;
    }
  if (!create_pair (checker, NULL, &scheduler, &allocator, &error))
    {
      not_run (checker, "%s: %s", where, error->message);
      return;
    }

  /* Validity: elk_scheduler_schedule() validates the program, the chip
   * runs it. */
  if (!schedule_and_run (checker, where, scheduler, allocator,
                         ELK_CHIP (chip), spec, plans, &first,
                         &first_metrics, &schedule_s, &run_s))
    return;
  report (checker, TRUE, "valid", "%s: %u steps, scheduled in %.2f s, "
          "run in %.2f s", where, elk_program_get_n_steps (first),
          schedule_s, run_s);

  row = g_new0 (GapRow, 1);
  row->graph = g_strdup (entry->label);
  row->chip = g_strdup (config->name);
  row->estimate_s = elk_program_get_estimate (first);
  row->latency_s = first_metrics->latency_s;
  g_ptr_array_add (checker->gaps, row);

  /* Determinism: the same scheduler object, the same input, again. */
  if (schedule_and_run (checker, where, scheduler, allocator,
                        ELK_CHIP (chip), spec, plans, &second,
                        &second_metrics, NULL, NULL))
    {
      diff = compare_programs (first, second);
      if (diff == NULL)
        diff = compare_metrics (first_metrics, second_metrics);
      if (diff != NULL)
        report (checker, FALSE, "determinism", "%s: scheduling the same "
                "input twice gave different results: %s", where, diff);
      else
        report (checker, TRUE, "determinism", "%s: the same program and "
                "metrics twice", where);
    }

  /* And with another thread count, from a fresh scheduler object.  The
   * chip already proved deterministic on this program above, so only the
   * programs are compared. */
  if (get_threads (scheduler, &threads))
    {
      guint other = threads == 1 ? 2 : 1;
      g_autofree char *extra = g_strdup_printf ("threads=%u", other);
      g_autoptr (ElkScheduler) scheduler2 = NULL;
      g_autoptr (ElkAllocator) allocator2 = NULL;
      g_autoptr (ElkProgram) third = NULL;
      g_autofree char *threads_text = threads == 0
                                        ? g_strdup ("0 (one per processor)")
                                        : g_strdup_printf ("%u", threads);

      g_clear_pointer (&diff, g_free);
      if (!create_pair (checker, extra, &scheduler2, &allocator2, &error))
        {
          not_run (checker, "%s: %s", where, error->message);
          return;
        }
      if (schedule_and_run (checker, where, scheduler2, allocator2,
                            ELK_CHIP (chip), spec, plans, &third, NULL,
                            NULL, NULL))
        {
          diff = compare_programs (first, third);
          if (diff != NULL)
            report (checker, FALSE, "determinism", "%s: threads=%s and "
                    "threads=%u gave different results: %s", where,
                    threads_text, other, diff);
          else
            report (checker, TRUE, "determinism", "%s: the same program "
                    "with threads=%s and threads=%u", where,
                    threads_text, other);
        }
    }

  /* The gap between the scheduler's estimate and the chip. */
  if (checker->max_gap >= 0)
    {
      double gap = (row->estimate_s - row->latency_s) / row->latency_s;
      if (isnan (row->estimate_s))
        report (checker, FALSE, "gap", "%s: the scheduler gave no estimate "
                "(elk_program_set_estimate), so the gap cannot be within "
                "%g", where, checker->max_gap);
      else if (!(fabs (gap) <= checker->max_gap))
        report (checker, FALSE, "gap", "%s: estimate %.6g s, measured "
                "%.6g s: gap %+.1f%%, more than the allowed %.1f%%", where,
                row->estimate_s, row->latency_s, 100 * gap,
                100 * checker->max_gap);
      else
        report (checker, TRUE, "gap", "%s: gap %+.1f%%, within %.1f%%",
                where, 100 * gap, 100 * checker->max_gap);
    }
}

static void
print_gap_table (Checker *checker)
{
  if (checker->gaps->len == 0)
    return;
  g_print ("\nestimate against measurement (gap = (estimate - latency) / "
           "latency):\n");
  g_print ("  %-18s %-10s %14s %14s %9s\n", "graph", "chip", "estimate_s",
           "latency_s", "gap");
  for (guint i = 0; i < checker->gaps->len; i++)
    {
      const GapRow *row = checker->gaps->pdata[i];
      g_autofree char *estimate = NULL;
      g_autofree char *gap = NULL;

      if (isnan (row->estimate_s))
        {
          estimate = g_strdup ("-");
          gap = g_strdup ("-");
        }
      else
        {
          estimate = g_strdup_printf ("%.6g", row->estimate_s);
          gap = g_strdup_printf ("%+.1f%%", 100 * (row->estimate_s
                                                   - row->latency_s)
                                              / row->latency_s);
        }
      g_print ("  %-18s %-10s %14s %14.6g %9s\n", row->graph, row->chip,
               estimate, row->latency_s, gap);
    }
}

/* Loads the graphs: the built-in ones, then the frontend of every --graph
 * experiment (its first point).  Returns FALSE with an error for a bad
 * --graph file. */
static gboolean
load_graphs (Checker *checker,
             gboolean builtin,
             const char *corpus,
             char **experiments,
             gboolean quick,
             GPtrArray *graphs,
             GError **error)
{
  for (guint i = 0; builtin && i < G_N_ELEMENTS (builtin_graphs); i++)
    {
      const BuiltinGraph *b = &builtin_graphs[i];
      GraphEntry *entry = g_new0 (GraphEntry, 1);
      g_autoptr (GPtrArray) params = g_ptr_array_new_with_free_func (g_free);
      g_autoptr (GObject) frontend = NULL;
      g_autoptr (GError) local_error = NULL;

      entry->label = g_strdup (b->label);
      g_ptr_array_add (graphs, entry);
      if (elk_registry_lookup (checker->registry, ELK_TYPE_FRONTEND,
                               b->frontend) == NULL)
        {
          entry->skipped = g_strdup_printf ("no '%s' frontend",
                                            b->frontend);
          continue;
        }
      for (guint p = 0; b->params[p] != NULL; p++)
        g_ptr_array_add (params, g_strdup (b->params[p]));
      if (b->corpus_model != NULL)
        {
          g_autofree char *model = corpus != NULL
                                     ? g_build_filename (corpus,
                                                         b->corpus_model,
                                                         NULL)
                                     : NULL;
          if (model == NULL || !g_file_test (model, G_FILE_TEST_IS_REGULAR))
            {
              entry->skipped = g_strdup_printf (
                "no %s in the corpus (%s; set ELK_CORPUS or --corpus)",
                b->corpus_model, corpus != NULL ? corpus : "none given");
              continue;
            }
          g_ptr_array_add (params, g_strdup_printf ("model=%s", model));
        }
      g_ptr_array_add (params, NULL);
      frontend = create_feature (checker->registry, ELK_TYPE_FRONTEND,
                                 b->frontend,
                                 (const char *const *) params->pdata,
                                 &local_error);
      if (frontend != NULL)
        entry->graph = elk_frontend_load (ELK_FRONTEND (frontend),
                                          &local_error);
      if (entry->graph == NULL)
        not_run (checker, "%s: %s", entry->label, local_error->message);
    }

  for (guint i = 0; experiments != NULL && experiments[i] != NULL; i++)
    {
      g_autoptr (ElkExperiment) experiment = NULL;
      g_autoptr (GObject) frontend = NULL;
      g_autoptr (GError) local_error = NULL;
      GraphEntry *entry;

      experiment = elk_experiment_load (experiments[i], checker->registry,
                                        error);
      if (experiment == NULL)
        return FALSE;
      if (quick)
        elk_experiment_set_quick (experiment);
      entry = g_new0 (GraphEntry, 1);
      entry->label = g_path_get_basename (experiments[i]);
      if (g_str_has_suffix (entry->label, ".xml"))
        entry->label[strlen (entry->label) - 4] = '\0';
      g_ptr_array_add (graphs, entry);
      frontend = elk_experiment_create_component (experiment, 0,
                                                  ELK_TYPE_FRONTEND, 0,
                                                  &local_error);
      if (frontend != NULL)
        entry->graph = elk_frontend_load (ELK_FRONTEND (frontend),
                                          &local_error);
      if (entry->graph == NULL)
        not_run (checker, "%s (%s): %s", entry->label, experiments[i],
                 local_error->message);
    }
  return TRUE;
}

/* --valgrind: runs this same command again, without --valgrind, under
 * valgrind memcheck, and adds the memcheck verdict to the child's. */
static int
rerun_under_valgrind (int argc, char **argv)
{
  g_autofree char *valgrind = g_find_program_in_path ("valgrind");
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  g_autoptr (GStrvBuilder) builder = g_strv_builder_new ();
  g_auto (GStrv) child_argv = NULL;
  g_auto (GStrv) envp = g_get_environ ();
  g_autofree char *error_exit = g_strdup_printf ("--error-exitcode=%d",
                                                 VALGRIND_ERROR_EXIT);
  g_autoptr (GError) error = NULL;
  int wait_status = 0;
  int code;

  if (valgrind == NULL)
    {
      g_printerr ("elk-check-plugin: --valgrind needs valgrind, which is not "
                  "on PATH (install it, e.g. 'apt-get install valgrind', or "
                  "drop --valgrind)\n");
      return EXIT_USAGE;
    }
  g_strv_builder_add_many (builder, valgrind, "--quiet", "--leak-check=full",
                           "--errors-for-leak-kinds=definite",
                           "--show-leak-kinds=definite", error_exit,
                           self != NULL ? self : argv[0], NULL);
  for (int i = 1; i < argc; i++)
    if (strcmp (argv[i], "--valgrind") != 0)
      g_strv_builder_add (builder, argv[i]);
  child_argv = g_strv_builder_end (builder);
  /* Plain malloc, so that valgrind sees every block. */
  envp = g_environ_setenv (g_steal_pointer (&envp), "G_SLICE",
                           "always-malloc", TRUE);
  envp = g_environ_setenv (g_steal_pointer (&envp), "G_DEBUG", "gc-friendly",
                           TRUE);

  g_print ("elk-check-plugin: running the check under valgrind memcheck "
           "(%s)\n", valgrind);
  if (!g_spawn_sync (NULL, child_argv, envp,
                     G_SPAWN_CHILD_INHERITS_STDIN, NULL, NULL, NULL, NULL,
                     &wait_status, &error))
    {
      g_printerr ("elk-check-plugin: cannot run valgrind: %s\n",
                  error->message);
      return EXIT_USAGE;
    }
  if (!WIFEXITED (wait_status))
    {
      g_print ("FAIL  %-12s the check died under valgrind (signal %d)\n",
               "memcheck", WIFSIGNALED (wait_status)
                             ? WTERMSIG (wait_status) : 0);
      return EXIT_CHECK_FAILED;
    }
  code = WEXITSTATUS (wait_status);
  if (code == VALGRIND_ERROR_EXIT)
    {
      g_print ("FAIL  %-12s valgrind reported memory errors or definite "
               "leaks (above)\n", "memcheck");
      return EXIT_CHECK_FAILED;
    }
  if (code == 0 || code == EXIT_CHECK_FAILED || code == EXIT_NOT_RUN)
    g_print ("PASS  %-12s no memory errors, no definite leaks\n",
             "memcheck");
  return code;
}

/* The command line. */
typedef struct
{
  char **plugin_paths;
  char **params;
  char **experiments;
  char **chip_names;
  char *scheduler;
  char *allocator;
  char *corpus;
  char *max_gap_text;
  gboolean valgrind, no_builtin, quick;
} Options;

static void
options_clear (Options *o)
{
  g_strfreev (o->plugin_paths);
  g_strfreev (o->params);
  g_strfreev (o->experiments);
  g_strfreev (o->chip_names);
  g_free (o->scheduler);
  g_free (o->allocator);
  g_free (o->corpus);
  g_free (o->max_gap_text);
}

static gboolean
parse_options (Options *o, int *argc, char ***argv)
{
  g_autoptr (GOptionContext) context = NULL;
  g_autoptr (GError) error = NULL;
  GOptionEntry entries[] = {
    { "plugin-path", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o->plugin_paths,
      "Also look for plugins in DIR, before ELK_PLUGIN_PATH (repeatable)",
      "DIR" },
    { "param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &o->params,
      "Set a parameter of the plugin under test (repeatable)",
      "NAME=VALUE" },
    { "scheduler", 0, 0, G_OPTION_ARG_STRING, &o->scheduler,
      "Checking an allocator, run it under this scheduler (default: elk)",
      "NAME" },
    { "allocator", 0, 0, G_OPTION_ARG_STRING, &o->allocator,
      "Checking a scheduler, give it this allocator (default: cost-aware)",
      "NAME" },
    { "graph", 'g', 0, G_OPTION_ARG_FILENAME_ARRAY, &o->experiments,
      "Also check on the frontend of this experiment file (repeatable)",
      "EXPERIMENT.xml" },
    { "quick", 0, 0, G_OPTION_ARG_NONE, &o->quick,
      "Cut --graph models to at most 2 layers, as elk-run --quick", NULL },
    { "no-builtin", 0, 0, G_OPTION_ARG_NONE, &o->no_builtin,
      "Check only on the --graph experiments", NULL },
    { "chip", 'c', 0, G_OPTION_ARG_STRING_ARRAY, &o->chip_names,
      "Check only on this shipped chip (repeatable; default: analytic, "
      "noc-sim and ipu-pod)", "NAME" },
    { "corpus", 0, 0, G_OPTION_ARG_FILENAME, &o->corpus,
      "Folder of the model corpus (default: $ELK_CORPUS) for the ONNX "
      "graph", "DIR" },
    { "max-gap", 0, 0, G_OPTION_ARG_STRING, &o->max_gap_text,
      "Fail when |estimate - latency| / latency exceeds FRACTION on any "
      "chip", "FRACTION" },
    { "valgrind", 0, 0, G_OPTION_ARG_NONE, &o->valgrind,
      "Run the check under valgrind memcheck; memory errors and definite "
      "leaks fail", NULL },
    G_OPTION_ENTRY_NULL
  };

  context = g_option_context_new ("scheduler|allocator NAME");
  g_option_context_set_summary (
    context, "Check a scheduler or allocator plugin on small and real graphs "
             "on every shipped chip:\nvalid programs, determinism (twice, "
             "and at another thread count), and the gap\nbetween the "
             "scheduler's estimate and each chip's measurement.");
  g_option_context_set_description (
    context, "Exit status: 0 every check passed, 1 bad command line, 2 bad "
             "input (unknown\nplugin or parameter, bad value, bad --graph "
             "file), 3 a check failed, 4 a graph\nor chip could not be set "
             "up.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, argc, argv, &error))
    {
      g_printerr ("elk-check-plugin: %s\n", error->message);
      return FALSE;
    }
  return TRUE;
}

/* The kind and name of the plugin under test and the options that depend
 * on them; returns -1 to go on, or the exit code. */
static int
check_options (const Options *o, int argc, char **argv, Checker *checker)
{
  if (argc != 3)
    {
      g_printerr ("elk-check-plugin: expected a kind (scheduler or "
                  "allocator) and a feature name, e.g. 'elk-check-plugin "
                  "scheduler basic'; see --help\n");
      return EXIT_USAGE;
    }
  if (strcmp (argv[1], "scheduler") == 0)
    checker->kind = ELK_TYPE_SCHEDULER;
  else if (strcmp (argv[1], "allocator") == 0)
    checker->kind = ELK_TYPE_ALLOCATOR;
  else
    {
      g_printerr ("elk-check-plugin: unknown kind '%s': expected scheduler "
                  "or allocator\n", argv[1]);
      return EXIT_USAGE;
    }
  if (checker->kind == ELK_TYPE_SCHEDULER && o->scheduler != NULL)
    {
      g_printerr ("elk-check-plugin: --scheduler is for checking an "
                  "allocator; the scheduler under test is '%s'\n", argv[2]);
      return EXIT_USAGE;
    }
  if (checker->kind == ELK_TYPE_ALLOCATOR && o->allocator != NULL)
    {
      g_printerr ("elk-check-plugin: --allocator is for checking a "
                  "scheduler; the allocator under test is '%s'\n", argv[2]);
      return EXIT_USAGE;
    }
  checker->max_gap = -1;
  if (o->max_gap_text != NULL)
    {
      char *end = NULL;
      checker->max_gap = g_ascii_strtod (o->max_gap_text, &end);
      if (*o->max_gap_text == '\0' || end == NULL || *end != '\0'
          || !isfinite (checker->max_gap) || checker->max_gap < 0)
        {
          g_printerr ("elk-check-plugin: --max-gap: '%s' is not a "
                      "non-negative fraction (0.25 allows 25%%)\n",
                      o->max_gap_text);
          return EXIT_USAGE;
        }
    }
  if (o->no_builtin && o->experiments == NULL)
    {
      g_printerr ("elk-check-plugin: --no-builtin leaves no graph; give "
                  "one with --graph EXPERIMENT.xml\n");
      return EXIT_USAGE;
    }
  return -1;
}

/* The shipped chips --chip selects (all by default), or NULL after
 * printing the message for an unknown name. */
static GPtrArray *
select_chips (char **chip_names)
{
  GPtrArray *chips = g_ptr_array_new ();

  for (guint i = 0; i < G_N_ELEMENTS (shipped_chips); i++)
    if (chip_names == NULL
        || g_strv_contains ((const char *const *) chip_names,
                            shipped_chips[i].name))
      g_ptr_array_add (chips, (gpointer) &shipped_chips[i]);
  for (guint i = 0; chip_names != NULL && chip_names[i] != NULL; i++)
    {
      gboolean known = FALSE;
      for (guint c = 0; c < G_N_ELEMENTS (shipped_chips); c++)
        known = known || strcmp (chip_names[i], shipped_chips[c].name) == 0;
      if (!known)
        {
          g_printerr ("elk-check-plugin: --chip: unknown chip '%s': expected "
                      "one of analytic, noc-sim, ipu-pod\n", chip_names[i]);
          g_ptr_array_unref (chips);
          return NULL;
        }
    }
  return chips;
}

/* The registry, and the plugin under test with its partner and
 * parameters, before any graph is built; FALSE with the message printed
 * (and @checker cleared) when they cannot be created. */
static gboolean
setup_checker (Options *o, char **argv, Checker *checker)
{
  /* Static, because the checker outlives this function (a compound
   * literal here would not). */
  static char *no_params[] = { NULL };
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkScheduler) probe_scheduler = NULL;
  g_autoptr (ElkAllocator) probe_allocator = NULL;

  checker->name = argv[2];
  checker->scheduler = checker->kind == ELK_TYPE_SCHEDULER ? argv[2]
                       : o->scheduler != NULL              ? o->scheduler
                                                           : "elk";
  checker->allocator = checker->kind == ELK_TYPE_ALLOCATOR ? argv[2]
                       : o->allocator != NULL              ? o->allocator
                                                           : "cost-aware";
  checker->params = o->params != NULL ? o->params : no_params;
  checker->gaps
    = g_ptr_array_new_with_free_func ((GDestroyNotify) gap_row_free);
  if (o->corpus == NULL && g_getenv ("ELK_CORPUS") != NULL
      && *g_getenv ("ELK_CORPUS") != '\0')
    o->corpus = g_strdup (g_getenv ("ELK_CORPUS"));

  checker->registry = elk_registry_new ();
  for (guint i = 0; o->plugin_paths != NULL && o->plugin_paths[i] != NULL;
       i++)
    elk_registry_add_path (checker->registry, o->plugin_paths[i]);
  elk_registry_add_default_paths (checker->registry);
  elk_registry_scan (checker->registry);

  /* The plugin under test, its partner and the parameters, before any
   * graph is built. */
  if (!create_pair (checker, NULL, &probe_scheduler, &probe_allocator,
                    &error))
    {
      const GPtrArray *failures
        = elk_registry_get_failures (checker->registry);
      g_printerr ("elk-check-plugin: %s\n", error->message);
      for (guint i = 0; i < failures->len; i++)
        g_printerr ("  a plugin file failed to load: %s\n",
                    ((const ElkLoadFailure *) failures->pdata[i])
                      ->error->message);
      g_clear_object (&checker->registry);
      g_ptr_array_unref (checker->gaps);
      return FALSE;
    }
  {
    const ElkFeature *f = elk_registry_lookup (checker->registry,
                                               checker->kind, checker->name);
    g_print ("elk-check-plugin: %s '%s' (%s), %s '%s'\n", argv[1],
             checker->name,
             f->plugin != NULL ? elk_plugin_get_filename (f->plugin)
                               : "built in",
             checker->kind == ELK_TYPE_SCHEDULER ? "allocator" : "scheduler",
             checker->kind == ELK_TYPE_SCHEDULER ? checker->allocator
                                                 : checker->scheduler);
  }
  return TRUE;
}

/* Every check on every graph and chip, then the gap table and the
 * summary; returns the exit code. */
static int
run_checks (const Options *o, const char *kind_text, Checker *checker,
            GPtrArray *chips)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) graphs = NULL;

  graphs = g_ptr_array_new_with_free_func ((GDestroyNotify) graph_entry_free);
  if (!load_graphs (checker, !o->no_builtin, o->corpus, o->experiments,
                    o->quick, graphs, &error))
    {
      g_printerr ("elk-check-plugin: %s\n", error->message);
      g_clear_object (&checker->registry);
      g_ptr_array_unref (checker->gaps);
      return EXIT_BAD_INPUT;
    }

  for (guint g = 0; g < graphs->len; g++)
    {
      const GraphEntry *entry = graphs->pdata[g];
      if (entry->skipped != NULL)
        {
          g_print ("SKIP  %-12s %s: %s\n", "graph", entry->label,
                   entry->skipped);
          continue;
        }
      if (entry->graph == NULL)
        continue;
      for (guint c = 0; c < chips->len; c++)
        check_point (checker, entry, chips->pdata[c]);
    }

  print_gap_table (checker);
  g_print ("\n%s '%s': %u checks, %u failed%s\n", kind_text, checker->name,
           checker->n_checks, checker->n_failed,
           checker->n_not_run > 0 ? "; some could not run (ERROR above)"
                                  : "");
  g_clear_object (&checker->registry);
  g_ptr_array_unref (checker->gaps);
  if (checker->n_failed > 0)
    return EXIT_CHECK_FAILED;
  if (checker->n_not_run > 0 || checker->n_checks == 0)
    return EXIT_NOT_RUN;
  return EXIT_SUCCESS;
}

int
main (int argc, char *argv[])
{
  g_autoptr (GPtrArray) chips = NULL;
  g_autofree char **orig_argv = g_memdup2 (argv, sizeof (char *)
                                                   * (gsize) (argc + 1));
  int orig_argc = argc;
  Options o = { 0 };
  Checker checker = { 0 };
  int rc;

  setlocale (LC_ALL, "");
  if (!parse_options (&o, &argc, &argv))
    rc = EXIT_USAGE;
  else if ((rc = check_options (&o, argc, argv, &checker)) >= 0)
    ;
  else if ((chips = select_chips (o.chip_names)) == NULL)
    rc = EXIT_USAGE;
  else if (o.valgrind)
    rc = rerun_under_valgrind (orig_argc, orig_argv);
  else if (!setup_checker (&o, argv, &checker))
    rc = EXIT_BAD_INPUT;
  else
    rc = run_checks (&o, argv[1], &checker, chips);
  options_clear (&o);
  return rc;
}
