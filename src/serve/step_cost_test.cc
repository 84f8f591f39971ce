#include "serve/step_cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "hardware/presets.h"
#include "testing/models.h"

namespace stagecraft {
namespace {

ClusterSpec Preset(const char* name) {
  auto cluster = ClusterFromPreset(name);
  EXPECT_TRUE(cluster.ok());
  return cluster.value();
}

ReplicaModel Replica(const TransformerSpec& model, const char* cluster, ServeShape shape,
                     EngineOptions engine = {}) {
  auto replica = BuildReplicaModel(model, Preset(cluster), shape, engine);
  EXPECT_TRUE(replica.ok()) << replica.error().message;
  return replica.value();
}

// OPT-13B (huggingface.co/facebook/opt-13b config.json: 40 layers, hidden 5120, 40 heads, MHA).
// The vLLM paper (Kwon et al., SOSP'23, §3) gives its KV cache per token: "2 (key and value
// vectors) x 5120 (hidden state size) x 40 (number of layers) x 2 (bytes per FP16) = 800 KB".
TEST(ServeKvTest, Opt13bMhaIs800KbPerToken) {
  TransformerSpec spec;
  spec.layers = 40;
  spec.hidden = 5120;
  spec.heads = 40;
  spec.ffn_hidden = 20480;
  spec.vocab = 50272;
  const ReplicaModel replica = Replica(spec, "a100", {.tp = 1, .pp = 1, .replicas = 1});
  EXPECT_EQ(replica.kv.attention, AttentionKind::kMha);
  EXPECT_EQ(replica.kv.total(), 2.0 * 5120 * 40 * 2);
  EXPECT_EQ(replica.kv.total(), 800.0 * 1024);
  EXPECT_EQ(replica.kv_bytes_per_token_per_gpu, replica.kv.total());
}

// Llama-3-70B, GQA: 2 (K, V) x 8 KV heads x 128 x 80 layers x 2 B = 327,680 B per token. Under
// TP 8 each GPU keeps one KV head of every layer: 327,680 / 8 = 40,960 B.
TEST(ServeKvTest, Llama3_70bGqaShardsByHeadsUnderTp) {
  const ReplicaModel replica = Replica(Llama3_70bSpec(), "h100", {.tp = 8, .pp = 1, .replicas = 1});
  EXPECT_EQ(replica.kv.attention, AttentionKind::kGqa);
  EXPECT_EQ(replica.kv.total(), 327'680.0);
  EXPECT_EQ(replica.kv_heads_per_gpu, 1);
  EXPECT_FALSE(replica.kv_replicated);
  EXPECT_EQ(replica.kv_bytes_per_token_per_gpu, 327'680.0 / 8);
  // PP 2 over two nodes' worth of GPUs: each stage keeps half of the layers.
  const ReplicaModel staged =
      Replica(Llama3_70bSpec(), "h100x2", {.tp = 8, .pp = 2, .replicas = 1});
  EXPECT_EQ(staged.kv_bytes_per_token_per_gpu, 327'680.0 / 16);
  EXPECT_GT(staged.kv_capacity_tokens, 2 * replica.kv_capacity_tokens);
}

// TP above the KV heads: 4 KV heads on 8 ranks, one head per rank, each kept twice (vLLM's
// num_kv_head_replicas = tp / g), so a GPU holds 1/4 of a token's KV, not 1/8.
TEST(ServeKvTest, TpAboveKvHeadsReplicates) {
  TransformerSpec spec = Llama3_70bSpec();
  spec.kv_heads = 4;
  const ReplicaModel replica = Replica(spec, "h100", {.tp = 8, .pp = 1, .replicas = 1});
  EXPECT_TRUE(replica.kv_replicated);
  EXPECT_EQ(replica.kv_heads_per_gpu, 1);
  EXPECT_EQ(replica.kv_bytes_per_token_per_gpu, replica.kv.total() / 4);
}

// DeepSeek-V3 config.json (huggingface.co/deepseek-ai/DeepSeek-V3): 61 layers, hidden 7168, 128
// heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128, 256 routed
// experts of 2048 (8 per token), 1 shared, the first 3 layers dense (18432), vocab 129280.
// MLA caches (512 + 64) x 61 x 2 B = 70,272 B per token (DeepSeek-V2 §2.1.4), and every TP rank
// keeps all of it. Served with FP8 weights (the released checkpoint's format) on H200 TP 8.
TransformerSpec DeepSeekV3Spec() {
  TransformerSpec spec;
  spec.layers = 61;
  spec.hidden = 7168;
  spec.heads = 128;
  spec.q_lora_rank = 1536;
  spec.kv_lora_rank = 512;
  spec.qk_nope_dim = 128;
  spec.qk_rope_dim = 64;
  spec.v_head_dim = 128;
  spec.ffn_hidden = 18432;
  spec.experts = 256;
  spec.experts_per_token = 8;
  spec.expert_ffn = 2048;
  spec.shared_experts = 1;
  spec.dense_layers = 3;
  spec.vocab = 129280;
  spec.swiglu = true;
  spec.tied_embeddings = false;
  spec.bias = false;
  spec.learned_positions = false;
  return spec;
}

TEST(ServeKvTest, DeepSeekV3MlaLatentIsReplicatedUnderTp) {
  const TransformerSpec spec = DeepSeekV3Spec();
  EngineOptions fp8;
  fp8.weight_bytes = 1;
  const ReplicaModel replica = Replica(spec, "h200", {.tp = 8, .pp = 1, .replicas = 1}, fp8);
  EXPECT_EQ(replica.kv.attention, AttentionKind::kMla);
  EXPECT_EQ(replica.kv.total(), (512.0 + 64) * 61 * 2);
  EXPECT_EQ(replica.kv_bytes_per_token_per_gpu, 70'272.0);
  EXPECT_TRUE(replica.kv_replicated);
  // Per decoder on one of 8 ranks (16 heads): a prefill attends in the decompressed MHA form,
  // 2 x 16 x (128 + 64 + 128) FLOPs a query-key pair; a decode over the latent (absorbed),
  // 2 x 16 x (512 + 64 + 512), reading 1,152 B of latent per cached token.
  EXPECT_EQ(replica.kernels.prefill_flops_per_pair, 2.0 * 16 * (128 + 64 + 128));
  EXPECT_EQ(replica.kernels.decode_flops_per_pair, 2.0 * 16 * (512 + 64 + 512));
  EXPECT_EQ(replica.kernels.kv_bytes_per_token, (512.0 + 64) * 2);
  // The 3 dense and the 58 MoE decoders, each class costed once. The routed experts run as one
  // grouped GEMM over the 256 experts' slices on this rank (gate and up: N = 2 x 2048 / 8).
  ASSERT_EQ(replica.kernels.layers.size(), 2u);
  EXPECT_EQ(replica.kernels.layers[0].count, 3);
  EXPECT_EQ(replica.kernels.layers[1].count, 58);
  const auto& moe = replica.kernels.layers[1].kernels;
  const auto grouped = std::find_if(moe.begin(), moe.end(), [](const ServeKernel& kernel) {
    return kernel.rows == KernelRows::kExpertTokens;
  });
  ASSERT_NE(grouped, moe.end());
  EXPECT_EQ(grouped->batch, 256);
  EXPECT_EQ(grouped->n, 2.0 * 2048 / 8);
  EXPECT_EQ(grouped->k, 7168);
  EXPECT_EQ(grouped->weight_bytes, 1);
  // In bf16 the 671B parameters (1.34 TB) do not fit 8 x 141 GB.
  auto bf16 = BuildReplicaModel(spec, Preset("h200"), {.tp = 8, .pp = 1, .replicas = 1}, {});
  ASSERT_FALSE(bf16.ok());
  EXPECT_EQ(bf16.error().kind, ErrorKind::kInfeasible);
}

// DeepSeek-V3 decode at batch 64 on 8 H100, EP 8 (tp 1: eight attention data-parallel groups,
// vLLM's --data-parallel-size 8 --enable-expert-parallel). Each GPU holds 64 / 8 = 8 tokens and
// per MoE layer dispatches each token's hidden state to its 8 experts, FP8: 8 x 8 x 7168 x 1 B
// = 458,752 B, and takes back the combine in bf16: 917,504 B. A ring all-to-all over the 8 GPUs
// of one node (comm/collective.h): (n - 1) alpha + (n - 1)/n S / beta, alpha = 3 us (the
// preset's NVLink step latency), beta = 450 GB/s x 370/450 = 370 GB/s usable:
//   dispatch 7 x 3 us + 7/8 x 458,752 / 370e9 s = 21 us + 1.085 us = 22.085 us
//   combine  7 x 3 us + 7/8 x 917,504 / 370e9 s = 21 us + 2.170 us = 23.170 us
// latency-dominated (42 of the 45.3 us are alpha); 58 MoE layers: 2.625 ms per iteration.
TEST(ServeEpTest, DeepSeekV3AllToAllsOnEightH100) {
  const ExpertAllToAll layer =
      ExpertAllToAllSeconds(Preset("h100"), 8, DeepSeekV3Spec(), 64.0 / 8, /*dispatch_bytes=*/1,
                            /*combine_bytes=*/2);
  EXPECT_EQ(layer.dispatch_bytes, 458'752.0);
  EXPECT_EQ(layer.combine_bytes, 917'504.0);
  const double alpha = 3e-6;
  const double beta = 370e9;
  EXPECT_NEAR(layer.dispatch_s, 7 * alpha + 7.0 / 8 * 458'752 / beta, 1e-9);
  EXPECT_NEAR(layer.combine_s, 7 * alpha + 7.0 / 8 * 917'504 / beta, 1e-9);
  EXPECT_NEAR(58 * layer.seconds(), 2.625e-3, 1e-6);
  // Across two nodes (EP 16, 8 per node): alpha is the NIC's 6 us and the bytes leaving the
  // node go over one 400 Gb/s NIC per GPU (47.5 GB/s usable): 8/16 of S over it.
  const ExpertAllToAll wide =
      ExpertAllToAllSeconds(Preset("h100x2"), 16, DeepSeekV3Spec(), 64.0 / 16, 1, 2);
  EXPECT_NEAR(wide.dispatch_s, 15 * 6e-6 + 8.0 / 16 * (4 * 8 * 7168) / 47.5e9, 1e-9);
  // Nothing to exchange: one GPU, or a dense model.
  EXPECT_EQ(ExpertAllToAllSeconds(Preset("h100"), 1, DeepSeekV3Spec(), 8, 1, 2).seconds(), 0);
  EXPECT_EQ(ExpertAllToAllSeconds(Preset("h100"), 8, Llama3_70bSpec(), 8, 1, 2).seconds(), 0);
}

// The same model on 8 H200 (FP8 weights), TP 8 against EP 8. TP 8 splits every weight 8 ways
// and keeps the whole MLA latent on each GPU; EP 8 keeps the attention, dense layers, shared
// experts, embedding and head whole on every GPU (tp 1) and 256 / 8 = 32 routed experts each,
// but each of the 8 attention groups caches only its own requests: 8 x the blocks of one GPU.
TEST(ServeEpTest, DeepSeekV3TpAgainstEp) {
  EngineOptions fp8;
  fp8.weight_bytes = 1;
  fp8.fp8_compute = true;
  const TransformerSpec spec = DeepSeekV3Spec();
  const ReplicaModel tp = Replica(spec, "h200", {.tp = 8, .pp = 1, .replicas = 1}, fp8);
  const ReplicaModel ep = Replica(spec, "h200", {.tp = 1, .pp = 1, .replicas = 1, .ep = 8}, fp8);
  EXPECT_EQ(ep.shape.attention_dp(), 8);
  EXPECT_EQ(ep.shape.gpus_per_replica(), 8);
  const double routed = 58.0 * 256 * 3 * 7168 * 2048;  // all routed experts, 1 B each
  const double all = TransformerParams(spec, 0);
  EXPECT_NEAR(tp.weight_bytes_per_gpu, all / 8, 1);
  EXPECT_NEAR(ep.weight_bytes_per_gpu, all - routed + routed / 8, 1);
  EXPECT_EQ(ep.kv_bytes_per_token_per_gpu, 70'272.0);
  EXPECT_FALSE(ep.kv_replicated);
  const double blocks = std::floor(ep.kv_budget_bytes_per_gpu / (70'272.0 * 16));
  EXPECT_EQ(ep.kv_capacity_tokens, static_cast<int64_t>(8 * blocks * 16));
  EXPECT_GT(ep.kv_capacity_tokens, 4 * tp.kv_capacity_tokens);
  EXPECT_EQ(ep.engine.max_seqs, 8 * 256);
  // Batch 64 at context 576: TP 8 all-reduces twice per layer (122); EP 8 has no TP group and
  // exchanges tokens twice per MoE layer (116 all-to-alls), as the test above.
  const IterationWork decode = {
      .new_tokens = 64, .sequences = 64, .context_tokens = 64 * 576, .attention_pairs = 64 * 577};
  const IterationCost on_tp = IterationSeconds(tp, decode);
  const IterationCost on_ep = IterationSeconds(ep, decode);
  EXPECT_EQ(on_tp.allreduces, 122);
  EXPECT_EQ(on_tp.alltoalls, 0);
  EXPECT_EQ(on_ep.allreduces, 0);
  EXPECT_EQ(on_ep.alltoalls, 116);
  const ExpertAllToAll layer = ExpertAllToAllSeconds(Preset("h200"), 8, spec, 8, 1, 2);
  EXPECT_DOUBLE_EQ(on_ep.alltoall_s, 58 * layer.seconds());
  // Each GPU's decode attention reads its group's 8 sequences' latent (not all 64): per layer
  // 8 x 577 tokens x 1,152 B, against 8 x 577 pairs x 2 x 128 heads x (512 + 64 + 512) FLOPs at
  // the attention rate.
  const DeviceRates rates = Preset("h200").rates();
  const double per_layer = std::max(MemoryBoundSeconds(rates, 8 * 577 * 1152.0),
                                    AttentionSeconds(rates, 8 * 577 * 2.0 * 128 * 1088, false, 0));
  EXPECT_NEAR(on_ep.attention_s, 61 * per_layer, 1e-12);
  // Its grouped GEMM holds 32 whole experts (N = 2 x 2048), each of the 64 x 8 / 256 = 2 rows
  // per expert over the 256 x RoutedExpertsTouched(64) experts touched.
  const auto& moe = ep.kernels.layers[1].kernels;
  const auto grouped = std::find_if(moe.begin(), moe.end(), [](const ServeKernel& kernel) {
    return kernel.rows == KernelRows::kExpertTokens;
  });
  ASSERT_NE(grouped, moe.end());
  EXPECT_EQ(grouped->batch, 32);
  EXPECT_EQ(grouped->n, 2.0 * 2048);
  EXPECT_EQ(ep.kernels.expert_split, 8);
  EXPECT_DOUBLE_EQ(on_ep.total_s,
                   std::max(on_ep.compute_s + on_ep.memory_s, on_ep.launch_s) + on_ep.alltoall_s);
}

// EP's rules: a MoE model, a multiple of tp (EP = TP x DP), dividing the routed experts.
TEST(ServeEpTest, BadExpertParallelismIsAnError) {
  const auto build = [](const TransformerSpec& spec, ServeShape shape) {
    return BuildReplicaModel(spec, Preset("h200x2"), shape, {.weight_bytes = 1});
  };
  auto dense = build(Llama3_70bSpec(), {.tp = 8, .pp = 1, .replicas = 1, .ep = 8});
  ASSERT_FALSE(dense.ok());
  EXPECT_NE(dense.error().message.find("mixture-of-experts"), std::string::npos);
  auto not_multiple = build(DeepSeekV3Spec(), {.tp = 4, .pp = 1, .replicas = 1, .ep = 6});
  ASSERT_FALSE(not_multiple.ok());
  EXPECT_NE(not_multiple.error().message.find("multiple of --tp 4"), std::string::npos);
  auto not_divisor = build(DeepSeekV3Spec(), {.tp = 2, .pp = 1, .replicas = 1, .ep = 6});
  ASSERT_FALSE(not_divisor.ok());
  EXPECT_NE(not_divisor.error().message.find("divide the 256 routed experts"), std::string::npos);
  EXPECT_EQ(not_divisor.error().kind, ErrorKind::kBadInput);
}

// Sliding windows in the replica: Mistral-7B v0.1 (window 4096 on all 32 layers, 8 KV heads of
// 128) on one H100. A request of c tokens holds min(c, 4096) tokens' worth of KV; with the window
// on 16 of 32 layers, c - (c - 4096) / 2: 18,432 at 32,768 (16 x 32,768 + 16 x 4,096 over 32).
TEST(ServeKvTest, SlidingWindowBoundsTheTokensHeld) {
  TransformerSpec spec = Mistral7bV01Spec();
  const ReplicaModel all = Replica(spec, "h100", {.tp = 1, .pp = 1, .replicas = 1});
  EXPECT_EQ(all.kv_bytes_per_token_per_gpu, 131'072.0);
  EXPECT_EQ(KvTokensHeld(all, 1000), 1000);
  EXPECT_EQ(KvTokensHeld(all, 8192), 4096);
  EXPECT_EQ(KvTokensHeld(all, 32768), 4096);
  spec.window_layers = 16;
  const ReplicaModel half = Replica(spec, "h100", {.tp = 1, .pp = 1, .replicas = 1});
  EXPECT_EQ(KvTokensHeld(half, 32768), 18'432);
  EXPECT_EQ(half.kv_capacity_tokens, all.kv_capacity_tokens);  // capacity is per token of KV
  // A decode at context 32,768 reads the KV held, not the context.
  const IterationWork work = {.new_tokens = 1,
                              .sequences = 1,
                              .context_tokens = KvTokensHeld(all, 32768),
                              .attention_pairs = 32769};
  const IterationWork unbounded = {
      .new_tokens = 1, .sequences = 1, .context_tokens = 32768, .attention_pairs = 32769};
  EXPECT_LT(IterationSeconds(all, work).attention_s, IterationSeconds(all, unbounded).attention_s);
}

// A MoE decode streams only the routed experts its tokens touch: with E = 256 and k = 8
// (DeepSeek-V3), one token touches 8/256 of them, two tokens 1 - (248/256)^2, and a prefill
// chunk of 8192 tokens all but (248/256)^8192 ~ 1e-113 of them. A dense model streams all.
TEST(ServeStepTest, MoeDecodeStreamsTheTouchedExperts) {
  TransformerSpec moe;
  moe.experts = 256;
  moe.experts_per_token = 8;
  EXPECT_DOUBLE_EQ(RoutedExpertsTouched(moe, 1), 8.0 / 256);
  EXPECT_DOUBLE_EQ(RoutedExpertsTouched(moe, 2), 1 - (248.0 / 256) * (248.0 / 256));
  EXPECT_DOUBLE_EQ(RoutedExpertsTouched(moe, 8192), 1.0);
  EXPECT_EQ(RoutedExpertsTouched(Llama3_70bSpec(), 1), 1.0);
}

// Llama-3-70B parameters, counted by hand from the dimensions: a layer has QKV 8192 x (8192 +
// 2 x 8 x 128) = 83,886,080, O 8192^2 = 67,108,864, MLP 3 x 8192 x 28672 = 704,643,072 and two
// RMSNorms 16,384: 855,654,400; 80 layers 68,452,352,000; embedding and head 128256 x 8192 =
// 1,050,673,152 each; final norm 8192. In all 70,553,706,496.
constexpr double kLayer =
    8192.0 * (8192 + 2 * 8 * 128) + 8192.0 * 8192 + 3.0 * 8192 * 28672 + 2.0 * 8192;
constexpr double kVocabRows = 128256.0 * 8192;
constexpr double kParams = 80 * kLayer + 2 * kVocabRows + 8192;

// A Llama-3-70B decoder layer on one of 8 ranks (8 query heads and 1 KV head of 128, MLP 28672 /
// 8 = 3584), `tokens` rows, summed from the kernel model's functions as vLLM's LlamaDecoderLayer
// launches them: the fused add-and-RMSNorm (4h bytes a token, twice), the QKV GEMM (N = (8 + 2)
// x 128), rotary on q and k, the KV-cache write, the output GEMM, gate-and-up, SiLU-and-multiply,
// down. Weights of `weight_bytes`, GEMMs at the FP8 rate with `fp8`.
double LlamaLayerKernelSeconds(const DeviceRates& rates, double tokens, bool fp8 = false,
                               double weight_bytes = 2, int kv_bytes = 2) {
  const auto gemm = [&](double n, double k) {
    return GemmTime(rates,
                    {.m = tokens, .n = n, .k = k, .batch = 1, .b_element_bytes = weight_bytes}, fp8,
                    KernelSetting::kInStep)
        .seconds;
  };
  const auto memory = [&](double bytes) { return MemoryBoundSeconds(rates, tokens * bytes); };
  return gemm(10 * 128, 8192) + gemm(8192, 1024) + gemm(2 * 3584, 8192) + gemm(8192, 3584) +
         2 * memory(4 * 8192 * 2) + memory(2 * 9 * 128 * 2) + memory(2 * 128 * (2 + kv_bytes)) +
         memory(3 * 3584 * 2);
}

// Once an iteration: the embedding rows, the final norm, the LM head (N = 128256 / 8) over the
// sequences that emit a logit.
double LlamaOnceSeconds(const DeviceRates& rates, double tokens, double sequences, bool fp8 = false,
                        double weight_bytes = 2) {
  const double head = sequences > 0 ? GemmTime(rates,
                                               {.m = sequences,
                                                .n = 128256.0 / 8,
                                                .k = 8192,
                                                .batch = 1,
                                                .b_element_bytes = weight_bytes},
                                               fp8, KernelSetting::kInStep)
                                          .seconds
                                    : 0.0;
  return MemoryBoundSeconds(rates, tokens * 2 * 8192 * 2) +
         MemoryBoundSeconds(rates, tokens * 4 * 8192 * 2) + head;
}

// Llama-3-70B decode on H100 TP 8, batch 64 at context 4096, kernel by kernel: the 80 identical
// layers' kernels (LlamaLayerKernelSeconds at M = 64) and their attention (a decode reads its
// 4097 tokens' KV of one head, 512 B a token per layer: 134 MB at 2.68 TB/s, well above its
// 64 x 4097 x 2 x 8 x 256 FLOPs at the attention rate), the embedding, norm and head once, and
// the 160 all-reduces of 64 x 8192 x 2 B = 1 MiB over NVLink (alpha 3 us assumed, beta 450 GB/s
// x 370/450: two-stage 2 x 3 us + 2 x 7/8 x 1,048,576 / 370e9 = 10.960 us, against one-stage's
// 22.8 us): 1.7536 ms.
TEST(ServeStepTest, Llama3_70bDecodeOnH100Tp8IsTheSumOfItsKernels) {
  const ReplicaModel replica = Replica(Llama3_70bSpec(), "h100", {.tp = 8, .pp = 1, .replicas = 1});
  EXPECT_EQ(TransformerParams(Llama3_70bSpec(), 0), kParams);
  IterationWork work;
  work.new_tokens = 64;
  work.sequences = 64;
  work.context_tokens = 64.0 * 4096;
  work.attention_pairs = 64.0 * 4096 + 64;
  const IterationCost cost = IterationSeconds(replica, work);
  const DeviceRates rates = Preset("h100").rates();
  const double attention = std::max(MemoryBoundSeconds(rates, 64.0 * 4097 * 512),
                                    AttentionSeconds(rates, 64.0 * 4097 * 2 * 8 * 256, false, 0));
  EXPECT_EQ(attention, MemoryBoundSeconds(rates, 64.0 * 4097 * 512));
  EXPECT_NEAR(cost.attention_s, 80 * attention, 1e-12);
  const double kernels =
      80 * LlamaLayerKernelSeconds(rates, 64) + 80 * attention + LlamaOnceSeconds(rates, 64, 64);
  EXPECT_NEAR(cost.compute_s + cost.memory_s, kernels, 1e-12);
  EXPECT_EQ(cost.allreduces, 160);
  const double allreduce_s = 2 * 3e-6 + 2.0 * 7 / 8 * 1'048'576 / 370e9;
  EXPECT_NEAR(cost.allreduce_s, 160 * allreduce_s, 1e-12);
  EXPECT_NEAR(cost.total_s, kernels + 160 * allreduce_s, 1e-12);
  // 80 x (9 kernels + the attention) + 3; with CUDA graphs their floors are inside the sum.
  EXPECT_EQ(cost.kernels, 803);
  EXPECT_NEAR(cost.launch_s, 803 * 5e-6, 1e-15);
  EXPECT_LT(cost.launch_s, kernels);
  EXPECT_EQ(cost.handoff_s, 0.0);
  // Above the old roofline's 12.24 ms (weights and KV at the HBM rate plus the all-reduces, no
  // per-kernel latency): each GEMM adds its 5 us and each small kernel its floor.
  EXPECT_GT(cost.total_s, 12.24e-3);
}

// A prefill chunk's attention runs the model's kernel (transformer.attn_impl) at its rate with
// the roll-off of its key blocks: 4096 new tokens of one prompt meet 4097 / 2 keys each on
// average, 16 blocks of 128. On H100 FlashAttention-3 reaches 616 of 989.5 TFLOP/s and
// FlashAttention-2 the preset's 0.33 of the peak; on A100 FlashAttention-3 does not run and
// falls back to FlashAttention-2.
TEST(ServeStepTest, PrefillAttentionRunsTheModelsKernel) {
  TransformerSpec flash3 = Llama3_70bSpec();
  flash3.attention_kernel = AttentionKernel::kFlash3;
  const ServeShape shape{.tp = 8, .pp = 1, .replicas = 1};
  const ReplicaModel fa2 = Replica(Llama3_70bSpec(), "h100", shape);
  const ReplicaModel fa3 = Replica(flash3, "h100", shape);
  EXPECT_EQ(fa3.kernels.attention, AttentionKernel::kFlash3);
  IterationWork prefill;
  AddSequence(fa2, 4096, 0, /*finishes=*/true, prefill);
  EXPECT_EQ(prefill.prefill_tokens, 4096);
  EXPECT_EQ(prefill.prefill_pairs, prefill.attention_pairs);
  const double pairs = 4096.0 * 4097 / 2;
  const double flops = pairs * 2 * 8 * 256;  // per rank: 8 heads of 128, QK and PV
  const DeviceRates rates = Preset("h100").rates();
  const double key_blocks = pairs / 4096 / 128;
  const IterationCost with_fa2 = IterationSeconds(fa2, prefill);
  const IterationCost with_fa3 = IterationSeconds(fa3, prefill);
  EXPECT_NEAR(with_fa2.attention_s,
              80 * AttentionSeconds(rates, flops, false, key_blocks, AttentionKernel::kFlash),
              1e-12);
  EXPECT_NEAR(with_fa3.attention_s,
              80 * AttentionSeconds(rates, flops, false, key_blocks, AttentionKernel::kFlash3),
              1e-12);
  EXPECT_LT(with_fa3.attention_s, 0.6 * with_fa2.attention_s);
  EXPECT_EQ(with_fa3.gemm_s, with_fa2.gemm_s);
  // A100 has no FlashAttention-3: the model's choice resolves to FlashAttention-2.
  TransformerSpec small = flash3;
  small.layers = 8;
  EXPECT_EQ(Replica(small, "a100", shape).kernels.attention, AttentionKernel::kFlash);
}

// More work is never cheaper: decodes at a growing batch and context, prefill chunks growing,
// on a dense model, a MoE model under TP and under EP (its touched experts grow with the tokens).
TEST(ServeStepTest, MoreTokensAreNeverCheaper) {
  EngineOptions fp8;
  fp8.weight_bytes = 1;
  fp8.fp8_compute = true;
  const std::vector<ReplicaModel> replicas = {
      Replica(Llama3_70bSpec(), "h100", {.tp = 8, .pp = 1, .replicas = 1}),
      Replica(DeepSeekV3Spec(), "h200", {.tp = 8, .pp = 1, .replicas = 1}, fp8),
      Replica(DeepSeekV3Spec(), "h200", {.tp = 1, .pp = 1, .replicas = 1, .ep = 8}, fp8)};
  for (const ReplicaModel& replica : replicas) {
    double last = 0;
    for (int batch = 1; batch <= 512; batch += 7) {
      IterationWork work;
      for (int sequence = 0; sequence < batch; ++sequence) {
        AddSequence(replica, 1, 1024, true, work);
      }
      const double seconds = IterationSeconds(replica, work).total_s;
      EXPECT_GE(seconds, last) << "batch " << batch;
      last = seconds;
      IterationWork longer = work;
      AddSequence(replica, 1, 0, true, longer);
      longer.context_tokens += 4096;
      longer.attention_pairs += 4096;
      EXPECT_GE(IterationSeconds(replica, longer).total_s, seconds);
    }
    last = 0;
    for (int chunk = 2; chunk <= 8192; chunk = chunk * 3 / 2 + 1) {
      IterationWork work;
      AddSequence(replica, chunk, 512, false, work);
      const double seconds = IterationSeconds(replica, work).total_s;
      EXPECT_GE(seconds, last) << "chunk " << chunk;
      last = seconds;
    }
  }
}

// KV capacity of a Llama-3-70B TP 8 replica on H100, by hand:
//   usable 81,559 MiB (nvidia-smi's total, hardware/presets.cc) x 0.9 (vLLM
//   gpu_memory_utilization) = 76,968,728,985.6 B
//   weights per GPU 70,553,706,496 x 2 / 8 = 17,638,426,624 B
//   activations 8192 tokens x (2 x 8192 + 2 x 28672 / 8) x 2 B + 256 x 128256 / 8 x 4 B
//             = 385,875,968 + 16,416,768 = 402,292,736 B
//   reserve 2 GiB = 2,147,483,648 B
//   KV budget 56,780,525,977.6 B / (40,960 B x 16-token blocks) = 86,640 blocks = 1,386,240
//   tokens = 338 slots of 4096 tokens (the largest batch at context 4096).
TEST(ServeStepTest, Llama3_70bTp8KvCapacityIn4096TokenSlots) {
  const ReplicaModel replica = Replica(Llama3_70bSpec(), "h100", {.tp = 8, .pp = 1, .replicas = 1});
  const double weights = kParams * 2 / 8;
  const double activations = 8192.0 * (2 * 8192 + 2.0 * 28672 / 8) * 2 + 256.0 * 128256 / 8 * 4;
  const double budget = 81559.0 * (1 << 20) * 0.9 - weights - activations - 2.0 * (1 << 30);
  EXPECT_EQ(replica.weight_bytes_per_gpu, weights);
  EXPECT_EQ(replica.activation_bytes_per_gpu, activations);
  EXPECT_EQ(replica.kv_budget_bytes_per_gpu, budget);
  const int64_t blocks = static_cast<int64_t>(std::floor(budget / (40'960.0 * 16)));
  EXPECT_EQ(blocks, 86'640);
  EXPECT_EQ(replica.kv_capacity_tokens, blocks * 16);
  EXPECT_EQ(replica.kv_capacity_tokens / 4096, 338);
}

TEST(ServeStepTest, PipelineAddsHandOffsAndHalvesTheWeightsPerGpu) {
  const ReplicaModel one = Replica(Llama3_70bSpec(), "h100x2", {.tp = 8, .pp = 1, .replicas = 1});
  const ReplicaModel two = Replica(Llama3_70bSpec(), "h100x2", {.tp = 8, .pp = 2, .replicas = 1});
  EXPECT_LT(two.weight_bytes_per_gpu, 0.55 * one.weight_bytes_per_gpu);
  IterationWork work{
      .new_tokens = 8, .sequences = 8, .context_tokens = 8 * 1024.0, .attention_pairs = 8 * 1025.0};
  const IterationCost cost = IterationSeconds(two, work);
  // One hand-off across the nodes: the NIC's latency and 8 tokens x 8192 x 2 B / 8 ranks.
  const LinkSpec& nic = two.cluster.inter_node;
  EXPECT_NEAR(cost.handoff_s,
              nic.latency.ns() * 1e-9 + 8.0 * 8192 * 2 / 8 / nic.bandwidth_bytes_per_s, 1e-15);
}

// FP8 weights (W8A8) and an FP8 KV cache: one byte per weight and per KV element, so a
// Llama-3-70B token's KV is 163,840 B and the weights per GPU halve; the GEMMs go through the
// kernel model's FP8 path (the FP8 peak times the preset's FP8 share, 1-byte operands), the
// attention stays at the BF16 rate. Weight-only INT8 reads 1-byte weights into BF16 GEMMs:
// a compute-bound prefill costs as in BF16, a weight-streaming decode less.
TEST(ServeStepTest, Fp8WeightsRunTheFp8GemmsAndHalveTheBytes) {
  EngineOptions fp8;
  ASSERT_TRUE(ApplyDtypes(ServeDtypes{.weights = WeightDtype::kFp8, .kv = KvDtype::kFp8},
                          TransformerSpec{}, fp8)
                  .ok());
  const ReplicaModel bf16 = Replica(Llama3_70bSpec(), "h100", {.tp = 8, .pp = 1, .replicas = 1});
  const ReplicaModel small =
      Replica(Llama3_70bSpec(), "h100", {.tp = 8, .pp = 1, .replicas = 1}, fp8);
  EXPECT_EQ(small.kv.total(), 163'840.0);
  EXPECT_EQ(small.weight_bytes_per_gpu, bf16.weight_bytes_per_gpu / 2);
  EXPECT_GT(small.kv_capacity_tokens, 2 * bf16.kv_capacity_tokens);
  // A 4096-token chunk of a longer prompt (no logit yet).
  IterationWork prefill;
  AddSequence(bf16, 4096, 0, /*finishes=*/false, prefill);
  const DeviceRates rates = Preset("h100").rates();
  const IterationCost on_fp8 = IterationSeconds(small, prefill);
  const IterationCost on_bf16 = IterationSeconds(bf16, prefill);
  EXPECT_NEAR(on_fp8.gemm_s + on_fp8.memory_s,
              80 * LlamaLayerKernelSeconds(rates, 4096, /*fp8=*/true, 1, 1) +
                  LlamaOnceSeconds(rates, 4096, 0),
              1e-12);
  EXPECT_LT(on_fp8.gemm_s, 0.7 * on_bf16.gemm_s);
  EXPECT_EQ(on_fp8.attention_s, on_bf16.attention_s);
  EngineOptions int8;
  ASSERT_TRUE(ApplyDtypes(ServeDtypes{.weights = WeightDtype::kInt8, .kv = KvDtype::kBf16},
                          TransformerSpec{}, int8)
                  .ok());
  const ReplicaModel weight_only =
      Replica(Llama3_70bSpec(), "h100", {.tp = 8, .pp = 1, .replicas = 1}, int8);
  EXPECT_EQ(IterationSeconds(weight_only, prefill).gemm_s, on_bf16.gemm_s);
  const IterationWork decode{
      .new_tokens = 8, .sequences = 8, .context_tokens = 8 * 1024.0, .attention_pairs = 8 * 1025.0};
  EXPECT_NEAR(
      IterationSeconds(weight_only, decode).gemm_s,
      80 * (LlamaLayerKernelSeconds(rates, 8, false, 1) - LlamaLayerKernelSeconds(rates, 8)) +
          LlamaOnceSeconds(rates, 8, 8, false, 1) - LlamaOnceSeconds(rates, 8, 8) +
          IterationSeconds(bf16, decode).gemm_s,
      1e-12);
  EXPECT_LT(IterationSeconds(weight_only, decode).gemm_s, IterationSeconds(bf16, decode).gemm_s);
  EXPECT_EQ(weight_only.kv.total(), 327'680.0);
  EngineOptions fp4;
  ASSERT_TRUE(ApplyDtypes(ServeDtypes{.weights = WeightDtype::kFp4, .kv = KvDtype::kBf16},
                          TransformerSpec{}, fp4)
                  .ok());
  EXPECT_EQ(fp4.weight_bytes, 0.5);
  EXPECT_FALSE(ParseWeightDtype("fp16").ok());
  EXPECT_FALSE(ParseKvDtype("fp4").ok());
  TransformerSpec unknown;
  unknown.weight_format = "fp16";
  EXPECT_FALSE(ApplyDtypes(ServeDtypes{}, unknown, fp4).ok());
}

// A flag left empty takes the model's own formats (its config's weight_format and
// kv_cache_dtype); a flag given wins; neither means bf16.
TEST(ServeStepTest, DtypesComeFromTheModelUnlessFlagged) {
  TransformerSpec quantized;
  quantized.weight_format = "int4";
  quantized.kv_cache_dtype = "fp8";
  EngineOptions engine;
  ASSERT_TRUE(ApplyDtypes(ServeDtypes{}, quantized, engine).ok());
  EXPECT_EQ(engine.weight_bytes, 0.5);
  EXPECT_FALSE(engine.fp8_compute);
  EXPECT_EQ(engine.kv_bytes, 1);
  ASSERT_TRUE(ApplyDtypes(ServeDtypes{.weights = WeightDtype::kFp8, .kv = KvDtype::kBf16},
                          quantized, engine)
                  .ok());
  EXPECT_EQ(engine.weight_bytes, 1.0);
  EXPECT_TRUE(engine.fp8_compute);
  EXPECT_EQ(engine.kv_bytes, 2);
  ASSERT_TRUE(ApplyDtypes(ServeDtypes{}, TransformerSpec{}, engine).ok());
  EXPECT_EQ(engine.weight_bytes, 2.0);
  EXPECT_EQ(engine.kv_bytes, 2);
}

// The launch floor: with CUDA graphs each kernel's time holds the device's floor, so the 803
// kernels' 4 ms of floors lie inside the sum; eager, the host issues each kernel in its own time,
// which binds when it exceeds the kernels' (here a host of 100 us a kernel: 80.3 ms).
TEST(ServeStepTest, EagerLaunchesBindWhenTheHostIsSlow) {
  const ReplicaModel graphs = Replica(Llama3_70bSpec(), "h100", {.tp = 8, .pp = 1, .replicas = 1});
  EngineOptions eager_options;
  eager_options.cuda_graphs = false;
  ReplicaModel eager =
      Replica(Llama3_70bSpec(), "h100", {.tp = 8, .pp = 1, .replicas = 1}, eager_options);
  const IterationWork one{
      .new_tokens = 1, .sequences = 1, .context_tokens = 0, .attention_pairs = 1};
  const IterationCost fast = IterationSeconds(graphs, one);
  EXPECT_EQ(fast.kernels, 803);
  EXPECT_NEAR(fast.launch_s, 803 * 5e-6, 1e-15);
  EXPECT_GT(fast.compute_s + fast.memory_s, fast.launch_s);
  EXPECT_NEAR(fast.total_s, fast.compute_s + fast.memory_s + fast.allreduce_s, 1e-15);
  EXPECT_EQ(IterationSeconds(eager, one).total_s, fast.total_s);  // 10 us a kernel: not binding
  eager.cluster.kernels.host_seconds_per_kernel = 100e-6;
  const IterationCost slow = IterationSeconds(eager, one);
  EXPECT_NEAR(slow.launch_s, 803 * 100e-6, 1e-15);
  EXPECT_NEAR(slow.total_s, slow.launch_s + slow.allreduce_s, 1e-15);
}

TEST(ServeStepTest, BadLayoutsAreErrors) {
  auto heads = BuildReplicaModel(Llama3_70bSpec(), Preset("h100"), {.tp = 3}, {});
  ASSERT_FALSE(heads.ok());
  EXPECT_EQ(heads.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(heads.error().message.find("must divide the 64 attention heads"), std::string::npos);
  auto layers = BuildReplicaModel(Llama3_70bSpec(), Preset("h100x3"), {.tp = 8, .pp = 3}, {});
  ASSERT_FALSE(layers.ok());
  EXPECT_NE(layers.error().message.find("80 layers"), std::string::npos);
  auto one_gpu = BuildReplicaModel(Llama3_70bSpec(), Preset("h100"), {.tp = 1}, {});
  ASSERT_FALSE(one_gpu.ok());
  EXPECT_EQ(one_gpu.error().kind, ErrorKind::kInfeasible);
  auto too_many = BuildReplicaModel(Llama3_70bSpec(), Preset("h100"), {.tp = 8, .replicas = 2}, {});
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().kind, ErrorKind::kBadInput);
}

// The memo of kernel sums gives exactly what the sum does, on the first call and on every
// repeat, and keeps rows that differ apart (a decode batch of 64 and one of 65; a prefill chunk).
TEST(ServeIterationTest, KernelSumMemoIsExact) {
  const ReplicaModel replica = Replica(Llama3_70bSpec(), "h100", {.tp = 8, .pp = 1, .replicas = 1});
  KernelSumMemo memo;
  for (int repeat = 0; repeat < 3; ++repeat) {
    for (const double batch : {1.0, 64.0, 65.0, 256.0}) {
      IterationWork work;
      for (int sequence = 0; sequence < static_cast<int>(batch); ++sequence) {
        AddSequence(replica, 1, 300 + sequence + repeat, true, work);
      }
      AddSequence(replica, 512, 0, true, work);  // and a prefill chunk
      const IterationCost plain = IterationSeconds(replica, work);
      const IterationCost memoized = IterationSeconds(replica, work, &memo);
      EXPECT_EQ(memoized.total_s, plain.total_s) << batch;
      EXPECT_EQ(memoized.gemm_s, plain.gemm_s) << batch;
      EXPECT_EQ(memoized.memory_s, plain.memory_s) << batch;
      EXPECT_EQ(memoized.kernels, plain.kernels) << batch;
    }
  }
}

}  // namespace
}  // namespace stagecraft
