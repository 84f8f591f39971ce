#include "cli/commands.h"

#include <algorithm>

#include "analysis/closed_form.h"
#include "analysis/memory.h"
#include "analysis/metrics.h"
#include "check/checker.h"
#include "cli/bundled_config.h"
#include "cli/memory_verdict.h"
#include "comm/collective.h"
#include "core/suggest.h"
#include "core/units.h"
#include "hardware/presets.h"
#include "lower/layer_pipeline.h"
#include "model/layer_costs.h"
#include "report/chrome_trace.h"
#include "report/json_writer.h"
#include "report/summary.h"
#include "report/timeline.h"
#include "schedule/generator.h"
#include "schedule/schedule_csv.h"
#include "sim/simulator.h"

namespace stagecraft {

int Fail(std::ostream& err, const std::string& message, int code) {
  err << "stagecraft: error: " << EscapeBytes(message) << "\n";
  return code;
}

namespace {

void PrintNotes(const PreparedRun& run, std::ostream& err) {
  for (const std::string& note : run.notes) err << "stagecraft: note: " << EscapeBytes(note) << "\n";
}

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
  for (const auto& [name, sharding] : CpShardingChoices()) {
    if (sharding == parallel.cp_sharding) info.cp_sharding = name;
  }
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
  return info;
}

// The vision encoder and Engram pieces: what they did, the encoder's devices in the world size
// and its FLOPs in the throughput (every data-parallel replica encodes its own images).
void AddMultimodalInfo(const PreparedRun& run, const Simulated& simulated, RunInfo& info) {
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
bool StructureIsSound(const PreparedRun& run, std::ostream& err) {
  CheckOptions options;
  options.lower = run.lower;
  options.modes.clear();
  options.state_buffer_slots = run.config.schedule.state_buffer_slots;
  const auto violations = CheckSchedule(run.schedule, run.stage_costs, options);
  if (violations.empty()) return true;
  err << FormatViolations(violations);
  err << "stagecraft: the schedule is broken (" << violations.size()
      << (violations.size() == 1 ? " violation" : " violations")
      << "); run 'stagecraft check' for the full diagnosis\n";
  return false;
}

}  // namespace

int SimulateRun(const PreparedRun& run, Simulated& result, std::ostream& err) {
  PrintNotes(run, err);
  if (!StructureIsSound(run, err)) return kExitViolations;
  auto graph = Lower(run.schedule, run.stage_costs, run.lower);
  if (!graph.ok()) return Fail(err, graph.error().message, kExitViolations);
  result.graph = std::move(graph).value();
  auto vision = ApplyMultimodal(run, result.graph);
  if (!vision.ok()) return Fail(err, vision.error().message, kExitViolations);
  result.vision = std::move(vision).value();
  result.trace = Simulate(result.graph);
  if (result.trace.deadlock) {
    err << "stagecraft: error: deadlock with " << P2pModeName(run.lower.mode)
        << " point-to-point: no action can run and work remains\n"
        << FormatDeadlock(result.graph, *result.trace.deadlock);
    return kExitViolations;
  }
  result.metrics = ComputeMetrics(run.schedule, run.stage_costs, result.graph, result.trace);
  return kExitOk;
}

int RunSimulate(const RunFlags& flags, const OutputFlags& output, std::ostream& out,
                std::ostream& err) {
  auto run = PrepareRun(flags);
  if (!run.ok()) return Fail(err, run.error().message);
  if (output.compare_policies && !run.value().config.model.is_layer_list()) {
    return Fail(err,
                "--compare-policies needs a layer-list model (model.type: layers); "
                "a uniform model has no shared state");
  }
  if (output.compare_vision && !run.value().multimodal.vision) {
    return Fail(err,
                "--compare-vision needs a vision encoder (a multimodal.vision section, as "
                "examples/v41-flash-multimodal.yaml)");
  }
  if (output.compare_vision && output.json) {
    return Fail(err,
                "--compare-vision prints a table; drop --json (or run --json once per "
                "--vision-placement)");
  }
  if (output.compare_policies && output.json) {
    return Fail(err,
                "--compare-policies prints a table; drop --json (or run --json once "
                "per --state-policy)");
  }
  if (!output.write_schedule_csv.empty()) {
    const Status written =
        WriteTextFile(output.write_schedule_csv, WriteScheduleCsv(run.value().schedule));
    if (!written.ok()) return Fail(err, written.error().message);
  }
  if (output.trace_path && output.trace_path->empty()) {
    return Fail(err, "--trace: needs a file name (e.g. --trace trace.json)");
  }
  Simulated simulated;
  const int code = SimulateRun(run.value(), simulated, err);
  if (code != kExitOk) return code;
  if (output.trace_path) {
    const MemoryTimeline memory = ComputeMemoryTimeline(
        run.value().schedule, run.value().stage_costs, simulated.graph, simulated.trace);
    const Status written = WriteTextFile(
        *output.trace_path, FormatChromeTrace(simulated.graph, simulated.trace, &memory));
    if (!written.ok()) return Fail(err, written.error().message);
  }
  RunInfo info = MakeRunInfo(run.value());
  AddMultimodalInfo(run.value(), simulated, info);
  info.memory = ComputeMemory(run.value(), simulated).verdict;
  if (!info.memory.fits) {
    err << "stagecraft: warning: memory: "
        << EscapeBytes(OverCapacityMessage(run.value(), info.memory))
        << "\n";
  }
  if (output.json) {
    out << FormatMetricsJson(info, simulated.metrics);
  } else {
    if (flags.config_path.empty() && !flags.hf_config) {
      out << "no config given: using the bundled example '" << BundledConfigName() << "'"
          << (output.trace_path ? "; trace written to " + *output.trace_path +
                                      " (open it in ui.perfetto.dev)"
                                : std::string("")) << "\n";
    }
    out << FormatSummary(info, simulated.metrics);
  }
  if (output.timeline) {
    const std::string unreadable = TimelineUnreadableReason(simulated.graph);
    if (unreadable.empty()) {
      out << "\n" << FormatTimeline(simulated.graph, simulated.trace, simulated.metrics);
    } else {
      out << "\ntimeline skipped: " << unreadable
          << " (fewer --microbatches or --pp draw one; --trace FILE shows any size in "
             "ui.perfetto.dev)\n";
    }
  }
  const PartitionMethod method = run.value().config.parallel.partition;
  const bool layer_list = run.value().config.model.is_layer_list();
  if (layer_list && !output.json && run.value().config.schedule.csv.empty() &&
      (method == PartitionMethod::kStateAware || method == PartitionMethod::kCost)) {
    auto table = ComparePartitions(run.value());
    if (!table.ok()) return Fail(err, table.error().message, kExitViolations);
    out << "\n" << table.value();
  }
  if (output.compare_vision) {
    auto table = CompareVision(run.value());
    if (!table.ok()) return Fail(err, table.error().message, kExitViolations);
    out << "\n" << table.value();
  }
  if (output.compare_policies) {
    auto table = ComparePolicies(run.value());
    if (!table.ok()) return Fail(err, table.error().message, kExitViolations);
    out << "\n" << table.value();
  }
  return kExitOk;
}

namespace {

// "async, rendezvous or torch-pipelining".
std::string ModeList(const std::vector<P2pMode>& modes) {
  std::string text;
  for (size_t index = 0; index < modes.size(); ++index) {
    if (index > 0) text += index + 1 == modes.size() ? " or " : ", ";
    text += P2pModeName(modes[index]);
  }
  return text;
}

// The modes `check` searches: the one --p2p names; for a schedule CSV, the runtime that reads
// it (torch.distributed.pipelining); otherwise every mode.
std::vector<P2pMode> CheckModes(const RunFlags& flags, const PreparedRun& run) {
  if (flags.p2p) return {run.lower.mode};
  if (!run.config.schedule.csv.empty()) return {P2pMode::kTorchPipelining};
  std::vector<P2pMode> modes;
  for (const auto& [name, mode] : P2pModeChoices()) modes.push_back(mode);
  return modes;
}

}  // namespace

int RunCheck(const RunFlags& flags, std::ostream& out, std::ostream& err) {
  auto run = PrepareRun(flags);
  if (!run.ok()) return Fail(err, run.error().message);
  PrintNotes(run.value(), err);
  CheckOptions options;
  options.lower = run.value().lower;
  options.modes = CheckModes(flags, run.value());
  options.state_buffer_slots = run.value().config.schedule.state_buffer_slots;
  const auto violations = CheckSchedule(run.value().schedule, run.value().stage_costs, options);
  const Schedule& schedule = run.value().schedule;
  const bool csv_default = !flags.p2p && !run.value().config.schedule.csv.empty();
  const std::string why =
      csv_default ? " (the runtime that reads schedule CSVs; --p2p rendezvous for NCCL's strict "
                    "order)"
                  : "";
  if (violations.empty()) {
    out << "check: ok: " << schedule.num_actions() << " actions on " << schedule.num_ranks
        << " ranks, " << schedule.num_stages << " stages, " << schedule.num_microbatches
        << " microbatches; no deadlock under " << ModeList(options.modes) << " point-to-point"
        << why << "\n";
    return kExitOk;
  }
  std::vector<P2pMode> clean = options.modes;
  for (const Violation& violation : violations) {
    for (P2pMode mode : violation.modes) {
      clean.erase(std::remove(clean.begin(), clean.end(), mode), clean.end());
    }
  }
  out << FormatViolations(violations);
  out << "check: " << violations.size() << (violations.size() == 1 ? " violation" : " violations")
      << " in " << run.value().label;
  const bool any_deadlock =
      std::any_of(violations.begin(), violations.end(),
                  [](const Violation& violation) { return !violation.modes.empty(); });
  if (any_deadlock && !clean.empty()) {
    out << "; no deadlock under " << ModeList(clean) << " point-to-point" << why;
  }
  out << "\n";
  return kExitViolations;
}

namespace {

// A name in `list`'s first column: padded to 18, then two spaces.
std::string ListName(std::string name) {
  name.resize(std::max<size_t>(name.size(), 18), ' ');
  return name + "  ";
}

}  // namespace

int RunList(const std::string& what, std::ostream& out, std::ostream& err) {
  if (what == "schedules") {
    for (const ScheduleGenerator& generator : ScheduleGenerators()) {
      out << ListName(generator.name) << generator.description << "\n";
    }
    for (const CostAwareScheduleGenerator& generator : CostAwareScheduleGenerators()) {
      out << ListName(generator.name) << generator.description << "\n";
    }
    return kExitOk;
  }
  if (what == "placements") {
    out << "loop                stage s on rank s mod p\n"
        << "v                   stage s < p on rank s, else on rank 2p-1-s (two chunks per rank)\n"
        << "dual                two mirrored model copies (DualPipe): microbatches < m/2 run stage "
           "s on rank s, the others on rank p-1-s\n";
    return kExitOk;
  }
  if (what == "p2p") {
    for (const auto& [name, mode] : P2pModeChoices()) {
      out << ListName(name) << P2pModeDescription(mode) << "\n";
    }
    return kExitOk;
  }
  if (what == "metrics") {
    out << MetricDefinitions();
    return kExitOk;
  }
  if (what == "presets") {
    for (const DevicePreset& preset : DevicePresets()) {
      out << ListName(preset.name) << preset.description << ": BF16 "
          << FormatFixed(preset.bf16_flops_per_s / 1e12, 1) << " TFLOP/s, FP8 "
          << (preset.fp8_flops_per_s > 0
                  ? FormatFixed(preset.fp8_flops_per_s / 1e12, 1) + " TFLOP/s"
                  : std::string("none"))
          << ", HBM " << preset.hbm_bytes / 1'000'000'000 << " GB at "
          << FormatFixed(preset.hbm_bytes_per_s / 1e9, 0) << " GB/s, NVLink "
          << FormatFixed(preset.nvlink_bytes_per_s / 1e9, 0) << " GB/s, NIC "
          << FormatFixed(preset.nic_bytes_per_s / 1e9, 0) << " GB/s per GPU, "
          << preset.devices_per_node << " per node\n";
      const KernelModel& kernels = preset.kernels;
      out << ListName("") << "kernel model: " << kernels.sms << " SMs, GEMM "
          << FormatFixed(kernels.gemm_efficiency * 100, 1) << "% of peak (MAMF) x "
          << FormatFixed(kernels.gemm_sustained, 2) << " sustained, attention "
          << FormatFixed(kernels.attention_forward_efficiency * 100, 0) << "% / "
          << FormatFixed(kernels.attention_backward_efficiency * 100, 0) << "% ("
          << preset.kernel_source << ")\n";
    }
    out << "(a cluster preset is DEVICE or DEVICExNODES, e.g. h100x2; links carry "
        << FormatFixed(kNvlinkEfficiency * 100, 1) << "% of NVLink and "
        << FormatFixed(kNicEfficiency * 100, 1) << "% of NIC bandwidth, as nccl-tests measure)\n";
    return kExitOk;
  }
  if (what == "collectives") {
    for (const char* name : {"allreduce", "reducescatter", "allgather", "alltoall", "broadcast",
                             "reduce", "sendrecv"}) {
      const Collective collective = ParseCollective(name).value();
      std::string shown = name;
      shown.resize(18, ' ');
      out << shown << "  busbw = algbw x "
          << (collective == Collective::kAllReduce       ? "2(n-1)/n"
              : BusBandwidthFactor(collective, 2) == 1.0 ? "1"
                                                         : "(n-1)/n")
          << "\n";
    }
    return kExitOk;
  }
  if (what == "vision") {
    out << "colocated           the first stage's rank encodes microbatch j right before its F of "
           "j and runs the encoder backward right after its backward of j\n"
        << "decoupled           V4.1: every pipeline rank encodes an even share of the local "
           "batch's images before the pipeline and runs the backwards after it\n"
        << "disaggregated       DistTrain: the encoder on devices of its own (vision.devices per "
           "pipeline replica, dp x tp x pp), embeddings sent to the first stage\n"
        << "bubble-fill         Optimus: pieces of the encoder's work in the pipeline's idle gaps "
           "while dependencies hold; microbatch 0 before the pipeline\n";
    return kExitOk;
  }
  const std::vector<std::string> choices = {"schedules", "placements",  "p2p",   "metrics",
                                            "presets",   "collectives", "vision"};
  if (what.empty()) {
    return Fail(err, "list needs a topic (expected " + JoinChoices(choices) +
                         ", e.g. 'stagecraft list schedules')");
  }
  return Fail(err, "cannot list '" + what + "'" + DidYouMean(what, choices) + " (expected " +
                       JoinChoices(choices) + ")");
}

}  // namespace stagecraft
