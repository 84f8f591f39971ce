// libFuzzer target: the DeepSpeed reader (io/deepspeed_config.h, what `simulate --from-deepspeed`
// reads): a ds_config.json and the Megatron-DeepSpeed arguments beside it, over a config with one
// node of 8 GPUs. The input is the JSON, a line "---", then the arguments (scripts/fuzz.sh seeds
// it with what `plan --export deepspeed` writes); without the line, all of it is the JSON and the
// arguments are empty. Any input must give a Config or an Error with a message.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/deepspeed_config.h"
#include "one_node.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t cut = input.find("\n---\n");
  const std::string json = cut == std::string::npos ? input : input.substr(0, cut);
  const std::string args = cut == std::string::npos ? "" : input.substr(cut + 5);
  auto config = stagecraft::ReadDeepSpeedConfig(json, "ds_config.json", args,
                                                "megatron-deepspeed-args.txt", OneNodeOfEight());
  if (!config.ok() && config.error().message.empty()) __builtin_trap();
  return 0;
}
