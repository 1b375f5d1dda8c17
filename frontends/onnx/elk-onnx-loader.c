/* elk-onnx-loader.c: reads an ONNX model and lowers it into an ElkGraph.
 *
 * The work happens in four passes over the graph:
 *
 *  1. Parsing and checking (elk-onnx-read.c).  The file is decoded with
 *     protobuf-c; every initializer is checked against its declared size
 *     (inline or external data), symbolic input dimensions are bound from
 *     the "dims" option, and the nodes are sorted topologically (a dangling
 *     input or a cycle is an error naming the node).
 *  2. Shape inference.  Every supported operator computes its output shapes
 *     and element types.  Small constant tensors (shape arithmetic: Shape,
 *     Gather, Concat, Cast, ConstantOfShape, ...) are evaluated
 *     (elk-onnx-values.c), so that a Reshape whose target shape is computed
 *     at run time still gets a static shape.  The same pass records which
 *     graph inputs feed data operands (the model inputs) as opposed to
 *     weight operands (weights exported as graph inputs by "graph-only"
 *     exporters).
 *  3. Pattern recognition (elk-onnx-fuse.c).  The
 *     ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div chain that exporters unroll
 *     LayerNormalization into is fused back into one operator, and a
 *     BatchNormalization that directly follows a Conv is folded into it, as
 *     inference compilers do.
 *  4. Lowering.  Each remaining compute node becomes one einsum operator
 *     (elk-graph.h, built with elk-onnx-emit.c).  Layout operators (Reshape,
 *     Transpose, Squeeze, Concat, Slice, ...) have no compute and are folded
 *     away: their outputs become tensors of the right shape that no operator
 *     writes, exactly as the Elk artifact drops them.
 *
 * Each operator's shape inference and lowering live side by side in the file
 * of its family (elk-onnx-layout.c, -linear.c, -norm.c, -elementwise.c,
 * -control.c), which registers them in its operator table; this file only
 * runs the passes.  Adding an operator touches its family's file alone.
 *
 * Every failure is a GError that names the file, and where there is one the
 * node, its operator and what was expected.
 */
#include "config.h"

#include <string.h>

#include "elk-onnx-private.h"

/* Every family's operator table; an operator type appears in one only. */
static const OpFamily *const families[] = {
  &elk__onnx_layout_family,  &elk__onnx_linear_family,
  &elk__onnx_norm_family,    &elk__onnx_elementwise_family,
  &elk__onnx_control_family, &elk__onnx_recurrent_family,
  &elk__onnx_quant_family,
};

const OpInfo *
elk__onnx_find_op (const char *op_type)
{
  for (guint f = 0; f < G_N_ELEMENTS (families); f++)
    for (guint i = 0; i < families[f]->n_ops; i++)
      if (strcmp (families[f]->ops[i].op_type, op_type) == 0)
        return &families[f]->ops[i];
  return NULL;
}

void
elk__onnx_options_init (OnnxOptions *options)
{
  memset (options, 0, sizeof *options);
  options->max_file_size = ELK_ONNX_DEFAULT_MAX_FILE_SIZE;
  options->max_tensor_elements = ELK_ONNX_DEFAULT_MAX_TENSOR_ELEMENTS;
  options->max_nesting = ELK_ONNX_DEFAULT_MAX_NESTING;
  options->max_nodes = ELK_ONNX_DEFAULT_MAX_NODES;
}

void
elk__onnx_node_free (gpointer data)
{
  Node *n = data;
  g_clear_pointer (&n->sub, g_ptr_array_unref);
  g_clear_pointer (&n->expansion, elk__onnx_rnn_expansion_free);
  g_free (n->name);
  g_free (n->in);
  g_free (n->out);
  g_free (n);
}

