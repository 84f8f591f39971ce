#include "serve/token_gaps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/splitmix.h"
#include "hardware/presets.h"
#include "testing/llama70b_replica.h"
#include "testing/models.h"

namespace stagecraft {
namespace {

// The histogram answers what the sorted sample of every gap would: nearest rank (the smallest
// value with at least p of the sample at or below it) and the mean, with equal gaps added in
// runs, apart, and both.
TEST(TokenGapsTest, PercentilesAreTheNearestRanksOfEveryGap) {
  const std::vector<int64_t> gaps_ns = {5, 5, 5, 1, 9, 5, 2, 2, 7, 5, 5, 1, 30, 5};
  TokenGaps gaps;
  for (int64_t gap : gaps_ns) gaps.Add(gap);
  std::vector<int64_t> sorted = gaps_ns;
  std::sort(sorted.begin(), sorted.end());
  const auto rank = [&](double p) {
    const size_t position = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
    return static_cast<double>(sorted[std::max<size_t>(position, 1) - 1]) * 1e-9;
  };
  const Percentiles summary = gaps.Summarize();
  EXPECT_EQ(gaps.count(), 14);
  EXPECT_DOUBLE_EQ(summary.p50, 5e-9);  // the 7th of 14
  EXPECT_DOUBLE_EQ(summary.p50, rank(0.50));
  EXPECT_DOUBLE_EQ(summary.p90, 9e-9);  // the 13th
  EXPECT_DOUBLE_EQ(summary.p90, rank(0.90));
  EXPECT_DOUBLE_EQ(summary.p99, 30e-9);  // the 14th
  EXPECT_NEAR(summary.mean, 87e-9 / 14, 1e-20);
  EXPECT_EQ(TokenGaps().Summarize().p99, 0.0);
}

// Past the batch merged at once (2^16 runs): 300,000 gaps drawn from SplitMix64, in runs of 1
// to 4 equal ones, give the percentiles and the mean of the sorted sample.
TEST(TokenGapsTest, ManyRunsMergeExactly) {
  SplitMix64 rng(7);
  TokenGaps gaps;
  std::vector<int64_t> sample;
  while (sample.size() < 300'000) {
    const int64_t gap = rng.NextInRange(0, 20'000);
    for (int64_t repeat = rng.NextInRange(1, 4); repeat > 0; --repeat) {
      gaps.Add(gap);
      sample.push_back(gap);
    }
  }
  std::sort(sample.begin(), sample.end());
  const auto rank = [&](double p) {
    const size_t position = static_cast<size_t>(std::ceil(p * static_cast<double>(sample.size())));
    return static_cast<double>(sample[std::max<size_t>(position, 1) - 1]) * 1e-9;
  };
  double sum = 0;
  for (int64_t gap : sample) sum += static_cast<double>(gap);
  const Percentiles summary = gaps.Summarize();
  EXPECT_EQ(gaps.count(), static_cast<int64_t>(sample.size()));
  EXPECT_DOUBLE_EQ(summary.p50, rank(0.50));
  EXPECT_DOUBLE_EQ(summary.p90, rank(0.90));
  EXPECT_DOUBLE_EQ(summary.p99, rank(0.99));
  EXPECT_NEAR(summary.mean, sum / static_cast<double>(sample.size()) * 1e-9, 1e-15);
}

ReplicaModel Llama70bTp8(EngineOptions engine) { return Llama70bTp8Replica("h100", 1, engine); }

// Two requests of 512 + 3 tokens at t = 0 on one replica with a 512-token budget, by hand:
// iteration 1 prefills A (A's first token at its end, e1); 2 decodes A and prefills 511 tokens
// of B (A's second token, e2); 3 decodes A (its last token, e3) and B's last prompt token (B's
// first token, e3); 4 and 5 decode B (e4, e5). The gaps between tokens are e2 - e1 and e3 - e2
// for A, e4 - e3 and e5 - e4 for B: four, the largest A's wait behind B's 511-token chunk.
// TPOT averages that stall with A's next gap, so the P99 ITL exceeds the P99 TPOT.
TEST(TokenGapsTest, TwoRequestsGapsByHand) {
  EngineOptions engine;
  engine.token_budget = 512;
  const ReplicaModel replica = Llama70bTp8(engine);
  Workload workload;
  workload.client = Workload::Client::kOffline;
  workload.requests = 2;
  workload.prompt = {512, 512};
  workload.output = {3, 3};
  std::vector<IterationRecord> iterations;
  auto run = SimulateServing(replica, workload, Routing::kRoundRobin, Slo{}, &iterations);
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_EQ(iterations.size(), 5u);
  EXPECT_EQ(iterations[0].prefill_tokens, 512);
  EXPECT_EQ(iterations[1].prefill_tokens, 511);
  std::vector<int64_t> ends;
  for (const IterationRecord& iteration : iterations) ends.push_back(iteration.end_ns);
  const double a_stall = static_cast<double>(ends[1] - ends[0]) * 1e-9;
  const double a_last = static_cast<double>(ends[2] - ends[1]) * 1e-9;
  const double b_first = static_cast<double>(ends[3] - ends[2]) * 1e-9;
  const double b_last = static_cast<double>(ends[4] - ends[3]) * 1e-9;
  std::vector<double> sorted = {a_stall, a_last, b_first, b_last};
  std::sort(sorted.begin(), sorted.end());
  const ServeStats& stats = run.value();
  // Nearest rank of 4: p50 the 2nd, p90 and p99 the 4th.
  EXPECT_DOUBLE_EQ(stats.itl_s.p50, sorted[1]);
  EXPECT_DOUBLE_EQ(stats.itl_s.p90, a_stall);
  EXPECT_DOUBLE_EQ(stats.itl_s.p99, a_stall);
  EXPECT_NEAR(stats.itl_s.mean, (a_stall + a_last + b_first + b_last) / 4, 1e-15);
  EXPECT_NEAR(stats.tpot_s.p99, (a_stall + a_last) / 2, 1e-15);
  EXPECT_GT(stats.itl_s.p99, stats.tpot_s.p99);
  // Every prompt and output token over the span from t = 0 to B's last token.
  EXPECT_DOUBLE_EQ(stats.total_tokens_per_s,
                   (2 * 512 + 2 * 3) / (static_cast<double>(ends[4]) * 1e-9));
  EXPECT_DOUBLE_EQ(stats.output_tokens_per_s, 6 / (static_cast<double>(ends[4]) * 1e-9));
}

// The gaps of a request sum to its last token less its first, so with every request of the
// same output length the mean ITL is the mean TPOT; preemptions (recompute) and chunked
// prefills only move gaps around.
TEST(TokenGapsTest, MeanGapIsTheMeanTpotAtOneOutputLength) {
  EngineOptions engine;
  engine.token_budget = 1024;
  const ReplicaModel replica = Llama70bTp8(engine);
  Workload workload;
  workload.rate_rps = 20;
  workload.requests = 400;
  workload.prompt = {200, 6000};
  workload.output = {40, 40};
  auto run = SimulateServing(replica, workload, Routing::kRoundRobin, Slo{});
  ASSERT_TRUE(run.ok()) << run.error().message;
  const ServeStats& stats = run.value();
  EXPECT_NEAR(stats.itl_s.mean, stats.tpot_s.mean, 1e-12);
  EXPECT_GT(stats.itl_s.p99, stats.tpot_s.p99);
}

}  // namespace
}  // namespace stagecraft
