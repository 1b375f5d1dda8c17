/* elk-onnx-describe.c: what a model needs before an experiment can use it
 * (elk-onnx-info's report).
 *
 * The report lists the model's opsets, its inputs with their symbolic
 * dimensions and a suggested binding for each, the operator counts, and
 * the nodes elk cannot import with the reason.  The nodes are found by a
 * survey: the loader's passes run with the suggested binding, and instead
 * of stopping at the first failing node they record it and skip the nodes
 * that read its outputs, so that one run lists every unsupported node.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "elk-onnx-private.h"

typedef struct
{
  char *name;  /* the symbol, or "<input>:<axis>" for an anonymous one */
  char *where; /* first use, "input[axis]" */
  gint64 value;
  const char *why;
} Symbol;

static void
symbol_free (gpointer data)
{
  Symbol *s = data;
  g_free (s->name);
  g_free (s->where);
  g_free (s);
}

/* A loader message without the file name it starts with. */
static const char *
without_path (const char *message, const char *path)
{
  gsize len = strlen (path);
  if (strncmp (message, path, len) == 0
      && strncmp (message + len, ": ", 2) == 0)
    return message + len + 2;
  return message;
}

static gboolean
name_has (const char *lower, const char *const *words)
{
  for (guint i = 0; words[i] != NULL; i++)
    if (strstr (lower, words[i]) != NULL)
      return TRUE;
  return FALSE;
}

/* The suggested value of a symbolic dimension, from its name, or for an
 * anonymous one from its place.  The values are the ones a first
 * experiment usually wants (one sample; BERT's 128 tokens; ImageNet's 224
 * pixels), printed with the reason so that the user can change them. */
static gint64
suggest (const char *name,
         gboolean anonymous,
         guint axis,
         const Onnx__TypeProto__Tensor *tt,
         const char **why)
{
  static const char *const batch[] = { "batch", NULL };
  static const char *const seq[]
      = { "seq",      "len",  "token", "time", "step",
          "position", "past", "total", NULL };
  static const char *const side[] = { "height", "width", NULL };
  g_autofree char *lower = g_ascii_strdown (name, -1);

  if (anonymous)
    {
      if (axis == 0)
        {
          *why = "anonymous axis 0, taken as the batch";
          return 1;
        }
      if (axis == 1 && tt->shape->n_dim == 2
          && elk__onnx_is_int_dtype (tt->elem_type))
        {
          *why = "anonymous axis 1 of integer ids, taken as tokens";
          return 128;
        }
      *why = "anonymous, no hint";
      return 1;
    }
  if (name_has (lower, batch) || strcmp (lower, "n") == 0
      || strcmp (lower, "b") == 0 || strcmp (lower, "bs") == 0)
    {
      *why = "a batch";
      return 1;
    }
  if (name_has (lower, seq))
    {
      *why = "a sequence length";
      return 128;
    }
  if (name_has (lower, side) || strcmp (lower, "h") == 0
      || strcmp (lower, "w") == 0)
    {
      *why = "an image side";
      return 224;
    }
  *why = "no hint in the name";
  return 1;
}

static gboolean
is_initializer_name (const Onnx__GraphProto *g, const char *name)
{
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name != NULL
        && strcmp (g->initializer[i]->name, name) == 0)
      return TRUE;
  return FALSE;
}

/* The symbolic dimensions of the graph inputs, in order of first use, each
 * with the user's binding or a suggestion. */
static GPtrArray *
collect_symbols (Loader *l)
{
  const Onnx__GraphProto *g = l->model->graph;
  GPtrArray *symbols = g_ptr_array_new_with_free_func (symbol_free);
  g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);

  for (size_t i = 0; i < g->n_input; i++)
    {
      const Onnx__ValueInfoProto *vi = g->input[i];
      const Onnx__TypeProto__Tensor *tt;

      if (vi->name == NULL || is_initializer_name (g, vi->name)
          || vi->type == NULL
          || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
          || vi->type->tensor_type->shape == NULL)
        continue;
      tt = vi->type->tensor_type;
      for (size_t d = 0; d < tt->shape->n_dim; d++)
        {
          const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
          gboolean anonymous;
          Symbol *s;
          gint64 *bound;

          if (dim->value_case
              == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            continue;
          s = g_new0 (Symbol, 1);
          anonymous
              = dim->value_case
                    != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                || dim->dim_param == NULL || *dim->dim_param == '\0';
          s->name = anonymous ? g_strdup_printf ("%s:%zu", vi->name, d)
                              : g_strdup (dim->dim_param);
          if (g_hash_table_contains (seen, s->name))
            {
              symbol_free (s);
              continue;
            }
          s->where = g_strdup_printf ("%s[%zu]", vi->name, d);
          bound = g_hash_table_lookup (l->bindings, s->name);
          if (bound != NULL)
            {
              s->value = *bound;
              s->why = "bound by dims";
            }
          else
            s->value = suggest (s->name, anonymous, (guint) d, tt, &s->why);
          g_ptr_array_add (symbols, s);
          g_hash_table_add (seen, s->name);
        }
    }
  return symbols;
}

