#include "report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/units.h"

namespace stagecraft {
namespace {

// Tableau 10, a palette designed for categorical series (Tableau Software, 2016). After ten
// series the colors repeat with a dash pattern.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
constexpr const char* kDashes[] = {"", "6 3", "2 2", "8 3 2 3"};
constexpr const char* kFrontColor = "#222222";
constexpr const char* kFont = "DejaVu Sans, Helvetica, Arial, sans-serif";

// Space around the plot area, px: room for tick labels, axis titles, the title and the legend.
constexpr double kMarginLeft = 84.0;
constexpr double kMarginTop = 44.0;
constexpr double kMarginBottom = 60.0;
constexpr double kLegendWidth = 210.0;
constexpr int kTargetTicks = 5;

std::string Px(double value) { return FormatFixed(value, 2); }

// One axis: the shown range (exponents of two on a log2 axis) and its ticks.
struct Axis {
  bool log2 = false;
  double low = 0.0;
  double high = 1.0;
  std::vector<double> ticks;  // in axis units (exponents on a log2 axis)
  int decimals = 0;           // of linear tick labels

  double Fraction(double value) const { return TickFraction(log2 ? std::log2(value) : value); }
  double TickFraction(double tick) const { return (tick - low) / (high - low); }
  std::string Label(double tick) const {
    if (!log2) return FormatFixed(tick, decimals);
    const int exponent = static_cast<int>(std::lround(tick));
    return FormatFixed(std::ldexp(1.0, exponent), std::max(0, -exponent));
  }
};

// 1, 2 or 5 times a power of ten, about span / kTargetTicks.
double NiceStep(double span) {
  const double raw = span / kTargetTicks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double multiple : {1.0, 2.0, 5.0}) {
    if (raw <= multiple * magnitude * (1.0 + 1e-9)) return multiple * magnitude;
  }
  return 10.0 * magnitude;
}

Axis LinearAxis(double min_value, double max_value) {
  Axis axis;
  double low = std::min(0.0, min_value);
  double high = std::max(0.0, max_value);
  if (high - low <= 0.0) high = low + 1.0;
  const double step = NiceStep(high - low);
  const double first = std::floor(low / step + 1e-9);
  const double last = std::ceil(high / step - 1e-9);
  axis.low = first * step;
  axis.high = last * step;
  for (double index = first; index <= last; index += 1.0) axis.ticks.push_back(index * step);
  axis.decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  return axis;
}

Axis Log2Axis(double min_value, double max_value) {
  Axis axis;
  axis.log2 = true;
  if (!(min_value > 0.0) || !(max_value > 0.0)) max_value = min_value = 1.0;
  axis.low = std::floor(std::log2(min_value) + 1e-9);
  axis.high = std::ceil(std::log2(max_value) - 1e-9);
  if (axis.high <= axis.low) axis.high = axis.low + 1.0;
  const double step = std::ceil((axis.high - axis.low) / 10.0);
  for (double exponent = axis.low; exponent <= axis.high; exponent += step) {
    axis.ticks.push_back(exponent);
  }
  return axis;
}

bool Drawable(const PlotPoint& point, const PlotOptions& options) {
  return std::isfinite(point.x) && std::isfinite(point.y) && (!options.log2_x || point.x > 0.0) &&
         (!options.log2_y || point.y > 0.0);
}

// The plot area in px and both axes.
struct Frame {
  double left = 0.0;
  double top = 0.0;
  double right = 0.0;
  double bottom = 0.0;
  Axis x;
  Axis y;

