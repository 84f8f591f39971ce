// stagecraft validate: the cost model against published measured training runs
// (bench/validation/runs, doc/fidelity.md). Each run's config is simulated with the defaults
// and its iteration time compared with the measured one: signed error per run, and the mean
// absolute percentage error (MAPE) with the shares within ±10% and ±15%, per source and overall.
#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <filesystem>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "commands/commands.h"
#include "commands/validation_files.h"
#include "core/units.h"
#include "io/validation_set.h"
#include "report/json_writer.h"
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
  // What two runs must share to be one decision (DecisionsOf): the model's dimensions but the
  // padded vocabulary, the sequence, the GPUs, the tokens a step, the device, FP8 and fused
  // kernels.
  std::string same;
  double error() const { return (predicted_s - measured_s) / measured_s; }
  double memory_error() const { return (predicted_gib - measured_gib) / measured_gib; }
};

// The step table's tally, with its line.
struct Summary : ErrorTally {
  std::string Line(const std::string& name) const {
    return "  " + PadRight(name, 48) + PadLeft(std::to_string(runs), 5) +
           PadLeft(FormatFixed(100 * mape(), 1) + "%", 9) +
           PadLeft(FormatFixed(100 * share_10(), 1) + "%", 11) +
           PadLeft(FormatFixed(100 * share_15(), 1) + "%", 11) + "\n";
  }
};

// Simulates one measured run as `simulate` would (defaults, no overrides); with `sustained`,
// the GEMMs' sustained share (KernelModel::gemm_sustained) replaced by it.
Result<Row> Predict(const std::string& file, const MeasurementSource& source,
                    const MeasuredRun& measured, std::optional<double> sustained = std::nullopt) {
  RunSpec flags;
  flags.config_path = file;
  flags.config_text = measured.config_text;
  if (sustained) {
    flags.edit = [share = *sustained](Config& config) {
      config.cluster.kernels.gemm_sustained = share;
      return Status::Ok();
    };
  }
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
  const Config& config = run.value().config;
  const TransformerSpec& t = config.model.transformer;
  std::ostringstream same;
  same << source.id << ' ' << t.layers << ' ' << t.hidden << ' ' << t.heads << ' '
       << t.kv_heads_or_heads() << ' ' << t.ffn_or_default() << ' ' << t.experts << ' '
       << t.experts_per_token << ' ' << t.kv_lora_rank << ' ' << config.model.seq_len << ' '
       << row.gpus << ' ' << run.value().parallel_plan.tokens_per_iteration << ' '
       << config.cluster.device << ' ' << config.parallel.fp8 << ' '
       << (config.parallel.fp8 ? Fp8RecipeName(config.parallel.fp8_recipe) : "-") << ' '
       << config.parallel.fused_kernels;
  row.same = same.str();
  row.features.error = row.error();
  if (measured.memory_gib > 0) {
    row.measured_gib = measured.memory_gib;
    row.predicted_gib = ComputeMemory(run.value(), simulated).verdict.peak_bytes / kBytesPerGib;
  }
  return row;
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
        << PadLeft(FormatFixed(row.predicted_s, 3), 13)
        << PadLeft(FormatSignedPercent(row.error()), 9) << "\n";
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
        << PadLeft(FormatFixed(row.predicted_gib, 2), 15)
        << PadLeft(FormatSignedPercent(row.memory_error()), 9) << "\n";
  }
  out << "\n  " << PadRight("source", 48) << PadLeft("runs", 5) << PadLeft("mape", 9)
      << PadLeft("within_10", 11) << PadLeft("within_15", 11) << "\n";
  for (const auto& [name, summary] : summaries.memory_by_source) out << summary.Line(name);
  out << summaries.memory.Line("all");
}

// A decision: two runs of one source that a user would choose between, the same model (its
// vocabulary padded apart) on the same GPUs and devices with the same tokens a step, precision and
// fused kernels, differing in layout, schedule, recomputation or overlap; measured at least
// kDecisionGap apart (closer, the published figures do not decide between them). Ranked as
// measured when the predicted order is the measured one.
constexpr double kDecisionGap = 0.03;

struct Decision {
  const Row* faster;  // as measured
  const Row* slower;
  bool ranked_as_measured() const { return faster->predicted_s < slower->predicted_s; }
};

