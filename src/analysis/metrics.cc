#include "analysis/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "analysis/critical_path.h"
#include "analysis/memory.h"

namespace stagecraft {

const char* MetricDefinitions() {
  return "Metrics (one iteration, D devices):\n"
         "  makespan          last end - first start over all devices\n"
         "  busy_d            compute time of device d (F, B, I, W); communication is not busy\n"
         "  idle_d            makespan - busy_d\n"
         "  span_d            last compute end - first compute start on device d\n"
         "  bubble_fraction   1 - sum(busy_d) / (D * makespan)   (headline figure)\n"
         "  bubble_rate_span  max over d of 1 - busy_d / span_d  (Zero-Bubble papers)\n"
         "  bubble_overhead   (D * makespan - sum busy) / sum busy  (Megatron: (p-1)/m for 1F1B)\n"
         "  bubble split      idle_d by what d waited on, as fractions of D * makespan summing to\n"
         "                    bubble_fraction: pipeline (another stage's compute), exposed\n"
         "                    collectives, exposed p2p (activations, gradients), exposed state\n"
         "  peak_activations  most chunk activations held at once on d (held from F until B/I)\n"
         "  peak_held         most chunk activations held at once on d from F until W (or B):\n"
         "                    the Zero Bubble papers' memory, in M_B with M_W = M_B\n"
         "  state_bytes       shared state moved between ranks per iteration (forward + dState)\n"
         "  state_exposed     critical-path transfer time due to shared-state bytes\n"
         "  peak_state_bytes  most resident shared state on d (own, received, carried)\n"
         "  peak_memory_bytes peak of activations + resident shared state on d\n"
         "  collectives       work on d's collective stream (TP, CP, EP, DP, ZeRO-3, optimizer)\n"
         "  tflops_per_gpu    FLOPs of the whole job, recomputation included / (makespan * GPUs)\n"
         "  mfu               model FLOPs (no recomputation) / (makespan * GPUs * peak)\n"
         "  memory            the fullest device: model states + peak of activations and shared\n"
         "                    state + framework reserve, against its capacity (fits or OVER)\n";
}

std::vector<ActivationPeak> PeakActivations(const Schedule& schedule,
                                            const std::vector<StageCost>& stage_costs) {
  std::vector<ActivationPeak> peaks(schedule.rank_actions.size());
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    int32_t count = 0;
    int32_t held = 0;
    int64_t bytes = 0;
    const std::vector<Action>& program = schedule.rank_actions[rank];
    for (size_t position = 0; position < program.size(); ++position) {
      // In an F&B op both microbatches' activations are live together: take the forward first.
      size_t at = position;
      if (position + 1 < program.size() && program[position + 1].overlapped &&
          program[position + 1].kind == ActionKind::kForward) {
        at = position + 1;
      } else if (program[position].overlapped && position > 0 &&
                 program[position].kind == ActionKind::kForward) {
        at = position - 1;
      }
      const Action& action = program[at];
      const StageCost& cost = stage_costs[action.stage.value()];
      switch (action.kind) {
        case ActionKind::kForward:
          ++count;
          ++held;
          bytes += cost.activation_bytes;
          break;
        case ActionKind::kBackward:
          --count;
          --held;
          bytes -= cost.activation_bytes;
          break;
        case ActionKind::kInputGrad:
          --count;
          bytes += cost.weight_grad_bytes - cost.activation_bytes;
          break;
        case ActionKind::kWeightGrad:
          --held;
          bytes -= cost.weight_grad_bytes;
          break;
      }
      peaks[rank].count = std::max(peaks[rank].count, count);
      peaks[rank].held = std::max(peaks[rank].held, held);
      peaks[rank].bytes = std::max(peaks[rank].bytes, bytes);
    }
  }
  return peaks;
}

