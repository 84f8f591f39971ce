// Memory over time, per rank (DESIGN.md §5 rule 3): activations (F adds M_B; I turns M_B into
// M_W; W and B free) and resident shared state — a state copy lives on a rank from the start of
// the first forward there that holds it (the producer's, a carrier's under payload, or a
// consumer's) until the end of the last backward there that holds it; one copy per rank, so
// state shared by chunks of one rank is counted once and moves no bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/time.h"
#include "lower/task_graph.h"
#include "model/model_spec.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace stagecraft {

struct MemorySample {
  Time time;
  int64_t activation_bytes = 0;  // after every change at `time`
  int64_t state_bytes = 0;
  bool operator==(const MemorySample&) const = default;
};

struct MemoryTimeline {
  std::vector<std::vector<MemorySample>> ranks;  // [rank] samples in time order
  std::vector<int64_t> peak_state_bytes;         // [rank]
  std::vector<int64_t> peak_memory_bytes;        // [rank] peak of activations + state
};

// REQUIRES: a finished trace of `graph`, lowered from `schedule`.
MemoryTimeline ComputeMemoryTimeline(const Schedule& schedule,
                                     const std::vector<StageCost>& stage_costs,
                                     const TaskGraph& graph, const Trace& trace);

}  // namespace stagecraft
