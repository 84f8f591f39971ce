#include "analysis/memory.h"

#include <algorithm>
#include <tuple>

namespace stagecraft {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

struct Delta {
  Time time;
  int order;  // frees (0) before allocations (1) at equal times
  int64_t activation = 0;
  int64_t state = 0;
};

// [ActionSlot] → compute task.
std::vector<uint32_t> TaskIndex(const Schedule& schedule, const TaskGraph& graph) {
  std::vector<uint32_t> index(ActionSlotCount(schedule), kNone);
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    if (graph.tasks[task].kind == TaskKind::kCompute) {
      index[ActionSlot(schedule, graph.tasks[task].action)] = task;
    }
  }
  return index;
}

void AddActivationDeltas(const std::vector<StageCost>& costs, const TaskGraph& graph,
                         const Trace& trace, std::vector<std::vector<Delta>>& deltas) {
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Task& info = graph.tasks[task];
    if (info.kind == TaskKind::kWork) {
      // Work around the pipeline (a vision encoder): a forward holds its bytes from its start,
      // a backward frees its bytes at its end.
      if (info.bytes == 0) continue;
      if (info.action.kind == ActionKind::kForward) {
        deltas[info.rank].push_back({trace.timings[task].start, 1, info.bytes, 0});
      } else {
        deltas[info.rank].push_back({trace.timings[task].end, 0, -info.bytes, 0});
      }
      continue;
    }
    if (info.kind != TaskKind::kCompute) continue;
    const StageCost& cost = costs[info.action.stage.value()];
    const TaskTiming& timing = trace.timings[task];
    auto& out = deltas[info.rank];
    switch (info.action.kind) {
      case ActionKind::kForward: {
        // The forward in the second half of an F&B op starts with the op.
        const Time start = info.action.overlapped
                               ? trace.timings[graph.programs[info.rank][info.position - 1]].start
                               : timing.start;
        out.push_back({start, 1, cost.activation_bytes, 0});
        break;
      }
      case ActionKind::kBackward:
        // Recomputation's working set lives while the backward runs (StageCost::recompute_bytes).
        if (cost.recompute_bytes > 0) {
          out.push_back({timing.start, 1, cost.recompute_bytes, 0});
        }
        out.push_back({timing.end, 0, -cost.activation_bytes - cost.recompute_bytes, 0});
        break;
      case ActionKind::kInputGrad:
        if (cost.recompute_bytes > 0) {
          out.push_back({timing.start, 1, cost.recompute_bytes, 0});
        }
        out.push_back({timing.end, 0,
                       cost.weight_grad_bytes - cost.activation_bytes - cost.recompute_bytes, 0});
        break;
      case ActionKind::kWeightGrad:
        out.push_back({timing.end, 0, -cost.weight_grad_bytes, 0});
        break;
    }
  }
}

void AddStateDeltas(const Schedule& schedule, const TaskGraph& graph, const Trace& trace,
                    std::vector<std::vector<Delta>>& deltas) {
  const std::vector<uint32_t> index = TaskIndex(schedule, graph);
  auto find = [&](int32_t stage, ActionKind kind, int32_t microbatch) {
    return index[ActionSlot(schedule, Action{StageId(stage), kind, MicrobatchId(microbatch)})];
  };
  for (const StateFlow& flow : graph.states) {
    const std::vector<int32_t> holders = HolderStages(flow);
    for (int32_t rank = 0; rank < static_cast<int32_t>(deltas.size()); ++rank) {
      for (int32_t mb = 0; mb < schedule.num_microbatches; ++mb) {
        Time first = Time::Max();
        Time last;
        bool held = false;
        for (int32_t stage : holders) {
          const uint32_t forward = find(stage, ActionKind::kForward, mb);
          if (forward == kNone || graph.tasks[forward].rank != rank) continue;
          uint32_t backward = find(stage, ActionKind::kBackward, mb);
          if (backward == kNone) backward = find(stage, ActionKind::kInputGrad, mb);
          if (forward == kNone || backward == kNone) continue;
          held = true;
          first = std::min(first, trace.timings[forward].start);
          last = std::max(last, trace.timings[backward].end);
        }
        if (!held) continue;
        deltas[rank].push_back({first, 1, 0, flow.bytes});
        deltas[rank].push_back({last, 0, 0, -flow.bytes});
      }
    }
  }
}

}  // namespace

MemoryTimeline ComputeMemoryTimeline(const Schedule& schedule,
                                     const std::vector<StageCost>& stage_costs,
                                     const TaskGraph& graph, const Trace& trace) {
  const size_t num_ranks = graph.programs.size();
  std::vector<std::vector<Delta>> deltas(num_ranks);
  AddActivationDeltas(stage_costs, graph, trace, deltas);
  AddStateDeltas(schedule, graph, trace, deltas);
  MemoryTimeline timeline;
  timeline.ranks.resize(num_ranks);
  timeline.peak_state_bytes.assign(num_ranks, 0);
  timeline.peak_memory_bytes.assign(num_ranks, 0);
  for (size_t rank = 0; rank < num_ranks; ++rank) {
    auto& events = deltas[rank];
    std::stable_sort(events.begin(), events.end(), [](const Delta& a, const Delta& b) {
      return std::tie(a.time, a.order) < std::tie(b.time, b.order);
    });
    MemorySample current;
    for (const Delta& delta : events) {
      current.time = delta.time;
      current.activation_bytes += delta.activation;
      current.state_bytes += delta.state;
      auto& samples = timeline.ranks[rank];
      if (!samples.empty() && samples.back().time == current.time) {
        samples.back() = current;
      } else {
        samples.push_back(current);
      }
      timeline.peak_state_bytes[rank] =
          std::max(timeline.peak_state_bytes[rank], current.state_bytes);
      timeline.peak_memory_bytes[rank] = std::max(timeline.peak_memory_bytes[rank],
                                                  current.activation_bytes + current.state_bytes);
    }
  }
  return timeline;
}

}  // namespace stagecraft
