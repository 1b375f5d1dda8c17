/* test-onnx-recurrent.c: the onnx frontend's LSTM, GRU and RNN
 * (frontends/onnx/elk-onnx-recurrent.c), on models written here
 * (onnx-rnn-case.c): what a layer unrolls into, with FLOPs and parameters
 * counted independently, and every refusal a user can meet.
 *
 * The numbers the unrolled layers compute are checked in functional mode
 * by tests/ipu-pod/test-ipu-pod-onnx.c, on the same kind of cases.
 */
#include "config.h"

#include <string.h>
#include <glib/gstdio.h>

#include <elk/elk.h>

#include "elk-onnx-loader.h"
#include "elk-test-util.h"
#include "onnx-rnn-case.h"
#include "onnx.pb-c.h"

static char *tmpdir;

/* One case to a row. */
/* clang-format off */
/* A forward LSTM with biases, no initial state. */
static const OnnxRnnCase lstm_case = { .op = "LSTM", .layout = -1,
  .lbr = -1, .S = 3, .B = 2, .I = 4, .H = 5, .bias = TRUE,
  .input_forget = -1 };
/* A GRU whose sequence_lens is a graph input (known at run time). */
static const OnnxRnnCase gru_run_time_lens = { .op = "GRU", .layout = -1,
  .lbr = -1, .S = 3, .B = 2, .I = 2, .H = 2, .input_forget = -1,
  .seq_lens = 1 };
static const OnnxRnnCase small_rnn = { .op = "RNN", .layout = -1,
  .lbr = -1, .S = 2, .B = 1, .I = 2, .H = 2, .input_forget = -1 };
/* A bidirectional LSTM of a useful size. */
static const OnnxRnnCase big_lstm = { .op = "LSTM",
  .direction = "bidirectional", .layout = -1, .lbr = -1, .S = 16, .B = 4,
  .I = 64, .H = 128, .bias = TRUE, .h0 = TRUE, .c0 = TRUE,
  .input_forget = -1 };
/* clang-format on */

/* Writes @c as case @name and loads it. */
static ElkGraph *
load_case (const OnnxRnnCase *c,
           const char *name,
           gboolean full_sequences,
           GError **error)
{
  g_autofree char *dir = g_build_filename (tmpdir, name, NULL);
  g_autofree char *model = g_build_filename (dir, "model.onnx", NULL);
  OnnxOptions options;

  onnx_rnn_case_write (c, dir, 7);
  elk__onnx_options_init (&options);
  options.sequence_lens_full = full_sequences;
  return elk__onnx_load (model, &options, error);
}

static double
matmul_flops (const ElkGraph *g, guint *n_matmul)
{
  double f = 0;
  *n_matmul = 0;
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    {
      const ElkOp *op = elk_graph_get_op (g, i);
      if (op->kind == ELK_OP_MATMUL)
        {
          f += op->flops;
          (*n_matmul)++;
        }
    }
  return f;
}

/* A forward LSTM with biases and no initial state: per direction one
 * projection MatMul and two bias Adds; the first step has no recurrence
 * (sigmoid over i, o, f; tanh; i c~; tanh; o h) and every later step a
 * Gemm and f c' + i c~ as well. */
static void
test_lstm_structure (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = load_case (&lstm_case, "lstm", FALSE, &error);
  double S = 3, B = 2, I = 4, H = 5;
  guint n_matmul;

  g_assert_no_error (error);
  g_assert_true (elk_graph_validate (g, NULL));
  g_assert_cmpuint (elk_graph_get_n_ops (g), ==, 3 + 5 + 2 * 8);
  /* 2 S B I 4H for the projection, then per later step 2 B H 4H plus
   * B 4H for the Gemm's C (the step's projection). */
  g_assert_cmpfloat_with_epsilon (matmul_flops (g, &n_matmul),
                                  2 * S * B * I * 4 * H
                                      + (S - 1)
                                            * (2 * B * H * 4 * H + B * 4 * H),
                                  1e-6);
  g_assert_cmpuint (n_matmul, ==, 1 + 2);
  /* W (1 x 20 x 4), R (1 x 20 x 5) and B (1 x 40). */
  g_assert_cmpstr (elk_graph_get_attribute (g, "params"), ==, "220");
}

/* Both directions, every optional input and both layouts import
 * (onnx_rnn_variants, which tests/ipu-pod also runs), and the output
 * shapes the case declares (which the loader compares with its own)
 * agree. */
static void
test_variants_import (void)
{
  for (guint i = 0; i < onnx_rnn_n_variants; i++)
    {
      g_autofree char *name = g_strdup_printf ("variant-%u", i);
      g_autoptr (GError) error = NULL;
      g_autoptr (ElkGraph) g
          = load_case (&onnx_rnn_variants[i], name, FALSE, &error);
      g_assert_no_error (error);
      g_assert_true (elk_graph_validate (g, NULL));
    }
}

