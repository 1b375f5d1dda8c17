/* tests/fuzz/fuzz-gguf.c: the GGUF reader, then the mapping from GGUF
 * metadata to a model and a one-layer graph of that model. */
#include "config.h"

#include "elk-fuzz-llama.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autoptr (GBytes) bytes = g_bytes_new (data, size);
  g_autoptr (GError) error = NULL;
  Gguf *gguf;
  LlamaModel *model;
  const GgufValue *tokens;

  gguf = elk__gguf_new_from_bytes (bytes, "fuzz.gguf", &error);
  elk_fuzz_check (gguf != NULL, error);
  if (gguf == NULL)
    return 0;

  /* Walk the token list as the model reader and tools do. */
  tokens = elk__gguf_lookup (gguf, "tokenizer.ggml.tokens");
  if (tokens != NULL && tokens->type == GGUF_TYPE_ARRAY)
    for (guint64 i = 0; i < MIN (tokens->count, 64); i++)
      {
        GgufValue v;
        g_autoptr (GError) e = NULL;
        gboolean ok = elk__gguf_array_nth (gguf, tokens, i, &v, &e);
        elk_fuzz_check (ok, e);
        if (!ok)
          break;
      }

  model = elk__llama_model_new_from_gguf (gguf, &error);
  elk_fuzz_check (model != NULL, error);
  if (model == NULL)
    {
      elk__gguf_free (gguf);
      return 0;
    }
  elk_fuzz_build_graph (model, data, size);
  elk__llama_model_free (model);
  return 0;
}
