// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014;
// the constants of Vigna's reference splitmix64.c, prng.di.unimi.it): the project's one seeded
// generator (the request simulator's workloads, the failure Monte Carlo, image-token draws), so
// a seed gives the same numbers on every platform and standard library. One 64-bit state,
// period 2^64, passes BigCrush; no std:: distributions (their output differs between libraries).
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
  // Uniform in (0, 1): the top 53 bits shifted by half a step, never 0 nor 1 (so -log and
  // -log(1 - u) are both finite).
  double NextOpenUnit() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }
  // Uniform integer in [0, n) by rejection (no modulo bias). REQUIRES: n >= 1.
  uint64_t NextBelow(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    for (;;) {
      const uint64_t x = Next();
      if (x < limit) return x % n;
    }
  }
  // Exponential with the given mean (inverse transform).
  double NextExponential(double mean) { return -std::log(NextUnit()) * mean; }
  // Standard normal (Box-Muller, the cosine branch only: one draw per two uniforms).
  double NextNormal() {
    const double radius = std::sqrt(-2.0 * std::log(NextUnit()));
    return radius * std::cos(2.0 * 3.14159265358979323846 * NextUnit());
  }
  // Gamma with shape k and scale theta (mean k·theta): Marsaglia and Tsang, "A simple method
  // for generating gamma variables", ACM TOMS 26(3), 2000; for k < 1 their boost
  // Gamma(k) = Gamma(k + 1)·U^(1/k). REQUIRES: shape > 0, scale > 0.
  double NextGamma(double shape, double scale) {
    if (shape < 1) return NextGamma(shape + 1, scale) * std::pow(NextUnit(), 1.0 / shape);
    const double d = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    while (true) {
      double x = 0;
      double v = 0;
      do {
        x = NextNormal();
        v = 1.0 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const double u = NextUnit();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v * scale;
    }
  }
  // Uniform integer in [low, high]. REQUIRES: low <= high.
  int64_t NextInRange(int64_t low, int64_t high) {
    const uint64_t span = static_cast<uint64_t>(high - low) + 1;
    return low + static_cast<int64_t>(Next() % span);
  }

 private:
  uint64_t state_;
};

}  // namespace stagecraft
