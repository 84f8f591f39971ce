// The request-level discrete-event simulator behind `stagecraft serve` (doc/serving.md):
// requests arrive (Poisson, from a seeded SplitMix64), a router sends each to a replica (round
// robin or least outstanding requests), and each replica runs an engine loop as vLLM's V1
// scheduler does: every iteration first advances the running requests (decodes, and the rest of
// chunked prefills) within the token budget, preempting the latest admitted request when the
// paged KV cache has no free block (recompute: it returns to the front of the queue), then
// admits waiting requests while the budget, max_seqs and the free blocks allow (or, under a
// reservation, EngineOptions::Admission: while the free blocks cover what the running requests
// may still claim and the new one's prompt and output, TensorRT-LLM's GUARANTEED_NO_EVICT, or a
// share of its output, SGLang's new-token ratio). An iteration's time is the step-cost roofline
// of its work (step_cost.h). With speculative decoding a decoding sequence verifies its drafts
// in the step, K + 1 tokens within the budget and the blocks, and emits the accepted ones and
// one more (speculative.h). Deterministic given the seed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_table.h"
#include "core/progress.h"
#include "core/result.h"
#include "serve/step_cost.h"

namespace stagecraft {

// Tokens per request: fixed (low == high) or uniform in [low, high].
struct LengthDist {
  int64_t low = 0;
  int64_t high = 0;
  bool operator==(const LengthDist&) const = default;
};
// "512" or "256-1024"; errors name `flag`.
Result<LengthDist> ParseLengthDist(std::string_view text, const char* flag);
std::string FormatLengthDist(const LengthDist& dist);  // "512", "256-1024"

// One request of a trace file: when it arrives and its lengths.
struct TraceRequest {
  int64_t arrival_ns = 0;
  int64_t prompt = 0;
  int64_t output = 0;
  // A prefilled request (Workload::prefilled) handed off by a prefill instance: when its first
  // token came there, where its first gap between tokens starts (-1 = at its arrival).
  int64_t first_token_ns = -1;
  bool operator==(const TraceRequest&) const = default;
};
// A request trace as CSV: one request per line, `arrival_s,prompt_tokens,output_tokens`
// (arrival in seconds from the start, not decreasing; lengths 1 to 2^24), an optional header
// line of those three names, `#` comment lines. Errors name `source:line`.
Result<std::vector<TraceRequest>> ParseRequestTrace(std::string_view text,
                                                    const std::string& source);

// One request's lengths, as a length trace lists them (Vidur's processed traces).
struct RequestLengths {
  int64_t prompt = 0;
  int64_t output = 0;
};

struct Workload {
  // When not empty, these requests in this order; the rate, count, lengths and seed are unused.
  std::vector<TraceRequest> trace;
  // When not empty, each request's lengths are a seeded uniform draw from this table (a length
  // trace's rows, as Vidur's trace length generator samples them) instead of `prompt` and
  // `output`; arrivals stay Poisson at `rate_rps`. Not owned: it outlives the simulation.
  std::span<const RequestLengths> length_table;
  // How the requests come, as the benchmark's client sends them: kOpen, arrivals at `rate_rps`
  // (Poisson or gamma gaps) or at the trace's times; kClosed, `concurrency` requests in flight,
  // each completion sending the next at once (vLLM's benchmark_serving --max-concurrency with
  // an unbounded rate, genai-perf's and NIM's concurrency mode); kOffline, every request at
  // t = 0 (vLLM's benchmark_throughput). Closed and offline ignore `rate_rps` and
  // `arrival_cv`; the lengths are drawn as for kOpen.
  enum class Client : uint8_t { kOpen, kClosed, kOffline };
  Client client = Client::kOpen;
  int64_t concurrency = 0;  // kClosed: requests in flight (1 to requests)
  double rate_rps = 1.0;    // arrivals at the router, requests per second
  // Coefficient of variation of the gaps between arrivals: 1 = Poisson (exponential gaps);
  // otherwise gamma gaps of shape 1/cv^2 and the same mean (above 1: bursts), as DistServe's
  // and AlpaServe's workloads draw them.
  double arrival_cv = 1.0;
  // Requests arrive with their prompt's KV cache and first token (a decode-only instance of a
  // prefill/decode pair, DistServe): they need the prompt's blocks and decode from there.
  bool prefilled = false;
  int64_t requests = 1000;      // requests simulated
  LengthDist prompt{512, 512};  // prompt tokens
  LengthDist output{64, 64};    // output tokens (the first comes from the prefill)
  uint64_t seed = 1;            // SplitMix64 seed of arrivals and lengths
  // Shared prompt prefixes (system prompts, few-shot templates): each request draws one of
  // `prefix_groups` groups (0 = none) and its prompt is the group's `prefix_tokens` followed by
  // its own `prompt` tokens. A replica keeps the full KV blocks of a prefix it has computed
  // (vLLM's automatic prefix caching: only whole blocks are shared) and a later request of the
  // group skips their prefill; unused cached prefixes are evicted, least recently used first,
  // when blocks run short.
  int64_t prefix_groups = 0;
  int64_t prefix_tokens = 0;
  // Requests leave once the prefill made their first token (a prefill instance of a
  // disaggregated pair: the decode runs elsewhere).
  bool prefill_only = false;
  // A capacity probe's early stop (serve-plan --space): when above 0, the run ends as soon as
  // more requests have waited longer than this from arrival to first scheduled than the P99's
  // nearest rank allows, so the P99 scheduling delay is known to exceed it whatever the rest
  // does; ServeStats::stopped_late then says so and holds nothing else. A probe that meets the
  // bound runs to its end as without it.
  double stop_past_delay_s = 0;
};

// kKvAware: the cache-aware policy of SGLang's router (its model gateway's defaults: cache
// threshold 0.3, balance thresholds 64 requests absolute and 1.5 relative): when the load is
// imbalanced (the busiest replica's outstanding requests exceed the idlest's by more than 64
// and by more than 1.5 times) the least loaded replica; else the least loaded of the replicas
// holding the request's prefix, when it covers more than 0.3 of the prompt; else the least
// loaded.
enum class Routing : uint8_t { kRoundRobin, kLeastOutstanding, kKvAware };
// Their names (--routing, the serve reports).
inline constexpr EnumTable<Routing> kRoutingNames = {
    {"round-robin", Routing::kRoundRobin},
    {"least-outstanding", Routing::kLeastOutstanding},
    {"kv-aware", Routing::kKvAware}};
constexpr const char* RoutingName(Routing routing) { return kRoutingNames.Name(routing); }

// A request meets the SLO when its TTFT and its TPOT are both within these.
struct Slo {
  double ttft_s = 0.4;   // DistServe Fig. 1: P90 TTFT 0.4 s
  double tpot_s = 0.04;  // DistServe Fig. 1: P90 TPOT 0.04 s
  // 50, 90 or 99: the run is also judged by that percentile of its TTFT and its TPOT (--slo
  // ...,percentile=P); 0 = per request only.
  int32_t percentile = 0;
};

struct Percentiles {
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double mean = 0;
  // The p50, p90 or p99. REQUIRES: percentile is 50, 90 or 99.
  double At(int32_t percentile) const {
    return percentile == 50 ? p50 : percentile == 90 ? p90 : p99;
  }
};

// One engine iteration of one replica, for the Chrome trace of the batches.
struct IterationRecord {
  int32_t replica = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t prefill_tokens = 0;  // prompt (or recompute) tokens of the batch
  int64_t decode_tokens = 0;   // one per decoding sequence
  int64_t kv_blocks = 0;       // the replica's blocks in use during the iteration
};

struct ServeStats {
  int64_t requests = 0;
  // Stopped early (Workload::stop_past_delay_s): the P99 scheduling delay exceeds the bound;
  // nothing else is filled in.
  bool stopped_late = false;
  double span_s = 0;          // first arrival to last completion
  double throughput_rps = 0;  // requests / span
  double output_tokens_per_s = 0;
  double total_tokens_per_s = 0;  // (prompt + output tokens) / span (benchmark_serving's total)
  Percentiles ttft_s;             // arrival to first token
  Percentiles tpot_s;             // (finish - first token) / (output - 1), output > 1 only
  // Inter-token latency: every gap between two consecutive output tokens of a request, over
  // all tokens of all requests (token_gaps.h; a decode stalled by another request's prefill
  // chunk shows here, where TPOT averages it over the request). Left zero by SummarizeRequests.
  Percentiles itl_s;
  Percentiles e2e_s;          // arrival to last token
  Percentiles queue_s;        // arrival to the first iteration that schedules it
  double slo_attainment = 0;  // share of requests meeting both SLOs
  double goodput_rps = 0;     // requests meeting both SLOs / span
  double goodput_rps_per_gpu = 0;
  int64_t iterations = 0;
  int64_t preemptions = 0;
  double kv_utilization_mean = 0;  // time-weighted share of the replicas' KV blocks in use
  double kv_utilization_peak = 0;
  // Little's law, measured: the time-average of requests in the system (the integral of their
  // count over the span, / span) and the sum of every request's time in the system, in ns.
  double mean_in_system = 0;
  int64_t in_system_integral_ns = 0;
  int64_t e2e_sum_ns = 0;
  // Shared prefixes: prompt tokens whose KV came from a replica's prefix cache, over all
  // prompt tokens (0 without prefix groups).
  double prefix_hit_rate = 0;
  // Decode steps, one per decoding sequence per iteration, and the tokens they emitted (the
  // prefill's first tokens apart): equal without speculative decoding; with it, their ratio is
  // the mean tokens per verify step (speculative.h).
  int64_t decode_steps = 0;
  int64_t decode_step_tokens = 0;
  // Every request's latencies, ascending (the report's CDFs); TPOT for output > 1 only.
  std::vector<double> ttft_sorted_s;
  std::vector<double> tpot_sorted_s;
  std::vector<double> e2e_sorted_s;
};

// One request's times (ns from the run's start) and lengths.
struct RequestTimes {
  int64_t arrival_ns = 0;
  int64_t first_scheduled_ns = 0;
  int64_t first_token_ns = 0;
  int64_t finish_ns = 0;
  int64_t prompt = 0;
  int64_t output = 0;
};

// The latency percentiles, throughput, SLO attainment and goodput of finished requests over
// the span from the first arrival to `end_ns`, goodput per GPU over `gpus`; the engine's counts
// (iterations, KV use, Little's integral) are left zero.
ServeStats SummarizeRequests(const std::vector<RequestTimes>& requests, const Slo& slo,
                             int64_t gpus, int64_t end_ns);

// Bad input: a request longer than a replica's KV capacity (it could never run), an empty
// workload, a rate or lengths out of range.
// `iterations`, when given, receives every iteration in start order; `times` every request's
// times, in arrival order.
// `progress`, when given, is told the finished requests (core/progress.h).
Result<ServeStats> SimulateServing(const ReplicaModel& replica, const Workload& workload,
                                   Routing routing, const Slo& slo,
                                   std::vector<IterationRecord>* iterations = nullptr,
                                   std::vector<RequestTimes>* times = nullptr,
                                   const ProgressSink& progress = nullptr);

}  // namespace stagecraft
