// The torch-pipelining p2p mode (P2pMode::kTorchPipelining): where torch.distributed.pipelining's
// runtime posts each send and receive, as extra edges on a lowered graph.
//
// Source: pytorch/pytorch torch/distributed/pipelining/schedules.py. ScheduleZBVZeroBubble,
// ScheduleDualPipeV, ScheduleInterleaved1F1B and a CSV loaded by _PipelineScheduleRuntime._load_csv
// all run in _PipelineScheduleRuntime._step_microbatches, which walks the rank's comm list and
// issues one batch_isend_irecv per SEND_F/SEND_B/RECV_F/RECV_B action when it reaches it, never
// waiting there; a compute action waits only for its own receive (fwd_recv_ops.pop(...).wait()).
// A compute-only schedule gets its comm list from _add_send_recv: a lockstep pass over the ranks
// in rank order, one compute action (or OVERLAP_F_B pair) per rank per round, placed only once its
// cross-rank input was placed; placing it appends its SEND after it and the peer's RECV at the
// end of the peer's list, i.e. after the compute actions the peer has placed so far. So receives
// are posted ahead of their consumers, and every link's sends and receives have the same order.
// A compute_comms CSV gives the list explicitly (Schedule::rank_comms); then NCCL's in-order
// matching of a link's k-th send with its k-th receive can deadlock when the two orders differ.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/result.h"
#include "lower/task_graph.h"
#include "schedule/schedule.h"

namespace stagecraft {

// The edges the mode adds (from → to), for the activation and gradient transfers only (other
// transfers stay async): the receiver's compute action before the RECV → the transfer (the
// receive is posted when it ends); for an explicit SEND placed later than right after its
// producer, the compute action before the SEND → the transfer; and per link, each transfer after
// the previous one in send order and in receive order. When the lockstep pass gets stuck (torch's
// "Malformed compute schedule, can't schedule sends/recvs") the unplaced transfers get no edge:
// the data dependencies already deadlock. Fails, naming the rank and the comm action, when an
// explicit comm list lacks, misplaces or invents a SEND/RECV.
// REQUIRES: `graph` is `schedule` lowered, with its adjacency built.
Result<std::vector<std::pair<uint32_t, uint32_t>>> TorchPipeliningEdges(const TaskGraph& graph,
                                                                        const Schedule& schedule);

}  // namespace stagecraft
