// Closed form of the shared-state traffic of one iteration (DESIGN.md §4 `state_bytes`), to set
// next to the simulated value: for every flow, m × bytes per crossing, where a payload flow
// crosses every rank-changing cut between its producer's stage and its last consumer's, and a
// direct flow crosses once per consuming rank other than the producer's; dState doubles it for
// differentiable state; a shadow flow ships only its shadow payload, forward, plus once per
// iteration its parameters to the replica on every consuming rank (and their gradients back when
// the replica computes them).
#pragma once

#include <cstdint>
#include <vector>

#include "lower/state_flow.h"

namespace stagecraft {

struct StateBytesClosedForm {
  int64_t forward = 0;
  int64_t backward = 0;
  std::vector<int64_t> crossings;  // [flow] rank crossings per microbatch (hops or transfers)
  int64_t total() const { return forward + backward; }
};

StateBytesClosedForm ClosedFormStateBytes(const std::vector<StateFlow>& flows,
                                          const std::vector<int32_t>& stage_ranks,
                                          int32_t microbatches, int32_t model_copies = 1);

}  // namespace stagecraft