size_t RankedAsMeasured(const std::vector<Decision>& decisions) {
  return static_cast<size_t>(
      std::count_if(decisions.begin(), decisions.end(),
                    [](const Decision& d) { return d.ranked_as_measured(); }));
}

std::vector<Decision> DecisionsOf(const std::vector<Row>& rows) {
  std::vector<Decision> decisions;
  for (size_t a = 0; a < rows.size(); ++a) {
    for (size_t b = a + 1; b < rows.size(); ++b) {
      if (rows[a].same != rows[b].same) continue;
      const bool a_faster = rows[a].measured_s < rows[b].measured_s;
      const Row& faster = a_faster ? rows[a] : rows[b];
      const Row& slower = a_faster ? rows[b] : rows[a];
      if (slower.measured_s < faster.measured_s * (1 + kDecisionGap)) continue;
      decisions.push_back({&faster, &slower});
    }
  }
  return decisions;
}

void DecisionsText(const std::vector<Decision>& decisions, std::ostream& out) {
  out << "\n  decisions: runs of one source on the same model, GPUs and tokens a step that differ "
         "in layout, schedule, recomputation or overlap, measured at least "
      << FormatFixed(100 * kDecisionGap, 0)
      << "% apart; the slower's step over the faster's, measured and predicted\n";
  size_t faster_width = 17;
  size_t slower_width = 6;
  for (const Decision& d : decisions) {
    faster_width = std::max(faster_width, d.faster->id.size());
    slower_width = std::max(slower_width, d.slower->id.size());
  }
  out << "  " << PadRight("faster (measured)", faster_width) << "  "
      << PadRight("slower", slower_width) << PadLeft("measured", 10) << PadLeft("predicted", 11)
      << "\n";
  for (const Decision& d : decisions) {
    out << "  " << PadRight(d.faster->id, faster_width) << "  "
        << PadRight(d.slower->id, slower_width)
        << PadLeft(FormatFixed(d.slower->measured_s / d.faster->measured_s, 3), 10)
        << PadLeft(FormatFixed(d.slower->predicted_s / d.faster->predicted_s, 3), 11)
        << (d.ranked_as_measured() ? "" : "  reversed") << "\n";
  }
  std::set<std::string> sources;
  for (const Decision& d : decisions) sources.insert(d.faster->source);
  out << "  " << RankedAsMeasured(decisions) << " of " << decisions.size() << " decisions ("
      << sources.size() << (sources.size() == 1 ? " source" : " sources")
      << ") ranked as measured\n";
}

// The constants the step suite chooses: each generation's sustained GEMM share (presets.cc),
// swept over this grid.
constexpr double kSustainedGrid[] = {0.72, 0.74, 0.76, 0.78, 0.80, 0.82, 0.84};
constexpr size_t kGridSize = std::size(kSustainedGrid);

struct Case {
  std::string file;
  const MeasurementSource* source;
  const MeasuredRun* measured;
  std::string generation;
};

// For each source, the share each generation would get from the other sources' runs (the grid
// value with the least MAPE over them), and the source's runs' error at it.
struct LeaveOneOut {
  std::map<std::string, Summary> by_source;
  std::map<std::string, std::map<std::string, double>> chosen;  // source -> generation -> share
  std::map<std::string, double> in_sample;                      // generation -> share, all runs
  Summary all;
};

