// Helpers shared by the unit tests (header-only; nothing here is linked into the tool).
#pragma once

#include <string>

namespace stagecraft {

// Whether `part` occurs in `text` (for checking error messages and reports).
inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace stagecraft
