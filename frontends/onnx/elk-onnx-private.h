/* elk-onnx-private.h: types and functions shared by the onnx loader's
 * files.  Not installed, and its functions are hidden in the plugin.
 *
 * Types are unprefixed and functions shared across files are elk__onnx_*
 * (the style guide's naming rules).  An operator is an OpInfo in its
 * family's table (elk-onnx-layout.c, -linear.c, -norm.c, -elementwise.c,
 * -control.c, -recurrent.c, -quant.c); the driver (elk-onnx-loader.c)
 * looks operators up in every family's table.
 */
#pragma once

#include <glib.h>
#include <elk/elk-error.h>
#include <elk/elk-graph.h>

#include "elk-onnx-loader.h"
#include "onnx.pb-c.h"
#include "elk-onnx-recurrent.h"

G_BEGIN_DECLS

/* Internal rank limit.  ONNX allows any rank; elk operators allow
 * ELK_MAX_DIMS, which is checked when a tensor is handed to the graph. */
#define MAX_RANK 16
/* Constant tensors up to this many elements are evaluated at import time
 * (shape arithmetic, masks); larger ones only carry their shape. */
#define FOLD_LIMIT 65536

/* TensorProto.DataType values, kept as plain numbers because files from
 * newer exporters use values the 1.12 enum does not list. */
enum
{
  DT_UNDEFINED = 0,
  DT_FLOAT = 1,
  DT_UINT8 = 2,
  DT_INT8 = 3,
  DT_UINT16 = 4,
  DT_INT16 = 5,
  DT_INT32 = 6,
  DT_INT64 = 7,
  DT_STRING = 8,
  DT_BOOL = 9,
  DT_FLOAT16 = 10,
  DT_DOUBLE = 11,
  DT_UINT32 = 12,
  DT_UINT64 = 13,
  DT_COMPLEX64 = 14,
  DT_COMPLEX128 = 15,
  DT_BFLOAT16 = 16,
  DT_FLOAT8E4M3FN = 17,
  DT_FLOAT8E4M3FNUZ = 18,
  DT_FLOAT8E5M2 = 19,
  DT_FLOAT8E5M2FNUZ = 20,
  DT_LAST = 20
};

typedef enum
{
  VK_ACT,   /* computed on chip */
  VK_INPUT, /* a graph input, or a layout view of one; decided after pass 2 */
  VK_PARAM, /* initializer, Constant node, or a view of one */
  VK_CONST, /* folded at import time */
} ValueKind;

typedef struct
{
  char *name;
  int dtype;
  guint rank;
  gint64 dims[MAX_RANK];
  guint64 n_elements;
  ValueKind kind;
  gint root;                   /* graph input index for VK_INPUT */
  const Onnx__TensorProto *tp; /* the data, decoded on demand */
  double *data;                /* n_elements values, or NULL */
  gboolean data_failed;
  gint elk_id;
  guint n_uses;
  gint producer; /* index into Loader.nodes, or -1 */
  gboolean is_graph_output;
} Value;

typedef enum
{
  FUSE_NONE,
  FUSE_SKIP,      /* absorbed into a later (or earlier) node */
  FUSE_LAYERNORM, /* the last node of an unrolled LayerNormalization */
} FuseKind;

typedef struct _Loader Loader;
typedef struct _Node Node;
typedef struct _OpInfo OpInfo;

struct _Node
{
  const Onnx__NodeProto *p;
  guint index; /* position in the file */
  char *name;  /* unique, for elk operators and messages */
  guint n_in;
  Value **in; /* NULL for an omitted optional input */
  guint n_out;
  Value **out; /* NULL for an omitted optional output */
  const OpInfo *info;
  gint32 layer;
  FuseKind fuse;
  /* The output is a view of an input: no operator (Gather of rows). */
  gboolean view;
  /* FUSE_LAYERNORM: x, scale, bias (scale, bias nullable). */
  Value *ln_x, *ln_scale, *ln_bias;
  /* A Conv whose BatchNormalization was folded into it. */
  Node *bn;
  /* A survey (elk__onnx_describe) found the node unsupported, or it reads
   * the output of one that is. */
  gboolean failed;
  /* The nodes an If folded into (elk-onnx-control.c), or an LSTM, GRU or
   * RNN expanded into (elk-onnx-recurrent.c), lowered in its place; NULL
   * for other nodes. */
  GPtrArray *sub;
  /* The generated nodes behind an expanded recurrent node's Node.sub. */
  ElkOnnxRnnExpansion *expansion;
};

