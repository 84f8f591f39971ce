#include "fault/goodput.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
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

// A value as a flag would give it: whole numbers in full ("1000000"), else 6 significant
// digits ("1.5", "2e-05").
std::string Shortest(double value) {
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  std::array<char, 32> text{};
  const auto written =
      std::to_chars(text.data(), text.data() + text.size(), value, std::chars_format::general, 6);
  return std::string(text.data(), written.ptr);
}

// A duration as a flag would give it: whole hours as "1000h", whole minutes as "3min", else
// seconds ("30s", "0.6s").
std::string ShortestDuration(double seconds) {
  for (const auto& [unit, length] : {std::pair<const char*, double>{"h", 3600.0}, {"min", 60.0}}) {
    if (seconds >= length && std::fmod(seconds, length) == 0) {
      return Shortest(seconds / length) + unit;
    }
  }
  return Shortest(seconds) + "s";
}

// Tokens with --tokens' suffixes: "15.6T", "500B".
std::string ShortestTokens(double tokens) {
  const std::string suffixes = "KMBT";
  for (size_t index = suffixes.size(); index > 0; --index) {
    const double scale = std::pow(1e3, static_cast<double>(index));
    if (tokens >= scale) return Shortest(tokens / scale) + suffixes[index - 1];
  }
  return Shortest(tokens);
}

// One input's range, for the checks below; `above` excludes the low end.
struct Range {
  const char* flag;
  std::optional<double> value;
  double low;
  double high;
  bool above = false;
};

std::optional<double> AsDouble(const std::optional<int64_t>& value) {
  if (!value) return std::nullopt;
  return static_cast<double>(*value);
}

// Every input in its range (the command's parser checks the same with the flag's text; this
// catches a caller that built the inputs itself): "--gpus-per-node: 0 is out of range
// (expected 1 to 1000000)". NaN is out of every range.
Status CheckRanges(const GoodputInputs& in) {
  const double longest = kMaxGoodputDurationS;
  const std::vector<Range> ranges = {
      {"--gpus", AsDouble(in.gpus), 1, static_cast<double>(kMaxGoodputGpus)},
      {"--gpus-per-node", AsDouble(in.gpus_per_node), 1, static_cast<double>(kMaxGpusPerNode)},
      {"--failures-per-1000-node-days", in.failures_per_1000_node_days, kMinFailuresPer1000NodeDays,
       kMaxFailuresPer1000NodeDays},
      {"--mtbf-hours", in.mtbf_hours, 0, kMaxMtbfHours, true},
      {"--checkpoint-blocking", in.checkpoint_blocking_s, 0, longest, true},
      {"--checkpoint-persist", in.checkpoint_persist_s, 0, longest},
      {"--restart", in.restart_s, 0, longest},
      {"--detection", in.detection_s, 0, longest},
      {"--reschedule", in.reschedule_s, 0, longest},
      {"--init", in.init_s, 0, longest},
      {"--load", in.load_s, 0, longest},
      {"--warmup", in.warmup_s, 0, longest},
      {"--interval", in.interval_s, 0, longest, true},
      {"--tokens", in.tokens, 0, kMaxGoodputTokens, true},
      {"--days", in.days, 0, kMaxGoodputDays, true},
      {"--monte-carlo", AsDouble(in.monte_carlo_runs), 1, static_cast<double>(kMaxMonteCarloRuns)},
      {"--weibull-shape", in.weibull_shape, kMinWeibullShape, kMaxWeibullShape},
      {"--spares", AsDouble(in.spares), 0, static_cast<double>(kMaxSpareNodes)},
      {"--repair-time", in.repair_s, 0, longest},
  };
  for (const Range& range : ranges) {
    if (!range.value) continue;
    const double value = *range.value;
    const bool low_ok = range.above ? value > range.low : value >= range.low;
    if (!low_ok || !(value <= range.high)) {
      return Error{std::string(range.flag) + ": " + Shortest(value) +
                   " is out of range (expected " + (range.above ? "above " : "") +
                   Shortest(range.low) + (range.above ? ", at most " : " to ") +
                   Shortest(range.high) + ")"};
    }
  }
  if (!(in.fp16_overflow_probability >= 0 && in.fp16_overflow_probability < 1)) {
    return Error{"--fp16-overflow-probability: " + Shortest(in.fp16_overflow_probability) +
                 " is out of range (expected a probability per step below 1)"};
  }
  if (in.correlated && !(in.correlated->share > 0 && in.correlated->nodes >= 1)) {
    return Error{"--correlated: " + Shortest(in.correlated->share) + ":" +
                 std::to_string(in.correlated->nodes) +
                 " is out of range (expected a share above 0 and at least 1 node)"};
  }
  if (in.failure_trace_s) {
    const std::vector<double>& times = *in.failure_trace_s;
    for (size_t index = 0; index < times.size(); ++index) {
      if (!(times[index] > (index == 0 ? 0.0 : times[index - 1])) || !std::isfinite(times[index])) {
        return Error{"--failure-trace: failure " + std::to_string(index + 1) + " at " +
                     Shortest(times[index]) +
                     " s is not after the one before it (expected times above zero, "
                     "increasing)"};
      }
    }
    if (times.empty()) return Error{"--failure-trace: holds no failure times"};
  }
  return Status::Ok();
}

