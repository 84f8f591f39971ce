#include "run/run_shape.h"

#include <cstdint>
#include <string>
#include <utility>

#include "hardware/presets.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace {

// The cluster of --hf-config without a config file: one node of this preset (--cluster changes it).
constexpr const char* kHfDefaultCluster = "h100";

}  // namespace

Result<Config> HfDefaultConfig() {
  Config config;
  auto cluster = ClusterFromPreset(kHfDefaultCluster);
  if (!cluster.ok()) return cluster.error();
  config.cluster = std::move(cluster).value();
  config.parallel.pp = 1;
  return config;
}

Status ApplyClusterFlag(const RunSpec& flags, PreparedRun& run) {
  if (!flags.cluster) return Status::Ok();
  auto cluster = ClusterFromPreset(*flags.cluster);
  if (!cluster.ok()) return Error{"--cluster: " + cluster.error().message};
  run.config.cluster = std::move(cluster).value();
  for (const auto& [path, where] : run.locations.by_path) {
    if (path.rfind("cluster.", 0) != 0 || path == "cluster.preset") continue;
    if (path.find('.', std::string("cluster.").size()) != std::string::npos) continue;
    run.notes.push_back(where + ": " + path + ": ignored: --cluster " + *flags.cluster +
                        " replaces the config's cluster section");
  }
  return Status::Ok();
}

void FillDataParallel(const RunSpec& flags, PreparedRun& run) {
  if (!flags.config_path.empty() || !flags.hf_config || flags.from_torchtitan ||
      flags.from_deepspeed) {
    return;  // no config file, or an engine export that gives the layout
  }
  ParallelSpec& parallel = run.config.parallel;
  const int64_t model_ranks = int64_t{parallel.pp} * parallel.tp * parallel.cp;
  const int32_t devices = run.config.cluster.num_devices();
  if (!flags.dp && model_ranks <= devices) {
    parallel.dp = static_cast<int32_t>(devices / model_ranks);
  }
  run.notes.push_back(
      "--hf-config without a config file: " + std::to_string(run.config.cluster.nodes) +
      (run.config.cluster.nodes == 1 ? " node" : " nodes") + " of " +
      std::to_string(run.config.cluster.devices_per_node) + " " + run.config.cluster.device +
      (flags.cluster ? "" : std::string(" (--cluster ") + kHfDefaultCluster + ")") + ", pp " +
      std::to_string(parallel.pp) + ", tp " + std::to_string(parallel.tp) + ", cp " +
      std::to_string(parallel.cp) + ", dp " + std::to_string(parallel.dp) +
      (flags.dp ? "" : " (the devices left over by pp x tp x cp, as Megatron derives it)") +
      "; flags change them, or give a config file (doc/config.md, \"HuggingFace models\")");
}

void ImplyChunksPerRank(const RunSpec& flags, PreparedRun& run) {
  const int32_t required = RequiredChunksPerRank(run.config.schedule.name);
  ParallelSpec& parallel = run.config.parallel;
  if (required == 0 || parallel.vpp == required || !run.config.schedule.csv.empty() || flags.vpp ||
      run.locations.by_path.count("parallel.vpp") > 0) {
    return;
  }
  parallel.vpp = required;
  run.notes.push_back("schedule " + run.config.schedule.name + " runs " + std::to_string(required) +
                      " chunks per rank in a V: vpp " + std::to_string(required) +
                      " implied (--vpp " + std::to_string(required) + ")");
}

void NoteIdleDevices(const RunSpec& flags, PreparedRun& run) {
  const Config& c = run.config;
  if (!c.cluster.given) return;
  const ParallelSpec& parallel = c.parallel;
  const int64_t model_ranks = int64_t{parallel.pp} * parallel.tp * parallel.cp;
  int64_t used = model_ranks * parallel.dp;
  const VisionSpec& vision = c.multimodal.vision;
  // Devices the config gives the vision encoder are its own, whichever placement runs.
  const bool encoder_devices = vision.given && vision.devices > 0;
  if (encoder_devices) used += int64_t{vision.devices} * parallel.dp * parallel.cp * parallel.tp;
  const int64_t devices = c.cluster.num_devices();
  if (used >= devices) return;
  std::string hint;
  if (!encoder_devices && devices % model_ranks == 0) {
    hint = "; dp " + std::to_string(devices / model_ranks) + " would fill it";
  } else if (!encoder_devices) {
    hint = "; no dp fills it: pick pp, tp and cp whose product divides " + std::to_string(devices);
  }
  const std::string where = flags.cluster ? "--cluster " + *flags.cluster + ": "
                            : run.locations.by_path.count("cluster") > 0
                                ? run.locations.Where("cluster")
                                : "cluster: ";
  run.notes.push_back(
      where + "pp " + std::to_string(parallel.pp) + " x tp " + std::to_string(parallel.tp) +
      " x cp " + std::to_string(parallel.cp) + " x dp " + std::to_string(parallel.dp) +
      (encoder_devices ? " (and the vision encoder's devices)" : "") + " use " +
      std::to_string(used) + " of the cluster's " + std::to_string(devices) +
      " GPUs: " + std::to_string(devices - used) + " (GPUs " + std::to_string(used) + "-" +
      std::to_string(devices - 1) + ") stay idle; Megatron's world size is pp x tp x cp x dp" +
      hint + " (or choose a smaller cluster)");
}

}  // namespace stagecraft
