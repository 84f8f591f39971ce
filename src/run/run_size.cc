#include "run/run_size.h"

#include <algorithm>

#include "core/units.h"

namespace stagecraft {
namespace {

int64_t BytesPerTask(const RunSize& size) {
  return kBytesPerTask + (size.trace ? kTraceBytesPerTask : 0);
}

std::string Count(int64_t count, const std::string& one, const std::string& many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

}  // namespace

std::string RunGibText(long double bytes) {
  const long double gib = bytes / static_cast<long double>(int64_t{1} << 30);
  const bool whole = gib == static_cast<long double>(static_cast<int64_t>(gib));
  return FormatFixed(static_cast<double>(gib), whole ? 0 : 1) + " GiB";
}

long double EstimateRunBytes(const RunSize& size) {
  const long double tasks = static_cast<long double>(size.stages) *
                            static_cast<long double>(size.microbatches) * kTasksPerStageMicrobatch;
  return tasks * BytesPerTask(size) + static_cast<long double>(size.ranks) * kBytesPerRank;
}

int64_t MaxMicrobatches(const RunSize& size) {
  const long double left =
      static_cast<long double>(kMaxRunBytes) - static_cast<long double>(size.ranks) * kBytesPerRank;
  const long double per_microbatch = static_cast<long double>(std::max<int64_t>(1, size.stages)) *
                                     kTasksPerStageMicrobatch * BytesPerTask(size);
  if (left < per_microbatch) return 0;
  return static_cast<int64_t>(left / per_microbatch);
}

Status CheckRunSize(const RunSize& size, const std::string& shape, const std::string& lower) {
  const long double bytes = EstimateRunBytes(size);
  if (bytes <= static_cast<long double>(kMaxRunBytes)) return Status::Ok();
  const long double tasks = static_cast<long double>(size.stages) *
                            static_cast<long double>(size.microbatches) * kTasksPerStageMicrobatch;
  const int64_t fit = MaxMicrobatches(size);
  return Error{
      "the run is too large: " + shape + " = " + Count(size.stages, "stage", "stages") + " x " +
      Count(size.microbatches, "microbatch", "microbatches") + " make about " +
      FormatFixed(static_cast<double>(tasks), 0) + " tasks (" +
      std::to_string(kTasksPerStageMicrobatch) + " per stage and microbatch), about " +
      RunGibText(bytes) + " at " + std::to_string(kBytesPerTask) + " B per task" +
      (size.trace ? " and " + std::to_string(kTraceBytesPerTask) + " B more for its --trace events"
                  : std::string()) +
      " plus " + std::to_string(kBytesPerRank / 1024) + " KiB per rank, more than the limit of " +
      RunGibText(kMaxRunBytes) + "; lower " + lower +
      (fit > 0 ? " (" + Count(fit, "microbatch fits", "microbatches fit") + " " +
                     Count(size.stages, "stage", "stages") + (size.trace ? " with a trace)" : ")")
               : std::string()) +
      (size.trace ? ", or drop --trace" : "")};
}

}  // namespace stagecraft
