// torchtitan's TOML job config (its 0.2 releases, `--job.config_file`) read into a config
// (`stagecraft simulate --from-torchtitan FILE.toml`): the layout, batch, sequence length,
// activation checkpointing, compile, async TP and float8 of the run, as `plan --export
// torchtitan` writes them and torchtitan's own train configs do. The key names are those of
// torchtitan/config/job_config.py (pytorch/torchtitan at 000204a4a8bf3d0f31adc44fc29855fbb6ea13d8);
// the layout is checked by torchtitan's own rules, ported (torchtitan_config.cc and
// torchtitan_pipeline.cc name the files).
// The model is the base config's (CONFIG or --hf-config) when `model_given`, checked against a
// `[model] flavor` of llama3 that torchtitan defines; otherwise that flavor's dimensions. The
// cluster comes from `base`; its GPUs are torchtitan's WORLD_SIZE. Errors name the file and
// line, with "did you mean" for unknown keys of the tables read.
#pragma once

#include <string>

#include "core/result.h"
#include "io/config.h"
#include "io/toml.h"

namespace stagecraft {

// The llama3 flavor of torchtitan with these dimensions ("8B", "70B", "405B"), or "".
std::string Llama3FlavorOf(const TransformerSpec& transformer);

Result<Config> ReadTorchtitanConfig(const std::string& text, const std::string& source, Config base,
                                    bool model_given);

// The same from a parsed job config: the tables and keys of the 0.2 releases, each value's line
// the line errors name (io/torchtitan_registry.h translates the Python config registry into it).
Result<Config> ReadTorchtitanDocument(const TomlDocument& document, const std::string& source,
                                      Config base, bool model_given);

}  // namespace stagecraft
