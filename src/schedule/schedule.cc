#include "schedule/schedule.h"

#include <cassert>

namespace stagecraft {

const char* PlacementName(Placement placement) {
  return placement == Placement::kLoop ? "loop" : "v";
}

Result<Placement> ParsePlacement(const std::string& name) {
  if (name == "loop") return Placement::kLoop;
  if (name == "v") return Placement::kV;
  return Error{"unknown placement '" + name + "' (expected 'loop' or 'v')"};
}

DeviceId StageToRank(StageId stage, int32_t num_ranks, Placement placement) {
  assert(num_ranks > 0 && stage.value() >= 0);
  const int32_t s = stage.value();
  if (placement == Placement::kLoop) return DeviceId(s % num_ranks);
  return DeviceId(s < num_ranks ? s : 2 * num_ranks - 1 - s);
}

size_t Schedule::num_actions() const {
  size_t total = 0;
  for (const auto& actions : rank_actions) total += actions.size();
  return total;
}

std::vector<int32_t> StageRanks(const Schedule& schedule) {
  std::vector<int32_t> ranks(static_cast<size_t>(schedule.num_stages), -1);
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