  double X(double value) const { return left + x.Fraction(value) * (right - left); }
  double Y(double value) const { return bottom - y.Fraction(value) * (bottom - top); }
};

Frame MakeFrame(const std::vector<Series>& series, const PlotOptions& options) {
  double min_x = std::numeric_limits<double>::infinity();
  double max_x = -min_x;
  double min_y = min_x;
  double max_y = -min_x;
  for (const Series& one : series) {
    for (const PlotPoint& point : one.points) {
      if (!Drawable(point, options)) continue;
      min_x = std::min(min_x, point.x);
      max_x = std::max(max_x, point.x);
      min_y = std::min(min_y, point.y);
      max_y = std::max(max_y, point.y);
    }
  }
  if (min_x > max_x) min_x = max_x = min_y = max_y = 0.0;  // nothing to draw
  Frame frame;
  frame.left = kMarginLeft;
  frame.top = kMarginTop;
  frame.right = std::max(frame.left + 1.0, options.width_px - kLegendWidth);
  frame.bottom = std::max(frame.top + 1.0, options.height_px - kMarginBottom);
  frame.x = options.log2_x ? Log2Axis(min_x, max_x) : LinearAxis(min_x, max_x);
  frame.y = options.log2_y ? Log2Axis(min_y, max_y) : LinearAxis(min_y, max_y);
  return frame;
}

// The width of `text` at `font_px` in a sans-serif font, px: an estimate (bold DejaVu Sans
// averages about 0.62 em per character over mixed text), so the title can be fitted without
// measuring glyphs.
double TextWidthPx(const std::string& text, double font_px) {
  return static_cast<double>(text.size()) * 0.62 * font_px;
}

// The title, centered: at 16 px when it fits the width, else shrunk down to 12 px, else wrapped
// at the space nearest its middle into two lines of 13 px (the top margin holds two).
std::string Title(const PlotOptions& options) {
  const double room = options.width_px - 20.0;
  const std::string open = "<text class=\"title\" x=\"" + Px(options.width_px / 2.0) + "\" y=\"";
  const auto line = [&](const std::string& text, double y, double font_px) {
    return open + Px(y) + "\" text-anchor=\"middle\" font-size=\"" + Px(font_px) +
           "\" font-weight=\"bold\">" + XmlEscape(text) + "</text>\n";
  };
  const std::string& title = options.title;
  for (double font_px = 16.0; font_px >= 12.0; font_px -= 1.0) {
    if (TextWidthPx(title, font_px) <= room) return line(title, 26.0, font_px);
  }
  const size_t middle = title.size() / 2;
  const size_t before = title.rfind(' ', middle);
  const size_t after = title.find(' ', middle);
  size_t cut = before;
  if (cut == std::string::npos || (after != std::string::npos && after - middle < middle - cut)) {
    cut = after;
  }
  if (cut == std::string::npos) return line(title, 26.0, 12.0);  // one word: as small as allowed
  return line(title.substr(0, cut), 18.0, 13.0) + line(title.substr(cut + 1), 35.0, 13.0);
}

std::string Header(const PlotOptions& options) {
  const std::string width = std::to_string(options.width_px);
  const std::string height = std::to_string(options.height_px);
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + width + "\" height=\"" +
                    height + "\" viewBox=\"0 0 " + width + " " + height + "\" font-family=\"" +
                    kFont + "\" font-size=\"12\" fill=\"#333333\">\n";
  svg += "<rect width=\"" + width + "\" height=\"" + height + "\" fill=\"#ffffff\"/>\n";
  if (!options.title.empty()) svg += Title(options);
  return svg;
}

std::string XTicks(const Frame& frame) {
  std::string svg;
  for (double tick : frame.x.ticks) {
    const double x = frame.left + frame.x.TickFraction(tick) * (frame.right - frame.left);
    svg += "<line x1=\"" + Px(x) + "\" y1=\"" + Px(frame.top) + "\" x2=\"" + Px(x) + "\" y2=\"" +
           Px(frame.bottom) + "\" stroke=\"#e5e5e5\"/>\n";
    svg += "<line x1=\"" + Px(x) + "\" y1=\"" + Px(frame.bottom) + "\" x2=\"" + Px(x) + "\" y2=\"" +
           Px(frame.bottom + 5.0) + "\" stroke=\"#333333\"/>\n";
    svg += "<text class=\"tick\" x=\"" + Px(x) + "\" y=\"" + Px(frame.bottom + 19.0) +
           "\" text-anchor=\"middle\">" + frame.x.Label(tick) + "</text>\n";
  }
  return svg;
}

std::string YTicks(const Frame& frame) {
  std::string svg;
  for (double tick : frame.y.ticks) {
    const double y = frame.bottom - frame.y.TickFraction(tick) * (frame.bottom - frame.top);
    svg += "<line x1=\"" + Px(frame.left) + "\" y1=\"" + Px(y) + "\" x2=\"" + Px(frame.right) +
           "\" y2=\"" + Px(y) + "\" stroke=\"#e5e5e5\"/>\n";
    svg += "<line x1=\"" + Px(frame.left - 5.0) + "\" y1=\"" + Px(y) + "\" x2=\"" + Px(frame.left) +
           "\" y2=\"" + Px(y) + "\" stroke=\"#333333\"/>\n";
    svg += "<text class=\"tick\" x=\"" + Px(frame.left - 8.0) + "\" y=\"" + Px(y + 4.0) +
           "\" text-anchor=\"end\">" + frame.y.Label(tick) + "</text>\n";
  }
  return svg;
}

// Grid, axis lines, ticks with labels and both axis titles.
std::string Axes(const Frame& frame, const PlotOptions& options) {
  std::string svg = "<g class=\"axes\">\n" + XTicks(frame) + YTicks(frame);
  svg += "<polyline points=\"" + Px(frame.left) + "," + Px(frame.top) + " " + Px(frame.left) + "," +
         Px(frame.bottom) + " " + Px(frame.right) + "," + Px(frame.bottom) +
         "\" fill=\"none\" stroke=\"#333333\"/>\n";
  const double middle_x = (frame.left + frame.right) / 2.0;
  const double middle_y = (frame.top + frame.bottom) / 2.0;
  svg += "<text class=\"x-label\" x=\"" + Px(middle_x) + "\" y=\"" + Px(frame.bottom + 42.0) +
         "\" text-anchor=\"middle\" font-size=\"13\">" + XmlEscape(options.x_label) + "</text>\n";
  const std::string label_x = Px(frame.left - 58.0);
  svg += "<text class=\"y-label\" x=\"" + label_x + "\" y=\"" + Px(middle_y) +
         "\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 " + label_x + " " +
         Px(middle_y) + ")\">" + XmlEscape(options.y_label) + "</text>\n";
  return svg + "</g>\n";
}

std::string Color(size_t index) { return kPalette[index % kPaletteSize]; }

std::string DashAttribute(size_t index) {
  const char* dash = kDashes[(index / kPaletteSize) % (sizeof(kDashes) / sizeof(kDashes[0]))];
  return *dash == '\0' ? "" : std::string(" stroke-dasharray=\"") + dash + "\"";
}

enum class Shape { kCircle, kSquare, kDiamond, kTriangle };

// The marker shape of series `index`: series whose lines coincide still show apart.
Shape ShapeOf(size_t index) {
  constexpr Shape kShapes[] = {Shape::kCircle, Shape::kSquare, Shape::kDiamond, Shape::kTriangle};
  return kShapes[index % 4];
}

// A polygon of (dx, dy) offsets from (x, y), each scaled by `radius`.
std::string Path(double x, double y, double radius,
                 const std::vector<std::pair<double, double>>& corners) {
  std::string path;
  for (const auto& [dx, dy] : corners) {
    path += (path.empty() ? "M" : " L") + Px(x + dx * radius) + "," + Px(y + dy * radius);
  }
  return path + " Z";
}

std::string Marker(Shape shape, double x, double y, double radius, const std::string& attributes,
                   const std::string& label) {
  std::string svg;
  switch (shape) {
    case Shape::kCircle:
      svg = "<circle cx=\"" + Px(x) + "\" cy=\"" + Px(y) + "\" r=\"" + Px(radius) + "\"";
      break;
    case Shape::kSquare:
      svg = "<path d=\"" + Path(x, y, radius * 0.85, {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}}) + "\"";
      break;
    case Shape::kDiamond:
      svg = "<path d=\"" + Path(x, y, radius * 1.2, {{0, -1}, {1, 0}, {0, 1}, {-1, 0}}) + "\"";
      break;
    case Shape::kTriangle:
      svg = "<path d=\"" + Path(x, y, radius * 1.2, {{0, -1}, {0.95, 0.75}, {-0.95, 0.75}}) + "\"";
      break;
  }
  const std::string tag = shape == Shape::kCircle ? "circle" : "path";
  svg += " " + attributes;
  if (label.empty()) return svg + "/>\n";
  return svg + "><title>" + XmlEscape(label) + "</title></" + tag + ">\n";
}

