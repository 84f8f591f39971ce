#include "fault/checkpoint_manifest.h"

#include <algorithm>

#include "core/suggest.h"
#include "memory/model_states.h"
#include "multimodal/engram.h"
#include "schedule/schedule.h"

namespace stagecraft {
namespace {

// Bytes of the small states (per device). Sources:
//   torch.get_rng_state(): the CPU generator's mt19937 state, a 5056-byte ByteTensor;
//   torch.cuda.get_rng_state(): Philox seed and offset, 16 bytes;
//   Megatron's CudaRNGStatesTracker ("model-parallel-rng"): one more CUDA state per device, so
//   dropout inside tensor-parallel regions differs across tp ranks and repeats on resume;
//   GradScaler.state_dict(): scale, growth factor, backoff, interval, tracker: 5 numbers.
constexpr double kCpuRngBytes = 5056;
constexpr double kCudaRngBytes = 16;
constexpr double kScalarBytes = 8;

std::vector<ManifestEntry> DeviceEntries(const ParallelSpec& parallel, const RankMemory& memory) {
  const BytesPerParam per_param = ModelStateBytesPerParam(parallel.precision);
  // Adam's m and v are fp32 (4 B each); the rest of the optimizer state is the fp32 master copy.
  const double optimizer = memory.states.optimizer;
  const double moment = per_param.optimizer > 0 ? optimizer * 4.0 / per_param.optimizer : 0;
  std::vector<ManifestEntry> entries = {
      {"weights", memory.states.parameters, true, true,
       "the model's parameters: the resumed run starts from other weights"},
      {"master-weights", optimizer - 2 * moment, true, true,
       "the fp32 master copy: rounding the bf16 weights up loses the low bits of every update"},
      {"adam-m", moment, true, true, "Adam's first moment: the next updates differ"},
      {"adam-v", moment, true, true, "Adam's second moment: the next updates differ"},
      {"optimizer-step", kScalarBytes, true, true,
       "Adam's step count: bias correction restarts as at step 1"},
      {"gradients", memory.states.gradients, false, false,
       "not needed: the next step's backward recomputes them"},
      {"lr-scheduler", 2 * kScalarBytes, true, true,
       "the scheduler's step and last rate: warm-up and decay restart"},
      {"rng-cpu", kCpuRngBytes, true, true,
       "the CPU generator: data augmentation and sampling draw other numbers"},
      {"rng-cuda", kCudaRngBytes, true, true,
       "the device generator: dropout masks differ from the uninterrupted run"},
      {"data-position", 2 * kScalarBytes, true, true,
       "samples consumed and the epoch of this data-parallel rank: the run sees data again or "
       "skips it"},
  };
  if (parallel.tp > 1) {
    entries.push_back({"rng-tp", kCudaRngBytes, true, true,
                       "the tensor-parallel RNG tracker: dropout inside tp regions differs"});
  }
  if (parallel.precision == TrainingPrecision::kFp16) {
    entries.push_back({"loss-scaler", 5 * kScalarBytes, true, true,
                       "the loss scale and its growth tracker: a restart at 2^16 skips steps the "
                       "uninterrupted run does not"});
  }
  return entries;
}

// Engram layers (csa2.md, "Engram at scale"): the rows of each table are sharded over the
// owners; a device of a rank holding Engram layers keeps its owner's share of their tables
// (multimodal/engram.h), which training updates, so they are saved. Not in memory's model
// states (the tables are looked up, not multiplied).
std::vector<double> EngramBytesPerRank(const PreparedRun& run) {
  std::vector<double> bytes(static_cast<size_t>(run.schedule.num_ranks), 0.0);
  if (!run.multimodal.engram) return bytes;
  const EngramSharding& engram = run.config.multimodal.engram;
  const std::vector<int32_t> stage_ranks = StageRanks(run.schedule);
  std::vector<int32_t> layers(bytes.size(), 0);
  for (size_t stage = 0; stage < run.multimodal.engram_layers.size(); ++stage) {
    if (stage < stage_ranks.size() && stage_ranks[stage] >= 0) {
      layers[static_cast<size_t>(stage_ranks[stage])] += run.multimodal.engram_layers[stage];
    }
  }
  for (size_t rank = 0; rank < bytes.size(); ++rank) {
    if (layers[rank] == 0) continue;
    bytes[rank] =
        static_cast<double>(EngramOwnerBytes(EngramTables(engram, layers[rank]), engram.owners));
  }
  return bytes;
}

// Bytes per parameter of the model-state entries, as DeviceEntries splits them.
std::vector<std::pair<std::string, double>> ModelEntryBytesPerParam(const ParallelSpec& parallel) {
  const BytesPerParam bytes = ModelStateBytesPerParam(parallel.precision);
  const double moment = bytes.optimizer > 0 ? 4.0 : 0.0;
  return {{"weights", bytes.parameters},
          {"master-weights", bytes.optimizer - 2 * moment},
          {"adam-m", moment},
          {"adam-v", moment}};
}

}  // namespace

std::vector<std::string> ManifestEntryNames() {
  ParallelSpec every;
  every.tp = 2;
  every.precision = TrainingPrecision::kFp16;
  std::vector<std::string> names;
  for (const ManifestEntry& entry : DeviceEntries(every, RankMemory{})) names.push_back(entry.name);
  names.push_back("engram-tables");
  return names;
}

Result<CheckpointManifest> BuildManifest(const PreparedRun& run, const MemoryReport& memory,
                                         const std::vector<std::string>& omit) {
  const ParallelSpec& parallel = run.config.parallel;
  const std::vector<std::string> names = ManifestEntryNames();
  for (const std::string& name : omit) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return Error{"--omit: unknown entry '" + name + "'" + DidYouMean(name, names) +
                   " (expected " + JoinChoices(names) + ")"};
    }
  }
  CheckpointManifest manifest;
  const int64_t replicas = static_cast<int64_t>(parallel.dp) * parallel.cp;
  manifest.devices_per_rank = static_cast<int64_t>(parallel.tp) * replicas;
  manifest.files = manifest.devices_per_rank * parallel.pp + 1;
  // The unique total: every parameter's model states once (DCP deduplicates the replicas,
  // Megatron's fully parallel save splits them), whatever the sharding or the experts' layout;
  // the small states and Engram shares once per device.
  const double model_params =
      run.parallel_plan.params + (run.multimodal.vision ? run.multimodal.vision_work.params : 0.0);
  const std::vector<std::pair<std::string, double>> per_param = ModelEntryBytesPerParam(parallel);
  const std::vector<double> engram_bytes = EngramBytesPerRank(run);
  for (const RankMemory& device : memory.ranks) {
    RankManifest row;
    row.rank = device.rank;
    row.entries = DeviceEntries(parallel, device);
    const auto index = static_cast<size_t>(device.rank);
    if (index < engram_bytes.size() && engram_bytes[index] > 0) {
      row.entries.push_back({"engram-tables", engram_bytes[index], true, true,
                             "this owner's rows of the Engram tables: lookups return other "
                             "embeddings"});
    }
    row.model_state_bytes = device.states.total();
    for (ManifestEntry& entry : row.entries) {
      if (std::find(omit.begin(), omit.end(), entry.name) != omit.end()) entry.saved = false;
      if (!entry.saved) continue;
      row.saved_bytes += entry.bytes;
      const auto model_entry = std::find_if(
          per_param.begin(), per_param.end(),
          [&](const std::pair<std::string, double>& kind) { return kind.first == entry.name; });
      if (model_entry == per_param.end()) {
        manifest.total_bytes += entry.bytes * static_cast<double>(manifest.devices_per_rank);
      } else if (&device == &memory.ranks.front()) {
        manifest.total_bytes += model_params * model_entry->second;
      }
    }
    manifest.ranks.push_back(std::move(row));
  }
  for (const RankManifest& row : manifest.ranks) {
    for (const ManifestEntry& entry : row.entries) {
      const bool listed =
          std::any_of(manifest.missing.begin(), manifest.missing.end(),
                      [&](const ManifestEntry& missing) { return missing.name == entry.name; });
      if (entry.needed && !entry.saved && !listed) manifest.missing.push_back(entry);
    }
  }
  return manifest;
}

}  // namespace stagecraft