// The GPUs of the job and of a node: the inputs first, then the config's layout.
Status ResolveGpus(const GoodputInputs& in, const PreparedRun* run, GoodputResult& result) {
  if (run != nullptr) {
    const Config& config = run->config;
    const ParallelSpec& parallel = config.parallel;
    result.gpus = static_cast<int64_t>(parallel.pp) * parallel.tp * parallel.dp * parallel.cp;
    if (config.cluster.given) result.gpus_per_node = config.cluster.devices_per_node;
  }
  if (in.gpus) result.gpus = *in.gpus;
  if (in.gpus_per_node) result.gpus_per_node = *in.gpus_per_node;
  // Unknown (0) is fine until an answer needs it (NeedJobSize): the job's own MTBF makes the
  // interval and the ETTR independent of the size.
  if (result.gpus > 0) {
    result.nodes = (result.gpus + result.gpus_per_node - 1) / result.gpus_per_node;
  }
  return Status::Ok();
}

// An answer that depends on the job's size, asked for while it is unknown: `what` says which.
Status NeedJobSize(const GoodputResult& result, const std::string& what) {
  if (result.gpus > 0) return Status::Ok();
  return Error{"goodput: the job's size is unknown and " + what +
               ": give --gpus N or a CONFIG (e.g. 'stagecraft goodput --gpus 16384 "
               "--checkpoint-blocking 0.6s --restart 189s'), or the job's own --mtbf-hours H, "
               "which needs no size"};
}

// The job's mean time to failure from one of the four ways of giving it. A failure trace's
// MTTF is its last time over the count.
Status ResolveMttf(const GoodputInputs& in, GoodputResult& result) {
  const int given = (in.failures_per_1000_node_days ? 1 : 0) + (in.mtbf_hours ? 1 : 0) +
                    (in.failure_preset ? 1 : 0) + (in.failure_trace_s ? 1 : 0);
  if (given > 1) {
    return Error{
        "goodput: give the failure rate one way: --failures-per-1000-node-days, "
        "--mtbf-hours, --failure-preset or --failure-trace (got " +
        std::to_string(given) + ")"};
  }
  if (in.failure_trace_s) {
    result.trace_s = *in.failure_trace_s;
    result.rate_source = "--failure-trace, " + std::to_string(result.trace_s.size()) +
                         " failures in " + FormatFixed(result.trace_s.back() / 3600.0, 1) + " h";
    result.mttf_s = result.trace_s.back() / static_cast<double>(result.trace_s.size());
    return Status::Ok();
  }
  if (in.mtbf_hours) {
    result.rate_source = "--mtbf-hours";
    result.mttf_s = *in.mtbf_hours * 3600.0;
    return Status::Ok();
  }
  STAGECRAFT_RETURN_IF_ERROR(NeedJobSize(
      result, in.failures_per_1000_node_days
                  ? std::string("--failures-per-1000-node-days gives the job's failures by "
                                "its nodes")
                  : "the failure rate (the preset '" +
                        std::string(in.failure_preset ? in.failure_preset->name : "llama3-405b") +
                        "', per 1000 node-days) gives the job's failures by its nodes"));
  if (in.failures_per_1000_node_days) {
    result.rate_source = "--failures-per-1000-node-days";
    result.per_1000_node_days = *in.failures_per_1000_node_days;
  } else {
    const FailureRatePreset preset =
        in.failure_preset ? *in.failure_preset : FindFailureRatePreset("llama3-405b").value();
    result.rate_source = preset.name;
    result.per_1000_node_days = preset.PerThousandNodeDays();
    int64_t named = 0;
    for (const auto& [cause, count] : preset.causes) {
      result.causes.emplace_back(cause, count);
      named += count;
    }
    const int64_t total = std::llround(preset.failures);
    if (!result.causes.empty() && total > named) result.causes.emplace_back("other", total - named);
  }
  result.mttf_s = JobMttfHours(result.per_1000_node_days, result.nodes) * 3600.0;
  return Status::Ok();
}

