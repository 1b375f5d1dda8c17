/* test-onnx-quant.c: the onnx frontend's quantized operators
 * (frontends/onnx/elk-onnx-quant.c) on one-node models written here: what
 * each lowers into (operators, element types, FLOPs, which operand is
 * shifted by its zero point) and every refusal a user can meet, each
 * naming the node and the reason.
 *
 * The numbers the operators compute are checked in functional mode by
 * tests/ipu-pod/test-ipu-pod-onnx.c on the libonnx-testdata node tests.
 */
#include "config.h"

#include <string.h>

#include <elk/elk.h>

#include "elk-onnx-loader.h"
#include "elk-test-util.h"
#include "onnx-test-proto.h"

static char *tmpdir;

/* ---- One-node models from a compact description ---- */

/* An input "name:TYPE:dims[:value]": dims "2x4", or "-" for a scalar
 * (rank 0); with a value the input is an initializer filled with it, else
 * a graph input.  "" is an omitted optional input. */
typedef struct
{
  const char *op;
  gint64 opset;
  const char *inputs[9];
  const char *outputs[3];
  const char *attrs; /* "name=int,...": integer attributes, or NULL */
} QCase;

static int
type_of (const char *name)
{
  static const struct
  {
    const char *name;
    int type;
  } types[] = {
    { "FLOAT", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT },
    { "UINT8", ONNX__TENSOR_PROTO__DATA_TYPE__UINT8 },
    { "INT8", ONNX__TENSOR_PROTO__DATA_TYPE__INT8 },
    { "INT16", ONNX__TENSOR_PROTO__DATA_TYPE__INT16 },
    { "INT32", ONNX__TENSOR_PROTO__DATA_TYPE__INT32 },
    { "BOOL", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (types); i++)
    if (strcmp (types[i].name, name) == 0)
      return types[i].type;
  g_error ("unknown type %s", name);
}

static Onnx__TensorProto *
initializer (OnnxTestArena *a,
             const char *name,
             int type,
             guint rank,
             gint64 *dims,
             gsize n,
             double value)
{
  g_autofree double *data = g_new (double, MAX (n, 1));

  for (gsize i = 0; i < n; i++)
    data[i] = value;
  return onnx_test_tensor (a, name, type, rank, dims, data);
}

/* Writes the nodes @cs (a chain: a node's input without a type is an
 * earlier node's output) as <tmpdir>/<name>.onnx and returns the path.
 * One node is named "q", several "q0", "q1", ...; the graph outputs are
 * the last node's. */
static char *
write_model (const QCase *cs, guint n_nodes, const char *name)
{
  OnnxTestArena a = { g_ptr_array_new_with_free_func (g_free) };
  Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
  Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
  Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
  Onnx__OperatorSetIdProto *opsets[1] = { &opset };
  Onnx__NodeProto node[4], *nodes[4];
  Onnx__ValueInfoProto *ins[36], *outs[3];
  Onnx__TensorProto *inits[36];
  Onnx__AttributeProto *attrs[4][4];
  char *node_in[4][9], *node_out[4][3], node_name[4][8];
  g_autoptr (GPtrArray) strvs
      = g_ptr_array_new_with_free_func ((GDestroyNotify) g_strfreev);
  char *path = g_strdup_printf ("%s/%s.onnx", tmpdir, name);

  g_assert_cmpuint (n_nodes, <=, 4);
  opset.has_version = TRUE;
  opset.version = cs[0].opset;
  model.has_ir_version = TRUE;
  model.ir_version = 8;
  model.n_opset_import = 1;
  model.opset_import = opsets;
  model.graph = &graph;
  graph.name = "quant";
  graph.n_node = n_nodes;
  graph.node = nodes;
  graph.input = ins;
  graph.initializer = inits;
  graph.output = outs;
  for (guint k = 0; k < n_nodes; k++)
    {
      const QCase *c = &cs[k];
      char **attr_parts;

      onnx__node_proto__init (&node[k]);
      nodes[k] = &node[k];
      if (n_nodes == 1)
        g_strlcpy (node_name[k], "q", sizeof node_name[k]);
      else
        g_snprintf (node_name[k], sizeof node_name[k], "q%u", k);
      node[k].name = node_name[k];
      node[k].op_type = (char *) c->op;
      node[k].input = node_in[k];
      node[k].output = node_out[k];
      node[k].attribute = attrs[k];
      for (guint i = 0; i < G_N_ELEMENTS (c->inputs) && c->inputs[i] != NULL;
           i++)
        {
          gint64 dims[8];
          guint rank = 0;
          gsize n = 1;
          int type;
          char **parts;

          node_in[k][node[k].n_input++] = (char *) c->inputs[i];
          if (strchr (c->inputs[i], ':') == NULL)
            continue;
          parts = g_strsplit (c->inputs[i], ":", 4);
          g_ptr_array_add (strvs, parts);
          node_in[k][node[k].n_input - 1] = parts[0];
          type = type_of (parts[1]);
          if (strcmp (parts[2], "-") != 0)
            {
              g_auto (GStrv) d = g_strsplit (parts[2], "x", 9);
              for (; d[rank] != NULL; rank++)
                {
                  dims[rank] = g_ascii_strtoll (d[rank], NULL, 10);
                  n *= (gsize) dims[rank];
                }
            }
          if (parts[3] != NULL)
            inits[graph.n_initializer++]
                = initializer (&a, parts[0], type, rank, dims, n,
                               g_ascii_strtod (parts[3], NULL));
          else
            ins[graph.n_input++]
                = onnx_test_value_info (&a, parts[0], type, rank, dims);
        }
      for (guint i = 0; i < G_N_ELEMENTS (c->outputs) && c->outputs[i] != NULL;
           i++)
        {
          Onnx__ValueInfoProto *v
              = onnx_test_own (&a, g_new0 (Onnx__ValueInfoProto, 1));
          node_out[k][node[k].n_output++] = (char *) c->outputs[i];
          if (*c->outputs[i] == '\0' || k + 1 < n_nodes)
            continue;
          onnx__value_info_proto__init (v);
          v->name = (char *) c->outputs[i];
          outs[graph.n_output++] = v;
        }
      attr_parts = g_strsplit (c->attrs != NULL ? c->attrs : "", ",", 4);
      g_ptr_array_add (strvs, attr_parts);
      for (guint i = 0; attr_parts[i] != NULL && *attr_parts[i] != '\0'; i++)
        {
          char *eq = strchr (attr_parts[i], '=');
          Onnx__AttributeProto *at;

          *eq = '\0';
          at = onnx_test_attribute (&a, attr_parts[i],
                                    ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
          at->has_i = TRUE;
          at->i = g_ascii_strtoll (eq + 1, NULL, 10);
          attrs[k][node[k].n_attribute++] = at;
        }
    }
  onnx_test_write_message (&model.base, path);
  g_ptr_array_unref (a.owned);
  return path;
}

static ElkGraph *
load_case (const QCase *c, const char *name, GError **error)
{
  g_autofree char *path = write_model (c, 1, name);
  OnnxOptions options;

  elk__onnx_options_init (&options);
  return elk__onnx_load (path, &options, error);
}

static const ElkOp *
op_named (const ElkGraph *g, const char *name)
{
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    if (strcmp (elk_graph_get_op (g, i)->name, name) == 0)
      return elk_graph_get_op (g, i);
  g_error ("no operator '%s'", name);
}

static const ElkTensor *
tensor_named (const ElkGraph *g, const char *name)
{
  gint id = elk_graph_find_tensor (g, name);
  g_assert_cmpint (id, >=, 0);
  return elk_graph_get_tensor (g, (guint) id);
}

/* ---- What the operators lower into ---- */

/* QLinearMatMul of a uint8 activation (zero point 3: shifted) by an int8
 * weight with per-column scales and zero points that are all 0 (not
 * shifted): the shift, the int32 product, the multiplier per column and
 * the requantization to uint8. */
static void
test_qlinear_matmul (void)
{
  static const QCase c = { "QLinearMatMul",
                           13,
                           { "a:UINT8:2x4", "as:FLOAT:-:0.5", "azp:UINT8:-:3",
                             "b:INT8:4x3:1", "bs:FLOAT:3:0.25", "bzp:INT8:3:0",
                             "ys:FLOAT:-:2", "yzp:UINT8:-:7" },
                           { "y" },
                           NULL };
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = load_case (&c, "qlinear-matmul", &error);
  const ElkOp *op;

  g_assert_no_error (error);
  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 4);
  op = op_named (g, "q#a-shift");
  g_assert_cmpstr (op->type, ==, "sub");
  g_assert_cmpint (tensor_named (g, "q/a-shifted")->dtype, ==, ELK_DTYPE_I32);
  op = op_named (g, "q#product");
  g_assert_cmpint (op->kind, ==, ELK_OP_MATMUL);
  g_assert_cmpfloat (op->flops, ==, 2.0 * 2 * 4 * 3);
  /* The weight is read as it is stored: int8, from HBM. */
  g_assert_cmpuint (op->tensors[1], ==,
                    elk_graph_find_tensor (g, "q/a-shifted"));
  g_assert_cmpuint (op->tensors[2], ==, elk_graph_find_tensor (g, "b"));
  g_assert_cmpint (tensor_named (g, "b")->dtype, ==, ELK_DTYPE_I8);
  g_assert_cmpint (tensor_named (g, "b")->origin, ==, ELK_TENSOR_ORIGIN_WEIGHT);
  g_assert_cmpint (tensor_named (g, "q/product")->dtype, ==, ELK_DTYPE_I32);
  op = op_named (g, "q#multiplier");
  g_assert_cmpstr (op->type, ==, "requantize-scale");
  g_assert_cmpuint (tensor_named (g, "q/multiplier")->shape[0], ==, 3);
  op = op_named (g, "q");
  g_assert_cmpstr (op->type, ==, "requantize");
  g_assert_cmpuint (op->n_operands, ==, 4);
  g_assert_cmpint (tensor_named (g, "y")->dtype, ==, ELK_DTYPE_U8);
  g_assert_cmpuint (tensor_named (g, "y")->bytes, ==, 6);
  g_assert_cmpint (tensor_named (g, "a")->dtype, ==, ELK_DTYPE_U8);
  g_assert_cmpint (tensor_named (g, "a")->origin, ==,
                   ELK_TENSOR_ORIGIN_ACTIVATION);
}

/* ConvInteger with a per-channel weight zero point that is not 0 and no
 * input zero point: only the weight is shifted; the convolution is named
 * after the node and writes int32. */
static void
test_conv_integer (void)
{
  static const QCase c
      = { "ConvInteger",
          13,
          { "x:UINT8:1x2x5x5", "w:UINT8:4x2x3x3:5", "", "wzp:UINT8:4:1" },
          { "y" },
          "group=1" };
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = load_case (&c, "conv-integer", &error);
  const ElkOp *op;

  g_assert_no_error (error);
  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 2);
  g_assert_cmpstr (op_named (g, "q#b-shift")->type, ==, "sub");
  op = op_named (g, "q");
  g_assert_cmpint (op->kind, ==, ELK_OP_CONV);
  g_assert_cmpfloat (op->flops, ==, 2.0 * 4 * 3 * 3 * 2 * 3 * 3);
  g_assert_cmpint (tensor_named (g, "y")->dtype, ==, ELK_DTYPE_I32);
  g_assert_cmpint (elk_graph_find_tensor (g, "q/a-shifted"), <, 0);
}

