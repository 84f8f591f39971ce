#include "serve/step_cost.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "comm/collective.h"
#include "core/units.h"
#include "model/layer_costs.h"
#include "serve/engine_profile.h"
#include "serve/speculative.h"

namespace stagecraft {
namespace {

std::string Num(int64_t value) { return std::to_string(value); }

// Tensor parallelism splits the query heads (Megatron's column-parallel QKV) and, for
// MHA/GQA/MQA, the KV heads; with more ranks than KV heads each rank keeps one head and the
// heads are replicated tp/g times (vLLM's QKVParallelLinear: num_kv_head_replicas).
Status CheckHeads(const TransformerSpec& model, const ServeShape& shape) {
  const int64_t tp = shape.tp;
  if (model.heads % tp != 0) {
    return Error{"--tp " + Num(tp) + ": tensor parallelism must divide the " + Num(model.heads) +
                 " attention heads (expected a divisor of " + Num(model.heads) + ", e.g. " +
                 Num(std::gcd(model.heads, int64_t{8})) + ")"};
  }
  if (model.mla()) return Status::Ok();
  const int64_t kv_heads = model.kv_heads_or_heads();
  if (kv_heads % tp != 0 && tp % kv_heads != 0) {
    return Error{"--tp " + Num(tp) + ": the " + Num(kv_heads) +
                 " KV heads can neither be split nor replicated evenly (expected tp dividing " +
                 Num(kv_heads) + " or a multiple of it)"};
  }
  return Status::Ok();
}

// Expert parallelism (vLLM: EP = TP x DP, whole experts per GPU): a MoE model, E a multiple of
// tp (the attention's data-parallel groups of tp GPUs) dividing the routed experts.
Status CheckExperts(const TransformerSpec& model, const ServeShape& shape) {
  if (shape.ep == 1) return Status::Ok();
  const int64_t ep = shape.ep;
  if (!model.moe()) {
    return Error{"--ep " + Num(ep) +
                 ": expert parallelism needs a mixture-of-experts model; this one has a dense "
                 "MLP (drop --ep)"};
  }
  if (ep % shape.tp != 0) {
    return Error{"--ep " + Num(ep) + ": expert parallelism spans the stage's GPUs, tp x the " +
                 "attention's data-parallel groups (vLLM's EP = TP x DP), so it must be a " +
                 "multiple of --tp " + Num(shape.tp) + " (e.g. --ep " + Num(shape.tp) + ")"};
  }
  if (model.experts % ep != 0) {
    return Error{"--ep " + Num(ep) + ": expert parallelism must divide the " + Num(model.experts) +
                 " routed experts (expected a divisor of " + Num(model.experts) + ", e.g. " +
                 Num(std::gcd(model.experts, int64_t{8})) + ")"};
  }
  return Status::Ok();
}

}  // namespace

Status CheckServeShape(const TransformerSpec& model, const ClusterSpec& cluster,
                       const ServeShape& shape) {
  if (shape.tp < 1 || shape.pp < 1 || shape.replicas < 1 || shape.ep < 1) {
    return Error{"serve: --tp, --pp, --ep and --replicas must be at least 1 (got tp " +
                 Num(shape.tp) + ", pp " + Num(shape.pp) + ", ep " + Num(shape.ep) + ", replicas " +
                 Num(shape.replicas) + ")"};
  }
  if (shape.ep > 4096) {
    return Error{"--ep " + Num(shape.ep) +
                 ": too many expert-parallel GPUs (expected at most 4096 per stage)"};
  }
  STAGECRAFT_RETURN_IF_ERROR(CheckExperts(model, shape));
  if (shape.tp > cluster.devices_per_node) {
    return Error{"--tp " + Num(shape.tp) + ": tensor parallelism stays inside a node of " +
                 Num(cluster.devices_per_node) + " GPUs (expected at most " +
                 Num(cluster.devices_per_node) + "; use --pp for more GPUs per replica)"};
  }
  if (model.layers % shape.pp != 0) {
    return Error{"--pp " + Num(shape.pp) + ": the stages must split the " + Num(model.layers) +
                 " layers evenly (expected a divisor of " + Num(model.layers) + ")"};
  }
  if (shape.gpus() > cluster.num_devices()) {
    return Error{
        "serve: " + DescribeShape(shape) + " needs more GPUs than the cluster's " +
        Num(cluster.num_devices()) +
        (shape.ep > 1 ? " (expected replicas x ep x pp <= " : " (expected replicas x tp x pp <= ") +
        Num(cluster.num_devices()) + "; a larger --cluster DEVICExNODES, or fewer --replicas" +
        (shape.ep > 1 ? " or a smaller --ep)" : ")")};
  }
  if (cluster.hbm_bytes <= 0 || cluster.hbm_bytes_per_s <= 0) {
    return Error{
        "serve: the cluster has no device memory size or bandwidth (expected a preset: "
        "cluster.preset or --cluster, e.g. h100; stagecraft list presets)"};
  }
  return CheckHeads(model, shape);
}

namespace {

// The forward workspace the engine profiles at the token budget (vLLM's profile run): the
// residual stream and its normed copy (2h per token), the MLP's gate-and-up output (2f/tp) and
// the logits of the sampled sequences in fp32 (V/tp), all in the weights' dtype otherwise.
double ActivationBytes(const TransformerSpec& model, const ServeShape& shape,
                       const EngineOptions& engine) {
  const double ffn = model.moe()
                         ? static_cast<double>(model.expert_ffn) *
                               static_cast<double>(model.experts_per_token + model.shared_experts)
                         : static_cast<double>(model.ffn_or_default());
  const double per_token =
      (2.0 * static_cast<double>(model.hidden) + 2.0 * ffn / shape.tp) * engine.activation_bytes;
  const double logits =
      static_cast<double>(engine.max_seqs) * static_cast<double>(model.vocab) / shape.tp * 4.0;
  return static_cast<double>(engine.token_budget) * per_token + logits;
}

void SizeKv(ReplicaModel& replica) {
  const TransformerSpec& model = replica.model;
  const double layers_per_stage = static_cast<double>(model.layers) / replica.shape.pp;
  if (model.mla()) {
    // MLA's latent is shared by all heads: every TP rank keeps the whole of it (vLLM's MLA
    // backends replicate the latent cache across TP ranks).
    replica.kv_replicated = replica.shape.tp > 1;
    replica.kv_bytes_per_token_per_gpu = replica.kv.total() / replica.shape.pp;
    return;
  }
  const int64_t kv_heads = model.kv_heads_or_heads();
  replica.kv_heads_per_gpu = std::max<int64_t>(1, kv_heads / replica.shape.tp);
  replica.kv_replicated = replica.shape.tp > kv_heads;
  replica.kv_bytes_per_token_per_gpu = 2.0 * static_cast<double>(replica.kv_heads_per_gpu) *
                                       static_cast<double>(model.head_dim_or_default()) *
                                       layers_per_stage * replica.engine.kv_bytes;
}

// The replica's kernels on one GPU (iteration_kernels.h), built once.
void SizeKernels(ReplicaModel& replica) {
  const TransformerSpec& model = replica.model;
  const KernelLayout layout{
      .tp = replica.shape.tp,
      .ep = replica.shape.ep,
      .kv_heads_per_gpu = replica.kv_heads_per_gpu,
      .weight_bytes = replica.engine.weight_bytes,
      .fp8 = replica.engine.fp8_compute,
      .activation_bytes = static_cast<double>(replica.engine.activation_bytes),
      .kv_bytes = static_cast<double>(replica.engine.kv_bytes),
      .kv_bytes_per_token_per_layer =
          replica.kv_bytes_per_token_per_gpu * replica.shape.pp / model.layers};
  replica.kernels = TransformerServeKernels(model, layout, replica.cluster.kernels);
  ServeKernels& kernels = replica.kernels;
  const KernelModel& device = replica.cluster.kernels;
  if (replica.engine.attention_kernel.has_value()) {
    kernels.attention = ResolveAttentionKernel(device, *replica.engine.attention_kernel);
  }
  const EngineOptions& engine = replica.engine;
  kernels.fp8_attention = engine.fp8_context_attention && engine.fp8_compute &&
                          engine.kv_bytes == 1 &&
                          AttentionKernelRuns(device, kernels.attention, false, true);
}

}  // namespace

Result<WeightDtype> ParseWeightDtype(std::string_view name) {
  static constexpr std::pair<const char*, WeightDtype> kNames[] = {{"bf16", WeightDtype::kBf16},
                                                                   {"fp8", WeightDtype::kFp8},
                                                                   {"int8", WeightDtype::kInt8},
                                                                   {"int4", WeightDtype::kInt4},
                                                                   {"fp4", WeightDtype::kFp4}};
  for (const auto& [spelled, dtype] : kNames) {
    if (name == spelled) return dtype;
  }
  return Error{"--weight-dtype '" + std::string(name) + "': expected bf16, fp8, int8, int4 or fp4"};
}

Result<KvDtype> ParseKvDtype(std::string_view name) {
  if (name == "bf16") return KvDtype::kBf16;
  if (name == "fp8") return KvDtype::kFp8;
  return Error{"--kv-dtype '" + std::string(name) + "': expected bf16 or fp8"};
}

Status ApplyDtypes(const ServeDtypes& chosen, const TransformerSpec& model, EngineOptions& engine) {
  // The choice, else the model's own format (its config), else bf16.
  WeightDtype weights = WeightDtype::kBf16;
  if (chosen.weights.has_value()) {
    weights = *chosen.weights;
  } else if (!model.weight_format.empty()) {
    auto own = ParseWeightDtype(model.weight_format);
    if (!own.ok()) return own.error();
    weights = own.value();
  }
  KvDtype kv = KvDtype::kBf16;
  if (chosen.kv.has_value()) {
    kv = *chosen.kv;
  } else if (!model.kv_cache_dtype.empty()) {
    auto own = ParseKvDtype(model.kv_cache_dtype);
    if (!own.ok()) return own.error();
    kv = own.value();
  }
  switch (weights) {
    case WeightDtype::kBf16:
      engine.weight_bytes = 2;
      break;
    case WeightDtype::kFp8:
    case WeightDtype::kInt8:
      engine.weight_bytes = 1;
      break;
    case WeightDtype::kInt4:
    case WeightDtype::kFp4:
      engine.weight_bytes = 0.5;
      break;
  }
  engine.fp8_compute = weights == WeightDtype::kFp8;
  engine.kv_bytes = kv == KvDtype::kFp8 ? 1 : 2;
  return Status::Ok();
}

void ApplyBatching(EngineOptions::Batching batching, int64_t max_model_len, EngineOptions& engine) {
  engine.batching = batching;
  if (batching == EngineOptions::Batching::kPrefillFirst) {
    engine.token_budget = std::max<int64_t>(max_model_len, 2048);
  }
}

std::string DescribeShape(const ServeShape& shape) {
  const std::string ep =
      shape.ep > 1
          ? ", ep " + Num(shape.ep) +
                (shape.attention_dp() > 1
                     ? " (attention data-parallel over " + Num(shape.attention_dp()) + " groups)"
                     : "")
          : "";
  return "tp " + Num(shape.tp) + " x pp " + Num(shape.pp) + ep + ", " + Num(shape.replicas) +
         (shape.replicas == 1 ? " replica (" : " replicas (") + Num(shape.gpus()) +
         (shape.gpus() == 1 ? " GPU)" : " GPUs)");
}

Result<ReplicaModel> BuildReplicaModel(const TransformerSpec& model, const ClusterSpec& cluster,
                                       const ServeShape& shape, const EngineOptions& engine) {
  auto replica = ShapeReplicaModel(model, cluster, shape, engine);
  if (!replica.ok()) return replica;
  if (engine.speculative_tokens > 0) STAGECRAFT_RETURN_IF_ERROR(AttachMtpDraft(replica.value()));
  STAGECRAFT_RETURN_IF_ERROR(SizeKvCapacity(replica.value()));
  return replica;
}

Result<ReplicaModel> ShapeReplicaModel(const TransformerSpec& model, const ClusterSpec& cluster,
                                       const ServeShape& shape, const EngineOptions& engine) {
  if (model.layers <= 0) {
    return Error{
        "serve: the model is not a transformer (expected model.type: transformer with "
        "its dimensions, or --hf-config FILE)"};
  }
  STAGECRAFT_RETURN_IF_ERROR(CheckServeShape(model, cluster, shape));
  ReplicaModel replica;
  replica.model = model;
  replica.cluster = cluster;
  replica.shape = shape;
  replica.engine = engine;
  replica.kv = TransformerKvCachePerToken(model, engine.kv_bytes);
  SizeKv(replica);
  SizeKernels(replica);
  // The fullest GPU: its stage's layers and the embedding (first stage) or the head (last);
  // with one stage, both (the head counted once when tied). Vocabulary-parallel under TP.
  const double embedding = EmbeddingParams(model, 0);
  const double head = model.tied_embeddings ? 0.0 : embedding;
  const double layers = TransformerParams(model, 0) - embedding - head;
  const double ends = shape.pp == 1 ? embedding + head : embedding;
  // Under EP the routed experts are split ep ways (whole experts), not over tp.
  const double routed =
      model.moe() ? (model.layers - model.dense_layers) * RoutedExpertParams(model) / shape.pp
                  : 0.0;
  const double expert_split = shape.ep > 1 ? shape.ep : shape.tp;
  replica.weight_bytes_per_gpu =
      ((layers / shape.pp - routed + ends) / shape.tp + routed / expert_split) *
      engine.weight_bytes;
  replica.activation_bytes_per_gpu = ActivationBytes(model, shape, engine);
  replica.stage_cut_width = model.hidden;
  return replica;
}

Status SizeKvCapacity(ReplicaModel& replica) {
  const ClusterSpec& cluster = replica.cluster;
  const ServeShape& shape = replica.shape;
  const EngineOptions engine = replica.engine;
  replica.reserve_bytes_per_gpu = static_cast<double>(cluster.memory_reserve_bytes);
  const double hbm = static_cast<double>(cluster.hbm_bytes);
  const double taken = replica.weight_bytes_per_gpu + replica.activation_bytes_per_gpu +
                       replica.reserve_bytes_per_gpu;
  replica.kv_budget_bytes_per_gpu = engine.kv_free_fraction > 0
                                        ? engine.kv_free_fraction * (hbm - taken)
                                        : hbm * engine.memory_utilization - taken;
  if (engine.sglang_static_memory && engine.kv_free_fraction <= 0) {
    // SGLang's mem_fraction_static holds the weights and the KV pool; its reserve covers the
    // activations and the CUDA graphs.
    replica.engine.memory_utilization =
        SglangMemFractionStatic(hbm, shape.tp, shape.pp, engine.token_budget);
    replica.kv_budget_bytes_per_gpu =
        hbm * replica.engine.memory_utilization - replica.weight_bytes_per_gpu;
  }
  // The draft's layer (the MTP module) caches its own KV per token on the last stage.
  const double token_bytes = replica.kv_bytes_per_token_per_gpu +
                             (replica.draft ? replica.draft->kv_bytes_per_token_per_gpu : 0.0);
  const double block_bytes = token_bytes * engine.block_tokens;
  const double blocks = std::floor(replica.kv_budget_bytes_per_gpu / block_bytes);
  if (blocks < 1) {
    return MakeError(
        ErrorKind::kInfeasible,
        "serve: " + DescribeShape(shape) + " cannot hold the model: per GPU " +
            FormatGib(replica.weight_bytes_per_gpu) + " GiB of weights + " +
            FormatGib(replica.activation_bytes_per_gpu) + " GiB of activations + " +
            FormatGib(replica.reserve_bytes_per_gpu) + " GiB reserved leave no room for one KV " +
            "block within " +
            (engine.kv_free_fraction > 0
                 ? FormatFixed(engine.kv_free_fraction * 100, 0) + "% of what is left of "
                 : FormatFixed(replica.engine.memory_utilization * 100, 0) + "% of ") +
            FormatGib(hbm) + " GiB" +
            " (expected more GPUs per replica: a larger --tp or --pp, or a device with more "
            "memory)");
  }
  // Each attention DP group holds its own requests' KV and runs its own engine loop.
  const int32_t groups = shape.attention_dp();
  replica.kv_capacity_tokens = static_cast<int64_t>(blocks) * engine.block_tokens * groups;
  replica.engine.token_budget = engine.token_budget * groups;
  replica.engine.max_seqs = engine.max_seqs * groups;
  if (engine.max_running > 0) replica.engine.max_running = engine.max_running * groups;
  return Status::Ok();
}

double TpAllReduceSeconds(const ClusterSpec& cluster, int32_t tp, double bytes) {
  if (tp <= 1 || bytes <= 0) return 0;
  if (tp > cluster.devices_per_node) {
    return static_cast<double>(
               RingTime(cluster, Collective::kAllReduce, tp, cluster.devices_per_node, bytes)
                   .ns()) *
           1e-9;
  }
  const double alpha = static_cast<double>(cluster.intra_node.latency.ns()) * 1e-9;
  const double beta = cluster.intra_node.bandwidth_bytes_per_s;
  const double n = tp;
  const double one_stage = alpha + (beta > 0 ? (n - 1) * bytes / beta : 0);
  const double two_stage = 2 * alpha + (beta > 0 ? 2 * (n - 1) / n * bytes / beta : 0);
  return std::min(one_stage, two_stage);
}

double KvTokensHeld(const ReplicaModel& replica, double context) {
  if (replica.csa2) {
    // The bounding stage's bytes, in its bytes per token: the compressed entries and indexer
    // keys grow with the context, the window KV stops at n_win tokens.
    const Csa2Serving& csa2 = *replica.csa2;
    const double unit = replica.kv_bytes_per_token_per_gpu;
    if (unit <= 0) return context;
    const double windowed = std::min(context, static_cast<double>(csa2.window));
    return (csa2.stage_token_bytes * context + csa2.stage_window_bytes * windowed) / unit;
  }
  const KvCachePerToken& kv = replica.kv;
  if (kv.window_tokens <= 0 || kv.windowed_bytes <= 0 || kv.total() <= 0) return context;
  const double past = std::max(0.0, context - static_cast<double>(kv.window_tokens));
  return context - kv.windowed_bytes / kv.total() * past;
}

double RoutedExpertsTouched(const TransformerSpec& model, double tokens) {
  if (!model.moe() || model.experts_per_token >= model.experts) return 1.0;
  const double miss =
      1.0 - static_cast<double>(model.experts_per_token) / static_cast<double>(model.experts);
  return 1.0 - std::pow(miss, std::max(0.0, tokens));
}

ExpertAllToAll ExpertAllToAllSeconds(const ClusterSpec& cluster, int32_t ep,
                                     const TransformerSpec& model, double tokens_per_gpu,
                                     double dispatch_bytes, double combine_bytes) {
  ExpertAllToAll cost;
  if (ep <= 1 || !model.moe() || tokens_per_gpu <= 0) return cost;
  const double per_token =
      static_cast<double>(model.experts_per_token) * static_cast<double>(model.hidden);
  cost.dispatch_bytes = tokens_per_gpu * per_token * dispatch_bytes;
  cost.combine_bytes = tokens_per_gpu * per_token * combine_bytes;
  const int32_t per_node = std::min(ep, std::max(1, cluster.devices_per_node));
  cost.dispatch_s =
      static_cast<double>(
          RingTime(cluster, Collective::kAllToAll, ep, per_node, cost.dispatch_bytes).ns()) *
      1e-9;
  cost.combine_s =
      static_cast<double>(
          RingTime(cluster, Collective::kAllToAll, ep, per_node, cost.combine_bytes).ns()) *
      1e-9;
  return cost;
}

namespace {

// The collectives of one iteration (TP all-reduces, EP all-to-alls, PP hand-offs) into `cost`.
void AddCommunication(const ReplicaModel& replica, const IterationWork& work, IterationCost& cost) {
  const ServeShape& shape = replica.shape;
  const TransformerSpec& model = replica.model;
  // Each attention DP group runs its share of the tokens.
  const double group_tokens = work.new_tokens / shape.attention_dp();
  const double hidden_bytes =
      group_tokens * static_cast<double>(model.hidden) * replica.engine.activation_bytes;
  const int32_t moe_layers = model.moe() ? model.layers - model.dense_layers : 0;
  // With attention DP groups the MoE layers exchange tokens by all-to-all instead of reducing
  // the MLP's output over the TP group (vLLM's EP with DP > 1; with DP 1 every TP rank holds
  // every token and the experts' outputs are all-reduced as under TP).
  const bool alltoall = shape.ep > 1 && shape.attention_dp() > 1 && moe_layers > 0;
  if (shape.tp > 1) {
    // After attention, and after the MLP except where the all-to-all's combine replaces it.
    cost.allreduces = 2 * model.layers - (alltoall ? moe_layers : 0);
    cost.allreduce_s =
        cost.allreduces * TpAllReduceSeconds(replica.cluster, shape.tp, hidden_bytes);
  }
  if (alltoall) {
    // FP8 dispatch with FP8 weights (DeepEP's low-latency dispatch quantizes to FP8, as the
    // DeepSeek-V3 report §3.3.3, "Low-Precision Storage and Communication", does), the combine
    // in the activations' dtype.
    const double dispatch_bytes =
        replica.engine.fp8_compute ? 1.0 : replica.engine.activation_bytes;
    const ExpertAllToAll layer =
        ExpertAllToAllSeconds(replica.cluster, shape.ep, model, work.new_tokens / shape.ep,
                              dispatch_bytes, replica.engine.activation_bytes);
    cost.alltoalls = 2 * moe_layers;
    cost.alltoall_s = moe_layers * layer.seconds();
  }
  if (shape.pp > 1) {
    const bool crosses_nodes = shape.gpus_per_replica() > replica.cluster.devices_per_node;
    const LinkSpec& link = crosses_nodes ? replica.cluster.inter_node : replica.cluster.intra_node;
    // Each TP rank sends its slice (sequence-split) of what crosses the cut.
    const double bytes = group_tokens * static_cast<double>(replica.stage_cut_width) *
                         replica.engine.activation_bytes / shape.tp;
    const double one = static_cast<double>(link.latency.ns()) * 1e-9 +
                       (link.bandwidth_bytes_per_s > 0 ? bytes / link.bandwidth_bytes_per_s : 0);
    cost.handoff_s = (shape.pp - 1) * one;
  }
}

}  // namespace

namespace {

// FlashAttention's key block: the roll-off's unit (AttentionTime's key_blocks).
constexpr double kAttentionKeyBlock = 128;

// The rows of each kernel kind on the fullest GPU: its attention DP group's share of the tokens;
// the routed experts' rows from all of the stage's tokens.
IterationRows RowsOf(const ReplicaModel& replica, const IterationWork& work) {
  const ServeKernels& kernels = replica.kernels;
  const double dp = replica.shape.attention_dp();
  const double prefill = std::clamp(work.prefill_tokens, 0.0, work.new_tokens);
  IterationRows rows;
  rows[KernelRows::kTokens] = work.new_tokens / dp;
  rows[KernelRows::kDecodeTokens] = (work.new_tokens - prefill) / dp;
  rows[KernelRows::kPrefillKeys] = work.prefill_keys / dp;
  rows[KernelRows::kSequences] = work.sequences / dp;
  if (kernels.experts > 0) {
    rows.experts_touched = RoutedExpertsTouched(replica.model, work.new_tokens);
    const double pairs = work.new_tokens * kernels.experts_per_token;
    rows[KernelRows::kExpertTokens] = pairs / kernels.experts / rows.experts_touched;
    rows[KernelRows::kAssignments] = pairs / kernels.expert_split;
  }
  return rows;
}

// The attention of every decoder on the fullest GPU into `cost`.
void AddAttention(const ReplicaModel& replica, const IterationWork& work, const DeviceRates& rates,
                  IterationCost& cost) {
  const ServeKernels& kernels = replica.kernels;
  const double dp = replica.shape.attention_dp();
  const double layers = replica.model.layers;
  double per_layer = 0;
  int32_t launched = 0;
  if (replica.csa2) {
    // Per decoder, the layer classes' totals spread evenly: the core (heads over the stage's
    // GPUs) against its window and top-k reads, and the indexer's scoring (whole on every TP
    // rank) against its key reads.
    const double core = work.csa2_core_flops / replica.shape.stage_gpus() / layers;
    const double scoring = work.csa2_scoring_flops / dp / layers;
    const double index_reads = std::min(work.csa2_index_read_bytes, work.csa2_read_bytes);
    const double reads = (work.csa2_read_bytes - index_reads) / dp / layers;
    per_layer = std::max(MemoryBoundSeconds(rates, reads),
                         AttentionSeconds(rates, core, false, 0, kernels.attention)) +
                std::max(MemoryBoundSeconds(rates, index_reads / dp / layers),
                         AttentionSeconds(rates, scoring, false, 0, kernels.attention));
    launched = scoring > 0 || index_reads > 0 ? 2 : 1;
  } else {
    const double prefill_tokens = std::clamp(work.prefill_tokens, 0.0, work.new_tokens);
    const double prefill_pairs = std::clamp(work.prefill_pairs, 0.0, work.attention_pairs);
    if (prefill_tokens > 0 && prefill_pairs > 0) {
      // A chunk's queries meet (mean keys per query) / 128 key blocks each.
      const double key_blocks = prefill_pairs / prefill_tokens / kAttentionKeyBlock;
      per_layer += AttentionTime(rates, prefill_pairs / dp * kernels.prefill_flops_per_pair, false,
                                 key_blocks, kernels.attention, kernels.fp8_attention)
                       .seconds;
      ++launched;
    }
    const double decodes = work.new_tokens - prefill_tokens;
    if (decodes > 0) {
      // One query against its context: the KV held read (and the new token's), at least the
      // FLOPs at the attention rate.
      const double held =
          std::max(0.0, work.context_tokens - work.prefill_context_tokens) + decodes;
      const double pairs = std::max(0.0, work.attention_pairs - prefill_pairs);
      per_layer += std::max(MemoryBoundSeconds(rates, held / dp * kernels.kv_bytes_per_token),
                            AttentionSeconds(rates, pairs / dp * kernels.decode_flops_per_pair,
                                             false, 0, kernels.attention));
      ++launched;
    }
  }
  cost.attention_s = per_layer * layers;
  cost.kernels += launched * replica.model.layers;
}

}  // namespace

size_t KernelSumMemo::Slot(const IterationRows& rows) {
  uint64_t hash = 0x9e3779b97f4a7c15ULL;
  const auto mix = [&](double value) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    hash = (hash ^ bits) * 0xff51afd7ed558ccdULL;
    hash ^= hash >> 33;
  };
  for (const double row : rows.rows) mix(row);
  mix(rows.experts_touched);
  return static_cast<size_t>(hash % kEntries);
}

