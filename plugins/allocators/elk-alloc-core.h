/* elk-alloc-core.h: the allocation cores of the allocator plugin
 * (elk-alloc-core.c), shared with elk-allocators.c.
 *
 * Not installed and not part of libelk: the algorithms live with their
 * plugin.  Everything is plain C on plain structs so that
 * tests/compiler/test-timeline.c, which compiles elk-alloc-core.c in,
 * can drive them with hand-made plan tables: the paper's greedy loop, the
 * artifact's reservation heuristic, a fixed split and an exhaustive
 * search, all over the same AllocProblem.
 */
#pragma once

#include <elk/elk.h>

G_BEGIN_DECLS

/* ---------------------------------------------------------------------- */
/* Allocation                                                              */
/* ---------------------------------------------------------------------- */

/**
 * AllocProblem:
 * @exec: the executing operator's table.
 * @n_pre: number of preloaded operators.
 * @pre: their tables.
 * @pre_fixed: per preloaded operator, the cold-hot entry fixed when it was
 *   scheduled (its execute-state plan is then fixed too), or -1 when free.
 * @budget: per-core bytes to split.
 * @penalty_per_byte: seconds charged per per-core byte of the executing
 *   operator's preload-state layout (the artifact's all-to-all NoC
 *   penalty); 0 when contention is ignored.
 * @exec_is_fixed: the scheduler fixed the executing operator's cold-hot
 *   entry to @exec_fixed (zero: free, so positional initialisers that
 *   stop before it keep their meaning).
 * @exec_fixed: that entry.
 *
 * The allocation problem of elk-paper.md §3.6 in table form.  The
 * executing operator occupies its hot footprint; each preloaded operator
 * occupies its cold footprint.  A fixed preloaded operator may only move to
 * an entry with the same hot plan (a smaller preload state of the same
 * execute plan, paid for with more data distribution).
 */
typedef struct
{
  const ElkPlanTable *exec;
  guint n_pre;
  const ElkPlanTable *const *pre;
  const gint32 *pre_fixed;
  guint64 budget;
  double penalty_per_byte;
  gboolean exec_is_fixed;
  guint32 exec_fixed;
} AllocProblem;

/**
 * AllocChoice:
 * @exec_entry: cold-hot entry of the executing operator.
 * @pre_entries: caller-allocated, @n_pre entries.
 * @exec_s: the executing operator's hot time.
 * @warmup_s: its data-distribution time.
 * @extra_warmup_s: data distribution added to the preloaded operators
 *   relative to their fixed entries.
 * @penalty_s: contention estimate.
 * @cost_s: exec_s + warmup_s + extra_warmup_s + penalty_s.
 * @bytes: per-core bytes used.
 */
typedef struct
{
  guint32 exec_entry;
  guint32 *pre_entries;
  double exec_s;
  double warmup_s;
  double extra_warmup_s;
  double penalty_s;
  double cost_s;
  guint64 bytes;
} AllocChoice;

gboolean elk__alloc_greedy (const AllocProblem *problem, AllocChoice *choice);
gboolean elk__alloc_reservation (const AllocProblem *problem,
                                 double reserve_factor,
                                 AllocChoice *choice);
gboolean elk__alloc_fixed_split (const AllocProblem *problem,
                                 double exec_fraction,
                                 AllocChoice *choice);
gboolean elk__alloc_exact (const AllocProblem *problem,
                           guint64 max_combinations,
                           AllocChoice *choice,
                           GError **error);

/* Fills @problem from an ElkAllocRequest (tables from the plan set) and
 * copies a choice back into an ElkAllocResult.  @tables must hold
 * request->n_preloaded pointers. */
void elk__alloc_problem_from_request (AllocProblem *problem,
                                      const ElkAllocRequest *request,
                                      const ElkPlanTable **tables,
                                      double penalty_weight);
void elk__alloc_choice_to_result (const AllocChoice *choice,
                                  guint n_pre,
                                  ElkAllocResult *result);

G_END_DECLS
