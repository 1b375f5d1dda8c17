/* elk-experiment.c: loading and validating experiment files.
 *
 * The file is parsed with libxml2 without network access and without
 * entity substitution, and a document type declaration is refused
 * outright, so that no experiment can fetch anything or expand entities.
 * It is then validated against the RelaxNG schema (compiled into libelk
 * from experiments/elk-experiment.rng), and finally every plugin name and
 * every <param> and sweep value is checked against the registry and the
 * plugin's properties.  All of this happens before any point runs, and
 * every error carries file:line.
 */
#include "config.h"

#include <string.h>

#include <sys/stat.h>
#include <glib/gstdio.h>
#include <libxml/parser.h>
#include <libxml/relaxng.h>

#include "elk-experiment-private.h"
#include "plan/elk-plan-params.h"

extern const char elk__experiment_schema[];

/* Experiment files are hand-written XML: 16 MiB is far beyond any real
 * one.  ELK_MAX_EXPERIMENT_SIZE raises it. */
#define ELK_EXPERIMENT_MAX_SIZE (G_GUINT64_CONSTANT (16) << 20)

/* Sweeps larger than this are mistakes long before they are limits. */
#define ELK_EXPERIMENT_MAX_AXES 64
#define ELK_EXPERIMENT_MAX_AXIS_VALUES 1000000

/**
 * elk_experiment_get_type:
 *
 * Gets the type of loaded experiments.
 *
 * Returns: the #GType of #ElkExperiment.
 */
G_DEFINE_FINAL_TYPE (ElkExperiment, elk_experiment, G_TYPE_OBJECT)

static void
param_entry_free (ParamEntry *entry)
{
  g_free (entry->name);
  g_value_unset (&entry->value);
  g_free (entry);
}

static void
component_free (Component *component)
{
  if (component == NULL)
    return;
  g_free (component->label);
  g_ptr_array_unref (component->params);
  component_free (component->allocator);
  g_free (component);
}

static void
axis_free (Axis *axis)
{
  g_free (axis->text);
  g_free (axis->property);
  g_array_unref (axis->values);
  g_ptr_array_unref (axis->texts);
  g_free (axis);
}

static void
elk_experiment_finalize (GObject *object)
{
  ElkExperiment *self = ELK_EXPERIMENT (object);

  g_free (self->path);
  g_free (self->dir);
  g_free (self->name);
  g_free (self->hash);
  g_free (self->output_dir);
  component_free (self->frontend);
  component_free (self->chip);
  component_free (self->allocator);
  component_free (self->plans);
  g_ptr_array_unref (self->schedulers);
  g_ptr_array_unref (self->axes);
  G_OBJECT_CLASS (elk_experiment_parent_class)->finalize (object);
}

static void
elk_experiment_class_init (ElkExperimentClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = elk_experiment_finalize;
}

static void
elk_experiment_init (ElkExperiment *self)
{
  self->schedulers = g_ptr_array_new_with_free_func ((GDestroyNotify)
                                                     component_free);
  self->axes = g_ptr_array_new_with_free_func ((GDestroyNotify) axis_free);
  self->n_points = 1;
  self->trace_point = -1;
}

/**
 * elk_experiment_get_schema:
 *
 * Gets the schema of experiment files.
 *
 * Returns: (transfer none): the RelaxNG schema experiment files are
 *   validated against, as text (compiled into the library).
 */
const char *
elk_experiment_get_schema (void)
{
  return elk__experiment_schema;
}

/* ------------------------------------------------------------------ */
/* XML parsing and schema validation                                   */

/* libxml2 messages may span lines and quote raw bytes of the input; an
 * error must stay one valid UTF-8 line. */
static char *
strip_libxml_message (const char *message)
{
  char *copy = g_utf8_make_valid (message != NULL ? message : "unknown error",
                                  -1);
  g_strdelimit (copy, "\n\r\t", ' ');
  return g_strstrip (copy);
}

