#include "multimodal/context_parallel.h"

#include <string>

namespace stagecraft {
namespace {

// Σ_{t=begin}^{end−1} ⌊t/m⌋ in closed form per whole group: positions g·m .. g·m + m − 1 add g·m.
double ScanLoad(int64_t begin, int64_t end, int32_t m) {
  double load = 0;
  for (int64_t group = begin / m; group < end / m; ++group) {
    load += static_cast<double>(group) * m;
  }
  return load;
}

}  // namespace

Result<std::vector<double>> IndexerScanLoad(int64_t seq_len, int32_t compress_ratio, int32_t cp,
                                            bool zigzag) {
  if (cp < 1 || compress_ratio < 1 || seq_len < 1) {
    return Error{
        "context parallelism needs cp >= 1, a compression ratio >= 1 and a sequence of "
        "at least 1 token, got cp " +
        std::to_string(cp) + ", compression ratio " + std::to_string(compress_ratio) + ", " +
        std::to_string(seq_len) + " tokens"};
  }
  const int64_t chunks = zigzag ? 2 * int64_t{cp} : cp;
  if (seq_len % chunks != 0 || (seq_len / chunks) % compress_ratio != 0) {
    return Error{"cp " + std::to_string(cp) + (zigzag ? " with zig-zag chunks" : "") +
                 " cannot split " + std::to_string(seq_len) + " tokens into " +
                 std::to_string(chunks) + " shards of whole compression groups of " +
                 std::to_string(compress_ratio) + " (a shard must be a multiple of m tokens)"};
  }
  const int64_t chunk = seq_len / chunks;
  std::vector<double> load(static_cast<size_t>(cp), 0.0);
  for (int32_t rank = 0; rank < cp; ++rank) {
    load[rank] = ScanLoad(rank * chunk, (rank + 1) * chunk, compress_ratio);
    if (zigzag) {
      const int64_t mirror = 2 * int64_t{cp} - 1 - rank;
      load[rank] += ScanLoad(mirror * chunk, (mirror + 1) * chunk, compress_ratio);
    }
  }
  double total = 0;
  for (double value : load) total += value;
  const double average = total / cp;
  for (double& value : load) value = average > 0 ? value / average : 1.0;
  return load;
}

}  // namespace stagecraft