struct _OpInfo
{
  const char *op_type;
  gboolean (*infer) (Loader *l, Node *n, GError **error);
  gboolean (*lower) (Loader *l, Node *n, GError **error);
  /* For elementwise and unary operators: FLOPs per output element. */
  double flops;
};

struct _Loader
{
  const char *path;
  char *dir;
  OnnxOptions opts;
  gboolean dtype_override;
  ElkDType float_dtype;
  GMappedFile *file;
  Onnx__ModelProto *model;
  gint64 opset;
  GHashTable *values; /* name -> Value*, owned by value_list */
  GPtrArray *value_list;
  GPtrArray *nodes;     /* Node*, topological order */
  GHashTable *bindings; /* dim name -> gint64 as pointer to gint64 */
  GHashTable *used_bindings;
  GArray *input_is_data; /* gboolean per graph input */
  GArray *input_forced;  /* gboolean: decided by the "inputs" option */
  GHashTable *layer_keys;
  guint n_layers;
  guint64 n_params;
  ElkGraph *graph;
  /* The local values (name -> Value*) of the branches being inlined,
   * innermost last (elk-onnx-control.c). */
  GPtrArray *scopes;
};

/* The operators of one family file, registered in the driver's list. */
typedef struct
{
  const char *name;
  const OpInfo *ops;
  guint n_ops;
} OpFamily;

/* Defines elk__onnx_<family>_family, the family @label of the table
 * <family>_ops, at the end of a family file (after the style of
 * G_DEFINE_TYPE: the names follow from @family). */
#define ELK_ONNX_DEFINE_FAMILY(family, label)                                  \
  const OpFamily elk__onnx_##family##_family = {                               \
    label,                                                                     \
    family##_ops,                                                              \
    G_N_ELEMENTS (family##_ops),                                               \
  }

extern const OpFamily elk__onnx_layout_family;
extern const OpFamily elk__onnx_linear_family;
extern const OpFamily elk__onnx_norm_family;
extern const OpFamily elk__onnx_elementwise_family;
extern const OpFamily elk__onnx_control_family;
extern const OpFamily elk__onnx_recurrent_family;
extern const OpFamily elk__onnx_quant_family;

/* A node a survey cannot import, and why (the error message without the
 * file name). */
typedef struct
{
  const Node *node;
  char *reason;
} Issue;

/* One einsum operator under construction (elk-onnx-emit.c). */
typedef struct
{
  GString *spec;
  GString *extra;
  guint32 tensors[ELK_MAX_OPERANDS];
  guint n;
} OpBuild;

/* elk-onnx-values.c */
const char *elk__onnx_node_label (const Node *n);
G_GNUC_PRINTF (4, 5)
gboolean elk__onnx_node_error (
    Loader *l, const Node *n, GError **error, const char *format, ...);
gboolean elk__onnx_node_unsupported (Loader *l,
                                     const Node *n,
                                     GError **error,
                                     const char *why);
char *elk__onnx_shape_to_string (guint rank, const gint64 *dims);
const char *elk__onnx_dtype_name (int dt);
guint elk__onnx_dtype_size (int dt);
gboolean elk__onnx_dtype_is_float (int dt);
gboolean elk__onnx_dtype_is_known (int dt);
gboolean elk__onnx_dtype_to_elk (Loader *l, int dt, ElkDType *out);
gint64 elk__onnx_to_i64 (double v);
const Onnx__AttributeProto *elk__onnx_find_attr (const Node *n,
                                                 const char *name);
