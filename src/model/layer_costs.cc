// Per-layer FLOPs and costs of a layer-list model. Every formula is from the project's
// doc/csa2.md, "Per-layer cost formulas" (DeepSeek-V4.1-Flash report §2.3–2.4; FLOPs are
// 2 × multiply-adds, forward). Only the terms listed there are counted: norms, RoPE, the mHC
// mixing, the router softmax and the top-k selection itself are left out (small next to these).
#include "model/layer_costs.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>
#include <vector>

#include "model/layer_kernels.h"

namespace stagecraft {
namespace {

// Engram (csa2.md): 24 rows looked up per token (n-gram orders 2-4 x 8 hash heads), 256 values
// per row (multimodal/engram.h holds the same figures for the table sizes).
constexpr double kEngramLookupsPerToken = 24.0;
constexpr double kEngramValuesPerRow = 256.0;

// A full layer's compressor: d·c parameters, twice with compression (m > 1).
double CompressorParams(const Csa2Dims& dims, int64_t m) {
  return static_cast<double>(dims.hidden) * dims.head_dim * (m > 1 ? 2 : 1);
}

// A dense MLP's width: the configured one, else 4d.
double DenseWidth(const Csa2Dims& dims) {
  return dims.dense_width > 0 ? dims.dense_width : 4.0 * dims.hidden;
}

// Positions per candidate block: the pool is <= candidate_blocks × 8 positions (csa2.md,
// "Indexer: ... candidate pool <= 2048 blocks × 8 positions").
constexpr int64_t kCandidateBlockPositions = 8;

// Σ_{t=1..S} min(t, window): the sliding-window keys each query position sees.
double SumWindow(int64_t seq_len, int64_t window) {
  const int64_t full = std::min(seq_len, window);
  return static_cast<double>(full) * static_cast<double>(full + 1) / 2.0 +
         static_cast<double>(seq_len - full) * static_cast<double>(window);
}

// Σ_{t=1..S} min(cap, floor(t/m)): compressed entries a query at position t sees (one per m
// tokens, csa2.md "a query at position t sees ≈ t/m entries"), capped at `cap`.
// REQUIRES: m >= 1, cap >= 0.
double SumCompressed(int64_t seq_len, int64_t m, int64_t cap) {
  assert(m >= 1 && cap >= 0);
  // Positions t < cap·m see floor(t/m) < cap entries; the rest see `cap`.
  const int64_t uncapped = std::min(seq_len, cap * m - 1);
  if (uncapped <= 0) return static_cast<double>(seq_len) * static_cast<double>(cap);
  const int64_t blocks = uncapped / m;  // full blocks of m positions: values 0 .. blocks−1
  const int64_t rest = uncapped - blocks * m + 1;  // positions blocks·m .. uncapped, value blocks
  const double below =
      static_cast<double>(m) * static_cast<double>(blocks) * static_cast<double>(blocks - 1) / 2.0 +
      static_cast<double>(blocks) * static_cast<double>(rest);
  return below + static_cast<double>(seq_len - uncapped) * static_cast<double>(cap);
}

// Attention projections P = d·d_c + d_c·n_h·c + d·c + n_h·c·d_g + g·d_g·d (≈126.6M for V4.1):
// query down / up, the shared KV head, the grouped output projection in two steps.
double AttentionProjectionParams(const Csa2Dims& dims) {
  const double d = dims.hidden;
  const double heads_width = static_cast<double>(dims.heads) * dims.head_dim;
  return d * dims.query_latent + dims.query_latent * heads_width + d * dims.head_dim +
         heads_width * dims.output_group_dim +
         static_cast<double>(dims.output_groups) * dims.output_group_dim * d;
}

// Indexer query projection d_c·n_I·c_I + d·n_I parameters (≈5.4M for V4.1: 10.8 MFLOP/token).
double IndexerQueryParams(const Csa2Dims& dims) {
  const double indexer_width = static_cast<double>(dims.indexer_heads) * dims.indexer_key_dim;
  return dims.query_latent * indexer_width + static_cast<double>(dims.hidden) * dims.indexer_heads;
}

// The attention block of one sequence of `seq_len` tokens.
double AttentionFlopsPerSequence(const LayerSpec& layer, const Csa2Dims& dims, int64_t seq_len) {
  const double tokens = static_cast<double>(seq_len);
  const double core_per_key = 4.0 * dims.heads * dims.head_dim;  // QK^T and PV, K = V
  const double score_per_entry = 2.0 * dims.indexer_heads * dims.indexer_key_dim;
  double flops = 2.0 * AttentionProjectionParams(dims) * tokens +
                 core_per_key * SumWindow(seq_len, dims.window);
  if (layer.attention == AttentionMode::kSwaOnly) return flops;
  const int64_t m = std::max(layer.compress_ratio, 1);
  flops += core_per_key * SumCompressed(seq_len, m, dims.top_k);
  if (layer.attention == AttentionMode::kFull) {
    // Compressor d·c·(1 + [m>1]) params; indexer keys 2·c·c_I per compressed entry (= /m per
    // token); indexer query; scoring every visible compressed entry.
    flops += 2.0 * CompressorParams(dims, m) * tokens +
             2.0 * dims.head_dim * dims.indexer_key_dim * tokens / static_cast<double>(m) +
             2.0 * IndexerQueryParams(dims) * tokens +
             score_per_entry * SumCompressed(seq_len, m, seq_len);
  } else if (layer.attention == AttentionMode::kReindex) {
    // Indexer query, scoring only inside the candidate pool (<= candidate_blocks × 8 entries).
    const int64_t pool = int64_t{dims.candidate_blocks} * kCandidateBlockPositions;
    flops +=
        2.0 * IndexerQueryParams(dims) * tokens + score_per_entry * SumCompressed(seq_len, m, pool);
  }
  return flops;  // reuse adds nothing
}

// The compressed entries the indexer of `layer` scores for the query positions begin+1 .. end
// (1-based): a full layer every visible one (⌊t/m⌋), a reindex layer at most its candidate pool's
// (<= candidate_blocks × 8), other layers none.
double ScoredEntries(const LayerSpec& layer, const Csa2Dims& dims, int64_t begin, int64_t end) {
  if (layer.kind != LayerKind::kDecoder) return 0.0;
  const int64_t m = std::max(layer.compress_ratio, 1);
  int64_t cap = end;  // a full layer: no query sees more than ⌊end/m⌋ <= end entries
  if (layer.attention == AttentionMode::kReindex) {
    cap = int64_t{dims.candidate_blocks} * kCandidateBlockPositions;
  } else if (layer.attention != AttentionMode::kFull) {
    return 0.0;
  }
  return SumCompressed(end, m, cap) - SumCompressed(begin, m, cap);
}

// MoE 2·3·d·f·(k_e + E_s) + 2·d·E (SwiGLU experts plus the router), dense 2·3·d·f; per token.
double MlpFlopsPerToken(const LayerSpec& layer, const Csa2Dims& dims) {
  const double d = dims.hidden;
  if (layer.mlp == MlpKind::kDense) {
    return 2.0 * 3.0 * d * DenseWidth(dims);
  }
  return 2.0 * 3.0 * d * dims.expert_width * (dims.experts_per_token + dims.shared_experts) +
         2.0 * d * dims.routed_experts;
}

Time FlopsToTime(double flops, double flops_per_second) {
  return FromSeconds(flops / flops_per_second);
}

}  // namespace

AttentionSpan LayerAttentionSpan(const LayerSpec& layer, const Csa2Dims& dims, int64_t begin,
                                 int64_t end) {
  assert(0 <= begin && begin <= end);
  AttentionSpan span;
  span.window_pairs = SumWindow(end, dims.window) - SumWindow(begin, dims.window);
  span.window_entries = static_cast<double>(std::min<int64_t>(end, dims.window));
  if (layer.kind != LayerKind::kDecoder || layer.attention == AttentionMode::kSwaOnly) return span;
  const int64_t m = std::max(layer.compress_ratio, 1);
  span.compressed_pairs = SumCompressed(end, m, dims.top_k) - SumCompressed(begin, m, dims.top_k);
  span.scored_pairs = ScoredEntries(layer, dims, begin, end);
  span.visible_entries = static_cast<double>(end / m);
  if (layer.attention == AttentionMode::kFull) {
    span.scorable_entries = span.visible_entries;
  } else if (layer.attention == AttentionMode::kReindex) {
    span.scorable_entries =
        std::min(span.visible_entries,
                 static_cast<double>(dims.candidate_blocks) * kCandidateBlockPositions);
  }
  return span;
}

double LayerRoutedExpertParams(const LayerSpec& layer, const Csa2Dims& dims) {
  if (layer.kind != LayerKind::kDecoder || layer.mlp != MlpKind::kMoe) return 0.0;
  return static_cast<double>(dims.routed_experts) * 3.0 * dims.hidden * dims.expert_width;
}

double LayerParams(const LayerSpec& layer, const Csa2Dims& dims) {
  const double d = dims.hidden;
  switch (layer.kind) {
    case LayerKind::kEmbedding:
    case LayerKind::kHead:
      return static_cast<double>(dims.vocab) * d;
    case LayerKind::kDecoder:
      break;
  }
  double params = AttentionProjectionParams(dims);
  const int64_t m = std::max(layer.compress_ratio, 1);
  if (layer.attention == AttentionMode::kFull) {
    params += CompressorParams(dims, m) +
              static_cast<double>(dims.head_dim) * dims.indexer_key_dim + dims.indexer_key_dim +
              IndexerQueryParams(dims);
  } else if (layer.attention == AttentionMode::kReindex) {
    params += IndexerQueryParams(dims);
  }
  params += LayerMlpParams(layer, dims);
  if (layer.engram) params += EngramProjectionParams(dims);
  return params;
}

double LayerMlpParams(const LayerSpec& layer, const Csa2Dims& dims) {
  if (layer.kind != LayerKind::kDecoder) return 0.0;
  const double d = dims.hidden;
  if (layer.mlp == MlpKind::kMoe) {
    return LayerRoutedExpertParams(layer, dims) +
           static_cast<double>(dims.shared_experts) * 3.0 * d * dims.expert_width +
           d * dims.routed_experts;
  }
  return 3.0 * d * DenseWidth(dims);
}

double EngramProjectionParams(const Csa2Dims& dims) {
  return kEngramLookupsPerToken * kEngramValuesPerRow * dims.hidden * (dims.hc_streams + 1);
}

double VisionEncoderFlops(int32_t layers, int64_t width, int64_t mlp_width, int64_t patches) {
  const double d = static_cast<double>(width);
  const double n = static_cast<double>(patches);
  return 2.0 * layers * (4 * d * d + 3 * d * static_cast<double>(mlp_width)) * n +
         4.0 * layers * d * n * n;
}

double LayerForwardFlops(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                         int32_t micro_batch_size) {
  const double tokens = static_cast<double>(seq_len) * micro_batch_size;
  switch (layer.kind) {
    case LayerKind::kEmbedding:
      return 0.0;  // a gather: no FLOPs
    case LayerKind::kHead:
      return 2.0 * dims.vocab * static_cast<double>(dims.hidden) * tokens;
    case LayerKind::kDecoder:
      return AttentionFlopsPerSequence(layer, dims, seq_len) * micro_batch_size +
             MlpFlopsPerToken(layer, dims) * tokens +
             (layer.engram ? 2.0 * EngramProjectionParams(dims) * tokens : 0.0);
  }
  return 0.0;
}

double LayerScoringFlops(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                         int32_t micro_batch_size, const ContextShards& shards) {
  const double score_per_entry = 2.0 * dims.indexer_heads * dims.indexer_key_dim;
  const int32_t ranks = std::max(shards.ranks, 1);
  if (ranks == 1) {
    return score_per_entry * ScoredEntries(layer, dims, 0, seq_len) * micro_batch_size;
  }
  const int64_t chunks = shards.zigzag ? 2 * int64_t{ranks} : ranks;
  assert(seq_len % chunks == 0);
  const int64_t chunk = seq_len / chunks;
  double busiest = 0.0;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    double entries = ScoredEntries(layer, dims, rank * chunk, (rank + 1) * chunk);
    if (shards.zigzag) {
      const int64_t mirror = chunks - 1 - rank;
      entries += ScoredEntries(layer, dims, mirror * chunk, (mirror + 1) * chunk);
    }
    busiest = std::max(busiest, entries);
  }
  return score_per_entry * busiest * micro_batch_size;
}