void
elk__onnx_loader_clear (Loader *l)
{
  if (l->model != NULL)
    onnx__model_proto__free_unpacked (l->model, NULL);
  g_clear_pointer (&l->file, g_mapped_file_unref);
  g_clear_pointer (&l->nodes, g_ptr_array_unref);
  g_clear_pointer (&l->values, g_hash_table_unref);
  g_clear_pointer (&l->value_list, g_ptr_array_unref);
  g_clear_pointer (&l->bindings, g_hash_table_unref);
  g_clear_pointer (&l->used_bindings, g_hash_table_unref);
  g_clear_pointer (&l->input_is_data, g_array_unref);
  g_clear_pointer (&l->input_forced, g_array_unref);
  g_clear_pointer (&l->layer_keys, g_hash_table_unref);
  g_clear_pointer (&l->graph, elk_graph_unref);
  g_clear_pointer (&l->scopes, g_ptr_array_unref);
  g_free (l->dir);
}

gboolean
elk__onnx_check_outputs (Loader *l, gboolean compare, GError **error)
{
  const Onnx__GraphProto *g = l->model->graph;

  for (size_t i = 0; i < g->n_output; i++)
    {
      const Onnx__ValueInfoProto *vi = g->output[i];
      Value *v = vi->name != NULL ? elk__onnx_lookup_value (l, vi->name) : NULL;
      const Onnx__TensorShapeProto *sh;

      if (v == NULL)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: graph output '%s' is not computed by any node",
                       l->path, vi->name != NULL ? vi->name : "");
          return FALSE;
        }
      if (!compare)
        {
          v->is_graph_output = TRUE;
          v->n_uses++;
          continue;
        }
      if (v->dtype == DT_UNDEFINED || vi->type == NULL
          || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
          || (sh = vi->type->tensor_type->shape) == NULL)
        continue;
      /* The file's own shape is a cross-check of shape inference: a
       * disagreement means elk would compile the wrong model. */
      if (sh->n_dim != v->rank)
        goto mismatch;
      for (size_t d = 0; d < sh->n_dim; d++)
        {
          const Onnx__TensorShapeProto__Dimension *dim = sh->dim[d];
          gint64 *bound = NULL;
          if (dim->value_case
              == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            {
              if (dim->dim_value != v->dims[d])
                goto mismatch;
            }
          else if (dim->value_case
                     == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                   && dim->dim_param != NULL
                   && (bound = g_hash_table_lookup (l->bindings,
                                                    dim->dim_param))
                          != NULL
                   && *bound != v->dims[d])
            goto mismatch;
        }
      continue;
    mismatch:
      {
        g_autofree char *got = elk__onnx_shape_to_string (v->rank, v->dims);
        g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                     "%s: graph output '%s' has shape %s by shape inference, "
                     "but the file declares a different shape (rank %zu)",
                     l->path, v->name, got, sh->n_dim);
        return FALSE;
      }
    }
  return TRUE;
}

gboolean
elk__onnx_infer_node (Loader *l, Node *n, GError **error)
{
  const char *d = n->p->domain;

  if (d != NULL && *d != '\0' && strcmp (d, "ai.onnx") != 0)
    return elk__onnx_node_unsupported (l, n, error,
                                       "elk reads the default "
                                       "ai.onnx domain only");
  n->info = elk__onnx_find_op (n->p->op_type);
  if (n->info == NULL)
    return elk__onnx_node_unsupported (l, n, error, NULL);
  for (guint k = 0; k < n->n_in; k++)
    if (n->in[k] != NULL && n->in[k]->dtype == DT_UNDEFINED)
      return elk__onnx_node_error (l, n, error,
                                   "input '%s' has no known type or shape "
                                   "(its producer does not define it)",
                                   n->in[k]->name);
  if (!n->info->infer (l, n, error))
    return FALSE;
  for (guint k = 0; k < n->n_out; k++)
    if (n->out[k] != NULL && n->out[k]->dtype == DT_UNDEFINED
        && n->out[k]->n_uses > 0)
      return elk__onnx_node_unsupported (l, n, error,
                                         "this output is not "
                                         "implemented");
  return TRUE;
}

