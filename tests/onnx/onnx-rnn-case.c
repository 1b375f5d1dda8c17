/* onnx-rnn-case.c: see onnx-rnn-case.h.
 *
 * The reference follows the ONNX operator definitions (LSTM-14, GRU-14,
 * RNN-14) step by step in double precision, with the textbook formulas
 * rather than the frontend's rearrangements: all four (three) gates from
 * the full weight matrices, the GRU update as (1 - z) h~ + z H, and a
 * zero initial state stored as zeros.
 */
#include <math.h>
#include <string.h>

#include "onnx-rnn-case.h"
#include "onnx-test-proto.h"

/* ---- The reference ---- */

static double
activate (const char *f, double alpha, double beta, double x)
{
  if (!g_ascii_strcasecmp (f, "Sigmoid"))
    return 1.0 / (1.0 + exp (-x));
  if (!g_ascii_strcasecmp (f, "Tanh"))
    return tanh (x);
  if (!g_ascii_strcasecmp (f, "Relu"))
    return x > 0 ? x : 0;
  if (!g_ascii_strcasecmp (f, "HardSigmoid"))
    return fmax (0.0, fmin (1.0, alpha * x + beta));
  if (!g_ascii_strcasecmp (f, "LeakyRelu"))
    return x < 0 ? alpha * x : x;
  if (!g_ascii_strcasecmp (f, "ThresholdedRelu"))
    return x > alpha ? x : 0;
  if (!g_ascii_strcasecmp (f, "Elu"))
    return x < 0 ? alpha * (exp (x) - 1) : x;
  if (!g_ascii_strcasecmp (f, "Softsign"))
    return x / (1 + fabs (x));
  if (!g_ascii_strcasecmp (f, "Softplus"))
    return log1p (exp (x));
  /* A function the frontend must refuse (the case is never run): its
   * outputs are not numbers. */
  return NAN;
}

typedef struct
{
  char *name;
  double alpha, beta;
} Act;

/* The activation list as the frontend must read it: defaults per kind,
 * alpha and beta taken in order by the functions that have them. */
static void
activations (const OnnxRnnCase *c, guint D, guint per_dir, Act *out)
{
  static const char *const defaults[][3] = { { "Sigmoid", "Tanh", "Tanh" },
                                             { "Sigmoid", "Tanh", NULL },
                                             { "Tanh", NULL, NULL } };
  guint kind = !strcmp (c->op, "LSTM") ? 0 : !strcmp (c->op, "GRU") ? 1 : 2;
  g_auto (GStrv) names
      = c->activations != NULL ? g_strsplit (c->activations, ",", -1) : NULL;
  g_auto (GStrv) al = c->alphas ? g_strsplit (c->alphas, ",", -1) : NULL;
  g_auto (GStrv) be = c->betas ? g_strsplit (c->betas, ",", -1) : NULL;
  guint ia = 0, ib = 0;

  for (guint i = 0, listed = names ? g_strv_length (names) : 0; i < D * per_dir;
       i++)
    {
      const char *f = names == NULL ? defaults[kind][i % per_dir]
                      : i < listed  ? names[i]
                                    : "(missing)";
      guint np = !g_ascii_strcasecmp (f, "HardSigmoid") ? 2
                 : !g_ascii_strcasecmp (f, "LeakyRelu")
                         || !g_ascii_strcasecmp (f, "ThresholdedRelu")
                         || !g_ascii_strcasecmp (f, "Elu")
                     ? 1
                     : 0;
      out[i].name = g_strdup (f);
      out[i].alpha = !g_ascii_strcasecmp (f, "HardSigmoid") ? 0.2
                     : !g_ascii_strcasecmp (f, "LeakyRelu") ? 0.01
                                                            : 1.0;
      out[i].beta = 0.5;
      if (np >= 1 && al != NULL && al[ia] != NULL)
        out[i].alpha = g_ascii_strtod (al[ia++], NULL);
      if (np >= 2 && be != NULL && be[ib] != NULL)
        out[i].beta = g_ascii_strtod (be[ib++], NULL);
    }
}

