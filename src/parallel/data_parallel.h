// Data parallelism's cost, with ZeRO and FSDP: each stage's gradient reduction over the ranks
// that hold the same weights (after its last backward, or in buckets during it), the
// distributed optimizer's parameter all-gather, ZeRO-3 / FSDP's parameter gathers and gradient
// reduce-scatters, and what FSDP keeps whole on a rank at its peak. EffectiveZeroStage,
// RankModelStates and CheckFloat8AllGather (parallel_plan.h) live here too.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "comm/collective.h"
#include "core/time.h"
#include "io/config.h"
#include "lower/lower.h"
#include "memory/model_states.h"
#include "schedule/schedule.h"

namespace stagecraft {

// The ranks a stage's gradients are reduced over. Rank order: tp innermost, then cp, then dp
// with its ep groups, pp outermost; the CP ranks hold the same weights as the DP ranks, so the
// gradients are reduced (and ZeRO shards) over dp·cp ranks, t apart.
struct DataParallelGroup {
  int32_t replicas = 1;  // dp: the pipeline's replicas (what sizes Megatron's buckets)
  int32_t reducers = 1;  // dp·cp: the ranks holding the same weights
  int32_t per_node = 1;  // reducers in one node: devices_per_node / tp
  int32_t shards = 1;    // ZeRO / FSDP shard over all reducers, or (hybrid) over a node's share
  bool hybrid = false;   // FSDP hybrid sharding: shard within a node, replicate across nodes
  int32_t ep = 1;        // the routed experts' gradients are reduced over reducers / ep
  bool operator==(const DataParallelGroup&) const = default;
};
// `hybrid_shard`: whether the group shards within a node (parallel.hybrid_shard, modelled for
// transformer models).
DataParallelGroup DataParallelGroupOf(const Config& config, bool hybrid_shard);

// A stage's parameters on one TP rank, as its reductions and gathers split them.
struct StageParams {
  double dense = 0;     // all but the routed experts
  double experts = 0;   // the routed experts (this rank's 1/ep of them)
  double decoders = 0;  // the decoders', routed experts included (FSDP's float8 all-gather)
  bool operator==(const StageParams&) const = default;
};

// `kind` over a stage's dense bytes among `ranks` (`per_node` of them in a node) plus over its
// routed-expert bytes among the ranks / ep that hold the same experts.
Time DenseAndExperts(const ClusterSpec& cluster, Collective kind, int32_t ranks, int32_t per_node,
                     int32_t ep, double dense_bytes, double expert_bytes);

// The bucketing of the data-parallel reduction: grad_buckets, or Megatron's buckets when
// overlap_grad_reduce asks for the overlap without naming buckets.
GradBuckets BucketsOf(const ParallelSpec& parallel);

// The data-parallel reduction of `grad_bytes` (fp32 gradients, produced evenly through the
// stage's last backward) in `mode`'s buckets: PyTorch DDP's (bucket_cap_mb 25 MiB, the first
// bucket 1 MiB) or Megatron's (max(4e7, 1e6·dp) fp32 elements, sized for `dp` replicas). Each
// bucket's `kind` (all-reduce, or reduce-scatter with the distributed optimizer or FSDP) over
// `ranks`, ready once the backward has produced it, as (its cumulative share of the bytes, its
// time). Empty without buckets, for one rank or for nothing to reduce.
std::vector<std::pair<double, Time>> GradientBuckets(GradBuckets mode, int32_t dp,
                                                     const ClusterSpec& cluster, Collective kind,
                                                     int32_t ranks, int32_t per_node,
                                                     double grad_bytes);
// Buckets of the dense gradients over `ranks`, then of the routed experts' over ranks / ep.
std::vector<std::pair<double, Time>> DenseAndExpertBuckets(GradBuckets mode, int32_t dp,
                                                           const ClusterSpec& cluster,
                                                           Collective kind, int32_t ranks,
                                                           int32_t per_node, int32_t ep,
                                                           double dense_bytes, double expert_bytes);

// A stage's fp32 gradients reduced by `reduce` over the group after its last backward
// (c.dp_reduce), and in BucketsOf's buckets during it (c.dp_buckets).
void AddGradientReduce(const ParallelSpec& parallel, const ClusterSpec& cluster,
                       const DataParallelGroup& group, Collective reduce, const StageParams& params,
                       StageCollectives& c);

// ZeRO 0-2 for one stage: DDP all-reduces the fp32 gradients; Megatron's distributed optimizer
// reduce-scatters them and all-gathers the updated bf16 parameters (hidden behind the next
// forward with overlap_param_gather, else after the reduction).
void AddDataParallel(const ParallelSpec& parallel, const ClusterSpec& cluster,
                     const DataParallelGroup& group, const StageParams& params,
                     StageCollectives& c);

// ZeRO-3 / FSDP full sharding of one stage over group.shards ranks: bf16 parameters gathered
// before every F and B/I (prefetched, in `units` FSDP units), fp32 gradients reduce-scattered
// after every B or W. Hybrid sharding shards within a node and all-reduces the shards across
// the nodes at the end. With reshard_after_forward off the backward reuses the forward's
// gather; under pipeline parallelism (`pipelined`; torchtitan's default there) the stage
// gathers once before its first microbatch and reduce-scatters once, in buckets, during its
// last backward. With FSDP's float8 all-gather (torchao Float8Linear, torchtitan's
// enable_fsdp_float8_all_gather) the decoders' weights travel as FP8, 1 byte each (their norm
// weights, under 0.01% of a layer, with them); the embedding, the head and the routed experts
// (grouped-GEMM parameters, not the nn.Linear modules float8 converts) stay bf16. Returns
// the bytes one gather moves (what a rank holds while they stay gathered).
double AddFullSharding(const ParallelSpec& parallel, const ClusterSpec& cluster,
                       const DataParallelGroup& group, const StageParams& params, bool pipelined,
                       int32_t units, StageCollectives& c);

// AddFullSharding with zero_stage 3, else AddDataParallel (returning 0: nothing gathered).
double AddStageDataParallel(const ParallelSpec& parallel, const ClusterSpec& cluster,
                            const DataParallelGroup& group, const StageParams& params,
                            bool pipelined, int32_t units, StageCollectives& c);

// What FSDP (zero_stage 3) keeps whole on each rank at its peak, beyond what ZeRO's sharding
// says (memory/model_states.h, StateResidency), from each stage's gathered bytes:
//   - Under pipeline parallelism, torch.distributed.pipelining runs every backward but a
//     stage's last with set_reshard_after_backward(False) and set_requires_gradient_sync(False)
//     (pytorch torch/distributed/pipelining/stage.py, _PipelineStageBase
//     .backward_maybe_with_nosync, at 1963fc8 and since), and torchtitan wraps every block with
//     reshard_after_forward=False under PP (torchtitan parallelize_llama apply_fsdp at 9dec370,
//     reshard "default"). A stage's gathered parameters stay until its last backward, and its
//     gradients accumulate unsharded in the reduce dtype, fp32 with torchtitan's
//     mixed_precision_reduce = "float32" (FSDP2 FSDPParam.to_accumulated_grad_if_needed), until
//     that backward reduce-scatters them.
//   - Without it, reshard_after_forward=False (fsdp_reshard_after_forward: false) keeps each
//     block's parameters from its forward to its backward: all of them at the end of the
//     forward; gradients are reduce-scattered every backward.
StateResidency FsdpResidency(const ParallelSpec& parallel, const Schedule& schedule,
                             const std::vector<double>& stage_gathered_bytes);

}  // namespace stagecraft
