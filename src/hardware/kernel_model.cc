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

}  // namespace

double GemmSeconds(const DeviceRates& device, const GemmShape& shape, bool fp8) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.batch <= 0) return 0.0;
  const KernelModel& model = device.kernels;
  const bool fp8_rate = fp8 && device.fp8_flops_per_s > 0;
  const double peak = fp8_rate ? device.fp8_flops_per_s : device.bf16_flops_per_s;
  const double efficiency =
      fp8_rate && model.fp8_gemm_efficiency > 0 ? model.fp8_gemm_efficiency : model.gemm_efficiency;
  // The efficiency is measured at the best shape's K, where the overhead already costs
  // k0 / (K + k0): the tile rate without it is higher by that factor.
  const double tile_rate = model.gemm_sustained * peak * efficiency *
                           (model.gemm_best_k + kTileKOverhead) / model.gemm_best_k /
                           std::max(1, model.sms);
  double compute = 0;
  for (const Tile& tile : kTiles) {
    const double tiles = shape.batch * std::ceil(shape.m / tile.m) * std::ceil(shape.n / tile.n);
    const double waves = std::ceil(tiles / std::max(1, model.sms));
    const double seconds =
        waves * 2 * tile.m * tile.n * (shape.k + kTileKOverhead) / (tile_rate * tile.rate);
    if (compute == 0 || seconds < compute) compute = seconds;
  }
  // Never faster than the sustained measured maximum (MAMF) for the FLOPs it does.
  const double flops = 2 * shape.m * shape.n * shape.k * shape.batch;
  compute = std::max(compute, flops / (model.gemm_sustained * peak * efficiency));
  const double element_bytes = fp8_rate ? 1.0 : 2.0;
  const double bytes = shape.batch * (element_bytes * (shape.m * shape.k + shape.k * shape.n) +
                                      2.0 * shape.m * shape.n);
  const double memory = device.hbm_bytes_per_s > 0
                            ? bytes / (device.hbm_bytes_per_s * device.memory_efficiency)
                            : 0.0;
  return std::max({compute, memory, model.kernel_floor_s});
}

double MemoryBoundSeconds(const DeviceRates& device, double bytes) {
  if (bytes <= 0) return 0.0;
  const double bandwidth = device.hbm_bytes_per_s * device.memory_efficiency;
  const double seconds = bandwidth > 0 ? bytes / bandwidth : 0.0;
  return std::max(seconds, device.kernels.kernel_floor_s);
}

double AttentionSeconds(const DeviceRates& device, double flops, bool backward, double key_blocks,
                        AttentionKernel kernel) {
  if (flops <= 0) return 0.0;
  const KernelModel& model = device.kernels;
  double efficiency =
      backward ? model.attention_backward_efficiency : model.attention_forward_efficiency;
  if (key_blocks > 0) {
    efficiency *= key_blocks / (key_blocks + 1) /
                  (kAttentionReferenceBlocks / (kAttentionReferenceBlocks + 1));
  }
  if (kernel == AttentionKernel::kTriton) {
    efficiency /= backward ? kTritonAttentionBackwardSlowdown : kTritonAttentionForwardSlowdown;
  }
  return std::max(flops / (device.bf16_flops_per_s * efficiency), model.kernel_floor_s);
}

}  // namespace stagecraft
