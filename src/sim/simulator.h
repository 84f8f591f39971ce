// Simulator: runs a TaskGraph on the discrete-event engine (DESIGN.md §3). Each rank's compute
// stream runs its actions strictly in program order; each directed link carries one transfer at
// a time, first come first served. When nothing can run and work remains, the run stops and the
// Trace carries the deadlock (who waits for whom, and the cycle) instead of hanging.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/progress.h"
#include "core/radix_event_queue.h"
#include "lower/task_graph.h"
#include "lower/wait_for.h"

namespace stagecraft {

struct TaskTiming {
  Time start;
  Time end;
  bool operator==(const TaskTiming&) const = default;
};

struct Trace {
  std::vector<TaskTiming> timings;   // [task]; valid where finished[task]
  std::vector<uint8_t> finished;     // [task]
  std::optional<Deadlock> deadlock;  // set when the run could not finish
  uint64_t events = 0;               // events handled (for throughput figures)
};

// Owns its clock and queue; holds the graph by reference (it must outlive Run()). Two
// simulators never share state. The loop reads only flat arrays indexed by 32-bit task ids
// (structure of arrays, one resource word and one duration per task, the dependencies in the
// graph's compressed rows) and a radix heap over integer time (core/radix_event_queue.h); it
// allocates nothing per task beyond them and the trace, all sized before it starts.
class Simulator {
 public:
  // `progress`, when given, is told the tasks finished (core/progress.h).
  explicit Simulator(const TaskGraph& graph, Progress* progress = nullptr);
  Trace Run();

 private:
  void Finish(uint32_t task, Time now);
  void MarkReady(uint32_t task, Time now);
  void Start(uint32_t task, Time now);
  void TryStartStream(uint32_t rank, Time now);

  const TaskGraph& graph_;
  Progress* progress_;
  Trace trace_;
  RadixEventQueue queue_;
  // [task] the resource in the low 30 bits (compute: the rank; transfer: the link; collective:
  // links + its stream) and what it is in the top two (SimResourceKind in simulator.cc).
  std::vector<uint32_t> resource_;
  std::vector<int64_t> duration_ns_;          // [task]
  std::vector<uint32_t> missing_;             // [task] unmet dependencies; 0 = ready
  std::vector<const uint32_t*> stream_next_;  // [rank] its next action in graph_.programs
  std::vector<const uint32_t*> stream_end_;   // [rank] past its last action
  std::vector<uint8_t> stream_busy_;          // [rank]
  std::vector<Time> link_free_;  // [link, then rank's collective stream] when it falls free
};

// Convenience: Simulator(graph, progress).Run().
Trace Simulate(const TaskGraph& graph, Progress* progress = nullptr);

}  // namespace stagecraft
