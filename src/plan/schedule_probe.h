// What the planner's screen takes of a schedule that has no closed form (zb-1p, zb-2p, zb-v,
// v-half, v-min): the schedule generated for the candidate's pp, vpp and microbatches with the
// slowest chunk's costs on every stage, then run compute-only (each rank its program in order,
// an action once its inputs are done, no transfer time), as the closed forms assume too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/result.h"
#include "core/time.h"
#include "schedule/schedule.h"

namespace stagecraft {

struct ScheduleProbe {
  Time makespan;
  // Most chunk activations a rank holds at once, from its F until its I (or B): the unit the
  // screen's memory counts (ChunksInFlight for the schedules with a closed form).
  int64_t peak_chunks = 0;
};

// The compute-only run of `schedule` with every stage costing `forward`, `input_grad` and
// `weight_grad` (a B pass costs I + W); nullopt when the programs deadlock.
// REQUIRES: F, B, I and W passes only (no overlapped F&B pairs).
std::optional<ScheduleProbe> RunComputeOnly(const Schedule& schedule, Time forward, Time input_grad,
                                            Time weight_grad);

// Generates `name` (either generator table; the cost-aware ones see these uniform costs and no
// transfer time) and runs it compute-only. Errors: the generator's own (e.g. too few
// microbatches), or a deadlock.
Result<ScheduleProbe> ProbeSchedule(const std::string& name, int32_t pp, int32_t vpp,
                                    int32_t microbatches, Time forward, Time input_grad,
                                    Time weight_grad);

}  // namespace stagecraft
