#include "serve/serve_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "core/units.h"
#include "report/json_writer.h"
#include "report/svg_plot.h"
#include "serve/bisect.h"
#include "serve/csa2_replica.h"
#include "serve/disaggregated_sim.h"
#include "serve/disaggregation.h"
#include "serve/explorer_search.h"
#include "serve/serve.h"

namespace stagecraft {
namespace {

// The engine's batch limits searched for the best colocated layouts: vLLM's
// max_num_batched_tokens (the chunk a long prompt is cut into, and with it the prefill work that
// can stall the decodes of an iteration) and max_num_seqs (the decode batch), around its
// defaults 8192 and 256 (vllm/engine/arg_utils.py).
constexpr size_t kRefinedLayouts = 2;
constexpr int64_t kTokenBudgets[] = {1024, 2048, 8192, 16384};
constexpr int32_t kMaxSeqs[] = {128, 256, 512};

// The lowest per-replica rate a probe tries; below it a layout "meets no rate".
constexpr double kLowestRateRps = 0.05;
constexpr int kDoublings = 16;  // up to 0.05 x 2^16 = 3277 rps per replica
constexpr int kBisections = 8;  // the rate to 1/256 of the last doubling step

struct PercentileSlo {
  double ttft_p90_s = 0;
  double tpot_p90_s = 0;
};

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

struct Probe {
  double rate_rps = 0;  // per replica
  bool meets = false;
  double ttft_p90_s = 0;
  double tpot_p90_s = 0;
};

// How long a probe's arrivals last, in units of the SLO's delay (ProbeRequests). At a rate
// (1 + d) times what the replica serves in steady state the queue grows by d / (1 + d) of the
// arrivals, so the P90 request waits about 0.9 x N x d / ((1 + d) x rate) after N arrivals;
// 20 delays' worth of arrivals makes that wait exceed the delay from d = 6% on, so a probe
// cannot pass by draining a short burst faster than its rate could be sustained.
constexpr double kProbeDelays = 20;
constexpr int64_t kMaxProbeRequests = 20'000;

}  // namespace

int64_t ProbeRequests(const Workload& workload, double rate_rps, double ttft_p90_s,
                      double tpot_p90_s) {
  const double after_first =
      std::max(1.0, static_cast<double>(workload.output.low + workload.output.high) / 2 - 1);
  const double decode_delay = tpot_p90_s * after_first;
  const double delay = std::isfinite(ttft_p90_s) ? ttft_p90_s : decode_delay;
  const double needed = std::ceil(kProbeDelays * rate_rps * delay);
  if (!std::isfinite(needed)) return std::max(workload.requests, kMaxProbeRequests);
  return std::max(workload.requests, std::min(kMaxProbeRequests, static_cast<int64_t>(needed)));
}

namespace {

Result<Probe> ProbeRate(const ReplicaModel& replica, Workload workload, double rate_rps,
                        const PercentileSlo& slo) {
  workload.rate_rps = rate_rps;
  workload.requests = ProbeRequests(workload, rate_rps, slo.ttft_p90_s, slo.tpot_p90_s);
  auto stats = SimulateServing(replica, workload, Routing::kRoundRobin, Slo{});
  if (!stats.ok()) return stats.error();
  Probe probe;
  probe.rate_rps = rate_rps;
  probe.ttft_p90_s = stats.value().ttft_s.p90;
  probe.tpot_p90_s = stats.value().tpot_s.p90;
  probe.meets = probe.ttft_p90_s <= slo.ttft_p90_s && probe.tpot_p90_s <= slo.tpot_p90_s;
  return probe;
}

// The highest per-replica rate meeting the SLO; nothing when even the lowest rate fails
// (`lowest` then holds the lowest rate's probe). From kLowestRateRps, doubled until a probe
// fails; with `start` above it (a rate known to be close: the same layout at other batch
// limits) from `start`, halved until a probe meets when it fails. Then bisected.
Result<std::optional<std::pair<double, Probe>>> HighestRate(const ReplicaModel& replica,
                                                            const Workload& workload,
                                                            const PercentileSlo& slo, Probe& lowest,
                                                            std::vector<Probe>& trail,
                                                            double start = 0) {
  const auto probe_at = [&](double rate) {
    auto probe = ProbeRate(replica, workload, rate, slo);
    if (probe.ok()) trail.push_back(probe.value());
    return probe;
  };
  const std::optional<std::pair<double, Probe>> none;
  double good = 0;
  Probe good_probe;
  double bad = 0;
  for (double rate = std::max(start, kLowestRateRps); good == 0; rate /= 2) {
    if (rate < kLowestRateRps) return none;
    auto probe = probe_at(rate);
    if (!probe.ok()) return probe.error();
    lowest = probe.value();
    if (probe.value().meets) {
      good = rate;
      good_probe = probe.value();
    } else if (rate == kLowestRateRps) {
      return none;
    } else {
      bad = rate;
    }
  }
  for (int step = 0; step < kDoublings && bad == 0; ++step) {
    auto probe = probe_at(good * 2);
    if (!probe.ok()) return probe.error();
    if (!probe.value().meets) {
      bad = good * 2;
    } else {
      good *= 2;
      good_probe = probe.value();
    }
  }
  if (bad > 0) {
    STAGECRAFT_RETURN_IF_ERROR(BisectRate(kBisections, good, bad, [&](double rate) -> Result<bool> {
      auto probe = probe_at(rate);
      if (!probe.ok()) return probe.error();
      if (probe.value().meets) good_probe = probe.value();
      return probe.value().meets;
    }));
  }
  return std::optional<std::pair<double, Probe>>(std::make_pair(good, good_probe));
}

std::string RejectionReason(const Error& error) {
  if (error.kind == ErrorKind::kInfeasible) return "weights leave no KV block";
  if (error.message.find("attention heads") != std::string::npos)
    return "tp does not divide the heads";
  if (error.message.find("KV heads") != std::string::npos) return "tp and the KV heads";
  if (error.message.find("layers evenly") != std::string::npos)
    return "pp does not divide the layers";
  if (error.message.find("routed experts") != std::string::npos)
    return "ep does not divide the experts";
  if (error.message.find("does not fit a replica") != std::string::npos) {
    return "a request exceeds the KV cache";
  }
  return "other";
}

// DistServe's placement on one instance layout: the prefill-only rate within the TTFT bound
// (less the KV transfer), the decode-only rate within the TPOT bound, each found by simulation,
// then the split of the GPUs into prefill and decode instances with the most requests per GPU
// (disaggregation.h's arithmetic). A plan, or a rejection counted.
Status EvaluateDisaggregated(const ModelSpec& model, const ClusterSpec& cluster,
                             const EngineOptions& engine, const ReplicaModel& replica,
                             const Workload& workload, const PercentileSlo& slo, int32_t gpus,
                             ServePlanResult& result) {
  const int64_t instances = gpus / replica.shape.gpus_per_replica();
  if (instances < 2 || workload.output.high < 2) {
    ++result.rejections["disaggregated: fewer than two instances, or one output token"];
    return Status::Ok();
  }
  const double transfer_s = KvTransferSeconds(replica, workload.prompt.high);
  const double unbounded = std::numeric_limits<double>::infinity();
  Workload prefill = workload;
  prefill.output = {1, 1};
  Workload decode = workload;
  decode.prefilled = true;
  Probe lowest;
  std::vector<Probe> trail;
  auto prefill_rate =
      HighestRate(replica, prefill, {slo.ttft_p90_s - transfer_s, unbounded}, lowest, trail);
  if (!prefill_rate.ok()) return prefill_rate.error();
  auto decode_rate = HighestRate(replica, decode, {unbounded, slo.tpot_p90_s}, lowest, trail);
  if (!decode_rate.ok()) return decode_rate.error();
  if (!prefill_rate.value() || !decode_rate.value()) {
    ++result.rejections["disaggregated: a phase misses the SLO at the lowest rate"];
    return Status::Ok();
  }
  const double prefill_rps = prefill_rate.value()->first;
  const double decode_rps = decode_rate.value()->first;
  ServePlan best;
  for (int64_t prefills = 1; prefills < instances; ++prefills) {
    for (int64_t decodes = 1; prefills + decodes <= instances; ++decodes) {
      const DisaggregatedUnit unit{
          .prefill_instances = prefills,
          .decode_instances = decodes,
          .gpus_per_instance = static_cast<int32_t>(replica.shape.gpus_per_replica())};
      const double per_gpu = DisaggregatedRatePerGpu(unit, prefill_rps, decode_rps);
      if (per_gpu <= best.goodput_rps_per_gpu) continue;
      best.goodput_rps_per_gpu = per_gpu;
      best.rate_rps = DisaggregatedRate(unit, prefill_rps, decode_rps);
      best.prefill_instances = prefills;
      best.decode_instances = decodes;
    }
  }
  // The sizing treats the phases apart. The placement is then simulated end to end
  // (disaggregated_sim.h: prefill pool, KV hand-off, decode pool) at the sized rate, and when a
  // P90 misses there, the rate is bisected down until both hold; its P90s are the answer's.
  ServeShape prefill_shape = replica.shape;
  prefill_shape.replicas = static_cast<int32_t>(best.prefill_instances);
  ServeShape decode_shape = replica.shape;
  decode_shape.replicas = static_cast<int32_t>(best.decode_instances);
  auto prefill_pool = BuildReplicaModel(model, cluster, prefill_shape, engine);
  if (!prefill_pool.ok()) return prefill_pool.error();
  auto decode_pool = BuildReplicaModel(model, cluster, decode_shape, engine);
  if (!decode_pool.ok()) return decode_pool.error();
  Workload end_to_end = workload;
  const auto check = [&](double rate) -> Result<DisaggregatedStats> {
    end_to_end.rate_rps = rate;
    return SimulateDisaggregated(prefill_pool.value(), decode_pool.value(), end_to_end,
                                 Routing::kLeastOutstanding, Slo{});
  };
  const auto meets = [&](const DisaggregatedStats& run) {
    return run.stats.ttft_s.p90 <= slo.ttft_p90_s && run.stats.tpot_s.p90 <= slo.tpot_p90_s;
  };
  auto sized = check(best.rate_rps);
  if (!sized.ok()) return sized.error();
  DisaggregatedStats held = sized.value();
  if (!meets(held)) {
    double good = 0;
    double bad = best.rate_rps;
    STAGECRAFT_RETURN_IF_ERROR(BisectRate(kBisections, good, bad, [&](double rate) -> Result<bool> {
      auto run = check(rate);
      if (!run.ok()) return run.error();
      if (meets(run.value())) held = run.value();
      return meets(run.value());
    }));
    if (good == 0) {
      ++result.rejections["disaggregated: the sized placement misses the SLO end to end"];
      return Status::Ok();
    }
    best.goodput_rps_per_gpu *= good / best.rate_rps;
    best.rate_rps = good;
  }
  best.disaggregated = true;
  best.kv_transfer_s = transfer_s;
  best.shape = {.tp = replica.shape.tp,
                .pp = replica.shape.pp,
                .replicas = static_cast<int32_t>(best.prefill_instances + best.decode_instances)};
  best.token_budget = engine.token_budget;
  best.max_seqs = engine.max_seqs;
  best.ttft_p90_s = held.stats.ttft_s.p90;
  best.tpot_p90_s = held.stats.tpot_s.p90;
  best.kv_capacity_tokens = replica.kv_capacity_tokens;
  result.plans.push_back(std::move(best));
  return Status::Ok();
}

// One layout: sized, its highest rate searched (from `start_rate` per replica when above the
// lowest, HighestRate); a plan, or a rejection counted. Colocated, and disaggregated too when
// `try_disaggregated` (EP layouts never: serve's --ep is colocated only).
Status EvaluateLayout(const ModelSpec& model, const ClusterSpec& cluster,
                      const EngineOptions& engine, const Workload& workload,
                      const PercentileSlo& slo, const ServeShape& one, int32_t gpus,
                      bool try_disaggregated, double start_rate, ServePlanResult& result) {
  auto replica = BuildReplicaModel(model, cluster, one, engine);
  const bool disaggregate = try_disaggregated && one.ep == 1;
  if (!replica.ok()) {
    ++result.rejections[RejectionReason(replica.error())];
    if (disaggregate) ++result.rejections["disaggregated: " + RejectionReason(replica.error())];
    return Status::Ok();
  }
  if (disaggregate) {
    STAGECRAFT_RETURN_IF_ERROR(EvaluateDisaggregated(model, cluster, engine, replica.value(),
                                                     workload, slo, gpus, result));
  }
  Probe lowest;
  std::vector<Probe> trail;
  auto highest = HighestRate(replica.value(), workload, slo, lowest, trail, start_rate);
  if (!highest.ok()) {
    ++result.rejections[RejectionReason(highest.error())];
    return Status::Ok();
  }
  result.best_ttft_p90_s = std::min(result.best_ttft_p90_s, lowest.ttft_p90_s);
  result.best_tpot_p90_s = std::min(result.best_tpot_p90_s, lowest.tpot_p90_s);
  if (!highest.value()) {
    ++result.rejections["misses the SLO at the lowest rate"];
    return Status::Ok();
  }
  ServePlan plan;
  plan.shape = one;
  plan.shape.replicas = static_cast<int32_t>(gpus / one.gpus_per_replica());
  plan.rate_rps = highest.value()->first * plan.shape.replicas;
  plan.goodput_rps_per_gpu = plan.rate_rps / static_cast<double>(plan.shape.gpus());
  plan.ttft_p90_s = highest.value()->second.ttft_p90_s;
  plan.tpot_p90_s = highest.value()->second.tpot_p90_s;
  plan.kv_capacity_tokens = replica.value().kv_capacity_tokens;
  plan.token_budget = engine.token_budget;
  plan.max_seqs = engine.max_seqs;
  for (const Probe& probe : trail) {
    plan.probes.push_back({.rate_rps = probe.rate_rps * plan.shape.replicas,
                           .ttft_p90_s = probe.ttft_p90_s,
                           .tpot_p90_s = probe.tpot_p90_s,
                           .meets = probe.meets});
  }
  result.plans.push_back(std::move(plan));
  return Status::Ok();
}

}  // namespace

Result<ServePlanResult> PlanServing(const ServePlanSpec& spec) {
  if (spec.gpus < 1)
    return Error{"serve-plan: --gpus N is required (the GPUs to fill, e.g. --gpus 8)"};
  if (spec.slo.empty()) {
    return Error{"serve-plan: --slo is required (e.g. --slo ttft_p90=0.4s,tpot_p90=40ms)"};
  }
  if (spec.top < 1) return Error{"--top: must be at least 1, got " + std::to_string(spec.top)};
  auto slo = ParsePercentileSlo(spec.slo);
  if (!slo.ok()) return slo.error();
  auto prompt = ParseLengthDist(spec.prompt_tokens, "--prompt-tokens");
  if (!prompt.ok()) return prompt.error();
  auto output = ParseLengthDist(spec.output_tokens, "--output-tokens");
  if (!output.ok()) return output.error();
  auto run = ResolveRun(spec.run);
  if (!run.ok()) return run.error();
  const Config& config = run.value().config;
  STAGECRAFT_RETURN_IF_ERROR(CheckServable(config.model, spec.kv_dtype, "serve-plan"));
  const ModelSpec& model = config.model;
  EngineOptions engine;
  STAGECRAFT_RETURN_IF_ERROR(
      ApplyDtypes(spec.weight_dtype, spec.kv_dtype, model.transformer, engine));
  STAGECRAFT_RETURN_IF_ERROR(ApplyBatching(spec.batching, config.model.seq_len, engine));
  if (!model.is_transformer() && model.layers.empty()) {
    return Error{
        "serve-plan: the model is not a transformer or a layer list (expected model.type: "
        "transformer with its dimensions, model.type: layers, or --hf-config FILE)"};
  }
  if (spec.gpus > config.cluster.num_devices()) {
    return Error{"serve-plan: --gpus " + std::to_string(spec.gpus) +
                 " is more than the "
                 "cluster's " +
                 std::to_string(config.cluster.num_devices()) +
                 " GPUs; give a larger --cluster, e.g. " + config.cluster.device + "x" +
                 std::to_string((spec.gpus + config.cluster.devices_per_node - 1) /
                                config.cluster.devices_per_node)};
  }
  Workload workload;
  workload.requests = spec.requests;
  workload.seed = spec.seed;
  workload.prompt = prompt.value();
  workload.output = output.value();
  ServePlanResult result;
  result.model = config.model.name;
  result.label = run.value().label;
  result.best_ttft_p90_s = std::numeric_limits<double>::infinity();
  result.best_tpot_p90_s = std::numeric_limits<double>::infinity();
  std::vector<ServeShape> layouts;
  for (int32_t tp = 1; tp <= std::min(spec.gpus, config.cluster.devices_per_node); ++tp) {
    for (int32_t pp = 1; tp * pp <= spec.gpus; ++pp) layouts.push_back({.tp = tp, .pp = pp});
  }
  // A MoE model adds the EP axis: ep = tp x d attention data-parallel groups, d >= 2, within
  // the GPUs (ep = tp would cost as plain TP here); an ep not dividing the experts is a
  // counted rejection.
  const size_t plain = layouts.size();
  if (ServedModelHasExperts(model)) {
    for (size_t index = 0; index < plain; ++index) {
      const ServeShape base = layouts[index];
      for (int32_t groups = 2; int64_t{base.tp} * groups * base.pp <= spec.gpus; ++groups) {
        ServeShape one = base;
        one.ep = base.tp * groups;
        layouts.push_back(one);
      }
    }
  }
  // Each plain layout colocated and disaggregated; each EP layout colocated.
  result.candidates =
      2 * static_cast<int64_t>(plain) + static_cast<int64_t>(layouts.size() - plain);
  for (size_t index = 0; index < layouts.size(); ++index) {
    const ServeShape& one = layouts[index];
    if (spec.progress) {
      spec.progress("[" + std::to_string(index + 1) + "/" + std::to_string(layouts.size()) +
                    "] tp " + std::to_string(one.tp) + " x pp " + std::to_string(one.pp) +
                    (one.ep > 1 ? " ep " + std::to_string(one.ep) : ""));
    }
    STAGECRAFT_RETURN_IF_ERROR(EvaluateLayout(model, config.cluster, engine, workload, slo.value(),
                                              one, spec.gpus, /*try_disaggregated=*/true,
                                              /*start_rate=*/0, result));
  }
  const auto best_first = [](const ServePlan& a, const ServePlan& b) {
    return a.goodput_rps_per_gpu > b.goodput_rps_per_gpu;
  };
  std::stable_sort(result.plans.begin(), result.plans.end(), best_first);
  // The engine's batch limits, for the best colocated layouts: each keeps its best variant.
  // Each variant's search starts from the layout's rate per replica at the default limits.
  std::vector<std::pair<ServeShape, double>> refined;
  for (const ServePlan& plan : result.plans) {
    if (plan.disaggregated || refined.size() == kRefinedLayouts) continue;
    ServeShape one = plan.shape;
    one.replicas = 1;
    refined.emplace_back(one, plan.rate_rps / plan.shape.replicas);
  }
  const bool chunked = engine.batching == EngineOptions::Batching::kChunked;
  result.default_token_budget = engine.token_budget;
  result.default_max_seqs = engine.max_seqs;
  result.token_budgets_searched = chunked;
  for (size_t index = 0; index < refined.size(); ++index) {
    const auto& [one, start_rate] = refined[index];
    if (spec.progress) {
      spec.progress("[batch limits " + std::to_string(index + 1) + "/" +
                    std::to_string(refined.size()) + "] tp " + std::to_string(one.tp) + " x pp " +
                    std::to_string(one.pp) + (one.ep > 1 ? " ep " + std::to_string(one.ep) : ""));
    }
    for (int64_t budget : kTokenBudgets) {
      // Prefill-first batching keeps its budget (whole prompts, max_model_len at least).
      if (!chunked && budget != engine.token_budget) continue;
      for (int32_t seqs : kMaxSeqs) {
        if (budget == engine.token_budget && seqs == engine.max_seqs) continue;  // searched
        EngineOptions variant = engine;
        variant.token_budget = budget;
        variant.max_seqs = seqs;
        ++result.candidates;
        ServePlanResult tried;
        tried.best_ttft_p90_s = result.best_ttft_p90_s;
        tried.best_tpot_p90_s = result.best_tpot_p90_s;
        STAGECRAFT_RETURN_IF_ERROR(EvaluateLayout(model, config.cluster, variant, workload,
                                                  slo.value(), one, spec.gpus,
                                                  /*try_disaggregated=*/false, start_rate, tried));
        for (const auto& [reason, count] : tried.rejections) {
          result.rejections["batch limits: " + reason] += count;
        }
        for (ServePlan& plan : tried.plans) {
          auto same =
              std::find_if(result.plans.begin(), result.plans.end(), [&](const ServePlan& other) {
                return !other.disaggregated && other.shape == plan.shape;
              });
          // The layout keeps its best batch limits; the other is a rejection counted.
          if (same == result.plans.end()) {
            result.plans.push_back(std::move(plan));
            continue;
          }
          ++result.rejections["batch limits: slower than the layout's best"];
          if (plan.goodput_rps_per_gpu > same->goodput_rps_per_gpu) *same = std::move(plan);
        }
      }
    }
  }
  if (spec.progress) spec.progress("");
  std::stable_sort(result.plans.begin(), result.plans.end(), best_first);
  return result;
}

namespace {

std::string FormatPlanText(const ServePlanSpec& spec, const std::string& label,
                           const ServePlanResult& result) {
  std::ostringstream out;
  out << "stagecraft serve-plan: " << label << "\n";
  out << "  model " << result.model << " on " << spec.gpus << (spec.gpus == 1 ? " GPU" : " GPUs")
      << ", SLO " << spec.slo << ", prompt " << spec.prompt_tokens << ", output "
      << spec.output_tokens << " tokens\n";
  out << "  candidates " << result.candidates << ", feasible and meeting the SLO "
      << result.plans.size() << "; each probe " << spec.requests
      << " requests or, at higher rates, " << static_cast<int>(kProbeDelays)
      << " TTFT bounds' worth of arrivals, seed " << spec.seed << "\n";
  out << "  batch (token budget/max_num_seqs per engine): " << result.default_token_budget << "/"
      << result.default_max_seqs << " for every layout; for the best " << kRefinedLayouts
      << " colocated also "
      << (result.token_budgets_searched
              ? std::to_string(kTokenBudgets[0]) + "-" +
                    std::to_string(kTokenBudgets[std::size(kTokenBudgets) - 1]) + " x "
              : std::to_string(result.default_token_budget) + "/")
      << kMaxSeqs[0] << "-" << kMaxSeqs[std::size(kMaxSeqs) - 1] << ", each keeping its best\n\n";
  out << "  rank  tp x pp  placement  gpus     batch   rate_rps  goodput/gpu  ttft_p90_ms  "
         "tpot_p90_ms  kv_tokens\n";
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
        << PadLeft(FormatFixed(plan.rate_rps, 3), 11)
        << PadLeft(FormatFixed(plan.goodput_rps_per_gpu, 4), 13)
        << PadLeft(FormatFixed(plan.ttft_p90_s * 1e3, 3), 13)
        << PadLeft(FormatFixed(plan.tpot_p90_s * 1e3, 3), 13)
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
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("model").String(result.model);
  json.Key("gpus").Int(spec.gpus);
  json.Key("candidates").Int(result.candidates);
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
    json.Key("rate_rps").Fixed(plan.rate_rps, 3);
    json.Key("goodput_rps_per_gpu").Fixed(plan.goodput_rps_per_gpu, 4);
    json.Key("ttft_p90_ms").Fixed(plan.ttft_p90_s * 1e3, 3);
    json.Key("tpot_p90_ms").Fixed(plan.tpot_p90_s * 1e3, 3);
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
      one.points.push_back({.x = probe.tpot_p90_s * 1e3,
                            .y = gpus / probe.rate_rps,
                            .label = FormatFixed(probe.rate_rps, 3) + " rps",
                            .over = !probe.meets});
    }
    series.push_back(std::move(one));
  }
  PlotOptions options;
  options.title = "serve-plan: " + result.model + " (lower is better on both axes)";
  options.x_label = "P90 TPOT (ms)";
  options.y_label = "GPU-seconds per request";
  options.log2_y = true;
  options.over_legend = "misses the SLO";
  return FormatScatterPlot(series, options);
}

