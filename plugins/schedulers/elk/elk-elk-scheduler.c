/* elk-elk-scheduler.c: Elk's scheduler (elk-paper.md §3.5-3.7).
 *
 * Two-level inductive scheduling: from the last operator back, each
 * operator picks the preload number whose allocation (by the experiment's
 * allocator) lets it start latest.  order-search=dyn keeps the default
 * preload order and, like the artifact, tries several preload NoC shares
 * (load-noc-share, 0.9, 0.7, 0.5); order-search=full enumerates preload
 * orders of the layer groups (each ending at a MatMul, moved at most
 * max-displacement places, equivalent orders removed, one order applied to
 * every identical layer) and evaluates each with the full scheduling pass
 * on a GThreadPool.  Graphs without repeated layers get the paper's
 * generic suffix-tree enumeration instead (Fig 14,
 * core/compile/elk-orders.c);
 * order-enumeration forces one method or the other, for ablations.  Both
 * contention variants are tried unless contention
 * says otherwise.  The engine's backward estimate ranks the candidates;
 * with select=estimate the lowest estimate wins, with select=timeline (the
 * default) every default-order candidate and the select-top best
 * reordered ones of each contention variant are priced by the analytic chip's
 * own forward model (elk_timeline_run_program()) and the lowest price wins,
 * because the backward estimate is several percent off that model
 * (docs/compiler.md, "Choosing by the chip's model"); select=chip runs the
 * same candidates whole on the chip the program is for (the plan set's
 * measurer), so the winner is the best of them by the number the results
 * report, on any backend, at one chip run per candidate; select=auto
 * prices them all by the timeline and runs only the finalists on the chip
 * (choose_auto()).  Either way Elk-Dyn's
 * candidates are a subset of Elk-Full's, so with the same options Full is never
 * slower than Dyn by the measure it chooses by.  Ties go to the lowest-numbered
 * candidate, so results are identical whatever the thread count.  It is a
 * policy on libelk's backward engine (elk-compile.h) plus the order
 * search.
 */
#include "config.h"

#include <math.h>
#include <string.h>

/* The engine and its policies are unstable API (elk-compile.h). */
#define ELK_USE_UNSTABLE_API
#include <elk/elk.h>

#define ELK_TYPE_ELK_SCHEDULER (elk_elk_scheduler_get_type ())
G_DECLARE_FINAL_TYPE (ElkElkScheduler, elk_elk_scheduler, ELK, ELK_SCHEDULER, GObject)

typedef enum
{
  ELK_ORDER_SEARCH_DYN,
  ELK_ORDER_SEARCH_FULL,
} ElkOrderSearch;

GType elk_order_search_get_type (void);
/* A GType a plugin registers carries the plugin's own prefix
 * (docs/plugin-guide.md, naming). */
G_DEFINE_ENUM_TYPE (ElkElkOrderSearch,
                    elk_order_search,
                    G_DEFINE_ENUM_VALUE (ELK_ORDER_SEARCH_DYN, "dyn"),
                    G_DEFINE_ENUM_VALUE (ELK_ORDER_SEARCH_FULL, "full"))

/* How the final schedule is chosen among the ranked candidates. */
typedef enum
{
  ELK_SELECT_ESTIMATE,
  ELK_SELECT_TIMELINE,
  ELK_SELECT_TIMELINE_DELAY_PRELOAD,
  ELK_SELECT_CHIP,
  ELK_SELECT_AUTO,
} ElkSelect;

GType elk_select_get_type (void);
G_DEFINE_ENUM_TYPE (ElkElkSelect,
                    elk_select,
                    G_DEFINE_ENUM_VALUE (ELK_SELECT_ESTIMATE, "estimate"),
                    G_DEFINE_ENUM_VALUE (ELK_SELECT_TIMELINE, "timeline"),
                    G_DEFINE_ENUM_VALUE (ELK_SELECT_TIMELINE_DELAY_PRELOAD,
                                         "timeline-delay-preload"),
                    G_DEFINE_ENUM_VALUE (ELK_SELECT_CHIP, "chip"),
                    G_DEFINE_ENUM_VALUE (ELK_SELECT_AUTO, "auto"))

