// 1F1B in Megatron's order (Narayanan et al., SC'21; Megatron-LM
// forward_backward_pipelining_without_interleaving): rank r runs w = min(p−r−1, m) warm-up
// forwards, then m−w pairs (forward, backward), then w cool-down backwards. Rank r holds at most
// min(p−r, m) activations; bubble (p−1)/(m+p−1) of the makespan, like GPipe.
#include <algorithm>

#include "schedule/generator.h"

namespace stagecraft {

Result<Schedule> GenerateOneFOneB(const GeneratorParams& params) {
  STAGECRAFT_RETURN_IF_ERROR(CheckBasicParams(params, "1f1b"));
  if (params.vpp != 1) {
    return Error{"1f1b: runs one chunk per rank, got vpp = " + std::to_string(params.vpp) +
                 " (use 'interleaved-1f1b' for several chunks per rank)"};
  }
  Schedule schedule = EmptyLoopSchedule(params, "1f1b");
  const int32_t m = params.microbatches;
  for (int32_t rank = 0; rank < params.pp; ++rank) {
    const StageId stage(rank);
    const int32_t warmup = std::min(params.pp - rank - 1, m);
    auto& actions = schedule.rank_actions[rank];
    actions.reserve(2 * static_cast<size_t>(m));
    for (int32_t microbatch = 0; microbatch < warmup; ++microbatch) {
      actions.push_back({stage, ActionKind::kForward, MicrobatchId(microbatch)});
    }
    for (int32_t step = 0; step < m - warmup; ++step) {
      actions.push_back({stage, ActionKind::kForward, MicrobatchId(warmup + step)});
      actions.push_back({stage, ActionKind::kBackward, MicrobatchId(step)});
    }
    for (int32_t microbatch = m - warmup; microbatch < m; ++microbatch) {
      actions.push_back({stage, ActionKind::kBackward, MicrobatchId(microbatch)});
    }
  }
  return schedule;
}

}  // namespace stagecraft
