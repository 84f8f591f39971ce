// `stagecraft checkpoint CONFIG`: the manifest of a distributed checkpoint of the layout, per
// device, its file layout, and the resume-exactness check (fault/checkpoint_manifest.h); with a
// storage tier, the iteration that ends in a save simulated (fault/checkpoint_save.h).
#pragma once

#include <optional>
#include <string>

#include "commands/transcript.h"
#include "core/result.h"
#include "run/run_setup.h"

namespace stagecraft {

struct CheckpointSpec {
  RunSpec run;                            // CONFIG and the run flags
  std::optional<std::string> reshard_to;  // --reshard-to OTHER.yaml
  std::string omit;                       // --omit a,b: entries left out of the checkpoint
  bool json = false;                      // --json
  // --storage TIER: the save's cost on that tier, and the iteration that ends in a save
  // simulated (its blocking part on the timeline); with --reshard-to, the load time.
  std::optional<std::string> storage;
  bool sync_save = false;                 // --sync-save: with --storage, the write blocks too
  std::optional<std::string> trace_path;  // --trace FILE: Chrome trace of the saving iteration
};

// Exit 1 (kViolation) when the resume-exactness check finds a needed entry missing.
Status RunCheckpoint(const CheckpointSpec& spec, Transcript& transcript);

}  // namespace stagecraft