// --storage: the save and load costs of the config's checkpoint (fault/storage.h).
Status ResolveStorageCosts(const GoodputInputs& in, const ConfigRun* config,
                           GoodputResult& result) {
  if (config == nullptr) {
    return Error{
        "--storage: needs a CONFIG (the checkpoint's bytes come from its layout), e.g. "
        "'stagecraft goodput tests/golden/data/llama-3-405b.yaml --storage tectonic "
        "--restart 60s'"};
  }
  if (in.checkpoint_blocking_s || in.checkpoint_persist_s) {
    return Error{
        "--storage: computes the save's blocking and persist times; drop "
        "--checkpoint-blocking and --checkpoint-persist (or --storage)"};
  }
  const StorageTier& tier = *in.storage;
  const PreparedRun* run = &config->run;
  const MemoryReport memory = ComputeMemory(*run, config->outcome);
  if (!memory.verdict.states_known || memory.ranks.empty()) {
    return Error{"--storage: the model states of " + run->label +
                 " are not derived (model.type transformer or layers is needed)"};
  }
  auto manifest = BuildManifest(*run, memory, {});
  if (!manifest.ok()) return manifest.error();
  const SaveCosts save =
      EstimateSaveCosts(manifest.value(), run->config.cluster, result.nodes, tier, in.sync_save);
  result.storage = save;
  result.storage_tier = tier.name;
  result.costs.blocking_s = save.blocking_s;
  result.costs.persist_s = save.persist_s;
  return Status::Ok();
}

// The restart: --restart whole, or its parts (Llama 3 §3.3.4 and MegaScale §5 name them:
// detection, rescheduling onto healthy nodes, initialization, the checkpoint's load, warm-up).
Status ResolveRestart(const GoodputInputs& in, GoodputResult& result) {
  const std::vector<std::pair<const char*, const std::optional<double>*>> parts = {
      {"--detection", &in.detection_s},
      {"--reschedule", &in.reschedule_s},
      {"--init", &in.init_s},
      {"--load", &in.load_s},
      {"--warmup", &in.warmup_s}};
  bool any_part = false;
  for (const auto& [flag, value] : parts) {
    if (!value->has_value()) continue;
    if (in.restart_s) {
      return Error{std::string(flag) +
                   ": a part of the restart; give --restart (the whole) or "
                   "its parts (--detection, --reschedule, --init, --load, --warmup), not both"};
    }
    if (in.storage && std::string(flag) == "--load") {
      return Error{"--load: --storage computes the load; drop one of them"};
    }
    result.costs.restart_s += **value;
    result.restart_parts.push_back({std::string(flag).substr(2), **value});
    any_part = true;
  }
  if (any_part) return Status::Ok();
  if (!in.restart_s) {
    return Error{
        "goodput: missing --restart (the time from a failure to training again: "
        "detection, rescheduling, initialization, load; e.g. --restart 189s, or its parts "
        "--detection, --reschedule, --init, --load, --warmup)"};
  }
  result.costs.restart_s = *in.restart_s;
  return Status::Ok();
}

Status ResolveCosts(const GoodputInputs& in, const ConfigRun* run, GoodputResult& result) {
  STAGECRAFT_RETURN_IF_ERROR(ResolveRestart(in, result));
  if (in.storage) {
    STAGECRAFT_RETURN_IF_ERROR(ResolveStorageCosts(in, run, result));
    if (result.restart_parts.empty())
      result.restart_parts.push_back({"rest", result.costs.restart_s});
    result.restart_parts.push_back({"load", result.storage->load_s});
    result.costs.restart_s += result.storage->load_s;  // --restart is the rest of the restart
    return Status::Ok();
  }
  if (in.sync_save) {
    return Error{
        "--sync-save: chooses how --storage saves; with --checkpoint-blocking give the "
        "whole save as blocking instead"};
  }
  if (!in.checkpoint_blocking_s) {
    return Error{
        "goodput: missing --checkpoint-blocking (the time a save stops training, e.g. "
        "--checkpoint-blocking 0.6s) or --storage with a CONFIG"};
  }
  result.costs.blocking_s = *in.checkpoint_blocking_s;
  result.costs.persist_s = in.checkpoint_persist_s.value_or(0.0);
  return Status::Ok();
}

