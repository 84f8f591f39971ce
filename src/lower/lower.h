// Lowering: schedule + stage costs + cluster → TaskGraph. Inserts an activation send after each
// F and a gradient send after each B/I between consecutive stages on different ranks; nothing
// between stages on the same rank (DESIGN.md §2, §3). Shared state (DESIGN.md §5): a `payload`
// flow adds its bytes to every cut from its producer's stage to its last consumer's (dState to
// the gradient sends, when differentiable); a `direct` flow adds one transfer producer rank →
// consumer rank per consuming rank (and dState back), so the consumer's F waits for it and the
// producer's backward waits for every consumer's dState; a `shadow` flow adds compute on each
// consuming rank's first consuming stage, ships only its `shadow_bytes` payload-style, and syncs
// the replica's parameters once per iteration (gradients back when it computes them).
#pragma once

#include <utility>
#include <vector>

#include "core/result.h"
#include "hardware/cluster_spec.h"
#include "lower/state_flow.h"
#include "lower/task_graph.h"
#include "model/model_spec.h"
#include "schedule/schedule.h"

namespace stagecraft {

// The parallel dimensions around the pipeline, as collective-stream work (TaskKind::kCollective).
// Per stage: the tensor- and expert-parallel collectives after each forward and each backward
// (B or I) of one microbatch, synchronous (the rank's next action waits for them: Megatron's
// tensor parallelism without communication overlap); the data-parallel gradient reduction after
// the stage's last action, overlapping whatever the rank still computes. Per rank: the
// optimizer step after its reductions, then a checkpoint save when one is asked
// (LowerOptions::checkpoint_save). An F&B op (DualPipe) runs the TP collectives of both
// halves after it and hides the EP all-to-all (its overlap gain models that).
struct StageCollectives {
  Time tp_forward;
  Time tp_backward;
  Time ep_forward;
  Time ep_backward;
  Time cp_forward;  // context parallelism: what the ring does not hide (or the all-gather)
  Time cp_backward;
  Time dp_reduce;
  // Gradient buckets instead of one dp_reduce: (fraction of the stage's last backward after
  // which the bucket's gradients exist, its reduction time), in production order.
  std::vector<std::pair<double, Time>> dp_buckets;
  Time shard_gather;  // ZeRO-3 / FSDP: before each F and each B or I (prefetched)
  // The FSDP units (wrapped layers) the stage's gather is split into: an op waits for the first
  // unit's share, the rest streams in during the op and the rank's next op waits for it.
  int32_t shard_units = 1;
  bool shard_gather_backward = true;  // false: before each F only (FSDP2 reshard_after_forward
                                      // off: the parameters stay gathered until the backward)
  Time first_gather;  // before the stage's first action only (parameters gathered once per
                      // iteration and kept: FSDP under pipeline parallelism)
  Time shard_reduce;  // ZeRO-3 / FSDP: after each B or W (not blocking)
  bool operator==(const StageCollectives&) const = default;
};

struct LowerOptions {
  P2pMode mode = P2pMode::kAsync;  // point-to-point semantics
  Time cost_p2p;                   // fixed time added to every transfer between two ranks
  ClusterSpec cluster;             // links; when !cluster.given transfers cost only cost_p2p
  std::vector<StateFlow> states;   // shared state to move (layer-list models); policy != kAuto
  std::vector<StageCollectives> collectives;  // [stage], or empty: no collectives
  std::vector<Time> optimizer_step;           // [rank], or empty: no optimizer step
  // [rank], or empty: no save. The blocking part of a checkpoint save in the iteration that
  // ends in one (fault/storage.h): on the rank's data-parallel stream after its optimizer step
  // (or its last reduction, or its last action): the saving iteration's step ends after it.
  std::vector<Time> checkpoint_save;
};

// REQUIRES: stage_costs.size() == schedule.num_stages. Fails, naming the action, when an action
// the schedule needs is missing or doubled (run the checker first for the full list).
Result<TaskGraph> Lower(const Schedule& schedule, const std::vector<StageCost>& stage_costs,
                        const LowerOptions& options);

}  // namespace stagecraft
