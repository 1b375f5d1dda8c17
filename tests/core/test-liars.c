/* tests/core/test-liars.c: a plugin cannot bend a measurement (issue 16,
 * item 6).
 *
 * The liar fixture scheduler (tests/fixtures/plugins/liars.c) builds one
 * honest program and lies about it in each way a plugin could try: it
 * declares zero bytes, predicts no NoC time, predicts loads ten times
 * faster, preloads everything at once while declaring zero bytes (or
 * nothing), gives an operator a preload plan that cannot lead to its
 * execute plan, reserves a zero execution budget, or forges a plan's
 * time.  It also throttles its preloads, which is a decision, not a lie.
 *
 * On each of the analytic, noc-sim and ipu-pod chips
 * (tests/fixtures/experiments/liars-<chip>.xml), the test
 *
 *  - schedules every variant without the scheduler wrapper's check and
 *    hands the program straight to elk_chip_run(): every lie that breaks a
 *    rule is refused by the chip with "<chip type> refuses the program: "
 *    and the validator's message, which names what is wrong with the
 *    values that show it; every lie about a prediction is measured exactly
 *    as the honest twin, every ElkMetrics field bit for bit;
 *  - runs the same experiment with elk-run: the refused rows fail with the
 *    same message, every column of the other rows equals the honest row's
 *    byte for byte except label and estimate_s, and elk-run exits with
 *    the code for a plugin's broken contract (3);
 *  - checks that throttled preloads are priced on the analytic chip.
 *
 * One more variant claims the assumptions only a bound like Ideal makes
 * (elk_program_set_assumptions()).  It is neither a plan nor the step
 * order, so elk-run refuses it unless the experiment declares the
 * scheduler a bound (bound="true", the shipped Ideal too):
 * the row fails as a broken contract.  Run directly, a chip applies what
 * the caller hands it, and a chip that measures such a program unlike its
 * honest twin must say so in its metrics model.
 *
 * The three chips are configured alike (one chip of 1472 cores with 624
 * KiB each), so /liars/same-message-on-every-chip also checks that every
 * chip refuses each lie with the same words.
 */
#include "elk-test-util.h"

#include <json-glib/json-glib.h>

