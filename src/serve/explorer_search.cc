#include "serve/explorer_search.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include "core/units.h"
#include "core/work_split.h"
#include "hardware/presets.h"
#include "serve/bisect.h"
#include "serve/serve_plan.h"
#include "serve/step_cost.h"
#include "serve/text_lines.h"

namespace stagecraft {
namespace {

constexpr int64_t kMaxTokens = int64_t{1} << 24;
constexpr int kBracketSteps = 16;  // doublings or halvings from the trace's start rate
constexpr int kBisections = 6;     // the capacity to 1/64 of its bracket (Vidur: 2.5%)

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  for (;;) {
    const size_t comma = line.find(',', start);
    fields.push_back(
        line.substr(start, comma == std::string_view::npos ? line.size() - start : comma - start));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

bool ParseTokens(std::string_view field, int64_t& value) {
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  return error == std::errc() && end == field.data() + field.size() && value >= 1 &&
         value <= kMaxTokens;
}

// One filter clause: a key and the configuration's value for it.
std::string FilterValue(const ExplorerSpace& space, const ExplorerCandidate& candidate,
                        const std::string& key) {
  if (key == "model") return space.models[candidate.model].name;
  if (key == "trace") return space.traces[candidate.trace].name;
  if (key == "cluster") return space.clusters[candidate.cluster].device;
  if (key == "scheduler") return ExplorerSchedulerName(space.schedulers[candidate.scheduler]);
  if (key == "tp") return std::to_string(candidate.tp);
  if (key == "pp") return std::to_string(candidate.pp);
  if (key == "batch") return std::to_string(candidate.batch_cap / candidate.pp);
  return "";
}

Result<std::vector<std::pair<std::string, std::string>>> ParseFilter(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> clauses;
  if (text.empty()) return clauses;
  std::istringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const size_t equals = part.find('=');
    const std::string key = part.substr(0, equals);
    static const std::vector<std::string> kKeys = {"model", "trace", "cluster", "scheduler",
                                                   "tp",    "pp",    "batch"};
    if (equals == std::string::npos || equals + 1 == part.size() ||
        std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      return Error{"--space-filter '" + text +
                   "': expected KEY=VALUE[,KEY=VALUE...] with KEY one " +
                   "of model, trace, cluster, scheduler, tp, pp, batch, e.g. " +
                   "model=llama-2-7b-hf,cluster=a40"};
    }
    clauses.emplace_back(key, part.substr(equals + 1));
  }
  return clauses;
}

struct Probe {
  bool meets = false;
  double delay_p99_s = 0;
  double ttft_p90_s = 0;
  double tpot_p90_s = 0;
};

class CapacitySearch {
 public:
  CapacitySearch(const ExplorerSearchSpec& spec, const ReplicaModel& replica,
                 std::span<const RequestLengths> lengths)
      : spec_(spec), replica_(replica) {
    workload_.length_table = lengths;
    workload_.requests = spec.requests;
    workload_.seed = spec.seed;
    // Only whether the P99 delay meets the bound matters of a probe that misses it.
    workload_.stop_past_delay_s = spec.delay_slo_s;
  }

  // A probe's arrivals span at least kExplorerWindowSlos delay bounds (up to kMostRequests
  // requests): over a shorter window an overloaded replica still meets the P99 bound, since its
  // queue has no time to build (a rate that overloads it by a factor f keeps the last request's
  // delay under the bound while f < 1 / (1 - 1/kExplorerWindowSlos)).
  static constexpr int64_t kMostRequests = 100'000;

  Result<Probe> At(double rate_rps) {
    workload_.rate_rps = rate_rps;
    const double window = std::ceil(rate_rps * kExplorerWindowSlos * spec_.delay_slo_s);
    workload_.requests = std::max(
        spec_.requests, static_cast<int64_t>(std::min(window, static_cast<double>(kMostRequests))));
    auto stats = SimulateServing(replica_, workload_, Routing::kRoundRobin, Slo{});
    if (!stats.ok()) return stats.error();
    ++probes_;
    Probe probe;
    probe.delay_p99_s = stats.value().queue_s.p99;
    probe.ttft_p90_s = stats.value().ttft_s.p90;
    probe.tpot_p90_s = stats.value().tpot_s.p90;
    probe.meets = !stats.value().stopped_late && probe.delay_p99_s <= spec_.delay_slo_s;
    return probe;
  }

