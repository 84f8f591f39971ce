#include "serve/disaggregation.h"

#include <gtest/gtest.h>

namespace stagecraft {

// DistServe (Zhong et al., OSDI'24) Figure 1: a 13B model, one A100 per instance, input 512,
// output 64 tokens, SLOs P90 TTFT 0.4 s and P90 TPOT 0.04 s. Colocated, one GPU sustains 1.6
// rps; a prefill-only instance sustains 5.6 rps and a decode-only one 10 rps, so 2 prefill + 1
// decode instances serve min(2 x 5.6, 10) = 10 rps on 3 GPUs: 3.33 rps per GPU, 2.1x the
// colocated 1.6.
TEST(DisaggregationTest, DistServeFigure1TwoPrefillOneDecode) {
  constexpr double kPrefillRps = 5.6;
  constexpr double kDecodeRps = 10.0;
  const DisaggregatedUnit unit{.prefill_instances = 2, .decode_instances = 1};
  EXPECT_EQ(unit.gpus(), 3);
  EXPECT_DOUBLE_EQ(DisaggregatedRate(unit, kPrefillRps, kDecodeRps), 10.0);
  EXPECT_NEAR(DisaggregatedRatePerGpu(unit, kPrefillRps, kDecodeRps), 3.33, 0.005);
  EXPECT_GT(DisaggregatedRatePerGpu(unit, kPrefillRps, kDecodeRps) / 1.6, 2.0);
  // One of each is prefill-bound: 5.6 rps on 2 GPUs.
  EXPECT_DOUBLE_EQ(DisaggregatedRatePerGpu({.prefill_instances = 1, .decode_instances = 1},
                                           kPrefillRps, kDecodeRps),
                   2.8);
}

// The replication rule at the figure's per-instance rates: ceil(R / 5.6) prefill and
// ceil(R / 10) decode instances. 10 rps: 2 + 1 (the unit above); 20 rps: 4 + 2; 50 rps: 9 + 5
// (ceil(8.93) = 9: prefill need not come in whole 2:1 units).
TEST(DisaggregationTest, DistServeReplicationAt10_20_50Rps) {
  const DisaggregatedUnit at10 = ReplicateForRate(10, 5.6, 10);
  EXPECT_EQ(at10.prefill_instances, 2);
  EXPECT_EQ(at10.decode_instances, 1);
  const DisaggregatedUnit at20 = ReplicateForRate(20, 5.6, 10);
  EXPECT_EQ(at20.prefill_instances, 4);
  EXPECT_EQ(at20.decode_instances, 2);
  const DisaggregatedUnit at50 = ReplicateForRate(50, 5.6, 10);
  EXPECT_EQ(at50.prefill_instances, 9);
  EXPECT_EQ(at50.decode_instances, 5);
  // Each replicated placement serves its rate, and one instance fewer of either phase would not.
  for (const double rate : {10.0, 20.0, 50.0}) {
    DisaggregatedUnit unit = ReplicateForRate(rate, 5.6, 10);
    EXPECT_GE(DisaggregatedRate(unit, 5.6, 10), rate - 1e-9);
    --unit.prefill_instances;
    EXPECT_LT(DisaggregatedRate(unit, 5.6, 10), rate);
    ++unit.prefill_instances;
    --unit.decode_instances;
    EXPECT_LT(DisaggregatedRate(unit, 5.6, 10), rate);
  }
}

}  // namespace stagecraft
