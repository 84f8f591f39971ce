// `stagecraft bench-schedules`: every registered schedule at every microbatch count and pp of a
// sweep, each prepared (PrepareRun) and simulated (SimulateRun) exactly as `simulate` would; one
// table, and on request a CSV and two SVG plots.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "core/progress.h"
#include "core/suggest.h"
#include "core/text_table.h"
#include "core/units.h"
#include "report/svg_plot.h"
#include "run/memory_verdict.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace {

const std::vector<int32_t> kDefaultMicrobatches = {8, 16, 32, 64, 128, 256};

// One simulated point of the sweep.
struct BenchRow {
  std::string schedule;
  int32_t pp = 0;
  int32_t vpp = 0;
  int32_t microbatches = 0;
  Time makespan;
  double bubble_fraction = 0.0;
  int32_t peak_held = 0;          // max over ranks: chunk activations held from F until W (or B)
  int64_t peak_memory_bytes = 0;  // max over ranks: activations + resident shared state
  int32_t peak_activations = 0;   // max over ranks: chunk activations held at once
  int64_t state_bytes = 0;        // shared state moved between ranks per iteration
  MemoryInfo memory;              // the memory verdict (run/memory_verdict.h)
};

// The fullest device's total in bytes (model states + activations and state + reserve).
int64_t TotalMemory(const BenchRow& row) { return std::llround(row.memory.peak_bytes); }

// A point that did not run, and why.
struct Skip {
  std::string schedule;
  std::optional<std::string> pp;  // unset: the config's pp
  int32_t microbatches = 0;
  std::string reason;
};

struct Sweep {
  std::vector<BenchRow> rows;         // by pp, then schedule in registry order, then microbatches
  std::vector<Skip> skips;            // the generator (or the layout) refused the point
  std::vector<std::string> failures;  // broken schedules and deadlocks, one line each
  std::vector<std::string> notes;     // the runs' notes, once each
  std::string label;                  // what ran, from the first prepared run
};

// "8,16,32": whole numbers >= 1, sorted, duplicates dropped.
Result<std::vector<int32_t>> ParseCountList(const std::string& text, const char* flag,
                                            const char* example) {
  std::vector<int32_t> values;
  const std::string expected = std::string(" (expected comma-separated whole numbers >= 1, e.g. ") +
                               flag + " " + example + ")";
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? comma : comma - begin);
    int64_t value = 0;
    const char* end = item.data() + item.size();
    const auto [stop, error] = std::from_chars(item.data(), end, value);
    if (error == std::errc::result_out_of_range ||
        (error == std::errc() && stop == end && value > std::numeric_limits<int32_t>::max())) {
      return Error{std::string(flag) + ": '" + item + "' is out of range (at most " +
                   std::to_string(std::numeric_limits<int32_t>::max()) + ")" + expected};
    }
    if (error != std::errc() || stop != end) {
      return Error{std::string(flag) + ": '" + item + "' is not an integer" + expected};
    }
    if (value < 1) return Error{std::string(flag) + ": '" + item + "' is less than 1" + expected};
    values.push_back(static_cast<int32_t>(value));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// Flags that make no sense for a sweep, refused with what to do instead.
Status CheckSweepFlags(const RunSpec& flags, const BenchSpec& bench) {
  if (flags.schedule) {
    return Error{
        "--schedule: bench-schedules runs every schedule (stagecraft list schedules); "
        "drop --schedule, or use 'stagecraft simulate' for one"};
  }
  if (flags.microbatches) {
    return Error{
        "--microbatches: bench-schedules sweeps microbatch counts; use "
        "--microbatches-list " +
        *flags.microbatches};
  }
  if (flags.global_batch_size) {
    return Error{
        "--global-batch-size: bench-schedules sweeps microbatch counts; give them with "
        "--microbatches-list (microbatches = sequences / (dp x micro_batch_size))"};
  }
  if (flags.schedule_csv) {
    return Error{
        "--schedule-csv: bench-schedules generates its schedules; drop --schedule-csv, "
        "or use 'stagecraft simulate --schedule-csv'"};
  }
  // A bad --vpp is the user's to fix: without this check each schedule's point would fail on it,
  // be retried at vpp 2 (the sweep's rule) and the sweep would end 0 on the vpp-2 schedules.
  if (flags.vpp) {
    const std::string& text = *flags.vpp;
    int64_t value = 0;
    const auto [stop, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || stop != text.data() + text.size() || value < 1 ||
        value > std::numeric_limits<int32_t>::max()) {
      return Error{"--vpp: '" + text +
                   "' is not a chunk count (expected a whole number >= 1, e.g. --vpp 2)"};
    }
  }
  if (flags.pp && bench.pp_list) {
    return Error{"--pp " + *flags.pp + " and --pp-list " + *bench.pp_list +
                 " both set pp; give one of them"};
  }
  return Status::Ok();
}

