#include "parallel/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "parallel/parallel_common.h"
#include "parallel/parallel_plan.h"

namespace stagecraft {

DataParallelGroup DataParallelGroupOf(const Config& config, bool hybrid_shard) {
  const ParallelSpec& parallel = config.parallel;
  DataParallelGroup group;
  group.replicas = parallel.dp;
  group.reducers = parallel.dp * parallel.cp;
  group.per_node = std::max(1, config.cluster.devices_per_node / std::max(1, parallel.tp));
  group.hybrid = hybrid_shard;
  group.shards =
      hybrid_shard ? std::max(1, std::min(group.reducers, group.per_node)) : group.reducers;
  group.ep = parallel.ep;
  return group;
}

Time DenseAndExperts(const ClusterSpec& cluster, Collective kind, int32_t ranks, int32_t per_node,
                     int32_t ep, double dense_bytes, double expert_bytes) {
  return RingTime(cluster, kind, ranks, per_node, dense_bytes) +
         RingTime(cluster, kind, ranks / ep, std::max(1, per_node / ep), expert_bytes);
}

GradBuckets BucketsOf(const ParallelSpec& parallel) {
  if (parallel.grad_buckets == GradBuckets::kNone && parallel.overlap_grad_reduce) {
    return GradBuckets::kMegatron;
  }
  return parallel.grad_buckets;
}

std::vector<std::pair<double, Time>> GradientBuckets(GradBuckets mode, int32_t dp,
                                                     const ClusterSpec& cluster, Collective kind,
                                                     int32_t ranks, int32_t per_node,
                                                     double grad_bytes) {
  std::vector<std::pair<double, Time>> buckets;
  if (mode == GradBuckets::kNone || ranks <= 1 || grad_bytes <= 0) return buckets;
  const double mib = 1024.0 * 1024.0;
  const double regular =
      mode == GradBuckets::kPytorch ? 25 * mib : std::max(4e7, 1e6 * dp) * kGradientBytes;
  double done = 0;
  // The buckets but the first (PyTorch's) and the last are one size: each size is costed once
  // (a 70B model's unsharded gradients make thousands of buckets per layout).
  double costed_size = -1;
  Time costed_time;
  buckets.reserve(static_cast<size_t>(std::ceil(grad_bytes / regular)) + 2);
  while (done < grad_bytes) {
    const double size =
        std::min(grad_bytes - done, mode == GradBuckets::kPytorch && done == 0 ? mib : regular);
    done += size;
    if (size != costed_size) {
      costed_size = size;
      costed_time = RingTime(cluster, kind, ranks, per_node, size);
    }
    buckets.emplace_back(done / grad_bytes, costed_time);
  }
  return buckets;
}

std::vector<std::pair<double, Time>> DenseAndExpertBuckets(
    GradBuckets mode, int32_t dp, const ClusterSpec& cluster, Collective kind, int32_t ranks,
    int32_t per_node, int32_t ep, double dense_bytes, double expert_bytes) {
  std::vector<std::pair<double, Time>> buckets =
      GradientBuckets(mode, dp, cluster, kind, ranks, per_node, dense_bytes);
  for (const auto& bucket : GradientBuckets(mode, dp, cluster, kind, ranks / ep,
                                            std::max(1, per_node / ep), expert_bytes)) {
    buckets.push_back(bucket);
  }
  return buckets;
}

void AddGradientReduce(const ParallelSpec& parallel, const ClusterSpec& cluster,
                       const DataParallelGroup& group, Collective reduce, const StageParams& params,
                       StageCollectives& c) {
  c.dp_reduce = DenseAndExperts(cluster, reduce, group.reducers, group.per_node, group.ep,
                                params.dense * kGradientBytes, params.experts * kGradientBytes);
  c.dp_buckets = DenseAndExpertBuckets(
      BucketsOf(parallel), group.replicas, cluster, reduce, group.reducers, group.per_node,
      group.ep, params.dense * kGradientBytes, params.experts * kGradientBytes);
}

void AddDataParallel(const ParallelSpec& parallel, const ClusterSpec& cluster,
                     const DataParallelGroup& group, const StageParams& params,
                     StageCollectives& c) {
  const Collective reduce =
      parallel.distributed_optimizer ? Collective::kReduceScatter : Collective::kAllReduce;
  AddGradientReduce(parallel, cluster, group, reduce, params, c);
  if (parallel.distributed_optimizer && !parallel.overlap_param_gather) {
    const Time gather =
        DenseAndExperts(cluster, Collective::kAllGather, group.reducers, group.per_node, group.ep,
                        params.dense * 2, params.experts * 2);
    c.dp_reduce += gather;
    if (!c.dp_buckets.empty()) c.dp_buckets.back().second += gather;
  }
}

double AddFullSharding(const ParallelSpec& parallel, const ClusterSpec& cluster,
                       const DataParallelGroup& group, const StageParams& params, bool pipelined,
                       int32_t units, StageCollectives& c) {
  const int32_t per_node = group.hybrid ? group.shards : group.per_node;
  const double dense = params.dense;
  const double experts = params.experts;
  // Under the float8 all-gather only the decoders' dense linears travel in FP8: torchao's
  // convert_to_float8_training swaps nn.Linear modules, and torchtitan's routed experts are
  // grouped-GEMM parameters, not nn.Linear, so they gather in bf16 like the embedding and the head.
  const double linear_dense = parallel.fp8_all_gather ? params.decoders - experts : 0.0;
  const double dense_gathered = (dense - linear_dense) * 2 + linear_dense;
  const double experts_gathered = experts * 2;
  const Time gather = DenseAndExperts(cluster, Collective::kAllGather, group.shards, per_node,
                                      group.ep, dense_gathered, experts_gathered);
  const ReshardAfterForward reshard = parallel.reshard_after_forward;
  const bool keep = reshard == ReshardAfterForward::kNo ||
                    (reshard == ReshardAfterForward::kDefault && pipelined);
  if (keep && pipelined) {
    c.first_gather = gather;
    // FSDP reduces during the backward always: Megatron-sized buckets unless named.
    const GradBuckets mode = parallel.grad_buckets == GradBuckets::kNone ? GradBuckets::kMegatron
                                                                         : parallel.grad_buckets;
    c.dp_buckets = DenseAndExpertBuckets(mode, group.replicas, cluster, Collective::kReduceScatter,
                                         group.shards, per_node, group.ep, dense * kGradientBytes,
                                         experts * kGradientBytes);
  } else {
    c.shard_gather = gather;
    c.shard_gather_backward = !keep;
    c.shard_units = units;
    c.shard_reduce = DenseAndExperts(cluster, Collective::kReduceScatter, group.shards, per_node,
                                     group.ep, dense * kGradientBytes, experts * kGradientBytes);
  }
  if (group.hybrid) {
    c.dp_reduce = RingAllReduce(cluster, group.reducers / group.shards, 1,
                                (dense + experts) / group.shards * kGradientBytes);
  }
  return dense_gathered + experts_gathered;
}

double AddStageDataParallel(const ParallelSpec& parallel, const ClusterSpec& cluster,
                            const DataParallelGroup& group, const StageParams& params,
                            bool pipelined, int32_t units, StageCollectives& c) {
  if (parallel.zero_stage >= 3) {
    return AddFullSharding(parallel, cluster, group, params, pipelined, units, c);
  }
  AddDataParallel(parallel, cluster, group, params, c);
  return 0.0;
}

StateResidency FsdpResidency(const ParallelSpec& parallel, const Schedule& schedule,
                             const std::vector<double>& stage_gathered_bytes) {
  StateResidency residency;
  if (parallel.zero_stage < 3) return residency;
  const bool pipelined = schedule.num_ranks > 1;
  if (!pipelined && parallel.reshard_after_forward != ReshardAfterForward::kNo) return residency;
  residency.gathered_parameter_bytes = RankParams(schedule, stage_gathered_bytes);
  residency.gradients_whole = pipelined;
  return residency;
}

int32_t EffectiveZeroStage(const ParallelSpec& parallel) {
  return std::max(parallel.zero_stage, parallel.distributed_optimizer ? 1 : 0);
}

ModelStateBytes RankModelStates(const ParallelPlan& plan, const ParallelSpec& parallel,
                                size_t rank) {
  if (rank >= plan.rank_params.size()) return {};
  return ResidentModelStates(plan.rank_params[rank], parallel.precision,
                             EffectiveZeroStage(parallel), std::max(1, plan.shard_ranks),
                             plan.residency, rank);
}

Status CheckFloat8AllGather(const Config& config, const ConfigLocations& locations) {
  const ParallelSpec& parallel = config.parallel;
  if (!parallel.fp8_all_gather) return Status::Ok();
  const std::string where = locations.Where("parallel.enable_fsdp_float8_all_gather");
  if (!config.model.is_transformer()) {
    return Error{where +
                 "FSDP's float8 all-gather is modelled for transformer models only; drop it"};
  }
  if (!parallel.fp8) {
    return Error{where +
                 "gathers the float8 linears' weights in FP8, and this run has none; add fp8: "
                 "true or drop it"};
  }
  if (parallel.fp8_recipe != Fp8Recipe::kTensorwise) {
    return Error{where +
                 "needs fp8_recipe tensorwise (torchao gathers float8 weights with one "
                 "scale per tensor; with '" +
                 Fp8RecipeName(parallel.fp8_recipe) +
                 "' torchtitan gathers in bf16): set fp8_recipe: tensorwise or drop it"};
  }
  if (parallel.zero_stage < 3) {
    return Error{where +
                 "changes FSDP's parameter all-gathers, and this run does not shard its "
                 "parameters; add fsdp: full-shard (or zero_stage: 3) or drop it"};
  }
  return Status::Ok();
}

}  // namespace stagecraft
