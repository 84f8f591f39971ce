#include "io/hf_config.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/test_util.h"

namespace stagecraft {
namespace {

constexpr const char* kLlama2 = R"({"_name_or_path": "meta-llama/Llama-2-7b-hf",
  "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 11008,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 32, "tie_word_embeddings": false, "vocab_size": 32000})";

constexpr const char* kLlama3 = R"({"_name_or_path": "meta-llama/Meta-Llama-3-8B",
  "attention_bias": false, "hidden_act": "silu", "hidden_size": 4096,
  "intermediate_size": 14336, "model_type": "llama", "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "tie_word_embeddings": false,
  "vocab_size": 128256})";

// The published parameter counts of the two checkpoints (model cards / safetensors totals):
// Llama-2-7B 6,738,415,616 and Meta-Llama-3-8B 8,030,261,248. Exact.
TEST(HfConfigTest, LlamaParameterCounts) {
  const ModelSpec llama2 = ModelFromHfConfig(kLlama2, "llama2.json", ModelSpec()).value();
  EXPECT_EQ(llama2.name, "meta-llama/Llama-2-7b-hf");
  EXPECT_TRUE(llama2.is_transformer());
  EXPECT_TRUE(llama2.transformer.swiglu);
  EXPECT_FALSE(llama2.transformer.tied_embeddings);
  EXPECT_DOUBLE_EQ(TransformerParams(llama2.transformer, 4096), 6738415616.0);
  const ModelSpec llama3 = ModelFromHfConfig(kLlama3, "llama3.json", ModelSpec()).value();
  EXPECT_EQ(llama3.transformer.kv_heads, 8);
  EXPECT_DOUBLE_EQ(TransformerParams(llama3.transformer, 8192), 8030261248.0);
}

// Sliding windows from the transformers config keys: Mistral-7B v0.1 (sliding_window 4096 on
// every layer), Gemma 3 (sliding_window_pattern 6: 26 layers, every 6th global: 26 - 4 = 22
// windowed), gpt-oss (layer_types alternating over 24 layers: 12), Gemma 2 (model_type gemma2,
// alternating: 42 layers, 21), Qwen2 (use_sliding_window false: none), null (none).
TEST(HfConfigTest, SlidingWindowLayers) {
  const auto read = [](const std::string& extra, int layers = 32) {
    const std::string text =
        R"({"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 32000, "num_hidden_layers": )" +
        std::to_string(layers) + ", " + extra + "}";
    auto model = ModelFromHfConfig(text, "w.json", ModelSpec());
    EXPECT_TRUE(model.ok()) << model.error().message;
    return model.ok() ? model.value().transformer : TransformerSpec();
  };
  const TransformerSpec mistral = read(R"("model_type": "mistral", "sliding_window": 4096)");
  EXPECT_EQ(mistral.sliding_window, 4096);
  EXPECT_EQ(mistral.window_layers, 32);
  const TransformerSpec gemma3 = read(
      R"("model_type": "gemma3_text", "sliding_window": 1024, "sliding_window_pattern": 6)", 26);
  EXPECT_EQ(gemma3.sliding_window, 1024);
  EXPECT_EQ(gemma3.window_layers, 22);
  std::string types = "[";
  for (int layer = 0; layer < 24; ++layer) {
    types += std::string(layer > 0 ? ", " : "") +
             (layer % 2 == 0 ? "\"sliding_attention\"" : "\"full_attention\"");
  }
  types += "]";
  const TransformerSpec oss =
      read(R"("model_type": "gpt_oss", "sliding_window": 128, "layer_types": )" + types, 24);
  EXPECT_EQ(oss.window_layers, 12);
  EXPECT_EQ(read(R"("model_type": "gemma2", "sliding_window": 4096)", 42).window_layers, 21);
  const TransformerSpec qwen =
      read(R"("model_type": "qwen2", "sliding_window": 131072, "use_sliding_window": false)");
  EXPECT_EQ(qwen.sliding_window, 0);
  EXPECT_EQ(qwen.window_layers, 0);
  EXPECT_EQ(read(R"("model_type": "mistral", "sliding_window": null)").sliding_window, 0);
  // layer_types must name every layer.
  auto short_types = ModelFromHfConfig(
      R"({"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
      "vocab_size": 32000, "num_hidden_layers": 4, "sliding_window": 128,
      "layer_types": ["sliding_attention"]})",
      "w.json", ModelSpec());
  ASSERT_FALSE(short_types.ok());
  EXPECT_NE(short_types.error().message.find("1 entries for 4 layers"), std::string::npos);
}

