// goodput's flags parsed into the fault library's typed inputs: the values, and the errors for
// counts that are not whole, numbers past their range, and "nan", "inf" and "1e400" (issue 35,
// D2: --gpus-per-node 0.5 had been cast to 0 nodes and divided by).
#include <gtest/gtest.h>

#include <string>

#include "commands/goodput_command.h"

namespace stagecraft {
namespace {

GoodputSpec BaseSpec() {
  GoodputSpec spec;
  spec.gpus = "16384";
  spec.checkpoint_blocking = "0.6s";
  spec.restart = "189s";
  return spec;
}

// The error ParseGoodputFlags gives, or "ok".
std::string Message(const GoodputSpec& spec) {
  auto inputs = ParseGoodputFlags(spec);
  return inputs.ok() ? std::string("ok") : inputs.error().message;
}

TEST(GoodputFlagsTest, TypedValues) {
  GoodputSpec spec = BaseSpec();
  spec.gpus_per_node = "4";
  spec.checkpoint_persist = "3min";
  spec.repair_time = "2h";
  spec.tokens = "15.6T";
  spec.monte_carlo = "1e3";
  spec.seed = "18446744073709551615";
  spec.correlated = "0.1:4";
  spec.failure_preset = "meta-rsc1";
  spec.storage = "s3";
  auto inputs = ParseGoodputFlags(spec);
  ASSERT_TRUE(inputs.ok()) << inputs.error().message;
  const GoodputInputs& in = inputs.value();
  EXPECT_EQ(in.gpus, 16384);
  EXPECT_EQ(in.gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(*in.checkpoint_blocking_s, 0.6);
  EXPECT_DOUBLE_EQ(*in.checkpoint_persist_s, 180);
  EXPECT_DOUBLE_EQ(*in.restart_s, 189);
  EXPECT_DOUBLE_EQ(*in.repair_s, 7200);
  EXPECT_DOUBLE_EQ(*in.tokens, 15.6e12);
  EXPECT_EQ(in.monte_carlo_runs, 1000);
  EXPECT_EQ(in.seed, 18446744073709551615ULL);
  EXPECT_DOUBLE_EQ(in.correlated->share, 0.1);
  EXPECT_EQ(in.correlated->nodes, 4);
  EXPECT_EQ(std::string(in.failure_preset->name), "meta-rsc1");
  EXPECT_EQ(std::string(in.storage->name), "s3");
  EXPECT_FALSE(in.days);
  EXPECT_DOUBLE_EQ(in.weibull_shape, 1.0);
}

TEST(GoodputFlagsTest, CountsAreWholeAndInRange) {
  GoodputSpec spec = BaseSpec();
  for (const char* text : {"0.5", "8.5", "1e308"}) {
    spec.gpus_per_node = text;
    EXPECT_EQ(Message(spec), std::string("--gpus-per-node: expected a whole number of GPUs per "
                                         "node, 1 to 1000000, got ") +
                                 text + " (e.g. 8)");
  }
  spec.gpus_per_node = "0";
  EXPECT_EQ(Message(spec),
            "--gpus-per-node: must be above zero, got 0 (expected a whole number of GPUs per "
            "node, 1 to 1000000, e.g. 8)");
  spec.gpus_per_node = "nan";
  EXPECT_EQ(Message(spec),
            "--gpus-per-node: 'nan' is not a number (expected a whole number of GPUs per node, 1 "
            "to 1000000, e.g. 8)");
  spec = BaseSpec();
  spec.gpus = "1e400";
  EXPECT_EQ(Message(spec),
            "--gpus: '1e400' is out of range (expected a whole number of GPUs, e.g. 16384)");
  spec.gpus = "1e10";
  EXPECT_EQ(Message(spec), "--gpus: expected a whole number of GPUs up to 10^9, got 1e10");
  spec = BaseSpec();
  spec.monte_carlo = "2.5";
  EXPECT_EQ(Message(spec),
            "--monte-carlo: expected a whole number of simulated runs, 1 to 1000000, got 2.5 "
            "(e.g. 10000)");
  spec = BaseSpec();
  spec.spares = "0x10";
  EXPECT_EQ(Message(spec),
            "--spares: expected a whole number of spare nodes, 0 to 10^9, got '0x10'");
  spec = BaseSpec();
  spec.seed = "18446744073709551616";
  EXPECT_EQ(Message(spec),
            "--seed: '18446744073709551616' is out of range (expected 0 to 2^64-1, e.g. 1)");
}

TEST(GoodputFlagsTest, NumbersAndDurationsInRange) {
  GoodputSpec spec = BaseSpec();
  spec.restart = "1e308h";
  EXPECT_EQ(Message(spec),
            "--restart: '1e308h' is out of range (expected at most 100000h; a duration such as "
            "0.6s, 51s, 3min or 2h; a bare number is ms)");
  spec = BaseSpec();
  spec.interval = "infmin";
  EXPECT_EQ(Message(spec),
            "--interval: 'inf' is not a number (expected a duration such as 0.6s, 51s, 3min or "
            "2h; a bare number is ms)");
  spec = BaseSpec();
  spec.mtbf_hours = "1e308";
  EXPECT_EQ(Message(spec),
            "--mtbf-hours: 1e308 is out of range (expected the job's MTBF in hours, at most "
            "10^8, e.g. 3)");
  spec = BaseSpec();
  spec.failures_per_1000_node_days = "1e-300";
  EXPECT_EQ(Message(spec),
            "--failures-per-1000-node-days: 1e-300 is out of range (expected failures per 1000 "
            "node-days, 0.001 to 1000000, e.g. 6.5 (Meta RSC-1))");
  spec = BaseSpec();
  spec.tokens = "1e308T";
  EXPECT_EQ(Message(spec),
            "--tokens: '1e308T' is out of range (expected at most 10^18 tokens to train on, e.g. "
            "15.6T or 2e12)");
  spec = BaseSpec();
  spec.days = "inf";
  EXPECT_EQ(Message(spec),
            "--days: 'inf' is not a number (expected days of failure-free training, e.g. 54)");
  spec = BaseSpec();
  spec.correlated = "0.1:2.5";
  EXPECT_EQ(Message(spec),
            "--correlated: '0.1:2.5' out of range (expected a whole number of nodes, 1 to 10^9; "
            "SHARE:NODES, e.g. 0.1:4 (a tenth of the failures take 4 nodes))");
}

}  // namespace
}  // namespace stagecraft
