// `stagecraft serve-plan --space vidur` (doc/serving.md): every configuration of Vidur's shipped
// config explorer (explorer_space.h, 4,374 of them) gets its capacity as Vidur-Search defines it
// (vidur/config_optimizer/config_explorer/capacity_search.py and main.py @ e2d00e9a): the
// highest arrival rate, all replicas together, at which the P99 scheduling delay (arrival to
// the first iteration that schedules the request) stays within 5 s. Each probe simulates one
// replica at its share of the rate (request_sim.h) with request lengths drawn from the trace's
// length table (cut to the trace's max_seq_len as Vidur cuts them); the search starts at the
// trace's start_qps, doubles or halves until it brackets the capacity, then bisects to 1/64.
// The schedulers map onto the request simulator's batching: Vidur's `vllm` is vLLM V0's whole
// prompts first (token budget = max_seq_len, as Vidur sets max_tokens_in_batch), `sarathi` is
// chunked prefill with the chunk as the token budget; both cap the requests a replica runs at
// the configuration's batch size x pp (Vidur's batch_size_cap). Where the models differ: a
// pipeline replica here runs one batch at a time through all its stages (Vidur keeps pp
// micro-batches in flight), and iteration times come from stagecraft's roofline step cost, not
// Vidur's profiled operators.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "serve/explorer_space.h"
#include "serve/request_sim.h"

namespace stagecraft {

// A capacity probe's arrivals span at least this many delay bounds (explorer_search.cc says why).
inline constexpr double kExplorerWindowSlos = 4;

struct ExplorerSearchSpec {
  ExplorerSpace space = VidurShippedSpace();
  // Each trace's length table by trace name (ParseLengthTrace), and where it came from.
  std::map<std::string, std::vector<RequestLengths>> traces;
  std::map<std::string, std::string> trace_sources;
  // Keep only the configurations matching every key=value (model, trace, cluster, scheduler as
  // "vllm" or "sarathi-512", tp, pp, batch), e.g. "model=llama-2-7b-hf,cluster=a40"; "" = all.
  std::string filter;
  int64_t requests = 1000;   // simulated per probe (Vidur: 16,000)
  double delay_slo_s = 5.0;  // P99 scheduling delay bound (main.py's defaults)
  uint64_t seed = 1;
  int32_t jobs = 1;  // threads
  // Told how many configurations have been taken, of how many; unset = quiet.
  std::function<void(size_t done, size_t total)> progress;
};

struct ExplorerOutcome {
  ExplorerCandidate candidate;
  std::string rejection;    // empty when a capacity was found
  double capacity_rps = 0;  // all replicas
  double rps_per_gpu = 0;   // over the replicas' GPUs
  double delay_p99_s = 0;   // at the capacity
  double ttft_p90_s = 0;
  double tpot_p90_s = 0;
  int64_t kv_capacity_tokens = 0;
  int32_t probes = 0;
};

struct ExplorerResult {
  int64_t space_size = 0;                 // configurations in the space
  std::vector<ExplorerOutcome> outcomes;  // the ones the filter kept, in enumeration order
  std::map<std::string, int64_t> rejections;
};

// A length trace: an optional header naming num_prefill_tokens and num_decode_tokens (Vidur's
// processed traces; other columns such as arrived_at are skipped), `#` comments, then one row
// per request. Errors name `source:line`.
Result<std::vector<RequestLengths>> ParseLengthTrace(std::string_view text,
                                                     const std::string& source);
// Vidur's cut: a request longer than `max_tokens` loses the excess from its prompt and its
// output in proportion (each rounded up), keeping at least one token of each.
std::vector<RequestLengths> CutToMaxTokens(std::vector<RequestLengths> rows, int64_t max_tokens);

Result<ExplorerResult> SearchExplorerSpace(const ExplorerSearchSpec& spec);

// "vllm", "sarathi-512".
std::string ExplorerSchedulerName(const ExplorerSpace::Scheduler& scheduler);

}  // namespace stagecraft
