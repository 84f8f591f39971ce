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
  const double segment = ExpectedSegmentTime(tau, costs, mttf);
  WasteShares shares;
  shares.productive = tau / segment;
  shares.checkpoint = costs.blocking_s / segment;
  // Failures arrive at 1/M over the whole wall time (E/M per segment); each costs
  // M(e^(R/M) - 1) of restarting, restarts that fail included.
  shares.restart = std::expm1(costs.restart_s / mttf);
  shares.lost_work = 1.0 - shares.productive - shares.checkpoint - shares.restart;
  return shares;
}

}  // namespace stagecraft
