#include "io/hf_moe.h"

#include <gtest/gtest.h>

#include <string>

#include "io/hf_config.h"
#include "model/transformer.h"
#include "testing/test_util.h"

namespace stagecraft {
namespace {

TransformerSpec Read(const std::string& json) {
  const auto model = ModelFromHfConfig(json, "moe.json", ModelSpec());
  EXPECT_TRUE(model.ok()) << (model.ok() ? std::string() : model.error().message);
  return model.ok() ? model.value().transformer : TransformerSpec();
}

std::string ErrorOf(const std::string& json) {
  const auto model = ModelFromHfConfig(json, "moe.json", ModelSpec());
  EXPECT_FALSE(model.ok()) << json;
  return model.ok() ? std::string() : model.error().message;
}

// `json` with the value of its `key` replaced by `value` (a number, string or flat list).
std::string With(const std::string& json, const std::string& key, const std::string& value) {
  const size_t start = json.find("\"" + key + "\": ") + key.size() + 4;
  size_t end = start;
  for (int depth = 0; depth > 0 || (json[end] != ',' && json[end] != '}'); ++end) {
    depth += json[end] == '[' ? 1 : json[end] == ']' ? -1 : 0;
  }
  return json.substr(0, start) + value + json.substr(end);
}

// The config.json values (the keys stagecraft reads) of Qwen/Qwen3-30B-A3B and
// Qwen/Qwen3-235B-A22B (as tests/golden/data/hf/qwen3-235b-a22b.json), Qwen/Qwen1.5-MoE-A2.7B
// and Qwen/Qwen2-57B-A14B (as tests/golden/data/hf/qwen2-57b-a14b.json).
constexpr const char* kQwen3_30B = R"({"_name_or_path": "Qwen/Qwen3-30B-A3B",
  "decoder_sparse_step": 1, "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048,
  "intermediate_size": 6144, "mlp_only_layers": [], "model_type": "qwen3_moe",
  "moe_intermediate_size": 768, "num_attention_heads": 32, "num_experts": 128,
  "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
  "sliding_window": null, "tie_word_embeddings": false, "use_sliding_window": false,
  "vocab_size": 151936})";
constexpr const char* kQwen3_235B = R"({"_name_or_path": "Qwen/Qwen3-235B-A22B",
  "decoder_sparse_step": 1, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
  "intermediate_size": 12288, "mlp_only_layers": [], "model_type": "qwen3_moe",
  "moe_intermediate_size": 1536, "num_attention_heads": 64, "num_experts": 128,
  "num_experts_per_tok": 8, "num_hidden_layers": 94, "num_key_value_heads": 4,
  "sliding_window": null, "tie_word_embeddings": false, "use_sliding_window": false,
  "vocab_size": 151936})";
constexpr const char* kQwen15_MoE = R"({"_name_or_path": "Qwen/Qwen1.5-MoE-A2.7B",
  "decoder_sparse_step": 1, "hidden_act": "silu", "hidden_size": 2048,
  "intermediate_size": 5632, "model_type": "qwen2_moe", "moe_intermediate_size": 1408,
  "num_attention_heads": 16, "num_experts": 60, "num_experts_per_tok": 4,
  "num_hidden_layers": 24, "num_key_value_heads": 16, "shared_expert_intermediate_size": 5632,
  "tie_word_embeddings": false, "use_sliding_window": false, "vocab_size": 151936})";
constexpr const char* kQwen2_57B = R"({"_name_or_path": "Qwen/Qwen2-57B-A14B",
  "decoder_sparse_step": 1, "hidden_act": "silu", "hidden_size": 3584,
  "intermediate_size": 18944, "model_type": "qwen2_moe", "moe_intermediate_size": 2560,
  "num_attention_heads": 28, "num_experts": 64, "num_experts_per_tok": 8,
  "num_hidden_layers": 28, "num_key_value_heads": 4, "shared_expert_intermediate_size": 20480,
  "sliding_window": 131072, "tie_word_embeddings": false, "use_sliding_window": false,
  "vocab_size": 151936})";

