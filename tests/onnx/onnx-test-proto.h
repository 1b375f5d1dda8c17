/* onnx-test-proto.h: building ONNX protobuf messages in tests.
 *
 * Tests that write small models (test-onnx-quant.c, onnx-rnn-case.c) fill
 * protobuf-c structs by hand; these helpers hold what they share: an arena
 * that owns every allocation behind one model, a tensor value-info, a
 * tensor with its data, an attribute header and writing a message to a file.
 */
#pragma once

#include <glib.h>
#include "onnx.pb-c.h"

/* Every allocation behind one model, freed with the array after the model
 * is written. */
typedef struct
{
  GPtrArray *owned;
} OnnxTestArena;

gpointer onnx_test_own (OnnxTestArena *a, gpointer p);
Onnx__ValueInfoProto *onnx_test_value_info (OnnxTestArena *a,
                                            const char *name,
                                            int dtype,
                                            guint rank,
                                            const gint64 *dims);
Onnx__TensorProto *onnx_test_tensor (OnnxTestArena *a,
                                     const char *name,
                                     int dtype,
                                     guint rank,
                                     const gint64 *dims,
                                     const double *data);
Onnx__AttributeProto *onnx_test_attribute (
    OnnxTestArena *a, const char *name, Onnx__AttributeProto__AttributeType t);
void onnx_test_write_message (const ProtobufCMessage *m, const char *path);
