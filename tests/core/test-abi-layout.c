/* test-abi-layout.c: the layouts of libelk's public by-value structs are
 * pinned to the plugin ABI number.
 *
 * Plugins read libelk's structs by field in their inner loops, and some
 * structs embed others by value (ElkProgramOp holds two ElkPlan, an
 * ElkPlanTable an array of them, ElkChipSpec an ElkCostCoeffs, a chip
 * instance an ElkChipProps).  elk's rule (docs/plugin-guide.md, "ABI") is
 * that any change to the size or a field offset of a public struct bumps
 * ELK_PLUGIN_ABI_VERSION, so that the loader refuses plugins built against
 * the old layout instead of letting them read fields at the wrong offsets.
 *
 * This test holds the rule: `pinned` records sizeof and every offsetof for
 * PINNED_ABI, `current` measures them with the headers being compiled.  A
 * layout change with the same ABI number fails, naming the struct, the
 * field and both values; a bump without re-pinning fails too and prints
 * the current table, ready to paste over `pinned`.  The offset of a
 * `reserved` tail is not pinned, so that a field taken from it (same size,
 * no other offset moves) needs no bump, only a new entry here.
 *
 * The unstable compiler toolkit (elk-compile.h) is left out on purpose: it
 * may change in any release without a bump.  The numbers are those of an
 * LP64 machine (x86_64, aarch64); elsewhere the test skips. */
#include <elk/elk.h>

/* The plugin ABI the table below was measured for. */
#define PINNED_ABI 6u

typedef struct
{
  const char *type;
  const char *field; /* NULL: sizeof (type) */
  gsize value;
} Pin;

/* clang-format would lay these out as blocks. */
/* clang-format off */
#define SIZE(T) { #T, NULL, sizeof (T) }
#define FIELD(T, f) { #T, #f, G_STRUCT_OFFSET (T, f) }
/* clang-format on */

