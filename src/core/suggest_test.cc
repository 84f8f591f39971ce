#include "core/suggest.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stagecraft {
namespace {

// The generator names of schedule/generator.cc (core may not depend on schedule).
const std::vector<std::string> kScheduleNames = {"gpipe", "1f1b", "interleaved-1f1b", "looped-bfs"};

TEST(SuggestClosestTest, OneEditAway) {
  EXPECT_EQ(SuggestClosest("gpip", kScheduleNames), "gpipe");
  EXPECT_EQ(SuggestClosest("1f1bb", kScheduleNames), "1f1b");
  EXPECT_EQ(SuggestClosest("looped-bf", kScheduleNames), "looped-bfs");
  EXPECT_EQ(SuggestClosest("interleaved-1f1", kScheduleNames), "interleaved-1f1b");
}

TEST(SuggestClosestTest, CaseInsensitive) {
  EXPECT_EQ(SuggestClosest("GPIPE", kScheduleNames), "gpipe");
  EXPECT_EQ(SuggestClosest("1F1B", kScheduleNames), "1f1b");
}

// STYLE.md rule 5's own example ("unknown schedule 'ifb1'; did you mean '1f1b'?"). Plain
// Levenshtein puts "ifb1" 3 edits from "1f1b", over the limit max(2, 4/3) = 2; counting a swap
// of neighbours as one edit (optimal string alignment) gives 2. Regression test.
TEST(SuggestClosestTest, StyleGuideExampleIfb1SuggestsOneFOneB) {
  EXPECT_EQ(SuggestClosest("ifb1", kScheduleNames), "1f1b");
  EXPECT_EQ(DidYouMean("ifb1", kScheduleNames), "; did you mean '1f1b'?");
}

TEST(SuggestClosestTest, SingleTranspositionIsSuggested) {
  EXPECT_EQ(SuggestClosest("gpiep", kScheduleNames), "gpipe");
  EXPECT_EQ(SuggestClosest("lopoed-bfs", kScheduleNames), "looped-bfs");
}

TEST(SuggestClosestTest, NothingForAFarWord) {
  EXPECT_EQ(SuggestClosest("transformer", kScheduleNames), "");
  EXPECT_EQ(SuggestClosest("zzzz", kScheduleNames), "");
  EXPECT_EQ(SuggestClosest("gpipe", {}), "");
  EXPECT_EQ(DidYouMean("transformer", kScheduleNames), "");
}

TEST(SuggestClosestTest, ExactMatchWins) {
  EXPECT_EQ(SuggestClosest("1f1b", kScheduleNames), "1f1b");
}

TEST(SuggestClosestTest, FirstCandidateWinsATie) {
  EXPECT_EQ(SuggestClosest("ab", {"ax", "ay"}), "ax");
}

TEST(DidYouMeanTest, Format) {
  EXPECT_EQ(DidYouMean("gpip", kScheduleNames), "; did you mean 'gpipe'?");
}

TEST(JoinChoicesTest, Format) {
  EXPECT_EQ(JoinChoices({}), "");
  EXPECT_EQ(JoinChoices({"a"}), "'a'");
  EXPECT_EQ(JoinChoices({"a", "b"}), "'a' or 'b'");
  EXPECT_EQ(JoinChoices({"a", "b", "c"}), "'a', 'b' or 'c'");
}

TEST(EscapeBytesTest, KeepsPrintableAsciiAndValidUtf8) {
  EXPECT_EQ(EscapeBytes("--pp 4\tok\n"), "--pp 4\tok\n");
  EXPECT_EQ(EscapeBytes("p \xc3\x97 v \xe2\x86\x92 \xf0\x9f\x99\x82"),
            "p \xc3\x97 v \xe2\x86\x92 \xf0\x9f\x99\x82");
}

TEST(EscapeBytesTest, EscapesControlAndInvalidBytes) {
  EXPECT_EQ(EscapeBytes(std::string("a\x01\x7f\xff\xfe", 5)), "a\\x01\\x7f\\xff\\xfe");
  EXPECT_EQ(EscapeBytes("\xc3"), "\\xc3");                    // truncated sequence
  EXPECT_EQ(EscapeBytes("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(EscapeBytes("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
}

// Issue 35, D6: a megabyte-long unknown word is compared only with candidates within reach of
// its length (none here), and its message is cut to kMaxMessageBytes with the size stated.
TEST(SuggestClosestTest, MegabyteWordHasNoSuggestion) {
  const std::string word(1 << 20, 'x');
  EXPECT_EQ(
      SuggestClosest(word, {"--pipeline-model-parallel-size", "--tensor-model-parallel-size"}), "");
}

TEST(EchoInputTest, QuotesAtMostTheLimit) {
  EXPECT_EQ(EchoInput("--pp\x01"), "--pp\\x01");
  EXPECT_EQ(EchoInput(std::string(200, 'x'), 4), "xxxx... (200 bytes)");
}

TEST(EscapeMessageTest, CutsLongMessagesAndSaysSo) {
  EXPECT_EQ(EscapeMessage("short\x01"), "short\\x01");
  const std::string text(kMaxMessageBytes + 10, 'a');
  const std::string cut = EscapeMessage(text);
  EXPECT_EQ(cut.substr(0, kMaxMessageBytes), std::string(kMaxMessageBytes, 'a'));
  EXPECT_EQ(cut.substr(kMaxMessageBytes), " ... (cut at 4096 of 4106 bytes)");
}

}  // namespace
}  // namespace stagecraft
