// The kernels one engine iteration launches on one GPU of a serving replica, as shapes fixed by
// the model and the layout (built once per replica) whose rows come from the iteration; each
// costed by hardware/kernel_model.h (GemmTime, MemoryBoundTime) at KernelSetting::kInStep, the
// same kernel model the training side sums (model/transformer_kernels.h). step_cost.h's
// IterationSeconds adds the attention and the collectives.
#pragma once

#include <cstdint>
#include <vector>

#include "hardware/kernel_model.h"
#include "model/transformer.h"

namespace stagecraft {

// What a kernel's rows (a GEMM's M, a memory-bound kernel's rows) count, on one GPU.
enum class KernelRows : uint8_t {
  kTokens,        // the iteration's new tokens in this GPU's attention DP group
  kDecodeTokens,  // of those, the decodes' (one token against its context; the rest are prefill
                  // chunks: sequences computing more than one token)
  kPrefillKeys,   // the keys the prefill chunks attend to: each chunk's context and itself
  kSequences,     // the sequences that emit a logit
  kExpertTokens,  // the tokens each touched routed expert receives (balanced routing)
  kAssignments,   // the (token, routed expert) pairs this GPU's experts compute
};
inline constexpr int kKernelRowKinds = 6;

// One kernel of a served layer on one GPU. A GEMM: Y[rows x n] = X[rows x k] · W[k x n],
// `batch` members (kExpertTokens: the routed experts this GPU holds, of which the share the
// iteration touches runs); else a memory-bound kernel moving `bytes_per_row` per row.
struct ServeKernel {
  KernelRows rows = KernelRows::kTokens;
  double row_scale = 1;  // rows per counted row (a compressor's keys: 1/m of the tokens)
  bool gemm = true;
  double n = 0;
  double k = 0;
  double batch = 1;
  bool fp8 = false;          // W8A8 at the FP8 rate (GemmTime's fp8)
  double weight_bytes = 2;   // bytes per element of W (GemmShape::b_element_bytes)
  double bytes_per_row = 0;  // memory-bound: reads plus writes per row
  bool operator==(const ServeKernel&) const = default;
};

// Identical decoder layers, costed once and multiplied by `count`.
struct ServeLayerClass {
  int32_t count = 0;
  std::vector<ServeKernel> kernels;
  bool operator==(const ServeLayerClass&) const = default;
};

// A replica's kernels on one GPU (the fullest: one TP rank of one attention DP group; with pp > 1
// every stage in turn, so `layers` counts the whole model's decoders).
struct ServeKernels {
  std::vector<ServeLayerClass> layers;
  std::vector<ServeKernel> once;  // per iteration: the embedding lookup, final norm, LM head
  // Attention (IterationSeconds): the prefill kernel (AttentionKernel by attn_impl, resolved on
  // the device) and per decoder on one GPU, the FLOPs of one query-key pair in the prefill form
  // and in the decode form (MLA: decompressed MHA, and absorbed over the latent), and the KV
  // bytes one cached token adds to a decode's read.
  AttentionKernel attention = AttentionKernel::kFlash;
  bool fp8_attention = false;  // prefill attention in FP8 (EngineOptions::fp8_context_attention)
  double prefill_flops_per_pair = 0;
  double decode_flops_per_pair = 0;
  double kv_bytes_per_token = 0;
  // Routed experts: k of E per token; the GPUs the (token, expert) pairs spread over (ep under
  // EP, else 1: every TP rank computes its slice of all of them).
  double experts = 0;
  double experts_per_token = 0;
  double expert_split = 1;
  bool operator==(const ServeKernels&) const = default;
};

// The rows each KernelRows kind counts in one iteration on one GPU, and the share of the routed
// experts the iteration touches (RoutedExpertsTouched).
struct IterationRows {
  double rows[kKernelRowKinds] = {};
  double experts_touched = 1;
  double& operator[](KernelRows kind) { return rows[static_cast<int>(kind)]; }
  double operator[](KernelRows kind) const { return rows[static_cast<int>(kind)]; }
};

// Seconds of an iteration's kernels on one GPU, summed, and how many ran.
struct KernelSeconds {
  double gemm_s = 0;
  double memory_s = 0;
  int32_t kernels = 0;
};

// What a transformer's kernels on one GPU depend on besides its dimensions.
struct KernelLayout {
  int32_t tp = 1;
  int32_t ep = 1;                // ServeShape::ep (1: the routed experts split over tp)
  int64_t kv_heads_per_gpu = 0;  // MHA/GQA/MQA
  double weight_bytes = 2;       // EngineOptions::weight_bytes
  bool fp8 = false;              // EngineOptions::fp8_compute
  double activation_bytes = 2;
  double kv_bytes = 2;
  double kv_bytes_per_token_per_layer = 0;  // one GPU's
};

// A transformer's decoder layers (dense and MoE, MHA/GQA/MQA or MLA) as vLLM runs them
// (vllm/model_executor/models/llama.py, deepseek_v2.py), per layer on one TP rank:
//   attention  fused add-and-RMSNorm (read and write the hidden state and the residual: 4h),
//              the QKV GEMM (N = (a/t + 2 g_t) d, K = h), rotary on q and k, the KV-cache write,
//              the attention, the output GEMM (N = h, K = a d / t), the second fused norm;
//   MLA        the fused q_a/kv_a down-projection (N = q_c + d_c + d_R, K = h, whole on every
//              rank), the latent norms, q_b (N = a/t (d_nope + d_R), K = q_c), rotary, the latent
//              cache write; decodes absorbed (per head W_UK: N = d_c, K = d_nope, and W_UV:
//              N = d_v, K = d_c, batched, in bf16 as vLLM dequantizes them) and prefills in the
//              MHA form (kv_b_proj decompressing every key they attend to: N = a/t (d_nope + d_v),
//              K = d_c), as vLLM's and SGLang's MLA backends run them; the output GEMM;
//   MLP        gate and up fused (N = 2f/t, K = h), SiLU-and-multiply, down (N = h, K = f/t);
//   MoE        the router (bf16), its top-k softmax, the routed experts as a grouped GEMM of
//              the experts a GPU holds (E, their width / t; under EP E/ep whole) each taking
//              tokens x k / E rows, their activation and the weighted sum of the k outputs, the
//              shared experts as a dense MLP;
// and once per iteration the embedding lookup, the final norm and the LM head (M = sequences).
ServeKernels TransformerServeKernels(const TransformerSpec& model, const KernelLayout& layout,
                                     const KernelModel& device);

// A GEMM of weights in the engine's format (layout.fp8, layout.weight_bytes); a memory-bound
// kernel.
ServeKernel GemmKernel(const KernelLayout& layout, KernelRows rows, double n, double k,
                       double batch = 1);
ServeKernel MemoryKernel(KernelRows rows, double bytes_per_row);
// One layer's MLP as above, dense or (`moe_layer`) the mixture of experts, appended to `out`.
void AddMlpKernels(const TransformerSpec& model, const KernelLayout& layout, bool moe_layer,
                   std::vector<ServeKernel>& out);
// The kernels once per iteration (embedding, final norm, LM head), the attention kernel resolved
// on the device and the routed experts' constants, into `kernels`.
void SetIterationKernels(const TransformerSpec& model, const KernelLayout& layout,
                         const KernelModel& device, ServeKernels& kernels);

// Adds `count` runs of `kernels` (those with rows in this iteration) to `sum`.
void AddKernels(const DeviceRates& device, const std::vector<ServeKernel>& kernels,
                const IterationRows& rows, double count, KernelSeconds& sum);

}  // namespace stagecraft
