// `stagecraft checkpoint CONFIG`: the manifest of a distributed checkpoint of the layout, per
// device, its file layout, and the resume-exactness check (fault/checkpoint_manifest.h).
#pragma once

#include <optional>
#include <string>

#include "core/result.h"
#include "run/run_setup.h"
#include "run/transcript.h"

namespace stagecraft {

struct CheckpointSpec {
  RunSpec run;                            // CONFIG and the run flags
  std::optional<std::string> reshard_to;  // --reshard-to OTHER.yaml
  std::string omit;                       // --omit a,b: entries left out of the checkpoint
  bool json = false;                      // --json
};

// Exit 1 (kViolation) when the resume-exactness check finds a needed entry missing.
Status RunCheckpoint(const CheckpointSpec& spec, Transcript& transcript);

}  // namespace stagecraft
