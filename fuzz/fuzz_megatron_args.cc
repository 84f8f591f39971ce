// libFuzzer target: the Megatron-LM and Megatron-DeepSpeed argument readers (io/megatron_args.h,
// what `simulate --from-megatron` and `--from-deepspeed` read) on arbitrary text, over a config
// with one node of 8 GPUs. Inputs that start with '#D' are read as Megatron-DeepSpeed's
// (scripts/fuzz.sh seeds both). Any input must give a Config or an Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/megatron_args.h"
#include "one_node.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const stagecraft::Config base = OneNodeOfEight();
  const auto dialect = text.rfind("#D", 0) == 0 ? stagecraft::MegatronDialect::kMegatronDeepSpeed
                                                : stagecraft::MegatronDialect::kMegatronLm;
  auto config = stagecraft::ReadMegatronArgs(text, "fuzz.txt", base, dialect);
  if (!config.ok() && config.error().message.empty()) __builtin_trap();
  return 0;
}
