// Prefill/decode disaggregation simulated request by request (DistServe, Zhong et al., OSDI'24:
// prefill and decode instances on separate GPUs). The prefill instances run every request to
// its first token; its KV cache then moves to a decode instance over the cluster's links, each
// GPU of the prefill instance sending its shard to its counterpart; the decode instances take
// the requests as they arrive, prefilled, and decode the rest. The two pools share nothing but
// that hand-off, so the run is exact as two passes of the request simulator: the prefill pool
// on the arrivals, then the decode pool on the transfers' ends.
#pragma once

#include <cstdint>
#include <vector>

#include "core/result.h"
#include "serve/request_sim.h"
#include "serve/step_cost.h"

namespace stagecraft {

// Seconds to move one request's KV cache of `prompt_tokens` from a prefill instance to a decode
// instance of `replica`'s layout: the per-GPU shard over NVLink when both instances fit one
// node, else over the network, plus the link's latency.
double KvTransferSeconds(const ReplicaModel& replica, int64_t prompt_tokens);

struct DisaggregatedStats {
  ServeStats stats;    // the requests end to end: TTFT from the prefill, TPOT and E2E after decode
  ServeStats prefill;  // the prefill pool's own run
  ServeStats decode;   // the decode pool's own run (its KV use is the answer's)
  double transfer_mean_s = 0;
  double transfer_max_s = 0;
};

// `prefill` and `decode` are the two pools (their shape's replicas = the instances of each).
// `decode_iterations`, when given, receives the decode pool's iterations.
Result<DisaggregatedStats> SimulateDisaggregated(
    const ReplicaModel& prefill, const ReplicaModel& decode, const Workload& workload,
    Routing routing, const Slo& slo, std::vector<IterationRecord>* decode_iterations = nullptr);

}  // namespace stagecraft
