/* elk-plugin.h: the plugin descriptor and ELK_PLUGIN_DEFINE.
 *
 * A plugin is a shared module named libelk-<name>.so that exports exactly
 * one symbol, elk_plugin_<name>_get_desc(), with '-' in the name written as
 * '_'.  The symbol returns an ElkPluginDesc; the loader checks its ABI
 * version and name before running any plugin code, then calls its register
 * function with the ElkPlugin being loaded, which adds features (GObject
 * types implementing one of the four interfaces) with
 * elk_plugin_add_feature().
 *
 *   static gboolean
 *   greedy_register (ElkPlugin *plugin, GError **error)
 *   {
 *     return elk_plugin_add_feature (plugin, ELK_TYPE_SCHEDULER, "greedy",
 *                                    ELK_TYPE_GREEDY_SCHEDULER, error);
 *   }
 *
 *   ELK_PLUGIN_DEFINE (greedy, "Greedy scheduler", "0.1", greedy_register)
 */
#pragma once

#include <glib-object.h>
#include <elk/elk-visibility.h>

G_BEGIN_DECLS

/**
 * ELK_PLUGIN_ABI_VERSION:
 *
 * The plugin ABI a plugin is built for, recorded in its descriptor; the
 * loader refuses a plugin of any other number before running its code.
 *
 * Bump it when an Interface struct or the descriptor changes
 * incompatibly, and whenever the size or a field offset of a public
 * struct changes (#ElkPlan, #ElkProgramOp, #ElkAllocRequest, ...): plugins
 * read those structs by field, and #ElkPlan is embedded by value in
 * others.  tests/core/test-abi-layout.c pins every such layout for the
 * current number and fails on a change without a bump.  2: ElkProgramOp
 * split into decisions, checked declarations and predictions;
 * ElkAllocRequest.contention and exec_fixed replace noc_share.  3:
 * ElkMetrics.breakdown (where the time went) appended;
 * ElkCostCoeffs.int8_macs_per_cycle (integer products) appended, which
 * grows ElkChipSpec (the same session's change, no second bump).  4:
 * ElkMetrics.routing (#ElkRoutingStats, the speculation on
 * mixture-of-experts experts) appended; the common chip property
 * "int8-macs-per-cycle" (ElkChipProps.int8_macs_per_cycle, taken from its
 * reserved room) makes %ELK_CHIP_PROPS_N_PROPERTIES 16, which moves a
 * chip's own property ids (the same session's change, no second bump).
 * 5: %ELK_MAX_OPERANDS 4 -> 5 (a LayerNorm folded into a MatMul has four
 * inputs), which grows #ElkOp, #ElkPlan and every struct embedding them.
 * 6: #ElkChipInterface.dup_measurer appended (the chip a scheduler's
 * select=chip measures its candidates on).
 */
#define ELK_PLUGIN_ABI_VERSION 6u

/**
 * ElkPlugin:
 *
 * A loaded plugin file: its descriptor's name, description and version,
 * its file and checksum.  Plugins belong to the #ElkRegistry that loaded
 * them.
 */
#define ELK_TYPE_PLUGIN (elk_plugin_get_type ())
ELK_API
G_DECLARE_FINAL_TYPE (ElkPlugin, elk_plugin, ELK, PLUGIN, GObject)

/**
 * ElkPluginRegisterFunc:
 * @plugin: the plugin being loaded
 * @error: return location for a #GError
 *
 * A plugin's register function: adds its features with
 * elk_plugin_add_feature().
 *
 * Returns: %TRUE on success; %FALSE with @error set, which makes the
 *   loader reject the file with %ELK_PLUGIN_ERROR_INIT_FAILED.
 */
typedef gboolean (*ElkPluginRegisterFunc) (ElkPlugin *plugin, GError **error);

/**
 * ElkPluginDesc:
 * @abi_version: %ELK_PLUGIN_ABI_VERSION at build time.
 * @name: the plugin name; must match the file name.
 * @description: one line.
 * @version: the plugin's own version.
 * @register_features: adds the plugin's features.
 * @reserved: zero; room to grow without an ABI bump.
 *
 * What a plugin's one exported symbol returns; made by
 * ELK_PLUGIN_DEFINE().
 */
typedef struct
{
  guint32 abi_version;
  const char *name;
  const char *description;
  const char *version;
  ElkPluginRegisterFunc register_features;
  gpointer reserved[4];
} ElkPluginDesc;

/**
 * ELK_PLUGIN_DEFINE:
 * @name_: the plugin name, a C identifier ('-' in the file name written
 *   as '_')
 * @description_: one line describing the plugin
 * @version_: the plugin's own version, as a string
 * @register_: its #ElkPluginRegisterFunc
 *
 * Defines and exports the plugin's descriptor getter,
 * elk_plugin_<name>_get_desc(), with the current %ELK_PLUGIN_ABI_VERSION.
 * Use it once per plugin file.
 */
