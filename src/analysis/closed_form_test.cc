#include "analysis/closed_form.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "analysis/critical_path.h"
#include "lower/lower.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace {

Time Ns(int64_t ns) { return Time::Nanoseconds(ns); }

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

ClosedForm Derive(const std::string& schedule, int32_t pp, int32_t vpp, int32_t microbatches,
                  int64_t chunk_forward_ns, int64_t chunk_backward_ns) {
  const Result<ClosedForm> form = DeriveClosedForm(
      {schedule, pp, vpp, microbatches, Ns(chunk_forward_ns), Ns(chunk_backward_ns)});
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
  const Result<ClosedForm> form = DeriveClosedForm({"zb-h1", 4, 1, 8, Ns(1), Ns(2)});
  ASSERT_FALSE(form.ok());
  EXPECT_TRUE(Contains(form.error().message, "'zb-h1'")) << form.error().message;
  EXPECT_TRUE(Contains(form.error().message, "gpipe, 1f1b, interleaved-1f1b, looped-bfs"));
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
                       costs[0].backward().ns());
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

}  // namespace
}  // namespace stagecraft
