/* test-breakdown.c: where execution time goes (issue 19 item 1).
 *
 * ElkBreakdown's API (sorted cells, sums, copies, the metrics comparison
 * and the operator groups), then the analytic chip's breakdown: on a toy
 * decode stack and on two layers of Llama2-13B decode (b32, KV 2048), for
 * every shipped scheduler and both contention priorities, its cells add up
 * to the latency to 1e-9 relative, its compute, shift, output and
 * re-layout cells are the program's derived costs, and under
 * delay-execution its stall and preload-wait cells are the Fig 18a
 * stall_s and preload_only_s.  Then elk-run: breakdown.csv and the
 * breakdown lists of results.json are byte-identical at -j 1 and -j 2 and
 * add up to each row's latency, results.csv has no breakdown column, and
 * an output folder where breakdown.csv cannot be written or put in place
 * fails the run with the path named and no results.csv left behind.
 */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include "elk-test-util.h"

static ElkRegistry *registry;
static char *tmpdir;

static void
test_api (void)
{
  g_autoptr (ElkBreakdown) b = elk_breakdown_new ();
  g_autoptr (ElkBreakdown) copy = NULL;
  g_autoptr (ElkMetrics) m = elk_metrics_new ("test");
  g_autoptr (ElkMetrics) m2 = NULL;
  ElkTimeComponent c;
  double seconds, x, y;

  elk_breakdown_add (b, "softmax", ELK_TIME_SHIFT, 1.0);
  elk_breakdown_add (b, "matmul", ELK_TIME_STALL, 0.0);
  elk_breakdown_add (b, "matmul", ELK_TIME_COMPUTE, 2.0);
  elk_breakdown_add (b, "matmul", ELK_TIME_COMPUTE, 0.5);
  /* Sorted by group, then component, whatever the order of the adds. */
  g_assert_cmpuint (elk_breakdown_get_n_cells (b), ==, 3);
  g_assert_cmpstr (elk_breakdown_get_cell (b, 0, &c, &seconds), ==, "matmul");
  g_assert_cmpint (c, ==, ELK_TIME_COMPUTE);
  g_assert_cmpfloat (seconds, ==, 2.5);
  g_assert_cmpstr (elk_breakdown_get_cell (b, 1, &c, &seconds), ==, "matmul");
  g_assert_cmpint (c, ==, ELK_TIME_STALL);
  g_assert_cmpfloat (seconds, ==, 0);
  g_assert_cmpstr (elk_breakdown_get_cell (b, 2, &c, NULL), ==, "softmax");
  g_assert_cmpint (c, ==, ELK_TIME_SHIFT);
  g_assert_cmpfloat (elk_breakdown_get (b, "matmul", ELK_TIME_N_COMPONENTS), ==,
                     2.5);
  g_assert_cmpfloat (elk_breakdown_get (b, NULL, ELK_TIME_SHIFT), ==, 1.0);
  g_assert_cmpfloat (elk_breakdown_get (b, "rope", ELK_TIME_SHIFT), ==, 0);
  g_assert_cmpfloat (elk_breakdown_get_total (b), ==, 3.5);

  /* Metrics own their breakdown; copies are deep and compare equal. */
  m->latency_s = 3.5;
  m->breakdown = elk_breakdown_copy (b);
  m2 = elk_metrics_copy (m);
  g_assert_true (m2->breakdown != m->breakdown);
  g_assert_null (elk_metrics_first_difference (m, m2, NULL, NULL));
  elk_breakdown_add (m2->breakdown, "softmax", ELK_TIME_SHIFT, 0.25);
  g_assert_cmpstr (elk_metrics_first_difference (m, m2, &x, &y), ==,
                   "breakdown");
  g_assert_cmpfloat (x, ==, 1.0);
  g_assert_cmpfloat (y, ==, 1.25);
  g_clear_pointer (&m2->breakdown, elk_breakdown_free);
  g_assert_cmpstr (elk_metrics_first_difference (m, m2, NULL, NULL), ==,
                   "breakdown");
  copy = elk_breakdown_copy (b);
  elk_breakdown_add (copy, "rope", ELK_TIME_SYNC, 0);
  m2->breakdown = g_steal_pointer (&copy);
  g_assert_cmpstr (elk_metrics_first_difference (m, m2, NULL, NULL), ==,
                   "breakdown");

  for (guint k = 0; k < ELK_TIME_N_COMPONENTS; k++)
    {
      ElkTimeComponent back;
      g_assert_true (
          elk_time_component_from_string (elk_time_component_to_string (
                                              (ElkTimeComponent) k),
                                          &back));
      g_assert_cmpint (back, ==, k);
    }
  g_assert_cmpstr (elk_time_component_to_string (ELK_TIME_PRELOAD_WAIT), ==,
                   "preload-wait");
  g_assert_cmpstr (elk_time_component_to_string (ELK_TIME_N_COMPONENTS), ==,
                   "invalid");
  g_assert_false (elk_time_component_from_string ("idle", &c));

  /* A group that would break breakdown.csv, and a negative time, are
   * programming errors. */
  g_test_expect_message ("elk", G_LOG_LEVEL_CRITICAL, "*group_is_valid*");
  elk_breakdown_add (b, "a,b", ELK_TIME_COMPUTE, 1);
  g_test_assert_expected_messages ();
  g_test_expect_message ("elk", G_LOG_LEVEL_CRITICAL, "*seconds >= 0*");
  elk_breakdown_add (b, "matmul", ELK_TIME_COMPUTE, -1);
  g_test_assert_expected_messages ();
  g_assert_cmpfloat (elk_breakdown_get_total (b), ==, 3.5);
}