/* DynamicQuantizeLinear: max and min over every element, scale, zero
 * point, quantization. */
static void
test_dynamic_quantize (void)
{
  static const QCase c = {
    "DynamicQuantizeLinear", 13, { "x:FLOAT:3x4" }, { "y", "s", "z" }, NULL
  };
  static const char *const ops[][2]
      = { { "q#max", "max" },
          { "q#min", "min" },
          { "q#scale", "dynamic-quant-scale" },
          { "q#zero-point", "dynamic-quant-zero-point" },
          { "q", "quantize-linear" } };
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = load_case (&c, "dynamic", &error);

  g_assert_no_error (error);
  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, G_N_ELEMENTS (ops));
  for (guint i = 0; i < G_N_ELEMENTS (ops); i++)
    {
      g_assert_cmpstr (elk_graph_get_op (g, i)->name, ==, ops[i][0]);
      g_assert_cmpstr (elk_graph_get_op (g, i)->type, ==, ops[i][1]);
    }
  g_assert_cmpint (op_named (g, "q#max")->kind, ==, ELK_OP_REDUCE);
  g_assert_cmpint (tensor_named (g, "y")->dtype, ==, ELK_DTYPE_U8);
  g_assert_cmpint (tensor_named (g, "s")->dtype, ==, ELK_DTYPE_F32);
  g_assert_cmpuint (tensor_named (g, "s")->n_dims, ==, 0);
  g_assert_cmpint (tensor_named (g, "z")->dtype, ==, ELK_DTYPE_U8);
}

