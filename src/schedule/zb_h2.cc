// ZB-H2 (Zero Bubble Pipeline Parallelism, Qi et al., ICLR 2024, §3.1 and Figure 3 bottom): ZB-H1
// with twice the warm-up and twice the deferral. Rank r runs min(2(p−r−1), m) warm-up forwards,
// so the F passes fill the time before its first I (rank 0 holds 2p − 1 activations), and defers
// 2r W passes to its tail, which turns the trapezoid into a parallelogram: with F = I = W no rank
// idles between its first and last action. Bubble (p−1)(F+I−2W) per rank span (Table 2) when
// m >= 2p − 1 and W <= min(F, I); rank r holds at most (2(p−r)−1)·M_B + 2r·M_W bytes.
#include <algorithm>

#include "schedule/generator.h"

namespace stagecraft {

Result<Schedule> GenerateZbH2(const GeneratorParams& params) {
  STAGECRAFT_RETURN_IF_ERROR(
      CheckOneChunkParams(params, "zb-h2", "use 'interleaved-1f1b' for several chunks per rank"));
  Schedule schedule = EmptyLoopSchedule(params, "zb-h2");
  const int32_t m = params.microbatches;
  for (int32_t rank = 0; rank < params.pp; ++rank) {
    const int32_t warmup = std::min(2 * (params.pp - rank - 1), m);
    AppendSplitBackwardRank(StageId(rank), m, warmup, /*deferred_weight_grads=*/2 * rank,
                            schedule.rank_actions[rank]);
  }
  return schedule;
}

}  // namespace stagecraft
