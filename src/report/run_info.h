// RunInfo: what a report says about the run itself (the inputs), next to the Metrics.
#pragma once

#include <cstdint>
#include <string>

#include "core/time.h"
#include "lower/task_graph.h"

namespace stagecraft {

struct RunInfo {
  std::string config;    // what was simulated: a config file's base name or "bundled: ..."
  std::string model;     // model name
  std::string schedule;  // generator name or "csv"
  int32_t pp = 0;
  int32_t vpp = 0;
  int32_t microbatches = 0;
  P2pMode p2p = P2pMode::kAsync;
  Time cost_p2p;
  bool cluster_given = false;
  Time forward;  // per microbatch per rank
  Time input_grad;
  Time weight_grad;
};

}  // namespace stagecraft
