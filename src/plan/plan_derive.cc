// The candidates the planner derives from the screened costs (plan/plan_search.h), each then
// costed and screened as a candidate of its own: Megatron's block recomputation of the fewest
// layers that fit, Megatron's uneven first and last stages and layout strings, torchtitan's
// split weights and module lists.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

#include "plan/plan_search.h"

namespace stagecraft {
namespace {

// torchtitan's own knob (pipeline_parallel.py): the embedding and the head count as
// first_less and last_less layers in its split (default 1 and 1). Every pair 0-3 that
// torchtitan accepts is tried under the schedule's placement, and the one with the least
// slowest rank kept where it beats the default by more than 1% of a decoder.
void DeriveTorchtitanSplits(const PlanShape& shape, const Screen& screen, const Candidate& c,
                            Time step, Time cutoff, std::vector<Candidate>& derived) {
  const Costed& costed = *screen.CostsOf(c);
  if (!costed.ok || costed.decoder <= Time() || step < Time()) return;
  const int32_t stages = c.pp * c.vpp;
  const std::vector<int32_t> parent = c.StageCounts(shape.layers);
  const int64_t tie = std::max<int64_t>(1, costed.decoder.ns() / 100);
  int64_t best = SlowestRankNs(parent, c, costed);
  std::vector<int32_t> best_counts = parent;
  std::optional<std::pair<int32_t, int32_t>> chosen;
  for (int32_t first = 0; first <= 3; ++first) {
    for (int32_t last = 0; last <= 3; ++last) {
      auto counts = TorchtitanTransformerCounts(shape.layers, stages, first, last);
      if (!counts.ok()) continue;
      const int64_t time = SlowestRankNs(counts.value(), c, costed);
      if (time + tie <= best) {
        best = time;
        best_counts = std::move(counts).value();
        chosen = std::make_pair(first, last);
      }
    }
  }
  if (chosen) {
    Candidate weighted = c;
    weighted.first_less = chosen->first;
    weighted.last_less = chosen->second;
    // As for Megatron's splits: derived only where the share it takes off could reach the
    // simulated best.
    const std::vector<int32_t> counts =
        TorchtitanTransformerCounts(shape.layers, stages, chosen->first, chosen->second).value();
    if (Promising(counts, parent, c, costed, step, cutoff)) {
      derived.push_back(weighted);
    }
  }
  // Any split, as module_fqns_per_model_part (which pipeline_llm takes in place of its
  // splitter): the exact balance under the schedule's placement, kept where it beats the
  // best weights (the weights win a tie: one knob against a list of every module) without
  // lengthening a looped schedule's chain of levels.
  std::vector<int32_t> balanced = BalancedTransformerCounts(
      shape.layers, c.pp, c.vpp, costed.decoder, costed.embedding, costed.head, PlacementOf(c));
  if (balanced.empty() || SlowestRankNs(balanced, c, costed) + tie > best ||
      LengthensTheChain(balanced, best_counts, c, costed, tie) ||
      !Promising(balanced, parent, c, costed, step, cutoff)) {
    return;
  }
  Candidate layout = c;
  layout.layout_counts = std::move(balanced);
  derived.push_back(std::move(layout));
}

// Megatron's first/last stage counts and its layout string for `c` (see DeriveSplits).
void DeriveMegatronSplits(const PlanShape& shape, const Screen& screen, const Candidate& c,
                          Time step, Time cutoff, std::vector<Candidate>& derived) {
  const Costed& costed = *screen.CostsOf(c);
  if (!costed.ok || costed.decoder <= Time() || step < Time()) return;
  const std::vector<int32_t> parent = c.StageCounts(shape.layers);
  const auto promising = [&](const std::vector<int32_t>& counts) {
    return Promising(counts, parent, c, costed, step, cutoff);
  };
  const int64_t layers = shape.layers;
  const int64_t decoder = costed.decoder.ns();
  // Where two splits differ by less than 1% of one decoder (below what the model resolves),
  // the one nearer the even split (fewer stages at the maximum).
  const int64_t tie = std::max<int64_t>(1, decoder / 100);
  // The split it runs: the even one, or (pp x vpp not dividing the layers) its layout.
  int64_t best = SlowestTransformerRank(c.StageCounts(shape.layers), c.pp, costed.decoder,
                                        costed.embedding, costed.head)
                     .ns();
  if (c.vpp == 1 && c.pp >= 3) {
    const int64_t middle_stages = c.pp - 2;
    const auto slowest = [&](int64_t first, int64_t last) {
      const int64_t middle = (layers - first - last) / middle_stages;
      return std::max({costed.embedding.ns() + first * decoder, last * decoder + costed.head.ns(),
                       middle * decoder});
    };
    const int64_t even = layers / c.pp;
    int64_t best_first = even;
    int64_t best_last = even;
    int64_t best_distance = 0;
    for (int64_t first = 1; first < layers; ++first) {
      for (int64_t last = 1; first + last + middle_stages <= layers; ++last) {
        if ((layers - first - last) % middle_stages != 0) continue;
        const int64_t time = slowest(first, last);
        const int64_t distance = std::abs(first - even) + std::abs(last - even);
        const bool faster = time + tie <= best;
        const bool as_fast_and_nearer = time < best + tie && distance < best_distance;
        if (faster || as_fast_and_nearer) {
          best = std::min(best, time);
          best_distance = distance;
          best_first = first;
          best_last = last;
        }
      }
    }
    if (best_first != even || best_last != even) {
      Candidate uneven = c;
      uneven.first_stage_layers = static_cast<int32_t>(best_first);
      uneven.last_stage_layers = static_cast<int32_t>(best_last);
      uneven.layout_counts.clear();
      if (promising(uneven.StageCounts(shape.layers))) derived.push_back(uneven);
    }
  }
  std::vector<int32_t> balanced = BalancedTransformerCounts(
      shape.layers, c.pp, c.vpp, costed.decoder, costed.embedding, costed.head);
  if (balanced.empty()) return;
  const Time time =
      SlowestTransformerRank(balanced, c.pp, costed.decoder, costed.embedding, costed.head);
  if (time.ns() + tie > best || balanced == c.layout_counts ||
      LengthensTheChain(balanced, parent, c, costed, tie) || !promising(balanced)) {
    return;
  }
  Candidate layout = c;
  layout.layout_counts = std::move(balanced);
  derived.push_back(std::move(layout));
}

}  // namespace

// Megatron's block recomputation (--recompute-method block --recompute-num-layers N): the
// first N layers of each chunk recompute, the rest keep their activations, so time grows and
// memory falls with N, layer by layer. Where a layout does not fit without recomputation but
// does with all of it, the best N is the fewest layers that fit: found from the two screened
// ends (activations falling linearly in N), then costed and screened as a candidate of its own.
std::vector<Candidate> DeriveBlockRecompute(const PlanSpec& spec, const PlanShape& shape,
                                            const Screen& screen) {
  std::vector<Candidate> derived;
  for (const Candidate& c : screen.legal()) {
    // Megatron, and Megatron-DeepSpeed without pipeline stages (its Megatron model, written with
    // --no-pipeline-parallel: DeepSpeed's pipe model has no block method).
    const bool block =
        c.engine == Engine::kMegatron || (c.engine == Engine::kDeepSpeed && c.pp == 1);
    if (!block || c.recompute != Recompute::kFull) continue;
    const int32_t chunk_layers = shape.layers / std::max(1, c.pp * c.vpp);
    if (chunk_layers < 2) continue;
    Candidate twin = c;
    twin.recompute = Recompute::kNone;
    const Costed* found = screen.CostsOf(twin);
    if (found == nullptr) continue;
    const Costed& none = *found;
    const Costed& full = *screen.CostsOf(c);
    if (!none.ok || !full.ok || full.capacity <= 0) continue;
    const int64_t chunks = ChunksInFlight(c);
    const int64_t last_chunks = LastRankChunks(c, chunks);
    const double inflight = static_cast<double>(chunks);
    const double budget = Budget(spec, full.capacity);
    const double without =
        none.states + ScreenedActivations(none, chunks, last_chunks) + none.reserve;
    // Any recomputing layer adds its working set during its backward (Costed::recompute).
    const double with_all = full.states + ScreenedActivations(full, chunks, last_chunks) +
                            static_cast<double>(full.recompute) + full.reserve;
    const double saved_per_layer =
        inflight * static_cast<double>(none.chunk_activations - full.chunk_activations) /
        chunk_layers;
    if (without <= budget || with_all > budget || saved_per_layer <= 0) continue;
    const double layers =
        std::ceil((without + static_cast<double>(full.recompute) - budget) / saved_per_layer);
    if (layers >= chunk_layers) continue;
    Candidate partial = c;
    partial.recompute_num_layers = static_cast<int32_t>(std::max(1.0, layers));
    derived.push_back(partial);
  }
  return derived;
}

// Megatron's uneven splits. The first stage also holds the embedding and the last the head
// and the loss, so the even split leaves them the slowest. From a layout's screened costs (one
// decoder's F + B with its collectives, and what the embedding and the head add), two
// derivations, each costed and screened as a candidate of its own where it beats the even
// split's slowest rank:
// - vpp 1: --decoder-first-pipeline-num-layers F --decoder-last-pipeline-num-layers L
//   (megatron/core/transformer/transformer_config.py: the middle stages' decoders even); every
//   (F, L) whose middle divides evenly is tried and the one with the least slowest stage kept;
// - any vpp: --pipeline-model-parallel-layout (pipeline_parallel_layer_layout.py, which takes
//   any count per virtual stage): the exact balance of BalancedTransformerCounts, kept where it
//   also beats the first/last split (the simpler flags win a tie).
// A split can only make a layout faster by what it takes off the slowest rank (or chunk), so
// a parent whose screened step, scaled by that share, is no faster than the screen's
// simulate-th best cannot reach the exact simulation; its splits are not derived.
std::vector<Candidate> DeriveSplits(const PlanShape& shape, const Screen& screen) {
  const Time cutoff = screen.SimulatedCutoff();
  std::vector<Candidate> derived;
  for (size_t index = 0; index < screen.legal().size(); ++index) {
    const Candidate& c = screen.legal()[index];
    if (c.engine == Engine::kTorchtitan && c.pp >= 2) {
      DeriveTorchtitanSplits(shape, screen, c, screen.step(index), cutoff, derived);
    } else if (c.engine == Engine::kMegatron && c.pp >= 2) {
      DeriveMegatronSplits(shape, screen, c, screen.step(index), cutoff, derived);
    }
  }
  return derived;
}

}  // namespace stagecraft