/* The refusals, each naming the node and the reason. */
static void
test_refused (void)
{
  static const struct
  {
    OnnxRnnCase c;
    int code;
    const char *mentions;
  } cases[] = {
    /* One case to a row. */
    /* clang-format off */
    { { .op = "LSTM", .layout = -1, .lbr = -1, .S = 2, .B = 1, .I = 2,
        .H = 2, .clip = 3.0, .input_forget = -1 },
      ELK_GRAPH_ERROR_UNSUPPORTED, "its clip attribute" },
    { { .op = "LSTM", .layout = -1, .lbr = -1, .S = 2, .B = 1, .I = 2,
        .H = 2, .input_forget = 1 },
      ELK_GRAPH_ERROR_UNSUPPORTED, "input_forget" },
    { { .op = "RNN", .layout = -1, .lbr = -1, .S = 2, .B = 1, .I = 2,
        .H = 2, .activations = "ScaledTanh", .input_forget = -1 },
      ELK_GRAPH_ERROR_UNSUPPORTED, "activation 'ScaledTanh' is not supported" },
    { { .op = "GRU", .layout = -1, .lbr = -1, .S = 2, .B = 1, .I = 2,
        .H = 2, .activations = "Sigmoid", .input_forget = -1 },
      ELK_GRAPH_ERROR_UNSUPPORTED, "lists 1 functions; 2 are expected" },
    { { .op = "RNN", .direction = "sideways", .layout = -1, .lbr = -1,
        .S = 2, .B = 1, .I = 2, .H = 2, .input_forget = -1 },
      ELK_GRAPH_ERROR_UNSUPPORTED, "direction 'sideways'" },
    { { .op = "GRU", .layout = -1, .lbr = -1, .S = 2, .B = 1, .I = 2,
        .H = 2, .input_forget = -1, .opset = 6 },
      ELK_GRAPH_ERROR_UNSUPPORTED, "before opset 7" },
    { { .op = "LSTM", .layout = -1, .lbr = -1, .S = 3, .B = 2, .I = 2,
        .H = 2, .input_forget = -1, .seq_lens = 1 },
      ELK_GRAPH_ERROR_UNSUPPORTED, "full-sequences=true" },
    { { .op = "LSTM", .layout = -1, .lbr = -1, .S = 3, .B = 2, .I = 2,
        .H = 2, .input_forget = -1, .seq_lens = 3 },
      ELK_GRAPH_ERROR_UNSUPPORTED,
      "batch entry 0 2 steps of 3; shorter sequences need masking" },
    { { .op = "RNN", .layout = 2, .lbr = -1, .S = 2, .B = 1, .I = 2,
        .H = 2, .input_forget = -1 },
      ELK_GRAPH_ERROR_INVALID, "layout 2 is not 0 or 1" },
    /* clang-format on */
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("refused-%u", i);
      g_autoptr (GError) error = NULL;
      g_autoptr (ElkGraph) g = load_case (&cases[i].c, name, FALSE, &error);

      g_assert_null (g);
      g_assert_error (error, ELK_GRAPH_ERROR, cases[i].code);
      g_test_message ("%s", error->message);
      g_assert_nonnull (strstr (error->message, "node 'rnn'"));
      g_assert_nonnull (strstr (error->message, cases[i].mentions));
    }
}

/* A run-time sequence_lens is accepted once full-sequences says what it
 * holds. */
static void
test_full_sequences (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = load_case (&gru_run_time_lens, "full", TRUE, &error);

  g_assert_no_error (error);
  g_assert_nonnull (g);
}

/* elk's generated view operators cannot be written in a file: a model
 * using ElkSlice is refused like any unknown operator. */
static void
test_internal_ops_refused (void)
{
  g_autofree char *dir = g_build_filename (tmpdir, "internal", NULL);
  g_autofree char *model = g_build_filename (dir, "model.onnx", NULL);
  g_autofree char *bytes = NULL;
  gsize len;
  Onnx__ModelProto *m;
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = NULL;
  guint8 *buf;

  onnx_rnn_case_write (&small_rnn, dir, 7);
  g_assert_true (g_file_get_contents (model, &bytes, &len, NULL));
  m = onnx__model_proto__unpack (NULL, len, (const guint8 *) bytes);
  g_assert_nonnull (m);
  /* The RNN node becomes an ElkSlice of X with a plausible attribute set
   * (the node keeps its attributes; ElkSlice reads none of RNN's). */
  g_free (m->graph->node[0]->op_type);
  m->graph->node[0]->op_type = g_strdup ("ElkSlice");
  len = onnx__model_proto__get_packed_size (m);
  buf = g_malloc (len);
  onnx__model_proto__pack (m, buf);
  g_assert_true (
      g_file_set_contents (model, (const char *) buf, (gssize) len, NULL));
  g_free (buf);
  onnx__model_proto__free_unpacked (m, NULL);

  {
    OnnxOptions options;
    elk__onnx_options_init (&options);
    g = elk__onnx_load (model, &options, &error);
  }
  g_assert_null (g);
  g_assert_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "(op ElkSlice"));
}

/* A layer of a useful size (bidirectional LSTM, 16 steps, batch 4, 64
 * inputs, 128 hidden) compiles with elk and runs on every chip: the
 * unrolled graph is an ordinary one to the scheduler and the backends. */
static void
test_runs_on_every_chip (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkGraph) g = load_case (&big_lstm, "chips", FALSE, &error);
  g_autoptr (ElkRegistry) registry = elk_test_registry_new_default ();

  g_assert_no_error (error);
  elk_test_run_on_every_chip (registry, g);
}

int
main (int argc, char *argv[])
{
  tmpdir
      = elk_test_init_with_tmpdir (&argc, &argv, "elk-onnx-recurrent-XXXXXX");
  g_test_add_func ("/onnx/recurrent/lstm-structure", test_lstm_structure);
  g_test_add_func ("/onnx/recurrent/variants-import", test_variants_import);
  g_test_add_func ("/onnx/recurrent/refused", test_refused);
  g_test_add_func ("/onnx/recurrent/full-sequences", test_full_sequences);
  g_test_add_func ("/onnx/recurrent/internal-ops-refused",
                   test_internal_ops_refused);
  g_test_add_func ("/onnx/recurrent/runs-on-every-chip",
                   test_runs_on_every_chip);
  return elk_test_run_and_remove (tmpdir);
}
