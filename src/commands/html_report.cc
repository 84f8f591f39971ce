#include "commands/html_report.h"

#include <algorithm>

#include "analysis/memory.h"
#include "commands/transcript.h"
#include "core/units.h"
#include "report/html.h"
#include "report/html_run.h"
#include "report/summary.h"
#include "report/svg_plot.h"
#include "run/memory_verdict.h"

namespace stagecraft {
namespace {

std::string SummaryBody(const RunOutcome& simulated) {
  const RunInfo& info = simulated.info;
  const Throughput rate = ThroughputOf(info, simulated.metrics);
  std::vector<std::pair<std::string, std::string>> facts = {
      {"model", info.model},
      {"schedule", info.schedule + ", pp " + std::to_string(info.pp) + ", vpp " +
                       std::to_string(info.vpp) + ", microbatches " +
                       std::to_string(info.microbatches)},
      {"step (makespan)", FormatMs(simulated.metrics.makespan) + " ms"},
      {"idle share (bubble_fraction)", FormatFixed(simulated.metrics.bubble_fraction, 4)},
  };
  if (info.world_size > 0) {
    facts.push_back({"GPUs", std::to_string(info.world_size) + " (tp " + std::to_string(info.tp) +
                                 ", cp " + std::to_string(info.cp) + ", dp " +
                                 std::to_string(info.dp) + ")"});
    facts.push_back({"throughput", FormatFixed(rate.tokens_per_s, 0) + " tokens/s, " +
                                       FormatFixed(rate.tflops_per_gpu, 1) +
                                       " TFLOP/s per GPU, MFU " + FormatFixed(100 * rate.mfu, 1) +
                                       "%"});
  }
  const MemoryInfo& memory = info.memory;
  std::string html =
      HtmlVerdict(memory.capacity_known, memory.fits, "memory " + FormatMemoryVerdict(memory));
  html += HtmlFacts(facts);
  html += "<details><summary>the summary as `stagecraft simulate` prints it</summary>" +
          HtmlPre(FormatSummary(info, simulated.metrics)) + "</details>";
  return html;
}

std::string MemoryBody(const PreparedRun& run, const RunOutcome& simulated) {
  const MemoryReport report = ComputeMemory(run, simulated);
  const MemoryTimeline timeline =
      ComputeMemoryTimeline(run.schedule, run.stage_costs, simulated.graph, simulated.trace);
  std::vector<double> fixed(timeline.ranks.size(), 0);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> classes;
  for (const RankMemory& rank : report.ranks) {
    if (rank.rank >= 0 && static_cast<size_t>(rank.rank) < fixed.size()) {
      fixed[static_cast<size_t>(rank.rank)] =
          rank.states.total() + static_cast<double>(report.verdict.reserve_bytes);
    }
    rows.push_back({std::to_string(rank.rank), FormatGib(rank.states.parameters),
                    FormatGib(rank.states.gradients), FormatGib(rank.states.optimizer),
                    FormatGib(static_cast<double>(rank.activations)),
                    FormatGib(static_cast<double>(rank.state)),
                    FormatGib(static_cast<double>(report.verdict.reserve_bytes)),
                    FormatGib(rank.total), rank.over ? "OVER" : "fits"});
    classes.push_back(rank.over ? "over" : "");
  }
  const MemoryInfo& verdict = simulated.info.memory;
  std::string html =
      HtmlVerdict(verdict.capacity_known, verdict.fits, FormatMemoryVerdict(verdict));
  html +=
      "<p class=\"note\">Each line is one rank: its model states and the framework reserve, "
      "plus the activations and resident shared state the schedule holds at each moment "
      "(the peak of each time bin). The dashed line is the device's memory.</p>";
  html += HtmlMemoryChart(timeline, fixed, verdict.capacity_known ? verdict.capacity_bytes : 0,
                          simulated.metrics.makespan);
  html += HtmlTable({"rank", "parameters (GiB)", "gradients", "optimizer", "activations",
                     "shared state", "reserve", "total", "verdict"},
                    rows, classes);
  return html;
}

std::string DerivationBody(const RunSpec& spec) {
  Transcript transcript;
  const Status derived = RunDerive(spec, /*json=*/false, transcript);
  std::string text = transcript.Text(Transcript::Channel::kAnswer);
  if (!derived.ok() && !derived.error().message.empty()) {
    text += "\nderive: " + derived.error().message + "\n";
  }
  return "<p class=\"note\">`stagecraft derive` on the same run: the closed forms with this "
         "run's numbers plugged in.</p>" +
         HtmlPre(text);
}

}  // namespace

std::string HtmlRunAssumptions(const RunOutcome& simulated) {
  const RunInfo& info = simulated.info;
  std::string html;
  if (info.assumptions.empty()) {
    html +=
        "<p class=\"note\">The per-microbatch costs are given in the config, not derived: no "
        "cost-model assumptions apply.</p>";
  } else {
    html += HtmlFacts(info.assumptions);
  }
  html += HtmlFacts({{"memory", FormatMemoryVerdict(info.memory)},
                     {"point-to-point", std::string(P2pModeName(info.p2p)) + ", cost_p2p " +
                                            FormatMs(info.cost_p2p) + " ms"}});
  if (!simulated.notes.empty() || !simulated.warnings.empty()) {
    html += "<ul>";
    for (const std::string& note : simulated.notes)
      html += "<li>note: " + XmlEscape(note) + "</li>";
    for (const std::string& warning : simulated.warnings) {
      html += "<li>warning: " + XmlEscape(warning) + "</li>";
    }
    html += "</ul>";
  }
  return html;
}

std::string SimulateReportHtml(const RunSpec& spec, const PreparedRun& run,
                               const RunOutcome& simulated) {
  HtmlPage page("stagecraft simulate: " + simulated.info.config,
                simulated.info.model + ", " + simulated.info.schedule + ", " +
                    std::to_string(simulated.graph.num_ranks) + " ranks");
  page.Add({"summary", "Summary", SummaryBody(simulated)});
  page.Add({"timeline", "Timeline per rank and stream",
            HtmlTimeline(simulated.graph, simulated.trace, simulated.metrics.makespan)});
  page.Add({"memory", "Memory over time per rank", MemoryBody(run, simulated)});
  page.Add({"bubble", "Idle time by cause", HtmlBubbleSplit(simulated.metrics)});
  page.Add(
      {"shared-state", "Shared state per cut", HtmlSharedState(simulated.info, simulated.metrics)});
  page.Add({"derivation", "Derivation", DerivationBody(spec)});
  page.Add({"assumptions", "What the figures rest on", HtmlRunAssumptions(simulated)});
  return page.Render();
}

}  // namespace stagecraft
