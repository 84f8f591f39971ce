// ZB-1p and ZB-2p: automatic zero-bubble schedules (Zero Bubble Pipeline Parallelism, Qi et al.,
// ICLR 2024, §3.3 "Automatic scheduling"): greedy heuristics without the paper's ILP pass. One
// chunk per rank, loop placement. The best of four kinds of order is kept: ZB-H1 and ZB-H2 where
// they fit the limit, the event-driven greedy below, and the authors' round-by-round heuristic
// (RoundBuilder, further down). The event-driven generator times the pipeline as it builds it
// (async p2p: a result reaches the neighbouring rank cost_p2p after its producer ends) and, per
// rank, picks the next pass at the moment the rank falls free:
//   1. an I whose output gradient has arrived;
//   2. else an F whose input has arrived, if the rank's activation memory stays within the limit
//      k·p·M_B (k = 1 for ZB-1p, 2 for ZB-2p). Memory is weighted as in the paper's App. G: F
//      adds M_B, I adds M_W − M_B, W frees M_W, with M_B and M_W the stage's activation_bytes
//      and weight_grad_bytes; when the model gives no M_B the unit is one activation held from F
//      until its I (M_B = 1, M_W = 0: the peak_activations metric), so the limit is k·p of those;
//   3. else a pending W (one whose I is done), when the rank would otherwise idle or its memory
//      is at the limit;
//   4. else wait for the next arrival. Left-over W passes run at the end of the rank.
// The paper's binary hyperparameters (§3.3 items 1–2: may a warm-up F delay an I that arrives
// while it runs; may a W fill a gap shorter than W) are searched over, and the schedule with the
// smallest largest span is kept (the paper's bubble rate uses the largest span).
#include <algorithm>
#include <deque>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "schedule/generator.h"

namespace stagecraft {
namespace {

constexpr int64_t kUnknown = -1;  // a time not known yet (its producer has not been placed)
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

struct Knobs {
  bool forward_may_delay_input_grad = true;
  bool weight_grad_fills_short_gaps = true;
};

struct RankState {
  int64_t now = 0;  // ns; when the rank next decides, kNever once it has nothing left
  int32_t next_forward = 0;
  int32_t next_input_grad = 0;
  std::deque<int32_t> pending_weight_grads;
  int64_t held = 0;  // activation memory held, in the units of MemoryUnits (F adds M_B, ...)
  int64_t first_start = kUnknown;
  int64_t last_end = 0;
  bool waiting = false;  // nothing to do at `now` until the other ranks at `now` have decided
};

class GreedyTimer {
 public:
  GreedyTimer(const GeneratorParams& params, const std::vector<StageCost>& stage_costs,
              const PipelineCosts& costs, int32_t limit_factor, Knobs knobs)
      : pp_(params.pp),
        microbatches_(params.microbatches),
        stage_costs_(stage_costs),
        costs_(costs),
        limit_factor_(limit_factor),
        knobs_(knobs),
        ranks_(static_cast<size_t>(pp_)),
        forward_end_(static_cast<size_t>(pp_) * microbatches_, kUnknown),
        input_grad_end_(static_cast<size_t>(pp_) * microbatches_, kUnknown) {
    for (int32_t rank = 0; rank < pp_; ++rank) clocks_.insert({0, false, rank});
  }

  Result<TimedOrder> Run(Schedule schedule) {
    schedule_ = std::move(schedule);
    // The rank that decides next: the earliest clock, a rank not waiting before one that is,
    // the lowest rank on a tie.
    while (!clocks_.empty()) {
      const int32_t rank = std::get<2>(*clocks_.begin());
      if (!Decide(rank)) {
        return Error{schedule_.name + ": internal error: the greedy schedule stalled on rank " +
                     std::to_string(rank)};
      }
    }
    TimedOrder result;
    for (const RankState& state : ranks_) {
      result.max_span_ns = std::max(result.max_span_ns, state.last_end - state.first_start);
      result.makespan_ns = std::max(result.makespan_ns, state.last_end);
    }
    result.schedule = std::move(schedule_);
    return result;
  }

