/* test-ipu-pod-func.c: the "ipu-pod" chip's functional mode against a
 * reference evaluator written here.
 *
 * The emulator runs programs tile by tile on real floats (data
 * distribution, compute-shift steps, rotations, partial-sum reductions);
 * this file evaluates the same graphs the obvious way, in double, one loop
 * nest per operator over the whole iteration space, and compares every
 * operator's gathered output.  Single operators run under every plan and
 * every (preload, execute) pair of their plan tables and some hand-made
 * plans; the tiny Llama-2 GGUF model runs one decode step with its real
 * F16 weights, compiled by the elk scheduler.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <elk/elk.h>
#include "elk-test-util.h"

#include "elk-llama-private.h"

static ElkRegistry *registry;

/* Plugin objects from this test's registry (tests/core/elk-test-util.c). */
#define make(...) elk_test_make (registry, __VA_ARGS__)

/* Two chips of 8 tiles: plans cross chips and rings wrap around them. */
static ElkChip *
func_chip (guint cores)
{
  GObject *chip = make (ELK_TYPE_CHIP, "ipu-pod", "chips", 2, "cores", cores,
                        NULL);
  GParamSpec *ps = g_object_class_find_property (G_OBJECT_GET_CLASS (chip),
                                                 "mode");
  GEnumClass *ec = g_type_class_ref (ps->value_type);
  GEnumValue *ev = g_enum_get_value_by_nick (ec, "functional");

  g_assert_nonnull (ev);
  g_object_set (chip, "mode", ev->value, NULL);
  g_type_class_unref (ec);
  return ELK_CHIP (chip);
}

/* ---- The reference evaluator ---- */

static double
ref_unary (const char *type, double x)
{
  if (!strcmp (type, "relu")) return x > 0 ? x : 0;
  if (!strcmp (type, "silu")) return x / (1 + exp (-x));
  if (!strcmp (type, "gelu")) return 0.5 * x * (1 + erf (x / sqrt (2.0)));
  if (!strcmp (type, "tanh")) return tanh (x);
  if (!strcmp (type, "square")) return x * x;
  if (!strcmp (type, "rsqrt")) return 1 / sqrt (x);
  if (!strcmp (type, "sqrt")) return sqrt (x);
  if (!strcmp (type, "exp")) return exp (x);
  if (!strcmp (type, "sigmoid")) return 1 / (1 + exp (-x));
  g_error ("reference: no unary '%s'", type);
  return 0;
}

static double
ref_binary (const char *type, double a, double b)
{
  if (!strcmp (type, "add") || !strcmp (type, "bias-add")) return a + b;
  if (!strcmp (type, "sub")) return a - b;
  if (!strcmp (type, "mul")) return a * b;
  if (!strcmp (type, "div")) return a / b;
  if (!strcmp (type, "sub-exp")) return exp (a - b);
  g_error ("reference: no binary '%s'", type);
  return 0;
}

/* Evaluates @op over its whole iteration space; @in are its inputs. */
static int
compare_desc (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x > y ? -1 : x < y ? 1 : 0;
}

/* Top-k: every value of the iteration space goes to its output element's
 * list; output element [.., i] is the (i+1)-th largest of its list. */
static double *
ref_topk (const ElkGraph *g, const ElkOp *op, const double *in)
{
  const ElkTensor *ot = elk_graph_get_tensor (g, op->tensors[0]);
  const ElkTensor *it = elk_graph_get_tensor (g, op->tensors[1]);
  double *out = g_new (double, MAX (ot->n_elements, 1));
  g_autofree GArray **rows = g_new0 (GArray *, ot->n_elements);
  guint64 idx[ELK_MAX_DIMS] = { 0 };

  for (guint64 e = 0; e < ot->n_elements; e++)
    rows[e] = g_array_new (FALSE, FALSE, sizeof (double));
  for (;;)
    {
      guint64 fo = 0, fi = 0;
      gint d;
      for (guint x = 0; x < op->access[0].n_axes; x++)
        fo = fo * ot->shape[x] + idx[op->access[0].dims[x][0]];
      for (guint x = 0; x < op->access[1].n_axes; x++)
        fi = fi * it->shape[x] + idx[op->access[1].dims[x][0]];
      g_array_append_val (rows[fo], in[fi]);
      for (d = (gint) op->n_dims - 1; d >= 0; d--)
        {
          if (++idx[d] < op->extents[d])
            break;
          idx[d] = 0;
        }
      if (d < 0)
        break;
    }
  for (guint64 e = 0; e < ot->n_elements; e++)
    {
      guint64 rank = e % ot->shape[ot->n_dims - 1];
      g_array_sort (rows[e], compare_desc);
      g_assert_cmpuint (rank, <, rows[e]->len);
      out[e] = g_array_index (rows[e], double, rank);
      g_array_unref (rows[e]);
    }
  return out;
}

static double *
ref_op (const ElkGraph *g, const ElkOp *op, double *const *in)
{
  const ElkTensor *ot = elk_graph_get_tensor (g, op->tensors[0]);
  double *out = g_new (double, MAX (ot->n_elements, 1));
  guint64 idx[ELK_MAX_DIMS] = { 0 };
  gboolean is_max = op->kind == ELK_OP_REDUCE && !strcmp (op->type, "max");

  if (op->kind == ELK_OP_REDUCE && !strcmp (op->type, "top-k"))
    {
      g_free (out);
      return ref_topk (g, op, in[0]);
    }
  for (guint64 e = 0; e < ot->n_elements; e++)
    out[e] = is_max ? -INFINITY : 0;
  for (;;)
    {
      guint64 f[ELK_MAX_OPERANDS];
      gint d;

      for (guint v = 0; v < op->n_operands; v++)
        {
          const ElkTensor *t = elk_graph_get_tensor (g, op->tensors[v]);
          f[v] = 0;
          for (guint x = 0; x < op->access[v].n_axes; x++)
            f[v] = f[v] * t->shape[x] + idx[op->access[v].dims[x][0]];
        }
      switch (op->kind)
        {
        case ELK_OP_MATMUL:
          out[f[0]] += in[0][f[1]] * in[1][f[2]];
          break;
        case ELK_OP_ELEMENTWISE:
          out[f[0]] = ref_binary (op->type, in[0][f[1]], in[1][f[2]]);
          break;
        case ELK_OP_UNARY:
          out[f[0]] = ref_unary (op->type, in[0][f[1]]);
          break;
        case ELK_OP_REDUCE:
          out[f[0]] = is_max ? MAX (out[f[0]], in[0][f[1]])
                             : out[f[0]] + in[0][f[1]];
          break;
        case ELK_OP_GATHER:
          out[f[0]] = in[op->n_operands - 2][f[op->n_operands - 1]];
          break;
        default:
          g_error ("reference: no kind %d", op->kind);
        }
      for (d = (gint) op->n_dims - 1; d >= 0; d--)
        {
          if (++idx[d] < op->extents[d])
            break;
          idx[d] = 0;
        }
      if (d < 0)
        break;
    }
  return out;
}

typedef GBytes *(*ViewFunc) (const char *name, GHashTable *tensors);

static double *
to_double (GBytes *b, guint64 n)
{
  gsize size;
  const float *f = g_bytes_get_data (b, &size);
  double *d = g_new (double, MAX (n, 1));
  g_assert_cmpuint (size, ==, n * sizeof (float));
  for (guint64 i = 0; i < n; i++)
    d[i] = f[i];
  return d;
}

static GBytes *
from_double (const double *d, guint64 n)
{
  float *f = g_new (float, MAX (n, 1));
  for (guint64 i = 0; i < n; i++)
    f[i] = (float) d[i];
  return g_bytes_new_take (f, n * sizeof (float));
}

/* Runs the whole graph on the reference: inputs (tensors no operator
 * writes) come from @emu, where the emulator recorded what it used, or from
 * @view applied to the reference's own tensors.  Returns the largest error
 * of any operator's output relative to that output's largest magnitude,
 * and checks each against @tol.  With @n_compared, outputs the emulator
 * did not compute are skipped (the emulator ran a fused form of @g) and
 * the outputs compared are counted there. */
