#include "report/html_run.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

#include "core/units.h"
#include "lower/state_flow.h"
#include "model/layer_spec.h"
#include "report/html.h"
#include "report/svg_plot.h"

namespace stagecraft {
namespace {

// Lanes of a rank's row: its compute stream, the point-to-point sends it makes, its two
// collective streams (lower/task_graph.h CollectiveStream) and the shared-state traffic it sends.
enum Lane : int32_t { kComputeLane, kSendLane, kCollectiveLane, kDataParallelLane, kStateLane };
constexpr int32_t kLanes = 5;

// Categories: the compute kinds first, then one per PayloadKind (its PayloadName).
constexpr int32_t kComputeCategories = 5;  // forward, backward, input-grad, weight-grad, F&B
constexpr int32_t kPayloadKinds = static_cast<int32_t>(PayloadKind::kCheckpointSave) + 1;
constexpr int32_t kCategories = kComputeCategories + kPayloadKinds;

constexpr std::array<const char*, kComputeCategories> kComputeNames = {
    "forward", "backward", "input-grad", "weight-grad", "F&B"};
// Compute in blues and greens, sends in greys, collectives warm, state in purple.
constexpr std::array<const char*, kCategories> kColors = {
    "#4c78a8", "#54a24b", "#72b7b2", "#88d27a", "#2f4b7c",  // compute
    "#9aa3ae",                                              // none
    "#8c96a3", "#b0b8c2",                                   // activation, gradient
    "#9c5fb5", "#c49bd6", "#6f3f8a", "#b98bcf",             // state, dstate, shadow x2
    "#f58518", "#e45756", "#ff9da6", "#d67b00",             // tp, ep, cp, dp
    "#eeca3b", "#b79a20", "#9d755d",                        // gather, reduce, optimizer
    "#439894", "#7bc4c0", "#5e8f8c", "#a0c9c6",             // vision fwd/bwd/embed/grad
    "#e17c05", "#cc503e", "#94346e", "#6f4070", "#a05195",  // engram, text, loss, gather
    "#38a6a5",                                              // contrastive gather
    "#5b5b5b"};                                             // checkpoint save

int32_t CategoryOf(const TaskGraph& graph, const Task& task) {
  if (task.kind == TaskKind::kCompute) {
    if (FusedTail(graph, task.rank, static_cast<size_t>(task.position)) != nullptr) return 4;
    switch (task.action.kind) {
      case ActionKind::kForward:
        return 0;
      case ActionKind::kBackward:
        return 1;
      case ActionKind::kInputGrad:
        return 2;
      case ActionKind::kWeightGrad:
        return 3;
    }
  }
  return kComputeCategories + static_cast<int32_t>(task.payload);
}

std::string CategoryName(int32_t category) {
  if (category < kComputeCategories) return kComputeNames[category];
  return PayloadName(static_cast<PayloadKind>(category - kComputeCategories));
}

bool IsStatePayload(PayloadKind payload) {
  return payload == PayloadKind::kState || payload == PayloadKind::kStateGradient ||
         payload == PayloadKind::kShadowSync || payload == PayloadKind::kShadowGradient;
}

// The lane a task is drawn in, or -1 for tasks that take no stream (delays).
int32_t LaneOf(const Task& task) {
  switch (task.kind) {
    case TaskKind::kCompute:
    case TaskKind::kWork:
      return kComputeLane;
    case TaskKind::kTransfer:
      return IsStatePayload(task.payload) ? kStateLane : kSendLane;
    case TaskKind::kCollective:
      return OnDataParallelStream(task.payload) ? kDataParallelLane : kCollectiveLane;
    case TaskKind::kDelay:
      return -1;
  }
  return -1;
}

void AppendInt(std::string& out, int64_t value) {
  out += std::to_string(value);
  out += ',';
}

// "[1,2,3]" from a buffer of "1,2,3," (its trailing comma dropped).
std::string Closed(std::string items) {
  if (!items.empty()) items.pop_back();
  return "[" + items + "]";
}

std::string Legend(const std::vector<uint8_t>& used) {
  std::string html = "<div class=\"legend\">";
  for (int32_t category = 0; category < kCategories; ++category) {
    if (!used[category]) continue;
    html += "<span><span class=\"swatch\" style=\"background:" + std::string(kColors[category]) +
            "\"></span>" + XmlEscape(CategoryName(category)) + "</span>";
  }
  return html + "</div>";
}

std::string RankColor(int32_t rank) {
  static constexpr std::array<const char*, 10> kPalette = {
      "#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2",
      "#b279a2", "#eeca3b", "#9d755d", "#ff9da6", "#6f4070"};
  return kPalette[static_cast<size_t>(rank) % kPalette.size()];
}

std::string Num(double value, int decimals = 1) { return FormatFixed(value, decimals); }

}  // namespace

const std::vector<std::string>& TimelineLanes() {
  static const std::vector<std::string> lanes = {"compute", "sends", "tp/cp/ep collectives",
                                                 "dp collectives", "shared state"};
  return lanes;
}

std::string HtmlTimeline(const TaskGraph& graph, const Trace& trace, Time makespan,
                         const TimelineLimits& limits) {
  const int32_t ranks = graph.num_ranks;
  // Each rank's lanes: task ids in start order.
  std::vector<std::array<std::vector<uint32_t>, kLanes>> rows(static_cast<size_t>(ranks));
  std::vector<uint8_t> used(kCategories, 0);
  int64_t events = 0;
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Task& info = graph.tasks[task];
    const int32_t lane = LaneOf(info);
    if (lane < 0 || !trace.finished[task] || info.rank < 0 || info.rank >= ranks) continue;
    rows[static_cast<size_t>(info.rank)][static_cast<size_t>(lane)].push_back(task);
    used[static_cast<size_t>(CategoryOf(graph, info))] = 1;
    ++events;
  }
  for (auto& lanes : rows) {
    for (auto& lane : lanes) {
      std::stable_sort(lane.begin(), lane.end(), [&](uint32_t a, uint32_t b) {
        return trace.timings[a].start < trace.timings[b].start;
      });
    }
  }
  const bool binned = events > limits.max_events;
  const int64_t span = std::max<int64_t>(makespan.ns(), 1);

