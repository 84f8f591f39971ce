// Partition: layers → pipeline stages (contiguous ranges), by cost balance, state-aware balance,
// explicit counts, or a Megatron-style layout string (DESIGN.md §2, "partition").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/time.h"
#include "schedule/schedule.h"

namespace stagecraft {

// Stage s holds layers [first_layer[s], first_layer[s + 1]) (the last stage up to num_layers).
struct Partition {
  std::vector<int32_t> first_layer;  // size = number of stages; first_layer[0] == 0, increasing
  int32_t num_layers = 0;
  bool operator==(const Partition&) const = default;

  int32_t num_stages() const { return static_cast<int32_t>(first_layer.size()); }
  int32_t begin(int32_t stage) const { return first_layer[stage]; }
  int32_t end(int32_t stage) const {
    return stage + 1 < num_stages() ? first_layer[stage + 1] : num_layers;
  }
  // The stage holding `layer`. REQUIRES: 0 <= layer < num_layers.
  int32_t StageOf(int32_t layer) const;
  // The layers of each stage, in stage order.
  std::vector<int32_t> layer_counts() const {
    std::vector<int32_t> counts;
    for (int32_t stage = 0; stage < num_stages(); ++stage)
      counts.push_back(end(stage) - begin(stage));
    return counts;
  }
};

// Optimal contiguous split minimising the largest stage cost (sum of its layers' costs). Ties:
// among optimal splits, the one whose first_layer is lexicographically smallest (every cut as
// early as the optimum allows, earliest stage first), so the result is deterministic. Every stage
// gets >= 1 layer. O(L²·S). Errors: num_stages < 1 or > number of layers.
Result<Partition> PartitionByCost(const std::vector<Time>& layer_costs, int32_t num_stages);

// State-aware: minimise the largest stage cost, where a stage costs its layers plus the time of
// the cuts on both of its sides; cut_costs[c] (c = 1 .. L−1) is the cost of a cut placed just
// before layer c (the payload it puts on the wire: hidden state plus the shared state crossing
// it); cut_costs[0] is ignored. Same tie-breaking and errors as PartitionByCost, plus an error
// when cut_costs.size() != layer_costs.size().
Result<Partition> PartitionStateAware(const std::vector<Time>& layer_costs,
                                      const std::vector<Time>& cut_costs, int32_t num_stages);

// The counts of a transformer's layer list (the embedding, `decoders` decoders, the head) over
// `stages` stages: the decoders split evenly (Megatron-LM's default layout), the embedding with
// the first stage and the head with the last. Where the stages do not divide the decoders
// (torchtitan's splitter), the stages between the first and the last take one more each, in
// order, then the first and the last. REQUIRES: stages >= 1.
std::vector<int32_t> EvenTransformerCounts(int32_t decoders, int32_t stages);

// DeepSpeed's split of Megatron-DeepSpeed's pipeline model over `stages` (GPTModelPipe in
// megatron/model/gpt_model.py builds its specs as the fp16 cast, the embedding, the decoders,
// with MoE the aux-loss helper, the final norm, the head and the fp32 cast, and passes
// partition_method 'type:transformer'; deepspeed/runtime/pipe/module.py then weighs each decoder
// 1 and every other spec 0, and deepspeed/runtime/utils.py partition_balanced splits the weights
// by dynamic programming, minimising the heaviest part less the lightest, a later cut winning a
// tie). Any decoder count: the stages need not divide it (BLOOM-176B ran 70 layers over 12
// stages). The trailing specs all join the last stage, so MoE's extra one changes nothing.
// Counts include the embedding and the head, like EvenTransformerCounts'; equal to them where the
// stages divide the decoders. REQUIRES: 1 <= stages <= decoders.
std::vector<int32_t> DeepSpeedTransformerCounts(int32_t decoders, int32_t stages);

// torchtitan's split of a transformer over `stages` (torchtitan/distributed/pipeline_parallel.py,
// generate_llm_fqn_per_model_part): the embedding counts as `input_weight` layers and the norm
// and output as `output_weight`; the decoders plus both weights split evenly, the first stages
// taking one more where they do not divide, and the first and the last stage then hold that
// many fewer decoders. Counts include the embedding and the head, like EvenTransformerCounts'.
// Errors, as torchtitan's: more stages than effective layers, or a weight above the layers per
// stage. REQUIRES: decoders >= 0, stages >= 1, weights >= 0.
Result<std::vector<int32_t>> TorchtitanTransformerCounts(int32_t decoders, int32_t stages,
                                                         int32_t input_weight,
                                                         int32_t output_weight);

// Where a transformer's chunks run is a schedule's Placement (schedule/schedule.h): chunk c of
// pp x vpp on rank c mod pp (kLoop: Megatron's virtual-stage order, torch's looped schedules), or
// in a V (kV: torch's DualPipeV and ZBVZeroBubble, vpp 2): rank r holds chunks r and 2pp - 1 - r.
// DualPipe's two directions (kDual) hold a copy of every stage on two ranks and have no one rank
// per chunk: the functions below take kLoop or kV.

// The rank of `chunk` of pp x vpp chunks under `placement`. REQUIRES: placement != kDual.
int32_t RankOfChunk(int32_t chunk, int32_t pp, int32_t vpp, Placement placement);

// The counts of a transformer's layer list over `pp` x `vpp` chunks (placed on the ranks by
// `placement`) that make the slowest rank as fast as it can be, where a chunk costs `decoder`
// per decoder, plus `embedding` on the first chunk and `head` on the last. Exact: the decoders
// all cost the same, so handing each next decoder to the rank that is least loaded after taking
// it (then, within each rank, to its least loaded chunk) minimises the largest rank total, and
// the chunks' too. Every chunk keeps at least one layer (the first may hold only the embedding,
// the last only the head). Ties go to the middle ranks in order, then the first and the last (as
// EvenTransformerCounts). Counts include the embedding and the head, like
// EvenTransformerCounts'. Empty when the chunks outnumber what the layers can fill.
// REQUIRES: pp >= 1, vpp >= 1 (2 with kV), decoder > 0, embedding >= 0, head >= 0.
std::vector<int32_t> BalancedTransformerCounts(int32_t decoders, int32_t pp, int32_t vpp,
                                               Time decoder, Time embedding, Time head,
                                               Placement placement = Placement::kLoop);

// The slowest rank's time of `counts` (chunk counts with the embedding and the head, as above)
// over `pp` ranks under `placement`: the measure BalancedTransformerCounts minimises.
Time SlowestTransformerRank(const std::vector<int32_t>& counts, int32_t pp, Time decoder,
                            Time embedding, Time head, Placement placement = Placement::kLoop);

// The chain of levels a looped schedule runs `counts` in (chunk c of pp x vpp on rank c mod pp):
// the sum over the vpp levels (chunks v pp .. v pp + pp - 1) of the level's slowest chunk. The
// looped and interleaved schedules run a microbatch through the levels in order, so where one
// chunk of a level holds much more than the others (a heavy head on the last chunk) the ranks
// wait on it whatever their totals: a split whose slowest rank is faster can still run slower.
// With vpp 1 it is the slowest stage.
Time TransformerLevelChain(const std::vector<int32_t>& counts, int32_t pp, Time decoder,
                           Time embedding, Time head);

// Megatron-LM's --pipeline-model-parallel-layout string of such counts: "Et*4|(t*5|)*14t*6L"
// (runs of equal middle chunks grouped, empty terms left out; PartitionFromLayout and Megatron's
// parse_str_to_list read it back). REQUIRES: counts.size() >= 1, each chunk non-empty.
std::string TransformerLayoutString(const std::vector<int32_t>& counts);

// Explicit layer counts per stage (each >= 1, summing to num_layers).
Result<Partition> PartitionFromCounts(const std::vector<int32_t>& counts, int32_t num_layers);

// A layout string in the style of Megatron-LM's pipeline_model_parallel_layout: stages separated
// by '|'; 'E' the embedding, 't' a decoder layer, 'L' the head (loss); "X*N" repeats an item,
// "(...)*N" repeats a group (which may contain '|'). Spaces are ignored. `layer_kinds` is the
// model's layer list as letters ('E', 't', 'L'); the layout must spell exactly that sequence.
// Errors name the 1-based column: "layout:7: expected 't' (layer 5 is a decoder layer), found
// 'L'"; stages and layers in messages are numbered from 0, like StageId and LayerId.
Result<Partition> PartitionFromLayout(std::string_view layout, std::string_view layer_kinds);

}  // namespace stagecraft