static double
compare_graph_part (const ElkGraph *g,
                    GHashTable *emu,
                    ViewFunc view,
                    double tol,
                    const char *what,
                    guint *n_compared)
{
  const guint nt = elk_graph_get_n_tensors (g);
  g_autofree double **val = g_new0 (double *, nt);
  g_autofree gboolean *produced = g_new0 (gboolean, nt);
  g_autoptr(GHashTable) refs = g_hash_table_new_full (
    g_str_hash, g_str_equal, NULL, (GDestroyNotify) g_bytes_unref);
  double worst = 0;
  const char *worst_op = "";

  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    produced[elk_graph_get_op (g, i)->tensors[0]] = TRUE;
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    {
      const ElkOp *op = elk_graph_get_op (g, i);
      const ElkTensor *ot = elk_graph_get_tensor (g, op->tensors[0]);
      double *in[ELK_MAX_OPERANDS] = { NULL };
      GBytes *eb;
      g_autofree double *ev = NULL;
      double scale = 0, err = 0;

      for (guint v = 1; v < op->n_operands; v++)
        {
          guint32 tid = op->tensors[v];
          const ElkTensor *t = elk_graph_get_tensor (g, tid);
          if (val[tid] == NULL)
            {
              GBytes *b = NULL;
              g_assert_false (produced[tid]);
              if (view != NULL)
                b = view (t->name, refs);
              if (b == NULL)
                {
                  GBytes *e = g_hash_table_lookup (emu, t->name);
                  g_assert_nonnull (e);
                  b = g_bytes_ref (e);
                }
              val[tid] = to_double (b, t->n_elements);
              g_hash_table_insert (refs, t->name, b);
            }
          in[v - 1] = val[tid];
        }
      val[op->tensors[0]] = ref_op (g, op, in);
      g_hash_table_insert (refs, ot->name,
                           from_double (val[op->tensors[0]],
                                        ot->n_elements));
      eb = g_hash_table_lookup (emu, ot->name);
      if (eb == NULL && n_compared != NULL)
        continue;
      if (n_compared != NULL)
        (*n_compared)++;
      if (eb == NULL)
        g_error ("%s: the emulator returned no '%s'", what, ot->name);
      ev = to_double (eb, ot->n_elements);
      for (guint64 e = 0; e < ot->n_elements; e++)
        scale = MAX (scale, fabs (val[op->tensors[0]][e]));
      for (guint64 e = 0; e < ot->n_elements; e++)
        {
          double d = fabs (ev[e] - val[op->tensors[0]][e]);
          if (!(d <= tol * MAX (scale, 1e-30)))
            g_error ("%s: operator '%s' element %" G_GUINT64_FORMAT
                     ": emulator %.9g, reference %.9g (scale %.3g)", what,
                     op->name, e, ev[e], val[op->tensors[0]][e], scale);
          err = MAX (err, d / MAX (scale, 1e-30));
        }
      g_assert_cmpfloat (scale, >, 0);
      if (err >= worst)
        {
          worst = err;
          worst_op = op->name;
        }
    }
  g_test_message ("%s: worst relative error %.3g (operator '%s')", what,
                  worst, worst_op);
  for (guint t = 0; t < nt; t++)
    g_free (val[t]);
  return worst;
}

static double
compare_graph (const ElkGraph *g,
               GHashTable *emu,
               ViewFunc view,
               double tol,
               const char *what)
{
  return compare_graph_part (g, emu, view, tol, what, NULL);
}

/* ---- Single operators under many plans ---- */

typedef struct
{
  const char *name;
  const char *type;
  ElkOpKind kind;
  const char *spec;
  const char *extents;  /* "m=5,k=7,n=9" */
  ElkTensorOrigin origin[3]; /* of the inputs, in spec order */
  gboolean positive;    /* inputs must be positive (rsqrt) */
} OpCase;

static const OpCase op_cases[] = {
  { "matmul", "matmul", ELK_OP_MATMUL, "mk,kn->mn", "m=5,k=7,n=9",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_WEIGHT }, FALSE },
  { "matmul-wide", "matmul", ELK_OP_MATMUL, "mk,kn->mn", "m=3,k=13,n=11",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_WEIGHT }, FALSE },
  { "score", "batch-matmul", ELK_OP_MATMUL, "bhqe,bhse->bhqs",
    "b=3,h=2,q=1,s=7,e=5",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_KV_CACHE }, FALSE },
  { "score-gqa", "batch-matmul", ELK_OP_MATMUL, "bhgqe,bhse->bhgqs",
    "b=2,h=2,g=3,q=1,s=5,e=3",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_KV_CACHE }, FALSE },
  { "value", "batch-matmul", ELK_OP_MATMUL, "bhqs,bhse->bhqe",
    "b=3,h=2,q=1,s=7,e=5",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_KV_CACHE }, FALSE },
  { "residual", "add", ELK_OP_ELEMENTWISE, "mk,mk->mk", "m=5,k=9",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_ACTIVATION }, FALSE },
  { "scale", "mul", ELK_OP_ELEMENTWISE, "mk,m->mk", "m=5,k=9",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_ACTIVATION }, FALSE },
  { "gain", "mul", ELK_OP_ELEMENTWISE, "mk,k->mk", "m=5,k=9",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_WEIGHT }, FALSE },
  { "bias", "bias-add", ELK_OP_ELEMENTWISE, "mn,n->mn", "m=3,n=11",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_WEIGHT }, FALSE },
  { "centre", "sub", ELK_OP_ELEMENTWISE, "mk,m->mk", "m=7,k=5",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_ACTIVATION }, FALSE },
  { "softmax-exp", "sub-exp", ELK_OP_ELEMENTWISE, "bhqs,bhq->bhqs",
    "b=3,h=2,q=1,s=7",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_ACTIVATION }, FALSE },
  { "softmax-div", "div", ELK_OP_ELEMENTWISE, "bhqs,bhq->bhqs",
    "b=3,h=2,q=1,s=7",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_ACTIVATION }, TRUE },
  { "silu", "silu", ELK_OP_UNARY, "mf->mf", "m=3,f=13",
    { ELK_TENSOR_ORIGIN_ACTIVATION }, FALSE },
  { "gelu", "gelu", ELK_OP_UNARY, "mf->mf", "m=3,f=13",
    { ELK_TENSOR_ORIGIN_ACTIVATION }, FALSE },
  { "relu", "relu", ELK_OP_UNARY, "n->n", "n=37",
    { ELK_TENSOR_ORIGIN_WEIGHT }, FALSE },
  { "square", "square", ELK_OP_UNARY, "mk->mk", "m=5,k=7",
    { ELK_TENSOR_ORIGIN_ACTIVATION }, FALSE },
  { "rsqrt", "rsqrt", ELK_OP_UNARY, "m->m", "m=11",
    { ELK_TENSOR_ORIGIN_ACTIVATION }, TRUE },
  { "tanh", "tanh", ELK_OP_UNARY, "mk->mk", "m=3,k=5",
    { ELK_TENSOR_ORIGIN_ACTIVATION }, FALSE },
  { "rowsum", "sum", ELK_OP_REDUCE, "mk->m", "m=5,k=19",
    { ELK_TENSOR_ORIGIN_ACTIVATION }, FALSE },
  { "softmax-max", "max", ELK_OP_REDUCE, "bhqs->bhq", "b=3,h=2,q=1,s=13",
    { ELK_TENSOR_ORIGIN_ACTIVATION }, FALSE },
  { "softmax-sum", "sum", ELK_OP_REDUCE, "bhqs->bhq", "b=3,h=2,q=1,s=13",
    { ELK_TENSOR_ORIGIN_ACTIVATION }, FALSE },
  { "embed", "gather", ELK_OP_GATHER, "m,mk->mk", "m=5,k=9",
    { ELK_TENSOR_ORIGIN_ACTIVATION, ELK_TENSOR_ORIGIN_WEIGHT }, FALSE },
};

static guint64
letter_extent (const char *extents, char letter)
{
  g_auto(GStrv) parts = g_strsplit (extents, ",", -1);
  for (guint i = 0; parts[i] != NULL; i++)
    if (parts[i][0] == letter)
      return g_ascii_strtoull (parts[i] + 2, NULL, 10);
  g_error ("no extent for '%c' in %s", letter, extents);
  return 0;
}