Status ResolveInterval(const GoodputInputs& in, GoodputResult& result) {
  const double mttf = result.mttf_s;
  const CheckpointCosts& costs = result.costs;
  result.young_s = YoungInterval(costs.blocking_s, mttf);
  result.daly_first_s = DalyFirstOrderInterval(costs.blocking_s, mttf, costs.restart_s);
  result.daly_higher_s = DalyHigherOrderInterval(costs.blocking_s, mttf);
  result.optimal_s = ExactOptimalInterval(costs, mttf, costs.persist_s);
  result.interval_s = result.optimal_s;
  if (!in.interval_s) return Status::Ok();
  const double interval = *in.interval_s;
  const double save = std::max(costs.blocking_s, costs.persist_s);
  if (interval < save) {
    return Error{"--interval: " + ShortestDuration(interval) +
                 " is shorter than the save it follows (" + FormatFixed(save, 3) + " s: blocking " +
                 FormatFixed(costs.blocking_s, 3) + " s, persist " +
                 FormatFixed(costs.persist_s, 3) +
                 " s); a save would still run when the next one starts (expected at least " +
                 FormatFixed(save, 3) + "s; the best interval here is " +
                 FormatFixed(result.optimal_s, 1) + "s)"};
  }
  if (interval > 50.0 * result.mttf_s) {
    return Error{"--interval: " + ShortestDuration(interval) +
                 " is more than 50 times the job's MTTF (" +
                 FormatFixed(result.mttf_s / 3600.0, 3) +
                 " h): hardly a segment would finish (expected an interval near the optimum, " +
                 FormatFixed(result.optimal_s, 1) + "s)"};
  }
  result.interval_s = interval;
  result.interval_given = true;
  return Status::Ok();
}

// fp16 loss-scale overflows: each skips an optimizer step (precision/loss_scaler.h,
// PyTorch's GradScaler defaults), drawn per step with the given probability.
void ResolveSkippedSteps(const GoodputInputs& in, GoodputResult& result) {
  if (in.fp16_overflow_probability <= 0) return;
  constexpr int64_t kSteps = 100000;  // enough for a share to 3 decimals at p >= 0.001
  SplitMix64 random(in.seed);
  std::vector<int64_t> overflows;
  for (int64_t step = 0; step < kSteps; ++step) {
    if (random.NextOpenUnit() < in.fp16_overflow_probability) overflows.push_back(step);
  }
  const LossScalingRun run = SimulateLossScaling(TorchGradScalerConfig(), kSteps, overflows);
  result.scaler_steps = run.steps;
  result.skipped_step_share = static_cast<double>(run.skipped) / static_cast<double>(run.steps);
}

// --spares, --repair-time, --correlated: the spares pool of the Monte Carlo.
Status ResolveSpares(const GoodputInputs& in, GoodputResult& result) {
  // --repair-time alone also feeds --what-if's interval x spares table (what_if.h).
  if (!in.monte_carlo_runs && (in.spares || in.correlated || (in.repair_s && !in.what_if))) {
    return Error{
        "--spares, --repair-time and --correlated: the Monte Carlo's; add "
        "--monte-carlo RUNS (the exact model assumes a spare is always free; --what-if with "
        "--repair-time T adds an interval x spares table)"};
  }
  if (in.spares) {
    if (!in.repair_s) {
      return Error{
          "--spares: needs --repair-time T, the time a failed node takes to come back "
          "(e.g. --repair-time 24h)"};
    }
    result.spares = *in.spares;
  }
  if (in.repair_s) {
    if (!in.spares && !in.what_if) {
      return Error{"--repair-time: applies to --spares N; give both"};
    }
    result.repair_s = *in.repair_s;
  }
  if (in.correlated) {
    STAGECRAFT_RETURN_IF_ERROR(
        NeedJobSize(result, "--correlated takes down a number of the job's nodes"));
    const CorrelatedFailures& correlated = *in.correlated;
    if (correlated.share > 1 || correlated.nodes > result.nodes) {
      return Error{"--correlated: '" + Shortest(correlated.share) + ":" +
                   std::to_string(correlated.nodes) +
                   "' out of range (expected a share up to 1 and a whole number of nodes up to "
                   "the job's " +
                   std::to_string(result.nodes) +
                   "; SHARE:NODES, e.g. 0.1:4 (a tenth of the failures take 4 nodes))"};
    }
    if (!in.spares) return Error{"--correlated: applies to the spares pool; add --spares N"};
    result.correlated_share = correlated.share;
    result.correlated_nodes = correlated.nodes;
  }
  return Status::Ok();
}

