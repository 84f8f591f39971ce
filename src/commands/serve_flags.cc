// The serving commands' flag texts as the serve module's values; errors name the flag.
#include <sstream>
#include <string>

#include "commands/serve_command.h"
#include "core/units.h"
#include "serve/speculative.h"

namespace stagecraft {

Status CheckServable(const ModelSpec& model, const std::string& kv_dtype,
                     const std::string& command) {
  if (model.is_transformer() || model.layers.empty() || kv_dtype.empty()) return Status::Ok();
  return Error{"--kv-dtype " + kv_dtype + ": a CSA2 layer list keeps its KV cache in its own " +
               "inference formats (compressed KV FP4 E2M1, indexer keys MXFP4, window KV FP8; " +
               "doc/csa2.md), which " + command + " models as they are (drop --kv-dtype)"};
}

Result<Slo> ParseSlo(const std::string& text) {
  Slo slo;
  bool ttft = false;
  bool tpot = false;
  std::istringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const size_t equals = part.find('=');
    const std::string key = part.substr(0, equals);
    auto value = equals == std::string::npos ? Result<Time>(Error{"no value"})
                                             : ParseDuration(part.substr(equals + 1));
    if ((key != "ttft" && key != "tpot") || !value.ok() || value.value().ns() <= 0) {
      return Error{"--slo '" + text + "': expected ttft=DURATION,tpot=DURATION with positive " +
                   "durations, e.g. ttft=0.4s,tpot=40ms"};
    }
    (key == "ttft" ? slo.ttft_s : slo.tpot_s) = static_cast<double>(value.value().ns()) * 1e-9;
    (key == "ttft" ? ttft : tpot) = true;
  }
  if (!ttft || !tpot) {
    return Error{"--slo '" + text + "': expected both ttft and tpot, e.g. ttft=0.4s,tpot=40ms"};
  }
  return slo;
}

Result<PercentileSlo> ParsePercentileSlo(const std::string& text) {
  PercentileSlo slo;
  bool ttft = false;
  bool tpot = false;
  std::istringstream parts(text);
  std::string part;
  const std::string expected =
      "expected ttft_p90=DURATION,tpot_p90=DURATION with positive durations, e.g. "
      "--slo ttft_p90=0.4s,tpot_p90=40ms";
  while (std::getline(parts, part, ',')) {
    const size_t equals = part.find('=');
    const std::string key = part.substr(0, equals);
    auto value = equals == std::string::npos ? Result<Time>(Error{"no value"})
                                             : ParseDuration(part.substr(equals + 1));
    if ((key != "ttft_p90" && key != "tpot_p90") || !value.ok() || value.value().ns() <= 0) {
      return Error{"--slo '" + text + "': " + expected};
    }
    const double seconds = static_cast<double>(value.value().ns()) * 1e-9;
    (key == "ttft_p90" ? slo.ttft_p90_s : slo.tpot_p90_s) = seconds;
    (key == "ttft_p90" ? ttft : tpot) = true;
  }
  if (!ttft || !tpot) return Error{"--slo '" + text + "': " + expected};
  return slo;
}

Result<Routing> ParseRouting(const std::string& text) {
  if (const auto routing = kRoutingNames.Parse(text)) return *routing;
  return Error{"--routing '" + text + "': expected round-robin, least-outstanding or kv-aware"};
}

Result<EngineProfile> ParseEngineProfile(const std::string& text) {
  if (const auto profile = kEngineProfileNames.Parse(text)) return *profile;
  return Error{"--engine '" + text + "': expected " + kEngineProfileNames.Joined() +
               kEngineProfileNames.DidYouMean(text)};
}

Status ApplyEngineFlags(const EngineFlags& flags, const ModelSpec& model,
                        const ClusterSpec& cluster, EngineOptions& engine) {
  if (!flags.engine.empty()) {
    auto profile = ParseEngineProfile(flags.engine);
    if (!profile.ok()) return profile.error();
    ApplyEngineProfile(profile.value(), cluster, engine);
  }
  ServeDtypes dtypes;
  if (!flags.weight_dtype.empty()) {
    auto weights = ParseWeightDtype(flags.weight_dtype);
    if (!weights.ok()) return weights.error();
    dtypes.weights = weights.value();
  }
  if (!flags.kv_dtype.empty()) {
    auto kv = ParseKvDtype(flags.kv_dtype);
    if (!kv.ok()) return kv.error();
    dtypes.kv = kv.value();
  }
  STAGECRAFT_RETURN_IF_ERROR(ApplyDtypes(dtypes, model.transformer, engine));
  const std::string& batching = flags.batching;
  if (!batching.empty() && batching != "chunked" && batching != "prefill-first") {
    return Error{"--batching '" + batching + "': expected chunked (vLLM V1, Sarathi-Serve) or " +
                 "prefill-first (vLLM V0)"};
  }
  ApplyBatching(batching == "prefill-first" ? EngineOptions::Batching::kPrefillFirst
                                            : EngineOptions::Batching::kChunked,
                model.seq_len, engine);
  if (flags.max_num_seqs.has_value()) {
    const int64_t seqs = *flags.max_num_seqs;
    if (seqs < 1 || seqs > kMaxEngineSeqs) {
      return Error{"--max-num-seqs " + std::to_string(seqs) + ": expected 1 to " +
                   std::to_string(kMaxEngineSeqs) +
                   " sequences per iteration (vLLM's default 256)"};
    }
    engine.max_seqs = static_cast<int32_t>(seqs);
  }
  if (flags.max_num_batched_tokens.has_value()) {
    const int64_t tokens = *flags.max_num_batched_tokens;
    if (tokens < 1 || tokens > kMaxEngineTokens) {
      return Error{"--max-num-batched-tokens " + std::to_string(tokens) + ": expected 1 to " +
                   std::to_string(kMaxEngineTokens) +
                   " tokens per iteration (vLLM's default 8192)"};
    }
    engine.token_budget = tokens;
  }
  if (flags.kv_memory_fraction.has_value()) {
    const double fraction = *flags.kv_memory_fraction;
    if (!(fraction > 0 && fraction <= 1)) {
      return Error{"--kv-memory-fraction " + FormatFixed(fraction, 3) +
                   ": expected a share in (0, 1] of the memory left after the weights and "
                   "activations (TensorRT-LLM's default 0.9)"};
    }
    engine.kv_free_fraction = fraction;
  }
  return ApplySpeculation(flags.speculative_tokens, flags.acceptance_rate, model, engine);
}

}  // namespace stagecraft
