#include "fault/checkpoint_interval.h"

#include <algorithm>
#include <cmath>

namespace stagecraft {

double YoungInterval(double delta, double mttf) { return std::sqrt(2.0 * delta * mttf); }

double DalyFirstOrderInterval(double delta, double mttf, double restart) {
  return std::sqrt(2.0 * delta * (mttf + restart));
}

double DalyHigherOrderInterval(double delta, double mttf) {
  if (delta >= 2.0 * mttf) return mttf;
  const double ratio = delta / (2.0 * mttf);
  return std::sqrt(2.0 * delta * mttf) * (1.0 + std::sqrt(ratio) / 3.0 + ratio / 9.0) - delta;
}

double ExpectedSegmentTime(double tau, const CheckpointCosts& costs, double mttf) {
  return mttf * std::exp(costs.restart_s / mttf) * std::expm1((tau + costs.blocking_s) / mttf);
}

double ExactEttr(double tau, const CheckpointCosts& costs, double mttf) {
  return tau / ExpectedSegmentTime(tau, costs, mttf);
}

double ExactOptimalInterval(const CheckpointCosts& costs, double mttf, double min_interval) {
  // g(tau) = e^((tau + delta)/M)(1 - tau/M) - 1 falls strictly for tau > 0, g(0) >= 0 and
  // g(M) = -1, so the root lies in [0, M].
  const auto slope = [&](double tau) {
    return std::exp((tau + costs.blocking_s) / mttf) * (1.0 - tau / mttf) - 1.0;
  };
  double low = 0.0;
  double high = mttf;
  for (int step = 0; step < 200 && high - low > 1e-9 * mttf; ++step) {
    const double middle = 0.5 * (low + high);
    (slope(middle) > 0.0 ? low : high) = middle;
  }
  return std::max(0.5 * (low + high), min_interval);
}

WasteShares ExactWasteShares(double tau, const CheckpointCosts& costs, double mttf) {
  // Per segment, e^((tau + delta)/M) - 1 failures hit the work or its save, each followed by a
  // restart phase of M (e^(R/M) - 1) (failed restarts included), and the work phase itself lasts
  // M (e^((tau + delta)/M) - 1). Of E = M e^(R/M) (e^((tau + delta)/M) - 1) the restarts take
  // 1 - e^(-R/M) and the work phase e^(-R/M), of which tau + delta is kept (a share
  // x / (e^x - 1), x = (tau + delta)/M) and the rest redone. Each share lies in [0, 1].
  const double segment = ExpectedSegmentTime(tau, costs, mttf);
  const double x = (tau + costs.blocking_s) / mttf;
  const double working = std::exp(-costs.restart_s / mttf);
  const double kept = x > 0 ? std::min(1.0, x / std::expm1(x)) : 1.0;
  WasteShares shares;
  shares.productive = tau / segment;
  shares.checkpoint = costs.blocking_s / segment;
  shares.restart = -std::expm1(-costs.restart_s / mttf);
  shares.lost_work = working * (1.0 - kept);
  return shares;
}

}  // namespace stagecraft
