// Metrics of one simulated iteration, defined once here and used everywhere (DESIGN.md §4):
//   makespan          last end − first start over all devices
//   busy_d            compute time of device d (F, B, I, W); communication is not busy time
//   bubble_fraction   1 − Σ busy_d / (D · makespan)                          (the headline)
//   bubble_rate_span  max_d 1 − busy_d / span_d, span_d = last end − first start on d
//                     (the Zero-Bubble papers' bubble rate)
//   bubble_overhead   (D · makespan − Σ busy) / Σ busy                        (Megatron's metric)
//   peak_activations  most microbatch-stage activations held at once on d (F until B/I)
//   peak_held         the same held from F until W (or B): the Zero Bubble papers' accounting
//                     in units of M_B with M_W = M_B, what a deferred W keeps
//   state_bytes       shared state moved between ranks per iteration, forward + backward
//   state_exposed     the part of the critical path's transfer time due to shared-state bytes
//   peak_state_bytes  most resident shared state on d; peak_memory_bytes adds activations
//   bubble split      each device's idle time (makespan − busy_d) by what it waited on: the
//                     pipeline (another stage's compute), exposed collectives (TP/CP/EP/DP,
//                     ZeRO/FSDP, optimizer), exposed point-to-point (activations, gradients)
//                     and exposed shared state (state bytes of a transfer, direct and shadow
//                     transfers); the four sum to idle_d exactly (AttributeIdle below)
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

// Idle time by cause (metrics.h header comment). Fractions of device time divide by
// D · makespan, so the four fractions sum to bubble_fraction.
struct BubbleSplit {
  Time pipeline;
  Time exposed_collectives;
  Time exposed_p2p;
  Time exposed_state;
  Time total() const { return pipeline + exposed_collectives + exposed_p2p + exposed_state; }
  BubbleSplit& operator+=(const BubbleSplit& other) {
    pipeline += other.pipeline;
    exposed_collectives += other.exposed_collectives;
    exposed_p2p += other.exposed_p2p;
    exposed_state += other.exposed_state;
    return *this;
  }
  bool operator==(const BubbleSplit&) const = default;
};

struct RankMetrics {
  int32_t rank = 0;
  Time busy;  // compute time
  Time idle;  // makespan − busy
  Time span;  // last compute end − first compute start on this rank
  Time first_start;
  Time last_end;
  int32_t peak_activations = 0;       // chunk activations held at once (F adds, B/I frees)
  int32_t peak_held = 0;              // chunk activations held at once (F adds, B/W frees)
  int64_t peak_activation_bytes = 0;  // weighted: F adds M_B, I adds M_W − M_B, W and B free
  int64_t bytes_sent = 0;             // bytes this rank sent to other ranks
  Time collective;                    // time of its collective stream (TP, EP, DP, optimizer)
  int64_t peak_state_bytes = 0;       // resident shared state (own, received, carried)
  int64_t peak_memory_bytes = 0;      // peak of activations + resident shared state
  BubbleSplit bubble;                 // idle by cause; bubble.total() == idle
  bool operator==(const RankMetrics&) const = default;
};

// One shared-state flow's traffic over the iteration.
struct FlowMetrics {
  int32_t producer_layer = 0;
  StateKind kind = StateKind::kCompressedKv;
  StatePolicy policy = StatePolicy::kPayload;
  int32_t producer_stage = 0;
  std::vector<int32_t> consumer_stages;
  int64_t bytes_forward = 0;   // moved between ranks per iteration (state, or shadow payload)
  int64_t bytes_backward = 0;  // dState
  std::vector<int32_t> resident_stages;  // consumer stages on the producer's rank: no bytes,
                                         // the state stays resident across chunks
  bool operator==(const FlowMetrics&) const = default;
};

struct LinkStateBytes {
  int32_t from = 0;
  int32_t to = 0;
  int64_t bytes = 0;
  bool operator==(const LinkStateBytes&) const = default;
};

struct Metrics {
  Time makespan;
  Time total_busy;
  double bubble_fraction = 0.0;
  double bubble_rate_span = 0.0;
  double bubble_overhead = 0.0;
  BubbleSplit bubble;  // summed over devices; total() == D · makespan − total_busy
  int64_t num_compute_actions = 0;
  int64_t num_transfers = 0;
  int64_t num_collectives = 0;
  int64_t bytes_moved = 0;
  int64_t state_bytes_forward = 0;
  int64_t state_bytes_backward = 0;
  Time state_exposed;
  std::vector<FlowMetrics> flows;           // one per lowered flow, in TaskGraph::states order
  std::vector<LinkStateBytes> state_links;  // links that carried shared state, by (from, to)
  std::vector<RankMetrics> ranks;
  bool operator==(const Metrics&) const = default;

  int64_t state_bytes() const { return state_bytes_forward + state_bytes_backward; }
};

// A split's parts as fractions of device time (D · makespan); zeros for an empty run.
struct BubbleFractions {
  double pipeline = 0;
  double exposed_collectives = 0;
  double exposed_p2p = 0;
  double exposed_state = 0;
};
BubbleFractions BubbleFractionsOf(const Metrics& metrics);

// Metric definitions printed by `--help` and `stagecraft derive`.
const char* MetricDefinitions();

// REQUIRES: the trace finished (no deadlock).
Metrics ComputeMetrics(const Schedule& schedule, const std::vector<StageCost>& stage_costs,
                       const TaskGraph& graph, const Trace& trace);

// Peak activations per rank, counted in program order (a rank's stream is sequential, so program
// order is time order on that rank): count and weighted bytes.
struct ActivationPeak {
  int32_t count = 0;
  int32_t held = 0;  // from F until W (or B)
  int64_t bytes = 0;
};
// Each rank's idle time by cause: the gaps on its compute stream (before its first action,
// between actions, after its last up to the makespan's end) are explained by walking back from
// the action that ended each gap through the dependency that was satisfied last: time a
// collective or transfer ran (or queued for its stream or link) is that communication's, time
// spent waiting on another stage's compute is the pipeline's. A rank's tail after its last
// action is its own collectives' where they run, the pipeline's (waiting for the others) else.
// REQUIRES: the trace finished.
std::vector<BubbleSplit> AttributeIdle(const TaskGraph& graph, const Trace& trace);

std::vector<ActivationPeak> PeakActivations(const Schedule& schedule,
                                            const std::vector<StageCost>& stage_costs);

}  // namespace stagecraft
