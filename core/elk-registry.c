/* elk-registry.c: plugin search path, loading and feature lookup.
 *
 * The loader follows GStreamer and GIO: the entry symbol is derived from
 * the file name (libelk-noc-sim.so -> elk_plugin_noc_sim_get_desc), modules
 * are opened with local binding and made resident, and the descriptor's ABI
 * version and name are checked before any plugin code runs.  Every
 * rejected file is kept with the reason, so that elk-inspect can say why a
 * plugin did not load, and a requested feature that is missing is an error
 * naming what is available, never a substitute.
 */
#include "config.h"

#include <string.h>
#include <gmodule.h>

#include "elk-private.h"

#define PLUGIN_PREFIX "libelk-"
#define SCAN_DEPTH 4

struct _ElkRegistry
{
  GObject parent_instance;

  GPtrArray *paths;      /* char *, in search order */
  GPtrArray *plugins;    /* ElkPlugin *, in load order */
  GPtrArray *features;   /* ElkFeature *, in registration order */
  GPtrArray *failures;   /* ElkLoadFailure * */
  GHashTable *basenames; /* basenames already seen while scanning */
  GHashTable *loaded;    /* canonical paths already loaded */
};

G_DEFINE_FINAL_TYPE (ElkRegistry, elk_registry, G_TYPE_OBJECT)

static void
feature_free (ElkFeature *feature)
{
  g_free (feature->name);
  g_free (feature);
}

static void
failure_free (ElkLoadFailure *failure)
{
  g_free (failure->filename);
  g_clear_error (&failure->error);
  g_free (failure);
}

static void
elk_registry_finalize (GObject *object)
{
  ElkRegistry *self = ELK_REGISTRY (object);

  g_ptr_array_unref (self->paths);
  g_ptr_array_unref (self->features);
  g_ptr_array_unref (self->plugins);
  g_ptr_array_unref (self->failures);
  g_hash_table_unref (self->basenames);
  g_hash_table_unref (self->loaded);
  G_OBJECT_CLASS (elk_registry_parent_class)->finalize (object);
}

static void
elk_registry_class_init (ElkRegistryClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = elk_registry_finalize;
}

static void
elk_registry_init (ElkRegistry *self)
{
  self->paths = g_ptr_array_new_with_free_func (g_free);
  self->plugins = g_ptr_array_new_with_free_func (g_object_unref);
  self->features = g_ptr_array_new_with_free_func ((GDestroyNotify)
                                                   feature_free);
  self->failures = g_ptr_array_new_with_free_func ((GDestroyNotify)
                                                   failure_free);
  self->basenames = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                           NULL);
  self->loaded = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                        NULL);
}

/**
 * elk_registry_new:
 *
 * Returns: (transfer full): an empty registry with no search path.
 */
ElkRegistry *
elk_registry_new (void)
{
  return g_object_new (ELK_TYPE_REGISTRY, NULL);
}

/**
 * elk_registry_add_path:
 * @dir: (type filename): a folder scanned recursively (a few levels) by
 *   elk_registry_scan()
 */
void
elk_registry_add_path (ElkRegistry *self, const char *dir)
{
  g_return_if_fail (ELK_IS_REGISTRY (self));
  if (dir != NULL && *dir != '\0')
    g_ptr_array_add (self->paths, g_strdup (dir));
}

/**
 * elk_registry_add_default_paths:
 *
 * Adds the folders of ELK_PLUGIN_PATH (colon-separated), then those of
 * ELK_PLUGIN_SYSTEM_PATH, or the installed plugin folder when that
 * variable is unset.  An empty ELK_PLUGIN_SYSTEM_PATH disables installed
 * plugins, which tests and `meson devenv` rely on.
 */
void
elk_registry_add_default_paths (ElkRegistry *self)
{
  const char *user = g_getenv ("ELK_PLUGIN_PATH");
  const char *system = g_getenv ("ELK_PLUGIN_SYSTEM_PATH");
  g_auto (GStrv) user_dirs = NULL;
  g_auto (GStrv) system_dirs = NULL;

  if (user != NULL)
    {
      user_dirs = g_strsplit (user, G_SEARCHPATH_SEPARATOR_S, -1);
      for (guint i = 0; user_dirs[i] != NULL; i++)
        elk_registry_add_path (self, user_dirs[i]);
    }
  if (system == NULL)
    system = ELK_PLUGINDIR;
  system_dirs = g_strsplit (system, G_SEARCHPATH_SEPARATOR_S, -1);
  for (guint i = 0; system_dirs[i] != NULL; i++)
    elk_registry_add_path (self, system_dirs[i]);
}

