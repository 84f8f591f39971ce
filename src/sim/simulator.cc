#include "sim/simulator.h"

#include <algorithm>

namespace stagecraft {
namespace {

constexpr uint32_t kFinish = 0;  // event kind: a task ends

}  // namespace

Simulator::Simulator(const TaskGraph& graph, Progress* progress)
    : graph_(graph), progress_(progress) {}

Trace Simulate(const TaskGraph& graph, Progress* progress) {
  return Simulator(graph, progress).Run();
}

Trace Simulator::Run() {
  const size_t num_tasks = graph_.num_tasks();
  trace_ = Trace{};
  trace_.timings.assign(num_tasks, TaskTiming{});
  trace_.finished.assign(num_tasks, 0);
  missing_.resize(num_tasks);
  tasks_.resize(num_tasks);
  for (uint32_t task = 0; task < num_tasks; ++task) {
    const Task& info = graph_.tasks[task];
    // Links and the ranks' collective streams are first-come-first-served resources, numbered
    // links first, then two collective streams per rank (task_graph.h: the TP/CP/EP one, the
    // data-parallel one).
    const bool transfer = info.kind == TaskKind::kTransfer;
    const bool collective = info.kind == TaskKind::kCollective;
    const int32_t resource = transfer ? info.link
                                      : (collective ? static_cast<int32_t>(graph_.links.size()) +
                                                          CollectiveStream(info.rank, info.payload)
                                                    : info.rank);
    const uint8_t kind = info.kind == TaskKind::kDelay ? 2 : (transfer || collective ? 1 : 0);
    tasks_[task] = SimTask{info.duration.ns(), resource, kind};
  }
  stream_next_.assign(graph_.programs.size(), 0);
  stream_busy_.assign(graph_.programs.size(), 0);
  link_free_.assign(graph_.links.size() + 2 * graph_.programs.size(), Time());

  EventQueue queue;
  queue.Reserve(graph_.programs.size() + graph_.links.size() + 16);
  const Time start;
  for (uint32_t task = 0; task < num_tasks; ++task) missing_[task] = graph_.num_preds(task);
  for (uint32_t task = 0; task < num_tasks; ++task) {
    if (missing_[task] == 0) MarkReady(task, start, queue);
  }
  RunEvents(queue, *this);

  size_t finished = 0;
  for (uint8_t flag : trace_.finished) finished += flag;
  if (finished != num_tasks) trace_.deadlock = AnalyzeDeadlock(graph_, trace_.finished);
  return std::move(trace_);
}

void Simulator::OnEvent(const Event& event, EventQueue& queue) {
  ++trace_.events;
  // Every 4096th event: the clock is read no more often than that.
  if (progress_ != nullptr && trace_.events % 4096 == 0)
    progress_->Update(static_cast<int64_t>(trace_.events));
  const uint32_t task_id = event.target;
  const Time now = event.time;
  const SimTask task = tasks_[task_id];
  trace_.timings[task_id].end = now;
  trace_.finished[task_id] = 1;
  if (!task.transfer) {
    stream_busy_[task.resource] = 0;
    ++stream_next_[task.resource];
  }
  for (uint32_t index = graph_.succ_begin[task_id]; index < graph_.succ_begin[task_id + 1];
       ++index) {
    const uint32_t successor = graph_.succs[index];
    if (--missing_[successor] == 0) MarkReady(successor, now, queue);
  }
  if (!task.transfer) TryStartStream(task.resource, now, queue);
}

void Simulator::MarkReady(uint32_t task_id, Time now, EventQueue& queue) {
  const SimTask& task = tasks_[task_id];
  if (task.transfer == 2) {
    Start(task_id, now, queue);  // a delay: no resource to wait for
  } else if (!task.transfer) {
    TryStartStream(task.resource, now, queue);
  } else {
    // Links serve transfers first come, first served. Transfers become ready in event order,
    // so the link's queue is implicit: each starts when it is ready and the link is free.
    const Time start = std::max(now, link_free_[task.resource]);
    link_free_[task.resource] = start + Time::Nanoseconds(task.duration_ns);
    Start(task_id, start, queue);
  }
}

void Simulator::TryStartStream(int32_t rank, Time now, EventQueue& queue) {
  if (stream_busy_[rank]) return;
  const auto& program = graph_.programs[rank];
  const size_t next = stream_next_[rank];
  if (next >= program.size() || missing_[program[next]] != 0) return;
  stream_busy_[rank] = 1;
  Start(program[next], now, queue);
}

void Simulator::Start(uint32_t task_id, Time now, EventQueue& queue) {
  trace_.timings[task_id].start = now;
  queue.Push(now + Time::Nanoseconds(tasks_[task_id].duration_ns), kFinish, task_id);
}

}  // namespace stagecraft
