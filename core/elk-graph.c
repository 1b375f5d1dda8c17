/* elk-graph.c: the operator graph.
 *
 * Operators are added with an einsum-style spec such as "bmk,bkn->bmn"
 * (inputs before the arrow, output after it) or "nchw,kcrs->nk(h+r)(w+s)"
 * style window axes written "h+r".  Each letter is a loop dimension; loop
 * dimensions are numbered in order of first appearance, output first, as
 * in T10's IR.  Extents are taken from the tensors' shapes and checked for
 * consistency; loop dimensions that no plain axis determines (the kernel
 * dims of a window axis, for instance) are given in extra_extents as
 * "r=3,s=3".  Every inconsistency is a GError naming the operator.
 */
#include "config.h"

#include "elk-private.h"

#include <string.h>

#include <elk/elk-graph.h>
#include <elk/elk-error.h>

struct _ElkGraph
{
  gatomicrefcount ref_count;
  char *name;
  GArray *ops;            /* ElkOp */
  GArray *tensors;        /* ElkTensor */
  GHashTable *tensor_ids; /* name -> id + 1 */
  GHashTable *op_names;   /* set of op names */
  GHashTable *attributes; /* key -> value */
  /* Side table of routing conditions (elk_graph_set_op_condition()),
   * indexed by operator, NULL until the first condition; kept apart from
   * ElkOp so that the public struct, and with it the plugin ABI, stays. */
  GArray *conditions; /* ElkOpCondition */
  guint n_conditions;
};

typedef struct
{
  gboolean set;
  guint32 router_op;
  double probability;
  gboolean taken;
} ElkOpCondition;

/**
 * elk_graph_get_type:
 *
 * The boxed type of #ElkGraph.  Copying the boxed value takes a reference
 * (elk_graph_ref()) and freeing it drops one (elk_graph_unref()).
 *
 * Returns: the #GType of #ElkGraph.
 */
ELK_DEFINE_BOXED_TYPE (ElkGraph, elk_graph, elk_graph_ref, elk_graph_unref)

/**
 * elk_graph_new:
 * @name: (nullable): a name for the model, used in results ("model" when
 *   %NULL)
 *
 * Creates an empty graph.  A frontend then adds the tensors and operators
 * in execution order with elk_graph_add_tensor() and elk_graph_add_op().
 *
 * Returns: (transfer full): a new empty graph with one reference; drop it
 *   with elk_graph_unref().
 */
ElkGraph *
elk_graph_new (const char *name)
{
  ElkGraph *graph = g_new0 (ElkGraph, 1);

  g_atomic_ref_count_init (&graph->ref_count);
  graph->name = g_strdup (name != NULL ? name : "model");
  graph->ops = g_array_new (FALSE, TRUE, sizeof (ElkOp));
  graph->tensors = g_array_new (FALSE, TRUE, sizeof (ElkTensor));
  graph->tensor_ids = g_hash_table_new (g_str_hash, g_str_equal);
  graph->op_names = g_hash_table_new (g_str_hash, g_str_equal);
  graph->attributes = g_hash_table_new_full (g_str_hash, g_str_equal,
                                             g_free, g_free);
  return graph;
}

/**
 * elk_graph_ref:
 * @graph: a graph
 *
 * Takes a reference to @graph.  Graphs are read-only once a frontend has
 * built them, so threads share them through references.
 *
 * Returns: (transfer full): @graph
 */
ElkGraph *
elk_graph_ref (ElkGraph *graph)
{
  g_return_val_if_fail (graph != NULL, NULL);
  g_atomic_ref_count_inc (&graph->ref_count);
  return graph;
}

/**
 * elk_graph_unref:
 * @graph: (transfer full): a graph
 *
 * Drops a reference to @graph and frees it, its operators and its tensors
 * with the last one.
 */
void
elk_graph_unref (ElkGraph *graph)
{
  g_return_if_fail (graph != NULL);
  if (!g_atomic_ref_count_dec (&graph->ref_count))
    return;

  for (guint i = 0; i < graph->ops->len; i++)
    {
      ElkOp *op = &g_array_index (graph->ops, ElkOp, i);
      g_free (op->name);
      g_free (op->type);
    }
  for (guint i = 0; i < graph->tensors->len; i++)
    g_free (g_array_index (graph->tensors, ElkTensor, i).name);
  g_array_unref (graph->ops);
  g_array_unref (graph->tensors);
  g_hash_table_unref (graph->tensor_ids);
  g_hash_table_unref (graph->op_names);
  g_hash_table_unref (graph->attributes);
  if (graph->conditions != NULL)
    g_array_unref (graph->conditions);
  g_free (graph->name);
  g_free (graph);
}

