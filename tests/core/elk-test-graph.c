/* tests/core/elk-test-graph.c: building small graphs by hand in tests.
 *
 * The hand-built test graphs name their tensors after the layer ("w3",
 * "h3") and expect every addition to succeed; elk_test_add_tensor() wraps
 * elk_graph_add_tensor() so that a test states only the tensor's origin,
 * shape and name.  A rejected tensor fails the test. */
#include "elk-test-graph.h"

/* An F16 tensor named by @name_format; returns its index. */
gint
elk_test_add_tensor (ElkGraph *graph,
                     ElkTensorOrigin origin,
                     guint n_dims,
                     const guint64 *shape,
                     const char *name_format,
                     ...)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *name = NULL;
  va_list args;
  gint t;

  va_start (args, name_format);
  name = g_strdup_vprintf (name_format, args);
  va_end (args);
  t = elk_graph_add_tensor (graph, name, ELK_DTYPE_F16, origin, n_dims, shape,
                            0, &error);
  g_assert_no_error (error);
  return t;
}
