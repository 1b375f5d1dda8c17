/* test-ipu-pod-onnx.c: the "ipu-pod" chip's functional mode on the ONNX
 * reference tests of the shared corpus.
 *
 * Each model is loaded by the "onnx" frontend plugin, compiled by the elk
 * scheduler for a small IPU-POD and run in functional mode; the graph
 * outputs gathered from the tiles are compared with the test's own
 * output_N.pb (max |err| / max |ref| below 1e-3).
 *
 * The einsum graph carries shapes, not data or scalars, so this file plays
 * the part of the runtime that feeds a compiled model:
 *
 *  - weights (initializers, Constant nodes) and inputs (input_N.pb) by
 *    name; inference batch normalization folded into the per-channel
 *    scale and shift (or into the convolution's weight and bias) that the
 *    graph's operators are defined on, as the frontend documents;
 *  - the tensors no operator writes (docs/frontend-onnx.md: layout
 *    operators such as Flatten or Concat, padded and phase-split views of
 *    a convolution's input and weight, a pool's padded input, the rows a
 *    Gather reads), rebuilt on the host from the data they are views of,
 *    through the chip's "resolve-tensor" signal.
 *
 * A recurrent node (LSTM, GRU, RNN) is expanded here exactly as the
 * frontend expanded it (elk__onnx_rnn_expand), so that the views its
 * time steps read have nodes to be rebuilt from.
 *
 * The scalars the einsum graph has no operands for (Clip's bounds,
 * LeakyRelu's slope, Gemm's alpha and beta, a pool's true window) come
 * from the frontend itself, as the graph attributes
 * "immediates:<operator>" that functional mode reads.
 *
 * Every arithmetic operation of the model runs on the tiles.  A test that
 * the frontend refuses, or that needs a view or kernel this file or the
 * emulator lacks, is skipped with the reason; the summary counts them.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <elk/elk.h>
#include "elk-test-util.h"

#include "onnx.pb-c.h"
#include "elk-onnx-recurrent.h"
#include "onnx-rnn-case.h"

static ElkRegistry *registry;

/* Plugin objects from this test's registry (tests/core/elk-test-util.c). */
#define make(...) elk_test_make (registry, __VA_ARGS__)

/* ---- Host values: a float array with its ONNX shape ---- */

typedef struct
{
  guint rank;
  gint64 dims[8];
  guint64 n;
  float *data;
} HVal;

static void
hval_free (gpointer p)
{
  HVal *v = p;
  g_free (v->data);
  g_free (v);
}

static HVal *
hval_new (guint rank, const gint64 *dims)
{
  HVal *v = g_new0 (HVal, 1);
  v->rank = rank;
  v->n = 1;
  for (guint i = 0; i < rank; i++)
    {
      v->dims[i] = dims[i];
      v->n *= (guint64) dims[i];
    }
  v->data = g_new0 (float, MAX (v->n, 1));
  return v;
}

/* A new value of shape @dims made from slices of @x along @axis: @outer
 * and @inner are the extents of @x before and after that axis. */
static HVal *
hval_for_axis (const HVal *x,
               gint64 axis,
               guint rank,
               const gint64 *dims,
               gint64 *outer,
               gint64 *inner)
{
  *outer = *inner = 1;
  for (gint64 i = 0; i < axis; i++)
    *outer *= x->dims[i];
  for (guint i = (guint) axis + 1; i < x->rank; i++)
    *inner *= x->dims[i];
  return hval_new (rank, dims);
}

/* A TensorProto's data as floats (FLOAT, DOUBLE, INT32/64, UINT8, INT8,
 * BOOL), or NULL with the reason. */