// Qwen3-MoE: every layer MoE, no shared expert. The model cards give 30.5B total and 3.3B
// activated (Qwen3-30B-A3B), 235B, 234B without the embeddings, and 22B (Qwen3-235B-A22B). Our
// counts: 30,532,110,336 total, 3.35B activated; 235,093,610,496, 233.85B and 22.19B. The
// checkpoint's exact 30,532,122,624 (KerasHub's qwen3_moe_30b_a3b_en preset) is ours plus the
// per-head q/k RMSNorms stagecraft leaves out, 48 layers x 2 x 128.
TEST(HfMoeTest, Qwen3MoeEveryLayerRoutes) {
  const TransformerSpec small = Read(kQwen3_30B);
  EXPECT_EQ(small.experts, 128);
  EXPECT_EQ(small.experts_per_token, 8);
  EXPECT_EQ(small.expert_ffn, 768);
  EXPECT_EQ(small.shared_experts, 0);
  EXPECT_EQ(small.dense_layers, 0);
  EXPECT_TRUE(small.moe_layer(0));
  EXPECT_FALSE(small.tied_embeddings);
  EXPECT_DOUBLE_EQ(TransformerParams(small, 4096), 30532110336.0);
  EXPECT_DOUBLE_EQ(TransformerParams(small, 4096) + 48 * 2 * 128, 30532122624.0);
  EXPECT_NEAR(ActiveParams(small, 4096) / 1e9, 3.3, 0.1);
  const TransformerSpec large = Read(kQwen3_235B);
  EXPECT_EQ(large.expert_ffn, 1536);
  EXPECT_DOUBLE_EQ(TransformerParams(large, 4096), 235093610496.0);
  const double embeddings = 2.0 * 151936 * 4096;  // input table and untied head
  EXPECT_NEAR((TransformerParams(large, 4096) - embeddings) / 1e9, 234.0, 0.5);
  EXPECT_NEAR(ActiveParams(large, 4096) / 1e9, 22.0, 0.5);
}

// Qwen2-MoE: one shared expert of shared_expert_intermediate_size, counted in units of the
// routed width (5632 = 4 x 1408, 20480 = 8 x 2560). Published: 14.3B total and 2.7B activated
// (Qwen1.5-MoE-A2.7B's model card), 57B and 14B (Qwen2-57B-A14B's name). Ours: 14,315,587,584
// and 2.69B; 57,408,429,568 and 14.25B; both without the shared expert's gate and the q/k/v
// biases (24 x (2048 + 3 x 2048) = 196,608 for Qwen1.5-MoE-A2.7B).
TEST(HfMoeTest, Qwen2MoeSharedExpert) {
  const TransformerSpec small = Read(kQwen15_MoE);
  EXPECT_EQ(small.experts, 60);
  EXPECT_EQ(small.experts_per_token, 4);
  EXPECT_EQ(small.expert_ffn, 1408);
  EXPECT_EQ(small.shared_experts, 4);
  EXPECT_EQ(small.dense_layers, 0);
  EXPECT_DOUBLE_EQ(TransformerParams(small, 4096), 14315587584.0);
  EXPECT_NEAR(TransformerParams(small, 4096) / 1e9, 14.3, 0.05);
  EXPECT_NEAR(ActiveParams(small, 4096) / 1e9, 2.7, 0.05);
  const TransformerSpec large = Read(kQwen2_57B);
  EXPECT_EQ(large.shared_experts, 8);
  EXPECT_EQ(large.expert_ffn, 2560);
  EXPECT_DOUBLE_EQ(TransformerParams(large, 4096), 57408429568.0);
  EXPECT_NEAR(ActiveParams(large, 4096) / 1e9, 14.0, 0.5);
  // Without the key, Qwen2MoeConfig's default width, 5632.
  const std::string unkeyed = R"({"hidden_size": 2048, "intermediate_size": 5632,
      "model_type": "qwen2_moe", "moe_intermediate_size": 1408, "num_attention_heads": 16,
      "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24,
      "vocab_size": 151936})";
  EXPECT_EQ(Read(unkeyed).shared_experts, 4);
}

