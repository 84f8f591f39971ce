// HuggingFace config.json import (`--hf-config FILE`): the model section from a transformers
// config, as a `type: transformer` model. Dense Llama-style models (model_type llama, mistral,
// qwen2, ...: hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
// intermediate_size, vocab_size, head_dim, hidden_act, tie_word_embeddings): SwiGLU when
// hidden_act is silu, no biases, RMSNorm, RoPE (no position table), causal attention; without
// tie_word_embeddings the head is tied as the model type's config class defaults (opt and
// gemma, gemma2, gemma3_text tied; the others untied). OPT (model_type opt: ffn_dim,
// activation_function, enable_bias, max_position_embeddings + 2 learned positions,
// word_embed_proj_dim equal to hidden_size). Mixtures of experts (io/hf_moe.h): DeepSeek
// (n_routed_experts, num_experts_per_tok, moe_intermediate_size, n_shared_experts,
// first_k_dense_replace, moe_layer_freq), Qwen2-MoE and Qwen3-MoE (num_experts,
// moe_intermediate_size, shared_expert_intermediate_size, decoder_sparse_step, mlp_only_layers)
// and Mixtral (num_local_experts); MoE layers that are not the last ones are an error.
// Multi-head latent attention (DeepSeek-V2/V3: kv_lora_rank, q_lora_rank, qk_nope_head_dim,
// qk_rope_head_dim, v_head_dim). Sliding windows (sliding_window, and which layers use it:
// layer_types, sliding_window_pattern, gemma2's alternation, Qwen2's use_sliding_window and
// max_window_layers). DeepSeek-V4.1 (model_type deepseek_v41_text, alone or as text_config; the
// field names of NeMo AutoModel's DeepseekV41TextConfig): the CSA2 layer list from
// compress_ratios and the KV / index source lists, dims from the config. The text must be strict
// JSON, as transformers' json.loads reads it (io/strict_json.h: duplicate keys refused); its values
// are then read with the YAML parser (JSON is YAML).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/result.h"
#include "model/model_spec.h"

namespace stagecraft {

// The most decoder layers a transformer may have, from a HuggingFace config, a config's
// model.transformer.layers or Megatron's --num-layers: more than any published model has (the
// largest have a few hundred), and few enough that partitioning them stays fast
// (PartitionByCost is O(stages x layers^2), about 1 s for 1000 layers on 2 stages in a Debug
// build, 75 s for 10^4; a layer list of 2 x 10^9 entries does not fit in memory).
inline constexpr int64_t kMaxTransformerLayers = 1024;

// `base` keeps its seq_len and micro_batch_size; everything else comes from the file. Errors
// name the file, the key and what was expected.
Result<ModelSpec> ModelFromHfConfig(std::string_view json, std::string_view source,
                                    const ModelSpec& base);

}  // namespace stagecraft
