// How far a figure can be trusted: the validation suite's runs (bench/validation/runs) with their
// features and the error the model makes on each, compiled in from bench/validation/results.csv
// (what `stagecraft validate --csv` writes; the golden validate/results-table fails when the file
// is stale), and the runs nearest to a new one. `simulate` prints the nearest runs' error beside
// what its figures rest on (doc/fidelity.md, "How far a figure can be trusted").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/run_info.h"
#include "run/run_setup.h"

namespace stagecraft {

// What a run is compared by, and (for a validated run) the model's signed error on it.
struct ValidatedRun {
  std::string run;     // the suite's run id ("" for a new run)
  std::string device;  // the preset's name
  int32_t gpus = 0;
  double params = 0;  // the model's parameters
  int32_t micro_batch = 1;
  int32_t tp = 1;
  int32_t pp = 1;
  int32_t cp = 1;
  int32_t ep = 1;
  bool fp8 = false;
  double error = 0;  // (predicted - measured) / measured
};

// The tensor-core generation a preset belongs to, whose kernel data its presets share:
// "ampere", "hopper", "blackwell" (any other name is its own).
std::string DeviceGeneration(const std::string& device);

// The columns ValidatedRunFields writes, after validate --csv's own.
inline constexpr const char* kValidatedRunColumns = "device,params_b,micro_batch,tp,pp,cp,ep,fp8";
std::string ValidatedRunFields(const ValidatedRun& run);

// A transformer run's features (world size, parameters, micro-batch, parallel degrees, FP8).
ValidatedRun FeaturesOf(const PreparedRun& run);

// The compiled-in suite (bench/validation/results.csv), parsed once.
const std::vector<ValidatedRun>& ValidatedRuns();
// The same parsed from `csv` (validate --csv's format); a malformed line is an error.
Result<std::vector<ValidatedRun>> ParseValidatedRuns(const std::string& csv);

// A results table compiled into the binary (validate --csv's, validate --serving --csv's): the
// rows after the header, each split at commas into exactly `columns` fields, with the fields at
// the `numeric` indices also parsed as finite numbers (in that order). `what` names the table in
// messages ("validated runs"), `regenerate` how to rewrite it ("stagecraft validate --csv
// bench/validation/results.csv").
struct ResultsRow {
  std::vector<std::string> fields;
  std::vector<double> numbers;
};
Result<std::vector<ResultsRow>> ParseResultsTable(const std::string& csv, size_t columns,
                                                  const std::vector<size_t>& numeric,
                                                  const std::string& what,
                                                  const std::string& regenerate);

// The validated runs nearest to `run` and the model's error on them: the same device generation
// and the same parallel features (tp, pp, cp, ep above 1, FP8), a micro-batch within a factor 2
// and parameters within a factor 4; the size and then the micro-batch criterion are dropped when
// no run meets them (`basis` says which held). Outside the range: the run's micro-batch, GPUs
// or parameters beyond the generation's validated extremes (`outside` names the first).
ValidationInfo NearestValidation(const ValidatedRun& run, const std::vector<ValidatedRun>& suite);
// For a run of `config` with `features`: NearestValidation over the compiled-in suite for a
// transformer costed by the kernel model; for a layer-list model or costs given in the config,
// why there are no validated runs (outside the range).
ValidationInfo ValidationFor(const Config& config, const ValidatedRun& features);

}  // namespace stagecraft
