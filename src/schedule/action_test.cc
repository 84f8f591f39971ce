#include "schedule/action.h"

#include <gtest/gtest.h>

#include <string>

namespace stagecraft {
namespace {

Action Make(int32_t stage, ActionKind kind, int32_t microbatch) {
  return Action{StageId(stage), kind, MicrobatchId(microbatch)};
}

std::string ErrorOf(const std::string& text) {
  const Result<Action> action = ParseAction(text);
  EXPECT_FALSE(action.ok()) << "'" << text << "' parsed as " << FormatAction(action.value());
  return action.ok() ? "" : action.error().message;
}

TEST(ActionTest, KindLetters) {
  EXPECT_EQ(ActionKindLetter(ActionKind::kForward), 'F');
  EXPECT_EQ(ActionKindLetter(ActionKind::kBackward), 'B');
  EXPECT_EQ(ActionKindLetter(ActionKind::kInputGrad), 'I');
  EXPECT_EQ(ActionKindLetter(ActionKind::kWeightGrad), 'W');
}

TEST(ActionTest, Format) {
  EXPECT_EQ(FormatAction(Make(2, ActionKind::kForward, 0)), "2F0");
  EXPECT_EQ(FormatAction(Make(5, ActionKind::kInputGrad, 3)), "5I3");
  EXPECT_EQ(FormatAction(Make(12, ActionKind::kWeightGrad, 105)), "12W105");
  EXPECT_EQ(FormatAction(Make(0, ActionKind::kBackward, 7)), "0B7");
}

TEST(ActionTest, ParseExamples) {
  const Result<Action> action = ParseAction("5I3");
  ASSERT_TRUE(action.ok()) << action.error().message;
  EXPECT_EQ(action.value(), Make(5, ActionKind::kInputGrad, 3));
  const Result<Action> spaced = ParseAction("  12W105 \t");
  ASSERT_TRUE(spaced.ok()) << spaced.error().message;
  EXPECT_EQ(spaced.value(), Make(12, ActionKind::kWeightGrad, 105));
  const Result<Action> large = ParseAction("2147483647F2147483647");
  ASSERT_TRUE(large.ok()) << large.error().message;
  EXPECT_EQ(large.value(), Make(2147483647, ActionKind::kForward, 2147483647));
}

TEST(ActionTest, RoundTrip) {
  for (ActionKind kind : {ActionKind::kForward, ActionKind::kBackward, ActionKind::kInputGrad,
                          ActionKind::kWeightGrad}) {
    for (int32_t stage : {0, 1, 9, 10, 63, 1000}) {
      for (int32_t microbatch : {0, 3, 10, 511, 99999}) {
        const Action action = Make(stage, kind, microbatch);
        const Result<Action> parsed = ParseAction(FormatAction(action));
        ASSERT_TRUE(parsed.ok()) << parsed.error().message;
        EXPECT_EQ(parsed.value(), action);
        EXPECT_EQ(FormatAction(parsed.value()), FormatAction(action));
      }
    }
  }
}

TEST(ActionTest, ErrorsSayWhatWasExpected) {
  for (const std::string text :
       {"", "F0", "2F", "2X0", "2f0", "2F0x", "2 F0", "-1F0", "2F-1", "2F0,", "99999999999F0"}) {
    const std::string message = ErrorOf(text);
    EXPECT_NE(message.find("{stage}{F|B|I|W}{microbatch}"), std::string::npos)
        << "'" << text << "': " << message;
  }
}

TEST(ActionTest, ErrorsNameTheProblem) {
  EXPECT_NE(ErrorOf("2X0").find("unknown kind 'X'"), std::string::npos);
  EXPECT_NE(ErrorOf("2F").find("no microbatch number"), std::string::npos);
  EXPECT_NE(ErrorOf("2F0x").find("trailing characters"), std::string::npos);
  EXPECT_NE(ErrorOf("12").find("no kind letter"), std::string::npos);
  EXPECT_NE(ErrorOf("2X0").find("'2X0'"), std::string::npos);
}

TEST(ActionTest, ReleasesActivation) {
  EXPECT_FALSE(ReleasesActivation(ActionKind::kForward));
  EXPECT_TRUE(ReleasesActivation(ActionKind::kBackward));
  EXPECT_TRUE(ReleasesActivation(ActionKind::kInputGrad));
  EXPECT_FALSE(ReleasesActivation(ActionKind::kWeightGrad));
}

}  // namespace
}  // namespace stagecraft
