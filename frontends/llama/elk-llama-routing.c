/* elk-llama-routing.c: which experts the tokens of a decode step use.
 *
 * A mixture-of-experts layer routes each token to k of its E experts; which
 * ones is known only once the router has run on real data.  elk's graphs
 * are built for one sampled routing, drawn from a routing model chosen in
 * the experiment: uniform, skewed (Zipf), or per-layer frequencies from a
 * file.  Each model is a weight per expert and layer; a token draws k
 * distinct experts without replacement in proportion to those weights, so
 * uniform weights give every k-subset the same probability.  The draws use
 * GRand (a Mersenne twister, the same on every platform) seeded from
 * routing-seed, layer after layer and token after token, so a seed gives
 * the same routing wherever it runs.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "elk-llama-private.h"

struct _LlamaRoutingTable
{
  guint n_layers;
  guint64 n_experts;
  guint64 k;
  double *weights; /* n_layers x n_experts, each MoE row sums to 1 */
  double *cdf;     /* their running sums */
  double *scratch; /* n_experts, for sampling */
};

void
elk__llama_routing_free (LlamaRoutingTable *table)
{
  if (table == NULL)
    return;
  g_free (table->weights);
  g_free (table->cdf);
  g_free (table->scratch);
  g_free (table);
}

const double *
elk__llama_routing_weights (const LlamaRoutingTable *table, guint layer)
{
  return table->weights + (gsize) layer * table->n_experts;
}

double
elk__llama_routing_expected_distinct_uniform (guint64 n,
                                              guint64 k,
                                              guint64 batch)
{
  /* Expert e is missed by one token with probability C(n-1,k) / C(n,k)
   * = (n - k) / n; tokens are independent, so it is missed by all of them
   * with that to the power batch, and linearity of expectation sums the
   * complement over the n experts. */
  if (n == 0)
    return 0.0;
  return (double) n
         * (1.0 - pow ((double) (n - k) / (double) n, (double) batch));
}

/* The exact draw of the next expert in proportion to the weights of the
 * experts not yet picked (O(E)); used when rejection keeps failing. */
static guint64
draw_exact (const LlamaRoutingTable *t,
            const double *w,
            GRand *rand,
            const guint64 *picked,
            guint64 n_picked)
{
  double total = 0.0, r;
  guint64 last = t->n_experts;

  memcpy (t->scratch, w, t->n_experts * sizeof (double));
  for (guint64 j = 0; j < n_picked; j++)
    t->scratch[picked[j]] = 0.0;
  for (guint64 e = 0; e < t->n_experts; e++)
    total += t->scratch[e];
  r = g_rand_double (rand) * total;
  for (guint64 e = 0; e < t->n_experts; e++)
    {
      if (t->scratch[e] <= 0.0)
        continue;
      last = e; /* the last candidate absorbs rounding */
      if (r < t->scratch[e])
        break;
      r -= t->scratch[e];
    }
  return last;
}

guint64
elk__llama_routing_sample (const LlamaRoutingTable *table,
                           guint layer,
                           guint64 batch,
                           GRand *rand,
                           guint64 *tokens)
{
  const double *w = elk__llama_routing_weights (table, layer);
  const double *cdf = table->cdf + (gsize) layer * table->n_experts;
  guint64 E = table->n_experts, distinct = 0;
  g_autofree guint64 *picked = g_new (guint64, table->k);

  memset (tokens, 0, E * sizeof (guint64));
  for (guint64 b = 0; b < batch; b++)
    {
      for (guint64 j = 0; j < table->k; j++)
        {
          guint64 pick = E;
          /* Drawing from all the weights and rejecting experts already
           * picked gives the next pick in proportion to the weights of
           * the others, the same law as the exact draw, in O(log E) per
           * attempt; a routing that keeps hitting its own picks (a weight
           * file with a few heavy experts) falls back to the exact draw. */
          for (guint attempt = 0; attempt < 64 && pick == E; attempt++)
            {
              double r = g_rand_double (rand);
              guint64 lo = 0, hi = E - 1;
              gboolean seen = FALSE;
              while (lo < hi)
                {
                  guint64 mid = lo + (hi - lo) / 2;
                  if (r < cdf[mid])
                    hi = mid;
                  else
                    lo = mid + 1;
                }
              /* Rounding can land on a zero-weight expert past the last
               * real one; step back to a weighted one. */
              while (lo > 0 && w[lo] <= 0.0)
                lo--;
              for (guint64 i = 0; i < j; i++)
                seen = seen || picked[i] == lo;
              if (!seen && w[lo] > 0.0)
                pick = lo;
            }
          if (pick == E)
            pick = draw_exact (table, w, rand, picked, j);
          /* Table construction guarantees k experts of non-zero weight. */
          g_assert (pick < E);
          picked[j] = pick;
          if (tokens[pick]++ == 0)
            distinct++;
        }
    }
  return distinct;
}

