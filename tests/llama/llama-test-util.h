/* llama-test-util.h: helpers shared by the llama frontend's tests. */
#pragma once

#include <elk/elk.h>

#include "elk-llama-private.h"

guint64 llama_test_attr (ElkGraph *g, const char *key);
double llama_test_matmul_flops (ElkGraph *g);
ElkGraph *llama_test_build_preset (const char *preset,
                                   const LlamaBuildOptions *o);
char *llama_test_corpus_file (const char *name);
