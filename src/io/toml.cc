#include "io/toml.h"

#include <charconv>
#include <cstdlib>
#include <unordered_map>

#include "core/suggest.h"
#include "core/utf8.h"

namespace stagecraft {
namespace {

bool IsBareKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// One pass over the text with the line and column of the cursor.
class TomlParser {
 public:
  TomlParser(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  Result<TomlDocument> Parse() {
    TomlDocument document;
    document.tables.push_back(TomlTable{});
    while (pos_ < text_.size()) {
      SkipBlanks();
      if (AtLineEnd()) {
        STAGECRAFT_RETURN_IF_ERROR(EndLine());
        continue;
      }
      if (Peek() == '[') {
        auto table = ParseHeader();
        if (!table.ok()) return table.error();
        document.tables.push_back(std::move(table).value());
        keys_.clear();  // the keys seen are the current table's
      } else {
        STAGECRAFT_RETURN_IF_ERROR(ParseKeyValue(document.tables.back()));
      }
      STAGECRAFT_RETURN_IF_ERROR(EndLine());
    }
    return document;
  }

 private:
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  int32_t Column() const { return static_cast<int32_t>(pos_ - line_start_) + 1; }

  Error Fail(const std::string& message) const {
    return Error{source_ + ":" + std::to_string(line_) + ":" + std::to_string(Column()) + ": " +
                 message};
  }

  void SkipBlanks() {
    while (Peek() == ' ' || Peek() == '\t') ++pos_;
  }

  // At the end of the line once blanks and a comment are skipped.
  bool AtLineEnd() {
    SkipBlanks();
    if (Peek() == '#') {
      while (pos_ < text_.size() && Peek() != '\n') ++pos_;
    }
    return pos_ >= text_.size() || Peek() == '\n' || (Peek() == '\r' && Peek(1) == '\n');
  }

  Status EndLine() {
    if (!AtLineEnd()) {
      return Fail("unexpected '" + EscapeBytes(std::string(1, Peek())) +
                  "' (expected the end of the line or a # comment)");
    }
    if (Peek() == '\r') ++pos_;
    if (Peek() == '\n') NewLine();
    return Status::Ok();
  }

  void NewLine() {
    ++pos_;
    ++line_;
    line_start_ = pos_;
  }

  Result<TomlTable> ParseHeader() {
    ++pos_;  // '['
    if (Peek() == '[') {
      return Fail("arrays of tables ([[name]]) are not read (expected a [table] header)");
    }
    SkipBlanks();
    TomlTable table;
    table.line = line_;
    while (IsBareKeyChar(Peek()) || Peek() == '.') table.name += text_[pos_++];
    SkipBlanks();
    if (table.name.empty() || Peek() != ']') {
      return Fail("malformed table header (expected [name] with letters, digits, _ - and .)");
    }
    ++pos_;
    const auto [first, fresh] = tables_.emplace(table.name, table.line);
    if (!fresh) {
      return Fail("table [" + table.name + "] defined twice (first on line " +
                  std::to_string(first->second) + ")");
    }
    return table;
  }

  Status ParseKeyValue(TomlTable& table) {
    if (Peek() == '"' || Peek() == '\'')
      return Fail("quoted keys are not read (expected a bare key)");
    std::string key;
    const int32_t key_line = line_;
    while (IsBareKeyChar(Peek())) key += text_[pos_++];
    if (key.empty()) {
      return Fail("unexpected '" + EscapeBytes(std::string(1, Peek())) +
                  "' (expected key = value or a [table] header)");
    }
    if (Peek() == '.') return Fail("dotted keys are not read (expected a bare key; use a [table])");
    SkipBlanks();
    if (Peek() != '=') return Fail("expected '=' after key '" + key + "'");
    ++pos_;
    SkipBlanks();
    // Duplicates are found through the table's key index (a linear search per key made a
    // file of 10^5 keys take seconds).
    const auto [first, fresh] = keys_.emplace(key, key_line);
    if (!fresh) {
      return Fail("key '" + key + "' given twice in " +
                  (table.name.empty() ? std::string("the top level") : "[" + table.name + "]") +
                  " (first on line " + std::to_string(first->second) + ")");
    }
    auto value = ParseValue();
    if (!value.ok()) return value.error();
    value.value().line = key_line;
    table.keys.emplace_back(key, std::move(value).value());
    return Status::Ok();
  }

  Result<TomlValue> ParseValue() {
    TomlValue value;
    const char c = Peek();
    if (c == '"' || c == '\'') {
      auto text = ParseString();
      if (!text.ok()) return text.error();
      value.text = std::move(text).value();
      return value;
    }
    if (c == '[') return ParseArray();
    if (c == '{') return Fail("inline tables are not read (expected a string, number or boolean)");
    std::string word;
    while (IsBareKeyChar(Peek()) || Peek() == '.' || Peek() == '+' || Peek() == ':') {
      word += text_[pos_++];
    }
    if (word == "true" || word == "false") {
      value.kind = TomlValue::Kind::kBool;
      value.boolean = word == "true";
      return value;
    }
    return ParseNumber(word);
  }

  Result<TomlValue> ParseNumber(const std::string& word) {
    const int32_t column = Column() - static_cast<int32_t>(word.size());
    auto fail = [&](const std::string& message) {
      return Error{source_ + ":" + std::to_string(line_) + ":" + std::to_string(column) + ": " +
                   message};
    };
    if (word.empty()) {
      return Fail("expected a value (a \"string\", a number, true, false or [\"an\", \"array\"])");
    }
    std::string digits;
    bool is_float = false;
    for (size_t i = 0; i < word.size(); ++i) {
      const char c = word[i];
      if (c == '_') {
        if (i == 0 || i + 1 == word.size() || !IsDigit(word[i - 1]) || !IsDigit(word[i + 1])) {
          return fail("'" + EscapeBytes(word) + "': '_' must sit between two digits");
        }
        continue;
      }
      if (c == '.' || c == 'e' || c == 'E') is_float = true;
      digits += c;
    }
    TomlValue value;
    const char* begin = digits.data() + (digits[0] == '+' ? 1 : 0);
    const char* end = digits.data() + digits.size();
    if (!is_float) {
      const auto [stop, error] = std::from_chars(begin, end, value.integer);
      if (error == std::errc::result_out_of_range) {
        return fail("integer '" + EscapeBytes(word) + "' is out of range (64-bit)");
      }
      if (error == std::errc() && stop == end) {
        value.kind = TomlValue::Kind::kInteger;
        return value;
      }
    } else {
      const size_t dot = digits.find('.');
      const bool digit_around_dot =
          dot == std::string::npos ||
          (dot > 0 && IsDigit(digits[dot - 1]) && IsDigit(digits[dot + 1]));
      char* stop = nullptr;
      value.number = std::strtod(begin, &stop);
      if (digit_around_dot && stop == end && begin != end && IsDigit(digits.back())) {
        value.kind = TomlValue::Kind::kFloat;
        return value;
      }
    }
    return fail("'" + EscapeBytes(word) +
                "' is not a value stagecraft reads (expected a \"string\", an integer, a float, "
                "true, false or an array of strings; dates are not read)");
  }

  Result<std::string> ParseString() {
    const char quote = Peek();
    if (Peek(1) == quote && Peek(2) == quote) {
      return Fail("multi-line strings are not read (expected a one-line string)");
    }
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= text_.size() || Peek() == '\n') {
        return Fail(std::string("unterminated string (expected a closing ") + quote + ")");
      }
      const char c = text_[pos_++];
      if (c == quote) return out;
      if (c != '\\' || quote == '\'') {
        out += c;
        continue;
      }
      const char escape = Peek();
      ++pos_;
      switch (escape) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u':
        case 'U': {
          const size_t length = escape == 'u' ? 4 : 8;
          uint32_t code = 0;
          const char* first = text_.data() + pos_;
          const auto [stop, error] =
              std::from_chars(first, first + std::min(length, text_.size() - pos_), code, 16);
          if (error != std::errc() || stop != first + length || code > 0x10FFFF) {
            return Fail("bad \\" + std::string(1, escape) + " escape (expected " +
                        std::to_string(length) + " hex digits of a code point)");
          }
          pos_ += length;
          AppendUtf8(code, out);
          break;
        }
        default:
          --pos_;
          return Fail("unknown escape '\\" + EscapeBytes(std::string(1, escape)) +
                      "' (expected \\\" \\\\ \\n \\t \\r \\b \\f \\uXXXX)");
      }
    }
  }

