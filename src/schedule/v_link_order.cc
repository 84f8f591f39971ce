// Link-order alignment for V schedules: reorders each rank's program so that every link between
// neighbouring ranks carries its messages in the order the receiver takes them, which strict
// rendezvous point-to-point (NCCL's in-order matching of a link's k-th send with its k-th
// receive) needs.
//
// On a V the link r → r + 1 carries the down-F activations and the up-I gradients, and r + 1 → r
// the up-F activations and the down-I gradients. Each stream is in microbatch order at both ends,
// so every link agrees iff all ranks interleave their down F with their up I (the "down" class)
// in one common order, and their up F with their down I (the "up" class) in another. The pass
// takes the down class's order from one rank and the up class's from another, and lists every
// rank again in unit time (each F, I, W costs 1, as the reference generators count): at each step
// a rank runs, of the next pass of each class order and its pending W passes, a ready one (inputs
// done, not before the pass's unit-cost start in the given schedule, an F only while the rank
// holds fewer chunk activations than the given schedule's peak on that rank, F until W), F and
// I before W, then the earliest in the given schedule. So W passes fill the free slots, no pass
// is listed before its start in the given schedule, and no rank holds more activations than
// there. Used by v-half (v_half.cc); zb-v keeps its published order (runtime-only).
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "schedule/generator.h"

namespace stagecraft {
namespace {

constexpr int64_t kNotRun = std::numeric_limits<int64_t>::max();

enum LinkClass : int { kDownClass, kUpClass, kNoLink };

LinkClass ClassOf(const Action& action, const VStages& stages) {
  if (action.kind == ActionKind::kWeightGrad) return kNoLink;
  const bool forward = action.kind == ActionKind::kForward;
  return (action.stage == stages.down) == forward ? kDownClass : kUpClass;
}

// The inputs of `action` in a V schedule of F, I, W passes: F after the previous stage's F, I
// after its F and the next stage's I, W after its I.
template <typename Visit>
void VisitInputs(const Schedule& schedule, const Action& action, Visit visit) {
  const StageId stage = action.stage;
  if (action.kind == ActionKind::kForward && stage.value() > 0) {
    visit(Action{StageId(stage.value() - 1), ActionKind::kForward, action.microbatch});
  }
  if (action.kind == ActionKind::kInputGrad) {
    visit(Action{stage, ActionKind::kForward, action.microbatch});
    if (stage.value() + 1 < schedule.num_stages) {
      visit(Action{StageId(stage.value() + 1), ActionKind::kInputGrad, action.microbatch});
    }
  }
  if (action.kind == ActionKind::kWeightGrad) {
    visit(Action{stage, ActionKind::kInputGrad, action.microbatch});
  }
}

// Most chunk activations a rank's program holds at once, from F until W.
int64_t PeakUntilWeightGrad(const std::vector<Action>& program) {
  int64_t held = 0;
  int64_t peak = 0;
  for (const Action& action : program) {
    if (action.kind == ActionKind::kForward) ++held;
    if (action.kind == ActionKind::kWeightGrad) --held;
    peak = std::max(peak, held);
  }
  return peak;
}

// One rank's state while it is listed again.
struct RankState {
  VStages stages;
  std::array<size_t, 2> next_in_class = {0, 0};  // position in each class order
  std::vector<Action> pending_weight_grads;      // W passes whose I has run
  int64_t held = 0;                              // chunk activations, F until W
  int64_t cap = 0;                               // the given schedule's peak on this rank
};

// The listing of AlignVLinkOrders: the given schedule's unit-cost starts, the two class orders
// and every rank's state, and the end of each pass listed so far.
class Relisting {
 public:
  Relisting(const Schedule& schedule, std::vector<int64_t> reference,
            std::array<std::vector<Action>, 2> order)
      : schedule_(schedule),
        reference_(std::move(reference)),
        order_(std::move(order)),
        end_(ActionSlotCount(schedule), kNotRun),
        ranks_(schedule.num_ranks) {
    for (int32_t rank = 0; rank < schedule.num_ranks; ++rank) {
      ranks_[rank].stages = VStagesOfRank(rank, schedule.num_ranks);
      ranks_[rank].cap = PeakUntilWeightGrad(schedule.rank_actions[rank]);
    }
  }

  // What `rank` runs at `now`: of its next pass in each class order and its pending W passes,
  // the ready ones (inputs ended, not before the reference start, an F only under the cap),
  // F and I before W, then the earliest reference start.
  std::optional<Action> Choose(int32_t rank, int64_t now) const {
    const RankState& state = ranks_[rank];
    std::optional<Action> chosen;
    std::array<int64_t, 2> best = {2, kNotRun};  // (is a W, reference start), smaller first
    const auto consider = [&](const Action& action) {
      if (action.kind == ActionKind::kForward && state.held >= state.cap) return;
      const int64_t start = reference_[ActionSlot(schedule_, action)];
      bool ready = start <= now;
      VisitInputs(schedule_, action, [&](const Action& input) {
        ready = ready && end_[ActionSlot(schedule_, input)] <= now;
      });
      const std::array<int64_t, 2> key = {action.kind == ActionKind::kWeightGrad ? 1 : 0, start};
      if (ready && key < best) {
        best = key;
        chosen = action;
      }
    };
    for (const int link_class : {kDownClass, kUpClass}) {
      const size_t next = state.next_in_class[link_class];
      if (next < order_[link_class].size()) {
        consider(OnRank(order_[link_class][next], state.stages, link_class));
      }
    }
    for (const Action& weight_grad : state.pending_weight_grads) consider(weight_grad);
    return chosen;
  }