/* Runs the case: x [S][B][I] (time-major whatever the layout), weights as
 * in the file, h0 and c0 [D][B][H]; y [S][D][B][H], yh and yc [D][B][H]. */
static void
reference (const OnnxRnnCase *c,
           guint D,
           const double *x,
           const double *w,
           const double *r,
           const double *bias,
           const double *h0,
           const double *c0,
           const double *p,
           double *y,
           double *yh,
           double *yc)
{
  guint G = !strcmp (c->op, "LSTM") ? 4 : !strcmp (c->op, "GRU") ? 3 : 1;
  guint per_dir = G == 4 ? 3 : G == 3 ? 2 : 1;
  gint64 S = c->S, B = c->B, I = c->I, H = c->H;
  Act act[6];
  g_autofree double *h = g_new0 (double, B *H);
  g_autofree double *cell = g_new0 (double, B *H);
  g_autofree double *gate = g_new0 (double, G *B *H);
  g_autofree double *hn = g_new0 (double, B *H);

  activations (c, D, per_dir, act);
  for (guint d = 0; d < D; d++)
    {
      gboolean reverse
          = d == 1 || (c->direction && !strcmp (c->direction, "reverse"));
      const double *W = w + d * G * H * I, *R = r + d * G * H * H;
      const double *Wb = bias ? bias + d * 2 * G * H : NULL;
      const double *Rb = bias ? Wb + G * H : NULL;
      const Act *f = &act[d * per_dir], *g = f + 1, *hf = f + 2;

      for (gint64 e = 0; e < B * H; e++)
        {
          h[e] = h0 ? h0[d * B * H + e] : 0;
          cell[e] = c0 ? c0[d * B * H + e] : 0;
        }
      for (gint64 k = 0; k < S; k++)
        {
          gint64 t = reverse ? S - 1 - k : k;
          /* gate[q][b][j] = x W_q^T + Wb_q, plus h R_q^T + Rb_q except
           * for GRU's h gate, whose recurrent part depends on r. */
          for (guint q = 0; q < G; q++)
            for (gint64 b = 0; b < B; b++)
              for (gint64 j = 0; j < H; j++)
                {
                  double s = Wb ? Wb[q * H + j] : 0;
                  for (gint64 i = 0; i < I; i++)
                    s += x[(t * B + b) * I + i] * W[(q * H + j) * I + i];
                  if (G != 3 || q < 2)
                    {
                      s += Rb ? Rb[q * H + j] : 0;
                      for (gint64 m = 0; m < H; m++)
                        s += h[b * H + m] * R[(q * H + j) * H + m];
                    }
                  gate[(q * B + b) * H + j] = s;
                }
          for (gint64 b = 0; b < B; b++)
            for (gint64 j = 0; j < H; j++)
              {
                gint64 e = b * H + j;
                if (G == 4)
                  {
                    const double *P = p ? p + d * 3 * H : NULL;
                    double gi = gate[(0 * B + b) * H + j];
                    double go = gate[(1 * B + b) * H + j];
                    double gf = gate[(2 * B + b) * H + j];
                    double gc = gate[(3 * B + b) * H + j];
                    double i_ = activate (f->name, f->alpha, f->beta,
                                          gi + (P ? P[j] * cell[e] : 0));
                    double f_
                        = activate (f->name, f->alpha, f->beta,
                                    gf + (P ? P[2 * H + j] * cell[e] : 0));
                    double cn
                        = f_ * cell[e]
                          + i_ * activate (g->name, g->alpha, g->beta, gc);
                    double o = activate (f->name, f->alpha, f->beta,
                                         go + (P ? P[H + j] * cn : 0));
                    cell[e] = cn;
                    hn[e] = o * activate (hf->name, hf->alpha, hf->beta, cn);
                  }
                else if (G == 3)
                  {
                    /* r of every column of the row is needed for the
                     * product (r h) R_h^T. */
                    double z = activate (f->name, f->alpha, f->beta,
                                         gate[(0 * B + b) * H + j]);
                    double rj = activate (f->name, f->alpha, f->beta,
                                          gate[(1 * B + b) * H + j]);
                    double s = gate[(2 * B + b) * H + j];
                    double rb = Rb ? Rb[2 * H + j] : 0, hr = 0;
                    for (gint64 m = 0; m < H; m++)
                      {
                        double rm = activate (f->name, f->alpha, f->beta,
                                              gate[(1 * B + b) * H + m]);
                        hr += (c->lbr > 0 ? 1.0 : rm) * h[b * H + m]
                              * R[(2 * H + j) * H + m];
                      }
                    /* linear_before_reset: r (h R_h^T + Rb_h); otherwise
                     * (r h) R_h^T + Rb_h. */
                    s += c->lbr > 0 ? rj * (hr + rb) : hr + rb;
                    s = activate (g->name, g->alpha, g->beta, s);
                    hn[e] = (1 - z) * s + z * h[e];
                  }
                else
                  hn[e]
                      = activate (f->name, f->alpha, f->beta, gate[b * H + j]);
              }
          memcpy (h, hn, B * H * sizeof (double));
          for (gint64 e = 0; e < B * H; e++)
            y[((t * D + d) * B) * H + e] = h[e];
        }
      for (gint64 e = 0; e < B * H; e++)
        {
          yh[d * B * H + e] = h[e];
          yc[d * B * H + e] = cell[e];
        }
    }
  for (guint i = 0; i < D * per_dir; i++)
    g_free (act[i].name);
}

