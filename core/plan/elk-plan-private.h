/* elk-plan-private.h: the plan-space search state shared by the files of
 * core/plan.  Nothing here is installed.
 *
 * One PlanSearch enumerates the plans of one operator on one chip.  It
 * is allocated once per table and reused for every spatial vector, so that
 * the inner loops (temporal enumeration and the cost of one plan) touch
 * only memory that already exists: no allocation per plan.
 */
#pragma once

#include <elk/elk-plan.h>
#include <elk/elk-error.h>

G_BEGIN_DECLS

/* A divisibility chain over at most ELK_MAX_OPERANDS factors has at most
 * that many distinct values above 1, hence at most that many gcd rounds
 * per loop dimension. */
#define ELK_PLAN_MAX_ROUNDS ELK_MAX_OPERANDS

/* The most divisors a 32-bit integer has (735134400 has 1344). */
#define ELK_PLAN_MAX_DIVISORS 1344

/* How a loop dimension enters the MatMul-block cost (MatMul and conv): a
 * batch dimension indexes the output and both inputs, M the output and the
 * first input, N the output and the second input, K is reduced. */
typedef enum
{
  ELK_PLAN_DIM_B,
  ELK_PLAN_DIM_M,
  ELK_PLAN_DIM_N,
  ELK_PLAN_DIM_K,
} PlanDimClass;

/* One candidate column of the temporal matrix: the rotation factors of
 * every operand along one loop dimension, with everything a plan's cost
 * needs from it precomputed once per spatial vector. */
typedef struct
{
  guint32 t[ELK_MAX_OPERANDS];
  guint32 max;
  guint64 step;                     /* per-step sub-operator extent */
  guint64 len[ELK_MAX_OPERANDS];    /* ceil (per-core extent / t[v]) */
  double pad;                       /* per-core extent / (max * step) */
  guint8 rot_mask;                  /* operands with t[v] > 1 */
  guint8 n_rounds;
  guint8 round_mask[ELK_PLAN_MAX_ROUNDS];
  guint32 round_shifts[ELK_PLAN_MAX_ROUNDS];
} PlanDimCand;

/* The per-plan figures in cost-model units (cycles, bytes per core). */
typedef struct
{
  guint64 bytes[ELK_MAX_OPERANDS]; /* per-core piece of each operand */
  guint64 hot;
  guint64 cold;
  guint32 steps;
  guint8 rot_mask;
  double compute_cycles;
  double shift_cycles;
  double shuffle_cycles;
  double total_cycles;
  double shift_bytes;               /* per core, over all steps */
  double shuffle_bytes;             /* per core */
  guint64 shift_events;
} PlanEval;

typedef struct _PlanSearch PlanSearch;

typedef void (*PlanLeafFunc) (PlanSearch *s,
                              const PlanDimCand *const *chosen,
                              gpointer user_data);

struct _PlanSearch
{
  /* The operator, copied into flat arrays. */
  const ElkOp *op;
  ElkOpKind kind;
  guint n_dims;
  guint n_operands;
  guint64 extents[ELK_MAX_DIMS];
  guint8 dim_mask[ELK_MAX_OPERANDS]; /* loop dims each operand indexes */
  guint n_axes[ELK_MAX_OPERANDS];
  gint8 axis_dims[ELK_MAX_OPERANDS][ELK_MAX_DIMS][2];
  double elem_bytes[ELK_MAX_OPERANDS];
  guint64 elem_bytes_int[ELK_MAX_OPERANDS]; /* 0 if not a whole number */
  gboolean cold_operand[ELK_MAX_OPERANDS];  /* HBM-sourced input */
  PlanDimClass dim_class[ELK_MAX_DIMS];
  double mm_inner;
  double mm_block_k;
  /* An RMSNorm folded into this MatMul (ELK_FUSE_RMSNORM_MATMUL): its
   * prologue, epilogue and the sums of squares in the partial-sum
   * reduction are priced too (docs/plan-space.md, "Fused operators"). */
  gboolean fused_norm;
  /* A LayerNorm folded in (ELK_FUSE_LAYERNORM_MATMUL, fused_norm set
   * too): two per-row sums (of x and of x²) instead of one, and two more
   * rows (gᵀW and bᵀW) through each step's MatMul. */
  gboolean fused_layer;
  /* A softmax folded in (ELK_FUSE_SOFTMAX_MATMUL, fused_norm set too):
   * priced as an RMSNorm's with exp (x - mx) for the gain, the row sums
   * of the exponentials for the sums of squares and a divide for the
   * epilogue's rsqrt and scale; its row maximum (operand 3) never
   * rotates. */
  gboolean fused_softmax;