constexpr const char* kOverColor = "#d62728";

// The red cross over a point that does not fit.
std::string OverCross(double x, double y) {
  const double r = 6.0;
  return "<path class=\"over\" d=\"M" + Px(x - r) + "," + Px(y - r) + " L" + Px(x + r) + "," +
         Px(y + r) + " M" + Px(x - r) + "," + Px(y + r) + " L" + Px(x + r) + "," + Px(y - r) +
         "\" stroke=\"" + kOverColor + "\" stroke-width=\"2\"/>\n";
}

std::string SeriesOpen(const Series& series) {
  std::string svg = "<g class=\"series\"";
  for (const auto& [key, value] : series.data) {
    svg += " data-" + XmlEscape(key) + "=\"" + XmlEscape(value) + "\"";
  }
  return svg + ">\n";
}

// How a series is drawn beyond its color and shape. A series whose drawn points all coincide
// with an earlier one's (1f1b and gpipe have the same bubble) would hide it: it is drawn dashed,
// its dashes offset from those of other copies so every color shows along the line, with
// smaller markers so the earlier marker rings it, and its legend entry says "= that series".
struct SeriesStyle {
  std::string dash;  // stroke-dasharray and stroke-dashoffset attributes; "" = the default
  double marker_scale = 1.0;
  std::string same_as;  // the name of the earlier series it coincides with; "" = none
};

