#include "analysis/critical_path.h"

#include <algorithm>

namespace stagecraft {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

// For each transfer (collective), the one that used its link (its collective stream: two per
// rank, task_graph.h) just before it (FIFO order).
std::vector<uint32_t> PreviousOnLink(const TaskGraph& graph, const Trace& trace) {
  std::vector<uint32_t> previous(graph.num_tasks(), kNone);
  std::vector<std::vector<uint32_t>> by_link(graph.links.size() + 2 * graph.programs.size());
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Task& info = graph.tasks[task];
    if (info.kind == TaskKind::kTransfer) by_link[info.link].push_back(task);
    if (info.kind == TaskKind::kCollective) {
      by_link[graph.links.size() + static_cast<size_t>(CollectiveStream(info.rank, info.payload))]
          .push_back(task);
    }
  }
  for (auto& transfers : by_link) {
    std::sort(transfers.begin(), transfers.end(), [&](uint32_t a, uint32_t b) {
      return std::pair(trace.timings[a].start, a) < std::pair(trace.timings[b].start, b);
    });
    for (size_t index = 1; index < transfers.size(); ++index) {
      previous[transfers[index]] = transfers[index - 1];
    }
  }
  return previous;
}

}  // namespace

CriticalPath FindCriticalPath(const TaskGraph& graph, const Trace& trace) {
  CriticalPath path;
  if (graph.num_tasks() == 0) return path;
  uint32_t last = 0;
  Time first_start = trace.timings[0].start;
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    if (trace.timings[task].end > trace.timings[last].end) last = task;
    first_start = std::min(first_start, trace.timings[task].start);
  }
  const std::vector<uint32_t> link_previous = PreviousOnLink(graph, trace);
  uint32_t current = last;
  while (current != kNone) {
    path.tasks.push_back(current);
    const Task& task = graph.tasks[current];
    const Time start = trace.timings[current].start;
    uint32_t next = kNone;
    auto consider = [&](uint32_t candidate) {
      if (candidate != kNone && trace.timings[candidate].end == start &&
          (next == kNone || candidate < next)) {
        next = candidate;
      }
    };
    for (uint32_t index = graph.pred_begin[current]; index < graph.pred_begin[current + 1];
         ++index) {
      consider(graph.preds[index]);
    }
    if ((task.kind == TaskKind::kCompute || task.kind == TaskKind::kWork) && task.position > 0) {
      consider(graph.programs[task.rank][task.position - 1]);
    } else {
      consider(link_previous[current]);
    }
    current = next;
  }
  std::reverse(path.tasks.begin(), path.tasks.end());
  for (uint32_t task : path.tasks) {
    const Task& info = graph.tasks[task];
    if (info.kind == TaskKind::kCompute || info.kind == TaskKind::kWork) {
      ++path.compute_actions;
      path.compute_time += info.duration;
    } else if (info.kind == TaskKind::kCollective) {
      ++path.collectives;
      path.collective_time += info.duration;
    } else if (info.kind == TaskKind::kDelay) {
      continue;  // a timer: its time counts as waiting
    } else {
      ++path.transfers;
      path.transfer_time += info.duration;
    }
  }
  path.waiting = (trace.timings[last].end - first_start) - path.compute_time - path.transfer_time -
                 path.collective_time;
  return path;
}

}  // namespace stagecraft