double LayerLocalFlops(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                       int32_t micro_batch_size) {
  const double tokens = static_cast<double>(seq_len) * micro_batch_size;
  if (layer.kind != LayerKind::kDecoder) {
    return LayerForwardFlops(layer, dims, seq_len, micro_batch_size);  // embedding, head
  }
  const double core_per_key = 4.0 * dims.heads * dims.head_dim;
  return (2.0 * AttentionProjectionParams(dims) * seq_len +
          core_per_key * SumWindow(seq_len, dims.window)) *
             micro_batch_size +
         MlpFlopsPerToken(layer, dims) * tokens +
         (layer.engram ? 2.0 * EngramProjectionParams(dims) * tokens : 0.0);
}

// Bytes one microbatch's forward moves through HBM on one rank: the weights it reads (bf16,
// this TP rank's share) and its activations (written once).
double LayerBytes(const LayerSpec& layer, const Csa2Dims& dims, double tokens, const LayerRun& run,
                  int64_t activation_bytes) {
  const double t = std::max(1, run.tensor_parallel);
  const double replicated = LayerReplicatedParams(layer, dims);
  // The embedding gathers one row per token, not its whole table.
  double weights = layer.kind == LayerKind::kEmbedding ? tokens * dims.hidden
                   : t > 1 ? (LayerParams(layer, dims) - replicated) / t + replicated
                           : LayerParams(layer, dims);
  const double routed = LayerRoutedExpertParams(layer, dims) / t;
  if (routed > 0) {
    const double reached =
        std::min(static_cast<double>(dims.routed_experts), tokens * dims.experts_per_token);
    weights -= routed - routed * reached / dims.routed_experts / std::max(1, run.expert_parallel);
  }
  return 2.0 * weights + static_cast<double>(activation_bytes);
}

