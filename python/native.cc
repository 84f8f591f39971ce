// The Python module's native half (`stagecraft._native`, pybind11): each call builds a RunSpec
// (or PlanSpec) from a config file, text or dict-as-JSON and overrides named like the flags or
// the config keys (run/run_setup.h's RunOverrides table), runs the run library with the GIL
// released, and returns (ok, kind, message, answer, diagnostics): the command's JSON answer as
// the CLI prints it, so Python's objects carry the JSON's field names by construction. The
// Python half (stagecraft/__init__.py) turns them into objects and exceptions.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "commands/commands.h"
#include "commands/goodput_command.h"
#include "commands/plan_report.h"
#include "commands/serve_command.h"
#include "core/suggest.h"
#include "core/units.h"
#include "schedule/schedule_csv.h"

namespace py = pybind11;

namespace stagecraft {
namespace {

using Answer = std::tuple<bool, std::string, std::string, std::string, std::string>;

const char* KindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadInput:
      return "bad_input";
    case ErrorKind::kInfeasible:
      return "infeasible";
    case ErrorKind::kViolation:
      return "violation";
    case ErrorKind::kDeadlock:
      return "deadlock";
  }
  return "bad_input";
}

// `overrides` by flag name without dashes ("pp", "micro_batch_size") or by config key
// ("parallel.pp"); an unknown name is bad input with "did you mean".
Status ApplyOverrides(const std::map<std::string, std::string>& overrides, RunSpec& spec) {
  for (const auto& [name, value] : overrides) {
    std::string flag = "--" + name;
    for (char& c : flag) c = c == '_' ? '-' : c;
    const RunOverride* found = nullptr;
    std::vector<std::string> names;
    for (const RunOverride& row : RunOverrides()) {
      std::string bare = std::string(row.flag).substr(2);
      for (char& c : bare) c = c == '-' ? '_' : c;
      names.push_back(bare);
      if (flag == row.flag || name == row.config_path) found = &row;
    }
    if (found == nullptr) {
      return Error{"unknown override '" + name + "'" + DidYouMean(name, names) +
                   " (expected a run flag's name, e.g. pp=8 or micro_batch_size=2)"};
    }
    spec.*(found->field) = value;
  }
  return Status::Ok();
}

RunSpec SpecOf(const std::string& path, const std::optional<std::string>& text,
               const std::map<std::string, std::string>& overrides, Status& status) {
  RunSpec spec;
  spec.config_path = path;
  if (text) {
    spec.config_text = *text;
    if (spec.config_path.empty()) spec.config_path = "config.yaml";
  }
  status = ApplyOverrides(overrides, spec);
  return spec;
}

Answer Finish(const Transcript& transcript, const Status& status) {
  const std::string answer = transcript.Text(Transcript::Channel::kAnswer);
  const std::string diagnostics = transcript.Text(Transcript::Channel::kDiagnostic);
  if (status.ok()) return {true, "", "", answer, diagnostics};
  const Error& error = status.error();
  std::string message = error.message;
  if (!error.detail.empty()) message += (message.empty() ? "" : "\n") + error.detail;
  if (message.empty()) message = diagnostics;  // the command said it already
  return {false, KindName(error.kind), message, answer, diagnostics};
}

template <typename Run>
Answer RunReleased(Run run) {
  Transcript transcript;
  Status status;
  {
    py::gil_scoped_release released;
    status = run(transcript);
  }
  return Finish(transcript, status);
}

// The name a schedule handed in from Python is read under (its CSV text served by the spec's
// injected files; every other path goes to the disk).
constexpr const char* kPythonSchedule = "<python schedule>.csv";

void ServeSchedule(const std::optional<std::string>& csv, RunSpec& spec) {
  if (!csv) return;
  spec.schedule_csv = kPythonSchedule;
  spec.files.read = [csv](const std::string& path) -> Result<std::string> {
    if (path == kPythonSchedule) return *csv;
    return LocalFiles().read(path);
  };
}

