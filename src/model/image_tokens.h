// Image-token counts per image, drawn from a distribution in the config (real multimodal batches
// vary: csa2.md, "Multimodal": ≤ 1024 image tokens per image). The draw is deterministic: our own
// splitmix64 generator and our own integer mapping (the standard library's distributions differ
// between implementations), so a seed gives the same images on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace stagecraft {

struct ImageTokenDistribution {
  enum class Kind : uint8_t {
    kFixed,    // every image has `min` tokens
    kUniform,  // uniform over [min, max], inclusive
    kChoices,  // one of `values`, with probability proportional to `weights`
  };
  Kind kind = Kind::kFixed;
  int32_t min = 1024;
  int32_t max = 1024;
  std::vector<int32_t> values;
  std::vector<int32_t> weights;  // one per value, >= 1
  uint64_t seed = 1;
  bool operator==(const ImageTokenDistribution&) const = default;
};

// "fixed:N", "uniform:A-B" or "choices:256x3,576x2,1024" (value x weight, weight 1 when left out).
// Errors name the part that is wrong and show the forms. Token counts must be >= 1.
Result<ImageTokenDistribution> ParseImageTokens(const std::string& text);
// The canonical spelling of `dist` (what ParseImageTokens reads back).
std::string FormatImageTokens(const ImageTokenDistribution& dist);

// `count` draws from `dist`; `stream` selects an independent sequence (e.g. the microbatch), so
// the images of microbatch 3 do not depend on how many images microbatch 2 had.
std::vector<int32_t> DrawImageTokens(const ImageTokenDistribution& dist, int64_t count,
                                     uint64_t stream);

// The mean tokens per image of `dist` (exact, not sampled).
double MeanImageTokens(const ImageTokenDistribution& dist);

}  // namespace stagecraft
