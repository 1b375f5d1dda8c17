/* elk-llama-graph.c: builds the operator graph of a transformer.
 *
 * Granularity follows the Elk artifact's graphs (docs/frontend-llama.md has
 * the full list): projections are MatMuls over the flattened tokens
 * ("mk,kn->mn", m = batch x tokens), attention is two batch-matmuls over the
 * KV cache, softmax and norms are REDUCE and ELEMENTWISE/UNARY kernels,
 * residual adds are ELEMENTWISE.  Reshapes, transposes, concatenations and
 * RoPE are free views here, as the artifact drops Reshape, Broadcast and
 * Concat: a tensor such as "blk.0.q" (the query in head layout) is read by
 * the score batch-matmul but written by no operator; it is the projection's
 * output seen in another shape.
 *
 * Every weight tensor is read by exactly one operator, and every KV-cache
 * tensor too, so the graph's HBM bytes are the weight bytes plus the KV
 * bytes of one pass, and the "weight-bytes" and "kv-bytes" attributes are
 * the sums of those tensors.
 *
 * Operator splitting reproduces the artifact (elk-paper.md §5.1): a MatMul
 * whose iteration space is larger than (cores / split_factor) "MB" of FP16
 * (the product of its two largest extents, or of its four largest for
 * batch-matmuls) is halved along its largest extent, repeatedly.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "elk-llama-private.h"

/* The artifact never splits more than a few times; this only stops a
 * pathological threshold from producing millions of operators. */
#define MAX_SPLIT_DEPTH 12

typedef struct
{
  const char *name;
  const char *axes;       /* one letter per axis */
  ElkTensorOrigin origin;
  ElkDType dtype;
  guint64 bytes;          /* explicit size, 0 = from dtype */
} Operand;

typedef struct
{
  ElkGraph *graph;
  const LlamaModel *m;
  const LlamaBuildOptions *o;
  LlamaPhase phase;
  gboolean file_types;    /* weights take the GGUF tensors' types */
  ElkDType wdtype;        /* weight type otherwise */
  ElkDType adtype;        /* activations and KV cache */
  guint layers;
  guint64 b, t, S, M, R;  /* batch, tokens/seq, KV length, tokens, head rows */
  guint64 cap;            /* split threshold in elements, 0 = off */
  guint64 ext[128];       /* extents by loop letter for the current op */

  /* granularity=artifact only (see mark_hbm_inputs): */
  gboolean artifact;
  GHashTable *views;      /* view or split-piece name -> tensor it shows */
  GPtrArray *prev;        /* base names of the previous op's operands */
  guint64 spill_bytes;    /* bytes of the spilled activation copies */
  guint64 constant_bytes; /* eps, RoPE tables, masks */

  /* Mixture of experts: the routing model and the generator of the
   * sampled routing (moe_ffn); tokens per expert of the current layer. */
  LlamaRoutingTable *routing;
  GRand *rand;
  guint64 *expert_tokens;
  guint64 experts_loaded; /* distinct routed experts, summed over layers */
  guint moe_layers;
  /* experts=all: each token's chance to pick each expert (n_experts), for
   * the layer @inclusion_layer (G_MAXUINT: none yet), and the operators
   * made conditional, in all and those the sampled routing takes. */
  double *inclusion;
  guint inclusion_layer;
  gboolean inclusion_estimated; /* some layer's by Monte Carlo */
  guint64 conditional_ops, conditional_taken;
} Builder;

void
elk__llama_build_options_init (LlamaBuildOptions *options)
{
  memset (options, 0, sizeof (*options));
  options->phase = LLAMA_PHASE_DECODE;
  options->batch = 32;
  options->seq = 0;
  options->dtype = LLAMA_DTYPE_FP16;
  options->fuse_qkv = TRUE;
  options->fuse_ffn = TRUE;
  options->layers = 0;
  options->split_factor = -1;
  options->split_cores = LLAMA_DEFAULT_SPLIT_CORES;
  options->granularity = LLAMA_GRANULARITY_ELK;
  options->routing = LLAMA_ROUTING_UNIFORM;
  options->routing_skew = 1.0;
  options->routing_file = NULL;
  options->routing_seed = 0;
  options->experts = LLAMA_EXPERTS_ROUTED;
  options->mla_absorb = FALSE;
}

const char *
elk__llama_phase_to_string (LlamaPhase phase)
{
  switch (phase)
    {
    case LLAMA_PHASE_DECODE:
      return "decode";
    case LLAMA_PHASE_PREFILL:
      return "prefill";
    case LLAMA_PHASE_TRAIN_FORWARD:
      return "train-forward";
    default: return "invalid";
    }
}

/* ------------------------------------------------------------------ */
/* Operators and splitting                                              */
/* ------------------------------------------------------------------ */

static void
set_ext (Builder *B, char letter, guint64 extent)
{
  B->ext[(guchar) letter] = extent;
}

static gint
get_tensor (Builder *B, const Operand *op, GError **error)
{
  guint64 shape[ELK_MAX_DIMS];
  guint n = (guint) strlen (op->axes);
  gint id = elk_graph_find_tensor (B->graph, op->name);

  for (guint a = 0; a < n; a++)
    shape[a] = B->ext[(guchar) op->axes[a]];
  if (id >= 0)
    {
      const ElkTensor *t = elk_graph_get_tensor (B->graph, (guint) id);
      gboolean same = t->n_dims == n;
      for (guint a = 0; same && a < n; a++)
        same = t->shape[a] == shape[a];
      if (!same)
        {
          g_set_error (error, ELK_GRAPH_ERROR, ELK_GRAPH_ERROR_INVALID,
                       "llama frontend: tensor '%s' is used with two "
                       "different shapes", op->name);
          return -1;
        }
      return id;
    }
  return elk_graph_add_tensor (B->graph, op->name, op->dtype, op->origin, n,
                               shape, op->bytes, error);
}

/* The tensor a view or split piece shows, or @name itself. */
static const char *
base_name (Builder *B, const char *name)
{
  const char *base;

  while (B->views != NULL
         && (base = g_hash_table_lookup (B->views, name)) != NULL)
    name = base;
  return name;
}

/* "@base.@suffix": a free view of @base (another shape of the same bytes).
 * With granularity=artifact the view is remembered, so that reading it
 * counts as reading @base (mark_hbm_inputs). */
static char *
view_of (Builder *B, const char *base, const char *suffix)
{
  char *name = g_strdup_printf ("%s.%s", base, suffix);

  if (B->views != NULL)
    g_hash_table_replace (B->views, g_strdup (name), g_strdup (base));
  return name;
}

static gboolean
on_chip (Builder *B, const char *name)
{
  const char *base = base_name (B, name);

  for (guint i = 0; i < B->prev->len; i++)
    if (strcmp (g_ptr_array_index (B->prev, i), base) == 0)
      return TRUE;
  return FALSE;
}

/* granularity=artifact: the artifact's TExpr graphs mark an activation
 * input as on chip ("ignored") only when the operator immediately before
 * produced it or read it too; every other activation input has a preload
 * from HBM (TExpr_llama2-13-b64.json: the norm's Divide re-reading the
 * residual x, the RoPE Add re-reading q*cos, the K Slice re-reading the
 * QKV output, the FFN Multiply re-reading the up half, the residual adds).
 * Such an input is replaced here by its own tensor "<op>.in<i>.hbm" of
 * the same shape and origin KV_CACHE (runtime data held in HBM, as the KV
 * cache is): the spilled copy whose bytes the preload streams.  No
 * operator writes it; the write to HBM is not modelled, as in the
 * artifact.  The first operator of the graph (the embedding gather, which
 * the artifact drops) reads the model input and is left alone. */
static void
mark_hbm_inputs (Builder *B, const char *name, Operand *operands, guint n,
                 char **spill_names)
{
  for (guint i = 0; i + 1 < n; i++)
    {
      if (operands[i].origin != ELK_TENSOR_ORIGIN_ACTIVATION
          || B->prev->len == 0 || on_chip (B, operands[i].name))
        continue;
      spill_names[i] = g_strdup_printf ("%s.in%u.hbm", name, i);
      operands[i].name = spill_names[i];
      operands[i].origin = ELK_TENSOR_ORIGIN_KV_CACHE;
    }
}

static gboolean
emit_op (Builder *B, const char *name, const char *type, ElkOpKind kind,
         gint layer, const char *spec, const Operand *in_operands, guint n,
         GError **error)
{
  guint32 ids[ELK_MAX_OPERANDS];
  Operand operands[ELK_MAX_OPERANDS];
  char *spill_names[ELK_MAX_OPERANDS] = { NULL };
  gboolean ok = TRUE;
  gint op;

  memcpy (operands, in_operands, n * sizeof (Operand));
  if (B->artifact)
    mark_hbm_inputs (B, name, operands, n, spill_names);
  for (guint i = 0; ok && i < n; i++)
    {
      gint id = get_tensor (B, &operands[i], error);
      ok = id >= 0;
      if (!ok)
        break;
      ids[i] = (guint32) id;
      if (spill_names[i] != NULL)
        B->spill_bytes += elk_graph_get_tensor (B->graph, (guint) id)->bytes;
    }
  for (guint i = 0; i < n; i++)
    g_free (spill_names[i]);
  if (!ok)
    return FALSE;
  if (B->artifact)
    {
      /* What is in SRAM for the next operator: everything this one read
       * or wrote, named by the tensor a view or piece shows. */
      g_ptr_array_set_size (B->prev, 0);
      for (guint i = 0; i < n; i++)
        g_ptr_array_add (B->prev,
                         g_strdup (base_name (B, in_operands[i].name)));
    }
  op = elk_graph_add_op (B->graph, name, type, kind, layer, spec, ids, n,
                         NULL, error);
  if (op < 0)
    return FALSE;
  if (kind == ELK_OP_GATHER)
    elk_graph_set_op_flops (B->graph, (guint) op, 0.0);
  return TRUE;
}

/* Loop letters in the core's numbering order: output first, then inputs. */
static guint
loop_letters (const Operand *operands, guint n, char *letters)
{
  guint count = 0;
  for (guint i = 0; i < n; i++)
    {
      const char *axes = operands[(i + n - 1) % n].axes;
      for (const char *c = axes; *c; c++)
        if (memchr (letters, *c, count) == NULL)
          letters[count++] = *c;
    }
  return count;
}

static gint
compare_desc (gconstpointer a, gconstpointer b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Adds an operator, splitting it first when it is a MatMul above the
 * threshold.  @operands are the inputs in spec order, then the output. */
static gboolean
add_op (Builder *B, const char *name, const char *type, ElkOpKind kind,
        gint layer, const char *spec, const Operand *operands, guint n,
        guint depth, GError **error)
{
  char letters[ELK_MAX_DIMS * ELK_MAX_OPERANDS];
  guint64 sizes[G_N_ELEMENTS (letters)];
  guint n_loops, n_top;
  guint64 product = 1;
  char split = 0;
  guint64 extent, halves[2];

  if (kind != ELK_OP_MATMUL || B->cap == 0)
    return emit_op (B, name, type, kind, layer, spec, operands, n, error);

  n_loops = loop_letters (operands, n, letters);
  for (guint i = 0; i < n_loops; i++)
    sizes[i] = B->ext[(guchar) letters[i]];
  qsort (sizes, n_loops, sizeof (guint64), compare_desc);
  /* The artifact measures batch-matmuls by their four largest extents and
   * plain matmuls by their two largest. */
  n_top = MIN (n_loops, n_loops >= 5 ? 4u : 2u);
  for (guint i = 0; i < n_top; i++)
    product *= sizes[i];
  if (product <= B->cap)
    return emit_op (B, name, type, kind, layer, spec, operands, n, error);

  if (depth >= MAX_SPLIT_DEPTH)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "operator '%s' would be split into more than %u pieces; "
                   "the split threshold is too small",
                   name, 1u << MAX_SPLIT_DEPTH);
      return FALSE;
    }

  /* The first loop dimension with the largest extent, as the artifact's
   * list.index(max(...)). */
  for (guint i = 0; i < n_loops; i++)
    if (B->ext[(guchar) letters[i]] == sizes[0])
      {
        split = letters[i];
        break;
      }
  extent = B->ext[(guchar) split];
  if (extent < 2)
    return emit_op (B, name, type, kind, layer, spec, operands, n, error);
  /* The artifact halves with floor division and drops the odd element;
   * the first half gets it here so that FLOPs and bytes add up. */
  halves[0] = extent - extent / 2;
  halves[1] = extent / 2;

  for (guint h = 0; h < 2; h++)
    {
      Operand parts[ELK_MAX_OPERANDS];
      char *names[ELK_MAX_OPERANDS] = { NULL };
      g_autofree char *piece_name = g_strdup_printf ("%s.%u", name, h);
      gboolean ok;

      for (guint i = 0; i < n; i++)
        {
          gboolean has = strchr (operands[i].axes, split) != NULL;
          parts[i] = operands[i];
          /* Inputs indexed by the split dimension are split with it; the
           * output always is: either a slice or, when the reduction
           * dimension is split, a partial sum. */
          if (has || i == n - 1)
            {
              g_autofree char *suffix = g_strdup_printf ("%u", h);
              names[i] = view_of (B, operands[i].name, suffix);
              parts[i].name = names[i];
              if (has && operands[i].bytes != 0)
                {
                  guint64 lo = operands[i].bytes / extent * halves[0];
                  parts[i].bytes = h == 0 ? lo : operands[i].bytes - lo;
                }
            }
        }
      set_ext (B, split, halves[h]);
      ok = add_op (B, piece_name, type, kind, layer, spec, parts, n,
                   depth + 1, error);
      set_ext (B, split, extent);
      for (guint i = 0; i < n; i++)
        g_free (names[i]);
      if (!ok)
        return FALSE;
    }
  return TRUE;
}

