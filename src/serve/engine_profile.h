// Serving engine profiles (`serve --engine vllm|trtllm|sglang`, doc/serving.md "Engine
// profiles"): each engine's defaults as its own source sets them, as EngineOptions. The explicit
// flags (--max-num-seqs, --max-num-batched-tokens, --kv-memory-fraction, --batching) are applied
// after a profile and override it; without --engine the options keep stagecraft's defaults.
#pragma once

#include <cstdint>
#include <string>

#include "core/enum_table.h"
#include "hardware/cluster_spec.h"
#include "serve/step_cost.h"

namespace stagecraft {

// kTrtllmBench is TensorRT-LLM as `trtllm-bench throughput` configures it: the engine's rules,
// with the limits its heuristic sizes from the model, the layout and the dataset
// (TrtllmBenchLimits), applied once those are known.
enum class EngineProfile : uint8_t { kVllm, kTrtllm, kSglang, kTrtllmBench };
// Their names (--engine, the serve reports).
inline constexpr EnumTable<EngineProfile> kEngineProfileNames = {
    {"vllm", EngineProfile::kVllm},
    {"trtllm", EngineProfile::kTrtllm},
    {"sglang", EngineProfile::kSglang},
    {"trtllm-bench", EngineProfile::kTrtllmBench}};
constexpr const char* EngineProfileName(EngineProfile profile) {
  return kEngineProfileNames.Name(profile);
}

// Sets `engine`'s limits, KV memory rule, block size and admission to `profile`'s defaults on
// `cluster`'s device (vLLM and SGLang pick some by the device's memory); the formats and the
// CUDA-graph choice are left as they are.
void ApplyEngineProfile(EngineProfile profile, const ClusterSpec& cluster, EngineOptions& engine);

// What `trtllm-bench throughput` sizes the engine from when it is given neither
// --max_batch_size nor --max_num_tokens: the model, the layout, the formats and the dataset.
struct TrtllmBenchInputs {
  double params = 0;               // the checkpoint's parameters (all of them, embeddings included)
  double weight_bytes = 2;         // per parameter: 2 unquantized, 1 FP8, 0.5 NVFP4
  bool tuned_quantization = true;  // FP8, NVFP4 or none; others take BuildConfig's defaults
  int64_t layers = 0;              // attention layers
  int64_t kv_heads = 0;            // the config's KV heads
  int64_t head_dim = 0;
  double kv_bytes = 2;  // per KV element: 1 with an FP8 KV cache
  int32_t tp = 1;
  int32_t pp = 1;
  double device_gib = 0;     // the device's memory as NVML reports it, GiB
  double kv_fraction = 0.9;  // kv_cache_free_gpu_mem_fraction
  double mean_prompt = 0;    // the dataset's average input and output lengths
  double mean_output = 0;
  int64_t max_prompt = 0;        // its longest input
  bool chunked_prefill = false;  // enable_chunked_prefill (off by default)
};
struct TrtllmBenchLimits {
  int64_t max_batch_size = 0;
  int64_t max_num_tokens = 0;
};
// trtllm-bench's heuristic (tensorrt_llm/bench/build/tuning.py calc_engine_setting and
// finetune_setting, NVIDIA/TensorRT-LLM at 04cba882): the requests of the average length whose
// KV fits in kv_fraction of the memory the whole model's weights leave on all tp x pp devices,
// at most 4096 and divided by pp, rounded up (to 32 and at least 64 below 256, to 128 below 1024,
// else to 256); the tokens that many requests bring per step, batch x (1 + input / output), at
// most 32768, rounded up (to 256 and at least 2048 below 4096, to 512 below 8192, else to 1024).
// With chunked prefill off, its default, the token limit is raised to the longest input plus the
// batch (benchmark/utils/general.py get_settings, at 0171265e). Other quantizations keep
// BuildConfig's 2048 and 8192.
TrtllmBenchLimits ComputeTrtllmBenchLimits(const TrtllmBenchInputs& inputs);

// "vLLM (greedy admission, recompute preemption)": the text line of `serve`.
std::string DescribeEngineProfile(EngineProfile profile);

// SGLang's mem_fraction_static when unset (python/sglang/srt/server_args.py,
// _handle_gpu_memory_settings): (device MiB - reserved) / device MiB, rounded to 3 decimals,
// with reserved = 512 + max(chunked_prefill_size, 2048) x 1.5 + cuda_graph_max_bs x 2 +
// tp x pp / 8 x 1024 MiB, at least 10240 MiB on a device above 60 GiB (speculative decoding,
// DP attention and piecewise CUDA graphs, which add to it, are not modelled).
double SglangMemFractionStatic(double hbm_bytes, int32_t tp, int32_t pp, int64_t token_budget);

}  // namespace stagecraft
