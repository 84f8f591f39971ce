#include "multimodal/engram.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "comm/collective.h"
#include "lower/graph_edit.h"

namespace stagecraft {

int64_t EngramRowBytes(const EngramSpec& spec) {
  return spec.values_per_row + spec.values_per_row / spec.scale_columns;
}

int64_t EngramLookupBytesPerToken(const EngramSpec& spec) {
  return int64_t{spec.lookups_per_token} * EngramRowBytes(spec);
}

int64_t EngramOwnerBytes(const EngramSpec& spec, int32_t owners) {
  int64_t bytes = 0;
  for (const int64_t rows : spec.table_rows) {
    bytes += (rows + owners - 1) / owners * EngramRowBytes(spec);
  }
  return bytes;
}

namespace {

Time AllToAll(const ClusterSpec& cluster, int32_t ranks, int32_t per_node, int64_t bytes) {
  return RingTime(cluster, Collective::kAllToAll, ranks, per_node, static_cast<double>(bytes));
}

constexpr int64_t kIdBytes = 8;        // an int64 row id
constexpr int64_t kGradientValue = 2;  // bf16 (an assumption: the report gives the rows' format)

}  // namespace

EngramSpec EngramTables(const EngramSharding& sharding, int32_t engram_layers) {
  EngramSpec spec;
  const int64_t last = spec.table_rows.back();
  spec.table_rows.resize(static_cast<size_t>(std::max(0, engram_layers)), last);
  if (sharding.table_rows > 0) {
    for (int64_t& rows : spec.table_rows) rows = sharding.table_rows;
  }
  return spec;
}

EngramTraffic EngramIterationTraffic(const EngramSpec& spec, const EngramSharding& sharding,
                                     int64_t tokens, const ClusterSpec& cluster, int32_t per_node) {
  EngramTraffic traffic;
  const int64_t lookups = tokens * spec.lookups_per_token;
  traffic.id_bytes = lookups * kIdBytes;
  traffic.row_bytes = lookups * EngramRowBytes(spec);
  traffic.gradient_bytes = lookups * spec.values_per_row * kGradientValue;
  const int32_t g = sharding.owners;
  traffic.fetch = AllToAll(cluster, g, per_node, traffic.id_bytes) +
                  AllToAll(cluster, g, per_node, traffic.row_bytes);
  traffic.gradient = AllToAll(cluster, g, per_node, traffic.gradient_bytes);
  if (sharding.host_memory) {
    // An owner serves, on average, as many rows as a rank looks up, and takes as many gradients.
    traffic.fetch +=
        FromSeconds(static_cast<double>(traffic.row_bytes) / sharding.pcie_bytes_per_s);
    traffic.gradient +=
        FromSeconds(static_cast<double>(traffic.gradient_bytes) / sharding.pcie_bytes_per_s);
  }
  return traffic;
}

void AddEngramExchanges(const std::vector<int32_t>& layers_per_stage, const EngramTraffic& traffic,
                        TaskGraph& graph) {
  GraphEditor editor(graph);
  const auto stages = static_cast<int32_t>(layers_per_stage.size());
  for (int32_t rank = 0; rank < graph.num_ranks; ++rank) {
    const size_t length = editor.OriginalProgramSize(rank);
    for (int32_t stage = 0; stage < stages; ++stage) {
      const int32_t layers = layers_per_stage[stage];
      if (layers == 0) continue;
      uint32_t first_forward = UINT32_MAX;
      uint32_t last_backward = UINT32_MAX;
      for (size_t position = 0; position < length; ++position) {
        const uint32_t task = editor.ProgramTask(rank, position);
        const Action& action = graph.tasks[task].action;
        if (action.stage.value() != stage) continue;
        if (action.kind == ActionKind::kForward) {
          if (first_forward == UINT32_MAX) first_forward = task;
        } else {
          last_backward = task;
        }
      }
      if (first_forward == UINT32_MAX) continue;  // the stage is not on this rank
      const uint32_t fetch = editor.AddCollective(rank, PayloadKind::kEngramFetch,
                                                  Time::Nanoseconds(traffic.fetch.ns() * layers),
                                                  (traffic.id_bytes + traffic.row_bytes) * layers);
      graph.tasks[fetch].action = graph.tasks[first_forward].action;
      editor.AddEdge(fetch, first_forward);
      if (last_backward == UINT32_MAX) continue;
      const uint32_t gradient = editor.AddCollective(
          rank, PayloadKind::kEngramGradient, Time::Nanoseconds(traffic.gradient.ns() * layers),
          traffic.gradient_bytes * layers);
      graph.tasks[gradient].action = graph.tasks[last_backward].action;
      editor.AddEdge(last_backward, gradient);
    }
  }
  editor.Finish();
}

EngramExposure MeasureEngramExposure(const TaskGraph& graph, const Trace& trace) {
  EngramExposure exposure;
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Task& info = graph.tasks[task];
    const TaskTiming& timing = trace.timings[task];
    if (info.payload == PayloadKind::kEngramGradient) exposure.gradient += info.duration;
    if (info.payload != PayloadKind::kEngramFetch) continue;
    exposure.fetch += info.duration;
    // The forward waiting for it: when could it have started without the fetch?
    for (uint32_t k = graph.succ_begin[task]; k < graph.succ_begin[task + 1]; ++k) {
      const uint32_t forward = graph.succs[k];
      const Task& consumer = graph.tasks[forward];
      Time ready;
      if (consumer.position > 0) {
        ready = trace.timings[graph.programs[consumer.rank][consumer.position - 1]].end;
      }
      for (uint32_t p = graph.pred_begin[forward]; p < graph.pred_begin[forward + 1]; ++p) {
        if (graph.preds[p] != task) ready = std::max(ready, trace.timings[graph.preds[p]].end);
      }
      if (timing.end > ready)
        exposure.fetch_delay = std::max(exposure.fetch_delay, timing.end - ready);
    }
  }
  return exposure;
}

Status CheckEngramSharding(const EngramSharding& sharding, int32_t stage_peers,
                           int32_t engram_layers) {
  if (engram_layers == 0) {
    return Error{
        "multimodal.engram: the model has no Engram layer to shard (expected a layer "
        "with engram: true, as V4.1's L1 and L14)"};
  }
  if (sharding.owners > stage_peers) {
    return Error{"multimodal.engram.owners: G = " + std::to_string(sharding.owners) +
                 " is larger than the owner group: " + std::to_string(stage_peers) +
                 " ranks (dp x cp) hold an Engram layer's stage (expected G <= " +
                 std::to_string(stage_peers) + ", or raise dp)"};
  }
  if (stage_peers % sharding.owners != 0) {
    return Error{"multimodal.engram.owners: G = " + std::to_string(sharding.owners) +
                 " does not divide the " + std::to_string(stage_peers) +
                 " ranks (dp x cp) that hold an Engram layer's stage (expected a divisor)"};
  }
  return Status::Ok();
}

}  // namespace stagecraft
