/* elk-registry.c: plugin search path, loading and feature lookup.
 *
 * The loader follows GStreamer and GIO: the entry symbol is derived from
 * the file name (libelk-noc-sim.so -> elk_plugin_noc_sim_get_desc), modules
 * are opened with local binding and made resident, and the descriptor's ABI
 * version and name are checked before any plugin code runs.  Every
 * rejected file is kept with the reason, so that elk-inspect can say why a
 * plugin did not load, and a requested feature that is missing is an error
 * naming what is available, never a substitute.
 *
 * Plugin identity.  A plugin file is known by its absolute path and the
 * SHA-256 of its bytes (recorded in results.json).  Every file on the
 * search path is loaded, whatever its name, except files with the same
 * bytes as one loaded before, which are listed as ignored, and files not
 * named libelk-<name>.so, which are listed as ignored with that reason.
 * Two files may provide the same kind and name: nothing is decided at
 * load time, and elk_registry_find() refuses such a name, naming every
 * file, unless the caller (the experiment's plugin="..." attribute) says
 * which file to use.  A file that failed to load after trying to add a
 * name counts as a provider here too, so that a broken replacement never
 * silently falls back to the shipped feature.  A file whose types clash
 * with types already registered (GType names are process-wide) is
 * refused with ELK_PLUGIN_ERROR_TYPE_CLASH naming the type and both
 * files; GLib's own warnings about it are captured, not printed.
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
  GPtrArray *ignored;    /* ElkLoadFailure *, files skipped on purpose */
  GPtrArray *claims;     /* Claim *, names wanted by files that failed */
  GHashTable *loaded;    /* canonical paths already loaded */
  GHashTable *hashes;    /* SHA-256 -> canonical path of loaded files */
};

/* A feature name that a plugin file tried to add before it failed to
 * load. */
typedef struct
{
  char *key;       /* "kind/name" */
  char *filename;
  char *reason;
} Claim;

/**
 * elk_registry_get_type:
 *
 * Gets the type of plugin registries.
 *
 * Returns: the #GType of #ElkRegistry.
 */
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
claim_free (Claim *claim)
{
  g_free (claim->key);
  g_free (claim->filename);
  g_free (claim->reason);
  g_free (claim);
}

static void
elk_registry_finalize (GObject *object)
{
  ElkRegistry *self = ELK_REGISTRY (object);

  g_ptr_array_unref (self->paths);
  g_ptr_array_unref (self->features);
  g_ptr_array_unref (self->plugins);
  g_ptr_array_unref (self->failures);
  g_ptr_array_unref (self->ignored);
  g_ptr_array_unref (self->claims);
  g_hash_table_unref (self->loaded);
  g_hash_table_unref (self->hashes);
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
  self->ignored = g_ptr_array_new_with_free_func ((GDestroyNotify)
                                                  failure_free);
  self->claims = g_ptr_array_new_with_free_func ((GDestroyNotify) claim_free);
  self->loaded = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                        NULL);
  self->hashes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                        g_free);
}

/**
 * elk_registry_new:
 *
 * Creates a registry.  Add folders with elk_registry_add_path() or
 * elk_registry_add_default_paths(), then load them with
 * elk_registry_scan().
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
 * @self: a registry
 * @dir: (type filename): a folder scanned recursively (a few levels) by
 *   elk_registry_scan()
 *
 * Appends @dir to the search path.
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
 * @self: a registry
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

static void
record_ignored (ElkRegistry *self, const char *path, const char *reason)
{
  ElkLoadFailure *ignored = g_new0 (ElkLoadFailure, 1);
  ignored->filename = g_canonicalize_filename (path, NULL);
  ignored->error = g_error_new (ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_IGNORED,
                                "%s: ignored: %s", ignored->filename, reason);
  g_ptr_array_add (self->ignored, ignored);
}

/* A shared module or shared library by its name: "x.so" or "x.so.1". */
static gboolean
looks_like_module (const char *basename)
{
  return g_str_has_suffix (basename, "." G_MODULE_SUFFIX)
         || strstr (basename, "." G_MODULE_SUFFIX ".") != NULL;
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
        {
          /* Other files (headers, archives, data) are no candidates; a
           * module under another name is, and is listed so that it does
           * not vanish without a word. */
          if (looks_like_module (base))
            record_ignored (self, path,
                            "not named libelk-<name>." G_MODULE_SUFFIX
                            " (with <name> starting with a letter); only "
                            "such files are loaded as plugins");
          continue;
        }
      {
        g_autoptr (GError) error = NULL;
        if (!elk_registry_load_file (self, path, &error))
          record_failure (self, path, error);
      }
    }
}

