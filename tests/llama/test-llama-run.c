/* test-llama-run.c: elk-run on experiments that use the llama frontend with
 * a preset, a config.json and a real GGUF file; the FLOPs and HBM bytes in
 * results.csv must match counts computed here from the hyper-parameters.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "elk-test-util.h"
#include "llama-expect.h"
#include "llama-test-util.h"

static const char llama2_7b_json[]
    = "{\"model_type\": \"llama\", \"hidden_size\": 4096,"
      " \"intermediate_size\": 11008, \"max_position_embeddings\": 4096,"
      " \"num_attention_heads\": 32, \"num_hidden_layers\": 32,"
      " \"num_key_value_heads\": 32, \"rms_norm_eps\": 1e-05,"
      " \"tie_word_embeddings\": false, \"torch_dtype\": \"float16\","
      " \"vocab_size\": 32000}\n";

/* Runs elk-run on an experiment with @frontend_params and returns the
 * value of @column in the first row of results.csv. */
static void
run (const char *dir, const char *name, const char *frontend_params,
     double *flops, double *hbm)
{
  const char *elk_run = g_getenv ("ELK_RUN");
  g_autofree char *xml = NULL, *xml_path = NULL, *csv_path = NULL;
  g_autofree char *csv = NULL, *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) lines = NULL, header = NULL, row = NULL;
  gint status;
  const char *argv[] = { elk_run, NULL, NULL };

  xml = g_strdup_printf (
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<experiment format=\"1\" name=\"%s\">\n"
      "  <frontend name=\"llama\">\n%s  </frontend>\n"
      "  <chip name=\"analytic\"/>\n"
      "  <allocator name=\"reservation\"/>\n"
      "  <scheduler name=\"ideal\" label=\"ideal\" bound=\"true\"/>\n"
      "  <output dir=\"out-%s\"/>\n"
      "</experiment>\n", name, frontend_params, name);
  xml_path = g_strdup_printf ("%s/%s.xml", dir, name);
  g_assert_true (g_file_set_contents (xml_path, xml, -1, &error));
  argv[1] = xml_path;
  g_assert_true (g_spawn_sync (dir, (char **) argv, NULL, G_SPAWN_DEFAULT,
                               NULL, NULL, &out, &err, &status, &error));
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("elk-run %s failed:\n%s%s", name, out, err);

  csv_path = g_strdup_printf ("%s/out-%s/results.csv", dir, name);
  g_assert_true (g_file_get_contents (csv_path, &csv, NULL, &error));
  lines = g_strsplit (csv, "\n", -1);
  g_assert_nonnull (lines[0]);
  g_assert_nonnull (lines[1]);
  header = g_strsplit (lines[0], ",", -1);
  row = g_strsplit (lines[1], ",", -1);
  *flops = *hbm = -1;
  for (guint i = 0; header[i] != NULL && row[i] != NULL; i++)
    {
      if (g_str_equal (header[i], "flops"))
        *flops = g_ascii_strtod (row[i], NULL);
      if (g_str_equal (header[i], "hbm_bytes"))
        *hbm = g_ascii_strtod (row[i], NULL);
    }
  g_assert_cmpfloat (*flops, >, 0);
  g_assert_cmpfloat (*hbm, >, 0);
}

static void
assert_close (double got, double want, const char *what)
{
  /* results.csv prints 9 significant digits. */
  if (fabs (got - want) > 1e-8 * want)
    g_error ("%s: results.csv has %.17g, expected %.17g", what, got, want);
  g_test_message ("%s: %.9g matches", what, got);
}

/* The temporary folder a test runs elk-run in, or NULL with the test
 * skipped when ELK_RUN does not name an elk-run executable. */
static char *
run_dir_or_skip (void)
{
  const char *elk_run = g_getenv ("ELK_RUN");
  g_autoptr (GError) error = NULL;
  char *dir;

  if (elk_run == NULL || !g_file_test (elk_run, G_FILE_TEST_IS_EXECUTABLE))
    {
      g_test_skip ("ELK_RUN does not name an elk-run executable");
      return NULL;
    }
  dir = g_dir_make_tmp ("elk-llama-run-XXXXXX", &error);
  g_assert_no_error (error);
  return dir;
}

/* Runs the two-layer Llama-2-7B decode of test_run() (batch 8, KV cache
 * 1024) with the model @model_param names, as experiment @name, and
 * checks its FLOPs and HBM bytes against @e. */
static void
run_and_check (const char *dir,
               const char *name,
               const char *model_param,
               const Expected *e)
{
  g_autofree char *params = NULL, *flops_what = NULL, *hbm_what = NULL;
  double flops, hbm;

  params = g_strdup_printf ("%s"
                            "    <param name=\"batch\">8</param>\n"
                            "    <param name=\"seq\">1024</param>\n"
                            "    <param name=\"layers\">2</param>\n",
                            model_param);
  run (dir, name, params, &flops, &hbm);
  flops_what = g_strdup_printf ("%s FLOPs", name);
  hbm_what = g_strdup_printf ("%s HBM bytes", name);
  assert_close (flops, e->flops, flops_what);
  assert_close (hbm, (double) (e->weight_bytes + e->kv_bytes), hbm_what);
}