  std::string json = "{\"makespan\":" + std::to_string(span) + ",\"mode\":\"" +
                     (binned ? "bins" : "events") +
                     "\",\"bins\":" + std::to_string(binned ? limits.bins : 0) + ",\"lanes\":[";
  for (size_t lane = 0; lane < TimelineLanes().size(); ++lane) {
    json += (lane ? ",\"" : "\"") + TimelineLanes()[lane] + "\"";
  }
  json += "],\"categories\":[";
  for (int32_t category = 0; category < kCategories; ++category) {
    json +=
        (category ? ",[\"" : "[\"") + CategoryName(category) + "\",\"" + kColors[category] + "\"]";
  }
  json += "],\"ranks\":[";
  // Bins mode: per lane and bin, the busy time per category (one rank at a time).
  std::vector<int64_t> busy;
  if (binned) busy.assign(static_cast<size_t>(kLanes) * limits.bins * kCategories, 0);
  for (int32_t rank = 0; rank < ranks; ++rank) {
    json += (rank ? ",{\"rank\":" : "{\"rank\":") + std::to_string(rank) + ",\"lanes\":[";
    if (binned) std::fill(busy.begin(), busy.end(), 0);
    for (int32_t lane = 0; lane < kLanes; ++lane) {
      std::string items;
      const std::vector<uint32_t>& tasks = rows[static_cast<size_t>(rank)][lane];
      if (!binned) {
        items.reserve(tasks.size() * 32);
        for (uint32_t task : tasks) {
          const Task& info = graph.tasks[task];
          const TaskTiming& timing = trace.timings[task];
          AppendInt(items, timing.start.ns());
          AppendInt(items, (timing.end - timing.start).ns());
          AppendInt(items, CategoryOf(graph, info));
          AppendInt(items, info.action.microbatch.value());
          AppendInt(items, info.action.stage.value());
          AppendInt(items, info.kind == TaskKind::kTransfer ? info.peer : -1);
        }
      } else {
        int64_t* lane_busy = busy.data() + static_cast<size_t>(lane) * limits.bins * kCategories;
        for (uint32_t task : tasks) {
          const TaskTiming& timing = trace.timings[task];
          const int32_t category = CategoryOf(graph, graph.tasks[task]);
          // Spread the task's time over the bins it covers.
          int64_t from = timing.start.ns();
          const int64_t to = std::min(timing.end.ns(), span);
          while (from < to) {
            const int64_t bin = std::min<int64_t>(from * limits.bins / span, limits.bins - 1);
            const int64_t bin_end = std::min(to, (bin + 1) * span / limits.bins + 1);
            lane_busy[bin * kCategories + category] += std::max<int64_t>(bin_end - from, 1);
            from = bin_end;
          }
        }
        for (int32_t bin = 0; bin < limits.bins; ++bin) {
          const int64_t* cell = lane_busy + static_cast<size_t>(bin) * kCategories;
          int64_t total = 0;
          int32_t top = 0;
          for (int32_t category = 0; category < kCategories; ++category) {
            total += cell[category];
            if (cell[category] > cell[top]) top = category;
          }
          const int64_t width = (bin + 1) * span / limits.bins - bin * span / limits.bins;
          const int64_t percent =
              total == 0 ? 0 : std::clamp<int64_t>((100 * total + width - 1) / width, 1, 100);
          AppendInt(items, percent);
          AppendInt(items, top);
        }
      }
      json += (lane ? "," : "") + Closed(std::move(items));
    }
    json += "]}";
  }
  json += "]}";

