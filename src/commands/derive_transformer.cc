// `stagecraft derive` for a dense or MoE transformer (model.type: transformer, --hf-config): the
// schedule's closed form with the slowest stage's costs next to the simulated run, the per-layer
// FLOPs and parameters, and the inference KV cache per token of its real attention (MHA, GQA,
// MQA, MLA). No shared state: a transformer's layers share none.
#include <cmath>

#include "commands/commands.h"
#include "commands/derive.h"
#include "core/units.h"

namespace stagecraft {
namespace {

// KV cache elements are stored in bf16.
constexpr int32_t kKvCacheBytesPerElement = 2;

std::string Int(int64_t value) { return std::to_string(value); }

// The formula of the KV cache per token, symbolic and with the numbers plugged in.
struct KvFormula {
  std::string symbolic;
  std::string numbers;
};

KvFormula KvCacheFormula(const TransformerSpec& spec, AttentionKind attention) {
  const std::string bytes = Int(kKvCacheBytesPerElement);
  if (attention == AttentionKind::kMla) {
    return {"(kv_lora_rank + qk_rope_head_dim) x layers x bytes",
            "(" + Int(spec.kv_lora_rank) + " + " + Int(spec.qk_rope_dim) + ") x " +
                Int(spec.layers) + " x " + bytes};
  }
  return {"2 x n_kv x head_dim x layers x bytes", "2 x " + Int(spec.kv_heads_or_heads()) + " x " +
                                                      Int(spec.head_dim_or_default()) + " x " +
                                                      Int(spec.layers) + " x " + bytes};
}

std::string AttentionShape(const TransformerSpec& spec, AttentionKind attention) {
  if (attention == AttentionKind::kMla) {
    return Int(spec.heads) + " heads, kv_lora_rank " + Int(spec.kv_lora_rank) +
           ", qk_rope_head_dim " + Int(spec.qk_rope_dim);
  }
  return Int(spec.heads) + " query heads, " + Int(spec.kv_heads_or_heads()) + " KV heads of " +
         Int(spec.head_dim_or_default());
}

std::string ModelLine(const ModelSpec& model) {
  const TransformerSpec& spec = model.transformer;
  const AttentionKind attention = TransformerAttentionKind(spec);
  std::string text = "model " + model.name + ": " + (spec.moe() ? "MoE" : "dense") +
                     " transformer, " + Int(spec.layers) + " decoder layers, hidden " +
                     Int(spec.hidden) + ", " + AttentionKindName(attention) + " attention (" +
                     AttentionShape(spec, attention) + ")";
  if (spec.moe()) {
    text += ", " + Int(spec.experts) + " routed experts (" + Int(spec.experts_per_token) +
            " per token) + " + Int(spec.shared_experts) + " shared";
  }
  return text + "\n";
}

std::string KvCacheText(const ModelSpec& model) {
  const KvCachePerToken cache =
      TransformerKvCachePerToken(model.transformer, kKvCacheBytesPerElement);
  const KvFormula formula = KvCacheFormula(model.transformer, cache.attention);
  const int64_t bytes = std::llround(cache.total());
  return std::string("\ninference KV cache per token (") + AttentionKindName(cache.attention) +
         ", bf16): " + formula.symbolic + "\n  = " + formula.numbers + " = " + Int(bytes) + " B (" +
         FormatBytes(bytes) + ")\n";
}

void WriteKvCacheJson(JsonWriter& json, const ModelSpec& model) {
  const KvCachePerToken cache =
      TransformerKvCachePerToken(model.transformer, kKvCacheBytesPerElement);
  const KvFormula formula = KvCacheFormula(model.transformer, cache.attention);
  json.Key("attention").String(AttentionKindName(cache.attention));
  json.Key("kv_cache_formula").String(formula.symbolic);
  json.Key("kv_cache_numbers").String(formula.numbers);
  json.Key("inference_kv_cache_bytes_per_token").Fixed(cache.total(), 2);
}

}  // namespace

Status DeriveTransformer(const PreparedRun& run, bool json, std::ostream& out, std::ostream& err) {
  auto form = ScheduleClosedForm(run);
  RunOutcome simulated;
  STAGECRAFT_RETURN_IF_ERROR(SimulateRun(run, simulated, err));
  const ModelSpec& model = run.config.model;
  const std::vector<LayerFigures> rows = TransformerLayerFigures(run);
  if (json) {
    JsonWriter writer(/*pretty=*/true);
    writer.BeginObject();
    writer.Key("model").String(model.name);
    writer.Key("model_kind").String(model.transformer.moe() ? "moe" : "dense");
    if (form.ok()) {
      WriteScheduleDerivationJson(writer, run, DeriveSchedule(run, form.value(), simulated),
                                  simulated.metrics);
    } else {
      writer.Key("schedule").String(run.schedule.name);
      writer.Key("no_closed_form").String(form.error().message);
      writer.Key("simulated_makespan_ms").Raw(FormatMs(simulated.metrics.makespan));
    }
    WriteLayerFiguresJson(writer, rows);
    WriteKvCacheJson(writer, model);
    writer.EndObject();
    out << writer.text() << "\n";
    return Status::Ok();
  }
  std::string text = "stagecraft derive: " + run.label + "\n" + ModelLine(model);
  if (form.ok()) {
    text += ScheduleDerivationText(run, DeriveSchedule(run, form.value(), simulated),
                                   simulated.metrics);
  } else {
    text += "no_closed_form: " + form.error().message + "; simulated makespan " +
            FormatMs(simulated.metrics.makespan) + " ms\n";
  }
  out << text << LayerFiguresText(run, rows) << KvCacheText(model);
  return Status::Ok();
}

}  // namespace stagecraft
