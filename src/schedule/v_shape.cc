// Shared pieces of the V-shape schedules zb-v, v-half and v-min (Pipeline Parallelism with
// Controllable Memory, Qi et al., NeurIPS 2024): the two stages of a rank, the vpp check and the
// empty V schedule.
#include <string>

#include "schedule/generator.h"

namespace stagecraft {

VStages VStagesOfRank(int32_t rank, int32_t pp) {
  return {StageId(rank), StageId(2 * pp - 1 - rank)};
}

Status CheckVShapeParams(const GeneratorParams& params, std::string_view name) {
  STAGECRAFT_RETURN_IF_ERROR(CheckBasicParams(params, name));
  if (params.vpp != 2) {
    return Error{std::string(name) +
                 ": V schedules place 2 chunks per rank (stage s < p on rank s, else 2p-1-s), "
                 "got vpp = " +
                 std::to_string(params.vpp) + "; use --vpp 2 (or parallel.vpp: 2)"};
  }
  return Status::Ok();
}

Schedule EmptyVSchedule(const GeneratorParams& params, std::string_view name) {
  Schedule schedule = EmptyLoopSchedule(params, name);
  schedule.num_stages = 2 * params.pp;
  // With one rank both maps put every stage on rank 0; name it loop, as the CSV reader does.
  schedule.placement = params.pp == 1 ? Placement::kLoop : Placement::kV;
  return schedule;
}

}  // namespace stagecraft
