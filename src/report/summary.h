// The readable summary table and the `--json` object of a simulated run.
#pragma once

#include <string>

#include "analysis/metrics.h"
#include "report/run_info.h"

namespace stagecraft {

// A few header lines, the headline metrics, then one row per rank.
std::string FormatSummary(const RunInfo& run, const Metrics& metrics);

// One JSON object (doc/json.md): schedule, pp, vpp, microbatches, makespan_ms, bubble_fraction,
// bubble_rate_span, bubble_overhead, ..., ranks[]. Floats with 6 decimals.
std::string FormatMetricsJson(const RunInfo& run, const Metrics& metrics);

}  // namespace stagecraft