static xmlDoc *
parse_xml (const char *data,
           gsize length,
           const char *path,
           GError **error)
{
  xmlParserCtxt *ctxt = xmlNewParserCtxt ();
  xmlDoc *doc;

  if (ctxt == NULL)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_PARSE,
                   "%s: cannot create an XML parser", path);
      return NULL;
    }
  if (length > G_MAXINT)
    {
      xmlFreeParserCtxt (ctxt);
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_PARSE,
                   "%s: file too large for an experiment", path);
      return NULL;
    }

  /* No XML_PARSE_NOENT (which would substitute entities), no DTD loading,
   * no network. */
  doc = xmlCtxtReadMemory (ctxt, data, (int) length, path, NULL,
                           XML_PARSE_NONET | XML_PARSE_NOERROR
                             | XML_PARSE_NOWARNING);
  if (doc == NULL || !ctxt->wellFormed)
    {
      const xmlError *e = xmlCtxtGetLastError (ctxt);
      g_autofree char *message = strip_libxml_message (e ? e->message : NULL);
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_PARSE,
                   "%s:%d: malformed XML: %s", path, e ? e->line : 0,
                   message);
      if (doc != NULL)
        xmlFreeDoc (doc);
      xmlFreeParserCtxt (ctxt);
      return NULL;
    }
  xmlFreeParserCtxt (ctxt);

  if (doc->intSubset != NULL || doc->extSubset != NULL)
    {
      long line = doc->intSubset ? xmlGetLineNo ((xmlNode *) doc->intSubset)
                                 : -1;
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_PARSE,
                   "%s:%ld: a document type declaration is not allowed in "
                   "an experiment file", path, line > 0 ? line : 1L);
      xmlFreeDoc (doc);
      return NULL;
    }
  return doc;
}

typedef struct
{
  char *message;
  int line;
} FirstError;

static void
collect_first_error (void *data, xmlError *e)
{
  FirstError *first = data;
  if (first->message == NULL)
    {
      first->message = strip_libxml_message (e->message);
      first->line = e->line;
    }
}

static gboolean
validate_schema (xmlDoc *doc, const char *path, GError **error)
{
  static gsize schema_once = 0;
  static xmlRelaxNG *schema = NULL;
  xmlRelaxNGValidCtxt *vctxt;
  FirstError first = { NULL, 0 };
  int rc;

  /* The parsed schema is read-only once built and shared by all threads. */
  if (g_once_init_enter (&schema_once))
    {
      xmlRelaxNGParserCtxt *pctxt = xmlRelaxNGNewMemParserCtxt (
        elk__experiment_schema, (int) strlen (elk__experiment_schema));
      schema = xmlRelaxNGParse (pctxt);
      xmlRelaxNGFreeParserCtxt (pctxt);
      g_once_init_leave (&schema_once, 1);
    }
  if (schema == NULL)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_SCHEMA,
                   "%s: the built-in experiment schema does not parse "
                   "(libelk is broken)", path);
      return FALSE;
    }

  vctxt = xmlRelaxNGNewValidCtxt (schema);
  xmlRelaxNGSetValidStructuredErrors (vctxt, collect_first_error, &first);
  rc = xmlRelaxNGValidateDoc (vctxt, doc);
  xmlRelaxNGFreeValidCtxt (vctxt);
  if (rc != 0)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_SCHEMA,
                   "%s:%d: does not follow the experiment schema "
                   "(experiments/elk-experiment.rng): %s", path, first.line,
                   first.message ? first.message : "invalid document");
      g_free (first.message);
      return FALSE;
    }
  g_free (first.message);
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Components and parameters                                           */

static char *
get_prop (xmlNode *node, const char *name)
{
  xmlChar *value = xmlGetProp (node, (const xmlChar *) name);
  char *copy = value != NULL ? g_strdup ((const char *) value) : NULL;
  xmlFree (value);
  return copy;
}

static gboolean
is_element (xmlNode *node, const char *name)
{
  return node->type == XML_ELEMENT_NODE
         && strcmp ((const char *) node->name, name) == 0;
}

/* "frontend 'llama'" or "<plans>", as messages name a component. */
static char *
describe (const Component *c)
{
  if (c->kind == ELK_TYPE_PLAN_PARAMS)
    return g_strdup ("<plans>");
  return g_strdup_printf ("%s '%s'", elk_kind_to_string (c->kind),
                          c->feature->name);
}

/* <plans> is no plugin: its feature is libelk's own type, so that its
 * params are checked like a plugin's properties. */
static const ElkFeature *
plans_feature (void)
{
  static ElkFeature feature;
  static gsize done = 0;

  if (g_once_init_enter (&done))
    {
      feature.kind = ELK_TYPE_PLAN_PARAMS;
      feature.name = (char *) "plans";
      feature.type = ELK_TYPE_PLAN_PARAMS;
      g_once_init_leave (&done, 1);
    }
  return &feature;
}

/* Converts "text" for property "name" of component c; errors carry
 * file:line and the component. */
static GParamSpec *
find_param (ElkExperiment *self,
            Component *c,
            const char *name,
            int line,
            GError **error)
{
  GObjectClass *klass = g_type_class_ref (c->feature->type);
  GParamSpec *pspec = g_object_class_find_property (klass, name);

  if (pspec == NULL || (pspec->flags & G_PARAM_WRITABLE) == 0)
    {
      g_autofree char *names = elk__param_list_names (klass);
      g_autofree char *who = describe (c);
      g_set_error (error, ELK_EXPERIMENT_ERROR,
                   ELK_EXPERIMENT_ERROR_UNKNOWN_PARAM,
                   "%s:%d: %s has no parameter '%s' (valid: %s)",
                   self->path, line, who, name, names);
      g_type_class_unref (klass);
      return NULL;
    }
  g_type_class_unref (klass);
  return pspec;
}

