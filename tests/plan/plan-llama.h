/* plan-llama.h: the Llama2-70B decode operators, built by hand for the
 * plan-space benchmark and tests (the Llama frontend is separate), and the
 * small graphs and chip the plan tests share. */
#pragma once

#include <elk/elk-chip-spec.h>
#include <elk/elk-graph.h>

G_BEGIN_DECLS

ElkGraph *plan_test_llama2_70b_decode (guint batch, guint seq, guint layers);
ElkGraph *plan_test_matmul (guint64 m,
                            guint64 k,
                            guint64 n,
                            ElkTensorOrigin a_origin,
                            ElkTensorOrigin b_origin);
ElkChipSpec *plan_test_spec_one_ipu (void);

G_END_DECLS
