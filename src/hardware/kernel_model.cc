#include "hardware/kernel_model.h"

#include <algorithm>
#include <cmath>

namespace stagecraft {
namespace {

// The K-loop's fill and drain per output tile, in units of K (two 64-wide stages of the
// software pipeline; an assumption of the model, doc/fidelity.md).
constexpr double kTileKOverhead = 128;

// Output tilings a GEMM library picks from, with the share of the large-tile rate each reaches:
// a smaller tile reads more operand bytes per FLOP from shared memory and L2 (its arithmetic
// intensity tm·tn/(tm + tn) is 85, 64, 43 and 32 elements), so it runs further from the peak
// (assumed shares, doc/fidelity.md).
struct Tile {
  double m;
  double n;
  double rate;
};
constexpr Tile kTiles[] = {{256, 128, 1.0}, {128, 128, 0.92}, {128, 64, 0.78}, {64, 64, 0.6}};

// The sequence length the presets' attention shares stand for: 16k causal, 64 blocks of 128 keys
// per 128-query tile on average (the plateau of FlashAttention-2's measured curve).
constexpr double kAttentionReferenceBlocks = 64;

// The slowest of the kernel's limits, and which one it is.
void Bind(KernelTime& time) {
  time.seconds = std::max({time.compute_seconds, time.memory_seconds, time.floor_seconds});
  time.bound = time.seconds == time.compute_seconds  ? KernelBound::kCompute
               : time.seconds == time.memory_seconds ? KernelBound::kMemory
                                                     : KernelBound::kLatency;
}

}  // namespace

const char* KernelBoundName(KernelBound bound) {
  switch (bound) {
    case KernelBound::kCompute:
      return "compute";
    case KernelBound::kMemory:
      return "memory";
    case KernelBound::kLatency:
      return "latency";
  }
  return "compute";
}

KernelTime GemmTime(const DeviceRates& device, const GemmShape& shape, bool fp8,
                    KernelSetting setting) {
  KernelTime time;
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.batch <= 0) return time;
  const KernelModel& model = device.kernels;
  const bool fp8_rate = fp8 && device.fp8_flops_per_s > 0;
  const double peak = fp8_rate ? device.fp8_flops_per_s : device.bf16_flops_per_s;
  const double efficiency =
      fp8_rate && model.fp8_gemm_efficiency > 0 ? model.fp8_gemm_efficiency : model.gemm_efficiency;
  const double sustained = setting == KernelSetting::kInStep ? model.gemm_sustained : 1.0;
  // The efficiency is measured at the best shape's K, where the overhead already costs
  // k0 / (K + k0): the tile rate without it is higher by that factor.
  const double tile_rate = sustained * peak * efficiency * (model.gemm_best_k + kTileKOverhead) /
                           model.gemm_best_k / std::max(1, model.sms);
  for (const Tile& tile : kTiles) {
    const double tiles = shape.batch * std::ceil(shape.m / tile.m) * std::ceil(shape.n / tile.n);
    const double waves = std::ceil(tiles / std::max(1, model.sms));
    const double seconds =
        waves * 2 * tile.m * tile.n * (shape.k + kTileKOverhead) / (tile_rate * tile.rate);
    if (time.compute_seconds == 0 || seconds < time.compute_seconds) {
      time.compute_seconds = seconds;
      time.tile_m = tile.m;
      time.tile_n = tile.n;
      time.tiles = tiles;
      time.waves = waves;
    }
  }
  // Never faster than the sustained measured maximum (MAMF) for the FLOPs it does.
  time.flops = 2 * shape.m * shape.n * shape.k * shape.batch;
  time.compute_seconds =
      std::max(time.compute_seconds, time.flops / (sustained * peak * efficiency));
  const double element_bytes = fp8_rate ? 1.0 : 2.0;
  const double b_bytes = shape.b_element_bytes > 0 ? shape.b_element_bytes : element_bytes;
  time.bytes = shape.batch * (element_bytes * shape.m * shape.k + b_bytes * shape.k * shape.n +
                              2.0 * shape.m * shape.n);
  time.memory_seconds = device.hbm_bytes_per_s > 0
                            ? time.bytes / (device.hbm_bytes_per_s * device.memory_efficiency)
                            : 0.0;
  time.floor_seconds = model.gemm_latency_s;
  const double work = std::max(time.compute_seconds, time.memory_seconds);
  time.seconds = work + time.floor_seconds;
  time.bound = time.floor_seconds > work                     ? KernelBound::kLatency
               : time.compute_seconds >= time.memory_seconds ? KernelBound::kCompute
                                                             : KernelBound::kMemory;
  return time;
}