struct _ElkElkScheduler
{
  GObject parent_instance;
  gint order_search;
  gint order_enumeration;
  guint max_displacement;
  guint max_orders;
  guint threads;
  double theta;
  gint contention;
  gint select;
  guint select_top;
  gint expert_preload;
  double expert_threshold;
  guint expert_hot;
};

/* The policy.  The experiment's allocator splits the usable SRAM between E
 * and the operators preloaded next to it (level two of §3.5), re-sizing
 * their preload states, with the contention penalty it charges. */
static ElkEngineVerdict
elk_choose (const ElkEngine *engine, const ElkEngineParams *params,
            ElkEngineCandidate *c, GError **error)
{
  ElkAllocRequest req = {
    .plans = elk_engine_get_plans (engine),
    .exec_op = c->op,
    .n_preloaded = c->n_preloaded,
    .preloaded = c->preloaded,
    .preloaded_fixed = c->preloaded_entries,
    .sram_budget = elk_engine_get_usable_sram (engine),
    .contention = ELK_ALLOC_CONTENTION_SHARED,
  };
  ElkAllocResult res = { .preload_entries = c->preload_entries };
  gboolean fits = FALSE;

  if (!elk_allocator_allocate (elk_engine_get_allocator (engine), &req, &res,
                               &fits, error))
    return ELK_ENGINE_FAILED;
  if (!fits)
    return c->table->hbm_bytes == 0 ? ELK_ENGINE_SKIP : ELK_ENGINE_STOP;
  c->entry = res.exec_entry;
  c->exec_s = c->table->cold_hot[c->entry].exec_s;
  c->warmup_s = c->table->cold_hot[c->entry].warmup_s;
  c->extra_s = res.warmup_s - c->warmup_s;
  c->sets_preload_entries = TRUE;
  return ELK_ENGINE_TAKE;
}

/* Every preload number, the latest start winning; an operator without HBM
 * data has nothing to wait for, so it only tries the deepest overlap,
 * backing off when that does not fit (artifact behaviour). */
static ElkEngineDepth
elk_depth (const ElkEngine *engine, const ElkEngineParams *params,
           guint32 op)
{
  return elk_engine_get_table (engine, op)->hbm_bytes == 0
           ? ELK_ENGINE_DEPTH_DEEPEST_FIRST
           : ELK_ENGINE_DEPTH_LATEST_START;
}

static const ElkEnginePolicy elk_policy = {
  .name = "elk",
  .choose = elk_choose,
  .depth = elk_depth,
  .preload_size = ELK_ENGINE_PRELOAD_SIZE_CHOSEN,
  .fit_contention = TRUE,
};

/* The default order is tried with the artifact's ladder of preload NoC
 * shares (load-noc-share, then 0.9, 0.7, 0.5: what Elk-Dyn does); the
 * other orders with load-noc-share only (what the artifact's Elk-Full
 * does, at 0.99).  So Elk-Full searches a superset of Elk-Dyn and is never
 * slower than it. */
static void
make_params (const ElkElkScheduler *self, gboolean full, GArray *ladder,
             GArray *single)
{
  double shares[4] = { self->theta, 0.9, 0.7, 0.5 };

  for (guint k = 0; k < 4; k++)
    {
      gboolean dup = FALSE;
      for (guint m = 0; m < k; m++)
        dup = dup || shares[m] == shares[k];
      if (dup)
        continue;
      for (guint v = 0; v < 2; v++)
        {
          ElkEngineParams p = { &elk_policy, NULL, shares[k], v == 0, full };
          if (!elk_contention_variant_allows (self->contention, v == 0))
            continue;
          g_array_append_val (ladder, p);
          if (k == 0)
            g_array_append_val (single, p);
        }
    }
}

/* order-search=full: the candidate orders, logged for
 * G_MESSAGES_DEBUG=elk-elk. */