// Builds the run's spec (with a schedule handed in from Python, when given), then runs
// `command` on it with the GIL released.
template <typename Command>
Answer OnSpec(const std::string& path, const std::optional<std::string>& text,
              const std::map<std::string, std::string>& overrides,
              const std::optional<std::string>& schedule_csv, Command command) {
  Status status;
  RunSpec spec = SpecOf(path, text, overrides, status);
  if (!status.ok()) return Finish(Transcript(), status);
  ServeSchedule(schedule_csv, spec);
  return RunReleased([&](Transcript& t) { return command(spec, t); });
}

using Overrides = std::map<std::string, std::string>;
using Text = std::optional<std::string>;

// The schedule a run would simulate, as torch.distributed.pipelining's compute-only CSV.
Answer PySchedule(const std::string& path, const Text& text, const Overrides& overrides) {
  return OnSpec(path, text, overrides, std::nullopt, [](const RunSpec& spec, Transcript& t) {
    auto run = PrepareRun(spec);
    if (!run.ok()) return Status(run.error());
    t.out() << WriteScheduleCsv(run.value().schedule);
    return Status::Ok();
  });
}

Answer PySimulate(const std::string& path, const Text& text, const Overrides& overrides,
                  const Text& schedule_csv, const Text& report) {
  return OnSpec(path, text, overrides, schedule_csv, [&](const RunSpec& spec, Transcript& t) {
    OutputSpec output;
    output.json = true;
    output.report_path = report;
    return RunSimulate(spec, output, t);
  });
}

Answer PyDerive(const std::string& path, const Text& text, const Overrides& overrides) {
  return OnSpec(path, text, overrides, std::nullopt, [](const RunSpec& spec, Transcript& t) {
    return RunDerive(spec, /*json=*/true, t);
  });
}

Answer PyMemory(const std::string& path, const Text& text, const Overrides& overrides) {
  return OnSpec(path, text, overrides, std::nullopt, [](const RunSpec& spec, Transcript& t) {
    return RunMemory(spec, /*json=*/true, t);
  });
}

Answer PyCheck(const std::string& path, const Text& text, const Overrides& overrides,
               const Text& schedule_csv) {
  return OnSpec(path, text, overrides, schedule_csv,
                [](const RunSpec& spec, Transcript& t) { return RunCheck(spec, t); });
}

Answer PyPlan(const std::string& path, const std::optional<std::string>& text,
              const std::map<std::string, std::string>& overrides, int32_t gpus,
              int64_t global_batch, const std::string& engine, int32_t top, int32_t jobs,
              const Text& report) {
  Status status;
  PlanSpec spec;
  spec.run = SpecOf(path, text, overrides, status);
  if (!status.ok()) return Finish(Transcript(), status);
  spec.gpus = gpus;
  spec.global_batch = global_batch;
  spec.top = top;
  auto chosen = ParseEngine(engine, "engine");
  if (!chosen.ok()) return Finish(Transcript(), chosen.error());
  spec.engine = chosen.value();
  spec.jobs = jobs;
  spec.report_path = report.value_or("");
  return RunReleased([&](Transcript& t) { return RunPlan(spec, /*json=*/true, t); });
}

// A command's own options by their flag's name without dashes (`rate`, `prompt_tokens`), each
// setting one field of its spec from the text the flag would take; "did you mean" otherwise.
template <typename Spec>
struct Option {
  const char* name;
  std::function<Status(const std::string& value, Spec& spec)> set;
};

template <typename Spec>
Status SetOption(const std::vector<Option<Spec>>& options, const std::string& name,
                 const std::string& value, Spec& spec, bool& known) {
  for (const Option<Spec>& option : options) {
    if (name == option.name) {
      known = true;
      return option.set(value, spec);
    }
  }
  known = false;
  return Status::Ok();
}

