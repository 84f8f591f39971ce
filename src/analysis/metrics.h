// Metrics of one simulated iteration, defined once here and used everywhere (DESIGN.md §4):
//   makespan          last end − first start over all devices
//   busy_d            compute time of device d (F, B, I, W); communication is not busy time
//   bubble_fraction   1 − Σ busy_d / (D · makespan)                          (the headline)
//   bubble_rate_span  max_d 1 − busy_d / span_d, span_d = last end − first start on d
//                     (the Zero-Bubble papers' bubble rate)
//   bubble_overhead   (D · makespan − Σ busy) / Σ busy                        (Megatron's metric)
//   peak_activations  most microbatch-stage activations held at once on d (F until B/I)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/time.h"
#include "lower/task_graph.h"
#include "model/model_spec.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace stagecraft {

struct RankMetrics {
  int32_t rank = 0;
  Time busy;  // compute time
  Time idle;  // makespan − busy
  Time span;  // last compute end − first compute start on this rank
  Time first_start;
  Time last_end;
  int32_t peak_activations = 0;       // chunk activations held at once (F adds, B/I frees)
  int64_t peak_activation_bytes = 0;  // weighted: F adds M_B, I adds M_W − M_B, W and B free
  int64_t bytes_sent = 0;             // bytes this rank sent to other ranks
  bool operator==(const RankMetrics&) const = default;
};

struct Metrics {
  Time makespan;
  Time total_busy;
  double bubble_fraction = 0.0;
  double bubble_rate_span = 0.0;
  double bubble_overhead = 0.0;
  int64_t num_compute_actions = 0;
  int64_t num_transfers = 0;
  int64_t bytes_moved = 0;
  std::vector<RankMetrics> ranks;
  bool operator==(const Metrics&) const = default;
};

// Metric definitions printed by `--help` and `stagecraft derive`.
const char* MetricDefinitions();

// REQUIRES: the trace finished (no deadlock).
Metrics ComputeMetrics(const Schedule& schedule, const std::vector<StageCost>& stage_costs,
                       const TaskGraph& graph, const Trace& trace);

// Peak activations per rank, counted in program order (a rank's stream is sequential, so program
// order is time order on that rank): count and weighted bytes.
struct ActivationPeak {
  int32_t count = 0;
  int64_t bytes = 0;
};
std::vector<ActivationPeak> PeakActivations(const Schedule& schedule,
                                            const std::vector<StageCost>& stage_costs);

}  // namespace stagecraft
