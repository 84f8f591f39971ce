#include "core/event_queue.h"

#include <algorithm>
#include <cassert>

namespace stagecraft {
namespace {

// Min-heap order: earliest time first, then earliest insertion.
bool Later(const Event& a, const Event& b) {
  if (a.time != b.time) return a.time > b.time;
  return a.sequence > b.sequence;
}

}  // namespace

void EventQueue::Push(Time time, uint32_t kind, uint32_t target) {
  heap_.push_back(Event{time, next_sequence_++, kind, target});
  std::push_heap(heap_.begin(), heap_.end(), Later);
}

Event EventQueue::Pop() {
  assert(!heap_.empty());
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  const Event event = heap_.back();
  heap_.pop_back();
  return event;
}

}  // namespace stagecraft
