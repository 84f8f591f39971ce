// Resharding a checkpoint on restart: a run resumed on another layout (other tp, pp or dp) reads,
// for each of its (stage, tensor-parallel) shards, byte ranges of the old shards. Each layer's
// parameters (and with them its fp32 master weights and Adam moments, sharded alike) split into
// tp contiguous slices, Megatron's and DCP's row/column split flattened; a layer lives on the
// stage of the partition. The plan says which new shard reads which range of which old shard,
// and checks that the ranges cover every layer exactly once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "run/run_setup.h"

namespace stagecraft {

struct ShardRead {
  int32_t old_stage = 0;
  int32_t old_tp = 0;
  int32_t first_layer = 0;  // layers [first_layer, last_layer] of the old shard
  int32_t last_layer = 0;
  double begin_share = 0;  // the range within each layer: [begin, end) of its parameters
  double end_share = 0;
  double params = 0;  // parameters read (all those layers)
};

struct NewShard {
  int32_t stage = 0;
  int32_t tp = 0;
  std::vector<ShardRead> reads;
  double params = 0;
};

struct ReshardPlan {
  int32_t old_tp = 1, old_pp = 1, old_dp = 1;
  int32_t new_tp = 1, new_pp = 1, new_dp = 1;
  std::vector<NewShard> shards;  // stage-major
  int32_t layers = 0;
  double params = 0;                 // the model's
  double bytes_per_param = 0;        // saved: weights + optimizer state
  bool covers_exactly_once = false;  // every layer's range read once, no gap, no overlap
};

// REQUIRES: both runs prepared. Errors: not a dense transformer; the two hold other models.
Result<ReshardPlan> PlanReshard(const PreparedRun& old_run, const PreparedRun& new_run);

}  // namespace stagecraft
