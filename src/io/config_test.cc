#include "io/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
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
  expected.parallel.pp = 8;
  expected.parallel.vpp = 2;
  expected.parallel.microbatches = 16;
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
    EXPECT_NE(message.find("'model', 'cluster', 'parallel', 'schedule' or 'multimodal'"),
              std::string::npos)
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

// Found by fuzz/fuzz_config: yaml-cpp 0.7's LoadAll looped forever on these (yaml-cpp#1040).
TEST(ParseConfigErrorTest, StrayTopLevelCommaEndsWithAnError) {
  for (const char* text : {",\n", ",\n b: c\n", "parallel: {pp: 2}\n,\n"}) {
    const std::string message = ErrorOf(text);
    EXPECT_NE(message.find("malformed YAML"), std::string::npos) << text << ": " << message;
  }
}

TEST(ParseConfigErrorTest, TrailingEmptyDocumentsAreFine) {
  EXPECT_TRUE(ParseConfig("parallel: {pp: 2}\n---\n---\n", "run.yaml").ok());
}

TEST(ParseConfigErrorTest, UnknownKeyInSection) {
  const std::string message = ErrorOf("parallel:\n  pp: 2\n  microbatch: 8\n");
  EXPECT_EQ(message,
            "run.yaml:3:3: unknown key 'microbatch' in parallel; did you mean 'microbatches'? "
            "(expected one of 'pp', 'vpp', 'microbatches', 'placement', 'partition', "
            "'layer_counts', 'layout', 'tp', 'dp', 'cp', 'ep', 'cp_mode', "
            "'context_parallel_rotate_method', 'cp_sharding', 'cp_overlap', 'sequence_parallel', "
            "'recompute', 'recompute_num_layers', "
            "'recompute_method', 'distributed_optimizer', 'fp8', 'fp8_recipe', "
            "'enable_fsdp_float8_all_gather', "
            "'fused_kernels', 'engine', "
            "'cross_entropy_fusion', 'overlap_grad_reduce', "
            "'overlap_param_gather', 'tp_comm_overlap', 'async_tp', 'fsdp_reshard_after_forward', "
            "'grad_buckets', 'fsdp', 'zero_stage' or 'precision')");
}

TEST(ParseConfigErrorTest, UnknownTopLevelKey) {
  const std::string message = ErrorOf("modle:\n  layers: 2\n");
  EXPECT_EQ(message.rfind("run.yaml:1:1: unknown key 'modle' at the top level; did you mean "
                          "'model'?",
                          0),
            0u)
      << message;
  EXPECT_NE(
      message.find("(expected one of 'model', 'cluster', 'parallel', 'schedule' or 'multimodal')"),
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
            "(expected 'uniform', 'layers' or 'transformer')");
}

TEST(ParseConfigErrorTest, UnknownP2pMode) {
  const std::string message = ErrorOf("schedule: {p2p: rendevous}\n");
  EXPECT_EQ(message,
            "run.yaml:1:17: schedule.p2p: unknown mode 'rendevous'; did you mean 'rendezvous'? "
            "(expected 'async', 'rendezvous' or 'torch-pipelining')");
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

// ---- Layer-list models (doc/config.md "Layer-list models") ----

LayerSpec Layer(AttentionMode mode, int32_t ratio, int32_t line) {
  LayerSpec layer;
  layer.attention = mode;
  layer.compress_ratio = ratio;
  layer.line = line;
  return layer;
}

LayerSpec OfKind(LayerKind kind, int32_t line) {
  LayerSpec layer;
  layer.kind = kind;
  layer.line = line;
  return layer;
}

TEST(LayerListConfigTest, ParsesExpandsAndResolves) {
  const std::string yaml = R"(model:
  name: tiny
  type: layers
  seq_len: 2048
  micro_batch_size: 2
  dims: {hidden: 1024, top_k: 64, indexer_trained: true}
  layers:
    - {kind: embedding}
    - {attention: swa_only}
    - {attention: full, compress_ratio: 2, mlp: dense}
    - attention: reuse
      compress_ratio: 2
      repeat: 2
      forward: 2ms
      activation_bytes: 1MiB
    - {kind: head}
)";
  ModelSpec expected;
  expected.name = "tiny";
  expected.seq_len = 2048;
  expected.micro_batch_size = 2;
  expected.dims.hidden = 1024;
  expected.dims.top_k = 64;
  expected.dims.indexer_trained = true;
  expected.layers = {OfKind(LayerKind::kEmbedding, 8),    Layer(AttentionMode::kSwaOnly, 0, 9),
                     Layer(AttentionMode::kFull, 2, 10),  Layer(AttentionMode::kReuse, 2, 11),
                     Layer(AttentionMode::kReuse, 2, 11), OfKind(LayerKind::kHead, 16)};
  expected.layers[2].mlp = MlpKind::kDense;
  for (int index : {3, 4}) {
    expected.layers[index].kv_source = 2;
    expected.layers[index].index_source = 2;
    expected.layers[index].forward = Time::Nanoseconds(2 * kMs);
    expected.layers[index].activation_bytes = 1 << 20;
  }
  expected.num_layers = 6;
  const ModelSpec model = Parse(yaml).model;
  ASSERT_EQ(model.layers.size(), expected.layers.size());
  for (size_t index = 0; index < model.layers.size(); ++index) {
    EXPECT_EQ(model.layers[index], expected.layers[index]) << "layers[" << index << "]";
  }
  EXPECT_EQ(model, expected);
}

