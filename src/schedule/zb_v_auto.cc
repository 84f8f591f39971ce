// ZB-V for the run's costs. The handcrafted ZB-V (zb_v.cc) has no bubble when F = I = W and
// nothing is sent; with other costs the authors build the order greedily instead
// (sail-sg/zero-bubble-pipeline-parallelism, scheduler/zbv.py `try_v_schedule`, commit 39f2c186,
// read for its decisions). Both are timed (TimeOrder) and the smaller largest span is kept, the
// earlier makespan on a tie; a run that needs links in their receivers' order (rendezvous, or
// `check` of every mode) keeps the handcrafted order.
//
// The greedy V order, rank r holding the down stage r and the up stage 2p − 1 − r:
//   - warm-up: a down F on every rank; then, from the last rank back, each rank takes one up F
//     after as many more down F (on it and every rank before it) as fit in memory and end before
//     the up F's input arrives; then later ranks catch up with the forwards of the rank before
//     them (alternating down and up F, from the last rank back);
//   - 2m rounds: every rank runs one I (the down stage's once its gradient is there or the up
//     stage's are done, else the up stage's; down I ranks back to front, then up I ranks front
//     to back), then one F (the down stage's while it is behind the up stage's, else the up
//     stage's once its input is there). Before each pass, W passes free memory when the limit
//     needs it, fill the wait for its input (every W that ends before the input arrives) and,
//     when the wait is longer than the rank may idle, one more (by the knobs for the up I and
//     the F). A rank may idle as long as the most idle rank so far, or, in a rerun, as long as
//     the previous run's most idle rank beyond its own idle there;
//   - the remaining W passes, oldest first.
// The run is repeated with its idle times as the allowance while the largest idle time falls.
#include <algorithm>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "schedule/generator.h"

namespace stagecraft {
namespace {

constexpr int64_t kUnknown = -1;
constexpr int32_t kDown = 0;
constexpr int32_t kUp = 1;

struct VKnobs {
  bool fill_before_up_input_grad = true;
  bool fill_before_forward = true;
};

struct VOrder {
  Schedule schedule;
  std::vector<int64_t> idle;  // ns per rank, from its first F to its last pass
  int64_t largest_idle = 0;
};

class VGreedy {
 public:
  VGreedy(const GeneratorParams& params, const PipelineCosts& costs, VKnobs knobs,
          const std::vector<int64_t>* allowance)
      : pp_(params.pp),
        microbatches_(params.microbatches),
        costs_(costs),
        knobs_(knobs),
        allowance_(allowance),
        ranks_(static_cast<size_t>(pp_)),
        forward_end_(static_cast<size_t>(2 * pp_) * microbatches_, kUnknown),
        input_grad_end_(static_cast<size_t>(2 * pp_) * microbatches_, kUnknown) {
    if (allowance_ != nullptr) {
      for (const int64_t idle : *allowance_) largest_allowed_ = std::max(largest_allowed_, idle);
    }
  }

  // Empty when the order cannot be built: the memory limit needs a W that is not there, or a
  // pass would need an input whose producer is not placed (the order is the heuristic's, not a
  // search, so some shapes and costs defeat it; the handcrafted order stands in).
  std::optional<VOrder> Build(Schedule schedule) {
    schedule_ = std::move(schedule);
    if (!WarmUp()) return std::nullopt;
    for (int32_t round = 0; round < 2 * microbatches_; ++round) {
      if (!Round()) return std::nullopt;
    }
    VOrder order;
    for (int32_t rank = 0; rank < pp_; ++rank) {
      while (!ranks_[rank].pending_weight_grads.empty()) {
        if (!PutWeightGrad(rank)) return std::nullopt;
      }
      order.idle.push_back(ranks_[rank].idle);
      order.largest_idle = std::max(order.largest_idle, ranks_[rank].idle);
    }
    order.schedule = std::move(schedule_);
    return order;
  }

 private:
  struct Rank {
    int64_t free = 0;  // ns: when its last placed pass ends
    int64_t idle = 0;  // ns waited since its first down F
    int64_t held = 0;  // the weighted units of zb-2p (F adds M_B, I M_W − M_B, W −M_W)
    int32_t forwards[2] = {0, 0};  // [down, up]: the next microbatch
    int32_t input_grads[2] = {0, 0};
    std::deque<std::pair<int32_t, int32_t>> pending_weight_grads;  // (side, microbatch)
  };

