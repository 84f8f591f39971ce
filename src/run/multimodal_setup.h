// The multimodal pieces of a run (config `multimodal:`, issue 6): the vision encoder's work and
// placement and the Engram all-to-alls, checked against the run and added to its lowered graph.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "lower/task_graph.h"
#include "multimodal/engram.h"
#include "multimodal/vision.h"
#include "report/run_info.h"
#include "sim/simulator.h"

namespace stagecraft {

struct PreparedRun;

struct MultimodalPlan {
  bool vision = false;
  VisionWork vision_work;
  bool engram = false;
  EngramTraffic engram_traffic;
  std::vector<int32_t> engram_layers;  // [stage] Engram layers on the stage
  int64_t extra_devices = 0;           // encoder devices outside the pipeline, whole job
};

// Checks `run.config.multimodal` against the model, the layout and the cluster and computes the
// work. Errors name the key; exit 2 in the CLI.
Result<MultimodalPlan> PlanMultimodal(const PreparedRun& run);

// What the pieces did in one simulated run.
struct MultimodalOutcome {
  VisionPlacementStats vision;
  EngramExposure engram;
};

// Adds the planned pieces to `graph` (lowered from run.schedule), Engram first: bubble-fill
// simulates the graph with them to find its gaps.
Result<VisionPlacementStats> ApplyMultimodal(const PreparedRun& run, TaskGraph& graph);

// The run's multimodal facts for the reports (empty when there are none), from its finished
// trace; the Engram traffic's exposed time is measured against the same graph simulated again
// with the Engram all-to-alls taking no time.
MultimodalInfo DescribeMultimodal(const PreparedRun& run, const TaskGraph& graph,
                                  const Trace& trace, const VisionPlacementStats& stats);

}  // namespace stagecraft