/**
 * elk_registry_scan:
 * @self: a registry
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

/* A file in the plugin path that is not a plugin because it cannot be
 * read or opened (@what), for the reason @cause gives. */
static void
set_cannot (GError **error,
            const char *path,
            const char *what,
            const GError *cause)
{
  g_set_error (error, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_NOT_A_PLUGIN,
               "%s: cannot %s: %s", path, what, cause->message);
}

/* The SHA-256 of a file's bytes, in lowercase hex. */
static char *
hash_file (const char *path, GError **error)
{
  g_autoptr (GMappedFile) mapped = NULL;
  g_autoptr (GError) local_error = NULL;
  GChecksum *sum;
  char *hex;

  mapped = g_mapped_file_new (path, FALSE, &local_error);
  if (mapped == NULL)
    {
      set_cannot (error, path, "read the file", local_error);
      return NULL;
    }
  sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_checksum_update (sum, (const guchar *) g_mapped_file_get_contents (mapped),
                     (gssize) g_mapped_file_get_length (mapped));
  hex = g_strdup (g_checksum_get_string (sum));
  g_checksum_free (sum);
  return hex;
}

/* GType names are process-wide, so their owners are too: type name
 * (interned by GLib) -> the plugin file whose register function
 * registered it.  Guarded by the registering lock, which also keeps two
 * registries from running register functions at the same time. */
G_LOCK_DEFINE_STATIC (registering);
static GHashTable *type_owners;

static void
collect_types (GType type, GHashTable *names)
{
  guint n = 0;
  g_autofree GType *children = g_type_children (type, &n);

  g_hash_table_add (names, (gpointer) g_type_name (type));
  for (guint i = 0; i < n; i++)
    collect_types (children[i], names);
}

/* Every registered type name: each fundamental type and its descendants
 * (interfaces are children of G_TYPE_INTERFACE, boxed types of
 * G_TYPE_BOXED, and so on). */
static GHashTable *
snapshot_types (void)
{
  GHashTable *names = g_hash_table_new (g_str_hash, g_str_equal);
  GType next = g_type_fundamental_next ();

  for (GType f = G_TYPE_MAKE_FUNDAMENTAL (1); f < next;
       f += G_TYPE_MAKE_FUNDAMENTAL (1))
    if (g_type_name (f) != NULL)
      collect_types (f, names);
  return names;
}

/* While a register function runs, GLib's warnings about a type name that
 * is already registered ("cannot register existing type 'X'") and the
 * criticals that follow from it (G_DEFINE_TYPE carries on with type 0)
 * are captured here and turned into ELK_PLUGIN_ERROR_TYPE_CLASH.  GLib
 * gives no way to learn a plugin's type names before its code registers
 * them, so catching the refusal is the only way to report it as a
 * GError.  Any other GLib message is held back and logged again, with
 * its usual fatality, once the register function has returned. */
typedef struct
{
  char *clash;          /* the first type name GLib refused */
  GPtrArray *deferred;  /* char *: "domain\x1flevel\x1fmessage" */
} ClashGuard;

#define CLASH_PREFIX "cannot register existing type '"
#define GUARD_LEVELS                                                          \
  (G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL | G_LOG_FLAG_FATAL              \
   | G_LOG_FLAG_RECURSION)

