#include "io/validation_set.h"

#include <gtest/gtest.h>

#include <string>

#include "io/config.h"

namespace stagecraft {
namespace {

// Two runs; the line numbers the tests below expect are this text's (line 1 is the comment).
// Run a's config spans lines 14-25 with a blank line and a comment inside; run b's config is a
// flow map on line 30.
constexpr char kFile[] = R"(# A test source: two runs.
source:
  id: test-source
  cite: "A paper, Table 1"
  url: "https://example.org/paper"
  measured: "per-GPU throughput of end-to-end training"
runs:
  - id: run-a
    hardware: "16 x A100 SXM4 80GB"
    published: "150 TFLOP/s per GPU"
    step_s: 1.5
    derivation: "3/2"
    assumed: "micro-batch 2"
    config:
      model:
        name: gpt-small
        type: transformer
        seq_len: 2048
        micro_batch_size: 2

        transformer: {layers: 4, hidden: 1024, heads: 16, vocab: 51200}
      # the cluster
      cluster: {preset: a100x2}
      parallel: {pp: 2, tp: 2, dp: 4, microbatches: 8}
      schedule: {name: 1f1b}
  - id: run-b
    hardware: "8 x H100"
    published: "2.5 s per iteration"
    step_s: 2.5
    config: {cluster: {preset: h100}, parallel: {pp: 1, microbatches: 4}, schedule: {name: 1f1b}}
)";

constexpr char kName[] = "runs.yaml";

// kFile with the first `from` replaced by `to`.
std::string With(const std::string& from, const std::string& to) {
  std::string text = kFile;
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string ErrorOf(const std::string& text) {
  Result<MeasurementSource> source = ParseMeasurementSource(text, kName);
  EXPECT_FALSE(source.ok()) << "parsed without error:\n" << text;
  return source.ok() ? "" : source.error().message;
}

TEST(ValidationSetTest, ParsesTwoRuns) {
  Result<MeasurementSource> parsed = ParseMeasurementSource(kFile, kName);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const MeasurementSource& source = parsed.value();
  EXPECT_EQ(source.id, "test-source");
  EXPECT_EQ(source.cite, "A paper, Table 1");
  EXPECT_EQ(source.url, "https://example.org/paper");
  EXPECT_EQ(source.measured, "per-GPU throughput of end-to-end training");
  ASSERT_EQ(source.runs.size(), 2u);
  const MeasuredRun& a = source.runs[0];
  EXPECT_EQ(a.id, "run-a");
  EXPECT_EQ(a.hardware, "16 x A100 SXM4 80GB");
  EXPECT_EQ(a.published, "150 TFLOP/s per GPU");
  EXPECT_EQ(a.step_s, 1.5);
  EXPECT_EQ(a.derivation, "3/2");
  EXPECT_EQ(a.assumed, "micro-batch 2");
  const MeasuredRun& b = source.runs[1];
  EXPECT_EQ(b.id, "run-b");
  EXPECT_EQ(b.step_s, 2.5);
  EXPECT_EQ(b.derivation, "");  // optional keys left out
  EXPECT_EQ(b.assumed, "");
}

// Each run's config is YAML text that ParseConfig reads into the run's model, cluster and
// parallel layout.
TEST(ValidationSetTest, ConfigTextParsesAsTheRunsConfig) {
  Result<MeasurementSource> parsed = ParseMeasurementSource(kFile, kName);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  Result<Config> a = ParseConfig(parsed.value().runs[0].config_text, kName);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a.value().model.name, "gpt-small");
  EXPECT_TRUE(a.value().model.is_transformer());
  EXPECT_EQ(a.value().model.seq_len, 2048);
  EXPECT_EQ(a.value().model.micro_batch_size, 2);
  EXPECT_EQ(a.value().model.transformer.layers, 4);
  EXPECT_EQ(a.value().model.transformer.hidden, 1024);
  EXPECT_EQ(a.value().model.transformer.heads, 16);
  EXPECT_EQ(a.value().cluster.device, "a100");
  EXPECT_EQ(a.value().cluster.nodes, 2);
  EXPECT_EQ(a.value().parallel.pp, 2);
  EXPECT_EQ(a.value().parallel.tp, 2);
  EXPECT_EQ(a.value().parallel.dp, 4);
  EXPECT_EQ(a.value().parallel.microbatches, 8);
  // Run a's config ends where run b begins: nothing of run b is in it.
  EXPECT_EQ(parsed.value().runs[0].config_text.find("run-b"), std::string::npos);
  Result<Config> b = ParseConfig(parsed.value().runs[1].config_text, kName);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b.value().cluster.device, "h100");
  EXPECT_EQ(b.value().parallel.pp, 1);
  EXPECT_EQ(b.value().parallel.microbatches, 4);
}

