#include "commands/serve_report.h"

#include <algorithm>
#include <cstdint>

#include "core/units.h"
#include "report/html.h"
#include "report/svg_plot.h"

namespace stagecraft {
namespace {

constexpr size_t kCdfPoints = 200;

// The empirical CDF of ascending `values` (seconds), in ms, at most kCdfPoints points: the
// value below which each share of the requests falls.
Series Cdf(const std::string& name, const std::vector<double>& values) {
  Series series{name, {}, {{"kind", "cdf"}}};
  const size_t n = values.size();
  if (n == 0) return series;
  const size_t points = std::min(n, kCdfPoints);
  for (size_t point = 1; point <= points; ++point) {
    const size_t index = (point * n + points - 1) / points - 1;  // nearest rank of point/points
    const double share = static_cast<double>(index + 1) / static_cast<double>(n);
    series.points.push_back(PlotPoint{
        values[index] * 1e3, share,
        FormatFixed(100 * share, 1) + "% within " + FormatFixed(values[index] * 1e3, 3) + " ms",
        false});
  }
  return series;
}

// A vertical line at the SLO's bound, across the CDF's height.
Series Bound(const std::string& name, double seconds) {
  const std::string label = name + " " + FormatFixed(seconds * 1e3, 3) + " ms";
  return Series{
      label,
      {PlotPoint{seconds * 1e3, 0, label, false}, PlotPoint{seconds * 1e3, 1, label, false}},
      {{"kind", "slo"}}};
}

std::string CdfPlot(const std::string& title, const std::vector<double>& values,
                    const std::vector<Series>& bounds) {
  std::vector<Series> series = {Cdf(title, values)};
  series.insert(series.end(), bounds.begin(), bounds.end());
  return FormatLinePlot(series,
                        PlotOptions{title + ": share of requests within a latency", "latency (ms)",
                                    "share of requests", false, false, 560, 340});
}

// Blocks in use per replica over time, as a share of a replica's capacity: the peak of each of
// at most 300 time bins, so the plot stays small and keeps every peak.
std::string KvPlot(const ReplicaModel& replica, const std::vector<IterationRecord>& iterations) {
  const int64_t capacity = replica.kv_capacity_tokens / std::max(1, replica.engine.block_tokens);
  if (iterations.empty() || capacity <= 0) return "<p>No iterations ran.</p>";
  const int64_t start = iterations.front().start_ns;
  int64_t end = start + 1;
  for (const IterationRecord& record : iterations) end = std::max(end, record.end_ns);
  constexpr int64_t kBins = 300;
  const int32_t replicas = replica.shape.replicas;
  std::vector<std::vector<int64_t>> peaks(static_cast<size_t>(replicas),
                                          std::vector<int64_t>(kBins, -1));
  for (const IterationRecord& record : iterations) {
    if (record.replica < 0 || record.replica >= replicas) continue;
    const int64_t bin = std::min(kBins - 1, (record.start_ns - start) * kBins / (end - start));
    int64_t& peak = peaks[static_cast<size_t>(record.replica)][static_cast<size_t>(bin)];
    peak = std::max(peak, record.kv_blocks);
  }
  std::vector<Series> series;
  for (int32_t r = 0; r < replicas; ++r) {
    Series one{"replica " + std::to_string(r), {}, {{"replica", std::to_string(r)}}};
    for (int64_t bin = 0; bin < kBins; ++bin) {
      const int64_t blocks = peaks[static_cast<size_t>(r)][static_cast<size_t>(bin)];
      if (blocks < 0) continue;
      const double seconds = static_cast<double>((end - start) * bin / kBins) * 1e-9;
      one.points.push_back(PlotPoint{seconds,
                                     static_cast<double>(blocks) / static_cast<double>(capacity),
                                     FormatFixed(seconds, 3) + " s: " + std::to_string(blocks) +
                                         " of " + std::to_string(capacity) + " blocks",
                                     false});
    }
    series.push_back(std::move(one));
  }
  return FormatLinePlot(series,
                        PlotOptions{"KV cache in use (peak per time bin)", "time (s)",
                                    "share of a replica's KV blocks", false, false, 760, 340});
}

}  // namespace

std::string ServeReportHtml(const std::string& label, const std::string& model,
                            const ReplicaModel& replica, const Slo& slo, const ServeStats& stats,
                            const std::vector<IterationRecord>& iterations,
                            const std::string& answer) {
  const ServeShape& shape = replica.shape;
  HtmlPage page("stagecraft serve: " + label, model + ", tp " + std::to_string(shape.tp) + ", pp " +
                                                  std::to_string(shape.pp) + ", " +
                                                  std::to_string(shape.replicas) + " replicas");
  // Green at 90% attainment or more, DistServe's target (its Fig. 1).
  const bool met = stats.slo_attainment >= 0.9;
  std::string summary =
      HtmlVerdict(true, met,
                  FormatFixed(100 * stats.slo_attainment, 2) +
                      "% of requests meet ttft <= " + FormatFixed(slo.ttft_s * 1e3, 1) +
                      " ms and tpot <= " + FormatFixed(slo.tpot_s * 1e3, 1) + " ms (target: 90%)");
  summary += HtmlFacts({
      {"GPUs", std::to_string(shape.gpus())},
      {"requests", std::to_string(stats.requests)},
      {"throughput", FormatFixed(stats.throughput_rps, 3) + " rps, " +
                         FormatFixed(stats.output_tokens_per_s, 1) + " output tokens/s"},
      {"goodput", FormatFixed(stats.goodput_rps, 3) + " rps, " +
                      FormatFixed(stats.goodput_rps_per_gpu, 4) + " rps per GPU"},
      {"TTFT p50 / p90 / p99", FormatFixed(stats.ttft_s.p50 * 1e3, 3) + " / " +
                                   FormatFixed(stats.ttft_s.p90 * 1e3, 3) + " / " +
                                   FormatFixed(stats.ttft_s.p99 * 1e3, 3) + " ms"},
      {"TPOT p50 / p90 / p99", FormatFixed(stats.tpot_s.p50 * 1e3, 3) + " / " +
                                   FormatFixed(stats.tpot_s.p90 * 1e3, 3) + " / " +
                                   FormatFixed(stats.tpot_s.p99 * 1e3, 3) + " ms"},
      {"KV use", "mean " + FormatFixed(100 * stats.kv_utilization_mean, 1) + "%, peak " +
                     FormatFixed(100 * stats.kv_utilization_peak, 1) + "%"},
      {"preemptions", std::to_string(stats.preemptions)},
  });
  page.Add({"summary", "Summary", summary});
  std::string latency =
      "<p class=\"note\">The share of requests served within each latency; the vertical lines "
      "are the SLO's bounds (a request meets the SLO when both its TTFT and its TPOT are within "
      "them).</p>";
  latency += CdfPlot("TTFT", stats.ttft_sorted_s, {Bound("SLO ttft", slo.ttft_s)});
  latency += stats.tpot_sorted_s.empty()
                 ? "<p>No request has more than one output token: no TPOT.</p>"
                 : CdfPlot("TPOT", stats.tpot_sorted_s, {Bound("SLO tpot", slo.tpot_s)});
  latency += CdfPlot("end to end", stats.e2e_sorted_s, {});
  page.Add({"latency", "Latency CDFs", latency});
  page.Add({"kv-cache", "KV cache over time", KvPlot(replica, iterations)});
  page.Add({"assumptions", "What the figures rest on",
            "<p class=\"note\">The answer as `stagecraft serve` prints it: the KV cache per "
            "token, memory per GPU, the decode step's parts.</p>" +
                HtmlPre(answer)});
  return page.Render();
}

}  // namespace stagecraft
