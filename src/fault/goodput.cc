#include "fault/goodput.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "core/units.h"
#include "fault/checkpoint_manifest.h"
#include "fault/failure_rates.h"
#include "fault/storage.h"
#include "precision/loss_scaler.h"
#include "run/memory_verdict.h"
#include "run/run_setup.h"
#include "run/simulate.h"

namespace stagecraft {

namespace {

// A CONFIG's run, prepared and simulated once: the job's size, its checkpoint, its step.
struct ConfigRun {
  PreparedRun run;
  RunOutcome outcome;
};

// The GPUs of the job and of a node: flags first, then the config's layout.
Status ResolveGpus(const GoodputSpec& spec, const PreparedRun* run, GoodputResult& result) {
  if (run != nullptr) {
    const Config& config = run->config;
    const ParallelSpec& parallel = config.parallel;
    result.gpus = static_cast<int64_t>(parallel.pp) * parallel.tp * parallel.dp * parallel.cp;
    if (config.cluster.given) result.gpus_per_node = config.cluster.devices_per_node;
  }
  if (spec.gpus) {
    auto gpus = ParsePositive("--gpus", *spec.gpus, "a whole number of GPUs, e.g. 16384");
    if (!gpus.ok()) return gpus.error();
    if (gpus.value() != std::floor(gpus.value()) || gpus.value() > 1e9) {
      return Error{"--gpus: expected a whole number of GPUs up to 10^9, got " + *spec.gpus};
    }
    result.gpus = static_cast<int64_t>(gpus.value());
  }
  if (spec.gpus_per_node) {
    auto per_node = ParsePositive("--gpus-per-node", *spec.gpus_per_node, "a whole number, e.g. 8");
    if (!per_node.ok()) return per_node.error();
    result.gpus_per_node = static_cast<int64_t>(per_node.value());
  }
  if (result.gpus == 0) {
    return Error{
        "goodput: the job's size is unknown: give --gpus N or a CONFIG (e.g. "
        "'stagecraft goodput --gpus 16384 --checkpoint-blocking 0.6s --restart 189s')"};
  }
  result.nodes = (result.gpus + result.gpus_per_node - 1) / result.gpus_per_node;
  return Status::Ok();
}

// The job's mean time to failure from one of the three ways of giving it.
// --failure-trace FILE: one failure time per line, hours from the job's start, increasing;
// '#' starts a comment. The job's MTTF is the last time over the count.
Status ReadFailureTrace(const GoodputSpec& spec, GoodputResult& result) {
  auto text = spec.files.read(*spec.failure_trace);
  if (!text.ok()) return Error{"--failure-trace: " + text.error().message};
  std::istringstream lines(text.value());
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    line = line.substr(0, line.find('#'));
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    const std::string where = *spec.failure_trace + ":" + std::to_string(number);
    auto hours = ParsePositive(where, line, "a failure time in hours from the job's start");
    if (!hours.ok()) return hours.error();
    if (!result.trace_s.empty() && hours.value() * 3600.0 <= result.trace_s.back()) {
      return Error{where + ": " + line +
                   " h is not after the failure before it (expected the "
                   "times in increasing order)"};
    }
    result.trace_s.push_back(hours.value() * 3600.0);
  }
  if (result.trace_s.empty()) {
    return Error{"--failure-trace: " + *spec.failure_trace +
                 " holds no failure times (expected "
                 "one time in hours per line)"};
  }
  result.rate_source = "--failure-trace, " + std::to_string(result.trace_s.size()) +
                       " failures in " + FormatFixed(result.trace_s.back() / 3600.0, 1) + " h";
  result.mttf_s = result.trace_s.back() / static_cast<double>(result.trace_s.size());
  return Status::Ok();
}

Status ResolveMttf(const GoodputSpec& spec, GoodputResult& result) {
  const int given = (spec.failures_per_1000_node_days ? 1 : 0) + (spec.mtbf_hours ? 1 : 0) +
                    (spec.failure_preset ? 1 : 0) + (spec.failure_trace ? 1 : 0);
  if (given > 1) {
    return Error{
        "goodput: give the failure rate one way: --failures-per-1000-node-days, "
        "--mtbf-hours, --failure-preset or --failure-trace (got " +
        std::to_string(given) + ")"};
  }
  if (spec.failure_trace) return ReadFailureTrace(spec, result);
  if (spec.mtbf_hours) {
    auto hours = ParsePositive("--mtbf-hours", *spec.mtbf_hours, "the job's MTBF in hours, e.g. 3");
    if (!hours.ok()) return hours.error();
    result.rate_source = "--mtbf-hours";
    result.mttf_s = hours.value() * 3600.0;
    return Status::Ok();
  }
  if (spec.failures_per_1000_node_days) {
    auto rate = ParsePositive("--failures-per-1000-node-days", *spec.failures_per_1000_node_days,
                              "failures per 1000 node-days, e.g. 6.5 (Meta RSC-1)");
    if (!rate.ok()) return rate.error();
    result.rate_source = "--failures-per-1000-node-days";
    result.per_1000_node_days = rate.value();
  } else {
    auto preset = FindFailureRatePreset(spec.failure_preset.value_or("llama3-405b"));
    if (!preset.ok()) return preset.error();
    result.rate_source = preset.value().name;
    result.per_1000_node_days = preset.value().PerThousandNodeDays();
    int64_t named = 0;
    for (const auto& [cause, count] : preset.value().causes) {
      result.causes.emplace_back(cause, count);
      named += count;
    }
    const int64_t total = std::llround(preset.value().failures);
    if (!result.causes.empty() && total > named) result.causes.emplace_back("other", total - named);
  }
  result.mttf_s = JobMttfHours(result.per_1000_node_days, result.nodes) * 3600.0;
  return Status::Ok();
}

// --storage: the save and load costs of the config's checkpoint (fault/storage.h).
Status ResolveStorageCosts(const GoodputSpec& spec, const ConfigRun* config,
                           GoodputResult& result) {
  if (config == nullptr) {
    return Error{
        "--storage: needs a CONFIG (the checkpoint's bytes come from its layout), e.g. "
        "'stagecraft goodput tests/golden/data/llama-3-405b.yaml --storage tectonic "
        "--restart 60s'"};
  }
  if (spec.checkpoint_blocking || spec.checkpoint_persist) {
    return Error{
        "--storage: computes the save's blocking and persist times; drop "
        "--checkpoint-blocking and --checkpoint-persist (or --storage)"};
  }
  auto tier = FindStorageTier(*spec.storage);
  if (!tier.ok()) return tier.error();
  const PreparedRun* run = &config->run;
  const MemoryReport memory = ComputeMemory(*run, config->outcome);
  if (!memory.verdict.states_known || memory.ranks.empty()) {
    return Error{"--storage: the model states of " + run->label +
                 " are not derived (model.type transformer or layers is needed)"};
  }
  auto manifest = BuildManifest(*run, memory, {});
  if (!manifest.ok()) return manifest.error();
  const SaveCosts save = EstimateSaveCosts(manifest.value(), run->config.cluster, result.nodes,
                                           tier.value(), spec.sync_save);
  result.storage = save;
  result.storage_tier = tier.value().name;
  result.costs.blocking_s = save.blocking_s;
  result.costs.persist_s = save.persist_s;
  return Status::Ok();
}

// The restart: --restart whole, or its parts (Llama 3 §3.3.4 and MegaScale §5 name them:
// detection, rescheduling onto healthy nodes, initialization, the checkpoint's load, warm-up).
Status ResolveRestart(const GoodputSpec& spec, GoodputResult& result) {
  const std::vector<std::pair<const char*, const std::optional<std::string>*>> parts = {
      {"--detection", &spec.detection},
      {"--reschedule", &spec.reschedule},
      {"--init", &spec.init},
      {"--load", &spec.load},
      {"--warmup", &spec.warmup}};
  bool any_part = false;
  for (const auto& [flag, value] : parts) {
    if (!value->has_value()) continue;
    if (spec.restart) {
      return Error{std::string(flag) +
                   ": a part of the restart; give --restart (the whole) or "
                   "its parts (--detection, --reschedule, --init, --load, --warmup), not both"};
    }
    if (spec.storage && std::string(flag) == "--load") {
      return Error{"--load: --storage computes the load; drop one of them"};
    }
    auto seconds = ParseSeconds(flag, **value);
    if (!seconds.ok()) return seconds.error();
    result.costs.restart_s += seconds.value();
    result.restart_parts.push_back({std::string(flag).substr(2), seconds.value()});
    any_part = true;
  }
  if (any_part) return Status::Ok();
  if (!spec.restart) {
    return Error{
        "goodput: missing --restart (the time from a failure to training again: "
        "detection, rescheduling, initialization, load; e.g. --restart 189s, or its parts "
        "--detection, --reschedule, --init, --load, --warmup)"};
  }
  auto restart = ParseSeconds("--restart", *spec.restart);
  if (!restart.ok()) return restart.error();
  result.costs.restart_s = restart.value();
  return Status::Ok();
}

Status ResolveCosts(const GoodputSpec& spec, const ConfigRun* run, GoodputResult& result) {
  STAGECRAFT_RETURN_IF_ERROR(ResolveRestart(spec, result));
  if (spec.storage) {
    STAGECRAFT_RETURN_IF_ERROR(ResolveStorageCosts(spec, run, result));
    if (result.restart_parts.empty())
      result.restart_parts.push_back({"rest", result.costs.restart_s});
    result.restart_parts.push_back({"load", result.storage->load_s});
    result.costs.restart_s += result.storage->load_s;  // --restart is the rest of the restart
    return Status::Ok();
  }
  if (spec.sync_save) {
    return Error{
        "--sync-save: chooses how --storage saves; with --checkpoint-blocking give the "
        "whole save as blocking instead"};
  }
  if (!spec.checkpoint_blocking) {
    return Error{
        "goodput: missing --checkpoint-blocking (the time a save stops training, e.g. "
        "--checkpoint-blocking 0.6s) or --storage with a CONFIG"};
  }
  auto blocking = ParseSeconds("--checkpoint-blocking", *spec.checkpoint_blocking);
  if (!blocking.ok()) return blocking.error();
  if (blocking.value() <= 0) {
    return Error{"--checkpoint-blocking: must be above zero, got " + *spec.checkpoint_blocking +
                 " (a save that costs nothing needs no interval; expected e.g. 0.6s)"};
  }
  result.costs.blocking_s = blocking.value();
  if (spec.checkpoint_persist) {
    auto persist = ParseSeconds("--checkpoint-persist", *spec.checkpoint_persist);
    if (!persist.ok()) return persist.error();
    result.costs.persist_s = persist.value();
  }
  return Status::Ok();
}

Status ResolveInterval(const GoodputSpec& spec, GoodputResult& result) {
  const double mttf = result.mttf_s;
  const CheckpointCosts& costs = result.costs;
  result.young_s = YoungInterval(costs.blocking_s, mttf);
  result.daly_first_s = DalyFirstOrderInterval(costs.blocking_s, mttf, costs.restart_s);
  result.daly_higher_s = DalyHigherOrderInterval(costs.blocking_s, mttf);
  result.optimal_s = ExactOptimalInterval(costs, mttf, costs.persist_s);
  result.interval_s = result.optimal_s;
  if (spec.interval) {
    auto interval = ParseSeconds("--interval", *spec.interval);
    if (!interval.ok()) return interval.error();
    const double save = std::max(costs.blocking_s, costs.persist_s);
    if (interval.value() < save) {
      return Error{"--interval: " + *spec.interval + " is shorter than the save it follows (" +
                   FormatFixed(save, 3) + " s: blocking " + FormatFixed(costs.blocking_s, 3) +
                   " s, persist " + FormatFixed(costs.persist_s, 3) +
                   " s); a save would still run when the next one starts (expected at least " +
                   FormatFixed(save, 3) + "s; the best interval here is " +
                   FormatFixed(result.optimal_s, 1) + "s)"};
    }
    if (interval.value() > 50.0 * result.mttf_s) {
      return Error{"--interval: " + *spec.interval + " is more than 50 times the job's MTTF (" +
                   FormatFixed(result.mttf_s / 3600.0, 3) +
                   " h): hardly a segment would finish (expected an interval near the optimum, " +
                   FormatFixed(result.optimal_s, 1) + "s)"};
    }
    result.interval_s = interval.value();
    result.interval_given = true;
  }
  return Status::Ok();
}

// fp16 loss-scale overflows: each skips an optimizer step (precision/loss_scaler.h,
// PyTorch's GradScaler defaults), drawn per step with the given probability.
Status ResolveSkippedSteps(const GoodputSpec& spec, uint64_t seed, GoodputResult& result) {
  if (!spec.fp16_overflow) return Status::Ok();
  auto probability = ParsePositive("--fp16-overflow-probability", *spec.fp16_overflow,
                                   "a probability per step in (0, 1), e.g. 0.001");
  if (!probability.ok()) return probability.error();
  if (probability.value() >= 1.0) {
    return Error{"--fp16-overflow-probability: must be below 1, got " + *spec.fp16_overflow +
                 " (expected a probability per step in (0, 1), e.g. 0.001)"};
  }
  constexpr int64_t kSteps = 100000;  // enough for a share to 3 decimals at p >= 0.001
  SplitMix64 random(seed);
  std::vector<int64_t> overflows;
  for (int64_t step = 0; step < kSteps; ++step) {
    if (random.NextOpenUnit() < probability.value()) overflows.push_back(step);
  }
  const LossScalingRun run = SimulateLossScaling(TorchGradScalerConfig(), kSteps, overflows);
  result.scaler_steps = run.steps;
  result.skipped_step_share = static_cast<double>(run.skipped) / static_cast<double>(run.steps);
  return Status::Ok();
}

// --spares, --repair-time, --correlated: the spares pool of the Monte Carlo.
Status ResolveSpares(const GoodputSpec& spec, GoodputResult& result) {
  // --repair-time alone also feeds --what-if's interval x spares table (what_if.h).
  if (!spec.monte_carlo &&
      (spec.spares || spec.correlated || (spec.repair_time && !spec.what_if))) {
    return Error{
        "--spares, --repair-time and --correlated: the Monte Carlo's; add "
        "--monte-carlo RUNS (the exact model assumes a spare is always free; --what-if with "
        "--repair-time T adds an interval x spares table)"};
  }
  if (spec.spares) {
    char* end = nullptr;
    const long long value = std::strtoll(spec.spares->c_str(), &end, 10);
    if (spec.spares->empty() || end != spec.spares->c_str() + spec.spares->size() || value < 0 ||
        value > 1000000000) {
      return Error{"--spares: expected a whole number of spare nodes, 0 to 10^9, got '" +
                   *spec.spares + "'"};
    }
    if (!spec.repair_time) {
      return Error{
          "--spares: needs --repair-time T, the time a failed node takes to come back "
          "(e.g. --repair-time 24h)"};
    }
    result.spares = value;
  }
  if (spec.repair_time) {
    if (!spec.spares && !spec.what_if) {
      return Error{"--repair-time: applies to --spares N; give both"};
    }
    auto repair = ParseSeconds("--repair-time", *spec.repair_time);
    if (!repair.ok()) return repair.error();
    result.repair_s = repair.value();
  }
  if (spec.correlated) {
    const std::string& text = *spec.correlated;
    const size_t colon = text.find(':');
    const std::string expected = "SHARE:NODES, e.g. 0.1:4 (a tenth of the failures take 4 nodes)";
    if (colon == std::string::npos) return Error{"--correlated: expected " + expected};
    auto share = ParsePositive("--correlated", text.substr(0, colon), expected);
    if (!share.ok()) return share.error();
    auto nodes = ParsePositive("--correlated", text.substr(colon + 1), expected);
    if (!nodes.ok()) return nodes.error();
    if (share.value() > 1 || nodes.value() != std::floor(nodes.value()) ||
        nodes.value() > static_cast<double>(result.nodes)) {
      return Error{"--correlated: '" + text + "' out of range (expected a share up to 1 and a " +
                   "whole number of nodes up to the job's " + std::to_string(result.nodes) + "; " +
                   expected + ")"};
    }
    if (!spec.spares) return Error{"--correlated: applies to the spares pool; add --spares N"};
    result.correlated_share = share.value();
    result.correlated_nodes = static_cast<int64_t>(nodes.value());
  }
  return Status::Ok();
}

Status RunMonteCarlo(const GoodputSpec& spec, uint64_t seed, GoodputResult& result) {
  if (spec.weibull_shape) {
    auto shape = ParsePositive("--weibull-shape", *spec.weibull_shape,
                               "the Weibull shape k, e.g. 0.7; 1 is exponential");
    if (!shape.ok()) return shape.error();
    if (shape.value() < 0.3 || shape.value() > 5) {
      return Error{"--weibull-shape: " + *spec.weibull_shape +
                   " is outside 0.3 to 5 (below, almost every draw is a failure at once and a "
                   "run hardly finishes; expected e.g. 0.7, or 1 for exponential)"};
    }
    result.weibull_shape = shape.value();
  }
  if (!spec.monte_carlo) return Status::Ok();
  auto runs = ParsePositive("--monte-carlo", *spec.monte_carlo,
                            "a whole number of simulated runs, 1 to 1000000, e.g. 10000");
  if (!runs.ok()) return runs.error();
  if (runs.value() != std::floor(runs.value()) || runs.value() > 1e6) {
    return Error{"--monte-carlo: expected a whole number of simulated runs, 1 to 1000000, got " +
                 *spec.monte_carlo};
  }
  MonteCarloSpec simulation;
  simulation.runs = static_cast<int64_t>(runs.value());
  simulation.seed = seed;
  simulation.work_s = result.days * 86400.0;
  simulation.interval_s = result.interval_s;
  simulation.costs = result.costs;
  simulation.mttf_s = result.mttf_s;
  simulation.weibull_shape = result.weibull_shape;
  simulation.spares = result.spares;
  simulation.repair_s = result.repair_s;
  simulation.correlated_share = result.correlated_share;
  simulation.correlated_nodes = result.correlated_nodes;
  // About wall / M failures per run, each a few draws: keep the whole simulation to seconds.
  const double failures = result.failures * static_cast<double>(simulation.runs);
  constexpr double kMaxFailures = 5e7;
  if (failures > kMaxFailures) {
    return Error{"--monte-carlo: " + *spec.monte_carlo + " runs of " + FormatFixed(result.days, 1) +
                 " days would simulate about " + FormatFixed(failures, 0) +
                 " failures (at most 5e7 keep it to seconds; expected fewer runs or --days)"};
  }
  result.monte_carlo = SimulateFailures(simulation);
  return Status::Ok();
}

// --days, or --tokens at the config's simulated step; and the config's MFU (model FLOPs per
// iteration over the step time x GPUs x peak, as `simulate` defines it) for program goodput.
Status ResolveDays(const GoodputSpec& spec, const ConfigRun* config, GoodputResult& result) {
  if (spec.days && spec.tokens)
    return Error{"--tokens: give the run's length one way: --days or --tokens"};
  if (config != nullptr && config->run.parallel_plan.world_size > 0) {
    const ParallelPlan& plan = config->run.parallel_plan;
    result.step_s = static_cast<double>(config->outcome.metrics.makespan.ns()) / 1e9;
    result.tokens_per_step = static_cast<double>(plan.tokens_per_iteration);
    if (result.step_s > 0 && plan.peak_flops_per_device > 0) {
      result.mfu = plan.model_flops_per_iteration /
                   (result.step_s * plan.world_size * plan.peak_flops_per_device);
    }
  }
  if (spec.tokens) {
    if (result.step_s <= 0 || result.tokens_per_step <= 0) {
      return Error{
          "--tokens: needs a CONFIG of a transformer or layer-list model (its simulated "
          "step gives the tokens per second); or give --days"};
    }
    const std::string& text = *spec.tokens;
    double scale = 1;
    std::string number = text;
    const std::string suffixes = "KMBT";
    if (!text.empty() && suffixes.find(text.back()) != std::string::npos) {
      scale = std::pow(1e3, static_cast<double>(suffixes.find(text.back()) + 1));
      number = text.substr(0, text.size() - 1);
    }
    auto tokens = ParsePositive("--tokens", number, "tokens to train on, e.g. 15.6T or 2e12");
    if (!tokens.ok()) return tokens.error();
    result.tokens = tokens.value() * scale;
    result.days = result.tokens / result.tokens_per_step * result.step_s / 86400.0;
    if (result.days > 3650) {
      return Error{"--tokens: " + text + " take " + FormatFixed(result.days, 0) +
                   " days of failure-free training at this step; expected at most 3650"};
    }
  }
  if (spec.days) {
    auto days = ParsePositive("--days", *spec.days, "days of failure-free training, e.g. 54");
    if (!days.ok()) return days.error();
    if (days.value() > 3650) return Error{"--days: expected at most 3650 days, got " + *spec.days};
    result.days = days.value();
  }
  return Status::Ok();
}

Result<uint64_t> ParseSeed(const std::optional<std::string>& text) {
  if (!text) return uint64_t{1};
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text->c_str(), &end, 10);
  if (text->empty() || (*text)[0] == '-' || end != text->c_str() + text->size()) {
    return Error{"--seed: '" + *text + "' is not a whole number (expected 0 to 2^64-1)"};
  }
  return static_cast<uint64_t>(value);
}

}  // namespace

