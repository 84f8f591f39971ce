// Unit tests of the doc-test machinery: the markdown extractor and the elided-output match.
#include <gtest/gtest.h>

#include "doc_markdown.h"
#include "elided_output.h"

namespace stagecraft::testing {
namespace {

TEST(ElidedOutputTest, ExactOutputMatches) {
  const OutputAlignment alignment = AlignOutput({"a", "b"}, {"a", "b"});
  EXPECT_TRUE(alignment.matches);
  EXPECT_EQ(alignment.updated, (std::vector<std::string>{"a", "b"}));
}

TEST(ElidedOutputTest, MarkerElidesOneOrMoreLines) {
  EXPECT_TRUE(AlignOutput({"a", "...", "d"}, {"a", "b", "c", "d"}).matches);
  EXPECT_TRUE(AlignOutput({"...", "d"}, {"a", "d"}).matches);
  EXPECT_TRUE(AlignOutput({"a", "  ... (the rest)"}, {"a", "b"}).matches);
  EXPECT_FALSE(AlignOutput({"a", "...", "d"}, {"a", "d"}).matches);            // elides nothing
  EXPECT_FALSE(AlignOutput({"a", "...", "d"}, {"a", "b", "d", "e"}).matches);  // tail unshown
  EXPECT_FALSE(AlignOutput({"a", "b"}, {"a", "b", "c"}).matches);  // no marker: all lines
}

TEST(ElidedOutputTest, UpdateKeepsMarkersAndRewritesChangedNumbers) {
  const OutputAlignment alignment =
      AlignOutput({"head", "  makespan 33.0 ms", "...", "  total 7"},
                  {"head", "new line", "  makespan 34.5 ms", "x", "y", "  total 8"});
  EXPECT_FALSE(alignment.matches);
  EXPECT_EQ(alignment.updated, (std::vector<std::string>{"head", "new line", "  makespan 34.5 ms",
                                                         "...", "  total 8"}));
  EXPECT_TRUE(AlignOutput(alignment.updated,
                          {"head", "new line", "  makespan 34.5 ms", "x", "y", "  total 8"})
                  .matches);
}

TEST(ElidedOutputTest, UpdateDropsAMarkerThatElidesNothing) {
  const OutputAlignment alignment = AlignOutput({"a", "...", "d"}, {"a", "d"});
  EXPECT_EQ(alignment.updated, (std::vector<std::string>{"a", "d"}));
}

TEST(ElidedOutputTest, UpdateDropsLinesTheProgramNoLongerPrints) {
  const OutputAlignment alignment = AlignOutput({"a", "gone: x", "b"}, {"a", "b"});
  EXPECT_EQ(alignment.updated, (std::vector<std::string>{"a", "b"}));
}

TEST(DocMarkdownTest, FindsCommandsAndTheirOutput) {
  const MarkdownCommands document = ParseMarkdownCommands(
      "text\n```\n$ printf 'x\\n' > f\n$ cat f\nx\n```\n```yaml\nkey: 1\n```\n"
      "  ```\n  $ a \\\n  --flag\n  out\n  ```\n");
  ASSERT_TRUE(document.errors.empty());
  ASSERT_EQ(document.blocks.size(), 2u);
  ASSERT_EQ(document.blocks[0].commands.size(), 2u);
  EXPECT_EQ(document.blocks[0].commands[0].command, "printf 'x\\n' > f");
  EXPECT_TRUE(document.blocks[0].commands[0].shown.empty());
  EXPECT_EQ(document.blocks[0].commands[1].shown, (std::vector<std::string>{"x"}));
  EXPECT_EQ(document.blocks[0].commands[1].output_begin, 4u);
  EXPECT_EQ(document.blocks[0].commands[1].output_end, 5u);
  EXPECT_EQ(document.blocks[1].indent, "  ");
  EXPECT_EQ(document.blocks[1].commands[0].command, "a \\\n--flag");
  EXPECT_EQ(document.blocks[1].commands[0].shown, (std::vector<std::string>{"out"}));
}

TEST(DocMarkdownTest, SkipCommentNeedsAReasonAndACommandBlock) {
  const MarkdownCommands skipped =
      ParseMarkdownCommands("<!-- doc-test: skip needs a GPU -->\n\n```\n$ x\n```\n");
  ASSERT_TRUE(skipped.errors.empty());
  EXPECT_EQ(skipped.blocks[0].skip_reason, "needs a GPU");
  EXPECT_EQ(ParseMarkdownCommands("<!-- doc-test: skip -->\n```\n$ x\n```\n").errors.size(), 1u);
  EXPECT_EQ(ParseMarkdownCommands("<!-- doc-test: skip why -->\ntext\n").errors.size(), 1u);
  EXPECT_EQ(
      ParseMarkdownCommands("<!-- doc-test: skip why -->\n```\nno command\n```\n").errors.size(),
      1u);
  EXPECT_EQ(ParseMarkdownCommands("```\n$ x\n").errors.size(), 1u);  // never closed
}

TEST(DocMarkdownTest, ReplacementsRewriteOnlyTheirRanges) {
  const MarkdownCommands document = ParseMarkdownCommands("```\n$ a\nold\n```\n");
  const ShownCommand& command = document.blocks[0].commands[0];
  EXPECT_EQ(ApplyReplacements(document, {{command.output_begin, command.output_end, {"n1", "n2"}}}),
            "```\n$ a\nn1\nn2\n```\n");
}

}  // namespace
}  // namespace stagecraft::testing
