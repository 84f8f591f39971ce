// Report writers over one real simulated run: the --json summary, the Chrome trace and the
// ASCII timeline. JSON output is parsed back with nlohmann_json.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/metrics.h"
#include "core/units.h"
#include "lower/lower.h"
#include "report/chrome_trace.h"
#include "report/summary.h"
#include "report/timeline.h"
#include "schedule/generator.h"
#include "testing/interleaved_run.h"

namespace stagecraft {
namespace {

using nlohmann::json;

Time Ns(int64_t ns) { return Time::Nanoseconds(ns); }

using Simulated = InterleavedRun;

Simulated SimulateInterleaved() {
  Simulated run = SimulateInterleavedRun();
  EXPECT_FALSE(run.trace.deadlock.has_value());
  return run;
}

TEST(MetricsJsonTest, ParsesWithRequiredKeys) {
  const Simulated run = SimulateInterleaved();
  const std::string text = FormatMetricsJson(run.info, run.metrics);
  const json parsed = json::parse(text);
  ASSERT_TRUE(parsed.is_object());
  EXPECT_EQ(parsed.at("config"), "runs/\"pp4\".yaml");  // escaped and restored
  EXPECT_EQ(parsed.at("schedule"), "interleaved-1f1b");
  EXPECT_EQ(parsed.at("pp"), 4);
  EXPECT_EQ(parsed.at("vpp"), 2);
  EXPECT_EQ(parsed.at("microbatches"), 4);
  EXPECT_EQ(parsed.at("p2p"), "async");
  for (const char* key :
       {"makespan_ms", "bubble_fraction", "bubble_rate_span", "bubble_overhead"}) {
    ASSERT_TRUE(parsed.contains(key)) << key;
    EXPECT_TRUE(parsed.at(key).is_number()) << key;
  }
  EXPECT_NEAR(parsed.at("makespan_ms").get<double>(), run.metrics.makespan.ms(), 1e-9);
  EXPECT_NEAR(parsed.at("bubble_fraction").get<double>(), run.metrics.bubble_fraction, 5e-7);
  EXPECT_NEAR(parsed.at("bubble_rate_span").get<double>(), run.metrics.bubble_rate_span, 5e-7);
  EXPECT_NEAR(parsed.at("bubble_overhead").get<double>(), run.metrics.bubble_overhead, 5e-7);
  const json& ranks = parsed.at("ranks");
  ASSERT_TRUE(ranks.is_array());
  ASSERT_EQ(ranks.size(), 4u);
  for (size_t index = 0; index < ranks.size(); ++index) {
    const json& rank = ranks[index];
    const RankMetrics& expected = run.metrics.ranks[index];
    EXPECT_EQ(rank.at("rank"), static_cast<int>(index));
    EXPECT_NEAR(rank.at("busy_ms").get<double>(), expected.busy.ms(), 1e-9);
    EXPECT_NEAR(rank.at("idle_ms").get<double>(), expected.idle.ms(), 1e-9);
    EXPECT_NEAR(rank.at("span_ms").get<double>(), expected.span.ms(), 1e-9);
    EXPECT_EQ(rank.at("peak_activations"), expected.peak_activations);
    EXPECT_EQ(rank.at("peak_activation_bytes"), expected.peak_activation_bytes);
  }
  // Rank 0 of interleaved p = 4, v = 2: warm-up 2·3 + 1·4 = 10 > m·v = 8, so all 8 chunks.
  EXPECT_EQ(ranks[0].at("peak_activations"), 8);
  EXPECT_EQ(ranks[0].at("peak_activation_bytes"), 8 * (1 << 19));
}

TEST(MetricsJsonTest, FixedDecimalsAndDeterministic) {
  const Simulated run = SimulateInterleaved();
  const std::string text = FormatMetricsJson(run.info, run.metrics);
  EXPECT_EQ(text, FormatMetricsJson(run.info, run.metrics));
  EXPECT_NE(text.find("\"makespan_ms\": " + FormatMs(run.metrics.makespan) + ",\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("\"bubble_fraction\": " + FormatFixed(run.metrics.bubble_fraction, 6) + ",\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("\"cost_p2p_ms\": 0.050000,\n"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

TEST(SummaryTest, HeadlineAndOneRowPerRank) {
  const Simulated run = SimulateInterleaved();
  const std::string text = FormatSummary(run.info, run.metrics);
  EXPECT_NE(text.find("schedule interleaved-1f1b, pp 4, vpp 2, microbatches 4"), std::string::npos)
      << text;
  EXPECT_NE(text.find("makespan          " + FormatMs(run.metrics.makespan) + " ms"),
            std::string::npos)
      << text;
  int rows = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = text.find('\n', begin);
    const std::string line = text.substr(begin, end - begin);
    for (int rank = 0; rank < 4; ++rank) {
      if (line.rfind("  " + std::string(3, ' ') + std::to_string(rank) + " ", 0) == 0) ++rows;
    }
    begin = end + 1;
  }
  EXPECT_EQ(rows, 4) << text;
}

TEST(ChromeTraceTest, ProcessPerRankOpsAndTransfers) {
  const Simulated run = SimulateInterleaved();
  const std::string text = FormatChromeTrace(run.graph, run.trace);
  const json parsed = json::parse(text);
  ASSERT_TRUE(parsed.contains("traceEvents"));
  const json& events = parsed.at("traceEvents");
  ASSERT_TRUE(events.is_array());

  std::map<int, std::string> process_names;
  std::set<std::tuple<int, int, std::string>> compute;  // (pid, tid, name)
  size_t compute_events = 0;
  size_t transfer_events = 0;
  std::vector<std::tuple<int, int, double>> order;  // (pid, tid, ts) of X events
  for (const json& event : events) {
    const std::string phase = event.at("ph");
    if (phase == "M") {
      if (event.at("name") == "process_name") {
        process_names[event.at("pid").get<int>()] = event.at("args").at("name");
      }
      continue;
    }
    ASSERT_EQ(phase, "X");
    const int pid = event.at("pid");
    const int tid = event.at("tid");
    order.emplace_back(pid, tid, event.at("ts").get<double>());
    EXPECT_GE(event.at("dur").get<double>(), 0.0);
    if (event.at("cat") == "p2p") {
      ++transfer_events;
      EXPECT_NE(tid, 0) << event.dump();
      EXPECT_TRUE(event.at("args").contains("bytes"));
      EXPECT_EQ(event.at("args").at("bytes"), 4096);
    } else {
      ++compute_events;
      EXPECT_EQ(tid, 0) << event.dump();
      compute.emplace(pid, tid, event.at("name").get<std::string>());
    }
  }
  // A process per rank, named.
  ASSERT_EQ(process_names.size(), 4u);
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_EQ(process_names[rank], "rank " + std::to_string(rank));
  // Every compute task once, on its rank's compute thread; every transfer twice (send, receive).
  size_t compute_tasks = 0;
  size_t transfers = 0;
  for (const Task& task : run.graph.tasks) {
    (task.kind == TaskKind::kCompute ? compute_tasks : transfers) += 1;
  }
  EXPECT_EQ(compute_events, compute_tasks);
  EXPECT_EQ(transfer_events, 2 * transfers);
  // Stage 5 (chunk 1 of rank 1) forward of microbatch 3; stage 0 backward of microbatch 2.
  EXPECT_TRUE(compute.count({1, 0, "F mb=3 stage=5"})) << "no F mb=3 stage=5 on rank 1";
  EXPECT_TRUE(compute.count({0, 0, "B mb=2 stage=0"}));
  // Events sorted by (pid, tid, ts).
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
}

TEST(ChromeTraceTest, TimesInMicrosecondsWithThreeDecimals) {
  const Simulated run = SimulateInterleaved();
  const std::string text = FormatChromeTrace(run.graph, run.trace);
  // 1F0 (stage 1, rank 1) starts after 0F0 (1 ms per chunk) and one transfer (50 us).
  uint32_t task = 0;
  for (uint32_t id = 0; id < run.graph.num_tasks(); ++id) {
    if (run.graph.tasks[id].kind == TaskKind::kCompute &&
        FormatAction(run.graph.tasks[id].action) == "1F0") {
      task = id;
    }
  }
  ASSERT_EQ(run.trace.timings[task].start, Ns(1'050'000));
  EXPECT_NE(text.find("\"name\":\"F mb=0 stage=1\",\"cat\":\"forward\",\"pid\":1,\"tid\":0,"
                      "\"ts\":1050.000,\"dur\":1000.000"),
            std::string::npos)
      << text.substr(0, 2000);
  EXPECT_EQ(text, FormatChromeTrace(run.graph, run.trace));
}

// Issue 13 item 8: p 4 v 2 m 4 fits (rank 0: 16 actions of 2-character labels = 32 columns);
// at 20 columns it does not, and the reason names the rank and the columns its labels need.
TEST(TimelineTest, UnreadableWhenLabelsExceedTheLine) {
  const Simulated run = SimulateInterleaved();
  EXPECT_EQ(TimelineUnreadableReason(run.graph), "");
  EXPECT_EQ(TimelineUnreadableReason(run.graph, 20),
            "rank 0 runs 16 actions whose labels need 32 columns, more than the 20 of a line");
}

TEST(TimelineTest, OneRowPerRank) {
  const Simulated run = SimulateInterleaved();
  const std::string text = FormatTimeline(run.graph, run.trace, run.metrics);
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = text.find('\n', begin);
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  ASSERT_EQ(lines.size(), 1u + 4u) << text;
  EXPECT_EQ(lines[0].rfind("timeline: one column = ", 0), 0u) << lines[0];
  for (int rank = 0; rank < 4; ++rank) {
    const std::string& row = lines[1 + rank];
    EXPECT_EQ(row.rfind("rank " + std::to_string(rank) + "  |", 0), 0u) << row;
    EXPECT_EQ(row.back(), '|');
    EXPECT_EQ(row.size(), lines[1].size()) << "rows differ in width";
    EXPECT_LE(row.size(), 160u + 10u);
  }
  EXPECT_EQ(lines[1].substr(9, 2), "F0") << lines[1];  // rank 0 starts at once
  EXPECT_EQ(lines[4][9], '.') << lines[4];             // rank 3 waits for its first input
  EXPECT_NE(lines[4].find('B'), std::string::npos);
}

}  // namespace
}  // namespace stagecraft
