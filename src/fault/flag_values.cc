#include "fault/flag_values.h"

#include <cmath>
#include <cstdlib>
#include <utility>

#include "core/units.h"

namespace stagecraft {

Result<double> ParsePositive(const std::string& flag, const std::string& text,
                             const std::string& expected) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    return Error{flag + ": '" + text + "' is not a number (expected " + expected + ")"};
  }
  if (value <= 0) {
    return Error{flag + ": must be above zero, got " + text + " (expected " + expected + ")"};
  }
  return value;
}

Result<double> ParseSeconds(const std::string& flag, const std::string& text) {
  const std::string expected = "a duration such as 0.6s, 51s, 3min or 2h; a bare number is ms";
  for (const auto& [unit, seconds] : {std::pair<const char*, double>{"min", 60.0}, {"h", 3600.0}}) {
    const std::string suffix = unit;
    if (text.size() > suffix.size() &&
        text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0) {
      auto value = ParsePositive(flag, text.substr(0, text.size() - suffix.size()), expected);
      if (!value.ok()) return value.error();
      return value.value() * seconds;
    }
  }
  auto time = ParseDuration(text);
  if (!time.ok()) return Error{flag + ": " + time.error().message + "; min and h work too"};
  if (time.value().ns() < 0) {
    return Error{flag + ": must not be negative, got " + text + " (expected " + expected + ")"};
  }
  return static_cast<double>(time.value().ns()) / 1e9;
}

}  // namespace stagecraft
