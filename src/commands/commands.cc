#include "commands/commands.h"

#include <algorithm>

#include "analysis/closed_form.h"
#include "analysis/memory.h"
#include "analysis/metrics.h"
#include "check/checker.h"
#include "comm/collective.h"
#include "commands/html_report.h"
#include "core/suggest.h"
#include "core/units.h"
#include "hardware/presets.h"
#include "lower/layer_pipeline.h"
#include "model/layer_costs.h"
#include "report/chrome_trace.h"
#include "report/json_writer.h"
#include "report/summary.h"
#include "report/timeline.h"
#include "run/bundled_config.h"
#include "run/memory_verdict.h"
#include "schedule/generator.h"
#include "schedule/schedule_csv.h"
#include "sim/simulator.h"

namespace stagecraft {

Status SimulateRun(const PreparedRun& run, RunOutcome& result, std::ostream& err,
                   const ProgressSink& progress) {
  err << FormatNotes(run.notes);
  auto outcome = SimulatePrepared(run, progress);
  if (!outcome.ok()) {
    err << FormatError(outcome.error());
    return MakeError(outcome.error().kind, "");
  }
  result = std::move(outcome).value();
  return Status::Ok();
}

Status RunSimulate(const RunSpec& spec, const OutputSpec& output, Transcript& transcript) {
  std::ostream& out = transcript.out();
  std::ostream& err = transcript.err();
  RunSpec flags = spec;
  flags.trace = output.trace_path.has_value();  // its events count in the run's size
  auto run = PrepareRun(flags);
  if (!run.ok()) return run.error();
  if (output.compare_policies && !run.value().config.model.is_layer_list()) {
    return Error{
        "--compare-policies needs a layer-list model (model.type: layers); "
        "a uniform model has no shared state"};
  }
  if (output.compare_vision && !run.value().multimodal.vision) {
    return Error{
        "--compare-vision needs a vision encoder (a multimodal.vision section, as "
        "examples/v41-flash-multimodal.yaml)"};
  }
  if (output.compare_vision && output.json) {
    return Error{
        "--compare-vision prints a table; drop --json (or run --json once per "
        "--vision-placement)"};
  }
  if (output.compare_policies && output.json) {
    return Error{
        "--compare-policies prints a table; drop --json (or run --json once "
        "per --state-policy)"};
  }
  if (!output.write_schedule_csv.empty()) {
    const Status written =
        flags.files.write(output.write_schedule_csv, WriteScheduleCsv(run.value().schedule));
    if (!written.ok()) return Error{"--write-schedule-csv: " + written.error().message};
  }
  if (output.trace_path && output.trace_path->empty()) {
    return Error{"--trace: needs a file name (e.g. --trace trace.json)"};
  }
  if (output.report_path && output.report_path->empty()) {
    return Error{"--report: needs a file name (e.g. --report run.html)"};
  }
  RunOutcome simulated;
  STAGECRAFT_RETURN_IF_ERROR(SimulateRun(run.value(), simulated, err, output.progress));
  if (output.trace_path) {
    const MemoryTimeline memory = ComputeMemoryTimeline(
        run.value().schedule, run.value().stage_costs, simulated.graph, simulated.trace);
    const Status written = flags.files.write(
        *output.trace_path, FormatChromeTrace(simulated.graph, simulated.trace, &memory));
    if (!written.ok()) return Error{"--trace: " + written.error().message};
  }
  if (output.report_path) {
    const Status written =
        flags.files.write(*output.report_path, SimulateReportHtml(flags, run.value(), simulated));
    if (!written.ok()) return Error{"--report: " + written.error().message};
  }
  const RunInfo& info = simulated.info;
  for (const std::string& warning : simulated.warnings) {
    err << "stagecraft: warning: " << EscapeBytes(warning) << "\n";
  }
  if (output.json) {
    out << FormatMetricsJson(info, simulated.metrics);
  } else {
    if (flags.config_path.empty() && !flags.hf_config) {
      out << "no config given: using the bundled example '" << BundledConfigName() << "'"
          << (output.trace_path
                  ? "; trace written to " + *output.trace_path + " (open it in ui.perfetto.dev)"
                  : std::string(""))
          << "\n";
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
    auto table = ComparePartitions(flags);
    if (!table.ok()) return MakeError(ErrorKind::kViolation, table.error().message);
    out << "\n" << table.value();
  }
  if (output.compare_vision) {
    auto table = CompareVision(flags, run.value());
    if (!table.ok()) return MakeError(ErrorKind::kViolation, table.error().message);
    out << "\n" << table.value();
  }
  if (output.compare_policies) {
    auto table = ComparePolicies(flags);
    if (!table.ok()) return MakeError(ErrorKind::kViolation, table.error().message);
    out << "\n" << table.value();
  }
  return Status::Ok();
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
std::vector<P2pMode> CheckModes(const RunSpec& flags, const PreparedRun& run) {
  if (flags.p2p) return {run.lower.mode};
  if (!run.config.schedule.csv.empty()) return {P2pMode::kTorchPipelining};
  std::vector<P2pMode> modes;
  for (const auto& [name, mode] : kP2pModeNames) modes.push_back(mode);
  return modes;
}

}  // namespace

Status RunCheck(const RunSpec& flags, Transcript& transcript) {
  std::ostream& out = transcript.out();
  std::ostream& err = transcript.err();
  RunSpec spec = flags;
  spec.every_p2p_mode = !flags.p2p;  // CheckModes: every mode unless --p2p names one
  auto run = PrepareRun(spec);
  if (!run.ok()) return run.error();
  err << FormatNotes(run.value().notes);
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
    return Status::Ok();
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
  return MakeError(any_deadlock ? ErrorKind::kDeadlock : ErrorKind::kViolation, "");
}

namespace {

// A name in `list`'s first column: padded to 18, then two spaces.
std::string ListName(std::string name) {
  name.resize(std::max<size_t>(name.size(), 18), ' ');
  return name + "  ";
}

// One line on a stage placement, for `list placements`.
const char* PlacementDescription(Placement placement) {
  switch (placement) {
    case Placement::kLoop:
      return "stage s on rank s mod p";
    case Placement::kV:
      return "stage s < p on rank s, else on rank 2p-1-s (two chunks per rank)";
    case Placement::kDual:
      return "two mirrored model copies (DualPipe): microbatches < m/2 run stage s on rank s, the "
             "others on rank p-1-s";
  }
  return "";
}

// One line on a vision-encoder placement, for `list vision`.
const char* VisionPlacementDescription(VisionPlacement placement) {
  switch (placement) {
    case VisionPlacement::kColocated:
      return "the first stage's rank encodes microbatch j right before its F of j and runs the "
             "encoder backward right after its backward of j";
    case VisionPlacement::kDecoupled:
      return "V4.1: every pipeline rank encodes an even share of the local batch's images before "
             "the pipeline and runs the backwards after it";
    case VisionPlacement::kDisaggregated:
      return "DistTrain: the encoder on devices of its own (vision.devices per pipeline replica, "
             "dp x tp x pp), embeddings sent to the first stage";
    case VisionPlacement::kBubbleFill:
      return "Optimus: pieces of the encoder's work in the pipeline's idle gaps while dependencies "
             "hold; microbatch 0 before the pipeline";
  }
  return "";
}

}  // namespace

Status RunList(const std::string& what, Transcript& transcript) {
  std::ostream& out = transcript.out();
  if (what == "schedules") {
    for (const ScheduleGenerator& generator : ScheduleGenerators()) {
      out << ListName(generator.name) << generator.description << "\n";
    }
    for (const CostAwareScheduleGenerator& generator : CostAwareScheduleGenerators()) {
      if (FindScheduleGenerator(generator.name).ok()) continue;  // listed above
      out << ListName(generator.name) << generator.description << "\n";
    }
    return Status::Ok();
  }
  if (what == "placements") {
    for (const auto& [name, placement] : kPlacementNames) {
      out << ListName(name) << PlacementDescription(placement) << "\n";
    }
    return Status::Ok();
  }
  if (what == "p2p") {
    for (const auto& [name, mode] : kP2pModeNames) {
      out << ListName(name) << P2pModeDescription(mode) << "\n";
    }
    return Status::Ok();
  }
  if (what == "metrics") {
    out << MetricDefinitions();
    return Status::Ok();
  }
  if (what == "presets") {
    for (const DevicePreset& preset : DevicePresets()) {
      out << ListName(preset.name) << preset.description << ": BF16 "
          << FormatFixed(preset.bf16_flops_per_s / 1e12, 1) << " TFLOP/s, FP8 "
          << (preset.fp8_flops_per_s > 0
                  ? FormatFixed(preset.fp8_flops_per_s / 1e12, 1) + " TFLOP/s"
                  : std::string("none"))
          << ", " << preset.memory_kind << " " << FormatBytes(preset.hbm_bytes) << " at "
          << FormatFixed(preset.hbm_bytes_per_s / 1e9, 0) << " GB/s, " << preset.intra_node_link
          << " " << FormatFixed(preset.nvlink_bytes_per_s / 1e9, 0) << " GB/s, NIC "
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
        << FormatFixed(kNicEfficiency * 100, 1)
        << "% of NIC bandwidth, as nccl-tests measure; A100's NVLink as its measured all-reduce "
           "tables give it)\n";
    return Status::Ok();
  }
  if (what == "collectives") {
    for (const auto& [name, collective] : kCollectiveNames) {
      out << ListName(name) << "busbw = algbw x "
          << (collective == Collective::kAllReduce       ? "2(n-1)/n"
              : BusBandwidthFactor(collective, 2) == 1.0 ? "1"
                                                         : "(n-1)/n")
          << "\n";
    }
    return Status::Ok();
  }
  if (what == "vision") {
    for (const auto& [name, placement] : kVisionPlacementNames) {
      out << ListName(name) << VisionPlacementDescription(placement) << "\n";
    }
    return Status::Ok();
  }
  const std::vector<std::string> choices = {"schedules", "placements",  "p2p",   "metrics",
                                            "presets",   "collectives", "vision"};
  if (what.empty()) {
    return Error{"list needs a topic (expected " + JoinChoices(choices) +
                 ", e.g. 'stagecraft list schedules')"};
  }
  return Error{"cannot list '" + what + "'" + DidYouMean(what, choices) + " (expected " +
               JoinChoices(choices) + ")"};
}

}  // namespace stagecraft
