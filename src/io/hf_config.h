// HuggingFace config.json import (`--hf-config FILE`): the model section from a transformers
// config. Llama-style dense models (model_type llama, mistral, qwen2, ... : hidden_size,
// num_hidden_layers, num_attention_heads, num_key_value_heads, intermediate_size, vocab_size,
// head_dim, hidden_act, tie_word_embeddings) become a `type: transformer` model: SwiGLU when
// hidden_act is silu, no biases, RMSNorm, RoPE (no position table), causal attention. Mixture-
// of-experts and latent-attention configs (DeepSeek-V3's n_routed_experts, kv_lora_rank) are
// refused with what is missing, not half-read. JSON is read with the YAML parser (JSON is YAML).
#pragma once

#include <string_view>

#include "core/result.h"
#include "model/model_spec.h"

namespace stagecraft {

// `base` keeps its seq_len and micro_batch_size; everything else comes from the file. Errors
// name the file, the key and what was expected.
Result<ModelSpec> ModelFromHfConfig(std::string_view json, std::string_view source,
                                    const ModelSpec& base);

}  // namespace stagecraft
