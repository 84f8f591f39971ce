// Schedule generators: one file each, all listed in one table (ScheduleGenerators()), which
// `stagecraft list schedules` prints and every name lookup uses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "schedule/schedule.h"

namespace stagecraft {

struct GeneratorParams {
  int32_t pp = 1;            // pipeline ranks
  int32_t vpp = 1;           // chunks (stages) per rank
  int32_t microbatches = 1;  // m
  int32_t group_size = 0;    // interleaved: microbatch group size; 0 = pp (Megatron's default)
};

using GenerateFn = Result<Schedule> (*)(const GeneratorParams&);

struct ScheduleGenerator {
  const char* name;
  const char* description;  // one line, for `stagecraft list schedules`
  GenerateFn generate;
};

// The registry: a constant table, in the order `list` prints it.
const std::vector<ScheduleGenerator>& ScheduleGenerators();
std::vector<std::string> ScheduleNames();
// Unknown names get "did you mean" and the list command.
Result<const ScheduleGenerator*> FindScheduleGenerator(std::string_view name);

// The generators (one file each).
Result<Schedule> GenerateGpipe(const GeneratorParams& params);
Result<Schedule> GenerateOneFOneB(const GeneratorParams& params);
Result<Schedule> GenerateInterleavedOneFOneB(const GeneratorParams& params);
Result<Schedule> GenerateLoopedBfs(const GeneratorParams& params);

// Shared argument checks: pp, vpp, microbatches >= 1. `name` prefixes the message.
Status CheckBasicParams(const GeneratorParams& params, std::string_view name);
// An empty schedule of the right shape with loop placement.
Schedule EmptyLoopSchedule(const GeneratorParams& params, std::string_view name);

}  // namespace stagecraft
