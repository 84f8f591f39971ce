#include "schedule/action.h"

#include <cctype>
#include <limits>

namespace stagecraft {

char ActionKindLetter(ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward:
      return 'F';
    case ActionKind::kBackward:
      return 'B';
    case ActionKind::kInputGrad:
      return 'I';
    case ActionKind::kWeightGrad:
      return 'W';
  }
  return '?';
}

std::string FormatAction(const Action& action) {
  return std::to_string(action.stage.value()) + ActionKindLetter(action.kind) +
         std::to_string(action.microbatch.value());
}

namespace {

// Reads a non-negative decimal at `pos`; false when there is none or it overflows int32.
bool ReadIndex(std::string_view text, size_t& pos, int32_t& value) {
  const size_t begin = pos;
  int64_t accumulated = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    accumulated = accumulated * 10 + (text[pos] - '0');
    if (accumulated > std::numeric_limits<int32_t>::max()) return false;
    ++pos;
  }
  value = static_cast<int32_t>(accumulated);
  return pos > begin;
}

}  // namespace

Result<Action> ParseAction(std::string_view raw) {
  std::string_view text = raw;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  const std::string quoted = "'" + std::string(text) + "'";
  const std::string expected = " (expected {stage}{F|B|I|W}{microbatch}, e.g. '2F0')";
  size_t pos = 0;
  int32_t stage = 0;
  if (!ReadIndex(text, pos, stage)) return Error{"bad action " + quoted + expected};
  if (pos >= text.size()) return Error{"bad action " + quoted + ": no kind letter" + expected};
  Action action;
  switch (text[pos]) {
    case 'F':
      action.kind = ActionKind::kForward;
      break;
    case 'B':
      action.kind = ActionKind::kBackward;
      break;
    case 'I':
      action.kind = ActionKind::kInputGrad;
      break;
    case 'W':
      action.kind = ActionKind::kWeightGrad;
      break;
    default:
      return Error{"bad action " + quoted + ": unknown kind '" + std::string(1, text[pos]) + "'" +
                   expected};
  }
  ++pos;
  int32_t microbatch = 0;
  if (!ReadIndex(text, pos, microbatch)) {
    return Error{"bad action " + quoted + ": no microbatch number" + expected};
  }
  if (pos != text.size()) return Error{"bad action " + quoted + ": trailing characters" + expected};
  action.stage = StageId(stage);
  action.microbatch = MicrobatchId(microbatch);
  return action;
}

}  // namespace stagecraft
