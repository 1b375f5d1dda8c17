/* test-onnx.c: tests of the onnx frontend.
 *
 * The corpus tests read ../shared/corpus/onnx (ELK_CORPUS) and skip when it
 * is absent; the libonnx-testdata test reads Debian's libonnx-testdata and
 * skips when it is not installed.  Everything else writes its own small
 * models with protobuf-c into a temporary folder, so that external data,
 * symbolic dimensions and corrupted files are exercised without fixtures.
 *
 * FLOP counts are checked against independent counts computed here from
 * the published layer shapes, using the conventions of
 * docs/frontend-onnx.md: 2 FLOPs per multiply-accumulate, plus one per
 * output element for a bias (a folded BatchNormalization is a bias).
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <glib/gstdio.h>

#include <elk/elk.h>

#include "elk-onnx-loader.h"
#include "elk-test-util.h"
#include "onnx.pb-c.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static char *
corpus_path (const char *rel)
{
  const char *corpus = g_getenv ("ELK_CORPUS");
  char *path;

  if (corpus == NULL)
    return NULL;
  path = g_build_filename (corpus, "onnx", rel, NULL);
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_free (path);
      return NULL;
    }
  return path;
}

#define REQUIRE_CORPUS(var, rel)                                              \
  g_autofree char *var = corpus_path (rel);                                   \
  if (var == NULL)                                                            \
    {                                                                         \
      g_test_skip ("ELK_CORPUS/onnx/" rel " is absent (set ELK_CORPUS to "    \
                   "the shared corpus folder)");                              \
      return;                                                                 \
    }

static ElkGraph *
load (const char *path, const char *dims, GError **error)
{
  OnnxOptions options;
  elk__onnx_options_init (&options);
  options.dims = dims;
  return elk__onnx_load (path, &options, error);
}

static ElkGraph *
load_ok (const char *path, const char *dims)
{
  g_autoptr (GError) error = NULL;
  ElkGraph *g = load (path, dims, &error);
  g_assert_no_error (error);
  g_assert_nonnull (g);
  g_assert_true (elk_graph_validate (g, NULL));
  return g;
}

static double
flops_of_kinds (const ElkGraph *g, ElkOpKind a, ElkOpKind b)
{
  double total = 0;
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    {
      const ElkOp *op = elk_graph_get_op (g, i);
      if (op->kind == a || op->kind == b)
        total += op->flops;
    }
  return total;
}

static guint
count_ops_of_type (const ElkGraph *g, const char *type)
{
  guint n = 0;
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    n += strcmp (elk_graph_get_op (g, i)->type, type) == 0;
  return n;
}

static guint64
attribute_u64 (const ElkGraph *g, const char *key)
{
  const char *v = elk_graph_get_attribute (g, key);
  g_assert_nonnull (v);
  return g_ascii_strtoull (v, NULL, 10);
}

static void
assert_relative (double got, double want, double tolerance)
{
  g_assert_cmpfloat (want, >, 0);
  g_assert_cmpfloat (ABS (got - want) / want, <=, tolerance);
}

/* A tiny arena for protobuf-c messages built by the tests. */
typedef struct
{
  GPtrArray *blocks;
} Arena;

static gpointer
arena_alloc (Arena *a, gsize size)
{
  gpointer p = g_malloc0 (size);
  g_ptr_array_add (a->blocks, p);
  return p;
}

static char *
arena_strdup (Arena *a, const char *s)
{
  char *p = g_strdup (s);
  g_ptr_array_add (a->blocks, p);
  return p;
}

static Arena *
arena_new (void)
{
  Arena *a = g_new0 (Arena, 1);
  a->blocks = g_ptr_array_new_with_free_func (g_free);
  return a;
}

static void
arena_free (Arena *a)
{
  g_ptr_array_unref (a->blocks);
  g_free (a);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Arena, arena_free)

/* Dimensions: a value > 0 is fixed, 0 is anonymous, and names[i] (if not
 * NULL) makes it symbolic. */
static Onnx__ValueInfoProto *
make_value_info (Arena *a, const char *name, int dtype, guint rank,
                 const gint64 *dims, const char *const *names)
{
  Onnx__ValueInfoProto *vi = arena_alloc (a, sizeof *vi);
  Onnx__TypeProto *tp = arena_alloc (a, sizeof *tp);
  Onnx__TypeProto__Tensor *tt = arena_alloc (a, sizeof *tt);
  Onnx__TensorShapeProto *sh = arena_alloc (a, sizeof *sh);

  onnx__value_info_proto__init (vi);
  onnx__type_proto__init (tp);
  onnx__type_proto__tensor__init (tt);
  onnx__tensor_shape_proto__init (sh);
  vi->name = arena_strdup (a, name);
  vi->type = tp;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  tt->has_elem_type = TRUE;
  tt->elem_type = dtype;
  /* No dims at all: the shape is left out, as exporters do for outputs. */
  tt->shape = dims == NULL && names == NULL ? NULL : sh;
  sh->n_dim = rank;
  sh->dim = arena_alloc (a, sizeof (gpointer) * MAX (rank, 1));
  for (guint i = 0; i < rank; i++)
    {
      Onnx__TensorShapeProto__Dimension *d = arena_alloc (a, sizeof *d);
      onnx__tensor_shape_proto__dimension__init (d);
      if (names != NULL && names[i] != NULL)
        {
          d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
          d->dim_param = arena_strdup (a, names[i]);
        }
      else if (dims[i] > 0)
        {
          d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
          d->dim_value = dims[i];
        }
      sh->dim[i] = d;
    }
  return vi;
}

static Onnx__TensorProto *
make_tensor (Arena *a, const char *name, guint rank, const gint64 *dims,
             guint n_floats)
{
  Onnx__TensorProto *t = arena_alloc (a, sizeof *t);
  onnx__tensor_proto__init (t);
  t->name = arena_strdup (a, name);
  t->has_data_type = TRUE;
  t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  t->n_dims = rank;
  t->dims = arena_alloc (a, sizeof (int64_t) * MAX (rank, 1));
  for (guint i = 0; i < rank; i++)
    t->dims[i] = dims[i];
  t->n_float_data = n_floats;
  t->float_data = arena_alloc (a, sizeof (float) * MAX (n_floats, 1));
  for (guint i = 0; i < n_floats; i++)
    t->float_data[i] = 0.25f * (float) i;
  return t;
}

static Onnx__NodeProto *
make_node (Arena *a, const char *op, const char *name, const char *in0,
           const char *in1, const char *out)
{
  Onnx__NodeProto *n = arena_alloc (a, sizeof *n);
  onnx__node_proto__init (n);
  n->op_type = arena_strdup (a, op);
  n->name = arena_strdup (a, name);
  n->n_input = in1 != NULL ? 2 : 1;
  n->input = arena_alloc (a, sizeof (char *) * 2);
  n->input[0] = arena_strdup (a, in0);
  if (in1 != NULL)
    n->input[1] = arena_strdup (a, in1);
  n->n_output = 1;
  n->output = arena_alloc (a, sizeof (char *));
  n->output[0] = arena_strdup (a, out);
  return n;
}

typedef struct
{
  Arena *arena;
  Onnx__ModelProto model;
  Onnx__GraphProto graph;
  Onnx__OperatorSetIdProto opset;
  Onnx__OperatorSetIdProto *opsets[1];
  GPtrArray *nodes, *inputs, *outputs, *inits;
} Builder;

static Builder *
builder_new (void)
{
  Builder *b = g_new0 (Builder, 1);
  b->arena = arena_new ();
  onnx__model_proto__init (&b->model);
  onnx__graph_proto__init (&b->graph);
  onnx__operator_set_id_proto__init (&b->opset);
  b->opset.domain = arena_strdup (b->arena, "");
  b->opset.has_version = TRUE;
  b->opset.version = 13;
  b->opsets[0] = &b->opset;
  b->model.has_ir_version = TRUE;
  b->model.ir_version = 7;
  b->model.n_opset_import = 1;
  b->model.opset_import = b->opsets;
  b->model.graph = &b->graph;
  b->graph.name = arena_strdup (b->arena, "test");
  b->nodes = g_ptr_array_new ();
  b->inputs = g_ptr_array_new ();
  b->outputs = g_ptr_array_new ();
  b->inits = g_ptr_array_new ();
  return b;
}

static void
builder_free (Builder *b)
{
  arena_free (b->arena);
  g_ptr_array_unref (b->nodes);
  g_ptr_array_unref (b->inputs);
  g_ptr_array_unref (b->outputs);
  g_ptr_array_unref (b->inits);
  g_free (b);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Builder, builder_free)

static void
builder_write (Builder *b, const char *path)
{
  gsize len;
  g_autofree guint8 *buf = NULL;
  g_autoptr (GError) error = NULL;

  b->graph.n_node = b->nodes->len;
  b->graph.node = (Onnx__NodeProto **) b->nodes->pdata;
  b->graph.n_input = b->inputs->len;
  b->graph.input = (Onnx__ValueInfoProto **) b->inputs->pdata;
  b->graph.n_output = b->outputs->len;
  b->graph.output = (Onnx__ValueInfoProto **) b->outputs->pdata;
  b->graph.n_initializer = b->inits->len;
  b->graph.initializer = (Onnx__TensorProto **) b->inits->pdata;
  len = onnx__model_proto__get_packed_size (&b->model);
  buf = g_malloc (MAX (len, 1));
  g_assert_cmpuint (onnx__model_proto__pack (&b->model, buf), ==, len);
  g_file_set_contents (path, (const char *) buf, (gssize) len, &error);
  g_assert_no_error (error);
}

/* x[batch, seq, 64] @ W[64, 32] -> Relu: the smallest model with a weight
 * and a symbolic input. */
static Builder *
builder_small (const char *dim0, const char *dim1)
{
  Builder *b = builder_new ();
  const char *names[3] = { dim0, dim1, NULL };
  gint64 xd[3] = { 0, 0, 64 }, wd[2] = { 64, 32 };

  g_ptr_array_add (b->inputs, make_value_info (b->arena, "x", 1, 3, xd,
                                               names));
  g_ptr_array_add (b->inits, make_tensor (b->arena, "W", 2, wd, 64 * 32));
  g_ptr_array_add (b->nodes, make_node (b->arena, "MatMul", "mm", "x", "W",
                                        "h"));
  g_ptr_array_add (b->nodes, make_node (b->arena, "Relu", "relu", "h", NULL,
                                        "y"));
  g_ptr_array_add (b->outputs, make_value_info (b->arena, "y", 1, 0, NULL,
                                                NULL));
  return b;
}

static char *
make_tmpdir (void)
{
  g_autoptr (GError) error = NULL;
  char *dir = g_dir_make_tmp ("elk-onnx-XXXXXX", &error);
  g_assert_no_error (error);
  return dir;
}

static void
assert_error_mentions (GError *error, GQuark domain, int code,
                       const char *s1, const char *s2)
{
  g_assert_nonnull (error);
  g_test_message ("expected error: %s", error->message);
  g_assert_error (error, domain, code);
  if (s1 != NULL)
    g_assert_nonnull (strstr (error->message, s1));
  if (s2 != NULL)
    g_assert_nonnull (strstr (error->message, s2));
}

/* ------------------------------------------------------------------ */
/* The corpus                                                          */

/* Every torch-generated model in the MANIFEST loads, and its parameter
 * count equals the MANIFEST's, read from the MANIFEST's table itself. */
static void
test_corpus_manifest (void)
{
  REQUIRE_CORPUS (manifest, "MANIFEST.md");
  g_autofree char *text = NULL;
  g_auto (GStrv) lines = NULL;
  g_autoptr (GError) error = NULL;
  guint checked = 0;

  g_file_get_contents (manifest, &text, NULL, &error);
  g_assert_no_error (error);
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_auto (GStrv) cells = NULL;
      g_autofree char *file = NULL;
      g_autofree char *path = NULL;
      g_autoptr (ElkGraph) g = NULL;
      GString *digits;
      guint64 want;

      if (!g_str_has_prefix (lines[i], "| `torch-generated/"))
        continue;
      cells = g_strsplit (lines[i], "|", -1);
      /* The table of files, not the description row above it. */
      if (g_strv_length (cells) < 9 || strstr (cells[1], ".onnx`") == NULL)
        continue;
      file = g_strstrip (g_strdup (cells[1]));
      file[strlen (file) - 1] = '\0';
      path = corpus_path (file + 1);
      g_assert_nonnull (path);
      /* Column 8: "1,235,496; initializer dtypes FLOAT" and the like. */
      digits = g_string_new (NULL);
      for (const char *p = cells[8]; *p != '\0' && *p != ';' && *p != '('; p++)
        if (g_ascii_isdigit (*p))
          g_string_append_c (digits, *p);
      want = g_ascii_strtoull (digits->str, NULL, 10);
      g_string_free (digits, TRUE);

      g = load_ok (path, NULL);
      g_test_message ("%s: %u ops, %.4g FLOPs, %s params (MANIFEST %"
                      G_GUINT64_FORMAT ")", file, elk_graph_get_n_ops (g),
                      elk_graph_get_total_flops (g),
                      elk_graph_get_attribute (g, "params"), want);
      g_assert_cmpuint (attribute_u64 (g, "params"), ==, want);
      g_assert_cmpstr (elk_graph_get_attribute (g, "batch"), ==, "1");
      checked++;
    }
  g_assert_cmpuint (checked, ==, 7);
}

