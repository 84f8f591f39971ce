// stagecraft validate: the cost model against published measured training runs
// (bench/validation/runs, doc/fidelity.md). Each run's config is simulated with the defaults
// and its iteration time compared with the measured one: signed error per run, and the mean
// absolute percentage error (MAPE) with the shares within ±10% and ±15%, per source and overall.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "core/units.h"
#include "io/validation_set.h"
#include "report/json_writer.h"
#include "run/commands.h"
#include "run/memory_verdict.h"
#include "run/validated_runs.h"

namespace stagecraft {
namespace {

constexpr double kBytesPerGib = 1073741824.0;

struct Row {
  std::string source;
  std::string id;
  int32_t gpus = 0;
  double measured_s = 0;
  double predicted_s = 0;
  double measured_gib = 0;   // the source's peak memory per GPU; 0 = none given
  double predicted_gib = 0;  // the memory verdict's fullest device (states, peak, reserve)
  ValidatedRun features;     // what a run is compared by (validated_runs.h)
  double error() const { return (predicted_s - measured_s) / measured_s; }
  double memory_error() const { return (predicted_gib - measured_gib) / measured_gib; }
};

struct Summary {
  size_t runs = 0;
  double absolute_error = 0;  // summed |error|
  size_t within_10 = 0;
  size_t within_15 = 0;
  void Add(double error) {
    ++runs;
    absolute_error += std::abs(error);
    within_10 += std::abs(error) <= 0.10 ? 1 : 0;
    within_15 += std::abs(error) <= 0.15 ? 1 : 0;
  }
  double mape() const { return runs == 0 ? 0.0 : absolute_error / static_cast<double>(runs); }
  std::string Line(const std::string& name) const {
    const double n = static_cast<double>(std::max<size_t>(runs, 1));
    return "  " + PadRight(name, 48) + PadLeft(std::to_string(runs), 5) +
           PadLeft(FormatFixed(100 * mape(), 1) + "%", 9) +
           PadLeft(FormatFixed(100 * static_cast<double>(within_10) / n, 1) + "%", 11) +
           PadLeft(FormatFixed(100 * static_cast<double>(within_15) / n, 1) + "%", 11) + "\n";
  }
};

// The files under each path (a file, or a folder's *.yaml), sorted.
Result<std::vector<std::string>> SuiteFiles(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
        if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
      }
    } else if (std::filesystem::is_regular_file(path, error)) {
      files.push_back(path);
    } else {
      return Error{"validate: cannot read '" + path +
                   "': no such file or folder (expected bench/validation/runs or a .yaml of it)"};
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) return Error{"validate: no .yaml files under the given paths"};
  return files;
}

// Simulates one measured run as `simulate` would (defaults, no overrides).
Result<Row> Predict(const std::string& file, const MeasurementSource& source,
                    const MeasuredRun& measured) {
  RunSpec flags;
  flags.config_path = file;
  flags.config_text = measured.config_text;
  auto run = PrepareRun(flags);
  if (!run.ok()) return Error{run.error().message + " (run " + measured.id + ")"};
  RunOutcome simulated;
  std::ostringstream diagnosis;
  if (!SimulateRun(run.value(), simulated, diagnosis).ok()) {
    return Error{"run " + measured.id + " did not simulate: " + diagnosis.str()};
  }
  Row row;
  row.source = source.id;
  row.id = measured.id;
  row.gpus = run.value().parallel_plan.world_size;
  row.measured_s = measured.step_s;
  row.predicted_s = static_cast<double>(simulated.metrics.makespan.ns()) * 1e-9;
  row.features = FeaturesOf(run.value());
  row.features.error = row.error();
  if (measured.memory_gib > 0) {
    row.measured_gib = measured.memory_gib;
    row.predicted_gib = ComputeMemory(run.value(), simulated).verdict.peak_bytes / kBytesPerGib;
  }
  return row;
}

std::string Signed(double fraction) {
  return (fraction >= 0 ? "+" : "") + FormatFixed(100 * fraction, 1) + "%";
}

