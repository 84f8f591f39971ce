#include "lower/task_graph.h"

namespace stagecraft {

const char* P2pModeName(P2pMode mode) { return mode == P2pMode::kAsync ? "async" : "rendezvous"; }

std::string DescribeTask(const TaskGraph& graph, uint32_t task_id) {
  const Task& task = graph.tasks[task_id];
  if (task.kind == TaskKind::kCompute) {
    return "rank " + std::to_string(task.rank) + " " + FormatAction(task.action);
  }
  return std::string(task.payload == PayloadKind::kGradient ? "gradient" : "activation") +
         " transfer " + FormatAction(task.action) + " -> " + FormatAction(task.consumer) +
         " (rank " + std::to_string(task.rank) + " -> " + std::to_string(task.peer) + ")";
}

}  // namespace stagecraft