  int32_t StageOf(int32_t rank, int32_t side) const {
    return side == kDown ? rank : 2 * pp_ - 1 - rank;
  }
  size_t Index(int32_t stage, int32_t microbatch) const {
    return static_cast<size_t>(stage) * microbatches_ + microbatch;
  }
  const StageCost& Cost(int32_t stage) const { return costs_.stages[stage]; }
  // The weighted memory of a stage's passes under zb-2p's limit (UnitsOf).
  MemoryUnits Units(int32_t stage) const { return UnitsOf(Cost(stage), 2, pp_); }
  int64_t Limit(int32_t rank) const { return Units(StageOf(rank, kDown)).limit; }

  // When a pass's input is on its rank; kUnknown while its producer is not placed.
  int64_t ForwardReady(int32_t rank, int32_t side, int32_t microbatch) const {
    const int32_t stage = StageOf(rank, side);
    if (stage == 0) return 0;
    const int64_t end = forward_end_[Index(stage - 1, microbatch)];
    if (end == kUnknown) return kUnknown;
    const bool same_rank = side == kUp && rank == pp_ - 1;
    return same_rank ? end : end + costs_.activation_p2p[stage - 1].ns();
  }
  int64_t InputGradReady(int32_t rank, int32_t side, int32_t microbatch) const {
    const int32_t stage = StageOf(rank, side);
    if (stage == 2 * pp_ - 1) return forward_end_[Index(stage, microbatch)];
    const int64_t end = input_grad_end_[Index(stage + 1, microbatch)];
    if (end == kUnknown) return kUnknown;
    const bool same_rank = side == kDown && rank == pp_ - 1;
    return same_rank ? end : end + costs_.gradient_p2p[stage].ns();
  }

  int64_t LargestIdle(int32_t rank) const {
    int64_t largest = largest_idle_;
    if (allowance_ != nullptr) {
      largest = std::max(largest, largest_allowed_ - (*allowance_)[rank]);
    }
    return largest;
  }

  bool Place(int32_t rank, int32_t side, ActionKind kind, int32_t microbatch, int64_t ready) {
    if (ready == kUnknown) return false;
    Rank& state = ranks_[rank];
    const int32_t stage = StageOf(rank, side);
    const int64_t start = std::max(state.free, ready);
    if (state.forwards[kDown] > 0) state.idle += start - state.free;
    largest_idle_ = std::max(largest_idle_, state.idle);
    const StageCost& cost = Cost(stage);
    switch (kind) {
      case ActionKind::kForward:
        state.free = start + cost.forward.ns();
        forward_end_[Index(stage, microbatch)] = state.free;
        state.held += Units(stage).forward;
        ++state.forwards[side];
        break;
      case ActionKind::kInputGrad:
        state.free = start + cost.input_grad.ns();
        input_grad_end_[Index(stage, microbatch)] = state.free;
        state.held += Units(stage).input_grad;
        ++state.input_grads[side];
        state.pending_weight_grads.emplace_back(side, microbatch);
        break;
      default:
        state.free = start + cost.weight_grad.ns();
        state.held += Units(stage).weight_grad;
        break;
    }
    schedule_.rank_actions[rank].push_back({StageId(stage), kind, MicrobatchId(microbatch)});
    return true;
  }

  bool PutForward(int32_t rank, int32_t side) {
    const int32_t microbatch = ranks_[rank].forwards[side];
    if (microbatch >= microbatches_) return false;
    return Place(rank, side, ActionKind::kForward, microbatch,
                 ForwardReady(rank, side, microbatch));
  }
  bool PutInputGrad(int32_t rank, int32_t side) {
    const int32_t microbatch = ranks_[rank].input_grads[side];
    if (microbatch >= microbatches_) return false;
    return Place(rank, side, ActionKind::kInputGrad, microbatch,
                 InputGradReady(rank, side, microbatch));
  }
  bool PutWeightGrad(int32_t rank) {
    Rank& state = ranks_[rank];
    if (state.pending_weight_grads.empty()) return false;
    const auto [side, microbatch] = state.pending_weight_grads.front();
    state.pending_weight_grads.pop_front();
    return Place(rank, side, ActionKind::kWeightGrad, microbatch,
                 input_grad_end_[Index(StageOf(rank, side), microbatch)]);
  }

