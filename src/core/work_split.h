// How a search spreads its independent pieces of work (the planner's cost keys and exact
// simulations, serve-plan's configurations) over the threads of this process (`--jobs N`) or,
// for the planner, over the processes of an MPI job (plan/work_split.h's MPI split). Every
// worker takes the next chunk of indices from one shared counter (dynamic chunking: a slow piece
// holds up only its worker), and the results come back ordered by index, so the answer is the
// same bytes however the work was split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace stagecraft {

class WorkSplit {
 public:
  virtual ~WorkSplit() = default;

  // Runs work(i) for every i in [0, count) on some worker and returns the results by index,
  // on every process. `done(n)` is told how many pieces have been taken so far (from one
  // thread at a time; only on the process that prints).
  virtual std::vector<std::string> Map(size_t count, const std::function<std::string(size_t)>& work,
                                       const std::function<void(size_t)>& done) = 0;

  // Whether this process writes the answer (false on an MPI job's ranks other than 0).
  virtual bool prints() const { return true; }

  // "1 thread", "4 threads", "2 MPI processes".
  virtual std::string Describe() const = 0;
};

// `threads` workers in this process (1: the calling thread alone). REQUIRES: threads >= 1.
std::unique_ptr<WorkSplit> ThreadSplit(int32_t threads);

// Results cross processes as bytes: plain values appended and read back in the same order.
class ByteWriter {
 public:
  template <typename T>
  ByteWriter& Put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
    return *this;
  }
  ByteWriter& PutString(const std::string& text) {
    Put<uint64_t>(text.size());
    bytes_ += text;
    return *this;
  }
  std::string Take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T Get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value{};
    if (at_ + sizeof(T) <= bytes_.size()) std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::string GetString() {
    const uint64_t size = Get<uint64_t>();
    std::string text = at_ <= bytes_.size() ? bytes_.substr(at_, size) : std::string();
    at_ += size;
    return text;
  }

 private:
  const std::string& bytes_;
  size_t at_ = 0;
};

}  // namespace stagecraft