static void
guard_log_handler (const char *domain,
                   GLogLevelFlags level,
                   const char *message,
                   gpointer data)
{
  ClashGuard *guard = data;

  if (guard->clash == NULL && g_str_has_prefix (message, CLASH_PREFIX))
    {
      const char *start = message + strlen (CLASH_PREFIX);
      const char *end = strchr (start, '\'');
      guard->clash = end != NULL ? g_strndup (start, (gsize) (end - start))
                                 : g_strdup (start);
      return;
    }
  /* After a refused type, GLib's complaints are consequences of it
   * (G_IMPLEMENT_INTERFACE on type 0, g_once_init_leave with 0); the
   * clash error says what went wrong. */
  if (guard->clash != NULL)
    return;
  g_ptr_array_add (guard->deferred,
                   g_strdup_printf ("%s\x1f%d\x1f%s", domain ? domain : "",
                                    (int) (level & G_LOG_LEVEL_MASK),
                                    message));
}

/* Runs the plugin's register function under the guard and records the
 * types it registered as its own.  Returns the name of a refused type
 * (transfer full), or NULL. */
static char *
register_guarded (ElkPlugin *plugin,
                  const ElkPluginDesc *desc,
                  gboolean *ok,
                  GError **error)
{
  static const char *const domains[] = { "GLib-GObject", "GLib" };
  ClashGuard guard = { NULL, g_ptr_array_new_with_free_func (g_free) };
  GLogLevelFlags saved_always, saved_domain[G_N_ELEMENTS (domains)];
  guint handlers[G_N_ELEMENTS (domains)];
  g_autoptr (GHashTable) before = NULL;
  g_autoptr (GHashTable) after = NULL;
  GHashTableIter iter;
  gpointer name;

  G_LOCK (registering);
  if (type_owners == NULL)
    type_owners = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                         g_free);
  before = snapshot_types ();

  /* Fatal warnings (G_DEBUG=fatal-warnings, GTest) would abort inside
   * GLib before the error could be reported: they are made non-fatal for
   * the call, and the messages held back are logged again afterwards
   * under the restored masks. */
  saved_always = g_log_set_always_fatal (G_LOG_FATAL_MASK);
  for (guint d = 0; d < G_N_ELEMENTS (domains); d++)
    {
      saved_domain[d] = g_log_set_fatal_mask (domains[d], 0);
      handlers[d] = g_log_set_handler (domains[d], GUARD_LEVELS,
                                       guard_log_handler, &guard);
    }

  *ok = desc->register_features (plugin, error);

  for (guint d = 0; d < G_N_ELEMENTS (domains); d++)
    {
      g_log_remove_handler (domains[d], handlers[d]);
      g_log_set_fatal_mask (domains[d], saved_domain[d]);
    }
  g_log_set_always_fatal (saved_always);

  after = snapshot_types ();
  g_hash_table_iter_init (&iter, after);
  while (g_hash_table_iter_next (&iter, &name, NULL))
    if (!g_hash_table_contains (before, name))
      g_hash_table_replace (type_owners, name,
                            g_strdup (elk_plugin_get_filename (plugin)));
  G_UNLOCK (registering);

  for (guint i = 0; i < guard.deferred->len; i++)
    {
      g_auto (GStrv) parts = g_strsplit (guard.deferred->pdata[i], "\x1f", 3);
      g_log (*parts[0] ? parts[0] : NULL, (GLogLevelFlags) atoi (parts[1]),
             "%s", parts[2]);
    }
  g_ptr_array_unref (guard.deferred);
  return guard.clash;
}

static char *
dup_type_owner (const char *type_name)
{
  const char *owner;
  char *text;

  G_LOCK (registering);
  owner = type_owners != NULL ? g_hash_table_lookup (type_owners, type_name)
                              : NULL;
  text = owner != NULL ? g_strdup (owner) : NULL;
  G_UNLOCK (registering);
  return text;
}

/* Keeps the names a file tried to add before it failed, with why it
 * failed (see elk_registry_find()). */
static void
record_claims (ElkRegistry *self, ElkPlugin *plugin, const GError *error)
{
  GPtrArray *claims = elk__plugin_get_claims (plugin);

  for (guint i = 0; i < claims->len; i++)
    {
      Claim *claim = g_new0 (Claim, 1);
      claim->key = g_strdup (claims->pdata[i]);
      claim->filename = g_strdup (elk_plugin_get_filename (plugin));
      claim->reason = g_strdup (error->message);
      g_ptr_array_add (self->claims, claim);
    }
}

