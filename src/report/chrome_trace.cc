#include "report/chrome_trace.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "report/json_writer.h"

namespace stagecraft {
namespace {

// Microseconds with 3 decimals from integer ns.
std::string Micros(Time time) {
  char buffer[40];
  std::snprintf(buffer, sizeof(buffer), "%lld.%03lld", static_cast<long long>(time.ns() / 1000),
                static_cast<long long>(time.ns() % 1000));
  return buffer;
}

const char* KindWord(ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward:
      return "forward";
    case ActionKind::kBackward:
      return "backward";
    case ActionKind::kInputGrad:
      return "input-grad";
    case ActionKind::kWeightGrad:
      return "weight-grad";
  }
  return "?";
}

std::string OpName(const Action& action) {
  return std::string(1, ActionKindLetter(action.kind)) +
         " mb=" + std::to_string(action.microbatch.value()) +
         " stage=" + std::to_string(action.stage.value());
}

// "send act", "send grad" (the spellings of the first traces), else "send <payload>".
std::string TransferName(const Task& task) {
  if (task.payload == PayloadKind::kActivation) return "send act";
  if (task.payload == PayloadKind::kGradient) return "send grad";
  return std::string("send ") + PayloadName(task.payload);
}

// The event's name: the op (an F&B op's head names the pair), the transfer, or the collective.
std::string EventName(const TaskGraph& graph, const Task& info) {
  if (info.kind == TaskKind::kCollective) {
    return std::string(PayloadName(info.payload)) + " after " + FormatAction(info.action);
  }
  if (info.kind == TaskKind::kWork) {
    return std::string(PayloadName(info.payload)) +
           " mb=" + std::to_string(info.action.microbatch.value());
  }
  if (info.kind != TaskKind::kCompute) {
    return TransferName(info) + " " + FormatAction(info.action) + " -> " +
           FormatAction(info.consumer);
  }
  // An F&B op: the head carries the pair's time, the tail ends with it in no time.
  const std::string op = OpName(info.action);
  if (const Action* tail = FusedTail(graph, info.rank, static_cast<size_t>(info.position))) {
    return "F&B " + op + " + " + OpName(*tail);
  }
  return info.action.overlapped ? op + " (in the F&B op before it)" : op;
}

struct Row {
  int32_t pid;
  int32_t tid;
  Time start;
  uint32_t task;
};

// Thread ids: 0 compute; 1 + peer: send to peer; 1 + ranks + peer: receive from peer.
void WriteThreadNames(JsonWriter& json, int32_t ranks, const TaskGraph& graph) {
  auto name = [&](int32_t pid, int32_t tid, const std::string& text) {
    json.BeginObject().Key("ph").String("M").Key("name").String("thread_name");
    json.Key("pid").Int(pid).Key("tid").Int(tid);
    json.Key("args").BeginObject().Key("name").String(text).EndObject().EndObject();
  };
  for (int32_t rank = 0; rank < ranks; ++rank) {
    json.BeginObject().Key("ph").String("M").Key("name").String("process_name");
    json.Key("pid").Int(rank).Key("args").BeginObject().Key("name").String("rank " +
                                                                           std::to_string(rank));
    json.EndObject().EndObject();
    json.BeginObject().Key("ph").String("M").Key("name").String("process_sort_index");
    json.Key("pid").Int(rank).Key("args").BeginObject().Key("sort_index").Int(rank);
    json.EndObject().EndObject();
    name(rank, 0, "compute");
  }
  // Bit 1: the TP/CP/EP collective stream is used; bit 2: the data-parallel one.
  std::vector<uint8_t> has_collectives(static_cast<size_t>(ranks), 0);
  for (const Task& task : graph.tasks) {
    if (task.kind != TaskKind::kCollective) continue;
    has_collectives[task.rank] |= OnDataParallelStream(task.payload) ? 2 : 1;
  }
  for (int32_t rank = 0; rank < ranks; ++rank) {
    if (has_collectives[rank] & 1) name(rank, 1 + 2 * ranks, "collectives");
    if (has_collectives[rank] & 2) name(rank, 2 + 2 * ranks, "data-parallel collectives");
  }
  for (const Link& link : graph.links) {
    name(link.from, 1 + link.to, "send to rank " + std::to_string(link.to));
    name(link.to, 1 + ranks + link.from, "recv from rank " + std::to_string(link.from));
  }
}

void WriteMemoryCounters(JsonWriter& json, const MemoryTimeline& memory) {
  for (size_t rank = 0; rank < memory.ranks.size(); ++rank) {
    for (const MemorySample& sample : memory.ranks[rank]) {
      json.BeginObject().Key("ph").String("C").Key("name").String("memory");
      json.Key("pid").Int(static_cast<int64_t>(rank)).Key("ts").Raw(Micros(sample.time));
      json.Key("args").BeginObject();
      json.Key("activation_bytes").Int(sample.activation_bytes);
      json.Key("shared_state_bytes").Int(sample.state_bytes);
      json.EndObject().EndObject();
    }
  }
}

}  // namespace

std::string FormatChromeTrace(const TaskGraph& graph, const Trace& trace,
                              const MemoryTimeline* memory) {
  const int32_t ranks = static_cast<int32_t>(graph.programs.size());
  std::vector<Row> rows;
  rows.reserve(graph.num_tasks() * 2);
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    if (!trace.finished[task]) continue;
    const Task& info = graph.tasks[task];
    const Time start = trace.timings[task].start;
    if (info.kind == TaskKind::kDelay) continue;  // a timer, not shown
    if (info.kind == TaskKind::kCompute || info.kind == TaskKind::kWork) {
      rows.push_back({info.rank, 0, start, task});
    } else if (info.kind == TaskKind::kCollective) {
      rows.push_back(
          {info.rank, (OnDataParallelStream(info.payload) ? 2 : 1) + 2 * ranks, start, task});
    } else {
      rows.push_back({info.rank, 1 + info.peer, start, task});
      rows.push_back({info.peer, 1 + ranks + info.rank, start, task});
    }
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::tie(a.pid, a.tid, a.start, a.task) < std::tie(b.pid, b.tid, b.start, b.task);
  });
  JsonWriter json(/*pretty=*/false);
  json.BeginObject().Key("displayTimeUnit").String("ns").Key("traceEvents").BeginArray();
  WriteThreadNames(json, ranks, graph);
  for (const Row& row : rows) {
    const Task& info = graph.tasks[row.task];
    const TaskTiming& timing = trace.timings[row.task];
    const bool compute = info.kind == TaskKind::kCompute;
    json.BeginObject().Key("ph").String("X");
    json.Key("name").String(EventName(graph, info));
    json.Key("cat").String(compute ? KindWord(info.action.kind)
                           : info.kind == TaskKind::kWork
                               ? PayloadName(info.payload)
                               : (info.kind == TaskKind::kCollective ? "collective" : "p2p"));
    json.Key("pid").Int(row.pid).Key("tid").Int(row.tid);
    json.Key("ts").Raw(Micros(timing.start)).Key("dur").Raw(Micros(timing.end - timing.start));
    json.Key("args").BeginObject();
    json.Key("microbatch").Int(info.action.microbatch.value());
    json.Key("stage").Int(info.action.stage.value());
    if (!compute && info.kind != TaskKind::kWork) json.Key("bytes").Int(info.bytes);
    json.EndObject().EndObject();
  }
  if (memory != nullptr) WriteMemoryCounters(json, *memory);
  json.EndArray().EndObject();
  return json.text() + "\n";
}

}  // namespace stagecraft
