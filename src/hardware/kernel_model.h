// The time of one GPU kernel from its shape: matrix multiplies (GEMMs) with tile and wave
// quantization over the device's SMs and a per-tile K overhead, memory-bound kernels at the
// achieved HBM bandwidth, fused attention at a measured fraction of peak, and a per-kernel floor.
// The per-device numbers are data (KernelModel, filled by the presets with their sources); the
// formulas here are the same for every device. doc/fidelity.md explains the model.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_table.h"

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
  // FP8 recipes' GEMMs (hardware/fp8_recipe.h) as shares of that FP8 rate: the rowwise-scaled
  // forward GEMM (PyTorch's CUTLASS kernel against cuBLAS's tensorwise one), the blockwise
  // weight-gradient GEMM (1x128 by 128x1 scales); whether the device has block-scaled (MX)
  // tensor cores for mxfp8. Hopper's measured figures by default (presets.cc).
  double fp8_rowwise_gemm_share = 0.95;
  double fp8_blockwise_wgrad_share = 0.756;
  bool mxfp8_gemm = false;
  // Fused (FlashAttention-style) attention: fraction of the BF16 peak, forward and backward.
  double attention_forward_efficiency = 0.55;
  double attention_backward_efficiency = 0.45;
  // FlashAttention-3 and cuDNN's fused attention at the same reference (long sequence, causal,
  // head dim 128): their shares of the BF16 peak; 0 = the kernel does not run on the device.
  double flash3_forward_efficiency = 0;
  double flash3_backward_efficiency = 0;
  double cudnn_forward_efficiency = 0;
  double cudnn_backward_efficiency = 0;
  // FP8 attention forward (FlashAttention-3's, cuDNN's): its share of the FP8 peak; 0 = none.
  double fp8_attention_forward_efficiency = 0;
  double fp8_cudnn_forward_efficiency = 0;
  double kernel_floor_s = 5e-6;  // the least a kernel costs on the device (launch, tail)
  // What every GEMM kernel costs besides its work (the launch, the prologue that loads the first
  // tiles, the epilogue and the last wave's tail), added to the slower of its compute and memory
  // times: XLA's B200 GEMM table times 256x256x256 in 4.96 us of CUPTI kernel time, where the
  // work is under 0.4 us (doc/fidelity.md, "Kernels").
  double gemm_latency_s = 5e-6;
  // The host's time to issue one kernel from a PyTorch training loop (Python, autograd and the
  // launch): a layer cannot run faster than its kernels are issued.
  double host_seconds_per_kernel = 10e-6;
  bool operator==(const KernelModel&) const = default;
};

// Which fused attention kernel a run launches (model.transformer.attn_impl): FlashAttention-2
// (flash-attn 2, PyTorch's SDPA flash backend), at the device's attention efficiency above;
// FlashAttention written in Triton (the FlashAttention-1 algorithm; LLM Foundry's MPT
// `attn_impl: triton`), slower by the ratios below; FlashAttention-3 (Hopper only) and cuDNN's
// fused attention, each at its own measured shares (KernelModel::flash3_*, cudnn_*); or
// Transformer Engine's choice, which prefers cuDNN's fused attention on Hopper and later and
// FlashAttention-2 on Ampere when both apply (NeMo's memory_optimizations.rst, NVIDIA/NeMo#9188).
enum class AttentionKernel : uint8_t { kFlash, kTriton, kFlash3, kCudnn, kTe };

// The kernel that runs: Transformer Engine's choice made for the device (cuDNN where the device
// has cuDNN's measured shares, else FlashAttention-2), and FlashAttention-3 or cuDNN on a device
// without their measured shares (FlashAttention-3 is Hopper's only) as FlashAttention-2.
AttentionKernel ResolveAttentionKernel(const struct KernelModel& model, AttentionKernel kernel);
// The implementations by name, as model.transformer.attn_impl, `kernel attention --impl` and
// the kernel suite's rows name them: flash2, flash3, cudnn, te, triton.
inline constexpr EnumTable<AttentionKernel> kAttentionKernelNames = {
    {"flash2", AttentionKernel::kFlash},
    {"flash3", AttentionKernel::kFlash3},
    {"cudnn", AttentionKernel::kCudnn},
    {"te", AttentionKernel::kTe},
    {"triton", AttentionKernel::kTriton}};
// The name of `kernel` in that table.
constexpr const char* AttentionKernelName(AttentionKernel kernel) {
  return kAttentionKernelNames.Name(kernel);
}

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
  // Bytes per element of B when it differs from A's (a weight-only quantized GEMM reads its int4
  // or int8 weights and dequantizes them in the kernel, as Marlin does); 0 = as A.
  double b_element_bytes = 0;
};