#define ELK_PLUGIN_DEFINE(name_, description_, version_, register_)           \
  ELK_PLUGIN_EXPORT const ElkPluginDesc *elk_plugin_##name_##_get_desc (void); \
  const ElkPluginDesc *elk_plugin_##name_##_get_desc (void)                    \
  {                                                                            \
    static const ElkPluginDesc desc = {                                        \
      .abi_version = ELK_PLUGIN_ABI_VERSION,                                   \
      .name = #name_,                                                          \
      .description = (description_),                                          \
      .version = (version_),                                                   \
      .register_features = (register_),                                        \
    };                                                                         \
    return &desc;                                                              \
  }

/**
 * ELK_PLUGIN_DEFINE_FEATURE:
 * @name_: the plugin name, as for ELK_PLUGIN_DEFINE()
 * @description_: one line
 * @version_: the plugin's own version
 * @kind_: the interface the feature implements (%ELK_TYPE_SCHEDULER, ...)
 * @feature_: the feature name, unique within its kind
 * @type_: the implementation type
 *
 * ELK_PLUGIN_DEFINE() for the common plugin with exactly one feature: it
 * also defines the register function, which adds @type_ as feature
 * @feature_ of kind @kind_ with elk_plugin_add_feature().
 *
 *   ELK_PLUGIN_DEFINE_FEATURE (greedy, "Greedy scheduler", "0.1",
 *                              ELK_TYPE_SCHEDULER, "greedy",
 *                              ELK_TYPE_GREEDY_SCHEDULER)
 *
 * Since: 0.1
 */
