// Published model shapes the tests and benchmarks share (header-only; nothing here is linked
// into the tool).
#pragma once

#include <vector>

#include "model/layer_spec.h"
#include "model/transformer.h"

namespace stagecraft {

// Meta-Llama-3-70B's config.json (huggingface.co/meta-llama/Meta-Llama-3-70B): 80 layers, hidden
// 8192, 64 query heads, 8 KV heads, SwiGLU 28672, vocab 128256, untied embeddings, RMSNorm and
// no biases, RoPE; flash attention.
inline TransformerSpec Llama3_70bSpec() {
  TransformerSpec spec;
  spec.layers = 80;
  spec.hidden = 8192;
  spec.heads = 64;
  spec.kv_heads = 8;
  spec.ffn_hidden = 28672;
  spec.vocab = 128256;
  spec.swiglu = true;
  spec.causal = true;
  spec.tied_embeddings = false;
  spec.bias = false;
  spec.learned_positions = false;
  return spec;
}

// Meta-Llama-3-8B's config.json (huggingface.co/meta-llama/Meta-Llama-3-8B): 32 layers, hidden
// 4096, 32 query heads, 8 KV heads, SwiGLU 14336, vocab 128256, as Llama3_70bSpec otherwise.
inline TransformerSpec Llama3_8bSpec() {
  TransformerSpec spec = Llama3_70bSpec();
  spec.layers = 32;
  spec.hidden = 4096;
  spec.heads = 32;
  spec.ffn_hidden = 14336;
  return spec;
}

// Mistral-7B v0.1's config.json (huggingface.co/mistralai/Mistral-7B-v0.1): 32 layers, hidden
// 4096, 32 query heads, 8 KV heads of 128, SwiGLU 14336, vocab 32000, sliding_window 4096 on
// every layer.
inline TransformerSpec Mistral7bV01Spec() {
  TransformerSpec spec;
  spec.layers = 32;
  spec.hidden = 4096;
  spec.heads = 32;
  spec.kv_heads = 8;
  spec.ffn_hidden = 14336;
  spec.vocab = 32000;
  spec.swiglu = true;
  spec.sliding_window = 4096;
  spec.window_layers = 32;
  return spec;
}

// DeepSeek-V4.1-Flash's layer list (doc/csa2.md "Attention modes and the layer layout"): the
// embedding, L0-1 swa_only, L2-19 at m = 2 (full at 2, 8, 14, else reuse), L20-39 at m = 1
// (full at 20, reindex at 24, 28, 32, 36, else reuse), the head; no Engram. With Csa2Dims'
// defaults it is the model of doc/csa2.md "Backbone".
inline std::vector<LayerSpec> V41FlashLayers() {
  const auto of = [](LayerKind kind, AttentionMode mode = AttentionMode::kFull, int32_t ratio = 1) {
    LayerSpec layer;
    layer.kind = kind;
    layer.attention = mode;
    layer.compress_ratio = ratio;
    return layer;
  };
  std::vector<LayerSpec> layers = {of(LayerKind::kEmbedding)};
  for (int index = 0; index < 2; ++index) {
    layers.push_back(of(LayerKind::kDecoder, AttentionMode::kSwaOnly, 0));
  }
  for (int index = 2; index < 20; ++index) {
    layers.push_back(
        of(LayerKind::kDecoder, index % 6 == 2 ? AttentionMode::kFull : AttentionMode::kReuse, 2));
  }
  for (int index = 20; index < 40; ++index) {
    const AttentionMode mode = index == 20      ? AttentionMode::kFull
                               : index % 4 == 0 ? AttentionMode::kReindex
                                                : AttentionMode::kReuse;
    layers.push_back(of(LayerKind::kDecoder, mode, 1));
  }
  layers.push_back(of(LayerKind::kHead));
  return layers;
}

}  // namespace stagecraft