TEST(HfConfigTest, KeepsTheRunShape) {
  ModelSpec base;
  base.seq_len = 8192;
  base.micro_batch_size = 2;
  const ModelSpec model = ModelFromHfConfig(kLlama3, "llama3.json", base).value();
  EXPECT_EQ(model.seq_len, 8192);
  EXPECT_EQ(model.micro_batch_size, 2);
}

TEST(HfConfigTest, Errors) {
  auto error = [](const std::string& json) {
    const auto model = ModelFromHfConfig(json, "bad.json", ModelSpec());
    EXPECT_FALSE(model.ok()) << json;
    return model.ok() ? std::string() : model.error().message;
  };
  EXPECT_TRUE(Contains(error("{\"hidden_size\": 4096"), "bad.json:"));
  EXPECT_TRUE(Contains(error("[1, 2]"), "expected a JSON object"));
  EXPECT_TRUE(Contains(error("{\"hidden_size\": 4096}"), "missing 'num_hidden_layers'"));
  EXPECT_TRUE(Contains(error(R"({"num_hidden_layers": 2, "hidden_size": "big",
      "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 10})"),
                       "'hidden_size' must be an integer >= 1"));
  EXPECT_TRUE(Contains(error(R"({"num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 8, "intermediate_size": 8, "vocab_size": 10,
      "n_routed_experts": 4, "num_experts_per_tok": 8, "moe_intermediate_size": 16})"),
                       "exceeds the 4 routed experts"));
  EXPECT_TRUE(Contains(error(R"({"num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 8, "num_key_value_heads": 3, "intermediate_size": 8,
      "vocab_size": 10})"),
                       "does not divide num_attention_heads"));
}

// DeepSeek-V3 (MoE with 256 routed experts of 2048, 1 shared, top-8, 3 dense layers; MLA with
// q_lora 1536, kv_lora 512, qk 128 + 64, v 128): the technical report's 671B total parameters
// (Table 1; the 685B on the Hub adds the 14B multi-token-prediction module, not modelled).
// Tolerance: the report rounds to 1B. Activated per token: the report says 37B; we count 37.55B
// with the input embedding table and 36.62B without it, so we check the latter to ±0.5B.
constexpr const char* kDeepSeekV3 = R"({"_name_or_path": "deepseek-ai/DeepSeek-V3",
  "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168,
  "intermediate_size": 18432, "kv_lora_rank": 512, "model_type": "deepseek_v3",
  "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
  "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61,
  "num_key_value_heads": 128, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
  "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280})";

// quantization_config names the checkpoint's weight format (serving reads it; training
// ignores it): DeepSeek-V3's fp8 block quantization, an AWQ 4-bit checkpoint, gpt-oss's mxfp4,
// compressed-tensors FP8 weights with an FP8 KV cache scheme; an unknown method is an error.
TEST(HfConfigTest, QuantizationConfigGivesTheWeightFormat) {
  const auto with = [](const std::string& quant) {
    std::string text = kLlama3;
    text.insert(text.size() - 1, ", \"quantization_config\": " + quant);
    return ModelFromHfConfig(text, "q.json", ModelSpec());
  };
  const auto format = [&](const std::string& quant) {
    auto model = with(quant);
    EXPECT_TRUE(model.ok()) << model.error().message;
    return model.ok() ? model.value().transformer.weight_format : std::string();
  };
  EXPECT_EQ(format(R"({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})"),
            "fp8");
  EXPECT_EQ(format(R"({"quant_method": "awq", "bits": 4, "group_size": 128})"), "int4");
  EXPECT_EQ(format(R"({"quant_method": "gptq", "bits": 8})"), "int8");
  EXPECT_EQ(format(R"({"quant_method": "mxfp4"})"), "fp4");
  EXPECT_EQ(format(R"({"quant_method": "modelopt", "quant_algo": "NVFP4"})"), "fp4");
  auto ct = with(R"({"quant_method": "compressed-tensors", "config_groups": {"group_0":
      {"weights": {"num_bits": 8, "type": "float"}}}, "kv_cache_scheme": {"num_bits": 8,
      "type": "float"}})");
  ASSERT_TRUE(ct.ok()) << ct.error().message;
  EXPECT_EQ(ct.value().transformer.weight_format, "fp8");
  EXPECT_EQ(ct.value().transformer.kv_cache_dtype, "fp8");
  auto plain = ModelFromHfConfig(kLlama3, "llama3.json", ModelSpec());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain.value().transformer.weight_format, "");
  auto unknown = with(R"({"quant_method": "hqq"})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("quant_method 'hqq'"), std::string::npos);
}

