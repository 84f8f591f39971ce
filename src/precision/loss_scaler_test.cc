#include "precision/loss_scaler.h"

#include <gtest/gtest.h>

namespace stagecraft {
namespace {

// PyTorch GradScaler (reference facts §5): init 2^16, x2 after 2000 clean steps, x0.5 on every
// overflow, the step skipped. Exact (powers of two).
TEST(LossScalerTest, TorchGradScaler) {
  DynamicLossScaler scaler(TorchGradScalerConfig());
  EXPECT_EQ(scaler.scale(), 65536.0);
  for (int step = 0; step < 1999; ++step) EXPECT_FALSE(scaler.Update(false));
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_FALSE(scaler.Update(false));  // the 2000th clean step grows it
  EXPECT_EQ(scaler.scale(), 131072.0);
  EXPECT_TRUE(scaler.Update(true));  // one overflow: halved at once, step skipped
  EXPECT_EQ(scaler.scale(), 65536.0);
  // The growth count restarts after an overflow.
  for (int step = 0; step < 1999; ++step) scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 65536.0);
}

// Megatron (reference facts §5): init 2^32, window 1000, hysteresis 2, min 1. The first
// overflow only uses up hysteresis; the second backs off; growth refills the hysteresis.
TEST(LossScalerTest, MegatronHysteresisAndFloor) {
  DynamicLossScaler scaler(MegatronGradScalerConfig());
  EXPECT_EQ(scaler.scale(), 4294967296.0);
  EXPECT_TRUE(scaler.Update(true));
  EXPECT_EQ(scaler.scale(), 4294967296.0);
  EXPECT_TRUE(scaler.Update(true));
  EXPECT_EQ(scaler.scale(), 2147483648.0);
  EXPECT_TRUE(scaler.Update(true));  // hysteresis stays used up until a growth
  EXPECT_EQ(scaler.scale(), 1073741824.0);
  for (int step = 0; step < 1000; ++step) scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 2147483648.0);
  EXPECT_TRUE(scaler.Update(true));  // refilled: tolerated once more
  EXPECT_EQ(scaler.scale(), 2147483648.0);
  // The floor: from 2^32, 40 consecutive overflows reach 1 and stay there.
  DynamicLossScaler floor(MegatronGradScalerConfig());
  for (int step = 0; step < 40; ++step) floor.Update(true);
  EXPECT_EQ(floor.scale(), 1.0);
}

TEST(LossScalerTest, SimulateCountsSkippedSteps) {
  const LossScalingRun run = SimulateLossScaling(TorchGradScalerConfig(), 5000, {10, 20, 4000});
  EXPECT_EQ(run.steps, 5000);
  EXPECT_EQ(run.skipped, 3);
  // Overflows at 10 and 20 halve twice (2^14); steps 21..2020 are 2000 clean ones, so it grows
  // at 2020 (2^15); the overflow at 4000 halves it (2^14); the 999 clean steps after it do not
  // reach another growth.
  EXPECT_EQ(run.final_scale, 16384.0);
}

}  // namespace
}  // namespace stagecraft
