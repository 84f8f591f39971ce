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

#include "run/commands.h"
#include "core/units.h"
#include "io/validation_set.h"

namespace stagecraft {
namespace {

struct Row {
  std::string source;
  std::string id;
  int32_t gpus = 0;
  double measured_s = 0;
  double predicted_s = 0;
  double error() const { return (predicted_s - measured_s) / measured_s; }
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
  return row;
}

std::string Signed(double fraction) {
  return (fraction >= 0 ? "+" : "") + FormatFixed(100 * fraction, 1) + "%";
}

}  // namespace

Status RunValidate(const ValidateSpec& flags, Transcript& transcript) {
  std::ostream& out = transcript.out();
  std::ostream& err = transcript.err();
  auto files = SuiteFiles(flags.paths.empty() ? std::vector<std::string>{"bench/validation/runs"}
                                              : flags.paths);
  if (!files.ok()) return files.error();
  std::vector<Row> rows;
  std::vector<std::string> failures;
  std::set<std::string> ids;
  std::map<std::string, Summary> by_source;
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
      by_source[row.value().source].Add(row.value().error());
      rows.push_back(std::move(row).value());
    }
  }
  if (!failures.empty()) {
    for (const std::string& failure : failures) err << "stagecraft: error: " << failure << "\n";
    return MakeError(ErrorKind::kBadInput, "");
  }
  Summary all;
  for (const Row& row : rows) all.Add(row.error());
  out << "stagecraft validate: " << rows.size()
      << (rows.size() == 1 ? " measured run" : " measured runs") << " from " << by_source.size()
      << (by_source.size() == 1 ? " source" : " sources")
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
  for (const auto& [name, summary] : by_source) out << summary.Line(name);
  out << all.Line("all");
  if (!flags.csv_path.empty()) {
    std::string csv = "source,run,gpus,measured_s,predicted_s,error\n";
    for (const Row& row : rows) {
      csv += row.source + "," + row.id + "," + std::to_string(row.gpus) + "," +
             FormatFixed(row.measured_s, 4) + "," + FormatFixed(row.predicted_s, 4) + "," +
             FormatFixed(row.error(), 4) + "\n";
    }
    const Status written = WriteTextFile(flags.csv_path, csv);
    if (!written.ok()) return Error{"--csv: " + written.error().message};
  }
  if (flags.max_mape && 100 * all.mape() > *flags.max_mape) {
    err << "stagecraft: error: MAPE " << FormatFixed(100 * all.mape(), 1)
        << "% is above --max-mape " << FormatFixed(*flags.max_mape, 1)
        << "% (the recorded figure plus its allowance)\n";
    return MakeError(ErrorKind::kViolation, "");
  }
  return Status::Ok();
}

}  // namespace stagecraft
