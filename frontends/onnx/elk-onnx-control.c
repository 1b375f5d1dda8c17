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
 * A Loop whose trip count is a constant is unrolled (infer_loop); one
 * without, or whose condition is known only at run time, is refused with
 * the reason.  Scan is unrolled the same way (infer_scan), its iteration
 * count being the static extent of its scan inputs.
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
      g_autoptr (GHashTable) inner = g_hash_table_new (g_str_hash, g_str_equal);
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
      Value *v
          = g_hash_table_lookup (g_ptr_array_index (l->scopes, i - 1), name);
      if (v != NULL)
        return v;
    }
  return elk__onnx_lookup_value (l, name);
}

/* What a subgraph is inlined with: the names of its nodes and values are
 * "<prefix>/<name>"; @inputs binds each graph input to a value; a node
 * computing graph output k writes @targets[k] (one of the inlining node's
 * outputs) when it is not NULL; @results[k] is set to the value graph
 * output k is. */
typedef struct
{
  const char *prefix;
  Value **inputs;
  Value **targets;
  Value **results;
} Inline;

/* One node of a subgraph: a Node of @n's, its inputs resolved in the
 * scopes, its outputs new values (or @n's own outputs, from @writes). */
static Node *
inline_node (Loader *l,
             Node *n,
             const Inline *in,
             const Onnx__NodeProto *p,
             guint k,
             GHashTable *scope,
             GHashTable *writes,
             GHashTable *names,
             gint producer,
             GError **error)
{
  Node *m = g_new0 (Node, 1);

  m->p = p;
  m->index = n->index;
  m->layer = -1;
  if (p->name != NULL && *p->name != '\0')
    m->name = g_strdup_printf ("%s/%s", in->prefix, p->name);
  if (m->name == NULL || g_hash_table_contains (names, m->name))
    {
      g_free (m->name);
      m->name = g_strdup_printf ("%s/%s_%u", in->prefix, p->op_type, k);
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
          elk__onnx_node_error (l, n, error,
                                "node '%s' (op %s) of its "
                                "subgraph reads '%s', which nothing before "
                                "it defines",
                                m->name, p->op_type, p->input[i]);
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
          elk__onnx_node_error (l, n, error,
                                "its subgraph writes '%s' "
                                "twice",
                                o);
          return NULL;
        }
      m->out[i] = g_hash_table_lookup (writes, o);
      if (m->out[i] == NULL)
        {
          scoped = g_strdup_printf ("%s/%s", in->prefix, o);
          if (elk__onnx_lookup_value (l, scoped) != NULL)
            {
              elk__onnx_node_error (l, n, error,
                                    "its subgraph's value '%s' "
                                    "clashes with the graph's '%s'",
                                    o, scoped);
              return NULL;
            }
          m->out[i] = elk__onnx_new_value (l, scoped);
          m->out[i]->producer = producer;
        }
      g_hash_table_insert (scope, (gpointer) o, m->out[i]);
    }
  return m;
}

/* A subgraph's initializers, as values of its scope. */
static gboolean
inline_initializers (Loader *l,
                     Node *n,
                     const Inline *in,
                     const Onnx__GraphProto *g,
                     GHashTable *scope,
                     GError **error)
{
  for (size_t i = 0; i < g->n_initializer; i++)
    {
      const Onnx__TensorProto *tp = g->initializer[i];
      g_autofree char *scoped
          = g_strdup_printf ("%s/%s", in->prefix,
                             tp->name != NULL ? tp->name : "");
      g_autofree char *what = g_strdup_printf ("initializer '%s' of node "
                                               "'%s'",
                                               scoped, n->name);
      Value *v;

      if (tp->name == NULL || *tp->name == '\0'
          || elk__onnx_lookup_value (l, scoped) != NULL)
        return elk__onnx_node_error (l, n, error,
                                     "its subgraph has an "
                                     "initializer without a name, or two "
                                     "with one name");
      v = elk__onnx_new_value (l, scoped);
      if (!elk__onnx_value_from_tensor (l, v, tp, what, error))
        return FALSE;
      v->kind = VK_PARAM;
      l->n_params += v->n_elements;
      g_hash_table_insert (scope, tp->name, v);
    }
  return TRUE;
}

/* Inlines subgraph @g into @n and infers its nodes (see the file
 * comment). */
