// Shared pieces of the V-shape schedules zb-v, v-half and v-min (Pipeline Parallelism with
// Controllable Memory, Qi et al., NeurIPS 2024): the two stages of a rank, the vpp check, the
// empty V schedule, and the choice between a V order with aligned links and the authors' order
// for a run's costs (FasterVOrder, for the cost-aware v-half and v-min).
#include <algorithm>
#include <optional>
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

// The most chunk activations a rank holds, from F until `release` (W: the paper's accounting; I:
// the full activations, which the simulator's memory holds until the I).
int32_t PeakChunkActivations(const Schedule& schedule, ActionKind release) {
  int32_t peak = 0;
  for (const std::vector<Action>& program : schedule.rank_actions) {
    int32_t held = 0;
    for (const Action& action : program) {
      if (action.kind == ActionKind::kForward) ++held;
      if (action.kind == release) --held;
      peak = std::max(peak, held);
    }
  }
  return peak;
}

bool HoldsNoMoreActivations(const Schedule& candidate, const Schedule& reference) {
  for (const ActionKind release : {ActionKind::kWeightGrad, ActionKind::kInputGrad}) {
    if (PeakChunkActivations(candidate, release) > PeakChunkActivations(reference, release)) {
      return false;
    }
  }
  return true;
}

Result<Schedule> FasterVOrder(Schedule plain, Schedule unaligned, const PipelineCosts& costs) {
  const size_t stages = static_cast<size_t>(plain.num_stages);
  if (costs.stages.size() != stages || costs.activation_p2p.size() + 1 < stages ||
      costs.gradient_p2p.size() + 1 < stages) {
    return Error{plain.name + ": internal: needs one stage cost per stage and a p2p time per " +
                 "cut, got " + std::to_string(costs.stages.size()) + " stage costs for " +
                 std::to_string(stages) + " stages"};
  }
  const bool no_more_memory = HoldsNoMoreActivations(unaligned, plain);
  std::optional<TimedOrder> best = TimeOrder(std::move(plain), costs);
  if (!best) return Error{"internal error: a V order is stuck"};
  if (!costs.links_in_receiver_order && no_more_memory) {
    KeepFaster(best, TimeOrder(std::move(unaligned), costs));
  }
  return std::move(best->schedule);
}

}  // namespace stagecraft
