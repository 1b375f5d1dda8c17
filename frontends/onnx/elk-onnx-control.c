/* elk-onnx-control.c: the control-flow operators If, Loop and Scan.
 *
 * elk compiles one static graph, so control flow is resolved at import.
 * An If whose condition is a constant after shape inference and constant
 * folding (PyTorch and paddle exports keep If on conditions such as "is
 * the batch 1", which the bound dimensions decide) is replaced by the
 * branch it takes: the branch's initializers and nodes become values and
 * nodes of the If node (Node.sub), named "<if>/<name>", inferred at once
 * and lowered in its place.  A branch node that writes one of the branch
 * outputs writes the If's output itself, so the dataflow stays connected;
 * an output the branch takes from elsewhere (an outer value, one of its
 * initializers) becomes a view, as Identity's is.  An If on a condition
 * known only at run time is refused, naming the condition: lowering both
 * branches would charge the chip for work one of them never does.
 *
 * Loop and Scan are refused with the reason; unrolling them is not
 * implemented.
 */
#include "config.h"

#include <string.h>

#include "elk-onnx-private.h"

/* Names a subgraph reads from the scopes around it, including through the
 * subgraphs nested in it, added to @out (names of @out are borrowed from
 * the model). */
static void
graph_captures (const Onnx__GraphProto *g, GHashTable *out)
{
  g_autoptr (GHashTable) local = g_hash_table_new (g_str_hash, g_str_equal);

  for (size_t i = 0; i < g->n_input; i++)
    if (g->input[i]->name != NULL)
      g_hash_table_add (local, g->input[i]->name);
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name != NULL)
      g_hash_table_add (local, g->initializer[i]->name);
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t k = 0; k < g->node[i]->n_output; k++)
      if (g->node[i]->output[k] != NULL)
        g_hash_table_add (local, g->node[i]->output[k]);

  for (size_t i = 0; i < g->n_node; i++)
    {
      const Onnx__NodeProto *p = g->node[i];
      g_autoptr (GHashTable) inner = g_hash_table_new (g_str_hash,
                                                       g_str_equal);
      GHashTableIter it;
      gpointer name;

      for (size_t k = 0; k < p->n_input; k++)
        if (p->input[k] != NULL && *p->input[k] != '\0')
          g_hash_table_add (inner, p->input[k]);
      elk__onnx_node_captures (p, inner);
      g_hash_table_iter_init (&it, inner);
      while (g_hash_table_iter_next (&it, &name, NULL))
        if (!g_hash_table_contains (local, name))
          g_hash_table_add (out, name);
    }
  for (size_t i = 0; i < g->n_output; i++)
    if (g->output[i]->name != NULL && *g->output[i]->name != '\0'
        && !g_hash_table_contains (local, g->output[i]->name))
      g_hash_table_add (out, g->output[i]->name);
}

/**
 * elk__onnx_node_captures:
 * @out: a set of names (borrowed from the model)
 *
 * Adds the names the subgraphs of @p (If branches, Loop and Scan bodies)
 * read from the graph around @p: @p depends on their producers, as on its
 * inputs, although ONNX does not list them as inputs.
 */
void
elk__onnx_node_captures (const Onnx__NodeProto *p, GHashTable *out)
{
  for (size_t i = 0; i < p->n_attribute; i++)
    {
      const Onnx__AttributeProto *a = p->attribute[i];
      if (a->g != NULL)
        graph_captures (a->g, out);
      for (size_t k = 0; k < a->n_graphs; k++)
        graph_captures (a->graphs[k], out);
    }
}

/* A name as the branch sees it: its own values first, then those of the
 * branches around it (innermost first), then the main graph's. */
static Value *
scope_lookup (Loader *l, const char *name)
{
  for (guint i = l->scopes->len; i > 0; i--)
    {
      Value *v = g_hash_table_lookup (g_ptr_array_index (l->scopes, i - 1),
                                      name);
      if (v != NULL)
        return v;
    }
  return elk__onnx_lookup_value (l, name);
}

/* One node of a branch: a Node of @n's, its inputs resolved in the scopes,
 * its outputs new values (or @n's own outputs, from @writes). */