static HVal *
decode_tensor (const Onnx__TensorProto *tp, char **why)
{
  HVal *v;
  const guint8 *raw = tp->has_raw_data ? tp->raw_data.data : NULL;

  if (tp->n_dims > 8)
    {
      *why = g_strdup_printf ("tensor '%s' has rank %zu", tp->name,
                              tp->n_dims);
      return NULL;
    }
  if (tp->has_data_location
      && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    {
      *why = g_strdup_printf ("tensor '%s' has external data", tp->name);
      return NULL;
    }
  v = hval_new ((guint) tp->n_dims, tp->dims);
  for (guint64 i = 0; i < v->n; i++)
    {
      double x;
      switch (tp->data_type)
        {
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
          if (raw != NULL && tp->raw_data.len >= v->n * 4)
            {
              float f;
              memcpy (&f, raw + i * 4, 4);
              x = f;
            }
          else if (i < tp->n_float_data)
            x = tp->float_data[i];
          else
            goto short_data;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
          if (raw != NULL && tp->raw_data.len >= v->n * 8)
            memcpy (&x, raw + i * 8, 8);
          else if (i < tp->n_double_data)
            x = tp->double_data[i];
          else
            goto short_data;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
          if (raw != NULL && tp->raw_data.len >= v->n * 8)
            {
              gint64 k;
              memcpy (&k, raw + i * 8, 8);
              x = (double) k;
            }
          else if (i < tp->n_int64_data)
            x = (double) tp->int64_data[i];
          else
            goto short_data;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
          if (raw != NULL && tp->raw_data.len >= v->n * 4)
            {
              gint32 k;
              memcpy (&k, raw + i * 4, 4);
              x = k;
            }
          else if (i < tp->n_int32_data)
            x = tp->int32_data[i];
          else
            goto short_data;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
          if (raw != NULL && tp->raw_data.len >= v->n)
            x = raw[i];
          else if (i < tp->n_int32_data)
            x = tp->int32_data[i];
          else
            goto short_data;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
          if (raw != NULL && tp->raw_data.len >= v->n)
            x = (gint8) raw[i];
          else if (i < tp->n_int32_data)
            x = tp->int32_data[i];
          else
            goto short_data;
          break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
          if (raw != NULL && tp->raw_data.len >= v->n)
            x = raw[i] != 0;
          else if (i < tp->n_int32_data)
            x = tp->int32_data[i] != 0;
          else
            goto short_data;
          break;
        default:
          *why = g_strdup_printf ("tensor '%s' has ONNX data type %d",
                                  tp->name, tp->data_type);
          hval_free (v);
          return NULL;
        }
      v->data[i] = (float) x;
    }
  return v;

short_data:
  *why = g_strdup_printf ("tensor '%s' has less data than its shape",
                          tp->name);
  hval_free (v);
  return NULL;
}

static HVal *
read_pb (const char *path, char **why)
{
  g_autofree char *bytes = NULL;
  gsize len;
  Onnx__TensorProto *tp;
  HVal *v;

  if (!g_file_get_contents (path, &bytes, &len, NULL))
    {
      *why = g_strdup_printf ("cannot read %s", path);
      return NULL;
    }
  tp = onnx__tensor_proto__unpack (NULL, len, (const guint8 *) bytes);
  if (tp == NULL)
    {
      *why = g_strdup_printf ("%s is not a TensorProto", path);
      return NULL;
    }
  v = decode_tensor (tp, why);
  onnx__tensor_proto__free_unpacked (tp, NULL);
  return v;
}

/* ---- One model ---- */

typedef struct
{
  Onnx__ModelProto *model;
  const Onnx__GraphProto *g;
  ElkGraph *graph;
  GHashTable *values;    /* name -> HVal: weights, inputs, views built */
  GHashTable *producer;  /* value name -> NodeProto */
  GHashTable *by_op;     /* elk operator name -> NodeProto */
  GHashTable *tensors;   /* the emulator's tensors so far (borrowed) */
  GPtrArray *expansions; /* ElkOnnxRnnExpansion behind producer entries */
  char *why;             /* first reason a value could not be built */
} Model;

static void model_fail (Model *M, const char *format, ...) G_GNUC_PRINTF (2, 3);

static void
model_fail (Model *M, const char *format, ...)
{
  va_list ap;
  if (M->why != NULL)
    return;
  va_start (ap, format);
  M->why = g_strdup_vprintf (format, ap);
  va_end (ap);
}

static const Onnx__AttributeProto *
attr (const Onnx__NodeProto *n, const char *name)
{
  for (gsize i = 0; i < n->n_attribute; i++)
    if (strcmp (n->attribute[i]->name, name) == 0)
      return n->attribute[i];
  return NULL;
}

static gint64
attr_i (const Onnx__NodeProto *n, const char *name, gint64 def)
{
  const Onnx__AttributeProto *a = attr (n, name);
  return a != NULL ? a->i : def;
}

static float
attr_f (const Onnx__NodeProto *n, const char *name, float def)
{
  const Onnx__AttributeProto *a = attr (n, name);
  return a != NULL ? a->f : def;
}

static const int64_t *
attr_is (const Onnx__NodeProto *n, const char *name, gsize *len)
{
  const Onnx__AttributeProto *a = attr (n, name);
  *len = a != NULL ? a->n_ints : 0;
  return a != NULL && a->n_ints > 0 ? a->ints : NULL;
}

static HVal *get_value (Model *M, const char *name);

/* A value that is a view of a 1-element-per-element copy (Reshape,
 * Flatten, Identity, ...): same data, the shape of the graph tensor of
 * that name or, failing that, given. */
static HVal *
same_bytes (const HVal *src, guint rank, const gint64 *dims)
{
  HVal *v = hval_new (rank, dims);
  g_assert_cmpuint (v->n, ==, src->n);
  memcpy (v->data, src->data, src->n * sizeof (float));
  return v;
}

static gboolean
graph_shape (Model *M, const char *name, guint *rank, gint64 *dims)
{
  gint id = elk_graph_find_tensor (M->graph, name);
  const ElkTensor *t;
  if (id < 0)
    return FALSE;
  t = elk_graph_get_tensor (M->graph, (guint) id);
  *rank = t->n_dims;
  for (guint i = 0; i < t->n_dims; i++)
    dims[i] = (gint64) t->shape[i];
  return TRUE;
}

/* The shape of value @name before the run: a graph tensor's, a weight's
 * or input's, or through the layout nodes that lead to it. */
static gboolean
value_shape (Model *M, const char *name, guint *rank, gint64 *dims)
{
  const HVal *v = g_hash_table_lookup (M->values, name);
  const Onnx__NodeProto *n;

  if (graph_shape (M, name, rank, dims))
    return TRUE;
  if (v != NULL)
    {
      *rank = v->rank;
      memcpy (dims, v->dims, v->rank * sizeof (gint64));
      return TRUE;
    }
  n = g_hash_table_lookup (M->producer, name);
  if (n == NULL || n->n_input == 0
      || !value_shape (M, n->input[0], rank, dims))
    return FALSE;
  if (!strcmp (n->op_type, "Identity") || !strcmp (n->op_type, "Dropout")
      || !strcmp (n->op_type, "Cast"))
    return TRUE;
  if (!strcmp (n->op_type, "Concat"))
    {
      gint64 axis = attr_i (n, "axis", 0), total = 0;
      if (axis < 0)
        axis += *rank;
      for (gsize k = 0; k < n->n_input; k++)
        {
          guint r2;
          gint64 d2[8];
          if (!value_shape (M, n->input[k], &r2, d2))
            return FALSE;
          total += d2[axis];
        }
      dims[axis] = total;
      return TRUE;
    }
  return FALSE;
}

/* ---- Unrolled control flow (docs/frontend-onnx.md, "Control flow") ----
 *
 * The frontend inlines a Loop's or Scan's body once per iteration, naming
 * its nodes and values "<node>/<iteration>/<name>"; the last iteration
 * writes the loop-carried outputs under their own names, and scan outputs
 * are stacked views that no operator writes.  The harness finds the body
 * node of an unrolled operator, and rebuilds the views (a body input, an
 * Identity, a Scan input's slice, a stacked scan output) from the values
 * they are views of, as it does for the main graph's layout nodes. */

static const Onnx__GraphProto *
body_of (const Onnx__NodeProto *n)
{
  const Onnx__AttributeProto *a = attr (n, "body");
  return (!strcmp (n->op_type, "Loop") || !strcmp (n->op_type, "Scan"))
                 && a != NULL
             ? a->g
             : NULL;
}

/* Node @name of subgraph @g as the frontend names an inlined node: its
 * own name, or "<op>_<k>" for the k-th node. */
static const Onnx__NodeProto *
body_node (const Onnx__GraphProto *g, const char *name)
{
  for (gsize k = 0; k < g->n_node; k++)
    if (g->node[k]->name != NULL && !strcmp (g->node[k]->name, name))
      return g->node[k];
  for (gsize k = 0; k < g->n_node; k++)
    {
      g_autofree char *auto_name
          = g_strdup_printf ("%s_%zu", g->node[k]->op_type, k);
      if (!strcmp (auto_name, name))
        return g->node[k];
    }
  return NULL;
}

/* Splits @name into a Loop or Scan node of the main graph (the longest
 * prefix that names one), its iteration and the rest, the name inside
 * the body; FALSE if @name is not of that form. */
static gboolean
split_unrolled (Model *M,
                const char *name,
                const Onnx__NodeProto **loop,
                gint64 *iteration,
                const char **rest)
{
  for (const char *p = name + strlen (name); p > name; p--)
    {
      g_autofree char *head = NULL;
      const Onnx__NodeProto *n;
      char *end;

      if (*p != '/')
        continue;
      head = g_strndup (name, (gsize) (p - name));
      n = g_hash_table_lookup (M->by_op, head);
      if (n == NULL || body_of (n) == NULL || !g_ascii_isdigit (p[1]))
        continue;
      *iteration = g_ascii_strtoll (p + 1, &end, 10);
      if (*end != '/')
        continue;
      *loop = n;
      *rest = end + 1;
      return TRUE;
    }
  return FALSE;
}

/* The node of an operator unrolled from a (not nested) Loop or Scan. */
static const Onnx__NodeProto *
unrolled_node (Model *M, const char *op_name)
{
  const Onnx__NodeProto *loop;
  const char *rest;
  gint64 it;

  if (!split_unrolled (M, op_name, &loop, &it, &rest))
    return NULL;
  return body_node (body_of (loop), rest);
}

/* How many iterations @n ran: a Loop's trip count (its condition is taken
 * to stay true), a Scan's scan-input extent. */
static gint64
iterations_of (Model *M, const Onnx__NodeProto *n, guint *n_state)
{
  const Onnx__GraphProto *b = body_of (n);
  if (!strcmp (n->op_type, "Loop"))
    {
      HVal *m = get_value (M, n->input[0]);
      *n_state = (guint) n->n_input - 2;
      return m != NULL ? (gint64) m->data[0] : -1;
    }
  else
    {
      gsize na;
      const int64_t *axes = attr_is (n, "scan_input_axes", &na);
      gint64 n_scan = attr_i (n, "num_scan_inputs", 1);
      HVal *x;
      *n_state = (guint) (n->n_input - n_scan);
      x = get_value (M, n->input[*n_state]);
      (void) b;
      if (x == NULL)
        return -1;
      return x->dims[axes != NULL ? (axes[0] + x->rank) % x->rank : 0];
    }
}

static HVal *
scoped_value (Model *M, const Onnx__NodeProto *n, gint64 it, const char *name);

/* Slice @t of @x along @axis. */
static HVal *
slice_at (const HVal *x, gint64 axis, gint64 t)
{
  gint64 dims[8] = { 0 }, outer, inner;
  guint rank = 0;
  HVal *v;

  for (guint i = 0; i < x->rank; i++)
    if (i != axis)
      dims[rank++] = x->dims[i];
  v = hval_for_axis (x, axis, rank, dims, &outer, &inner);
  for (gint64 o = 0; o < outer; o++)
    memcpy (v->data + o * inner, x->data + (o * x->dims[axis] + t) * inner,
            (gsize) inner * sizeof (float));
  return v;
}

/* Body value @name of iteration @it of @n that no operator wrote. */
static HVal *
scoped_view (Model *M, const Onnx__NodeProto *n, gint64 it, const char *name)
{
  const Onnx__GraphProto *b = body_of (n);
  gboolean loop = !strcmp (n->op_type, "Loop");
  guint n_state, off = loop ? 1 : 0;
  gint64 trip = iterations_of (M, n, &n_state);
  HVal *x;

  /* A loop-carried output of the last iteration is the node's output. */
  for (guint k = 0; k < n_state && it == trip - 1; k++)
    if (!strcmp (b->output[off + k]->name, name))
      {
        x = get_value (M, n->output[k]);
        return x != NULL ? same_bytes (x, x->rank, x->dims) : NULL;
      }
  for (gsize i = 0; i < b->n_input; i++)
    {
      if (strcmp (b->input[i]->name, name) != 0)
        continue;
      if (loop && i < 2)
        {
          x = hval_new (0, NULL);
          x->data[0] = i == 0 ? (float) it : 1;
          return x;
        }
      if (i - 2 * loop < n_state)
        {
          /* A state: the node's input, or the previous iteration's. */
          guint k = (guint) i - 2 * loop;
          x = it == 0 ? get_value (M, n->input[loop ? 2 + k : k])
                      : scoped_value (M, n, it - 1, b->output[off + k]->name);
          return x != NULL ? same_bytes (x, x->rank, x->dims) : NULL;
        }
      else
        {
          guint j = (guint) i - n_state;
          gsize na, nd;
          const int64_t *axes = attr_is (n, "scan_input_axes", &na);
          const int64_t *dirs = attr_is (n, "scan_input_directions", &nd);
          x = get_value (M, n->input[i]);
          if (x == NULL)
            return NULL;
          return slice_at (x, axes != NULL ? (axes[j] + x->rank) % x->rank : 0,
                           dirs != NULL && dirs[j] ? trip - 1 - it : it);
        }
    }
  for (gsize k = 0; k < b->n_node; k++)
    if (b->node[k]->n_output > 0 && !strcmp (b->node[k]->output[0], name)
        && !strcmp (b->node[k]->op_type, "Identity"))
      {
        x = scoped_value (M, n, it, b->node[k]->input[0]);
        return x != NULL ? same_bytes (x, x->rank, x->dims) : NULL;
      }
  /* A value of the enclosing graph. */
  x = get_value (M, name);
  return x != NULL ? same_bytes (x, x->rank, x->dims) : NULL;
}

/* Body value @name of iteration @it of @n, computed or a view. */
static HVal *
scoped_value (Model *M, const Onnx__NodeProto *n, gint64 it, const char *name)
{
  const char *node = NULL;
  GHashTableIter iter;
  gpointer key, value;
  g_autofree char *full = NULL;

  /* The frontend's name for @n is by_op's key for it. */
  g_hash_table_iter_init (&iter, M->by_op);
  while (node == NULL && g_hash_table_iter_next (&iter, &key, &value))
    if (value == (gpointer) n)
      node = key;
  full = g_strdup_printf ("%s/%" G_GINT64_FORMAT "/%s", node, it, name);
  return get_value (M, full);
}

/* Scan output @name of @n: the iterations' values stacked. */
static HVal *
stacked_output (Model *M, const Onnx__NodeProto *n, const char *name)
{
  const Onnx__GraphProto *b = body_of (n);
  gboolean loop = !strcmp (n->op_type, "Loop");
  guint n_state, k = 0;
  gint64 trip = iterations_of (M, n, &n_state), axis = 0, dims[8] = { 0 };
  gint64 outer, inner;
  gsize na, nd;
  const int64_t *axes = attr_is (n, "scan_output_axes", &na);
  const int64_t *dirs = attr_is (n, "scan_output_directions", &nd);
  const char *body_out;
  HVal *first, *v;
  guint rank;

  while (k < n->n_output && strcmp (n->output[k], name) != 0)
    k++;
  if (k < n_state || k >= n->n_output || trip < 1)
    {
      model_fail (M, "no host view for output '%s' of %s", name, n->op_type);
      return NULL;
    }
  body_out = b->output[(loop ? 1 : 0) + k]->name;
  first = scoped_value (M, n, 0, body_out);
  if (first == NULL)
    return NULL;
  if (!loop && axes != NULL)
    axis = (axes[k - n_state] + first->rank + 1) % (first->rank + 1);
  rank = first->rank + 1;
  for (guint i = 0, r = 0; i < rank; i++)
    dims[i] = i == axis ? trip : first->dims[r++];
  v = hval_new (rank, dims);
  outer = 1;
  for (gint64 i = 0; i < axis; i++)
    outer *= dims[i];
  inner = (gint64) first->n / outer;
  for (gint64 t = 0; t < trip; t++)
    {
      gboolean rev = !loop && dirs != NULL && dirs[k - n_state];
      HVal *x = scoped_value (M, n, rev ? trip - 1 - t : t, body_out);
      if (x == NULL)
        {
          hval_free (v);
          return NULL;
        }
      for (gint64 o = 0; o < outer; o++)
        memcpy (v->data + (o * trip + t) * inner, x->data + o * inner,
                (gsize) inner * sizeof (float));
    }
  return v;
}

/* The output of a layout node, from its input. */
static HVal *
eval_layout (Model *M, const Onnx__NodeProto *n, const char *name)
{
  const char *op = n->op_type;
  HVal *x = n->n_input > 0 ? get_value (M, n->input[0]) : NULL;
  guint rank = 0;
  gint64 dims[8] = { 0 };

  if (body_of (n) != NULL)
    return stacked_output (M, n, name);
  if (x == NULL)
    return NULL;
  if (!strcmp (op, "Identity") || !strcmp (op, "Dropout")
      || !strcmp (op, "Reshape") || !strcmp (op, "Squeeze")
      || !strcmp (op, "Unsqueeze") || !strcmp (op, "Flatten"))
    {
      if (!graph_shape (M, name, &rank, dims))
        {
          if (strcmp (op, "Flatten") == 0)
            {
              gint64 axis = attr_i (n, "axis", 1);
              if (axis < 0)
                axis += x->rank;
              rank = 2;
              dims[0] = dims[1] = 1;
              for (guint i = 0; i < x->rank; i++)
                dims[i < axis ? 0 : 1] *= x->dims[i];
            }
          else if (strcmp (op, "Identity") == 0 || strcmp (op, "Dropout") == 0)
            {
              rank = x->rank;
              memcpy (dims, x->dims, sizeof (dims));
            }
          else
            {
              model_fail (M, "no shape for the output '%s' of %s", name, op);
              return NULL;
            }
        }
      return same_bytes (x, rank, dims);
    }
  if (!strcmp (op, "Cast"))
    {
      /* The frontend folds Cast into a view: the host converts, as the
       * ONNX runtime would (integer types truncate toward zero). */
      gint64 to = attr_i (n, "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
      gboolean integer = to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
                         && to != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE
                         && to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16
                         && to != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
      HVal *v = same_bytes (x, x->rank, x->dims);
      for (guint64 e = 0; e < v->n && integer; e++)
        v->data[e] = to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
                         ? (float) (v->data[e] != 0)
                         : truncf (v->data[e]);
      return v;
    }
  if (!strcmp (op, "Transpose"))
    {
      gsize np;
      const int64_t *perm = attr_is (n, "perm", &np);
      gint64 src_st[8], p[8];
      HVal *v;
      rank = x->rank;
      for (guint i = 0; i < rank; i++)
        p[i] = perm != NULL ? perm[i] : (gint64) (rank - 1 - i);
      for (guint i = 0; i < rank; i++)
        dims[i] = x->dims[p[i]];
      v = hval_new (rank, dims);
      src_st[rank - 1] = 1;
      for (gint i = (gint) rank - 2; i >= 0; i--)
        src_st[i] = src_st[i + 1] * x->dims[i + 1];
      for (guint64 e = 0; e < v->n; e++)
        {
          guint64 rest = e, s = 0;
          for (gint i = (gint) rank - 1; i >= 0; i--)
            {
              s += (rest % (guint64) dims[i]) * (guint64) src_st[p[i]];
              rest /= (guint64) dims[i];
            }
          v->data[e] = x->data[s];
        }
      return v;
    }
  if (!strcmp (op, "Concat"))
    {
      gint64 axis = attr_i (n, "axis", 0), outer = 1, off = 0, width;
      HVal *v;
      if (axis < 0)
        axis += x->rank;
      rank = x->rank;
      memcpy (dims, x->dims, sizeof (dims));
      dims[axis] = 0;
      for (gsize k = 0; k < n->n_input; k++)
        {
          HVal *y = get_value (M, n->input[k]);
          if (y == NULL)
            return NULL;
          dims[axis] += y->dims[axis];
        }
      for (gint64 i = 0; i < axis; i++)
        outer *= dims[i];
      v = hval_new (rank, dims);
      width = (gint64) (v->n / (guint64) outer);
      for (gsize k = 0; k < n->n_input; k++)
        {
          HVal *y = get_value (M, n->input[k]);
          gint64 w = (gint64) (y->n / (guint64) outer);
          for (gint64 o = 0; o < outer; o++)
            memcpy (v->data + o * width + off, y->data + o * w,
                    (gsize) w * sizeof (float));
          off += w;
        }
      return v;
    }
  if (!strcmp (op, "ElkSlice"))
    {
      gint64 axis = attr_i (n, "axis", 0), start = attr_i (n, "start", 0);
      gint64 len = attr_i (n, "end", 0) - start, outer = 1, inner = 1;
      HVal *v;
      rank = 0;
      for (guint i = 0; i < x->rank; i++)
        if (i != axis)
          dims[rank++] = x->dims[i];
        else if (!attr_i (n, "squeeze", 0))
          dims[rank++] = len;
      v = hval_for_axis (x, axis, rank, dims, &outer, &inner);
      for (gint64 o = 0; o < outer; o++)
        memcpy (v->data + o * len * inner,
                x->data + (o * x->dims[axis] + start) * inner,
                (gsize) (len * inner) * sizeof (float));
      return v;
    }
  if (!strcmp (op, "ElkExpandDims"))
    {
      gint64 axis = attr_i (n, "axis", 0);
      rank = x->rank + 1;
      for (guint i = 0, r = 0; i < rank; i++)
        dims[i] = i == axis ? 1 : x->dims[r++];
      return same_bytes (x, rank, dims);
    }
  model_fail (M, "no host view for the output of %s '%s'", op, name);
  return NULL;
}

/* The window of spatial axis i of a Conv or pool node over an input of
 * extent @in: stride, effective kernel, dilation and leading padding. */
typedef struct
{
  gint64 stride, kernel, eff, dil, pad, in;
} Win;

static void
node_window (const Onnx__NodeProto *n, guint i, guint n_sp, gint64 in,
             gint64 kernel, Win *w)
{
  gsize ns, nd, np;
  const int64_t *st = attr_is (n, "strides", &ns);
  const int64_t *dl = attr_is (n, "dilations", &nd);
  const int64_t *pd = attr_is (n, "pads", &np);
  const Onnx__AttributeProto *ap = attr (n, "auto_pad");
  g_autofree char *auto_pad = ap != NULL && ap->has_s
                                ? g_strndup ((const char *) ap->s.data,
                                             ap->s.len)
                                : g_strdup ("NOTSET");

  w->stride = st != NULL ? st[i] : 1;
  w->dil = dl != NULL ? dl[i] : 1;
  w->kernel = kernel;
  w->eff = w->dil * (kernel - 1) + 1;
  w->pad = pd != NULL ? pd[i] : 0;
  w->in = in;
  (void) n_sp;
  if (g_str_has_prefix (auto_pad, "SAME_"))
    {
      gint64 o = (in + w->stride - 1) / w->stride;
      gint64 pad = MAX ((o - 1) * w->stride + w->eff - in, 0);
      w->pad = auto_pad[5] == 'U' ? pad / 2 : pad - pad / 2;
    }
  else if (strcmp (auto_pad, "VALID") == 0)
    w->pad = 0;
}

/* The node an operator was lowered from that reads tensor @id. */
static const Onnx__NodeProto *
reader_of (Model *M, gint id)
{
  for (guint i = 0; i < elk_graph_get_n_ops (M->graph); i++)
    {
      const ElkOp *op = elk_graph_get_op (M->graph, i);
      for (guint v = 1; v < op->n_operands; v++)
        if (op->tensors[v] == (guint32) id)
          return g_hash_table_lookup (M->by_op, op->name);
    }
  return NULL;
}

/* x#conv-input, x#pool-input: the padded input split into stride phases
 * per spatial axis (docs/frontend-onnx.md, "Strided windows").  Element
 * (n, c, p, i...) of the phase-split view is input position i * stride +
 * p of the padded input; the phases of both axes are folded into the
 * channel for a convolution, and are axes of their own after each window
 * axis for a pool.  Padding reads 0 (pools skip it in the kernel). */
static HVal *
window_view (Model *M, const char *name, const HVal *x,
             const Onnx__NodeProto *n, gboolean pool)
{
  guint rank, n_sp = x->rank - 2;
  gint64 dims[8], phase[2] = { 1, 1 }, q[2] = { 1, 1 };
  Win w[2];
  HVal *v;
  gsize nk;
  const int64_t *ks = attr_is (n, "kernel_shape", &nk);

  if (!graph_shape (M, name, &rank, dims) || n_sp > 2)
    {
      model_fail (M, "view '%s' has no graph tensor", name);
      return NULL;
    }
  for (guint i = 0; i < n_sp; i++)
    {
      gint64 k = ks != NULL ? ks[i] : 0;
      if (!pool && ks == NULL)
        {
          /* QLinearConv's weight is its fourth input. */
          HVal *wt
              = get_value (M, n->input[strcmp (n->op_type, "QLinearConv") ? 1
                                                                          : 3]);
          if (wt == NULL)
            return NULL;
          k = wt->dims[2 + i];
        }
      node_window (n, i, n_sp, x->dims[2 + i], k, &w[i]);
      phase[i] = w[i].stride > 1 && w[i].eff > 1 ? w[i].stride : 1;
    }
  /* The view's spatial extents, from its graph shape. */
  if (pool)
    {
      guint a = 2;
      for (guint i = 0; i < n_sp; i++)
        {
          q[i] = dims[a++];
          if (phase[i] > 1)
            a++;
        }
    }
  else
    for (guint i = 0; i < n_sp; i++)
      q[i] = dims[rank - n_sp + i];
  v = hval_new (rank, dims);
  /* Fill in (n, c, i, p_i, j, p_j) order and place by layout. */
  {
    gint64 N = x->dims[0], C = x->dims[1];
    gint64 H = x->dims[2], W = n_sp > 1 ? x->dims[3] : 1;
    gint64 Qh = q[0], Qw = n_sp > 1 ? q[1] : 1;
    gint64 Ph = phase[0], Pw = n_sp > 1 ? phase[1] : 1;
    gint64 sh = phase[0] > 1 ? w[0].stride : (w[0].eff == 1 ? w[0].stride : 1);
    gint64 sw = n_sp > 1 ? (phase[1] > 1 ? w[1].stride
                            : (w[1].eff == 1 ? w[1].stride : 1)) : 1;
    gint64 padh = w[0].pad, padw = n_sp > 1 ? w[1].pad : 0;
    guint64 expect = (guint64) (N * C * Qh * Qw * Ph * Pw);

    if (expect != v->n)
      {
        model_fail (M, "view '%s' has %" G_GUINT64_FORMAT " elements, the "
                    "window geometry gives %" G_GUINT64_FORMAT, name, v->n,
                    expect);
        hval_free (v);
        return NULL;
      }
    for (gint64 b = 0; b < N; b++)
      for (gint64 c = 0; c < C; c++)
        for (gint64 i = 0; i < Qh; i++)
          for (gint64 ph = 0; ph < Ph; ph++)
            for (gint64 j = 0; j < Qw; j++)
              for (gint64 pw = 0; pw < Pw; pw++)
                {
                  gint64 y = i * sh + ph - padh, z = j * sw + pw - padw;
                  guint64 at;
                  float val = 0;
                  if (y >= 0 && y < H && z >= 0 && z < W)
                    val = x->data[((b * C + c) * H + y) * W + z];
                  if (pool)
                    at = (guint64) (((((b * C + c) * Qh + i) * Ph + ph) * Qw
                                     + j) * Pw + pw);
                  else
                    at = (guint64) ((((b * C + c) * Ph * Pw + ph * Pw + pw)
                                     * Qh + i) * Qw + j);
                  v->data[at] = val;
                }
  }
  return v;
}

/* w#conv-weight: the kernel over the phase-split input: tap r of phase p
 * is kernel offset r * stride + p, a dilated tap or 0 past the kernel. */
static HVal *
weight_view (Model *M, const char *name, const HVal *wt,
             const Onnx__NodeProto *n)
{
  guint rank, n_sp = wt->rank - 2;
  gint64 dims[8], phase[2] = { 1, 1 }, r1[2] = { 1, 1 };
  Win w[2];
  guint xr;
  gint64 xd[8];
  HVal *v;

  /* Weights are preloaded before the input exists: its shape only. */
  if (!value_shape (M, n->input[0], &xr, xd))
    {
      model_fail (M, "no shape for the input '%s' of '%s'", n->input[0],
                  name);
      return NULL;
    }
  if (!graph_shape (M, name, &rank, dims) || n_sp > 2)
    {
      model_fail (M, "view '%s' has no graph tensor", name);
      return NULL;
    }
  for (guint i = 0; i < n_sp; i++)
    {
      node_window (n, i, n_sp, xd[2 + i], wt->dims[2 + i], &w[i]);
      phase[i] = w[i].stride > 1 && w[i].eff > 1 ? w[i].stride : 1;
      r1[i] = dims[rank - n_sp + i];
    }
  v = hval_new (rank, dims);
  {
    gint64 K = wt->dims[0], Cg = wt->dims[1];
    gint64 kh = wt->dims[2], kw = n_sp > 1 ? wt->dims[3] : 1;
    gint64 Ph = phase[0], Pw = n_sp > 1 ? phase[1] : 1;
    gint64 Rh = r1[0], Rw = n_sp > 1 ? r1[1] : 1;
    guint64 expect = (guint64) (K * Cg * Ph * Pw * Rh * Rw);

    if (expect != v->n)
      {
        model_fail (M, "view '%s' has %" G_GUINT64_FORMAT " elements, the "
                    "window geometry gives %" G_GUINT64_FORMAT, name, v->n,
                    expect);
        hval_free (v);
        return NULL;
      }
    for (gint64 k = 0; k < K; k++)
      for (gint64 c = 0; c < Cg; c++)
        for (gint64 ph = 0; ph < Ph; ph++)
          for (gint64 pw = 0; pw < Pw; pw++)
            for (gint64 r = 0; r < Rh; r++)
              for (gint64 s = 0; s < Rw; s++)
                {
                  gint64 oh = r * Ph + ph, ow = s * Pw + pw;
                  float val = 0;
                  if (oh < w[0].eff && oh % w[0].dil == 0
                      && (n_sp < 2 || (ow < w[1].eff && ow % w[1].dil == 0)))
                    val = wt->data[((k * Cg + c) * kh + oh / w[0].dil) * kw
                                   + (n_sp > 1 ? ow / w[1].dil : 0)];
                  v->data[((((k * Cg + c) * Ph + ph) * Pw + pw) * Rh + r)
                          * Rw + s] = val;
                }
  }
  return v;
}

/* x#rows: out[d<a, i..., d>a] = x[d<a, idx[i...], d>a], the rows the
 * Gather reads (the graph's gather operator copies them into place). */
static HVal *
rows_view (Model *M, const char *name, const HVal *x,
           const Onnx__NodeProto *n)
{
  guint rank;
  gint64 dims[8], axis = attr_i (n, "axis", 0), outer = 1, inner = 1;
  HVal *idx = get_value (M, n->input[1]), *v;

  if (idx == NULL || !graph_shape (M, name, &rank, dims))
    return NULL;
  if (axis < 0)
    axis += x->rank;
  v = hval_for_axis (x, axis, rank, dims, &outer, &inner);
  for (gint64 o = 0; o < outer; o++)
    for (guint64 j = 0; j < idx->n; j++)
      {
        gint64 row = (gint64) idx->data[j];
        if (row < 0)
          row += x->dims[axis];
        memcpy (v->data + ((guint64) o * idx->n + j) * (guint64) inner,
                x->data + (o * x->dims[axis] + row) * inner,
                (gsize) inner * sizeof (float));
      }
  return v;
}

static HVal *
build_value (Model *M, const char *name)
{
  const char *hash = strchr (name, '#');
  const Onnx__NodeProto *n;
  GBytes *b;

  /* Computed on the tiles. */
  if (M->tensors != NULL
      && (b = g_hash_table_lookup (M->tensors, name)) != NULL
      && elk_graph_find_tensor (M->graph, name) >= 0)
    {
      guint rank;
      gint64 dims[8];
      gsize size;
      const float *f = g_bytes_get_data (b, &size);
      HVal *v;
      graph_shape (M, name, &rank, dims);
      v = hval_new (rank, dims);
      g_assert_cmpuint (size, ==, v->n * sizeof (float));
      memcpy (v->data, f, size);
      return v;
    }
  if (hash != NULL)
    {
      g_autofree char *base = g_strndup (name, (gsize) (hash - name));
      gint id = elk_graph_find_tensor (M->graph, name);
      HVal *x = get_value (M, base);
      if (x == NULL)
        return NULL;
      if (g_str_has_prefix (hash, "#grouped"))
        {
          guint rank;
          gint64 dims[8];
          graph_shape (M, name, &rank, dims);
          return same_bytes (x, rank, dims);
        }
      n = id >= 0 ? reader_of (M, id) : NULL;
      if (n == NULL)
        {
          model_fail (M, "no operator reads view '%s'", name);
          return NULL;
        }
      if (g_str_has_prefix (hash, "#conv-input"))
        return window_view (M, name, x, n, FALSE);
      if (g_str_has_prefix (hash, "#pool-input"))
        return window_view (M, name, x, n, TRUE);
      if (g_str_has_prefix (hash, "#conv-weight"))
        return weight_view (M, name, x, n);
      if (g_str_has_prefix (hash, "#rows"))
        return rows_view (M, name, x, n);
      model_fail (M, "no host view '%s'", hash);
      return NULL;
    }
  /* A conv output seen grouped: the same bytes. */
  if (M->tensors != NULL)
    {
      GHashTableIter it;
      gpointer key, val;
      gsize len = strlen (name);
      g_hash_table_iter_init (&it, M->tensors);
      while (g_hash_table_iter_next (&it, &key, &val))
        if (strncmp (key, name, len) == 0
            && g_str_has_prefix ((const char *) key + len, "#grouped"))
          {
            gint64 dims[8];
            guint rank;
            HVal *v;
            gsize size;
            graph_shape (M, key, &rank, dims);
            /* [N, g, K/g, ...] is [N, K, ...]. */
            dims[1] *= dims[2];
            memmove (dims + 2, dims + 3, (rank - 3) * sizeof (gint64));
            v = hval_new (rank - 1, dims);
            memcpy (v->data, g_bytes_get_data (val, &size),
                    v->n * sizeof (float));
            return v;
          }
    }
  n = g_hash_table_lookup (M->producer, name);
  if (n != NULL)
    return eval_layout (M, n, name);
  {
    const Onnx__NodeProto *loop;
    const char *rest;
    gint64 it;
    if (split_unrolled (M, name, &loop, &it, &rest))
      return scoped_view (M, loop, it, rest);
  }
  model_fail (M, "no data for tensor '%s'", name);
  return NULL;
}

static HVal *
get_value (Model *M, const char *name)
{
  HVal *v = g_hash_table_lookup (M->values, name);
  if (v != NULL)
    return v;
  v = build_value (M, name);
  if (v != NULL)
    g_hash_table_insert (M->values, g_strdup (name), v);
  return v;
}

static GBytes *
on_resolve (GObject *chip, const char *name, GHashTable *tensors,
            gpointer user_data)
{
  Model *M = user_data;
  HVal *v;

  M->tensors = tensors;
  v = get_value (M, name);
  if (v == NULL)
    {
      model_fail (M, "no data for '%s'", name);
      return NULL;
    }
  return g_bytes_new (v->data, v->n * sizeof (float));
}

/* Inference batch normalization as the per-channel scale and shift the
 * graph's operators use: s = gamma / sqrt(var + eps), t = beta - mean s. */
static gboolean
bn_fold (Model *M, const Onnx__NodeProto *bn, float **s, float **t,
         guint64 *C)
{
  HVal *ga = get_value (M, bn->input[1]), *be = get_value (M, bn->input[2]);
  HVal *mu = get_value (M, bn->input[3]), *va = get_value (M, bn->input[4]);
  float eps = attr_f (bn, "epsilon", 1e-5f);

  if (ga == NULL || be == NULL || mu == NULL || va == NULL)
    return FALSE;
  *C = ga->n;
  *s = g_new (float, ga->n);
  *t = g_new (float, ga->n);
  for (guint64 c = 0; c < ga->n; c++)
    {
      double sc = ga->data[c] / sqrt ((double) va->data[c] + eps);
      (*s)[c] = (float) sc;
      (*t)[c] = (float) (be->data[c] - mu->data[c] * sc);
    }
  return TRUE;
}

static void
replace_value (Model *M, const char *name, HVal *v)
{
  g_hash_table_replace (M->values, g_strdup (name), v);
}

/* Whether @name is a graph input that is not an initializer: data only
 * the runtime has (input_N.pb). */
static gboolean
is_runtime_input (Model *M, const char *name)
{
  for (gsize i = 0; i < M->g->n_initializer; i++)
    if (strcmp (M->g->initializer[i]->name, name) == 0)
      return FALSE;
  for (gsize i = 0; i < M->g->n_input; i++)
    if (strcmp (M->g->input[i]->name, name) == 0)
      return TRUE;
  return FALSE;
}

/* The recurrent nodes, expanded as the frontend expands them: their
 * generated nodes become producers and operators of the model.  The
 * frontend was told (full-sequences) that a run-time sequence_lens gives
 * every sequence its full length; the run's data must agree. */
static gboolean
expand_recurrent (Model *M)
{
  for (gsize i = 0; i < M->g->n_node; i++)
    {
      const Onnx__NodeProto *n = M->g->node[i];
      g_autofree char *prefix = NULL;
      char *why = NULL;
      guint rank;
      gint64 x[8], r[8];
      gint64 S;
      ElkOnnxRnnExpansion *e;

      if (strcmp (n->op_type, "LSTM") && strcmp (n->op_type, "GRU")
          && strcmp (n->op_type, "RNN"))
        continue;
      if (!value_shape (M, n->input[0], &rank, x)
          || !value_shape (M, n->input[2], &rank, r))
        {
          model_fail (M, "no shapes for recurrent node %zu", i);
          return FALSE;
        }
      S = x[attr_i (n, "layout", 0) ? 1 : 0];
      if (n->n_input > 4 && *n->input[4])
        {
          HVal *lens = get_value (M, n->input[4]);
          g_assert_nonnull (lens);
          for (guint64 k = 0; k < lens->n; k++)
            g_assert_cmpfloat (lens->data[k], ==, (double) S);
        }
      prefix = n->name != NULL && *n->name != '\0'
                   ? g_strdup (n->name)
                   : g_strdup_printf ("%s_%zu", n->op_type, i);
      e = elk__onnx_rnn_expand (n, prefix, S, r[2], &why);
      g_assert_null (why);
      g_ptr_array_add (M->expansions, e);
      for (guint k = 0; k < e->nodes->len; k++)
        {
          Onnx__NodeProto *m = g_ptr_array_index (e->nodes, k);
          g_hash_table_insert (M->producer, m->output[0], m);
          g_hash_table_insert (M->by_op, g_strdup (m->name), m);
        }
    }
  return TRUE;
}

/* Folds of inference batch normalization into the operators' weights.
 * The scalars (Clip's bounds, Gemm's alpha and beta, a pool's window,
 * ...) are not read here: the frontend sets them as the graph attributes
 * "immediates:<operator>", and a run that misses one fails.  The one
 * exception is a Clip bound that is a graph input, which only the run
 * knows. */
static gboolean
prepare_ops (Model *M)
{
  for (guint i = 0; i < elk_graph_get_n_ops (M->graph); i++)
    {
      const ElkOp *op = elk_graph_get_op (M->graph, i);
      g_autofree char *node = g_strdup (op->name);
      const Onnx__NodeProto *n;
      g_autofree char *key = g_strdup_printf ("immediates:%s", op->name);

      /* A node lowered into several operators names the others
       * "<node>#<part>" (Softmax's max, exp and sum). */
      if (strchr (node, '#') != NULL)
        *strchr (node, '#') = '\0';
      n = g_hash_table_lookup (M->by_op, node);
      if (n == NULL)
        n = unrolled_node (M, node);

      if (n == NULL)
        {
          model_fail (M, "operator '%s' has no ONNX node of that name",
                      op->name);
          return FALSE;
        }
      if (!strcmp (op->type, "conv+batchnorm"))
        {
          /* The BatchNormalization reading this Conv's output. */
          const Onnx__NodeProto *bn = NULL;
          g_autofree float *s = NULL, *t = NULL;
          guint64 C;
          HVal *w = get_value (M, n->input[1]), *nw, *nb;
          const char *bias_name;
          for (gsize j = 0; j < M->g->n_node && bn == NULL; j++)
            if (!strcmp (M->g->node[j]->op_type, "BatchNormalization")
                && !strcmp (M->g->node[j]->input[0], n->output[0]))
              bn = M->g->node[j];
          if (bn == NULL || w == NULL || !bn_fold (M, bn, &s, &t, &C))
            {
              model_fail (M, "cannot fold the BatchNormalization of '%s'",
                          op->name);
              return FALSE;
            }
          nw = same_bytes (w, w->rank, w->dims);
          for (guint64 e = 0; e < nw->n; e++)
            nw->data[e] *= s[e / (nw->n / C)];
          nb = hval_new (1, (gint64[]) { (gint64) C });
          if (n->n_input > 2 && *n->input[2])
            {
              HVal *b = get_value (M, n->input[2]);
              bias_name = n->input[2];
              for (guint64 c = 0; c < C; c++)
                nb->data[c] = b->data[c] * s[c] + t[c];
            }
          else
            {
              bias_name = bn->input[2];
              memcpy (nb->data, t, C * sizeof (float));
            }
          replace_value (M, n->input[1], nw);
          replace_value (M, bias_name, nb);
        }
      else if (!strcmp (op->type, "clip")
               && elk_graph_get_attribute (M->graph, key) == NULL)
        {
          /* A bound given as a graph input is data of the run, which the
           * frontend cannot know at import (node/test_clip feeds min and
           * max as input_1.pb and input_2.pb): the runtime passes it.  A
           * missing immediate for any other reason is the frontend's. */
          float lim[2] = { -G_MAXFLOAT, G_MAXFLOAT };
          char buf[2][G_ASCII_DTOSTR_BUF_SIZE];
          g_autofree char *imm = NULL;
          gboolean runtime = FALSE;
          for (guint b = 0; b < 2; b++)
            if (n->n_input > b + 1 && *n->input[b + 1])
              {
                HVal *v;
                g_assert_true (is_runtime_input (M, n->input[b + 1]));
                v = get_value (M, n->input[b + 1]);
                if (v == NULL)
                  return FALSE;
                lim[b] = v->data[0];
                runtime = TRUE;
              }
          g_assert_true (runtime);
          imm = g_strdup_printf ("%s,%s",
                                 g_ascii_formatd (buf[0], sizeof buf[0],
                                                  "%.9g", lim[0]),
                                 g_ascii_formatd (buf[1], sizeof buf[1],
                                                  "%.9g", lim[1]));
          elk_graph_set_attribute (M->graph, key, imm);
        }
      else if (!strcmp (op->type, "batchnorm"))
        {
          g_autofree float *s = NULL, *t = NULL;
          guint64 C;
          HVal *ns, *nt;
          if (!bn_fold (M, n, &s, &t, &C))
            return FALSE;
          ns = hval_new (1, (gint64[]) { (gint64) C });
          nt = hval_new (1, (gint64[]) { (gint64) C });
          memcpy (ns->data, s, C * sizeof (float));
          memcpy (nt->data, t, C * sizeof (float));
          replace_value (M, n->input[1], ns);
          replace_value (M, n->input[2], nt);
        }
    }
  return TRUE;
}

/* ---- The corpus cases ---- */

typedef struct
{
  guint ran, passed, skipped;
  double worst;
  /* The cases being run must match their references exactly. */
  gboolean exact;
  /* Their integer and boolean single-element inputs (an If's condition, a
   * Loop's trip count) are bound with the frontend's input-values. */
  gboolean bind_scalars;
  GString *table;
} Tally;

static Tally tally;

static void
skip (const char *what, const char *why)
{
  g_autofree char *msg = g_strdup_printf ("%s: %s", what, why);
  tally.skipped++;
  g_string_append_printf (tally.table, "# skipped %s\n", msg);
  g_test_message ("skipped %s", msg);
}

/* The frontend's input-values for the integer and boolean graph inputs of
 * one element of @model (not initializers), from their input_N.pb in
 * @data_dir: the values the runtime would feed, so that the If on a
 * condition or the Loop on a trip count that the model takes as an input
 * folds or unrolls at import (docs/frontend-onnx.md, "Control flow").
 * Float inputs stay run-time data, computed on the tiles. */
static char *
scalar_input_values (const Onnx__GraphProto *g, const char *data_dir)
{
  GString *out = g_string_new (NULL);
  guint n_in = 0;

  for (gsize i = 0; i < g->n_input; i++)
    {
      const Onnx__ValueInfoProto *in = g->input[i];
      const Onnx__TypeProto *tp = in->type;
      g_autofree char *file = NULL;
      char *why = NULL;
      gboolean init = FALSE;
      HVal *v;
      gint32 et;

      for (gsize k = 0; k < g->n_initializer && !init; k++)
        init = strcmp (g->initializer[k]->name, in->name) == 0;
      if (init)
        continue;
      file = g_strdup_printf ("%s/input_%u.pb", data_dir, n_in++);
      if (tp == NULL || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        continue;
      et = tp->tensor_type->elem_type;
      if (et == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
          || et == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE
          || et == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16
          || et == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16)
        continue;
      v = read_pb (file, &why);
      g_assert_null (why);
      if (v->n == 1)
        g_string_append_printf (out, "%s%s=%.17g", out->len > 0 ? "," : "",
                                in->name, (double) v->data[0]);
      hval_free (v);
    }
  return g_string_free (out, FALSE);
}

/* Runs one model on @chips x @tiles; returns FALSE (and skips) when the
 * frontend refuses it or it needs what the harness or emulator lacks. */
static void
run_case (const char *what, const char *model_path, const char *data_dir,
          guint tiles)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GObject) fe = NULL, sched = NULL, alloc = NULL, chip = NULL;
  g_autoptr (ElkGraph) graph = NULL;
  g_autoptr(ElkPlanSet) plans = NULL;
  g_autoptr(ElkProgram) program = NULL;
  g_autoptr(ElkMetrics) metrics = NULL;
  g_autoptr(GHashTable) tensors = NULL;
  g_autofree char *bytes = NULL;
  gsize len;
  Model M = { 0 };
  guint n_in = 0;
  double worst = 0;
  GParamSpec *ps;
  GEnumClass *ec;
  gint64 t0 = g_get_monotonic_time ();

  fe = make (ELK_TYPE_FRONTEND, "onnx", "model", model_path, "full-sequences",
             TRUE, NULL);
  g_assert_true (g_file_get_contents (model_path, &bytes, &len, NULL));
  M.model = onnx__model_proto__unpack (NULL, len, (const guint8 *) bytes);
  g_assert_nonnull (M.model);
  M.g = M.model->graph;
  if (tally.bind_scalars)
    {
      g_autofree char *values = scalar_input_values (M.g, data_dir);
      g_test_message ("%s: input-values \"%s\"", what, values);
      g_object_set (fe, "input-values", values, NULL);
    }
  graph = elk_frontend_load (ELK_FRONTEND (fe), &error);
  if (graph == NULL)
    {
      g_autofree char *why = g_strdup_printf ("frontend: %s",
                                              error->message);
      /* Only the frontend's own "unsupported" refusal is a skip. */
      g_assert_true (g_error_matches (error, ELK_GRAPH_ERROR,
                                      ELK_GRAPH_ERROR_UNSUPPORTED));
      skip (what, why);
      onnx__model_proto__free_unpacked (M.model, NULL);
      return;
    }
  for (guint i = 0; i < elk_graph_get_n_ops (graph); i++)
    {
      const ElkOp *op = elk_graph_get_op (graph, i);
      g_autofree char *sig = elk_op_dup_signature (graph, op);
      g_debug ("%s: operator %s (%s): %s", what, op->name, op->type, sig);
    }
  M.graph = graph;
  M.values = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                    hval_free);
  M.producer = g_hash_table_new (g_str_hash, g_str_equal);
  M.by_op = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  M.expansions = g_ptr_array_new_with_free_func (
      (GDestroyNotify) elk__onnx_rnn_expansion_free);

  /* Weights: initializers and Constant nodes. */
  for (gsize i = 0; i < M.g->n_initializer && M.why == NULL; i++)
    {
      char *why = NULL;
      HVal *v = decode_tensor (M.g->initializer[i], &why);
      if (v == NULL)
        M.why = why;
      else
        replace_value (&M, M.g->initializer[i]->name, v);
    }
  for (gsize i = 0; i < M.g->n_node; i++)
    {
      const Onnx__NodeProto *n = M.g->node[i];
      const char *nm = n->name != NULL && *n->name != '\0'
                         && !g_hash_table_contains (M.by_op, n->name)
                         ? n->name : NULL;
      g_hash_table_insert (M.by_op,
                           nm != NULL ? g_strdup (nm)
                                      : g_strdup_printf ("%s_%zu",
                                                         n->op_type, i),
                           (gpointer) n);
      for (gsize o = 0; o < n->n_output; o++)
        g_hash_table_insert (M.producer, n->output[o], (gpointer) n);
      if (!strcmp (n->op_type, "Constant") && attr (n, "value") != NULL
          && attr (n, "value")->t != NULL && M.why == NULL)
        {
          char *why = NULL;
          HVal *v = decode_tensor (attr (n, "value")->t, &why);
          if (v == NULL)
            M.why = why;
          else
            replace_value (&M, n->output[0], v);
        }
    }
  /* Inputs: the graph inputs that are not initializers, in order. */
  for (gsize i = 0; i < M.g->n_input && M.why == NULL; i++)
    {
      const char *name = M.g->input[i]->name;
      g_autofree char *file = NULL;
      char *why = NULL;
      HVal *v;
      if (g_hash_table_contains (M.values, name))
        continue;
      file = g_strdup_printf ("%s/input_%u.pb", data_dir, n_in++);
      v = read_pb (file, &why);
      if (v == NULL)
        M.why = why;
      else
        replace_value (&M, name, v);
    }
  if (M.why == NULL && expand_recurrent (&M))
    prepare_ops (&M);
  if (M.why != NULL)
    {
      skip (what, M.why);
      goto done;
    }

  /* Compiled by elk for 2 chips of @tiles tiles, run in functional mode. */
  chip = make (ELK_TYPE_CHIP, "ipu-pod", "chips", 2, "cores", tiles, NULL);
  ps = g_object_class_find_property (G_OBJECT_GET_CLASS (chip), "mode");
  ec = g_type_class_ref (ps->value_type);
  g_object_set (chip, "mode",
                g_enum_get_value_by_nick (ec, "functional")->value, NULL);
  g_type_class_unref (ec);
  g_signal_connect (chip, "resolve-tensor", G_CALLBACK (on_resolve), &M);
  sched = make (ELK_TYPE_SCHEDULER, "elk", NULL);
  alloc = make (ELK_TYPE_ALLOCATOR, "reservation", NULL);
  program = elk_test_compile (ELK_CHIP (chip), graph, sched, alloc, &plans);
  metrics = elk_chip_run (ELK_CHIP (chip), program, plans, &error);
  /* The emulator's refusals (an operator functional mode cannot run) are
   * skips with the reason; any other error fails, and so does a missing
   * "immediates:<operator>" attribute, which the frontend owes. */
  if (metrics == NULL && M.why == NULL
      && g_error_matches (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN)
      && strstr (error->message, "functional mode") != NULL
      && strstr (error->message, "immediates") == NULL)
    {
      skip (what, error->message);
      goto done;
    }
  if (M.why != NULL)
    {
      /* The harness could not build a tensor the run asked for. */
      skip (what, M.why);
      goto done;
    }
  g_assert_no_error (error);
  g_object_get (chip, "last-tensors", &tensors, NULL);
  M.tensors = tensors;

  /* The graph outputs against output_N.pb. */
  for (gsize i = 0; i < M.g->n_output; i++)
    {
      g_autofree char *file = g_strdup_printf ("%s/output_%zu.pb", data_dir,
                                               i);
      char *why = NULL;
      HVal *ref = read_pb (file, &why), *got;
      double err = 0, mag = 0;

      g_assert_null (why);
      got = get_value (&M, M.g->output[i]->name);
      if (got == NULL)
        g_error ("%s: no value for output '%s': %s", what,
                 M.g->output[i]->name, M.why);
      g_assert_cmpuint (got->n, ==, ref->n);
      for (guint64 e = 0; e < ref->n; e++)
        {
          err = MAX (err, fabs ((double) got->data[e] - ref->data[e]));
          mag = MAX (mag, fabs ((double) ref->data[e]));
        }
      err = mag > 0 ? err / mag : err;
      g_test_message ("%s: output '%s' (%" G_GUINT64_FORMAT " elements): "
                      "max|err|/max|ref| = %.3g", what, M.g->output[i]->name,
                      ref->n, err);
      worst = MAX (worst, err);
      hval_free (ref);
    }
  tally.ran++;
  g_string_append_printf (tally.table, "# ran %s: %u operators on 2x%u "
                          "tiles, max|err|/max|ref| %.3g, %.1f s\n", what,
                          elk_graph_get_n_ops (graph), tiles, worst,
                          (double) (g_get_monotonic_time () - t0) / 1e6);
  if (tally.exact)
    g_assert_cmpfloat (worst, ==, 0);
  else
    g_assert_cmpfloat (worst, <, 1e-3);
  tally.passed++;
  tally.worst = MAX (tally.worst, worst);

done:
  g_free (M.why);
  g_hash_table_unref (M.values);
  g_hash_table_unref (M.producer);
  g_hash_table_unref (M.by_op);
  g_ptr_array_unref (M.expansions);
  onnx__model_proto__free_unpacked (M.model, NULL);
}