template <typename Spec>
std::vector<std::string> OptionNames(const std::vector<Option<Spec>>& options) {
  std::vector<std::string> names;
  for (const Option<Spec>& option : options) names.push_back(option.name);
  return names;
}

// Whole numbers and reals as their flags take them; errors name the option.
template <typename Number>
Result<Number> ParseNumber(const char* name, const std::string& value) {
  Number number{};
  const char* end = value.data() + value.size();
  const auto [at, error] = std::from_chars(value.data(), end, number);
  if (value.empty() || error != std::errc() || at != end) {
    return Error{std::string(name) + "='" + value + "': expected a number"};
  }
  return number;
}

template <typename T>
struct Unwrapped {
  using type = T;
};
template <typename T>
struct Unwrapped<std::optional<T>> {
  using type = T;
};

// A number field, or an optional one (set when given).
template <typename Spec, typename Field>
Option<Spec> NumberOption(const char* name, Field Spec::*field) {
  return {name, [name, field](const std::string& value, Spec& spec) -> Status {
            auto number = ParseNumber<typename Unwrapped<Field>::type>(name, value);
            if (!number.ok()) return number.error();
            spec.*field = number.value();
            return Status::Ok();
          }};
}

template <typename Spec, typename Field>
Option<Spec> TextOption(const char* name, Field Spec::*field) {
  return {name, [field](const std::string& value, Spec& spec) -> Status {
            spec.*field = value;
            return Status::Ok();
          }};
}

template <typename Spec>
Option<Spec> FlagOption(const char* name, bool Spec::*field) {
  return {name, [name, field](const std::string& value, Spec& spec) -> Status {
            if (value != "true" && value != "false") {
              return Error{std::string(name) + "='" + value + "': expected True or False"};
            }
            spec.*field = value == "true";
            return Status::Ok();
          }};
}

// serve's flags (commands/serve_command.h); the rest of the names are run overrides (cluster=,
// hf_config=).
const std::vector<Option<ServeSpec>>& ServeOptions() {
  static const std::vector<Option<ServeSpec>> options = {
      NumberOption("tp", &ServeSpec::tp),
      NumberOption("pp", &ServeSpec::pp),
      NumberOption("ep", &ServeSpec::ep),
      NumberOption("replicas", &ServeSpec::replicas),
      NumberOption("prefill_instances", &ServeSpec::prefill_instances),
      NumberOption("decode_instances", &ServeSpec::decode_instances),
      NumberOption("rate", &ServeSpec::rate_rps),
      NumberOption("concurrency", &ServeSpec::concurrency),
      FlagOption("offline", &ServeSpec::offline),
      NumberOption("arrival_cv", &ServeSpec::arrival_cv),
      NumberOption("requests", &ServeSpec::requests),
      NumberOption("seed", &ServeSpec::seed),
      TextOption("prompt_tokens", &ServeSpec::prompt_tokens),
      TextOption("output_tokens", &ServeSpec::output_tokens),
      TextOption("routing", &ServeSpec::routing),
      NumberOption("prefix_groups", &ServeSpec::prefix_groups),
      NumberOption("prefix_tokens", &ServeSpec::prefix_tokens),
      TextOption("slo", &ServeSpec::slo),
      // The engine's flags (EngineFlags, a base of ServeSpec): named for ServeSpec.
      TextOption<ServeSpec, std::string>("engine", &ServeSpec::engine),
      TextOption<ServeSpec, std::string>("weight_dtype", &ServeSpec::weight_dtype),
      TextOption<ServeSpec, std::string>("kv_dtype", &ServeSpec::kv_dtype),
      TextOption<ServeSpec, std::string>("batching", &ServeSpec::batching),
      NumberOption<ServeSpec, std::optional<int64_t>>("max_num_seqs", &ServeSpec::max_num_seqs),
      NumberOption<ServeSpec, std::optional<int64_t>>("max_num_batched_tokens",
                                                      &ServeSpec::max_num_batched_tokens),
      NumberOption<ServeSpec, std::optional<double>>("kv_memory_fraction",
                                                     &ServeSpec::kv_memory_fraction),
      TextOption("request_trace", &ServeSpec::request_trace),
      FlagOption("eager", &ServeSpec::eager),
  };
  return options;
}

