#include "io/hf_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>

namespace stagecraft {
namespace {

std::string Where(std::string_view source, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return std::string(source) + ": ";
  return std::string(source) + ":" + std::to_string(mark.line + 1) + ":" +
         std::to_string(mark.column + 1) + ": ";
}

}  // namespace

Result<ModelSpec> ModelFromHfConfig(std::string_view json, std::string_view source,
                                    const ModelSpec& base) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(json));
  } catch (const YAML::Exception& error) {
    return Error{std::string(source) + ":" + std::to_string(error.mark.line + 1) + ":" +
                 std::to_string(error.mark.column + 1) + ": not valid JSON: " + error.msg +
                 " (expected a HuggingFace config.json object)"};
  }
  if (!root.IsMap()) {
    return Error{std::string(source) +
                 ": expected a JSON object with the model's hyperparameters (a HuggingFace "
                 "config.json)"};
  }
  const auto integer = [&](const char* key, bool required, int64_t* out) -> Status {
    const YAML::Node node = root[key];
    if (!node) {
      if (!required) return Status::Ok();
      return Error{std::string(source) + ": missing '" + key +
                   "' (a dense HuggingFace config needs hidden_size, num_hidden_layers, "
                   "num_attention_heads, intermediate_size and vocab_size)"};
    }
    try {
      const int64_t value = node.as<int64_t>();
      if (value < 1) throw YAML::BadConversion(node.Mark());
      *out = value;
    } catch (const YAML::Exception&) {
      return Error{Where(source, node) + "'" + key + "' must be an integer >= 1"};
    }
    return Status::Ok();
  };
  ModelSpec model = base;
  model.layers.clear();
  TransformerSpec spec;
  int64_t layers = 0;
  STAGECRAFT_RETURN_IF_ERROR(integer("num_hidden_layers", true, &layers));
  spec.layers = static_cast<int32_t>(layers);
  STAGECRAFT_RETURN_IF_ERROR(integer("hidden_size", true, &spec.hidden));
  STAGECRAFT_RETURN_IF_ERROR(integer("num_attention_heads", true, &spec.heads));
  STAGECRAFT_RETURN_IF_ERROR(integer("num_key_value_heads", false, &spec.kv_heads));
  STAGECRAFT_RETURN_IF_ERROR(integer("head_dim", false, &spec.head_dim));
  STAGECRAFT_RETURN_IF_ERROR(integer("intermediate_size", true, &spec.ffn_hidden));
  STAGECRAFT_RETURN_IF_ERROR(integer("vocab_size", true, &spec.vocab));
  if (spec.head_dim == 0 && spec.hidden % spec.heads != 0 && !root["kv_lora_rank"]) {
    return Error{std::string(source) + ": num_attention_heads " + std::to_string(spec.heads) +
                 " does not divide hidden_size " + std::to_string(spec.hidden) +
                 " and there is no head_dim"};
  }
  if (spec.kv_heads > 0 && spec.heads % spec.kv_heads != 0) {
    return Error{Where(source, root["num_key_value_heads"]) + "num_key_value_heads " +
                 std::to_string(spec.kv_heads) + " does not divide num_attention_heads " +
                 std::to_string(spec.heads)};
  }
  // Mixture of experts: DeepSeek (n_routed_experts, moe_intermediate_size, n_shared_experts,
  // first_k_dense_replace) or Mixtral (num_local_experts; intermediate_size is the expert's).
  STAGECRAFT_RETURN_IF_ERROR(integer("n_routed_experts", false, &spec.experts));
  if (spec.experts > 0) {
    STAGECRAFT_RETURN_IF_ERROR(integer("num_experts_per_tok", true, &spec.experts_per_token));
    STAGECRAFT_RETURN_IF_ERROR(integer("moe_intermediate_size", true, &spec.expert_ffn));
    STAGECRAFT_RETURN_IF_ERROR(integer("n_shared_experts", false, &spec.shared_experts));
    int64_t dense = 0;
    if (root["first_k_dense_replace"]) {
      dense = root["first_k_dense_replace"].as<int64_t>(0);
    }
    spec.dense_layers = static_cast<int32_t>(std::min<int64_t>(dense, spec.layers));
  } else if (root["num_local_experts"]) {
    STAGECRAFT_RETURN_IF_ERROR(integer("num_local_experts", true, &spec.experts));
    STAGECRAFT_RETURN_IF_ERROR(integer("num_experts_per_tok", true, &spec.experts_per_token));
    spec.expert_ffn = spec.ffn_hidden;
  }
  if (spec.experts_per_token > spec.experts) {
    return Error{Where(source, root["num_experts_per_tok"]) + "num_experts_per_tok " +
                 std::to_string(spec.experts_per_token) + " exceeds the " +
                 std::to_string(spec.experts) + " routed experts"};
  }
  // Multi-head latent attention (DeepSeek-V2/V3).
  STAGECRAFT_RETURN_IF_ERROR(integer("kv_lora_rank", false, &spec.kv_lora_rank));
  if (spec.kv_lora_rank > 0) {
    STAGECRAFT_RETURN_IF_ERROR(integer("q_lora_rank", false, &spec.q_lora_rank));
    STAGECRAFT_RETURN_IF_ERROR(integer("qk_nope_head_dim", true, &spec.qk_nope_dim));
    STAGECRAFT_RETURN_IF_ERROR(integer("qk_rope_head_dim", true, &spec.qk_rope_dim));
    STAGECRAFT_RETURN_IF_ERROR(integer("v_head_dim", true, &spec.v_head_dim));
  }
  const std::string act = root["hidden_act"] ? root["hidden_act"].as<std::string>("") : "silu";
  spec.swiglu = act == "silu" || act == "swiglu";
  spec.tied_embeddings = root["tie_word_embeddings"] && root["tie_word_embeddings"].as<bool>(false);
  spec.bias = root["attention_bias"] && root["attention_bias"].as<bool>(false);
  spec.learned_positions = false;
  spec.causal = true;
  model.transformer = spec;
  const std::string type = root["model_type"] ? root["model_type"].as<std::string>("") : "";
  model.name = root["_name_or_path"] ? root["_name_or_path"].as<std::string>(type) : type;
  if (model.name.empty()) model.name = "hf-model";
  return model;
}

}  // namespace stagecraft