#include <glib/gstdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The exit code of elk-run when a scheduler returns an invalid program:
 * core/elk-runner.c counts ELK_SCHEDULE_ERROR_INVALID_PROGRAM, whether the
 * scheduler wrapper or the chip found it, as the plugin's broken contract
 * (3 in docs/user-guide.md's table and in docs/plugin-guide.md), not as a
 * point that failed to run (4). */
#define EXIT_INVALID_PROGRAM 3

static const char *const chip_names[] = { "analytic", "noc-sim", "ipu-pod" };

/* The variants, in the order of the fixture experiments' <scheduler>
 * elements (their labels). */
enum
{
  HONEST,
  ZERO_BYTES,
  NO_NOC,
  FAST_LOADS,
  ALL_AT_ONCE,
  ALL_AT_ONCE_UNDECLARED,
  INCOMPATIBLE,
  ZERO_BUDGET,
  FORGED_PLAN,
  THROTTLED,
  CLAIMS_BOUND,
  N_VARIANTS
};

typedef struct
{
  const char *label;
  gboolean refused;
} Variant;

static const Variant variants[N_VARIANTS] = {
  [HONEST] = { "honest", FALSE },
  [ZERO_BYTES] = { "zero-bytes", TRUE },
  [NO_NOC] = { "no-noc", FALSE },
  [FAST_LOADS] = { "fast-loads", FALSE },
  [ALL_AT_ONCE] = { "all-at-once", TRUE },
  [ALL_AT_ONCE_UNDECLARED] = { "all-at-once-undeclared", TRUE },
  [INCOMPATIBLE] = { "incompatible", TRUE },
  [ZERO_BUDGET] = { "zero-budget", TRUE },
  [FORGED_PLAN] = { "forged-plan", TRUE },
  [THROTTLED] = { "throttled", FALSE },
  [CLAIMS_BOUND] = { "claims-bound", FALSE },
};

static char *tmpdir;
static ElkRegistry *registry;
/* The validator's message for each refused variant on each chip. */
static char *messages[G_N_ELEMENTS (chip_names)][N_VARIANTS];

/* Which shipped plugin the test needs but this build lacks, or NULL. */
static const char *
missing_plugin (void)
{
  static const struct
  {
    const char *kind;
    const char *name;
  } needed[] = {
    { "frontend", "llama" },     { "chip", "analytic" },
    { "chip", "noc-sim" },       { "chip", "ipu-pod" },
    { "allocator", "fixed-split" }, { "scheduler", "liar" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (needed); i++)
    if (elk_registry_lookup (registry,
                             elk_kind_from_string (needed[i].kind),
                             needed[i].name)
        == NULL)
      return needed[i].name;
  return NULL;
}

static gboolean
doubles_identical (double a, double b)
{
  return memcmp (&a, &b, sizeof a) == 0;
}

/* The first field in which two measurements differ, bit for bit, as
 * "name = a, not b", or NULL. */
static char *
metrics_difference (const ElkMetrics *a, const ElkMetrics *b)
{
  double x, y;
  const char *field = elk_metrics_first_difference (a, b, &x, &y);

  return field != NULL ? g_strdup_printf ("%s = %.17g, but its honest twin "
                                          "%.17g", field, x, y)
                       : NULL;
}

/* Every field of two chips' metrics, bit for bit. */
static void
assert_same_metrics (const char *where,
                     const ElkMetrics *a,
                     const ElkMetrics *b)
{
  g_autofree char *diff = metrics_difference (a, b);

  if (diff != NULL)
    g_error ("%s: measured %s", where, diff);
  g_assert_cmpstr (a->model, ==, b->model);
}

/* What the validator must say about each refused lie, from the program
 * itself, its derived costs and the honest twin. */
static void
assert_refusal_message (guint v,
                        const char *message,
                        const ElkProgram *program,
                        const ElkProgram *honest,
                        const ElkPlanSet *plans)
{
  ElkGraph *graph = elk_program_get_graph (program);
  const ElkChipSpec *spec = elk_plan_set_get_spec (plans);
  guint64 usable = elk_chip_spec_get_usable_sram (spec);
  const char *op0 = elk_graph_get_op (graph, 0)->name;
  const ElkPlan *plan0 = &elk_program_peek_op (program, 0)->exec_plan;
  g_autofree char *expected = NULL;

  switch (v)
    {
    case ZERO_BYTES:
      /* The first declaration that disagrees: operator, field, declared
       * and derived value. */
      expected = g_strdup_printf ("operator '%s': hot_bytes declared 0 "
                                  "bytes, but its plans and the program's "
                                  "steps give %" G_GUINT64_FORMAT, op0,
                                  plan0->hot_bytes);
      g_assert_cmpuint (plan0->hot_bytes, >, 0);
      g_assert_cmpstr (message, ==, expected);
      break;
    case ALL_AT_ONCE:
    case ALL_AT_ONCE_UNDECLARED:
      {
        /* The first execute whose resident preloads cannot fit. */
        g_autoptr (GError) error = NULL;
        g_autofree ElkOpCost *costs = elk_program_derive (program, plans,
                                                          &error);
        guint i = 0;

        g_assert_no_error (error);
        while (i < elk_graph_get_n_ops (graph)
               && costs[i].resident_bytes <= usable)
          i++;
        g_assert_cmpuint (i, <, elk_graph_get_n_ops (graph));
        expected = g_strdup_printf ("while '%s' executes, cores need %"
                                    G_GUINT64_FORMAT " bytes of SRAM (its "
                                    "execution space %" G_GUINT64_FORMAT
                                    " plus the preload spaces of %u "
                                    "preloaded operators), but only %"
                                    G_GUINT64_FORMAT " of the %"
                                    G_GUINT64_FORMAT " per core are usable",
                                    elk_graph_get_op (graph, i)->name,
                                    costs[i].resident_bytes,
                                    costs[i].hot_bytes,
                                    costs[i].preload_number, usable,
                                    spec->sram_per_core);
        g_assert_cmpstr (message, ==, expected);
        g_test_message ("%s: cores need %" G_GUINT64_FORMAT " of %"
                        G_GUINT64_FORMAT " usable bytes",
                        variants[v].label, costs[i].resident_bytes, usable);
        break;
      }
    case INCOMPATIBLE:
      g_assert_true (g_str_has_prefix (message, "the preload plan does not "
                                                "lead to the execute plan: "
                                                "operator '"));
      g_assert_nonnull (strstr (message, "with the same spatial vector"));
      break;
    case ZERO_BUDGET:
      expected = g_strdup_printf ("operator '%s': exec_budget is 0 bytes per "
                                  "core; expected at least its execute "
                                  "plan's %" G_GUINT64_FORMAT " and at most "
                                  "the %" G_GUINT64_FORMAT " usable", op0,
                                  plan0->hot_bytes, usable);
      g_assert_cmpstr (message, ==, expected);
      break;
    case FORGED_PLAN:
      {
        const ElkPlan *real = &elk_program_peek_op (honest, 0)->exec_plan;
        g_assert_cmpfloat (plan0->time_s, <, real->time_s);
        expected = g_strdup_printf ("operator '%s': the execute plan "
                                    "declares time_s = %.17g, but the plan "
                                    "cost model derives %.17g from its "
                                    "spatial vector and rotation factors",
                                    op0, plan0->time_s, real->time_s);
        g_assert_cmpstr (message, ==, expected);
        break;
      }
    default:
      g_assert_not_reached ();
    }
}

/* The lie a measured variant tells is really there: its predictions differ
 * from the honest twin's. */
static void
assert_lie_present (guint v, const ElkProgram *program,
                    const ElkProgram *honest)
{
  guint n_ops = elk_graph_get_n_ops (elk_program_get_graph (program));
  gboolean differs = FALSE;

  for (guint i = 0; i < n_ops; i++)
    {
      const ElkProgramOp *a = elk_program_peek_op (program, i);
      const ElkProgramOp *b = elk_program_peek_op (honest, i);
      g_assert_true (memcmp (&a->exec_plan, &b->exec_plan,
                             sizeof a->exec_plan) == 0);
      g_assert_true (memcmp (&a->preload_plan, &b->preload_plan,
                             sizeof a->preload_plan) == 0);
      if (v == NO_NOC)
        {
          g_assert_cmpfloat (a->est_noc_s, ==, 0);
          differs |= b->est_noc_s > 0;
        }
      else if (v == FAST_LOADS)
        differs |= a->est_load_s < b->est_load_s;
      else if (v == THROTTLED)
        {
          g_assert_cmpfloat (a->preload_share, ==, 0.5);
          differs = TRUE;
        }
      else if (v == CLAIMS_BOUND)
        differs = elk_program_get_assumptions (program) != 0;
    }
  g_assert_true (differs);
  if (v == FAST_LOADS)
    g_assert_cmpfloat (elk_program_get_estimate (program), <,
                       elk_program_get_estimate (honest) / 1000);
}

/* Every variant in process, on one chip: the chip refuses or measures the
 * program itself, with no scheduler wrapper in between. */
static void
run_in_process (ElkExperiment *experiment, guint c)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) frontend = NULL;
  g_autoptr (GObject) chip = NULL;
  g_autoptr (ElkGraph) graph = NULL;
  g_autoptr (ElkChipSpec) spec = NULL;
  g_autoptr (ElkPlanSet) plans = NULL;
  g_autoptr (ElkProgram) honest = NULL;
  g_autoptr (ElkMetrics) honest_metrics = NULL;
  ElkPlanOptions options = { 0 };

  frontend = elk_experiment_create_component (experiment, 0,
                                              ELK_TYPE_FRONTEND, 0, &error);
  g_assert_no_error (error);
  graph = elk_frontend_load (ELK_FRONTEND (frontend), &error);
  g_assert_no_error (error);
  chip = elk_experiment_create_component (experiment, 0, ELK_TYPE_CHIP, 0,
                                          &error);
  g_assert_no_error (error);
  spec = elk_chip_dup_spec (ELK_CHIP (chip), &error);
  g_assert_no_error (error);
  plans = elk_plan_set_new (graph, spec, &options, &error);
  g_assert_no_error (error);

  for (guint v = 0; v < N_VARIANTS; v++)
    {
      g_autoptr (GObject) scheduler = NULL;
      g_autoptr (GObject) allocator = NULL;
      g_autoptr (ElkProgram) program = NULL;
      g_autoptr (ElkProgram) checked = NULL;
      g_autoptr (ElkMetrics) metrics = NULL;
      g_autoptr (GError) verror = NULL;
      g_autoptr (GError) cerror = NULL;
      g_autoptr (GError) serror = NULL;
      g_autofree char *where = g_strdup_printf ("%s on %s",
                                                variants[v].label,
                                                chip_names[c]);

      g_assert_cmpstr (elk_experiment_get_scheduler_label (experiment, v),
                       ==, variants[v].label);
      scheduler = elk_experiment_create_component (experiment, 0,
                                                   ELK_TYPE_SCHEDULER, v,
                                                   &error);
      g_assert_no_error (error);
      allocator = elk_experiment_create_component (experiment, 0,
                                                   ELK_TYPE_ALLOCATOR, v,
                                                   &error);
      g_assert_no_error (error);

      /* Straight from the plugin, unchecked. */
      program = ELK_SCHEDULER_GET_IFACE (scheduler)->schedule (
        ELK_SCHEDULER (scheduler), plans, ELK_ALLOCATOR (allocator),
        &error);
      g_assert_no_error (error);
      g_assert_nonnull (program);

      elk_program_validate (program, plans, &verror);
      metrics = elk_chip_run (ELK_CHIP (chip), program, plans, &cerror);
      checked = elk_scheduler_schedule (ELK_SCHEDULER (scheduler), plans,
                                        ELK_ALLOCATOR (allocator), &serror);

      if (variants[v].refused)
        {
          g_autofree char *chip_says = NULL;
          g_autofree char *scheduler_says = NULL;

          g_assert_nonnull (verror);
          g_assert_error (verror, ELK_SCHEDULE_ERROR,
                          ELK_SCHEDULE_ERROR_INVALID_PROGRAM);
          g_test_message ("%s: refused: %s", where, verror->message);
          assert_refusal_message (v, verror->message, program, honest,
                                  plans);

          /* The chip refuses it with the same message before running. */
          g_assert_null (metrics);
          g_assert_error (cerror, ELK_SCHEDULE_ERROR,
                          ELK_SCHEDULE_ERROR_INVALID_PROGRAM);
          chip_says = g_strdup_printf ("%s refuses the program: %s",
                                       G_OBJECT_TYPE_NAME (chip),
                                       verror->message);
          g_assert_cmpstr (cerror->message, ==, chip_says);

          /* And so does the scheduler wrapper. */
          g_assert_null (checked);
          g_assert_error (serror, ELK_SCHEDULE_ERROR,
                          ELK_SCHEDULE_ERROR_INVALID_PROGRAM);
          scheduler_says = g_strdup_printf ("LiarScheduler produced an "
                                            "invalid program: %s",
                                            verror->message);
          g_assert_cmpstr (serror->message, ==, scheduler_says);
          messages[c][v] = g_strdup (verror->message);
          continue;
        }

      g_assert_no_error (verror);
      g_assert_no_error (cerror);
      g_assert_no_error (serror);
      g_assert_nonnull (metrics);
      g_assert_nonnull (checked);
      g_test_message ("%s: latency %.9g s, estimate %.9g s", where,
                      metrics->latency_s, elk_program_get_estimate (program));
      if (v == HONEST)
        {
          honest = g_steal_pointer (&program);
          honest_metrics = g_steal_pointer (&metrics);
          continue;
        }
      assert_lie_present (v, program, honest);
      if (v == THROTTLED)
        {
          /* A decision, priced: the analytic chip derives each preload's
           * time at its share. */
          if (g_str_equal (chip_names[c], "analytic"))
            g_assert_cmpfloat (metrics->latency_s, >=,
                               honest_metrics->latency_s);
          if (doubles_identical (metrics->latency_s,
                                 honest_metrics->latency_s))
            g_test_message ("%s: preload_share 0.5 measured as the honest "
                            "twin (%.9g s)", where, metrics->latency_s);
          continue;
        }
      if (v == CLAIMS_BOUND)
        {
          g_autofree char *diff = metrics_difference (metrics,
                                                      honest_metrics);
          if (diff != NULL)
            {
              /* At least the chip says what it assumed. */
              g_assert_nonnull (strstr (metrics->model, "assum"));
              g_test_message ("%s: a program with a bound's assumptions "
                              "measured %s (model: %s)", where, diff,
                              metrics->model);
            }
          continue;
        }
      assert_same_metrics (where, metrics, honest_metrics);
    }
}

