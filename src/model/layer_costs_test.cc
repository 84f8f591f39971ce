// The FLOPs model against the figures of doc/csa2.md "Per-layer cost formulas" (DeepSeek-V4.1-
// Flash report §2.3–2.4), which are rounded to 3–4 significant digits: tolerance 0.1% unless
// a test says otherwise.
#include "model/layer_costs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "testing/models.h"

namespace stagecraft {
namespace {

// A LayerRun with only its context shards, or only its expert-parallel ranks, set.
LayerRun ContextRun(const ContextShards& context) {
  LayerRun run;
  run.context = context;
  return run;
}
LayerRun ExpertRun(int32_t expert_parallel) {
  LayerRun run;
  run.expert_parallel = expert_parallel;
  return run;
}

// doc/csa2.md, "Per-layer cost formulas" table (V4.1-Flash dims, exact): the attention projections'
// parameters P = d·d_c + d_c·n_h·c + d·c + n_h·c·d_g + g·d_g·d, and the indexer query's FLOPs per
// token.
constexpr double kV41ProjectionParams = 126'615'552.0;
constexpr double kV41IndexerQueryFlops = 10'813'440.0;

LayerSpec Decoder(AttentionMode mode, int32_t ratio) {
  LayerSpec layer;
  layer.attention = mode;
  layer.compress_ratio = ratio;
  return layer;
}

LayerSpec OfKind(LayerKind kind) {
  LayerSpec layer;
  layer.kind = kind;
  return layer;
}

// Forward FLOPs of one sequence position t (1-based): F(t) − F(t − 1) of a one-sequence batch.
double FlopsAtPosition(const LayerSpec& layer, const Csa2Dims& dims, int32_t t) {
  return LayerForwardFlops(layer, dims, t, 1) - LayerForwardFlops(layer, dims, t - 1, 1);
}

Csa2Dims WithoutMoe() {
  Csa2Dims dims;
  dims.expert_width = 0;
  dims.routed_experts = 0;
  return dims;
}

// A swa_only layer at t = 1 costs 2·P + 4·n_h·c (one window key) + MoE.
TEST(LayerCostsTest, V41AttentionProjectionsAre126Point6MParams) {
  const Csa2Dims dims = WithoutMoe();
  const double core_one_key = 4.0 * 64 * 512;
  const double params =
      (LayerForwardFlops(Decoder(AttentionMode::kSwaOnly, 0), dims, 1, 1) - core_one_key) / 2;
  EXPECT_DOUBLE_EQ(params, kV41ProjectionParams);  // the formula, exactly
  EXPECT_NEAR(params, 126.6e6, 126.6e6 * 1e-3);
}

TEST(LayerCostsTest, V41MoeIs499MflopPerToken) {
  const LayerSpec layer = Decoder(AttentionMode::kSwaOnly, 0);
  const double moe =
      LayerForwardFlops(layer, Csa2Dims(), 1, 1) - LayerForwardFlops(layer, WithoutMoe(), 1, 1);
  EXPECT_DOUBLE_EQ(moe, 2.0 * 3 * 5120 * 2304 * 7 + 2.0 * 5120 * 384);
  EXPECT_NEAR(moe, 499e6, 499e6 * 1e-3);
}

// Past the window (128) and k·m positions, a reuse layer's core is 4·n_h·c·(n_win + k).
TEST(LayerCostsTest, V41AttentionCoreSaturatesAt84Mflop) {
  const Csa2Dims dims = WithoutMoe();
  const LayerSpec reuse = Decoder(AttentionMode::kReuse, 2);
  const double projections = 2.0 * kV41ProjectionParams;
  const double core = FlopsAtPosition(reuse, dims, 4096) - projections;
  EXPECT_DOUBLE_EQ(core, 4.0 * 64 * 512 * (128 + 512));
  EXPECT_NEAR(core, 84e6, 84e6 * 5e-3);  // 83.9M vs "≈84": 0.5%
  EXPECT_DOUBLE_EQ(FlopsAtPosition(reuse, dims, 4096), FlopsAtPosition(reuse, dims, 2000));
  // Before saturation: t = 100 sees 100 window keys and 50 compressed entries.
  EXPECT_DOUBLE_EQ(FlopsAtPosition(reuse, dims, 100) - projections, 4.0 * 64 * 512 * 150);
}

// Reindex over reuse at t = 1: the indexer query (≈10.8 MFLOP) and one scored entry.
TEST(LayerCostsTest, V41IndexerQueryIs10Point8Mflop) {
  const Csa2Dims dims;
  const double extra = FlopsAtPosition(Decoder(AttentionMode::kReindex, 1), dims, 1) -
                       FlopsAtPosition(Decoder(AttentionMode::kReuse, 1), dims, 1);
  const double scoring_one_entry = 2.0 * 32 * 128;
  EXPECT_NEAR(extra - scoring_one_entry, 10.8e6, 10.8e6 * 2e-3);
}

// Full m = 1 scores every visible entry (t of them); reindex stops at the pool, 2048 × 8.
TEST(LayerCostsTest, ScoringGrowsWithContextUntilThePool) {
  const Csa2Dims dims;
  const double score = 2.0 * 32 * 128;
  const LayerSpec full = Decoder(AttentionMode::kFull, 1);
  const LayerSpec reindex = Decoder(AttentionMode::kReindex, 1);
  EXPECT_DOUBLE_EQ(FlopsAtPosition(full, dims, 20'001) - FlopsAtPosition(full, dims, 20'000),
                   score);
  EXPECT_DOUBLE_EQ(FlopsAtPosition(reindex, dims, 20'001), FlopsAtPosition(reindex, dims, 20'000));
  EXPECT_DOUBLE_EQ(FlopsAtPosition(reindex, dims, 16'000) - FlopsAtPosition(reindex, dims, 15'999),
                   score);
}

// Full over reuse (m = 2, t = 4096): compressor 2·d·c·2, indexer keys 2·c·c_I/2, indexer query,
// scoring 2048 entries.
TEST(LayerCostsTest, FullAddsCompressorAndIndexer) {
  const Csa2Dims dims;
  const double extra = FlopsAtPosition(Decoder(AttentionMode::kFull, 2), dims, 4096) -
                       FlopsAtPosition(Decoder(AttentionMode::kReuse, 2), dims, 4096);
  const double expected =
      2.0 * 5120 * 512 * 2 + 2.0 * 512 * 128 / 2 + kV41IndexerQueryFlops + 2.0 * 32 * 128 * 2048;
  EXPECT_DOUBLE_EQ(extra, expected);
}

TEST(LayerCostsTest, EmbeddingHeadAndDense) {
  const Csa2Dims dims;
  EXPECT_EQ(LayerForwardFlops(OfKind(LayerKind::kEmbedding), dims, 4096, 2), 0.0);
  EXPECT_DOUBLE_EQ(LayerForwardFlops(OfKind(LayerKind::kHead), dims, 4096, 2),
                   2.0 * 129280 * 5120 * 4096 * 2);
  // Dense over MoE at one token: 2·3·d·4d (dense_width 0 = 4·d) replaces the MoE.
  LayerSpec dense = Decoder(AttentionMode::kSwaOnly, 0);
  dense.mlp = MlpKind::kDense;
  const double moe = 2.0 * 3 * 5120 * 2304 * 7 + 2.0 * 5120 * 384;
  EXPECT_DOUBLE_EQ(LayerForwardFlops(dense, dims, 1, 1) -
                       LayerForwardFlops(Decoder(AttentionMode::kSwaOnly, 0), dims, 1, 1),
                   2.0 * 3 * 5120 * 4 * 5120 - moe);
}

TEST(LayerCostsTest, MicroBatchScalesLinearly) {
  const Csa2Dims dims;
  const LayerSpec full = Decoder(AttentionMode::kFull, 2);
  EXPECT_DOUBLE_EQ(LayerForwardFlops(full, dims, 1024, 4),
                   4 * LayerForwardFlops(full, dims, 1024, 1));
}

// csa2.md: "Whole backbone forward ≈ 35 GFLOP per token plus indexer scoring". At 4096 tokens
// the scoring adds < 1%; 34.6 GFLOP rounds to 35.
TEST(LayerCostsTest, V41BackboneIsAbout35GflopPerToken) {
  const Csa2Dims dims;
  double flops = 0;
  for (const LayerSpec& layer : V41FlashLayers()) flops += LayerForwardFlops(layer, dims, 4096, 1);
  const double per_token = flops / 4096;
  EXPECT_GE(per_token, 34.5e9);
  EXPECT_LT(per_token, 35.5e9);
}

TEST(LayerCostsTest, EstimateFillsZeroCostsOnly) {
  ModelSpec model;
  model.layers = {OfKind(LayerKind::kEmbedding), Decoder(AttentionMode::kFull, 1),
                  Decoder(AttentionMode::kReuse, 1), OfKind(LayerKind::kHead)};
  model.layers[2].forward = Time::Nanoseconds(5'000'000);
  model.layers[2].activation_bytes = 7;
  model.seq_len = 4096;
  model.micro_batch_size = 1;
  const double flops_per_second = 989.5e12 * 0.4;
  EstimateLayerCosts(model, flops_per_second);
  const double full_flops = LayerForwardFlops(model.layers[1], model.dims, 4096, 1);
  const LayerSpec& full = model.layers[1];
  EXPECT_EQ(full.forward.ns(), std::llround(full_flops / flops_per_second * 1e9));
  EXPECT_EQ(full.input_grad, full.forward);  // backward 2× forward, I = W
  EXPECT_EQ(full.weight_grad, full.forward);
  EXPECT_EQ(full.activation_bytes, int64_t{34} * 5120 * 4096);
  const LayerSpec& reuse = model.layers[2];
  EXPECT_EQ(reuse.forward, Time::Nanoseconds(5'000'000));
  EXPECT_EQ(reuse.input_grad, Time::Nanoseconds(5'000'000));
  EXPECT_EQ(reuse.activation_bytes, 7);
  EXPECT_EQ(model.layers[0].forward, Time());
  EXPECT_EQ(model.layers[0].activation_bytes, 0);
  EXPECT_EQ(model.layers[3].activation_bytes, (int64_t{4} * 5120 + int64_t{4} * 129280) * 4096);
  // By hand: 2P 253.2M + core ≈83.9M + MoE 499.4M + compressor 5.2M + indexer query 10.8M +
  // scoring ≈16.8M (2048 entries on average) ≈ 869 MFLOP/token; · 4096 at 395.8 TFLOP/s ≈ 9.0 ms.
  EXPECT_NEAR(full.forward.ms(), 9.0, 0.1);
}

// ---- Context parallelism: the indexer scoring split from the rest (csa2.md, "Context
// parallelism (V4 / V4.1)": contiguous shards leave the last rank's indexer ≈ (2·cp − 1)/cp of
// the average, 2·cp zig-zag chunks rebalance it) ----

// A full layer's scoring is 2·n_I·c_I per (query, visible compressed entry): with m = 1 a query at
// position t sees t entries, Σ_{t=1..s} t = s(s+1)/2 (csa2.md "Per-layer cost formulas").
TEST(ContextParallelCostTest, ScoringOfAFullLayer) {
  const Csa2Dims dims;
  const double s = 65536;
  EXPECT_DOUBLE_EQ(LayerScoringFlops(Decoder(AttentionMode::kFull, 1), dims, 65536, 2),
                   2.0 * 32 * 128 * s * (s + 1) / 2 * 2);
  EXPECT_EQ(LayerScoringFlops(Decoder(AttentionMode::kReuse, 1), dims, 65536, 1), 0.0);
  EXPECT_EQ(LayerScoringFlops(OfKind(LayerKind::kHead), dims, 65536, 1), 0.0);
  // The scoring and the local part (projections, window, MoE) are disjoint pieces of the layer.
  const LayerSpec full = Decoder(AttentionMode::kFull, 2);
  EXPECT_LT(LayerScoringFlops(full, dims, 4096, 1) + LayerLocalFlops(full, dims, 4096, 1),
            LayerForwardFlops(full, dims, 4096, 1));
  const LayerSpec swa = Decoder(AttentionMode::kSwaOnly, 0);
  EXPECT_DOUBLE_EQ(LayerLocalFlops(swa, dims, 4096, 1), LayerForwardFlops(swa, dims, 4096, 1));
}

// Contiguous shards: the last of cp ranks scores ≈ (2·cp − 1)/cp of the balanced share (7/4 at cp
// 4) for a full layer with m = 1 at long s; zig-zag chunks give exactly the balanced share (rank
// k's chunks k and 2cp − 1 − k sum to the same for every k when chunks hold whole groups).
TEST(ContextParallelCostTest, ContiguousLastRankScoresTwoCpMinusOneOverCp) {
  const Csa2Dims dims;
  for (int32_t ratio : {1, 2}) {
    const LayerSpec full = Decoder(AttentionMode::kFull, ratio);
    const double balanced = LayerScoringFlops(full, dims, 131072, 1) / 4;
    const double contiguous = LayerScoringFlops(full, dims, 131072, 1, ContextShards{4, false});
    const double zigzag = LayerScoringFlops(full, dims, 131072, 1, ContextShards{4, true});
    EXPECT_NEAR(contiguous / balanced, 7.0 / 4.0, 1e-3) << "m = " << ratio;
    EXPECT_NEAR(zigzag / balanced, 1.0, 1e-9) << "m = " << ratio;
  }
  // cp 2: (2·2 − 1)/2 = 1.5.
  const LayerSpec full = Decoder(AttentionMode::kFull, 1);
  EXPECT_NEAR(LayerScoringFlops(full, dims, 65536, 1, ContextShards{2, false}) /
                  (LayerScoringFlops(full, dims, 65536, 1) / 2),
              1.5, 1e-3);
  // A reindex layer scores at most its candidate pool (16,384 entries), so past 16,384 positions
  // every query costs the same: contiguous shards of a long sequence are nearly balanced.
  const LayerSpec reindex = Decoder(AttentionMode::kReindex, 1);
  EXPECT_NEAR(LayerScoringFlops(reindex, dims, 1 << 20, 1, ContextShards{4, false}) /
                  (LayerScoringFlops(reindex, dims, 1 << 20, 1) / 4),
              1.0, 0.01);
}

// The layer list the context-parallel tests estimate: every attention mode, with a candidate pool
// that covers the whole 65,536-token sequence (so reindex scoring grows with t like a full
// layer's and zig-zag balances it exactly).
ModelSpec ContextParallelModel() {
  ModelSpec model;
  model.seq_len = 65536;
  model.dims.candidate_blocks = 65536 / 8;
  model.layers = {OfKind(LayerKind::kEmbedding),     Decoder(AttentionMode::kSwaOnly, 0),
                  Decoder(AttentionMode::kFull, 2),  Decoder(AttentionMode::kReuse, 2),
                  Decoder(AttentionMode::kFull, 1),  Decoder(AttentionMode::kReindex, 1),
                  Decoder(AttentionMode::kReuse, 1), OfKind(LayerKind::kHead)};
  return model;
}

Time TotalForward(const ModelSpec& model) {
  Time total;
  for (const LayerSpec& layer : model.layers) total += layer.forward;
  return total;
}

// One CP rank changes nothing; zig-zag over cp ranks computes total/cp per rank (up to the ns
// rounding of each layer), contiguous more; activations are a rank's s/cp tokens.
TEST(ContextParallelCostTest, EstimatePerRank) {
  const double flops = 989.5e12 * 0.4;
  ModelSpec whole = ContextParallelModel();
  EstimateLayerCosts(whole, flops);
  for (bool zigzag : {true, false}) {
    ModelSpec one_rank = ContextParallelModel();
    EstimateLayerCosts(one_rank, flops, 0, ContextRun(ContextShards{1, zigzag}));
    EXPECT_EQ(one_rank, whole);
  }
  ModelSpec zigzag = ContextParallelModel();
  EstimateLayerCosts(zigzag, flops, 0, ContextRun(ContextShards{4, true}));
  const int64_t layers = static_cast<int64_t>(whole.layers.size());
  EXPECT_NEAR(static_cast<double>(TotalForward(zigzag).ns()),
              static_cast<double>(TotalForward(whole).ns()) / 4, static_cast<double>(layers));
  ModelSpec contiguous = ContextParallelModel();
  EstimateLayerCosts(contiguous, flops, 0, ContextRun(ContextShards{4, false}));
  EXPECT_GT(TotalForward(contiguous).ns(), TotalForward(zigzag).ns() * 21 / 20);
  for (size_t layer = 0; layer < whole.layers.size(); ++layer) {
    EXPECT_EQ(zigzag.layers[layer].activation_bytes * 4, whole.layers[layer].activation_bytes);
    EXPECT_EQ(zigzag.layers[layer].input_grad, zigzag.layers[layer].forward);
  }
  // Layers without scoring are split evenly by both shardings.
  EXPECT_EQ(contiguous.layers[3].forward, zigzag.layers[3].forward);  // reuse
  // The full layer with m = 1: everything but the scoring / 4, plus 7/4 of the balanced scoring.
  const LayerSpec& full = whole.layers[4];
  const double scoring = LayerScoringFlops(full, whole.dims, 65536, 1);
  const double rest = LayerForwardFlops(full, whole.dims, 65536, 1) - scoring;
  EXPECT_NEAR(contiguous.layers[4].forward.ns() * 1e-9, (rest / 4 + scoring / 4 * 7 / 4) / flops,
              1e-5);
}

}  // namespace
}  // namespace stagecraft

