// The Python module's native half (`stagecraft._native`, pybind11): each call builds a RunSpec
// (or PlanSpec) from a config file, text or dict-as-JSON and overrides named like the flags or
// the config keys (run/run_setup.h's RunOverrides table), runs the run library with the GIL
// released, and returns (ok, kind, message, answer, diagnostics): the command's JSON answer as
// the CLI prints it, so Python's objects carry the JSON's field names by construction. The
// Python half (stagecraft/__init__.py) turns them into objects and exceptions.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/suggest.h"
#include "plan/plan.h"
#include "run/commands.h"
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
                  const Text& schedule_csv) {
  return OnSpec(path, text, overrides, schedule_csv, [](const RunSpec& spec, Transcript& t) {
    OutputSpec output;
    output.json = true;
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
              int64_t global_batch, const std::string& engine, int32_t top) {
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
  return RunReleased([&](Transcript& t) { return RunPlan(spec, /*json=*/true, t); });
}

}  // namespace
}  // namespace stagecraft

PYBIND11_MODULE(_native, module) {
  module.doc() = "stagecraft's run library (use the stagecraft package, not this module)";
  using stagecraft::Answer;
  module.def("simulate", &stagecraft::PySimulate, py::arg("path"), py::arg("text"),
             py::arg("overrides"), py::arg("schedule_csv"));
  module.def("schedule", &stagecraft::PySchedule, py::arg("path"), py::arg("text"),
             py::arg("overrides"));
  module.def("derive", &stagecraft::PyDerive, py::arg("path"), py::arg("text"),
             py::arg("overrides"));
  module.def("memory", &stagecraft::PyMemory, py::arg("path"), py::arg("text"),
             py::arg("overrides"));
  module.def("check", &stagecraft::PyCheck, py::arg("path"), py::arg("text"), py::arg("overrides"),
             py::arg("schedule_csv"));
  module.def("plan", &stagecraft::PyPlan, py::arg("path"), py::arg("text"), py::arg("overrides"),
             py::arg("gpus"), py::arg("global_batch"), py::arg("engine"), py::arg("top"));
}