// Prepares one point as `simulate --schedule NAME --pp P --microbatches M` would. If that fails
// and vpp is not already 2, tries once more with --vpp 2 (BenchSchedulesRule()).
Result<PreparedRun> PreparePoint(const RunSpec& base, const std::string& schedule,
                                 const std::optional<std::string>& pp, int32_t microbatches) {
  RunSpec flags = base;
  flags.schedule = schedule;
  if (pp) flags.pp = pp;
  flags.microbatches = std::to_string(microbatches);
  auto run = PrepareRun(flags);
  if (run.ok() || flags.vpp == "2") return run;
  flags.vpp = "2";
  auto retry = PrepareRun(flags);
  if (retry.ok() || retry.error().message == run.error().message) return retry;
  return Error{run.error().message + "; with vpp 2: " + retry.error().message};
}

BenchRow MakeRow(const PreparedRun& run, const RunOutcome& simulated) {
  const Metrics& metrics = simulated.metrics;
  BenchRow row;
  row.schedule = run.schedule.name;
  row.pp = run.schedule.num_ranks;
  row.vpp = run.schedule.chunks_per_rank();
  row.microbatches = run.schedule.num_microbatches;
  row.makespan = metrics.makespan;
  row.bubble_fraction = metrics.bubble_fraction;
  for (const RankMetrics& rank : metrics.ranks) {
    row.peak_memory_bytes = std::max(row.peak_memory_bytes, rank.peak_memory_bytes);
    row.peak_activations = std::max(row.peak_activations, rank.peak_activations);
    row.peak_held = std::max(row.peak_held, rank.peak_held);
  }
  row.state_bytes = metrics.state_bytes();
  row.memory = simulated.info.memory;
  return row;
}

// Simulates one prepared point and files the outcome in `sweep`.
void SimulatePoint(PreparedRun run, Sweep& sweep) {
  for (const std::string& note : run.notes) {
    if (std::find(sweep.notes.begin(), sweep.notes.end(), note) == sweep.notes.end()) {
      sweep.notes.push_back(note);
    }
  }
  run.notes.clear();  // printed once for the whole sweep
  if (sweep.label.empty()) sweep.label = run.label;
  auto simulated = SimulatePrepared(run);
  if (!simulated.ok()) {
    sweep.failures.push_back(
        run.schedule.name + " at pp " + std::to_string(run.schedule.num_ranks) + ", m " +
        std::to_string(run.schedule.num_microbatches) + ": " + simulated.error().message);
    return;
  }
  sweep.rows.push_back(MakeRow(run, simulated.value()));
}

// Every point, in table order. Fails only on an error no point can avoid (a config naming a CSV).
Result<Sweep> RunSweep(const RunSpec& flags, const std::vector<std::optional<std::string>>& pps,
                       const std::vector<int32_t>& microbatch_counts, const BenchSpec& bench) {
  Sweep sweep;
  const std::vector<std::string> names = AllScheduleNames();
  const size_t total = pps.size() * names.size() * microbatch_counts.size();
  int64_t done = 0;
  Progress progress(bench.progress, "bench-schedules: points", static_cast<int64_t>(total));
  for (const std::optional<std::string>& pp : pps) {
    for (const std::string& name : names) {
      for (int32_t microbatches : microbatch_counts) {
        if (progress.shown()) {
          progress.Update(done,
                          name + (pp ? " pp=" + *pp : "") + " m=" + std::to_string(microbatches));
        }
        ++done;
        auto run = PreparePoint(flags, name, pp, microbatches);
        if (!run.ok()) {
          sweep.skips.push_back({name, pp, microbatches, run.error().message});
          continue;
        }
        if (!run.value().config.schedule.csv.empty()) {
          return Error{run.value().label +
                       " names a schedule CSV (schedule.csv: " + run.value().config.schedule.csv +
                       "); bench-schedules generates every schedule: drop the key, or use "
                       "'stagecraft simulate'"};
        }
        SimulatePoint(std::move(run).value(), sweep);
      }
    }
  }
  return sweep;
}

