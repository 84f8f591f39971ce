// Megatron-LM's and Megatron-DeepSpeed's arguments as one table, one row per argument: its flag,
// the engines that take it, how ReadMegatronArgs reads it (how its value parses, what it sets)
// and how WriteMegatronArgs writes it from a config (its value, or its absence). The rows are in
// the order `plan --export` writes them, Megatron's argument groups (arguments.py). Internal to
// src/io: io/megatron_args.cc reads and writes through it, its test checks the two sides agree.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/result.h"
#include "io/config.h"
#include "io/megatron_args.h"

namespace stagecraft::megatron_args {

// What the lines say: the config being filled, and what settles only once every argument is read.
struct Arguments {
  Config config;
  bool deepspeed = false;                // MegatronDialect::kMegatronDeepSpeed
  int64_t global_batch = 0;              // --global-batch-size; 0 = not given
  int64_t layers_per_virtual_stage = 0;  // --num-layers-per-virtual-pipeline-stage; 0 = none
  bool grouped = false;                  // --group-query-attention
  bool latent = false;                   // --multi-latent-attention
  std::string latent_where;              // where a latent rank or head width was given
  int64_t moe_layers = -1;               // --moe-layer-freq's MoE layers; -1 = every layer
  std::string moe_layer_freq_where;      // where --moe-layer-freq was given
  int64_t first_stage_layers = 0;        // --decoder-first-pipeline-num-layers; 0 = not given
  int64_t last_stage_layers = 0;         // --decoder-last-pipeline-num-layers; 0 = not given
  // --no-pipeline-parallel (Megatron-DeepSpeed): the Megatron model, not DeepSpeed's pipe.
  bool no_pipeline_parallel = false;
  std::string recompute_method = "uniform";  // --recompute-method
  std::string recompute_method_where;
  int64_t recompute_num_layers = 0;  // --recompute-num-layers; 0 = not given
  std::string layout;                // --pipeline-model-parallel-layout, "" = not given
  std::string layout_where;
  std::string fp8_recipe = "delayed";  // --fp8-recipe (Megatron's default, arguments.py)
  std::string fp8_recipe_where;        // where --fp8-recipe was given; "" = not given

  TransformerSpec& transformer() { return config.model.transformer; }
  ParallelSpec& parallel() { return config.parallel; }
};

// One `--flag [value]` line as read: `where` is "source:line: ", `number` the value parsed as a
// whole number, `dense_layers` and `moe_layers` the dense prefix of --moe-layer-freq (-1: none).
struct ArgLine {
  std::string where;
  std::string flag;
  std::string value;
  int64_t number = 0;
  int64_t dense_layers = -1;
  int64_t moe_layers = -1;
};

// What a row writes from: the config of the run, and what the config does not carry.
struct WriteInput {
  const Config& config;
  const MegatronWriteContext& context;

  const TransformerSpec& t() const { return config.model.transformer; }
  const ParallelSpec& p() const { return config.parallel; }
};

// The engines that take an argument: both dialects, or one of them (MegatronDialect).
enum class Engines : uint8_t { kBoth, kMegatronLm, kDeepSpeed };

struct MegatronArgument;
// How a value parses into its ArgLine; the error names the line and the flag.
using Parse = Status (*)(const MegatronArgument& argument, ArgLine& line);
// What a read argument sets.
using Apply = void (*)(const ArgLine& line, Arguments& args);
// The argument's value for a run: nullopt = not written, "" = a switch written.
using Write = std::optional<std::string> (*)(const WriteInput& in);

// One argument: read by ReadMegatronArgs in the dialects of `engines`, written by
// WriteMegatronArgs where `write` gives it a value.
struct MegatronArgument {
  const char* flag;
  Engines engines;
  Parse parse;                              // nullptr: a switch, which takes no value
  Apply apply;                              // nullptr: checked, but changes nothing simulated
  Write write;                              // nullptr: read, never written
  std::array<const char*, 4> choices = {};  // ParseChoice: the values accepted, in order
};

// Every argument, in the order `plan --export` writes them.
std::span<const MegatronArgument> ArgumentTable();

// Whether `dialect` takes `argument`.
bool TakenBy(const MegatronArgument& argument, MegatronDialect dialect);

// The row of `flag` whatever the dialect; nullptr when no engine takes it.
const MegatronArgument* FindArgument(std::string_view flag);

}  // namespace stagecraft::megatron_args
