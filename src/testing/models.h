// Published model shapes the tests and benchmarks share (header-only; nothing here is linked
// into the tool).
#pragma once

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

}  // namespace stagecraft
