// libFuzzer target: the HuggingFace config.json reader (io/hf_config.h) on arbitrary text, over
// the default model. Any input must give a ModelSpec or an Error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto model = stagecraft::ModelFromHfConfig(text, "fuzz.json", stagecraft::ModelSpec());
  if (!model.ok() && model.error().message.empty()) __builtin_trap();
  return 0;
}
