#include "analysis/metrics.h"

#include <algorithm>

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
         "  peak_activations  most chunk activations held at once on d (held from F until B/I)\n";
}

std::vector<ActivationPeak> PeakActivations(const Schedule& schedule,
                                            const std::vector<StageCost>& stage_costs) {
  std::vector<ActivationPeak> peaks(schedule.rank_actions.size());
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    int32_t count = 0;
    int64_t bytes = 0;
    for (const Action& action : schedule.rank_actions[rank]) {
      const StageCost& cost = stage_costs[action.stage.value()];
      switch (action.kind) {
        case ActionKind::kForward:
          ++count;
          bytes += cost.activation_bytes;
          break;
        case ActionKind::kBackward:
          --count;
          bytes -= cost.activation_bytes;
          break;
        case ActionKind::kInputGrad:
          --count;
          bytes += cost.weight_grad_bytes - cost.activation_bytes;
          break;
        case ActionKind::kWeightGrad:
          bytes -= cost.weight_grad_bytes;
          break;
      }
      peaks[rank].count = std::max(peaks[rank].count, count);
      peaks[rank].bytes = std::max(peaks[rank].bytes, bytes);
    }
  }
  return peaks;
}

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
    ++metrics.num_compute_actions;
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
    rank.peak_activations = peaks[index].count;
    rank.peak_activation_bytes = peaks[index].bytes;
    metrics.total_busy += rank.busy;
    if (rank.span.ns() > 0) {
      worst_rate = std::max(worst_rate, 1.0 - static_cast<double>(rank.busy.ns()) /
                                                  static_cast<double>(rank.span.ns()));
    }
  }
  metrics.bubble_rate_span = worst_rate;
  const double capacity =
      static_cast<double>(metrics.makespan.ns()) * static_cast<double>(num_ranks);
  const double busy = static_cast<double>(metrics.total_busy.ns());
  if (capacity > 0) metrics.bubble_fraction = 1.0 - busy / capacity;
  if (busy > 0) metrics.bubble_overhead = (capacity - busy) / busy;
  return metrics;
}

}  // namespace stagecraft