/* ResNet-50 (torchvision v1.5: stride in the 3x3 conv) at 224x224. */
static void
test_corpus_resnet50 (void)
{
  REQUIRE_CORPUS (path, "torch-generated/resnet50_graphonly.onnx");
  g_autoptr (ElkGraph) g = load_ok (path, NULL);
  static const int blocks[4] = { 3, 4, 6, 3 };
  double conv = 0, other = 0;
  int in = 64, hw = 56;

#define CONV(cin, cout, k, out_hw)                                           \
  (2.0 * (cin) * (cout) * (k) * (k) * (out_hw) * (out_hw)                    \
   + (double) (cout) * (out_hw) * (out_hw))

  conv += CONV (3, 64, 7, 112);                 /* conv1 + bn1 */
  other += 64.0 * 112 * 112;                    /* relu */
  other += 64.0 * 56 * 56 * 9;                  /* maxpool 3x3 */
  for (int s = 0; s < 4; s++)
    {
      int width = 64 << s, out = width * 4;
      for (int b = 0; b < blocks[s]; b++)
        {
          int stride = (b == 0 && s > 0) ? 2 : 1;
          int ohw = hw / stride;
          conv += CONV (in, width, 1, hw);
          conv += CONV (width, width, 3, ohw);
          conv += CONV (width, out, 1, ohw);
          if (b == 0)
            conv += CONV (in, out, 1, ohw); /* downsample */
          other += (double) width * hw * hw     /* relu after conv1 */
                   + (double) width * ohw * ohw; /* relu after conv2 */
          other += 2.0 * out * ohw * ohw;        /* add + relu */
          in = out;
          hw = ohw;
        }
    }
  other += 2048.0 * 7 * 7; /* global average pool */
  conv += 2.0 * 2048 * 1000 + 1000; /* fc (Gemm with bias) */
#undef CONV

  g_test_message ("resnet50: conv+matmul %.6g (expected %.6g), total %.6g "
                  "(expected %.6g)",
                  flops_of_kinds (g, ELK_OP_CONV, ELK_OP_MATMUL), conv,
                  elk_graph_get_total_flops (g), conv + other);
  g_assert_cmpfloat (flops_of_kinds (g, ELK_OP_CONV, ELK_OP_MATMUL), ==,
                     conv);
  g_assert_cmpfloat (elk_graph_get_total_flops (g), ==, conv + other);
  /* Every BatchNormalization was folded into its convolution. */
  g_assert_cmpuint (count_ops_of_type (g, "batchnorm"), ==, 0);
  g_assert_cmpuint (count_ops_of_type (g, "conv+batchnorm"), ==, 53);
  g_assert_cmpuint (attribute_u64 (g, "layers"), ==, 16);
}

/* One transformer layer's matrix products: QKV, scores, values, output
 * projection (a Gemm with bias), and the two MLP matmuls. */
static double
transformer_matmul_flops (double tokens, double d, double heads, double ff)
{
  double dh = d / heads;
  return 2 * tokens * d * 3 * d                      /* in_proj */
         + 2 * 2 * heads * tokens * tokens * dh      /* QK^T and AV */
         + 2 * tokens * d * d + tokens * d           /* out_proj + bias */
         + 2 * 2 * tokens * d * ff;                  /* MLP */
}

static void
test_corpus_vit (void)
{
  REQUIRE_CORPUS (path, "torch-generated/vit_b_16_graphonly.onnx");
  g_autoptr (ElkGraph) g = load_ok (path, NULL);
  double want = 2.0 * 768 * 3 * 16 * 16 * 196 + 768.0 * 196; /* patches */

  want += 12 * transformer_matmul_flops (197, 768, 12, 3072);
  want += 2.0 * 768 * 1000 + 1000; /* head on the class token */
  g_test_message ("vit-b/16: conv+matmul %.6g, expected %.6g, total %.6g",
                  flops_of_kinds (g, ELK_OP_CONV, ELK_OP_MATMUL), want,
                  elk_graph_get_total_flops (g));
  g_assert_cmpfloat (flops_of_kinds (g, ELK_OP_CONV, ELK_OP_MATMUL), ==,
                     want);
  /* The rest (norms, softmax, GELU, bias adds) is about 1%. */
  assert_relative (elk_graph_get_total_flops (g), want, 0.02);
  g_assert_cmpuint (count_ops_of_type (g, "layernorm"), ==, 25);
  g_assert_cmpuint (count_ops_of_type (g, "reducemean"), ==, 0);
  g_assert_cmpuint (attribute_u64 (g, "layers"), ==, 12);
  /* The class token's shape arithmetic (Shape, ConstantOfShape, Equal,
   * Where, Expand) was evaluated at import, leaving no operator. */
  g_assert_cmpuint (count_ops_of_type (g, "equal"), ==, 0);
  g_assert_cmpuint (count_ops_of_type (g, "where"), ==, 0);
  g_assert_cmpuint (count_ops_of_type (g, "mul"), ==, 12 * 2); /* GELU */
  g_assert_cmpuint (count_ops_of_type (g, "softmax"), ==, 0);
  g_assert_cmpuint (count_ops_of_type (g, "sub-exp"), ==, 12);
}

static void
test_corpus_bert (void)
{
  REQUIRE_CORPUS (path, "torch-generated/bert_base_encoder_graphonly.onnx");
  g_autoptr (ElkGraph) g = load_ok (path, NULL);
  double want = 12 * transformer_matmul_flops (128, 768, 12, 3072);
  gint id;

  g_assert_cmpfloat (flops_of_kinds (g, ELK_OP_CONV, ELK_OP_MATMUL), ==,
                     want);
  assert_relative (elk_graph_get_total_flops (g), want, 0.02);
  g_assert_cmpuint (count_ops_of_type (g, "layernorm"), ==, 25);
  g_assert_cmpuint (count_ops_of_type (g, "gather"), ==, 1);
  g_assert_cmpuint (attribute_u64 (g, "layers"), ==, 12);
  g_assert_cmpuint (attribute_u64 (g, "seq"), ==, 128);
  /* One softmax per layer, lowered into max, sub-exp, sum and div. */
  g_assert_cmpuint (count_ops_of_type (g, "softmax"), ==, 0);
  g_assert_cmpuint (count_ops_of_type (g, "sub-exp"), ==, 12);
  /* The embedding lookup streams only the rows it reads. */
  id = elk_graph_find_tensor (g, "input");
  g_assert_cmpint (id, >=, 0);
  g_assert_cmpint (elk_graph_get_tensor (g, (guint) id)->origin, ==,
                   ELK_TENSOR_ORIGIN_ACTIVATION);
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    {
      const ElkOp *op = elk_graph_get_op (g, i);
      if (op->kind == ELK_OP_GATHER)
        g_assert_cmpuint (elk_op_get_hbm_bytes (g, op), ==, 128 * 768 * 4);
    }
}

static void
test_corpus_gpt2 (void)
{
  REQUIRE_CORPUS (path, "torch-generated/gpt2_small_graphonly.onnx");
  g_autoptr (ElkGraph) g = load_ok (path, NULL);
  double want = 12 * transformer_matmul_flops (64, 768, 12, 3072)
                + 2.0 * 64 * 768 * 50257; /* untied LM head, no bias */

  g_assert_cmpfloat (flops_of_kinds (g, ELK_OP_CONV, ELK_OP_MATMUL), ==,
                     want);
  assert_relative (elk_graph_get_total_flops (g), want, 0.02);
  /* The causal mask (Trilu of a constant) was folded at import. */
  g_assert_cmpuint (count_ops_of_type (g, "trilu"), ==, 0);
  g_assert_cmpuint (attribute_u64 (g, "layers"), ==, 12);
}

static void
test_corpus_mobilenet (void)
{
  REQUIRE_CORPUS (path, "torch-generated/mobilenet_v2.onnx");
  g_autoptr (ElkGraph) g = load_ok (path, NULL);
  guint depthwise = 0;

  g_assert_cmpuint (count_ops_of_type (g, "batchnorm"), ==, 0);
  g_assert_cmpuint (count_ops_of_type (g, "conv+batchnorm"), ==, 52);
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    {
      const ElkOp *op = elk_graph_get_op (g, i);
      const ElkTensor *w;
      if (op->kind != ELK_OP_CONV)
        continue;
      w = elk_graph_get_tensor (g, op->tensors[2]);
      g_assert_cmpint (w->origin, ==, ELK_TENSOR_ORIGIN_WEIGHT);
      /* Depthwise: one input channel (times the stride phases) per
       * output channel. */
      if (w->shape[1] <= 4 && op->access[1].dims[1][0] == 1)
        depthwise++;
    }
  g_assert_cmpuint (depthwise, ==, 17);
}

/* The same squeezenet with weights inline and in an external data file
 * gives the same graph. */
static void
test_corpus_external_same_graph (void)
{
  REQUIRE_CORPUS (inline_path, "torch-generated/squeezenet1_1.onnx");
  REQUIRE_CORPUS (ext_path,
                  "torch-generated/squeezenet1_1_external/squeezenet1_1.onnx");
  g_autoptr (ElkGraph) a = load_ok (inline_path, NULL);
  g_autoptr (ElkGraph) b = load_ok (ext_path, NULL);

  g_assert_cmpuint (elk_graph_get_n_ops (a), ==, elk_graph_get_n_ops (b));
  g_assert_cmpuint (elk_graph_get_n_tensors (a), ==,
                    elk_graph_get_n_tensors (b));
  for (guint i = 0; i < elk_graph_get_n_ops (a); i++)
    {
      g_autofree char *sa = elk_op_dup_signature (a, elk_graph_get_op (a, i));
      g_autofree char *sb = elk_op_dup_signature (b, elk_graph_get_op (b, i));
      g_assert_cmpstr (elk_graph_get_op (a, i)->name, ==,
                       elk_graph_get_op (b, i)->name);
      g_assert_cmpstr (sa, ==, sb);
      g_assert_cmpfloat (elk_graph_get_op (a, i)->flops, ==,
                         elk_graph_get_op (b, i)->flops);
    }
  g_assert_cmpfloat (elk_graph_get_total_flops (a), ==,
                     elk_graph_get_total_flops (b));
  g_assert_cmpuint (elk_graph_get_hbm_bytes (a), ==,
                    elk_graph_get_hbm_bytes (b));
  g_assert_cmpstr (elk_graph_get_attribute (a, "params"), ==,
                   elk_graph_get_attribute (b, "params"));
}

/* Reads the dims of a serialized TensorProto (a reference output). */
static gboolean
read_pb_dims (const char *path, guint *rank, gint64 *dims)
{
  g_autofree char *buf = NULL;
  gsize len;
  Onnx__TensorProto *t;

  if (!g_file_get_contents (path, &buf, &len, NULL))
    return FALSE;
  t = onnx__tensor_proto__unpack (NULL, len, (const uint8_t *) buf);
  if (t == NULL)
    return FALSE;
  *rank = (guint) t->n_dims;
  for (size_t i = 0; i < t->n_dims && i < 16; i++)
    dims[i] = t->dims[i];
  onnx__tensor_proto__free_unpacked (t, NULL);
  return TRUE;
}

static char *
first_output_name (const char *model)
{
  g_autofree char *buf = NULL;
  gsize len;
  Onnx__ModelProto *m;
  char *name = NULL;

  if (!g_file_get_contents (model, &buf, &len, NULL))
    return NULL;
  m = onnx__model_proto__unpack (NULL, len, (const uint8_t *) buf);
  if (m == NULL)
    return NULL;
  if (m->graph != NULL && m->graph->n_output > 0)
    name = g_strdup (m->graph->output[0]->name);
  onnx__model_proto__free_unpacked (m, NULL);
  return name;
}

typedef struct
{
  guint imported, unsupported, unbound, other, shapes_checked;
  GHashTable *unsupported_ops;
} SuiteCounts;

/* Loads one test-suite model: it imports, or fails with an "unsupported"
 * error; with a reference output next to it, the shape inferred for the
 * first graph output must equal the reference's. */
static void
load_suite_model (const char *dir, SuiteCounts *c)
{
  g_autofree char *model = g_build_filename (dir, "model.onnx", NULL);
  g_autofree char *ref = g_build_filename (dir, "test_data_set_0",
                                           "output_0.pb", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = load (model, NULL, &error);

  if (g == NULL)
    {
      g_assert_nonnull (error);
      g_assert_nonnull (strstr (error->message, model));
      if (g_error_matches (error, ELK_GRAPH_ERROR,
                           ELK_GRAPH_ERROR_UNSUPPORTED))
        {
          const char *op = strstr (error->message, "(op ");
          c->unsupported++;
          if (op != NULL)
            {
              g_autofree char *name = g_strndup (op + 4, strcspn (op + 4,
                                                                  ",)"));
              g_hash_table_replace (c->unsupported_ops,
                                    g_steal_pointer (&name), NULL);
            }
        }
      else if (strstr (error->message, "is not bound") != NULL)
        c->unbound++;
      else
        {
          g_test_message ("unexpected error: %s", error->message);
          c->other++;
        }
      return;
    }
  c->imported++;
  g_assert_true (elk_graph_validate (g, NULL));
  if (g_file_test (ref, G_FILE_TEST_EXISTS))
    {
      g_autofree char *name = first_output_name (model);
      gint id = name != NULL ? elk_graph_find_tensor (g, name) : -1;
      guint rank;
      gint64 dims[16];
      if (id >= 0 && read_pb_dims (ref, &rank, dims))
        {
          const ElkTensor *t = elk_graph_get_tensor (g, (guint) id);
          if (t->n_dims != rank)
            g_test_message ("%s: rank %u, reference %u", model, t->n_dims,
                            rank);
          g_assert_cmpuint (t->n_dims, ==, rank);
          for (guint i = 0; i < rank; i++)
            g_assert_cmpuint (t->shape[i], ==, (guint64) dims[i]);
          c->shapes_checked++;
        }
    }
}

static void
run_suite (const char *root, guint depth, SuiteCounts *c)
{
  GDir *d = g_dir_open (root, 0, NULL);
  const char *name;
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);

  g_assert_nonnull (d);
  while ((name = g_dir_read_name (d)) != NULL)
    g_ptr_array_add (names, g_strdup (name));
  g_dir_close (d);
  g_ptr_array_sort (names, (GCompareFunc) g_strcmp0);
  for (guint i = 0; i < names->len; i++)
    {
      g_autofree char *sub = g_build_filename (root, names->pdata[i], NULL);
      g_autofree char *model = g_build_filename (sub, "model.onnx", NULL);
      if (g_file_test (model, G_FILE_TEST_EXISTS))
        load_suite_model (sub, c);
      else if (depth > 0 && g_file_test (sub, G_FILE_TEST_IS_DIR))
        run_suite (sub, depth - 1, c);
    }
}

