// The planner's search, in the stages PlanLayouts (plan.cc) runs them: the costs of one prepared
// representative per cost key (plan_costs.cc), the analytic screen of every legal candidate with
// the compute-only probes of the schedules without a closed form (plan_screen.cc), the candidates
// derived from the screened costs (plan_derive.cc: Megatron's block recomputation and uneven
// splits, torchtitan's split weights and module lists), and the exact simulation of the best
// (plan_rank.cc). Internal to the plan module.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/work_split.h"
#include "plan/plan.h"
#include "plan/plan_rules.h"
#include "schedule/partition.h"

namespace stagecraft {

// What the screen keeps of one prepared layout: the slowest chunk's costs with the collectives
// each op waits for, what follows the last backward, and the memory per device.
struct Costed {
  bool ok = false;
  Time forward;       // of one chunk, with its exposed TP / CP / EP collectives
  Time backward;      // B = I + W, likewise
  Time weight_grad;   // W
  Time tail;          // after the pipeline: exposed DP reduction, optimizer step, first gather
  double states = 0;  // model states of the fullest device
  int64_t chunk_activations = 0;  // activations one chunk holds per microbatch (largest),
                                  // the head's loss apart
  int64_t head_activations = 0;   // what the head's loss holds per microbatch (last stage)
  int64_t recompute = 0;          // recomputation's working set during a backward (largest)
  int64_t capacity = 0;
  int64_t reserve = 0;
  // With three or more stages: one decoder's F + B with its collectives (a middle stage's over
  // its decoders), and what the embedding and the head add to the first and the last stage.
  Time decoder;
  Time embedding;
  Time head;
};

// Everything but the schedule's order and the microbatch count changes the costs; the screen
// prepares one representative per key.
using CostKey = std::tuple<int, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int,
                           int32_t, bool, int32_t, bool, int32_t, int32_t, std::vector<int32_t>,
                           int32_t, int32_t, int, int>;
CostKey KeyOf(const Candidate& c);

// The planner's run of `candidate`: the loaded config with the candidate's layout applied.
RunSpec RunOf(const PlanSpec& spec, const std::shared_ptr<const LoadedConfig>& base,
              const Candidate& candidate);

// A short run of the candidate's layout prepared (not simulated) and read for the screen.
Costed Cost(const PlanSpec& spec, const std::shared_ptr<const LoadedConfig>& base,
            const Candidate& candidate);

// Where `c`'s chunks run: in a V for the V-shape schedules, else chunk s on rank s mod pp.
Placement PlacementOf(const Candidate& c);

// The slowest rank's time of a transformer split `counts` under `c`'s placement.
int64_t SlowestRankNs(const std::vector<int32_t>& counts, const Candidate& c, const Costed& costed);

// Whether the split `counts` lengthens a looped schedule's chain of levels against `reference`
// by more than `tie` (plan_costs.cc says why that matters).
bool LengthensTheChain(const std::vector<int32_t>& counts, const std::vector<int32_t>& reference,
                       const Candidate& c, const Costed& costed, int64_t tie);

// Whether a split `counts` of `c` (whose own split `parent` screened at `step`) may screen below
// `cutoff`.
bool Promising(const std::vector<int32_t>& counts, const std::vector<int32_t>& parent,
               const Candidate& c, const Costed& costed, Time step, Time cutoff);

// Chunk activations the fullest rank (the first) holds at its peak.
int64_t ChunksInFlight(const Candidate& c);

// The activations of the fullest rank at the schedule's peak, as the screen bounds them.
double ScreenedActivations(const Costed& costed, int64_t chunks, int64_t last_chunks);

// The last rank's chunks in flight (a bound where not 1F1B).
int64_t LastRankChunks(const Candidate& c, int64_t chunks);

// The device's bytes less --memory-headroom.
double Budget(const PlanSpec& spec, int64_t capacity);

// A candidate that passed the screen, and its screened step.
struct Screened {
  size_t index;  // into Screen::legal()
  Time step;
};

// The analytic screen. Owns the candidates (the enumerated ones, then the derived ones), the
// costs of one representative per cost key, each candidate's screened step, and the fitting ones;
// counts what it refuses in `result.rejected` and `result.screened`.
class Screen {
 public:
  Screen(const PlanSpec& spec, std::shared_ptr<const LoadedConfig> base, WorkSplit& split,
         std::vector<Candidate> legal, PlanResult& result);

  // Costs the candidates' representatives (over the split), screens every candidate in order,
  // then probes those waiting. Errors: only internal ones (a result that does not read back).
  Status ScreenCandidates();
  // Adds `derived` after the candidates, costs their new keys, screens and probes them.
  Status ScreenDerived(std::vector<Candidate> derived);

  // The screen's simulate-th best step so far (no bound while fewer fit).
  Time SimulatedCutoff() const;
  // The costs of `c`'s key; nullptr where no candidate of that key was costed.
  const Costed* CostsOf(const Candidate& c) const;
  const std::vector<Candidate>& legal() const { return legal_; }
  // The screened step of candidate `index`, fitting or not; negative where there is none.
  Time step(size_t index) const { return screen_step_[index]; }
  // The fitting candidates, fastest first (stable).
  std::vector<Screened> Fitting() const;
  // Whether any schedule without a closed form was probed.
  bool probed_any() const { return probed_any_; }

 private:
  Status CostNewKeys(size_t first_candidate);
  void ScreenOne(size_t index);
  Status ProbeWaiting();
  bool Fits(const Costed& costed, int64_t chunks, int64_t last_chunks) const;

  const PlanSpec& spec_;
  std::shared_ptr<const LoadedConfig> base_;
  WorkSplit& split_;
  PlanResult& result_;
  std::vector<Candidate> legal_;
  std::map<CostKey, size_t> key_index_;  // key -> index into costs_
  std::vector<size_t> representatives_;  // a candidate index per key, in first-seen order
  std::vector<Costed> costs_;
  std::vector<Time> screen_step_;
  std::vector<Screened> fitting_;
  std::vector<size_t> unprobed_;  // candidates whose schedule has no closed form, to probe
  bool probed_any_ = false;
};

// Candidates derived from the screened costs (plan_derive.cc), each to be screened as its own.
// Megatron's block recomputation: the fewest layers per chunk that fit.
std::vector<Candidate> DeriveBlockRecompute(const PlanSpec& spec, const PlanShape& shape,
                                            const Screen& screen);
// Megatron's uneven first/last stages and layout strings, torchtitan's split weights and module
// lists, where they may reach the exact simulation.
std::vector<Candidate> DeriveSplits(const PlanShape& shape, const Screen& screen);

// The exact simulation of the best of the screen (plan_rank.cc): the first round's layouts, the
// refills, the second round's variants.
struct Ranking {
  std::vector<PlannedLayout> plans;  // every fitting simulated plan, fastest first
  size_t first_round = 0;            // layouts in the first round
  size_t simulated = 0;              // candidates simulated, every round
};
Result<Ranking> RankBySimulation(const PlanSpec& spec,
                                 const std::shared_ptr<const LoadedConfig>& base, WorkSplit& split,
                                 const Screen& screen, const std::vector<Screened>& fitting,
                                 bool layer_list, PlanResult& result);

}  // namespace stagecraft
