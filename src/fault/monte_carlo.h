// A seeded, reproducible Monte Carlo of a whole training run under failures: the run of
// `work_s` seconds of training checkpoints every `interval_s` (blocking delta), a failure loses
// the work since the last checkpoint and costs a restart R (which a failure can interrupt too).
// With exponential times between failures its mean converges to the exact model
// (checkpoint_interval.h); Weibull times (shape k < 1: infant mortality) show what the model
// misses. The project's generator (core/splitmix.h), no std:: distributions: the same seed gives
// the same numbers on every platform.
#pragma once

#include <cstdint>
#include <vector>

#include "core/splitmix.h"
#include "fault/checkpoint_interval.h"

namespace stagecraft {

struct MonteCarloSpec {
  int64_t runs = 10000;        // simulated runs
  uint64_t seed = 1;           // the generator's seed
  double work_s = 0;           // training time the run needs, failure-free
  double interval_s = 0;       // tau
  CheckpointCosts costs;       // delta and R (the persist runs in the background)
  double mttf_s = 0;           // M
  double weibull_shape = 1.0;  // k of the times between failures; 1 = exponential
  // The spares pool: a failed node is replaced by a hot spare when one is free, else the job
  // waits for a repaired node. spares < 0: always a spare (the exact model's assumption).
  int64_t spares = -1;
  double repair_s = 0;           // a failed node is back in the pool after this
  double correlated_share = 0;   // share of failures that take down a group of nodes
  int64_t correlated_nodes = 1;  // nodes such a failure takes (a rack, a switch's nodes)
};

struct MonteCarloResult {
  int64_t runs = 0;
  double mean_ettr = 0;      // mean over the runs of work / wall time
  double stddev_ettr = 0;    // spread between runs
  double mean_failures = 0;  // failures per run
  double mean_wait_s = 0;    // per run: waiting for repaired nodes when no spare was free
};

// REQUIRES: runs >= 1, work_s, interval_s and mttf_s > 0, weibull_shape > 0, repair_s >= 0,
// correlated_share in [0, 1], correlated_nodes >= 1.
MonteCarloResult SimulateFailures(const MonteCarloSpec& spec);

// Replays an observed failure trace (failure times in seconds from the job's start, increasing):
// the work done by the last failure over the time to it, with the same checkpoints and restarts
// as the Monte Carlo. REQUIRES: times not empty, increasing, > 0; interval_s > 0.
double ReplayTraceEttr(const std::vector<double>& failure_times_s, double interval_s,
                       const CheckpointCosts& costs);

}  // namespace stagecraft
