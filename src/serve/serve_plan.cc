#include "serve/serve_plan.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>

#include "core/units.h"
#include "hardware/presets.h"
#include "serve/bisect.h"
#include "serve/csa2_replica.h"
#include "serve/disaggregated_sim.h"
#include "serve/disaggregation.h"
#include "serve/explorer_search.h"
#include "serve/serve.h"

namespace stagecraft {
namespace {

constexpr int kDoublings = 16;  // up to 0.05 x 2^16 = 3277 rps per replica
constexpr int kBisections = 8;  // the rate to 1/256 of the last doubling step

struct Probe {
  double rate_rps = 0;  // per replica
  bool meets = false;
  double ttft_s = 0;
  double tpot_s = 0;
};

constexpr int64_t kMaxProbeRequests = 20'000;

}  // namespace

int64_t ProbeRequests(const Workload& workload, double rate_rps, double ttft_s, double tpot_s) {
  const double after_first =
      std::max(1.0, static_cast<double>(workload.output.low + workload.output.high) / 2 - 1);
  const double decode_delay = tpot_s * after_first;
  const double delay = std::isfinite(ttft_s) ? ttft_s : decode_delay;
  const double needed = std::ceil(kProbeDelays * rate_rps * delay);
  if (!std::isfinite(needed)) return std::max(workload.requests, kMaxProbeRequests);
  return std::max(workload.requests, std::min(kMaxProbeRequests, static_cast<int64_t>(needed)));
}

namespace {

Result<Probe> ProbeRate(const ReplicaModel& replica, Workload workload, double rate_rps,
                        const PercentileSlo& slo) {
  workload.rate_rps = rate_rps;
  workload.requests = ProbeRequests(workload, rate_rps, slo.ttft_s, slo.tpot_s);
  auto stats = SimulateServing(replica, workload, Routing::kRoundRobin, Slo{});
  if (!stats.ok()) return stats.error();
  Probe probe;
  probe.rate_rps = rate_rps;
  probe.ttft_s = stats.value().ttft_s.At(slo.percentile);
  probe.tpot_s = stats.value().tpot_s.At(slo.percentile);
  probe.meets = probe.ttft_s <= slo.ttft_s && probe.tpot_s <= slo.tpot_s;
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
  auto prefill_rate = HighestRate(
      replica, prefill, {slo.ttft_s - transfer_s, unbounded, slo.percentile}, lowest, trail);
  if (!prefill_rate.ok()) return prefill_rate.error();
  auto decode_rate =
      HighestRate(replica, decode, {unbounded, slo.tpot_s, slo.percentile}, lowest, trail);
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
  // percentile misses there, the rate is bisected down until both hold; its percentiles are
  // the answer's.
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
    return run.stats.ttft_s.At(slo.percentile) <= slo.ttft_s &&
           run.stats.tpot_s.At(slo.percentile) <= slo.tpot_s;
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
  best.ttft_s = held.stats.ttft_s.At(slo.percentile);
  best.tpot_s = held.stats.tpot_s.At(slo.percentile);
  best.kv_capacity_tokens = replica.kv_capacity_tokens;
  result.plans.push_back(std::move(best));
  return Status::Ok();
}

// One layout at the workload's closed-loop or offline client (ServePlanSetup::workload): its
// replicas filling the GPUs, simulated once, whole, behind least-outstanding routing; a plan
// when the closed loop's percentiles meet the SLO (offline: always), or a rejection counted.
Status EvaluateAtClient(const ModelSpec& model, const ClusterSpec& cluster,
                        const EngineOptions& engine, const Workload& workload,
                        const PercentileSlo& slo, const ServeShape& one, int32_t gpus,
                        ServePlanResult& result) {
  ServeShape all = one;
  all.replicas = static_cast<int32_t>(gpus / one.gpus_per_replica());
  auto replica = BuildReplicaModel(model, cluster, all, engine);
  if (!replica.ok()) {
    ++result.rejections[RejectionReason(replica.error())];
    return Status::Ok();
  }
  auto run = SimulateServing(replica.value(), workload, Routing::kLeastOutstanding, Slo{});
  if (!run.ok()) {
    ++result.rejections[RejectionReason(run.error())];
    return Status::Ok();
  }
  const ServeStats& stats = run.value();
  ServePlan plan;
  plan.shape = all;
  plan.ttft_s = stats.ttft_s.At(slo.percentile);
  plan.tpot_s = stats.tpot_s.At(slo.percentile);
  if (workload.client == Workload::Client::kClosed) {
    result.best_ttft_s = std::min(result.best_ttft_s, plan.ttft_s);
    result.best_tpot_s = std::min(result.best_tpot_s, plan.tpot_s);
    if (plan.ttft_s > slo.ttft_s || plan.tpot_s > slo.tpot_s) {
      ++result.rejections["misses the SLO at the concurrency"];
      return Status::Ok();
    }
  }
  const double gpus_used = static_cast<double>(all.gpus());
  plan.rate_rps = stats.throughput_rps;
  plan.goodput_rps_per_gpu = stats.throughput_rps / gpus_used;
  plan.output_tokens_per_s = stats.output_tokens_per_s;
  plan.output_tokens_per_s_per_gpu = stats.output_tokens_per_s / gpus_used;
  plan.kv_capacity_tokens = replica.value().kv_capacity_tokens;
  plan.token_budget = engine.token_budget;
  plan.max_seqs = engine.max_seqs;
  result.plans.push_back(std::move(plan));
  return Status::Ok();
}

// One layout: sized, its highest rate searched (from `start_rate` per replica when above the
// lowest, HighestRate); a plan, or a rejection counted. Colocated, and disaggregated too when
// `try_disaggregated` (EP layouts never: serve's --ep is colocated only).
Status EvaluateLayout(const ModelSpec& model, const ClusterSpec& cluster,
                      const EngineOptions& engine, const Workload& workload,
                      const PercentileSlo& slo, const ServeShape& one, int32_t gpus,
                      bool try_disaggregated, double start_rate, ServePlanResult& result) {
  if (workload.client != Workload::Client::kOpen) {
    return EvaluateAtClient(model, cluster, engine, workload, slo, one, gpus, result);
  }
  auto replica = BuildReplicaModel(model, cluster, one, engine);
  // Speculative decoding is modelled colocated only (serve refuses it with the instance flags).
  const bool speculating = engine.speculative_tokens > 0;
  if (try_disaggregated && one.ep == 1 && speculating) {
    ++result.rejections["disaggregated: not with speculative decoding"];
  }
  const bool disaggregate = try_disaggregated && one.ep == 1 && !speculating;
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
  result.best_ttft_s = std::min(result.best_ttft_s, lowest.ttft_s);
  result.best_tpot_s = std::min(result.best_tpot_s, lowest.tpot_s);
  if (!highest.value()) {
    ++result.rejections["misses the SLO at the lowest rate"];
    return Status::Ok();
  }
  ServePlan plan;
  plan.shape = one;
  plan.shape.replicas = static_cast<int32_t>(gpus / one.gpus_per_replica());
  plan.rate_rps = highest.value()->first * plan.shape.replicas;
  plan.goodput_rps_per_gpu = plan.rate_rps / static_cast<double>(plan.shape.gpus());
  plan.ttft_s = highest.value()->second.ttft_s;
  plan.tpot_s = highest.value()->second.tpot_s;
  plan.kv_capacity_tokens = replica.value().kv_capacity_tokens;
  plan.token_budget = engine.token_budget;
  plan.max_seqs = engine.max_seqs;
  for (const Probe& probe : trail) {
    plan.probes.push_back({.rate_rps = probe.rate_rps * plan.shape.replicas,
                           .ttft_s = probe.ttft_s,
                           .tpot_s = probe.tpot_s,
                           .meets = probe.meets});
  }
  result.plans.push_back(std::move(plan));
  return Status::Ok();
}

// What the plans are ranked by: requests per second per GPU within the SLO, or at a
// closed-loop or offline client output tokens per second per GPU.
double Score(const ServePlan& plan, const Workload& workload) {
  return workload.client == Workload::Client::kOpen ? plan.goodput_rps_per_gpu
                                                    : plan.output_tokens_per_s_per_gpu;
}

// The colocated layout `one` again at every token budget x max_num_seqs of `budgets` x
// `max_seqs` but the engine's own (searched already), each search from `start_rate` per
// replica: the layout keeps its best plan, the others are rejections counted.
Status RefineBatchLimits(const ModelSpec& model, const ClusterSpec& cluster,
                         const ServePlanSetup& setup, const ServeShape& one, double start_rate,
                         const std::vector<int64_t>& budgets, const std::vector<int32_t>& max_seqs,
                         ServePlanResult& result) {
  const EngineOptions& engine = setup.engine;
  const Workload& workload = setup.workload;
  for (int64_t budget : budgets) {
    for (int32_t seqs : max_seqs) {
      if (budget == engine.token_budget && seqs == engine.max_seqs) continue;  // searched
      EngineOptions variant = engine;
      variant.token_budget = budget;
      variant.max_seqs = seqs;
      ++result.candidates;
      ServePlanResult tried;
      tried.best_ttft_s = result.best_ttft_s;
      tried.best_tpot_s = result.best_tpot_s;
      STAGECRAFT_RETURN_IF_ERROR(EvaluateLayout(model, cluster, variant, workload, setup.slo, one,
                                                setup.gpus,
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
        if (Score(plan, workload) > Score(*same, workload)) *same = std::move(plan);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ServePlanResult> PlanServing(const ModelSpec& model, const ClusterSpec& cluster,
                                    const ServePlanSetup& setup) {
  if (setup.gpus < 1)
    return Error{"serve-plan: --gpus N is required (the GPUs to fill, e.g. --gpus 8)"};
  if (!model.is_transformer() && model.layers.empty()) {
    return Error{
        "serve-plan: the model is not a transformer or a layer list (expected model.type: "
        "transformer with its dimensions, model.type: layers, or --hf-config FILE)"};
  }
  if (setup.gpus > cluster.num_devices()) {
    return Error{"serve-plan: --gpus " + std::to_string(setup.gpus) +
                 " is more than the "
                 "cluster's " +
                 std::to_string(cluster.num_devices()) + " GPUs; " +
                 LargerClusterHint(cluster, setup.gpus)};
  }
  const PercentileSlo& slo = setup.slo;
  const EngineOptions& engine = setup.engine;
  const Workload& workload = setup.workload;
  const int32_t gpus = setup.gpus;
  const bool open_loop = workload.client == Workload::Client::kOpen;
  if (workload.client == Workload::Client::kClosed &&
      (workload.concurrency < 1 || workload.concurrency > workload.requests)) {
    return Error{"--concurrency " + std::to_string(workload.concurrency) + ": expected 1 to " +
                 std::to_string(workload.requests) +
                 " requests in flight (at most --requests, the requests each layout serves)"};
  }
  ServePlanResult result;
  result.model = model.name;
  result.percentile = slo.percentile;
  result.best_ttft_s = std::numeric_limits<double>::infinity();
  result.best_tpot_s = std::numeric_limits<double>::infinity();
  std::vector<ServeShape> layouts;
  for (int32_t tp = 1; tp <= std::min(gpus, cluster.devices_per_node); ++tp) {
    for (int32_t pp = 1; tp * pp <= gpus; ++pp) layouts.push_back({.tp = tp, .pp = pp});
  }
  // A MoE model adds the EP axis: ep = tp x d attention data-parallel groups, d >= 2, within
  // the GPUs (ep = tp would cost as plain TP here); an ep not dividing the experts is a
  // counted rejection.
  const size_t plain = layouts.size();
  if (ServedModelHasExperts(model)) {
    for (size_t index = 0; index < plain; ++index) {
      const ServeShape base = layouts[index];
      for (int32_t groups = 2; int64_t{base.tp} * groups * base.pp <= gpus; ++groups) {
        ServeShape one = base;
        one.ep = base.tp * groups;
        layouts.push_back(one);
      }
    }
  }
  // Each plain layout colocated and (with the open loop) disaggregated; each EP layout
  // colocated.
  result.candidates = (open_loop ? 2 : 1) * static_cast<int64_t>(plain) +
                      static_cast<int64_t>(layouts.size() - plain);
  const auto describe = [](const ServeShape& one) {
    return "tp " + std::to_string(one.tp) + " x pp " + std::to_string(one.pp) +
           (one.ep > 1 ? " ep " + std::to_string(one.ep) : "");
  };
  Progress layouts_done(setup.progress, "serve-plan: layouts",
                        static_cast<int64_t>(layouts.size()));
  for (size_t index = 0; index < layouts.size(); ++index) {
    const ServeShape& one = layouts[index];
    if (layouts_done.shown()) layouts_done.Update(static_cast<int64_t>(index), describe(one));
    STAGECRAFT_RETURN_IF_ERROR(EvaluateLayout(model, cluster, engine, workload, slo, one, gpus,
                                              /*try_disaggregated=*/open_loop,
                                              /*start_rate=*/0, result));
  }
  const auto best_first = [&](const ServePlan& a, const ServePlan& b) {
    return Score(a, workload) > Score(b, workload);
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
  result.token_budgets_searched = chunked && setup.search_token_budgets;
  result.max_seqs_searched = setup.search_max_seqs;
  if (!result.token_budgets_searched && !result.max_seqs_searched) refined.clear();
  // Prefill-first batching keeps its budget (whole prompts, max_model_len at least), and a
  // limit the user gave stays as given.
  std::vector<int64_t> budgets = {engine.token_budget};
  if (result.token_budgets_searched)
    budgets.assign(std::begin(kTokenBudgets), std::end(kTokenBudgets));
  std::vector<int32_t> max_seqs = {engine.max_seqs};
  if (result.max_seqs_searched) max_seqs.assign(std::begin(kMaxSeqs), std::end(kMaxSeqs));
  Progress refined_done(setup.progress, "serve-plan: batch limits",
                        static_cast<int64_t>(refined.size()));
  for (size_t index = 0; index < refined.size(); ++index) {
    const auto& [one, start_rate] = refined[index];
    if (refined_done.shown()) refined_done.Update(static_cast<int64_t>(index), describe(one));
    STAGECRAFT_RETURN_IF_ERROR(
        RefineBatchLimits(model, cluster, setup, one, start_rate, budgets, max_seqs, result));
  }
  std::stable_sort(result.plans.begin(), result.plans.end(), best_first);
  return result;
}

}  // namespace stagecraft
