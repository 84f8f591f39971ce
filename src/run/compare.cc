// Side-by-side runs of one layer-list model: the state-aware partition next to the cost-only
// one, every shared-state movement policy (`simulate --compare-policies`) and every placement of
// a vision encoder (`simulate --compare-vision`). Each row carries its memory verdict.
#include <algorithm>
#include <sstream>

#include "run/commands.h"
#include "run/memory_verdict.h"
#include "core/units.h"

namespace stagecraft {
namespace {

// The fullest device's total (model states, activations and state, reserve) in GiB and the
// verdict, right-aligned under "memory_fullest  fits": "   61.20 GiB   yes", "   77.39 GiB  OVER",
// "?" with no capacity to compare with (run/memory_verdict.h).
std::string MemoryCells(const MemoryInfo& memory) {
  return PadLeft(FormatGib(memory.peak_bytes) + " GiB", 16) +
         PadLeft(!memory.capacity_known ? "?" : memory.fits ? "yes" : "OVER", 6);
}

// A simulated variant: its metrics and memory verdict.
struct Variant {
  Metrics metrics;
  MemoryInfo memory;
};

std::string Row(const std::string& name, const Variant& variant) {
  const Metrics& metrics = variant.metrics;
  return "  " + name + std::string(name.size() < 14 ? 14 - name.size() : 1, ' ') +
         PadLeft(FormatMs(metrics.makespan), 16) +
         PadLeft(FormatFixed(metrics.bubble_fraction, 6), 17) +
         PadLeft(FormatBytes(metrics.state_bytes()), 14) +
         PadLeft(FormatMs(metrics.state_exposed), 18) +
         MemoryCells(variant.memory) + "\n";
}

const char* kHeader =
    "  variant            makespan_ms  bubble_fraction   state_bytes  state_exposed_ms  "
    "memory_fullest  fits\n";

// Re-plans the layer model of `base` after `change`, then simulates it.
template <typename Change>
Result<Variant> SimulateVariant(const PreparedRun& base, Change change) {
  PreparedRun run = base;
  run.notes.clear();
  change(run.config);
  STAGECRAFT_RETURN_IF_ERROR(PrepareLayerModel(run));
  auto multimodal = PlanMultimodal(run);  // Engram layers per stage follow the partition
  if (!multimodal.ok()) return multimodal.error();
  run.multimodal = std::move(multimodal).value();
  RunOutcome simulated;
  std::ostringstream err;
  if (!SimulateRun(run, simulated, err).ok()) return Error{err.str()};
  return Variant{simulated.metrics, ComputeMemory(run, simulated).verdict};
}

}  // namespace

Result<std::string> ComparePartitions(const PreparedRun& run) {
  std::string text = "partitions side by side:\n" + std::string(kHeader);
  for (PartitionMethod method : {PartitionMethod::kStateAware, PartitionMethod::kCost}) {
    auto variant =
        SimulateVariant(run, [method](Config& config) { config.parallel.partition = method; });
    if (!variant.ok()) return variant.error();
    text += Row(PartitionMethodName(method), variant.value());
  }
  return text;
}

Result<std::string> ComparePolicies(const PreparedRun& run) {
  std::string text = "shared-state policies side by side:\n" + std::string(kHeader);
  for (StatePolicy policy :
       {StatePolicy::kPayload, StatePolicy::kDirect, StatePolicy::kShadow, StatePolicy::kAuto}) {
    auto variant =
        SimulateVariant(run, [policy](Config& config) { config.schedule.state_policy = policy; });
    if (!variant.ok()) return variant.error();
    text += Row(StatePolicyName(policy), variant.value());
  }
  return text;
}

Result<std::string> CompareVision(const PreparedRun& base) {
  std::string text = "vision-encoder placements side by side (" +
                     std::to_string(base.multimodal.vision_work.image_count) + " images, " +
                     FormatImageTokens(base.config.multimodal.vision.image_tokens) +
                     " tokens each):\n" +
                     "  placement       gpus     makespan_ms  bubble_fraction  on_first_rank_ms  "
                     "memory_fullest  fits  encoder_states  engram_exposed_ms\n";
  for (const auto& [name, placement] : VisionPlacementChoices()) {
    PreparedRun run = base;
    run.config.multimodal.vision.placement = placement;
    std::string row = "  " + name + std::string(name.size() < 14 ? 14 - name.size() : 1, ' ');
    auto multimodal = PlanMultimodal(run);
    if (!multimodal.ok()) {
      text += row + "  not possible: " + multimodal.error().message + "\n";
      continue;
    }
    run.multimodal = std::move(multimodal).value();
    RunOutcome simulated;
    std::ostringstream err;
    if (!SimulateRun(run, simulated, err).ok()) return Error{err.str()};
    RunInfo info;
    info.multimodal = DescribeMultimodal(run, simulated.graph, simulated.trace, simulated.vision);
    const int64_t gpus =
        static_cast<int64_t>(run.config.parallel.world_size()) + run.multimodal.extra_devices;
    text += row + PadLeft(std::to_string(gpus), 6) +
            PadLeft(FormatMs(simulated.metrics.makespan), 16) +
            PadLeft(FormatFixed(simulated.metrics.bubble_fraction, 6), 17) +
            PadLeft(FormatMs(info.multimodal.vision_on_first_rank), 18) +
            MemoryCells(ComputeMemory(run, simulated).verdict) +
            PadLeft(FormatBytes(static_cast<int64_t>(info.multimodal.encoder_state_bytes)), 16) +
            PadLeft(FormatMs(info.multimodal.engram_exposed), 19) + "\n";
  }
  return text;
}

}  // namespace stagecraft