static ElkGraph *
op_graph (const OpCase *c)
{
  g_autoptr(GError) error = NULL;
  ElkGraph *g = elk_graph_new (c->name);
  g_auto(GStrv) sides = g_strsplit (c->spec, "->", 2);
  g_auto(GStrv) ins = g_strsplit (sides[0], ",", -1);
  guint32 ts[ELK_MAX_OPERANDS];
  guint n = g_strv_length (ins);

  for (guint i = 0; i <= n; i++)
    {
      const char *axes = i < n ? ins[i] : sides[1];
      guint64 shape[ELK_MAX_DIMS];
      char name[64];
      gint t;
      for (guint a = 0; axes[a]; a++)
        shape[a] = letter_extent (c->extents, axes[a]);
      g_snprintf (name, sizeof (name), i < n ? "%s.in%u" : "%s.out",
                  c->name, i);
      t = elk_graph_add_tensor (g, name, ELK_DTYPE_F16,
                                i < n ? c->origin[i]
                                      : ELK_TENSOR_ORIGIN_ACTIVATION,
                                (guint) strlen (axes), shape, 0, &error);
      g_assert_no_error (error);
      ts[i] = (guint32) t;
    }
  elk_graph_add_op (g, c->name, c->type, c->kind, -1, c->spec, ts, n + 1,
                    NULL, &error);
  g_assert_no_error (error);
  return g;
}

/* Positive data for operators that need it (rsqrt, div). */
static GHashTable *
positive_inputs (ElkGraph *g)
{
  GHashTable *h = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                         (GDestroyNotify) g_bytes_unref);
  const ElkOp *op = elk_graph_get_op (g, 0);

  for (guint v = 1; v < op->n_operands; v++)
    {
      const ElkTensor *t = elk_graph_get_tensor (g, op->tensors[v]);
      float *f = g_new (float, t->n_elements);
      for (guint64 i = 0; i < t->n_elements; i++)
        f[i] = 0.25f + (float) ((i * 7919 + v * 31) % 97) / 16.0f;
      g_hash_table_insert (h, g_strdup (t->name),
                           g_bytes_new_take (f, t->n_elements * 4));
    }
  return h;
}

static void
plan_pattern (const ElkOp *op, const ElkPlan *p, GString *s)
{
  for (guint d = 0; d < op->n_dims; d++)
    for (guint v = 0; v < op->n_operands; v++)
      if (p->temporal[d][v] > 1)
        g_string_append_printf (s, "%u%c%u ", v, op->dim_names[d],
                                p->temporal[d][v]);
}

/* Runs the one-operator graph @g with (@hot, @cold) and compares. */
static double
run_one (ElkChip *chip, ElkGraph *g, const ElkPlan *hot, const ElkPlan *cold,
         const char *what)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkProgram) p = elk_program_new (g);
  g_autoptr(ElkMetrics) m = NULL;
  g_autoptr(GHashTable) tensors = NULL;
  ElkProgramOp *pop = elk_program_get_op (p, 0);

  pop->exec_plan = *hot;
  pop->preload_plan = *cold;
  if (elk_op_get_hbm_bytes (g, elk_graph_get_op (g, 0)) > 0)
    elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  m = elk_test_run_program (chip, p, NULL, &error);
  if (error != NULL)
    g_error ("%s: %s", what, error->message);
  g_object_get (chip, "last-tensors", &tensors, NULL);
  g_assert_nonnull (tensors);
  return compare_graph (g, tensors, NULL, 1e-5, what);
}

/* Every plan of the table (preloaded in its own layout) and every
 * (preload, execute) pair of the cold-hot table, for every operator kind. */
static void
test_ops_all_plans (void)
{
  g_autoptr(ElkChip) chip = func_chip (16);
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkChipSpec) spec = elk_chip_dup_spec (chip, &error);
  g_autoptr(GHashTable) patterns = g_hash_table_new_full (g_str_hash,
                                                          g_str_equal,
                                                          g_free, NULL);
  guint runs = 0;
  double worst = 0;

  g_assert_no_error (error);
  for (guint c = 0; c < G_N_ELEMENTS (op_cases); c++)
    {
      g_autoptr(ElkGraph) g = op_graph (&op_cases[c]);
      g_autoptr(ElkPlanSet) set = elk_plan_set_new (g, spec, NULL, &error);
      const ElkPlanTable *tab;
      const ElkOp *op = elk_graph_get_op (g, 0);
      g_autoptr(GHashTable) pos = op_cases[c].positive ? positive_inputs (g)
                                                       : NULL;

      g_assert_no_error (error);
      g_object_set (chip, "inputs", pos, NULL);
      tab = elk_plan_set_get_table (set, 0);
      for (guint k = 0; k < tab->n_plans + tab->n_cold_hot; k++)
        {
          const ElkPlan *hot, *cold;
          g_autofree char *what = NULL;
          GString *pat = g_string_new (op_cases[c].name);

          if (k < tab->n_plans)
            hot = cold = &tab->plans[k];
          else
            {
              const ElkColdHot *ch = &tab->cold_hot[k - tab->n_plans];
              hot = &tab->plans[ch->hot_plan];
              cold = &tab->plans[ch->cold_plan];
            }
          g_string_append (pat, ": ");
          plan_pattern (op, hot, pat);
          what = g_strdup_printf ("%s plan %u", op_cases[c].name, k);
          worst = MAX (worst, run_one (chip, g, hot, cold, what));
          g_hash_table_add (patterns, g_string_free (pat, FALSE));
          runs++;
        }
    }
  g_object_set (chip, "inputs", NULL, NULL);
  g_test_message ("%u runs of %zu operators, %u rotation patterns, worst "
                  "relative error %.3g", runs, G_N_ELEMENTS (op_cases),
                  g_hash_table_size (patterns), worst);
  g_print ("# functional: %u plan runs over %zu operators, %u distinct "
           "rotation patterns, worst relative error %.3g\n", runs,
           G_N_ELEMENTS (op_cases), g_hash_table_size (patterns), worst);
  g_assert_cmpfloat (worst, <, 1e-5);
}

/* One tensor and one operator of a hand-built graph (table_graph()). */
typedef struct
{
  const char *name;
  ElkTensorOrigin origin;
  guint n_dims;
  guint64 shape[2];
} TensorRow;

typedef struct
{
  const char *name, *type, *spec;
  ElkOpKind kind;
  guint32 t[3];
  guint n;
} OpRow;

#define A_ ELK_TENSOR_ORIGIN_ACTIVATION
#define W_ ELK_TENSOR_ORIGIN_WEIGHT

/* The F16 graph @name of the tensors @ts and the operators @ops. */
static ElkGraph *
table_graph (const char *name,
             const TensorRow *ts,
             guint n_ts,
             const OpRow *ops,
             guint n_ops)
{
  g_autoptr (GError) error = NULL;
  ElkGraph *g = elk_graph_new (name);

  for (guint i = 0; i < n_ts; i++)
    elk_graph_add_tensor (g, ts[i].name, ELK_DTYPE_F16, ts[i].origin,
                          ts[i].n_dims, ts[i].shape, 0, &error);
  for (guint i = 0; i < n_ops; i++)
    elk_graph_add_op (g, ops[i].name, ops[i].type, ops[i].kind, -1, ops[i].spec,
                      ops[i].t, ops[i].n, NULL, &error);
  g_assert_no_error (error);
  return g;
}

/* An RMSNorm over x (5 x 12) read by a MatMul with W (12 x 7), fused
 * (elk_graph_fuse()) into one rmsnorm_matmul: every plan of the fused
 * operator's table, and every (preload, execute) pair, runs on the tiles
 * and its output is compared with the reference's evaluation of the six
 * unfused operators. */
static ElkGraph *
norm_matmul_graph (void)
{
  static const TensorRow ts[] = {
    { "x", A_, 2, { 5, 12 } },  { "sq", A_, 2, { 5, 12 } },
    { "ss", A_, 1, { 5 } },     { "r", A_, 1, { 5 } },
    { "sc", A_, 2, { 5, 12 } }, { "g", W_, 1, { 12 } },
    { "y", A_, 2, { 5, 12 } },  { "w", W_, 2, { 12, 7 } },
    { "out", A_, 2, { 5, 7 } },
  };
  static const OpRow ops[] = {
    { "square", "square", "mk->mk", ELK_OP_UNARY, { 0, 1 }, 2 },
    { "sum", "sum", "mk->m", ELK_OP_REDUCE, { 1, 2 }, 2 },
    { "rsqrt", "rsqrt", "m->m", ELK_OP_UNARY, { 2, 3 }, 2 },
    { "scale", "mul", "mk,m->mk", ELK_OP_ELEMENTWISE, { 0, 3, 4 }, 3 },
    { "gain", "mul", "mk,k->mk", ELK_OP_ELEMENTWISE, { 4, 5, 6 }, 3 },
    { "mm", "matmul", "mk,kn->mn", ELK_OP_MATMUL, { 6, 7, 8 }, 3 },
  };

  return table_graph ("norm-matmul", ts, G_N_ELEMENTS (ts), ops,
                      G_N_ELEMENTS (ops));
}

