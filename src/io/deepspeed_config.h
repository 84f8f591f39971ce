// DeepSpeed's ds_config.json with Megatron-DeepSpeed's arguments read into a config (`stagecraft
// simulate --from-deepspeed DIR|ds_config.json`), as `plan --export deepspeed` writes them: the
// arguments give the model and the layout (io/megatron_args.h, the Megatron-DeepSpeed dialect),
// the JSON the batch (train_batch_size, train_micro_batch_size_per_gpu,
// gradient_accumulation_steps) and the ZeRO stage. Both are checked against each other and by
// DeepSpeed's own rules, ported (deepspeed_config.cc names the files). Errors name the file, the
// line and column (the JSON) or the line (the arguments), with "did you mean" for unknown keys.
// The JSON must be strict JSON, as DeepSpeed's json.load reads it (io/strict_json.h).
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"
#include "io/config.h"

namespace stagecraft {

Result<Config> ReadDeepSpeedConfig(const std::string& json, const std::string& json_source,
                                   const std::string& args, const std::string& args_source,
                                   Config base);

// The ds_config.json that runs `config` (a planner's candidate applied to it) with `global_batch`
// sequences an iteration: the batch, bf16 and the ZeRO stage, one row per key shared with
// ReadDeepSpeedConfig (so every key written is one it reads), in the order `plan --export
// deepspeed` writes them.
std::string WriteDeepSpeedJson(const Config& config, int64_t global_batch);

}  // namespace stagecraft
