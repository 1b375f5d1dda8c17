/* elk-routing.c: where a program preloads the experts of a mixture of
 * experts, relative to their router (issue 21 item 3; docs/compiler.md,
 * "Scheduling under routing uncertainty").
 *
 * A conditional operator (elk_graph_set_op_condition()) runs only when its
 * router selects it.  A preload issued before the router executes is
 * speculation: the chip charges it in full whether or not the routing
 * takes the operator.  One issued after the router is an on-demand load:
 * free when the routing does not take the operator, a possible stall when
 * it does (elk_program_charge_routing()).  The pass below decides, per
 * conditional operator and from its probability alone, whether to keep
 * the scheduler's placement or to move the preload to just after the
 * router's execute step.  Moving a preload later never breaks the SRAM
 * rule R1: it holds its space during fewer executes, not more.
 */
#include "config.h"

#include "elk-compile-private.h"

/**
 * elk_expert_preload_get_type:
 *
 * Returns: the #GType of #ElkExpertPreload ("ElkExpertPreload")
 */
G_DEFINE_ENUM_TYPE (ElkExpertPreload,
                    elk_expert_preload,
                    G_DEFINE_ENUM_VALUE (ELK_EXPERT_PRELOAD_ALL, "all"),
                    G_DEFINE_ENUM_VALUE (ELK_EXPERT_PRELOAD_ON_DEMAND,
                                         "on-demand"),
                    G_DEFINE_ENUM_VALUE (ELK_EXPERT_PRELOAD_LIKELY, "likely"),
                    G_DEFINE_ENUM_VALUE (ELK_EXPERT_PRELOAD_HOT, "hot"),
                    G_DEFINE_ENUM_VALUE (ELK_EXPERT_PRELOAD_ORACLE, "oracle"))

#define PARAM_FLAGS                                                            \
  (G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS)

/**
 * elk_engine_param_spec_expert_preload:
 *
 * The "expert-preload" property of a scheduler: where the preloads of a
 * mixture of experts' experts go relative to their router, an
 * #ElkExpertPreload, by default %ELK_EXPERT_PRELOAD_ALL (the scheduler's
 * own order); passed to elk_program_apply_expert_policy().  It changes
 * nothing on a graph without conditional operators.  Read and write, set
 * at construction.
 *
 * Returns: (transfer floating): a new #GParamSpec, for
 *   elk_field_properties_install() or g_object_class_install_property()
 */
GParamSpec *
elk_engine_param_spec_expert_preload (void)
{
  return g_param_spec_enum ("expert-preload", NULL,
                            "Where expert preloads go relative to their "
                            "router: all (speculate as the schedule has "
                            "it), on-demand (after the router), likely "
                            "(speculate when the probability is at least "
                            "expert-threshold), hot (the expert-hot most "
                            "likely per router), oracle (knows the routing; "
                            "a bound, declared known-routing)",
                            elk_expert_preload_get_type (),
                            ELK_EXPERT_PRELOAD_ALL, PARAM_FLAGS);
}

/**
 * elk_engine_param_spec_expert_threshold:
 *
 * The "expert-threshold" property of a scheduler: under
 * %ELK_EXPERT_PRELOAD_LIKELY, the probability from which an expert is
 * preloaded before its router, a double in [0, 1], by default 0.5.
 * Read and write, set at construction.
 *
 * Returns: (transfer floating): a new #GParamSpec
 */
GParamSpec *
elk_engine_param_spec_expert_threshold (void)
{
  return g_param_spec_double ("expert-threshold", NULL,
                              "expert-preload=likely: speculate on an expert "
                              "whose router selects it with at least this "
                              "probability",
                              0.0, 1.0, 0.5, PARAM_FLAGS);
}

/**
 * elk_engine_param_spec_expert_hot:
 *
 * The "expert-hot" property of a scheduler: under %ELK_EXPERT_PRELOAD_HOT,
 * how many of each router's conditional operators, the most likely first,
 * are preloaded before it; an unsigned integer, by default 2.  Read and
 * write, set at construction.
 *
 * Returns: (transfer floating): a new #GParamSpec
 */
GParamSpec *
elk_engine_param_spec_expert_hot (void)
{
  return g_param_spec_uint ("expert-hot", NULL,
                            "expert-preload=hot: how many conditional "
                            "operators per router, the most likely first, "
                            "are preloaded before it",
                            0, G_MAXUINT32, 2, PARAM_FLAGS);
}

typedef struct
{
  guint32 op;
  double probability;
} Ranked;

/* Most likely first; ties by graph order, so that the choice is
 * deterministic. */
