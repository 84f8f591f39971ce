// `plan --layout SPEC`: the user's own layout, read from its "key value" text, simulated as the
// planner simulates its candidates, and ranked among the fitting plans (doc/plan.md, "Your
// layout against the plan").
#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>

#include "core/suggest.h"
#include "plan/plan.h"
#include "plan/plan_rules.h"
#include "report/summary.h"
#include "run/simulate.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace {

constexpr int32_t kLargestDegree = 1000000;

const std::vector<std::string>& LayoutKeys() {
  static const std::vector<std::string> kKeys = {
      "engine", "tp", "pp", "vpp", "cp", "ep", "dp", "mbs", "schedule", "recompute", "zero"};
  return kKeys;
}

Error LayoutError(const std::string& what) {
  return MakeError(ErrorKind::kBadInput,
                   "--layout: " + what +
                       " (expected \"key value\" pairs of engine, tp, pp, vpp, cp, ep, dp, mbs, "
                       "schedule, recompute and zero, e.g. --layout \"tp 8 pp 4 vpp 2\")");
}

Result<int32_t> Degree(const std::string& key, const std::string& value, int32_t minimum) {
  int32_t number = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (error != std::errc() || end != value.data() + value.size() || number < minimum ||
      number > kLargestDegree) {
    return LayoutError(key + " '" + EscapeBytes(value) + "' is not a whole number from " +
                       std::to_string(minimum) + " to " + std::to_string(kLargestDegree));
  }
  return number;
}

}  // namespace

Time PlannedLayout::BubbleTime() const {
  return Time::Nanoseconds(std::llround(static_cast<double>(step.ns()) * bubble_pipeline));
}

Time PlannedLayout::ExposedTime() const {
  return Time::Nanoseconds(std::llround(static_cast<double>(step.ns()) * bubble_exposed));
}

Time PlannedLayout::RecomputeTime() const {
  const double busy = static_cast<double>(step.ns()) * (1.0 - bubble_pipeline - bubble_exposed);
  return Time::Nanoseconds(std::llround(std::max(0.0, busy) * recompute_share));
}

PlannedLayout PlannedOf(const Candidate& candidate, const RunOutcome& outcome) {
  PlannedLayout plan;
  plan.candidate = candidate;
  const Throughput rate = ThroughputOf(outcome.info, outcome.metrics);
  const double device_time = static_cast<double>(outcome.metrics.makespan.ns()) *
                             static_cast<double>(std::max<size_t>(1, outcome.metrics.ranks.size()));
  const BubbleSplit& split = outcome.metrics.bubble;
  const Time exposed = split.exposed_collectives + split.exposed_p2p + split.exposed_state;
  plan.step = outcome.metrics.makespan;
  plan.tokens_per_s = rate.tokens_per_s;
  plan.mfu = rate.mfu;
  plan.tflops_per_gpu = rate.tflops_per_gpu;
  plan.bubble_pipeline =
      device_time > 0 ? static_cast<double>(split.pipeline.ns()) / device_time : 0.0;
  plan.bubble_exposed = device_time > 0 ? static_cast<double>(exposed.ns()) / device_time : 0.0;
  const RunInfo& info = outcome.info;
  plan.recompute_share =
      info.hardware_flops_per_iteration > 0
          ? std::clamp(1.0 - info.model_flops_per_iteration / info.hardware_flops_per_iteration,
                       0.0, 1.0)
          : 0.0;
  plan.memory = info.memory;
  return plan;
}

