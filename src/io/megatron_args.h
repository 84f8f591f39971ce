// Megatron-LM's pretrain_gpt.py arguments read into a config (`stagecraft simulate
// --from-megatron FILE`): the model's dimensions and the layout, as `plan --export megatron`
// writes them in megatron-args.txt, one `--flag [value]` per line, `#` comments. The cluster
// (and everything else) comes from `base`; dp follows from the cluster's GPUs, the microbatches
// from the global batch. Errors name the file and line; unknown arguments are errors.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"
#include "io/config.h"

namespace stagecraft {

// Whose arguments: Megatron-LM's pretrain_gpt.py, or Megatron-DeepSpeed's (its fork run under
// DeepSpeed, `plan --export deepspeed`'s megatron-deepspeed-args.txt): --deepspeed,
// --deepspeed_config FILE and --zero-stage N (parallel.zero_stage) added; context parallelism,
// interleaving and Megatron's distributed optimizer and overlaps absent (DeepSpeed's pipeline
// engine runs one schedule, deepspeed/runtime/pipe/schedule.py's TrainSchedule).
enum class MegatronDialect : uint8_t { kMegatronLm, kMegatronDeepSpeed };

Result<Config> ReadMegatronArgs(const std::string& text, const std::string& source, Config base,
                                MegatronDialect dialect = MegatronDialect::kMegatronLm);

}  // namespace stagecraft
