#include "sim/simulator.h"

#include <algorithm>
#include <cassert>

namespace stagecraft {
namespace {

// What a task occupies, in the top two bits of its resource word: the rank's compute stream
// (compute and work, in program order), a first-come-first-served resource (a link, a rank's
// collective stream) or nothing (a delay).
enum SimResourceKind : uint32_t { kStream = 0, kFifo = 1, kNoResource = 2 };
constexpr uint32_t kKindShift = 30;
constexpr uint32_t kResourceMask = (uint32_t{1} << kKindShift) - 1;

constexpr uint32_t KindOf(uint32_t word) { return word >> kKindShift; }
constexpr uint32_t ResourceOf(uint32_t word) { return word & kResourceMask; }

// Links and the ranks' collective streams are first-come-first-served resources, numbered links
// first, then two collective streams per rank (task_graph.h: the TP/CP/EP one, the
// data-parallel one). The run-size limit (run/run_size.h) keeps them far below 2^30.
uint32_t ResourceWord(const TaskGraph& graph, const Task& task) {
  uint32_t kind = kStream;
  int64_t resource = task.rank;
  if (task.kind == TaskKind::kTransfer) {
    kind = kFifo;
    resource = task.link;
  } else if (task.kind == TaskKind::kCollective) {
    kind = kFifo;
    resource = static_cast<int64_t>(graph.links.size()) + CollectiveStream(task.rank, task.payload);
  } else if (task.kind == TaskKind::kDelay) {
    kind = kNoResource;
    resource = 0;
  }
  assert(resource >= 0 && resource <= kResourceMask);
  return kind << kKindShift | static_cast<uint32_t>(resource);
}

}  // namespace

Simulator::Simulator(const TaskGraph& graph, Progress* progress)
    : graph_(graph), progress_(progress) {}

Trace Simulate(const TaskGraph& graph, Progress* progress) {
  return Simulator(graph, progress).Run();
}

Trace Simulator::Run() {
  const size_t num_tasks = graph_.num_tasks();
  const size_t num_ranks = graph_.programs.size();
  trace_ = Trace{};
  trace_.timings.assign(num_tasks, TaskTiming{});
  trace_.finished.assign(num_tasks, 0);
  resource_.resize(num_tasks);
  duration_ns_.resize(num_tasks);
  missing_.resize(num_tasks);
  for (uint32_t task = 0; task < num_tasks; ++task) {
    const Task& info = graph_.tasks[task];
    resource_[task] = ResourceWord(graph_, info);
    duration_ns_[task] = info.duration.ns();
    missing_[task] = graph_.num_preds(task);
  }
  stream_next_.resize(num_ranks);
  stream_end_.resize(num_ranks);
  for (size_t rank = 0; rank < num_ranks; ++rank) {
    const std::vector<uint32_t>& program = graph_.programs[rank];
    stream_next_[rank] = program.data();
    stream_end_[rank] = program.data() + program.size();
  }
  stream_busy_.assign(num_ranks, 0);
  link_free_.assign(graph_.links.size() + 2 * num_ranks, Time());

  queue_ = RadixEventQueue();
  queue_.Reserve(num_ranks + graph_.links.size() + 16);
  const Time start;
  for (uint32_t task = 0; task < num_tasks; ++task) {
    if (missing_[task] == 0) MarkReady(task, start);
  }
  while (!queue_.empty()) {
    const TimedTarget event = queue_.Pop();
    Finish(event.target, event.time);
  }

  size_t finished = 0;
  for (uint8_t flag : trace_.finished) finished += flag;
  if (finished != num_tasks) trace_.deadlock = AnalyzeDeadlock(graph_, trace_.finished);
  return std::move(trace_);
}

void Simulator::Finish(uint32_t task_id, Time now) {
  ++trace_.events;
  // Every 4096th event: the clock is read no more often than that.
  if (progress_ != nullptr && trace_.events % 4096 == 0)
    progress_->Update(static_cast<int64_t>(trace_.events));
  const uint32_t word = resource_[task_id];
  trace_.timings[task_id].end = now;
  trace_.finished[task_id] = 1;
  const bool on_stream = KindOf(word) == kStream;
  if (on_stream) {
    stream_busy_[ResourceOf(word)] = 0;
    ++stream_next_[ResourceOf(word)];
  }
  const uint32_t* successor = graph_.succs.data() + graph_.succ_begin[task_id];
  const uint32_t* const end = graph_.succs.data() + graph_.succ_begin[task_id + 1];
  for (; successor != end; ++successor) {
    if (--missing_[*successor] == 0) MarkReady(*successor, now);
  }
  if (on_stream) TryStartStream(ResourceOf(word), now);
}

void Simulator::MarkReady(uint32_t task_id, Time now) {
  const uint32_t word = resource_[task_id];
  switch (KindOf(word)) {
    case kNoResource:
      Start(task_id, now);  // a delay: no resource to wait for
      return;
    case kStream:
      TryStartStream(ResourceOf(word), now);
      return;
    default: {
      // Links serve transfers first come, first served. Transfers become ready in event order,
      // so the link's queue is implicit: each starts when it is ready and the link is free.
      Time& free = link_free_[ResourceOf(word)];
      const Time start = std::max(now, free);
      free = start + Time::Nanoseconds(duration_ns_[task_id]);
      Start(task_id, start);
    }
  }
}

void Simulator::TryStartStream(uint32_t rank, Time now) {
  if (stream_busy_[rank]) return;
  const uint32_t* next = stream_next_[rank];
  if (next == stream_end_[rank] || missing_[*next] != 0) return;
  stream_busy_[rank] = 1;
  Start(*next, now);
}

void Simulator::Start(uint32_t task_id, Time now) {
  trace_.timings[task_id].start = now;
  queue_.Push(now + Time::Nanoseconds(duration_ns_[task_id]), task_id);
}

}  // namespace stagecraft
