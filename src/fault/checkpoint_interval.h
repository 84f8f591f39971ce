// How often to checkpoint: the classic optimal-interval formulas and the exact expected-waste
// model of a job under Poisson failures. All times are seconds. Symbols as in Daly 2006 ("A
// higher order estimate of the optimum checkpoint interval for restart dumps", FGCS 22):
//   tau  compute time between checkpoints (the interval), delta the time a checkpoint blocks
//   training, R the restart (detection, rescheduling, initialization, load), M the job's mean
//   time to failure.
#pragma once

namespace stagecraft {

struct CheckpointCosts {
  double blocking_s = 0;  // delta: the part of a save that stops training
  double persist_s = 0;   // background write after the blocking part (async saves); 0 = sync
  double restart_s = 0;   // R: failure to training again (detection + init + load + warm-up)
};

// Young 1974 ("A first order approximation to the optimum checkpoint interval", CACM 17(9)):
// tau = sqrt(2 delta M).
double YoungInterval(double delta, double mttf);
// Daly 2006 §3, the first-order model with the restart in the cost: tau = sqrt(2 delta (M + R)).
double DalyFirstOrderInterval(double delta, double mttf, double restart);
// Daly 2006 §4, the higher-order perturbation solution: for delta < 2M,
// tau = sqrt(2 delta M) [1 + (1/3) sqrt(delta / 2M) + (1/9) (delta / 2M)] - delta; else M.
double DalyHigherOrderInterval(double delta, double mttf);

// Daly 2006's complete cost function (exponential failures, failures also during the checkpoint
// and the restart): the expected wall time to finish one interval of work and its checkpoint,
// M e^(R/M) (e^((tau + delta)/M) - 1).
double ExpectedSegmentTime(double tau, const CheckpointCosts& costs, double mttf);
// Effective training time ratio of the exact model: tau / ExpectedSegmentTime.
double ExactEttr(double tau, const CheckpointCosts& costs, double mttf);
// The interval that maximises ExactEttr: the root of e^((tau + delta)/M)(1 - tau/M) = 1 (the
// derivative of the cost function set to zero), by bisection; at least `min_interval` (an
// asynchronous save must finish before the next one starts: tau >= persist).
double ExactOptimalInterval(const CheckpointCosts& costs, double mttf, double min_interval);

// Where the wall time goes in the exact model, as shares of it (each in [0, 1], they sum to 1).
struct WasteShares {
  double productive = 0;  // tau / E
  double checkpoint = 0;  // delta / E: the blocking part of the saves that succeed
  double restart = 0;     // 1 - e^(-R/M): restarts, failed restarts included
  double lost_work = 0;   // e^(-R/M) (1 - x / (e^x - 1)), x = (tau + delta)/M: work redone
};
WasteShares ExactWasteShares(double tau, const CheckpointCosts& costs, double mttf);

}  // namespace stagecraft
