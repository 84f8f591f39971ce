#include "schedule/schedule.h"

#include <cassert>

namespace stagecraft {

std::string FormatCommAction(const CommAction& comm) {
  return std::to_string(comm.stage.value()) + (comm.send ? "SEND_" : "RECV_") +
         (comm.backward ? "B" : "F") + std::to_string(comm.microbatch.value());
}

Result<Placement> ParsePlacement(const std::string& name) {
  if (const auto placement = kPlacementNames.Parse(name)) return *placement;
  return Error{"unknown placement '" + name + "' (expected " + kPlacementNames.Joined() + ")"};
}

DeviceId StageToRank(StageId stage, int32_t num_ranks, Placement placement) {
  assert(num_ranks > 0 && stage.value() >= 0);
  const int32_t s = stage.value();
  if (placement == Placement::kLoop) return DeviceId(s % num_ranks);
  if (placement == Placement::kDual) return DeviceId(s);  // the first copy
  return DeviceId(s < num_ranks ? s : 2 * num_ranks - 1 - s);
}

int32_t PlacedRank(const Schedule& schedule, const Action& action) {
  const int32_t rank = StageToRank(action.stage, schedule.num_ranks, schedule.placement).value();
  return MirroredMicrobatch(schedule, action.microbatch.value()) ? schedule.num_ranks - 1 - rank
                                                                 : rank;
}

size_t Schedule::num_actions() const {
  size_t total = 0;
  for (const auto& actions : rank_actions) total += actions.size();
  return total;
}

std::vector<int32_t> StageRanks(const Schedule& schedule) {
  std::vector<int32_t> ranks(static_cast<size_t>(schedule.num_stages), -1);
  if (schedule.placement == Placement::kDual) {
    for (int32_t stage = 0; stage < schedule.num_stages; ++stage) ranks[stage] = stage;
    return ranks;
  }
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    for (const Action& action : schedule.rank_actions[rank]) {
      const int32_t stage = action.stage.value();
      if (stage >= 0 && stage < schedule.num_stages && ranks[stage] < 0) {
        ranks[stage] = static_cast<int32_t>(rank);
      }
    }
  }
  return ranks;
}

}  // namespace stagecraft
