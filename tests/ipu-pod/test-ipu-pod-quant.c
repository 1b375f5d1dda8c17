/* test-ipu-pod-quant.c: the "ipu-pod" chip's functional mode on the
 * quantization kernels (chips/ipu-pod/elk-ipu-pod-func.c), on graphs built
 * here by hand: rounding half to even and saturation against values worked
 * out by hand, the integer products' exactness limit, and the refusals.
 *
 * The ONNX operators themselves (through the onnx frontend) are checked
 * against libonnx-testdata by test-ipu-pod-onnx.c.
 */
#include <math.h>
#include <string.h>

#include <elk/elk.h>

#include "elk-test-util.h"

static ElkRegistry *registry;

/* Two chips of 8 tiles in functional mode, with @inputs. */
static GObject *
func_chip (GHashTable *inputs)
{
  GObject *chip = elk_test_make (registry, ELK_TYPE_CHIP, "ipu-pod", "chips", 2,
                                 "cores", 16, NULL);
  GParamSpec *ps
      = g_object_class_find_property (G_OBJECT_GET_CLASS (chip), "mode");
  GEnumClass *ec = g_type_class_ref (ps->value_type);

  g_object_set (chip, "mode",
                g_enum_get_value_by_nick (ec, "functional")->value, "inputs",
                inputs, NULL);
  g_type_class_unref (ec);
  return chip;
}

static guint32
add_tensor (ElkGraph *g,
            const char *name,
            ElkDType dtype,
            ElkTensorOrigin origin,
            guint rank,
            const guint64 *shape)
{
  g_autoptr (GError) error = NULL;
  gint id
      = elk_graph_add_tensor (g, name, dtype, origin, rank, shape, 0, &error);
  g_assert_no_error (error);
  return (guint32) id;
}

static void
add_input (GHashTable *inputs, const char *name, const float *v, gsize n)
{
  g_hash_table_insert (inputs, g_strdup (name),
                       g_bytes_new (v, n * sizeof (float)));
}

static GHashTable *
new_inputs (void)
{
  return g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                (GDestroyNotify) g_bytes_unref);
}

/* Runs @g and returns the output tensor @name (n floats), or NULL with
 * @error set. */
static float *
run (ElkGraph *g, GHashTable *inputs, const char *name, GError **error)
{
  g_autoptr (GObject) chip = func_chip (inputs);
  g_autoptr (ElkMetrics) m
      = elk_test_schedule_and_run (registry, g, ELK_CHIP (chip), "elk",
                                   "reservation", error);
  g_autoptr (GHashTable) tensors = NULL;
  GBytes *b;

  if (m == NULL)
    return NULL;
  g_object_get (chip, "last-tensors", &tensors, NULL);
  b = g_hash_table_lookup (tensors, name);
  g_assert_nonnull (b);
  return g_memdup2 (g_bytes_get_data (b, NULL), g_bytes_get_size (b));
}

/* y = quantize-linear (x, scale, zero point) into @dtype over x =
 * [0.5, 1.5, 2.5, -0.5, -1.5, 300, -300, 7.49] with scale 1 and zero
 * point @zp. */
static ElkGraph *
quantize_graph (ElkDType dtype)
{
  ElkGraph *g = elk_graph_new ("quantize");
  const guint64 n = 8, one = 1;
  guint32 t[4];
  g_autoptr (GError) error = NULL;

  /* In the order of the spec: the inputs, then the output. */
  t[0]
      = add_tensor (g, "x", ELK_DTYPE_F32, ELK_TENSOR_ORIGIN_ACTIVATION, 1, &n);
  t[1] = add_tensor (g, "s", ELK_DTYPE_F32, ELK_TENSOR_ORIGIN_WEIGHT, 1, &one);
  t[2] = add_tensor (g, "z", dtype == ELK_DTYPE_F32 ? ELK_DTYPE_U8 : dtype,
                     ELK_TENSOR_ORIGIN_WEIGHT, 1, &one);
  t[3] = add_tensor (g, "y", dtype, ELK_TENSOR_ORIGIN_ACTIVATION, 1, &n);
  g_assert_cmpint (elk_graph_add_op (g, "q", "quantize-linear",
                                     ELK_OP_ELEMENTWISE, -1, "a,b,b->a", t, 4,
                                     NULL, &error),
                   >=, 0);
  g_assert_no_error (error);
  return g;
}

/* ONNX's QuantizeLinear rounds half to even and saturates to the output
 * type: worked out by hand for uint8 (zero point 10) and int8 (zero
 * point -3). */
