/* elk-search.c: the deterministic parallel search over preload orders and
 * engine parameter sets. */
#include "config.h"

#undef G_LOG_DOMAIN
#define G_LOG_DOMAIN "elk-compiler"

#include <math.h>
#include "elk-compile-private.h"

/* Evaluating orders and parameter sets on a thread pool.  Each task writes
 * only its own slot; the winner is the lowest latency, ties going to the
 * lowest (order, parameter set) index, so the result does not depend on
 * the number of threads or on which finishes first. */
typedef struct
{
  const ElkEngine *engine;
  GPtrArray *orders;
  const ElkEngineParams *params;
  guint n_params;
  double *latency;
  GMutex lock;
  GError *error;
  guint error_index;
} Search;

static void
search_one (Search *s, guint idx)
{
  ElkEngineResult r;
  GError *error = NULL;
  const guint32 *order = g_ptr_array_index (s->orders, idx / s->n_params);

  elk_engine_result_init (&r, s->engine->n_ops);
  if (!elk_engine_run (s->engine, order, &s->params[idx % s->n_params], &r,
                       &error))
    {
      g_mutex_lock (&s->lock);
      if (s->error == NULL || idx < s->error_index)
        {
          g_clear_error (&s->error);
          s->error = error;
          s->error_index = idx;
        }
      else
        g_error_free (error);
      g_mutex_unlock (&s->lock);
      s->latency[idx] = INFINITY;
    }
  else
    s->latency[idx] = r.feasible ? r.latency_s : INFINITY;
  elk_engine_result_clear (&r);
}

static void
search_task (gpointer data, gpointer user_data)
{
  search_one (user_data, GPOINTER_TO_UINT (data) - 1);
}

/* Runs every (order, parameter set) pair on a thread pool and fills
 * s->latency (INFINITY for an infeasible pair).  Returns FALSE with @error
 * set on a run's error, the lowest-numbered one. */
static gboolean
search_all (Search *s, guint n_threads, GError **error)
{
  guint total = s->orders->len * s->n_params;

  if (n_threads == 0)
    n_threads = g_get_num_processors ();
  if (n_threads <= 1 || total <= 1)
    for (guint idx = 0; idx < total; idx++)
      search_one (s, idx);
  else
    {
      GThreadPool *pool
          = g_thread_pool_new (search_task, s, (gint) MIN (n_threads, total),
                               TRUE, NULL);
      for (guint idx = 0; idx < total; idx++)
        g_thread_pool_push (pool, GUINT_TO_POINTER (idx + 1), NULL);
      g_thread_pool_free (pool, FALSE, TRUE);
    }
  if (s->error != NULL)
    {
      g_propagate_error (error, s->error);
      s->error = NULL;
      return FALSE;
    }
  return TRUE;
}

/* Sorts candidate indices by estimate, ties going to the lower index. */
static gint
rank_cmp (gconstpointer a, gconstpointer b, gpointer user_data)
{
  const double *latency = user_data;
  guint x = *(const guint *) a, y = *(const guint *) b;

  if (latency[x] != latency[y])
    return latency[x] < latency[y] ? -1 : 1;
  return x < y ? -1 : (x > y);
}

/* The search's debug log, and the error when no pair is feasible.  Fills
 * @ranked with up to @top feasible pairs, best estimate first. */
static gboolean
rank (const Search *s, guint top, GArray *ranked, GError **error)
{
  guint total = s->orders->len * s->n_params, n_feasible = 0;
  g_autofree guint *idx = g_new (guint, MAX (total, 1u));
  double best_other = INFINITY;

  for (guint k = 0; k < total; k++)
    if (s->latency[k] < INFINITY)
      {
        idx[n_feasible++] = k;
        if (k >= s->n_params)
          best_other = MIN (best_other, s->latency[k]);
      }
  if (n_feasible == 0)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_DOES_NOT_FIT,
                   "graph '%s': no schedule fits the %" G_GUINT64_FORMAT
                   " B of usable SRAM per core under any of the %u "
                   "configurations tried",
                   elk_graph_get_name (s->engine->graph), s->engine->usable,
                   total);
      return FALSE;
    }
  g_qsort_with_data (idx, (gint) n_feasible, sizeof (guint), rank_cmp,
                     s->latency);
  if (s->orders->len > 1)
    g_debug ("search: best non-default order %.6g s", best_other);
  g_debug ("search: %u of %u (order, parameter set) runs feasible; best "
           "#%u at %.6g s (order %u, set %u); default order, set 0: %.6g s",
           n_feasible, total, idx[0], s->latency[idx[0]], idx[0] / s->n_params,
           idx[0] % s->n_params, s->latency[0]);
  for (guint k = 0; k < MIN (top, n_feasible); k++)
    {
      ElkEngineRank r
          = { idx[k] / s->n_params, idx[k] % s->n_params, s->latency[idx[k]] };
      g_array_append_val (ranked, r);
    }
  return TRUE;
}

