// The cost of serving a transformer on one replica of tp x pp GPUs (doc/serving.md): how much of
// each GPU the weights, the activations and the KV cache take, how many tokens of KV cache the
// replica holds, and how long one engine iteration (a batch of prefill chunks and decode tokens)
// takes, kernel by kernel through the kernel model (iteration_kernels.h), with the
// tensor-parallel all-reduces, the expert all-to-alls and the pipeline hand-offs on top. The
// request simulator (request_sim.h) asks it for every iteration.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_table.h"
#include "core/result.h"
#include "hardware/cluster_spec.h"
#include "model/kv_cache.h"
#include "model/layer_spec.h"
#include "model/model_spec.h"
#include "model/transformer.h"
#include "serve/iteration_kernels.h"

namespace stagecraft {

// How the replicas are laid out.
struct ServeShape {
  int32_t tp = 1;        // tensor-parallel GPUs per stage (heads and MLP columns split)
  int32_t pp = 1;        // pipeline stages per replica (layers split evenly)
  int32_t replicas = 1;  // independent copies behind the router
  // Expert-parallel GPUs per stage (vLLM's --enable-expert-parallel: EP = TP x DP,
  // docs/serving/expert_parallel_deployment.md and data_parallel_deployment.md): 1 = the routed
  // experts TP-split like the rest; E > 1 (a multiple of tp) = the routed experts split E ways,
  // whole experts per GPU, and the attention data-parallel over E / tp groups of tp GPUs, each
  // group its own requests and KV cache, with an all-to-all dispatch and combine per MoE layer.
  int32_t ep = 1;
  // Attention data-parallel groups per stage (vLLM's --data-parallel-size under EP).
  int32_t attention_dp() const { return ep > 1 && ep % tp == 0 ? ep / tp : 1; }
  int32_t stage_gpus() const { return tp * attention_dp(); }
  // In 64 bits: --pp and --ep come from the command line before the cluster bounds them.
  int64_t gpus_per_replica() const { return int64_t{stage_gpus()} * pp; }
  int64_t gpus() const { return gpus_per_replica() * replicas; }
  bool operator==(const ServeShape&) const = default;
};

// The engine's settings; defaults are vLLM's (vllm/engine/arg_utils.py, EngineArgs).
// The largest engine limits accepted: sequences and tokens in one iteration.
inline constexpr int64_t kMaxEngineSeqs = int64_t{1} << 20;
inline constexpr int64_t kMaxEngineTokens = int64_t{1} << 24;

struct EngineOptions {
  double weight_bytes = 2;       // bytes per weight: 2 bf16, 1 fp8/int8, 0.5 fp4 (scales ignored)
  bool fp8_compute = false;      // FP8 weights and activations (W8A8): GEMMs at the FP8 rate
  int32_t kv_bytes = 2;          // bytes per KV element: 2 = bf16 (kv_cache_dtype auto), 1 = fp8
  int32_t activation_bytes = 2;  // hidden states between layers and ranks: bf16
  // CUDA graphs (vLLM's default): an iteration's kernels replay without the host issuing each
  // one, so it lasts at least its kernels' floors (KernelModel::kernel_floor_s); eager: at least
  // the host's issue time per kernel (KernelModel::host_seconds_per_kernel).
  bool cuda_graphs = true;
  double memory_utilization = 0.9;  // gpu_memory_utilization: share of HBM the engine may use
  // When above 0, the KV cache takes this share of what is left after the weights, activations
  // and reserve (TensorRT-LLM's kv_cache_free_gpu_mem_fraction) instead of filling
  // memory_utilization of the device.
  double kv_free_fraction = 0;
  int64_t token_budget = 8192;  // max_num_batched_tokens (V1, OpenAI server default)
  int32_t max_seqs = 256;       // max_num_seqs: sequences in one iteration
  int32_t block_tokens = 16;    // block_size: tokens per paged KV block
  // Requests admitted and not finished, per replica (Vidur's batch_size_cap); 0 = only max_seqs.
  int32_t max_running = 0;
  // How an iteration is filled (request_sim.h): kChunked, vLLM V1's and Sarathi-Serve's running
  // requests first then new ones, prompts cut to the token budget; kPrefillFirst, vLLM V0's as
  // Vidur models it: whole new prompts first (the batch's longest prompt x its size within the
  // token budget) and, only when none is admitted, one decode step of the running requests;
  // kUnchunked, TensorRT-LLM's in-flight batching without chunked context (its default,
  // enable_chunked_prefill False): the running requests' decodes first, then new prompts whole,
  // first come first served, while each fits what is left of the token budget (a prompt longer
  // than the whole budget, which TensorRT-LLM refuses, runs as the iteration's only prompt).
  enum class Batching : uint8_t { kChunked, kPrefillFirst, kUnchunked };
  Batching batching = Batching::kChunked;
  // How a waiting request is admitted (request_sim.h). kGreedy, vLLM's: when the blocks of its
  // first chunk are free; a running request short of blocks later preempts the latest admitted
  // (recompute). kNoEvict, TensorRT-LLM's GUARANTEED_NO_EVICT capacity scheduler: only when the
  // free blocks, less those the running requests may still claim, cover its prompt and its whole
  // output, so no request is ever preempted. kNewTokenRatio, SGLang's: as kNoEvict but reserving
  // `new_token_ratio` of each request's output still to come (at most 4096 tokens of it), so
  // decodes can still run short and preempt (SGLang's retraction, modelled as recompute).
  enum class Admission : uint8_t { kGreedy, kNoEvict, kNewTokenRatio };
  Admission admission = Admission::kGreedy;
  double new_token_ratio = 0.7;
  // SGLang's memory rule: the weights and the KV pool take mem_fraction_static of the device
  // (engine_profile.h SglangMemFractionStatic, from the device's memory, tp, pp and the token
  // budget), the activations and CUDA graphs the rest; false = memory_utilization as above.
  bool sglang_static_memory = false;
  // Speculative decoding (speculative.h; vLLM's speculative_config num_speculative_tokens with
  // the deepseek_mtp method, SGLang's --speculative-num-steps): each decoding sequence verifies
  // up to this many draft tokens per step, each accepted with `acceptance_rate` (given by the
  // user); 0 = off.
  int32_t speculative_tokens = 0;
  double acceptance_rate = 0;
  // The engine's attention kernel (engine_profile.h), where it is not the model's own
  // (transformer.attn_impl): a kernel the device does not run falls back as the training side's
  // does (ResolveAttentionKernel).
  std::optional<AttentionKernel> attention_kernel = std::nullopt;
  // Prefill attention in FP8 when the weights and the KV cache are FP8 and the kernel runs it
  // (TensorRT-LLM's FP8 context FMHA).
  bool fp8_context_attention = false;
};

// A CSA2 layer list served (doc/serving.md, "CSA2 layer lists"; doc/csa2.md's storage formats
// at inference). Its attention reads are not proportional to the context: each query reads its
// layer's window, its top-k compressed entries and (full and reindex layers) the indexer keys it
// scores, so a sequence's share of an iteration is summed per layer class (AddSequence).
struct Csa2Serving {
  // The decoders of one attention mode and compression ratio (their attention work is equal).
  struct LayerClass {
    LayerSpec layer;
    int32_t count = 0;
  };
  std::vector<LayerClass> classes;
  int32_t decoders() const {
    int32_t count = 0;
    for (const LayerClass& layers : classes) count += layers.count;
    return count;
  }
  Csa2Dims dims;
  double main_entry_bytes = 0;    // a compressed KV entry: FP4 E2M1 + an E4M3 scale per 16
  double index_entry_bytes = 0;   // an indexer key: MXFP4 + an E8M0 scale per 32
  double window_entry_bytes = 0;  // a window KV token of one layer: FP8, head_dim bytes (K = V)
  int64_t window = 0;             // n_win tokens
  // The stage that bounds the KV capacity, per GPU (TP ranks each hold the whole shared KV
  // head): compressed KV + indexer keys per token of context, window KV per windowed token.
  double stage_token_bytes = 0;
  double stage_window_bytes = 0;
};

// What one replica holds and can hold. Bytes are per GPU (the fullest GPU of the replica).
struct ReplicaModel {
  // A transformer's dimensions; for a CSA2 layer list, its dims in a transformer's terms (hidden,
  // heads, one KV head, decoders as layers, experts), which the shape checks and the
  // collectives read, with `csa2` holding the rest.
  TransformerSpec model;
  std::optional<Csa2Serving> csa2;
  ClusterSpec cluster;
  ServeShape shape;
  EngineOptions engine;
  KvCachePerToken kv;                     // one token's KV cache, whole model, unsharded
  int64_t kv_heads_per_gpu = 0;           // MHA/GQA/MQA: KV heads a GPU keeps (0 for MLA)
  bool kv_replicated = false;             // TP above the KV heads (or MLA): copies across TP ranks
  double kv_bytes_per_token_per_gpu = 0;  // one token's KV on one GPU (its stage's layers)
  double weight_bytes_per_gpu = 0;        // the fullest stage: its layers + embedding or head
  double activation_bytes_per_gpu = 0;    // the engine's forward workspace at the token budget
  double reserve_bytes_per_gpu = 0;       // CUDA context, NCCL buffers (cluster's reserve)
  double kv_budget_bytes_per_gpu = 0;     // HBM x utilization - weights - activations - reserve
  int64_t kv_capacity_tokens = 0;         // per replica: whole blocks of the KV budget, summed
                                          // over its attention DP groups
  // `engine` of a replica with attention DP groups: token_budget and max_seqs are the groups'
  // sum (each DP engine schedules its own; the replica is simulated as one pooled scheduler).
  //
  // The kernels an iteration launches on one GPU, all stages in turn (iteration_kernels.h).
  ServeKernels kernels;
  int64_t stage_cut_width = 0;  // elements per token crossing a stage cut (hidden; CSA2 hc·d)
  // With speculative decoding, the draft: the MTP module as a one-stage replica of the same tp
  // and ep (speculative.h AttachMtpDraft), shared and never changed; null without. Its weights
  // are in weight_bytes_per_gpu above and its per-token KV in the capacity (SizeKvCapacity).
  std::shared_ptr<const ReplicaModel> draft;
};

// The weights' and the KV cache's storage formats a serving engine is told (--weight-dtype,
// --kv-dtype). fp8 weights run W8A8 at the FP8 rate (vLLM's fp8 quantization on Hopper); int8,
// int4 and fp4 are weight-only (dequantized into bf16 GEMMs); an fp8 KV cache stores one byte per
// element (vLLM's kv_cache_dtype fp8).
enum class WeightDtype : uint8_t { kBf16, kFp8, kInt8, kInt4, kFp4 };
enum class KvDtype : uint8_t { kBf16, kFp8 };
// "bf16", "fp8", "int8", "int4", "fp4" / "bf16", "fp8"; errors name --weight-dtype / --kv-dtype
// (a model's own weight_format or kv_cache_dtype is read with the same names).
Result<WeightDtype> ParseWeightDtype(std::string_view name);
Result<KvDtype> ParseKvDtype(std::string_view name);

// The formats chosen; one left unset takes the model's own format (TransformerSpec::
// weight_format, kv_cache_dtype: from the config or the HuggingFace quantization_config), else
// bf16.
struct ServeDtypes {
  std::optional<WeightDtype> weights;
  std::optional<KvDtype> kv;
};
Status ApplyDtypes(const ServeDtypes& chosen, const TransformerSpec& model, EngineOptions& engine);

// How an iteration is filled: chunked (vLLM V1's and Sarathi-Serve's loop, the 8,192-token
// budget), unchunked (TensorRT-LLM's: whole prompts beside the decodes) or prefill-first (vLLM V0
// without chunked prefill, the engine of 2023-24 papers such as DistServe's baseline: whole prompts
// first, then decodes; its max_num_batched_tokens default max(max_model_len, 2048), vllm/config.py
// SchedulerConfig, with `max_model_len` the model's sequence length).
void ApplyBatching(EngineOptions::Batching batching, int64_t max_model_len, EngineOptions& engine);
// Their names (--batching).
inline constexpr EnumTable<EngineOptions::Batching> kBatchingNames = {
    {"chunked", EngineOptions::Batching::kChunked},
    {"unchunked", EngineOptions::Batching::kUnchunked},
    {"prefill-first", EngineOptions::Batching::kPrefillFirst}};

// The layout's checks on the model's dimensions: degrees at least 1, EP on a MoE model within
// its experts, TP within a node and dividing the heads, pp dividing the layers, the GPUs within
// the cluster, a preset with HBM. Bad input naming the flag and what would work.
Status CheckServeShape(const TransformerSpec& model, const ClusterSpec& cluster,
                       const ServeShape& shape);

// Checks the layout against the model (heads and KV heads divide or are divided by tp, pp
// divides the layers, the cluster is a preset with HBM) and sizes the replica. Bad input: the
// flag and what would work; a replica whose weights leave no room for one KV block: kInfeasible.
Result<ReplicaModel> BuildReplicaModel(const TransformerSpec& model, const ClusterSpec& cluster,
                                       const ServeShape& shape, const EngineOptions& engine);
// BuildReplicaModel's checks and sizes short of the KV cache (SizeKvCapacity) and the draft: the
// weights, activations, per-token KV and roofline of the layout.
Result<ReplicaModel> ShapeReplicaModel(const TransformerSpec& model, const ClusterSpec& cluster,
                                       const ServeShape& shape, const EngineOptions& engine);
// A config's model: a transformer as above, or a CSA2 layer list (csa2_replica.h). The uniform
// model (no layers) is bad input.
Result<ReplicaModel> BuildReplicaModel(const ModelSpec& model, const ClusterSpec& cluster,
                                       const ServeShape& shape, const EngineOptions& engine);

// Sizes the KV cache of a replica whose weights, activations and KV bytes per token per GPU are
// set (and its draft's, when speculating): the budget, the capacity in whole blocks (over the
// attention DP groups) and the engine's pooled budgets. kInfeasible when no block fits.
Status SizeKvCapacity(ReplicaModel& replica);

// One engine iteration's work on a replica.
struct IterationWork {
  double new_tokens = 0;       // tokens computed: prefill chunk tokens + one per decoding sequence
  double sequences = 0;        // sequences that emit a logit (decodes, and prefills that finish)
  double context_tokens = 0;   // cached tokens whose KV is read (every sequence's prior context)
  double attention_pairs = 0;  // query-key pairs: each new token against the keys it attends to
  // Of those, the prefill chunks' (sequences computing more than one token; the rest are
  // decodes): their new tokens, their pairs, their cached context's KV held, and the keys they
  // attend to (context + chunk, what MLA's prefill decompresses).
  double prefill_tokens = 0;
  double prefill_pairs = 0;
  double prefill_context_tokens = 0;
  double prefill_keys = 0;
  // CSA2 layer lists (AddSequence), whole model: the attention core's FLOPs (all heads), the
  // indexer scoring's (whole on every TP rank) and the cache bytes one TP rank reads.
  double csa2_core_flops = 0;
  double csa2_scoring_flops = 0;
  double csa2_read_bytes = 0;
  double csa2_index_read_bytes = 0;  // of those, the indexer keys the scoring reads
};

// One sequence's share of an iteration: `tokens` new tokens after `context` computed ones;
// `finishes` when the iteration ends its prompt or it decodes (it emits a logit). Transformers:
// the KV held and the query-key pairs; CSA2 layer lists: per layer class, LayerAttentionSpan's
// pairs and the entries read (window, min(visible, tokens x top-k) compressed entries, the
// scorable indexer keys).
void AddSequence(const ReplicaModel& replica, double tokens, double context, bool finishes,
                 IterationWork& work);

// One iteration on one GPU (the fullest: a TP rank of an attention DP group), every stage in
// turn: its kernels summed, then the collectives in sequence.
struct IterationCost {
  double gemm_s = 0;       // the GEMMs (GemmTime): projections, MLP or experts, LM head
  double attention_s = 0;  // prefill attention (AttentionTime) and decode attention (the KV read,
                           // MemoryBoundTime, at least its FLOPs at the attention rate)
  double memory_s = 0;     // memory-bound kernels (MemoryBoundTime): norms, rotary, activations,
                           // KV-cache writes, the experts' routing and sum, the embedding
  double compute_s = 0;    // gemm_s + attention_s
  double allreduce_s = 0;  // two TP all-reduces per layer, in sequence with the compute
  double alltoall_s = 0;   // EP: a dispatch and a combine all-to-all per MoE layer
  double handoff_s = 0;    // pp - 1 stage hand-offs of the hidden states
  // The kernels' issue floor: kernels x the kernel floor with CUDA graphs (each kernel's time
  // already holds it), or x the host's issue time per kernel when eager.
  double launch_s = 0;
  int32_t kernels = 0;  // kernels launched (collectives apart)
  int32_t allreduces = 0;
  int32_t alltoalls = 0;
  double total_s = 0;  // max(gemm + attention + memory, launch) + allreduce + alltoall + handoff
};

// One MoE layer's expert all-to-alls under EP over `ep` GPUs, each holding `tokens_per_gpu` of
// the iteration's tokens: the dispatch sends each token's hidden state to its k experts
// (k x hidden x dispatch_bytes per token: one copy per chosen expert, as the training side's
// all-to-all dispatcher and Megatron's), the combine returns k x hidden x combine_bytes; each a
// ring all-to-all (comm/collective.h: (n-1) alpha + the bytes leaving the GPU over NVLink inside
// a node, the NIC across nodes), alpha the preset's per-step latency.
struct ExpertAllToAll {
  double dispatch_bytes = 0;  // per GPU
  double combine_bytes = 0;   // per GPU
  double dispatch_s = 0;
  double combine_s = 0;
  double seconds() const { return dispatch_s + combine_s; }
};
ExpertAllToAll ExpertAllToAllSeconds(const ClusterSpec& cluster, int32_t ep,
                                     const TransformerSpec& model, double tokens_per_gpu,
                                     double dispatch_bytes, double combine_bytes);

// The KV a request of `context` tokens holds, in tokens of the whole model's per-token KV
// (kv.total()): `context` itself, less the sliding-window layers' share of the tokens past the
// window (KvCachePerToken::BytesForContext / total). The request simulator sizes a request's
// blocks and an iteration's KV read by it.
double KvTokensHeld(const ReplicaModel& replica, double context);

// The share of a MoE layer's routed experts that `tokens` tokens touch, each choosing k of E
// experts uniformly and independently: 1 - (1 - k/E)^tokens (the expected distinct experts of
// tokens draws). 1 when the model has no experts' choice to make.
double RoutedExpertsTouched(const TransformerSpec& model, double tokens);

// One iteration (every stage in turn: the replica's latency per iteration), kernel by kernel
// through hardware/kernel_model.h, the one source of rates, at KernelSetting::kInStep (the GEMMs
// at the sustained share of a busy engine): per decoder class `kernels.layers`' GEMMs and
// memory-bound kernels with M the iteration's tokens on the GPU (tokens / attention_dp; the
// routed experts tokens x k / E each, over the experts touched), costed once and multiplied;
// per layer the prefill chunks' attention (AttentionTime by the model's kernel, key blocks from
// the mean keys per query) and the decodes' (the KV they read, MemoryBoundTime, at least their
// FLOPs at the attention rate; CSA2: the window, top-k and indexer-key reads against the core
// and scoring FLOPs); the embedding, final norm and LM head once. Summed, at least the launch
// floor, plus the collectives.
//
// `memo`: the kernel sums already computed for this replica (KernelSumMemo), or none.
class KernelSumMemo;
IterationCost IterationSeconds(const ReplicaModel& replica, const IterationWork& work,
                               KernelSumMemo* memo = nullptr);

// The GEMM and memory-bound kernel sums of one replica's iterations by their rows
// (IterationRows -> KernelSeconds): a simulation meets the same rows again and again (every
// decode step of a batch of the same size), and the sum is a pure function of them. One per
// simulation and replica (not shared between threads); direct-mapped, a collision recomputes.
class KernelSumMemo {
 public:
  // The sum for `rows`, from the memo or computed by `compute` and kept.
  template <typename Compute>
  KernelSeconds Get(const IterationRows& rows, Compute compute) {
    Entry& entry = entries_[Slot(rows)];
    if (entry.filled && Same(entry.rows, rows)) return entry.sum;
    entry = Entry{rows, compute(), true};
    return entry.sum;
  }

 private:
  static constexpr size_t kEntries = 4096;
  struct Entry {
    IterationRows rows;
    KernelSeconds sum;
    bool filled = false;
  };
  static size_t Slot(const IterationRows& rows);
  static bool Same(const IterationRows& a, const IterationRows& b);
  std::vector<Entry> entries_ = std::vector<Entry>(kEntries);
};

// One TP all-reduce of `bytes` over `tp` GPUs of a node as the engines run small ones: vLLM's
// custom all-reduce (csrc/custom_all_reduce.cuh: one-stage, every rank reading every peer's
// buffer, alpha + (n-1)S/beta; two-stage, reduce-scatter then all-gather, 2 alpha + 2(n-1)/n
// S/beta), the faster of the two; a group across nodes takes NCCL's ring (comm/collective.h).
double TpAllReduceSeconds(const ClusterSpec& cluster, int32_t tp, double bytes);

// "tp 8 x pp 1, 1 replica (8 GPUs)"; with EP, "tp 1 x pp 1, ep 8 (8 attention DP groups), ...".
std::string DescribeShape(const ServeShape& shape);

}  // namespace stagecraft
