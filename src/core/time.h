// Time: an integer count of nanoseconds, the only clock type in stagecraft (DESIGN.md §3).
// Costs computed in floating point are rounded once, where they are computed.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace stagecraft {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time Nanoseconds(int64_t ns) { return Time(ns); }
  static constexpr Time Max() { return Time(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t ns() const { return ns_; }
  // Milliseconds as a double, for output only (never fed back into the clock).
  constexpr double ms() const { return static_cast<double>(ns_) / 1e6; }

  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time other) const { return Time(ns_ + other.ns_); }
  constexpr Time operator-(Time other) const { return Time(ns_ - other.ns_); }
  constexpr Time& operator+=(Time other) {
    ns_ += other.ns_;
    return *this;
  }
  constexpr Time& operator-=(Time other) {
    ns_ -= other.ns_;
    return *this;
  }
  constexpr Time operator*(int64_t factor) const { return Time(ns_ * factor); }

 private:
  constexpr explicit Time(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

constexpr Time Milliseconds(int64_t ms) { return Time::Nanoseconds(ms * 1'000'000); }

// The clock's limits, so that no sum of task times overflows int64: one duration read from the
// input (a cost, a latency) is at most kMaxInputDuration, 2^42 ns (about 73 minutes), and the
// durations of all tasks of one run add up to at most kMaxRunDuration, 2^62 ns (about 146 years,
// half of int64's range, so a start plus a duration never overflows either).
inline constexpr Time kMaxInputDuration = Time::Nanoseconds(int64_t{1} << 42);
inline constexpr Time kMaxRunDuration = Time::Nanoseconds(int64_t{1} << 62);

// A cost computed in seconds (floating point), rounded once to the nearest nanosecond. A value
// beyond int64 (or NaN) saturates to Time::Max(), which the run's duration limit then refuses.
inline Time FromSeconds(double seconds) {
  const double ns = seconds * 1e9;
  if (!(ns < 9.2e18)) return Time::Max();
  if (ns < -9.2e18) return Time::Nanoseconds(std::numeric_limits<int64_t>::min());
  return Time::Nanoseconds(std::llround(ns));
}

}  // namespace stagecraft
