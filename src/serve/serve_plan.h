// `stagecraft serve-plan` (doc/serving.md): which serving layout of a transformer on N GPUs
// serves the most requests per second per GPU while the TTFT and the TPOT at the SLO's
// percentile (P90 by default) stay within their bounds. Every tp (dividing the heads, within a
// node) x pp (dividing the layers) with tp x pp <= N is a candidate twice: colocated, its replicas
// filling N, with the highest rate that meets both SLOs (doubling, then bisection, each probe a
// request simulation of one replica at its share of the rate: random routing splits a Poisson
// stream into Poisson streams); and disaggregated (DistServe), its instances split into
// prefill-only and decode-only ones, each phase's rate simulated apart, the best split then
// simulated end to end (disaggregated_sim.h) and its rate lowered until both percentiles hold
// there. Rejections are counted by reason. A MoE model adds EP layouts (ep = tp x d attention
// data-parallel groups, d >= 2, step_cost.h ServeShape::ep), colocated only; an ep not dividing the
// routed experts is a rejection counted. The engine's batch limits are searched for the best
// colocated layouts (kRefinedLayouts): every token budget x max_num_seqs of kTokenBudgets x
// kMaxSeqs, each layout keeping its best. A closed-loop or offline client replaces the rate search
// (ServePlanSetup).
// `--space vidur` searches Vidur's space instead (explorer_search.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/progress.h"
#include "core/result.h"
#include "hardware/cluster_spec.h"
#include "model/model_spec.h"
#include "serve/request_sim.h"
#include "serve/step_cost.h"

namespace stagecraft {

// The engine's batch limits searched for the best colocated layouts: vLLM's
// max_num_batched_tokens (the chunk a long prompt is cut into, and with it the prefill work that
// can stall the decodes of an iteration) and max_num_seqs (the decode batch), around its
// defaults 8192 and 256 (vllm/engine/arg_utils.py).
inline constexpr size_t kRefinedLayouts = 2;
inline constexpr int64_t kTokenBudgets[] = {1024, 2048, 8192, 16384};
inline constexpr int32_t kMaxSeqs[] = {128, 256, 512};

// The lowest per-replica rate a probe tries; below it a layout "meets no rate".
inline constexpr double kLowestRateRps = 0.05;

// How long a probe's arrivals last, in units of the SLO's delay (ProbeRequests). At a rate
// (1 + d) times what the replica serves in steady state the queue grows by d / (1 + d) of the
// arrivals, so the P90 request waits about 0.9 x N x d / ((1 + d) x rate) after N arrivals;
// 20 delays' worth of arrivals makes that wait exceed the delay from d = 6% on, so a probe
// cannot pass by draining a short burst faster than its rate could be sustained.
inline constexpr double kProbeDelays = 20;

// The bounds a plan must meet at a percentile of its requests' TTFT and TPOT (--slo
// ttft=DURATION,tpot=DURATION,percentile=P, or ttft_p90=DURATION,tpot_p90=DURATION).
struct PercentileSlo {
  double ttft_s = 0;
  double tpot_s = 0;
  int32_t percentile = 90;  // 50, 90 or 99
};

// What serve-plan searches for: the GPUs to fill, the bounds, the workload of each probe (its
// lengths, requests and seed) and the engine's formats and batching.
struct ServePlanSetup {
  int32_t gpus = 0;
  PercentileSlo slo;
  // Its client: the open loop searches each layout's highest rate. A closed loop
  // (Workload::Client::kClosed, `concurrency` requests in flight, 1 to `requests`) or offline
  // (every request at t = 0) simulates each colocated layout once, all its replicas behind
  // least-outstanding routing, and ranks by output tokens per second per GPU: the closed loop
  // among the layouts whose percentiles meet the SLO, offline among all (no SLO). Neither
  // tries disaggregated placements (serve's clients other than the open loop are colocated).
  Workload workload;
  EngineOptions engine;
  // Whether the best colocated layouts also try the other token budgets (kTokenBudgets; chunked
  // batching only) and max_num_seqs (kMaxSeqs); false = the engine's, as the user gave it.
  bool search_token_budgets = true;
  bool search_max_seqs = true;
  // The layouts and batch limits evaluated (core/progress.h); nullptr: none.
  ProgressSink progress;
};

// One simulated rate of a layout (all its replicas) and what it gave.
struct RateProbe {
  double rate_rps = 0;
  double ttft_s = 0;  // at the SLO's percentile
  double tpot_s = 0;
  bool meets = false;
};

struct ServePlan {
  // Colocated: `shape.replicas` replicas each prefill and decode. Disaggregated (DistServe):
  // prefill_instances + decode_instances instances of tp x pp GPUs (shape.replicas, their sum).
  bool disaggregated = false;
  int64_t prefill_instances = 0;
  int64_t decode_instances = 0;
  double kv_transfer_s = 0;  // disaggregated: a prompt's KV from prefill to decode GPUs
  ServeShape shape;
  double rate_rps = 0;             // the highest rate meeting both SLOs, all replicas
  double goodput_rps_per_gpu = 0;  // rate / GPUs used
  // At the workload's closed-loop or offline client (ServePlanSetup): the run's requests per
  // second (in rate_rps and, per GPU, goodput_rps_per_gpu) and output tokens per second; 0 with
  // the open loop.
  double output_tokens_per_s = 0;
  double output_tokens_per_s_per_gpu = 0;
  double ttft_s = 0;  // at that rate (or client), the SLO's percentile
  double tpot_s = 0;
  int64_t kv_capacity_tokens = 0;
  // The engine's batch limits (per engine: an attention DP group's own): max_num_batched_tokens
  // and max_num_seqs.
  int64_t token_budget = 0;
  int32_t max_seqs = 0;
  std::vector<RateProbe> probes;  // every rate tried, in order
};

struct ServePlanResult {
  std::string model;
  int64_t candidates = 0;
  int32_t percentile = 90;                    // the SLO's: the plans' ttft_s and tpot_s are at it
  std::vector<ServePlan> plans;               // best first
  std::map<std::string, int64_t> rejections;  // reason -> candidates
  // The engine's batch limits every layout was searched at; whether the token budget was also
  // varied for the best colocated ones (chunked batching; prefill-first keeps its budget).
  int64_t default_token_budget = 0;
  int32_t default_max_seqs = 0;
  bool token_budgets_searched = false;
  bool max_seqs_searched = false;
  // For an SLO no layout meets: the lowest TTFT and TPOT at the SLO's percentile any feasible
  // layout reached at the lowest rate tried (or at the closed loop's concurrency).
  double best_ttft_s = 0;
  double best_tpot_s = 0;
};

Result<ServePlanResult> PlanServing(const ModelSpec& model, const ClusterSpec& cluster,
                                    const ServePlanSetup& setup);

// The requests a serve-plan probe at `rate_rps` (per replica) simulates: the workload's, or
// more, so that the arrivals span 20 times the SLO's delay (the TTFT bound; with it infinite, a
// decode-only pool whose queueing shows in the TPOT, the TPOT bound times the mean output tokens
// after the first), at most 20,000. doc/serving.md says why.
int64_t ProbeRequests(const Workload& workload, double rate_rps, double ttft_s, double tpot_s);

}  // namespace stagecraft