Answer PyServe(const std::string& path, const Text& text, const Overrides& options,
               const Text& report) {
  ServeSpec spec;
  Overrides overrides;
  for (const auto& [name, value] : options) {
    bool known = false;
    const Status set = SetOption(ServeOptions(), name, value, spec, known);
    if (!set.ok()) return Finish(Transcript(), set);
    if (!known) overrides[name] = value;
  }
  Status status;
  spec.run = SpecOf(path, text, overrides, status);
  if (!status.ok()) {
    std::vector<std::string> names = OptionNames(ServeOptions());
    status = Error{status.error().message + "; serve's own options: " + JoinChoices(names)};
    return Finish(Transcript(), status);
  }
  spec.json = true;
  spec.report_path = report.value_or("");
  return RunReleased([&](Transcript& t) { return RunServe(spec, t); });
}

// goodput's flags (commands/goodput_command.h): every one is text the command parses itself.
const std::vector<Option<GoodputSpec>>& GoodputOptions() {
  static const std::vector<Option<GoodputSpec>> options = {
      TextOption("gpus", &GoodputSpec::gpus),
      TextOption("gpus_per_node", &GoodputSpec::gpus_per_node),
      TextOption("failures_per_1000_node_days", &GoodputSpec::failures_per_1000_node_days),
      TextOption("mtbf_hours", &GoodputSpec::mtbf_hours),
      TextOption("failure_trace", &GoodputSpec::failure_trace),
      TextOption("failure_preset", &GoodputSpec::failure_preset),
      TextOption("checkpoint_blocking", &GoodputSpec::checkpoint_blocking),
      TextOption("checkpoint_persist", &GoodputSpec::checkpoint_persist),
      TextOption("restart", &GoodputSpec::restart),
      TextOption("detection", &GoodputSpec::detection),
      TextOption("reschedule", &GoodputSpec::reschedule),
      TextOption("init", &GoodputSpec::init),
      TextOption("load", &GoodputSpec::load),
      TextOption("warmup", &GoodputSpec::warmup),
      TextOption("interval", &GoodputSpec::interval),
      TextOption("tokens", &GoodputSpec::tokens),
      TextOption("days", &GoodputSpec::days),
      TextOption("monte_carlo", &GoodputSpec::monte_carlo),
      TextOption("seed", &GoodputSpec::seed),
      TextOption("weibull_shape", &GoodputSpec::weibull_shape),
      TextOption("spares", &GoodputSpec::spares),
      TextOption("repair_time", &GoodputSpec::repair_time),
      TextOption("correlated", &GoodputSpec::correlated),
      TextOption("fp16_overflow_probability", &GoodputSpec::fp16_overflow),
      TextOption("storage", &GoodputSpec::storage),
      FlagOption("sync_save", &GoodputSpec::sync_save),
  };
  return options;
}

Answer PyGoodput(const std::string& path, const Overrides& options, const Text& report) {
  GoodputSpec spec;
  spec.config_path = path;
  for (const auto& [name, value] : options) {
    bool known = false;
    const Status set = SetOption(GoodputOptions(), name, value, spec, known);
    if (!set.ok()) return Finish(Transcript(), set);
    if (!known) {
      const std::vector<std::string> names = OptionNames(GoodputOptions());
      return Finish(Transcript(), Error{"unknown option '" + name + "'" + DidYouMean(name, names) +
                                        " (goodput's options are its flags' names, e.g. "
                                        "checkpoint_blocking='0.6s')"});
    }
  }
  spec.json = true;
  spec.report_path = report.value_or("");
  return RunReleased([&](Transcript& t) { return RunGoodput(spec, t); });
}

