// ASCII timeline of a simulated run, for small cases in a terminal: one row per rank, each
// action drawn as its label ("F3", "B0") over the columns it covers, idle time as '.'.
#pragma once

#include <string>

#include "analysis/metrics.h"
#include "lower/task_graph.h"
#include "sim/simulator.h"

namespace stagecraft {

// The columns of a timeline row: a wide terminal less the "rank N |" margin.
inline constexpr int kTimelineColumns = 160;

// `max_columns` bounds the width; one column is the largest of (shortest action / 2) and
// makespan / max_columns, so short actions may shrink to their kind letter.
std::string FormatTimeline(const TaskGraph& graph, const Trace& trace, const Metrics& metrics,
                           int max_columns = kTimelineColumns);

// Why the timeline of `graph` cannot be read in `max_columns`, or "" when it can: a rank whose
// action labels ("F12", "B3&f4", "V0") need more columns than the line has even with no idle
// time between them, which would cut every label to its first letter.
std::string TimelineUnreadableReason(const TaskGraph& graph, int max_columns = kTimelineColumns);

}  // namespace stagecraft
