/* elk-report-results.c: reading results.json into a table.
 *
 * The table keeps every column that any row has, in first-seen order, so
 * that columns added to elk-run later show up in the report without a
 * change here.  Cells keep their JSON kind: a null stays empty and is never
 * read as zero, which is what keeps failed rows out of the plots.
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <json-glib/json-glib.h>

#include "elk-report-private.h"

static void
value_clear (ReportValue *value)
{
  g_clear_pointer (&value->string, g_free);
}

void
elk__results_free (ReportResults *results)
{
  if (results == NULL)
    return;
  for (guint i = 0; i < results->rows->len; i++)
    {
      ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      for (guint c = 0; c < results->columns->len; c++)
        value_clear (&row->values[c]);
      g_free (row->values);
      if (row->breakdown != NULL)
        g_array_unref (row->breakdown);
    }
  g_array_unref (results->rows);
  g_ptr_array_unref (results->plugins);
  g_ptr_array_unref (results->columns);
  g_hash_table_unref (results->column_index);
  g_ptr_array_unref (results->axes);
  g_ptr_array_unref (results->designs);
  g_ptr_array_unref (results->configs);
  g_array_unref (results->config_points);
  g_ptr_array_unref (results->op_groups);
  g_free (results->elk_version);
  g_free (results->experiment);
  g_free (results->experiment_sha256);
  g_free (results);
}

int
elk__results_column (const ReportResults *results, const char *name)
{
  gpointer index = g_hash_table_lookup (results->column_index, name);
  return index != NULL ? GPOINTER_TO_INT (index) - 1 : -1;
}

const ReportValue *
elk__row_get (const ReportResults *results, const ReportRow *row, int column)
{
  if (column < 0 || (guint) column >= results->columns->len)
    return NULL;
  return &row->values[column];
}

double
elk__row_number (const ReportResults *results,
                 const ReportRow *row,
                 const char *column)
{
  const ReportValue *value
    = elk__row_get (results, row, elk__results_column (results, column));
  if (value == NULL || value->kind != REPORT_VALUE_NUMBER)
    return NAN;
  return value->number;
}

char *
elk__value_to_text (const ReportValue *value)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  if (value == NULL || value->kind == REPORT_VALUE_NONE)
    return g_strdup ("");
  if (value->kind == REPORT_VALUE_STRING)
    return g_strdup (value->string);
  /* elk-run writes 9 significant digits; printing them the same way gives
   * back the text of the file ("2048", "1.6777216e+13"). */
  g_ascii_formatd (buf, sizeof buf, "%.9g", value->number);
  return g_strdup (buf);
}

gboolean
elk__results_column_is_numeric (const ReportResults *results, int column)
{
  gboolean any = FALSE;

  for (guint i = 0; i < results->rows->len; i++)
    {
      const ReportRow *row = &g_array_index (results->rows, ReportRow, i);
      const ReportValue *value = elk__row_get (results, row, column);
      if (value == NULL || value->kind == REPORT_VALUE_NONE)
        continue;
      if (value->kind != REPORT_VALUE_NUMBER)
        return FALSE;
      any = TRUE;
    }
  return any;
}

static guint
add_column (ReportResults *results, const char *name)
{
  int index = elk__results_column (results, name);

  if (index >= 0)
    return index;
  g_ptr_array_add (results->columns, g_strdup (name));
  g_hash_table_insert (results->column_index,
                       results->columns->pdata[results->columns->len - 1],
                       GINT_TO_POINTER (results->columns->len));
  return results->columns->len - 1;
}

static gboolean
read_value (JsonNode *node,
            ReportValue *value,
            const char *path,
            guint row,
            const char *column,
            GError **error)
{
  if (JSON_NODE_HOLDS_NULL (node))
    {
      value->kind = REPORT_VALUE_NONE;
      return TRUE;
    }
  if (JSON_NODE_HOLDS_VALUE (node))
    {
      GType type = json_node_get_value_type (node);
      if (type == G_TYPE_INT64 || type == G_TYPE_DOUBLE)
        {
          value->kind = REPORT_VALUE_NUMBER;
          value->number = json_node_get_double (node);
          return TRUE;
        }
      if (type == G_TYPE_STRING)
        {
          value->kind = REPORT_VALUE_STRING;
          value->string = g_strdup (json_node_get_string (node));
          return TRUE;
        }
      if (type == G_TYPE_BOOLEAN)
        {
          value->kind = REPORT_VALUE_STRING;
          value->string = g_strdup (json_node_get_boolean (node) ? "true"
                                                                 : "false");
          return TRUE;
        }
    }
  g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS,
               "%s: row %u, column '%s': expected a number, a string or "
               "null", path, row, column);
  return FALSE;
}

