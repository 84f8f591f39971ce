// Contrastive (CLIP / SigLIP) losses across D data-parallel ranks with a local batch of b pairs
// and embeddings of width e (B = D·b): the logits each rank holds at its peak and the embedding
// bytes each rank exchanges in the forward.
//   global       all-gather both modalities, every rank computes the full B×B logits
//   local        all-gather with gradient (OpenCLIP ClipLoss local_loss): b×B logits per rank
//   siglip-ring  SigLIP's ring: one modality's b×e block passes D − 1 times; b×b logits per step
// The all-gathers bring in 2·(D−1)·b·e·bytes per rank (both modalities); the ring sends and
// receives (D−1)·b·e·bytes, 2·(D−1)·b·e·bytes of traffic.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/enum_table.h"
#include "core/result.h"

namespace stagecraft {

enum class ContrastiveLoss : uint8_t { kGlobal, kLocal, kSigLipRing };
inline constexpr EnumTable<ContrastiveLoss> kContrastiveLossNames = {
    {"global", ContrastiveLoss::kGlobal},
    {"local", ContrastiveLoss::kLocal},
    {"siglip-ring", ContrastiveLoss::kSigLipRing}};
constexpr const char* ContrastiveLossName(ContrastiveLoss loss) {
  return kContrastiveLossNames.Name(loss);
}
Result<ContrastiveLoss> ParseContrastiveLoss(std::string_view name);

struct ContrastiveCost {
  double logits_bytes = 0;    // the largest logit matrix a rank holds (fp32)
  double received_bytes = 0;  // embedding bytes a rank receives in the forward
  double sent_bytes = 0;      // ... and sends
  int32_t steps = 0;          // communication steps (ring steps; 1 all-gather per modality)
};

// REQUIRES: ranks >= 1, local_batch >= 1, width >= 1, bytes >= 1.
ContrastiveCost ContrastiveLossCost(ContrastiveLoss loss, int32_t ranks, int64_t local_batch,
                                    int64_t width, int32_t bytes);

}  // namespace stagecraft
