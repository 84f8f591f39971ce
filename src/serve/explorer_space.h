// Vidur's configuration explorer space (Agrawal et al., "Vidur: A Large-Scale Simulation
// Framework for LLM Inference", MLSys'24; github.com/microsoft/vidur): the axes of its shipped
// explorer config (simulator/config_optimizer/config_explorer/config/config.yml at commit
// e2d00e9a) and its validity rules (vidur/config_optimizer/config_explorer/config/config.py,
// JobConfig.is_valid and its constructor), as data, so that serve-plan's search can be laid
// against the same space. The cross product of models, traces, clusters, schedulers, tp, pp and
// batch sizes is kept when the cluster has at least one replica of tp x pp GPUs, tp is not one
// of the model's excluded degrees, and tp fits in a node.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/transformer.h"

namespace stagecraft {

struct ExplorerSpace {
  struct Cluster {
    std::string device;
    int32_t gpus = 0;
    int32_t gpus_per_node = 0;
  };
  struct Scheduler {
    std::string name;        // "vllm" or "sarathi"
    int32_t chunk_size = 0;  // sarathi's prefill chunk; 0 for vllm
  };
  struct Model {
    std::string name;
    std::vector<int32_t> excluded_tp;
    TransformerSpec spec;  // its dimensions, from Vidur's model config of the same name
  };
  struct Trace {
    std::string name;
    int64_t max_tokens =
        0;  // max_seq_len: longer requests are cut to it (trace_request_length_generator.py)
    double start_qps = 0;  // the capacity search's first rate, all replicas
  };
  std::vector<Model> models;
  std::vector<Trace> traces;
  std::vector<Cluster> clusters;
  std::vector<Scheduler> schedulers;
  std::vector<int32_t> tp;
  std::vector<int32_t> pp;
  std::vector<int32_t> batch_sizes;
};

struct ExplorerCandidate {
  int32_t model = 0;  // indices into the space's axes
  int32_t trace = 0;
  int32_t cluster = 0;
  int32_t scheduler = 0;
  int32_t tp = 1;
  int32_t pp = 1;
  int32_t batch_cap = 0;  // Vidur's batch_size x pp: the cap over all pipeline micro-batches
  int32_t replicas = 0;   // gpus / (tp x pp), rounded down
};

// The space of Vidur's shipped config.yml.
ExplorerSpace VidurShippedSpace();
// Every valid candidate in the axes' product order (models outermost, batch sizes innermost).
std::vector<ExplorerCandidate> EnumerateExplorerSpace(const ExplorerSpace& space);

}  // namespace stagecraft