static char *
get_string_member (JsonObject *object,
                   const char *member,
                   const char *path,
                   GError **error)
{
  JsonNode *node = json_object_get_member (object, member);

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node)
      || json_node_get_value_type (node) != G_TYPE_STRING)
    {
      g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS,
                   "%s: expected a string member '%s' at the top level",
                   path, member);
      return NULL;
    }
  return g_strdup (json_node_get_string (node));
}

/* The configuration of a point is the text of its axis values; with no
 * axes every row shares one configuration, named after the experiment. */
static char *
config_text (ReportResults *results, const ReportRow *row)
{
  GString *text = g_string_new (NULL);

  for (guint a = 0; a < results->axes->len; a++)
    {
      const ReportValue *value = elk__row_get (
        results, row, elk__results_column (results, results->axes->pdata[a]));
      g_autofree char *cell = elk__value_to_text (value);
      if (a > 0)
        g_string_append (text, " / ");
      g_string_append (text, cell);
    }
  if (results->axes->len == 0)
    g_string_append (text, results->experiment);
  return g_string_free (text, FALSE);
}

static guint
intern (GPtrArray *names, const char *name)
{
  for (guint i = 0; i < names->len; i++)
    if (strcmp (names->pdata[i], name) == 0)
      return i;
  g_ptr_array_add (names, g_strdup (name));
  return names->len - 1;
}

/* The plugins member: one line of text per plugin. */
static gboolean
read_plugins (ReportResults *results, JsonObject *top, const char *path,
              GError **error)
{
  JsonNode *node;

  node = json_object_get_member (top, "plugins");
  if (node == NULL || !JSON_NODE_HOLDS_ARRAY (node))
    {
      g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS,
                   "%s: expected an array member 'plugins'", path);
      return FALSE;
    }
  for (guint i = 0; i < json_array_get_length (json_node_get_array (node));
       i++)
    {
      JsonNode *item = json_array_get_element (json_node_get_array (node), i);
      JsonObject *plugin;
      /* {"name", "version", "abi", "file", "sha256"}; older results
       * have one "name version (abi N)" string. */
      if (JSON_NODE_HOLDS_VALUE (item)
          && json_node_get_value_type (item) == G_TYPE_STRING)
        {
          g_ptr_array_add (results->plugins,
                           g_strdup (json_node_get_string (item)));
          continue;
        }
      plugin = JSON_NODE_HOLDS_OBJECT (item) ? json_node_get_object (item)
                                             : NULL;
      if (plugin == NULL
          || json_object_get_string_member_with_default (plugin, "name", NULL)
               == NULL)
        {
          g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS,
                       "%s: plugins[%u] is not a plugin object with a "
                       "'name'", path, i);
          return FALSE;
        }
      g_ptr_array_add (
        results->plugins,
        g_strdup_printf (
          "%s %s (abi %" G_GINT64_FORMAT "), %s, sha256 %s",
          json_object_get_string_member_with_default (plugin, "name", "?"),
          json_object_get_string_member_with_default (plugin, "version", "?"),
          json_object_get_int_member_with_default (plugin, "abi", 0),
          json_object_get_string_member_with_default (plugin, "file", "?"),
          json_object_get_string_member_with_default (plugin, "sha256",
                                                      "?")));
    }
  return TRUE;
}

/* Every column any row has, in order of first appearance, and the sweep
 * axes among them (see elk__results_load()). */
static gboolean
read_columns (ReportResults *results, JsonArray *rows, const char *const *axes,
              const char *path, GError **error)
{
  /* Columns first, so that every row gets a cell for each. */
  for (guint i = 0; i < json_array_get_length (rows); i++)
    {
      JsonNode *item = json_array_get_element (rows, i);
      JsonObjectIter iter;
      const char *name;

      if (!JSON_NODE_HOLDS_OBJECT (item))
        {
          g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS,
                       "%s: rows[%u] is not an object", path, i);
          return FALSE;
        }
      JsonNode *member;

      json_object_iter_init_ordered (&iter, json_node_get_object (item));
      while (json_object_iter_next_ordered (&iter, &name, &member))
        if (JSON_NODE_HOLDS_OBJECT (member))
          {
            /* A record ("routing": the speculation on a mixture of
             * experts' experts) is one column per member, named
             * "<record>_<member>" as in results.csv. */
            JsonObjectIter sub;
            const char *key;
            json_object_iter_init_ordered (&sub, json_node_get_object (member));
            while (json_object_iter_next_ordered (&sub, &key, NULL))
              {
                g_autofree char *column = g_strdup_printf ("%s_%s", name, key);
                add_column (results, column);
              }
          }
        else if (strcmp (name, "breakdown") != 0)
          add_column (results, name);
    }

  if (axes != NULL)
    {
      for (guint a = 0; axes[a] != NULL; a++)
        g_ptr_array_add (results->axes, g_strdup (axes[a]));
    }
  else
    {
      for (guint c = 0; c < results->columns->len; c++)
        if (strchr (results->columns->pdata[c], '.') != NULL)
          g_ptr_array_add (results->axes, g_strdup (results->columns->pdata[c]));
    }

  for (const char *const *need
       = (const char *const[]){ "point", "label", "status", NULL };
       *need != NULL; need++)
    if (json_array_get_length (rows) > 0
        && elk__results_column (results, *need) < 0)
      {
        g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS,
                     "%s: the rows have no '%s' column", path, *need);
        return FALSE;
      }
  return TRUE;
}

