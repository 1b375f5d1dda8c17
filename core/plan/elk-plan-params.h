/* elk-plan-params.h: the <plans> element of experiment files as an
 * object with properties, so that its <param>s and sweep axes are parsed
 * and checked exactly like a plugin's (core/elk-param.c).  Not installed.
 */
#pragma once

#include <glib-object.h>
#include <elk/elk-plan.h>
#include <elk/elk-cost-model.h>
#include <elk/elk-fuse.h>

G_BEGIN_DECLS

#define ELK_TYPE_PLAN_PARAMS (elk__plan_params_get_type ())
G_DECLARE_FINAL_TYPE (ElkPlanParams, elk__plan_params, ELK, PLAN_PARAMS,
                      GObject)

void elk__plan_params_get_options (ElkPlanParams *self,
                                   ElkPlanOptions *options);
ElkCostModelChoice elk__plan_params_get_cost_model (ElkPlanParams *self);
ElkFuseFlags elk__plan_params_get_fuse (ElkPlanParams *self);
ElkLayoutChoice elk__plan_params_get_layout (ElkPlanParams *self);

G_END_DECLS