/* QuantizeLinear per axis (opset 13): the scale and zero point index the
 * channel axis; without a zero point the output is uint8. */
static void
test_quantize_axis (void)
{
  static const QCase with_zp
      = { "QuantizeLinear",
          13,
          { "x:FLOAT:2x3x4", "s:FLOAT:3:0.5", "z:INT8:3:1" },
          { "y" },
          "axis=1" };
  static const QCase no_zp = {
    "QuantizeLinear", 10, { "x:FLOAT:2x3", "s:FLOAT:-:0.5" }, { "y" }, NULL
  };
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = load_case (&with_zp, "quantize-axis", &error);
  g_autoptr (ElkGraph) g2 = NULL;
  const ElkOp *op;

  g_assert_no_error (error);
  op = op_named (g, "q");
  g_assert_cmpstr (op->type, ==, "quantize-linear");
  /* x[a b c], s[b], z[b]. */
  g_assert_cmpint (op->access[2].dims[0][0], ==, op->access[1].dims[1][0]);
  g_assert_cmpint (op->access[3].dims[0][0], ==, op->access[1].dims[1][0]);
  g_assert_cmpint (tensor_named (g, "y")->dtype, ==, ELK_DTYPE_I8);
  g_assert_cmpfloat (op->flops, ==, 3.0 * 24);
  g2 = load_case (&no_zp, "quantize-no-zp", &error);
  g_assert_no_error (error);
  g_assert_cmpuint (op_named (g2, "q")->n_operands, ==, 3);
  g_assert_cmpint (tensor_named (g2, "y")->dtype, ==, ELK_DTYPE_U8);
}