namespace {

// One CP and TP rank's forward FLOPs: everything but the scoring split evenly over the CP
// ranks, plus the busiest rank's scoring (the ranks run in step); of the CP rank's share, the
// part tensor parallelism splits / t. The whole layer's with one rank.
double RankForwardFlops(const LayerSpec& layer, const ModelSpec& model, const LayerRun& run) {
  const ContextShards& context = run.context;
  const int32_t cp = std::max(context.ranks, 1);
  const double t = std::max(1, run.tensor_parallel);
  const double whole = LayerForwardFlops(layer, model.dims, model.seq_len, model.micro_batch_size);
  const double scoring =
      LayerScoringFlops(layer, model.dims, model.seq_len, model.micro_batch_size);
  const double replicated =
      LayerReplicatedFlops(layer, model.dims, model.seq_len, model.micro_batch_size) - scoring;
  const double rank_scoring =
      cp > 1 ? LayerScoringFlops(layer, model.dims, model.seq_len, model.micro_batch_size, context)
             : scoring;
  if (cp == 1 && t == 1) return whole;
  // (Without tensor parallelism (whole − scoring) / cp + the busiest scoring, bit for bit.)
  const double split = t > 1 ? (whole - scoring - replicated) / t + replicated : whole - scoring;
  return cp > 1 ? split / cp + rank_scoring : split + scoring;
}

// What selective recomputation repeats under the FLOPs rule: the attention core (its heads / t)
// and the indexer scoring of one rank.
double RankCoreFlops(const LayerSpec& layer, const ModelSpec& model, const LayerRun& run) {
  const int32_t cp = std::max(run.context.ranks, 1);
  const double core =
      LayerAttentionCoreFlops(layer, model.dims, model.seq_len, model.micro_batch_size);
  const double scoring =
      cp > 1
          ? LayerScoringFlops(layer, model.dims, model.seq_len, model.micro_batch_size, run.context)
          : LayerScoringFlops(layer, model.dims, model.seq_len, model.micro_batch_size);
  return core / cp / std::max(1, run.tensor_parallel) + scoring;
}

}  // namespace

