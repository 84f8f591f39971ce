// What the parallel module's unit tests share (header-only; nothing here is linked into the
// tool): a cluster on which a collective's time is easy to derive by hand, and a config on it.
#pragma once

#include <cmath>

#include "core/time.h"
#include "io/config.h"

namespace stagecraft {

// Nodes of 8 devices whose links have no latency: NVLink moves 1 byte per ns (1e9 B/s) and the
// network 1 byte per 10 ns (1e8 B/s), so a ring collective inside a node takes its bytes on the
// wire in ns. Costs come from one efficiency (cluster.device.efficiency), so no kernel model
// and no TP overlap enter.
inline ClusterSpec NanosecondPerByteCluster() {
  ClusterSpec cluster;
  cluster.given = true;
  cluster.efficiency_given = true;
  cluster.devices_per_node = 8;
  cluster.nodes = 4;
  cluster.intra_node = LinkSpec{Time(), 1e9};
  cluster.inter_node = LinkSpec{Time(), 1e8};
  return cluster;
}

// A config on NanosecondPerByteCluster with one pipeline rank and nothing else parallel.
inline Config ParallelTestConfig() {
  Config config;
  config.cluster = NanosecondPerByteCluster();
  config.parallel.pp = 1;
  config.parallel.microbatches = 4;
  return config;
}

// A time in ns, for expectations written as closed forms in bytes at 1 byte per ns.
inline Time Ns(double ns) { return Time::Nanoseconds(std::llround(ns)); }

}  // namespace stagecraft
