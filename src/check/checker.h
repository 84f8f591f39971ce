// The schedule checker behind `stagecraft check`: every violation of every class, not the first —
// missing or doubled actions, backward before forward, W before I, a stage on two ranks, the
// shared-state order, a compute_comms schedule's SEND/RECV list, and deadlocks under each
// point-to-point mode asked for (with the wait-for cycle and the rank whose order closes it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lower/lower.h"
#include "lower/wait_for.h"
#include "model/model_spec.h"
#include "schedule/schedule.h"

namespace stagecraft {

enum class ViolationKind : uint8_t {
  kShape,                  // stage count does not fit the ranks, out-of-range ids
  kDuplicateAction,        // the same action twice
  kMissingAction,          // a forward or backward of some (stage, microbatch) is absent
  kMixedBackward,          // both B and I/W for one (stage, microbatch)
  kStageOnTwoRanks,        // a stage's actions are spread over ranks
  kBackwardBeforeForward,  // B or I ordered before its own F on the rank
  kWeightBeforeInput,      // W ordered before its I
  kStateBeforeProducer,    // a consumer stage's F runs before the F that makes its state
  kProducerBackwardFirst,  // a producer's backward runs before a consumer's (dState missing)
  kStaleRead,              // a bounded state buffer slot is overwritten before its last read
  kBadOverlap,             // an F&B pair that is not one forward and one independent backward
  kCommOrder,              // a compute_comms schedule lacks, misplaces or invents a SEND/RECV
  kDeadlock,               // no action can run and work remains
};
const char* ViolationKindName(ViolationKind kind);

struct Violation {
  ViolationKind kind = ViolationKind::kShape;
  int32_t rank = -1;                // the rank where it shows, or -1 for the whole schedule
  std::string action;               // the action concerned ("2B3"), or ""
  std::string message;              // what is wrong, and what it waits for
  std::string hint;                 // how to fix it
  std::vector<P2pMode> modes = {};  // kDeadlock: the p2p modes it deadlocks under
};

// Every point-to-point mode, in report order: async, rendezvous, torch-pipelining.
std::vector<P2pMode> AllCheckModes();

struct CheckOptions {
  LowerOptions lower;  // costs and links do not change the verdict, only the report
  // The point-to-point modes to search for deadlocks under, in report order (empty: none).
  std::vector<P2pMode> modes = AllCheckModes();
  int32_t state_buffer_slots = 0;  // > 0: each rank keeps k slots per state (stale-read check)
};

// Every class of check, each whatever the others found: structure, shared-state order, and a
// deadlock search under each mode of options.modes whenever the schedule can be lowered (a
// schedule that lacks or doubles actions cannot be, and says so through its structural
// violations). A deadlock found identically under several modes is reported once, naming them
// all. Violations are ordered by check, then rank.
std::vector<Violation> CheckSchedule(const Schedule& schedule,
                                     const std::vector<StageCost>& stage_costs,
                                     const CheckOptions& options);

// Shared-state order on each rank (timing-free, from program order): a consumer stage's F after
// the producer's F, the producer's backward after every consumer's, and with k buffer slots the
// copy of microbatch j + k written only after the last read of microbatch j. Appends violations.
void CheckStateOrder(const Schedule& schedule, const std::vector<StateFlow>& flows,
                     int32_t buffer_slots, std::vector<Violation>& out);

// Timing-free deadlock search on a lowered graph: runs every task whose dependencies and
// program order allow, to a fixed point. Returns the analysis when work remains.
std::optional<Deadlock> FindDeadlock(const TaskGraph& graph);

// The most violations FormatViolations prints one by one; past it, a count per kind.
inline constexpr size_t kMaxViolationsShown = 100;
// CheckSchedule stops looking for structural violations after this many (a 26-byte CSV naming
// microbatch 999999 lacks two million actions): the first violation it returns then says where
// it stopped, and the rest of the schedule is not checked.
inline constexpr size_t kMaxViolationsCollected = 10000;

// "rank 1 1B0: ... (hint: ...)" lines, one per violation, for the first kMaxViolationsShown;
// then one line counting the rest by kind.
std::string FormatViolations(const std::vector<Violation>& violations);

}  // namespace stagecraft