Recompute LayerRun::RecomputeOf(const LayerSpec& layer, size_t index) const {
  if (layer.kind != LayerKind::kDecoder) return Recompute::kNone;
  if (recompute == Recompute::kFull && !recomputed.empty() &&
      (index >= recomputed.size() || !recomputed[index])) {
    return Recompute::kNone;
  }
  return recompute;
}

int64_t LayerActivationBytes(const LayerSpec& layer, const Csa2Dims& dims, int64_t tokens,
                             const LayerRun& run, Recompute recompute) {
  const double t = std::max(1, run.tensor_parallel);
  const double sequence_split = run.sequence_parallel ? t : 1.0;
  const double d = dims.hidden;
  const double n = static_cast<double>(tokens);
  switch (layer.kind) {
    case LayerKind::kEmbedding:
      return 0;
    case LayerKind::kHead:
      return std::llround(n * (4 * d / sequence_split + 4.0 * dims.vocab / t));
    case LayerKind::kDecoder:
      break;
  }
  if (recompute == Recompute::kFull) {
    return std::llround(n * static_cast<double>(HiddenBytesPerToken(dims)) / sequence_split);
  }
  return std::llround(KorthikantiLayerBytes(n * d, t, 0.0, run.sequence_parallel, recompute));
}

void EstimateLayerCosts(ModelSpec& model, double flops_per_second, double bytes_per_second,
                        const LayerRun& run, const DeviceRates* device) {
  assert(flops_per_second > 0);
  const int64_t tokens = model.tokens_per_microbatch() / std::max(run.context.ranks, 1);
  // Layers alike but for where they were written and how they recompute cost the same: a layer
  // list repeats a few classes (V4.1-Flash: 43 layers, 7 classes), so each is costed once.
  struct Costed {
    LayerSpec layer;
    Recompute recompute;
    LayerKernelTimes times;
  };
  std::vector<Costed> costed;
  for (size_t index = 0; index < model.layers.size(); ++index) {
    LayerSpec& layer = model.layers[index];
    const Recompute recompute = run.RecomputeOf(layer, index);
    const int64_t activations = LayerActivationBytes(layer, model.dims, tokens, run, recompute);
    const bool derived_by_kernels = layer.forward == Time() && device != nullptr;
    if (derived_by_kernels) {
      // All three from the kernels (an embedding's input gradient is none: it stays 0).
      LayerSpec key = layer;
      key.line = 0;
      const auto same =
          static_cast<size_t>(std::find_if(costed.begin(), costed.end(),
                                           [&](const Costed& one) {
                                             return one.recompute == recompute && one.layer == key;
                                           }) -
                              costed.begin());
      if (same == costed.size()) {
        LayerRun layer_run = run;
        layer_run.recompute = recompute;
        costed.push_back({key, recompute,
                          Csa2LayerKernelTimes(layer, model.dims, model.seq_len,
                                               model.micro_batch_size, layer_run, *device)});
      }
      const LayerKernelTimes& times = costed[same].times;
      layer.forward = FromSeconds(times.forward);
      if (layer.input_grad == Time()) layer.input_grad = FromSeconds(times.input_grad);
      if (layer.weight_grad == Time()) layer.weight_grad = FromSeconds(times.weight_grad);
    } else if (layer.forward == Time()) {
      const double flops = RankForwardFlops(layer, model, run);
      layer.forward = FlopsToTime(flops, flops_per_second);
      if (bytes_per_second > 0) {
        const Time memory = FlopsToTime(
            LayerBytes(layer, model.dims, static_cast<double>(tokens), run, activations),
            bytes_per_second);
        layer.forward = std::max(layer.forward, memory);
      }
      // Backward ≈ 2 × forward, I ≈ W (csa2.md): each half the layer's forward time, and the
      // recomputation on top of I.
      if (layer.input_grad == Time()) {
        layer.input_grad = layer.forward;
        if (recompute == Recompute::kFull) {
          layer.input_grad += layer.forward;
        } else if (recompute == Recompute::kSelective || recompute == Recompute::kSelectiveOp) {
          layer.input_grad += FlopsToTime(RankCoreFlops(layer, model, run), flops_per_second);
        }
      }
    }
    // A layer that gives its forward: each half of the backward equals it when not given.
    if (!derived_by_kernels) {
      if (layer.input_grad == Time()) layer.input_grad = layer.forward;
      if (layer.weight_grad == Time()) layer.weight_grad = layer.forward;
    }
    if (layer.activation_bytes == 0) {
      layer.activation_bytes = activations;
      // Derived bytes: what recomputation rematerialises for the backward (given bytes are a
      // measured run's, which include it or not as that run did).
      if (recompute != Recompute::kNone) {
        layer.recompute_bytes = std::max<int64_t>(
            0,
            LayerActivationBytes(layer, model.dims, tokens, run, Recompute::kNone) - activations);
      }
    }
  }
}

