// The serving commands' flag texts as the serve module's values; errors name the flag.
#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands/serve_command.h"
#include "core/suggest.h"
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

namespace {

// An --slo text's terms as given: the TTFT and TPOT bounds, by either spelling, and the
// percentile.
struct SloTerms {
  std::optional<double> ttft_s;
  std::optional<double> tpot_s;
  int32_t percentile = 0;   // percentile=P; 0 = not given
  bool p90_keys = false;    // a bound given as ttft_p90 or tpot_p90
  bool plain_keys = false;  // a bound given as ttft or tpot
};

// Splits `text` into its terms: a duration that does not parse or is not positive is
// `malformed` (the caller's message), an unknown key or a percentile other than 50, 90 and 99
// gets its own message.
Result<SloTerms> ReadSloTerms(const std::string& text, const std::string& malformed) {
  static const std::vector<std::string> kKeys = {"ttft", "tpot", "percentile", "ttft_p90",
                                                 "tpot_p90"};
  const std::string prefix = "--slo '" + text + "': ";
  SloTerms terms;
  std::istringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const size_t equals = part.find('=');
    const std::string key = part.substr(0, equals);
    const std::string value = equals == std::string::npos ? "" : part.substr(equals + 1);
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      const bool other_percentile = key.size() == 8 && key[4] == '_' && key[5] == 'p' &&
                                    (key.rfind("ttft", 0) == 0 || key.rfind("tpot", 0) == 0);
      if (other_percentile) {
        return Error{prefix + "unknown key '" + EscapeBytes(key) + "' (only P90 has keys " +
                     "of its own: write ttft=DURATION,tpot=DURATION,percentile=P, P one of 50, " +
                     "90 or 99)"};
      }
      return Error{prefix + "unknown key '" + EscapeBytes(key) + "'" + DidYouMean(key, kKeys) +
                   " (expected ttft, tpot and optionally percentile, e.g. " +
                   "ttft=2s,tpot=200ms,percentile=99)"};
    }
    if (key == "percentile") {
      if (value != "50" && value != "90" && value != "99") {
        return Error{prefix + "percentile=" + EscapeBytes(value) + ": expected 50, 90 or 99 " +
                     "(the percentile of the TTFT and the TPOT that the bounds hold)"};
      }
      terms.percentile = std::stoi(value);
      continue;
    }
    auto duration =
        equals == std::string::npos ? Result<Time>(Error{"no value"}) : ParseDuration(value);
    if (!duration.ok() || duration.value().ns() <= 0) return Error{prefix + malformed};
    const double seconds = static_cast<double>(duration.value().ns()) * 1e-9;
    (key.rfind("ttft", 0) == 0 ? terms.ttft_s : terms.tpot_s) = seconds;
    (key.size() > 4 ? terms.p90_keys : terms.plain_keys) = true;
  }
  if (terms.p90_keys && (terms.plain_keys || terms.percentile != 0)) {
    return Error{prefix + "ttft_p90/tpot_p90 are P90 bounds; not with ttft, tpot or " +
                 "percentile (write ttft=DURATION,tpot=DURATION,percentile=P instead)"};
  }
  if (terms.p90_keys) terms.percentile = 90;
  return terms;
}

}  // namespace

Result<Slo> ParseSlo(const std::string& text) {
  auto terms = ReadSloTerms(text,
                            "expected ttft=DURATION,tpot=DURATION with positive durations, e.g. "
                            "ttft=0.4s,tpot=40ms");
  if (!terms.ok()) return terms.error();
  if (!terms.value().ttft_s || !terms.value().tpot_s) {
    return Error{"--slo '" + text + "': expected both ttft and tpot, e.g. ttft=0.4s,tpot=40ms"};
  }
  return Slo{.ttft_s = *terms.value().ttft_s,
             .tpot_s = *terms.value().tpot_s,
             .percentile = terms.value().percentile};
}