// Where a kernel is timed: alone (a kernel benchmark's CUDA-event time, at the measured maximum
// rate) or inside a training step (the GEMM rate derated by KernelModel::gemm_sustained; the
// other kernels are the same in both).
enum class KernelSetting : uint8_t { kIsolated, kInStep };

// What limits a kernel: its FLOPs at the tensor-core rate, its bytes at the achieved HBM
// bandwidth, or the device's per-kernel floor.
enum class KernelBound : uint8_t { kCompute, kMemory, kLatency };
const char* KernelBoundName(KernelBound bound);

// One kernel's time and why (`stagecraft kernel` prints it; the simulator uses `seconds`).
struct KernelTime {
  double seconds = 0;
  KernelBound bound = KernelBound::kCompute;
  double compute_seconds = 0;  // the FLOPs at the rate the kernel reaches (tiles and waves)
  double memory_seconds = 0;   // its bytes at the achieved HBM bandwidth
  double floor_seconds = 0;    // the device's per-kernel floor
  double flops = 0;
  double bytes = 0;
  // GEMMs: the output tile the fastest tiling uses, its count and the waves over the SMs.
  double tile_m = 0;
  double tile_n = 0;
  double tiles = 0;
  double waves = 0;
  double efficiency = 0;  // attention: the share of the peak the kernel reaches
};

// Seconds of one GEMM (BF16 operands, or FP8 with `fp8`): the fastest of the output tilings
// 256x128, 128x128, 128x64 and 64x64 (each tile a unit of work on one SM, the waves
// ceil(tiles / SMs) rounded up, a tile's work 2·tm·tn·(k + k0) with k0 = 128 the pipeline's fill
// and drain, smaller tiles at a lower share of the peak), bounded below by reading A and B and
// writing C once at the achieved HBM bandwidth, plus the GEMM latency (KernelModel::
// gemm_latency_s; `floor_seconds` of the result, bound "latency" when it is the larger part).
// 0 for an empty shape.
KernelTime GemmTime(const DeviceRates& device, const GemmShape& shape, bool fp8 = false,
                    KernelSetting setting = KernelSetting::kInStep);
inline double GemmSeconds(const DeviceRates& device, const GemmShape& shape, bool fp8 = false) {
  return GemmTime(device, shape, fp8).seconds;
}

// Seconds of a memory-bound kernel that moves `bytes` (reads plus writes): bytes over the
// achieved HBM bandwidth, at least the kernel floor. 0 for no bytes.
KernelTime MemoryBoundTime(const DeviceRates& device, double bytes);
inline double MemoryBoundSeconds(const DeviceRates& device, double bytes) {
  return MemoryBoundTime(device, bytes).seconds;
}

// Seconds of a fused attention kernel of `flops` (forward or backward), at the device's measured
// attention efficiency, at least the kernel floor. `key_blocks` > 0 is the mean number of
// 128-key blocks one 128-query tile computes against (s/256 causal, s/128 not): each tile pays
// about one block's worth of fixed work (loading Q, the softmax rescale, writing O), so the
// efficiency is the device's long-sequence figure (taken at 64 blocks, 16k causal) scaled by
// n/(n + 1) / (64/65) (FlashAttention-2 on H100 by sequence length, Shah et al. 2024, Fig. 5;
// doc/fidelity.md). 0 = no sequence-length roll-off. `kernel`: FlashAttention-2, in Triton
// (kTritonAttention*Slowdown), FlashAttention-3 or cuDNN at their shares; `fp8`: FP8 operands
// at the device's FP8 attention share of its FP8 peak (forward only). A kernel the device does
// not run (a share of 0) falls back to FlashAttention-2 (AttentionKernelRuns says which run).
KernelTime AttentionTime(const DeviceRates& device, double flops, bool backward,
                         double key_blocks = 0, AttentionKernel kernel = AttentionKernel::kFlash,
                         bool fp8 = false);
// Whether `kernel` (with FP8 operands when `fp8`, in the given pass) runs on the device: its
// measured share is known. FlashAttention-2 and the Triton kernel run everywhere in BF16.
bool AttentionKernelRuns(const KernelModel& model, AttentionKernel kernel, bool backward, bool fp8);
inline double AttentionSeconds(const DeviceRates& device, double flops, bool backward,
                               double key_blocks = 0,
                               AttentionKernel kernel = AttentionKernel::kFlash) {
  return AttentionTime(device, flops, backward, key_blocks, kernel).seconds;
}

}  // namespace stagecraft