// `stagecraft kernel OP EXTENTS... --json`, with the flags by name without dashes (batch,
// heads, kv_heads, head_dim, seq, seq_kv, causal, pass, impl, bytes, dtype, cluster, in_step).
// A call costs microseconds: it runs with the GIL held.
Answer PyKernel(const std::string& op, const std::vector<std::string>& extents,
                const Overrides& options) {
  KernelSpec spec;
  spec.op = op;
  spec.dims = extents;
  spec.json = true;
  using Field = std::optional<std::string> KernelSpec::*;
  static const std::vector<std::pair<std::string, Field>> kText = {
      {"batch", &KernelSpec::batch},       {"heads", &KernelSpec::heads},
      {"kv_heads", &KernelSpec::kv_heads}, {"head_dim", &KernelSpec::head_dim},
      {"seq", &KernelSpec::seq},           {"seq_kv", &KernelSpec::seq_kv},
      {"pass", &KernelSpec::pass},         {"impl", &KernelSpec::impl},
      {"bytes", &KernelSpec::bytes}};
  std::vector<std::string> names = {"causal", "in_step", "dtype", "cluster"};
  for (const auto& [name, field] : kText) names.push_back(name);
  for (const auto& [name, value] : options) {
    const auto text = std::find_if(kText.begin(), kText.end(),
                                   [&](const auto& row) { return row.first == name; });
    if (text != kText.end()) {
      spec.*(text->second) = value;
    } else if (name == "dtype") {
      spec.dtype = value;
    } else if (name == "cluster") {
      spec.cluster = value;
    } else if (name == "causal" || name == "in_step") {
      if (value != "true" && value != "false") {
        return Finish(Transcript(), Error{name + ": expected True or False, got '" + value + "'"});
      }
      (name == "causal" ? spec.causal : spec.in_step) = value == "true";
    } else {
      return Finish(Transcript(), Error{"unknown option '" + name + "'" + DidYouMean(name, names) +
                                        " (kernel's options are its flags' names, e.g. "
                                        "head_dim=128)"});
    }
  }
  Transcript transcript;
  const Status status = RunKernel(spec, transcript);
  return Finish(transcript, status);
}

}  // namespace
}  // namespace stagecraft

PYBIND11_MODULE(_native, module) {
  module.doc() = "stagecraft's run library (use the stagecraft package, not this module)";
  module.attr("version") = STAGECRAFT_VERSION;  // CMakeLists.txt's project version
  using stagecraft::Answer;
  module.def("simulate", &stagecraft::PySimulate, py::arg("path"), py::arg("text"),
             py::arg("overrides"), py::arg("schedule_csv"), py::arg("report"));
  module.def("schedule", &stagecraft::PySchedule, py::arg("path"), py::arg("text"),
             py::arg("overrides"));
  module.def("derive", &stagecraft::PyDerive, py::arg("path"), py::arg("text"),
             py::arg("overrides"));
  module.def("memory", &stagecraft::PyMemory, py::arg("path"), py::arg("text"),
             py::arg("overrides"));
  module.def("check", &stagecraft::PyCheck, py::arg("path"), py::arg("text"), py::arg("overrides"),
             py::arg("schedule_csv"));
  module.def("plan", &stagecraft::PyPlan, py::arg("path"), py::arg("text"), py::arg("overrides"),
             py::arg("gpus"), py::arg("global_batch"), py::arg("engine"), py::arg("top"),
             py::arg("jobs"), py::arg("report"));
  module.def("serve", &stagecraft::PyServe, py::arg("path"), py::arg("text"), py::arg("options"),
             py::arg("report"));
  module.def("kernel", &stagecraft::PyKernel, py::arg("op"), py::arg("extents"),
             py::arg("options"));
  module.def("goodput", &stagecraft::PyGoodput, py::arg("path"), py::arg("options"),
             py::arg("report"));
}
