// Wait-for analysis of a stuck task graph: when nothing can run and work remains, who waits for
// whom, and the cycle that keeps them waiting (DESIGN.md §3). Shared by the simulator (which
// stops on deadlock) and the checker (which predicts it without timing).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lower/task_graph.h"

namespace stagecraft {

enum class WaitReason : uint8_t {
  kInput,             // needs data (or a local result) that does not exist yet
  kProgramOrder,      // its rank must first run an earlier action
  kReceiveNotPosted,  // rendezvous: the receiving rank has not reached the consumer yet
  kSendOrder,         // rendezvous: the sender issues another send on this link first
  kReceiveOrder,      // rendezvous: the receiver posts another receive on this link first
};

struct WaitEdge {
  uint32_t waiter = 0;
  uint32_t waited_for = 0;
  WaitReason reason = WaitReason::kInput;
  bool operator==(const WaitEdge&) const = default;
};

// What one rank's next action waits for when the graph is stuck.
struct BlockedRank {
  int32_t rank = 0;
  uint32_t head = 0;            // the rank's first unfinished compute task
  std::vector<WaitEdge> waits;  // every unmet dependency of the head
};

struct Deadlock {
  std::vector<BlockedRank> blocked;  // ranks with unfinished work, by rank
  std::vector<WaitEdge> cycle;       // a wait-for cycle; the last edge leads back to the first
};

// REQUIRES: done[t] for every finished task; no task can start (it is a deadlock).
Deadlock AnalyzeDeadlock(const TaskGraph& graph, const std::vector<uint8_t>& done);

// "rank 1 1F0 waits for activation transfer 0F0 -> 1F0 (rank 0 -> 1): input not yet arrived".
std::string DescribeWait(const TaskGraph& graph, const WaitEdge& edge);

// Multi-line text: the blocked ranks, then the cycle.
std::string FormatDeadlock(const TaskGraph& graph, const Deadlock& deadlock);

}  // namespace stagecraft