static gboolean
convert_value (ElkExperiment *self,
               Component *c,
               GParamSpec *pspec,
               const char *text,
               int line,
               GValue *value,
               GError **error)
{
  g_autoptr (GError) local_error = NULL;
  g_autofree char *stripped = g_strstrip (g_strdup (text));

  if (!elk__param_parse (pspec, stripped, self->dir, value, &local_error))
    {
      g_autofree char *who = describe (c);
      g_set_error (error, ELK_EXPERIMENT_ERROR, local_error->code,
                   "%s:%d: %s: %s", self->path, line, who,
                   local_error->message);
      return FALSE;
    }
  return TRUE;
}

static Component *
load_component (ElkExperiment *self,
                ElkRegistry *registry,
                xmlNode *node,
                GType kind,
                GError **error)
{
  g_autofree char *name = get_prop (node, "name");
  g_autofree char *plugin_file = get_prop (node, "plugin");
  g_autoptr (GError) local_error = NULL;
  const ElkFeature *feature;
  Component *c;
  int line = (int) xmlGetLineNo (node);

  /* plugin="..." says which plugin file provides the feature: a path
   * (relative to this file's folder) or a bare file name. */
  if (plugin_file != NULL && strchr (plugin_file, '/') != NULL)
    {
      char *absolute = g_canonicalize_filename (plugin_file, self->dir);
      g_free (plugin_file);
      plugin_file = absolute;
    }
  feature = kind == ELK_TYPE_PLAN_PARAMS
              ? plans_feature ()
              : elk_registry_find_in_file (registry, kind, name, plugin_file,
                                           &local_error);
  if (feature == NULL)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR,
                   ELK_EXPERIMENT_ERROR_UNKNOWN_PLUGIN, "%s:%d: %s",
                   self->path, line, local_error->message);
      return NULL;
    }

  c = g_new0 (Component, 1);
  c->kind = kind;
  c->feature = feature;
  c->line = line;
  c->params = g_ptr_array_new_with_free_func ((GDestroyNotify)
                                              param_entry_free);
  if (kind == ELK_TYPE_SCHEDULER)
    {
      g_autofree char *bound = get_prop (node, "bound");

      c->label = get_prop (node, "label");
      if (c->label == NULL)
        c->label = g_strdup (feature->name);
      /* A bound's program may take things for granted about the machine
       * (ElkProgramAssumptions), which chips then apply: the experiment,
       * not the plugin, says which designs are bounds, and core names no
       * plugin to guess it. */
      c->bound = bound != NULL && strcmp (bound, "true") == 0;
    }

  for (xmlNode *child = node->children; child != NULL; child = child->next)
    {
      if (is_element (child, "param"))
        {
          g_autofree char *pname = get_prop (child, "name");
          xmlChar *text = xmlNodeGetContent (child);
          int pline = (int) xmlGetLineNo (child);
          GParamSpec *pspec;
          ParamEntry *entry;
          gboolean ok;

          for (guint i = 0; i < c->params->len; i++)
            if (strcmp (((ParamEntry *) c->params->pdata[i])->name, pname)
                == 0)
              {
                g_autofree char *who = describe (c);
                g_set_error (error, ELK_EXPERIMENT_ERROR,
                             ELK_EXPERIMENT_ERROR_INVALID,
                             "%s:%d: %s: parameter '%s' is set twice",
                             self->path, pline, who, pname);
                xmlFree (text);
                component_free (c);
                return NULL;
              }

          pspec = find_param (self, c, pname, pline, error);
          if (pspec == NULL)
            {
              xmlFree (text);
              component_free (c);
              return NULL;
            }
          entry = g_new0 (ParamEntry, 1);
          entry->name = g_strdup (pspec->name);
          entry->line = pline;
          ok = convert_value (self, c, pspec, (const char *) text, pline,
                              &entry->value, error);
          xmlFree (text);
          g_ptr_array_add (c->params, entry);
          if (!ok)
            {
              component_free (c);
              return NULL;
            }
        }
      else if (is_element (child, "allocator"))
        {
          c->allocator = load_component (self, registry, child,
                                         ELK_TYPE_ALLOCATOR, error);
          if (c->allocator == NULL)
            {
              component_free (c);
              return NULL;
            }
        }
    }
  return c;
}

