// The thread split of a search's work (the planner's, serve-plan's): every index computed exactly
// once, results by index whatever the number of threads, progress told with how many pieces were
// taken.
#include "core/work_split.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

namespace stagecraft {
namespace {

TEST(ThreadSplitTest, ComputesEveryIndexOnceAndReturnsThemInOrder) {
  for (int32_t threads : {1, 2, 3, 8}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
      std::vector<std::atomic<int>> calls(count);
      size_t last_told = 0;
      const std::vector<std::string> results = ThreadSplit(threads)->Map(
          count,
          [&](size_t index) {
            ++calls[index];
            return "r" + std::to_string(index * index);
          },
          [&](size_t taken) {
            EXPECT_GT(taken, 0u);
            EXPECT_LE(taken, count);
            last_told = std::max(last_told, taken);
          });
      ASSERT_EQ(results.size(), count);
      for (size_t index = 0; index < count; ++index) {
        EXPECT_EQ(calls[index].load(), 1) << threads << " threads, index " << index;
        EXPECT_EQ(results[index], "r" + std::to_string(index * index));
      }
      EXPECT_EQ(last_told, count);
    }
  }
}

TEST(ThreadSplitTest, DescribesItself) {
  EXPECT_EQ(ThreadSplit(1)->Describe(), "1 thread");
  EXPECT_EQ(ThreadSplit(4)->Describe(), "4 threads");
  EXPECT_TRUE(ThreadSplit(4)->prints());
}

TEST(ByteWriterTest, ValuesAndStringsReadBackInOrder) {
  ByteWriter writer;
  writer.Put<uint8_t>(1).Put(2.5).PutString("a\0b").Put<int64_t>(-7);
  const std::string bytes = writer.Take();
  ByteReader reader(bytes);
  EXPECT_EQ(reader.Get<uint8_t>(), 1);
  EXPECT_EQ(reader.Get<double>(), 2.5);
  EXPECT_EQ(reader.GetString(), std::string("a"));  // a C string literal stops at its \0
  EXPECT_EQ(reader.Get<int64_t>(), -7);
  EXPECT_TRUE(reader.AtEnd());
  EXPECT_EQ(reader.Get<int64_t>(), 0);  // past the end: zero, no read out of bounds
  EXPECT_FALSE(reader.ok());
  EXPECT_FALSE(reader.AtEnd());
}

TEST(ByteReaderTest, AStringLongerThanTheBytesFails) {
  ByteWriter writer;
  writer.Put<uint64_t>(1000).Put<uint8_t>(7);  // a length the bytes do not hold
  const std::string bytes = writer.Take();
  ByteReader reader(bytes);
  EXPECT_EQ(reader.GetString(), "");
  EXPECT_FALSE(reader.ok());
}

struct Pair {
  int64_t index = 0;
  double half = 0;
};

TEST(MapValuesTest, ValuesComeBackByIndex) {
  auto values = MapValues<Pair>(*ThreadSplit(3), 100, [](size_t index) {
    return Pair{static_cast<int64_t>(index), static_cast<double>(index) / 2};
  });
  ASSERT_TRUE(values.ok()) << values.error().message;
  ASSERT_EQ(values.value().size(), 100u);
  for (size_t index = 0; index < 100; ++index) {
    EXPECT_EQ(values.value()[index].index, static_cast<int64_t>(index));
    EXPECT_EQ(values.value()[index].half, static_cast<double>(index) / 2);
  }
}

// A split whose results lose their last byte (a worker and the reader disagreeing on a type).
class ShortSplit : public WorkSplit {
 public:
  std::vector<std::string> Map(size_t count, const std::function<std::string(size_t)>& work,
                               const std::function<void(size_t)>&) override {
    std::vector<std::string> results;
    for (size_t index = 0; index < count; ++index) {
      std::string bytes = work(index);
      bytes.pop_back();
      results.push_back(bytes);
    }
    return results;
  }
  std::string Describe() const override { return "a short split"; }
};

TEST(MapValuesTest, AShortResultIsAnErrorNotZeros) {
  ShortSplit split;
  auto values = MapValues<Pair>(split, 2, [](size_t) { return Pair{1, 2.0}; });
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.error().message, "internal: result 0 of a short split is 15 bytes, expected 16");
}

}  // namespace
}  // namespace stagecraft
