/* elk-plugin.c: one loaded plugin file and the features it adds.
 *
 * An ElkPlugin is created by the registry for every file it accepts,
 * before the plugin's register function runs, and handed to that function.
 * Features added through it are checked here (the implementation type
 * must implement the interface, be instantiatable and fill every required
 * vfunc) and recorded in the registry, so that elk-inspect and error
 * messages can always say which file a feature came from.
 */
#include "config.h"

#include "elk-private.h"

struct _ElkPlugin
{
  GObject parent_instance;

  ElkRegistry *registry;   /* weak: set only while registering */
  char *filename;
  char *name;
  char *description;
  char *version;
  char *sha256;            /* of the file's bytes, read before loading */
  guint abi_version;
  guint n_features;
  GPtrArray *claims;       /* "kind/name" of every feature it tried to add */
};

/**
 * elk_plugin_get_type:
 *
 * Gets the type of loaded plugins.
 *
 * Returns: the #GType of #ElkPlugin.
 */
G_DEFINE_FINAL_TYPE (ElkPlugin, elk_plugin, G_TYPE_OBJECT)

static void
elk_plugin_finalize (GObject *object)
{
  ElkPlugin *self = ELK_PLUGIN (object);

  g_free (self->filename);
  g_free (self->name);
  g_free (self->description);
  g_free (self->version);
  g_free (self->sha256);
  g_ptr_array_unref (self->claims);
  G_OBJECT_CLASS (elk_plugin_parent_class)->finalize (object);
}

static void
elk_plugin_class_init (ElkPluginClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = elk_plugin_finalize;
}

static void
elk_plugin_init (ElkPlugin *self)
{
  self->claims = g_ptr_array_new_with_free_func (g_free);
}

ElkPlugin *
elk__plugin_new (ElkRegistry *registry,
                 const char *filename,
                 const char *sha256,
                 const ElkPluginDesc *desc)
{
  ElkPlugin *self = g_object_new (ELK_TYPE_PLUGIN, NULL);

  self->registry = registry;
  self->filename = g_strdup (filename);
  self->sha256 = g_strdup (sha256);
  self->name = g_strdup (desc->name);
  self->description = g_strdup (desc->description);
  self->version = g_strdup (desc->version);
  self->abi_version = desc->abi_version;
  return self;
}

/* After registration the plugin no longer adds features. */
void
elk__plugin_detach (ElkPlugin *plugin)
{
  plugin->registry = NULL;
}

guint
elk__plugin_get_n_features (ElkPlugin *plugin)
{
  return plugin->n_features;
}

/* The "kind/name" keys of every feature the register function tried to
 * add, accepted or not.  When the file then fails to load, the registry
 * keeps them, so that a name the file meant to provide is not silently
 * served by another file (elk_registry_find()). */
GPtrArray *
elk__plugin_get_claims (ElkPlugin *plugin)
{
  return plugin->claims;
}

/* The plugin as one line of tab-separated fields, "name version abi file
 * sha256", which the points journal carries and elk-results-writer.c writes into
 * results.json (elk__results_writer_open()). */
char *
elk__plugin_dup_record (ElkPlugin *plugin)
{
  return g_strdup_printf ("%s\t%s\t%u\t%s\t%s", plugin->name,
                          plugin->version, plugin->abi_version,
                          plugin->filename, plugin->sha256);
}

/* Required vfuncs per interface: registration refuses a type that leaves
 * one of them NULL, so the public wrappers can call them unchecked. */
static const char *
missing_vfunc (GType kind, gpointer iface)
{
  if (kind == ELK_TYPE_FRONTEND)
    return ((ElkFrontendInterface *) iface)->load == NULL ? "load" : NULL;
  if (kind == ELK_TYPE_SCHEDULER)
    return ((ElkSchedulerInterface *) iface)->schedule == NULL ? "schedule"
                                                               : NULL;
  if (kind == ELK_TYPE_ALLOCATOR)
    return ((ElkAllocatorInterface *) iface)->allocate == NULL ? "allocate"
                                                               : NULL;
  if (kind == ELK_TYPE_CHIP)
    {
      ElkChipInterface *chip = iface;
      if (chip->dup_spec == NULL)
        return "dup_spec";
      return chip->run == NULL ? "run" : NULL;
    }
  return NULL;
}

static gboolean
is_feature_name (const char *name)
{
  /* Lowercase dash-case, optionally with one "vendor:" prefix. */
  gboolean seen_colon = FALSE;

  if (name == NULL || !g_ascii_islower (name[0]))
    return FALSE;
  for (const char *p = name; *p != '\0'; p++)
    {
      if (*p == ':' && !seen_colon && p[1] != '\0')
        {
          seen_colon = TRUE;
          continue;
        }
      if (!g_ascii_islower (*p) && !g_ascii_isdigit (*p) && *p != '-')
        return FALSE;
    }
  return TRUE;
}

/**
 * elk_plugin_add_feature:
 * @plugin: the plugin being registered
 * @kind: the interface: %ELK_TYPE_FRONTEND, %ELK_TYPE_SCHEDULER,
 *   %ELK_TYPE_ALLOCATOR or %ELK_TYPE_CHIP
 * @name: the feature name, lowercase dash-case, unique within @kind
 * @type: a final, instantiatable type implementing @kind
 * @error: return location for a #GError
 *
 * Adds a feature.  Call it only from the plugin's register function.
 *
 * Returns: %TRUE on success; %FALSE with @error set (in the
 *   %ELK_REGISTRY_ERROR domain) if the type or name is unacceptable.
 */