// One note per schedule and pp whose consecutive skipped points share a reason, then an error
// per failed run.
void PrintSkipsAndFailures(const Sweep& sweep, std::ostream& err) {
  const std::vector<Skip>& skips = sweep.skips;
  for (size_t first = 0; first < skips.size();) {
    size_t last = first + 1;
    std::string counts = std::to_string(skips[first].microbatches);
    while (last < skips.size() && skips[last].schedule == skips[first].schedule &&
           skips[last].pp == skips[first].pp && skips[last].reason == skips[first].reason) {
      counts += ", " + std::to_string(skips[last++].microbatches);
    }
    err << "stagecraft: note: skipped " << skips[first].schedule << " ("
        << (skips[first].pp ? "pp " + *skips[first].pp + ", " : "") << "m " << counts
        << "): " << EscapeBytes(skips[first].reason) << "\n";
    first = last;
  }
  for (const std::string& failure : sweep.failures) {
    err << FormatError(Error{failure});
  }
}

// Aligned columns two spaces apart (TextTable): the first left-aligned, the others
// right-aligned; row 0 is the header.
std::string FormatTable(const std::vector<std::vector<std::string>>& cells) {
  std::vector<TextColumn> columns;
  for (size_t column = 0; column < cells.front().size(); ++column) {
    columns.push_back(
        {cells.front()[column], column == 0 ? TextAlign::kLeft : TextAlign::kRight, 0});
  }
  TextTable table("", std::move(columns), /*gap=*/2);
  for (size_t row = 1; row < cells.size(); ++row) table.AddRow(cells[row]);
  return table.Render();
}

const std::vector<std::string> kColumns = {"schedule",
                                           "pp",
                                           "vpp",
                                           "microbatches",
                                           "makespan_ms",
                                           "bubble_fraction",
                                           "peak_held",
                                           "peak_memory_bytes",
                                           "peak_activations",
                                           "state_bytes",
                                           "memory_bytes",
                                           "fits"};

// One row's cells; `human` formats bytes with binary prefixes (the table), else raw (the CSV).
std::vector<std::string> Cells(const BenchRow& row, bool human) {
  auto bytes = [human](int64_t value) {
    return human ? FormatBytes(value) : std::to_string(value);
  };
  return {row.schedule,
          std::to_string(row.pp),
          std::to_string(row.vpp),
          std::to_string(row.microbatches),
          FormatMs(row.makespan),
          FormatFixed(row.bubble_fraction, 6),
          std::to_string(row.peak_held),
          bytes(row.peak_memory_bytes),
          std::to_string(row.peak_activations),
          bytes(row.state_bytes),
          bytes(TotalMemory(row)),
          !row.memory.capacity_known ? (human ? "?" : "")
          : row.memory.fits          ? (human ? "yes" : "true")
                                     : (human ? "OVER" : "false")};
}

// The table's header: bytes columns hold "1.50 GiB", so their names drop "_bytes".
// peak_activ+state is the schedule's own peak; memory adds the model states and the reserve,
// and fits compares it with the device ("?": no capacity known).
std::string FormatBenchTable(const std::vector<BenchRow>& rows) {
  std::vector<std::string> header = kColumns;
  for (std::string& name : header) {
    if (name == "peak_memory_bytes") name = "peak_activ+state";
    if (name == "state_bytes") name = "state";
    if (name == "memory_bytes") name = "memory";
  }
  std::vector<std::vector<std::string>> cells = {header};
  for (const BenchRow& row : rows) cells.push_back(Cells(row, true));
  return FormatTable(cells);
}

std::string CsvLine(const std::vector<std::string>& cells) {
  std::string line;
  for (const std::string& cell : cells) line += (line.empty() ? "" : ",") + cell;
  return line + "\n";
}

// Schedule names hold no commas or quotes, so no cell needs quoting.
std::string FormatBenchCsv(const std::vector<BenchRow>& rows) {
  std::string text = CsvLine(kColumns);
  for (const BenchRow& row : rows) text += CsvLine(Cells(row, false));
  return text;
}