Result<Candidate> ParseLayoutSpec(const std::string& text, const PlanSpec& spec) {
  std::string spaced = text;
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  std::istringstream words(spaced);
  std::map<std::string, std::string> given;
  std::string key;
  while (words >> key) {
    const std::vector<std::string>& keys = LayoutKeys();
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      return LayoutError("unknown key '" + EscapeBytes(key) + "'" + DidYouMean(key, keys));
    }
    std::string value;
    if (!(words >> value)) return LayoutError(key + " has no value");
    if (!given.emplace(key, value).second) return LayoutError(key + " given twice");
  }
  if (given.empty()) return LayoutError("no layout given");
  Candidate c;
  c.engine = spec.engine;
  if (const auto found = given.find("engine"); found != given.end()) {
    auto engine = ParseEngine(found->second, "--layout engine");
    if (!engine.ok()) return engine.error();
    c.engine = engine.value();
  }
  if (c.engine == Engine::kAny) {
    return LayoutError(
        "no engine: name one (engine megatron, torchtitan or deepspeed) or give "
        "--engine");
  }
  if (spec.engine != Engine::kAny && c.engine != spec.engine) {
    return LayoutError(std::string("engine ") + EngineName(c.engine) + " where --engine is " +
                       EngineName(spec.engine));
  }
  const struct {
    const char* key;
    int32_t minimum;
    int32_t* into;
  } degrees[] = {{"tp", 1, &c.tp},          {"pp", 1, &c.pp}, {"vpp", 1, &c.vpp},
                 {"cp", 1, &c.cp},          {"ep", 1, &c.ep}, {"mbs", 1, &c.micro_batch_size},
                 {"zero", 0, &c.zero_stage}};
  c.zero_stage = -1;  // the engine's default, below
  for (const auto& degree : degrees) {
    const auto found = given.find(degree.key);
    if (found == given.end()) continue;
    auto value = Degree(degree.key, found->second, degree.minimum);
    if (!value.ok()) return value.error();
    *degree.into = value.value();
  }
  const int64_t model_parallel = int64_t{c.tp} * c.pp * c.cp;
  if (const auto found = given.find("dp"); found != given.end()) {
    auto value = Degree("dp", found->second, 1);
    if (!value.ok()) return value.error();
    c.dp = value.value();
  } else if (model_parallel > 0 && spec.gpus % model_parallel == 0) {
    c.dp = static_cast<int32_t>(spec.gpus / model_parallel);
  }
  if (model_parallel * c.dp != spec.gpus) {
    return LayoutError("tp x pp x cp x dp = " + std::to_string(model_parallel * c.dp) +
                       " is not --gpus " + std::to_string(spec.gpus));
  }
  const int64_t per_step = int64_t{c.dp} * c.micro_batch_size;
  if (spec.global_batch % per_step != 0) {
    return LayoutError("dp x mbs = " + std::to_string(per_step) +
                       " does not divide --global-batch-size " + std::to_string(spec.global_batch));
  }
  c.microbatches = static_cast<int32_t>(spec.global_batch / per_step);
  c.schedule = c.pp > 1 && c.vpp > 1 ? "interleaved-1f1b" : "1f1b";
  if (const auto found = given.find("schedule"); found != given.end()) {
    const std::vector<std::string> names = AllScheduleNames();
    if (std::find(names.begin(), names.end(), found->second) == names.end()) {
      return LayoutError("unknown schedule '" + EscapeBytes(found->second) + "'" +
                         DidYouMean(found->second, names));
    }
    c.schedule = found->second;
  }
  if (const auto found = given.find("recompute"); found != given.end()) {
    const std::optional<Recompute> mode = kRecomputeNames.Parse(found->second);
    if (!mode) {
      return LayoutError("unknown recompute '" + EscapeBytes(found->second) + "'" +
                         kRecomputeNames.DidYouMean(found->second));
    }
    c.recompute = *mode;
  }
  if (c.zero_stage < 0) {
    // The planner's recipes: Megatron's distributed optimizer, FSDP2 over dp x cp for
    // torchtitan, ZeRO-1 for DeepSpeed (its pipeline engine allows no more); nothing to shard
    // over one data-parallel rank.
    c.zero_stage = int64_t{c.dp} * c.cp == 1 ? 0 : c.engine == Engine::kTorchtitan ? 3 : 1;
  }
  return c;
}

Result<LayoutRanking> RankLayout(const PlanSpec& spec, const RunSpec& run,
                                 const PlanResult& result) {
  auto parsed = ParseLayoutSpec(spec.layout, spec);
  if (!parsed.ok()) return parsed.error();
  LayoutRanking ranking;
  ranking.candidate = parsed.value();
  ranking.broken = BrokenRule(ranking.candidate, spec, PlanShapeOf(result.config));
  if (ranking.broken.empty()) {
    auto outcome = SimulateSpec(CandidateRun(run, ranking.candidate));
    if (outcome.ok()) {
      ranking.simulated = true;
      ranking.planned = PlannedOf(ranking.candidate, outcome.value());
      const MemoryInfo& memory = ranking.planned.memory;
      ranking.fits =
          !memory.capacity_known ||
          memory.peak_bytes <= static_cast<double>(memory.capacity_bytes) * (1.0 - spec.headroom);
    } else {
      ranking.failure = outcome.error().message;
    }
  }
  // Ranked among layouts, not splits: each simulated layout (LayoutKey) counts once, at its
  // fastest split; the given layout's own other splits do not count against it.
  const std::string given = ranking.candidate.LayoutKey();
  std::map<std::string, Time> fastest;  // layout -> its fastest simulated split
  for (const PlannedLayout& plan : result.all_fitting) {
    const auto [at, inserted] = fastest.emplace(plan.candidate.LayoutKey(), plan.step);
    if (!inserted && plan.step < at->second) at->second = plan.step;
  }
  int32_t faster = 0;
  for (const auto& [layout, step] : fastest) {
    if (ranking.simulated && layout != given && step < ranking.planned.step) ++faster;
  }
  const bool listed = fastest.count(given) > 0;
  ranking.ranked = static_cast<int32_t>(fastest.size()) + (ranking.fits && !listed ? 1 : 0);
  ranking.rank = ranking.fits ? faster + 1 : 0;
  return ranking;
}

}  // namespace stagecraft