  // W passes before a pass whose input arrives at `arrival` (kUnknown: from this rank): those
  // that end by then, and one more if the wait is longer than the rank may idle and `fill`.
  bool FillWait(int32_t rank, int64_t arrival, bool fill) {
    if (arrival == kUnknown) return true;
    Rank& state = ranks_[rank];
    while (!state.pending_weight_grads.empty()) {
      const int32_t stage = StageOf(rank, state.pending_weight_grads.front().first);
      if (arrival < state.free + Cost(stage).weight_grad.ns()) break;
      if (!PutWeightGrad(rank)) return false;
    }
    if (!state.pending_weight_grads.empty() && fill &&
        arrival - state.free > LargestIdle(rank) - state.idle) {
      return PutWeightGrad(rank);
    }
    return true;
  }

  // The input of a pass from the neighbouring rank, kUnknown for one from this rank.
  int64_t ForwardArrival(int32_t rank, int32_t side) const {
    const bool from_rank = side == kDown ? rank == 0 : rank == pp_ - 1;
    if (from_rank) return kUnknown;
    return ForwardReady(rank, side, ranks_[rank].forwards[side]);
  }
  int64_t InputGradArrival(int32_t rank, int32_t side) const {
    const bool from_rank = side == kUp ? rank == 0 : rank == pp_ - 1;
    if (from_rank) return kUnknown;
    return InputGradReady(rank, side, ranks_[rank].input_grads[side]);
  }

  bool WarmUp() {
    for (int32_t rank = 0; rank < pp_; ++rank) {
      if (!PutForward(rank, kDown)) return false;
    }
    for (int32_t rank = pp_ - 1; rank >= 0; --rank) {
      if (rank < pp_ - 1) {
        const int64_t arrival = ForwardReady(rank, kUp, 0);
        if (arrival == kUnknown) return false;
        const int64_t forward = Cost(StageOf(rank, kDown)).forward.ns();
        // Room for the down F of this round and the 2·rank the ranks before will need.
        while (ranks_[rank].held + Units(rank).forward * (2 + 2 * int64_t{rank}) <= Limit(rank) &&
               ranks_[rank].free + forward <= arrival &&
               ranks_[rank].forwards[kDown] < microbatches_) {
          for (int32_t before = 0; before <= rank; ++before) {
            if (ranks_[before].forwards[kDown] >= microbatches_) continue;
            if (!PutForward(before, kDown)) return false;
          }
        }
      }
      if (!PutForward(rank, kUp)) return false;
    }
    int32_t side = kDown;
    for (int32_t rank = 1; rank < pp_; ++rank) {
      const Rank& state = ranks_[rank];
      const Rank& before = ranks_[rank - 1];
      while (
          state.forwards[kDown] + state.forwards[kUp] <
              before.forwards[kDown] + before.forwards[kUp] ||
          (state.forwards[kUp] <= before.forwards[kUp] && before.forwards[kUp] < microbatches_)) {
        bool placed = false;
        for (int32_t later = pp_ - 1; later >= rank; --later) {
          if (ranks_[later].forwards[side] >= microbatches_) continue;
          if (!PutForward(later, side)) return false;
          placed = true;
        }
        side = 1 - side;
        if (!placed && ranks_[rank].forwards[side] >= microbatches_) return false;  // no progress
      }
    }
    return true;
  }

  // The side whose I this rank runs next.
  int32_t InputGradSide(int32_t rank) const {
    const Rank& state = ranks_[rank];
    if (state.input_grads[kDown] >= state.input_grads[kUp]) return kUp;
    if (rank == pp_ - 1 || state.input_grads[kUp] >= microbatches_) return kDown;
    const int32_t down_stage = StageOf(rank, kDown);
    const bool gradient_placed =
        input_grad_end_[Index(down_stage + 1, state.input_grads[kDown])] != kUnknown;
    return gradient_placed ? kDown : kUp;
  }

  // The side whose F this rank runs next, or nothing this round.
  std::optional<int32_t> ForwardSide(int32_t rank) const {
    const Rank& state = ranks_[rank];
    if (state.forwards[kUp] >= microbatches_) return std::nullopt;
    if (state.forwards[kUp] >= state.forwards[kDown]) return kDown;
    if (rank == pp_ - 1) return kUp;
    if (forward_end_[Index(StageOf(rank + 1, kUp), state.forwards[kUp])] != kUnknown) return kUp;
    if (state.forwards[kDown] >= microbatches_) return std::nullopt;
    if (rank == 0 || forward_end_[Index(rank - 1, state.forwards[kDown])] != kUnknown) {
      return kDown;
    }
    return std::nullopt;
  }

