// Strict JSON, as Python's json reads it (io/strict_json.h). An iterative scanner (no recursion:
// a deep file cannot overflow the stack) over the text once; each open object keeps a hash map of
// its keys to their offsets, so duplicates are found in linear time.
#include "io/strict_json.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/suggest.h"
#include "core/utf8.h"

namespace stagecraft {
namespace {

struct Frame {
  bool object = false;
  std::unordered_map<std::string, size_t> keys;  // decoded key -> offset of its opening quote
};

// What a non-finite number is refused for.
constexpr const char* kFiniteNumber =
    "a finite number, e.g. 1e-05, within about 1.8e308; Python's json reads NaN, Infinity and "
    "larger numbers, but they would make the figures nan or inf";

bool StartsWith(std::string_view text, size_t pos, std::string_view word) {
  return text.substr(pos, word.size()) == word;
}

bool IsWordByte(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Checker {
 public:
  Checker(std::string_view text, std::string_view source, std::string_view what_file)
      : text_(text), source_(source), what_file_(what_file) {}

  Status Run();

 private:
  enum class Next { kValue, kKey, kAfterValue };

  size_t LineOf(size_t pos) const;
  std::string Where(size_t pos) const;
  // An error Python's json makes too, and one only stagecraft makes (a value it would misread).
  Error Fail(size_t pos, const std::string& what, const std::string& expected) const;
  Error Refuse(size_t pos, const std::string& what, const std::string& expected) const;
  // The character at `pos` quoted for a message ("end of file" past the end).
  std::string Shown(size_t pos) const;
  bool AtEnd() const { return pos_ >= text_.size(); }
  // The letters, digits, '_', '.' and '-' from `pos` (a bare word such as a YAML key or NaN).
  std::string_view Word(size_t pos) const {
    size_t end = pos;
    while (end < text_.size() && IsWordByte(text_[end])) ++end;
    return text_.substr(pos, end - pos);
  }
  void SkipSpace();
  Status Value(Next& next);
  Status Key(Next& next);
  Status AfterValue(Next& next, bool& done);
  Status String(std::string* decoded);
  Status Escape(std::string* decoded);
  Status Number();
  Status Open(bool object);

  std::string_view text_;
  std::string_view source_;
  std::string_view what_file_;
  size_t pos_ = 0;
  std::vector<Frame> stack_;
};

size_t Checker::LineOf(size_t pos) const {
  size_t line = 1;
  for (size_t at = 0; at < pos && at < text_.size(); ++at) line += text_[at] == '\n' ? 1 : 0;
  return line;
}

std::string Checker::Where(size_t pos) const {
  const size_t newline = pos == 0 ? std::string_view::npos : text_.rfind('\n', pos - 1);
  const size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
  return std::string(source_) + ":" + std::to_string(LineOf(pos)) + ":" +
         std::to_string(pos - line_start + 1) + ": ";
}

Error Checker::Fail(size_t pos, const std::string& what, const std::string& expected) const {
  return Error{Where(pos) + what + " (expected " + expected + "; " + std::string(what_file_) +
               " is read with Python's json, which refuses this)"};
}

Error Checker::Refuse(size_t pos, const std::string& what, const std::string& expected) const {
  return Error{Where(pos) + what + " (expected " + expected + ")"};
}

std::string Checker::Shown(size_t pos) const {
  if (pos >= text_.size()) return "the end of the file";
  const unsigned char byte = static_cast<unsigned char>(text_[pos]);
  if (byte < 0x20 || byte == 0x7F) {
    const char* hex = "0123456789abcdef";
    return std::string("'\\x") + hex[byte >> 4] + hex[byte & 0xF] + "'";
  }
  return "'" + EscapeBytes(text_.substr(pos, std::max<size_t>(1, Utf8SequenceLength(text_, pos)))) +
         "'";
}

void Checker::SkipSpace() {
  while (!AtEnd()) {
    const char c = text_[pos_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
    ++pos_;
  }
}

Status Checker::Run() {
  if (StartsWith(text_, 0, "\xEF\xBB\xBF")) {
    return Fail(0, "the file starts with a UTF-8 byte-order mark",
                "the JSON text itself: save the file as UTF-8 without a BOM");
  }
  Next next = Next::kValue;
  bool done = false;
  while (!done) {
    switch (next) {
      case Next::kValue:
        STAGECRAFT_RETURN_IF_ERROR(Value(next));
        break;
      case Next::kKey:
        STAGECRAFT_RETURN_IF_ERROR(Key(next));
        break;
      case Next::kAfterValue:
        STAGECRAFT_RETURN_IF_ERROR(AfterValue(next, done));
        break;
    }
  }
  return Status::Ok();
}

Status Checker::Open(bool object) {
  if (stack_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
    return Refuse(pos_,
                  "arrays and objects nested more than " + std::to_string(kMaxJsonDepth) + " deep",
                  "at most " + std::to_string(kMaxJsonDepth) + " levels");
  }
  stack_.push_back(Frame{object, {}});
  ++pos_;
  return Status::Ok();
}

Status Checker::Value(Next& next) {
  SkipSpace();
  const std::string expected =
      "a value: an object, an array, a \"string\", a number, true, false "
      "or null";
  if (AtEnd()) return Fail(pos_, "the file ends where a value was expected", expected);
  const char c = text_[pos_];
  if (c == '{' || c == '[') {
    STAGECRAFT_RETURN_IF_ERROR(Open(c == '{'));
    SkipSpace();
    if (!AtEnd() && text_[pos_] == (c == '{' ? '}' : ']')) {
      ++pos_;
      stack_.pop_back();
      next = Next::kAfterValue;
    } else {
      next = c == '{' ? Next::kKey : Next::kValue;
    }
    return Status::Ok();
  }
  next = Next::kAfterValue;
  if (c == '"') return String(nullptr);
  if (c == '-' || (c >= '0' && c <= '9')) {
    if (Word(pos_) == "-Infinity") {
      return Refuse(pos_, "-Infinity is not a finite number", kFiniteNumber);
    }
    return Number();
  }
  const std::string_view word = Word(pos_);
  if (word == "true" || word == "false" || word == "null") {
    pos_ += word.size();
    return Status::Ok();
  }
  if (word == "NaN" || word == "Infinity") {
    return Refuse(pos_, std::string(word) + " is not a finite number", kFiniteNumber);
  }
  if (c == '\'') {
    return Fail(pos_, "a string in single quotes", "a string in double quotes, \"like this\"");
  }
  if (!word.empty()) {
    return Fail(pos_, "unexpected word '" + EchoInput(word, 40) + "' where a value was expected",
                expected + " (a key in double quotes: JSON, not YAML or Python)");
  }
  return Fail(pos_, "unexpected " + Shown(pos_) + " where a value was expected", expected);
}

Status Checker::Key(Next& next) {
  SkipSpace();
  const size_t key_pos = pos_;
  if (AtEnd() || text_[pos_] != '"') {
    if (!AtEnd() && text_[pos_] == '}') {
      return Fail(pos_, "a comma before '}'",
                  "another \"key\": value after the comma, or no comma");
    }
    if (!AtEnd() && text_[pos_] == '\'') {
      return Fail(pos_, "a key in single quotes", "a key in double quotes, \"like_this\"");
    }
    const std::string_view word = Word(pos_);
    return Fail(pos_,
                "unexpected " +
                    (word.empty() ? Shown(pos_) : "word '" + EchoInput(word, 40) + "'") +
                    " where a key was expected",
                "a key in double quotes, \"like_this\"");
  }
  std::string key;
  STAGECRAFT_RETURN_IF_ERROR(String(&key));
  auto [first, inserted] = stack_.back().keys.emplace(key, key_pos);
  if (!inserted) {
    return Refuse(key_pos,
                  "key '" + EchoInput(key) + "' given twice in one object (first on line " +
                      std::to_string(LineOf(first->second)) + ")",
                  "each key once: delete one; Python's json, which " + std::string(what_file_) +
                      " is read with, would silently keep the last");
  }
  SkipSpace();
  if (AtEnd() || text_[pos_] != ':') {
    return Fail(pos_, "unexpected " + Shown(pos_) + " after the key '" + EchoInput(key) + "'",
                "':' and the key's value");
  }
  ++pos_;
  next = Next::kValue;
  return Status::Ok();
}

Status Checker::AfterValue(Next& next, bool& done) {
  SkipSpace();
  if (stack_.empty()) {
    if (!AtEnd()) {
      return Fail(pos_, "unexpected " + Shown(pos_) + " after the JSON value",
                  "one JSON value and nothing after it");
    }
    done = true;
    return Status::Ok();
  }
  const bool object = stack_.back().object;
  const char close = object ? '}' : ']';
  if (!AtEnd() && text_[pos_] == ',') {
    ++pos_;
    SkipSpace();
    if (!AtEnd() && text_[pos_] == close) {
      return Fail(pos_, std::string("a comma before '") + close + "'",
                  std::string(object ? "another \"key\": value" : "another value") +
                      " after the comma, or no comma");
    }
    next = object ? Next::kKey : Next::kValue;
    return Status::Ok();
  }
  if (!AtEnd() && text_[pos_] == close) {
    ++pos_;
    stack_.pop_back();
    next = Next::kAfterValue;
    return Status::Ok();
  }
  return Fail(pos_, "unexpected " + Shown(pos_) + (object ? " in an object" : " in an array"),
              std::string("',' or '") + close + "'");
}

Status Checker::String(std::string* decoded) {
  const size_t open = pos_++;
  while (true) {
    if (AtEnd()) {
      return Fail(open, "a string that is never closed", "its closing double quote");
    }
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      return Status::Ok();
    }
    if (c < 0x20) {
      return Fail(pos_, "a control character " + Shown(pos_) + " inside a string",
                  c == '\n' ? "the string closed on its line (write a newline as \\n)"
                            : "it written as an escape such as \\t");
    }
    if (c == '\\') {
      STAGECRAFT_RETURN_IF_ERROR(Escape(decoded));
      continue;
    }
    const size_t length = c < 0x80 ? 1 : Utf8SequenceLength(text_, pos_);
    if (length == 0) {
      return Fail(pos_, "a byte " + Shown(pos_) + " that is not UTF-8 inside a string",
                  "UTF-8 text");
    }
    if (decoded != nullptr) decoded->append(text_.substr(pos_, length));
    pos_ += length;
  }
}

Status Checker::Escape(std::string* decoded) {
  const size_t at = pos_++;
  if (AtEnd()) return Fail(at, "a string that is never closed", "its closing double quote");
  const char c = text_[pos_++];
  const std::string_view simple = "\"\\/bfnrt";
  const std::string_view meaning = "\"\\/\b\f\n\r\t";
  if (const size_t index = simple.find(c); index != std::string_view::npos) {
    if (decoded != nullptr) *decoded += meaning[index];
    return Status::Ok();
  }
  if (c != 'u') {
    return Fail(at, "an invalid escape '\\" + EscapeBytes(std::string_view(&c, 1)) + "'",
                "one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
  }
  uint32_t cp = 0;
  for (int digit = 0; digit < 4; ++digit) {
    const int value = AtEnd() ? -1 : HexDigit(text_[pos_]);
    if (value < 0) {
      return Fail(at, "an invalid \\u escape", "\\u and four hexadecimal digits, e.g. \\u00e9");
    }
    cp = cp * 16 + static_cast<uint32_t>(value);
    ++pos_;
  }
  if (cp >= 0xD800 && cp <= 0xDBFF && StartsWith(text_, pos_, "\\u")) {
    uint32_t low = 0;
    bool valid = pos_ + 6 <= text_.size();
    for (size_t digit = 2; valid && digit < 6; ++digit) {
      const int value = HexDigit(text_[pos_ + digit]);
      valid = value >= 0;
      low = low * 16 + static_cast<uint32_t>(value);
    }
    if (valid && low >= 0xDC00 && low <= 0xDFFF) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      pos_ += 6;
    }
  }
  if (decoded != nullptr) AppendUtf8(cp, *decoded);
  return Status::Ok();
}

Status Checker::Number() {
  const size_t start = pos_;
  const auto digits = [&] {
    const size_t from = pos_;
    while (!AtEnd() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    return pos_ - from;
  };
  const std::string expected =
      "a number as JSON writes it: -12, 0.5, 1e-5 (no leading zeros, "
      "no '+', digits on both sides of '.')";
  if (text_[pos_] == '-') ++pos_;
  const size_t integer_start = pos_;
  const size_t integer_digits = digits();
  if (integer_digits == 0 || (integer_digits > 1 && text_[integer_start] == '0')) {
    return Fail(start, "a malformed number", expected);
  }
  if (!AtEnd() && text_[pos_] == '.') {
    ++pos_;
    if (digits() == 0) return Fail(start, "a malformed number", expected);
  }
  if (!AtEnd() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    if (!AtEnd() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (digits() == 0) return Fail(start, "a malformed number", expected);
  }
  if (!AtEnd() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
                   text_[pos_] == '_')) {
    return Fail(start, "a malformed number", expected);
  }
  const std::string number(text_.substr(start, pos_ - start));
  if (!std::isfinite(std::strtod(number.c_str(), nullptr))) {
    return Refuse(start, "the number " + EchoInput(number) + " overflows a double", kFiniteNumber);
  }
  return Status::Ok();
}

}  // namespace

Status CheckStrictJson(std::string_view text, std::string_view source, std::string_view what_file) {
  return Checker(text, source, what_file).Run();
}

}  // namespace stagecraft
