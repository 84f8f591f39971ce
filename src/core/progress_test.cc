// The progress line (core/progress.h): its format, its throttle and its silence, driven by an
// injected clock and sink, never by timing (issue 35, D7).
#include "core/progress.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stagecraft {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

struct Recorder {
  std::vector<std::string> lines;
  int64_t now = 0;
  ProgressSink Sink() {
    return [this](const std::string& line) { lines.push_back(line); };
  }
  Progress::Clock Clock() {
    return [this] { return now; };
  }
};

TEST(ProgressTest, FormatsCountShareElapsedAndEstimate) {
  EXPECT_EQ(Progress::Format("plan: simulating", 12, 40, 4 * kSecond, "tp 2 pp 4"),
            "plan: simulating 12/40 (30%), 4 s, about 9 s left: tp 2 pp 4");
  EXPECT_EQ(Progress::Format("serve: requests", 0, 10, kSecond / 2, ""),
            "serve: requests 0/10 (0%), 0 s");
  EXPECT_EQ(Progress::Format("x", 50, 40, 3 * kSecond, ""), "x 40/40 (100%), 3 s");
  const std::string detail(100, 'd');
  EXPECT_EQ(Progress::Format("x", 1, 2, 0, detail),
            "x 1/2 (50%), 0 s, about 0 s left: " + std::string(60, 'd') + "...");
}

TEST(ProgressTest, QuietAtFirstThenThrottledThenCleared) {
  Recorder recorder;
  {
    Progress progress(recorder.Sink(), "run", 100, recorder.Clock());
    recorder.now = kSecond / 2;
    progress.Update(10);
    EXPECT_TRUE(recorder.lines.empty());  // a short run shows nothing
    recorder.now = kSecond;
    progress.Update(20);
    ASSERT_EQ(recorder.lines.size(), 1u);
    EXPECT_EQ(recorder.lines.back(), "run 20/100 (20%), 1 s, about 4 s left");
    recorder.now = kSecond + Progress::kRedrawNs - 1;
    progress.Update(30);
    EXPECT_EQ(recorder.lines.size(), 1u);  // too soon to redraw
    recorder.now = kSecond + Progress::kRedrawNs;
    progress.Update(40);
    EXPECT_EQ(recorder.lines.size(), 2u);
  }
  ASSERT_EQ(recorder.lines.size(), 3u);
  EXPECT_EQ(recorder.lines.back(), "");  // the line is cleared at the end
}

TEST(ProgressTest, NothingWithoutASinkAndNoClearWhenNothingWasDrawn) {
  int64_t calls = 0;
  {
    Progress none(nullptr, "run", 10, [&calls] {
      ++calls;
      return int64_t{0};
    });
    none.Update(5);
    EXPECT_FALSE(none.shown());
  }
  EXPECT_EQ(calls, 0);  // not even the clock is read
  Recorder recorder;
  { Progress quick(recorder.Sink(), "run", 10, recorder.Clock()); }
  EXPECT_TRUE(recorder.lines.empty());
}

}  // namespace
}  // namespace stagecraft