// The plotted memory: the fullest device's total (model states, activations and resident
// state, reserve: what the memory verdict compares with the device) in a binary unit, or (a
// model without activation bytes or states, where every total is 0) the peak count of chunk
// activations held from F until W (the Zero Bubble papers' accounting: a deferred W holds its
// activations, so the zero-bubble schedules do not plot as free). Both on a log2 axis: the
// schedules' peaks span orders of magnitude (gpipe grows with m, 1f1b does not).
struct MemoryAxis {
  bool bytes = false;
  double unit = 1.0;  // bytes per plotted unit
  std::string label;

  double Of(const BenchRow& row) const {
    return bytes ? static_cast<double>(TotalMemory(row)) / unit : row.peak_held;
  }
};

// The unit is the largest binary prefix under the smallest peak, so log2 ticks are >= 1.
MemoryAxis ChooseMemoryAxis(const std::vector<BenchRow>& rows) {
  int64_t least = std::numeric_limits<int64_t>::max();
  for (const BenchRow& row : rows) {
    if (TotalMemory(row) > 0) least = std::min(least, TotalMemory(row));
  }
  if (least == std::numeric_limits<int64_t>::max()) {
    return {false, 1.0, "peak activations per rank (chunks held from F until W, log2 scale)"};
  }
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t prefix = 0;
  double unit = 1.0;
  while (prefix + 1 < std::size(units) && static_cast<double>(least) >= unit * 1024.0) {
    unit *= 1024.0;
    ++prefix;
  }
  return {true, unit,
          std::string("memory of the fullest rank (") + units[prefix] + ", log2 scale)"};
}

// One series per schedule (and pp, when the sweep has several), in row order.
template <typename PointOf>
std::vector<Series> MakeSeries(const std::vector<BenchRow>& rows, bool several_pp,
                               PointOf point_of) {
  std::vector<Series> series;
  for (size_t index = 0; index < rows.size(); ++index) {
    const BenchRow& row = rows[index];
    if (index == 0 || row.schedule != rows[index - 1].schedule || row.pp != rows[index - 1].pp) {
      std::string name = row.schedule;
      if (row.vpp != 1) name += " vpp " + std::to_string(row.vpp);
      if (several_pp) name += " pp " + std::to_string(row.pp);
      series.push_back({name,
                        {},
                        {{"schedule", row.schedule},
                         {"pp", std::to_string(row.pp)},
                         {"vpp", std::to_string(row.vpp)}}});
    }
    PlotPoint point = point_of(row);
    point.label =
        series.back().name + ", m " + std::to_string(row.microbatches) + ": " + point.label;
    series.back().points.push_back(point);
  }
  return series;
}

// PREFIX-bubble.svg and PREFIX-pareto.svg.
std::vector<FileToWrite> Plots(const std::string& prefix, const Sweep& sweep) {
  const std::vector<BenchRow>& rows = sweep.rows;
  const bool several_pp = std::any_of(
      rows.begin(), rows.end(), [&](const BenchRow& row) { return row.pp != rows.front().pp; });
  PlotOptions bubble{"Bubble fraction vs microbatches (" + sweep.label +
                         (several_pp ? "" : ", pp " + std::to_string(rows.front().pp)) + ")",
                     "microbatches m (log2 scale)", "bubble fraction", true};
  const auto bubble_series = MakeSeries(rows, several_pp, [](const BenchRow& row) {
    return PlotPoint{static_cast<double>(row.microbatches), row.bubble_fraction,
                     "bubble " + FormatFixed(row.bubble_fraction, 6)};
  });
  std::vector<FileToWrite> plots = {
      {prefix + "-bubble.svg", FormatLinePlot(bubble_series, bubble)}};
  const MemoryAxis memory = ChooseMemoryAxis(rows);
  PlotOptions pareto{"Memory vs bubble fraction (" + sweep.label + ")", "bubble fraction",
                     memory.label, false, true};
  const auto pareto_series = MakeSeries(rows, several_pp, [&memory](const BenchRow& row) {
    PlotPoint point{
        row.bubble_fraction, memory.Of(row),
        "bubble " + FormatFixed(row.bubble_fraction, 6) + ", memory " +
            (memory.bytes ? FormatBytes(TotalMemory(row)) : std::to_string(row.peak_held)) +
            (row.memory.fits ? "" : " OVER")};
    point.over = !row.memory.fits;
    return point;
  });
  plots.push_back({prefix + "-pareto.svg", FormatScatterPlot(pareto_series, pareto)});
  return plots;
}