/**
 * elk_graph_get_name:
 * @graph: a graph
 *
 * Gets the model's name.
 *
 * Returns: (transfer none): the model's name, as given to elk_graph_new().
 */
const char *
elk_graph_get_name (const ElkGraph *graph)
{
  return graph->name;
}

/**
 * elk_graph_get_n_ops:
 * @graph: a graph
 *
 * Gets how many operators the graph has.
 *
 * Returns: the number of operators.
 */
guint
elk_graph_get_n_ops (const ElkGraph *graph)
{
  return graph->ops->len;
}

/**
 * elk_graph_get_n_tensors:
 * @graph: a graph
 *
 * Gets how many tensors the graph has.
 *
 * Returns: the number of tensors.
 */
guint
elk_graph_get_n_tensors (const ElkGraph *graph)
{
  return graph->tensors->len;
}

/**
 * elk_graph_get_op:
 * @graph: a graph
 * @index: an operator index, below elk_graph_get_n_ops()
 *
 * Gets an operator.  The struct belongs to the graph and stays valid as
 * long as the graph does; it must not be modified.
 *
 * Returns: (transfer none): operator @index in execution order.
 */
const ElkOp *
elk_graph_get_op (const ElkGraph *graph, guint index)
{
  g_return_val_if_fail (index < graph->ops->len, NULL);
  return &g_array_index (graph->ops, ElkOp, index);
}

/**
 * elk_graph_get_tensor:
 * @graph: a graph
 * @index: a tensor id, below elk_graph_get_n_tensors()
 *
 * Gets a tensor.  The struct belongs to the graph and stays valid as long
 * as the graph does; it must not be modified.
 *
 * Returns: (transfer none): tensor @index.
 */
const ElkTensor *
elk_graph_get_tensor (const ElkGraph *graph, guint index)
{
  g_return_val_if_fail (index < graph->tensors->len, NULL);
  return &g_array_index (graph->tensors, ElkTensor, index);
}

/**
 * elk_graph_find_tensor:
 * @graph: a graph
 * @name: a tensor name
 *
 * Looks a tensor up by name.
 *
 * Returns: the id of the tensor called @name, or -1 if there is none.
 */
gint
elk_graph_find_tensor (const ElkGraph *graph, const char *name)
{
  return GPOINTER_TO_INT (g_hash_table_lookup (graph->tensor_ids, name)) - 1;
}

/**
 * elk_dtype_get_size:
 * @dtype: an element type
 *
 * Gets the size of one element of @dtype.
 *
 * Returns: the size of one element in bytes, or 0 for
 *   %ELK_DTYPE_QUANTIZED (whose tensors state their byte size) and for an
 *   invalid value.
 */
guint
elk_dtype_get_size (ElkDType dtype)
{
  switch (dtype)
    {
    case ELK_DTYPE_F32:
    case ELK_DTYPE_I32:
      return 4;
    case ELK_DTYPE_F16:
    case ELK_DTYPE_BF16:
      return 2;
    case ELK_DTYPE_F8:
    case ELK_DTYPE_I8:
    case ELK_DTYPE_U8:
      return 1;
    case ELK_DTYPE_I64:
    case ELK_DTYPE_F64:
      return 8;
    case ELK_DTYPE_QUANTIZED:
    default:
      return 0;
    }
}

/**
 * elk_op_has_integer_inputs:
 * @graph: the graph of @op
 * @op: one of @graph's operators
 *
 * Whether every input of @op has an integer element type (int8, uint8,
 * int32 or int64): a product of quantized operands, which the plan search
 * and the chips time at the chip's integer MAC rate
 * (`int8-macs-per-cycle`) rather than the floating-point one.
 *
 * Returns: %TRUE if @op has inputs and all of them are integer-typed.
 */
gboolean
elk_op_has_integer_inputs (const ElkGraph *graph, const ElkOp *op)
{
  g_return_val_if_fail (graph != NULL && op != NULL, FALSE);

  for (guint v = 1; v < op->n_operands; v++)
    {
      ElkDType dt = elk_graph_get_tensor (graph, op->tensors[v])->dtype;
      if (dt != ELK_DTYPE_I8 && dt != ELK_DTYPE_U8 && dt != ELK_DTYPE_I32
          && dt != ELK_DTYPE_I64)
        return FALSE;
    }
  return op->n_operands > 1;
}

/**
 * elk_dtype_to_string:
 * @dtype: an element type
 *
 * Names an element type, as results and messages write it.
 *
 * Returns: (transfer none): the type's name ("f32", "bf16", ...), or
 *   "invalid".
 */
