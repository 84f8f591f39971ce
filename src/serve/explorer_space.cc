#include "serve/explorer_space.h"

#include <algorithm>

namespace stagecraft {

ExplorerSpace VidurShippedSpace() {
  ExplorerSpace space;
  space.models = {{"llama-2-7b-hf", {}}, {"codellama-34b-instruct-hf", {}}, {"qwen-72b", {1}}};
  space.traces = {"chat", "arxiv", "bwb"};
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