std::vector<SeriesStyle> StylesOf(const Frame& frame, const std::vector<Series>& series,
                                  const PlotOptions& options) {
  std::vector<std::string> drawn;  // [series] its points in px, as written
  for (const Series& one : series) {
    std::string points;
    for (const PlotPoint& point : one.points) {
      if (Drawable(point, options))
        points += Px(frame.X(point.x)) + "," + Px(frame.Y(point.y)) + " ";
    }
    drawn.push_back(points);
  }
  std::vector<SeriesStyle> styles(series.size());
  std::vector<size_t> original(series.size());
  std::vector<int32_t> copies(series.size(), 0);  // [original] coinciding series after it
  for (size_t index = 0; index < series.size(); ++index) {
    original[index] = index;
    for (size_t earlier = 0; earlier < index && !drawn[index].empty(); ++earlier) {
      if (original[earlier] == earlier && drawn[earlier] == drawn[index]) {
        original[index] = earlier;
        ++copies[earlier];
        break;
      }
    }
  }
  std::vector<int32_t> seen(series.size(), 0);
  for (size_t index = 0; index < series.size(); ++index) {
    const size_t first = original[index];
    if (first == index) continue;
    const int32_t rank = ++seen[first];  // 1 for the first copy
    const int32_t period = 5 * (copies[first] + 1);
    styles[index].dash = " stroke-dasharray=\"5 " + std::to_string(period - 5) +
                         "\" stroke-dashoffset=\"" + std::to_string(-5 * rank) + "\"";
    styles[index].marker_scale = std::max(0.35, 1.0 - 0.25 * rank);
    styles[index].same_as = series[first].name;
  }
  return styles;
}

// A series: its polyline (line plots) and one marker per drawable point.
std::string SeriesGroup(const Frame& frame, const Series& series, size_t index,
                        const SeriesStyle& style, bool line, const PlotOptions& options) {
  std::string svg = SeriesOpen(series);
  std::string points;
  for (const PlotPoint& point : series.points) {
    if (!Drawable(point, options)) continue;
    points += (points.empty() ? "" : " ") + Px(frame.X(point.x)) + "," + Px(frame.Y(point.y));
  }
  if (line && !points.empty()) {
    svg += "<polyline points=\"" + points + "\" fill=\"none\" stroke=\"" + Color(index) +
           "\" stroke-width=\"2\"" + (style.dash.empty() ? DashAttribute(index) : style.dash) +
           "/>\n";
  }
  const std::string marker_style =
      line ? "fill=\"" + Color(index) + "\""
           : "fill=\"" + Color(index) + "\" fill-opacity=\"0.85\" stroke=\"#ffffff\"";
  for (const PlotPoint& point : series.points) {
    if (!Drawable(point, options)) continue;
    svg += Marker(ShapeOf(index), frame.X(point.x), frame.Y(point.y),
                  (line ? 3.5 : 5.0) * style.marker_scale, marker_style, point.label);
    if (point.over) svg += OverCross(frame.X(point.x), frame.Y(point.y));
  }
  return svg + "</g>\n";
}

