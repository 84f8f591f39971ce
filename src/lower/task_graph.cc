#include "lower/task_graph.h"

namespace stagecraft {

namespace {

// One compressed row of `edges` into begin/items: items[begin[t] .. begin[t+1]) are the ends of
// the edges that `row` maps to t, in edge order. Each begin[t] serves as t's fill cursor and is
// shifted back afterwards, so no scratch array is needed.
template <typename RowOf, typename ItemOf>
void BuildRows(size_t num_tasks, const std::vector<std::pair<uint32_t, uint32_t>>& edges, RowOf row,
               ItemOf item, std::vector<uint32_t>& begin, std::vector<uint32_t>& items) {
  begin.assign(num_tasks + 1, 0);
  for (const auto& edge : edges) ++begin[row(edge) + 1];
  for (size_t task = 0; task < num_tasks; ++task) begin[task + 1] += begin[task];
  items.resize(edges.size());
  for (const auto& edge : edges) items[begin[row(edge)]++] = item(edge);
  for (size_t task = num_tasks; task > 0; --task) begin[task] = begin[task - 1];
  begin[0] = 0;
}

}  // namespace

void BuildAdjacency(TaskGraph& graph, const std::vector<std::pair<uint32_t, uint32_t>>& edges) {
  const size_t num_tasks = graph.tasks.size();
  const auto from = [](const std::pair<uint32_t, uint32_t>& edge) { return edge.first; };
  const auto to = [](const std::pair<uint32_t, uint32_t>& edge) { return edge.second; };
  BuildRows(num_tasks, edges, to, from, graph.pred_begin, graph.preds);
  BuildRows(num_tasks, edges, from, to, graph.succ_begin, graph.succs);
}

const char* P2pModeDescription(P2pMode mode) {
  switch (mode) {
    case P2pMode::kAsync:
      return "a send is posted when its producer ends; the receiver never blocks the sender";
    case P2pMode::kRendezvous:
      return "NCCL's strict order: between two ranks the k-th send matches the k-th receive; "
             "receives are posted in program order when the previous action ends; exposes "
             "ordering deadlocks";
    case P2pMode::kTorchPipelining:
      return "torch.distributed.pipelining's runtime (_PipelineScheduleRuntime): one "
             "batch_isend_irecv per SEND/RECV action, receives posted ahead where its comm "
             "lowering (_add_send_recv) or a compute_comms CSV puts them; k-th send matches "
             "k-th receive; check's mode for schedule CSVs";
  }
  return "unknown";
}

uint32_t FindComputeTask(const TaskGraph& graph, const Action& action) {
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Task& info = graph.tasks[task];
    if (info.kind == TaskKind::kCompute && SameAction(info.action, action)) return task;
  }
  return UINT32_MAX;
}

uint32_t FindTransfer(const TaskGraph& graph, const Action& producer, const Action& consumer) {
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Task& info = graph.tasks[task];
    if (info.kind == TaskKind::kTransfer && SameAction(info.action, producer) &&
        SameAction(info.consumer, consumer)) {
      return task;
    }
  }
  return UINT32_MAX;
}

const char* PayloadName(PayloadKind payload) {
  switch (payload) {
    case PayloadKind::kNone:
      return "none";
    case PayloadKind::kActivation:
      return "activation";
    case PayloadKind::kGradient:
      return "gradient";
    case PayloadKind::kState:
      return "state";
    case PayloadKind::kStateGradient:
      return "dstate";
    case PayloadKind::kShadowSync:
      return "shadow-params";
    case PayloadKind::kShadowGradient:
      return "shadow-grads";
    case PayloadKind::kTensorParallel:
      return "tp";
    case PayloadKind::kExpertParallel:
      return "ep";
    case PayloadKind::kContextParallel:
      return "cp";
    case PayloadKind::kDataParallel:
      return "dp";
    case PayloadKind::kShardGather:
      return "shard-gather";
    case PayloadKind::kShardReduce:
      return "shard-reduce";
    case PayloadKind::kOptimizerStep:
      return "optimizer";
    case PayloadKind::kVisionForward:
      return "vision-forward";
    case PayloadKind::kVisionBackward:
      return "vision-backward";
    case PayloadKind::kVisionEmbedding:
      return "vision-embedding";
    case PayloadKind::kVisionGradient:
      return "vision-gradient";
    case PayloadKind::kEngramFetch:
      return "engram-fetch";
    case PayloadKind::kEngramGradient:
      return "engram-gradient";
    case PayloadKind::kTextForward:
      return "text-forward";
    case PayloadKind::kTextBackward:
      return "text-backward";
    case PayloadKind::kContrastiveLoss:
      return "contrastive-loss";
    case PayloadKind::kContrastiveGather:
      return "contrastive-gather";
    case PayloadKind::kCheckpointSave:
      return "checkpoint";
  }
  return "?";
}

const Action* FusedTail(const TaskGraph& graph, int32_t rank, size_t position) {
  const auto& program = graph.programs[rank];
  if (position + 1 >= program.size()) return nullptr;
  const Action& next = graph.tasks[program[position + 1]].action;
  return next.overlapped ? &next : nullptr;
}

std::string DescribeTask(const TaskGraph& graph, uint32_t task_id) {
  const Task& task = graph.tasks[task_id];
  if (task.kind == TaskKind::kCompute) {
    return "rank " + std::to_string(task.rank) + " " + FormatAction(task.action);
  }
  if (task.kind == TaskKind::kWork) {
    return "rank " + std::to_string(task.rank) + " " + PayloadName(task.payload) + " " +
           std::to_string(task.action.microbatch.value());
  }
  if (task.kind == TaskKind::kDelay) {
    return "rank " + std::to_string(task.rank) + " gradient bucket ready during " +
           FormatAction(task.action);
  }
  if (task.kind == TaskKind::kCollective) {
    return std::string(PayloadName(task.payload)) + " collective after " +
           FormatAction(task.action) + " (rank " + std::to_string(task.rank) + ")";
  }
  std::string what = PayloadName(task.payload);
  if (task.flow >= 0 && task.flow < static_cast<int32_t>(graph.states.size())) {
    const StateFlow& flow = graph.states[task.flow];
    what += " (" + std::string(StateKindName(flow.kind)) + " of layer " +
            std::to_string(flow.producer_layer) + ")";
  }
  return what + " transfer " + FormatAction(task.action) + " -> " + FormatAction(task.consumer) +
         " (rank " + std::to_string(task.rank) + " -> " + std::to_string(task.peer) + ")";
}

}  // namespace stagecraft
