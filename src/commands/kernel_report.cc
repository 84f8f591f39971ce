// `stagecraft kernel gemm|grouped-gemm|attention|memory ...`: one kernel timed as the simulator
// times it (hardware/kernel_model.h), with what binds it and, for a GEMM, its tiles and waves.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <ostream>

#include "commands/commands.h"
#include "core/suggest.h"
#include "core/units.h"
#include "hardware/presets.h"
#include "report/json_writer.h"

namespace stagecraft {
namespace {

// The largest extent a kernel dimension may have: 2^31 (a 32-bit index, as the libraries take).
constexpr int64_t kMaxExtent = int64_t{1} << 31;

Result<int64_t> Extent(const std::string& flag, const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end) {
    return Error{flag + ": '" + text + "' is not a whole number (expected e.g. " + flag + " 4096)"};
  }
  if (value < 1 || value > kMaxExtent) {
    return Error{flag + ": " + text + " is outside 1.." + std::to_string(kMaxExtent)};
  }
  return value;
}

// An attention flag the op needs: given, and a whole number in range.
Result<int64_t> Required(const std::string& flag, const std::optional<std::string>& text,
                         const std::string& example) {
  if (!text) return Error{"kernel attention: " + flag + " is required (e.g. " + example + ")"};
  return Extent(flag, *text);
}

struct Dtype {
  bool fp8 = false;
};

Result<Dtype> ParseDtype(const std::string& text, bool attention) {
  const std::vector<std::string> names =
      attention ? std::vector<std::string>{"bf16", "fp16", "fp8"}
                : std::vector<std::string>{"bf16", "fp16", "fp8", "fp32"};
  if (text == "bf16" || text == "fp16") return Dtype{};
  if (text == "fp8") return Dtype{true};
  if (text == "fp32" && !attention) {
    return Error{
        "--dtype fp32: FP32 GEMMs run on the CUDA cores, whose peak the presets do not carry: "
        "not modelled (expected bf16, fp16 or fp8; training keeps its GEMMs on the tensor cores)"};
  }
  return Error{"--dtype: unknown type '" + text + "'" + DidYouMean(text, names) + " (expected " +
               JoinChoices(names) + ")"};
}

// The flags of one op given to another: the first one named.
Status OnlyFor(const std::string& op, const KernelSpec& flags) {
  const bool attention = op == "attention";
  const bool gemm = op == "gemm" || op == "grouped-gemm";
  const std::pair<const char*, bool> given[] = {
      {"--heads", !attention && flags.heads.has_value()},
      {"--kv-heads", !attention && flags.kv_heads.has_value()},
      {"--head-dim", !attention && flags.head_dim.has_value()},
      {"--seq", !attention && flags.seq.has_value()},
      {"--seq-kv", !attention && flags.seq_kv.has_value()},
      {"--causal", !attention && flags.causal},
      {"--pass", !attention && flags.pass.has_value()},
      {"--impl", !attention && flags.impl.has_value()},
      {"--in-step", !gemm && flags.in_step},
      {"--bytes", op != "memory" && flags.bytes.has_value()},
      {"--batch", op == "memory" && flags.batch.has_value()},
  };
  for (const auto& [flag, wrong] : given) {
    if (wrong) {
      return Error{"kernel " + op + ": " + flag +
                   " is not a flag of this kernel (see stagecraft "
                   "kernel --help)"};
    }
  }
  return Status::Ok();
}

void PrintTime(const std::string& title, const KernelTime& time, bool json,
               const std::vector<std::pair<std::string, std::string>>& fields, std::ostream& out) {
  const double tflops = time.seconds > 0 ? time.flops / time.seconds / 1e12 : 0.0;
  if (json) {
    JsonWriter writer(/*pretty=*/true);
    writer.BeginObject();
    for (const auto& [key, value] : fields) writer.Key(key).Raw(value);
    writer.Key("time_us").Raw(FormatFixed(time.seconds * 1e6, 3));
    writer.Key("tflops").Raw(FormatFixed(tflops, 3));
    writer.Key("bound").String(KernelBoundName(time.bound));
    writer.Key("compute_us").Raw(FormatFixed(time.compute_seconds * 1e6, 3));
    writer.Key("memory_us").Raw(FormatFixed(time.memory_seconds * 1e6, 3));
    writer.Key("floor_us").Raw(FormatFixed(time.floor_seconds * 1e6, 3));
    writer.Key("flops").Raw(FormatFixed(time.flops, 0));
    writer.Key("bytes").Raw(FormatFixed(time.bytes, 0));
    if (time.tiles > 0) {
      writer.Key("tile").String(FormatFixed(time.tile_m, 0) + "x" + FormatFixed(time.tile_n, 0));
      writer.Key("tiles").Raw(FormatFixed(time.tiles, 0));
      writer.Key("waves").Raw(FormatFixed(time.waves, 0));
    }
    if (time.efficiency > 0) writer.Key("efficiency").Raw(FormatFixed(time.efficiency, 4));
    writer.EndObject();
    out << writer.text() << "\n";
    return;
  }
  out << "stagecraft kernel: " << title << "\n";
  out << "  time       " << FormatFixed(time.seconds * 1e6, 3) << " us  ("
      << KernelBoundName(time.bound) << " bound)\n";
  out << "  rate       " << FormatFixed(tflops, 3) << " TFLOP/s  (" << FormatFixed(time.flops, 0)
      << " FLOPs)\n";
  out << "  compute    " << FormatFixed(time.compute_seconds * 1e6, 3) << " us";
  if (time.tiles > 0) {
    out << "  (" << FormatFixed(time.tiles, 0) << " tiles of " << FormatFixed(time.tile_m, 0) << "x"
        << FormatFixed(time.tile_n, 0) << " in " << FormatFixed(time.waves, 0)
        << (time.waves == 1 ? " wave)" : " waves)");
  }
  if (time.efficiency > 0) out << "  (" << FormatFixed(time.efficiency, 4) << " of the peak)";
  out << "\n";
  out << "  memory     " << FormatFixed(time.memory_seconds * 1e6, 3) << " us  ("
      << FormatFixed(time.bytes, 0) << " bytes)\n";
  if (time.tiles > 0) {
    out << "  latency    " << FormatFixed(time.floor_seconds * 1e6, 3)
        << " us  (added to the slower of compute and memory)\n";
  } else {
    out << "  floor      " << FormatFixed(time.floor_seconds * 1e6, 3)
        << " us  (the least a kernel costs)\n";
  }
}

Status RunGemmKernel(const KernelSpec& flags, const ClusterSpec& cluster, Transcript& transcript) {
  if (flags.dims.size() != 3) {
    return Error{"kernel " + flags.op +
                 ": expected the three extents M N K (C[M x N] = A[M x K] "
                 "B[K x N]), got " +
                 std::to_string(flags.dims.size())};
  }
  int64_t extents[3] = {};
  const char* names[3] = {"M", "N", "K"};
  for (int index = 0; index < 3; ++index) {
    auto value = Extent(names[index], flags.dims[index]);
    if (!value.ok()) return Error{"kernel " + flags.op + ": " + value.error().message};
    extents[index] = value.value();
  }
  int64_t batch = 1;
  if (flags.batch) {
    auto value = Extent("--batch", *flags.batch);
    if (!value.ok()) return value.error();
    batch = value.value();
  }
  auto dtype = ParseDtype(flags.dtype, /*attention=*/false);
  if (!dtype.ok()) return dtype.error();
  const KernelSetting setting = flags.in_step ? KernelSetting::kInStep : KernelSetting::kIsolated;
  const GemmShape shape{static_cast<double>(extents[0]), static_cast<double>(extents[1]),
                        static_cast<double>(extents[2]), static_cast<double>(batch)};
  const KernelTime time = GemmTime(cluster.rates(), shape, dtype.value().fp8, setting);
  const std::string title = flags.op + " " + flags.dims[0] + "x" + flags.dims[1] + "x" +
                            flags.dims[2] + (batch > 1 ? " x " + std::to_string(batch) : "") + " " +
                            flags.dtype + " on " + flags.cluster +
                            (flags.in_step ? ", in a training step" : ", isolated");
  PrintTime(title, time, flags.json,
            {{"m", std::to_string(extents[0])},
             {"n", std::to_string(extents[1])},
             {"k", std::to_string(extents[2])},
             {"batch", std::to_string(batch)}},
            transcript.out());
  return Status::Ok();
}

Status RunAttentionKernel(const KernelSpec& flags, const ClusterSpec& cluster,
                          Transcript& transcript) {
  if (!flags.dims.empty()) {
    return Error{"kernel attention: takes no extents, got '" + flags.dims.front() +
                 "' (the shape is --batch, --heads, --head-dim and --seq)"};
  }
  auto batch = Required("--batch", flags.batch, "--batch 8");
  if (!batch.ok()) return batch.error();
  auto heads = Required("--heads", flags.heads, "--heads 32");
  if (!heads.ok()) return heads.error();
  auto head_dim = Required("--head-dim", flags.head_dim, "--head-dim 128");
  if (!head_dim.ok()) return head_dim.error();
  auto seq = Required("--seq", flags.seq, "--seq 4096");
  if (!seq.ok()) return seq.error();
  int64_t kv_heads = heads.value();
  if (flags.kv_heads) {
    auto value = Extent("--kv-heads", *flags.kv_heads);
    if (!value.ok()) return value.error();
    kv_heads = value.value();
    if (heads.value() % kv_heads != 0) {
      return Error{"--kv-heads: " + std::to_string(kv_heads) + " does not divide --heads " +
                   std::to_string(heads.value()) +
                   " (grouped-query attention shares each key "
                   "head among a whole number of query heads)"};
    }
  }
  int64_t seq_kv = seq.value();
  if (flags.seq_kv) {
    auto value = Extent("--seq-kv", *flags.seq_kv);
    if (!value.ok()) return value.error();
    seq_kv = value.value();
  }
  const std::string pass = flags.pass.value_or("forward");
  if (pass != "forward" && pass != "backward") {
    return Error{"--pass: unknown pass '" + pass + "'" + DidYouMean(pass, {"forward", "backward"}) +
                 " (expected forward or backward)"};
  }
  const bool backward = pass == "backward";
  auto dtype = ParseDtype(flags.dtype, /*attention=*/true);
  if (!dtype.ok()) return dtype.error();
  const KernelModel& model = cluster.kernels;
  AttentionKernel kernel = dtype.value().fp8 ? AttentionKernel::kFlash3
                                             : ResolveAttentionKernel(model, AttentionKernel::kTe);
  std::string impl_name = AttentionKernelName(kernel);
  if (flags.impl) {
    const std::optional<AttentionKernel> found = kAttentionKernelNames.Parse(*flags.impl);
    if (!found) {
      return Error{"--impl: unknown attention kernel '" + *flags.impl + "'" +
                   kAttentionKernelNames.DidYouMean(*flags.impl) + " (expected " +
                   kAttentionKernelNames.Joined() + ")"};
    }
    kernel = *found == AttentionKernel::kTe ? ResolveAttentionKernel(model, *found) : *found;
    impl_name = *flags.impl;
  }
  if (!AttentionKernelRuns(model, kernel, backward, dtype.value().fp8)) {
    return Error{"kernel attention: " + std::string(AttentionKernelName(kernel)) +
                 (dtype.value().fp8 ? " in FP8" : "") + " " + pass + " has no measured rate on " +
                 cluster.device + " (" +
                 (dtype.value().fp8 ? "FP8 attention: FlashAttention-3's forward on Hopper"
                                    : "flash2 and triton run on every preset") +
                 ")"};
  }
  // FlashAttention's count: 4·b·h·s·s_kv·d forward (QKᵀ and PV), half of it causal when the
  // queries see a prefix of as many keys; backward 2.5x (five matmuls against two).
  const double b = static_cast<double>(batch.value());
  const double h = static_cast<double>(heads.value());
  const double d = static_cast<double>(head_dim.value());
  const double s = static_cast<double>(seq.value());
  const double s_kv = static_cast<double>(seq_kv);
  double forward = 4 * b * h * s * s_kv * d;
  if (flags.causal) forward *= 0.5;
  // A 128-query tile meets s_kv/128 key blocks, half of them on average when causal.
  const double key_blocks = s_kv / (flags.causal ? 256.0 : 128.0);
  const KernelTime time = AttentionTime(cluster.rates(), backward ? 2.5 * forward : forward,
                                        backward, key_blocks, kernel, dtype.value().fp8);
  const std::string title =
      std::string("attention ") + impl_name +
      (impl_name == "te" ? " (" + std::string(AttentionKernelName(kernel)) + ")" : "") + " " +
      pass + (flags.causal ? " causal" : "") + ", b " + std::to_string(batch.value()) + " h " +
      std::to_string(heads.value()) +
      (kv_heads != heads.value() ? " kv " + std::to_string(kv_heads) : "") + " d " +
      std::to_string(head_dim.value()) + " s " + std::to_string(seq.value()) +
      (seq_kv != seq.value() ? " s_kv " + std::to_string(seq_kv) : "") + " " + flags.dtype +
      " on " + flags.cluster;
  PrintTime(title, time, flags.json,
            {{"batch", std::to_string(batch.value())},
             {"heads", std::to_string(heads.value())},
             {"kv_heads", std::to_string(kv_heads)},
             {"head_dim", std::to_string(head_dim.value())},
             {"seq", std::to_string(seq.value())},
             {"seq_kv", std::to_string(seq_kv)}},
            transcript.out());
  return Status::Ok();
}

Status RunMemoryKernel(const KernelSpec& flags, const ClusterSpec& cluster,
                       Transcript& transcript) {
  if (!flags.dims.empty()) {
    return Error{"kernel memory: takes no extents, got '" + flags.dims.front() +
                 "' (give the bytes it reads and writes with --bytes SIZE)"};
  }
  if (!flags.bytes) return Error{"kernel memory: --bytes is required (e.g. --bytes 256MiB)"};
  auto bytes = ParseBytes(*flags.bytes);
  if (!bytes.ok()) return Error{"--bytes: " + bytes.error().message};
  if (bytes.value() < 1) return Error{"--bytes: needs at least 1 byte, got " + *flags.bytes};
  const KernelTime time = MemoryBoundTime(cluster.rates(), static_cast<double>(bytes.value()));
  PrintTime("memory-bound, " + FormatBytes(bytes.value()) + " read and written on " + flags.cluster,
            time, flags.json, {{"bytes_moved", std::to_string(bytes.value())}}, transcript.out());
  return Status::Ok();
}

}  // namespace

Status RunKernel(const KernelSpec& flags, Transcript& transcript) {
  const std::vector<std::string> ops = {"gemm", "grouped-gemm", "attention", "memory"};
  if (flags.op.empty()) return Error{"kernel: expected a kernel: " + JoinChoices(ops)};
  if (std::find(ops.begin(), ops.end(), flags.op) == ops.end()) {
    return Error{"kernel: unknown kernel '" + flags.op + "'" + DidYouMean(flags.op, ops) +
                 " (expected " + JoinChoices(ops) + ")"};
  }
  STAGECRAFT_RETURN_IF_ERROR(OnlyFor(flags.op, flags));
  auto cluster = ClusterFromPreset(flags.cluster);
  if (!cluster.ok()) return Error{"--cluster: " + cluster.error().message};
  if (flags.op == "attention") return RunAttentionKernel(flags, cluster.value(), transcript);
  if (flags.op == "memory") return RunMemoryKernel(flags, cluster.value(), transcript);
  return RunGemmKernel(flags, cluster.value(), transcript);
}

}  // namespace stagecraft