  // Blanks, newlines and comments inside an array.
  void SkipArraySpace() {
    while (true) {
      SkipBlanks();
      if (Peek() == '#') {
        while (pos_ < text_.size() && Peek() != '\n') ++pos_;
      }
      if (Peek() == '\r' && Peek(1) == '\n') ++pos_;
      if (Peek() != '\n') return;
      NewLine();
    }
  }

  // An array of strings, or (its first item an array) an array of arrays of strings.
  Result<TomlValue> ParseArray() {
    ++pos_;  // '['
    SkipArraySpace();
    if (Peek() != '[') return ParseStrings();
    TomlValue value;
    value.kind = TomlValue::Kind::kStringArrays;
    const Status read = ParseItems([&]() -> Status {
      if (Peek() != '[') return Fail("an array of arrays holds arrays only (expected '[' or ']')");
      ++pos_;  // '['
      auto inner = ParseStrings();
      if (!inner.ok()) return inner.error();
      value.arrays.push_back(std::move(inner).value().strings);
      return Status::Ok();
    });
    if (!read.ok()) return read.error();
    return value;
  }

  // The strings of an array whose '[' is behind, up to and past its ']'.
  Result<TomlValue> ParseStrings() {
    TomlValue value;
    value.kind = TomlValue::Kind::kStringArray;
    const Status read = ParseItems([&]() -> Status {
      if (Peek() != '"' && Peek() != '\'') {
        return Fail(Peek() == '['
                        ? "arrays nest one level, of strings (expected a \"string\" or ']')"
                        : "arrays of strings only are read (expected a \"string\" or ']')");
      }
      auto text = ParseString();
      if (!text.ok()) return text.error();
      value.strings.push_back(std::move(text).value());
      return Status::Ok();
    });
    if (!read.ok()) return read.error();
    return value;
  }

