#include "lower/state_flow.h"

namespace stagecraft {

const char* StatePolicyName(StatePolicy policy) {
  switch (policy) {
    case StatePolicy::kPayload:
      return "payload";
    case StatePolicy::kDirect:
      return "direct";
    case StatePolicy::kShadow:
      return "shadow";
    case StatePolicy::kAuto:
      return "auto";
  }
  return "?";
}

const char* ShadowReadingName(ShadowReading reading) {
  return reading == ShadowReading::kKeySide ? "key-side" : "selection-side";
}

std::vector<int32_t> HolderStages(const StateFlow& flow) {
  std::vector<int32_t> stages = {flow.producer_stage};
  if (flow.policy == StatePolicy::kPayload) {
    for (int32_t stage = flow.producer_stage + 1; stage <= flow.last_consumer_stage(); ++stage) {
      stages.push_back(stage);
    }
    return stages;
  }
  for (int32_t stage : flow.consumer_stages) {
    if (stage != flow.producer_stage) stages.push_back(stage);
  }
  return stages;
}

}  // namespace stagecraft
