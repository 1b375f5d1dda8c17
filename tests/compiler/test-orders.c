/* test-orders.c: the generic suffix-tree preload-order enumeration
 * (elk-paper.md §3.7, Fig 14; core/compile/elk-orders.c).
 *
 * The enumeration is compared with a brute-force filter of all N! orders
 * under the same rule, in both directions, on seeded random instances; the
 * paper's worked example (9 operators, room for 2) is checked branch by
 * branch; the max-orders cap must keep a prefix of the full enumeration;
 * and the elk scheduler must use it on a graph without layers, find at
 * least Elk-Dyn's latency, give the same program on 1 and 2 threads, and
 * report bad settings with clear errors. */
#include "config.h"

#include <math.h>
#include <string.h>
/* The order enumeration is unstable API (elk-compile.h). */
#define ELK_USE_UNSTABLE_API
#include <elk/elk.h>
#include "elk-test-util.h"
#include "elk-test-graph.h"

static ElkRegistry *registry;

/* ---------------------------------------------------------------------- */
/* The rule, written directly from its definition                          */
/* ---------------------------------------------------------------------- */

/* TRUE when @order satisfies every rule of @p (elk-orders.c), computed
 * from the definition: R(i) = { j > i : pos(j) < max_{i' <= i} pos(i') }. */
static gboolean
order_valid (const ElkSuffixTree *p, const guint32 *order)
{
  guint pos[16];
  guint m = 0;

  g_assert_cmpuint (p->n, <=, G_N_ELEMENTS (pos));
  for (guint q = 0; q < p->n; q++)
    pos[order[q]] = q;
  for (guint x = 0; x < p->n; x++)
    {
      guint move = pos[x] > x ? pos[x] - x : x - pos[x];
      if (!p->movable[x] && pos[x] != x)
        return FALSE;
      if (p->max_move != G_MAXUINT && move > p->max_move)
        return FALSE;
      for (guint y = x + 1; y < p->n; y++)
        if (p->movable[x] && p->movable[y] && p->kind[x] == p->kind[y]
            && pos[y] < pos[x])
          return FALSE;
    }
  for (guint i = 0; i < p->n; i++)
    {
      guint64 bytes = p->exec_bytes[i];
      guint resident = 0;

      m = MAX (m, pos[i]);
      for (guint j = i + 1; j < p->n; j++)
        if (pos[j] < m)
          {
            bytes += p->preload_bytes[j];
            resident++;
          }
      if (bytes > p->capacity
          || (p->max_resident != G_MAXUINT && resident > p->max_resident))
        return FALSE;
    }
  return TRUE;
}

/* An order of at most 16 operators packed in 4 bits each, so orders can
 * be sorted and compared without allocating per order. */
static guint64
pack (const guint32 *order, guint n)
{
  guint64 key = 0;
  for (guint q = 0; q < n; q++)
    key = key << 4 | order[q];
  return key;
}

static gint
cmp_u64 (gconstpointer a, gconstpointer b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
  return x < y ? -1 : x > y;
}

/* Every valid order of all N! (lexicographic next-permutation walk). */
static GArray *
brute_force (const ElkSuffixTree *p)
{
  GArray *keys = g_array_new (FALSE, FALSE, sizeof (guint64));
  guint32 order[16];

  for (guint q = 0; q < p->n; q++)
    order[q] = q;
  for (;;)
    {
      gint k = -1, l;
      if (order_valid (p, order))
        {
          guint64 key = pack (order, p->n);
          g_array_append_val (keys, key);
        }
      for (gint a = (gint) p->n - 2; a >= 0; a--)
        if (order[a] < order[a + 1])
          {
            k = a;
            break;
          }
      if (k < 0)
        break;
      for (l = (gint) p->n - 1; order[l] < order[k]; l--)
        ;
      {
        guint32 tmp = order[k];
        order[k] = order[l];
        order[l] = tmp;
      }
      for (gint a = k + 1, b = (gint) p->n - 1; a < b; a++, b--)
        {
          guint32 tmp = order[a];
          order[a] = order[b];
          order[b] = tmp;
        }
    }
  return keys;
}

