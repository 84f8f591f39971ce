// A reader for the subset of TOML (toml.io, v1.0.0) that engines' job configs use, e.g.
// torchtitan's (`simulate --from-torchtitan`): `[table]` headers (dotted names kept whole),
// `key = value` with bare keys, values that are strings ("basic" with the usual escapes, or
// 'literal'), integers (with `_` separators), floats, booleans, arrays of strings and arrays of
// arrays of strings (torchtitan's module_fqns_per_model_part; both may span lines), and `#`
// comments. Inline tables, arrays of other values, multi-line strings,
// dates and quoted keys are errors naming the line. Errors read `source:line:col: what was
// wrong (expected ...)`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace stagecraft {

struct TomlValue {
  enum class Kind : uint8_t { kString, kInteger, kFloat, kBool, kStringArray, kStringArrays };
  Kind kind = Kind::kString;
  std::string text;                              // kString
  int64_t integer = 0;                           // kInteger
  double number = 0;                             // kFloat
  bool boolean = false;                          // kBool
  std::vector<std::string> strings;              // kStringArray
  std::vector<std::vector<std::string>> arrays;  // kStringArrays
  int32_t line = 0;                              // 1-based line of the key
  bool operator==(const TomlValue&) const = default;
};

// "a string", "an integer", "a float", "a boolean", "an array of strings", "an array of arrays
// of strings".
const char* TomlKindName(TomlValue::Kind kind);

struct TomlTable {
  std::string name;                                     // "" for the keys before the first header
  int32_t line = 0;                                     // the header's line (0 for the root)
  std::vector<std::pair<std::string, TomlValue>> keys;  // in the file's order
  bool operator==(const TomlTable&) const = default;
};

struct TomlDocument {
  std::vector<TomlTable> tables;  // the root first, then each header in the file's order
  // The table named `name`, or nullptr.
  const TomlTable* Find(const std::string& name) const;
};

// Errors: a duplicate key or table, a value outside the subset, a malformed line.
Result<TomlDocument> ParseToml(const std::string& text, const std::string& source);

}  // namespace stagecraft
