// Megatron-LM's pretrain_gpt.py arguments read into a config (`stagecraft simulate
// --from-megatron FILE`): the model's dimensions and the layout, as `plan --export megatron`
// writes them in megatron-args.txt, one `--flag [value]` per line, `#` comments. The cluster
// (and everything else) comes from `base`; dp follows from the cluster's GPUs, the microbatches
// from the global batch. Errors name the file and line; unknown arguments are errors.
#pragma once

#include <string>

#include "core/result.h"
#include "io/config.h"

namespace stagecraft {

Result<Config> ReadMegatronArgs(const std::string& text, const std::string& source, Config base);

}  // namespace stagecraft
