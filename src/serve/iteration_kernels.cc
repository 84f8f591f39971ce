#include "serve/iteration_kernels.h"

#include <algorithm>
#include <utility>

namespace stagecraft {

ServeKernel GemmKernel(const KernelLayout& layout, KernelRows rows, double n, double k,
                       double batch) {
  return {.rows = rows,
          .n = n,
          .k = k,
          .batch = batch,
          .fp8 = layout.fp8,
          .weight_bytes = layout.weight_bytes};
}

ServeKernel MemoryKernel(KernelRows rows, double bytes_per_row) {
  return {.rows = rows, .gemm = false, .bytes_per_row = bytes_per_row};
}

namespace {

// A GEMM of bf16 weights whatever the checkpoint's format (the router; MLA's absorbed W_UK and
// W_UV, which vLLM dequantizes at load).
ServeKernel Bf16Gemm(KernelRows rows, double n, double k, double batch = 1) {
  return {.rows = rows, .n = n, .k = k, .batch = batch, .fp8 = false, .weight_bytes = 2};
}

void AddAttention(const TransformerSpec& model, const KernelLayout& layout,
                  std::vector<ServeKernel>& out) {
  const double t = layout.tp;
  const double h = static_cast<double>(model.hidden);
  const double act = layout.activation_bytes;
  const double heads = static_cast<double>(model.heads) / t;
  // vLLM's fused_add_rms_norm: the hidden state and the residual read and written.
  const ServeKernel norm = MemoryKernel(KernelRows::kTokens, 4 * h * act);
  out.push_back(norm);
  if (model.mla()) {
    const double q_rank = static_cast<double>(model.q_lora_rank);
    const double latent = static_cast<double>(model.kv_lora_rank);
    const double rope = static_cast<double>(model.qk_rope_dim);
    const double nope = static_cast<double>(model.qk_nope_dim);
    const double v = static_cast<double>(model.v_head_dim);
    if (q_rank > 0) {
      out.push_back(GemmKernel(layout, KernelRows::kTokens, q_rank + latent + rope, h));
      out.push_back(MemoryKernel(KernelRows::kTokens, 2 * q_rank * act));  // q_a_layernorm
      out.push_back(GemmKernel(layout, KernelRows::kTokens, heads * (nope + rope), q_rank));
    } else {
      out.push_back(GemmKernel(layout, KernelRows::kTokens, heads * (nope + rope), h));
      out.push_back(GemmKernel(layout, KernelRows::kTokens, latent + rope, h));
    }
    out.push_back(MemoryKernel(KernelRows::kTokens, 2 * latent * act));  // kv_a_layernorm
    out.push_back(MemoryKernel(KernelRows::kTokens, 2 * (heads + 1) * rope * act));  // rotary
    out.push_back(MemoryKernel(KernelRows::kTokens, (latent + rope) * (act + layout.kv_bytes)));
    out.push_back(Bf16Gemm(KernelRows::kDecodeTokens, latent, nope, heads));  // W_UK
    out.push_back(Bf16Gemm(KernelRows::kDecodeTokens, v, latent, heads));     // W_UV
    out.push_back(GemmKernel(layout, KernelRows::kPrefillKeys, heads * (nope + v), latent));
    out.push_back(GemmKernel(layout, KernelRows::kTokens, h, heads * v));
    out.push_back(norm);
    return;
  }
  const double d = static_cast<double>(model.head_dim_or_default());
  const double kv_heads = static_cast<double>(layout.kv_heads_per_gpu);
  out.push_back(GemmKernel(layout, KernelRows::kTokens, (heads + 2 * kv_heads) * d, h));
  if (!model.learned_positions) {
    out.push_back(MemoryKernel(KernelRows::kTokens, 2 * (heads + kv_heads) * d * act));  // rotary
  }
  // reshape_and_cache: K and V read, written into the cache's blocks.
  out.push_back(MemoryKernel(KernelRows::kTokens, 2 * kv_heads * d * (act + layout.kv_bytes)));
  out.push_back(GemmKernel(layout, KernelRows::kTokens, h, heads * d));
  out.push_back(norm);
}

// A gated (SwiGLU) or plain MLP of width `width` on this GPU: gate and up fused, the activation
// (SiLU-and-multiply reads 2 and writes 1; GELU or ReLU reads and writes 1), down.
void AddMlp(const KernelLayout& layout, KernelRows rows, double h, double width, bool gated,
            std::vector<ServeKernel>& out) {
  const double act = layout.activation_bytes;
  out.push_back(GemmKernel(layout, rows, (gated ? 2 : 1) * width, h));
  out.push_back(MemoryKernel(rows, (gated ? 3 : 2) * width * act));
  out.push_back(GemmKernel(layout, rows, h, width));
}

void AddExperts(const TransformerSpec& model, const KernelLayout& layout,
                std::vector<ServeKernel>& out) {
  const double t = layout.tp;
  const double h = static_cast<double>(model.hidden);
  const double act = layout.activation_bytes;
  const double experts = static_cast<double>(model.experts);
  const double top_k = static_cast<double>(model.experts_per_token);
  const bool ep = layout.ep > 1;
  const double slice = static_cast<double>(model.expert_ffn) / (ep ? 1.0 : t);
  const double held = ep ? experts / layout.ep : experts;
  out.push_back(Bf16Gemm(KernelRows::kTokens, experts, h));  // router
  // topk_softmax: the fp32 router logits read, the k weights and ids written.
  out.push_back(MemoryKernel(KernelRows::kTokens, experts * 4 + top_k * 8));
  out.push_back(GemmKernel(layout, KernelRows::kExpertTokens, 2 * slice, h, held));
  out.push_back(MemoryKernel(KernelRows::kAssignments, 3 * slice * act));
  out.push_back(GemmKernel(layout, KernelRows::kExpertTokens, h, slice, held));
  // moe_sum: each pair's output read, one sum per token written.
  out.push_back(MemoryKernel(KernelRows::kAssignments, h * act * (1 + 1 / top_k)));
  if (model.shared_experts > 0) {
    const double shared = static_cast<double>(model.expert_ffn * model.shared_experts) / t;
    AddMlp(layout, KernelRows::kTokens, h, shared, true, out);
  }
}

}  // namespace

void AddMlpKernels(const TransformerSpec& model, const KernelLayout& layout, bool moe_layer,
                   std::vector<ServeKernel>& out) {
  if (moe_layer) {
    AddExperts(model, layout, out);
    return;
  }
  AddMlp(layout, KernelRows::kTokens, static_cast<double>(model.hidden),
         static_cast<double>(model.ffn_or_default()) / layout.tp, model.swiglu, out);
}

void SetIterationKernels(const TransformerSpec& model, const KernelLayout& layout,
                         const KernelModel& device, ServeKernels& kernels) {
  const double h = static_cast<double>(model.hidden);
  const double act = layout.activation_bytes;
  kernels.once = {
      MemoryKernel(KernelRows::kTokens, 2 * h * act),  // embedding rows gathered
      MemoryKernel(KernelRows::kTokens, 4 * h * act),  // final fused add-and-norm
      GemmKernel(layout, KernelRows::kSequences, static_cast<double>(model.vocab) / layout.tp, h)};
  kernels.attention = ResolveAttentionKernel(device, model.attention_kernel);
  if (model.moe()) {
    kernels.experts = static_cast<double>(model.experts);
    kernels.experts_per_token = static_cast<double>(model.experts_per_token);
    kernels.expert_split = layout.ep > 1 ? layout.ep : 1;
  }
}

ServeKernels TransformerServeKernels(const TransformerSpec& model, const KernelLayout& layout,
                                     const KernelModel& device) {
  ServeKernels kernels;
  const double t = layout.tp;
  std::vector<ServeKernel> attention;
  AddAttention(model, layout, attention);
  const int32_t moe_layers = model.moe() ? model.layers - model.dense_layers : 0;
  for (const bool moe : {false, true}) {
    const int32_t count = moe ? moe_layers : model.layers - moe_layers;
    if (count <= 0) continue;
    ServeLayerClass layers{.count = count, .kernels = attention};
    AddMlpKernels(model, layout, moe, layers.kernels);
    kernels.layers.push_back(std::move(layers));
  }
  SetIterationKernels(model, layout, device, kernels);
  // Per layer, a query against one key and value: QKᵀ and PV, 2 FLOPs per multiply-add, per
  // head on this rank.
  const double heads = static_cast<double>(model.heads) / t;
  if (model.mla()) {
    const double latent = static_cast<double>(model.kv_lora_rank);
    kernels.prefill_flops_per_pair =
        2 * heads * static_cast<double>(model.qk_nope_dim + model.qk_rope_dim + model.v_head_dim);
    kernels.decode_flops_per_pair =
        2 * heads * (latent + static_cast<double>(model.qk_rope_dim) + latent);
  } else {
    kernels.prefill_flops_per_pair =
        2 * heads * 2 * static_cast<double>(model.head_dim_or_default());
    kernels.decode_flops_per_pair = kernels.prefill_flops_per_pair;
  }
  kernels.kv_bytes_per_token = layout.kv_bytes_per_token_per_layer;
  return kernels;
}

void AddKernels(const DeviceRates& device, const std::vector<ServeKernel>& kernels,
                const IterationRows& rows, double count, KernelSeconds& sum) {
  for (const ServeKernel& kernel : kernels) {
    const double m = rows[kernel.rows] * kernel.row_scale;
    if (m <= 0) continue;
    if (!kernel.gemm) {
      sum.memory_s += count * MemoryBoundSeconds(device, m * kernel.bytes_per_row);
    } else {
      double batch = kernel.batch;
      if (kernel.rows == KernelRows::kExpertTokens) batch *= rows.experts_touched;
      const GemmShape shape{.m = m,
                            .n = kernel.n,
                            .k = kernel.k,
                            .batch = batch,
                            .b_element_bytes = kernel.weight_bytes};
      sum.gemm_s += count * GemmTime(device, shape, kernel.fp8, KernelSetting::kInStep).seconds;
    }
    sum.kernels += static_cast<int32_t>(count);
  }
}

}  // namespace stagecraft
