// The screen's costs of a candidate: one short run of its layout prepared through the run
// library, read for the slowest chunk, the tail and the memory (plan/plan_search.h).
#include <algorithm>
#include <cmath>

#include "memory/model_states.h"
#include "plan/plan_search.h"
#include "run/run_setup.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace {

// The V-shape schedules (dualpipev, zb-v, v-half, v-min): two chunks a rank, placed in a V.
bool VShaped(const Candidate& c) { return c.pp > 1 && RequiredChunksPerRank(c.schedule) == 2; }

}  // namespace

CostKey KeyOf(const Candidate& c) {
  return {static_cast<int>(c.engine),
          c.tp,
          c.pp,
          c.dp,
          c.cp,
          c.ep,
          c.vpp,
          c.micro_batch_size,
          static_cast<int>(c.recompute),
          c.recompute_num_layers,
          c.recompute_uniform,
          c.zero_stage,
          VShaped(c),
          c.first_stage_layers,
          c.last_stage_layers,
          c.layout_counts,
          c.first_less,
          c.last_less,
          static_cast<int>(c.partition),
          static_cast<int>(c.state_policy)};
}

// The planner's run of `candidate`: the loaded config with the candidate's layout applied.
RunSpec RunOf(const PlanSpec& spec, const std::shared_ptr<const LoadedConfig>& base,
              const Candidate& candidate) {
  RunSpec run = spec.run;
  run.loaded = base;
  return CandidateRun(run, candidate);
}

Costed Cost(const PlanSpec& spec, const std::shared_ptr<const LoadedConfig>& base,
            const Candidate& candidate) {
  Candidate probe = candidate;              // a short run of the same layout
  const bool v_shape = VShaped(candidate);  // the V's costs, from DualPipeV's placement
  probe.schedule = v_shape ? "dualpipev" : candidate.vpp > 1 ? "interleaved-1f1b" : "1f1b";
  probe.microbatches = candidate.pp == 1 ? 1 : v_shape ? 2 * candidate.pp : candidate.pp;
  auto prepared = PrepareRun(RunOf(spec, base, probe));
  Costed costed;
  if (!prepared.ok()) return costed;
  const PreparedRun& r = prepared.value();
  const std::vector<StageCollectives>& collectives = r.parallel_plan.collectives;
  const std::vector<LayerSpec>& layers = r.config.model.layers;
  if (!layers.empty() && layers.back().kind == LayerKind::kHead) {
    costed.head_activations = layers.back().activation_bytes;
  }
  std::vector<Time> stage_totals;
  Time dp_tail;
  Time gather;
  for (size_t stage = 0; stage < r.stage_costs.size(); ++stage) {
    const StageCost& cost = r.stage_costs[stage];
    Time f = cost.forward;
    Time b = cost.backward();
    if (stage < collectives.size()) {
      const StageCollectives& c = collectives[stage];
      f += c.tp_forward + c.cp_forward + c.ep_forward;
      b += c.tp_backward + c.cp_backward + c.ep_backward;
      const int32_t units = std::max(1, c.shard_units);
      f += Time::Nanoseconds(c.shard_gather.ns() / units);
      if (c.shard_gather_backward) b += Time::Nanoseconds(c.shard_gather.ns() / units);
      const Time reduce = c.dp_buckets.empty() ? c.dp_reduce : c.dp_buckets.back().second;
      dp_tail = std::max(dp_tail, reduce + c.shard_reduce);
      gather = std::max(gather, c.first_gather);
    }
    stage_totals.push_back(f + b);
    if (f + b > costed.forward + costed.backward) {
      costed.forward = f;
      costed.backward = b;
      costed.weight_grad = cost.weight_grad;
    }
    const bool last = stage + 1 == r.stage_costs.size();
    costed.chunk_activations = std::max(
        costed.chunk_activations, cost.activation_bytes - (last ? costed.head_activations : 0));
    costed.recompute = std::max(costed.recompute, cost.recompute_bytes);
  }
  const std::vector<int32_t>& counts = r.config.parallel.layer_counts;
  if (stage_totals.size() >= 3 && counts.size() == stage_totals.size() && counts[1] > 0) {
    const int64_t per_decoder = stage_totals[1].ns() / counts[1];
    costed.decoder = Time::Nanoseconds(per_decoder);
    costed.embedding = stage_totals.front() - Time::Nanoseconds(per_decoder * (counts.front() - 1));
    costed.head = stage_totals.back() - Time::Nanoseconds(per_decoder * (counts.back() - 1));
  }
  Time optimizer;
  for (Time step : r.parallel_plan.optimizer_step) optimizer = std::max(optimizer, step);
  costed.tail = dp_tail + optimizer + gather;
  for (size_t rank = 0; rank < r.parallel_plan.rank_params.size(); ++rank) {
    costed.states =
        std::max(costed.states, RankModelStates(r.parallel_plan, r.config.parallel, rank).total());
  }
  costed.capacity = r.config.cluster.given ? r.config.cluster.hbm_bytes : 0;
  costed.reserve = r.config.cluster.given ? r.config.cluster.memory_reserve_bytes : 0;
  costed.ok = true;
  return costed;
}

