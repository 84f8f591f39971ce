#include "cli/app.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>

#include "analysis/metrics.h"
#include "cli/command_flags.h"
#include "cli/help_footers.h"
#include "core/internal_error.h"
#include "core/progress.h"
#include "core/suggest.h"

namespace stagecraft {
namespace {

// The one place an error kind becomes an exit code: bad input 2; a violation, a deadlock or an
// infeasible layout 1 (the answer was given, and it is no).
int ExitCode(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadInput:
      return 2;
    case ErrorKind::kInfeasible:
    case ErrorKind::kViolation:
    case ErrorKind::kDeadlock:
      return 1;
  }
  return 2;
}

// Replays what a command said onto the two streams, then its error, and picks the exit code.
int Finish(const Transcript& transcript, const Status& status, std::ostream& out,
           std::ostream& err) {
  errno = 0;  // a failed write to stdout leaves its reason here for FinishStdout
  for (const Transcript::Piece& piece : transcript.pieces()) {
    (piece.channel == Transcript::Channel::kAnswer ? out : err) << piece.text;
  }
  if (status.ok()) return 0;
  err << FormatError(status.error());
  return ExitCode(status.error().kind);
}

int UsageError(const std::string& message, std::ostream& err) {
  err << "stagecraft: error: " << EscapeMessage(message)
      << "\nRun 'stagecraft --help' or 'stagecraft COMMAND --help' for usage.\n";
  return ExitCode(ErrorKind::kBadInput);
}

// The text between `prefix` and `suffix` in `message`, or "" when it is not there.
std::string Between(const std::string& message, const std::string& prefix,
                    const std::string& suffix) {
  if (message.rfind(prefix, 0) != 0) return "";
  const size_t end = suffix.empty() ? message.size() : message.find(suffix, prefix.size());
  if (end == std::string::npos) return "";
  return message.substr(prefix.size(), end - prefix.size());
}

// CLI11's parse errors in the project's words: the flag, the bad value, what was expected.
// `command` is the subcommand being parsed ("" before one was named).
std::string PhraseParseError(const CLI::ParseError& error, const std::string& command) {
  const std::string message = error.what();
  const std::string in = command.empty() ? "" : command + ": ";
  if (dynamic_cast<const CLI::ConversionError*>(&error) != nullptr) {
    // "Could not convert: --ranks = nan"
    const std::string rest = Between(message, "Could not convert: ", "");
    const size_t equals = rest.find(" = ");
    if (equals != std::string::npos) {
      return rest.substr(0, equals) + ": '" + rest.substr(equals + 3) +
             "' is not a number (expected a number, see 'stagecraft " + command + " --help')";
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    const size_t colon = message.find(": ");
    const std::string flag = message.substr(0, colon);
    if (message.find(": At Most ") != std::string::npos) {
      return flag + ": given more than once (expected it at most once)";
    }
    if (colon != std::string::npos && message.find(" missing", colon) != std::string::npos) {
      return flag + ": expected a value after it";
    }
  }
  if (dynamic_cast<const CLI::ValidationError*>(&error) != nullptr) {
    return message;  // "--report: expected a file name, ..." (command_flags.cc, OutputPath)
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    const std::string what = Between(message, "", " is required");
    if (!what.empty()) return in + "missing the " + what + " argument";
  }
  return in + message;
}

// Every long flag a command takes ("--pp", ...), for "did you mean".
std::vector<std::string> FlagsOf(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

// Arguments CLI11 did not recognise: an unknown flag gets "did you mean", a stray word is named.
std::string ExtraArgumentsMessage(const CLI::App& command, const std::vector<std::string>& extras) {
  const std::string& first = extras.front();
  // A topic of `multimodal` is named with its parent: "multimodal cp".
  const bool nested = command.get_parent() != nullptr && command.get_parent()->get_parent();
  const std::string name =
      nested ? command.get_parent()->get_name() + " " + command.get_name() : command.get_name();
  if (first.rfind("-", 0) == 0) {
    const std::string flag = first.substr(0, first.find('='));
    const std::vector<std::string> flags = FlagsOf(command);
    return "unknown flag '" + flag + "' for '" + name + "'" + DidYouMean(flag, flags) +
           " (stagecraft " + name + " --help)";
  }
  return "unexpected argument '" + first + "' for '" + name + "'" +
         (nested ? std::string(" (it takes flags only)") : " (it takes at most one config file)");
}

// On a terminal and without --json, a progress line redrawn in place ("" clears it); elsewhere
// none, so piped output never changes (core/progress.h throttles and formats the line).
ProgressSink TerminalProgress(std::ostream& err, bool json) {
  if (json || &err != &std::cerr || isatty(STDERR_FILENO) != 1) return nullptr;
  return [&err](const std::string& line) { err << "\r" << line << "\033[K" << std::flush; };
}

// `multimodal TOPIC`: the chosen topic's flags are parsed; an unknown topic gets "did you mean".
int DispatchMultimodal(const CLI::App& multimodal, MultimodalTablesSpec& flags, std::ostream& out,
                       std::ostream& err) {
  Transcript transcript;
  const std::vector<CLI::App*> topics = multimodal.get_subcommands();
  if (topics.empty()) {
    const std::vector<std::string> extras = multimodal.remaining();
    flags.topic = extras.empty() || extras.front().rfind("-", 0) == 0 ? "" : extras.front();
    const Status status = RunMultimodal(flags, transcript);
    return Finish(transcript, status, out, err);
  }
  const std::vector<std::string> extras = topics.front()->remaining();
  if (!extras.empty()) {
    // A flag of another topic (the topics once shared their flags): name the topics that take it.
    const std::string flag = extras.front().substr(0, extras.front().find('='));
    std::vector<std::string> owners;
    for (const CLI::App* topic : multimodal.get_subcommands({})) {
      const std::vector<std::string> names = FlagsOf(*topic);
      if (std::find(names.begin(), names.end(), flag) != names.end()) {
        owners.push_back("'multimodal " + topic->get_name() + "'");
      }
    }
    std::string message = ExtraArgumentsMessage(*topics.front(), extras);
    if (!owners.empty()) {
      message += "; " + flag + " is a flag of " + owners.front();
      for (size_t index = 1; index < owners.size(); ++index) {
        message += (index + 1 == owners.size() ? " and " : ", ") + owners[index];
      }
    }
    return UsageError(message, err);
  }
  flags.topic = topics.front()->get_name();
  const Status status = RunMultimodal(flags, transcript);
  return Finish(transcript, status, out, err);
}

// `plan`: the engine by name, progress on a terminal, then the planner.
Status RunPlanCommand(PlanSpec& spec, const PlanConstraintText& constraints,
                      const std::string& engine, const std::vector<std::string>& export_to,
                      bool json, std::ostream& err, Transcript& transcript) {
  auto parsed = ParsePlanConstraints(constraints);
  if (!parsed.ok()) return parsed.error();
  spec.constraints = std::move(parsed).value();
  auto chosen = ParseEngine(engine, "--engine");
  if (!chosen.ok()) return chosen.error();
  spec.engine = chosen.value();
  if (export_to.size() == 2) {
    auto exported = ParseEngine(export_to[0], "--export");
    if (!exported.ok()) return exported.error();
    spec.export_engine = exported.value();
    spec.export_dir = export_to[1];
  }
  if (spec.top < 1) return Error{"--top: must be at least 1, got " + std::to_string(spec.top)};
  if (spec.simulate < 1) {
    return Error{"--simulate: must be at least 1, got " + std::to_string(spec.simulate)};
  }
  if (spec.max_pp && *spec.max_pp < 1) return Error{"--max-pp: must be at least 1"};
  spec.progress = TerminalProgress(err, json);
  return RunPlan(spec, json, transcript);
}

// `export`: the engine by name, then the export.
Status RunExportCommand(ExportSpec& spec, const std::string& engine, Transcript& transcript) {
  if (engine.empty()) {
    return Error{"export: --engine ENGINE is required (megatron, torchtitan or deepspeed)"};
  }
  auto chosen = ParseEngine(engine, "--engine");
  if (!chosen.ok()) return chosen.error();
  spec.engine = chosen.value();
  return RunExport(spec, transcript);
}

// One command of the command line, in the manner of ninja's tool table: its name, its help line
// and footer, the flags it adds (bound to CliFlags), and what runs once it is parsed (nullptr:
// it dispatches its own subcommands).
struct Command {
  const char* name;
  const char* help;
  std::string (*footer)();
  void (*add_flags)(CLI::App* command, CliFlags& flags);
  Status (*run)(CliFlags& flags, std::ostream& err, Transcript& transcript);
};

// Every command, in the order --help lists them and errors name them.
const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = {
      {"simulate", "simulate one training iteration",
       []() -> std::string { return MetricDefinitions(); },
       [](CLI::App* c, CliFlags& f) { AddSimulateFlags(c, f.run, f.output); },
       [](CliFlags& f, std::ostream& err, Transcript& t) {
         f.output.progress = TerminalProgress(err, f.output.json);
         return RunSimulate(f.run, f.output, t);
       }},
      {"check",
       "validate a config or a schedule CSV: every violation, deadlocks under each p2p mode",
       []() -> std::string { return CheckHelpFooter(); },
       [](CLI::App* c, CliFlags& f) { AddRunFlags(*c, f.run); },
       [](CliFlags& f, std::ostream&, Transcript& t) { return RunCheck(f.run, t); }},
      {"derive",
       "closed forms by model kind: the schedule's bubble with its numbers next to the simulated "
       "value, per-layer FLOPs and parameters, KV cache bytes per token",
       []() -> std::string { return MetricDefinitions(); },
       [](CLI::App* c, CliFlags& f) { AddDeriveFlags(c, f.run, f.derive_json); },
       [](CliFlags& f, std::ostream&, Transcript& t) {
         return RunDerive(f.run, f.derive_json, t);
       }},
      {"list",
       "list the choices: schedules, placements, p2p, metrics, presets, collectives, vision",
       []() -> std::string { return ListHelpFooter(); },
       [](CLI::App* c, CliFlags& f) { AddListFlags(c, f.list_what); },
       [](CliFlags& f, std::ostream&, Transcript& t) { return RunList(f.list_what, t); }},
      {"bench-schedules",
       "simulate every schedule over microbatch counts (and pp values): table, CSV, SVG plots",
       []() -> std::string { return BenchSchedulesRule(); },
       [](CLI::App* c, CliFlags& f) { AddBenchFlags(c, f.run, f.bench); },
       [](CliFlags& f, std::ostream& err, Transcript& t) {
         f.bench.progress = TerminalProgress(err, false);
         return RunBenchSchedules(f.run, f.bench, t);
       }},
      {"comm", "the cost of one collective on a preset cluster (alpha-beta, nccl-tests busbw)",
       []() -> std::string { return CommHelpFooter(); },
       [](CLI::App* c, CliFlags& f) { AddCommFlags(c, f.comm); },
       [](CliFlags& f, std::ostream&, Transcript& t) { return RunComm(f.comm, t); }},
      {"memory", "memory per device: model states, activations, shared state vs capacity",
       []() -> std::string { return MemoryHelpFooter(); },
       [](CLI::App* c, CliFlags& f) { AddMemoryFlags(c, f.run, f.memory_json); },
       [](CliFlags& f, std::ostream&, Transcript& t) {
         return RunMemory(f.run, f.memory_json, t);
       }},
      {"multimodal",
       "multimodal cost tables: contrastive losses, Engram tables, CP indexer balance, images",
       []() -> std::string {
         return std::string(
             "Topics are subcommands with their own flags: stagecraft multimodal TOPIC --help.");
       },
       [](CLI::App* c, CliFlags& f) { AddMultimodalFlags(c, f.multimodal); },
       nullptr},  // its topics are subcommands of their own (DispatchMultimodal)
      {"validate", "the cost model against published measured runs (doc/fidelity.md)",
       []() -> std::string { return ValidateHelpFooter(); },
       [](CLI::App* c, CliFlags& f) { AddValidateFlags(c, f.validate); },
       [](CliFlags& f, std::ostream&, Transcript& t) { return RunValidate(f.validate, t); }},
      {"plan", "choose the layout: every engine-legal candidate screened, the best simulated",
       []() -> std::string { return PlanHelpFooter(); },
       [](CLI::App* c, CliFlags& f) {
         AddPlanFlags(c, f.plan, f.plan_constraints, f.plan_engine, f.plan_export, f.plan_json);
       },
       [](CliFlags& f, std::ostream& err, Transcript& t) {
         return RunPlanCommand(f.plan, f.plan_constraints, f.plan_engine, f.plan_export,
                               f.plan_json, err, t);
       }},
      {"export",
       "write a config's layout as an engine's launch files (Megatron-LM, torchtitan, DeepSpeed)",
       []() -> std::string { return ExportHelpFooter(); },
       [](CLI::App* c, CliFlags& f) { AddExportFlags(c, f.export_spec, f.export_engine); },
       [](CliFlags& f, std::ostream&, Transcript& t) {
         return RunExportCommand(f.export_spec, f.export_engine, t);
       }},
      {"checkpoint", "what a checkpoint of this layout holds per device; does it resume exactly",
       []() -> std::string { return CheckpointHelpFooter(); },
       [](CLI::App* c, CliFlags& f) { AddCheckpointFlags(c, f.checkpoint); },
       [](CliFlags& f, std::ostream&, Transcript& t) { return RunCheckpoint(f.checkpoint, t); }},
      {"goodput", "failures, the best checkpoint interval (Young, Daly, exact), ETTR and goodput",
       []() -> std::string { return GoodputHelpFooter(); },
       [](CLI::App* c, CliFlags& f) { AddGoodputFlags(c, f.goodput); },
       [](CliFlags& f, std::ostream&, Transcript& t) { return RunGoodput(f.goodput, t); }},
      {"serve", "simulate serving a model: KV cache, step costs, requests through replicas",
       []() -> std::string { return ServeHelpFooter(); },
       [](CLI::App* c, CliFlags& f) { AddServeFlags(c, f.serve); },
       [](CliFlags& f, std::ostream& err, Transcript& t) {
         f.serve.progress = TerminalProgress(err, f.serve.json);
         return RunServe(f.serve, t);
       }},
      {"serve-plan", "choose the serving layout: the most requests per GPU within the SLO",
       []() -> std::string { return ServePlanHelpFooter(); },
       [](CLI::App* c, CliFlags& f) { AddServePlanFlags(c, f.serve_plan); },
       [](CliFlags& f, std::ostream& err, Transcript& t) {
         f.serve_plan.progress = TerminalProgress(err, f.serve_plan.json);
         return RunServePlan(f.serve_plan, t);
       }},
      {"kernel",
       "one kernel timed as the simulator times it: GEMM, grouped GEMM, attention, "
       "memory-bound",
       []() -> std::string { return KernelHelpFooter(); },
       [](CLI::App* c, CliFlags& f) { AddKernelFlags(c, f.kernel); },
       [](CliFlags& f, std::ostream&, Transcript& t) { return RunKernel(f.kernel, t); }},
  };
  return kCommands;
}

std::vector<std::string> CommandNames() {
  std::vector<std::string> names;
  for (const Command& command : Commands()) names.push_back(command.name);
  return names;
}

}  // namespace

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"stagecraft: plan, simulate and check pipeline-parallel training schedules"};
  app.allow_extras();
  app.footer(TopLevelHelpFooter());
  CliFlags flags;
  std::vector<std::pair<const Command*, CLI::App*>> added;
  for (const Command& command : Commands()) {
    CLI::App* sub = app.add_subcommand(command.name, command.help);
    command.add_flags(sub, flags);
    sub->footer(command.footer());
    sub->allow_extras();
    added.emplace_back(&command, sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help, out, err);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help, out, err);
  } catch (const CLI::ParseError& error) {
    const std::vector<CLI::App*> parsed = app.get_subcommands();
    return UsageError(PhraseParseError(error, parsed.empty() ? "" : parsed.back()->get_name()),
                      err);
  }
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  if (chosen.empty()) {
    const std::vector<std::string> names = CommandNames();
    const std::vector<std::string> extras = app.remaining();
    if (extras.empty()) return UsageError("expected a command: " + JoinChoices(names), err);
    return UsageError("unknown command '" + extras.front() + "'" +
                          DidYouMean(extras.front(), names) + " (expected " + JoinChoices(names) +
                          ")",
                      err);
  }
  const auto found = std::find_if(added.begin(), added.end(),
                                  [&](const auto& one) { return one.second == chosen.front(); });
  const Command& command = *found->first;
  try {
    if (command.run == nullptr) {
      return DispatchMultimodal(*chosen.front(), flags.multimodal, out, err);
    }
    if (!chosen.front()->remaining().empty()) {
      return UsageError(ExtraArgumentsMessage(*chosen.front(), chosen.front()->remaining()), err);
    }
    Transcript transcript;
    const Status status = command.run(flags, err, transcript);
    return Finish(transcript, status, out, err);
  } catch (const InternalError& error) {
    // Nothing of the command's answer was printed (it is replayed only when the command ends).
    err << "stagecraft: internal error: " << error.what()
        << " (a bug of stagecraft, not of the input: please report the command line)\n";
    return ExitCode(ErrorKind::kBadInput);
  }
}

int FinishStdout(int code, std::ostream& err) {
  // std::cout writes through C's stdout: a failed write sets stdout's error flag for good and
  // errno where it happens: at this flush, or earlier where a large answer was written
  // (Finish clears errno before it writes one).
  int error = errno;
  errno = 0;
  std::cout.flush();
  if (std::fflush(stdout) != 0 || errno != 0) error = errno != 0 ? errno : error;
  if (!std::ferror(stdout) && std::cout.good()) return code;
  err << "stagecraft: error: cannot write the answer to stdout: "
      << (error != 0 ? std::strerror(error) : "a write failed")
      << " (the output is incomplete; check the disk or the pipe it goes to)\n";
  return ExitCode(ErrorKind::kBadInput);
}

}  // namespace stagecraft