/* The names of ElkTimeComponent, in its order (libelk's
 * elk_time_component_to_string(); the report does not link libelk). */
const char *const elk__time_components[ELK_REPORT_N_COMPONENTS] = {
  "compute", "shift", "output", "relayout", "sync", "stall", "preload-wait",
};

/* A record member of a row (see read_columns()): its members into their
 * "<record>_<member>" columns. */
static gboolean
read_record (ReportResults *results,
             ReportRow *row,
             const char *record,
             JsonObject *object,
             const char *path,
             guint i,
             GError **error)
{
  JsonObjectIter iter;
  const char *key;
  JsonNode *member;

  json_object_iter_init_ordered (&iter, object);
  while (json_object_iter_next_ordered (&iter, &key, &member))
    {
      g_autofree char *column = g_strdup_printf ("%s_%s", record, key);
      if (!read_value (member,
                       &row->values[elk__results_column (results, column)],
                       path, i, column, error))
        return FALSE;
    }
  return TRUE;
}

/* A row's "breakdown": null, or a list of {group, component, seconds}. */
static gboolean
read_breakdown (ReportResults *results,
                JsonNode *node,
                GArray **out,
                const char *path,
                guint row,
                GError **error)
{
  JsonArray *array;

  if (JSON_NODE_HOLDS_NULL (node))
    return TRUE;
  if (!JSON_NODE_HOLDS_ARRAY (node))
    goto bad;
  array = json_node_get_array (node);
  *out = g_array_new (FALSE, FALSE, sizeof (ReportBreakdownCell));
  for (guint k = 0; k < json_array_get_length (array); k++)
    {
      JsonNode *item = json_array_get_element (array, k);
      JsonObject *cell
          = JSON_NODE_HOLDS_OBJECT (item) ? json_node_get_object (item) : NULL;
      JsonNode *seconds
          = cell != NULL ? json_object_get_member (cell, "seconds") : NULL;
      const char *group, *component;
      ReportBreakdownCell c = { 0 };

      if (cell == NULL || seconds == NULL || !JSON_NODE_HOLDS_VALUE (seconds)
          || (json_node_get_value_type (seconds) != G_TYPE_DOUBLE
              && json_node_get_value_type (seconds) != G_TYPE_INT64))
        goto bad;
      group = json_object_get_string_member_with_default (cell, "group", NULL);
      component = json_object_get_string_member_with_default (cell, "component",
                                                              NULL);
      if (group == NULL || component == NULL)
        goto bad;
      c.component = ELK_REPORT_N_COMPONENTS;
      for (guint n = 0; n < ELK_REPORT_N_COMPONENTS; n++)
        if (strcmp (component, elk__time_components[n]) == 0)
          c.component = n;
      if (c.component == ELK_REPORT_N_COMPONENTS)
        {
          g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS,
                       "%s: rows[%u].breakdown[%u]: unknown component '%s' "
                       "(expected compute, shift, output, relayout, sync, "
                       "stall or preload-wait)",
                       path, row, k, component);
          return FALSE;
        }
      c.group = intern (results->op_groups, group);
      c.seconds = json_node_get_double (seconds);
      g_array_append_val (*out, c);
    }
  return TRUE;

bad:
  g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS,
               "%s: rows[%u].breakdown: expected null or a list of "
               "{\"group\", \"component\", \"seconds\"} objects",
               path, row);
  return FALSE;
}

