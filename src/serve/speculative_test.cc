#include "serve/speculative.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "hardware/presets.h"
#include "serve/request_sim.h"
#include "testing/llama70b_replica.h"
#include "testing/models.h"

namespace stagecraft {
namespace {

EngineOptions Speculating(int32_t tokens, double acceptance, EngineOptions engine = {}) {
  engine.speculative_tokens = tokens;
  engine.acceptance_rate = acceptance;
  return engine;
}

ReplicaModel Replica(EngineOptions engine = {}) { return Llama70bTp8Replica("h100", 1, engine); }

ServeStats Simulate(const ReplicaModel& replica, const Workload& workload,
                    std::vector<IterationRecord>* records = nullptr,
                    std::vector<RequestTimes>* times = nullptr) {
  auto stats = SimulateServing(replica, workload, Routing::kRoundRobin, Slo{}, records, times);
  EXPECT_TRUE(stats.ok()) << stats.error().message;
  return stats.value();
}

double TokensPerStep(const ServeStats& stats) {
  return static_cast<double>(stats.decode_step_tokens) / static_cast<double>(stats.decode_steps);
}

// Leviathan et al. 2023, eq. 1: (1 - A^(K+1)) / (1 - A); K + 1 when every draft is accepted.
TEST(SpeculativeTest, ExpectedTokensPerStepIsLeviathansFormula) {
  EXPECT_NEAR(ExpectedTokensPerStep(3, 0.8), 2.952, 1e-12);  // (1 - 0.4096) / 0.2
  EXPECT_NEAR(ExpectedTokensPerStep(1, 0.9), 1.9, 1e-12);
  EXPECT_EQ(ExpectedTokensPerStep(4, 1.0), 5.0);
  EXPECT_NEAR(ExpectedTokensPerStep(16, 0.5), 2.0 - std::pow(0.5, 16), 1e-12);
}

// The drawn acceptances average the formula: 200,000 steps of K = 3 at A = 0.8 (standard
// deviation of a step's tokens about 1.2, so of the mean about 0.003).
TEST(SpeculativeTest, DrawnAcceptancesAverageTheFormula) {
  Speculator speculator(Speculating(3, 0.8), /*seed=*/7);
  constexpr int kSteps = 200'000;
  double tokens = 0;
  for (int step = 0; step < kSteps; ++step) tokens += 1 + speculator.Accept(3);
  EXPECT_NEAR(tokens / kSteps, ExpectedTokensPerStep(3, 0.8), 0.015);
  Speculator always(Speculating(3, 1.0), 7);
  for (int step = 0; step < 100; ++step) EXPECT_EQ(always.Accept(3), 3);
  EXPECT_EQ(always.Drafts(/*generated=*/1, /*output=*/64), 3);
  EXPECT_EQ(always.Drafts(62, 64), 1);  // no draft past the last output token
  EXPECT_EQ(always.Drafts(64, 64), 0);
}

// In a run the measured tokens per decode step match the formula: 16 requests of 4096 output
// tokens (about 1,390 steps each; only the last step or two of each run short of drafts).
TEST(SpeculativeTest, ARunEmitsTheFormulasTokensPerStep) {
  for (const auto& [tokens, acceptance] : {std::pair{3, 0.8}, std::pair{1, 0.9}, {5, 0.6}}) {
    const ReplicaModel replica = Replica(Speculating(tokens, acceptance));
    Workload workload;
    workload.client = Workload::Client::kOffline;
    workload.requests = 16;
    workload.output = {4096, 4096};
    const ServeStats stats = Simulate(replica, workload);
    EXPECT_NEAR(TokensPerStep(stats), ExpectedTokensPerStep(tokens, acceptance),
                0.02 * ExpectedTokensPerStep(tokens, acceptance))
        << "K " << tokens << " A " << acceptance;
  }
}

// Every request emits exactly its output tokens: the first from its prefill, the rest from its
// decode steps, the last step's drafts cut to what is left (output lengths 1 to 100).
TEST(SpeculativeTest, EveryRequestEmitsExactlyItsOutput) {
  const ReplicaModel replica = Replica(Speculating(4, 0.9));
  Workload workload;
  workload.rate_rps = 8;
  workload.requests = 400;
  workload.prompt = {16, 2000};
  workload.output = {1, 100};
  std::vector<RequestTimes> times;
  const ServeStats stats = Simulate(replica, workload, nullptr, &times);
  int64_t outputs = 0;
  for (const RequestTimes& request : times) {
    outputs += request.output;
    EXPECT_GE(request.finish_ns, request.first_token_ns);
  }
  EXPECT_EQ(stats.requests, 400);
  EXPECT_EQ(stats.decode_step_tokens + stats.requests, outputs);
  EXPECT_GT(TokensPerStep(stats), 2.0);
}

// At low load a decode step is memory-bound: verifying 2 tokens costs about what 1 did, and the
// MTP step (one layer and the head) is small, so K = 1 at A = 0.9 (1.9 tokens per step) cuts the
// TPOT well below the plain run's, but not below half of it (a step emits at most 2 tokens).
TEST(SpeculativeTest, SpeculationLowersTheTpotAtLowLoad) {
  Workload workload;
  workload.rate_rps = 0.5;
  workload.requests = 100;
  const ServeStats plain = Simulate(Replica(), workload);
  const ServeStats spec = Simulate(Replica(Speculating(1, 0.9)), workload);
  EXPECT_LT(spec.tpot_s.mean, 0.65 * plain.tpot_s.mean);
  EXPECT_GT(spec.tpot_s.mean, 0.5 * plain.tpot_s.mean);
  EXPECT_EQ(plain.decode_step_tokens, plain.decode_steps);  // one token per step without
}

// One request at A = 1, K = 1, output 5: the prefill (then a draft step), and two verify steps
// of 2 tokens, the first followed by a draft step, the last proposing nothing (its output done).
TEST(SpeculativeTest, OneRequestPaysItsVerifyAndDraftSteps) {
  const ReplicaModel replica = Replica(Speculating(1, 1.0));
  ASSERT_NE(replica.draft, nullptr);
  Workload workload;
  workload.requests = 1;
  workload.prompt = {512, 512};
  workload.output = {5, 5};
  std::vector<IterationRecord> records;
  const ServeStats stats = Simulate(replica, workload, &records);
  ASSERT_EQ(stats.iterations, 3);
  EXPECT_EQ(stats.decode_steps, 2);
  EXPECT_EQ(stats.decode_step_tokens, 4);
  EXPECT_EQ(records[1].decode_tokens, 2);
  const auto rounded = [](double seconds) { return std::llround(seconds * 1e9); };
  IterationWork prefill;
  AddSequence(replica, 512, 0, true, prefill);
  const DraftProposal after_prefill[] = {{.context = 512, .tokens = 1}};
  int64_t expected = rounded(IterationSeconds(replica, prefill).total_s +
                             DraftSeconds(*replica.draft, after_prefill));
  for (const double context : {512.0, 514.0}) {
    IterationWork verify;
    AddSequence(replica, 2, context, true, verify);
    verify.sequences += 1;
    const DraftProposal next[] = {{.context = context + 2, .tokens = context == 512 ? 1 : 0}};
    expected +=
        rounded(IterationSeconds(replica, verify).total_s + DraftSeconds(*replica.draft, next));
  }
  EXPECT_NEAR(stats.e2e_s.mean * 1e9, static_cast<double>(expected), 1.0);
}

// The token budget counts a speculating decode's K + 1 tokens (vLLM's scheduler counts the spec
// tokens): with a budget of 8 and K = 3, two decodes fill an iteration; without speculation
// four decodes take 4 tokens.
TEST(SpeculativeTest, TheTokenBudgetCountsTheDrafts) {
  EngineOptions engine;
  engine.token_budget = 8;
  Workload workload;
  workload.client = Workload::Client::kOffline;
  workload.requests = 4;
  workload.prompt = {8, 8};
  workload.output = {64, 64};
  for (const int32_t tokens : {0, 3}) {
    const ReplicaModel replica = Replica(Speculating(tokens, tokens > 0 ? 0.8 : 0, engine));
    std::vector<IterationRecord> records;
    Simulate(replica, workload, &records);
    int64_t most = 0;
    for (const IterationRecord& record : records) {
      EXPECT_LE(record.prefill_tokens + record.decode_tokens, 8);
      most = std::max(most, record.decode_tokens);
    }
    EXPECT_EQ(most, tokens > 0 ? 8 : 4);
  }
}

// A seed gives one run; another seed other acceptances; the arrivals and lengths are those of
// the run without speculation (the acceptances have their own generator).
TEST(SpeculativeTest, DeterministicForASeed) {
  const ReplicaModel replica = Replica(Speculating(3, 0.7));
  Workload workload;
  workload.rate_rps = 4;
  workload.requests = 200;
  workload.output = {16, 256};
  std::vector<RequestTimes> first, second, plain;
  const ServeStats one = Simulate(replica, workload, nullptr, &first);
  const ServeStats two = Simulate(replica, workload, nullptr, &second);
  EXPECT_EQ(one.decode_steps, two.decode_steps);
  EXPECT_EQ(one.tpot_sorted_s, two.tpot_sorted_s);
  for (size_t index = 0; index < first.size(); ++index) {
    EXPECT_EQ(first[index].finish_ns, second[index].finish_ns);
  }
  Simulate(Replica(), workload, nullptr, &plain);
  ASSERT_EQ(plain.size(), first.size());
  for (size_t index = 0; index < first.size(); ++index) {
    EXPECT_EQ(first[index].arrival_ns, plain[index].arrival_ns);
    EXPECT_EQ(first[index].output, plain[index].output);
  }
  workload.seed = 2;
  const ServeStats other = Simulate(replica, workload);
  EXPECT_NE(other.decode_steps, one.decode_steps);
}

// The MTP module's weights and KV sit on the last stage: one layer of 80 more per token of KV
// and its block and projection in weights, so the replica holds fewer tokens.
TEST(SpeculativeTest, TheMtpModuleTakesWeightsAndKv) {
  const ReplicaModel plain = Replica();
  const ReplicaModel spec = Replica(Speculating(2, 0.8));
  ASSERT_NE(spec.draft, nullptr);
  EXPECT_EQ(plain.draft, nullptr);
  EXPECT_DOUBLE_EQ(spec.draft->kv_bytes_per_token_per_gpu, plain.kv_bytes_per_token_per_gpu / 80);
  const TransformerSpec model = Llama3_70bSpec();
  const double projection = 2.0 * model.hidden * model.hidden;
  // The block, the projection and the norm before the shared head, in bf16 over tp 8.
  EXPECT_NEAR(spec.weight_bytes_per_gpu - plain.weight_bytes_per_gpu,
              (DecoderLayerParams(model) + projection + model.hidden) * 2 / 8, 1.0);
  EXPECT_LT(spec.kv_capacity_tokens, plain.kv_capacity_tokens);
  EXPECT_GT(spec.kv_capacity_tokens, 0.97 * plain.kv_capacity_tokens);
  // One decoder layer, and the projection among the once-per-iteration kernels.
  ASSERT_EQ(spec.draft->kernels.layers.size(), 1u);
  EXPECT_EQ(spec.draft->kernels.layers.front().count, 1);
  ASSERT_FALSE(spec.draft->kernels.once.empty());
  EXPECT_EQ(spec.draft->kernels.once.back().n, model.hidden / 8.0);
  EXPECT_EQ(spec.draft->kernels.once.back().k, 2.0 * model.hidden);
}

TEST(SpeculativeTest, FlagsAreChecked) {
  ModelSpec model;
  model.transformer = Llama3_70bSpec();
  EngineOptions engine;
  EXPECT_TRUE(ApplySpeculation(std::nullopt, std::nullopt, model, engine).ok());
  EXPECT_EQ(engine.speculative_tokens, 0);
  EXPECT_FALSE(ApplySpeculation(3, std::nullopt, model, engine).ok());
  EXPECT_FALSE(ApplySpeculation(std::nullopt, 0.8, model, engine).ok());
  EXPECT_FALSE(ApplySpeculation(0, 0.8, model, engine).ok());
  EXPECT_FALSE(ApplySpeculation(17, 0.8, model, engine).ok());
  EXPECT_FALSE(ApplySpeculation(3, 0.0, model, engine).ok());
  EXPECT_FALSE(ApplySpeculation(3, 1.01, model, engine).ok());
  EXPECT_FALSE(ApplySpeculation(3, std::nan(""), model, engine).ok());
  EXPECT_EQ(engine.speculative_tokens, 0);
  ASSERT_TRUE(ApplySpeculation(16, 1.0, model, engine).ok());
  EXPECT_EQ(engine.speculative_tokens, 16);
  EXPECT_EQ(engine.acceptance_rate, 1.0);
}

}  // namespace
}  // namespace stagecraft