static void
report_suite (const char *what, SuiteCounts *c)
{
  g_autofree gpointer *ops = g_hash_table_get_keys_as_array (
    c->unsupported_ops, NULL);
  g_autofree char *list = NULL;
  qsort (ops, g_hash_table_size (c->unsupported_ops), sizeof (gpointer),
         (int (*) (const void *, const void *)) g_strcmp0);
  list = g_strjoinv (" ", (char **) ops);
  g_test_message ("%s: %u import, %u fail with the unsupported error, %u "
                  "need dims, %u other errors; %u output shapes checked "
                  "against the reference outputs", what, c->imported,
                  c->unsupported, c->unbound, c->other, c->shapes_checked);
  g_test_message ("%s: unsupported operators: %s", what, list);
  printf ("# %s: %u import, %u unsupported, %u need dims, %u other\n", what,
          c->imported, c->unsupported, c->unbound, c->other);
}

/* The corpus subset of libonnx-testdata: every model imports or fails with
 * the unsupported error; test_if (a run-time condition) is refused, and
 * the quantized operators the MANIFEST once listed as unsupported import
 * (elk-onnx-quant.c). */
static void
test_corpus_testdata_subset (void)
{
  REQUIRE_CORPUS (root, "onnx-testdata-subset");
  SuiteCounts c = { 0 };
  static const char *const expected_unsupported[] = { "node/test_if" };
  static const char *const expected_imported[]
      = { "node/test_convinteger_with_padding",
          "node/test_matmulinteger",
          "node/test_qlinearconv",
          "node/test_qlinearmatmul_2D",
          "node/test_quantizelinear",
          "node/test_dequantizelinear",
          "node/test_dynamicquantizelinear" };

  c.unsupported_ops = g_hash_table_new_full (g_str_hash, g_str_equal,
                                             g_free, NULL);
  run_suite (root, 1, &c);
  report_suite ("onnx-testdata-subset", &c);
  g_assert_cmpuint (c.other, ==, 0);
  g_assert_cmpuint (c.unbound, ==, 0);
  g_assert_cmpuint (c.imported + c.unsupported, ==, 69);
  g_assert_cmpuint (c.shapes_checked, >=, 30);
  for (guint i = 0; i < G_N_ELEMENTS (expected_unsupported); i++)
    {
      g_autofree char *model = g_build_filename (root,
                                                 expected_unsupported[i],
                                                 "model.onnx", NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (ElkGraph) g = load (model, NULL, &error);
      g_assert_null (g);
      assert_error_mentions (error, ELK_GRAPH_ERROR,
                             ELK_GRAPH_ERROR_UNSUPPORTED, "is not supported",
                             "domain ai.onnx, opset");
    }
  for (guint i = 0; i < G_N_ELEMENTS (expected_imported); i++)
    {
      g_autofree char *model
          = g_build_filename (root, expected_imported[i], "model.onnx", NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (ElkGraph) g = load (model, NULL, &error);
      g_assert_no_error (error);
      g_assert_nonnull (g);
    }
  g_hash_table_unref (c.unsupported_ops);
}

/* The whole Debian libonnx-testdata suite. */
static void
test_testdata_suite (void)
{
  const char *root = "/usr/share/libonnx-testdata/data";
  SuiteCounts c = { 0 };

  if (!g_file_test (root, G_FILE_TEST_IS_DIR))
    {
      g_test_skip ("libonnx-testdata is not installed "
                   "(apt-get install libonnx-testdata)");
      return;
    }
  c.unsupported_ops = g_hash_table_new_full (g_str_hash, g_str_equal,
                                             g_free, NULL);
  run_suite (root, 2, &c);
  report_suite ("libonnx-testdata", &c);
  g_assert_cmpuint (c.other, ==, 0);
  g_assert_cmpuint (c.imported + c.unsupported + c.unbound, ==, 1072);
  g_assert_cmpuint (c.imported, >=, 560);
  g_hash_table_unref (c.unsupported_ops);
}

/* ------------------------------------------------------------------ */
/* Symbolic dimensions                                                 */

static void
test_dims_bound (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "small.onnx", NULL);
  g_autoptr (Builder) b = builder_small ("batch", "seq");
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = NULL;
  const ElkTensor *y;

  builder_write (b, path);
  g = load (path, NULL, &error);
  g_assert_null (g);
  /* Every unbound dimension is named, not just the first. */
  assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                         "'batch', 'seq'", "dims=");
  g_clear_error (&error);

  g = load_ok (path, "batch=4, seq=16");
  y = elk_graph_get_tensor (g, (guint) elk_graph_find_tensor (g, "y"));
  g_assert_cmpuint (y->n_dims, ==, 3);
  g_assert_cmpuint (y->shape[0], ==, 4);
  g_assert_cmpuint (y->shape[1], ==, 16);
  g_assert_cmpuint (y->shape[2], ==, 32);
  g_assert_cmpfloat (elk_graph_get_total_flops (g), ==,
                     2.0 * 4 * 16 * 64 * 32 + 4 * 16 * 32);
  g_assert_cmpstr (elk_graph_get_attribute (g, "batch"), ==, "4");
  g_assert_cmpstr (elk_graph_get_attribute (g, "seq"), ==, "16");
  g_assert_cmpuint (attribute_u64 (g, "params"), ==, 64 * 32);
  g_clear_pointer (&g, elk_graph_unref);

  /* A typo is an error, not ignored; so is a bad value. */
  g = load (path, "batch=4,seq=16,btach=2", &error);
  g_assert_null (g);
  assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                         "'btach'", "batch, seq");
  g_clear_error (&error);
  g = load (path, "batch=0,seq=16", &error);
  g_assert_null (g);
  assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                         "batch=0", NULL);
  g_clear_error (&error);
  elk_test_remove_tree (dir);
}

/* Anonymous dimensions ("?") are named <input>:<axis>; exporters such as
 * paddle2onnx use names like "p2o.DynamicDimension.0". */
static void
test_dims_anonymous (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "anon.onnx", NULL);
  g_autoptr (Builder) b = builder_small ("p2o.DynamicDimension.0", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = NULL;

  builder_write (b, path);
  g = load (path, "p2o.DynamicDimension.0=2", &error);
  g_assert_null (g);
  assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                         "'x:1'", NULL);
  g_clear_error (&error);
  g = load_ok (path, "p2o.DynamicDimension.0=2,x:1=5");
  g_assert_cmpfloat (elk_graph_get_total_flops (g), ==,
                     2.0 * 2 * 5 * 64 * 32 + 2 * 5 * 32);
  elk_test_remove_tree (dir);
}

/* ------------------------------------------------------------------ */
/* External data                                                       */

static Builder *
builder_external (const char *location, const char *offset,
                  const char *length)
{
  Builder *b = builder_small (NULL, NULL);
  Onnx__TensorProto *w = g_ptr_array_index (b->inits, 0);
  const char *keys[3] = { "location", "offset", "length" };
  const char *values[3] = { location, offset, length };
  guint n = 0;

  /* x is fixed [2, 3, 64] here. */
  {
    Onnx__TensorShapeProto *sh =
      ((Onnx__ValueInfoProto *) b->inputs->pdata[0])->type->tensor_type->shape;
    for (guint i = 0; i < 2; i++)
      {
        sh->dim[i]->value_case
          = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        sh->dim[i]->dim_value = i + 2;
      }
  }
  w->n_float_data = 0;
  w->has_data_location = TRUE;
  w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  w->external_data = arena_alloc (b->arena, sizeof (gpointer) * 3);
  for (guint i = 0; i < 3; i++)
    {
      Onnx__StringStringEntryProto *e;
      if (values[i] == NULL)
        continue;
      e = arena_alloc (b->arena, sizeof *e);
      onnx__string_string_entry_proto__init (e);
      e->key = arena_strdup (b->arena, keys[i]);
      e->value = arena_strdup (b->arena, values[i]);
      w->external_data[n++] = e;
    }
  w->n_external_data = n;
  return b;
}

static void
write_weights (const char *path, gsize bytes)
{
  g_autofree char *buf = g_malloc0 (bytes);
  g_autoptr (GError) error = NULL;
  g_file_set_contents (path, buf, (gssize) bytes, &error);
  g_assert_no_error (error);
}

static void
expect_external_error (const char *dir, const char *location,
                       const char *offset, const char *length,
                       const char *mention)
{
  g_autofree char *path = g_build_filename (dir, "m.onnx", NULL);
  g_autoptr (Builder) b = builder_external (location, offset, length);
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = NULL;

  builder_write (b, path);
  g = load (path, NULL, &error);
  g_assert_null (g);
  assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                         "initializer 'W'", mention);
}

static void
test_external_data (void)
{
  g_autofree char *root = make_tmpdir ();
  g_autofree char *dir = g_build_filename (root, "model", NULL);
  g_autofree char *sub = g_build_filename (dir, "weights", NULL);
  g_autofree char *bin = g_build_filename (sub, "w.bin", NULL);
  g_autofree char *outside = g_build_filename (root, "secret.bin", NULL);
  g_autofree char *link = g_build_filename (dir, "link.bin", NULL);
  g_autofree char *path = g_build_filename (dir, "m.onnx", NULL);
  gsize bytes = 64 * 32 * 4;

  g_assert_cmpint (g_mkdir_with_parents (sub, 0700), ==, 0);
  write_weights (bin, 100 + bytes);
  write_weights (outside, bytes);
  g_assert_cmpint (symlink (outside, link), ==, 0);

  /* A good reference, with an offset. */
  {
    g_autoptr (Builder) b = builder_external ("weights/w.bin", "100", "8192");
    g_autoptr (ElkGraph) g = NULL;
    builder_write (b, path);
    g = load_ok (path, NULL);
    g_assert_cmpuint (attribute_u64 (g, "params"), ==, 64 * 32);
    g_assert_cmpuint (elk_graph_get_hbm_bytes (g), ==, bytes);
  }
  /* Escaping the folder, by "..", by an absolute path, by a link. */
  expect_external_error (dir, "../secret.bin", NULL, NULL, "inside");
  expect_external_error (dir, outside, NULL, NULL, "inside");
  expect_external_error (dir, "link.bin", NULL, NULL, "outside");
  /* Missing file, short file, wrong length, bad numbers. */
  expect_external_error (dir, "weights/none.bin", NULL, NULL, "cannot open");
  expect_external_error (dir, "weights/w.bin", "200", NULL, "only");
  expect_external_error (dir, "weights/w.bin", NULL, "100", "length");
  expect_external_error (dir, "weights/w.bin", "-1", NULL, "offset");
  expect_external_error (dir, "", NULL, NULL, "location");
  elk_test_remove_tree (root);
}

/* ------------------------------------------------------------------ */
/* Malformed and unsupported files                                     */

static void
expect_load_error (const char *path, int code, const char *s1,
                   const char *s2)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = load (path, NULL, &error);
  g_assert_null (g);
  assert_error_mentions (error, ELK_GRAPH_ERROR, code, s1, s2);
  g_assert_nonnull (strstr (error->message, path));
}

static void
test_malformed_truncated (void)
{
  REQUIRE_CORPUS (src, "torch-generated/resnet50_graphonly.onnx");
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "cut.onnx", NULL);
  g_autofree char *buf = NULL;
  gsize len;
  g_autoptr (GError) error = NULL;

  g_file_get_contents (src, &buf, &len, &error);
  g_assert_no_error (error);
  /* Cut at 97 places, including inside the header and the last byte. */
  for (guint i = 0; i < 97; i++)
    {
      gsize cut = i == 96 ? len - 1 : (len * i) / 96;
      g_autoptr (ElkGraph) g = NULL;
      g_file_set_contents (path, buf, (gssize) cut, &error);
      g_assert_no_error (error);
      g = load (path, NULL, &error);
      g_assert_null (g);
      g_assert_nonnull (error);
      g_assert_nonnull (strstr (error->message, path));
      g_clear_error (&error);
    }
  /* Not protobuf at all. */
  g_file_set_contents (path, "\xff\xff\xff\xff garbage", -1, &error);
  g_assert_no_error (error);
  expect_load_error (path, ELK_GRAPH_ERROR_INVALID, "not a valid ONNX",
                     NULL);
  elk_test_remove_tree (dir);
}