static const char *
corpus_dir (void)
{
  const char *corpus = g_getenv ("ELK_CORPUS");
  static char *dir;
  if (corpus == NULL)
    return NULL;
  if (dir == NULL)
    dir = g_build_filename (corpus, "onnx", NULL);
  return g_file_test (dir, G_FILE_TEST_IS_DIR) ? dir : NULL;
}

/* The frontend, scheduler and chip every case runs through. */
static gboolean
have_chain (void)
{
  if (elk_registry_lookup (registry, ELK_TYPE_FRONTEND, "onnx") == NULL
      || elk_registry_lookup (registry, ELK_TYPE_SCHEDULER, "elk") == NULL
      || elk_registry_lookup (registry, ELK_TYPE_CHIP, "ipu-pod") == NULL)
    {
      g_test_skip ("needs the onnx frontend, the elk scheduler and the "
                   "ipu-pod chip");
      return FALSE;
    }
  return TRUE;
}

static gboolean
have_plugins (void)
{
  if (corpus_dir () == NULL)
    {
      g_test_skip ("../shared/corpus/onnx is absent (set ELK_CORPUS)");
      return FALSE;
    }
  return have_chain ();
}

static int
compare_names (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* Every node and layer test of the libonnx-testdata subset. */
static void
test_subset (void)
{
  const char *const groups[] = { "node", "pytorch-converted" };
  guint ran_before = tally.ran;

  if (!have_plugins ())
    return;
  for (guint gi = 0; gi < G_N_ELEMENTS (groups); gi++)
    {
      g_autofree char *dir = g_build_filename (corpus_dir (),
                                               "onnx-testdata-subset",
                                               groups[gi], NULL);
      g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
      g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
      const char *e;

      g_assert_nonnull (d);
      while ((e = g_dir_read_name (d)) != NULL)
        g_ptr_array_add (names, g_strdup (e));
      /* Directory order is not deterministic; the run order is. */
      g_ptr_array_sort (names, compare_names);
      for (guint i = 0; i < names->len; i++)
        {
          const char *name = names->pdata[i];
          g_autofree char *model = g_build_filename (dir, name, "model.onnx",
                                                     NULL);
          g_autofree char *data = g_build_filename (dir, name,
                                                    "test_data_set_0", NULL);
          g_autofree char *what = g_strdup_printf ("%s/%s", groups[gi],
                                                   name);
          run_case (what, model, data, 8);
        }
    }
  /* Skips are allowed only for the reasons listed in docs/chip-ipu-pod.md;
   * a regression that turns runs into skips must fail here.  40 of the
   * subset's 69 tests ran and passed when this was written. */
  g_assert_cmpuint (tally.ran - ran_before, >=, 40);
}

/* Runs every node test of Debian's libonnx-testdata whose name starts
 * with one of @prefixes (@exact: their outputs must match exactly) and
 * returns how many there are, or -1 when the package or the plugins are
 * missing (the test is then skipped).  Each must run: none is skipped. */
static gint
run_testdata (const char *const *prefixes, guint n_prefixes, gboolean exact)
{
  const char *root = "/usr/share/libonnx-testdata/data/node";
  g_autoptr (GDir) d = NULL;
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  guint ran_before = tally.ran;
  const char *e;

  if (!g_file_test (root, G_FILE_TEST_IS_DIR))
    {
      g_test_skip ("libonnx-testdata is not installed "
                   "(apt-get install libonnx-testdata)");
      return -1;
    }
  if (!have_chain ())
    return -1;
  d = g_dir_open (root, 0, NULL);
  g_assert_nonnull (d);
  while ((e = g_dir_read_name (d)) != NULL)
    for (guint i = 0; i < n_prefixes; i++)
      if (g_str_has_prefix (e, prefixes[i]))
        g_ptr_array_add (names, g_strdup (e));
  g_ptr_array_sort (names, compare_names);
  tally.exact = exact;
  for (guint i = 0; i < names->len; i++)
    {
      const char *name = names->pdata[i];
      g_autofree char *model
          = g_build_filename (root, name, "model.onnx", NULL);
      g_autofree char *data
          = g_build_filename (root, name, "test_data_set_0", NULL);
      g_autofree char *what = g_strdup_printf ("libonnx-testdata/%s", name);
      run_case (what, model, data, 8);
    }
  tally.exact = FALSE;
  g_test_message ("%u node tests found, %u ran", names->len,
                  tally.ran - ran_before);
  g_assert_cmpuint (tally.ran - ran_before, ==, names->len);
  return (gint) names->len;
}

/* Every LSTM, GRU and RNN node test of Debian's libonnx-testdata: the
 * frontend unrolls them (docs/frontend-onnx.md, "Recurrent layers") into
 * operators that all run on the tiles. */
static void
test_recurrent (void)
{
  static const char *const prefixes[]
      = { "test_lstm_", "test_gru_", "test_rnn_", "test_simple_rnn_" };
  gint n = run_testdata (prefixes, G_N_ELEMENTS (prefixes), FALSE);

  /* Debian's 1.12 package has 12 of them (4 LSTM, 4 GRU, 4 RNN). */
  if (n >= 0)
    g_assert_cmpint (n, >=, 12);
}

/* Every quantization node test of Debian's libonnx-testdata
 * (docs/frontend-onnx.md, "Quantized operators"): QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear (and its expanded form),
 * MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv.  Their
 * outputs are integers (or floats computed from integers), so they must
 * match exactly, not within the tolerance of the other tests.  The three
 * "_expanded" forms of DynamicQuantizeLinear spell it with standard
 * operators on scalars (ReduceMin, Min with 0, Sub, Div, Clip, Round,
 * Cast): operators of no loop dimension, unary ones with a scalar
 * constant as immediates, and a Cast the frontend folds into a view. */
static void
test_quantized (void)
{
  static const char *const prefixes[]
      = { "test_quantizelinear",        "test_dequantizelinear",
          "test_dynamicquantizelinear", "test_matmulinteger",
          "test_basic_convinteger",     "test_convinteger_",
          "test_qlinearmatmul",         "test_qlinearconv" };
  gint n = run_testdata (prefixes, G_N_ELEMENTS (prefixes), TRUE);

  /* Debian's 1.12 package has 17 of them. */
  if (n >= 0)
    g_assert_cmpint (n, >=, 17);
}

/* The control-flow node tests of Debian's libonnx-testdata that put work
 * on the chip, in functional mode (docs/frontend-onnx.md, "Control
 * flow"): test_loop11 (a Loop unrolled on its trip count and condition,
 * graph inputs bound to the test's values, five Adds on the tiles, its
 * scan output stacked) and test_scan9_sum (a Scan-9 unrolled, three Adds
 * reading slices of its scan input, the scan output stacked).  The
 * others compile nothing or are refused: test_if and
 * test_range_int32_type_negative_delta_expanded fold to constants once
 * their inputs are bound (the If's branches are Constants; the Range
 * Loop computes from its three scalar inputs), so there is no operator to
 * run; test_range_float_type_positive_delta_expanded takes its trip count
 * from float inputs, which stay run-time data, and is refused;
 * test_if_opt (optional values), test_if_seq, test_loop13_seq and
 * test_loop16_seq_none (sequences) and test_scan_sum (Scan-8's batched
 * form) are refused at import, each for a reason docs/frontend-onnx.md
 * states. */
static void
test_control_flow (void)
{
  static const char *const names[] = { "test_loop11", "test_scan9_sum" };
  const char *root = "/usr/share/libonnx-testdata/data/node";
  guint ran_before = tally.ran;

  if (!g_file_test (root, G_FILE_TEST_IS_DIR))
    {
      g_test_skip ("libonnx-testdata is not installed "
                   "(apt-get install libonnx-testdata)");
      return;
    }
  if (!have_chain ())
    return;
  tally.bind_scalars = TRUE;
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *model
          = g_build_filename (root, names[i], "model.onnx", NULL);
      g_autofree char *data
          = g_build_filename (root, names[i], "test_data_set_0", NULL);
      g_autofree char *what = g_strdup_printf ("libonnx-testdata/%s", names[i]);
      run_case (what, model, data, 8);
    }
  tally.bind_scalars = FALSE;
  g_assert_cmpuint (tally.ran - ran_before, ==, G_N_ELEMENTS (names));
}

