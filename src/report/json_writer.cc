#include "report/json_writer.h"

#include <cctype>
#include <cstdio>
#include <string>

#include "core/internal_error.h"
#include "core/units.h"

namespace stagecraft {

namespace {

// A value as JSON spells it without quotes (RFC 8259 §6): a number, true, false or null; not
// inf, -nan or 1e+ (what a non-finite or garbled figure prints as).
bool IsJsonLiteral(std::string_view text) {
  if (text == "true" || text == "false" || text == "null") return true;
  size_t at = 0;
  const auto digits = [&text, &at] {
    const size_t start = at;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) ++at;
    return at > start;
  };
  if (at < text.size() && text[at] == '-') ++at;
  if (at < text.size() && text[at] == '0') {
    ++at;
  } else if (!digits()) {
    return false;
  }
  if (at < text.size() && text[at] == '.') {
    ++at;
    if (!digits()) return false;
  }
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
    if (!digits()) return false;
  }
  return at == text.size();
}

}  // namespace

std::string JsonEscape(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size() + 2);
  for (const char c : text) {
    switch (c) {
      case '"':
        escaped += "\\\"";
        break;
      case '\\':
        escaped += "\\\\";
        break;
      case '\n':
        escaped += "\\n";
        break;
      case '\t':
        escaped += "\\t";
        break;
      case '\r':
        escaped += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          escaped += buffer;
        } else {
          escaped += c;
        }
    }
  }
  return escaped;
}

void JsonWriter::Newline() {
  if (!pretty_) return;
  text_ += '\n';
  text_.append(first_in_scope_.size() * 2, ' ');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (first_in_scope_.empty()) return;
  if (!first_in_scope_.back()) text_ += ',';
  first_in_scope_.back() = false;
  Newline();
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  text_ += '{';
  first_in_scope_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndScope(char closer) {
  const bool empty = first_in_scope_.back();
  first_in_scope_.pop_back();
  if (!empty) Newline();
  text_ += closer;
  return *this;
}

JsonWriter& JsonWriter::EndObject() { return EndScope('}'); }

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  text_ += '[';
  first_in_scope_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndArray() { return EndScope(']'); }

JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  text_ += '"' + JsonEscape(key) + (pretty_ ? "\": " : "\":");
  last_key_ = std::string(key);
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  text_ += '"' + JsonEscape(value) + '"';
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) { return Raw(std::to_string(value)); }

JsonWriter& JsonWriter::Fixed(double value, int decimals) {
  return Raw(FormatFixed(value, decimals));
}

JsonWriter& JsonWriter::Bool(bool value) { return Raw(value ? "true" : "false"); }

JsonWriter& JsonWriter::Raw(std::string_view number) {
  if (!IsJsonLiteral(number)) {
    throw InternalError("the JSON writer was given '" + std::string(number) + "' for " +
                        (last_key_.empty() ? std::string("a value") : "'" + last_key_ + "'") +
                        ", not a finite number; no JSON was printed");
  }
  BeforeValue();
  text_ += number;
  return *this;
}

}  // namespace stagecraft
