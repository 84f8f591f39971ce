// libFuzzer target: the command line (RunCli, cli/app.h) with in-memory streams. The input is the
// argument list, one argument per line, after the program name. Every input must end in an exit
// code (0, 1 or 2) without a crash or sanitizer report.
//
// To keep each run short and the file system untouched, inputs are skipped (not run) when they
// name a flag that writes a file (--trace, --csv, --svg-prefix, --write-schedule-csv, --report,
// plan's --export, export's --out, goodput's --plot) or searches a whole published space
// (serve-plan --space: thousands of simulations; golden tests serve/vidur-space*), or hold a number
// above 64 (a pipeline of 10^5 ranks is valid and takes seconds: the size limits have their own
// golden tests; above 4 for `bench-schedules`), or run `validate` or `bench-schedules` on the
// bundled model (below). scripts/fuzz.sh runs it in tests/golden/errors, so '../data/...' paths of
// the seed corpus resolve.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/app.h"

namespace {

bool Skipped(const std::string& argument, int64_t largest_number) {
  for (const char* writer :
       {"--trace", "--csv", "--svg", "--write", "--report", "--export", "--plot", "--space"}) {
    if (argument.find(writer) != std::string::npos) return true;
  }
  // `export --out DIR` (not serve's --output-tokens).
  if (argument == "--out" || argument.rfind("--out=", 0) == 0) return true;
  int64_t number = 0;
  bool in_number = false;
  for (size_t pos = 0; pos < argument.size(); ++pos) {
    const char c = argument[pos];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      number = in_number ? number * 10 + (c - '0') : c - '0';
      in_number = true;
      if (number > largest_number) return true;
    } else {
      if (in_number && (c == 'e' || c == 'E')) return true;  // 1e9
      in_number = false;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> arguments = {"stagecraft"};
  std::string current;
  for (size_t pos = 0; pos < size; ++pos) {
    if (data[pos] == '\n') {
      arguments.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(data[pos]);
    }
  }
  if (!current.empty()) arguments.push_back(current);
  if (arguments.size() > 24) return 0;
  // `validate` is one fixed computation (115 simulated runs, 13-17 s under ASan, past the
  // 10 s timeout); its YAML files are fuzz_config's. So is `bench-schedules` on the bundled
  // model (no config named: DeepSeek-V4.1-Flash, every schedule at 8 to 256 microbatches, about
  // 10 s of CPU under ASan); with a config file it is fuzzed, its numbers up to 4: it sweeps
  // every schedule at 8 to 256 microbatches per pp, and a valid sweep at pp 16 takes over 10 s
  // under ASan with coverage (at pp 44-64, 30-70 s: timeouts on a loaded machine), work the
  // fuzzer cannot afford a million times. The command is found wherever it stands (CLI11 takes a
  // subcommand after stray positionals too). The checks read each argument as the program sees
  // it, up to its first NUL byte.
  const auto seen = [&](size_t index) { return std::string_view(arguments[index].c_str()); };
  int64_t largest_number = 64;
  bool bench = false;
  bool names_config = false;
  for (size_t index = 1; index < arguments.size(); ++index) {
    const std::string_view argument = seen(index);
    if (argument == "validate") return 0;
    bench = bench || argument == "bench-schedules";
    names_config = names_config || argument.ends_with(".yaml") || argument.ends_with(".yml");
  }
  if (bench) {
    if (!names_config) return 0;
    largest_number = 4;
  }
  std::vector<const char*> argv;
  for (const std::string& argument : arguments) {
    if (Skipped(argument, largest_number)) return 0;
    argv.push_back(argument.c_str());
  }
  std::ostringstream out;
  std::ostringstream err;
  const int code = stagecraft::RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
  if (code < 0 || code > 2) __builtin_trap();
  return 0;
}
