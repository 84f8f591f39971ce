// The inference KV cache one token adds, for the attention a model really has: MHA, GQA and MQA
// keep every layer's keys and values, MLA its compressed latent and decoupled rope key, CSA2
// one compressed entry per m tokens and its indexer keys (doc/metrics.md, "KV cache per token").
#pragma once

#include <cstdint>
#include <vector>

#include "model/layer_spec.h"
#include "model/transformer.h"

namespace stagecraft {

enum class AttentionKind : uint8_t {
  kMha,   // multi-head: a KV head per query head
  kGqa,   // grouped-query: 1 < g < a KV heads
  kMqa,   // multi-query: one KV head
  kMla,   // multi-head latent attention (DeepSeek-V2/V3)
  kCsa2,  // compressed sparse attention with an indexer (DeepSeek-V4.1, doc/csa2.md)
};
const char* AttentionKindName(AttentionKind kind);  // "MHA", "GQA", "MQA", "MLA", "CSA2"

// The attention of a transformer described by its dimensions (never kCsa2).
AttentionKind TransformerAttentionKind(const TransformerSpec& spec);

// Bytes one token adds to the cache of the whole model (all layers), by part.
struct KvCachePerToken {
  AttentionKind attention = AttentionKind::kMha;
  double main_kv_bytes = 0;      // K and V; MLA's latent and rope key; CSA2's compressed KV
  double indexer_key_bytes = 0;  // CSA2 only: the indexer keys
  // Of main_kv_bytes, the sliding-window layers' share: a request keeps it for its last
  // `window_tokens` tokens only (0 and 0 = no window).
  double windowed_bytes = 0;
  int64_t window_tokens = 0;
  double total() const { return main_kv_bytes + indexer_key_bytes; }
  // The KV cache one request of `context` tokens holds: total() per token, less the windowed
  // layers' share for the tokens past the window.
  double BytesForContext(int64_t context) const;
  bool operator==(const KvCachePerToken&) const = default;
};

// MHA / GQA / MQA: 2·g·d·L·bytes (K and V of g KV heads of width d in each of L layers), of it
// 2·g·d·L_w·bytes on the L_w sliding-window layers (windowed_bytes);
// MLA: (kv_lora_rank + qk_rope_dim)·L·bytes (DeepSeek-V2 §2.1.4 Table 1: (d_c + d_h^R)·l
// elements, the cache of the absorbed inference form). `bytes_per_element`: 2 for bf16.
KvCachePerToken TransformerKvCachePerToken(const TransformerSpec& spec,
                                           int32_t bytes_per_element = 2);

// CSA2 (doc/csa2.md "Storage formats at inference"): every full layer (the KV sources) stores one
// entry per m tokens, main KV in FP4 E2M1 (kv_dim/2 bytes) plus one E4M3 scale byte per 16
// channels, indexer keys in MXFP4 (c_I/2 bytes plus one E8M0 scale byte per 32). Reindex and
// reuse layers store nothing of their own; the FP8 sliding window is bounded (window tokens per
// layer), not per token, and is left out.
KvCachePerToken Csa2KvCachePerToken(const std::vector<LayerSpec>& layers, const Csa2Dims& dims);

// The inference storage formats of one cached entry (doc/csa2.md "Storage formats at
// inference"): a compressed KV entry, FP4 E2M1 with an E4M3 scale byte per 16 channels
// (kv_dim/2 + kv_dim/16 bytes: 288 for V4.1); an indexer key, MXFP4 with an E8M0 scale byte per
// 32 (c_I/2 + c_I/32: 68); a sliding-window token of one layer, FP8 over the shared K = V head
// (head_dim bytes: 512; the report gives no scale granularity, none is counted).
double Csa2MainEntryBytes(const Csa2Dims& dims);
double Csa2IndexEntryBytes(const Csa2Dims& dims);
double Csa2WindowEntryBytes(const Csa2Dims& dims);

}  // namespace stagecraft