static Component *
find_axis_component (ElkExperiment *self,
                     const char *target,
                     const char **property)
{
  if (g_str_has_prefix (target, "frontend."))
    {
      *property = target + strlen ("frontend.");
      return self->frontend;
    }
  if (g_str_has_prefix (target, "chip."))
    {
      *property = target + strlen ("chip.");
      return self->chip;
    }
  if (g_str_has_prefix (target, "allocator."))
    {
      *property = target + strlen ("allocator.");
      return self->allocator;
    }
  if (g_str_has_prefix (target, "plans."))
    {
      *property = target + strlen ("plans.");
      return self->plans;
    }
  if (g_str_has_prefix (target, "scheduler."))
    {
      const char *rest = target + strlen ("scheduler.");
      const char *dot = strrchr (rest, '.');
      for (guint i = 0; dot != NULL && i < self->schedulers->len; i++)
        {
          Component *c = self->schedulers->pdata[i];
          if (strlen (c->label) == (gsize) (dot - rest)
              && strncmp (c->label, rest, (gsize) (dot - rest)) == 0)
            {
              *property = dot + 1;
              return c;
            }
        }
    }
  return NULL;
}

static gboolean
load_axis (ElkExperiment *self, xmlNode *node, GError **error)
{
  g_autofree char *target = get_prop (node, "param");
  g_autofree char *values = get_prop (node, "values");
  g_auto (GStrv) items = NULL;
  int line = (int) xmlGetLineNo (node);
  const char *property = NULL;
  Component *c = find_axis_component (self, target, &property);
  GParamSpec *pspec;
  Axis *axis;

  if (c == NULL)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
                   "%s:%d: sweep axis '%s' names no component (expected "
                   "frontend.P, chip.P, allocator.P with a default "
                   "<allocator>, plans.P, or scheduler.LABEL.P)", self->path,
                   line,
                   target);
      return FALSE;
    }
  for (guint i = 0; i < self->axes->len; i++)
    if (strcmp (((Axis *) self->axes->pdata[i])->text, target) == 0)
      {
        g_set_error (error, ELK_EXPERIMENT_ERROR,
                     ELK_EXPERIMENT_ERROR_INVALID,
                     "%s:%d: sweep axis '%s' appears twice", self->path,
                     line, target);
        return FALSE;
      }
  pspec = find_param (self, c, property, line, error);
  if (pspec == NULL)
    return FALSE;

  axis = g_new0 (Axis, 1);
  axis->text = g_strdup (target);
  axis->component = c;
  axis->property = g_strdup (pspec->name);
  axis->line = line;
  axis->values = g_array_new (FALSE, TRUE, sizeof (GValue));
  g_array_set_clear_func (axis->values, (GDestroyNotify) g_value_unset);
  axis->texts = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (self->axes, axis);

  if (self->axes->len > ELK_EXPERIMENT_MAX_AXES)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
                   "%s:%d: more than %d sweep axes", self->path, line,
                   ELK_EXPERIMENT_MAX_AXES);
      return FALSE;
    }
  items = g_strsplit_set (values, " \t\r\n", -1);
  if (g_strv_length (items) > ELK_EXPERIMENT_MAX_AXIS_VALUES)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
                   "%s:%d: sweep axis '%s' has more than %d values", self->path,
                   line, target, ELK_EXPERIMENT_MAX_AXIS_VALUES);
      return FALSE;
    }
  for (guint i = 0; items[i] != NULL; i++)
    {
      GValue value = G_VALUE_INIT;
      if (items[i][0] == '\0')
        continue;
      if (!convert_value (self, c, pspec, items[i], line, &value, error))
        return FALSE;
      g_array_append_val (axis->values, value);
      g_ptr_array_add (axis->texts, g_strdup (items[i]));
    }
  if (axis->values->len == 0)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
                   "%s:%d: sweep axis '%s' has no values", self->path, line,
                   target);
      return FALSE;
    }
  if (!g_uint_checked_mul (&self->n_points, self->n_points,
                           axis->values->len)
      || self->n_points > 10000000)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
                   "%s:%d: the sweep has more than 10^7 points; split it "
                   "with --shard or reduce the axes", self->path, line);
      return FALSE;
    }
  return TRUE;
}

