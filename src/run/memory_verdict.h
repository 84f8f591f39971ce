// The memory verdict of a simulated layout, the one every answer carries (simulate, memory, the
// comparisons, bench-schedules): per device the model states (parameters, gradients, optimizer
// state as ZeRO / FSDP / the distributed optimizer shard them), the peak of activations plus
// resident shared state the schedule reaches, and the framework reserve, against the device's
// capacity. Bytes are bytes; GiB = 2^30 B.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memory/model_states.h"
#include "report/run_info.h"
#include "run/simulate.h"

namespace stagecraft {

struct RankMemory {
  int32_t rank = 0;
  double params = 0;        // parameters this device holds (its stages / tp, an encoder's)
  ModelStateBytes states;   // their parameters, gradients and optimizer state
  int64_t activations = 0;  // stored activations at the schedule's peak
  // Of them, the recomputation's working set a backward on this device holds (the largest of
  // its stages' StageCost::recompute_bytes; counted in the peak only while that backward runs).
  int64_t recompute = 0;
  int64_t state = 0;      // resident shared state at its peak
  int64_t transient = 0;  // peak of activations + resident shared state (together)
  double total = 0;       // states + transient + reserve
  bool over = false;      // total above the capacity (never when the capacity is unknown)
};

struct MemoryReport {
  std::vector<RankMemory> ranks;
  int32_t zero_stage = 0;   // effective: the distributed optimizer counts as stage 1
  int32_t shard_ranks = 1;  // ranks the sharded states spread over
  MemoryInfo verdict;       // the fullest device against the capacity
};

// REQUIRES: `simulated` is `run` simulated (SimulatePrepared succeeded).
MemoryReport ComputeMemory(const PreparedRun& run, const RunOutcome& simulated);

// What would make this run fit, naming only what stagecraft can model for its kind of model:
// "shard more (parallel.zero_stage: 3), recompute (parallel.recompute: full), or raise tp/pp".
std::string MemoryHint(const PreparedRun& run);

// "rank 0 needs 75.39 GiB but a device has 74.51 GiB (...); <hint>": the stderr warning.
std::string OverCapacityMessage(const PreparedRun& run, const MemoryInfo& verdict);

}  // namespace stagecraft