const char *
elk_dtype_to_string (ElkDType dtype)
{
  static const char *const names[]
      = { "f32", "f16", "bf16", "f8",        "i8",
          "i32", "i64", "f64",  "quantized", "u8" };
  return (guint) dtype < G_N_ELEMENTS (names) ? names[dtype] : "invalid";
}

/**
 * elk_op_kind_to_string:
 * @kind: an operator cost class
 *
 * Names an operator cost class, as results and messages write it.
 *
 * Returns: (transfer none): the class's name ("matmul", "elementwise", ...),
 *   or "invalid".
 */
const char *
elk_op_kind_to_string (ElkOpKind kind)
{
  static const char *const names[] = { "matmul", "elementwise", "unary",
                                       "reduce", "gather", "slice", "conv",
                                       "pool" };
  return (guint) kind < G_N_ELEMENTS (names) ? names[kind] : "invalid";
}

/**
 * elk_tensor_origin_to_string:
 * @origin: where a tensor lives
 *
 * Names a tensor origin, as results and messages write it.
 *
 * Returns: (transfer none): "weight", "kv-cache" or "activation", or
 *   "invalid".
 */
const char *
elk_tensor_origin_to_string (ElkTensorOrigin origin)
{
  static const char *const names[] = { "weight", "kv-cache", "activation" };
  return (guint) origin < G_N_ELEMENTS (names) ? names[origin] : "invalid";
}

/**
 * elk_graph_add_tensor:
 * @graph: a graph being built
 * @name: a unique name
 * @dtype: element type
 * @origin: where the tensor lives before use
 * @n_dims: rank, at most %ELK_MAX_DIMS
 * @shape: (array length=n_dims): extents, each at least 1
 * @bytes: storage bytes, or 0 to compute them from @dtype (required for
 *   %ELK_DTYPE_QUANTIZED)
 * @error: return location for a #GError
 *
 * Appends a tensor.  Its id is its index, used by elk_graph_add_op() and
 * elk_graph_get_tensor().
 *
 * Returns: the new tensor's id, or -1 with @error set in the
 *   %ELK_GRAPH_ERROR domain.
 */
gint
elk_graph_add_tensor (ElkGraph *graph,
                      const char *name,
                      ElkDType dtype,
                      ElkTensorOrigin origin,
                      guint n_dims,
                      const guint64 *shape,
                      guint64 bytes,
                      GError **error)
{
  ElkTensor tensor = { 0 };
  guint64 n = 1;

  g_return_val_if_fail (graph != NULL, -1);
  g_return_val_if_fail (name != NULL, -1);

  if (g_hash_table_contains (graph->tensor_ids, name))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "graph '%s': tensor '%s' is defined twice", graph->name,
                   name);
      return -1;
    }
  if (n_dims > ELK_MAX_DIMS)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                   "graph '%s': tensor '%s' has %u dimensions, at most %d "
                   "are supported", graph->name, name, n_dims, ELK_MAX_DIMS);
      return -1;
    }
  for (guint i = 0; i < n_dims; i++)
    {
      if (shape[i] == 0)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "graph '%s': tensor '%s' has extent 0 in dimension "
                       "%u; every extent must be at least 1", graph->name,
                       name, i);
          return -1;
        }
      if (!g_uint64_checked_mul (&n, n, shape[i]))
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_LIMIT,
                       "graph '%s': tensor '%s' has more than 2^64 "
                       "elements", graph->name, name);
          return -1;
        }
      tensor.shape[i] = shape[i];
    }
  if (bytes == 0)
    {
      if (dtype == ELK_DTYPE_QUANTIZED)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "graph '%s': quantized tensor '%s' needs an explicit "
                       "byte size", graph->name, name);
          return -1;
        }
      if (!g_uint64_checked_mul (&bytes, n, elk_dtype_get_size (dtype)))
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_LIMIT,
                       "graph '%s': tensor '%s' is larger than 2^64 bytes",
                       graph->name, name);
          return -1;
        }
    }

  tensor.id = graph->tensors->len;
  tensor.name = g_strdup (name);
  tensor.dtype = dtype;
  tensor.origin = origin;
  tensor.n_dims = n_dims;
  tensor.n_elements = n;
  tensor.bytes = bytes;
  g_array_append_val (graph->tensors, tensor);
  g_hash_table_insert (graph->tensor_ids, tensor.name,
                       GINT_TO_POINTER (tensor.id + 1));
  return (gint) tensor.id;
}

