#include "io/kernel_set.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/suggest.h"
#include "hardware/presets.h"

namespace stagecraft {
namespace {

constexpr std::string_view kGemmHeader =
    "device,dtype,m,n,k,batch,tflops,time_us,library,timing,note";
constexpr std::string_view kAttentionHeader =
    "device,dtype,impl,batch,heads,kv_heads,head_dim,seq,seq_kv,causal,pass,tflops,time_us,"
    "library,timing,note";
// The largest extent a row may give (a 32-bit index, as the libraries take).
constexpr double kMaxExtent = 2147483648.0;

std::vector<std::string> Split(std::string_view line, char separator) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t end = line.find(separator, start);
    fields.emplace_back(line.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return fields;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  return text;
}

struct RowReader {
  std::string where;  // "path:line"
  const std::vector<std::string>& names;
  const std::vector<std::string>& fields;

  const std::string& Field(std::string_view column) const {
    const auto at = std::find(names.begin(), names.end(), column);
    return fields[static_cast<size_t>(at - names.begin())];
  }
  Error Bad(std::string_view column, const std::string& what) const {
    return Error{where + ": column '" + std::string(column) + "': " + what};
  }
  // A positive number; `optional` lets the field be empty (0).
  Result<double> Number(std::string_view column, bool optional, bool whole) const {
    const std::string& text = Field(column);
    if (text.empty()) {
      if (optional) return 0.0;
      return Bad(column, "is empty (expected a number)");
    }
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
      return Bad(column, "'" + EscapeBytes(text) + "' is not a number");
    }
    if (value <= 0) return Bad(column, "'" + text + "' must be positive");
    if (whole && (value != std::floor(value) || value > kMaxExtent)) {
      return Bad(column, "'" + text + "' is not a whole number of at most 2^31");
    }
    return value;
  }
  Result<std::string> Choice(std::string_view column,
                             const std::vector<std::string>& choices) const {
    const std::string& text = Field(column);
    if (std::find(choices.begin(), choices.end(), text) != choices.end()) return text;
    return Bad(column, "unknown value '" + EscapeBytes(text) + "'" + DidYouMean(text, choices) +
                           " (expected " + JoinChoices(choices) + ")");
  }
};

#define STAGECRAFT_ASSIGN(target, expr)                            \
  do {                                                             \
    auto stagecraft_value_ = (expr);                               \
    if (!stagecraft_value_.ok()) return stagecraft_value_.error(); \
    target = std::move(stagecraft_value_).value();                 \
  } while (false)

Result<KernelRow> ReadRow(KernelKind kind, const RowReader& reader, int32_t line) {
  KernelRow row;
  row.line = line;
  const std::string& device = reader.Field("device");
  auto preset = FindDevicePreset(device);
  if (!preset.ok()) return reader.Bad("device", preset.error().message);
  row.device = device;
  STAGECRAFT_ASSIGN(row.dtype, reader.Choice("dtype", {"bf16", "fp16", "fp8", "fp32"}));
  if (kind == KernelKind::kGemm) {
    STAGECRAFT_ASSIGN(row.m, reader.Number("m", false, true));
    STAGECRAFT_ASSIGN(row.n, reader.Number("n", false, true));
    STAGECRAFT_ASSIGN(row.k, reader.Number("k", false, true));
    STAGECRAFT_ASSIGN(row.batch, reader.Number("batch", false, true));
  } else {
    STAGECRAFT_ASSIGN(row.impl,
                      reader.Choice("impl", {"flash1", "flash2", "flash3", "cudnn", "te", "triton",
                                             "xformers", "sdpa-math", "pytorch-standard"}));
    STAGECRAFT_ASSIGN(row.batch, reader.Number("batch", false, true));
    STAGECRAFT_ASSIGN(row.heads, reader.Number("heads", false, true));
    STAGECRAFT_ASSIGN(row.kv_heads, reader.Number("kv_heads", false, true));
    STAGECRAFT_ASSIGN(row.head_dim, reader.Number("head_dim", false, true));
    STAGECRAFT_ASSIGN(row.seq, reader.Number("seq", false, true));
    STAGECRAFT_ASSIGN(row.seq_kv, reader.Number("seq_kv", false, true));
    if (std::fmod(row.heads, row.kv_heads) != 0) {
      return reader.Bad("kv_heads", "does not divide heads");
    }
    std::string causal;
    STAGECRAFT_ASSIGN(causal, reader.Choice("causal", {"true", "false"}));
    row.causal = causal == "true";
    STAGECRAFT_ASSIGN(row.pass, reader.Choice("pass", {"forward", "backward", "forward_backward"}));
  }
  STAGECRAFT_ASSIGN(row.tflops, reader.Number("tflops", true, false));
  STAGECRAFT_ASSIGN(row.time_us, reader.Number("time_us", true, false));
  // Plausible figures only, so that every row's seconds are finite: a kernel between 1e-6 and
  // 1e5 TFLOP/s, and between a nanosecond and about 11 days.
  if (row.tflops != 0 && (row.tflops < 1e-6 || row.tflops > 1e5)) {
    return reader.Bad("tflops", "'" + reader.Field("tflops") +
                                    "' is outside 1e-6..1e5 TFLOP/s (expected the printed rate)");
  }
  if (row.time_us != 0 && (row.time_us < 1e-3 || row.time_us > 1e12)) {
    return reader.Bad("time_us", "'" + reader.Field("time_us") +
                                     "' is outside 0.001..1e12 us (expected the printed time)");
  }
  if (row.tflops == 0 && row.time_us == 0) {
    return Error{reader.where +
                 ": neither tflops nor time_us is given (expected the rate or the "
                 "time the source prints)"};
  }
  row.library = reader.Field("library");
  STAGECRAFT_ASSIGN(row.timing, reader.Choice("timing", {"kernel", "wall"}));
  row.note = reader.Field("note");
  return row;
}

#undef STAGECRAFT_ASSIGN

}  // namespace