gboolean elk__onnx_attr_int (Loader *l,
                             const Node *n,
                             const char *name,
                             gint64 def,
                             gint64 *out,
                             GError **error);
gboolean elk__onnx_attr_float (Loader *l,
                               const Node *n,
                               const char *name,
                               double def,
                               double *out,
                               GError **error);
const int64_t *
elk__onnx_attr_ints (const Node *n, const char *name, gsize *n_out);
char *elk__onnx_attr_string (const Node *n, const char *name, const char *def);
void elk__onnx_value_free (gpointer data);
Value *elk__onnx_lookup_value (Loader *l, const char *name);
Value *elk__onnx_new_value (Loader *l, const char *name);
gboolean elk__onnx_value_set_shape (Loader *l,
                                    Value *v,
                                    int dtype,
                                    guint rank,
                                    const gint64 *dims,
                                    GError **error);
const double *elk__onnx_value_data (Loader *l, Value *v);
Value *elk__onnx_in_value (const Node *n, guint i);
gboolean elk__onnx_need_inputs (
    Loader *l, const Node *n, guint min, guint max, GError **error);
gboolean elk__onnx_const_ints (Loader *l,
                               const Node *n,
                               guint i,
                               const char *what,
                               gint64 *out,
                               gsize max,
                               gsize *count,
                               GError **error);
gboolean elk__onnx_ints_attr_or_input (Loader *l,
                                       const Node *n,
                                       const char *name,
                                       guint input,
                                       gint64 *out,
                                       gsize max,
                                       gsize *count,
                                       gboolean *present,
                                       GError **error);
gboolean elk__onnx_norm_axis (Loader *l,
                              const Node *n,
                              gint64 axis,
                              guint rank,
                              guint *out,
                              GError **error);
void elk__onnx_mark_data (Loader *l, Value *v);
gboolean elk__onnx_set_view (Loader *l,
                             Node *n,
                             guint i,
                             Value *src,
                             int dtype,
                             guint rank,
                             const gint64 *dims,
                             GError **error);
gboolean elk__onnx_set_computed (Loader *l,
                                 Node *n,
                                 guint i,
                                 int dtype,
                                 guint rank,
                                 const gint64 *dims,
                                 GError **error);
void elk__onnx_set_data (Value *out, double *data);
void elk__onnx_strides_of (guint rank, const gint64 *dims, gint64 *strides);
guint64 elk__onnx_broadcast_index (guint64 flat,
                                   guint out_rank,
                                   const gint64 *out_dims,
                                   const Value *in);
gboolean elk__onnx_broadcast_shapes (
    Loader *l, const Node *n, guint *rank, gint64 *dims, GError **error);
gboolean elk__onnx_all_inputs_known (Loader *l, const Node *n);
gboolean elk__onnx_is_int_dtype (int dt);
double elk__onnx_cast_value (double x, int dt);
gboolean
elk__onnx_eval_binary (const char *op, double a, double b, int dt, double *out);
gboolean elk__onnx_eval_unary (const char *op, double a, int dt, double *out);
gboolean elk__onnx_is_scalar_constant (Loader *l, Value *v, double *out);

/* elk-onnx-read.c */
gboolean elk__onnx_resolve_external (Loader *l,
                                     const Onnx__TensorProto *tp,
                                     const char *what,
                                     guint64 n_bytes,
                                     char **path_out,
                                     guint64 *offset_out,
                                     GError **error);
gboolean elk__onnx_value_from_tensor (Loader *l,
                                      Value *v,
                                      const Onnx__TensorProto *tp,
                                      const char *what,
                                      GError **error);
gboolean elk__onnx_check_nesting (Loader *l,
                                  const guint8 *data,
                                  gsize len,
                                  GError **error);
gboolean elk__onnx_parse_dims (Loader *l, GError **error);
gboolean elk__onnx_load_inputs (Loader *l, GError **error);
gboolean elk__onnx_load_initializers (Loader *l, GError **error);
gboolean elk__onnx_load_nodes (Loader *l, GError **error);
gboolean elk__onnx_check_model (Loader *l, GError **error);