/* The runner's rows, by label. */
static GHashTable *
read_rows (const char *outdir, JsonParser *parser)
{
  g_autofree char *path = g_build_filename (outdir, "results.json", NULL);
  g_autoptr (GError) error = NULL;
  GHashTable *rows = g_hash_table_new (g_str_hash, g_str_equal);
  JsonArray *array;

  g_assert_true (json_parser_load_from_file (parser, path, &error));
  g_assert_no_error (error);
  array = json_object_get_array_member (
    json_node_get_object (json_parser_get_root (parser)), "rows");
  g_assert_cmpuint (json_array_get_length (array), ==, N_VARIANTS);
  for (guint i = 0; i < json_array_get_length (array); i++)
    {
      JsonObject *row = json_array_get_object_element (array, i);
      g_hash_table_insert (rows,
                           (gpointer) json_object_get_string_member (row,
                                                                     "label"),
                           row);
    }
  return rows;
}

/* Every column of a row equals the honest row's, byte for byte as
 * results.json writes it, except the label, the estimate and @also. */
static void
assert_same_columns (JsonObject *row, JsonObject *honest, const char *also)
{
  g_autoptr (GList) names = json_object_get_members (honest);

  g_assert_cmpuint (json_object_get_size (row), ==,
                    json_object_get_size (honest));
  for (GList *l = names; l != NULL; l = l->next)
    {
      const char *name = l->data;
      g_autofree char *a = NULL;
      g_autofree char *b = NULL;

      if (g_str_equal (name, "label") || g_str_equal (name, "estimate_s")
          || g_strcmp0 (name, also) == 0)
        continue;
      g_assert_true (json_object_has_member (row, name));
      a = json_to_string (json_object_get_member (row, name), FALSE);
      b = json_to_string (json_object_get_member (honest, name), FALSE);
      if (!g_str_equal (a, b))
        g_error ("%s: column %s is %s, but the honest row's is %s",
                 json_object_get_string_member (row, "label"), name, a, b);
    }
}

