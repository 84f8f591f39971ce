// `stagecraft derive`: the per-layer FLOPs and parameters of a transformer or a CSA2 layer list
// (doc/metrics.md, "Per-layer FLOPs and parameters").
#include <algorithm>
#include <cmath>

#include "commands/derive.h"
#include "core/units.h"
#include "model/layer_costs.h"
#include "model/transformer.h"

namespace stagecraft {
namespace {

bool SameFigures(const LayerFigures& a, const LayerFigures& b) {
  return a.kind == b.kind && a.forward_flops == b.forward_flops &&
         a.backward_flops == b.backward_flops &&
         a.recompute_selective_flops == b.recompute_selective_flops &&
         a.recompute_full_flops == b.recompute_full_flops &&
         a.attention_params == b.attention_params && a.mlp_params == b.mlp_params &&
         a.params == b.params;
}

void AppendMerged(std::vector<LayerFigures>& rows, const LayerFigures& row) {
  if (!rows.empty() && rows.back().last + 1 == row.first && SameFigures(rows.back(), row)) {
    rows.back().last = row.last;
    return;
  }
  rows.push_back(row);
}

// Whole layers (no tensor, context or expert split), no recomputation unless asked.
TransformerRun WholeLayerRun(const ModelSpec& model, Recompute recompute) {
  TransformerRun run;
  run.seq_len = model.seq_len;
  run.micro_batch = model.micro_batch_size;
  run.recompute = recompute;
  return run;
}

LayerFigures TransformerDecoder(const ModelSpec& model, int32_t index, bool moe) {
  const TransformerSpec& spec = model.transformer;
  const LayerFlops plain = DecoderLayerFlops(spec, WholeLayerRun(model, Recompute::kNone), moe);
  const LayerFlops selective =
      DecoderLayerFlops(spec, WholeLayerRun(model, Recompute::kSelective), moe);
  LayerFigures row;
  row.first = row.last = index;
  row.kind = moe ? "decoder moe" : "decoder dense";
  row.forward_flops = plain.forward;
  row.backward_flops = plain.input_grad + plain.weight_grad;
  row.recompute_selective_flops = selective.input_grad - plain.input_grad;
  row.recompute_full_flops = plain.forward;
  row.attention_params = DecoderAttentionParams(spec);
  row.mlp_params = DecoderMlpParams(spec, moe);
  row.params = DecoderLayerParams(spec, moe);
  return row;
}

std::string Csa2Kind(const LayerSpec& layer) {
  if (layer.kind != LayerKind::kDecoder) return LayerKindName(layer.kind);
  std::string kind = std::string("decoder ") + AttentionModeName(layer.attention);
  if (layer.compress_ratio > 0) kind += " m=" + std::to_string(layer.compress_ratio);
  kind += layer.mlp == MlpKind::kMoe ? " moe" : " dense";
  if (layer.engram) kind += " engram";
  return kind;
}

double TotalParams(const std::vector<LayerFigures>& rows) {
  double total = 0;
  for (const LayerFigures& row : rows) total += row.params * (row.last - row.first + 1);
  return total;
}

std::string Flops(double flops) { return FormatFixed(flops / 1e9, 3); }
std::string Count(double params) { return std::to_string(std::llround(params)); }

}  // namespace

std::vector<LayerFigures> TransformerLayerFigures(const PreparedRun& run) {
  const ModelSpec& model = run.config.model;
  const TransformerSpec& spec = model.transformer;
  std::vector<LayerFigures> rows;
  LayerFigures embedding;
  embedding.kind = "embedding";
  embedding.params = EmbeddingParams(spec, model.seq_len);
  rows.push_back(embedding);
  for (int32_t decoder = 0; decoder < spec.layers; ++decoder) {
    AppendMerged(rows, TransformerDecoder(model, decoder + 1, spec.moe_layer(decoder)));
  }
  const LayerFlops logits = HeadFlops(spec, WholeLayerRun(model, Recompute::kNone));
  LayerFigures head;
  head.first = head.last = spec.layers + 1;
  head.kind = "head";
  head.forward_flops = logits.forward;
  head.backward_flops = logits.input_grad + logits.weight_grad;
  // The output projection (none of its own when tied to the embedding) and the final norm.
  const double h = static_cast<double>(spec.hidden);
  head.params = (spec.tied_embeddings ? 0.0 : static_cast<double>(spec.vocab) * h) +
                (spec.bias ? 2.0 : 1.0) * h;
  rows.push_back(head);
  return rows;
}

std::vector<LayerFigures> Csa2LayerFigures(const PreparedRun& run) {
  const ModelSpec& model = run.config.model;
  std::vector<LayerFigures> rows;
  for (size_t index = 0; index < model.layers.size(); ++index) {
    const LayerSpec& layer = model.layers[index];
    LayerFigures row;
    row.first = row.last = static_cast<int32_t>(index);
    row.kind = Csa2Kind(layer);
    row.forward_flops = LayerForwardFlops(layer, model.dims, model.seq_len, model.micro_batch_size);
    // Backward ≈ 2 × forward, I ≈ W ≈ F (doc/csa2.md), as the FLOPs cost model takes it.
    row.backward_flops = 2 * row.forward_flops;
    row.params = LayerParams(layer, model.dims);
    if (layer.kind == LayerKind::kDecoder) {
      row.recompute_selective_flops =
          LayerAttentionCoreFlops(layer, model.dims, model.seq_len, model.micro_batch_size) +
          LayerScoringFlops(layer, model.dims, model.seq_len, model.micro_batch_size);
      row.recompute_full_flops = row.forward_flops;
      row.mlp_params = LayerMlpParams(layer, model.dims);
      row.attention_params =
          row.params - row.mlp_params - (layer.engram ? EngramProjectionParams(model.dims) : 0.0);
    }
    AppendMerged(rows, row);
  }
  return rows;
}

std::string LayerFiguresText(const PreparedRun& run, const std::vector<LayerFigures>& rows) {
  const ModelSpec& model = run.config.model;
  std::string text =
      "\nper-layer FLOPs (GFLOP, one microbatch of " + std::to_string(model.micro_batch_size) +
      " x " + std::to_string(model.seq_len) +
      " tokens, the whole layer before tp, cp or ep split it) and parameters; recompute in this "
      "run: " +
      RecomputeName(run.config.parallel.recompute) + "\n";
  // One column wider than the longest kind: PadRight then pads every kind to the same width.
  size_t kind_width = 4;
  for (const LayerFigures& row : rows) kind_width = std::max(kind_width, row.kind.size());
  ++kind_width;
  text += "  " + PadLeft("layers", 7) + "  " + PadRight("kind", kind_width) +
          "  forward_gflop  backward_gflop  recompute_selective_gflop  recompute_full_gflop" +
          "  attention_params   mlp_params        params\n";
  for (const LayerFigures& row : rows) {
    const std::string range = row.first == row.last
                                  ? std::to_string(row.first)
                                  : std::to_string(row.first) + "-" + std::to_string(row.last);
    text += "  " + PadLeft(range, 7) + "  " + PadRight(row.kind, kind_width) +
            PadLeft(Flops(row.forward_flops), 15) + PadLeft(Flops(row.backward_flops), 16) +
            PadLeft(Flops(row.recompute_selective_flops), 27) +
            PadLeft(Flops(row.recompute_full_flops), 22) +
            PadLeft(Count(row.attention_params), 18) + PadLeft(Count(row.mlp_params), 13) +
            PadLeft(Count(row.params), 14) + "\n";
  }
  const double total = TotalParams(rows);
  text += "total_params: " + Count(total) + " (" + FormatFixed(total / 1e9, 2) + "B)\n";
  return text;
}

void WriteLayerFiguresJson(JsonWriter& json, const std::vector<LayerFigures>& rows) {
  json.Key("layers").BeginArray();
  for (const LayerFigures& row : rows) {
    json.BeginObject();
    json.Key("first_layer").Int(row.first);
    json.Key("last_layer").Int(row.last);
    json.Key("kind").String(row.kind);
    json.Key("forward_gflop").Fixed(row.forward_flops / 1e9, 3);
    json.Key("backward_gflop").Fixed(row.backward_flops / 1e9, 3);
    json.Key("recompute_selective_gflop").Fixed(row.recompute_selective_flops / 1e9, 3);
    json.Key("recompute_full_gflop").Fixed(row.recompute_full_flops / 1e9, 3);
    json.Key("attention_params").Int(std::llround(row.attention_params));
    json.Key("mlp_params").Int(std::llround(row.mlp_params));
    json.Key("params").Int(std::llround(row.params));
    json.EndObject();
  }
  json.EndArray();
  json.Key("total_params").Int(std::llround(TotalParams(rows)));
}

}  // namespace stagecraft
