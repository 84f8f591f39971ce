// Breadth-first looped pipeline (Lamy-Poirier, "Breadth-First Pipeline Parallelism", MLSys'23):
// loop placement with v chunks per rank; each rank runs the forward of every microbatch on its
// first chunk, then on its second, ...; then the backwards chunk by chunk in reverse. Holds m·v
// chunk activations; with v = 1 it is GPipe.
#include "schedule/generator.h"

namespace stagecraft {

Result<Schedule> GenerateLoopedBfs(const GeneratorParams& params) {
  STAGECRAFT_RETURN_IF_ERROR(CheckBasicParams(params, "looped-bfs"));
  Schedule schedule = EmptyLoopSchedule(params, "looped-bfs");
  for (int32_t rank = 0; rank < params.pp; ++rank) {
    auto& actions = schedule.rank_actions[rank];
    actions.reserve(2 * static_cast<size_t>(params.microbatches) * params.vpp);
    for (int32_t chunk = 0; chunk < params.vpp; ++chunk) {
      for (int32_t microbatch = 0; microbatch < params.microbatches; ++microbatch) {
        actions.push_back(
            {StageId(chunk * params.pp + rank), ActionKind::kForward, MicrobatchId(microbatch)});
      }
    }
    for (int32_t chunk = params.vpp - 1; chunk >= 0; --chunk) {
      for (int32_t microbatch = 0; microbatch < params.microbatches; ++microbatch) {
        actions.push_back(
            {StageId(chunk * params.pp + rank), ActionKind::kBackward, MicrobatchId(microbatch)});
      }
    }
  }
  return schedule;
}

}  // namespace stagecraft