/* Parses one operand of an einsum spec ("bm(h+r)" is not needed: a window
 * axis is written "h+r" and plain axes are single letters, so "bh+rk" reads
 * as the axes b, h+r, k).  Letters are assigned loop dimension numbers in
 * order of first appearance. */
static gboolean
parse_operand (const char *text,
               gsize len,
               ElkAccess *access,
               char *dim_names,
               guint *n_dims,
               const char *op_name,
               GError **error)
{
  guint axis = 0;

  for (gsize i = 0; i < len; i++)
    {
      char c = text[i];
      gint8 d;

      if (c == ' ')
        continue;
      if (c == '+')
        {
          if (axis == 0 || access->dims[axis - 1][1] != -1 || i + 1 >= len)
            goto bad;
          continue;
        }
      if (!g_ascii_isalpha (c))
        goto bad;

      d = -1;
      for (guint k = 0; k < *n_dims; k++)
        if (dim_names[k] == c)
          d = (gint8) k;
      if (d < 0)
        {
          if (*n_dims >= ELK_MAX_DIMS)
            {
              g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                           "operator '%s': more than %d loop dimensions",
                           op_name, ELK_MAX_DIMS);
              return FALSE;
            }
          dim_names[*n_dims] = c;
          d = (gint8) (*n_dims)++;
        }

      if (i > 0 && text[i - 1] == '+')
        {
          access->dims[axis - 1][1] = d;
          continue;
        }
      if (axis >= ELK_MAX_DIMS)
        goto bad;
      access->dims[axis][0] = d;
      access->dims[axis][1] = -1;
      axis++;
    }
  access->n_axes = axis;
  return TRUE;

bad:
  g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
               "operator '%s': bad einsum operand '%.*s' (expected letters, "
               "window axes as 'h+r')", op_name, (int) len, text);
  return FALSE;
}

/* The operands of @spec into @op, output first: their accesses, the loop
 * dimensions' letters and the tensors. */
static gboolean
parse_spec (ElkOp *op,
            const char *spec,
            const guint32 *tensors,
            guint n_tensors,
            const char *name,
            GError **error)
{
  const char *arrow;
  const char *p;
  guint n_inputs = 0;
  ElkAccess inputs[ELK_MAX_OPERANDS];
  ElkAccess output = { 0 };

  /* The output's letters are numbered first, so parse it before the inputs
   * even though it is written last. */
  arrow = strstr (spec, "->");
  if (arrow == NULL)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "operator '%s': einsum spec '%s' has no '->'", name, spec);
      return FALSE;
    }
  if (!parse_operand (arrow + 2, strlen (arrow + 2), &output, op->dim_names,
                      &op->n_dims, name, error))
    return FALSE;

  p = spec;
  while (p <= arrow)
    {
      const char *end = strchr (p, ',');
      if (end == NULL || end > arrow)
        end = arrow;
      if (n_inputs + 1 >= ELK_MAX_OPERANDS)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                       "operator '%s': more than %d inputs", name,
                       ELK_MAX_OPERANDS - 1);
          return FALSE;
        }
      memset (&inputs[n_inputs], 0, sizeof (ElkAccess));
      if (!parse_operand (p, (gsize) (end - p), &inputs[n_inputs],
                          op->dim_names, &op->n_dims, name, error))
        return FALSE;
      n_inputs++;
      p = end + 1;
    }

  if (n_tensors != n_inputs + 1)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "operator '%s': spec '%s' has %u operands but %u tensors "
                   "were given", name, spec, n_inputs + 1, n_tensors);
      return FALSE;
    }

  op->n_operands = n_tensors;
  op->access[0] = output;
  op->tensors[0] = tensors[n_tensors - 1];
  for (guint i = 0; i < n_inputs; i++)
    {
      op->access[i + 1] = inputs[i];
      op->tensors[i + 1] = tensors[i];
    }
  return TRUE;
}

/* Extra extents first, so that window axes can be checked against them. */
static gboolean
set_extra_extents (ElkOp *op,
                   const char *extra_extents,
                   const char *spec,
                   const char *name,
                   GError **error)
{
  if (extra_extents != NULL && *extra_extents != '\0')
    {
      g_auto (GStrv) items = g_strsplit (extra_extents, ",", -1);
      for (guint i = 0; items[i] != NULL; i++)
        {
          guint64 value;
          char letter;
          gint d = -1;

          g_strstrip (items[i]);
          if (strlen (items[i]) < 3 || items[i][1] != '='
              || !g_ascii_string_to_unsigned (items[i] + 2, 10, 1, G_MAXUINT64,
                                              &value, NULL))
            {
              g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                           "operator '%s': bad extent '%s' (expected "
                           "letter=positive integer)", name, items[i]);
              return FALSE;
            }
          letter = items[i][0];
          for (guint k = 0; k < op->n_dims; k++)
            if (op->dim_names[k] == letter)
              d = (gint) k;
          if (d < 0)
            {
              g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                           "operator '%s': extent for '%c' but the spec '%s' "
                           "has no such loop dimension", name, letter, spec);
              return FALSE;
            }
          op->extents[d] = value;
        }
    }
  return TRUE;
}

