// Megatron-LM's pretrain_gpt.py arguments read into a config (`stagecraft simulate
// --from-megatron FILE`): the model's dimensions and the layout, as `plan --export megatron`
// writes them in megatron-args.txt, one `--flag [value]` per line, `#` comments. The cluster
// (and everything else) comes from `base`; dp follows from the cluster's GPUs, the microbatches
// from the global batch. Errors name the file and line; unknown arguments are errors. The
// exports write them with WriteMegatronArgs, from the same rows (io/megatron_args_table.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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

// What the arguments say that a config does not hold: the global batch (the config holds the
// microbatches of one pipeline) and the dialect.
struct MegatronWriteContext {
  int64_t global_batch = 0;  // --global-batch-size, sequences per iteration
  MegatronDialect dialect = MegatronDialect::kMegatronLm;
};

// The arguments that run `config` (the model and the layout, as a planner's candidate applied to
// it sets them), one {flag, value} per argument, value "" for a switch, in the order of
// Megatron's argument groups (megatron/training/arguments.py). Written from the rows
// ReadMegatronArgs reads, so every argument written is read back (`plan --export megatron` and
// `deepspeed` write these).
std::vector<std::pair<std::string, std::string>> WriteMegatronArgs(
    const Config& config, const MegatronWriteContext& context);

}  // namespace stagecraft
