#include <gtest/gtest.h>

#include "commands/serve_command.h"
#include "report/svg_plot.h"

namespace stagecraft {
namespace {

// Llama-3-70B (huggingface.co/meta-llama/Meta-Llama-3-70B config.json) on one H100 node.
constexpr const char* kConfig = R"(model:
  name: llama-3-70b
  type: transformer
  transformer:
    layers: 80
    hidden: 8192
    heads: 64
    kv_heads: 8
    ffn_hidden: 28672
    vocab: 128256
    swiglu: true
    causal: true
    tied_embeddings: false
    bias: false
    learned_positions: false
cluster:
  preset: h100
)";

ServePlanSpec Spec(const std::string& slo) {
  ServePlanSpec spec;
  spec.run.config_path = "llama.yaml";
  spec.run.config_text = kConfig;
  spec.gpus = 8;
  spec.slo = slo;
  spec.requests = 200;
  return spec;
}

// The planner as the library runs it: the flags of `spec` as serve-plan's setup.
Result<ServePlanResult> PlanServing(const ServePlanSpec& spec) {
  auto run = ResolveRun(spec.run);
  if (!run.ok()) return run.error();
  auto slo = ParsePercentileSlo(spec.slo);
  if (!slo.ok()) return slo.error();
  ServePlanSetup setup;
  setup.gpus = spec.gpus;
  setup.slo = slo.value();
  setup.workload.requests = spec.requests;
  setup.workload.seed = spec.seed;
  setup.workload.prompt = ParseLengthDist(spec.prompt_tokens, "--prompt-tokens").value();
  setup.workload.output = ParseLengthDist(spec.output_tokens, "--output-tokens").value();
  if (spec.concurrency) {
    setup.workload.client = Workload::Client::kClosed;
    setup.workload.concurrency = *spec.concurrency;
  }
  const Config& config = run.value().config;
  return PlanServing(config.model, config.cluster, setup);
}

// Every plan's rate meets both bounds when simulated again at its per-replica share, the plans
// come best first, and every candidate is either a plan or a counted rejection.
TEST(ServePlanTest, PlansMeetTheSloAndAreRankedByGoodputPerGpu) {
  const ServePlanSpec spec = Spec("ttft_p90=0.4s,tpot_p90=40ms");
  auto result = PlanServing(spec);
  ASSERT_TRUE(result.ok()) << result.error().message;
  const ServePlanResult& plan = result.value();
  ASSERT_FALSE(plan.plans.empty());
  int64_t rejected = 0;
  for (const auto& [reason, count] : plan.rejections) rejected += count;
  EXPECT_EQ(rejected + static_cast<int64_t>(plan.plans.size()), plan.candidates);
  for (size_t rank = 1; rank < plan.plans.size(); ++rank) {
    EXPECT_GE(plan.plans[rank - 1].goodput_rps_per_gpu, plan.plans[rank].goodput_rps_per_gpu);
  }
  auto cluster = ResolveRun(spec.run);
  ASSERT_TRUE(cluster.ok());
  for (const ServePlan& best : plan.plans) {
    if (best.disaggregated) continue;  // DisaggregatedPlansSplitTheGpus
    ServeShape one = best.shape;
    one.replicas = 1;
    EngineOptions engine;  // the plan's batch limits (searched for the best layouts)
    engine.token_budget = best.token_budget;
    engine.max_seqs = best.max_seqs;
    auto replica = BuildReplicaModel(cluster.value().config.model.transformer,
                                     cluster.value().config.cluster, one, engine);
    ASSERT_TRUE(replica.ok());
    Workload workload;
    workload.requests = spec.requests;
    workload.rate_rps = best.rate_rps / best.shape.replicas;
    workload.requests = ProbeRequests(workload, workload.rate_rps, 0.4, 0.04);
    auto stats = SimulateServing(replica.value(), workload, Routing::kRoundRobin, Slo{});
    ASSERT_TRUE(stats.ok());
    EXPECT_LE(stats.value().ttft_s.p90, 0.4);
    EXPECT_LE(stats.value().tpot_s.p90, 0.04);
    EXPECT_DOUBLE_EQ(stats.value().tpot_s.p90, best.tpot_s);
  }
}

// The Pareto front of the SVG holds only probes within the SLO (crossed-out ones are never on
// it), and every plan's probes include its chosen rate.
TEST(ServePlanTest, ParetoFrontHoldsOnlyProbesWithinTheSlo) {
  auto result = PlanServing(Spec("ttft_p90=0.4s,tpot_p90=40ms"));
  ASSERT_TRUE(result.ok());
  std::vector<Series> series;
  for (const ServePlan& plan : result.value().plans) {
    if (plan.disaggregated) continue;
    Series one;
    bool chosen = false;
    for (const RateProbe& probe : plan.probes) {
      one.points.push_back(
          {.x = probe.tpot_s, .y = 1 / probe.rate_rps, .label = "", .over = !probe.meets});
      chosen = chosen || (probe.meets && probe.rate_rps == plan.rate_rps);
    }
    EXPECT_TRUE(chosen);
    series.push_back(one);
  }
  for (const PlotPoint& point : ParetoFront(series)) EXPECT_LE(point.x, 0.04);
  EXPECT_NE(FormatServePlanSvg(result.value()).find("misses the SLO"), std::string::npos);
}

// A disaggregated plan splits whole instances into prefill and decode, serves the slower
// phase's rate, and its P90s, those of the placement simulated end to end at that rate, are
// within the bounds.
TEST(ServePlanTest, DisaggregatedPlansSplitTheGpus) {
  auto result = PlanServing(Spec("ttft_p90=0.4s,tpot_p90=40ms"));
  ASSERT_TRUE(result.ok());
  int disaggregated = 0;
  for (const ServePlan& plan : result.value().plans) {
    if (!plan.disaggregated) continue;
    ++disaggregated;
    EXPECT_GE(plan.prefill_instances, 1);
    EXPECT_GE(plan.decode_instances, 1);
    EXPECT_EQ(plan.shape.replicas, plan.prefill_instances + plan.decode_instances);
    EXPECT_LE(plan.shape.gpus(), 8);
    EXPECT_NEAR(plan.goodput_rps_per_gpu * plan.shape.gpus(), plan.rate_rps, 1e-9);
    EXPECT_LE(plan.ttft_s, 0.4);
    EXPECT_LE(plan.tpot_s, 0.04);
    EXPECT_GT(plan.kv_transfer_s, 0.0);
  }
  EXPECT_GT(disaggregated, 0);
}

TEST(ServePlanTest, AnUnreachableTpotIsInfeasibleAndNamed) {
  Transcript transcript;
  const Status status = RunServePlan(Spec("ttft_p90=10s,tpot_p90=1ms"), transcript);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, ErrorKind::kInfeasible);
  EXPECT_NE(status.error().message.find("binding: tpot_p90"), std::string::npos);
  EXPECT_EQ(status.error().message.find("ttft_p90:"), std::string::npos);
}

