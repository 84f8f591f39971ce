// Speculative decoding in serving (doc/serving.md, "Speculative decoding"): each decoding
// sequence verifies up to K draft tokens per step, accepted each with the user's probability A,
// so it emits (1 - A^(K+1)) / (1 - A) tokens per step on average for the price of a K + 1 token
// verify pass through the target and K sequential steps of the draft. The draft is DeepSeek-V3's
// multi-token-prediction (MTP) module: one decoder layer of the target's shape, a 2h x h
// projection and the target's shared head (DeepSeek-V3 technical report §2.2), served as vLLM's
// `deepseek_mtp` and SGLang's NEXTN methods run it, one token per sequence per draft step.
// The replica owns its draft (step_cost.h ReplicaModel::draft); the request simulator asks
// `Speculator` how many drafts a sequence verifies, how many are accepted and what drafting costs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/result.h"
#include "core/splitmix.h"
#include "model/model_spec.h"
#include "serve/request_sim.h"
#include "serve/step_cost.h"

namespace stagecraft {

// The most draft tokens per step accepted: 16. Past it, at any acceptance below 1, the extra
// drafts are almost never reached (A^16 < 3% at A = 0.8) and only add verify work.
inline constexpr int64_t kMaxSpeculativeTokens = 16;

// --speculative-tokens K --acceptance-rate A into `engine`: both or neither; K in 1 to 16, A in
// (0, 1] (1: every draft accepted, the best case, K + 1 tokens per step). A CSA2 layer list is
// refused (its layers have no MTP module modelled). Bad input names the flag, the value and what
// would work.
Status ApplySpeculation(std::optional<int64_t> tokens, std::optional<double> acceptance,
                        const ModelSpec& model, EngineOptions& engine);

// Expected tokens a sequence emits per verify step with K drafts each accepted with probability
// A, independently, the first rejection ending the run (Leviathan et al., "Fast Inference from
// Transformers via Speculative Decoding", ICML 2023, eq. 1): (1 - A^(K+1)) / (1 - A); K + 1 at
// A = 1.
double ExpectedTokensPerStep(int64_t tokens, double acceptance);

// Builds the MTP draft of `target` (the target's model, shape and engine; its KV not sized yet)
// and charges it on the target: the module's layer and projection weights and its layer's KV
// per token on the last stage (the head and the embedding are the target's, shared). The draft
// is a one-stage replica of the same tp and ep; its `weight_bytes_per_gpu` is the module's own
// weights per GPU. REQUIRES: target.engine.speculative_tokens > 0.
Status AttachMtpDraft(ReplicaModel& target);

// One sequence's proposal after an iteration: the draft tokens it proposes for its next step and
// its context when the draft starts.
struct DraftProposal {
  double context = 0;
  int64_t tokens = 0;
};

// The draft's time in one iteration: step s of K runs the MTP module once for every sequence
// proposing more than s tokens, each one token at its context + s (the steps are sequential:
// each feeds the next its token).
double DraftSeconds(const ReplicaModel& draft, std::span<const DraftProposal> proposals);

// The verify pass and the draft's steps of a decode batch of `batch` sequences at `context`:
// each sequence's K + 1 tokens and logits through the target, then K draft steps.
struct SpeculativeStep {
  IterationCost verify;
  IterationCost draft_step;  // one step of the MTP module over the batch
  double seconds() const;    // verify + K draft steps
  int64_t drafts = 0;
};
SpeculativeStep SpeculativeDecodeStep(const ReplicaModel& replica, int64_t batch, int64_t context);

// The tokens a run's decode steps emitted per step (ServeStats::decode_step_tokens over
// decode_steps); 0 without decode steps. Below the formula by the steps near a request's end,
// whose drafts are cut to its remaining output.
double MeanTokensPerStep(const ServeStats& stats);

// `serve`'s lines on speculation: the draft, the acceptance given, the tokens per step expected
// and measured in the run, and the verify and draft steps of a decode batch of `batch` at
// `context` (serve.h LargestDecode's).
std::string DescribeSpeculation(const ReplicaModel& replica, int64_t batch, int64_t context,
                                const ServeStats& stats);

// The request simulator's side of speculation: how many drafts a decoding sequence verifies and
// how many of them are accepted, each step. The acceptances are drawn, not averaged: a step
// accepts the leading run of K Bernoulli(A) draws, so requests' TPOTs spread as real runs'
// do and a step's emitted tokens are whole; the draws come from a SplitMix64 of their own,
// seeded from the workload's seed, so a run is deterministic for a seed and its arrivals and
// lengths are those of the same run without speculation.
class Speculator {
 public:
  Speculator(const EngineOptions& engine, uint64_t seed);
  // Drafts a sequence that has generated `generated` of its `output` tokens proposes: K, fewer
  // near its end (no draft past its last output token); 0 without speculation.
  int64_t Drafts(int64_t generated, int64_t output) const;
  // Of `drafts` verified, those accepted.
  int64_t Accept(int64_t drafts);

 private:
  int64_t tokens_ = 0;
  double acceptance_ = 0;
  SplitMix64 rng_;
};

}  // namespace stagecraft
