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

enum class EngineProfile : uint8_t { kVllm, kTrtllm, kSglang };
// Their names (--engine, the serve reports).
inline constexpr EnumTable<EngineProfile> kEngineProfileNames = {
    {"vllm", EngineProfile::kVllm},
    {"trtllm", EngineProfile::kTrtllm},
    {"sglang", EngineProfile::kSglang}};
constexpr const char* EngineProfileName(EngineProfile profile) {
  return kEngineProfileNames.Name(profile);
}

// Sets `engine`'s limits, KV memory rule, block size and admission to `profile`'s defaults on
// `cluster`'s device (vLLM and SGLang pick some by the device's memory); the formats and the
// CUDA-graph choice are left as they are.
void ApplyEngineProfile(EngineProfile profile, const ClusterSpec& cluster, EngineOptions& engine);

// "vLLM (greedy admission, recompute preemption)": the text line of `serve`.
std::string DescribeEngineProfile(EngineProfile profile);

// SGLang's mem_fraction_static when unset (python/sglang/srt/server_args.py,
// _handle_gpu_memory_settings): (device MiB - reserved) / device MiB, rounded to 3 decimals,
// with reserved = 512 + max(chunked_prefill_size, 2048) x 1.5 + cuda_graph_max_bs x 2 +
// tp x pp / 8 x 1024 MiB, at least 10240 MiB on a device above 60 GiB (speculative decoding,
// DP attention and piecewise CUDA graphs, which add to it, are not modelled).
double SglangMemFractionStatic(double hbm_bytes, int32_t tp, int32_t pp, int64_t token_budget);

}  // namespace stagecraft