namespace stagecraft {
namespace {

// csa2.md "Per-layer cost formulas": attention projections P ≈ 126.6M (to 0.1M) for the V4.1
// dims; a reuse layer adds nothing to them; MoE (E + E_s)·3·d·f + d·E.
TEST(LayerParamsTest, V41FlashFormulas) {
  Csa2Dims dims;  // the V4.1-Flash defaults
  LayerSpec reuse;
  reuse.attention = AttentionMode::kReuse;
  reuse.compress_ratio = 1;
  const double moe = (384.0 + 1) * 3 * 5120 * 2304 + 5120.0 * 384;
  EXPECT_NEAR((LayerParams(reuse, dims) - moe) / 1e6, 126.6, 0.05);
  EXPECT_DOUBLE_EQ(LayerRoutedExpertParams(reuse, dims), 384.0 * 3 * 5120 * 2304);
  LayerSpec full = reuse;
  full.attention = AttentionMode::kFull;
  full.compress_ratio = 2;
  // Compressor 2·d·c, indexer keys c·c_I + c_I, indexer query d_c·n_I·c_I + d·n_I.
  const double extra = 2.0 * 5120 * 512 + 512.0 * 128 + 128 + 1280.0 * 32 * 128 + 5120.0 * 32;
  EXPECT_DOUBLE_EQ(LayerParams(full, dims) - LayerParams(reuse, dims), extra);
  LayerSpec head;
  head.kind = LayerKind::kHead;
  EXPECT_DOUBLE_EQ(LayerParams(head, dims), 129280.0 * 5120);
  EXPECT_DOUBLE_EQ(LayerRoutedExpertParams(head, dims), 0.0);
}

}  // namespace
}  // namespace stagecraft