static void
record_failure (ElkRegistry *self, const char *path, const GError *error)
{
  ElkLoadFailure *failure = g_new0 (ElkLoadFailure, 1);
  failure->filename = g_strdup (path);
  failure->error = g_error_copy (error);
  g_ptr_array_add (self->failures, failure);
}

static gboolean
is_plugin_filename (const char *basename)
{
  /* libelk-<name>.so where <name> starts with a letter; this leaves out
   * libelk-1.so, the core library itself. */
  return g_str_has_prefix (basename, PLUGIN_PREFIX)
         && g_ascii_isalpha (basename[strlen (PLUGIN_PREFIX)])
         && g_str_has_suffix (basename, "." G_MODULE_SUFFIX);
}

gint
elk__compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

static void
scan_dir (ElkRegistry *self, const char *dir, guint depth)
{
  g_autoptr (GDir) handle = g_dir_open (dir, 0, NULL);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const char *name;

  if (handle == NULL)
    return;
  while ((name = g_dir_read_name (handle)) != NULL)
    g_ptr_array_add (names, g_strdup (name));
  /* Sorted, so that which duplicate wins does not depend on the file
   * system's order. */
  g_ptr_array_sort (names, elk__compare_strings);

  for (guint i = 0; i < names->len; i++)
    {
      const char *base = names->pdata[i];
      g_autofree char *path = g_build_filename (dir, base, NULL);

      if (g_file_test (path, G_FILE_TEST_IS_DIR))
        {
          if (depth < SCAN_DEPTH && base[0] != '.')
            scan_dir (self, path, depth + 1);
          continue;
        }
      if (!is_plugin_filename (base))
        continue;
      if (g_hash_table_contains (self->basenames, base))
        {
          g_info ("%s: skipped, a plugin of the same name was found first",
                  path);
          continue;
        }
      g_hash_table_add (self->basenames, g_strdup (base));
      {
        g_autoptr (GError) error = NULL;
        if (!elk_registry_load_file (self, path, &error))
          record_failure (self, path, error);
      }
    }
}

/**
 * elk_registry_scan:
 *
 * Loads every plugin file on the search path.  Files that fail are kept
 * with their reason (elk_registry_get_failures()); they never stop the
 * scan.
 */
void
elk_registry_scan (ElkRegistry *self)
{
  g_return_if_fail (ELK_IS_REGISTRY (self));
  for (guint i = 0; i < self->paths->len; i++)
    scan_dir (self, self->paths->pdata[i], 0);
}

/* libelk-noc-sim.so -> "noc_sim" */
static char *
derive_name (const char *path)
{
  g_autofree char *base = g_path_get_basename (path);
  const char *start = base;
  char *dot;

  if (g_str_has_prefix (start, PLUGIN_PREFIX))
    start += strlen (PLUGIN_PREFIX);
  else if (g_str_has_prefix (start, "lib"))
    start += 3;
  dot = strchr (start, '.');
  if (dot != NULL)
    *dot = '\0';
  return g_strdelimit (g_strdup (start), "-", '_');
}

/**
 * elk_registry_load_file:
 * @path: (type filename): a plugin file
 * @error: return location for a #GError
 *
 * Loads one plugin file and registers its features.
 *
 * Returns: %TRUE on success (also when the file was already loaded).
 */
