// Progress of a long run as one line redrawn in place (issue 35, D7): plan's candidates,
// serve-plan's layouts, serve's requests, a big simulation's phases. The library only counts
// ("12 of 40 done"); where the line goes is a ProgressSink the command line gives, and it gives
// one only when stderr is a terminal and the output is not --json, so piped output (the goldens)
// never changes. The clock is injected, so the throttle is tested without timing.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace stagecraft {

// Receives the line to show; "" clears it. nullptr: no progress is shown at all.
using ProgressSink = std::function<void(const std::string& line)>;

class Progress {
 public:
  using Clock = std::function<int64_t()>;  // nanoseconds from any fixed point, never decreasing

  // No line during the first kQuietNs (a short run shows nothing), then at most one per
  // kRedrawNs (a terminal redrawn per event would slow the run it reports).
  static constexpr int64_t kQuietNs = 1'000'000'000;
  static constexpr int64_t kRedrawNs = 200'000'000;

  // `what` names the work ("plan: simulating candidates"); `total` the steps (>= 1).
  Progress(ProgressSink sink, std::string what, int64_t total, Clock clock = SteadyNs);
  ~Progress();  // clears the line if one was drawn
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` of the total steps are finished; `detail` says what runs now (may be ""). Draws when
  // due. Thread-safe. Cheap when there is no sink (returns at once).
  void Update(int64_t done, const std::string& detail = "");
  // Whether anything is shown: callers may skip building a detail when not.
  bool shown() const { return sink_ != nullptr; }

  // The line: "what 12/40 (30%), 4 s, about 9 s left: detail" (no estimate before the first
  // step, the detail cut to kMaxDetailBytes).
  static std::string Format(const std::string& what, int64_t done, int64_t total,
                            int64_t elapsed_ns, const std::string& detail);
  static constexpr size_t kMaxDetailBytes = 60;

  static int64_t SteadyNs();

 private:
  ProgressSink sink_;
  std::string what_;
  int64_t total_;
  Clock clock_;
  int64_t start_ns_ = 0;
  int64_t last_draw_ns_ = -1;  // -1: nothing drawn yet
  std::mutex mutex_;
};

}  // namespace stagecraft