/* Plain axes fix extents; every tensor must agree.  Every loop dimension
 * then has an extent; *@work is their product. */
static gboolean
fix_extents (const ElkGraph *graph,
             ElkOp *op,
             const char *spec,
             const char *name,
             double *work,
             GError **error)
{
  for (guint o = 0; o < op->n_operands; o++)
    {
      const ElkTensor *t;
      if (op->tensors[o] >= graph->tensors->len)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "operator '%s': operand %u names tensor %u, but the "
                       "graph has %u tensors", name, o, op->tensors[o],
                       graph->tensors->len);
          return FALSE;
        }
      t = &g_array_index (graph->tensors, ElkTensor, op->tensors[o]);
      if (t->n_dims != op->access[o].n_axes)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "operator '%s': tensor '%s' has rank %u but the spec "
                       "'%s' gives it %u axes", name, t->name, t->n_dims, spec,
                       op->access[o].n_axes);
          return FALSE;
        }
      for (guint a = 0; a < t->n_dims; a++)
        {
          gint8 d = op->access[o].dims[a][0];
          if (op->access[o].dims[a][1] >= 0)
            continue;
          if (op->extents[d] == 0)
            op->extents[d] = t->shape[a];
          else if (op->extents[d] != t->shape[a])
            {
              g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                           "operator '%s': loop dimension '%c' is %"
                           G_GUINT64_FORMAT " but tensor '%s' axis %u is %"
                           G_GUINT64_FORMAT, name, op->dim_names[d],
                           op->extents[d], t->name, a, t->shape[a]);
              return FALSE;
            }
        }
    }

  for (guint d = 0; d < op->n_dims; d++)
    {
      if (op->extents[d] == 0)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "operator '%s': no extent for loop dimension '%c' "
                       "(give it in extra extents as '%c=N')", name,
                       op->dim_names[d], op->dim_names[d]);
          return FALSE;
        }
      *work *= (double) op->extents[d];
    }
  return TRUE;
}

/* Window axes: the tensor extent is the sum of the two loop extents minus
 * one (stride 1, as in T10's IR). */
static gboolean
check_windows (const ElkGraph *graph, const ElkOp *op, const char *name,
               GError **error)
{
  for (guint o = 0; o < op->n_operands; o++)
    {
      const ElkTensor *t = &g_array_index (graph->tensors, ElkTensor,
                                           op->tensors[o]);
      for (guint a = 0; a < t->n_dims; a++)
        {
          gint8 d0 = op->access[o].dims[a][0], d1 = op->access[o].dims[a][1];
          guint64 want;
          if (d1 < 0)
            continue;
          want = op->extents[d0] + op->extents[d1] - 1;
          if (t->shape[a] != want)
            {
              g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                           "operator '%s': window axis %u of tensor '%s' is %"
                           G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT
                           " (%c + %c - 1)", name, a, t->name, t->shape[a],
                           want, op->dim_names[d0], op->dim_names[d1]);
              return FALSE;
            }
        }
    }
  return TRUE;
}

/**
 * elk_graph_add_op:
 * @graph: a graph
 * @name: a unique operator name
 * @type: the frontend's operator name ("matmul", "softmax", ...)
 * @kind: the cost class
 * @layer: repeated-layer index, or -1
 * @spec: einsum spec, "in1,in2->out"
 * @tensors: (array length=n_tensors): tensor ids, inputs in spec order, then
 *   the output last (the same order as the spec reads)
 * @n_tensors: number of tensors, at most %ELK_MAX_OPERANDS
 * @extra_extents: (nullable): extents of loop dimensions that no plain axis
 *   fixes, as "r=3,s=3"
 * @error: return location for a #GError
 *
 * Appends an operator in execution order.  The stored operand order is the
 * T10 one: output first, then the inputs.  FLOPs default to
 * 2 x product(extents) for matmul and conv and product(extents) otherwise;
 * elk_graph_set_op_flops() overrides them.
 *
 * Returns: the operator id, or -1 with @error set.
 */
