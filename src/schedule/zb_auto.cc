// ZB-1p and ZB-2p: automatic zero-bubble schedules (Zero Bubble Pipeline Parallelism, Qi et al.,
// ICLR 2024, §3.3 "Automatic scheduling"), the greedy heuristic without the paper's ILP pass.
// One chunk per rank, loop placement. The generator times the pipeline as it builds it (async
// p2p: a result reaches the neighbouring rank cost_p2p after its producer ends) and, per rank,
// picks the next pass at the moment the rank falls free:
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

struct Candidate {
  Schedule schedule;
  int64_t max_span = kNever;  // ns
  int64_t makespan = kNever;  // ns
};

struct MemoryUnits {
  int64_t forward;      // +M_B
  int64_t input_grad;   // M_W − M_B
  int64_t weight_grad;  // −M_W
  int64_t limit;        // k·p·M_B
};

// A stage's weighted memory deltas under the limit factor·p·M_B, or counts of activations (F
// until I) when it has no M_B.
MemoryUnits UnitsOf(const StageCost& cost, int32_t factor, int32_t pp) {
  const int64_t m_b = cost.activation_bytes > 0 ? cost.activation_bytes : 1;
  const int64_t m_w = cost.activation_bytes > 0 ? cost.weight_grad_bytes : 0;
  return {m_b, m_w - m_b, -m_w, static_cast<int64_t>(factor) * pp * m_b};
}

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

  MemoryUnits Units(int32_t rank) const { return UnitsOf(stage_costs_[rank], limit_factor_, pp_); }

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
    if (state.next_forward == microbatches_ && state.next_input_grad == microbatches_ &&
        state.pending_weight_grads.empty()) {
      state.now = kNever;
    }
    return true;
  }

  int32_t pp_;
  int32_t microbatches_;
  const std::vector<StageCost>& stage_costs_;
  const PipelineCosts& costs_;
  int32_t limit_factor_;
  Knobs knobs_;
  std::vector<RankState> ranks_;
  std::vector<int64_t> forward_end_;     // ns, per (rank, microbatch)
  std::vector<int64_t> input_grad_end_;  // ns, per (rank, microbatch)
  Schedule schedule_;
};

// The weighted memory units of MemoryUnits, for a whole schedule: true when no rank's running
// total goes above factor·p·M_B.
bool WithinLimit(const Schedule& schedule, const std::vector<StageCost>& costs, int32_t factor) {
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    const MemoryUnits units = UnitsOf(costs[rank], factor, schedule.num_ranks);
    int64_t held = 0;
    for (const Action& action : schedule.rank_actions[rank]) {
      if (action.kind == ActionKind::kForward) held += units.forward;
      if (action.kind == ActionKind::kInputGrad) held += units.input_grad;
      if (action.kind == ActionKind::kWeightGrad) held += units.weight_grad;
      if (held > units.limit) return false;
    }
  }
  return true;
}

// Times a fixed one-chunk-per-rank order as the greedy timer does (async p2p, cost_p2p on every
// cross-rank edge, each pass as soon as its input is there and its rank is free).
Candidate TimeFixedOrder(Schedule schedule, const PipelineCosts& pipeline) {
  const std::vector<StageCost>& costs = pipeline.stages;
  const int32_t p = schedule.num_ranks;
  const int32_t m = schedule.num_microbatches;
  std::vector<int64_t> forward_end(static_cast<size_t>(p) * m, kUnknown);
  std::vector<int64_t> input_end(static_cast<size_t>(p) * m, kUnknown);
  std::vector<size_t> next(static_cast<size_t>(p), 0);
  std::vector<int64_t> free_at(static_cast<size_t>(p), 0);
  std::vector<int64_t> first(static_cast<size_t>(p), kUnknown);
  Candidate result;
  bool progress = true;
  while (progress) {
    progress = false;
    for (int32_t rank = 0; rank < p; ++rank) {
      const auto& program = schedule.rank_actions[rank];
      while (next[rank] < program.size()) {
        const Action& action = program[next[rank]];
        const size_t at = static_cast<size_t>(rank) * m + action.microbatch.value();
        int64_t ready = 0;
        Time duration = costs[rank].forward;
        if (action.kind == ActionKind::kForward) {
          if (rank > 0) {
            const int64_t end = forward_end[at - m];
            if (end == kUnknown) break;
            ready = end + pipeline.activation_p2p[rank - 1].ns();
          }
        } else if (action.kind == ActionKind::kInputGrad) {
          const int64_t end = rank + 1 < p ? input_end[at + m] : forward_end[at];
          if (end == kUnknown) break;
          ready = end + (rank + 1 < p ? pipeline.gradient_p2p[rank].ns() : 0);
          duration = costs[rank].input_grad;
        } else {
          if (input_end[at] == kUnknown) break;
          ready = input_end[at];
          duration = costs[rank].weight_grad;
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
  result.max_span = 0;
  result.makespan = 0;
  for (int32_t rank = 0; rank < p; ++rank) {
    if (next[rank] < schedule.rank_actions[rank].size()) return Candidate();  // stuck: never kept
    if (first[rank] == kUnknown) continue;
    result.max_span = std::max(result.max_span, free_at[rank] - first[rank]);
    result.makespan = std::max(result.makespan, free_at[rank]);
  }
  result.schedule = std::move(schedule);
  return result;
}

}  // namespace

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
  Candidate best;
  const auto keep = [&best](Candidate candidate) {
    if (candidate.max_span < best.max_span ||
        (candidate.max_span == best.max_span && candidate.makespan < best.makespan)) {
      best = std::move(candidate);
    }
  };
  // The hand schedules seed the search when they fit the limit: ZB-H1 holds p activations,
  // ZB-H2 2p − 1 (Table 2), so the greedy result is kept only where it beats them.
  for (const GenerateFn hand : {GenerateZbH1, GenerateZbH2}) {
    auto seeded = hand(params);
    if (!seeded.ok()) continue;
    seeded.value().name = name;
    if (!WithinLimit(seeded.value(), stage_costs, limit_factor)) continue;
    keep(TimeFixedOrder(std::move(seeded).value(), costs));
  }
  for (const bool may_delay : {true, false}) {
    for (const bool short_gaps : {true, false}) {
      GreedyTimer timer(params, stage_costs, costs, limit_factor, Knobs{may_delay, short_gaps});
      auto candidate = timer.Run(EmptyLoopSchedule(params, name));
      if (!candidate.ok()) return candidate.error();
      keep(std::move(candidate).value());
    }
  }
  return std::move(best.schedule);
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