gboolean
elk_plugin_add_feature (ElkPlugin *plugin,
                        GType kind,
                        const char *name,
                        GType type,
                        GError **error)
{
  g_return_val_if_fail (ELK_IS_PLUGIN (plugin), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (plugin->registry == NULL)
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_CONTRACT,
                   "%s: features can only be added while the plugin "
                   "registers", plugin->filename);
      return FALSE;
    }
  /* The claim is recorded before the checks: the registry reports the
   * names a file claimed even when its registration then failed
   * (elk_registry_get_failed_providers()). */
  if (name != NULL
      && (kind == ELK_TYPE_FRONTEND || kind == ELK_TYPE_SCHEDULER
          || kind == ELK_TYPE_ALLOCATOR || kind == ELK_TYPE_CHIP))
    g_ptr_array_add (plugin->claims,
                     g_strdup_printf ("%s/%s", elk_kind_to_string (kind),
                                      name));
  if (!elk__feature_check (plugin->filename, kind, name, type, error))
    return FALSE;
  if (!elk__registry_add_feature (plugin->registry, plugin, kind, name, type,
                                  error))
    return FALSE;
  plugin->n_features++;
  return TRUE;
}

/* The checks elk_plugin_add_feature() makes, for a feature that comes
 * from @origin (a file name, or "run time" for elk_registry_add_feature()):
 * a known kind, a dash-case name, and an instantiatable GObject type that
 * implements the kind with every required vfunc. */
gboolean
elk__feature_check (const char *origin,
                    GType kind,
                    const char *name,
                    GType type,
                    GError **error)
{
  const char *missing;
  GTypeClass *klass;
  gpointer iface;

  if (kind != ELK_TYPE_FRONTEND && kind != ELK_TYPE_SCHEDULER
      && kind != ELK_TYPE_ALLOCATOR && kind != ELK_TYPE_CHIP)
    {
      g_set_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_WRONG_TYPE,
                   "%s: feature '%s' has kind %s, which is not one of "
                   "ElkFrontend, ElkScheduler, ElkAllocator, ElkChip",
                   origin, name ? name : "(null)",
                   g_type_name (kind) ? g_type_name (kind) : "(invalid)");
      return FALSE;
    }
  if (!is_feature_name (name))
    {
      g_set_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_BAD_NAME,
                   "%s: feature name '%s' is not lowercase dash-case "
                   "(like 'cost-aware' or 'vendor:greedy')",
                   origin, name ? name : "(null)");
      return FALSE;
    }
  if (!g_type_is_a (type, kind) || !G_TYPE_IS_INSTANTIATABLE (type)
      || G_TYPE_IS_ABSTRACT (type) || !g_type_is_a (type, G_TYPE_OBJECT))
    {
      g_set_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_WRONG_TYPE,
                   "%s: feature '%s' type %s must be an instantiatable, "
                   "non-abstract GObject implementing %s",
                   origin, name,
                   g_type_name (type) ? g_type_name (type) : "(invalid)",
                   g_type_name (kind));
      return FALSE;
    }
  /* The class reference is kept: the registry may create instances for
   * as long as the process runs. */
  klass = g_type_class_ref (type);
  iface = g_type_interface_peek (klass, kind);
  missing = iface != NULL ? missing_vfunc (kind, iface) : "all";
  if (missing != NULL)
    {
      g_set_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_WRONG_TYPE,
                   "%s: feature '%s' type %s leaves the required %s "
                   "vfunc %s() empty",
                   origin, name, g_type_name (type), g_type_name (kind),
                   missing);
      return FALSE;
    }
  return TRUE;
}

/**
 * elk_plugin_get_name:
 * @plugin: a loaded plugin
 *
 * Gets the plugin's name.
 *
 * Returns: (transfer none): the plugin's name, from its descriptor (equal to
 *   the <name> of its libelk-<name>.so file).
 */
const char *
elk_plugin_get_name (ElkPlugin *plugin)
{
  return plugin->name;
}

/**
 * elk_plugin_get_filename:
 * @plugin: a loaded plugin
 *
 * Gets the file the plugin was loaded from.
 *
 * Returns: (transfer none) (type filename): the plugin file as an absolute
 *   path (made absolute against the working folder, "." and ".." removed;
 *   symbolic links are not resolved).
 */
const char *
elk_plugin_get_filename (ElkPlugin *plugin)
{
  return plugin->filename;
}

/**
 * elk_plugin_get_sha256:
 * @plugin: a loaded plugin
 *
 * Gets the checksum that identifies the plugin file.
 *
 * Returns: (transfer none): the SHA-256 of the plugin file's bytes, in
 *   lowercase hex, as read just before the file was loaded.  results.json
 *   records it for every plugin a run used.
 */
const char *
elk_plugin_get_sha256 (ElkPlugin *plugin)
{
  return plugin->sha256;
}

/**
 * elk_plugin_get_description:
 * @plugin: a loaded plugin
 *
 * Gets the plugin's description.
 *
 * Returns: (transfer none): the plugin's one-line description.
 */
const char *
elk_plugin_get_description (ElkPlugin *plugin)
{
  return plugin->description;
}

/**
 * elk_plugin_get_version:
 * @plugin: a loaded plugin
 *
 * Gets the plugin's own version.
 *
 * Returns: (transfer none): the plugin's own version, from its descriptor.
 */
const char *
elk_plugin_get_version (ElkPlugin *plugin)
{
  return plugin->version;
}

/**
 * elk_plugin_get_abi_version:
 * @plugin: a loaded plugin
 *
 * Gets the plugin ABI the plugin was built for.
 *
 * Returns: the %ELK_PLUGIN_ABI_VERSION the plugin was built with (always the
 *   library's, since the loader refuses any other).
 */
guint
elk_plugin_get_abi_version (ElkPlugin *plugin)
{
  return plugin->abi_version;
}
