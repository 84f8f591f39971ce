// The JSON that the engines' own readers accept, checked before stagecraft reads a JSON input:
// transformers reads config.json and DeepSpeed reads ds_config.json with Python's `json`, so a
// file stagecraft reads must be one `json.loads` reads, and read the same way. yaml-cpp, which
// reads the values afterwards, is far more lenient (YAML, single quotes, keys without quotes) and
// keeps the first of two equal keys where Python keeps the last (issue 35, D13/D14).
#pragma once

#include <string_view>

#include "core/result.h"

namespace stagecraft {

// The deepest nesting of arrays and objects a JSON input may have (engines' configs nest a few
// levels; Python's json fails near 1000 with a RecursionError).
inline constexpr int kMaxJsonDepth = 100;

// Checks `text` as strict JSON (RFC 8259): objects, arrays, double-quoted strings with JSON's
// escapes and no raw control characters, numbers in JSON's grammar, true/false/null, nothing
// after the value. Refused beyond what Python's json refuses: duplicate keys in one object
// (Python keeps the last silently; the error names both lines), NaN, Infinity and numbers that
// overflow a double (they would make nan or inf figures), a byte-order mark, invalid UTF-8 in a
// string, nesting deeper than kMaxJsonDepth. Errors read "source:line:col: what (expected ...)",
// `what_file` naming the file's kind in the suggestion ("a HuggingFace config.json"). Linear in
// the text's size (a hash set of each object's keys).
Status CheckStrictJson(std::string_view text, std::string_view source, std::string_view what_file);

}  // namespace stagecraft
