// SvgPlot: small line and scatter plots as standalone SVG text, for sweep reports (`stagecraft
// bench-schedules --svg-prefix`). Output is deterministic: fixed decimals, a fixed palette, no
// timestamps. Each series is one <g class="series" data-...> group and has one legend entry
// (<g class="legend-entry">), so tests and scripts can count them. Series differ by color (ten)
// and marker shape (four), so coinciding series stay distinguishable.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace stagecraft {

struct PlotPoint {
  double x = 0.0;
  double y = 0.0;
  std::string label;  // tooltip (<title>) of the marker; "" = none
  // Scatter plots: a point whose layout does not fit its device memory. Drawn crossed out
  // (class "over"), left off the Pareto front, and named in the legend.
  bool over = false;
  bool operator==(const PlotPoint&) const = default;
};

struct Series {
  std::string name;               // legend text
  std::vector<PlotPoint> points;  // a line plot joins them in this order
  // data-KEY="VALUE" attributes on the series group, e.g. {"schedule", "1f1b"}.
  std::vector<std::pair<std::string, std::string>> data;
  bool operator==(const Series&) const = default;
};

struct PlotOptions {
  std::string title;    // drawn above the plot; "" = none
  std::string x_label;  // x axis title
  std::string y_label;  // y axis title
  // Axes in powers of two (ticks at 2^k); points with a coordinate <= 0 on such an axis are not
  // drawn. Otherwise linear; linear axes always include 0.
  bool log2_x = false;
  bool log2_y = false;
  int width_px = 760;   // whole image, legend included
  int height_px = 480;  // whole image
  // The legend's text for the crossed-out points.
  std::string over_legend = "does not fit (OVER)";
  bool operator==(const PlotOptions&) const = default;
};

// One polyline with markers per series.
std::string FormatLinePlot(const std::vector<Series>& series, const PlotOptions& options);

// One marker per point, per series; the Pareto front of all points together (ParetoFront) drawn
// as a dashed black line (<g class="pareto-front">) with its own legend entry. Points marked
// `over` are crossed out in red (<g class="over">) and have a legend entry of their own.
std::string FormatScatterPlot(const std::vector<Series>& series, const PlotOptions& options);

// The points of all series that no other point beats on both x and y (lower is better on both),
// sorted by x ascending (so y descending). Of equal points the first is kept. Points marked
// `over` (they do not fit) are not candidates.
std::vector<PlotPoint> ParetoFront(const std::vector<Series>& series);

// Text for SVG/XML content and attribute values: & < > " ' escaped.
std::string XmlEscape(const std::string& text);

}  // namespace stagecraft