typedef void (*Corrupt) (Builder *b);

static void
corrupt_bad_enum (Builder *b)
{
  ((Onnx__TensorProto *) b->inits->pdata[0])->data_type = 999;
}

static void
corrupt_short_data (Builder *b)
{
  ((Onnx__TensorProto *) b->inits->pdata[0])->n_float_data = 10;
}

static void
corrupt_dangling (Builder *b)
{
  ((Onnx__NodeProto *) b->nodes->pdata[1])->input[0] = "nowhere";
}

static void
corrupt_cycle (Builder *b)
{
  /* mm reads y, which relu computes from mm's output. */
  ((Onnx__NodeProto *) b->nodes->pdata[0])->input[0] = "y";
}

static void
corrupt_huge_dim (Builder *b)
{
  Onnx__TensorShapeProto *sh =
    ((Onnx__ValueInfoProto *) b->inputs->pdata[0])->type->tensor_type->shape;
  sh->dim[0]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
  sh->dim[0]->dim_value = G_GINT64_CONSTANT (1) << 40;
}

static void
corrupt_negative_dim (Builder *b)
{
  ((Onnx__TensorProto *) b->inits->pdata[0])->dims[0] = -64;
}

static void
corrupt_input_type (Builder *b)
{
  ((Onnx__ValueInfoProto *) b->inputs->pdata[0])
    ->type->tensor_type->elem_type = 4242;
}

static void
corrupt_matmul_shapes (Builder *b)
{
  ((Onnx__TensorProto *) b->inits->pdata[0])->dims[0] = 32;
  ((Onnx__TensorProto *) b->inits->pdata[0])->dims[1] = 64;
}

static void
corrupt_unsupported_op (Builder *b)
{
  ((Onnx__NodeProto *) b->nodes->pdata[1])->op_type = "Det";
}

static void
corrupt_custom_domain (Builder *b)
{
  ((Onnx__NodeProto *) b->nodes->pdata[1])->domain = "com.microsoft";
}

static void
corrupt_new_opset (Builder *b)
{
  b->opset.version = 99;
}

static void
corrupt_no_graph_output (Builder *b)
{
  ((Onnx__ValueInfoProto *) b->outputs->pdata[0])->name = "missing";
}

static void
corrupt_twice_written (Builder *b)
{
  ((Onnx__NodeProto *) b->nodes->pdata[1])->output[0] = "h";
}

static void
test_malformed (void)
{
  static const struct
  {
    const char *name;
    Corrupt corrupt;
    int code;
    const char *s1, *s2;
  } cases[] = {
    { "bad-enum", corrupt_bad_enum, ELK_GRAPH_ERROR_INVALID, "initializer 'W'",
      "unknown data type 999" },
    { "short-data", corrupt_short_data, ELK_GRAPH_ERROR_INVALID,
      "initializer 'W'", "carries 10 elements" },
    { "dangling", corrupt_dangling, ELK_GRAPH_ERROR_INVALID,
      "node 'relu' (op Relu)", "'nowhere'" },
    { "cycle", corrupt_cycle, ELK_GRAPH_ERROR_INVALID, "(op MatMul)", "cycle" },
    { "huge-dim", corrupt_huge_dim, ELK_GRAPH_ERROR_LIMIT, "tensor 'x'",
      "max-tensor-elements" },
    { "negative-dim", corrupt_negative_dim, ELK_GRAPH_ERROR_INVALID, "'W'",
      "negative" },
    { "input-type", corrupt_input_type, ELK_GRAPH_ERROR_UNSUPPORTED,
      "graph input 'x'", "4242" },
    { "matmul-shapes", corrupt_matmul_shapes, ELK_GRAPH_ERROR_INVALID,
      "node 'mm' (op MatMul)", "inner extents" },
    { "unsupported-op", corrupt_unsupported_op, ELK_GRAPH_ERROR_UNSUPPORTED,
      "node 'relu' (op Det, domain ai.onnx, opset 13) is not "
      "supported",
      NULL },
    { "custom-domain", corrupt_custom_domain, ELK_GRAPH_ERROR_UNSUPPORTED,
      "(op Relu, domain com.microsoft, opset 13) is not supported", NULL },
    { "new-opset", corrupt_new_opset, ELK_GRAPH_ERROR_UNSUPPORTED, "opset 99",
      NULL },
    { "no-output", corrupt_no_graph_output, ELK_GRAPH_ERROR_INVALID,
      "graph output 'missing'", NULL },
    { "twice-written", corrupt_twice_written, ELK_GRAPH_ERROR_INVALID,
      "writes 'h'", NULL },
  };
  g_autofree char *dir = make_tmpdir ();

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("%s/%s.onnx", dir,
                                               cases[i].name);
      g_autoptr (Builder) b = builder_small (NULL, NULL);
      Onnx__TensorShapeProto *sh =
        ((Onnx__ValueInfoProto *) b->inputs->pdata[0])
          ->type->tensor_type->shape;
      for (guint k = 0; k < 2; k++)
        {
          sh->dim[k]->value_case
            = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
          sh->dim[k]->dim_value = 2;
        }
      cases[i].corrupt (b);
      builder_write (b, path);
      g_test_message ("case %s", cases[i].name);
      expect_load_error (path, cases[i].code, cases[i].s1, cases[i].s2);
    }
  elk_test_remove_tree (dir);
}

/* A graph of layout operators only has nothing to compile. */
static void
test_layout_only (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "t.onnx", NULL);
  g_autoptr (Builder) b = builder_new ();
  gint64 xd[2] = { 3, 4 };

  g_ptr_array_add (b->inputs, make_value_info (b->arena, "x", 1, 2, xd,
                                               NULL));
  g_ptr_array_add (b->nodes, make_node (b->arena, "Transpose", "t", "x",
                                        NULL, "y"));
  g_ptr_array_add (b->outputs, make_value_info (b->arena, "y", 1, 0, NULL,
                                                NULL));
  builder_write (b, path);
  expect_load_error (path, ELK_GRAPH_ERROR_UNSUPPORTED,
                     "no operator that computes", NULL);
  elk_test_remove_tree (dir);
}

/* ------------------------------------------------------------------ */
/* Immediates: the scalars the einsum graph has no operands for        */

static Onnx__AttributeProto *
make_attr (Arena *a, const char *name)
{
  Onnx__AttributeProto *at = arena_alloc (a, sizeof *at);
  onnx__attribute_proto__init (at);
  at->name = arena_strdup (a, name);
  return at;
}

static void
node_add_attr (Arena *a, Onnx__NodeProto *n, Onnx__AttributeProto *at)
{
  Onnx__AttributeProto **list = arena_alloc (a, sizeof (gpointer)
                                                  * (n->n_attribute + 1));
  if (n->n_attribute > 0)
    memcpy (list, n->attribute, sizeof (gpointer) * n->n_attribute);
  list[n->n_attribute++] = at;
  n->attribute = list;
}

static void
attr_float (Arena *a, Onnx__NodeProto *n, const char *name, float f)
{
  Onnx__AttributeProto *at = make_attr (a, name);
  at->has_type = TRUE;
  at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
  at->has_f = TRUE;
  at->f = f;
  node_add_attr (a, n, at);
}

static void
attr_int (Arena *a, Onnx__NodeProto *n, const char *name, gint64 i)
{
  Onnx__AttributeProto *at = make_attr (a, name);
  at->has_type = TRUE;
  at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  at->has_i = TRUE;
  at->i = i;
  node_add_attr (a, n, at);
}

static void
attr_ints (Arena *a, Onnx__NodeProto *n, const char *name, guint count,
           const gint64 *v)
{
  Onnx__AttributeProto *at = make_attr (a, name);
  at->has_type = TRUE;
  at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  at->n_ints = count;
  at->ints = arena_alloc (a, sizeof (int64_t) * count);
  for (guint i = 0; i < count; i++)
    at->ints[i] = v[i];
  node_add_attr (a, n, at);
}

/* A third input ("" leaves an optional input out, as ONNX does). */
static void
node_add_input (Arena *a, Onnx__NodeProto *n, const char *name)
{
  char **list = arena_alloc (a, sizeof (char *) * (n->n_input + 1));
  memcpy (list, n->input, sizeof (char *) * n->n_input);
  list[n->n_input++] = arena_strdup (a, name);
  n->input = list;
}

/* A scalar float initializer of value @v. */
static Onnx__TensorProto *
make_scalar (Arena *a, const char *name, float v)
{
  Onnx__TensorProto *t = make_tensor (a, name, 0, NULL, 1);
  t->float_data[0] = v;
  return t;
}

/* One node @op named "op" from input x of shape @xd (rank @rank) to y, in
 * a model of opset @opset; the caller adds attributes and inputs. */
static Builder *
builder_one (const char *op, gint64 opset, guint rank, const gint64 *xd,
             Onnx__NodeProto **node)
{
  Builder *b = builder_new ();

  b->opset.version = opset;
  g_ptr_array_add (b->inputs, make_value_info (b->arena, "x", 1, rank, xd,
                                               NULL));
  *node = make_node (b->arena, op, "op", "x", NULL, "y");
  g_ptr_array_add (b->nodes, *node);
  g_ptr_array_add (b->outputs, make_value_info (b->arena, "y", 1, 0, NULL,
                                                NULL));
  return b;
}

/* Loads the model @b and returns its "immediates:op" (NULL if unset). */
static char *
immediates_of (Builder *b)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "t.onnx", NULL);
  g_autoptr (ElkGraph) g = NULL;
  const char *v;
  char *copy;

  builder_write (b, path);
  g = load_ok (path, NULL);
  v = elk_graph_get_attribute (g, "immediates:op");
  copy = g_strdup (v);
  g_test_message ("%s: immediates:op = %s",
                  elk_graph_get_op (g, 0)->type, v != NULL ? v : "(unset)");
  elk_test_remove_tree (dir);
  return copy;
}

/* Clip's bounds: inputs from opset 11 on (a scalar initializer, omitted
 * for the float range), attributes before; a bound that is a graph input
 * is data of the run, so the frontend leaves the attribute unset. */
static void
test_immediates_clip (void)
{
  gint64 xd[2] = { 4, 6 }, sd[1] = { 1 };
  Onnx__NodeProto *n;

  {
    g_autoptr (Builder) b = builder_one ("Clip", 13, 2, xd, &n);
    g_autofree char *imm = NULL;
    node_add_input (b->arena, n, "lo");
    node_add_input (b->arena, n, "hi");
    g_ptr_array_add (b->inits, make_scalar (b->arena, "lo", -0.5f));
    g_ptr_array_add (b->inits, make_scalar (b->arena, "hi", 6.0f));
    imm = immediates_of (b);
    g_assert_cmpstr (imm, ==, "-0.5,6");
  }
  {
    g_autoptr (Builder) b = builder_one ("Clip", 13, 2, xd, &n);
    g_autofree char *imm = NULL;
    node_add_input (b->arena, n, "");
    node_add_input (b->arena, n, "hi");
    g_ptr_array_add (b->inits, make_scalar (b->arena, "hi", 0.1f));
    imm = immediates_of (b);
    g_assert_cmpstr (imm, ==, "-3.4028235e+38,0.1");
    g_assert_cmpfloat ((float) g_ascii_strtod (imm, NULL), ==, -G_MAXFLOAT);
  }
  {
    g_autoptr (Builder) b = builder_one ("Clip", 6, 2, xd, &n);
    g_autofree char *imm = NULL;
    attr_float (b->arena, n, "min", 0.0f);
    attr_float (b->arena, n, "max", 6.0f);
    imm = immediates_of (b);
    g_assert_cmpstr (imm, ==, "0,6");
  }
  {
    g_autoptr (Builder) b = builder_one ("Clip", 13, 2, xd, &n);
    g_autofree char *imm = NULL;
    node_add_input (b->arena, n, "lo");
    g_ptr_array_add (b->inputs, make_value_info (b->arena, "lo", 1, 0, sd,
                                                 NULL));
    imm = immediates_of (b);
    g_assert_null (imm);
  }
}

static void
test_immediates_activations (void)
{
  gint64 xd[2] = { 4, 6 };
  Onnx__NodeProto *n;

  {
    g_autoptr (Builder) b = builder_one ("LeakyRelu", 13, 2, xd, &n);
    g_autofree char *imm = NULL;
    attr_float (b->arena, n, "alpha", 0.2f);
    imm = immediates_of (b);
    g_assert_cmpstr (imm, ==, "0.2");
  }
  {
    g_autoptr (Builder) b = builder_one ("LeakyRelu", 13, 2, xd, &n);
    g_autofree char *imm = immediates_of (b);
    g_assert_cmpstr (imm, ==, "0.01");
  }
  {
    g_autoptr (Builder) b = builder_one ("Elu", 13, 2, xd, &n);
    g_autofree char *imm = immediates_of (b);
    g_assert_cmpstr (imm, ==, "1");
  }
  {
    g_autoptr (Builder) b = builder_one ("HardSigmoid", 13, 2, xd, &n);
    g_autofree char *imm = NULL;
    attr_float (b->arena, n, "beta", 0.25f);
    imm = immediates_of (b);
    g_assert_cmpstr (imm, ==, "0.2,0.25");
  }
  {
    /* No scalars: no attribute. */
    g_autoptr (Builder) b = builder_one ("Relu", 13, 2, xd, &n);
    g_autofree char *imm = immediates_of (b);
    g_assert_null (imm);
  }
}