static void
test_round_and_saturate (void)
{
  static const float x[] = { 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300, -300, 7.49f };
  static const struct
  {
    ElkDType dtype;
    float zp;
    float want[8];
  } cases[] = {
    { ELK_DTYPE_U8, 10, { 10, 12, 12, 10, 8, 255, 0, 17 } },
    { ELK_DTYPE_I8, -3, { -3, -1, -1, -3, -5, 127, -128, 4 } },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr (ElkGraph) g = quantize_graph (cases[c].dtype);
      g_autoptr (GHashTable) in = new_inputs ();
      g_autoptr (GError) error = NULL;
      g_autofree float *y = NULL;
      const float one = 1;

      add_input (in, "x", x, 8);
      add_input (in, "s", &one, 1);
      add_input (in, "z", &cases[c].zp, 1);
      y = run (g, in, "y", &error);
      g_assert_no_error (error);
      for (guint i = 0; i < 8; i++)
        g_assert_cmpfloat (y[i], ==, cases[c].want[i]);
    }
}

/* A quantizing kernel whose output is not 8-bit is refused: it has no
 * saturation bounds. */
static void
test_quantize_to_float_refused (void)
{
  g_autoptr (ElkGraph) g = quantize_graph (ELK_DTYPE_F32);
  g_autoptr (GHashTable) in = new_inputs ();
  g_autoptr (GError) error = NULL;
  g_autofree float *y = NULL;
  static const float x[8] = { 0 }, one = 1;

  add_input (in, "x", x, 8);
  add_input (in, "s", &one, 1);
  add_input (in, "z", &one, 1);
  y = run (g, in, "y", &error);
  g_assert_null (y);
  g_assert_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN);
  g_assert_nonnull (strstr (error->message, "operator 'q' of type "
                                            "'quantize-linear' quantizes to "
                                            "'y' of element type f32"));
}

/* An int8 product into int32 over k terms of 127 * 127: exact while the
 * sum stays within 2^24 (k = 1024: 16,516,096), refused beyond (k = 1088:
 * 17,548,352), since functional mode holds values as float32. */
static void
test_integer_exactness (void)
{
  static const guint64 ks[] = { 1024, 1088 };

  for (guint c = 0; c < G_N_ELEMENTS (ks); c++)
    {
      g_autoptr (ElkGraph) g = elk_graph_new ("matmul-integer");
      g_autoptr (GHashTable) in = new_inputs ();
      g_autoptr (GError) error = NULL;
      g_autofree float *y = NULL;
      g_autofree float *ones = g_new (float, ks[c]);
      guint64 a_shape[2] = { 1, ks[c] }, b_shape[2] = { ks[c], 1 };
      guint64 y_shape[2] = { 1, 1 };
      guint32 t[3];

      for (guint64 i = 0; i < ks[c]; i++)
        ones[i] = 127;
      t[0] = add_tensor (g, "a", ELK_DTYPE_I8, ELK_TENSOR_ORIGIN_ACTIVATION, 2,
                         a_shape);
      t[1] = add_tensor (g, "b", ELK_DTYPE_I8, ELK_TENSOR_ORIGIN_WEIGHT, 2,
                         b_shape);
      t[2] = add_tensor (g, "y", ELK_DTYPE_I32, ELK_TENSOR_ORIGIN_ACTIVATION, 2,
                         y_shape);
      g_assert_cmpint (elk_graph_add_op (g, "mm", "matmul", ELK_OP_MATMUL, -1,
                                         "mk,kn->mn", t, 3, NULL, &error),
                       >=, 0);
      add_input (in, "a", ones, ks[c]);
      add_input (in, "b", ones, ks[c]);
      y = run (g, in, "y", &error);
      if (c == 0)
        {
          g_assert_no_error (error);
          g_assert_cmpfloat (y[0], ==, 1024.0 * 127 * 127);
        }
      else
        {
          g_assert_null (y);
          g_assert_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN);
          g_assert_nonnull (strstr (error->message,
                                    "element 0 of 'y' (i32), written by "
                                    "operator 'mm', is 17548352"));
          g_assert_nonnull (strstr (error->message, "exact only up to 2^24"));
        }
    }
}

int
main (int argc, char *argv[])
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  g_test_add_func ("/ipu-pod/quant/round-and-saturate",
                   test_round_and_saturate);
  g_test_add_func ("/ipu-pod/quant/quantize-to-float-refused",
                   test_quantize_to_float_refused);
  g_test_add_func ("/ipu-pod/quant/integer-exactness", test_integer_exactness);
  ret = g_test_run ();
  g_object_unref (registry);
  return ret;
}
