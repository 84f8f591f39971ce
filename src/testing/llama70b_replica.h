// The serve tests' common replica: Llama-3-70B (testing/models.h) at tp 8 on a preset of H100s,
// with `replicas` replicas and the given engine options (header-only; the serve tests link serve).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "hardware/presets.h"
#include "serve/step_cost.h"
#include "testing/models.h"

namespace stagecraft {

inline ReplicaModel Llama70bTp8Replica(const char* preset, int32_t replicas = 1,
                                       const EngineOptions& engine = {}) {
  auto cluster = ClusterFromPreset(preset);
  EXPECT_TRUE(cluster.ok());
  auto replica = BuildReplicaModel(Llama3_70bSpec(), cluster.value(),
                                   {.tp = 8, .pp = 1, .replicas = replicas}, engine);
  EXPECT_TRUE(replica.ok()) << replica.error().message;
  return replica.value();
}

}  // namespace stagecraft
