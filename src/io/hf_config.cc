#include "io/hf_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "io/hf_json.h"
#include "io/hf_moe.h"
#include "io/strict_json.h"

namespace stagecraft {
namespace {

using hf_json::IntList;
using hf_json::kMaxInt32;
using hf_json::ReadInteger;
using hf_json::Where;

// A model name is printed in every table, plot and trace; a longer one is a mistake.
constexpr size_t kMaxModelNameBytes = 256;

Status CheckLayerCount(const YAML::Node& node, int64_t layers, std::string_view source) {
  if (layers <= kMaxTransformerLayers) return Status::Ok();
  return Error{Where(source, node) + "num_hidden_layers " + std::to_string(layers) +
               " is above the limit of " + std::to_string(kMaxTransformerLayers) + " layers"};
}

// DeepSeek-V4.1 (model_type deepseek_v41_text, or its text_config; NeMo AutoModel's
// DeepseekV41TextConfig): the CSA2 layer list. Decoder i is swa_only when compress_ratios[i] is
// 0, else full when i is a KV source, reindex when an index source only, reuse otherwise; its
// sources follow the csa2.md rules (ResolveSources), which reproduce the config's lists.
Result<ModelSpec> CsaModelFromConfig(const YAML::Node& root, std::string_view source,
                                     const ModelSpec& base) {
  ModelSpec model = base;
  model.transformer = TransformerSpec();
  model.name = root["_name_or_path"] ? root["_name_or_path"].as<std::string>("deepseek-v4.1")
                                     : "deepseek-v4.1";
  Csa2Dims& dims = model.dims;
  const auto field = [&](const char* key, int32_t* out) -> Status {
    const YAML::Node node = root[key];
    if (!node) return Status::Ok();  // the released default stays
    int64_t value = 0;
    STAGECRAFT_RETURN_IF_ERROR(ReadInteger(node, key, source, 0, 2147483647, &value));
    *out = static_cast<int32_t>(value);
    return Status::Ok();
  };
  int32_t layers = 40;
  for (const auto& [key, out] : std::initializer_list<std::pair<const char*, int32_t*>>{
           {"num_hidden_layers", &layers},
           {"hidden_size", &dims.hidden},
           {"hc_mult", &dims.hc_streams},
           {"vocab_size", &dims.vocab},
           {"num_attention_heads", &dims.heads},
           {"head_dim", &dims.head_dim},
           {"q_lora_rank", &dims.query_latent},
           {"o_groups", &dims.output_groups},
           {"o_lora_rank", &dims.output_group_dim},
           {"sliding_window", &dims.window},
           {"index_n_heads", &dims.indexer_heads},
           {"index_head_dim", &dims.indexer_key_dim},
           {"index_topk", &dims.top_k},
           {"candidate_topk_blocks", &dims.candidate_blocks},
           {"n_routed_experts", &dims.routed_experts},
           {"n_shared_experts", &dims.shared_experts},
           {"num_experts_per_tok", &dims.experts_per_token},
           {"moe_intermediate_size", &dims.expert_width}}) {
    STAGECRAFT_RETURN_IF_ERROR(field(key, out));
  }
  dims.kv_dim = dims.head_dim;  // one shared KV head of head_dim (K = V)
  std::vector<int64_t> ratios;
  std::vector<int64_t> kv_sources = {2, 8, 14, 20};
  std::vector<int64_t> index_sources = {2, 8, 14, 20, 24, 28, 32, 36};
  if (!IntList(root["compress_ratios"], &ratios)) {
    return Error{std::string(source) +
                 ": 'compress_ratios' (one compression ratio per layer, 0 for sliding-window "
                 "only) is missing or not a list of integers"};
  }
  if (root["kv_source_layer_ids"] && !IntList(root["kv_source_layer_ids"], &kv_sources)) {
    return Error{Where(source, root["kv_source_layer_ids"]) + "expected a list of layer ids"};
  }
  if (root["index_source_layer_ids"] && !IntList(root["index_source_layer_ids"], &index_sources)) {
    return Error{Where(source, root["index_source_layer_ids"]) + "expected a list of layer ids"};
  }
  if (root["num_hidden_layers"]) {
    STAGECRAFT_RETURN_IF_ERROR(CheckLayerCount(root["num_hidden_layers"], layers, source));
  }
  if (static_cast<int64_t>(ratios.size()) < layers) {
    return Error{Where(source, root["compress_ratios"]) + "covers " +
                 std::to_string(ratios.size()) + " layers but num_hidden_layers is " +
                 std::to_string(layers) + " (one ratio per backbone layer)"};
  }
  std::vector<int64_t> engram_layers = {1, 14};
  if (root["engram_layer_ids"] && !IntList(root["engram_layer_ids"], &engram_layers)) {
    return Error{Where(source, root["engram_layer_ids"]) + "expected a list of layer ids"};
  }
  const auto contains = [](const std::vector<int64_t>& ids, int64_t id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  model.layers.clear();
  LayerSpec embedding;
  embedding.kind = LayerKind::kEmbedding;
  model.layers.push_back(embedding);
  for (int32_t index = 0; index < layers; ++index) {
    LayerSpec layer;
    layer.kind = LayerKind::kDecoder;
    layer.mlp = MlpKind::kMoe;
    layer.compress_ratio = static_cast<int32_t>(ratios[index]);
    layer.engram = contains(engram_layers, index);
    layer.attention = ratios[index] == 0               ? AttentionMode::kSwaOnly
                      : contains(kv_sources, index)    ? AttentionMode::kFull
                      : contains(index_sources, index) ? AttentionMode::kReindex
                                                       : AttentionMode::kReuse;
    model.layers.push_back(layer);
  }
  LayerSpec head;
  head.kind = LayerKind::kHead;
  model.layers.push_back(head);
  const Status resolved = ResolveSources(model.layers);
  if (!resolved.ok()) {
    return Error{std::string(source) +
                 ": the layer schedule breaks the CSA2 rules: " + resolved.error().message};
  }
  return model;
}

// The checkpoint's weight and KV formats from `quantization_config` (HuggingFace transformers'
// quantizers): quant_method fp8 / fbgemm_fp8 (DeepSeek-V3, Llama 3.1 405B FP8) -> fp8; gptq,
// awq and bitsandbytes by their `bits` (8 -> int8, 4 -> int4); mxfp4 (gpt-oss) -> fp4;
// modelopt by quant_algo (FP8, NVFP4); compressed-tensors by its first config group's weights
// (num_bits, type) and its kv_cache_scheme (8-bit float -> an fp8 KV cache). An unknown method
// is an error naming the ones read, rather than a silent bf16.
Status ReadQuantization(const YAML::Node& root, std::string_view source, TransformerSpec& spec) {
  const YAML::Node quant = root["quantization_config"];
  if (!quant || quant.IsNull()) return Status::Ok();
  const auto text = [](const YAML::Node& node, const char* key) {
    return node[key] && node[key].IsScalar() ? node[key].as<std::string>("") : std::string();
  };
  const auto bits_format = [](int bits, bool is_float) -> std::string {
    if (bits == 8) return is_float ? "fp8" : "int8";
    if (bits == 4) return is_float ? "fp4" : "int4";
    return "";
  };
  const std::string method = text(quant, "quant_method");
  std::string format;
  if (method == "fp8" || method == "fbgemm_fp8") {
    format = "fp8";
  } else if (method == "mxfp4") {
    format = "fp4";
  } else if (method == "gptq" || method == "awq" || method == "bitsandbytes") {
    const int bits = quant["bits"] && quant["bits"].IsScalar() ? quant["bits"].as<int>(0)
                     : quant["load_in_8bit"] && quant["load_in_8bit"].as<bool>(false) ? 8
                     : quant["load_in_4bit"] && quant["load_in_4bit"].as<bool>(false) ? 4
                                                                                      : 4;
    format = bits_format(bits, false);
  } else if (method == "modelopt") {
    const std::string algo = text(quant, "quant_algo");
    format = algo == "FP8" ? "fp8" : algo == "NVFP4" ? "fp4" : "";
  } else if (method == "compressed-tensors") {
    const YAML::Node groups = quant["config_groups"];
    if (groups && groups.IsMap()) {
      for (const auto& group : groups) {
        const YAML::Node weights = group.second["weights"];
        if (!weights || !weights.IsMap()) continue;
        format = bits_format(weights["num_bits"] ? weights["num_bits"].as<int>(0) : 0,
                             text(weights, "type") == "float");
        break;
      }
    }
    const YAML::Node kv = quant["kv_cache_scheme"];
    if (kv && kv.IsMap() && (kv["num_bits"] ? kv["num_bits"].as<int>(0) : 0) == 8 &&
        text(kv, "type") == "float") {
      spec.kv_cache_dtype = "fp8";
    }
  }
  if (format.empty()) {
    return Error{Where(source, quant) + "quantization_config: quant_method '" + method +
                 "' is not one stagecraft reads (expected fp8, fbgemm_fp8, mxfp4, gptq, awq, "
                 "bitsandbytes, modelopt FP8/NVFP4 or compressed-tensors with 8- or 4-bit "
                 "weights); remove it and give serve --weight-dtype instead"};
  }
  spec.weight_format = format;
  return Status::Ok();
}

// Sliding-window attention (transformers' configs): `sliding_window` W (null or absent: none;
// Qwen2's use_sliding_window false turns it off, and with it on, its first max_window_layers
// layers stay full); which layers use it: `layer_types` ("sliding_attention" entries: Gemma 3,
// gpt-oss, recent Gemma 2 and Mistral exports), else `sliding_window_pattern` P (Gemma 3: every
// P-th layer global, L - floor(L/P) windowed), else model_type gemma2 (alternating, the even
// layers windowed: ceil(L/2)), else every layer (Mistral-7B v0.1).
Status ReadSlidingWindow(const YAML::Node& root, std::string_view source, TransformerSpec& spec) {
  const YAML::Node window = root["sliding_window"];
  if (!window || window.IsNull()) return Status::Ok();
  if (root["use_sliding_window"] && !root["use_sliding_window"].as<bool>(true)) {
    return Status::Ok();
  }
  STAGECRAFT_RETURN_IF_ERROR(ReadInteger(window, "sliding_window", source, 1,
                                         std::numeric_limits<int32_t>::max(),
                                         &spec.sliding_window));
  const int64_t layers = spec.layers;
  int64_t windowed = layers;
  const YAML::Node types = root["layer_types"];
  const std::string model_type =
      root["model_type"] ? root["model_type"].as<std::string>("") : std::string();
  if (types && types.IsSequence()) {
    if (static_cast<int64_t>(types.size()) != layers) {
      return Error{Where(source, types) + "layer_types has " + std::to_string(types.size()) +
                   " entries for " + std::to_string(layers) +
                   " layers (expected one per layer: sliding_attention or full_attention)"};
    }
    windowed = 0;
    for (const YAML::Node& type : types) {
      if (type.as<std::string>("") == "sliding_attention") ++windowed;
    }
  } else if (root["sliding_window_pattern"]) {
    int64_t pattern = 0;
    STAGECRAFT_RETURN_IF_ERROR(ReadInteger(root["sliding_window_pattern"], "sliding_window_pattern",
                                           source, 1, layers, &pattern));
    windowed = layers - layers / pattern;
  } else if (model_type == "gemma2") {
    windowed = (layers + 1) / 2;
  } else if (root["use_sliding_window"] && root["max_window_layers"]) {
    int64_t full = 0;
    STAGECRAFT_RETURN_IF_ERROR(
        ReadInteger(root["max_window_layers"], "max_window_layers", source, 0, layers, &full));
    windowed = layers - full;
  }
  spec.window_layers = static_cast<int32_t>(windowed);
  return Status::Ok();
}

// OPT (transformers' models/opt: configuration_opt.py, modeling_opt.py): the MLP's width is
// ffn_dim, fc1 and fc2 around activation_function (relu; never gated); linear biases
// (enable_bias, default true) and LayerNorms with scale and shift (layer_norm_elementwise_affine,
// default true); a learned position table of max_position_embeddings + 2 rows
// (OPTLearnedPositionalEmbedding's offset of 2); multi-head attention. Where the norm sits
// (do_layer_norm_before) changes no cost; a post-norm OPT (opt-350m only) also has no final
// LayerNorm, whose 2h parameters stay counted. TransformerSpec cannot hold a
// word_embed_proj_dim other than hidden_size (opt-350m: 512 for 1024, with project_in and
// project_out around the decoder), nor biases without affine LayerNorms or the reverse (its
// `bias` is both): errors.
Status ReadOpt(const YAML::Node& root, std::string_view source, TransformerSpec& spec) {
  spec.swiglu = false;
  spec.bias = true;
  spec.learned_positions = true;
  int64_t positions = 2048;  // OPTConfig's default
  if (root["max_position_embeddings"]) {
    STAGECRAFT_RETURN_IF_ERROR(ReadInteger(root["max_position_embeddings"],
                                           "max_position_embeddings", source, 1, kMaxInt32 - 2,
                                           &positions));
  }
  spec.position_rows = positions + 2;
  const YAML::Node projection = root["word_embed_proj_dim"];
  if (projection && !projection.IsNull()) {
    int64_t width = 0;
    STAGECRAFT_RETURN_IF_ERROR(
        ReadInteger(projection, "word_embed_proj_dim", source, 1, kMaxInt32, &width));
    if (width != spec.hidden) {
      return Error{Where(source, projection) + "word_embed_proj_dim " + std::to_string(width) +
                   " differs from hidden_size " + std::to_string(spec.hidden) +
                   ": OPT then projects the embeddings into and out of the decoder (project_in, "
                   "project_out), which stagecraft's transformer does not model (expected "
                   "word_embed_proj_dim equal to hidden_size, as in every OPT but opt-350m)"};
    }
  }
  for (const char* key : {"enable_bias", "layer_norm_elementwise_affine"}) {
    const YAML::Node node = root[key];
    if (node && !node.as<bool>(true)) {
      return Error{Where(source, node) + key +
                   " false: stagecraft's transformer has linear biases and LayerNorm scale and "
                   "shift together or neither (expected enable_bias and "
                   "layer_norm_elementwise_affine both true, OPT's defaults)"};
    }
  }
  return Status::Ok();
}

// Whether the head is tied to the embedding when tie_word_embeddings is absent: the default of
// the model type's config class in transformers. PretrainedConfig's is true and OPTConfig keeps
// it; GemmaConfig, Gemma2Config and Gemma3TextConfig set true. The Llama-style classes this
// reader was written for set false (LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config,
// Qwen2MoeConfig, Qwen3MoeConfig, DeepseekV3Config), and so does an unknown or absent
// model_type here.
bool TiedByDefault(std::string_view model_type) {
  for (const char* tied : {"opt", "gemma", "gemma2", "gemma3_text"}) {
    if (model_type == tied) return true;
  }
  return false;
}

// A transformer from a dense, OPT or mixture-of-experts config (io/hf_config.h).
Result<ModelSpec> TransformerFromConfig(const YAML::Node& root, std::string_view source,
                                        const ModelSpec& base) {
  const std::string type = hf_json::Text(root, "model_type");
  const bool opt = type == "opt";
  const char* ffn_key = opt ? "ffn_dim" : "intermediate_size";
  const auto integer = [&](const char* key, bool required, int64_t* out) -> Status {
    const YAML::Node node = root[key];
    if (!node) {
      if (!required) return Status::Ok();
      return Error{std::string(source) + ": missing '" + key +
                   (opt ? "' (an OPT config needs hidden_size, num_hidden_layers, "
                          "num_attention_heads, ffn_dim and vocab_size)"
                        : "' (a dense HuggingFace config needs hidden_size, num_hidden_layers, "
                          "num_attention_heads, intermediate_size and vocab_size)")};
    }
    return ReadInteger(node, key, source, 1, kMaxInt32, out);
  };
  ModelSpec model = base;
  model.layers.clear();
  TransformerSpec spec;
  int64_t layers = 0;
  STAGECRAFT_RETURN_IF_ERROR(integer("num_hidden_layers", true, &layers));
  STAGECRAFT_RETURN_IF_ERROR(CheckLayerCount(root["num_hidden_layers"], layers, source));
  spec.layers = static_cast<int32_t>(layers);
  STAGECRAFT_RETURN_IF_ERROR(integer("hidden_size", true, &spec.hidden));
  STAGECRAFT_RETURN_IF_ERROR(integer("num_attention_heads", true, &spec.heads));
  STAGECRAFT_RETURN_IF_ERROR(integer("num_key_value_heads", false, &spec.kv_heads));
  STAGECRAFT_RETURN_IF_ERROR(integer("head_dim", false, &spec.head_dim));
  STAGECRAFT_RETURN_IF_ERROR(integer(ffn_key, true, &spec.ffn_hidden));
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
  STAGECRAFT_RETURN_IF_ERROR(ReadMixtureOfExperts(root, source, type, spec));
  // Multi-head latent attention (DeepSeek-V2/V3).
  STAGECRAFT_RETURN_IF_ERROR(integer("kv_lora_rank", false, &spec.kv_lora_rank));
  if (spec.kv_lora_rank > 0) {
    STAGECRAFT_RETURN_IF_ERROR(integer("q_lora_rank", false, &spec.q_lora_rank));
    STAGECRAFT_RETURN_IF_ERROR(integer("qk_nope_head_dim", true, &spec.qk_nope_dim));
    STAGECRAFT_RETURN_IF_ERROR(integer("qk_rope_head_dim", true, &spec.qk_rope_dim));
    STAGECRAFT_RETURN_IF_ERROR(integer("v_head_dim", true, &spec.v_head_dim));
  }
  STAGECRAFT_RETURN_IF_ERROR(ReadSlidingWindow(root, source, spec));
  const std::string act = root["hidden_act"] ? root["hidden_act"].as<std::string>("") : "silu";
  spec.swiglu = act == "silu" || act == "swiglu";
  const bool tied = TiedByDefault(type);
  spec.tied_embeddings =
      root["tie_word_embeddings"] ? root["tie_word_embeddings"].as<bool>(tied) : tied;
  spec.bias = root["attention_bias"] && root["attention_bias"].as<bool>(false);
  spec.learned_positions = false;
  spec.causal = true;
  if (opt) STAGECRAFT_RETURN_IF_ERROR(ReadOpt(root, source, spec));
  STAGECRAFT_RETURN_IF_ERROR(ReadQuantization(root, source, spec));
  model.transformer = spec;
  model.name = root["_name_or_path"] ? root["_name_or_path"].as<std::string>(type) : type;
  if (model.name.empty()) model.name = "hf-model";
  return model;
}

Result<ModelSpec> ModelFromJson(std::string_view json, std::string_view source,
                                const ModelSpec& base) {
  STAGECRAFT_RETURN_IF_ERROR(CheckStrictJson(json, source, "a HuggingFace config.json"));
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
  if (root["text_config"] && !root["text_config"].IsMap()) {
    return Error{Where(source, root["text_config"]) +
                 "'text_config' must be a JSON object (the text model's hyperparameters)"};
  }
  // DeepSeek-V4.1: the text config alone, or nested under text_config.
  const YAML::Node text = root["text_config"] ? root["text_config"] : root;
  const std::string model_type =
      text["model_type"] ? text["model_type"].as<std::string>("") : std::string();
  if (text["compress_ratios"] || model_type.rfind("deepseek_v41", 0) == 0) {
    auto model = CsaModelFromConfig(text, source, base);
    if (model.ok() && root["_name_or_path"]) {
      model.value().name = root["_name_or_path"].as<std::string>(model.value().name);
    }
    return model;
  }
  return TransformerFromConfig(root, source, base);
}

}  // namespace

Result<ModelSpec> ModelFromHfConfig(std::string_view json, std::string_view source,
                                    const ModelSpec& base) {
  try {
    auto model = ModelFromJson(json, source, base);
    if (model.ok() && model.value().name.size() > kMaxModelNameBytes) {
      return Error{std::string(source) + ": the model name ('_name_or_path' or 'model_type') is " +
                   std::to_string(model.value().name.size()) + " bytes long (expected at most " +
                   std::to_string(kMaxModelNameBytes) + ")"};
    }
    return model;
  } catch (const YAML::Exception& error) {  // a shape the reader did not expect
    return Error{Where(source, YAML::Node()) + "unexpected JSON structure: " + error.msg +
                 " (expected a HuggingFace config.json object)"};
  }
}

}  // namespace stagecraft