/**
 * elk_registry_load_file:
 * @self: a registry
 * @path: (type filename): a plugin file
 * @error: return location for a #GError
 *
 * Loads one plugin file and registers its features.  The file is known
 * by its absolute path from then on.  A file with the same bytes
 * (SHA-256) as a file already loaded is not loaded again; it is listed by
 * elk_registry_get_ignored().
 *
 * Returns: %TRUE on success (also when the file, or one with the same
 *   bytes, was already loaded); %FALSE with @error set in the
 *   %ELK_PLUGIN_ERROR or %ELK_REGISTRY_ERROR domain otherwise.
 */
gboolean
elk_registry_load_file (ElkRegistry *self, const char *path, GError **error)
{
  g_autofree char *name = NULL;
  g_autofree char *symbol = NULL;
  g_autofree char *canonical = NULL;
  g_autofree char *sha256 = NULL;
  g_autofree char *clash = NULL;
  g_autoptr (GError) local_error = NULL;
  const ElkPluginDesc *(*get_desc) (void) = NULL;
  const ElkPluginDesc *desc;
  const char *same;
  GModule *module;
  ElkPlugin *plugin;
  gboolean ok;

  g_return_val_if_fail (ELK_IS_REGISTRY (self), FALSE);
  g_return_val_if_fail (path != NULL, FALSE);

  canonical = g_canonicalize_filename (path, NULL);
  path = canonical;
  if (g_hash_table_contains (self->loaded, canonical))
    return TRUE;

  sha256 = hash_file (path, error);
  if (sha256 == NULL)
    return FALSE;
  same = g_hash_table_lookup (self->hashes, sha256);
  if (same != NULL)
    {
      g_autofree char *reason = g_strdup_printf ("the same bytes (SHA-256 "
                                                 "%.12s...) as %s, which is "
                                                 "loaded", sha256, same);
      record_ignored (self, path, reason);
      return TRUE;
    }

  name = derive_name (path);
  symbol = g_strdup_printf ("elk_plugin_%s_get_desc", name);
  module = g_module_open_full (path, G_MODULE_BIND_LOCAL, &local_error);
  if (module == NULL)
    {
      set_cannot (error, path, "open as a module", local_error);
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

  plugin = elk__plugin_new (self, path, sha256, desc);
  clash = register_guarded (plugin, desc, &ok, &local_error);
  elk__plugin_detach (plugin);
  if (clash != NULL)
    {
      g_autofree char *owner = dup_type_owner (clash);
      g_clear_error (&local_error);
      g_set_error (&local_error, ELK_PLUGIN_ERROR,
                   ELK_PLUGIN_ERROR_TYPE_CLASH,
                   "%s: cannot be loaded: it defines the GType '%s', which "
                   "%s has already registered; GType names are process-wide, "
                   "so two plugin files cannot both define it (rename the "
                   "type in one of them, or keep only one of the files on "
                   "the plugin path)", path, clash,
                   owner != NULL ? owner : "another library loaded into "
                                           "this process (not a plugin file "
                                           "elk loaded)");
      ok = FALSE;
    }
  else if (!ok)
    {
      GError *wrapped = NULL;
      if (local_error == NULL)
        g_set_error (&wrapped, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_INIT_FAILED,
                     "%s: the register function failed without saying why",
                     path);
      else if (local_error->domain != ELK_REGISTRY_ERROR)
        g_set_error (&wrapped, ELK_PLUGIN_ERROR, ELK_PLUGIN_ERROR_INIT_FAILED,
                     "%s: the register function failed: %s", path,
                     local_error->message);
      if (wrapped != NULL)
        {
          g_clear_error (&local_error);
          local_error = wrapped;
        }
    }
  else if (elk__plugin_get_n_features (plugin) == 0)
    {
      g_set_error (&local_error, ELK_PLUGIN_ERROR,
                   ELK_PLUGIN_ERROR_NO_FEATURES,
                   "%s: the register function succeeded but added no "
                   "feature", path);
      ok = FALSE;
    }
  if (!ok)
    {
      elk__registry_remove_plugin_features (self, plugin);
      record_claims (self, plugin, local_error);
      g_propagate_error (error, g_steal_pointer (&local_error));
      g_object_unref (plugin);
      return FALSE;
    }

  g_ptr_array_add (self->plugins, plugin);
  g_hash_table_insert (self->hashes, g_steal_pointer (&sha256),
                       g_strdup (path));
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
  ElkFeature *feature;

  /* Another file may provide the same name (elk_registry_find() sorts
   * that out when the name is used); one file may not add it twice. */
  for (guint i = 0; i < self->features->len; i++)
    {
      const ElkFeature *f = self->features->pdata[i];
      if (f->plugin == plugin && f->kind == kind
          && g_strcmp0 (f->name, name) == 0)
        {
          g_set_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_DUPLICATE,
                       "%s: %s '%s' is added twice",
                       plugin != NULL ? elk_plugin_get_filename (plugin)
                                      : "run time",
                       elk_kind_to_string (kind), name);
          return FALSE;
        }
    }
  feature = g_new0 (ElkFeature, 1);
  feature->kind = kind;
  feature->name = g_strdup (name);
  feature->type = type;
  feature->plugin = plugin;
  g_ptr_array_add (self->features, feature);
  return TRUE;
}

