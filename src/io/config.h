// Config: the whole input of a run as plain values — the YAML file's `model`, `cluster`,
// `parallel` and `schedule` sections (doc/config.md). Flags override fields after loading.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/enum_table.h"
#include "core/result.h"
#include "core/time.h"
#include "hardware/cluster_spec.h"
#include "hardware/fp8_recipe.h"
#include "memory/model_states.h"
#include "model/engine_host.h"
#include "model/model_spec.h"
#include "model/multimodal_spec.h"
#include "schedule/run_modes.h"
#include "schedule/schedule.h"

namespace stagecraft {

// How a layer-list model is split into stages.
enum class PartitionMethod : uint8_t {
  kStateAware,  // balance compute plus the payload each cut puts on the wire (default)
  kCost,        // balance compute only
  kCounts,      // layer_counts: explicit layers per stage
  kLayout,      // layout: a Megatron-style layout string
};

// Every partition method with its name (config key `parallel.partition`, flag `--partition`).
inline constexpr EnumTable<PartitionMethod> kPartitionMethodNames = {
    {"state-aware", PartitionMethod::kStateAware},
    {"cost", PartitionMethod::kCost},
    {"counts", PartitionMethod::kCounts},
    {"layout", PartitionMethod::kLayout}};
constexpr const char* PartitionMethodName(PartitionMethod method) {
  return kPartitionMethodNames.Name(method);
}

// Gradient buckets of the data-parallel reduction: PyTorch DDP (a first bucket of 1 MiB, then
// 25 MiB) or Megatron-LM (max(4e7, 1e6 · dp) parameters per bucket).
enum class GradBuckets : uint8_t { kNone, kPytorch, kMegatron };
// Their names (config key `parallel.grad_buckets`).
inline constexpr EnumTable<GradBuckets> kGradBucketsNames = {{"none", GradBuckets::kNone},
                                                             {"pytorch", GradBuckets::kPytorch},
                                                             {"megatron", GradBuckets::kMegatron}};

// How a CSA2 layer list's sequence is split over the context-parallel ranks (csa2.md, "Context
// parallelism (V4 / V4.1)"); every shard holds whole compression groups.
enum class CpSharding : uint8_t {
  kZigzag,      // 2·cp chunks, rank k holds chunks k and 2·cp − 1 − k: the indexer balanced
  kContiguous,  // cp shards of s/cp tokens: the last rank scores ≈ (2·cp − 1)/cp of the average
};
// Both with their names (config key `parallel.cp_sharding`, flag `--cp-sharding`).
inline constexpr EnumTable<CpSharding> kCpShardingNames = {{"contiguous", CpSharding::kContiguous},
                                                           {"zigzag", CpSharding::kZigzag}};

// A transformer's context parallelism by PyTorch's experimental context_parallel (torchtitan;
// torch/distributed/tensor/experimental/_attention.py): one attention kernel per ring step, the
// partial outputs merged in fp32, with its rotate method for K and V (config key
// `parallel.context_parallel_rotate_method`, torchtitan's `context_parallel_rotate_method`).
// kNone: the model's ring or all-gather (`cp_mode`).
enum class CpRotate : uint8_t { kNone, kAllGather, kAllToAll };
// The rotate methods with torchtitan's names, for the config, the torchtitan reader and its
// export; kNone has no name (no key written).
inline constexpr EnumTable<CpRotate> kCpRotateNames = {{"allgather", CpRotate::kAllGather},
                                                       {"alltoall", CpRotate::kAllToAll}};

// The activation-recomputation modes' names (config key `parallel.recompute`, flag
// `--recompute`) are model/transformer.h's kRecomputeNames.
// What parallel.recompute_num_layers means (Megatron's --recompute-method), with its names.
enum class RecomputeMethod : uint8_t { kBlock, kUniform };
inline constexpr EnumTable<RecomputeMethod> kRecomputeMethodNames = {
    {"block", RecomputeMethod::kBlock}, {"uniform", RecomputeMethod::kUniform}};
constexpr const char* RecomputeMethodName(RecomputeMethod method) {
  return kRecomputeMethodNames.Name(method);
}

// ZeRO's stages (config key `parallel.zero_stage`, flag `--zero-stage`): 0 to this.
inline constexpr int32_t kMaxZeroStage = 3;
inline constexpr const char* kZeroStageExpected = "expected 0, 1, 2 or 3: ZeRO's stages";

// FSDP2's reshard_after_forward: free the gathered parameters after a forward (and gather them
// again for the backward), or keep them until the backward. The default follows torchtitan:
// reshard without pipeline parallelism, keep them under it (a stage's parameters stay gathered
// across its microbatches; torchtitan's parallelize, reshard_after_forward "default").
enum class ReshardAfterForward : uint8_t { kDefault, kYes, kNo };

struct ParallelSpec {
  int32_t pp = 4;                                            // pipeline-parallel ranks
  int32_t vpp = 1;                                           // chunks (virtual stages) per rank
  int32_t microbatches = 8;                                  // m, microbatches per iteration
  Placement placement = Placement::kLoop;                    // stage → rank map (loop or v)
  PartitionMethod partition = PartitionMethod::kStateAware;  // layer-list models only
  std::vector<int32_t> layer_counts;  // partition: counts; one entry per stage
  std::string layout;                 // partition: layout, e.g. "Et*3|t*4|t*3L"
  // The dimensions around the pipeline (transformer models; the simulated pipeline is one
  // representative of its tensor- and data-parallel peers).
  int32_t tp = 1;                          // tensor-parallel ranks per stage
  int32_t dp = 1;                          // data-parallel replicas of the pipeline
  int32_t cp = 1;                          // context-parallel ranks (sequence split)
  int32_t ep = 1;                          // expert-parallel ranks (MoE; within dp)
  bool cp_all_gather = false;              // CP by all-gathering KV instead of the ring
  CpRotate cp_rotate = CpRotate::kNone;    // PyTorch's context_parallel and its rotate method
  bool sequence_parallel = false;          // Megatron sequence parallelism (AG + RS instead of AR)
  Recompute recompute = Recompute::kNone;  // activation recomputation
  int32_t recompute_num_layers = 0;        // with kFull: layers per pipeline chunk that
                                           // recompute (Megatron); 0 = all
  // What recompute_num_layers means (Megatron's --recompute-method): block, the first N layers of
  // each chunk recompute (one checkpoint each); uniform, every layer recomputes in groups of N
  // that keep only their input (DeepSpeed's activation_checkpoint_interval). Transformer models.
  RecomputeMethod recompute_method = RecomputeMethod::kBlock;
  bool fp8 = false;  // FP8 linear layers (Transformer Engine, float8)
  // With fp8: the scaling recipe (torchao's and Megatron's names; hardware/fp8_recipe.h);
  // tensorwise, torchtitan's default, unless given.
  Fp8Recipe fp8_recipe = kDefaultFp8Recipe;
  bool fp8_all_gather = false;  // FSDP gathers the float8 linears' weights in FP8
                                // (torchao; torchtitan enable_fsdp_float8_all_gather)
  bool fused_kernels = true;    // norms, activations, rotary embedding fused (Transformer Engine,
                                // torch.compile); false: eager PyTorch ops (torchtitan uncompiled)
  // The head's cross entropy: unfused (Megatron's default), Megatron's native fusion or
  // Transformer Engine's (--cross-entropy-loss-fusion --cross-entropy-fusion-impl).
  CrossEntropyFusion cross_entropy_fusion = CrossEntropyFusion::kNone;
  // The engines' overlap of communication with computation, by the flag they model:
  // Megatron-LM's --overlap-grad-reduce (the DP reduction in buckets during the last backward),
  // --overlap-param-gather (with the distributed optimizer, the bf16 parameter all-gather
  // hidden behind the next forward) and --tp-comm-overlap (TP collectives split against their
  // GEMMs), and torchtitan's async TP (the same for its TP collectives).
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool tp_comm_overlap = false;
  bool async_tp = false;
  ReshardAfterForward reshard_after_forward = ReshardAfterForward::kDefault;  // FSDP (zero 3)
  bool distributed_optimizer = false;             // optimizer state sharded over dp (ZeRO-1)
  GradBuckets grad_buckets = GradBuckets::kNone;  // DP reduction overlapped with the last
                                                  // backward in buckets (none: after it)
  bool hybrid_shard = false;  // FSDP hybrid: shard within a node, replicate across
  int32_t zero_stage = 0;     // 0-3: what is sharded over dp (1 optimizer, 2 +grads,
                              // 3 +params); distributed_optimizer means >= 1
  // The engine that ran the step: its host time per kernel (model/engine_host.h).
  TrainingEngine engine = TrainingEngine::kUnstated;
  TrainingPrecision precision = TrainingPrecision::kBf16;  // parameter, gradient and optimizer
                                                           // bytes (memory/model_states.h)
  // CSA2 layer lists' context parallelism: the sharding of the sequence, and whether the
  // all-gathers of compressed KV and indexer keys overlap the compute that does not need them.
  CpSharding cp_sharding = CpSharding::kZigzag;
  bool cp_overlap = true;
  int32_t world_size() const { return pp * tp * cp * dp; }
  bool operator==(const ParallelSpec&) const = default;
};

struct ScheduleSpec {
  std::string name = "1f1b";      // a generator from `stagecraft list schedules`
  int32_t group_size = 0;         // interleaved-1f1b microbatch group size; 0 = pp
  P2pMode p2p = P2pMode::kAsync;  // point-to-point semantics: async | rendezvous
  Time cost_p2p;                  // fixed time added to every transfer between two ranks; 0
  std::string csv;                // a schedule CSV file to load instead of a generator; ""
  StatePolicy state_policy = StatePolicy::kPayload;        // shared-state movement
  ShadowReading shadow_reading = ShadowReading::kKeySide;  // what a shadow indexer recomputes
  int32_t state_buffer_slots = 0;  // > 0: k slots per state and rank (stale-read check); 0 = off
  bool operator==(const ScheduleSpec&) const = default;
};

// The multimodal pieces around the pipeline (issue 6): a vision encoder and its placement, and
// the sharding of the Engram tables. Absent sections leave `given` false.
struct MultimodalSpec {
  VisionSpec vision;
  EngramSharding engram;
  bool operator==(const MultimodalSpec&) const = default;
};

struct Config {
  ModelSpec model;
  ClusterSpec cluster;
  ParallelSpec parallel;
  ScheduleSpec schedule;
  MultimodalSpec multimodal;
  bool operator==(const Config&) const = default;
};

// Where each key of a parsed config was written: "model.layers" → "run.yaml:4:11", so that
// errors found after parsing (cross-field rules) can still point at the file.
struct ConfigLocations {
  std::string source;                          // the file name used in messages
  std::map<std::string, std::string> by_path;  // key path → "source:line:col"

  // "run.yaml:4:11: model.layers: " when the key was written, else "run.yaml: model.layers: ".
  std::string Where(const std::string& path) const;
};

// How to read a config.
struct ParseOptions {
  // The model comes from a HuggingFace config.json (--hf-config): model.seq_len and
  // model.micro_batch_size are accepted on the otherwise empty (uniform) model section.
  bool model_from_hf = false;
};

// Parses YAML text. `source` names the file in messages, which read
// "source:line:col: what was wrong (what was expected)[; did you mean ...]". Unknown keys are
// errors (with "did you mean"), so typos never pass silently, and so is an unknown schedule
// name. Every section is optional. `locations`, when given, receives where each key was written.
Result<Config> ParseConfig(std::string_view yaml_text, std::string_view source,
                           ConfigLocations* locations = nullptr, const ParseOptions& options = {});

}  // namespace stagecraft