// Which layers are MoE (Qwen2MoeDecoderLayer): not in mlp_only_layers and (i + 1) %
// decoder_sparse_step == 0. A prefix of dense layers is dense_layers; every layer dense is a
// dense model; a step that leaves only the last layer MoE is a suffix too. Any other pattern is
// an error naming the key and its value.
TEST(HfMoeTest, QwenDenseLayers) {
  const TransformerSpec prefix = Read(With(kQwen3_30B, "mlp_only_layers", "[1, 0]"));
  EXPECT_EQ(prefix.dense_layers, 2);
  EXPECT_FALSE(prefix.moe_layer(1));
  EXPECT_TRUE(prefix.moe_layer(2));
  EXPECT_EQ(prefix.ffn_hidden, 6144);  // the dense layers' MLP: intermediate_size
  std::string all = "[";
  for (int layer = 0; layer < 48; ++layer) all += (layer > 0 ? ", " : "") + std::to_string(layer);
  const TransformerSpec dense = Read(With(kQwen3_30B, "mlp_only_layers", all + "]"));
  EXPECT_FALSE(dense.moe());
  EXPECT_EQ(dense.dense_layers, 0);
  const TransformerSpec last = Read(With(kQwen3_30B, "decoder_sparse_step", "48"));
  EXPECT_EQ(last.dense_layers, 47);
  EXPECT_TRUE(Contains(ErrorOf(With(kQwen3_30B, "decoder_sparse_step", "2")),
                       "decoder_sparse_step 2 makes layer 1 a mixture of experts but layer 2 "
                       "dense; stagecraft models a mixture of experts as its first layers dense"));
  EXPECT_TRUE(Contains(ErrorOf(With(kQwen3_30B, "mlp_only_layers", "[0, 47]")),
                       "mlp_only_layers [0, 47] makes layer 1 a mixture of experts but layer 47 "
                       "dense"));
  EXPECT_TRUE(Contains(ErrorOf(With(kQwen3_30B, "decoder_sparse_step", "0")),
                       "'decoder_sparse_step' must be an integer >= 1"));
  EXPECT_TRUE(Contains(ErrorOf(With(kQwen3_30B, "mlp_only_layers", "\"none\"")),
                       "'mlp_only_layers' must be a list of layer indices"));
}

// A shared width that is not a multiple of the routed one cannot be counted in experts;
// num_experts without moe_intermediate_size (OLMoE's keys) is refused rather than read dense;
// transformers 5 saves Qwen3MoeConfig's num_experts as num_local_experts, still Qwen's layout.
TEST(HfMoeTest, QwenErrorsAndNames) {
  EXPECT_TRUE(Contains(ErrorOf(With(kQwen15_MoE, "shared_expert_intermediate_size", "5000")),
                       "shared_expert_intermediate_size 5000 is not a multiple of "
                       "moe_intermediate_size 1408; stagecraft counts shared experts in units"));
  const std::string default_width = R"({"hidden_size": 2048, "intermediate_size": 5632,
      "model_type": "qwen2_moe", "moe_intermediate_size": 1000, "num_attention_heads": 16,
      "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24, "vocab_size": 10})";
  EXPECT_TRUE(Contains(ErrorOf(default_width),
                       "shared_expert_intermediate_size 5632 (Qwen2MoeConfig's default) is not"));
  const std::string olmoe = R"({"hidden_size": 2048, "intermediate_size": 1024,
      "model_type": "olmoe", "num_attention_heads": 16, "num_experts": 64,
      "num_experts_per_tok": 8, "num_hidden_layers": 16, "vocab_size": 50304})";
  EXPECT_TRUE(Contains(ErrorOf(olmoe), "missing 'moe_intermediate_size'"));
  std::string saved = kQwen3_30B;
  saved.replace(saved.find("\"num_experts\""), 13, "\"num_local_experts\"");
  const TransformerSpec renamed = Read(saved);
  EXPECT_EQ(renamed.experts, 128);
  EXPECT_EQ(renamed.expert_ffn, 768);  // not intermediate_size, as Mixtral's would be
}