/* ------------------------------------------------------------------ */
/* Frequencies from a file                                              */
/* ------------------------------------------------------------------ */

static gboolean file_error (GError **error,
                            const char *path,
                            guint line,
                            const char *format,
                            ...) G_GNUC_PRINTF (4, 5);

static gboolean
file_error (
    GError **error, const char *path, guint line, const char *format, ...)
{
  va_list args;
  g_autofree char *message = NULL;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  if (line > 0)
    g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID, "%s:%u: %s", path,
                 line, message);
  else
    g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID, "%s: %s", path,
                 message);
  return FALSE;
}

/* Parses one data line "<layer>|* f0 f1 ... f(E-1)" into @row. */
static gboolean
parse_row (const LlamaModel *m,
           const char *path,
           guint line_no,
           char **fields,
           guint n_fields,
           double *row,
           GError **error)
{
  guint64 nonzero = 0;

  if (n_fields - 1 != m->n_experts)
    return file_error (error, path, line_no,
                       "%u frequencies, expected %" G_GUINT64_FORMAT
                       " (one per expert)",
                       n_fields - 1, m->n_experts);
  for (guint i = 1; i < n_fields; i++)
    {
      char *end = NULL;
      double v;
      errno = 0;
      v = g_ascii_strtod (fields[i], &end);
      if (end == fields[i] || *end != '\0' || errno != 0 || !isfinite (v)
          || v < 0.0)
        return file_error (error, path, line_no,
                           "frequency of expert %u ('%s') is not a "
                           "non-negative finite number",
                           i - 1, fields[i]);
      row[i - 1] = v;
      if (v > 0.0)
        nonzero++;
    }
  if (nonzero < m->n_experts_used)
    return file_error (error, path, line_no,
                       "only %" G_GUINT64_FORMAT " experts have a non-zero "
                       "frequency; top-%" G_GUINT64_FORMAT " routing needs "
                       "at least %" G_GUINT64_FORMAT,
                       nonzero, m->n_experts_used, m->n_experts_used);
  return TRUE;
}

