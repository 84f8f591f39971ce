// Transformer models in a run: the layer list on the device, and the parallel dimensions around
// the pipeline as collective-stream work (parallel_setup.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "io/config.h"
#include "lower/lower.h"
#include "schedule/partition.h"
#include "schedule/schedule.h"

namespace stagecraft {

// For model.type: transformer: fills model.layers (times from FLOPs on the cluster's device)
// and the hidden width of a stage send. Errors: tp not dividing heads or the MLP, tp larger
// than a node.
Status BuildTransformerModel(Config& config);

struct ParallelPlan {
  std::vector<StageCollectives> collectives;  // [stage]; empty when tp = dp = 1
  std::vector<Time> optimizer_step;           // [rank]
  int32_t world_size = 0;                     // pp · tp · dp; 0 = not a transformer run
  int64_t tokens_per_iteration = 0;           // m · b · s · dp
  double hardware_flops_per_iteration = 0;    // with recomputation (Megatron's TFLOP/s basis)
  double model_flops_per_iteration = 0;       // without (MFU's basis)
  double peak_flops_per_device = 0;
  double params = 0;
  std::vector<double> rank_params;  // [rank] parameters one device holds (its stages, / tp)
  int32_t shard_ranks = 1;          // ranks ZeRO / FSDP shards over (dp·cp, or a node's share)
};
// Transformer models: TP, CP, EP and DP. CSA2 layer-list models: EP and DP (tp = cp = 1),
// parameters and FLOPs from the csa2.md formulas (model/layer_costs.h). Other models: empty.
ParallelPlan PlanParallel(const Config& config, const Partition& partition,
                          const Schedule& schedule);

}  // namespace stagecraft
