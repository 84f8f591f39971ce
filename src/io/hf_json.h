// The readers of a HuggingFace config.json's values (io/hf_config.h), shared by the files that
// read its families: hf_config.cc (dense, OPT, DeepSeek-V4.1, quantization, windows) and
// hf_moe.cc (the mixtures of experts). Every error is prefixed with "source:line:col: ".
// Internal to src/io.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace stagecraft::hf_json {

inline constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

// "source:line:col: " for `node`, or "source: " when it has no mark.
std::string Where(std::string_view source, const YAML::Node& node);

// An integer field `node` (`key` in the message) in [min, max] into *out.
Status ReadInteger(const YAML::Node& node, const char* key, std::string_view source, int64_t min,
                   int64_t max, int64_t* out);

// An integer list such as compress_ratios; false when the node is not one.
bool IntList(const YAML::Node& node, std::vector<int64_t>* out);

// The string `key` of `node`, "" when absent or not a scalar.
std::string Text(const YAML::Node& node, const char* key);

}  // namespace stagecraft::hf_json
