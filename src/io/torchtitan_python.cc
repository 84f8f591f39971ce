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

// A byte of a Python name or number: a letter, a digit, '_', or part of a non-ASCII letter.
bool IsWordByte(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// Drops spaces outside string literals ("a = 1" and "a=1" read alike), as Python's tokenizer
// does between tokens, but keeps one space between two names or numbers: Python reads those as
// two tokens ("ret urn" is not "return", "8 192" is not 8192).
std::string Squeeze(const std::string& text) {
  std::string out;
  char quote = 0;
  bool spaced = false;
  for (char c : text) {
    if (quote != 0) {
      out += c;
      if (c == quote) quote = 0;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      spaced = true;
    } else {
      if (spaced && !out.empty() && IsWordByte(out.back()) && IsWordByte(c)) out += ' ';
      spaced = false;
      if (c == '"' || c == '\'') quote = c;
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
    if (current.line == 0 && Trim(kept).empty()) continue;
    if (current.line == 0) {
      current.line = line;
      current.raw = Trim(kept);
    }
    current.text += kept + "\n";  // squeezed whole: a line break inside brackets is a space
    if (depth == 0) {
      current.text = Squeeze(current.text);
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

std::string SideBySide(const std::string& text) {
  char quote = 0;
  for (size_t index = 0; index < text.size(); ++index) {
    const char c = text[index];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == ' ') {
      size_t begin = index;
      while (begin > 0 && IsWordByte(text[begin - 1])) --begin;
      size_t end = index + 1;
      while (end < text.size() && IsWordByte(text[end])) ++end;
      return text.substr(begin, end - begin);
    }
  }
  return "";
}

namespace {

// A decimal integer as Python writes one: digits, single '_' between them, no leading zero but
// in 0 itself ("1_000" and "0" are; "08", "1__0", "1_" and "_1" are not).
bool IsPythonDecimal(const std::string& text) {
  if (text.empty() || text.front() == '_' || text.back() == '_') return false;
  for (size_t index = 0; index < text.size(); ++index) {
    const char c = text[index];
    if (c == '_' ? text[index + 1] == '_' : !std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return text.front() != '0' || text.find_first_not_of("0_") == std::string::npos;
}

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
    // One string with no escapes: "a""b" is two (Python joins them), "a\n" an escape; neither
    // is read.
    const std::string inner = text.substr(1, text.size() - 2);
    if (inner.find(text.front()) != std::string::npos || inner.find('\\') != std::string::npos) {
      return std::nullopt;
    }
    out.value = Str(inner);
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
    if (factor.size() > 12 || !IsPythonDecimal(factor)) return std::nullopt;
    int64_t number = 0;
    for (char c : factor) {
      if (c != '_') number = number * 10 + (c - '0');
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
