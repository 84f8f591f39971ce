#include "commands/transcript.h"

#include <gtest/gtest.h>

#include "run/simulate.h"

namespace stagecraft {
namespace {

TEST(TranscriptTest, KeepsTheOrderOfSaying) {
  Transcript transcript;
  transcript.out() << "table " << 1 << "\n";
  transcript.out() << "row\n";
  transcript.err() << "note\n";
  transcript.out() << 'x';
  ASSERT_EQ(transcript.pieces().size(), 3u);
  EXPECT_EQ(transcript.pieces()[0].channel, Transcript::Channel::kAnswer);
  EXPECT_EQ(transcript.pieces()[0].text, "table 1\nrow\n");
  EXPECT_EQ(transcript.pieces()[1].channel, Transcript::Channel::kDiagnostic);
  EXPECT_EQ(transcript.pieces()[1].text, "note\n");
  EXPECT_EQ(transcript.pieces()[2].text, "x");
  EXPECT_EQ(transcript.Text(Transcript::Channel::kAnswer), "table 1\nrow\nx");
  EXPECT_EQ(transcript.Text(Transcript::Channel::kDiagnostic), "note\n");
}

TEST(FormatErrorTest, MessageThenDetailOrAReportForViolations) {
  EXPECT_EQ(FormatError(Error{"bad --pp"}), "stagecraft: error: bad --pp\n");
  EXPECT_EQ(FormatError(MakeError(ErrorKind::kDeadlock, "deadlock", "cycle\n")),
            "stagecraft: error: deadlock\ncycle\n");
  EXPECT_EQ(FormatError(MakeError(ErrorKind::kViolation, "broken", "v1\nv2\n")),
            "v1\nv2\nstagecraft: broken\n");
  EXPECT_EQ(FormatError(MakeError(ErrorKind::kViolation, "")), "");
  EXPECT_EQ(FormatError(Error{std::string("a\xff")}), "stagecraft: error: a\\xff\n");
}

TEST(SimulateSpecTest, ReadsThroughTheInjectedFiles) {
  RunSpec spec;
  spec.config_path = "in-memory.yaml";
  spec.files.read = [](const std::string& path) -> Result<std::string> {
    if (path != "in-memory.yaml") return Error{"unexpected read of " + path};
    return std::string(
        "model: {forward: 1ms, input_grad: 1ms, weight_grad: 1ms}\n"
        "parallel: {pp: 4, microbatches: 8}\n"
        "schedule: {name: 1f1b}\n");
  };
  auto outcome = SimulateSpec(spec);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  // 1F1B on p = 4, m = 8 with F = I = W = 1 ms: (m + p - 1)(F + B) = 11 x 3 ms.
  EXPECT_EQ(outcome.value().metrics.makespan, Milliseconds(33));
  EXPECT_EQ(outcome.value().info.pp, 4);

  spec.pp = "0";
  auto refused = SimulateSpec(spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(refused.error().message, "--pp: must be at least 1, got 0");
}

}  // namespace
}  // namespace stagecraft
