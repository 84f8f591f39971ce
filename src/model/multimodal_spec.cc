#include "model/multimodal_spec.h"

namespace stagecraft {

const std::vector<std::pair<std::string, VisionPlacement>>& VisionPlacementChoices() {
  static const std::vector<std::pair<std::string, VisionPlacement>> choices = {
      {"colocated", VisionPlacement::kColocated},
      {"decoupled", VisionPlacement::kDecoupled},
      {"disaggregated", VisionPlacement::kDisaggregated},
      {"bubble-fill", VisionPlacement::kBubbleFill},
  };
  return choices;
}

const char* VisionPlacementName(VisionPlacement placement) {
  for (const auto& [name, value] : VisionPlacementChoices()) {
    if (value == placement) return name.c_str();
  }
  return "?";
}

}  // namespace stagecraft