static Node *
branch_node (Loader *l, Node *n, const Onnx__NodeProto *p, guint k,
             GHashTable *scope, GHashTable *writes, GHashTable *names,
             gint producer, GError **error)
{
  Node *m = g_new0 (Node, 1);

  m->p = p;
  m->index = n->index;
  m->layer = -1;
  if (p->name != NULL && *p->name != '\0')
    m->name = g_strdup_printf ("%s/%s", n->name, p->name);
  if (m->name == NULL || g_hash_table_contains (names, m->name))
    {
      g_free (m->name);
      m->name = g_strdup_printf ("%s/%s_%u", n->name, p->op_type, k);
    }
  g_hash_table_add (names, g_strdup (m->name));
  g_ptr_array_add (n->sub, m);

  m->n_in = (guint) p->n_input;
  m->in = g_new0 (Value *, MAX (m->n_in, 1));
  for (guint i = 0; i < m->n_in; i++)
    {
      if (p->input[i] == NULL || *p->input[i] == '\0')
        continue;
      m->in[i] = scope_lookup (l, p->input[i]);
      if (m->in[i] == NULL)
        {
          elk__onnx_node_error (l, n, error, "node '%s' (op %s) of the "
                                "branch reads '%s', which nothing before it "
                                "defines", m->name, p->op_type,
                                p->input[i]);
          return NULL;
        }
      m->in[i]->n_uses++;
    }
  m->n_out = (guint) p->n_output;
  m->out = g_new0 (Value *, MAX (m->n_out, 1));
  for (guint i = 0; i < m->n_out; i++)
    {
      const char *o = p->output[i];
      g_autofree char *scoped = NULL;

      if (o == NULL || *o == '\0')
        continue;
      if (g_hash_table_contains (scope, o))
        {
          elk__onnx_node_error (l, n, error, "its branch writes '%s' twice",
                                o);
          return NULL;
        }
      m->out[i] = g_hash_table_lookup (writes, o);
      if (m->out[i] == NULL)
        {
          scoped = g_strdup_printf ("%s/%s", n->name, o);
          if (elk__onnx_lookup_value (l, scoped) != NULL)
            {
              elk__onnx_node_error (l, n, error, "its branch value '%s' "
                                    "clashes with the graph's '%s'", o,
                                    scoped);
              return NULL;
            }
          m->out[i] = elk__onnx_new_value (l, scoped);
          m->out[i]->producer = producer;
        }
      g_hash_table_insert (scope, (gpointer) o, m->out[i]);
    }
  return m;
}

/* Inlines branch @g into @n and infers it (see the file comment). */
static gboolean
inline_branch (Loader *l, Node *n, const Onnx__GraphProto *g,
               GError **error)
{
  g_autoptr (GHashTable) scope = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GHashTable) writes = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GHashTable) names = g_hash_table_new_full (g_str_hash,
                                                        g_str_equal, g_free,
                                                        NULL);
  g_autoptr (GHashTable) produced = g_hash_table_new (g_str_hash,
                                                      g_str_equal);
  gint producer = -1;
  gboolean ok = TRUE;

  if (g->n_output != n->n_out)
    return elk__onnx_node_error (l, n, error, "its branch '%s' has %zu "
                                 "outputs, the node %u",
                                 g->name != NULL ? g->name : "", g->n_output,
                                 n->n_out);
  for (guint k = 0; k < n->n_out; k++)
    if (n->out[k] != NULL && n->out[k]->producer >= 0)
      producer = n->out[k]->producer;
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t k = 0; k < g->node[i]->n_output; k++)
      if (g->node[i]->output[k] != NULL)
        g_hash_table_add (produced, g->node[i]->output[k]);
  /* Branch outputs that a branch node computes are written straight into
   * the If's outputs. */
  for (guint k = 0; k < n->n_out; k++)
    if (n->out[k] != NULL && g->output[k]->name != NULL
        && g_hash_table_contains (produced, g->output[k]->name)
        && !g_hash_table_contains (writes, g->output[k]->name))
      g_hash_table_insert (writes, g->output[k]->name, n->out[k]);

  if (n->sub == NULL)
    n->sub = g_ptr_array_new_with_free_func (elk__onnx_node_free);
  for (size_t i = 0; i < g->n_initializer && ok; i++)
    {
      const Onnx__TensorProto *tp = g->initializer[i];
      g_autofree char *scoped = g_strdup_printf ("%s/%s", n->name,
                                                 tp->name != NULL ? tp->name
                                                                  : "");
      g_autofree char *what = g_strdup_printf ("initializer '%s' of node "
                                               "'%s'", scoped, n->name);
      Value *v;

      if (tp->name == NULL || *tp->name == '\0'
          || elk__onnx_lookup_value (l, scoped) != NULL)
        return elk__onnx_node_error (l, n, error, "its branch has an "
                                     "initializer without a name, or two "
                                     "with one name");
      v = elk__onnx_new_value (l, scoped);
      ok = elk__onnx_value_from_tensor (l, v, tp, what, error);
      v->kind = VK_PARAM;
      l->n_params += v->n_elements;
      g_hash_table_insert (scope, tp->name, v);
    }

  g_ptr_array_add (l->scopes, scope);
  for (size_t i = 0; i < g->n_node && ok; i++)
    {
      Node *m = branch_node (l, n, g->node[i], (guint) i, scope, writes,
                             names, producer, error);
      ok = m != NULL && elk__onnx_infer_node (l, m, error);
    }
  g_ptr_array_remove_index (l->scopes, l->scopes->len - 1);
  if (!ok)
    return FALSE;

  for (guint k = 0; k < n->n_out; k++)
    {
      Value *out = n->out[k], *src;
      const char *name = g->output[k]->name;

      if (out == NULL || g_hash_table_lookup (writes, name) == out)
        continue;
      src = name != NULL ? g_hash_table_lookup (scope, name) : NULL;
      if (src == NULL && name != NULL)
        src = scope_lookup (l, name);
      if (src == NULL)
        return elk__onnx_node_error (l, n, error, "its branch output %u "
                                     "('%s') is not defined", k,
                                     name != NULL ? name : "");
      if (src->dtype == DT_UNDEFINED)
        return elk__onnx_node_error (l, n, error, "its branch output '%s' "
                                     "has no known type or shape", name);
      if (!elk__onnx_set_view (l, n, k, src, src->dtype, src->rank,
                               src->dims, error))
        return FALSE;
      if (elk__onnx_value_data (l, src) != NULL)
        elk__onnx_set_data (out, g_memdup2 (src->data,
                                            MAX (src->n_elements, 1)
                                              * sizeof (double)));
    }
  return TRUE;
}