  std::string html = "<div class=\"timeline\" data-ranks=\"" + std::to_string(ranks) +
                     "\" data-mode=\"" + (binned ? "bins" : "events") + "\">\n";
  html += Legend(used);
  html +=
      "<div class=\"controls\"><button class=\"reset\" type=\"button\">reset zoom</button>"
      "wheel: zoom, drag: pan, double click: whole run. Lanes per rank, top to bottom: ";
  for (size_t lane = 0; lane < TimelineLanes().size(); ++lane) {
    html += (lane ? ", " : "") + TimelineLanes()[lane];
  }
  html += ".</div>\n";
  if (binned) {
    html += "<p class=\"note\">" + std::to_string(events) +
            " actions, more than a screen shows: " + "each lane is aggregated into " +
            std::to_string(limits.bins) +
            " time bins (shade: busy share; color: the busiest kind). --trace FILE writes every "
            "action for ui.perfetto.dev.</p>\n";
  }
  html +=
      "<div class=\"timeline-axis-row\" style=\"height:18px\"><span class=\"label\">"
      "</span><canvas></canvas></div>\n";
  const int lane_height = 10;
  for (int32_t rank = 0; rank < ranks; ++rank) {
    html += "<div class=\"timeline-row\" data-rank=\"" + std::to_string(rank) +
            "\" style=\"height:" + std::to_string(kLanes * lane_height) +
            "px\"><span class=\"label\">rank " + std::to_string(rank) +
            "</span><canvas></canvas></div>\n";
  }
  html +=
      "<div class=\"tooltip\"></div>\n<script type=\"application/json\" "
      "class=\"timeline-data\">" +
      json + "</script>\n</div>";
  return html;
}