static gboolean
load_document (ElkExperiment *self,
               ElkRegistry *registry,
               xmlDoc *doc,
               GError **error)
{
  xmlNode *root = xmlDocGetRootElement (doc);
  g_autofree char *seed = get_prop (root, "seed");

  self->name = get_prop (root, "name");
  if (seed != NULL)
    g_ascii_string_to_unsigned (seed, 10, 0, G_MAXUINT64, &self->seed, NULL);

  /* Without a <plans> element the tables take their defaults, and a
   * "plans.P" sweep axis still has a component to vary. */
  self->plans = g_new0 (Component, 1);
  self->plans->kind = ELK_TYPE_PLAN_PARAMS;
  self->plans->feature = plans_feature ();
  self->plans->line = (int) xmlGetLineNo (root);
  self->plans->params = g_ptr_array_new_with_free_func ((GDestroyNotify)
                                                        param_entry_free);

  for (xmlNode *node = root->children; node != NULL; node = node->next)
    {
      if (is_element (node, "frontend"))
        self->frontend = load_component (self, registry, node,
                                         ELK_TYPE_FRONTEND, error);
      else if (is_element (node, "chip"))
        self->chip = load_component (self, registry, node, ELK_TYPE_CHIP,
                                     error);
      else if (is_element (node, "allocator"))
        self->allocator = load_component (self, registry, node,
                                          ELK_TYPE_ALLOCATOR, error);
      else if (is_element (node, "plans"))
        {
          component_free (self->plans);
          self->plans = load_component (self, registry, node,
                                        ELK_TYPE_PLAN_PARAMS, error);
          if (self->plans == NULL)
            return FALSE;
          continue;
        }
      else if (is_element (node, "scheduler"))
        {
          Component *c = load_component (self, registry, node,
                                         ELK_TYPE_SCHEDULER, error);
          if (c == NULL)
            return FALSE;
          for (guint i = 0; i < self->schedulers->len; i++)
            if (strcmp (((Component *) self->schedulers->pdata[i])->label,
                        c->label) == 0)
              {
                g_set_error (error, ELK_EXPERIMENT_ERROR,
                             ELK_EXPERIMENT_ERROR_INVALID,
                             "%s:%d: scheduler label '%s' is used twice; "
                             "give each scheduler a distinct label=",
                             self->path, c->line, c->label);
                component_free (c);
                return FALSE;
              }
          if (c->allocator == NULL && self->allocator == NULL)
            {
              g_set_error (error, ELK_EXPERIMENT_ERROR,
                           ELK_EXPERIMENT_ERROR_INVALID,
                           "%s:%d: scheduler '%s' has no <allocator> and "
                           "the experiment has no default <allocator>",
                           self->path, c->line, c->label);
              component_free (c);
              return FALSE;
            }
          g_ptr_array_add (self->schedulers, c);
          continue;
        }
      else if (is_element (node, "sweep"))
        {
          for (xmlNode *axis = node->children; axis != NULL;
               axis = axis->next)
            if (is_element (axis, "axis") && !load_axis (self, axis, error))
              return FALSE;
          continue;
        }
      else if (is_element (node, "output"))
        {
          g_autofree char *dir = get_prop (node, "dir");
          g_autofree char *trace = get_prop (node, "trace");
          self->trace = g_strcmp0 (trace, "true") == 0;
          if (self->trace && self->chip != NULL
              && !elk_chip_type_can_trace (self->chip->feature->type))
            {
              g_set_error (error, ELK_EXPERIMENT_ERROR,
                           ELK_EXPERIMENT_ERROR_INVALID,
                           "%s:%ld: traces were asked for, but chip '%s' "
                           "cannot record them", self->path,
                           xmlGetLineNo (node), self->chip->feature->name);
              return FALSE;
            }
          self->output_dir = g_path_is_absolute (dir)
                               ? g_strdup (dir)
                               : g_build_filename (self->dir, dir, NULL);
          continue;
        }
      else
        continue;

      if ((is_element (node, "frontend") && self->frontend == NULL)
          || (is_element (node, "chip") && self->chip == NULL)
          || (is_element (node, "allocator") && self->allocator == NULL))
        return FALSE;
    }
  return TRUE;
}

/* The size limit of experiment files, ELK_EXPERIMENT_MAX_SIZE unless the
 * environment variable ELK_MAX_EXPERIMENT_SIZE raises (or lowers) it. */
static gboolean
check_size_limit (const char *path, guint64 size, GError **error)
{
  guint64 limit = ELK_EXPERIMENT_MAX_SIZE;
  const char *env = g_getenv ("ELK_MAX_EXPERIMENT_SIZE");

  if (env != NULL
      && !g_ascii_string_to_unsigned (env, 10, 1, G_MAXUINT64, &limit, NULL))
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_INVALID,
                   "ELK_MAX_EXPERIMENT_SIZE='%s' is not a positive number of "
                   "bytes", env);
      return FALSE;
    }
  if (size > limit)
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_IO,
                   "%s: %" G_GUINT64_FORMAT " bytes, more than the %"
                   G_GUINT64_FORMAT "-byte limit for experiment files; set "
                   "ELK_MAX_EXPERIMENT_SIZE to raise it", path, size, limit);
      return FALSE;
    }
  return TRUE;
}

