// A dense or MoE transformer layer as the kernels an engine launches for it (Megatron-LM,
// torchtitan): the linear layers as GEMMs with their (M, N, K) after tensor, context and expert
// parallelism, the attention core (fused FlashAttention-style when `causal`, otherwise the
// unfused batched GEMMs and softmax of 2021-era Megatron), the memory-bound kernels (norms,
// bias/dropout/residual adds, activations, rotary embedding, MoE permutes, FP8 casts) and the
// head's vocabulary-parallel cross entropy; each costed by hardware/kernel_model.h. Times are
// seconds for one microbatch on one tensor- and context-parallel rank.
#pragma once

#include "hardware/kernel_model.h"
#include "model/kernel_sum.h"
#include "model/transformer.h"

namespace stagecraft {

// One decoder layer (`moe_layer`: its MLP is the mixture of experts, with E/ep local experts each
// receiving ep·T·k_e/E tokens of the T on this rank: balanced routing).
LayerKernelTimes DecoderKernelTimes(const TransformerSpec& spec, const TransformerRun& run,
                                    const DeviceRates& device, bool moe_layer);
// `times` with the recomputation added to its input gradient: the forward (full; `fraction` of
// it: the share of layers that recompute), the attention core (selective), or every op but the
// matmuls and the attention kernel plus every second matmul (selective-op).
LayerKernelTimes AddRecomputation(LayerKernelTimes times, Recompute recompute,
                                  double fraction = 1.0);
// The final norm, the output projection and the cross entropy.
LayerKernelTimes HeadKernelTimes(const TransformerSpec& spec, const TransformerRun& run,
                                 const DeviceRates& device);
// The embedding lookup (a gather) and its gradient (a scatter-add into fp32).
LayerKernelTimes EmbeddingKernelTimes(const TransformerSpec& spec, const TransformerRun& run,
                                      const DeviceRates& device);

}  // namespace stagecraft