bool KernelSumMemo::Same(const IterationRows& a, const IterationRows& b) {
  return std::equal(std::begin(a.rows), std::end(a.rows), std::begin(b.rows)) &&
         a.experts_touched == b.experts_touched;
}

IterationCost IterationSeconds(const ReplicaModel& replica, const IterationWork& work,
                               KernelSumMemo* memo) {
  IterationCost cost;
  if (work.new_tokens <= 0) return cost;
  const DeviceRates rates = replica.cluster.rates();
  const IterationRows rows = RowsOf(replica, work);
  const auto sum = [&] {
    KernelSeconds kernels;
    for (const ServeLayerClass& layers : replica.kernels.layers) {
      AddKernels(rates, layers.kernels, rows, layers.count, kernels);
    }
    AddKernels(rates, replica.kernels.once, rows, 1, kernels);
    return kernels;
  };
  const KernelSeconds kernels = memo != nullptr ? memo->Get(rows, sum) : sum();
  cost.gemm_s = kernels.gemm_s;
  cost.memory_s = kernels.memory_s;
  cost.kernels = kernels.kernels;
  AddAttention(replica, work, rates, cost);
  cost.compute_s = cost.gemm_s + cost.attention_s;
  AddCommunication(replica, work, cost);
  // With CUDA graphs every kernel's time above already holds the device's floor; eager, the host
  // issues each kernel in its own time, which bounds the whole when the kernels are shorter
  // (KernelSum::HostBound on the training side).
  const KernelModel& device = replica.cluster.kernels;
  cost.launch_s = cost.kernels * (replica.engine.cuda_graphs ? device.kernel_floor_s
                                                             : device.host_seconds_per_kernel);
  cost.total_s = std::max(cost.compute_s + cost.memory_s, cost.launch_s) + cost.allreduce_s +
                 cost.alltoall_s + cost.handoff_s;
  return cost;
}