static GPtrArray *
make_orders (const ElkElkScheduler *self, const ElkEngine *engine,
             ElkOrderInfo *info, GError **error)
{
  GPtrArray *orders = elk_orders_enumerate (engine, self->order_enumeration,
                                            self->max_displacement,
                                            self->max_orders, info, error);

  if (orders == NULL)
    return NULL;
  if (info->method == ELK_ORDER_ENUM_LAYERS)
    g_debug ("layers: %u identical layers, %u groups per layer, %u "
             "candidate orders%s", info->n_layers, info->n_groups,
             orders->len, info->truncated ? " (max-orders reached)" : "");
  else
    g_debug ("suffix tree: %u HBM-heavy of %u operators, %u candidate "
             "orders, %" G_GUINT64_FORMAT " nodes, displacement up to %u%s",
             info->n_movable, elk_engine_get_n_ops (engine), orders->len,
             info->n_nodes, info->max_level,
             info->truncated ? " (stopped: max-orders or node budget)"
                             : " (complete)");
  return orders;
}

/* One ranked candidate: its order (in @from) and parameter set. */
typedef struct
{
  GPtrArray *from;
  const ElkEngineParams *params;
  ElkEngineRank rank;
} Pick;

static void
add_picks (GArray *picks,
           GArray *ranked,
           GPtrArray *from,
           const ElkEngineParams *params)
{
  for (guint k = 0; k < ranked->len; k++)
    {
      Pick p = { from, NULL, g_array_index (ranked, ElkEngineRank, k) };
      p.params = &params[p.rank.params];
      g_array_append_val (picks, p);
    }
}

/* Runs pick @p again and builds its program. */
static ElkProgram *
build_pick (const ElkEngine *engine, const Pick *p, GError **error)
{
  const guint32 *order = g_ptr_array_index (p->from, p->rank.order);
  ElkEngineResult r;
  ElkProgram *program = NULL;

  elk_engine_result_init (&r, elk_engine_get_n_ops (engine));
  if (elk_engine_run (engine, order, p->params, &r, error))
    program = elk_engine_build_program (engine, &elk_policy, order, &r);
  elk_engine_result_clear (&r);
  return program;
}

/* select=estimate: the lowest engine estimate, ties to the earliest pick
 * (the default order first, as @picks lists it). */
static ElkProgram *
choose_by_estimate (const ElkEngine *engine, GArray *picks, GError **error)
{
  guint win = 0;

  for (guint k = 1; k < picks->len; k++)
    if (g_array_index (picks, Pick, k).rank.estimate_s
        < g_array_index (picks, Pick, win).rank.estimate_s)
      win = k;
  return build_pick (engine, &g_array_index (picks, Pick, win), error);
}

/* Whether @a and @b decide the same: the same steps, and per operator the
 * same plans, budget, preload share and declared bytes, under the same
 * assumptions.  A chip prices a program from exactly these (never from
 * the predictions), so two such programs measure the same; picks that
 * differ only in how they were found often build the same program.  The
 * byte comparison is conservative: a false "different" only costs a
 * measurement. */
static gboolean
same_decisions (const ElkProgram *a, const ElkProgram *b)
{
  guint n_ops = elk_graph_get_n_ops (elk_program_get_graph (a));
  guint n_steps = elk_program_get_n_steps (a);

  if (elk_program_get_graph (a) != elk_program_get_graph (b)
      || n_steps != elk_program_get_n_steps (b)
      || elk_program_get_assumptions (a) != elk_program_get_assumptions (b))
    return FALSE;
  for (guint s = 0; s < n_steps; s++)
    {
      const ElkStep *x = elk_program_get_step (a, s);
      const ElkStep *y = elk_program_get_step (b, s);
      if (x->kind != y->kind || x->op != y->op)
        return FALSE;
    }
  for (guint i = 0; i < n_ops; i++)
    {
      const ElkProgramOp *x = elk_program_peek_op (a, i);
      const ElkProgramOp *y = elk_program_peek_op (b, i);
      if (memcmp (&x->exec_plan, &y->exec_plan, sizeof x->exec_plan) != 0
          || memcmp (&x->preload_plan, &y->preload_plan, sizeof x->preload_plan)
                 != 0
          || x->exec_budget != y->exec_budget
          || x->preload_share != y->preload_share
          || x->hot_bytes != y->hot_bytes || x->cold_bytes != y->cold_bytes
          || x->hbm_bytes != y->hbm_bytes)
        return FALSE;
    }
  return TRUE;
}