/* Checks the enumeration of @p against the brute force, both ways. */
static guint
check_against_brute_force (const ElkSuffixTree *p)
{
  g_autoptr(GPtrArray) orders = elk_orders_suffix_tree (p, NULL);
  g_autoptr(GArray) want = brute_force (p);
  g_autoptr(GArray) got = g_array_new (FALSE, FALSE, sizeof (guint64));

  for (guint o = 0; o < orders->len; o++)
    {
      const guint32 *order = g_ptr_array_index (orders, o);
      guint64 key = pack (order, p->n);
      /* Nothing invalid is produced. */
      g_assert_true (order_valid (p, order));
      g_array_append_val (got, key);
    }
  g_array_sort (got, cmp_u64);
  for (guint o = 1; o < got->len; o++)
    g_assert_cmpuint (g_array_index (got, guint64, o - 1), <,
                      g_array_index (got, guint64, o));
  /* Nothing valid is missed (the sets are equal). */
  g_assert_cmpuint (got->len, ==, want->len);
  for (guint o = 0; o < got->len; o++)
    g_assert_cmpuint (g_array_index (got, guint64, o), ==,
                      g_array_index (want, guint64, o));
  return got->len;
}

static void
test_brute_force (void)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (20250711);
  guint64 exec[16], pre[16];
  gboolean movable[16];
  guint kind[16];
  guint total = 0, instances = 0;

  g_test_summary ("On random instances of up to 9 operators the suffix tree "
                  "yields exactly the orders a brute-force filter of all "
                  "N! orders accepts under the same rule.");
  for (guint round = 0; round < 120; round++)
    {
      ElkSuffixTree p = { 0 };
      guint n = 3 + round % 6;

      /* One 9-operator instance; 9! orders take a moment. */
      if (round == 119)
        n = 9;
      for (guint i = 0; i < n; i++)
        {
          exec[i] = g_rand_int_range (rand, 1, 10);
          pre[i] = g_rand_int_range (rand, 0, 4) == 0
                     ? 0 : g_rand_int_range (rand, 1, 10);
          movable[i] = g_rand_int_range (rand, 0, 4) != 0;
          kind[i] = i;
          /* Some twins: same kind as an earlier movable operator. */
          if (movable[i] && i > 0 && g_rand_int_range (rand, 0, 5) == 0)
            {
              guint j = g_rand_int_range (rand, 0, i);
              if (movable[j])
                kind[i] = kind[j];
            }
        }
      p.n = n;
      p.exec_bytes = exec;
      p.preload_bytes = pre;
      p.movable = movable;
      p.kind = kind;
      p.capacity = g_rand_int_range (rand, 10, 40);
      p.max_resident = round % 3 == 0 ? G_MAXUINT
                                      : (guint) g_rand_int_range (rand, 0, 4);
      p.max_move = round % 4 == 0 ? (guint) g_rand_int_range (rand, 1, 4)
                                  : G_MAXUINT;
      p.max_orders = G_MAXUINT;
      total += check_against_brute_force (&p);
      instances++;
    }
  g_test_message ("%u instances, %u valid orders in all", instances, total);
  g_assert_cmpuint (total, >, instances * 4);
}

/* Fig 14: 9 operators of one unit each, room for 2. */
static void
fig14 (ElkSuffixTree *p, guint64 *exec, guint64 *pre, gboolean *movable,
       guint *kind, guint n)
{
  for (guint i = 0; i < n; i++)
    {
      exec[i] = pre[i] = 1;
      movable[i] = TRUE;
      kind[i] = i;
    }
  *p = (ElkSuffixTree) { n, exec, pre, movable, kind, 2, G_MAXUINT,
                         G_MAXUINT, G_MAXUINT, 0 };
}