gint
elk_graph_add_op (ElkGraph *graph,
                  const char *name,
                  const char *type,
                  ElkOpKind kind,
                  gint32 layer,
                  const char *spec,
                  const guint32 *tensors,
                  guint n_tensors,
                  const char *extra_extents,
                  GError **error)
{
  ElkOp op = { 0 };
  double work = 1.0;

  g_return_val_if_fail (graph != NULL, -1);
  g_return_val_if_fail (name != NULL && spec != NULL, -1);

  if (g_hash_table_contains (graph->op_names, name))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "graph '%s': operator '%s' is defined twice", graph->name,
                   name);
      return -1;
    }
  if ((guint) kind >= ELK_OP_N_KINDS)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "operator '%s': unknown kind %d", name, (int) kind);
      return -1;
    }

  if (!parse_spec (&op, spec, tensors, n_tensors, name, error)
      || !set_extra_extents (&op, extra_extents, spec, name, error)
      || !fix_extents (graph, &op, spec, name, &work, error)
      || !check_windows (graph, &op, name, error))
    return -1;

  op.id = graph->ops->len;
  op.name = g_strdup (name);
  op.type = g_strdup (type != NULL ? type : elk_op_kind_to_string (kind));
  op.kind = kind;
  op.layer = layer;
  op.flops = (kind == ELK_OP_MATMUL || kind == ELK_OP_CONV) ? 2.0 * work
                                                            : work;
  g_array_append_val (graph->ops, op);
  g_hash_table_add (graph->op_names, op.name);
  return (gint) op.id;
}

/**
 * elk_graph_set_op_flops:
 * @graph: a graph being built
 * @op: an operator index
 * @flops: the operator's floating point operations
 *
 * Overrides the default FLOP count of an operator (for instance softmax's
 * exp, sum and divide per element).
 */
void
elk_graph_set_op_flops (ElkGraph *graph, guint op, double flops)
{
  g_return_if_fail (op < graph->ops->len);
  g_array_index (graph->ops, ElkOp, op).flops = flops;
}

/**
 * elk_graph_set_attribute:
 * @graph: a graph
 * @key: the fact's name
 * @value: its value
 *
 * Records a model fact for results and inspection ("params", "layers",
 * "phase").  Later values replace earlier ones; both strings are copied.
 */
void
elk_graph_set_attribute (ElkGraph *graph, const char *key, const char *value)
{
  g_hash_table_replace (graph->attributes, g_strdup (key), g_strdup (value));
}

/**
 * elk_graph_get_attribute:
 * @graph: a graph
 * @key: the fact's name
 *
 * Looks up a model fact recorded by the frontend.
 *
 * Returns: (transfer none) (nullable): the value recorded for @key with
 *   elk_graph_set_attribute(), or %NULL.
 */
const char *
elk_graph_get_attribute (const ElkGraph *graph, const char *key)
{
  return g_hash_table_lookup (graph->attributes, key);
}

/**
 * elk_graph_validate:
 * @graph: a graph
 * @error: return location for a #GError
 *
 * Checks what a frontend could get wrong as a whole: an empty graph, a
 * tensor read before any operator (or HBM) produced it.
 *
 * Returns: %TRUE if the graph is usable; %FALSE with @error set in the
 *   %ELK_GRAPH_ERROR domain otherwise.
 */
gboolean
elk_graph_validate (const ElkGraph *graph, GError **error)
{
  g_autofree gboolean *produced = NULL;

  if (graph->ops->len == 0)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "graph '%s' has no operators", graph->name);
      return FALSE;
    }

  /* An activation read by an operator must be produced by an earlier one,
   * unless no operator produces it at all (then it is a model input). */
  produced = g_new0 (gboolean, graph->tensors->len);
  for (guint i = 0; i < graph->ops->len; i++)
    {
      const ElkOp *op = &g_array_index (graph->ops, ElkOp, i);
      produced[op->tensors[0]] = TRUE;
    }
  {
    g_autofree gboolean *seen = g_new0 (gboolean, graph->tensors->len);
    for (guint i = 0; i < graph->ops->len; i++)
      {
        const ElkOp *op = &g_array_index (graph->ops, ElkOp, i);
        for (guint o = 1; o < op->n_operands; o++)
          {
            guint32 t = op->tensors[o];
            if (produced[t] && !seen[t])
              {
                g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                             "graph '%s': operator '%s' reads '%s' before "
                             "the operator that writes it",
                             graph->name, op->name,
                             g_array_index (graph->tensors, ElkTensor,
                                            t).name);
                return FALSE;
              }
          }
        seen[op->tensors[0]] = TRUE;
      }
  }
  return TRUE;
}