// The pp values to run: --pp-list, else the one --pp or config value (unset = the config's).
Result<std::vector<std::optional<std::string>>> PpValues(const RunSpec& flags,
                                                         const BenchSpec& bench) {
  if (!bench.pp_list) return std::vector<std::optional<std::string>>{flags.pp};
  auto list = ParseCountList(*bench.pp_list, "--pp-list", "4,8");
  if (!list.ok()) return list.error();
  std::vector<std::optional<std::string>> values;
  for (int32_t pp : list.value()) values.emplace_back(std::to_string(pp));
  return values;
}

// Nothing ran: one shared reason is the user's error; different ones are listed as notes.
Status FailEmpty(const Sweep& sweep, std::ostream& err) {
  const bool one_reason =
      !sweep.skips.empty() &&
      std::all_of(sweep.skips.begin(), sweep.skips.end(),
                  [&](const Skip& skip) { return skip.reason == sweep.skips.front().reason; });
  if (one_reason && sweep.failures.empty()) return Error{sweep.skips.front().reason};
  PrintSkipsAndFailures(sweep, err);
  return MakeError(sweep.failures.empty() ? ErrorKind::kBadInput : ErrorKind::kViolation,
                   "no schedule ran for these parameters (see the notes above; stagecraft list "
                   "schedules)");
}

}  // namespace

const char* BenchSchedulesRule() {
  return "Every registered schedule runs at every microbatch count and pp, prepared exactly as\n"
         "'stagecraft simulate --schedule NAME --pp P --microbatches M' would. A point runs at\n"
         "the configured vpp; if that is refused (e.g. interleaved-1f1b needs vpp >= 2), it\n"
         "runs at vpp 2; if both are refused (e.g. gpipe at vpp 2, interleaved-1f1b with m < p)\n"
         "it is skipped with a note giving the reason.\n";
}

Status RunBenchSchedules(const RunSpec& flags, const BenchSpec& bench, Transcript& transcript) {
  std::ostream& out = transcript.out();
  std::ostream& err = transcript.err();
  const Status usable = CheckSweepFlags(flags, bench);
  if (!usable.ok()) return usable.error();
  std::vector<int32_t> microbatch_counts = kDefaultMicrobatches;
  if (bench.microbatches_list) {
    auto list = ParseCountList(*bench.microbatches_list, "--microbatches-list", "8,16,32");
    if (!list.ok()) return list.error();
    microbatch_counts = list.value();
  }
  auto pps = PpValues(flags, bench);
  if (!pps.ok()) return pps.error();
  auto sweep = RunSweep(flags, pps.value(), microbatch_counts, bench);
  if (!sweep.ok()) return sweep.error();
  if (sweep.value().rows.empty()) return FailEmpty(sweep.value(), err);
  for (const std::string& note : sweep.value().notes)
    err << "stagecraft: note: " << EscapeBytes(note) << "\n";
  PrintSkipsAndFailures(sweep.value(), err);
  // The CSV and the plots are one output: all written or none.
  std::vector<FileToWrite> outputs;
  if (!bench.csv_path.empty()) {
    outputs.push_back({bench.csv_path, FormatBenchCsv(sweep.value().rows)});
  }
  if (!bench.svg_prefix.empty()) {
    for (FileToWrite& plot : Plots(bench.svg_prefix, sweep.value())) {
      outputs.push_back(std::move(plot));
    }
  }
  if (!outputs.empty()) {
    const Status written = flags.files.write_all(outputs);
    const std::string flag = bench.csv_path.empty()     ? "--svg-prefix"
                             : bench.svg_prefix.empty() ? "--csv"
                                                        : "--csv, --svg-prefix";
    if (!written.ok()) return Error{flag + ": " + written.error().message};
  }
  out << FormatBenchTable(sweep.value().rows);
  if (sweep.value().failures.empty()) return Status::Ok();
  return MakeError(ErrorKind::kViolation, "");
}

}  // namespace stagecraft