double KernelRowFlops(KernelKind kind, const KernelRow& row) {
  if (kind == KernelKind::kGemm) return 2 * row.m * row.n * row.k * row.batch;
  double forward = 4 * row.batch * row.heads * row.seq * row.seq_kv * row.head_dim;
  if (row.causal) forward *= 0.5;
  if (row.pass == "backward") return 2.5 * forward;
  if (row.pass == "forward_backward") return 3.5 * forward;
  return forward;
}

double KernelRowSeconds(KernelKind kind, const KernelRow& row) {
  if (row.time_us > 0) return row.time_us * 1e-6;
  return KernelRowFlops(kind, row) / (row.tflops * 1e12);
}

Result<KernelSource> ParseKernelSource(std::string_view text, std::string_view name) {
  KernelSource source;
  const std::string file(name);
  std::string base =
      file.substr(file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/') + 1);
  source.name = base.substr(0, base.rfind(".csv"));
  std::vector<std::string> names;
  int32_t number = 0;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = Trim(text.substr(start, end - start));
    start = end + 1;
    ++number;
    const std::string where = file + ":" + std::to_string(number);
    if (line.empty()) continue;
    if (line.front() == '#') {
      const std::string_view comment = Trim(line.substr(1));
      for (const auto& [key, field] :
           {std::pair{std::string_view("source:"), &source.cite},
            std::pair{std::string_view("measured:"), &source.measured}}) {
        if (comment.substr(0, key.size()) == key) *field = Trim(comment.substr(key.size()));
      }
      continue;
    }
    if (names.empty()) {
      if (line != kGemmHeader && line != kAttentionHeader) {
        return Error{where + ": unknown header '" + EscapeBytes(line.substr(0, 120)) +
                     "' (expected '" + std::string(kGemmHeader) + "' or '" +
                     std::string(kAttentionHeader) + "')"};
      }
      source.kind = line == kGemmHeader ? KernelKind::kGemm : KernelKind::kAttention;
      names = Split(line, ',');
      if (source.cite.empty() || source.measured.empty()) {
        return Error{where +
                     ": the header comes before a '# source:' and a '# measured:' line "
                     "(expected the citation and how the source timed its kernels first)"};
      }
      continue;
    }
    const std::vector<std::string> fields = Split(line, ',');
    if (fields.size() != names.size()) {
      return Error{where + ": " + std::to_string(fields.size()) + " fields, expected " +
                   std::to_string(names.size()) +
                   " (the header's columns; an empty field for a "
                   "figure the source does not print)"};
    }
    auto row = ReadRow(source.kind, RowReader{where, names, fields}, number);
    if (!row.ok()) return row.error();
    source.rows.push_back(std::move(row).value());
  }
  if (names.empty())
    return Error{file + ": no header (expected '" + std::string(kGemmHeader) + "')"};
  if (source.rows.empty()) return Error{file + ": no rows after the header"};
  return source;
}

}  // namespace stagecraft
