// JsonWriter: a small streaming JSON writer with deterministic output — keys in the order the
// caller writes them, floats with a fixed number of decimals, no locale, no pointers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stagecraft {

class JsonWriter {
 public:
  // `pretty`: two-space indentation and one member per line; otherwise compact.
  explicit JsonWriter(bool pretty) : pretty_(pretty) {}

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Fixed(double value, int decimals);  // e.g. 0.272727 with decimals = 6
  JsonWriter& Bool(bool value);
  // A pre-formatted number (or true, false, null). Anything else, such as the "inf" or "-nan" a
  // non-finite figure formats as, is our bug: it throws InternalError (core/internal_error.h)
  // rather than write invalid JSON. Fixed and Int go through it.
  JsonWriter& Raw(std::string_view number);

  const std::string& text() const { return text_; }

 private:
  void BeforeValue();
  JsonWriter& EndScope(char closer);
  void Newline();

  bool pretty_;
  std::string text_;
  std::vector<bool> first_in_scope_;  // per open scope: no member written yet
  bool after_key_ = false;
  std::string last_key_;  // the key of the value being written, for the error above
};

std::string JsonEscape(std::string_view text);

}  // namespace stagecraft