namespace {

enum class IdleCause : uint8_t { kPipeline, kCollective, kTransfer };

// What waiting on `task` while it runs (or queues) counts as.
IdleCause CauseOf(const Task& task) {
  switch (task.kind) {
    case TaskKind::kCollective:
      return IdleCause::kCollective;
    case TaskKind::kTransfer:
      return IdleCause::kTransfer;
    case TaskKind::kCompute:
    case TaskKind::kWork:
    case TaskKind::kDelay:
      break;
  }
  return IdleCause::kPipeline;
}

bool IsStateTransfer(PayloadKind payload) {
  return payload == PayloadKind::kState || payload == PayloadKind::kStateGradient ||
         payload == PayloadKind::kShadowSync || payload == PayloadKind::kShadowGradient;
}

// Adds `length` of idle time spent on `task` (its cause) to `split`. A cut transfer carrying
// shared state with the activation splits its time by bytes.
void Charge(const Task& task, IdleCause cause, Time length, BubbleSplit& split) {
  if (length.ns() <= 0) return;
  switch (cause) {
    case IdleCause::kPipeline:
      split.pipeline += length;
      return;
    case IdleCause::kCollective:
      split.exposed_collectives += length;
      return;
    case IdleCause::kTransfer:
      break;
  }
  if (IsStateTransfer(task.payload)) {
    split.exposed_state += length;
    return;
  }
  if (task.state_bytes <= 0 || task.bytes <= 0) {
    split.exposed_p2p += length;
    return;
  }
  const double share = static_cast<double>(task.state_bytes) / static_cast<double>(task.bytes);
  const Time state = Time::Nanoseconds(
      std::min<int64_t>(length.ns(), std::llround(static_cast<double>(length.ns()) * share)));
  split.exposed_state += state;
  split.exposed_p2p += length - state;
}

// Explains the gap [lo, hi) before compute task `waiting` started (hi = its start).
void AttributeGap(const TaskGraph& graph, const Trace& trace, uint32_t waiting, Time lo, Time hi,
                  BubbleSplit& split) {
  uint32_t current = waiting;
  bool first = true;
  while (hi > lo) {
    const Task& task = graph.tasks[current];
    const TaskTiming& timing = trace.timings[current];
    if (!first) {
      // The part of the gap during which `current` ran.
      const Time from = std::max(lo, timing.start);
      if (hi > from) Charge(task, CauseOf(task), hi - from, split);
      hi = std::min(hi, timing.start);
      if (hi <= lo) return;
      if (task.kind == TaskKind::kCompute || task.kind == TaskKind::kWork) {
        split.pipeline += hi - lo;  // waiting on another stage's (or piece's) compute
        return;
      }
    }
    first = false;
    // The dependency satisfied last.
    uint32_t binding = UINT32_MAX;
    Time binding_end;
    for (uint32_t index = graph.pred_begin[current]; index < graph.pred_begin[current + 1];
         ++index) {
      const uint32_t pred = graph.preds[index];
      if (binding == UINT32_MAX || trace.timings[pred].end > binding_end) {
        binding = pred;
        binding_end = trace.timings[pred].end;
      }
    }
    // Ready before it started: it queued for its link or stream (the compute stream was free,
    // so a compute task's wait is the pipeline's).
    const Time ready = binding == UINT32_MAX ? lo : std::max(lo, binding_end);
    if (hi > ready) {
      Charge(task,
             task.kind == TaskKind::kCompute || task.kind == TaskKind::kWork ? IdleCause::kPipeline
                                                                             : CauseOf(task),
             hi - ready, split);
      hi = ready;
    }
    if (binding == UINT32_MAX) return;
    current = binding;
  }
}

}  // namespace

std::vector<BubbleSplit> AttributeIdle(const TaskGraph& graph, const Trace& trace) {
  const size_t num_ranks = graph.programs.size();
  std::vector<BubbleSplit> splits(num_ranks);
  if (graph.num_tasks() == 0) return splits;
  Time first = Time::Max();
  Time last;
  for (const TaskTiming& timing : trace.timings) {
    first = std::min(first, timing.start);
    last = std::max(last, timing.end);
  }
  // Each rank's own collectives, for its tail.
  std::vector<std::vector<std::pair<Time, Time>>> collectives(num_ranks);
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Task& info = graph.tasks[task];
    if (info.kind != TaskKind::kCollective || info.rank < 0 ||
        static_cast<size_t>(info.rank) >= num_ranks) {
      continue;
    }
    collectives[info.rank].push_back({trace.timings[task].start, trace.timings[task].end});
  }
  for (size_t rank = 0; rank < num_ranks; ++rank) {
    BubbleSplit& split = splits[rank];
    Time free = first;  // when the compute stream was last free
    for (uint32_t task : graph.programs[rank]) {
      const TaskTiming& timing = trace.timings[task];
      if (timing.start > free) AttributeGap(graph, trace, task, free, timing.start, split);
      free = std::max(free, timing.end);
    }
    // The tail: the rank's collectives where they run (merged over both streams), else waiting.
    std::vector<std::pair<Time, Time>>& own = collectives[rank];
    std::sort(own.begin(), own.end());
    Time covered = free;
    for (const auto& [start, end] : own) {
      const Time from = std::max(covered, start);
      if (end > from) {
        split.pipeline += from - covered;
        split.exposed_collectives += end - from;
        covered = end;
      }
    }
    if (last > covered) split.pipeline += last - covered;
  }
  return splits;
}