static void
test_groups (void)
{
  static const struct
  {
    const char *name;
    ElkOpKind kind;
    const char *group;
  } cases[] = {
    { "blk.0.attn_norm.sum", ELK_OP_REDUCE, "normalisation" },
    { "output_norm.rsqrt", ELK_OP_UNARY, "normalisation" },
    { "blk.3.softmax.exp", ELK_OP_UNARY, "softmax" },
    { "blk.3.softmax.max", ELK_OP_REDUCE, "softmax" },
    { "blk.1.attn_score", ELK_OP_MATMUL, "attention-matmul" },
    { "blk.1.attn_value", ELK_OP_MATMUL, "attention-matmul" },
    { "blk.1.attn_qkv", ELK_OP_MATMUL, "matmul" },
    { "blk.1.ffn_down", ELK_OP_MATMUL, "matmul" },
    { "blk.2.q_rope.cos", ELK_OP_ELEMENTWISE, "rope" },
    { "blk.2.ffn_silu", ELK_OP_UNARY, "elementwise" },
    { "blk.2.ffn_residual", ELK_OP_ELEMENTWISE, "elementwise" },
    { "token_embd", ELK_OP_GATHER, "gather" },
    { "conv1", ELK_OP_CONV, "conv" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      ElkOp op = { .name = (char *) cases[i].name, .kind = cases[i].kind };
      g_assert_cmpstr (elk_op_get_breakdown_group (&op), ==, cases[i].group);
    }
}

/* The analytic chip's breakdown of @program: it adds up to the latency;
 * compute, shift, output and re-layout are the execute plans' and the
 * derived warm-ups; under delay-execution the stall and the waits are
 * Fig 18a's stall_s and preload_only_s. */
static void
assert_analytic_breakdown (const ElkMetrics *m,
                           ElkProgram *program,
                           const ElkPlanSet *plans,
                           gboolean delay_execution)
{
  g_autoptr (GError) error = NULL;
  g_autofree ElkOpCost *costs = elk_program_derive (program, plans, &error);
  ElkGraph *graph = elk_program_get_graph (program);
  double want[ELK_TIME_N_COMPONENTS] = { 0 };
  double lat = m->latency_s;
  const ElkBreakdown *b = m->breakdown;

  g_assert_no_error (error);
  g_assert_nonnull (b);
  for (guint i = 0; i < elk_graph_get_n_ops (graph); i++)
    {
      const ElkPlan *plan = &elk_program_peek_op (program, i)->exec_plan;
      want[ELK_TIME_COMPUTE] += plan->compute_s;
      want[ELK_TIME_SHIFT] += plan->shift_s;
      want[ELK_TIME_OUTPUT] += plan->shuffle_s;
      want[ELK_TIME_RELAYOUT] += costs[i].warmup_s;
    }
  elk_test_assert_breakdown_adds_up (m, delay_execution);
  for (guint c = ELK_TIME_COMPUTE; c <= ELK_TIME_RELAYOUT; c++)
    g_assert_cmpfloat_with_epsilon (elk_breakdown_get (b, NULL,
                                                       (ElkTimeComponent) c)
                                        / lat,
                                    want[c] / lat, 1e-9);
  g_assert_cmpfloat (elk_breakdown_get (b, NULL, ELK_TIME_SYNC), ==, 0);
  if (!delay_execution)
    g_assert_cmpfloat (elk_breakdown_get (b, NULL, ELK_TIME_STALL), ==, 0);
}

/* Schedules @graph with every shipped scheduler and runs it on @chip under
 * both contention priorities, checking each breakdown. */
static void
check_designs (ElkGraph *graph, ElkChip *chip)
{
  static const char *const schedulers[] = { "basic", "static", "elk", "ideal" };
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (chip, &error);
  g_autoptr (ElkPlanSet) plans = NULL;
  g_autoptr (GObject) alloc
      = elk_test_make (registry, ELK_TYPE_ALLOCATOR, "reservation", NULL);

  g_assert_no_error (error);
  plans = elk_plan_set_new (graph, spec, NULL, &error);
  g_assert_no_error (error);
  for (guint s = 0; s < G_N_ELEMENTS (schedulers); s++)
    {
      g_autoptr (GObject) sched
          = elk_test_make (registry, ELK_TYPE_SCHEDULER, schedulers[s], NULL);
      g_autoptr (ElkProgram) program
          = elk_scheduler_schedule (ELK_SCHEDULER (sched), plans,
                                    ELK_ALLOCATOR (alloc), &error);

      g_assert_no_error (error);
      for (gint priority = 0; priority < 2; priority++)
        {
          g_autoptr (ElkMetrics) m = NULL;

          g_object_set (chip, "noc-priority", priority, NULL);
          m = elk_chip_run (chip, program, plans, &error);
          g_assert_no_error (error);
          g_test_message ("%s, %s: %.6f ms; compute %.6f, shift %.6f, "
                          "output %.6f, relayout %.6f, stall %.6f, "
                          "preload-wait %.6f ms",
                          schedulers[s],
                          priority == 0 ? "delay-execution" : "delay-preload",
                          m->latency_s * 1e3,
                          elk_breakdown_get (m->breakdown, NULL,
                                             ELK_TIME_COMPUTE)
                              * 1e3,
                          elk_breakdown_get (m->breakdown, NULL, ELK_TIME_SHIFT)
                              * 1e3,
                          elk_breakdown_get (m->breakdown, NULL,
                                             ELK_TIME_OUTPUT)
                              * 1e3,
                          elk_breakdown_get (m->breakdown, NULL,
                                             ELK_TIME_RELAYOUT)
                              * 1e3,
                          elk_breakdown_get (m->breakdown, NULL, ELK_TIME_STALL)
                              * 1e3,
                          elk_breakdown_get (m->breakdown, NULL,
                                             ELK_TIME_PRELOAD_WAIT)
                              * 1e3);
          assert_analytic_breakdown (m, program, plans, priority == 0);
        }
    }
}

static void
test_analytic_toy (void)
{
  ElkTestCompileFixture f;

  elk_test_compile_fixture_init (&f, registry,
                                 elk_test_toy_decode_graph (4, 8, 512, 256));
  check_designs (f.graph, f.chip);
  elk_test_compile_fixture_clear (&f);
}

static gboolean
have_llama (void)
{
  if (elk_registry_lookup (registry, ELK_TYPE_FRONTEND, "llama") != NULL)
    return TRUE;
  g_test_skip ("the llama frontend is not built");
  return FALSE;
}

static void
test_analytic_llama (void)
{
  g_autoptr (ElkGraph) graph
      = elk_test_load_llama (registry, "llama2-13b-paper", 32, 2048, 2);
  g_autoptr (GObject) chip = NULL;

  if (graph == NULL)
    return;
  chip = elk_test_make (registry, ELK_TYPE_CHIP, "analytic", NULL);
  check_designs (graph, ELK_CHIP (chip));
}

static const char experiment_xml[]
    = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<experiment format=\"1\" name=\"breakdown\">\n"
      "  <frontend name=\"llama\">\n"
      "    <param name=\"preset\">llama2-13b-paper</param>\n"
      "    <param name=\"layers\">2</param>\n"
      "    <param name=\"seq\">2048</param>\n"
      "  </frontend>\n"
      "  <chip name=\"analytic\"/>\n"
      "  <allocator name=\"reservation\"/>\n"
      "  <scheduler name=\"basic\" label=\"basic\"/>\n"
      "  <scheduler name=\"elk\" label=\"elk-full\"/>\n"
      "  <scheduler name=\"ideal\" bound=\"true\" label=\"ideal\"/>\n"
      "  <sweep>\n"
      "    <axis param=\"frontend.batch\" values=\"16 32\"/>\n"
      "  </sweep>\n"
      "</experiment>\n";

/* Runs elk-run on experiment_xml into @out with the build's plugins;
 * returns its exit status. */
static int
run_elk (const char *out, const char *jobs, char **err)
{
  g_autofree char *xml = g_build_filename (tmpdir, "breakdown.xml", NULL);
  g_auto (GStrv) env = elk_test_tool_env (g_getenv ("ELK_PLUGIN_PATH"));
  const char *argv[] = { g_getenv ("ELK_RUN"), xml,  "-o", out, jobs,
                         "--no-report",        "-q", NULL };

  g_assert_true (g_file_set_contents (xml, experiment_xml, -1, NULL));
  return elk_test_spawn (argv, env, NULL, err);
}

/* The column of @name in a CSV header, asserted to exist. */
static guint
csv_column (char **header, const char *name)
{
  for (guint i = 0; header[i] != NULL; i++)
    if (strcmp (header[i], name) == 0)
      return i;
  g_error ("no column '%s'", name);
  return 0;
}

/* Every row's breakdown.csv lines add up to its latency (both printed
 * with 9 significant digits, hence 1e-8). */
static void
assert_csv_adds_up (const char *dir)
{
  g_autofree char *results = elk_test_read_file (dir, "results.csv");
  g_autofree char *breakdown = elk_test_read_file (dir, "breakdown.csv");
  g_auto (GStrv) rlines = g_strsplit (results, "\n", -1);
  g_auto (GStrv) blines = g_strsplit (breakdown, "\n", -1);
  g_auto (GStrv) rh = g_strsplit (rlines[0], ",", -1);
  g_auto (GStrv) bh = g_strsplit (blines[0], ",", -1);
  g_autoptr (GHashTable) sums
      = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  guint n_rows = 0;

  g_assert_null (strstr (rlines[0], "breakdown"));
  g_assert_true (g_str_has_prefix (blines[0], "experiment,point,model,phase,"
                                              "batch,seq,hbm_bw,label,backend,"
                                              "latency_s,group,component,"
                                              "seconds,frontend.batch"));
  for (guint i = 1; blines[i] != NULL && blines[i][0] != '\0'; i++)
    {
      g_auto (GStrv) f = g_strsplit (blines[i], ",", -1);
      g_autofree char *key
          = g_strdup_printf ("%s/%s", f[csv_column (bh, "point")],
                             f[csv_column (bh, "label")]);
      double *sum = g_hash_table_lookup (sums, key);

      if (sum == NULL)
        {
          sum = g_new0 (double, 1);
          g_hash_table_insert (sums, g_strdup (key), sum);
        }
      *sum += g_ascii_strtod (f[csv_column (bh, "seconds")], NULL);
    }
  for (guint i = 1; rlines[i] != NULL && rlines[i][0] != '\0'; i++)
    {
      g_auto (GStrv) f = g_strsplit (rlines[i], ",", -1);
      g_autofree char *key
          = g_strdup_printf ("%s/%s", f[csv_column (rh, "point")],
                             f[csv_column (rh, "label")]);
      double latency = g_ascii_strtod (f[csv_column (rh, "latency_s")], NULL);
      double *sum = g_hash_table_lookup (sums, key);

      g_assert_nonnull (sum);
      g_assert_cmpfloat_with_epsilon (*sum / latency, 1.0, 1e-8);
      n_rows++;
    }
  g_assert_cmpuint (n_rows, ==, 6);
  g_assert_cmpuint (g_hash_table_size (sums), ==, 6);
}

static void
test_elk_run_deterministic (void)
{
  g_autofree char *a = g_build_filename (tmpdir, "j1", NULL);
  g_autofree char *b = g_build_filename (tmpdir, "j2", NULL);
  const char *const names[]
      = { "breakdown.csv", "results.json", "results.csv" };

  if (!have_llama ())
    return;
  g_assert_cmpint (run_elk (a, "-j1", NULL), ==, 0);
  g_assert_cmpint (run_elk (b, "-j2", NULL), ==, 0);
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *x = elk_test_read_file (a, names[i]);
      g_autofree char *y = elk_test_read_file (b, names[i]);
      g_assert_cmpstr (x, ==, y);
    }
  {
    g_autofree char *json = elk_test_read_file (a, "results.json");
    g_assert_nonnull (strstr (json, "\"breakdown\": [{\"group\": "
                                    "\"attention-matmul\", \"component\": "
                                    "\"compute\", \"seconds\": "));
  }
  assert_csv_adds_up (a);
}

