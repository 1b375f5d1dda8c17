/* tests/malformed/test-malformed.c: every file of the malformed-input
 * suite is refused with the error its MANIFEST line names, and nothing
 * crashes, leaks or reads out of bounds on the way (the suite also runs
 * under ASan/UBSan and valgrind memcheck: .ci/run, .ci/valgrind).
 *
 * MANIFEST has one line per file: the file (relative to this folder), the
 * reader (experiment, gguf, hf-config, onnx), the error domain and the
 * error code name.  Lines starting with '#' are comments.  Every file in
 * the reader folders (xml/, gguf/, json/, onnx/) must be listed, so a new
 * file cannot be forgotten.
 *
 * Besides the domain and code, each error message must be valid UTF-8
 * (messages end up in result files) and name the file.
 *
 * With ELK_MALFORMED_LIST=1 the program prints what each file gives in
 * MANIFEST format instead of testing, to review when adding files. */
#include "config.h"

#include <string.h>

#include <elk/elk.h>

#include "elk-llama-private.h"
#include "elk-onnx-loader.h"

typedef struct
{
  char *file;
  char *reader;
  char *domain;
  char *code;
} Case;

typedef struct
{
  const char *name;
  GQuark (*domain) (void);
  gint code;
} CodeName;

#define CODE(domain, code)                                                     \
  {                                                                            \
#code, domain, code                                                        \
  }

static const CodeName code_names[] = {
  CODE (elk_experiment_error_quark, ELK_EXPERIMENT_ERROR_IO),
  CODE (elk_experiment_error_quark, ELK_EXPERIMENT_ERROR_PARSE),
  CODE (elk_experiment_error_quark, ELK_EXPERIMENT_ERROR_SCHEMA),
  CODE (elk_experiment_error_quark, ELK_EXPERIMENT_ERROR_UNKNOWN_PLUGIN),
  CODE (elk_experiment_error_quark, ELK_EXPERIMENT_ERROR_UNKNOWN_PARAM),
  CODE (elk_experiment_error_quark, ELK_EXPERIMENT_ERROR_BAD_VALUE),
  CODE (elk_experiment_error_quark, ELK_EXPERIMENT_ERROR_OUT_OF_RANGE),
  CODE (elk_experiment_error_quark, ELK_EXPERIMENT_ERROR_MISSING_FILE),
  CODE (elk_experiment_error_quark, ELK_EXPERIMENT_ERROR_INVALID),
  CODE (elk__llama_error_quark, LLAMA_ERROR_IO),
  CODE (elk__llama_error_quark, LLAMA_ERROR_FORMAT),
  CODE (elk__llama_error_quark, LLAMA_ERROR_UNSUPPORTED),
  CODE (elk__llama_error_quark, LLAMA_ERROR_INVALID),
  CODE (elk__llama_error_quark, LLAMA_ERROR_LIMIT),
  CODE (elk_graph_error_quark, ELK_GRAPH_ERROR_INVALID),
  CODE (elk_graph_error_quark, ELK_GRAPH_ERROR_UNSUPPORTED),
  CODE (elk_graph_error_quark, ELK_GRAPH_ERROR_LIMIT),
};

static ElkRegistry *registry;

static const CodeName *
code_lookup (GQuark domain, gint code)
{
  for (guint i = 0; i < G_N_ELEMENTS (code_names); i++)
    if (code_names[i].domain () == domain && code_names[i].code == code)
      return &code_names[i];
  return NULL;
}

static const char *
reader_for_dir (const char *dir)
{
  if (g_str_equal (dir, "xml"))
    return "experiment";
  if (g_str_equal (dir, "gguf"))
    return "gguf";
  if (g_str_equal (dir, "json"))
    return "hf-config";
  if (g_str_equal (dir, "onnx"))
    return "onnx";
  return NULL;
}

/* Runs @reader on @path; returns TRUE if it accepted the file. */
static gboolean
run_reader (const char *reader, const char *path, GError **error)
{
  if (g_str_equal (reader, "experiment"))
    {
      g_autoptr (ElkExperiment) e = elk_experiment_load (path, registry, error);
      return e != NULL;
    }
  if (g_str_equal (reader, "gguf"))
    {
      Gguf *gguf = elk__gguf_open (path, error);
      LlamaModel *model;
      if (gguf == NULL)
        return FALSE;
      model = elk__llama_model_new_from_gguf (gguf, error);
      if (model == NULL)
        {
          elk__gguf_free (gguf);
          return FALSE;
        }
      elk__llama_model_free (model);
      return TRUE;
    }
  if (g_str_equal (reader, "hf-config"))
    {
      g_autoptr (LlamaModel) model
          = elk__llama_model_new_from_hf_config (path, error);
      return model != NULL;
    }
  if (g_str_equal (reader, "onnx"))
    {
      ElkGraph *graph = elk__onnx_load (path, NULL, error);
      if (graph == NULL)
        return FALSE;
      elk_graph_unref (graph);
      return TRUE;
    }
  g_assert_not_reached ();
}