/* Gemm's alpha and beta (default 1, 1), set on every Gemm. */
static void
test_immediates_gemm (void)
{
  gint64 xd[2] = { 4, 6 }, wd[2] = { 5, 6 }, cd[1] = { 5 };
  Onnx__NodeProto *n;

  {
    g_autoptr (Builder) b = builder_one ("Gemm", 13, 2, xd, &n);
    g_autofree char *imm = NULL;
    n->input[1] = arena_strdup (b->arena, "W");
    n->n_input = 2;
    node_add_input (b->arena, n, "C");
    g_ptr_array_add (b->inits, make_tensor (b->arena, "W", 2, wd, 30));
    g_ptr_array_add (b->inits, make_tensor (b->arena, "C", 1, cd, 5));
    attr_int (b->arena, n, "transB", 1);
    attr_float (b->arena, n, "alpha", 0.25f);
    attr_float (b->arena, n, "beta", 0.35f);
    imm = immediates_of (b);
    g_assert_cmpstr (imm, ==, "0.25,0.35");
  }
  {
    g_autoptr (Builder) b = builder_one ("Gemm", 13, 2, xd, &n);
    g_autofree char *imm = NULL;
    n->input[1] = arena_strdup (b->arena, "W");
    n->n_input = 2;
    g_ptr_array_add (b->inits, make_tensor (b->arena, "W", 2, wd, 30));
    attr_int (b->arena, n, "transB", 1);
    imm = immediates_of (b);
    g_assert_cmpstr (imm, ==, "1,1");
  }
}

/* A pool's true window: per spatial axis stride, effective kernel,
 * dilation, leading padding and input extent, then count_include_pad. */
static void
test_immediates_pool (void)
{
  gint64 xd[4] = { 1, 2, 9, 7 };
  Onnx__NodeProto *n;

  {
    /* 3x3 stride 2, padding 1 (ResNet's stem pool), H dilated by 2. */
    g_autoptr (Builder) b = builder_one ("MaxPool", 13, 4, xd, &n);
    g_autofree char *imm = NULL;
    attr_ints (b->arena, n, "kernel_shape", 2, (gint64[]) { 3, 3 });
    attr_ints (b->arena, n, "strides", 2, (gint64[]) { 2, 2 });
    attr_ints (b->arena, n, "pads", 4, (gint64[]) { 1, 1, 1, 1 });
    attr_ints (b->arena, n, "dilations", 2, (gint64[]) { 2, 1 });
    imm = immediates_of (b);
    g_assert_cmpstr (imm, ==, "2,5,2,1,9,2,3,1,1,7,0");
  }
  {
    /* 3x2 stride (2, 1), padding on H only, ceil mode, padding counted. */
    g_autoptr (Builder) b = builder_one ("AveragePool", 13, 4, xd, &n);
    g_autofree char *imm = NULL;
    attr_ints (b->arena, n, "kernel_shape", 2, (gint64[]) { 3, 2 });
    attr_ints (b->arena, n, "strides", 2, (gint64[]) { 2, 1 });
    attr_ints (b->arena, n, "pads", 4, (gint64[]) { 1, 0, 1, 0 });
    attr_int (b->arena, n, "ceil_mode", 1);
    attr_int (b->arena, n, "count_include_pad", 1);
    imm = immediates_of (b);
    g_assert_cmpstr (imm, ==, "2,3,1,1,9,1,2,1,0,7,1");
  }
  {
    /* SAME_UPPER: the leading padding is the smaller half. */
    g_autoptr (Builder) b = builder_one ("AveragePool", 13, 4, xd, &n);
    g_autofree char *imm = NULL;
    Onnx__AttributeProto *at = make_attr (b->arena, "auto_pad");
    attr_ints (b->arena, n, "kernel_shape", 2, (gint64[]) { 4, 4 });
    attr_ints (b->arena, n, "strides", 2, (gint64[]) { 2, 2 });
    at->has_type = TRUE;
    at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    at->has_s = TRUE;
    at->s.data = (guint8 *) arena_strdup (b->arena, "SAME_UPPER");
    at->s.len = strlen ("SAME_UPPER");
    node_add_attr (b->arena, n, at);
    imm = immediates_of (b);
    /* H: out 5, total pad 4*2+4-9 = 3 -> 1 leading; W: out 4, pad 3. */
    g_assert_cmpstr (imm, ==, "2,4,1,1,9,2,4,1,1,7,0");
  }
}

/* The operator named @name, which must exist. */
static const ElkOp *
find_op (const ElkGraph *g, const char *name)
{
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    if (strcmp (elk_graph_get_op (g, i)->name, name) == 0)
      return elk_graph_get_op (g, i);
  g_error ("no operator '%s'", name);
  return NULL;
}

/* The shape of operand @v of @op as "[a, b]". */
static char *
operand_shape (const ElkGraph *g, const ElkOp *op, guint v)
{
  const ElkTensor *t = elk_graph_get_tensor (g, op->tensors[v]);
  GString *s = g_string_new ("[");
  for (guint i = 0; i < t->n_dims; i++)
    g_string_append_printf (s, "%s%" G_GUINT64_FORMAT, i ? ", " : "",
                            t->shape[i]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

/* Softmax is lowered into max, sub-exp, sum and div with the normalised
 * axes reduced away, so that its axes are real reduced dimensions that
 * plans may split; no immediates are needed.  @reduced is the shape of
 * the max and the sum. */
static void
check_softmax (gint64 opset, gint64 axis, guint rank, const gint64 *xd,
               const char *reduced)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "t.onnx", NULL);
  Onnx__NodeProto *n;
  g_autoptr (Builder) b = builder_one ("Softmax", opset, rank, xd, &n);
  g_autoptr (ElkGraph) g = NULL;
  static const char *const names[4] = { "op#max", "op#exp", "op#sum", "op" };
  static const char *const types[4] = { "max", "sub-exp", "sum", "div" };
  static const double per_element[4] = { 1, 2, 1, 1 };
  guint64 elements = 1;

  if (axis != G_MININT64)
    attr_int (b->arena, n, "axis", axis);
  builder_write (b, path);
  g = load_ok (path, NULL);
  for (guint i = 0; i < rank; i++)
    elements *= (guint64) xd[i];
  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 4);
  for (guint i = 0; i < 4; i++)
    {
      const ElkOp *op = elk_graph_get_op (g, i);
      g_autofree char *key = g_strdup_printf ("immediates:%s", op->name);
      g_assert_cmpstr (op->name, ==, names[i]);
      g_assert_cmpstr (op->type, ==, types[i]);
      g_assert_cmpint (op->layer, ==, -1);
      g_assert_cmpfloat (op->flops, ==, per_element[i] * (double) elements);
      g_assert_null (elk_graph_get_attribute (g, key));
    }
  g_assert_cmpint (find_op (g, "op#max")->kind, ==, ELK_OP_REDUCE);
  g_assert_cmpint (find_op (g, "op#sum")->kind, ==, ELK_OP_REDUCE);
  {
    g_autofree char *m = operand_shape (g, find_op (g, "op#max"), 0);
    g_autofree char *s2 = operand_shape (g, find_op (g, "op#sum"), 0);
    g_autofree char *sd = operand_shape (g, find_op (g, "op"), 2);
    g_autofree char *y = operand_shape (g, find_op (g, "op"), 0);
    g_autofree char *x = operand_shape (g, find_op (g, "op#exp"), 1);
    g_test_message ("softmax opset %" G_GINT64_FORMAT ": x %s, max %s",
                    opset, x, m);
    g_assert_cmpstr (m, ==, reduced);
    g_assert_cmpstr (s2, ==, reduced);
    g_assert_cmpstr (sd, ==, reduced);
    g_assert_cmpstr (y, ==, x);
  }
  /* The output is the node's output value; the steps between are
   * activations of its own. */
  g_assert_cmpint (elk_graph_find_tensor (g, "y"), ==,
                   (gint) find_op (g, "op")->tensors[0]);
  g_assert_cmpint (elk_graph_find_tensor (g, "y#softmax-exp"), >=, 0);
  g_assert_cmpint (elk_graph_get_tensor (g, (guint) elk_graph_find_tensor (
                                              g, "y#softmax-exp"))->origin,
                   ==, ELK_TENSOR_ORIGIN_ACTIVATION);
  elk_test_remove_tree (dir);
}

static void
test_softmax_lowering (void)
{
  /* Opset 13: one axis (default the last). */
  check_softmax (13, 1, 3, (gint64[]) { 2, 3, 4 }, "[2, 4]");
  check_softmax (13, G_MININT64, 3, (gint64[]) { 2, 3, 4 }, "[2, 3]");
  check_softmax (13, -3, 3, (gint64[]) { 2, 3, 4 }, "[3, 4]");
  /* Before 13: every axis from "axis" on (default 1). */
  check_softmax (11, G_MININT64, 3, (gint64[]) { 2, 3, 4 }, "[2]");
  check_softmax (11, 2, 3, (gint64[]) { 2, 3, 4 }, "[2, 3]");
  /* Everything normalised: one value, kept as an axis of extent 1. */
  check_softmax (13, 0, 1, (gint64[]) { 5 }, "[1]");
  check_softmax (11, 0, 2, (gint64[]) { 2, 5 }, "[1]");
}

/* A float attribute of another type is an error naming the node. */
static void
test_immediates_bad_attribute (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "t.onnx", NULL);
  gint64 xd[2] = { 4, 6 };
  Onnx__NodeProto *n;
  g_autoptr (Builder) b = builder_one ("LeakyRelu", 13, 2, xd, &n);

  attr_int (b->arena, n, "alpha", 1);
  builder_write (b, path);
  expect_load_error (path, ELK_GRAPH_ERROR_INVALID, "'op'",
                     "attribute 'alpha' must be a float");
  elk_test_remove_tree (dir);
}

/* ------------------------------------------------------------------ */
/* The plugin                                                          */

static Builder *builder_if_on_input (void);

static void
test_plugin (void)
{
  const char *build = g_getenv ("ELK_BUILD_ROOT");
  g_autofree char *so = NULL;
  g_autoptr (ElkRegistry) registry = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) frontend = NULL;
  g_autoptr (ElkGraph) g = NULL;
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "small.onnx", NULL);
  g_autoptr (Builder) b = builder_small ("batch", "seq");
  const ElkFeature *feature;
  GParamSpec *pspec;

  if (build == NULL)
    {
      g_test_skip ("ELK_BUILD_ROOT is not set");
      return;
    }
  so = g_build_filename (build, "frontends", "onnx", "libelk-onnx.so", NULL);
  registry = elk_registry_new ();
  g_assert_true (elk_registry_load_file (registry, so, &error));
  g_assert_no_error (error);
  feature = elk_registry_find (registry, ELK_TYPE_FRONTEND, "onnx", &error);
  g_assert_no_error (error);
  g_assert_nonnull (feature);

  pspec = g_object_class_find_property (g_type_class_peek (feature->type),
                                        "model");
  g_assert_nonnull (pspec);
  g_assert_true (pspec->flags & ELK_PARAM_PATH);

  builder_write (b, path);
  frontend = g_object_new (feature->type, "model", path, "dims",
                           "batch=2,seq=8", "dtype", 2 /* fp16 */, NULL);
  g = elk_frontend_load (ELK_FRONTEND (frontend), &error);
  g_assert_no_error (error);
  g_assert_nonnull (g);
  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 2);
  /* dtype=fp16 makes every float tensor 2 bytes per element. */
  g_assert_cmpuint (elk_graph_get_hbm_bytes (g), ==, 64 * 32 * 2);
  g_clear_pointer (&g, elk_graph_unref);

  g_object_set (frontend, "dims", "", NULL);
  g = elk_frontend_load (ELK_FRONTEND (frontend), &error);
  g_assert_null (g);
  assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                         "'batch', 'seq'", NULL);
  g_clear_error (&error);

  /* input-values reaches the loader: the If on cond folds to Neg. */
  {
    g_autofree char *if_path = g_build_filename (dir, "if-input.onnx", NULL);
    g_autoptr (Builder) bi = builder_if_on_input ();
    g_autofree char *values = NULL;

    builder_write (bi, if_path);
    g_object_set (frontend, "model", if_path, "dims", "batch=2", "input-values",
                  "cond=0", NULL);
    g_object_get (frontend, "input-values", &values, NULL);
    g_assert_cmpstr (values, ==, "cond=0");
    g = elk_frontend_load (ELK_FRONTEND (frontend), &error);
    g_assert_no_error (error);
    g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 1);
    g_assert_cmpstr (elk_graph_get_op (g, 0)->type, ==, "neg");
    g_clear_pointer (&g, elk_graph_unref);
  }
  elk_test_remove_tree (dir);
}

/* The graph-size and nesting limits refuse the small model when lowered
 * below it, naming the parameter; the defaults accept it. */
