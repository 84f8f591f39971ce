// What a checkpoint of this layout must hold so that the resumed run continues exactly as the
// uninterrupted one would: per device (one per pipeline rank, as `stagecraft memory` reports
// them) the sharded model states as ZeRO / FSDP / Megatron's distributed optimizer keep them,
// and the small states that decide the next steps (loss scale, schedules, RNG, the data
// position). Gradients are counted but not saved: the next step's backward recomputes them
// (PyTorch DCP and Megatron's dist-checkpointing save the model and optimizer state dicts, not
// the .grad buffers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "run/memory_verdict.h"
#include "run/run_setup.h"

namespace stagecraft {

struct ManifestEntry {
  std::string name;      // "weights", "adam-m", "rng-cuda", ...
  double bytes = 0;      // on one device
  bool saved = true;     // false: recomputed on resume (gradients) or --omit-ted
  bool needed = true;    // false: not part of the state (gradients)
  std::string diverges;  // what a resume without it gets wrong
};

struct RankManifest {
  int32_t rank = 0;  // pipeline rank (its devices: tp · cp · dp of them)
  std::vector<ManifestEntry> entries;
  double saved_bytes = 0;        // the saved entries' sum
  double model_state_bytes = 0;  // weights + optimizer + gradients (memory's states)
};

struct CheckpointManifest {
  std::vector<RankManifest> ranks;
  int64_t devices_per_rank = 1;        // tp · cp · dp: devices behind one pipeline rank's row
  int64_t files = 0;                   // one shard per device, plus the metadata file
  double total_bytes = 0;              // unique bytes over the world (replicas written once)
  std::vector<ManifestEntry> missing;  // needed entries not saved (resume-exactness)
};

// REQUIRES: memory = ComputeMemory(run, its simulation), states known (transformer or layer
// list). `omit` names entries to leave out (the resume-exactness check names what breaks).
Result<CheckpointManifest> BuildManifest(const PreparedRun& run, const MemoryReport& memory,
                                         const std::vector<std::string>& omit);

// The entry names, for --omit's "did you mean".
std::vector<std::string> ManifestEntryNames();

}  // namespace stagecraft
