// EnumTable: an enum's names, one row per value — the spelling users type in the config and on
// the command line, and the value it stands for. The one table per enum that the YAML reader,
// the flags, `list` and the reports all read, so a name is written once.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/suggest.h"

namespace stagecraft {

// One row of an EnumTable: a name and its value.
template <typename Enum>
struct EnumRow {
  const char* name = nullptr;  // a string literal: Name() hands it out as is
  Enum value{};
};

// The rows are held in place (no heap), so a table is a constexpr value and Name and Parse
// allocate nothing; only the message helpers (Names, Joined, DidYouMean) build strings.
template <typename Enum>
class EnumTable {
 public:
  using Row = EnumRow<Enum>;
  static constexpr size_t kMaxRows = 32;

  // Rows in the order messages list them; a value may have several names (an alias), and Name
  // gives the first.
  constexpr EnumTable(std::initializer_list<Row> rows) {
    for (const Row& row : rows) Append(row);
  }

  constexpr const Row* begin() const { return rows_.data(); }
  constexpr const Row* end() const { return rows_.data() + size_; }
  constexpr size_t size() const { return size_; }

  // The first name of `value`, or "?" when no row has it.
  constexpr const char* Name(Enum value) const {
    for (const Row& row : *this) {
      if (row.value == value) return row.name;
    }
    return "?";
  }

  // The value named exactly `name` (case matters), or nullopt.
  constexpr std::optional<Enum> Parse(std::string_view name) const {
    for (const Row& row : *this) {
      if (std::string_view(row.name) == name) return row.value;
    }
    return std::nullopt;
  }

  // The names in row order, for messages and suggestions.
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    names.reserve(size_);
    for (const Row& row : *this) names.emplace_back(row.name);
    return names;
  }

  // "'a', 'b' or 'c'" (JoinChoices).
  std::string Joined() const { return JoinChoices(Names()); }

  // "; did you mean 'x'?" for a mistyped `word`, or "" (DidYouMean).
  std::string DidYouMean(std::string_view word) const {
    return stagecraft::DidYouMean(word, Names());
  }

  // This table with `row` in front: an alias one reader accepts beside the common names.
  constexpr EnumTable WithFirst(Row row) const {
    EnumTable table({row});
    for (const Row& own : *this) table.Append(own);
    return table;
  }

 private:
  constexpr void Append(Row row) {
    // Out of range: a compile error for a constexpr table, std::out_of_range otherwise.
    rows_.at(size_) = row;
    ++size_;
  }

  std::array<Row, kMaxRows> rows_{};
  size_t size_ = 0;
};

}  // namespace stagecraft