static void
test_limits (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "small.onnx", NULL);
  g_autoptr (GError) error = NULL;
  Builder *b = builder_small ("batch", "seq");
  OnnxOptions options;
  ElkGraph *g;

  builder_write (b, path);
  builder_free (b);

  elk__onnx_options_init (&options);
  options.dims = "batch=2,seq=4";
  options.max_nodes = 1;
  g = elk__onnx_load (path, &options, &error);
  g_assert_null (g);
  assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_LIMIT,
                         "2 nodes", "'max-nodes'");
  g_clear_error (&error);

  /* Model, graph, value info, type, tensor type, shape, dimension. */
  elk__onnx_options_init (&options);
  options.dims = "batch=2,seq=4";
  options.max_nesting = 5;
  g = elk__onnx_load (path, &options, &error);
  g_assert_null (g);
  assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_LIMIT,
                         "'max-nesting'", NULL);
  g_clear_error (&error);

  elk__onnx_options_init (&options);
  options.dims = "batch=2,seq=4";
  g = elk__onnx_load (path, &options, &error);
  g_assert_no_error (error);
  elk_graph_unref (g);
  elk_test_remove_tree (dir);
}

/* ------------------------------------------------------------------ */
/* Control flow                                                        */

static Onnx__TensorProto *
make_int64_scalar (Arena *a, const char *name, gint64 value)
{
  Onnx__TensorProto *t = arena_alloc (a, sizeof *t);
  onnx__tensor_proto__init (t);
  t->name = arena_strdup (a, name);
  t->has_data_type = TRUE;
  t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
  t->n_int64_data = 1;
  t->int64_data = arena_alloc (a, sizeof (int64_t));
  t->int64_data[0] = value;
  return t;
}

/* A graph attribute holding a branch with @n_nodes nodes and one output. */
static void
attr_branch (Arena *a,
             Onnx__NodeProto *n,
             const char *name,
             Onnx__NodeProto **nodes,
             guint n_nodes,
             Onnx__TensorProto *init,
             const char *out)
{
  Onnx__AttributeProto *at = make_attr (a, name);
  Onnx__GraphProto *g = arena_alloc (a, sizeof *g);

  onnx__graph_proto__init (g);
  g->name = arena_strdup (a, name);
  g->n_node = n_nodes;
  g->node = arena_alloc (a, sizeof (gpointer) * n_nodes);
  memcpy (g->node, nodes, sizeof (gpointer) * n_nodes);
  if (init != NULL)
    {
      g->n_initializer = 1;
      g->initializer = arena_alloc (a, sizeof (gpointer));
      g->initializer[0] = init;
    }
  g->n_output = 1;
  g->output = arena_alloc (a, sizeof (gpointer));
  g->output[0] = make_value_info (a, out, 1, 0, NULL, NULL);
  at->has_type = TRUE;
  at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
  at->g = g;
  node_add_attr (a, n, at);
}

/* x[batch, 4]; c = Shape(x)[0] == 1; y = Sigmoid(If (c) then Relu(x2)
 * else Neg(x @ W)), where x2 = Abs(x) is a node written after the If in
 * the file, read by the then branch from the main graph, and W is an
 * initializer of the else branch. */
static Builder *
builder_if (void)
{
  Builder *b = builder_new ();
  Arena *a = b->arena;
  const char *names[2] = { "batch", NULL };
  gint64 xd[2] = { 0, 4 }, wd[2] = { 4, 4 };
  Onnx__NodeProto *iff, *then_nodes[1], *else_nodes[2];

  g_ptr_array_add (b->inputs, make_value_info (a, "x", 1, 2, xd, names));
  g_ptr_array_add (b->inits, make_int64_scalar (a, "zero", 0));
  g_ptr_array_add (b->inits, make_int64_scalar (a, "one", 1));
  g_ptr_array_add (b->nodes, make_node (a, "Shape", "shape", "x", NULL, "s"));
  g_ptr_array_add (b->nodes,
                   make_node (a, "Gather", "first", "s", "zero", "n"));
  g_ptr_array_add (b->nodes, make_node (a, "Equal", "is_one", "n", "one", "c"));
  iff = make_node (a, "If", "if", "c", NULL, "h");
  then_nodes[0] = make_node (a, "Relu", "relu", "x2", NULL, "t");
  attr_branch (a, iff, "then_branch", then_nodes, 1, NULL, "t");
  else_nodes[0] = make_node (a, "MatMul", "mm", "x", "W", "e1");
  else_nodes[1] = make_node (a, "Neg", "neg", "e1", NULL, "e");
  attr_branch (a, iff, "else_branch", else_nodes, 2,
               make_tensor (a, "W", 2, wd, 16), "e");
  g_ptr_array_add (b->nodes, iff);
  g_ptr_array_add (b->nodes, make_node (a, "Sigmoid", "sig", "h", NULL, "y"));
  g_ptr_array_add (b->nodes, make_node (a, "Abs", "abs", "x", NULL, "x2"));
  g_ptr_array_add (b->outputs, make_value_info (a, "y", 1, 0, NULL, NULL));
  return b;
}

static const ElkOp *
find_op_of_type (const ElkGraph *g, const char *type)
{
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    if (strcmp (elk_graph_get_op (g, i)->type, type) == 0)
      return elk_graph_get_op (g, i);
  return NULL;
}

/* The If folds to the branch its constant condition takes, whose last
 * node writes the If's output. */
static void
test_control_if_folded (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "if.onnx", NULL);
  g_autoptr (Builder) b = builder_if ();
  g_autoptr (ElkGraph) g1 = NULL;
  g_autoptr (ElkGraph) g2 = NULL;
  const ElkOp *relu, *neg, *sig;

  builder_write (b, path);

  g1 = load_ok (path, "batch=1");
  g_assert_cmpuint (elk_graph_get_n_ops (g1), ==, 3);
  relu = find_op_of_type (g1, "relu");
  sig = find_op_of_type (g1, "sigmoid");
  g_assert_nonnull (relu);
  g_assert_nonnull (find_op_of_type (g1, "abs"));
  g_assert_null (find_op_of_type (g1, "neg"));
  g_assert_cmpstr (relu->name, ==, "if/relu");
  /* Operand 0 is the output: Sigmoid reads what the branch's Relu writes,
   * and the Relu what Abs, a main-graph node after the If, writes. */
  g_assert_cmpuint (sig->tensors[1], ==, relu->tensors[0]);
  g_assert_cmpuint (relu->tensors[1], ==,
                    find_op_of_type (g1, "abs")->tensors[0]);
  /* Parameters: the two int64 scalars of the condition. */
  g_assert_cmpuint (attribute_u64 (g1, "params"), ==, 2);

  g2 = load_ok (path, "batch=3");
  g_assert_cmpuint (elk_graph_get_n_ops (g2), ==, 4);
  neg = find_op_of_type (g2, "neg");
  sig = find_op_of_type (g2, "sigmoid");
  g_assert_nonnull (neg);
  g_assert_nonnull (find_op_of_type (g2, "matmul"));
  g_assert_null (find_op_of_type (g2, "relu"));
  g_assert_cmpstr (find_op_of_type (g2, "matmul")->name, ==, "if/mm");
  g_assert_cmpuint (sig->tensors[1], ==, neg->tensors[0]);
  /* The else branch's initializer is a weight of the graph. */
  g_assert_cmpuint (attribute_u64 (g2, "params"), ==, 2 + 16);
  g_assert_cmpfloat (find_op_of_type (g2, "matmul")->flops, ==,
                     2.0 * 3 * 4 * 4);
  g_clear_pointer (&g1, elk_graph_unref);

  /* A branch with no node whose output is a main-graph value: the If's
   * output is a view of it, as Identity's is. */
  {
    Onnx__GraphProto *then
        = ((Onnx__NodeProto *) b->nodes->pdata[3])->attribute[0]->g;
    then->n_node = 0;
    then->output[0]->name = "x2";
    builder_write (b, path);
    g1 = load_ok (path, "batch=1");
    g_assert_cmpuint (elk_graph_get_n_ops (g1), ==, 2);
    g_assert_nonnull (find_op_of_type (g1, "abs"));
    g_assert_nonnull (find_op_of_type (g1, "sigmoid"));
  }
  elk_test_remove_tree (dir);
}

/* x[batch, 4] and a boolean scalar graph input cond; y = If (cond) then
 * Relu(x) else Neg(x), as exports that pick a branch from a flag or a
 * sample rate do. */
static Builder *
builder_if_on_input (void)
{
  Builder *b = builder_new ();
  Arena *a = b->arena;
  const char *names[2] = { "batch", NULL };
  gint64 xd[2] = { 0, 4 }, scalar[1] = { 0 };
  Onnx__NodeProto *iff, *then_nodes[1], *else_nodes[1];

  g_ptr_array_add (b->inputs, make_value_info (a, "x", 1, 2, xd, names));
  /* A scalar has a shape of no dimensions (no shape would be refused). */
  g_ptr_array_add (b->inputs,
                   make_value_info (a, "cond",
                                    ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0,
                                    scalar, NULL));
  iff = make_node (a, "If", "if", "cond", NULL, "y");
  then_nodes[0] = make_node (a, "Relu", "relu", "x", NULL, "t");
  attr_branch (a, iff, "then_branch", then_nodes, 1, NULL, "t");
  else_nodes[0] = make_node (a, "Neg", "neg", "x", NULL, "e");
  attr_branch (a, iff, "else_branch", else_nodes, 1, NULL, "e");
  g_ptr_array_add (b->nodes, iff);
  g_ptr_array_add (b->outputs, make_value_info (a, "y", 1, 0, NULL, NULL));
  return b;
}

static ElkGraph *
load_with_values (const char *path, const char *values, GError **error)
{
  OnnxOptions options;

  elk__onnx_options_init (&options);
  options.dims = "batch=2";
  options.input_values = values;
  return elk__onnx_load (path, &options, error);
}

/* input-values gives a scalar graph input a value, so that an If on it
 * folds; without it the If is refused with a pointer to the parameter;
 * every malformed binding is refused naming the file and the binding. */
static void
test_control_if_input_values (void)
{
  /* Each: the input-values given, and what the error must say. */
  static const char *const bad[][2] = {
    { "cond", "bad input value 'cond' in input-values" },
    { "cond=yes", "bad input value 'cond=yes'" },
    { "cond=1x", "bad input value 'cond=1x'" },
    { "=1", "bad input value '=1'" },
    { "cond=inf", "bad input value 'cond=inf'" },
    { "nope=1", "binds 'nope', which is not a graph input" },
    { "cond=1,cond=0", "input 'cond' is bound twice" },
    { "x=1", "binds 'x', which has 8 elements" },
    { "cond=2", "gives 'cond' the value 2, but the input is a boolean" },
    { "cond=0.5", "expected 0 or 1" },
  };
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "if-input.onnx", NULL);
  g_autoptr (Builder) b = builder_if_on_input ();
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g1 = NULL;
  g_autoptr (ElkGraph) g0 = NULL;

  builder_write (b, path);
  g_assert_null (load_with_values (path, NULL, &error));
  assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                         "its condition 'cond' is a graph input",
                         "input-values");
  g_clear_error (&error);

  g1 = load_with_values (path, " cond = 1 ", &error);
  g_assert_no_error (error);
  g_assert_cmpuint (elk_graph_get_n_ops (g1), ==, 1);
  g_assert_nonnull (find_op_of_type (g1, "relu"));
  g0 = load_with_values (path, "cond=0", &error);
  g_assert_no_error (error);
  g_assert_cmpuint (elk_graph_get_n_ops (g0), ==, 1);
  g_assert_nonnull (find_op_of_type (g0, "neg"));

  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_assert_null (load_with_values (path, bad[i][0], &error));
      assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                             path, bad[i][1]);
      g_clear_error (&error);
    }
  elk_test_remove_tree (dir);
}

/* An If nested in the then branch of another, on the main graph's
 * condition: both fold, and the inner branch's Relu writes the outer If's
 * output. */
static void
test_control_if_nested (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "nested.onnx", NULL);
  g_autoptr (Builder) b = builder_if ();
  g_autoptr (ElkGraph) g = NULL;
  Arena *a = b->arena;
  Onnx__NodeProto *inner = make_node (a, "If", "inner", "c", NULL, "t");
  Onnx__NodeProto *then_nodes[1], *else_nodes[1];
  Onnx__GraphProto *outer_then;
  const ElkOp *relu;

  then_nodes[0] = make_node (a, "Relu", "relu", "x2", NULL, "u");
  attr_branch (a, inner, "then_branch", then_nodes, 1, NULL, "u");
  else_nodes[0] = make_node (a, "Neg", "neg", "x2", NULL, "v");
  attr_branch (a, inner, "else_branch", else_nodes, 1, NULL, "v");
  outer_then = ((Onnx__NodeProto *) b->nodes->pdata[3])->attribute[0]->g;
  outer_then->node[0] = inner;
  builder_write (b, path);

  g = load_ok (path, "batch=1");
  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 3);
  relu = find_op_of_type (g, "relu");
  g_assert_nonnull (relu);
  g_assert_cmpstr (relu->name, ==, "if/inner/relu");
  g_assert_cmpuint (find_op_of_type (g, "sigmoid")->tensors[1], ==,
                    relu->tensors[0]);
  elk_test_remove_tree (dir);
}

/* A Loop "loop" over x[2, 4] with trip count @trip and no condition
 * input; its body: v_out = v_in + W (W a main-graph weight), s = -v_out,
 * cond_out = Identity(cond_in), or i < 2 with @stop (so it stops after
 * its third iteration).  y = Sigmoid(v), z = ReduceSum(s) over the stacked
 * scan output. */