  int32_t probes() const { return probes_; }

 private:
  const ExplorerSearchSpec& spec_;
  const ReplicaModel& replica_;
  Workload workload_;
  int32_t probes_ = 0;
};

std::string RejectionOf(const Error& error) {
  if (error.kind == ErrorKind::kInfeasible) return "weights leave no KV block";
  if (error.message.find("does not fit a replica") != std::string::npos) {
    return "a request exceeds the KV cache";
  }
  return "other: " + error.message;
}

Result<ExplorerOutcome> Evaluate(const ExplorerSearchSpec& spec,
                                 const ExplorerCandidate& candidate) {
  const ExplorerSpace& space = spec.space;
  ExplorerOutcome outcome;
  outcome.candidate = candidate;
  const ExplorerSpace::Cluster& gpus = space.clusters[candidate.cluster];
  auto cluster = ClusterFromPreset(gpus.device);
  if (!cluster.ok()) return cluster.error();
  cluster.value().devices_per_node = gpus.gpus_per_node;
  cluster.value().nodes = std::max(1, gpus.gpus / gpus.gpus_per_node);
  const ExplorerSpace::Scheduler& scheduler = space.schedulers[candidate.scheduler];
  const ExplorerSpace::Trace& trace = space.traces[candidate.trace];
  EngineOptions engine;
  engine.max_seqs = candidate.batch_cap;
  engine.max_running = candidate.batch_cap;
  if (scheduler.chunk_size > 0) {
    engine.token_budget = scheduler.chunk_size;
  } else {
    engine.batching = EngineOptions::Batching::kPrefillFirst;
    engine.token_budget = trace.max_tokens;
  }
  auto replica = BuildReplicaModel(space.models[candidate.model].spec, cluster.value(),
                                   {.tp = candidate.tp, .pp = candidate.pp, .replicas = 1}, engine);
  if (!replica.ok()) {
    outcome.rejection = RejectionOf(replica.error());
    return outcome;
  }
  outcome.kv_capacity_tokens = replica.value().kv_capacity_tokens;
  const std::vector<RequestLengths>& lengths = spec.traces.at(trace.name);
  CapacitySearch search(spec, replica.value(), lengths);
  double good = 0;
  double bad = 0;
  Probe good_probe;
  const double start = trace.start_qps / candidate.replicas;
  auto first = search.At(start);
  if (!first.ok()) {
    outcome.rejection = RejectionOf(first.error());
    return outcome;
  }
  if (first.value().meets) {
    good = start;
    good_probe = first.value();
    for (int step = 0; step < kBracketSteps && bad == 0; ++step) {
      auto probe = search.At(good * 2);
      if (!probe.ok()) return probe.error();
      if (probe.value().meets) {
        good *= 2;
        good_probe = probe.value();
      } else {
        bad = good * 2;
      }
    }
  } else {
    bad = start;
    for (int step = 0; step < kBracketSteps && good == 0; ++step) {
      auto probe = search.At(bad / 2);
      if (!probe.ok()) return probe.error();
      if (probe.value().meets) {
        good = bad / 2;
        good_probe = probe.value();
      } else {
        bad /= 2;
      }
    }
  }
  if (good == 0) {
    outcome.rejection = "misses the delay SLO at the lowest rate";
    outcome.probes = search.probes();
    return outcome;
  }
  if (bad > 0) {
    STAGECRAFT_RETURN_IF_ERROR(BisectRate(kBisections, good, bad, [&](double rate) -> Result<bool> {
      auto probe = search.At(rate);
      if (!probe.ok()) return probe.error();
      if (probe.value().meets) good_probe = probe.value();
      return probe.value().meets;
    }));
  }
  outcome.capacity_rps = good * candidate.replicas;
  outcome.rps_per_gpu =
      outcome.capacity_rps / static_cast<double>(candidate.replicas * candidate.tp * candidate.pp);
  outcome.delay_p99_s = good_probe.delay_p99_s;
  outcome.ttft_p90_s = good_probe.ttft_p90_s;
  outcome.tpot_p90_s = good_probe.tpot_p90_s;
  outcome.probes = search.probes();
  return outcome;
}

std::string Encode(const ExplorerOutcome& outcome) {
  ByteWriter writer;
  writer.PutString(outcome.rejection)
      .Put(outcome.capacity_rps)
      .Put(outcome.rps_per_gpu)
      .Put(outcome.delay_p99_s)
      .Put(outcome.ttft_p90_s)
      .Put(outcome.tpot_p90_s)
      .Put(outcome.kv_capacity_tokens)
      .Put(outcome.probes);
  return writer.Take();
}

// Reads back what Encode wrote; false where the bytes do not read back whole.
bool Decode(const std::string& bytes, ExplorerOutcome& outcome) {
  ByteReader reader(bytes);
  outcome.rejection = reader.GetString();
  outcome.capacity_rps = reader.Get<double>();
  outcome.rps_per_gpu = reader.Get<double>();
  outcome.delay_p99_s = reader.Get<double>();
  outcome.ttft_p90_s = reader.Get<double>();
  outcome.tpot_p90_s = reader.Get<double>();
  outcome.kv_capacity_tokens = reader.Get<int64_t>();
  outcome.probes = reader.Get<int32_t>();
  return reader.AtEnd();
}

}  // namespace

std::string ExplorerSchedulerName(const ExplorerSpace::Scheduler& scheduler) {
  return scheduler.chunk_size > 0 ? scheduler.name + "-" + std::to_string(scheduler.chunk_size)
                                  : scheduler.name;
}

Result<std::vector<RequestLengths>> ParseLengthTrace(std::string_view text,
                                                     const std::string& source) {
  std::vector<RequestLengths> rows;
  size_t prompt_column = 0;
  size_t output_column = 1;
  bool header_seen = false;
  STAGECRAFT_RETURN_IF_ERROR(
      ForEachDataLine(text, [&](std::string_view line, int64_t line_number) -> Status {
        const std::vector<std::string_view> fields = SplitFields(line);
        const std::string where = source + ":" + std::to_string(line_number) + ": ";
        if (!header_seen && rows.empty() && !fields[0].empty() &&
            std::isalpha(static_cast<unsigned char>(fields[0][0]))) {
          header_seen = true;
          const auto column = [&](std::string_view name) {
            return static_cast<size_t>(std::find(fields.begin(), fields.end(), name) -
                                       fields.begin());
          };
          prompt_column = column("num_prefill_tokens");
          output_column = column("num_decode_tokens");
          if (prompt_column == fields.size() || output_column == fields.size()) {
            return Error{where + "a header without num_prefill_tokens and num_decode_tokens " +
                         "(expected Vidur's processed-trace columns, e.g. " +
                         "num_prefill_tokens,num_decode_tokens)"};
          }
          return Status::Ok();
        }
        RequestLengths row;
        const bool ok = std::max(prompt_column, output_column) < fields.size() &&
                        ParseTokens(fields[prompt_column], row.prompt) &&
                        ParseTokens(fields[output_column], row.output);
        if (!ok) {
          return Error{where + "expected the prompt and output token counts (1 to " +
                       std::to_string(kMaxTokens) + ") in columns " +
                       std::to_string(prompt_column + 1) + " and " +
                       std::to_string(output_column + 1) + "; got '" + std::string(line) + "'"};
        }
        rows.push_back(row);
        if (rows.size() > 10'000'000) {
          return Error{source + ": more than 10,000,000 rows (expected a length trace)"};
        }
        return Status::Ok();
      }));
  if (rows.empty()) {
    return Error{source + ": no rows (expected lines of num_prefill_tokens,num_decode_tokens)"};
  }
  return rows;
}

std::vector<RequestLengths> CutToMaxTokens(std::vector<RequestLengths> rows, int64_t max_tokens) {
  for (RequestLengths& row : rows) {
    const int64_t total = row.prompt + row.output;
    const int64_t excess = total - max_tokens;
    if (excess <= 0) continue;
    // Vidur subtracts ceil(excess x share) from each, so the pair may end a token or two short.
    const double prompt_share = static_cast<double>(row.prompt) / static_cast<double>(total);
    const double output_share = static_cast<double>(row.output) / static_cast<double>(total);
    row.prompt -= static_cast<int64_t>(std::ceil(static_cast<double>(excess) * prompt_share));
    row.output -= static_cast<int64_t>(std::ceil(static_cast<double>(excess) * output_share));
    row.prompt = std::max<int64_t>(row.prompt, 1);
    row.output = std::max<int64_t>(row.output, 1);
  }
  return rows;
}

Result<ExplorerResult> SearchExplorerSpace(const ExplorerSearchSpec& spec) {
  if (spec.requests < 10 || spec.requests > 1'000'000) {
    return Error{"--requests " + std::to_string(spec.requests) +
                 ": expected 10 to 1000000 requests per probe"};
  }
  if (!(spec.delay_slo_s > 0) || !std::isfinite(spec.delay_slo_s)) {
    return Error{"--delay-slo: expected a positive duration, e.g. 5s (Vidur's default)"};
  }
  if (spec.jobs < 1 || spec.jobs > 1024) {
    return Error{"--jobs " + std::to_string(spec.jobs) + ": expected 1 to 1024 threads"};
  }
  for (const ExplorerSpace::Trace& trace : spec.space.traces) {
    if (spec.traces.count(trace.name) == 0) {
      return Error{"serve-plan --space: no length table for the trace '" + trace.name + "'"};
    }
  }
  auto clauses = ParseFilter(spec.filter);
  if (!clauses.ok()) return clauses.error();
  const std::vector<ExplorerCandidate> all = EnumerateExplorerSpace(spec.space);
  ExplorerResult result;
  result.space_size = static_cast<int64_t>(all.size());
  for (const ExplorerCandidate& candidate : all) {
    bool kept = true;
    for (const auto& [key, value] : clauses.value()) {
      kept = kept && FilterValue(spec.space, candidate, key) == value;
    }
    if (!kept) continue;
    ExplorerOutcome outcome;
    outcome.candidate = candidate;
    result.outcomes.push_back(std::move(outcome));
  }
  if (result.outcomes.empty()) {
    return Error{"--space-filter '" + spec.filter + "': no configuration of the space matches " +
                 "(values as the table prints them, e.g. scheduler=sarathi-512, cluster=a40)"};
  }
  std::vector<std::string> errors(result.outcomes.size());
  const std::unique_ptr<WorkSplit> threads = ThreadSplit(spec.jobs);
  const std::vector<std::string> encoded = threads->Map(
      result.outcomes.size(),
      [&](size_t index) {
        auto outcome = Evaluate(spec, result.outcomes[index].candidate);
        if (!outcome.ok()) {
          errors[index] = outcome.error().message;
          return std::string();
        }
        return Encode(outcome.value());
      },
      [&](size_t done) {
        if (spec.progress) spec.progress(done, result.outcomes.size());
      });
  for (size_t index = 0; index < result.outcomes.size(); ++index) {
    if (!errors[index].empty()) return Error{errors[index]};
    ExplorerOutcome& outcome = result.outcomes[index];
    if (!Decode(encoded[index], outcome)) {
      return Error{"internal: configuration " + std::to_string(index) +
                   "'s outcome did not read back whole"};
    }
    if (!outcome.rejection.empty()) ++result.rejections[outcome.rejection];
  }
  return result;
}

}  // namespace stagecraft