/* What the libonnx-testdata node tests leave out: both directions and
 * reverse, layout 1 with initial states, peepholes with an initial cell,
 * GRU with linear_before_reset, activations with alpha and beta, an
 * omitted Y, a constant sequence_lens. */
/* One case to a row reads better than one field to a line. */
/* clang-format off */
const OnnxRnnCase onnx_rnn_variants[] = {
  { .op = "LSTM", .direction = "bidirectional", .layout = 0, .lbr = -1,
    .S = 3, .B = 2, .I = 3, .H = 4, .bias = TRUE, .h0 = TRUE, .c0 = TRUE,
    .peephole = TRUE, .input_forget = -1, .seq_lens = 2 },
  { .op = "LSTM", .direction = "reverse", .layout = 1, .lbr = -1,
    .S = 3, .B = 2, .I = 2, .H = 3, .bias = TRUE, .h0 = TRUE, .c0 = TRUE,
    .input_forget = -1 },
  { .op = "LSTM", .layout = -1, .lbr = -1, .S = 2, .B = 3, .I = 2, .H = 2,
    .no_y = TRUE, .activations = "HardSigmoid,Elu,Softsign",
    .alphas = "0.3,0.7", .betas = "0.4", .input_forget = -1 },
  { .op = "GRU", .direction = "bidirectional", .layout = 1, .lbr = 1,
    .S = 3, .B = 2, .I = 3, .H = 2, .bias = TRUE, .h0 = TRUE,
    .input_forget = -1 },
  { .op = "GRU", .direction = "reverse", .layout = 0, .lbr = 0,
    .S = 3, .B = 2, .I = 2, .H = 3, .bias = TRUE, .h0 = TRUE,
    .input_forget = -1 },
  { .op = "GRU", .layout = -1, .lbr = 1, .S = 2, .B = 2, .I = 2, .H = 2,
    .bias = TRUE, .activations = "Sigmoid,Softplus", .input_forget = -1 },
  { .op = "RNN", .direction = "bidirectional", .layout = -1, .lbr = -1,
    .S = 4, .B = 2, .I = 2, .H = 3, .bias = TRUE, .h0 = TRUE,
    .activations = "Relu,LeakyRelu", .alphas = "0.2", .input_forget = -1 },
};
/* clang-format on */
const guint onnx_rnn_n_variants = G_N_ELEMENTS (onnx_rnn_variants);

/* ---- The case ---- */

static double *
random_values (GRand *rand, gsize n)
{
  double *v = g_new (double, MAX (n, 1));
  for (gsize i = 0; i < n; i++)
    v[i] = g_rand_double_range (rand, -1.0, 1.0);
  return v;
}

/* [A][B][C] -> [B][A][C]: between layout 1's batch-major tensors and the
 * reference's direction- or time-major ones. */