/* The same experiment through elk-run. */
static void
run_elk_run (const char *experiment_path, guint c)
{
  g_autofree char *outdir = g_build_filename (tmpdir, chip_names[c], NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GHashTable) rows = NULL;
  g_autofree char *err = NULL;
  const char *argv[] = { g_getenv ("ELK_RUN"), experiment_path, "-o",
                         outdir, "--jobs=1", "--no-report", NULL };
  JsonObject *honest;
  int status = 0;

  g_assert_nonnull (argv[0]);
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL,
                               G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                               &err, &status, &error));
  g_assert_no_error (error);
  g_test_message ("elk-run %s: %s", chip_names[c], err);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, EXIT_INVALID_PROGRAM);

  rows = read_rows (outdir, parser);
  honest = g_hash_table_lookup (rows, "honest");
  g_assert_nonnull (honest);
  g_assert_cmpstr (json_object_get_string_member (honest, "status"), ==,
                   "ok");
  for (guint v = 0; v < N_VARIANTS; v++)
    {
      JsonObject *row = g_hash_table_lookup (rows, variants[v].label);
      const char *row_status;

      g_assert_nonnull (row);
      row_status = json_object_get_string_member (row, "status");
      if (variants[v].refused)
        {
          g_autofree char *expected = g_strdup_printf (
            "LiarScheduler produced an invalid program: %s",
            messages[c][v]);
          g_assert_cmpstr (row_status, ==, "failed");
          g_assert_cmpstr (json_object_get_string_member (row, "error"), ==,
                           expected);
          g_assert_true (json_object_get_null_member (row, "latency_s"));
        }
      else if (v == CLAIMS_BOUND)
        {
          /* Not declared a bound by the experiment: refused. */
          g_assert_cmpstr (row_status, ==, "failed");
          g_assert_nonnull (strstr (json_object_get_string_member (row,
                                                                   "error"),
                                    "as only a bound may"));
          g_assert_true (json_object_get_null_member (row, "latency_s"));
        }
      else if (v == THROTTLED)
        {
          g_assert_cmpstr (row_status, ==, "ok");
          if (g_str_equal (chip_names[c], "analytic"))
            g_assert_cmpfloat (
              json_object_get_double_member (row, "latency_s"), >=,
              json_object_get_double_member (honest, "latency_s"));
        }
      else if (v != HONEST)
        {
          g_assert_cmpstr (row_status, ==, "ok");
          assert_same_columns (row, honest, NULL);
          if (v == FAST_LOADS)
            g_assert_cmpfloat (
              json_object_get_double_member (row, "estimate_s"), <,
              json_object_get_double_member (honest, "estimate_s"));
        }
    }
}