Result<LeaveOneOut> LeaveOneSourceOut(const std::vector<Case>& cases) {
  // errors[case][grid]
  std::vector<std::array<double, kGridSize>> errors(cases.size());
  for (size_t c = 0; c < cases.size(); ++c) {
    for (size_t g = 0; g < kGridSize; ++g) {
      auto row = Predict(cases[c].file, *cases[c].source, *cases[c].measured, kSustainedGrid[g]);
      if (!row.ok()) return row.error();
      errors[c][g] = row.value().error();
    }
  }
  // The best grid value for `generation` over the cases `use` admits.
  const auto best = [&](const std::string& generation, auto use) {
    size_t chosen = 0;
    double least = -1;
    for (size_t g = 0; g < kGridSize; ++g) {
      double absolute = 0;
      size_t count = 0;
      for (size_t c = 0; c < cases.size(); ++c) {
        if (cases[c].generation != generation || !use(cases[c])) continue;
        absolute += std::abs(errors[c][g]);
        ++count;
      }
      if (count > 0 && (least < 0 || absolute < least)) {
        least = absolute;
        chosen = g;
      }
    }
    return least < 0 ? kGridSize : chosen;
  };
  LeaveOneOut result;
  std::set<std::string> generations;
  for (const Case& c : cases) generations.insert(c.generation);
  for (const std::string& generation : generations) {
    const size_t g = best(generation, [](const Case&) { return true; });
    if (g < kGridSize) result.in_sample[generation] = kSustainedGrid[g];
  }
  for (size_t c = 0; c < cases.size(); ++c) {
    const std::string& source = cases[c].source->id;
    const std::string& generation = cases[c].generation;
    auto& chosen = result.chosen[source];
    if (!chosen.count(generation)) {
      const size_t g =
          best(generation, [&](const Case& other) { return other.source->id != source; });
      chosen[generation] = g < kGridSize ? kSustainedGrid[g] : -1;
    }
    const double share = chosen[generation];
    if (share < 0) continue;  // no other source's run on the generation: nothing to choose from
    const size_t g =
        static_cast<size_t>(std::find(std::begin(kSustainedGrid), std::end(kSustainedGrid), share) -
                            std::begin(kSustainedGrid));
    result.by_source[source].Add(errors[c][g]);
    result.all.Add(errors[c][g]);
  }
  return result;
}

void LeaveOneOutText(const LeaveOneOut& loo, const Summaries& summaries, std::ostream& out) {
  out << "\n  leave one source out: each generation's sustained GEMM share chosen (grid "
      << FormatFixed(kSustainedGrid[0], 2) << "-" << FormatFixed(kSustainedGrid[kGridSize - 1], 2)
      << ") from the other sources' runs, this source's runs at it; chosen from all runs:";
  for (const auto& [generation, share] : loo.in_sample) {
    out << " " << generation << " " << FormatFixed(share, 2);
  }
  out << "\n  " << PadRight("source", 48) << PadLeft("runs", 5) << PadLeft("mape", 9)
      << PadLeft("held_out", 10) << "  shares chosen without it\n";
  for (const auto& [name, summary] : loo.by_source) {
    std::string shares;
    for (const auto& [generation, share] : loo.chosen.at(name)) {
      shares += (shares.empty() ? "" : ", ") + generation + " " + FormatFixed(share, 2);
    }
    out << "  " << PadRight(name, 48) << PadLeft(std::to_string(summary.runs), 5)
        << PadLeft(FormatFixed(100 * summaries.by_source.at(name).mape(), 1) + "%", 9)
        << PadLeft(FormatFixed(100 * summary.mape(), 1) + "%", 10) << "  " << shares << "\n";
  }
  // In sample over the same runs: a source whose generation no other source runs on has no
  // share to be held out at, and is left out of both columns (named below).
  ErrorTally held_in;
  std::string not_held;
  for (const auto& [name, summary] : summaries.by_source) {
    if (loo.by_source.count(name) > 0) {
      held_in.Merge(summary);
    } else {
      not_held += (not_held.empty() ? "" : ", ") + name;
    }
  }
  out << "  " << PadRight("all", 48) << PadLeft(std::to_string(loo.all.runs), 5)
      << PadLeft(FormatFixed(100 * held_in.mape(), 1) + "%", 9)
      << PadLeft(FormatFixed(100 * loo.all.mape(), 1) + "%", 10) << "\n";
  if (!not_held.empty()) {
    out << "  not held out (no other source runs on its generation): " << not_held << "\n";
  }
}