/* elk-onnx-emit.c */
ElkTensorOrigin elk__onnx_value_origin (Loader *l, const Value *v);
gboolean elk__onnx_prefix_node_error (Loader *l, const Node *n, GError **error);
gint elk__onnx_tensor_for (Loader *l,
                           const Node *n,
                           Value *v,
                           guint rank,
                           const gint64 *dims,
                           const char *tag,
                           GError **error);
gint elk__onnx_tensor_of (Loader *l, const Node *n, Value *v, GError **error);
void elk__onnx_ob_init (OpBuild *b);
void elk__onnx_ob_clear (OpBuild *b);
gboolean elk__onnx_ob_input (Loader *l,
                             const Node *n,
                             OpBuild *b,
                             const char *letters,
                             gint tensor,
                             GError **error);
void elk__onnx_ob_extent (OpBuild *b, char letter, gint64 extent);
gint32 elk__onnx_layer_of (Loader *l, const char *name);
gboolean elk__onnx_ob_emit_named (Loader *l,
                                  Node *n,
                                  OpBuild *b,
                                  const char *name,
                                  const char *out_letters,
                                  gint out_tensor,
                                  const char *type,
                                  ElkOpKind kind,
                                  double flops,
                                  GError **error);
gboolean elk__onnx_ob_emit (Loader *l,
                            Node *n,
                            OpBuild *b,
                            const char *out_letters,
                            gint out_tensor,
                            const char *type,
                            ElkOpKind kind,
                            double flops,
                            GError **error);
gboolean elk__onnx_emit_unary (Loader *l,
                               Node *n,
                               const char *in_letters,
                               const char *out_letters,
                               const char *type,
                               ElkOpKind kind,
                               double flops,
                               GError **error);
void elk__onnx_broadcast_letters (
    const Value *v, guint rank, const gint64 *dims, char *next, char *out);
void elk__onnx_plain_letters (guint rank, char *out);
gboolean elk__onnx_is_dropped_constant (const Value *v);
void elk__onnx_set_immediates (Loader *l,
                               const char *op,
                               const double *v,
                               guint n_v);
gint elk__onnx_node_scratch (Loader *l,
                             Node *n,
                             const char *name,
                             int dtype,
                             guint rank,
                             const guint64 *shape,
                             GError **error);

/* elk-onnx-elementwise.c */
gboolean elk__onnx_input_is_activation (Loader *l, const Value *v);

/* elk-onnx-norm.c */
gboolean elk__onnx_emit_layernorm (Loader *l,
                                   Node *n,
                                   Value *x,
                                   Value *scale,
                                   Value *bias,
                                   Value *out,
                                   GError **error);
gboolean elk__onnx_reduce_axes (
    Loader *l, Node *n, gboolean *reduced, gboolean *keepdims, GError **error);

/* elk-onnx-fuse.c */
void elk__onnx_fuse_patterns (Loader *l);
/* elk-onnx-loader.c */
const OpInfo *elk__onnx_find_op (const char *op_type);
gboolean elk__onnx_loader_open (Loader *l,
                                const char *path,
                                const OnnxOptions *options,
                                GError **error);
void elk__onnx_loader_clear (Loader *l);
gboolean elk__onnx_check_outputs (Loader *l, gboolean compare, GError **error);
gboolean elk__onnx_infer_all (Loader *l, GPtrArray *issues, GError **error);
void elk__onnx_count_weight_inputs (Loader *l);
gboolean elk__onnx_lower_all (Loader *l, GPtrArray *issues, GError **error);
void elk__onnx_set_attributes (Loader *l);
void elk__onnx_issue_free (gpointer data);
void elk__onnx_node_free (gpointer data);
gboolean elk__onnx_infer_node (Loader *l, Node *n, GError **error);

/* elk-onnx-control.c */
void elk__onnx_node_captures (const Onnx__NodeProto *p, GHashTable *out);

G_END_DECLS