static Operand
act (const char *name, const char *axes, ElkDType dtype)
{
  return (Operand) { name, axes, ELK_TENSOR_ORIGIN_ACTIVATION, dtype, 0 };
}

/* granularity=artifact: a constant the artifact's graphs read from HBM (a
 * norm's epsilon, a RoPE cos/sin table, the attention mask).  It is a
 * WEIGHT tensor of the activation type; each is read by one operator, as
 * each has its own id in the artifact's TExpr files. */
static Operand
constant (Builder *B, const char *name, const char *axes)
{
  guint64 n = 1;

  for (const char *c = axes; *c; c++)
    n *= B->ext[(guchar) *c];
  B->constant_bytes += n * elk_dtype_get_size (B->adtype);
  return (Operand) { name, axes, ELK_TENSOR_ORIGIN_WEIGHT, B->adtype, 0 };
}

/* ------------------------------------------------------------------ */
/* Weights                                                              */
/* ------------------------------------------------------------------ */

static gboolean
same_plain_type (guint32 a, guint32 b)
{
  ElkDType da, db;
  return elk__ggml_type_to_dtype (a, &da) && elk__ggml_type_to_dtype (b, &db)
         && da == db;
}

/* Storage of a logical weight of @n elements made of the GGUF tensors
 * @parts (NULL-terminated), or of a fraction of the fused file tensor
 * @fused (n of its elements, whole rows) when the parts are absent. */
static gboolean
weight_storage (Builder *B, guint64 n, const char *fused,
                const char *const *parts, ElkDType *dtype, guint64 *bytes,
                GError **error)
{
  const Gguf *gguf = B->m->gguf;
  guint64 found_elems = 0, found_bytes = 0;
  guint32 first_type = 0;
  gboolean mixed = FALSE, all = TRUE;

  if (!B->file_types)
    {
      *dtype = B->wdtype;
      *bytes = 0;
      return TRUE;
    }
  if (gguf == NULL || elk__gguf_get_n_tensors (gguf) == 0)
    {
      if (!B->m->has_native_dtype)
        {
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                       "%s: dtype=file, but the model has no tensors and "
                       "no storage type of its own (no general.file_type "
                       "or torch_dtype); choose fp16, bf16 or fp32",
                       B->m->source);
          return FALSE;
        }
      *dtype = B->m->native_dtype;
      *bytes = 0;
      return TRUE;
    }

  for (guint i = 0; parts[i] != NULL; i++)
    {
      const GgufTensor *t = elk__gguf_find_tensor (gguf, parts[i]);
      if (t == NULL)
        {
          all = FALSE;
          break;
        }
      if (i == 0)
        first_type = t->type;
      else if (t->type != first_type && !same_plain_type (t->type, first_type))
        mixed = TRUE;
      found_elems += t->n_elements;
      found_bytes += t->bytes;
    }
  if (all)
    {
      if (found_elems != n)
        {
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                       "%s: tensor '%s'%s has %" G_GUINT64_FORMAT
                       " elements, the hyper-parameters give "
                       "%" G_GUINT64_FORMAT,
                       elk__gguf_get_path (gguf), parts[0],
                       parts[1] != NULL ? " and its siblings" : "", found_elems,
                       n);
          return FALSE;
        }
      if (mixed || !elk__ggml_type_to_dtype (first_type, dtype))
        *dtype = ELK_DTYPE_QUANTIZED;
      *bytes = found_bytes;
      return TRUE;
    }
  if (fused != NULL)
    {
      const GgufTensor *t = elk__gguf_find_tensor (gguf, fused);
      if (t != NULL && t->n_elements >= n && n % t->dims[0] == 0)
        {
          guint64 rows = t->n_elements / t->dims[0];
          guint64 row_bytes = t->bytes / rows;
          if (!elk__ggml_type_to_dtype (t->type, dtype))
            *dtype = ELK_DTYPE_QUANTIZED;
          *bytes = row_bytes * (n / t->dims[0]);
          return TRUE;
        }
    }
  g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
               "%s: tensor '%s' is missing (needed for dtype=file)",
               elk__gguf_get_path (gguf), parts[0]);
  return FALSE;
}

/* A weight operand.  @n is its element count (the product of its axes'
 * extents, which the caller has set). */
static gboolean
weight (Builder *B, Operand *out, const char *name, const char *axes,
        const char *fused, const char *const *parts, GError **error)
{
  guint64 n = 1;
  for (const char *c = axes; *c; c++)
    n *= B->ext[(guchar) *c];
  out->name = name;
  out->axes = axes;
  out->origin = ELK_TENSOR_ORIGIN_WEIGHT;
  return weight_storage (B, n, fused, parts, &out->dtype, &out->bytes,
                         error);
}

#define PARTS(...) ((const char *const[]) { __VA_ARGS__, NULL })

/* ------------------------------------------------------------------ */
/* Building blocks                                                      */
/* ------------------------------------------------------------------ */

/* y = x W (+ b): "mk,kn->mn". */
static gboolean
linear (Builder *B, gint layer, const char *name, const char *x,
        guint64 rows, guint64 in, guint64 out_features, const char *fused,
        const char *const *weight_parts, const char *const *bias_parts,
        char **out, GError **error)
{
  g_autofree char *wname = g_strdup_printf ("%s.weight", name);
  g_autofree char *y = g_strdup_printf ("%s.out", name);
  Operand ops[3];

  set_ext (B, 'm', rows);
  set_ext (B, 'k', in);
  set_ext (B, 'n', out_features);
  ops[0] = act (x, "mk", B->adtype);
  if (!weight (B, &ops[1], wname, "kn", fused, weight_parts, error))
    return FALSE;
  ops[2] = act (y, "mn", B->adtype);
  if (!add_op (B, name, "matmul", ELK_OP_MATMUL, layer, "mk,kn->mn", ops, 3,
               0, error))
    return FALSE;

  if (bias_parts != NULL)
    {
      g_autofree char *bname = g_strdup_printf ("%s_bias", name);
      g_autofree char *bw = g_strdup_printf ("%s.bias", name);
      g_autofree char *by = g_strdup_printf ("%s_bias.out", name);
      g_autofree char *fused_bias = NULL;
      set_ext (B, 'm', rows);
      set_ext (B, 'n', out_features);
      if (fused != NULL && g_str_has_suffix (fused, ".weight"))
        fused_bias = g_strdup_printf ("%.*s.bias",
                                      (int) (strlen (fused) - 7), fused);
      ops[0] = act (y, "mn", B->adtype);
      if (!weight (B, &ops[1], bw, "n", fused_bias, bias_parts, error))
        return FALSE;
      ops[2] = act (by, "mn", B->adtype);
      if (!add_op (B, bname, "bias-add", ELK_OP_ELEMENTWISE, layer,
                   "mn,n->mn", ops, 3, 0, error))
        return FALSE;
      *out = g_steal_pointer (&by);
      return TRUE;
    }
  *out = g_steal_pointer (&y);
  return TRUE;
}

/* One step of a norm: @spec over rows "mk" and per-row statistics "m". */
static gboolean
norm_step (Builder *B, gint layer, const char *name, const char *suffix,
           const char *type, ElkOpKind kind, const char *spec,
           const Operand *inputs, guint n_inputs, gboolean stat_out,
           char **out, GError **error)
{
  g_autofree char *op_name = g_strdup_printf ("%s.%s", name, suffix);
  g_autofree char *y = g_strdup_printf ("%s.%s.out", name, suffix);
  Operand ops[ELK_MAX_OPERANDS];

  for (guint i = 0; i < n_inputs; i++)
    ops[i] = inputs[i];
  ops[n_inputs] = act (y, stat_out ? "m" : "mk", B->adtype);
  if (!add_op (B, op_name, type, kind, layer, spec, ops, n_inputs + 1, 0,
               error))
    return FALSE;
  *out = g_steal_pointer (&y);
  return TRUE;
}

/* RMSNorm is square, sum, rsqrt, scale and gain; LayerNorm is mean,
 * centre, square, sum, rsqrt, scale, gain and bias.  The artifact's graphs
 * spell norms out the same way (Multiply, Sum, Divide, Add, Sqrt, Divide,
 * Multiply); the mean's division and the epsilon are folded into rsqrt.
 * @file_name is the GGUF name of the norm's tensors. */
static gboolean norm_width (Builder *B,
                            gint layer,
                            const char *name,
                            const char *file_name,
                            const char *x,
                            guint64 rows,
                            guint64 width,
                            char **out,
                            GError **error);

static gboolean
norm (Builder *B, gint layer, const char *name, const char *file_name,
      const char *x, guint64 rows, char **out, GError **error)
{
  return norm_width (B, layer, name, file_name, x, rows, B->m->hidden, out,
                     error);
}

/* A norm over rows of @width (the hidden size, or an MLA rank, or a head
 * for Qwen3's query and key norms). */
static gboolean
norm_width (Builder *B,
            gint layer,
            const char *name,
            const char *file_name,
            const char *x,
            guint64 rows,
            guint64 width,
            char **out,
            GError **error)
{
  const LlamaModel *m = B->m;
  g_autofree char *gw = g_strdup_printf ("%s.weight", name);
  g_autofree char *bw = g_strdup_printf ("%s.bias", name);
  g_autofree char *fw = g_strdup_printf ("%s.weight", file_name);
  g_autofree char *fb = g_strdup_printf ("%s.bias", file_name);
  g_autofree char *centred = NULL, *sq = NULL, *ss = NULL, *r = NULL;
  g_autofree char *scaled = NULL, *gained = NULL, *mean = NULL;
  ElkDType a = B->adtype;
  Operand in[2];

  set_ext (B, 'm', rows);
  set_ext (B, 'k', width);
  if (B->artifact)
    {
      /* The artifact's seven operators (RMSNorm only, checked in setup):
       * Multiply (x x), Sum, Divide (the mean), Add (epsilon, a constant
       * read from HBM), Sqrt, Divide (x re-read: not produced by the Sqrt
       * before it, hence an HBM input) and Multiply (gain). */
      g_autofree char *eps = g_strdup_printf ("%s.eps", name);
      g_autofree char *mn = NULL, *ep = NULL, *sq_root = NULL;
      in[0] = act (x, "mk", a);
      if (!norm_step (B, layer, name, "square", "square", ELK_OP_UNARY,
                      "mk->mk", in, 1, FALSE, &sq, error))
        return FALSE;
      in[0] = act (sq, "mk", a);
      if (!norm_step (B, layer, name, "sum", "sum", ELK_OP_REDUCE, "mk->m",
                      in, 1, TRUE, &ss, error))
        return FALSE;
      in[0] = act (ss, "m", a);
      if (!norm_step (B, layer, name, "mean", "div", ELK_OP_UNARY, "m->m",
                      in, 1, TRUE, &mn, error))
        return FALSE;
      set_ext (B, 'u', 1);
      in[0] = act (mn, "m", a);
      in[1] = constant (B, eps, "u");
      if (!norm_step (B, layer, name, "eps", "add", ELK_OP_ELEMENTWISE,
                      "m,u->m", in, 2, TRUE, &ep, error))
        return FALSE;
      in[0] = act (ep, "m", a);
      if (!norm_step (B, layer, name, "sqrt", "sqrt", ELK_OP_UNARY, "m->m",
                      in, 1, TRUE, &sq_root, error))
        return FALSE;
      in[0] = act (x, "mk", a);
      in[1] = act (sq_root, "m", a);
      if (!norm_step (B, layer, name, "scale", "div", ELK_OP_ELEMENTWISE,
                      "mk,m->mk", in, 2, FALSE, &scaled, error))
        return FALSE;
      in[0] = act (scaled, "mk", a);
      if (!weight (B, &in[1], gw, "k", NULL, PARTS (fw), error))
        return FALSE;
      return norm_step (B, layer, name, "gain", "mul", ELK_OP_ELEMENTWISE,
                        "mk,k->mk", in, 2, FALSE, out, error);
    }
  if (m->norm == LLAMA_NORM_LAYER)
    {
      in[0] = act (x, "mk", a);
      if (!norm_step (B, layer, name, "mean", "sum", ELK_OP_REDUCE,
                      "mk->m", in, 1, TRUE, &mean, error))
        return FALSE;
      in[0] = act (x, "mk", a);
      in[1] = act (mean, "m", a);
      if (!norm_step (B, layer, name, "centre", "sub", ELK_OP_ELEMENTWISE,
                      "mk,m->mk", in, 2, FALSE, &centred, error))
        return FALSE;
    }
  else
    centred = g_strdup (x);

  in[0] = act (centred, "mk", a);
  if (!norm_step (B, layer, name, "square", "square", ELK_OP_UNARY,
                  "mk->mk", in, 1, FALSE, &sq, error))
    return FALSE;
  in[0] = act (sq, "mk", a);
  if (!norm_step (B, layer, name, "sum", "sum", ELK_OP_REDUCE, "mk->m", in,
                  1, TRUE, &ss, error))
    return FALSE;
  in[0] = act (ss, "m", a);
  if (!norm_step (B, layer, name, "rsqrt", "rsqrt", ELK_OP_UNARY, "m->m",
                  in, 1, TRUE, &r, error))
    return FALSE;
  in[0] = act (centred, "mk", a);
  in[1] = act (r, "m", a);
  if (!norm_step (B, layer, name, "scale", "mul", ELK_OP_ELEMENTWISE,
                  "mk,m->mk", in, 2, FALSE, &scaled, error))
    return FALSE;
  in[0] = act (scaled, "mk", a);
  if (!weight (B, &in[1], gw, "k", NULL, PARTS (fw), error)
      || !norm_step (B, layer, name, "gain", "mul", ELK_OP_ELEMENTWISE,
                     "mk,k->mk", in, 2, FALSE, &gained, error))
    return FALSE;
  if (m->norm == LLAMA_NORM_LAYER && m->norm_bias)
    {
      in[0] = act (gained, "mk", a);
      if (!weight (B, &in[1], bw, "k", NULL, PARTS (fb), error)
          || !norm_step (B, layer, name, "bias", "add", ELK_OP_ELEMENTWISE,
                         "mk,k->mk", in, 2, FALSE, out, error))
        return FALSE;
      return TRUE;
    }
  *out = g_steal_pointer (&gained);
  return TRUE;
}

