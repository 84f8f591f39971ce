#include "model/model_spec.h"

#include <algorithm>
#include <cassert>

namespace stagecraft {
namespace {

int64_t DivideRounded(int64_t value, int64_t divisor) { return (value + divisor / 2) / divisor; }

}  // namespace

std::vector<StageCost> UniformStageCosts(const ModelSpec& model, int32_t num_stages,
                                         int32_t chunks_per_rank) {
  assert(num_stages >= 1 && chunks_per_rank >= 1);
  StageCost cost;
  cost.forward = Time::Nanoseconds(DivideRounded(model.forward.ns(), chunks_per_rank));
  cost.input_grad = Time::Nanoseconds(DivideRounded(model.input_grad.ns(), chunks_per_rank));
  cost.weight_grad = Time::Nanoseconds(DivideRounded(model.weight_grad.ns(), chunks_per_rank));
  cost.activation_bytes = DivideRounded(model.activation_bytes, chunks_per_rank);
  cost.weight_grad_bytes = DivideRounded(model.weight_grad_bytes, chunks_per_rank);
  cost.p2p_bytes = model.p2p_bytes;
  if (model.fb.ns() > 0) {
    const Time full = model.forward + model.input_grad + model.weight_grad;
    cost.overlap_saving = Time::Nanoseconds(
        DivideRounded(std::max<int64_t>(0, (full - model.fb).ns()), chunks_per_rank));
  }
  return std::vector<StageCost>(static_cast<size_t>(num_stages), cost);
}

}  // namespace stagecraft