/* An int8 convolution between a quantization and a dequantization, as
 * an exported quantized CNN layer is (per-channel weight scales,
 * symmetric weights, an int32 bias), compiles with elk and runs on every
 * chip. */
static void
test_runs_on_every_chip (void)
{
  static const QCase layer[] = {
    { "QuantizeLinear",
      13,
      { "x:FLOAT:1x16x32x32", "xs:FLOAT:-:0.05", "xzp:UINT8:-:128" },
      { "xq" },
      NULL },
    { "QLinearConv",
      13,
      { "xq", "xs", "xzp", "w:INT8:32x16x3x3:3", "ws:FLOAT:32:0.01",
        "wzp:INT8:32:0", "ys:FLOAT:-:0.1", "yzp:UINT8:-:100",
        "bias:INT32:32:7" },
      { "yq" },
      NULL },
    { "DequantizeLinear", 13, { "yq", "ys", "yzp" }, { "y" }, NULL },
  };
  g_autofree char *path = write_model (layer, G_N_ELEMENTS (layer), "layer");
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = NULL;
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();
  OnnxOptions options;

  elk__onnx_options_init (&options);
  g = elk__onnx_load (path, &options, &error);
  g_assert_no_error (error);
  /* quantize, product (weights not shifted), multiplier, requantize,
   * dequantize; the input is shifted by its zero point 128. */
  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 6);
  g_assert_cmpstr (op_named (g, "q1#a-shift")->type, ==, "sub");
  g_assert_cmpfloat (op_named (g, "q1#product")->flops, ==,
                     2.0 * 32 * 30 * 30 * 16 * 3 * 3 + 32 * 30 * 30);
  elk_test_run_on_every_chip (registry, g);
}

