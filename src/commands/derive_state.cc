// `stagecraft derive` for CSA2 layer lists: the shared-state payload at every possible cut, the
// closed form of the iteration's state bytes next to the simulated value, the per-layer FLOPs
// and parameters, the inference KV cache per token (compressed KV and indexer keys), and per
// flow the cost of shipping it versus recomputing it with a shadow indexer.
#include <algorithm>

#include "analysis/state_closed_form.h"
#include "commands/commands.h"
#include "commands/derive.h"
#include "core/units.h"
#include "lower/layer_pipeline.h"
#include "model/kv_cache.h"
#include "report/json_writer.h"

namespace stagecraft {
namespace {

constexpr StateKind kKinds[] = {StateKind::kCompressedKv, StateKind::kIndexerKeys, StateKind::kTopK,
                                StateKind::kCandidatePool};

std::string CutTable(const ModelSpec& model) {
  std::string text =
      "shared state crossing a cut placed before each layer, bytes per token (payload view;\n"
      "hidden = hc_streams x hidden x 2):\n"
      "  before_layer  hidden   state  compressed_kv  indexer_keys  top_k  candidates\n";
  for (const CutPayload& cut : CutPayloads(model)) {
    text += "  " + PadLeft(std::to_string(cut.before_layer), 12) +
            PadLeft(std::to_string(cut.hidden_bytes_per_token), 8) +
            PadLeft(std::to_string(cut.state_bytes_per_token), 8);
    const size_t widths[] = {15, 14, 7, 12};
    for (size_t kind = 0; kind < 4; ++kind) {
      text += PadLeft(std::to_string(cut.by_kind[kind]), widths[kind]);
    }
    text += "\n";
  }
  return text;
}

std::string FlowName(const StateFlow& flow) {
  return std::string(StateKindName(flow.kind)) + " of layer " + std::to_string(flow.producer_layer);
}

std::string PolicyTable(const PreparedRun& run) {
  const LayerPipelineOptions options = PipelineOptionsOf(run);
  std::string text = "\nship versus shadow, per flow and microbatch (shadow reading " +
                     std::string(ShadowReadingName(options.reading)) + "):\n";
  for (const StateFlow& flow : run.lower.states) {
    const auto estimates = EstimatePolicies(flow, run.config.model, options);
    text += "  " + FlowName(flow) + " (" + StatePolicyName(flow.policy) + "):";
    const PolicyEstimate* best = nullptr;
    for (const PolicyEstimate& estimate : estimates) {
      if (!estimate.applicable) {
        text += std::string(" ") + StatePolicyName(estimate.policy) + " n/a;";
        continue;
      }
      text += std::string(" ") + StatePolicyName(estimate.policy) + " " +
              FormatBytes(estimate.bytes) +
              (estimate.flops > 0 ? " + " + FormatFixed(estimate.flops / 1e9, 3) + " GFLOP" : "") +
              " = " + FormatMs(estimate.time) + " ms;";
      if (best == nullptr || estimate.time < best->time) best = &estimate;
    }
    text += std::string(" cheapest: ") + StatePolicyName(best->policy) + "\n";
  }
  return text;
}

std::string DeriveStateText(const PreparedRun& run, const Metrics& metrics,
                            const StateBytesClosedForm& form) {
  std::string text = "stagecraft derive: " + run.label + "\n";
  text += CutTable(run.config.model);
  text +=
      "\nstate bytes per iteration = sum over flows of m x bytes x crossings (x2 with dState)\n";
  text += "  closed form " + std::to_string(form.total()) + " B (forward " +
          std::to_string(form.forward) + ", dState " + std::to_string(form.backward) +
          ")    simulated " + std::to_string(metrics.state_bytes()) + " B (forward " +
          std::to_string(metrics.state_bytes_forward) + ", dState " +
          std::to_string(metrics.state_bytes_backward) + ")\n";
  text += form.total() == metrics.state_bytes() ? "  they agree exactly\n"
                                                : "  they differ: please report this\n";
  text += LayerFiguresText(run, Csa2LayerFigures(run));
  const KvCachePerToken cache = Csa2KvCachePerToken(run.config.model.layers, run.config.model.dims);
  text +=
      "\ninference KV cache per token (full layers only; main KV FP4 + E4M3 scale per 16,\n"
      "indexer keys MXFP4; sliding window excluded): " +
      FormatFixed(cache.total(), 2) + " B (main KV " + FormatFixed(cache.main_kv_bytes, 2) +
      ", indexer keys " + FormatFixed(cache.indexer_key_bytes, 2) + ")\n";
  return text + PolicyTable(run);
}

std::string DeriveStateJson(const PreparedRun& run, const Metrics& metrics,
                            const StateBytesClosedForm& form) {
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("model").String(run.config.model.name);
  json.Key("cuts").BeginArray();
  for (const CutPayload& cut : CutPayloads(run.config.model)) {
    json.BeginObject().Key("before_layer").Int(cut.before_layer);
    json.Key("hidden_bytes_per_token").Int(cut.hidden_bytes_per_token);
    json.Key("state_bytes_per_token").Int(cut.state_bytes_per_token);
    for (StateKind kind : kKinds) {
      json.Key(std::string(StateKindName(kind)) + "_bytes_per_token")
          .Int(cut.by_kind[static_cast<int>(kind)]);
    }
    json.EndObject();
  }
  json.EndArray();
  WriteLayerFiguresJson(json, Csa2LayerFigures(run));
  const KvCachePerToken cache = Csa2KvCachePerToken(run.config.model.layers, run.config.model.dims);
  json.Key("attention").String(AttentionKindName(cache.attention));
  json.Key("inference_kv_cache_bytes_per_token").Fixed(cache.total(), 2);
  json.Key("main_kv_bytes_per_token").Fixed(cache.main_kv_bytes, 2);
  json.Key("indexer_keys_bytes_per_token").Fixed(cache.indexer_key_bytes, 2);
  json.Key("closed_form_state_bytes").Int(form.total());
  json.Key("simulated_state_bytes").Int(metrics.state_bytes());
  json.Key("flows").BeginArray();
  const LayerPipelineOptions options = PipelineOptionsOf(run);
  for (const StateFlow& flow : run.lower.states) {
    json.BeginObject().Key("producer_layer").Int(flow.producer_layer);
    json.Key("state").String(StateKindName(flow.kind));
    json.Key("policy").String(StatePolicyName(flow.policy));
    for (const PolicyEstimate& estimate : EstimatePolicies(flow, run.config.model, options)) {
      const std::string prefix = StatePolicyName(estimate.policy);
      json.Key(prefix + "_applicable").Bool(estimate.applicable);
      json.Key(prefix + "_bytes").Int(estimate.bytes);
      json.Key(prefix + "_gflop").Fixed(estimate.flops / 1e9, 6);
      json.Key(prefix + "_ms").Raw(FormatMs(estimate.time));
    }
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  return json.text() + "\n";
}

}  // namespace

Status DeriveLayerModel(const PreparedRun& run, bool json, std::ostream& out, std::ostream& err) {
  RunOutcome simulated;
  STAGECRAFT_RETURN_IF_ERROR(SimulateRun(run, simulated, err));
  const int32_t copies = run.schedule.placement == Placement::kDual ? 2 : 1;
  const StateBytesClosedForm form = ClosedFormStateBytes(run.lower.states, StageRanks(run.schedule),
                                                         run.schedule.num_microbatches, copies);
  out << (json ? DeriveStateJson(run, simulated.metrics, form)
               : DeriveStateText(run, simulated.metrics, form));
  return Status::Ok();
}

}  // namespace stagecraft
