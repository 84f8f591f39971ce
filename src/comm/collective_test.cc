#include "comm/collective.h"

#include <gtest/gtest.h>

#include <cmath>

#include "hardware/presets.h"
#include "testing/test_util.h"

namespace stagecraft {
namespace {

CollectiveGroup Flat(int32_t ranks, double bandwidth, int64_t latency_ns) {
  CollectiveGroup group;
  group.ranks = ranks;
  group.ranks_per_node = ranks;
  group.intra_node = {Time::Nanoseconds(latency_ns), bandwidth};
  return group;
}

// nccl-tests (doc/PERFORMANCE.md, reference facts §4): busbw = algbw × factor.
TEST(CollectiveTest, NcclTestsBusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kReduceScatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllGather, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllToAll, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kReduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kSendRecv, 2), 1.0);
}

// Ring all-reduce α-β (reference facts §4): 2(n−1)α + 2(n−1)/n·S/β; RS and AG half of it. With
// no latency a ring's busbw is exactly the link bandwidth: the point of the convention.
TEST(CollectiveTest, RingFormsAndBusBandwidthIsTheLink) {
  const CollectiveGroup group = Flat(8, 100e9, 0);
  const auto all_reduce =
      EstimateCollective(Collective::kAllReduce, CollectiveAlgorithm::kRing, 800'000'000, group)
          .value();
  EXPECT_EQ(all_reduce.time, Time::Nanoseconds(14'000'000));  // 2·7/8·0.8 GB / 100 GB/s
  EXPECT_NEAR(all_reduce.busbw_bytes_per_s, 100e9, 1e3);
  for (Collective collective : {Collective::kReduceScatter, Collective::kAllGather}) {
    const auto half =
        EstimateCollective(collective, CollectiveAlgorithm::kRing, 800'000'000, group).value();
    EXPECT_EQ(half.time, Time::Nanoseconds(7'000'000));
    EXPECT_NEAR(half.busbw_bytes_per_s, 100e9, 1e3);
  }
  const CollectiveGroup with_latency = Flat(8, 100e9, 5'000);
  EXPECT_EQ(EstimateCollective(Collective::kAllReduce, CollectiveAlgorithm::kRing, 800'000'000,
                               with_latency)
                .value()
                .time,
            Time::Nanoseconds(14'000'000 + 2 * 7 * 5'000));
}

TEST(CollectiveTest, TreeAndHierarchical) {
  const auto tree = EstimateCollective(Collective::kAllReduce, CollectiveAlgorithm::kTree,
                                       1'000'000'000, Flat(16, 100e9, 1'000))
                        .value();
  EXPECT_EQ(tree.time, Time::Nanoseconds(2 * 4 * 1'000 + 20'000'000));  // 2·log2(16)·α + 2S/β
  // Two nodes of 8: RS within (7/8·S/β_intra), ring AR of S/8 over 2 nodes (2·1/2·(S/8)/β_inter),
  // AG within; latencies zero.
  CollectiveGroup group;
  group.ranks = 16;
  group.ranks_per_node = 8;
  group.intra_node = {Time(), 400e9};
  group.inter_node = {Time(), 50e9};
  const auto hierarchical =
      EstimateCollective(Collective::kAllReduce, CollectiveAlgorithm::kHierarchical, 1'600'000'000,
                         group)
          .value();
  const double expected = 2 * (7.0 / 8 * 1.6e9 / 400e9) + 2 * 0.5 * (0.2e9 / 50e9);
  EXPECT_EQ(hierarchical.time, Time::Nanoseconds(static_cast<int64_t>(expected * 1e9 + 0.5)));
  // A ring over the same 16 ranks runs one ring per NIC rail: β = min(400, 8 x 50) GB/s.
  const auto ring =
      EstimateCollective(Collective::kAllReduce, CollectiveAlgorithm::kRing, 1'600'000'000, group)
          .value();
  EXPECT_NEAR(ring.busbw_bytes_per_s, 400e9, 1e4);
  group.inter_node.bandwidth_bytes_per_s = 25e9;  // half the NIC: the rails are the bottleneck
  EXPECT_NEAR(
      EstimateCollective(Collective::kAllReduce, CollectiveAlgorithm::kRing, 1'600'000'000, group)
          .value()
          .busbw_bytes_per_s,
      200e9, 1e4);
}

// All-to-all over two nodes: the inter-node share (n − g)/n of S over the NIC dominates.
TEST(CollectiveTest, AllToAllSplitsIntraAndInter) {
  CollectiveGroup group;
  group.ranks = 16;
  group.ranks_per_node = 8;
  group.intra_node = {Time(), 400e9};
  group.inter_node = {Time(), 50e9};
  const auto cost =
      EstimateCollective(Collective::kAllToAll, CollectiveAlgorithm::kRing, 1'600'000'000, group)
          .value();
  EXPECT_EQ(cost.time, Time::Nanoseconds(16'000'000));  // 8/16 · 1.6 GB / 50 GB/s
}

// 8xH100 NVLink ring all-reduce busbw ≈ 370 GB/s (reference facts §4, nccl-tests). The preset's
// NVLink efficiency is calibrated on that figure, so this checks the conventions end to end:
// at 8 GiB the latency terms vanish and busbw is the usable link bandwidth (tolerance 1%).
TEST(CollectiveTest, H100NodeAllReduceBusBandwidth) {
  const ClusterSpec cluster = ClusterFromPreset("h100").value();
  const auto cost = EstimateCollective(Collective::kAllReduce, CollectiveAlgorithm::kRing,
                                       int64_t{8} << 30, GroupOnCluster(cluster, 8))
                        .value();
  EXPECT_NEAR(cost.busbw_bytes_per_s / 1e9, 370.0, 3.7);
}

TEST(CollectiveTest, Errors) {
  EXPECT_TRUE(Contains(ParseCollective("allreduse").error().message, "did you mean 'allreduce'"));
  EXPECT_TRUE(Contains(ParseCollectiveAlgorithm("rings").error().message, "did you mean 'ring'"));
  EXPECT_TRUE(Contains(
      EstimateCollective(Collective::kAllGather, CollectiveAlgorithm::kTree, 1, Flat(4, 1e9, 0))
          .error()
          .message,
      "all-reduce algorithm"));
  EXPECT_TRUE(Contains(EstimateCollective(Collective::kAllReduce,
                                          CollectiveAlgorithm::kHierarchical, 1, Flat(4, 1e9, 0))
                           .error()
                           .message,
                       "whole nodes"));
}

TEST(PresetTest, ClusterNames) {
  const ClusterSpec two = ClusterFromPreset("h100x2").value();
  EXPECT_EQ(two.nodes, 2);
  EXPECT_EQ(two.devices_per_node, 8);
  EXPECT_EQ(two.device, "h100");
  EXPECT_EQ(two.hbm_bytes, int64_t{81559} << 20);  // nvidia-smi's 81559 MiB
  EXPECT_DOUBLE_EQ(two.peak_flops_per_s, 989.5e12);
  // H800: the usable links are the DeepSeek-V3 report's 160 GB/s NVLink and 50 GB/s IB.
  const ClusterSpec h800 = ClusterFromPreset("h800").value();
  EXPECT_NEAR(h800.intra_node.bandwidth_bytes_per_s, 160e9, 1);
  EXPECT_NEAR(h800.inter_node.bandwidth_bytes_per_s, 50e9, 1);
  EXPECT_TRUE(Contains(ClusterFromPreset("h10x2").error().message, "did you mean 'h100'"));
  EXPECT_TRUE(Contains(ClusterFromPreset("h100x0").error().message, ">= 1"));
  for (const char* name : {"a100", "h100", "h200", "h800", "b200"}) {
    EXPECT_TRUE(FindDevicePreset(name).ok()) << name;
  }
}

}  // namespace
}  // namespace stagecraft

namespace stagecraft {
namespace {

// Ring attention's overlap condition (reference facts §4; Liu et al., "Ring Attention", 2023):
// with blocks of c tokens a step computes 4c²h FLOPs and passes 4ch bytes, so it hides its
// transfer iff c >= F/B. A100 numbers: F = 312 TFLOP/s, B = 246.6 GB/s (A100's
// NVLink at the default usable share) → F/B = 1265.2 tokens; h = 8192, no latency. Exact threshold:
// ±1 token.
TEST(RingAttentionTest, OverlapConditionIsBlockSizeAtLeastFOverB) {
  const double flops = 312e12;
  const LinkSpec link{Time(), 300e9 * kNvlinkEfficiency};
  const double threshold = flops / link.bandwidth_bytes_per_s;
  const double h = 8192;
  auto exposed = [&](double c) {
    return RingAttentionExposed(4, 4 * c * c * h, flops, 4 * c * h, link);
  };
  EXPECT_EQ(exposed(std::ceil(threshold) + 1), Time());
  EXPECT_GT(exposed(std::floor(threshold) - 1), Time());
  EXPECT_EQ(exposed(4 * threshold), Time());
  // Below the threshold the exposed time is (cp − 1)(transfer − compute).
  const double c = 512;
  const double per_step = 4 * c * h / link.bandwidth_bytes_per_s - 4 * c * c * h / flops;
  EXPECT_NEAR(static_cast<double>(exposed(c).ns()), 3 * per_step * 1e9, 1.0);
  EXPECT_EQ(RingAttentionExposed(1, 1, 1, 1e12, link), Time());
}

}  // namespace
}  // namespace stagecraft