 private:
  size_t Index(int32_t rank, int32_t microbatch) const {
    return static_cast<size_t>(rank) * microbatches_ + microbatch;
  }
  int64_t ForwardArrival(int32_t rank, int32_t microbatch) const {
    if (rank == 0) return 0;
    const int64_t end = forward_end_[Index(rank - 1, microbatch)];
    return end == kUnknown ? kUnknown : end + costs_.activation_p2p[rank - 1].ns();
  }
  int64_t InputGradArrival(int32_t rank, int32_t microbatch) const {
    if (rank == pp_ - 1) return forward_end_[Index(rank, microbatch)];
    const int64_t end = input_grad_end_[Index(rank + 1, microbatch)];
    return end == kUnknown ? kUnknown : end + costs_.gradient_p2p[rank].ns();
  }

  // Places one pass on `rank` or moves its clock to the next event; false if it can do neither.
  bool Decide(int32_t rank) {
    RankState& state = ranks_[rank];
    const StageCost& cost = stage_costs_[rank];
    const int64_t now = state.now;
    const int64_t input_grad_at = state.next_input_grad < state.next_forward
                                      ? InputGradArrival(rank, state.next_input_grad)
                                      : kUnknown;
    if (input_grad_at != kUnknown && input_grad_at <= now) {
      return Place(rank, ActionKind::kInputGrad, state.next_input_grad, cost.input_grad);
    }
    const bool memory_full = state.held + Units(rank).forward > Units(rank).limit;
    const int64_t forward_at = state.next_forward < microbatches_ && !memory_full
                                   ? ForwardArrival(rank, state.next_forward)
                                   : kUnknown;
    if (forward_at != kUnknown && forward_at <= now) {
      const bool delays_input_grad =
          input_grad_at != kUnknown && input_grad_at < now + cost.forward.ns();
      if (!delays_input_grad || knobs_.forward_may_delay_input_grad) {
        return Place(rank, ActionKind::kForward, state.next_forward, cost.forward);
      }
    }
    int64_t next_event = kNever;
    for (const int64_t at : {input_grad_at, forward_at}) {
      if (at != kUnknown && at > now) next_event = std::min(next_event, at);
    }
    if (!state.pending_weight_grads.empty()) {
      const bool blocked_by_memory = state.next_forward < microbatches_ && memory_full;
      const bool fits = knobs_.weight_grad_fills_short_gaps || next_event == kNever ||
                        next_event >= now + cost.weight_grad.ns();
      if (blocked_by_memory || fits) {
        return Place(rank, ActionKind::kWeightGrad, state.pending_weight_grads.front(),
                     cost.weight_grad);
      }
    }
    // The next clock of another rank after `now`, and whether another rank still decides at `now`.
    const auto later = clocks_.upper_bound({now, true, std::numeric_limits<int32_t>::max()});
    if (later != clocks_.end()) next_event = std::min(next_event, std::get<0>(*later));
    bool others_deciding_now = false;
    for (auto at = clocks_.lower_bound({now, false, 0});
         at != clocks_.end() && std::get<0>(*at) == now && !std::get<1>(*at); ++at) {
      if (std::get<2>(*at) != rank) {
        others_deciding_now = true;
        break;
      }
    }
    if (next_event == kNever) {
      if (!others_deciding_now) return false;
      SetClock(rank, now, true);
      return true;
    }
    SetClock(rank, next_event, false);
    return true;
  }

  // Moves `rank`'s clock (kNever: it has nothing left) and its place in clocks_.
  void SetClock(int32_t rank, int64_t now, bool waiting) {
    RankState& state = ranks_[rank];
    if (state.now != kNever) clocks_.erase({state.now, state.waiting, rank});
    state.now = now;
    state.waiting = waiting;
    if (now != kNever) clocks_.insert({now, waiting, rank});
  }

  MemoryUnits Units(int32_t rank) const { return UnitsOf(stage_costs_[rank], limit_factor_, pp_); }