  /* The chip. */
  const ElkChipSpec *spec;
  const ElkCostCoeffs *cc;
  guint cores;
  guint cores_per_chip;
  guint64 usable;
  gboolean mesh;
  guint mesh_long;
  guint mesh_short;

  /* Floors. */
  double util_floor;
  double pad_floor;

  /* The current spatial vector. */
  guint32 spatial[ELK_MAX_DIMS];
  guint64 sl[ELK_MAX_DIMS];         /* per-core extents */
  guint32 replicas[ELK_MAX_OPERANDS];
  guint32 cores_used;

  /* Temporal candidates of the current spatial vector, per dimension. */
  PlanDimCand *cands;
  guint n_cands;
  guint cands_alloc;
  guint cand_start[ELK_MAX_DIMS + 1];
  guint32 divisors[ELK_MAX_OPERANDS][ELK_PLAN_MAX_DIVISORS];
  guint n_divisors[ELK_MAX_OPERANDS];

  /* ELK_PLAN_ENUMERATION_ARTIFACT, a measurement device: reproduce the
   * Elk artifact's reordering of the per-dimension candidate lists and
   * its per-step output size in the shuffle (docs/plan-space.md,
   * "Validation against the artifact").  Off for the T10 default. */
  gboolean artifact_order;

  /* Enumeration state. */
  PlanLeafFunc leaf;
  gpointer leaf_data;
  guint64 n_leaves;
  guint64 n_spatial;
};

PlanSearch *elk__plan_search_new (const ElkGraph *graph,
                                  const ElkOp *op,
                                  const ElkChipSpec *spec,
                                  const ElkPlanOptions *options);
void elk__plan_search_free (PlanSearch *s);

void elk__plan_search_set_spatial (PlanSearch *s, const guint32 *spatial);
void elk__plan_search_build_cands (PlanSearch *s,
                                   const ElkPlan *multiple_of);
void elk__plan_search_temporal (PlanSearch *s);
void elk__plan_search_spatial (PlanSearch *s);

gboolean elk__plan_search_eval (const PlanSearch *s,
                                const PlanDimCand *const *chosen,
                                PlanEval *e,
                                gboolean hot_limit);
void elk__plan_search_fill (const PlanSearch *s,
                            const PlanDimCand *const *chosen,
                            const PlanEval *e,
                            ElkPlan *plan);
double elk__plan_search_warmup (const PlanSearch *s,
                                const ElkPlan *cold,
                                const ElkPlan *hot,
                                double *noc_bytes);
gboolean elk__plan_search_check (PlanSearch *s,
                                 const ElkPlan *plan,
                                 const PlanDimCand **chosen,
                                 PlanDimCand *storage,
                                 GError **error);

char *elk__plan_describe_op (const ElkOp *op);

gboolean elk__plan_build_table_stats (const ElkGraph *graph,
                                      const ElkOp *op,
                                      const ElkChipSpec *spec,
                                      const ElkPlanOptions *options,
                                      gboolean artifact_order,
                                      ElkPlanTable *table,
                                      guint64 *n_spatial,
                                      guint64 *n_pass1,
                                      guint *n_artifact_front,
                                      GError **error);
gboolean elk__plan_build_table (const ElkGraph *graph,
                                const ElkOp *op,
                                const ElkChipSpec *spec,
                                const ElkPlanOptions *options,
                                gboolean artifact_order,
                                ElkPlanTable *table,
                                GError **error);
void elk__plan_table_clear (ElkPlanTable *table);

gboolean elk__plan_equal (const ElkPlan *a, const ElkPlan *b);
gboolean elk__plan_set_check_plan (const ElkPlanSet *set,
                                   guint op,
                                   const ElkPlan *plan,
                                   const char *what,
                                   GError **error);

G_END_DECLS