/* norm_matmul_graph() with a LayerNorm as the frontends spell it (mean,
 * centre, square, sum, rsqrt, scale, gain, bias) before the MatMul. */
static ElkGraph *
layer_matmul_graph (void)
{
  static const TensorRow ts[] = {
    { "x", A_, 2, { 5, 12 } },  { "mean", A_, 1, { 5 } },
    { "ce", A_, 2, { 5, 12 } }, { "sq", A_, 2, { 5, 12 } },
    { "ss", A_, 1, { 5 } },     { "r", A_, 1, { 5 } },
    { "sc", A_, 2, { 5, 12 } }, { "g", W_, 1, { 12 } },
    { "gy", A_, 2, { 5, 12 } }, { "b", W_, 1, { 12 } },
    { "y", A_, 2, { 5, 12 } },  { "w", W_, 2, { 12, 7 } },
    { "out", A_, 2, { 5, 7 } },
  };
  static const OpRow ops[] = {
    { "mean", "sum", "mk->m", ELK_OP_REDUCE, { 0, 1 }, 2 },
    { "centre", "sub", "mk,m->mk", ELK_OP_ELEMENTWISE, { 0, 1, 2 }, 3 },
    { "square", "square", "mk->mk", ELK_OP_UNARY, { 2, 3 }, 2 },
    { "sum", "sum", "mk->m", ELK_OP_REDUCE, { 3, 4 }, 2 },
    { "rsqrt", "rsqrt", "m->m", ELK_OP_UNARY, { 4, 5 }, 2 },
    { "scale", "mul", "mk,m->mk", ELK_OP_ELEMENTWISE, { 2, 5, 6 }, 3 },
    { "gain", "mul", "mk,k->mk", ELK_OP_ELEMENTWISE, { 6, 7, 8 }, 3 },
    { "bias", "add", "mk,k->mk", ELK_OP_ELEMENTWISE, { 8, 9, 10 }, 3 },
    { "mm", "matmul", "mk,kn->mn", ELK_OP_MATMUL, { 10, 11, 12 }, 3 },
  };

  return table_graph ("layer-matmul", ts, G_N_ELEMENTS (ts), ops,
                      G_N_ELEMENTS (ops));
}

/* A softmax as the frontends spell it (max, sub-exp, sum, div) over the
 * scores x (5 x 12) along s, read by a MatMul with V (12 x 7) contracting
 * over s: the max stays, the rest folds into one softmax_matmul. */
static ElkGraph *
softmax_matmul_graph (void)
{
  static const TensorRow ts[] = {
    { "x", A_, 2, { 5, 12 } },  { "mx", A_, 1, { 5 } },
    { "e", A_, 2, { 5, 12 } },  { "z", A_, 1, { 5 } },
    { "p", A_, 2, { 5, 12 } },  { "v", W_, 2, { 12, 7 } },
    { "out", A_, 2, { 5, 7 } },
  };
  static const OpRow ops[] = {
    { "max", "max", "ms->m", ELK_OP_REDUCE, { 0, 1 }, 2 },
    { "exp", "sub-exp", "ms,m->ms", ELK_OP_ELEMENTWISE, { 0, 1, 2 }, 3 },
    { "sum", "sum", "ms->m", ELK_OP_REDUCE, { 2, 3 }, 2 },
    { "div", "div", "ms,m->ms", ELK_OP_ELEMENTWISE, { 2, 3, 4 }, 3 },
    { "mm", "matmul", "ms,sn->mn", ELK_OP_MATMUL, { 4, 5, 6 }, 3 },
  };

  return table_graph ("softmax-matmul", ts, G_N_ELEMENTS (ts), ops,
                      G_N_ELEMENTS (ops));
}

#undef A_
#undef W_

/* Every plan and cold-hot pair of the fused operator of @type that
 * @flags make of @g (its last operator; any operator before it, such as
 * a softmax's max, runs under its first plan) against the reference of
 * @g unfused; returns the worst relative error. */
static double
run_fused_plans (ElkGraph *g, ElkFuseFlags flags, const char *type)
{
  g_autoptr (ElkChip) chip = func_chip (16);
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (chip, &error);
  g_autoptr (ElkGraph) f = elk_graph_fuse (g, flags, &error);
  g_autoptr (ElkPlanSet) set = NULL;
  const ElkPlanTable *tab;
  guint last = elk_graph_get_n_ops (f) - 1;
  double worst = 0;

  g_assert_no_error (error);
  g_assert_cmpstr (elk_graph_get_op (f, last)->type, ==, type);
  set = elk_plan_set_new (f, spec, NULL, &error);
  g_assert_no_error (error);
  tab = elk_plan_set_get_table (set, last);
  for (guint k = 0; k < tab->n_plans + tab->n_cold_hot; k++)
    {
      g_autoptr (ElkProgram) p = elk_program_new (f);
      g_autoptr (ElkMetrics) m = NULL;
      g_autoptr (GHashTable) tensors = NULL;
      g_autofree char *what = g_strdup_printf ("%s plan %u", type, k);
      ElkProgramOp *pop = elk_program_get_op (p, last);
      guint n = 0;
      double err;

      for (guint i = 0; i < last; i++)
        {
          ElkProgramOp *before = elk_program_get_op (p, i);
          before->exec_plan = before->preload_plan
              = elk_plan_set_get_table (set, i)->plans[0];
          if (elk_op_get_hbm_bytes (f, elk_graph_get_op (f, i)) > 0)
            elk_program_add_preload (p, i);
          elk_program_add_execute (p, i);
        }
      if (k < tab->n_plans)
        pop->exec_plan = pop->preload_plan = tab->plans[k];
      else
        {
          const ElkColdHot *ch = &tab->cold_hot[k - tab->n_plans];
          pop->exec_plan = tab->plans[ch->hot_plan];
          pop->preload_plan = tab->plans[ch->cold_plan];
        }
      elk_program_add_preload (p, last);
      elk_program_add_execute (p, last);
      m = elk_test_run_program (chip, p, NULL, &error);
      if (error != NULL)
        g_error ("%s: %s", what, error->message);
      g_object_get (chip, "last-tensors", &tensors, NULL);
      err = compare_graph_part (g, tensors, NULL, 1e-5, what, &n);
      worst = MAX (worst, err);
      g_assert_cmpuint (n, ==, last + 1);
    }
  g_print ("# functional: %s under %u plans and %u cold-hot pairs "
           "against the unfused reference: worst relative error %.3g\n",
           type, tab->n_plans, tab->n_cold_hot, worst);
  return worst;
}

static void
test_fused_norm_plans (void)
{
  g_autoptr (ElkGraph) g = norm_matmul_graph ();

  g_assert_cmpfloat (run_fused_plans (g, ELK_FUSE_NORM,
                                      ELK_FUSE_RMSNORM_MATMUL),
                     <, 1e-5);
}

/* The same for a LayerNorm: the fused operator rebuilds the rsqrt's
 * argument from the sums of x and x², which rounds differently from the
 * unfused centre-then-square, hence the same 1e-5 bound as every other
 * operator of this file rather than bit equality. */
static void
test_fused_layer_plans (void)
{
  g_autoptr (ElkGraph) g = layer_matmul_graph ();

  g_assert_cmpfloat (run_fused_plans (g, ELK_FUSE_NORM,
                                      ELK_FUSE_LAYERNORM_MATMUL),
                     <, 1e-5);
}

/* The same for a softmax: the fused operator divides the sum of e V by
 * the sum of e where the unfused graph sums the quotients e / z times V,
 * which rounds differently, hence the same 1e-5 bound. */