/* The plan cost model prices an integer product at the chip's int8 rate
 * (ElkCostCoeffs.int8_macs_per_cycle): MatMulInteger of a [32, 64] uint8
 * activation by a [64, 12] int8 weight on one core is 6 x 4 x 1 = 24 AMP
 * blocks of 6 x 16 x 16 (the larger of m and n plays m), each 24 cycles at
 * the default 64 MACs per cycle (the FP16 rate), 12 at 128 and 48 at 32;
 * the rest of the formula does not change. */
static void
test_integer_mac_rate (void)
{
  static const QCase c = {
    "MatMulInteger", 13, { "a:UINT8:32x64", "b:INT8:64x12:1" }, { "y" }, NULL
  };
  static const double rates[] = { 64, 128, 32 };
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = load_case (&c, "mac-rate", &error);
  g_autoptr (ElkChipSpec) spec = elk_chip_spec_new_ipu_pod4 ();
  double base = 0;
  const ElkOp *op;

  g_assert_no_error (error);
  op = op_named (g, "q");
  g_assert_cmpfloat (spec->cost.int8_macs_per_cycle, ==, 64);
  for (guint i = 0; i < G_N_ELEMENTS (rates); i++)
    {
      ElkPlan plan = { 0 };
      double inner = 24 * 64 / rates[i];

      spec->cost.int8_macs_per_cycle = rates[i];
      plan.n_dims = (guint8) op->n_dims;
      plan.n_operands = (guint8) op->n_operands;
      for (guint d = 0; d < op->n_dims; d++)
        {
          plan.spatial[d] = 1;
          for (guint v = 0; v < op->n_operands; v++)
            plan.temporal[d][v] = 1;
        }
      g_assert_true (elk_plan_evaluate (g, op->id, spec, &plan, &error));
      g_assert_no_error (error);
      if (i == 0)
        base = plan.compute_s * spec->clock_hz - 24 * 24;
      g_assert_cmpfloat_with_epsilon (plan.compute_s * spec->clock_hz,
                                      base + 24 * inner, 1e-6);
    }
  /* A rate of 0 would divide by zero: the spec is refused. */
  spec->cost.int8_macs_per_cycle = 0;
  g_assert_false (elk_chip_spec_validate (spec, &error));
  g_assert_nonnull (strstr (error->message,
                            "int8 MACs per cycle must be positive (it is 0)"));
}

/* The compute time of the MatMulInteger of test_integer_mac_rate on @chip
 * (one core, whatever else the chip's defaults are) whose
 * int8-macs-per-cycle is @rate, in cycles of the chip's clock, plus the
 * rest of the latency for a chip that reports no breakdown (noc-sim): the
 * one operator's load and execute follow each other, so the rest is the
 * same at every rate and differences are those of the compute time. */
static double
integer_compute_cycles (ElkRegistry *registry,
                        ElkGraph *g,
                        const char *chip_name,
                        double rate)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) chip
      = elk_test_make (registry, ELK_TYPE_CHIP, chip_name, "chips", 1, "cores",
                       1, "hbm-channels", 1, "int8-macs-per-cycle", rate, NULL);
  g_autoptr (ElkMetrics) metrics
      = elk_test_schedule_and_run (registry, g, ELK_CHIP (chip), "basic",
                                   "reservation", &error);
  double clock_ghz = 0, s;

  g_assert_no_error (error);
  g_object_get (chip, "clock-ghz", &clock_ghz, NULL);
  if (metrics->breakdown == NULL)
    s = metrics->latency_s;
  else
    s = elk_breakdown_get (metrics->breakdown,
                           elk_op_get_breakdown_group (op_named (g, "q")),
                           ELK_TIME_COMPUTE);
  g_test_message ("%s at %g MACs/cycle: %.1f cycles", chip_name, rate,
                  s * clock_ghz * 1e9);
  return s * clock_ghz * 1e9;
}

