// The vision encoder of a multimodal model and where it runs (csa2.md, "Multimodal"; issue 6).
// Its work per microbatch follows from the images the microbatch holds (image-token counts drawn
// from the config's distribution) and the encoder's FLOPs; PlaceVision adds that work to a
// lowered pipeline as kWork tasks, image-embedding transfers and their gradients:
//   colocated      the first stage's rank encodes microbatch j right before its F of j and runs
//                  the encoder backward right after its backward of j
//   decoupled      V4.1's three phases: every pipeline rank encodes an even share of the local
//                  batch's images (largest first to the least loaded rank), the language model's
//                  pipeline runs, then every rank runs the backward of its share
//   disaggregated  DistTrain-style: the encoder on devices of its own (dp × tp × pp of them per
//                  pipeline), each replica running its forwards and backwards in the order the
//                  first stage needs them (1F1B's alternation), sending embeddings over the
//                  network to the first stage and getting their gradients back
//   bubble-fill    Optimus-style: the encoder's work split into pieces placed into the pipeline's
//                  idle gaps on every rank while dependencies hold (a forward piece ends before
//                  the first stage's F of its microbatch starts, less the transfer; a backward
//                  piece runs on the rank that holds its forward's activations, after the
//                  embedding gradient arrives); what fits nowhere runs before the pipeline
//                  (forwards, split over all ranks) or after a rank's last action (backwards)
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/time.h"
#include "hardware/cluster_spec.h"
#include "lower/task_graph.h"
#include "model/image_tokens.h"
#include "model/multimodal_spec.h"

namespace stagecraft {

// The encoder's work per microbatch on one device at the cluster's effective FLOP/s (with
// context parallelism: on the busiest rank of the CP group).
struct VisionWork {
  std::vector<std::vector<int32_t>> image_tokens;  // [microbatch][image] output tokens
  std::vector<Time> forward;                       // [microbatch]
  std::vector<Time> backward;                      // [microbatch]
  std::vector<int64_t> activation_bytes;           // [microbatch] held from forward to backward
  std::vector<int64_t> embedding_bytes;            // [microbatch] sent to the first stage
  double forward_flops = 0;                        // all microbatches
  double backward_flops = 0;
  double params = 0;  // encoder + projector + patch embedding
  int64_t image_count = 0;
  double cp_imbalance = 1;  // busiest CP rank's encoder FLOPs / the mean (1 without CP)
};

// Per image of T tokens (N_p = unshuffle² · T patches): forward FLOPs VisionEncoderFlops plus
// the projector's 2 · unshuffle² · d_v · d per token; backward 2× the matmuls and 2.5× the
// attention core (csa2.md's rules); activations Korthikanti's 34 · N_p · d_v bytes per layer
// (FlashAttention keeps no score matrix; the 34 assumes a 4·d_v MLP, so it is an estimate), or
// 2 · N_p · d_v with recomputation, whose backward adds one forward;
// embeddings T · d · 2 bytes (bf16). With cp > 1 each sample's images are spread over its cp
// ranks and each read and encoded once (V4.1; multimodal/image_sharding.h, `balanced`): the
// simulated rank does the busiest rank's share of the FLOPs, holds that share of the
// activations and receives 1/cp of the embeddings.
VisionWork ComputeVisionWork(const VisionSpec& spec, int32_t microbatches, int32_t micro_batch_size,
                             int64_t llm_hidden, double flops_per_s, int64_t seq_len = 0,
                             int32_t cp = 1);

struct VisionPlacementStats {
  int32_t encoder_ranks = 0;            // simulated ranks added (disaggregated)
  int32_t encoder_devices = 0;          // devices they stand for, per pipeline replica
  std::vector<int32_t> prologue;        // bubble-fill: microbatches encoded before the pipeline
  Time forward_in_bubbles;              // bubble-fill: forward work placed into idle gaps
  Time backward_in_bubbles;             // ... and backward
  Time work_total;                      // all vision work added (forward + backward)
  std::vector<double> params_per_rank;  // [rank] encoder parameters a device holds
  Time encoder_reduce;                  // the encoder's gradient all-reduce (one copy's)
  Time work_on_first_rank;              // encoder work on the rank of microbatch 0's first stage
};

// Adds the vision encoder's work to `graph` (lowered from the pipeline, not yet simulated), and
// the all-reduce of its gradients over its copies in all `replicas` pipeline replicas (dp · cp ·
// tp of them) on the collective stream after each holder's last encoder backward. bubble-fill
// simulates the graph to find the gaps. Errors: a placement that cannot be built (no
// first-stage forward found).
Result<VisionPlacementStats> PlaceVision(const VisionSpec& spec, const VisionWork& work,
                                         TaskGraph& graph, int64_t replicas = 1);

// Checks the spec against the run: the layout of the encoder's devices whenever they are given
// (tp · pp dividing them, tp the heads and at most a node, pp the layers) and, when the
// placement is disaggregated, that they are given and fit the cluster next to the pipelines.
// `pipeline_devices`: the language model's devices (pp · dp · cp · tp); `replicas`: its pipeline
// replicas (dp · cp · tp, one encoder group each). Messages name the key
// ("multimodal.vision.devices: ...").
Status CheckVisionSpec(const VisionSpec& spec, const ClusterSpec& cluster, int64_t pipeline_devices,
                       int64_t replicas);

}  // namespace stagecraft