static void
test_fig14 (void)
{
  guint64 exec[16], pre[16];
  gboolean movable[16];
  guint kind[16];
  ElkSuffixTree p;
  g_autoptr(GPtrArray) orders = NULL;
  gboolean last[9] = { 0 }, after8[9] = { 0 }, after9[9] = { 0 };
  ElkOrderInfo info;

  g_test_summary ("The paper's Fig 14 example: 9 operators, 2 fit on chip. "
                  "The last preload is Op8 or Op9; after Op8 only Op7 or "
                  "Op9, after Op9 only Op7 or Op8; O(K^N) leaves, not N!.");
  fig14 (&p, exec, pre, movable, kind, 9);
  orders = elk_orders_suffix_tree (&p, &info);
  for (guint o = 0; o < orders->len; o++)
    {
      const guint32 *order = g_ptr_array_index (orders, o);
      last[order[8]] = TRUE;
      if (order[8] == 7)
        after8[order[7]] = TRUE;
      if (order[8] == 8)
        after9[order[7]] = TRUE;
    }
  /* Operators are numbered from 0 here: the paper's Op k is k - 1. */
  for (guint x = 0; x < 9; x++)
    {
      g_assert_cmpint (last[x], ==, x == 7 || x == 8);
      g_assert_cmpint (after8[x], ==, x == 6 || x == 8);
      g_assert_cmpint (after9[x], ==, x == 6 || x == 7);
    }
  g_assert_cmpuint (check_against_brute_force (&p), ==, orders->len);
  g_assert_false (info.truncated);
  g_test_message ("Fig 14 shape: %u orders of 9! = 362880, %" G_GUINT64_FORMAT
                  " nodes", orders->len, info.n_nodes);
  /* Every step from the back has exactly the paper's two branches
   * (K = 2), except the first operator, which has one place left:
   * K^(N-1) = 256 leaves, against 9! = 362880 orders. */
  g_assert_cmpuint (orders->len, ==, 256);
  for (guint n = 2; n <= 14; n++)
    {
      g_autoptr(GPtrArray) o = NULL;
      fig14 (&p, exec, pre, movable, kind, n);
      o = elk_orders_suffix_tree (&p, NULL);
      g_assert_cmpuint (o->len, ==, 1u << (n - 1));
    }
  /* Room for K = 3: 2 * 3^(N-2) (1458 for N = 8, against 40320). */
  for (guint n = 3, want = 6; n <= 10; n++, want *= 3)
    {
      g_autoptr(GPtrArray) o = NULL;
      fig14 (&p, exec, pre, movable, kind, n);
      p.capacity = 3;
      o = elk_orders_suffix_tree (&p, NULL);
      g_assert_cmpuint (o->len, ==, want);
    }
}

static guint
displacement (const guint32 *order, guint n)
{
  guint d = 0;
  for (guint q = 0; q < n; q++)
    d += order[q] > q ? order[q] - q : q - order[q];
  return d;
}

static void
test_cap (void)
{
  guint64 exec[16], pre[16];
  gboolean movable[16];
  guint kind[16];
  ElkSuffixTree p;
  g_autoptr(GPtrArray) all = NULL;
  ElkOrderInfo info;

  g_test_summary ("max-orders keeps a prefix of the full enumeration, which "
                  "runs by increasing displacement from the default order "
                  "(the default first).");
  fig14 (&p, exec, pre, movable, kind, 10);
  p.capacity = 3;
  all = elk_orders_suffix_tree (&p, &info);
  g_assert_false (info.truncated);
  g_assert_cmpuint (all->len, >, 100);
  for (guint o = 1; o < all->len; o++)
    g_assert_cmpuint (displacement (g_ptr_array_index (all, o - 1), p.n), <=,
                      displacement (g_ptr_array_index (all, o), p.n));
  g_assert_cmpuint (displacement (g_ptr_array_index (all, 0), p.n), ==, 0);
  for (guint cap = 1; cap < all->len; cap = cap * 3 + 1)
    {
      g_autoptr(GPtrArray) some = NULL;
      p.max_orders = cap;
      some = elk_orders_suffix_tree (&p, &info);
      g_assert_true (info.truncated);
      g_assert_cmpuint (some->len, ==, cap);
      for (guint o = 0; o < cap; o++)
        g_assert_cmpmem (g_ptr_array_index (some, o), sizeof (guint32) * p.n,
                         g_ptr_array_index (all, o), sizeof (guint32) * p.n);
    }
  /* The node budget stops the search the same way every time. */
  p.max_orders = G_MAXUINT;
  p.max_nodes = 200;
  {
    g_autoptr(GPtrArray) a = elk_orders_suffix_tree (&p, &info);
    g_autoptr(GPtrArray) b = elk_orders_suffix_tree (&p, NULL);
    g_assert_true (info.truncated);
    g_assert_cmpuint (a->len, <, all->len);
    g_assert_cmpuint (a->len, ==, b->len);
    for (guint o = 0; o < a->len; o++)
      g_assert_cmpmem (g_ptr_array_index (a, o), sizeof (guint32) * p.n,
                       g_ptr_array_index (all, o), sizeof (guint32) * p.n);
  }
}

/* ---------------------------------------------------------------------- */
/* The elk scheduler on a graph without layers                             */
/* ---------------------------------------------------------------------- */

/* Plugin objects from this test's registry (tests/core/elk-test-util.c). */
#define make(...) elk_test_make (registry, __VA_ARGS__)