TEST(LayerListConfigTest, LocationsNameEveryLayer) {
  ConfigLocations locations;
  ASSERT_TRUE(ParseConfig("model:\n  layers:\n    - {attention: full}\n"
                          "    - {attention: reuse, repeat: 2}\n",
                          "run.yaml", &locations)
                  .ok());
  EXPECT_EQ(locations.Where("model.layers[0]"), "run.yaml:3:7: model.layers[0]: ");
  EXPECT_EQ(locations.Where("model.layers[2]"), "run.yaml:4:7: model.layers[2]: ");
  EXPECT_EQ(locations.Where("model.layers[1].attention"),
            "run.yaml:4:19: model.layers[1].attention: ");
}

TEST(LayerListConfigTest, ListWithoutTypeIsALayerList) {
  const Config config = Parse("model:\n  layers: [{attention: full}, {attention: reuse}]\n");
  ASSERT_EQ(config.model.layers.size(), 2u);
  EXPECT_EQ(config.model.layers[1].kv_source, 0);
  EXPECT_EQ(config.model.layers[1].line, 2);
  EXPECT_EQ(Parse("model: {layers: 12}").model.num_layers, 12);  // a count: uniform
}

TEST(LayerListConfigTest, ExplicitSources) {
  const Config config = Parse(R"(model:
  type: layers
  layers:
    - {attention: full, compress_ratio: 1, repeat: 2}
    - {attention: reindex, compress_ratio: 1, kv_source: 0, candidate_source: 0}
    - {attention: reuse, compress_ratio: 1, kv_source: 1, index_source: 0}
)");
  ASSERT_EQ(config.model.layers.size(), 4u);
  EXPECT_EQ(config.model.layers[2].kv_source, 0);
  EXPECT_EQ(config.model.layers[2].candidate_source, 0);
  EXPECT_EQ(config.model.layers[3].kv_source, 1);
  EXPECT_EQ(config.model.layers[3].index_source, 0);
}

TEST(LayerListConfigTest, ResolveErrorsNameTheEntry) {
  EXPECT_EQ(ErrorOf(R"(model:
  type: layers
  layers:
    - {kind: embedding}
    - {attention: full, compress_ratio: 2}
    - {attention: reuse, compress_ratio: 2, repeat: 3}
    - {attention: reuse, compress_ratio: 1}
)"),
            "run.yaml:7:7: layers[5]: reuse has no KV source: no full layer with compression "
            "ratio 1 precedes it (add a full layer with compress_ratio: 1 before it, or set "
            "kv_source)");
  EXPECT_EQ(ErrorOf("model:\n  layers:\n    - {attention: full}\n    - attention: reuse\n"
                    "      kv_source: 1\n"),
            "run.yaml:4:7: layers[1]: reuse takes KV from layer 1, which is itself (a source must "
            "precede its consumer)");
}

