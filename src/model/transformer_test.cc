#include "model/transformer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "testing/models.h"

namespace stagecraft {
namespace {

TransformerSpec Gpt(int32_t layers, int64_t hidden, int64_t heads) {
  TransformerSpec spec;
  spec.layers = layers;
  spec.hidden = hidden;
  spec.heads = heads;
  spec.vocab = 51200;
  return spec;
}

// Megatron's parameter formula P = 12lh²(1 + 13/(12h) + (V+s)/(12lh)) (Narayanan et al. §5.1)
// counts per layer 12h² + 13h and the embedding (V + s)h; ours adds the final layer norm (2h).
// Table 1's 145.6B row: l 80, h 12288, V 51200, s 2048 → 145.6B (to 0.1B).
TEST(TransformerTest, ParametersMatchMegatron) {
  for (const auto& [layers, hidden, heads] :
       {std::tuple{24, int64_t{2304}, int64_t{24}}, std::tuple{80, int64_t{12288}, int64_t{96}},
        std::tuple{128, int64_t{25600}, int64_t{160}}}) {
    const TransformerSpec spec = Gpt(layers, hidden, heads);
    const double h = static_cast<double>(hidden);
    const double megatron =
        12 * layers * h * h * (1 + 13 / (12 * h) + (51200.0 + 2048) / (12 * layers * h));
    EXPECT_NEAR((TransformerParams(spec, 2048) - 2 * h) / megatron, 1.0, 1e-12);
  }
  EXPECT_NEAR(TransformerParams(Gpt(80, 12288, 96), 2048) / 1e9, 145.6, 0.05);
}

// Recomputation's working set, per layer: full keeps 2sbh and rematerialises the rest of
// Korthikanti's sbh(34 + 5as/h) (t = 1); selective rematerialises only the 5as/h scores, and
// nothing when the core is fused (causal); no recomputation, none.
TEST(TransformerTest, RecomputeWorkingSetIsWhatTheForwardDidNotKeep) {
  const TransformerSpec gpt = Gpt(24, 2048, 16);
  TransformerRun run;
  run.seq_len = 2048;
  run.micro_batch = 2;
  const double sbh = 2048.0 * 2 * 2048;
  const double scores = 5.0 * 16 * 2048 / 2048;
  EXPECT_EQ(DecoderRecomputeBytes(gpt, run), 0.0);
  run.recompute = Recompute::kFull;
  EXPECT_DOUBLE_EQ(DecoderRecomputeBytes(gpt, run), sbh * (34 + scores) - 2 * sbh);
  EXPECT_DOUBLE_EQ(DecoderActivationBytes(gpt, run) + DecoderRecomputeBytes(gpt, run),
                   sbh * (34 + scores));
  run.recompute = Recompute::kSelective;
  EXPECT_DOUBLE_EQ(DecoderRecomputeBytes(gpt, run), sbh * scores);
  TransformerSpec fused = gpt;
  fused.causal = true;
  EXPECT_EQ(DecoderRecomputeBytes(fused, run), 0.0);
  // Block recomputation of some layers: the recomputing ones hold the same working set.
  run.recompute = Recompute::kFull;
  run.recompute_fraction = 0.25;
  EXPECT_DOUBLE_EQ(DecoderRecomputeBytes(fused, run), 32 * sbh);
  // Uniform groups of 4: each layer keeps a quarter of a checkpoint, a group's backward holds
  // four layers' activations less the input it kept.
  run.recompute_fraction = 1.0;
  run.recompute_group = 4;
  EXPECT_DOUBLE_EQ(DecoderActivationBytes(fused, run), 2 * sbh / 4);
  EXPECT_DOUBLE_EQ(DecoderRecomputeBytes(fused, run), 4 * 34 * sbh - 2 * sbh);
}

// Megatron's FLOPs per iteration with full recomputation, 96Bslh²(1 + s/(6h) + V/(16lh)),
// from our per-layer counts: l decoders (forward + input grad + weight grad, recomputation in
// the input grad) and the head (forward and backward), B sequences as B microbatches of one.
TEST(TransformerTest, FlopsMatchMegatronWithFullRecompute) {
  const TransformerSpec spec = Gpt(80, 12288, 96);
  TransformerRun run;
  run.seq_len = 2048;
  run.micro_batch = 1;
  run.recompute = Recompute::kFull;
  const LayerFlops layer = DecoderLayerFlops(spec, run);
  const LayerFlops head = HeadFlops(spec, run);
  const double per_sequence = 80 * (layer.forward + layer.input_grad + layer.weight_grad) +
                              head.forward + head.input_grad + head.weight_grad;
  const double b = 2304, s = 2048, l = 80, h = 12288, v = 51200;
  const double megatron = 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  EXPECT_NEAR(b * per_sequence / megatron, 1.0, 1e-12);
  // Model FLOPs (no recomputation) are 3/4 of the decoder part.
  EXPECT_NEAR(layer.model / (layer.forward * 3), 1.0, 1e-12);
}

// Tensor parallelism divides the FLOPs; GQA shrinks the KV projections; causal halves the core.
TEST(TransformerTest, VariantsScaleTheCounts) {
  TransformerSpec spec = Gpt(2, 4096, 32);
  TransformerRun run;
  run.seq_len = 4096;
  const double full = DecoderLayerFlops(spec, run).forward;
  run.tensor_parallel = 4;
  EXPECT_NEAR(DecoderLayerFlops(spec, run).forward * 4 / full, 1.0, 1e-12);
  run.tensor_parallel = 1;
  spec.kv_heads = 8;  // GQA: K and V of 8 heads of 128
  const double h = 4096, s = 4096;
  EXPECT_NEAR(full - DecoderLayerFlops(spec, run).forward, 2 * s * h * (2 * h - 2 * 1024), 1);
  spec.kv_heads = 0;
  spec.causal = true;
  EXPECT_NEAR(full - DecoderLayerFlops(spec, run).forward, 2 * s * s * h, 1);
}

// The layer list: E, l decoders, L, with times from the roofline.
TEST(TransformerTest, LayerListAndRoofline) {
  const TransformerSpec spec = Gpt(4, 1024, 16);
  TransformerRun run;
  run.seq_len = 1024;
  const ComputeRate rate{100e12, 1e12};
  const auto layers = TransformerLayers(spec, run, rate);
  ASSERT_EQ(layers.size(), 6u);
  EXPECT_EQ(layers.front().kind, LayerKind::kEmbedding);
  EXPECT_EQ(layers.back().kind, LayerKind::kHead);
  const LayerFlops flops = DecoderLayerFlops(spec, run);
  EXPECT_EQ(layers[1].forward.ns(), std::llround(flops.forward / 100e12 * 1e9));
  // Compute bound here; with a slow memory the bytes bound wins.
  const auto slow = TransformerLayers(spec, run, ComputeRate{100e12, 1e9});
  EXPECT_GT(slow[1].forward, layers[1].forward);
}

// GPT's layer counted tensor by tensor is Korthikanti et al.'s Table 2, sbh(10 + 24/t + 5as/(ht))
// (all over t with sequence parallelism), under every recomputation it covers.
TEST(TransformerTest, GptLayerCountedByTensorIsKorthikantis) {
  for (const bool causal : {false, true}) {
    TransformerSpec gpt = Gpt(24, 2048, 16);
    gpt.causal = causal;
    for (const int32_t t : {1, 2, 8}) {
      for (const bool sp : {false, true}) {
        for (const Recompute recompute :
             {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
          TransformerRun run;
          run.seq_len = 2048;
          run.micro_batch = 2;
          run.tensor_parallel = t;
          run.sequence_parallel = sp;
          run.recompute = recompute;
          const double sbh = 2048.0 * 2 * 2048;
          const double scores = causal ? 0.0 : 5.0 * 16 * 2048 / (2048.0 * t);
          EXPECT_NEAR(DecoderActivationBytes(gpt, run) /
                          KorthikantiLayerBytes(sbh, t, scores, sp, recompute),
                      1.0, 1e-12)
              << "t " << t << " sp " << sp << " recompute " << RecomputeName(recompute);
        }
      }
    }
  }
}

// Llama 3 8B's layer (h 4096, 8 KV heads of 128, SwiGLU of 14336), bytes a token: the norms'
// inputs and outputs 16 (fused) or 32 (eager RMSNorm keeps x.float() and the normalised value);
// q 8192, k and v 2048 each, the attention output 8192; SwiGLU 6 x 14336 fused, 8 x eager.
// torchtitan's per-op policy keeps the block input, wq's, wv's, w1's and w2's outputs (mm 1, 3,
// 5, 7) and SDPA's output: 8192 + 8192 + 2048 + 28672 + 8192 + 8192 = 63488 = 15.5h.
TEST(TransformerTest, LlamaLayerCountedByTensor) {
  const TransformerSpec llama = Llama3_8bSpec();
  TransformerRun run;
  run.seq_len = 8192;
  run.micro_batch = 2;
  const double tokens = 8192.0 * 2;
  const double attention = 8192 + 2048 + 2048 + 8192;
  EXPECT_DOUBLE_EQ(DecoderActivationBytes(llama, run),
                   tokens * (4 * 4096 * 2 + attention + 6 * 14336));
  run.fused_kernels = false;
  EXPECT_DOUBLE_EQ(DecoderActivationBytes(llama, run),
                   tokens * (8 * 4096 * 2 + attention + 8 * 14336));
  run.recompute = Recompute::kSelectiveOp;
  EXPECT_DOUBLE_EQ(DecoderActivationBytes(llama, run), tokens * 15.5 * 4096);
  // Under TP 8 (sequence parallel, as torchtitan runs it) the block input and the two
  // reduce-scatters' outputs are split over the ranks, the column-parallel outputs too, and w2's
  // output before its reduce-scatter is whole on every rank.
  run.tensor_parallel = 8;
  run.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(DecoderActivationBytes(llama, run),
                   tokens * ((3 * 8192 + 8192 + 2048 + 28672 + 8192) / 8.0 + 8192));
  // Full recomputation keeps the input; its backward rematerialises the rest of the layer.
  run.recompute = Recompute::kFull;
  run.fused_kernels = true;
  EXPECT_DOUBLE_EQ(DecoderActivationBytes(llama, run), tokens * 8192 / 8);
  EXPECT_DOUBLE_EQ(DecoderRecomputeBytes(llama, run),
                   tokens * ((4 * 8192 + attention + 6 * 14336) / 8 - 8192 / 8.0));
}

// A MoE layer keeps per routed copy of a token its input, SwiGLU's tensors and the expert's
// output, and the router's fp32 probabilities: more than the dense layer of the same model.
TEST(TransformerTest, MoeLayerKeepsItsExpertsTokens) {
  TransformerSpec moe = Llama3_8bSpec();
  moe.experts = 64;
  moe.experts_per_token = 6;
  moe.expert_ffn = 1408;
  moe.shared_experts = 2;
  TransformerRun run;
  run.seq_len = 4096;
  const double tokens = 4096;
  const double dense = DecoderActivationBytes(moe, run, false);
  const double routed = DecoderActivationBytes(moe, run, true);
  EXPECT_DOUBLE_EQ(routed - dense, tokens * (4 * 64 + 6 * (2 * 4096 + 6 * 1408 + 2 * 4096) +
                                             6 * 2 * 1408 - 6 * 14336));
  // Per-op policy under TP 2: the matmuls wq, wk, wv, wo, the router, the experts' w1, w3, w2,
  // the shared experts' w1, w3, w2 in turn, every other one kept (wq, wv, the router, the
  // experts' w3, the shared w1 and w2); the reduce-scatters after wo and the shared w2 (the
  // experts' w2 goes to the combine); the block input and SDPA's output.
  run.recompute = Recompute::kSelectiveOp;
  run.tensor_parallel = 2;
  run.sequence_parallel = true;
  const double replicated = 2 * 4096 + 2 * 64 + 2 * 2 * 4096;
  const double sharded = 2 * 4096 + 2 * 1024 + 2 * 6 * 1408 + 2 * 2 * 1408 + 2 * 4096;
  const double partial = 2 * 4096;
  EXPECT_DOUBLE_EQ(DecoderActivationBytes(moe, run, true),
                   tokens * (replicated / 2 + sharded / 2 + partial));
}

// The loss's held bytes and its backward's working set per logit (b·s/cp tokens x V/t).
TEST(TransformerTest, HeadLossByImplementation) {
  const TransformerSpec llama = Llama3_8bSpec();
  TransformerRun run;
  run.seq_len = 8192;
  run.micro_batch = 2;
  run.context_parallel = 2;
  const double logits = 8192.0 * 2 / 2 * 128256;
  const auto check = [&](CrossEntropyFusion fusion, double held, double working) {
    run.cross_entropy = fusion;
    const HeadLoss loss = HeadLossBytes(llama, run);
    EXPECT_DOUBLE_EQ(loss.held, held * logits) << static_cast<int>(fusion);
    EXPECT_DOUBLE_EQ(loss.working, working * logits) << static_cast<int>(fusion);
  };
  check(CrossEntropyFusion::kNone, 4, 2);
  check(CrossEntropyFusion::kNative, 4, 2);
  check(CrossEntropyFusion::kTe, 2, 0);
  check(CrossEntropyFusion::kTorch, 4, 8);
  check(CrossEntropyFusion::kTorchCompiled, 2, 2);
  run.tensor_parallel = 4;
  run.cross_entropy = CrossEntropyFusion::kTorch;
  EXPECT_DOUBLE_EQ(HeadLossBytes(llama, run).working, 12 * logits / 4);
}

}  // namespace
}  // namespace stagecraft