/* select=chip: @program's latency on @measurer, or that of an earlier
 * pick that decides the same (@measured holds those programs and
 * @latencies their latencies), so each distinct program runs once. */
static gboolean
measure_pick (ElkChip *measurer,
              const ElkPlanSet *plans,
              ElkProgram *program,
              GPtrArray *measured,
              GArray *latencies,
              double *latency_s,
              GError **error)
{
  for (guint j = 0; j < measured->len; j++)
    if (same_decisions (program, measured->pdata[j]))
      {
        *latency_s = g_array_index (latencies, double, j);
        return TRUE;
      }
  if (!elk_chip_measure (measurer, program, elk_plan_set_get_base (plans),
                         latency_s, error))
    return FALSE;
  g_ptr_array_add (measured, elk_program_ref (program));
  g_array_append_val (latencies, *latency_s);
  return TRUE;
}

/* select=timeline: every pick is priced by the analytic chip's forward
 * model (elk_timeline_run_program(), the chip's defaults: full preload
 * share, and the chosen NoC priority); select=chip: every pick is run
 * whole on the chip the program is compiled for (the plan set's measurer,
 * elk_chip_measure()), which is what the results will report.  The lowest
 * price wins, ties going to the earliest pick. */
static ElkProgram *
choose_by_timeline (const ElkElkScheduler *self,
                    const ElkEngine *engine,
                    GArray *picks,
                    GError **error)
{
  const ElkPlanSet *plans = elk_engine_get_plans (engine);
  ElkCostModel *model = elk_plan_set_get_cost_model (plans);
  ElkChip *measurer = elk_plan_set_get_measurer (plans);
  ElkTimelinePriority priority = self->select == ELK_SELECT_TIMELINE
                                     ? ELK_TIMELINE_PRELOAD_FIRST
                                     : ELK_TIMELINE_EXECUTION_FIRST;
  ElkProgram *best = NULL;
  double best_s = INFINITY;
  g_autoptr (GPtrArray) measured
      = g_ptr_array_new_with_free_func ((GDestroyNotify) elk_program_unref);
  g_autoptr (GArray) latencies = g_array_new (FALSE, FALSE, sizeof (double));

  if (self->select == ELK_SELECT_CHIP && measurer == NULL)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "elk scheduler: select=chip measures the candidates on "
                   "the chip the program is for, and the plan set names "
                   "none (elk-run names it; a caller of the scheduler sets "
                   "it with elk_plan_set_set_measurer())");
      return NULL;
    }
  for (guint k = 0; k < picks->len; k++)
    {
      const Pick *p = &g_array_index (picks, Pick, k);
      ElkProgram *program = build_pick (engine, p, error);
      ElkTimelineResult tr;

      /* The chip runs a program against the analytic tables it was
       * built on, whatever model priced the schedule. */
      if (program != NULL && self->select == ELK_SELECT_CHIP)
        {
          if (!measure_pick (measurer, plans, program, measured, latencies,
                             &tr.latency_s, error))
            g_clear_pointer (&program, elk_program_unref);
        }
      /* A plan set priced by the chip's cost model is priced by that
       * model's own measure of a program; an analytic one by the analytic
       * chip's. */
      else if (program != NULL && model != NULL)
        {
          if (!elk_cost_model_price_program (model, program, plans, priority,
                                             &tr.latency_s, error))
            g_clear_pointer (&program, elk_program_unref);
        }
      else if (program != NULL
               && !elk_timeline_run_program (elk_plan_set_get_spec (plans), 1.0,
                                             priority, program, plans, &tr,
                                             error))
        g_clear_pointer (&program, elk_program_unref);
      if (program == NULL)
        {
          g_clear_pointer (&program, elk_program_unref);
          g_clear_pointer (&best, elk_program_unref);
          return NULL;
        }
      g_debug ("pick %u: order %u, %s, share %.2f: estimate %.6g s, "
               "%s %.6g s (%+.2f%%)",
               k, p->rank.order,
               p->params->delay_exec ? "delay-execution" : "delay-preload",
               p->params->theta, p->rank.estimate_s,
               self->select == ELK_SELECT_CHIP ? "chip" : "timeline",
               tr.latency_s, 100 * (p->rank.estimate_s / tr.latency_s - 1));
      if (tr.latency_s < best_s)
        {
          g_clear_pointer (&best, elk_program_unref);
          best = program;
          best_s = tr.latency_s;
        }
      else
        elk_program_unref (program);
    }
  return best;
}