BubbleFractions BubbleFractionsOf(const Metrics& metrics) {
  BubbleFractions fractions;
  const double device_time =
      static_cast<double>(metrics.makespan.ns()) * static_cast<double>(metrics.ranks.size());
  if (device_time <= 0) return fractions;
  fractions.pipeline = static_cast<double>(metrics.bubble.pipeline.ns()) / device_time;
  fractions.exposed_collectives =
      static_cast<double>(metrics.bubble.exposed_collectives.ns()) / device_time;
  fractions.exposed_p2p = static_cast<double>(metrics.bubble.exposed_p2p.ns()) / device_time;
  fractions.exposed_state = static_cast<double>(metrics.bubble.exposed_state.ns()) / device_time;
  return fractions;
}

namespace {

// Payload and shadow bytes ride the cut transfers: count the transfers on each cut, then credit
// every flow crossing it. Direct transfers name their flow.
void AddFlowBytes(const TaskGraph& graph, Metrics& metrics) {
  const size_t cuts = graph.stage_ranks.size();
  std::vector<int64_t> forward_sends(cuts, 0);
  std::vector<int64_t> backward_sends(cuts, 0);
  for (const Task& task : graph.tasks) {
    if (task.kind != TaskKind::kTransfer) continue;
    const int32_t cut = std::min(task.action.stage.value(), task.consumer.stage.value());
    if (task.payload == PayloadKind::kActivation) ++forward_sends[cut];
    if (task.payload == PayloadKind::kGradient) ++backward_sends[cut];
    if (task.flow < 0) continue;
    FlowMetrics& flow = metrics.flows[task.flow];
    const bool forward =
        task.payload == PayloadKind::kState || task.payload == PayloadKind::kShadowSync;
    (forward ? flow.bytes_forward : flow.bytes_backward) += task.bytes;
  }
  for (size_t index = 0; index < graph.states.size(); ++index) {
    const StateFlow& state = graph.states[index];
    if (state.policy == StatePolicy::kDirect) continue;
    FlowMetrics& flow = metrics.flows[index];
    for (int32_t cut = state.producer_stage; cut < state.last_consumer_stage(); ++cut) {
      if (state.policy == StatePolicy::kShadow) {
        flow.bytes_forward += state.shadow_bytes * forward_sends[cut];
        continue;
      }
      flow.bytes_forward += state.bytes * forward_sends[cut];
      if (state.differentiable) flow.bytes_backward += state.bytes * backward_sends[cut];
    }
  }
}

void AddStateMetrics(const Schedule& schedule, const std::vector<StageCost>& stage_costs,
                     const TaskGraph& graph, const Trace& trace, Metrics& metrics) {
  for (const StateFlow& state : graph.states) {
    FlowMetrics flow{state.producer_layer,
                     state.kind,
                     state.policy,
                     state.producer_stage,
                     state.consumer_stages,
                     0,
                     0,
                     {}};
    for (int32_t stage : state.consumer_stages) {
      if (stage != state.producer_stage &&
          graph.stage_ranks[stage] == graph.stage_ranks[state.producer_stage]) {
        flow.resident_stages.push_back(stage);
      }
    }
    metrics.flows.push_back(flow);
  }
  AddFlowBytes(graph, metrics);
  for (const FlowMetrics& flow : metrics.flows) {
    metrics.state_bytes_forward += flow.bytes_forward;
    metrics.state_bytes_backward += flow.bytes_backward;
  }
  std::map<std::pair<int32_t, int32_t>, int64_t> by_link;
  for (const Task& task : graph.tasks) {
    if (task.kind == TaskKind::kTransfer && task.state_bytes > 0) {
      by_link[{task.rank, task.peer}] += task.state_bytes;
    }
  }
  for (const auto& [link, bytes] : by_link) {
    metrics.state_links.push_back({link.first, link.second, bytes});
  }
  const CriticalPath path = FindCriticalPath(graph, trace);
  for (uint32_t task : path.tasks) {
    const Task& info = graph.tasks[task];
    if (info.kind != TaskKind::kTransfer || info.state_bytes == 0) continue;
    const Time without = info.state_bytes == info.bytes
                             ? Time()
                             : TransferTime(graph.cluster, DeviceId(info.rank), DeviceId(info.peer),
                                            info.bytes - info.state_bytes, graph.cost_p2p);
    metrics.state_exposed += info.duration - without;
  }
  const MemoryTimeline memory = ComputeMemoryTimeline(schedule, stage_costs, graph, trace);
  for (size_t rank = 0; rank < metrics.ranks.size(); ++rank) {
    metrics.ranks[rank].peak_state_bytes = memory.peak_state_bytes[rank];
    metrics.ranks[rank].peak_memory_bytes = memory.peak_memory_bytes[rank];
  }
}

}  // namespace

