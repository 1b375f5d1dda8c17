/* tests/fuzz/fuzz-hf-config.c: the Hugging Face config.json reader, then
 * a one-layer graph of the model it describes. */
#include "config.h"

#include "elk-fuzz-llama.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (LlamaModel) model = NULL;

  if (size > G_MAXSSIZE)
    return 0;
  model = elk__llama_model_new_from_hf_data ((const char *) data, (gssize) size,
                                             "fuzz/config.json", &error);
  elk_fuzz_check (model != NULL, error);
  if (model == NULL)
    return 0;
  elk_fuzz_build_graph (model, data, size);
  return 0;
}
