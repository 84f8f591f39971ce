// The Python subset of torchtitan's config functions: statements and literals
// (io/torchtitan_python.h).
#include "io/torchtitan_python.h"

#include <algorithm>
#include <cctype>

namespace stagecraft::torchtitan_python {
namespace {

std::string Trim(const std::string& text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

// Drops spaces outside string literals ("a = 1" and "a=1" read alike).
std::string Squeeze(const std::string& text) {
  std::string out;
  char quote = 0;
  for (char c : text) {
    if (quote != 0) {
      out += c;
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
      out += c;
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      out += c;
    }
  }
  return out;
}

// The items of a list's inside, split at the commas outside strings and brackets.
std::vector<std::string> ListItems(const std::string& inner) {
  std::vector<std::string> items;
  std::string item;
  char quote = 0;
  int depth = 0;
  for (char c : inner + ",") {
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '(') {
      ++depth;
    } else if (c == ']' || c == ')') {
      --depth;
    } else if (c == ',' && depth == 0) {
      if (!item.empty()) items.push_back(item);
      item.clear();
      continue;
    }
    item += c;
  }
  return items;
}

}  // namespace

TomlValue Int(int64_t value) {
  TomlValue v;
  v.kind = TomlValue::Kind::kInteger;
  v.integer = value;
  return v;
}
TomlValue Bool(bool value) {
  TomlValue v;
  v.kind = TomlValue::Kind::kBool;
  v.boolean = value;
  return v;
}
TomlValue Str(std::string value) {
  TomlValue v;
  v.text = std::move(value);
  return v;
}

Result<std::vector<Statement>> Statements(const std::string& text, const std::string& source) {
  std::vector<Statement> statements;
  Statement current;
  int depth = 0;
  int32_t line = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    std::string content = text.substr(pos, end - pos);
    pos = end + 1;
    ++line;
    char quote = 0;
    std::string kept;
    for (char c : content) {
      if (quote == 0 && c == '#') break;
      if (quote != 0 && c == quote)
        quote = 0;
      else if (quote == 0 && (c == '"' || c == '\''))
        quote = c;
      else if (quote == 0 && (c == '(' || c == '[' || c == '{'))
        ++depth;
      else if (quote == 0 && (c == ')' || c == ']' || c == '}'))
        --depth;
      kept += c;
    }
    if (quote != 0) {
      return Error{source + ":" + std::to_string(line) +
                   ": a string left open at the end of the line (expected its closing quote)"};
    }
    if (depth < 0) {
      return Error{source + ":" + std::to_string(line) + ": a closing bracket with none open"};
    }
    if (current.text.empty() && Trim(kept).empty()) continue;
    if (current.text.empty()) {
      current.line = line;
      current.raw = Trim(kept);
    }
    current.text += Squeeze(kept);
    if (depth == 0) {
      statements.push_back(current);
      current = Statement{};
    }
    if (end == text.size()) break;
  }
  if (depth != 0) {
    return Error{source + ":" + std::to_string(current.line) +
                 ": a bracket opened here is never closed (expected the statement to end)"};
  }
  return statements;
}

namespace {

// Literal at a list depth: the literals read are at most a list of lists of strings, so a
// deeper list is refused before its items are split (a file of 20,000 nested brackets must not
// recurse 20,000 times).
constexpr int kMaxLiteralDepth = 2;

std::optional<PyValue> LiteralAt(const std::string& text, int depth) {
  PyValue out;
  if (text == "None") {
    out.none = true;
    return out;
  }
  if (text == "True" || text == "False") {
    out.value = Bool(text == "True");
    return out;
  }
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
      text.back() == text.front()) {
    out.value = Str(text.substr(1, text.size() - 2));
    return out;
  }
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    if (depth >= kMaxLiteralDepth) return std::nullopt;
    const std::vector<std::string> items = ListItems(text.substr(1, text.size() - 2));
    const bool nested = !items.empty() && items.front().front() == '[';
    out.value.kind = nested ? TomlValue::Kind::kStringArrays : TomlValue::Kind::kStringArray;
    for (const std::string& item : items) {
      auto element = LiteralAt(item, depth + 1);
      if (!element || element->none) return std::nullopt;
      if (nested && element->value.kind == TomlValue::Kind::kStringArray) {
        out.value.arrays.push_back(element->value.strings);
      } else if (!nested && element->value.kind == TomlValue::Kind::kString) {
        out.value.strings.push_back(element->value.text);
      } else {
        return std::nullopt;
      }
    }
    return out;
  }
  const bool negative = !text.empty() && text[0] == '-';
  const std::string digits = negative ? text.substr(1) : text;
  int64_t product = 1;
  size_t start = 0;
  while (true) {
    size_t star = digits.find('*', start);
    if (star == std::string::npos) star = digits.size();
    const std::string factor = digits.substr(start, star - start);
    if (factor.empty() || factor.size() > 12) return std::nullopt;
    int64_t number = 0;
    for (char c : factor) {
      if (c == '_') continue;
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      number = number * 10 + (c - '0');
    }
    // Both factors below 2^40: the product is checked before it could overflow.
    if (number != 0 && product > (int64_t{1} << 40) / number) return std::nullopt;
    product *= number;
    if (star == digits.size()) break;
    start = star + 1;
  }
  out.value = Int(negative ? -product : product);
  return out;
}

}  // namespace

std::optional<PyValue> Literal(const std::string& text) { return LiteralAt(text, 0); }

}  // namespace stagecraft::torchtitan_python
