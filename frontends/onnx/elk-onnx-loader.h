/* elk-onnx-loader.h: ONNX file → ElkGraph, shared by the plugin and its
 * tests.
 *
 * Not installed.  The plugin (elk-onnx-frontend.c) is a thin GObject shell
 * around elk__onnx_load(); the tests call the loader directly so that they
 * can check shapes and FLOPs without a plugin registry.
 */
#pragma once

#include <glib.h>
#include <elk/elk-graph.h>

G_BEGIN_DECLS

/* Tensors larger than this are rejected unless the user raises the
 * "max-tensor-elements" property: a dimension of 2^40 in a corrupted file
 * must be an error, not an overflow three layers away. */
#define ELK_ONNX_DEFAULT_MAX_TENSOR_ELEMENTS (G_GUINT64_CONSTANT (1) << 36)
/* protobuf cannot represent messages above 2 GiB, so neither can a file. */
#define ELK_ONNX_DEFAULT_MAX_FILE_SIZE (G_GUINT64_CONSTANT (2) << 30)
/* Messages nest at most this deep (a model, its graph, a node, an
 * attribute, a subgraph, ...; or a TypeProto sequence of sequences): the
 * protobuf decoder recurses once per level, so a crafted file could
 * otherwise exhaust the stack.  Real models nest fewer than 20 levels. */
#define ELK_ONNX_DEFAULT_MAX_NESTING 64
/* The largest accepted graph, in nodes.  The largest exports elk reads
 * (decoder stacks with unrolled norms) have a few ten thousand. */
#define ELK_ONNX_DEFAULT_MAX_NODES 1000000
/* The newest opset of the default domain whose operator semantics the
 * loader implements. */
#define ELK_ONNX_MAX_OPSET 18

/**
 * OnnxOptions:
 * @dims: (nullable): symbolic dimension bindings, "batch=32,sequence=128".
 * @dtype: (nullable): "file" (keep the file's element types) or "f32",
 *   "f16", "bf16": the type every floating-point tensor gets.
 * @inputs: (nullable): comma-separated names of the graph inputs that are
 *   model inputs; %NULL to decide from how each input is used.
 * @name: (nullable): the model name for results; default the file name.
 * @max_file_size: largest accepted .onnx file, in bytes.
 * @max_tensor_elements: largest accepted tensor, in elements.
 * @max_nesting: deepest accepted nesting of protobuf messages.
 * @max_nodes: largest accepted graph, in nodes.
 * @sequence_lens_full: a recurrent layer's sequence_lens known only at run
 *   time is taken to give every sequence its full length; %FALSE refuses
 *   such a layer.
 * @input_values: (nullable): values of single-element graph inputs,
 *   "sr=16000,cond=1": each such input becomes a constant, so that what
 *   depends on it (an If's condition) folds at import.
 */
typedef struct
{
  const char *dims;
  const char *dtype;
  const char *inputs;
  const char *name;
  guint64 max_file_size;
  guint64 max_tensor_elements;
  guint max_nesting;
  guint64 max_nodes;
  gboolean sequence_lens_full;
  const char *input_values;
} OnnxOptions;

void elk__onnx_options_init (OnnxOptions *options);

ElkGraph *
elk__onnx_load (const char *path, const OnnxOptions *options, GError **error);

/* The report elk-onnx-info prints (elk-onnx-describe.c). */
char *elk__onnx_describe (const char *path,
                          const OnnxOptions *options,
                          GError **error);

G_END_DECLS
