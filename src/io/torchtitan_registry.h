// torchtitan's Python config registry (the generation after the 0.2 releases: `-m
// torchtitan.train --module M --config F`, F a function returning a Trainer.Config) read into a
// config (`stagecraft simulate --from-torchtitan FILE.py`), as `plan --export torchtitan` writes
// it (stagecraft_plan.py). Ported from pytorch/torchtitan at
// b5bcd76c66d0acb1a08b176d9639425bc55e0b2a (main, 2026-08-21):
//   torchtitan/config/manager.py: --module/--config select the function; CLI flags override it;
//   torchtitan/config/configs.py: TrainingConfig (num_tokens_per_microbatch_per_dp_rank 16384,
//     num_tokens_per_train_step -1 = that x num_pp_microbatches x dp, max_context_length 2048,
//     disable_cuda_graphs), ParallelismConfig (the 0.2 degrees and split keys, num_pp_microbatches
//     1 in place of the microbatch size), CompileConfig (enable_async_tensor_parallel needs enable
//     and "model" in components);
//   torchtitan/trainer.py, Trainer.Config: activation_checkpoint SelectiveAC.Config() by default
//     (FullAC.Config(), None); CUDA graphs refuse pipeline parallelism unless
//     training.disable_cuda_graphs;
//   torchtitan/distributed/parallel_dims.py: expert_parallel_degree divides dp_shard x cp x tp
//     (EP borrows TP ranks there: read only with tp 1, where it is the 0.2 layout);
//   torchtitan/models/llama3/config_registry.py: llama3_8b, llama3_70b, llama3_405b, whose
//     values are the defaults a function that starts from them inherits.
// The file is read as the subset such a function needs, one statement per line (brackets may
// span lines): imports, one `def`, `config = BASE()`, `config.model_spec = model_registry("F"
// [, converters=[Float8LinearConverter.Config(...)]])`, `config.SECTION.FIELD = VALUE` (integers,
// True/False, None, strings, lists of strings), `config.SECTION = SectionConfig(FIELD=VALUE,
// ...)`, `config.activation_checkpoint = FullAC.Config() | SelectiveAC.Config() | None`, and
// `return config`. Anything else is an error naming the line. The values are translated into the
// 0.2 job config's tables and read by io/torchtitan_config.h, so both generations share its
// ported layout rules.
#pragma once

#include <string>

#include "core/result.h"
#include "io/config.h"

namespace stagecraft {

Result<Config> ReadTorchtitanRegistry(const std::string& text, const std::string& source,
                                      Config base, bool model_given);

}  // namespace stagecraft
