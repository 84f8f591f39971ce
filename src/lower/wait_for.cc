#include "lower/wait_for.h"

#include <unordered_map>

namespace stagecraft {
namespace {

WaitReason Classify(const TaskGraph& graph, uint32_t waiter, uint32_t waited_for) {
  const Task& task = graph.tasks[waiter];
  const Task& dependency = graph.tasks[waited_for];
  if (task.kind == TaskKind::kTransfer && dependency.kind == TaskKind::kTransfer) {
    auto position = [&](uint32_t producer) {
      return producer == UINT32_MAX ? -1 : graph.tasks[producer].position;
    };
    const int32_t mine = position(task.producer_task);
    const int32_t theirs = position(dependency.producer_task);
    return theirs < mine ? WaitReason::kSendOrder : WaitReason::kReceiveOrder;
  }
  if (task.kind == TaskKind::kTransfer && dependency.kind == TaskKind::kCompute &&
      dependency.rank == task.peer) {
    return WaitReason::kReceiveNotPosted;
  }
  return WaitReason::kInput;
}

// Position of each compute task in its rank's program, and the first unfinished one per rank.
struct ProgramState {
  std::vector<uint32_t> head;  // per rank; UINT32_MAX when the rank is finished
};

ProgramState Heads(const TaskGraph& graph, const std::vector<uint8_t>& done) {
  ProgramState state;
  state.head.assign(graph.programs.size(), UINT32_MAX);
  for (size_t rank = 0; rank < graph.programs.size(); ++rank) {
    for (uint32_t task : graph.programs[rank]) {
      if (!done[task]) {
        state.head[rank] = task;
        break;
      }
    }
  }
  return state;
}

// The one thing `task` is taken to wait for, to walk the wait-for graph deterministically.
WaitEdge NextWait(const TaskGraph& graph, const std::vector<uint8_t>& done,
                  const ProgramState& state, uint32_t task) {
  const Task& current = graph.tasks[task];
  const bool on_stream = current.kind == TaskKind::kCompute || current.kind == TaskKind::kWork;
  if (on_stream && state.head[current.rank] != task) {
    return WaitEdge{task, state.head[current.rank], WaitReason::kProgramOrder};
  }
  for (uint32_t index = graph.pred_begin[task]; index < graph.pred_begin[task + 1]; ++index) {
    const uint32_t dependency = graph.preds[index];
    if (!done[dependency]) return WaitEdge{task, dependency, Classify(graph, task, dependency)};
  }
  return WaitEdge{task, task, WaitReason::kInput};  // not stuck (cannot happen in a deadlock)
}

}  // namespace

Deadlock AnalyzeDeadlock(const TaskGraph& graph, const std::vector<uint8_t>& done) {
  Deadlock deadlock;
  const ProgramState state = Heads(graph, done);
  for (size_t rank = 0; rank < state.head.size(); ++rank) {
    const uint32_t head = state.head[rank];
    if (head == UINT32_MAX) continue;
    BlockedRank blocked{static_cast<int32_t>(rank), head, {}};
    for (uint32_t index = graph.pred_begin[head]; index < graph.pred_begin[head + 1]; ++index) {
      const uint32_t dependency = graph.preds[index];
      if (!done[dependency]) {
        blocked.waits.push_back(WaitEdge{head, dependency, Classify(graph, head, dependency)});
      }
    }
    deadlock.blocked.push_back(std::move(blocked));
  }
  if (deadlock.blocked.empty()) return deadlock;
  // Walk from the first blocked rank until a task repeats; the walk's tail is the cycle.
  std::unordered_map<uint32_t, size_t> position;
  std::vector<WaitEdge> walk;
  uint32_t task = deadlock.blocked.front().head;
  while (position.find(task) == position.end()) {
    position[task] = walk.size();
    const WaitEdge edge = NextWait(graph, done, state, task);
    if (edge.waited_for == task) return deadlock;  // defensive: no cycle to report
    walk.push_back(edge);
    task = edge.waited_for;
  }
  deadlock.cycle.assign(walk.begin() + static_cast<std::ptrdiff_t>(position[task]), walk.end());
  return deadlock;
}

namespace {

// A microbatch's actions in dependency order: forwards up the stages, backwards down, W last.
int64_t DependencyRank(const Action& action, int64_t num_stages) {
  switch (action.kind) {
    case ActionKind::kForward:
      return action.stage.value();
    case ActionKind::kBackward:
    case ActionKind::kInputGrad:
      return 2 * num_stages - action.stage.value();
    case ActionKind::kWeightGrad:
      return 3 * num_stages;
  }
  return 0;
}

// `later` waits in program order for `first`, which it should have preceded.
bool InvertedOrder(const Action& later, const Action& first, int64_t num_stages) {
  if (later.microbatch == first.microbatch) {
    return DependencyRank(later, num_stages) < DependencyRank(first, num_stages);
  }
  return later.stage == first.stage && later.kind == first.kind &&
         later.microbatch.value() < first.microbatch.value();
}

}  // namespace

uint32_t DeadlockCulprit(const TaskGraph& graph, const Deadlock& deadlock) {
  for (const WaitEdge& edge : deadlock.cycle) {
    if (edge.reason == WaitReason::kReceiveNotPosted) return edge.waited_for;
  }
  for (const WaitEdge& edge : deadlock.cycle) {
    if (edge.reason == WaitReason::kReceiveOrder) return graph.tasks[edge.waiter].consumer_task;
  }
  const int64_t num_stages = static_cast<int64_t>(graph.stage_ranks.size());
  for (const WaitEdge& edge : deadlock.cycle) {
    if (edge.reason == WaitReason::kProgramOrder &&
        InvertedOrder(graph.tasks[edge.waiter].action, graph.tasks[edge.waited_for].action,
                      num_stages)) {
      return edge.waited_for;
    }
  }
  for (const WaitEdge& edge : deadlock.cycle) {
    if (graph.tasks[edge.waiter].kind == TaskKind::kCompute) return edge.waiter;
  }
  for (const WaitEdge& edge : deadlock.cycle) {
    if (edge.reason == WaitReason::kSendOrder) return graph.tasks[edge.waiter].consumer_task;
  }
  return deadlock.blocked.front().head;
}

std::string DescribeWait(const TaskGraph& graph, const WaitEdge& edge) {
  const bool torch = graph.mode == P2pMode::kTorchPipelining;
  std::string reason;
  switch (edge.reason) {
    case WaitReason::kInput:
      reason = "its input is not ready";
      break;
    case WaitReason::kProgramOrder:
      reason = "program order: the rank runs it first";
      break;
    case WaitReason::kReceiveNotPosted:
      reason = torch ? "torch-pipelining: the receiver posts the RECV only after this action"
                     : "rendezvous: the receive is posted only when the receiver finishes this "
                       "action";
      break;
    case WaitReason::kSendOrder:
      reason = torch ? "torch-pipelining: NCCL matches a link's sends with its receives in order, "
                       "and the sender issues this one first"
                     : "rendezvous: sends between two ranks match receives in issue order, and "
                       "the sender issues this one first";
      break;
    case WaitReason::kReceiveOrder:
      reason = torch ? "torch-pipelining: the receiver's comm list posts this RECV first"
                     : "rendezvous: the receiver posts its receives in program order, this one "
                       "first";
      break;
  }
  return DescribeTask(graph, edge.waiter) + " waits for " + DescribeTask(graph, edge.waited_for) +
         " (" + reason + ")";
}

std::string FormatDeadlock(const TaskGraph& graph, const Deadlock& deadlock) {
  std::string text;
  for (const BlockedRank& blocked : deadlock.blocked) {
    text += "  rank " + std::to_string(blocked.rank) + " is stuck at " +
            FormatAction(graph.tasks[blocked.head].action) + "\n";
    for (const WaitEdge& edge : blocked.waits) text += "    " + DescribeWait(graph, edge) + "\n";
  }
  if (!deadlock.cycle.empty()) {
    text += "  wait-for cycle:\n";
    for (const WaitEdge& edge : deadlock.cycle) text += "    " + DescribeWait(graph, edge) + "\n";
  }
  return text;
}

}  // namespace stagecraft
