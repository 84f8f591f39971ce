// libFuzzer target: torchtitan's two config generations on arbitrary text, over a config with one
// node of 8 GPUs and the model from the file's llama3 flavor: the TOML subset reader with the 0.2
// job config reader (io/torchtitan_config.h), and the Python config registry reader
// (io/torchtitan_registry.h), which translates into the former. Inputs that start with "def " or
// "from " go to the registry reader (scripts/fuzz.sh seeds both). Any input must give a Config or
// an Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/torchtitan_config.h"
#include "io/torchtitan_registry.h"
#include "one_node.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const stagecraft::Config base = OneNodeOfEight();
  const bool python = text.rfind("def ", 0) == 0 || text.rfind("from ", 0) == 0;
  auto config = python ? stagecraft::ReadTorchtitanRegistry(text, "fuzz.py", base, false)
                       : stagecraft::ReadTorchtitanConfig(text, "fuzz.toml", base, false);
  if (!config.ok() && config.error().message.empty()) __builtin_trap();
  return 0;
}
