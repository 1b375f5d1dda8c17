/* plan-llama.h: the Llama2-70B decode operators, built by hand for the
 * plan-space benchmark and tests (the Llama frontend is separate). */
#pragma once

#include <elk/elk-graph.h>

G_BEGIN_DECLS

ElkGraph *plan_test_llama2_70b_decode (guint batch, guint seq, guint layers);

G_END_DECLS