static gint
ranked_cmp (gconstpointer a, gconstpointer b)
{
  const Ranked *x = a, *y = b;

  if (x->probability != y->probability)
    return x->probability > y->probability ? -1 : 1;
  return x->op < y->op ? -1 : x->op > y->op;
}

/* Marks in @speculate the conditional operators each router's hot set
 * holds: its @hot most likely ones. */
static void
mark_hot (const ElkGraph *graph, guint hot, gboolean *speculate)
{
  guint n_ops = elk_graph_get_n_ops (graph);
  g_autoptr (GArray) ranked = g_array_new (FALSE, FALSE, sizeof (Ranked));
  g_autofree gboolean *done = g_new0 (gboolean, n_ops);

  for (guint r = 0; r < n_ops; r++)
    {
      g_array_set_size (ranked, 0);
      for (guint i = r + 1; i < n_ops; i++)
        {
          guint32 router;
          double p;
          if (!done[i]
              && elk_graph_get_op_condition (graph, i, &router, &p, NULL)
              && router == r)
            {
              Ranked x = { i, p };
              g_array_append_val (ranked, x);
              done[i] = TRUE;
            }
        }
      g_array_sort (ranked, ranked_cmp);
      for (guint k = 0; k < MIN (hot, ranked->len); k++)
        speculate[g_array_index (ranked, Ranked, k).op] = TRUE;
    }
}

/* Whether each conditional operator keeps a preload before its router.
 * Only %ELK_EXPERT_PRELOAD_ORACLE reads whether the routing takes it. */
static void
decide (const ElkGraph *graph,
        ElkExpertPreload policy,
        double threshold,
        guint hot,
        gboolean *speculate)
{
  guint n_ops = elk_graph_get_n_ops (graph);

  if (policy == ELK_EXPERT_PRELOAD_HOT)
    {
      mark_hot (graph, hot, speculate);
      return;
    }
  for (guint i = 0; i < n_ops; i++)
    {
      double p;
      gboolean taken;

      if (!elk_graph_get_op_condition (graph, i, NULL, &p, NULL))
        continue;
      switch (policy)
        {
        case ELK_EXPERT_PRELOAD_ALL:
          speculate[i] = TRUE;
          break;
        case ELK_EXPERT_PRELOAD_LIKELY:
          speculate[i] = p >= threshold;
          break;
        case ELK_EXPERT_PRELOAD_ORACLE:
          elk_graph_get_op_condition (graph, i, NULL, NULL, &taken);
          speculate[i] = taken;
          break;
        default:
          speculate[i] = FALSE;
          break;
        }
    }
}

/* Speculation's second half: each speculated expert whose preload the
 * schedule left after its router is preloaded as early as the graph order
 * allows, right after the router's own preload (with the experts before
 * it, in graph order), as a schedule that knew it needed the expert would
 * place it; when the SRAM during some execute in between would overflow,
 * at the first later insertion point that fits, and at the latest just
 * before the router executes; if even that does not fit, it stays on
 * demand.  Never later than the schedule had it.  Resident sizes come from
 * the causal derivation of @program (every expert counted as if taken, so
 * that the result validates) and are updated as preloads move. */
