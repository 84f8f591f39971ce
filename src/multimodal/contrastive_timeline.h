// One step of contrastive (CLIP / SigLIP-style) pre-training on one of D data-parallel ranks, as
// a one-rank task graph run by the simulator, in two orders:
//   sequential  Fwd(V) → Fwd(T) → AllGather(V) → AllGather(T) → ∇T → ∇V → Bwd(T) → Bwd(V):
//               both gathers exposed
//   overlapped  DeepSeek-V4.1's order (csa2.md, "Multimodal"): each modality's all-gather runs
//               beside the other modality's compute,
//               Fwd(V) → [Fwd(T) ∥ AllGather(V)] → ∇T → [Bwd(T) ∥ AllGather(T)] → ∇V → Bwd(V)
// ∇T is the loss gradient with respect to the local text embeddings (it needs every image
// embedding), ∇V the one with respect to the local image embeddings (it needs every text
// embedding). Compute runs on the rank's compute stream in program order, the gathers on its
// collective stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "core/result.h"
#include "core/time.h"
#include "hardware/cluster_spec.h"
#include "lower/task_graph.h"
#include "sim/simulator.h"

namespace stagecraft {

enum class ContrastiveOrder : uint8_t { kSequential, kOverlapped };
// "sequential", "overlapped".
const char* ContrastiveOrderName(ContrastiveOrder order);

// The durations of one step's pieces on one rank.
struct ContrastiveStepTimes {
  Time vision_forward;   // Fwd(V): the vision tower over the local images
  Time text_forward;     // Fwd(T)
  Time vision_backward;  // Bwd(V)
  Time text_backward;    // Bwd(T)
  Time text_grad;        // ∇T: the loss and its gradient w.r.t. the local text embeddings
  Time vision_grad;      // ∇V: ... w.r.t. the local image embeddings
  Time vision_gather;    // AllGather(V): the image embeddings of all D ranks
  Time text_gather;      // AllGather(T)
  bool operator==(const ContrastiveStepTimes&) const = default;
};

// The ring all-gather of one modality's embeddings over the first `ranks` devices of `cluster`:
// each rank contributes b·e·bytes (contrastive.h), the gathered array is S = D·b·e·bytes.
// Errors: ranks < 1, more ranks than the cluster has devices.
Result<CollectiveCost> ContrastiveGatherCost(const ClusterSpec& cluster, int32_t ranks,
                                             int64_t local_batch, int64_t width, int32_t bytes);

// The one-rank graph of `order`: kWork tasks for the six compute pieces (programs[0], in order)
// and two kContrastiveGather collectives. labels[task] names each task ("fwd(V)", "gather(T)").
struct ContrastiveStepGraph {
  TaskGraph graph;
  std::vector<std::string> labels;
};
ContrastiveStepGraph BuildContrastiveStepGraph(const ContrastiveStepTimes& times,
                                               ContrastiveOrder order);

struct ContrastiveStep {
  ContrastiveOrder order = ContrastiveOrder::kOverlapped;
  ContrastiveStepGraph built;
  Trace trace;
  Time step;            // the last task's end
  Time compute;         // the six compute pieces, summed
  Time exposed_gather;  // step − compute: all-gather time the compute did not hide
};
// Builds and simulates `order`.
ContrastiveStep SimulateContrastiveStep(const ContrastiveStepTimes& times, ContrastiveOrder order);

}  // namespace stagecraft