gboolean
elk_registry_load_file (ElkRegistry *self, const char *path, GError **error)
{
  g_autofree char *name = NULL;
  g_autofree char *symbol = NULL;
  g_autofree char *canonical = NULL;
  g_autoptr (GError) local_error = NULL;
  const ElkPluginDesc *(*get_desc) (void) = NULL;
  const ElkPluginDesc *desc;
  GModule *module;
  ElkPlugin *plugin;

  g_return_val_if_fail (ELK_IS_REGISTRY (self), FALSE);
  g_return_val_if_fail (path != NULL, FALSE);

  canonical = g_canonicalize_filename (path, NULL);
  if (g_hash_table_contains (self->loaded, canonical))
    return TRUE;

  name = derive_name (path);
  symbol = g_strdup_printf ("elk_plugin_%s_get_desc", name);

  module = g_module_open_full (path, G_MODULE_BIND_LOCAL, &local_error);
  if (module == NULL)
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_NOT_A_PLUGIN,
                   "%s: cannot open as a module: %s", path,
                   local_error->message);
      return FALSE;
    }
  if (!g_module_symbol (module, symbol, (gpointer *) &get_desc)
      || get_desc == NULL)
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_NOT_A_PLUGIN,
                   "%s: no entry point %s() in the module (is it built with "
                   "ELK_PLUGIN_DEFINE (%s, ...)?)", path, symbol, name);
      g_module_close (module);
      return FALSE;
    }

  desc = get_desc ();
  if (desc == NULL)
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_BAD_DESCRIPTOR,
                   "%s: %s() returned NULL", path, symbol);
      g_module_close (module);
      return FALSE;
    }
  if (desc->abi_version != ELK_PLUGIN_ABI_VERSION)
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_ABI_MISMATCH,
                   "%s: built for plugin ABI %u, but this elk has ABI %u; "
                   "rebuild the plugin against elk %s", path,
                   desc->abi_version, ELK_PLUGIN_ABI_VERSION, ELK_VERSION);
      g_module_close (module);
      return FALSE;
    }
  if (desc->name == NULL || desc->description == NULL
      || desc->version == NULL || desc->register_features == NULL)
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_BAD_DESCRIPTOR,
                   "%s: the descriptor lacks its %s", path,
                   desc->name == NULL          ? "name"
                   : desc->description == NULL ? "description"
                   : desc->version == NULL     ? "version"
                                               : "register function");
      g_module_close (module);
      return FALSE;
    }
  if (strcmp (desc->name, name) != 0)
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_NAME_MISMATCH,
                   "%s: the descriptor is named '%s' but the file name "
                   "says '%s'", path, desc->name, name);
      g_module_close (module);
      return FALSE;
    }

  /* Types registered by the plugin outlive any unload, so the module must
   * stay: resident before any of its code that registers types runs. */
  g_module_make_resident (module);

  plugin = elk__plugin_new (self, path, desc);
  if (!desc->register_features (plugin, &local_error))
    {
      elk__registry_remove_plugin_features (self, plugin);
      elk__plugin_detach (plugin);
      if (local_error == NULL)
        g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_INIT_FAILED,
                     "%s: the register function failed without saying why",
                     path);
      else if (local_error->domain == ELK_REGISTRY_ERROR)
        g_propagate_error (error, g_steal_pointer (&local_error));
      else
        g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_INIT_FAILED,
                     "%s: the register function failed: %s", path,
                     local_error->message);
      g_object_unref (plugin);
      return FALSE;
    }
  elk__plugin_detach (plugin);
  if (elk__plugin_get_n_features (plugin) == 0)
    {
      g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_NO_FEATURES,
                   "%s: the register function succeeded but added no "
                   "feature", path);
      g_object_unref (plugin);
      return FALSE;
    }

  g_ptr_array_add (self->plugins, plugin);
  g_hash_table_add (self->loaded, g_steal_pointer (&canonical));
  return TRUE;
}

gboolean
elk__registry_add_feature (ElkRegistry *self,
                           ElkPlugin *plugin,
                           GType kind,
                           const char *name,
                           GType type,
                           GError **error)
{
  const ElkFeature *existing = elk_registry_lookup (self, kind, name);
  ElkFeature *feature;

  if (existing != NULL)
    {
      g_set_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_DUPLICATE,
                   "%s: %s '%s' is already provided by %s",
                   elk_plugin_get_filename (plugin), elk_kind_to_string (kind),
                   name,
                   existing->plugin != NULL
                     ? elk_plugin_get_filename (existing->plugin)
                     : "libelk");
      return FALSE;
    }
  feature = g_new0 (ElkFeature, 1);
  feature->kind = kind;
  feature->name = g_strdup (name);
  feature->type = type;
  feature->plugin = plugin;
  g_ptr_array_add (self->features, feature);
  return TRUE;
}

