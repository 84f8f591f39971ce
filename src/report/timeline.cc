#include "report/timeline.h"

#include <algorithm>
#include <cctype>

#include "core/units.h"

namespace stagecraft {
namespace {

// Chunk 0, 2, ... of a rank's stages in capitals, chunk 1, 3, ... in small letters.
bool OddChunk(const Action& action, int32_t num_ranks) {
  return (action.stage.value() / num_ranks) % 2 == 1;
}

std::string CellLabel(const Action& action, int32_t num_ranks) {
  const char letter = ActionKindLetter(action.kind);
  return std::string(
             1, OddChunk(action, num_ranks) ? static_cast<char>(std::tolower(letter)) : letter) +
         std::to_string(action.microbatch.value());
}

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

std::string TimelineUnreadableReason(const TaskGraph& graph, int max_columns) {
  const int32_t num_ranks = std::max<int32_t>(1, static_cast<int32_t>(graph.programs.size()));
  for (size_t rank = 0; rank < graph.programs.size(); ++rank) {
    const auto& program = graph.programs[rank];
    size_t label_columns = 0;
    size_t actions = 0;
    for (size_t position = 0; position < program.size(); ++position) {
      const Task& info = graph.tasks[program[position]];
      if (info.action.overlapped) continue;  // drawn with the head of its F&B op
      ++actions;
      label_columns += CellLabel(info.action, num_ranks).size();
      if (const Action* tail = FusedTail(graph, rank, position)) {
        label_columns += 1 + CellLabel(*tail, num_ranks).size();
      }
    }
    if (label_columns > static_cast<size_t>(max_columns)) {
      return "rank " + std::to_string(rank) + " runs " + std::to_string(actions) +
             " actions whose labels need " + std::to_string(label_columns) +
             " columns, more than " + "the " + std::to_string(max_columns) + " of a line";
    }
  }
  return "";
}

std::string FormatTimeline(const TaskGraph& graph, const Trace& trace, const Metrics& metrics,
                           int max_columns) {
  const Time origin = FirstStart(graph, trace);
  const int64_t column_ns = ColumnWidthNs(graph, metrics, max_columns);
  const size_t columns = static_cast<size_t>((metrics.makespan.ns() + column_ns - 1) / column_ns);
  const int32_t num_ranks = std::max<int32_t>(1, static_cast<int32_t>(graph.programs.size()));
  std::string text = "timeline: one column = " + FormatMs(Time::Nanoseconds(column_ns)) +
                     " ms; F forward, B backward, I input-grad, W weight-grad, then the "
                     "microbatch; small letters for odd chunks; X&Y an overlapped F&B op; '.' idle";
  bool has_work = false;
  for (const Task& task : graph.tasks) has_work = has_work || task.kind == TaskKind::kWork;
  text +=
      has_work ? "; V / v a share of the microbatch's vision-encoder forward / backward\n" : "\n";
  for (size_t rank = 0; rank < graph.programs.size(); ++rank) {
    std::string row(columns, '.');
    const auto& program = graph.programs[rank];
    for (size_t position = 0; position < program.size(); ++position) {
      const uint32_t task = program[position];
      const Task& info = graph.tasks[task];
      if (info.action.overlapped) continue;  // drawn with the head of its F&B op
      const size_t begin =
          static_cast<size_t>((trace.timings[task].start - origin).ns() / column_ns);
      size_t end = static_cast<size_t>(((trace.timings[task].end - origin).ns() + column_ns / 2) /
                                       column_ns);
      end = std::min(std::max(end, begin + 1), columns);
      if (info.kind == TaskKind::kWork) {
        const std::string work = (info.action.kind == ActionKind::kForward ? "V" : "v") +
                                 std::to_string(info.action.microbatch.value());
        for (size_t column = begin; column < end; ++column) {
          const size_t offset = column - begin;
          row[column] = offset < work.size() ? work[offset] : '~';
        }
        continue;
      }
      std::string label = CellLabel(info.action, num_ranks);
      if (const Action* tail = FusedTail(graph, rank, position)) {
        label += '&' + CellLabel(*tail, num_ranks);
      }
      const char fill = OddChunk(info.action, num_ranks) ? '-' : '=';
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