static gboolean
residual (Builder *B, gint layer, const char *name, const char *a,
          const char *b, char **out, GError **error)
{
  g_autofree char *y = g_strdup_printf ("%s.out", name);
  Operand ops[3];

  set_ext (B, 'm', B->M);
  set_ext (B, 'k', B->m->hidden);
  ops[0] = act (a, "mk", B->adtype);
  ops[1] = act (b, "mk", B->adtype);
  ops[2] = act (y, "mk", B->adtype);
  if (!add_op (B, name, "add", ELK_OP_ELEMENTWISE, layer, "mk,mk->mk", ops,
               3, 0, error))
    return FALSE;
  *out = g_steal_pointer (&y);
  return TRUE;
}

static gboolean
unary (Builder *B, gint layer, const char *name, const char *type,
       const char *x, const char *axes, char **out, GError **error)
{
  g_autofree char *y = g_strdup_printf ("%s.out", name);
  g_autofree char *spec = g_strdup_printf ("%s->%s", axes, axes);
  Operand ops[2] = { act (x, axes, B->adtype), act (y, axes, B->adtype) };

  if (!add_op (B, name, type, ELK_OP_UNARY, layer, spec, ops, 2, 0, error))
    return FALSE;
  *out = g_steal_pointer (&y);
  return TRUE;
}

static const char *
act_name (LlamaAct a)
{
  switch (a)
    {
    case LLAMA_ACT_SILU:
      return "silu";
    case LLAMA_ACT_GELU:
      return "gelu";
    case LLAMA_ACT_RELU:
      return "relu";
    default: return "act";
    }
}

/* ------------------------------------------------------------------ */
/* Attention and FFN                                                    */
/* ------------------------------------------------------------------ */

static guint64
kv_length (Builder *B, guint layer)
{
  const LlamaModel *m = B->m;
  gboolean windowed = m->sliding_window != 0 && m->sliding_period != 0
                      && layer % m->sliding_period == 0;
  /* A sliding window bounds the KV cache a decode step reads; prefill
   * computes the whole (masked) square, as the artifact's graphs do. */
  if (windowed && B->phase == LLAMA_PHASE_DECODE)
    return MIN (B->S, m->sliding_window);
  return B->S;
}

/* granularity=artifact: a Slice as the artifact's TExpr records one: the
 * loop runs over the whole input ("mn->mn" over [tokens, width]), and the
 * output has that shape too. */
static gboolean
slice_op (Builder *B, gint layer, const char *name, const char *x,
          const char *axes, char **out, GError **error)
{
  g_autofree char *y = g_strdup_printf ("%s.out", name);
  g_autofree char *spec = g_strdup_printf ("%s->%s", axes, axes);
  Operand ops[2] = { act (x, axes, B->adtype), act (y, axes, B->adtype) };

  if (!add_op (B, name, "slice", ELK_OP_SLICE, layer, spec, ops, 2, 0,
               error))
    return FALSE;
  *out = g_steal_pointer (&y);
  return TRUE;
}

/* granularity=artifact: RoPE on one slice of the QKV output, as the
 * artifact's graphs spell it (six operators): x cos, the two halves of
 * rotate_half (Slice, Slice), Negative on one half, rotate_half(x) sin and
 * the Add.  rotate_half's Concat is dropped by the artifact, so no operator
 * writes "<prefix>.rot" and the sin Multiply reads it from HBM; the Add
 * re-reads x cos, three operators back.  @axes is the artifact's loop
 * order: [b, 1, h, e] for Q, [b, h, 1, e] for K. */
static gboolean
rope (Builder *B, gint layer, const char *prefix, const char *x,
      const char *axes, guint64 heads, char **out, GError **error)
{
  g_autofree char *xv = view_of (B, x, "heads");
  g_autofree char *n_cos = g_strdup_printf ("%s.cos", prefix);
  g_autofree char *n_x1 = g_strdup_printf ("%s.x1", prefix);
  g_autofree char *n_x2 = g_strdup_printf ("%s.x2", prefix);
  g_autofree char *n_neg = g_strdup_printf ("%s.neg", prefix);
  g_autofree char *n_sin = g_strdup_printf ("%s.sin", prefix);
  g_autofree char *n_add = g_strdup_printf ("%s.add", prefix);
  g_autofree char *cos_t = g_strdup_printf ("%s.cos_table", prefix);
  g_autofree char *sin_t = g_strdup_printf ("%s.sin_table", prefix);
  g_autofree char *rot = g_strdup_printf ("%s.rot", prefix);
  g_autofree char *y_cos = g_strdup_printf ("%s.out", n_cos);
  g_autofree char *y_sin = g_strdup_printf ("%s.out", n_sin);
  g_autofree char *y = g_strdup_printf ("%s.out", n_add);
  g_autofree char *x1 = NULL, *x2 = NULL, *x2_half = NULL, *neg = NULL;
  g_autofree char *mul = g_strdup_printf ("%s,qe->%s", axes, axes);
  g_autofree char *add = g_strdup_printf ("%s,%s->%s", axes, axes, axes);
  guint64 e = B->m->head_dim;
  Operand ops[3];

  set_ext (B, 'b', B->b);
  set_ext (B, 'q', B->t);
  set_ext (B, 'h', heads);
  set_ext (B, 'e', e);
  ops[0] = act (xv, axes, B->adtype);
  ops[1] = constant (B, cos_t, "qe");
  ops[2] = act (y_cos, axes, B->adtype);
  if (!add_op (B, n_cos, "mul", ELK_OP_ELEMENTWISE, layer, mul, ops, 3, 0,
               error)
      || !slice_op (B, layer, n_x1, xv, axes, &x1, error)
      || !slice_op (B, layer, n_x2, xv, axes, &x2, error))
    return FALSE;
  set_ext (B, 'e', e / 2);
  x2_half = view_of (B, x2, "half");
  if (!unary (B, layer, n_neg, "neg", x2_half, axes, &neg, error))
    return FALSE;
  set_ext (B, 'e', e);
  ops[0] = act (rot, axes, B->adtype);
  ops[1] = constant (B, sin_t, "qe");
  ops[2] = act (y_sin, axes, B->adtype);
  if (!add_op (B, n_sin, "mul", ELK_OP_ELEMENTWISE, layer, mul, ops, 3, 0,
               error))
    return FALSE;
  ops[0] = act (y_cos, axes, B->adtype);
  ops[1] = act (y_sin, axes, B->adtype);
  ops[2] = act (y, axes, B->adtype);
  if (!add_op (B, n_add, "add", ELK_OP_ELEMENTWISE, layer, add, ops, 3, 0,
               error))
    return FALSE;
  *out = g_steal_pointer (&y);
  return TRUE;
}

/* granularity=artifact: from the fused QKV output to the rotated query,
 * fifteen operators: the V, K and Q Slices and RoPE on K and on Q.  The
 * artifact's order is V, Q, K, and its score batch-matmul then reads the
 * rotated K (its graph's quirk); here K comes before Q so that the score
 * reads the rotated query, produced by the operator just before it, which
 * gives the same on-chip/HBM marks operator by operator.  The rotated K and
 * the V slice feed the KV-cache write, which elk leaves out. */
static gboolean
qkv_artifact (Builder *B, guint layer, const char *qkv, guint64 wqkv,
              char **q_rot, GError **error)
{
  const LlamaModel *m = B->m;
  gint L = (gint) layer;
  g_autofree char *p = g_strdup_printf ("blk.%u", layer);
  g_autofree char *nv = g_strdup_printf ("%s.attn_v_slice", p);
  g_autofree char *nk = g_strdup_printf ("%s.attn_k_slice", p);
  g_autofree char *nq = g_strdup_printf ("%s.attn_q_slice", p);
  g_autofree char *kr = g_strdup_printf ("%s.k_rope", p);
  g_autofree char *qr = g_strdup_printf ("%s.q_rope", p);
  g_autofree char *v = NULL, *k = NULL, *q = NULL, *k_rot = NULL;

  set_ext (B, 'm', B->M);
  set_ext (B, 'n', wqkv);
  if (!slice_op (B, L, nv, qkv, "mn", &v, error)
      || !slice_op (B, L, nk, qkv, "mn", &k, error)
      || !rope (B, L, kr, k, "bhqe", m->n_kv_heads, &k_rot, error))
    return FALSE;
  set_ext (B, 'm', B->M);
  set_ext (B, 'n', wqkv);
  return slice_op (B, L, nq, qkv, "mn", &q, error)
         && rope (B, L, qr, q, "bqhe", m->n_heads, q_rot, error);
}

/* Softmax of the scores @x over the key axis "s" (@s_axes without "s" is
 * @r_axes): max, exp(x - max), sum, divide. */
static gboolean
softmax (Builder *B,
         gint L,
         const char *p,
         const char *x,
         const char *s_axes,
         const char *r_axes,
         char **out,
         GError **error)
{
  g_autofree char *red = g_strdup_printf ("%s->%s", s_axes, r_axes);
  g_autofree char *bin = g_strdup_printf ("%s,%s->%s", s_axes, r_axes, s_axes);
  g_autofree char *n1 = g_strdup_printf ("%s.softmax.max", p);
  g_autofree char *n2 = g_strdup_printf ("%s.softmax.exp", p);
  g_autofree char *n3 = g_strdup_printf ("%s.softmax.sum", p);
  g_autofree char *n4 = g_strdup_printf ("%s.softmax.div", p);
  g_autofree char *mx = g_strdup_printf ("%s.out", n1);
  g_autofree char *ex = g_strdup_printf ("%s.out", n2);
  g_autofree char *sm = g_strdup_printf ("%s.out", n3);
  g_autofree char *probs = g_strdup_printf ("%s.out", n4);
  Operand ops[3];

  ops[0] = act (x, s_axes, B->adtype);
  ops[1] = act (mx, r_axes, B->adtype);
  if (!add_op (B, n1, "max", ELK_OP_REDUCE, L, red, ops, 2, 0, error))
    return FALSE;
  ops[0] = act (x, s_axes, B->adtype);
  ops[1] = act (mx, r_axes, B->adtype);
  ops[2] = act (ex, s_axes, B->adtype);
  if (!add_op (B, n2, "sub-exp", ELK_OP_ELEMENTWISE, L, bin, ops, 3, 0, error))
    return FALSE;
  ops[0] = act (ex, s_axes, B->adtype);
  ops[1] = act (sm, r_axes, B->adtype);
  if (!add_op (B, n3, "sum", ELK_OP_REDUCE, L, red, ops, 2, 0, error))
    return FALSE;
  ops[0] = act (ex, s_axes, B->adtype);
  ops[1] = act (sm, r_axes, B->adtype);
  ops[2] = act (probs, s_axes, B->adtype);
  if (!add_op (B, n4, "div", ELK_OP_ELEMENTWISE, L, bin, ops, 3, 0, error))
    return FALSE;
  *out = g_steal_pointer (&probs);
  return TRUE;
}

static gboolean mla_attention (
    Builder *B, guint layer, const char *x, char **out, GError **error);
static gboolean qk_norms (Builder *B, guint layer, GError **error);

