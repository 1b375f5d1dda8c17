/* onnx-test-proto.c: see onnx-test-proto.h. */
#include "onnx-test-proto.h"

gpointer
onnx_test_own (OnnxTestArena *a, gpointer p)
{
  g_ptr_array_add (a->owned, p);
  return p;
}

/* A tensor @name of element type @dtype, dimensions @dims (@rank of them;
 * 0 for a scalar) and the values @data, one per element: float_data for
 * FLOAT, and
 * int32_data for the integer types narrower than 64 bits, which ONNX
 * stores there. */
Onnx__TensorProto *
onnx_test_tensor (OnnxTestArena *a,
                  const char *name,
                  int dtype,
                  guint rank,
                  const gint64 *dims,
                  const double *data)
{
  Onnx__TensorProto *t = onnx_test_own (a, g_new0 (Onnx__TensorProto, 1));
  gsize n = 1;

  for (guint k = 0; k < rank; k++)
    n *= (gsize) dims[k];
  onnx__tensor_proto__init (t);
  t->name = (char *) name;
  t->n_dims = rank;
  t->dims
      = onnx_test_own (a, g_memdup2 (dims, MAX (rank, 1) * sizeof (gint64)));
  t->has_data_type = TRUE;
  t->data_type = dtype;
  if (dtype == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
    {
      t->n_float_data = n;
      t->float_data = onnx_test_own (a, g_new (float, n));
      for (gsize i = 0; i < n; i++)
        t->float_data[i] = (float) data[i];
    }
  else
    {
      t->n_int32_data = n;
      t->int32_data = onnx_test_own (a, g_new (gint32, n));
      for (gsize i = 0; i < n; i++)
        t->int32_data[i] = (gint32) data[i];
    }
  return t;
}

/* A tensor of element type @dtype and fixed dimensions @dims (@rank of
 * them; 0 for a scalar). */
Onnx__ValueInfoProto *
onnx_test_value_info (OnnxTestArena *a,
                      const char *name,
                      int dtype,
                      guint rank,
                      const gint64 *dims)
{
  Onnx__ValueInfoProto *v = onnx_test_own (a, g_new0 (Onnx__ValueInfoProto, 1));
  Onnx__TypeProto *tp = onnx_test_own (a, g_new0 (Onnx__TypeProto, 1));
  Onnx__TypeProto__Tensor *tt
      = onnx_test_own (a, g_new0 (Onnx__TypeProto__Tensor, 1));
  Onnx__TensorShapeProto *sh
      = onnx_test_own (a, g_new0 (Onnx__TensorShapeProto, 1));

  onnx__value_info_proto__init (v);
  onnx__type_proto__init (tp);
  onnx__type_proto__tensor__init (tt);
  onnx__tensor_shape_proto__init (sh);
  v->name = (char *) name;
  v->type = tp;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  tt->has_elem_type = TRUE;
  tt->elem_type = dtype;
  tt->shape = sh;
  sh->n_dim = rank;
  /* One more than needed, so that a scalar's array is not of size 0. */
  sh->dim = onnx_test_own (a, g_new0 (Onnx__TensorShapeProto__Dimension *,
                                      rank + 1));
  for (guint k = 0; k < rank; k++)
    {
      Onnx__TensorShapeProto__Dimension *d
          = onnx_test_own (a, g_new0 (Onnx__TensorShapeProto__Dimension, 1));
      onnx__tensor_shape_proto__dimension__init (d);
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = dims[k];
      sh->dim[k] = d;
    }
  return v;
}

/* An attribute named @name of type @t, its value left to the caller. */
Onnx__AttributeProto *
onnx_test_attribute (OnnxTestArena *a,
                     const char *name,
                     Onnx__AttributeProto__AttributeType t)
{
  Onnx__AttributeProto *at
      = onnx_test_own (a, g_new0 (Onnx__AttributeProto, 1));

  onnx__attribute_proto__init (at);
  at->name = (char *) name;
  at->has_type = TRUE;
  at->type = t;
  return at;
}

void
onnx_test_write_message (const ProtobufCMessage *m, const char *path)
{
  gsize len = protobuf_c_message_get_packed_size (m);
  g_autofree guint8 *buf = g_malloc (MAX (len, 1));

  protobuf_c_message_pack (m, buf);
  g_assert_true (
      g_file_set_contents (path, (const char *) buf, (gssize) len, NULL));
}
