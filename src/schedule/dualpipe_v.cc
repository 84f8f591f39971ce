// DualPipeV ("cut-in-half" DualPipe: one parameter copy in the V placement; deepseek-ai/DualPipe
// dualpipev.py, after Sea AI Lab's note on DualPipe without the dual). Rank r holds the down
// stage r (phase 0) and the up stage 2p − 1 − r (phase 1); every microbatch runs down and back
// up. The rank program is DualPipe's (dualpipe_steps.cc) with n = p, h = r, c = m. DeepSeek-V3
// Table 2 gives DualPipe's bubble (PP/2 − 1)(F&B + B − 3W) and PP + 1 activations; the V keeps
// that bubble on half the ranks with one parameter copy instead of two (closed_form.cc's
// DualPipeForm, folded, is the form we check).
#include "schedule/dualpipe.h"
#include "schedule/generator.h"

namespace stagecraft {

Result<Schedule> GenerateDualPipeV(const GeneratorParams& params) {
  STAGECRAFT_RETURN_IF_ERROR(CheckVShapeParams(params, "dualpipev"));
  if (params.microbatches < 2 * params.pp) {
    return Error{"dualpipev: needs at least 2p = " + std::to_string(2 * params.pp) +
                 " microbatches (the warm-up of rank 0 alone runs 2p − 1 forwards), got m = " +
                 std::to_string(params.microbatches) + "; raise --microbatches"};
  }
  Schedule schedule = EmptyVSchedule(params, "dualpipev");
  for (int32_t rank = 0; rank < params.pp; ++rank) {
    const VStages stages = VStagesOfRank(rank, params.pp);
    DualPipeRankSpec spec;
    spec.ranks_per_direction = params.pp;
    spec.position = rank;
    spec.microbatches_per_phase = params.microbatches;
    spec.stage[0] = stages.down;
    spec.stage[1] = stages.up;
    AppendDualPipeRank(spec, schedule.rank_actions[rank]);
  }
  return schedule;
}

}  // namespace stagecraft
