#include "hardware/fp8_recipe.h"

#include <gtest/gtest.h>

#include "hardware/presets.h"

namespace stagecraft {
namespace {

DeviceRates Rates(const char* preset) {
  auto cluster = ClusterFromPreset(preset);
  EXPECT_TRUE(cluster.ok());
  return cluster.value().rates();
}

// The GEMM's work alone (without the fixed latency every GEMM pays).
double Work(const DeviceRates& device, const GemmShape& shape, Fp8Recipe recipe, LinearGemm gemm) {
  return RecipeGemmSeconds(device, shape, recipe, gemm) - device.kernels.gemm_latency_s;
}

TEST(Fp8RecipeTest, NamesAreTheEnginesOwn) {
  EXPECT_STREQ(Fp8RecipeName(Fp8Recipe::kTensorwise), "tensorwise");
  EXPECT_STREQ(Fp8RecipeName(Fp8Recipe::kRowwiseWithGwHp), "rowwise_with_gw_hp");
  EXPECT_STREQ(Fp8RecipeName(Fp8Recipe::kMxfp8), "mxfp8");
  EXPECT_EQ(kDefaultFp8Recipe, Fp8Recipe::kTensorwise);
}

// pytorch/pytorch#147971: the rowwise CUTLASS GEMM at 90-100% of cuBLAS's tensorwise one on
// H100; the model takes 0.95 of it, on a large compute-bound shape (8192^3) exactly.
TEST(Fp8RecipeTest, RowwiseForwardGemmIsSlowerByTheMeasuredShare) {
  const DeviceRates h100 = Rates("h100");
  const GemmShape shape{8192, 8192, 8192};
  const double tensorwise = Work(h100, shape, Fp8Recipe::kTensorwise, LinearGemm::kForward);
  const double rowwise = Work(h100, shape, Fp8Recipe::kRowwise, LinearGemm::kForward);
  EXPECT_NEAR(tensorwise / rowwise, 0.95, 1e-9);
  // Its backward GEMMs are torchao's tensorwise cuBLAS kernel, rescaled after.
  EXPECT_DOUBLE_EQ(Work(h100, shape, Fp8Recipe::kRowwise, LinearGemm::kInputGrad),
                   Work(h100, shape, Fp8Recipe::kTensorwise, LinearGemm::kInputGrad));
  EXPECT_GT(RecipeCost(Fp8Recipe::kRowwise).rescale_bytes, 0);
}

// pytorch/ao#3342 (H100 PCIe, 16640x5120x8192): the 1x128 by 128x1 weight-gradient GEMM at
// 1.340x BF16 where the tensorwise share gives 1.772x: 0.756 of the tensorwise rate.
TEST(Fp8RecipeTest, BlockwiseWeightGradientAtItsMeasuredShare) {
  const DeviceRates h100 = Rates("h100");
  const GemmShape shape{8192, 8192, 8192};
  EXPECT_NEAR(h100.kernels.fp8_blockwise_wgrad_share, 0.756, 5e-4);
  EXPECT_NEAR(Work(h100, shape, Fp8Recipe::kTensorwise, LinearGemm::kWeightGrad) /
                  Work(h100, shape, Fp8Recipe::kBlockwise, LinearGemm::kWeightGrad),
              h100.kernels.fp8_blockwise_wgrad_share, 1e-9);
  EXPECT_DOUBLE_EQ(Work(h100, shape, Fp8Recipe::kBlockwise, LinearGemm::kForward),
                   Work(h100, shape, Fp8Recipe::kTensorwise, LinearGemm::kForward));
}

TEST(Fp8RecipeTest, RowwiseWithGwHpRunsTheWeightGradientInBf16) {
  const DeviceRates h100 = Rates("h100");
  const GemmShape shape{4096, 4096, 8192};
  EXPECT_DOUBLE_EQ(
      RecipeGemmSeconds(h100, shape, Fp8Recipe::kRowwiseWithGwHp, LinearGemm::kWeightGrad),
      GemmSeconds(h100, shape, false));
  EXPECT_GT(RecipeGemmSeconds(h100, shape, Fp8Recipe::kRowwiseWithGwHp, LinearGemm::kWeightGrad),
            1.5 * RecipeGemmSeconds(h100, shape, Fp8Recipe::kTensorwise, LinearGemm::kWeightGrad));
}

// torchao's roofline accounting: tensorwise reads an activation twice (amax, cast) and writes
// both FP8 layouts, 6 bytes; rowwise needs a BF16 transpose for the column-wise layout, 8;
// TE's delayed scaling fuses amax into one cast-transpose, 4 (what the model costed before).
TEST(Fp8RecipeTest, CastBytesFollowTheRecipesKernels) {
  const Fp8RecipeCost tensorwise = RecipeCost(Fp8Recipe::kTensorwise);
  const Fp8RecipeCost delayed = RecipeCost(Fp8Recipe::kDelayed);
  const Fp8RecipeCost rowwise = RecipeCost(Fp8Recipe::kRowwise);
  EXPECT_EQ(delayed.input_forward_bytes + delayed.input_backward_bytes, 4);
  EXPECT_EQ(delayed.grad_output_bytes, 4);
  EXPECT_EQ(delayed.weight_forward_bytes + delayed.weight_backward_bytes, 0);
  EXPECT_EQ(tensorwise.input_forward_bytes + tensorwise.input_backward_bytes, 6);
  EXPECT_EQ(tensorwise.grad_output_bytes, 6);
  EXPECT_EQ(tensorwise.weight_forward_bytes + tensorwise.weight_backward_bytes, 8);
  EXPECT_EQ(rowwise.input_forward_bytes + rowwise.input_backward_bytes, 8);
  EXPECT_EQ(rowwise.grad_output_bytes, 8);
  EXPECT_EQ(rowwise.weight_forward_bytes + rowwise.weight_backward_bytes, 10);
  // Scales from a local amax need no all-reduce; a tensor's single scale does.
  EXPECT_TRUE(tensorwise.amax_all_reduce);
  EXPECT_FALSE(rowwise.amax_all_reduce);
  EXPECT_FALSE(RecipeCost(Fp8Recipe::kBlockwise).amax_all_reduce);
  EXPECT_FALSE(RecipeCost(Fp8Recipe::kMxfp8).amax_all_reduce);
}

TEST(Fp8RecipeTest, Mxfp8RunsOnBlockScaledTensorCoresOnly) {
  EXPECT_TRUE(RecipeRuns(Rates("b200").kernels, Fp8Recipe::kMxfp8));
  EXPECT_FALSE(RecipeRuns(Rates("h100").kernels, Fp8Recipe::kMxfp8));
  EXPECT_FALSE(RecipeRuns(KernelModel{}, Fp8Recipe::kMxfp8));
  EXPECT_TRUE(RecipeRuns(Rates("h100").kernels, Fp8Recipe::kBlockwise));
  // On B200 the MXFP8 GEMM runs at the FP8 rate (torchao: up to ~2x BF16).
  const DeviceRates b200 = Rates("b200");
  const GemmShape shape{8192, 8192, 8192};
  EXPECT_DOUBLE_EQ(RecipeGemmSeconds(b200, shape, Fp8Recipe::kMxfp8, LinearGemm::kForward),
                   GemmSeconds(b200, shape, true));
}

}  // namespace
}  // namespace stagecraft