Metrics ComputeMetrics(const Schedule& schedule, const std::vector<StageCost>& stage_costs,
                       const TaskGraph& graph, const Trace& trace) {
  Metrics metrics;
  const size_t num_ranks = graph.programs.size();
  metrics.ranks.resize(num_ranks);
  Time first = Time::Max();
  Time last;
  std::vector<uint8_t> seen(num_ranks, 0);
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Task& info = graph.tasks[task];
    const TaskTiming& timing = trace.timings[task];
    first = std::min(first, timing.start);
    last = std::max(last, timing.end);
    RankMetrics& rank = metrics.ranks[info.rank];
    if (info.kind == TaskKind::kTransfer) {
      ++metrics.num_transfers;
      metrics.bytes_moved += info.bytes;
      rank.bytes_sent += info.bytes;
      continue;
    }
    if (info.kind == TaskKind::kCollective) {
      ++metrics.num_collectives;
      rank.collective += info.duration;
      continue;
    }
    if (info.kind == TaskKind::kDelay) continue;  // a timer, not work
    if (info.kind == TaskKind::kCompute) ++metrics.num_compute_actions;
    rank.busy += info.duration;
    if (!seen[info.rank] || timing.start < rank.first_start) rank.first_start = timing.start;
    rank.last_end = std::max(rank.last_end, timing.end);
    seen[info.rank] = 1;
  }
  metrics.makespan = graph.num_tasks() == 0 ? Time() : last - first;
  const auto peaks = PeakActivations(schedule, stage_costs);
  double worst_rate = 0.0;
  for (size_t index = 0; index < num_ranks; ++index) {
    RankMetrics& rank = metrics.ranks[index];
    rank.rank = static_cast<int32_t>(index);
    rank.idle = metrics.makespan - rank.busy;
    rank.span = seen[index] ? rank.last_end - rank.first_start : Time();
    if (index < peaks.size()) {  // devices outside the schedule (a vision encoder's) hold none
      rank.peak_activations = peaks[index].count;
      rank.peak_held = peaks[index].held;
      rank.peak_activation_bytes = peaks[index].bytes;
    }
    metrics.total_busy += rank.busy;
    if (rank.span.ns() > 0) {
      worst_rate = std::max(worst_rate, 1.0 - static_cast<double>(rank.busy.ns()) /
                                                  static_cast<double>(rank.span.ns()));
    }
  }
  metrics.bubble_rate_span = worst_rate;
  const std::vector<BubbleSplit> splits = AttributeIdle(graph, trace);
  for (size_t index = 0; index < num_ranks; ++index) {
    metrics.ranks[index].bubble = splits[index];
    metrics.bubble += splits[index];
  }
  AddStateMetrics(schedule, stage_costs, graph, trace, metrics);
  const double capacity =
      static_cast<double>(metrics.makespan.ns()) * static_cast<double>(num_ranks);
  const double busy = static_cast<double>(metrics.total_busy.ns());
  if (capacity > 0) metrics.bubble_fraction = 1.0 - busy / capacity;
  if (busy > 0) metrics.bubble_overhead = (capacity - busy) / busy;
  return metrics;
}

}  // namespace stagecraft