static gboolean
inline_graph (
    Loader *l, Node *n, const Onnx__GraphProto *g, Inline *in, GError **error)
{
  g_autoptr (GHashTable) scope = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GHashTable) writes = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GHashTable) names
      = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GHashTable) produced = g_hash_table_new (g_str_hash, g_str_equal);
  gint producer = -1;
  gboolean ok;

  for (guint k = 0; k < n->n_out; k++)
    if (n->out[k] != NULL && n->out[k]->producer >= 0)
      producer = n->out[k]->producer;
  for (size_t i = 0; i < g->n_input; i++)
    {
      if (g->input[i]->name == NULL || *g->input[i]->name == '\0')
        return elk__onnx_node_error (l, n, error,
                                     "input %zu of its "
                                     "subgraph has no name",
                                     i);
      g_hash_table_insert (scope, g->input[i]->name, in->inputs[i]);
    }
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t k = 0; k < g->node[i]->n_output; k++)
      if (g->node[i]->output[k] != NULL)
        g_hash_table_add (produced, g->node[i]->output[k]);
  /* Graph outputs that a node of the subgraph computes are written
   * straight into their targets. */
  for (size_t k = 0; k < g->n_output; k++)
    if (in->targets[k] != NULL && g->output[k]->name != NULL
        && g_hash_table_contains (produced, g->output[k]->name)
        && !g_hash_table_contains (writes, g->output[k]->name))
      g_hash_table_insert (writes, g->output[k]->name, in->targets[k]);

  if (n->sub == NULL)
    n->sub = g_ptr_array_new_with_free_func (elk__onnx_node_free);
  ok = inline_initializers (l, n, in, g, scope, error);
  g_ptr_array_add (l->scopes, scope);
  for (size_t i = 0; i < g->n_node && ok; i++)
    {
      Node *m = inline_node (l, n, in, g->node[i], (guint) i, scope, writes,
                             names, producer, error);
      ok = m != NULL && elk__onnx_infer_node (l, m, error);
    }
  g_ptr_array_remove_index (l->scopes, l->scopes->len - 1);
  if (!ok)
    return FALSE;

  for (size_t k = 0; k < g->n_output; k++)
    {
      const char *name = g->output[k]->name;
      Value *v = NULL;

      if (name != NULL && *name != '\0')
        {
          v = g_hash_table_lookup (scope, name);
          if (v == NULL)
            v = scope_lookup (l, name);
        }
      if (v == NULL)
        return elk__onnx_node_error (l, n, error,
                                     "output %zu ('%s') of its "
                                     "subgraph is not defined",
                                     k, name != NULL ? name : "");
      if (v->dtype == DT_UNDEFINED)
        return elk__onnx_node_error (l, n, error,
                                     "output '%s' of its "
                                     "subgraph has no known type or shape",
                                     name);
      in->results[k] = v;
    }
  return TRUE;
}

/* @n's output @k is @src, which no node of @n writes: a view of it, with
 * its data when it is a constant. */
static gboolean
output_view (Loader *l, Node *n, guint k, Value *src, GError **error)
{
  Value *out = n->out[k];

  if (out == NULL || out == src)
    return TRUE;
  if (!elk__onnx_set_view (l, n, k, src, src->dtype, src->rank, src->dims,
                           error))
    return FALSE;
  if (elk__onnx_value_data (l, src) != NULL)
    elk__onnx_set_data (out, g_memdup2 (src->data, MAX (src->n_elements, 1)
                                                       * sizeof (double)));
  return TRUE;
}

