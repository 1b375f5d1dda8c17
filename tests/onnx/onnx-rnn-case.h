/* onnx-rnn-case.h: random LSTM, GRU and RNN test cases in the layout of
 * the ONNX node tests (model.onnx, test_data_set_0/input_N.pb and
 * output_N.pb), with outputs from a plain reference implementation of the
 * ONNX operator definitions, independent of the frontend's expansion.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct
{
  const char *op;        /* "LSTM", "GRU" or "RNN" */
  const char *direction; /* NULL: the attribute is left out (forward) */
  int layout;            /* 0 or 1; -1: the attribute is left out */
  int lbr;               /* GRU's linear_before_reset; -1: left out */
  gint64 S, B, I, H;     /* sequence, batch, input and hidden sizes */
  gboolean bias, h0, c0, peephole;
  gboolean no_y;           /* output Y left out (written as "") */
  const char *activations; /* comma-separated; NULL: left out */
  const char *alphas;      /* activation_alpha, comma-separated; NULL: none */
  const char *betas;       /* activation_beta, likewise */
  /* Only for the cases the frontend must refuse: */
  double clip;      /* the clip attribute when > 0 */
  int input_forget; /* the attribute when >= 0 */
  /* sequence_lens: 0 none; 1 a graph input (full lengths in the data); 2
   * an initializer of full lengths; 3 an initializer whose entry 0 is one
   * step short. */
  int seq_lens;
  gint64 opset; /* 0: 14 */
} OnnxRnnCase;

void onnx_rnn_case_write (const OnnxRnnCase *c, const char *dir, guint32 seed);

/* Cases that cover what the libonnx-testdata node tests do not. */
extern const OnnxRnnCase onnx_rnn_variants[];
extern const guint onnx_rnn_n_variants;

G_END_DECLS
