// Dense decoder-only transformers (GPT, Llama; MHA or GQA, GELU or SwiGLU MLP) described by their
// dimensions: per-layer FLOPs, parameters and activation bytes, and the layer list the pipeline
// runs (embedding, decoder layers, head) with times from a FLOPs/bandwidth roofline. Counts are
// per microbatch of b sequences of s tokens, per tensor-parallel rank (t).
//   Forward FLOPs of a decoder layer (FLOPs = 2 x multiply-adds):
//     QKV   2bsh·(h + 2·g·d)        g KV heads of width d (MHA: g·d = h)
//     proj  2bsh²
//     core  4bs²h                   scores QKᵀ and values (halved when causal masking skips work)
//     MLP   2bsh·f·(3 with SwiGLU, else 2)
//   Head: 2bshV. Backward: the input gradient repeats the forward's FLOPs (twice for the
//   attention core, which has no weights); the weight gradient repeats the linear layers'.
//   Recomputation adds the forward (full) or the attention core (selective) to the backward.
//   With all four at MHA, f = 4h, no causal saving, this is Megatron's 24bsh² + 4bs²h per layer
//   (Narayanan et al., SC'21, §5.1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_table.h"
#include "core/time.h"
#include "hardware/fp8_recipe.h"
#include "hardware/kernel_model.h"
#include "model/layer_spec.h"

namespace stagecraft {

struct TransformerSpec {
  int32_t layers = 0;      // decoder layers; 0 = not a transformer model
  int64_t hidden = 0;      // h
  int64_t heads = 0;       // a
  int64_t kv_heads = 0;    // g; 0 = heads (MHA)
  int64_t head_dim = 0;    // d; 0 = h / a
  int64_t ffn_hidden = 0;  // f; 0 = 4h
  int64_t vocab = 0;       // V
  bool swiglu = false;     // gated MLP (3 matrices)
  bool causal = false;     // FlashAttention-style core: skips the masked half and
                           // stores no s x s scores (Korthikanti's 5as/h term)
  // The fused core's kernel (model.transformer.attn_impl: flash | triton); needs `causal`.
  AttentionKernel attention_kernel = AttentionKernel::kFlash;
  bool tied_embeddings = true;    // the head reuses the embedding matrix (GPT, Megatron)
  bool bias = true;               // linear biases and LayerNorm (GPT); false: none, RMSNorm (Llama)
  bool learned_positions = true;  // a learned position table of s·h (GPT); false: RoPE
  // Rows of that table when the checkpoint fixes them (OPT: max_position_embeddings + 2,
  // transformers' OPTLearnedPositionalEmbedding offset); 0 = the run's s (Megatron's
  // --max-position-embeddings = --seq-length).
  int64_t position_rows = 0;
  // Mixture of experts (DeepSeek, Mixtral): 0 experts = a dense MLP in every layer. The first
  // `dense_layers` layers keep the dense MLP of width ffn_hidden.
  int64_t experts = 0;            // routed experts E
  int64_t experts_per_token = 0;  // k_e
  int64_t expert_ffn = 0;         // f_e, width of one expert (gated, 3 matrices, SwiGLU)
  int64_t shared_experts = 0;     // E_s, always active
  int32_t dense_layers = 0;
  // Multi-head latent attention (DeepSeek-V2/V3): kv_lora_rank > 0 turns it on.
  int64_t q_lora_rank = 0;  // 0 = a full query projection
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_dim = 0;
  int64_t qk_rope_dim = 0;
  int64_t v_head_dim = 0;
  // Serving (doc/serving.md): the checkpoint's weight format, "" = the compute dtype (bf16), or
  // fp8 | int8 | int4 | fp4 (model.transformer.weight_format, or a HuggingFace config's
  // quantization_config); the KV cache's, "" = the weights' compute dtype (vLLM's `auto`) or fp8
  // (model.transformer.kv_cache_dtype, vLLM's name). Training ignores both.
  std::string weight_format;
  std::string kv_cache_dtype;
  // Sliding-window attention (Mistral-7B v0.1, Gemma 2/3, gpt-oss; HuggingFace `sliding_window`
  // and, for interleaved local/global layers, `layer_types` or `sliding_window_pattern`):
  // `window_layers` of the layers attend to the last `sliding_window` tokens only, so a request
  // keeps at most that many tokens of KV on them (serving; training ignores both).
  int64_t sliding_window = 0;  // W tokens; 0 = none
  int32_t window_layers = 0;   // layers using the window (0..layers)
  bool operator==(const TransformerSpec&) const = default;

  bool moe() const { return experts > 0; }
  bool mla() const { return kv_lora_rank > 0; }
  bool moe_layer(int32_t index) const { return moe() && index >= dense_layers; }