/* select=auto: the analytic timeline prices every pick, as with
 * select=timeline, and the chip the program is for (the plan set's
 * measurer) runs only the finalists: the timeline's winner and, per
 * contention variant, the timeline's best default-order pick (the first
 * @n_default picks), among which Elk-Dyn with select=auto and the same
 * options chooses.  So Elk-Full is never slower than that Elk-Dyn, nor
 * than itself with select=timeline, on the chip it runs on, at most
 * three chip runs per schedule, and none when the finalists decide the
 * same (on the analytic chip, whose measure is the timeline, it picks
 * what select=timeline picks).  Without a measurer it is select=timeline. */
static ElkProgram *
choose_auto (const ElkElkScheduler *self,
             const ElkEngine *engine,
             GArray *picks,
             guint n_default,
             GError **error)
{
  const ElkPlanSet *plans = elk_engine_get_plans (engine);
  ElkCostModel *model = elk_plan_set_get_cost_model (plans);
  ElkChip *measurer = elk_plan_set_get_measurer (plans);
  guint n = picks->len, win = 0, n_final = 1;
  g_autoptr (GPtrArray) programs
      = g_ptr_array_new_with_free_func ((GDestroyNotify) elk_program_unref);
  g_autoptr (GPtrArray) measured
      = g_ptr_array_new_with_free_func ((GDestroyNotify) elk_program_unref);
  g_autoptr (GArray) latencies = g_array_new (FALSE, FALSE, sizeof (double));
  g_autofree double *price = g_new (double, n);
  g_autofree gboolean *finalist = g_new0 (gboolean, n);
  gint best_default[2] = { -1, -1 };
  double win_s = INFINITY;

  (void) self;
  if (n == 0)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "elk scheduler: select=auto has no candidate to choose "
                   "from");
      return NULL;
    }
  for (guint k = 0; k < n; k++)
    {
      const Pick *p = &g_array_index (picks, Pick, k);
      ElkProgram *program = build_pick (engine, p, error);
      ElkTimelineResult tr;

      if (program == NULL
          || (model != NULL
              && !elk_cost_model_price_program (model, program, plans,
                                                ELK_TIMELINE_PRELOAD_FIRST,
                                                &tr.latency_s, error))
          || (model == NULL
              && !elk_timeline_run_program (elk_plan_set_get_spec (plans), 1.0,
                                            ELK_TIMELINE_PRELOAD_FIRST, program,
                                            plans, &tr, error)))
        {
          g_clear_pointer (&program, elk_program_unref);
          return NULL;
        }
      g_ptr_array_add (programs, program);
      price[k] = tr.latency_s;
      if (price[k] < price[win])
        win = k;
      if (k < n_default)
        {
          guint v = p->params->delay_exec ? 0 : 1;
          if (best_default[v] < 0 || price[k] < price[best_default[v]])
            best_default[v] = (gint) k;
        }
    }
  finalist[win] = TRUE;
  for (guint v = 0; v < 2; v++)
    if (best_default[v] >= 0 && !finalist[best_default[v]]
        && !same_decisions (programs->pdata[best_default[v]],
                            programs->pdata[win]))
      {
        finalist[best_default[v]] = TRUE;
        n_final++;
      }
  if (measurer == NULL || n_final == 1)
    return elk_program_ref (programs->pdata[win]);

  /* Finalists in pick order, so ties go to the earliest as elsewhere. */
  for (guint k = 0; k < n; k++)
    {
      double s;

      if (!finalist[k])
        continue;
      if (!measure_pick (measurer, plans, programs->pdata[k], measured,
                         latencies, &s, error))
        return NULL;
      g_debug ("auto finalist %u: timeline %.6g s, chip %.6g s", k, price[k],
               s);
      if (s < win_s)
        {
          win_s = s;
          win = k;
        }
    }
  return elk_program_ref (programs->pdata[win]);
}

