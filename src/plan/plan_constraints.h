// What a user fixes or bounds in the planner's search (issue 31, "constraints a user can
// state"): each of --tp, --pp, --vpp, --cp, --ep, --dp, --micro-batch-size and --zero takes a
// value ("8"), a comma list ("2,4,8") or a range ("2-8", both ends included); --schedule and
// --recompute a name or a comma list of names. A candidate outside any of them is rejected
// under "<dimension> other than --<flag>" (plan_rules.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "model/transformer.h"  // Recompute

namespace stagecraft {

// A whole-number constraint: the values a list names, or the range [low, high]. Empty: any.
struct IntChoice {
  std::vector<int32_t> values;  // a value or a list; empty with no range = any
  int32_t low = 0;              // with `ranged`: the range, both ends included
  int32_t high = 0;
  bool ranged = false;
  bool any() const { return values.empty() && !ranged; }
  bool Admits(int32_t value) const;
  bool operator==(const IntChoice&) const = default;
};

// "8", "2,4,8" or "2-8" for `flag`, every value at least `minimum` and at most 1,000,000.
// Errors name the flag, the text and what was expected.
Result<IntChoice> ParseIntChoice(const std::string& text, const std::string& flag, int32_t minimum);

struct PlanConstraints {
  IntChoice tp;                        // --tp
  IntChoice pp;                        // --pp
  IntChoice vpp;                       // --vpp: chunks per rank
  IntChoice cp;                        // --cp
  IntChoice ep;                        // --ep
  IntChoice dp;                        // --dp
  IntChoice micro_batch_size;          // --micro-batch-size
  IntChoice zero;                      // --zero: 0-3 (1 = Megatron's distributed optimizer)
  std::vector<std::string> schedules;  // --schedule: generator names; empty = any
  std::vector<Recompute> recompute;    // --recompute; empty = any
  bool operator==(const PlanConstraints&) const = default;
};

// The flags' text as given ("" = not given), read by ParsePlanConstraints.
struct PlanConstraintText {
  std::string tp, pp, vpp, cp, ep, dp, micro_batch_size, zero, schedule, recompute;
};
// Each given flag parsed (errors name the flag); the ones not given admit any value.
Result<PlanConstraints> ParsePlanConstraints(const PlanConstraintText& text);

}  // namespace stagecraft
