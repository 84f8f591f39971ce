// DualPipe (DeepSeek-V3 technical report §3.2.1, Figure 5; the order of deepseek-ai/DualPipe):
// bidirectional pipeline parallelism. Every rank holds two copies of parameters: stage r of the
// copy fed from rank 0 and stage p − 1 − r of the copy fed from rank p − 1 (the `dual`
// placement). Microbatches 0..m/2 − 1 enter at rank 0, m/2..m − 1 at rank p − 1. Rank r runs the
// DualPipe rank program (dualpipe_steps.cc) with n = p/2, h = min(r, p − 1 − r), c = m/2; on the
// upper half of the ranks phase 0 is the copy fed from rank p − 1. Table 2 of the report: bubble
// (PP/2 − 1)(F&B + B − 3W), parameters 2×, activations PP + 1.
#include "schedule/dualpipe.h"

#include "schedule/generator.h"

namespace stagecraft {

Result<Schedule> GenerateDualPipe(const GeneratorParams& params) {
  STAGECRAFT_RETURN_IF_ERROR(CheckBasicParams(params, "dualpipe"));
  const int32_t p = params.pp;
  const int32_t m = params.microbatches;
  if (params.vpp != 1) {
    return Error{
        "dualpipe: holds one stage of each of two model copies per rank (vpp 1), got vpp = " +
        std::to_string(params.vpp) + " (for one copy in a V, use 'dualpipev' with vpp 2)"};
  }
  if (p < 2 || p % 2 != 0) {
    return Error{
        "dualpipe: needs an even pipeline size (the two directions meet in the middle), "
        "got pp = " +
        std::to_string(p) + "; use an even --pp, or 'dualpipev' for any pp"};
  }
  if (m % 2 != 0 || m < 2 * p) {
    return Error{
        "dualpipe: needs an even number of microbatches, at least 2p = " + std::to_string(2 * p) +
        " (half enter at each end), got m = " + std::to_string(m) + "; raise --microbatches"};
  }
  Schedule schedule = EmptyLoopSchedule(params, "dualpipe");
  schedule.placement = Placement::kDual;
  const int32_t half = m / 2;
  for (int32_t rank = 0; rank < p; ++rank) {
    const bool upper = rank >= p / 2;
    DualPipeRankSpec spec;
    spec.ranks_per_direction = p / 2;
    spec.position = upper ? p - 1 - rank : rank;
    spec.microbatches_per_phase = half;
    // Phase 0 is the copy this rank is nearer the entry of.
    const int first_copy_phase = upper ? 1 : 0;
    spec.stage[first_copy_phase] = StageId(rank);
    spec.first_microbatch[first_copy_phase] = 0;
    spec.stage[1 - first_copy_phase] = StageId(p - 1 - rank);
    spec.first_microbatch[1 - first_copy_phase] = half;
    AppendDualPipeRank(spec, schedule.rank_actions[rank]);
  }
  return schedule;
}

}  // namespace stagecraft