// Where `c`'s chunks run: in a V for the V-shape schedules (rank r holds chunks r and 2pp - 1 - r),
// else chunk s on rank s mod pp.
Placement PlacementOf(const Candidate& c) { return VShaped(c) ? Placement::kV : Placement::kLoop; }

// The slowest rank's time of a transformer split `counts` (the embedding and the head included)
// under `c`'s placement; a chunk costs its decoders, plus the embedding on the first and the
// head on the last (the screen's three costs).
int64_t SlowestRankNs(const std::vector<int32_t>& counts, const Candidate& c,
                      const Costed& costed) {
  return SlowestTransformerRank(counts, std::max(1, c.pp), costed.decoder, costed.embedding,
                                costed.head, PlacementOf(c))
      .ns();
}

// Whether the split `counts` of `c` lengthens, by more than `tie`, the chain of levels a looped
// schedule with virtual stages runs (TransformerLevelChain) against `reference`. A split that
// takes time off the slowest rank by piling a level onto one chunk (a heavy head alone on the
// last chunk, its rank's other chunks nearly empty) runs slower in the exact simulation: the
// ranks wait on that chunk level by level. Never for the V (dualpipev) or without virtual stages,
// where the slowest rank is the measure.
bool LengthensTheChain(const std::vector<int32_t>& counts, const std::vector<int32_t>& reference,
                       const Candidate& c, const Costed& costed, int64_t tie) {
  if (c.vpp < 2 || PlacementOf(c) != Placement::kLoop) return false;
  const auto chain = [&](const std::vector<int32_t>& split) {
    return TransformerLevelChain(split, c.pp, costed.decoder, costed.embedding, costed.head).ns();
  };
  return chain(counts) > chain(reference) + tie;
}

// Whether a split `counts` of the layout `c` (whose own split is `parent`, screened at `step`)
// may screen below `cutoff`: `step` scaled by the larger of the two shares the split takes off,
// its slowest rank's under c's placement and its slowest chunk's. In the screen's three costs
// no split does better than that share.
bool Promising(const std::vector<int32_t>& counts, const std::vector<int32_t>& parent,
               const Candidate& c, const Costed& costed, Time step, Time cutoff) {
  const auto chunks = static_cast<int32_t>(counts.size());
  const double rank_share = static_cast<double>(SlowestRankNs(counts, c, costed)) /
                            static_cast<double>(SlowestRankNs(parent, c, costed));
  const double chunk_share =
      static_cast<double>(
          SlowestTransformerRank(counts, chunks, costed.decoder, costed.embedding, costed.head)
              .ns()) /
      static_cast<double>(
          SlowestTransformerRank(parent, chunks, costed.decoder, costed.embedding, costed.head)
              .ns());
  return static_cast<double>(step.ns()) * std::min(rank_share, chunk_share) <
         static_cast<double>(cutoff.ns());
}

// Chunk activations the fullest rank (the first) holds at its peak.
int64_t ChunksInFlight(const Candidate& c) {
  const int64_t m = c.microbatches;
  const int64_t p = c.pp;
  const int64_t v = c.vpp;
  if (p == 1) return 1;
  if (c.schedule == "gpipe") return m;
  if (c.schedule == "looped-bfs") return m * v;
  if (c.schedule == "interleaved-1f1b") return std::min(m * v, 2 * (p - 1) + (v - 1) * p + 1);
  if (c.schedule == "dualpipev") return std::min(2 * m, 2 * p + 1);
  if (c.schedule == "zb-h2") return std::min(m, 2 * p - 1);  // 2(p - 1) warm-up forwards
  return std::min(m, p);                                     // 1f1b
}

// The activations of the fullest rank at the schedule's peak, as the screen bounds them: `chunks`
// in flight of the largest chunk (the first rank's), or `last_chunks` with the head's loss (the
// last rank's).
double ScreenedActivations(const Costed& costed, int64_t chunks, int64_t last_chunks) {
  return static_cast<double>(
      std::max(chunks * costed.chunk_activations,
               last_chunks * costed.chunk_activations + costed.head_activations));
}

// The last rank's chunks in flight: one under 1F1B or without stages; elsewhere the first rank's
// count `chunks`, a bound (a V places the head on the first rank).
int64_t LastRankChunks(const Candidate& c, int64_t chunks) {
  return c.pp == 1 || c.schedule == "1f1b" ? 1 : chunks;
}

double Budget(const PlanSpec& spec, int64_t capacity) {
  return static_cast<double>(capacity) * (1.0 - spec.headroom);
}

}  // namespace stagecraft
