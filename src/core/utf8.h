// UTF-8 for the readers and the messages: a valid sequence's length (EscapeBytes, the strict
// JSON reader) and one code point's encoding (the JSON and TOML readers' \u escapes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stagecraft {

// The length of the valid UTF-8 sequence at `text[pos]` (2 to 4 bytes), or 0 when there is none
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
inline size_t Utf8SequenceLength(std::string_view text, size_t pos) {
  const auto byte = [&](size_t offset) {
    return pos + offset < text.size() ? static_cast<unsigned char>(text[pos + offset]) : 0u;
  };
  const unsigned lead = byte(0);
  const auto continuation = [&](size_t offset) { return (byte(offset) & 0xC0u) == 0x80u; };
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    const unsigned second = byte(1);
    if ((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second > 0x9F)) return 0;
    return continuation(1) && continuation(2) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    const unsigned second = byte(1);
    if ((lead == 0xF0 && second < 0x90) || (lead == 0xF4 && second > 0x8F)) return 0;
    return continuation(1) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

// Appends code point `cp` as UTF-8: one to four bytes (a lone surrogate as its three bytes, as
// Python keeps it).
inline void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace stagecraft
