// The thread split of the planner's work: every index computed exactly once, results by index
// whatever the number of threads, progress told with how many pieces were taken.
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
  EXPECT_EQ(reader.Get<int64_t>(), 0);  // past the end: zero, no read out of bounds
}

}  // namespace
}  // namespace stagecraft
