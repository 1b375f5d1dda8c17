/* elk-compile-private.h: what the files of core/compile share (not
 * installed).  The engine's fields are private so that the unstable API
 * can keep them while its accessors stay put. */
#pragma once

#define ELK_USE_UNSTABLE_API
#include <elk/elk.h>

G_BEGIN_DECLS

typedef struct _ElkLayout ElkLayout;
typedef struct _ElkLayoutPrices ElkLayoutPrices;

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
  /* The re-layout prices of the plan set's re-layout model, or NULL
   * (elk-layout.c). */
  ElkLayout *layout;
};

guint32 elk__table_min_cold_entry (const ElkPlanTable *t);
ElkLayout *
elk__layout_new (const ElkEngine *engine, ElkCostModel *model, GError **error);
void elk__layout_free (ElkLayout *layout);
void elk__layout_refine (const ElkLayout *layout,
                         const ElkEngineOp *ops,
                         guint i,
                         ElkEngineCandidate *c);

G_END_DECLS
