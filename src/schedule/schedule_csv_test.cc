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

// torch's compute_comms format (schedules.py, _PipelineScheduleRuntime._dump_csv): SEND/RECV
// cells are kept with their place among the compute actions; FSDP's UNSHARD/RESHARD/REDUCE_GRAD
// are skipped; writing it back gives the comm cells where they stood.
TEST(ScheduleCsvTest, ComputeCommsFormat) {
  const Schedule schedule = Parse(
      "0UNSHARD,0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD,0RESHARD\n"
      "1RECV_F0,1F0,1B0,1SEND_B0\n");
  EXPECT_EQ(Row(schedule, 0), (std::vector<std::string>{"0F0", "0B0"}));
  EXPECT_EQ(Row(schedule, 1), (std::vector<std::string>{"1F0", "1B0"}));
  ASSERT_EQ(schedule.rank_comms.size(), 2u);
  ASSERT_EQ(schedule.rank_comms[0].size(), 2u);
  EXPECT_EQ(schedule.rank_comms[0][0], (CommAction{StageId(0), MicrobatchId(0), true, false, 1}));
  EXPECT_EQ(schedule.rank_comms[0][1], (CommAction{StageId(0), MicrobatchId(0), false, true, 1}));
  EXPECT_EQ(schedule.rank_comms[1][1], (CommAction{StageId(1), MicrobatchId(0), true, true, 2}));
  EXPECT_EQ(WriteScheduleCsv(schedule), "0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n");
  EXPECT_TRUE(Parse("0F0,0B0\n").rank_comms.empty());  // compute-only: nothing explicit
}

TEST(ScheduleCsvTest, BadComputeCommsCells) {
  EXPECT_NE(ErrorOf("0F0,0SEND_Fx\n").find("bad action '0SEND_Fx' (expected {stage}SEND_F"),
            std::string::npos);
  EXPECT_NE(ErrorOf("0F0,RECV_B1\n").find("'RECV_B1'"), std::string::npos);
  EXPECT_NE(ErrorOf("0UNSHARD3\n").find("expected {stage}UNSHARD"), std::string::npos);
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