/* What the libonnx-testdata cases leave out: both directions and
 * reverse, layout 1 with initial states, peepholes with an initial cell,
 * GRU with linear_before_reset, activations with alpha and beta, an
 * omitted Y, a constant sequence_lens.  Random weights and inputs, with
 * the outputs of a reference written from the ONNX definitions
 * (tests/onnx/onnx-rnn-case.c). */
static void
test_recurrent_variants (void)
{
  g_autofree char *tmp = NULL;
  guint ran_before = tally.ran;

  if (!have_chain ())
    return;
  tmp = g_dir_make_tmp ("elk-rnn-cases-XXXXXX", NULL);
  g_assert_nonnull (tmp);
  for (guint i = 0; i < onnx_rnn_n_variants; i++)
    {
      const OnnxRnnCase *c = &onnx_rnn_variants[i];
      g_autofree char *name = g_strdup_printf ("%s-%u", c->op, i);
      g_autofree char *dir = g_build_filename (tmp, name, NULL);
      g_autofree char *model = g_build_filename (dir, "model.onnx", NULL);
      g_autofree char *data = g_build_filename (dir, "test_data_set_0", NULL);
      g_autofree char *what = g_strdup_printf ("rnn-case/%s", name);

      onnx_rnn_case_write (c, dir, 100 + i);
      run_case (what, model, data, 8);
    }
  elk_test_remove_tree (tmp);
  g_assert_cmpuint (tally.ran - ran_before, ==, onnx_rnn_n_variants);
}

