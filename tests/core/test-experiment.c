/* tests/core/test-experiment.c: experiment files are validated completely
 * before anything runs, and every mistake is one GError with the file and
 * line (issue 2, items 4 and 8). */
#include "elk-test-util.h"

#include <glib/gstdio.h>
#include <string.h>

static ElkRegistry *registry;

static void
test_good (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = elk_test_fixture_experiment ("good");
  g_autoptr (ElkExperiment) experiment = NULL;
  g_autoptr (GObject) frontend = NULL;
  g_autoptr (GObject) chip = NULL;
  g_autofree char *label = NULL;
  g_autofree char *model = NULL;
  guint layers, batch, sram;
  double scale;
  gboolean fused;
  gint offset;

  experiment = elk_experiment_load (path, registry, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (elk_experiment_get_name (experiment), ==, "fixture-good");
  g_assert_cmpuint (elk_experiment_get_n_points (experiment), ==, 6);
  g_assert_cmpuint (elk_experiment_get_n_schedulers (experiment), ==, 2);
  g_assert_cmpstr (elk_experiment_get_scheduler_label (experiment, 1), ==,
                   "second");
  g_assert_cmpuint (strlen (elk_experiment_get_hash (experiment)), ==, 64);
  /* <output dir> is relative to the experiment file. */
  g_assert_true (g_str_has_suffix (elk_experiment_get_output_dir (experiment),
                                   "experiments/out"));

  /* The last axis varies fastest: point 3 is batch 8, sram 256. */
  label = elk_experiment_dup_point_label (experiment, 3);
  g_assert_cmpstr (label, ==, "frontend.batch=8 chip.sram-kib=256");

  frontend = elk_experiment_create_component (experiment, 3,
                                              ELK_TYPE_FRONTEND, 0, &error);
  g_assert_no_error (error);
  g_object_get (frontend, "layers", &layers, "batch", &batch, "scale",
                &scale, "fused", &fused, "offset", &offset, "model", &model,
                NULL);
  g_assert_cmpuint (layers, ==, 3);
  g_assert_cmpuint (batch, ==, 8);
  g_assert_cmpfloat (scale, ==, 1.5);
  g_assert_true (fused);
  g_assert_cmpint (offset, ==, -3);
  /* Paths are resolved relative to the experiment file. */
  g_assert_true (g_path_is_absolute (model));
  g_assert_true (g_str_has_suffix (model, "experiments/model.bin"));

  chip = elk_experiment_create_component (experiment, 3, ELK_TYPE_CHIP, 0,
                                          &error);
  g_assert_no_error (error);
  g_object_get (chip, "sram-kib", &sram, NULL);
  g_assert_cmpuint (sram, ==, 256);
}

typedef struct
{
  const char *file;
  gint code;
  const char *needle;
} BadCase;

static const BadCase bad_cases[] = {
  { "malformed", ELK_EXPERIMENT_ERROR_PARSE, "malformed XML" },
  { "schema-violation", ELK_EXPERIMENT_ERROR_SCHEMA, "schema" },
  { "wrong-format", ELK_EXPERIMENT_ERROR_SCHEMA,
    "unsupported experiment format '2'" },
  { "unknown-plugin", ELK_EXPERIMENT_ERROR_UNKNOWN_PLUGIN,
    "no scheduler named 'greedy-lookahead' (available: fixture" },
  { "unknown-param", ELK_EXPERIMENT_ERROR_UNKNOWN_PARAM,
    "no parameter 'layer' (valid: batch, fused, layers, model, offset, "
    "phase, scale)" },
  { "bad-value", ELK_EXPERIMENT_ERROR_BAD_VALUE, "'8x' is not a" },
  { "bad-bool", ELK_EXPERIMENT_ERROR_BAD_VALUE,
    "'yes' is not a boolean (expected true or false)" },
  { "bad-enum", ELK_EXPERIMENT_ERROR_BAD_VALUE,
    "unknown value 'training' (expected one of: decode, prefill)" },
  { "out-of-range", ELK_EXPERIMENT_ERROR_OUT_OF_RANGE,
    "0 is out of range [1, 4096]" },
  { "out-of-range-double", ELK_EXPERIMENT_ERROR_OUT_OF_RANGE,
    "4.5 is out of range [0.5, 4]" },
  { "sweep-out-of-range", ELK_EXPERIMENT_ERROR_OUT_OF_RANGE,
    "100000 is out of range" },
  { "sweep-unknown-target", ELK_EXPERIMENT_ERROR_INVALID,
    "names no component" },
  { "missing-model", ELK_EXPERIMENT_ERROR_MISSING_FILE,
    "'no-such-model.gguf' does not exist" },
  { "duplicate-label", ELK_EXPERIMENT_ERROR_INVALID, "used twice" },
  /* <plans> params are checked like a plugin's, naming the element. */
  { "plans-bad-enumeration", ELK_EXPERIMENT_ERROR_BAD_VALUE,
    "<plans>: parameter 'enumeration': unknown value 'quirky' (expected "
    "one of: t10, artifact)" },
  { "plans-unknown-param", ELK_EXPERIMENT_ERROR_UNKNOWN_PARAM,
    "<plans> has no parameter 'floor' (valid: cost-model, enumeration, "
    "fuse, layout, noc-demand, padding-floor, utilisation-floor)" },
  { "plans-out-of-range", ELK_EXPERIMENT_ERROR_OUT_OF_RANGE,
    "1.5 is out of range [0, 1]" },
  { "plans-sweep-bad", ELK_EXPERIMENT_ERROR_BAD_VALUE,
    "unknown value 't11' (expected one of: t10, artifact)" },
  { "plans-after-scheduler", ELK_EXPERIMENT_ERROR_SCHEMA, "plans" },
  { "no-allocator", ELK_EXPERIMENT_ERROR_INVALID, "no default <allocator>" },
  /* libxml2 already refuses the nested entities while parsing (without
   * expanding them); a document type declaration is refused in any case. */
  { "entity", ELK_EXPERIMENT_ERROR_PARSE, "entity" },
  { "external-entity", ELK_EXPERIMENT_ERROR_PARSE,
    "document type declaration" },
};

static void
test_bad (gconstpointer data)
{
  const BadCase *c = data;
  g_autoptr (GError) error = NULL;
  g_autofree char *path = elk_test_fixture_experiment (c->file);
  g_autoptr (ElkExperiment) experiment = NULL;

  experiment = elk_experiment_load (path, registry, &error);
  g_assert_null (experiment);
  g_assert_error (error, ELK_EXPERIMENT_ERROR, c->code);
  g_test_message ("%s", error->message);
  elk_test_assert_has_line (error, path);
  g_assert_nonnull (strstr (error->message, c->needle));
}

static void
test_quick (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = elk_test_fixture_experiment ("good");
  g_autoptr (ElkExperiment) experiment = NULL;
  g_autoptr (GObject) frontend = NULL;
  g_autofree char *full_hash = NULL;
  guint layers, batch;

  experiment = elk_experiment_load (path, registry, &error);
  g_assert_no_error (error);
  full_hash = g_strdup (elk_experiment_get_hash (experiment));
  elk_experiment_set_quick (experiment);
  /* One point (the first value of each axis), at most 2 layers, and a
   * hash of its own. */
  g_assert_cmpuint (elk_experiment_get_n_points (experiment), ==, 1);
  g_assert_cmpstr (elk_experiment_get_hash (experiment), !=, full_hash);
  frontend = elk_experiment_create_component (experiment, 0,
                                              ELK_TYPE_FRONTEND, 0, &error);
  g_assert_no_error (error);
  g_object_get (frontend, "layers", &layers, "batch", &batch, NULL);
  g_assert_cmpuint (layers, ==, 2);
  g_assert_cmpuint (batch, ==, 4);
}

/* <plans> and its "plans.P" axes: the file's values are the defaults of
 * the sweep, which overrides them per point. */
static void
test_plans (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = elk_test_fixture_experiment ("plans-good");
  g_autoptr (ElkExperiment) experiment = NULL;
  g_autofree char *label = NULL;

  experiment = elk_experiment_load (path, registry, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (elk_experiment_get_n_points (experiment), ==, 4);
  label = elk_experiment_dup_point_label (experiment, 2);
  g_assert_cmpstr (label, ==, "plans.enumeration=artifact "
                              "plans.padding-floor=0");
}

static void
test_one_line_messages (void)
{
  /* Invalid UTF-8 where libxml2 quotes the offending bytes over several
   * lines: the error stays one valid UTF-8 line. */
  const char data[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<experiment format=\"1\" name=\"x\xff\xfe\">\n";
  g_autoptr (GError) error = NULL;

  g_assert_null (elk_experiment_load_from_data (data, sizeof data - 1,
                                                "bad.xml", registry, &error));
  g_assert_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_PARSE);
  g_assert_true (g_utf8_validate (error->message, -1, NULL));
  g_assert_null (strchr (error->message, '\n'));
}

/* Removes a folder of plain files (a run's output folder). */
static void
remove_flat_dir (const char *path)
{
  g_autoptr (GDir) dir = g_dir_open (path, 0, NULL);
  const char *name;

  g_assert_nonnull (dir);
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *file = g_build_filename (path, name, NULL);
      g_assert_cmpint (g_unlink (file), ==, 0);
    }
  g_assert_cmpint (g_rmdir (path), ==, 0);
}

/* What the progress callback saw, in order. */
typedef struct
{
  GArray *points; /* guint */
  guint last_done;
  guint total;
  ElkRunStatus worst;
} Progress;

static void
on_progress (ElkExperiment *experiment,
             guint done,
             guint total,
             guint point,
             ElkRunStatus point_status,
             double wall_s,
             gpointer user_data)
{
  Progress *p = user_data;

  g_assert_true (ELK_IS_EXPERIMENT (experiment));
  g_assert_cmpuint (done, ==, p->last_done + 1);
  g_assert_cmpuint (total, ==, elk_experiment_get_n_points (experiment));
  g_assert_cmpfloat (wall_s, >=, 0);
  p->last_done = done;
  p->total = total;
  p->worst = MAX (p->worst, point_status);
  g_array_append_val (p->points, point);
}

/* elk_experiment_run_with_progress() with no options runs every point
 * once into the folder elk_experiment_set_output_dir() gave, calling the
 * callback in this thread after each (issue 23 item 2). */
static void
test_run_with_progress (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = elk_test_fixture_experiment ("good");
  g_autofree char *dir = g_dir_make_tmp ("elk-progress-XXXXXX", &error);
  g_autofree char *out = NULL;
  g_autofree char *csv = NULL;
  g_autoptr (ElkExperiment) experiment = NULL;
  Progress p = { g_array_new (FALSE, FALSE, sizeof (guint)), 0, 0, ELK_RUN_OK };
  ElkRunStatus status = ELK_RUN_OK;
  gboolean seen[6] = { FALSE };

  g_assert_no_error (error);
  out = g_build_filename (dir, "out", NULL);
  experiment = elk_experiment_load (path, registry, &error);
  g_assert_no_error (error);
  elk_experiment_set_output_dir (experiment, out);
  g_assert_cmpstr (elk_experiment_get_output_dir (experiment), ==, out);
  g_assert_true (elk_experiment_run_with_progress (experiment, NULL,
                                                   on_progress, &p, &status,
                                                   &error));
  g_assert_no_error (error);
  g_assert_cmpuint (p.points->len, ==, 6);
  g_assert_cmpuint (p.total, ==, 6);
  for (guint i = 0; i < p.points->len; i++)
    {
      guint point = g_array_index (p.points, guint, i);
      g_assert_cmpuint (point, <, 6);
      g_assert_false (seen[point]);
      seen[point] = TRUE;
    }
  /* The run's status is the worst of the points' statuses. */
  g_assert_cmpint (status, ==, p.worst);
  csv = g_build_filename (out, "results.csv", NULL);
  g_assert_true (g_file_test (csv, G_FILE_TEST_IS_REGULAR));

  /* Without a callback it runs as elk_experiment_run() does. */
  g_assert_true (elk_experiment_run_with_progress (experiment, NULL, NULL, NULL,
                                                   &status, &error));
  g_assert_no_error (error);
  g_array_unref (p.points);
  remove_flat_dir (out);
  g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* elk_registry_add_feature() adds a type under a name of its own, with
 * the checks a plugin's features get (issue 23 item 3). */
static void
test_run_time_feature (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkRegistry) reg = elk_test_registry_with_good ();
  const ElkFeature *fixture, *added;

  fixture = elk_registry_find (reg, ELK_TYPE_SCHEDULER, "fixture", &error);
  g_assert_no_error (error);
  g_assert_true (elk_registry_add_feature (reg, ELK_TYPE_SCHEDULER, "run-time",
                                           fixture->type, &error));
  g_assert_no_error (error);
  added = elk_registry_find (reg, ELK_TYPE_SCHEDULER, "run-time", &error);
  g_assert_no_error (error);
  g_assert_true (added->type == fixture->type);
  g_assert_null (added->plugin);

  g_assert_false (elk_registry_add_feature (reg, ELK_TYPE_SCHEDULER, "run-time",
                                            fixture->type, &error));
  g_assert_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_DUPLICATE);
  g_assert_cmpstr (error->message, ==,
                   "run time: scheduler 'run-time' is added twice");
  g_clear_error (&error);
  g_assert_false (elk_registry_add_feature (reg, ELK_TYPE_SCHEDULER, "Run_Time",
                                            fixture->type, &error));
  g_assert_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_BAD_NAME);
  g_clear_error (&error);
  g_assert_false (elk_registry_add_feature (reg, ELK_TYPE_ALLOCATOR, "run-time",
                                            fixture->type, &error));
  g_assert_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_WRONG_TYPE);
  g_clear_error (&error);
  g_assert_false (elk_registry_add_feature (reg, G_TYPE_OBJECT, "run-time",
                                            fixture->type, &error));
  g_assert_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_WRONG_TYPE);
}

