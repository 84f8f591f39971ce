// How far a `serve` figure can be trusted: the serving suite's figures (bench/validation/serving)
// with the model's error on each, compiled in from bench/validation/serving-results.csv (what
// `stagecraft validate --serving --csv` writes; the golden validate/serving-results-table fails
// when the file is stale), and the figures nearest to a deployment. `serve` prints their error
// beside its own figures (doc/serving.md, "Validation").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "model/model_spec.h"
#include "report/run_info.h"
#include "serve/serve.h"

namespace stagecraft {

// What a served figure is compared by, and (for a validated one) the model's signed error on it.
struct ServedFigure {
  std::string run;     // the suite's row id ("" for a new deployment)
  std::string kind;    // throughput, ttft, tpot, e2e ("" for a new deployment)
  std::string device;  // the preset's name
  double params = 0;   // the model's parameters
  int32_t gpus = 0;    // every GPU of the deployment
  int32_t tp = 1;
  int32_t pp = 1;
  int32_t ep = 1;
  bool fp8 = false;    // FP8 weights and compute
  std::string client;  // open, closed or offline (Workload::Client)
  double error = 0;    // (predicted - measured) / measured
};

// The columns ServedFigureFields writes, after validate --serving --csv's own.
inline constexpr const char* kServedFigureColumns = "device,params_b,gpus,tp,pp,ep,fp8,client";
std::string ServedFigureFields(const ServedFigure& figure);

// A deployment's features: the model's parameters, the layout, the weights' format, the client.
ServedFigure ServedFeaturesOf(const ModelSpec& model, const ClusterSpec& cluster,
                              const ServeSetup& setup);

// The compiled-in suite (bench/validation/serving-results.csv), parsed once.
const std::vector<ServedFigure>& ServedFigures();
// The same parsed from `csv` (validate --serving --csv's format); a malformed line is an error.
Result<std::vector<ServedFigure>> ParseServedFigures(const std::string& csv);

// The validated figures nearest to `deployment` and the model's error on them: the same device
// generation and client, parameters within a factor 4 and the same use of expert parallelism;
// the EP and then the size criterion are dropped when no figure meets them (`basis` says which
// held). Outside the range: GPUs or parameters beyond the generation's validated extremes.
ValidationInfo NearestServedFigures(const ServedFigure& deployment,
                                    const std::vector<ServedFigure>& suite);

}  // namespace stagecraft
