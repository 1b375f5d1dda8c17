/* elk-graph.h: the operator graph a frontend hands to the compiler.
 *
 * An ElkGraph is a list of operators in execution order and the tensors they
 * read and write.  Every operator is an einsum-style iteration space: a set of
 * loop dimensions with extents, and for each tensor it touches (output first,
 * then inputs) the loop dimension(s) each tensor axis is indexed by.  A
 * window axis (a convolution's input height, indexed by output height plus
 * kernel height) lists two loop dimensions.  This is the operator IR of T10
 * (reference/t10-plan-space.md §2.3), so any einsum-expressible operator maps
 * onto it and the plan space in core/plan works on every operator alike.
 *
 * Operators and tensors are plain structs owned by the graph; plugins read
 * them through the const pointers that elk_graph_get_op() and
 * elk_graph_get_tensor() return and never modify them.
 */
#pragma once

#include <glib-object.h>
#include <elk/elk-visibility.h>

G_BEGIN_DECLS

/**
 * ELK_MAX_DIMS:
 *
 * The most loop dimensions an operator (and axes a tensor) may have.
 * Upper bounds keep the hot structs fixed-size, so that the plan search
 * allocates nothing per plan.  Eight loop dimensions cover conv (n, c, k,
 * h, w, r, s) and batched attention.  Part of the ABI: #ElkPlan and #ElkOp
 * embed arrays of this length.
 */
#define ELK_MAX_DIMS 8

/**
 * ELK_MAX_OPERANDS:
 *
 * The most tensors an operator may touch, output included: five cover
 * fused operators with four inputs (elk-paper.md §3.9 has three; a
 * LayerNorm folded into a MatMul reads x, the weight, the gain and the
 * bias).  Part of the ABI, like %ELK_MAX_DIMS (5 since plugin ABI 5).
 */
#define ELK_MAX_OPERANDS 5

/**
 * ElkDType:
 * @ELK_DTYPE_F32: 32-bit float.
 * @ELK_DTYPE_F16: 16-bit IEEE half float.
 * @ELK_DTYPE_BF16: 16-bit bfloat.
 * @ELK_DTYPE_F8: 8-bit float.
 * @ELK_DTYPE_I8: 8-bit integer.
 * @ELK_DTYPE_I32: 32-bit integer.
 * @ELK_DTYPE_I64: 64-bit integer.
 * @ELK_DTYPE_F64: 64-bit float.
 * @ELK_DTYPE_QUANTIZED: block-quantized storage (GGUF Q4_K and friends)
 *   whose byte size is given explicitly per tensor.
 * @ELK_DTYPE_U8: 8-bit unsigned integer (ONNX uint8 quantized tensors).
 *   Appended after %ELK_DTYPE_QUANTIZED so that no earlier value moves.
 *
 * Element types of tensors.
 */
typedef enum
{
  ELK_DTYPE_F32,
  ELK_DTYPE_F16,
  ELK_DTYPE_BF16,
  ELK_DTYPE_F8,
  ELK_DTYPE_I8,
  ELK_DTYPE_I32,
  ELK_DTYPE_I64,
  ELK_DTYPE_F64,
  ELK_DTYPE_QUANTIZED,
  ELK_DTYPE_U8,
} ElkDType;

/**
 * ElkTensorOrigin:
 * @ELK_TENSOR_ORIGIN_WEIGHT: a parameter streamed from HBM.
 * @ELK_TENSOR_ORIGIN_KV_CACHE: a KV-cache tensor streamed from HBM.
 * @ELK_TENSOR_ORIGIN_ACTIVATION: produced on chip by an earlier operator (or
 *   the model input, which is small and assumed resident).
 *
 * Where a tensor lives before its consumer runs.  Only HBM-sourced tensors
 * (weights and KV cache) are preloaded and count towards an operator's HBM
 * bytes and its preload-state ("cold") footprint.
 */
