#include "model/layer_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "hardware/presets.h"
#include "model/model_spec.h"

namespace stagecraft {
namespace {

// A LayerRun with only its context shards set.
LayerRun ContextRun(const ContextShards& context) {
  LayerRun run;
  run.context = context;
  return run;
}

constexpr int32_t kSeqLen = 4096;

DeviceRates Rates(const char* preset) { return ClusterFromPreset(preset).value().rates(); }

LayerSpec Decoder(AttentionMode mode, int32_t compress_ratio) {
  LayerSpec layer;
  layer.kind = LayerKind::kDecoder;
  layer.attention = mode;
  layer.compress_ratio = compress_ratio;
  return layer;
}

LayerSpec OfKind(LayerKind kind) {
  LayerSpec layer;
  layer.kind = kind;
  return layer;
}

LayerKernelTimes Times(const LayerSpec& layer, const DeviceRates& device,
                       const ContextShards& context = {}) {
  return Csa2LayerKernelTimes(layer, Csa2Dims{}, kSeqLen, 1, ContextRun(context), device);
}

// Σ over query positions t = 1..S of min(t, window), and of min(⌊t/m⌋, cap): the keys a query
// sees in the sliding window and among the compressed entries (csa2.md), counted one by one.
double WindowKeys(int32_t seq_len, int32_t window) {
  double keys = 0;
  for (int32_t t = 1; t <= seq_len; ++t) keys += std::min(t, window);
  return keys;
}
double CompressedKeys(int32_t seq_len, int32_t m, int32_t cap) {
  double keys = 0;
  for (int32_t t = 1; t <= seq_len; ++t) keys += std::min(t / m, cap);
  return keys;
}

TEST(Csa2LayerKernelsTest, FullLayerCostsMoreThanReuse) {
  const DeviceRates h100 = Rates("h100");
  const LayerKernelTimes full = Times(Decoder(AttentionMode::kFull, 4), h100);
  const LayerKernelTimes reuse = Times(Decoder(AttentionMode::kReuse, 4), h100);
  // The full layer adds the compressor, the indexer and its scoring over every visible entry.
  EXPECT_GT(full.forward, reuse.forward);
  EXPECT_GT(full.input_grad, reuse.input_grad);
  EXPECT_GT(full.forward_gemm, reuse.forward_gemm);
  EXPECT_GT(full.attention_core, reuse.attention_core);
  EXPECT_LE(full.forward_gemm + full.attention_core, full.forward);
}

// The layer's FLOPs split into the GEMMs the kernels list (2·T·n·k each) and the attention
// (core and indexer scoring) that runs at the fused-attention rate: the attention time times
// that rate gives back the attention FLOPs counted here from the definitions, and with the
// GEMMs' FLOPs they make LayerForwardFlops. V4.1 dims, S = 4096, m = 4.
TEST(Csa2LayerKernelsTest, GemmAndAttentionFlopsReconstructTheLayer) {
  const DeviceRates h100 = Rates("h100");
  const Csa2Dims dims;
  const double attention_rate = h100.bf16_flops_per_s * h100.kernels.attention_forward_efficiency;
  const double t = kSeqLen, d = dims.hidden, c = dims.head_dim, dc = dims.query_latent;
  const double heads_width = static_cast<double>(dims.heads) * c;
  const double indexer_width = static_cast<double>(dims.indexer_heads) * dims.indexer_key_dim;
  const int32_t m = 4;
  // Per token: query down and up, the KV head, the grouped output (g groups of nh·c/g → d_g)
  // and the output projection; the MoE router, the 6 routed and 1 shared SwiGLU experts.
  const double projections = d * dc + dc * heads_width + d * c +
                             heads_width * dims.output_group_dim +
                             static_cast<double>(dims.output_groups) * dims.output_group_dim * d;
  const double moe = d * dims.routed_experts +
                     3 * d * dims.expert_width * (dims.experts_per_token + dims.shared_experts);
  // The core: QKᵀ and PV (4·n_h·c a key) over the window and the top-k compressed entries.
  const double core =
      4 * heads_width * (WindowKeys(kSeqLen, dims.window) + CompressedKeys(kSeqLen, m, dims.top_k));
  const LayerKernelTimes reuse = Times(Decoder(AttentionMode::kReuse, m), h100);
  const double reuse_gemms = 2 * t * (projections + moe);
  EXPECT_NEAR(reuse.attention_core * attention_rate / core, 1.0, 1e-12);
  EXPECT_NEAR(
      (reuse_gemms + core) / LayerForwardFlops(Decoder(AttentionMode::kReuse, m), dims, kSeqLen, 1),
      1.0, 1e-12);
  // A full layer adds the compressor (d·c twice with m > 1), the indexer keys (c·c_I per
  // compressed entry), the indexer query (d_c·n_I·c_I + d·n_I), and the scoring of every visible
  // compressed entry by 2·n_I·c_I.
  const double indexer =
      2 * d * c + c * dims.indexer_key_dim / m + dc * indexer_width + d * dims.indexer_heads;
  const double scoring = 2 * indexer_width * CompressedKeys(kSeqLen, m, kSeqLen);
  const LayerKernelTimes full = Times(Decoder(AttentionMode::kFull, m), h100);
  EXPECT_NEAR(full.attention_core * attention_rate / (core + scoring), 1.0, 1e-12);
  EXPECT_NEAR((reuse_gemms + 2 * t * indexer + core + scoring) /
                  LayerForwardFlops(Decoder(AttentionMode::kFull, m), dims, kSeqLen, 1),
              1.0, 1e-12);
}

// EstimateLayerCosts with a device takes every layer's F, I and W from its kernels (rounded to
// ns), and keeps a forward that was given.
TEST(Csa2LayerKernelsTest, EstimateLayerCostsUsesKernelTimes) {
  const DeviceRates h100 = Rates("h100");
  LayerSpec given = Decoder(AttentionMode::kReuse, 4);
  given.forward = Time::Nanoseconds(7'000'000);
  ModelSpec model;
  model.seq_len = kSeqLen;
  model.layers = {OfKind(LayerKind::kEmbedding), Decoder(AttentionMode::kFull, 4),
                  Decoder(AttentionMode::kReuse, 4), given, OfKind(LayerKind::kHead)};
  const std::vector<LayerSpec> before = model.layers;
  // The FLOPs rate is what a layer without a device would use: far off, to show it is unused.
  EstimateLayerCosts(model, 1e18, 0, {}, &h100);
  for (size_t index : {1, 2, 4}) {
    const LayerKernelTimes times =
        Csa2LayerKernelTimes(before[index], model.dims, kSeqLen, 1, LayerRun{}, h100);
    EXPECT_EQ(model.layers[index].forward, FromSeconds(times.forward)) << index;
    EXPECT_EQ(model.layers[index].input_grad, FromSeconds(times.input_grad)) << index;
    EXPECT_EQ(model.layers[index].weight_grad, FromSeconds(times.weight_grad)) << index;
  }
  // The embedding's kernels have no input gradient (0 s), and derived by the kernels it stays 0.
  const LayerKernelTimes embedding =
      Csa2LayerKernelTimes(before[0], model.dims, kSeqLen, 1, LayerRun{}, h100);
  EXPECT_EQ(embedding.input_grad, 0.0);
  EXPECT_EQ(model.layers[0].forward, FromSeconds(embedding.forward));
  EXPECT_EQ(model.layers[0].weight_grad, FromSeconds(embedding.weight_grad));
  EXPECT_EQ(model.layers[0].input_grad, Time());
  // Given: kept, and its backward halves are the forward (csa2.md's rule).
  EXPECT_EQ(model.layers[3].forward, given.forward);
  EXPECT_EQ(model.layers[3].input_grad, given.forward);
  EXPECT_EQ(model.layers[3].weight_grad, given.forward);
}

// Two context-parallel ranks: each runs half the tokens' GEMMs, half the core and the busiest
// rank's scoring (zig-zag: about half). At least half the whole layer (a GEMM of half the rows
// takes at least half the waves; the busiest rank scores at least half), less than all of it.
TEST(Csa2LayerKernelsTest, ContextParallelRankDoesLessThanTheLayer) {
  const DeviceRates h100 = Rates("h100");
  for (AttentionMode mode : {AttentionMode::kFull, AttentionMode::kReuse}) {
    const LayerSpec layer = Decoder(mode, 4);
    const LayerKernelTimes whole = Times(layer, h100);
    for (bool zigzag : {true, false}) {
      const LayerKernelTimes rank = Times(layer, h100, ContextShards{2, zigzag});
      EXPECT_LT(rank.forward, whole.forward);
      EXPECT_GE(rank.forward, whole.forward / 2);
      EXPECT_LT(rank.input_grad + rank.weight_grad, whole.input_grad + whole.weight_grad);
    }
  }
}

// The head: final norm, the T x V x d projection (untied, V4.1 V = 129280), cross entropy.
TEST(Csa2LayerKernelsTest, HeadCostsAtLeastItsGemm) {
  const DeviceRates h100 = Rates("h100");
  const Csa2Dims dims;
  const LayerKernelTimes head = Times(OfKind(LayerKind::kHead), h100);
  const double projection = GemmSeconds(
      h100, {kSeqLen, static_cast<double>(dims.vocab), static_cast<double>(dims.hidden)});
  EXPECT_EQ(head.forward_gemm, projection);
  EXPECT_GT(head.forward, projection);
  EXPECT_GT(head.input_grad, GemmSeconds(h100, {kSeqLen, static_cast<double>(dims.hidden),
                                                static_cast<double>(dims.vocab)}));
  EXPECT_EQ(head.weight_grad, GemmSeconds(h100, {static_cast<double>(dims.hidden),
                                                 static_cast<double>(dims.vocab), kSeqLen}));
}

}  // namespace
}  // namespace stagecraft
