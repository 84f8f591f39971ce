// Tensor parallelism and recomputation of CSA2 layer lists (model/layer_costs.h,
// model/layer_kernels.h; doc/csa2.md "Tensor parallelism and recomputation").
#include <gtest/gtest.h>

#include <vector>

#include "hardware/presets.h"
#include "model/layer_costs.h"
#include "model/layer_kernels.h"
#include "model/model_spec.h"

namespace stagecraft {
namespace {

constexpr int32_t kSeqLen = 4096;

DeviceRates H800() { return ClusterFromPreset("h800").value().rates(); }

LayerSpec Decoder(AttentionMode mode, int32_t compress_ratio) {
  LayerSpec layer;
  layer.kind = LayerKind::kDecoder;
  layer.attention = mode;
  layer.compress_ratio = mode == AttentionMode::kSwaOnly ? 0 : compress_ratio;
  return layer;
}

LayerSpec OfKind(LayerKind kind) {
  LayerSpec layer;
  layer.kind = kind;
  return layer;
}

// V4.1's kinds of layer: embedding, swa_only, full m = 2, reuse, reindex m = 1, head.
ModelSpec Model() {
  ModelSpec model;
  model.seq_len = kSeqLen;
  model.layers = {OfKind(LayerKind::kEmbedding),    Decoder(AttentionMode::kSwaOnly, 0),
                  Decoder(AttentionMode::kFull, 2), Decoder(AttentionMode::kReuse, 2),
                  Decoder(AttentionMode::kFull, 1), Decoder(AttentionMode::kReindex, 1),
                  OfKind(LayerKind::kHead)};
  return model;
}

LayerRun TpRun(int32_t tp, bool sequence_parallel = false, Recompute recompute = Recompute::kNone) {
  LayerRun run;
  run.tensor_parallel = tp;
  run.sequence_parallel = sequence_parallel;
  run.recompute = recompute;
  return run;
}

// The model's costs on the H800 kernel model (device) or the FLOPs rule (no device).
ModelSpec Estimated(const LayerRun& run, bool kernels) {
  ModelSpec model = Model();
  const DeviceRates h800 = H800();
  EstimateLayerCosts(model, 989.5e12 * 0.4, 0, run, kernels ? &h800 : nullptr);
  return model;
}

// Every decoder's forward, input gradient and weight gradient fall as tp grows, but by less than
// 1/tp: the query down-projection, the shared KV head, the compressor and the indexer are
// replicated; the head's fall too (its vocabulary is split).
TEST(LayerTensorParallelTest, CostsFallWithTp) {
  for (bool kernels : {true, false}) {
    const ModelSpec one = Estimated(TpRun(1), kernels);
    const ModelSpec two = Estimated(TpRun(2), kernels);
    const ModelSpec four = Estimated(TpRun(4), kernels);
    for (size_t index = 1; index < one.layers.size(); ++index) {
      const LayerSpec& a = one.layers[index];
      const LayerSpec& b = two.layers[index];
      const LayerSpec& c = four.layers[index];
      EXPECT_LT(b.forward, a.forward) << index << " kernels " << kernels;
      EXPECT_LT(c.forward, b.forward) << index << " kernels " << kernels;
      EXPECT_GT(c.forward * 4, a.forward) << index << " kernels " << kernels;
      EXPECT_LT(b.input_grad, a.input_grad) << index;
      EXPECT_LT(b.weight_grad, a.weight_grad) << index;
    }
  }
}

// Under the FLOPs rule a rank's forward is exactly the split FLOPs / t plus the replicated ones.
TEST(LayerTensorParallelTest, FlopsRuleSplitsAllButReplicated) {
  const double rate = 989.5e12 * 0.4;
  const ModelSpec four = Estimated(TpRun(4), false);
  const ModelSpec model = Model();
  for (size_t index = 1; index + 1 < model.layers.size(); ++index) {
    const LayerSpec& layer = model.layers[index];
    const double whole = LayerForwardFlops(layer, model.dims, kSeqLen, 1);
    const double replicated = LayerReplicatedFlops(layer, model.dims, kSeqLen, 1);
    EXPECT_GT(replicated, 0.0) << index;
    EXPECT_LT(replicated, whole / 4) << index;
    EXPECT_NEAR(static_cast<double>(four.layers[index].forward.ns()),
                ((whole - replicated) / 4 + replicated) / rate * 1e9, 1.0)
        << index;
  }
  // A full layer replicates its compressor and indexer: more than a reuse layer.
  EXPECT_GT(LayerReplicatedFlops(model.layers[2], model.dims, kSeqLen, 1),
            LayerReplicatedFlops(model.layers[3], model.dims, kSeqLen, 1));
}

// Parameters a TP rank holds: the replicated ones plus the rest / t (dims-derived, csa2.md).
TEST(LayerTensorParallelTest, ReplicatedParams) {
  const Csa2Dims dims;
  const LayerSpec full = Decoder(AttentionMode::kFull, 2);
  const LayerSpec reuse = Decoder(AttentionMode::kReuse, 2);
  const double d = dims.hidden;
  // A reuse layer replicates only the query down-projection, the shared KV head and the router.
  EXPECT_DOUBLE_EQ(LayerReplicatedParams(reuse, dims),
                   d * dims.query_latent + d * dims.head_dim + d * dims.routed_experts);
  EXPECT_GT(LayerReplicatedParams(full, dims), LayerReplicatedParams(reuse, dims));
  EXPECT_LT(LayerReplicatedParams(full, dims), 0.01 * LayerParams(full, dims));
  EXPECT_EQ(LayerReplicatedParams(OfKind(LayerKind::kHead), dims), 0.0);
}

// Activations per Korthikanti Table 2 with d for h and no score term: tokens·d·(10 + 24/t)
// without sequence parallelism, 34·tokens·d/t with it; the head's fp32 logits / t.
TEST(LayerTensorParallelTest, ActivationsFallWithTp) {
  const Csa2Dims dims;
  const LayerSpec layer = Decoder(AttentionMode::kFull, 2);
  const double sbd = static_cast<double>(kSeqLen) * dims.hidden;
  for (int32_t t : {1, 2, 4, 8}) {
    EXPECT_EQ(LayerActivationBytes(layer, dims, kSeqLen, TpRun(t), Recompute::kNone),
              std::llround(sbd * (10 + 24.0 / t)))
        << t;
    EXPECT_EQ(LayerActivationBytes(layer, dims, kSeqLen, TpRun(t, true), Recompute::kNone),
              std::llround(34 * sbd / t))
        << t;
  }
  const LayerSpec head = OfKind(LayerKind::kHead);
  EXPECT_EQ(LayerActivationBytes(head, dims, kSeqLen, TpRun(4), Recompute::kNone),
            std::llround(kSeqLen * (4.0 * dims.hidden + 4.0 * dims.vocab / 4)));
  // EstimateLayerCosts stores them.
  const ModelSpec two = Estimated(TpRun(2), true);
  EXPECT_EQ(two.layers[2].activation_bytes, std::llround(sbd * 22));
}

// Full recomputation keeps only the layer's input, the hc residual streams (/ t with sequence
// parallelism); selective keeps what none keeps (the attention core stores no scores here).
TEST(LayerRecomputeTest, ActivationsFallWithFullRecompute) {
  const Csa2Dims dims;
  const LayerSpec layer = Decoder(AttentionMode::kReuse, 2);
  const int64_t none = LayerActivationBytes(layer, dims, kSeqLen, TpRun(1), Recompute::kNone);
  const int64_t full = LayerActivationBytes(layer, dims, kSeqLen, TpRun(1), Recompute::kFull);
  EXPECT_EQ(full, HiddenBytesPerToken(dims) * kSeqLen);
  EXPECT_LT(full * 4, none);
  EXPECT_EQ(LayerActivationBytes(layer, dims, kSeqLen, TpRun(1), Recompute::kSelective), none);
  EXPECT_EQ(LayerActivationBytes(layer, dims, kSeqLen, TpRun(4, true), Recompute::kFull) * 4, full);
}

// Recomputation adds to I only: full the layer's forward, selective its attention core and
// indexer scoring (more than zero, less than the forward); F and W are untouched; the
// embedding and head never recompute.
TEST(LayerRecomputeTest, RecomputeAddsForwardToBackward) {
  for (bool kernels : {true, false}) {
    const ModelSpec none = Estimated(TpRun(1), kernels);
    const ModelSpec full = Estimated(TpRun(1, false, Recompute::kFull), kernels);
    const ModelSpec selective = Estimated(TpRun(1, false, Recompute::kSelective), kernels);
    for (size_t index = 0; index < none.layers.size(); ++index) {
      const LayerSpec& base = none.layers[index];
      EXPECT_EQ(full.layers[index].forward, base.forward);
      EXPECT_EQ(full.layers[index].weight_grad, base.weight_grad);
      if (base.kind != LayerKind::kDecoder) {
        EXPECT_EQ(full.layers[index].input_grad, base.input_grad) << index;
        EXPECT_EQ(selective.layers[index].input_grad, base.input_grad) << index;
        continue;
      }
      // One ns of rounding either way: the kernel model rounds the sum once.
      EXPECT_NEAR(static_cast<double>((full.layers[index].input_grad - base.input_grad).ns()),
                  static_cast<double>(base.forward.ns()), 1.0)
          << index << " kernels " << kernels;
      const Time added = selective.layers[index].input_grad - base.input_grad;
      EXPECT_GT(added, Time()) << index;
      EXPECT_LT(added, base.forward) << index;
    }
  }
}

// Megatron's block method as a per-layer list: only the layers marked recompute.
TEST(LayerRecomputeTest, PerLayerCounts) {
  LayerRun run = TpRun(1, false, Recompute::kFull);
  run.recomputed = {false, false, true, false, true, false, false};
  const ModelSpec none = Estimated(TpRun(1), true);
  const ModelSpec some = Estimated(run, true);
  const ModelSpec all = Estimated(TpRun(1, false, Recompute::kFull), true);
  for (size_t index = 1; index + 1 < none.layers.size(); ++index) {
    const ModelSpec& expected = run.recomputed[index] ? all : none;
    EXPECT_EQ(some.layers[index], expected.layers[index]) << index;
  }
  EXPECT_EQ(run.RecomputeOf(none.layers[0], 0), Recompute::kNone);  // the embedding
  EXPECT_EQ(run.RecomputeOf(none.layers[2], 2), Recompute::kFull);
  EXPECT_EQ(run.RecomputeOf(none.layers[3], 3), Recompute::kNone);
}

// A layer that tp cannot split is an error naming it and the value.
TEST(LayerTensorParallelTest, CheckSplits) {
  const ModelSpec model = Model();
  EXPECT_TRUE(CheckLayerTensorParallel(model.layers, model.dims, 8).ok());
  const Status heads = CheckLayerTensorParallel(model.layers, model.dims, 3);
  ASSERT_FALSE(heads.ok());
  EXPECT_EQ(heads.error().message,
            "layers[1]: tp 3 does not divide its 64 query heads (tensor parallelism splits them); "
            "pick a divisor");
  const Status groups = CheckLayerTensorParallel(model.layers, model.dims, 16);
  ASSERT_FALSE(groups.ok());
  EXPECT_NE(groups.error().message.find("layers[1]: tp 16 does not divide its 8 output groups"),
            std::string::npos);
  Csa2Dims odd = model.dims;
  odd.expert_width = 2302;
  const Status experts = CheckLayerTensorParallel(model.layers, odd, 4);
  ASSERT_FALSE(experts.ok());
  EXPECT_NE(experts.error().message.find("expert width 2302"), std::string::npos);
}

}  // namespace
}  // namespace stagecraft
