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
};

struct Enumeration {
  std::vector<Candidate> legal;
  std::map<std::string, int64_t> rejected;  // reason -> count
  int64_t asked = 0;                        // legal + rejected
};

// Every candidate of `spec.engine` (each engine's own for kAny) for `shape`, in a fixed order.
Enumeration EnumerateCandidates(const PlanSpec& spec, const PlanShape& shape);

}  // namespace stagecraft