/**
 * elk_registry_add_feature:
 * @self: a registry
 * @kind: the interface: %ELK_TYPE_FRONTEND, %ELK_TYPE_SCHEDULER,
 *   %ELK_TYPE_ALLOCATOR or %ELK_TYPE_CHIP
 * @name: the feature name, lowercase dash-case, unique within @kind among
 *   the features added this way
 * @type: a non-abstract GObject type implementing @kind
 * @error: return location for a #GError
 *
 * Adds a feature defined by the running program rather than by a plugin
 * file: a scheduler written in Python, say, subclassing GObject.Object
 * and Elk.Scheduler.  Experiments loaded with @self afterwards may name
 * it like any other feature.  The checks are those of
 * elk_plugin_add_feature(); the feature has no #ElkPlugin, so results.json
 * lists no file for it.  A plugin file providing the same name makes the
 * name ambiguous, as two files would.
 *
 * Returns: %TRUE on success; %FALSE with @error set (in the
 *   %ELK_REGISTRY_ERROR domain) if the kind, name or type is unacceptable
 *   or the name was already added this way.
 */
gboolean
elk_registry_add_feature (
    ElkRegistry *self, GType kind, const char *name, GType type, GError **error)
{
  g_return_val_if_fail (ELK_IS_REGISTRY (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!elk__feature_check ("run time", kind, name, type, error))
    return FALSE;
  return elk__registry_add_feature (self, NULL, kind, name, type, error);
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

static const char *
feature_file (const ElkFeature *feature)
{
  return feature->plugin != NULL ? elk_plugin_get_filename (feature->plugin)
                                 : "run time";
}

/**
 * elk_registry_list_providers:
 * @self: a registry
 * @kind: an interface type
 * @name: a feature name
 *
 * Every loaded feature of @kind called @name, one per plugin file that
 * provides it, in load order.  More than one means the name is shadowed:
 * elk_registry_find() refuses it unless a file is chosen.
 *
 * Returns: (transfer container) (element-type ElkFeature): the providers;
 *   the features belong to @self, the array to the caller.
 */
GPtrArray *
elk_registry_list_providers (ElkRegistry *self, GType kind, const char *name)
{
  GPtrArray *list;

  g_return_val_if_fail (ELK_IS_REGISTRY (self), NULL);
  list = g_ptr_array_new ();
  for (guint i = 0; i < self->features->len; i++)
    {
      ElkFeature *feature = self->features->pdata[i];
      if (feature->kind == kind && g_strcmp0 (feature->name, name) == 0)
        g_ptr_array_add (list, feature);
    }
  return list;
}

/* The files that tried to add kind/name and failed to load. */
static GPtrArray *
list_claims (ElkRegistry *self, GType kind, const char *name)
{
  g_autofree char *key = g_strdup_printf ("%s/%s", elk_kind_to_string (kind),
                                          name);
  GPtrArray *list = g_ptr_array_new ();

  for (guint i = 0; i < self->claims->len; i++)
    {
      Claim *claim = self->claims->pdata[i];
      gboolean seen = FALSE;
      if (strcmp (claim->key, key) != 0)
        continue;
      for (guint j = 0; j < list->len; j++)
        seen |= strcmp (((Claim *) list->pdata[j])->filename,
                        claim->filename) == 0;
      if (!seen)
        g_ptr_array_add (list, claim);
    }
  return list;
}

/**
 * elk_registry_get_failed_providers:
 * @self: a registry
 * @kind: an interface type
 * @name: a feature name
 *
 * The plugin files that tried to add @kind @name but then failed to load,
 * each with the reason, as "file: reason" lines.
 *
 * Returns: (transfer full): a %NULL-terminated array, empty if none; free
 *   it with g_strfreev().
 */
GStrv
elk_registry_get_failed_providers (ElkRegistry *self,
                                   GType kind,
                                   const char *name)
{
  g_autoptr (GPtrArray) claims = NULL;
  GPtrArray *lines;

  g_return_val_if_fail (ELK_IS_REGISTRY (self), NULL);
  claims = list_claims (self, kind, name);
  lines = g_ptr_array_new ();
  for (guint i = 0; i < claims->len; i++)
    g_ptr_array_add (lines, g_strdup (((Claim *) claims->pdata[i])->reason));
  g_ptr_array_add (lines, NULL);
  return (GStrv) g_ptr_array_free (lines, FALSE);
}

/**
 * elk_registry_lookup:
 * @self: a registry
 * @kind: an interface type (%ELK_TYPE_SCHEDULER, ...)
 * @name: a feature name
 *
 * Looks up a feature by kind and name, without an error.
 *
 * Returns: (transfer none) (nullable): the feature of @kind called @name,
 *   owned by @self, or %NULL if there is none, or if more than one plugin
 *   file provides (or tried to provide) it; elk_registry_find() says which.
 */
const ElkFeature *
elk_registry_lookup (ElkRegistry *self, GType kind, const char *name)
{
  g_autoptr (GPtrArray) providers = NULL;
  g_autoptr (GPtrArray) claims = NULL;

  g_return_val_if_fail (ELK_IS_REGISTRY (self), NULL);
  providers = elk_registry_list_providers (self, kind, name);
  claims = list_claims (self, kind, name);
  if (providers->len != 1 || claims->len > 0)
    return NULL;
  return providers->pdata[0];
}

/* Does @plugin_file, as the user wrote it, name the file of @feature?  A
 * value with a '/' is a path (already made absolute by the caller); a
 * bare name is compared with the file's base name. */
static gboolean
file_matches (const char *file, const char *plugin_file)
{
  g_autofree char *base = NULL;
  g_autofree char *canonical = NULL;

  if (strchr (plugin_file, '/') != NULL)
    {
      canonical = g_canonicalize_filename (plugin_file, NULL);
      return strcmp (file, canonical) == 0;
    }
  base = g_path_get_basename (file);
  return strcmp (base, plugin_file) == 0;
}

static void
append_files (GString *s, GPtrArray *providers, GPtrArray *claims)
{
  for (guint i = 0; i < providers->len; i++)
    g_string_append_printf (s, "%s%s", i > 0 ? ", " : "",
                            feature_file (providers->pdata[i]));
  for (guint i = 0; i < claims->len; i++)
    {
      const Claim *claim = claims->pdata[i];
      g_string_append_printf (s, "%s%s (which failed to load: %s)",
                              providers->len + i > 0 ? ", " : "",
                              claim->filename, claim->reason);
    }
}

static void
set_not_found (ElkRegistry *self, GType kind, const char *name,
               GPtrArray *claims, GError **error)
{
  g_autoptr (GString) names = g_string_new (NULL);
  g_autoptr (GString) failed = g_string_new (NULL);
  g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);

  for (guint i = 0; i < self->features->len; i++)
    {
      const ElkFeature *f = self->features->pdata[i];
      if (f->kind != kind || g_hash_table_contains (seen, f->name))
        continue;
      g_hash_table_add (seen, f->name);
      if (names->len > 0)
        g_string_append (names, ", ");
      g_string_append (names, f->name);
    }
  for (guint i = 0; i < claims->len; i++)
    {
      const Claim *claim = claims->pdata[i];
      g_string_append_printf (failed, "; %s provides it but failed to load: "
                                      "%s", claim->filename, claim->reason);
    }
  g_set_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_NOT_FOUND,
               "no %s named '%s' (available: %s)%s%s",
               elk_kind_to_string (kind), name,
               names->len > 0 ? names->str : "none", failed->str,
               claims->len == 0 && self->failures->len > 0
                 ? "; some plugin files failed to load, see elk-inspect"
                 : "");
}

