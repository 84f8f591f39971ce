#include "model/kv_cache.h"

#include <algorithm>

namespace stagecraft {

const char* AttentionKindName(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::kMha:
      return "MHA";
    case AttentionKind::kGqa:
      return "GQA";
    case AttentionKind::kMqa:
      return "MQA";
    case AttentionKind::kMla:
      return "MLA";
    case AttentionKind::kCsa2:
      return "CSA2";
  }
  return "?";
}

AttentionKind TransformerAttentionKind(const TransformerSpec& spec) {
  if (spec.mla()) return AttentionKind::kMla;
  const int64_t kv_heads = spec.kv_heads_or_heads();
  if (kv_heads == spec.heads) return AttentionKind::kMha;
  return kv_heads == 1 ? AttentionKind::kMqa : AttentionKind::kGqa;
}

KvCachePerToken TransformerKvCachePerToken(const TransformerSpec& spec, int32_t bytes_per_element) {
  KvCachePerToken cache;
  cache.attention = TransformerAttentionKind(spec);
  const double layers = spec.layers;
  const double bytes = bytes_per_element;
  if (cache.attention == AttentionKind::kMla) {
    cache.main_kv_bytes =
        static_cast<double>(spec.kv_lora_rank + spec.qk_rope_dim) * layers * bytes;
  } else {
    cache.main_kv_bytes = 2.0 * static_cast<double>(spec.kv_heads_or_heads()) *
                          static_cast<double>(spec.head_dim_or_default()) * layers * bytes;
  }
  if (spec.sliding_window > 0 && spec.window_layers > 0 && spec.layers > 0) {
    cache.windowed_bytes = cache.main_kv_bytes * std::min(spec.window_layers, spec.layers) / layers;
    cache.window_tokens = spec.sliding_window;
  }
  return cache;
}

double KvCachePerToken::BytesForContext(int64_t context) const {
  const double past_window =
      window_tokens > 0 ? static_cast<double>(std::max<int64_t>(0, context - window_tokens)) : 0;
  return total() * static_cast<double>(context) - windowed_bytes * past_window;
}

double Csa2MainEntryBytes(const Csa2Dims& dims) { return dims.kv_dim / 2.0 + dims.kv_dim / 16.0; }

double Csa2IndexEntryBytes(const Csa2Dims& dims) {
  return dims.indexer_key_dim / 2.0 + dims.indexer_key_dim / 32.0;
}

double Csa2WindowEntryBytes(const Csa2Dims& dims) { return static_cast<double>(dims.head_dim); }

KvCachePerToken Csa2KvCachePerToken(const std::vector<LayerSpec>& layers, const Csa2Dims& dims) {
  const double main_entry = Csa2MainEntryBytes(dims);
  const double index_entry = Csa2IndexEntryBytes(dims);
  KvCachePerToken cache;
  cache.attention = AttentionKind::kCsa2;
  for (const LayerSpec& layer : layers) {
    if (layer.kind != LayerKind::kDecoder || layer.attention != AttentionMode::kFull) continue;
    const double ratio = std::max(1, layer.compress_ratio);
    cache.main_kv_bytes += main_entry / ratio;
    cache.indexer_key_bytes += index_entry / ratio;
  }
  return cache;
}

}  // namespace stagecraft
