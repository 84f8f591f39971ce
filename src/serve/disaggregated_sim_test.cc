#include "serve/disaggregated_sim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "hardware/presets.h"
#include "testing/llama70b_replica.h"
#include "testing/models.h"

namespace stagecraft {
namespace {

ReplicaModel Pool(int32_t instances) { return Llama70bTp8Replica("h100x4", instances); }

// One request alone: its first token comes from the prefill pool; its KV then moves (the
// transfer's seconds, rounded to ns) and the decode pool runs its other tokens back to back.
// So its end-to-end latency is the TTFT plus the transfer plus the decode pool's iterations.
TEST(DisaggregatedSimTest, OneRequestIsPrefillThenTransferThenDecode) {
  const ReplicaModel prefill = Pool(1);
  const ReplicaModel decode = Pool(1);
  Workload workload;
  workload.requests = 1;
  workload.prompt = {2048, 2048};
  workload.output = {32, 32};
  std::vector<IterationRecord> iterations;
  auto run =
      SimulateDisaggregated(prefill, decode, workload, Routing::kRoundRobin, Slo{}, &iterations);
  ASSERT_TRUE(run.ok()) << run.error().message;
  const ServeStats& stats = run.value().stats;
  ASSERT_EQ(stats.requests, 1);
  EXPECT_EQ(run.value().decode.requests, 1);
  EXPECT_EQ(iterations.size(), 31u);  // the 31 tokens after the prefill's
  int64_t decoding_ns = 0;
  for (const IterationRecord& record : iterations) decoding_ns += record.end_ns - record.start_ns;
  const int64_t transfer_ns = std::llround(KvTransferSeconds(prefill, 2048) * 1e9);
  EXPECT_GT(transfer_ns, 0);
  EXPECT_DOUBLE_EQ(run.value().transfer_max_s, KvTransferSeconds(prefill, 2048));
  EXPECT_NEAR(stats.e2e_s.p50,
              stats.ttft_s.p50 + static_cast<double>(transfer_ns + decoding_ns) * 1e-9, 1e-9);
  // TPOT counts from the first token: the transfer, then 31 decode steps.
  EXPECT_NEAR(stats.tpot_s.p50, static_cast<double>(transfer_ns + decoding_ns) * 1e-9 / 31, 1e-9);
  // The gaps between tokens: the first from the prefill pool's first token over the transfer
  // to the first decode step's end, then one decode step each.
  const double first_gap_s =
      static_cast<double>(transfer_ns + iterations[0].end_ns - iterations[0].start_ns) * 1e-9;
  EXPECT_NEAR(stats.itl_s.p99, first_gap_s, 1e-12);
  EXPECT_NEAR(stats.itl_s.mean, stats.tpot_s.mean, 1e-12);
}

// A request of one output token is done at the prefill: it never reaches the decode pool.
TEST(DisaggregatedSimTest, OneTokenOutputsStayOnThePrefillPool) {
  Workload workload;
  workload.requests = 20;
  workload.rate_rps = 5;
  workload.output = {1, 1};
  auto run = SimulateDisaggregated(Pool(1), Pool(1), workload, Routing::kRoundRobin, Slo{});
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run.value().decode.requests, 0);
  EXPECT_EQ(run.value().stats.ttft_sorted_s, run.value().stats.e2e_sorted_s);
}

// DistServe's argument (§2.2): colocated, a prompt's prefill runs in the same iterations as the
// others' decode steps and slows them; apart, decode steps never carry a prefill. At the same
// load on the same GPUs (two instances each), one decode instance fed by one prefill instance
// gives a lower P90 TPOT than two colocated replicas; the prompts queue on the one prefill
// instance instead (a higher P90 TTFT), the trade the placement's sizing settles (serve-plan).
TEST(DisaggregatedSimTest, SeparatePoolsTradeTtftForTpot) {
  Workload workload;
  workload.requests = 1000;
  workload.rate_rps = 4;
  workload.prompt = {512, 2048};
  workload.output = {64, 256};
  auto colocated = SimulateServing(Pool(2), workload, Routing::kLeastOutstanding, Slo{});
  ASSERT_TRUE(colocated.ok());
  auto apart = SimulateDisaggregated(Pool(1), Pool(1), workload, Routing::kLeastOutstanding, Slo{});
  ASSERT_TRUE(apart.ok()) << apart.error().message;
  EXPECT_EQ(apart.value().stats.requests, colocated.value().requests);
  EXPECT_LT(apart.value().stats.tpot_s.p90, colocated.value().tpot_s.p90);
  EXPECT_GT(apart.value().stats.ttft_s.p90, colocated.value().ttft_s.p90);
  EXPECT_DOUBLE_EQ(apart.value().stats.goodput_rps_per_gpu, apart.value().stats.goodput_rps / 16);
}

}  // namespace
}  // namespace stagecraft
