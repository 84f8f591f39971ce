// `serve-plan --space vidur` as text: the explorer search's best configuration per model, trace
// and cluster (serve/explorer_search.h's values), then the rejections.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <sstream>

#include "commands/serve_command.h"
#include "commands/transcript.h"
#include "core/progress.h"
#include "core/units.h"
#include "core/work_split.h"
#include "hardware/presets.h"
#include "report/json_writer.h"
#include "serve/bisect.h"
#include "serve/explorer_search.h"
#include "serve/serve_plan.h"
#include "serve/step_cost.h"
#include "serve/text_lines.h"

namespace stagecraft {
namespace {

struct Best {
  int32_t model = 0;
  int32_t trace = 0;
  int32_t cluster = 0;
  const ExplorerOutcome* outcome = nullptr;  // the most requests per GPU; nullptr: none fits
};

// The best configuration of every model x trace x cluster, in the space's order (the first of
// equals wins).
std::vector<Best> BestPerCell(const ExplorerResult& result) {
  std::vector<Best> cells;
  for (const ExplorerOutcome& outcome : result.outcomes) {
    const ExplorerCandidate& c = outcome.candidate;
    auto cell = std::find_if(cells.begin(), cells.end(), [&](const Best& best) {
      return best.model == c.model && best.trace == c.trace && best.cluster == c.cluster;
    });
    if (cell == cells.end()) {
      cells.push_back({.model = c.model, .trace = c.trace, .cluster = c.cluster});
      cell = cells.end() - 1;
    }
    if (!outcome.rejection.empty()) continue;
    if (cell->outcome == nullptr || outcome.rps_per_gpu > cell->outcome->rps_per_gpu) {
      cell->outcome = &outcome;
    }
  }
  return cells;
}

void OutcomeJson(JsonWriter& json, const ExplorerSpace& space, const ExplorerOutcome& outcome) {
  const ExplorerCandidate& c = outcome.candidate;
  json.BeginObject();
  json.Key("model").String(space.models[c.model].name);
  json.Key("trace").String(space.traces[c.trace].name);
  json.Key("cluster").String(space.clusters[c.cluster].device);
  json.Key("scheduler").String(ExplorerSchedulerName(space.schedulers[c.scheduler]));
  json.Key("tp").Int(c.tp);
  json.Key("pp").Int(c.pp);
  json.Key("batch_size_cap").Int(c.batch_cap);
  json.Key("replicas").Int(c.replicas);
  if (outcome.rejection.empty()) {
    json.Key("capacity_rps").Fixed(outcome.capacity_rps, 3);
    json.Key("rps_per_gpu").Fixed(outcome.rps_per_gpu, 4);
    json.Key("delay_p99_s").Fixed(outcome.delay_p99_s, 3);
    json.Key("ttft_p90_ms").Fixed(outcome.ttft_p90_s * 1e3, 3);
    json.Key("tpot_p90_ms").Fixed(outcome.tpot_p90_s * 1e3, 3);
    json.Key("kv_capacity_tokens").Int(outcome.kv_capacity_tokens);
  } else {
    json.Key("rejected").String(outcome.rejection);
  }
  json.EndObject();
}

std::string FormatJson(const ExplorerSearchSpec& spec, const ExplorerResult& result) {
  const ExplorerSpace& space = spec.space;
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("space").String("vidur");
  json.Key("configurations").Int(result.space_size);
  json.Key("evaluated").Int(static_cast<int64_t>(result.outcomes.size()));
  json.Key("requests_per_probe").Int(spec.requests);
  json.Key("delay_slo_p99_s").Fixed(spec.delay_slo_s, 3);
  json.Key("best").BeginArray();
  for (const Best& best : BestPerCell(result)) {
    if (best.outcome != nullptr) OutcomeJson(json, space, *best.outcome);
  }
  json.EndArray();
  json.Key("all").BeginArray();
  for (const ExplorerOutcome& outcome : result.outcomes) OutcomeJson(json, space, outcome);
  json.EndArray();
  json.Key("rejections").BeginObject();
  for (const auto& [reason, count] : result.rejections) json.Key(reason).Int(count);
  json.EndObject();
  json.EndObject();
  return json.text() + "\n";
}

std::string FormatText(const ExplorerSearchSpec& spec, const ExplorerResult& result, int32_t top) {
  const ExplorerSpace& space = spec.space;
  std::ostringstream out;
  int64_t feasible = 0;
  for (const ExplorerOutcome& outcome : result.outcomes) feasible += outcome.rejection.empty();
  out << "stagecraft serve-plan --space vidur: Vidur's config explorer space (config.yml @ "
         "e2d00e9a)\n";
  out << "  configurations " << result.space_size << ", searched " << result.outcomes.size()
      << (spec.filter.empty() ? "" : " (--space-filter " + spec.filter + ")")
      << ", with a capacity " << feasible << "\n";
  out << "  capacity: the highest rate with P99 scheduling delay <= "
      << FormatFixed(spec.delay_slo_s, 3) << " s (arrival to first scheduled); each probe one "
      << "replica, at least " << spec.requests << " requests and "
      << FormatFixed(kExplorerWindowSlos * spec.delay_slo_s, 0) << " s of arrivals, seed "
      << spec.seed << "\n";
  out << "  traces (requests cut to " << (space.traces.empty() ? 0 : space.traces[0].max_tokens)
      << " tokens as Vidur cuts them):\n";
  for (const ExplorerSpace::Trace& trace : space.traces) {
    const auto source = spec.trace_sources.find(trace.name);
    out << "    " << PadRight(trace.name, 7)
        << (source == spec.trace_sources.end() ? std::string("?") : source->second) << "\n";
  }
  const auto row = [&](const ExplorerOutcome& o) {
    const ExplorerCandidate& c = o.candidate;
    out << PadRight(ExplorerSchedulerName(space.schedulers[c.scheduler]), 12)
        << PadLeft(std::to_string(c.tp) + " x " + std::to_string(c.pp), 9)
        << PadLeft(std::to_string(c.batch_cap), 7) << PadLeft(std::to_string(c.replicas), 10)
        << PadLeft(FormatFixed(o.capacity_rps, 3), 14) << PadLeft(FormatFixed(o.rps_per_gpu, 4), 9)
        << PadLeft(FormatFixed(o.delay_p99_s, 3), 13);
  };
  const char* kHeading =
      "model                      trace  cluster  scheduler     tp x pp  batch  replicas  "
      "capacity_rps  rps/gpu  delay_p99_s";
  out << "\n  best per model, trace and cluster (most requests per GPU):\n";
  out << "  " << kHeading << "\n";
  for (const Best& best : BestPerCell(result)) {
    out << "  " << PadRight(space.models[best.model].name, 27)
        << PadRight(space.traces[best.trace].name, 7)
        << PadRight(space.clusters[best.cluster].device, 9);
    if (best.outcome == nullptr) {
      out << "(no configuration has a capacity)\n";
      continue;
    }
    row(*best.outcome);
    out << "\n";
  }
  std::vector<const ExplorerOutcome*> ranked;
  for (const ExplorerOutcome& outcome : result.outcomes) {
    if (outcome.rejection.empty()) ranked.push_back(&outcome);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto* a, const auto* b) { return a->rps_per_gpu > b->rps_per_gpu; });
  ranked.resize(std::min<size_t>(ranked.size(), static_cast<size_t>(std::max(top, 0))));
  out << "\n  top " << ranked.size() << " configurations (most requests per GPU; P90 TTFT and "
      << "TPOT at the capacity):\n";
  out << "  rank  " << kHeading << "  ttft_p90_ms  tpot_p90_ms\n";
  for (size_t rank = 0; rank < ranked.size(); ++rank) {
    const ExplorerOutcome& o = *ranked[rank];
    const ExplorerCandidate& c = o.candidate;
    out << PadLeft(std::to_string(rank + 1), 6) << "  " << PadRight(space.models[c.model].name, 27)
        << PadRight(space.traces[c.trace].name, 7) << PadRight(space.clusters[c.cluster].device, 9);
    row(o);
    out << PadLeft(FormatFixed(o.ttft_p90_s * 1e3, 3), 13)
        << PadLeft(FormatFixed(o.tpot_p90_s * 1e3, 3), 13) << "\n";
  }
  out << "\n  rejected (configurations by reason):\n";
  if (result.rejections.empty()) out << "  (none)\n";
  for (const auto& [reason, count] : result.rejections) {
    out << PadLeft(std::to_string(count), 9) << "  " << reason << "\n";
  }
  return out.str();
}

}  // namespace