// One entry per series, then (scatter plots) the Pareto front's.
std::string Legend(const Frame& frame, const std::vector<Series>& series,
                   const std::vector<SeriesStyle>& styles, bool line, bool pareto, bool any_over,
                   const std::string& over_text) {
  std::string svg = "<g class=\"legend\">\n";
  const double x = frame.right + 20.0;
  double y = frame.top + 6.0;
  for (size_t index = 0; index < series.size(); ++index, y += 20.0) {
    svg += "<g class=\"legend-entry\">\n";
    if (line) {
      svg += "<line x1=\"" + Px(x) + "\" y1=\"" + Px(y) + "\" x2=\"" + Px(x + 24.0) + "\" y2=\"" +
             Px(y) + "\" stroke=\"" + Color(index) + "\" stroke-width=\"2\"" +
             (styles[index].dash.empty() ? DashAttribute(index) : styles[index].dash) + "/>\n";
    }
    svg +=
        Marker(ShapeOf(index), x + 12.0, y, line ? 3.5 : 5.0, "fill=\"" + Color(index) + "\"", "");
    const std::string same = styles[index].same_as.empty() ? "" : " = " + styles[index].same_as;
    const std::string text = series[index].name + same;
    // Shrunk (to 8 px at least) when the 12 px text would run past the image's right edge.
    const double room = kLegendWidth - 20.0 - 32.0 - 4.0;
    const double font_px = std::max(8.0, std::min(12.0, room / (0.6 * text.size())));
    svg += "<text x=\"" + Px(x + 32.0) + "\" y=\"" + Px(y + 4.0) + "\"" +
           (font_px < 12.0 ? " font-size=\"" + Px(font_px) + "\"" : std::string()) + ">" +
           XmlEscape(text) + "</text>\n</g>\n";
  }
  if (pareto) {
    svg += "<g class=\"legend-pareto\">\n<line x1=\"" + Px(x) + "\" y1=\"" + Px(y) + "\" x2=\"" +
           Px(x + 24.0) + "\" y2=\"" + Px(y) + "\" stroke=\"" + kFrontColor +
           "\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>\n<text x=\"" + Px(x + 32.0) +
           "\" y=\"" + Px(y + 4.0) + "\">Pareto front</text>\n</g>\n";
    y += 20.0;
  }
  if (any_over) {
    svg += "<g class=\"legend-over\">\n" + OverCross(x + 12.0, y) + "<text x=\"" + Px(x + 32.0) +
           "\" y=\"" + Px(y + 4.0) + "\">" + XmlEscape(over_text) + "</text>\n</g>\n";
  }
  return svg + "</g>\n";
}

std::string FrontGroup(const Frame& frame, const std::vector<PlotPoint>& front) {
  std::string svg = "<g class=\"pareto-front\">\n";
  std::string points;
  for (const PlotPoint& point : front) {
    points += (points.empty() ? "" : " ") + Px(frame.X(point.x)) + "," + Px(frame.Y(point.y));
  }
  if (!points.empty()) {
    svg += "<polyline points=\"" + points + "\" fill=\"none\" stroke=\"" + kFrontColor +
           "\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>\n";
  }
  for (const PlotPoint& point : front) {
    svg += Marker(Shape::kCircle, frame.X(point.x), frame.Y(point.y), 8.0,
                  std::string("fill=\"none\" stroke=\"") + kFrontColor + "\"", point.label);
  }
  return svg + "</g>\n";
}

std::string Plot(const std::vector<Series>& series, const PlotOptions& options, bool line) {
  const Frame frame = MakeFrame(series, options);
  std::string svg = Header(options) + Axes(frame, options);
  const std::vector<SeriesStyle> styles = StylesOf(frame, series, options);
  for (size_t index = 0; index < series.size(); ++index) {
    svg += SeriesGroup(frame, series[index], index, styles[index], line, options);
  }
  if (!line) {
    std::vector<Series> drawable = series;
    for (Series& one : drawable) {
      std::erase_if(one.points,
                    [&options](const PlotPoint& point) { return !Drawable(point, options); });
    }
    svg += FrontGroup(frame, ParetoFront(drawable));
  }
  const bool any_over = std::any_of(series.begin(), series.end(), [](const Series& one) {
    return std::any_of(one.points.begin(), one.points.end(),
                       [](const PlotPoint& point) { return point.over; });
  });
  return svg + Legend(frame, series, styles, line, !line, any_over, options.over_legend) +
         "</svg>\n";
}

}  // namespace

std::string FormatLinePlot(const std::vector<Series>& series, const PlotOptions& options) {
  return Plot(series, options, true);
}

std::string FormatScatterPlot(const std::vector<Series>& series, const PlotOptions& options) {
  return Plot(series, options, false);
}

std::vector<PlotPoint> ParetoFront(const std::vector<Series>& series) {
  std::vector<PlotPoint> points;
  for (const Series& one : series) {
    for (const PlotPoint& point : one.points) {
      if (!point.over) points.push_back(point);
    }
  }
  std::stable_sort(points.begin(), points.end(), [](const PlotPoint& a, const PlotPoint& b) {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
  });
  std::vector<PlotPoint> front;
  for (const PlotPoint& point : points) {
    if (front.empty() || point.y < front.back().y) front.push_back(point);
  }
  return front;
}

std::string XmlEscape(const std::string& text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&apos;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

}  // namespace stagecraft