static void
test_chip (gconstpointer data)
{
  guint c = GPOINTER_TO_UINT (data);
  g_autofree char *name = g_strdup_printf ("liars-%s", chip_names[c]);
  g_autofree char *path = elk_test_fixture_experiment (name);
  g_autoptr (ElkExperiment) experiment = NULL;
  g_autoptr (GError) error = NULL;
  const char *missing = missing_plugin ();

  if (missing != NULL)
    {
      g_autofree char *why = g_strdup_printf ("plugin '%s' is not built",
                                              missing);
      g_test_skip (why);
      return;
    }
  experiment = elk_experiment_load (path, registry, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (elk_experiment_get_n_points (experiment), ==, 1);
  g_assert_cmpuint (elk_experiment_get_n_schedulers (experiment), ==,
                    N_VARIANTS);
  run_in_process (experiment, c);
  run_elk_run (path, c);
}

/* Alike chips refuse each lie in the same words. */
static void
test_same_message (void)
{
  if (missing_plugin () != NULL)
    {
      g_test_skip ("a plugin is not built");
      return;
    }
  for (guint v = 0; v < N_VARIANTS; v++)
    for (guint c = 1; c < G_N_ELEMENTS (chip_names); c++)
      {
        if (!variants[v].refused)
          continue;
        g_assert_nonnull (messages[0][v]);
        g_assert_cmpstr (messages[c][v], ==, messages[0][v]);
      }
}

/* The experiment decides which designs are bounds. */
static void
test_bound (void)
{
  g_autofree char *path = elk_test_fixture_experiment ("liars-bound");
  g_autofree char *outdir = g_build_filename (tmpdir, "bound", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autofree char *err = NULL;
  const char *argv[] = { g_getenv ("ELK_RUN"), path, "-o", outdir,
                         "--jobs=1", "--no-report", NULL };
  static const char *const ok[] = { "honest", "declared-bound", "ideal" };
  /* results.json writes an empty field as null. */
  static const char *const assumed[] = { NULL, "free-distribution "
                                             "private-preload-network",
                                         "free-distribution "
                                         "private-preload-network" };
  static const char *const refused[] = { "claims-bound", "ideal-not-bound",
                                         "ideal-undeclared" };
  GHashTable *rows = NULL;
  JsonArray *array;
  int status = 0;

  if (missing_plugin () != NULL)
    {
      g_test_skip ("a plugin is not built");
      return;
    }
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL,
                               G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                               &err, &status, &error));
  g_assert_no_error (error);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, EXIT_INVALID_PROGRAM);
  {
    g_autofree char *json = g_build_filename (outdir, "results.json", NULL);
    json_parser_load_from_file (parser, json, &error);
    g_assert_no_error (error);
  }
  rows = g_hash_table_new (g_str_hash, g_str_equal);
  array = json_object_get_array_member (
    json_node_get_object (json_parser_get_root (parser)), "rows");
  for (guint i = 0; i < json_array_get_length (array); i++)
    {
      JsonObject *row = json_array_get_object_element (array, i);
      g_hash_table_insert (rows, (gpointer) json_object_get_string_member (
                                   row, "label"), row);
    }
  for (guint k = 0; k < G_N_ELEMENTS (ok); k++)
    {
      JsonObject *row = g_hash_table_lookup (rows, ok[k]);
      g_assert_nonnull (row);
      g_assert_cmpstr (json_object_get_string_member (row, "status"), ==,
                       "ok");
      g_assert_cmpstr (json_object_get_string_member (row, "assumptions"),
                       ==, assumed[k]);
    }
  /* Declared a bound, the claim is applied: faster than the honest twin,
   * and labelled so. */
  g_assert_cmpfloat (
    json_object_get_double_member (g_hash_table_lookup (rows,
                                                        "declared-bound"),
                                   "latency_s"), <,
    json_object_get_double_member (g_hash_table_lookup (rows, "honest"),
                                   "latency_s"));
  for (guint k = 0; k < G_N_ELEMENTS (refused); k++)
    {
      JsonObject *row = g_hash_table_lookup (rows, refused[k]);
      const char *message;

      g_assert_nonnull (row);
      g_assert_cmpstr (json_object_get_string_member (row, "status"), ==,
                       "failed");
      message = json_object_get_string_member (row, "error");
      g_test_message ("%s: %s", refused[k], message);
      g_assert_nonnull (strstr (message, "as only a bound may"));
      g_assert_nonnull (strstr (message, refused[k]));
    }
  g_hash_table_unref (rows);
}

