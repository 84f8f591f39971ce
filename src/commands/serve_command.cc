// `stagecraft serve` as text: the serving run (serve/serve.h's spec) sized, simulated and told.
#include "commands/serve_command.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "commands/serve_report.h"
#include "commands/validated_serving.h"
#include "core/text_table.h"
#include "core/units.h"
#include "hardware/presets.h"
#include "model/kv_cache.h"
#include "report/json_writer.h"
#include "report/summary.h"
#include "serve/disaggregated_sim.h"
#include "serve/serve.h"
#include "serve/speculative.h"

namespace stagecraft {
namespace {

// What the node's GPUs talk over: the preset's name for it ("PCIe" on the a40 and h100-pcie),
// NVLink for a custom device.
std::string IntraNodeLink(const ClusterSpec& cluster) {
  auto preset = FindDevicePreset(cluster.device);
  return preset.ok() ? preset.value()->intra_node_link : "NVLink";
}

// How the requests came: "Poisson 1.000 rps", "gamma (cv 2.00) 1.000 rps", "closed loop at
// concurrency 64", "offline (every request at t = 0)".
std::string ClientText(const Workload& workload) {
  switch (workload.client) {
    case Workload::Client::kClosed:
      return "closed loop at concurrency " + std::to_string(workload.concurrency);
    case Workload::Client::kOffline:
      return "offline (every request at t = 0)";
    case Workload::Client::kOpen:
      break;
  }
  return (workload.arrival_cv == 1.0 ? std::string("Poisson ")
                                     : "gamma (cv " + FormatFixed(workload.arrival_cv, 2) + ") ") +
         FormatFixed(workload.rate_rps, 3) + " rps";
}

std::string Ms(double seconds) { return FormatFixed(seconds * 1e3, 3); }

void WritePercentiles(JsonWriter& json, const char* key, const Percentiles& values) {
  json.Key(key).BeginObject();
  json.Key("p50").Fixed(values.p50 * 1e3, 3);
  json.Key("p90").Fixed(values.p90 * 1e3, 3);
  json.Key("p99").Fixed(values.p99 * 1e3, 3);
  json.Key("mean").Fixed(values.mean * 1e3, 3);
  json.EndObject();
}

// Whether the run's TTFT and TPOT at the SLO's percentile are within its bounds.
// REQUIRES: slo.percentile is 50, 90 or 99.
bool MeetsAtPercentile(const ServeStats& stats, const Slo& slo) {
  return stats.ttft_s.At(slo.percentile) <= slo.ttft_s &&
         stats.tpot_s.At(slo.percentile) <= slo.tpot_s;
}

std::string DescribePlacement(const ServePlacement& placement) {
  if (!placement.disaggregated()) return DescribeShape(placement.shape);
  return std::to_string(placement.prefill_instances) + " prefill + " +
         std::to_string(placement.decode_instances) + " decode instances of tp " +
         std::to_string(placement.shape.tp) + " x pp " + std::to_string(placement.shape.pp) + " (" +
         std::to_string(placement.shape.gpus()) + " GPUs)";
}

// Speculative decoding's keys: the flags, the tokens per verify step expected and measured, and
// the verify and draft steps at the decode point.
void WriteSpeculationJson(JsonWriter& json, const ReplicaModel& replica, const DecodePoint& decode,
                          const ServeStats& stats) {
  const EngineOptions& engine = replica.engine;
  const SpeculativeStep step = SpeculativeDecodeStep(replica, decode.batch, decode.context);
  json.Key("speculative_tokens").Int(engine.speculative_tokens);
  json.Key("acceptance_rate").Fixed(engine.acceptance_rate, 3);
  json.Key("expected_tokens_per_step")
      .Fixed(ExpectedTokensPerStep(engine.speculative_tokens, engine.acceptance_rate), 3);
  json.Key("decode_steps").Int(stats.decode_steps);
  json.Key("mean_tokens_per_step").Fixed(MeanTokensPerStep(stats), 3);
  json.Key("verify_step_ms").Fixed(step.verify.total_s * 1e3, 3);
  json.Key("draft_step_ms").Fixed(step.draft_step.total_s * 1e3, 3);
  json.Key("draft_weight_bytes_per_gpu").Fixed(replica.draft->weight_bytes_per_gpu, 0);
}

// What one `serve` run tells, text or JSON.
struct ServeTold {
  std::string label;  // the config's name
  std::string model;
  const ReplicaModel& replica;
  const ServePlacement& placement;
  const Workload& workload;
  Routing routing;
  const Slo& slo;
  const DecodePoint& decode;
  const ServeStats& stats;
  std::string engine;         // --engine as given ("" = stagecraft's defaults)
  ValidationInfo validation;  // the error on the nearest validated serving figures
};

std::string FormatJson(const ServeTold& told) {
  const std::string& model = told.model;
  const ReplicaModel& replica = told.replica;
  const ServePlacement& placement = told.placement;
  const Workload& workload = told.workload;
  const DecodePoint& decode = told.decode;
  const ServeStats& stats = told.stats;
  const Slo& slo = told.slo;
  const std::string& engine = told.engine;
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("model").String(model);
  json.Key("engine").String(engine.empty() ? "default" : engine);
  ValidationJson(json.Key("validation"), told.validation);
  json.Key("device").String(replica.cluster.device);
  json.Key("tp").Int(replica.shape.tp);
  json.Key("pp").Int(replica.shape.pp);
  if (replica.shape.ep > 1) {
    json.Key("ep").Int(replica.shape.ep);
    json.Key("attention_dp").Int(replica.shape.attention_dp());
  }
  json.Key("replicas").Int(placement.shape.replicas);
  json.Key("gpus").Int(placement.shape.gpus());
  if (placement.disaggregated()) {
    json.Key("placement").String("disaggregated");
    json.Key("prefill_instances").Int(placement.prefill_instances);
    json.Key("decode_instances").Int(placement.decode_instances);
    json.Key("kv_transfer_ms_mean").Fixed(placement.transfer_mean_s * 1e3, 3);
    json.Key("kv_transfer_ms_max").Fixed(placement.transfer_max_s * 1e3, 3);
  }
  json.Key("attention").String(AttentionKindName(replica.kv.attention));
  json.Key("kv_bytes_per_token").Fixed(replica.kv.total(), 0);
  json.Key("kv_bytes_per_token_per_gpu").Fixed(replica.kv_bytes_per_token_per_gpu, 0);
  json.Key("weight_bytes_per_gpu").Fixed(replica.weight_bytes_per_gpu, 0);
  json.Key("weight_bytes_per_parameter").Fixed(replica.engine.weight_bytes, 1);
  // A CSA2 cache has its own formats (window_kv_bytes_per_request below), no one element size.
  if (!replica.csa2) json.Key("kv_bytes_per_element").Int(replica.engine.kv_bytes);
  json.Key("kv_capacity_tokens").Int(replica.kv_capacity_tokens);
  if (replica.csa2) {
    json.Key("window_kv_bytes_per_request")
        .Fixed(static_cast<double>(replica.csa2->decoders()) *
                   static_cast<double>(replica.csa2->window) * replica.csa2->window_entry_bytes,
               0);
    json.Key("kv_tokens_held_at_decode_context")
        .Fixed(KvTokensHeld(replica, static_cast<double>(decode.context)), 0);
  }
  if (replica.kv.window_tokens > 0) {
    json.Key("sliding_window").Int(replica.kv.window_tokens);
    json.Key("window_layers").Int(replica.model.window_layers);
    json.Key("kv_tokens_held_at_decode_context")
        .Fixed(KvTokensHeld(replica, static_cast<double>(decode.context)), 0);
  }
  json.Key("decode_batch").Int(decode.batch);
  json.Key("decode_context").Int(decode.context);
  json.Key("decode_step_ms").Fixed(decode.cost.total_s * 1e3, 3);
  if (replica.shape.ep > 1) {
    json.Key("decode_alltoalls").Int(decode.cost.alltoalls);
    json.Key("decode_alltoall_ms").Fixed(decode.cost.alltoall_s * 1e3, 3);
  }
  if (replica.draft) WriteSpeculationJson(json, replica, decode, stats);
  json.Key("requests").Int(stats.requests);
  switch (workload.client) {
    case Workload::Client::kOpen:
      json.Key("rate_rps").Fixed(workload.rate_rps, 3);
      break;
    case Workload::Client::kClosed:
      json.Key("concurrency").Int(workload.concurrency);
      break;
    case Workload::Client::kOffline:
      json.Key("offline").Bool(true);
      break;
  }
  json.Key("seed").Int(static_cast<int64_t>(workload.seed));
  WritePercentiles(json, "ttft_ms", stats.ttft_s);
  WritePercentiles(json, "tpot_ms", stats.tpot_s);
  WritePercentiles(json, "itl_ms", stats.itl_s);
  WritePercentiles(json, "e2e_ms", stats.e2e_s);
  json.Key("throughput_rps").Fixed(stats.throughput_rps, 3);
  json.Key("output_tokens_per_s").Fixed(stats.output_tokens_per_s, 1);
  json.Key("total_tokens_per_s").Fixed(stats.total_tokens_per_s, 1);
  json.Key("slo_attainment").Fixed(stats.slo_attainment, 4);
  json.Key("goodput_rps").Fixed(stats.goodput_rps, 3);
  json.Key("goodput_rps_per_gpu").Fixed(stats.goodput_rps_per_gpu, 4);
  if (slo.percentile > 0) {
    json.Key("slo_percentile").Int(slo.percentile);
    json.Key("slo_percentile_met").Bool(MeetsAtPercentile(stats, slo));
  }
  json.Key("iterations").Int(stats.iterations);
  json.Key("preemptions").Int(stats.preemptions);
  json.Key("kv_utilization_mean").Fixed(stats.kv_utilization_mean, 4);
  json.Key("kv_utilization_peak").Fixed(stats.kv_utilization_peak, 4);
  if (workload.prefix_groups > 0) {
    json.Key("prefix_groups").Int(workload.prefix_groups);
    json.Key("prefix_tokens").Int(workload.prefix_tokens);
    json.Key("prefix_cache_hit_rate").Fixed(stats.prefix_hit_rate, 4);
  }
  json.EndObject();
  return json.text() + "\n";
}

// "  SLO at p99: ttft 36.284 ms <= 2000.000 ms, tpot 8.105 ms <= 200.000 ms: met" (a bound
// missed: "> ... ms", and "missed").
std::string SloAtPercentileText(const ServeStats& stats, const Slo& slo) {
  const auto bound = [&](const char* name, double value, double limit) {
    return std::string(name) + " " + Ms(value) + " ms " + (value <= limit ? "<= " : "> ") +
           Ms(limit) + " ms";
  };
  return "  SLO at p" + std::to_string(slo.percentile) + ": " +
         bound("ttft", stats.ttft_s.At(slo.percentile), slo.ttft_s) + ", " +
         bound("tpot", stats.tpot_s.At(slo.percentile), slo.tpot_s) + ": " +
         (MeetsAtPercentile(stats, slo) ? "met" : "missed") + "\n";
}

std::string FormatText(const ServeTold& told) {
  const std::string& model = told.model;
  const ReplicaModel& replica = told.replica;
  const ServePlacement& placement = told.placement;
  const Workload& workload = told.workload;
  const Routing routing = told.routing;
  const DecodePoint& decode = told.decode;
  const ServeStats& stats = told.stats;
  const Slo& slo = told.slo;
  const std::string& engine = told.engine;
  std::ostringstream out;
  out << "stagecraft serve: " << told.label << "\n";
  out << "  model " << model << " on " << replica.cluster.device << ": "
      << DescribePlacement(placement) << "\n";
  out << ValidationText(told.validation);
  if (const auto profile = kEngineProfileNames.Parse(engine)) {
    out << "  engine: " << engine << ", " << DescribeEngineProfile(*profile) << "\n";
  }
  if (placement.disaggregated()) {
    out << "  KV hand-off: prefill to decode instance, each GPU its shard over "
        << (2 * placement.shape.gpus_per_replica() <= replica.cluster.devices_per_node
                ? IntraNodeLink(replica.cluster)
                : std::string("the network"))
        << ": " << FormatFixed(placement.transfer_mean_s * 1e3, 3) << " ms mean, "
        << FormatFixed(placement.transfer_max_s * 1e3, 3) << " ms longest\n";
  }
  if (replica.csa2) {
    // The model's own formats (doc/csa2.md), the whole cache on every TP rank.
    const Csa2Serving& csa2 = *replica.csa2;
    out << "  KV cache: CSA2, " << FormatFixed(replica.kv.total(), 0)
        << " B per token (compressed KV FP4 + indexer keys MXFP4 of the full layers), "
        << FormatFixed(replica.kv_bytes_per_token_per_gpu, 0) << " B of it per GPU"
        << (replica.shape.pp > 1 ? " on the stage that bounds the capacity" : "")
        << "; window KV FP8 of " << csa2.decoders() << " layers x " << csa2.window << " tokens x "
        << FormatFixed(csa2.window_entry_bytes, 0) << " B per request"
        << (replica.kv_replicated ? "; replicated across TP ranks\n" : "\n");
    const double context = static_cast<double>(decode.context);
    out << "  a request of " << decode.context << " tokens keeps "
        << FormatFixed(KvTokensHeld(replica, context), 0)
        << " tokens' worth of KV; a decode token reads its window, top-" << csa2.dims.top_k
        << " compressed entries per layer and the indexer keys its full and reindex layers "
           "score\n";
  } else {
    out << "  KV cache: " << AttentionKindName(replica.kv.attention) << ", "
        << FormatFixed(replica.kv.total(), 0) << " B per token, "
        << FormatFixed(replica.kv_bytes_per_token_per_gpu, 0) << " B of it per GPU ("
        << (replica.engine.kv_bytes == 1 ? "fp8" : "bf16")
        << (replica.kv_replicated ? ", replicated across TP ranks)" : ")") << "\n";
  }
  out << "  per GPU: weights " << FormatGib(replica.weight_bytes_per_gpu) << " GiB ("
      << FormatFixed(replica.engine.weight_bytes, 1) << " B per parameter), activations "
      << FormatGib(replica.activation_bytes_per_gpu) << " GiB, reserve "
      << FormatGib(replica.reserve_bytes_per_gpu) << " GiB, KV "
      << FormatGib(replica.kv_budget_bytes_per_gpu) << " GiB ("
      << (replica.engine.kv_free_fraction > 0
              ? FormatFixed(replica.engine.kv_free_fraction * 100, 0) + "% of what is left of "
              : "of " + FormatFixed(replica.engine.memory_utilization * 100, 0) + "% of ")
      << FormatGib(static_cast<double>(replica.cluster.hbm_bytes)) << " GiB)\n";
  out << "  engine limits: " << replica.engine.max_seqs << " sequences, "
      << replica.engine.token_budget << " tokens per iteration"
      << (replica.shape.attention_dp() > 1 ? " (all attention data-parallel groups)" : "") << "\n";
  out << "  KV capacity per replica: " << replica.kv_capacity_tokens << " tokens ("
      << replica.kv_capacity_tokens / replica.engine.block_tokens << " blocks of "
      << replica.engine.block_tokens << ")\n";
  if (replica.kv.window_tokens > 0) {
    const double context = static_cast<double>(decode.context);
    const double held = KvTokensHeld(replica, context);
    const double per_gpu = replica.kv_bytes_per_token_per_gpu;
    out << "  sliding window: " << replica.kv.window_tokens << " tokens on "
        << replica.model.window_layers << " of " << replica.model.layers << " layers; a request of "
        << decode.context << " tokens keeps " << FormatFixed(held, 0) << " tokens' worth of KV, "
        << FormatGib(held * per_gpu) << " GiB per GPU (" << FormatGib(context * per_gpu)
        << " GiB without the window): "
        << static_cast<int64_t>(
               std::floor(static_cast<double>(replica.kv_capacity_tokens) / std::max(1.0, held)))
        << " such requests fit ("
        << replica.kv_capacity_tokens / std::max<int64_t>(1, decode.context) << " without)\n";
  }
  out << "  decode step at batch " << decode.batch << ", context " << decode.context << ": "
      << Ms(decode.cost.total_s) << " ms (GEMMs " << Ms(decode.cost.gemm_s) << ", attention "
      << Ms(decode.cost.attention_s) << ", memory-bound " << Ms(decode.cost.memory_s) << ", "
      << decode.cost.kernels << " kernels, launch " << Ms(decode.cost.launch_s) << ", "
      << decode.cost.allreduces << " all-reduces " << Ms(decode.cost.allreduce_s);
  if (replica.shape.ep > 1) {
    out << ", " << decode.cost.alltoalls << " all-to-alls " << Ms(decode.cost.alltoall_s);
  }
  out << ", hand-offs " << Ms(decode.cost.handoff_s) << ")\n";
  if (replica.draft) out << DescribeSpeculation(replica, decode.batch, decode.context, stats);
  out << "  workload: " << stats.requests << " requests, ";
  if (workload.trace.empty()) {
    out << ClientText(workload) << ", prompt " << FormatLengthDist(workload.prompt) << ", output "
        << FormatLengthDist(workload.output) << " tokens, seed " << workload.seed;
    if (workload.prefix_groups > 0) {
      out << ", each prompt after one of " << workload.prefix_groups << " shared prefixes of "
          << workload.prefix_tokens << " tokens";
    }
  } else {
    out << "from the request trace";
  }
  out << ", " << RoutingName(routing) << "\n\n";
  TextTable latency("  ", {{"latency (ms)", TextAlign::kLeft, 8},
                           {"p50", TextAlign::kRight, 13},
                           {"p90", TextAlign::kRight, 13},
                           {"p99", TextAlign::kRight, 13},
                           {"mean", TextAlign::kRight, 13}});
  const auto row = [&latency](const char* name, const Percentiles& values) {
    latency.AddRow({name, Ms(values.p50), Ms(values.p90), Ms(values.p99), Ms(values.mean)});
  };
  row("ttft", stats.ttft_s);
  row("tpot", stats.tpot_s);
  row("itl", stats.itl_s);
  row("e2e", stats.e2e_s);
  out << latency.Render();
  out << "\n  throughput " << FormatFixed(stats.throughput_rps, 3) << " rps, "
      << FormatFixed(stats.output_tokens_per_s, 1) << " output tokens/s\n";
  out << "  total throughput (prompt + output) " << FormatFixed(stats.total_tokens_per_s, 1)
      << " tokens/s\n";
  out << "  SLO ttft <= " << Ms(slo.ttft_s) << " ms and tpot <= " << Ms(slo.tpot_s)
      << " ms: " << FormatFixed(stats.slo_attainment * 100, 2) << "% of requests; goodput "
      << FormatFixed(stats.goodput_rps, 3) << " rps, " << FormatFixed(stats.goodput_rps_per_gpu, 4)
      << " rps per GPU\n";
  if (slo.percentile > 0) out << SloAtPercentileText(stats, slo);
  out << "  iterations " << stats.iterations << ", preemptions " << stats.preemptions
      << ", KV use mean " << FormatFixed(stats.kv_utilization_mean * 100, 1) << "% peak "
      << FormatFixed(stats.kv_utilization_peak * 100, 1) << "%\n";
  if (workload.prefix_groups > 0) {
    out << "  prefix cache: " << FormatFixed(stats.prefix_hit_rate * 100, 1)
        << "% of prompt tokens read from a replica's cached prefix\n";
  }
  return out.str();
}

}  // namespace

std::string FormatServeTrace(const std::vector<IterationRecord>& iterations, int32_t replicas) {
  JsonWriter json(/*pretty=*/false);
  const auto micros = [](int64_t ns) { return FormatFixed(static_cast<double>(ns) / 1e3, 3); };
  json.BeginObject().Key("displayTimeUnit").String("ms").Key("traceEvents").BeginArray();
  for (int32_t replica = 0; replica < replicas; ++replica) {
    json.BeginObject().Key("name").String("process_name").Key("ph").String("M");
    json.Key("pid").Int(replica).Key("args").BeginObject();
    json.Key("name").String("replica " + std::to_string(replica)).EndObject().EndObject();
  }
  for (const IterationRecord& record : iterations) {
    json.BeginObject().Key("name").String("iteration").Key("ph").String("X");
    json.Key("pid").Int(record.replica).Key("tid").Int(0);
    json.Key("ts").Raw(micros(record.start_ns));
    json.Key("dur").Raw(micros(record.end_ns - record.start_ns));
    json.Key("args").BeginObject().Key("prefill_tokens").Int(record.prefill_tokens);
    json.Key("decode_tokens").Int(record.decode_tokens).EndObject().EndObject();
    json.BeginObject().Key("name").String("kv_blocks").Key("ph").String("C");
    json.Key("pid").Int(record.replica).Key("ts").Raw(micros(record.start_ns));
    json.Key("args").BeginObject().Key("used").Int(record.kv_blocks).EndObject().EndObject();
  }
  json.EndArray().EndObject();
  return json.text() + "\n";
}

Result<ServeSetup> ServeSetupOf(const ServeSpec& spec, const PreparedRun& run) {
  const Config& config = run.config;
  ServeSetup setup;
  const auto& written = run.locations.by_path;
  setup.shape.tp = spec.tp.value_or(written.count("parallel.tp") ? config.parallel.tp : 1);
  setup.shape.pp = spec.pp.value_or(written.count("parallel.pp") ? config.parallel.pp : 1);
  setup.shape.ep = spec.ep.value_or(written.count("parallel.ep") ? config.parallel.ep : 1);
  setup.shape.replicas = spec.replicas;
  setup.prefill_instances = spec.prefill_instances;
  setup.decode_instances = spec.decode_instances;
  if (setup.disaggregated() && !spec.trace_path.empty()) {
    return Error{
        "--trace: the Chrome trace of the batches is for colocated replicas; "
        "--report draws the decode pool's KV use"};
  }
  Workload& workload = setup.workload;
  workload.rate_rps = spec.rate_rps;
  workload.arrival_cv = spec.arrival_cv;
  if (spec.concurrency.has_value() && spec.offline) {
    return Error{"--concurrency with --offline: a closed loop or every request at once; drop one"};
  }
  if (spec.concurrency.has_value()) {
    workload.client = Workload::Client::kClosed;
    workload.concurrency = *spec.concurrency;
  } else if (spec.offline) {
    workload.client = Workload::Client::kOffline;
  }
  workload.requests = spec.requests;
  workload.seed = spec.seed;
  workload.prefix_groups = spec.prefix_groups;
  workload.prefix_tokens = spec.prefix_tokens;
  auto prompt = ParseLengthDist(spec.prompt_tokens, "--prompt-tokens");
  if (!prompt.ok()) return prompt.error();
  auto output = ParseLengthDist(spec.output_tokens, "--output-tokens");
  if (!output.ok()) return output.error();
  workload.prompt = prompt.value();
  workload.output = output.value();
  if (!spec.request_trace.empty()) {
    auto text = spec.run.files.read(spec.request_trace);
    if (!text.ok()) return Error{"--request-trace: " + text.error().message};
    const size_t slash = spec.request_trace.find_last_of('/');
    auto trace = ParseRequestTrace(text.value(), slash == std::string::npos
                                                     ? spec.request_trace
                                                     : spec.request_trace.substr(slash + 1));
    if (!trace.ok()) return trace.error();
    workload.trace = std::move(trace).value();
  }
  auto routing = ParseRouting(spec.routing);
  if (!routing.ok()) return routing.error();
  setup.routing = routing.value();
  auto slo = ParseSlo(spec.slo);
  if (!slo.ok()) return slo.error();
  setup.slo = slo.value();
  const EngineSizing sizing{setup.shape, setup.workload};
  STAGECRAFT_RETURN_IF_ERROR(
      ApplyEngineFlags(spec, config.model, config.cluster, setup.engine, &sizing));
  setup.engine.cuda_graphs = !spec.eager;
  setup.keep_iterations = !spec.trace_path.empty() || !spec.report_path.empty();
  setup.progress = spec.progress;
  return setup;
}

Status RunServe(const ServeSpec& spec, Transcript& transcript) {
  auto run = ResolveRun(spec.run);
  if (!run.ok()) return run.error();
  const Config& config = run.value().config;
  STAGECRAFT_RETURN_IF_ERROR(CheckServable(config.model, spec.kv_dtype, "serve"));
  auto setup = ServeSetupOf(spec, run.value());
  if (!setup.ok()) return setup.error();
  auto served = SimulateDeployment(config.model, config.cluster, setup.value());
  if (!served.ok()) return served.error();
  const ServeOutcome& outcome = served.value();
  if (!spec.trace_path.empty()) {
    const Status saved = spec.run.files.write(
        spec.trace_path, FormatServeTrace(outcome.iterations, outcome.replica.shape.replicas));
    if (!saved.ok()) return Error{"--trace: " + saved.error().message};
  }
  const ServeTold told{
      run.value().label,
      config.model.name,
      outcome.replica,
      outcome.placement,
      setup.value().workload,
      setup.value().routing,
      setup.value().slo,
      outcome.decode,
      outcome.stats,
      spec.engine,
      NearestServedFigures(ServedFeaturesOf(config.model, config.cluster, setup.value()),
                           ServedFigures())};
  const std::string text = FormatText(told);
  if (!spec.report_path.empty()) {
    const Status saved = spec.run.files.write(
        spec.report_path,
        ServeReportHtml(run.value().label, config.model.name, outcome.replica, setup.value().slo,
                        outcome.stats, outcome.iterations, text));
    if (!saved.ok()) return Error{"--report: " + saved.error().message};
  }
  transcript.out() << (spec.json ? FormatJson(told) : text);
  return Status::Ok();
}

}  // namespace stagecraft
