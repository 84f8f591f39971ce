#include "schedule/schedule_csv.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schedule/generator.h"

namespace stagecraft {
namespace {

Schedule Parse(const std::string& text) {
  Result<Schedule> schedule = ParseScheduleCsv(text, "sched.csv");
  EXPECT_TRUE(schedule.ok()) << schedule.error().message;
  return schedule.ok() ? schedule.value() : Schedule();
}

std::string ErrorOf(const std::string& text) {
  Result<Schedule> schedule = ParseScheduleCsv(text, "sched.csv");
  EXPECT_FALSE(schedule.ok()) << "parsed without error:\n" << text;
  return schedule.ok() ? "" : schedule.error().message;
}

std::vector<std::string> Row(const Schedule& schedule, size_t rank) {
  std::vector<std::string> names;
  for (const Action& action : schedule.rank_actions.at(rank)) names.push_back(FormatAction(action));
  return names;
}

// Every generator, over shapes each accepts: write, parse, compare whole values.
TEST(ScheduleCsvTest, RoundTripEveryGenerator) {
  int round_trips = 0;
  for (const ScheduleGenerator& generator : ScheduleGenerators()) {
    for (int32_t pp : {1, 2, 3, 4, 8}) {
      for (int32_t vpp : {1, 2, 3}) {
        for (int32_t microbatches : {1, 2, 4, 8, 12}) {
          const Result<Schedule> generated = generator.generate({pp, vpp, microbatches, 0});
          if (!generated.ok()) continue;
          const std::string text = WriteScheduleCsv(generated.value());
          Schedule parsed = Parse(text);
          parsed.name = generated.value().name;  // the parser names it "csv"
          EXPECT_EQ(parsed, generated.value())
              << generator.name << " pp=" << pp << " vpp=" << vpp << " m=" << microbatches;
          EXPECT_EQ(WriteScheduleCsv(parsed), text);
          ++round_trips;
        }
      }
    }
  }
  EXPECT_GE(round_trips, 60);  // every generator contributed
}

TEST(ScheduleCsvTest, ParsedScheduleIsNamedCsv) { EXPECT_EQ(Parse("0F0,0B0\n").name, "csv"); }

TEST(ScheduleCsvTest, WriteFormat) {
  const Schedule schedule = GenerateOneFOneB({2, 1, 2, 0}).value();
  EXPECT_EQ(WriteScheduleCsv(schedule), "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
}

TEST(ScheduleCsvTest, EmptyCellsSpacesQuotesAndCrlf) {
  const Schedule schedule = Parse(",0F0,, 0F1 ,\"0B0\",0B1,\r\n1F0,1B0,,1F1,1B1,,,\r\n\n\n");
  ASSERT_EQ(schedule.num_ranks, 2);
  EXPECT_EQ(Row(schedule, 0), (std::vector<std::string>{"0F0", "0F1", "0B0", "0B1"}));
  EXPECT_EQ(Row(schedule, 1), (std::vector<std::string>{"1F0", "1B0", "1F1", "1B1"}));
  EXPECT_EQ(schedule.num_stages, 2);
  EXPECT_EQ(schedule.num_microbatches, 2);
  EXPECT_EQ(schedule.placement, Placement::kLoop);
}

TEST(ScheduleCsvTest, NoFinalNewline) {
  const Schedule schedule = Parse("0F0,0B0\n1F0,1B0");
  ASSERT_EQ(schedule.num_ranks, 2);
  EXPECT_EQ(Row(schedule, 1), (std::vector<std::string>{"1F0", "1B0"}));
}

TEST(ScheduleCsvTest, ErrorsNameLineAndColumn) {
  const std::string message = ErrorOf("0F0,0B0\n1F0,1X0\n");
  EXPECT_EQ(message.rfind("sched.csv:2:5: ", 0), 0u) << message;
  EXPECT_NE(message.find("'1X0'"), std::string::npos) << message;
  EXPECT_NE(message.find("{stage}{F|B|I|W}{microbatch}"), std::string::npos) << message;
  // Empty cells still count for the column.
  EXPECT_EQ(ErrorOf("0F0,,,0Q1\n").rfind("sched.csv:1:7: ", 0), 0u);
  EXPECT_EQ(ErrorOf("\n\nnope").rfind("sched.csv:3:1: ", 0), 0u);
}

TEST(ScheduleCsvTest, EmptyInputIsAnError) {
  for (const std::string text : {"", "\n", ",,\n\n", " , \r\n"}) {
    const std::string message = ErrorOf(text);
    EXPECT_EQ(message.rfind("sched.csv", 0), 0u) << message;
    EXPECT_NE(message.find("no rows"), std::string::npos) << message;
  }
}

TEST(ScheduleCsvTest, CountsFromLargestIds) {
  const Schedule schedule = Parse("0F4,0B4\n1F4,1B4\n");
  EXPECT_EQ(schedule.num_stages, 2);
  EXPECT_EQ(schedule.num_microbatches, 5);
}

// V placement: stage s < p on rank s, else 2p − 1 − s. With p = 2: rank 0 holds 0 and 3, rank 1
// holds 1 and 2 — loop would put stage 2 on rank 0, so only V fits.
TEST(ScheduleCsvTest, InfersVPlacement) {
  const Schedule schedule = Parse("0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n");
  EXPECT_EQ(schedule.num_stages, 4);
  EXPECT_EQ(schedule.placement, Placement::kV);
}

TEST(ScheduleCsvTest, InfersLoopPlacement) {
  const Schedule schedule = Parse("0F0,2F0,2B0,0B0\n1F0,3F0,3B0,1B0\n");
  EXPECT_EQ(schedule.placement, Placement::kLoop);
}

// One rank with two stages fits both placements: loop wins.
TEST(ScheduleCsvTest, AmbiguousPlacementIsLoop) {
  EXPECT_EQ(Parse("0F0,1F0,1B0,0B0\n").placement, Placement::kLoop);
}

// Fits neither: stays loop (the checker reports the misplaced stages).
TEST(ScheduleCsvTest, NoPlacementFitsIsLoop) {
  EXPECT_EQ(Parse("0F0,1F0,1B0,0B0\n2F0,3F0,3B0,2B0\n").placement, Placement::kLoop);
}

TEST(ScheduleCsvTest, WriteOfVScheduleRoundTrips) {
  const std::string text = "0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n";
  EXPECT_EQ(WriteScheduleCsv(Parse(text)), text);
}

}  // namespace
}  // namespace stagecraft