static void
print_header (Loader *l, GString *out)
{
  const Onnx__ModelProto *m = l->model;
  const Onnx__GraphProto *g = m->graph;

  g_string_append_printf (out, "model: %s\n", l->path);
  if (m->has_ir_version)
    g_string_append_printf (out, "  ir version: %" G_GINT64_FORMAT "\n",
                            (gint64) m->ir_version);
  if (m->producer_name != NULL && *m->producer_name != '\0')
    g_string_append_printf (out, "  producer: %s%s%s\n", m->producer_name,
                            m->producer_version != NULL
                                    && *m->producer_version != '\0'
                                ? " "
                                : "",
                            m->producer_version != NULL ? m->producer_version
                                                        : "");
  g_string_append (out, "  opsets:");
  for (size_t i = 0; i < m->n_opset_import; i++)
    {
      const Onnx__OperatorSetIdProto *o = m->opset_import[i];
      const char *d
          = o->domain != NULL && *o->domain != '\0' ? o->domain : "ai.onnx";
      g_string_append_printf (out, "%s %s %" G_GINT64_FORMAT, i ? "," : "", d,
                              (gint64) (o->has_version ? o->version : 1));
    }
  g_string_append_printf (out, "%s\n", m->n_opset_import ? "" : " none");
  if (g != NULL)
    g_string_append_printf (out, "  nodes: %zu, initializers: %zu\n", g->n_node,
                            g->n_initializer);
}

static const char *
dim_text (const Onnx__TensorShapeProto__Dimension *dim,
          char *buf,
          gsize size,
          const char *input,
          size_t axis)
{
  if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
    g_snprintf (buf, size, "%" G_GINT64_FORMAT, (gint64) dim->dim_value);
  else if (dim->value_case
               == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
           && dim->dim_param != NULL && *dim->dim_param != '\0')
    g_snprintf (buf, size, "%s", dim->dim_param);
  else
    g_snprintf (buf, size, "%s:%zu", input, axis);
  return buf;
}

/* The graph inputs that are model inputs, one a line; the ones used as
 * weights (graph-only exports list every weight as an input) are only
 * counted.  @decided: shape inference ran, so which is which is known. */