/* Measured now: every public by-value struct and each of its fields. */
static const Pin current[] = {
  SIZE (ElkTensor),
  FIELD (ElkTensor, id),
  FIELD (ElkTensor, name),
  FIELD (ElkTensor, dtype),
  FIELD (ElkTensor, origin),
  FIELD (ElkTensor, n_dims),
  FIELD (ElkTensor, shape),
  FIELD (ElkTensor, n_elements),
  FIELD (ElkTensor, bytes),
  SIZE (ElkAccess),
  FIELD (ElkAccess, n_axes),
  FIELD (ElkAccess, dims),
  SIZE (ElkOp),
  FIELD (ElkOp, id),
  FIELD (ElkOp, name),
  FIELD (ElkOp, type),
  FIELD (ElkOp, kind),
  FIELD (ElkOp, layer),
  FIELD (ElkOp, n_dims),
  FIELD (ElkOp, dim_names),
  FIELD (ElkOp, extents),
  FIELD (ElkOp, n_operands),
  FIELD (ElkOp, tensors),
  FIELD (ElkOp, access),
  FIELD (ElkOp, flops),
  SIZE (ElkCostCoeffs),
  FIELD (ElkCostCoeffs, block_m),
  FIELD (ElkCostCoeffs, block_k),
  FIELD (ElkCostCoeffs, block_n),
  FIELD (ElkCostCoeffs, matmul_inner),
  FIELD (ElkCostCoeffs, matmul_kn),
  FIELD (ElkCostCoeffs, matmul_n),
  FIELD (ElkCostCoeffs, matmul_fixed),
  FIELD (ElkCostCoeffs, ew_slope),
  FIELD (ElkCostCoeffs, ew_fixed),
  FIELD (ElkCostCoeffs, ew_small_slope),
  FIELD (ElkCostCoeffs, ew_small_fixed),
  FIELD (ElkCostCoeffs, ew_small_cap_n),
  FIELD (ElkCostCoeffs, unary_slope),
  FIELD (ElkCostCoeffs, unary_fixed),
  FIELD (ElkCostCoeffs, reduce_slope),
  FIELD (ElkCostCoeffs, reduce_fixed),
  FIELD (ElkCostCoeffs, gather_slope),
  FIELD (ElkCostCoeffs, gather_fixed),
  FIELD (ElkCostCoeffs, slice_slope),
  FIELD (ElkCostCoeffs, slice_fixed),
  FIELD (ElkCostCoeffs, shift_cycles_per_byte),
  FIELD (ElkCostCoeffs, sync_cycles),
  FIELD (ElkCostCoeffs, syncs_per_shift),
  FIELD (ElkCostCoeffs, shuffle_syncs),
  FIELD (ElkCostCoeffs, multichip_factor),
  FIELD (ElkCostCoeffs, ew_small_cap),
  FIELD (ElkCostCoeffs, reduce_small_slope),
  FIELD (ElkCostCoeffs, reduce_small_n),
  FIELD (ElkCostCoeffs, reduce_align),
  FIELD (ElkCostCoeffs, gather_per_index),
  FIELD (ElkCostCoeffs, int8_macs_per_cycle),
  SIZE (ElkChipSpec),
  FIELD (ElkChipSpec, name),
  FIELD (ElkChipSpec, n_chips),
  FIELD (ElkChipSpec, cores),
  FIELD (ElkChipSpec, sram_per_core),
  FIELD (ElkChipSpec, sram_reserved),
  FIELD (ElkChipSpec, clock_hz),
  FIELD (ElkChipSpec, matmul_flops),
  FIELD (ElkChipSpec, vector_flops),
  FIELD (ElkChipSpec, topology),
  FIELD (ElkChipSpec, mesh_rows),
  FIELD (ElkChipSpec, mesh_cols),
  FIELD (ElkChipSpec, link_bw),
  FIELD (ElkChipSpec, link_latency),
  FIELD (ElkChipSpec, inter_chip_bw),
  FIELD (ElkChipSpec, hbm_channels),
  FIELD (ElkChipSpec, hbm_bw),
  FIELD (ElkChipSpec, hbm_latency),
  FIELD (ElkChipSpec, cost),
  SIZE (ElkChipProps),
  FIELD (ElkChipProps, chips),
  FIELD (ElkChipProps, cores),
  FIELD (ElkChipProps, sram_kib),
  FIELD (ElkChipProps, reserved_kib),
  FIELD (ElkChipProps, topology),
  FIELD (ElkChipProps, mesh_rows),
  FIELD (ElkChipProps, mesh_cols),
  FIELD (ElkChipProps, link_bw_gbps),
  FIELD (ElkChipProps, hbm_bw_gbps),
  FIELD (ElkChipProps, hbm_channels),
  FIELD (ElkChipProps, inter_chip_bw_gbps),
  FIELD (ElkChipProps, clock_ghz),
  FIELD (ElkChipProps, matmul_tflops),
  FIELD (ElkChipProps, vector_tflops),
  FIELD (ElkChipProps, bandwidth_units),
  FIELD (ElkChipProps, int8_macs_per_cycle),
  SIZE (ElkPlan),
  FIELD (ElkPlan, n_dims),
  FIELD (ElkPlan, n_operands),
  FIELD (ElkPlan, spatial),
  FIELD (ElkPlan, temporal),
  FIELD (ElkPlan, cores_used),
  FIELD (ElkPlan, steps),
  FIELD (ElkPlan, hot_bytes),
  FIELD (ElkPlan, cold_bytes),
  FIELD (ElkPlan, compute_s),
  FIELD (ElkPlan, shift_s),
  FIELD (ElkPlan, shuffle_s),
  FIELD (ElkPlan, time_s),
  FIELD (ElkPlan, noc_bytes),
  FIELD (ElkPlan, replicas),
  FIELD (ElkPlan, operand_bytes),
  FIELD (ElkPlan, shift_events),
  FIELD (ElkPlan, shift_bytes),
  SIZE (ElkColdHot),
  FIELD (ElkColdHot, cold_bytes),
  FIELD (ElkColdHot, hot_bytes),
  FIELD (ElkColdHot, hot_plan),
  FIELD (ElkColdHot, cold_plan),
  FIELD (ElkColdHot, exec_s),
  FIELD (ElkColdHot, warmup_s),
  FIELD (ElkColdHot, warmup_noc_bytes),
  SIZE (ElkPlanTable),
  FIELD (ElkPlanTable, op),
  FIELD (ElkPlanTable, n_plans),
  FIELD (ElkPlanTable, plans),
  FIELD (ElkPlanTable, n_hot),
  FIELD (ElkPlanTable, hot_front),
  FIELD (ElkPlanTable, n_cold_hot),
  FIELD (ElkPlanTable, cold_hot),
  FIELD (ElkPlanTable, min_cold_bytes),
  FIELD (ElkPlanTable, hbm_bytes),
  FIELD (ElkPlanTable, n_enumerated),
  SIZE (ElkPlanOptions),
  FIELD (ElkPlanOptions, padding_floor),
  FIELD (ElkPlanOptions, utilisation_floor),
  FIELD (ElkPlanOptions, n_threads),
  FIELD (ElkPlanOptions, enumeration),
  FIELD (ElkPlanOptions, noc_demand),
  SIZE (ElkStep),
  FIELD (ElkStep, kind),
  FIELD (ElkStep, op),
  SIZE (ElkProgramOp),
  FIELD (ElkProgramOp, exec_plan),
  FIELD (ElkProgramOp, preload_plan),
  FIELD (ElkProgramOp, exec_budget),
  FIELD (ElkProgramOp, preload_share),
  FIELD (ElkProgramOp, hot_bytes),
  FIELD (ElkProgramOp, cold_bytes),
  FIELD (ElkProgramOp, hbm_bytes),
  FIELD (ElkProgramOp, est_exec_s),
  FIELD (ElkProgramOp, est_warmup_s),
  FIELD (ElkProgramOp, est_load_s),
  FIELD (ElkProgramOp, est_noc_s),
  SIZE (ElkOpCost),
  FIELD (ElkOpCost, preloaded),
  FIELD (ElkOpCost, hbm_bytes),
  FIELD (ElkOpCost, hot_bytes),
  FIELD (ElkOpCost, cold_bytes),
  FIELD (ElkOpCost, resident_bytes),
  FIELD (ElkOpCost, preload_number),
  FIELD (ElkOpCost, exec_s),
  FIELD (ElkOpCost, warmup_s),
  FIELD (ElkOpCost, warmup_noc_bytes),
  FIELD (ElkOpCost, noc_s),
  FIELD (ElkOpCost, noc_bytes),
  FIELD (ElkOpCost, load_s),
  FIELD (ElkOpCost, load_noc_s),
  FIELD (ElkOpCost, preload_share),
  SIZE (ElkTimelineOp),
  FIELD (ElkTimelineOp, hbm_bytes),
  FIELD (ElkTimelineOp, cold_bytes),
  FIELD (ElkTimelineOp, min_load_s),
  FIELD (ElkTimelineOp, exec_s),
  FIELD (ElkTimelineOp, shift_s),
  FIELD (ElkTimelineOp, noc_bytes),
  SIZE (ElkTimelineResult),
  FIELD (ElkTimelineResult, latency_s),
  FIELD (ElkTimelineResult, hbm_busy_s),
  FIELD (ElkTimelineResult, noc_busy_s),
  FIELD (ElkTimelineResult, noc_bytes),
  FIELD (ElkTimelineResult, preload_only_s),
  FIELD (ElkTimelineResult, execute_only_s),
  FIELD (ElkTimelineResult, overlap_s),
  FIELD (ElkTimelineResult, stall_s),
  SIZE (ElkMetrics),
  FIELD (ElkMetrics, latency_s),
  FIELD (ElkMetrics, flops),
  FIELD (ElkMetrics, hbm_bytes),
  FIELD (ElkMetrics, noc_bytes),
  FIELD (ElkMetrics, hbm_util),
  FIELD (ElkMetrics, noc_util),
  FIELD (ElkMetrics, achieved_flops),
  FIELD (ElkMetrics, preload_only_s),
  FIELD (ElkMetrics, execute_only_s),
  FIELD (ElkMetrics, overlap_s),
  FIELD (ElkMetrics, stall_s),
  FIELD (ElkMetrics, model),
  FIELD (ElkMetrics, breakdown),
  FIELD (ElkMetrics, routing),
  SIZE (ElkRoutingStats),
  FIELD (ElkRoutingStats, n_conditional),
  FIELD (ElkRoutingStats, n_taken),
  FIELD (ElkRoutingStats, hits),
  FIELD (ElkRoutingStats, wasted),
  FIELD (ElkRoutingStats, wasted_hbm_bytes),
  FIELD (ElkRoutingStats, on_demand),
  FIELD (ElkRoutingStats, on_demand_hbm_bytes),
  FIELD (ElkRoutingStats, skipped),
  FIELD (ElkRoutingStats, hit_rate),
  SIZE (ElkAllocRequest),
  FIELD (ElkAllocRequest, plans),
  FIELD (ElkAllocRequest, exec_op),
  FIELD (ElkAllocRequest, n_preloaded),
  FIELD (ElkAllocRequest, preloaded),
  FIELD (ElkAllocRequest, preloaded_fixed),
  FIELD (ElkAllocRequest, sram_budget),
  FIELD (ElkAllocRequest, contention),
  FIELD (ElkAllocRequest, exec_fixed),
  FIELD (ElkAllocRequest, exec_entry),
  SIZE (ElkAllocResult),
  FIELD (ElkAllocResult, exec_entry),
  FIELD (ElkAllocResult, preload_entries),
  FIELD (ElkAllocResult, exec_s),
  FIELD (ElkAllocResult, warmup_s),
  FIELD (ElkAllocResult, penalty_s),
  FIELD (ElkAllocResult, cost_s),
  FIELD (ElkAllocResult, bytes),
  SIZE (ElkAllocatorInterface),
  FIELD (ElkAllocatorInterface, parent_iface),
  FIELD (ElkAllocatorInterface, allocate),
  SIZE (ElkPluginDesc),
  FIELD (ElkPluginDesc, abi_version),
  FIELD (ElkPluginDesc, name),
  FIELD (ElkPluginDesc, description),
  FIELD (ElkPluginDesc, version),
  FIELD (ElkPluginDesc, register_features),
  SIZE (ElkFieldProperty),
  FIELD (ElkFieldProperty, pspec),
  FIELD (ElkFieldProperty, offset),
  SIZE (ElkFeature),
  FIELD (ElkFeature, kind),
  FIELD (ElkFeature, name),
  FIELD (ElkFeature, type),
  FIELD (ElkFeature, plugin),
  SIZE (ElkLoadFailure),
  FIELD (ElkLoadFailure, filename),
  FIELD (ElkLoadFailure, error),
  SIZE (ElkRunOptions),
  FIELD (ElkRunOptions, n_jobs),
  FIELD (ElkRunOptions, output_dir),
  FIELD (ElkRunOptions, progress),
  FIELD (ElkRunOptions, resume),
  FIELD (ElkRunOptions, shard_k),
  FIELD (ElkRunOptions, shard_n),
  FIELD (ElkRunOptions, isolate),
  FIELD (ElkRunOptions, timeout_s),
  FIELD (ElkRunOptions, self_exe),
  FIELD (ElkRunOptions, trace_point),
  SIZE (ElkFrontendInterface),
  FIELD (ElkFrontendInterface, parent_iface),
  FIELD (ElkFrontendInterface, load),
  SIZE (ElkSchedulerInterface),
  FIELD (ElkSchedulerInterface, parent_iface),
  FIELD (ElkSchedulerInterface, schedule),
  SIZE (ElkChipInterface),
  FIELD (ElkChipInterface, parent_iface),
  FIELD (ElkChipInterface, dup_spec),
  FIELD (ElkChipInterface, run),
  FIELD (ElkChipInterface, run_traced),
  FIELD (ElkChipInterface, dup_cost_model),
  FIELD (ElkChipInterface, dup_measurer),
  SIZE (ElkOpPrice),
  FIELD (ElkOpPrice, exec_s),
  FIELD (ElkOpPrice, compute_s),
  FIELD (ElkOpPrice, noc_s),
  FIELD (ElkOpPrice, warmup_s),
  SIZE (ElkLoadPrice),
  FIELD (ElkLoadPrice, hbm_s),
  FIELD (ElkLoadPrice, deliver_s),
};

