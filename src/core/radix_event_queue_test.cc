#include "core/radix_event_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/event_queue.h"

namespace stagecraft {
namespace {

Time Ns(int64_t ns) { return Time::Nanoseconds(ns); }

TEST(RadixEventQueueTest, PopsByTimeThenInsertionOrder) {
  RadixEventQueue queue;
  queue.Push(Ns(30), 3);
  queue.Push(Ns(10), 1);
  queue.Push(Ns(20), 2);
  queue.Push(Ns(10), 4);
  ASSERT_EQ(queue.size(), 4u);
  const std::vector<uint32_t> expected{1, 4, 2, 3};
  for (uint32_t target : expected) EXPECT_EQ(queue.Pop().target, target);
  EXPECT_TRUE(queue.empty());
}

// Against EventQueue, the binary heap with sequence numbers: the same pushes (never before the
// last pop, many ties, zero delays, far jumps up to 2^62) and pops give the same events.
TEST(RadixEventQueueTest, MatchesEventQueue) {
  std::mt19937_64 random(36);
  RadixEventQueue radix;
  EventQueue heap;
  int64_t now = 0;
  uint32_t next_target = 0;
  for (int round = 0; round < 200000; ++round) {
    if (heap.empty() || random() % 5 < 3) {
      const uint64_t draw = random();
      int64_t delay = static_cast<int64_t>(draw % 4);
      if (draw % 7 == 0) delay = static_cast<int64_t>(draw % 1000000);
      if (draw % 1001 == 0) delay = static_cast<int64_t>(draw >> 2) - now;
      if (delay < 0) delay = 0;
      radix.Push(Ns(now + delay), next_target);
      heap.Push(Ns(now + delay), 0, next_target);
      ++next_target;
    } else {
      const Event expected = heap.Pop();
      const TimedTarget event = radix.Pop();
      ASSERT_EQ(event.time, expected.time);
      ASSERT_EQ(event.target, expected.target);
      now = event.time.ns();
    }
    ASSERT_EQ(radix.size(), heap.size());
  }
}

}  // namespace
}  // namespace stagecraft