/* The integer rate is the common chip property int8-macs-per-cycle, and
 * the chips time an integer product with it: on one core the MatMulInteger
 * above runs its 24 AMP blocks at 24 x 64 / rate cycles each, the rest of
 * its compute time unchanged, on the analytic chip and noc-sim (through the
 * plan's compute time) and on the ipu-pod emulator (its own kernel timing,
 * which scales the AMP block time the same way).  The range refusing 0 is
 * tests/core/test-chip-props's.
 */
static void
test_integer_mac_rate_chips (void)
{
  static const QCase c = {
    "MatMulInteger", 13, { "a:UINT8:32x64", "b:INT8:64x12:1" }, { "y" }, NULL
  };
  static const char *const chips[] = { "analytic", "noc-sim", "ipu-pod" };
  static const double rates[] = { 128, 32, 16 };
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = load_case (&c, "mac-rate-chips", &error);
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();

  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (chips); i++)
    {
      double base = integer_compute_cycles (registry, g, chips[i], 64);

      /* The blocks at the default rate, and something besides them. */
      g_assert_cmpfloat (base, >, 24 * 24);
      for (guint r = 0; r < G_N_ELEMENTS (rates); r++)
        {
          double got = integer_compute_cycles (registry, g, chips[i], rates[r]);

          g_assert_cmpfloat_with_epsilon (got - base,
                                          24 * 24 * (64 / rates[r] - 1),
                                          1e-6 * base);
        }
    }
}

/* A binary operator with a scalar constant is a unary operator of the
 * other input whose immediates are the constant and its position: how
 * DynamicQuantizeLinear's expanded form computes 0 - min / scale and
 * Min (x, 0), run in functional mode by tests/ipu-pod. */
