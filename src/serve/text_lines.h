// The line walk the serving readers share (request traces, length traces): every line of a text
// that is neither empty nor a `#` comment, a trailing '\r' removed, with its 1-based number.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "core/result.h"

namespace stagecraft {

// Calls visit(line, number) -> Status for each data line; stops at the first error.
template <typename Visit>
Status ForEachDataLine(std::string_view text, Visit visit) {
  int64_t number = 0;
  size_t start = 0;
  while (start < text.size()) {
    const size_t newline = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, newline - start);
    start = newline + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    STAGECRAFT_RETURN_IF_ERROR(visit(line, number));
  }
  return Status::Ok();
}

}  // namespace stagecraft