TEST(HfConfigTest, DeepSeekV3MoeAndMla) {
  const ModelSpec model = ModelFromHfConfig(kDeepSeekV3, "dsv3.json", ModelSpec()).value();
  const TransformerSpec& spec = model.transformer;
  EXPECT_TRUE(spec.moe());
  EXPECT_TRUE(spec.mla());
  EXPECT_EQ(spec.dense_layers, 3);
  EXPECT_FALSE(spec.moe_layer(2));
  EXPECT_TRUE(spec.moe_layer(3));
  EXPECT_NEAR(TransformerParams(spec, 4096) / 1e9, 671.0, 0.5);
  const double embedding = 129280.0 * 7168.0;
  EXPECT_NEAR((ActiveParams(spec, 4096) - embedding) / 1e9, 37.0, 0.5);
}

}  // namespace
}  // namespace stagecraft

namespace stagecraft {
namespace {

// DeepSeek-V4.1: the layer modes follow compress_ratios and the source lists; a ratio list
// shorter than the layers, and a schedule that breaks the CSA2 rules, are errors.
TEST(HfConfigTest, DeepSeekV41LayerList) {
  const std::string json = R"({"model_type": "deepseek_v41_text", "num_hidden_layers": 6,
      "compress_ratios": [0, 2, 2, 1, 1, 1], "kv_source_layer_ids": [1, 3],
      "index_source_layer_ids": [1, 3, 4]})";
  const ModelSpec model = ModelFromHfConfig(json, "v41.json", ModelSpec()).value();
  ASSERT_EQ(model.layers.size(), 8u);  // embedding, 6 decoders, head
  EXPECT_EQ(model.layers[1].attention, AttentionMode::kSwaOnly);
  EXPECT_EQ(model.layers[2].attention, AttentionMode::kFull);
  EXPECT_EQ(model.layers[3].attention, AttentionMode::kReuse);
  EXPECT_EQ(model.layers[3].kv_source, 2);  // decoder 1 is layers[2]
  EXPECT_EQ(model.layers[4].attention, AttentionMode::kFull);
  EXPECT_EQ(model.layers[5].attention, AttentionMode::kReindex);
  EXPECT_EQ(model.layers[6].attention, AttentionMode::kReuse);
  EXPECT_EQ(model.layers[6].index_source, 5);
  auto error = [](const std::string& text) {
    const auto result = ModelFromHfConfig(text, "v41.json", ModelSpec());
    EXPECT_FALSE(result.ok()) << text;
    return result.ok() ? std::string() : result.error().message;
  };
  EXPECT_TRUE(Contains(error(R"({"model_type": "deepseek_v41_text", "num_hidden_layers": 4,
      "compress_ratios": [0, 2]})"),
                       "covers 2 layers but num_hidden_layers is 4"));
  // A reuse layer of ratio 1 after only a ratio-2 source: no KV source with its ratio.
  EXPECT_TRUE(Contains(error(R"({"model_type": "deepseek_v41_text", "num_hidden_layers": 3,
      "compress_ratios": [2, 1, 1], "kv_source_layer_ids": [0],
      "index_source_layer_ids": [0]})"),
                       "breaks the CSA2 rules"));
}

}  // namespace
}  // namespace stagecraft

namespace stagecraft {
namespace {

// facebook/opt-13b config.json (as tests/golden/data/hf/opt-13b.json) and facebook/opt-66b's
// (the same keys; hidden 9216, 72 heads, 64 layers, ffn_dim 36864).
constexpr const char* kOpt13b = R"({"_name_or_path": "facebook/opt-13b",
  "_remove_final_layer_norm": false, "activation_function": "relu", "do_layer_norm_before": true,
  "ffn_dim": 20480, "hidden_size": 5120, "max_position_embeddings": 2048, "model_type": "opt",
  "num_attention_heads": 40, "num_hidden_layers": 40, "vocab_size": 50272,
  "word_embed_proj_dim": 5120})";
constexpr const char* kOpt66b = R"({"_name_or_path": "facebook/opt-66b",
  "_remove_final_layer_norm": false, "activation_function": "relu", "do_layer_norm_before": true,
  "ffn_dim": 36864, "hidden_size": 9216, "max_position_embeddings": 2048, "model_type": "opt",
  "num_attention_heads": 72, "num_hidden_layers": 64, "vocab_size": 50272,
  "word_embed_proj_dim": 9216})";

