#include "hardware/kernel_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "hardware/presets.h"

namespace stagecraft {
namespace {

DeviceRates Rates(const char* preset) { return ClusterFromPreset(preset).value().rates(); }

// The rate a large BF16 GEMM reaches in a training step: sustained share × MAMF share × peak.
double LargeGemmRate(const DeviceRates& device) {
  return device.kernels.gemm_sustained * device.kernels.gemm_efficiency * device.bf16_flops_per_s;
}

// A GEMM's time without its fixed latency: the work the tiles and waves (or the bytes) take.
double Work(const DeviceRates& device, const GemmShape& shape, bool fp8 = false) {
  return GemmSeconds(device, shape, fp8) - device.kernels.gemm_latency_s;
}

double GemmFlops(const GemmShape& shape) { return 2 * shape.m * shape.n * shape.k * shape.batch; }

// At the best shape's K with whole waves of 256x128 tiles the model is exactly the measured
// rate: h100 has 132 SMs, M = 256·33 and N = 128·64 make 33·64 = 2112 = 16·132 tiles, and at
// K = gemm_best_k the pipeline overhead k0/(K + k0) is the one the MAMF figure already includes.
TEST(KernelModelTest, BestShapeRunsAtTheSustainedMeasuredRate) {
  const DeviceRates h100 = Rates("h100");
  ASSERT_EQ(h100.kernels.sms, 132);
  const GemmShape shape{256 * 33, 128 * 64, h100.kernels.gemm_best_k};
  EXPECT_NEAR(Work(h100, shape) * LargeGemmRate(h100) / GemmFlops(shape), 1.0, 1e-12);
}

// A large square GEMM, 8192³, is off that rate only by its quantization: 64·32 = 2048 tiles of
// 256x128 in ⌈2048/SMs⌉ waves (h100: 16 waves of 132, 2112 slots; a100: 19 of 108, 2052), and
// its K overhead (8192 + 128)/8192 against the best K's (K* + 128)/K* (h100 K* 2816: −2.9%;
// a100 K* 2048: −4.4%); and never faster than the sustained measured maximum (the MAMF is the
// best any shape reached). Within 5% of the sustained rate either way.
TEST(KernelModelTest, LargeSquareGemmNearTheSustainedRate) {
  const GemmShape shape{8192, 8192, 8192};
  for (const char* preset : {"a100", "h100"}) {
    const DeviceRates device = Rates(preset);
    const double sms = device.kernels.sms;
    const double best_k = device.kernels.gemm_best_k;
    const double slots = std::ceil(2048 / sms) * sms / 2048;
    const double overhead = (8192.0 + 128) / 8192 * best_k / (best_k + 128);
    const double relative = Work(device, shape) * LargeGemmRate(device) / GemmFlops(shape);
    EXPECT_NEAR(relative, std::max(1.0, slots * overhead), 1e-12) << preset;
    EXPECT_GE(relative, 1.0) << preset;
    EXPECT_NEAR(relative, 1.0, 0.05) << preset;
  }
}

// 12·11 = 132 tiles of 256x128 fill one wave of h100; twice the rows fill exactly two waves
// (twice the time). One row more than one wave (M = 256·12 + 1) needs 13·11 = 143 large tiles,
// two waves; the model then takes the cheapest tiling: 128x64 tiles, ⌈3073/128⌉·22 = 550 of
// them in 5 waves at 0.78 of the large tile's rate, 5·128·64/0.78 against one wave of 256·128.
// (128x128: 275 tiles, 3 waves at 0.92, 3·128·128/0.92; 64x64: 1078 tiles, 9 waves at 0.6.)
// K is the best shape's, where a full wave runs exactly at the sustained measured rate (the
// cap at that rate binds nowhere), and large enough that each stays compute bound.
TEST(KernelModelTest, WaveQuantization) {
  const DeviceRates h100 = Rates("h100");
  const double k = h100.kernels.gemm_best_k;
  const double one_wave = Work(h100, {256 * 12, 128 * 11, k});
  EXPECT_NEAR(Work(h100, {256 * 24, 128 * 11, k}) / one_wave, 2.0, 1e-12);
  const double one_more = Work(h100, {256 * 12 + 1, 128 * 11, k});
  EXPECT_NEAR(one_more / one_wave, 5 * 128 * 64 / 0.78 / (256 * 128), 1e-12);
  EXPECT_LT(one_more / one_wave, 3 * 128 * 128 / 0.92 / (256 * 128));
  EXPECT_LT(one_more / one_wave, 2.0);  // below a second wave of large tiles
  // A second member of a batched GEMM is a second wave's worth of tiles: twice the time.
  EXPECT_NEAR(Work(h100, {256 * 12, 128 * 11, k, 2}) / one_wave, 2.0, 1e-12);
}

// The tiles' work is 2·tm·tn·(K + 128): below the best shape's K, doubling K multiplies the time
// by (2K + 128)/(K + 128), just under 2; above it the time is the FLOPs at the sustained measured
// rate (no shape beats the MAMF), so doubling K doubles it.
TEST(KernelModelTest, DoublingLargeKRoughlyDoublesTime) {
  const DeviceRates h100 = Rates("h100");
  for (double k : {512.0, 1024.0}) {
    const double once = Work(h100, {8192, 8192, k});
    const double twice = Work(h100, {8192, 8192, 2 * k});
    EXPECT_NEAR(twice / once, (2 * k + 128) / (k + 128), 1e-12) << k;
    EXPECT_LT(twice / once, 2.0);
  }
  // Whole waves (2112 tiles of 256x128 = 16 waves of 132), so only the K overhead and the cap
  // remain: above K* the overhead is below the one MAMF includes, and the cap binds.
  for (double k : {4096.0, 8192.0}) {
    const GemmShape shape{256 * 33, 128 * 64, k};
    const double once = Work(h100, shape);
    EXPECT_NEAR(once * LargeGemmRate(h100) / GemmFlops(shape), 1.0, 1e-12) << k;
    EXPECT_NEAR(Work(h100, {256 * 33, 128 * 64, 2 * k}) / once, 2.0, 1e-12) << k;
  }
}

// A GEMM costs its latency on top of its work (XLA's B200 table: 4.96 us at 256³, where the work
// is under 0.4 us); a tiny one is latency bound, a large one pays the same few microseconds.
TEST(KernelModelTest, GemmLatencyAddsToTheWork) {
  for (const char* preset : {"a100", "h100", "b200"}) {
    const DeviceRates device = Rates(preset);
    const double latency = device.kernels.gemm_latency_s;
    const KernelTime tiny = GemmTime(device, {16, 16, 16});
    EXPECT_EQ(tiny.bound, KernelBound::kLatency) << preset;
    EXPECT_GT(tiny.seconds, latency) << preset;
    EXPECT_LT(tiny.seconds, latency * 1.2) << preset;  // one 64x64 tile, its K loop filled
    const KernelTime large = GemmTime(device, {8192, 8192, 8192});
    EXPECT_EQ(large.bound, KernelBound::kCompute) << preset;
    EXPECT_DOUBLE_EQ(large.seconds, large.compute_seconds + latency) << preset;
    EXPECT_EQ(large.floor_seconds, latency) << preset;
  }
  // 256³ on b200, isolated as XLA's table times it: within 10% of its measured 4.96 us.
  const KernelTime small =
      GemmTime(Rates("b200"), {256, 256, 256}, false, KernelSetting::kIsolated);
  EXPECT_NEAR(small.seconds / 4.96e-6, 1.0, 0.10);
}

// Isolated is the measured maximum rate (a kernel benchmark); in a step the GEMM work is slower
// by the sustained share, the latency the same.
TEST(KernelModelTest, InStepDeratesTheWorkOnly) {
  const DeviceRates h100 = Rates("h100");
  const GemmShape shape{8192, 8192, 8192};
  const KernelTime isolated = GemmTime(h100, shape, false, KernelSetting::kIsolated);
  const KernelTime in_step = GemmTime(h100, shape, false, KernelSetting::kInStep);
  EXPECT_NEAR(isolated.compute_seconds / in_step.compute_seconds, h100.kernels.gemm_sustained,
              1e-12);
  EXPECT_EQ(isolated.floor_seconds, in_step.floor_seconds);
  EXPECT_EQ(in_step.seconds, GemmSeconds(h100, shape));
  // 256x128 tiles in 16 waves of 132 SMs.
  EXPECT_EQ(isolated.tile_m, 256);
  EXPECT_EQ(isolated.tile_n, 128);
  EXPECT_EQ(isolated.tiles, 2048);
  EXPECT_EQ(isolated.waves, 16);
}

// K = 64 on 8192 x 8192: 2·8192²·64 FLOPs against writing the 8192² bf16 output (plus reading
// 2·8192·64 operands): the bytes at the achieved HBM bandwidth are the bound (136 MB at
// 3.35 TB/s × 0.8: 51 µs for 8.6 GFLOP, 169 TFLOP/s), below half the large GEMM's ≈ 630.
TEST(KernelModelTest, SmallKOnLargeOutputIsMemoryBound) {
  const DeviceRates h100 = Rates("h100");
  const GemmShape thin{8192, 8192, 64};
  const double bytes = 2.0 * (8192 * 64 + 64 * 8192) + 2.0 * 8192 * 8192;
  const double seconds = Work(h100, thin);
  EXPECT_DOUBLE_EQ(seconds, bytes / (h100.hbm_bytes_per_s * h100.memory_efficiency));
  const GemmShape large{8192, 8192, 8192};
  EXPECT_LT(GemmFlops(thin) / seconds, 0.5 * GemmFlops(large) / Work(h100, large));
  // Without a memory bound the K overhead still costs it: (64 + 128)/64 = 3× the work per FLOP.
  DeviceRates no_memory = h100;
  no_memory.hbm_bytes_per_s = 0;
  EXPECT_LT(Work(no_memory, thin), seconds);
  EXPECT_LT(GemmFlops(thin) / Work(no_memory, thin), GemmFlops(large) / Work(h100, large));
}

// A decode GEMM (M = 8) of an 8192 x 8192 weight reads the weight once: 134 MB in bf16, and a
// weight-only int4 GEMM (b_element_bytes 0.5) a quarter of it, the activations still in bf16.
TEST(KernelModelTest, WeightOnlyGemmReadsItsWeightBytes) {
  const DeviceRates h100 = Rates("h100");
  const GemmShape bf16{.m = 8, .n = 8192, .k = 8192};
  const GemmShape int4{.m = 8, .n = 8192, .k = 8192, .batch = 1, .b_element_bytes = 0.5};
  const KernelTime full = GemmTime(h100, bf16);
  const KernelTime quarter = GemmTime(h100, int4);
  EXPECT_EQ(full.bytes, 2.0 * 8 * 8192 + 2.0 * 8192 * 8192 + 2.0 * 8 * 8192);
  EXPECT_EQ(quarter.bytes, 2.0 * 8 * 8192 + 0.5 * 8192 * 8192 + 2.0 * 8 * 8192);
  EXPECT_EQ(full.bound, KernelBound::kMemory);
  EXPECT_DOUBLE_EQ(quarter.memory_seconds,
                   quarter.bytes / (h100.hbm_bytes_per_s * h100.memory_efficiency));
  EXPECT_LT(quarter.seconds, full.seconds);
  EXPECT_EQ(quarter.compute_seconds, full.compute_seconds);
}

// h100: FP8 at 0.70 of 1979 TFLOP/s against BF16 at 792.1/989.5 of 989.5: a compute-bound
// GEMM is faster by 1979·0.70/792.1 ≈ 1.75, not by the peaks. 2.
TEST(KernelModelTest, Fp8OnHopperFasterButBelowTwice) {
  const DeviceRates h100 = Rates("h100");
  const GemmShape shape{8192, 8192, 8192};
  const double speedup = Work(h100, shape) / Work(h100, shape, true);
  EXPECT_NEAR(speedup,
              h100.fp8_flops_per_s * h100.kernels.fp8_gemm_efficiency /
                  (h100.bf16_flops_per_s * h100.kernels.gemm_efficiency),
              1e-12);
  EXPECT_GT(speedup, 1.0);
  EXPECT_LT(speedup, 2.0);
}

// a100 has no FP8 tensor cores (fp8 peak 0): an FP8 GEMM runs at the BF16 rate.
TEST(KernelModelTest, Fp8WithoutFp8PeakRunsAtBf16Rate) {
  const DeviceRates a100 = Rates("a100");
  ASSERT_EQ(a100.fp8_flops_per_s, 0.0);
  const GemmShape shape{8192, 8192, 8192};
  EXPECT_EQ(Work(a100, shape, true), Work(a100, shape));
  // An FP8 share without an FP8 peak changes nothing either.
  DeviceRates with_share = a100;
  with_share.kernels.fp8_gemm_efficiency = 0.5;
  EXPECT_EQ(Work(with_share, shape, true), Work(a100, shape));
}

TEST(KernelModelTest, MemoryBoundSecondsAtAchievedBandwidth) {
  const DeviceRates h100 = Rates("h100");
  const double bytes = 1e9;
  EXPECT_DOUBLE_EQ(MemoryBoundSeconds(h100, bytes),
                   bytes / (h100.hbm_bytes_per_s * h100.memory_efficiency));
  EXPECT_DOUBLE_EQ(MemoryBoundSeconds(h100, 2 * bytes), 2 * MemoryBoundSeconds(h100, bytes));
  // 1 kB at 3.35 TB/s × 0.8 is 0.37 ns, far below the floor.
  EXPECT_EQ(MemoryBoundSeconds(h100, 1000), h100.kernels.kernel_floor_s);
  // No bandwidth known: only the floor.
  DeviceRates no_memory = h100;
  no_memory.hbm_bytes_per_s = 0;
  EXPECT_EQ(MemoryBoundSeconds(no_memory, bytes), h100.kernels.kernel_floor_s);
}

TEST(KernelModelTest, AttentionUsesForwardAndBackwardEfficiency) {
  const DeviceRates h100 = Rates("h100");
  const double flops = 1e12;
  EXPECT_DOUBLE_EQ(AttentionSeconds(h100, flops, false),
                   flops / (h100.bf16_flops_per_s * h100.kernels.attention_forward_efficiency));
  EXPECT_DOUBLE_EQ(AttentionSeconds(h100, flops, true),
                   flops / (h100.bf16_flops_per_s * h100.kernels.attention_backward_efficiency));
  // The backward kernel runs further from the peak.
  EXPECT_GT(AttentionSeconds(h100, flops, true), AttentionSeconds(h100, flops, false));
  EXPECT_EQ(AttentionSeconds(h100, 1e3, false), h100.kernels.kernel_floor_s);
}

// FlashAttention in Triton (LLM Foundry's attn_impl: triton) against FlashAttention-2 on the same
// work: FlashAttention-2 is "around 1.3-1.5x faster ... in the forward pass and around 2x faster
// in the backward pass" (Dao 2023, §4.1); the roll-off by sequence length applies to both.
TEST(KernelModelTest, TritonAttentionRunsAtThePapersRatios) {
  const DeviceRates a100 = Rates("a100");
  const double flops = 1e12;
  for (const double blocks : {0.0, 8.0, 64.0}) {
    const double forward = AttentionSeconds(a100, flops, false, blocks);
    const double backward = AttentionSeconds(a100, flops, true, blocks);
    EXPECT_NEAR(AttentionSeconds(a100, flops, false, blocks, AttentionKernel::kTriton) / forward,
                1.4, 1e-12);
    EXPECT_NEAR(AttentionSeconds(a100, flops, true, blocks, AttentionKernel::kTriton) / backward,
                2.0, 1e-12);
  }
  // A tiny kernel still costs the floor, whichever implementation.
  EXPECT_EQ(AttentionSeconds(a100, 1e3, true, 0, AttentionKernel::kTriton),
            a100.kernels.kernel_floor_s);
}

// FlashAttention-2's forward on H100, causal, head dim 128, by sequence length (Shah et al. 2024,
// FlashAttention-3, Fig. 5): 298, 319, 333 and 335 TFLOP/s at 2k, 4k, 8k and 16k. The roll-off
// (one block of fixed work per query tile) reproduces each against the 16k figure within 1.5%.
TEST(KernelModelTest, AttentionRollsOffWithSequenceLength) {
  const DeviceRates h100 = Rates("h100");
  const double flops = 1e12;
  const double plain = AttentionSeconds(h100, flops, false);
  // 16k causal: 64 blocks of 128 keys per query tile, the figure the preset stands for.
  EXPECT_NEAR(AttentionSeconds(h100, flops, false, 64), plain, plain * 1e-12);
  const struct {
    double seq;
    double measured;
  } curve[] = {{2048, 298}, {4096, 319}, {8192, 333}};
  double previous = 0;
  for (const auto& point : curve) {
    const double seconds = AttentionSeconds(h100, flops, false, point.seq / 256);
    const double predicted = plain / seconds;  // the share of the 16k rate
    EXPECT_NEAR(predicted, point.measured / 335.0, 0.015) << point.seq;
    EXPECT_GT(predicted, previous);
    previous = predicted;
    // The backward rolls off by the same factor.
    EXPECT_NEAR(
        AttentionSeconds(h100, flops, true, point.seq / 256) / AttentionSeconds(h100, flops, true),
        seconds / plain, 1e-12);
  }
}

TEST(KernelModelTest, EmptyShapesCostNothing) {
  const DeviceRates h100 = Rates("h100");
  EXPECT_EQ(GemmSeconds(h100, {0, 1024, 1024}), 0.0);
  EXPECT_EQ(GemmSeconds(h100, {1024, 0, 1024}), 0.0);
  EXPECT_EQ(GemmSeconds(h100, {1024, 1024, 0}), 0.0);
  EXPECT_EQ(GemmSeconds(h100, {1024, 1024, 1024, 0}), 0.0);
  EXPECT_EQ(MemoryBoundSeconds(h100, 0), 0.0);
  EXPECT_EQ(AttentionSeconds(h100, 0, false), 0.0);
  EXPECT_EQ(AttentionSeconds(h100, 0, true), 0.0);
}

// FlashAttention-3 and cuDNN at the FlashAttention-3 paper's H100 figures (causal forward at 16k:
// 616 and 539 TFLOP/s), FP8 forward at the FP8 pull request's share of the FP8 peak; the kernels a
// device does not run fall back to FlashAttention-2 (FlashAttention-3 on Ampere, FP8 backward).
TEST(KernelModelTest, AttentionImplementationsAtTheirMeasuredShares) {
  const DeviceRates h100 = Rates("h100");
  const double flops = 1e12;
  const double blocks = 64;  // 16k causal, the reference
  EXPECT_NEAR(flops / AttentionSeconds(h100, flops, false, blocks, AttentionKernel::kFlash3),
              616e12, 1e6);
  EXPECT_NEAR(flops / AttentionSeconds(h100, flops, false, blocks, AttentionKernel::kCudnn), 539e12,
              1e6);
  const KernelTime fp8 = AttentionTime(h100, flops, false, blocks, AttentionKernel::kFlash3, true);
  EXPECT_NEAR(fp8.efficiency, 618.05 / 1513.0, 1e-12);
  EXPECT_NEAR(flops / fp8.seconds, 1979e12 * 618.05 / 1513.0, 1e6);
  EXPECT_FALSE(AttentionKernelRuns(h100.kernels, AttentionKernel::kFlash3, true, true));
  EXPECT_EQ(AttentionSeconds(h100, flops, true, blocks),
            AttentionTime(h100, flops, true, blocks, AttentionKernel::kFlash3, true).seconds);
  const DeviceRates a100 = Rates("a100");
  EXPECT_FALSE(AttentionKernelRuns(a100.kernels, AttentionKernel::kFlash3, false, false));
  EXPECT_EQ(AttentionSeconds(a100, flops, false, blocks, AttentionKernel::kFlash3),
            AttentionSeconds(a100, flops, false, blocks));
  EXPECT_TRUE(AttentionKernelRuns(a100.kernels, AttentionKernel::kTriton, true, false));
}

}  // namespace
}  // namespace stagecraft