static gboolean
attention (Builder *B, guint layer, const char *x, char **out,
           GError **error)
{
  const LlamaModel *m = B->m;
  gint L = (gint) layer;
  g_autofree char *p = g_strdup_printf ("blk.%u", layer);
  g_autofree char *f = g_strdup_printf ("blk.%u", layer);
  guint64 d = m->hidden, e = m->head_dim;
  guint64 hkv = m->n_kv_heads, g = m->n_heads / m->n_kv_heads;
  guint64 S = kv_length (B, layer);
  gboolean grouped = g > 1;
  gboolean decode = B->phase == LLAMA_PHASE_DECODE;
  /* Projection widths; the paper presets override the fused width. */
  guint64 wq = m->qkv_out ? m->qkv_out / 3 : m->n_heads * e;
  guint64 wkv = m->qkv_out ? m->qkv_out / 3 : hkv * e;
  guint64 wqkv = m->qkv_out ? m->qkv_out : wq + 2 * wkv;
  guint64 o_in = m->o_in ? m->o_in : m->n_heads * e;
  const char *q_axes = grouped ? "bhgqe" : "bhqe";
  const char *s_axes = grouped ? "bhgqs" : "bhqs";
  const char *r_axes = grouped ? "bhgq" : "bhq";
  g_autofree char *q = g_strdup_printf ("%s.q", p);
  g_autofree char *k = g_strdup_printf (decode ? "%s.k_cache" : "%s.k", p);
  g_autofree char *v = g_strdup_printf (decode ? "%s.v_cache" : "%s.v", p);
  g_autofree char *name = NULL, *spec = NULL, *tmp = NULL;
  g_autofree char *scores = NULL;
  g_autofree char *probs = NULL, *ctx = NULL, *ctx_rows = NULL;
  g_autofree char *q_rot = NULL, *q_view = NULL, *sm_in = NULL;
  g_autofree char *probs_in = NULL;
  ElkTensorOrigin kv_origin = decode ? ELK_TENSOR_ORIGIN_KV_CACHE
                                     : ELK_TENSOR_ORIGIN_ACTIVATION;
  Operand ops[3];

  if (m->kv_lora_rank != 0)
    return mla_attention (B, layer, x, out, error);

  /* Q, K and V projections. */
  if (B->o->fuse_qkv)
    {
      g_autofree char *fq = g_strdup_printf ("%s.attn_q.weight", f);
      g_autofree char *fk = g_strdup_printf ("%s.attn_k.weight", f);
      g_autofree char *fv = g_strdup_printf ("%s.attn_v.weight", f);
      g_autofree char *bq = g_strdup_printf ("%s.attn_q.bias", f);
      g_autofree char *bk = g_strdup_printf ("%s.attn_k.bias", f);
      g_autofree char *bv = g_strdup_printf ("%s.attn_v.bias", f);
      g_autofree char *fused = g_strdup_printf ("%s.attn_qkv.weight", f);
      g_autofree char *fused_b = g_strdup_printf ("%s.attn_qkv.bias", f);
      g_autofree char *pname = g_strdup_printf ("%s.attn_qkv", p);
      const char *fused_w[] = { fused, NULL }, *fused_bias[] = { fused_b,
                                                                  NULL };
      const char *split_w[] = { fq, fk, fv, NULL };
      const char *split_b[] = { bq, bk, bv, NULL };
      const char *const *wparts = split_w;
      const char *const *bparts = split_b;
      /* A file with a fused tensor (Phi-3, Falcon) is read as one part. */
      if (m->gguf != NULL && elk__gguf_find_tensor (m->gguf, fused) != NULL)
        {
          wparts = fused_w;
          bparts = fused_bias;
        }
      if (!linear (B, L, pname, x, B->M, d, wqkv, NULL, wparts,
                   m->bias_qkv ? bparts : NULL, &tmp, error))
        return FALSE;
    }
  else
    {
      static const char *const which[] = { "q", "k", "v" };
      for (guint i = 0; i < 3; i++)
        {
          g_autofree char *pname = g_strdup_printf ("%s.attn_%s", p,
                                                    which[i]);
          g_autofree char *fw = g_strdup_printf ("%s.attn_%s.weight", f,
                                                 which[i]);
          g_autofree char *fb = g_strdup_printf ("%s.attn_%s.bias", f,
                                                 which[i]);
          g_autofree char *fused = g_strdup_printf ("%s.attn_qkv.weight", f);
          g_autofree char *o = NULL;
          if (!linear (B, L, pname, x, B->M, d, i == 0 ? wq : wkv, fused,
                       PARTS (fw), m->bias_qkv ? PARTS (fb) : NULL, &o,
                       error))
            return FALSE;
        }
    }

  if (m->qk_norm && !qk_norms (B, layer, error))
    return FALSE;

  /* The artifact's graphs spell out the Slices and RoPE (fused QKV,
   * checked in setup); elk's query is a free view of the projection. */
  if (B->artifact)
    {
      if (!qkv_artifact (B, layer, tmp, wqkv, &q_rot, error))
        return FALSE;
      q_view = view_of (B, q_rot, "heads");
    }

  /* Scores: queries against the keys (the KV cache in decode). */
  set_ext (B, 'b', B->b);
  set_ext (B, 'h', hkv);
  set_ext (B, 'g', g);
  set_ext (B, 'q', B->t);
  set_ext (B, 's', S);
  set_ext (B, 'e', e);
  name = g_strdup_printf ("%s.attn_score", p);
  scores = g_strdup_printf ("%s.out", name);
  spec = g_strdup_printf ("%s,bhse->%s", q_axes, s_axes);
  ops[0] = act (B->artifact ? q_view : q, q_axes, B->adtype);
  ops[1] = (Operand) { k, "bhse", kv_origin, B->adtype, 0 };
  ops[2] = act (scores, s_axes, B->adtype);
  if (!add_op (B, name, "batch-matmul", ELK_OP_MATMUL, L, spec, ops, 3, 0,
               error))
    return FALSE;

  sm_in = g_strdup (scores);
  if (B->artifact)
    {
      /* The artifact's scale (Divide) and mask (Add, the mask a constant
       * read from HBM) and its softmax run on [b, h, 1, 1]: a KV length of
       * 1, not the cache's.  Reproduced as recorded in its TExpr files. */
      g_autofree char *n_scale = g_strdup_printf ("%s.attn_scale", p);
      g_autofree char *n_mask = g_strdup_printf ("%s.attn_mask", p);
      g_autofree char *mask = g_strdup_printf ("%s.attn_mask.table", p);
      g_autofree char *scaled = NULL, *masked = NULL, *sv = NULL;
      g_autofree char *mspec = g_strdup_printf ("%s,bqs->%s", s_axes, s_axes);
      set_ext (B, 's', 1);
      sv = view_of (B, scores, "kv1");
      if (!unary (B, L, n_scale, "div", sv, s_axes, &scaled, error))
        return FALSE;
      masked = g_strdup_printf ("%s.out", n_mask);
      ops[0] = act (scaled, s_axes, B->adtype);
      ops[1] = constant (B, mask, "bqs");
      ops[2] = act (masked, s_axes, B->adtype);
      if (!add_op (B, n_mask, "add", ELK_OP_ELEMENTWISE, L, mspec, ops, 3, 0,
                   error))
        return FALSE;
      g_free (sm_in);
      sm_in = g_steal_pointer (&masked);
    }

  /* Softmax over the key axis: max, exp(x - max), sum, divide. */
  if (!softmax (B, L, p, sm_in, s_axes, r_axes, &probs, error))
    return FALSE;

  /* Context: probabilities times the values. */
  set_ext (B, 's', S);
  probs_in = B->artifact ? view_of (B, probs, "kv") : g_strdup (probs);
  g_free (name);
  g_free (spec);
  name = g_strdup_printf ("%s.attn_value", p);
  ctx = g_strdup_printf ("%s.out", name);
  spec = g_strdup_printf ("%s,bhse->%s", s_axes, q_axes);
  ops[0] = act (probs_in, s_axes, B->adtype);
  ops[1] = (Operand) { v, "bhse", kv_origin, B->adtype, 0 };
  ops[2] = act (ctx, q_axes, B->adtype);
  if (!add_op (B, name, "batch-matmul", ELK_OP_MATMUL, L, spec, ops, 3, 0,
               error))
    return FALSE;

  /* Output projection reads the context in token-major layout (a view). */
  {
    g_autofree char *pname = g_strdup_printf ("%s.attn_output", p);
    g_autofree char *fw = g_strdup_printf ("%s.attn_output.weight", f);
    g_autofree char *fb = g_strdup_printf ("%s.attn_output.bias", f);
    ctx_rows = view_of (B, ctx, "rows");
    if (!linear (B, L, pname, ctx_rows, B->M, o_in, d, NULL, PARTS (fw),
                 m->bias_o ? PARTS (fb) : NULL, out, error))
      return FALSE;
  }
  return TRUE;
}

/* granularity=artifact: the gated FFN after the fused gate+up MatMul, as
 * the artifact's graphs spell it for Llama2 and Gemma2 alike: Slice (up),
 * Slice (gate), Sigmoid, Multiply (SiLU = gate x sigmoid), Multiply (x up:
 * the up half was sliced four operators back, an HBM input), the down
 * MatMul.  The elementwise part runs on the down projection's width, as
 * recorded (36864 for gemma2-27b-paper, whose fused width is 27648). */
static gboolean
ffn_artifact (Builder *B, guint layer, const char *h, guint64 up,
              guint64 down_in, char **out, GError **error)
{
  const LlamaModel *m = B->m;
  gint L = (gint) layer;
  g_autofree char *p = g_strdup_printf ("blk.%u", layer);
  g_autofree char *nu = g_strdup_printf ("%s.ffn_up_slice", p);
  g_autofree char *ng = g_strdup_printf ("%s.ffn_gate_slice", p);
  g_autofree char *na = g_strdup_printf ("%s.ffn_act", p);
  g_autofree char *ns = g_strdup_printf ("%s.ffn_silu", p);
  g_autofree char *nm = g_strdup_printf ("%s.ffn_mul", p);
  g_autofree char *nd = g_strdup_printf ("%s.ffn_down", p);
  g_autofree char *fd = g_strdup_printf ("%s.ffn_down.weight", p);
  g_autofree char *us = NULL, *gs = NULL, *gv = NULL, *uv = NULL;
  g_autofree char *sig = NULL;
  g_autofree char *silu = g_strdup_printf ("%s.out", ns);
  g_autofree char *prod = g_strdup_printf ("%s.out", nm);
  Operand ops[3];

  set_ext (B, 'm', B->M);
  set_ext (B, 'f', up);
  if (!slice_op (B, L, nu, h, "mf", &us, error)
      || !slice_op (B, L, ng, h, "mf", &gs, error))
    return FALSE;
  set_ext (B, 'f', down_in);
  gv = view_of (B, gs, "act");
  uv = view_of (B, us, "act");
  if (!unary (B, L, na, "sigmoid", gv, "mf", &sig, error))
    return FALSE;
  ops[0] = act (gv, "mf", B->adtype);
  ops[1] = act (sig, "mf", B->adtype);
  ops[2] = act (silu, "mf", B->adtype);
  if (!add_op (B, ns, "mul", ELK_OP_ELEMENTWISE, L, "mf,mf->mf", ops, 3, 0,
               error))
    return FALSE;
  ops[0] = act (silu, "mf", B->adtype);
  ops[1] = act (uv, "mf", B->adtype);
  ops[2] = act (prod, "mf", B->adtype);
  if (!add_op (B, nm, "mul", ELK_OP_ELEMENTWISE, L, "mf,mf->mf", ops, 3, 0,
               error))
    return FALSE;
  return linear (B, L, nd, prod, B->M, down_in, m->hidden, NULL, PARTS (fd),
                 NULL, out, error);
}

/* ------------------------------------------------------------------ */
/* Qwen3's query and key norms, multi-head latent attention             */
/* ------------------------------------------------------------------ */

/* Qwen3: an RMSNorm of head_dim over every query head and every key head
 * of the new tokens, between the projection and RoPE.  Their inputs are
 * views of the projection; the score reads the query as a view too. */
static gboolean
qk_norms (Builder *B, guint layer, GError **error)
{
  const LlamaModel *m = B->m;
  static const char *const which[] = { "q", "k" };

  for (guint i = 0; i < 2; i++)
    {
      g_autofree char *name
          = g_strdup_printf ("blk.%u.attn_%s_norm", layer, which[i]);
      g_autofree char *x = g_strdup_printf ("blk.%u.%s.heads", layer, which[i]);
      g_autofree char *y = NULL;
      guint64 heads = i == 0 ? m->n_heads : m->n_kv_heads;
      if (!norm_width (B, (gint) layer, name, name, x, B->M * heads,
                       m->head_dim, &y, error))
        return FALSE;
    }
  return TRUE;
}

/* A MatMul @spec whose extents the caller has set, reading the activation
 * (or KV cache) operand @a and the weight @w. */
static gboolean
mm (Builder *B,
    gint L,
    const char *name,
    const char *spec,
    Operand a,
    Operand w,
    const char *out_axes,
    char **out,
    GError **error)
{
  g_autofree char *y = g_strdup_printf ("%s.out", name);
  Operand ops[3] = { a, w, act (y, out_axes, B->adtype) };

  if (!add_op (B, name,
               ops[1].origin == ELK_TENSOR_ORIGIN_WEIGHT ? "matmul"
                                                         : "batch-matmul",
               ELK_OP_MATMUL, L, spec, ops, 3, 0, error))
    return FALSE;
  *out = g_steal_pointer (&y);
  return TRUE;
}