  bool Place(int32_t rank, ActionKind kind, int32_t microbatch, Time duration) {
    RankState& state = ranks_[rank];
    const int64_t end = state.now + duration.ns();
    if (state.first_start == kUnknown) state.first_start = state.now;
    state.last_end = end;
    schedule_.rank_actions[rank].push_back({StageId(rank), kind, MicrobatchId(microbatch)});
    switch (kind) {
      case ActionKind::kForward:
        forward_end_[Index(rank, microbatch)] = end;
        ++state.next_forward;
        state.held += Units(rank).forward;
        break;
      case ActionKind::kInputGrad:
        input_grad_end_[Index(rank, microbatch)] = end;
        ++state.next_input_grad;
        state.pending_weight_grads.push_back(microbatch);
        state.held += Units(rank).input_grad;
        break;
      default:
        state.pending_weight_grads.pop_front();
        state.held += Units(rank).weight_grad;
        break;
    }
    const bool finished = state.next_forward == microbatches_ &&
                          state.next_input_grad == microbatches_ &&
                          state.pending_weight_grads.empty();
    SetClock(rank, finished ? kNever : end, false);
    return true;
  }

  int32_t pp_;
  int32_t microbatches_;
  const std::vector<StageCost>& stage_costs_;
  const PipelineCosts& costs_;
  int32_t limit_factor_;
  Knobs knobs_;
  std::vector<RankState> ranks_;
  std::set<std::tuple<int64_t, bool, int32_t>> clocks_;  // (now, waiting, rank), kNever left out
  std::vector<int64_t> forward_end_;                     // ns, per (rank, microbatch)
  std::vector<int64_t> input_grad_end_;                  // ns, per (rank, microbatch)
  Schedule schedule_;
};

// The authors' round-by-round heuristic (§3.3; its decisions as their scheduler makes them:
// sail-sg/zero-bubble-pipeline-parallelism, scheduler/zb.py `manual_order`, commit 39f2c186).
// It builds the order microbatch by microbatch instead of event by event:
//   - warm-up: every rank runs F0, then as many more forwards as fit in memory and (by the
//     knob) either end before the first gradient could arrive or at least start before it;
//     that arrival is estimated from the last rank back, and each rank warms up with fewer
//     forwards than the rank before it;
//   - round i: ranks run one F each (front to back; a rank runs it only if every later rank does,
//     and by the knob a rank two forwards ahead of its successor may skip it to wait for the
//     gradient), then I for microbatch i (back to front). Before each, W passes free memory
//     when the limit needs it and fill the wait for the pass's input: every W that ends
//     before the input arrives, and one more if the rank's idle time stays within the
//     largest idle time of any rank (or always, by the knob);
//   - the remaining W passes run at the end (rank 0 runs them before its last I).
// Only the order is kept: TimeFixedOrder times it as the greedy timer would.
struct RoundKnobs {
  bool warmup_forward_may_end_after_arrival = true;
  bool skip_forward_when_ahead = true;
  bool fill_wait_within_idle_budget = true;
};

class RoundBuilder {
 public:
  RoundBuilder(const GeneratorParams& params, const PipelineCosts& costs, int32_t limit_factor,
               RoundKnobs knobs)
      : pp_(params.pp),
        microbatches_(params.microbatches),
        costs_(costs),
        limit_factor_(limit_factor),
        knobs_(knobs),
        ranks_(static_cast<size_t>(pp_)),
        forward_end_(static_cast<size_t>(pp_) * microbatches_, kUnknown),
        input_grad_end_(static_cast<size_t>(pp_) * microbatches_, kUnknown) {}

  // The order, or nothing when the limit cannot be kept (no W left to free memory) or an input
  // would be needed before its producer is placed (neither happens for uniform stages).
  std::optional<Schedule> Build(Schedule schedule) {
    schedule_ = std::move(schedule);
    if (!WarmUp()) return std::nullopt;
    for (int32_t microbatch = 1; microbatch < microbatches_; ++microbatch) {
      if (!Round(microbatch)) return std::nullopt;
    }
    for (int32_t rank = 0; rank < pp_; ++rank) {
      while (ranks_[rank].weight_grads < microbatches_) {
        if (!Put(rank, ActionKind::kWeightGrad)) return std::nullopt;
      }
    }
    return std::move(schedule_);
  }

 private:
  struct Rank {
    int64_t free = 0;  // ns: when its last placed pass ends
    int64_t idle = 0;  // ns waited since its first F ended
    int64_t held = 0;  // the weighted units of MemoryUnits
    int32_t forwards = 0, input_grads = 0, weight_grads = 0;
  };

  size_t Index(int32_t rank, int32_t microbatch) const {
    return static_cast<size_t>(rank) * microbatches_ + microbatch;
  }
  const StageCost& Cost(int32_t rank) const { return costs_.stages[rank]; }
  MemoryUnits Units(int32_t rank) const { return UnitsOf(Cost(rank), limit_factor_, pp_); }

