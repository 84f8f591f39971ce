// libFuzzer target: the kernel suite's CSV reader (io/kernel_set.h) on arbitrary text. Any input
// must give a KernelSource or an Error with a message, and every row's measured seconds must be
// finite and positive.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/kernel_set.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto source = stagecraft::ParseKernelSource(text, "fuzz.csv");
  if (!source.ok()) {
    if (source.error().message.empty()) __builtin_trap();
    return 0;
  }
  for (const stagecraft::KernelRow& row : source.value().rows) {
    const double seconds = stagecraft::KernelRowSeconds(source.value().kind, row);
    if (!std::isfinite(seconds) || seconds <= 0) __builtin_trap();
  }
  return 0;
}
