// The layer-list model: embedding, decoder blocks (CSA2 attention + MoE or dense MLP), head,
// and the shared-state edges between attention layers (DESIGN.md §5; facts in the project's
// doc/csa2.md, from the DeepSeek-V4.1-Flash report and NeMo AutoModel's port of its config).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_table.h"
#include "core/result.h"
#include "core/time.h"

namespace stagecraft {

enum class LayerKind : uint8_t {
  kEmbedding,  // token embedding (a gather)
  kDecoder,    // attention block + MLP block
  kHead,       // final norm + output projection (+ loss)
};

// CSA2 attention modes (DeepSeek-V4.1-Flash naming).
enum class AttentionMode : uint8_t {
  kFull,     // computes its compressed KV, indexer keys and a fresh top-k
  kReindex,  // reuses KV + indexer keys of its KV source; fresh top-k inside the candidate pool
  kReuse,    // reuses KV of its KV source and the top-k of the latest index source
  kSwaOnly,  // sliding window only; never a source
};

enum class MlpKind : uint8_t { kMoe, kDense };

// Their names in a layer entry (kind, attention, mlp).
inline constexpr EnumTable<LayerKind> kLayerKindNames = {{"embedding", LayerKind::kEmbedding},
                                                         {"decoder", LayerKind::kDecoder},
                                                         {"head", LayerKind::kHead}};
inline constexpr EnumTable<AttentionMode> kAttentionModeNames = {
    {"full", AttentionMode::kFull},
    {"reindex", AttentionMode::kReindex},
    {"reuse", AttentionMode::kReuse},
    {"swa_only", AttentionMode::kSwaOnly}};
inline constexpr EnumTable<MlpKind> kMlpKindNames = {{"moe", MlpKind::kMoe},
                                                     {"dense", MlpKind::kDense}};

// The shared-state tensors of csa2.md's table, per microbatch.
enum class StateKind : uint8_t {
  kCompressedKv,   // [S/m, kv_dim] bf16; differentiable
  kIndexerKeys,    // [S/m, indexer_key_dim] bf16; differentiable only if the indexer is trained
  kTopK,           // [S, top_k] int32 indices; no gradient
  kCandidatePool,  // [S, candidate_blocks] int32 block ids; no gradient
};

constexpr const char* LayerKindName(LayerKind kind) { return kLayerKindNames.Name(kind); }
constexpr const char* AttentionModeName(AttentionMode mode) {
  return kAttentionModeNames.Name(mode);
}
const char* StateKindName(
    StateKind kind);  // "compressed_kv", "indexer_keys", "top_k", "candidates"

// Widths of the hidden state and of the shared-state tensors, plus the dimensions the FLOPs
// model needs. Defaults: DeepSeek-V4.1-Flash (csa2.md "Backbone" and "Shared-state tensors").
struct Csa2Dims {
  int32_t hidden = 5120;            // d
  int32_t hc_streams = 4;           // mHC residual streams: a cut carries hc·d·2 bytes per token
  int32_t vocab = 129280;           // V (untied head)
  int32_t heads = 64;               // n_h query heads
  int32_t head_dim = 512;           // c (one shared KV head, K = V)
  int32_t query_latent = 1280;      // d_c
  int32_t output_groups = 8;        // g
  int32_t output_group_dim = 1024;  // d_g
  int32_t window = 128;             // n_win sliding window (tokens)
  int32_t kv_dim = 512;             // compressed KV entry width (bf16)
  int32_t indexer_heads = 32;       // n_I
  int32_t indexer_key_dim = 128;    // c_I: indexer key width (bf16)
  int32_t top_k = 512;              // k: top-k indices per query token (int32)
  int32_t candidate_blocks = 2048;  // candidate pool: block ids per query token (int32)
  int32_t routed_experts = 384;     // E
  int32_t shared_experts = 1;       // E_s
  int32_t experts_per_token = 6;    // top-k_e
  int32_t expert_width = 2304;      // f
  int32_t dense_width = 0;          // f of a dense MLP layer; 0 = 4·d
  bool indexer_trained = false;     // whether indexer keys carry a gradient back (dState)
  bool operator==(const Csa2Dims&) const = default;
};

struct LayerSpec {
  LayerKind kind = LayerKind::kDecoder;
  AttentionMode attention = AttentionMode::kFull;  // decoder layers only
  int32_t compress_ratio = 1;                      // m (1, 2, 4, ...); 0 for swa_only
  int32_t kv_source = -1;         // layer index of the KV source; -1 = derived by the rules
  int32_t index_source = -1;      // layer whose top-k a reuse layer takes; -1 = derived
  int32_t candidate_source = -1;  // layer whose candidate pool a reindex layer scores; -1 = derived
  MlpKind mlp = MlpKind::kMoe;
  // Costs of one microbatch; zero = derive from dimensions (EstimateLayerCosts).
  Time forward;
  Time input_grad;
  Time weight_grad;
  int64_t activation_bytes = 0;   // M_B: held from F until I/B; 0 = derive
  int64_t weight_grad_bytes = 0;  // M_W: held from I until W
  // What recomputation rematerialises for the layer's backward and holds while it runs (its
  // activations less what the forward kept): the working set of full recomputation, the score
  // matrix an unfused core recomputes under selective. 0 = none (no recomputation, or costs given).
  int64_t recompute_bytes = 0;
  // From `parts`: the forward's expert all-to-all (dispatch + combine), which an overlapped F&B
  // op (DualPipe) hides behind the other microbatch's computation; zero = no parts given.
  Time all_to_all;
  bool engram = false;  // decoder: carries an Engram module (V4.1: layers 1 and 14); its
                        // projection's parameters and FLOPs join the layer's (layer_costs.h)
  int32_t line = 0;     // where the layer was written in the config (for messages); 0 = unknown
  bool operator==(const LayerSpec&) const = default;
};

// One consumer's use of a state another layer produced.
struct SharedStateEdge {
  int32_t producer = 0;  // layer index
  int32_t consumer = 0;  // layer index (producer < consumer)
  StateKind kind = StateKind::kCompressedKv;
  int64_t bytes_per_token = 0;  // size of the state per token of the microbatch
  bool differentiable = false;  // dState flows back from consumer to producer
  bool operator==(const SharedStateEdge&) const = default;
};

// Bytes per token of one state produced by a layer with compression ratio m (csa2.md table):
// compressed KV kv_dim·2/m, indexer keys indexer_key_dim·2/m, top-k top_k·4, candidates
// candidate_blocks·4. Integer division is exact for the published dims and m in {1, 2, 4}.
int64_t StateBytesPerToken(StateKind kind, int32_t compress_ratio, const Csa2Dims& dims);

// Hidden state crossing a stage cut, bytes per token: hc_streams · hidden · 2 (bf16).
int64_t HiddenBytesPerToken(const Csa2Dims& dims);

// Fills in derived sources (csa2.md "Rules"): a consumer takes KV from the nearest preceding
// full layer with the same compression ratio, and top-k from the latest preceding full or
// reindex layer; a reindex layer's candidate pool comes from the nearest preceding full layer
// with the same ratio (V4.1: layer 20). Validates explicit sources (a source must precede its
// consumer, have the same ratio, be of the right mode; swa_only layers are never sources; an
// embedding or head is never a source; the embedding comes first and the head last; swa_only
// has compress_ratio 0, the other modes >= 1). Every error message starts with "layers[N]: ",
// N the failing layer, and says nothing of where it was written (the config reader prefixes
// file:line:col): "layers[7]: reuse takes KV from layer 9, which comes after it (...)".
// Layer indices count every entry of the list, embedding and head included.
Status ResolveSources(std::vector<LayerSpec>& layers);

// Every edge of a resolved layer list, ordered by (consumer, kind): reindex consumes
// compressed KV and indexer keys from its KV source and the candidate pool from its candidate
// source; reuse consumes compressed KV from its KV source and top-k from its index source.
std::vector<SharedStateEdge> SharedStateEdges(const std::vector<LayerSpec>& layers,
                                              const Csa2Dims& dims);

}  // namespace stagecraft
