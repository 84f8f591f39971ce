#include "core/enum_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace stagecraft {
namespace {

enum class Fruit : uint8_t { kApple, kPear, kQuince, kMedlar };

// kMedlar has no row: Name says "?" for it.
constexpr EnumTable<Fruit> kFruitNames = {
    {"apple", Fruit::kApple}, {"pear", Fruit::kPear}, {"quince", Fruit::kQuince}};

// The table is a constant: names and values are known at compile time.
static_assert(kFruitNames.size() == 3);
static_assert(std::string_view(kFruitNames.Name(Fruit::kPear)) == "pear");
static_assert(kFruitNames.Parse("quince") == Fruit::kQuince);
static_assert(!kFruitNames.Parse("Quince").has_value());

TEST(EnumTableTest, NameOfEveryRow) {
  for (const auto& [name, value] : kFruitNames) EXPECT_STREQ(kFruitNames.Name(value), name);
  EXPECT_STREQ(kFruitNames.Name(Fruit::kMedlar), "?");
}

TEST(EnumTableTest, ParseIsExact) {
  EXPECT_EQ(kFruitNames.Parse("apple"), Fruit::kApple);
  EXPECT_EQ(kFruitNames.Parse("pear"), Fruit::kPear);
  EXPECT_FALSE(kFruitNames.Parse("").has_value());
  EXPECT_FALSE(kFruitNames.Parse("appl").has_value());
  EXPECT_FALSE(kFruitNames.Parse("apple ").has_value());
}

TEST(EnumTableTest, NamesInRowOrder) {
  EXPECT_EQ(kFruitNames.Names(), (std::vector<std::string>{"apple", "pear", "quince"}));
}

TEST(EnumTableTest, JoinedAsMessagesListThem) {
  EXPECT_EQ(kFruitNames.Joined(), "'apple', 'pear' or 'quince'");
  constexpr EnumTable<bool> kOne = {{"true", true}};
  EXPECT_EQ(kOne.Joined(), "'true'");
}

TEST(EnumTableTest, DidYouMeanSuggestsTheClosestName) {
  EXPECT_EQ(kFruitNames.DidYouMean("paer"), "; did you mean 'pear'?");
  EXPECT_EQ(kFruitNames.DidYouMean("quin"), "; did you mean 'quince'?");  // a prefix
  EXPECT_EQ(kFruitNames.DidYouMean("banana"), "");
}

// An alias in front: parsed and listed first, and Name gives it too (so such a table is a
// reader's, not one to print names from).
TEST(EnumTableTest, WithFirstAddsAnAlias) {
  constexpr EnumTable<Fruit> kWithAlias = kFruitNames.WithFirst({"pyrus", Fruit::kPear});
  static_assert(kWithAlias.size() == 4);
  EXPECT_EQ(kWithAlias.Parse("pyrus"), Fruit::kPear);
  EXPECT_EQ(kWithAlias.Parse("pear"), Fruit::kPear);
  EXPECT_STREQ(kWithAlias.Name(Fruit::kPear), "pyrus");
  EXPECT_EQ(kWithAlias.Joined(), "'pyrus', 'apple', 'pear' or 'quince'");
}

// A value may have two names; Name gives the first.
TEST(EnumTableTest, FirstNameWins) {
  constexpr EnumTable<bool> kModes = {{"ring", false}, {"all-gather", true}, {"allgather", true}};
  EXPECT_STREQ(kModes.Name(true), "all-gather");
  EXPECT_EQ(kModes.Parse("allgather"), true);
}

}  // namespace
}  // namespace stagecraft