static gboolean
infer_if (Loader *l, Node *n, GError **error)
{
  Value *cond;
  const double *c;
  const Onnx__AttributeProto *branch;
  const char *which;

  if (!elk__onnx_need_inputs (l, n, 1, 1, error))
    return FALSE;
  cond = n->in[0];
  c = elk__onnx_value_data (l, cond);
  if (c == NULL)
    {
      g_autofree char *why = g_strdup_printf (
        "its condition '%s' is %s, known only at run time; elk folds an If "
        "whose condition is a constant after shape inference and constant "
        "folding, and compiles one static graph", cond->name,
        cond->kind == VK_INPUT ? "a graph input" : "computed by the model");
      return elk__onnx_node_unsupported (l, n, error, why);
    }
  if (cond->n_elements != 1)
    return elk__onnx_node_error (l, n, error, "its condition '%s' has %"
                                 G_GUINT64_FORMAT " elements, expected 1",
                                 cond->name, cond->n_elements);
  which = c[0] != 0.0 ? "then_branch" : "else_branch";
  branch = elk__onnx_find_attr (n, which);
  if (branch == NULL || branch->g == NULL)
    return elk__onnx_node_error (l, n, error, "attribute '%s' (a graph) is "
                                 "required", which);
  g_debug ("%s: node '%s': condition '%s' is %s, %s inlined", l->path,
           n->name, cond->name, c[0] != 0.0 ? "true" : "false", which);
  return inline_branch (l, n, branch->g, error);
}

static gboolean
infer_loop (Loader *l, Node *n, GError **error)
{
  Value *m = elk__onnx_in_value (n, 0);

  if (m == NULL || elk__onnx_value_data (l, m) == NULL)
    return elk__onnx_node_unsupported (
      l, n, error,
      m == NULL ? "it has no trip count M (a loop that runs until its "
                  "condition turns false cannot be unrolled at import)"
                : "its trip count M is known only at run time, so it "
                  "cannot be unrolled at import");
  return elk__onnx_node_unsupported (l, n, error, "its trip count is a "
                                     "constant, but unrolling Loop is not "
                                     "implemented");
}

static gboolean
infer_scan (Loader *l, Node *n, GError **error)
{
  return elk__onnx_node_unsupported (l, n, error, "its iteration count is "
                                     "static, but unrolling Scan is not "
                                     "implemented");
}

/* Control flow: lowered through the nodes it inlines (Node.sub), so no
 * lower function of its own. */
static const OpInfo control_ops[] = {
  { "If", infer_if, NULL, 0 },
  { "Loop", infer_loop, NULL, 0 },
  { "Scan", infer_scan, NULL, 0 },
};

const OpFamily elk__onnx_control_family = {
  "control flow", control_ops, G_N_ELEMENTS (control_ops),
};
