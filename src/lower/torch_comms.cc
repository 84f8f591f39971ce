#include "lower/torch_comms.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

namespace stagecraft {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

bool IsPipelineTransfer(const Task& task) {
  return task.kind == TaskKind::kTransfer && task.producer_task != kNone &&
         (task.payload == PayloadKind::kActivation || task.payload == PayloadKind::kGradient);
}

// Where one transfer's SEND and RECV stand in their ranks' comm lists.
struct Post {
  int64_t send_order = -1;     // among the sender's sends; -1: never placed
  int64_t receive_order = -1;  // among the receiver's receives
  int32_t send_after = 0;      // compute actions of the sender before the SEND
  int32_t receive_after = 0;   // compute actions of the receiver before the RECV
};

// Whether `task` may be placed: every cross-rank input's producer and every same-rank compute
// input is placed (_add_send_recv's _ready_to_schedule).
bool Ready(const TaskGraph& graph, const std::vector<uint8_t>& placed, uint32_t task) {
  for (uint32_t index = graph.pred_begin[task]; index < graph.pred_begin[task + 1]; ++index) {
    const uint32_t pred = graph.preds[index];
    const Task& input = graph.tasks[pred];
    if (IsPipelineTransfer(input) && !placed[input.producer_task]) return false;
    if (input.kind == TaskKind::kCompute && !placed[pred]) return false;
  }
  return true;
}

// _add_send_recv's lockstep pass: rounds over the ranks in order, each placing its next action
// (an F&B pair as one) when it is ready; a placed action's sends go right after it and their
// receives after what the peer has placed so far. Both orders are the placement order.
std::vector<Post> LockstepPosts(const TaskGraph& graph) {
  std::vector<Post> posts(graph.num_tasks());
  std::vector<std::vector<uint32_t>> sends_of(graph.num_tasks());
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    if (IsPipelineTransfer(graph.tasks[task]))
      sends_of[graph.tasks[task].producer_task].push_back(task);
  }
  std::vector<uint8_t> placed(graph.num_tasks(), 0);
  std::vector<size_t> next(graph.programs.size(), 0);
  int64_t order = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t rank = 0; rank < graph.programs.size(); ++rank) {
      const auto& program = graph.programs[rank];
      const size_t position = next[rank];
      if (position >= program.size()) continue;
      const size_t count =
          position + 1 < program.size() && graph.tasks[program[position + 1]].action.overlapped ? 2
                                                                                                : 1;
      bool ready = true;
      for (size_t part = 0; part < count; ++part)
        ready = ready && Ready(graph, placed, program[position + part]);
      if (!ready) continue;
      progress = true;
      next[rank] += count;
      for (size_t part = 0; part < count; ++part) placed[program[position + part]] = 1;
      for (size_t part = 0; part < count; ++part) {
        for (uint32_t transfer : sends_of[program[position + part]]) {
          const int32_t peer = graph.tasks[transfer].peer;
          posts[transfer] = {order, order, static_cast<int32_t>(next[rank]),
                             static_cast<int32_t>(next[peer])};
          ++order;
        }
      }
    }
  }
  return posts;
}

using CommKey =
    std::tuple<int32_t, bool, bool, int32_t, int32_t>;  // rank, send, backward, stage, mb

std::string RankOf(int32_t rank) { return "rank " + std::to_string(rank); }

