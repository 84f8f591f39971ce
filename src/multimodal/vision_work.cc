// The vision encoder's work per microbatch (images drawn from the config's distribution, the
// encoder's FLOPs and states, the busiest context-parallel rank's share) and the checks of a
// vision section against the cluster (multimodal/vision.h). Where the work runs is vision.cc's.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/layer_costs.h"
#include "multimodal/image_sharding.h"
#include "multimodal/vision.h"

namespace stagecraft {

namespace {

// The busiest CP rank's share of a microbatch's encoder FLOPs, each sample's images spread by
// `balanced` sharding: Σ over samples of the busiest rank's FLOPs / Σ of all FLOPs.
double BusiestShare(const VisionSpec& spec, const std::vector<int32_t>& tokens, int64_t seq_len,
                    int32_t cp) {
  double busiest = 0;
  double total = 0;
  const auto per_sample = static_cast<size_t>(spec.images_per_sample);
  for (size_t begin = 0; begin < tokens.size(); begin += per_sample) {
    ImageSample sample;
    sample.seq_len = seq_len;
    sample.cp = cp;
    sample.encoder =
        VisionEncoderShape{spec.layers, spec.hidden, spec.mlp, spec.unshuffle * spec.unshuffle};
    sample.image_tokens.assign(
        tokens.begin() + static_cast<std::ptrdiff_t>(begin),
        tokens.begin() + static_cast<std::ptrdiff_t>(std::min(tokens.size(), begin + per_sample)));
    const ImageShardingPlan plan = ShardImages(sample, ImageSharding::kBalanced);
    double most = 0;
    for (const RankImageLoad& rank : plan.ranks) {
      most = std::max(most, rank.flops);
      total += rank.flops;
    }
    busiest += most;
  }
  return total > 0 ? busiest / total : 1.0;
}

}  // namespace

VisionWork ComputeVisionWork(const VisionSpec& spec, int32_t microbatches, int32_t micro_batch_size,
                             int64_t llm_hidden, double flops_per_s, int64_t seq_len, int32_t cp) {
  VisionWork work;
  const int64_t group = static_cast<int64_t>(spec.unshuffle) * spec.unshuffle;
  const double d_v = spec.hidden;
  const double projector = static_cast<double>(group) * d_v * static_cast<double>(llm_hidden);
  const double patch_embedding = static_cast<double>(spec.patch) * spec.patch * 3 * d_v;
  work.params = spec.layers * (4 * d_v * d_v + 3 * d_v * spec.mlp) + projector + patch_embedding;
  const int64_t images = static_cast<int64_t>(micro_batch_size) * spec.images_per_sample;
  double busiest_share = 0;
  for (int32_t mb = 0; mb < microbatches; ++mb) {
    std::vector<int32_t> tokens =
        DrawImageTokens(spec.image_tokens, images, static_cast<uint64_t>(mb));
    double forward = 0;
    double backward = 0;
    double activation = 0;
    double embedding = 0;
    for (int32_t t : tokens) {
      const int64_t patches = group * t;
      const double n = static_cast<double>(patches);
      const double attention = 4.0 * spec.layers * d_v * n * n;  // the N_p² core
      const double matmuls = VisionEncoderFlops(spec.layers, spec.hidden, spec.mlp, patches) -
                             attention + 2.0 * projector * t;
      forward += matmuls + attention;
      backward += 2.0 * matmuls + 2.5 * attention + (spec.recompute ? matmuls + attention : 0.0);
      activation += (spec.recompute ? 2.0 : 34.0) * n * d_v * spec.layers;
      embedding += static_cast<double>(t) * static_cast<double>(llm_hidden) * 2;
    }
    work.forward_flops += forward;
    work.backward_flops += backward;
    const double share = cp > 1 ? BusiestShare(spec, tokens, seq_len, cp) : 1.0;
    busiest_share += share;
    work.forward.push_back(FromSeconds(forward * share / flops_per_s));
    work.backward.push_back(FromSeconds(backward * share / flops_per_s));
    work.activation_bytes.push_back(std::llround(activation * share));
    work.embedding_bytes.push_back(std::llround(embedding / cp));
    work.image_count += static_cast<int64_t>(tokens.size());
    work.image_tokens.push_back(std::move(tokens));
  }
  if (microbatches > 0) work.cp_imbalance = busiest_share / microbatches * cp;
  return work;
}

Status CheckVisionSpec(const VisionSpec& spec, const ClusterSpec& cluster, int64_t pipeline_devices,
                       int64_t replicas) {
  if (spec.heads < 1 || spec.hidden % spec.heads != 0) {
    return Error{"multimodal.vision.heads: " + std::to_string(spec.heads) +
                 " does not divide hidden " + std::to_string(spec.hidden) +
                 " (expected a divisor, e.g. 16 for 1024)"};
  }
  const bool disaggregated = spec.placement == VisionPlacement::kDisaggregated;
  // The encoder's own layout is checked whenever it is written, so that --compare-vision and
  // --vision-placement find it sound.
  if (!disaggregated && spec.devices == 0) return Status::Ok();
  if (spec.devices < 1) {
    return Error{
        "multimodal.vision.devices: placement disaggregated needs the encoder's own "
        "devices per pipeline replica (expected an integer >= 1, e.g. devices: 2)"};
  }
  if (spec.devices % (spec.tp * spec.pp) != 0) {
    return Error{"multimodal.vision.devices: " + std::to_string(spec.devices) +
                 " devices do not split into tp " + std::to_string(spec.tp) + " x pp " +
                 std::to_string(spec.pp) + " (expected a multiple of " +
                 std::to_string(spec.tp * spec.pp) + ")"};
  }
  if (spec.heads % spec.tp != 0) {
    return Error{"multimodal.vision.tp: " + std::to_string(spec.tp) + " does not divide the " +
                 std::to_string(spec.heads) + " heads (expected a divisor)"};
  }
  if (cluster.given && spec.tp * spec.pp > cluster.devices_per_node) {
    return Error{"multimodal.vision: an encoder replica (tp " + std::to_string(spec.tp) + " x pp " +
                 std::to_string(spec.pp) + ") spans more than a node of " +
                 std::to_string(cluster.devices_per_node) +
                 " devices (expected tp x pp <= devices per node; use more dp instead)"};
  }
  if (spec.layers % spec.pp != 0) {
    return Error{"multimodal.vision.pp: " + std::to_string(spec.pp) + " does not divide the " +
                 std::to_string(spec.layers) + " encoder layers (expected a divisor)"};
  }
  const int64_t needed = pipeline_devices + static_cast<int64_t>(spec.devices) * replicas;
  if (disaggregated && cluster.given && needed > cluster.num_devices()) {
    return Error{"multimodal.vision.devices: the encoder's " + std::to_string(spec.devices) +
                 " devices x " + std::to_string(replicas) +
                 " pipeline replicas = " + std::to_string(spec.devices * replicas) +
                 " more devices, " + std::to_string(needed) + " in all, exceed the cluster's " +
                 std::to_string(cluster.num_devices()) +
                 " (expected fewer encoder devices, or more nodes)"};
  }
  return Status::Ok();
}

}  // namespace stagecraft
