// EventQueue: the discrete-event core's agenda. Events pop in time order; events at equal time
// pop in insertion order, so every run is bit-for-bit reproducible (DESIGN.md §3).
// The queue knows no formulas: an event is a time plus two integers the model interprets.
#pragma once

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
  void Push(Time time, uint32_t kind, uint32_t target);
  // REQUIRES: !empty().
  Event Pop();
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  void Reserve(size_t capacity) { heap_.reserve(capacity); }

 private:
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
