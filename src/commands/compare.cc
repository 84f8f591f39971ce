// Side-by-side runs of one layer-list model: the state-aware partition next to the cost-only
// one, every shared-state movement policy (`simulate --compare-policies`) and every placement of
// a vision encoder (`simulate --compare-vision`). Each row carries its memory verdict. A variant
// is the user's RunSpec with one more edit, prepared by PrepareRun like the headline run, so
// the row of the configured variant is the headline's run.
#include <algorithm>
#include <sstream>

#include "commands/commands.h"
#include "core/text_table.h"
#include "core/units.h"
#include "run/memory_verdict.h"

namespace stagecraft {
namespace {

// The fullest device's total (model states, activations and state, reserve) in GiB and the
// verdict, right-aligned under "memory_fullest  fits": "   61.20 GiB   yes", "   77.39 GiB  OVER",
// "?" with no capacity to compare with (run/memory_verdict.h).
std::string MemoryCells(const MemoryInfo& memory) {
  return PadLeft(FormatGib(memory.peak_bytes) + " GiB", 16) + PadLeft(!memory.capacity_known ? "?"
                                                                      : memory.fits          ? "yes"
                                                                                    : "OVER",
                                                                      6);
}

// The side-by-side table (TextTable: a large figure widens its column).
TextTable VariantTable() {
  return TextTable("  ", {{"variant", TextAlign::kLeft, 14},
                          {"makespan_ms", TextAlign::kRight, 16},
                          {"bubble_fraction", TextAlign::kRight, 17},
                          {"state_bytes", TextAlign::kRight, 14},
                          {"state_exposed_ms", TextAlign::kRight, 18},
                          {"memory_fullest", TextAlign::kRight, 16},
                          {"fits", TextAlign::kRight, 6}});
}

void AddRow(TextTable& table, const std::string& name, const RunOutcome& variant) {
  const Metrics& metrics = variant.metrics;
  const MemoryInfo& memory = variant.info.memory;
  table.AddRow({name, FormatMs(metrics.makespan), FormatFixed(metrics.bubble_fraction, 6),
                FormatBytes(metrics.state_bytes()), FormatMs(metrics.state_exposed),
                FormatGib(memory.peak_bytes) + " GiB",
                !memory.capacity_known ? "?"
                : memory.fits          ? "yes"
                                       : "OVER"});
}

// `spec` with `change` applied to its config after everything else the spec does.
RunSpec WithEdit(const RunSpec& spec, std::function<void(Config&)> change) {
  RunSpec variant = spec;
  variant.edit = [edit = spec.edit, change = std::move(change)](Config& config) -> Status {
    if (edit) STAGECRAFT_RETURN_IF_ERROR(edit(config));
    change(config);
    return Status::Ok();
  };
  return variant;
}

// A failed variant as the table's caller reports it: the error as the command line shows it.
Error VariantError(const Error& error) { return Error{FormatError(error)}; }

}  // namespace

Result<std::string> ComparePartitions(const RunSpec& spec) {
  TextTable table = VariantTable();
  for (PartitionMethod method : {PartitionMethod::kStateAware, PartitionMethod::kCost}) {
    auto variant = SimulateSpec(
        WithEdit(spec, [method](Config& config) { config.parallel.partition = method; }));
    if (!variant.ok()) return VariantError(variant.error());
    AddRow(table, PartitionMethodName(method), variant.value());
  }
  return "partitions side by side:\n" + table.Render();
}

Result<std::string> ComparePolicies(const RunSpec& spec) {
  TextTable table = VariantTable();
  for (StatePolicy policy :
       {StatePolicy::kPayload, StatePolicy::kDirect, StatePolicy::kShadow, StatePolicy::kAuto}) {
    auto variant = SimulateSpec(
        WithEdit(spec, [policy](Config& config) { config.schedule.state_policy = policy; }));
    if (!variant.ok()) return VariantError(variant.error());
    AddRow(table, StatePolicyName(policy), variant.value());
  }
  return "shared-state policies side by side:\n" + table.Render();
}

Result<std::string> CompareVision(const RunSpec& spec, const PreparedRun& base) {
  std::string text = "vision-encoder placements side by side (" +
                     std::to_string(base.multimodal.vision_work.image_count) + " images, " +
                     FormatImageTokens(base.config.multimodal.vision.image_tokens) +
                     " tokens each):\n" +
                     "  placement       gpus     makespan_ms  bubble_fraction  on_first_rank_ms  "
                     "memory_fullest  fits  encoder_states  engram_exposed_ms\n";
  for (const auto& [placement_name, placement] : kVisionPlacementNames) {
    const std::string name = placement_name;
    std::string row = "  " + name + std::string(name.size() < 14 ? 14 - name.size() : 1, ' ');
    auto run = PrepareRun(WithEdit(spec, [placement = placement](Config& config) {
      config.multimodal.vision.placement = placement;
    }));
    if (!run.ok()) {  // the base run prepared: the placement is what cannot be
      text += row + "  not possible: " + run.error().message + "\n";
      continue;
    }
    auto simulated = SimulatePrepared(run.value());
    if (!simulated.ok()) return VariantError(simulated.error());
    const RunOutcome& outcome = simulated.value();
    const int64_t gpus = static_cast<int64_t>(run.value().config.parallel.world_size()) +
                         run.value().multimodal.extra_devices;
    text += row + PadLeft(std::to_string(gpus), 6) +
            PadLeft(FormatMs(outcome.metrics.makespan), 16) +
            PadLeft(FormatFixed(outcome.metrics.bubble_fraction, 6), 17) +
            PadLeft(FormatMs(outcome.info.multimodal.vision_on_first_rank), 18) +
            MemoryCells(outcome.info.memory) +
            PadLeft(FormatBytes(static_cast<int64_t>(outcome.info.multimodal.encoder_state_bytes)),
                    16) +
            PadLeft(FormatMs(outcome.info.multimodal.engram_exposed), 19) + "\n";
  }
  return text;
}

}  // namespace stagecraft