static double *
swap01 (const double *src, gint64 A, gint64 B, gint64 C)
{
  double *dst = g_new (double, MAX (A * B * C, 1));
  for (gint64 a = 0; a < A; a++)
    for (gint64 b = 0; b < B; b++)
      memcpy (dst + (b * A + a) * C, src + (a * B + b) * C,
              (gsize) C * sizeof (double));
  return dst;
}

typedef struct
{
  OnnxTestArena arena;
  GPtrArray *inputs, *outputs, *inits; /* ValueInfo, ValueInfo, Tensor */
  GPtrArray *in_data, *out_data;       /* Tensor, as the .pb files */
  char *node_in[8];
  char *node_out[3];
} Model;

static void
add_input (Model *m,
           guint slot,
           const char *name,
           int dtype,
           guint rank,
           const gint64 *dims,
           const double *data)
{
  g_ptr_array_add (m->inputs,
                   onnx_test_value_info (&m->arena, name, dtype, rank, dims));
  g_ptr_array_add (m->in_data,
                   onnx_test_tensor (&m->arena, name, dtype, rank, dims, data));
  m->node_in[slot] = (char *) name;
}

static void
add_output (Model *m,
            guint slot,
            const char *name,
            guint rank,
            const gint64 *dims,
            const double *data)
{
  g_ptr_array_add (m->outputs,
                   onnx_test_value_info (&m->arena, name,
                                         ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
                                         rank, dims));
  g_ptr_array_add (m->out_data,
                   onnx_test_tensor (&m->arena, name,
                                     ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, rank,
                                     dims, data));
  m->node_out[slot] = (char *) name;
}