std::string HtmlMemoryChart(const MemoryTimeline& memory, const std::vector<double>& fixed_bytes,
                            int64_t capacity_bytes, Time makespan) {
  constexpr int kBins = 300;
  constexpr double kWidth = 1000, kHeight = 360, kLeft = 64, kRight = 150, kTop = 14, kBottom = 40;
  const int64_t span = std::max<int64_t>(makespan.ns(), 1);
  const size_t ranks = memory.ranks.size();
  // Per rank, the peak total in each time bin (the value carried into the bin counts).
  std::vector<std::vector<double>> peaks(ranks, std::vector<double>(kBins, 0));
  double top = static_cast<double>(capacity_bytes);
  for (size_t rank = 0; rank < ranks; ++rank) {
    const double fixed = rank < fixed_bytes.size() ? fixed_bytes[rank] : 0;
    std::vector<double>& bins = peaks[rank];
    std::fill(bins.begin(), bins.end(), fixed);
    const std::vector<MemorySample>& samples = memory.ranks[rank];
    for (size_t index = 0; index < samples.size(); ++index) {
      const double value =
          fixed + static_cast<double>(samples[index].activation_bytes + samples[index].state_bytes);
      const int64_t from = samples[index].time.ns();
      const int64_t to = index + 1 < samples.size() ? samples[index + 1].time.ns() : span;
      const int64_t first = std::clamp<int64_t>(from * kBins / span, 0, kBins - 1);
      const int64_t last = std::clamp<int64_t>(std::max(from, to - 1) * kBins / span, 0, kBins - 1);
      for (int64_t bin = first; bin <= last; ++bin) bins[bin] = std::max(bins[bin], value);
    }
    for (double value : bins) top = std::max(top, value);
  }
  top = std::max(top * 1.05, 1.0);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto x_of = [&](double fraction) { return kLeft + fraction * plot_w; };
  auto y_of = [&](double bytes) { return kTop + plot_h * (1 - bytes / top); };
  std::string svg =
      "<svg class=\"memory-chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " +
      Num(kWidth, 0) + " " + Num(kHeight, 0) + "\" width=\"" + Num(kWidth, 0) + "\" height=\"" +
      Num(kHeight, 0) + "\">\n";
  // Axes and ticks: GiB on y (five steps), ms on x (five steps).
  svg += "<rect x=\"" + Num(kLeft) + "\" y=\"" + Num(kTop) + "\" width=\"" + Num(plot_w) +
         "\" height=\"" + Num(plot_h) + "\" fill=\"none\" stroke=\"#d8dde6\"/>\n";
  for (int tick = 0; tick <= 5; ++tick) {
    const double bytes = top * tick / 5;
    const double ms = static_cast<double>(span) * tick / 5 / 1e6;
    svg += "<text x=\"" + Num(kLeft - 6) + "\" y=\"" + Num(y_of(bytes) + 4) +
           "\" text-anchor=\"end\">" + FormatGib(bytes) + "</text>\n";
    svg += "<text x=\"" + Num(x_of(tick / 5.0)) + "\" y=\"" + Num(kHeight - kBottom + 16) +
           "\" text-anchor=\"middle\">" + Num(ms, 1) + "</text>\n";
  }
  svg += "<text x=\"" + Num(kLeft + plot_w / 2) + "\" y=\"" + Num(kHeight - 6) +
         "\" text-anchor=\"middle\">time (ms)</text>\n";
  svg += "<text x=\"14\" y=\"" + Num(kTop + plot_h / 2) +
         "\" text-anchor=\"middle\" transform=\"rotate(-90 14 " + Num(kTop + plot_h / 2) +
         ")\">GiB per device</text>\n";
  if (capacity_bytes > 0) {
    const double y = y_of(static_cast<double>(capacity_bytes));
    svg += "<g class=\"capacity\"><line x1=\"" + Num(kLeft) + "\" y1=\"" + Num(y) + "\" x2=\"" +
           Num(kLeft + plot_w) + "\" y2=\"" + Num(y) +
           "\" stroke=\"#b3261e\" stroke-dasharray=\"6 4\" stroke-width=\"1.5\"/><text x=\"" +
           Num(kLeft + plot_w + 6) + "\" y=\"" + Num(y + 4) + "\" fill=\"#b3261e\">device " +
           FormatGib(static_cast<double>(capacity_bytes)) + " GiB</text></g>\n";
  }
  for (size_t rank = 0; rank < ranks; ++rank) {
    const std::vector<double>& bins = peaks[rank];
    std::string points;
    double peak = 0;
    for (int bin = 0; bin < kBins; ++bin) {
      peak = std::max(peak, bins[bin]);
      // A step: the bin's level from its start to its end; equal neighbours share a segment.
      if (bin > 0 && bins[bin] == bins[bin - 1]) continue;
      if (bin > 0)
        points +=
            Num(x_of(static_cast<double>(bin) / kBins)) + "," + Num(y_of(bins[bin - 1])) + " ";
      points += Num(x_of(static_cast<double>(bin) / kBins)) + "," + Num(y_of(bins[bin])) + " ";
    }
    points += Num(x_of(1)) + "," + Num(y_of(bins[kBins - 1]));
    svg += "<polyline class=\"rank-memory\" data-rank=\"" + std::to_string(rank) +
           "\" fill=\"none\" stroke=\"" + RankColor(static_cast<int32_t>(rank)) +
           "\" stroke-width=\"1.3\" points=\"" + points + "\"><title>rank " + std::to_string(rank) +
           ": peak " + FormatGib(peak) + " GiB</title></polyline>\n";
  }
  // Legend: the first ranks by color (the colors repeat every ten ranks).
  const size_t shown = std::min<size_t>(ranks, 10);
  for (size_t rank = 0; rank < shown; ++rank) {
    const double y = kTop + 28 + 15 * static_cast<double>(rank);
    svg += "<line x1=\"" + Num(kLeft + plot_w + 8) + "\" y1=\"" + Num(y - 4) + "\" x2=\"" +
           Num(kLeft + plot_w + 24) + "\" y2=\"" + Num(y - 4) + "\" stroke=\"" +
           RankColor(static_cast<int32_t>(rank)) + "\" stroke-width=\"2\"/><text x=\"" +
           Num(kLeft + plot_w + 28) + "\" y=\"" + Num(y) + "\">rank " + std::to_string(rank) +
           "</text>\n";
  }
  if (ranks > 10) {
    svg += "<text x=\"" + Num(kLeft + plot_w + 8) + "\" y=\"" + Num(kTop + 28 + 15 * 10.0) +
           "\">colors repeat every 10 ranks</text>\n";
  }
  return svg + "</svg>";
}

