#include "lower/graph_edit.h"

#include <algorithm>
#include <cassert>
#include <map>

namespace stagecraft {

GraphEditor::GraphEditor(TaskGraph& graph) : graph_(graph), original_programs_(graph.programs) {}

int32_t GraphEditor::AddRank() {
  graph_.programs.emplace_back();
  original_programs_.emplace_back();
  graph_.num_ranks = static_cast<int32_t>(graph_.programs.size());
  return graph_.num_ranks - 1;
}

uint32_t GraphEditor::AddWork(int32_t rank, size_t position, PayloadKind payload,
                              ActionKind direction, MicrobatchId microbatch, Time duration,
                              int64_t bytes) {
  assert(rank >= 0 && rank < graph_.num_ranks);
  assert(position <= original_programs_[rank].size());
  Task task;
  task.kind = TaskKind::kWork;
  task.payload = payload;
  task.rank = rank;
  task.duration = duration;
  task.bytes = bytes;
  task.action.kind = direction;
  task.action.microbatch = microbatch;
  const auto id = static_cast<uint32_t>(graph_.tasks.size());
  graph_.tasks.push_back(task);
  inserted_.push_back({{rank, position}, id});
  return id;
}

uint32_t GraphEditor::AddTransfer(PayloadKind payload, int32_t from, int32_t to, int64_t bytes,
                                  MicrobatchId microbatch) {
  return AddTransfer(
      payload, from, to, bytes, microbatch,
      TransferTime(graph_.cluster, DeviceId(from), DeviceId(to), bytes, graph_.cost_p2p));
}

uint32_t GraphEditor::AddTransfer(PayloadKind payload, int32_t from, int32_t to, int64_t bytes,
                                  MicrobatchId microbatch, Time duration) {
  Task task;
  task.kind = TaskKind::kTransfer;
  task.payload = payload;
  task.rank = from;
  task.peer = to;
  task.bytes = bytes;
  task.duration = duration;
  task.action.microbatch = task.consumer.microbatch = microbatch;
  graph_.tasks.push_back(task);
  return static_cast<uint32_t>(graph_.tasks.size() - 1);
}

uint32_t GraphEditor::AddCollective(int32_t rank, PayloadKind payload, Time duration,
                                    int64_t bytes) {
  Task task;
  task.kind = TaskKind::kCollective;
  task.payload = payload;
  task.rank = rank;
  task.duration = duration;
  task.bytes = bytes;
  graph_.tasks.push_back(task);
  return static_cast<uint32_t>(graph_.tasks.size() - 1);
}

void GraphEditor::AddEdge(uint32_t from, uint32_t to) { new_edges_.emplace_back(from, to); }

uint32_t GraphEditor::ProgramTask(int32_t rank, size_t position) const {
  return original_programs_[rank][position];
}

size_t GraphEditor::OriginalProgramSize(int32_t rank) const {
  return original_programs_[rank].size();
}

void GraphEditor::Finish() {
  assert(!finished_);
  finished_ = true;
  // Programs: the original tasks with the work merged in before its position (stable: work at
  // one position keeps the order it was added in).
  std::stable_sort(inserted_.begin(), inserted_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t next = 0;
  for (int32_t rank = 0; rank < graph_.num_ranks; ++rank) {
    const std::vector<uint32_t>& original = original_programs_[rank];
    std::vector<uint32_t>& program = graph_.programs[rank];
    program.clear();
    for (size_t position = 0; position <= original.size(); ++position) {
      while (next < inserted_.size() && inserted_[next].first == std::pair(rank, position)) {
        program.push_back(inserted_[next++].second);
      }
      if (position < original.size()) program.push_back(original[position]);
    }
    for (size_t position = 0; position < program.size(); ++position) {
      graph_.tasks[program[position]].position = static_cast<int32_t>(position);
    }
  }
  // Links: every directed pair a transfer uses, sorted by (from, to).
  std::map<std::pair<int32_t, int32_t>, int32_t> links;
  for (const Task& task : graph_.tasks) {
    if (task.kind == TaskKind::kTransfer) links.emplace(std::pair(task.rank, task.peer), 0);
  }
  graph_.links.clear();
  for (auto& [pair, id] : links) {
    id = static_cast<int32_t>(graph_.links.size());
    graph_.links.push_back(Link{pair.first, pair.second});
  }
  for (Task& task : graph_.tasks) {
    if (task.kind == TaskKind::kTransfer) task.link = links[{task.rank, task.peer}];
  }
  // Adjacency: the old edges (from the predecessor rows) and the new ones.
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  edges.reserve(graph_.preds.size() + new_edges_.size());
  const size_t old_tasks = graph_.pred_begin.empty() ? 0 : graph_.pred_begin.size() - 1;
  for (uint32_t task = 0; task < old_tasks; ++task) {
    for (uint32_t index = graph_.pred_begin[task]; index < graph_.pred_begin[task + 1]; ++index) {
      edges.emplace_back(graph_.preds[index], task);
    }
  }
  edges.insert(edges.end(), new_edges_.begin(), new_edges_.end());
  BuildAdjacency(graph_, edges);
}

}  // namespace stagecraft