// --slo: ttft and tpot alone bound each request (serve); percentile=P or the P90 keys judge
// that percentile (serve-plan needs one); a bad percentile, an unknown key or the two syntaxes
// mixed are errors that say what to write.
TEST(ServePlanTest, PercentileSloParses) {
  auto per_request = ParseSlo("ttft=2s,tpot=200ms");
  ASSERT_TRUE(per_request.ok());
  EXPECT_EQ(per_request.value().percentile, 0);
  auto at_p99 = ParseSlo("ttft=2s,tpot=200ms,percentile=99");
  ASSERT_TRUE(at_p99.ok()) << at_p99.error().message;
  EXPECT_DOUBLE_EQ(at_p99.value().ttft_s, 2.0);
  EXPECT_DOUBLE_EQ(at_p99.value().tpot_s, 0.2);
  EXPECT_EQ(at_p99.value().percentile, 99);
  auto p90_keys = ParsePercentileSlo("ttft_p90=0.4s,tpot_p90=40ms");
  ASSERT_TRUE(p90_keys.ok());
  EXPECT_EQ(p90_keys.value().percentile, 90);
  EXPECT_DOUBLE_EQ(p90_keys.value().tpot_s, 0.04);
  auto at_p50 = ParsePercentileSlo("percentile=50,tpot=30ms,ttft=1s");
  ASSERT_TRUE(at_p50.ok());
  EXPECT_EQ(at_p50.value().percentile, 50);
  EXPECT_DOUBLE_EQ(at_p50.value().ttft_s, 1.0);
  const auto error = [](const Result<PercentileSlo>& result) {
    return result.ok() ? std::string("ok") : result.error().message;
  };
  EXPECT_NE(error(ParsePercentileSlo("ttft=1s,tpot=30ms")).find("add percentile=50, 90 or 99"),
            std::string::npos);
  EXPECT_NE(error(ParsePercentileSlo("ttft=1s,tpot=30ms,percentile=95"))
                .find("percentile=95: expected 50, 90 or 99"),
            std::string::npos);
  EXPECT_NE(error(ParsePercentileSlo("ttft_p90=1s,tpot_p90=30ms,percentile=99"))
                .find("not with ttft, tpot or percentile"),
            std::string::npos);
  EXPECT_NE(error(ParsePercentileSlo("ttft_p99=1s,tpot_p99=30ms")).find("only P90 has keys"),
            std::string::npos);
  EXPECT_NE(error(ParsePercentileSlo("ttft=1s,tpot=30ms,percentil=99"))
                .find("did you mean 'percentile'?"),
            std::string::npos);
  EXPECT_FALSE(ParseSlo("ttft=2s,tpot=200ms,percentile=").ok());
}