// The step and memory summaries, overall and per source.
struct Summaries {
  Summary all;
  Summary memory;
  std::map<std::string, Summary> by_source;
  std::map<std::string, Summary> memory_by_source;
  explicit Summaries(const std::vector<Row>& rows) {
    for (const Row& row : rows) {
      all.Add(row.error());
      by_source[row.source].Add(row.error());
      if (row.measured_gib <= 0) continue;
      memory.Add(row.memory_error());
      memory_by_source[row.source].Add(row.memory_error());
    }
  }
};

void SummaryJson(JsonWriter& writer, const Summary& summary) {
  writer.Key("runs").Int(static_cast<int64_t>(summary.runs));
  writer.Key("mape").Fixed(summary.mape(), 4);
  writer.Key("within_10").Int(static_cast<int64_t>(summary.within_10));
  writer.Key("within_15").Int(static_cast<int64_t>(summary.within_15));
}

// `all`'s figures, then "sources": the same for each source.
void SummaryJson(JsonWriter& writer, const Summary& all,
                 const std::map<std::string, Summary>& by_source) {
  SummaryJson(writer, all);
  writer.Key("sources").BeginObject();
  for (const auto& [name, summary] : by_source) {
    writer.Key(name).BeginObject();
    SummaryJson(writer, summary);
    writer.EndObject();
  }
  writer.EndObject();
}

// One object: the step figures (runs, mape, within_10, within_15, sources), memory (the same
// over the runs that give a measured peak), decisions (the decision suite: none yet) and each
// run's figures.
std::string ValidateJson(const std::vector<Row>& rows, const Summaries& summaries) {
  JsonWriter writer(true);
  writer.BeginObject();
  SummaryJson(writer, summaries.all, summaries.by_source);
  writer.Key("memory").BeginObject();
  SummaryJson(writer, summaries.memory, summaries.memory_by_source);
  writer.EndObject();
  writer.Key("decisions").BeginObject();
  writer.Key("total").Int(0).Key("ranked_as_measured").Int(0);
  writer.EndObject();
  writer.Key("results").BeginArray();
  for (const Row& row : rows) {
    writer.BeginObject();
    writer.Key("source").String(row.source).Key("run").String(row.id);
    writer.Key("gpus").Int(row.gpus);
    writer.Key("measured_s").Fixed(row.measured_s, 4).Key("predicted_s").Fixed(row.predicted_s, 4);
    writer.Key("error").Fixed(row.error(), 4);
    if (row.measured_gib > 0) {
      writer.Key("measured_gib").Fixed(row.measured_gib, 2);
      writer.Key("predicted_gib").Fixed(row.predicted_gib, 2);
      writer.Key("memory_error").Fixed(row.memory_error(), 4);
    }
    writer.EndObject();
  }
  writer.EndArray().EndObject();
  return writer.text();
}

// The step table: each run, then per source and overall.
void StepText(const std::vector<Row>& rows, const Summaries& summaries, std::ostream& out) {
  out << "stagecraft validate: " << rows.size()
      << (rows.size() == 1 ? " measured run" : " measured runs") << " from "
      << summaries.by_source.size() << (summaries.by_source.size() == 1 ? " source" : " sources")
      << "; predicted = the simulated iteration with the defaults (doc/fidelity.md)\n\n";
  out << "  " << PadRight("run", 48) << PadLeft("gpus", 6) << PadLeft("measured_s", 12)
      << PadLeft("predicted_s", 13) << PadLeft("error", 9) << "\n";
  for (const Row& row : rows) {
    out << "  " << PadRight(row.id, 48) << PadLeft(std::to_string(row.gpus), 6)
        << PadLeft(FormatFixed(row.measured_s, 3), 12)
        << PadLeft(FormatFixed(row.predicted_s, 3), 13) << PadLeft(Signed(row.error()), 9) << "\n";
  }
  out << "\n  " << PadRight("source", 48) << PadLeft("runs", 5) << PadLeft("mape", 9)
      << PadLeft("within_10", 11) << PadLeft("within_15", 11) << "\n";
  for (const auto& [name, summary] : summaries.by_source) out << summary.Line(name);
  out << summaries.all.Line("all");
}