Status RunExplorerSearch(const ServePlanSpec& plan, Transcript& transcript) {
  if (plan.space != "vidur") {
    return Error{"--space '" + plan.space + "': the one space known is 'vidur' (Vidur's shipped " +
                 "config explorer space, 4,374 configurations)"};
  }
  if (plan.gpus != 0 || !plan.slo.empty() || !plan.run.config_path.empty() || plan.run.hf_config ||
      plan.run.cluster || !plan.svg_path.empty()) {
    return Error{
        "serve-plan --space vidur: the space brings its own models, clusters and SLO "
        "(P99 scheduling delay, --delay-slo); drop CONFIG, --hf-config, --cluster, "
        "--gpus, --slo and --svg"};
  }
  if (plan.speculative_tokens.has_value() || plan.acceptance_rate.has_value()) {
    return Error{
        "serve-plan --space vidur: Vidur's space has no speculative decoding; drop "
        "--speculative-tokens and --acceptance-rate"};
  }
  ExplorerSearchSpec spec;
  spec.requests = plan.requests;
  spec.seed = plan.seed;
  spec.jobs = plan.jobs;
  spec.filter = plan.space_filter;
  auto delay = ParseDuration(plan.delay_slo);
  if (!delay.ok() || delay.value().ns() <= 0) {
    return Error{"--delay-slo '" + plan.delay_slo +
                 "': expected a positive duration, e.g. 5s (Vidur's default P99 scheduling delay)"};
  }
  spec.delay_slo_s = static_cast<double>(delay.value().ns()) * 1e-9;
  for (const ExplorerSpace::Trace& trace : spec.space.traces) {
    const std::string path = plan.space_traces + "/" + trace.name + ".csv";
    auto text = plan.run.files.read(path);
    if (!text.ok()) {
      return Error{"--space-traces " + plan.space_traces + ": " + text.error().message +
                   "; expected a directory with chat.csv, arxiv.csv and bwb.csv (the " +
                   "repository's examples/vidur)"};
    }
    auto rows = ParseLengthTrace(text.value(), path);
    if (!rows.ok()) return rows.error();
    // The first comment line names the trace's origin.
    std::string source = trace.name + ".csv";
    const std::string& body = text.value();
    if (body.rfind("# ", 0) == 0) source = body.substr(2, body.find('\n') - 2);
    spec.trace_sources[trace.name] = source;
    spec.traces[trace.name] = CutToMaxTokens(std::move(rows.value()), trace.max_tokens);
  }
  std::optional<Progress> progress;  // sized when the search tells its total
  if (plan.progress) {
    spec.progress = [&](size_t done, size_t total) {
      if (!progress) progress.emplace(plan.progress, "serve-plan: configurations", total);
      progress->Update(static_cast<int64_t>(done));
    };
  }
  auto result = SearchExplorerSpace(spec);
  progress.reset();
  if (!result.ok()) return result.error();
  transcript.out() << (plan.json ? FormatJson(spec, result.value())
                                 : FormatText(spec, result.value(), plan.top));
  return Status::Ok();
}

}  // namespace stagecraft
