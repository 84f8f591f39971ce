#include "parallel/parallel_common.h"

#include <algorithm>

#include "comm/collective.h"

namespace stagecraft {

Time RingAllReduce(const ClusterSpec& cluster, int32_t ranks, int32_t ranks_per_node,
                   double bytes) {
  return RingTime(cluster, Collective::kAllReduce, ranks, ranks_per_node, bytes);
}

Time RingGather(const ClusterSpec& cluster, int32_t ranks, int32_t ranks_per_node, double bytes) {
  return RingTime(cluster, Collective::kAllGather, ranks, ranks_per_node, bytes);
}

DeviceRates TrainingRates(const Config& config) {
  DeviceRates rates = config.cluster.rates();
  rates.kernels.host_seconds_per_kernel =
      HostSecondsPerKernel(config.parallel.engine, rates.kernels);
  return rates;
}

TransformerRun TransformerRunOf(const Config& config) {
  TransformerRun run;
  run.seq_len = config.model.seq_len;
  run.micro_batch = config.model.micro_batch_size;
  run.tensor_parallel = config.parallel.tp;
  run.context_parallel = config.parallel.cp;
  run.expert_parallel = config.parallel.ep;
  run.sequence_parallel = config.parallel.sequence_parallel;
  run.recompute = config.parallel.recompute;
  run.fp8 = config.parallel.fp8;
  run.fp8_recipe = config.parallel.fp8_recipe;
  run.fp8_weights_gathered = config.parallel.fp8_all_gather;
  if (config.parallel.engine == TrainingEngine::kMegatronLm) {
    run.fp8_weight_casts = 1.0 / std::max(1, config.parallel.microbatches);
  }
  run.fused_kernels = config.parallel.fused_kernels;
  run.cross_entropy = config.parallel.cross_entropy_fusion;
  run.ring_merge = config.parallel.cp_rotate != CpRotate::kNone;
  if (config.parallel.recompute_num_layers > 0 &&
      config.parallel.recompute_method == RecomputeMethod::kUniform) {
    // Megatron's --recompute-method uniform --recompute-num-layers N: every layer, N a checkpoint
    // (a chunk of fewer layers is one group).
    const int32_t per_chunk = std::max(
        1, config.model.transformer.layers / std::max(1, config.parallel.pp * config.parallel.vpp));
    run.recompute_group = std::min(config.parallel.recompute_num_layers, per_chunk);
  } else if (config.parallel.recompute_num_layers > 0) {
    // Megatron's --recompute-method block --recompute-num-layers N: N layers per pipeline chunk.
    const double per_chunk = static_cast<double>(config.model.transformer.layers) /
                             std::max(1, config.parallel.pp * config.parallel.vpp);
    run.recompute_fraction =
        std::min(1.0, static_cast<double>(config.parallel.recompute_num_layers) / per_chunk);
  }
  return run;
}

std::vector<int32_t> HoldingRanks(const Schedule& schedule, const std::vector<int32_t>& ranks,
                                  size_t stage) {
  if (ranks[stage] < 0) return {};
  if (schedule.placement != Placement::kDual) return {ranks[stage]};
  return {ranks[stage], schedule.num_ranks - 1 - ranks[stage]};
}

std::vector<double> RankParams(const Schedule& schedule, const std::vector<double>& stage_params) {
  std::vector<double> params(static_cast<size_t>(schedule.num_ranks), 0.0);
  const std::vector<int32_t> ranks = StageRanks(schedule);
  for (size_t stage = 0; stage < stage_params.size(); ++stage) {
    for (int32_t rank : HoldingRanks(schedule, ranks, stage)) params[rank] += stage_params[stage];
  }
  return params;
}

}  // namespace stagecraft