/**
 * elk_experiment_load_from_data:
 * @data: (array length=length) (element-type guint8): the file's contents
 * @length: their length in bytes
 * @path: (type filename): the file's path, used in messages and to resolve
 *   relative paths
 * @registry: the registry plugins are looked up in
 * @error: return location for a #GError
 *
 * Like elk_experiment_load(), for contents already in memory (an
 * experiment built in code, or read by the caller).
 *
 * Returns: (transfer full) (nullable): the validated experiment, or %NULL
 *   with @error set in the %ELK_EXPERIMENT_ERROR domain.
 */
ElkExperiment *
elk_experiment_load_from_data (const char *data,
                               gsize length,
                               const char *path,
                               ElkRegistry *registry,
                               GError **error)
{
  g_autoptr (ElkExperiment) self = g_object_new (ELK_TYPE_EXPERIMENT, NULL);
  g_autoptr (xmlDoc) doc = NULL;
  g_autofree char *absolute = NULL;

  g_return_val_if_fail (data != NULL && path != NULL, NULL);
  g_return_val_if_fail (ELK_IS_REGISTRY (registry), NULL);

  if (!check_size_limit (path, length, error))
    return NULL;

  absolute = g_canonicalize_filename (path, NULL);
  self->path = g_strdup (path);
  self->dir = g_path_get_dirname (absolute);
  self->hash = g_compute_checksum_for_data (G_CHECKSUM_SHA256,
                                            (const guchar *) data, length);

  doc = parse_xml (data, length, path, error);
  if (doc == NULL)
    return NULL;
  /* The format version is checked on its own, before the schema, so that
   * a file written for a newer elk gets a message that says so. */
  {
    xmlNode *root = xmlDocGetRootElement (doc);
    g_autofree char *format = root != NULL ? get_prop (root, "format") : NULL;
    if (format != NULL && strcmp (format, "1") != 0)
      {
        g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_SCHEMA,
                     "%s:%ld: unsupported experiment format '%s' (this elk "
                     "reads format 1)", path, xmlGetLineNo (root), format);
        return NULL;
      }
  }
  if (!validate_schema (doc, path, error))
    return NULL;
  if (!load_document (self, registry, doc, error))
    return NULL;
  if (self->output_dir == NULL)
    self->output_dir = g_build_filename ("results", self->name, NULL);
  return g_steal_pointer (&self);
}

/**
 * elk_experiment_load:
 * @path: (type filename): an experiment file
 * @registry: the registry plugins are looked up in
 * @error: return location for a #GError
 *
 * Loads an experiment file and validates all of it before anything runs:
 * the schema, every plugin it names and every <param> value against the
 * plugin's property.  Errors name the file, the line and the parameter.
 *
 * Returns: (transfer full) (nullable): the validated experiment, or %NULL
 *   with @error set in the %ELK_EXPERIMENT_ERROR domain.
 */
ElkExperiment *
elk_experiment_load (const char *path, ElkRegistry *registry, GError **error)
{
  g_autofree char *data = NULL;
  g_autoptr (GError) local_error = NULL;
  gsize length = 0;
  GStatBuf st;

  /* Experiment files are small; anything huge (or endless, like a FIFO or
   * /dev/zero) is refused before it is read. */
  if (g_stat (path, &st) == 0 && !S_ISREG (st.st_mode))
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_IO,
                   "%s: not a regular file", path);
      return NULL;
    }
  if (g_stat (path, &st) == 0
      && !check_size_limit (path, (guint64) st.st_size, error))
    return NULL;

  if (!g_file_get_contents (path, &data, &length, &local_error))
    {
      g_set_error (error, ELK_EXPERIMENT_ERROR, ELK_EXPERIMENT_ERROR_IO,
                   "%s: cannot read the experiment: %s", path,
                   local_error->message);
      return NULL;
    }
  return elk_experiment_load_from_data (data, length, path, registry, error);
}

/**
 * elk_experiment_get_path:
 * @self: a loaded experiment
 *
 * Gets the experiment file's path.
 *
 * Returns: (transfer none) (type filename): the experiment file's path, as
 *   given to elk_experiment_load().
 */
const char *
elk_experiment_get_path (ElkExperiment *self)
{
  return self->path;
}

/**
 * elk_experiment_get_name:
 * @self: a loaded experiment
 *
 * Gets the experiment's name.
 *
 * Returns: (transfer none): the experiment's name, from the file.
 */
const char *
elk_experiment_get_name (ElkExperiment *self)
{
  return self->name;
}

/**
 * elk_experiment_get_hash:
 * @self: a loaded experiment
 *
 * Gets the checksum that identifies the experiment in results.
 *
 * Returns: (transfer none): the SHA-256 of the experiment file (changed by
 *   elk_experiment_set_quick()), recorded in results.
 */
const char *
elk_experiment_get_hash (ElkExperiment *self)
{
  return self->hash;
}

