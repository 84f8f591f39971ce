// The readable summary table and the `--json` object of a simulated run.
#pragma once

#include <string>

#include "analysis/metrics.h"
#include "report/json_writer.h"
#include "report/run_info.h"

namespace stagecraft {

// A run's rate: its seconds per iteration, hardware TFLOP/s per GPU (recomputation included),
// MFU (model FLOPs over time x GPUs x peak) and tokens per second; zeros for a run without
// those facts (world_size 0).
struct Throughput {
  double seconds = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;
  double tokens_per_s = 0;
};
Throughput ThroughputOf(const RunInfo& run, const Metrics& metrics);

// The memory verdict as one line: "fits: rank 0 peaks at 61.20 of 80.00 GiB (...)", "OVER: ...",
// or why it is not known.
std::string FormatMemoryVerdict(const MemoryInfo& memory);
// The "validated" line (the nearest validated runs' error, or why there are none) and the range
// line under it; "" when not given. The same as one JSON object (simulate's and plan's
// `validation`).
std::string ValidationText(const ValidationInfo& validation);
void ValidationJson(JsonWriter& json, const ValidationInfo& validation);

// A few header lines, the headline metrics, then one row per rank.
std::string FormatSummary(const RunInfo& run, const Metrics& metrics);

// One JSON object (doc/json.md): schedule, pp, vpp, microbatches, makespan_ms, bubble_fraction,
// bubble_rate_span, bubble_overhead, ..., ranks[]. Floats with 6 decimals.
std::string FormatMetricsJson(const RunInfo& run, const Metrics& metrics);

}  // namespace stagecraft
