// The HTML report's parts over one real simulated run: the timeline's data (every action, or
// the aggregated bins), the memory chart, the bubble split, and the page around them.
#include "report/html.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/memory.h"
#include "analysis/metrics.h"
#include "core/units.h"
#include "report/html_run.h"
#include "schedule/generator.h"
#include "testing/interleaved_run.h"

namespace stagecraft {
namespace {

using nlohmann::json;

using Simulated = InterleavedRun;

Simulated SimulateInterleaved() {
  Simulated run = SimulateInterleavedRun();
  EXPECT_FALSE(run.trace.deadlock.has_value());
  return run;
}

// The JSON inside the timeline's <script class="timeline-data">.
json TimelineData(const std::string& html) {
  const std::string open = "class=\"timeline-data\">";
  const size_t begin = html.find(open);
  EXPECT_NE(begin, std::string::npos);
  const size_t end = html.find("</script>", begin);
  return json::parse(html.substr(begin + open.size(), end - begin - open.size()));
}

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

TEST(HtmlTimelineTest, HoldsEveryActionOfEveryRankInItsLane) {
  const Simulated run = SimulateInterleaved();
  const std::string html = HtmlTimeline(run.graph, run.trace, run.metrics.makespan);
  EXPECT_EQ(Count(html, "class=\"timeline-row\""), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NE(html.find("data-rank=\"" + std::to_string(rank) + "\""), std::string::npos);
  }
  const json data = TimelineData(html);
  EXPECT_EQ(data["mode"], "events");
  EXPECT_EQ(data["makespan"], run.metrics.makespan.ns());
  ASSERT_EQ(data["ranks"].size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    const json& compute = data["ranks"][rank]["lanes"][0];
    const json& sends = data["ranks"][rank]["lanes"][1];
    ASSERT_EQ(compute.size() % 6, 0u);
    // Every action of the rank's program, and their durations add up to its busy time.
    EXPECT_EQ(compute.size() / 6, run.graph.programs[rank].size());
    int64_t busy = 0;
    for (size_t index = 0; index < compute.size(); index += 6) {
      busy += compute[index + 1].get<int64_t>();
      if (index > 0) {
        EXPECT_LE(compute[index - 6].get<int64_t>(), compute[index].get<int64_t>());
      }
    }
    EXPECT_EQ(busy, run.metrics.ranks[rank].busy.ns());
    // Each transfer the rank sends, with its peer.
    size_t sent = 0;
    for (const Task& task : run.graph.tasks) {
      sent += task.kind == TaskKind::kTransfer && task.rank == rank;
    }
    EXPECT_EQ(sends.size() / 6, sent);
    for (size_t index = 0; index < sends.size(); index += 6) {
      EXPECT_NE(sends[index + 5].get<int>(), rank);
      EXPECT_GE(sends[index + 5].get<int>(), 0);
    }
  }
}

TEST(HtmlTimelineTest, AggregatesIntoBinsAboveTheEventLimit) {
  const Simulated run = SimulateInterleaved();
  TimelineLimits limits;
  limits.max_events = 10;
  limits.bins = 50;
  const std::string html = HtmlTimeline(run.graph, run.trace, run.metrics.makespan, limits);
  EXPECT_NE(html.find("data-mode=\"bins\""), std::string::npos);
  EXPECT_NE(html.find("aggregated into 50 time bins"), std::string::npos);
  const json data = TimelineData(html);
  EXPECT_EQ(data["mode"], "bins");
  EXPECT_EQ(data["bins"], 50);
  const double width = static_cast<double>(run.metrics.makespan.ns()) / 50;
  for (int rank = 0; rank < 4; ++rank) {
    const json& compute = data["ranks"][rank]["lanes"][0];
    ASSERT_EQ(compute.size(), 100u);  // (busy percent, busiest category) per bin
    // Busy shares are rounded up per bin: their sum covers the busy time, by at most a
    // percent of a bin per bin more.
    double covered = 0;
    for (size_t bin = 0; bin < 50; ++bin) {
      const int percent = compute[2 * bin].get<int>();
      EXPECT_GE(percent, 0);
      EXPECT_LE(percent, 100);
      covered += percent * width / 100;
    }
    const double busy = static_cast<double>(run.metrics.ranks[rank].busy.ns());
    EXPECT_GE(covered, busy - 1);
    EXPECT_LE(covered, busy + 50 * width / 100 + 1);
  }
}

TEST(HtmlMemoryChartTest, OneLinePerRankPeakingAtTheSimulatedPeak) {
  const Simulated run = SimulateInterleaved();
  const MemoryTimeline memory =
      ComputeMemoryTimeline(run.schedule, run.costs, run.graph, run.trace);
  const std::vector<double> fixed = {1e9, 1e9, 1e9, 1e9};
  const std::string with_capacity =
      HtmlMemoryChart(memory, fixed, int64_t{2} << 30, run.metrics.makespan);
  EXPECT_EQ(Count(with_capacity, "class=\"rank-memory\""), 4u);
  EXPECT_NE(with_capacity.find("<g class=\"capacity\">"), std::string::npos);
  EXPECT_NE(with_capacity.find("device 2.00 GiB"), std::string::npos);
  for (int rank = 0; rank < 4; ++rank) {
    const double peak = 1e9 + static_cast<double>(memory.peak_memory_bytes[rank]);
    EXPECT_NE(
        with_capacity.find("rank " + std::to_string(rank) + ": peak " + FormatGib(peak) + " GiB"),
        std::string::npos)
        << "rank " << rank;
  }
  const std::string unknown = HtmlMemoryChart(memory, fixed, 0, run.metrics.makespan);
  EXPECT_EQ(unknown.find("class=\"capacity\""), std::string::npos);
}

TEST(HtmlBubbleSplitTest, OneBarAndOneRowPerRank) {
  const Simulated run = SimulateInterleaved();
  const std::string html = HtmlBubbleSplit(run.metrics);
  EXPECT_EQ(Count(html, "<text"), 4u);  // the rank labels of the bars
  EXPECT_EQ(Count(html, "<tr>"), 5u);   // the header and one row per rank
  EXPECT_NE(html.find(FormatMs(run.metrics.ranks[0].busy)), std::string::npos);
}

TEST(HtmlPageTest, EscapesTextAndKeepsTheSectionsInOrder) {
  HtmlPage page("a <b> & \"c\"", "sub");
  page.Add({"first", "First", HtmlTable({"name", "value"}, {{"<x>", "1"}, {"y", "2"}}, {"over"})});
  page.Add({"second", "Second", HtmlPre("a < b")});
  const std::string html = page.Render();
  EXPECT_NE(html.find("<title>a &lt;b&gt; &amp; &quot;c&quot;</title>"), std::string::npos);
  EXPECT_NE(html.find("<td>&lt;x&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"over\"><td>&lt;x&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>y</td>"), std::string::npos);
  EXPECT_NE(html.find("<pre>a &lt; b</pre>"), std::string::npos);
  EXPECT_LT(html.find("<section id=\"first\">"), html.find("<section id=\"second\">"));
  EXPECT_NE(html.find("<a href=\"#second\">Second</a>"), std::string::npos);
  // Self-contained: nothing to fetch.
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

}  // namespace
}  // namespace stagecraft