static void
test_missing_file (void)
{
  g_autoptr (GError) error = NULL;

  g_assert_null (elk_experiment_load ("/nonexistent/x.xml", registry,
                                      &error));
  g_assert_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_IO);
  g_assert_true (g_str_has_prefix (error->message, "/nonexistent/x.xml:"));
}

static void
test_size_limit (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = elk_test_fixture_experiment ("good");

  /* The good fixture is larger than 100 bytes: refused, naming the limit
   * and how to raise it, and accepted again once it is raised. */
  g_setenv ("ELK_MAX_EXPERIMENT_SIZE", "100", TRUE);
  g_assert_null (elk_experiment_load (path, registry, &error));
  g_assert_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_IO);
  g_assert_nonnull (strstr (error->message, "100-byte limit"));
  g_assert_nonnull (strstr (error->message, "ELK_MAX_EXPERIMENT_SIZE"));
  g_clear_error (&error);

  g_setenv ("ELK_MAX_EXPERIMENT_SIZE", "1000000", TRUE);
  {
    g_autoptr (ElkExperiment) e = elk_experiment_load (path, registry,
                                                       &error);
    g_assert_no_error (error);
    g_assert_nonnull (e);
  }
  g_unsetenv ("ELK_MAX_EXPERIMENT_SIZE");

  /* The same limit holds for experiments given as data. */
  g_setenv ("ELK_MAX_EXPERIMENT_SIZE", "10", TRUE);
  g_assert_null (elk_experiment_load_from_data ("<experiment/>", 13, "mem.xml",
                                                registry, &error));
  g_assert_nonnull (strstr (error->message, "mem.xml: 13 bytes, more than "
                                            "the 10-byte limit"));
  g_clear_error (&error);
  g_unsetenv ("ELK_MAX_EXPERIMENT_SIZE");

  /* A device is not an experiment file, and is never read. */
  g_assert_null (elk_experiment_load ("/dev/zero", registry, &error));
  g_assert_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_IO);
  g_assert_nonnull (strstr (error->message, "not a regular file"));
}

