// `stagecraft serve` as a library call (doc/serving.md): one serving deployment of a model (tp x
// pp GPUs per replica, replicas behind a router, or disaggregated prefill and decode pools) under
// a workload, sized by the step-cost model (step_cost.h) and run through the request simulator
// (request_sim.h). Typed values in and out; the command's flags and text are
// commands/serve_command.h's. Entry file of the serve module.
#pragma once

#include <cstdint>
#include <vector>

#include "core/progress.h"
#include "core/result.h"
#include "hardware/cluster_spec.h"
#include "model/model_spec.h"
#include "serve/request_sim.h"
#include "serve/step_cost.h"

namespace stagecraft {

// How the GPUs are placed: colocated replicas, or prefill and decode pools.
struct ServePlacement {
  ServeShape shape;               // per instance tp x pp; replicas = every instance of both pools
  int32_t prefill_instances = 0;  // 0: colocated
  int32_t decode_instances = 0;
  double transfer_mean_s = 0;  // disaggregated: a prompt's KV from prefill to decode GPUs
  double transfer_max_s = 0;
  bool disaggregated() const { return prefill_instances > 0; }
};

// One deployment to simulate.
struct ServeSetup {
  // The layout of one replica and, colocated, the replicas behind the router.
  ServeShape shape;
  // Disaggregated prefill and decode pools of instances of shape's tp x pp (serve/
  // disaggregated_sim.h); 0 and 0 = colocated replicas.
  int32_t prefill_instances = 0;
  int32_t decode_instances = 0;
  Workload workload;
  Routing routing = Routing::kRoundRobin;
  Slo slo;
  EngineOptions engine;
  bool keep_iterations = false;  // fill ServeOutcome::iterations (the trace and the report)
  ProgressSink progress;         // told the finished requests (colocated runs); nullptr: none
  bool disaggregated() const { return prefill_instances > 0 || decode_instances > 0; }
};

// The decode step of the largest batch of the workload's longest requests that the replica's
// KV cache (and max_seqs) holds.
struct DecodePoint {
  int64_t batch = 0;
  int64_t context = 0;
  IterationCost cost;
};

struct ServeOutcome {
  ReplicaModel replica;  // a colocated replica, or the decode pool's
  ServePlacement placement;
  ServeStats stats;
  DecodePoint decode;
  std::vector<IterationRecord> iterations;  // with keep_iterations, in start order
};

// Checks the setup against the model and the cluster (errors name the flag that sets the value
// and what would work), builds the replica model and simulates the requests.
Result<ServeOutcome> SimulateDeployment(const ModelSpec& model, const ClusterSpec& cluster,
                                        const ServeSetup& setup);

DecodePoint LargestDecode(const ReplicaModel& replica, const Workload& workload);

}  // namespace stagecraft
