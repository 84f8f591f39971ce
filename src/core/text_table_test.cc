#include "core/text_table.h"

#include <gtest/gtest.h>

#include <string>

namespace stagecraft {
namespace {

TextColumn Right(const std::string& header, size_t min_width = 0) {
  return {header, TextAlign::kRight, min_width};
}
TextColumn Left(const std::string& header, size_t min_width = 0) {
  return {header, TextAlign::kLeft, min_width};
}

TEST(TextTableTest, NarrowCellsKeepTheMinimumWidths) {
  TextTable table("  ", {Right("rank", 4), Right("busy_ms", 13)});
  table.AddRow({"0", "12.500000"});
  table.AddRow({"1", "3.000000"});
  EXPECT_EQ(table.Render(),
            "  rank      busy_ms\n"
            "     0    12.500000\n"
            "     1     3.000000\n");
}

// Issue 35, D8: a figure wider than its column widened the column instead of running into the
// one before it ("032000016.000000").
TEST(TextTableTest, AWideCellWidensItsColumnAndKeepsTheGap) {
  TextTable table("  ", {Right("rank", 4), Right("busy_ms", 13), Right("idle_ms", 13)});
  table.AddRow({"0", "32000016.000000", "12000006.000000"});
  table.AddRow({"10000", "1.000000", "0.000000"});
  EXPECT_EQ(table.Render(),
            "   rank         busy_ms         idle_ms\n"
            "      0 32000016.000000 12000006.000000\n"
            "  10000        1.000000        0.000000\n");
}

TEST(TextTableTest, ALongLeftHeaderRunsIntoTheNextColumnsRoom) {
  TextTable table("  ", {Left("latency (ms)", 8), Right("p50", 13)});
  table.AddRow({"ttft", "1.000"});
  EXPECT_EQ(table.Render(),
            "  latency (ms)      p50\n"
            "  ttft            1.000\n");
}

TEST(TextTableTest, ALongLeftHeaderWidensTheNextColumnOnlyWhereTheHeadersWouldTouch) {
  TextTable table("", {Left("a long title"), Right("n")});
  table.AddRow({"x", "1"});
  EXPECT_EQ(table.Render(),
            "a long title n\n"
            "x            1\n");
}

TEST(TextTableTest, WidestCellWithGapTwo) {
  TextTable table("", {Left("schedule"), Right("pp"), Right("makespan_ms")}, 2);
  table.AddRow({"interleaved-1f1b", "4", "123456789.000000"});
  table.AddRow({"gpipe", "16", "1.000000"});
  EXPECT_EQ(table.Render(),
            "schedule          pp       makespan_ms\n"
            "interleaved-1f1b   4  123456789.000000\n"
            "gpipe             16          1.000000\n");
}

TEST(TextTableTest, LeftColumnsAreSeparatedWhateverTheirNeighbours) {
  TextTable table("", {Left("a"), Left("b"), Right("c"), Left("d")});
  table.AddRow({"xxxx", "yyyy", "1234", "zzzz"});
  EXPECT_EQ(table.Render(),
            "a    b       c d\n"
            "xxxx yyyy 1234 zzzz\n");
}

TEST(TextTableTest, WithoutAHeaderOnlyCellsCount) {
  TextTable table("  ", {Left("a very long header"), Right("n")});
  table.AddRow({"x", "1"});
  EXPECT_EQ(table.Render(/*with_header=*/false), "  x 1\n");
}

}  // namespace
}  // namespace stagecraft
