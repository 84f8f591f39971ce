#include "analysis/closed_form.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/critical_path.h"
#include "lower/lower.h"
#include "schedule/generator.h"
#include "testing/test_util.h"

namespace stagecraft {
namespace {

Time Ns(int64_t ns) { return Time::Nanoseconds(ns); }

ClosedForm Derive(const std::string& schedule, int32_t pp, int32_t vpp, int32_t microbatches,
                  int64_t chunk_forward_ns, int64_t chunk_backward_ns,
                  int64_t chunk_weight_grad_ns = 0) {
  const Result<ClosedForm> form =
      DeriveClosedForm({schedule, pp, vpp, microbatches, Ns(chunk_forward_ns),
                        Ns(chunk_backward_ns), Ns(chunk_weight_grad_ns)});
  EXPECT_TRUE(form.ok()) << form.error().message;
  return form.ok() ? form.value() : ClosedForm();
}

// GPipe and 1F1B: makespan (m + p − 1)(F + B), bubble_fraction (p − 1)/(m + p − 1),
// bubble_overhead (p − 1)/m (Narayanan et al., SC'21 §2.2.1).
TEST(DeriveClosedFormTest, FlatSchedules) {
  for (const char* name : {"gpipe", "1f1b"}) {
    const ClosedForm form = Derive(name, 4, 1, 8, 3'000'000, 5'000'000);
    EXPECT_EQ(form.makespan, Ns(11 * 8'000'000)) << name;
    EXPECT_DOUBLE_EQ(form.bubble_fraction, 3.0 / 11.0);
    EXPECT_DOUBLE_EQ(form.bubble_overhead, 3.0 / 8.0);
    EXPECT_TRUE(form.exact);
    EXPECT_EQ(form.makespan_formula, "makespan = (m + p - 1) * (F + B)");
    EXPECT_EQ(form.makespan_numbers, "(8 + 4 - 1) * (3.000000 ms + 5.000000 ms)");
    EXPECT_EQ(form.bubble_numbers, "(4 - 1) / (8 + 4 - 1)");
    EXPECT_TRUE(Contains(form.source, "Narayanan") || Contains(form.source, "Huang"))
        << form.source;
    EXPECT_FALSE(form.assumption.empty());
  }
}

// Interleaved and looped breadth-first over v chunks: (v·m + p − 1)(f + b) with per-chunk
// f, b; bubble_fraction (p − 1)/(v·m + p − 1); bubble_overhead (p − 1)/(v·m) (SC'21 §2.2.2).
TEST(DeriveClosedFormTest, ChunkedSchedules) {
  const ClosedForm interleaved = Derive("interleaved-1f1b", 4, 2, 8, 1'500, 2'500);
  EXPECT_EQ(interleaved.makespan, Ns(19 * 4'000));
  EXPECT_DOUBLE_EQ(interleaved.bubble_fraction, 3.0 / 19.0);
  EXPECT_DOUBLE_EQ(interleaved.bubble_overhead, 3.0 / 16.0);
  EXPECT_TRUE(interleaved.exact);
  EXPECT_EQ(interleaved.makespan_formula, "makespan = (v*m + p - 1) * (F + B) / v");
  EXPECT_TRUE(Contains(interleaved.source, "SC'21")) << interleaved.source;

  const ClosedForm looped = Derive("looped-bfs", 4, 2, 8, 1'500, 2'500);
  EXPECT_EQ(looped.makespan, interleaved.makespan);
  EXPECT_DOUBLE_EQ(looped.bubble_fraction, interleaved.bubble_fraction);
  EXPECT_TRUE(looped.exact);
  EXPECT_TRUE(Contains(looped.assumption, "m >= p")) << looped.assumption;
  // Fewer microbatches than ranks: the form no longer holds.
  EXPECT_FALSE(Derive("looped-bfs", 4, 2, 3, 1'500, 2'500).exact);
}

TEST(DeriveClosedFormTest, UnknownSchedule) {
  const Result<ClosedForm> form =
      DeriveClosedForm({"no-such-schedule", 4, 1, 8, Ns(1), Ns(2), Ns(1)});
  ASSERT_FALSE(form.ok());
  EXPECT_TRUE(Contains(form.error().message, "'no-such-schedule'")) << form.error().message;
  EXPECT_TRUE(
      Contains(form.error().message, "gpipe, 1f1b, interleaved-1f1b, looped-bfs, zb-h1, zb-h2"));
  EXPECT_TRUE(Contains(form.error().message, "dualpipe, dualpipev"));
}

// A simulated run next to its closed form.
struct Comparison {
  ClosedForm form;
  Metrics metrics;
  CriticalPath path;
  GapExplanation gap;
};

Comparison Compare(const std::string& name, const GeneratorParams& params, const ModelSpec& model,
                   const LowerOptions& options) {
  Comparison result;
  const Result<const ScheduleGenerator*> generator = FindScheduleGenerator(name);
  EXPECT_TRUE(generator.ok());
  const Schedule schedule = generator.value()->generate(params).value();
  const auto costs = UniformStageCosts(model, schedule.num_stages, params.vpp);
  const Result<TaskGraph> graph = Lower(schedule, costs, options);
  EXPECT_TRUE(graph.ok());
  const Trace trace = Simulate(graph.value());
  EXPECT_FALSE(trace.deadlock.has_value());
  result.metrics = ComputeMetrics(schedule, costs, graph.value(), trace);
  result.form = Derive(name, params.pp, params.vpp, params.microbatches, costs[0].forward.ns(),
                       costs[0].backward().ns(), costs[0].weight_grad.ns());
  result.path = FindCriticalPath(graph.value(), trace);
  result.gap =
      ExplainGap(result.form, result.metrics, result.path, options.cost_p2p, options.cluster.given);
  return result;
}

ModelSpec Model(int64_t forward_ns, int64_t input_grad_ns, int64_t weight_grad_ns) {
  ModelSpec model;
  model.forward = Ns(forward_ns);
  model.input_grad = Ns(input_grad_ns);
  model.weight_grad = Ns(weight_grad_ns);
  return model;
}

// With no communication every schedule meets its closed form, and the explanation says so.
TEST(ExplainGapTest, ExactlyWhenEqual) {
  const ModelSpec model = Model(4'000, 6'000, 2'000);
  const std::pair<const char*, GeneratorParams> runs[] = {
      {"gpipe", {4, 1, 8, 0}},
      {"1f1b", {4, 1, 8, 0}},
      {"interleaved-1f1b", {4, 2, 8, 0}},
      {"looped-bfs", {4, 4, 6, 0}},
  };
  for (const auto& [name, params] : runs) {
    const Comparison comparison = Compare(name, params, model, {});
    EXPECT_EQ(comparison.metrics.makespan, comparison.form.makespan) << name;
    EXPECT_DOUBLE_EQ(comparison.metrics.bubble_fraction, comparison.form.bubble_fraction) << name;
    EXPECT_NEAR(comparison.metrics.bubble_overhead, comparison.form.bubble_overhead, 1e-12);
    EXPECT_EQ(comparison.gap.gap, Ns(0));
    EXPECT_TRUE(Contains(comparison.gap.explanation, "exactly")) << comparison.gap.explanation;
    EXPECT_EQ(comparison.path.transfer_time, Ns(0));  // zero-cost transfers may lie on it
    EXPECT_EQ(comparison.path.compute_time, comparison.metrics.makespan) << name;
  }
}

// A fixed cost c per transfer: the explanation counts the transfers on the critical path in c.
// 1F1B p = 2, m = 2, F = 10, B = 20, c = 3: makespan 96 = 90 + 2c (see sim/simulator_test.cc).
TEST(ExplainGapTest, MentionsCWhenCostP2pIsSet) {
  LowerOptions options;
  options.cost_p2p = Ns(3);
  const Comparison small = Compare("1f1b", {2, 1, 2, 0}, Model(10, 15, 5), options);
  EXPECT_EQ(small.gap.gap, Ns(6));
  EXPECT_EQ(small.path.transfers, 2);
  EXPECT_EQ(small.path.compute_actions, 6);
  EXPECT_TRUE(Contains(small.gap.explanation, "2 x c")) << small.gap.explanation;
  EXPECT_TRUE(Contains(small.gap.explanation, "c = 0.000003 ms")) << small.gap.explanation;

  for (const auto& [name, params] : std::vector<std::pair<std::string, GeneratorParams>>{
           {"gpipe", {4, 1, 8, 0}}, {"1f1b", {8, 1, 24, 0}}, {"interleaved-1f1b", {4, 2, 8, 0}}}) {
    options.cost_p2p = Ns(601'000);
    const Comparison comparison =
        Compare(name, params, Model(18'522'000, 18'086'000, 9'336'000), options);
    EXPECT_GT(comparison.gap.gap, Ns(0)) << name;
    EXPECT_EQ(comparison.gap.gap.ns() % 601'000, 0) << name;
    EXPECT_TRUE(Contains(comparison.gap.explanation, " x c, c = 0.601000 ms"))
        << name << ": " << comparison.gap.explanation;
  }
}

TEST(ExplainGapTest, ClusterGapIsTheCriticalPathsTransfers) {
  LowerOptions options;
  options.cluster.given = true;
  options.cluster.intra_node = {Ns(1'000), 1e11};
  ModelSpec model = Model(10'000, 15'000, 5'000);
  model.p2p_bytes = 1'000'000;
  const Comparison comparison = Compare("1f1b", {4, 1, 8, 0}, model, options);
  EXPECT_EQ(comparison.gap.gap, comparison.path.transfer_time);
  EXPECT_TRUE(Contains(comparison.gap.explanation, "communication on the critical path"))
      << comparison.gap.explanation;
  EXPECT_FALSE(Contains(comparison.gap.explanation, "x c")) << comparison.gap.explanation;
}

TEST(ExplainGapTest, NotExactFormSaysWhy) {
  const Comparison comparison = Compare("looped-bfs", {4, 2, 2, 0}, Model(1'000, 1'600, 400), {});
  EXPECT_FALSE(comparison.form.exact);
  EXPECT_GT(comparison.gap.gap, Ns(0));
  EXPECT_TRUE(Contains(comparison.gap.explanation, "m >= p")) << comparison.gap.explanation;
}

// ---- Zero Bubble ZB-H1 / ZB-H2 (Qi et al., ICLR 2024, Table 2) ----

// Text and numbers of the forms; the simulated side is in the property tests below.
TEST(DeriveClosedFormTest, ZeroBubbleForms) {
  // p 8, m 16, F 1, I 2, W 1: 16 * 4 + 7 * 2 = 78 (pipeline_cases.json).
  const ClosedForm h1 = Derive("zb-h1", 8, 1, 16, 1'000'000, 3'000'000, 1'000'000);
  EXPECT_EQ(h1.makespan, Ns(78'000'000));
  EXPECT_DOUBLE_EQ(h1.bubble_fraction, 14.0 / 78.0);
  EXPECT_DOUBLE_EQ(h1.bubble_overhead, 14.0 / 64.0);
  EXPECT_TRUE(h1.exact);
  EXPECT_EQ(h1.makespan_formula, "makespan = m * (F + I + W) + (p - 1) * (F + I - W)");
  EXPECT_EQ(h1.makespan_numbers,
            "16 * (1.000000 ms + 2.000000 ms + 1.000000 ms) + (8 - 1) * (1.000000 ms + 2.000000 "
            "ms - 1.000000 ms)");
  EXPECT_TRUE(Contains(h1.source, "Qi et al., ICLR 2024, Table 2")) << h1.source;
  EXPECT_TRUE(Contains(h1.assumption, "W <= min(F, I)")) << h1.assumption;
  EXPECT_TRUE(Contains(h1.assumption, "m >= p")) << h1.assumption;
  EXPECT_FALSE(Derive("zb-h1", 8, 1, 7, 1'000, 3'000, 1'000).exact);
  EXPECT_FALSE(Derive("zb-h1", 8, 1, 16, 1'000, 4'000, 2'000).exact);  // W > F

  // The same costs under ZB-H2: Table 2's bubble 7 * (1 + 2 - 2) = 7 on rank 0's span, which is
  // the larger of the two parallelogram corners here (max(F, F + I - 2W) = 1).
  const ClosedForm h2 = Derive("zb-h2", 8, 1, 16, 1'000'000, 3'000'000, 1'000'000);
  EXPECT_EQ(h2.makespan, Ns(71'000'000));
  EXPECT_TRUE(h2.exact);
  EXPECT_TRUE(Contains(h2.makespan_formula, "(p - 1) * (F + I - 2W)")) << h2.makespan_formula;
  EXPECT_TRUE(Contains(h2.assumption, "m >= 2p - 1")) << h2.assumption;
  EXPECT_FALSE(Derive("zb-h2", 8, 1, 14, 1'000, 3'000, 1'000).exact);
  // F = I = W: zero bubble on every rank's span; the makespan still holds the (p - 1)F skew.
  EXPECT_EQ(Derive("zb-h2", 4, 1, 8, 1'000, 2'000, 1'000).makespan, Ns(27'000));
}

struct ZeroBubbleRun {
  Metrics metrics;
  ClosedForm form;
  GapExplanation gap;
  Time max_span;
};

ZeroBubbleRun RunZeroBubble(const std::string& name, int32_t pp, int32_t microbatches,
                            const ModelSpec& model) {
  ZeroBubbleRun run;
  const Comparison comparison = Compare(name, {pp, 1, microbatches, 0}, model, {});
  run.metrics = comparison.metrics;
  run.form = comparison.form;
  run.gap = comparison.gap;
  for (const RankMetrics& rank : run.metrics.ranks)
    run.max_span = std::max(run.max_span, rank.span);
  return run;
}

// Uniform random costs in ns with W <= min(F, I), the forms' exactness condition.
struct Costs {
  int64_t forward = 0;
  int64_t input_grad = 0;
  int64_t weight_grad = 0;
};
Costs RandomCosts(std::mt19937& random) {
  std::uniform_int_distribution<int64_t> cost(1'000, 40'000);
  Costs costs{cost(random), cost(random), 0};
  costs.weight_grad =
      std::uniform_int_distribution<int64_t>(1, std::min(costs.forward, costs.input_grad))(random);
  return costs;
}

// Property: with c = 0 and W <= min(F, I), ZB-H1's makespan and largest span are
// m(F+I+W) + (p−1)(F+I−W) (Table 2) for every p in [2, 16] and m >= p, to the nanosecond.
TEST(ZeroBubbleClosedFormTest, ZbH1MatchesTable2) {
  std::mt19937 random(20240124);  // fixed seed: the cases are reproducible
  for (int trial = 0; trial < 60; ++trial) {
    const int32_t pp = std::uniform_int_distribution<int32_t>(2, 16)(random);
    const int32_t microbatches = std::uniform_int_distribution<int32_t>(pp, 3 * pp)(random);
    const Costs costs = RandomCosts(random);
    SCOPED_TRACE("p=" + std::to_string(pp) + " m=" + std::to_string(microbatches) +
                 " F=" + std::to_string(costs.forward) + " I=" + std::to_string(costs.input_grad) +
                 " W=" + std::to_string(costs.weight_grad));
    const ZeroBubbleRun run = RunZeroBubble(
        "zb-h1", pp, microbatches, Model(costs.forward, costs.input_grad, costs.weight_grad));
    const int64_t expected = microbatches * (costs.forward + costs.input_grad + costs.weight_grad) +
                             (pp - 1) * (costs.forward + costs.input_grad - costs.weight_grad);
    EXPECT_TRUE(run.form.exact);
    EXPECT_EQ(run.form.makespan, Ns(expected));
    EXPECT_EQ(run.metrics.makespan, Ns(expected));
    EXPECT_EQ(run.max_span, Ns(expected));
    EXPECT_EQ(run.gap.gap, Ns(0)) << run.gap.explanation;
    EXPECT_DOUBLE_EQ(run.metrics.bubble_fraction, run.form.bubble_fraction);
  }
}

// Property: ZB-H2 with m >= 2p − 1 and W <= min(F, I): the largest span is
// m(F+I+W) + (p−1)(F+I−2W) (Table 2), and the makespan adds the parallelogram's skew:
// m(F+I+W) + (p−1)·max(F, F+I−2W).
TEST(ZeroBubbleClosedFormTest, ZbH2MatchesTable2PerSpan) {
  std::mt19937 random(20240125);
  for (int trial = 0; trial < 60; ++trial) {
    const int32_t pp = std::uniform_int_distribution<int32_t>(2, 16)(random);
    const int32_t microbatches = std::uniform_int_distribution<int32_t>(2 * pp - 1, 4 * pp)(random);
    const Costs costs = RandomCosts(random);
    SCOPED_TRACE("p=" + std::to_string(pp) + " m=" + std::to_string(microbatches) +
                 " F=" + std::to_string(costs.forward) + " I=" + std::to_string(costs.input_grad) +
                 " W=" + std::to_string(costs.weight_grad));
    const ZeroBubbleRun run = RunZeroBubble(
        "zb-h2", pp, microbatches, Model(costs.forward, costs.input_grad, costs.weight_grad));
    const int64_t work = microbatches * (costs.forward + costs.input_grad + costs.weight_grad);
    const int64_t table2_bubble =
        (pp - 1) * (costs.forward + costs.input_grad - 2 * costs.weight_grad);
    EXPECT_EQ(run.max_span, Ns(work + table2_bubble));
    const int64_t skew = (pp - 1) * costs.forward;
    EXPECT_EQ(run.metrics.makespan, Ns(work + std::max(table2_bubble, skew)));
    EXPECT_TRUE(run.form.exact);
    EXPECT_EQ(run.gap.gap, Ns(0)) << run.gap.explanation;
    EXPECT_NEAR(run.metrics.bubble_rate_span,
                static_cast<double>(table2_bubble) / static_cast<double>(work + table2_bubble),
                1e-12);
  }
}

// F = I = W: ZB-H2 has no bubble in any rank's span (the paper's "zero bubble").
TEST(ZeroBubbleClosedFormTest, ZbH2ZeroBubbleWhenCostsEqual) {
  const ZeroBubbleRun run = RunZeroBubble("zb-h2", 4, 8, Model(1'000, 1'000, 1'000));
  EXPECT_EQ(run.max_span, Ns(24'000));
  EXPECT_DOUBLE_EQ(run.metrics.bubble_rate_span, 0.0);
  EXPECT_EQ(run.metrics.makespan, Ns(27'000));  // 24 + the (p − 1)F start skew
}

// Outside the conditions the forms say so, and the explanation names why. With m < p ZB-H1 has
// too few W passes to fill the cool-down: makespan (m + p − 1)(F + I) + W, (p − m)·W over the form.
TEST(ZeroBubbleClosedFormTest, OutsideTheConditions) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 30; ++trial) {
    const int32_t pp = std::uniform_int_distribution<int32_t>(2, 16)(random);
    const int32_t microbatches = std::uniform_int_distribution<int32_t>(1, pp - 1)(random);
    const Costs costs = RandomCosts(random);
    const ZeroBubbleRun run = RunZeroBubble(
        "zb-h1", pp, microbatches, Model(costs.forward, costs.input_grad, costs.weight_grad));
    EXPECT_EQ(run.metrics.makespan,
              Ns((microbatches + pp - 1) * (costs.forward + costs.input_grad) + costs.weight_grad));
    EXPECT_EQ(run.gap.gap, Ns((pp - microbatches) * costs.weight_grad));
    EXPECT_FALSE(run.form.exact);
    EXPECT_TRUE(Contains(run.gap.explanation, "(p - m) * W more")) << run.gap.explanation;
  }
  // W > F: the deferred W passes overflow their gaps.
  const ZeroBubbleRun long_w = RunZeroBubble("zb-h1", 4, 8, Model(1'000, 3'000, 2'000));
  EXPECT_FALSE(long_w.form.exact);
  EXPECT_GT(long_w.gap.gap, Ns(0));
  EXPECT_TRUE(Contains(long_w.gap.explanation, "W <= min(F, I)")) << long_w.gap.explanation;
  // ZB-H2 with m < 2p − 1: no parallelogram.
  const ZeroBubbleRun short_h2 = RunZeroBubble("zb-h2", 4, 5, Model(1'000, 1'000, 1'000));
  EXPECT_FALSE(short_h2.form.exact);
  EXPECT_NE(short_h2.gap.gap, Ns(0));
  EXPECT_TRUE(Contains(short_h2.gap.explanation, "m < 2p - 1")) << short_h2.gap.explanation;
}

// Weighted memory (paper §3.1 and App. G accounting: F adds M_B, I adds M_W − M_B, W frees M_W):
// ZB-H1 worker i = r + 1 peaks at (p − i + 1)·M_B + (i − 1)·M_W; ZB-H2 rank r at
// (2(p − r) − 1)·M_B + 2r·M_W, rank 0 holding 2p − 1 activations. M_W <= M_B, as in the paper
// (M_W = 32sbh against M_B = sb(34h + 5as) per layer).
TEST(ZeroBubbleClosedFormTest, WeightedPeakMemory) {
  ModelSpec model;
  model.activation_bytes = 1'000;
  model.weight_grad_bytes = 400;
  for (int32_t pp : {2, 4, 8, 13}) {
    const auto costs = UniformStageCosts(model, pp, 1);
    const int32_t microbatches = 3 * pp;
    const auto h1 = PeakActivations(GenerateZbH1({pp, 1, microbatches, 0}).value(), costs);
    const auto h2 = PeakActivations(GenerateZbH2({pp, 1, microbatches, 0}).value(), costs);
    for (int32_t rank = 0; rank < pp; ++rank) {
      SCOPED_TRACE("p=" + std::to_string(pp) + " rank=" + std::to_string(rank));
      const int64_t worker = rank + 1;
      EXPECT_EQ(h1[rank].count, pp - rank);
      EXPECT_EQ(h1[rank].bytes, (pp - worker + 1) * 1'000 + (worker - 1) * 400);
      EXPECT_EQ(h2[rank].count, 2 * (pp - rank) - 1);
      EXPECT_EQ(h2[rank].bytes, (2 * (pp - rank) - 1) * 1'000 + 2 * rank * 400);
    }
    EXPECT_EQ(h2[0].count, 2 * pp - 1);
  }
}

// DeepSeek-V3 technical report, Table 2 (also ../shared reference README §1): DualPipe's bubble
// is (PP/2 − 1)(F&B + B − 3W) with PP + 1 activations; DualPipeV ("cut in half") keeps it, PP
// then counting the 2p stages of the V. With equal costs (F = I = W, F&B = F + B, no overlap
// gain) every rank idles exactly that bubble and holds PP + 1 chunk activations. Exact equality
// in integer ns: no tolerance.
TEST(DualPipeClosedFormTest, Table2BubbleAndActivationsWithEqualCosts) {
  for (const bool folded : {false, true}) {
    const std::string name = folded ? "dualpipev" : "dualpipe";
    for (int32_t pp : {4, 8, 16}) {
      for (int32_t factor : {2, 3, 4}) {
        const int32_t microbatches = factor * pp;
        SCOPED_TRACE(name + " p=" + std::to_string(pp) + " m=" + std::to_string(microbatches));
        const int32_t vpp = folded ? 2 : 1;
        const Comparison run = Compare(name, {pp, vpp, microbatches, 0},
                                       Model(1'000'000, 1'000'000, 1'000'000), LowerOptions());
        // Per chunk: F = I = W = 1 ms (DualPipe) or 0.5 ms (DualPipeV); B = I + W; F&B = F + B.
        const int64_t chunk = folded ? 500'000 : 1'000'000;
        const int64_t f = chunk, b = 2 * chunk, w = chunk, fb = f + b;
        const int64_t table2_pp = folded ? 2 * pp : pp;
        const int64_t bubble = (table2_pp / 2 - 1) * (fb + b - 3 * w);
        const int64_t work = (folded ? 2 : 1) * microbatches * (f + b);
        EXPECT_TRUE(run.form.exact);
        EXPECT_EQ(run.metrics.makespan, Ns(work + bubble));
        EXPECT_EQ(run.form.makespan, run.metrics.makespan);
        EXPECT_EQ(run.gap.gap, Ns(0)) << run.gap.explanation;
        EXPECT_NEAR(run.form.bubble_fraction, run.metrics.bubble_fraction, 1e-12);
        for (const RankMetrics& rank : run.metrics.ranks) {
          EXPECT_EQ(rank.idle, Ns(bubble)) << "rank " << rank.rank;
          EXPECT_EQ(rank.peak_activations, table2_pp + 1) << "rank " << rank.rank;
        }
      }
    }
  }
}

// With an overlap gain g = F + B − F&B <= W, F = I and W <= F the turning rank still idles the
// Table 2 bubble, and the makespan is 2c(F + B) − (2c − 2n − 1)·g + (n − 1)(F&B + B − 3W).
TEST(DualPipeClosedFormTest, OverlapGainWithinTheConditions) {
  for (const bool folded : {false, true}) {
    const std::string name = folded ? "dualpipev" : "dualpipe";
    for (const auto& [pp, weight_grad, fb] :
         {std::tuple{4, 1'000'000, 2'500'000}, std::tuple{8, 500'000, 2'200'000},
          std::tuple{16, 1'000'000, 2'000'000}, std::tuple{6, 800'000, 2'600'000}}) {
      const int32_t microbatches = 3 * pp;
      SCOPED_TRACE(name + " p=" + std::to_string(pp) + " W=" + std::to_string(weight_grad) +
                   " F&B=" + std::to_string(fb));
      ModelSpec model = Model(1'000'000, 1'000'000, weight_grad);
      model.fb = Ns(fb);
      const int32_t vpp = folded ? 2 : 1;
      Comparison run;
      Time table2;  // the makespan written out from DeepSeek-V3 Table 2, per chunk
      {
        const Schedule schedule =
            FindScheduleGenerator(name).value()->generate({pp, vpp, microbatches, 0}).value();
        const auto costs = UniformStageCosts(model, schedule.num_stages, vpp);
        const TaskGraph graph = Lower(schedule, costs, LowerOptions()).value();
        const Trace trace = Simulate(graph);
        ASSERT_FALSE(trace.deadlock.has_value());
        run.metrics = ComputeMetrics(schedule, costs, graph, trace);
        ClosedFormInputs inputs{name,
                                pp,
                                vpp,
                                microbatches,
                                costs[0].forward,
                                costs[0].backward(),
                                costs[0].weight_grad};
        inputs.chunk_fb = costs[0].forward + costs[0].backward() - costs[0].overlap_saving;
        run.form = DeriveClosedForm(inputs).value();
        // 2c(F + B) − (2c − 2n − 1)·g + (n − 1)(F&B + B − 3W), g = F + B − F&B; n = p/2, c = m/2
        // (DualPipe) or n = p, c = m (DualPipeV).
        const int64_t n = folded ? pp : pp / 2;
        const int64_t c = folded ? microbatches : microbatches / 2;
        const Time f = costs[0].forward;
        const Time b = costs[0].backward();
        const Time w = costs[0].weight_grad;
        const Time gain = costs[0].overlap_saving;
        table2 =
            (f + b) * (2 * c) - gain * (2 * c - 2 * n - 1) + (f + b - gain + b - w * 3) * (n - 1);
      }
      EXPECT_TRUE(run.form.exact);
      EXPECT_EQ(table2, run.metrics.makespan);
      EXPECT_EQ(run.form.makespan, run.metrics.makespan);
      EXPECT_NEAR(run.form.bubble_fraction, run.metrics.bubble_fraction, 1e-12);
    }
  }
}

// Outside the conditions the form says why (F != I here).
TEST(DualPipeClosedFormTest, UnequalForwardAndInputGradIsNotExact) {
  const Comparison run =
      Compare("dualpipe", {8, 1, 24, 0}, Model(1'000'000, 2'000'000, 1'000'000), LowerOptions());
  EXPECT_FALSE(run.form.exact);
  EXPECT_NE(run.gap.gap, Ns(0));
  EXPECT_TRUE(Contains(run.gap.explanation, "equal time")) << run.gap.explanation;
  EXPECT_TRUE(Contains(run.form.table, "(PP/2-1)(F&B+B-3W)")) << run.form.table;
}

}  // namespace
}  // namespace stagecraft