static ElkProgram *
hoist (ElkProgram *program,
       const ElkPlanSet *plans,
       const gboolean *speculate,
       GError **error)
{
  ElkGraph *graph = elk_program_get_graph (program);
  guint n_ops = elk_graph_get_n_ops (graph);
  guint n_steps = elk_program_get_n_steps (program);
  guint64 usable
      = elk_chip_spec_get_usable_sram (elk_plan_set_get_spec (plans));
  g_autofree ElkOpCost *costs = elk_program_derive (program, plans, error);
  g_autofree gint *preload_step = NULL, *exec_step = NULL;
  g_autofree gint *insert_before = NULL; /* per op: step index, or -1 */
  g_autofree guint *first = NULL;
  g_autofree guint32 *bucket = NULL;
  ElkProgram *out;

  if (costs == NULL)
    return NULL;
  preload_step = g_new (gint, n_ops);
  exec_step = g_new (gint, n_ops);
  insert_before = g_new (gint, n_ops);
  for (guint i = 0; i < n_ops; i++)
    preload_step[i] = exec_step[i] = insert_before[i] = -1;
  for (guint s = 0; s < n_steps; s++)
    {
      const ElkStep *step = elk_program_get_step (program, s);
      (step->kind == ELK_STEP_PRELOAD ? preload_step : exec_step)[step->op]
          = (gint) s;
    }
  for (guint j = 0; j < n_ops; j++)
    {
      guint32 r;
      gint at;

      if (!speculate[j]
          || !elk_graph_get_op_condition (graph, j, &r, NULL, NULL)
          || preload_step[j] < exec_step[r] || costs[j].hbm_bytes == 0)
        continue;
      at = preload_step[r] >= 0 ? preload_step[r] + 1 : exec_step[r];
      while (at <= exec_step[r])
        {
          gboolean fits = TRUE;
          /* The executes between the new and the old issue hold it. */
          for (gint s = at; fits && s < preload_step[j]; s++)
            {
              const ElkStep *step = elk_program_get_step (program, s);
              if (step->kind == ELK_STEP_EXECUTE
                  && costs[step->op].resident_bytes + costs[j].cold_bytes
                         > usable)
                fits = FALSE;
            }
          if (fits)
            break;
          /* Past the next execute. */
          while (at <= exec_step[r]
                 && elk_program_get_step (program, (guint) at)->kind
                        != ELK_STEP_EXECUTE)
            at++;
          at++;
        }
      if (at > exec_step[r])
        continue;
      insert_before[j] = at;
      for (gint s = at; s < preload_step[j]; s++)
        {
          const ElkStep *step = elk_program_get_step (program, s);
          if (step->kind == ELK_STEP_EXECUTE)
            costs[step->op].resident_bytes += costs[j].cold_bytes;
        }
    }

  out = elk_program_new (graph);
  for (guint i = 0; i < n_ops; i++)
    *elk_program_get_op (out, i) = *elk_program_peek_op (program, i);
  elk_program_set_estimate (out, elk_program_get_estimate (program));
  elk_program_set_n_orders (out, elk_program_get_n_orders (program));
  elk_program_set_assumptions (out, elk_program_get_assumptions (program));
  /* The hoisted preloads bucketed by the step they go before, each
   * bucket in graph order. */
  first = g_new0 (guint, n_steps + 1);
  for (guint j = 0; j < n_ops; j++)
    if (insert_before[j] >= 0)
      first[insert_before[j] + 1]++;
  for (guint s = 0; s < n_steps; s++)
    first[s + 1] += first[s];
  bucket = g_new (guint32, MAX (first[n_steps], 1u));
  {
    g_autofree guint *fill = g_memdup2 (first, (n_steps + 1) * sizeof (guint));
    for (guint j = 0; j < n_ops; j++)
      if (insert_before[j] >= 0)
        bucket[fill[insert_before[j]]++] = j;
  }
  for (guint s = 0; s < n_steps; s++)
    {
      const ElkStep *step = elk_program_get_step (program, s);

      for (guint k = first[s]; k < first[s + 1]; k++)
        elk_program_add_preload (out, bucket[k]);
      if (step->kind == ELK_STEP_EXECUTE)
        elk_program_add_execute (out, step->op);
      else if (insert_before[step->op] < 0)
        elk_program_add_preload (out, step->op);
    }
  return out;
}

/**
 * elk_program_apply_expert_policy:
 * @program: a program a scheduler built, of a graph that may have
 *   conditional operators (elk_graph_set_op_condition())
 * @plans: the plan tables @program was compiled against
 * @policy: where expert preloads go
 * @threshold: for %ELK_EXPERT_PRELOAD_LIKELY, the probability from which
 *   an expert is speculated, in [0, 1]
 * @hot: for %ELK_EXPERT_PRELOAD_HOT, how many experts per router are
 *   speculated, the most likely first (ties: graph order)
 * @error: return location for a #GError
 *
 * Rewrites where a program preloads its conditional operators, in two
 * moves.  First, every conditional operator the policy does not speculate
 * on whose preload the program issues before its router's execute step
 * has that preload moved to just after the router's execute step (several
 * moved behind one router keep their order): on demand.  Moving a preload
 * later never breaks the SRAM rule.  Second, every operator the policy
 * speculates on whose preload comes after its router is moved before it:
 * right after the router's own preload (graph order among experts), or
 * later where the SRAM during the executes in between would overflow, and
 * if even just before the router's execute step does not fit, it stays
 * on demand.  The policies read only each operator's probability (and the
 * sizes every schedule reads), never whether the graph's sampled routing
 * takes it (causality), except %ELK_EXPERT_PRELOAD_ORACLE, which
 * speculates exactly on the taken operators and marks the program
 * %ELK_PROGRAM_ASSUME_KNOWN_ROUTING.  The result is checked with
 * elk_program_validate().
 *
 * Returns: (transfer full): the rewritten program (a new one; @program
 *   itself, with a new reference, when the graph has no conditions), or
 *   %NULL with @error set (%ELK_SCHEDULE_ERROR) for a threshold outside
 *   [0, 1], a policy that is none of #ElkExpertPreload or a rewritten
 *   program that does not validate.
 */
