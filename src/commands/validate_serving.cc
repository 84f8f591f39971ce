// stagecraft validate --serving: the serving model against published measured serving figures
// (bench/validation/serving/*.yaml, bench/validation/SCHEMA.md "Serving rows", doc/serving.md
// "Validation"). Each row's deployment is rerun as `serve` runs it (its config and its `serve`
// flags, through ServeSetupOf and SimulateDeployment) and the row's metric compared with the
// measured value: the signed error per row, the MAPE per kind of metric (throughput, TTFT,
// TPOT/ITL, end-to-end latency), per source and overall, and the median speed bias (how much
// faster than measured the model is, on one scale for latencies and throughputs).
#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "commands/commands.h"
#include "commands/flag_values.h"
#include "commands/serve_command.h"
#include "commands/validated_serving.h"
#include "commands/validation_files.h"
#include "core/units.h"
#include "io/files.h"
#include "io/validation_set.h"
#include "report/json_writer.h"

namespace stagecraft {
namespace {

// The most requests a row may simulate per replica (the suite runs in CI; SCHEMA.md): enough for
// an offline run to reach its steady batch, few enough to keep the suite short.
constexpr int64_t kMaxRowRequests = 2000;
constexpr int64_t kMaxRowReplicas = 64;

// A metric a row can name: its kind, whether lower is faster (a latency) and its value in a
// simulated run, in the metric's unit.
struct Metric {
  std::string name;
  const char* kind;
  bool latency;
  std::function<double(const ServeStats&)> value;
};

const std::vector<Metric>& Metrics() {
  static const std::vector<Metric> metrics = [] {
    std::vector<Metric> table = {
        {"output_tokens_per_s", "throughput", false,
         [](const ServeStats& s) { return s.output_tokens_per_s; }},
        {"total_tokens_per_s", "throughput", false,
         [](const ServeStats& s) { return s.total_tokens_per_s; }},
        {"requests_per_s", "throughput", false,
         [](const ServeStats& s) { return s.throughput_rps; }},
    };
    // The latency percentiles, in ms.
    const std::pair<const char*, Percentiles ServeStats::*> latencies[] = {
        {"ttft", &ServeStats::ttft_s},
        {"tpot", &ServeStats::tpot_s},
        {"itl", &ServeStats::itl_s},
        {"e2e", &ServeStats::e2e_s}};
    const std::pair<const char*, double Percentiles::*> stats[] = {{"mean", &Percentiles::mean},
                                                                   {"p50", &Percentiles::p50},
                                                                   {"p90", &Percentiles::p90},
                                                                   {"p99", &Percentiles::p99}};
    for (const auto& latency : latencies) {
      for (const auto& stat : stats) {
        const std::string name = std::string(latency.first) + "_ms_" + stat.first;
        // ITL and TPOT are one kind: the pace of the tokens after the first.
        const char* kind = std::string(latency.first) == "itl" ? "tpot" : latency.first;
        // Copies, not structured bindings: clang 14 (the fuzz build) cannot capture those.
        const Percentiles ServeStats::*field = latency.second;
        const double Percentiles::*member = stat.second;
        table.push_back({name, kind, true, [field, member](const ServeStats& s) {
                           return (s.*field).*member * 1e3;
                         }});
      }
    }
    return table;
  }();
  return metrics;
}

const Metric* FindMetric(const std::string& name) {
  for (const Metric& metric : Metrics()) {
    if (name == metric.name) return &metric;
  }
  return nullptr;
}

std::string MetricNames() {
  std::string names;
  for (const Metric& metric : Metrics()) names += (names.empty() ? "" : ", ") + metric.name;
  return names;
}

// A switch's value: true or false.
Result<bool> ParseSwitch(const std::string& flag, const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  return Error{flag + ": expected true or false, got '" + text + "'"};
}

// One `serve` flag of a row into the spec, by the flag's name (the names `serve` takes, less
// those a row cannot use: files written or read beside the config, and --json).
using FlagSetter =
    std::function<Status(const std::string& flag, const std::string& value, ServeSpec& spec)>;

Status SetCount(const std::string& flag, const std::string& value, int64_t low, int64_t high,
                const std::string& expected, int64_t& out) {
  auto count = ParseCount(flag, value, low, high, expected,
                          std::to_string(std::max<int64_t>(low, std::min<int64_t>(high, 1000))));
  if (!count.ok()) return count.error();
  out = count.value();
  return Status::Ok();
}

const std::map<std::string, FlagSetter>& FlagSetters() {
  static const std::map<std::string, FlagSetter> setters = [] {
    std::map<std::string, FlagSetter> table;
    auto count32 = [](int64_t low, int64_t high, std::string expected, auto field) -> FlagSetter {
      return [=](const std::string& flag, const std::string& value, ServeSpec& spec) -> Status {
        int64_t count = 0;
        STAGECRAFT_RETURN_IF_ERROR(SetCount(flag, value, low, high, expected, count));
        spec.*field = static_cast<int32_t>(count);
        return Status::Ok();
      };
    };
    auto text = [](std::string ServeSpec::*field) -> FlagSetter {
      return [=](const std::string&, const std::string& value, ServeSpec& spec) -> Status {
        spec.*field = value;
        return Status::Ok();
      };
    };
    auto engine_text = [](std::string EngineFlags::*field) -> FlagSetter {
      return [=](const std::string&, const std::string& value, ServeSpec& spec) -> Status {
        spec.*field = value;
        return Status::Ok();
      };
    };
    auto engine_count = [](std::optional<int64_t> EngineFlags::*field) -> FlagSetter {
      return [=](const std::string& flag, const std::string& value, ServeSpec& spec) -> Status {
        int64_t count = 0;
        STAGECRAFT_RETURN_IF_ERROR(
            SetCount(flag, value, 1, int64_t{1} << 30, "a whole number, 1 to 2^30", count));
        spec.*field = count;
        return Status::Ok();
      };
    };
    auto positive = [](double ServeSpec::*field) -> FlagSetter {
      return [=](const std::string& flag, const std::string& value, ServeSpec& spec) -> Status {
        auto number = ParsePositive(flag, value, "a number above 0");
        if (!number.ok()) return number.error();
        spec.*field = number.value();
        return Status::Ok();
      };
    };
    auto flag = [](bool ServeSpec::*field) -> FlagSetter {
      return [=](const std::string& name, const std::string& value, ServeSpec& spec) -> Status {
        auto on = ParseSwitch(name, value);
        if (!on.ok()) return on.error();
        spec.*field = on.value();
        return Status::Ok();
      };
    };
    table["replicas"] =
        count32(1, 1 << 20, "a whole number of replicas, 1 to 2^20", &ServeSpec::replicas);
    table["prefill-instances"] = count32(0, 1 << 20, "a whole number of instances, 0 to 2^20",
                                         &ServeSpec::prefill_instances);
    table["decode-instances"] =
        count32(0, 1 << 20, "a whole number of instances, 0 to 2^20", &ServeSpec::decode_instances);
    table["rate"] = positive(&ServeSpec::rate_rps);
    table["arrival-cv"] = positive(&ServeSpec::arrival_cv);
    table["concurrency"] = [](const std::string& name, const std::string& value,
                              ServeSpec& spec) -> Status {
      int64_t count = 0;
      STAGECRAFT_RETURN_IF_ERROR(SetCount(name, value, 1, kMaxRowRequests,
                                          "a whole number of requests in flight, 1 to 2000",
                                          count));
      spec.concurrency = count;
      return Status::Ok();
    };
    table["requests"] = [](const std::string& name, const std::string& value,
                           ServeSpec& spec) -> Status {
      return SetCount(name, value, 1, kMaxRowRequests * kMaxRowReplicas,
                      "a whole number of requests, 1 to 2000 per replica (the suite runs in CI)",
                      spec.requests);
    };
    table["seed"] = [](const std::string& name, const std::string& value,
                       ServeSpec& spec) -> Status {
      int64_t seed = 0;
      STAGECRAFT_RETURN_IF_ERROR(
          SetCount(name, value, 0, int64_t{1} << 62, "a whole number, 0 to 2^62", seed));
      spec.seed = static_cast<uint64_t>(seed);
      return Status::Ok();
    };
    table["offline"] = flag(&ServeSpec::offline);
    table["eager"] = flag(&ServeSpec::eager);
    table["prompt-tokens"] = text(&ServeSpec::prompt_tokens);
    table["output-tokens"] = text(&ServeSpec::output_tokens);
    table["routing"] = text(&ServeSpec::routing);
    table["engine"] = engine_text(&EngineFlags::engine);
    table["weight-dtype"] = engine_text(&EngineFlags::weight_dtype);
    table["kv-dtype"] = engine_text(&EngineFlags::kv_dtype);
    table["batching"] = engine_text(&EngineFlags::batching);
    table["max-num-seqs"] = engine_count(&EngineFlags::max_num_seqs);
    table["max-num-batched-tokens"] = engine_count(&EngineFlags::max_num_batched_tokens);
    table["speculative-tokens"] = engine_count(&EngineFlags::speculative_tokens);
    table["acceptance-rate"] = [](const std::string& name, const std::string& value,
                                  ServeSpec& spec) -> Status {
      auto number = ParsePositive(name, value, "a probability above 0, at most 1");
      if (!number.ok()) return number.error();
      spec.acceptance_rate = number.value();
      return Status::Ok();
    };
    table["kv-memory-fraction"] = [](const std::string& name, const std::string& value,
                                     ServeSpec& spec) -> Status {
      auto number = ParsePositive(name, value, "a fraction above 0, at most 1");
      if (!number.ok()) return number.error();
      spec.kv_memory_fraction = number.value();
      return Status::Ok();
    };
    return table;
  }();
  return setters;
}

// The row's `serve` flags into a spec whose config is the row's.
Result<ServeSpec> SpecOf(const std::string& file, const MeasuredServing& row) {
  ServeSpec spec;
  spec.run.config_path = file;
  spec.run.config_text = row.config_text;
  const auto& setters = FlagSetters();
  std::string requests_where;  // where serve.requests stands, for the per-replica check
  for (const MeasuredServing::Flag& flag : row.serve) {
    if (flag.name == "requests") requests_where = flag.where;
    const auto setter = setters.find(flag.name);
    if (setter == setters.end()) {
      std::string names;
      for (const auto& [name, unused] : setters) names += (names.empty() ? "" : ", ") + name;
      return Error{flag.where + "run " + row.id + ": serve." + flag.name +
                   " is not a flag a row can give (expected one of " + names + ")"};
    }
    const Status set = setter->second("serve." + flag.name, flag.value, spec);
    if (!set.ok()) return Error{flag.where + "run " + row.id + ": " + set.error().message};
  }
  const int64_t instances =
      std::max<int64_t>(spec.replicas, int64_t{spec.prefill_instances} + spec.decode_instances);
  if (spec.requests > kMaxRowRequests * instances) {
    return Error{requests_where + "run " + row.id + ": serve.requests " +
                 std::to_string(spec.requests) + " is more than 2000 per replica (" +
                 std::to_string(instances) + "; the suite runs in CI): give at most " +
                 std::to_string(kMaxRowRequests * instances)};
  }
  return spec;
}

struct Row {
  std::string source;
  std::string id;
  const Metric* metric = nullptr;
  double measured = 0;
  double predicted = 0;
  ServedFigure features;  // what a deployment is compared by (validated_serving.h)
  double error() const { return (predicted - measured) / measured; }
  // How much faster than measured the model is: predicted / measured - 1 for a throughput,
  // measured / predicted - 1 for a latency (positive = optimistic on both).
  double speed_bias() const {
    return metric->latency ? measured / predicted - 1 : predicted / measured - 1;
  }
};

// A row the model refuses (the replica does not fit, the layout is refused): listed, never
// dropped from the count.
struct Refused {
  std::string id;
  std::string reason;
};

Result<Row> Predict(const std::string& file, const std::string& source,
                    const MeasuredServing& measured, std::string& refused) {
  const Metric* metric = FindMetric(measured.metric);
  if (metric == nullptr) {
    return Error{measured.metric_where + "run " + measured.id + ": unknown metric '" +
                 measured.metric + "' (expected one of " + MetricNames() + ")"};
  }
  auto spec = SpecOf(file, measured);
  if (!spec.ok()) return spec.error();
  auto run = ResolveRun(spec.value().run);
  if (!run.ok()) return Error{run.error().message + " (run " + measured.id + ")"};
  const Config& config = run.value().config;
  auto setup = ServeSetupOf(spec.value(), run.value());
  const std::string name = std::filesystem::path(file).filename().string();
  if (!setup.ok()) return Error{name + ": run " + measured.id + ": " + setup.error().message};
  auto served = SimulateDeployment(config.model, config.cluster, setup.value());
  Row row{source, measured.id,
          metric, measured.measured,
          0,      ServedFeaturesOf(config.model, config.cluster, setup.value())};
  if (!served.ok()) {
    if (served.error().kind == ErrorKind::kBadInput) {
      return Error{name + ": run " + measured.id + ": " + served.error().message};
    }
    refused = served.error().message;
    return row;
  }
  row.predicted = metric->value(served.value().stats);
  if (!(row.predicted > 0)) refused = "the run gave no " + measured.metric;
  return row;
}

struct Tally : ErrorTally {
  std::vector<double> speed;  // each row's speed bias
  void Add(const Row& row) {
    ErrorTally::Add(row.error());
    speed.push_back(row.speed_bias());
  }
  double median_speed() const {
    if (speed.empty()) return 0;
    std::vector<double> sorted = speed;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }
  std::string Line(const std::string& name) const {
    return "  " + PadRight(name, 40) + PadLeft(std::to_string(runs), 6) +
           PadLeft(FormatFixed(100 * mape(), 1) + "%", 9) +
           PadLeft(FormatFixed(100 * share_15(), 1) + "%", 11) +
           PadLeft(FormatSignedPercent(median_speed()), 14) + "\n";
  }
};

struct Tallies {
  Tally all;
  std::map<std::string, Tally> by_kind;
  std::map<std::string, Tally> by_source;
  explicit Tallies(const std::vector<Row>& rows) {
    for (const Row& row : rows) {
      all.Add(row);
      by_kind[row.metric->kind].Add(row);
      by_source[row.source].Add(row);
    }
  }
};

void TableText(const std::vector<Row>& rows, const std::vector<Refused>& refused,
               const Tallies& tallies, std::ostream& out) {
  out << "stagecraft validate --serving: " << rows.size() + refused.size()
      << " measured figures from " << tallies.by_source.size()
      << " sources; predicted = `serve` rerunning each deployment with its flags "
         "(doc/serving.md, \"Validation\")\n\n";
  out << "  " << PadRight("run", 56) << PadRight("metric", 20) << PadLeft("measured", 12)
      << PadLeft("predicted", 12) << PadLeft("error", 9) << "\n";
  for (const Row& row : rows) {
    out << "  " << PadRight(row.id, 56) << PadRight(row.metric->name, 20)
        << PadLeft(FormatFixed(row.measured, 2), 12) << PadLeft(FormatFixed(row.predicted, 2), 12)
        << PadLeft(FormatSignedPercent(row.error()), 9) << "\n";
  }
  if (!refused.empty()) {
    out << "\n  not simulated (" << refused.size() << "): the model refused the deployment\n";
    for (const Refused& row : refused) out << "  " << row.id << ": " << row.reason << "\n";
  }
  const std::string head = "  " + PadRight("", 40) + PadLeft("rows", 6) + PadLeft("mape", 9) +
                           PadLeft("within_15", 11) + PadLeft("speed_bias", 14) + "\n";
  out << "\n  by kind of metric (speed_bias: the median of how much faster than measured)\n"
      << head;
  for (const auto& [kind, tally] : tallies.by_kind) out << tally.Line(kind);
  out << "\n  by source\n" << head;
  for (const auto& [source, tally] : tallies.by_source) out << tally.Line(source);
  out << "\n" << tallies.all.Line("all");
}

void TallyJson(JsonWriter& json, const Tally& tally) {
  json.Key("rows").Int(static_cast<int64_t>(tally.runs));
  json.Key("mape").Fixed(tally.mape(), 4);
  json.Key("within_15").Int(static_cast<int64_t>(tally.within_15));
  json.Key("median_speed_bias").Fixed(tally.median_speed(), 4);
}

std::string ServingJson(const std::vector<Refused>& refused, const Tallies& tallies) {
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  TallyJson(json, tallies.all);
  json.Key("not_simulated").Int(static_cast<int64_t>(refused.size()));
  for (const auto& [key, group] :
       {std::pair{"kinds", &tallies.by_kind}, std::pair{"sources", &tallies.by_source}}) {
    json.Key(key).BeginObject();
    for (const auto& [name, tally] : *group) {
      json.Key(name).BeginObject();
      TallyJson(json, tally);
      json.EndObject();
    }
    json.EndObject();
  }
  json.EndObject();
  return json.text();
}

}  // namespace

Status RunValidateServing(const ValidateSpec& flags, Transcript& transcript) {
  if (flags.leave_one_out) {
    return Error{
        "validate --serving --leave-one-out: the serving model chooses no constant from its "
        "suite, so every source is already out of sample (drop --leave-one-out)"};
  }
  auto files = SuiteFiles(
      flags.paths.empty() ? std::vector<std::string>{"bench/validation/serving"} : flags.paths,
      ".yaml", "validate --serving", "bench/validation/serving");
  if (!files.ok()) return files.error();
  std::vector<Row> rows;
  std::vector<Refused> refused;
  std::set<std::string> ids;
  for (const std::string& file : files.value()) {
    auto text = ReadTextFile(file);
    if (!text.ok()) return text.error();
    const std::string name = std::filesystem::path(file).filename().string();
    auto source = ParseServingSource(text.value(), name);
    if (!source.ok()) return source.error();
    for (const MeasuredServing& measured : source.value().runs) {
      if (!ids.insert(measured.id).second) {
        return Error{name + ": run '" + measured.id +
                     "' appears twice in the suite (expected unique run ids; rename one)"};
      }
      std::string reason;
      auto row = Predict(file, source.value().id, measured, reason);
      if (!row.ok()) return row.error();
      if (!reason.empty()) {
        refused.push_back({measured.id, reason});
      } else {
        rows.push_back(std::move(row).value());
      }
    }
  }
  const Tallies tallies(rows);
  std::ostream& out = transcript.out();
  if (flags.json) {
    out << ServingJson(refused, tallies) << "\n";
  } else {
    TableText(rows, refused, tallies, out);
  }
  if (!flags.csv_path.empty()) {
    std::string csv = std::string("source,run,metric,kind,measured,predicted,error,speed_bias,") +
                      kServedFigureColumns + "\n";
    for (const Row& row : rows) {
      csv += row.source + "," + row.id + "," + row.metric->name + "," + row.metric->kind + "," +
             FormatFixed(row.measured, 4) + "," + FormatFixed(row.predicted, 4) + "," +
             FormatFixed(row.error(), 4) + "," + FormatFixed(row.speed_bias(), 4) + "," +
             ServedFigureFields(row.features) + "\n";
    }
    const Status written = WriteTextFile(flags.csv_path, csv);
    if (!written.ok()) return Error{"--csv: " + written.error().message};
  }
  if (flags.max_mape && (100 * tallies.all.mape() > *flags.max_mape || !refused.empty())) {
    transcript.err() << "stagecraft: error: "
                     << (refused.empty()
                             ? "MAPE " + FormatFixed(100 * tallies.all.mape(), 1) +
                                   "% is above --max-mape " + FormatFixed(*flags.max_mape, 1) + "%"
                             : std::to_string(refused.size()) + " rows were not simulated")
                     << "\n";
    return MakeError(ErrorKind::kViolation, "");
  }
  return Status::Ok();
}

}  // namespace stagecraft
