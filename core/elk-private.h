/* elk-private.h: declarations shared between libelk's own files.
 * Not installed; internal symbols use the elk__ prefix. */
#pragma once

#include <elk/elk.h>
#include <libxml/tree.h>

G_BEGIN_DECLS

/* elk-plugin.c */
ElkPlugin *elk__plugin_new (ElkRegistry *registry,
                            const char *filename,
                            const char *sha256,
                            const ElkPluginDesc *desc);
void elk__plugin_detach (ElkPlugin *plugin);
guint elk__plugin_get_n_features (ElkPlugin *plugin);
GPtrArray *elk__plugin_get_claims (ElkPlugin *plugin);
char *elk__plugin_dup_record (ElkPlugin *plugin);

/* elk-registry.c */
gboolean elk__feature_check (const char *origin,
                             GType kind,
                             const char *name,
                             GType type,
                             GError **error);
gboolean elk__registry_add_feature (ElkRegistry *self,
                                    ElkPlugin *plugin,
                                    GType kind,
                                    const char *name,
                                    GType type,
                                    GError **error);
void elk__registry_remove_plugin_features (ElkRegistry *self,
                                           ElkPlugin *plugin);

/* elk-registry.c: orders a GPtrArray of strings (g_ptr_array_sort hands
 * the comparison pointers to the elements). */
gint elk__compare_strings (gconstpointer a, gconstpointer b);

/* elk-graph.c */
void elk__graph_copy_attributes (ElkGraph *dst, const ElkGraph *src);

/* elk-param.c */
gboolean elk__param_parse (GParamSpec *pspec,
                           const char *text,
                           const char *base_dir,
                           GValue *value,
                           GError **error);
char *elk__param_list_names (GObjectClass *klass);

/* elk-results-writer.c: results.csv, results.json and timings.csv (the
 * HTML report is core/report/, a separate library). */
typedef struct _ResultsWriter ResultsWriter;
gboolean elk__make_output_dir (const char *dir, GError **error);
ResultsWriter *elk__results_writer_open (const char *dir,
                                         const char *experiment,
                                         const char *hash,
                                         const char *const *axis_names,
                                         GPtrArray *plugin_versions,
                                         gboolean routing_columns,
                                         GError **error);
gboolean elk__results_writer_add_row (ResultsWriter *writer,
                                      const char *const *values,
                                      GError **error);
gboolean elk__results_writer_add_timing (ResultsWriter *writer,
                                         const char *const *values,
                                         GError **error);
gboolean elk__results_writer_commit (ResultsWriter *writer, GError **error);
void elk__results_writer_abort (ResultsWriter *writer);
const char *const *elk__results_writer_get_columns (void);
guint elk__results_writer_get_n_columns (void);
char *elk__breakdown_to_string (const ElkBreakdown *breakdown);
char *elk__routing_stats_to_string (const ElkRoutingStats *stats);
GPtrArray *elk__breakdown_split (const char *text);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (xmlDoc, xmlFreeDoc)

/* G_DEFINE_BOXED_TYPE trips -Wpedantic with GCC (it converts the copy
 * function to a transparent union), so libelk registers its boxed types
 * by hand. */
#define ELK_DEFINE_BOXED_TYPE(TypeName, type_name, copy, free)             \
  GType type_name##_get_type (void)                                         \
  {                                                                         \
    static gsize type_id = 0;                                               \
    if (g_once_init_enter (&type_id))                                       \
      g_once_init_leave (&type_id,                                          \
                         g_boxed_type_register_static (                     \
                           #TypeName, (GBoxedCopyFunc) (void (*) (void)) copy, \
                           (GBoxedFreeFunc) (void (*) (void)) free));       \
    return (GType) type_id;                                                 \
  }

G_END_DECLS
