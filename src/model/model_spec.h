// ModelSpec: what the simulator needs to know about the model, as a plain value. Two kinds:
//  - uniform (layers empty): every rank costs the same per microbatch, and a rank holding v
//    chunks spends 1/v of that on each chunk — for schedule studies;
//  - a layer list (layers non-empty): embedding, CSA2 decoder blocks, head, with per-layer costs
//    and shared-state edges (model/layer_spec.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/time.h"
#include "model/layer_spec.h"
#include "model/transformer.h"

namespace stagecraft {

struct ModelSpec {
  std::string name = "uniform";   // shown in reports
  int32_t num_layers = 0;         // layers to split over stages; 0 = one per stage
  Time forward;                   // F: one microbatch on one rank (all its chunks); default 1 ms
  Time input_grad;                // I: input-gradient backward, same unit; default 1 ms
  Time weight_grad;               // W: weight-gradient backward, same unit; default 1 ms
  int64_t activation_bytes = 0;   // M_B: bytes one microbatch holds on one rank from F until I/B
  int64_t weight_grad_bytes = 0;  // M_W: bytes kept from I until W (split backward); default 0
  int64_t p2p_bytes = 0;          // bytes of one activation or gradient crossing a stage cut
  // F&B: one overlapped op of one microbatch's forward and another's full backward on one rank
  // (DualPipe), same unit; zero = F + B, no overlap gain. Each of v chunks costs fb/v.
  Time fb;

  // The layer-list model (empty for the uniform model).
  std::vector<LayerSpec> layers;  // in order; sources resolved by ResolveSources
  Csa2Dims dims;                  // widths of the hidden and shared state; FLOPs-model dims
  int32_t seq_len = 4096;         // tokens per sequence
  int32_t micro_batch_size = 1;   // sequences per microbatch

  // A dense transformer given by its dimensions (type: transformer): the run setup turns it into
  // the layer list above once the parallel layout and the device are known.
  TransformerSpec transformer;

  bool is_layer_list() const { return !layers.empty() || is_transformer(); }
  bool is_transformer() const { return transformer.layers > 0; }
  int64_t tokens_per_microbatch() const { return static_cast<int64_t>(seq_len) * micro_batch_size; }

  ModelSpec()
      : forward(Time::Nanoseconds(1'000'000)),
        input_grad(Time::Nanoseconds(1'000'000)),
        weight_grad(Time::Nanoseconds(1'000'000)) {}
  bool operator==(const ModelSpec&) const = default;
};

// The cost of one microbatch on one stage (one chunk).
struct StageCost {
  Time forward;
  Time input_grad;
  Time weight_grad;
  int64_t activation_bytes = 0;   // M_B of this chunk
  int64_t weight_grad_bytes = 0;  // M_W of this chunk
  // Held during the chunk's I (or B) besides M_B: the largest working set its layers'
  // recomputation rematerialises (layers recompute one at a time; LayerSpec::recompute_bytes).
  int64_t recompute_bytes = 0;
  int64_t p2p_bytes = 0;         // bytes this stage sends to its neighbour per microbatch
  Time overlap_saving = Time();  // an F&B op whose forward is this stage costs F + B − this

  Time backward() const { return input_grad + weight_grad; }  // B = I + W
  bool operator==(const StageCost&) const = default;
};

// Per-stage costs for `num_stages` stages with `chunks_per_rank` chunks on each rank: each chunk
// costs the per-rank figure divided by chunks_per_rank, rounded to the nearest ns (once, here).
// REQUIRES: num_stages >= 1, chunks_per_rank >= 1.
std::vector<StageCost> UniformStageCosts(const ModelSpec& model, int32_t num_stages,
                                         int32_t chunks_per_rank);

}  // namespace stagecraft