static gboolean
read_file (LlamaRoutingTable *t,
           const LlamaModel *m,
           const char *path,
           GError **error)
{
  g_autofree char *text = NULL;
  g_autofree guint *line_of = g_new0 (guint, m->n_layers);
  g_autofree double *fallback = NULL;
  g_auto (GStrv) lines = NULL;
  g_autoptr (GError) local_error = NULL;
  guint default_line = 0;

  if (!g_file_get_contents (path, &text, NULL, &local_error))
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_IO,
                   "%s: cannot read the routing file: %s", path,
                   local_error->message);
      return FALSE;
    }
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      guint line_no = i + 1;
      char *hash = strchr (lines[i], '#');
      g_auto (GStrv) fields = NULL;
      guint n_fields;
      guint64 layer;
      char *end = NULL;
      double *row;

      if (hash != NULL)
        *hash = '\0';
      g_strdelimit (lines[i], "\t\r,", ' ');
      fields = g_strsplit_set (g_strstrip (lines[i]), " ", -1);
      /* Collapse the empty fields that runs of spaces leave. */
      n_fields = 0;
      for (guint f = 0; fields[f] != NULL; f++)
        if (*fields[f] != '\0')
          fields[n_fields++] = fields[f];
        else
          g_free (fields[f]);
      fields[n_fields] = NULL;
      if (n_fields == 0)
        continue;

      if (g_str_equal (fields[0], "*"))
        {
          if (default_line != 0)
            return file_error (error, path, line_no,
                               "a second '*' line (the first is line %u)",
                               default_line);
          fallback = g_new0 (double, m->n_experts);
          if (!parse_row (m, path, line_no, fields, n_fields, fallback, error))
            return FALSE;
          default_line = line_no;
          continue;
        }
      layer = g_ascii_strtoull (fields[0], &end, 10);
      if (end == fields[0] || *end != '\0' || !g_ascii_isdigit (*fields[0]))
        return file_error (error, path, line_no,
                           "expected a layer number or '*' first, got '%s'",
                           fields[0]);
      if (layer >= m->n_layers)
        return file_error (error, path, line_no,
                           "layer %" G_GUINT64_FORMAT " does not exist (the "
                           "model has %u layers, 0..%u)",
                           layer, m->n_layers, m->n_layers - 1);
      if (!elk__llama_model_is_moe_layer (m, (guint) layer))
        return file_error (error, path, line_no,
                           "layer %" G_GUINT64_FORMAT " has a dense FFN, "
                           "not experts",
                           layer);
      if (line_of[layer] != 0)
        return file_error (error, path, line_no,
                           "layer %" G_GUINT64_FORMAT " is listed twice "
                           "(first on line %u)",
                           layer, line_of[layer]);
      row = t->weights + layer * m->n_experts;
      if (!parse_row (m, path, line_no, fields, n_fields, row, error))
        return FALSE;
      line_of[layer] = line_no;
    }
  for (guint l = 0; l < m->n_layers; l++)
    {
      if (!elk__llama_model_is_moe_layer (m, l) || line_of[l] != 0)
        continue;
      if (fallback == NULL)
        return file_error (error, path, 0,
                           "no frequencies for MoE layer %u (give one line "
                           "per MoE layer, or a '*' line for the layers not "
                           "listed)",
                           l);
      memcpy (t->weights + (gsize) l * m->n_experts, fallback,
              m->n_experts * sizeof (double));
    }
  return TRUE;
}

/**
 * elk__llama_routing_new:
 *
 * Returns: (transfer full) (nullable): the routing weights of every MoE
 *   layer of @model under the routing model of @options.
 */
LlamaRoutingTable *
elk__llama_routing_new (const LlamaModel *model,
                        const LlamaBuildOptions *options,
                        GError **error)
{
  g_autoptr (LlamaRoutingTable) t = NULL;
  guint64 E = model->n_experts;

  if (options->routing_file != NULL && *options->routing_file != '\0'
      && options->routing != LLAMA_ROUTING_FILE)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "routing-file is set but routing is not 'file'; set "
                   "routing=file to use it");
      return NULL;
    }
  if (options->routing == LLAMA_ROUTING_FILE
      && (options->routing_file == NULL || *options->routing_file == '\0'))
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "routing=file needs routing-file (per-layer expert "
                   "frequencies)");
      return NULL;
    }
  if (!isfinite (options->routing_skew) || options->routing_skew < 0.0)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "routing-skew must be a finite number >= 0, got %g",
                   options->routing_skew);
      return NULL;
    }

  t = g_new0 (LlamaRoutingTable, 1);
  t->n_layers = model->n_layers;
  t->n_experts = E;
  t->k = model->n_experts_used;
  t->weights = g_new0 (double, (gsize) model->n_layers *E);
  t->cdf = g_new0 (double, (gsize) model->n_layers *E);
  t->scratch = g_new0 (double, E);

  if (options->routing == LLAMA_ROUTING_FILE)
    {
      if (!read_file (t, model, options->routing_file, error))
        return NULL;
    }
  else
    {
      for (guint l = 0; l < model->n_layers; l++)
        for (guint64 e = 0; e < E; e++)
          t->weights[(gsize) l * E + e]
              = options->routing == LLAMA_ROUTING_SKEWED
                    ? pow ((double) (e + 1), -options->routing_skew)
                    : 1.0;
    }

  /* Normalise each MoE layer's row so that it is a distribution. */
  for (guint l = 0; l < model->n_layers; l++)
    {
      double *row = t->weights + (gsize) l * E, sum = 0.0;
      guint64 nonzero = 0;
      if (!elk__llama_model_is_moe_layer (model, l))
        continue;
      for (guint64 e = 0; e < E; e++)
        {
          sum += row[e];
          nonzero += row[e] > 0.0;
        }
      if (nonzero < t->k)
        {
          /* Only a huge Zipf exponent gets here (the file reader checks
           * its rows): the weights underflow to zero. */
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                       "routing-skew=%g leaves %" G_GUINT64_FORMAT
                       " experts of layer %u with a non-zero weight; "
                       "top-%" G_GUINT64_FORMAT
                       " routing needs %" G_GUINT64_FORMAT,
                       options->routing_skew, nonzero, l, t->k, t->k);
          return NULL;
        }
      for (guint64 e = 0; e < E; e++)
        {
          row[e] /= sum;
          t->cdf[(gsize) l * E + e]
              = (e > 0 ? t->cdf[(gsize) l * E + e - 1] : 0.0) + row[e];
        }
    }
  return g_steal_pointer (&t);
}

