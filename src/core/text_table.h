// TextTable: the one formatter of the command line's aligned tables. Each column is as wide as
// its widest cell (never narrower than the width it asks for), so a large figure widens its
// column instead of running into its neighbour.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace stagecraft {

enum class TextAlign { kLeft, kRight };

struct TextColumn {
  std::string header;                   // printed on the header line
  TextAlign align = TextAlign::kRight;  // cells and header alike
  size_t min_width = 0;                 // spaces included: the layout when every cell fits
};

// Layout: adjacent columns are kept at least `gap` spaces apart (the space sits before a
// right-aligned column, after a left-aligned one followed by another left-aligned one, and
// before a left-aligned one that follows a right-aligned one). A column's width is the largest
// of its min_width and its widest cell with that space; a right-aligned header counts as a
// cell, a left-aligned one may run into the next column's free room (a title over a column
// of short names), which widens the next column only if the two headers would touch. Lines
// have no trailing spaces.
class TextTable {
 public:
  // `indent` starts every line; `gap` is at least 1.
  TextTable(std::string indent, std::vector<TextColumn> columns, size_t gap = 1);

  // REQUIRES: cells.size() == the number of columns.
  void AddRow(std::vector<std::string> cells);

  // The header line (unless `with_header` is false), then one line per row, each ending "\n".
  std::string Render(bool with_header = true) const;

 private:
  std::vector<size_t> Widths(bool with_header) const;
  size_t Lead(size_t column) const;   // separating spaces before the cell
  size_t Trail(size_t column) const;  // separating spaces after the cell
  std::string Line(const std::vector<std::string>& cells, const std::vector<size_t>& widths) const;

  std::string indent_;
  std::vector<TextColumn> columns_;
  size_t gap_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace stagecraft