/* An MLP whose MatMuls all differ in size (so no layer repeats, and none
 * is marked as a layer), each followed by a bias add reading a small
 * weight (an HBM-light operator) and a ReLU (no HBM data). */
static ElkGraph *
build_mlp (void)
{
  static const guint64 dims[] = { 256, 1024, 512, 1536, 512, 1024, 384,
                                  768, 256 };
  const guint64 b = 8;
  ElkGraph *g = elk_graph_new ("mlp");
  g_autoptr (GError) error = NULL;
  guint64 sx[2] = { b, dims[0] };
  gint x = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, sx, "x");

  for (guint l = 0; l + 1 < G_N_ELEMENTS (dims); l++)
    {
      guint64 sw[2] = { dims[l], dims[l + 1] }, sb[1] = { dims[l + 1] };
      guint64 sy[2] = { b, dims[l + 1] };
      gint w
          = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_WEIGHT, 2, sw, "w%u", l);
      gint bias
          = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_WEIGHT, 1, sb, "b%u", l);
      gint h = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, sy,
                                    "h%u", l);
      gint a = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, sy,
                                    "a%u", l);
      gint o = elk_test_add_tensor (g, ELK_TENSOR_ORIGIN_ACTIVATION, 2, sy,
                                    "o%u", l);
      guint32 t1[3] = { x, w, h }, t2[3] = { h, bias, a }, t3[2] = { a, o };
      g_autofree char *mm = g_strdup_printf ("mm%u", l);
      g_autofree char *ad = g_strdup_printf ("bias%u", l);
      g_autofree char *re = g_strdup_printf ("relu%u", l);

      elk_graph_add_op (g, mm, "matmul", ELK_OP_MATMUL, -1, "bk,kn->bn", t1,
                        3, NULL, &error);
      g_assert_no_error (error);
      elk_graph_add_op (g, ad, "add", ELK_OP_ELEMENTWISE, -1, "bn,n->bn", t2,
                        3, NULL, &error);
      g_assert_no_error (error);
      elk_graph_add_op (g, re, "relu", ELK_OP_UNARY, -1, "bn->bn", t3, 2,
                        NULL, &error);
      g_assert_no_error (error);
      x = o;
    }
  g_assert_true (elk_graph_validate (g, &error));
  g_assert_no_error (error);
  return g;
}

typedef ElkTestCompileFixture Fixture;

static void
fixture_setup (Fixture *f, gconstpointer data)
{
  /* 64 cores of 64 KiB: the MLP's 7.2 MB of weights do not fit. */
  elk_test_compile_fixture_init (f, registry, build_mlp ());
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
  elk_test_compile_fixture_clear (f);
}

static ElkProgram *
schedule (Fixture *f, const char *first_prop, ...)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GObject) alloc = make (ELK_TYPE_ALLOCATOR, "reservation", NULL);
  g_autoptr(GObject) sched = NULL;
  ElkProgram *program;
  const ElkFeature *feature = elk_registry_find (registry, ELK_TYPE_SCHEDULER,
                                                 "elk", &error);
  va_list ap;

  g_assert_no_error (error);
  va_start (ap, first_prop);
  sched = g_object_new_valist (feature->type, first_prop, ap);
  va_end (ap);
  /* elk_scheduler_schedule validates the program (R1-R3, SRAM). */
  program = elk_scheduler_schedule (ELK_SCHEDULER (sched), f->plans,
                                    ELK_ALLOCATOR (alloc), &error);
  g_assert_no_error (error);
  g_assert_nonnull (program);
  return program;
}

