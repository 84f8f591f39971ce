#include "analysis/state_closed_form.h"

namespace stagecraft {

StateBytesClosedForm ClosedFormStateBytes(const std::vector<StateFlow>& flows,
                                          const std::vector<int32_t>& stage_ranks,
                                          int32_t microbatches, int32_t model_copies) {
  StateBytesClosedForm form;
  for (const StateFlow& flow : flows) {
    const int64_t receiving_ranks = static_cast<int64_t>(ReceivingStages(flow, stage_ranks).size());
    const int64_t crossings =
        flow.policy == StatePolicy::kDirect ? receiving_ranks : RankCrossings(flow, stage_ranks);
    form.crossings.push_back(crossings);
    const bool shadow = flow.policy == StatePolicy::kShadow;
    const int64_t bytes = shadow ? flow.shadow_bytes : flow.bytes;
    form.forward += microbatches * bytes * crossings;
    if (flow.differentiable && !shadow) form.backward += microbatches * bytes * crossings;
    if (!shadow || flow.shadow_param_bytes <= 0) continue;
    // Once per iteration per replica (one per consuming rank, per model copy: DualPipe holds
    // two): parameters out, gradients back.
    const int64_t replicas = receiving_ranks * model_copies;
    form.forward += flow.shadow_param_bytes * replicas;
    if (flow.shadow_backward.ns() > 0) form.backward += flow.shadow_param_bytes * replicas;
  }
  return form;
}

}  // namespace stagecraft
