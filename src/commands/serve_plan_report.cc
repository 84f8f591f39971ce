// `stagecraft serve-plan` as text: the plans (serve/serve_plan.h's values) as a table, JSON and
// the scatter of their probes.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "commands/serve_command.h"
#include "core/units.h"
#include "report/json_writer.h"
#include "report/svg_plot.h"
#include "serve/bisect.h"
#include "serve/csa2_replica.h"
#include "serve/disaggregated_sim.h"
#include "serve/disaggregation.h"
#include "serve/explorer_search.h"
#include "serve/serve.h"
#include "serve/serve_plan.h"
#include "serve/speculative.h"

namespace stagecraft {

namespace {

// The client line of a closed-loop or offline plan: what each layout ran.
std::string ClientLine(const ServePlanSpec& spec, const ServePlanResult& result) {
  std::ostringstream out;
  out << "  candidates " << result.candidates << ", feasible"
      << (spec.offline ? " " : " and meeting the SLO ") << result.plans.size()
      << "; each layout one run of " << spec.requests << " requests "
      << (spec.offline ? "all at t = 0 (offline)"
                       : "in a closed loop at concurrency " + std::to_string(*spec.concurrency))
      << " over its replicas (least-outstanding routing), seed " << spec.seed
      << "; ranked by output tokens/s per GPU; no disaggregated placements (the open loop's "
         "only)\n";
  return out.str();
}

std::string FormatPlanText(const ServePlanSpec& spec, const std::string& label,
                           const ServePlanResult& result) {
  const bool open_loop = !spec.concurrency && !spec.offline;
  std::ostringstream out;
  out << "stagecraft serve-plan: " << label << "\n";
  out << "  model " << result.model << " on " << spec.gpus << (spec.gpus == 1 ? " GPU" : " GPUs")
      << ", SLO "
      << (spec.offline ? "not applied (offline: every request at once, no latency bound)"
                       : spec.slo)
      << ", prompt " << spec.prompt_tokens << ", output " << spec.output_tokens << " tokens\n";
  if (open_loop) {
    out << "  candidates " << result.candidates << ", feasible and meeting the SLO "
        << result.plans.size() << "; each probe " << spec.requests
        << " requests or, at higher rates, " << static_cast<int>(kProbeDelays)
        << " TTFT bounds' worth of arrivals, seed " << spec.seed << "\n";
  } else {
    out << ClientLine(spec, result);
  }
  out << "  batch (token budget/max_num_seqs per engine): " << result.default_token_budget << "/"
      << result.default_max_seqs << " for every layout";
  if (result.token_budgets_searched || result.max_seqs_searched) {
    out << "; for the best " << kRefinedLayouts << " colocated also "
        << (result.token_budgets_searched
                ? std::to_string(kTokenBudgets[0]) + "-" +
                      std::to_string(kTokenBudgets[std::size(kTokenBudgets) - 1]) + " x "
                : std::to_string(result.default_token_budget) + "/")
        << (result.max_seqs_searched ? std::to_string(kMaxSeqs[0]) + "-" +
                                           std::to_string(kMaxSeqs[std::size(kMaxSeqs) - 1])
                                     : std::to_string(result.default_max_seqs))
        << ", each keeping its best";
  } else {
    out << " (as given)";
  }
  if (spec.speculative_tokens.has_value() && spec.acceptance_rate.has_value()) {
    out << "\n  speculative decoding in every probe: " << *spec.speculative_tokens << " draft token"
        << (*spec.speculative_tokens == 1 ? "" : "s") << " per step, acceptance rate "
        << FormatFixed(*spec.acceptance_rate, 3) << " ("
        << FormatFixed(ExpectedTokensPerStep(*spec.speculative_tokens, *spec.acceptance_rate), 3)
        << " tokens per verify step expected); colocated only";
  }
  out << "\n\n";
  const std::string at = "_p" + std::to_string(result.percentile) + "_ms";
  out << "  rank  tp x pp  placement  gpus     batch"
      << (open_loop ? "   rate_rps  goodput/gpu" : "  out_tok_s  out_tok_s/gpu") << "  ttft" << at
      << "  tpot" << at << "  kv_tokens\n";
  const size_t shown = std::min<size_t>(result.plans.size(), static_cast<size_t>(spec.top));
  for (size_t rank = 0; rank < shown; ++rank) {
    const ServePlan& plan = result.plans[rank];
    out << PadLeft(std::to_string(rank + 1), 6)
        << PadLeft(plan.shape.ep > 1
                       ? std::to_string(plan.shape.tp) + "x" + std::to_string(plan.shape.pp) +
                             " ep" + std::to_string(plan.shape.ep)
                       : std::to_string(plan.shape.tp) + " x " + std::to_string(plan.shape.pp),
                   9)
        << PadLeft(plan.disaggregated ? std::to_string(plan.prefill_instances) + "P+" +
                                            std::to_string(plan.decode_instances) + "D"
                                      : std::to_string(plan.shape.replicas) + " colo",
                   11)
        << PadLeft(std::to_string(plan.shape.gpus()), 6)
        << PadLeft(std::to_string(plan.token_budget) + "/" + std::to_string(plan.max_seqs), 10)
        << (open_loop ? PadLeft(FormatFixed(plan.rate_rps, 3), 11) +
                            PadLeft(FormatFixed(plan.goodput_rps_per_gpu, 4), 13)
                      : PadLeft(FormatFixed(plan.output_tokens_per_s, 1), 11) +
                            PadLeft(FormatFixed(plan.output_tokens_per_s_per_gpu, 2), 15))
        << PadLeft(FormatFixed(plan.ttft_s * 1e3, 3), 13)
        << PadLeft(FormatFixed(plan.tpot_s * 1e3, 3), 13)
        << PadLeft(std::to_string(plan.kv_capacity_tokens), 11) << "\n";
  }
  if (result.plans.empty()) out << "  (no layout meets the SLO)\n";
  out << "\n  rejected (candidates by reason):\n";
  if (result.rejections.empty()) out << "  (none)\n";
  for (const auto& [reason, count] : result.rejections) {
    out << PadLeft(std::to_string(count), 9) << "  " << reason << "\n";
  }
  return out.str();
}

std::string FormatPlanJson(const ServePlanSpec& spec, const ServePlanResult& result) {
  const bool open_loop = !spec.concurrency && !spec.offline;
  const std::string at = "_p" + std::to_string(result.percentile) + "_ms";
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("model").String(result.model);
  json.Key("gpus").Int(spec.gpus);
  if (spec.concurrency) {
    json.Key("client").String("closed");
    json.Key("concurrency").Int(*spec.concurrency);
  } else if (spec.offline) {
    json.Key("client").String("offline");
    json.Key("slo_applied").Bool(false);
  }
  json.Key("candidates").Int(result.candidates);
  if (spec.speculative_tokens.has_value() && spec.acceptance_rate.has_value()) {
    json.Key("speculative_tokens").Int(*spec.speculative_tokens);
    json.Key("acceptance_rate").Fixed(*spec.acceptance_rate, 3);
  }
  json.Key("plans").BeginArray();
  for (size_t rank = 0; rank < std::min<size_t>(result.plans.size(), spec.top); ++rank) {
    const ServePlan& plan = result.plans[rank];
    json.BeginObject();
    json.Key("tp").Int(plan.shape.tp);
    json.Key("pp").Int(plan.shape.pp);
    if (plan.shape.ep > 1) json.Key("ep").Int(plan.shape.ep);
    json.Key("replicas").Int(plan.shape.replicas);
    json.Key("placement").String(plan.disaggregated ? "disaggregated" : "colocated");
    json.Key("prefill_instances").Int(plan.prefill_instances);
    json.Key("decode_instances").Int(plan.decode_instances);
    json.Key("token_budget").Int(plan.token_budget);
    json.Key("max_num_seqs").Int(plan.max_seqs);
    if (open_loop) {
      json.Key("rate_rps").Fixed(plan.rate_rps, 3);
      json.Key("goodput_rps_per_gpu").Fixed(plan.goodput_rps_per_gpu, 4);
    } else {
      json.Key("throughput_rps").Fixed(plan.rate_rps, 3);
      json.Key("output_tokens_per_s").Fixed(plan.output_tokens_per_s, 1);
      json.Key("output_tokens_per_s_per_gpu").Fixed(plan.output_tokens_per_s_per_gpu, 2);
    }
    json.Key("ttft" + at).Fixed(plan.ttft_s * 1e3, 3);
    json.Key("tpot" + at).Fixed(plan.tpot_s * 1e3, 3);
    json.EndObject();
  }
  json.EndArray();
  json.Key("rejections").BeginObject();
  for (const auto& [reason, count] : result.rejections) json.Key(reason).Int(count);
  json.EndObject();
  json.EndObject();
  return json.text() + "\n";
}

}  // namespace

std::string FormatServePlanSvg(const ServePlanResult& result) {
  std::vector<Series> series;
  for (const ServePlan& plan : result.plans) {
    if (plan.probes.empty()) continue;  // disaggregated: its phases' rates are not one point
    Series one;
    one.name = "tp " + std::to_string(plan.shape.tp) + " x pp " + std::to_string(plan.shape.pp) +
               (plan.shape.ep > 1 ? " ep " + std::to_string(plan.shape.ep) : "") + " x " +
               std::to_string(plan.shape.replicas);
    one.data = {{"tp", std::to_string(plan.shape.tp)}, {"pp", std::to_string(plan.shape.pp)}};
    const double gpus = static_cast<double>(plan.shape.gpus());
    for (const RateProbe& probe : plan.probes) {
      one.points.push_back({.x = probe.tpot_s * 1e3,
                            .y = gpus / probe.rate_rps,
                            .label = FormatFixed(probe.rate_rps, 3) + " rps",
                            .over = !probe.meets});
    }
    series.push_back(std::move(one));
  }
  PlotOptions options;
  options.title = "serve-plan: " + result.model + " (lower is better on both axes)";
  options.x_label = "P" + std::to_string(result.percentile) + " TPOT (ms)";
  options.y_label = "GPU-seconds per request";
  options.log2_y = true;
  options.over_legend = "misses the SLO";
  return FormatScatterPlot(series, options);
}

namespace {

// The clients' flags of serve-plan: --concurrency and --offline, each alone, not with --space
// or --svg; into `workload`.
Status ApplyPlanClient(const ServePlanSpec& spec, Workload& workload) {
  if (spec.concurrency && spec.offline) {
    return Error{"--concurrency with --offline: a closed loop or every request at once; drop one"};
  }
  const char* flag = spec.concurrency ? "--concurrency" : "--offline";
  if ((spec.concurrency || spec.offline) && !spec.space.empty()) {
    return Error{std::string(flag) + " with --space: the Vidur search finds each " +
                 "configuration's capacity in requests per second at an open loop; drop one"};
  }
  if ((spec.concurrency || spec.offline) && !spec.svg_path.empty()) {
    return Error{std::string("--svg with ") + flag + ": the scatter draws the rate search's " +
                 "probes, which a closed-loop or offline plan does not make; drop one"};
  }
  if (spec.concurrency) {
    workload.client = Workload::Client::kClosed;
    workload.concurrency = *spec.concurrency;
  } else if (spec.offline) {
    workload.client = Workload::Client::kOffline;
  }
  return Status::Ok();
}

// Exit 1 when no layout met the SLO: which bound binds, with the lowest value any layout
// reached. REQUIRES: `plan` has no plans.
Status NoPlanError(const ServePlanSpec& spec, const ServePlanResult& plan,
                   const PercentileSlo& slo) {
  if (!std::isfinite(plan.best_ttft_s)) {
    return MakeError(ErrorKind::kInfeasible,
                     "serve-plan: no layout of " + plan.model + " on " + std::to_string(spec.gpus) +
                         " GPUs holds the model and a request (the rejections above say why: "
                         "more GPUs or a device with more memory)");
  }
  const std::string at = "_p" + std::to_string(slo.percentile);
  std::string binds;
  if (plan.best_ttft_s > slo.ttft_s) {
    binds += "ttft" + at + ": the lowest any layout reaches is " +
             FormatFixed(plan.best_ttft_s * 1e3, 3) + " ms";
  }
  if (plan.best_tpot_s > slo.tpot_s) {
    binds += std::string(binds.empty() ? "" : "; ") + "tpot" + at +
             ": the lowest any layout reaches is " + FormatFixed(plan.best_tpot_s * 1e3, 3) + " ms";
  }
  if (binds.empty()) binds = "ttft" + at + " and tpot" + at + " together (neither alone)";
  const std::string where = spec.concurrency
                                ? "at concurrency " + std::to_string(*spec.concurrency)
                                : "even at " + FormatFixed(kLowestRateRps, 2) + " rps per replica";
  return MakeError(ErrorKind::kInfeasible, "serve-plan: no layout meets the SLO " + spec.slo + " " +
                                               where + "; binding: " + binds + " (a looser SLO, " +
                                               (spec.concurrency ? "a lower --concurrency, " : "") +
                                               "shorter requests, or faster devices)");
}

}  // namespace

Status RunServePlan(const ServePlanSpec& spec, Transcript& transcript) {
  ServePlanSetup setup;
  STAGECRAFT_RETURN_IF_ERROR(ApplyPlanClient(spec, setup.workload));
  if (!spec.space.empty()) return RunExplorerSearch(spec, transcript);
  if (spec.slo.empty() && !spec.offline) {
    return Error{"serve-plan: --slo is required (e.g. --slo ttft_p90=0.4s,tpot_p90=40ms)"};
  }
  if (spec.top < 1) return Error{"--top: must be at least 1, got " + std::to_string(spec.top)};
  setup.gpus = spec.gpus;
  setup.progress = spec.progress;
  if (!spec.slo.empty()) {
    auto slo = ParsePercentileSlo(spec.slo);
    if (!slo.ok()) return slo.error();
    setup.slo = slo.value();
  }
  auto prompt = ParseLengthDist(spec.prompt_tokens, "--prompt-tokens");
  if (!prompt.ok()) return prompt.error();
  auto output = ParseLengthDist(spec.output_tokens, "--output-tokens");
  if (!output.ok()) return output.error();
  setup.workload.requests = spec.requests;
  setup.workload.seed = spec.seed;
  setup.workload.prompt = prompt.value();
  setup.workload.output = output.value();
  auto run = ResolveRun(spec.run);
  if (!run.ok()) return run.error();
  const Config& config = run.value().config;
  STAGECRAFT_RETURN_IF_ERROR(CheckServable(config.model, spec.kv_dtype, "serve-plan"));
  STAGECRAFT_RETURN_IF_ERROR(
      ApplyEngineFlags(spec, config.model, config.cluster, setup.engine, nullptr));
  setup.search_token_budgets = !spec.max_num_batched_tokens.has_value();
  setup.search_max_seqs = !spec.max_num_seqs.has_value();
  auto result = PlanServing(config.model, config.cluster, setup);
  if (!result.ok()) return result.error();
  const ServePlanResult& plan = result.value();
  if (!spec.svg_path.empty()) {
    const Status saved = spec.run.files.write(spec.svg_path, FormatServePlanSvg(plan));
    if (!saved.ok()) return Error{"--svg: " + saved.error().message};
  }
  transcript.out() << (spec.json ? FormatPlanJson(spec, plan)
                                 : FormatPlanText(spec, run.value().label, plan));
  if (!plan.plans.empty()) return Status::Ok();
  return NoPlanError(spec, plan, setup.slo);
}

}  // namespace stagecraft
