// Layer-list names, shared-state sizes, and source resolution (DESIGN.md §5; the rules are
// doc/csa2.md "Attention modes and the layer layout", from NeMo AutoModel's port of the
// DeepSeek-V4.1-Flash config, which validates the same rules).
#include "model/layer_spec.h"

#include <cassert>
#include <string>

namespace stagecraft {
namespace {

// Bytes of one bf16 / int32 element (csa2.md "Shared-state tensors").
constexpr int64_t kBf16Bytes = 2;
constexpr int64_t kInt32Bytes = 4;

// The three source slots of a consumer, for messages and lookups.
enum class Slot : uint8_t { kKv, kIndex, kCandidate };

const char* SlotKey(Slot slot) {
  switch (slot) {
    case Slot::kKv:
      return "kv_source";
    case Slot::kIndex:
      return "index_source";
    case Slot::kCandidate:
      return "candidate_source";
  }
  return "?";
}

const char* SlotState(Slot slot) {  // "reuse takes <state> from layer 9"
  switch (slot) {
    case Slot::kKv:
      return "KV";
    case Slot::kIndex:
      return "top-k";
    case Slot::kCandidate:
      return "candidates";
  }
  return "?";
}

// The LayerSpec field holding the source of `slot`.
int32_t LayerSpec::*SourceField(Slot slot) {
  switch (slot) {
    case Slot::kKv:
      return &LayerSpec::kv_source;
    case Slot::kIndex:
      return &LayerSpec::index_source;
    case Slot::kCandidate:
      return &LayerSpec::candidate_source;
  }
  return &LayerSpec::kv_source;
}

bool IsDecoder(const LayerSpec& layer, AttentionMode mode) {
  return layer.kind == LayerKind::kDecoder && layer.attention == mode;
}

// Whether `source` may serve `slot`: KV and candidates come from full layers, top-k from full
// or reindex layers (csa2.md "Rules").
bool ServesSlot(const LayerSpec& source, Slot slot) {
  if (IsDecoder(source, AttentionMode::kFull)) return true;
  return slot == Slot::kIndex && IsDecoder(source, AttentionMode::kReindex);
}

std::string Prefix(int32_t index) { return "layers[" + std::to_string(index) + "]: "; }

// "the embedding", "a swa_only layer", "a reuse layer": what a wrong source is.
std::string Kind(const LayerSpec& layer) {
  if (layer.kind != LayerKind::kDecoder) return std::string("the ") + LayerKindName(layer.kind);
  return std::string("a ") + AttentionModeName(layer.attention) + " layer";
}

// The nearest layer before `consumer` that may serve `slot`, with the consumer's ratio when
// `same_ratio`; -1 when none.
int32_t DeriveSource(const std::vector<LayerSpec>& layers, int32_t consumer, Slot slot,
                     bool same_ratio) {
  const int32_t ratio = layers[consumer].compress_ratio;
  for (int32_t source = consumer - 1; source >= 0; --source) {
    const LayerSpec& candidate = layers[source];
    if (!ServesSlot(candidate, slot)) continue;
    if (same_ratio && candidate.compress_ratio != ratio) continue;
    return source;
  }
  return -1;
}

std::string NoSourceError(const std::vector<LayerSpec>& layers, int32_t consumer, Slot slot) {
  const LayerSpec& layer = layers[consumer];
  const std::string ratio = std::to_string(layer.compress_ratio);
  const std::string what = Prefix(consumer) + AttentionModeName(layer.attention) + " has no " +
                           SlotState(slot) + " source: no ";
  if (slot == Slot::kIndex) {
    return what + "full or reindex layer precedes it (add one before it, or set index_source)";
  }
  return what + "full layer with compression ratio " + ratio +
         " precedes it (add a full layer with compress_ratio: " + ratio + " before it, or set " +
         SlotKey(slot) + ")";
}

// Checks that layers[source] may serve `slot` of layers[consumer]: in range, before it, of the
// right mode, with the same compression ratio (top-k indices and candidate blocks point into
// compressed KV of one ratio, so all three sources share the consumer's ratio). `derived`: the
// source came from the rules, not the config (only a derived top-k source can fail here).
Status ValidateSource(const std::vector<LayerSpec>& layers, int32_t consumer, Slot slot,
                      int32_t source, bool derived) {
  const LayerSpec& layer = layers[consumer];
  const int32_t count = static_cast<int32_t>(layers.size());
  if (source < 0 || source >= count) {
    return Error{Prefix(consumer) + SlotKey(slot) + " " + std::to_string(source) +
                 " is out of range: the layers are numbered 0 to " + std::to_string(count - 1) +
                 ", embedding and head included (a source must be an earlier layer)"};
  }
  const std::string head = Prefix(consumer) + AttentionModeName(layer.attention) + " takes " +
                           SlotState(slot) + " from layer " + std::to_string(source) +
                           (derived ? " (the latest full or reindex layer)" : "");
  if (source >= consumer) {
    return Error{head + (source == consumer ? ", which is itself" : ", which comes after it") +
                 " (a source must precede its consumer)"};
  }
  const LayerSpec& producer = layers[source];
  if (!ServesSlot(producer, slot)) {
    const std::string wanted = slot == Slot::kIndex ? "a full or reindex layer" : "a full layer";
    const bool swa =
        producer.kind == LayerKind::kDecoder && producer.attention == AttentionMode::kSwaOnly;
    return Error{head + ", which is " + Kind(producer) + " (" + SlotKey(slot) + " must name " +
                 wanted + (swa ? "; swa_only layers are never sources)" : ")")};
  }
  if (producer.compress_ratio != layer.compress_ratio) {
    return Error{head + ", whose compression ratio is " + std::to_string(producer.compress_ratio) +
                 ", not " + std::to_string(layer.compress_ratio) +
                 " (a source must have its consumer's compress_ratio; set " + SlotKey(slot) +
                 " to one that has)"};
  }
  return Status::Ok();
}

// Derives the source of `slot` when it is -1, else validates the one given.
Status ResolveSlot(std::vector<LayerSpec>& layers, int32_t consumer, Slot slot) {
  int32_t& source = layers[consumer].*SourceField(slot);
  const bool derived = source == -1;
  if (derived) {
    // KV and candidates: the nearest full layer with the same ratio; top-k: the latest full or
    // reindex layer whatever its ratio (checked next, so a mismatch is reported, not skipped).
    source = DeriveSource(layers, consumer, slot, slot != Slot::kIndex);
    if (source == -1) return Error{NoSourceError(layers, consumer, slot)};
  }
  return ValidateSource(layers, consumer, slot, source, derived);
}

// Why `layer` may not name a source in `slot`, or "" when it may: embedding, head, full and
// swa_only consume nothing; a reuse layer has no candidate pool, a reindex layer computes its
// own top-k.
std::string NoSourceAllowed(const LayerSpec& layer, Slot slot) {
  if (layer.kind != LayerKind::kDecoder) return "it consumes no shared state";
  switch (layer.attention) {
    case AttentionMode::kFull:
      return "a full layer computes its own KV, indexer keys and top-k";
    case AttentionMode::kSwaOnly:
      return "a swa_only layer consumes no shared state";
    case AttentionMode::kReuse:
      return slot == Slot::kCandidate ? "a reuse layer scores no candidate pool" : "";
    case AttentionMode::kReindex:
      return slot == Slot::kIndex ? "a reindex layer computes its own top-k" : "";
  }
  return "";
}

Status CheckUnusedSources(const LayerSpec& layer, int32_t index) {
  for (Slot slot : {Slot::kKv, Slot::kIndex, Slot::kCandidate}) {
    if (layer.*SourceField(slot) == -1) continue;
    const std::string why = NoSourceAllowed(layer, slot);
    if (why.empty()) continue;
    const char* name = layer.kind == LayerKind::kDecoder ? AttentionModeName(layer.attention)
                                                         : LayerKindName(layer.kind);
    return Error{Prefix(index) + name + " takes no " + SlotKey(slot) + " (" + why + "; remove it)"};
  }
  return Status::Ok();
}

// Embedding first, head last, ratios in range.
Status CheckShape(const std::vector<LayerSpec>& layers, int32_t index) {
  const LayerSpec& layer = layers[index];
  const int32_t last = static_cast<int32_t>(layers.size()) - 1;
  if (layer.kind == LayerKind::kEmbedding && index != 0) {
    return Error{Prefix(index) + "the embedding must be the first layer"};
  }
  if (layer.kind == LayerKind::kHead && index != last) {
    return Error{Prefix(index) + "the head must be the last layer"};
  }
  if (layer.kind != LayerKind::kDecoder) return Status::Ok();
  const std::string ratio = std::to_string(layer.compress_ratio);
  if (layer.attention == AttentionMode::kSwaOnly && layer.compress_ratio != 0) {
    return Error{Prefix(index) +
                 "swa_only has no compressed KV, so compress_ratio must be 0 (or "
                 "left out), not " +
                 ratio};
  }
  if (layer.attention != AttentionMode::kSwaOnly && layer.compress_ratio < 1) {
    return Error{Prefix(index) + AttentionModeName(layer.attention) + " needs compress_ratio >= 1" +
                 ", not " + ratio + " (1 = every token, 2 = one entry per 2 tokens, ...)"};
  }
  return Status::Ok();
}

}  // namespace

const char* StateKindName(StateKind kind) {
  switch (kind) {
    case StateKind::kCompressedKv:
      return "compressed_kv";
    case StateKind::kIndexerKeys:
      return "indexer_keys";
    case StateKind::kTopK:
      return "top_k";
    case StateKind::kCandidatePool:
      return "candidates";
  }
  return "?";
}

int64_t StateBytesPerToken(StateKind kind, int32_t compress_ratio, const Csa2Dims& dims) {
  switch (kind) {
    case StateKind::kCompressedKv:
      assert(compress_ratio >= 1);
      return dims.kv_dim * kBf16Bytes / compress_ratio;
    case StateKind::kIndexerKeys:
      assert(compress_ratio >= 1);
      return dims.indexer_key_dim * kBf16Bytes / compress_ratio;
    case StateKind::kTopK:
      return dims.top_k * kInt32Bytes;
    case StateKind::kCandidatePool:
      return dims.candidate_blocks * kInt32Bytes;
  }
  return 0;
}

int64_t HiddenBytesPerToken(const Csa2Dims& dims) {
  return int64_t{dims.hc_streams} * dims.hidden * kBf16Bytes;
}

Status ResolveSources(std::vector<LayerSpec>& layers) {
  for (int32_t index = 0; index < static_cast<int32_t>(layers.size()); ++index) {
    STAGECRAFT_RETURN_IF_ERROR(CheckShape(layers, index));
    STAGECRAFT_RETURN_IF_ERROR(CheckUnusedSources(layers[index], index));
    if (IsDecoder(layers[index], AttentionMode::kReuse)) {
      STAGECRAFT_RETURN_IF_ERROR(ResolveSlot(layers, index, Slot::kKv));
      STAGECRAFT_RETURN_IF_ERROR(ResolveSlot(layers, index, Slot::kIndex));
    } else if (IsDecoder(layers[index], AttentionMode::kReindex)) {
      STAGECRAFT_RETURN_IF_ERROR(ResolveSlot(layers, index, Slot::kKv));
      STAGECRAFT_RETURN_IF_ERROR(ResolveSlot(layers, index, Slot::kCandidate));
    }
  }
  return Status::Ok();
}

std::vector<SharedStateEdge> SharedStateEdges(const std::vector<LayerSpec>& layers,
                                              const Csa2Dims& dims) {
  std::vector<SharedStateEdge> edges;
  const auto add = [&](int32_t producer, int32_t consumer, StateKind kind) {
    if (producer < 0) return;  // unresolved; ResolveSources reports it
    const bool differentiable = kind == StateKind::kCompressedKv ||
                                (kind == StateKind::kIndexerKeys && dims.indexer_trained);
    edges.push_back(SharedStateEdge{producer, consumer, kind,
                                    StateBytesPerToken(kind, layers[producer].compress_ratio, dims),
                                    differentiable});
  };
  for (int32_t consumer = 0; consumer < static_cast<int32_t>(layers.size()); ++consumer) {
    const LayerSpec& layer = layers[consumer];
    if (IsDecoder(layer, AttentionMode::kReindex)) {
      add(layer.kv_source, consumer, StateKind::kCompressedKv);
      add(layer.kv_source, consumer, StateKind::kIndexerKeys);
      add(layer.candidate_source, consumer, StateKind::kCandidatePool);
    } else if (IsDecoder(layer, AttentionMode::kReuse)) {
      add(layer.kv_source, consumer, StateKind::kCompressedKv);
      add(layer.index_source, consumer, StateKind::kTopK);
    }
  }
  return edges;
}

}  // namespace stagecraft
