#include "io/hf_config.h"

#include <yaml-cpp/yaml.h>

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
  for (const char* moe : {"n_routed_experts", "num_local_experts", "kv_lora_rank"}) {
    if (root[moe]) {
      return Error{Where(source, root[moe]) + "'" + moe +
                   "': mixture-of-experts and latent-attention configs (DeepSeek-V3, Mixtral) "
                   "are not imported yet; describe the model as a layer list (model.type: "
                   "layers) or give a dense config"};
    }
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
  if (spec.head_dim == 0 && spec.hidden % spec.heads != 0) {
    return Error{std::string(source) + ": num_attention_heads " + std::to_string(spec.heads) +
                 " does not divide hidden_size " + std::to_string(spec.hidden) +
                 " and there is no head_dim"};
  }
  if (spec.kv_heads > 0 && spec.heads % spec.kv_heads != 0) {
    return Error{Where(source, root["num_key_value_heads"]) + "num_key_value_heads " +
                 std::to_string(spec.kv_heads) + " does not divide num_attention_heads " +
                 std::to_string(spec.heads)};
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
