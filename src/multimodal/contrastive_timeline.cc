#include "multimodal/contrastive_timeline.h"

#include <algorithm>
#include <utility>

namespace stagecraft {
namespace {

// Task ids of the graph: the six compute pieces, then the two gathers.
enum Piece : uint32_t {
  kFwdV,
  kFwdT,
  kGradT,
  kGradV,
  kBwdT,
  kBwdV,
  kGatherV,
  kGatherT,
  kNumPieces
};

using Edges = std::vector<std::pair<uint32_t, uint32_t>>;

Task PieceTask(TaskKind kind, PayloadKind payload, ActionKind direction, Time duration) {
  Task task;
  task.kind = kind;
  task.payload = payload;
  task.rank = 0;
  task.duration = duration;
  task.action.kind = direction;
  return task;
}

std::vector<Task> PieceTasks(const ContrastiveStepTimes& times) {
  const ActionKind fwd = ActionKind::kForward;
  const ActionKind bwd = ActionKind::kBackward;
  const TaskKind work = TaskKind::kWork;
  const TaskKind collective = TaskKind::kCollective;
  return {
      PieceTask(work, PayloadKind::kVisionForward, fwd, times.vision_forward),
      PieceTask(work, PayloadKind::kTextForward, fwd, times.text_forward),
      PieceTask(work, PayloadKind::kContrastiveLoss, bwd, times.text_grad),
      PieceTask(work, PayloadKind::kContrastiveLoss, bwd, times.vision_grad),
      PieceTask(work, PayloadKind::kTextBackward, bwd, times.text_backward),
      PieceTask(work, PayloadKind::kVisionBackward, bwd, times.vision_backward),
      PieceTask(collective, PayloadKind::kContrastiveGather, fwd, times.vision_gather),
      PieceTask(collective, PayloadKind::kContrastiveGather, fwd, times.text_gather),
  };
}

// The data dependencies both orders share: a gather needs its modality's embeddings, ∇T all
// image embeddings, ∇V all text embeddings, a tower's backward its gradient.
Edges DataEdges() {
  return {{kFwdV, kGatherV},  {kFwdT, kGatherT}, {kGatherV, kGradT},
          {kGatherT, kGradV}, {kGradT, kBwdT},   {kGradV, kBwdV}};
}

}  // namespace

const char* ContrastiveOrderName(ContrastiveOrder order) {
  return order == ContrastiveOrder::kSequential ? "sequential" : "overlapped";
}

Result<CollectiveCost> ContrastiveGatherCost(const ClusterSpec& cluster, int32_t ranks,
                                             int64_t local_batch, int64_t width, int32_t bytes) {
  if (ranks < 1) {
    return Error{"contrastive all-gather over " + std::to_string(ranks) +
                 " ranks (expected at least 1)"};
  }
  if (ranks > cluster.num_devices()) {
    return Error{"contrastive all-gather over " + std::to_string(ranks) + " ranks does not fit " +
                 std::to_string(cluster.num_devices()) + " devices"};
  }
  const int64_t gathered = int64_t{ranks} * local_batch * width * bytes;
  return EstimateCollective(Collective::kAllGather, CollectiveAlgorithm::kRing, gathered,
                            GroupOnCluster(cluster, ranks));
}

ContrastiveStepGraph BuildContrastiveStepGraph(const ContrastiveStepTimes& times,
                                               ContrastiveOrder order) {
  ContrastiveStepGraph built;
  built.labels = {"fwd(V)", "fwd(T)", "grad(T)",   "grad(V)",
                  "bwd(T)", "bwd(V)", "gather(V)", "gather(T)"};
  TaskGraph& graph = built.graph;
  graph.num_ranks = 1;
  graph.tasks = PieceTasks(times);
  Edges edges = DataEdges();
  std::vector<uint32_t> program;
  if (order == ContrastiveOrder::kSequential) {
    // The naive order: gather after both forwards, one modality after the other, and the
    // loss only once both are in.
    program = {kFwdV, kFwdT, kGradT, kGradV, kBwdT, kBwdV};
    edges.insert(edges.end(), {{kFwdT, kGatherV}, {kGatherV, kGatherT}, {kGatherT, kGradT}});
  } else {
    // V4.1 issues the text gather after ∇T, beside Bwd(T) (csa2.md, "Multimodal").
    program = {kFwdV, kFwdT, kGradT, kBwdT, kGradV, kBwdV};
    edges.push_back({kGradT, kGatherT});
  }
  for (size_t position = 0; position < program.size(); ++position) {
    graph.tasks[program[position]].position = static_cast<int32_t>(position);
  }
  graph.programs = {program};
  BuildAdjacency(graph, edges);
  return built;
}

ContrastiveStep SimulateContrastiveStep(const ContrastiveStepTimes& times, ContrastiveOrder order) {
  ContrastiveStep result;
  result.order = order;
  result.built = BuildContrastiveStepGraph(times, order);
  result.trace = Simulate(result.built.graph);
  for (uint32_t task = 0; task < kNumPieces; ++task) {
    result.step = std::max(result.step, result.trace.timings[task].end);
    if (result.built.graph.tasks[task].kind == TaskKind::kWork) {
      result.compute += result.built.graph.tasks[task].duration;
    }
  }
  result.exposed_gather = result.step - result.compute;
  return result;
}

}  // namespace stagecraft
