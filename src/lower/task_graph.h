// TaskGraph: the lowered form of a schedule — compute tasks in each rank's program order plus
// the transfers between ranks, with every dependency explicit (DESIGN.md §2, "lower").
// The simulator runs it; the checker searches it for deadlocks.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/time.h"
#include "hardware/cluster_spec.h"
#include "lower/state_flow.h"
#include "schedule/action.h"
#include "schedule/run_modes.h"

namespace stagecraft {

// One line on what a point-to-point mode (schedule/run_modes.h) models, for `stagecraft list
// p2p`.
const char* P2pModeDescription(P2pMode mode);

// kCollective: work on one of the device's two collective streams (DESIGN.md §3), each a FIFO
// per rank: the collectives of the parallel dimensions around the pipeline, timed by the comm
// model for the whole group. Tensor-, context- and expert-parallel collectives share one stream;
// the data-parallel reductions, the ZeRO-3 / FSDP gathers and reduce-scatters and the optimizer
// step run on the other (OnDataParallelStream), as the engines give them a communicator and
// stream of their own: a gradient bucket never holds up the next action's TP collective. The
// simulated pipeline is one representative of its tensor- and data-parallel peers, which run the
// same program in step, so a collective starts when this rank reaches it. The optimizer step runs
// there too, last. kDelay: a timer on no resource: it starts when its predecessors end and lasts
// its duration (the moment a share of an action's work is done, e.g. a gradient bucket ready
// mid-backward). kWork: compute on the rank's compute stream that is not a schedule action (the
// multimodal pieces around the pipeline: a vision encoder's forward and backward, a contrastive
// loss). It runs in program order between the actions, counts as busy time, and says what it is by
// `payload`; `action.microbatch` is its microbatch and `action.kind` its direction.
enum class TaskKind : uint8_t { kCompute, kTransfer, kCollective, kDelay, kWork };

// What a transfer carries.
enum class PayloadKind : uint8_t {
  kNone,
  kActivation,      // the hidden state at a stage cut (plus payload-policy shared state)
  kGradient,        // its gradient (plus payload-policy dState)
  kState,           // direct policy: one shared state, producer rank → consumer rank
  kStateGradient,   // direct policy: its dState, consumer rank → producer rank
  kShadowSync,      // shadow policy: the owner's parameters to a replica, once per iteration
  kShadowGradient,  // shadow policy: a replica's parameter gradient back to the owner
  // Collectives (TaskKind::kCollective):
  kTensorParallel,   // the tensor-parallel all-reduces (or AG + RS) of one action's layers
  kExpertParallel,   // the all-to-all dispatch and combine of one action's MoE layers
  kContextParallel,  // context parallelism: the exposed part of ring attention's KV passing
                     // (or the KV all-gather) of one action's layers
  kDataParallel,     // the data-parallel gradient reduction of one stage, after its last backward
  kShardGather,      // ZeRO-3 / FSDP: all-gather of a stage's parameters before an F or a B/I,
                     // prefetched one action ahead
  kShardReduce,      // ZeRO-3 / FSDP: reduce-scatter of a stage's gradients after each B or W
  kOptimizerStep,    // the optimizer step of the rank's parameters, after every reduction
  // The multimodal pieces (src/multimodal/):
  kVisionForward,      // work: the vision encoder's forward over a share of a microbatch's images
  kVisionBackward,     // work: ... its backward
  kVisionEmbedding,    // transfer: image embeddings, encoder rank → the first stage's rank
  kVisionGradient,     // transfer: their gradient back
  kEngramFetch,        // collective: Engram all-to-alls of ids and rows for the local batch
  kEngramGradient,     // collective: Engram row gradients back to the owners
  kTextForward,        // work: a contrastive model's text tower forward
  kTextBackward,       // work: ... its backward
  kContrastiveLoss,    // work: the contrastive loss and its gradient for one modality
  kContrastiveGather,  // collective: all-gather of one modality's embeddings over data parallel
  // Fault tolerance (src/fault/):
  kCheckpointSave,  // the blocking part of a checkpoint save, after the optimizer step (the
                    // device-to-host copy of an asynchronous save, or the whole write)
};

// Whether a collective of this kind runs on the rank's data-parallel collective stream (the
// gradient reductions, ZeRO-3 / FSDP parameter traffic, the optimizer step, a checkpoint save)
// rather than the stream of the tensor-, context- and expert-parallel collectives.
constexpr bool OnDataParallelStream(PayloadKind kind) {
  return kind == PayloadKind::kDataParallel || kind == PayloadKind::kShardGather ||
         kind == PayloadKind::kShardReduce || kind == PayloadKind::kOptimizerStep ||
         kind == PayloadKind::kCheckpointSave;
}
// The index of a collective's stream among all ranks' collective streams: two per rank, the
// TP/CP/EP one first, then the data-parallel one.
constexpr int32_t CollectiveStream(int32_t rank, PayloadKind kind) {
  return 2 * rank + (OnDataParallelStream(kind) ? 1 : 0);
}
// "activation", "gradient", "state", "dstate", "shadow-params", "shadow-grads", "tp", "ep", "dp",
// "optimizer", ..., "checkpoint".
const char* PayloadName(PayloadKind payload);

struct Task {
  TaskKind kind = TaskKind::kCompute;
  PayloadKind payload = PayloadKind::kNone;  // transfers only
  int32_t rank = 0;                          // compute: its device; transfer: the sending device
  int32_t peer = -1;                         // transfer: the receiving device
  int32_t link = -1;                         // transfer: index into TaskGraph::links
  Time duration;
  int64_t bytes = 0;                    // transfer: bytes moved
  int64_t state_bytes = 0;              // transfer: the part of `bytes` that is shared state
  int32_t flow = -1;                    // kState / kStateGradient: index into TaskGraph::states
  Action action;                        // compute: the action; transfer: the producing action
  Action consumer;                      // transfer: the action that needs it
  int32_t position = -1;                // compute: index in its rank's program
  uint32_t producer_task = UINT32_MAX;  // transfer: the compute task that makes the data, or
                                        // UINT32_MAX when it exists from the start (shadow sync)
  uint32_t consumer_task = UINT32_MAX;  // transfer: the compute task that needs it
};

struct Link {
  int32_t from = 0;
  int32_t to = 0;
};

struct TaskGraph {
  P2pMode mode = P2pMode::kAsync;
  int32_t num_ranks = 0;
  std::vector<Task> tasks;
  std::vector<Link> links;                      // directed, sorted by (from, to)
  std::vector<StateFlow> states;                // the shared-state flows that were lowered
  ClusterSpec cluster;                          // the links transfers were costed on
  Time cost_p2p;                                // added to every transfer between two ranks
  std::vector<int32_t> stage_ranks;             // [stage] → rank
  std::vector<std::vector<uint32_t>> programs;  // [rank] → compute task ids, program order
  // Dependencies in compressed rows: predecessors of task t are
  // preds[pred_begin[t] .. pred_begin[t+1]); successors likewise.
  std::vector<uint32_t> pred_begin;
  std::vector<uint32_t> preds;
  std::vector<uint32_t> succ_begin;
  std::vector<uint32_t> succs;

  size_t num_tasks() const { return tasks.size(); }
  uint32_t num_preds(uint32_t task) const { return pred_begin[task + 1] - pred_begin[task]; }
};

// Builds both compressed-row adjacency lists (preds, succs) from an edge list (from → to);
// graph.tasks must be complete.
void BuildAdjacency(TaskGraph& graph, const std::vector<std::pair<uint32_t, uint32_t>>& edges);

// The compute task running `action`, or UINT32_MAX when there is none (a linear scan: for
// tests and diagnostics, not hot paths).
uint32_t FindComputeTask(const TaskGraph& graph, const Action& action);
// The transfer from `producer`'s output to `consumer`, or UINT32_MAX.
uint32_t FindTransfer(const TaskGraph& graph, const Action& producer, const Action& consumer);

// The tail of the F&B op whose head is `position` in `rank`'s program (the next action, when it
// is overlapped), or nullptr when that action runs alone.
const Action* FusedTail(const TaskGraph& graph, int32_t rank, size_t position);

// A human-readable name: "rank 1 2F0" or "transfer 0F3 -> 1F3 (rank 0 -> 1)".
std::string DescribeTask(const TaskGraph& graph, uint32_t task);

}  // namespace stagecraft
