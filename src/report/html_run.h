// The parts of a simulated run's HTML report (report/html.h) drawn from the simulation itself:
// the timeline per rank and stream, memory over time per rank against the device, the idle time
// split by cause, and the shared-state flows per cut. The command that writes the report
// (commands/html_report.h) puts them together with the summary, the derivation and the assumptions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/memory.h"
#include "analysis/metrics.h"
#include "lower/task_graph.h"
#include "report/run_info.h"
#include "sim/simulator.h"

namespace stagecraft {

// Up to `max_events` tasks the timeline holds every one; above it each rank's lanes hold
// `bins` time bins (busy share and the busiest category), which is all a screen can show of a
// long run, and keeps a 64-rank, 4,096-microbatch report small and quick to open.
struct TimelineLimits {
  int64_t max_events = 60000;
  int32_t bins = 1200;
};

// The lanes of one rank's row, top to bottom.
const std::vector<std::string>& TimelineLanes();

// A `.timeline` element: a legend, one row per rank (class "timeline-row", data-rank), the data
// as JSON and the tooltip; the page's script draws it. REQUIRES: a finished trace of `graph`.
std::string HtmlTimeline(const TaskGraph& graph, const Trace& trace, Time makespan,
                         const TimelineLimits& limits = {});

// Memory over time per rank (an SVG line per rank): the fixed part (model states and the
// framework reserve, `fixed_bytes[rank]`) plus activations and resident shared state as the
// simulation moves them, against `capacity_bytes` (0 = unknown, no line). Each rank keeps at
// most a few hundred points, the peak of each time bin, so no peak is lost.
std::string HtmlMemoryChart(const MemoryTimeline& memory, const std::vector<double>& fixed_bytes,
                            int64_t capacity_bytes, Time makespan);

// Each rank's time as busy, pipeline bubble and exposed collectives / point-to-point / state
// (stacked bars and a table), with the totals.
std::string HtmlBubbleSplit(const Metrics& metrics);

// What crosses each stage cut (layer-list models) and each shared-state flow's traffic; a line
// saying there is none for models without shared state.
std::string HtmlSharedState(const RunInfo& info, const Metrics& metrics);

}  // namespace stagecraft
