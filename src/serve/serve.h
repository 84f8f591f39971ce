// `stagecraft serve` as a library call (doc/serving.md): one serving configuration of a
// transformer (tp x pp GPUs per replica, replicas behind a router) under a Poisson workload,
// sized by the step-cost model (step_cost.h) and run through the request simulator
// (request_sim.h). Entry file of the serve module.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "run/run_setup.h"
#include "serve/request_sim.h"
#include "serve/step_cost.h"

namespace stagecraft {

struct ServeSpec {
  RunSpec run;                // CONFIG, --hf-config, --cluster (the model and the devices)
  std::optional<int32_t> tp;  // --tp T; unset = the config's parallel.tp, else 1
  std::optional<int32_t> pp;  // --pp P; unset = the config's parallel.pp, else 1
  // --ep E: expert-parallel GPUs per stage (step_cost.h ServeShape::ep); unset = the config's
  // parallel.ep, else 1.
  std::optional<int32_t> ep;
  int32_t replicas = 1;  // --replicas R
  // --prefill-instances NP --decode-instances ND: disaggregated prefill and decode pools of
  // instances of the tp x pp layout (serve/disaggregated_sim.h); 0 and 0 = colocated replicas.
  int32_t prefill_instances = 0;
  int32_t decode_instances = 0;
  double rate_rps = 1.0;                    // --rate RPS at the router
  double arrival_cv = 1.0;                  // --arrival-cv CV: 1 = Poisson, else gamma gaps
  int64_t requests = 1000;                  // --requests N
  uint64_t seed = 1;                        // --seed S
  std::string prompt_tokens = "512";        // --prompt-tokens N or A-B
  std::string output_tokens = "64";         // --output-tokens N or A-B
  std::string routing = "round-robin";      // --routing round-robin | least-outstanding | kv-aware
  int64_t prefix_groups = 0;                // --prefix-groups G: shared prompt prefixes (0 none)
  int64_t prefix_tokens = 0;                // --prefix-tokens P: each one's length
  std::string slo = "ttft=0.4s,tpot=40ms";  // --slo
  std::string weight_dtype;   // --weight-dtype bf16|fp8|int8|int4|fp4; "" = the model's
  std::string kv_dtype;       // --kv-dtype bf16|fp8; "" = the model's
  std::string batching;       // --batching chunked | prefill-first; "" = chunked
  std::string trace_path;     // --trace FILE: Chrome trace of the batches
  std::string report_path;    // --report FILE.html: the HTML report
  std::string request_trace;  // --request-trace FILE: the requests, as CSV
  bool eager = false;         // --eager: no CUDA graphs (host issues each kernel)
  bool json = false;          // --json
};

// "ttft=0.4s,tpot=40ms": each request's bound on its TTFT and on its TPOT (errors name --slo).
Result<Slo> ParseSlo(const std::string& text);

// A layer-list model (CSA2) with --kv-dtype is refused (exit 2): its cache keeps the model's
// own inference formats. Everything else passes (a model with neither a transformer nor layers
// fails later, in BuildReplicaModel).
Status CheckServable(const ModelSpec& model, const std::string& kv_dtype,
                     const std::string& command);

}  // namespace stagecraft