static void
print_inputs (Loader *l, gboolean decided, GString *out)
{
  const Onnx__GraphProto *g = l->model->graph;
  guint n_weights = 0;

  g_string_append (out, "\ninputs:\n");
  for (size_t i = 0; i < g->n_input; i++)
    {
      const Onnx__ValueInfoProto *vi = g->input[i];
      const Onnx__TypeProto__Tensor *tt;
      Value *v;
      char buf[128];

      if (vi->name == NULL || is_initializer_name (g, vi->name))
        continue;
      v = elk__onnx_lookup_value (l, vi->name);
      if (decided && v != NULL && i < l->input_is_data->len
          && !g_array_index (l->input_is_data, gboolean, i))
        {
          n_weights++;
          continue;
        }
      g_string_append_printf (out, "  %-24s", vi->name);
      if (vi->type == NULL
          || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        {
          g_string_append (out, " (not a tensor)\n");
          continue;
        }
      tt = vi->type->tensor_type;
      g_string_append_printf (out, " %-8s",
                              elk__onnx_dtype_name (tt->elem_type));
      if (tt->shape == NULL)
        {
          g_string_append (out, " (no shape)\n");
          continue;
        }
      g_string_append (out, " [");
      for (size_t d = 0; d < tt->shape->n_dim; d++)
        g_string_append_printf (out, "%s%s", d ? ", " : "",
                                dim_text (tt->shape->dim[d], buf, sizeof buf,
                                          vi->name, d));
      g_string_append (out, "]\n");
    }
  if (n_weights > 0)
    g_string_append_printf (out, "  (and %u graph input%s used as weight%s)\n",
                            n_weights, n_weights > 1 ? "s" : "",
                            n_weights > 1 ? "s" : "");
}

/* Returns the binding the survey uses, "name=value,...". */
static char *
print_symbols (GPtrArray *symbols, GString *out)
{
  GString *dims = g_string_new (NULL);

  g_string_append (out, "\nsymbolic dimensions:");
  if (symbols->len == 0)
    g_string_append (out, " none\n");
  else
    g_string_append (out, "\n");
  for (guint i = 0; i < symbols->len; i++)
    {
      const Symbol *s = g_ptr_array_index (symbols, i);
      g_string_append_printf (out,
                              "  %-20s first in %-24s suggested "
                              "%" G_GINT64_FORMAT " (%s)\n",
                              s->name, s->where, s->value, s->why);
      g_string_append_printf (dims, "%s%s=%" G_GINT64_FORMAT, i ? "," : "",
                              s->name, s->value);
    }
  if (symbols->len > 0)
    g_string_append_printf (out, "  suggested binding: dims=\"%s\"\n",
                            dims->str);
  return g_string_free (dims, FALSE);
}

typedef struct
{
  char *op;
  guint count;
  const char *support; /* NULL: elk has the operator */
} OpCount;

static int
compare_counts (gconstpointer a, gconstpointer b)
{
  const OpCount *x = a, *y = b;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return strcmp (x->op, y->op);
}

static void
print_operators (Loader *l, GString *out)
{
  const Onnx__GraphProto *g = l->model->graph;
  g_autoptr (GHashTable) index = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GArray) counts = g_array_new (FALSE, TRUE, sizeof (OpCount));

  for (size_t i = 0; i < g->n_node; i++)
    {
      const Onnx__NodeProto *p = g->node[i];
      const char *d = p->domain != NULL ? p->domain : "";
      gboolean foreign = *d != '\0' && strcmp (d, "ai.onnx") != 0;
      char *key = foreign ? g_strdup_printf ("%s:%s", d, p->op_type)
                          : g_strdup (p->op_type != NULL ? p->op_type : "");
      gpointer at;

      if (g_hash_table_lookup_extended (index, key, NULL, &at))
        {
          g_array_index (counts, OpCount, GPOINTER_TO_UINT (at)).count++;
          g_free (key);
          continue;
        }
      {
        OpCount c = { key, 1, NULL };
        if (foreign)
          c.support = "unsupported: elk reads the ai.onnx domain only";
        else if (elk__onnx_find_op (key) == NULL)
          c.support = "unsupported: elk has no such operator";
        g_array_append_val (counts, c);
        g_hash_table_insert (index, key, GUINT_TO_POINTER (counts->len - 1));
      }
    }
  g_array_sort (counts, compare_counts);
  g_string_append_printf (out, "\noperators: %u type%s\n", counts->len,
                          counts->len != 1 ? "s" : "");
  for (guint i = 0; i < counts->len; i++)
    {
      OpCount *c = &g_array_index (counts, OpCount, i);
      g_string_append_printf (out, "  %6u  %s%s%s\n", c->count, c->op,
                              c->support != NULL ? "  " : "",
                              c->support != NULL ? c->support : "");
      g_free (c->op);
    }
}

/* Runs the passes as a survey with @dims and reports the model inputs,
 * then the unsupported nodes or what the import gives.  Errors of a
 * malformed model go to @error; an unsupported model is part of the
 * report. */