static gboolean
add2 (Builder *B,
      gint L,
      const char *name,
      const char *axes,
      const char *a,
      const char *b,
      char **out,
      GError **error)
{
  g_autofree char *y = g_strdup_printf ("%s.out", name);
  g_autofree char *spec = g_strdup_printf ("%s,%s->%s", axes, axes, axes);
  Operand ops[3] = { act (a, axes, B->adtype), act (b, axes, B->adtype),
                     act (y, axes, B->adtype) };

  if (!add_op (B, name, "add", ELK_OP_ELEMENTWISE, L, spec, ops, 3, 0, error))
    return FALSE;
  *out = g_steal_pointer (&y);
  return TRUE;
}

/* The query of MLA: a direct projection (DeepSeek-V2-Lite) or a low-rank
 * one with an RMSNorm on the rank (q_a, q_a_norm, q_b). */
static gboolean
mla_query (Builder *B, guint layer, const char *x, char **q, GError **error)
{
  const LlamaModel *m = B->m;
  gint L = (gint) layer;
  guint64 d = m->hidden, width = m->n_heads * m->head_dim;
  g_autofree char *p = g_strdup_printf ("blk.%u", layer);
  g_autofree char *na = g_strdup_printf ("%s.attn_q_a", p);
  g_autofree char *nn = g_strdup_printf ("%s.attn_q_a_norm", p);
  g_autofree char *nb = g_strdup_printf ("%s.attn_q_b", p);
  g_autofree char *nq = g_strdup_printf ("%s.attn_q", p);
  g_autofree char *fa = g_strdup_printf ("%s.weight", na);
  g_autofree char *fb = g_strdup_printf ("%s.weight", nb);
  g_autofree char *fq = g_strdup_printf ("%s.weight", nq);
  g_autofree char *qa = NULL, *qn = NULL;

  if (m->q_lora_rank == 0)
    return linear (B, L, nq, x, B->M, d, width, NULL, PARTS (fq), NULL, q,
                   error);
  return linear (B, L, na, x, B->M, d, m->q_lora_rank, NULL, PARTS (fa), NULL,
                 &qa, error)
         && norm_width (B, L, nn, nn, qa, B->M, m->q_lora_rank, &qn, error)
         && linear (B, L, nb, qn, B->M, m->q_lora_rank, width, NULL, PARTS (fb),
                    NULL, q, error);
}

/* The up-projection weight of MLA in the form @which ("kv_b" whole, or
 * its "k_b" and "v_b" halves), with @axes set by the caller.  llama.cpp's
 * files carry attn_kv_b, attn_k_b and attn_v_b, or some of them; a half
 * absent from the file is a row range of attn_kv_b. */
static gboolean
mla_up_weight (Builder *B,
               guint layer,
               const char *which,
               const char *axes,
               Operand *w,
               char **name,
               GError **error)
{
  const Gguf *gguf = B->m->gguf;
  g_autofree char *kv = g_strdup_printf ("blk.%u.attn_kv_b.weight", layer);
  g_autofree char *k = g_strdup_printf ("blk.%u.attn_k_b.weight", layer);
  g_autofree char *v = g_strdup_printf ("blk.%u.attn_v_b.weight", layer);
  gboolean whole = g_str_equal (which, "kv_b");

  *name = g_strdup_printf ("blk.%u.attn_%s.weight", layer, which);
  if (whole && gguf != NULL && elk__gguf_find_tensor (gguf, kv) == NULL)
    return weight (B, w, *name, axes, NULL, PARTS (k, v), error);
  if (whole)
    return weight (B, w, *name, axes, NULL, PARTS (kv), error);
  return weight (B, w, *name, axes, kv,
                 PARTS (g_str_equal (which, "k_b") ? k : v), error);
}

/* DeepSeek's multi-head latent attention.  The KV cache of a layer is the
 * compressed latent (kv_lora_rank per token, "blk.N.kv_cache") and the
 * shared RoPE key (qk_rope_head_dim per token, "blk.N.k_rope_cache").
 * The plain form decompresses the cached latents into per-head keys and
 * values with attn_kv_b, then attends as usual; the absorbed form (decode
 * with mla-absorb) folds attn_k_b into the query and attn_v_b after the
 * attention, so that scores and context are computed on the latent. */
static gboolean
mla_attention (
    Builder *B, guint layer, const char *x, char **out, GError **error)
{
  const LlamaModel *m = B->m;
  gint L = (gint) layer;
  guint64 d = m->hidden, H = m->n_heads, c = m->kv_lora_rank;
  guint64 r = m->qk_rope, en = m->qk_nope, ev = m->v_head_dim;
  guint64 S = kv_length (B, layer);
  gboolean decode = B->phase == LLAMA_PHASE_DECODE;
  gboolean absorb = decode && B->o->mla_absorb;
  ElkTensorOrigin kv_origin
      = decode ? ELK_TENSOR_ORIGIN_KV_CACHE : ELK_TENSOR_ORIGIN_ACTIVATION;
  g_autofree char *p = g_strdup_printf ("blk.%u", layer);
  g_autofree char *n_kva = g_strdup_printf ("%s.attn_kv_a_mqa", p);
  g_autofree char *n_kvn = g_strdup_printf ("%s.attn_kv_a_norm", p);
  g_autofree char *f_kva = g_strdup_printf ("%s.weight", n_kva);
  g_autofree char *latent
      = g_strdup_printf (decode ? "%s.kv_cache" : "%s.kv_latent", p);
  g_autofree char *rope_k
      = g_strdup_printf (decode ? "%s.k_rope_cache" : "%s.k_rope", p);
  g_autofree char *q_nope = g_strdup_printf ("%s.q_nope", p);
  g_autofree char *q_rope = g_strdup_printf ("%s.q_rope", p);
  g_autofree char *n_score = g_strdup_printf ("%s.attn_score", p);
  g_autofree char *n_main = NULL, *n_rope = NULL, *n_value = NULL;
  g_autofree char *q = NULL, *kva = NULL, *kvn = NULL, *kva_c = NULL;
  g_autofree char *main_s = NULL, *rope_s = NULL, *scores = NULL;
  g_autofree char *probs = NULL, *ctx = NULL, *ctx_rows = NULL;
  g_autofree char *wname = NULL, *dec = NULL, *k_view = NULL;
  g_autofree char *v_view = NULL, *q_lat = NULL, *ctx_lat = NULL;
  g_autofree char *onchip = NULL;
  Operand w;

  /* Query, and the latent and RoPE key of the new tokens (their write to
   * the cache is left out, as for ordinary KV caches). */
  if (!mla_query (B, layer, x, &q, error)
      || !linear (B, L, n_kva, x, B->M, d, c + r, NULL, PARTS (f_kva), NULL,
                  &kva, error))
    return FALSE;
  kva_c = view_of (B, kva, "latent");
  if (!norm_width (B, L, n_kvn, n_kvn, kva_c, B->M, c, &kvn, error))
    return FALSE;

  set_ext (B, 'b', B->b);
  set_ext (B, 'h', H);
  set_ext (B, 'q', B->t);
  set_ext (B, 's', S);
  set_ext (B, 'c', c);
  set_ext (B, 'r', r);
  set_ext (B, 'e', en);
  set_ext (B, 'v', ev);
  if (absorb)
    {
      /* q_nope W_UK: the query in latent space, then scores against the
       * cached latents directly (every head reads the same latent). */
      g_autofree char *n_qabs = g_strdup_printf ("%s.attn_q_absorb", p);
      n_main = g_strdup_printf ("%s.attn_score_latent", p);
      if (!mla_up_weight (B, layer, "k_b", "hec", &w, &wname, error)
          || !mm (B, L, n_qabs, "bhqe,hec->bhqc",
                  act (q_nope, "bhqe", B->adtype), w, "bhqc", &q_lat, error)
          || !mm (B, L, n_main, "bhqc,bsc->bhqs",
                  act (q_lat, "bhqc", B->adtype),
                  (Operand){ latent, "bsc", kv_origin, B->adtype, 0 }, "bhqs",
                  &main_s, error))
        return FALSE;
    }
  else
    {
      /* Decompress every cached latent into per-head keys (no-RoPE part)
       * and values. */
      g_autofree char *n_dec = g_strdup_printf ("%s.attn_kv_b", p);
      set_ext (B, 'n', H * (en + ev));
      n_main = g_strdup_printf ("%s.attn_score_nope", p);
      if (!mla_up_weight (B, layer, "kv_b", "cn", &w, &wname, error)
          || !mm (B, L, n_dec, "bsc,cn->bsn",
                  (Operand){ latent, "bsc", kv_origin, B->adtype, 0 }, w, "bsn",
                  &dec, error))
        return FALSE;
      k_view = view_of (B, dec, "k");
      v_view = view_of (B, dec, "v");
      if (!mm (B, L, n_main, "bhqe,bhse->bhqs", act (q_nope, "bhqe", B->adtype),
               act (k_view, "bhse", B->adtype), "bhqs", &main_s, error))
        return FALSE;
    }

  /* The RoPE part of the key is one head shared by all query heads. */
  n_rope = g_strdup_printf ("%s.attn_score_rope", p);
  if (!mm (B, L, n_rope, "bhqr,bsr->bhqs", act (q_rope, "bhqr", B->adtype),
           (Operand){ rope_k, "bsr", kv_origin, B->adtype, 0 }, "bhqs", &rope_s,
           error)
      || !add2 (B, L, n_score, "bhqs", main_s, rope_s, &scores, error)
      || !softmax (B, L, p, scores, "bhqs", "bhq", &probs, error))
    return FALSE;

  if (absorb)
    {
      /* The context on the latent: the cached latents are on chip since
       * the score read them, so this operator reads them as a view. */
      g_autofree char *n_ctx = g_strdup_printf ("%s.attn_value_latent", p);
      g_autofree char *n_vup = g_strdup_printf ("%s.attn_v_up", p);
      g_autofree char *wv = NULL;
      onchip = view_of (B, latent, "onchip");
      if (!mm (B, L, n_ctx, "bhqs,bsc->bhqc", act (probs, "bhqs", B->adtype),
               act (onchip, "bsc", B->adtype), "bhqc", &ctx_lat, error)
          || !mla_up_weight (B, layer, "v_b", "hcv", &w, &wv, error)
          || !mm (B, L, n_vup, "bhqc,hcv->bhqv",
                  act (ctx_lat, "bhqc", B->adtype), w, "bhqv", &ctx, error))
        return FALSE;
    }
  else
    {
      n_value = g_strdup_printf ("%s.attn_value", p);
      if (!mm (B, L, n_value, "bhqs,bhsv->bhqv", act (probs, "bhqs", B->adtype),
               act (v_view, "bhsv", B->adtype), "bhqv", &ctx, error))
        return FALSE;
    }

  {
    g_autofree char *pname = g_strdup_printf ("%s.attn_output", p);
    g_autofree char *fw = g_strdup_printf ("%s.attn_output.weight", p);
    ctx_rows = view_of (B, ctx, "rows");
    return linear (B, L, pname, ctx_rows, B->M, H * ev, d, NULL, PARTS (fw),
                   NULL, out, error);
  }
}

/* ------------------------------------------------------------------ */
/* Mixture of experts                                                   */
/* ------------------------------------------------------------------ */

/* One routed expert's weight @name: with dtype=file and a GGUF file with
 * tensors, a 1/E share of the stacked *_exps tensors @files (gate and up
 * are two of them when fused), else the weight type of the build. */
static gboolean
expert_weight (Builder *B,
               Operand *out,
               const char *name,
               const char *axes,
               const char *const *files,
               GError **error)
{
  const Gguf *gguf = B->m->gguf;
  guint64 E = B->m->n_experts, n = 1, elems = 0, bytes = 0;
  guint32 type = 0;
  gboolean mixed = FALSE;

  if (!B->file_types || gguf == NULL || elk__gguf_get_n_tensors (gguf) == 0)
    return weight (B, out, name, axes, NULL, files, error);
  for (const char *c = axes; *c; c++)
    n *= B->ext[(guchar) *c];
  for (guint i = 0; files[i] != NULL; i++)
    {
      const GgufTensor *t = elk__gguf_find_tensor (gguf, files[i]);
      if (t == NULL)
        {
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                       "%s: tensor '%s' is missing (needed for dtype=file)",
                       elk__gguf_get_path (gguf), files[i]);
          return FALSE;
        }
      if (i > 0 && t->type != type)
        mixed = TRUE;
      type = t->type;
      elems += t->n_elements;
      bytes += t->bytes;
    }
  if (elems != n * E || bytes % E != 0)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: tensor '%s'%s has %" G_GUINT64_FORMAT " elements, "
                   "the hyper-parameters give %" G_GUINT64_FORMAT " experts "
                   "of %" G_GUINT64_FORMAT,
                   elk__gguf_get_path (gguf), files[0],
                   files[1] != NULL ? " and its siblings" : "", elems, E, n);
      return FALSE;
    }
  out->name = name;
  out->axes = axes;
  out->origin = ELK_TENSOR_ORIGIN_WEIGHT;
  out->bytes = bytes / E;
  if (mixed || !elk__ggml_type_to_dtype (type, &out->dtype))
    out->dtype = ELK_DTYPE_QUANTIZED;
  return TRUE;
}

