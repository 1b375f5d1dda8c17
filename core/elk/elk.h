/* elk.h: the one header users and plugin authors include. */
#pragma once

#include <elk/elk-visibility.h>
#include <elk/elk-version.h>
#include <elk/elk-error.h>
#include <elk/elk-graph.h>
#include <elk/elk-fuse.h>
#include <elk/elk-chip-spec.h>
#include <elk/elk-chip-props.h>
#include <elk/elk-plan.h>
#include <elk/elk-program.h>
#include <elk/elk-timeline.h>
#include <elk/elk-metrics.h>
#include <elk/elk-trace.h>
#include <elk/elk-frontend.h>
#include <elk/elk-scheduler.h>
#include <elk/elk-allocator.h>
#include <elk/elk-cost-model.h>
#include <elk/elk-chip.h>
#include <elk/elk-plugin.h>
#include <elk/elk-registry.h>
#include <elk/elk-experiment.h>

/* The compiler toolkit's engine is unstable API: elk-compile.h explains
 * why and #errors unless the user opts in. */
#ifdef ELK_USE_UNSTABLE_API
#include <elk/elk-compile.h>
#endif
