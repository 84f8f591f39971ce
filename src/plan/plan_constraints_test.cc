#include "plan/plan_constraints.h"

#include <gtest/gtest.h>

namespace stagecraft {
namespace {

TEST(IntChoiceTest, ValueListAndRange) {
  const Result<IntChoice> one = ParseIntChoice("8", "--tp", 1);
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one.value().Admits(8));
  EXPECT_FALSE(one.value().Admits(4));
  const Result<IntChoice> list = ParseIntChoice("2, 4,8", "--pp", 1);
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list.value().Admits(4));
  EXPECT_FALSE(list.value().Admits(3));
  const Result<IntChoice> range = ParseIntChoice("2-8", "--pp", 1);
  ASSERT_TRUE(range.ok());
  EXPECT_TRUE(range.value().Admits(2));
  EXPECT_TRUE(range.value().Admits(5));
  EXPECT_TRUE(range.value().Admits(8));
  EXPECT_FALSE(range.value().Admits(9));
  EXPECT_TRUE(IntChoice().Admits(123));
}

TEST(IntChoiceTest, BadTextNamesTheFlag) {
  for (const char* text : {"", "x", "4,", "0", "3-1", "1-", "99999999999", "2-4,8", "-3"}) {
    const Result<IntChoice> choice = ParseIntChoice(text, "--cp", 1);
    ASSERT_FALSE(choice.ok()) << text;
    EXPECT_EQ(choice.error().message.rfind("--cp: ", 0), 0u) << choice.error().message;
  }
  EXPECT_TRUE(ParseIntChoice("0-3", "--zero", 0).ok());
}

TEST(PlanConstraintsTest, ParsesEveryFlag) {
  PlanConstraintText text;
  text.tp = "8";
  text.zero = "1,3";
  text.schedule = "1f1b,interleaved-1f1b";
  text.recompute = "none,full";
  const Result<PlanConstraints> parsed = ParsePlanConstraints(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_TRUE(parsed.value().tp.Admits(8));
  EXPECT_TRUE(parsed.value().pp.any());
  EXPECT_FALSE(parsed.value().zero.Admits(2));
  EXPECT_EQ(parsed.value().schedules.size(), 2u);
  EXPECT_EQ(parsed.value().recompute, (std::vector<Recompute>{Recompute::kNone, Recompute::kFull}));
}

TEST(PlanConstraintsTest, UnknownNamesSuggest) {
  PlanConstraintText schedule;
  schedule.schedule = "1f1b,intrleaved-1f1b";
  const Result<PlanConstraints> bad_schedule = ParsePlanConstraints(schedule);
  ASSERT_FALSE(bad_schedule.ok());
  EXPECT_NE(bad_schedule.error().message.find("did you mean 'interleaved-1f1b'"), std::string::npos)
      << bad_schedule.error().message;
  PlanConstraintText recompute;
  recompute.recompute = "ful";
  EXPECT_FALSE(ParsePlanConstraints(recompute).ok());
  PlanConstraintText zero;
  zero.zero = "4-6";
  EXPECT_FALSE(ParsePlanConstraints(zero).ok());
}

}  // namespace
}  // namespace stagecraft
