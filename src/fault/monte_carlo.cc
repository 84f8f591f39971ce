#include "fault/monte_carlo.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <vector>

namespace stagecraft {

namespace {

// Wall time of one run and the failures in it. A renewal process: each failure restarts the
// clock of the next (memoryless for the exponential).
struct RunTally {
  double wall_s = 0;
  int64_t failures = 0;
  double wait_s = 0;
};

// The spares pool of one run: free spares and the times repaired nodes come back.
class SparesPool {
 public:
  explicit SparesPool(const MonteCarloSpec& spec) : spec_(spec), free_(spec.spares) {}

  // A failure at `now` takes one node, or a group with the correlated share (drawn only when
  // there is such a share, so runs without one draw the same numbers). Returns the time the
  // job waits for nodes before it can restart.
  double Replace(double now, SplitMix64& random) {
    if (spec_.spares < 0) return 0;
    int64_t needed = 1;
    if (spec_.correlated_share > 0 && random.NextOpenUnit() < spec_.correlated_share) {
      needed = spec_.correlated_nodes;
    }
    // The failed nodes go to repair; the job takes free spares, else the next repaired nodes
    // (its own among them, so the wait ends).
    for (int64_t node = 0; node < needed; ++node) repairs_.push(now + spec_.repair_s);
    double ready = now;
    Release(ready);
    while (true) {
      const int64_t taken = std::min(free_, needed);
      free_ -= taken;
      needed -= taken;
      if (needed == 0) return ready - now;
      ready = repairs_.top();
      Release(ready);
    }
  }

 private:
  void Release(double time) {
    while (!repairs_.empty() && repairs_.top() <= time) {
      repairs_.pop();
      ++free_;
    }
  }

  const MonteCarloSpec& spec_;
  int64_t free_;
  std::priority_queue<double, std::vector<double>, std::greater<double>> repairs_;
};

RunTally SimulateOneRun(const MonteCarloSpec& spec, double weibull_scale, SplitMix64& random) {
  const double tau = spec.interval_s;
  const double segment = tau + spec.costs.blocking_s;
  const double inverse_shape = 1.0 / spec.weibull_shape;
  RunTally tally;
  SparesPool pool(spec);
  const auto fail = [&]() {
    ++tally.failures;
    const double wait = pool.Replace(tally.wall_s, random);
    tally.wall_s += wait;
    tally.wait_s += wait;
  };
  double work_done = 0;
  bool restarting = false;  // the run starts fresh; after a failure it restarts first
  while (true) {
    double available = weibull_scale * std::pow(-std::log(random.NextOpenUnit()), inverse_shape);
    if (restarting) {
      if (available < spec.costs.restart_s) {  // the restart itself failed
        tally.wall_s += available;
        fail();
        continue;
      }
      tally.wall_s += spec.costs.restart_s;
      available -= spec.costs.restart_s;
    }
    const double work_left = spec.work_s - work_done;
    const double full_segments = std::ceil(work_left / tau) - 1.0;
    const double to_finish =
        full_segments * segment + (work_left - full_segments * tau) + spec.costs.blocking_s;
    if (available >= to_finish) {
      tally.wall_s += to_finish;
      return tally;
    }
    work_done += std::floor(available / segment) * tau;
    tally.wall_s += available;
    fail();
    restarting = true;
  }
}

}  // namespace

MonteCarloResult SimulateFailures(const MonteCarloSpec& spec) {
  SplitMix64 random(spec.seed);
  // Weibull with mean M: scale = M / Gamma(1 + 1/k).
  const double scale = spec.mttf_s / std::tgamma(1.0 + 1.0 / spec.weibull_shape);
  double sum = 0;
  double sum_squares = 0;
  double failures = 0;
  double wait = 0;
  for (int64_t run = 0; run < spec.runs; ++run) {
    const RunTally tally = SimulateOneRun(spec, scale, random);
    const double ettr = spec.work_s / tally.wall_s;
    sum += ettr;
    sum_squares += ettr * ettr;
    failures += static_cast<double>(tally.failures);
    wait += tally.wait_s;
  }
  const auto runs = static_cast<double>(spec.runs);
  MonteCarloResult result;
  result.runs = spec.runs;
  result.mean_ettr = sum / runs;
  result.stddev_ettr =
      std::sqrt(std::max(0.0, sum_squares / runs - result.mean_ettr * result.mean_ettr));
  result.mean_failures = failures / runs;
  result.mean_wait_s = wait / runs;
  return result;
}

double ReplayTraceEttr(const std::vector<double>& failure_times_s, double interval_s,
                       const CheckpointCosts& costs) {
  const double segment = interval_s + costs.blocking_s;
  double now = 0;
  double work = 0;
  bool restarting = false;
  for (const double failure : failure_times_s) {
    double available = failure - now;
    now = failure;
    if (restarting) {
      if (available < costs.restart_s) continue;  // the restart itself failed
      available -= costs.restart_s;
    }
    work += std::floor(available / segment) * interval_s;  // the segment cut short is lost
    restarting = true;
  }
  return work / now;
}

}  // namespace stagecraft
