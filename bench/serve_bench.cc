// The request simulator's speed (issue 15: 100,000 requests on 8 replicas in < 2 s):
// Llama-3-70B TP 8, eight replicas on h100x8, Poisson arrivals at 80% of what the replicas
// sustain, prompts 128-2048 and outputs 16-512 tokens, continuous batching and chunked prefill.
#include <benchmark/benchmark.h>

#include "hardware/presets.h"
#include "serve/request_sim.h"
#include "serve/step_cost.h"
#include "testing/models.h"

namespace stagecraft {
namespace {

void BM_Serve100kRequests8Replicas(benchmark::State& state) {
  auto cluster = ClusterFromPreset("h100x8");
  auto replica =
      BuildReplicaModel(Llama3_70bSpec(), cluster.value(), {.tp = 8, .pp = 1, .replicas = 8}, {});
  if (!replica.ok()) {
    state.SkipWithError(replica.error().message.c_str());
    return;
  }
  Workload workload;
  workload.rate_rps = 8 * 6.0;  // about 6 rps per replica at these lengths
  workload.requests = 100'000;
  workload.prompt = {128, 2048};
  workload.output = {16, 512};
  for (auto _ : state) {
    auto stats = SimulateServing(replica.value(), workload, Routing::kLeastOutstanding, Slo{});
    if (!stats.ok()) {
      state.SkipWithError(stats.error().message.c_str());
      return;
    }
    state.counters["iterations"] = static_cast<double>(stats.value().iterations);
    state.counters["throughput_rps"] = stats.value().throughput_rps;
    state.counters["ttft_p99_ms"] = stats.value().ttft_s.p99 * 1e3;
    benchmark::DoNotOptimize(stats);
  }
}
BENCHMARK(BM_Serve100kRequests8Replicas)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace stagecraft