static ElkProgram *
elk_elk_scheduler_schedule (ElkScheduler *scheduler,
                            const ElkPlanSet *plans,
                            ElkAllocator *allocator,
                            GError **error)
{
  ElkElkScheduler *self = ELK_ELK_SCHEDULER (scheduler);
  const gboolean full = self->order_search == ELK_ORDER_SEARCH_FULL;
  const gboolean by_estimate = self->select == ELK_SELECT_ESTIMATE;
  g_autoptr(ElkEngine) engine = elk_engine_new (plans, allocator, error);
  g_autoptr(GPtrArray) orders = NULL;
  g_autoptr(GPtrArray) identity = NULL;
  ElkOrderInfo info = { 0 };
  g_autoptr(GArray) ladder = g_array_new (FALSE, FALSE,
                                          sizeof (ElkEngineParams));
  g_autoptr(GArray) single = g_array_new (FALSE, FALSE,
                                          sizeof (ElkEngineParams));
  g_autoptr (GArray) ranked
      = g_array_new (FALSE, FALSE, sizeof (ElkEngineRank));
  g_autoptr (GArray) picks = g_array_new (FALSE, FALSE, sizeof (Pick));
  g_autoptr (ElkProgram) program = NULL;
  guint n_default;

  if (engine == NULL)
    return NULL;
  identity = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (identity,
                   elk_order_new_identity (elk_engine_get_n_ops (engine)));
  if (full && (orders = make_orders (self, engine, &info, error)) == NULL)
    return NULL;
  make_params (self, full, ladder, single);
  if (ladder->len == 0)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "elk scheduler: the properties leave nothing to try");
      return NULL;
    }

  /* The default order with the whole ladder: Elk-Dyn's candidates, all
   * of them picks (select=estimate needs only the best). */
  if (!elk_engine_search_ranked (engine, identity,
                                 (const ElkEngineParams *) ladder->data,
                                 ladder->len, self->threads,
                                 by_estimate ? 1 : ladder->len, ranked, error))
    return NULL;
  add_picks (picks, ranked, identity, (const ElkEngineParams *) ladder->data);
  n_default = picks->len;
  if (full && orders->len > 1)
    {
      /* The artifact gives up a layer order once a step reaches the
       * per-layer preload cap (§3.7 step 7).  A graph without repeated
       * layers has no such cap in the paper: its orders are pruned by
       * SRAM only (the suffix tree), and the engine just caps the preload
       * number. */
      if (info.method == ELK_ORDER_ENUM_SUFFIX_TREE)
        for (guint k = 0; k < single->len; k++)
          g_array_index (single, ElkEngineParams, k).abandon_on_cap = FALSE;
      if (by_estimate)
        {
          g_array_set_size (ranked, 0);
          if (!elk_engine_search_ranked (engine, orders,
                                         (const ElkEngineParams *) single->data,
                                         single->len, self->threads, 1, ranked,
                                         error))
            return NULL;
          add_picks (picks, ranked, orders,
                     (const ElkEngineParams *) single->data);
        }
      /* The engine's estimate is off the chip's model by a different
       * amount for each contention variant (delay-preload schedules are
       * estimated under a model the chip does not use), so each variant
       * sends its own select-top best orders to be priced. */
      for (guint k = 0; !by_estimate && k < single->len; k++)
        {
          const ElkEngineParams *one
              = &g_array_index (single, ElkEngineParams, k);

          g_array_set_size (ranked, 0);
          if (!elk_engine_search_ranked (engine, orders, one, 1, self->threads,
                                         self->select_top, ranked, error))
            return NULL;
          add_picks (picks, ranked, orders, one);
        }
    }
  program = by_estimate ? choose_by_estimate (engine, picks, error)
            : self->select == ELK_SELECT_AUTO
                ? choose_auto (self, engine, picks, n_default, error)
                : choose_by_timeline (self, engine, picks, error);
  if (program == NULL)
    return NULL;
  elk_program_set_n_orders (program, full ? orders->len : 1);
  /* Where the experts of a mixture of experts preload (docs/compiler.md,
   * "Scheduling under routing uncertainty"); no change without them. */
  return elk_program_apply_expert_policy (program, plans, self->expert_preload,
                                          self->expert_threshold,
                                          self->expert_hot, error);
}