/**
 * elk_graph_set_op_condition:
 * @graph: a graph being built
 * @op: the conditional operator's index
 * @router_op: the index of the router operator whose choice decides
 *   whether @op runs; below @op
 * @probability: the chance, under the routing model the graph was built
 *   with, that a step's router selects @op; in [0, 1]
 * @taken: whether the graph's own sampled routing selects @op
 * @error: return location for a #GError
 *
 * Marks @op as run only when the router operator @router_op selects it (a
 * mixture-of-experts expert).  A causal scheduler may read @probability
 * but never @taken: only the chip, which charges what the sampled routing
 * uses, and an oracle scheduler that declares
 * %ELK_PROGRAM_ASSUME_KNOWN_ROUTING, may.  An untaken operator's execute
 * step costs nothing on a chip; its preload costs in full if the program
 * issues it before the router executes, and nothing after.
 *
 * Returns: %TRUE on success; %FALSE with @error set (%ELK_GRAPH_ERROR,
 *   %ELK_GRAPH_ERROR_INVALID) if either index is out of range, @router_op
 *   is not below @op, @probability is not in [0, 1], or @op already has a
 *   condition.
 */
gboolean
elk_graph_set_op_condition (ElkGraph *graph,
                            guint32 op,
                            guint32 router_op,
                            double probability,
                            gboolean taken,
                            GError **error)
{
  ElkOpCondition *cond;

  g_return_val_if_fail (graph != NULL, FALSE);
  if (op >= graph->ops->len || router_op >= graph->ops->len)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "graph '%s': condition on operator %u with router %u: "
                   "the graph has %u operators",
                   graph->name, op, router_op, graph->ops->len);
      return FALSE;
    }
  if (router_op >= op)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "graph '%s': conditional operator '%s' (%u): its router "
                   "'%s' (%u) must come before it",
                   graph->name, g_array_index (graph->ops, ElkOp, op).name, op,
                   g_array_index (graph->ops, ElkOp, router_op).name,
                   router_op);
      return FALSE;
    }
  /* Written so that NaN fails too. */
  if (!(probability >= 0.0 && probability <= 1.0))
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "graph '%s': conditional operator '%s': probability %g "
                   "is not in [0, 1]",
                   graph->name, g_array_index (graph->ops, ElkOp, op).name,
                   probability);
      return FALSE;
    }
  if (graph->conditions == NULL)
    graph->conditions = g_array_new (FALSE, TRUE, sizeof (ElkOpCondition));
  if (graph->conditions->len < graph->ops->len)
    g_array_set_size (graph->conditions, graph->ops->len);
  cond = &g_array_index (graph->conditions, ElkOpCondition, op);
  if (cond->set)
    {
      g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                   "graph '%s': operator '%s' already has a condition",
                   graph->name, g_array_index (graph->ops, ElkOp, op).name);
      return FALSE;
    }
  cond->set = TRUE;
  cond->router_op = router_op;
  cond->probability = probability;
  cond->taken = taken != FALSE;
  graph->n_conditions++;
  return TRUE;
}

/**
 * elk_graph_get_op_condition:
 * @graph: a graph
 * @op: an operator index
 * @router_op: (out) (optional): the router operator's index
 * @probability: (out) (optional): the chance that a step's router selects
 *   @op under the graph's routing model
 * @taken: (out) (optional): whether the graph's sampled routing selects @op
 *
 * Looks up the routing condition of an operator (see
 * elk_graph_set_op_condition()).  The out parameters are left untouched
 * when @op has no condition.
 *
 * Returns: %TRUE if @op has a condition, %FALSE if it always runs (or is
 *   out of range).
 */
gboolean
elk_graph_get_op_condition (const ElkGraph *graph,
                            guint32 op,
                            guint32 *router_op,
                            double *probability,
                            gboolean *taken)
{
  const ElkOpCondition *cond;

  g_return_val_if_fail (graph != NULL, FALSE);
  if (graph->conditions == NULL || op >= graph->conditions->len)
    return FALSE;
  cond = &g_array_index (graph->conditions, ElkOpCondition, op);
  if (!cond->set)
    return FALSE;
  if (router_op != NULL)
    *router_op = cond->router_op;
  if (probability != NULL)
    *probability = cond->probability;
  if (taken != NULL)
    *taken = cond->taken;
  return TRUE;
}

/**
 * elk_graph_has_conditions:
 * @graph: a graph
 *
 * Tells whether any operator of @graph runs only when a router selects it,
 * so that a chip or scheduler that cannot honour conditions refuses the
 * graph instead of mis-measuring it.
 *
 * Returns: %TRUE if elk_graph_set_op_condition() marked at least one
 *   operator.
 */
