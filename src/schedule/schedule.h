// Schedule: per rank, the ordered list of compute actions (DESIGN.md §1). Communication is never
// written here; the lowering pass inserts it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ids.h"
#include "core/result.h"
#include "schedule/action.h"

namespace stagecraft {

// Stage → rank maps (DESIGN.md §1).
enum class Placement : uint8_t {
  kLoop,  // stage s on rank s mod p
  kV,     // s < p on rank s, else 2p − 1 − s (two chunks per rank)
};

const char* PlacementName(Placement placement);
Result<Placement> ParsePlacement(const std::string& name);
// REQUIRES: 0 <= stage < num_ranks * chunks (and chunks == 2 for kV).
DeviceId StageToRank(StageId stage, int32_t num_ranks, Placement placement);

struct Schedule {
  std::string name;              // generator name, or "csv"
  int32_t num_ranks = 0;         // pp
  int32_t num_stages = 0;        // pp * vpp
  int32_t num_microbatches = 0;  // m
  Placement placement = Placement::kLoop;
  std::vector<std::vector<Action>> rank_actions;  // [rank] → program order

  int32_t chunks_per_rank() const { return num_ranks > 0 ? num_stages / num_ranks : 0; }
  size_t num_actions() const;
  bool operator==(const Schedule&) const = default;
};

// A dense index of (stage, microbatch, kind) for tables over every possible action:
// 0 <= ActionSlot(...) < ActionSlotCount(schedule). REQUIRES: the action's ids are in range.
inline size_t ActionSlotCount(const Schedule& schedule) {
  return static_cast<size_t>(schedule.num_stages) * schedule.num_microbatches * 4;
}
inline size_t ActionSlot(const Schedule& schedule, const Action& action) {
  return (static_cast<size_t>(action.stage.value()) * schedule.num_microbatches +
          action.microbatch.value()) *
             4 +
         static_cast<size_t>(action.kind);
}

// Where each stage runs, as the schedule says (the rank whose list holds its actions), or -1
// for a stage with no action. A stage found on several ranks maps to the first; the checker
// reports the others.
std::vector<int32_t> StageRanks(const Schedule& schedule);

}  // namespace stagecraft