/* breakdown.csv cannot be created (a folder holds its temporary name),
 * or cannot be put in place (a folder holds its name): the run fails as
 * an output failure (exit 5) naming the path, and leaves no results.csv
 * that would look complete. */
static void
test_unwritable (gconstpointer data)
{
  const char *blocker = data;
  g_autofree char *out = g_build_filename (tmpdir, blocker, NULL);
  g_autofree char *dir = g_build_filename (out, blocker, NULL);
  g_autofree char *inside = g_build_filename (dir, "x", NULL);
  g_autofree char *results = g_build_filename (out, "results.csv", NULL);
  g_autofree char *err = NULL;

  if (!have_llama ())
    return;
  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  /* Not empty, so that no rename can replace it. */
  g_assert_true (g_file_set_contents (inside, "x", 1, NULL));
  g_assert_cmpint (run_elk (out, "-j1", &err), ==, 5);
  g_assert_nonnull (strstr (err, dir));
  g_assert_false (g_file_test (results, G_FILE_TEST_EXISTS));
}

/* Rewrites every record of @dir's journal, with a new checksum: with
 * @replacement NULL, as an elk without the breakdown field would have
 * written it (one field fewer per row); else with @replacement as every
 * row's breakdown. */
static void
rewrite_breakdown_field (const char *dir, const char *replacement)
{
  g_autofree char *text = elk_test_read_file (dir, "points.journal");
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_autoptr (GString) out = g_string_new (NULL);
  g_autofree char *path = g_build_filename (dir, "points.journal", NULL);

  for (guint l = 0; lines[l] != NULL && lines[l][0] != '\0'; l++)
    {
      g_auto (GStrv) f = g_strsplit (lines[l], "\t", -1);
      guint n_rows, n_fields, n = g_strv_length (f);
      g_autoptr (GString) line = NULL;
      g_autofree char *sum = NULL;

      if (!g_str_has_prefix (lines[l], "R\t"))
        {
          g_string_append_printf (out, "%s\n", lines[l]);
          continue;
        }
      n_rows = (guint) g_ascii_strtoull (f[4], NULL, 10);
      n_fields = (guint) g_ascii_strtoull (f[5], NULL, 10);
      line = g_string_new (NULL);
      g_string_append_printf (line, "R\t%s\t%s\t%s\t%u\t%u", f[1], f[2], f[3],
                              n_rows, n_fields - (replacement == NULL));
      /* The breakdown is the last field but one (the routing statistics)
       * before the one sweep value. */
      for (guint i = 6; i + 1 < n; i++)
        if (i >= 6 + n_rows * n_fields || (i - 6) % n_fields != n_fields - 3)
          g_string_append_printf (line, "\t%s", f[i]);
        else if (replacement != NULL)
          g_string_append_printf (line, "\t%s", replacement);
      sum = g_compute_checksum_for_string (G_CHECKSUM_SHA1, line->str, -1);
      g_string_append_printf (out, "%s\t%s\n", line->str, sum);
    }
  g_assert_true (g_file_set_contents (path, out->str, -1, NULL));
}

