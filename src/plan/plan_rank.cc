// The planner's ranking (plan/plan_search.h): the exact simulation of the best of the screen,
// through the run library, in rounds.
//
// A layout comes in variants the screen ranks apart but close: a transformer's stage splits
// (even, first/last, torchtitan's weights, a layout string), a layer list's partition x state
// policy (which the screen does not tell apart at all: it leaves out the shared state's
// transfers). Ranked as they come, variants of a few layouts would fill the simulation. The first
// round takes the best `simulate` layouts, each once (its best-screened variant), and a second
// round every other variant of the `variant_layouts` fastest of them, so the variants are still
// ranked by simulation.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "core/progress.h"
#include "plan/plan_search.h"
#include "run/simulate.h"

namespace stagecraft {
namespace {

// What a simulated candidate gives the ranking, as it crosses from a worker.
struct SimulatedFigures {
  bool ok = false;
  Time step;
  double tokens_per_s = 0;
  double mfu = 0;
  double tflops_per_gpu = 0;
  double bubble_pipeline = 0;
  double bubble_exposed = 0;
  double recompute_share = 0;
  MemoryInfo memory;
};

class Ranker {
 public:
  Ranker(const PlanSpec& spec, const std::shared_ptr<const LoadedConfig>& base, WorkSplit& split,
         const Screen& screen, const std::vector<Screened>& fitting, PlanResult& result)
      : spec_(spec),
        base_(base),
        split_(split),
        screen_(screen),
        fitting_(fitting),
        result_(result),
        wanted_(static_cast<size_t>(std::max(1, spec.simulate))),
        tried_(fitting.size(), false) {}

  Result<Ranking> Rank(bool layer_list) {
    const std::vector<size_t> first_round = FirstRound(layer_list);
    for (size_t position : first_round) tried_[position] = true;
    STAGECRAFT_RETURN_IF_ERROR(SimulateRound(first_round));
    STAGECRAFT_RETURN_IF_ERROR(Refill());
    STAGECRAFT_RETURN_IF_ERROR(SimulateRound(SecondRound()));
    std::stable_sort(
        plans_.begin(), plans_.end(),
        [](const PlannedLayout& a, const PlannedLayout& b) { return a.step < b.step; });
    return Ranking{std::move(plans_), first_round.size(), simulated_};
  }

 private:
  const Candidate& CandidateAt(size_t position) const {
    return screen_.legal()[fitting_[position].index];
  }
  std::string LayoutAt(size_t position) const { return CandidateAt(position).LayoutKey(); }

  // The first round's positions in `fitting_`: each schedule's layouts in screen order (one
  // family for a transformer); for a layer list the schedules take turns, best first, so that a
  // schedule the screen overrates (its closed form leaves out the state transfers of deeper
  // interleaving) cannot take every slot. Fills `variants_` with each layout's other positions.
  std::vector<size_t> FirstRound(bool layer_list) {
    std::vector<std::pair<std::string, std::vector<size_t>>> by_schedule;
    for (size_t position = 0; position < fitting_.size(); ++position) {
      const std::string layout = LayoutAt(position);
      const auto found = variants_.find(layout);
      if (found != variants_.end()) {
        found->second.push_back(position);
        continue;
      }
      variants_[layout];
      const std::string schedule = layer_list ? CandidateAt(position).schedule : std::string();
      auto family = std::find_if(by_schedule.begin(), by_schedule.end(),
                                 [&](const auto& one) { return one.first == schedule; });
      if (family == by_schedule.end()) {
        by_schedule.push_back({schedule, {}});
        family = by_schedule.end() - 1;
      }
      family->second.push_back(position);
    }
    std::vector<size_t> first_round;
    for (size_t turn = 0; first_round.size() < wanted_; ++turn) {
      bool taken = false;
      for (const auto& [schedule, positions] : by_schedule) {
        if (turn >= positions.size() || first_round.size() == wanted_) continue;
        first_round.push_back(positions[turn]);
        taken = true;
      }
      if (!taken) break;
    }
    std::sort(first_round.begin(), first_round.end());
    return first_round;
  }