static void
test_truncated (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = elk_test_fixture_experiment ("good");
  g_autofree char *data = NULL;
  gsize length;

  /* Every prefix of a good file is either malformed or fails the schema;
   * none crashes and none is accepted. */
  g_assert_true (g_file_get_contents (path, &data, &length, NULL));
  for (gsize cut = 0; cut < length - 1; cut += 7)
    {
      g_autoptr (ElkExperiment) e = NULL;
      g_clear_error (&error);
      e = elk_experiment_load_from_data (data, cut, path, registry, &error);
      g_assert_null (e);
      g_assert_true (error->domain == ELK_EXPERIMENT_ERROR);
    }
}

int
main (int argc, char *argv[])
{
  int rc;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_with_good ();

  g_test_add_func ("/experiment/good", test_good);
  g_test_add_func ("/experiment/quick", test_quick);
  g_test_add_func ("/experiment/plans", test_plans);
  g_test_add_func ("/experiment/run-with-progress", test_run_with_progress);
  g_test_add_func ("/experiment/run-time-feature", test_run_time_feature);
  g_test_add_func ("/experiment/missing-file", test_missing_file);
  g_test_add_func ("/experiment/truncated", test_truncated);
  g_test_add_func ("/experiment/size-limit", test_size_limit);
  g_test_add_func ("/experiment/one-line-messages", test_one_line_messages);
  for (guint i = 0; i < G_N_ELEMENTS (bad_cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/experiment/bad/%s",
                                               bad_cases[i].file);
      g_test_add_data_func (name, &bad_cases[i], test_bad);
    }
  rc = g_test_run ();
  g_object_unref (registry);
  return rc;
}