static void
test_fused_softmax_plans (void)
{
  g_autoptr (ElkGraph) g = softmax_matmul_graph ();

  g_assert_cmpfloat (run_fused_plans (g, ELK_FUSE_SOFTMAX,
                                      ELK_FUSE_SOFTMAX_MATMUL),
                     <, 1e-5);
}

/* A tiny OPT-style decode step (pre-LayerNorm with biases, ReLU FFN; b3,
 * KV 5, random weights seeded by the emulator) compiled by elk with every
 * LayerNorm fused into its MatMuls: each fused operator's output and every
 * other operator's against the reference of the unfused graph. */
static void
test_opt_fused_decode (void)
{
  static const char *json
      = "{\"model_type\":\"opt\",\"hidden_size\":32,\"ffn_dim\":48,"
        "\"num_attention_heads\":4,\"num_hidden_layers\":1,"
        "\"vocab_size\":64,\"max_position_embeddings\":64,"
        "\"do_layer_norm_before\":true,\"enable_bias\":true,"
        "\"word_embed_proj_dim\":32}";
  g_autofree char *dir = g_dir_make_tmp ("elk-opt-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "config.json", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GObject) fe = NULL;
  g_autoptr (ElkChip) chip = func_chip (64);
  g_autoptr (ElkGraph) g = NULL;
  g_autoptr (ElkGraph) f = NULL;
  g_autoptr (ElkMetrics) m = NULL;
  g_autoptr (GHashTable) tensors = NULL;
  guint n = 0, n_fused = 0;
  double worst;

  if (elk_registry_lookup (registry, ELK_TYPE_FRONTEND, "llama") == NULL
      || elk_registry_lookup (registry, ELK_TYPE_SCHEDULER, "elk") == NULL)
    {
      g_test_skip ("needs the llama frontend and the elk scheduler");
      return;
    }
  g_assert_true (g_file_set_contents (path, json, -1, NULL));
  fe = make (ELK_TYPE_FRONTEND, "llama", "model", path, "batch", 3, "seq", 5,
             NULL);
  g = elk_frontend_load (ELK_FRONTEND (fe), &error);
  g_assert_no_error (error);
  f = elk_graph_fuse (g, ELK_FUSE_NORM, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < elk_graph_get_n_ops (f); i++)
    n_fused
        += g_strcmp0 (elk_graph_get_op (f, i)->type, ELK_FUSE_LAYERNORM_MATMUL)
           == 0;
  /* Q, K, V after the attention norm, the FFN's up after the FFN norm,
   * the LM head after the final norm (unless the frontend merged Q, K
   * and V into one MatMul). */
  g_assert_cmpuint (n_fused, >=, 3);
  g_object_set (chip, "seed", 11, NULL);
  m = elk_test_schedule_and_run (registry, f, chip, "elk", "reservation",
                                 &error);
  g_assert_no_error (error);
  g_object_get (chip, "last-tensors", &tensors, NULL);
  worst = compare_graph_part (g, tensors, NULL, 1e-4, "opt fused", &n);
  g_assert_cmpuint (n, ==, elk_graph_get_n_ops (f));
  g_print ("# functional: tiny OPT decode (b3, s5) with fuse=norm (%u -> %u "
           "operators, %u fused) against the unfused reference: worst "
           "relative error %.3g\n",
           elk_graph_get_n_ops (g), elk_graph_get_n_ops (f), n_fused, worst);
  elk_test_remove_tree (dir);
}

/* An MoE router's top-k (k = 2 of 6 scores per token) under every plan of
 * its table: a plan that keeps the experts whole on each tile computes
 * the k largest; one that splits them is refused with the reason, since
 * the k largest of a row are not a combination of its pieces'. */
static void
test_topk_plans (void)
{
  static const OpCase topk
      = { "router-top-k", "top-k",       ELK_OP_REDUCE,
          "mje->mj",      "m=3,j=2,e=6", { ELK_TENSOR_ORIGIN_ACTIVATION },
          FALSE };
  g_autoptr (ElkChip) chip = func_chip (16);
  g_autoptr (GError) error = NULL;
  g_autoptr (ElkChipSpec) spec = elk_chip_dup_spec (chip, &error);
  g_autoptr (ElkGraph) g = op_graph (&topk);
  g_autoptr (ElkPlanSet) set = elk_plan_set_new (g, spec, NULL, &error);
  const ElkPlanTable *tab = elk_plan_set_get_table (set, 0);
  guint ran = 0, refused = 0;

  g_assert_no_error (error);
  for (guint k = 0; k < tab->n_plans; k++)
    {
      const ElkPlan *plan = &tab->plans[k];
      g_autofree char *what = g_strdup_printf ("top-k plan %u", k);

      /* Loop dimensions are the output's letters first: m, j, then e. */
      if (plan->spatial[2] == 1)
        {
          run_one (chip, g, plan, plan, what);
          ran++;
        }
      else
        {
          g_autoptr (ElkProgram) p = elk_program_new (g);
          g_autoptr (ElkMetrics) m = NULL;
          g_autoptr (GError) err = NULL;
          ElkProgramOp *pop = elk_program_get_op (p, 0);

          pop->exec_plan = pop->preload_plan = *plan;
          elk_program_add_execute (p, 0);
          m = elk_test_run_program (chip, p, NULL, &err);
          g_assert_null (m);
          g_assert_error (err, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN);
          g_assert_nonnull (strstr (err->message, "runs top-k 'router-top-k' "
                                                  "only with its reduced axes "
                                                  "whole on each tile"));
          refused++;
        }
    }
  g_test_message ("top-k: %u plans ran, %u refused", ran, refused);
  g_assert_cmpuint (ran, >, 0);
  g_assert_cmpuint (refused, >, 0);
}

/* Plans made by hand and checked by elk_plan_evaluate: Cannon's two
 * rotating inputs, a divisibility chain (4 and 2), the output rotating
 * along two dimensions, the output rotating with partial sums left over,
 * an input rotating along an output dimension, a rotating reduce. */
typedef struct
{
  const char *op;      /* index into op_cases by name */
  guint32 spatial[ELK_MAX_DIMS];
  struct { guint d, v, t; } rot[4];
  guint n_rot;
  gboolean cold_more;  /* preload with every rotation factor doubled */
} HandPlan;

static const HandPlan hand_plans[] = {
  /* matmul m=5 k=7 n=9: dims m, n, k (output letters first). */
  { "matmul", { 2, 2, 1 }, { { 2, 1, 2 }, { 2, 2, 2 } }, 2, FALSE },
  { "matmul", { 2, 4, 1 }, { { 2, 1, 4 }, { 2, 2, 2 } }, 2, FALSE },
  { "matmul", { 1, 1, 4 }, { { 0, 0, 2 }, { 1, 0, 2 } }, 2, FALSE },
  { "matmul", { 1, 1, 4 }, { { 0, 0, 2 } }, 1, FALSE },
  { "matmul", { 1, 3, 1 }, { { 0, 1, 3 } }, 1, FALSE },
  { "matmul", { 2, 2, 3 }, { { 2, 1, 2 }, { 0, 0, 3 } }, 2, FALSE },
  { "matmul", { 2, 2, 2 }, { { 2, 1, 2 } }, 1, TRUE },
  { "matmul", { 4, 2, 2 }, { { 2, 2, 2 } }, 1, TRUE },
  /* softmax-max b=3 h=2 q=1 s=13: the output rotating along b. */
  { "softmax-max", { 1, 1, 1, 4 }, { { 0, 0, 2 } }, 1, FALSE },
  { "softmax-max", { 1, 2, 1, 6 }, { { 0, 0, 3 } }, 1, FALSE },
  { "rowsum", { 1, 6 }, { { 0, 0, 3 } }, 1, FALSE },
  /* score b=3 h=2 q=1 e=5 s=7 (dims b h q s e): Q rotating along e, the
   * output along s with partial sums left. */
  { "score", { 1, 1, 1, 3, 1 }, { { 4, 1, 3 } }, 1, FALSE },
  { "score", { 1, 1, 1, 1, 4 }, { { 3, 0, 2 } }, 1, FALSE },
  { "score-gqa", { 2, 1, 1, 1, 1, 2 }, { { 1, 0, 1 } }, 0, FALSE },
};

static void
test_ops_hand_plans (void)
{
  g_autoptr(ElkChip) chip = func_chip (16);
  g_autoptr(GError) error = NULL;
  g_autoptr(ElkChipSpec) spec = elk_chip_dup_spec (chip, &error);
  double worst = 0;

  g_assert_no_error (error);
  for (guint h = 0; h < G_N_ELEMENTS (hand_plans); h++)
    {
      const HandPlan *hp = &hand_plans[h];
      const OpCase *c = NULL;
      g_autoptr(ElkGraph) g = NULL;
      const ElkOp *op;
      ElkPlan hot = { 0 }, cold;
      g_autofree char *what = NULL;
      GString *pat = g_string_new (NULL);

      for (guint k = 0; k < G_N_ELEMENTS (op_cases); k++)
        if (!strcmp (op_cases[k].name, hp->op))
          c = &op_cases[k];
      g_assert_nonnull (c);
      g = op_graph (c);
      op = elk_graph_get_op (g, 0);
      hot.n_dims = (guint8) op->n_dims;
      hot.n_operands = (guint8) op->n_operands;
      for (guint d = 0; d < op->n_dims; d++)
        {
          hot.spatial[d] = hp->spatial[d];
          for (guint v = 0; v < op->n_operands; v++)
            hot.temporal[d][v] = 1;
        }
      for (guint r = 0; r < hp->n_rot; r++)
        hot.temporal[hp->rot[r].d][hp->rot[r].v] = hp->rot[r].t;
      if (!elk_plan_evaluate (g, 0, spec, &hot, &error))
        g_error ("hand plan %u: %s", h, error->message);
      cold = hot;
      if (hp->cold_more)
        {
          /* The preload layout cuts the weight's copies further: data
           * distribution has to gather the missing parts. */
          for (guint d = 0; d < op->n_dims; d++)
            {
              guint32 t = hot.temporal[d][2] * 2;
              ElkPlan trial = cold;
              trial.temporal[d][2] = t;
              if (elk_plan_evaluate (g, 0, spec, &trial, NULL))
                {
                  cold = trial;
                  break;
                }
            }
          g_assert_false (memcmp (cold.temporal, hot.temporal,
                                  sizeof (hot.temporal)) == 0);
        }
      plan_pattern (op, &hot, pat);
      what = g_strdup_printf ("%s hand plan %u (%s)", hp->op, h, pat->str);
      g_string_free (pat, TRUE);
      worst = MAX (worst, run_one (chip, g, &hot, &cold, what));
    }
  g_print ("# functional: %zu hand-made plans, worst relative error %.3g\n",
           G_N_ELEMENTS (hand_plans), worst);
}

/* A plan whose operator has no kernel, and data of the wrong size, are
 * errors that name the operator or tensor. */
static void
test_bad_input (void)
{
  g_autoptr(ElkChip) chip = func_chip (16);
  g_autoptr(GError) error = NULL;
  OpCase c = op_cases[0];
  g_autoptr(ElkGraph) g = NULL;
  g_autoptr(ElkProgram) p = NULL;
  g_autoptr(ElkMetrics) m = NULL;
  g_autoptr(GHashTable) in = g_hash_table_new_full (
    g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_bytes_unref);
  ElkProgramOp *pop;
  ElkPlan plan = { 0 };

  c.type = "frobnicate";
  g = op_graph (&c);
  p = elk_program_new (g);
  pop = elk_program_get_op (p, 0);
  plan.n_dims = 3;
  plan.n_operands = 3;
  for (guint d = 0; d < 3; d++)
    {
      plan.spatial[d] = 1;
      for (guint v = 0; v < 3; v++)
        plan.temporal[d][v] = 1;
    }
  plan.cores_used = 1;
  pop->exec_plan = pop->preload_plan = plan;
  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  m = elk_test_run_program (chip, p, NULL, &error);
  g_assert_null (m);
  g_assert_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN);
  g_assert_nonnull (strstr (error->message, "'matmul'"));
  g_assert_nonnull (strstr (error->message, "frobnicate"));
  g_clear_error (&error);

  /* A fused type on an operator with the MatMul's two inputs only: its
   * kernel needs the third (the gain, or a softmax's row maximum). */
  for (guint i = 0; i < 2; i++)
    {
      g_clear_pointer (&g, elk_graph_unref);
      g_clear_pointer (&p, elk_program_unref);
      c.type = i == 0 ? ELK_FUSE_RMSNORM_MATMUL : ELK_FUSE_SOFTMAX_MATMUL;
      g = op_graph (&c);
      p = elk_program_new (g);
      pop = elk_program_get_op (p, 0);
      pop->exec_plan = pop->preload_plan = plan;
      elk_program_add_preload (p, 0);
      elk_program_add_execute (p, 0);
      m = elk_test_run_program (chip, p, NULL, &error);
      g_assert_null (m);
      g_assert_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN);
      g_assert_nonnull (strstr (error->message, c.type));
      g_assert_nonnull (strstr (error->message, "needs 3 inputs"));
      g_clear_error (&error);
    }

  g_clear_pointer (&g, elk_graph_unref);
  g_clear_pointer (&p, elk_program_unref);
  g = op_graph (&op_cases[0]);
  p = elk_program_new (g);
  pop = elk_program_get_op (p, 0);
  pop->exec_plan = pop->preload_plan = plan;
  elk_program_add_preload (p, 0);
  elk_program_add_execute (p, 0);
  g_hash_table_insert (in, g_strdup ("matmul.in1"),
                       g_bytes_new_take (g_new0 (float, 3), 12));
  g_object_set (chip, "inputs", in, NULL);
  m = elk_test_run_program (chip, p, NULL, &error);
  g_assert_null (m);
  g_assert_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_RUN);
  g_assert_nonnull (strstr (error->message, "'matmul.in1'"));
  g_assert_nonnull (strstr (error->message, "expected 252"));
}

