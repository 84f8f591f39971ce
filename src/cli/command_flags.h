// The command line's flags (CLI11): every command's options, each bound to a field of the spec
// its command runs with (CliFlags). cli/app.cc's command table adds them under each command.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "commands/checkpoint_command.h"
#include "commands/commands.h"
#include "commands/export_command.h"
#include "commands/goodput_command.h"
#include "commands/plan_report.h"
#include "commands/serve_command.h"

namespace stagecraft {

// What the flags of every command fill; the chosen command reads its own.
struct CliFlags {
  RunSpec run;  // the run flags of simulate, check, derive, bench-schedules and memory
  OutputSpec output;
  bool derive_json = false;
  std::string list_what;
  BenchSpec bench;
  CommSpec comm;
  KernelSpec kernel;
  bool memory_json = false;
  MultimodalTablesSpec multimodal;
  ValidateSpec validate;
  PlanSpec plan;
  PlanConstraintText plan_constraints;
  std::string plan_engine = "any";
  bool plan_json = false;
  std::vector<std::string> plan_export;
  ExportSpec export_spec;
  std::string export_engine;
  CheckpointSpec checkpoint;
  GoodputSpec goodput;
  ServeSpec serve;
  ServePlanSpec serve_plan;
};

// The run's flags: the config file, then one option per row of the override table
// (run/run_setup.h), which also applies them.
void AddRunFlags(CLI::App& command, RunSpec& flags);

// Each command's own flags, added to its subcommand.
void AddSimulateFlags(CLI::App* simulate, RunSpec& flags, OutputSpec& output);
void AddDeriveFlags(CLI::App* derive, RunSpec& flags, bool& json);
void AddListFlags(CLI::App* list, std::string& what);
void AddMemoryFlags(CLI::App* memory, RunSpec& flags, bool& json);
void AddValidateFlags(CLI::App* validate, ValidateSpec& flags);
void AddBenchFlags(CLI::App* bench, RunSpec& flags, BenchSpec& bench_flags);
void AddKernelFlags(CLI::App* kernel, KernelSpec& flags);
void AddCommFlags(CLI::App* comm, CommSpec& flags);
void AddPlanFlags(CLI::App* command, PlanSpec& plan, PlanConstraintText& constraints,
                  std::string& engine, std::vector<std::string>& export_to, bool& json);
void AddExportFlags(CLI::App* command, ExportSpec& spec, std::string& engine);
void AddCheckpointFlags(CLI::App* command, CheckpointSpec& spec);
void AddGoodputFlags(CLI::App* command, GoodputSpec& spec);
void AddServeFlags(CLI::App* command, ServeSpec& serve);
void AddServePlanFlags(CLI::App* command, ServePlanSpec& plan);
void AddMultimodalFlags(CLI::App* multimodal, MultimodalTablesSpec& flags);

}  // namespace stagecraft