  // When the pass's input is on `rank`, kUnknown if its producer is not placed yet.
  int64_t Ready(int32_t rank, ActionKind kind, int32_t microbatch) const {
    if (kind == ActionKind::kForward) {
      if (rank == 0) return 0;
      const int64_t end = forward_end_[Index(rank - 1, microbatch)];
      return end == kUnknown ? kUnknown : end + costs_.activation_p2p[rank - 1].ns();
    }
    if (kind == ActionKind::kInputGrad) {
      if (rank == pp_ - 1) return forward_end_[Index(rank, microbatch)];
      const int64_t end = input_grad_end_[Index(rank + 1, microbatch)];
      return end == kUnknown ? kUnknown : end + costs_.gradient_p2p[rank].ns();
    }
    return input_grad_end_[Index(rank, microbatch)];
  }

  bool Put(int32_t rank, ActionKind kind) {
    Rank& state = ranks_[rank];
    int32_t& next = kind == ActionKind::kForward     ? state.forwards
                    : kind == ActionKind::kInputGrad ? state.input_grads
                                                     : state.weight_grads;
    const int32_t microbatch = next;
    const int64_t ready = Ready(rank, kind, microbatch);
    if (ready == kUnknown) return false;
    const int64_t start = std::max(state.free, ready);
    if (state.forwards > 0) state.idle += start - state.free;
    largest_idle_ = std::max(largest_idle_, state.idle);
    const StageCost& cost = Cost(rank);
    const MemoryUnits units = Units(rank);
    switch (kind) {
      case ActionKind::kForward:
        state.free = start + cost.forward.ns();
        forward_end_[Index(rank, microbatch)] = state.free;
        state.held += units.forward;
        break;
      case ActionKind::kInputGrad:
        state.free = start + cost.input_grad.ns();
        input_grad_end_[Index(rank, microbatch)] = state.free;
        state.held += units.input_grad;
        break;
      default:
        state.free = start + cost.weight_grad.ns();
        state.held += units.weight_grad;
        break;
    }
    ++next;
    schedule_.rank_actions[rank].push_back({StageId(rank), kind, MicrobatchId(microbatch)});
    return true;
  }

  int64_t LargestIdle() const { return largest_idle_; }

  // W passes before `kind` on `rank`: those the memory limit needs, then those filling the wait
  // for its input (`arrival`, kUnknown when the rank need not wait for another rank).
  bool WeightGradsBefore(int32_t rank, ActionKind kind, int64_t arrival) {
    Rank& state = ranks_[rank];
    const MemoryUnits units = Units(rank);
    const int64_t adds = kind == ActionKind::kForward ? units.forward : units.input_grad;
    while (state.held + adds > units.limit) {
      if (state.weight_grads >= state.input_grads) return false;
      if (!Put(rank, ActionKind::kWeightGrad)) return false;
    }
    if (arrival == kUnknown) return true;
    const int64_t weight_grad = Cost(rank).weight_grad.ns();
    while (state.weight_grads < state.input_grads && state.free + weight_grad <= arrival) {
      if (!Put(rank, ActionKind::kWeightGrad)) return false;
    }
    if (state.weight_grads < state.input_grads && state.free < arrival) {
      const bool within_budget = arrival - state.free <= LargestIdle() - state.idle;
      if (!within_budget || knobs_.fill_wait_within_idle_budget) {
        if (!Put(rank, ActionKind::kWeightGrad)) return false;
      }
    }
    return true;
  }

