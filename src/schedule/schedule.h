// Schedule: per rank, the ordered list of compute actions (DESIGN.md §1). Communication is
// inserted by the lowering pass, except for the explicit SEND/RECV actions of a torch
// compute_comms CSV, which the torch-pipelining p2p mode honours (`rank_comms`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_table.h"
#include "core/ids.h"
#include "core/result.h"
#include "schedule/action.h"

namespace stagecraft {

// Stage → rank maps (DESIGN.md §1).
enum class Placement : uint8_t {
  kLoop,  // stage s on rank s mod p
  kV,     // s < p on rank s, else 2p − 1 − s (two chunks per rank)
  kDual,  // bidirectional (DualPipe): two copies of the p stages; microbatches 0..m/2 − 1 run
          // stage s on rank s, the others (fed from the last rank) on rank p − 1 − s
};

// Their names (parallel.placement), in `list placements` order.
inline constexpr EnumTable<Placement> kPlacementNames = {
    {"loop", Placement::kLoop}, {"v", Placement::kV}, {"dual", Placement::kDual}};
constexpr const char* PlacementName(Placement placement) { return kPlacementNames.Name(placement); }
Result<Placement> ParsePlacement(const std::string& name);
// REQUIRES: 0 <= stage < num_ranks * chunks (and chunks == 2 for kV).
DeviceId StageToRank(StageId stage, int32_t num_ranks, Placement placement);

// An explicit point-to-point action of a torch compute_comms schedule, as
// torch.distributed.pipelining writes it: `{stage}SEND_F{mb}` sends stage's output of mb to the
// next stage, `{stage}RECV_F{mb}` receives stage's input, `{stage}SEND_B{mb}` sends stage's
// input gradient to the previous stage, `{stage}RECV_B{mb}` receives stage's output gradient.
struct CommAction {
  StageId stage;
  MicrobatchId microbatch;
  bool send = false;      // SEND (true) or RECV
  bool backward = false;  // _B (gradient) or _F (activation)
  int32_t after = 0;      // how many of the rank's compute actions come before it in the row
  bool operator==(const CommAction&) const = default;
};
// "0SEND_F3", "1RECV_B0".
std::string FormatCommAction(const CommAction& comm);

struct Schedule {
  std::string name;              // generator name, or "csv"
  int32_t num_ranks = 0;         // pp
  int32_t num_stages = 0;        // pp * vpp
  int32_t num_microbatches = 0;  // m
  Placement placement = Placement::kLoop;
  std::vector<std::vector<Action>> rank_actions;  // [rank] → program order
  // [rank] → its SEND/RECV actions in row order; empty unless read from a compute_comms CSV
  // (then the torch-pipelining mode posts them where they stand instead of placing its own).
  std::vector<std::vector<CommAction>> rank_comms;

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
// For `dual`, the map of the first copy (stage s on rank s); the second copy mirrors it, which
// keeps every same-rank and cross-rank relation between stages.
std::vector<int32_t> StageRanks(const Schedule& schedule);

// The rank the placement puts `action` on (for `dual` it depends on the microbatch's copy).
// REQUIRES: the ids are in range; num_microbatches even for `dual`.
int32_t PlacedRank(const Schedule& schedule, const Action& action);
// For `dual`: true when `microbatch` is fed from the last rank (the mirrored copy).
inline bool MirroredMicrobatch(const Schedule& schedule, int32_t microbatch) {
  return schedule.placement == Placement::kDual && microbatch >= schedule.num_microbatches / 2;
}

}  // namespace stagecraft
