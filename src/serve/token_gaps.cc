#include "serve/token_gaps.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace stagecraft {

void TokenGaps::Add(int64_t gap_ns) {
  ++count_;
  if (gap_ns == run_gap_ns_) {
    ++run_count_;
    return;
  }
  if (run_count_ > 0) tokens_by_gap_ns_[run_gap_ns_] += run_count_;
  run_gap_ns_ = gap_ns;
  run_count_ = 1;
}

Percentiles TokenGaps::Summarize() const {
  Percentiles result;
  if (count_ == 0) return result;
  std::vector<std::pair<int64_t, int64_t>> gaps(tokens_by_gap_ns_.begin(), tokens_by_gap_ns_.end());
  if (run_count_ > 0) gaps.emplace_back(run_gap_ns_, run_count_);
  std::sort(gaps.begin(), gaps.end());
  // The rank of percentile p: ceil(p * count), at least 1, as request_sim.cc's Summarize.
  const auto rank = [&](double p) {
    return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(p * static_cast<double>(count_))));
  };
  const std::pair<double*, int64_t> wanted[] = {
      {&result.p50, rank(0.50)}, {&result.p90, rank(0.90)}, {&result.p99, rank(0.99)}};
  int64_t below = 0;  // tokens with a smaller gap
  double sum_ns = 0;
  for (const auto& [gap_ns, tokens] : gaps) {
    for (const auto& [value, at] : wanted) {
      if (at > below && at <= below + tokens) *value = static_cast<double>(gap_ns) * 1e-9;
    }
    below += tokens;
    sum_ns += static_cast<double>(gap_ns) * static_cast<double>(tokens);
  }
  result.mean = sum_ns / static_cast<double>(count_) * 1e-9;
  return result;
}

}  // namespace stagecraft