static Builder *
builder_loop (gint64 trip, gboolean stop, const char *flag)
{
  Builder *b = builder_new ();
  Arena *a = b->arena;
  gint64 xd[2] = { 2, 4 }, wd[1] = { 4 };
  Onnx__NodeProto *loop, *body_nodes[3];
  Onnx__AttributeProto *at = make_attr (a, "body");
  Onnx__GraphProto *g = arena_alloc (a, sizeof *g);
  const char *ins[3] = { "i", "cond_in", "v_in" };
  const char *outs[3] = { "cond_out", "v_out", "s_out" };
  int in_types[3] = { 7, 9, 1 };

  g_ptr_array_add (b->inputs, make_value_info (a, "x", 1, 2, xd, NULL));
  g_ptr_array_add (b->inits, make_tensor (a, "W", 1, wd, 4));
  g_ptr_array_add (b->inits, make_int64_scalar (a, "M", trip));
  loop = make_node (a, "Loop", "loop", "M", "", "v");
  loop->n_input = 3;
  loop->input = arena_alloc (a, sizeof (char *) * 3);
  loop->input[0] = "M";
  loop->input[1] = "";
  loop->input[2] = "x";
  loop->n_output = 2;
  loop->output = arena_alloc (a, sizeof (char *) * 2);
  loop->output[0] = "v";
  loop->output[1] = "s";

  onnx__graph_proto__init (g);
  g->name = "body";
  body_nodes[0] = make_node (a, "Add", "add", "v_in", "W", "v_out");
  body_nodes[1] = make_node (a, "Neg", "neg", "v_out", NULL, "s_out");
  if (flag != NULL)
    body_nodes[2] = make_node (a, "Identity", "ident", flag, NULL, "cond_out");
  else if (stop)
    {
      body_nodes[2] = make_node (a, "Less", "less", "i", "two", "cond_out");
      g->n_initializer = 1;
      g->initializer = arena_alloc (a, sizeof (gpointer));
      g->initializer[0] = make_int64_scalar (a, "two", 2);
    }
  else
    body_nodes[2]
        = make_node (a, "Identity", "ident", "cond_in", NULL, "cond_out");
  g->n_node = 3;
  g->node = arena_alloc (a, sizeof (gpointer) * 3);
  memcpy (g->node, body_nodes, sizeof body_nodes);
  g->n_input = 3;
  g->input = arena_alloc (a, sizeof (gpointer) * 3);
  g->n_output = 3;
  g->output = arena_alloc (a, sizeof (gpointer) * 3);
  for (guint k = 0; k < 3; k++)
    {
      g->input[k] = make_value_info (a, ins[k], in_types[k], 0, NULL, NULL);
      g->output[k] = make_value_info (a, outs[k], in_types[k], 0, NULL, NULL);
    }
  at->has_type = TRUE;
  at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
  at->g = g;
  node_add_attr (a, loop, at);
  g_ptr_array_add (b->nodes, loop);
  g_ptr_array_add (b->nodes, make_node (a, "Sigmoid", "sig", "v", NULL, "y"));
  g_ptr_array_add (b->nodes, make_node (a, "ReduceSum", "sum", "s", NULL, "z"));
  g_ptr_array_add (b->outputs, make_value_info (a, "y", 1, 0, NULL, NULL));
  g_ptr_array_add (b->outputs, make_value_info (a, "z", 1, 0, NULL, NULL));
  return b;
}

static const ElkOp *
find_op_named (const ElkGraph *g, const char *name)
{
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    if (strcmp (elk_graph_get_op (g, i)->name, name) == 0)
      return elk_graph_get_op (g, i);
  return NULL;
}

/* A Loop with a constant trip count unrolls: one copy of the body per
 * iteration, each reading the previous one's loop-carried value, the last
 * writing the Loop's output, the scan outputs stacked; a body condition
 * that turns false stops it early. */
static void
test_control_loop (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "loop.onnx", NULL);
  gint64 trips[2] = { 3, 10 };

  for (guint t = 0; t < 2; t++)
    {
      g_autoptr (Builder) b = builder_loop (trips[t], t == 1, NULL);
      g_autoptr (ElkGraph) g = NULL;
      const ElkOp *add0, *add1, *add2, *sig, *sum;
      const ElkTensor *stacked;

      builder_write (b, path);
      g = load_ok (path, NULL);
      /* Three iterations of Add and Neg, Sigmoid, ReduceSum. */
      g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 3 * 2 + 2);
      add0 = find_op_named (g, "loop/0/add");
      add1 = find_op_named (g, "loop/1/add");
      add2 = find_op_named (g, "loop/2/add");
      g_assert_nonnull (add0);
      g_assert_nonnull (add1);
      g_assert_nonnull (add2);
      g_assert_null (find_op_named (g, "loop/3/add"));
      g_assert_cmpuint (add1->tensors[1], ==, add0->tensors[0]);
      g_assert_cmpuint (add2->tensors[1], ==, add1->tensors[0]);
      sig = find_op_of_type (g, "sigmoid");
      /* With M = 3 the third iteration is the last and writes v; stopped
       * early by its condition, v is a view of the third one's value. */
      if (trips[t] == 3)
        g_assert_cmpuint (sig->tensors[1], ==, add2->tensors[0]);
      else
        g_assert_cmpuint (sig->tensors[1], !=, add2->tensors[0]);
      sum = find_op_of_type (g, "reducesum");
      g_assert_nonnull (sum);
      stacked = elk_graph_get_tensor (g, sum->tensors[1]);
      g_assert_cmpuint (stacked->n_dims, ==, 3);
      g_assert_cmpuint (stacked->shape[0], ==, 3);
      g_assert_cmpuint (stacked->shape[1], ==, 2);
      g_assert_cmpuint (stacked->shape[2], ==, 4);
    }
  elk_test_remove_tree (dir);
}

/* Scan over x[2, 3] along axis 1 (3 iterations), reversed: the state
 * s = s + x[:, t] from s0 = W[2], the scan output the running state,
 * stacked along axis 1; y = Sigmoid(s), z = ReduceSum(scan output). */
static void
test_control_scan (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "scan.onnx", NULL);
  g_autoptr (Builder) b = builder_new ();
  g_autoptr (ElkGraph) g = NULL;
  Arena *a = b->arena;
  gint64 xd[2] = { 2, 3 }, wd[1] = { 2 };
  Onnx__NodeProto *scan = make_node (a, "Scan", "scan", "W", "x", "s");
  Onnx__NodeProto *body_nodes[2];
  Onnx__AttributeProto *at = make_attr (a, "body");
  Onnx__GraphProto *body = arena_alloc (a, sizeof *body);
  const char *names[2][2] = { { "s_in", "x_t" }, { "s_out", "r_out" } };
  const ElkOp *add0, *add1, *add2, *sum;
  const ElkTensor *stacked;

  g_ptr_array_add (b->inputs, make_value_info (a, "x", 1, 2, xd, NULL));
  g_ptr_array_add (b->inits, make_tensor (a, "W", 1, wd, 2));
  scan->n_output = 2;
  scan->output = arena_alloc (a, sizeof (char *) * 2);
  scan->output[0] = "s";
  scan->output[1] = "r";
  attr_int (a, scan, "num_scan_inputs", 1);
  attr_ints (a, scan, "scan_input_axes", 1, (gint64[]){ 1 });
  attr_ints (a, scan, "scan_input_directions", 1, (gint64[]){ 1 });
  attr_ints (a, scan, "scan_output_axes", 1, (gint64[]){ 1 });
  onnx__graph_proto__init (body);
  body->name = "body";
  body_nodes[0] = make_node (a, "Add", "add", "s_in", "x_t", "s_out");
  body_nodes[1] = make_node (a, "Identity", "copy", "s_out", NULL, "r_out");
  body->n_node = 2;
  body->node = arena_alloc (a, sizeof body_nodes);
  memcpy (body->node, body_nodes, sizeof body_nodes);
  body->n_input = 2;
  body->input = arena_alloc (a, sizeof (gpointer) * 2);
  body->n_output = 2;
  body->output = arena_alloc (a, sizeof (gpointer) * 2);
  for (guint k = 0; k < 2; k++)
    {
      body->input[k] = make_value_info (a, names[0][k], 1, 0, NULL, NULL);
      body->output[k] = make_value_info (a, names[1][k], 1, 0, NULL, NULL);
    }
  at->has_type = TRUE;
  at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
  at->g = body;
  node_add_attr (a, scan, at);
  g_ptr_array_add (b->nodes, scan);
  g_ptr_array_add (b->nodes, make_node (a, "Sigmoid", "sig", "s", NULL, "y"));
  g_ptr_array_add (b->nodes, make_node (a, "ReduceSum", "sum", "r", NULL, "z"));
  g_ptr_array_add (b->outputs, make_value_info (a, "y", 1, 0, NULL, NULL));
  g_ptr_array_add (b->outputs, make_value_info (a, "z", 1, 0, NULL, NULL));
  builder_write (b, path);

  g = load_ok (path, NULL);
  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 3 + 2);
  add0 = find_op_named (g, "scan/0/add");
  add1 = find_op_named (g, "scan/1/add");
  add2 = find_op_named (g, "scan/2/add");
  g_assert_nonnull (add0);
  g_assert_nonnull (add1);
  g_assert_nonnull (add2);
  g_assert_cmpuint (add1->tensors[1], ==, add0->tensors[0]);
  g_assert_cmpuint (add2->tensors[1], ==, add1->tensors[0]);
  g_assert_cmpuint (find_op_of_type (g, "sigmoid")->tensors[1], ==,
                    add2->tensors[0]);
  /* Each iteration reads a [2] slice of x. */
  g_assert_cmpuint (elk_graph_get_tensor (g, add0->tensors[2])->n_dims, ==, 1);
  g_assert_cmpuint (elk_graph_get_tensor (g, add0->tensors[2])->shape[0], ==,
                    2);
  sum = find_op_of_type (g, "reducesum");
  stacked = elk_graph_get_tensor (g, sum->tensors[1]);
  g_assert_cmpuint (stacked->n_dims, ==, 2);
  g_assert_cmpuint (stacked->shape[0], ==, 2);
  g_assert_cmpuint (stacked->shape[1], ==, 3);
  elk_test_remove_tree (dir);
}

/* A Scan over a constant folds: the reversed slices of K = [2, 3, 4]
 * stacked are [4, 3, 2], which a Reshape reads as its target shape. */
static void
test_control_scan_folded (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "scanfold.onnx", NULL);
  g_autoptr (Builder) b = builder_new ();
  g_autoptr (ElkGraph) g = NULL;
  Arena *a = b->arena;
  gint64 xd[1] = { 24 };
  Onnx__TensorProto *k = make_int64_scalar (a, "K", 2);
  Onnx__NodeProto *scan = make_node (a, "Scan", "scan", "K", NULL, "r");
  Onnx__NodeProto *copy
      = make_node (a, "Identity", "copy", "k_t", NULL, "r_out");
  Onnx__AttributeProto *at = make_attr (a, "body");
  Onnx__GraphProto *body = arena_alloc (a, sizeof *body);
  const ElkTensor *t;

  k->n_dims = 1;
  k->dims = arena_alloc (a, sizeof (int64_t));
  k->dims[0] = 3;
  k->n_int64_data = 3;
  k->int64_data = arena_alloc (a, 3 * sizeof (int64_t));
  for (guint i = 0; i < 3; i++)
    k->int64_data[i] = 2 + i;
  g_ptr_array_add (b->inputs, make_value_info (a, "x", 1, 1, xd, NULL));
  g_ptr_array_add (b->inits, k);
  attr_int (a, scan, "num_scan_inputs", 1);
  attr_ints (a, scan, "scan_input_directions", 1, (gint64[]){ 1 });
  onnx__graph_proto__init (body);
  body->name = "body";
  body->n_node = 1;
  body->node = arena_alloc (a, sizeof (gpointer));
  body->node[0] = copy;
  body->n_input = 1;
  body->input = arena_alloc (a, sizeof (gpointer));
  body->input[0] = make_value_info (a, "k_t", 7, 0, NULL, NULL);
  body->n_output = 1;
  body->output = arena_alloc (a, sizeof (gpointer));
  body->output[0] = make_value_info (a, "r_out", 7, 0, NULL, NULL);
  at->has_type = TRUE;
  at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
  at->g = body;
  node_add_attr (a, scan, at);
  g_ptr_array_add (b->nodes, scan);
  g_ptr_array_add (b->nodes,
                   make_node (a, "Reshape", "reshape", "x", "r", "h"));
  g_ptr_array_add (b->nodes, make_node (a, "Relu", "relu", "h", NULL, "y"));
  g_ptr_array_add (b->outputs, make_value_info (a, "y", 1, 0, NULL, NULL));
  builder_write (b, path);

  g = load_ok (path, NULL);
  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 1);
  t = elk_graph_get_tensor (g, elk_graph_get_op (g, 0)->tensors[0]);
  g_assert_cmpuint (t->n_dims, ==, 3);
  g_assert_cmpuint (t->shape[0], ==, 4);
  g_assert_cmpuint (t->shape[1], ==, 3);
  g_assert_cmpuint (t->shape[2], ==, 2);
  elk_test_remove_tree (dir);
}

/* libonnx-testdata's Scan-9 sum unrolls into three chained Adds, the last
 * writing the final state y. */