// OPT: fc1/fc2 of ffn_dim (not gated), biases and LayerNorms, a learned position table of
// 2048 + 2 rows whatever the run's sequence length, the head tied to the embedding (OPTConfig
// keeps PretrainedConfig's default). Counted by hand from modeling_opt.py: per layer 4h^2 + 4h
// (q, k, v, out_proj with biases) + 2hf + f + h (fc1, fc2) + 4h (two LayerNorms); the tables
// (V + 2050) h; the final LayerNorm 2h. OPT-13B: 12,853,473,280; OPT-66B: 65,719,701,504 (the
// OPT paper's Table 1 names them 13B and 66B).
TEST(HfConfigTest, OptParameterCounts) {
  const ModelSpec model = ModelFromHfConfig(kOpt13b, "opt.json", ModelSpec()).value();
  const TransformerSpec& spec = model.transformer;
  EXPECT_EQ(model.name, "facebook/opt-13b");
  EXPECT_EQ(spec.ffn_hidden, 20480);
  EXPECT_FALSE(spec.swiglu);
  EXPECT_TRUE(spec.bias);
  EXPECT_TRUE(spec.tied_embeddings);
  EXPECT_TRUE(spec.learned_positions);
  EXPECT_EQ(spec.position_rows, 2050);
  EXPECT_EQ(spec.kv_heads_or_heads(), 40);
  EXPECT_FALSE(spec.moe());
  EXPECT_DOUBLE_EQ(TransformerParams(spec, 2048), 12853473280.0);
  EXPECT_DOUBLE_EQ(TransformerParams(spec, 0), 12853473280.0);  // serving's count
  const TransformerSpec large =
      ModelFromHfConfig(kOpt66b, "opt.json", ModelSpec()).value().transformer;
  EXPECT_DOUBLE_EQ(TransformerParams(large, 2048), 65719701504.0);
}

// What stagecraft's transformer cannot hold is refused: opt-350m's word_embed_proj_dim 512 for
// hidden 1024 (project_in / project_out), biases without affine LayerNorms or the reverse. An
// OPT config names ffn_dim when it lacks it; an explicit tie_word_embeddings false still unties.
TEST(HfConfigTest, OptRefusals) {
  const auto error = [](const std::string& json) {
    const auto model = ModelFromHfConfig(json, "opt.json", ModelSpec());
    EXPECT_FALSE(model.ok()) << json;
    return model.ok() ? std::string() : model.error().message;
  };
  const auto with = [](const std::string& extra) {
    std::string text = kOpt13b;
    return text.insert(text.size() - 1, ", " + extra);
  };
  const std::string opt350m = R"({"_name_or_path": "facebook/opt-350m",
      "activation_function": "relu", "do_layer_norm_before": false, "ffn_dim": 4096,
      "hidden_size": 1024, "max_position_embeddings": 2048, "model_type": "opt",
      "num_attention_heads": 16, "num_hidden_layers": 24, "vocab_size": 50272,
      "word_embed_proj_dim": 512})";
  EXPECT_TRUE(Contains(error(opt350m),
                       "word_embed_proj_dim 512 differs from hidden_size 1024: OPT then projects"));
  EXPECT_TRUE(Contains(error(with(R"("enable_bias": false)")),
                       "enable_bias false: stagecraft's transformer has linear biases and "
                       "LayerNorm scale and shift together or neither"));
  EXPECT_TRUE(Contains(error(with(R"("layer_norm_elementwise_affine": false)")),
                       "layer_norm_elementwise_affine false"));
  EXPECT_TRUE(Contains(error(R"({"model_type": "opt", "hidden_size": 64,
      "num_attention_heads": 2, "num_hidden_layers": 2, "vocab_size": 10})"),
                       "missing 'ffn_dim' (an OPT config needs"));
  const auto untied =
      ModelFromHfConfig(with(R"("tie_word_embeddings": false)"), "opt.json", ModelSpec());
  ASSERT_TRUE(untied.ok());
  EXPECT_FALSE(untied.value().transformer.tied_embeddings);
}

// Without tie_word_embeddings, the model type's config class decides (transformers): OPT and the
// Gemma family tie, Llama-style classes and an unknown or absent model_type do not.
TEST(HfConfigTest, TiedEmbeddingsFollowTheConfigClass) {
  const auto tied = [](const std::string& type) {
    const std::string json = R"({"hidden_size": 64, "intermediate_size": 128,
        "num_attention_heads": 2, "num_hidden_layers": 2, "vocab_size": 10)" +
                             (type.empty() ? "" : ", \"model_type\": \"" + type + "\"") + "}";
    const auto model = ModelFromHfConfig(json, "tie.json", ModelSpec());
    EXPECT_TRUE(model.ok()) << type;
    return model.ok() && model.value().transformer.tied_embeddings;
  };
  EXPECT_TRUE(tied("gemma"));
  EXPECT_TRUE(tied("gemma2"));
  EXPECT_TRUE(tied("gemma3_text"));
  EXPECT_FALSE(tied("llama"));
  EXPECT_FALSE(tied("mistral"));
  EXPECT_FALSE(tied("qwen2"));
  EXPECT_FALSE(tied("deepseek_v3"));
  EXPECT_FALSE(tied("some_new_model"));
  EXPECT_FALSE(tied(""));
}

}  // namespace
}  // namespace stagecraft
