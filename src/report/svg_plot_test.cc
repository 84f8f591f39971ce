// SVG plots: parsed minimally (start and end tags, tag balance), series and legend entries
// counted, axis labels found, output deterministic; the Pareto front on small hand-made sets.
#include "report/svg_plot.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stagecraft {
namespace {

// Checks that every start tag has its end tag, properly nested. Returns "" or what went wrong.
// Minimal on purpose: no comments, CDATA or '>' inside attribute values (the writer emits none).
std::string TagBalanceError(const std::string& svg) {
  std::vector<std::string> open;
  size_t at = 0;
  while ((at = svg.find('<', at)) != std::string::npos) {
    const size_t end = svg.find('>', at);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(at);
    const std::string tag = svg.substr(at + 1, end - at - 1);
    at = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag.front() == '?' || tag.front() == '!' || tag.back() == '/') continue;
    const bool closing = tag.front() == '/';
    const std::string body = closing ? tag.substr(1) : tag;
    const std::string name = body.substr(0, body.find_first_of(" \n\t"));
    if (!closing) {
      open.push_back(name);
    } else if (open.empty() || open.back() != name) {
      return "</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
    } else {
      open.pop_back();
    }
  }
  return open.empty() ? "" : "<" + open.back() + "> never closed";
}

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