TEST(LayerListConfigTest, ModelTypeErrors) {
  EXPECT_EQ(ErrorOf("model:\n  type: layers\n"),
            "run.yaml:2:9: model.type: a layer-list model needs model.layers, a list of layer "
            "entries such as [{kind: embedding}, {attention: full}, {kind: head}]");
  EXPECT_EQ(ErrorOf("model:\n  type: layers\n  layers: 40\n"),
            "run.yaml:3:11: model.layers: found '40', a layer count (for type: uniform) (expected "
            "a list of layer entries such as [{kind: embedding}, {attention: full}, {kind: "
            "head}])");
  EXPECT_EQ(ErrorOf("model:\n  type: layers\n  layers: []\n"),
            "run.yaml:3:11: model.layers: found a list (expected a list of layer entries such as "
            "[{kind: embedding}, {attention: full}, {kind: head}])");
  EXPECT_EQ(ErrorOf("model:\n  type: uniform\n  layers: [{attention: full}]\n"),
            "run.yaml:3:11: model.layers: found a list of layers, but the model type is 'uniform' "
            "(a layer list needs type: layers; a uniform model takes a layer count)");
  EXPECT_EQ(ErrorOf("model:\n  forward: 2ms\n  layers: [{attention: full}]\n"),
            "run.yaml:2:12: model.forward: applies to the uniform model only (a layer-list model "
            "has per-layer costs: set it on a layer entry, or leave it out to derive it)");
  EXPECT_EQ(ErrorOf("model:\n  seq_len: 4096\n"),
            "run.yaml:2:12: model.seq_len: applies to layer-list and transformer models only "
            "(type: layers or transformer), or next to --hf-config");
}

TEST(LayerListConfigTest, RunShapeNextToHfModel) {
  // Issue 13 item 7: next to --hf-config the model section may give the run's shape only.
  ParseOptions options;
  options.model_from_hf = true;
  auto config =
      ParseConfig("model:\n  seq_len: 8192\n  micro_batch_size: 2\n", "run.yaml", nullptr, options);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config.value().model.seq_len, 8192);
  EXPECT_EQ(config.value().model.micro_batch_size, 2);
  auto dims = ParseConfig("model:\n  dims: {hidden: 8}\n", "run.yaml", nullptr, options);
  ASSERT_FALSE(dims.ok());
  EXPECT_EQ(dims.error().message,
            "run.yaml:2:9: model.dims: applies to layer-list models only (type: layers)");
}

TEST(LayerListConfigTest, EntryErrors) {
  const std::string head = "model:\n  layers:\n    - {attention: full}\n";
  EXPECT_EQ(ErrorOf(head + "    - {attention: reuze}\n"),
            "run.yaml:4:19: model.layers[1].attention: unknown attention mode 'reuze'; did you "
            "mean 'reuse'? (expected 'full', 'reindex', 'reuse' or 'swa_only')");
  EXPECT_EQ(ErrorOf(head + "    - {attention: reuse, repeat: 0}\n"),
            "run.yaml:4:34: model.layers[1].repeat: '0' must be at least 1 (expected an integer "
            ">= 1)");
  EXPECT_EQ(ErrorOf(head + "    - {attention: reuse, kv_sorce: 0}\n"),
            "run.yaml:4:26: unknown key 'kv_sorce' in model.layers[1]; did you mean 'kv_source'? "
            "(expected one of 'kind', 'attention', 'compress_ratio', 'mlp', 'repeat', 'kv_source', "
            "'index_source', 'candidate_source', 'forward', 'input_grad', 'weight_grad', "
            "'activation_bytes', 'weight_grad_bytes', 'engram' or 'parts')");
  EXPECT_EQ(ErrorOf(head + "    - full\n"),
            "run.yaml:4:7: model.layers[1]: found 'full' (expected a layer entry, a map such as "
            "{attention: full, compress_ratio: 1})");
  EXPECT_EQ(ErrorOf(head + "    - {kind: head, attention: full}\n"),
            "run.yaml:4:31: model.layers[1].attention: applies to decoder layers only (this entry "
            "has kind: head; remove it)");
  EXPECT_EQ(ErrorOf(head + "    - {attention: reuse, kv_source: -1}\n"),
            "run.yaml:4:37: model.layers[1].kv_source: '-1' must be at least 0 (expected an "
            "integer >= 0)");
  EXPECT_EQ(ErrorOf(head + "    - {attention: reuse, repeat: 2000000}\n"),
            "run.yaml:4:7: model.layers[1]: the model would have more than 10000 layers (lower "
            "repeat)");
  // Errors inside a repeated entry name its first layer.
  EXPECT_EQ(ErrorOf(head + "    - {attention: reuse, repeat: 3}\n    - {mlp: dens}\n"),
            "run.yaml:5:13: model.layers[4].mlp: unknown mlp 'dens'; did you mean 'dense'? "
            "(expected 'moe' or 'dense')");
}

