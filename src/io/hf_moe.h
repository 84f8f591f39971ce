// Mixtures of experts from a HuggingFace config.json (io/hf_config.h): the routed and shared
// experts and which layers route to them, for DeepSeek-V2/V3 (n_routed_experts), Qwen2-MoE and
// Qwen3-MoE (num_experts) and Mixtral (num_local_experts). TransformerSpec holds a mixture of
// experts as its first `dense_layers` layers dense and every later layer MoE; a config whose MoE
// layers are not such a suffix is an error naming the key that makes them so, never a silently
// different model. Internal to src/io.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string_view>

#include "core/result.h"
#include "model/transformer.h"

namespace stagecraft {

// The experts of `root` (whose model_type is `model_type`) into `spec`, whose layers, hidden and
// ffn_hidden (intermediate_size) are already read. A config without experts, or whose experts
// sit on no layer, leaves `spec` dense.
Status ReadMixtureOfExperts(const YAML::Node& root, std::string_view source,
                            std::string_view model_type, TransformerSpec& spec);

}  // namespace stagecraft
