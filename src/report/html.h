// HtmlPage: one self-contained HTML report (`--report FILE.html` on simulate, plan, serve and
// goodput). Everything is inline — CSS, SVG, the data and the script that draws the timeline —
// so the file opens offline and fetches nothing. Output is deterministic: fixed decimals, sorted
// inputs, no timestamps. Each section is a <section id="..."> with an <h2>, so tests (headless
// Chromium, tests/html/) and readers find them by id.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace stagecraft {

struct HtmlSection {
  std::string id;     // the element id, e.g. "timeline"
  std::string title;  // the heading
  std::string body;   // HTML, its text escaped (XmlEscape, report/svg_plot.h)
};

class HtmlPage {
 public:
  // `title` heads the page and names it in the browser; `subtitle` is a line under it
  // (the command and the config), both plain text.
  HtmlPage(std::string title, std::string subtitle);

  void Add(HtmlSection section) { sections_.push_back(std::move(section)); }

  // The whole document: a table of contents, the sections in the order added, the style and
  // the report script (which draws any `.timeline` a section holds and reports script errors in
  // <body data-errors>).
  std::string Render() const;

 private:
  std::string title_;
  std::string subtitle_;
  std::vector<HtmlSection> sections_;
};

// <pre> of plain text.
std::string HtmlPre(const std::string& text);

// A table: `header` cells, then the rows (cells are plain text, escaped here). A row's class
// (e.g. "over" for a layout that does not fit, drawn red) comes from `row_classes` where given.
std::string HtmlTable(const std::vector<std::string>& header,
                      const std::vector<std::vector<std::string>>& rows,
                      const std::vector<std::string>& row_classes = {});

// A definition list of (name, value) pairs, plain text.
std::string HtmlFacts(const std::vector<std::pair<std::string, std::string>>& facts);

// The memory verdict as one line with its class ("fits" green, "over" red, "unknown" grey).
std::string HtmlVerdict(bool known, bool fits, const std::string& text);

}  // namespace stagecraft