/**
 * elk_registry_find_in_file:
 * @self: a registry
 * @kind: an interface type
 * @name: a feature name
 * @plugin_file: (nullable) (type filename): the plugin file that must
 *   provide the feature: an absolute path, or a base name such as
 *   "libelk-basic.so"; %NULL to accept the only provider
 * @error: return location for a #GError
 *
 * Finds the feature of @kind called @name.  Without @plugin_file, the
 * name must be provided by exactly one plugin file: a name that two files
 * provide, or that a file which failed to load also tried to add, is
 * %ELK_REGISTRY_ERROR_AMBIGUOUS, naming every file, because using either
 * would silently depend on the search path.  With @plugin_file, the
 * feature of that file is used, and a name it does not provide is an
 * error even when another file provides it.
 *
 * Returns: (transfer none) (nullable): the feature, owned by @self, or
 *   %NULL with @error set.
 */
const ElkFeature *
elk_registry_find_in_file (ElkRegistry *self,
                           GType kind,
                           const char *name,
                           const char *plugin_file,
                           GError **error)
{
  g_autoptr (GPtrArray) providers = NULL;
  g_autoptr (GPtrArray) claims = NULL;
  g_autoptr (GPtrArray) chosen = NULL;
  g_autoptr (GString) files = NULL;
  g_autofree char *example = NULL;
  const char *kind_name = elk_kind_to_string (kind);

  g_return_val_if_fail (ELK_IS_REGISTRY (self), NULL);
  g_return_val_if_fail (name != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  providers = elk_registry_list_providers (self, kind, name);
  claims = list_claims (self, kind, name);
  files = g_string_new (NULL);

  if (plugin_file == NULL)
    {
      if (providers->len == 0)
        {
          set_not_found (self, kind, name, claims, error);
          return NULL;
        }
      if (providers->len == 1 && claims->len == 0)
        return providers->pdata[0];
      append_files (files, providers, claims);
      example = g_path_get_basename (feature_file (providers->pdata[0]));
      g_set_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_AMBIGUOUS,
                   "%s '%s' is provided by more than one plugin file: %s; "
                   "say which one to use with plugin=\"FILE\" on the "
                   "experiment's <%s> element (a path, or a file name such "
                   "as \"%s\"), or remove the others from the plugin path",
                   kind_name, name, files->str, kind_name, example);
      return NULL;
    }

  chosen = g_ptr_array_new ();
  for (guint i = 0; i < providers->len; i++)
    if (file_matches (feature_file (providers->pdata[i]), plugin_file))
      g_ptr_array_add (chosen, providers->pdata[i]);
  if (chosen->len == 1)
    return chosen->pdata[0];
  if (chosen->len > 1)
    {
      append_files (files, chosen, NULL);
      g_set_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_AMBIGUOUS,
                   "%s '%s': plugin=\"%s\" matches more than one file: %s; "
                   "give the file's path instead", kind_name, name,
                   plugin_file, files->str);
      return NULL;
    }
  for (guint i = 0; i < claims->len; i++)
    {
      const Claim *claim = claims->pdata[i];
      if (file_matches (claim->filename, plugin_file))
        {
          g_set_error (error, ELK_REGISTRY_ERROR,
                       ELK_REGISTRY_ERROR_NOT_FOUND,
                       "%s '%s': the chosen plugin file %s failed to load: "
                       "%s", kind_name, name, claim->filename, claim->reason);
          return NULL;
        }
    }
  append_files (files, providers, claims);
  g_set_error (error, ELK_REGISTRY_ERROR, ELK_REGISTRY_ERROR_NOT_FOUND,
               "%s '%s': no loaded plugin file %s provides it (%s: %s)",
               kind_name, name, plugin_file,
               providers->len + claims->len > 0 ? "it is provided by"
                                                : "no file provides it",
               providers->len + claims->len > 0 ? files->str : "none");
  return NULL;
}

