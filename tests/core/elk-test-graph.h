/* tests/core/elk-test-graph.h: building small graphs by hand in tests. */
#pragma once

#include <elk/elk.h>

gint elk_test_add_tensor (ElkGraph *graph,
                          ElkTensorOrigin origin,
                          guint n_dims,
                          const guint64 *shape,
                          const char *name_format,
                          ...) G_GNUC_PRINTF (5, 6);
