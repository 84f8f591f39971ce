#include "run/simulate.h"

#include <utility>

#include "analysis/metrics.h"
#include "check/checker.h"
#include "core/suggest.h"
#include "lower/layer_pipeline.h"
#include "model/layer_costs.h"
#include "run/memory_verdict.h"
#include "run/validated_runs.h"
#include "sim/simulator.h"

namespace stagecraft {
namespace {

// Stages and cuts of a layer-list model, for the reports.
void AddLayerInfo(const PreparedRun& run, RunInfo& info) {
  const Partition& partition = run.partition;
  info.forward = info.input_grad = info.weight_grad = Time();
  for (const StageCost& cost : run.stage_costs) {
    info.forward += cost.forward;
    info.input_grad += cost.input_grad;
    info.weight_grad += cost.weight_grad;
  }
  const std::vector<int32_t> ranks = StageRanks(run.schedule);
  info.partition = PartitionMethodName(run.config.parallel.partition);
  info.state_policy = StatePolicyName(run.config.schedule.state_policy);
  for (int32_t stage = 0; stage < partition.num_stages(); ++stage) {
    const StageCost& cost = run.stage_costs[stage];
    info.stages.push_back({stage, ranks[stage], partition.begin(stage), partition.end(stage) - 1,
                           cost.forward, cost.backward()});
  }
  const std::vector<CutPayload> payloads = CutPayloads(run.config.model);
  for (int32_t stage = 0; stage + 1 < partition.num_stages(); ++stage) {
    const CutPayload& payload = payloads[partition.begin(stage + 1) - 1];
    CutInfo cut{stage, payload.before_layer, payload.hidden_bytes_per_token,
                payload.state_bytes_per_token, ""};
    for (const StateFlow& flow : run.lower.states) {
      if (flow.producer_stage <= stage && stage < flow.last_consumer_stage()) {
        cut.states += std::string(cut.states.empty() ? "" : ", ") + StateKindName(flow.kind) +
                      " of " + std::to_string(flow.producer_layer);
      }
    }
    info.cuts.push_back(cut);
  }
}

// A CSA2 layer list over cp > 1 ranks: how unevenly its shards split the indexer's scoring.
void AddContextParallelInfo(const PreparedRun& run, RunInfo& info) {
  const ModelSpec& model = run.config.model;
  const ParallelSpec& parallel = run.config.parallel;
  if (parallel.cp <= 1 || !model.is_layer_list() || model.is_transformer()) return;
  const ContextShards shards{parallel.cp, parallel.cp_sharding == CpSharding::kZigzag};
  double busiest = 0;
  double whole = 0;
  for (const LayerSpec& layer : model.layers) {
    busiest += LayerScoringFlops(layer, model.dims, model.seq_len, model.micro_batch_size, shards);
    whole += LayerScoringFlops(layer, model.dims, model.seq_len, model.micro_batch_size);
  }
  info.cp_sharding = kCpShardingNames.Name(parallel.cp_sharding);
  if (whole > 0) info.cp_scan_imbalance = busiest * parallel.cp / whole;
}

RunInfo MakeRunInfo(const PreparedRun& run) {
  RunInfo info;
  info.config = run.label;
  info.assumptions = CostAssumptions(run.config);
  info.model = run.config.model.name;
  info.schedule = run.schedule.name;
  info.pp = run.schedule.num_ranks;
  info.vpp = run.schedule.chunks_per_rank();
  info.microbatches = run.schedule.num_microbatches;
  info.p2p = run.lower.mode;
  info.cost_p2p = run.lower.cost_p2p;
  info.cluster_given = run.lower.cluster.given;
  info.forward = run.config.model.forward;
  info.input_grad = run.config.model.input_grad;
  info.weight_grad = run.config.model.weight_grad;
  if (run.config.model.is_layer_list()) AddLayerInfo(run, info);
  const ParallelPlan& plan = run.parallel_plan;
  if (plan.world_size > 0) {
    info.world_size = plan.world_size;
    info.tp = run.config.parallel.tp;
    info.dp = run.config.parallel.dp;
    info.cp = run.config.parallel.cp;
    AddContextParallelInfo(run, info);
    info.tokens_per_iteration = plan.tokens_per_iteration;
    info.hardware_flops_per_iteration = plan.hardware_flops_per_iteration;
    info.model_flops_per_iteration = plan.model_flops_per_iteration;
    info.peak_flops_per_device = plan.peak_flops_per_device;
    info.params = plan.params;
  }
  info.validation = ValidationFor(run.config, FeaturesOf(run));
  return info;
}

// The vision encoder and Engram pieces: what they did, the encoder's devices in the world size
// and its FLOPs in the throughput (every data-parallel replica encodes its own images).
void AddMultimodalInfo(const PreparedRun& run, const RunOutcome& simulated, RunInfo& info) {
  info.multimodal = DescribeMultimodal(run, simulated.graph, simulated.trace, simulated.vision);
  if (info.world_size == 0 || !run.multimodal.vision) return;
  info.world_size += static_cast<int32_t>(run.multimodal.extra_devices);
  const double flops =
      (run.multimodal.vision_work.forward_flops + run.multimodal.vision_work.backward_flops) *
      run.config.parallel.dp;
  info.hardware_flops_per_iteration += flops;
  info.model_flops_per_iteration += flops;
}

// The structural check every run passes before simulating (deadlocks are found by the run).
Status CheckStructure(const PreparedRun& run) {
  CheckOptions options;
  options.lower = run.lower;
  options.modes.clear();
  options.state_buffer_slots = run.config.schedule.state_buffer_slots;
  const auto violations = CheckSchedule(run.schedule, run.stage_costs, options);
  if (violations.empty()) return Status::Ok();
  return MakeError(ErrorKind::kViolation,
                   "the schedule is broken (" + std::to_string(violations.size()) +
                       (violations.size() == 1 ? " violation" : " violations") +
                       "); run 'stagecraft check' for the full diagnosis",
                   FormatViolations(violations));
}

}  // namespace

Result<RunOutcome> SimulatePrepared(const PreparedRun& run, const ProgressSink& progress) {
  // The phases, and within the simulation the tasks: a run of 10^5 ranks takes seconds in each.
  Progress phases(progress, "simulate: phases", 4);
  phases.Update(0, "checking the schedule");
  STAGECRAFT_RETURN_IF_ERROR(CheckStructure(run));
  RunOutcome result;
  result.notes = run.notes;
  phases.Update(1, "lowering it to tasks");
  auto graph = Lower(run.schedule, run.stage_costs, run.lower);
  if (!graph.ok()) return MakeError(ErrorKind::kViolation, graph.error().message);
  result.graph = std::move(graph).value();
  auto vision = ApplyMultimodal(run, result.graph);
  if (!vision.ok()) return MakeError(ErrorKind::kViolation, vision.error().message);
  result.vision = std::move(vision).value();
  phases.Update(2, "simulating");
  {
    Progress tasks(progress, "simulate: tasks", static_cast<int64_t>(result.graph.num_tasks()));
    result.trace = Simulate(result.graph, &tasks);
  }
  if (result.trace.deadlock) {
    return MakeError(ErrorKind::kDeadlock,
                     std::string("deadlock with ") + P2pModeName(run.lower.mode) +
                         " point-to-point: no action can run and work remains",
                     FormatDeadlock(result.graph, *result.trace.deadlock));
  }
  phases.Update(3, "metrics and memory");
  result.metrics = ComputeMetrics(run.schedule, run.stage_costs, result.graph, result.trace);
  result.info = MakeRunInfo(run);
  AddMultimodalInfo(run, result, result.info);
  result.info.memory = ComputeMemory(run, result).verdict;
  if (!result.info.memory.fits) {
    result.warnings.push_back("memory: " + OverCapacityMessage(run, result.info.memory));
  }
  return result;
}

Result<RunOutcome> SimulateSpec(const RunSpec& spec) {
  auto run = PrepareRun(spec);
  if (!run.ok()) return run.error();
  return SimulatePrepared(run.value());
}

std::string FormatError(const Error& error) {
  if (error.kind == ErrorKind::kViolation && !error.detail.empty()) {
    // A checker's report: the violations, then the summary line.
    return error.detail +
           (error.message.empty() ? "" : "stagecraft: " + EscapeMessage(error.message) + "\n");
  }
  std::string text;
  if (!error.message.empty()) text = "stagecraft: error: " + EscapeMessage(error.message) + "\n";
  return text + error.detail;
}

std::string FormatNotes(const std::vector<std::string>& notes) {
  std::string text;
  for (const std::string& note : notes) text += "stagecraft: note: " + EscapeBytes(note) + "\n";
  return text;
}

}  // namespace stagecraft