static void
add_attributes (Model *m, const OnnxRnnCase *c, Onnx__NodeProto *node)
{
  Onnx__AttributeProto **attrs
      = onnx_test_own (&m->arena, g_new0 (Onnx__AttributeProto *, 12));
  guint n_attrs = 0;
  Onnx__AttributeProto *a;

  a = onnx_test_attribute (&m->arena, "hidden_size",
                           ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = TRUE;
  a->i = c->H;
  attrs[n_attrs++] = a;
  if (c->direction != NULL)
    {
      a = onnx_test_attribute (&m->arena, "direction",
                               ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
      a->has_s = TRUE;
      a->s.data = (guint8 *) c->direction;
      a->s.len = strlen (c->direction);
      attrs[n_attrs++] = a;
    }
  {
    const char *ints[] = { "layout", "linear_before_reset", "input_forget" };
    int vals[] = { c->layout, c->lbr, c->input_forget };
    for (guint i = 0; i < G_N_ELEMENTS (ints); i++)
      if (vals[i] >= 0)
        {
          a = onnx_test_attribute (&m->arena, ints[i],
                                   ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
          a->has_i = TRUE;
          a->i = vals[i];
          attrs[n_attrs++] = a;
        }
  }
  if (c->clip > 0)
    {
      a = onnx_test_attribute (&m->arena, "clip",
                               ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
      a->has_f = TRUE;
      a->f = (float) c->clip;
      attrs[n_attrs++] = a;
    }
  if (c->activations != NULL)
    {
      gchar **names
          = onnx_test_own (&m->arena, g_strsplit (c->activations, ",", -1));
      guint n = g_strv_length (names);
      a = onnx_test_attribute (&m->arena, "activations",
                               ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
      a->n_strings = n;
      a->strings = onnx_test_own (&m->arena, g_new0 (ProtobufCBinaryData, n));
      for (guint i = 0; i < n; i++)
        {
          onnx_test_own (&m->arena, names[i]);
          a->strings[i].data = (guint8 *) names[i];
          a->strings[i].len = strlen (names[i]);
        }
      attrs[n_attrs++] = a;
    }
  for (guint k = 0; k < 2; k++)
    {
      const char *list = k == 0 ? c->alphas : c->betas;
      g_auto (GStrv) parts = list ? g_strsplit (list, ",", -1) : NULL;
      if (parts == NULL)
        continue;
      a = onnx_test_attribute (&m->arena,
                               k == 0 ? "activation_alpha" : "activation_beta",
                               ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
      a->n_floats = g_strv_length (parts);
      a->floats = onnx_test_own (&m->arena, g_new (float, a->n_floats));
      for (gsize i = 0; i < a->n_floats; i++)
        a->floats[i] = (float) g_ascii_strtod (parts[i], NULL);
      attrs[n_attrs++] = a;
    }
  node->n_attribute = n_attrs;
  node->attribute = attrs;
}

void
onnx_rnn_case_write (const OnnxRnnCase *c, const char *dir, guint32 seed)
{
  g_autoptr (GRand) rand = g_rand_new_with_seed (seed);
  gboolean lstm = !strcmp (c->op, "LSTM"), gru = !strcmp (c->op, "GRU");
  guint G = lstm ? 4 : gru ? 3 : 1;
  guint D = c->direction && !strcmp (c->direction, "bidirectional") ? 2 : 1;
  gboolean bw = c->layout == 1;
  gint64 S = c->S, B = c->B, I = c->I, H = c->H;
  g_autofree double *x = random_values (rand, S * B * I);
  g_autofree double *w = random_values (rand, D * G * H * I);
  g_autofree double *r = random_values (rand, D * G * H * H);
  g_autofree double *bias = random_values (rand, D * 2 * G * H);
  g_autofree double *h0 = random_values (rand, D * B * H);
  g_autofree double *c0 = random_values (rand, D * B * H);
  g_autofree double *p = random_values (rand, D * 3 * H);
  g_autofree double *lens = g_new (double, B);
  g_autofree double *y = g_new0 (double, S *D *B *H);
  g_autofree double *yh = g_new0 (double, D *B *H);
  g_autofree double *yc = g_new0 (double, D *B *H);
  g_autofree double *x_tm = NULL, *h0_dm = NULL, *c0_dm = NULL;
  g_autofree char *data_dir = g_build_filename (dir, "test_data_set_0", NULL);
  g_autofree char *model_path = g_build_filename (dir, "model.onnx", NULL);
  Model m = { 0 };
  Onnx__NodeProto node;
  Onnx__GraphProto graph;
  Onnx__ModelProto model;
  Onnx__OperatorSetIdProto opset;
  Onnx__OperatorSetIdProto *opsets[] = { &opset };
  const int F = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;

  m.arena.owned = g_ptr_array_new_with_free_func (g_free);
  m.inputs = g_ptr_array_new ();
  m.outputs = g_ptr_array_new ();
  m.inits = g_ptr_array_new ();
  m.in_data = g_ptr_array_new ();
  m.out_data = g_ptr_array_new ();
  for (guint i = 0; i < 8; i++)
    m.node_in[i] = "";
  for (guint i = 0; i < 3; i++)
    m.node_out[i] = "";
  for (gint64 b = 0; b < B; b++)
    lens[b] = (double) (S - (c->seq_lens == 3 && b == 0 ? 1 : 0));

  /* The reference runs time-major, direction-major. */
  x_tm = bw ? swap01 (x, B, S, I) : g_memdup2 (x, S * B * I * sizeof (double));
  h0_dm
      = bw ? swap01 (h0, B, D, H) : g_memdup2 (h0, D * B * H * sizeof (double));
  c0_dm
      = bw ? swap01 (c0, B, D, H) : g_memdup2 (c0, D * B * H * sizeof (double));
  reference (c, D, x_tm, w, r, c->bias ? bias : NULL, c->h0 ? h0_dm : NULL,
             c->c0 ? c0_dm : NULL, c->peephole ? p : NULL, y, yh, yc);

  add_input (&m, 0, "X", F, 3,
             bw ? (gint64[]){ B, S, I } : (gint64[]){ S, B, I }, x);
  add_input (&m, 1, "W", F, 3, (gint64[]){ D, G * H, I }, w);
  add_input (&m, 2, "R", F, 3, (gint64[]){ D, G * H, H }, r);
  if (c->bias)
    add_input (&m, 3, "B", F, 2, (gint64[]){ D, 2 * G * H }, bias);
  if (c->seq_lens == 1)
    add_input (&m, 4, "sequence_lens", ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1,
               (gint64[]){ B }, lens);
  else if (c->seq_lens >= 2)
    {
      g_ptr_array_add (m.inits,
                       onnx_test_tensor (&m.arena, "sequence_lens",
                                         ONNX__TENSOR_PROTO__DATA_TYPE__INT32,
                                         1, (gint64[]){ B }, lens));
      m.node_in[4] = "sequence_lens";
    }
  if (c->h0)
    add_input (&m, 5, "initial_h", F, 3,
               bw ? (gint64[]){ B, D, H } : (gint64[]){ D, B, H }, h0);
  if (c->c0)
    add_input (&m, 6, "initial_c", F, 3,
               bw ? (gint64[]){ B, D, H } : (gint64[]){ D, B, H }, c0);
  if (c->peephole)
    add_input (&m, 7, "P", F, 2, (gint64[]){ D, 3 * H }, p);

  if (!c->no_y)
    {
      double *yf = bw ? onnx_test_own (&m.arena, swap01 (y, S * D, B, H)) : y;
      /* [S][D][B][H] -> [B][S][D][H] for layout 1: (S D) and B swapped. */
      add_output (&m, 0, "Y", 4,
                  bw ? (gint64[]){ B, S, D, H } : (gint64[]){ S, D, B, H }, yf);
    }
  add_output (&m, 1, "Y_h", 3,
              bw ? (gint64[]){ B, D, H } : (gint64[]){ D, B, H },
              bw ? onnx_test_own (&m.arena, swap01 (yh, D, B, H)) : yh);
  if (lstm)
    add_output (&m, 2, "Y_c", 3,
                bw ? (gint64[]){ B, D, H } : (gint64[]){ D, B, H },
                bw ? onnx_test_own (&m.arena, swap01 (yc, D, B, H)) : yc);

  onnx__node_proto__init (&node);
  node.op_type = (char *) c->op;
  node.name = "rnn";
  node.n_input = lstm ? 8 : 6;
  while (node.n_input > 3 && *m.node_in[node.n_input - 1] == '\0')
    node.n_input--;
  node.input = m.node_in;
  node.n_output = lstm ? 3 : 2;
  node.output = m.node_out;
  add_attributes (&m, c, &node);

  onnx__graph_proto__init (&graph);
  graph.name = "rnn-case";
  graph.n_node = 1;
  graph.node = (Onnx__NodeProto *[]){ &node };
  graph.n_input = m.inputs->len;
  graph.input = (Onnx__ValueInfoProto **) m.inputs->pdata;
  graph.n_output = m.outputs->len;
  graph.output = (Onnx__ValueInfoProto **) m.outputs->pdata;
  graph.n_initializer = m.inits->len;
  graph.initializer = (Onnx__TensorProto **) m.inits->pdata;
  onnx__operator_set_id_proto__init (&opset);
  opset.domain = "";
  opset.has_version = TRUE;
  opset.version = c->opset > 0 ? c->opset : 14;
  onnx__model_proto__init (&model);
  model.has_ir_version = TRUE;
  model.ir_version = 8;
  model.n_opset_import = 1;
  model.opset_import = opsets;
  model.graph = &graph;

  g_assert_cmpint (g_mkdir_with_parents (data_dir, 0755), ==, 0);
  onnx_test_write_message (&model.base, model_path);
  for (guint i = 0; i < m.in_data->len; i++)
    {
      g_autofree char *f = g_strdup_printf ("%s/input_%u.pb", data_dir, i);
      onnx_test_write_message (m.in_data->pdata[i], f);
    }
  for (guint i = 0; i < m.out_data->len; i++)
    {
      g_autofree char *f = g_strdup_printf ("%s/output_%u.pb", data_dir, i);
      onnx_test_write_message (m.out_data->pdata[i], f);
    }
  g_ptr_array_unref (m.inputs);
  g_ptr_array_unref (m.outputs);
  g_ptr_array_unref (m.inits);
  g_ptr_array_unref (m.in_data);
  g_ptr_array_unref (m.out_data);
  g_ptr_array_unref (m.arena.owned);
}
