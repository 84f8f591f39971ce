#include "core/suggest.h"

#include <algorithm>
#include <cctype>

namespace stagecraft {
namespace {

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> previous(b.size() + 1);
  std::vector<int> current(b.size() + 1);
  for (size_t col = 0; col <= b.size(); ++col) previous[col] = static_cast<int>(col);
  for (size_t row = 1; row <= a.size(); ++row) {
    current[0] = static_cast<int>(row);
    for (size_t col = 1; col <= b.size(); ++col) {
      const bool same = std::tolower(static_cast<unsigned char>(a[row - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[col - 1]));
      current[col] = std::min({previous[col] + 1, current[col - 1] + 1,
                               previous[col - 1] + (same ? 0 : 1)});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

}  // namespace

std::string SuggestClosest(std::string_view word, const std::vector<std::string>& candidates) {
  const int limit = std::max(2, static_cast<int>(word.size()) / 3);
  std::string best;
  int best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    const int distance = EditDistance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string best = SuggestClosest(word, candidates);
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

std::string JoinChoices(const std::vector<std::string>& choices) {
  std::string joined;
  for (size_t index = 0; index < choices.size(); ++index) {
    if (index > 0) joined += index + 1 == choices.size() ? " or " : ", ";
    joined += "'" + choices[index] + "'";
  }
  return joined;
}

}  // namespace stagecraft