  // `rank` runs `action` from `now` to now + 1.
  void Run(int32_t rank, const Action& action, int64_t now) {
    RankState& state = ranks_[rank];
    end_[ActionSlot(schedule_, action)] = now + 1;
    const LinkClass link_class = ClassOf(action, state.stages);
    if (link_class != kNoLink) ++state.next_in_class[link_class];
    if (action.kind == ActionKind::kForward) ++state.held;
    if (action.kind == ActionKind::kInputGrad) {
      state.pending_weight_grads.push_back(
          {action.stage, ActionKind::kWeightGrad, action.microbatch});
    }
    if (action.kind == ActionKind::kWeightGrad) {
      --state.held;
      auto& pending = state.pending_weight_grads;
      pending.erase(std::find(pending.begin(), pending.end(), action));
    }
  }

 private:
  // A class order's pass as a rank with `stages` runs it: same kind and microbatch, own stage.
  static Action OnRank(const Action& action, const VStages& stages, int link_class) {
    const bool forward = action.kind == ActionKind::kForward;
    const StageId stage = (link_class == kDownClass) == forward ? stages.down : stages.up;
    return Action{stage, action.kind, action.microbatch};
  }

  const Schedule& schedule_;
  std::vector<int64_t> reference_;
  std::array<std::vector<Action>, 2> order_;
  std::vector<int64_t> end_;
  std::vector<RankState> ranks_;
};

}  // namespace

std::vector<int64_t> UnitCostStarts(const Schedule& schedule) {
  std::vector<int64_t> end(ActionSlotCount(schedule), kNotRun);
  std::vector<int64_t> start(ActionSlotCount(schedule), kNotRun);
  std::vector<size_t> next(schedule.rank_actions.size(), 0);
  std::vector<int64_t> clock(schedule.rank_actions.size(), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
      const std::vector<Action>& program = schedule.rank_actions[rank];
      for (; next[rank] < program.size(); ++next[rank]) {
        const Action& action = program[next[rank]];
        int64_t ready = clock[rank];
        VisitInputs(schedule, action, [&](const Action& input) {
          ready = std::max(ready, end[ActionSlot(schedule, input)]);
        });
        if (ready == kNotRun) break;
        start[ActionSlot(schedule, action)] = ready;
        end[ActionSlot(schedule, action)] = ready + 1;
        clock[rank] = ready + 1;
        progress = true;
      }
    }
  }
  for (size_t rank = 0; rank < next.size(); ++rank) {
    if (next[rank] < schedule.rank_actions[rank].size()) return {};
  }
  return start;
}

std::optional<Schedule> AlignVLinkOrders(const Schedule& schedule, int32_t down_class_rank,
                                         int32_t up_class_rank) {
  std::vector<int64_t> reference = UnitCostStarts(schedule);
  if (reference.empty()) return std::nullopt;
  int64_t last_reference = 0;
  for (const int64_t start : reference) {
    if (start != kNotRun) last_reference = std::max(last_reference, start);
  }
  std::array<std::vector<Action>, 2> order;
  for (const int link_class : {kDownClass, kUpClass}) {
    const int32_t rank = link_class == kDownClass ? down_class_rank : up_class_rank;
    const VStages stages = VStagesOfRank(rank, schedule.num_ranks);
    for (const Action& action : schedule.rank_actions[rank]) {
      if (ClassOf(action, stages) == link_class) order[link_class].push_back(action);
    }
  }
  Relisting relisting(schedule, std::move(reference), std::move(order));
  Schedule aligned = schedule;
  for (auto& program : aligned.rank_actions) program.clear();
  size_t remaining = schedule.num_actions();
  for (int64_t now = 0; remaining > 0; ++now) {
    std::vector<std::optional<Action>> chosen(schedule.num_ranks);
    for (int32_t rank = 0; rank < schedule.num_ranks; ++rank)
      chosen[rank] = relisting.Choose(rank, now);
    bool ran = false;
    for (int32_t rank = 0; rank < schedule.num_ranks; ++rank) {
      if (!chosen[rank]) continue;
      relisting.Run(rank, *chosen[rank], now);
      aligned.rank_actions[rank].push_back(*chosen[rank]);
      --remaining;
      ran = true;
    }
    // Past the given schedule's last start nothing new becomes allowed: a step where no rank
    // runs means none ever will (the class orders and the caps block each other).
    if (!ran && now > last_reference) return std::nullopt;
  }
  return aligned;
}

}  // namespace stagecraft