/**
 * elk_registry_find:
 * @self: a registry
 * @kind: an interface type (%ELK_TYPE_SCHEDULER, ...)
 * @name: a feature name
 * @error: return location for a #GError
 *
 * Like elk_registry_lookup(), but a missing feature is an error that lists
 * the features of that kind and notes the files that failed to load, and
 * a feature that more than one plugin file provides is an error naming
 * every file (elk_registry_find_in_file() with no file).
 *
 * Returns: (transfer none) (nullable): the feature, owned by @self, or
 *   %NULL with @error set in the %ELK_REGISTRY_ERROR domain.
 */
const ElkFeature *
elk_registry_find (ElkRegistry *self,
                   GType kind,
                   const char *name,
                   GError **error)
{
  return elk_registry_find_in_file (self, kind, name, NULL, error);
}

/**
 * elk_registry_list_features:
 * @self: a registry
 * @kind: an interface type, or %G_TYPE_INVALID for all kinds
 *
 * Lists the loaded features of one kind, or of all kinds.
 *
 * Returns: (transfer container) (element-type ElkFeature): the features of
 *   @kind sorted by name; the features belong to @self, the array to the
 *   caller.
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
 * @self: a registry
 *
 * Lists the loaded plugins.
 *
 * Returns: (transfer container) (element-type ElkPlugin): the loaded
 *   plugins in load order; the array is the caller's, the plugins belong to
 *   @self.
 */