static void
test_scheduler (Fixture *f, gconstpointer data)
{
  g_autoptr(ElkProgram) dyn = schedule (f, "order-search", 0, NULL);
  g_autoptr(ElkProgram) full = schedule (f, "order-search", 1, NULL);
  g_autoptr(ElkProgram) tree = schedule (f, "order-search", 1,
                                         "order-enumeration", 2, NULL);
  g_autoptr(GError) error = NULL;

  g_test_summary ("On a graph without layers Elk-Full enumerates more than "
                  "one order with the suffix tree (auto picks it) and is "
                  "never slower than Elk-Dyn; forcing layers is an error.");
  g_test_message ("dyn %.6g ms, full %.6g ms over %u orders",
                  elk_program_get_estimate (dyn) * 1e3,
                  elk_program_get_estimate (full) * 1e3,
                  elk_program_get_n_orders (full));
  g_assert_cmpuint (elk_program_get_n_orders (dyn), ==, 1);
  g_assert_cmpuint (elk_program_get_n_orders (full), >, 1);
  g_assert_cmpuint (elk_program_get_n_orders (tree), ==,
                    elk_program_get_n_orders (full));
  g_assert_cmpfloat (elk_program_get_estimate (full), <=,
                     elk_program_get_estimate (dyn));
  g_assert_cmpfloat (elk_program_get_estimate (full), ==,
                     elk_program_get_estimate (tree));

  {
    g_autoptr(GObject) alloc = make (ELK_TYPE_ALLOCATOR, "reservation",
                                     NULL);
    g_autoptr(GObject) sched = make (ELK_TYPE_SCHEDULER, "elk",
                                     "order-enumeration", 1, NULL);
    g_autoptr(ElkProgram) p = elk_scheduler_schedule (ELK_SCHEDULER (sched),
                                                      f->plans,
                                                      ELK_ALLOCATOR (alloc),
                                                      &error);
    g_assert_null (p);
    g_assert_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED);
    g_test_message ("%s", error->message);
    g_assert_nonnull (strstr (error->message, "order-enumeration=layers"));
    g_assert_nonnull (strstr (error->message, "'mlp'"));
  }
}

static void
test_threads (Fixture *f, gconstpointer data)
{
  g_autoptr(ElkProgram) p1 = schedule (f, "threads", 1, NULL);
  g_autoptr(ElkProgram) p2 = schedule (f, "threads", 2, NULL);

  g_test_summary ("The suffix-tree search gives the same program on 1 and "
                  "2 threads.");
  g_assert_cmpuint (elk_program_get_n_orders (p1), >, 1);
  elk_test_assert_same_program (p1, p2);
}

/* ---------------------------------------------------------------------- */
/* Settings a user can get wrong                                           */
/* ---------------------------------------------------------------------- */

static void
expect_param_error (const char *param, const char *value, gint code,
                    const char *needle)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *xml = g_strdup_printf (
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<experiment format=\"1\" name=\"orders\">\n"
    "  <frontend name=\"llama\"><param name=\"preset\">llama2-13b-paper"
    "</param></frontend>\n"
    "  <chip name=\"analytic\"/>\n"
    "  <allocator name=\"reservation\"/>\n"
    "  <scheduler name=\"elk\">\n"
    "    <param name=\"%s\">%s</param>\n"
    "  </scheduler>\n"
    "</experiment>\n", param, value);
  g_autoptr(ElkExperiment) e = elk_experiment_load_from_data (
    xml, strlen (xml), "orders.xml", registry, &error);

  g_assert_null (e);
  g_assert_error (error, ELK_EXPERIMENT_ERROR, code);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "orders.xml:"));
  g_assert_nonnull (strstr (error->message, param));
  g_assert_nonnull (strstr (error->message, needle));
}

static void
test_bad_values (void)
{
  g_autoptr(GError) error = NULL;

  g_test_summary ("Bad order-search settings in an experiment fail at load "
                  "time with the file, line, property and what is allowed.");
  if (elk_registry_find (registry, ELK_TYPE_FRONTEND, "llama", &error)
      == NULL)
    {
      g_test_skip ("the llama frontend is not built");
      return;
    }
  expect_param_error ("order-enumeration", "suffix",
                      ELK_EXPERIMENT_ERROR_BAD_VALUE,
                      "auto, layers, suffix-tree");
  expect_param_error ("max-orders", "0", ELK_EXPERIMENT_ERROR_OUT_OF_RANGE,
                      "out of range");
  expect_param_error ("order-search", "fast", ELK_EXPERIMENT_ERROR_BAD_VALUE,
                      "dyn, full");
}

int
main (int argc, char *argv[])
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  registry = elk_test_registry_new_default ();
  g_test_add_func ("/orders/suffix-tree/brute-force", test_brute_force);
  g_test_add_func ("/orders/suffix-tree/fig14", test_fig14);
  g_test_add_func ("/orders/suffix-tree/cap", test_cap);
  g_test_add ("/orders/scheduler/non-layered", Fixture, NULL, fixture_setup,
              test_scheduler, fixture_teardown);
  g_test_add ("/orders/scheduler/threads", Fixture, NULL, fixture_setup,
              test_threads, fixture_teardown);
  g_test_add_func ("/orders/bad-values", test_bad_values);
  ret = g_test_run ();
  g_object_unref (registry);
  return ret;
}
