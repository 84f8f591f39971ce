#include "serve/serve.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "model/kv_cache.h"
#include "serve/disaggregated_sim.h"

namespace stagecraft {
namespace {

// The checks of a disaggregated setup that the model's own checks (CheckServeShape) do not
// make: both pools, no --replicas, no EP, and both pools within the cluster.
Status CheckDisaggregated(const ClusterSpec& cluster, const ServeSetup& setup) {
  if (setup.prefill_instances < 1 || setup.decode_instances < 1) {
    return Error{
        "--prefill-instances and --decode-instances: disaggregated serving needs at "
        "least one instance of each (e.g. --prefill-instances 2 --decode-instances 1)"};
  }
  if (setup.shape.replicas != 1) {
    return Error{
        "--replicas with --prefill-instances/--decode-instances: the pools are the "
        "replicas; drop --replicas"};
  }
  if (setup.shape.ep > 1) {
    return Error{
        "--ep with --prefill-instances/--decode-instances: expert parallelism is "
        "modelled for colocated replicas only (the KV hand-off between attention "
        "data-parallel groups is not); drop --ep or the instance flags"};
  }
  if (setup.engine.speculative_tokens > 0) {
    return Error{
        "--speculative-tokens with --prefill-instances/--decode-instances: speculative "
        "decoding is modelled for colocated replicas only (the draft's KV hand-off and the "
        "prefill pool's first proposal are not); drop one"};
  }
  if (setup.workload.client != Workload::Client::kOpen) {
    return Error{std::string(setup.workload.client == Workload::Client::kClosed ? "--concurrency"
                                                                                : "--offline") +
                 " with --prefill-instances/--decode-instances: the clients other than the open "
                 "loop are modelled for colocated replicas only; drop one"};
  }
  if (setup.prefill_instances > 4096 || setup.decode_instances > 4096) {
    return Error{"--prefill-instances/--decode-instances: at most 4096 instances each"};
  }
  // The cluster holds both pools.
  const ServeShape& shape = setup.shape;
  const int64_t gpus =
      shape.gpus_per_replica() * (int64_t{setup.prefill_instances} + setup.decode_instances);
  const int64_t devices = int64_t{cluster.nodes} * cluster.devices_per_node;
  if (cluster.given && gpus > devices) {
    return Error{
        "serve: " + std::to_string(setup.prefill_instances) + " prefill + " +
        std::to_string(setup.decode_instances) + " decode instances of tp " +
        std::to_string(shape.tp) + " x pp " + std::to_string(shape.pp) + " need " +
        std::to_string(gpus) + " GPUs, more than the cluster's " + std::to_string(devices) +
        " (expected a larger --cluster, e.g. " + cluster.device + "x" +
        std::to_string((gpus + cluster.devices_per_node - 1) / cluster.devices_per_node) + ")"};
  }
  return Status::Ok();
}

}  // namespace

DecodePoint LargestDecode(const ReplicaModel& replica, const Workload& workload) {
  DecodePoint point;
  point.context = workload.trace.empty() ? workload.prompt.high + workload.output.high : 0;
  for (const TraceRequest& request : workload.trace) {
    point.context = std::max(point.context, request.prompt + request.output);
  }
  const double held = std::max(1.0, KvTokensHeld(replica, static_cast<double>(point.context)));
  point.batch = std::min<int64_t>(
      replica.engine.max_seqs,
      static_cast<int64_t>(std::floor(static_cast<double>(replica.kv_capacity_tokens) / held)));
  IterationWork work;
  if (replica.csa2) {
    // Each sequence's reads and pairs at its position (AddSequence); the same for every one.
    IterationWork one;
    AddSequence(replica, 1, static_cast<double>(point.context), /*finishes=*/true, one);
    const double batch = static_cast<double>(point.batch);
    work = {.new_tokens = batch,
            .sequences = batch,
            .context_tokens = one.context_tokens * batch,
            .attention_pairs = one.attention_pairs * batch,
            .csa2_core_flops = one.csa2_core_flops * batch,
            .csa2_scoring_flops = one.csa2_scoring_flops * batch,
            .csa2_read_bytes = one.csa2_read_bytes * batch,
            .csa2_index_read_bytes = one.csa2_index_read_bytes * batch};
  } else {
    work.new_tokens = static_cast<double>(point.batch);
    work.sequences = work.new_tokens;
    work.context_tokens =
        work.new_tokens * KvTokensHeld(replica, static_cast<double>(point.context));
    work.attention_pairs = work.context_tokens + work.new_tokens;
  }
  point.cost = IterationSeconds(replica, work);
  return point;
}

Result<ServeOutcome> SimulateDeployment(const ModelSpec& model, const ClusterSpec& cluster,
                                        const ServeSetup& setup) {
  ServeShape shape = setup.shape;
  if (setup.disaggregated()) {
    STAGECRAFT_RETURN_IF_ERROR(CheckDisaggregated(cluster, setup));
    shape.replicas = setup.decode_instances;  // the decode pool is the replica model below
  }
  auto replica = BuildReplicaModel(model, cluster, shape, setup.engine);
  if (!replica.ok()) return replica.error();
  ServeOutcome outcome;
  outcome.placement.shape = shape;
  std::vector<IterationRecord>* iterations = setup.keep_iterations ? &outcome.iterations : nullptr;
  Result<ServeStats> stats = ServeStats{};
  if (setup.disaggregated()) {
    // The two pools: the layout's instances, each pool its own replicas.
    ServeShape prefill_shape = shape;
    prefill_shape.replicas = setup.prefill_instances;
    auto prefill = BuildReplicaModel(model, cluster, prefill_shape, setup.engine);
    if (!prefill.ok()) return prefill.error();
    auto result = SimulateDisaggregated(prefill.value(), replica.value(), setup.workload,
                                        setup.routing, setup.slo, iterations);
    if (!result.ok()) return result.error();
    outcome.placement.prefill_instances = setup.prefill_instances;
    outcome.placement.decode_instances = setup.decode_instances;
    outcome.placement.shape.replicas = setup.prefill_instances + setup.decode_instances;
    outcome.placement.transfer_mean_s = result.value().transfer_mean_s;
    outcome.placement.transfer_max_s = result.value().transfer_max_s;
    stats = result.value().stats;
  } else {
    stats = SimulateServing(replica.value(), setup.workload, setup.routing, setup.slo, iterations,
                            nullptr, setup.progress);
  }
  if (!stats.ok()) return stats.error();
  outcome.stats = std::move(stats).value();
  outcome.decode = LargestDecode(replica.value(), setup.workload);
  outcome.replica = std::move(replica).value();
  return outcome;
}

}  // namespace stagecraft
