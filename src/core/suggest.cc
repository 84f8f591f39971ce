#include "core/suggest.h"

#include <algorithm>
#include <cctype>

#include "core/utf8.h"

namespace stagecraft {
namespace {

bool SameLetter(char a, char b) {
  return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
}

// Edit distance where swapping two neighbouring letters counts as one edit (optimal string
// alignment), case-insensitive: "ifb1" is 2 edits from "1f1b".
int EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<int>> d(a.size() + 1, std::vector<int>(b.size() + 1));
  for (size_t row = 0; row <= a.size(); ++row) d[row][0] = static_cast<int>(row);
  for (size_t col = 0; col <= b.size(); ++col) d[0][col] = static_cast<int>(col);
  for (size_t row = 1; row <= a.size(); ++row) {
    for (size_t col = 1; col <= b.size(); ++col) {
      const int substitution = SameLetter(a[row - 1], b[col - 1]) ? 0 : 1;
      d[row][col] =
          std::min({d[row - 1][col] + 1, d[row][col - 1] + 1, d[row - 1][col - 1] + substitution});
      if (row > 1 && col > 1 && SameLetter(a[row - 1], b[col - 2]) &&
          SameLetter(a[row - 2], b[col - 1])) {
        d[row][col] = std::min(d[row][col], d[row - 2][col - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// A word of three or more letters that begins a candidate ("interleave") is taken as meant.
bool IsPrefix(std::string_view word, std::string_view candidate) {
  if (word.size() < 3 || word.size() >= candidate.size()) return false;
  for (size_t index = 0; index < word.size(); ++index) {
    if (!SameLetter(word[index], candidate[index])) return false;
  }
  return true;
}

}  // namespace

std::string SuggestClosest(std::string_view word, const std::vector<std::string>& candidates) {
  const int limit = std::max(2, static_cast<int>(word.size()) / 3);
  std::string best;
  int best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    if (IsPrefix(word, candidate)) return candidate;
  }
  for (const std::string& candidate : candidates) {
    // The distance is at least the difference in length: a candidate that far off cannot be
    // chosen, and skipping it keeps a megabyte-long word from costing |word| x |candidate|.
    const size_t gap = word.size() > candidate.size() ? word.size() - candidate.size()
                                                      : candidate.size() - word.size();
    if (gap >= static_cast<size_t>(best_distance)) continue;
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

std::string EscapeBytes(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string escaped;
  escaped.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const auto byte = static_cast<unsigned char>(text[pos]);
    if (byte >= 0x80) {
      const size_t length = Utf8SequenceLength(text, pos);
      if (length > 0) {
        escaped.append(text.substr(pos, length));
        pos += length;
        continue;
      }
    }
    if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte >= 0x7F) {
      escaped += "\\x";
      escaped += kHex[byte >> 4];
      escaped += kHex[byte & 0xF];
    } else {
      escaped += static_cast<char>(byte);
    }
    ++pos;
  }
  return escaped;
}

std::string EchoInput(std::string_view text, size_t limit) {
  if (text.size() <= limit) return EscapeBytes(text);
  return EscapeBytes(text.substr(0, limit)) + "... (" + std::to_string(text.size()) + " bytes)";
}

std::string EscapeMessage(std::string_view text) {
  if (text.size() <= kMaxMessageBytes) return EscapeBytes(text);
  return EscapeBytes(text.substr(0, kMaxMessageBytes)) + " ... (cut at " +
         std::to_string(kMaxMessageBytes) + " of " + std::to_string(text.size()) + " bytes)";
}

}  // namespace stagecraft