/**
 * elk_engine_search_ranked:
 * @engine: the engine
 * @orders: (element-type guint32*): candidate preload orders, the default
 *   one first
 * @params: (array length=n_params): candidate parameter sets
 * @n_params: their number
 * @n_threads: threads to use (0: one per processor)
 * @top: most pairs to return
 * @ranked: (element-type ElkEngineRank): receives, appended, up to @top
 *   feasible (order, parameter set) pairs, the lowest estimate first, ties
 *   going to the lowest (order, parameter set) index
 * @error: return location for a #GError
 *
 * Like elk_engine_search(), but hands back the best @top candidates by
 * the engine's estimate instead of the winner, so that a scheduler can
 * make its final choice among them by another measure (for instance
 * elk_timeline_run_program(), the analytic chip's own model).  The result
 * does not depend on the thread count.
 *
 * Returns: %FALSE with @error set on a run's error (the lowest-numbered
 *   one) or when no pair is feasible
 */
gboolean
elk_engine_search_ranked (const ElkEngine *engine,
                          GPtrArray *orders,
                          const ElkEngineParams *params,
                          guint n_params,
                          guint n_threads,
                          guint top,
                          GArray *ranked,
                          GError **error)
{
  Search s = { 0 };
  gboolean ok;

  s.engine = engine;
  s.orders = orders;
  s.params = params;
  s.n_params = n_params;
  s.latency = g_new (double, orders->len *n_params);
  g_mutex_init (&s.lock);
  ok = search_all (&s, n_threads, error) && rank (&s, top, ranked, error);
  g_mutex_clear (&s.lock);
  g_free (s.latency);
  return ok;
}

/**
 * elk_engine_search:
 * @engine: the engine
 * @orders: (element-type guint32*): candidate preload orders, the default
 *   one first
 * @params: (array length=n_params): candidate parameter sets
 * @n_params: their number
 * @n_threads: threads to use (0: one per processor)
 * @best: (out caller-allocates): a result made by elk_engine_result_init(),
 *   receives the best run (re-run on the caller's thread)
 * @best_order: (out): index of its order
 * @best_params: (out): index of its parameter set
 * @error: return location for a #GError
 *
 * Runs every (order, parameter set) pair on a thread pool and keeps the
 * lowest latency, ties going to the lowest (order, parameter set) index,
 * so the result does not depend on the thread count.
 *
 * Returns: %FALSE with @error set on a run's error (the lowest-numbered
 *   one) or when no pair is feasible
 */
gboolean
elk_engine_search (const ElkEngine *engine,
                   GPtrArray *orders,
                   const ElkEngineParams *params,
                   guint n_params,
                   guint n_threads,
                   ElkEngineResult *best,
                   guint *best_order,
                   guint *best_params,
                   GError **error)
{
  g_autoptr (GArray) ranked
      = g_array_new (FALSE, FALSE, sizeof (ElkEngineRank));
  const ElkEngineRank *win;

  if (!elk_engine_search_ranked (engine, orders, params, n_params, n_threads, 1,
                                 ranked, error))
    return FALSE;
  win = &g_array_index (ranked, ElkEngineRank, 0);
  *best_order = win->order;
  *best_params = win->params;
  return elk_engine_run (engine, g_ptr_array_index (orders, *best_order),
                         &params[*best_params], best, error);
}

/**
 * elk_engine_search_program:
 * @engine: the engine
 * @orders: (element-type guint32*): candidate preload orders, the default
 *   one first
 * @params: (array length=n_params): candidate parameter sets
 * @n_params: their number
 * @n_threads: threads to use (0: one per processor)
 * @error: return location for a #GError
 *
 * elk_engine_search() then elk_engine_build_program() on the winner, with
 * the number of orders searched recorded in the program: the whole of a
 * scheduler that searches one set of orders.
 *
 * Returns: (transfer full) (nullable): the program, or %NULL with @error
 *   set
 */
ElkProgram *
elk_engine_search_program (const ElkEngine *engine,
                           GPtrArray *orders,
                           const ElkEngineParams *params,
                           guint n_params,
                           guint n_threads,
                           GError **error)
{
  ElkEngineResult best;
  ElkProgram *program = NULL;
  guint best_order = 0, best_params = 0;

  elk_engine_result_init (&best, engine->n_ops);
  if (elk_engine_search (engine, orders, params, n_params, n_threads, &best,
                         &best_order, &best_params, error))
    {
      program = elk_engine_build_program (engine, params[best_params].policy,
                                          g_ptr_array_index (orders,
                                                             best_order),
                                          &best);
      elk_program_set_n_orders (program, orders->len);
    }
  elk_engine_result_clear (&best);
  return program;
}

/**
 * elk_order_new_identity:
 * @n: number of operators
 *
 * Returns: (transfer full): the default preload order 0, 1, ..., @n - 1,
 *   freed with g_free()
 */
guint32 *
elk_order_new_identity (guint n)
{
  guint32 *order = g_new (guint32, n);
  for (guint i = 0; i < n; i++)
    order[i] = i;
  return order;
}