  bool WarmUp() {
    for (int32_t rank = 0; rank < pp_; ++rank) {
      if (!Put(rank, ActionKind::kForward)) return false;
    }
    // Extra warm-up forwards, from the last rank back: `gradient_end` is when the rank after
    // this one would end its I0.
    std::vector<int32_t> extra(static_cast<size_t>(pp_), 0);
    int64_t gradient_end = forward_end_[Index(pp_ - 1, 0)] + Cost(pp_ - 1).input_grad.ns();
    for (int32_t rank = pp_ - 2; rank >= 0; --rank) {
      const Rank& state = ranks_[rank];
      const MemoryUnits units = Units(rank);
      const int64_t arrival = gradient_end + costs_.gradient_p2p[rank].ns();
      const int64_t forward = Cost(rank).forward.ns();
      int64_t held = state.held;
      int64_t clock = state.free;
      while (state.forwards + extra[rank] < microbatches_ && held + units.forward <= units.limit) {
        const bool stop = knobs_.warmup_forward_may_end_after_arrival ? clock >= arrival
                                                                      : clock + forward > arrival;
        if (stop) break;
        held += units.forward;
        clock += forward;
        ++extra[rank];
      }
      gradient_end = std::max(clock, arrival) + Cost(rank).input_grad.ns();
    }
    for (int32_t rank = 1; rank < pp_; ++rank) {
      while (extra[rank] > 0 && extra[rank] >= extra[rank - 1] &&
             ranks_[rank].forwards + extra[rank] < microbatches_) {
        --extra[rank];
      }
    }
    for (int32_t rank = 0; rank < pp_; ++rank) {
      for (int32_t i = 0; i < extra[rank]; ++i) {
        if (!Put(rank, ActionKind::kForward)) return false;
      }
    }
    for (int32_t rank = pp_ - 1; rank >= 0; --rank) {
      if (!Put(rank, ActionKind::kInputGrad)) return false;
    }
    return true;
  }

  // Whether `rank` runs a forward in this round, before the later ranks are consulted.
  bool WantsForward(int32_t rank) const {
    const Rank& state = ranks_[rank];
    if (state.forwards >= microbatches_) return false;
    if (!knobs_.skip_forward_when_ahead || rank + 1 >= pp_) return true;
    const Rank& after = ranks_[rank + 1];
    if (state.forwards < after.forwards + 2) return true;
    // The next gradient from the rank after, if it runs its F and I back to back.
    const int64_t gradient_at = after.free + Cost(rank + 1).forward.ns() +
                                Cost(rank + 1).input_grad.ns() + costs_.gradient_p2p[rank].ns();
    if (state.free >= gradient_at) return false;
    const MemoryUnits units = Units(rank);
    int64_t held = state.held + units.forward;
    int64_t freeing = 0;
    for (int32_t w = state.weight_grads; held > units.limit && w < state.input_grads; ++w) {
      freeing += Cost(rank).weight_grad.ns();
      held += units.weight_grad;
    }
    if (state.free + Cost(rank).forward.ns() + freeing <= gradient_at) return true;
    return gradient_at - state.free > LargestIdle() - state.idle;
  }

  bool Round(int32_t microbatch) {
    std::vector<bool> forward(static_cast<size_t>(pp_));
    for (int32_t rank = 0; rank < pp_; ++rank) forward[rank] = WantsForward(rank);
    for (int32_t rank = pp_ - 2; rank >= 0; --rank) {
      forward[rank] = forward[rank] && forward[rank + 1];
    }
    for (int32_t rank = 0; rank < pp_; ++rank) {
      if (!forward[rank]) continue;
      const int64_t arrival =
          rank > 0 ? Ready(rank, ActionKind::kForward, ranks_[rank].forwards) : kUnknown;
      if (rank > 0 && arrival == kUnknown) return false;
      if (!WeightGradsBefore(rank, ActionKind::kForward, arrival)) return false;
      if (!Put(rank, ActionKind::kForward)) return false;
    }
    for (int32_t rank = pp_ - 1; rank >= 0; --rank) {
      if (ranks_[rank].input_grads != microbatch) return false;
      const int64_t arrival =
          rank + 1 < pp_ ? Ready(rank, ActionKind::kInputGrad, microbatch) : kUnknown;
      if (!WeightGradsBefore(rank, ActionKind::kInputGrad, arrival)) return false;
      if (rank == 0 && ranks_[0].forwards == microbatches_) {
        while (ranks_[0].weight_grads < ranks_[0].input_grads) {
          if (!Put(0, ActionKind::kWeightGrad)) return false;
        }
      }
      if (!Put(rank, ActionKind::kInputGrad)) return false;
    }
    return true;
  }

