// The parallel cost model: a transformer's layer list on the device, and the parallel
// dimensions around the pipeline as collective-stream work (TP, CP, EP, DP/ZeRO/FSDP, the
// optimizer step).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/config.h"
#include "lower/lower.h"
#include "memory/model_states.h"
#include "model/layer_costs.h"
#include "schedule/partition.h"
#include "schedule/schedule.h"

namespace stagecraft {

// For model.type: transformer: fills model.layers (times from FLOPs on the cluster's device)
// and the hidden width of a stage send. Errors: tp not dividing heads or the MLP, tp larger
// than a node.
Status BuildTransformerModel(Config& config);

// CSA2 layer lists with cp > 1 (csa2.md, "Context parallelism (V4 / V4.1)"): a cluster for the
// all-gathers, cp dividing seq_len, and shards of whole compression groups for every ratio m in
// the model — contiguous: (s/cp) % m == 0; zig-zag: s % (2·cp) == 0 and (s/(2·cp)) % m == 0.
// Errors name parallel.cp, the numbers and a seq_len that fits. Ok for cp = 1 and other models.
Status CheckContextParallel(const Config& config, const ConfigLocations& locations);

// parallel.enable_fsdp_float8_all_gather needs float8 linears (fp8) and FSDP full sharding
// (zero_stage 3) on a transformer: errors name the key and what to add.
Status CheckFloat8AllGather(const Config& config, const ConfigLocations& locations);

// What a run's derived costs rest on (RunInfo::assumptions): for transformer models the kernel
// model's device constants or the one forced efficiency, the engines' overlap options in force,
// FP8 and fused kernels; for CSA2 layer lists the efficiency. Empty for uniform models.
std::vector<std::pair<std::string, std::string>> CostAssumptions(const Config& config);

// How a CSA2 layer list's layers run on one rank (model/layer_costs.h): ep, the context shards,
// tp and sequence parallelism, the recomputation; with `partition` and recompute_num_layers the
// layers that recompute (Megatron's block method: the first N decoders of each pipeline chunk).
LayerRun LayerRunOf(const Config& config, const Partition* partition = nullptr);

struct ParallelPlan {
  std::vector<StageCollectives> collectives;  // [stage]; empty when tp = dp = 1
  std::vector<Time> optimizer_step;           // [rank]
  int32_t world_size = 0;                     // pp · tp · cp · dp; 0 = not a layer-list run
  int64_t tokens_per_iteration = 0;           // m · b · s · dp
  double hardware_flops_per_iteration = 0;    // with recomputation (Megatron's TFLOP/s basis)
  double model_flops_per_iteration = 0;       // without (MFU's basis)
  double peak_flops_per_device = 0;
  double params = 0;
  std::vector<double> rank_params;  // [rank] parameters one device holds (its stages, / tp)
  int32_t shard_ranks = 1;          // ranks ZeRO / FSDP shards over (dp·cp, or a node's share)
  StateResidency residency;         // what FSDP keeps whole at the peak (under PP: its gathered
                                    // parameters and its unsharded fp32 gradients)
};
// The ZeRO stage in effect: parallel.zero_stage, with Megatron's distributed optimizer as stage 1.
int32_t EffectiveZeroStage(const ParallelSpec& parallel);
// The model states (parameters, gradients, optimizer state) rank `rank` holds at its peak, as
// its engine keeps them: ZeRO's stage (the distributed optimizer counts as stage 1) over
// plan.shard_ranks, with what plan.residency keeps whole. The memory verdict and the planner's
// screen both read it.
ModelStateBytes RankModelStates(const ParallelPlan& plan, const ParallelSpec& parallel,
                                size_t rank);
// Transformer models: TP, CP, EP and DP. CSA2 layer-list models: TP, CP, EP and DP, parameters
// (per TP rank: the replicated ones whole, the rest / t) and FLOPs (with recomputation in the
// hardware FLOPs) from the csa2.md formulas (model/layer_costs.h), CP's all-gathers as the
// cp_forward / cp_backward collectives. Other models: empty.
ParallelPlan PlanParallel(const Config& config, const Partition& partition,
                          const Schedule& schedule);

}  // namespace stagecraft