KernelTime MemoryBoundTime(const DeviceRates& device, double bytes) {
  KernelTime time;
  if (bytes <= 0) return time;
  const double bandwidth = device.hbm_bytes_per_s * device.memory_efficiency;
  time.bytes = bytes;
  time.memory_seconds = bandwidth > 0 ? bytes / bandwidth : 0.0;
  time.floor_seconds = device.kernels.kernel_floor_s;
  Bind(time);
  return time;
}

AttentionKernel ResolveAttentionKernel(const KernelModel& model, AttentionKernel kernel) {
  if (kernel == AttentionKernel::kTe) {
    kernel = model.cudnn_forward_efficiency > 0 ? AttentionKernel::kCudnn : AttentionKernel::kFlash;
  }
  const bool runs = AttentionKernelRuns(model, kernel, false, false) &&
                    AttentionKernelRuns(model, kernel, true, false);
  return runs ? kernel : AttentionKernel::kFlash;
}

bool AttentionKernelRuns(const KernelModel& model, AttentionKernel kernel, bool backward,
                         bool fp8) {
  if (fp8) {
    if (backward) return false;
    if (kernel == AttentionKernel::kCudnn) return model.fp8_cudnn_forward_efficiency > 0;
    return kernel == AttentionKernel::kFlash3 && model.fp8_attention_forward_efficiency > 0;
  }
  switch (kernel) {
    case AttentionKernel::kFlash:
    case AttentionKernel::kTriton:
      return true;
    case AttentionKernel::kFlash3:
      return (backward ? model.flash3_backward_efficiency : model.flash3_forward_efficiency) > 0;
    case AttentionKernel::kCudnn:
      return (backward ? model.cudnn_backward_efficiency : model.cudnn_forward_efficiency) > 0;
    case AttentionKernel::kTe:
      return AttentionKernelRuns(model, ResolveAttentionKernel(model, kernel), backward, fp8);
  }
  return false;
}

KernelTime AttentionTime(const DeviceRates& device, double flops, bool backward, double key_blocks,
                         AttentionKernel kernel, bool fp8) {
  KernelTime time;
  if (flops <= 0) return time;
  const KernelModel& model = device.kernels;
  if (kernel == AttentionKernel::kTe) kernel = ResolveAttentionKernel(model, kernel);
  if (!AttentionKernelRuns(model, kernel, backward, fp8)) {
    kernel = AttentionKernel::kFlash;
    fp8 = false;
  }
  double efficiency =
      backward ? model.attention_backward_efficiency : model.attention_forward_efficiency;
  if (fp8) {
    efficiency = kernel == AttentionKernel::kCudnn ? model.fp8_cudnn_forward_efficiency
                                                   : model.fp8_attention_forward_efficiency;
  } else if (kernel == AttentionKernel::kFlash3) {
    efficiency = backward ? model.flash3_backward_efficiency : model.flash3_forward_efficiency;
  } else if (kernel == AttentionKernel::kCudnn) {
    efficiency = backward ? model.cudnn_backward_efficiency : model.cudnn_forward_efficiency;
  }
  if (key_blocks > 0) {
    efficiency *= key_blocks / (key_blocks + 1) /
                  (kAttentionReferenceBlocks / (kAttentionReferenceBlocks + 1));
  }
  if (kernel == AttentionKernel::kTriton) {
    efficiency /= backward ? kTritonAttentionBackwardSlowdown : kTritonAttentionForwardSlowdown;
  }
  const double peak =
      fp8 && device.fp8_flops_per_s > 0 ? device.fp8_flops_per_s : device.bf16_flops_per_s;
  time.flops = flops;
  time.efficiency = efficiency;
  time.compute_seconds = flops / (peak * efficiency);
  time.floor_seconds = model.kernel_floor_s;
  Bind(time);
  return time;
}

}  // namespace stagecraft
