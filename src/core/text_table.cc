#include "core/text_table.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace stagecraft {

TextTable::TextTable(std::string indent, std::vector<TextColumn> columns, size_t gap)
    : indent_(std::move(indent)), columns_(std::move(columns)), gap_(std::max<size_t>(gap, 1)) {}

void TextTable::AddRow(std::vector<std::string> cells) {
  assert(cells.size() == columns_.size());
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

size_t TextTable::Lead(size_t column) const {
  if (column == 0) return 0;
  const bool right = columns_[column].align == TextAlign::kRight;
  const bool after_right = columns_[column - 1].align == TextAlign::kRight;
  return right || after_right ? gap_ : 0;
}

size_t TextTable::Trail(size_t column) const {
  if (column + 1 >= columns_.size()) return 0;
  const bool left = columns_[column].align == TextAlign::kLeft;
  const bool before_left = columns_[column + 1].align == TextAlign::kLeft;
  return left && before_left ? gap_ : 0;
}

std::vector<size_t> TextTable::Widths(bool with_header) const {
  const size_t count = columns_.size();
  std::vector<size_t> widths(count, 0);
  for (size_t column = 0; column < count; ++column) {
    size_t widest = 0;
    for (const auto& row : rows_) widest = std::max(widest, row[column].size());
    const TextColumn& spec = columns_[column];
    if (with_header && spec.align == TextAlign::kRight) {
      widest = std::max(widest, spec.header.size());
    }
    widths[column] = std::max(spec.min_width, Lead(column) + widest + Trail(column));
  }
  if (!with_header) return widths;
  // A left-aligned header longer than its column runs on into the next column; that column
  // widens only where its own header would come closer than the gap.
  for (size_t column = 0; column < count; ++column) {
    const TextColumn& spec = columns_[column];
    if (spec.align != TextAlign::kLeft) continue;
    const size_t needed = Lead(column) + spec.header.size();
    if (needed + Trail(column) <= widths[column]) continue;
    if (column + 1 == count) continue;  // the last column's header ends the line
    const TextColumn& next = columns_[column + 1];
    if (next.align == TextAlign::kLeft) {
      widths[column] = needed + gap_;
      continue;
    }
    // The next header starts at widths[column] + widths[next] - its size.
    const size_t next_start = widths[column] + widths[column + 1] - next.header.size();
    if (next_start < needed + gap_) widths[column + 1] += needed + gap_ - next_start;
  }
  return widths;
}

std::string TextTable::Line(const std::vector<std::string>& cells,
                            const std::vector<size_t>& widths) const {
  std::string line = indent_;
  for (size_t column = 0; column < cells.size(); ++column) {
    const std::string& cell = cells[column];
    if (columns_[column].align == TextAlign::kRight) {
      line += std::string(widths[column] - std::min(cell.size(), widths[column]), ' ') + cell;
      continue;
    }
    line += std::string(Lead(column), ' ') + cell;
    const size_t used = Lead(column) + cell.size();
    if (column + 1 < cells.size() && used < widths[column]) {
      line += std::string(widths[column] - used, ' ');
    }
  }
  return line + "\n";
}

std::string TextTable::Render(bool with_header) const {
  const std::vector<size_t> widths = Widths(with_header);
  std::string text;
  if (with_header) {
    // Headers are placed by position: a left-aligned one that ran on is followed by spaces up
    // to where the next header starts (Widths keeps at least the gap between them).
    std::string line = indent_;
    size_t position = 0;  // the column's start, after the indent
    for (size_t column = 0; column < columns_.size(); ++column) {
      const std::string& header = columns_[column].header;
      const size_t start = columns_[column].align == TextAlign::kRight
                               ? position + widths[column] - header.size()
                               : position + Lead(column);
      const size_t written = line.size() - indent_.size();
      if (start > written) line += std::string(start - written, ' ');
      line += header;
      position += widths[column];
    }
    text += line + "\n";
  }
  for (const auto& row : rows_) text += Line(row, widths);
  return text;
}

}  // namespace stagecraft