namespace stagecraft {
namespace {

// csa2.md: the Engram projection 24·256·d·(hc+1) ≈ 157M parameters (to 1M), 2× in FLOPs per
// token; a layer with `engram` carries both.
TEST(LayerParamsTest, EngramProjection) {
  Csa2Dims dims;  // V4.1: d 5120, hc 4
  EXPECT_NEAR(EngramProjectionParams(dims) / 1e6, 157.0, 0.5);
  LayerSpec layer;
  layer.attention = AttentionMode::kSwaOnly;
  layer.compress_ratio = 0;
  LayerSpec with = layer;
  with.engram = true;
  EXPECT_DOUBLE_EQ(LayerParams(with, dims) - LayerParams(layer, dims),
                   EngramProjectionParams(dims));
  EXPECT_DOUBLE_EQ(LayerForwardFlops(with, dims, 4096, 1) - LayerForwardFlops(layer, dims, 4096, 1),
                   2 * EngramProjectionParams(dims) * 4096);
}

// The vision encoder (csa2.md: 32 layers, width 1024, MLP 2816): linear in the layers, and
// more than linear in the patches (the attention core grows with N_p²); no patches, no work.
TEST(LayerParamsTest, VisionEncoderFlopsScaling) {
  const double one = VisionEncoderFlops(32, 1024, 2816, 4608);
  EXPECT_DOUBLE_EQ(VisionEncoderFlops(64, 1024, 2816, 4608), 2 * one);
  EXPECT_GT(VisionEncoderFlops(32, 1024, 2816, 9216), 2 * one);
  EXPECT_DOUBLE_EQ(VisionEncoderFlops(32, 1024, 2816, 0), 0.0);
}

}  // namespace
}  // namespace stagecraft