static gboolean
infer_if (Loader *l, Node *n, GError **error)
{
  Value *cond;
  const double *c;
  const Onnx__AttributeProto *branch;
  const char *which;
  g_autofree Value **results = NULL;
  Inline in = { 0 };

  if (!elk__onnx_need_inputs (l, n, 1, 1, error))
    return FALSE;
  cond = n->in[0];
  c = elk__onnx_value_data (l, cond);
  if (c == NULL)
    {
      g_autofree char *why = g_strdup_printf (
          "its condition '%s' is %s, known only at run time; elk folds an If "
          "whose condition is a constant after shape inference and constant "
          "folding, and compiles one static graph%s",
          cond->name,
          cond->kind == VK_INPUT ? "a graph input" : "computed by the model",
          cond->kind == VK_INPUT
              ? " (give the input a value with the frontend's input-values "
                "parameter to compile one branch)"
              : " (if it depends on a scalar graph input such as a sample "
                "rate or a flag, give that input a value with the "
                "frontend's input-values parameter)");
      return elk__onnx_node_unsupported (l, n, error, why);
    }
  if (cond->n_elements != 1)
    return elk__onnx_node_error (l, n, error,
                                 "its condition '%s' has %" G_GUINT64_FORMAT
                                 " elements, expected 1",
                                 cond->name, cond->n_elements);
  which = c[0] != 0.0 ? "then_branch" : "else_branch";
  branch = elk__onnx_find_attr (n, which);
  if (branch == NULL || branch->g == NULL)
    return elk__onnx_node_error (l, n, error,
                                 "attribute '%s' (a graph) is "
                                 "required",
                                 which);
  if (branch->g->n_output != n->n_out || branch->g->n_input != 0)
    return elk__onnx_node_error (l, n, error,
                                 "its %s has %zu inputs and "
                                 "%zu outputs, expected none and %u",
                                 which, branch->g->n_input, branch->g->n_output,
                                 n->n_out);
  g_debug ("%s: node '%s': condition '%s' is %s, %s inlined", l->path, n->name,
           cond->name, c[0] != 0.0 ? "true" : "false", which);
  results = g_new0 (Value *, MAX (n->n_out, 1));
  in.prefix = n->name;
  in.targets = n->out;
  in.results = results;
  if (!inline_graph (l, n, branch->g, &in, error))
    return FALSE;
  for (guint k = 0; k < n->n_out; k++)
    if (!output_view (l, n, k, results[k], error))
      return FALSE;
  return TRUE;
}

/* A constant scalar value of @n's, named "<prefix>/<name>". */
static Value *
const_scalar (Loader *l,
              const char *prefix,
              const char *name,
              int dtype,
              double x,
              GError **error)
{
  g_autofree char *scoped = g_strdup_printf ("%s/%s", prefix, name);
  Value *v;

  if (elk__onnx_lookup_value (l, scoped) != NULL)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: value '%s' is defined twice", l->path, scoped);
      return NULL;
    }
  v = elk__onnx_new_value (l, scoped);
  if (!elk__onnx_value_set_shape (l, v, dtype, 0, NULL, error))
    return NULL;
  v->kind = VK_CONST;
  elk__onnx_set_data (v, g_memdup2 (&x, sizeof x));
  return v;
}

/* Scan output @k (of a Loop or a Scan): the per-iteration values @its
 * stacked along a new axis @axis, in reverse order with @reverse.  Like
 * Concat's output it is a view that no operator writes, with data when
 * every iteration's value is a constant and @axis is the leading one. */
static gboolean
stack_scan_output (Loader *l,
                   Node *n,
                   guint k,
                   GPtrArray *its,
                   gint64 axis,
                   gboolean reverse,
                   GError **error)
{
  Value *out = n->out[k], *first = g_ptr_array_index (its, 0);
  gint64 dims[MAX_RANK];
  gboolean constant = TRUE;
  guint a;

  if (out == NULL)
    return TRUE;
  if (first->rank + 1 > MAX_RANK)
    return elk__onnx_node_error (l, n, error, "scan output %u has rank %u", k,
                                 first->rank + 1);
  if (!elk__onnx_norm_axis (l, n, axis, first->rank + 1, &a, error))
    return FALSE;
  memcpy (dims, first->dims, a * sizeof (gint64));
  dims[a] = (gint64) its->len;
  memcpy (dims + a + 1, first->dims + a, (first->rank - a) * sizeof (gint64));
  for (guint i = 0; i < its->len; i++)
    {
      Value *v = g_ptr_array_index (its, i);
      if (v->dtype != first->dtype || v->rank != first->rank
          || memcmp (v->dims, first->dims, v->rank * sizeof (gint64)) != 0)
        return elk__onnx_node_error (l, n, error,
                                     "scan output %u changes "
                                     "its type or shape in iteration %u",
                                     k, i);
      constant = constant && v->kind != VK_ACT && v->kind != VK_INPUT
                 && elk__onnx_value_data (l, v) != NULL;
    }
  if (!elk__onnx_value_set_shape (l, out, first->dtype, first->rank + 1, dims,
                                  error))
    return FALSE;
  out->kind = VK_ACT;
  if (constant && a == 0 && out->n_elements <= FOLD_LIMIT)
    {
      double *data = g_new (double, MAX (out->n_elements, 1));
      for (guint i = 0; i < its->len; i++)
        memcpy (data + i * first->n_elements,
                ((Value *) g_ptr_array_index (its,
                                              reverse ? its->len - 1 - i : i))
                    ->data,
                first->n_elements * sizeof (double));
      elk__onnx_set_data (out, data);
      out->kind = VK_CONST;
    }
  return TRUE;
}

