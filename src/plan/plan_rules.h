// The candidates an engine can run (plan.h), each rule with the engine source it ports. Internal
// to the plan module.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace stagecraft {

// What the rules need of the model and the cluster.
struct PlanShape {
  int32_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t ffn = 0;
  int64_t experts = 0;  // 0: dense
  int32_t seq_len = 0;
  int32_t gpus_per_node = 8;
  // A layer-list model (CSA2): tp must also divide the output groups; pp x vpp stages take the
  // layers unevenly (the partition balances them), so they need only as many layers; the
  // candidates obey no engine's rules (LayerListSpace in plan_rules.cc).
  bool layer_list = false;
  int64_t output_groups = 0;
};

// A layer list's shape: its layers (embedding and head included), the query heads and output
// groups tp splits, the widths of its MLPs (the gcd of the experts' and the dense one's in use),
// its routed experts when any decoder is MoE. The shared KV head is replicated, not split.
PlanShape LayerListShape(const ModelSpec& model);

// The shape of the model in `config` (a transformer's dimensions, or a layer list's as
// LayerListShape) on its cluster's nodes.
PlanShape PlanShapeOf(const Config& config);

// The first of `c.engine`'s rules that `c` breaks under `spec` (the world and global batch it
// must fill; --tp, --max-pp) for `shape`, as the rejection reasons read ("tp crosses a node");
// "" when the engine can run it. Includes what the engine cannot express at all: a schedule,
// recompute option or sharding outside its space ("torchtitan: no schedule 'zb-h1'"), except the
// schedule where `schedule_csv`: torchtitan runs any schedule's actions from a CSV.
std::string BrokenRule(const Candidate& c, const PlanSpec& spec, const PlanShape& shape,
                       bool schedule_csv = false);

// The micro-batch sizes the planner tries (sequences per microbatch and data-parallel rank).
inline constexpr int32_t kPlanMicroBatchSizes[] = {1, 2, 4, 8, 16};

// Ok when some layout of --gpus could run --global-batch-size within the run-size limit that
// simulate applies (run/run_size.h): the smallest, pp 1 with every GPU data-parallel at the
// largest micro-batch size; else an error naming --global-batch-size and the largest that fits.
// Each candidate is held to the same limit by BrokenRule ("too large to simulate").
Status CheckGlobalBatchSimulable(const PlanSpec& spec);

struct Enumeration {
  std::vector<Candidate> legal;
  std::map<std::string, int64_t> rejected;  // reason -> count
  int64_t asked = 0;                        // legal + rejected
};

// Every candidate of `spec.engine` (each engine's own for kAny) for `shape`, in a fixed order.
Enumeration EnumerateCandidates(const PlanSpec& spec, const PlanShape& shape);

}  // namespace stagecraft
