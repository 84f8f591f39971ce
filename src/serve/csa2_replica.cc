#include "serve/csa2_replica.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
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

// Engram (csa2.md): 24 rows of 256 values looked up per token, projected into the hc + 1 streams
// (as model/layer_kernels.cc).
constexpr double kEngramValuesPerToken = 24.0 * 256.0;

// One decoder's kernels on one TP rank, the shapes of model/layer_kernels.cc's training kernels
// (the attention projections, the indexer's and the compressor's on full and reindex layers, the
// MLP or experts, Engram's projection), with the two norms and the mHC mixing of the hc residual
// streams around the attention and the MLP as memory-bound kernels, and the cache write of the
// layer's window entry (and a full layer's compressed entry and indexer key every m tokens).
std::vector<ServeKernel> DecoderKernels(const LayerSpec& layer, const Csa2Serving& csa2,
                                        const TransformerSpec& proxy, const KernelLayout& layout) {
  const Csa2Dims& dims = csa2.dims;
  const double t = layout.tp;
  const double d = dims.hidden;
  const double act = layout.activation_bytes;
  const double heads_width = static_cast<double>(dims.heads) * dims.head_dim;
  const double groups = dims.output_groups;
  const int32_t m = std::max(layer.compress_ratio, 1);
  const bool full = layer.attention == AttentionMode::kFull;
  const bool indexed = full || layer.attention == AttentionMode::kReindex;
  constexpr KernelRows kTokens = KernelRows::kTokens;
  std::vector<ServeKernel> out;
  out.push_back(MemoryKernel(kTokens, 4 * d * act));                               // norm
  out.push_back(MemoryKernel(kTokens, 4 * dims.hc_streams * d * act));             // mHC mixing
  out.push_back(GemmKernel(layout, kTokens, dims.query_latent, d));                // query down
  out.push_back(GemmKernel(layout, kTokens, heads_width / t, dims.query_latent));  // query up
  out.push_back(GemmKernel(layout, kTokens, dims.head_dim, d));                    // shared KV head
  if (indexed) {
    out.push_back(GemmKernel(layout, kTokens,
                             static_cast<double>(dims.indexer_heads) * dims.indexer_key_dim,
                             dims.query_latent));                       // indexer query
    out.push_back(GemmKernel(layout, kTokens, dims.indexer_heads, d));  // indexer weights
  }
  if (full) {
    out.push_back(GemmKernel(layout, kTokens, dims.head_dim * (m > 1 ? 2.0 : 1.0), d));
    ServeKernel keys = GemmKernel(layout, kTokens, dims.indexer_key_dim, dims.head_dim);
    keys.row_scale = 1.0 / m;
    out.push_back(keys);
  }
  const double cached =
      csa2.window_entry_bytes + (full ? (csa2.main_entry_bytes + csa2.index_entry_bytes) / m : 0.0);
  out.push_back(MemoryKernel(kTokens, dims.head_dim * act + cached));  // cache write
  out.push_back(GemmKernel(layout, kTokens, dims.output_group_dim, heads_width / groups,
                           groups / t));  // grouped output
  out.push_back(GemmKernel(layout, kTokens, d, groups * dims.output_group_dim / t));  // output
  out.push_back(MemoryKernel(kTokens, 4 * d * act));
  out.push_back(MemoryKernel(kTokens, 4 * dims.hc_streams * d * act));
  AddMlpKernels(proxy, layout, layer.mlp == MlpKind::kMoe, out);
  if (layer.engram) {
    out.push_back(GemmKernel(layout, kTokens, d * (dims.hc_streams + 1), kEngramValuesPerToken));
  }
  return out;
}

// The decoders' kernels, one class per distinct (attention mode, ratio, MLP, Engram), and the
// kernels once per iteration.
ServeKernels Csa2Kernels(const std::vector<LayerSpec>& layers, const ReplicaModel& replica,
                         const Csa2Serving& csa2) {
  const KernelLayout layout{
      .tp = replica.shape.tp,
      .ep = replica.shape.ep,
      .weight_bytes = replica.engine.weight_bytes,
      .fp8 = replica.engine.fp8_compute,
      .activation_bytes = static_cast<double>(replica.engine.activation_bytes)};
  ServeKernels kernels;
  std::map<std::tuple<int, int32_t, int, bool>, size_t> class_of;
  for (const LayerSpec& layer : layers) {
    if (layer.kind != LayerKind::kDecoder) continue;
    const auto key = std::make_tuple(static_cast<int>(layer.attention), layer.compress_ratio,
                                     static_cast<int>(layer.mlp), layer.engram);
    auto [found, inserted] = class_of.emplace(key, kernels.layers.size());
    if (inserted) {
      kernels.layers.push_back(
          {.count = 0, .kernels = DecoderKernels(layer, csa2, replica.model, layout)});
    }
    ++kernels.layers[found->second].count;
  }
  SetIterationKernels(replica.model, layout, replica.cluster.kernels, kernels);
  return kernels;
}

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
      continue;
    }
    Stage& stage = stages[static_cast<size_t>(decoder / per_stage)];
    ++decoder;
    const double replicated = LayerReplicatedParams(layer, dims);
    const double routed = LayerRoutedExpertParams(layer, dims);
    const double split = params - replicated - routed;
    stage.weight_bytes += (replicated + split / tp + routed / expert_split) * weight_bytes;
    stage.window_bytes += csa2.window_entry_bytes;
    if (layer.attention == AttentionMode::kFull) {
      stage.token_bytes +=
          (csa2.main_entry_bytes + csa2.index_entry_bytes) / std::max(layer.compress_ratio, 1);
    }
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
  replica.kernels = Csa2Kernels(model.layers, replica, csa2);
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