/* The body of a Loop or Scan, a graph attribute it must have. */
static const Onnx__GraphProto *
body_graph (Loader *l, Node *n, GError **error)
{
  const Onnx__AttributeProto *a = elk__onnx_find_attr (n, "body");

  if (a == NULL || a->g == NULL)
    {
      elk__onnx_node_error (l, n, error,
                            "attribute 'body' (a graph) is required");
      return NULL;
    }
  return a->g;
}

/* Loop and Scan are unrolled at import; refuses @trip copies of @body
 * when they would take more nodes than the max-nodes option allows. */
static gboolean
unroll_fits (Loader *l,
             Node *n,
             const Onnx__GraphProto *body,
             gint64 trip,
             GError **error)
{
  g_autofree char *why = NULL;

  if ((guint64) trip * MAX (body->n_node, 1) <= l->opts.max_nodes)
    return TRUE;
  why = g_strdup_printf ("unrolling %" G_GINT64_FORMAT
                         " iterations of its %zu-node body would exceed the "
                         "max-nodes limit of %" G_GUINT64_FORMAT,
                         trip, body->n_node, l->opts.max_nodes);
  return elk__onnx_node_unsupported (l, n, error, why);
}

/* The prefix of the names of what iteration @i of an unrolled Loop or
 * Scan inlines: "<node>/<i>". */
static char *
iteration_prefix (const Node *n, gint64 i)
{
  return g_strdup_printf ("%s/%" G_GINT64_FORMAT, n->name, i);
}

/* One list per scan output of an unrolled Loop or Scan, which collects
 * that output's value in each iteration until they are stacked. */
static GPtrArray *
new_scan_lists (guint n_scan)
{
  GPtrArray *scans
      = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);

  for (guint k = 0; k < n_scan; k++)
    g_ptr_array_add (scans, g_ptr_array_new ());
  return scans;
}

/* Copies the @count inputs of @n from @first on into @inputs, which the
 * first iteration's body reads; ONNX lets an input be omitted, but a
 * value that an iteration hands to the next (@what: "loop-carried" or
 * "state") cannot be. */
static gboolean
take_inputs (Loader *l,
             Node *n,
             const char *what,
             guint first,
             guint count,
             Value **inputs,
             GError **error)
{
  for (guint k = 0; k < count; k++)
    if ((inputs[first + k] = n->in[first + k]) == NULL)
      return elk__onnx_node_error (l, n, error, "%s input %u is omitted", what,
                                   k);
  return TRUE;
}

/* Checks what a Loop needs to be unrolled and returns its trip count. */
static gboolean
loop_trip_count (Loader *l,
                 Node *n,
                 const Onnx__GraphProto **body,
                 gint64 *trip,
                 GError **error)
{
  Value *m = elk__onnx_in_value (n, 0), *cond = elk__onnx_in_value (n, 1);
  guint n_carried;

  if (m == NULL)
    return elk__onnx_node_unsupported (
        l, n, error,
        "it has no trip count M (a loop that runs until its "
        "condition turns false cannot be unrolled at import)");
  if (elk__onnx_value_data (l, m) == NULL || m->n_elements != 1)
    return elk__onnx_node_unsupported (l, n, error,
                                       "its trip count M is "
                                       "known only at run time, so it "
                                       "cannot be unrolled at import");
  if (cond != NULL
      && (elk__onnx_value_data (l, cond) == NULL || cond->n_elements != 1))
    return elk__onnx_node_unsupported (l, n, error,
                                       "its condition is known "
                                       "only at run time, so it cannot be "
                                       "unrolled at import");
  if ((*body = body_graph (l, n, error)) == NULL)
    return FALSE;
  n_carried = n->n_in >= 2 ? n->n_in - 2 : 0;
  if (n->n_in < 2 || (*body)->n_input != n_carried + 2
      || (*body)->n_output < n_carried + 1 || (*body)->n_output - 1 != n->n_out)
    return elk__onnx_node_error (l, n, error,
                                 "its body has %zu inputs and "
                                 "%zu outputs; with %u loop-carried values "
                                 "and %u outputs it needs %u inputs and %u "
                                 "outputs",
                                 (*body)->n_input, (*body)->n_output, n_carried,
                                 n->n_out, n_carried + 2, n->n_out + 1);
  *trip = elk__onnx_to_i64 (m->data[0]);
  if (*trip < 1 || (cond != NULL && cond->data[0] == 0.0))
    return elk__onnx_node_unsupported (l, n, error,
                                       "it runs no iteration, "
                                       "so its outputs are its initial "
                                       "values and its scan outputs have no "
                                       "known shape");
  return unroll_fits (l, n, *body, *trip, error);
}