ELK_DEFINE_SCHEDULER (ElkElkScheduler,
                      elk_elk_scheduler,
                      elk_elk_scheduler_schedule)

static void
elk_elk_scheduler_class_init (ElkElkSchedulerClass *klass)
{
  ElkFieldProperty props[] = {
    { g_param_spec_enum ("order-search", NULL,
                         "Preload-order permutation: dyn (default order only) "
                         "or full (search orders, §3.7)",
                         elk_order_search_get_type (), ELK_ORDER_SEARCH_FULL,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                             | G_PARAM_STATIC_STRINGS),
      G_STRUCT_OFFSET (ElkElkScheduler, order_search) },
    { g_param_spec_enum (
          "order-enumeration", NULL,
          "How order-search=full makes candidate orders: layers (permute "
          "MatMul/Conv groups of identical layers), suffix-tree (the paper's "
          "generic enumeration, Fig 14), or auto (layers when the graph has "
          "repeated layers, else suffix-tree)",
          elk_order_enum_get_type (), ELK_ORDER_ENUM_AUTO,
          G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS),
      G_STRUCT_OFFSET (ElkElkScheduler, order_enumeration) },
    { g_param_spec_uint ("max-displacement", NULL,
                         "Largest number of positions a layer group may move "
                         "in a candidate order (order-enumeration=layers)",
                         0, 16, 4,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                             | G_PARAM_STATIC_STRINGS),
      G_STRUCT_OFFSET (ElkElkScheduler, max_displacement) },
    { g_param_spec_uint (
          "max-orders", NULL,
          "Most candidate orders evaluated (the enumeration stops there)", 1,
          1000000, 5000,
          G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS),
      G_STRUCT_OFFSET (ElkElkScheduler, max_orders) },
    { elk_engine_param_spec_threads (),
      G_STRUCT_OFFSET (ElkElkScheduler, threads) },
    { elk_engine_param_spec_load_noc_share (0.99),
      G_STRUCT_OFFSET (ElkElkScheduler, theta) },
    { elk_engine_param_spec_contention (ELK_CONTENTION_BEST),
      G_STRUCT_OFFSET (ElkElkScheduler, contention) },
    { g_param_spec_enum (
          "select", NULL,
          "How the final schedule is chosen among the candidates the engine's "
          "estimate ranks: estimate (the lowest estimate, the artifact's "
          "rule), timeline (the lowest price on the analytic chip's own "
          "forward model, delay-execution, as the analytic chip measures by "
          "default), timeline-delay-preload (the same model, delay-preload) "
          "chip (each candidate run whole on the chip the program is for: "
          "what the results report, at one chip run per candidate) or auto "
          "(the timeline prices every candidate and the chip runs the "
          "finalists: the timeline's best and each contention variant's "
          "best default-order candidate, at most three chip runs)",
          elk_select_get_type (), ELK_SELECT_TIMELINE,
          G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS),
      G_STRUCT_OFFSET (ElkElkScheduler, select) },
    { g_param_spec_uint ("select-top", NULL,
                         "With select=timeline, chip or auto, how many of the "
                         "best-estimated "
                         "reordered candidates of each contention variant are "
                         "priced, besides every default-order candidate",
                         1, 100000, 16,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT
                             | G_PARAM_STATIC_STRINGS),
      G_STRUCT_OFFSET (ElkElkScheduler, select_top) },
    { elk_engine_param_spec_expert_preload (),
      G_STRUCT_OFFSET (ElkElkScheduler, expert_preload) },
    { elk_engine_param_spec_expert_threshold (),
      G_STRUCT_OFFSET (ElkElkScheduler, expert_threshold) },
    { elk_engine_param_spec_expert_hot (),
      G_STRUCT_OFFSET (ElkElkScheduler, expert_hot) },
  };

  elk_field_properties_install (G_OBJECT_CLASS (klass), props,
                                G_N_ELEMENTS (props));
}

ELK_PLUGIN_DEFINE_FEATURE (elk,
                           "Elk: inductive scheduling, cost-aware "
                           "allocation, preload-order search",
                           "0.1",
                           ELK_TYPE_SCHEDULER,
                           "elk",
                           ELK_TYPE_ELK_SCHEDULER)
