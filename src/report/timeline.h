// ASCII timeline of a simulated run, for small cases in a terminal: one row per rank, each
// action drawn as its label ("F3", "B0") over the columns it covers, idle time as '.'.
#pragma once

#include <string>

#include "analysis/metrics.h"
#include "lower/task_graph.h"
#include "sim/simulator.h"

namespace stagecraft {

// `max_columns` bounds the width; one column is the largest of (shortest action / 2) and
// makespan / max_columns, so short actions may shrink to their kind letter.
std::string FormatTimeline(const TaskGraph& graph, const Trace& trace, const Metrics& metrics,
                           int max_columns = 160);

}  // namespace stagecraft