/* ---- One decode step of the tiny Llama-2 with its real weights ---- */

static float
half_to_float (guint16 h)
{
  guint32 sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0)
    v = ldexpf ((float) man, -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = ldexpf ((float) (man | 0x400), (int) exp - 25);
  return sign ? -v : v;
}

/* A GGUF tensor as row-major floats (the file's dims reversed). */
static float *
gguf_floats (Gguf *gguf,
             const guint8 *file,
             const char *name,
             guint64 *rows,
             guint64 *cols)
{
  const GgufTensor *t = elk__gguf_find_tensor (gguf, name);
  const guint8 *p;
  float *f;

  g_assert_nonnull (t);
  p = file + elk__gguf_get_data_offset (gguf) + t->offset;
  f = g_new (float, t->n_elements);
  for (guint64 i = 0; i < t->n_elements; i++)
    {
      if (t->type == 1) /* F16 */
        {
          guint16 h;
          memcpy (&h, p + 2 * i, 2);
          f[i] = half_to_float (GUINT16_FROM_LE (h));
        }
      else
        {
          g_assert_cmpuint (t->type, ==, 0); /* F32 */
          memcpy (&f[i], p + 4 * i, 4);
        }
    }
  *cols = t->dims[0];
  *rows = t->n_elements / t->dims[0];
  return f;
}

static void
put (GHashTable *h, const ElkGraph *g, const char *name, float *data,
     guint64 n)
{
  gint id = elk_graph_find_tensor (g, name);
  if (id < 0)
    g_error ("the llama graph has no tensor '%s'", name);
  g_assert_cmpuint (elk_graph_get_tensor (g, (guint) id)->n_elements, ==, n);
  g_hash_table_insert (h, g_strdup (name), g_bytes_new_take (data, n * 4));
}

/* The graph's "kn" weight of @n_parts file tensors [out][in], stacked
 * along n. */
static void
put_kn (GHashTable *h,
        const ElkGraph *g,
        Gguf *gguf,
        const guint8 *file,
        const char *graph_name,
        const char *const *parts)
{
  guint64 K = 0, N = 0;
  float *w;
  guint64 n0 = 0;

  for (guint i = 0; parts[i]; i++)
    {
      guint64 r, c;
      /* Only the shape is needed here. */
      g_free (gguf_floats (gguf, file, parts[i], &r, &c));
      K = c;
      N += r;
    }
  w = g_new (float, K * N);
  for (guint i = 0; parts[i]; i++)
    {
      guint64 r, c;
      g_autofree float *f = gguf_floats (gguf, file, parts[i], &r, &c);
      for (guint64 o = 0; o < r; o++)
        for (guint64 k = 0; k < c; k++)
          w[k * N + n0 + o] = f[o * c + k];
      n0 += r;
    }
  put (h, g, graph_name, w, K * N);
}