static void
test_case (gconstpointer data)
{
  const Case *c = data;
  g_autofree char *path
      = g_test_build_filename (G_TEST_DIST, "malformed", c->file, NULL);
  g_autofree char *base = g_path_get_basename (path);
  g_autoptr (GError) error = NULL;
  const CodeName *expected = NULL;
  gboolean ok;

  for (guint i = 0; i < G_N_ELEMENTS (code_names); i++)
    if (g_str_equal (code_names[i].name, c->code))
      expected = &code_names[i];
  g_assert_nonnull (expected);
  g_assert_cmpstr (g_quark_to_string (expected->domain ()), ==, c->domain);

  ok = run_reader (c->reader, path, &error);
  g_assert_false (ok);
  g_assert_nonnull (error);
  if (g_test_verbose ())
    g_test_message ("%s", error->message);
  g_assert_error (error, expected->domain (), expected->code);
  g_assert_true (g_utf8_validate (error->message, -1, NULL));
  g_assert_nonnull (strstr (error->message, base));
}

static void
case_free (gpointer data)
{
  Case *c = data;
  g_free (c->file);
  g_free (c->reader);
  g_free (c->domain);
  g_free (c->code);
  g_free (c);
}

static gint
compare_names (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* Prints a MANIFEST for every file of the reader folders. */
static int
list_all (void)
{
  const char *dirs[] = { "xml", "gguf", "json", "onnx" };

  for (guint d = 0; d < G_N_ELEMENTS (dirs); d++)
    {
      g_autofree char *dir_path
          = g_test_build_filename (G_TEST_DIST, "malformed", dirs[d], NULL);
      g_autoptr (GDir) dir = g_dir_open (dir_path, 0, NULL);
      g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
      const char *name;

      if (dir == NULL)
        continue;
      while ((name = g_dir_read_name (dir)) != NULL)
        g_ptr_array_add (names, g_strdup (name));
      g_ptr_array_sort (names, compare_names);
      for (guint i = 0; i < names->len; i++)
        {
          g_autofree char *path
              = g_build_filename (dir_path, (char *) names->pdata[i], NULL);
          g_autoptr (GError) error = NULL;
          const CodeName *code;

          if (run_reader (reader_for_dir (dirs[d]), path, &error))
            {
              g_print ("%s/%s %s ACCEPTED\n", dirs[d], (char *) names->pdata[i],
                       reader_for_dir (dirs[d]));
              continue;
            }
          code = code_lookup (error->domain, error->code);
          g_print ("%s/%s %s %s %s\n# %s\n", dirs[d], (char *) names->pdata[i],
                   reader_for_dir (dirs[d]), g_quark_to_string (error->domain),
                   code != NULL ? code->name : "UNKNOWN", error->message);
        }
    }
  return 0;
}

int
main (int argc, char **argv)
{
  g_autofree char *manifest_path = NULL;
  g_autofree char *text = NULL;
  g_autofree char *plugin = NULL;
  g_auto (GStrv) lines = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) cases = g_ptr_array_new_with_free_func (case_free);
  g_autoptr (GHashTable) listed = g_hash_table_new (g_str_hash, g_str_equal);
  const char *dirs[] = { "xml", "gguf", "json", "onnx" };
  int status;

  g_test_init (&argc, &argv, NULL);

  /* The experiment reader resolves plugin names through a registry that
   * holds only the good fixture plugin. */
  registry = elk_registry_new ();
  plugin = g_test_build_filename (G_TEST_BUILT, "fixtures", "plugins",
                                  "libelk-good." G_MODULE_SUFFIX, NULL);
  g_assert_true (elk_registry_load_file (registry, plugin, &error));
  g_assert_no_error (error);

  if (g_getenv ("ELK_MALFORMED_LIST") != NULL)
    {
      status = list_all ();
      g_object_unref (registry);
      return status;
    }

  manifest_path
      = g_test_build_filename (G_TEST_DIST, "malformed", "MANIFEST", NULL);
  g_assert_true (g_file_get_contents (manifest_path, &text, NULL, &error));
  g_assert_no_error (error);
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_auto (GStrv) fields = NULL;
      g_autofree char *test_path = NULL;
      Case *c;

      g_strstrip (lines[i]);
      if (lines[i][0] == '\0' || lines[i][0] == '#')
        continue;
      fields = g_strsplit_set (lines[i], " \t", -1);
      /* Collapse runs of blanks. */
      {
        guint n = 0;
        for (guint k = 0; fields[k] != NULL; k++)
          if (fields[k][0] != '\0')
            fields[n++] = fields[k];
          else
            g_free (fields[k]);
        fields[n] = NULL;
        g_assert_cmpuint (n, ==, 4);
      }
      c = g_new0 (Case, 1);
      c->file = g_strdup (fields[0]);
      c->reader = g_strdup (fields[1]);
      c->domain = g_strdup (fields[2]);
      c->code = g_strdup (fields[3]);
      g_ptr_array_add (cases, c);
      g_hash_table_add (listed, c->file);
      test_path = g_strdup_printf ("/malformed/%s", c->file);
      g_test_add_data_func (test_path, c, test_case);
    }

  /* Every file on disk has a MANIFEST line. */
  for (guint d = 0; d < G_N_ELEMENTS (dirs); d++)
    {
      g_autofree char *dir_path
          = g_test_build_filename (G_TEST_DIST, "malformed", dirs[d], NULL);
      g_autoptr (GDir) dir = g_dir_open (dir_path, 0, NULL);
      const char *name;

      g_assert_nonnull (dir);
      while ((name = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *rel = g_build_filename (dirs[d], name, NULL);
          if (!g_hash_table_contains (listed, rel))
            g_printerr ("%s is not listed in MANIFEST\n", rel);
          g_assert_true (g_hash_table_contains (listed, rel));
        }
    }

  status = g_test_run ();
  g_object_unref (registry);
  return status;
}