typedef enum
{
  ELK_TENSOR_ORIGIN_WEIGHT,
  ELK_TENSOR_ORIGIN_KV_CACHE,
  ELK_TENSOR_ORIGIN_ACTIVATION,
} ElkTensorOrigin;

/**
 * ElkOpKind:
 * @ELK_OP_MATMUL: a (batched) matrix multiplication.
 * @ELK_OP_ELEMENTWISE: a two-input elementwise operator (add, mul, ...).
 * @ELK_OP_UNARY: a one-input elementwise operator (relu, exp, ...).
 * @ELK_OP_REDUCE: a reduction along some axes (sum, max, norms).
 * @ELK_OP_GATHER: an indexed gather (embedding look-up).
 * @ELK_OP_SLICE: a slice, which moves bytes without arithmetic.
 * @ELK_OP_CONV: a convolution.
 * @ELK_OP_POOL: a pooling window.
 * @ELK_OP_N_KINDS: the number of kinds; not a kind.
 *
 * The cost class of an operator, which selects its per-core kernel cost
 * formula (reference/t10-plan-space.md §2.4).  The frontend's own operator
 * name (softmax, rmsnorm, ...) is kept separately in #ElkOp.type.
 */
typedef enum
{
  ELK_OP_MATMUL,
  ELK_OP_ELEMENTWISE,
  ELK_OP_UNARY,
  ELK_OP_REDUCE,
  ELK_OP_GATHER,
  ELK_OP_SLICE,
  ELK_OP_CONV,
  ELK_OP_POOL,
  ELK_OP_N_KINDS
} ElkOpKind;

/**
 * ElkTensor:
 * @id: index in the graph's tensor list.
 * @name: unique name.
 * @dtype: element type.
 * @origin: where the tensor lives before use.
 * @n_dims: rank (0 for a scalar).
 * @shape: extents of the first @n_dims axes.
 * @n_elements: product of @shape.
 * @bytes: storage size in bytes; for %ELK_DTYPE_QUANTIZED the real
 *   block-quantized size.
 *
 * A tensor of a graph.  It belongs to the graph (elk_graph_get_tensor())
 * and is read-only.
 */
typedef struct
{
  guint32 id;
  char *name;
  ElkDType dtype;
  ElkTensorOrigin origin;
  guint n_dims;
  guint64 shape[ELK_MAX_DIMS];
  guint64 n_elements;
  guint64 bytes;
} ElkTensor;

/**
 * ElkAccess:
 * @n_axes: number of tensor axes (the tensor's rank).
 * @dims: for each axis, the loop dimension indexing it, and in dims[a][1]
 *   either -1 or a second loop dimension for a window axis (extent of the
 *   axis = sum of the two extents minus one).
 *
 * How one operand of an operator is indexed by the operator's loop
 * dimensions.
 */
typedef struct
{
  guint n_axes;
  gint8 dims[ELK_MAX_DIMS][2];
} ElkAccess;

/**
 * ElkOp:
 * @id: position in execution order.
 * @name: unique name.
 * @type: the frontend's operator name ("matmul", "softmax", "rmsnorm", ...).
 * @kind: cost class.
 * @layer: repeated-layer index, or -1 outside the repeated layers.
 * @n_dims: number of loop dimensions.
 * @dim_names: one letter per loop dimension, from the einsum spec.
 * @extents: loop extents.
 * @n_operands: number of tensors, output first.
 * @tensors: tensor ids, output first.
 * @access: how each operand's axes are indexed by the loop dimensions.
 * @flops: floating point operations of the whole operator.
 *
 * An operator of a graph: an einsum-style iteration space and the tensors
 * it touches.  It belongs to the graph (elk_graph_get_op()) and is
 * read-only.
 */
