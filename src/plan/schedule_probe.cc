#include "plan/schedule_probe.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "schedule/generator.h"

namespace stagecraft {
namespace {

constexpr int64_t kNotRun = std::numeric_limits<int64_t>::max();

// The end of the action a pass of `kind` at `stage` waits for, or kNotRun before it has run;
// 0 when it waits for nothing there.
int64_t InputEnd(const Schedule& schedule, const std::vector<int64_t>& end, const Action& action) {
  const int32_t stage = action.stage.value();
  const auto at = [&](int32_t s, ActionKind kind) {
    return end[ActionSlot(schedule, Action{StageId(s), kind, action.microbatch})];
  };
  // The backward that follows stage s + 1's: its B, or its I where the backward is split.
  const auto backward_of = [&](int32_t s) {
    return std::min(at(s, ActionKind::kBackward), at(s, ActionKind::kInputGrad));
  };
  switch (action.kind) {
    case ActionKind::kForward:
      return stage > 0 ? at(stage - 1, ActionKind::kForward) : 0;
    case ActionKind::kBackward:
    case ActionKind::kInputGrad: {
      const int64_t own = at(stage, ActionKind::kForward);
      const int64_t next = stage + 1 < schedule.num_stages ? backward_of(stage + 1) : 0;
      return std::max(own, next);
    }
    case ActionKind::kWeightGrad:
      return at(stage, ActionKind::kInputGrad);
  }
  return kNotRun;
}

}  // namespace

std::optional<ScheduleProbe> RunComputeOnly(const Schedule& schedule, Time forward, Time input_grad,
                                            Time weight_grad) {
  const auto cost = [&](ActionKind kind) {
    switch (kind) {
      case ActionKind::kForward:
        return forward.ns();
      case ActionKind::kBackward:
        return input_grad.ns() + weight_grad.ns();
      case ActionKind::kInputGrad:
        return input_grad.ns();
      case ActionKind::kWeightGrad:
        return weight_grad.ns();
    }
    return int64_t{0};
  };
  std::vector<int64_t> end(ActionSlotCount(schedule), kNotRun);
  const size_t ranks = schedule.rank_actions.size();
  std::vector<size_t> next(ranks, 0);
  std::vector<int64_t> clock(ranks, 0);
  std::vector<int64_t> held(ranks, 0);
  ScheduleProbe probe;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t rank = 0; rank < ranks; ++rank) {
      const std::vector<Action>& program = schedule.rank_actions[rank];
      for (; next[rank] < program.size(); ++next[rank]) {
        const Action& action = program[next[rank]];
        if (action.overlapped) return std::nullopt;
        const int64_t input = InputEnd(schedule, end, action);
        if (input == kNotRun) break;
        const int64_t start = std::max(clock[rank], input);
        clock[rank] = start + cost(action.kind);
        end[ActionSlot(schedule, action)] = clock[rank];
        if (action.kind == ActionKind::kForward) {
          probe.peak_chunks = std::max(probe.peak_chunks, ++held[rank]);
        } else if (ReleasesActivation(action.kind)) {
          --held[rank];
        }
        progress = true;
      }
    }
  }
  int64_t makespan = 0;
  for (size_t rank = 0; rank < ranks; ++rank) {
    if (next[rank] < schedule.rank_actions[rank].size()) return std::nullopt;  // deadlock
    makespan = std::max(makespan, clock[rank]);
  }
  probe.makespan = Time::Nanoseconds(makespan);
  return probe;
}

Result<ScheduleProbe> ProbeSchedule(const std::string& name, int32_t pp, int32_t vpp,
                                    int32_t microbatches, Time forward, Time input_grad,
                                    Time weight_grad) {
  GeneratorParams params;
  params.pp = pp;
  params.vpp = vpp;
  params.microbatches = microbatches;
  Result<Schedule> schedule = Error{""};
  if (const CostAwareScheduleGenerator* aware = FindCostAwareScheduleGenerator(name)) {
    // zb-1p and zb-2p take one stage cost per rank; the V schedules (in the plain table too)
    // check their own shape.
    if (!FindScheduleGenerator(name).ok()) {
      STAGECRAFT_RETURN_IF_ERROR(CheckZbAutoParams(params, name));
    }
    StageCost stage;
    stage.forward = forward;
    stage.input_grad = input_grad;
    stage.weight_grad = weight_grad;
    const std::vector<StageCost> stages(static_cast<size_t>(pp) * vpp, stage);
    schedule = aware->generate(params, UniformPipelineCosts(stages, Time()));
  } else {
    auto generator = FindScheduleGenerator(name);
    if (!generator.ok()) return generator.error();
    schedule = generator.value()->generate(params);
  }
  if (!schedule.ok()) return schedule.error();
  auto probe = RunComputeOnly(schedule.value(), forward, input_grad, weight_grad);
  if (!probe) return Error{name + ": its programs deadlock when run compute-only"};
  return *probe;
}

}  // namespace stagecraft
