// StateFlow: one shared state (the output of one producer layer, one kind) as the lowering pass
// sees it after partitioning — which stage makes it, which stages need it, how many bytes per
// microbatch, and how it moves (DESIGN.md §5).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/time.h"
#include "model/layer_spec.h"
#include "schedule/run_modes.h"

namespace stagecraft {

struct StateFlow {
  int32_t producer_layer = 0;
  StateKind kind = StateKind::kCompressedKv;
  int32_t producer_stage = 0;
  std::vector<int32_t> consumer_layers;        // every consumer, ascending
  std::vector<int32_t> consumer_layer_stages;  // [i] the stage of consumer_layers[i]
  std::vector<int32_t> consumer_stages;  // stages holding consumers, ascending (may include the
                                         // producer's own stage)
  int64_t bytes = 0;                     // per microbatch, forward; dState has the same size
  bool differentiable = false;           // dState flows back to the producer
  StatePolicy policy = StatePolicy::kPayload;  // never kAuto when lowered
  // Shadow: what replaces the transfer on each consuming stage (zero for other policies).
  int64_t shadow_bytes = 0;        // bytes still shipped per microbatch (reading B: query latent)
  Time shadow_forward;             // extra forward compute per microbatch on the consumer stage
  Time shadow_backward;            // extra backward compute (input-grad part) per microbatch
  int64_t shadow_param_bytes = 0;  // parameters synced owner → replica once per iteration
  bool operator==(const StateFlow&) const = default;

  int32_t last_consumer_stage() const {
    return consumer_stages.empty() ? producer_stage : consumer_stages.back();
  }
};

// Direct and shadow flows serve ranks, not stages: for every rank other than the producer's that
// holds consuming stages, its lowest consuming stage (the first to need the state; later stages
// on that rank find it resident). Ascending by stage.
std::vector<int32_t> ReceivingStages(const StateFlow& flow,
                                     const std::vector<int32_t>& stage_ranks);

// Payload flows ride the pipeline: the cuts from the producer's stage to the last consumer's
// that cross between ranks, each a send of the state.
int64_t RankCrossings(const StateFlow& flow, const std::vector<int32_t>& stage_ranks);

// The stages that hold a flow's state for a microbatch: its producer's, and every stage up to
// the last consumer's under payload (carriers hold it too), or the consuming stages otherwise.
std::vector<int32_t> HolderStages(const StateFlow& flow);

}  // namespace stagecraft
