// The gaps between consecutive output tokens of every request of a serving run (inter-token
// latency, ITL, as vLLM's benchmark_serving reports it over all tokens), kept exactly and
// compactly: a count per gap in integer nanoseconds, the simulator's own resolution. The
// percentiles are the nearest-rank ones of the whole sample, as if every gap were stored, while
// the memory grows with the distinct gaps (in a run, close to the distinct iteration times: a
// request decoding in consecutive iterations waits one iteration per token), not the tokens.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "serve/request_sim.h"

namespace stagecraft {

class TokenGaps {
 public:
  // One more token `gap_ns` after its request's previous one. REQUIRES: gap_ns >= 0.
  void Add(int64_t gap_ns);
  int64_t count() const { return count_; }
  // Nearest rank (the smallest gap with at least p of the tokens at or below it), in seconds;
  // the mean is the sum of the gaps over their count. All zero without a gap.
  Percentiles Summarize() const;

 private:
  std::unordered_map<int64_t, int64_t> tokens_by_gap_ns_;
  // The run of equal gaps being added (the decodes of one iteration share theirs), not yet in
  // the map: one hash lookup per run, not per token.
  int64_t run_gap_ns_ = -1;
  int64_t run_count_ = 0;
  int64_t count_ = 0;
};

}  // namespace stagecraft