/* A node reads the output of a node that failed (in a survey). */
static gboolean
node_blocked (Loader *l, const Node *n)
{
  for (guint k = 0; k < n->n_in; k++)
    if (n->in[k] != NULL && n->in[k]->producer >= 0
        && ((Node *) g_ptr_array_index (l->nodes, n->in[k]->producer))->failed)
      return TRUE;
  return FALSE;
}

/* Records @n's failure in @issues: the message without the file name,
 * which every loader error starts with. */
static void
add_issue (Loader *l, GPtrArray *issues, Node *n, GError *error)
{
  Issue *issue = g_new0 (Issue, 1);
  const char *msg = error->message;
  gsize len = strlen (l->path);

  if (strncmp (msg, l->path, len) == 0 && strncmp (msg + len, ": ", 2) == 0)
    msg += len + 2;
  issue->node = n;
  issue->reason = g_strdup (msg);
  g_ptr_array_add (issues, issue);
  n->failed = TRUE;
}

void
elk__onnx_issue_free (gpointer data)
{
  Issue *issue = data;
  g_free (issue->reason);
  g_free (issue);
}

/**
 * elk__onnx_infer_all:
 * @issues: (nullable): %NULL to stop at the first failure; otherwise a
 *   survey: every failing node is added to @issues as an #Issue and the
 *   nodes reading its outputs are skipped (marked failed, not added).
 *
 * Shape inference and constant folding over every node, in topological
 * order.  Returns: %FALSE with @error set on the first failure when
 * @issues is %NULL; %TRUE otherwise.
 */
gboolean
elk__onnx_infer_all (Loader *l, GPtrArray *issues, GError **error)
{
  for (guint i = 0; i < l->nodes->len; i++)
    {
      Node *n = g_ptr_array_index (l->nodes, i);
      g_autoptr (GError) local = NULL;

      if (issues == NULL)
        {
          if (!elk__onnx_infer_node (l, n, error))
            return FALSE;
          continue;
        }
      if (node_blocked (l, n))
        n->failed = TRUE;
      else if (!elk__onnx_infer_node (l, n, &local))
        add_issue (l, issues, n, local);
    }
  return TRUE;
}

/* Graph inputs that turned out to be weights count as parameters, as
 * initializers and Constant nodes do. */
void
elk__onnx_count_weight_inputs (Loader *l)
{
  const Onnx__GraphProto *g = l->model->graph;
  for (size_t i = 0; i < g->n_input; i++)
    {
      Value *v = elk__onnx_lookup_value (l, g->input[i]->name);
      if (v != NULL && v->kind == VK_INPUT && v->root == (gint) i
          && !g_array_index (l->input_is_data, gboolean, i))
        l->n_params += v->n_elements;
    }
}

static gboolean
lower_node (Loader *l, Node *n, GError **error)
{
  Value *out = n->out[0];

  /* A folded If: the nodes of the branch it takes. */
  if (n->sub != NULL)
    {
      for (guint i = 0; i < n->sub->len; i++)
        {
          Node *m = g_ptr_array_index (n->sub, i);
          m->layer = elk__onnx_layer_of (l, m->p->name);
          if (m->layer < 0)
            m->layer = n->layer;
          if (!lower_node (l, m, error))
            return FALSE;
        }
      return TRUE;
    }
  if (n->fuse == FUSE_SKIP)
    return TRUE;
  if (n->fuse == FUSE_LAYERNORM)
    return elk__onnx_emit_layernorm (l, n, n->ln_x, n->ln_scale, n->ln_bias,
                                     out, error);
  if (n->info->lower == NULL || n->view || out == NULL || out->kind != VK_ACT)
    return TRUE;
  return n->info->lower (l, n, error);
}

/**
 * elk__onnx_lower_all:
 * @issues: (nullable): as for elk__onnx_infer_all(); a survey lowers every
 *   node that shape inference accepted and records the ones that fail.
 *
 * Lowers every node into the graph's einsum operators.
 */
