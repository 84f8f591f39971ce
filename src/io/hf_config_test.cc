#include "io/hf_config.h"

#include <gtest/gtest.h>

#include <string>

namespace stagecraft {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

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
  EXPECT_TRUE(Contains(error(R"({"n_routed_experts": 256, "num_hidden_layers": 61})"),
                       "mixture-of-experts and latent-attention"));
  EXPECT_TRUE(Contains(error(R"({"num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 8, "num_key_value_heads": 3, "intermediate_size": 8,
      "vocab_size": 10})"),
                       "does not divide num_attention_heads"));
}

}  // namespace
}  // namespace stagecraft