double LayerReplicatedParams(const LayerSpec& layer, const Csa2Dims& dims) {
  if (layer.kind != LayerKind::kDecoder) return 0.0;
  const double d = dims.hidden;
  double params = d * dims.query_latent + d * dims.head_dim;  // query down, shared KV head
  const int64_t m = std::max(layer.compress_ratio, 1);
  if (layer.attention == AttentionMode::kFull) {
    params += CompressorParams(dims, m) +
              static_cast<double>(dims.head_dim) * dims.indexer_key_dim + dims.indexer_key_dim;
  }
  if (layer.attention == AttentionMode::kFull || layer.attention == AttentionMode::kReindex) {
    params += IndexerQueryParams(dims);
  }
  if (layer.mlp == MlpKind::kMoe) params += d * dims.routed_experts;  // router
  if (layer.engram) params += EngramProjectionParams(dims);
  return params;
}

double LayerReplicatedFlops(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                            int32_t micro_batch_size) {
  if (layer.kind != LayerKind::kDecoder) return 0.0;
  const double tokens = static_cast<double>(seq_len) * micro_batch_size;
  const int64_t m = std::max(layer.compress_ratio, 1);
  // Every replicated parameter is one multiply-add per token, but the indexer keys, one per
  // compressed entry (tokens / m).
  double flops = 2.0 * tokens * LayerReplicatedParams(layer, dims);
  if (layer.attention == AttentionMode::kFull) {
    flops -= 2.0 * tokens * static_cast<double>(dims.head_dim) * dims.indexer_key_dim *
             (1.0 - 1.0 / static_cast<double>(m));
    flops -= 2.0 * tokens * dims.indexer_key_dim;  // the key bias is not a multiply-add
  }
  return flops + LayerScoringFlops(layer, dims, seq_len, micro_batch_size);
}

