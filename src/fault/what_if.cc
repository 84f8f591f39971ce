#include "fault/what_if.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "core/units.h"
#include "fault/monte_carlo.h"
#include "report/svg_plot.h"

namespace stagecraft {

std::string FormatWhatIfTable(const GoodputResult& result) {
  std::ostringstream out;
  out << "  what if         the failure rate and the kind of save change (interval "
      << FormatFixed(result.interval_s, 1) << " s as the answer's)\n";
  out << "    rate_x  mttf_h  save   blocking_s  persist_s  optimum_s  ettr_optimum  "
         "ettr_interval\n";
  const CheckpointCosts& given = result.costs;
  const CheckpointCosts sync{given.blocking_s + given.persist_s, 0, given.restart_s};
  for (const double scale : {0.5, 1.0, 2.0}) {
    const double mttf = result.mttf_s / scale;
    for (const bool async : {true, false}) {
      if (!async && given.persist_s == 0) continue;  // already synchronous
      const CheckpointCosts& costs = async ? given : sync;
      const double optimum = ExactOptimalInterval(costs, mttf, costs.persist_s);
      const double at_interval = result.interval_s >= std::max(costs.blocking_s, costs.persist_s)
                                     ? ExactEttr(result.interval_s, costs, mttf)
                                     : 0.0;
      out << PadLeft(FormatFixed(scale, 1), 10) << PadLeft(FormatFixed(mttf / 3600.0, 3), 8) << "  "
          << PadRight(async && given.persist_s > 0 ? "async" : "sync", 5)
          << PadLeft(FormatFixed(costs.blocking_s, 3), 11)
          << PadLeft(FormatFixed(costs.persist_s, 3), 11) << PadLeft(FormatFixed(optimum, 1), 11)
          << PadLeft(FormatFixed(ExactEttr(optimum, costs, mttf), 4), 14)
          << PadLeft(at_interval > 0 ? FormatFixed(at_interval, 4) : std::string("-"), 15) << "\n";
    }
  }
  out << FormatSparesTable(result);
  return out.str();
}

std::string FormatSparesTable(const GoodputResult& result) {
  if (result.repair_s <= 0) {
    return "  what if spares  give --repair-time T (a failed node's repair) for the interval x "
           "spares table\n";
  }
  // Every cell is a Monte Carlo of the whole run; its runs are sized so the table stays well
  // under a second (about 2 x 10^6 simulated failures in all), at least 20 and at most 500.
  const std::vector<int64_t> pools = {0, 1, 2, 4, -1};
  const double shortest = std::max(result.costs.blocking_s, result.costs.persist_s);
  const std::vector<double> intervals = {std::max(shortest, result.optimal_s / 2), result.optimal_s,
                                         result.optimal_s * 2};
  const double cells = static_cast<double>(pools.size() * intervals.size());
  const int64_t runs = std::clamp<int64_t>(
      static_cast<int64_t>(2e6 / (cells * std::max(result.failures, 1.0))), 20, 500);
  std::ostringstream out;
  out << "  what if spares  ETTR by the Monte Carlo (" << runs << " runs a cell, seed 1; a failed "
      << "node back after " << FormatFixed(result.repair_s, 0) << " s)\n";
  out << "    spares";
  for (double tau : intervals) out << PadLeft("tau " + FormatFixed(tau, 1) + " s", 16);
  out << "\n";
  for (int64_t pool : pools) {
    out << PadLeft(pool < 0 ? "always" : std::to_string(pool), 10);
    for (double tau : intervals) {
      MonteCarloSpec simulation;
      simulation.runs = runs;
      simulation.seed = 1;
      simulation.work_s = result.days * 86400.0;
      simulation.interval_s = tau;
      simulation.costs = result.costs;
      simulation.mttf_s = result.mttf_s;
      simulation.weibull_shape = result.weibull_shape;
      simulation.spares = pool;
      simulation.repair_s = result.repair_s;
      simulation.correlated_share = result.correlated_share;
      simulation.correlated_nodes = result.correlated_nodes;
      out << PadLeft(FormatFixed(SimulateFailures(simulation).mean_ettr, 4), 16);
    }
    out << "\n";
  }
  return out.str();
}

namespace {

// The exact model's curve from the shortest allowed interval to 16 times the optimum, as the
// wasted share (1 - ETTR) or as the goodput (ETTR), and the optimum as a point of its own.
std::vector<Series> IntervalSeries(const GoodputResult& result, bool as_goodput) {
  const CheckpointCosts& costs = result.costs;
  const double shortest = std::max({costs.blocking_s, costs.persist_s, result.optimal_s / 16.0});
  const double longest = result.optimal_s * 16.0;
  const auto value = [&](double tau) {
    const double ettr = ExactEttr(tau, costs, result.mttf_s);
    return as_goodput ? ettr : 1.0 - ettr;
  };
  constexpr int kPoints = 41;
  Series curve{
      as_goodput ? "ETTR (exact model)" : "1 - ETTR (exact model)", {}, {{"kind", "curve"}}};
  for (int point = 0; point < kPoints; ++point) {
    const double tau = shortest * std::pow(longest / shortest, point / (kPoints - 1.0));
    curve.points.push_back(PlotPoint{tau, value(tau),
                                     "interval " + FormatFixed(tau, 1) + " s: ETTR " +
                                         FormatFixed(ExactEttr(tau, costs, result.mttf_s), 4)});
  }
  const std::string optimum_label = "optimum " + FormatFixed(result.optimal_s, 1) + " s";
  Series optimum{optimum_label,
                 {PlotPoint{result.optimal_s, value(result.optimal_s),
                            optimum_label + ": ETTR " +
                                FormatFixed(ExactEttr(result.optimal_s, costs, result.mttf_s), 4)}},
                 {{"kind", "optimum"}}};
  return {curve, optimum};
}

std::string PlotTitle(const char* what, const GoodputResult& result) {
  const std::string gpus = result.gpus > 0 ? std::to_string(result.gpus) + " GPUs, " : "";
  return std::string(what) + " vs checkpoint interval (" + gpus + "MTTF " +
         FormatFixed(result.mttf_s / 3600.0, 2) + " h)";
}

}  // namespace

std::string FormatIntervalPlot(const GoodputResult& result) {
  PlotOptions options{PlotTitle("Wasted share", result), "checkpoint interval, s (log2 scale)",
                      "1 - ETTR (log2 scale)", true, true};
  return FormatLinePlot(IntervalSeries(result, /*as_goodput=*/false), options);
}

std::string FormatGoodputPlot(const GoodputResult& result) {
  PlotOptions options{PlotTitle("Goodput (ETTR)", result), "checkpoint interval, s (log2 scale)",
                      "ETTR: share of wall time that trains", true, false};
  return FormatLinePlot(IntervalSeries(result, /*as_goodput=*/true), options);
}

}  // namespace stagecraft
