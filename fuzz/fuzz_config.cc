// libFuzzer target: the YAML config reader (io/config.h) on arbitrary text. Any input must give
// a Config or an Error, never a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  stagecraft::ConfigLocations locations;
  auto config = stagecraft::ParseConfig(text, "fuzz.yaml", &locations);
  if (!config.ok() && config.error().message.empty()) __builtin_trap();  // an error says what
  return 0;
}