/**
 * elk_experiment_can_trace:
 * @self: a loaded experiment
 *
 * Tells whether the experiment's chip can record traces.
 *
 * Returns: whether the experiment's chip backend can record traces.
 */
gboolean
elk_experiment_can_trace (ElkExperiment *self)
{
  return elk_chip_type_can_trace (self->chip->feature->type);
}

/**
 * elk_experiment_set_trace_point:
 * @self: a loaded experiment
 * @point: a point whose run records a trace, or -1 for none
 *
 * Asks for a trace of one point, in addition to any the file asks for.
 * Check elk_experiment_can_trace() first.
 */
void
elk_experiment_set_trace_point (ElkExperiment *self, gint point)
{
  self->trace_point = point;
}

/**
 * elk_experiment_set_output_dir:
 * @self: a loaded experiment
 * @dir: (type filename): where the results of later runs go, relative to
 *   the current folder unless absolute
 *
 * Overrides the output folder the file names, as `elk-run -o` does, for
 * callers that cannot set #ElkRunOptions.output_dir (bindings, where a
 * string field of a plain struct has no owner).  The experiment's hash
 * does not change: the output folder is not part of what a point means.
 */
void
elk_experiment_set_output_dir (ElkExperiment *self, const char *dir)
{
  g_return_if_fail (ELK_IS_EXPERIMENT (self));
  g_return_if_fail (dir != NULL);
  g_free (self->output_dir);
  self->output_dir = g_strdup (dir);
}

/**
 * elk_experiment_set_quick:
 * @self: a loaded experiment
 *
 * Shrinks the experiment to a smoke test, so that every shipped experiment
 * can run in CI: each sweep axis keeps only its first value, and a
 * frontend with a "layers" property builds at most 2 layers.  The
 * experiment's hash changes too, so quick results never mix with full
 * ones in a journal.
 */
void
elk_experiment_set_quick (ElkExperiment *self)
{
  g_autofree char *old = NULL;
  g_autofree char *salted = NULL;

  if (self->quick)
    return;
  self->quick = TRUE;
  old = g_steal_pointer (&self->hash);
  salted = g_strconcat (old, " quick", NULL);
  for (guint a = 0; a < self->axes->len; a++)
    {
      Axis *axis = self->axes->pdata[a];
      g_array_set_size (axis->values, 1);
      g_ptr_array_set_size (axis->texts, 1);
    }
  self->n_points = 1;
  self->hash = g_compute_checksum_for_string (G_CHECKSUM_SHA256, salted, -1);
}

/**
 * elk_experiment_get_n_points:
 * @self: a loaded experiment
 *
 * Counts the experiment points.
 *
 * Returns: the number of experiment points: the product of the sweep axes'
 *   lengths, 1 without a sweep.
 */
guint
elk_experiment_get_n_points (ElkExperiment *self)
{
  return self->n_points;
}

/**
 * elk_experiment_get_n_schedulers:
 * @self: a loaded experiment
 *
 * Counts the schedulers the experiment compares.
 *
 * Returns: the number of schedulers (designs) the experiment compares.
 */
guint
elk_experiment_get_n_schedulers (ElkExperiment *self)
{
  return self->schedulers->len;
}

/**
 * elk_experiment_get_output_dir:
 * @self: a loaded experiment
 *
 * Gets the folder the results go to.
 *
 * Returns: (transfer none) (type filename): the output folder the file
 *   names, resolved against the experiment file's folder.
 */
const char *
elk_experiment_get_output_dir (ElkExperiment *self)
{
  return self->output_dir;
}

/**
 * elk_experiment_get_scheduler_label:
 * @self: a loaded experiment
 * @index: a scheduler index, below elk_experiment_get_n_schedulers()
 *
 * Gets the label of one of the experiment's schedulers.
 *
 * Returns: (transfer none): the label of scheduler @index, which names its
 *   rows in the results.
 */
const char *
elk_experiment_get_scheduler_label (ElkExperiment *self, guint index)
{
  g_return_val_if_fail (index < self->schedulers->len, NULL);
  return ((Component *) self->schedulers->pdata[index])->label;
}

/* The value index of each axis for a point: the last axis varies
 * fastest, so points of a sweep are listed as nested loops read. */
static guint
axis_index (ElkExperiment *self, guint point, guint axis)
{
  guint stride = 1;
  for (guint a = self->axes->len; a > axis + 1; a--)
    stride *= ((Axis *) self->axes->pdata[a - 1])->values->len;
  return (point / stride)
         % ((Axis *) self->axes->pdata[axis])->values->len;
}

