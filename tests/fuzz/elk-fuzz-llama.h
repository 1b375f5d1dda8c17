/* tests/fuzz/elk-fuzz-llama.h: shared by the llama frontend's targets. */
#pragma once

#include "elk-fuzz.h"
#include "elk-llama-private.h"

/* One layer, and most of the time a small batch and sequence; one input in
 * eight gets extreme values within the frontend's parameter ranges. */
static inline void
elk_fuzz_pick_options (LlamaBuildOptions *options,
                       const uint8_t *data,
                       size_t size)
{
  guint64 h = elk_fuzz_hash (data, size);

  options->phase = (LlamaPhase) (h % 3);
  options->dtype = (LlamaDType) ((h >> 2) % 4);
  options->fuse_qkv = (h >> 4) & 1;
  options->fuse_ffn = (h >> 5) & 1;
  if (((h >> 6) & 7) == 0)
    {
      options->batch = 1 + (h >> 9) % 65536;
      options->seq = (guint64) ((h >> 25) % ((1u << 24) + 1));
      options->split_factor = (gint) ((h >> 50) % 1026) - 1;
    }
  else
    {
      options->batch = 1 + (h >> 9) % 4;
      options->seq = (h >> 12) % 64;
    }
}

/* The llama targets set up nothing but fatal warnings. */
int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  elk_fuzz_fail_on_warnings ();
  return 0;
}

/* What both targets do with a model they read: count its parameters and
 * build a one-layer graph with options picked from the input. */
static inline void
elk_fuzz_build_graph (const LlamaModel *model, const uint8_t *data, size_t size)
{
  g_autoptr (GError) error = NULL;
  LlamaBuildOptions options;
  ElkGraph *graph;

  (void) elk__llama_model_count_params (model, 0);
  elk__llama_build_options_init (&options);
  options.layers = 1;
  elk_fuzz_pick_options (&options, data, size);

  graph = elk__llama_build_graph (model, &options, &error);
  elk_fuzz_check (graph != NULL, error);
  g_clear_pointer (&graph, elk_graph_unref);
}