void AddSequence(const ReplicaModel& replica, double tokens, double context, bool finishes,
                 IterationWork& work) {
  work.new_tokens += tokens;
  if (finishes) work.sequences += 1;
  const double held = KvTokensHeld(replica, context);
  const double pairs = tokens * context + tokens * (tokens + 1) / 2;
  work.context_tokens += held;
  work.attention_pairs += pairs;
  if (tokens > 1) {
    work.prefill_tokens += tokens;
    work.prefill_pairs += pairs;
    work.prefill_context_tokens += held;
    work.prefill_keys += context + tokens;
  }
  if (!replica.csa2) return;
  const Csa2Serving& csa2 = *replica.csa2;
  const Csa2Dims& dims = csa2.dims;
  const double core_per_pair = 4.0 * dims.heads * dims.head_dim;  // QK^T and PV, K = V
  const double score_per_entry = 2.0 * dims.indexer_heads * dims.indexer_key_dim;
  const auto begin = static_cast<int64_t>(context);
  const auto end = static_cast<int64_t>(context + tokens);
  for (const Csa2Serving::LayerClass& layers : csa2.classes) {
    const AttentionSpan span = LayerAttentionSpan(layers.layer, dims, begin, end);
    // The chunk's queries select at most tokens x top-k distinct entries of those visible.
    const double selected = std::min(span.visible_entries, tokens * dims.top_k);
    work.csa2_core_flops +=
        layers.count * core_per_pair * (span.window_pairs + span.compressed_pairs);
    work.csa2_scoring_flops += layers.count * score_per_entry * span.scored_pairs;
    const double index_reads = span.scorable_entries * csa2.index_entry_bytes;
    work.csa2_read_bytes += layers.count * (span.window_entries * csa2.window_entry_bytes +
                                            selected * csa2.main_entry_bytes + index_reads);
    work.csa2_index_read_bytes += layers.count * index_reads;
  }
}

}  // namespace stagecraft
