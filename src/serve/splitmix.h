// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014;
// the constants of Vigna's reference splitmix64.c): the request simulator's own generator, so
// a seed gives the same workload on every platform and standard library.
#pragma once

#include <cmath>
#include <cstdint>

namespace stagecraft {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1]: the top 53 bits, never 0 (so -log is finite).
  double NextUnit() { return (static_cast<double>(Next() >> 11) + 1.0) * 0x1.0p-53; }
  // Exponential with the given mean (inverse transform).
  double NextExponential(double mean) { return -std::log(NextUnit()) * mean; }
  // Uniform integer in [low, high]. REQUIRES: low <= high.
  int64_t NextInRange(int64_t low, int64_t high) {
    const uint64_t span = static_cast<uint64_t>(high - low) + 1;
    return low + static_cast<int64_t>(Next() % span);
  }

 private:
  uint64_t state_;
};

}  // namespace stagecraft
