// stagecraft validate --kernels: the kernel model against published per-shape kernel timings
// (bench/validation/kernels/*.csv, doc/fidelity.md). Each row is timed as `stagecraft kernel`
// times it in isolation (a kernel benchmark's setting) and compared with the measured time:
// the signed error per row, and the MAPE with the shares within ±10% and ±15% per class of
// kernel (GEMM aligned or not, large or thin, by dtype; attention by implementation and dtype),
// per source and overall.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "commands/commands.h"
#include "commands/validation_files.h"
#include "core/units.h"
#include "hardware/presets.h"
#include "io/files.h"
#include "io/kernel_set.h"
#include "report/json_writer.h"

namespace stagecraft {
namespace {

struct KernelResult {
  std::string source;
  std::string kernel;  // the row's class (KernelClass)
  int32_t line = 0;
  std::string shape;  // for the table
  double measured_s = 0;
  double predicted_s = 0;
  double error() const { return (predicted_s - measured_s) / measured_s; }
};

// A GEMM is aligned when every extent is a multiple of 8 (16-byte rows of 2-byte elements: the
// tensor cores' vector loads); thin when M or N is at most 256 (one tile row or column of the
// large tilings, decode-like or small squares).
std::string KernelClass(KernelKind kind, const KernelRow& row) {
  if (kind == KernelKind::kAttention) return "attention " + row.impl + " " + row.dtype;
  const bool aligned =
      std::fmod(row.m, 8) == 0 && std::fmod(row.n, 8) == 0 && std::fmod(row.k, 8) == 0;
  const bool thin = std::min(row.m, row.n) <= 256;
  const std::string dtype = row.dtype == "fp8" ? "fp8" : "bf16";
  // The model stands for the vendor libraries' kernels (cuBLAS, CUTLASS, DeepGEMM, XLA's);
  // GEMMs written in Triton (the tutorials' kernels, torchao's blockwise FP8) are shown apart.
  const bool triton =
      row.library.rfind("triton", 0) == 0 || row.library.find("-triton") != std::string::npos;
  return "gemm " + dtype + (aligned ? "" : " unaligned") + (thin ? " thin" : " large") +
         (triton ? " (triton)" : "") + (row.timing == "wall" ? " (wall)" : "");
}

// A row's implementation as the model has it (FlashAttention-1's rows at the Triton kernel's
// ratios: the same algorithm, Dao 2023 §4.1).
AttentionKernel KernelOf(const std::string& impl) {
  if (const auto kernel = kAttentionKernelNames.Parse(impl)) return *kernel;
  return impl == "flash1" ? AttentionKernel::kTriton : AttentionKernel::kFlash;
}

// The model's time for a row, as `kernel` gives it (isolated); 0 when the row's kernel is not
// one the model has (FP32 GEMMs, xformers, the unfused math path).
double PredictSeconds(KernelKind kind, const KernelRow& row, const DeviceRates& device) {
  const bool fp8 = row.dtype == "fp8";
  if (kind == KernelKind::kGemm) {
    if (row.dtype == "fp32") return 0;
    return GemmTime(device, {row.m, row.n, row.k, row.batch}, fp8, KernelSetting::kIsolated)
        .seconds;
  }
  if (row.impl == "xformers" || row.impl == "sdpa-math" || row.impl == "pytorch-standard") {
    return 0;
  }
  KernelRow forward_row = row;
  forward_row.pass = "forward";
  const double forward = KernelRowFlops(kind, forward_row);
  const double key_blocks = row.seq_kv / (row.causal ? 256.0 : 128.0);
  const AttentionKernel kernel = KernelOf(row.impl);
  const auto time = [&](bool backward) {
    return AttentionTime(device, backward ? 2.5 * forward : forward, backward, key_blocks, kernel,
                         fp8 && !backward)
        .seconds;
  };
  if (row.pass == "forward") return time(false);
  if (row.pass == "backward") return time(true);
  return time(false) + time(true);
}

std::string ShapeText(KernelKind kind, const KernelRow& row) {
  const auto whole = [](double value) { return FormatFixed(value, 0); };
  if (kind == KernelKind::kGemm) {
    return row.device + " " + whole(row.m) + "x" + whole(row.n) + "x" + whole(row.k) +
           (row.batch > 1 ? "x" + whole(row.batch) : "");
  }
  return row.device + " b" + whole(row.batch) + " h" + whole(row.heads) + " d" +
         whole(row.head_dim) + " s" + whole(row.seq) + (row.causal ? " causal " : " ") + row.pass;
}

std::string TallyLine(const std::string& name, const ErrorTally& tally) {
  return "  " + PadRight(name, 40) + PadLeft(std::to_string(tally.runs), 6) +
         PadLeft(FormatFixed(100 * tally.mape(), 1) + "%", 9) +
         PadLeft(FormatSignedPercent(tally.bias()), 9) +
         PadLeft(FormatFixed(100 * tally.share_10(), 1) + "%", 11) +
         PadLeft(FormatFixed(100 * tally.share_15(), 1) + "%", 11) + "\n";
}

void TallyJson(JsonWriter& writer, const ErrorTally& tally) {
  writer.Key("rows").Int(static_cast<int64_t>(tally.runs));
  writer.Key("mape").Fixed(tally.mape(), 4);
  writer.Key("bias").Fixed(tally.bias(), 4);
  writer.Key("within_10").Int(static_cast<int64_t>(tally.within_10));
  writer.Key("within_15").Int(static_cast<int64_t>(tally.within_15));
}

}  // namespace

Status RunValidateKernels(const ValidateSpec& flags, Transcript& transcript) {
  std::ostream& out = transcript.out();
  std::ostream& err = transcript.err();
  auto files = SuiteFiles(
      flags.paths.empty() ? std::vector<std::string>{"bench/validation/kernels"} : flags.paths,
      ".csv", "validate --kernels", "bench/validation/kernels");
  if (!files.ok()) return files.error();
  std::vector<KernelResult> results;
  size_t skipped = 0;
  std::map<std::string, std::string> cites;
  for (const std::string& file : files.value()) {
    auto text = ReadTextFile(file);
    if (!text.ok()) return text.error();
    const std::string name = std::filesystem::path(file).filename().string();
    auto source = ParseKernelSource(text.value(), name);
    if (!source.ok()) return source.error();
    const KernelSource& parsed = source.value();
    if (!cites.emplace(parsed.name, parsed.cite).second) {
      return Error{"validate --kernels: source '" + parsed.name +
                   "' appears twice (expected one "
                   "file per source)"};
    }
    for (const KernelRow& row : parsed.rows) {
      const DeviceRates device = ClusterFromPreset(row.device).value().rates();
      KernelResult result;
      result.source = parsed.name;
      result.kernel = KernelClass(parsed.kind, row);
      result.line = row.line;
      result.shape = ShapeText(parsed.kind, row);
      result.measured_s = KernelRowSeconds(parsed.kind, row);
      result.predicted_s = PredictSeconds(parsed.kind, row, device);
      if (result.predicted_s <= 0) {
        ++skipped;
        continue;
      }
      results.push_back(std::move(result));
    }
  }
  ErrorTally all;
  std::map<std::string, ErrorTally> by_class;
  std::map<std::string, ErrorTally> by_source;
  for (const KernelResult& result : results) {
    all.Add(result.error());
    by_class[result.kernel].Add(result.error());
    by_source[result.source].Add(result.error());
  }
  if (flags.json) {
    JsonWriter writer(true);
    writer.BeginObject();
    TallyJson(writer, all);
    writer.Key("skipped").Int(static_cast<int64_t>(skipped));
    for (const auto& [key, tallies] : {std::pair{"kernels", &by_class}, {"sources", &by_source}}) {
      writer.Key(key).BeginObject();
      for (const auto& [name, tally] : *tallies) {
        writer.Key(name).BeginObject();
        TallyJson(writer, tally);
        writer.EndObject();
      }
      writer.EndObject();
    }
    writer.Key("results").BeginArray();
    for (const KernelResult& result : results) {
      writer.BeginObject();
      writer.Key("source").String(result.source).Key("line").Int(result.line);
      writer.Key("kernel").String(result.kernel).Key("shape").String(result.shape);
      writer.Key("measured_us").Fixed(result.measured_s * 1e6, 3);
      writer.Key("predicted_us").Fixed(result.predicted_s * 1e6, 3);
      writer.Key("error").Fixed(result.error(), 4);
      writer.EndObject();
    }
    writer.EndArray().EndObject();
    out << writer.text() << "\n";
  } else {
    out << "stagecraft validate --kernels: " << results.size() << " kernel timings from "
        << by_source.size() << (by_source.size() == 1 ? " source" : " sources")
        << "; predicted = stagecraft kernel, isolated (doc/fidelity.md)";
    if (skipped > 0)
      out << "; " << skipped
          << " rows of kernels the model has not (unfused attention, xformers, fp32)";
    out << "\n\n  " << PadRight("kernel", 40) << PadLeft("rows", 6) << PadLeft("mape", 9)
        << PadLeft("bias", 9) << PadLeft("within_10", 11) << PadLeft("within_15", 11) << "\n";
    for (const auto& [name, tally] : by_class) out << TallyLine(name, tally);
    out << "\n  " << PadRight("source", 40) << PadLeft("rows", 6) << PadLeft("mape", 9)
        << PadLeft("bias", 9) << PadLeft("within_10", 11) << PadLeft("within_15", 11) << "\n";
    for (const auto& [name, tally] : by_source) out << TallyLine(name, tally);
    out << TallyLine("all", all);
  }
  if (!flags.csv_path.empty()) {
    std::string csv = "source,line,kernel,shape,measured_us,predicted_us,error\n";
    for (const KernelResult& result : results) {
      csv += result.source + "," + std::to_string(result.line) + "," + result.kernel + "," +
             result.shape + "," + FormatFixed(result.measured_s * 1e6, 3) + "," +
             FormatFixed(result.predicted_s * 1e6, 3) + "," + FormatFixed(result.error(), 4) + "\n";
    }
    const Status written = WriteTextFile(flags.csv_path, csv);
    if (!written.ok()) return Error{"--csv: " + written.error().message};
  }
  if (flags.max_mape && 100 * all.mape() > *flags.max_mape) {
    err << "stagecraft: error: kernel MAPE " << FormatFixed(100 * all.mape(), 1)
        << "% is above --max-mape " << FormatFixed(*flags.max_mape, 1)
        << "% (the recorded figure plus its allowance)\n";
    return MakeError(ErrorKind::kViolation, "");
  }
  return Status::Ok();
}

}  // namespace stagecraft
