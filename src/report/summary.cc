#include "report/summary.h"

#include <algorithm>
#include <cstdio>

#include "core/units.h"
#include "report/json_writer.h"

namespace stagecraft {
namespace {

std::string Pad(const std::string& text, size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

std::string Percent(double fraction) { return FormatFixed(fraction * 100.0, 2) + "%"; }

}  // namespace

std::string FormatSummary(const RunInfo& run, const Metrics& metrics) {
  std::string text;
  text += "stagecraft simulate: " + run.config + "\n";
  text += "  model " + run.model + ", schedule " + run.schedule + ", pp " + std::to_string(run.pp) +
          ", vpp " + std::to_string(run.vpp) + ", microbatches " +
          std::to_string(run.microbatches) + "\n";
  text += "  per microbatch per rank: F " + FormatMs(run.forward) + " ms, I " +
          FormatMs(run.input_grad) + " ms, W " + FormatMs(run.weight_grad) + " ms; p2p " +
          P2pModeName(run.p2p) + ", cost_p2p " + FormatMs(run.cost_p2p) + " ms" +
          (run.cluster_given ? ", cluster links" : ", no cluster (transfers cost cost_p2p)") +
          "\n\n";
  text += "  makespan          " + FormatMs(metrics.makespan) + " ms\n";
  text += "  bubble_fraction   " + FormatFixed(metrics.bubble_fraction, 6) + "  (" +
          Percent(metrics.bubble_fraction) + " of device time idle)\n";
  text += "  bubble_rate_span  " + FormatFixed(metrics.bubble_rate_span, 6) + "\n";
  text += "  bubble_overhead   " + FormatFixed(metrics.bubble_overhead, 6) + "  (idle / ideal)\n";
  text += "  compute actions   " + std::to_string(metrics.num_compute_actions) + ", transfers " +
          std::to_string(metrics.num_transfers) + " (" + FormatBytes(metrics.bytes_moved) + ")\n\n";
  const char* header = "  rank      busy_ms      idle_ms      span_ms  peak_act  peak_act_bytes\n";
  text += header;
  for (const RankMetrics& rank : metrics.ranks) {
    text += "  " + Pad(std::to_string(rank.rank), 4) + Pad(FormatMs(rank.busy), 13) +
            Pad(FormatMs(rank.idle), 13) + Pad(FormatMs(rank.span), 13) +
            Pad(std::to_string(rank.peak_activations), 10) +
            Pad(std::to_string(rank.peak_activation_bytes), 16) + "\n";
  }
  return text;
}

std::string FormatMetricsJson(const RunInfo& run, const Metrics& metrics) {
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("config").String(run.config);
  json.Key("model").String(run.model);
  json.Key("schedule").String(run.schedule);
  json.Key("pp").Int(run.pp);
  json.Key("vpp").Int(run.vpp);
  json.Key("microbatches").Int(run.microbatches);
  json.Key("p2p").String(P2pModeName(run.p2p));
  json.Key("cost_p2p_ms").Raw(FormatMs(run.cost_p2p));
  json.Key("makespan_ms").Raw(FormatMs(metrics.makespan));
  json.Key("bubble_fraction").Fixed(metrics.bubble_fraction, 6);
  json.Key("bubble_rate_span").Fixed(metrics.bubble_rate_span, 6);
  json.Key("bubble_overhead").Fixed(metrics.bubble_overhead, 6);
  json.Key("total_busy_ms").Raw(FormatMs(metrics.total_busy));
  json.Key("compute_actions").Int(metrics.num_compute_actions);
  json.Key("transfers").Int(metrics.num_transfers);
  json.Key("bytes_moved").Int(metrics.bytes_moved);
  json.Key("ranks").BeginArray();
  for (const RankMetrics& rank : metrics.ranks) {
    json.BeginObject();
    json.Key("rank").Int(rank.rank);
    json.Key("busy_ms").Raw(FormatMs(rank.busy));
    json.Key("idle_ms").Raw(FormatMs(rank.idle));
    json.Key("span_ms").Raw(FormatMs(rank.span));
    json.Key("peak_activations").Int(rank.peak_activations);
    json.Key("peak_activation_bytes").Int(rank.peak_activation_bytes);
    json.Key("bytes_sent").Int(rank.bytes_sent);
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  return json.text() + "\n";
}

}  // namespace stagecraft
