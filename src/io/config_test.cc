#include "io/config.h"

#include <gtest/gtest.h>

#include <string>

namespace stagecraft {
namespace {

constexpr int64_t kMs = 1'000'000;  // ns per ms

// The error message of a config that must fail to parse.
std::string ErrorOf(const std::string& yaml) {
  Result<Config> config = ParseConfig(yaml, "run.yaml");
  EXPECT_FALSE(config.ok()) << "parsed without error:\n" << yaml;
  return config.ok() ? "" : config.error().message;
}

Config Parse(const std::string& yaml) {
  Result<Config> config = ParseConfig(yaml, "run.yaml");
  EXPECT_TRUE(config.ok()) << config.error().message;
  return config.ok() ? config.value() : Config();
}

TEST(ParseConfigTest, FullConfig) {
  const std::string yaml = R"(
model:
  name: llama-7b
  type: uniform
  layers: 32
  forward: 18.522
  input_grad: 2ms
  weight_grad: 0
  activation_bytes: 1GiB
  weight_grad_bytes: 512MB
  p2p_bytes: 16MiB
cluster:
  devices_per_node: 4
  nodes: 2
  intra_node: {latency: 2us, bandwidth: 300GB/s}
  inter_node:
    latency: 10us
    bandwidth: 400Gb/s
parallel:
  pp: 8
  vpp: 2
  microbatches: 16
schedule:
  name: interleaved-1f1b
  group_size: 4
  p2p: rendezvous
  cost_p2p: 0.6
  csv: schedules/custom.csv
)";
  Config expected;
  expected.model.name = "llama-7b";
  expected.model.num_layers = 32;
  expected.model.forward = Time::Nanoseconds(18'522'000);
  expected.model.input_grad = Time::Nanoseconds(2 * kMs);
  expected.model.weight_grad = Time::Nanoseconds(0);
  expected.model.activation_bytes = int64_t{1} << 30;
  expected.model.weight_grad_bytes = 512'000'000;
  expected.model.p2p_bytes = int64_t{16} << 20;
  expected.cluster.given = true;
  expected.cluster.devices_per_node = 4;
  expected.cluster.nodes = 2;
  expected.cluster.intra_node = LinkSpec{Time::Nanoseconds(2'000), 300e9};
  expected.cluster.inter_node = LinkSpec{Time::Nanoseconds(10'000), 50e9};
  expected.parallel = ParallelSpec{8, 2, 16};
  expected.schedule.name = "interleaved-1f1b";
  expected.schedule.group_size = 4;
  expected.schedule.p2p = P2pMode::kRendezvous;
  expected.schedule.cost_p2p = Time::Nanoseconds(600'000);
  expected.schedule.csv = "schedules/custom.csv";
  EXPECT_EQ(Parse(yaml), expected);
}

TEST(ParseConfigTest, MissingSectionsKeepDefaults) {
  Config expected;
  expected.parallel.pp = 2;
  EXPECT_EQ(Parse("parallel:\n  pp: 2\n"), expected);
  EXPECT_FALSE(Parse("parallel:\n  pp: 2\n").cluster.given);
}

TEST(ParseConfigTest, EmptySectionsKeepDefaults) {
  Config expected;
  expected.cluster.given = true;
  EXPECT_EQ(Parse("model:\ncluster:\nparallel: {}\nschedule:\n"), expected);
}

TEST(ParseConfigTest, ClusterSectionSetsGiven) {
  const Config config = Parse("cluster:\n  nodes: 2\n");
  EXPECT_TRUE(config.cluster.given);
  EXPECT_EQ(config.cluster.nodes, 2);
  EXPECT_EQ(config.cluster.devices_per_node, 8);
  EXPECT_EQ(config.cluster.intra_node, LinkSpec{});
}

TEST(ParseConfigTest, BareNumberMeansMilliseconds) {
  const Config config = Parse("model:\n  forward: 18.522\n  input_grad: 3\n");
  EXPECT_EQ(config.model.forward, Time::Nanoseconds(18'522'000));
  EXPECT_EQ(config.model.input_grad, Time::Nanoseconds(3 * kMs));
  EXPECT_EQ(Parse("schedule: {cost_p2p: 0.6}").schedule.cost_p2p, Time::Nanoseconds(600'000));
}

TEST(ParseConfigTest, DurationUnits) {
  const Config config = Parse("model: {forward: 1500ns, input_grad: 2.5us, weight_grad: 1s}\n");
  EXPECT_EQ(config.model.forward, Time::Nanoseconds(1'500));
  EXPECT_EQ(config.model.input_grad, Time::Nanoseconds(2'500));
  EXPECT_EQ(config.model.weight_grad, Time::Nanoseconds(1'000'000'000));
}

TEST(ParseConfigTest, SizeUnits) {
  const Config config =
      Parse("model: {activation_bytes: 64KiB, weight_grad_bytes: 1.5GB, p2p_bytes: 4096}\n");
  EXPECT_EQ(config.model.activation_bytes, 65'536);
  EXPECT_EQ(config.model.weight_grad_bytes, 1'500'000'000);
  EXPECT_EQ(config.model.p2p_bytes, 4'096);
  EXPECT_EQ(Parse("model: {p2p_bytes: 2TiB}").model.p2p_bytes, int64_t{2} << 40);
}

TEST(ParseConfigTest, BandwidthUnits) {
  const auto bandwidth = [](const std::string& text) {
    return Parse("cluster: {intra_node: {bandwidth: " + text + "}}")
        .cluster.intra_node.bandwidth_bytes_per_s;
  };
  EXPECT_DOUBLE_EQ(bandwidth("300GB/s"), 300e9);
  EXPECT_DOUBLE_EQ(bandwidth("25GiB/s"), 25.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(bandwidth("400Gb/s"), 50e9);
  EXPECT_DOUBLE_EQ(bandwidth("1Tb/s"), 125e9);
  EXPECT_DOUBLE_EQ(bandwidth("100MB/s"), 100e6);
  EXPECT_DOUBLE_EQ(bandwidth("1000"), 1000.0);
}

TEST(ParseConfigTest, QuotedScalarsAreAccepted) {
  EXPECT_EQ(Parse("parallel: {pp: '2'}\nschedule: {name: \"gpipe\"}").parallel.pp, 2);
  EXPECT_EQ(Parse("model: {name: 123}").model.name, "123");
}

TEST(ParseConfigTest, AsyncMode) {
  EXPECT_EQ(Parse("schedule: {p2p: async}").schedule.p2p, P2pMode::kAsync);
}

TEST(ParseConfigErrorTest, UnknownScheduleNameNamesLineAndColumn) {
  const std::string message = ErrorOf("schedule:\n  name: interleaved\n");
  EXPECT_NE(message.find("run.yaml:2:9: schedule.name: unknown schedule 'interleaved'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("did you mean 'interleaved-1f1b'?"), std::string::npos) << message;
}

TEST(ParseConfigTest, LocationsRecordWhereEachKeyWasWritten) {
  ConfigLocations locations;
  ASSERT_TRUE(ParseConfig("model:\n  layers: 6\n", "run.yaml", &locations).ok());
  EXPECT_EQ(locations.Where("model.layers"), "run.yaml:2:11: model.layers: ");
  EXPECT_EQ(locations.Where("cluster"), "run.yaml: cluster: ");
}

TEST(ParseConfigTest, TrailingDocumentMarkerIsAccepted) {
  EXPECT_EQ(Parse("parallel: {pp: 2}\n---\n").parallel.pp, 2);
}

// --- errors ---

TEST(ParseConfigErrorTest, MalformedYaml) {
  const std::string message = ErrorOf("model:\n  forward: [1ms\n");
  EXPECT_NE(message.find("run.yaml:"), std::string::npos) << message;
  EXPECT_NE(message.find("malformed YAML"), std::string::npos) << message;
  const std::string bad_indent = ErrorOf("parallel:\n  pp: 2\n vpp: 3\n");
  EXPECT_EQ(bad_indent.rfind("run.yaml:3:", 0), 0u) << bad_indent;
  EXPECT_NE(bad_indent.find("malformed YAML"), std::string::npos) << bad_indent;
  EXPECT_NE(bad_indent.find("indentation"), std::string::npos) << bad_indent;
}

TEST(ParseConfigErrorTest, UnclosedBracket) {
  const std::string message = ErrorOf("model: {name: \"abc}\n");
  EXPECT_EQ(message.rfind("run.yaml:2:1: malformed YAML: end of map flow not found", 0), 0u)
      << message;
}

TEST(ParseConfigErrorTest, TabIndentation) {
  const std::string message = ErrorOf("model:\n\tforward: 1ms\n");
  EXPECT_EQ(message.rfind("run.yaml:2:9: malformed YAML: ", 0), 0u) << message;
  EXPECT_NE(message.find("not tabs"), std::string::npos) << message;
}

TEST(ParseConfigErrorTest, UndefinedAlias) {
  const std::string message = ErrorOf("parallel: {pp: *x}\n");
  EXPECT_EQ(message.rfind("run.yaml:1:16: malformed YAML: ", 0), 0u) << message;
}

TEST(ParseConfigErrorTest, EmptyDocument) {
  for (const char* yaml : {"", "# only a comment\n", "---\n"}) {
    const std::string message = ErrorOf(yaml);
    EXPECT_EQ(message.rfind("run.yaml:1:1: the config is empty", 0), 0u) << message;
    EXPECT_NE(message.find("'model', 'cluster', 'parallel' or 'schedule'"), std::string::npos)
        << message;
  }
}

TEST(ParseConfigErrorTest, DocumentNotAMap) {
  EXPECT_EQ(ErrorOf("- pp: 2\n").rfind("run.yaml:1:1: the config is a list, not a map", 0), 0u);
  EXPECT_EQ(ErrorOf("hello\n").rfind("run.yaml:1:1: the config is 'hello', not a map", 0), 0u);
}

TEST(ParseConfigErrorTest, SecondDocument) {
  const std::string message = ErrorOf("parallel: {pp: 2}\n---\nparallel: {pp: 3}\n");
  EXPECT_EQ(message.rfind("run.yaml:3:1: found a second YAML document", 0), 0u) << message;
}

TEST(ParseConfigErrorTest, UnknownKeyInSection) {
  const std::string message = ErrorOf("parallel:\n  pp: 2\n  microbatch: 8\n");
  EXPECT_EQ(message,
            "run.yaml:3:3: unknown key 'microbatch' in parallel; did you mean 'microbatches'? "
            "(expected one of 'pp', 'vpp' or 'microbatches')");
}

TEST(ParseConfigErrorTest, UnknownTopLevelKey) {
  const std::string message = ErrorOf("modle:\n  layers: 2\n");
  EXPECT_EQ(message.rfind("run.yaml:1:1: unknown key 'modle' at the top level; did you mean "
                          "'model'?",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("(expected one of 'model', 'cluster', 'parallel' or 'schedule')"),
            std::string::npos)
      << message;
}

TEST(ParseConfigErrorTest, UnknownNestedKey) {
  const std::string message = ErrorOf("cluster:\n  intra_node: {latncy: 2us}\n");
  EXPECT_EQ(message,
            "run.yaml:2:16: unknown key 'latncy' in cluster.intra_node; did you mean 'latency'? "
            "(expected one of 'latency' or 'bandwidth')");
}

TEST(ParseConfigErrorTest, UnknownKeyWithoutCloseMatch) {
  const std::string message = ErrorOf("schedule:\n  zzzzzzzz: 1\n");
  EXPECT_EQ(message.find("did you mean"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown key 'zzzzzzzz' in schedule (expected one of 'name', "),
            std::string::npos)
      << message;
}

TEST(ParseConfigErrorTest, DuplicateKey) {
  const std::string message = ErrorOf("parallel:\n  pp: 2\n  pp: 4\n");
  EXPECT_EQ(message.rfind("run.yaml:3:3: duplicate key 'pp' in parallel", 0), 0u) << message;
  EXPECT_NE(message.find("line 2"), std::string::npos) << message;
}

TEST(ParseConfigErrorTest, SectionNotAMap) {
  const std::string message = ErrorOf("model: 12\n");
  EXPECT_EQ(message.rfind("run.yaml:1:8: model: found '12' (expected a map with keys 'name',", 0),
            0u)
      << message;
  EXPECT_NE(ErrorOf("parallel: [1, 2]\n").find("parallel: found a list"), std::string::npos);
}

TEST(ParseConfigErrorTest, NonPositiveDuration) {
  const std::string message = ErrorOf("model:\n  name: x\n  forward: -1ms\n");
  EXPECT_EQ(message,
            "run.yaml:3:12: model.forward: '-1ms' must be positive (expected a duration such as "
            "'1.5ms'; a bare number means ms)");
  EXPECT_NE(ErrorOf("model: {input_grad: 0}").find("model.input_grad: '0' must be positive"),
            std::string::npos);
}

TEST(ParseConfigErrorTest, NegativeDuration) {
  const std::string message = ErrorOf("schedule:\n  cost_p2p: -0.5\n");
  EXPECT_EQ(message.rfind("run.yaml:2:13: schedule.cost_p2p: '-0.5' must not be negative", 0), 0u)
      << message;
  EXPECT_NE(ErrorOf("model: {weight_grad: -1us}").find("must not be negative"), std::string::npos);
}

TEST(ParseConfigErrorTest, BadDurationUnit) {
  const std::string message = ErrorOf("model:\n  forward: 5xs\n");
  EXPECT_EQ(message.rfind("run.yaml:2:12: model.forward: bad unit 'xs'", 0), 0u) << message;
  EXPECT_NE(message.find("ms"), std::string::npos) << message;
}

TEST(ParseConfigErrorTest, DurationNotANumber) {
  const std::string message = ErrorOf("model:\n  forward: fast\n");
  EXPECT_EQ(message.rfind("run.yaml:2:12: model.forward: 'fast' is not a duration", 0), 0u)
      << message;
}

TEST(ParseConfigErrorTest, MapWhereScalarExpected) {
  const std::string message = ErrorOf("model:\n  forward: {ms: 1}\n");
  EXPECT_EQ(message,
            "run.yaml:2:12: model.forward: found a map (expected a duration such as '1.5ms'; a "
            "bare number means ms)");
  EXPECT_NE(ErrorOf("parallel: {pp: [1]}").find("parallel.pp: found a list (expected an integer"),
            std::string::npos);
}

TEST(ParseConfigErrorTest, MissingValue) {
  const std::string message = ErrorOf("parallel:\n  pp:\n");
  EXPECT_EQ(message, "run.yaml:2:3: parallel.pp: found no value (expected an integer >= 1)");
}

TEST(ParseConfigErrorTest, IntegerNotANumber) {
  const std::string message = ErrorOf("model:\n  layers: abc\n");
  EXPECT_EQ(message,
            "run.yaml:2:11: model.layers: 'abc' is not an integer (expected an integer >= 1)");
}

TEST(ParseConfigErrorTest, IntegerWithFraction) {
  const std::string message = ErrorOf("parallel:\n  microbatches: 1.5\n");
  EXPECT_EQ(message,
            "run.yaml:2:17: parallel.microbatches: '1.5' is not an integer (expected an integer "
            ">= 1)");
}

TEST(ParseConfigErrorTest, IntegerTooSmall) {
  const std::string message = ErrorOf("parallel:\n  pp: 0\n");
  EXPECT_EQ(message,
            "run.yaml:2:7: parallel.pp: '0' must be at least 1 (expected an integer >= 1)");
  EXPECT_NE(
      ErrorOf("schedule: {group_size: 0}").find("schedule.group_size: '0' must be at least 1"),
      std::string::npos);
  EXPECT_NE(ErrorOf("cluster: {nodes: -3}").find("cluster.nodes: '-3' must be at least 1"),
            std::string::npos);
}

TEST(ParseConfigErrorTest, IntegerOutOfRange) {
  for (const std::string value : {"2147483648", "99999999999999999999999"}) {
    const std::string message = ErrorOf("parallel:\n  vpp: " + value + "\n");
    EXPECT_EQ(message, "run.yaml:2:8: parallel.vpp: '" + value +
                           "' is out of range (expected an integer from 1 to 2147483647)");
  }
  EXPECT_EQ(Parse("parallel: {vpp: 2147483647}").parallel.vpp, 2147483647);
}

TEST(ParseConfigErrorTest, UnknownModelType) {
  const std::string message = ErrorOf("model:\n  type: unifrom\n");
  EXPECT_EQ(message,
            "run.yaml:2:9: model.type: unknown model type 'unifrom'; did you mean 'uniform'? "
            "(expected 'uniform')");
}

TEST(ParseConfigErrorTest, UnknownP2pMode) {
  const std::string message = ErrorOf("schedule: {p2p: rendevous}\n");
  EXPECT_EQ(message,
            "run.yaml:1:17: schedule.p2p: unknown mode 'rendevous'; did you mean 'rendezvous'? "
            "(expected 'async' or 'rendezvous')");
}

TEST(ParseConfigErrorTest, NegativeSize) {
  const std::string message = ErrorOf("model:\n  p2p_bytes: -5MiB\n");
  EXPECT_EQ(message,
            "run.yaml:2:14: model.p2p_bytes: '-5MiB' must not be negative (expected a size such "
            "as '64MiB'; a bare number means bytes)");
}

TEST(ParseConfigErrorTest, BadSizeUnit) {
  const std::string message = ErrorOf("model:\n  activation_bytes: 1GIB\n");
  EXPECT_EQ(message.rfind("run.yaml:2:21: model.activation_bytes: bad unit 'GIB'", 0), 0u)
      << message;
  EXPECT_NE(message.find("GiB"), std::string::npos) << message;
}

TEST(ParseConfigErrorTest, BandwidthMustBePositive) {
  const std::string message = ErrorOf("cluster:\n  inter_node: {bandwidth: 0GB/s}\n");
  EXPECT_EQ(message,
            "run.yaml:2:27: cluster.inter_node.bandwidth: '0GB/s' must be positive (expected a "
            "bandwidth such as '300GB/s'; a bare number means bytes per second)");
  EXPECT_NE(ErrorOf("cluster: {inter_node: {bandwidth: 1e999}}").find("out of range"),
            std::string::npos);
}

TEST(ParseConfigErrorTest, BadBandwidthUnit) {
  const std::string message = ErrorOf("cluster:\n  intra_node:\n    bandwidth: 300GB\n");
  EXPECT_EQ(message.rfind("run.yaml:3:16: cluster.intra_node.bandwidth: bad unit 'GB'", 0), 0u)
      << message;
  EXPECT_NE(message.find("GB/s"), std::string::npos) << message;
}

TEST(ParseConfigErrorTest, SourceNameIsUsed) {
  Result<Config> config = ParseConfig("parallel: {pp: 0}", "configs/a.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message.rfind("configs/a.yaml:1:", 0), 0u) << config.error().message;
}

}  // namespace
}  // namespace stagecraft
