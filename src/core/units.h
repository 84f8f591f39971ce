// Parsing of quantities with units, as users write them in configs and flags.
//   durations: "1.5ms", "200us", "3ns", "2s"; a bare number means milliseconds.
//   sizes:     "4096", "64KiB", "1.5GB" (KB/MB/GB/TB = 1e3.., KiB/MiB/GiB/TiB = 2^10..); bare =
//   bytes. bandwidth: "300GB/s", "25GiB/s", "400Gb/s" (bits); a bare number means bytes per second.
// Errors carry only "what"; callers prefix "where".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"
#include "core/time.h"

namespace stagecraft {

Result<Time> ParseDuration(std::string_view text);
Result<int64_t> ParseBytes(std::string_view text);
Result<double> ParseBandwidth(std::string_view text);  // bytes per second

// Formats a time as milliseconds with 6 decimals ("18.522000"): exact for integer ns.
std::string FormatMs(Time time);
// Formats a double with a fixed number of decimals (deterministic output).
std::string FormatFixed(double value, int decimals);
// A fraction as a signed percentage with one decimal ("+4.2%", "-11.0%"): errors.
std::string FormatSignedPercent(double fraction);
// Right-aligns `text` in `width` columns (unchanged when already wider): table cells.
std::string PadLeft(const std::string& text, size_t width);
// `text` followed by spaces up to `width` (at least one space when it is already as wide).
std::string PadRight(const std::string& text, size_t width);
// Human-readable bytes with binary prefixes and 2 decimals ("1.50 GiB").
std::string FormatBytes(int64_t bytes);
// Bytes as GiB (2^30 B) with 2 decimals and no unit ("74.51"): the memory tables and verdicts.
std::string FormatGib(double bytes);

}  // namespace stagecraft