/* ------------------------------------------------------------------ */
/* Inclusion probabilities (experts=all)                                */
/* ------------------------------------------------------------------ */

/* Adds to @p the probability of every ordered continuation of the picks
 * made so far (@prob, @picked[0..depth)) that puts each expert at position
 * @depth: the draw without replacement takes expert e with its weight over
 * the weight of the experts not yet picked. */
static void
enumerate_picks (const double *w,
                 guint64 E,
                 guint64 k,
                 guint64 depth,
                 double prob,
                 gboolean *picked,
                 double *p)
{
  double left = 0.0;

  for (guint64 e = 0; e < E; e++)
    if (!picked[e])
      left += w[e];
  for (guint64 e = 0; e < E; e++)
    {
      double q;
      if (picked[e] || w[e] <= 0.0)
        continue;
      q = prob * w[e] / left;
      p[e] += q;
      if (depth + 1 < k)
        {
          picked[e] = TRUE;
          enumerate_picks (w, E, k, depth + 1, q, picked, p);
          picked[e] = FALSE;
        }
    }
}

gboolean
elk__llama_routing_inclusion (const LlamaRoutingTable *table,
                              guint layer,
                              guint64 max_sequences,
                              double *p)
{
  const double *w = elk__llama_routing_weights (table, layer);
  guint64 E = table->n_experts, k = table->k, nonzero = 0, sequences = 1;
  gboolean equal = TRUE;
  double first = 0.0;

  memset (p, 0, E * sizeof (double));
  for (guint64 e = 0; e < E; e++)
    {
      if (w[e] <= 0.0)
        continue;
      if (nonzero == 0)
        first = w[e];
      equal = equal && w[e] == first;
      nonzero++;
    }
  /* Equal weights: every k-subset of the weighted experts alike, so each
   * is in it with probability k / n, exactly. */
  if (equal)
    {
      for (guint64 e = 0; e < E; e++)
        p[e] = w[e] > 0.0 ? (double) k / (double) nonzero : 0.0;
      return TRUE;
    }
  /* Otherwise the ordered sequences of k distinct weighted experts,
   * n (n-1) ... (n-k+1), are enumerated when there are few enough. */
  for (guint64 j = 0; j < k && sequences <= max_sequences; j++)
    sequences *= nonzero - j;
  if (sequences <= max_sequences)
    {
      g_autofree gboolean *picked = g_new0 (gboolean, E);
      enumerate_picks (w, E, k, 0, 1.0, picked, p);
      return TRUE;
    }
  /* Too many (Qwen3's 128 experts, top-8): the share of tokens that pick
   * each expert in LLAMA_ROUTING_MC_TOKENS draws of the routing's own
   * sampler, from a fixed seed, so that the same model gives the same
   * probabilities everywhere.  The standard error is at most
   * 0.5 / sqrt (LLAMA_ROUTING_MC_TOKENS) = 0.002. */
  {
    g_autoptr (GRand) rand = g_rand_new_with_seed (LLAMA_ROUTING_MC_SEED);
    g_autofree guint64 *tokens = g_new0 (guint64, E);
    elk__llama_routing_sample (table, layer, LLAMA_ROUTING_MC_TOKENS, rand,
                               tokens);
    for (guint64 e = 0; e < E; e++)
      p[e] = (double) tokens[e] / (double) LLAMA_ROUTING_MC_TOKENS;
  }
  return FALSE;
}