  int32_t pp_;
  int32_t microbatches_;
  const PipelineCosts& costs_;
  int32_t limit_factor_;
  RoundKnobs knobs_;
  std::vector<Rank> ranks_;
  int64_t largest_idle_ = 0;          // ns, the most any rank has idled so far (idle never falls)
  std::vector<int64_t> forward_end_;  // ns, per (rank, microbatch)
  std::vector<int64_t> input_grad_end_;  // ns, per (rank, microbatch)
  Schedule schedule_;
};

}  // namespace

MemoryUnits UnitsOf(const StageCost& cost, int32_t factor, int32_t pp) {
  // Without sizes, M_W = M_B = 1: every activation a W needs is held until that W. It is the
  // bound for any M_W <= M_B (held = (F - I)·M_B + (I - W)·M_W grows with M_W, as I >= W), so a
  // schedule within the limit in these units is within it whatever the model's M_W. A stage with
  // M_B but no M_W (a layer list's derived activations) takes the same bound, M_W = M_B.
  const int64_t m_b = cost.activation_bytes > 0 ? cost.activation_bytes : 1;
  const int64_t m_w = cost.weight_grad_bytes > 0 ? cost.weight_grad_bytes : m_b;
  return {m_b, m_w - m_b, -m_w, static_cast<int64_t>(factor) * pp * m_b};
}

bool WithinActivationLimit(const Schedule& schedule, const std::vector<StageCost>& costs,
                           int32_t factor) {
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    const int64_t limit = UnitsOf(costs[rank], factor, schedule.num_ranks).limit;
    int64_t held = 0;
    for (const Action& action : schedule.rank_actions[rank]) {
      const MemoryUnits units = UnitsOf(costs[action.stage.value()], factor, schedule.num_ranks);
      if (action.kind == ActionKind::kForward) held += units.forward;
      if (action.kind == ActionKind::kInputGrad) held += units.input_grad;
      if (action.kind == ActionKind::kWeightGrad) held += units.weight_grad;
      if (held > limit) return false;
    }
  }
  return true;
}

void KeepFaster(std::optional<TimedOrder>& best, std::optional<TimedOrder> candidate) {
  if (candidate && (!best || std::tie(candidate->max_span_ns, candidate->makespan_ns) <
                                 std::tie(best->max_span_ns, best->makespan_ns))) {
    best = std::move(candidate);
  }
}

std::optional<TimedOrder> TimeOrder(Schedule schedule, const PipelineCosts& pipeline) {
  const std::vector<StageCost>& costs = pipeline.stages;
  const int32_t p = schedule.num_ranks;
  const int32_t stages = schedule.num_stages;
  const int32_t m = schedule.num_microbatches;
  const std::vector<int32_t> stage_rank = StageRanks(schedule);
  // The transfer into stage s from s − 1 (activations) or s + 1 (gradients): none on one rank.
  const auto crosses = [&stage_rank](int32_t from, int32_t to) {
    return stage_rank[from] != stage_rank[to];
  };
  std::vector<int64_t> forward_end(static_cast<size_t>(stages) * m, kUnknown);
  std::vector<int64_t> input_end(static_cast<size_t>(stages) * m, kUnknown);
  std::vector<size_t> next(static_cast<size_t>(p), 0);
  std::vector<int64_t> free_at(static_cast<size_t>(p), 0);
  std::vector<int64_t> first(static_cast<size_t>(p), kUnknown);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int32_t rank = 0; rank < p; ++rank) {
      const auto& program = schedule.rank_actions[rank];
      while (next[rank] < program.size()) {
        const Action& action = program[next[rank]];
        const int32_t stage = action.stage.value();
        const size_t at = static_cast<size_t>(stage) * m + action.microbatch.value();
        int64_t ready = 0;
        Time duration = costs[stage].forward;
        if (action.kind == ActionKind::kForward) {
          if (stage > 0) {
            const int64_t end = forward_end[at - m];
            if (end == kUnknown) break;
            ready = end + (crosses(stage - 1, stage) ? pipeline.activation_p2p[stage - 1].ns() : 0);
          }
        } else if (action.kind == ActionKind::kInputGrad) {
          const bool last = stage + 1 == stages;
          const int64_t end = last ? forward_end[at] : input_end[at + m];
          if (end == kUnknown) break;
          ready =
              end + (!last && crosses(stage + 1, stage) ? pipeline.gradient_p2p[stage].ns() : 0);
          duration = costs[stage].input_grad;
        } else {
          if (input_end[at] == kUnknown) break;
          ready = input_end[at];
          duration = costs[stage].weight_grad;
        }
        const int64_t start = std::max(ready, free_at[rank]);
        const int64_t end = start + duration.ns();
        if (first[rank] == kUnknown) first[rank] = start;
        free_at[rank] = end;
        if (action.kind == ActionKind::kForward) forward_end[at] = end;
        if (action.kind == ActionKind::kInputGrad) input_end[at] = end;
        ++next[rank];
        progress = true;
      }
    }
  }
  TimedOrder result;
  for (int32_t rank = 0; rank < p; ++rank) {
    if (next[rank] < schedule.rank_actions[rank].size()) return std::nullopt;  // stuck
    if (first[rank] == kUnknown) continue;
    result.max_span_ns = std::max(result.max_span_ns, free_at[rank] - first[rank]);
    result.makespan_ns = std::max(result.makespan_ns, free_at[rank]);
  }
  result.schedule = std::move(schedule);
  return result;
}

