// ZB-H1 (Zero Bubble Pipeline Parallelism, Qi et al., ICLR 2024, §3.1 and Figure 3 top): 1F1B
// with the backward split into I (input gradient) and W (weight gradient). Rank r runs 1F1B's
// min(p−r−1, m) warm-up forwards and its F/I alternation, but defers its first r W passes: after
// the I of microbatch k comes the W of microbatch k − r, and the last r W passes fill the
// cool-down. Rank r holds at most p − r activations ((p−r)·M_B + r·M_W bytes, worker i = r + 1 of
// the paper) and the bubble is (p−1)(F+I−W) (Table 2) when m >= p and W <= min(F, I).
#include <algorithm>

#include "schedule/generator.h"

namespace stagecraft {

void AppendSplitBackwardRank(StageId stage, int32_t microbatches, int32_t warmup,
                             int32_t deferred_weight_grads, std::vector<Action>& actions) {
  actions.reserve(actions.size() + 3 * static_cast<size_t>(microbatches));
  const auto append = [&](ActionKind kind, int32_t microbatch) {
    actions.push_back({stage, kind, MicrobatchId(microbatch)});
  };
  const auto input_grad_then_weight_grad = [&](int32_t microbatch) {
    append(ActionKind::kInputGrad, microbatch);
    if (microbatch >= deferred_weight_grads) {
      append(ActionKind::kWeightGrad, microbatch - deferred_weight_grads);
    }
  };
  for (int32_t microbatch = 0; microbatch < warmup; ++microbatch) {
    append(ActionKind::kForward, microbatch);
  }
  for (int32_t step = 0; step < microbatches - warmup; ++step) {
    append(ActionKind::kForward, warmup + step);
    input_grad_then_weight_grad(step);
  }
  for (int32_t microbatch = microbatches - warmup; microbatch < microbatches; ++microbatch) {
    input_grad_then_weight_grad(microbatch);
  }
  for (int32_t microbatch = std::max(0, microbatches - deferred_weight_grads);
       microbatch < microbatches; ++microbatch) {
    append(ActionKind::kWeightGrad, microbatch);
  }
}

Result<Schedule> GenerateZbH1(const GeneratorParams& params) {
  STAGECRAFT_RETURN_IF_ERROR(
      CheckOneChunkParams(params, "zb-h1", "use 'interleaved-1f1b' for several chunks per rank"));
  Schedule schedule = EmptyLoopSchedule(params, "zb-h1");
  const int32_t m = params.microbatches;
  for (int32_t rank = 0; rank < params.pp; ++rank) {
    const int32_t warmup = std::min(params.pp - rank - 1, m);
    AppendSplitBackwardRank(StageId(rank), m, warmup, /*deferred_weight_grads=*/rank,
                            schedule.rank_actions[rank]);
  }
  return schedule;
}

}  // namespace stagecraft
