#include "serve/engine_profile.h"

#include <gtest/gtest.h>

#include "hardware/presets.h"
#include "testing/models.h"

namespace stagecraft {
namespace {

// Llama 3.1 8B (8,030,261,248 parameters, its safetensors index) in FP8 with an FP8 KV cache on
// one H100 (81,559 MiB as NVML reports it), kv_cache_free_gpu_mem_fraction 0.95: the inputs of
// trtllm-bench's heuristic for the TensorRT-LLM perf overview's rows.
TrtllmBenchInputs Llama8bFp8OnH100(double prompt, double output) {
  TrtllmBenchInputs in;
  in.params = 8030261248.0;
  in.weight_bytes = 1;
  in.layers = 32;
  in.kv_heads = 8;
  in.head_dim = 128;
  in.kv_bytes = 1;
  in.device_gib = 81559.0 / 1024.0;
  in.kv_fraction = 0.95;
  in.mean_prompt = prompt;
  in.mean_output = output;
  in.max_prompt = static_cast<int64_t>(prompt);
  return in;
}

// Worked by hand from tensorrt_llm/bench/build/tuning.py: 72.2 GiB free after 7.48 GiB of
// weights, 68.6 GiB of it for a KV cache of 64 KiB a token.
// - 128/128: 4,388 requests fit; capped at 4,096 (a multiple of 256), tokens 4,096 x 2 = 8,192.
// - 1000/1000: 561.6 requests, rounded up to 640 (a multiple of 128); 1,123 tokens, raised to
//   the 2,048 floor; unchunked, at least 1,000 + 640 = 1,640, so 2,048.
// - 20000/2000: 51.1 requests, the floor of 64; 561 tokens, 2,048, raised to 20,000 + 64.
// - 5000/500: 204.2 requests, 224 (a multiple of 32); 2,246 tokens, 2,304, raised to 5,224.
TEST(TrtllmBenchLimitsTest, MatchTheHeuristicWorkedByHand) {
  const struct {
    double prompt, output;
    int64_t batch, tokens;
  } cases[] = {{128, 128, 4096, 8192},
               {1000, 1000, 640, 2048},
               {20000, 2000, 64, 20064},
               {5000, 500, 224, 5224}};
  for (const auto& c : cases) {
    const TrtllmBenchLimits limits = ComputeTrtllmBenchLimits(Llama8bFp8OnH100(c.prompt, c.output));
    EXPECT_EQ(limits.max_batch_size, c.batch) << c.prompt << "/" << c.output;
    EXPECT_EQ(limits.max_num_tokens, c.tokens) << c.prompt << "/" << c.output;
  }
  // With chunked prefill on, the token limit is the heuristic's alone.
  TrtllmBenchInputs chunked = Llama8bFp8OnH100(20000, 2000);
  chunked.chunked_prefill = true;
  EXPECT_EQ(ComputeTrtllmBenchLimits(chunked).max_num_tokens, 2048);
  // A quantization the heuristic is not tuned for keeps BuildConfig's defaults.
  TrtllmBenchInputs int4 = Llama8bFp8OnH100(1000, 1000);
  int4.tuned_quantization = false;
  EXPECT_EQ(ComputeTrtllmBenchLimits(int4).max_batch_size, 2048);
  EXPECT_EQ(ComputeTrtllmBenchLimits(int4).max_num_tokens, 8192);
}

// The engines' attention kernels: vLLM and TensorRT-LLM run FlashAttention-3-class kernels on
// Hopper; on an A100, which has no FlashAttention-3 rates, the replica falls back to
// FlashAttention-2. TensorRT-LLM's context phase runs in FP8 only with FP8 weights and KV cache.
TEST(EngineProfileTest, AttentionKernelByEngineAndDevice) {
  const TransformerSpec model = Llama3_8bSpec();
  for (const char* preset : {"h100", "a100"}) {
    auto cluster = ClusterFromPreset(preset);
    ASSERT_TRUE(cluster.ok());
    EngineOptions engine;
    ApplyEngineProfile(EngineProfile::kVllm, cluster.value(), engine);
    auto replica =
        BuildReplicaModel(model, cluster.value(), {.tp = 1, .pp = 1, .replicas = 1}, engine);
    ASSERT_TRUE(replica.ok()) << replica.error().message;
    EXPECT_EQ(replica.value().kernels.attention,
              std::string(preset) == "h100" ? AttentionKernel::kFlash3 : AttentionKernel::kFlash);
    EXPECT_FALSE(replica.value().kernels.fp8_attention);
  }
  auto h100 = ClusterFromPreset("h100");
  ASSERT_TRUE(h100.ok());
  EngineOptions engine;
  ApplyEngineProfile(EngineProfile::kTrtllm, h100.value(), engine);
  EXPECT_EQ(engine.batching, EngineOptions::Batching::kUnchunked);
  engine.fp8_compute = true;
  engine.weight_bytes = 1;
  auto bf16_kv = BuildReplicaModel(model, h100.value(), {.tp = 1, .pp = 1, .replicas = 1}, engine);
  ASSERT_TRUE(bf16_kv.ok());
  EXPECT_FALSE(bf16_kv.value().kernels.fp8_attention);
  engine.kv_bytes = 1;
  auto fp8_kv = BuildReplicaModel(model, h100.value(), {.tp = 1, .pp = 1, .replicas = 1}, engine);
  ASSERT_TRUE(fp8_kv.ok());
  EXPECT_TRUE(fp8_kv.value().kernels.fp8_attention);
  // Another profile leaves no kernel of its own behind.
  ApplyEngineProfile(EngineProfile::kSglang, h100.value(), engine);
  EXPECT_FALSE(engine.attention_kernel.has_value());
}

}  // namespace
}  // namespace stagecraft
