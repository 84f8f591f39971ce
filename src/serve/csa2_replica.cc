#include "serve/csa2_replica.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "model/kv_cache.h"
#include "model/layer_costs.h"

namespace stagecraft {
namespace {

// The layer list's dimensions in a transformer's terms, for the shape checks and the
// collectives (step_cost.cc): decoders as layers, one KV head, the experts of its MoE decoders.
TransformerSpec ProxyTransformer(const ModelSpec& model, int32_t decoders, int32_t dense) {
  const Csa2Dims& dims = model.dims;
  TransformerSpec proxy;
  proxy.layers = decoders;
  proxy.hidden = dims.hidden;
  proxy.heads = dims.heads;
  proxy.kv_heads = 1;
  proxy.head_dim = dims.head_dim;
  proxy.vocab = dims.vocab;
  proxy.swiglu = true;
  proxy.causal = true;
  proxy.tied_embeddings = false;
  proxy.bias = false;
  proxy.learned_positions = false;
  proxy.ffn_hidden = dims.dense_width > 0 ? dims.dense_width : 4 * int64_t{dims.hidden};
  if (dense < decoders) {
    proxy.experts = dims.routed_experts;
    proxy.experts_per_token = dims.experts_per_token;
    proxy.expert_ffn = dims.expert_width;
    proxy.shared_experts = dims.shared_experts;
    proxy.dense_layers = dense;
  }
  return proxy;
}

// One stage's share of a GPU.
struct Stage {
  double weight_bytes = 0;  // per GPU
  double token_bytes = 0;   // compressed KV + indexer keys per token of context
  double window_bytes = 0;  // window KV per windowed token
};

}  // namespace

bool ServedModelHasExperts(const ModelSpec& model) {
  if (model.is_transformer()) return model.transformer.moe();
  return std::any_of(model.layers.begin(), model.layers.end(), [](const LayerSpec& layer) {
    return layer.kind == LayerKind::kDecoder && layer.mlp == MlpKind::kMoe;
  });
}

Result<ReplicaModel> BuildCsa2ReplicaModel(const ModelSpec& model, const ClusterSpec& cluster,
                                           const ServeShape& shape, const EngineOptions& engine) {
  const Csa2Dims& dims = model.dims;
  int32_t decoders = 0;
  int32_t dense = 0;
  for (const LayerSpec& layer : model.layers) {
    if (layer.kind != LayerKind::kDecoder) continue;
    ++decoders;
    if (layer.mlp == MlpKind::kDense) ++dense;
  }
  if (decoders == 0) {
    return Error{
        "serve: the layer list has no decoder layers (expected model.layers with at "
        "least one decoder)"};
  }
  ReplicaModel replica;
  replica.model = ProxyTransformer(model, decoders, dense);
  replica.cluster = cluster;
  replica.shape = shape;
  replica.engine = engine;
  STAGECRAFT_RETURN_IF_ERROR(CheckServeShape(replica.model, cluster, shape));
  if (Status split = CheckLayerTensorParallel(model.layers, dims, shape.tp); !split.ok()) {
    return Error{"--tp " + std::to_string(shape.tp) + ": " + split.error().message};
  }
  Csa2Serving csa2;
  csa2.dims = dims;
  csa2.main_entry_bytes = Csa2MainEntryBytes(dims);
  csa2.index_entry_bytes = Csa2IndexEntryBytes(dims);
  csa2.window_entry_bytes = Csa2WindowEntryBytes(dims);
  csa2.window = dims.window;
  replica.kv = Csa2KvCachePerToken(model.layers, dims);
  replica.kv_replicated = shape.tp > 1;

  const double tp = shape.tp;
  const double expert_split = shape.ep > 1 ? shape.ep : tp;
  const double weight_bytes = engine.weight_bytes;
  const int32_t per_stage = decoders / shape.pp;  // CheckServeShape: pp divides the decoders
  std::vector<Stage> stages(static_cast<size_t>(shape.pp));
  std::map<std::pair<int, int32_t>, size_t> class_of;  // (mode, ratio) -> csa2.classes index
  double ffn = 0;
  int32_t decoder = 0;
  for (const LayerSpec& layer : model.layers) {
    const double params = LayerParams(layer, dims);
    if (layer.kind != LayerKind::kDecoder) {
      // The embedding (first stage, a lookup) and the head (last stage, a GEMM), both
      // vocabulary-parallel.
      const bool head = layer.kind == LayerKind::kHead;
      stages[head ? stages.size() - 1 : 0].weight_bytes += params / tp * weight_bytes;
      if (head) {
        replica.head_params += params;
        replica.weight_read_bytes += params / tp * weight_bytes;
      }
      continue;
    }
    Stage& stage = stages[static_cast<size_t>(decoder / per_stage)];
    ++decoder;
    const double replicated = LayerReplicatedParams(layer, dims);
    const double routed = LayerRoutedExpertParams(layer, dims);
    const double split = params - replicated - routed;
    stage.weight_bytes += (replicated + split / tp + routed / expert_split) * weight_bytes;
    replica.weight_read_bytes += (replicated + split / tp) * weight_bytes;
    replica.routed_expert_bytes += routed / expert_split * weight_bytes;
    const double routed_active =
        dims.routed_experts > 0 ? routed * dims.experts_per_token / dims.routed_experts : 0.0;
    replica.matmul_params += split + routed_active;
    replica.replicated_matmul_params += replicated;
    stage.window_bytes += csa2.window_entry_bytes;
    if (layer.attention == AttentionMode::kFull) {
      stage.token_bytes +=
          (csa2.main_entry_bytes + csa2.index_entry_bytes) / std::max(layer.compress_ratio, 1);
    }
    replica.kernels_per_iteration += 12 +
                                     (layer.attention == AttentionMode::kFull      ? 5
                                      : layer.attention == AttentionMode::kReindex ? 3
                                                                                   : 0) +
                                     (layer.engram ? 1 : 0);
    ffn = std::max(ffn, layer.mlp == MlpKind::kMoe
                            ? static_cast<double>(dims.expert_width) *
                                  (dims.experts_per_token + dims.shared_experts)
                            : static_cast<double>(replica.model.ffn_hidden));
    const auto key = std::make_pair(static_cast<int>(layer.attention), layer.compress_ratio);
    auto [found, inserted] = class_of.emplace(key, csa2.classes.size());
    if (inserted) csa2.classes.push_back({.layer = layer, .count = 0});
    ++csa2.classes[found->second].count;
  }
  // The forward workspace at the token budget (as step_cost.cc's ActivationBytes): the hc
  // residual streams and a normed copy, the MLP's gate-and-up output / tp, fp32 logits.
  const double per_token =
      (static_cast<double>(dims.hc_streams + 1) * dims.hidden + 2.0 * ffn / tp) *
      engine.activation_bytes;
  replica.activation_bytes_per_gpu =
      static_cast<double>(engine.token_budget) * per_token +
      static_cast<double>(engine.max_seqs) * static_cast<double>(dims.vocab) / tp * 4.0;
  replica.reserve_bytes_per_gpu = static_cast<double>(cluster.memory_reserve_bytes);
  // The stage holding the fewest requests of the config's sequence length bounds the replica.
  const double context = std::max(1, model.seq_len);
  const double windowed = std::min(context, static_cast<double>(dims.window));
  double fewest = std::numeric_limits<double>::infinity();
  const Stage* bound = &stages.front();
  for (const Stage& stage : stages) {
    const double budget = static_cast<double>(cluster.hbm_bytes) * engine.memory_utilization -
                          stage.weight_bytes - replica.activation_bytes_per_gpu -
                          replica.reserve_bytes_per_gpu;
    const double requests = budget / (stage.token_bytes * context + stage.window_bytes * windowed);
    if (requests < fewest) {
      fewest = requests;
      bound = &stage;
    }
  }
  replica.weight_bytes_per_gpu = bound->weight_bytes;
  csa2.stage_token_bytes = bound->token_bytes;
  csa2.stage_window_bytes = bound->window_bytes;
  // The KV unit: a token of the stage's compressed KV (a window-only stage: a window token).
  replica.kv_bytes_per_token_per_gpu =
      bound->token_bytes > 0 ? bound->token_bytes : bound->window_bytes;
  replica.stage_cut_width = int64_t{dims.hc_streams} * dims.hidden;
  replica.csa2 = std::move(csa2);
  STAGECRAFT_RETURN_IF_ERROR(SizeKvCapacity(replica));
  return replica;
}

Result<ReplicaModel> BuildReplicaModel(const ModelSpec& model, const ClusterSpec& cluster,
                                       const ServeShape& shape, const EngineOptions& engine) {
  if (!model.is_transformer() && !model.layers.empty()) {
    return BuildCsa2ReplicaModel(model, cluster, shape, engine);
  }
  return BuildReplicaModel(model.transformer, cluster, shape, engine);
}

}  // namespace stagecraft
