// Collective and point-to-point cost models (α-β; DESIGN.md §6 "comm"). A collective over n
// ranks laid out g to a node (contiguous ranks) costs per-step latencies α plus bytes over the
// bottleneck bandwidth β of the links it uses:
//   ring all-reduce       2(n−1)·α + 2(n−1)/n · S/β
//   ring reduce-scatter,  (n−1)·α + (n−1)/n · S/β      (S = the whole array, nccl-tests' size)
//   ring all-gather
//   tree all-reduce       2·⌈log2 n⌉·α + 2·S/β          (NCCL's pipelined double binary tree)
//   hierarchical AR       intra-node RS of S, inter-node ring AR of S/g over the n/g nodes,
//                         intra-node AG of S
//   all-to-all            (n−1)·α + max((g−1)/n · S/β_intra, (n−g)/n · S/β_inter)
//   broadcast, reduce     (n−1)·α + S/β                 (pipelined chain)
//   send/recv             α + S/β
// β is the intra-node bandwidth when the group fits one node. A ring over several nodes runs
// as g parallel rings, one per NIC rail (NCCL's rings on a rail-optimized fabric): every rank's
// NVLink carries all of them and each rail one, so β = min(β_intra, g·β_inter) and α is the
// inter-node latency. nccl-tests conventions for the reported bandwidths:
// algbw = S / time; busbw = algbw × factor, factor 2(n−1)/n for all-reduce, (n−1)/n for
// reduce-scatter, all-gather and all-to-all, 1 for broadcast, reduce and send/recv.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_table.h"
#include "core/result.h"
#include "core/time.h"
#include "hardware/cluster_spec.h"

namespace stagecraft {

enum class Collective : uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kAllToAll,
  kBroadcast,
  kReduce,
  kSendRecv,
};

enum class CollectiveAlgorithm : uint8_t { kRing, kTree, kHierarchical };

// Their names (nccl-tests' binaries without _perf), in `list collectives` order.
inline constexpr EnumTable<Collective> kCollectiveNames = {
    {"allreduce", Collective::kAllReduce}, {"reducescatter", Collective::kReduceScatter},
    {"allgather", Collective::kAllGather}, {"alltoall", Collective::kAllToAll},
    {"broadcast", Collective::kBroadcast}, {"reduce", Collective::kReduce},
    {"sendrecv", Collective::kSendRecv}};
constexpr const char* CollectiveName(Collective collective) {
  return kCollectiveNames.Name(collective);
}
Result<Collective> ParseCollective(std::string_view name);
inline constexpr EnumTable<CollectiveAlgorithm> kCollectiveAlgorithmNames = {
    {"ring", CollectiveAlgorithm::kRing},
    {"tree", CollectiveAlgorithm::kTree},
    {"hierarchical", CollectiveAlgorithm::kHierarchical}};
constexpr const char* CollectiveAlgorithmName(CollectiveAlgorithm algorithm) {
  return kCollectiveAlgorithmNames.Name(algorithm);
}
Result<CollectiveAlgorithm> ParseCollectiveAlgorithm(std::string_view name);

// nccl-tests' busbw / algbw factor for n ranks.
double BusBandwidthFactor(Collective collective, int32_t ranks);

struct CollectiveGroup {
  int32_t ranks = 1;           // n
  int32_t ranks_per_node = 1;  // g: ranks of the group sharing a node (contiguous placement)
  LinkSpec intra_node;
  LinkSpec inter_node;
  bool spans_nodes() const { return ranks > ranks_per_node; }
};
// The group of the first `ranks` devices of `cluster` (contiguous, filling nodes in order).
CollectiveGroup GroupOnCluster(const ClusterSpec& cluster, int32_t ranks);

struct CollectiveCost {
  Time time;
  double algbw_bytes_per_s = 0.0;  // S / time
  double busbw_bytes_per_s = 0.0;  // algbw × BusBandwidthFactor
  std::string formula;             // the α-β form with this call's numbers
};

// Errors: ranks < 1, bytes < 0, an algorithm that does not apply (tree and hierarchical are
// all-reduce algorithms; hierarchical needs a group over several whole nodes).
Result<CollectiveCost> EstimateCollective(Collective collective, CollectiveAlgorithm algorithm,
                                          int64_t bytes, const CollectiveGroup& group);

// The ring time of `kind` moving `bytes` in all over `ranks` ranks of `cluster`, `ranks_per_node`
// of them in a node (clamped to 1..ranks); nothing for a group of one or nothing to move.
Time RingTime(const ClusterSpec& cluster, Collective kind, int32_t ranks, int32_t ranks_per_node,
              double bytes);

// Ring attention (context parallelism over cp ranks): cp − 1 steps, each sending the KV block
// in hand to the next rank while computing attention against it. A step is hidden when its
// compute (step_flops at flops_per_s) lasts at least its transfer (α + step_bytes/β over
// `link`). With blocks of c tokens, compute 4c²h FLOPs and transfer 4ch bytes (K and V, bf16),
// that is c >= F/B: peak FLOP/s over bandwidth (reference facts §4). Returns the exposed time
// of all steps: (cp − 1)·max(0, transfer − compute).
Time RingAttentionExposed(int32_t cp, double step_flops, double flops_per_s, double step_bytes,
                          const LinkSpec& link);

}  // namespace stagecraft