Result<PercentileSlo> ParsePercentileSlo(const std::string& text) {
  const std::string expected =
      "expected ttft=DURATION,tpot=DURATION,percentile=50|90|99 or "
      "ttft_p90=DURATION,tpot_p90=DURATION with positive durations, e.g. "
      "--slo ttft=0.4s,tpot=40ms,percentile=90";
  auto terms = ReadSloTerms(text, expected);
  if (!terms.ok()) return terms.error();
  if (!terms.value().ttft_s || !terms.value().tpot_s) {
    return Error{"--slo '" + text + "': expected both ttft and tpot bounds; " + expected};
  }
  if (terms.value().percentile == 0) {
    return Error{"--slo '" + text + "': serve-plan judges a percentile of the TTFT and the " +
                 "TPOT; add percentile=50, 90 or 99 (e.g. " + text + ",percentile=90)"};
  }
  return PercentileSlo{.ttft_s = *terms.value().ttft_s,
                       .tpot_s = *terms.value().tpot_s,
                       .percentile = terms.value().percentile};
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

namespace {

// trtllm-bench's inputs for `model` served as `sizing` says on `cluster` with `engine`'s formats.
Result<TrtllmBenchInputs> TrtllmBenchInputsOf(const ModelSpec& model, const ClusterSpec& cluster,
                                              const EngineOptions& engine,
                                              const EngineSizing& sizing) {
  if (!model.is_transformer()) {
    return Error{
        "--engine trtllm-bench: its limits are sized from a transformer's config "
        "(layers, KV heads, head size); for a layer list give --engine trtllm with "
        "--max-num-seqs and --max-num-batched-tokens"};
  }
  const TransformerSpec& spec = model.transformer;
  TrtllmBenchInputs in;
  in.params = TransformerParams(spec, model.seq_len);
  in.weight_bytes = engine.weight_bytes;
  in.tuned_quantization = engine.weight_bytes == 2 || engine.fp8_compute;
  in.layers = spec.layers;
  in.kv_heads = spec.kv_heads_or_heads();
  in.head_dim = spec.head_dim_or_default();
  in.kv_bytes = engine.kv_bytes;
  in.tp = sizing.shape.tp;
  in.pp = sizing.shape.pp;
  in.device_gib = static_cast<double>(cluster.hbm_bytes) / (1024.0 * 1024.0 * 1024.0);
  in.kv_fraction = engine.kv_free_fraction;
  in.chunked_prefill = engine.batching == EngineOptions::Batching::kChunked;
  const Workload& workload = sizing.workload;
  if (!workload.trace.empty()) {
    double prompts = 0;
    double outputs = 0;
    for (const TraceRequest& request : workload.trace) {
      prompts += static_cast<double>(request.prompt);
      outputs += static_cast<double>(request.output);
      in.max_prompt = std::max(in.max_prompt, request.prompt);
    }
    in.mean_prompt = prompts / static_cast<double>(workload.trace.size());
    in.mean_output = outputs / static_cast<double>(workload.trace.size());
  } else if (!workload.length_table.empty()) {
    return Error{
        "--engine trtllm-bench with a length table: not supported; give --engine "
        "trtllm with --max-num-seqs and --max-num-batched-tokens"};
  } else {
    // A shared prefix is part of every prompt the engine sees (Workload::prefix_tokens).
    const auto prefix =
        static_cast<double>(workload.prefix_groups > 0 ? workload.prefix_tokens : 0);
    in.mean_prompt = prefix + static_cast<double>(workload.prompt.low + workload.prompt.high) / 2;
    in.mean_output = static_cast<double>(workload.output.low + workload.output.high) / 2;
    in.max_prompt = static_cast<int64_t>(prefix) + workload.prompt.high;
  }
  return in;
}

}  // namespace

Status ApplyEngineFlags(const EngineFlags& flags, const ModelSpec& model,
                        const ClusterSpec& cluster, EngineOptions& engine,
                        const EngineSizing* sizing) {
  std::optional<EngineProfile> profile;
  if (!flags.engine.empty()) {
    auto parsed = ParseEngineProfile(flags.engine);
    if (!parsed.ok()) return parsed.error();
    profile = parsed.value();
    ApplyEngineProfile(*profile, cluster, engine);
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
  if (!flags.batching.empty()) {
    const auto batching = kBatchingNames.Parse(flags.batching);
    if (!batching) {
      return Error{"--batching '" + EscapeBytes(flags.batching) + "': expected chunked (vLLM V1, " +
                   "Sarathi-Serve), unchunked (TensorRT-LLM: whole prompts beside the decodes) " +
                   "or prefill-first (vLLM V0)" + kBatchingNames.DidYouMean(flags.batching)};
    }
    ApplyBatching(*batching, model.seq_len, engine);
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
  if (profile == EngineProfile::kTrtllmBench) {
    if (sizing == nullptr) {
      return Error{
          "--engine trtllm-bench: its limits are sized for one layout and one dataset, "
          "and serve-plan searches the limits itself; give --engine trtllm"};
    }
    auto inputs = TrtllmBenchInputsOf(model, cluster, engine, *sizing);
    if (!inputs.ok()) return inputs.error();
    const TrtllmBenchLimits limits = ComputeTrtllmBenchLimits(inputs.value());
    engine.max_seqs = static_cast<int32_t>(std::min(limits.max_batch_size, kMaxEngineSeqs));
    engine.token_budget = std::min(limits.max_num_tokens, kMaxEngineTokens);
  }
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
  return ApplySpeculation(flags.speculative_tokens, flags.acceptance_rate, model, engine);
}

}  // namespace stagecraft
