// The subset of Python that torchtitan's config functions are read in (io/torchtitan_registry.h):
// the file's logical statements (comments dropped, lines joined while brackets are open, spaces
// outside strings dropped) and the literals they assign, as TOML values, the 0.2 job config's
// (io/torchtitan_config.h). Internal to src/io.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "io/toml.h"

namespace stagecraft::torchtitan_python {

// A value as the subset writes it, with the line it was set on (0: the base function's default).
struct PyValue {
  TomlValue value;
  bool none = false;
};

TomlValue Int(int64_t value);
TomlValue Bool(bool value);
TomlValue Str(std::string value);

// One statement per logical line: comments dropped, lines joined while brackets are open.
struct Statement {
  std::string text;  // squeezed: one space only between two names or numbers
  std::string raw;   // as written (first line), for messages
  int32_t line = 0;
};

// The file's statements; errors name the line of a string or a bracket left open, or of a
// bracket closed with none open.
Result<std::vector<Statement>> Statements(const std::string& text, const std::string& source);

// The first two names or numbers that a statement's text holds side by side outside strings
// ("ret urn", "8 192": two tokens to Python, a syntax error), or "" when there are none.
std::string SideBySide(const std::string& text);

// A literal: an integer (a product of integers, `_` separators), True/False, None, a string, a
// list of strings or a list of lists of strings (module_fqns_per_model_part).
std::optional<PyValue> Literal(const std::string& text);

}  // namespace stagecraft::torchtitan_python