/* Row @i: its cells, point, status, design and configuration. */
static gboolean
read_row (ReportResults *results, JsonObject *object, guint i, const char *path,
          GError **error)
{
  ReportRow row = { 0 };
  const ReportValue *cell;
  g_autofree char *config = NULL;
  guint n_configs;
  JsonObjectIter iter;
  const char *name;
  JsonNode *member;

  row.values = g_new0 (ReportValue, results->columns->len);
  g_array_append_val (results->rows, row);
  json_object_iter_init_ordered (&iter, object);
  while (json_object_iter_next_ordered (&iter, &name, &member))
    if (strcmp (name, "breakdown") == 0
            ? !read_breakdown (results, member, &row.breakdown, path, i, error)
        : JSON_NODE_HOLDS_OBJECT (member)
            ? !read_record (results, &row, name, json_node_get_object (member),
                            path, i, error)
            : !read_value (member,
                           &row.values[elk__results_column (results, name)],
                           path, i, name, error))
      {
        g_array_index (results->rows, ReportRow, i).breakdown = row.breakdown;
        return FALSE;
      }
  /* The table owns the breakdown from here, whatever fails below. */
  g_array_index (results->rows, ReportRow, i).breakdown = row.breakdown;

  cell = elk__row_get (results, &row,
                       elk__results_column (results, "point"));
  if (cell->kind != REPORT_VALUE_NUMBER || cell->number < 0
      || cell->number != floor (cell->number))
    {
      g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS,
                   "%s: rows[%u].point is not a point index", path, i);
      return FALSE;
    }
  row.point = (guint) cell->number;

  cell = elk__row_get (results, &row,
                       elk__results_column (results, "status"));
  row.ok = cell->kind == REPORT_VALUE_STRING
           && strcmp (cell->string, "ok") == 0;
  if (!row.ok)
    results->n_failed++;

  cell = elk__row_get (results, &row,
                       elk__results_column (results, "label"));
  if (cell->kind == REPORT_VALUE_STRING && cell->string[0] != '\0')
    row.design = intern (results->designs, cell->string);
  else
    {
      g_autofree char *text = elk__value_to_text (elk__row_get (
        results, &row, elk__results_column (results, "scheduler")));
      row.design = intern (results->designs, text);
    }

  /* Rows come in point order, so configurations are numbered in point
   * order; two points with the same axis values (which a sweep never
   * makes) would still get a configuration each. */
  config = config_text (results, &row);
  n_configs = results->configs->len;
  if (n_configs > 0
      && g_array_index (results->config_points, guint, n_configs - 1)
           == row.point)
    row.config = n_configs - 1;
  else
    {
      g_ptr_array_add (results->configs, g_steal_pointer (&config));
      g_array_append_val (results->config_points, row.point);
      row.config = results->configs->len - 1;
    }
  g_array_index (results->rows, ReportRow, i) = row;
  return TRUE;
}

/**
 * elk__results_load:
 * @path: results.json
 * @axes: (array zero-terminated=1) (nullable): the sweep axis columns, from
 *   the experiment file; %NULL takes every column whose name has a dot
 *   (axis names are "frontend.x", "chip.x", ...; result columns never have
 *   one)
 */
ReportResults *
elk__results_load (const char *path, const char *const *axes, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (ReportResults) results = g_new0 (ReportResults, 1);
  g_autoptr (GError) local_error = NULL;
  JsonObject *top;
  JsonNode *node;
  JsonArray *rows;

  results->plugins = g_ptr_array_new_with_free_func (g_free);
  results->columns = g_ptr_array_new_with_free_func (g_free);
  results->column_index = g_hash_table_new (g_str_hash, g_str_equal);
  results->rows = g_array_new (FALSE, TRUE, sizeof (ReportRow));
  results->axes = g_ptr_array_new_with_free_func (g_free);
  results->designs = g_ptr_array_new_with_free_func (g_free);
  results->configs = g_ptr_array_new_with_free_func (g_free);
  results->config_points = g_array_new (FALSE, FALSE, sizeof (guint));
  results->op_groups = g_ptr_array_new_with_free_func (g_free);

  if (!json_parser_load_from_mapped_file (parser, path, &local_error))
    {
      if (g_error_matches (local_error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                     "%s: no such file (run elk-run first)", path);
      else
        g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS,
                     "%s: %s", path, local_error->message);
      return NULL;
    }
  node = json_parser_get_root (parser);
  if (node == NULL || !JSON_NODE_HOLDS_OBJECT (node))
    {
      g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS,
                   "%s: expected a JSON object at the top level", path);
      return NULL;
    }
  top = json_node_get_object (node);
  if ((results->elk_version
       = get_string_member (top, "elk_version", path, error))
        == NULL
      || (results->experiment
          = get_string_member (top, "experiment", path, error))
           == NULL
      || (results->experiment_sha256
          = get_string_member (top, "experiment_sha256", path, error))
           == NULL)
    return NULL;

  if (!read_plugins (results, top, path, error))
    return NULL;

  node = json_object_get_member (top, "rows");
  if (node == NULL || !JSON_NODE_HOLDS_ARRAY (node))
    {
      g_set_error (error, ELK_REPORT_ERROR, ELK_REPORT_ERROR_RESULTS,
                   "%s: expected an array member 'rows'", path);
      return NULL;
    }
  rows = json_node_get_array (node);
  if (!read_columns (results, rows, axes, path, error))
    return NULL;
  for (guint i = 0; i < json_array_get_length (rows); i++)
    if (!read_row (results,
                   json_node_get_object (json_array_get_element (rows, i)),
                   i, path, error))
      return NULL;
  return g_steal_pointer (&results);
}
