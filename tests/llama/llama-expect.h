/* llama-expect.h: FLOPs, bytes and parameter counts of a transformer,
 * computed from its published hyper-parameters in closed form, written
 * independently of the graph builder so that tests can check it.
 */
#pragma once

#include <string.h>
#include <glib.h>

#include "elk-llama-private.h"

/* One row of models.md, typed in here from the table (not from the
 * plugin's preset table). */
typedef struct
{
  const char *preset;
  guint L;
  guint64 d, h, kv, hd, F, V, ctx;
  gboolean gated, layer_norm, biases, tied, post_norms;
  guint64 n_pos;       /* learned position rows */
  guint64 window;      /* sliding window, 0 = none */
  guint period;        /* windowed layers: l % period == 0 */
  double published;    /* params in models.md */
} Row;

typedef struct
{
  double mm_flops, flops;
  guint64 weight_bytes, kv_bytes;
  guint64 params;
} Expected;

static guint64
norm_params (const Row *r)
{
  return r->layer_norm ? 2 * r->d : r->d;
}

static double
norm_flops (const Row *r, double rows)
{
  /* RMSNorm: square, sum, scale, gain per element, rsqrt per row.
   * LayerNorm adds mean, centre and bias. */
  return (r->layer_norm ? 7.0 : 4.0) * rows * r->d + rows;
}

static void
expect (const Row *r,
        LlamaPhase phase,
        guint64 b,
        guint64 S,
        guint elt,
        Expected *e)
{
  gboolean decode = phase == LLAMA_PHASE_DECODE;
  guint64 t = decode ? 1 : S;
  guint64 M = b * t;
  guint64 R = phase == LLAMA_PHASE_PREFILL ? b : M;
  guint64 qkv = (r->h + 2 * r->kv) * r->hd;
  guint64 w_mm = r->d * qkv + r->h * r->hd * r->d
                 + (r->gated ? 3 : 2) * r->d * r->F;
  guint64 w_bias = r->biases ? qkv + r->d + r->F + r->d : 0;
  guint n_norms = r->post_norms ? 4 : 2;
  guint64 w_layer = w_mm + w_bias + n_norms * norm_params (r);
  guint64 weights = 0;

  memset (e, 0, sizeof (*e));
  for (guint l = 0; l < r->L; l++)
    {
      guint64 Sl = S;
      if (decode && r->window && l % r->period == 0)
        Sl = MIN (S, r->window);
      e->mm_flops += 2.0 * M * w_mm + 4.0 * b * r->h * t * Sl * r->hd;
      e->flops += n_norms * norm_flops (r, M);
      e->flops += 4.0 * b * r->h * t * Sl;                /* softmax */
      e->flops += (r->gated ? 2.0 : 1.0) * M * r->F;      /* activation */
      e->flops += 2.0 * M * r->d;                         /* residuals */
      if (r->biases)
        e->flops += (double) M * w_bias;
      if (decode)
        e->kv_bytes += b * Sl * 2 * r->kv * r->hd * elt;
    }
  e->mm_flops += 2.0 * R * r->d * r->V;
  e->flops += e->mm_flops + norm_flops (r, R);
  if (r->n_pos)
    e->flops += (double) M * r->d;                        /* position add */

  /* Streamed weights: every layer, the final norm, the head's d x V table
   * (the embedding when tied) and the gathered embedding rows. */
  weights = r->L * w_layer + norm_params (r) + r->d * r->V + M * r->d
            + (r->n_pos ? M * r->d : 0);
  e->weight_bytes = weights * elt;
  e->params = r->L * w_layer + norm_params (r) + r->V * r->d
              + r->n_pos * r->d + (r->tied ? 0 : r->d * r->V);
}

