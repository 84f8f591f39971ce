// KernelSum: one layer's passes (F, I, W) summed kernel by kernel from hardware/kernel_model.h,
// shared by the transformer (model/transformer_kernels.h) and CSA2 (model/layer_kernels.h)
// kernel lists. A linear layer is three GEMMs (forward into F, dX into I, dW into W), a
// memory-bound kernel's backward moves twice its bytes, fused attention's backward does 2.5x its
// forward's FLOPs; the kernels each pass issues are counted for the host's issue rate.
#pragma once

#include "hardware/fp8_recipe.h"
#include "hardware/kernel_model.h"
#include "model/transformer.h"

namespace stagecraft {

// Seconds of one microbatch's passes of one layer on one tensor- and context-parallel rank.
struct LayerKernelTimes {
  double forward = 0;      // F
  double input_grad = 0;   // I, with recomputation
  double weight_grad = 0;  // W
  // The linear GEMMs of F and of I + W: what tensor-parallel communication can hide behind
  // (Megatron's tp_comm_overlap splits each TP collective against the GEMM next to it).
  double forward_gemm = 0;
  double backward_gemm = 0;
  // Of F, the attention core (what selective recomputation repeats).
  double attention_core = 0;
};

struct KernelSum {
  const DeviceRates& device;
  bool fp8 = false;  // FP8 GEMMs, with the recipe's casts (fp8_recipe)
  LayerKernelTimes times;
  // The fused attention kernel's implementation (TransformerSpec::attention_kernel).
  AttentionKernel attention = AttentionKernel::kFlash;
  double gemm_flops = 0;  // forward FLOPs of the linear layers added
  // Kernels issued per pass (HostBound).
  double forward_kernels = 0;
  double input_kernels = 0;
  double weight_kernels = 0;
  Fp8Recipe fp8_recipe = kDefaultFp8Recipe;  // with fp8: how the operands are scaled
  // With fp8: FSDP gathers the weights already in FP8 (torchao's float8 all-gather casts each
  // rank's shard before the gather), so the layer casts none of them.
  bool fp8_weights_gathered = false;
  // With fp8: the share of microbatches that cast the weights (1; Transformer Engine under
  // Megatron casts them on a step's first microbatch and keeps them, TransformerRun).
  double fp8_weight_casts = 1.0;

  // Y[tokens x n] = X[tokens x k] · W[k x n], `batch` times (a grouped GEMM of equal members).
  // With fp8, the GEMMs at the recipe's rates and its casts, transposes and rescales as
  // memory-bound kernels (hardware/fp8_recipe.h).
  void Linear(double tokens, double n, double k, double batch = 1);
  // The recipe's memory-bound passes around one linear layer's FP8 GEMMs, each pass's bytes as
  // one kernel's time (their count goes to the host's issue rate).
  void Fp8Casts(double tokens, double n, double k, double batch);
  // `kernels` memory-bound kernels moving `bytes` in all forward (an eager op sequence splits
  // the bytes evenly), as many backward moving twice the bytes.
  void Elementwise(double bytes, int kernels = 1);
  // A fused (FlashAttention-style) attention kernel of `flops` forward; backward 2.5x the FLOPs
  // (five matmuls against two, Dao 2023 §3.1). Counts as attention core. `key_blocks`: the
  // mean 128-key blocks per 128-query tile, for the sequence-length roll-off (AttentionSeconds;
  // 0 = none).
  void FusedAttention(double flops, double key_blocks = 0);
  // A mixture-of-experts MLP on `tokens` tokens of `hidden`: the router over `experts`, the
  // experts/ep local SwiGLU experts of width `width` (a grouped GEMM, each receiving
  // ep·tokens·top_k/experts tokens: balanced routing), `shared` shared experts, their SwiGLU
  // activations, and the permute / unpermute around the all-to-alls. `tensor_parallel` splits
  // the experts' width.
  void MixtureOfExperts(double tokens, double hidden, double experts, double top_k, double width,
                        double shared, double expert_parallel, double tensor_parallel = 1);
  // The output projection to `vocab` logits (this rank's share) and the vocabulary-parallel
  // cross entropy on fp32 logits, pass by pass as Megatron-Core's unfused VocabParallelCrossEntropy
  // runs it (megatron/core/tensor_parallel/cross_entropy.py): forward the cast to fp32 (read 2,
  // write 4 bytes a logit), the max (read 4), the in-place subtraction, exp and division by the
  // sum (read 4 and write 4 each) and the sum (read 4), 38 bytes in six kernels; backward the
  // scaling by the loss gradient (read and write 4) and the cast of the gradient back to bf16
  // (read 4, write 2), 14 bytes in three (the target gather and scatter are per token).
  // PyTorch's F.cross_entropy on fp32-cast logits (torchtitan, LLM Foundry) moves about 22 + 26,
  // the same total within 8%. Fused (`fusion`): Megatron's native jit passes
  // (megatron/core/fusions/fused_cross_entropy.py) fuse the cast with the max and the
  // subtraction with the exp, 26 bytes in four kernels forward (14 backward, as unfused);
  // Transformer Engine's Triton kernels (transformer_engine/pytorch/triton/cross_entropy.py)
  // read the bf16 logits once forward (an online softmax; the loss from per-token statistics)
  // and write the gradient in place in the backward, 2 and 4 bytes. The final norm is the
  // caller's.
  void OutputAndLoss(double tokens, double hidden, double vocab,
                     CrossEntropyFusion fusion = CrossEntropyFusion::kNone);
  // The times with each pass at least its kernels times the host's issue time per kernel.
  LayerKernelTimes HostBound() const;
};

// An embedding lookup of `tokens` rows of `hidden` (a gather: read and write them) and its
// gradient over a table of `table_rows` rows (this rank's share of the vocabulary): a
// scatter-add of the tokens' rows into fp32 partial sums, on a dense table PyTorch zero-fills
// first (embedding_backward_cuda_kernel: at::zeros({num_weights, dim}), bf16), which the
// engine then adds into its fp32 gradient buffer (Megatron's main_grad.add_).
LayerKernelTimes EmbeddingKernels(const DeviceRates& device, double tokens, double hidden,
                                  double table_rows);

}  // namespace stagecraft
