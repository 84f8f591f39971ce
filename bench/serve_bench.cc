// Serving's speed targets (issue 15):
// - the request simulator, 100,000 requests on 8 replicas in < 2 s: Llama-3-70B TP 8, eight
//   replicas on h100x8, Poisson arrivals at 80% of what the replicas sustain, prompts 128-2048
//   and outputs 16-512 tokens, continuous batching and chunked prefill;
// - serve-plan over Vidur's config explorer space (4,374 configurations) in < 60 s on 2 cores:
//   `stagecraft serve-plan --space vidur --jobs 2`, the CLI's own code path.
#include <benchmark/benchmark.h>

#include "commands/serve_command.h"
#include "hardware/presets.h"
#include "serve/request_sim.h"
#include "serve/serve_plan.h"
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

void BM_ServePlanVidurSpace(benchmark::State& state) {
  ServePlanSpec spec;
  spec.space = "vidur";
  spec.space_traces = STAGECRAFT_EXAMPLES_DIR "/vidur";
  spec.jobs = static_cast<int32_t>(state.range(0));
  for (auto _ : state) {
    Transcript transcript;
    const Status status = RunServePlan(spec, transcript);
    if (!status.ok()) {
      state.SkipWithError(status.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(transcript);
  }
}
BENCHMARK(BM_ServePlanVidurSpace)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace stagecraft