/* A gated FFN (gate+up, activation, product, down) of width @f on @rows
 * rows of @x, named @prefix.gate_up, ...  @expert >= 0 takes routed expert
 * @expert's weights from the *_exps tensors; -1 the shared experts'
 * (*_shexp). */
static gboolean
gated_ffn (Builder *B,
           gint L,
           const char *prefix,
           const char *x,
           guint64 rows,
           guint64 f,
           gint expert,
           char **out,
           GError **error)
{
  guint64 d = B->m->hidden;
  const char *suffix = expert >= 0 ? "exps" : "shexp";
  g_autofree char *fg
      = g_strdup_printf ("blk.%d.ffn_gate_%s.weight", L, suffix);
  g_autofree char *fu = g_strdup_printf ("blk.%d.ffn_up_%s.weight", L, suffix);
  g_autofree char *fd
      = g_strdup_printf ("blk.%d.ffn_down_%s.weight", L, suffix);
  g_autofree char *n_act = g_strdup_printf ("%s.act", prefix);
  g_autofree char *n_mul = g_strdup_printf ("%s.mul", prefix);
  g_autofree char *n_down = g_strdup_printf ("%s.down", prefix);
  g_autofree char *w_down = g_strdup_printf ("%s.weight", n_down);
  g_autofree char *prod = g_strdup_printf ("%s.out", n_mul);
  g_autofree char *gate = NULL, *up = NULL, *a = NULL;
  Operand ops[3], w;
  gboolean fused = B->o->fuse_ffn;

  for (guint i = 0; i < (fused ? 1u : 2u); i++)
    {
      const char *which = fused ? "gate_up" : i == 0 ? "gate" : "up";
      g_autofree char *name = g_strdup_printf ("%s.%s", prefix, which);
      g_autofree char *wname = g_strdup_printf ("%s.weight", name);
      g_autofree char *y = NULL;
      const char *both[] = { fg, fu, NULL },
                 *one[] = { i == 0 ? fg : fu, NULL };
      const char *const *files = fused ? both : one;
      set_ext (B, 'm', rows);
      set_ext (B, 'k', d);
      set_ext (B, 'n', fused ? 2 * f : f);
      if (expert >= 0 ? !expert_weight (B, &w, wname, "kn", files, error)
                      : !weight (B, &w, wname, "kn", NULL, files, error))
        return FALSE;
      if (!mm (B, L, name, "mk,kn->mn", act (x, "mk", B->adtype), w, "mn", &y,
               error))
        return FALSE;
      if (fused)
        {
          gate = view_of (B, y, "gate");
          up = view_of (B, y, "up");
        }
      else if (i == 0)
        gate = g_steal_pointer (&y);
      else
        up = g_steal_pointer (&y);
    }
  set_ext (B, 'm', rows);
  set_ext (B, 'f', f);
  if (!unary (B, L, n_act, act_name (B->m->act), gate, "mf", &a, error))
    return FALSE;
  ops[0] = act (a, "mf", B->adtype);
  ops[1] = act (up, "mf", B->adtype);
  ops[2] = act (prod, "mf", B->adtype);
  if (!add_op (B, n_mul, "mul", ELK_OP_ELEMENTWISE, L, "mf,mf->mf", ops, 3, 0,
               error))
    return FALSE;
  set_ext (B, 'm', rows);
  set_ext (B, 'k', f);
  set_ext (B, 'n', d);
  if (expert >= 0 ? !expert_weight (B, &w, w_down, "kn", PARTS (fd), error)
                  : !weight (B, &w, w_down, "kn", NULL, PARTS (fd), error))
    return FALSE;
  return mm (B, L, n_down, "mk,kn->mn", act (prod, "mk", B->adtype), w, "mn",
             out, error);
}

/* The router: the gating MatMul (d x E, plus DeepSeek-V3's score bias),
 * the score function (a sigmoid UNARY, or a softmax over the experts) and
 * the top-k (a REDUCE over the experts for each of the k picks: M k E
 * loop points), giving the k gate weights of each token. */
static gboolean
router (Builder *B, guint layer, const char *x, char **gates, GError **error)
{
  const LlamaModel *m = B->m;
  gint L = (gint) layer;
  g_autofree char *p = g_strdup_printf ("blk.%u", layer);
  g_autofree char *n_gate = g_strdup_printf ("%s.ffn_gate_inp", p);
  g_autofree char *f_gate = g_strdup_printf ("%s.weight", n_gate);
  g_autofree char *f_bias = g_strdup_printf ("%s.exp_probs_b.bias", p);
  g_autofree char *n_score = g_strdup_printf ("%s.ffn_router_score", p);
  g_autofree char *n_topk = g_strdup_printf ("%s.ffn_topk", p);
  g_autofree char *logits = NULL, *scores = NULL, *scores_k = NULL;
  g_autofree char *y = g_strdup_printf ("%s.out", n_topk);
  Operand ops[2];

  if (!linear (B, L, n_gate, x, B->M, m->hidden, m->n_experts, NULL,
               PARTS (f_gate), m->router_bias ? PARTS (f_bias) : NULL, &logits,
               error))
    return FALSE;
  set_ext (B, 'm', B->M);
  set_ext (B, 'e', m->n_experts);
  set_ext (B, 'j', m->n_experts_used);
  /* A softmax normalises over the experts: max, exp, sum and divide, as
   * in attention, so that a plan splitting the experts is charged for
   * combining them (one same-shape UNARY would hide that reduction, and
   * the emulator's functional mode could not run it split). */
  if (m->router_sigmoid
          ? !unary (B, L, n_score, "sigmoid", logits, "me", &scores, error)
          : !softmax (B, L, n_score, logits, "me", "m", &scores, error))
    return FALSE;
  scores_k = view_of (B, scores, "picks");
  ops[0] = act (scores_k, "mje", B->adtype);
  ops[1] = act (y, "mj", B->adtype);
  if (!add_op (B, n_topk, "top-k", ELK_OP_REDUCE, L, "mje->mj", ops, 2, 0,
               error))
    return FALSE;
  *gates = g_steal_pointer (&y);
  return TRUE;
}

/* experts=all: the per-token inclusion probabilities of @layer's experts
 * into B->inclusion.  Layers with the same routing weights (every layer of
 * a uniform or skewed model) share them, so the enumeration or Monte
 * Carlo run is done once. */
static void
update_inclusion (Builder *B, guint layer)
{
  guint64 E = B->m->n_experts;

  if (B->inclusion_layer != G_MAXUINT
      && memcmp (elk__llama_routing_weights (B->routing, B->inclusion_layer),
                 elk__llama_routing_weights (B->routing, layer),
                 E * sizeof (double))
             == 0)
    return;
  if (!elk__llama_routing_inclusion (B->routing, layer,
                                     LLAMA_ROUTING_MAX_SEQUENCES, B->inclusion))
    B->inclusion_estimated = TRUE;
  B->inclusion_layer = layer;
}

/* experts=all: marks the operators @first.. (one routed expert's) as run
 * only when the layer's top-k @topk selects the expert: with probability
 * 1 - (1 - p)^M that at least one of the step's M independent tokens
 * picks it, p its per-token inclusion probability, and taken when the
 * sampled routing gave it @tokens > 0 tokens. */
static gboolean
mark_conditional (Builder *B,
                  guint32 topk,
                  guint32 first,
                  guint64 expert,
                  guint64 tokens,
                  GError **error)
{
  double p = B->inclusion[expert];
  double prob = p >= 1.0 ? 1.0 : 1.0 - pow (1.0 - p, (double) B->M);

  for (guint32 op = first; op < elk_graph_get_n_ops (B->graph); op++)
    {
      if (!elk_graph_set_op_condition (B->graph, op, topk, prob, tokens > 0,
                                       error))
        return FALSE;
      B->conditional_ops++;
      B->conditional_taken += tokens > 0;
    }
  return TRUE;
}

/* An MoE FFN: the router, the routed experts that the sampled routing
 * uses (each on the rows of the tokens routed to it, its output weighted
 * by their gates), their combination per token, and the shared experts
 * on every token (Qwen2-MoE gates them with a sigmoid). */
static gboolean
moe_ffn (Builder *B, guint layer, const char *x, char **out, GError **error)
{
  const LlamaModel *m = B->m;
  gint L = (gint) layer;
  guint64 d = m->hidden;
  g_autofree char *p = g_strdup_printf ("blk.%u", layer);
  g_autofree char *n_comb = g_strdup_printf ("%s.ffn_moe_combine", p);
  g_autofree char *routed = g_strdup_printf ("%s.ffn_moe.routed", p);
  g_autofree char *comb = g_strdup_printf ("%s.out", n_comb);
  g_autofree char *gates = NULL;
  Operand ops[3];

  gboolean all = B->o->experts == LLAMA_EXPERTS_ALL;
  guint32 topk;

  if (!router (B, layer, x, &gates, error))
    return FALSE;
  /* The router's last operator is its top-k, which picks the experts. */
  topk = elk_graph_get_n_ops (B->graph) - 1;
  B->experts_loaded += elk__llama_routing_sample (B->routing, layer, B->M,
                                                  B->rand, B->expert_tokens);
  B->moe_layers++;
  if (all)
    update_inclusion (B, layer);
  for (guint64 e = 0; e < m->n_experts; e++)
    {
      /* With experts=all an expert no token picked is built for one row:
       * it never executes, only its weights (what a speculative preload
       * streams) matter. */
      guint64 t = B->expert_tokens[e], rows_built = t > 0 ? t : 1;
      guint32 first = elk_graph_get_n_ops (B->graph);
      g_autofree char *prefix = NULL, *rows = NULL, *y = NULL;
      g_autofree char *n_w = NULL, *g_rows = NULL, *yw = NULL;
      if (t == 0 && !all)
        continue;
      prefix = g_strdup_printf ("%s.ffn_exp%" G_GUINT64_FORMAT, p, e);
      rows = g_strdup_printf ("%s.exp%" G_GUINT64_FORMAT, x, e);
      if (!gated_ffn (B, L, prefix, rows, rows_built, m->expert_ffn, (gint) e,
                      &y, error))
        return FALSE;
      /* Each row scaled by its token's gate for this expert. */
      n_w = g_strdup_printf ("%s.weigh", prefix);
      g_rows = g_strdup_printf ("%s.exp%" G_GUINT64_FORMAT, gates, e);
      yw = g_strdup_printf ("%s.out", n_w);
      set_ext (B, 'm', rows_built);
      set_ext (B, 'k', d);
      ops[0] = act (y, "mk", B->adtype);
      ops[1] = act (g_rows, "m", B->adtype);
      ops[2] = act (yw, "mk", B->adtype);
      if (!add_op (B, n_w, "mul", ELK_OP_ELEMENTWISE, L, "mk,m->mk", ops, 3, 0,
                   error))
        return FALSE;
      if (all && !mark_conditional (B, topk, first, e, t, error))
        return FALSE;
    }
  /* The k weighted outputs of each token, summed: the experts' rows
   * scattered back to token order are a free view. */
  set_ext (B, 'm', B->M);
  set_ext (B, 'j', m->n_experts_used);
  set_ext (B, 'k', d);
  ops[0] = act (routed, "mjk", B->adtype);
  ops[1] = act (comb, "mk", B->adtype);
  if (!add_op (B, n_comb, "sum", ELK_OP_REDUCE, L, "mjk->mk", ops, 2, 0, error))
    return FALSE;
  if (m->shared_ffn == 0)
    {
      *out = g_steal_pointer (&comb);
      return TRUE;
    }
  {
    g_autofree char *prefix = g_strdup_printf ("%s.ffn_shexp", p);
    g_autofree char *n_add = g_strdup_printf ("%s.ffn_moe_add", p);
    g_autofree char *sh = NULL;
    if (!gated_ffn (B, L, prefix, x, B->M, m->shared_ffn, -1, &sh, error))
      return FALSE;
    if (m->shared_gate)
      {
        g_autofree char *n_g = g_strdup_printf ("%s.ffn_shexp_gate", p);
        g_autofree char *f_g
            = g_strdup_printf ("%s.ffn_gate_inp_shexp.weight", p);
        g_autofree char *n_sig = g_strdup_printf ("%s.ffn_shexp_sigmoid", p);
        g_autofree char *n_mul = g_strdup_printf ("%s.ffn_shexp_scale", p);
        g_autofree char *logit = NULL, *sig = NULL;
        g_autofree char *scaled = g_strdup_printf ("%s.out", n_mul);
        if (!linear (B, L, n_g, x, B->M, d, 1, NULL, PARTS (f_g), NULL, &logit,
                     error))
          return FALSE;
        set_ext (B, 'm', B->M);
        if (!unary (B, L, n_sig, "sigmoid", logit, "m", &sig, error))
          return FALSE;
        set_ext (B, 'k', d);
        ops[0] = act (sh, "mk", B->adtype);
        ops[1] = act (sig, "m", B->adtype);
        ops[2] = act (scaled, "mk", B->adtype);
        if (!add_op (B, n_mul, "mul", ELK_OP_ELEMENTWISE, L, "mk,m->mk", ops, 3,
                     0, error))
          return FALSE;
        g_free (sh);
        sh = g_steal_pointer (&scaled);
      }
    set_ext (B, 'm', B->M);
    set_ext (B, 'k', d);
    return add2 (B, L, n_add, "mk", comb, sh, out, error);
  }
}