/* A Loop with a constant trip count (and a constant condition, if any) is
 * unrolled: its body is inlined once per iteration, named
 * "<loop>/<i>/<name>", with the iteration number and the condition as
 * constants and the loop-carried values of the previous iteration.  The
 * body's condition output must fold to a constant in every iteration; the
 * loop stops after the iteration where it is false.  The last iteration
 * writes the loop-carried outputs when it is the M-th (otherwise they are
 * views of the values where the loop stopped); scan outputs are stacked as
 * Concat's output is. */
static gboolean
infer_loop (Loader *l, Node *n, GError **error)
{
  const Onnx__GraphProto *body = NULL;
  gint64 trip = 0;
  guint n_carried, n_scan;
  g_autofree Value **inputs = NULL;
  g_autofree Value **targets = NULL;
  g_autofree Value **results = NULL;
  g_autoptr (GPtrArray) scans = NULL;
  Value *cond;
  guint executed = 0;

  if (!loop_trip_count (l, n, &body, &trip, error))
    return FALSE;
  n_carried = n->n_in - 2;
  n_scan = n->n_out - n_carried;
  inputs = g_new0 (Value *, n_carried + 2);
  targets = g_new0 (Value *, body->n_output);
  results = g_new0 (Value *, body->n_output);
  scans = new_scan_lists (n_scan);
  cond = elk__onnx_in_value (n, 1);
  if (cond == NULL
      && (cond = const_scalar (l, n->name, "cond", DT_BOOL, 1, error)) == NULL)
    return FALSE;
  if (!take_inputs (l, n, "loop-carried", 2, n_carried, inputs, error))
    return FALSE;

  for (gint64 i = 0; i < trip; i++)
    {
      g_autofree char *prefix = iteration_prefix (n, i);
      Inline in = { prefix, inputs, targets, results };
      const double *c;

      inputs[0]
          = const_scalar (l, prefix,
                          body->input[0]->name != NULL ? body->input[0]->name
                                                       : "iteration_num",
                          DT_INT64, (double) i, error);
      if (inputs[0] == NULL)
        return FALSE;
      inputs[1] = cond;
      for (guint k = 0; k < n_carried; k++)
        targets[1 + k] = i == trip - 1 ? n->out[k] : NULL;
      if (!inline_graph (l, n, body, &in, error))
        return FALSE;
      executed++;
      cond = results[0];
      c = elk__onnx_value_data (l, cond);
      if (c == NULL || cond->n_elements != 1)
        {
          g_autofree char *why = g_strdup_printf (
              "the condition its body computes in iteration %" G_GINT64_FORMAT
              " ('%s') is known only at run time, so it cannot be unrolled at "
              "import",
              i, cond->name);
          return elk__onnx_node_unsupported (l, n, error, why);
        }
      for (guint k = 0; k < n_carried; k++)
        inputs[2 + k] = results[1 + k];
      for (guint k = 0; k < n_scan; k++)
        g_ptr_array_add (g_ptr_array_index (scans, k),
                         results[1 + n_carried + k]);
      if (c[0] == 0.0)
        break;
    }
  g_debug ("%s: node '%s': unrolled %u of %" G_GINT64_FORMAT " iterations",
           l->path, n->name, executed, trip);
  for (guint k = 0; k < n_carried; k++)
    if (!output_view (l, n, k, inputs[2 + k], error))
      return FALSE;
  for (guint k = 0; k < n_scan; k++)
    if (!stack_scan_output (l, n, n_carried + k, g_ptr_array_index (scans, k),
                            0, FALSE, error))
      return FALSE;
  return TRUE;
}

