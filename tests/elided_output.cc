#include "elided_output.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>

namespace stagecraft::testing {

namespace {

// The costs of AlignOutput (header comment), in tenths. Pairing two different lines (80) is
// cheaper than dropping the shown one (90: more than adding an actual line, 40, and pairing
// one of the same shape or first word, <= 34, since a marker beside it would elide the rest
// for free), so an update keeps each shown line and rewrites it; pairing it with a line of its
// shape or first word further on (adding the lines between) is cheaper than with another line,
// and among those the one with the fewest differing numbers (in order) is the cheapest, so an
// update keeps e.g. the table row a document picked.
constexpr int64_t kCostSameShape = 10;
constexpr int64_t kMaxNumberDifferences = 9;
constexpr int64_t kCostSameFirstWord = 25;
constexpr int64_t kCostOtherLine = 80;
constexpr int64_t kCostUnmatchedShown = 90;
constexpr int64_t kCostUnmatchedActual = 40;
constexpr int64_t kCostEmptyElision = 10;
constexpr int64_t kUnreachable = std::numeric_limits<int64_t>::max() / 4;
constexpr size_t kMaxAlignmentCells = 50'000'000;

// The line with each run of digits read as '#' and each run of blanks as one space: two lines
// with one shape differ only in their numbers and column widths.
std::string Shape(const std::string& line) {
  std::string shape;
  for (size_t at = 0; at < line.size(); ++at) {
    const unsigned char character = static_cast<unsigned char>(line[at]);
    const char previous = shape.empty() ? '\0' : shape.back();
    if (std::isdigit(character)) {
      if (previous != '#') shape += '#';
    } else if (character == ' ' || character == '\t') {
      if (previous != ' ') shape += ' ';
    } else {
      shape += line[at];
    }
  }
  return shape;
}

// Cost tables over (shown position, actual position): `rest[s][a]` aligns shown[s..] with
// actual[a..]; `inside[s][a]` the same once marker s has elided at least one line.
struct Tables {
  size_t columns;
  std::vector<int64_t> rest;
  std::vector<int64_t> inside;
  int64_t& Rest(size_t s, size_t a) { return rest[s * columns + a]; }
  int64_t& Inside(size_t s, size_t a) { return inside[s * columns + a]; }
};

// The indentation and first word of `line` (a table row's label, a report line's key).
std::string FirstWord(const std::string& line) {
  const size_t word = line.find_first_not_of(" \t");
  if (word == std::string::npos) return line;
  const size_t end = line.find_first_of(" \t", word);
  return line.substr(0, end);
}

// The runs of digits of `line`, in order.
std::vector<std::string> Numbers(const std::string& line) {
  std::vector<std::string> numbers;
  bool in_number = false;
  for (const char character : line) {
    const bool digit = std::isdigit(static_cast<unsigned char>(character)) != 0;
    if (digit && !in_number) numbers.emplace_back();
    if (digit) numbers.back() += character;
    in_number = digit;
  }
  return numbers;
}

// How many numbers differ between the two lines, in order (a missing one differs).
int64_t NumberDifferences(const std::string& shown, const std::string& actual) {
  const std::vector<std::string> shown_numbers = Numbers(shown);
  const std::vector<std::string> actual_numbers = Numbers(actual);
  const size_t common = std::min(shown_numbers.size(), actual_numbers.size());
  int64_t differences =
      static_cast<int64_t>(std::max(shown_numbers.size(), actual_numbers.size()) - common);
  for (size_t index = 0; index < common; ++index) {
    differences += shown_numbers[index] != actual_numbers[index] ? 1 : 0;
  }
  return std::min(differences, kMaxNumberDifferences);
}

int64_t PairCost(const std::string& shown, const std::string& actual) {
  if (shown == actual) return 0;
  if (Shape(shown) == Shape(actual)) return kCostSameShape + NumberDifferences(shown, actual);
  if (FirstWord(shown) == FirstWord(actual)) {
    return kCostSameFirstWord + NumberDifferences(shown, actual);
  }
  return kCostOtherLine;
}

void Fill(const std::vector<std::string>& shown, const std::vector<bool>& marker,
          const std::vector<std::string>& actual, Tables& tables) {
  const size_t rows = shown.size();
  const size_t count = actual.size();
  for (size_t a = count + 1; a-- > 0;) {
    tables.Rest(rows, a) = static_cast<int64_t>(count - a) * kCostUnmatchedActual;
    tables.Inside(rows, a) = kUnreachable;
  }
  for (size_t s = rows; s-- > 0;) {
    for (size_t a = count + 1; a-- > 0;) {
      const bool more = a < count;
      if (marker[s]) {
        tables.Inside(s, a) =
            std::min(tables.Rest(s + 1, a), more ? tables.Inside(s, a + 1) : kUnreachable);
        tables.Rest(s, a) = std::min(more ? tables.Inside(s, a + 1) : kUnreachable,
                                     kCostEmptyElision + tables.Rest(s + 1, a));
        continue;
      }
      tables.Inside(s, a) = kUnreachable;
      int64_t best = kCostUnmatchedShown + tables.Rest(s + 1, a);
      if (more) {
        best = std::min(best, PairCost(shown[s], actual[a]) + tables.Rest(s + 1, a + 1));
        best = std::min(best, kCostUnmatchedActual + tables.Rest(s, a + 1));
      }
      tables.Rest(s, a) = best;
    }
  }
}

// Follows the cheapest path from (0, 0), recording the update and the report.
void Trace(const std::vector<std::string>& shown, const std::vector<bool>& marker,
           const std::vector<std::string>& actual, Tables& tables, OutputAlignment& result) {
  size_t s = 0;
  size_t a = 0;
  while (s < shown.size() || a < actual.size()) {
    const int64_t here = tables.Rest(s, a);
    if (s < shown.size() && marker[s]) {
      size_t end = a;
      if (end < actual.size() && tables.Inside(s, end + 1) == here) {
        ++end;
        while (end < actual.size() && tables.Rest(s + 1, end) != tables.Inside(s, end)) ++end;
      }
      if (end > a) result.updated.push_back(shown[s]);
      result.script.push_back({end > a ? ' ' : '-', shown[s]});
      a = end;
      ++s;
      continue;
    }
    if (s < shown.size() && a < actual.size() &&
        here == PairCost(shown[s], actual[a]) + tables.Rest(s + 1, a + 1)) {
      if (shown[s] == actual[a]) {
        result.script.push_back({' ', shown[s]});
      } else {
        result.script.push_back({'-', shown[s]});
        result.script.push_back({'+', actual[a]});
      }
      result.updated.push_back(actual[a]);
      ++s;
      ++a;
    } else if (s < shown.size() && here == kCostUnmatchedShown + tables.Rest(s + 1, a)) {
      result.script.push_back({'-', shown[s++]});
    } else {
      result.script.push_back({'+', actual[a]});
      result.updated.push_back(actual[a++]);
    }
  }
}

}  // namespace

bool IsElisionMarker(const std::string& line) {
  const std::string trimmed = Trim(line);
  if (trimmed == "...") return true;
  return StartsWith(trimmed, "... (") && trimmed.back() == ')';
}

OutputAlignment AlignOutput(const std::vector<std::string>& shown,
                            const std::vector<std::string>& actual) {
  OutputAlignment result;
  const size_t cells = (shown.size() + 1) * (actual.size() + 1);
  if (cells > kMaxAlignmentCells) {
    result.too_large = true;
    return result;
  }
  std::vector<bool> marker(shown.size());
  for (size_t s = 0; s < shown.size(); ++s) marker[s] = IsElisionMarker(shown[s]);
  Tables tables{actual.size() + 1, std::vector<int64_t>(cells), std::vector<int64_t>(cells)};
  Fill(shown, marker, actual, tables);
  result.matches = tables.Rest(0, 0) == 0;
  Trace(shown, marker, actual, tables, result);
  return result;
}

}  // namespace stagecraft::testing
