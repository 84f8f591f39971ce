#include "core/progress.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace stagecraft {
namespace {

std::string Seconds(int64_t ns) { return std::to_string(ns / 1'000'000'000) + " s"; }

}  // namespace

int64_t Progress::SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Progress::Progress(ProgressSink sink, std::string what, int64_t total, Clock clock)
    : sink_(std::move(sink)),
      what_(std::move(what)),
      total_(std::max<int64_t>(1, total)),
      clock_(std::move(clock)) {
  if (sink_) start_ns_ = clock_();
}

Progress::~Progress() {
  if (sink_ && last_draw_ns_ >= 0) sink_("");
}

void Progress::Update(int64_t done, const std::string& detail) {
  if (!sink_) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  const int64_t now = clock_();
  if (now - start_ns_ < kQuietNs) return;
  if (last_draw_ns_ >= 0 && now - last_draw_ns_ < kRedrawNs) return;
  last_draw_ns_ = now;
  sink_(Format(what_, done, total_, now - start_ns_, detail));
}

std::string Progress::Format(const std::string& what, int64_t done, int64_t total,
                             int64_t elapsed_ns, const std::string& detail) {
  done = std::clamp<int64_t>(done, 0, total);
  std::string line = what + " " + std::to_string(done) + "/" + std::to_string(total) + " (" +
                     std::to_string(done * 100 / std::max<int64_t>(1, total)) + "%), " +
                     Seconds(elapsed_ns);
  if (done > 0 && done < total) {
    // The steps so far at their mean pace: a guess, said as one.
    const long double left = static_cast<long double>(elapsed_ns) * (total - done) / done;
    line += ", about " + Seconds(static_cast<int64_t>(left)) + " left";
  }
  if (!detail.empty()) {
    line += ": " +
            (detail.size() > kMaxDetailBytes ? detail.substr(0, kMaxDetailBytes) + "..." : detail);
  }
  return line;
}

}  // namespace stagecraft