/* Element @i of an int attribute list, or @def when the list is absent;
 * a list of the wrong length is an error. */
static gboolean
ints_at (Loader *l,
         Node *n,
         const char *name,
         guint count,
         guint i,
         gint64 def,
         gint64 *out,
         GError **error)
{
  gsize len;
  const int64_t *v = elk__onnx_attr_ints (n, name, &len);

  if (v == NULL)
    {
      *out = def;
      return TRUE;
    }
  if (len != count)
    return elk__onnx_node_error (l, n, error,
                                 "attribute '%s' has %zu "
                                 "entries, expected %u",
                                 name, len, count);
  *out = v[i];
  return TRUE;
}

/* Slice @t of scan input @src along @axis: a view (a value of the shape
 * without @axis that no operator writes, as Slice's output is), with data
 * when @src is a constant. */
static Value *
scan_slice (Loader *l,
            Node *n,
            const char *prefix,
            const char *name,
            Value *src,
            guint axis,
            gint64 t,
            GError **error)
{
  g_autofree char *scoped = g_strdup_printf ("%s/%s", prefix, name);
  gint64 dims[MAX_RANK], strides[MAX_RANK];
  Value *v;

  if (elk__onnx_lookup_value (l, scoped) != NULL)
    {
      elk__onnx_node_error (l, n, error, "value '%s' is defined twice", scoped);
      return NULL;
    }
  v = elk__onnx_new_value (l, scoped);
  memcpy (dims, src->dims, axis * sizeof (gint64));
  memcpy (dims + axis, src->dims + axis + 1,
          (src->rank - axis - 1) * sizeof (gint64));
  if (!elk__onnx_value_set_shape (l, v, src->dtype, src->rank - 1, dims, error))
    return NULL;
  v->kind = src->kind;
  v->root = src->root;
  if (elk__onnx_value_data (l, src) != NULL)
    {
      double *data = g_new (double, MAX (v->n_elements, 1));
      guint64 inner, outer;

      elk__onnx_strides_of (src->rank, src->dims, strides);
      inner = (guint64) strides[axis];
      outer = src->n_elements / MAX ((guint64) src->dims[axis] * inner, 1);
      for (guint64 o = 0; o < outer; o++)
        memcpy (data + o * inner,
                src->data
                    + (o * (guint64) src->dims[axis] + (guint64) t) * inner,
                inner * sizeof (double));
      elk__onnx_set_data (v, data);
    }
  return v;
}

/* A Scan (opset 9 and later) is unrolled like a Loop: its iteration count
 * is the extent of its scan inputs along their scan axes, static here.
 * Each iteration's body reads the states of the previous one and slice t
 * of every scan input (slice T-1-t for a reversed one); the last writes
 * the final states, and the scan outputs are stacked along their axes. */
