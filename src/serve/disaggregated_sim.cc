#include "serve/disaggregated_sim.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace stagecraft {

double KvTransferSeconds(const ReplicaModel& replica, int64_t prompt_tokens) {
  const bool same_node = 2 * replica.shape.gpus_per_replica() <= replica.cluster.devices_per_node;
  const LinkSpec& link = same_node ? replica.cluster.intra_node : replica.cluster.inter_node;
  // The KV the request holds (a sliding window's or CSA2's window KV past the window dropped).
  const double bytes = KvTokensHeld(replica, static_cast<double>(prompt_tokens)) *
                       replica.kv_bytes_per_token_per_gpu;
  return static_cast<double>(link.latency.ns()) * 1e-9 +
         (link.bandwidth_bytes_per_s > 0 ? bytes / link.bandwidth_bytes_per_s : 0);
}

Result<DisaggregatedStats> SimulateDisaggregated(const ReplicaModel& prefill,
                                                 const ReplicaModel& decode,
                                                 const Workload& workload, Routing routing,
                                                 const Slo& slo,
                                                 std::vector<IterationRecord>* decode_iterations) {
  DisaggregatedStats result;
  // Pass 1: the prefill pool, every request to its first token.
  Workload first = workload;
  first.prefill_only = true;
  std::vector<RequestTimes> prefilled;
  auto prefill_run = SimulateServing(prefill, first, routing, slo, nullptr, &prefilled);
  if (!prefill_run.ok()) return prefill_run.error();
  result.prefill = prefill_run.value();
  // The hand-off: requests with more to generate reach the decode pool when their KV has
  // moved, in that order (equal times in arrival order).
  std::vector<int64_t> ready(prefilled.size(), 0);
  std::vector<size_t> order;
  double transfer_sum = 0;
  for (size_t index = 0; index < prefilled.size(); ++index) {
    const double transfer = KvTransferSeconds(prefill, prefilled[index].prompt);
    ready[index] = prefilled[index].first_token_ns + std::llround(transfer * 1e9);
    transfer_sum += transfer;
    result.transfer_max_s = std::max(result.transfer_max_s, transfer);
    if (prefilled[index].output > 1) order.push_back(index);
  }
  result.transfer_mean_s =
      prefilled.empty() ? 0 : transfer_sum / static_cast<double>(prefilled.size());
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ready[a] < ready[b]; });
  std::vector<RequestTimes> combined = prefilled;  // finish = first token for one-token outputs
  int64_t end_ns = 0;
  for (const RequestTimes& request : prefilled) end_ns = std::max(end_ns, request.finish_ns);
  if (!order.empty()) {
    // Pass 2: the decode pool on the hand-offs, each request arriving with its prompt's KV.
    Workload second;
    second.prefilled = true;
    second.seed = workload.seed;
    for (size_t index : order) {
      second.trace.push_back({ready[index], prefilled[index].prompt, prefilled[index].output,
                              prefilled[index].first_token_ns});
    }
    std::vector<RequestTimes> decoded;
    auto decode_run = SimulateServing(decode, second, routing, slo, decode_iterations, &decoded);
    if (!decode_run.ok()) return decode_run.error();
    result.decode = decode_run.value();
    for (size_t rank = 0; rank < order.size(); ++rank) {
      combined[order[rank]].finish_ns = decoded[rank].finish_ns;
      end_ns = std::max(end_ns, decoded[rank].finish_ns);
    }
  }
  ServeStats& stats = result.stats;
  stats = SummarizeRequests(combined, slo, prefill.shape.gpus() + decode.shape.gpus(), end_ns);
  stats.iterations = result.prefill.iterations + result.decode.iterations;
  stats.preemptions = result.prefill.preemptions + result.decode.preemptions;
  // Little's law by construction: the requests' time in the system is their latency.
  stats.in_system_integral_ns = stats.e2e_sum_ns;
  stats.mean_in_system =
      static_cast<double>(stats.e2e_sum_ns) * 1e-9 / std::max(stats.span_s, 1e-9);
  // Every gap after a first token is the decode pool's, the first one counted from the prefill
  // pool's first token (the hand-off's trace rows carry it).
  stats.itl_s = result.decode.itl_s;
  stats.kv_utilization_mean = result.decode.kv_utilization_mean;
  stats.kv_utilization_peak = result.decode.kv_utilization_peak;
  stats.prefix_hit_rate = result.prefill.prefix_hit_rate;
  return result;
}

}  // namespace stagecraft