void ExpectWellFormed(const std::string& svg) {
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  ASSERT_GE(svg.size(), 7u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(TagBalanceError(svg), "");
}

std::vector<Series> BubbleSeries() {
  return {
      {"gpipe", {{8, 0.27, "m=8"}, {16, 0.16, ""}, {32, 0.09, ""}}, {{"schedule", "gpipe"}}},
      {"1f1b", {{8, 0.27, ""}, {16, 0.16, ""}, {32, 0.09, ""}}, {{"schedule", "1f1b"}}},
      {"zb-h1 <&>", {{8, 0.1, ""}, {16, 0.05, ""}, {32, 0.02, ""}}, {{"schedule", "zb-h1"}}},
  };
}

TEST(TagBalanceTest, FindsUnbalancedTags) {
  EXPECT_EQ(TagBalanceError("<svg><g><line/></g></svg>"), "");
  EXPECT_NE(TagBalanceError("<svg><g></svg>"), "");
  EXPECT_NE(TagBalanceError("<svg><g></g>"), "");
  EXPECT_NE(TagBalanceError("<svg></g></svg>"), "");
}

TEST(SvgPlotTest, LinePlotIsWellFormedWithOneGroupAndLegendEntryPerSeries) {
  PlotOptions options{"Bubble vs m", "microbatches m", "bubble fraction", true};
  const std::string svg = FormatLinePlot(BubbleSeries(), options);
  ExpectWellFormed(svg);
  EXPECT_EQ(Count(svg, "<g class=\"series\""), 3u);
  EXPECT_EQ(Count(svg, "data-schedule=\"gpipe\""), 1u);
  EXPECT_EQ(Count(svg, "data-schedule=\"zb-h1\""), 1u);
  EXPECT_EQ(Count(svg, "<g class=\"legend-entry\">"), 3u);
  EXPECT_EQ(Count(svg, "<polyline"), 4u);  // three series and the axis lines
  EXPECT_NE(svg.find(">Bubble vs m</text>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"x-label\""), std::string::npos);
  EXPECT_NE(svg.find(">microbatches m</text>"), std::string::npos);
  EXPECT_NE(svg.find(">bubble fraction</text>"), std::string::npos);
  EXPECT_NE(svg.find(">zb-h1 &lt;&amp;&gt;</text>"), std::string::npos);  // escaped name
  EXPECT_NE(svg.find("<title>m=8</title>"), std::string::npos);
}

TEST(SvgPlotTest, Log2AxisTicksArePowersOfTwo) {
  PlotOptions options{"", "m", "bubble", true};
  const std::string svg = FormatLinePlot(BubbleSeries(), options);
  for (const char* tick : {">8</text>", ">16</text>", ">32</text>"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
  EXPECT_EQ(svg.find(">24</text>"), std::string::npos);
  EXPECT_EQ(svg.find("class=\"title\""), std::string::npos);  // no title asked for
}

TEST(SvgPlotTest, LinearTicksUseFixedDecimals) {
  PlotOptions options{"t", "x", "y", false};
  const std::string svg = FormatLinePlot(BubbleSeries(), options);
  EXPECT_NE(svg.find(">0.3</text>"), std::string::npos);  // y: step 0.1 from 0 up to 0.3
  EXPECT_NE(svg.find(">0.0</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">0.30</text>"), std::string::npos);
  EXPECT_NE(svg.find(">40</text>"), std::string::npos);  // x: step 5 from 0 to 40
}

TEST(SvgPlotTest, OutputIsDeterministic) {
  PlotOptions options{"t", "x", "y", true};
  EXPECT_EQ(FormatLinePlot(BubbleSeries(), options), FormatLinePlot(BubbleSeries(), options));
  EXPECT_EQ(FormatScatterPlot(BubbleSeries(), options), FormatScatterPlot(BubbleSeries(), options));
}

TEST(SvgPlotTest, ScatterPlotDrawsTheParetoFront) {
  PlotOptions options{"Pareto", "bubble fraction", "peak activations", false};
  const std::vector<Series> series = {
      {"a", {{0.1, 8, ""}, {0.3, 4, ""}}, {{"schedule", "a"}}},
      {"b", {{0.2, 6, ""}, {0.2, 9, ""}}, {{"schedule", "b"}}},
  };
  const std::string svg = FormatScatterPlot(series, options);
  ExpectWellFormed(svg);
  EXPECT_EQ(Count(svg, "<g class=\"series\""), 2u);
  EXPECT_EQ(Count(svg, "<g class=\"legend-entry\">"), 2u);
  EXPECT_EQ(Count(svg, "<g class=\"pareto-front\">"), 1u);
  EXPECT_EQ(Count(svg, "<g class=\"legend-pareto\">"), 1u);
  EXPECT_NE(svg.find(">peak activations</text>"), std::string::npos);
}

TEST(SvgPlotTest, Log2YAxisTicksArePowersOfTwoAndSkipsNonPositivePoints) {
  PlotOptions options{"", "bubble", "peak", false, true};
  const std::vector<Series> series = {
      {"a", {{0.1, 8, ""}, {0.2, 40, "big"}, {0.3, 0, "zero"}}, {}}};
  const std::string svg = FormatScatterPlot(series, options);
  ExpectWellFormed(svg);
  for (const char* tick : {">8</text>", ">16</text>", ">32</text>", ">64</text>"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
  EXPECT_NE(svg.find("<title>big</title>"), std::string::npos);
  EXPECT_EQ(svg.find("<title>zero</title>"), std::string::npos);  // 0 has no place on a log axis
}

TEST(SvgPlotTest, SeriesDifferInMarkerShape) {
  PlotOptions options{"t", "x", "y", true};
  const std::string svg = FormatLinePlot(BubbleSeries(), options);
  EXPECT_GT(Count(svg, "<circle"), 0u);  // series 0
  EXPECT_GT(Count(svg, "<path"), 0u);    // series 1 and 2: square, diamond
}

TEST(SvgPlotTest, EmptyPlotIsStillWellFormed) {
  PlotOptions options{"nothing", "x", "y", true};
  ExpectWellFormed(FormatLinePlot({}, options));
  ExpectWellFormed(FormatScatterPlot({{"empty", {}, {}}}, options));
}

TEST(ParetoFrontTest, KeepsPointsNoOtherBeatsOnBothAxes) {
  const std::vector<Series> series = {
      {"a", {{0.1, 8, "a1"}, {0.3, 4, "a2"}, {0.4, 4, "a3"}}, {}},
      {"b", {{0.2, 6, "b1"}, {0.2, 9, "b2"}, {0.1, 8, "b3"}, {0.5, 1, "b4"}}, {}},
  };
  const std::vector<PlotPoint> front = ParetoFront(series);
  ASSERT_EQ(front.size(), 4u);
  EXPECT_EQ(front[0].label, "a1");  // equal to b3: the first is kept
  EXPECT_EQ(front[1].label, "b1");
  EXPECT_EQ(front[2].label, "a2");
  EXPECT_EQ(front[3].label, "b4");
}

// A point that does not fit its device is no choice: crossed out, named in the legend, and left
// off the front even where it would beat every other point.
TEST(ParetoFrontTest, PointsThatDoNotFitAreNotCandidates) {
  PlotPoint over{0.05, 2, "over"};
  over.over = true;
  const std::vector<Series> series = {{"a", {{0.1, 8, "a1"}, over, {0.3, 4, "a2"}}, {}}};
  const std::vector<PlotPoint> front = ParetoFront(series);
  ASSERT_EQ(front.size(), 2u);
  EXPECT_EQ(front[0].label, "a1");
  EXPECT_EQ(front[1].label, "a2");
  const std::string svg = FormatScatterPlot(series, PlotOptions{"t", "x", "y", false});
  ExpectWellFormed(svg);
  EXPECT_EQ(Count(svg, "class=\"over\""), 2u);  // the point's cross and the legend's
  EXPECT_EQ(Count(svg, "<g class=\"legend-over\">"), 1u);
  const std::string fits = FormatScatterPlot({{"a", {{0.1, 8, "a1"}}, {}}}, PlotOptions{});
  EXPECT_EQ(Count(fits, "legend-over"), 0u);
}

TEST(XmlEscapeTest, EscapesMarkup) {
  EXPECT_EQ(XmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
}

// Issue 13 item 8: a title longer than the image shrinks (still one line) and, past 12 px,
// wraps into two lines at a space; a short title stays at 16 px.
TEST(SvgPlotTest, LongTitlesShrinkOrWrapToFit) {
  PlotOptions options;
  options.title = "Bubble";
  EXPECT_EQ(Count(FormatLinePlot(BubbleSeries(), options), "font-size=\"16.00\" font-weight"), 1u);
  options.title = std::string(90, 'x') + " tail";  // 95 characters: 16 px would need 942 px
  std::string svg = FormatLinePlot(BubbleSeries(), options);
  ExpectWellFormed(svg);
  EXPECT_EQ(Count(svg, "class=\"title\""), 1u);
  EXPECT_EQ(Count(svg, "font-size=\"12.00\" font-weight"), 1u)
      << "shrunk to 12 px: 95 x 0.62 x 12 = 707 <= 740";
  options.title =
      "Bubble fraction vs microbatches (bundled example 'deepseek-v4.1-flash.yaml', "
      "pp 8, and a little more)";
  svg = FormatLinePlot(BubbleSeries(), options);
  ExpectWellFormed(svg);
  EXPECT_EQ(Count(svg, "class=\"title\""), 2u) << "wrapped into two lines";
  EXPECT_NE(svg.find(">Bubble fraction vs microbatches (bundled example</text>"), std::string::npos)
      << svg.substr(0, 800);
}

// Issue 13 item 8: 1f1b coincides with gpipe in BubbleSeries; it is drawn dashed over it with
// smaller markers and its legend names the series it hides; zb-h1 (distinct) is unchanged.
TEST(SvgPlotTest, CoincidingSeriesAreDashedAndNamed) {
  const std::string svg = FormatLinePlot(BubbleSeries(), PlotOptions{});
  ExpectWellFormed(svg);
  EXPECT_EQ(Count(svg, "stroke-dasharray=\"5 5\" stroke-dashoffset=\"-5\""), 2u)
      << "the 1f1b polyline and its legend line";
  EXPECT_NE(svg.find(">1f1b = gpipe</text>"), std::string::npos);
  EXPECT_NE(svg.find(">zb-h1 &lt;&amp;&gt;</text>"), std::string::npos);
  EXPECT_EQ(Count(svg, "<g class=\"legend-entry\">"), 3u);
}

}  // namespace
}  // namespace stagecraft