/* Measured for PINNED_ABI on LP64. */
static const Pin pinned[] = {
  { "ElkTensor", NULL, 112 },
  { "ElkTensor", "id", 0 },
  { "ElkTensor", "name", 8 },
  { "ElkTensor", "dtype", 16 },
  { "ElkTensor", "origin", 20 },
  { "ElkTensor", "n_dims", 24 },
  { "ElkTensor", "shape", 32 },
  { "ElkTensor", "n_elements", 96 },
  { "ElkTensor", "bytes", 104 },
  { "ElkAccess", NULL, 20 },
  { "ElkAccess", "n_axes", 0 },
  { "ElkAccess", "dims", 4 },
  { "ElkOp", NULL, 248 },
  { "ElkOp", "id", 0 },
  { "ElkOp", "name", 8 },
  { "ElkOp", "type", 16 },
  { "ElkOp", "kind", 24 },
  { "ElkOp", "layer", 28 },
  { "ElkOp", "n_dims", 32 },
  { "ElkOp", "dim_names", 36 },
  { "ElkOp", "extents", 48 },
  { "ElkOp", "n_operands", 112 },
  { "ElkOp", "tensors", 116 },
  { "ElkOp", "access", 136 },
  { "ElkOp", "flops", 240 },
  { "ElkCostCoeffs", NULL, 232 },
  { "ElkCostCoeffs", "block_m", 0 },
  { "ElkCostCoeffs", "block_k", 4 },
  { "ElkCostCoeffs", "block_n", 8 },
  { "ElkCostCoeffs", "matmul_inner", 16 },
  { "ElkCostCoeffs", "matmul_kn", 24 },
  { "ElkCostCoeffs", "matmul_n", 32 },
  { "ElkCostCoeffs", "matmul_fixed", 40 },
  { "ElkCostCoeffs", "ew_slope", 48 },
  { "ElkCostCoeffs", "ew_fixed", 56 },
  { "ElkCostCoeffs", "ew_small_slope", 64 },
  { "ElkCostCoeffs", "ew_small_fixed", 72 },
  { "ElkCostCoeffs", "ew_small_cap_n", 80 },
  { "ElkCostCoeffs", "unary_slope", 88 },
  { "ElkCostCoeffs", "unary_fixed", 96 },
  { "ElkCostCoeffs", "reduce_slope", 104 },
  { "ElkCostCoeffs", "reduce_fixed", 112 },
  { "ElkCostCoeffs", "gather_slope", 120 },
  { "ElkCostCoeffs", "gather_fixed", 128 },
  { "ElkCostCoeffs", "slice_slope", 136 },
  { "ElkCostCoeffs", "slice_fixed", 144 },
  { "ElkCostCoeffs", "shift_cycles_per_byte", 152 },
  { "ElkCostCoeffs", "sync_cycles", 160 },
  { "ElkCostCoeffs", "syncs_per_shift", 168 },
  { "ElkCostCoeffs", "shuffle_syncs", 172 },
  { "ElkCostCoeffs", "multichip_factor", 176 },
  { "ElkCostCoeffs", "ew_small_cap", 184 },
  { "ElkCostCoeffs", "reduce_small_slope", 192 },
  { "ElkCostCoeffs", "reduce_small_n", 200 },
  { "ElkCostCoeffs", "reduce_align", 208 },
  { "ElkCostCoeffs", "gather_per_index", 216 },
  { "ElkCostCoeffs", "int8_macs_per_cycle", 224 },
  { "ElkChipSpec", NULL, 352 },
  { "ElkChipSpec", "name", 0 },
  { "ElkChipSpec", "n_chips", 8 },
  { "ElkChipSpec", "cores", 12 },
  { "ElkChipSpec", "sram_per_core", 16 },
  { "ElkChipSpec", "sram_reserved", 24 },
  { "ElkChipSpec", "clock_hz", 32 },
  { "ElkChipSpec", "matmul_flops", 40 },
  { "ElkChipSpec", "vector_flops", 48 },
  { "ElkChipSpec", "topology", 56 },
  { "ElkChipSpec", "mesh_rows", 60 },
  { "ElkChipSpec", "mesh_cols", 64 },
  { "ElkChipSpec", "link_bw", 72 },
  { "ElkChipSpec", "link_latency", 80 },
  { "ElkChipSpec", "inter_chip_bw", 88 },
  { "ElkChipSpec", "hbm_channels", 96 },
  { "ElkChipSpec", "hbm_bw", 104 },
  { "ElkChipSpec", "hbm_latency", 112 },
  { "ElkChipSpec", "cost", 120 },
  { "ElkChipProps", NULL, 160 },
  { "ElkChipProps", "chips", 0 },
  { "ElkChipProps", "cores", 4 },
  { "ElkChipProps", "sram_kib", 8 },
  { "ElkChipProps", "reserved_kib", 12 },
  { "ElkChipProps", "topology", 16 },
  { "ElkChipProps", "mesh_rows", 20 },
  { "ElkChipProps", "mesh_cols", 24 },
  { "ElkChipProps", "link_bw_gbps", 32 },
  { "ElkChipProps", "hbm_bw_gbps", 40 },
  { "ElkChipProps", "hbm_channels", 48 },
  { "ElkChipProps", "inter_chip_bw_gbps", 56 },
  { "ElkChipProps", "clock_ghz", 64 },
  { "ElkChipProps", "matmul_tflops", 72 },
  { "ElkChipProps", "vector_tflops", 80 },
  { "ElkChipProps", "bandwidth_units", 88 },
  { "ElkChipProps", "int8_macs_per_cycle", 96 },
  { "ElkPlan", NULL, 344 },
  { "ElkPlan", "n_dims", 0 },
  { "ElkPlan", "n_operands", 1 },
  { "ElkPlan", "spatial", 4 },
  { "ElkPlan", "temporal", 36 },
  { "ElkPlan", "cores_used", 196 },
  { "ElkPlan", "steps", 200 },
  { "ElkPlan", "hot_bytes", 208 },
  { "ElkPlan", "cold_bytes", 216 },
  { "ElkPlan", "compute_s", 224 },
  { "ElkPlan", "shift_s", 232 },
  { "ElkPlan", "shuffle_s", 240 },
  { "ElkPlan", "time_s", 248 },
  { "ElkPlan", "noc_bytes", 256 },
  { "ElkPlan", "replicas", 264 },
  { "ElkPlan", "operand_bytes", 288 },
  { "ElkPlan", "shift_events", 328 },
  { "ElkPlan", "shift_bytes", 336 },
  { "ElkColdHot", NULL, 48 },
  { "ElkColdHot", "cold_bytes", 0 },
  { "ElkColdHot", "hot_bytes", 8 },
  { "ElkColdHot", "hot_plan", 16 },
  { "ElkColdHot", "cold_plan", 20 },
  { "ElkColdHot", "exec_s", 24 },
  { "ElkColdHot", "warmup_s", 32 },
  { "ElkColdHot", "warmup_noc_bytes", 40 },
  { "ElkPlanTable", NULL, 72 },
  { "ElkPlanTable", "op", 0 },
  { "ElkPlanTable", "n_plans", 4 },
  { "ElkPlanTable", "plans", 8 },
  { "ElkPlanTable", "n_hot", 16 },
  { "ElkPlanTable", "hot_front", 24 },
  { "ElkPlanTable", "n_cold_hot", 32 },
  { "ElkPlanTable", "cold_hot", 40 },
  { "ElkPlanTable", "min_cold_bytes", 48 },
  { "ElkPlanTable", "hbm_bytes", 56 },
  { "ElkPlanTable", "n_enumerated", 64 },
  { "ElkPlanOptions", NULL, 32 },
  { "ElkPlanOptions", "padding_floor", 0 },
  { "ElkPlanOptions", "utilisation_floor", 8 },
  { "ElkPlanOptions", "n_threads", 16 },
  { "ElkPlanOptions", "enumeration", 20 },
  { "ElkPlanOptions", "noc_demand", 24 },
  { "ElkStep", NULL, 8 },
  { "ElkStep", "kind", 0 },
  { "ElkStep", "op", 4 },
  { "ElkProgramOp", NULL, 760 },
  { "ElkProgramOp", "exec_plan", 0 },
  { "ElkProgramOp", "preload_plan", 344 },
  { "ElkProgramOp", "exec_budget", 688 },
  { "ElkProgramOp", "preload_share", 696 },
  { "ElkProgramOp", "hot_bytes", 704 },
  { "ElkProgramOp", "cold_bytes", 712 },
  { "ElkProgramOp", "hbm_bytes", 720 },
  { "ElkProgramOp", "est_exec_s", 728 },
  { "ElkProgramOp", "est_warmup_s", 736 },
  { "ElkProgramOp", "est_load_s", 744 },
  { "ElkProgramOp", "est_noc_s", 752 },
  { "ElkOpCost", NULL, 112 },
  { "ElkOpCost", "preloaded", 0 },
  { "ElkOpCost", "hbm_bytes", 8 },
  { "ElkOpCost", "hot_bytes", 16 },
  { "ElkOpCost", "cold_bytes", 24 },
  { "ElkOpCost", "resident_bytes", 32 },
  { "ElkOpCost", "preload_number", 40 },
  { "ElkOpCost", "exec_s", 48 },
  { "ElkOpCost", "warmup_s", 56 },
  { "ElkOpCost", "warmup_noc_bytes", 64 },
  { "ElkOpCost", "noc_s", 72 },
  { "ElkOpCost", "noc_bytes", 80 },
  { "ElkOpCost", "load_s", 88 },
  { "ElkOpCost", "load_noc_s", 96 },
  { "ElkOpCost", "preload_share", 104 },
  { "ElkTimelineOp", NULL, 48 },
  { "ElkTimelineOp", "hbm_bytes", 0 },
  { "ElkTimelineOp", "cold_bytes", 8 },
  { "ElkTimelineOp", "min_load_s", 16 },
  { "ElkTimelineOp", "exec_s", 24 },
  { "ElkTimelineOp", "shift_s", 32 },
  { "ElkTimelineOp", "noc_bytes", 40 },
  { "ElkTimelineResult", NULL, 64 },
  { "ElkTimelineResult", "latency_s", 0 },
  { "ElkTimelineResult", "hbm_busy_s", 8 },
  { "ElkTimelineResult", "noc_busy_s", 16 },
  { "ElkTimelineResult", "noc_bytes", 24 },
  { "ElkTimelineResult", "preload_only_s", 32 },
  { "ElkTimelineResult", "execute_only_s", 40 },
  { "ElkTimelineResult", "overlap_s", 48 },
  { "ElkTimelineResult", "stall_s", 56 },
  { "ElkMetrics", NULL, 112 },
  { "ElkMetrics", "latency_s", 0 },
  { "ElkMetrics", "flops", 8 },
  { "ElkMetrics", "hbm_bytes", 16 },
  { "ElkMetrics", "noc_bytes", 24 },
  { "ElkMetrics", "hbm_util", 32 },
  { "ElkMetrics", "noc_util", 40 },
  { "ElkMetrics", "achieved_flops", 48 },
  { "ElkMetrics", "preload_only_s", 56 },
  { "ElkMetrics", "execute_only_s", 64 },
  { "ElkMetrics", "overlap_s", 72 },
  { "ElkMetrics", "stall_s", 80 },
  { "ElkMetrics", "model", 88 },
  { "ElkMetrics", "breakdown", 96 },
  { "ElkMetrics", "routing", 104 },
  { "ElkRoutingStats", NULL, 56 },
  { "ElkRoutingStats", "n_conditional", 0 },
  { "ElkRoutingStats", "n_taken", 4 },
  { "ElkRoutingStats", "hits", 8 },
  { "ElkRoutingStats", "wasted", 12 },
  { "ElkRoutingStats", "wasted_hbm_bytes", 16 },
  { "ElkRoutingStats", "on_demand", 24 },
  { "ElkRoutingStats", "on_demand_hbm_bytes", 32 },
  { "ElkRoutingStats", "skipped", 40 },
  { "ElkRoutingStats", "hit_rate", 48 },
  { "ElkAllocRequest", NULL, 56 },
  { "ElkAllocRequest", "plans", 0 },
  { "ElkAllocRequest", "exec_op", 8 },
  { "ElkAllocRequest", "n_preloaded", 12 },
  { "ElkAllocRequest", "preloaded", 16 },
  { "ElkAllocRequest", "preloaded_fixed", 24 },
  { "ElkAllocRequest", "sram_budget", 32 },
  { "ElkAllocRequest", "contention", 40 },
  { "ElkAllocRequest", "exec_fixed", 44 },
  { "ElkAllocRequest", "exec_entry", 48 },
  { "ElkAllocResult", NULL, 56 },
  { "ElkAllocResult", "exec_entry", 0 },
  { "ElkAllocResult", "preload_entries", 8 },
  { "ElkAllocResult", "exec_s", 16 },
  { "ElkAllocResult", "warmup_s", 24 },
  { "ElkAllocResult", "penalty_s", 32 },
  { "ElkAllocResult", "cost_s", 40 },
  { "ElkAllocResult", "bytes", 48 },
  { "ElkAllocatorInterface", NULL, 24 },
  { "ElkAllocatorInterface", "parent_iface", 0 },
  { "ElkAllocatorInterface", "allocate", 16 },
  { "ElkPluginDesc", NULL, 72 },
  { "ElkPluginDesc", "abi_version", 0 },
  { "ElkPluginDesc", "name", 8 },
  { "ElkPluginDesc", "description", 16 },
  { "ElkPluginDesc", "version", 24 },
  { "ElkPluginDesc", "register_features", 32 },
  { "ElkFieldProperty", NULL, 16 },
  { "ElkFieldProperty", "pspec", 0 },
  { "ElkFieldProperty", "offset", 8 },
  { "ElkFeature", NULL, 32 },
  { "ElkFeature", "kind", 0 },
  { "ElkFeature", "name", 8 },
  { "ElkFeature", "type", 16 },
  { "ElkFeature", "plugin", 24 },
  { "ElkLoadFailure", NULL, 16 },
  { "ElkLoadFailure", "filename", 0 },
  { "ElkLoadFailure", "error", 8 },
  { "ElkRunOptions", NULL, 64 },
  { "ElkRunOptions", "n_jobs", 0 },
  { "ElkRunOptions", "output_dir", 8 },
  { "ElkRunOptions", "progress", 16 },
  { "ElkRunOptions", "resume", 20 },
  { "ElkRunOptions", "shard_k", 24 },
  { "ElkRunOptions", "shard_n", 28 },
  { "ElkRunOptions", "isolate", 32 },
  { "ElkRunOptions", "timeout_s", 40 },
  { "ElkRunOptions", "self_exe", 48 },
  { "ElkRunOptions", "trace_point", 56 },
  { "ElkFrontendInterface", NULL, 24 },
  { "ElkFrontendInterface", "parent_iface", 0 },
  { "ElkFrontendInterface", "load", 16 },
  { "ElkSchedulerInterface", NULL, 24 },
  { "ElkSchedulerInterface", "parent_iface", 0 },
  { "ElkSchedulerInterface", "schedule", 16 },
  { "ElkChipInterface", NULL, 56 },
  { "ElkChipInterface", "parent_iface", 0 },
  { "ElkChipInterface", "dup_spec", 16 },
  { "ElkChipInterface", "run", 24 },
  { "ElkChipInterface", "run_traced", 32 },
  { "ElkChipInterface", "dup_cost_model", 40 },
  { "ElkChipInterface", "dup_measurer", 48 },
  { "ElkOpPrice", NULL, 32 },
  { "ElkOpPrice", "exec_s", 0 },
  { "ElkOpPrice", "compute_s", 8 },
  { "ElkOpPrice", "noc_s", 16 },
  { "ElkOpPrice", "warmup_s", 24 },
  { "ElkLoadPrice", NULL, 16 },
  { "ElkLoadPrice", "hbm_s", 0 },
  { "ElkLoadPrice", "deliver_s", 8 },
};