  int64_t kv_heads_or_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t head_dim_or_default() const { return head_dim > 0 ? head_dim : hidden / heads; }
  int64_t ffn_or_default() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
};

// Activation recomputation: none; selective (Megatron: the attention core); selective-op
// (torchtitan's per-op policy: every op but the matmuls and the attention kernel is recomputed,
// and every second matmul); full (the whole forward, of all layers or recompute_fraction).
enum class Recompute : uint8_t { kNone, kSelective, kSelectiveOp, kFull };
// Every mode with its name (parallel.recompute, --recompute).
inline constexpr EnumTable<Recompute> kRecomputeNames = {{"none", Recompute::kNone},
                                                         {"selective", Recompute::kSelective},
                                                         {"selective-op", Recompute::kSelectiveOp},
                                                         {"full", Recompute::kFull}};
constexpr const char* RecomputeName(Recompute recompute) { return kRecomputeNames.Name(recompute); }

// How the head's cross entropy runs (Megatron's --cross-entropy-loss-fusion and
// --cross-entropy-fusion-impl): kNone the unfused VocabParallelCrossEntropy, kNative its
// jit-fused passes, kTe Transformer Engine's Triton kernels (kernel_sum.h, OutputAndLoss);
// kTorch PyTorch's F.cross_entropy on logits cast to fp32 (torchtitan's loss), which keeps its
// own fp32 log-softmax and allocates its gradients anew (HeadLossBytes); kTorchCompiled the same
// function under torch.compile (torchtitan compiles its loss with the model since early 2025:
// torchtitan/components/loss.py at e7c0cae), one fused pass over the bf16 logits each way.
enum class CrossEntropyFusion : uint8_t { kNone, kNative, kTe, kTorch, kTorchCompiled };
// Their names (parallel.cross_entropy_fusion).
inline constexpr EnumTable<CrossEntropyFusion> kCrossEntropyFusionNames = {
    {"none", CrossEntropyFusion::kNone},
    {"native", CrossEntropyFusion::kNative},
    {"te", CrossEntropyFusion::kTe},
    {"torch", CrossEntropyFusion::kTorch},
    {"torch-compiled", CrossEntropyFusion::kTorchCompiled}};

// How a layer runs: sequence length, microbatch, tensor parallelism, recomputation.
struct TransformerRun {
  int64_t seq_len = 2048;
  int64_t micro_batch = 1;
  int32_t tensor_parallel = 1;
  int32_t context_parallel = 1;  // cp: each rank holds s/cp of the sequence (all FLOPs / cp)
  int32_t expert_parallel = 1;   // ep: a rank holds 1/ep of the routed experts
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  // With kFull, the share of the layers that recompute (Megatron's --recompute-method block:
  // --recompute-num-layers over the layers of a pipeline chunk); the others keep every
  // activation. 1 = all.
  double recompute_fraction = 1.0;
  // With kFull, layers per checkpoint (Megatron's --recompute-method uniform
  // --recompute-num-layers N, DeepSpeed's activation_checkpoint_interval): every layer
  // recomputes, each group of N keeping only its input, and a group's backward rematerialises
  // all N layers at once. 1 = each layer its own checkpoint.
  int32_t recompute_group = 1;
  bool fp8 = false;  // FP8 linear layers (Transformer Engine, torchao float8)
  Fp8Recipe fp8_recipe = kDefaultFp8Recipe;  // with fp8: the scaling recipe
  bool fp8_weights_gathered = false;         // with fp8: FSDP gathers the weights in FP8 (no cast)
  // With fp8: the share of microbatches that cast the weights. Megatron (parallel.engine
  // megatron-lm) tells Transformer Engine a step's first microbatch (set_is_first_microbatch,
  // megatron/core/pipeline_parallel/schedules.py), and TE casts each weight then and keeps the
  // FP8 copy for the others (te.Linear's is_first_microbatch); torchao casts every microbatch.
  double fp8_weight_casts = 1.0;
  // Norms, activations and the rotary embedding as fused kernels (Transformer Engine, Apex,
  // torch.compile), or as eager PyTorch ops, each its own pass over memory.
  bool fused_kernels = true;
  CrossEntropyFusion cross_entropy = CrossEntropyFusion::kNone;
  // Context parallelism by PyTorch's context_parallel: one attention kernel per ring step, the
  // partial outputs merged and the gradients accumulated in fp32 (transformer_kernels.cc).
  bool ring_merge = false;
};

struct LayerFlops {
  double forward = 0;     // per TP rank
  double input_grad = 0;  // including recomputation
  double weight_grad = 0;
  double model = 0;  // forward + backward without recomputation (for MFU), per TP rank
};
// `moe_layer`: the layer's MLP is the mixture of experts (TransformerSpec::moe_layer).
LayerFlops DecoderLayerFlops(const TransformerSpec& spec, const TransformerRun& run,
                             bool moe_layer = false);
LayerFlops HeadFlops(const TransformerSpec& spec, const TransformerRun& run);

// Parameters of one decoder layer (weights and biases, layer norms), and of the embedding.
double DecoderLayerParams(const TransformerSpec& spec, bool moe_layer = false);
// Of those, the attention block's (projections and their biases; MLA's down- and up-projections
// and latent norms) and the MLP's (dense, or the routed and shared experts and the router).
double DecoderAttentionParams(const TransformerSpec& spec);
double DecoderMlpParams(const TransformerSpec& spec, bool moe_layer = false);
// Of those, the routed experts' (sharded over expert-parallel ranks).
double RoutedExpertParams(const TransformerSpec& spec);
// V·h, plus the learned position table when the model has one (position_rows, else s rows).
double EmbeddingParams(const TransformerSpec& spec, int64_t seq_len);
// The whole model (the head counted once when tied).
double TransformerParams(const TransformerSpec& spec, int64_t seq_len);
// The parameters one token passes through: all but the routed experts it is not sent to.
double ActiveParams(const TransformerSpec& spec, int64_t seq_len);

// What the head's loss holds on one rank, per microbatch: `held` from the forward until the
// head's backward (the fp32 softmax or log-softmax of the logits, or TE's bf16 logits rewritten
// as their gradient), and `working` besides it while that backward runs (the gradients the loss
// allocates). By implementation, per logit (b·s/cp tokens × V/t on a rank), read from the code:
// Megatron's VocabParallelCrossEntropy (unfused or native) keeps exp_logits in fp32, 4 bytes,
// rescaled in place by its backward and cast to bf16 by autograd, 2 more; TE's Triton kernel
// keeps the bf16 logits, 2, and writes the gradient into them; PyTorch's F.cross_entropy on
// .float() logits keeps log_softmax's fp32 output, 4, and its backward allocates the dense NLL
// gradient and the log-softmax gradient, 8 more (12 under TP, where loss_parallel's eager
// handlers compute the two backwards in one: zeros, exp, their sum, the product). Compiled: 2
// held, 2 more, an estimate (no Inductor partition of it was read): the fused graph keeps the
// bf16 logits and per-token statistics, recomputes the softmax, writes the bf16 gradient.
struct HeadLoss {
  double held = 0;
  double working = 0;
};
HeadLoss HeadLossBytes(const TransformerSpec& spec, const TransformerRun& run);

// Korthikanti et al. (MLSys'23) Table 2: bytes one transformer layer stores per microbatch, from
// sbh, the tensor-parallel size t and the attention-score term 5as/(ht) (0 when the kernel stores
// no scores); with recomputation, what stays stored.
double KorthikantiLayerBytes(double sbh, double t, double score_term, bool sequence_parallel,
                             Recompute recompute);

// Activation bytes one decoder layer stores per microbatch on one rank: the tensors its autograd
// graph keeps, counted from the layer's own structure (query, key and value widths, the MLP's
// kind and width, MoE experts and router, MLA's latents, eager or fused norms and SwiGLU), each
// split over tensor parallelism as the engines split it. For GPT's layer (LayerNorm, biases,
// dropout, 4h GeLU MLP, multi-head attention) this is Korthikanti et al. (MLSys'23) Table 2's
// sbh(34 + 5as/h), and with recomputation what stays stored: full keeps the layer's input;
// selective drops the s x s scores; selective-op keeps what torchtitan's per-op policy saves
// (the block input, every second matmul's output, the attention kernel's output, and under TP
// the reduce-scatters' outputs: torchtitan/models/llama/parallelize_llama.py `_save_list`).
// `moe_layer`: the layer's MLP is the mixture of experts (TransformerSpec::moe_layer).
double DecoderActivationBytes(const TransformerSpec& spec, const TransformerRun& run,
                              bool moe_layer = false);

// What one recomputing decoder layer rematerialises for its backward and holds while that runs:
// the bytes it stores without recomputation less those it stores with it (full: everything but
// its 2sbh input; selective: the s x s scores an unfused core recomputes, nothing for a fused
// one). With groups of N layers (recompute_group) a group's backward rematerialises all N: N
// layers' bytes less the one input the group kept. 0 without recomputation. Korthikanti et al.'s
// Table 2 leaves this working set out; the memory timeline holds it during each backward.
double DecoderRecomputeBytes(const TransformerSpec& spec, const TransformerRun& run,
                             bool moe_layer = false);

// The device a layer's time is derived on: achieved FLOP/s and bytes/s.
struct ComputeRate {
  double flops_per_s = 0;  // peak × efficiency
  double bytes_per_s = 0;  // HBM bandwidth × efficiency; 0 = no memory bound
};

// The layer list: embedding, `layers` decoders (attention full, dense MLP, no shared state),
// head; each with F/I/W times = max(FLOPs / flops_per_s, bytes / bytes_per_s), its bytes the
// layer's weights (bf16, per TP rank) read once per pass plus its activations written, and
// activation_bytes from DecoderActivationBytes.
std::vector<LayerSpec> TransformerLayers(const TransformerSpec& spec, const TransformerRun& run,
                                         const ComputeRate& rate);
// The same layer list with every time from the kernel model (model/transformer_kernels.h) on
// `device`: the default path, when no single efficiency is forced.
std::vector<LayerSpec> TransformerLayers(const TransformerSpec& spec, const TransformerRun& run,
                                         const DeviceRates& device);

}  // namespace stagecraft