GPtrArray *
elk_registry_get_plugins (ElkRegistry *self)
{
  return g_ptr_array_ref (self->plugins);
}

/**
 * elk_registry_get_failures:
 * @self: a registry
 *
 * Files that elk_registry_scan() or elk_registry_load_file() rejected,
 * with the reason.
 *
 * Returns: (transfer none) (element-type ElkLoadFailure): the rejected
 *   files, owned by @self.
 */
const GPtrArray *
elk_registry_get_failures (ElkRegistry *self)
{
  return self->failures;
}

/**
 * elk_registry_get_ignored:
 * @self: a registry
 *
 * Files that elk_registry_scan() saw and did not load on purpose, with
 * the reason (%ELK_PLUGIN_ERROR_IGNORED): a shared module not named
 * libelk-<name>.so, or a file with the same bytes as one already loaded.
 * They are not errors.
 *
 * Returns: (transfer none) (element-type ElkLoadFailure): the ignored
 *   files, owned by @self.
 */
const GPtrArray *
elk_registry_get_ignored (ElkRegistry *self)
{
  g_return_val_if_fail (ELK_IS_REGISTRY (self), NULL);
  return self->ignored;
}

/**
 * elk_kind_to_string:
 * @kind: an interface type
 *
 * Names an extension point, as experiment files and tools write it.
 *
 * Returns: (transfer none): "frontend", "scheduler", "allocator" or
 *   "chip", or "unknown" for any other type.
 */
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

/**
 * elk_kind_from_string:
 * @kind: "frontend", "scheduler", "allocator" or "chip"
 *
 * Finds the extension point an experiment file or a tool names.
 *
 * Returns: the interface type named @kind, or %G_TYPE_INVALID.
 */
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