void
elk__registry_remove_plugin_features (ElkRegistry *self, ElkPlugin *plugin)
{
  for (guint i = self->features->len; i > 0; i--)
    {
      ElkFeature *feature = self->features->pdata[i - 1];
      if (feature->plugin == plugin)
        g_ptr_array_remove_index (self->features, i - 1);
    }
}

/**
 * elk_registry_lookup:
 *
 * Returns: (transfer none) (nullable): the feature of @kind called @name.
 */
const ElkFeature *
elk_registry_lookup (ElkRegistry *self, GType kind, const char *name)
{
  g_return_val_if_fail (ELK_IS_REGISTRY (self), NULL);
  for (guint i = 0; i < self->features->len; i++)
    {
      const ElkFeature *feature = self->features->pdata[i];
      if (feature->kind == kind && g_strcmp0 (feature->name, name) == 0)
        return feature;
    }
  return NULL;
}

/**
 * elk_registry_find:
 *
 * Like elk_registry_lookup(), but a missing feature is an error that lists
 * the features of that kind and notes the files that failed to load.
 *
 * Returns: (transfer none) (nullable): the feature, or %NULL with @error.
 */
const ElkFeature *
elk_registry_find (ElkRegistry *self,
                   GType kind,
                   const char *name,
                   GError **error)
{
  const ElkFeature *feature = elk_registry_lookup (self, kind, name);
  g_autoptr (GString) names = NULL;

  if (feature != NULL)
    return feature;
  names = g_string_new (NULL);
  for (guint i = 0; i < self->features->len; i++)
    {
      const ElkFeature *f = self->features->pdata[i];
      if (f->kind != kind)
        continue;
      if (names->len > 0)
        g_string_append (names, ", ");
      g_string_append (names, f->name);
    }
  g_set_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_NOT_FOUND,
               "no %s named '%s' (available: %s)%s",
               elk_kind_to_string (kind), name,
               names->len > 0 ? names->str : "none",
               self->failures->len > 0
                 ? "; some plugin files failed to load, see elk-inspect"
                 : "");
  return NULL;
}

/**
 * elk_registry_list_features:
 * @kind: an interface type, or %G_TYPE_INVALID for all kinds
 *
 * Returns: (transfer container) (element-type ElkFeature): the features of
 *   @kind sorted by name.
 */
GPtrArray *
elk_registry_list_features (ElkRegistry *self, GType kind)
{
  GPtrArray *list = g_ptr_array_new ();
  for (guint i = 0; i < self->features->len; i++)
    {
      ElkFeature *feature = self->features->pdata[i];
      if (kind == G_TYPE_INVALID || feature->kind == kind)
        g_ptr_array_add (list, feature);
    }
  return list;
}

/**
 * elk_registry_get_plugins:
 * Returns: (transfer container) (element-type ElkPlugin): loaded plugins.
 */
GPtrArray *
elk_registry_get_plugins (ElkRegistry *self)
{
  return g_ptr_array_ref (self->plugins);
}

/**
 * elk_registry_get_failures:
 * Returns: (transfer none) (element-type ElkLoadFailure): rejected files.
 */
const GPtrArray *
elk_registry_get_failures (ElkRegistry *self)
{
  return self->failures;
}

const char *
elk_kind_to_string (GType kind)
{
  if (kind == ELK_TYPE_FRONTEND)
    return "frontend";
  if (kind == ELK_TYPE_SCHEDULER)
    return "scheduler";
  if (kind == ELK_TYPE_ALLOCATOR)
    return "allocator";
  if (kind == ELK_TYPE_CHIP)
    return "chip";
  return "unknown";
}

GType
elk_kind_from_string (const char *kind)
{
  if (g_strcmp0 (kind, "frontend") == 0)
    return ELK_TYPE_FRONTEND;
  if (g_strcmp0 (kind, "scheduler") == 0)
    return ELK_TYPE_SCHEDULER;
  if (g_strcmp0 (kind, "allocator") == 0)
    return ELK_TYPE_ALLOCATOR;
  if (g_strcmp0 (kind, "chip") == 0)
    return ELK_TYPE_CHIP;
  return G_TYPE_INVALID;
}