int
main (int argc, char *argv[])
{
  g_autofree char *liars = NULL;
  g_autofree char *plugin_dir = NULL;
  g_autofree char *link = NULL;
  g_autofree char *path = NULL;
  g_autoptr (GError) error = NULL;
  int status;

  g_test_init (&argc, &argv, NULL);

  /* Only the liar joins the shipped plugins: a folder of its own, so the
   * broken fixture plugins stay out of the registry and of elk-run. */
  tmpdir = g_dir_make_tmp ("elk-test-liars-XXXXXX", &error);
  g_assert_no_error (error);
  liars = elk_test_fixture_plugin ("liars");
  plugin_dir = g_build_filename (tmpdir, "plugins", NULL);
  g_assert_cmpint (g_mkdir (plugin_dir, 0755), ==, 0);
  link = g_build_filename (plugin_dir, "libelk-liars." G_MODULE_SUFFIX,
                           NULL);
  g_assert_cmpint (symlink (liars, link), ==, 0);
  path = g_strjoin (G_SEARCHPATH_SEPARATOR_S, plugin_dir,
                    g_getenv ("ELK_PLUGIN_PATH"), NULL);
  g_setenv ("ELK_PLUGIN_PATH", path, TRUE);

  registry = elk_test_registry_new_default ();

  for (guint c = 0; c < G_N_ELEMENTS (chip_names); c++)
    {
      g_autofree char *name = g_strdup_printf ("/liars/%s", chip_names[c]);
      g_test_add_data_func (name, GUINT_TO_POINTER (c), test_chip);
    }
  g_test_add_func ("/liars/same-message-on-every-chip", test_same_message);
  g_test_add_func ("/liars/bound", test_bound);
  status = g_test_run ();

  for (guint c = 0; c < G_N_ELEMENTS (chip_names); c++)
    for (guint v = 0; v < N_VARIANTS; v++)
      g_free (messages[c][v]);
  g_object_unref (registry);
  /* The outputs and the link. */
  {
    g_autofree char *quoted = g_shell_quote (tmpdir);
    g_autofree char *cmd = g_strdup_printf ("rm -rf %s", quoted);
    g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);
  }
  g_free (tmpdir);
  return status;
}