Result<GoodputResult> ComputeGoodput(const GoodputSpec& spec) {
  GoodputResult result;
  std::optional<ConfigRun> config;
  if (!spec.config_path.empty()) {
    RunSpec flags;
    flags.config_path = spec.config_path;
    flags.files = spec.files;
    auto prepared = PrepareRun(flags);
    if (!prepared.ok()) return prepared.error();
    auto simulated = SimulatePrepared(prepared.value());
    if (!simulated.ok()) return simulated.error();
    config = ConfigRun{std::move(prepared).value(), std::move(simulated).value()};
  }
  const ConfigRun* config_run = config ? &*config : nullptr;
  STAGECRAFT_RETURN_IF_ERROR(ResolveGpus(spec, config_run ? &config_run->run : nullptr, result));
  STAGECRAFT_RETURN_IF_ERROR(ResolveMttf(spec, result));
  STAGECRAFT_RETURN_IF_ERROR(ResolveCosts(spec, config_run, result));
  // Past R + delta = 10 M the job almost never gets back to training (e^((R + delta)/M) restarts
  // per segment, 22,026 at 10 M); Daly 2006's own examples reach R + delta = M.
  const double outage = result.costs.restart_s + result.costs.blocking_s;
  if (outage > 10.0 * result.mttf_s) {
    return Error{"goodput: the restart and the save (" + FormatFixed(outage, 1) +
                 " s) are more than 10 times the job's MTTF (" + FormatFixed(result.mttf_s, 1) +
                 " s): the run would hardly ever train (expected an MTTF well above them; check "
                 "the rate, --gpus and --restart)"};
  }
  STAGECRAFT_RETURN_IF_ERROR(ResolveInterval(spec, result));
  STAGECRAFT_RETURN_IF_ERROR(ResolveDays(spec, config_run, result));
  auto seed = ParseSeed(spec.seed);
  if (!seed.ok()) return seed.error();
  result.ettr = ExactEttr(result.interval_s, result.costs, result.mttf_s);
  result.shares = ExactWasteShares(result.interval_s, result.costs, result.mttf_s);
  result.wall_days = result.days / result.ettr;
  result.failures = result.wall_days * 86400.0 / result.mttf_s;
  if (!result.trace_s.empty()) {
    result.trace_ettr = ReplayTraceEttr(result.trace_s, result.interval_s, result.costs);
  }
  STAGECRAFT_RETURN_IF_ERROR(ResolveSkippedSteps(spec, seed.value(), result));
  STAGECRAFT_RETURN_IF_ERROR(ResolveSpares(spec, result));
  STAGECRAFT_RETURN_IF_ERROR(RunMonteCarlo(spec, seed.value(), result));
  return result;
}

}  // namespace stagecraft