std::string HtmlBubbleSplit(const Metrics& metrics) {
  const double makespan = static_cast<double>(std::max<int64_t>(metrics.makespan.ns(), 1));
  struct Part {
    const char* name;
    const char* color;
  };
  static constexpr std::array<Part, 5> kParts = {{{"busy", "#4c78a8"},
                                                  {"pipeline bubble", "#c7ccd4"},
                                                  {"exposed collectives", "#f58518"},
                                                  {"exposed p2p", "#8c96a3"},
                                                  {"exposed state", "#9c5fb5"}}};
  auto parts_of = [](const RankMetrics& rank) {
    return std::array<Time, 5>{rank.busy, rank.bubble.pipeline, rank.bubble.exposed_collectives,
                               rank.bubble.exposed_p2p, rank.bubble.exposed_state};
  };
  const double row_h = 14, left = 64, width = 760;
  const double height = 20 + row_h * static_cast<double>(metrics.ranks.size());
  std::string svg =
      "<svg class=\"bubble-bars\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " +
      Num(left + width + 10, 0) + " " + Num(height, 0) + "\" width=\"" + Num(left + width + 10, 0) +
      "\" height=\"" + Num(height, 0) + "\">\n";
  std::vector<std::vector<std::string>> rows;
  for (size_t index = 0; index < metrics.ranks.size(); ++index) {
    const RankMetrics& rank = metrics.ranks[index];
    const std::array<Time, 5> parts = parts_of(rank);
    const double y = 4 + row_h * static_cast<double>(index);
    svg += "<text x=\"" + Num(left - 6) + "\" y=\"" + Num(y + 10) + "\" text-anchor=\"end\">rank " +
           std::to_string(rank.rank) + "</text>";
    double x = left;
    std::vector<std::string> row = {std::to_string(rank.rank)};
    for (size_t part = 0; part < parts.size(); ++part) {
      const double w = width * static_cast<double>(parts[part].ns()) / makespan;
      if (w > 0) {
        svg += "<rect x=\"" + Num(x, 2) + "\" y=\"" + Num(y) + "\" width=\"" + Num(w, 2) +
               "\" height=\"" + Num(row_h - 3) + "\" fill=\"" + kParts[part].color +
               "\"><title>rank " + std::to_string(rank.rank) + " " + kParts[part].name + ": " +
               FormatMs(parts[part]) + " ms</title></rect>";
      }
      x += w;
      row.push_back(FormatMs(parts[part]));
    }
    row.push_back(Num(100.0 * static_cast<double>(rank.idle.ns()) / makespan, 1) + "%");
    rows.push_back(std::move(row));
    svg += "\n";
  }
  svg += "</svg>";
  std::string legend = "<div class=\"legend\">";
  for (const Part& part : kParts) {
    legend += "<span><span class=\"swatch\" style=\"background:" + std::string(part.color) +
              "\"></span>" + part.name + "</span>";
  }
  legend += "</div>";
  const BubbleFractions fractions = BubbleFractionsOf(metrics);
  std::string html = HtmlFacts({
      {"idle share of device time (bubble_fraction)", Num(metrics.bubble_fraction, 4)},
      {"pipeline bubble", Num(fractions.pipeline, 4)},
      {"exposed collectives", Num(fractions.exposed_collectives, 4)},
      {"exposed point-to-point", Num(fractions.exposed_p2p, 4)},
      {"exposed shared state", Num(fractions.exposed_state, 4)},
  });
  html +=
      "<p class=\"note\">Each rank's idle time by what it waited for: another stage's compute "
      "(the pipeline's bubble) or communication that was not hidden (doc/metrics.md).</p>";
  html += legend + svg;
  html += HtmlTable(
      {"rank", "busy (ms)", "pipeline (ms)", "collectives (ms)", "p2p (ms)", "state (ms)", "idle"},
      rows);
  return html;
}