TEST(LayerListConfigTest, SwaOnlyRatio) {
  const Config config = Parse("model:\n  layers: [{attention: swa_only, compress_ratio: 0}]\n");
  EXPECT_EQ(config.model.layers[0].compress_ratio, 0);
  EXPECT_EQ(ErrorOf("model:\n  layers: [{attention: swa_only, compress_ratio: 2}]\n"),
            "run.yaml:2:12: layers[0]: swa_only has no compressed KV, so compress_ratio must be 0 "
            "(or left out), not 2");
}

TEST(LayerListConfigTest, DimsErrors) {
  EXPECT_EQ(ErrorOf("model:\n  type: layers\n  dims: {hidden: 0}\n  layers: [{attention: full}]\n"),
            "run.yaml:3:18: model.dims.hidden: '0' must be at least 1 (expected an integer >= 1)");
  EXPECT_EQ(ErrorOf("model:\n  dims: {indexer_trained: yes}\n  layers: [{attention: full}]\n"),
            "run.yaml:2:27: model.dims.indexer_trained: unknown boolean 'yes' (expected 'true' or "
            "'false')");
  EXPECT_EQ(
      ErrorOf("model:\n  dims: {routed_experts: 4}\n  layers: [{attention: full}]\n"),
      "run.yaml:2:26: model.dims.routed_experts: experts_per_token 6 exceeds routed_experts 4 "
      "(a token picks its experts among the routed ones)");
  EXPECT_NE(ErrorOf("model:\n  dims: {hiden: 1}\n  layers: [{attention: full}]\n")
                .find("did you mean 'hidden'?"),
            std::string::npos);
}

TEST(ClusterDeviceTest, PeakAndEfficiency) {
  const Config config = Parse("cluster:\n  device: {peak_tflops: 312, efficiency: 0.5}\n");
  EXPECT_EQ(config.cluster.peak_flops_per_s, 312e12);
  EXPECT_EQ(config.cluster.compute_efficiency, 0.5);
  EXPECT_EQ(config.cluster.effective_flops_per_s(), 156e12);
  EXPECT_EQ(ErrorOf("cluster:\n  device: {efficiency: 1.5}\n"),
            "run.yaml:2:24: cluster.device.efficiency: '1.5' is out of range (expected a fraction "
            "> 0 and <= 1 such as 0.4)");
  EXPECT_EQ(ErrorOf("cluster:\n  device: {peak_tflops: fast}\n"),
            "run.yaml:2:25: cluster.device.peak_tflops: 'fast' is not a number (expected TFLOP/s, "
            "a number > 0 such as 989.5)");
  EXPECT_NE(ErrorOf("cluster: {device: {peak_tflops: 0}}").find("out of range"), std::string::npos);
  EXPECT_NE(ErrorOf("cluster: {device: {peak_tflops: inf}}").find("not a number"),
            std::string::npos);
}

TEST(ParallelPartitionTest, Keys) {
  const Config config = Parse(
      "parallel:\n  placement: v\n  vpp: 2\n  partition: counts\n  layer_counts: [3, 4, 3]\n");
  EXPECT_EQ(config.parallel.placement, Placement::kV);
  EXPECT_EQ(config.parallel.partition, PartitionMethod::kCounts);
  EXPECT_EQ(config.parallel.layer_counts, (std::vector<int32_t>{3, 4, 3}));
  EXPECT_EQ(Parse("parallel: {partition: cost}").parallel.partition, PartitionMethod::kCost);
  EXPECT_EQ(Parse("parallel: {}").parallel.partition, PartitionMethod::kStateAware);
  // Either list alone implies its partition.
  EXPECT_EQ(Parse("parallel: {layer_counts: [2, 2]}").parallel.partition, PartitionMethod::kCounts);
  const Config layout = Parse("parallel: {layout: 'Et*3|t*4|t*3L'}");
  EXPECT_EQ(layout.parallel.partition, PartitionMethod::kLayout);
  EXPECT_EQ(layout.parallel.layout, "Et*3|t*4|t*3L");
}

