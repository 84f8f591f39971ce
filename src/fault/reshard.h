// Resharding a checkpoint on restart: a run resumed on another layout (other tp, pp, dp, cp or ep)
// reads, for each of its (stage, tensor-parallel, expert-parallel) shards, byte ranges of the old
// shards. Each layer's parameters (and with them its fp32 master weights and Adam moments,
// sharded alike) split into tp contiguous slices, Megatron's and DCP's row/column split
// flattened; a layer lives on the stage of the partition. A MoE layer's routed experts are
// split over the ep ranks (contiguous blocks of experts) and each expert into tp slices; the
// rest of the layer (attention, router, shared experts) is the dense part; a CSA2 layer list's
// parameters that tensor parallelism replicates on every tp rank are read whole by tp rank 0
// (layer_costs.h LayerReplicatedParams). Data- and
// context-parallel ranks hold the same parameters: replicas that read nothing (the dense parts
// are read by expert-parallel rank 0 of each group and broadcast). The plan says which new shard
// reads which range of which old shard, and checks that the ranges cover every layer's dense part
// and every expert exactly once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "run/run_setup.h"

namespace stagecraft {

// What part of its layers a read takes: the tp-sliced dense part, the part tensor parallelism
// replicates (CSA2 layer lists: read whole by tp rank 0 and broadcast), or routed experts.
enum class ReadPart : uint8_t { kDense, kReplicated, kExperts };

struct ShardRead {
  int32_t old_stage = 0;
  int32_t old_tp = 0;
  int32_t old_ep = 0;  // MoE: the old expert-parallel rank
  ReadPart part = ReadPart::kDense;
  int32_t first_layer = 0;  // layers [first_layer, last_layer] of the old shard
  int32_t last_layer = 0;
  int32_t first_expert = -1;  // MoE: routed experts [first, last] of those layers; -1: not
  int32_t last_expert = -1;   // experts
  double begin_share = 0;     // the range within each layer's part (or each expert): [begin, end)
  double end_share = 0;
  double params = 0;  // parameters read (all those layers)
};

struct NewShard {
  int32_t stage = 0;
  int32_t tp = 0;
  int32_t ep = 0;
  std::vector<ShardRead> reads;
  double params = 0;
};

struct ReshardPlan {
  int32_t old_tp = 1, old_pp = 1, old_dp = 1, old_cp = 1, old_ep = 1;
  int32_t new_tp = 1, new_pp = 1, new_dp = 1, new_cp = 1, new_ep = 1;
  bool moe = false;              // the model has routed experts (shards are stage/tp/ep)
  bool replicated = false;       // some layers have parameters tensor parallelism replicates (CSA2)
  std::vector<NewShard> shards;  // stage-major, then tp, then ep
  int32_t layers = 0;
  double params = 0;                 // the model's
  double bytes_per_param = 0;        // saved: weights + optimizer state
  bool covers_exactly_once = false;  // every layer's range read once, no gap, no overlap
};

// REQUIRES: both runs prepared. Errors: the uniform model (no layers); the two hold other models.
Result<ReshardPlan> PlanReshard(const PreparedRun& old_run, const PreparedRun& new_run);

}  // namespace stagecraft
