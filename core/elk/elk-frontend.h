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

/**
 * ELK_FRONTEND_EXTENSION_POINT:
 *
 * The kind name of #ElkFrontend features, as experiment files and tools write
 * it ("frontend").
 */
#define ELK_FRONTEND_EXTENSION_POINT "frontend"

/**
 * ElkFrontend:
 *
 * The frontend interface: turns a model description into an #ElkGraph.
 * Everything it needs comes from its GObject properties, which an
 * experiment sets from <param> elements.
 */
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

/**
 * ElkFrontendInterface::load:
 * @self: a frontend
 * @error: return location for a #GError
 *
 * Builds the graph from the frontend's properties.
 *
 * Returns: (transfer full) (nullable): a new graph, or %NULL with @error
 *   set.
 */

ELK_API ElkGraph *elk_frontend_load (ElkFrontend *self, GError **error);

G_END_DECLS
