/* tests/fuzz/fuzz-hf-config.c: the Hugging Face config.json reader, then
 * a one-layer graph of the model it describes. */
#include "config.h"

#include "elk-fuzz-llama.h"

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  elk_fuzz_fail_on_warnings ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (LlamaModel) model = NULL;
  LlamaBuildOptions options;
  ElkGraph *graph;

  if (size > G_MAXSSIZE)
    return 0;
  model = elk__llama_model_new_from_hf_data ((const char *) data, (gssize) size,
                                             "fuzz/config.json", &error);
  elk_fuzz_check (model != NULL, error);
  if (model == NULL)
    return 0;
  (void) elk__llama_model_count_params (model, 0);

  elk__llama_build_options_init (&options);
  options.layers = 1;
  elk_fuzz_pick_options (&options, data, size);

  graph = elk__llama_build_graph (model, &options, &error);
  elk_fuzz_check (graph != NULL, error);
  g_clear_pointer (&graph, elk_graph_unref);
  return 0;
}
