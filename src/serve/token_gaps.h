// The gaps between consecutive output tokens of every request of a serving run (inter-token
// latency, ITL, as vLLM's benchmark_serving reports it over all tokens), kept exactly and
// compactly: a count per gap in integer nanoseconds, the simulator's own resolution. The
// percentiles are the nearest-rank ones of the whole sample, as if every gap were stored, while
// the memory grows with the distinct gaps (in a run, close to the distinct iteration times: a
// request decoding in consecutive iterations waits one iteration per token), not the tokens.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "serve/request_sim.h"

namespace stagecraft {

class TokenGaps {
 public:
  // One more token `gap_ns` after its request's previous one. REQUIRES: gap_ns >= 0.
  void Add(int64_t gap_ns) {
    ++count_;
    if (gap_ns == run_gap_ns_) {
      ++run_count_;
    } else {
      StartRun(gap_ns);
    }
  }
  int64_t count() const { return count_; }
  // Nearest rank (the smallest gap with at least p of the tokens at or below it), in seconds;
  // the mean is the sum of the gaps over their count. All zero without a gap.
  Percentiles Summarize() const;

 private:
  // The run so far pending (merged into the counts when enough are), and a new one at `gap_ns`.
  void StartRun(int64_t gap_ns);

  // The counts by gap, ascending and distinct; and the runs since the last merge, unsorted.
  // Appending a run is a sequential write and merging sorts a batch at least as large as the
  // counts, where a hash table probed once per run misses the cache at nearly every probe (a
  // 10^5-request run has about 2 x 10^6 runs and 2 x 10^5 distinct gaps).
  std::vector<std::pair<int64_t, int64_t>> counts_;
  std::vector<std::pair<int64_t, int64_t>> pending_;
  // The run of equal gaps being added (the decodes of one iteration share theirs), not yet
  // pending: one entry per run, not per token.
  int64_t run_gap_ns_ = -1;
  int64_t run_count_ = 0;
  int64_t count_ = 0;
};

}  // namespace stagecraft