std::string HtmlSharedState(const RunInfo& info, const Metrics& metrics) {
  if (info.cuts.empty() && metrics.flows.empty()) {
    return "<p class=\"note\">No shared state crosses a stage: the model has no layers that "
           "consume another layer's state (shared state is CSA2's, doc/csa2.md).</p>";
  }
  std::string html;
  if (!info.cuts.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const CutInfo& cut : info.cuts) {
      rows.push_back({std::to_string(cut.after_stage), std::to_string(cut.before_layer),
                      std::to_string(cut.hidden_bytes_per_token),
                      std::to_string(cut.state_bytes_per_token),
                      cut.states.empty() ? "-" : cut.states});
    }
    html += "<p>What crosses each stage cut per token (the payload policy's view):</p>";
    html += HtmlTable({"after stage", "before layer", "hidden B/token", "state B/token", "states"},
                      rows);
  }
  if (!metrics.flows.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const FlowMetrics& flow : metrics.flows) {
      std::string consumers;
      for (int32_t stage : flow.consumer_stages) {
        consumers += (consumers.empty() ? "" : " ") + std::to_string(stage);
      }
      rows.push_back({std::to_string(flow.producer_layer), StateKindName(flow.kind),
                      StatePolicyName(flow.policy), std::to_string(flow.producer_stage),
                      consumers.empty() ? "-" : consumers, FormatBytes(flow.bytes_forward),
                      FormatBytes(flow.bytes_backward)});
    }
    html +=
        "<p>Each shared-state flow over the iteration (bytes between ranks; a consumer on the "
        "producer's rank moves none):</p>";
    html += HtmlTable({"producer layer", "state", "policy", "producer stage", "consumer stages",
                       "forward", "backward"},
                      rows);
  }
  return html;
}

}  // namespace stagecraft