static gboolean
infer_scan (Loader *l, Node *n, GError **error)
{
  const Onnx__GraphProto *body;
  gint64 n_scan_in, trip = -1;
  guint n_state, n_scan_out;
  g_autofree Value **inputs = NULL;
  g_autofree Value **targets = NULL;
  g_autofree Value **results = NULL;
  g_autofree guint *axes = NULL;
  g_autofree gboolean *reversed = NULL;
  g_autoptr (GPtrArray) scans = NULL;

  if (l->opset < 9)
    return elk__onnx_node_unsupported (l, n, error,
                                       "Scan-8's batched form "
                                       "(with sequence_lens) is not "
                                       "unrolled");
  if ((body = body_graph (l, n, error)) == NULL)
    return FALSE;
  if (!elk__onnx_attr_int (l, n, "num_scan_inputs", -1, &n_scan_in, error))
    return FALSE;
  if (n_scan_in < 1 || n_scan_in > n->n_in)
    return elk__onnx_node_error (l, n, error,
                                 "num_scan_inputs must be 1 to "
                                 "the %u inputs",
                                 n->n_in);
  n_state = n->n_in - (guint) n_scan_in;
  if (n->n_out < n_state || body->n_input != n->n_in
      || body->n_output != n->n_out)
    return elk__onnx_node_error (l, n, error,
                                 "its body has %zu inputs and "
                                 "%zu outputs, expected %u and %u",
                                 body->n_input, body->n_output, n->n_in,
                                 n->n_out);
  n_scan_out = n->n_out - n_state;
  axes = g_new0 (guint, n_scan_in);
  reversed = g_new0 (gboolean, n_scan_in);
  for (guint j = 0; j < (guint) n_scan_in; j++)
    {
      Value *x = n->in[n_state + j];
      gint64 axis = 0, dir = 0;
      if (x == NULL || x->rank == 0)
        return elk__onnx_node_error (l, n, error,
                                     "scan input %u is omitted "
                                     "or a scalar",
                                     j);
      if (!ints_at (l, n, "scan_input_axes", (guint) n_scan_in, j, 0, &axis,
                    error)
          || !ints_at (l, n, "scan_input_directions", (guint) n_scan_in, j, 0,
                       &dir, error)
          || !elk__onnx_norm_axis (l, n, axis, x->rank, &axes[j], error))
        return FALSE;
      reversed[j] = dir != 0;
      if (trip >= 0 && x->dims[axes[j]] != trip)
        return elk__onnx_node_error (l, n, error,
                                     "scan inputs have %" G_GINT64_FORMAT
                                     " and %" G_GINT64_FORMAT " iterations",
                                     trip, x->dims[axes[j]]);
      trip = x->dims[axes[j]];
    }
  if (trip < 1)
    return elk__onnx_node_unsupported (l, n, error,
                                       "it runs no iteration, "
                                       "so its scan outputs have no known "
                                       "shape");
  if (!unroll_fits (l, n, body, trip, error))
    return FALSE;

  inputs = g_new0 (Value *, n->n_in);
  targets = g_new0 (Value *, MAX (n->n_out, 1));
  results = g_new0 (Value *, MAX (n->n_out, 1));
  scans = new_scan_lists (n_scan_out);
  if (!take_inputs (l, n, "state", 0, n_state, inputs, error))
    return FALSE;
  for (gint64 t = 0; t < trip; t++)
    {
      g_autofree char *prefix = iteration_prefix (n, t);
      Inline in = { prefix, inputs, targets, results };

      for (guint j = 0; j < (guint) n_scan_in; j++)
        {
          const char *name = body->input[n_state + j]->name;
          inputs[n_state + j]
              = scan_slice (l, n, prefix, name != NULL ? name : "scan_input",
                            n->in[n_state + j], axes[j],
                            reversed[j] ? trip - 1 - t : t, error);
          if (inputs[n_state + j] == NULL)
            return FALSE;
        }
      for (guint k = 0; k < n_state; k++)
        targets[k] = t == trip - 1 ? n->out[k] : NULL;
      if (!inline_graph (l, n, body, &in, error))
        return FALSE;
      for (guint k = 0; k < n_state; k++)
        inputs[k] = results[k];
      for (guint k = 0; k < n_scan_out; k++)
        g_ptr_array_add (g_ptr_array_index (scans, k), results[n_state + k]);
    }
  for (guint k = 0; k < n_state; k++)
    if (!output_view (l, n, k, inputs[k], error))
      return FALSE;
  for (guint k = 0; k < n_scan_out; k++)
    {
      gint64 axis = 0, dir = 0;
      if (!ints_at (l, n, "scan_output_axes", n_scan_out, k, 0, &axis, error)
          || !ints_at (l, n, "scan_output_directions", n_scan_out, k, 0, &dir,
                       error)
          || !stack_scan_output (l, n, n_state + k,
                                 g_ptr_array_index (scans, k), axis, dir != 0,
                                 error))
        return FALSE;
    }
  return TRUE;
}

/* Control flow: lowered through the nodes it inlines (Node.sub), so no
 * lower function of its own. */
static const OpInfo control_ops[] = {
  { "If", infer_if, NULL, 0 },
  { "Loop", infer_loop, NULL, 0 },
  { "Scan", infer_scan, NULL, 0 },
};

ELK_ONNX_DEFINE_FAMILY (control, "control flow");