/**
 * elk_experiment_dup_point_label:
 * @self: a loaded experiment
 * @point: a point, below elk_experiment_get_n_points()
 *
 * Describes an experiment point by its sweep values.
 *
 * Returns: (transfer full): the point's sweep values, as
 *   "frontend.batch=32 chip.hbm-bw-gbps=8000", or "" for an experiment
 *   without sweep.  Free it with g_free().
 */
char *
elk_experiment_dup_point_label (ElkExperiment *self, guint point)
{
  GString *s = g_string_new (NULL);
  for (guint a = 0; a < self->axes->len; a++)
    {
      Axis *axis = self->axes->pdata[a];
      g_string_append_printf (s, "%s%s=%s", a > 0 ? " " : "", axis->text,
                              (const char *) axis->texts->pdata[
                                axis_index (self, point, a)]);
    }
  return g_string_free (s, FALSE);
}

const char *
elk__experiment_axis_value_text (ElkExperiment *self, guint point, guint a);
const char *
elk__experiment_axis_value_text (ElkExperiment *self, guint point, guint a)
{
  Axis *axis = self->axes->pdata[a];
  return axis->texts->pdata[axis_index (self, point, a)];
}

Component *
elk__experiment_allocator_for (ElkExperiment *self, guint scheduler_index)
{
  Component *s = self->schedulers->pdata[scheduler_index];
  return s->allocator != NULL ? s->allocator : self->allocator;
}

/**
 * elk_experiment_create_component:
 * @self: a loaded experiment
 * @point: the experiment point, below elk_experiment_get_n_points()
 * @kind: %ELK_TYPE_FRONTEND, %ELK_TYPE_CHIP, %ELK_TYPE_SCHEDULER or
 *   %ELK_TYPE_ALLOCATOR (inside libelk also the <plans> type)
 * @scheduler_index: for schedulers and allocators, which scheduler
 * @error: return location for a #GError
 *
 * Instantiates a component with its <param>s and the point's sweep values.
 * Plugins check combinations of properties when they are used (load,
 * dup_spec, schedule), where they can report errors.
 *
 * Returns: (transfer full) (nullable): the object, or %NULL with @error
 *   set.
 */
GObject *
elk_experiment_create_component (ElkExperiment *self,
                                 guint point,
                                 GType kind,
                                 guint scheduler_index,
                                 GError **error)
{
  Component *c;
  g_autoptr (GPtrArray) names = g_ptr_array_new ();
  g_autoptr (GArray) values = g_array_new (FALSE, TRUE, sizeof (GValue));
  GObject *object;

  g_return_val_if_fail (point < self->n_points, NULL);

  if (kind == ELK_TYPE_FRONTEND)
    c = self->frontend;
  else if (kind == ELK_TYPE_CHIP)
    c = self->chip;
  else if (kind == ELK_TYPE_SCHEDULER)
    c = self->schedulers->pdata[scheduler_index];
  else if (kind == ELK_TYPE_PLAN_PARAMS)
    c = self->plans;
  else
    c = elk__experiment_allocator_for (self, scheduler_index);

  for (guint i = 0; i < c->params->len; i++)
    {
      ParamEntry *entry = c->params->pdata[i];
      gboolean swept = FALSE;
      for (guint a = 0; a < self->axes->len; a++)
        {
          Axis *axis = self->axes->pdata[a];
          if (axis->component == c
              && strcmp (axis->property, entry->name) == 0)
            swept = TRUE;
        }
      if (swept)
        continue;
      g_ptr_array_add (names, entry->name);
      g_array_append_vals (values, &entry->value, 1);
    }
  for (guint a = 0; a < self->axes->len; a++)
    {
      Axis *axis = self->axes->pdata[a];
      if (axis->component != c)
        continue;
      g_ptr_array_add (names, axis->property);
      g_array_append_vals (values,
                           &g_array_index (axis->values, GValue,
                                           axis_index (self, point, a)),
                           1);
    }

  object = g_object_new_with_properties (c->feature->type, names->len,
                                         (const char **) names->pdata,
                                         (const GValue *) values->data);

  /* Quick runs cap the model at 2 layers where the frontend has a
   * "layers" property (0 meaning all, by the llama frontend's
   * convention). */
  if (self->quick && kind == ELK_TYPE_FRONTEND)
    {
      GParamSpec *pspec = g_object_class_find_property (
        G_OBJECT_GET_CLASS (object), "layers");
      if (pspec != NULL && G_IS_PARAM_SPEC_UINT (pspec)
          && G_PARAM_SPEC_UINT (pspec)->maximum >= 2)
        {
          guint layers;
          g_object_get (object, "layers", &layers, NULL);
          if (layers == 0 || layers > 2)
            g_object_set (object, "layers", MAX (2u,
                          G_PARAM_SPEC_UINT (pspec)->minimum), NULL);
        }
    }
  return object;
}
