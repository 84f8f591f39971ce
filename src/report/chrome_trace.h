// Chrome / Perfetto trace of a simulated run: a process per device, a thread per stream
// (compute; one send and one receive thread per peer link), ops named "F mb=3 stage=5",
// transfers on the communication threads. Open in ui.perfetto.dev or chrome://tracing.
#pragma once

#include <string>

#include "analysis/memory.h"
#include "lower/task_graph.h"
#include "sim/simulator.h"

namespace stagecraft {

// Deterministic JSON: events sorted by (device, thread, start), times in microseconds with
// three decimals (exact for integer ns).
// With a memory timeline, adds a counter track per rank ("memory": activation and shared-state
// bytes over time).
std::string FormatChromeTrace(const TaskGraph& graph, const Trace& trace,
                              const MemoryTimeline* memory = nullptr);

}  // namespace stagecraft
