// The run-size estimate (run/run_size.h): tasks, a trace's events and ranks in bytes, one check
// for simulate, check and the planner (issue 35, D3-D5).
#include "run/run_size.h"

#include <gtest/gtest.h>

#include <string>

namespace stagecraft {
namespace {

TEST(RunSizeTest, CountsTasksTraceAndRanks) {
  EXPECT_EQ(EstimateRunBytes({4, 4, 100, false}), 4 * 100 * 5 * 256 + 4 * 1024);
  EXPECT_EQ(EstimateRunBytes({4, 4, 100, true}), 4 * 100 * 5 * 1024 + 4 * 1024);
  // A CSV of 20,000 one-action rows: one stage, one microbatch, 20,000 ranks.
  EXPECT_EQ(EstimateRunBytes({20000, 1, 1, false}), 5 * 256 + 20000 * 1024);
}

TEST(RunSizeTest, MaxMicrobatchesIsTheLargestThatPasses) {
  for (const RunSize shape : {RunSize{4, 4, 1, false}, RunSize{4, 4, 1, true},
                              RunSize{1000, 2000, 1, false}, RunSize{1, 1, 1, true}}) {
    RunSize size = shape;
    size.microbatches = MaxMicrobatches(shape);
    ASSERT_GT(size.microbatches, 0);
    EXPECT_TRUE(CheckRunSize(size, "s", "l").ok());
    ++size.microbatches;
    EXPECT_FALSE(CheckRunSize(size, "s", "l").ok());
  }
  // pp 4: 2^23 tasks less the ranks without a trace, a quarter of it with one (doc/config.md).
  EXPECT_EQ(MaxMicrobatches({4, 4, 1, false}), 419429);
  EXPECT_EQ(MaxMicrobatches({4, 4, 1, true}), 104857);
  EXPECT_EQ(MaxMicrobatches({1 << 21, 1, 1, false}), 0);
}

TEST(RunSizeTest, TheMessageNamesTheTraceAndWhatFits) {
  const Status status = CheckRunSize({4, 4, 400000, true}, "pp 4 x vpp 1", "--microbatches");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message,
            "the run is too large: pp 4 x vpp 1 = 4 stages x 400000 microbatches make about "
            "8000000 tasks (5 per stage and microbatch), about 7.6 GiB at 256 B per task and 768 "
            "B more for its --trace events plus 1 KiB per rank, more than the limit of 2 GiB; "
            "lower --microbatches (104857 microbatches fit 4 stages with a trace), or drop "
            "--trace");
  EXPECT_TRUE(CheckRunSize({4, 4, 400000, false}, "pp 4 x vpp 1", "--microbatches").ok());
}

}  // namespace
}  // namespace stagecraft
