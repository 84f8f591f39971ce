// The values of the fault commands' flags, parsed with the flag's name in every error.
#pragma once

#include <string>

#include "core/result.h"

namespace stagecraft {

// A duration flag: ns, us, ms, s, min or h; a bare number means ms, as everywhere in stagecraft.
Result<double> ParseSeconds(const std::string& flag, const std::string& text);
// A positive finite number flag ("--days 30").
Result<double> ParsePositive(const std::string& flag, const std::string& text,
                             const std::string& expected);

}  // namespace stagecraft