Status CheckZbAutoParams(const GeneratorParams& params, std::string_view name) {
  return CheckOneChunkParams(params, name, "use 'zb-v' for two chunks per rank");
}

namespace {

Result<Schedule> GenerateZbAuto(const GeneratorParams& params, const PipelineCosts& costs,
                                const std::string& name, int32_t limit_factor) {
  const std::vector<StageCost>& stage_costs = costs.stages;
  STAGECRAFT_RETURN_IF_ERROR(CheckZbAutoParams(params, name));
  if (stage_costs.size() != static_cast<size_t>(params.pp) ||
      costs.activation_p2p.size() + 1 < stage_costs.size() ||
      costs.gradient_p2p.size() + 1 < stage_costs.size()) {
    return Error{name + ": internal: needs one stage cost per rank and a p2p time per cut, got " +
                 std::to_string(stage_costs.size()) +
                 " stage costs for pp = " + std::to_string(params.pp)};
  }
  std::optional<TimedOrder> best;
  // The hand schedules seed the search when they fit the limit: ZB-H1 holds p activations,
  // ZB-H2 2p − 1 (Table 2), so the greedy result is kept only where it beats them.
  for (const GenerateFn hand : {GenerateZbH1, GenerateZbH2}) {
    auto seeded = hand(params);
    if (!seeded.ok()) continue;
    seeded.value().name = name;
    if (!WithinActivationLimit(seeded.value(), stage_costs, limit_factor)) continue;
    KeepFaster(best, TimeOrder(std::move(seeded).value(), costs));
  }
  for (const bool may_delay : {true, false}) {
    for (const bool short_gaps : {true, false}) {
      GreedyTimer timer(params, stage_costs, costs, limit_factor, Knobs{may_delay, short_gaps});
      auto candidate = timer.Run(EmptyLoopSchedule(params, name));
      if (!candidate.ok()) return candidate.error();
      KeepFaster(best, std::move(candidate).value());
    }
  }
  for (const bool may_end_after : {true, false}) {
    for (const bool skip_ahead : {true, false}) {
      for (const bool fill_within_budget : {true, false}) {
        RoundBuilder builder(params, costs, limit_factor,
                             RoundKnobs{may_end_after, skip_ahead, fill_within_budget});
        std::optional<Schedule> order = builder.Build(EmptyLoopSchedule(params, name));
        if (order && WithinActivationLimit(*order, stage_costs, limit_factor)) {
          KeepFaster(best, TimeOrder(std::move(*order), costs));
        }
      }
    }
  }
  if (!best) return Error{name + ": internal error: no order was kept"};
  return std::move(best->schedule);
}

}  // namespace

PipelineCosts UniformPipelineCosts(std::vector<StageCost> stages, Time cost_p2p) {
  PipelineCosts costs;
  const size_t cuts = stages.empty() ? 0 : stages.size() - 1;
  costs.stages = std::move(stages);
  costs.activation_p2p.assign(cuts, cost_p2p);
  costs.gradient_p2p.assign(cuts, cost_p2p);
  return costs;
}

Result<Schedule> GenerateZb1p(const GeneratorParams& params, const PipelineCosts& costs) {
  return GenerateZbAuto(params, costs, "zb-1p", 1);
}

Result<Schedule> GenerateZb2p(const GeneratorParams& params, const PipelineCosts& costs) {
  return GenerateZbAuto(params, costs, "zb-2p", 2);
}

}  // namespace stagecraft