// mistralai/Mixtral-8x7B-v0.1 config.json: 8 experts of intermediate_size 14336 in every layer,
// 2 a token. MixtralConfig defaults tie_word_embeddings to false. Our count 46,702,792,704
// total and 12.88B activated; the Mixtral paper (Jiang et al. 2024, section 2) gives 47B and 13B.
TEST(HfMoeTest, MixtralEveryLayerRoutes) {
  const TransformerSpec spec = Read(R"({"_name_or_path": "mistralai/Mixtral-8x7B-v0.1",
      "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
      "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,
      "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
      "num_local_experts": 8, "rope_theta": 1000000.0, "vocab_size": 32000})");
  EXPECT_EQ(spec.experts, 8);
  EXPECT_EQ(spec.experts_per_token, 2);
  EXPECT_EQ(spec.expert_ffn, 14336);
  EXPECT_EQ(spec.dense_layers, 0);
  EXPECT_FALSE(spec.tied_embeddings);
  EXPECT_DOUBLE_EQ(TransformerParams(spec, 4096), 46702792704.0);
  EXPECT_NEAR(ActiveParams(spec, 4096) / 1e9, 12.9, 0.05);
}

// deepseek-ai/DeepSeek-V2 config.json: first_k_dense_replace 1 and moe_layer_freq 1 (MoE from
// layer 1 on), 160 routed experts of 1536, 2 shared, 6 a token; MLA. The DeepSeek-V2 paper
// (section 3.1) gives 236B total and 21B activated; we count 235.74B and 21.38B with the input
// embedding table (20.85B without). A moe_layer_freq that leaves a dense layer among MoE ones
// is an error; a first_k_dense_replace beyond the layers leaves the model dense.
TEST(HfMoeTest, DeepSeekV2Layers) {
  const std::string v2 = R"({"_name_or_path": "deepseek-ai/DeepSeek-V2",
      "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 5120,
      "intermediate_size": 12288, "kv_lora_rank": 512, "model_type": "deepseek_v2",
      "moe_intermediate_size": 1536, "moe_layer_freq": 1, "n_routed_experts": 160,
      "n_shared_experts": 2, "num_attention_heads": 128, "num_experts_per_tok": 6,
      "num_hidden_layers": 60, "num_key_value_heads": 128, "q_lora_rank": 1536,
      "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "tie_word_embeddings": false,
      "v_head_dim": 128, "vocab_size": 102400})";
  const TransformerSpec spec = Read(v2);
  EXPECT_EQ(spec.dense_layers, 1);
  EXPECT_EQ(spec.shared_experts, 2);
  EXPECT_EQ(spec.expert_ffn, 1536);
  EXPECT_TRUE(spec.mla());
  EXPECT_NEAR(TransformerParams(spec, 4096) / 1e9, 236.0, 0.5);
  EXPECT_NEAR(ActiveParams(spec, 4096) / 1e9, 21.0, 0.5);
  EXPECT_TRUE(Contains(ErrorOf(With(v2, "moe_layer_freq", "2")),
                       "moe_layer_freq 2 makes layer 2 a mixture of experts but layer 3 dense"));
  EXPECT_FALSE(Read(With(v2, "first_k_dense_replace", "60")).moe());
}

}  // namespace
}  // namespace stagecraft
