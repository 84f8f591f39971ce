// EventQueue: the discrete-event core's agenda. Events pop in time order; events at equal time
// pop in insertion order, so every run is bit-for-bit reproducible (DESIGN.md §3).
// The queue knows no formulas: an event is a time plus two integers the model interprets.
// A binary min-heap, inline: the simulator spends much of its time here.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/time.h"

namespace stagecraft {

struct Event {
  Time time;
  uint64_t sequence = 0;  // insertion order; the tie-breaker for equal times
  uint32_t kind = 0;      // model-defined
  uint32_t target = 0;    // model-defined (e.g. a task index)
};

class EventQueue {
 public:
  void Push(Time time, uint32_t kind, uint32_t target) {
    heap_.push_back(Event{time, next_sequence_++, kind, target});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }
  // REQUIRES: !empty().
  Event Pop() {
    assert(!heap_.empty());
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Event top = heap_.back();
    heap_.pop_back();
    return top;
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  void Reserve(size_t capacity) { heap_.reserve(capacity); }

 private:
  // Min-heap order: earliest time first, then earliest insertion.
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time.ns() != b.time.ns() ? a.time.ns() > b.time.ns() : a.sequence > b.sequence;
    }
  };

  std::vector<Event> heap_;
  uint64_t next_sequence_ = 0;
};

// The engine loop: pops events and hands each to the model, which may push more. Returns the
// time of the last event handled (zero when there was none).
template <typename Model>
Time RunEvents(EventQueue& queue, Model& model) {
  Time now;
  while (!queue.empty()) {
    const Event event = queue.Pop();
    now = event.time;
    model.OnEvent(event, queue);
  }
  return now;
}

}  // namespace stagecraft
