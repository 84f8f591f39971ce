// Simulator: runs a TaskGraph on the discrete-event engine (DESIGN.md §3). Each rank's compute
// stream runs its actions strictly in program order; each directed link carries one transfer at
// a time, first come first served. When nothing can run and work remains, the run stops and the
// Trace carries the deadlock (who waits for whom, and the cycle) instead of hanging.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/event_queue.h"
#include "core/progress.h"
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
// simulators never share state.
class Simulator {
 public:
  // `progress`, when given, is told the tasks finished (core/progress.h).
  explicit Simulator(const TaskGraph& graph, Progress* progress = nullptr);
  Trace Run();

  // Engine callback (RunEvents).
  void OnEvent(const Event& event, EventQueue& queue);

 private:
  void MarkReady(uint32_t task, Time now, EventQueue& queue);
  void Start(uint32_t task, Time now, EventQueue& queue);
  void TryStartStream(int32_t rank, Time now, EventQueue& queue);

  // What the event loop reads per task, packed (16 bytes) for cache locality.
  struct SimTask {
    int64_t duration_ns;
    int32_t resource;  // compute: the rank; transfer: the link; collective: links + rank
    uint8_t transfer;  // 1 for a transfer or a collective (a FIFO resource, not the program);
                       // 2 for a delay (no resource)
  };

  const TaskGraph& graph_;
  Progress* progress_;
  Trace trace_;
  std::vector<SimTask> tasks_;        // [task]
  std::vector<uint32_t> missing_;     // [task] unmet dependencies; 0 = ready
  std::vector<size_t> stream_next_;   // [rank] position of the next action in its program
  std::vector<uint8_t> stream_busy_;  // [rank]
  std::vector<Time> link_free_;       // [link, then rank's collective stream] when it falls free
};

// Convenience: Simulator(graph, progress).Run().
Trace Simulate(const TaskGraph& graph, Progress* progress = nullptr);

}  // namespace stagecraft
