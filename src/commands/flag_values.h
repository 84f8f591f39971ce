// The values of number and duration flags, parsed with the flag's name in every error (the
// goodput command's, commands/goodput_flags.cc).
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"

namespace stagecraft {

// A number flag: digits with an optional '.', sign and exponent; "nan", "inf", hex and spaces
// are not numbers, and a number past a double's range ("1e400") is out of range.
Result<double> ParseNumber(const std::string& flag, const std::string& text,
                           const std::string& expected);
// A positive finite number flag ("--days 30").
Result<double> ParsePositive(const std::string& flag, const std::string& text,
                             const std::string& expected);
// A count: a whole number in [low, high], low >= 0. `expected` says what it counts and the range
// ("a whole number of simulated runs, 1 to 1000000"), `example` a value to give ("10000"):
// "--monte-carlo: expected a whole number of simulated runs, 1 to 1000000, got 1.5 (e.g. 10000)".
Result<int64_t> ParseCount(const std::string& flag, const std::string& text, int64_t low,
                           int64_t high, const std::string& expected, const std::string& example);
// A duration flag: ns, us, ms, s, min or h; a bare number means ms, as everywhere in stagecraft.
// Not negative, at most `max_s` seconds.
Result<double> ParseSeconds(const std::string& flag, const std::string& text, double max_s);

}  // namespace stagecraft