static gboolean
ffn (Builder *B, guint layer, const char *x, char **out, GError **error)
{
  const LlamaModel *m = B->m;
  gint L = (gint) layer;
  g_autofree char *p = g_strdup_printf ("blk.%u", layer);
  guint64 d = m->hidden;
  guint64 up = m->up_out ? m->up_out : (m->gated ? 2 : 1) * m->ffn;
  guint64 half = m->gated ? up / 2 : up;
  guint64 down_in = m->down_in ? m->down_in : m->ffn;
  g_autofree char *fg = g_strdup_printf ("%s.ffn_gate.weight", p);
  g_autofree char *fu = g_strdup_printf ("%s.ffn_up.weight", p);
  g_autofree char *fd = g_strdup_printf ("%s.ffn_down.weight", p);
  g_autofree char *bu = g_strdup_printf ("%s.ffn_up.bias", p);
  g_autofree char *bd = g_strdup_printf ("%s.ffn_down.bias", p);
  g_autofree char *h = NULL, *a = NULL, *gate = NULL, *upv = NULL;
  g_autofree char *prod = NULL, *down_x = NULL;

  if (elk__llama_model_is_moe_layer (m, layer))
    return moe_ffn (B, layer, x, out, error);
  if (!m->gated)
    {
      g_autofree char *pname = g_strdup_printf ("%s.ffn_up", p);
      g_autofree char *aname = g_strdup_printf ("%s.ffn_act", p);
      if (!linear (B, L, pname, x, B->M, d, up, NULL, PARTS (fu),
                   m->bias_ffn ? PARTS (bu) : NULL, &h, error))
        return FALSE;
      set_ext (B, 'm', B->M);
      set_ext (B, 'f', up);
      if (!unary (B, L, aname, act_name (m->act), h, "mf", &a, error))
        return FALSE;
      prod = g_steal_pointer (&a);
    }
  else
    {
      g_autofree char *aname = g_strdup_printf ("%s.ffn_act", p);
      g_autofree char *mname = g_strdup_printf ("%s.ffn_mul", p);
      Operand ops[3];

      if (B->o->fuse_ffn)
        {
          g_autofree char *pname = g_strdup_printf ("%s.ffn_gate_up", p);
          const char *both[] = { fg, fu, NULL }, *up_only[] = { fu, NULL };
          const char *const *parts = both;
          /* Phi-3 stores gate and up as one ffn_up of twice the width. */
          if (m->gguf != NULL && elk__gguf_find_tensor (m->gguf, fg) == NULL)
            parts = up_only;
          if (!linear (B, L, pname, x, B->M, d, up, NULL, parts, NULL, &h,
                       error))
            return FALSE;
          if (B->artifact)
            return ffn_artifact (B, layer, h, up, down_in, out, error);
          gate = view_of (B, h, "gate");
          upv = view_of (B, h, "up");
        }
      else
        {
          g_autofree char *gname = g_strdup_printf ("%s.ffn_gate", p);
          g_autofree char *uname = g_strdup_printf ("%s.ffn_up", p);
          if (!linear (B, L, gname, x, B->M, d, half, fu, PARTS (fg), NULL,
                       &gate, error)
              || !linear (B, L, uname, x, B->M, d, half, fu, PARTS (fu),
                          NULL, &upv, error))
            return FALSE;
        }
      set_ext (B, 'm', B->M);
      set_ext (B, 'f', half);
      if (!unary (B, L, aname, act_name (m->act), gate, "mf", &a, error))
        return FALSE;
      prod = g_strdup_printf ("%s.out", mname);
      ops[0] = act (a, "mf", B->adtype);
      ops[1] = act (upv, "mf", B->adtype);
      ops[2] = act (prod, "mf", B->adtype);
      if (!add_op (B, mname, "mul", ELK_OP_ELEMENTWISE, L, "mf,mf->mf", ops,
                   3, 0, error))
        return FALSE;
    }

  /* The paper's Gemma2 and Llama2-70B graphs have a down projection wider
   * than the activation before it; it then reads a view of that width. */
  down_x = down_in == half ? g_strdup (prod) : view_of (B, prod, "rows");
  {
    g_autofree char *pname = g_strdup_printf ("%s.ffn_down", p);
    return linear (B, L, pname, down_x, B->M, down_in, d, NULL, PARTS (fd),
                   m->bias_ffn ? PARTS (bd) : NULL, out, error);
  }
}

static gboolean
layer (Builder *B, guint l, const char *x, char **out, GError **error)
{
  const LlamaModel *m = B->m;
  gint L = (gint) l;
  g_autofree char *p = g_strdup_printf ("blk.%u", l);
  g_autofree char *n1 = g_strdup_printf ("%s.attn_norm", p);
  g_autofree char *n2 = g_strdup_printf ("%s.ffn_norm", p);
  g_autofree char *n1f = g_strdup_printf ("%s.attn_norm", p);
  g_autofree char *n2f = g_strdup_printf ("%s.ffn_norm", p);
  g_autofree char *r1 = g_strdup_printf ("%s.attn_residual", p);
  g_autofree char *r2 = g_strdup_printf ("%s.ffn_residual", p);
  g_autofree char *h = NULL, *a = NULL, *s = NULL, *h2 = NULL, *f = NULL;
  g_autofree char *tmp = NULL;

  if (m->post_ln)
    {
      /* BERT: x = norm (x + attn (x)); x = norm (x + ffn (x)). */
      if (!attention (B, l, x, &a, error)
          || !residual (B, L, r1, x, a, &s, error)
          || !norm (B, L, n1, n1f, s, B->M, &h, error)
          || !ffn (B, l, h, &f, error)
          || !residual (B, L, r2, h, f, &tmp, error)
          || !norm (B, L, n2, n2f, tmp, B->M, out, error))
        return FALSE;
      return TRUE;
    }

  if (!norm (B, L, n1, n1f, x, B->M, &h, error))
    return FALSE;
  if (m->parallel)
    {
      /* Falcon: attention and FFN both read the one norm. */
      if (!attention (B, l, h, &a, error) || !ffn (B, l, h, &f, error)
          || !residual (B, L, r1, x, a, &s, error)
          || !residual (B, L, r2, s, f, out, error))
        return FALSE;
      return TRUE;
    }
  if (!attention (B, l, h, &a, error))
    return FALSE;
  if (m->post_norms)
    {
      g_autofree char *pn = g_strdup_printf ("%s.post_attention_norm", p);
      g_autofree char *normed = NULL;
      if (!norm (B, L, pn, pn, a, B->M, &normed, error))
        return FALSE;
      g_free (a);
      a = g_steal_pointer (&normed);
    }
  if (!residual (B, L, r1, x, a, &s, error)
      || !norm (B, L, n2, n2f, s, B->M, &h2, error)
      || !ffn (B, l, h2, &f, error))
    return FALSE;
  if (m->post_norms)
    {
      g_autofree char *pn = g_strdup_printf ("%s.post_ffw_norm", p);
      g_autofree char *normed = NULL;
      if (!norm (B, L, pn, pn, f, B->M, &normed, error))
        return FALSE;
      g_free (f);
      f = g_steal_pointer (&normed);
    }
  return residual (B, L, r2, s, f, out, error);
}

/* ------------------------------------------------------------------ */
/* Embeddings and head                                                  */
/* ------------------------------------------------------------------ */

/* A gather streams one table row per token from HBM: the rows read are a
 * weight tensor of M rows, with the table's row size in bytes. */
static gboolean
gather (Builder *B, const char *name, const char *ids, const char *file,
        guint64 table_rows, char **out, GError **error)
{
  g_autofree char *rows = g_strdup_printf ("%s.rows", name);
  g_autofree char *y = g_strdup_printf ("%s.out", name);
  Operand ops[3];
  ElkDType dtype;
  guint64 bytes;

  if (!weight_storage (B, table_rows * B->m->hidden, NULL, PARTS (file),
                       &dtype, &bytes, error))
    return FALSE;
  if (bytes != 0)
    bytes = bytes / table_rows * B->M;
  set_ext (B, 'm', B->M);
  set_ext (B, 'k', B->m->hidden);
  ops[0] = (Operand) { ids, "m", ELK_TENSOR_ORIGIN_ACTIVATION,
                       ELK_DTYPE_I32, 0 };
  ops[1] = (Operand) { rows, "mk", ELK_TENSOR_ORIGIN_WEIGHT, dtype, bytes };
  ops[2] = act (y, "mk", B->adtype);
  if (!add_op (B, name, "gather", ELK_OP_GATHER, -1, "m,mk->mk", ops, 3, 0,
               error))
    return FALSE;
  *out = g_steal_pointer (&y);
  return TRUE;
}

static gboolean
embeddings (Builder *B, char **out, GError **error)
{
  const LlamaModel *m = B->m;
  g_autofree char *x = NULL;

  if (m->patch_in != 0)
    {
      /* ViT: the patch projection is a MatMul over flattened patches (a
       * stride-p convolution with non-overlapping windows), then the
       * position table is added to every image ([CLS] is a free concat). */
      guint64 T = m->n_patches + 1;
      g_autofree char *h = NULL;
      Operand ops[3];
      if (!linear (B, -1, "patch_embd", "patches", B->b * m->n_patches,
                   m->patch_in, m->hidden, NULL, PARTS ("patch_embd.weight"),
                   PARTS ("patch_embd.bias"), &h, error))
        return FALSE;
      set_ext (B, 'b', B->b);
      set_ext (B, 't', T);
      set_ext (B, 'k', m->hidden);
      ops[0] = act ("embd.tokens", "btk", B->adtype);
      if (!weight (B, &ops[1], "position_embd.weight", "tk", NULL,
                   PARTS ("position_embd.weight"), error))
        return FALSE;
      ops[2] = act ("position_add.out", "btk", B->adtype);
      if (!add_op (B, "position_add", "add", ELK_OP_ELEMENTWISE, -1,
                   "btk,tk->btk", ops, 3, 0, error))
        return FALSE;
      *out = g_strdup ("position_add.out.rows");
      return TRUE;
    }

  if (!gather (B, "token_embd", "tokens", "token_embd.weight", m->vocab, &x,
               error))
    return FALSE;
  if (m->n_positions != 0)
    {
      g_autofree char *pos = NULL, *sum = NULL;
      if (!gather (B, "position_embd", "positions", "position_embd.weight",
                   m->n_positions, &pos, error)
          || !residual (B, -1, "position_add", x, pos, &sum, error))
        return FALSE;
      g_free (x);
      x = g_steal_pointer (&sum);
    }
  if (m->n_token_types != 0)
    {
      g_autofree char *typ = NULL, *sum = NULL;
      if (!gather (B, "token_types", "token_type_ids", "token_types.weight",
                   m->n_token_types, &typ, error)
          || !residual (B, -1, "token_type_add", x, typ, &sum, error))
        return FALSE;
      g_free (x);
      x = g_steal_pointer (&sum);
    }
  if (m->post_ln)
    {
      g_autofree char *normed = NULL;
      if (!norm (B, -1, "token_embd_norm", "token_embd_norm", x, B->M,
                 &normed, error))
        return FALSE;
      g_free (x);
      x = g_steal_pointer (&normed);
    }
  *out = g_steal_pointer (&x);
  return TRUE;
}

static gboolean
head (Builder *B, const char *x, GError **error)
{
  const LlamaModel *m = B->m;
  g_autofree char *rows = NULL, *normed = NULL, *logits = NULL;

  /* Prefill needs the logits of the last token of each sequence only, and
   * the encoders classify from [CLS]: those rows are a view. */
  rows = B->R == B->M ? g_strdup (x) : g_strdup_printf ("%s.last", x);

  if (m->pooler)
    {
      g_autofree char *pooled = NULL;
      if (!linear (B, -1, "pooler", rows, B->R, m->hidden, m->hidden, NULL,
                   PARTS ("pooler.weight"), PARTS ("pooler.bias"), &pooled,
                   error))
        return FALSE;
      set_ext (B, 'm', B->R);
      set_ext (B, 'k', m->hidden);
      return unary (B, -1, "pooler_tanh", "tanh", pooled, "mk", &logits,
                    error);
    }
  if (!norm (B, -1, "output_norm", "output_norm", rows, B->R, &normed,
             error))
    return FALSE;
  if (m->patch_in != 0)
    return linear (B, -1, "cls_head", normed, B->R, m->hidden, m->n_classes,
                   NULL, PARTS ("cls_head.weight"), PARTS ("cls_head.bias"),
                   &logits, error);
  if (m->tied)
    {
      /* The head reads the token embedding: name the tensor after it. */
      Operand ops[3];
      set_ext (B, 'm', B->R);
      set_ext (B, 'k', m->hidden);
      set_ext (B, 'n', m->vocab);
      ops[0] = act (normed, "mk", B->adtype);
      if (!weight (B, &ops[1], "token_embd.weight", "kn", NULL,
                   PARTS ("token_embd.weight"), error))
        return FALSE;
      ops[2] = act ("output.out", "mn", B->adtype);
      return add_op (B, "output", "matmul", ELK_OP_MATMUL, -1, "mk,kn->mn",
                     ops, 3, 0, error);
    }
  return linear (B, -1, "output", normed, B->R, m->hidden, m->vocab, NULL,
                 PARTS ("output.weight"), NULL, &logits, error);
}

