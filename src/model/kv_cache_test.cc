#include "model/kv_cache.h"

#include <gtest/gtest.h>

#include "testing/models.h"

namespace stagecraft {
namespace {

// Meta-Llama-3-70B config.json (huggingface.co/meta-llama/Meta-Llama-3-70B): 80 layers, hidden
// 8192, 64 query heads, 8 KV heads (head_dim 8192 / 64 = 128). KV cache in bf16:
// 80 layers x 8 KV heads x 128 dims x 2 (K, V) x 2 B = 327,680 B = 320 KiB per token.
TEST(KvCacheTest, Llama3_70bGqaIs320KibPerToken) {
  TransformerSpec spec;
  spec.layers = 80;
  spec.hidden = 8192;
  spec.heads = 64;
  spec.kv_heads = 8;
  const KvCachePerToken cache = TransformerKvCachePerToken(spec);
  EXPECT_EQ(cache.attention, AttentionKind::kGqa);
  EXPECT_EQ(cache.total(), 327'680.0);
  EXPECT_EQ(cache.total(), 320.0 * 1024);
  EXPECT_EQ(cache.indexer_key_bytes, 0.0);
}

// Mistral-7B v0.1 (huggingface.co/mistralai/Mistral-7B-v0.1 config.json: 32 layers, hidden 4096,
// 32 heads, 8 KV heads of 128, sliding_window 4096 on every layer). Per token, bf16:
// 2 (K, V) x 8 x 128 x 32 layers x 2 B = 131,072 B. A request keeps at most 4096 tokens:
//   8k context:  4096 x 131,072 = 536,870,912 B (512 MiB; 1 GiB = 8192 x 131,072 without)
//   32k context: still 536,870,912 B (4 GiB = 32768 x 131,072 without)
// Gemma-3 style interleaving, window on 5 of every 6 layers (sliding_window_pattern 6: 32 -
// 32/6 = 27 of 32 layers windowed): at 32k the 5 global layers keep all 32768 tokens and the
// 27 windowed ones 4096: (5 x 32768 + 27 x 4096) x 4096 B = 1,124,073,472 B.
TEST(KvCacheTest, Mistral7bSlidingWindowBoundsARequest) {
  TransformerSpec spec = Mistral7bV01Spec();
  const KvCachePerToken cache = TransformerKvCachePerToken(spec);
  EXPECT_EQ(cache.total(), 131'072.0);
  EXPECT_EQ(cache.windowed_bytes, 131'072.0);
  EXPECT_EQ(cache.BytesForContext(1000), 1000 * 131'072.0);
  EXPECT_EQ(cache.BytesForContext(8192), 536'870'912.0);
  EXPECT_EQ(cache.BytesForContext(32768), 536'870'912.0);
  spec.window_layers = 0;
  const KvCachePerToken full = TransformerKvCachePerToken(spec);
  EXPECT_EQ(full.BytesForContext(8192), 1'073'741'824.0);
  EXPECT_EQ(full.BytesForContext(32768), 4'294'967'296.0);
  spec.window_layers = 27;
  const KvCachePerToken interleaved = TransformerKvCachePerToken(spec);
  EXPECT_EQ(interleaved.BytesForContext(32768), 1'124'073'472.0);
  EXPECT_EQ(interleaved.BytesForContext(32768), (5.0 * 32768 + 27.0 * 4096) * 4096);
}

// Llama-2-7B (huggingface.co/meta-llama/Llama-2-7b-hf): 32 layers, 32 heads of 128, MHA; the
// often-quoted 0.5 MiB per token in fp16: 2 x 32 x 128 x 32 x 2 B = 524,288 B.
TEST(KvCacheTest, Llama2_7bMhaIsHalfAMibPerToken) {
  TransformerSpec spec;
  spec.layers = 32;
  spec.hidden = 4096;
  spec.heads = 32;
  const KvCachePerToken cache = TransformerKvCachePerToken(spec);
  EXPECT_EQ(cache.attention, AttentionKind::kMha);
  EXPECT_EQ(cache.total(), 512.0 * 1024);
  // One byte per element (an FP8 cache) halves it.
  EXPECT_EQ(TransformerKvCachePerToken(spec, 1).total(), 256.0 * 1024);
}

TEST(KvCacheTest, OneKvHeadIsMqa) {
  TransformerSpec spec;
  spec.layers = 2;
  spec.hidden = 1024;
  spec.heads = 8;
  spec.kv_heads = 1;
  spec.head_dim = 64;
  const KvCachePerToken cache = TransformerKvCachePerToken(spec);
  EXPECT_EQ(cache.attention, AttentionKind::kMqa);
  EXPECT_EQ(cache.total(), 2.0 * 1 * 64 * 2 * 2);
  EXPECT_STREQ(AttentionKindName(cache.attention), "MQA");
}

// DeepSeek-V3 config.json (huggingface.co/deepseek-ai/DeepSeek-V3): 61 layers, kv_lora_rank 512,
// qk_rope_head_dim 64. MLA caches the latent c_KV and the decoupled rope key, (d_c + d_h^R)·l
// elements per token (DeepSeek-V2 paper §2.1.4, Table 1): (512 + 64) x 61 x 2 B = 70,272 B.
TEST(KvCacheTest, DeepSeekV3MlaIs70272BytesPerToken) {
  TransformerSpec spec;
  spec.layers = 61;
  spec.hidden = 7168;
  spec.heads = 128;
  spec.q_lora_rank = 1536;
  spec.kv_lora_rank = 512;
  spec.qk_nope_dim = 128;
  spec.qk_rope_dim = 64;
  spec.v_head_dim = 128;
  const KvCachePerToken cache = TransformerKvCachePerToken(spec);
  EXPECT_EQ(cache.attention, AttentionKind::kMla);
  EXPECT_EQ(cache.total(), 70'272.0);
}

// DeepSeek-V4.1-Flash (doc/csa2.md "Storage formats at inference"): full layers L2, L8, L14 at
// m = 2 and L20 at m = 1 store main KV (512/2 + 512/16 = 288 B per entry) and indexer keys
// (128/2 + 128/32 = 68 B per entry): 288 x (3/2 + 1) = 720 B and 68 x 2.5 = 170 B, 890 B in all;
// swa_only, reuse and reindex layers add nothing.
TEST(KvCacheTest, V41FlashCsa2Is890BytesPerToken) {
  const std::vector<LayerSpec> layers = V41FlashLayers();
  const KvCachePerToken cache = Csa2KvCachePerToken(layers, Csa2Dims());
  EXPECT_EQ(cache.attention, AttentionKind::kCsa2);
  EXPECT_EQ(cache.main_kv_bytes, 720.0);
  EXPECT_EQ(cache.indexer_key_bytes, 170.0);
  EXPECT_EQ(cache.total(), 890.0);
}

}  // namespace
}  // namespace stagecraft