Status RunMonteCarlo(const GoodputInputs& in, GoodputResult& result) {
  result.weibull_shape = in.weibull_shape;
  if (!in.monte_carlo_runs) return Status::Ok();
  MonteCarloSpec simulation;
  simulation.runs = *in.monte_carlo_runs;
  simulation.seed = in.seed;
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
    return Error{"--monte-carlo: " + std::to_string(simulation.runs) + " runs of " +
                 FormatFixed(result.days, 1) + " days would simulate about " +
                 FormatFixed(failures, 0) +
                 " failures (at most 5e7 keep it to seconds; expected fewer runs or --days)"};
  }
  result.monte_carlo = SimulateFailures(simulation);
  return Status::Ok();
}

// --days, or --tokens at the config's simulated step; and the config's MFU (model FLOPs per
// iteration over the step time x GPUs x peak, as `simulate` defines it) for program goodput.
Status ResolveDays(const GoodputInputs& in, const ConfigRun* config, GoodputResult& result) {
  if (in.days && in.tokens)
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
  if (in.tokens) {
    if (result.step_s <= 0 || result.tokens_per_step <= 0) {
      return Error{
          "--tokens: needs a CONFIG of a transformer or layer-list model (its simulated "
          "step gives the tokens per second); or give --days"};
    }
    result.tokens = *in.tokens;
    result.days = result.tokens / result.tokens_per_step * result.step_s / 86400.0;
    if (result.days > kMaxGoodputDays) {
      return Error{"--tokens: " + ShortestTokens(result.tokens) + " take " +
                   FormatFixed(result.days, 0) +
                   " days of failure-free training at this step; expected at most 3650"};
    }
  }
  if (in.days) result.days = *in.days;
  return Status::Ok();
}

}  // namespace

Result<GoodputResult> ComputeGoodput(const GoodputInputs& in) {
  STAGECRAFT_RETURN_IF_ERROR(CheckRanges(in));
  GoodputResult result;
  std::optional<ConfigRun> config;
  if (!in.config_path.empty()) {
    RunSpec flags;
    flags.config_path = in.config_path;
    flags.files = in.files;
    auto prepared = PrepareRun(flags);
    if (!prepared.ok()) return prepared.error();
    auto simulated = SimulatePrepared(prepared.value());
    if (!simulated.ok()) return simulated.error();
    config = ConfigRun{std::move(prepared).value(), std::move(simulated).value()};
  }
  const ConfigRun* config_run = config ? &*config : nullptr;
  STAGECRAFT_RETURN_IF_ERROR(ResolveGpus(in, config_run ? &config_run->run : nullptr, result));
  STAGECRAFT_RETURN_IF_ERROR(ResolveMttf(in, result));
  STAGECRAFT_RETURN_IF_ERROR(ResolveCosts(in, config_run, result));
  // Past R + delta = 10 M the job almost never gets back to training (e^((R + delta)/M) restarts
  // per segment, 22,026 at 10 M); Daly 2006's own examples reach R + delta = M.
  const double outage = result.costs.restart_s + result.costs.blocking_s;
  if (outage > 10.0 * result.mttf_s) {
    return Error{"goodput: the restart and the save (" + FormatFixed(outage, 1) +
                 " s) are more than 10 times the job's MTTF (" + FormatFixed(result.mttf_s, 1) +
                 " s): the run would hardly ever train (expected an MTTF well above them; check "
                 "the rate, --gpus and --restart)"};
  }
  STAGECRAFT_RETURN_IF_ERROR(ResolveInterval(in, result));
  STAGECRAFT_RETURN_IF_ERROR(ResolveDays(in, config_run, result));
  result.ettr = ExactEttr(result.interval_s, result.costs, result.mttf_s);
  result.shares = ExactWasteShares(result.interval_s, result.costs, result.mttf_s);
  result.wall_days = result.days / result.ettr;
  result.failures = result.wall_days * 86400.0 / result.mttf_s;
  if (!result.trace_s.empty()) {
    result.trace_ettr = ReplayTraceEttr(result.trace_s, result.interval_s, result.costs);
  }
  ResolveSkippedSteps(in, result);
  STAGECRAFT_RETURN_IF_ERROR(ResolveSpares(in, result));
  STAGECRAFT_RETURN_IF_ERROR(RunMonteCarlo(in, result));
  return result;
}

}  // namespace stagecraft
