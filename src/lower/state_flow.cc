#include "lower/state_flow.h"

#include <algorithm>

namespace stagecraft {

int64_t RankCrossings(const StateFlow& flow, const std::vector<int32_t>& stage_ranks) {
  int64_t crossings = 0;
  for (int32_t cut = flow.producer_stage; cut < flow.last_consumer_stage(); ++cut) {
    if (stage_ranks[cut] != stage_ranks[cut + 1]) ++crossings;
  }
  return crossings;
}

std::vector<int32_t> ReceivingStages(const StateFlow& flow,
                                     const std::vector<int32_t>& stage_ranks) {
  std::vector<int32_t> stages;
  std::vector<int32_t> ranks_seen = {stage_ranks[flow.producer_stage]};
  for (int32_t stage : flow.consumer_stages) {  // ascending, so the first per rank is the lowest
    const int32_t rank = stage_ranks[stage];
    if (std::find(ranks_seen.begin(), ranks_seen.end(), rank) != ranks_seen.end()) continue;
    ranks_seen.push_back(rank);
    stages.push_back(stage);
  }
  return stages;
}

std::vector<int32_t> HolderStages(const StateFlow& flow) {
  std::vector<int32_t> stages = {flow.producer_stage};
  if (flow.policy == StatePolicy::kPayload) {
    for (int32_t stage = flow.producer_stage + 1; stage <= flow.last_consumer_stage(); ++stage) {
      stages.push_back(stage);
    }
    return stages;
  }
  for (int32_t stage : flow.consumer_stages) {
    if (stage != flow.producer_stage) stages.push_back(stage);
  }
  return stages;
}

}  // namespace stagecraft
