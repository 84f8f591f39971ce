#include "model/transformer_kernels.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "hardware/presets.h"

namespace stagecraft {
namespace {

DeviceRates Rates(const char* preset) { return ClusterFromPreset(preset).value().rates(); }

// GPT-3 175B's layer shape (h 12288, 96 heads, biases, LayerNorm, learned positions).
TransformerSpec LargeGpt() {
  TransformerSpec spec;
  spec.layers = 2;
  spec.hidden = 12288;
  spec.heads = 96;
  spec.vocab = 51200;
  return spec;
}

// Llama-3 8B's layer shape: GQA, SwiGLU, no biases (RMSNorm), RoPE, flash attention.
TransformerSpec Llama() {
  TransformerSpec spec;
  spec.layers = 2;
  spec.hidden = 4096;
  spec.heads = 32;
  spec.kv_heads = 8;
  spec.ffn_hidden = 14336;
  spec.vocab = 128256;
  spec.swiglu = true;
  spec.causal = true;
  spec.tied_embeddings = false;
  spec.bias = false;
  spec.learned_positions = false;
  return spec;
}

// A small MoE (DeepSeek-V2-Lite's widths): 64 routed experts of 1408, 6 per token, 2 shared.
TransformerSpec Moe() {
  TransformerSpec spec = Llama();
  spec.layers = 3;
  spec.hidden = 2048;
  spec.heads = 16;
  spec.kv_heads = 0;
  spec.ffn_hidden = 10944;
  spec.experts = 64;
  spec.experts_per_token = 6;
  spec.expert_ffn = 1408;
  spec.shared_experts = 2;
  spec.dense_layers = 1;
  return spec;
}

TEST(TransformerKernelsTest, TensorParallelHalvesLargeGemms) {
  const DeviceRates h100 = Rates("h100");
  TransformerRun run;
  const LayerKernelTimes one = DecoderKernelTimes(LargeGpt(), run, h100, false);
  run.tensor_parallel = 2;
  const LayerKernelTimes two = DecoderKernelTimes(LargeGpt(), run, h100, false);
  // Every GEMM's N or K halves; tile quantization keeps it from exactly half.
  EXPECT_NEAR(two.forward_gemm / one.forward_gemm, 0.5, 0.5 * 0.15);
  EXPECT_NEAR(two.backward_gemm / one.backward_gemm, 0.5, 0.5 * 0.15);
  EXPECT_LT(two.forward, one.forward);
}

TEST(TransformerKernelsTest, GemmsArePartOfThePasses) {
  const DeviceRates h100 = Rates("h100");
  for (const TransformerSpec& spec : {LargeGpt(), Llama(), Moe()}) {
    for (bool fp8 : {false, true}) {
      TransformerRun run;
      run.fp8 = fp8;
      const LayerKernelTimes times = DecoderKernelTimes(spec, run, h100, spec.moe());
      EXPECT_GT(times.forward_gemm, 0.0);
      EXPECT_LE(times.forward_gemm, times.forward);
      EXPECT_LE(times.backward_gemm, times.input_grad + times.weight_grad);
      EXPECT_LE(times.attention_core, times.forward - times.forward_gemm);
    }
  }
}

// Full recomputation repeats the forward in the input-gradient pass (recompute_fraction of it);
// selective repeats the attention core. F and W are unchanged.
TEST(TransformerKernelsTest, RecomputationAddsToInputGrad) {
  const DeviceRates h100 = Rates("h100");
  for (const TransformerSpec& spec : {LargeGpt(), Llama()}) {
    TransformerRun run;
    const LayerKernelTimes none = DecoderKernelTimes(spec, run, h100, false);
    run.recompute = Recompute::kFull;
    const LayerKernelTimes full = DecoderKernelTimes(spec, run, h100, false);
    EXPECT_DOUBLE_EQ(full.input_grad, none.input_grad + none.forward);
    EXPECT_EQ(full.forward, none.forward);
    EXPECT_EQ(full.weight_grad, none.weight_grad);
    run.recompute_fraction = 0.5;
    EXPECT_DOUBLE_EQ(DecoderKernelTimes(spec, run, h100, false).input_grad,
                     none.input_grad + 0.5 * none.forward);
    run.recompute = Recompute::kSelective;
    run.recompute_fraction = 1.0;
    const LayerKernelTimes selective = DecoderKernelTimes(spec, run, h100, false);
    EXPECT_GT(none.attention_core, 0.0);
    EXPECT_DOUBLE_EQ(selective.input_grad, none.input_grad + none.attention_core);
    EXPECT_EQ(selective.forward, none.forward);
    // torchtitan's per-op policy: every op but the matmuls and the attention kernel again, and
    // every second matmul; between Megatron's selective and full.
    run.recompute = Recompute::kSelectiveOp;
    const LayerKernelTimes op = DecoderKernelTimes(spec, run, h100, false);
    const double non_matmul = none.forward - none.forward_gemm - none.attention_core;
    EXPECT_GT(non_matmul, 0.0);
    EXPECT_DOUBLE_EQ(op.input_grad, none.input_grad + 0.5 * none.forward_gemm + non_matmul);
    EXPECT_GT(op.input_grad, selective.input_grad);
    EXPECT_LT(op.input_grad, none.input_grad + none.forward);
  }
}

// Eager PyTorch: an RMSNorm in 6 kernels over fp32, SiLU apart from the gate product, rotary
// embedding in 4: more bytes and more launches than the fused kernels. The GEMMs are the same.
TEST(TransformerKernelsTest, EagerKernelsSlowerThanFused) {
  const DeviceRates h100 = Rates("h100");
  TransformerRun run;
  const LayerKernelTimes fused = DecoderKernelTimes(Llama(), run, h100, false);
  run.fused_kernels = false;
  const LayerKernelTimes eager = DecoderKernelTimes(Llama(), run, h100, false);
  EXPECT_GT(eager.forward, fused.forward);
  EXPECT_GT(eager.input_grad, fused.input_grad);
  EXPECT_EQ(eager.forward_gemm, fused.forward_gemm);
  EXPECT_EQ(eager.weight_grad, fused.weight_grad);
}

// FP8 GEMMs on h100 run at 1979·0.70 against 792.1 TFLOP/s: a large layer is faster even with
// the casts, though by less than the GEMMs' 1.75× (attention and the casts stay).
TEST(TransformerKernelsTest, Fp8SpeedsUpLargeLayerOnHopper) {
  const DeviceRates h100 = Rates("h100");
  TransformerRun run;
  const LayerKernelTimes bf16 = DecoderKernelTimes(LargeGpt(), run, h100, false);
  run.fp8 = true;
  const LayerKernelTimes fp8 = DecoderKernelTimes(LargeGpt(), run, h100, false);
  EXPECT_LT(fp8.forward, bf16.forward);
  EXPECT_LT(fp8.input_grad + fp8.weight_grad, bf16.input_grad + bf16.weight_grad);
  const double gemm_speedup = h100.fp8_flops_per_s * h100.kernels.fp8_gemm_efficiency /
                              (h100.bf16_flops_per_s * h100.kernels.gemm_efficiency);
  EXPECT_GT(fp8.forward, bf16.forward / gemm_speedup);
  // a100 has no FP8 tensor cores: the GEMMs run at the BF16 rate and the casts only add.
  const DeviceRates a100 = Rates("a100");
  EXPECT_GT(DecoderKernelTimes(LargeGpt(), run, a100, false).forward,
            DecoderKernelTimes(LargeGpt(), TransformerRun{}, a100, false).forward);
}

// The recipes order as their kernels say, on Llama-3 8B's layer (8192 tokens, H100): TE's
// delayed scaling (one fused cast-transpose, FP8 weights kept) is cheapest, torchao's tensorwise
// adds an amax pass and the weights' casts, rowwise adds the BF16 transposes, the rescales and
// a forward GEMM at 0.95 of the rate; rowwise_with_gw_hp's BF16 weight gradient is the slowest W.
// The float8 all-gather leaves the layer no weight to cast.
TEST(TransformerKernelsTest, Fp8RecipesOrderByTheirCasts) {
  const DeviceRates h100 = Rates("h100");
  TransformerRun run;
  run.seq_len = 8192;
  run.fp8 = true;
  const auto layer = [&](Fp8Recipe recipe, bool gathered = false) {
    TransformerRun r = run;
    r.fp8_recipe = recipe;
    r.fp8_weights_gathered = gathered;
    const LayerKernelTimes t = DecoderKernelTimes(Llama(), r, h100, false);
    return t.forward + t.input_grad + t.weight_grad;
  };
  const double delayed = layer(Fp8Recipe::kDelayed);
  const double tensorwise = layer(Fp8Recipe::kTensorwise);
  const double rowwise = layer(Fp8Recipe::kRowwise);
  EXPECT_LT(delayed, tensorwise);
  EXPECT_LT(tensorwise, rowwise);
  EXPECT_LT(layer(Fp8Recipe::kTensorwise, true), tensorwise);
  EXPECT_GT(layer(Fp8Recipe::kTensorwise, true), delayed);
  // Rowwise stays faster than BF16 on this layer (torchao's 8B run measures +10% end to end).
  TransformerRun bf16 = run;
  bf16.fp8 = false;
  const LayerKernelTimes b = DecoderKernelTimes(Llama(), bf16, h100, false);
  EXPECT_LT(rowwise, b.forward + b.input_grad + b.weight_grad);
  TransformerRun hp = run;
  hp.fp8_recipe = Fp8Recipe::kRowwiseWithGwHp;
  TransformerRun rw = run;
  rw.fp8_recipe = Fp8Recipe::kRowwise;
  EXPECT_GT(DecoderKernelTimes(Llama(), hp, h100, false).weight_grad,
            DecoderKernelTimes(Llama(), rw, h100, false).weight_grad);
}

// At s = 2048 the fused causal core does half the score FLOPs and never writes the s x s scores;
// the unfused path runs all of QKᵀ and ·V plus softmax and dropout over b·a·s² scores.
TEST(TransformerKernelsTest, CausalFlashCoreCheaperThanUnfused) {
  const DeviceRates h100 = Rates("h100");
  TransformerRun run;
  run.seq_len = 2048;
  TransformerSpec spec = LargeGpt();
  spec.causal = false;
  const LayerKernelTimes unfused = DecoderKernelTimes(spec, run, h100, false);
  spec.causal = true;
  const LayerKernelTimes flash = DecoderKernelTimes(spec, run, h100, false);
  EXPECT_LT(flash.attention_core, unfused.attention_core);
  EXPECT_LT(flash.forward, unfused.forward);
  EXPECT_LT(flash.input_grad, unfused.input_grad);
  EXPECT_EQ(flash.forward_gemm, unfused.forward_gemm);  // the linear layers are the same
}

// A tiny layer on a host that takes 1 s per kernel: each pass is its kernel count in seconds.
// GPT (biases, learned positions, unfused core), fused kernels: forward = QKV and projection
// GEMMs 2 + core 4 (QKᵀ, softmax, dropout, ·V) + MLP 2 GEMMs and GeLU 1 + 2 norms + 2 residual
// adds = 13; input grad = 2 + 6 (four GEMMs, softmax and dropout backward) + 3 + 2 + 2 = 15;
// weight grad = the 4 linear layers. FP8 adds the recipe's kernels per linear: delayed one cast
// forward and backward; tensorwise (the default) the input's and the weight's two amax stages and
// cast forward (6), the output gradient's three and the weight's second cast backward (4).
// Llama eager: 2 + causal core 1 + MLP 2 GEMMs and 2 activation kernels + 2 norms of 6 + 2 adds
// + rotary 4 = 25 forward and input grad.
TEST(TransformerKernelsTest, TinyLayerIsBoundByKernelIssue) {
  DeviceRates slow_host = Rates("h100");
  slow_host.kernels.host_seconds_per_kernel = 1.0;
  TransformerSpec gpt;
  gpt.layers = 1;
  gpt.hidden = 64;
  gpt.heads = 2;
  gpt.vocab = 128;
  TransformerRun run;
  run.seq_len = 16;
  const LayerKernelTimes times = DecoderKernelTimes(gpt, run, slow_host, false);
  EXPECT_EQ(times.forward, 13.0);
  EXPECT_EQ(times.input_grad, 15.0);
  EXPECT_EQ(times.weight_grad, 4.0);
  run.fp8 = true;
  run.fp8_recipe = Fp8Recipe::kDelayed;
  const LayerKernelTimes fp8 = DecoderKernelTimes(gpt, run, slow_host, false);
  EXPECT_EQ(fp8.forward, 13.0 + 4);
  EXPECT_EQ(fp8.input_grad, 15.0 + 4);
  EXPECT_EQ(fp8.weight_grad, 4.0);
  run.fp8_recipe = Fp8Recipe::kTensorwise;
  const LayerKernelTimes tensorwise = DecoderKernelTimes(gpt, run, slow_host, false);
  EXPECT_EQ(tensorwise.forward, 13.0 + 4 * 6);
  EXPECT_EQ(tensorwise.input_grad, 15.0 + 4 * 4);
  TransformerSpec llama = Llama();
  llama.hidden = 64;
  llama.heads = 2;
  llama.kv_heads = 1;
  llama.ffn_hidden = 128;
  run = TransformerRun{};
  run.seq_len = 16;
  run.fused_kernels = false;
  const LayerKernelTimes eager = DecoderKernelTimes(llama, run, slow_host, false);
  EXPECT_EQ(eager.forward, 25.0);
  EXPECT_EQ(eager.input_grad, 25.0);
  EXPECT_EQ(eager.weight_grad, 4.0);
  // The default host (10 µs a kernel) still bounds the tiny layer: its kernels sit at the floor.
  const DeviceRates h100 = Rates("h100");
  run = TransformerRun{};
  run.seq_len = 16;
  EXPECT_DOUBLE_EQ(DecoderKernelTimes(gpt, run, h100, false).forward,
                   13 * h100.kernels.host_seconds_per_kernel);
}

// Expert parallelism 2: half the experts per rank (the grouped GEMM's batch halves), each
// receiving twice the tokens (ep·T·k_e/E: 384 → 768 at T 4096); the same FLOPs, so F moves only
// by the grouped GEMMs' quantization, and exactly by the change in those two GEMMs.
TEST(TransformerKernelsTest, ExpertParallelRegroupsTheExperts) {
  const DeviceRates h100 = Rates("h100");
  const TransformerSpec spec = Moe();
  TransformerRun run;
  run.seq_len = 4096;
  const LayerKernelTimes ep1 = DecoderKernelTimes(spec, run, h100, true);
  run.expert_parallel = 2;
  const LayerKernelTimes ep2 = DecoderKernelTimes(spec, run, h100, true);
  const double h = 2048, fe = 1408, tokens = 4096, k_e = 6, experts = 64;
  auto grouped = [&](double ep) {
    const double per_expert = tokens * k_e * ep / experts;
    return GemmSeconds(h100, {per_expert, 2 * fe, h, experts / ep}) +
           GemmSeconds(h100, {per_expert, h, fe, experts / ep});
  };
  EXPECT_NEAR(ep2.forward - ep1.forward, grouped(2) - grouped(1), 1e-9 * ep1.forward);
  EXPECT_GT(ep2.forward / ep1.forward, 0.5);
  EXPECT_LT(ep2.forward / ep1.forward, 2.0);
  // A MoE layer is not the dense one.
  EXPECT_NE(DecoderKernelTimes(spec, TransformerRun{}, h100, false).forward,
            DecoderKernelTimes(spec, TransformerRun{}, h100, true).forward);
}

// The kernel-costed layer list: the embedding, every decoder (the first dense_layers dense, the
// rest MoE) and the head take their F/I/W from the kernel times, rounded to ns.
TEST(TransformerKernelsTest, LayerListUsesKernelTimes) {
  const DeviceRates h100 = Rates("h100");
  const TransformerSpec spec = Moe();
  TransformerRun run;
  run.tensor_parallel = 2;
  run.recompute = Recompute::kSelective;
  const std::vector<LayerSpec> layers = TransformerLayers(spec, run, h100);
  ASSERT_EQ(layers.size(), static_cast<size_t>(spec.layers) + 2);
  for (int32_t index = 0; index < spec.layers; ++index) {
    const LayerSpec& layer = layers[static_cast<size_t>(index) + 1];
    const LayerKernelTimes times = DecoderKernelTimes(spec, run, h100, spec.moe_layer(index));
    EXPECT_EQ(layer.kind, LayerKind::kDecoder);
    EXPECT_EQ(layer.forward, FromSeconds(times.forward)) << index;
    EXPECT_EQ(layer.input_grad, FromSeconds(times.input_grad)) << index;
    EXPECT_EQ(layer.weight_grad, FromSeconds(times.weight_grad)) << index;
  }
  EXPECT_NE(layers[1].forward, layers[2].forward);  // dense, then MoE
  EXPECT_EQ(layers[2].forward, layers[3].forward);
  const LayerKernelTimes head = HeadKernelTimes(spec, run, h100);
  EXPECT_EQ(layers.back().forward, FromSeconds(head.forward));
  EXPECT_EQ(layers.back().input_grad, FromSeconds(head.input_grad));
  const LayerKernelTimes embedding = EmbeddingKernelTimes(spec, run, h100);
  EXPECT_EQ(layers.front().forward, FromSeconds(embedding.forward));
  EXPECT_EQ(layers.front().weight_grad, FromSeconds(embedding.weight_grad));
}

// The head: final norm, the vocabulary-parallel projection T x V/t x h, cross entropy.
TEST(TransformerKernelsTest, HeadCostsAtLeastItsProjection) {
  const DeviceRates h100 = Rates("h100");
  TransformerRun run;
  run.tensor_parallel = 2;
  const TransformerSpec spec = Llama();
  const LayerKernelTimes head = HeadKernelTimes(spec, run, h100);
  const double projection = GemmSeconds(h100, {2048, 128256.0 / 2, 4096});
  EXPECT_EQ(head.forward_gemm, projection);
  EXPECT_GT(head.forward, projection);
}

// The embedding's weight gradient: the tokens' rows scattered into fp32 partial sums (10 bytes a
// row element), then PyTorch's dense table, zero-filled (2 bytes an element of this rank's
// vocabulary share) and added into the engine's fp32 gradient buffer (10). Llama 3 8B's table at
// TP 2: 64,128 x 4,096 elements; 2,048 tokens.
TEST(TransformerKernelsTest, EmbeddingGradientWritesTheDenseTable) {
  const DeviceRates h100 = Rates("h100");
  TransformerRun run;
  run.tensor_parallel = 2;
  const LayerKernelTimes embedding = EmbeddingKernelTimes(Llama(), run, h100);
  const double rows = 2048.0 * 4096;
  const double table = 128256.0 / 2 * 4096;
  EXPECT_DOUBLE_EQ(embedding.weight_grad, MemoryBoundSeconds(h100, rows * 10) +
                                              MemoryBoundSeconds(h100, table * 2) +
                                              MemoryBoundSeconds(h100, table * 10));
  EXPECT_DOUBLE_EQ(embedding.forward, MemoryBoundSeconds(h100, rows * 4));
  // Half the vocabulary share, half the table's time; the tokens' part unchanged.
  run.tensor_parallel = 4;
  const double halved = EmbeddingKernelTimes(Llama(), run, h100).weight_grad;
  EXPECT_NEAR(embedding.weight_grad - halved,
              (MemoryBoundSeconds(h100, table * 2) + MemoryBoundSeconds(h100, table * 10)) / 2,
              1e-12);
}

// The cross entropy on fp32 logits, pass by pass as Megatron-Core's unfused
// VocabParallelCrossEntropy makes them: 38 bytes a logit forward (cast 2 + 4, max 4, subtract,
// exp and divide 8 each, sum 4), 14 backward (scale 8, cast back 6). Two heads that differ only
// in their vocabulary differ by the projection's GEMMs and those bytes at the achieved bandwidth
// (the final norm is the same; every pass here is far above the kernel floor).
TEST(TransformerKernelsTest, CrossEntropyMovesItsEnginesBytesPerLogit) {
  const DeviceRates h100 = Rates("h100");
  TransformerRun run;
  run.seq_len = 4096;
  TransformerSpec small = Llama();
  small.vocab = 32768;
  TransformerSpec large = Llama();
  large.vocab = 131072;
  const LayerKernelTimes a = HeadKernelTimes(small, run, h100);
  const LayerKernelTimes b = HeadKernelTimes(large, run, h100);
  const double tokens = 4096;
  const double logits = tokens * (131072 - 32768);
  const double bandwidth = 3350e9 * 0.8;
  const double forward_gemms =
      GemmSeconds(h100, {tokens, 131072, 4096}) - GemmSeconds(h100, {tokens, 32768, 4096});
  const double input_gemms =
      GemmSeconds(h100, {tokens, 4096, 131072}) - GemmSeconds(h100, {tokens, 4096, 32768});
  EXPECT_NEAR(b.forward - a.forward, forward_gemms + 38 * logits / bandwidth, 1e-9);
  EXPECT_NEAR(b.input_grad - a.input_grad, input_gemms + 14 * logits / bandwidth, 1e-9);
  // Fused: Megatron's native passes 26 forward (14 backward); Transformer Engine's Triton
  // kernels read the bf16 logits once forward and rewrite them as the gradient backward, 2 + 4.
  for (const auto& [fusion, forward, backward] :
       {std::tuple{CrossEntropyFusion::kNative, 26.0, 14.0},
        std::tuple{CrossEntropyFusion::kTe, 2.0, 4.0}}) {
    TransformerRun fused = run;
    fused.cross_entropy = fusion;
    const LayerKernelTimes fa = HeadKernelTimes(small, fused, h100);
    const LayerKernelTimes fb = HeadKernelTimes(large, fused, h100);
    EXPECT_NEAR(fb.forward - fa.forward, forward_gemms + forward * logits / bandwidth, 1e-9);
    EXPECT_NEAR(fb.input_grad - fa.input_grad, input_gemms + backward * logits / bandwidth, 1e-9);
  }
}

// PyTorch's context_parallel (ring_merge): the same attention FLOPs in cp shorter kernels, plus its
// memory-bound copies, fp32 merges and fp32 gradient accumulation, each pass far above the
// kernel floor here, so the added time is their bytes at the achieved bandwidth (plus the floors
// of the log-sum-exp passes).
TEST(TransformerKernelsTest, PytorchRingAttentionAddsItsMergesAndAccumulation) {
  const DeviceRates h100 = Rates("h100");
  const TransformerSpec spec = Llama();
  TransformerRun run;
  run.seq_len = 131072;
  run.context_parallel = 4;
  const LayerKernelTimes plain = DecoderKernelTimes(spec, run, h100, false);
  run.ring_merge = true;
  const LayerKernelTimes ring = DecoderKernelTimes(spec, run, h100, false);
  const double cp = 4;
  const double queries = 131072 / cp;
  const double out = spec.heads * queries * 128;  // b x heads x Q x d_v
  const double kv = 2 * out;                      // K and V at the query heads
  const double dq = out;
  const double bandwidth = h100.hbm_bytes_per_s * h100.memory_efficiency;
  const double copies = cp * kv * 4;
  const double forward_bytes = copies + out * (6 + 38 * (cp - 1) + 6);
  const double backward_bytes =
      copies + dq * (4 + 10 * cp + 6) + kv * (4 + 10 + 13 * (cp - 1) + 8 * cp + 6);
  const double floors = 4 * (cp - 1) * h100.kernels.kernel_floor_s;
  // The cp ring kernels each meet Q/256 key blocks a query tile where the one kernel meets
  // s/256, so they run a little further from the peak (AttentionSeconds' roll-off).
  const double unit = 2 * spec.heads * queries * queries * 256 * 0.5;
  const auto kernels = [&](bool backward) {
    const double scale = backward ? 2.5 : 1.0;
    return cp * AttentionSeconds(h100, scale * unit, backward, queries / 256) -
           AttentionSeconds(h100, scale * cp * unit, backward, 131072.0 / 256);
  };
  EXPECT_GT(kernels(false), 0.0);
  EXPECT_NEAR(ring.forward - plain.forward, forward_bytes / bandwidth + floors + kernels(false),
              1e-9);
  EXPECT_NEAR(ring.attention_core - plain.attention_core,
              forward_bytes / bandwidth + floors + kernels(false), 1e-9);
  EXPECT_NEAR(ring.input_grad - plain.input_grad, backward_bytes / bandwidth + kernels(true), 1e-9);
  EXPECT_DOUBLE_EQ(ring.weight_grad, plain.weight_grad);
  // Without context parallelism there is no ring.
  run.context_parallel = 1;
  run.seq_len = 8192;
  const LayerKernelTimes single = DecoderKernelTimes(spec, run, h100, false);
  run.ring_merge = false;
  EXPECT_DOUBLE_EQ(single.forward, DecoderKernelTimes(spec, run, h100, false).forward);
}

// Transformer Engine under Megatron casts the FP8 weights on a step's first microbatch and keeps
// them (TransformerRun::fp8_weight_casts): a layer of 8 microbatches pays an eighth of the
// weight casts, between casting every microbatch and gathering FP8 weights (no cast at all).
TEST(TransformerKernelsTest, Fp8WeightCastsOncePerStepUnderTransformerEngine) {
  const DeviceRates h100 = Rates("h100");
  TransformerRun run;
  run.seq_len = 4096;
  run.fp8 = true;
  run.fp8_recipe = Fp8Recipe::kTensorwise;
  const LayerKernelTimes every = DecoderKernelTimes(Llama(), run, h100, false);
  run.fp8_weight_casts = 1.0 / 8;
  const LayerKernelTimes first = DecoderKernelTimes(Llama(), run, h100, false);
  run.fp8_weight_casts = 1.0;
  run.fp8_weights_gathered = true;
  const LayerKernelTimes none = DecoderKernelTimes(Llama(), run, h100, false);
  EXPECT_LT(first.forward, every.forward);
  EXPECT_GT(first.forward, none.forward);
  EXPECT_LT(first.input_grad, every.input_grad);
  EXPECT_GT(first.input_grad, none.input_grad);
  EXPECT_NEAR(every.forward - first.forward, 7.0 / 8 * (every.forward - none.forward),
              1e-3 * every.forward);
}

}  // namespace
}  // namespace stagecraft
