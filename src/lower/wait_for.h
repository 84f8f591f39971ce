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
  kReceiveNotPosted,  // rendezvous / torch-pipelining: the receiving rank has not posted it yet
  kSendOrder,         // rendezvous / torch-pipelining: another send on this link goes first
  kReceiveOrder,      // rendezvous / torch-pipelining: another receive on this link goes first
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

// The compute task a deadlock report names: the rank whose order closes the cycle. In order of
// preference: the receiver that has not posted a receive the cycle needs; the consumer of a
// receive posted out of the link's send order; the action a rank runs
// before one it transitively needs (a program-order wait that inverts a microbatch's dependency
// order, or runs a later microbatch's copy of an action first); the first compute task of the
// cycle; the consumer of a send issued out of order; the first blocked rank's head. REQUIRES:
// deadlock.blocked is not empty.
uint32_t DeadlockCulprit(const TaskGraph& graph, const Deadlock& deadlock);

// "rank 1 1F0 waits for activation transfer 0F0 -> 1F0 (rank 0 -> 1): input not yet arrived".
std::string DescribeWait(const TaskGraph& graph, const WaitEdge& edge);

// Multi-line text: the blocked ranks, then the cycle.
std::string FormatDeadlock(const TaskGraph& graph, const Deadlock& deadlock);

}  // namespace stagecraft