// At a closed-loop client each layout runs once at the concurrency, all its replicas: a plan
// meets the SLO's P99 and its figures are that run's (simulated again here), the plans come
// best first by output tokens per second per GPU, a layout over the bound is a counted
// rejection, and no placement is disaggregated.
TEST(ServePlanTest, ClosedLoopRanksByOutputTokensPerGpuWithinTheSlo) {
  ServePlanSpec spec = Spec("ttft=1s,tpot=25ms,percentile=99");
  spec.concurrency = 32;
  auto result = PlanServing(spec);
  ASSERT_TRUE(result.ok()) << result.error().message;
  const ServePlanResult& plan = result.value();
  ASSERT_FALSE(plan.plans.empty());
  EXPECT_EQ(plan.percentile, 99);
  int64_t rejected = 0;
  for (const auto& [reason, count] : plan.rejections) rejected += count;
  EXPECT_EQ(rejected + static_cast<int64_t>(plan.plans.size()), plan.candidates);
  EXPECT_GT(plan.rejections.count("misses the SLO at the concurrency"), 0u);
  for (size_t rank = 1; rank < plan.plans.size(); ++rank) {
    EXPECT_GE(plan.plans[rank - 1].output_tokens_per_s_per_gpu,
              plan.plans[rank].output_tokens_per_s_per_gpu);
  }
  auto run = ResolveRun(spec.run);
  ASSERT_TRUE(run.ok());
  for (const ServePlan& best : plan.plans) {
    EXPECT_FALSE(best.disaggregated);
    EXPECT_LE(best.ttft_s, 1.0);
    EXPECT_LE(best.tpot_s, 0.025);
    EngineOptions engine;
    engine.token_budget = best.token_budget;
    engine.max_seqs = best.max_seqs;
    auto replica =
        BuildReplicaModel(run.value().config.model, run.value().config.cluster, best.shape, engine);
    ASSERT_TRUE(replica.ok());
    Workload workload;
    workload.client = Workload::Client::kClosed;
    workload.concurrency = 32;
    workload.requests = spec.requests;
    auto stats = SimulateServing(replica.value(), workload, Routing::kLeastOutstanding, Slo{});
    ASSERT_TRUE(stats.ok());
    EXPECT_DOUBLE_EQ(stats.value().tpot_s.p99, best.tpot_s);
    EXPECT_DOUBLE_EQ(stats.value().output_tokens_per_s / best.shape.gpus(),
                     best.output_tokens_per_s_per_gpu);
  }
  // A looser bound keeps more layouts, and the best of them serves at least as many tokens.
  spec.slo = "ttft=1s,tpot=1s,percentile=99";
  auto loose = PlanServing(spec);
  ASSERT_TRUE(loose.ok());
  EXPECT_GT(loose.value().plans.size(), plan.plans.size());
  EXPECT_GE(loose.value().plans.front().output_tokens_per_s_per_gpu,
            plan.plans.front().output_tokens_per_s_per_gpu);
}

}  // namespace
}  // namespace stagecraft