/* The views the llama graph reads (reshapes and slices no operator
 * writes), from the tensors computed so far: used alike by the emulator
 * (through "resolve-tensor") and by the reference. */
static GBytes *
llama_view (const char *name, GHashTable *tensors)
{
  GBytes *src;
  const float *f;
  gsize size;

  if (g_str_has_suffix (name, ".q"))
    {
      /* [b, h, 1, e] from the first h*e columns of the QKV output. */
      g_autofree char *qkv = g_strdup_printf ("%.*s.attn_qkv.out",
                                              (int) (strlen (name) - 2),
                                              name);
      guint64 b = 3, he = 8, w = 24;
      float *q;
      src = g_hash_table_lookup (tensors, qkv);
      g_assert_nonnull (src);
      f = g_bytes_get_data (src, &size);
      g_assert_cmpuint (size, ==, b * w * 4);
      q = g_new (float, b * he);
      for (guint64 i = 0; i < b; i++)
        memcpy (q + i * he, f + i * w, he * 4);
      return g_bytes_new_take (q, b * he * 4);
    }
  if (g_str_has_suffix (name, ".out.rows"))
    {
      /* [b, h, 1, e] seen as [b, h*e]: the same bytes. */
      g_autofree char *base = g_strndup (name, strlen (name) - 5);
      src = g_hash_table_lookup (tensors, base);
      g_assert_nonnull (src);
      return g_bytes_ref (src);
    }
  if (g_str_has_suffix (name, ".out.gate") || g_str_has_suffix (name,
                                                                ".out.up"))
    {
      gboolean up = g_str_has_suffix (name, ".up");
      g_autofree char *base = g_strndup (name, strlen (name)
                                                 - (up ? 3 : 5));
      guint64 b = 3, w = 64, half = 32;
      float *o;
      src = g_hash_table_lookup (tensors, base);
      g_assert_nonnull (src);
      f = g_bytes_get_data (src, &size);
      g_assert_cmpuint (size, ==, b * w * 4);
      o = g_new (float, b * half);
      for (guint64 i = 0; i < b; i++)
        memcpy (o + i * half, f + i * w + (up ? half : 0), half * 4);
      return g_bytes_new_take (o, b * half * 4);
    }
  return NULL;
}

static GBytes *
on_resolve (GObject *chip, const char *name, GHashTable *tensors,
            gpointer user_data)
{
  return llama_view (name, tensors);
}

static void
test_llama_decode (void)
{
  const char *corpus = g_getenv ("ELK_CORPUS");
  g_autofree char *path = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GObject) fe = NULL, sched = NULL, alloc = NULL;
  g_autoptr(ElkChip) chip = NULL;
  g_autoptr (ElkGraph) g = NULL;
  g_autoptr(ElkPlanSet) plans = NULL;
  g_autoptr(ElkProgram) program = NULL;
  g_autoptr(ElkMetrics) m = NULL;
  g_autoptr(GHashTable) in = NULL, tensors = NULL;
  g_autofree guint8 *file = NULL;
  gsize file_len;
  Gguf *gguf;
  const guint32 tokens[3] = { 1, 15043, 31999 };
  double worst;

  path = g_build_filename (corpus != NULL ? corpus : "",
                           "gguf", "llama-2-tiny-random.gguf", NULL);
  if (corpus == NULL || !g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_test_skip ("../shared/corpus/gguf/llama-2-tiny-random.gguf is "
                   "absent (set ELK_CORPUS)");
      return;
    }
  if (elk_registry_lookup (registry, ELK_TYPE_FRONTEND, "llama") == NULL
      || elk_registry_lookup (registry, ELK_TYPE_SCHEDULER, "elk") == NULL)
    {
      g_test_skip ("needs the llama frontend and the elk scheduler");
      return;
    }
  fe = make (ELK_TYPE_FRONTEND, "llama", "model", path, "batch", 3, "seq",
             5, NULL);
  g = elk_frontend_load (ELK_FRONTEND (fe), &error);
  g_assert_no_error (error);
  for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
    {
      const ElkOp *op = elk_graph_get_op (g, i);
      g_test_message ("op %u %s %s", i, op->name, op->type);
    }

  /* The real weights, from the file's data section. */
  gguf = elk__gguf_open (path, &error);
  g_assert_no_error (error);
  g_file_get_contents (path, (char **) &file, &file_len, &error);
  g_assert_no_error (error);
  in = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                              (GDestroyNotify) g_bytes_unref);
  {
    guint64 r, c;
    g_autofree float *emb = gguf_floats (gguf, file, "token_embd.weight", &r,
                                         &c);
    float *rows = g_new (float, 3 * c), *ids = g_new (float, 3);
    for (guint i = 0; i < 3; i++)
      {
        memcpy (rows + i * c, emb + tokens[i] * c, c * 4);
        ids[i] = (float) tokens[i];
      }
    put (in, g, "token_embd.rows", rows, 3 * c);
    put (in, g, "tokens", ids, 3);
  }
  {
    static const char *const norms[] = { "blk.0.attn_norm.weight",
                                         "blk.0.ffn_norm.weight",
                                         "output_norm.weight" };
    for (guint i = 0; i < G_N_ELEMENTS (norms); i++)
      {
        guint64 r, c;
        float *f = gguf_floats (gguf, file, norms[i], &r, &c);
        put (in, g, norms[i], f, r * c);
      }
  }
  put_kn (in, g, gguf, file, "blk.0.attn_qkv.weight",
          (const char *const[]) { "blk.0.attn_q.weight",
                                  "blk.0.attn_k.weight",
                                  "blk.0.attn_v.weight", NULL });
  put_kn (in, g, gguf, file, "blk.0.attn_output.weight",
          (const char *const[]) { "blk.0.attn_output.weight", NULL });
  put_kn (in, g, gguf, file, "blk.0.ffn_gate_up.weight",
          (const char *const[]) { "blk.0.ffn_gate.weight",
                                  "blk.0.ffn_up.weight", NULL });
  put_kn (in, g, gguf, file, "blk.0.ffn_down.weight",
          (const char *const[]) { "blk.0.ffn_down.weight", NULL });
  put_kn (in, g, gguf, file, "output.weight",
          (const char *const[]) { "output.weight", NULL });
  elk__gguf_free (gguf);

  /* Compiled by elk on two chips of 32 tiles; the KV cache is seeded. */
  chip = func_chip (64);
  g_object_set (chip, "inputs", in, "seed", 7, NULL);
  g_signal_connect (chip, "resolve-tensor", G_CALLBACK (on_resolve), NULL);
  sched = make (ELK_TYPE_SCHEDULER, "elk", NULL);
  alloc = make (ELK_TYPE_ALLOCATOR, "reservation", NULL);
  program = elk_test_compile (chip, g, sched, alloc, &plans);
  m = elk_chip_run (chip, program, plans, &error);
  g_assert_no_error (error);
  g_object_get (chip, "last-tensors", &tensors, NULL);
  worst = compare_graph (g, tensors, llama_view, 1e-4, "llama decode");
  g_print ("# functional: tiny Llama-2 decode (b3, s5, %u operators, "
           "real F16 weights) on 2x32 tiles, compiled by elk: worst "
           "relative error %.3g\n", elk_graph_get_n_ops (g), worst);

  /* The same step under other (preload, execute) pairs of every
   * operator's cold-hot table, so that each operator gathers its inputs
   * from producers laid out in many ways. */
  for (guint variant = 0; variant < 6; variant++)
    {
      g_autoptr(ElkProgram) p = elk_program_new (g);
      g_autoptr(ElkMetrics) m2 = NULL;
      g_autoptr(GHashTable) t2 = NULL;
      g_autofree char *what = g_strdup_printf ("llama decode variant %u",
                                               variant);

      for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
        {
          const ElkPlanTable *tab = elk_plan_set_get_table (plans, i);
          const ElkColdHot *ch = &tab->cold_hot[(i * 5 + variant * 7)
                                                % tab->n_cold_hot];
          ElkProgramOp *pop = elk_program_get_op (p, i);
          pop->exec_plan = tab->plans[ch->hot_plan];
          pop->preload_plan = tab->plans[ch->cold_plan];
          if (elk_op_get_hbm_bytes (g, elk_graph_get_op (g, i)) > 0)
            elk_program_add_preload (p, i);
          elk_program_add_execute (p, i);
        }
      m2 = elk_chip_run (chip, p, plans, &error);
      g_assert_no_error (error);
      g_object_get (chip, "last-tensors", &t2, NULL);
      worst = MAX (worst, compare_graph (g, t2, llama_view, 1e-4, what));
    }
  g_print ("# functional: tiny Llama-2 decode under 6 more plan mixes: "
           "worst relative error %.3g\n", worst);

  /* The same step with every RMSNorm fused into its MatMuls (fuse=norm),
   * then with every softmax too (fuse=norm,softmax), compiled by elk:
   * each fused operator's output against the reference of the unfused
   * graph. */
  for (guint c = 0; c < 2; c++)
    {
      ElkFuseFlags flags
          = c == 0 ? ELK_FUSE_NORM : ELK_FUSE_NORM | ELK_FUSE_SOFTMAX;
      g_autoptr (ElkGraph) f = elk_graph_fuse (g, flags, &error);
      g_autoptr (ElkPlanSet) fplans = NULL;
      g_autoptr (ElkProgram) fprogram = NULL;
      g_autoptr (ElkMetrics) fm = NULL;
      g_autoptr (GHashTable) ft = NULL;
      guint n = 0, n_fused = 0, n_softmax = 0, n_layers = 0;

      g_assert_no_error (error);
      for (guint i = 0; i < elk_graph_get_n_ops (f); i++)
        {
          const ElkOp *op = elk_graph_get_op (f, i);
          n_fused += g_strcmp0 (op->type, ELK_FUSE_RMSNORM_MATMUL) == 0;
          n_softmax += g_strcmp0 (op->type, ELK_FUSE_SOFTMAX_MATMUL) == 0;
        }
      for (guint i = 0; i < elk_graph_get_n_ops (g); i++)
        n_layers += g_strcmp0 (elk_graph_get_op (g, i)->type, "sub-exp") == 0;
      g_assert_cmpuint (n_fused, ==, 3);
      /* One softmax per layer, read by its P·V MatMul. */
      g_assert_cmpuint (n_softmax, ==, c == 0 ? 0 : n_layers);
      g_assert_cmpuint (n_layers, >, 0);
      fprogram = elk_test_compile (chip, f, sched, alloc, &fplans);
      fm = elk_chip_run (chip, fprogram, fplans, &error);
      g_assert_no_error (error);
      g_object_get (chip, "last-tensors", &ft, NULL);
      worst = compare_graph_part (g, ft, llama_view, 1e-4, "llama fused", &n);
      g_assert_cmpuint (n, ==, elk_graph_get_n_ops (f));
      g_print ("# functional: tiny Llama-2 decode with fuse=%s (%u -> %u "
               "operators, %u norms and %u softmaxes fused) against the "
               "unfused reference: worst relative error %.3g\n",
               c == 0 ? "norm" : "norm,softmax", elk_graph_get_n_ops (g),
               elk_graph_get_n_ops (f), n_fused, n_softmax, worst);
    }
}