gboolean
elk__onnx_lower_all (Loader *l, GPtrArray *issues, GError **error)
{
  for (guint i = 0; i < l->nodes->len; i++)
    {
      Node *n = g_ptr_array_index (l->nodes, i);
      g_autoptr (GError) local = NULL;

      n->layer = elk__onnx_layer_of (l, n->p->name);
      if (issues == NULL)
        {
          if (!lower_node (l, n, error))
            return FALSE;
          continue;
        }
      if (!n->failed && !lower_node (l, n, &local))
        add_issue (l, issues, n, local);
    }
  return TRUE;
}

void
elk__onnx_set_attributes (Loader *l)
{
  const Onnx__GraphProto *g = l->model->graph;
  char buf[64];
  GHashTableIter it;
  gpointer key, value;
  gboolean have_seq = FALSE;

  elk_graph_set_attribute (l->graph, "frontend", "onnx");
  elk_graph_set_attribute (l->graph, "phase", "forward");
  g_snprintf (buf, sizeof buf, "%" G_GUINT64_FORMAT, l->n_params);
  elk_graph_set_attribute (l->graph, "params", buf);
  g_snprintf (buf, sizeof buf, "%u", l->n_layers);
  elk_graph_set_attribute (l->graph, "layers", buf);
  g_snprintf (buf, sizeof buf, "%" G_GINT64_FORMAT, l->opset);
  elk_graph_set_attribute (l->graph, "opset", buf);

  g_hash_table_iter_init (&it, l->bindings);
  while (g_hash_table_iter_next (&it, &key, &value))
    {
      g_autofree char *lower = g_ascii_strdown (key, -1);
      g_snprintf (buf, sizeof buf, "%" G_GINT64_FORMAT, *(gint64 *) value);
      if (strstr (lower, "batch") != NULL)
        elk_graph_set_attribute (l->graph, "batch", buf);
      if (strstr (lower, "seq") != NULL)
        {
          elk_graph_set_attribute (l->graph, "seq", buf);
          have_seq = TRUE;
        }
    }
  /* Otherwise: the leading axis of the first model input is the batch,
   * and a token-id input [batch, seq] also gives the sequence length. */
  for (size_t i = 0; i < g->n_input; i++)
    {
      Value *v = elk__onnx_lookup_value (l, g->input[i]->name);
      if (v == NULL || v->kind != VK_INPUT
          || !g_array_index (l->input_is_data, gboolean, i) || v->rank == 0)
        continue;
      if (elk_graph_get_attribute (l->graph, "batch") == NULL)
        {
          g_snprintf (buf, sizeof buf, "%" G_GINT64_FORMAT, v->dims[0]);
          elk_graph_set_attribute (l->graph, "batch", buf);
        }
      if (!have_seq && v->rank == 2 && elk__onnx_is_int_dtype (v->dtype))
        {
          g_snprintf (buf, sizeof buf, "%" G_GINT64_FORMAT, v->dims[1]);
          elk_graph_set_attribute (l->graph, "seq", buf);
        }
      break;
    }
}

/**
 * elk__onnx_loader_open:
 * @l: a zeroed loader; free it with elk__onnx_loader_clear() whatever this
 *   returns
 *
 * Sets @l up for @path: the options, the file mapped, its nesting checked
 * and decoded, and an empty graph named after the model.
 */