// ParseConfig's messages point into the file: the config text keeps the file's lines and
// columns. "seq_len" is on line 18 at column 9 (8 spaces in); "pp" of run b's flow map on line
// 30 after `    config: {cluster: {preset: h100}, parallel: {` (49 characters).
TEST(ValidationSetTest, ConfigErrorsNameTheFilesLine) {
  Result<MeasurementSource> typo = ParseMeasurementSource(With("seq_len:", "seq_lem:"), kName);
  ASSERT_TRUE(typo.ok()) << typo.error().message;
  Result<Config> a = ParseConfig(typo.value().runs[0].config_text, kName);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message.rfind("runs.yaml:18:9: ", 0), 0u) << a.error().message;
  EXPECT_NE(a.error().message.find("seq_lem"), std::string::npos) << a.error().message;
  Result<MeasurementSource> flow = ParseMeasurementSource(With("{pp: 1,", "{ppp: 1,"), kName);
  ASSERT_TRUE(flow.ok()) << flow.error().message;
  Result<Config> b = ParseConfig(flow.value().runs[1].config_text, kName);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message.rfind("runs.yaml:30:50: ", 0), 0u) << b.error().message;
}

// run a's map starts at its first key, line 8 column 5 (after "  - ").
TEST(ValidationSetErrorTest, MissingStepSeconds) {
  const std::string message = ErrorOf(With("    step_s: 1.5\n", ""));
  EXPECT_EQ(message.rfind("runs.yaml:8:5: run: missing key 'step_s'", 0), 0u) << message;
}

// step_s's value on line 11 at column 13 ("    step_s: " is 12 characters).
TEST(ValidationSetErrorTest, StepSecondsNotPositive) {
  for (const char* value : {"0", "-1.5", "fast", "[1]"}) {
    const std::string message = ErrorOf(With("step_s: 1.5", std::string("step_s: ") + value));
    EXPECT_EQ(message.rfind("runs.yaml:11:13: run run-a: step_s is not a number > 0", 0), 0u)
        << message;
  }
}

TEST(ValidationSetErrorTest, UnknownKey) {
  const std::string run = ErrorOf(With("    hardware:", "    hardwere:"));
  EXPECT_EQ(run.rfind("runs.yaml:9:5: run: unknown key 'hardwere'", 0), 0u) << run;
  const std::string source = ErrorOf(With("  url:", "  link:"));
  EXPECT_EQ(source.rfind("runs.yaml:5:3: source: unknown key 'link'", 0), 0u) << source;
  const std::string top = ErrorOf(std::string(kFile) + "notes: x\n");
  // kFile has 30 lines; the appended key is the 31st.
  EXPECT_EQ(top.rfind("runs.yaml:31:1: the file: unknown key 'notes'", 0), 0u) << top;
}

// `runs:` is on line 7; its value starts after "runs: " at column 7.
TEST(ValidationSetErrorTest, EmptyRuns) {
  const std::string text =
      std::string(kFile).substr(0, std::string(kFile).find("runs:")) + "runs: []\n";
  const std::string message = ErrorOf(text);
  EXPECT_EQ(message.rfind("runs.yaml:7:7: runs is not a non-empty list", 0), 0u) << message;
}

// An unclosed flow map on line 23: yaml-cpp reads on into line 24 and fails there, where the
// next block key stands in the flow map. A tab opening line 9: at its column 1.
TEST(ValidationSetErrorTest, MalformedYaml) {
  const std::string message = ErrorOf(With("{preset: a100x2}", "{preset: a100x2"));
  EXPECT_EQ(message.rfind("runs.yaml:24:", 0), 0u) << message;
  EXPECT_NE(message.find("end of map flow not found (expected YAML)"), std::string::npos)
      << message;
  const std::string tab = ErrorOf(With("    hardware:", "\thardware:"));
  EXPECT_EQ(tab.rfind("runs.yaml:9:1: ", 0), 0u) << tab;
  EXPECT_NE(tab.find("tab"), std::string::npos) << tab;
}

TEST(ValidationSetErrorTest, ConfigNotAMap) {
  const std::string scalar =
      ErrorOf(With("    config: {cluster: {preset: h100}, parallel: {pp: 1, microbatches: 4}, "
                   "schedule: {name: 1f1b}}",
                   "    config: none"));
  EXPECT_EQ(scalar.rfind("runs.yaml:30:13: run run-b: config is not a map", 0), 0u) << scalar;
}

}  // namespace
}  // namespace stagecraft
