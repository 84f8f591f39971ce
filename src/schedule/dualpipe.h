// DualPipe and DualPipeV (dualpipe.cc, dualpipe_v.cc) share one rank program
// (dualpipe_steps.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "schedule/action.h"

namespace stagecraft {

struct DualPipeRankSpec {
  int32_t ranks_per_direction = 1;       // n: p/2 for DualPipe, p for DualPipeV
  int32_t position = 0;                  // h: this rank's distance from the end that feeds phase 0
  int32_t microbatches_per_phase = 1;    // c: m/2 for DualPipe, m for DualPipeV
  StageId stage[2];                      // the stage each phase runs
  int32_t first_microbatch[2] = {0, 0};  // microbatch ids of phase k are first..first + c − 1
};

// Appends the rank's actions (6·c of them, F&B pairs as two actions, the second overlapped).
// REQUIRES: 0 <= h < n, c >= 2n.
void AppendDualPipeRank(const DualPipeRankSpec& spec, std::vector<Action>& actions);

}  // namespace stagecraft
