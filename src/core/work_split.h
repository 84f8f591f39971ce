// How a search spreads its independent pieces of work (the planner's cost keys and exact
// simulations, serve-plan's configurations) over the threads of this process (`--jobs N`) or,
// for the planner, over the processes of an MPI job (plan/work_split.h's MPI split). Every
// worker takes the next chunk of indices from one shared counter (dynamic chunking: a slow piece
// holds up only its worker), and the results come back ordered by index, so the answer is the
// same bytes however the work was split.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/result.h"

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

// Reads back what a ByteWriter wrote, in the same order. A read past the end gives a zero value
// (an empty string) and leaves the reader failed: ok() says whether every read so far was whole.
class ByteReader {
 public:
  explicit ByteReader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T Get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value{};
    if (at_ + sizeof(T) <= bytes_.size()) {
      std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    } else {
      failed_ = true;
    }
    at_ += sizeof(T);
    return value;
  }
  std::string GetString() {
    const uint64_t size = Get<uint64_t>();
    if (failed_ || size > bytes_.size() - std::min(at_, bytes_.size())) {
      failed_ = true;
      at_ = bytes_.size();
      return std::string();
    }
    std::string text = bytes_.substr(at_, size);
    at_ += size;
    return text;
  }
  bool ok() const { return !failed_; }
  // Every byte read, none short.
  bool AtEnd() const { return !failed_ && at_ == bytes_.size(); }

 private:
  const std::string& bytes_;
  size_t at_ = 0;
  bool failed_ = false;
};

// WorkSplit::Map for a value type: work(i) for every i in [0, count), its results by index.
// A value crosses processes as its bytes (a trivially copyable T); a result that does not read
// back whole is an error (a worker and the reader disagree on the type), never zeros.
template <typename T>
Result<std::vector<T>> MapValues(WorkSplit& split, size_t count,
                                 const std::function<T(size_t)>& work,
                                 const std::function<void(size_t)>& done = nullptr) {
  static_assert(std::is_trivially_copyable_v<T>);
  const std::vector<std::string> encoded = split.Map(
      count, [&](size_t index) { return ByteWriter().Put(work(index)).Take(); }, done);
  std::vector<T> values;
  values.reserve(encoded.size());
  for (size_t index = 0; index < encoded.size(); ++index) {
    ByteReader reader(encoded[index]);
    values.push_back(reader.Get<T>());
    if (!reader.AtEnd()) {
      return Error{"internal: result " + std::to_string(index) + " of " + split.Describe() +
                   " is " + std::to_string(encoded[index].size()) + " bytes, expected " +
                   std::to_string(sizeof(T))};
    }
  }
  return values;
}

}  // namespace stagecraft