static void
print_current (void)
{
  g_test_message ("the current layout, to paste over 'pinned' in %s:",
                  __FILE__);
  for (gsize i = 0; i < G_N_ELEMENTS (current); i++)
    {
      const Pin *c = &current[i];

      if (c->field != NULL)
        g_test_message ("  { \"%s\", \"%s\", %" G_GSIZE_FORMAT " },", c->type,
                        c->field, c->value);
      else
        g_test_message ("  { \"%s\", NULL, %" G_GSIZE_FORMAT " },", c->type,
                        c->value);
    }
}

static const Pin *
find_pinned (const Pin *c)
{
  for (gsize i = 0; i < G_N_ELEMENTS (pinned); i++)
    if (g_str_equal (pinned[i].type, c->type)
        && g_strcmp0 (pinned[i].field, c->field) == 0)
      return &pinned[i];
  return NULL;
}

static void
test_layout_pinned (void)
{
  GString *changes = g_string_new (NULL);

  if (GLIB_SIZEOF_VOID_P != 8 || GLIB_SIZEOF_LONG != 8)
    {
      g_test_skip ("the layouts are pinned for LP64 machines");
      g_string_free (changes, TRUE);
      return;
    }

  if (ELK_PLUGIN_ABI_VERSION != PINNED_ABI)
    {
      print_current ();
      g_test_message ("ELK_PLUGIN_ABI_VERSION is %u but the layouts are "
                      "pinned for ABI %u: re-pin them (the table above) and "
                      "set PINNED_ABI to %u in %s",
                      ELK_PLUGIN_ABI_VERSION, PINNED_ABI,
                      ELK_PLUGIN_ABI_VERSION, __FILE__);
      g_test_fail ();
      g_string_free (changes, TRUE);
      return;
    }

  for (gsize i = 0; i < G_N_ELEMENTS (current); i++)
    {
      const Pin *c = &current[i];
      const Pin *p = find_pinned (c);

      if (p == NULL)
        g_string_append_printf (changes,
                                "  %s.%s (offset %" G_GSIZE_FORMAT
                                ") is not pinned: a new field; add its "
                                "entry\n",
                                c->type, c->field, c->value);
      else if (p->value != c->value && c->field == NULL)
        g_string_append_printf (changes,
                                "  sizeof (%s) is %" G_GSIZE_FORMAT
                                ", pinned %" G_GSIZE_FORMAT "\n",
                                c->type, c->value, p->value);
      else if (p->value != c->value)
        g_string_append_printf (changes,
                                "  %s.%s is at offset %" G_GSIZE_FORMAT
                                ", pinned %" G_GSIZE_FORMAT "\n",
                                c->type, c->field, c->value, p->value);
    }

  if (changes->len > 0)
    {
      print_current ();
      g_test_message ("public struct layouts changed under plugin ABI %u:\n"
                      "%sPlugins built for ABI %u would read these fields at "
                      "the wrong offsets.  Bump ELK_PLUGIN_ABI_VERSION in "
                      "core/elk/elk-plugin.h and re-pin the table (printed "
                      "above) with PINNED_ABI set to the new number; a field "
                      "taken from a reserved tail needs only its new entry "
                      "(docs/plugin-guide.md, \"ABI\").",
                      PINNED_ABI, changes->str, PINNED_ABI);
      g_test_fail ();
    }
  g_string_free (changes, TRUE);
}

/* The pinned table must cover what it claims: every struct measured now is
 * pinned, and nothing pinned is missing from the measurement (which a
 * renamed or removed struct would cause). */
static void
test_tables_agree (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (pinned); i++)
    {
      gboolean measured = FALSE;

      for (gsize j = 0; j < G_N_ELEMENTS (current) && !measured; j++)
        measured = g_str_equal (pinned[i].type, current[j].type)
                   && g_strcmp0 (pinned[i].field, current[j].field) == 0;
      if (!measured)
        {
          g_test_message ("%s%s%s is pinned but no longer measured",
                          pinned[i].type, pinned[i].field ? "." : "",
                          pinned[i].field ? pinned[i].field : "");
          g_test_fail ();
        }
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/abi/layout-pinned", test_layout_pinned);
  g_test_add_func ("/abi/tables-agree", test_tables_agree);
  return g_test_run ();
}
