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

}  // namespace
}  // namespace stagecraft
