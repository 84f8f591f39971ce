#include "parallel/expert_parallel.h"

#include <algorithm>

#include "comm/collective.h"

namespace stagecraft {

Time ExpertAllToAlls(const ClusterSpec& cluster, int32_t ep, int32_t per_node,
                     double dispatch_bytes, double combine_bytes) {
  return RingTime(cluster, Collective::kAllToAll, ep, per_node, dispatch_bytes) +
         RingTime(cluster, Collective::kAllToAll, ep, per_node, combine_bytes);
}

Time TransformerExpertAllToAlls(const Config& config, const TransformerRun& run) {
  const TransformerSpec& spec = config.model.transformer;
  const ParallelSpec& parallel = config.parallel;
  const ClusterSpec& cluster = config.cluster;
  const int32_t t = parallel.tp;
  const int32_t cp = parallel.cp;
  const double tokens = static_cast<double>(run.seq_len * run.micro_batch) / cp;  // per CP rank
  const double per_token = static_cast<double>(spec.experts_per_token * spec.hidden);
  const double dispatch =
      tokens * per_token * (parallel.precision == TrainingPrecision::kFp8 ? 1.0 : 2.0) / t;
  return ExpertAllToAlls(cluster, parallel.ep, cluster.devices_per_node / std::max(1, t * cp),
                         dispatch, tokens * per_token * 2.0 / t);
}

Time LayerListExpertAllToAlls(const Config& config) {
  const ModelSpec& model = config.model;
  const ClusterSpec& cluster = config.cluster;
  const int32_t t = std::max(1, config.parallel.tp);
  const int32_t cp = config.parallel.cp;
  const double per_token = static_cast<double>(model.dims.experts_per_token) * model.dims.hidden;
  const double rank_tokens = static_cast<double>(model.tokens_per_microbatch()) / cp;
  return ExpertAllToAlls(cluster, config.parallel.ep,
                         std::max(1, cluster.devices_per_node / (cp * t)),
                         rank_tokens * per_token / t, rank_tokens * per_token * 2 / t);
}

}  // namespace stagecraft
