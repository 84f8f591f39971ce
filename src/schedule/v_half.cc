// V-Half (Pipeline Parallelism with Controllable Memory, Qi et al., NeurIPS 2024: the V-shape
// schedule with about half of 1F1B's activation memory, peak (p+2)//2 microbatches). The paper
// builds it from a repeating building block; here it is a deterministic greedy list schedule under
// that memory cap. With F = I = W its bubble rate (span) is at most the paper's ~p/2m for p <= 6
// and p = 8, and up to about 1.5 times that for some larger p at large m (v_shape_test.cc).
//
// The list scheduler steps through time in chunk-action units (every F, I, W costs 1, no
// communication) and gives each idle rank the first runnable action in this priority:
//   1. the next I of its up stage, then of its down stage (backward first: it frees memory);
//   2. the next F of its up stage, then of its down stage, if the rank stays within the cap;
//   3. the oldest pending W (it fills what would be a bubble and frees memory).
// An action that consumes a neighbour's output is runnable only once that output is the oldest
// one the neighbour sent this rank and the rank has not consumed: each link then carries its
// messages in the order the receiver takes them, so the schedule also runs under rendezvous
// point-to-point (NCCL-like in-order matching; in a V one link carries both F and I messages).
// The cap counts chunk activations from F until W (the paper's accounting; F until I, the
// simulator's peak_activations, is never more). A down F also keeps room for the up F of every
// microbatch that went down through the rank and has not come back up, so an admitted microbatch
// is never stuck for memory on its way back (Run asserts progress; no stall for p <= 40,
// m <= 4p + 3). Program order = the order in time.
#include <algorithm>
#include <cassert>
#include <deque>
#include <limits>

#include "schedule/generator.h"

namespace stagecraft {
namespace {

constexpr int64_t kNotDone = std::numeric_limits<int64_t>::max();

class VListScheduler {
 public:
  VListScheduler(Schedule& schedule, int32_t activation_cap)
      : schedule_(schedule),
        pp_(schedule.num_ranks),
        microbatches_(schedule.num_microbatches),
        cap_(activation_cap),
        forward_end_(Slots(), kNotDone),
        input_grad_end_(Slots(), kNotDone),
        ranks_(static_cast<size_t>(pp_)),
        links_(2 * static_cast<size_t>(pp_)) {}

  void Run() {
    const int64_t total = 6 * static_cast<int64_t>(pp_) * microbatches_;
    int64_t placed = 0;
    for (int64_t time = 0; placed < total; ++time) {
      int64_t placed_now = 0;
      for (int32_t rank = 0; rank < pp_; ++rank) placed_now += Step(rank, time) ? 1 : 0;
      assert(placed_now > 0 && "V list scheduler stalled");
      placed += placed_now;
    }
  }

 private:
  struct RankState {
    int32_t next_forward[2] = {0, 0};     // [down, up]: next microbatch
    int32_t next_input_grad[2] = {0, 0};  // [down, up]
    int32_t held = 0;                     // chunk activations, F until W
    std::deque<Action> pending_weight_grads;
  };

  size_t Slots() const { return static_cast<size_t>(2 * pp_) * microbatches_; }
  size_t Slot(int32_t stage, int32_t microbatch) const {
    return static_cast<size_t>(stage) * microbatches_ + microbatch;
  }
  int32_t RankOf(int32_t stage) const {
    return StageToRank(StageId(stage), pp_, Placement::kV).value();
  }
  // The stage whose output `action` consumes (F: the previous stage's F; I: the next stage's I),
  // or -1 at the two ends of the V.
  int32_t ProducerStage(const Action& action) const {
    const int32_t stage = action.stage.value();
    if (action.kind == ActionKind::kForward) return stage - 1;
    return stage + 1 < 2 * pp_ ? stage + 1 : -1;
  }
  // Messages sent to `rank` by its neighbour `from`, in send order.
  std::deque<Action>& Link(int32_t from, int32_t rank) {
    return links_[2 * static_cast<size_t>(rank) + (from > rank ? 1 : 0)];
  }