TEST(ParallelPartitionTest, Errors) {
  EXPECT_EQ(ErrorOf("parallel:\n  partition: state_aware\n"),
            "run.yaml:2:14: parallel.partition: unknown partition method 'state_aware'; did you "
            "mean 'state-aware'? (expected 'state-aware', 'cost', 'counts' or 'layout')");
  EXPECT_EQ(ErrorOf("parallel:\n  placement: zigzag\n"),
            "run.yaml:2:14: parallel.placement: unknown placement 'zigzag' (expected 'loop', 'v' "
            "or 'dual')");
  EXPECT_EQ(
      ErrorOf("parallel:\n  partition: counts\n"),
      "run.yaml:2:14: parallel.partition: 'counts' needs parallel.layer_counts, one count per "
      "stage");
  EXPECT_EQ(ErrorOf("parallel:\n  partition: layout\n"),
            "run.yaml:2:14: parallel.partition: 'layout' needs parallel.layout, e.g. "
            "'Et*3|t*4|t*3L'");
  EXPECT_EQ(ErrorOf("parallel:\n  partition: cost\n  layer_counts: [1, 2]\n"),
            "run.yaml:3:17: parallel.layer_counts: is not used with partition: cost (remove it, or "
            "set partition: counts)");
  EXPECT_EQ(ErrorOf("parallel:\n  layer_counts: [1]\n  layout: E|L\n"),
            "run.yaml:3:11: parallel.layout: give layer_counts or layout, not both");
  EXPECT_EQ(ErrorOf("parallel:\n  layer_counts: [1, 0]\n"),
            "run.yaml:2:21: parallel.layer_counts[1]: '0' must be at least 1 (expected an integer "
            ">= 1)");
  EXPECT_EQ(ErrorOf("parallel:\n  layer_counts: []\n"),
            "run.yaml:2:17: parallel.layer_counts: found a list (expected a list of layer counts, "
            "one per stage, such as [3, 4, 3])");
  EXPECT_EQ(ErrorOf("parallel:\n  layout: ''\n"),
            "run.yaml:2:11: parallel.layout: is empty (expected a layout such as 'Et*3|t*4|t*3L')");
}

// CSA2 context parallelism: the sharding (zig-zag by default) and the all-gather overlap (on by
// default).
TEST(ParallelContextTest, ShardingAndOverlap) {
  const Config defaults = Parse("parallel: {cp: 2}");
  EXPECT_EQ(defaults.parallel.cp_sharding, CpSharding::kZigzag);
  EXPECT_TRUE(defaults.parallel.cp_overlap);
  const Config config =
      Parse("parallel:\n  cp: 4\n  cp_sharding: contiguous\n  cp_overlap: false\n");
  EXPECT_EQ(config.parallel.cp, 4);
  EXPECT_EQ(config.parallel.cp_sharding, CpSharding::kContiguous);
  EXPECT_FALSE(config.parallel.cp_overlap);
  EXPECT_EQ(Parse("parallel: {cp_sharding: zigzag}").parallel.cp_sharding, CpSharding::kZigzag);
  EXPECT_EQ(ErrorOf("parallel:\n  cp_sharding: zig-zag\n"),
            "run.yaml:2:16: parallel.cp_sharding: unknown cp sharding 'zig-zag'; did you mean "
            "'zigzag'? (expected 'contiguous' or 'zigzag')");
  EXPECT_EQ(ErrorOf("parallel:\n  cp_overlap: yes\n"),
            "run.yaml:2:15: parallel.cp_overlap: unknown boolean 'yes' (expected 'true' or "
            "'false')");
}