static void
test_control_testdata_scan (void)
{
  const char *path
      = "/usr/share/libonnx-testdata/data/node/test_scan9_sum/model.onnx";
  g_autoptr (ElkGraph) g = NULL;
  const ElkOp *last;

  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_test_skip ("libonnx-testdata is not installed");
      return;
    }
  g = load_ok (path, NULL);
  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 3);
  last = elk_graph_get_op (g, 2);
  g_assert_cmpstr (last->name, ==, "Scan_0/2/Add_0");
  g_assert_cmpstr (elk_graph_get_tensor (g, last->tensors[0])->name, ==, "y");
  g_assert_cmpuint (elk_graph_get_op (g, 1)->tensors[0], ==, last->tensors[1]);
}

/* An If on a condition known only at run time and Loops without a
 * constant trip count are refused naming the node and the reason. */
static void
test_control_refused (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "if.onnx", NULL);
  g_autoptr (GError) error = NULL;
  ElkGraph *g;

  {
    /* The condition compares with a graph input instead of a constant. */
    g_autoptr (Builder) b = builder_if ();
    gint64 one[1] = { 1 };
    g_ptr_array_add (b->inputs,
                     make_value_info (b->arena, "k", 7, 0, one, NULL));
    ((Onnx__NodeProto *) b->nodes->pdata[2])->input[1] = "k";
    builder_write (b, path);
    g = load (path, "batch=1", &error);
    g_assert_null (g);
    assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                           "node 'if' (op If",
                           "its condition 'c' is "
                           "computed by the model, known only at run time");
    g_clear_error (&error);
  }
  {
    g_autoptr (Builder) b = builder_small ("batch", "seq");
    Onnx__NodeProto *relu = b->nodes->pdata[1];
    relu->op_type = "Loop";
    relu->n_input = 2;
    relu->input[1] = relu->input[0];
    relu->input[0] = "";
    builder_write (b, path);
    g = load (path, "batch=1,seq=2", &error);
    g_assert_null (g);
    assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                           "node 'relu' (op Loop", "it has no trip count M");
    g_clear_error (&error);

    relu->input[0] = "h";
    builder_write (b, path);
    g = load (path, "batch=1,seq=2", &error);
    g_assert_null (g);
    assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                           "node 'relu' (op Loop",
                           "trip count M is known only at run time");
    g_clear_error (&error);
  }
  {
    /* A Loop body whose condition comes from a graph input. */
    g_autoptr (Builder) b = builder_loop (3, FALSE, "flag");
    gint64 none[1] = { 1 };
    g_ptr_array_add (b->inputs,
                     make_value_info (b->arena, "flag", 9, 0, none, NULL));
    builder_write (b, path);
    g = load (path, NULL, &error);
    g_assert_null (g);
    assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                           "node 'loop' (op Loop",
                           "the condition its body "
                           "computes in iteration 0 ('loop/0/cond_out') is "
                           "known only at run time");
    g_clear_error (&error);
  }
  {
    /* A branch reading a name nothing defines. */
    g_autoptr (Builder) b = builder_if ();
    Onnx__NodeProto *iff = b->nodes->pdata[3];
    iff->attribute[0]->g->node[0]->input[0] = "nowhere";
    builder_write (b, path);
    g = load (path, "batch=1", &error);
    g_assert_null (g);
    assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                           "node 'if' (op If) reads 'nowhere' in a subgraph",
                           NULL);
    g_clear_error (&error);
  }
  elk_test_remove_tree (dir);
}

/* The corpus's If node test: the condition is a graph input, so the If
 * is refused with the reason. */
static void
test_control_testdata_if (void)
{
  REQUIRE_CORPUS (path, "onnx-testdata-subset/node/test_if/model.onnx");
  g_autoptr (GError) error = NULL;
  ElkGraph *g = load (path, NULL, &error);

  g_assert_null (g);
  assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED,
                         "node 'If_0' (op If",
                         "its condition 'cond' is a graph input");
}

/* ------------------------------------------------------------------ */
/* elk-onnx-info                                                       */

static void
assert_contains (const char *text, const char *want)
{
  if (strstr (text, want) == NULL)
    g_error ("the report lacks \"%s\":\n%s", want, text);
}

/* The report on a graph-only corpus model: one model input, the weights
 * counted, and the import line agreeing with elk__onnx_load. */
static void
test_info_corpus (void)
{
  REQUIRE_CORPUS (path, "torch-generated/bert_base_encoder_graphonly.onnx");
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = load_ok (path, NULL);
  g_autofree char *report = elk__onnx_describe (path, NULL, &error);
  g_autofree char *imports = NULL;

  g_assert_no_error (error);
  g_assert_nonnull (report);
  assert_contains (report, "opsets: ai.onnx 14");
  assert_contains (report, "  input                    INT64    [1, 128]\n");
  assert_contains (report, "graph inputs used as weights");
  assert_contains (report, "symbolic dimensions: none");
  assert_contains (report, "MatMul\n");
  g_assert_null (strstr (report, "unsupported"));
  imports = g_strdup_printf ("imports: %u elk operators, %.4g GFLOP, %s "
                             "parameters",
                             elk_graph_get_n_ops (g),
                             elk_graph_get_total_flops (g) / 1e9,
                             elk_graph_get_attribute (g, "params"));
  assert_contains (report, imports);
}

/* x[batch, seq, 64] @ W -> Det -> Relu: the symbols get suggestions, Det
 * is reported with the loader's reason and Relu as not checked. */
static void
test_info_unsupported (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "det.onnx", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (Builder) b = builder_small ("batch", "seq");
  g_autofree char *report = NULL;
  OnnxOptions options;
  Onnx__NodeProto *relu;

  /* mm -> h -> det -> d -> relu -> y */
  relu = g_ptr_array_index (b->nodes, 1);
  relu->input[0] = arena_strdup (b->arena, "d");
  g_ptr_array_insert (b->nodes, 1,
                      make_node (b->arena, "Det", "det", "h", NULL, "d"));
  builder_write (b, path);

  report = elk__onnx_describe (path, NULL, &error);
  g_assert_no_error (error);
  g_test_message ("%s", report);
  assert_contains (report, "  x                        FLOAT    "
                           "[batch, seq, 64]\n");
  assert_contains (report, "  batch                first in x[0]"
                           "                     suggested 1 (a batch)\n");
  assert_contains (report, "suggested 128 (a sequence length)");
  assert_contains (report, "suggested binding: dims=\"batch=1,seq=128\"");
  assert_contains (report, "opsets: ai.onnx 13");
  assert_contains (report, "       1  Det  unsupported: elk has no such "
                           "operator\n");
  assert_contains (report, "check with dims=\"batch=1,seq=128\":\n"
                           "  1 unsupported node:\n"
                           "    node 'det' (op Det, domain ai.onnx, opset "
                           "13) is not supported\n"
                           "  1 node after them (reading their outputs) "
                           "not checked\n");
  g_clear_pointer (&report, g_free);

  /* A binding from the user is kept and the rest suggested. */
  elk__onnx_options_init (&options);
  options.dims = "batch=4";
  report = elk__onnx_describe (path, &options, &error);
  g_assert_no_error (error);
  assert_contains (report, "suggested 4 (bound by dims)");
  assert_contains (report, "dims=\"batch=4,seq=128\"");
  g_clear_pointer (&report, g_free);

  /* Without Det the same model imports. */
  relu->input[0] = arena_strdup (b->arena, "h");
  g_ptr_array_remove_index (b->nodes, 1);
  builder_write (b, path);
  report = elk__onnx_describe (path, NULL, &error);
  g_assert_no_error (error);
  assert_contains (report, "imports: 2 elk operators");
  elk_test_remove_tree (dir);
}

/* A model refused as a whole still gets its inputs and operators. */
static void
test_info_refused_model (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "opset.onnx", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (Builder) b = builder_small ("batch", "seq");
  g_autofree char *report = NULL;

  b->opset.version = ELK_ONNX_MAX_OPSET + 5;
  builder_write (b, path);
  report = elk__onnx_describe (path, NULL, &error);
  g_assert_no_error (error);
  assert_contains (report, "[batch, seq, 64]");
  assert_contains (report, "       1  MatMul\n");
  assert_contains (report, "cannot be imported: opset 23 of domain ai.onnx "
                           "is not supported");
  elk_test_remove_tree (dir);
}

/* A missing or corrupt file is an error naming it, from the function and
 * from the tool (exit status 1, the message on stderr). */
static void
test_info_errors (void)
{
  g_autofree char *dir = make_tmpdir ();
  g_autofree char *missing = g_build_filename (dir, "missing.onnx", NULL);
  g_autofree char *corrupt = g_build_filename (dir, "corrupt.onnx", NULL);
  g_autofree char *good = g_build_filename (dir, "good.onnx", NULL);
  const char *build = g_getenv ("ELK_BUILD_ROOT");
  g_autoptr (GError) error = NULL;
  g_autoptr (Builder) b = builder_small ("batch", "seq");
  char *report;

  builder_write (b, good);
  g_file_set_contents (corrupt, "\x0a\xff\xff\xff", 4, &error);
  g_assert_no_error (error);
  report = elk__onnx_describe (missing, NULL, &error);
  g_assert_null (report);
  assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                         missing, "cannot read the model");
  g_clear_error (&error);
  report = elk__onnx_describe (corrupt, NULL, &error);
  g_assert_null (report);
  assert_error_mentions (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                         corrupt, "truncated or corrupted");
  g_clear_error (&error);

  if (build == NULL)
    {
      g_test_skip ("ELK_BUILD_ROOT is not set: the tool is not run");
      elk_test_remove_tree (dir);
      return;
    }
  {
    g_autofree char *tool
        = g_build_filename (build, "frontends", "onnx", "elk-onnx-info", NULL);
    const char *files[] = { missing, corrupt, good };
    for (guint i = 0; i < G_N_ELEMENTS (files); i++)
      {
        g_autofree char *out = NULL, *err = NULL;
        int status;
        const char *argv[] = { tool, "--dims=batch=2", files[i], NULL };

        g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                      &out, &err, &status, &error);
        g_assert_no_error (error);
        if (i < 2)
          {
            g_assert_true (g_spawn_check_wait_status (status, NULL) == FALSE);
            g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 1);
            assert_contains (err, files[i]);
            g_assert_cmpstr (out, ==, "");
          }
        else
          {
            OnnxOptions options;
            g_autofree char *want = NULL;
            elk__onnx_options_init (&options);
            options.dims = "batch=2";
            want = elk__onnx_describe (good, &options, &error);
            g_assert_no_error (error);
            g_assert_true (g_spawn_check_wait_status (status, NULL));
            g_assert_cmpstr (out, ==, want);
          }
      }
  }
  elk_test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/onnx/corpus/manifest", test_corpus_manifest);
  g_test_add_func ("/onnx/corpus/resnet50", test_corpus_resnet50);
  g_test_add_func ("/onnx/corpus/vit-b-16", test_corpus_vit);
  g_test_add_func ("/onnx/corpus/bert-base", test_corpus_bert);
  g_test_add_func ("/onnx/corpus/gpt2-small", test_corpus_gpt2);
  g_test_add_func ("/onnx/corpus/mobilenet-v2", test_corpus_mobilenet);
  g_test_add_func ("/onnx/corpus/external-same-graph",
                   test_corpus_external_same_graph);
  g_test_add_func ("/onnx/corpus/testdata-subset",
                   test_corpus_testdata_subset);
  g_test_add_func ("/onnx/testdata/suite", test_testdata_suite);
  g_test_add_func ("/onnx/dims/bound", test_dims_bound);
  g_test_add_func ("/onnx/dims/anonymous", test_dims_anonymous);
  g_test_add_func ("/onnx/external-data", test_external_data);
  g_test_add_func ("/onnx/malformed/truncated", test_malformed_truncated);
  g_test_add_func ("/onnx/malformed/cases", test_malformed);
  g_test_add_func ("/onnx/layout-only", test_layout_only);
  g_test_add_func ("/onnx/immediates/clip", test_immediates_clip);
  g_test_add_func ("/onnx/immediates/activations",
                   test_immediates_activations);
  g_test_add_func ("/onnx/immediates/gemm", test_immediates_gemm);
  g_test_add_func ("/onnx/immediates/pool", test_immediates_pool);
  g_test_add_func ("/onnx/softmax-lowering", test_softmax_lowering);
  g_test_add_func ("/onnx/immediates/bad-attribute",
                   test_immediates_bad_attribute);
  g_test_add_func ("/onnx/limits", test_limits);
  g_test_add_func ("/onnx/plugin", test_plugin);
  g_test_add_func ("/onnx/control/if-folded", test_control_if_folded);
  g_test_add_func ("/onnx/control/if-nested", test_control_if_nested);
  g_test_add_func ("/onnx/control/loop", test_control_loop);
  g_test_add_func ("/onnx/control/scan", test_control_scan);
  g_test_add_func ("/onnx/control/scan-folded", test_control_scan_folded);
  g_test_add_func ("/onnx/control/testdata-scan", test_control_testdata_scan);
  g_test_add_func ("/onnx/control/refused", test_control_refused);
  g_test_add_func ("/onnx/control/testdata-if", test_control_testdata_if);
  g_test_add_func ("/onnx/control/if-input-values",
                   test_control_if_input_values);
  g_test_add_func ("/onnx/info/corpus", test_info_corpus);
  g_test_add_func ("/onnx/info/unsupported", test_info_unsupported);
  g_test_add_func ("/onnx/info/refused-model", test_info_refused_model);
  g_test_add_func ("/onnx/info/errors", test_info_errors);
  return g_test_run ();
}
