// The serving commands as text: `serve`, `serve-plan` and `serve-plan --space vidur`. Their flags
// as given (ServeSpec, ServePlanSpec), parsed here into the serve module's typed setups
// (serve/serve.h ServeSetup, serve/serve_plan.h ServePlanSetup), run there, and told.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "commands/transcript.h"
#include "core/progress.h"
#include "run/run_setup.h"
#include "serve/engine_profile.h"
#include "serve/explorer_search.h"
#include "serve/serve.h"
#include "serve/serve_plan.h"

namespace stagecraft {

// The engine's flags of `serve` and `serve-plan` as given.
struct EngineFlags {
  // --engine vllm|trtllm|sglang: the engine's defaults (serve/engine_profile.h), applied before
  // the flags below; "" = stagecraft's own defaults (vLLM-like, with max_num_seqs 256).
  std::string engine;
  std::string weight_dtype;  // --weight-dtype bf16|fp8|int8|int4|fp4; "" = the model's
  std::string kv_dtype;      // --kv-dtype bf16|fp8; "" = the model's
  std::string batching;      // --batching chunked | prefill-first; "" = chunked
  // --max-num-seqs N: sequences in one iteration (vLLM's max_num_seqs, TensorRT-LLM's
  // max_batch_size, SGLang's max_running_requests); unset = 256.
  std::optional<int64_t> max_num_seqs;
  // --max-num-batched-tokens N: tokens in one iteration (vLLM's max_num_batched_tokens,
  // TensorRT-LLM's max_num_tokens, SGLang's chunked_prefill_size); unset = 8192, or the
  // prefill-first default.
  std::optional<int64_t> max_num_batched_tokens;
  // --kv-memory-fraction F: the share of the memory left after the weights, activations and
  // reserve that the KV cache takes (TensorRT-LLM's kv_cache_free_gpu_mem_fraction); unset = the
  // KV cache fills what is left of 90% of the device (vLLM's gpu_memory_utilization 0.9).
  std::optional<double> kv_memory_fraction;
  // --speculative-tokens K --acceptance-rate A: speculative decoding with an MTP draft of K
  // tokens per step, each accepted with probability A (serve/speculative.h); both or neither.
  std::optional<int64_t> speculative_tokens;
  std::optional<double> acceptance_rate;
};

// `serve`'s flags as given.
struct ServeSpec : EngineFlags {
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
  double rate_rps = 1.0;  // --rate RPS at the router
  // --concurrency N: a closed-loop client keeping N requests in flight (excludes --rate);
  // --offline: every request at t = 0 (serve/request_sim.h Workload::Client).
  std::optional<int64_t> concurrency;
  bool offline = false;
  double arrival_cv = 1.0;                  // --arrival-cv CV: 1 = Poisson, else gamma gaps
  int64_t requests = 1000;                  // --requests N
  uint64_t seed = 1;                        // --seed S
  std::string prompt_tokens = "512";        // --prompt-tokens N or A-B
  std::string output_tokens = "64";         // --output-tokens N or A-B
  std::string routing = "round-robin";      // --routing round-robin | least-outstanding | kv-aware
  int64_t prefix_groups = 0;                // --prefix-groups G: shared prompt prefixes (0 none)
  int64_t prefix_tokens = 0;                // --prefix-tokens P: each one's length
  std::string slo = "ttft=0.4s,tpot=40ms";  // --slo
  std::string trace_path;                   // --trace FILE: Chrome trace of the batches
  std::string report_path;                  // --report FILE.html: the HTML report
  std::string request_trace;                // --request-trace FILE: the requests, as CSV
  bool eager = false;                       // --eager: no CUDA graphs (host issues each kernel)
  bool json = false;                        // --json
  ProgressSink progress;                    // the requests finished; nullptr: none (cli/app.cc)
};

// `serve-plan`'s flags as given.
struct ServePlanSpec : EngineFlags {
  RunSpec run;                        // CONFIG, --hf-config, --cluster
  int32_t gpus = 0;                   // --gpus N (required)
  std::string slo;                    // --slo ttft=0.4s,tpot=40ms,percentile=90
  std::string prompt_tokens = "512";  // --prompt-tokens
  std::string output_tokens = "64";   // --output-tokens
  int64_t requests = 400;             // --requests per probe
  uint64_t seed = 1;                  // --seed
  int32_t top = 10;                   // --top plans shown
  std::string svg_path;               // --svg FILE: the probes and their Pareto front
  bool json = false;                  // --json
  // --concurrency N: each layout at a closed loop of N requests in flight; --offline: every
  // request at t = 0 (serve/serve_plan.h ServePlanSetup::workload); neither = the rate search.
  // --slo is required but with --offline.
  std::optional<int64_t> concurrency;
  bool offline = false;
  // --space vidur: search Vidur's config-explorer space instead (explorer_search.h); its
  // traces' length tables are read from `space_traces`/NAME.csv.
  std::string space;
  std::string space_traces = "examples/vidur";  // --space-traces DIR
  std::string space_filter;                     // --space-filter KEY=VALUE,...
  std::string delay_slo = "5s";                 // --delay-slo: the P99 scheduling delay bound
  int32_t jobs = 1;                             // --jobs N threads
  // The layouts (or configurations) evaluated (core/progress.h); nullptr: none (cli/app.cc).
  ProgressSink progress;
};

// The flags' texts as values (serve_flags.cc); errors name the flag.
// --slo ttft=DURATION,tpot=DURATION: each request's bounds; with percentile=50|90|99 (or as
// ttft_p90=DURATION,tpot_p90=DURATION) the run's percentile is judged too.
Result<Slo> ParseSlo(const std::string& text);
// --slo ttft=DURATION,tpot=DURATION,percentile=50|90|99 or ttft_p90=DURATION,tpot_p90=DURATION:
// the bounds a plan must meet at that percentile.
Result<PercentileSlo> ParsePercentileSlo(const std::string& text);
// --routing round-robin | least-outstanding | kv-aware.
Result<Routing> ParseRouting(const std::string& text);
// --engine vllm|trtllm|sglang|trtllm-bench; errors suggest the nearest name.
Result<EngineProfile> ParseEngineProfile(const std::string& text);
// What sizes an engine from its workload (--engine trtllm-bench): the layout and the requests.
struct EngineSizing {
  const ServeShape& shape;
  const Workload& workload;
};
// The engine's flags into `engine`, for `model` on `cluster`: --engine's profile, --weight-dtype
// and --kv-dtype ("" = unset: the model's own), --batching, then the limits (each checked
// against its range), the explicit flags overriding the profile. `sizing` is the deployment
// that trtllm-bench's limits are sized for (null where none is fixed, as in serve-plan, which
// then refuses that profile).
Status ApplyEngineFlags(const EngineFlags& flags, const ModelSpec& model,
                        const ClusterSpec& cluster, EngineOptions& engine,
                        const EngineSizing* sizing);
// A layer-list model (CSA2) with --kv-dtype is refused (exit 2): its cache keeps the model's
// own inference formats. Everything else passes (a model with neither a transformer nor layers
// fails later).
Status CheckServable(const ModelSpec& model, const std::string& kv_dtype,
                     const std::string& command);

// The serve module's setup from the flags and the resolved run's config: the layout (the flags,
// else the config's parallel.tp/pp/ep when it writes them, else 1), the workload, the routing,
// the SLO and the engine. `serve` and `validate --serving` build their runs with it.
Result<ServeSetup> ServeSetupOf(const ServeSpec& spec, const PreparedRun& run);

Status RunServe(const ServeSpec& spec, Transcript& transcript);

// The Chrome / Perfetto trace of the batches: one process per replica, one complete event per
// iteration with its prefill and decode tokens, and a counter track of the KV blocks in use.
std::string FormatServeTrace(const std::vector<IterationRecord>& iterations, int32_t replicas);

Status RunServePlan(const ServePlanSpec& spec, Transcript& transcript);

// The probes of every plan as a scatter (x: the TPOT at the SLO's percentile in ms, y: GPU-seconds
// per request, the inverse of the rate per GPU; lower is better on both), probes over the SLO
// crossed out, and the Pareto front of the rest: throughput per GPU against latency.
std::string FormatServePlanSvg(const ServePlanResult& result);

// `serve-plan --space vidur`: reads the traces (`spec.space_traces`/NAME.csv, cut to each
// trace's max_seq_len), searches, and writes the best configuration per model, trace and
// cluster (text or --json), then the rejections.
Status RunExplorerSearch(const ServePlanSpec& spec, Transcript& transcript);

}  // namespace stagecraft