gboolean
elk_graph_has_conditions (const ElkGraph *graph)
{
  g_return_val_if_fail (graph != NULL, FALSE);
  return graph->n_conditions > 0;
}

/**
 * elk_graph_get_total_flops:
 * @graph: a graph
 *
 * Sums the FLOP counts of every operator.
 *
 * Returns: the floating point operations of all operators.
 */
double
elk_graph_get_total_flops (const ElkGraph *graph)
{
  double total = 0;
  for (guint i = 0; i < graph->ops->len; i++)
    total += g_array_index (graph->ops, ElkOp, i).flops;
  return total;
}

/**
 * elk_op_get_hbm_bytes:
 * @graph: the graph of @op
 * @op: an operator of @graph
 *
 * Counts what one operator's preload reads from HBM.
 *
 * Returns: the bytes @op reads from HBM: the sum of its weight and KV-cache
 *   inputs.  A tensor read by two operators is counted for both, since
 *   each preload brings it in again.
 */
guint64
elk_op_get_hbm_bytes (const ElkGraph *graph, const ElkOp *op)
{
  guint64 bytes = 0;
  for (guint o = 1; o < op->n_operands; o++)
    {
      const ElkTensor *t = &g_array_index (graph->tensors, ElkTensor,
                                           op->tensors[o]);
      if (t->origin != ELK_TENSOR_ORIGIN_ACTIVATION)
        bytes += t->bytes;
    }
  return bytes;
}

/**
 * elk_graph_get_hbm_bytes:
 * @graph: a graph
 *
 * Counts what the preloads of the whole graph read from HBM.
 *
 * Returns: the bytes all operators read from HBM, elk_op_get_hbm_bytes()
 *   summed over the graph.
 */
guint64
elk_graph_get_hbm_bytes (const ElkGraph *graph)
{
  guint64 total = 0;
  for (guint i = 0; i < graph->ops->len; i++)
    total += elk_op_get_hbm_bytes (graph,
                                   &g_array_index (graph->ops, ElkOp, i));
  return total;
}

/**
 * elk_graph_get_n_layers:
 * @graph: a graph
 *
 * Counts the repeated layers of the model.
 *
 * Returns: the number of repeated layers: one more than the largest layer
 *   index of an operator, 0 when no operator belongs to a layer.
 */
guint
elk_graph_get_n_layers (const ElkGraph *graph)
{
  gint32 max_layer = -1;
  for (guint i = 0; i < graph->ops->len; i++)
    max_layer = MAX (max_layer, g_array_index (graph->ops, ElkOp, i).layer);
  return (guint) (max_layer + 1);
}

/**
 * elk_op_dup_signature:
 * @graph: the graph of @op
 * @op: an operator of @graph
 *
 * Makes the key under which the plan space caches an operator's table.
 *
 * Returns: (transfer full): a string that is equal for two operators exactly
 *   when the plan space treats them alike: kind, extents, accesses, and each
 *   operand's element size and origin.  Plan tables are cached by it.  Free
 *   it with g_free().
 */
char *
elk_op_dup_signature (const ElkGraph *graph, const ElkOp *op)
{
  GString *s = g_string_new (elk_op_kind_to_string (op->kind));

  g_string_append_c (s, ':');
  for (guint d = 0; d < op->n_dims; d++)
    g_string_append_printf (s, "%" G_GUINT64_FORMAT ",", op->extents[d]);
  for (guint o = 0; o < op->n_operands; o++)
    {
      const ElkTensor *t = &g_array_index (graph->tensors, ElkTensor,
                                           op->tensors[o]);
      g_string_append_c (s, '|');
      for (guint a = 0; a < op->access[o].n_axes; a++)
        g_string_append_printf (s, "%d%+d.", op->access[o].dims[a][0],
                                op->access[o].dims[a][1]);
      g_string_append_printf (s, "o%d b%" G_GUINT64_FORMAT, t->origin,
                              t->bytes);
    }
  return g_string_free (s, FALSE);
}

/* Copies every attribute of @src into @dst (elk-fuse.c builds a new graph
 * that must keep the frontend's facts and the operators' immediates). */
void
elk__graph_copy_attributes (ElkGraph *dst, const ElkGraph *src)
{
  GHashTableIter iter;
  gpointer key, value;

  g_hash_table_iter_init (&iter, src->attributes);
  while (g_hash_table_iter_next (&iter, &key, &value))
    elk_graph_set_attribute (dst, key, value);
}
