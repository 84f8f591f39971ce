#include "multimodal/contrastive.h"

#include <string>

namespace stagecraft {

Result<ContrastiveLoss> ParseContrastiveLoss(std::string_view name) {
  if (const auto loss = kContrastiveLossNames.Parse(name)) return *loss;
  return Error{"unknown contrastive loss '" + std::string(name) + "'" +
               kContrastiveLossNames.DidYouMean(name) + " (expected " +
               kContrastiveLossNames.Joined() + ")"};
}

ContrastiveCost ContrastiveLossCost(ContrastiveLoss loss, int32_t ranks, int64_t local_batch,
                                    int64_t width, int32_t bytes) {
  const double d = ranks;
  const double b = static_cast<double>(local_batch);
  const double block = b * static_cast<double>(width) * bytes;  // one modality, one rank
  const double global = d * b;
  ContrastiveCost cost;
  switch (loss) {
    case ContrastiveLoss::kGlobal:
      cost.logits_bytes = global * global * 4;
      cost.received_bytes = cost.sent_bytes = 2 * (d - 1) * block;
      cost.steps = ranks > 1 ? 2 : 0;
      break;
    case ContrastiveLoss::kLocal:
      cost.logits_bytes = b * global * 4;
      cost.received_bytes = cost.sent_bytes = 2 * (d - 1) * block;
      cost.steps = ranks > 1 ? 2 : 0;
      break;
    case ContrastiveLoss::kSigLipRing:
      cost.logits_bytes = b * b * 4;
      cost.received_bytes = cost.sent_bytes = (d - 1) * block;
      cost.steps = ranks - 1;
      break;
  }
  return cost;
}

}  // namespace stagecraft
