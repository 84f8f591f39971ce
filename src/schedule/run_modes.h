// The run's modes that the config names and the lowering obeys: point-to-point semantics, how
// shared state moves, what a shadow indexer recomputes. Here, below both io and lower, so that
// reading a config does not reach the lowering pass (src/README.md, "The dependency rule").
#pragma once

#include <cstdint>

#include "core/enum_table.h"

namespace stagecraft {

// Point-to-point semantics (DESIGN.md §3; doc/metrics.md, "The discrete-event run"). Transfers
// other than activations and gradients (shared state, shadow syncs, vision embeddings) are async
// in every mode.
enum class P2pMode : uint8_t {
  kAsync,       // a send is posted when its producer ends; the receiver never blocks the sender
  kRendezvous,  // NCCL-like: between two ranks, sends match receives in issue order; a rank
                // issues sends in program order and posts a receive when it finishes the action
                // before the consumer; a transfer moves only once both sides are matched
  kTorchPipelining,  // torch.distributed.pipelining's _PipelineScheduleRuntime: one
                     // batch_isend_irecv per SEND/RECV action, the send posted when its producer
                     // ends, the receive posted ahead where the runtime's comm list puts it (the
                     // lockstep pass of _add_send_recv, or the explicit RECV of a compute_comms
                     // CSV); the k-th send of a link matches its k-th receive (lower/torch_comms.h)
};
// Every mode with its name (schedule.p2p, --p2p), in `stagecraft list p2p` order.
inline constexpr EnumTable<P2pMode> kP2pModeNames = {
    {"async", P2pMode::kAsync},
    {"rendezvous", P2pMode::kRendezvous},
    {"torch-pipelining", P2pMode::kTorchPipelining}};
constexpr const char* P2pModeName(P2pMode mode) { return kP2pModeNames.Name(mode); }

// How shared state moves between stages (DESIGN.md §5, rule 4).
enum class StatePolicy : uint8_t {
  kPayload,  // rides in the stage-to-stage sends, hop by hop; every stage between holds it
  kDirect,   // one transfer producer rank → consumer rank per consuming stage
  kShadow,   // a shadow indexer on the consumer stage recomputes it (compute instead of bytes)
  kAuto,     // per flow the cheapest of the three (resolved before lowering)
};
// Every policy with its name (schedule.state_policy, --state-policy), in the order messages list
// them.
inline constexpr EnumTable<StatePolicy> kStatePolicyNames = {{"payload", StatePolicy::kPayload},
                                                             {"direct", StatePolicy::kDirect},
                                                             {"shadow", StatePolicy::kShadow},
                                                             {"auto", StatePolicy::kAuto}};
constexpr const char* StatePolicyName(StatePolicy policy) { return kStatePolicyNames.Name(policy); }

// What a shadow indexer recomputes (csa2.md, "Shadow indexers": the report leaves it open).
enum class ShadowReading : uint8_t {
  kKeySide,        // (A) ship compressed KV, regenerate the indexer keys locally
  kSelectionSide,  // (B) ship the source's query latent, recompute its top-k / candidates
};
// Both with their names (schedule.shadow_reading).
inline constexpr EnumTable<ShadowReading> kShadowReadingNames = {
    {"key-side", ShadowReading::kKeySide}, {"selection-side", ShadowReading::kSelectionSide}};
constexpr const char* ShadowReadingName(ShadowReading reading) {
  return kShadowReadingNames.Name(reading);
}

}  // namespace stagecraft
