#include "report/timeline.h"

#include <algorithm>
#include <cctype>

#include "core/units.h"

namespace stagecraft {
namespace {

Time FirstStart(const TaskGraph& graph, const Trace& trace) {
  Time first = Time::Max();
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    first = std::min(first, trace.timings[task].start);
  }
  return graph.num_tasks() == 0 ? Time() : first;
}

int64_t ColumnWidthNs(const TaskGraph& graph, const Metrics& metrics, int max_columns) {
  int64_t shortest = 0;
  for (const Task& task : graph.tasks) {
    if (task.kind == TaskKind::kCompute && task.duration.ns() > 0) {
      shortest = shortest == 0 ? task.duration.ns() : std::min(shortest, task.duration.ns());
    }
  }
  const int64_t by_action = std::max<int64_t>(1, shortest / 2);
  const int64_t by_width = (metrics.makespan.ns() + max_columns - 1) / std::max(1, max_columns);
  return std::max(by_action, by_width);
}

}  // namespace

std::string FormatTimeline(const TaskGraph& graph, const Trace& trace, const Metrics& metrics,
                           int max_columns) {
  const Time origin = FirstStart(graph, trace);
  const int64_t column_ns = ColumnWidthNs(graph, metrics, max_columns);
  const size_t columns = static_cast<size_t>((metrics.makespan.ns() + column_ns - 1) / column_ns);
  std::string text = "timeline: one column = " + FormatMs(Time::Nanoseconds(column_ns)) +
                     " ms; F forward, B backward, I input-grad, W weight-grad, '.' idle\n";
  for (size_t rank = 0; rank < graph.programs.size(); ++rank) {
    std::string row(columns, '.');
    for (uint32_t task : graph.programs[rank]) {
      const Task& info = graph.tasks[task];
      const size_t begin =
          static_cast<size_t>((trace.timings[task].start - origin).ns() / column_ns);
      size_t end = static_cast<size_t>(((trace.timings[task].end - origin).ns() + column_ns / 2) /
                                       column_ns);
      end = std::min(std::max(end, begin + 1), columns);
      const std::string label = std::string(1, ActionKindLetter(info.action.kind)) +
                                std::to_string(info.action.microbatch.value());
      const char fill = static_cast<char>(std::tolower(ActionKindLetter(info.action.kind)));
      for (size_t column = begin; column < end; ++column) {
        const size_t offset = column - begin;
        row[column] = offset < label.size() ? label[offset] : fill;
      }
    }
    text += "rank " + std::to_string(rank) + (rank < 10 ? "  " : " ") + "|" + row + "|\n";
  }
  return text;
}

}  // namespace stagecraft