ElkProgram *
elk_program_apply_expert_policy (ElkProgram *program,
                                 const ElkPlanSet *plans,
                                 ElkExpertPreload policy,
                                 double threshold,
                                 guint hot,
                                 GError **error)
{
  ElkGraph *graph;
  guint n_ops, n_steps;
  g_autofree gboolean *speculate = NULL;
  g_autofree gint *exec_step = NULL;
  g_autofree gboolean *moved = NULL;
  g_autofree gboolean *router_moved = NULL;
  g_autoptr (ElkProgram) out = NULL;
  ElkProgramAssumptions assume;

  g_return_val_if_fail (program != NULL && plans != NULL, NULL);
  if (!(threshold >= 0.0 && threshold <= 1.0))
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "expert-threshold is %g; expected a probability in "
                   "[0, 1]",
                   threshold);
      return NULL;
    }
  if ((guint) policy > ELK_EXPERT_PRELOAD_ORACLE)
    {
      g_set_error (error, ELK_SCHEDULE_ERROR, ELK_SCHEDULE_ERROR_FAILED,
                   "expert-preload is %d; expected an ElkExpertPreload",
                   (gint) policy);
      return NULL;
    }
  graph = elk_program_get_graph (program);
  if (!elk_graph_has_conditions (graph))
    return elk_program_ref (program);

  n_ops = elk_graph_get_n_ops (graph);
  n_steps = elk_program_get_n_steps (program);
  speculate = g_new0 (gboolean, n_ops);
  decide (graph, policy, threshold, hot, speculate);

  /* Which preloads move: those issued before their router's execute. */
  exec_step = g_new (gint, n_ops);
  moved = g_new0 (gboolean, n_steps);
  router_moved = g_new0 (gboolean, n_ops);
  for (guint i = 0; i < n_ops; i++)
    exec_step[i] = -1;
  for (guint s = 0; s < n_steps; s++)
    {
      const ElkStep *step = elk_program_get_step (program, s);
      if (step->kind == ELK_STEP_EXECUTE && step->op < n_ops)
        exec_step[step->op] = (gint) s;
    }
  for (guint s = 0; s < n_steps; s++)
    {
      const ElkStep *step = elk_program_get_step (program, s);
      guint32 router;

      if (step->kind == ELK_STEP_PRELOAD && step->op < n_ops
          && !speculate[step->op]
          && elk_graph_get_op_condition (graph, step->op, &router, NULL, NULL)
          && (exec_step[router] < 0 || (gint) s < exec_step[router]))
        {
          moved[s] = TRUE;
          router_moved[router] = TRUE;
        }
    }

  assume = elk_program_get_assumptions (program);
  if (policy == ELK_EXPERT_PRELOAD_ORACLE)
    assume |= ELK_PROGRAM_ASSUME_KNOWN_ROUTING;

  out = elk_program_new (graph);
  for (guint i = 0; i < n_ops; i++)
    *elk_program_get_op (out, i) = *elk_program_peek_op (program, i);
  elk_program_set_estimate (out, elk_program_get_estimate (program));
  elk_program_set_n_orders (out, elk_program_get_n_orders (program));
  elk_program_set_assumptions (out, assume);
  for (guint s = 0; s < n_steps; s++)
    {
      const ElkStep *step = elk_program_get_step (program, s);

      if (moved[s])
        continue;
      if (step->kind == ELK_STEP_PRELOAD)
        {
          elk_program_add_preload (out, step->op);
          continue;
        }
      elk_program_add_execute (out, step->op);
      if (!router_moved[step->op])
        continue;
      /* The preloads moved behind this router, in their old order. */
      for (guint t = 0; t < n_steps; t++)
        {
          const ElkStep *m = elk_program_get_step (program, t);
          guint32 router;
          if (moved[t]
              && elk_graph_get_op_condition (graph, m->op, &router, NULL, NULL)
              && router == step->op)
            elk_program_add_preload (out, m->op);
        }
    }
  {
    ElkProgram *hoisted = hoist (out, plans, speculate, error);
    if (hoisted == NULL)
      return NULL;
    elk_program_unref (out);
    out = hoisted;
  }
  if (!elk_program_validate (out, plans, error))
    {
      static const char *const nicks[]
          = { "all", "on-demand", "likely", "hot", "oracle" };
      g_prefix_error (error, "expert-preload=%s: ", nicks[policy]);
      return NULL;
    }
  return g_steal_pointer (&out);
}
