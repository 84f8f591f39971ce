// libFuzzer target: the two layout strings a user writes. An input starting with 'P' is a
// pipeline layout after it (schedule/partition.h, PartitionFromLayout: Megatron-LM's
// --pipeline-model-parallel-layout and parallel.layout, "Et*3|(t*4|)*2tL") against a model of
// an embedding, 1 to 64 decoder layers (the second byte) and a head; any other input is
// `plan --layout`'s text (plan/plan.h, ParseLayoutSpec: "tp 8 pp 4 vpp 2 mbs 1 ...") for 64 GPUs
// and a global batch of 512. Any input must give a value or an Error with a message.
#include <cstddef>
#include <cstdint>
#include <string>

#include "plan/plan.h"
#include "schedule/partition.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  if (size >= 2 && input[0] == 'P') {
    const int decoders = 1 + static_cast<uint8_t>(input[1]) % 64;
    const std::string kinds = "E" + std::string(decoders, 't') + "L";
    auto partition = stagecraft::PartitionFromLayout(input.substr(2), kinds);
    if (!partition.ok() && partition.error().message.empty()) __builtin_trap();
    return 0;
  }
  stagecraft::PlanSpec spec;
  spec.gpus = 64;
  spec.global_batch = 512;
  auto candidate = stagecraft::ParseLayoutSpec(input, spec);
  if (!candidate.ok() && candidate.error().message.empty()) __builtin_trap();
  return 0;
}
