#include "parallel/optimizer_step.h"

#include <algorithm>

#include "parallel/parallel_common.h"

namespace stagecraft {

int32_t OptimizerShards(const ParallelSpec& parallel, int32_t shards) {
  return parallel.distributed_optimizer || parallel.zero_stage >= 1 ? shards : 1;
}

std::vector<Time> OptimizerSteps(const ClusterSpec& cluster, const Schedule& schedule,
                                 const std::vector<double>& stage_params, int32_t shards) {
  const double bandwidth = cluster.hbm_bytes_per_s * cluster.memory_efficiency;
  std::vector<Time> steps(static_cast<size_t>(schedule.num_ranks), Time());
  const std::vector<int32_t> ranks = StageRanks(schedule);
  for (size_t stage = 0; stage < stage_params.size(); ++stage) {
    if (bandwidth <= 0) continue;
    const double params = stage_params[stage] / std::max(1, shards);
    for (int32_t rank : HoldingRanks(schedule, ranks, stage)) {
      steps[rank] += FromSeconds(params * kOptimizerBytesPerParam / bandwidth);
    }
  }
  return steps;
}

}  // namespace stagecraft
