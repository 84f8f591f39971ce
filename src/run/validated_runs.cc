#include "run/validated_runs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "core/units.h"

namespace stagecraft {

const char* ValidatedRunsCsv();  // validated_runs.cc.in

namespace {

// The parallel features a run uses, as a word list ("tp pp fp8"; "none").
std::string Features(const ValidatedRun& run) {
  std::string words;
  for (const auto& [name, used] : {std::pair{"tp", run.tp > 1},
                                   {"pp", run.pp > 1},
                                   {"cp", run.cp > 1},
                                   {"ep", run.ep > 1},
                                   {"fp8", run.fp8}}) {
    if (used) words += (words.empty() ? "" : " ") + std::string(name);
  }
  return words.empty() ? "none" : words;
}

std::string Billions(double params) {
  return FormatFixed(params / 1e9, params < 1e10 ? 1 : 0) + "B";
}

}  // namespace

Result<std::vector<ResultsRow>> ParseResultsTable(const std::string& csv, size_t columns,
                                                  const std::vector<size_t>& numeric,
                                                  const std::string& what,
                                                  const std::string& regenerate) {
  std::vector<ResultsRow> rows;
  std::istringstream lines(csv);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (number == 1 || line.empty()) continue;  // the header
    const std::string where = what + ", line " + std::to_string(number) + ": ";
    ResultsRow row;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) row.fields.push_back(cell);
    if (row.fields.size() != columns) {
      return Error{where + std::to_string(row.fields.size()) + " fields, expected " +
                   std::to_string(columns) + " (regenerate it: " + regenerate + ")"};
    }
    for (const size_t index : numeric) {
      const std::string& text = row.fields[index];
      double value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
        return Error{where + "'" + text + "' is not a number (regenerate it: " + regenerate + ")"};
      }
      row.numbers.push_back(value);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string DeviceGeneration(const std::string& device) {
  if (device.rfind("a100", 0) == 0 || device == "a40") return "ampere";
  if (device.rfind("h100", 0) == 0 || device == "h200" || device == "h800" || device == "gh200") {
    return "hopper";
  }
  if (device.rfind("b200", 0) == 0) return "blackwell";
  return device;
}

std::string ValidatedRunFields(const ValidatedRun& run) {
  return run.device + "," + FormatFixed(run.params / 1e9, 3) + "," +
         std::to_string(run.micro_batch) + "," + std::to_string(run.tp) + "," +
         std::to_string(run.pp) + "," + std::to_string(run.cp) + "," + std::to_string(run.ep) +
         "," + (run.fp8 ? "1" : "0");
}

ValidatedRun FeaturesOf(const PreparedRun& run) {
  ValidatedRun features;
  const Config& config = run.config;
  features.device = config.cluster.given ? config.cluster.device : "none";
  features.gpus = run.parallel_plan.world_size;
  features.params = run.parallel_plan.params;
  features.micro_batch = config.model.micro_batch_size;
  features.tp = config.parallel.tp;
  features.pp = config.parallel.pp;
  features.cp = config.parallel.cp;
  features.ep = config.parallel.ep;
  features.fp8 = config.parallel.fp8;
  return features;
}

Result<std::vector<ValidatedRun>> ParseValidatedRuns(const std::string& csv) {
  // validate --csv's columns: source,run,gpus,measured_s,predicted_s,error, then
  // kValidatedRunColumns.
  auto table = ParseResultsTable(csv, 14, {2, 5, 7, 8, 9, 10, 11, 12, 13}, "validated runs",
                                 "stagecraft validate --csv bench/validation/results.csv");
  if (!table.ok()) return table.error();
  std::vector<ValidatedRun> runs;
  for (const ResultsRow& row : table.value()) {
    const std::vector<double>& values = row.numbers;
    ValidatedRun run;
    run.run = row.fields[1];
    run.device = row.fields[6];
    run.gpus = static_cast<int32_t>(values[0]);
    run.error = values[1];
    run.params = values[2] * 1e9;
    run.micro_batch = static_cast<int32_t>(values[3]);
    run.tp = static_cast<int32_t>(values[4]);
    run.pp = static_cast<int32_t>(values[5]);
    run.cp = static_cast<int32_t>(values[6]);
    run.ep = static_cast<int32_t>(values[7]);
    run.fp8 = values[8] != 0;
    runs.push_back(std::move(run));
  }
  return runs;
}

const std::vector<ValidatedRun>& ValidatedRuns() {
  static const std::vector<ValidatedRun> kRuns = [] {
    auto parsed = ParseValidatedRuns(ValidatedRunsCsv());
    return parsed.ok() ? std::move(parsed).value() : std::vector<ValidatedRun>{};
  }();
  return kRuns;
}

ValidationInfo NearestValidation(const ValidatedRun& run, const std::vector<ValidatedRun>& suite) {
  ValidationInfo info;
  info.given = true;
  const std::string generation = DeviceGeneration(run.device);
  std::vector<const ValidatedRun*> same;
  for (const ValidatedRun& validated : suite) {
    if (DeviceGeneration(validated.device) == generation) same.push_back(&validated);
  }
  if (same.empty()) {
    info.outside = "device " + run.device + " (no validated runs on its generation)";
    info.basis = "no validated run on " + generation;
    return info;
  }
  // The generation's validated extremes.
  const auto extreme = [&](auto field, bool largest) {
    double value = field(*same.front());
    for (const ValidatedRun* validated : same) {
      value = largest ? std::max(value, field(*validated)) : std::min(value, field(*validated));
    }
    return value;
  };
  const auto micro_batch = [](const ValidatedRun& r) { return static_cast<double>(r.micro_batch); };
  const auto gpus = [](const ValidatedRun& r) { return static_cast<double>(r.gpus); };
  const auto params = [](const ValidatedRun& r) { return r.params; };
  if (run.micro_batch > extreme(micro_batch, true)) {
    info.outside = "micro-batch " + std::to_string(run.micro_batch) + " (largest validated on " +
                   generation + ": " + FormatFixed(extreme(micro_batch, true), 0) + ")";
  } else if (run.gpus > extreme(gpus, true)) {
    info.outside = std::to_string(run.gpus) + " GPUs (most validated on " + generation + ": " +
                   FormatFixed(extreme(gpus, true), 0) + ")";
  } else if (run.params > 1.5 * extreme(params, true) ||
             run.params < extreme(params, false) / 1.5) {
    info.outside = Billions(run.params) + " parameters (validated on " + generation + ": " +
                   Billions(extreme(params, false)) + " to " + Billions(extreme(params, true)) +
                   ")";
  }
  info.in_range = info.outside.empty();
  // The nearest runs: the same features, then the micro-batch and size bands while some match.
  const std::string features = Features(run);
  const auto near_batch = [&](const ValidatedRun& r) {
    return r.micro_batch <= 2 * run.micro_batch && 2 * r.micro_batch >= run.micro_batch;
  };
  const auto near_size = [&](const ValidatedRun& r) {
    return r.params <= 4 * run.params && 4 * r.params >= run.params;
  };
  const struct { bool batch, size; } tiers[] = {{true, true}, {true, false}, {false, false}};
  std::vector<const ValidatedRun*> nearest;
  for (const auto& tier : tiers) {
    nearest.clear();
    for (const ValidatedRun* validated : same) {
      if (Features(*validated) != features) continue;
      if (tier.batch && !near_batch(*validated)) continue;
      if (tier.size && !near_size(*validated)) continue;
      nearest.push_back(validated);
    }
    if (nearest.empty()) continue;
    info.basis = generation + ", parallel features " + features +
                 (tier.batch ? ", micro-batch " + std::to_string((run.micro_batch + 1) / 2) + "-" +
                                   std::to_string(2 * run.micro_batch)
                             : "") +
                 (tier.size ? ", " + Billions(run.params / 4) + "-" + Billions(4 * run.params) +
                                  " parameters"
                            : "");
    break;
  }
  if (nearest.empty()) {
    info.basis = "no validated run on " + generation + " with parallel features " + features;
    return info;
  }
  info.similar_runs = static_cast<int32_t>(nearest.size());
  double absolute = 0;
  for (const ValidatedRun* validated : nearest) {
    absolute += std::abs(validated->error);
    if (std::abs(validated->error) > std::abs(info.worst)) info.worst = validated->error;
  }
  info.mape = absolute / static_cast<double>(nearest.size());
  return info;
}

ValidationInfo ValidationFor(const Config& config, const ValidatedRun& features) {
  ValidationInfo info;
  info.given = true;
  if (!config.cluster.kernel_costed()) {
    info.basis = "the costs come from the config, not from the validated kernel model";
    info.outside = "costs not from the kernel model";
    return info;
  }
  if (!config.model.is_transformer()) {
    info.basis =
        "no validated runs of layer-list models (the suite is transformer runs; the "
        "kernels are checked by validate --kernels)";
    info.outside = "a layer-list model";
    return info;
  }
  return NearestValidation(features, ValidatedRuns());
}

}  // namespace stagecraft
