// RunInfo: what a report says about the run itself (the inputs), next to the Metrics.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/time.h"
#include "lower/task_graph.h"

namespace stagecraft {

// One stage of a layer-list model.
struct StageInfo {
  int32_t stage = 0;
  int32_t rank = 0;
  int32_t first_layer = 0;
  int32_t last_layer = 0;  // inclusive
  Time forward;            // per microbatch
  Time backward;
};

// One stage boundary of a layer-list model and what crosses it per token.
struct CutInfo {
  int32_t after_stage = 0;
  int32_t before_layer = 0;
  int64_t hidden_bytes_per_token = 0;
  int64_t state_bytes_per_token = 0;  // payload-policy view: every state crossing the cut
  std::string states;                 // "compressed_kv of 3, top_k of 3"
};

// The multimodal pieces of a run (run/multimodal_setup.h); `vision` / `engram` false = absent.
struct MultimodalInfo {
  bool vision = false;
  std::string placement;
  std::string image_tokens;  // the distribution, e.g. "uniform:64-1024"
  int64_t images = 0;        // per iteration on the simulated pipeline
  double vision_flops = 0;   // forward + backward, per iteration on the simulated pipeline
  Time vision_forward;       // the encoder's work, one device
  Time vision_backward;
  Time vision_on_first_rank;       // encoder work on the rank running microbatch 0's first stage
  int32_t vision_cp = 1;           // context-parallel ranks sharing each sample's images
  double vision_cp_imbalance = 1;  // the busiest CP rank's encoder FLOPs over the mean
  int32_t encoder_devices = 0;     // disaggregated: per pipeline replica
  int32_t prologue = 0;            // bubble-fill: microbatches encoded before the pipeline
  Time forward_in_bubbles;         // bubble-fill: work placed into idle gaps
  Time backward_in_bubbles;
  Time encoder_reduce;  // the encoder's gradient all-reduce over its copies
  double encoder_params = 0;
  double encoder_state_bytes = 0;  // the most encoder model states on one device
  bool engram = false;
  int32_t engram_owners = 0;
  int32_t engram_layers = 0;
  bool engram_host_memory = false;
  int64_t engram_id_bytes = 0;  // per rank and Engram layer per iteration
  int64_t engram_row_bytes = 0;
  int64_t engram_gradient_bytes = 0;
  int64_t engram_owner_bytes = 0;  // table bytes one owner holds
  Time engram_fetch;
  Time engram_fetch_delay;  // the longest a stage's first forward waited for its fetch alone
  Time engram_gradient;
  Time engram_exposed;  // the step's makespan less the same graph's with the Engram traffic free
};

// The memory verdict of the layout (run/memory_verdict.h): the fullest device's peak against
// its capacity. Printed by every answer that shows a layout.
struct MemoryInfo {
  bool computed = false;        // false: not part of this report
  bool capacity_known = false;  // the cluster gives a device memory
  bool fits = true;             // meaningful when capacity_known
  bool states_known = false;    // model states derived (transformer and layer-list models)
  int32_t rank = 0;             // the fullest device
  double peak_bytes = 0;        // its total: model states + activations and state + reserve
  double state_bytes = 0;       // its model states (parameters, gradients, optimizer)
  int64_t transient_bytes = 0;  // its peak of activations + resident shared state
  int64_t reserve_bytes = 0;    // the framework reserve counted in the total (0: no cluster)
  int64_t capacity_bytes = 0;   // one device's memory (0: unknown)
};

// How well the model did on the validated runs nearest to this one (run/validated_runs.h).
struct ValidationInfo {
  bool given = false;        // false: not reported (the costs are given, not modelled)
  int32_t similar_runs = 0;  // the nearest validated runs
  double mape = 0;           // their mean absolute error
  double worst = 0;          // the signed error of the farthest
  bool in_range = false;     // within the validated extremes of the device generation
  std::string basis;         // what "similar" held to
  std::string outside;       // the first dimension beyond the validated range ("" = none)
  std::string noun = "run";  // what the suite holds: training runs, or serving figures
  std::string doc = "doc/fidelity.md";  // where the suite is explained
};

struct RunInfo {
  std::string config;  // what was simulated: a config file's base name or "bundled: ..."
  // What the derived costs rest on, as (name, value) in print order: the cost model and its
  // device constants, the overlap options in force, FP8. Empty when the costs are given.
  std::vector<std::pair<std::string, std::string>> assumptions;
  std::string model;     // model name
  std::string schedule;  // generator name or "csv"
  int32_t pp = 0;
  int32_t vpp = 0;
  int32_t microbatches = 0;
  P2pMode p2p = P2pMode::kAsync;
  Time cost_p2p;
  bool cluster_given = false;
  Time forward;  // per microbatch per rank
  Time input_grad;
  Time weight_grad;
  // Layer-list models only.
  std::string partition;     // the partition method
  std::string state_policy;  // the configured movement policy
  std::vector<StageInfo> stages;
  std::vector<CutInfo> cuts;
  // Transformer models: the whole job around the simulated pipeline (world_size 0 = none).
  int32_t world_size = 0;  // pp · tp · dp
  int32_t tp = 1;
  int32_t dp = 1;
  int32_t cp = 1;
  // CSA2 layer lists with cp > 1: the shards, and the indexer scoring of each layer's busiest
  // rank summed over the layers, over an even split's (1 = even; "" = not reported).
  std::string cp_sharding;
  double cp_scan_imbalance = 1;
  int64_t tokens_per_iteration = 0;
  double hardware_flops_per_iteration = 0;  // with recomputation
  double model_flops_per_iteration = 0;     // without
  double peak_flops_per_device = 0;
  double params = 0;
  MultimodalInfo multimodal;
  MemoryInfo memory;
  ValidationInfo validation;
};

}  // namespace stagecraft
