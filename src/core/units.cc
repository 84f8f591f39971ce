#include "core/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace stagecraft {
namespace {

struct Quantity {
  long double number = 0;
  std::string unit;
};

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// Splits "12.5ms" into 12.5 and "ms". Accepts digits with at most one '.', an optional
// exponent, then an optional unit made of letters and '/'.
Result<Quantity> SplitQuantity(std::string_view raw, std::string_view kind,
                               std::string_view units) {
  const std::string_view text = Trim(raw);
  size_t pos = 0;
  if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) ++pos;
  const size_t digits_begin = pos;
  bool seen_dot = false;
  while (pos < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[pos])) || (text[pos] == '.' && !seen_dot))) {
    seen_dot = seen_dot || text[pos] == '.';
    ++pos;
  }
  if (pos == digits_begin || (pos == digits_begin + 1 && seen_dot)) {
    return Error{"'" + std::string(raw) + "' is not a " + std::string(kind) +
                 " (expected a number with an optional unit: " + std::string(units) + ")"};
  }
  if (pos + 1 < text.size() && (text[pos] == 'e' || text[pos] == 'E') &&
      (std::isdigit(static_cast<unsigned char>(text[pos + 1])) || text[pos + 1] == '-' ||
       text[pos + 1] == '+')) {
    ++pos;
    if (text[pos] == '-' || text[pos] == '+') ++pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  }
  Quantity quantity;
  quantity.number = std::strtold(std::string(text.substr(0, pos)).c_str(), nullptr);
  quantity.unit = std::string(Trim(text.substr(pos)));
  return quantity;
}

template <typename Table>
Result<long double> Scale(const Quantity& quantity, const Table& table, std::string_view raw,
                          std::string_view kind) {
  std::string expected;
  for (const auto& [unit, factor] : table) {
    if (quantity.unit == unit) return quantity.number * factor;
    if (!std::string_view(unit).empty())
      expected += (expected.empty() ? "" : ", ") + std::string(unit);
  }
  return Error{"bad unit '" + quantity.unit + "' in " + std::string(kind) + " '" +
               std::string(raw) + "' (expected one of " + expected + ")"};
}

}  // namespace

Result<Time> ParseDuration(std::string_view raw) {
  auto quantity = SplitQuantity(raw, "duration", "ns, us, ms or s; a bare number means ms");
  if (!quantity.ok()) return quantity.error();
  static constexpr std::pair<const char*, long double> kUnits[] = {
      {"", 1e6L}, {"ns", 1.0L}, {"us", 1e3L}, {"ms", 1e6L}, {"s", 1e9L}};
  auto ns = Scale(quantity.value(), kUnits, raw, "duration");
  if (!ns.ok()) return ns.error();
  if (!std::isfinite(static_cast<double>(ns.value())) ||
      std::fabs(ns.value()) > static_cast<long double>(kMaxInputDuration.ns())) {
    return Error{"duration '" + std::string(raw) + "' is out of range (expected at most " +
                 FormatFixed(static_cast<double>(kMaxInputDuration.ns()) / 1e9, 0) +
                 " s, 2^42 ns, the limit that keeps the clock from overflowing)"};
  }
  return Time::Nanoseconds(std::llround(ns.value()));
}

Result<int64_t> ParseBytes(std::string_view raw) {
  auto quantity = SplitQuantity(raw, "size", "B, KB, MB, GB, TB, KiB, MiB, GiB or TiB");
  if (!quantity.ok()) return quantity.error();
  static constexpr std::pair<const char*, long double> kUnits[] = {{"", 1.0L},
                                                                   {"B", 1.0L},
                                                                   {"KB", 1e3L},
                                                                   {"MB", 1e6L},
                                                                   {"GB", 1e9L},
                                                                   {"TB", 1e12L},
                                                                   {"KiB", 1024.0L},
                                                                   {"MiB", 1048576.0L},
                                                                   {"GiB", 1073741824.0L},
                                                                   {"TiB", 1099511627776.0L}};
  auto bytes = Scale(quantity.value(), kUnits, raw, "size");
  if (!bytes.ok()) return bytes.error();
  if (!std::isfinite(static_cast<double>(bytes.value())) || std::fabs(bytes.value()) > 9e18L) {
    return Error{"size '" + std::string(raw) + "' is out of range"};
  }
  return static_cast<int64_t>(std::llround(bytes.value()));
}

Result<double> ParseBandwidth(std::string_view raw) {
  auto quantity = SplitQuantity(raw, "bandwidth",
                                "B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, Gb/s or Tb/s");
  if (!quantity.ok()) return quantity.error();
  static constexpr std::pair<const char*, long double> kUnits[] = {
      {"", 1.0L},         {"B/s", 1.0L},         {"KB/s", 1e3L},
      {"MB/s", 1e6L},     {"GB/s", 1e9L},        {"TB/s", 1e12L},
      {"KiB/s", 1024.0L}, {"MiB/s", 1048576.0L}, {"GiB/s", 1073741824.0L},
      {"Gb/s", 1e9L / 8}, {"Tb/s", 1e12L / 8}};
  auto rate = Scale(quantity.value(), kUnits, raw, "bandwidth");
  if (!rate.ok()) return rate.error();
  return static_cast<double>(rate.value());
}

std::string FormatFixed(double value, int decimals) {
  if (value == 0.0) value = 0.0;  // no "-0.000000"
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  std::string text(buffer);
  if (text.rfind("-0.", 0) == 0 && text.find_first_not_of("-0.") == std::string::npos) {
    text.erase(0, 1);
  }
  return text;
}

std::string FormatMs(Time time) {
  const int64_t ns = time.ns();
  const int64_t magnitude = ns < 0 ? -ns : ns;
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%s%lld.%06lld", ns < 0 ? "-" : "",
                static_cast<long long>(magnitude / 1'000'000),
                static_cast<long long>(magnitude % 1'000'000));
  return buffer;
}

std::string FormatSignedPercent(double fraction) {
  return (fraction >= 0 ? "+" : "") + FormatFixed(100 * fraction, 1) + "%";
}

std::string PadLeft(const std::string& text, size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

std::string PadRight(const std::string& text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

std::string FormatGib(double bytes) { return FormatFixed(bytes / 1073741824.0, 2); }

std::string FormatBytes(int64_t bytes) {
  static const char* kPrefixes[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int prefix = 0;
  while (std::fabs(value) >= 1024.0 && prefix < 5) {
    value /= 1024.0;
    ++prefix;
  }
  if (prefix == 0) return std::to_string(bytes) + " B";
  return FormatFixed(value, 2) + " " + kPrefixes[prefix];
}

}  // namespace stagecraft
