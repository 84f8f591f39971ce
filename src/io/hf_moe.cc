#include "io/hf_moe.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "io/hf_json.h"

namespace stagecraft {
namespace {

using hf_json::kMaxInt32;
using hf_json::ReadInteger;
using hf_json::Where;

// Which layers a config makes MoE, and what to name when they are not a suffix: the key that
// decides it, its value as written, and the values stagecraft can model.
struct MoeLayers {
  std::vector<bool> moe;  // one per decoder layer
  const char* key = "";
  std::string value;
  std::string expected;
};

bool Present(const YAML::Node& node) { return node && !node.IsNull(); }

// The integer `key` of `root` (>= min) into *out; absent or null: *out unchanged, or an error
// naming what the family needs when `required`.
Status Field(const YAML::Node& root, const char* key, std::string_view source, bool required,
             int64_t min, const char* needs, int64_t* out) {
  const YAML::Node node = root[key];
  if (!Present(node)) {
    if (!required) return Status::Ok();
    return Error{std::string(source) + ": missing '" + key + "' (" + needs + ")"};
  }
  return ReadInteger(node, key, source, min, kMaxInt32, out);
}

// DeepSeek-V2/V3 (deepseek-ai's modeling_deepseek.py, DeepseekV2DecoderLayer and
// DeepseekV3DecoderLayer): layer i is MoE when i >= first_k_dense_replace and
// i % moe_layer_freq == 0 (both released configs give moe_layer_freq 1; V2 first_k_dense_replace
// 1, V3 3). n_routed_experts experts of moe_intermediate_size; n_shared_experts shared ones, one
// MLP of moe_intermediate_size x n_shared_experts (DeepseekV2MoE), counted as that many experts.
Result<MoeLayers> ReadDeepSeek(const YAML::Node& root, std::string_view source,
                               TransformerSpec& spec) {
  constexpr const char* kNeeds =
      "a DeepSeek mixture of experts gives n_routed_experts, num_experts_per_tok and "
      "moe_intermediate_size";
  STAGECRAFT_RETURN_IF_ERROR(
      Field(root, "n_routed_experts", source, true, 1, kNeeds, &spec.experts));
  STAGECRAFT_RETURN_IF_ERROR(
      Field(root, "num_experts_per_tok", source, true, 1, kNeeds, &spec.experts_per_token));
  STAGECRAFT_RETURN_IF_ERROR(
      Field(root, "moe_intermediate_size", source, true, 1, kNeeds, &spec.expert_ffn));
  STAGECRAFT_RETURN_IF_ERROR(
      Field(root, "n_shared_experts", source, false, 0, kNeeds, &spec.shared_experts));
  int64_t first_dense = 0;
  int64_t frequency = 1;
  STAGECRAFT_RETURN_IF_ERROR(
      Field(root, "first_k_dense_replace", source, false, 0, kNeeds, &first_dense));
  STAGECRAFT_RETURN_IF_ERROR(Field(root, "moe_layer_freq", source, false, 1, kNeeds, &frequency));
  MoeLayers layers;
  layers.key = "moe_layer_freq";
  layers.value = std::to_string(frequency);
  layers.expected = "moe_layer_freq 1, with first_k_dense_replace giving the dense layers";
  for (int32_t index = 0; index < spec.layers; ++index) {
    layers.moe.push_back(index >= first_dense && index % frequency == 0);
  }
  return layers;
}

// Qwen2-MoE and Qwen3-MoE (transformers' models/qwen2_moe/modeling_qwen2_moe.py,
// Qwen2MoeDecoderLayer, which models/qwen3_moe reuses as Qwen3MoeDecoderLayer): layer i is MoE
// unless it is in mlp_only_layers (default []), and then only when (i + 1) % decoder_sparse_step
// == 0 (default 1); the others keep the dense MLP of intermediate_size. num_experts routed
// experts of moe_intermediate_size (num_local_experts in configs saved by transformers 5, whose
// Qwen3MoeConfig maps the one name to the other). Qwen2-MoE adds one shared expert of
// shared_expert_intermediate_size (default 5632, configuration_qwen2_moe.py) under a sigmoid
// gate; TransformerSpec counts shared experts in units of the routed width (shared_experts x
// expert_ffn), so that width must be a multiple of moe_intermediate_size, as it is in the
// released models (Qwen1.5-MoE-A2.7B 5632 = 4 x 1408, Qwen2-57B-A14B 20480 = 8 x 2560). Left
// out: the shared expert's gate (h parameters a layer), Qwen2-MoE's q/k/v biases and Qwen3's
// per-head q/k RMSNorms (2 x head_dim a layer), under 0.002% of the parameters (Qwen1.5-MoE-A2.7B:
// 196,608 of 14.3B).
Result<MoeLayers> ReadQwen(const YAML::Node& root, std::string_view source,
                           std::string_view model_type, TransformerSpec& spec) {
  constexpr const char* kNeeds =
      "a Qwen2-MoE or Qwen3-MoE mixture of experts gives num_experts, num_experts_per_tok and "
      "moe_intermediate_size";
  const char* experts_key = Present(root["num_experts"]) ? "num_experts" : "num_local_experts";
  STAGECRAFT_RETURN_IF_ERROR(Field(root, experts_key, source, true, 1, kNeeds, &spec.experts));
  STAGECRAFT_RETURN_IF_ERROR(
      Field(root, "num_experts_per_tok", source, true, 1, kNeeds, &spec.experts_per_token));
  STAGECRAFT_RETURN_IF_ERROR(
      Field(root, "moe_intermediate_size", source, true, 1, kNeeds, &spec.expert_ffn));
  int64_t shared_width = model_type == "qwen2_moe" ? 5632 : 0;
  STAGECRAFT_RETURN_IF_ERROR(
      Field(root, "shared_expert_intermediate_size", source, false, 0, kNeeds, &shared_width));
  if (shared_width % spec.expert_ffn != 0) {
    const YAML::Node node = root["shared_expert_intermediate_size"];
    return Error{(Present(node) ? Where(source, node) : std::string(source) + ": ") +
                 "shared_expert_intermediate_size " + std::to_string(shared_width) +
                 (Present(node) ? "" : " (Qwen2MoeConfig's default)") +
                 " is not a multiple of moe_intermediate_size " + std::to_string(spec.expert_ffn) +
                 "; stagecraft counts shared experts in units of the routed expert's width "
                 "(shared_experts x expert_ffn), so it cannot hold this shared expert"};
  }
  spec.shared_experts = shared_width / spec.expert_ffn;
  int64_t step = 1;
  STAGECRAFT_RETURN_IF_ERROR(Field(root, "decoder_sparse_step", source, false, 1, kNeeds, &step));
  std::vector<int64_t> dense_only;
  const YAML::Node listed = root["mlp_only_layers"];
  if (Present(listed) && !hf_json::IntList(listed, &dense_only)) {
    return Error{Where(source, listed) + "'mlp_only_layers' must be a list of layer indices"};
  }
  MoeLayers layers;
  layers.key = step != 1 ? "decoder_sparse_step" : "mlp_only_layers";
  if (step != 1) {
    layers.value = std::to_string(step);
  } else {
    layers.value = "[";
    for (size_t item = 0; item < dense_only.size(); ++item) {
      layers.value += (item > 0 ? ", " : "") + std::to_string(dense_only[item]);
    }
    layers.value += "]";
  }
  layers.expected = "decoder_sparse_step 1, and mlp_only_layers empty or the first layers 0..k-1";
  for (int32_t index = 0; index < spec.layers; ++index) {
    const bool dense = std::find(dense_only.begin(), dense_only.end(), index) != dense_only.end();
    layers.moe.push_back(!dense && (index + 1) % step == 0);
  }
  return layers;
}

// Mixtral (transformers' models/mixtral/modeling_mixtral.py: a MixtralSparseMoeBlock in every
// layer): num_local_experts experts of intermediate_size (w1, w3 gated, w2), num_experts_per_tok
// of them a token, a router of h x E, no shared expert, no dense layer.
Result<MoeLayers> ReadMixtral(const YAML::Node& root, std::string_view source,
                              TransformerSpec& spec) {
  constexpr const char* kNeeds =
      "a Mixtral mixture of experts gives num_local_experts and num_experts_per_tok";
  STAGECRAFT_RETURN_IF_ERROR(
      Field(root, "num_local_experts", source, true, 1, kNeeds, &spec.experts));
  STAGECRAFT_RETURN_IF_ERROR(
      Field(root, "num_experts_per_tok", source, true, 1, kNeeds, &spec.experts_per_token));
  spec.expert_ffn = spec.ffn_hidden;
  MoeLayers layers;
  layers.moe.assign(static_cast<size_t>(spec.layers), true);
  return layers;
}

// dense_layers from `layers`: the MoE layers must be the last ones. No MoE layer at all: a dense
// model.
Status ApplyMoeLayers(const MoeLayers& layers, const YAML::Node& root, std::string_view source,
                      TransformerSpec& spec) {
  const auto first_moe = std::find(layers.moe.begin(), layers.moe.end(), true);
  if (first_moe == layers.moe.end()) {
    spec.experts = spec.experts_per_token = spec.expert_ffn = spec.shared_experts = 0;
    spec.dense_layers = 0;
    return Status::Ok();
  }
  const auto dense_after = std::find(first_moe, layers.moe.end(), false);
  if (dense_after != layers.moe.end()) {
    const YAML::Node node = root[layers.key];
    return Error{
        (Present(node) ? Where(source, node) : std::string(source) + ": ") + layers.key + " " +
        layers.value + " makes layer " + std::to_string(first_moe - layers.moe.begin()) +
        " a mixture of experts but layer " + std::to_string(dense_after - layers.moe.begin()) +
        " dense; stagecraft models a mixture of experts as its first layers dense and "
        "every later layer MoE (expected " +
        layers.expected + ")"};
  }
  spec.dense_layers = static_cast<int32_t>(first_moe - layers.moe.begin());
  return Status::Ok();
}

}  // namespace

Status ReadMixtureOfExperts(const YAML::Node& root, std::string_view source,
                            std::string_view model_type, TransformerSpec& spec) {
  Result<MoeLayers> layers = MoeLayers();
  if (Present(root["n_routed_experts"])) {
    layers = ReadDeepSeek(root, source, spec);
  } else if (model_type == "qwen2_moe" || model_type == "qwen3_moe" ||
             Present(root["num_experts"])) {
    layers = ReadQwen(root, source, model_type, spec);
  } else if (Present(root["num_local_experts"])) {
    layers = ReadMixtral(root, source, spec);
  } else {
    return Status::Ok();  // dense
  }
  if (!layers.ok()) return layers.error();
  if (spec.experts_per_token > spec.experts) {
    return Error{Where(source, root["num_experts_per_tok"]) + "num_experts_per_tok " +
                 std::to_string(spec.experts_per_token) + " exceeds the " +
                 std::to_string(spec.experts) + " routed experts"};
  }
  return ApplyMoeLayers(layers.value(), root, source, spec);
}

}  // namespace stagecraft