// The comm list of a compute_comms CSV: each transfer's SEND on the producer's rank and RECV on
// the consumer's, checked as _PipelineScheduleRuntime would run them.
Result<std::vector<Post>> ExplicitPosts(const TaskGraph& graph, const Schedule& schedule) {
  std::map<CommKey, std::pair<int32_t, size_t>> index;  // → (after, position in the rank's list)
  std::map<CommKey, bool> used;
  for (size_t rank = 0; rank < schedule.rank_comms.size(); ++rank) {
    const auto& comms = schedule.rank_comms[rank];
    for (size_t position = 0; position < comms.size(); ++position) {
      const CommAction& comm = comms[position];
      const CommKey key{static_cast<int32_t>(rank), comm.send, comm.backward, comm.stage.value(),
                        comm.microbatch.value()};
      if (!index.emplace(key, std::pair(comm.after, position)).second) {
        return Error{RankOf(static_cast<int32_t>(rank)) + ": " + FormatCommAction(comm) +
                     " appears twice in the compute_comms schedule; keep one"};
      }
      used[key] = false;
    }
  }
  std::vector<Post> posts(graph.num_tasks());
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Task& transfer = graph.tasks[task];
    if (!IsPipelineTransfer(transfer)) continue;
    const bool backward = transfer.payload == PayloadKind::kGradient;
    const int32_t microbatch = transfer.action.microbatch.value();
    const CommAction send{transfer.action.stage, transfer.action.microbatch, true, backward, 0};
    const CommAction receive{transfer.consumer.stage, transfer.consumer.microbatch, false, backward,
                             0};
    const auto send_at =
        index.find({transfer.rank, true, backward, send.stage.value(), microbatch});
    const auto receive_at =
        index.find({transfer.peer, false, backward, receive.stage.value(), microbatch});
    const std::string what = std::string(PayloadName(transfer.payload)) + " " +
                             FormatAction(transfer.action) + " -> " +
                             FormatAction(transfer.consumer);
    if (send_at == index.end()) {
      return Error{RankOf(transfer.rank) + ": no " + FormatCommAction(send) + " for the " + what +
                   " (add it after " + FormatAction(transfer.action) + " in rank " +
                   std::to_string(transfer.rank) + "'s row)"};
    }
    if (receive_at == index.end()) {
      return Error{RankOf(transfer.peer) + ": no " + FormatCommAction(receive) + " for the " +
                   what + " (add it before " + FormatAction(transfer.consumer) + " in rank " +
                   std::to_string(transfer.peer) + "'s row)"};
    }
    const int32_t producer_position = graph.tasks[transfer.producer_task].position;
    const int32_t consumer_position = graph.tasks[transfer.consumer_task].position;
    if (send_at->second.first <= producer_position) {
      return Error{RankOf(transfer.rank) + ": " + FormatCommAction(send) + " comes before " +
                   FormatAction(transfer.action) + ", whose output it sends (move it after)"};
    }
    if (receive_at->second.first > consumer_position) {
      return Error{RankOf(transfer.peer) + ": " + FormatCommAction(receive) + " comes after " +
                   FormatAction(transfer.consumer) +
                   ", which needs it (torch: 'Computing action before receiving input'; move it "
                   "before)"};
    }
    used[send_at->first] = used[receive_at->first] = true;
    posts[task] = {static_cast<int64_t>(send_at->second.second),
                   static_cast<int64_t>(receive_at->second.second), send_at->second.first,
                   receive_at->second.first};
  }
  for (const auto& [key, was_used] : used) {
    if (was_used) continue;
    const auto& [rank, is_send, backward, stage, microbatch] = key;
    const CommAction comm{StageId(stage), MicrobatchId(microbatch), is_send, backward, 0};
    return Error{RankOf(rank) + ": " + FormatCommAction(comm) +
                 " matches no transfer between ranks (no such action, or both stages are on rank " +
                 std::to_string(rank) + "); remove it"};
  }
  return posts;
}

}  // namespace

Result<std::vector<std::pair<uint32_t, uint32_t>>> TorchPipeliningEdges(const TaskGraph& graph,
                                                                        const Schedule& schedule) {
  std::vector<Post> posts;
  if (schedule.rank_comms.empty()) {
    posts = LockstepPosts(graph);
  } else {
    auto explicit_posts = ExplicitPosts(graph, schedule);
    if (!explicit_posts.ok()) return explicit_posts.error();
    posts = std::move(explicit_posts).value();
  }
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  std::vector<std::vector<uint32_t>> by_link(graph.links.size());
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Post& post = posts[task];
    if (post.send_order < 0) continue;
    const Task& transfer = graph.tasks[task];
    by_link[transfer.link].push_back(task);
    if (post.receive_after > 0)
      edges.emplace_back(graph.programs[transfer.peer][post.receive_after - 1], task);
    if (post.send_after > graph.tasks[transfer.producer_task].position + 1) {
      edges.emplace_back(graph.programs[transfer.rank][post.send_after - 1], task);
    }
  }
  for (auto& transfers : by_link) {
    for (const bool by_send : {true, false}) {
      std::sort(transfers.begin(), transfers.end(), [&](uint32_t a, uint32_t b) {
        return by_send ? posts[a].send_order < posts[b].send_order
                       : posts[a].receive_order < posts[b].receive_order;
      });
      for (size_t index = 1; index < transfers.size(); ++index) {
        edges.emplace_back(transfers[index - 1], transfers[index]);
      }
    }
  }
  return edges;
}

}  // namespace stagecraft