gboolean
elk__onnx_loader_open (Loader *l,
                       const char *path,
                       const OnnxOptions *options,
                       GError **error)
{
  g_autoptr (GError) local_error = NULL;
  g_autofree char *base = NULL;
  gsize len;

  if (options != NULL)
    l->opts = *options;
  else
    elk__onnx_options_init (&l->opts);
  l->path = path;
  l->dir = g_path_get_dirname (path);
  l->values = g_hash_table_new (g_str_hash, g_str_equal);
  l->value_list = g_ptr_array_new_with_free_func (elk__onnx_value_free);
  l->nodes = g_ptr_array_new_with_free_func (elk__onnx_node_free);
  l->scopes = g_ptr_array_new ();
  l->bindings = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  l->used_bindings
      = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  l->input_is_data = g_array_new (FALSE, TRUE, sizeof (gboolean));
  l->input_forced = g_array_new (FALSE, TRUE, sizeof (gboolean));
  l->layer_keys = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

  if (l->opts.dtype != NULL && *l->opts.dtype != '\0'
      && strcmp (l->opts.dtype, "file") != 0)
    {
      l->dtype_override = TRUE;
      if (strcmp (l->opts.dtype, "f32") == 0
          || strcmp (l->opts.dtype, "fp32") == 0)
        l->float_dtype = ELK_DTYPE_F32;
      else if (strcmp (l->opts.dtype, "f16") == 0
               || strcmp (l->opts.dtype, "fp16") == 0)
        l->float_dtype = ELK_DTYPE_F16;
      else if (strcmp (l->opts.dtype, "bf16") == 0)
        l->float_dtype = ELK_DTYPE_BF16;
      else
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "%s: unknown dtype '%s' (expected file, fp32, fp16 "
                       "or bf16)",
                       path, l->opts.dtype);
          return FALSE;
        }
    }

  l->file = g_mapped_file_new (path, FALSE, &local_error);
  if (l->file == NULL)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: cannot read the model: %s", path,
                   local_error->message);
      return FALSE;
    }
  len = g_mapped_file_get_length (l->file);
  if (len == 0 || len > l->opts.max_file_size)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_LIMIT,
                   "%s: the file has %zu bytes; a model must have between 1 "
                   "and %" G_GUINT64_FORMAT " (the max-file-size limit; "
                   "raise the onnx frontend's 'max-file-size' parameter "
                   "for a larger file)",
                   path, len, l->opts.max_file_size);
      return FALSE;
    }
  if (!elk__onnx_check_nesting (l,
                                (const guint8 *) g_mapped_file_get_contents (
                                    l->file),
                                len, error))
    return FALSE;
  l->model
      = onnx__model_proto__unpack (NULL, len,
                                   (const uint8_t *)
                                       g_mapped_file_get_contents (l->file));
  if (l->model == NULL)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "%s: not a valid ONNX model: the protobuf data is "
                   "truncated or corrupted", path);
      return FALSE;
    }

  base = g_path_get_basename (path);
  if (g_str_has_suffix (base, ".onnx"))
    base[strlen (base) - 5] = '\0';
  l->graph = elk_graph_new (
      l->opts.name != NULL && *l->opts.name != '\0' ? l->opts.name : base);
  elk_graph_set_attribute (l->graph, "model", elk_graph_get_name (l->graph));
  return TRUE;
}

/**
 * elk__onnx_load:
 * @path: the .onnx file
 * @options: (nullable): loader options; %NULL for the defaults
 * @error: return location for a #GError
 *
 * Returns: (transfer full) (nullable): the graph, or %NULL with @error set.
 */
ElkGraph *
elk__onnx_load (const char *path, const OnnxOptions *options, GError **error)
{
  Loader l = { 0 };
  ElkGraph *result = NULL;

  g_return_val_if_fail (path != NULL, NULL);

  if (!elk__onnx_loader_open (&l, path, options, error)
      || !elk__onnx_check_model (&l, error) || !elk__onnx_parse_dims (&l, error)
      || !elk__onnx_load_initializers (&l, error)
      || !elk__onnx_load_inputs (&l, error) || !elk__onnx_load_nodes (&l, error)
      || !elk__onnx_check_outputs (&l, FALSE, error)
      || !elk__onnx_infer_all (&l, NULL, error)
      || !elk__onnx_check_outputs (&l, TRUE, error))
    goto out;
  elk__onnx_count_weight_inputs (&l);
  elk__onnx_fuse_patterns (&l);
  if (!elk__onnx_lower_all (&l, NULL, error))
    goto out;
  if (elk_graph_get_n_ops (l.graph) == 0)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "%s: the graph has no operator that computes anything "
                   "(its %u nodes are layout or constant operators, which "
                   "elk folds away), so there is nothing to compile", path,
                   l.nodes->len);
      goto out;
    }
  elk__onnx_set_attributes (&l);
  result = g_steal_pointer (&l.graph);

out:
  elk__onnx_loader_clear (&l);
  return result;
}
