// The critical path of a simulated run: the chain of tasks, each starting the moment the one
// before it ended, that ends with the last task. Its transfers are the communication the
// makespan cannot hide.
#pragma once

#include <cstdint>
#include <vector>

#include "core/time.h"
#include "lower/task_graph.h"
#include "sim/simulator.h"

namespace stagecraft {

struct CriticalPath {
  std::vector<uint32_t> tasks;  // first to last
  int64_t compute_actions = 0;
  Time compute_time;
  int64_t transfers = 0;
  Time transfer_time;
  int64_t collectives = 0;  // collective-stream tasks (TP, EP, DP, optimizer) on the path
  Time collective_time;
  Time waiting;  // makespan − compute − transfer − collective time (gaps on the path)
};

// Walks back from the last-ending task: at each step, the predecessor (a dependency, the previous
// action on the same stream, or the previous transfer on the same link) that ended exactly when
// the task started; among several, the one with the lowest task id. REQUIRES: a finished trace.
CriticalPath FindCriticalPath(const TaskGraph& graph, const Trace& trace);

}  // namespace stagecraft