  // The items of an array whose '[' is behind, each read by `item` from its first character,
  // separated by commas (a trailing one allowed), up to and past the ']'.
  template <typename Item>
  Status ParseItems(Item item) {
    while (true) {
      SkipArraySpace();
      if (Peek() == ']') break;
      if (pos_ >= text_.size()) return Fail("unterminated array (expected ']')");
      STAGECRAFT_RETURN_IF_ERROR(item());
      SkipArraySpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() != ']') return Fail("expected ',' or ']' in the array");
    }
    ++pos_;
    return Status::Ok();
  }

  const std::string& text_;
  const std::string& source_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int32_t line_ = 1;
  // The lines where each table and each key of the current table was first given.
  std::unordered_map<std::string, int32_t> tables_;
  std::unordered_map<std::string, int32_t> keys_;
};

}  // namespace

const char* TomlKindName(TomlValue::Kind kind) {
  switch (kind) {
    case TomlValue::Kind::kString:
      return "a string";
    case TomlValue::Kind::kInteger:
      return "an integer";
    case TomlValue::Kind::kFloat:
      return "a float";
    case TomlValue::Kind::kBool:
      return "a boolean";
    case TomlValue::Kind::kStringArray:
      return "an array of strings";
    case TomlValue::Kind::kStringArrays:
      return "an array of arrays of strings";
  }
  return "a value";
}

const TomlTable* TomlDocument::Find(const std::string& name) const {
  for (const TomlTable& table : tables) {
    if (table.name == name) return &table;
  }
  return nullptr;
}

Result<TomlDocument> ParseToml(const std::string& text, const std::string& source) {
  return TomlParser(text, source).Parse();
}

}  // namespace stagecraft