  // Simulates the candidates at `positions` over the split; keeps those that fit.
  Status SimulateRound(const std::vector<size_t>& positions) {
    Progress progress(spec_.progress, "plan: simulating candidates",
                      static_cast<int64_t>(simulated_ + positions.size()));
    auto simulated = MapValues<SimulatedFigures>(
        split_, positions.size(),
        [&](size_t rank) {
          const Candidate& candidate = CandidateAt(positions[rank]);
          auto outcome = SimulateSpec(RunOf(spec_, base_, candidate));
          if (!outcome.ok()) return SimulatedFigures{};
          const PlannedLayout p = PlannedOf(candidate, outcome.value());
          return SimulatedFigures{true,
                                  p.step,
                                  p.tokens_per_s,
                                  p.mfu,
                                  p.tflops_per_gpu,
                                  p.bubble_pipeline,
                                  p.bubble_exposed,
                                  p.recompute_share,
                                  p.memory};
        },
        [&](size_t taken) {
          if (!progress.shown() || taken == 0) return;
          progress.Update(static_cast<int64_t>(simulated_ + taken - 1),
                          CandidateAt(positions[taken - 1]).Describe());
        });
    if (!simulated.ok()) return simulated.error();
    for (size_t rank = 0; rank < positions.size(); ++rank) {
      ++result_.simulated;
      const SimulatedFigures& figures = simulated.value()[rank];
      if (!figures.ok) {
        ++result_.rejected["failed in simulation"];
        continue;
      }
      PlannedLayout plan;
      plan.candidate = CandidateAt(positions[rank]);
      plan.screen_step = fitting_[positions[rank]].step;
      plan.step = figures.step;
      plan.tokens_per_s = figures.tokens_per_s;
      plan.mfu = figures.mfu;
      plan.tflops_per_gpu = figures.tflops_per_gpu;
      plan.bubble_pipeline = figures.bubble_pipeline;
      plan.bubble_exposed = figures.bubble_exposed;
      plan.recompute_share = figures.recompute_share;
      plan.memory = figures.memory;
      if (plan.memory.capacity_known &&
          plan.memory.peak_bytes > Budget(spec_, plan.memory.capacity_bytes)) {
        ++result_.rejected["over memory (simulated)"];
        continue;
      }
      plans_.push_back(plan);
    }
    simulated_ += positions.size();
    return Status::Ok();
  }

  // A layout the simulation finds over memory, or that fails, gives its slot to the next
  // screened layout without a fitting plan (the screen's activations are the schedule's
  // closed-form peak, which the simulated timeline can exceed; another split of the same layout
  // may fit), until `wanted_` fit or kRefillFactor x `wanted_` have been simulated: a plan is
  // never short of a fitting layout the screen ranked close behind.
  Status Refill() {
    constexpr size_t kRefillFactor = 4;
    for (size_t next = 0; plans_.size() < wanted_ && simulated_ < kRefillFactor * wanted_;) {
      std::set<std::string> planned;
      for (const PlannedLayout& plan : plans_) planned.insert(plan.candidate.LayoutKey());
      std::vector<size_t> refill;
      const size_t room = std::min(wanted_ - plans_.size(), kRefillFactor * wanted_ - simulated_);
      for (; next < fitting_.size() && refill.size() < room; ++next) {
        if (tried_[next] || planned.count(LayoutAt(next)) > 0) continue;
        tried_[next] = true;
        planned.insert(LayoutAt(next));
        refill.push_back(next);
      }
      if (refill.empty()) break;
      STAGECRAFT_RETURN_IF_ERROR(SimulateRound(refill));
    }
    return Status::Ok();
  }

  // Every untried variant of the `variant_layouts` fastest simulated layouts.
  std::vector<size_t> SecondRound() {
    const size_t variant_layouts = static_cast<size_t>(std::max(0, spec_.variant_layouts));
    std::vector<PlannedLayout> fastest = plans_;
    std::stable_sort(
        fastest.begin(), fastest.end(),
        [](const PlannedLayout& a, const PlannedLayout& b) { return a.step < b.step; });
    std::vector<size_t> second_round;
    for (size_t rank = 0; rank < std::min(variant_layouts, fastest.size()); ++rank) {
      for (size_t position : variants_[fastest[rank].candidate.LayoutKey()]) {
        if (!tried_[position]) second_round.push_back(position);
      }
    }
    std::sort(second_round.begin(), second_round.end());
    return second_round;
  }

  const PlanSpec& spec_;
  const std::shared_ptr<const LoadedConfig>& base_;
  WorkSplit& split_;
  const Screen& screen_;
  const std::vector<Screened>& fitting_;
  PlanResult& result_;
  const size_t wanted_;
  std::vector<bool> tried_;                              // by position in `fitting_`
  std::map<std::string, std::vector<size_t>> variants_;  // layout -> its other positions
  std::vector<PlannedLayout> plans_;                     // the fitting simulated plans
  size_t simulated_ = 0;                                 // candidates simulated, every round
};

}  // namespace

Result<Ranking> RankBySimulation(const PlanSpec& spec,
                                 const std::shared_ptr<const LoadedConfig>& base, WorkSplit& split,
                                 const Screen& screen, const std::vector<Screened>& fitting,
                                 bool layer_list, PlanResult& result) {
  return Ranker(spec, base, split, screen, fitting, result).Rank(layer_list);
}

}  // namespace stagecraft