/* --resume on a journal an elk with fewer columns wrote, or whose
 * breakdown field is not one (it is checksummed, so only a tool could
 * write it): refused with what is wrong, rather than read out of bounds
 * or copied into the results. */
static void
test_bad_journal (gconstpointer data)
{
  const char *replacement = data;
  g_autofree char *out
      = g_build_filename (tmpdir,
                          replacement == NULL ? "old-journal" : "bad-field",
                          NULL);
  g_autofree char *err = NULL;
  g_autofree char *xml = g_build_filename (tmpdir, "breakdown.xml", NULL);
  g_auto (GStrv) env = elk_test_tool_env (g_getenv ("ELK_PLUGIN_PATH"));
  const char *argv[] = { g_getenv ("ELK_RUN"), xml,           "-o", out,
                         "--resume",           "--no-report", "-q", NULL };

  if (!have_llama ())
    return;
  g_assert_cmpint (run_elk (out, "-j1", NULL), ==, 0);
  rewrite_breakdown_field (out, replacement);
  g_assert_cmpint (elk_test_spawn (argv, env, NULL, &err), !=, 0);
  if (replacement == NULL)
    g_assert_nonnull (
        strstr (err, "has 39 fields per row; this elk writes 40"));
  else
    g_assert_nonnull (strstr (err, "results.csv.part: row 1: the breakdown "
                                   "'matmul/idle=1' is not "
                                   "'group/component=seconds' cells"));
}

int
main (int argc, char *argv[])
{
  int rc;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  tmpdir = g_dir_make_tmp ("elk-breakdown-XXXXXX", NULL);
  g_test_add_func ("/breakdown/api", test_api);
  g_test_add_func ("/breakdown/groups", test_groups);
  g_test_add_func ("/breakdown/analytic/toy", test_analytic_toy);
  g_test_add_func ("/breakdown/analytic/llama2-13b", test_analytic_llama);
  g_test_add_func ("/breakdown/elk-run/deterministic",
                   test_elk_run_deterministic);
  g_test_add_data_func ("/breakdown/elk-run/cannot-create",
                        "breakdown.csv.part", test_unwritable);
  g_test_add_data_func ("/breakdown/elk-run/cannot-rename", "breakdown.csv",
                        test_unwritable);
  g_test_add_data_func ("/breakdown/elk-run/old-journal", NULL,
                        test_bad_journal);
  g_test_add_data_func ("/breakdown/elk-run/bad-field", "matmul/idle=1",
                        test_bad_journal);
  rc = g_test_run ();
  elk_test_remove_tree (tmpdir);
  g_free (tmpdir);
  g_object_unref (registry);
  return rc;
}
