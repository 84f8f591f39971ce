#include "run/validated_runs.h"

#include <gtest/gtest.h>

namespace stagecraft {
namespace {

ValidatedRun Make(const char* device, double params_b, int32_t micro_batch, int32_t tp, int32_t pp,
                  double error, int32_t gpus = 64) {
  ValidatedRun run;
  run.run = "r";
  run.device = device;
  run.params = params_b * 1e9;
  run.micro_batch = micro_batch;
  run.tp = tp;
  run.pp = pp;
  run.gpus = gpus;
  run.error = error;
  return run;
}

// The nearest runs: the same generation (h100 and h800 are Hopper) and parallel features, a
// micro-batch within 2x and parameters within 4x; their MAPE and the signed worst error.
TEST(ValidatedRunsTest, NearestRunsShareGenerationFeaturesBatchAndSize) {
  const std::vector<ValidatedRun> suite = {
      Make("h100", 70, 1, 8, 4, 0.05), Make("h800", 100, 2, 8, 8, -0.10),
      Make("h100", 8, 1, 8, 4, 0.30),   // 9x smaller: not near in size
      Make("h100", 70, 8, 8, 4, 0.40),  // micro-batch 8: not near
      Make("h100", 70, 1, 8, 1, 0.50),  // no pp: other features
      Make("a100", 70, 1, 8, 4, 0.60),  // another generation
  };
  const ValidationInfo info = NearestValidation(Make("h100", 70, 1, 8, 4, 0), suite);
  EXPECT_TRUE(info.given);
  EXPECT_TRUE(info.in_range);
  EXPECT_EQ(info.similar_runs, 2);
  EXPECT_DOUBLE_EQ(info.mape, 0.075);
  EXPECT_DOUBLE_EQ(info.worst, -0.10);
  EXPECT_NE(info.basis.find("hopper, parallel features tp pp, micro-batch 1-2"), std::string::npos)
      << info.basis;
}

// No run of the size: the size criterion is dropped, then the micro-batch's; beyond the
// generation's largest validated micro-batch, the figure is outside the validated range.
TEST(ValidatedRunsTest, CriteriaRelaxAndTheRangeIsSaid) {
  const std::vector<ValidatedRun> suite = {Make("h100", 8, 2, 8, 4, 0.20),
                                           Make("h100", 8, 16, 8, 4, -0.05)};
  const ValidationInfo wide = NearestValidation(Make("h100", 400, 2, 8, 4, 0), suite);
  EXPECT_EQ(wide.similar_runs, 1);
  EXPECT_EQ(wide.basis.find("parameters"), std::string::npos) << wide.basis;
  EXPECT_FALSE(wide.in_range);  // 400B against 8B validated
  EXPECT_NE(wide.outside.find("400B parameters"), std::string::npos) << wide.outside;
  const ValidationInfo large = NearestValidation(Make("h100", 8, 64, 8, 4, 0), suite);
  EXPECT_EQ(large.similar_runs, 2);  // both, the micro-batch criterion dropped
  EXPECT_FALSE(large.in_range);
  EXPECT_EQ(large.outside, "micro-batch 64 (largest validated on hopper: 16)");
  const ValidationInfo none = NearestValidation(Make("b200", 8, 2, 8, 4, 0), suite);
  EXPECT_EQ(none.similar_runs, 0);
  EXPECT_FALSE(none.in_range);
}

// The compiled-in table is the suite's: every run of bench/validation/results.csv, parsed.
TEST(ValidatedRunsTest, CompiledInTableParses) {
  const std::vector<ValidatedRun>& runs = ValidatedRuns();
  ASSERT_GE(runs.size(), 100u);
  for (const ValidatedRun& run : runs) {
    EXPECT_FALSE(run.run.empty());
    EXPECT_GT(run.params, 0) << run.run;
    EXPECT_GE(run.micro_batch, 1) << run.run;
  }
  EXPECT_FALSE(ParseValidatedRuns("header\na,b,c\n").ok());
}

// The table reader both compiled-in tables share: exact field counts, finite numbers, the line.
TEST(ValidatedRunsTest, ResultsTableChecksFieldsAndNumbers) {
  auto good = ParseResultsTable("h1,h2,h3\nx,1.5,2\n\ny,3,4\n", 3, {1, 2}, "t", "redo");
  ASSERT_TRUE(good.ok()) << good.error().message;
  ASSERT_EQ(good.value().size(), 2u);
  EXPECT_EQ(good.value()[1].fields[0], "y");
  EXPECT_EQ(good.value()[0].numbers, (std::vector<double>{1.5, 2}));
  auto short_row = ParseResultsTable("h\nx,1\n", 3, {1}, "t", "redo");
  ASSERT_FALSE(short_row.ok());
  EXPECT_EQ(short_row.error().message, "t, line 2: 2 fields, expected 3 (regenerate it: redo)");
  auto not_number = ParseResultsTable("h\nx,inf,2\n", 3, {1}, "t", "redo");
  ASSERT_FALSE(not_number.ok());
  EXPECT_EQ(not_number.error().message, "t, line 2: 'inf' is not a number (regenerate it: redo)");
}

}  // namespace
}  // namespace stagecraft