double LayerAttentionCoreFlops(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                               int32_t micro_batch_size) {
  if (layer.kind != LayerKind::kDecoder) return 0.0;
  const double core_per_key = 4.0 * dims.heads * dims.head_dim;
  double keys = SumWindow(seq_len, dims.window);
  if (layer.attention != AttentionMode::kSwaOnly) {
    keys += SumCompressed(seq_len, std::max(layer.compress_ratio, 1), dims.top_k);
  }
  return core_per_key * keys * micro_batch_size;
}

Status CheckLayerTensorParallel(const std::vector<LayerSpec>& layers, const Csa2Dims& dims,
                                int32_t tp) {
  if (tp <= 1) return Status::Ok();
  const std::string value = "tp " + std::to_string(tp);
  for (size_t index = 0; index < layers.size(); ++index) {
    const LayerSpec& layer = layers[index];
    if (layer.kind != LayerKind::kDecoder) continue;
    const std::string where = "layers[" + std::to_string(index) + "]: " + value;
    if (dims.heads % tp != 0) {
      return Error{where + " does not divide its " + std::to_string(dims.heads) +
                   " query heads (tensor parallelism splits them); pick a divisor"};
    }
    if (dims.output_groups % tp != 0) {
      return Error{where + " does not divide its " + std::to_string(dims.output_groups) +
                   " output groups (each TP rank projects whole groups); pick a divisor"};
    }
    if (layer.mlp == MlpKind::kMoe && dims.expert_width % tp != 0) {
      return Error{where + " does not divide its expert width " +
                   std::to_string(dims.expert_width) +
                   " (tensor parallelism splits every expert); pick a divisor"};
    }
    const int64_t dense = dims.dense_width > 0 ? dims.dense_width : 4 * int64_t{dims.hidden};
    if (layer.mlp == MlpKind::kDense && dense % tp != 0) {
      return Error{where + " does not divide its dense MLP width " + std::to_string(dense) +
                   " (tensor parallelism splits it); pick a divisor"};
    }
  }
  return Status::Ok();
}

}  // namespace stagecraft