static void
test_scalar_immediates (void)
{
  static const struct
  {
    QCase c;
    const char *immediates;
  } cases[] = {
    { { "Sub", 13, { "zero:FLOAT:-:0", "x:FLOAT:2x3" }, { "y" }, NULL },
      "0,0" },
    { { "Div", 13, { "x:FLOAT:2x3", "c:FLOAT:-:2.5" }, { "y" }, NULL },
      "2.5,1" },
    { { "Min", 13, { "x:FLOAT:4", "c:FLOAT:1:0" }, { "y" }, NULL }, "0,1" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("scalar-%u", i);
      g_autoptr (GError) error = NULL;
      g_autoptr (ElkGraph) g = load_case (&cases[i].c, name, &error);

      g_assert_no_error (error);
      g_assert_cmpint (op_named (g, "q")->kind, ==, ELK_OP_UNARY);
      g_assert_cmpstr (elk_graph_get_attribute (g, "immediates:q"), ==,
                       cases[i].immediates);
    }
}

/* ---- Refusals ---- */

static void
test_refused (void)
{
  static const struct
  {
    QCase c;
    int code;
    const char *mentions;
  } cases[] = {
    /* One case to a row. */
    /* clang-format off */
    { { "QuantizeLinear", 13, { "x:FLOAT:2", "s:FLOAT:-:1", "z:INT16:-:0" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_UNSUPPORTED, "zero point 'z' has type INT16; elk quantizes to uint8 and int8" },
    { { "QuantizeLinear", 13, { "x:BOOL:2", "s:FLOAT:-:1" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "input 'x' has type BOOL; QuantizeLinear takes float or int32" },
    { { "QuantizeLinear", 13, { "x:FLOAT:2", "s:INT32:-:1" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "scale 's' has type INT32; it must be float" },
    { { "QuantizeLinear", 11, { "x:FLOAT:2x3", "s:FLOAT:3:1" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "per-axis quantization needs opset 13 or later (the model has 11)" },
    { { "QuantizeLinear", 13, { "x:FLOAT:2x3", "s:FLOAT:5:1" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "scale 's' has shape [5]; it must be one element (per tensor) or [3] (per channel along axis 1 of 'x')" },
    { { "QuantizeLinear", 13, { "x:FLOAT:2x3", "s:FLOAT:3:1", "z:UINT8:-:0" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "zero point 'z' has 1 elements, the scale 's' 3" },
    { { "QuantizeLinear", 13, { "x:FLOAT:2x3", "s:FLOAT:3:1" }, { "y" }, "axis=2" },
      ELK_GRAPH_ERROR_INVALID, "axis" },
    { { "QuantizeLinear", 13, { "x:FLOAT:2", "s:FLOAT:-:1" }, { "y" }, "saturate=0" },
      ELK_GRAPH_ERROR_UNSUPPORTED, "attribute 'saturate' (ONNX opset 19 and later) is not supported" },
    { { "DequantizeLinear", 13, { "x:FLOAT:2", "s:FLOAT:-:1" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_UNSUPPORTED, "input 'x' has type FLOAT; elk dequantizes uint8, int8 and int32" },
    { { "DequantizeLinear", 13, { "x:UINT8:2", "s:FLOAT:-:1", "z:INT8:-:0" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "zero point 'z' has type INT8, the input 'x' UINT8; they must be the same" },
    { { "DequantizeLinear", 13, { "x:INT32:2", "s:FLOAT:-:1", "z:INT32:-:4" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "an int32 input needs a zero point of 0 ('z' is not a constant 0)" },
    { { "DequantizeLinear", 13, { "x:UINT8:2", "s:UINT8:-:1" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "scale 's' has type UINT8; it must be float" },
    { { "DynamicQuantizeLinear", 13, { "x:INT32:2" }, { "y", "s", "z" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "input 'x' has type INT32; DynamicQuantizeLinear takes float" },
    { { "DynamicQuantizeLinear", 13, { "x:FLOAT:1x1x1x1x1x1x1x2" }, { "y", "s", "z" }, NULL },
      ELK_GRAPH_ERROR_UNSUPPORTED, "the input's rank leaves no loop dimension for the reductions" },
    { { "DynamicQuantizeLinear", 13, { "x:FLOAT:2" }, { "y", "", "z" }, NULL },
      ELK_GRAPH_ERROR_UNSUPPORTED, "the scale and zero point outputs are needed by the quantization itself" },
    { { "MatMulInteger", 13, { "a:FLOAT:2x3", "b:INT8:3x2:1" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_UNSUPPORTED, "input 'a' has type FLOAT; elk multiplies uint8 and int8" },
    { { "MatMulInteger", 13, { "a:UINT8:2x3", "b:INT8:3x2:1", "azp:INT8:-:1" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "zero point 'azp' has type INT8, the input 'a' UINT8; they must be the same" },
    { { "MatMulInteger", 13, { "a:UINT8:2x3", "b:INT8:3x2:1", "azp:UINT8:3:1" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "zero point 'azp' has shape [3]; it must be one element (per tensor) or [2] (per channel along axis 0 of 'a')" },
    { { "MatMulInteger", 13, { "a:UINT8:2x3" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "has 1 inputs, expected 2 to 4" },
    { { "MatMulInteger", 13, { "a:UINT8:2x3", "b:UINT8:4x2:1" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "inner extents 3 and 4" },
    { { "ConvInteger", 13, { "x:UINT8:1x2x4x4", "w:UINT8:3x2x2x2:1", "xzp:UINT8:2:1" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "zero point 'xzp' has shape [2]; it must be one element (per tensor)" },
    { { "QLinearConv", 13, { "x:UINT8:1x2x4x4", "xs:FLOAT:-:1", "xzp:UINT8:-:0", "w:UINT8:3x2x2x2:1", "ws:FLOAT:-:1", "wzp:UINT8:-:0", "ys:FLOAT:-:1", "yzp:UINT8:-:0", "bias:FLOAT:3:0" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "bias 'bias' has type FLOAT; it must be int32" },
    { { "QLinearMatMul", 13, { "a:UINT8:2x3", "as:FLOAT:2:1", "azp:UINT8:-:0", "b:UINT8:3x2:1", "bs:FLOAT:-:1", "bzp:UINT8:-:0", "ys:FLOAT:-:1", "yzp:UINT8:-:0" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "scale 'as' has shape [2]; it must be one element (per tensor)" },
    { { "QLinearMatMul", 13, { "a:UINT8:2x3", "as:FLOAT:-:1", "azp:UINT8:-:0", "b:UINT8:3x2:1", "bs:FLOAT:-:1", "bzp:UINT8:-:0", "ys:INT32:-:1", "yzp:UINT8:-:0" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "scale 'ys' has type INT32; it must be float" },
    { { "QLinearMatMul", 13, { "a:UINT8:2x3", "as:FLOAT:-:1", "azp:UINT8:-:0", "b:UINT8:3x2:1", "bs:FLOAT:-:1", "bzp:UINT8:-:0", "ys:FLOAT:-:1", "yzp:INT32:-:0" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_UNSUPPORTED, "output zero point 'yzp' has type INT32; elk quantizes to uint8 and int8" },
    { { "QLinearMatMul", 13, { "a:UINT8:2x3", "as:FLOAT:-:1", "azp:UINT8:-:0", "b:UINT8:3x2:1", "bs:FLOAT:-:1", "bzp:UINT8:-:0", "ys:FLOAT:-:1", "yzp:UINT8:2:0" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "zero point 'yzp' has shape [2]; it must be one element (per tensor)" },
    { { "QLinearMatMul", 13, { "a:UINT8:2x3", "as:FLOAT:-:1" }, { "y" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "has 2 inputs, expected 8 to 8" },
    { { "MatMulInteger", 13, { "a:UINT8:2x3", "b:UINT8:3x2:1", "azp:UINT8:-:1" }, { "q/a-shifted" }, NULL },
      ELK_GRAPH_ERROR_INVALID, "the model has a value named 'q/a-shifted', the name elk gives the a-shifted it computes for this node" },
    /* clang-format on */
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("refused-%u", i);
      g_autoptr (GError) error = NULL;
      g_autoptr (ElkGraph) g = load_case (&cases[i].c, name, &error);

      g_test_message ("case %u (%s): %s", i, cases[i].c.op,
                      error != NULL ? error->message : "(imported)");
      g_assert_null (g);
      g_assert_error (error, ELK_GRAPH_ERROR, cases[i].code);
      g_assert_nonnull (strstr (error->message, "node 'q' (op "));
      g_assert_nonnull (strstr (error->message, cases[i].mentions));
    }
}

int
main (int argc, char *argv[])
{
  tmpdir = elk_test_init_with_tmpdir (&argc, &argv, "elk-onnx-quant-XXXXXX");
  g_test_add_func ("/onnx/quant/qlinear-matmul", test_qlinear_matmul);
  g_test_add_func ("/onnx/quant/conv-integer", test_conv_integer);
  g_test_add_func ("/onnx/quant/dynamic-quantize", test_dynamic_quantize);
  g_test_add_func ("/onnx/quant/quantize-axis", test_quantize_axis);
  g_test_add_func ("/onnx/quant/refused", test_refused);
  g_test_add_func ("/onnx/quant/runs-on-every-chip", test_runs_on_every_chip);
  g_test_add_func ("/onnx/quant/integer-mac-rate", test_integer_mac_rate);
  g_test_add_func ("/onnx/quant/integer-mac-rate-chips",
                   test_integer_mac_rate_chips);
  g_test_add_func ("/onnx/quant/scalar-immediates", test_scalar_immediates);
  return elk_test_run_and_remove (tmpdir);
}
