#include "model/layer_spec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace stagecraft {
namespace {

LayerSpec Decoder(AttentionMode mode, int32_t ratio) {
  LayerSpec layer;
  layer.attention = mode;
  layer.compress_ratio = ratio;
  return layer;
}

LayerSpec Embedding() {
  LayerSpec layer;
  layer.kind = LayerKind::kEmbedding;
  return layer;
}

LayerSpec Head() {
  LayerSpec layer;
  layer.kind = LayerKind::kHead;
  return layer;
}

void Append(std::vector<LayerSpec>& layers, const LayerSpec& layer, int count) {
  for (int copy = 0; copy < count; ++copy) layers.push_back(layer);
}

// DeepSeek-V4.1-Flash (doc/csa2.md "Attention modes and the layer layout"): decoder layer Lk is
// layers[k + 1] (the embedding is layers[0], the head layers[41]).
std::vector<LayerSpec> V41Flash() {
  std::vector<LayerSpec> layers = {Embedding()};
  Append(layers, Decoder(AttentionMode::kSwaOnly, 0), 2);  // L0-1
  for (int group = 0; group < 3; ++group) {                // L2-19, m = 2
    layers.push_back(Decoder(AttentionMode::kFull, 2));
    Append(layers, Decoder(AttentionMode::kReuse, 2), 5);
  }
  layers.push_back(Decoder(AttentionMode::kFull, 1));  // L20
  Append(layers, Decoder(AttentionMode::kReuse, 1), 3);
  for (int group = 0; group < 4; ++group) {  // L24-39: (reindex, reuse×3)×4
    layers.push_back(Decoder(AttentionMode::kReindex, 1));
    Append(layers, Decoder(AttentionMode::kReuse, 1), 3);
  }
  layers.push_back(Head());
  return layers;
}

// The message of a layer list that must fail to resolve.
std::string ErrorOf(std::vector<LayerSpec> layers) {
  const Status status = ResolveSources(layers);
  EXPECT_FALSE(status.ok());
  return status.ok() ? "" : status.error().message;
}

TEST(LayerSpecTest, Names) {
  EXPECT_STREQ(LayerKindName(LayerKind::kEmbedding), "embedding");
  EXPECT_STREQ(LayerKindName(LayerKind::kDecoder), "decoder");
  EXPECT_STREQ(LayerKindName(LayerKind::kHead), "head");
  EXPECT_STREQ(AttentionModeName(AttentionMode::kFull), "full");
  EXPECT_STREQ(AttentionModeName(AttentionMode::kReindex), "reindex");
  EXPECT_STREQ(AttentionModeName(AttentionMode::kReuse), "reuse");
  EXPECT_STREQ(AttentionModeName(AttentionMode::kSwaOnly), "swa_only");
  EXPECT_STREQ(StateKindName(StateKind::kCompressedKv), "compressed_kv");
  EXPECT_STREQ(StateKindName(StateKind::kIndexerKeys), "indexer_keys");
  EXPECT_STREQ(StateKindName(StateKind::kTopK), "top_k");
  EXPECT_STREQ(StateKindName(StateKind::kCandidatePool), "candidates");
}

// csa2.md "Shared-state tensors": KV 512·2/m, indexer keys 128·2/m, top-k 512·4, candidates
// 2048·4; mHC hidden 4·5120·2.
TEST(LayerSpecTest, V41BytesPerToken) {
  const Csa2Dims dims;
  EXPECT_EQ(StateBytesPerToken(StateKind::kCompressedKv, 1, dims), 1024);
  EXPECT_EQ(StateBytesPerToken(StateKind::kCompressedKv, 2, dims), 512);
  EXPECT_EQ(StateBytesPerToken(StateKind::kCompressedKv, 4, dims), 256);
  EXPECT_EQ(StateBytesPerToken(StateKind::kIndexerKeys, 1, dims), 256);
  EXPECT_EQ(StateBytesPerToken(StateKind::kIndexerKeys, 2, dims), 128);
  EXPECT_EQ(StateBytesPerToken(StateKind::kTopK, 2, dims), 2048);
  EXPECT_EQ(StateBytesPerToken(StateKind::kCandidatePool, 1, dims), 8192);
  EXPECT_EQ(HiddenBytesPerToken(dims), 40960);
}

// csa2.md: kv_source_layer_ids=[2,8,14,20], index_source_layer_ids=[2,8,14,20,24,28,32,36],
// candidate_source_layer_id=20, in decoder numbering (layers[] index − 1).
TEST(LayerSpecTest, V41FlashResolvesToTheOfficialSources) {
  std::vector<LayerSpec> layers = V41Flash();
  ASSERT_EQ(layers.size(), 42u);
  ASSERT_TRUE(ResolveSources(layers).ok());
  std::set<int32_t> kv_sources, index_sources, candidate_sources;
  for (const LayerSpec& layer : layers) {
    if (layer.kv_source >= 0) kv_sources.insert(layer.kv_source);
    if (layer.index_source >= 0) index_sources.insert(layer.index_source);
    if (layer.candidate_source >= 0) candidate_sources.insert(layer.candidate_source);
  }
  EXPECT_EQ(kv_sources, (std::set<int32_t>{3, 9, 15, 21}));
  // Reuse layers name the latest full or reindex layer, so every index source is used.
  EXPECT_EQ(index_sources, (std::set<int32_t>{3, 9, 15, 21, 25, 29, 33, 37}));
  EXPECT_EQ(candidate_sources, (std::set<int32_t>{21}));
  EXPECT_EQ(layers[4].kv_source, 3);  // L3 reuse ← L2
  EXPECT_EQ(layers[4].index_source, 3);
  EXPECT_EQ(layers[26].kv_source, 21);  // L25 reuse: KV from L20, top-k from reindex L24
  EXPECT_EQ(layers[26].index_source, 25);
  EXPECT_EQ(layers[25].kv_source, 21);  // L24 reindex: KV and candidates from L20
  EXPECT_EQ(layers[25].candidate_source, 21);
  EXPECT_EQ(layers[25].index_source, -1);
  EXPECT_EQ(layers[1].kv_source, -1);  // swa_only consumes nothing
  EXPECT_EQ(layers[3].kv_source, -1);  // full consumes nothing
}

TEST(LayerSpecTest, ResolveIsIdempotent) {
  std::vector<LayerSpec> layers = V41Flash();
  ASSERT_TRUE(ResolveSources(layers).ok());
  std::vector<LayerSpec> again = layers;
  ASSERT_TRUE(ResolveSources(again).ok());
  EXPECT_EQ(again, layers);
}

TEST(LayerSpecTest, V41FlashEdges) {
  std::vector<LayerSpec> layers = V41Flash();
  ASSERT_TRUE(ResolveSources(layers).ok());
  const Csa2Dims dims;
  const std::vector<SharedStateEdge> edges = SharedStateEdges(layers, dims);
  // 35 consumers: 15 + 3 + 12 reuse (2 edges each), 4 reindex (3 edges each).
  EXPECT_EQ(edges.size(), 30u * 2 + 4u * 3);
  EXPECT_EQ(edges.front(), (SharedStateEdge{3, 4, StateKind::kCompressedKv, 512, true}));
  EXPECT_EQ(edges[1], (SharedStateEdge{3, 4, StateKind::kTopK, 2048, false}));
  const auto reindex = std::find_if(
      edges.begin(), edges.end(), [](const SharedStateEdge& edge) { return edge.consumer == 25; });
  ASSERT_NE(reindex, edges.end());
  EXPECT_EQ(reindex[0], (SharedStateEdge{21, 25, StateKind::kCompressedKv, 1024, true}));
  EXPECT_EQ(reindex[1], (SharedStateEdge{21, 25, StateKind::kIndexerKeys, 256, false}));
  EXPECT_EQ(reindex[2], (SharedStateEdge{21, 25, StateKind::kCandidatePool, 8192, false}));
  for (size_t index = 1; index < edges.size(); ++index) {  // ordered by (consumer, kind)
    const auto key = [](const SharedStateEdge& edge) {
      return std::make_pair(edge.consumer, static_cast<int>(edge.kind));
    };
    EXPECT_LT(key(edges[index - 1]), key(edges[index]));
    EXPECT_LT(edges[index].producer, edges[index].consumer);
  }
}

TEST(LayerSpecTest, TrainedIndexerKeysCarryAGradient) {
  std::vector<LayerSpec> layers = V41Flash();
  ASSERT_TRUE(ResolveSources(layers).ok());
  Csa2Dims dims;
  dims.indexer_trained = true;
  for (const SharedStateEdge& edge : SharedStateEdges(layers, dims)) {
    const bool expected =
        edge.kind == StateKind::kCompressedKv || edge.kind == StateKind::kIndexerKeys;
    EXPECT_EQ(edge.differentiable, expected) << StateKindName(edge.kind);
  }
}

TEST(LayerSpecTest, ExplicitSourcesAreKept) {
  std::vector<LayerSpec> layers = {Decoder(AttentionMode::kFull, 2),
                                   Decoder(AttentionMode::kFull, 2),
                                   Decoder(AttentionMode::kReuse, 2)};
  layers[2].kv_source = 0;
  layers[2].index_source = 0;
  ASSERT_TRUE(ResolveSources(layers).ok());
  EXPECT_EQ(layers[2].kv_source, 0);  // not the nearest (1)
}

TEST(LayerSpecTest, DerivedKvSourceSkipsOtherRatios) {
  std::vector<LayerSpec> layers = {
      Decoder(AttentionMode::kFull, 2), Decoder(AttentionMode::kReuse, 2),
      Decoder(AttentionMode::kFull, 1), Decoder(AttentionMode::kReuse, 1),
      Decoder(AttentionMode::kReuse, 2)};
  layers[4].index_source = 0;  // the latest full layer (2) has another ratio
  ASSERT_TRUE(ResolveSources(layers).ok());
  EXPECT_EQ(layers[3].kv_source, 2);
  EXPECT_EQ(layers[4].kv_source, 0);
}

TEST(LayerSpecTest, Errors) {
  const LayerSpec full2 = Decoder(AttentionMode::kFull, 2);
  const LayerSpec reuse2 = Decoder(AttentionMode::kReuse, 2);
  const LayerSpec reuse1 = Decoder(AttentionMode::kReuse, 1);
  const LayerSpec swa = Decoder(AttentionMode::kSwaOnly, 0);

  LayerSpec later = reuse2;
  later.kv_source = 2;
  EXPECT_EQ(ErrorOf({full2, later, full2}),
            "layers[1]: reuse takes KV from layer 2, which comes after it (a source must precede "
            "its consumer)");
  EXPECT_EQ(ErrorOf({Embedding(), swa, full2, reuse2, reuse1}),
            "layers[4]: reuse has no KV source: no full layer with compression ratio 1 precedes it "
            "(add a full layer with compress_ratio: 1 before it, or set kv_source)");
  LayerSpec mismatch = reuse1;
  mismatch.kv_source = 0;
  EXPECT_EQ(ErrorOf({full2, mismatch}),
            "layers[1]: reuse takes KV from layer 0, whose compression ratio is 2, not 1 (a source "
            "must have its consumer's compress_ratio; set kv_source to one that has)");
  LayerSpec from_swa = reuse2;
  from_swa.kv_source = 0;
  EXPECT_EQ(
      ErrorOf({swa, full2, from_swa}),
      "layers[2]: reuse takes KV from layer 0, which is a swa_only layer (kv_source must name "
      "a full layer; swa_only layers are never sources)");
  LayerSpec out_of_range = reuse2;
  out_of_range.kv_source = 9;
  EXPECT_EQ(ErrorOf({full2, out_of_range}),
            "layers[1]: kv_source 9 is out of range: the layers are numbered 0 to 1, embedding "
            "and head included (a source must be an earlier layer)");
  LayerSpec full_with_source = full2;
  full_with_source.kv_source = 0;
  EXPECT_EQ(
      ErrorOf({full2, full_with_source}),
      "layers[1]: full takes no kv_source (a full layer computes its own KV, indexer keys and "
      "top-k; remove it)");
  LayerSpec index_from_reuse = reuse2;
  index_from_reuse.index_source = 1;
  EXPECT_EQ(ErrorOf({full2, reuse2, index_from_reuse}),
            "layers[2]: reuse takes top-k from layer 1, which is a reuse layer (index_source must "
            "name a full or reindex layer)");
  LayerSpec self = reuse2;
  self.kv_source = 1;
  EXPECT_EQ(ErrorOf({full2, self}),
            "layers[1]: reuse takes KV from layer 1, which is itself (a source must precede its "
            "consumer)");
}

TEST(LayerSpecTest, ShapeErrors) {
  const LayerSpec full1 = Decoder(AttentionMode::kFull, 1);
  EXPECT_EQ(ErrorOf({full1, Embedding()}), "layers[1]: the embedding must be the first layer");
  EXPECT_EQ(ErrorOf({Head(), full1}), "layers[0]: the head must be the last layer");
  EXPECT_EQ(ErrorOf({Decoder(AttentionMode::kSwaOnly, 2)}),
            "layers[0]: swa_only has no compressed KV, so compress_ratio must be 0 (or left out), "
            "not 2");
  EXPECT_EQ(
      ErrorOf({Decoder(AttentionMode::kFull, 0)}),
      "layers[0]: full needs compress_ratio >= 1, not 0 (1 = every token, 2 = one entry per 2 "
      "tokens, ...)");
  LayerSpec embedding = Embedding();
  embedding.kv_source = 0;
  EXPECT_EQ(ErrorOf({embedding}),
            "layers[0]: embedding takes no kv_source (it consumes no shared state; remove it)");
  LayerSpec reindex = Decoder(AttentionMode::kReindex, 1);
  reindex.index_source = 0;
  EXPECT_EQ(ErrorOf({full1, reindex}),
            "layers[1]: reindex takes no index_source (a reindex layer computes its own top-k; "
            "remove it)");
}

TEST(LayerSpecTest, TopKFromAnotherRatioIsAnError) {
  EXPECT_EQ(ErrorOf({Decoder(AttentionMode::kFull, 2), Decoder(AttentionMode::kFull, 1),
                     Decoder(AttentionMode::kReuse, 2)}),
            "layers[2]: reuse takes top-k from layer 1 (the latest full or reindex layer), whose "
            "compression ratio is 1, not 2 (a source must have its consumer's compress_ratio; set "
            "index_source to one that has)");
}

TEST(LayerSpecTest, ReindexCandidatesFromFullOnly) {
  const LayerSpec full1 = Decoder(AttentionMode::kFull, 1);
  LayerSpec reindex = Decoder(AttentionMode::kReindex, 1);
  std::vector<LayerSpec> layers = {full1, reindex, reindex};
  ASSERT_TRUE(ResolveSources(layers).ok());
  EXPECT_EQ(layers[2].candidate_source, 0);  // never the other reindex layer
  reindex.candidate_source = 1;
  EXPECT_EQ(ErrorOf({full1, Decoder(AttentionMode::kReindex, 1), reindex}),
            "layers[2]: reindex takes candidates from layer 1, which is a reindex layer "
            "(candidate_source must name a full layer)");
}

}  // namespace
}  // namespace stagecraft
