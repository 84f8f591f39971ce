#include "serve/serve.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/units.h"
#include "hardware/presets.h"
#include "model/kv_cache.h"
#include "report/json_writer.h"
#include "serve/disaggregated_sim.h"
#include "serve/serve_report.h"

namespace stagecraft {

Status CheckServable(const ModelSpec& model, const std::string& kv_dtype,
                     const std::string& command) {
  if (model.is_transformer() || model.layers.empty() || kv_dtype.empty()) return Status::Ok();
  return Error{"--kv-dtype " + kv_dtype + ": a CSA2 layer list keeps its KV cache in its own " +
               "inference formats (compressed KV FP4 E2M1, indexer keys MXFP4, window KV FP8; " +
               "doc/csa2.md), which " + command + " models as they are (drop --kv-dtype)"};
}

Result<Slo> ParseSlo(const std::string& text) {
  Slo slo;
  bool ttft = false;
  bool tpot = false;
  std::istringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const size_t equals = part.find('=');
    const std::string key = part.substr(0, equals);
    auto value = equals == std::string::npos ? Result<Time>(Error{"no value"})
                                             : ParseDuration(part.substr(equals + 1));
    if ((key != "ttft" && key != "tpot") || !value.ok() || value.value().ns() <= 0) {
      return Error{"--slo '" + text + "': expected ttft=DURATION,tpot=DURATION with positive " +
                   "durations, e.g. ttft=0.4s,tpot=40ms"};
    }
    (key == "ttft" ? slo.ttft_s : slo.tpot_s) = static_cast<double>(value.value().ns()) * 1e-9;
    (key == "ttft" ? ttft : tpot) = true;
  }
  if (!ttft || !tpot) {
    return Error{"--slo '" + text + "': expected both ttft and tpot, e.g. ttft=0.4s,tpot=40ms"};
  }
  return slo;
}

}  // namespace stagecraft
