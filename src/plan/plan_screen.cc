// The planner's analytic screen (plan/plan_search.h): every legal candidate's step from its
// schedule's closed form on the screened costs (or, for the schedules without one, a compute-only
// run of the generated schedule), and its memory against the device.
#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

#include "analysis/closed_form.h"
#include "core/progress.h"
#include "plan/plan_search.h"
#include "plan/schedule_probe.h"

namespace stagecraft {
namespace {

// What a compute-only probe of a schedule gives the screen.
struct ProbeFigures {
  bool ok = false;
  int64_t makespan_ns = 0;
  int64_t peak_chunks = 0;  // the probe's peak of chunk activations over the ranks
};

// The probes' shapes: a schedule, pp, vpp, m and the F, I, W it runs with.
using ProbeKey = std::tuple<std::string, int32_t, int32_t, int32_t, int64_t, int64_t, int64_t>;

}  // namespace

Screen::Screen(const PlanSpec& spec, std::shared_ptr<const LoadedConfig> base, WorkSplit& split,
               std::vector<Candidate> legal, PlanResult& result)
    : spec_(spec),
      base_(std::move(base)),
      split_(split),
      result_(result),
      legal_(std::move(legal)) {}

Status Screen::ScreenCandidates() {
  STAGECRAFT_RETURN_IF_ERROR(CostNewKeys(0));
  screen_step_.assign(legal_.size(), Time::Nanoseconds(-1));
  for (size_t index = 0; index < legal_.size(); ++index) ScreenOne(index);
  return ProbeWaiting();
}

Status Screen::ScreenDerived(std::vector<Candidate> derived) {
  if (derived.empty()) return Status::Ok();
  const size_t first = legal_.size();
  for (Candidate& candidate : derived) legal_.push_back(std::move(candidate));
  STAGECRAFT_RETURN_IF_ERROR(CostNewKeys(first));
  screen_step_.resize(legal_.size(), Time::Nanoseconds(-1));
  for (size_t index = first; index < legal_.size(); ++index) ScreenOne(index);
  return ProbeWaiting();
}

// One representative per cost key not yet costed, prepared by the workers; the screen then reads
// them in the candidates' order, so the answer does not depend on how the work was split.
Status Screen::CostNewKeys(size_t first_candidate) {
  std::vector<size_t> new_keys;  // candidate indices, the first of each new key
  for (size_t index = first_candidate; index < legal_.size(); ++index) {
    if (key_index_.try_emplace(KeyOf(legal_[index]), representatives_.size()).second) {
      representatives_.push_back(index);
      new_keys.push_back(index);
    }
  }
  Progress progress(spec_.progress, "plan: costing layouts", static_cast<int64_t>(new_keys.size()));
  auto costed = MapValues<Costed>(
      split_, new_keys.size(),
      [&](size_t key) { return Cost(spec_, base_, legal_[new_keys[key]]); },
      [&](size_t taken) { progress.Update(static_cast<int64_t>(taken > 0 ? taken - 1 : 0)); });
  if (!costed.ok()) return costed.error();
  costs_.insert(costs_.end(), costed.value().begin(), costed.value().end());
  return Status::Ok();
}

const Costed* Screen::CostsOf(const Candidate& c) const {
  const auto found = key_index_.find(KeyOf(c));
  return found == key_index_.end() ? nullptr : &costs_[found->second];
}

bool Screen::Fits(const Costed& costed, int64_t chunks, int64_t last_chunks) const {
  const double memory = costed.states + ScreenedActivations(costed, chunks, last_chunks) +
                        static_cast<double>(costed.recompute + costed.reserve);
  return costed.capacity <= 0 || memory <= Budget(spec_, costed.capacity);
}

void Screen::ScreenOne(size_t index) {
  const Candidate& c = legal_[index];
  const Costed& costed = *CostsOf(c);
  if (!costed.ok) {
    ++result_.rejected["refused when prepared (stagecraft simulate says why)"];
    return;
  }
  ++result_.screened;
  ClosedFormInputs inputs;
  inputs.schedule = c.pp == 1 ? "1f1b" : c.schedule;
  inputs.pp = c.pp;
  inputs.vpp = c.vpp;
  inputs.microbatches = c.microbatches;
  inputs.chunk_forward = costed.forward;
  inputs.chunk_backward = costed.backward;
  inputs.chunk_weight_grad = costed.weight_grad;
  if (!HasClosedForm(inputs.schedule)) {
    if (!Fits(costed, 1, 1)) {
      ++result_.rejected["over memory (screen)"];
      return;
    }
    unprobed_.push_back(index);
    return;
  }
  auto form = DeriveClosedForm(inputs);
  if (form.ok()) screen_step_[index] = form.value().makespan + costed.tail;
  const int64_t chunks = ChunksInFlight(c);
  if (!Fits(costed, chunks, LastRankChunks(c, chunks))) {
    ++result_.rejected["over memory (screen)"];
    return;
  }
  if (!form.ok()) {
    ++result_.rejected["no closed form to screen it"];
    return;
  }
  fitting_.push_back({index, screen_step_[index]});
}

Time Screen::SimulatedCutoff() const {
  const size_t keep = static_cast<size_t>(std::max(1, spec_.simulate));
  if (fitting_.size() < keep) return Time::Nanoseconds(std::numeric_limits<int64_t>::max());
  std::vector<Time> steps;
  for (const Screened& one : fitting_) steps.push_back(one.step);
  std::nth_element(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(keep - 1),
                   steps.end());
  return steps[keep - 1];
}

// The schedules with no closed form (zb-1p, zb-2p, zb-v, v-half, v-min): generated and run
// compute-only (ScheduleProbe), once per shape and costs, where they may reach the exact
// simulation. Each rank works m x vpp x (F + B) whatever the order, and the last rank starts
// after the (pp - 1) forwards before it, so a candidate whose bound (those two and the tail)
// already reaches the screen's simulate-th best step is not generated.
Status Screen::ProbeWaiting() {
  if (unprobed_.empty()) return Status::Ok();
  probed_any_ = true;
  const Time cutoff = SimulatedCutoff();
  std::map<ProbeKey, size_t> probe_index;
  std::vector<ProbeKey> keys;
  std::vector<std::pair<size_t, size_t>> probed;  // candidate, key
  for (const size_t index : unprobed_) {
    const Candidate& c = legal_[index];
    const Costed& costed = *CostsOf(c);
    const int64_t work = int64_t{c.microbatches} * c.vpp * costed.backward.ns() +
                         (int64_t{c.microbatches} * c.vpp + c.pp - 1) * costed.forward.ns();
    if (Time::Nanoseconds(work) + costed.tail >= cutoff) {
      ++result_.rejected["its bound is no faster than the screen's best (not generated)"];
      continue;
    }
    const ProbeKey key{c.schedule,
                       c.pp,
                       c.vpp,
                       c.microbatches,
                       costed.forward.ns(),
                       (costed.backward - costed.weight_grad).ns(),
                       costed.weight_grad.ns()};
    const auto [found, added] = probe_index.try_emplace(key, keys.size());
    if (added) keys.push_back(key);
    probed.emplace_back(index, found->second);
  }
  Progress progress(spec_.progress, "plan: probing schedules", static_cast<int64_t>(keys.size()));
  auto outcomes = MapValues<ProbeFigures>(
      split_, keys.size(),
      [&](size_t k) {
        const auto& [name, pp, vpp, m, forward, input_grad, weight_grad] = keys[k];
        auto probe = ProbeSchedule(name, pp, vpp, m, Time::Nanoseconds(forward),
                                   Time::Nanoseconds(input_grad), Time::Nanoseconds(weight_grad));
        if (!probe.ok()) return ProbeFigures{};
        return ProbeFigures{true, probe.value().makespan.ns(), probe.value().peak_chunks};
      },
      [&](size_t taken) {
        if (!progress.shown() || taken == 0) return;
        const auto& key = keys[taken - 1];  // the probe now starting: one can take seconds
        progress.Update(static_cast<int64_t>(taken - 1),
                        std::get<0>(key) + " pp " + std::to_string(std::get<1>(key)) + " m " +
                            std::to_string(std::get<3>(key)));
      });
  if (!outcomes.ok()) return outcomes.error();
  for (const auto& [index, k] : probed) {
    const ProbeFigures& figures = outcomes.value()[k];
    if (!figures.ok) {
      ++result_.rejected["the schedule's generator refuses the shape"];
      continue;
    }
    const Costed& costed = *CostsOf(legal_[index]);
    screen_step_[index] = Time::Nanoseconds(figures.makespan_ns) + costed.tail;
    if (!Fits(costed, figures.peak_chunks, figures.peak_chunks)) {
      ++result_.rejected["over memory (screen)"];
      continue;
    }
    fitting_.push_back({index, screen_step_[index]});
  }
  unprobed_.clear();
  return Status::Ok();
}

std::vector<Screened> Screen::Fitting() const {
  std::vector<Screened> sorted = fitting_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Screened& a, const Screened& b) { return a.step < b.step; });
  return sorted;
}

}  // namespace stagecraft