/* ------------------------------------------------------------------ */
/* Entry point                                                          */
/* ------------------------------------------------------------------ */

static void
set_attr_u64 (ElkGraph *graph, const char *key, guint64 value)
{
  g_autofree char *text = g_strdup_printf ("%" G_GUINT64_FORMAT, value);
  elk_graph_set_attribute (graph, key, text);
}

static gboolean
setup (Builder *B, GError **error)
{
  const LlamaModel *m = B->m;
  const LlamaBuildOptions *o = B->o;
  gint split;

  B->phase = o->phase;
  if (m->encoder && o->phase == LLAMA_PHASE_DECODE)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: '%s' is an encoder (no KV cache, nothing to "
                   "decode); use phase=prefill for one forward pass or "
                   "phase=train-forward",
                   m->source, m->name);
      return FALSE;
    }
  if (o->batch == 0)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "batch must be at least 1");
      return FALSE;
    }
  B->layers = o->layers == 0 ? m->n_layers : o->layers;
  if (B->layers > m->n_layers)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: layers=%u but the model has only %u layers", m->source,
                   o->layers, m->n_layers);
      return FALSE;
    }

  /* Sequence length: the KV length in decode, the tokens per sequence
   * otherwise.  A ViT always sees its patches plus [CLS]. */
  if (m->patch_in != 0)
    {
      guint64 T = m->n_patches + 1;
      if (o->seq != 0 && o->seq != T)
        {
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                       "%s: '%s' processes %" G_GUINT64_FORMAT " tokens per "
                       "image; set seq=%" G_GUINT64_FORMAT " or leave it at "
                       "0",
                       m->source, m->name, T, T);
          return FALSE;
        }
      B->S = T;
    }
  else if (o->seq == 0)
    B->S = m->encoder ? m->context : MIN (LLAMA_DEFAULT_SEQ, m->context);
  else
    B->S = o->seq;
  if (m->context != 0 && B->S > m->context)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: seq=%" G_GUINT64_FORMAT " exceeds the model's "
                   "context length %" G_GUINT64_FORMAT,
                   m->source, B->S, m->context);
      return FALSE;
    }
  B->b = o->batch;
  B->t = o->phase == LLAMA_PHASE_DECODE ? 1 : B->S;
  B->M = B->b * B->t;
  if (m->encoder)
    B->R = B->b;
  else
    B->R = o->phase == LLAMA_PHASE_PREFILL ? B->b : B->M;

  switch (o->dtype)
    {
    case LLAMA_DTYPE_FILE:
      B->file_types = TRUE;
      B->wdtype = ELK_DTYPE_F16;
      B->adtype = ELK_DTYPE_F16;
      break;
    case LLAMA_DTYPE_BF16:
      B->wdtype = B->adtype = ELK_DTYPE_BF16;
      break;
    case LLAMA_DTYPE_FP32:
      B->wdtype = B->adtype = ELK_DTYPE_F32;
      break;
    case LLAMA_DTYPE_FP16:
    default:
      B->wdtype = B->adtype = ELK_DTYPE_F16;
      break;
    }

  if (o->granularity == LLAMA_GRANULARITY_ARTIFACT)
    {
      /* The artifact's layer is known operator by operator only for its
       * Llama-structured decode graphs (TExpr_llama2-13/-70, gemma2). */
      const char *why = NULL;
      if (o->phase != LLAMA_PHASE_DECODE)
        why = "phase is not decode";
      else if (m->norm != LLAMA_NORM_RMS)
        why = "it uses LayerNorm, not RMSNorm";
      else if (m->n_positions != 0 || m->patch_in != 0)
        why = "it has no RoPE";
      else if (!m->gated)
        why = "its FFN is not gated";
      else if (m->post_ln || m->parallel || m->post_norms)
        why = "its layer is not Llama-structured (post-norms, parallel "
              "attention and FFN, or post-LN)";
      else if (m->bias_qkv || m->bias_o || m->bias_ffn)
        why = "it has projection biases";
      else if (!o->fuse_qkv || !o->fuse_ffn)
        why = "fuse-qkv and fuse-ffn must be true (the artifact's graphs "
              "slice fused projections)";
      else if (m->n_experts != 0 || m->kv_lora_rank != 0 || m->qk_norm)
        why = "it has experts, latent attention or query/key norms, which "
              "the artifact's graphs never had";
      if (why != NULL)
        {
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                       "%s: granularity=artifact reproduces the Elk "
                       "artifact's decode graphs of Llama-structured models "
                       "(RMSNorm, RoPE, fused QKV and gated FFN, no biases), "
                       "but for '%s' %s",
                       m->source, m->name, why);
          return FALSE;
        }
      B->artifact = TRUE;
    }

  split = o->split_factor < 0 ? m->default_split_factor : o->split_factor;
  if (split > 0)
    {
      /* The artifact's training graphs use split_factor + 1. */
      guint divisor
          = (guint) split + (o->phase == LLAMA_PHASE_TRAIN_FORWARD ? 1 : 0);
      guint mb = o->split_cores / divisor;
      if (mb == 0)
        {
          g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                       "split-cores=%u / split factor %u leaves a threshold "
                       "of 0 MB",
                       o->split_cores, divisor);
          return FALSE;
        }
      B->cap = (guint64) mb * 1024 * 1024 / 2;
    }
  return TRUE;
}

/**
 * elk__llama_build_graph:
 *
 * Returns: (transfer full) (nullable): the graph of one pass of @model.
 */
ElkGraph *
elk__llama_build_graph (const LlamaModel *model,
                        const LlamaBuildOptions *options,
                        GError **error)
{
  Builder B = { 0 };
  g_autoptr (ElkGraph) graph = NULL;
  g_autoptr (GHashTable) views = NULL;
  g_autoptr (GPtrArray) prev = NULL;
  g_autoptr (LlamaRoutingTable) routing = NULL;
  g_autoptr (GRand) rand = NULL;
  g_autofree guint64 *expert_tokens = NULL;
  g_autofree double *inclusion = NULL;
  g_autofree char *x = NULL;
  guint64 weight_bytes = 0, kv_bytes = 0;
  gint split;

  B.m = model;
  B.o = options;
  if (!setup (&B, error))
    return NULL;

  if (model->n_experts != 0)
    {
      /* The routing of this graph: one draw of the routing model, the
       * same for the same seed (elk-llama-routing.c). */
      guint32 seed[2] = { (guint32) options->routing_seed,
                          (guint32) (options->routing_seed >> 32) };
      routing = elk__llama_routing_new (model, options, error);
      if (routing == NULL)
        return NULL;
      rand = g_rand_new_with_seed_array (seed, 2);
      expert_tokens = g_new0 (guint64, model->n_experts);
      B.routing = routing;
      B.rand = rand;
      B.expert_tokens = expert_tokens;
      inclusion = g_new0 (double, model->n_experts);
      B.inclusion = inclusion;
      B.inclusion_layer = G_MAXUINT;
    }
  else if (options->experts != LLAMA_EXPERTS_ROUTED)
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: '%s' has no experts, so experts=all does not "
                   "apply; remove it",
                   model->source, model->name);
      return NULL;
    }
  else if (options->routing != LLAMA_ROUTING_UNIFORM
           || (options->routing_file != NULL && *options->routing_file))
    {
      g_set_error (error, LLAMA_ERROR, LLAMA_ERROR_INVALID,
                   "%s: '%s' has no experts, so the routing parameters "
                   "(routing, routing-file) do not apply; remove them",
                   model->source, model->name);
      return NULL;
    }

  graph = elk_graph_new (model->name);
  B.graph = graph;
  if (B.artifact)
    {
      views = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
      prev = g_ptr_array_new_with_free_func (g_free);
      B.views = views;
      B.prev = prev;
    }

  if (!embeddings (&B, &x, error))
    return NULL;
  for (guint l = 0; l < B.layers; l++)
    {
      g_autofree char *y = NULL;
      if (!layer (&B, l, x, &y, error))
        return NULL;
      g_free (x);
      x = g_steal_pointer (&y);
    }
  if (!head (&B, x, error))
    return NULL;
  if (!elk_graph_validate (graph, error))
    return NULL;

  for (guint i = 0; i < elk_graph_get_n_tensors (graph); i++)
    {
      const ElkTensor *t = elk_graph_get_tensor (graph, i);
      if (t->origin == ELK_TENSOR_ORIGIN_WEIGHT)
        weight_bytes += t->bytes;
      else if (t->origin == ELK_TENSOR_ORIGIN_KV_CACHE)
        kv_bytes += t->bytes;
    }

  split = options->split_factor < 0 ? model->default_split_factor
                                    : options->split_factor;
  elk_graph_set_attribute (graph, "model", model->name);
  elk_graph_set_attribute (graph, "arch", model->arch);
  elk_graph_set_attribute (graph, "phase",
                           elk__llama_phase_to_string (options->phase));
  set_attr_u64 (graph, "batch", B.b);
  set_attr_u64 (graph, "seq", B.S);
  set_attr_u64 (graph, "tokens", B.M);
  set_attr_u64 (graph, "layers", B.layers);
  set_attr_u64 (graph, "model-layers", model->n_layers);
  set_attr_u64 (graph, "params",
                elk__llama_model_count_params (model, B.layers));
  set_attr_u64 (graph, "weight-bytes", weight_bytes);
  /* The spilled activation copies have origin KV_CACHE (mark_hbm_inputs)
   * but are not the KV cache. */
  set_attr_u64 (graph, "kv-bytes", kv_bytes - B.spill_bytes);
  if (B.artifact)
    {
      elk_graph_set_attribute (graph, "granularity", "artifact");
      set_attr_u64 (graph, "spill-bytes", B.spill_bytes);
      set_attr_u64 (graph, "constant-bytes", B.constant_bytes);
    }
  set_attr_u64 (graph, "hidden", model->hidden);
  set_attr_u64 (graph, "heads", model->n_heads);
  set_attr_u64 (graph, "kv-heads", model->n_kv_heads);
  set_attr_u64 (graph, "head-dim", model->head_dim);
  set_attr_u64 (graph, "ffn", model->ffn);
  set_attr_u64 (graph, "vocab", model->vocab);
  set_attr_u64 (graph, "context", model->context);
  set_attr_u64 (graph, "split-factor", (guint64) MAX (split, 0));
  elk_graph_set_attribute (graph, "dtype",
                           B.file_types ? "file"
                                        : elk_dtype_to_string (B.wdtype));
  if (model->n_experts != 0)
    {
      static const char *const routings[] = { "uniform", "skewed", "file" };
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      set_attr_u64 (graph, "experts", model->n_experts);
      set_attr_u64 (graph, "experts-per-token", model->n_experts_used);
      set_attr_u64 (graph, "shared-ffn", model->shared_ffn);
      set_attr_u64 (graph, "moe-layers", B.moe_layers);
      set_attr_u64 (graph, "experts-loaded", B.experts_loaded);
      set_attr_u64 (graph, "active-params",
                    elk__llama_model_count_active_params (model));
      elk_graph_set_attribute (graph, "routing", routings[options->routing]);
      set_attr_u64 (graph, "routing-seed", options->routing_seed);
      /* experts=routed graphs keep exactly the attributes they had. */
      if (options->experts == LLAMA_EXPERTS_ALL)
        {
          elk_graph_set_attribute (graph, "experts-built", "all");
          set_attr_u64 (graph, "conditional-ops", B.conditional_ops);
          set_attr_u64 (graph, "conditional-ops-taken", B.conditional_taken);
          elk_graph_set_attribute (graph, "expert-probabilities",
                                   B.inclusion_estimated ? "monte-carlo"
                                                         : "exact");
        }
      if (options->routing == LLAMA_ROUTING_UNIFORM)
        elk_graph_set_attribute (
            graph, "expected-experts-per-layer",
            g_ascii_formatd (buf, sizeof (buf), "%.6f",
                             elk__llama_routing_expected_distinct_uniform (
                                 model->n_experts, model->n_experts_used,
                                 B.M)));
    }
  if (model->kv_lora_rank != 0)
    {
      set_attr_u64 (graph, "kv-lora-rank", model->kv_lora_rank);
      elk_graph_set_attribute (graph, "mla-form",
                               options->mla_absorb
                                       && options->phase == LLAMA_PHASE_DECODE
                                   ? "absorbed"
                                   : "plain");
    }
  return g_steal_pointer (&graph);
}
