/* elk-frontend.h: the ElkFrontend extension point (model loaders).
 *
 * A frontend turns a model description into an ElkGraph.  Everything it
 * needs (model file, preset, batch, sequence length, phase) comes from its
 * GObject properties, which the experiment sets from <param> elements.
 */
#pragma once

#include <glib-object.h>
#include <elk/elk-graph.h>

G_BEGIN_DECLS

#define ELK_FRONTEND_EXTENSION_POINT "frontend"

#define ELK_TYPE_FRONTEND (elk_frontend_get_type ())
ELK_API
G_DECLARE_INTERFACE (ElkFrontend, elk_frontend, ELK, FRONTEND, GObject)

/**
 * ElkFrontendInterface:
 * @load: required; builds the graph from the frontend's properties.
 *
 * Since: 0.1
 */
struct _ElkFrontendInterface
{
  /*< private >*/
  GTypeInterface parent_iface;

  /*< public >*/
  ElkGraph *(*load) (ElkFrontend *self, GError **error);
  /* Append new vfuncs here only; give them defaults in default_init. */
};

ELK_API ElkGraph *elk_frontend_load (ElkFrontend *self, GError **error);

G_END_DECLS