static gboolean
survey (
    Loader *l, const char *dims, GString *inputs, GString *out, GError **error)
{
  g_autoptr (GPtrArray) issues
      = g_ptr_array_new_with_free_func (elk__onnx_issue_free);
  guint n_skipped = 0;

  if (!elk__onnx_load_initializers (l, error)
      || !elk__onnx_load_inputs (l, error) || !elk__onnx_load_nodes (l, error)
      || !elk__onnx_check_outputs (l, FALSE, error))
    return FALSE;
  elk__onnx_infer_all (l, issues, NULL);
  if (issues->len == 0)
    {
      elk__onnx_count_weight_inputs (l);
      elk__onnx_fuse_patterns (l);
      elk__onnx_lower_all (l, issues, NULL);
    }
  /* Which graph inputs are weights is known once every node is inferred. */
  print_inputs (l, issues->len == 0, inputs);
  if (*dims != '\0')
    g_string_append_printf (out, "\ncheck with dims=\"%s\":\n", dims);
  else
    g_string_append (out, "\ncheck:\n");
  for (guint i = 0; i < l->nodes->len; i++)
    n_skipped += ((Node *) g_ptr_array_index (l->nodes, i))->failed;
  n_skipped -= issues->len;
  if (issues->len > 0)
    {
      g_string_append_printf (out, "  %u unsupported node%s:\n", issues->len,
                              issues->len > 1 ? "s" : "");
      for (guint i = 0; i < issues->len; i++)
        {
          const Issue *issue = g_ptr_array_index (issues, i);
          g_string_append_printf (out, "    %s\n", issue->reason);
        }
      if (n_skipped > 0)
        g_string_append_printf (out,
                                "  %u node%s after them (reading "
                                "their outputs) not checked\n",
                                n_skipped, n_skipped > 1 ? "s" : "");
      return TRUE;
    }
  if (elk_graph_get_n_ops (l->graph) == 0)
    {
      g_string_append (out, "  nothing to compile: every node is a layout "
                            "or constant operator, which elk folds away\n");
      return TRUE;
    }
  g_string_append_printf (out,
                          "  imports: %u elk operators, %.4g GFLOP, "
                          "%" G_GUINT64_FORMAT " parameters\n",
                          elk_graph_get_n_ops (l->graph),
                          elk_graph_get_total_flops (l->graph) / 1e9,
                          l->n_params);
  return TRUE;
}

/**
 * elk__onnx_describe:
 * @path: the .onnx file
 * @options: (nullable): loader options; their dims bind symbolic dimensions
 *   (the others get suggested values)
 * @error: return location for a #GError
 *
 * Returns: (transfer full) (nullable): the report, or %NULL with @error
 *   set (naming the file) when it cannot be read or is malformed.
 */
char *
elk__onnx_describe (const char *path,
                    const OnnxOptions *options,
                    GError **error)
{
  Loader l = { 0 };
  GString *out = g_string_new (NULL);
  g_autoptr (GString) inputs = g_string_new (NULL);
  g_autoptr (GString) rest = g_string_new (NULL);
  g_autoptr (GPtrArray) symbols = NULL;
  g_autofree char *dims = NULL;
  g_autoptr (GError) model_error = NULL;
  gboolean ok = FALSE;

  g_return_val_if_fail (path != NULL, NULL);

  if (!elk__onnx_loader_open (&l, path, options, error))
    goto out;
  print_header (&l, out);
  if (!elk__onnx_check_model (&l, &model_error))
    {
      /* A model elk refuses as a whole (no graph, an unsupported IR
       * version or opset) still gets what the file says about it. */
      if (l.model->graph == NULL
          || g_error_matches (model_error, ELK_GRAPH_ERROR,
                              ELK_GRAPH_ERROR_LIMIT))
        {
          g_propagate_error (error, g_steal_pointer (&model_error));
          goto out;
        }
      print_inputs (&l, FALSE, out);
      print_operators (&l, out);
      g_string_append_printf (out, "\ncannot be imported: %s\n",
                              without_path (model_error->message, path));
      ok = TRUE;
      goto out;
    }
  if (!elk__onnx_parse_dims (&l, error))
    goto out;
  symbols = collect_symbols (&l);
  dims = print_symbols (symbols, rest);
  print_operators (&l, rest);
  /* The survey binds every symbol: the user's values, then suggestions. */
  g_hash_table_remove_all (l.bindings);
  l.opts.dims = dims;
  ok = elk__onnx_parse_dims (&l, error)
       && survey (&l, dims, inputs, rest, error);
  g_string_append_len (out, inputs->str, inputs->len);
  g_string_append_len (out, rest->str, rest->len);

out:
  elk__onnx_loader_clear (&l);
  if (!ok)
    {
      g_string_free (out, TRUE);
      return NULL;
    }
  return g_string_free (out, FALSE);
}
