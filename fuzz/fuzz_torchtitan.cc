// libFuzzer target: the TOML subset reader and torchtitan's job config reader
// (io/torchtitan_config.h) on arbitrary text, over a config with one node of 8 GPUs and the model
// from the job config's flavor. Any input must give a Config or an Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/torchtitan_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  stagecraft::Config base;
  base.cluster.given = true;
  base.cluster.nodes = 1;
  base.cluster.devices_per_node = 8;
  auto config = stagecraft::ReadTorchtitanConfig(text, "fuzz.toml", base, false);
  if (!config.ok() && config.error().message.empty()) __builtin_trap();
  return 0;
}