TEST(ScheduleStateTest, Keys) {
  const Config config = Parse(
      "schedule:\n  state_policy: shadow\n  shadow_reading: selection-side\n"
      "  state_buffer_slots: 2\n");
  EXPECT_EQ(config.schedule.state_policy, StatePolicy::kShadow);
  EXPECT_EQ(config.schedule.shadow_reading, ShadowReading::kSelectionSide);
  EXPECT_EQ(config.schedule.state_buffer_slots, 2);
  EXPECT_EQ(Parse("schedule: {state_policy: auto}").schedule.state_policy, StatePolicy::kAuto);
  EXPECT_EQ(Parse("schedule: {state_policy: direct}").schedule.state_policy, StatePolicy::kDirect);
  EXPECT_EQ(ErrorOf("schedule:\n  state_policy: payloads\n"),
            "run.yaml:2:17: schedule.state_policy: unknown state policy 'payloads'; did you mean "
            "'payload'? (expected 'payload', 'direct', 'shadow' or 'auto')");
  EXPECT_EQ(ErrorOf("schedule:\n  shadow_reading: keyside\n"),
            "run.yaml:2:19: schedule.shadow_reading: unknown shadow reading 'keyside'; did you "
            "mean 'key-side'? (expected 'key-side' or 'selection-side')");
  EXPECT_EQ(ErrorOf("schedule:\n  state_buffer_slots: -1\n"),
            "run.yaml:2:23: schedule.state_buffer_slots: '-1' must be at least 0 (expected an "
            "integer >= 0)");
}

// ---- The examples parse and resolve (STYLE.md: examples never rot) ----

// examples/<name>, found from this file's path (the compiler is given absolute source paths).
std::string ReadExample(const std::string& name) {
  const std::filesystem::path path =
      std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "examples" / name;
  std::ifstream stream(path);
  EXPECT_TRUE(stream.good()) << "cannot read " << path;
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

// doc/csa2.md: kv_source_layer_ids=[2,8,14,20], index_source_layer_ids=[2,8,14,20,24,28,32,36],
// candidate_source_layer_id=20, as decoder layers Lk = layers[k + 1].
TEST(ExamplesTest, DeepSeekV41Flash) {
  const Config config = Parse(ReadExample("deepseek-v4.1-flash.yaml"));
  const ModelSpec& model = config.model;
  ASSERT_EQ(model.layers.size(), 42u);
  EXPECT_EQ(model.dims, Csa2Dims());  // the defaults are V4.1-Flash
  std::set<int32_t> kv, index, candidates;
  for (const LayerSpec& layer : model.layers) {
    if (layer.kv_source >= 0) kv.insert(layer.kv_source - 1);
    if (layer.index_source >= 0) index.insert(layer.index_source - 1);
    if (layer.candidate_source >= 0) candidates.insert(layer.candidate_source - 1);
  }
  EXPECT_EQ(kv, (std::set<int32_t>{2, 8, 14, 20}));
  EXPECT_EQ(index, (std::set<int32_t>{2, 8, 14, 20, 24, 28, 32, 36}));
  EXPECT_EQ(candidates, (std::set<int32_t>{20}));
  std::vector<int32_t> ratios;  // compress_ratios = [0,0]+[2]*18+[1]*20
  for (size_t layer = 1; layer + 1 < model.layers.size(); ++layer) {
    ratios.push_back(model.layers[layer].compress_ratio);
  }
  std::vector<int32_t> expected_ratios = {0, 0};
  expected_ratios.insert(expected_ratios.end(), 18, 2);
  expected_ratios.insert(expected_ratios.end(), 20, 1);
  EXPECT_EQ(ratios, expected_ratios);
  EXPECT_EQ(config.cluster.inter_node.bandwidth_bytes_per_s, 50e9);
  EXPECT_EQ(config.cluster.intra_node.bandwidth_bytes_per_s, 160e9);
  EXPECT_EQ(config.parallel.pp, 8);
  EXPECT_EQ(config.parallel.microbatches, 32);
  EXPECT_EQ(config.schedule.state_policy, StatePolicy::kPayload);
}

TEST(ExamplesTest, Csa2Small) {
  const Config config = Parse(ReadExample("csa2-small.yaml"));
  ASSERT_EQ(config.model.layers.size(), 10u);
  EXPECT_EQ(config.model.layers[7].candidate_source, 5);
  EXPECT_EQ(config.model.layers[8].index_source, 7);
  EXPECT_EQ(config.parallel.pp, 4);
}

}  // namespace
}  // namespace stagecraft
