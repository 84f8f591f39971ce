// RadixEventQueue: the simulator's agenda over integer time, a radix heap (Ahuja, Mehlhorn, Orlin
// and Tarjan, "Faster algorithms for the shortest path problem", JACM 1990). It pops in the same
// order as EventQueue (time, then insertion order) but needs the model to be monotone: no event is
// pushed earlier than the last one popped, which holds for a simulation whose durations are never
// negative. A push costs a few instructions, a pop O(1) amortized plus each event's moves to lower
// buckets (at most 64 over its life, a handful in practice). No sequence numbers are kept: equal
// times stay in one bucket, in insertion order (the proof is in the comment on Pop).
#pragma once

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/time.h"

namespace stagecraft {

struct TimedTarget {
  Time time;
  uint32_t target = 0;  // model-defined (e.g. a task index)
};

class RadixEventQueue {
 public:
  // REQUIRES: time >= 0 and time >= the time of the last event popped.
  void Push(Time time, uint32_t target) {
    const uint64_t key = static_cast<uint64_t>(time.ns());
    assert(time.ns() >= 0 && key >= last_);
    const int bucket = BucketOf(key);
    buckets_[bucket].push_back(Item{key, target});
    if (bucket != 0) nonempty_ |= uint64_t{1} << (bucket - 1);
    ++size_;
  }

  // REQUIRES: !empty(). Bucket 0 holds the events at the last popped time, in insertion order.
  // Bucket b >= 1 holds those whose time differs from it first in bit b - 1. When bucket 0 runs
  // out, the lowest non-empty bucket's earliest time becomes the last time and its events move,
  // in order, to lower buckets (all empty then). Events of one time always share one bucket and
  // enter it in insertion order (a later push of the same time lands in the same bucket, after
  // them), so they pop in insertion order.
  TimedTarget Pop() {
    assert(size_ > 0);
    if (head_ == buckets_[0].size()) Refill();
    const Item item = buckets_[0][head_++];
    --size_;
    return TimedTarget{Time::Nanoseconds(static_cast<int64_t>(item.key)), item.target};
  }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // Capacity for `capacity` events in flight in the bucket that takes new events first.
  void Reserve(size_t capacity) { buckets_[0].reserve(capacity); }

 private:
  struct Item {
    uint64_t key;
    uint32_t target;
  };

  int BucketOf(uint64_t key) const { return key == last_ ? 0 : 64 - std::countl_zero(key ^ last_); }

  void Refill() {
    buckets_[0].clear();
    head_ = 0;
    const int lowest = std::countr_zero(nonempty_) + 1;  // nonempty_ != 0 since size_ > 0
    std::vector<Item>& from = buckets_[lowest];
    uint64_t earliest = from.front().key;
    for (const Item& item : from) earliest = item.key < earliest ? item.key : earliest;
    last_ = earliest;
    for (const Item& item : from) {
      const int bucket = BucketOf(item.key);
      buckets_[bucket].push_back(item);
      if (bucket != 0) nonempty_ |= uint64_t{1} << (bucket - 1);
    }
    from.clear();
    nonempty_ &= ~(uint64_t{1} << (lowest - 1));
  }

  std::vector<Item> buckets_[65];
  size_t head_ = 0;        // the next event to pop in bucket 0
  uint64_t last_ = 0;      // the time of bucket 0 (the last popped, or the earliest refilled)
  uint64_t nonempty_ = 0;  // bit b - 1 set: bucket b >= 1 holds events
  size_t size_ = 0;
};

}  // namespace stagecraft
