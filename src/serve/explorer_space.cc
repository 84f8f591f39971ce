#include "serve/explorer_space.h"

#include <algorithm>

namespace stagecraft {

namespace {

// A Llama-style decoder as Vidur's model configs describe it (gated SiLU MLP, RMSNorm, RoPE, no
// biases, untied embeddings; Qwen-72B's QKV bias is left out, a few thousand parameters a layer).
TransformerSpec VidurModel(int32_t layers, int64_t hidden, int64_t heads, int64_t kv_heads,
                           int64_t mlp, int64_t vocab) {
  TransformerSpec spec;
  spec.layers = layers;
  spec.hidden = hidden;
  spec.heads = heads;
  spec.kv_heads = kv_heads;
  spec.ffn_hidden = mlp;
  spec.vocab = vocab;
  spec.swiglu = true;
  spec.causal = true;
  spec.tied_embeddings = false;
  spec.bias = false;
  spec.learned_positions = false;
  return spec;
}

}  // namespace

ExplorerSpace VidurShippedSpace() {
  ExplorerSpace space;
  // data/model_configs/{meta-llama/Llama-2-7b-hf, codellama/CodeLlama-34b-Instruct-hf,
  // Qwen/Qwen-72B}.yml at e2d00e9a (Vidur pads the Llama vocabularies to 32768).
  space.models = {{"llama-2-7b-hf", {}, VidurModel(32, 4096, 32, 32, 11008, 32768)},
                  {"codellama-34b-instruct-hf", {}, VidurModel(48, 8192, 64, 8, 22016, 32768)},
                  {"qwen-72b", {1}, VidurModel(80, 8192, 64, 64, 24576, 152064)}};
  space.traces = {{"chat", 4096, 32}, {"arxiv", 4096, 16}, {"bwb", 4096, 8}};
  space.clusters = {{"h100", 16, 4}, {"a100", 16, 4}, {"a40", 32, 8}};
  space.schedulers = {{"vllm", 0},       {"sarathi", 256},  {"sarathi", 512},
                      {"sarathi", 1024}, {"sarathi", 2048}, {"sarathi", 4096}};
  space.tp = {1, 2, 4, 8};
  space.pp = {1, 2, 4};
  space.batch_sizes = {32, 64, 128};
  return space;
}

std::vector<ExplorerCandidate> EnumerateExplorerSpace(const ExplorerSpace& space) {
  std::vector<ExplorerCandidate> candidates;
  const auto count = [](const auto& axis) { return static_cast<int32_t>(axis.size()); };
  for (int32_t model = 0; model < count(space.models); ++model) {
    const std::vector<int32_t>& excluded = space.models[model].excluded_tp;
    for (int32_t trace = 0; trace < count(space.traces); ++trace) {
      for (int32_t cluster = 0; cluster < count(space.clusters); ++cluster) {
        const ExplorerSpace::Cluster& gpus = space.clusters[cluster];
        for (int32_t scheduler = 0; scheduler < count(space.schedulers); ++scheduler) {
          for (const int32_t tp : space.tp) {
            for (const int32_t pp : space.pp) {
              for (const int32_t batch : space.batch_sizes) {
                const int32_t replicas = gpus.gpus / (tp * pp);
                const bool excluded_tp =
                    std::find(excluded.begin(), excluded.end(), tp) != excluded.end();
                if (replicas <= 0 || excluded_tp || tp > gpus.gpus_per_node) continue;
                candidates.push_back({.model = model,
                                      .trace = trace,
                                      .cluster = cluster,
                                      .scheduler = scheduler,
                                      .tp = tp,
                                      .pp = pp,
                                      .batch_cap = batch * pp,
                                      .replicas = replicas});
              }
            }
          }
        }
      }
    }
  }
  return candidates;
}

}  // namespace stagecraft
