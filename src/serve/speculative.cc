#include "serve/speculative.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "core/units.h"
#include "model/transformer.h"
#include "serve/iteration_kernels.h"

namespace stagecraft {
namespace {

// The acceptance draws' generator is the workload's seed xor this (the first 64 bits of pi's
// fraction, a "nothing up my sleeve" constant), a stream apart from the arrivals' and lengths'.
constexpr uint64_t kAcceptanceStream = 0x243f6a8885a308d3ULL;

}  // namespace

Status ApplySpeculation(std::optional<int64_t> tokens, std::optional<double> acceptance,
                        const ModelSpec& model, EngineOptions& engine) {
  if (!tokens.has_value() && !acceptance.has_value()) return Status::Ok();
  if (!acceptance.has_value()) {
    return Error{"--speculative-tokens " + std::to_string(*tokens) +
                 " needs --acceptance-rate A, the probability that a draft token is accepted, "
                 "as measured for the draft on the workload (e.g. --acceptance-rate 0.85: "
                 "DeepSeek-V3 reports 85-90% for its second MTP token); stagecraft does not "
                 "guess it"};
  }
  if (!tokens.has_value()) {
    return Error{"--acceptance-rate " + FormatFixed(*acceptance, 3) +
                 " needs --speculative-tokens K, the draft tokens a decoding sequence proposes "
                 "per step (e.g. --speculative-tokens 1, DeepSeek-V3's one MTP module)"};
  }
  if (*tokens < 1 || *tokens > kMaxSpeculativeTokens) {
    return Error{"--speculative-tokens " + std::to_string(*tokens) + ": expected 1 to " +
                 std::to_string(kMaxSpeculativeTokens) +
                 " draft tokens per step (drop --speculative-tokens and --acceptance-rate for "
                 "no speculation)"};
  }
  if (!(*acceptance > 0 && *acceptance <= 1)) {
    return Error{"--acceptance-rate " + FormatFixed(*acceptance, 3) +
                 ": expected a probability in (0, 1] that a draft token is accepted (e.g. 0.8; "
                 "1 = every draft accepted, the best case)"};
  }
  if (!model.is_transformer() && !model.layers.empty()) {
    return Error{
        "--speculative-tokens: speculative decoding is modelled for transformers (an MTP "
        "module of the target's layer shape); a CSA2 layer list has none modelled (drop "
        "--speculative-tokens and --acceptance-rate)"};
  }
  engine.speculative_tokens = static_cast<int32_t>(*tokens);
  engine.acceptance_rate = *acceptance;
  return Status::Ok();
}

double ExpectedTokensPerStep(int64_t tokens, double acceptance) {
  if (acceptance >= 1) return static_cast<double>(tokens + 1);
  return (1 - std::pow(acceptance, static_cast<double>(tokens + 1))) / (1 - acceptance);
}

Status AttachMtpDraft(ReplicaModel& target) {
  // DeepSeek-V3 §2.2: the MTP module is one Transformer block (a MoE block for a MoE model),
  // its projection M_k of [h; embedding] (2h) to h, and the main model's embedding and head.
  TransformerSpec module = target.model;
  module.layers = 1;
  module.dense_layers = 0;
  module.window_layers = target.model.window_layers == target.model.layers ? 1 : 0;
  ServeShape shape = target.shape;
  shape.pp = 1;  // the module sits with the head, on the last stage
  shape.replicas = 1;
  EngineOptions engine = target.engine;
  engine.speculative_tokens = 0;
  auto draft = ShapeReplicaModel(module, target.cluster, shape, engine);
  if (!draft.ok()) return draft.error();
  ReplicaModel& mtp = draft.value();
  const double hidden = static_cast<double>(module.hidden);
  const double projection = 2.0 * hidden * hidden;
  const double per_gpu = engine.weight_bytes / shape.tp;
  // The projection runs once per draft token, beside the block (column-split over TP).
  KernelLayout layout;
  layout.tp = shape.tp;
  layout.weight_bytes = engine.weight_bytes;
  layout.fp8 = engine.fp8_compute;
  mtp.kernels.once.push_back(
      GemmKernel(layout, KernelRows::kTokens, hidden / shape.tp, 2.0 * hidden));
  // Its own weights: the block and the projection, less the embedding and the head it shares.
  const double embedding = EmbeddingParams(module, 0);
  const double shared = module.tied_embeddings ? embedding : 2.0 * embedding;
  mtp.weight_bytes_per_gpu += (projection - shared) * per_gpu;
  target.weight_bytes_per_gpu += mtp.weight_bytes_per_gpu;
  target.draft = std::make_shared<const ReplicaModel>(std::move(mtp));
  return Status::Ok();
}

double DraftSeconds(const ReplicaModel& draft, std::span<const DraftProposal> proposals) {
  int64_t steps = 0;
  for (const DraftProposal& proposal : proposals) steps = std::max(steps, proposal.tokens);
  double seconds = 0;
  for (int64_t step = 0; step < steps; ++step) {
    IterationWork work;
    for (const DraftProposal& proposal : proposals) {
      if (proposal.tokens <= step) continue;
      AddSequence(draft, 1, proposal.context + static_cast<double>(step), /*finishes=*/true, work);
    }
    seconds += IterationSeconds(draft, work).total_s;
  }
  return seconds;
}

double SpeculativeStep::seconds() const {
  return verify.total_s + static_cast<double>(drafts) * draft_step.total_s;
}

SpeculativeStep SpeculativeDecodeStep(const ReplicaModel& replica, int64_t batch, int64_t context) {
  SpeculativeStep step;
  if (!replica.draft) return step;
  step.drafts = replica.engine.speculative_tokens;
  const auto scaled = [batch](const IterationWork& one) {
    const double sequences = static_cast<double>(batch);
    return IterationWork{.new_tokens = one.new_tokens * sequences,
                         .sequences = one.sequences * sequences,
                         .context_tokens = one.context_tokens * sequences,
                         .attention_pairs = one.attention_pairs * sequences};
  };
  IterationWork verify;
  AddSequence(replica, static_cast<double>(step.drafts + 1), static_cast<double>(context),
              /*finishes=*/true, verify);
  verify.sequences += static_cast<double>(step.drafts);  // a logit per verified position
  step.verify = IterationSeconds(replica, scaled(verify));
  IterationWork draft;
  AddSequence(*replica.draft, 1, static_cast<double>(context), /*finishes=*/true, draft);
  step.draft_step = IterationSeconds(*replica.draft, scaled(draft));
  return step;
}

double MeanTokensPerStep(const ServeStats& stats) {
  if (stats.decode_steps == 0) return 0;
  return static_cast<double>(stats.decode_step_tokens) / static_cast<double>(stats.decode_steps);
}

std::string DescribeSpeculation(const ReplicaModel& replica, int64_t batch, int64_t context,
                                const ServeStats& stats) {
  const EngineOptions& engine = replica.engine;
  const int32_t tokens = engine.speculative_tokens;
  const SpeculativeStep step = SpeculativeDecodeStep(replica, batch, context);
  const auto ms = [](double seconds) { return FormatFixed(seconds * 1e3, 3); };
  return "  speculative decoding: " + std::to_string(tokens) + " draft token" +
         (tokens == 1 ? "" : "s") +
         " per step from an MTP module (1 decoder layer + the shared head; per GPU " +
         FormatGib(replica.draft->weight_bytes_per_gpu) + " GiB of weights, " +
         FormatFixed(replica.draft->kv_bytes_per_token_per_gpu, 0) +
         " B of KV per token), acceptance rate " + FormatFixed(engine.acceptance_rate, 3) +
         " (given)\n  tokens per verify step: " +
         FormatFixed(ExpectedTokensPerStep(tokens, engine.acceptance_rate), 3) +
         " expected, (1 - A^(K+1)) / (1 - A); " + FormatFixed(MeanTokensPerStep(stats), 3) +
         " measured over " + std::to_string(stats.decode_steps) + " decode steps\n" +
         "  verify step at batch " + std::to_string(batch) + ", context " +
         std::to_string(context) + ": " + ms(step.verify.total_s) + " ms (" +
         std::to_string(tokens + 1) + " tokens per sequence) + " + std::to_string(tokens) +
         " draft step" + (tokens == 1 ? "" : "s") + " of " + ms(step.draft_step.total_s) +
         " ms = " + ms(step.seconds()) + " ms\n";
}

Speculator::Speculator(const EngineOptions& engine, uint64_t seed)
    : tokens_(engine.speculative_tokens),
      acceptance_(engine.acceptance_rate),
      rng_(seed ^ kAcceptanceStream) {}

int64_t Speculator::Drafts(int64_t generated, int64_t output) const {
  return std::clamp<int64_t>(output - generated - 1, 0, tokens_);
}

int64_t Speculator::Accept(int64_t drafts) {
  // NextUnit is uniform in (0, 1]: at or below A with probability A (always at A = 1).
  int64_t accepted = 0;
  while (accepted < drafts && rng_.NextUnit() <= acceptance_) ++accepted;
  return accepted;
}

}  // namespace stagecraft
