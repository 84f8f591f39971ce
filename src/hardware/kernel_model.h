// The time of one GPU kernel from its shape: matrix multiplies (GEMMs) with tile and wave
// quantization over the device's SMs and a per-tile K overhead, memory-bound kernels at the
// achieved HBM bandwidth, fused attention at a measured fraction of peak, and a per-kernel floor.
// The per-device numbers are data (KernelModel, filled by the presets with their sources); the
// formulas here are the same for every device. doc/fidelity.md explains the model.
#pragma once

#include <cstdint>

namespace stagecraft {

// Per-device constants of the kernel model. Every preset fills them (hardware/presets.cc says
// where each number comes from); a custom cluster keeps these defaults (an H100 SXM).
struct KernelModel {
  int32_t sms = 132;  // streaming multiprocessors: the wave width of a GEMM
  // Large BF16 GEMM: the fraction of the dense peak that the best shape reaches (the maximum
  // achievable matmul FLOP/s, MAMF), and the K of that shape (the K overhead below is removed
  // at that K, so the model reproduces the measured figure there).
  double gemm_efficiency = 0.801;
  double gemm_best_k = 2816;
  // The share of that rate a GEMM sustains inside a training step (clocks under the power limit
  // of a busy node, caches shared with concurrent kernels, the shapes cuBLAS's heuristics pick
  // for): fitted once per device generation on the validation suite (doc/fidelity.md).
  double gemm_sustained = 0.76;
  double fp8_gemm_efficiency = 0.0;  // the same for FP8 GEMMs; 0 = as BF16
  // Fused (FlashAttention-style) attention: fraction of the BF16 peak, forward and backward.
  double attention_forward_efficiency = 0.55;
  double attention_backward_efficiency = 0.45;
  double kernel_floor_s = 5e-6;  // the least a kernel costs on the device (launch, tail)
  // The host's time to issue one kernel from a PyTorch training loop (Python, autograd and the
  // launch): a layer cannot run faster than its kernels are issued.
  double host_seconds_per_kernel = 10e-6;
  bool operator==(const KernelModel&) const = default;
};

// Which fused attention kernel a run launches (model.transformer.attn_impl, LLM Foundry's
// name): FlashAttention-2 (flash-attn, PyTorch's SDPA, cuDNN, Transformer Engine), at the
// device's attention efficiency above, or FlashAttention written in Triton (the FlashAttention-1
// algorithm; LLM Foundry's MPT `attn_impl: triton`), slower by the ratios below.
enum class AttentionKernel : uint8_t { kFlash, kTriton };

// How much slower FlashAttention in Triton runs than FlashAttention-2 on the same shapes: "around
// 1.3-1.5x faster than FlashAttention in Triton in the forward pass and around 2x faster in the
// backward pass" (Dao 2023, FlashAttention-2, §4.1, A100 80GB, causal and not, head dim 64 and
// 128). The forward takes the middle of the range. The same ratios on every device: the paper's
// H100 figure (Fig. 7) has no Triton curve.
constexpr double kTritonAttentionForwardSlowdown = 1.4;
constexpr double kTritonAttentionBackwardSlowdown = 2.0;

// What a kernel runs on: one device's peaks and its kernel constants.
struct DeviceRates {
  double bf16_flops_per_s = 0;     // dense peak
  double fp8_flops_per_s = 0;      // dense peak; 0 = no FP8 tensor cores (FP8 runs at BF16 rate)
  double hbm_bytes_per_s = 0;      // 0 = no memory bound
  double memory_efficiency = 0.8;  // fraction of the HBM bandwidth a memory-bound kernel streams
  KernelModel kernels;
};

// C[m x n] = A[m x k] · B[k x n], `batch` times (a batched or grouped GEMM of equal members).
struct GemmShape {
  double m = 0;
  double n = 0;
  double k = 0;
  double batch = 1;
};

// Seconds of one GEMM (BF16 operands, or FP8 with `fp8`): the fastest of the output tilings
// 256x128, 128x128, 128x64 and 64x64 (each tile a unit of work on one SM, the waves
// ceil(tiles / SMs) rounded up, a tile's work 2·tm·tn·(k + k0) with k0 = 128 the pipeline's fill
// and drain, smaller tiles at a lower share of the peak), bounded below by reading A and B and
// writing C once at the achieved HBM bandwidth and by the kernel floor. 0 for an empty shape.
double GemmSeconds(const DeviceRates& device, const GemmShape& shape, bool fp8 = false);

// Seconds of a memory-bound kernel that moves `bytes` (reads plus writes): bytes over the
// achieved HBM bandwidth, at least the kernel floor. 0 for no bytes.
double MemoryBoundSeconds(const DeviceRates& device, double bytes);

// Seconds of a fused attention kernel of `flops` (forward or backward), at the device's measured
// attention efficiency, at least the kernel floor. `key_blocks` > 0 is the mean number of
// 128-key blocks one 128-query tile computes against (s/256 causal, s/128 not): each tile pays
// about one block's worth of fixed work (loading Q, the softmax rescale, writing O), so the
// efficiency is the device's long-sequence figure (taken at 64 blocks, 16k causal) scaled by
// n/(n + 1) / (64/65) (FlashAttention-2 on H100 by sequence length, Shah et al. 2024, Fig. 5;
// doc/fidelity.md). 0 = no sequence-length roll-off. `kernel`: FlashAttention-2, or in Triton
// (kTritonAttention*Slowdown).
double AttentionSeconds(const DeviceRates& device, double flops, bool backward,
                        double key_blocks = 0, AttentionKernel kernel = AttentionKernel::kFlash);

}  // namespace stagecraft
