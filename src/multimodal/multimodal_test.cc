#include <gtest/gtest.h>

#include "multimodal/context_parallel.h"
#include "multimodal/contrastive.h"
#include "multimodal/engram.h"

namespace stagecraft {
namespace {

// Peak logits: SigLIP's ring scales as b×b (independent of D), the local loss as b×B, the
// global loss as B×B; exact.
TEST(ContrastiveTest, LogitMemoryScaling) {
  for (const int32_t ranks : {8, 64}) {
    for (const int64_t b : {int64_t{32}, int64_t{256}}) {
      const double big = static_cast<double>(ranks) * b;
      EXPECT_DOUBLE_EQ(
          ContrastiveLossCost(ContrastiveLoss::kSigLipRing, ranks, b, 1024, 2).logits_bytes,
          4.0 * b * b);
      EXPECT_DOUBLE_EQ(ContrastiveLossCost(ContrastiveLoss::kLocal, ranks, b, 1024, 2).logits_bytes,
                       4.0 * b * big);
      EXPECT_DOUBLE_EQ(
          ContrastiveLossCost(ContrastiveLoss::kGlobal, ranks, b, 1024, 2).logits_bytes,
          4.0 * big * big);
    }
  }
}

// Forward communication per rank, 2·(D−1)·b·e·bytes: received by the gathers (two modalities),
// sent plus received by the ring (one modality).
TEST(ContrastiveTest, CommunicationPerRank) {
  const int32_t d = 16;
  const int64_t b = 128, e = 1024;
  const double expected = 2.0 * (d - 1) * b * e * 2;
  for (ContrastiveLoss loss : {ContrastiveLoss::kGlobal, ContrastiveLoss::kLocal}) {
    EXPECT_DOUBLE_EQ(ContrastiveLossCost(loss, d, b, e, 2).received_bytes, expected);
  }
  const ContrastiveCost ring = ContrastiveLossCost(ContrastiveLoss::kSigLipRing, d, b, e, 2);
  EXPECT_DOUBLE_EQ(ring.received_bytes + ring.sent_bytes, expected);
  EXPECT_EQ(ring.steps, d - 1);
  EXPECT_FALSE(ParseContrastiveLoss("siglip").ok());
  EXPECT_EQ(ParseContrastiveLoss("siglip-ring").value(), ContrastiveLoss::kSigLipRing);
}

// csa2.md: 24 lookups x 264 bytes per token; per-owner table memory over G owners.
TEST(EngramTest, LookupBytesAndOwnerMemory) {
  const EngramSpec spec;
  EXPECT_EQ(EngramRowBytes(spec), 264);
  EXPECT_EQ(EngramLookupBytesPerToken(spec), 24 * 264);
  const double total = (384006168.0 + 384016682.0) * 264;  // ≈ 202.7 GB over both tables
  for (const int32_t g : {8, 16, 32, 64, 128}) {
    EXPECT_NEAR(static_cast<double>(EngramOwnerBytes(spec, g)), total / g, 2 * 264.0) << g;
  }
  // ≈98B parameters per table (csa2.md): 384M rows x 256 values.
  ASSERT_EQ(spec.table_rows.size(), 2u);
  EXPECT_NEAR(static_cast<double>(spec.table_rows[0]) * spec.values_per_row / 1e9, 98.3, 0.1);
}

// The indexer scan over contiguous shards: rank k carries (2k + 1)/cp of the average, the last
// (2cp − 1)/cp; zig-zag chunks even it out (csa2.md). 1M tokens, m 4, tolerance 0.1%.
TEST(ContextParallelTest, IndexerScanBalance) {
  for (const int32_t cp : {2, 4, 8, 16}) {
    const auto contiguous = IndexerScanLoad(1 << 20, 4, cp, false).value();
    EXPECT_NEAR(contiguous.back(), (2.0 * cp - 1) / cp, 1e-3) << cp;
    EXPECT_NEAR(contiguous.front(), 1.0 / cp, 1e-3) << cp;
    const auto zigzag = IndexerScanLoad(1 << 20, 4, cp, true).value();
    for (double load : zigzag) EXPECT_NEAR(load, 1.0, 1e-3) << cp;
  }
  EXPECT_FALSE(IndexerScanLoad(1000, 4, 3, false).ok());  // 333 tokens: not whole groups
  EXPECT_TRUE(IndexerScanLoad(4096, 4, 8, true).ok());    // 256-token chunks
  EXPECT_FALSE(IndexerScanLoad(4096, 4, 0, true).ok());
}

}  // namespace
}  // namespace stagecraft
