// What-if views of a goodput answer: the table of the interval against the failure rate and the
// kind of save, and the SVG plot of the wasted share against the interval with the optimum
// marked (`stagecraft goodput --what-if`, `--plot FILE`).
#pragma once

#include <string>

#include "fault/goodput.h"

namespace stagecraft {

// Rows: the failure rate at 1/2, 1 and 2 times the given one x the save as given and
// synchronous (the whole save blocking: blocking + persist); per row the optimal interval, the
// ETTR there and the ETTR at the answer's interval.
std::string FormatWhatIfTable(const GoodputResult& result);

// The interval (half, at and twice the optimum) x the spare nodes (none, 1, 2, 4, always one):
// the mean ETTR of a Monte Carlo per cell with the answer's failures, costs and repair time; a
// line asking for --repair-time when there is none (spares then change nothing). Part of
// FormatWhatIfTable.
std::string FormatSparesTable(const GoodputResult& result);

// The wasted share of the wall time (1 - ETTR, log2 axis) against the interval (log2 axis) from
// the shortest allowed interval to 16 times the optimum, with the optimum as a marked point.
std::string FormatIntervalPlot(const GoodputResult& result);

// The goodput (ETTR, linear axis) against the interval (log2 axis), with the optimum marked.
std::string FormatGoodputPlot(const GoodputResult& result);

}  // namespace stagecraft
