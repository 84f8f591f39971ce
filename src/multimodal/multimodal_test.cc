#include <gtest/gtest.h>

#include "multimodal/context_parallel.h"
#include "multimodal/contrastive.h"
#include "multimodal/engram.h"
#include "multimodal/image_tokens.h"

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

// Image-token draws: within the range, deterministic per (seed, stream), independent streams
// differ, and a uniform draw's sample mean is near the exact mean (4096 draws: the standard
// error is 960/sqrt(12·4096) ≈ 4.3 tokens; ±20 is > 4 standard errors).
TEST(ImageTokensTest, DrawsAreInRangeAndDeterministic) {
  auto dist = ParseImageTokens("uniform:64-1024");
  ASSERT_TRUE(dist.ok());
  const std::vector<int32_t> a = DrawImageTokens(dist.value(), 4096, 3);
  EXPECT_EQ(a, DrawImageTokens(dist.value(), 4096, 3));
  EXPECT_NE(a, DrawImageTokens(dist.value(), 4096, 4));
  double sum = 0;
  for (int32_t t : a) {
    EXPECT_GE(t, 64);
    EXPECT_LE(t, 1024);
    sum += t;
  }
  EXPECT_NEAR(sum / 4096, MeanImageTokens(dist.value()), 20.0);
  EXPECT_DOUBLE_EQ(MeanImageTokens(dist.value()), 544.0);
}

TEST(ImageTokensTest, ChoicesFollowTheirWeights) {
  auto dist = ParseImageTokens("choices:256x3,1024");
  ASSERT_TRUE(dist.ok());
  EXPECT_EQ(FormatImageTokens(dist.value()), "choices:256x3,1024");
  EXPECT_DOUBLE_EQ(MeanImageTokens(dist.value()), (3 * 256 + 1024) / 4.0);
  int64_t small = 0;
  for (int32_t t : DrawImageTokens(dist.value(), 4000, 0)) {
    ASSERT_TRUE(t == 256 || t == 1024);
    small += t == 256;
  }
  // Expect 3000 of 4000 (binomial standard deviation ≈ 27; ±150 is > 5 of them).
  EXPECT_NEAR(static_cast<double>(small), 3000.0, 150.0);
}

TEST(ImageTokensTest, BadSpellingsAreErrors) {
  for (const char* text : {"", "fixed", "fixed:0", "uniform:9", "uniform:10-5", "gauss:3",
                           "choices:256x0", "choices:a", "fixed:12abc"}) {
    auto dist = ParseImageTokens(text);
    EXPECT_FALSE(dist.ok()) << text;
  }
  auto fixed = ParseImageTokens("fixed:576");
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(DrawImageTokens(fixed.value(), 3, 0), (std::vector<int32_t>{576, 576, 576}));
}

}  // namespace
}  // namespace stagecraft
