/* elk-onnx-recurrent.h: the expansion of LSTM, GRU and RNN nodes into the
 * ONNX nodes of their time steps (elk-onnx-recurrent.c).
 *
 * The expansion is a function of the node and three numbers, so that a
 * runtime feeding a compiled model (the functional-mode tests, which
 * rebuild the views the graph reads on the host) can expand a node
 * exactly as the loader did and find the node behind every value.
 */
#pragma once

#include <glib.h>

#include "onnx.pb-c.h"

G_BEGIN_DECLS

typedef struct
{
  /* const Onnx__NodeProto *, in dataflow order; owned by the expansion. */
  GPtrArray *nodes;
  /* Every allocation behind the nodes, freed with the expansion. */
  GPtrArray *owned;
} ElkOnnxRnnExpansion;

ElkOnnxRnnExpansion *elk__onnx_rnn_expand (const Onnx__NodeProto *p,
                                           const char *prefix,
                                           gint64 seq_len,
                                           gint64 hidden,
                                           char **why);
void elk__onnx_rnn_expansion_free (ElkOnnxRnnExpansion *e);
gboolean elk__onnx_node_is_internal (const Onnx__NodeProto *p);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkOnnxRnnExpansion,
                               elk__onnx_rnn_expansion_free)

G_END_DECLS