  bool Round() {
    std::vector<int32_t> sides(static_cast<size_t>(pp_));
    for (int32_t rank = 0; rank < pp_; ++rank) {
      sides[rank] = InputGradSide(rank);
      Rank& state = ranks_[rank];
      const int32_t stage = StageOf(rank, sides[rank]);
      while (state.held + Units(stage).input_grad > Limit(rank)) {
        if (!PutWeightGrad(rank)) return false;
      }
    }
    // Down I ranks back to front (their gradients flow towards rank 0), then up I ranks front to
    // back.
    std::vector<std::pair<int32_t, int32_t>> order;
    for (int32_t rank = pp_ - 1; rank >= 0; --rank) {
      if (sides[rank] == kDown) order.emplace_back(rank, kDown);
    }
    for (int32_t rank = 0; rank < pp_; ++rank) {
      if (sides[rank] == kUp) order.emplace_back(rank, kUp);
    }
    for (const auto& [rank, side] : order) {
      if (ranks_[rank].input_grads[side] >= microbatches_) return false;
      const bool fill = side == kDown || knobs_.fill_before_up_input_grad;
      if (!FillWait(rank, InputGradArrival(rank, side), fill)) return false;
      if (!PutInputGrad(rank, side)) return false;
    }
    for (int32_t rank = 0; rank < pp_; ++rank) {
      const std::optional<int32_t> side = ForwardSide(rank);
      if (!side) continue;
      Rank& state = ranks_[rank];
      while (state.held + Units(StageOf(rank, *side)).forward > Limit(rank)) {
        if (!PutWeightGrad(rank)) return false;
      }
      if (!FillWait(rank, ForwardArrival(rank, *side), knobs_.fill_before_forward)) return false;
      if (!PutForward(rank, *side)) return false;
    }
    return true;
  }

  int32_t pp_;
  int32_t microbatches_;
  const PipelineCosts& costs_;
  VKnobs knobs_;
  const std::vector<int64_t>* allowance_;  // the previous run's idle per rank, or null
  int64_t largest_allowed_ = 0;
  std::vector<Rank> ranks_;
  int64_t largest_idle_ = 0;          // ns, the most any rank has idled so far (idle never falls)
  std::vector<int64_t> forward_end_;  // ns, per (stage, microbatch)
  std::vector<int64_t> input_grad_end_;  // ns, per (stage, microbatch)
  Schedule schedule_;
};

}  // namespace

Result<Schedule> GenerateZbVAuto(const GeneratorParams& params, const PipelineCosts& costs) {
  STAGECRAFT_RETURN_IF_ERROR(CheckVShapeParams(params, "zb-v"));
  const size_t stages = 2 * static_cast<size_t>(params.pp);
  if (costs.stages.size() != stages || costs.activation_p2p.size() + 1 < stages ||
      costs.gradient_p2p.size() + 1 < stages) {
    return Error{"zb-v: internal: needs one stage cost per stage and a p2p time per cut, got " +
                 std::to_string(costs.stages.size()) +
                 " stage costs for pp = " + std::to_string(params.pp)};
  }
  auto handcrafted = GenerateZbV(params);
  if (!handcrafted.ok()) return handcrafted.error();
  // Under rendezvous the handcrafted order runs for m <= p; the greedy one is not checked for it.
  if (costs.links_in_receiver_order) return handcrafted;
  std::optional<TimedOrder> best = TimeOrder(std::move(handcrafted).value(), costs);
  for (const bool fill_up : {true, false}) {
    for (const bool fill_forward : {true, false}) {
      const VKnobs knobs{fill_up, fill_forward};
      std::optional<VOrder> order =
          VGreedy(params, costs, knobs, nullptr).Build(EmptyVSchedule(params, "zb-v"));
      // Rerun with this run's idle times as the allowance while the largest idle time falls
      // (bounded: each rerun is a full build).
      for (int32_t rerun = 0; order && rerun < 8; ++rerun) {
        std::optional<VOrder> again =
            VGreedy(params, costs, knobs, &order->idle).Build(EmptyVSchedule(params, "zb-v"));
        if (!again || again->largest_idle >= order->largest_idle) break;
        order = std::move(again);
      }
      if (order && WithinActivationLimit(order->schedule, costs.stages, 2)) {
        KeepFaster(best, TimeOrder(std::move(order->schedule), costs));
      }
    }
  }
  if (!best) return Error{"zb-v: internal error: the handcrafted order is stuck"};
  return std::move(best->schedule);
}

}  // namespace stagecraft
