/* elk-allocator.h: the ElkAllocator extension point (SRAM allocation).
 *
 * While an operator E executes, p later operators Q1..Qp sit (or are being
 * loaded) in SRAM in their preload-state layout.  An allocator splits each
 * core's SRAM between E's execution space and the Qj's preload spaces
 * (elk-paper.md §3.6): it picks E's execute-state plan and preload-state
 * layout (an entry of E's cold-hot table) and, for each Qj, the size of its
 * preload state (an entry of Qj's cold-hot table whose hot plan is
 * compatible with the one already fixed for Qj, or any entry if none is
 * fixed yet), so that the sizes fit and the estimated time is small.
 *
 * Schedulers call allocate() many times per program; implementations keep
 * state in the request and result, not in the object, so that one allocator
 * can serve several threads at once.
 */
#pragma once

#include <glib-object.h>
#include <elk/elk-plan.h>

G_BEGIN_DECLS

/**
 * ELK_ALLOCATOR_EXTENSION_POINT:
 *
 * The kind name of #ElkAllocator features, as experiment files and tools write
 * it ("allocator").
 */
#define ELK_ALLOCATOR_EXTENSION_POINT "allocator"

/**
 * ElkAllocContention:
 * @ELK_ALLOC_CONTENTION_SHARED: preloads and the execution share the
 *   interconnect, so the allocator charges its estimate of their
 *   contention (each allocator's `noc-penalty`).  The zero value: a
 *   zero-initialised request asks for the realistic allocation.
 * @ELK_ALLOC_CONTENTION_NONE: the execution's traffic never contends with
 *   preloads (a bound such as Ideal, elk-paper.md §5.3); no penalty.
 *
 * What the allocator assumes about interconnect contention.
 */
typedef enum
{
  ELK_ALLOC_CONTENTION_SHARED = 0,
  ELK_ALLOC_CONTENTION_NONE = 1,
} ElkAllocContention;

/**
 * ElkAllocRequest:
 * @plans: the plan tables of the graph.
 * @exec_op: the executing operator E.
 * @n_preloaded: number of preloaded operators p.
 * @preloaded: (array length=n_preloaded): the p preloaded operators.
 * @preloaded_fixed: (array length=n_preloaded) (nullable): for each
 *   preloaded operator, the index
 *   into its cold_hot table already chosen when it was scheduled (its
 *   execute-state plan is then fixed), or -1 when free; %NULL: all free.
 * @sram_budget: per-core bytes to split.
 * @contention: what to assume about interconnect contention; the zero
 *   value is the realistic %ELK_ALLOC_CONTENTION_SHARED.
 * @exec_fixed: %TRUE when the scheduler has already chosen E's cold-hot
 *   entry (a forward scheduler that preloaded E before allocating its
 *   execution): the allocator keeps @exec_entry and splits the rest of
 *   the budget among the preloaded operators.
 * @exec_entry: with @exec_fixed, the index into E's cold_hot table.
 *
 * Zero-initialise a request and set what applies: the zero values are
 * the realistic defaults.
 */
typedef struct
{
  const ElkPlanSet *plans;
  guint32 exec_op;
  guint n_preloaded;
  const guint32 *preloaded;
  const gint32 *preloaded_fixed;
  guint64 sram_budget;
  ElkAllocContention contention;
  gboolean exec_fixed;
  guint32 exec_entry;
} ElkAllocRequest;

/**
 * ElkAllocResult:
 * @exec_entry: index into E's cold_hot table (the request's own when it
 *   fixed E's entry).
 * @preload_entries: (array): caller-allocated, n_preloaded indices into
 *   each Qj's cold_hot table.
 * @exec_s: E's execution time.
 * @warmup_s: sum of the data-distribution times of E.
 * @penalty_s: the allocator's contention estimate.
 * @cost_s: the objective the allocator minimised.
 * @bytes: per-core bytes used (E's hot plus the Qj's cold sizes).
 *
 * What an allocator chose for one #ElkAllocRequest.  The caller owns the
 * struct and its preload_entries array.
 */
typedef struct
{
  guint32 exec_entry;
  guint32 *preload_entries;
  double exec_s;
  double warmup_s;
  double penalty_s;
  double cost_s;
  guint64 bytes;
} ElkAllocResult;

/**
 * ElkAllocator:
 *
 * The allocator interface: splits each core's SRAM between an executing
 * operator and the operators preloaded next to it.  Implementations keep
 * no per-call state in the object, so one allocator serves several
 * threads at once.
 */
#define ELK_TYPE_ALLOCATOR (elk_allocator_get_type ())
ELK_API
G_DECLARE_INTERFACE (ElkAllocator, elk_allocator, ELK, ALLOCATOR, GObject)

/**
 * ElkAllocatorInterface:
 * @allocate: required; returns %FALSE without an error when nothing fits,
 *   and %FALSE with an error on failure.
 *
 * Since: 0.1
 */
struct _ElkAllocatorInterface
{
  /*< private >*/
  GTypeInterface parent_iface;

  /*< public >*/
  gboolean (*allocate) (ElkAllocator *self,
                        const ElkAllocRequest *request,
                        ElkAllocResult *result,
                        GError **error);
  /* Append new vfuncs here only; give them defaults in default_init. */
};

/**
 * ElkAllocatorInterface::allocate:
 * @self: an allocator
 * @request: what to allocate
 * @result: the allocation, filled in; its preload_entries array is the
 *   caller's and holds request->n_preloaded entries
 * @error: return location for a #GError
 *
 * Allocates for one executing operator.
 *
 * Returns: %TRUE with @result filled in; %FALSE without an error when
 *   nothing fits; %FALSE with @error set on failure.
 */

ELK_API gboolean elk_allocator_allocate (ElkAllocator *self,
                                         const ElkAllocRequest *request,
                                         ElkAllocResult *result,
                                         gboolean *fits,
                                         GError **error);
ELK_API gboolean
elk_alloc_result_set_preload_entries (ElkAllocResult *result,
                                      const ElkAllocRequest *request,
                                      const guint32 *entries,
                                      guint n_entries,
                                      GError **error);

G_END_DECLS
