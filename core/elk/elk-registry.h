/* elk-registry.h: the set of loaded plugins and their features.
 *
 * A registry is an ordinary object: elk-run and elk-inspect create one and
 * scan the search path; tests create their own with their own path.  The
 * search path is ELK_PLUGIN_PATH (colon-separated) followed by
 * ELK_PLUGIN_SYSTEM_PATH, which defaults to the installed plugin directory;
 * setting it to the empty string disables installed plugins.
 *
 * Plugin identity: a plugin file is known by its absolute path and its
 * SHA-256.  Two files may provide the same feature name; such a name is
 * refused by elk_registry_find() (ELK_REGISTRY_ERROR_AMBIGUOUS, naming
 * both files) unless elk_registry_find_in_file() is told which file to
 * use, as the experiment's plugin="..." attribute does.
 */
#pragma once

#include <glib-object.h>
#include <elk/elk-plugin.h>

G_BEGIN_DECLS

/**
 * ElkRegistry:
 *
 * The set of loaded plugin files and the features they add, looked up by
 * kind and name.  An ordinary object: tools create one and scan the
 * search path; tests create their own with their own path.
 */
#define ELK_TYPE_REGISTRY (elk_registry_get_type ())
ELK_API
G_DECLARE_FINAL_TYPE (ElkRegistry, elk_registry, ELK, REGISTRY, GObject)

/**
 * ElkLoadFailure:
 * @filename: the file that was rejected.
 * @error: why.
 *
 * A plugin file the registry did not load, and why.  Owned by the
 * registry.
 */
typedef struct
{
  char *filename;
  GError *error;
} ElkLoadFailure;

ELK_API ElkRegistry *elk_registry_new (void);
ELK_API void elk_registry_add_path (ElkRegistry *self, const char *dir);
ELK_API void elk_registry_add_default_paths (ElkRegistry *self);
ELK_API void elk_registry_scan (ElkRegistry *self);
ELK_API gboolean elk_registry_load_file (ElkRegistry *self,
                                         const char *path,
                                         GError **error);
ELK_API gboolean elk_registry_add_feature (ElkRegistry *self,
                                           GType kind,
                                           const char *name,
                                           GType type,
                                           GError **error);
ELK_API const ElkFeature *elk_registry_lookup (ElkRegistry *self,
                                               GType kind,
                                               const char *name);
ELK_API const ElkFeature *elk_registry_find (ElkRegistry *self,
                                             GType kind,
                                             const char *name,
                                             GError **error);
ELK_API const ElkFeature *elk_registry_find_in_file (ElkRegistry *self,
                                                     GType kind,
                                                     const char *name,
                                                     const char *plugin_file,
                                                     GError **error);
ELK_API GPtrArray *elk_registry_list_providers (ElkRegistry *self,
                                                GType kind,
                                                const char *name);
ELK_API GStrv elk_registry_get_failed_providers (ElkRegistry *self,
                                                GType kind,
                                                const char *name);
ELK_API GPtrArray *elk_registry_list_features (ElkRegistry *self, GType kind);
ELK_API GPtrArray *elk_registry_get_plugins (ElkRegistry *self);
ELK_API const GPtrArray *elk_registry_get_failures (ElkRegistry *self);
ELK_API const GPtrArray *elk_registry_get_ignored (ElkRegistry *self);
ELK_API const char *elk_kind_to_string (GType kind);
ELK_API GType elk_kind_from_string (const char *kind);

G_END_DECLS
