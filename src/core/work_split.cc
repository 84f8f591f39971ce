#include "core/work_split.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace stagecraft {
namespace {

class Threads : public WorkSplit {
 public:
  explicit Threads(int32_t threads) : threads_(std::max(1, threads)) {}

  std::vector<std::string> Map(size_t count, const std::function<std::string(size_t)>& work,
                               const std::function<void(size_t)>& done) override {
    std::vector<std::string> results(count);
    const size_t workers =
        std::min<size_t>(static_cast<size_t>(threads_), std::max<size_t>(count, 1));
    // Chunks small enough that the slowest piece does not leave the others idle for long, large
    // enough that the counter is not contended.
    const size_t chunk = std::max<size_t>(1, count / (workers * 8));
    std::atomic<size_t> next{0};
    std::mutex told;
    auto worker = [&] {
      for (;;) {
        const size_t first = next.fetch_add(chunk);
        if (first >= count) return;
        const size_t last = std::min(count, first + chunk);
        if (done) {
          std::lock_guard<std::mutex> lock(told);
          done(last);
        }
        for (size_t index = first; index < last; ++index) results[index] = work(index);
      }
    };
    std::vector<std::thread> pool;
    for (size_t extra = 1; extra < workers; ++extra) pool.emplace_back(worker);
    worker();
    for (std::thread& thread : pool) thread.join();
    return results;
  }

  std::string Describe() const override {
    return std::to_string(threads_) + (threads_ == 1 ? " thread" : " threads");
  }

 private:
  int32_t threads_;
};

}  // namespace

std::unique_ptr<WorkSplit> ThreadSplit(int32_t threads) {
  return std::make_unique<Threads>(threads);
}

}  // namespace stagecraft
