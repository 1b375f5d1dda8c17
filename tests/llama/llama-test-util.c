/* llama-test-util.c: helpers shared by the llama frontend's tests. */
#include "config.h"

#include "llama-test-util.h"

/* A numeric graph attribute the builder must have set. */
guint64
llama_test_attr (ElkGraph *g, const char *key)
{
  const char *v = elk_graph_get_attribute (g, key);
  g_assert_nonnull (v);
  return g_ascii_strtoull (v, NULL, 10);
}

/* The FLOPs of the graph's MatMul operators. */
double
llama_test_matmul_flops (ElkGraph *g)
{
  double total = 0;
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    {
      const ElkOp *op = elk_graph_get_op (g, i);
      if (op->kind == ELK_OP_MATMUL)
        total += op->flops;
    }
  return total;
}

/* The graph of @preset built with @o, which must succeed. */
ElkGraph *
llama_test_build_preset (const char *preset, const LlamaBuildOptions *o)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (LlamaModel) m = elk__llama_model_new_from_preset (preset, &error);
  ElkGraph *g;

  g_assert_no_error (error);
  g = elk__llama_build_graph (m, o, &error);
  g_assert_no_error (error);
  g_assert_nonnull (g);
  return g;
}

/* The path of a file of the shared GGUF corpus, or NULL with the test
 * skipped when the corpus or the file is absent. */
char *
llama_test_corpus_file (const char *name)
{
  const char *corpus = g_getenv ("ELK_CORPUS");
  char *path;

  if (corpus == NULL)
    {
      g_test_skip ("ELK_CORPUS is not set; the GGUF corpus tests need "
                   "../shared/corpus");
      return NULL;
    }
  path = g_build_filename (corpus, "gguf", name, NULL);
  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    {
      g_autofree char *msg = g_strdup_printf ("corpus file %s is absent", path);
      g_test_skip (msg);
      g_free (path);
      return NULL;
    }
  return path;
}