#define ELK_PLUGIN_DEFINE_FEATURE(name_, description_, version_, kind_,        \
                                  feature_, type_)                             \
  static gboolean elk_plugin_##name_##_register (ElkPlugin *plugin,            \
                                                 GError **error)               \
  {                                                                            \
    return elk_plugin_add_feature (plugin, (kind_), (feature_), (type_),       \
                                   error);                                     \
  }                                                                            \
  ELK_PLUGIN_DEFINE (name_, description_, version_,                            \
                     elk_plugin_##name_##_register)

/**
 * ELK_DEFINE_FEATURE_TYPE:
 * @TypeName: the type's name in camel case (`AcmeGreedyScheduler`)
 * @type_name: the type's name in lower case with underscores
 *   (`acme_greedy_scheduler`)
 * @kind_: the interface it implements (%ELK_TYPE_SCHEDULER, ...)
 * @Interface: the interface's struct (#ElkSchedulerInterface, ...)
 * @...: the body of the interface init, which sets the vfuncs of `iface`
 *
 * What ELK_DEFINE_SCHEDULER() and its siblings share: a final #GObject type
 * implementing @kind_ (G_DEFINE_FINAL_TYPE_WITH_CODE() with
 * G_IMPLEMENT_INTERFACE()), its interface init, and an empty instance
 * init, type_name_init(): a plugin's tunables are construct properties,
 * set before any of its code runs.  The file writes type_name_class_init()
 * after it.  A type that needs an instance init of its own uses
 * G_DEFINE_FINAL_TYPE_WITH_CODE() itself.
 *
 * Since: 0.1
 */
#define ELK_DEFINE_FEATURE_TYPE(TypeName, type_name, kind_, Interface, ...)    \
  static void type_name##_iface_init (Interface *iface) { __VA_ARGS__; }       \
  G_DEFINE_FINAL_TYPE_WITH_CODE (                                              \
      TypeName, type_name, G_TYPE_OBJECT,                                      \
      G_IMPLEMENT_INTERFACE ((kind_), type_name##_iface_init))                 \
  static void type_name##_init (TypeName *self G_GNUC_UNUSED) {}

/**
 * ELK_DEFINE_SCHEDULER:
 * @TypeName: the type's name in camel case (`AcmeGreedyScheduler`)
 * @type_name: the type's name in lower case with underscores
 *   (`acme_greedy_scheduler`)
 * @schedule_: the #ElkSchedulerInterface.schedule function
 *
 * Defines a final #GObject type that implements #ElkScheduler with the
 * function @schedule_: the type, its interface init and an empty instance
 * init (ELK_DEFINE_FEATURE_TYPE()), the boilerplate every scheduler would
 * otherwise write again.  Declare the type with G_DECLARE_FINAL_TYPE() and
 * its instance struct, write @schedule_, then:
 *
 * |[<!-- language="C" -->
 * ELK_DEFINE_SCHEDULER (AcmeGreedyScheduler, acme_greedy_scheduler,
 *                       acme_greedy_scheduler_schedule)
 *
 * static void
 * acme_greedy_scheduler_class_init (AcmeGreedySchedulerClass *klass)
 * {
 *   // the properties: elk_field_properties_install()
 * }
 * ]|
 *
 * Since: 0.1
 */
#define ELK_DEFINE_SCHEDULER(TypeName, type_name, schedule_)                   \
  ELK_DEFINE_FEATURE_TYPE (TypeName, type_name, ELK_TYPE_SCHEDULER,            \
                           ElkSchedulerInterface,                              \
                           iface->schedule = (schedule_))

/**
 * ELK_DEFINE_ALLOCATOR:
 * @TypeName: the type's name in camel case
 * @type_name: the type's name in lower case with underscores
 * @allocate_: the #ElkAllocatorInterface.allocate function
 *
 * ELK_DEFINE_SCHEDULER() for an #ElkAllocator.
 *
 * Since: 0.1
 */
#define ELK_DEFINE_ALLOCATOR(TypeName, type_name, allocate_)                   \
  ELK_DEFINE_FEATURE_TYPE (TypeName, type_name, ELK_TYPE_ALLOCATOR,            \
                           ElkAllocatorInterface,                              \
                           iface->allocate = (allocate_))

/**
 * ELK_DEFINE_FRONTEND:
 * @TypeName: the type's name in camel case
 * @type_name: the type's name in lower case with underscores
 * @load_: the #ElkFrontendInterface.load function
 *
 * ELK_DEFINE_SCHEDULER() for an #ElkFrontend.  A frontend whose
 * properties hold strings adds a finalize in its class_init.
 *
 * Since: 0.1
 */
#define ELK_DEFINE_FRONTEND(TypeName, type_name, load_)                        \
  ELK_DEFINE_FEATURE_TYPE (TypeName, type_name, ELK_TYPE_FRONTEND,             \
                           ElkFrontendInterface, iface->load = (load_))

/**
 * ELK_DEFINE_CHIP:
 * @TypeName: the type's name in camel case
 * @type_name: the type's name in lower case with underscores
 * @dup_spec_: the #ElkChipInterface.dup_spec function
 * @run_: the #ElkChipInterface.run function
 * @run_traced_: the #ElkChipInterface.run_traced function, or %NULL for a
 *   backend that records no traces
 *
 * ELK_DEFINE_SCHEDULER() for an #ElkChip.
 *
 * Since: 0.1
 */
#define ELK_DEFINE_CHIP(TypeName, type_name, dup_spec_, run_, run_traced_)     \
  ELK_DEFINE_FEATURE_TYPE (TypeName, type_name, ELK_TYPE_CHIP,                 \
                           ElkChipInterface, iface->dup_spec = (dup_spec_);    \
                           iface->run = (run_);                                \
                           iface->run_traced = (run_traced_))

/**
 * ELK_PARAM_PATH:
 *
 * A GParamFlags bit for string properties that hold file paths.  The
 * experiment loader resolves such values relative to the experiment file
 * and reports a missing file as ELK_EXPERIMENT_ERROR_MISSING_FILE, with the
 * file and line of the <param>, before any plugin code runs.
 */
#define ELK_PARAM_PATH (1 << G_PARAM_USER_SHIFT)

/**
 * ElkFieldProperty:
 * @pspec: the property specification (a floating reference, sunk when it
 *   is installed)
 * @offset: where the property's value lives in the instance struct, from
 *   G_STRUCT_OFFSET()
 *
 * A property whose value is one field of the instance struct, for
 * elk_field_properties_install().
 *
 * Since: 0.1
 */
typedef struct
{
  GParamSpec *pspec;
  gsize offset;
} ElkFieldProperty;

ELK_API void elk_field_properties_install (GObjectClass *klass,
                                           const ElkFieldProperty *props,
                                           guint n_props);
ELK_API void elk_field_property_set (GObject *object,
                                     guint prop_id,
                                     const GValue *value,
                                     GParamSpec *pspec);
ELK_API void elk_field_property_get (GObject *object,
                                     guint prop_id,
                                     GValue *value,
                                     GParamSpec *pspec);

/**
 * ElkFeature:
 * @kind: the interface type (ELK_TYPE_SCHEDULER, ...).
 * @name: the feature name, unique within its kind.
 * @type: the implementation type.
 * @plugin: (nullable): the plugin that added it, %NULL for built-ins.
 *
 * A feature: an implementation of one of the four interfaces, under a
 * name unique within its kind.  Owned by the #ElkRegistry.
 */
typedef struct
{
  GType kind;
  char *name;
  GType type;
  ElkPlugin *plugin;
} ElkFeature;

ELK_API gboolean elk_plugin_add_feature (ElkPlugin *plugin,
                                         GType kind,
                                         const char *name,
                                         GType type,
                                         GError **error);
ELK_API const char *elk_plugin_get_name (ElkPlugin *plugin);
ELK_API const char *elk_plugin_get_filename (ElkPlugin *plugin);
ELK_API const char *elk_plugin_get_sha256 (ElkPlugin *plugin);
ELK_API const char *elk_plugin_get_description (ElkPlugin *plugin);
ELK_API const char *elk_plugin_get_version (ElkPlugin *plugin);
ELK_API guint elk_plugin_get_abi_version (ElkPlugin *plugin);

G_END_DECLS