/* Tiny random mixture-of-experts decode steps: Mixtral (softmax router,
 * top-2 of 4 experts) and DeepSeek-V2 (multi-head latent attention with
 * a compressed KV cache, a shared expert), the latter also in the
 * absorbed form (mla-absorb).  Every operator of the step (the router's
 * gating MatMul, score and top-k, each routed expert's gated FFN on its
 * tokens' rows, the gate weighting, the combination over the k picks,
 * the latent projections and attention) runs on the tiles and is
 * compared with the reference.  Weights, the KV cache and the views the
 * graph reads (an expert's rows, the latent and RoPE halves of a
 * projection) are the emulator's seeded values, which the reference
 * reads back: this checks what each operator computes, not how the
 * frontend wires the views. */
static void
test_moe_decode (void)
{
  static const struct
  {
    const char *what;
    const char *json;
    gboolean absorb;
  } models[] = {
    { "mixtral",
      "{\"model_type\":\"mixtral\",\"hidden_size\":32,"
      "\"intermediate_size\":48,\"num_attention_heads\":4,"
      "\"num_key_value_heads\":2,\"num_hidden_layers\":1,"
      "\"vocab_size\":64,\"max_position_embeddings\":64,"
      "\"num_local_experts\":4,\"num_experts_per_tok\":2}",
      FALSE },
    { "deepseek-v2",
      "{\"model_type\":\"deepseek_v2\",\"hidden_size\":32,"
      "\"intermediate_size\":48,\"num_attention_heads\":2,"
      "\"num_key_value_heads\":2,\"num_hidden_layers\":1,"
      "\"vocab_size\":64,\"max_position_embeddings\":64,"
      "\"first_k_dense_replace\":0,\"moe_layer_freq\":1,"
      "\"n_routed_experts\":4,\"n_shared_experts\":1,"
      "\"num_experts_per_tok\":2,\"moe_intermediate_size\":16,"
      "\"kv_lora_rank\":16,\"q_lora_rank\":null,"
      "\"qk_nope_head_dim\":8,\"qk_rope_head_dim\":4,"
      "\"v_head_dim\":8,\"scoring_func\":\"softmax\","
      "\"topk_method\":\"greedy\"}",
      FALSE },
    { "deepseek-v2 absorbed", NULL, TRUE },
  };
  g_autofree char *dir = g_dir_make_tmp ("elk-moe-XXXXXX", NULL);
  const char *json = NULL;

  if (elk_registry_lookup (registry, ELK_TYPE_FRONTEND, "llama") == NULL
      || elk_registry_lookup (registry, ELK_TYPE_SCHEDULER, "elk") == NULL)
    {
      g_test_skip ("needs the llama frontend and the elk scheduler");
      return;
    }
  for (guint i = 0; i < G_N_ELEMENTS (models); i++)
    {
      g_autofree char *path = g_build_filename (dir, "config.json", NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (GObject) fe = NULL;
      g_autoptr (ElkChip) chip = func_chip (64);
      g_autoptr (ElkGraph) g = NULL;
      g_autoptr (ElkMetrics) m = NULL;
      g_autoptr (GHashTable) tensors = NULL;
      double worst;

      /* The absorbed row reuses the model before it. */
      json = models[i].json != NULL ? models[i].json : json;
      g_assert_true (g_file_set_contents (path, json, -1, NULL));
      fe = make (ELK_TYPE_FRONTEND, "llama", "model", path, "batch", 3, "seq",
                 5, "mla-absorb", models[i].absorb, NULL);
      g = elk_frontend_load (ELK_FRONTEND (fe), &error);
      g_assert_no_error (error);
      g_object_set (chip, "seed", 11, NULL);
      m = elk_test_schedule_and_run (registry, g, chip, "elk", "reservation",
                                     &error);
      g_assert_no_error (error);
      g_object_get (chip, "last-tensors", &tensors, NULL);
      worst = compare_graph (g, tensors, NULL, 1e-4, models[i].what);
      g_print ("# functional: tiny %s decode (b3, s5, %u operators) on "
               "2x32 tiles, compiled by elk: worst relative error %.3g\n",
               models[i].what, elk_graph_get_n_ops (g), worst);
    }
  elk_test_remove_tree (dir);
}

int
main (int argc, char *argv[])
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  g_test_add_func ("/ipu-pod/functional/all-plans", test_ops_all_plans);
  g_test_add_func ("/ipu-pod/functional/hand-plans", test_ops_hand_plans);
  g_test_add_func ("/ipu-pod/functional/bad-input", test_bad_input);
  g_test_add_func ("/ipu-pod/functional/llama-decode", test_llama_decode);
  g_test_add_func ("/ipu-pod/functional/moe-decode", test_moe_decode);
  g_test_add_func ("/ipu-pod/functional/top-k-plans", test_topk_plans);
  g_test_add_func ("/ipu-pod/functional/fused-layer-plans",
                   test_fused_layer_plans);
  g_test_add_func ("/ipu-pod/functional/opt-fused-decode",
                   test_opt_fused_decode);
  g_test_add_func ("/ipu-pod/functional/fused-norm-plans",
                   test_fused_norm_plans);
  g_test_add_func ("/ipu-pod/functional/fused-softmax-plans",
                   test_fused_softmax_plans);
  ret = g_test_run ();
  g_object_unref (registry);
  return ret;
}
