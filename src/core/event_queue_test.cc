#include "core/event_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace stagecraft {
namespace {

Time Ns(int64_t ns) { return Time::Nanoseconds(ns); }

TEST(EventQueueTest, PopsByTime) {
  EventQueue queue;
  queue.Push(Ns(30), 0, 3);
  queue.Push(Ns(10), 0, 1);
  queue.Push(Ns(20), 0, 2);
  ASSERT_EQ(queue.size(), 3u);
  EXPECT_EQ(queue.Pop().target, 1u);
  EXPECT_EQ(queue.Pop().target, 2u);
  EXPECT_EQ(queue.Pop().target, 3u);
  EXPECT_TRUE(queue.empty());
}

TEST(EventQueueTest, EqualTimesPopInInsertionOrder) {
  EventQueue queue;
  for (uint32_t target = 0; target < 100; ++target) queue.Push(Ns(5), target % 3, target);
  for (uint32_t target = 0; target < 100; ++target) {
    const Event event = queue.Pop();
    EXPECT_EQ(event.time, Ns(5));
    EXPECT_EQ(event.target, target);
    EXPECT_EQ(event.kind, target % 3);
    EXPECT_EQ(event.sequence, target);
  }
}

// Random times with many ties, interleaving pushes and pops: the pop order must equal a stable
// sort by time of what was pushed (ties FIFO).
TEST(EventQueueTest, MatchesStableSortWithInterleavedPushes) {
  std::mt19937 random(12345);
  EventQueue queue;
  std::vector<std::pair<int64_t, uint32_t>> pending;  // (time, target) in insertion order
  uint32_t next_target = 0;
  int64_t now = 0;
  for (int round = 0; round < 2000; ++round) {
    if (queue.empty() || random() % 3 != 0) {
      const int64_t time = now + static_cast<int64_t>(random() % 4);  // never in the past
      queue.Push(Ns(time), 0, next_target);
      pending.emplace_back(time, next_target++);
    } else {
      // The expected event: smallest time, earliest inserted among those.
      size_t best = 0;
      for (size_t index = 1; index < pending.size(); ++index) {
        if (pending[index].first < pending[best].first) best = index;
      }
      const Event event = queue.Pop();
      ASSERT_EQ(event.time.ns(), pending[best].first);
      ASSERT_EQ(event.target, pending[best].second);
      now = event.time.ns();
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(best));
    }
  }
  EXPECT_EQ(queue.size(), pending.size());
}

// A model that records what it sees and schedules follow-ups: RunEvents hands events over in
// order and returns the time of the last one.
struct RecordingModel {
  std::vector<uint32_t> seen;
  void OnEvent(const Event& event, EventQueue& queue) {
    seen.push_back(event.target);
    if (event.target < 3) queue.Push(event.time + Ns(10), 0, event.target + 10);
  }
};

TEST(EventQueueTest, RunEventsDrivesTheModel) {
  EventQueue queue;
  queue.Push(Ns(0), 0, 0);
  queue.Push(Ns(0), 0, 1);
  queue.Push(Ns(10), 0, 2);
  RecordingModel model;
  const Time last = RunEvents(queue, model);
  // t=0: 0, 1; t=10: 2 (pushed first), 10, 11; t=20: 12.
  EXPECT_EQ(model.seen, (std::vector<uint32_t>{0, 1, 2, 10, 11, 12}));
  EXPECT_EQ(last, Ns(20));
  EXPECT_TRUE(queue.empty());
}

TEST(EventQueueTest, RunEventsOnEmptyQueueReturnsZero) {
  EventQueue queue;
  RecordingModel model;
  EXPECT_EQ(RunEvents(queue, model), Ns(0));
  EXPECT_TRUE(model.seen.empty());
}

}  // namespace
}  // namespace stagecraft
