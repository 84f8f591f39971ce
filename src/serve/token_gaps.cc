#include "serve/token_gaps.h"

#include <algorithm>
#include <cmath>

namespace stagecraft {
namespace {

using GapCounts = std::vector<std::pair<int64_t, int64_t>>;

// The smallest batch of runs merged at once: merges stay rare while the counts are few.
constexpr size_t kMinMerge = size_t{1} << 16;

// `runs` sorted by gap and added to `counts` (ascending and distinct), which stays so.
void MergeRuns(GapCounts& runs, GapCounts& counts) {
  std::sort(runs.begin(), runs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  GapCounts merged;
  merged.reserve(counts.size() + runs.size());
  const auto add = [&](const std::pair<int64_t, int64_t>& entry) {
    if (!merged.empty() && merged.back().first == entry.first) {
      merged.back().second += entry.second;
    } else {
      merged.push_back(entry);
    }
  };
  size_t run = 0;
  for (const auto& entry : counts) {
    for (; run < runs.size() && runs[run].first <= entry.first; ++run) add(runs[run]);
    add(entry);
  }
  for (; run < runs.size(); ++run) add(runs[run]);
  counts = std::move(merged);
}

}  // namespace

void TokenGaps::StartRun(int64_t gap_ns) {
  if (run_count_ > 0) {
    if (pending_.empty()) pending_.reserve(std::max(kMinMerge, counts_.size()));
    pending_.emplace_back(run_gap_ns_, run_count_);
    if (pending_.size() >= std::max(kMinMerge, counts_.size())) {
      MergeRuns(pending_, counts_);
      pending_.clear();
    }
  }
  run_gap_ns_ = gap_ns;
  run_count_ = 1;
}

Percentiles TokenGaps::Summarize() const {
  Percentiles result;
  if (count_ == 0) return result;
  GapCounts gaps = counts_;
  GapCounts runs = pending_;
  if (run_count_ > 0) runs.emplace_back(run_gap_ns_, run_count_);
  MergeRuns(runs, gaps);
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