namespace stagecraft {
namespace {

// The roofline of derived costs: a MoE decoder of V4.1 reads all 384 experts' weights for a
// 4096-token microbatch (4096·6 > 384), 27.2 GB in bf16, so on one device with 2.68 TB/s it is
// memory bound (≈10 ms against ≈9 ms of FLOPs); with the experts sharded over 16 devices it is
// compute bound again. The embedding reads one row per token.
TEST(LayerCostsTest, RooflineAndExpertSharding) {
  LayerSpec moe;
  moe.attention = AttentionMode::kReuse;
  moe.compress_ratio = 1;
  ModelSpec model;
  model.layers = {moe};
  model.seq_len = 4096;
  const double flops = 989.5e12 * 0.4;
  const double bytes = 3.35e12 * 0.8;
  ModelSpec one = model;
  EstimateLayerCosts(one, flops, bytes);
  const double routed = 384.0 * 3 * 5120 * 2304;
  const double weights = LayerParams(moe, one.dims);
  const double expected = (2 * weights + 34.0 * 5120 * 4096) / bytes;
  EXPECT_NEAR(one.layers[0].forward.ns() * 1e-9, expected, 1e-6);
  EXPECT_GT(one.layers[0].forward.ns() * 1e-9, LayerForwardFlops(moe, one.dims, 4096, 1) / flops);
  ModelSpec sharded = model;
  EstimateLayerCosts(sharded, flops, bytes, ExpertRun(16));
  EXPECT_EQ(sharded.layers[0].forward.ns(),
            std::llround(LayerForwardFlops(moe, sharded.dims, 4096, 1) / flops * 1e9));
  EXPECT_GT(routed, 0.9 * weights);  // the experts are most of the layer
}

}  // namespace
}  // namespace stagecraft