// The memory table: each run with a measured peak, then per source and overall.
void MemoryText(const std::vector<Row>& rows, const Summaries& summaries, std::ostream& out) {
  out << "\n  memory: the verdict's fullest device (model states, the schedule's peak, the "
         "reserve) against the source's measured peak per GPU (doc/fidelity.md, \"Memory\")\n";
  out << "  " << PadRight("run", 48) << PadLeft("gpus", 6) << PadLeft("measured_gib", 14)
      << PadLeft("predicted_gib", 15) << PadLeft("error", 9) << "\n";
  for (const Row& row : rows) {
    if (row.measured_gib <= 0) continue;
    out << "  " << PadRight(row.id, 48) << PadLeft(std::to_string(row.gpus), 6)
        << PadLeft(FormatFixed(row.measured_gib, 2), 14)
        << PadLeft(FormatFixed(row.predicted_gib, 2), 15) << PadLeft(Signed(row.memory_error()), 9)
        << "\n";
  }
  out << "\n  " << PadRight("source", 48) << PadLeft("runs", 5) << PadLeft("mape", 9)
      << PadLeft("within_10", 11) << PadLeft("within_15", 11) << "\n";
  for (const auto& [name, summary] : summaries.memory_by_source) out << summary.Line(name);
  out << summaries.memory.Line("all");
}

}  // namespace

Status RunValidate(const ValidateSpec& flags, Transcript& transcript) {
  if (flags.kernels) return RunValidateKernels(flags, transcript);
  std::ostream& out = transcript.out();
  std::ostream& err = transcript.err();
  auto files = SuiteFiles(flags.paths.empty() ? std::vector<std::string>{"bench/validation/runs"}
                                              : flags.paths);
  if (!files.ok()) return files.error();
  std::vector<Row> rows;
  std::vector<std::string> failures;
  std::set<std::string> ids;
  for (const std::string& file : files.value()) {
    auto text = ReadTextFile(file);
    if (!text.ok()) return text.error();
    const std::string name = std::filesystem::path(file).filename().string();
    auto source = ParseMeasurementSource(text.value(), name);
    if (!source.ok()) return source.error();
    for (const MeasuredRun& measured : source.value().runs) {
      if (!ids.insert(measured.id).second) {
        failures.push_back(name + ": run '" + measured.id +
                           "' appears twice in the suite (expected unique run ids; rename one)");
        continue;
      }
      auto row = Predict(name, source.value(), measured);
      if (!row.ok()) {
        failures.push_back(row.error().message);
        continue;
      }
      rows.push_back(std::move(row).value());
    }
  }
  if (!failures.empty()) {
    for (const std::string& failure : failures) err << "stagecraft: error: " << failure << "\n";
    return MakeError(ErrorKind::kBadInput, "");
  }
  const Summaries summaries(rows);
  if (flags.json) {
    out << ValidateJson(rows, summaries) << "\n";
  } else {
    StepText(rows, summaries, out);
    if (summaries.memory.runs > 0) MemoryText(rows, summaries, out);
  }
  if (!flags.csv_path.empty()) {
    std::string csv =
        std::string("source,run,gpus,measured_s,predicted_s,error,") + kValidatedRunColumns + "\n";
    for (const Row& row : rows) {
      csv += row.source + "," + row.id + "," + std::to_string(row.gpus) + "," +
             FormatFixed(row.measured_s, 4) + "," + FormatFixed(row.predicted_s, 4) + "," +
             FormatFixed(row.error(), 4) + "," + ValidatedRunFields(row.features) + "\n";
    }
    const Status written = WriteTextFile(flags.csv_path, csv);
    if (!written.ok()) return Error{"--csv: " + written.error().message};
  }
  const Summary& all = summaries.all;
  if (flags.max_mape && 100 * all.mape() > *flags.max_mape) {
    err << "stagecraft: error: MAPE " << FormatFixed(100 * all.mape(), 1)
        << "% is above --max-mape " << FormatFixed(*flags.max_mape, 1)
        << "% (the recorded figure plus its allowance)\n";
    return MakeError(ErrorKind::kViolation, "");
  }
  return Status::Ok();
}

}  // namespace stagecraft
