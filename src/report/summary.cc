#include "report/summary.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/text_table.h"
#include "core/units.h"
#include "report/json_writer.h"

namespace stagecraft {
namespace {

std::string Percent(double fraction) { return FormatFixed(fraction * 100.0, 2) + "%"; }

std::string FormatStages(const RunInfo& run) {
  std::string text = "  stages (partition " + run.partition + "):\n";
  for (const StageInfo& stage : run.stages) {
    text += "    stage " + PadLeft(std::to_string(stage.stage), 2) + " on rank " +
            PadLeft(std::to_string(stage.rank), 2) + ": layers " +
            std::to_string(stage.first_layer) + "-" + std::to_string(stage.last_layer) + ", F " +
            FormatMs(stage.forward) + " ms, B " + FormatMs(stage.backward) + " ms\n";
  }
  for (const CutInfo& cut : run.cuts) {
    text += "    cut after stage " + std::to_string(cut.after_stage) + " (before layer " +
            std::to_string(cut.before_layer) + "): hidden " +
            std::to_string(cut.hidden_bytes_per_token) + " B/token, shared state " +
            std::to_string(cut.state_bytes_per_token) + " B/token" +
            (cut.states.empty() ? "" : " (" + cut.states + ")") + "\n";
  }
  return text + "\n";
}

std::string FormatStateSummary(const RunInfo& run, const Metrics& metrics) {
  std::string text = "  shared state      policy " + run.state_policy + ": " +
                     FormatBytes(metrics.state_bytes()) + " per iteration (forward " +
                     FormatBytes(metrics.state_bytes_forward) + ", dState " +
                     FormatBytes(metrics.state_bytes_backward) + "), exposed " +
                     FormatMs(metrics.state_exposed) + " ms on the critical path\n";
  for (const FlowMetrics& flow : metrics.flows) {
    std::string consumers;
    for (int32_t stage : flow.consumer_stages) {
      consumers += (consumers.empty() ? "" : ",") + std::to_string(stage);
    }
    text += "    " + std::string(StateKindName(flow.kind)) + " of layer " +
            std::to_string(flow.producer_layer) + " (stage " + std::to_string(flow.producer_stage) +
            " -> stages " + consumers + ", " + StatePolicyName(flow.policy) +
            "): " + FormatBytes(flow.bytes_forward) + " forward, " +
            FormatBytes(flow.bytes_backward) + " dState";
    if (!flow.resident_stages.empty()) {
      std::string resident;
      for (int32_t stage : flow.resident_stages) {
        resident += (resident.empty() ? "" : ",") + std::to_string(stage);
      }
      text += "; resident on the producer's rank for stages " + resident + " (no bytes)";
    }
    text += "\n";
  }
  return text + "\n";
}

void WriteFlows(JsonWriter& json, const Metrics& metrics) {
  json.Key("flows").BeginArray();
  for (const FlowMetrics& flow : metrics.flows) {
    json.BeginObject();
    json.Key("producer_layer").Int(flow.producer_layer);
    json.Key("state").String(StateKindName(flow.kind));
    json.Key("policy").String(StatePolicyName(flow.policy));
    json.Key("producer_stage").Int(flow.producer_stage);
    json.Key("consumer_stages").BeginArray();
    for (int32_t stage : flow.consumer_stages) json.Int(stage);
    json.EndArray();
    json.Key("bytes_forward").Int(flow.bytes_forward);
    json.Key("bytes_backward").Int(flow.bytes_backward);
    json.Key("resident_stages").BeginArray();
    for (int32_t stage : flow.resident_stages) json.Int(stage);
    json.EndArray();
    json.EndObject();
  }
  json.EndArray();
  json.Key("state_links").BeginArray();
  for (const LinkStateBytes& link : metrics.state_links) {
    json.BeginObject().Key("from").Int(link.from).Key("to").Int(link.to);
    json.Key("bytes").Int(link.bytes).EndObject();
  }
  json.EndArray();
}

void WriteStages(JsonWriter& json, const RunInfo& run) {
  json.Key("stages").BeginArray();
  for (const StageInfo& stage : run.stages) {
    json.BeginObject().Key("stage").Int(stage.stage).Key("rank").Int(stage.rank);
    json.Key("first_layer").Int(stage.first_layer).Key("last_layer").Int(stage.last_layer);
    json.Key("forward_ms").Raw(FormatMs(stage.forward));
    json.Key("backward_ms").Raw(FormatMs(stage.backward)).EndObject();
  }
  json.EndArray();
  json.Key("cuts").BeginArray();
  for (const CutInfo& cut : run.cuts) {
    json.BeginObject().Key("after_stage").Int(cut.after_stage);
    json.Key("before_layer").Int(cut.before_layer);
    json.Key("hidden_bytes_per_token").Int(cut.hidden_bytes_per_token);
    json.Key("state_bytes_per_token").Int(cut.state_bytes_per_token).EndObject();
  }
  json.EndArray();
}

void WriteMemoryVerdict(JsonWriter& json, const MemoryInfo& memory) {
  json.Key("memory").BeginObject();
  if (memory.capacity_known) {
    json.Key("fits").Bool(memory.fits);
  } else {
    json.Key("fits").Raw("null");
  }
  json.Key("peak_bytes").Fixed(memory.peak_bytes, 0);
  json.Key("capacity_bytes").Int(memory.capacity_bytes);
  json.Key("rank").Int(memory.rank);
  json.Key("model_state_bytes").Fixed(memory.state_bytes, 0);
  json.Key("activation_and_state_bytes").Int(memory.transient_bytes);
  json.Key("reserve_bytes").Int(memory.reserve_bytes);
  json.EndObject();
}

std::string FormatThroughput(const RunInfo& run, const Metrics& metrics) {
  const Throughput t = ThroughputOf(run, metrics);
  Time collective;
  for (const RankMetrics& rank : metrics.ranks) collective = std::max(collective, rank.collective);
  std::string text = "  parallel          pp " + std::to_string(run.pp) + " x tp " +
                     std::to_string(run.tp) + " x cp " + std::to_string(run.cp) + " x dp " +
                     std::to_string(run.dp) + " = " + std::to_string(run.world_size) + " GPUs, " +
                     FormatFixed(run.params / 1e9, 2) + "B parameters, " +
                     std::to_string(run.tokens_per_iteration) + " tokens per iteration\n";
  text += "  throughput        " + FormatFixed(t.tflops_per_gpu, 1) +
          " TFLOP/s per GPU (hardware FLOPs, recomputation included), MFU " + Percent(t.mfu) +
          ", " + FormatFixed(t.tokens_per_s, 0) + " tokens/s\n";
  if (!run.cp_sharding.empty()) {
    text += "  context parallel  " + run.cp_sharding + " shards over cp " + std::to_string(run.cp) +
            ": the indexer scoring takes " + FormatFixed(run.cp_scan_imbalance, 3) +
            " x an even split (each layer waits for its busiest rank)\n";
  }
  text += "  collectives       " + std::to_string(metrics.num_collectives) +
          " on the collective streams, busiest rank " + FormatMs(collective) + " ms\n\n";
  return text;
}

std::string FormatMultimodal(const MultimodalInfo& info) {
  std::string text;
  if (info.vision) {
    text += "  vision encoder    placement " + info.placement + ": " + std::to_string(info.images) +
            " images (" + info.image_tokens + " tokens each), " +
            FormatFixed(info.vision_flops / 1e12, 1) + " TFLOP forward + backward; work " +
            FormatMs(info.vision_forward) + " ms forward + " + FormatMs(info.vision_backward) +
            " ms backward on one device\n";
    text += "                    on the first stage's rank " + FormatMs(info.vision_on_first_rank) +
            " ms; encoder " + FormatFixed(info.encoder_params / 1e6, 1) + "M parameters, " +
            FormatBytes(static_cast<int64_t>(info.encoder_state_bytes)) +
            " of model states on the fullest device, gradient all-reduce " +
            FormatMs(info.encoder_reduce) + " ms";
    if (info.encoder_devices > 0) {
      text += "; " + std::to_string(info.encoder_devices) + " encoder devices per pipeline";
    }
    text += "\n";
    if (info.vision_cp > 1) {
      text += "                    each sample's images over its " +
              std::to_string(info.vision_cp) +
              " CP ranks, each encoded once: the busiest rank does " +
              FormatFixed(info.vision_cp_imbalance, 3) + " x the mean\n";
    }
    if (info.placement == "bubble-fill") {
      text += "                    bubble-fill: " + std::to_string(info.prologue) +
              (info.prologue == 1 ? " microbatch" : " microbatches") +
              " encoded before the pipeline; " + FormatMs(info.forward_in_bubbles) +
              " ms forward and " + FormatMs(info.backward_in_bubbles) +
              " ms backward placed in idle gaps\n";
    }
  }
  if (info.engram) {
    text += "  engram            G = " + std::to_string(info.engram_owners) + " owners (" +
            FormatBytes(info.engram_owner_bytes) + " of tables each" +
            (info.engram_host_memory ? ", in host memory" : "") + "), " +
            std::to_string(info.engram_layers) +
            (info.engram_layers == 1 ? " Engram layer" : " Engram layers") +
            "; per rank and layer: ids " + FormatBytes(info.engram_id_bytes) + ", rows " +
            FormatBytes(info.engram_row_bytes) + ", gradients " +
            FormatBytes(info.engram_gradient_bytes) + "\n";
    text += "                    fetch " + FormatMs(info.engram_fetch) +
            " ms (a first forward waited " + FormatMs(info.engram_fetch_delay) +
            " ms for it), gradients " + FormatMs(info.engram_gradient) + " ms; exposed " +
            FormatMs(info.engram_exposed) + " ms (what the step loses to them)\n";
  }
  return text.empty() ? text : text + "\n";
}

void WriteMultimodal(JsonWriter& json, const MultimodalInfo& info) {
  if (!info.vision && !info.engram) return;
  json.Key("multimodal").BeginObject();
  if (info.vision) {
    json.Key("vision").BeginObject();
    json.Key("placement").String(info.placement);
    json.Key("image_tokens").String(info.image_tokens);
    json.Key("images").Int(info.images);
    json.Key("flops").Fixed(info.vision_flops, 0);
    json.Key("forward_ms").Raw(FormatMs(info.vision_forward));
    json.Key("backward_ms").Raw(FormatMs(info.vision_backward));
    json.Key("on_first_stage_rank_ms").Raw(FormatMs(info.vision_on_first_rank));
    json.Key("cp_imbalance").Fixed(info.vision_cp_imbalance, 6);
    json.Key("encoder_devices").Int(info.encoder_devices);
    json.Key("prologue_microbatches").Int(info.prologue);
    json.Key("forward_in_bubbles_ms").Raw(FormatMs(info.forward_in_bubbles));
    json.Key("backward_in_bubbles_ms").Raw(FormatMs(info.backward_in_bubbles));
    json.Key("encoder_reduce_ms").Raw(FormatMs(info.encoder_reduce));
    json.Key("encoder_params").Fixed(info.encoder_params, 0);
    json.Key("encoder_state_bytes").Fixed(info.encoder_state_bytes, 0);
    json.EndObject();
  }
  if (info.engram) {
    json.Key("engram").BeginObject();
    json.Key("owners").Int(info.engram_owners);
    json.Key("layers").Int(info.engram_layers);
    json.Key("host_memory").Bool(info.engram_host_memory);
    json.Key("owner_bytes").Int(info.engram_owner_bytes);
    json.Key("id_bytes").Int(info.engram_id_bytes);
    json.Key("row_bytes").Int(info.engram_row_bytes);
    json.Key("gradient_bytes").Int(info.engram_gradient_bytes);
    json.Key("fetch_ms").Raw(FormatMs(info.engram_fetch));
    json.Key("fetch_delay_ms").Raw(FormatMs(info.engram_fetch_delay));
    json.Key("gradient_ms").Raw(FormatMs(info.engram_gradient));
    json.Key("exposed_ms").Raw(FormatMs(info.engram_exposed));
    json.EndObject();
  }
  json.EndObject();
}

}  // namespace

std::string FormatMemoryVerdict(const MemoryInfo& memory) {
  std::string parts = (memory.states_known ? "model states " + FormatGib(memory.state_bytes) + " + "
                                           : std::string()) +
                      "activations and shared state " +
                      FormatGib(static_cast<double>(memory.transient_bytes)) +
                      (memory.reserve_bytes > 0
                           ? " + reserve " + FormatGib(static_cast<double>(memory.reserve_bytes))
                           : std::string()) +
                      "; GiB = 2^30 B";
  const std::string rank = "rank " + std::to_string(memory.rank);
  if (!memory.capacity_known && memory.peak_bytes <= 0) {
    return "not known: no device memory and nothing sized (give model.activation_bytes, and a "
           "cluster preset for the capacity)";
  }
  if (!memory.capacity_known) {
    return "capacity unknown (" +
           std::string(memory.reserve_bytes > 0 ? "set cluster.device.memory" : "no cluster") +
           "): " + rank + " peaks at " + FormatGib(memory.peak_bytes) + " GiB (" + parts + ")";
  }
  const std::string capacity = FormatGib(static_cast<double>(memory.capacity_bytes));
  if (memory.fits) {
    return "fits: " + rank + " peaks at " + FormatGib(memory.peak_bytes) + " of " + capacity +
           " GiB (" + parts + ")";
  }
  return "OVER: " + rank + " needs " + FormatGib(memory.peak_bytes) + " GiB but a device has " +
         capacity + " GiB (" + parts + ")";
}

Throughput ThroughputOf(const RunInfo& run, const Metrics& metrics) {
  Throughput result;
  result.seconds = static_cast<double>(metrics.makespan.ns()) * 1e-9;
  if (result.seconds <= 0 || run.world_size <= 0) return result;
  const double gpu_seconds = result.seconds * run.world_size;
  result.tflops_per_gpu = run.hardware_flops_per_iteration / gpu_seconds / 1e12;
  if (run.peak_flops_per_device > 0) {
    result.mfu = run.model_flops_per_iteration / (gpu_seconds * run.peak_flops_per_device);
  }
  result.tokens_per_s = static_cast<double>(run.tokens_per_iteration) / result.seconds;
  return result;
}

std::string FormatSummary(const RunInfo& run, const Metrics& metrics) {
  std::string text;
  text += "stagecraft simulate: " + run.config + "\n";
  text += "  model " + run.model + ", schedule " + run.schedule + ", pp " + std::to_string(run.pp) +
          ", vpp " + std::to_string(run.vpp) + ", microbatches " +
          std::to_string(run.microbatches) + "\n";
  text += std::string(run.stages.empty() ? "  per microbatch per rank: F "
                                         : "  per microbatch, whole model: F ") +
          FormatMs(run.forward) + " ms, I " + FormatMs(run.input_grad) + " ms, W " +
          FormatMs(run.weight_grad) + " ms; p2p " + P2pModeName(run.p2p) + ", cost_p2p " +
          FormatMs(run.cost_p2p) + " ms" +
          (run.cluster_given ? ", cluster links" : ", no cluster (transfers cost cost_p2p)") + "\n";
  const char* heading = "  assumptions       ";
  for (const auto& [name, value] : run.assumptions) {
    text += heading + PadRight(name, 15) + value + "\n";
    heading = "                    ";
  }
  text += ValidationText(run.validation);
  text += "\n";
  text += "  makespan          " + FormatMs(metrics.makespan) + " ms\n";
  text += "  bubble_fraction   " + FormatFixed(metrics.bubble_fraction, 6) + "  (" +
          Percent(metrics.bubble_fraction) + " of device time idle)\n";
  text += "  bubble_rate_span  " + FormatFixed(metrics.bubble_rate_span, 6) + "\n";
  text += "  bubble_overhead   " + FormatFixed(metrics.bubble_overhead, 6) + "  (idle / ideal)\n";
  const BubbleFractions split = BubbleFractionsOf(metrics);
  text += "  bubble split      pipeline " + FormatFixed(split.pipeline, 6) + ", collectives " +
          FormatFixed(split.exposed_collectives, 6) + ", p2p " + FormatFixed(split.exposed_p2p, 6) +
          ", shared state " + FormatFixed(split.exposed_state, 6) + "  (idle by cause)\n";
  if (run.memory.computed) text += "  memory            " + FormatMemoryVerdict(run.memory) + "\n";
  text += "  compute actions   " + std::to_string(metrics.num_compute_actions) + ", transfers " +
          std::to_string(metrics.num_transfers) + " (" + FormatBytes(metrics.bytes_moved) + ")\n\n";
  if (run.world_size > 0) text += FormatThroughput(run, metrics);
  text += FormatMultimodal(run.multimodal);
  if (!run.stages.empty()) text += FormatStages(run);
  if (!metrics.flows.empty()) text += FormatStateSummary(run, metrics);
  const bool state = !metrics.flows.empty();
  std::vector<TextColumn> columns = {
      {"rank", TextAlign::kRight, 4},           {"busy_ms", TextAlign::kRight, 13},
      {"idle_ms", TextAlign::kRight, 13},       {"span_ms", TextAlign::kRight, 13},
      {"peak_act", TextAlign::kRight, 10},      {"peak_held", TextAlign::kRight, 11},
      {"peak_act_bytes", TextAlign::kRight, 16}};
  if (state) {
    columns.push_back({"peak_state_bytes", TextAlign::kRight, 18});
    columns.push_back({"peak_memory_bytes", TextAlign::kRight, 19});
  }
  TextTable table("  ", std::move(columns));
  for (const RankMetrics& rank : metrics.ranks) {
    std::vector<std::string> cells = {std::to_string(rank.rank),
                                      FormatMs(rank.busy),
                                      FormatMs(rank.idle),
                                      FormatMs(rank.span),
                                      std::to_string(rank.peak_activations),
                                      std::to_string(rank.peak_held),
                                      std::to_string(rank.peak_activation_bytes)};
    if (state) {
      cells.push_back(std::to_string(rank.peak_state_bytes));
      cells.push_back(std::to_string(rank.peak_memory_bytes));
    }
    table.AddRow(std::move(cells));
  }
  text += table.Render();
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
  if (!run.assumptions.empty()) {
    json.Key("assumptions").BeginObject();
    for (const auto& [name, value] : run.assumptions) json.Key(name).String(value);
    json.EndObject();
  }
  if (run.validation.given) ValidationJson(json.Key("validation"), run.validation);
  if (run.world_size > 0) {
    const Throughput t = ThroughputOf(run, metrics);
    json.Key("parallel").BeginObject();
    json.Key("world_size").Int(run.world_size);
    json.Key("tp").Int(run.tp);
    json.Key("dp").Int(run.dp);
    json.Key("cp").Int(run.cp);
    if (!run.cp_sharding.empty()) {
      json.Key("cp_sharding").String(run.cp_sharding);
      json.Key("cp_scan_imbalance").Fixed(run.cp_scan_imbalance, 6);
    }
    json.Key("params").Fixed(run.params, 0);
    json.Key("tokens_per_iteration").Int(run.tokens_per_iteration);
    json.Key("hardware_flops_per_iteration").Fixed(run.hardware_flops_per_iteration, 0);
    json.Key("model_flops_per_iteration").Fixed(run.model_flops_per_iteration, 0);
    json.Key("tflops_per_gpu").Fixed(t.tflops_per_gpu, 3);
    json.Key("mfu").Fixed(t.mfu, 6);
    json.Key("tokens_per_s").Fixed(t.tokens_per_s, 3);
    json.Key("collectives").Int(metrics.num_collectives);
    json.EndObject();
  }
  json.Key("bubble_fraction").Fixed(metrics.bubble_fraction, 6);
  json.Key("bubble_rate_span").Fixed(metrics.bubble_rate_span, 6);
  json.Key("bubble_overhead").Fixed(metrics.bubble_overhead, 6);
  const BubbleFractions split = BubbleFractionsOf(metrics);
  json.Key("bubble").BeginObject();
  json.Key("pipeline").Fixed(split.pipeline, 6);
  json.Key("exposed_collectives").Fixed(split.exposed_collectives, 6);
  json.Key("exposed_p2p").Fixed(split.exposed_p2p, 6);
  json.Key("exposed_state").Fixed(split.exposed_state, 6);
  json.EndObject();
  if (run.memory.computed) WriteMemoryVerdict(json, run.memory);
  json.Key("total_busy_ms").Raw(FormatMs(metrics.total_busy));
  json.Key("compute_actions").Int(metrics.num_compute_actions);
  json.Key("transfers").Int(metrics.num_transfers);
  json.Key("bytes_moved").Int(metrics.bytes_moved);
  json.Key("state_bytes").Int(metrics.state_bytes());
  json.Key("state_bytes_forward").Int(metrics.state_bytes_forward);
  json.Key("state_bytes_backward").Int(metrics.state_bytes_backward);
  json.Key("state_exposed_ms").Raw(FormatMs(metrics.state_exposed));
  WriteMultimodal(json, run.multimodal);
  WriteFlows(json, metrics);
  WriteStages(json, run);
  json.Key("ranks").BeginArray();
  for (const RankMetrics& rank : metrics.ranks) {
    json.BeginObject();
    json.Key("rank").Int(rank.rank);
    json.Key("busy_ms").Raw(FormatMs(rank.busy));
    json.Key("idle_ms").Raw(FormatMs(rank.idle));
    json.Key("span_ms").Raw(FormatMs(rank.span));
    json.Key("peak_activations").Int(rank.peak_activations);
    json.Key("peak_held").Int(rank.peak_held);
    json.Key("peak_activation_bytes").Int(rank.peak_activation_bytes);
    json.Key("bytes_sent").Int(rank.bytes_sent);
    json.Key("peak_state_bytes").Int(rank.peak_state_bytes);
    json.Key("peak_memory_bytes").Int(rank.peak_memory_bytes);
    json.Key("bubble_ms").BeginObject();
    json.Key("pipeline").Raw(FormatMs(rank.bubble.pipeline));
    json.Key("exposed_collectives").Raw(FormatMs(rank.bubble.exposed_collectives));
    json.Key("exposed_p2p").Raw(FormatMs(rank.bubble.exposed_p2p));
    json.Key("exposed_state").Raw(FormatMs(rank.bubble.exposed_state));
    json.EndObject();
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  return json.text() + "\n";
}

// "validated": the nearest validated runs' error, or why there are none, and the range.
std::string ValidationText(const ValidationInfo& v) {
  if (!v.given) return "";
  std::string text = "  validated         ";
  if (v.similar_runs > 0) {
    text += std::to_string(v.similar_runs) + " similar " + v.noun +
            (v.similar_runs == 1 ? "" : "s") + ", MAPE " + FormatFixed(v.mape * 100.0, 1) +
            "%, worst " + FormatSignedPercent(v.worst) + "  (" + v.basis + "; " + v.doc + ")\n";
  } else {
    text += v.basis + "\n";
  }
  if (!v.outside.empty()) {
    text += "                    outside the validated range: " + v.outside + "\n";
  }
  return text;
}

void ValidationJson(JsonWriter& json, const ValidationInfo& v) {
  json.BeginObject();
  json.Key("similar_runs").Int(v.similar_runs);
  json.Key("mape").Raw(FormatFixed(v.mape, 4));
  json.Key("worst").Raw(FormatFixed(v.worst, 4));
  json.Key("in_range").Bool(v.in_range);
  json.Key("basis").String(v.basis);
  json.Key("outside").String(v.outside);
  json.EndObject();
}

}  // namespace stagecraft