static void
test_run (void)
{
  g_autofree char *dir = NULL, *json_path = NULL;
  g_autoptr (GError) error = NULL;
  /* Llama-2-7B from models.md, truncated to 2 layers. */
  Row llama
      = { "llama-2-7b", 2,     4096,  32,    32,    128, 11008, 32000, 4096,
          TRUE,         FALSE, FALSE, FALSE, FALSE, 0,   0,     0,     0 };
  Expected e;

  dir = run_dir_or_skip ();
  if (dir == NULL)
    return;

  expect (&llama, LLAMA_PHASE_DECODE, 8, 1024, 2, &e);
  run_and_check (dir, "preset",
                 "    <param name=\"preset\">llama-2-7b</param>\n", &e);

  json_path = g_build_filename (dir, "config.json", NULL);
  g_assert_true (g_file_set_contents (json_path, llama2_7b_json, -1, &error));
  run_and_check (dir, "config",
                 "    <param name=\"model\">config.json</param>\n", &e);
  elk_test_remove_tree (dir);
}

/* The tiny GGUF file of the shared corpus (../shared/corpus, ELK_CORPUS):
 * a skip, reported as such, when it is absent. */
static void
test_run_gguf (void)
{
  g_autofree char *dir = NULL, *gguf = NULL, *params = NULL;
  Row tiny = { "tiny", 1, 8, 2, 2, 4, 32, 32000, 4096, TRUE, FALSE, FALSE,
               FALSE, FALSE, 0, 0, 0, 0 };
  Expected e;
  double flops, hbm;

  gguf = llama_test_corpus_file ("llama-2-tiny-random.gguf");
  if (gguf == NULL)
    return;
  dir = run_dir_or_skip ();
  if (dir == NULL)
    return;
  params = g_strdup_printf ("    <param name=\"model\">%s</param>\n"
                            "    <param name=\"dtype\">file</param>\n"
                            "    <param name=\"batch\">4</param>\n"
                            "    <param name=\"seq\">100</param>\n",
                            gguf);
  run (dir, "gguf", params, &flops, &hbm);
  expect (&tiny, LLAMA_PHASE_DECODE, 4, 100, 2, &e);
  assert_close (flops, e.flops, "GGUF FLOPs");
  /* File types: F16 projections and head, F32 norms (3 x 8 x 4 bytes
   * instead of 3 x 8 x 2), F16 KV cache. */
  assert_close (hbm, (double) (e.weight_bytes + 3 * 8 * 2 + e.kv_bytes),
                "GGUF HBM bytes");
  elk_test_remove_tree (dir);
}

/* An unknown granularity is refused before anything runs, with the
 * parameter, the value and the accepted values in the message. */
static void
test_bad_granularity (void)
{
  const char *elk_run = g_getenv ("ELK_RUN");
  g_autofree char *dir = NULL, *xml_path = NULL, *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  const char *argv[] = { elk_run, NULL, NULL };
  gint status;

  dir = run_dir_or_skip ();
  if (dir == NULL)
    return;
  xml_path = g_build_filename (dir, "bad.xml", NULL);
  g_assert_true (g_file_set_contents (
      xml_path,
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<experiment format=\"1\" name=\"bad\">\n"
      "  <frontend name=\"llama\">\n"
      "    <param name=\"preset\">llama2-13b-paper</param>\n"
      "    <param name=\"granularity\">coarse</param>\n"
      "  </frontend>\n"
      "  <chip name=\"analytic\"/>\n"
      "  <scheduler name=\"ideal\" bound=\"true\"/>\n"
      "  <output dir=\"out-bad\"/>\n"
      "</experiment>\n", -1, &error));
  argv[1] = xml_path;
  g_assert_true (g_spawn_sync (dir, (char **) argv, NULL, G_SPAWN_DEFAULT,
                               NULL, NULL, &out, &err, &status, &error));
  g_assert_no_error (error);
  g_assert_false (g_spawn_check_wait_status (status, NULL));
  g_test_message ("%s", err);
  g_assert_nonnull (strstr (err, "granularity"));
  g_assert_nonnull (strstr (err, "'coarse'"));
  g_assert_nonnull (strstr (err, "elk, artifact"));
  elk_test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/llama/run/elk-run", test_run);
  g_test_add_func ("/llama/run/gguf", test_run_gguf);
  g_test_add_func ("/llama/run/bad-granularity", test_bad_granularity);
  return g_test_run ();
}