/* SqueezeNet 1.1 (torchvision, random weights) on 224x224: 26
 * convolutions, 3 max pools, the global average pool. */
static void
test_squeezenet (void)
{
  g_autofree char *model = NULL, *data = NULL;

  if (!have_plugins ())
    return;
  model = g_build_filename (corpus_dir (), "torch-generated",
                            "squeezenet1_1.onnx", NULL);
  data = g_build_filename (corpus_dir (), "torch-generated",
                           "squeezenet1_1_test_data_set_0", NULL);
  {
    guint ran_before = tally.ran;
    run_case ("torch-generated/squeezenet1_1", model, data, 32);
    /* The whole network must run, not be skipped. */
    g_assert_cmpuint (tally.ran, ==, ran_before + 1);
  }
}

/* MobileNetV2 (torchvision, random weights): Conv+BatchNorm folded, Clip
 * (ReLU6), depthwise strided convolutions. */
static void
test_mobilenet (void)
{
  g_autofree char *model = NULL, *data = NULL;

  if (!have_plugins ())
    return;
  model = g_build_filename (corpus_dir (), "torch-generated",
                            "mobilenet_v2.onnx", NULL);
  data = g_build_filename (corpus_dir (), "torch-generated",
                           "mobilenet_v2_test_data_set_0", NULL);
  {
    guint ran_before = tally.ran;
    run_case ("torch-generated/mobilenet_v2", model, data, 32);
    /* The whole network must run, not be skipped. */
    g_assert_cmpuint (tally.ran, ==, ran_before + 1);
  }
}

static void
test_summary (void)
{
  g_print ("%s", tally.table->str);
  g_print ("# functional ONNX reference tests: %u ran, %u passed, %u "
           "skipped; worst max|err|/max|ref| %.3g\n", tally.ran,
           tally.passed, tally.skipped, tally.worst);
  g_assert_cmpuint (tally.passed, ==, tally.ran);
}

int
main (int argc, char *argv[])
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  tally.table = g_string_new (NULL);
  g_test_add_func ("/ipu-pod/onnx/subset", test_subset);
  g_test_add_func ("/ipu-pod/onnx/recurrent", test_recurrent);
  g_test_add_func ("/ipu-pod/onnx/recurrent-variants", test_recurrent_variants);
  g_test_add_func ("/ipu-pod/onnx/quantized", test_quantized);
  g_test_add_func ("/ipu-pod/onnx/control-flow", test_control_flow);
  g_test_add_func ("/ipu-pod/onnx/squeezenet", test_squeezenet);
  g_test_add_func ("/ipu-pod/onnx/mobilenet", test_mobilenet);
  g_test_add_func ("/ipu-pod/onnx/summary", test_summary);
  ret = g_test_run ();
  g_string_free (tally.table, TRUE);
  g_object_unref (registry);
  return ret;
}
