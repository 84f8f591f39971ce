#include "sim/simulator.h"

namespace stagecraft {
namespace {

constexpr uint32_t kFinish = 0;  // event kind: a task ends

}  // namespace

Simulator::Simulator(const TaskGraph& graph) : graph_(graph) {}

Trace Simulate(const TaskGraph& graph) { return Simulator(graph).Run(); }

Trace Simulator::Run() {
  const size_t num_tasks = graph_.num_tasks();
  trace_ = Trace{};
  trace_.timings.assign(num_tasks, TaskTiming{});
  trace_.finished.assign(num_tasks, 0);
  missing_.resize(num_tasks);
  ready_.assign(num_tasks, 0);
  stream_next_.assign(graph_.programs.size(), 0);
  stream_busy_.assign(graph_.programs.size(), 0);
  link_queue_.assign(graph_.links.size(), {});
  link_head_.assign(graph_.links.size(), 0);
  link_busy_.assign(graph_.links.size(), 0);

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
  const uint32_t task_id = event.target;
  const Time now = event.time;
  const Task& task = graph_.tasks[task_id];
  trace_.timings[task_id].end = now;
  trace_.finished[task_id] = 1;
  if (task.kind == TaskKind::kCompute) {
    stream_busy_[task.rank] = 0;
    ++stream_next_[task.rank];
  } else {
    link_busy_[task.link] = 0;
  }
  for (uint32_t index = graph_.succ_begin[task_id]; index < graph_.succ_begin[task_id + 1];
       ++index) {
    const uint32_t successor = graph_.succs[index];
    if (--missing_[successor] == 0) MarkReady(successor, now, queue);
  }
  if (task.kind == TaskKind::kCompute) {
    TryStartStream(task.rank, now, queue);
  } else {
    TryStartLink(task.link, now, queue);
  }
}

void Simulator::MarkReady(uint32_t task_id, Time now, EventQueue& queue) {
  ready_[task_id] = 1;
  const Task& task = graph_.tasks[task_id];
  if (task.kind == TaskKind::kCompute) {
    TryStartStream(task.rank, now, queue);
  } else {
    link_queue_[task.link].push_back(task_id);
    TryStartLink(task.link, now, queue);
  }
}

void Simulator::TryStartStream(int32_t rank, Time now, EventQueue& queue) {
  if (stream_busy_[rank]) return;
  const auto& program = graph_.programs[rank];
  const size_t next = stream_next_[rank];
  if (next >= program.size() || !ready_[program[next]]) return;
  stream_busy_[rank] = 1;
  Start(program[next], now, queue);
}

void Simulator::TryStartLink(int32_t link, Time now, EventQueue& queue) {
  if (link_busy_[link] || link_head_[link] >= link_queue_[link].size()) return;
  link_busy_[link] = 1;
  Start(link_queue_[link][link_head_[link]++], now, queue);
}

void Simulator::Start(uint32_t task_id, Time now, EventQueue& queue) {
  trace_.timings[task_id].start = now;
  queue.Push(now + graph_.tasks[task_id].duration, kFinish, task_id);
}

}  // namespace stagecraft
