#include "serve/engine_profile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <string>

namespace stagecraft {
namespace {

constexpr double kMib = 1024.0 * 1024.0;
constexpr double kGib = 1024.0 * kMib;

// vLLM (vllm-project/vllm at 99d7eb5d, vllm/engine/arg_utils.py EngineArgs._set_default_args):
// an OpenAI server on a device of at least 70 GiB whose name does not contain "a100" (H100,
// H200, MI300x) defaults to max_num_batched_tokens 8192 and max_num_seqs 1024, any other device
// to 2048 and 256. gpu_memory_utilization 0.90 (EngineArgs, same file, read at 001999d2).
// block_size 16 on CUDA: stagecraft's default, kept (its resolution was not re-read here).
// Chunked prefill is on (V1: enable_chunked_prefill defaults to the model's support, arg_utils.py
// _set_default_chunked_prefill_and_prefix_caching_args); admission greedy with recompute
// preemption (request_sim.h). Attention: its FlashAttention backend runs FlashAttention-3 on
// Hopper and FlashAttention-2 elsewhere (vllm/v1/attention/backends/fa_utils.py
// get_flash_attn_version: "Hopper (SM90): prefer FA3"); FlashAttention-3 falls back to
// FlashAttention-2 on a device without its rates (ResolveAttentionKernel).
void ApplyVllm(const ClusterSpec& cluster, EngineOptions& engine) {
  std::string device = cluster.device;
  std::transform(device.begin(), device.end(), device.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool large = static_cast<double>(cluster.hbm_bytes) >= 70 * kGib &&
                     device.find("a100") == std::string::npos;
  engine.token_budget = large ? 8192 : 2048;
  engine.max_seqs = large ? 1024 : 256;
  engine.memory_utilization = 0.9;
  engine.kv_free_fraction = 0;
  engine.block_tokens = 16;
  engine.batching = EngineOptions::Batching::kChunked;
  engine.admission = EngineOptions::Admission::kGreedy;
  engine.attention_kernel = AttentionKernel::kFlash3;
}

// TensorRT-LLM: max_batch_size 2048 and max_num_tokens 8192 (tensorrt_llm/builder.py
// BuildConfig, NVIDIA/TensorRT-LLM at 008b2b8d, which the LLM API builds when they are unset:
// tensorrt_llm/llmapi/llm_args.py init_build_config at fcd3f316); the KV cache takes
// free_gpu_memory_fraction 0.9 of the memory free after the weights and activations
// (llm_args.py KvCacheConfig: "Default is 90%" at fcd3f316, default=0.9 in a later stored
// version); tokens_per_block 32 (llm_args.py KvCacheConfig, the later stored version; the
// TensorRT engine's plugin default was 64); capacity_scheduler_policy GUARANTEED_NO_EVICT
// (llm_args.py SchedulerConfig at fcd3f316); enable_chunked_prefill False (llm_args.py at
// fcd3f316, and trtllm-bench's get_settings): whole prompts beside the decodes (kUnchunked).
// Attention: its own fused kernels (fmha_v2 for the context phase, XQA for generation), costed at
// FlashAttention-3's rates where the device has them (Hopper's warp-specialized kernels; the
// kernel model has no rates of TensorRT-LLM's own), and the context phase in FP8 with FP8 weights
// and an FP8 KV cache (trtllm-bench build sets use_fp8_context_fmha for FP8,
// tensorrt_llm/bench/build/build.py).
void ApplyTrtllm(EngineOptions& engine) {
  engine.token_budget = 8192;
  engine.max_seqs = 2048;
  engine.kv_free_fraction = 0.9;
  engine.block_tokens = 32;
  engine.batching = EngineOptions::Batching::kUnchunked;
  engine.admission = EngineOptions::Admission::kNoEvict;
  engine.attention_kernel = AttentionKernel::kFlash3;
  engine.fp8_context_attention = true;
}

// SGLang's chunked_prefill_size by the device's memory (python/sglang/srt/server_args.py
// _handle_gpu_memory_settings, sgl-project/sglang, a 2025-26 stored version whose commit the
// index does not give): under 35 GiB 2048, under 60 GiB 4096, under 160 GiB 8192, else 16384.
int64_t SglangChunkedPrefill(double hbm_mib) {
  if (hbm_mib < 35 * 1024) return 2048;
  if (hbm_mib < 60 * 1024) return 4096;
  if (hbm_mib < 160 * 1024) return 8192;
  return 16384;
}

// Its cuda_graph_max_bs, same function: under 20 GiB 8; under 35 GiB 24 (tp < 4) or 80; under
// 60 GiB 32 or 160; under 160 GiB 256 or 512; else 512.
int32_t SglangCudaGraphMaxBs(double hbm_mib, int32_t tp) {
  if (hbm_mib < 20 * 1024) return 8;
  if (hbm_mib < 35 * 1024) return tp < 4 ? 24 : 80;
  if (hbm_mib < 60 * 1024) return tp < 4 ? 32 : 160;
  if (hbm_mib < 160 * 1024) return tp < 4 ? 256 : 512;
  return 512;
}

// SGLang: the token budget as above; the KV pool by mem_fraction_static (SglangMemFractionStatic,
// applied per layout when the replica is sized); max_running_requests min(clamp(pool tokens /
// context_len x 512, 2048, 4096), pool tokens / 2) (model_runner.py resolve_max_num_reqs, same
// stored version), 4096 whenever the pool holds 8 or more full contexts, modelled as 4096;
// admission by the new-token ratio: SGLANG_INIT_NEW_TOKEN_RATIO 0.7 x schedule_conservativeness
// 1.0 of each running request's output still to come, clipped at
// SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION 4096 (python/sglang/srt/environ.py, scheduler.py),
// retraction when decodes run short. Not modelled: the ratio's decay to 0.7 x 0.14 over 600
// steps (SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR, SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS) and its rise
// after a retraction. page_size defaults to None (server_args.py) and is resolved per attention
// backend, which was not read: one token per page is assumed (the radix cache's granularity).
// Chunked prefill is on (chunked_prefill_size set).
void ApplySglang(const ClusterSpec& cluster, EngineOptions& engine) {
  engine.token_budget = SglangChunkedPrefill(static_cast<double>(cluster.hbm_bytes) / kMib);
  engine.max_seqs = 4096;
  engine.kv_free_fraction = 0;
  engine.sglang_static_memory = true;
  engine.block_tokens = 1;
  engine.batching = EngineOptions::Batching::kChunked;
  engine.admission = EngineOptions::Admission::kNewTokenRatio;
  engine.new_token_ratio = 0.7;
}

}  // namespace

double SglangMemFractionStatic(double hbm_bytes, int32_t tp, int32_t pp, int64_t token_budget) {
  const double mib = hbm_bytes / kMib;
  double reserved = 512 + static_cast<double>(std::max<int64_t>(token_budget, 2048)) * 1.5 +
                    SglangCudaGraphMaxBs(mib, tp) * 2.0 + tp * pp / 8.0 * 1024;
  if (mib > 60 * 1024) reserved = std::max(reserved, 10.0 * 1024);
  return std::round((mib - reserved) / mib * 1000) / 1000;
}

namespace {

// trtllm-bench's rounding (finetune_setting): `value` up to the step of the first band it lies
// below (the last step past every band), and at least `least` (which only binds in the first).
struct Band {
  double below;
  double step;
};
double RoundUpInBands(double value, double least, std::initializer_list<Band> bands,
                      double last_step) {
  double step = last_step;
  for (const Band& band : bands) {
    if (value < band.below) {
      step = band.step;
      break;
    }
  }
  return std::max(least, step * std::ceil(value / step));
}

}  // namespace

TrtllmBenchLimits ComputeTrtllmBenchLimits(const TrtllmBenchInputs& in) {
  if (!in.tuned_quantization) return {2048, 8192};
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const double kv_heads = static_cast<double>(std::max<int64_t>(in.tp, in.kv_heads));
  const double token_gib = 2.0 * static_cast<double>(in.layers) * kv_heads *
                           static_cast<double>(in.head_dim) * in.kv_bytes / gib;
  const double devices = static_cast<double>(in.tp) * in.pp;
  const double available = in.device_gib * devices - in.params * in.weight_bytes / gib;
  const double cache = available * in.kv_fraction;
  const double requests = cache / (token_gib * (in.mean_prompt + in.mean_output));
  const double raw_bs = std::max(0.0, std::min(requests, 4096.0)) / in.pp;
  const double raw_tokens = std::min(raw_bs * (1 + in.mean_prompt / in.mean_output), 32768.0);
  const auto max_batch =
      static_cast<int64_t>(RoundUpInBands(raw_bs, 64, {{256, 32}, {1024, 128}}, 256));
  const auto max_tokens =
      static_cast<int64_t>(RoundUpInBands(raw_tokens, 2048, {{4096, 256}, {8192, 512}}, 1024));
  return {max_batch,
          in.chunked_prefill ? max_tokens : std::max(max_tokens, in.max_prompt + max_batch)};
}

void ApplyEngineProfile(EngineProfile profile, const ClusterSpec& cluster, EngineOptions& engine) {
  engine.sglang_static_memory = false;
  engine.attention_kernel.reset();
  engine.fp8_context_attention = false;
  switch (profile) {
    case EngineProfile::kVllm:
      return ApplyVllm(cluster, engine);
    case EngineProfile::kTrtllm:
    case EngineProfile::kTrtllmBench:
      return ApplyTrtllm(engine);
    case EngineProfile::kSglang:
      return ApplySglang(cluster, engine);
  }
}

std::string DescribeEngineProfile(EngineProfile profile) {
  switch (profile) {
    case EngineProfile::kVllm:
      return "vLLM (greedy admission, recompute preemption)";
    case EngineProfile::kTrtllm:
      return "TensorRT-LLM (GUARANTEED_NO_EVICT: prompt + output blocks reserved at admission; "
             "whole prompts)";
    case EngineProfile::kTrtllmBench:
      return "TensorRT-LLM as trtllm-bench sizes it (limits from the model and the dataset; "
             "GUARANTEED_NO_EVICT; whole prompts)";
    case EngineProfile::kSglang:
      return "SGLang (new-token ratio 0.7 of the output reserved at admission, retraction)";
  }
  return "?";
}

}  // namespace stagecraft
