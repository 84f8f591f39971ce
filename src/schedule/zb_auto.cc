// ZB-1p and ZB-2p: automatic zero-bubble schedules (Zero Bubble Pipeline Parallelism, Qi et al.,
// ICLR 2024, §3.3 "Automatic scheduling"), the greedy heuristic without the paper's ILP pass.
// One chunk per rank, loop placement. The generator times the pipeline as it builds it (async
// p2p: a result reaches the neighbouring rank cost_p2p after its producer ends) and, per rank,
// picks the next pass at the moment the rank falls free:
//   1. an I whose output gradient has arrived;
//   2. else an F whose input has arrived, if fewer than `limit` activations are held (an F holds
//      one, counted in M_B units until its W frees it, so the count never exceeds the limit);
//   3. else a pending W (one whose I is done), when the rank would otherwise idle or its memory
//      is at the limit;
//   4. else wait for the next arrival. Left-over W passes run at the end of the rank.
// The paper's binary hyperparameters (§3.3 items 1–2: may a warm-up F delay an I that arrives
// while it runs; may a W fill a gap shorter than W) are searched over, and the schedule with the
// smallest largest span is kept (the paper's bubble rate uses the largest span).
#include <algorithm>
#include <deque>
#include <limits>
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
  int32_t held = 0;  // activations held: F done minus W done
  int64_t first_start = kUnknown;
  int64_t last_end = 0;
  bool waiting = false;  // nothing to do at `now` until the other ranks at `now` have decided
};

struct Candidate {
  Schedule schedule;
  int64_t max_span = kNever;  // ns
  int64_t makespan = kNever;  // ns
};

class GreedyTimer {
 public:
  GreedyTimer(const GeneratorParams& params, const std::vector<StageCost>& stage_costs,
              Time cost_p2p, int32_t limit, Knobs knobs)
      : pp_(params.pp),
        microbatches_(params.microbatches),
        stage_costs_(stage_costs),
        p2p_ns_(cost_p2p.ns()),
        limit_(limit),
        knobs_(knobs),
        ranks_(static_cast<size_t>(pp_)),
        forward_end_(static_cast<size_t>(pp_) * microbatches_, kUnknown),
        input_grad_end_(static_cast<size_t>(pp_) * microbatches_, kUnknown) {}

  Result<Candidate> Run(Schedule schedule) {
    schedule_ = std::move(schedule);
    while (true) {
      int32_t rank = -1;
      for (int32_t candidate = 0; candidate < pp_; ++candidate) {
        const RankState& state = ranks_[candidate];
        if (state.now != kNever &&
            (rank < 0 || std::tie(state.now, state.waiting) <
                             std::tie(ranks_[rank].now, ranks_[rank].waiting))) {
          rank = candidate;
        }
      }
      if (rank < 0) break;
      if (!Decide(rank)) {
        return Error{schedule_.name + ": internal error: the greedy schedule stalled on rank " +
                     std::to_string(rank)};
      }
    }
    Candidate result;
    result.max_span = 0;
    result.makespan = 0;
    for (const RankState& state : ranks_) {
      result.max_span = std::max(result.max_span, state.last_end - state.first_start);
      result.makespan = std::max(result.makespan, state.last_end);
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
    return end == kUnknown ? kUnknown : end + p2p_ns_;
  }
  int64_t InputGradArrival(int32_t rank, int32_t microbatch) const {
    if (rank == pp_ - 1) return forward_end_[Index(rank, microbatch)];
    const int64_t end = input_grad_end_[Index(rank + 1, microbatch)];
    return end == kUnknown ? kUnknown : end + p2p_ns_;
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
    const bool memory_full = state.held >= limit_;
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
    bool others_deciding_now = false;
    for (const RankState& other : ranks_) {
      if (other.now != kNever && other.now > now) next_event = std::min(next_event, other.now);
      if (&other != &state && other.now == now && !other.waiting) others_deciding_now = true;
    }
    if (next_event == kNever) {
      if (!others_deciding_now) return false;
      state.waiting = true;
      return true;
    }
    state.now = next_event;
    state.waiting = false;
    return true;
  }

  bool Place(int32_t rank, ActionKind kind, int32_t microbatch, Time duration) {
    RankState& state = ranks_[rank];
    const int64_t end = state.now + duration.ns();
    if (state.first_start == kUnknown) state.first_start = state.now;
    state.waiting = false;
    state.last_end = end;
    state.now = end;
    schedule_.rank_actions[rank].push_back({StageId(rank), kind, MicrobatchId(microbatch)});
    switch (kind) {
      case ActionKind::kForward:
        forward_end_[Index(rank, microbatch)] = end;
        ++state.next_forward;
        ++state.held;
        break;
      case ActionKind::kInputGrad:
        input_grad_end_[Index(rank, microbatch)] = end;
        ++state.next_input_grad;
        state.pending_weight_grads.push_back(microbatch);
        break;
      default:
        state.pending_weight_grads.pop_front();
        --state.held;
        break;
    }
    if (state.next_forward == microbatches_ && state.next_input_grad == microbatches_ &&
        state.pending_weight_grads.empty()) {
      state.now = kNever;
    }
    return true;
  }

  int32_t pp_;
  int32_t microbatches_;
  const std::vector<StageCost>& stage_costs_;
  int64_t p2p_ns_;
  int32_t limit_;
  Knobs knobs_;
  std::vector<RankState> ranks_;
  std::vector<int64_t> forward_end_;     // ns, per (rank, microbatch)
  std::vector<int64_t> input_grad_end_;  // ns, per (rank, microbatch)
  Schedule schedule_;
};

Result<Schedule> GenerateZbAuto(const GeneratorParams& params,
                                const std::vector<StageCost>& stage_costs, Time cost_p2p,
                                const std::string& name, int32_t limit) {
  STAGECRAFT_RETURN_IF_ERROR(CheckBasicParams(params, name));
  if (params.vpp != 1) {
    return Error{name + ": runs one chunk per rank, got vpp = " + std::to_string(params.vpp) +
                 " (use 'zb-v' for two chunks per rank)"};
  }
  if (stage_costs.size() != static_cast<size_t>(params.pp)) {
    return Error{name + ": needs one stage cost per rank, got " +
                 std::to_string(stage_costs.size()) + " for pp = " + std::to_string(params.pp)};
  }
  Candidate best;
  for (const bool may_delay : {true, false}) {
    for (const bool short_gaps : {true, false}) {
      GreedyTimer timer(params, stage_costs, cost_p2p, limit, Knobs{may_delay, short_gaps});
      auto candidate = timer.Run(EmptyLoopSchedule(params, name));
      if (!candidate.ok()) return candidate.error();
      if (candidate.value().max_span < best.max_span ||
          (candidate.value().max_span == best.max_span &&
           candidate.value().makespan < best.makespan)) {
        best = std::move(candidate).value();
      }
    }
  }
  return std::move(best.schedule);
}

}  // namespace

Result<Schedule> GenerateZb1p(const GeneratorParams& params,
                              const std::vector<StageCost>& stage_costs, Time cost_p2p) {
  return GenerateZbAuto(params, stage_costs, cost_p2p, "zb-1p", params.pp);
}

Result<Schedule> GenerateZb2p(const GeneratorParams& params,
                              const std::vector<StageCost>& stage_costs, Time cost_p2p) {
  return GenerateZbAuto(params, stage_costs, cost_p2p, "zb-2p", 2 * params.pp);
}

}  // namespace stagecraft