  bool Ready(int32_t rank, const Action& action, int64_t time) {
    const int32_t stage = action.stage.value();
    const int32_t microbatch = action.microbatch.value();
    if (action.kind == ActionKind::kInputGrad && forward_end_[Slot(stage, microbatch)] > time) {
      return false;
    }
    const int32_t producer = ProducerStage(action);
    if (producer < 0) return true;
    const auto& ends = action.kind == ActionKind::kForward ? forward_end_ : input_grad_end_;
    if (ends[Slot(producer, microbatch)] > time) return false;
    const int32_t from = RankOf(producer);
    if (from == rank) return true;
    const std::deque<Action>& link = Link(from, rank);
    return !link.empty() && link.front() == action;
  }

  // Records `action` on `rank`, finishing at time + 1, and its message to the next rank.
  bool Place(int32_t rank, const Action& action, int64_t time) {
    schedule_.rank_actions[rank].push_back(action);
    if (action.kind == ActionKind::kWeightGrad) return true;
    const int32_t stage = action.stage.value();
    const int32_t microbatch = action.microbatch.value();
    const int32_t producer = ProducerStage(action);
    if (producer >= 0 && RankOf(producer) != rank) Link(RankOf(producer), rank).pop_front();
    const bool forward = action.kind == ActionKind::kForward;
    (forward ? forward_end_ : input_grad_end_)[Slot(stage, microbatch)] = time + 1;
    const int32_t consumer = forward ? stage + 1 : stage - 1;
    if (consumer >= 0 && consumer < 2 * pp_ && RankOf(consumer) != rank) {
      Link(rank, RankOf(consumer)).push_back({StageId(consumer), action.kind, action.microbatch});
    }
    return true;
  }

  // Places one action on `rank` at `time` if one is runnable; returns whether it did.
  bool Step(int32_t rank, int64_t time) {
    RankState& state = ranks_[rank];
    const VStages stages = VStagesOfRank(rank, pp_);
    const StageId by_chunk[2] = {stages.down, stages.up};
    for (const int chunk : {1, 0}) {
      const Action input_grad{by_chunk[chunk], ActionKind::kInputGrad,
                              MicrobatchId(state.next_input_grad[chunk])};
      if (state.next_input_grad[chunk] < microbatches_ && Ready(rank, input_grad, time)) {
        ++state.next_input_grad[chunk];
        state.pending_weight_grads.push_back(
            {input_grad.stage, ActionKind::kWeightGrad, input_grad.microbatch});
        return Place(rank, input_grad, time);
      }
    }
    // Room kept for the up F of microbatches between their down F and up F on this rank.
    const int32_t returning = state.next_forward[0] - state.next_forward[1];
    for (const int chunk : {1, 0}) {
      const Action forward{by_chunk[chunk], ActionKind::kForward,
                           MicrobatchId(state.next_forward[chunk])};
      const int32_t needed = chunk == 1 ? 1 : 1 + returning;
      if (state.next_forward[chunk] < microbatches_ && state.held + needed <= cap_ &&
          Ready(rank, forward, time)) {
        ++state.next_forward[chunk];
        ++state.held;
        return Place(rank, forward, time);
      }
    }
    if (state.pending_weight_grads.empty()) return false;
    const Action weight_grad = state.pending_weight_grads.front();
    state.pending_weight_grads.pop_front();
    --state.held;
    return Place(rank, weight_grad, time);
  }

  Schedule& schedule_;
  int32_t pp_;
  int32_t microbatches_;
  int32_t cap_;
  std::vector<int64_t> forward_end_;     // [stage · m + microbatch] → end time, or kNotDone
  std::vector<int64_t> input_grad_end_;  // likewise for I
  std::vector<RankState> ranks_;
  std::vector<std::deque<Action>> links_;  // [rank · 2 + (from above)]: messages not yet consumed
};

}  // namespace

Result<Schedule> GenerateVHalf(const GeneratorParams& params) {
  STAGECRAFT_RETURN_IF_ERROR(CheckVShapeParams(params, "v-half"));
  Schedule schedule = EmptyVSchedule(params, "v-half");
  // (p+2)//2 microbatches of 2 chunk activations each (shared reference README §1).
  const int32_t activation_cap = 2 * ((params.pp + 2) / 2);
  VListScheduler(schedule, activation_cap).Run();
  return schedule;
}

}  // namespace stagecraft
