#include "plan/plan.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "hardware/presets.h"
#include "plan/plan_rules.h"
#include "plan/plan_search.h"
#include "plan/work_split.h"
#include "report/summary.h"
#include "run/simulate.h"
#include "schedule/generator.h"
#include "schedule/partition.h"

namespace stagecraft {

Result<Engine> ParseEngine(const std::string& name, const std::string& flag) {
  if (const auto engine = kEngineNames.Parse(name)) return *engine;
  return Error{flag + ": unknown engine '" + name + "'" + kEngineNames.DidYouMean(name) +
               " (expected " + kEngineNames.Joined() + ")"};
}

std::vector<int32_t> Candidate::StageCounts(int32_t layers) const {
  if (!layout_counts.empty()) return layout_counts;
  if (first_stage_layers > 0 && pp >= 3 && vpp == 1) {
    std::vector<int32_t> counts(static_cast<size_t>(pp), MiddleStageLayers(layers));
    counts.front() = first_stage_layers + 1;  // and the embedding
    counts.back() = last_stage_layers + 1;    // and the head
    return counts;
  }
  const int32_t stages = std::max(1, pp * vpp);
  if (engine == Engine::kTorchtitan && stages > 1 && layers >= stages) {
    // torchtitan's own splitter, with the less-layers weights the export writes.
    auto counts = TorchtitanTransformerCounts(layers, stages, first_less, last_less);
    if (counts.ok()) return std::move(counts).value();
  }
  if (engine == Engine::kDeepSpeed && stages > 1 && layers >= stages) {
    // DeepSpeed's pipeline model splits itself (partition_method 'type:transformer').
    return DeepSpeedTransformerCounts(layers, stages);
  }
  return EvenTransformerCounts(layers, stages);  // Megatron's default split
}

void Candidate::ApplyTo(Config& config) const {
  ParallelSpec& p = config.parallel;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.cp = cp;
  p.ep = ep;
  p.vpp = vpp;
  p.microbatches = microbatches;
  p.recompute = recompute;
  p.recompute_num_layers = recompute == Recompute::kFull ? recompute_num_layers : 0;
  p.recompute_method = recompute_uniform ? RecomputeMethod::kUniform : RecomputeMethod::kBlock;
  config.model.micro_batch_size = micro_batch_size;
  config.schedule.name = schedule;
  config.schedule.group_size = 0;
  p.layout.clear();
  if (layer_list) {
    p.partition = partition;
    p.layer_counts.clear();
    config.schedule.state_policy = state_policy;
  } else {
    p.partition = PartitionMethod::kCounts;
    p.layer_counts = StageCounts(config.model.transformer.layers);
  }
  p.placement = Placement::kLoop;
  const bool data_parallel = dp * cp > 1;
  p.sequence_parallel = tp > 1 && engine != Engine::kDeepSpeed;
  p.distributed_optimizer = false;
  p.overlap_grad_reduce = false;
  p.overlap_param_gather = false;
  p.grad_buckets = GradBuckets::kNone;
  p.reshard_after_forward = ReshardAfterForward::kDefault;
  p.zero_stage = 0;
  // PyTorch's context_parallel is torchtitan's alone; the other engines run their own CP
  // (cp_mode: Megatron's ring or all-gather).
  const CpRotate config_rotate = p.cp_rotate;
  p.cp_rotate = CpRotate::kNone;
  // The loss: torchtitan's is PyTorch's cross_entropy on fp32 logits; Megatron and DeepSpeed
  // keep the config's fusion, which is theirs (none: the unfused VocabParallelCrossEntropy).
  if (p.cross_entropy_fusion == CrossEntropyFusion::kTorch ||
      p.cross_entropy_fusion == CrossEntropyFusion::kTorchCompiled) {
    p.cross_entropy_fusion = CrossEntropyFusion::kNone;
  }
  switch (engine) {
    case Engine::kMegatron:
      p.engine = TrainingEngine::kMegatronLm;
      // The recipe Megatron's examples run: the distributed optimizer with both overlaps.
      p.distributed_optimizer = zero_stage == 1;
      p.overlap_grad_reduce = data_parallel;
      p.overlap_param_gather = zero_stage == 1;
      break;
    case Engine::kTorchtitan:
      p.engine = TrainingEngine::kTorchtitan;
      p.zero_stage = zero_stage;  // 3: FSDP2 over dp_shard x cp
      // Compiled with the model where the candidate compiles (fused kernels), as torchtitan
      // does since e7c0cae (components/loss.py).
      p.cross_entropy_fusion =
          p.fused_kernels ? CrossEntropyFusion::kTorchCompiled : CrossEntropyFusion::kTorch;
      // torchtitan's CP is PyTorch's context_parallel with its rotate method (the config's, or
      // torchtitan's default allgather), never Megatron's ring or Llama 3's all-gather.
      if (cp > 1 && !layer_list) {
        p.cp_rotate = config_rotate == CpRotate::kNone ? CpRotate::kAllGather : config_rotate;
        p.cp_all_gather = false;
      }
      break;
    case Engine::kDeepSpeed:
      p.engine = TrainingEngine::kMegatronDeepSpeed;  // what `--export deepspeed` launches
      p.zero_stage = zero_stage;
      break;
    case Engine::kAny:
      p.zero_stage = zero_stage;
      break;
  }
}

RunSpec CandidateRun(const RunSpec& run, const Candidate& candidate) {
  RunSpec edited = run;
  edited.edit = [edit = run.edit, candidate](Config& config) -> Status {
    if (edit) STAGECRAFT_RETURN_IF_ERROR(edit(config));
    candidate.ApplyTo(config);
    return Status::Ok();
  };
  return edited;
}

std::string Candidate::Describe() const {
  return std::string(EngineName(engine)) + " tp " + std::to_string(tp) + " pp " +
         std::to_string(pp) + " vpp " + std::to_string(vpp) + " dp " + std::to_string(dp) + " cp " +
         std::to_string(cp) + " ep " + std::to_string(ep) + " mbs " +
         std::to_string(micro_batch_size) + " m " + std::to_string(microbatches) + " " + schedule +
         " recompute " + RecomputeText() + " zero " + std::to_string(zero_stage) +
         (first_stage_layers > 0 ? " first " + std::to_string(first_stage_layers) + " last " +
                                       std::to_string(last_stage_layers)
                                 : std::string()) +
         (engine == Engine::kTorchtitan && pp > 1 && (first_less != 1 || last_less != 1)
              ? " less " + std::to_string(first_less) + "/" + std::to_string(last_less)
              : std::string()) +
         (layout_counts.empty() ? std::string()
                                : " layout " + TransformerLayoutString(layout_counts)) +
         (layer_list ? std::string(" partition ") + PartitionMethodName(partition) + " state " +
                           StatePolicyName(state_policy)
                     : std::string());
}

std::string Candidate::LayoutKey() const {
  Candidate c = *this;
  c.first_stage_layers = 0;
  c.last_stage_layers = 0;
  c.first_less = 1;
  c.last_less = 1;
  c.layout_counts.clear();
  c.partition = PartitionMethod::kStateAware;
  c.state_policy = StatePolicy::kPayload;
  return c.Describe();
}

std::string Candidate::ScheduleText(int32_t layers) const {
  if (layer_list) {
    // One stage: nothing to partition, no state between stages.
    if (pp == 1) return schedule;
    return schedule + " " + PartitionMethodName(partition) + "/" + StatePolicyName(state_policy);
  }
  if (!layout_counts.empty()) return schedule + " " + TransformerLayoutString(layout_counts);
  if (engine == Engine::kTorchtitan && pp > 1 && (first_less != 1 || last_less != 1)) {
    return schedule + " less " + std::to_string(first_less) + "/" + std::to_string(last_less);
  }
  if (first_stage_layers == 0 || pp < 3) return schedule;
  return schedule + " " + std::to_string(first_stage_layers) + "/" +
         std::to_string(MiddleStageLayers(layers)) + "/" + std::to_string(last_stage_layers);
}

std::string Candidate::RecomputeText() const {
  if (recompute == Recompute::kFull && recompute_num_layers > 0) {
    // full:N the first N layers of each chunk; full/N every layer, N to a checkpoint.
    return (recompute_uniform ? "full/" : "full:") + std::to_string(recompute_num_layers);
  }
  return RecomputeName(recompute);
}

namespace {

std::string ClusterText(const ClusterSpec& cluster) {
  return cluster.device + " x " + std::to_string(cluster.nodes) + " node" +
         (cluster.nodes == 1 ? "" : "s") + " of " + std::to_string(cluster.devices_per_node);
}

// The flags PlanLayouts needs before it reads the config.
Status CheckPlanFlags(const PlanSpec& spec) {
  if (spec.gpus < 1) {
    return Error{"plan: --gpus N is required (the world size every layout fills, e.g. --gpus 64)"};
  }
  if (spec.global_batch < 1) {
    return Error{
        "plan: --global-batch-size B is required (sequences per iteration, e.g. "
        "--global-batch-size 512)"};
  }
  STAGECRAFT_RETURN_IF_ERROR(CheckGlobalBatchSimulable(spec));
  if (spec.headroom < 0 || spec.headroom > 0.9) {
    return Error{"plan: --memory-headroom must be between 0 and 0.9 (a share of the device)"};
  }
  if (!spec.layout.empty()) {
    // Bad --layout text fails before the search (RankLayout reads it again after).
    auto layout = ParseLayoutSpec(spec.layout, spec);
    if (!layout.ok()) return layout.error();
  }
  return Status::Ok();
}

// The model and cluster the spec plans for: a model with layers, an engine that can run it, a
// cluster with the GPUs.
Status CheckPlannable(const PlanSpec& spec, const Config& config) {
  const bool layer_list = !config.model.is_transformer();
  if (layer_list && config.model.layers.empty()) {
    return Error{"plan: the model '" + config.model.name +
                 "' has no layers to split (expected model.type: transformer, model.type: layers "
                 "or --hf-config)"};
  }
  if (layer_list && spec.export_engine) {
    return Error{"plan: --export: the model '" + config.model.name +
                 "' is a layer list (CSA2); no engine export writes its layers (drop --export)"};
  }
  if (layer_list && spec.engine != Engine::kAny) {
    return Error{"plan: --engine " + std::string(EngineName(spec.engine)) + ": the model '" +
                 config.model.name +
                 "' is a layer list (CSA2), which no engine stagecraft writes rules for runs; "
                 "plan it with --engine any (the layouts the run library simulates)"};
  }
  if (!config.cluster.given) {
    return Error{
        "plan: no cluster to plan for; give one (--cluster h100x8, or a cluster "
        "section; stagecraft list presets)"};
  }
  const int64_t devices = int64_t{config.cluster.nodes} * config.cluster.devices_per_node;
  if (spec.gpus > devices) {
    return Error{"plan: --gpus " + std::to_string(spec.gpus) + " is more than the cluster's " +
                 std::to_string(devices) + " GPUs (" + ClusterText(config.cluster) + "); " +
                 LargerClusterHint(config.cluster, spec.gpus)};
  }
  return Status::Ok();
}

// The plans shown: a transformer's layouts once each, at their fastest split (a layer list's
// partition and state policy are choices of their own and stay), at most --top.
std::vector<PlannedLayout> ShownPlans(const PlanSpec& spec, std::vector<PlannedLayout> plans,
                                      bool layer_list) {
  if (!layer_list) {
    std::set<std::string> shown;
    std::vector<PlannedLayout> distinct;
    for (PlannedLayout& plan : plans) {
      if (shown.insert(plan.candidate.LayoutKey()).second) distinct.push_back(std::move(plan));
    }
    plans = std::move(distinct);
  }
  if (plans.size() > static_cast<size_t>(std::max(1, spec.top))) {
    plans.resize(static_cast<size_t>(std::max(1, spec.top)));
  }
  return plans;
}

// What the plan's figures rest on.
std::vector<std::string> Assumptions(const PlanSpec& spec, bool layer_list, bool probed_any,
                                     const Ranking& ranking, size_t screened_fitting) {
  const size_t variant_layouts = static_cast<size_t>(std::max(0, spec.variant_layouts));
  return {layer_list
              ? "step times: the kernel model on the layer list's per-layer costs and the "
                "parallel cost model (doc/fidelity.md), shared state moved by each "
                "candidate's state policy (doc/csa2.md); a layer list obeys no engine's rules "
                "(doc/plan.md)"
              : "step times: the kernel model and the parallel cost model (doc/fidelity.md), "
                "the engines' overlap options per engine (doc/plan.md)",
          std::string("screen: the schedule's closed form on the slowest chunk plus the exposed DP "
                      "tail") +
              (probed_any ? " (schedules without one: a compute-only run of the generated schedule)"
                          : "") +
              "; ranking: the exact simulation of the best " + std::to_string(ranking.first_round) +
              " layouts of " + std::to_string(screened_fitting) + " candidates (" +
              (layer_list ? "one partition and state policy each" : "one stage split each") +
              "), then every variant of the " +
              std::to_string(std::min(variant_layouts, ranking.first_round)) +
              " fastest: " + std::to_string(ranking.simulated) + " simulated",
          "memory: model states + activations at the schedule's peak (with recomputation's "
          "working set) + the framework reserve, against the device" +
              (spec.headroom > 0
                   ? " less " + std::to_string(static_cast<int>(std::lround(spec.headroom * 100))) +
                         "% headroom"
                   : std::string(""))};
}

}  // namespace

// The planner in its stages: the flags and the model checked, the candidates enumerated under
// the engines' rules (plan_rules.cc), screened analytically (plan_screen.cc), more derived from
// the screened costs and screened (plan_derive.cc), the best simulated (plan_rank.cc).
Result<PlanResult> PlanLayouts(const PlanSpec& spec) {
  std::unique_ptr<WorkSplit> threads;
  if (spec.split == nullptr) {
    if (spec.jobs < 1 || spec.jobs > 1024) {
      return Error{"plan: --jobs must be between 1 and 1024 (threads), got " +
                   std::to_string(spec.jobs)};
    }
    threads = ThreadSplit(spec.jobs);
  }
  WorkSplit& split = spec.split != nullptr ? *spec.split : *threads;
  STAGECRAFT_RETURN_IF_ERROR(CheckPlanFlags(spec));
  auto loaded = LoadRunConfig(spec.run);
  if (!loaded.ok()) return loaded.error();
  auto base = std::make_shared<const LoadedConfig>(std::move(loaded).value());
  RunSpec resolve_spec = spec.run;
  resolve_spec.loaded = base;
  auto resolved = ResolveRun(resolve_spec);
  if (!resolved.ok()) return resolved.error();
  const Config& config = resolved.value().config;
  STAGECRAFT_RETURN_IF_ERROR(CheckPlannable(spec, config));
  const bool layer_list = !config.model.is_transformer();
  const PlanShape shape = PlanShapeOf(config);

  PlanResult result;
  result.config = config;
  result.label = base->label;
  result.model = config.model.name;
  result.cluster = ClusterText(config.cluster) + " (" + std::to_string(spec.gpus) + " GPUs used)";
  Enumeration enumeration = EnumerateCandidates(spec, shape);
  result.candidates = enumeration.asked;
  result.rejected = enumeration.rejected;

  Screen screen(spec, base, split, std::move(enumeration.legal), result);
  STAGECRAFT_RETURN_IF_ERROR(screen.ScreenCandidates());
  std::vector<Candidate> derived = DeriveBlockRecompute(spec, shape, screen);
  for (Candidate& candidate : DeriveSplits(shape, screen)) derived.push_back(std::move(candidate));
  if (!derived.empty()) result.derived = static_cast<int64_t>(derived.size());
  STAGECRAFT_RETURN_IF_ERROR(screen.ScreenDerived(std::move(derived)));
  const std::vector<Screened> fitting = screen.Fitting();

  auto ranking = RankBySimulation(spec, base, split, screen, fitting, layer_list, result);
  if (!ranking.ok()) return ranking.error();
  result.all_fitting = ranking.value().plans;
  result.plans = ShownPlans(spec, std::move(ranking.value().plans), layer_list);
  result.assumptions =
      Assumptions(spec, layer_list, screen.probed_any(), ranking.value(), fitting.size());
  if (!spec.layout.empty()) {
    RunSpec run = spec.run;
    run.loaded = base;
    auto layout = RankLayout(spec, run, result);
    if (!layout.ok()) return layout.error();
    result.layout = std::move(layout).value();
  }
  return result;
}

}  // namespace stagecraft
