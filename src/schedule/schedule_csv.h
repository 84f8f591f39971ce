// The schedule CSVs of torch.distributed.pipelining: one row per rank, one action per cell
// (`{stage}{F|B|I|W}{mb}`, or torch's overlapped pair `(0F1;3B0)OVERLAP_F_B`), empty cells
// ignored. The compute_comms format's SEND_F/RECV_F/SEND_B/RECV_B cells are kept in
// Schedule::rank_comms with their place in the row; its UNSHARD/RESHARD/REDUCE_GRAD cells are
// skipped. Text in, text out: the CLI reads and writes the files.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"
#include "schedule/schedule.h"

namespace stagecraft {

// Parses CSV text. `source` names the file in errors ("sched.csv:2:5: ..."). The stage count
// is the largest stage + 1, the microbatch count the largest microbatch + 1; the placement is
// `loop` unless every stage sits where the V (or the bidirectional `dual`) placement puts it and
// no loop fits.
Result<Schedule> ParseScheduleCsv(std::string_view text, std::string_view source);

// One line per rank, cells joined by ',', no trailing empty cells.
std::string WriteScheduleCsv(const Schedule& schedule);

}  // namespace stagecraft
