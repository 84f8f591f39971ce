// The fault-tolerance Monte Carlo: 10,000 simulated runs of the Llama-3-scale case (30 days of
// training, MTTF 3.09 h, a 115 s interval, 0.6 s blocking, 189 s restart; doc/fault-tolerance.md)
// must take under a second (issue 14's acceptance).
#include <benchmark/benchmark.h>

#include "fault/monte_carlo.h"

namespace stagecraft {
namespace {

void BM_MonteCarloLlamaScale10k(benchmark::State& state) {
  MonteCarloSpec spec;
  spec.runs = 10000;
  spec.work_s = 30 * 86400.0;
  spec.interval_s = 115;
  spec.costs = CheckpointCosts{0.6, 51, 189};
  spec.mttf_s = 54.0 * 24.0 / 419.0 * 3600.0;  // Llama 3 Table 5: 419 interruptions, 54 days
  for (auto _ : state) {
    const MonteCarloResult result = SimulateFailures(spec);
    benchmark::DoNotOptimize(result.mean_ettr);
    ++spec.seed;
  }
}
BENCHMARK(BM_MonteCarloLlamaScale10k)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stagecraft