Status RunServePlan(const ServePlanSpec& spec, Transcript& transcript) {
  if (!spec.space.empty()) return RunExplorerSearch(spec, transcript);
  auto result = PlanServing(spec);
  if (!result.ok()) return result.error();
  const ServePlanResult& plan = result.value();
  if (!spec.svg_path.empty()) {
    const Status saved = spec.run.files.write(spec.svg_path, FormatServePlanSvg(plan));
    if (!saved.ok()) return Error{"--svg: " + saved.error().message};
  }
  transcript.out() << (spec.json ? FormatPlanJson(spec, plan)
                                 : FormatPlanText(spec, plan.label, plan));
  if (!plan.plans.empty()) return Status::Ok();
  if (!std::isfinite(plan.best_ttft_p90_s)) {
    return MakeError(ErrorKind::kInfeasible,
                     "serve-plan: no layout of " + plan.model + " on " + std::to_string(spec.gpus) +
                         " GPUs holds the model and a request (the rejections above say why: "
                         "more GPUs or a device with more memory)");
  }
  std::string binds;
  auto slo = ParsePercentileSlo(spec.slo);
  if (plan.best_ttft_p90_s > slo.value().ttft_p90_s) {
    binds += "ttft_p90: the lowest any layout reaches is " +
             FormatFixed(plan.best_ttft_p90_s * 1e3, 3) + " ms";
  }
  if (plan.best_tpot_p90_s > slo.value().tpot_p90_s) {
    binds += std::string(binds.empty() ? "" : "; ") +
             "tpot_p90: the lowest any layout reaches is " +
             FormatFixed(plan.best_tpot_p90_s * 1e3, 3) + " ms";
  }
  if (binds.empty()) binds = "ttft_p90 and tpot_p90 together (neither alone)";
  return MakeError(ErrorKind::kInfeasible,
                   "serve-plan: no layout meets the SLO " + spec.slo + " even at " +
                       FormatFixed(kLowestRateRps, 2) + " rps per replica; binding: " + binds +
                       " (a looser SLO, shorter requests, or faster devices)");
}

}  // namespace stagecraft
