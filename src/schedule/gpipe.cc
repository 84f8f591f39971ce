// GPipe (Huang et al., NeurIPS 2019): every rank runs all m forwards, then all m backwards in
// microbatch order. Bubble (p−1)/(m+p−1) of the makespan; every rank holds m activations.
#include "schedule/generator.h"

namespace stagecraft {

Result<Schedule> GenerateGpipe(const GeneratorParams& params) {
  STAGECRAFT_RETURN_IF_ERROR(CheckBasicParams(params, "gpipe"));
  if (params.vpp != 1) {
    return Error{"gpipe: runs one chunk per rank, got vpp = " + std::to_string(params.vpp) +
                 " (use 'looped-bfs' or 'interleaved-1f1b' for several chunks)"};
  }
  Schedule schedule = EmptyLoopSchedule(params, "gpipe");
  for (int32_t rank = 0; rank < params.pp; ++rank) {
    auto& actions = schedule.rank_actions[rank];
    actions.reserve(2 * static_cast<size_t>(params.microbatches));
    for (int32_t microbatch = 0; microbatch < params.microbatches; ++microbatch) {
      actions.push_back({StageId(rank), ActionKind::kForward, MicrobatchId(microbatch)});
    }
    for (int32_t microbatch = 0; microbatch < params.microbatches; ++microbatch) {
      actions.push_back({StageId(rank), ActionKind::kBackward, MicrobatchId(microbatch)});
    }
  }
  return schedule;
}

}  // namespace stagecraft