// One object: the step figures (runs, mape, within_10, within_15, sources), memory (the same
// over the runs that give a measured peak), decisions (the decision suite: DecisionsOf), each
// run's figures and, with `loo`, the leave-one-source-out figures.
std::string ValidateJson(const std::vector<Row>& rows, const Summaries& summaries,
                         const std::vector<Decision>& decisions, const LeaveOneOut* loo) {
  JsonWriter writer(true);
  writer.BeginObject();
  SummaryJson(writer, summaries.all, summaries.by_source);
  writer.Key("memory").BeginObject();
  SummaryJson(writer, summaries.memory, summaries.memory_by_source);
  writer.EndObject();
  writer.Key("decisions").BeginObject();
  writer.Key("total").Int(static_cast<int64_t>(decisions.size()));
  writer.Key("ranked_as_measured").Int(static_cast<int64_t>(RankedAsMeasured(decisions)));
  writer.Key("pairs").BeginArray();
  for (const Decision& d : decisions) {
    writer.BeginObject();
    writer.Key("faster").String(d.faster->id).Key("slower").String(d.slower->id);
    writer.Key("measured_ratio").Fixed(d.slower->measured_s / d.faster->measured_s, 4);
    writer.Key("predicted_ratio").Fixed(d.slower->predicted_s / d.faster->predicted_s, 4);
    writer.Key("ranked_as_measured").Bool(d.ranked_as_measured());
    writer.EndObject();
  }
  writer.EndArray();
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
  writer.EndArray();
  if (loo != nullptr) {
    writer.Key("leave_one_source_out").BeginObject();
    writer.Key("mape").Fixed(loo->all.mape(), 4);
    writer.Key("runs").Int(static_cast<int64_t>(loo->all.runs));
    writer.Key("sources").BeginObject();
    for (const auto& [name, summary] : loo->by_source) {
      writer.Key(name).BeginObject();
      SummaryJson(writer, summary);
      writer.Key("sustained").BeginObject();
      for (const auto& [generation, share] : loo->chosen.at(name)) {
        writer.Key(generation).Fixed(share, 2);
      }
      writer.EndObject().EndObject();
    }
    writer.EndObject().EndObject();
  }
  writer.EndObject();
  return writer.text();
}

}  // namespace

Status RunValidate(const ValidateSpec& flags, Transcript& transcript) {
  if (flags.max_mape && !(*flags.max_mape >= 0 && *flags.max_mape <= 1e6)) {
    return Error{"--max-mape: expected a percentage from 0 to 10^6, got " +
                 FormatFixed(*flags.max_mape, 1) + " (e.g. 12.5)"};
  }
  if (flags.kernels && flags.serving) {
    return Error{"validate: --kernels and --serving are two suites; give one"};
  }
  if (flags.kernels) return RunValidateKernels(flags, transcript);
  if (flags.serving) return RunValidateServing(flags, transcript);
  std::ostream& out = transcript.out();
  std::ostream& err = transcript.err();
  auto files = SuiteFiles(
      flags.paths.empty() ? std::vector<std::string>{"bench/validation/runs"} : flags.paths,
      ".yaml", "validate", "bench/validation/runs");
  if (!files.ok()) return files.error();
  std::vector<Row> rows;
  std::vector<std::string> failures;
  std::set<std::string> ids;
  std::deque<MeasurementSource> sources;  // stable addresses for the cases
  std::vector<Case> cases;
  for (const std::string& file : files.value()) {
    auto text = ReadTextFile(file);
    if (!text.ok()) return text.error();
    const std::string name = std::filesystem::path(file).filename().string();
    auto source = ParseMeasurementSource(text.value(), name);
    if (!source.ok()) return source.error();
    sources.push_back(std::move(source).value());
    for (const MeasuredRun& measured : sources.back().runs) {
      if (!ids.insert(measured.id).second) {
        failures.push_back(name + ": run '" + measured.id +
                           "' appears twice in the suite (expected unique run ids; rename one)");
        continue;
      }
      auto row = Predict(name, sources.back(), measured);
      if (!row.ok()) {
        failures.push_back(row.error().message);
        continue;
      }
      cases.push_back(
          {name, &sources.back(), &measured, DeviceGeneration(row.value().features.device)});
      rows.push_back(std::move(row).value());
    }
  }
  if (!failures.empty()) {
    for (const std::string& failure : failures) err << "stagecraft: error: " << failure << "\n";
    return MakeError(ErrorKind::kBadInput, "");
  }
  const Summaries summaries(rows);
  const std::vector<Decision> decisions = DecisionsOf(rows);
  std::optional<LeaveOneOut> loo;
  if (flags.leave_one_out) {
    auto computed = LeaveOneSourceOut(cases);
    if (!computed.ok()) return computed.error();
    loo = std::move(computed).value();
  }
  if (flags.json) {
    out << ValidateJson(rows, summaries, decisions, loo ? &*loo : nullptr) << "\n";
  } else {
    StepText(rows, summaries, out);
    if (loo) LeaveOneOutText(*loo, summaries, out);
    if (summaries.memory.runs > 0) MemoryText(rows, summaries, out);
    if (!decisions.empty()) DecisionsText(decisions, out);
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
