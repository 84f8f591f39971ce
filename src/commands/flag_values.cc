#include "commands/flag_values.h"

#include <cmath>
#include <cstdlib>
#include <utility>

#include "core/units.h"

namespace stagecraft {

Result<double> ParseNumber(const std::string& flag, const std::string& text,
                           const std::string& expected) {
  const bool characters_ok = text.find_first_not_of("0123456789.eE+-") == std::string::npos;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || !characters_ok || end != text.c_str() + text.size()) {
    return Error{flag + ": '" + text + "' is not a number (expected " + expected + ")"};
  }
  if (!std::isfinite(value)) {
    return Error{flag + ": '" + text + "' is out of range (expected " + expected + ")"};
  }
  return value;
}

Result<double> ParsePositive(const std::string& flag, const std::string& text,
                             const std::string& expected) {
  auto value = ParseNumber(flag, text, expected);
  if (!value.ok()) return value.error();
  if (value.value() <= 0) {
    return Error{flag + ": must be above zero, got " + text + " (expected " + expected + ")"};
  }
  return value;
}

Result<int64_t> ParseCount(const std::string& flag, const std::string& text, int64_t low,
                           int64_t high, const std::string& expected, const std::string& example) {
  const std::string with_example = expected + ", e.g. " + example;
  auto value =
      low > 0 ? ParsePositive(flag, text, with_example) : ParseNumber(flag, text, with_example);
  if (!value.ok()) return value.error();
  const double number = value.value();
  if (number != std::floor(number) || number < static_cast<double>(low) ||
      number > static_cast<double>(high)) {
    return Error{flag + ": expected " + expected + ", got " + text + " (e.g. " + example + ")"};
  }
  return static_cast<int64_t>(number);
}

Result<double> ParseSeconds(const std::string& flag, const std::string& text, double max_s) {
  const std::string expected = "a duration such as 0.6s, 51s, 3min or 2h; a bare number is ms";
  double seconds = 0;
  bool scaled = false;
  for (const auto& [unit, length] : {std::pair<const char*, double>{"min", 60.0}, {"h", 3600.0}}) {
    const std::string suffix = unit;
    if (text.size() > suffix.size() &&
        text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0) {
      auto value = ParsePositive(flag, text.substr(0, text.size() - suffix.size()), expected);
      if (!value.ok()) return value.error();
      seconds = value.value() * length;
      scaled = true;
      break;
    }
  }
  if (!scaled) {
    auto time = ParseDuration(text);
    if (!time.ok()) return Error{flag + ": " + time.error().message + "; min and h work too"};
    if (time.value().ns() < 0) {
      return Error{flag + ": must not be negative, got " + text + " (expected " + expected + ")"};
    }
    seconds = static_cast<double>(time.value().ns()) / 1e9;
  }
  if (!(seconds <= max_s)) {
    return Error{flag + ": '" + text + "' is out of range (expected at most " +
                 FormatFixed(max_s / 3600.0, 0) + "h; " + expected + ")"};
  }
  return seconds;
}

}  // namespace stagecraft
