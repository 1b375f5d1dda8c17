/* elk-compile-private.h: what the files of core/compile share (not
 * installed).  The engine's fields are private so that the unstable API
 * can keep them while its accessors stay put. */
#pragma once

#define ELK_USE_UNSTABLE_API
#include <elk/elk.h>

G_BEGIN_DECLS

struct _ElkEngine
{
  const ElkPlanSet *plans;
  ElkGraph *graph;
  const ElkChipSpec *spec;
  ElkAllocator *allocator;
  guint n_ops;
  const ElkPlanTable **tables;
  guint max_preload;
  guint64 usable;
  ElkNocDemand noc_demand;   /* from the plan set's options */
};

G_END_DECLS