typedef struct
{
  guint32 id;
  char *name;
  char *type;
  ElkOpKind kind;
  gint32 layer;
  guint n_dims;
  char dim_names[ELK_MAX_DIMS];
  guint64 extents[ELK_MAX_DIMS];
  guint n_operands;
  guint32 tensors[ELK_MAX_OPERANDS];
  ElkAccess access[ELK_MAX_OPERANDS];
  double flops;
} ElkOp;

/**
 * ElkGraph:
 *
 * The operator graph a frontend builds: operators in execution order and
 * the tensors they read and write.  A reference-counted boxed type
 * (elk_graph_ref(), elk_graph_unref()), read-only once built, so threads
 * and plan sets share it.
 */
typedef struct _ElkGraph ElkGraph;

#define ELK_TYPE_GRAPH (elk_graph_get_type ())
ELK_API GType elk_graph_get_type (void);

ELK_API ElkGraph *elk_graph_new (const char *name);
ELK_API ElkGraph *elk_graph_ref (ElkGraph *graph);
ELK_API void elk_graph_unref (ElkGraph *graph);

ELK_API const char *elk_graph_get_name (const ElkGraph *graph);
ELK_API guint elk_graph_get_n_ops (const ElkGraph *graph);
ELK_API guint elk_graph_get_n_tensors (const ElkGraph *graph);
ELK_API const ElkOp *elk_graph_get_op (const ElkGraph *graph, guint index);
ELK_API const ElkTensor *elk_graph_get_tensor (const ElkGraph *graph,
                                               guint index);
ELK_API gint elk_graph_find_tensor (const ElkGraph *graph, const char *name);

ELK_API guint elk_dtype_get_size (ElkDType dtype);
ELK_API gboolean elk_op_has_integer_inputs (const ElkGraph *graph,
                                            const ElkOp *op);
ELK_API const char *elk_dtype_to_string (ElkDType dtype);
ELK_API const char *elk_op_kind_to_string (ElkOpKind kind);
ELK_API const char *elk_tensor_origin_to_string (ElkTensorOrigin origin);

ELK_API gint elk_graph_add_tensor (ElkGraph *graph,
                                   const char *name,
                                   ElkDType dtype,
                                   ElkTensorOrigin origin,
                                   guint n_dims,
                                   const guint64 *shape,
                                   guint64 bytes,
                                   GError **error);

ELK_API gint elk_graph_add_op (ElkGraph *graph,
                               const char *name,
                               const char *type,
                               ElkOpKind kind,
                               gint32 layer,
                               const char *spec,
                               const guint32 *tensors,
                               guint n_tensors,
                               const char *extra_extents,
                               GError **error);

ELK_API void elk_graph_set_op_flops (ElkGraph *graph, guint op, double flops);
ELK_API void elk_graph_set_attribute (ElkGraph *graph,
                                      const char *key,
                                      const char *value);
ELK_API const char *elk_graph_get_attribute (const ElkGraph *graph,
                                             const char *key);

ELK_API gboolean elk_graph_validate (const ElkGraph *graph, GError **error);

ELK_API gboolean elk_graph_set_op_condition (ElkGraph *graph,
                                             guint32 op,
                                             guint32 router_op,
                                             double probability,
                                             gboolean taken,
                                             GError **error);
ELK_API gboolean elk_graph_get_op_condition (const ElkGraph *graph,
                                             guint32 op,
                                             guint32 *router_op,
                                             double *probability,
                                             gboolean *taken);
ELK_API gboolean elk_graph_has_conditions (const ElkGraph *graph);

ELK_API double elk_graph_get_total_flops (const ElkGraph *graph);
ELK_API guint64 elk_op_get_hbm_bytes (const ElkGraph *graph, const ElkOp *op);
ELK_API guint64 elk_graph_get_hbm_bytes (const ElkGraph *graph);
ELK_API guint elk_graph_get_n_layers (const ElkGraph *graph);
ELK_API char *elk_op_dup_signature (const ElkGraph *graph, const ElkOp *op);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ElkGraph, elk_graph_unref)

G_END_DECLS
